// SPDX-License-Identifier: GPL-2.0
//
// A developer's fault injector (not part of rtlab): stalls one CPU for STALL/2..3·STALL/2 µs
// with interrupts (or preemption) off, about every EVERY µs, at the kernel events chosen, the
// way this VM's host takes a vCPU. It reproduces, on demand, what CI saw once in a few runs
// (watch's lost timerfd job, rt-app's unslept periods). Built and run by scripts/stall-inject/run.sh.
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
const volatile __u32 target_cpu = 1;
const volatile __u64 stall_ns = 1200000;
const volatile __u64 every_ns = 50000000;
__u64 last = 0;
__u64 stalls = 0;
static long spin(__u64 i, void *ctx) { __u64 end = *(__u64 *)ctx; return bpf_ktime_get_ns() >= end; }
static int maybe(void) {
    if (bpf_get_smp_processor_id() != target_cpu) return 0;
    __u64 n = bpf_ktime_get_ns();
    if (n - last < every_ns) return 0;
    if (bpf_get_prandom_u32() % 4) return 0; /* spread over events */
    last = n;
    __u64 end = n + stall_ns / 2 + bpf_get_prandom_u32() % stall_ns;
    bpf_loop(1 << 23, spin, &end, 0);
    stalls++;
    return 0;
}
SEC("tp_btf/hrtimer_expire_entry") int BPF_PROG(a) { return maybe(); }
SEC("tp_btf/sched_switch") int BPF_PROG(b) { return maybe(); }
SEC("tp_btf/sched_waking") int BPF_PROG(c) { return maybe(); }
SEC("raw_tp/sys_enter") int BPF_PROG(d) { return maybe(); }
SEC("raw_tp/sys_exit") int BPF_PROG(e) { return maybe(); }
SEC("tp_btf/hrtimer_start") int BPF_PROG(f) { return maybe(); }
char LICENSE[] SEC("license") = "GPL";
