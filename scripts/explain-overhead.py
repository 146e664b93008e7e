#!/usr/bin/env python3
"""What --explain costs the latency it explains: `rtlab run` with and without it, alternating.

Runs pairs of `rtlab run` (1 thread pinned to --cpu, SCHED_FIFO 80, 1 ms interval, --loops
samples, mlockall, /dev/cpu_dma_latency 0, the reporting thread pinned to --main-cpu) without
and with `--explain-worst 1` (the order flips every pair so drift in the machine hits both
alike), and prints per pair p50, p99, max and process CPU time of each, the ratios with/without,
the trace events lost and the per-CPU trace buffer, then the median of each ratio.

Usage: scripts/explain-overhead.py [--pairs 9] [--loops 10000] [--cpu 1] [--main-cpu 0]
       [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab]
Needs root (SCHED_FIFO, mlockall, tracefs).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def once(args, explain, tmp):
    out = os.path.join(tmp, "r.json")
    cmd = [args.rtlab, "run", "-t1", "-a", str(args.cpu), "--policy", "fifo", "-p80", "-i1ms", "-l", str(args.loops),
           "-m", "--latency", "0", "--mainaffinity", str(args.main_cpu), "-q", "--json", out]
    if explain:
        cmd += ["--explain-worst", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) not in (0, 3):
        sys.exit(f"rtlab failed: {err}")
    r = json.load(open(out))
    t = r["threads"][0]
    if t["policy"] != "fifo":
        sys.exit("rtlab did not get SCHED_FIFO; run as root")
    p = t["percentiles_ns"]
    row = {"p50_us": p["50"] / 1e3, "p99_us": p["99"] / 1e3, "max_us": t["max_ns"] / 1e3,
           "cpu_s": usage.ru_utime + usage.ru_stime}
    if explain:
        x = r["explain"]
        if x.get("unavailable"):
            sys.exit(f"--explain unavailable: {x['unavailable']}")
        row["lost"] = x["lost_events"]
        row["buffer_kb"] = x["buffer_kb"]
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--loops", type=int, default=10000)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--main-cpu", type=int, default=0)
    ap.add_argument("--rtlab", default="target/x86_64-unknown-linux-gnu/release/rtlab")
    args = ap.parse_args()
    ratios = {k: [] for k in ["p50_us", "p99_us", "max_us", "cpu_s"]}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            order = [False, True] if i % 2 == 0 else [True, False]
            res = {e: once(args, e, tmp) for e in order}
            off, on = res[False], res[True]
            line = [f"pair {i + 1}:"]
            for k in ratios:
                ratios[k].append(on[k] / off[k] if off[k] else float("nan"))
                line.append(f"{k} {off[k]:.2f} → {on[k]:.2f} ({ratios[k][-1]:.3f})")
            line.append(f"lost {on['lost']}, buffer {on['buffer_kb']} KiB/CPU")
            print("  ".join(line), flush=True)
    print("median ratio with/without --explain: " +
          ", ".join(f"{k} {statistics.median(v):.3f}" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
