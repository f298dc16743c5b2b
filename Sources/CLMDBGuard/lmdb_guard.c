#include "lmdb_guard.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local int calls;

void storeledger_lmdb_enter(void) { calls += 1; }
void storeledger_lmdb_leave(void) { calls -= 1; }
int storeledger_lmdb_inside(void) { return calls > 0; }

// Set once by the install, before a handler can run; read only by the handler.
static char *out_text;
static size_t out_length;
static char *err_text;
static size_t err_length;
static int exit_status = 1;

static void write_all(int fd, const char *text, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, text, length);
        if (n <= 0) return;
        text += n;
        length -= (size_t)n;
    }
}

static void on_fault(int signal_number, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    if (signal_number == SIGBUS || calls > 0) {
        if (out_text) write_all(1, out_text, out_length);
        if (err_text) write_all(2, err_text, err_length);
        _exit(exit_status);
    }
    // Not the ledger's file: the fault is a bug. Returning runs the faulting instruction again, which now ends the
    // process with the signal.
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(signal_number, &fallback, NULL);
}

void storeledger_lmdb_fault_handler_install(const char *out, const char *err, int status) {
    out_text = out ? strdup(out) : NULL;
    out_length = out ? strlen(out) : 0;
    err_text = err ? strdup(err) : NULL;
    err_length = err ? strlen(err) : 0;
    exit_status = status;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, NULL);
    sigaction(SIGBUS, &action, NULL);
}
