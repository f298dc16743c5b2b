/*
 * readgen: the read mode of tools/loadgen in C, so that the ledger's read rows are driven by a client as lean as
 * pgbench. loadgen (Swift, Foundation strings, one LedgerClient per thread) costs ~31 µs of CPU per read on the
 * same two cores as the server; pgbench, in C, far less. The comparison is fairer when both clients are lean.
 *
 *   readgen SOCKET CONNECTIONS USERS SECONDS
 *
 * Sends what loadgen's read mode sends, closed loop: connection i (one thread, one keep-alive Unix-socket
 * connection) asks `GET /v1/customers/lg{i}-u{k} HTTP/1.1` with `Host: localhost`, k = (n * 2654435761) mod USERS for
 * its n-th request (n from 1), the users `loadgen --mode read --fill-only --connections C --users USERS` bought
 * subscriptions for. Every connection starts on the same instant and stops at SECONDS. An answer counts as accepted
 * when its status is 200 and its body is read whole (Content-Length).
 *
 * Prints one JSON object with loadgen's `--json` field names (latencies in nanoseconds, nearest rank), so
 * benchmarks/peers/run.sh reads both alike. Exit status 1 when the socket cannot be reached at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t instant) {
    uint64_t now = now_ns();
    if (instant <= now) return;
    uint64_t wait = instant - now;
    struct timespec request = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)}, remaining;
    while (nanosleep(&request, &remaining) != 0 && errno == EINTR) request = remaining;
}

static int compare(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The nearest-rank percentile, as loadgen computes it. */
static uint64_t percentile(const uint64_t *sorted, size_t n, double p) {
    if (n == 0) return 0;
    size_t rank = (size_t)(p * (double)n + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > n) rank = n;
    return sorted[rank - 1];
}

static const char *socket_path;
static int users;
static uint64_t start, deadline;

struct worker {
    pthread_t thread;
    int index;
    uint64_t *latencies;
    size_t count, capacity;
    uint64_t accepted, errors, finished;
    int connect_failed;
};

static int connect_socket(void) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, socket_path, sizeof(address.sun_path) - 1);
    if (connect(fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads one answer into buf (capacity cap); returns its status code, or -1 when the connection failed or the
 * answer does not fit. */
static int read_answer(int fd, char *buf, size_t cap) {
    size_t have = 0, total = 0;
    int status = -1;
    for (;;) {
        ssize_t r = read(fd, buf + have, cap - 1 - have);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        have += (size_t)r;
        if (total == 0) {
            buf[have] = 0;
            char *end = strstr(buf, "\r\n\r\n");
            if (end == NULL) {
                if (have >= cap - 1) return -1;
                continue;
            }
            if (have < 12 || strncmp(buf, "HTTP/1.1 ", 9) != 0) return -1;
            status = atoi(buf + 9);
            size_t length = 0;
            for (char *line = strstr(buf, "\r\n") + 2; line < end; line = strstr(line, "\r\n") + 2) {
                if (strncasecmp(line, "Content-Length:", 15) == 0) length = strtoul(line + 15, NULL, 10);
            }
            total = (size_t)(end + 4 - buf) + length;
            if (total >= cap) return -1;
        }
        if (have >= total) return have == total ? status : -1;
    }
}

static void *run(void *argument) {
    struct worker *w = argument;
    char request[256], *answer = malloc(1 << 16);
    int fd = connect_socket();
    if (fd < 0 || answer == NULL) {
        w->connect_failed = 1;
        w->finished = now_ns();
        return NULL;
    }
    sleep_until(start);
    for (uint64_t sent = 1;; sent++) {
        uint64_t intended = now_ns();
        if (intended >= deadline) break;
        uint64_t user = (uint64_t)(sent * 2654435761u) % (uint64_t)users;
        int length = snprintf(
            request, sizeof(request), "GET /v1/customers/lg%d-u%llu HTTP/1.1\r\nHost: localhost\r\n\r\n", w->index,
            (unsigned long long)user);
        ssize_t written = write(fd, request, (size_t)length);
        int status = written == length ? read_answer(fd, answer, 1 << 16) : -1;
        if (status < 0) {
            /* As loadgen: count the failure, connect again. */
            w->errors++;
            close(fd);
            if ((fd = connect_socket()) < 0) break;
            continue;
        }
        if (w->count == w->capacity) {
            w->capacity = w->capacity ? w->capacity * 2 : 1 << 16;
            w->latencies = realloc(w->latencies, w->capacity * sizeof(uint64_t));
            if (w->latencies == NULL) abort();
        }
        w->latencies[w->count++] = now_ns() - intended;
        if (status == 200) w->accepted++; else w->errors++;
    }
    if (fd >= 0) close(fd);
    free(answer);
    w->finished = now_ns();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: readgen SOCKET CONNECTIONS USERS SECONDS\n");
        return 2;
    }
    socket_path = argv[1];
    int connections = atoi(argv[2]);
    users = atoi(argv[3]);
    double seconds = atof(argv[4]);
    if (connections < 1 || connections > 1024 || users < 1 || seconds <= 0) {
        fprintf(stderr, "readgen: CONNECTIONS 1…1024, USERS ≥ 1, SECONDS > 0\n");
        return 2;
    }
    struct worker *workers = calloc((size_t)connections, sizeof(struct worker));
    start = now_ns() + 50000000u; /* every connection starts on the same instant */
    deadline = start + (uint64_t)(seconds * 1e9);
    for (int i = 0; i < connections; i++) {
        workers[i].index = i;
        if (pthread_create(&workers[i].thread, NULL, run, &workers[i]) != 0) {
            perror("readgen: pthread_create");
            return 1;
        }
    }
    uint64_t finished = start, accepted = 0, errors = 0;
    size_t count = 0;
    int failed = 0;
    for (int i = 0; i < connections; i++) {
        pthread_join(workers[i].thread, NULL);
        if (workers[i].finished > finished) finished = workers[i].finished;
        accepted += workers[i].accepted;
        errors += workers[i].errors;
        count += workers[i].count;
        failed += workers[i].connect_failed;
    }
    if (failed == connections) {
        fprintf(stderr, "readgen: cannot connect to %s: %s\n", socket_path, strerror(errno));
        return 1;
    }
    uint64_t *all = malloc((count ? count : 1) * sizeof(uint64_t));
    size_t n = 0;
    for (int i = 0; i < connections; i++) {
        memcpy(all + n, workers[i].latencies, workers[i].count * sizeof(uint64_t));
        n += workers[i].count;
    }
    qsort(all, n, sizeof(uint64_t), compare);
    double elapsed = (double)(finished - start) / 1e9;
    if (elapsed < 1e-9) elapsed = 1e-9;
    printf(
        "{\"client\":\"readgen\",\"mode\":\"read\",\"connections\":%d,\"batchSize\":1,\"elapsedSeconds\":%.3f,"
        "\"acceptedRequests\":%llu,\"acceptedPerSecond\":%.1f,\"inputsPerSecond\":%.1f,\"p50Ns\":%llu,"
        "\"p99Ns\":%llu,\"p999Ns\":%llu,\"maxNs\":%llu,\"errors\":%llu}\n",
        connections, elapsed, (unsigned long long)accepted, (double)accepted / elapsed, (double)accepted / elapsed,
        (unsigned long long)percentile(all, n, 0.5), (unsigned long long)percentile(all, n, 0.99),
        (unsigned long long)percentile(all, n, 0.999), (unsigned long long)(n ? all[n - 1] : 0),
        (unsigned long long)errors);
    return 0;
}
