#ifndef STORELEDGER_CLMDB_SHIM_H
#define STORELEDGER_CLMDB_SHIM_H
#include <lmdb.h>
#endif
