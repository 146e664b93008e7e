#!/usr/bin/env python3
"""Side-by-side benchmark: rtlab run against cyclictest, alternating, same settings.

Runs `rtlab run` and `cyclictest` alternately (the order flips every pair so that drift in the
machine's state hits both tools alike), each with 1 thread pinned to one CPU, SCHED_FIFO 80,
a 200 µs interval, 10 000 loops, mlockall and /dev/cpu_dma_latency 0, and prints for each pair
the ratio rtlab/cyclictest of min, avg and max latency, process CPU time (user + system) and
peak RSS, then the median of each ratio, in how many pairs rtlab's figure was the lower, and the
two-sided exact sign test's p over the pairs: "rtlab higher" when p < 0.05 and rtlab was higher
in most pairs, "rtlab lower" the other way, "within noise" otherwise (a median ratio over 1 that
the pairs do not agree on is the machine's spread, not rtlab's cost). cyclictest runs with -N so both report nanoseconds
(without it cyclictest truncates to whole µs, which biases its min and avg low).

Usage: scripts/vs-cyclictest.py [--runs 5] [--cpu 1] [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab] [--json out.json]
Needs root (SCHED_FIFO, mlockall), cyclictest and GNU time (Debian: rt-tests, time).
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

from signtest import sign_p

METRICS = ["min_us", "avg_us", "max_us", "cpu_s", "rss_kib"]


GNU_TIME = "/usr/bin/time"


def judged(rows, metric):
    """(pairs where rtlab was lower, pairs where it was higher, sign test p, verdict)."""
    lower = sum(row["rtlab"][metric] < row["cyclictest"][metric] for row in rows)
    higher = sum(row["rtlab"][metric] > row["cyclictest"][metric] for row in rows)
    p = sign_p(lower, higher)
    verdict = "within noise" if p >= 0.05 else ("rtlab higher" if higher > lower else "rtlab lower")
    return lower, higher, p, verdict


def run_measured(cmd, tmp):
    """Runs cmd; returns (user+system CPU seconds, peak RSS KiB) of that command.

    Peak RSS comes from GNU time's %M: Linux carries a forked parent's RSS high-water mark
    across exec into the child's ru_maxrss, so measuring a child of this (15 MB) Python process
    directly would report Python's size; GNU time is small and forks the tool itself. CPU time
    comes from wait4 on the time process, which includes its waited-for child (the tool) and
    adds only time's own negligible CPU.
    """
    rss_file = os.path.join(tmp, "rss")
    proc = subprocess.Popen([GNU_TIME, "-f", "%M", "-o", rss_file] + cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{cmd[0]} failed with exit code {code}: {err.strip()}")
    rss = int(open(rss_file).read().split()[-1])
    return usage.ru_utime + usage.ru_stime, rss


def rtlab_once(binary, args, tmp):
    out = os.path.join(tmp, "rtlab.json")
    cmd = [binary, "run", "-t1", "-a", str(args.cpu), "--policy", "fifo", "-p80", "-i200", "-l", str(args.loops), "-m",
           "--latency", "0", "-q", "--json", out]
    cpu, rss = run_measured(cmd, tmp)
    r = json.load(open(out))
    t = r["threads"][0]
    if t["policy"] != "fifo" or t["priority"] != 80:
        sys.exit(f"rtlab did not get SCHED_FIFO 80 ({t['policy']}:{t['priority']}); run as root")
    return {"min_us": t["min_ns"] / 1e3, "avg_us": t["mean_ns"] / 1e3, "max_us": t["max_ns"] / 1e3,
            "cpu_s": cpu, "rss_kib": rss, "cycles": t["cycles"]}


def cyclictest_once(binary, args, tmp):
    out = os.path.join(tmp, "ct.json")
    cmd = [binary, "-t1", "-a", str(args.cpu), "-p80", "-i200", "-l", str(args.loops), "-m", "--latency=0", "-q", "-N",
           f"--json={out}"]
    cpu, rss = run_measured(cmd, tmp)
    t = json.load(open(out))["thread"]["0"]
    return {"min_us": t["min"] / 1e3, "avg_us": t["avg"] / 1e3, "max_us": t["max"] / 1e3,
            "cpu_s": cpu, "rss_kib": rss, "cycles": t["cycles"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="runs of each tool (default 5)")
    ap.add_argument("--loops", type=int, default=10000)
    ap.add_argument("--cpu", type=int, default=1, help="CPU both tools pin their thread to")
    ap.add_argument("--rtlab", default=os.path.join(os.path.dirname(__file__), "..", "target", "x86_64-unknown-linux-gnu", "release", "rtlab"))
    ap.add_argument("--cyclictest", default=shutil.which("cyclictest") or "cyclictest")
    ap.add_argument("--json", help="also write the raw runs and ratios here")
    args = ap.parse_args()
    if args.runs < 1 or args.loops < 1:
        sys.exit("--runs and --loops must be at least 1")
    for b in (args.rtlab, args.cyclictest, GNU_TIME):
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            sys.exit(f"not an executable: {b} (build it as the README says; apt-get install rt-tests time)")

    print(f"machine: {platform.node()} {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs")
    print(f"settings: 1 thread on CPU {args.cpu}, SCHED_FIFO 80, 200 us, {args.loops} loops, mlockall, dma latency 0")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            order = [("rtlab", rtlab_once, args.rtlab), ("cyclictest", cyclictest_once, args.cyclictest)]
            if i % 2:
                order.reverse()
            pair = {name: fn(binary, args, tmp) for name, fn, binary in order}
            ratio = {m: pair["rtlab"][m] / pair["cyclictest"][m] if pair["cyclictest"][m] else float("nan") for m in METRICS}
            rows.append({"first": order[0][0], **pair, "ratio": ratio})
            r, c = pair["rtlab"], pair["cyclictest"]
            print(f"pair {i + 1} ({order[0][0]} first): "
                  + "  ".join(f"{m} {r[m]:.2f}/{c[m]:.2f}={ratio[m]:.3f}" for m in METRICS))

    med = {m: statistics.median(row["ratio"][m] for row in rows) for m in METRICS}
    medians = {t: {m: statistics.median(row[t][m] for row in rows) for m in METRICS} for t in ("rtlab", "cyclictest")}
    print()
    print(f"{'metric':<10} {'rtlab':>10} {'cyclictest':>11} {'median ratio':>13} {'rtlab lower':>12} {'sign p':>7}  verdict")
    signs = {}
    for m in METRICS:
        lower, higher, p, verdict = judged(rows, m)
        signs[m] = {"rtlab_lower": lower, "rtlab_higher": higher, "p": p, "verdict": verdict}
        print(f"{m:<10} {medians['rtlab'][m]:>10.2f} {medians['cyclictest'][m]:>11.2f} {med[m]:>13.3f}"
              f" {f'{lower} of {lower + higher}':>12} {p:>7.3f}  {verdict}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": rows, "median_ratio": med, "medians": medians, "sign_test": signs}, f, indent=2)


if __name__ == "__main__":
    main()
