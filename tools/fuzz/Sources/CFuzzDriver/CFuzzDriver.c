// Only the declaration in include/CFuzzDriver.h is needed; SwiftPM wants a source file in every C target.
#include "CFuzzDriver.h"
