// SPDX-License-Identifier: GPL-2.0
//
// Loads stall.bpf.c: stall CPU STALL_US EVERY_US HOOKS, HOOKS a subset of the letters
// a (hrtimer_expire_entry: a late timer interrupt) b (sched_switch) c (sched_waking)
// d (sys_enter) e (sys_exit) f (hrtimer_start). Runs until SIGINT/SIGTERM; prints the stalls.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include "stall.skel.h"
static volatile int stop;
static void on(int s){(void)s;stop=1;}
/* stall CPU STALL_US EVERY_US HOOKS(letters a-f) */
int main(int c, char **v) {
    if (c != 5) {
        fprintf(stderr, "usage: stall CPU STALL_US EVERY_US HOOKS(a-f)\n");
        return 2;
    }
    struct stall_bpf *s = stall_bpf__open();
    if (!s) return 1;
    s->rodata->target_cpu = atoi(v[1]);
    s->rodata->stall_ns = atoll(v[2]) * 1000;
    s->rodata->every_ns = atoll(v[3]) * 1000;
    const char *h = v[4];
    bpf_program__set_autoload(s->progs.a, !!strchr(h,'a'));
    bpf_program__set_autoload(s->progs.b, !!strchr(h,'b'));
    bpf_program__set_autoload(s->progs.c, !!strchr(h,'c'));
    bpf_program__set_autoload(s->progs.d, !!strchr(h,'d'));
    bpf_program__set_autoload(s->progs.e, !!strchr(h,'e'));
    bpf_program__set_autoload(s->progs.f, !!strchr(h,'f'));
    if (stall_bpf__load(s) || stall_bpf__attach(s)) { fprintf(stderr, "load/attach failed\n"); return 1; }
    signal(SIGINT, on); signal(SIGTERM, on);
    while (!stop) sleep(1);
    fprintf(stderr, "stalls: %llu\n", (unsigned long long)s->bss->stalls);
    stall_bpf__destroy(s);
    return 0;
}
