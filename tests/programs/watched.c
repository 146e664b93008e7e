/* Programs for rtlab watch's tests: real threads of known behaviour, watched from outside.
 *
 *   watched busy WORK_US PERIOD_US COUNT PRIO OUT  a thread "worker" (SCHED_FIFO PRIO, or
 *       SCHED_OTHER when PRIO is 0) wakes on an absolute clock_nanosleep every PERIOD_US and
 *       stays busy until WORK_US after its own wakeup; it writes "latency_ns run_ns" per
 *       period to OUT (its own measurement, as cyclictest's).
 *   watched pipe COUNT       a thread "writer" sleeps 2 ms and writes a byte, COUNT times; a
 *       thread "reader" blocks in read() on the pipe.
 *   watched sleep COUNT      a SCHED_OTHER thread "sleeper" sleeps 1 ms (nanosleep) COUNT times.
 *   watched timerfd COUNT    a thread "ticker" reads a periodic 1 ms timerfd COUNT times.
 *   watched epoll COUNT      a thread "poller" waits in epoll_wait with a 1 ms timeout COUNT times.
 *   watched churn N PERIODS DELAY_MS  the main thread waits DELAY_MS, then starts N threads
 *       ("churn"), 30 ms apart; each sleeps 1 ms PERIODS times and exits.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static struct timespec ts(long long ns) {
    struct timespec t = {ns / 1000000000LL, ns % 1000000000LL};
    return t;
}

static long work_us, period_us, count, prio;
static const char *out_path;

static void *busy(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "worker");
    if (prio > 0) {
        struct sched_param p = {.sched_priority = (int)prio};
        if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) {
            perror("sched_setscheduler");
            exit(1);
        }
    }
    FILE *out = fopen(out_path, "w");
    if (!out) {
        perror(out_path);
        exit(1);
    }
    long long next = now_ns() + 10000000LL;
    for (long i = 0; i < count; i++) {
        struct timespec t = ts(next);
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        long long woke = now_ns();
        while (now_ns() < woke + work_us * 1000LL) {
        }
        long long done = now_ns();
        fprintf(out, "%lld %lld\n", woke - next, done - woke);
        next += period_us * 1000LL;
        /* A job longer than the period skips the releases that passed (rtlab run's rule). */
        while (next < done) next += period_us * 1000LL;
    }
    fclose(out);
    return NULL;
}

static int fds[2];

static void *writer(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "writer");
    for (long i = 0; i < count; i++) {
        struct timespec t = ts(2000000LL);
        nanosleep(&t, NULL);
        if (write(fds[1], "x", 1) != 1) exit(1);
    }
    close(fds[1]);
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "reader");
    char b;
    while (read(fds[0], &b, 1) == 1) {
    }
    return NULL;
}

static void *sleeper(void *arg) {
    prctl(PR_SET_NAME, (const char *)arg);
    for (long i = 0; i < count; i++) {
        struct timespec t = ts(1000000LL);
        nanosleep(&t, NULL);
    }
    return NULL;
}

static void *ticker(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "ticker");
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec it = {{0, 1000000}, {0, 1000000}};
    if (fd < 0 || timerfd_settime(fd, 0, &it, NULL) != 0) exit(1);
    for (long i = 0; i < count; i++) {
        unsigned long long n;
        if (read(fd, &n, sizeof n) != sizeof n) exit(1);
    }
    return NULL;
}

static void *poller(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "poller");
    int ep = epoll_create1(0);
    struct epoll_event ev;
    if (ep < 0) exit(1);
    for (long i = 0; i < count; i++) epoll_wait(ep, &ev, 1, 1);
    return NULL;
}

int main(int argc, char **argv) {
    pthread_t a, b;
    if (argc >= 7 && !strcmp(argv[1], "busy")) {
        work_us = atol(argv[2]);
        period_us = atol(argv[3]);
        count = atol(argv[4]);
        prio = atol(argv[5]);
        out_path = argv[6];
        pthread_create(&a, NULL, busy, NULL);
        pthread_join(a, NULL);
    } else if (argc >= 3 && !strcmp(argv[1], "pipe")) {
        count = atol(argv[2]);
        if (pipe(fds) != 0) return 1;
        pthread_create(&a, NULL, reader, NULL);
        pthread_create(&b, NULL, writer, NULL);
        pthread_join(b, NULL);
        pthread_join(a, NULL);
    } else if (argc >= 3 && !strcmp(argv[1], "timerfd")) {
        count = atol(argv[2]);
        pthread_create(&a, NULL, ticker, NULL);
        pthread_join(a, NULL);
    } else if (argc >= 3 && !strcmp(argv[1], "epoll")) {
        count = atol(argv[2]);
        pthread_create(&a, NULL, poller, NULL);
        pthread_join(a, NULL);
    } else if (argc >= 3 && !strcmp(argv[1], "sleep")) {
        count = atol(argv[2]);
        pthread_create(&a, NULL, sleeper, "sleeper");
        pthread_join(a, NULL);
    } else if (argc >= 5 && !strcmp(argv[1], "churn")) {
        long n = atol(argv[2]);
        count = atol(argv[3]);
        struct timespec w = ts(atol(argv[4]) * 1000000LL);
        nanosleep(&w, NULL);
        pthread_t t[64];
        if (n > 64) n = 64;
        for (long i = 0; i < n; i++) {
            pthread_create(&t[i], NULL, sleeper, "churn");
            struct timespec d = ts(30000000LL);
            nanosleep(&d, NULL);
        }
        for (long i = 0; i < n; i++) pthread_join(t[i], NULL);
    } else {
        fprintf(stderr, "usage: watched busy|pipe|sleep|timerfd|epoll|churn ...\n");
        return 2;
    }
    return 0;
}
