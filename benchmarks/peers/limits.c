/*
 * The machine's raw limits, measured beside the peers so that figures from different machines compare as ratios.
 *
 *   limits echo DIR SECONDS   one connection over a Unix socket in DIR: 64-byte request, 64-byte echo, round trips
 *                             for SECONDS; prints round trips/s, p50 and p99 of one round trip (µs)
 *   limits fsync DIR COUNT    writes 4 KiB and fdatasync()s it COUNT times in a file in DIR, overwriting a
 *                             preallocated file (the device's flush, as a WAL recycled in place sees it) and then
 *                             appending (the file grows each time: size metadata flushed too); p50 and p99 (µs)
 *
 * One line of JSON per figure on stdout. Exit status 1 on any failed system call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what) {
    fprintf(stderr, "limits: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int compare(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The nearest-rank percentile, as loadgen computes it. */
static double percentile_us(uint64_t *sorted, size_t n, double p) {
    if (n == 0) return 0;
    size_t rank = (size_t)(p * (double)n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return (double)sorted[rank - 1] / 1e3;
}

static int full_io(int fd, char *buf, size_t len, int writing) {
    size_t done = 0;
    while (done < len) {
        ssize_t r = writing ? write(fd, buf + done, len - done) : read(fd, buf + done, len - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        done += (size_t)r;
    }
    return 0;
}

static int echo(const char *dir, double seconds) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (snprintf(addr.sun_path, sizeof addr.sun_path, "%s/echo.sock", dir) >= (int)sizeof addr.sun_path) {
        fprintf(stderr, "limits: socket path too long\n");
        return 1;
    }
    unlink(addr.sun_path);
    int listener = socket(AF_UNIX, SOCK_STREAM, 0);
    if (listener < 0) fail("socket");
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0) fail("bind");
    if (listen(listener, 1) < 0) fail("listen");
    pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) { /* the echo server: one connection, until it closes */
        int c = accept(listener, NULL, NULL);
        if (c < 0) _exit(1);
        char buf[64];
        while (full_io(c, buf, sizeof buf, 0) == 0 && full_io(c, buf, sizeof buf, 1) == 0) {}
        _exit(0);
    }
    close(listener);
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    if (c < 0) fail("socket");
    if (connect(c, (struct sockaddr *)&addr, sizeof addr) < 0) fail("connect");
    size_t cap = 1 << 20, n = 0;
    uint64_t *lat = malloc(cap * sizeof *lat);
    if (!lat) fail("malloc");
    char buf[64];
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < 1000; i++) /* warm up */
        if (full_io(c, buf, sizeof buf, 1) || full_io(c, buf, sizeof buf, 0)) fail("echo");
    uint64_t start = now_ns(), deadline = start + (uint64_t)(seconds * 1e9), t = start;
    while (t < deadline) {
        if (full_io(c, buf, sizeof buf, 1) || full_io(c, buf, sizeof buf, 0)) fail("echo");
        uint64_t end = now_ns();
        if (n == cap) {
            cap *= 2;
            lat = realloc(lat, cap * sizeof *lat);
            if (!lat) fail("realloc");
        }
        lat[n++] = end - t;
        t = end;
    }
    close(c);
    waitpid(child, NULL, 0);
    unlink(addr.sun_path);
    double elapsed = (double)(t - start) / 1e9;
    qsort(lat, n, sizeof *lat, compare);
    printf("{\"figure\":\"unix_echo\",\"round_trips\":%zu,\"per_second\":%.0f,\"p50_us\":%.1f,\"p99_us\":%.1f}\n", n,
           (double)n / elapsed, percentile_us(lat, n, 0.5), percentile_us(lat, n, 0.99));
    free(lat);
    return 0;
}

static void fsync_series(const char *path, int count, int append, const char *name) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) fail("open");
    char *block = aligned_alloc(4096, 4096);
    if (!block) fail("aligned_alloc");
    memset(block, 'L', 4096);
    if (!append) { /* preallocate and make it durable first, so the series only overwrites */
        for (int i = 0; i < count; i++)
            if (pwrite(fd, block, 4096, (off_t)i * 4096) != 4096) fail("pwrite");
        if (fsync(fd) < 0) fail("fsync");
    }
    uint64_t *lat = malloc((size_t)count * sizeof *lat);
    if (!lat) fail("malloc");
    uint64_t start = now_ns();
    for (int i = 0; i < count; i++) {
        uint64_t t = now_ns();
        if (pwrite(fd, block, 4096, (off_t)i * 4096) != 4096) fail("pwrite");
        if (fdatasync(fd) < 0) fail("fdatasync");
        lat[i] = now_ns() - t;
    }
    double elapsed = (double)(now_ns() - start) / 1e9;
    close(fd);
    unlink(path);
    qsort(lat, (size_t)count, sizeof *lat, compare);
    printf("{\"figure\":\"%s\",\"count\":%d,\"per_second\":%.0f,\"p50_us\":%.1f,\"p99_us\":%.1f}\n", name, count,
           (double)count / elapsed, percentile_us(lat, (size_t)count, 0.5), percentile_us(lat, (size_t)count, 0.99));
    free(lat);
    free(block);
}

static int fsyncs(const char *dir, int count) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/fsync.dat", dir) >= (int)sizeof path) return 1;
    fsync_series(path, count, 0, "fdatasync_overwrite_4k");
    fsync_series(path, count, 1, "fdatasync_append_4k");
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc == 4 && strcmp(argv[1], "echo") == 0) return echo(argv[2], atof(argv[3]));
    if (argc == 4 && strcmp(argv[1], "fsync") == 0 && atoi(argv[3]) > 0) return fsyncs(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: limits echo DIR SECONDS | limits fsync DIR COUNT\n");
    return 2;
}
