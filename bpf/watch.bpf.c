// SPDX-License-Identifier: MIT OR GPL-2.0
//
// rtlab watch's BPF backend: the kernel events `rtlab watch` reads, filtered in the kernel to
// the watched threads and sent to user space as fixed records through one ring buffer. The
// records carry what the tracefs events carry (src/trace/bpf.rs turns them into the same
// events), so both backends feed the same analysis.
//
// Built by build.rs with `clang -target bpf` when clang is there; the kernel's types are
// declared here with only the fields read (CO-RE: the loader relocates them against the
// running kernel's BTF), so no vmlinux.h and no libbpf headers are needed.

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef int __s32;
typedef long long __s64;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define CORE __attribute__((preserve_access_index))

// The kernel's types, only the fields read (the loader finds their offsets in its BTF).
struct task_struct {
    int pid;
    int prio;
    int exit_state;
    char comm[16];
} CORE;
struct timerqueue_node {
    __s64 expires;
} CORE;
struct hrtimer {
    struct timerqueue_node node;
    __s64 _softexpires;
    void *function;
} CORE;
struct irqaction {
    const char *name;
} CORE;
#if defined(__TARGET_ARCH_x86)
struct pt_regs {
    long orig_ax;
} CORE;
#define SYSCALL_NR(regs) ((regs)->orig_ax)
#elif defined(__TARGET_ARCH_arm64)
struct pt_regs {
    int syscallno;
} CORE;
#define SYSCALL_NR(regs) ((regs)->syscallno)
#else
#error "rtlab's BPF backend knows the system call register of x86 and arm64 only"
#endif

// The helpers used, by their number in the kernel's uapi (include/uapi/linux/bpf.h).
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static __u32 (*bpf_get_smp_processor_id)(void) = (void *)8;
static long (*bpf_get_current_comm)(void *buf, __u32 size) = (void *)16;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *src) = (void *)113;
static long (*bpf_probe_read_kernel_str)(void *dst, __u32 size, const void *src) = (void *)115;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, __u64 size, __u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, __u64 flags) = (void *)132;
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, __u64 size, __u64 flags) = (void *)130;
static __u64 (*bpf_ringbuf_query)(void *ringbuf, __u64 flags) = (void *)134;
static struct task_struct *(*bpf_get_current_task_btf)(void) = (void *)158;

#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_MAP_TYPE_RINGBUF 27
#define BPF_NOEXIST 1
// The reader drains the ring on its own clock: no wakeup per record; only a ring half full
// wakes it early, through rtlab_wake.
#define BPF_RB_NO_WAKEUP 1
#define BPF_RB_FORCE_WAKEUP 2
#define BPF_RB_AVAIL_DATA 0
#define BPF_RB_RING_SIZE 1

// What a record is (src/trace/bpf.rs reads the same numbers).
enum kind {
    SWITCH = 1,
    WAKING = 2,
    HRTIMER_START = 3,
    HRTIMER_EXPIRE = 4,
    SYS_EXIT = 5,
    EXIT = 6,
    FORK = 7,
    RENAME = 8,
    IRQ_ENTRY = 9,
    IRQ_EXIT = 10,
    SOFTIRQ_ENTRY = 11,
    SOFTIRQ_EXIT = 12,
    LOCAL_TIMER_ENTRY = 13,
    LOCAL_TIMER_EXIT = 14,
};

// One event, 120 bytes; which fields mean what depends on the kind (src/trace/bpf.rs).
struct record {
    __u64 ts;      // bpf_ktime_get_ns: CLOCK_MONOTONIC, as the `mono` trace clock
    __u32 kind;
    __u32 cpu;
    __s32 pid;     // the current task
    __s32 a, b, c, d;
    __u32 pad;
    __s64 x, y;
    __u64 p, q;
    char comm[16]; // the current task's name
    char s[32];    // names: two task names (16 each) or one longer name
};

// The watched threads: tid -> 1 (its new threads are watched too) or 0.
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, __u8);
} rtlab_watched SEC(".maps");

// The timers the watched threads armed: address -> 1. Their expiries are the only ones the
// analysis uses (src/trace/watch.rs matches a callback to a timer its thread armed); every other
// timer's expiry on every CPU is left in the kernel. Least recently armed forgotten first: a
// sleeper's timer lives on its stack, at a new address at each sleep.
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, __u64);
    __type(value, __u8);
} rtlab_timers SEC(".maps");

// Records for the reader (its size is set by the loader).
struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 1 << 24);
} rtlab_events SEC(".maps");

// Per CPU, records that found the ring full: lost, and counted.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} rtlab_lost SEC(".maps");

// A ring that only signals: the reader sleeps on it between its reads, and a program that
// finds rtlab_events half full writes one byte here to wake it before the ring overflows.
struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 4096);
} rtlab_wake SEC(".maps");

char LICENSE[] SEC("license") = "Dual MIT/GPL";

static __u8 *watched(int tid) {
    // The idle tasks (pid 0) are never watched, and run at every wakeup of a waiting CPU.
    if (tid == 0)
        return 0;
    __u32 key = tid;
    return bpf_map_lookup_elem(&rtlab_watched, &key);
}

static int current_watched(void) {
    return watched(bpf_get_current_task_btf()->pid) != 0;
}

// A record to fill, its common fields set; 0 (and the loss counted) when the ring is full.
static struct record *begin(enum kind kind) {
    struct record *r = bpf_ringbuf_reserve(&rtlab_events, sizeof(struct record), 0);
    if (!r) {
        __u32 zero = 0;
        __u64 *lost = bpf_map_lookup_elem(&rtlab_lost, &zero);
        if (lost)
            *lost += 1;
        return 0;
    }
    __builtin_memset(r, 0, sizeof(*r));
    r->ts = bpf_ktime_get_ns();
    r->kind = kind;
    r->cpu = bpf_get_smp_processor_id();
    r->pid = bpf_get_current_task_btf()->pid;
    bpf_get_current_comm(r->comm, sizeof(r->comm));
    return r;
}

// Wakes the reader, once (a signal already waiting is enough).
static void wake(void) {
    if (bpf_ringbuf_query(&rtlab_wake, BPF_RB_AVAIL_DATA) == 0) {
        __u8 one = 1;
        bpf_ringbuf_output(&rtlab_wake, &one, sizeof(one), BPF_RB_FORCE_WAKEUP);
    }
}

static void send(struct record *r) {
    bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
    if (bpf_ringbuf_query(&rtlab_events, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(&rtlab_events, BPF_RB_RING_SIZE) / 2)
        wake();
}

// An event about the current task only, with no field of its own.
static int current_only(enum kind kind, __s32 a) {
    if (!current_watched())
        return 0;
    struct record *r = begin(kind);
    if (!r)
        return 0;
    r->a = a;
    send(r);
    return 0;
}

// The state the sched_switch event prints: preempted (0x100: R+), or the task state index
// as a bit (the kernel's __trace_sched_switch_state: S, D, T, t, X, Z, P, I).
static __s64 switch_state(int preempt, __u32 state, int exit_state) {
    if (preempt)
        return 0x100;
    __u32 s = (state | exit_state) & 0x7f;
    if (state == (0x2 | 0x400)) // TASK_IDLE
        s = 0x80;
    if (state & 0x1000) // TASK_RTLOCK_WAIT
        s = 0x2;
    for (int bit = 7; bit >= 0; bit--)
        if (s & (1u << bit))
            return 1 << bit;
    return 0;
}

SEC("tp_btf/sched_switch")
int rtlab_switch(__u64 *ctx) {
    struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];
    if (!watched(prev->pid) && !watched(next->pid))
        return 0;
    struct record *r = begin(SWITCH);
    if (!r)
        return 0;
    r->a = prev->pid;
    r->b = prev->prio;
    r->c = next->pid;
    r->d = next->prio;
    r->x = switch_state(ctx[0] & 1, ctx[3], prev->exit_state);
    bpf_probe_read_kernel(r->s, 16, prev->comm);
    bpf_probe_read_kernel(r->s + 16, 16, next->comm);
    send(r);
    return 0;
}

SEC("tp_btf/sched_waking")
int rtlab_waking(__u64 *ctx) {
    struct task_struct *p = (void *)ctx[0];
    if (!watched(p->pid) && !current_watched())
        return 0;
    struct record *r = begin(WAKING);
    if (!r)
        return 0;
    r->a = p->pid;
    r->b = p->prio;
    bpf_probe_read_kernel(r->s, 16, p->comm);
    send(r);
    return 0;
}

SEC("tp_btf/hrtimer_start")
int rtlab_hrstart(__u64 *ctx) {
    if (!current_watched())
        return 0;
    struct hrtimer *t = (void *)ctx[0];
    __u64 timer = (__u64)t;
    __u8 one = 1;
    bpf_map_update_elem(&rtlab_timers, &timer, &one, 0);
    struct record *r = begin(HRTIMER_START);
    if (!r)
        return 0;
    r->a = ctx[1];
    r->x = t->node.expires;
    r->y = t->_softexpires;
    r->p = (__u64)t;
    r->q = (__u64)t->function;
    send(r);
    return 0;
}

// The expiry of a timer a watched thread armed: its release, on whatever CPU and in whatever
// task's context it comes.
SEC("tp_btf/hrtimer_expire_entry")
int rtlab_hrexpire(__u64 *ctx) {
    struct hrtimer *t = (void *)ctx[0];
    __u64 timer = (__u64)t;
    if (!bpf_map_lookup_elem(&rtlab_timers, &timer))
        return 0;
    struct record *r = begin(HRTIMER_EXPIRE);
    if (!r)
        return 0;
    bpf_probe_read_kernel(&r->x, sizeof(r->x), (void *)ctx[1]);
    r->p = (__u64)t;
    r->q = (__u64)t->function;
    send(r);
    return 0;
}

SEC("tp_btf/sys_exit")
int rtlab_sysexit(__u64 *ctx) {
    if (!current_watched())
        return 0;
    struct pt_regs *regs = (void *)ctx[0];
    struct record *r = begin(SYS_EXIT);
    if (!r)
        return 0;
    r->x = SYSCALL_NR(regs);
    send(r);
    return 0;
}

SEC("tp_btf/sched_process_exit")
int rtlab_exit(__u64 *ctx) {
    struct task_struct *p = (void *)ctx[0];
    __u32 tid = p->pid;
    if (!watched(tid))
        return 0;
    // The kernel forgets an exiting task in set_event_pid's list too: its id may come back
    // as another task's.
    bpf_map_delete_elem(&rtlab_watched, &tid);
    struct record *r = begin(EXIT);
    if (!r)
        return 0;
    r->a = tid;
    send(r);
    return 0;
}

// Every new task (the reader decides which to watch, by its target); a watched process's new
// thread is watched from here, before it runs (tracefs's event-fork).
SEC("tp_btf/sched_process_fork")
int rtlab_fork(__u64 *ctx) {
    struct task_struct *parent = (void *)ctx[0], *child = (void *)ctx[1];
    __u8 *follow = watched(parent->pid);
    __u32 tid = child->pid;
    if (follow && *follow) {
        __u8 one = 1;
        bpf_map_update_elem(&rtlab_watched, &tid, &one, 0);
    }
    struct record *r = begin(FORK);
    if (!r)
        return 0;
    r->a = tid;
    bpf_probe_read_kernel(r->s, 16, child->comm);
    send(r);
    return 0;
}

SEC("tp_btf/task_rename")
int rtlab_rename(__u64 *ctx) {
    struct task_struct *task = (void *)ctx[0];
    struct record *r = begin(RENAME);
    if (!r)
        return 0;
    r->a = task->pid;
    bpf_probe_read_kernel_str(r->s, 16, (void *)ctx[1]);
    send(r);
    // A thread watched by its name from now on (--comm): the reader adds it at once, not
    // at its next read, so that its periods are recorded from the start.
    wake();
    return 0;
}

SEC("tp_btf/irq_handler_entry")
int rtlab_irq_in(__u64 *ctx) {
    if (!current_watched())
        return 0;
    struct irqaction *action = (void *)ctx[1];
    struct record *r = begin(IRQ_ENTRY);
    if (!r)
        return 0;
    r->a = ctx[0];
    bpf_probe_read_kernel_str(r->s, sizeof(r->s), action->name);
    send(r);
    return 0;
}

SEC("tp_btf/irq_handler_exit")
int rtlab_irq_out(__u64 *ctx) {
    return current_only(IRQ_EXIT, ctx[0]);
}

SEC("tp_btf/softirq_entry")
int rtlab_sirq_in(__u64 *ctx) {
    return current_only(SOFTIRQ_ENTRY, ctx[0]);
}

SEC("tp_btf/softirq_exit")
int rtlab_sirq_out(__u64 *ctx) {
    return current_only(SOFTIRQ_EXIT, ctx[0]);
}

SEC("tp_btf/local_timer_entry")
int rtlab_tick_in(__u64 *ctx) {
    return current_only(LOCAL_TIMER_ENTRY, ctx[0]);
}

SEC("tp_btf/local_timer_exit")
int rtlab_tick_out(__u64 *ctx) {
    return current_only(LOCAL_TIMER_EXIT, ctx[0]);
}
