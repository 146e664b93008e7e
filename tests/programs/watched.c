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
 *
 * Jobs that block inside their period (a thread "ctl", SCHED_FIFO 80, released every 1 ms by
 * an absolute clock_nanosleep, or by a timerfd for `tfdmid`); each writes to OUT, per job,
 * "release_ns response_ns": its release (the expiry) and its completion − release (its last
 * clock read before it waits for the next release), its own measurement, kept in memory
 * and written when it ends (a log write would be part of the job).
 *   watched midsleep COUNT WORK_US OUT [EVERY]   WORK_US busy, a 50 µs relative clock_nanosleep,
 *       WORK_US busy; COUNT jobs (with EVERY, only every EVERYth job works WORK_US; the others
 *       20 µs).
 *   watched mutex COUNT OUT   50 µs busy, then 20 µs busy holding a mutex, then 30 µs busy;
 *       a thread "holder" (on another CPU) takes that mutex 50 µs before the release of about
 *       one period in ten, at random, and holds it 250 µs busy: the job finds it held unless
 *       the holder woke more than 50 µs late or the job found it free after 200 µs. OUT's lines
 *       have a third column: 1 when the job found the mutex held (and waited for it), else 0.
 *   watched pipemid COUNT OUT   50 µs busy, a request written to a thread "device" which
 *       answers 80 µs later through a second pipe (ctl blocks in read), 50 µs busy.
 *   watched tfdmid COUNT OUT    released by a periodic 1 ms timerfd; 100 µs busy, a 50 µs
 *       nanosleep, 100 µs busy.
 *   watched evloop COUNT OUT [LAG_MS]    an event loop: a thread "feeder" writes a byte to a
 *       pipe every 1 ms (absolute clock_nanosleep), COUNT times; a thread "loop" waits in
 *       epoll_wait for it, reads one byte per iteration and is busy 100 µs, 5 ms every 100th
 *       iteration (LAG_MS ms at its 50th instead, if given: it falls that many bytes behind and
 *       then finds them waiting); it writes per iteration "busy_ns woke_ns end_ns": its
 *       clock read after the wait's return, the one before its next call (CLOCK_MONOTONIC, the
 *       trace's clock) and the time between.
 *   watched pingpong SECONDS SPIN_US OUT   threads "ping" and "pong", pinned to the last CPU,
 *       wake each other through two pipes for SECONDS, each busy SPIN_US after each wakeup
 *       (0: hundreds of thousands of wakeups a second on this VM, 8: about 70 000); each
 *       writes to OUT "name blocks" at its end: the times it blocked (its voluntary context
 *       switches, from getrusage), each of which but an exit is a wakeup.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

static long work_us, period_us, count, prio, every = 1;
static long job_index;
/* evloop: the one iteration that lags, its length (ms). */
static long lag_ms;
/* Whether the current job found the mutex held (mode mutex). */
static int job_waited;
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

static void spin_us(long us) {
    long long end = now_ns() + us * 1000LL;
    while (now_ns() < end) {
    }
}

static void be_ctl(int cpu) {
    prctl(PR_SET_NAME, "ctl");
    struct sched_param p = {.sched_priority = 80};
    if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) {
        perror("sched_setscheduler");
        exit(1);
    }
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
}

static FILE *open_out(void) {
    FILE *out = fopen(out_path, "w");
    if (!out) {
        perror(out_path);
        exit(1);
    }
    return out;
}

static int ncpus(void) { return (int)sysconf(_SC_NPROCESSORS_ONLN); }

/* The job of each mode, between its release and its completion. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int req[2], rep[2];
static volatile long long hold_at;

static void job(const char *mode) {
    if (!strcmp(mode, "midsleep") || !strcmp(mode, "tfdmid")) {
        long us = job_index % every == 0 ? work_us : 20;
        spin_us(us);
        struct timespec t = ts(50000LL);
        if (!strcmp(mode, "midsleep"))
            clock_nanosleep(CLOCK_MONOTONIC, 0, &t, NULL);
        else
            nanosleep(&t, NULL);
        spin_us(us);
    } else if (!strcmp(mode, "mutex")) {
        spin_us(50);
        if (pthread_mutex_trylock(&lock) != 0) {
            job_waited = 1;
            pthread_mutex_lock(&lock);
        }
        spin_us(20);
        pthread_mutex_unlock(&lock);
        spin_us(30);
    } else if (!strcmp(mode, "pipemid")) {
        spin_us(50);
        char b = 'q';
        if (write(req[1], &b, 1) != 1 || read(rep[0], &b, 1) != 1) exit(1);
        spin_us(50);
    }
}

static void *holder(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "holder");
    struct sched_param p = {.sched_priority = 70};
    sched_setscheduler(0, SCHED_FIFO, &p);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof set, &set);
    for (;;) {
        long long at = hold_at;
        if (at < 0) return NULL;
        if (at == 0) {
            struct timespec t = ts(100000LL);
            nanosleep(&t, NULL);
            continue;
        }
        /* Asked for a time already past (the job woke that late): given up, so that the next
           ask can come (kept, it stopped every later hold: a busy host's run had 2 of 2 000). */
        if (at < now_ns()) {
            __sync_bool_compare_and_swap(&hold_at, at, 0LL);
            continue;
        }
        struct timespec t = ts(at);
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        pthread_mutex_lock(&lock);
        spin_us(250);
        pthread_mutex_unlock(&lock);
        __sync_bool_compare_and_swap(&hold_at, at, 0LL);
    }
}

static void *device(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "device");
    char b;
    while (read(req[0], &b, 1) == 1) {
        struct timespec t = ts(80000LL);
        clock_nanosleep(CLOCK_MONOTONIC, 0, &t, NULL);
        if (write(rep[1], &b, 1) != 1) exit(1);
    }
    return NULL;
}

/* COUNT jobs released every 1 ms by an absolute clock_nanosleep (or a timerfd: tfdmid). */
static void *ctl(void *arg) {
    const char *mode = arg;
    be_ctl(ncpus() - 1);
    FILE *out = open_out();
    /* Kept in memory and written at the end: a job ends at its wait, not after a log write. */
    long long(*own)[3] = calloc((size_t)count, sizeof *own);
    if (!own) exit(1);
    int tfd = -1;
    long long next = now_ns() + 10000000LL;
    if (!strcmp(mode, "tfdmid")) {
        tfd = timerfd_create(CLOCK_MONOTONIC, 0);
        struct itimerspec it = {{0, 1000000}, ts(next)};
        if (tfd < 0 || timerfd_settime(tfd, TFD_TIMER_ABSTIME, &it, NULL) != 0) exit(1);
    }
    srand(7);
    for (long i = 0; i < count; i++) {
        /* A read that finds several expiries is released at the oldest (the one it waited
           for, late); the others were skipped. */
        unsigned long long n = 1;
        if (tfd >= 0) {
            if (read(tfd, &n, sizeof n) != sizeof n) exit(1);
        } else {
            struct timespec t = ts(next);
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        }
        /* One period in ten, at random, the holder takes the lock 50 µs before the next release
           (taken 20 µs after it, the holder had to wake within 30 µs of the job's own wakeup). */
        if (!strcmp(mode, "mutex") && hold_at == 0 && rand() % 10 == 0) hold_at = next + 950000LL;
        job_index = i;
        job_waited = 0;
        job(mode);
        long long done = now_ns();
        own[i][0] = next;
        own[i][1] = done - next;
        own[i][2] = job_waited;
        next += (long long)n * 1000000LL;
        while (tfd < 0 && next < done) next += 1000000LL;
    }
    /* A loop that stops waits for its next release first: every job ends with a wait. */
    if (tfd >= 0) {
        unsigned long long n;
        if (read(tfd, &n, sizeof n) != sizeof n) exit(1);
    } else {
        struct timespec t = ts(next);
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
    }
    hold_at = -1;
    for (long i = 0; i < count; i++) {
        if (!strcmp(mode, "mutex"))
            fprintf(out, "%lld %lld %lld\n", own[i][0], own[i][1], own[i][2]);
        else
            fprintf(out, "%lld %lld\n", own[i][0], own[i][1]);
    }
    fclose(out);
    if (!strcmp(mode, "pipemid")) close(req[1]);
    return NULL;
}

static void *feeder(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "feeder");
    long long next = now_ns() + 10000000LL;
    for (long i = 0; i < count; i++) {
        struct timespec t = ts(next);
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
        if (write(fds[1], "x", 1) != 1) exit(1);
        next += 1000000LL;
    }
    return NULL;
}

static void *loop(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "loop");
    FILE *out = open_out();
    long long *woke_at = calloc((size_t)count, sizeof *woke_at), *end_at = calloc((size_t)count, sizeof *end_at);
    if (!woke_at || !end_at) exit(1);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev) != 0) exit(1);
    for (long i = 0; i < count; i++) {
        if (epoll_wait(ep, &ev, 1, -1) != 1) exit(1);
        long long woke = now_ns();
        char b;
        if (read(fds[0], &b, 1) != 1) exit(1);
        spin_us(lag_ms > 0 ? (i == 49 ? lag_ms * 1000 : 100) : (i + 1) % 100 == 0 ? 5000 : 100);
        woke_at[i] = woke;
        end_at[i] = now_ns();
    }
    /* Every iteration ends with a wait: the last one times out (the feeder is done). */
    epoll_wait(ep, &ev, 1, 20);
    for (long i = 0; i < count; i++) fprintf(out, "%lld %lld %lld\n", end_at[i] - woke_at[i], woke_at[i], end_at[i]);
    fclose(out);
    return NULL;
}

static int ping_fds[2], pong_fds[2];
static volatile int stop_pingpong;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* One side of the ping-pong: "ping" (arg non-NULL) serves first; each reads its own pipe and
 * writes the other's, until ping's time is up (it then tells pong, which ends too). */
static void *pingpong(void *arg) {
    int ping = arg != NULL;
    prctl(PR_SET_NAME, ping ? "ping" : "pong");
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(sysconf(_SC_NPROCESSORS_ONLN) - 1, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    long long end = now_ns() + period_us * 1000000000LL;
    char b = 0;
    if (ping && write(pong_fds[1], &b, 1) != 1) exit(1);
    for (;;) {
        if (read(ping ? ping_fds[0] : pong_fds[0], &b, 1) != 1) exit(1);
        spin_us(work_us);
        if (ping && now_ns() >= end) stop_pingpong = 1;
        if (!ping && b == 1) break;
        if (stop_pingpong) b = 1;
        if (write(ping ? pong_fds[1] : ping_fds[1], &b, 1) != 1) exit(1);
        if (ping && stop_pingpong) break;
    }
    /* The count is taken holding the lock: a thread that blocked on it after counting (the
     * other still writing, both on one CPU) would be woken once more than it says. */
    pthread_mutex_lock(&out_lock);
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    FILE *out = fopen(out_path, "a");
    if (!out) exit(1);
    fprintf(out, "%s %ld\n", ping ? "ping" : "pong", ru.ru_nvcsw);
    fclose(out);
    pthread_mutex_unlock(&out_lock);
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
    } else if (argc >= 5 && !strcmp(argv[1], "midsleep")) {
        count = atol(argv[2]);
        work_us = atol(argv[3]);
        out_path = argv[4];
        if (argc >= 6) every = atol(argv[5]) > 0 ? atol(argv[5]) : 1;
        pthread_create(&a, NULL, ctl, argv[1]);
        pthread_join(a, NULL);
    } else if (argc >= 4 && (!strcmp(argv[1], "mutex") || !strcmp(argv[1], "pipemid") || !strcmp(argv[1], "tfdmid"))) {
        count = atol(argv[2]);
        work_us = 100;
        out_path = argv[3];
        if (pipe(req) != 0 || pipe(rep) != 0) return 1;
        if (!strcmp(argv[1], "mutex")) pthread_create(&b, NULL, holder, NULL);
        if (!strcmp(argv[1], "pipemid")) pthread_create(&b, NULL, device, NULL);
        pthread_create(&a, NULL, ctl, argv[1]);
        pthread_join(a, NULL);
        if (strcmp(argv[1], "tfdmid")) pthread_join(b, NULL);
    } else if (argc >= 4 && !strcmp(argv[1], "evloop")) {
        count = atol(argv[2]);
        out_path = argv[3];
        lag_ms = argc >= 5 ? atol(argv[4]) : 0;
        if (pipe(fds) != 0) return 1;
        pthread_create(&a, NULL, loop, NULL);
        pthread_create(&b, NULL, feeder, NULL);
        pthread_join(b, NULL);
        pthread_join(a, NULL);
    } else if (argc >= 5 && !strcmp(argv[1], "pingpong")) {
        period_us = atol(argv[2]); /* seconds, here */
        work_us = atol(argv[3]);
        out_path = argv[4];
        if (pipe(ping_fds) != 0 || pipe(pong_fds) != 0) return 1;
        pthread_create(&b, NULL, pingpong, NULL);
        pthread_create(&a, NULL, pingpong, "ping");
        pthread_join(a, NULL);
        pthread_join(b, NULL);
    } else {
        fprintf(stderr, "usage: watched busy|pipe|sleep|timerfd|epoll|churn|midsleep|mutex|pipemid|tfdmid|evloop|pingpong ...\n");
        return 2;
    }
    return 0;
}
