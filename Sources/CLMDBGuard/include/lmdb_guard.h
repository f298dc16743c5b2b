#ifndef STORELEDGER_LMDB_GUARD_H
#define STORELEDGER_LMDB_GUARD_H

// Tells a fault that comes from reading a damaged LMDB file from any other fault.
//
// LMDB trusts the page numbers, offsets and sizes it finds in its memory-mapped file. On a damaged file it may read
// outside a page or outside the map (SIGSEGV inside LMDB, or inside the libc routine LMDB called), or past the end
// of the file (SIGBUS, there or in the code that reads a value LMDB handed back). Such a fault is a damaged ledger,
// which the command line reports as `corrupted`; any other fault is a bug and must still crash.

// Brackets a call into LMDB on this thread.
void storeledger_lmdb_enter(void);
void storeledger_lmdb_leave(void);

// Whether the calling thread is inside an LMDB call.
int storeledger_lmdb_inside(void);

// Installs handlers of SIGSEGV and SIGBUS. SIGBUS (a read of a file mapping past the end of the file: the process
// maps no file but the ledger's data file), and SIGSEGV inside an LMDB call, write `out` to standard output and `err`
// to standard error (either may be NULL) and exit with `status`. Any other SIGSEGV takes its default action: the
// process ends with the signal, as it would without the handler. The texts are copied.
void storeledger_lmdb_fault_handler_install(const char *out, const char *err, int status);

#endif
