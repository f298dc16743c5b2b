#ifndef C_FUZZ_DRIVER_H
#define C_FUZZ_DRIVER_H

#include <stddef.h>
#include <stdint.h>

// libFuzzer's own driver (compiler-rt, linked by -sanitize=fuzzer): runs the fuzzing loop over `callback` with
// libFuzzer's command line in argc/argv. Called from each target's entry point, because SwiftPM links an executable's
// `main` to `<module>_main` unless it was asked for the fuzzer sanitizer itself.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
