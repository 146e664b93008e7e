#!/usr/bin/env python3
"""Where a wakeup's latency goes, for rtlab run and cyclictest alike: the kernel's own events.

Runs `rtlab run` and `cyclictest` alternately with the settings of scripts/vs-cyclictest.py
(1 thread on one CPU, SCHED_FIFO 80, 200 us, mlockall, /dev/cpu_dma_latency 0) while a tracefs
instance records, on that CPU only, `hrtimer_start`, `hrtimer_expire_entry`, `local_timer_entry`
and the `clock_nanosleep` syscall's entry and exit. For every period of the measuring thread
(the thread with the most sleeps) it splits the latency the tool reports into:

  timer irq   the timer's handler ran this long after the timer's expiry (`now` - `expires`,
              both the kernel's own nanoseconds): the interrupt's delivery, under a hypervisor
              mostly the host's
  to exit     from that handler to the sleep's return to user space (wakeup, switch)
  user        from the return to the next sleep: the tool's own clock read and bookkeeping

and prints, per run, the tool's own min beside the 0th, 1st and 50th percentiles of each part,
and how many periods' timers "rode" an interrupt raised for another timer (one that expired
first, so that this one's handler ran as soon as it was due: the delivery latency hidden), with
the timer irq's p0 over the periods that did not ride. Two tools whose `to exit` and `user`
agree differ only by when the timer interrupt came.

Tracing adds its own cost to every part (the events are written on the measured path), alike
for both tools: compare the tools, not these figures with untraced runs. Timestamps use the
`x86-tsc` trace clock mapped onto CLOCK_MONOTONIC by the handler's `now` fields (nanosecond
resolution; the `mono` clock prints microseconds).

Usage: scripts/wake-path.py [--pairs 3] [--loops 5000] [--cpu 1] [--rtlab PATH]
Needs root, tracefs with the timer, irq_vectors and syscalls events, cyclictest.
"""
import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

TRACEFS = "/sys/kernel/tracing"
EVENTS = ["timer/hrtimer_start", "timer/hrtimer_expire_entry", "irq_vectors/local_timer_entry",
          "syscalls/sys_enter_clock_nanosleep", "syscalls/sys_exit_clock_nanosleep"]
LINE = re.compile(r"^\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+(\d+):\s+(\w+):?\s*(.*)$")


class Instance:
    """A tracefs instance of this script's own, removed on exit."""

    def __init__(self, cpu):
        # mkdir in instances/ creates one; mkdtemp's name is unpredictable and never an old one.
        self.path = tempfile.mkdtemp(prefix="rtlab-wake-path-", dir=os.path.join(TRACEFS, "instances"))
        self.write("trace_clock", "x86-tsc")
        self.write("buffer_size_kb", "32768")
        self.write("tracing_cpumask", format(1 << cpu, "x"))
        for e in EVENTS:
            self.write(f"events/{e}/enable", "1")

    def write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def record(self, cmd):
        self.write("trace", "")
        self.write("tracing_on", "1")
        try:
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, text=True)
        except subprocess.CalledProcessError as e:
            sys.exit(f"{cmd[0]} failed with exit code {e.returncode}: {e.stderr.strip()}")
        finally:
            self.write("tracing_on", "0")
        with open(os.path.join(self.path, "trace")) as f:
            return [(m[1], int(m[2]), int(m[3]), m[4], m[5]) for m in map(LINE.match, f) if m]

    def remove(self):
        self.write("tracing_on", "0")
        os.rmdir(self.path)


def field(rest, name):
    return re.search(name + r"=(\w+)", rest).group(1)


def periods(events):
    """Per period of the measuring thread: (timer irq, to exit, user) in ns, and whether its timer
    rode another timer's interrupt."""
    now_at = [(ts, int(field(r, "now"))) for _, _, ts, n, r in events if n == "hrtimer_expire_entry"]
    if len(now_at) < 20:
        sys.exit("fewer than 20 timer expiries traced: is the syscalls event group enabled in this kernel?")
    (t0, m0), (t1, m1) = now_at[len(now_at) // 10], now_at[-len(now_at) // 10]
    scale = (m1 - m0) / (t1 - t0)
    mono = lambda ts: m0 + (ts - t0) * scale  # noqa: E731
    sleeps = collections.Counter(p for _, p, _, n, r in events if n == "sys_clock_nanosleep" and r.startswith("->"))
    pid = sleeps.most_common(1)[0][0]
    out, cur, handled = [], None, 0
    for _, p, ts, name, rest in events:
        if name == "local_timer_entry":
            handled = 0
        elif name == "hrtimer_expire_entry":
            handled += 1
        if name == "hrtimer_start" and p == pid and "hrtimer_wakeup" in rest:
            cur = {"timer": field(rest, "hrtimer"), "expires": int(field(rest, "expires"))}
        elif cur is None:
            continue
        elif name == "hrtimer_expire_entry" and cur["timer"] in rest and "now" not in cur:
            cur["now"], cur["handler"], cur["rode"] = int(field(rest, "now")), mono(ts), handled > 1
        elif name == "sys_clock_nanosleep" and p == pid and "now" in cur:
            if rest.startswith("->") and "exit" not in cur:
                cur["exit"] = mono(ts)
            elif rest.startswith("(") and "exit" in cur:
                out.append((cur["now"] - cur["expires"], cur["exit"] - cur["handler"], mono(ts) - cur["exit"], cur["rode"]))
                cur = None
    return out


def quantiles(values):
    v = sorted(values)
    return v[0] / 1e3, v[len(v) // 100] / 1e3, statistics.median(v) / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--loops", type=int, default=5000)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--rtlab", default=os.path.join(os.path.dirname(__file__), "..", "target", "x86_64-unknown-linux-gnu", "release", "rtlab"))
    ap.add_argument("--cyclictest", default=shutil.which("cyclictest") or "cyclictest")
    ap.add_argument("--json", help="also write every run's quantiles here")
    args = ap.parse_args()
    if args.pairs < 1 or args.loops < 100:
        sys.exit("--pairs must be at least 1 and --loops at least 100")
    with open(os.path.join(TRACEFS, "trace_clock")) as f:
        if "x86-tsc" not in f.read():
            sys.exit("this script needs the x86-tsc trace clock (x86 only)")
    common = ["-t1", "-a", str(args.cpu), "-p80", "-i200", "-l", str(args.loops), "-m"]
    tmp = tempfile.mkdtemp(prefix="rtlab-wake-path-")
    rtlab_json, ct_json = os.path.join(tmp, "r.json"), os.path.join(tmp, "c.json")
    tools = {
        "rtlab": ([args.rtlab, "run", "--policy", "fifo", *common, "--latency", "0", "-q", "--json", rtlab_json],
                  lambda: json.load(open(rtlab_json))["threads"][0]["min_ns"] / 1e3),
        "cyclictest": ([args.cyclictest, *common, "--latency=0", "-q", "-N", f"--json={ct_json}"],
                       lambda: json.load(open(ct_json))["thread"]["0"]["min"] / 1e3),
    }
    inst, runs = Instance(args.cpu), []
    try:
        print(f"{'tool':<11} {'min':>6}   timer irq p0/p1/p50   to exit p0/p1/p50   user p0/p1/p50   rode  p0 alone (us)")
        for i in range(args.pairs):
            for name in (["rtlab", "cyclictest"] if i % 2 == 0 else ["cyclictest", "rtlab"]):
                cmd, own_min = tools[name]
                got = periods(inst.record(cmd))
                parts = list(zip(*got))
                row = {"tool": name, "min_us": own_min(), **{k: quantiles(v) for k, v in zip(("irq", "exit", "user"), parts)},
                       "rode": sum(parts[3]), "periods": len(got),
                       "irq_alone_p0": min((g[0] for g in got if not g[3]), default=float("nan")) / 1e3}
                runs.append(row)
                print(f"{name:<11} {row['min_us']:>6.2f}   " + "   ".join(
                    "{:.2f}/{:.2f}/{:.2f}".format(*row[k]).rjust(17) for k in ("irq", "exit", "user"))
                    + f"   {row['rode']:>4}  {row['irq_alone_p0']:>8.2f}")
    finally:
        inst.remove()
        shutil.rmtree(tmp)
    print("\nmedians over the runs (p0/p1/p50 of each part):")
    for name in tools:
        mine = [r for r in runs if r["tool"] == name]
        med = {k: [statistics.median(r[k][j] for r in mine) for j in range(3)] for k in ("irq", "exit", "user")}
        print(f"{name:<11} {statistics.median(r['min_us'] for r in mine):>6.2f}   " + "   ".join(
            "{:.2f}/{:.2f}/{:.2f}".format(*med[k]).rjust(17) for k in ("irq", "exit", "user"))
            + f"   {statistics.median(r['rode'] for r in mine):>4}  {statistics.median(r['irq_alone_p0'] for r in mine):>8.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=2)


if __name__ == "__main__":
    main()
