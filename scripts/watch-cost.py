#!/usr/bin/env python3
"""What watching costs the watched: cyclictest alone against cyclictest under `rtlab watch`.

The same cyclictest command (one SCHED_FIFO 80 thread pinned to --cpu, 1 ms absolute period,
-v --nsecs: every cycle's latency in ns, as cyclictest itself measured it) runs alone and
under `rtlab watch -- …` in turn, the order flipping every pair so that drift in the machine's
state hits both alike. rtlab's threads (its reporting thread and its event reader) are pinned to
--main-cpu with --mainaffinity; cyclictest's own main thread is left where it is in both runs.

Per pair it prints cyclictest's p50 and p99 alone and watched, their ratios (watched/alone),
rtlab's event reader's CPU time (from its RunResult) and its share of the run, the events read
and the events the kernel lost; then the median of each ratio over the pairs. The target of
issue 26 is a p50 ratio of at most 1.05.

Usage: scripts/watch-cost.py [--pairs 5] [--loops 5000] [--cpu 1] [--main-cpu 0]
       [--rtlab target/release/rtlab] [--json out.json]
Needs root (SCHED_FIFO, tracefs) and cyclictest (Debian: rt-tests).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time


def cyclictest_cmd(a, out):
    return ["sh", "-c", f"exec cyclictest -t1 -a{a.cpu} -p80 -i1000 -l{a.loops} -v --nsecs -q > {out}"]


def cycles(path):
    values = []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(":")]
            if len(parts) == 3 and parts[0] == "0":
                values.append(int(parts[2]))
    return values


def quantile(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, int(round((len(s) - 1) * q)))]


def alone(a, tmp):
    out = os.path.join(tmp, "alone.txt")
    subprocess.run(cyclictest_cmd(a, out), check=True)
    return cycles(out), None


def watched(a, tmp):
    out = os.path.join(tmp, "watched.txt")
    js = os.path.join(tmp, "watch.json")
    cmd = [a.rtlab, "watch", "-q", "--mainaffinity", str(a.main_cpu), "--json", js, "--"] + cyclictest_cmd(a, out)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(js) as f:
        r = json.load(f)
    return cycles(out), r


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--loops", type=int, default=5000)
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--main-cpu", type=int, default=0)
    p.add_argument("--rtlab", default="target/release/rtlab")
    p.add_argument("--json")
    a = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("watch-cost.py needs root (SCHED_FIFO, tracefs)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.pairs):
            order = [alone, watched] if i % 2 == 0 else [watched, alone]
            got = {}
            for f in order:
                t0 = time.monotonic()
                values, r = f(a, tmp)
                got[f.__name__] = (values, r, time.monotonic() - t0)
            (va, _, _), (vw, r, secs) = got["alone"], got["watched"]
            w = r["watch"]
            row = {
                "pair": i,
                "alone_p50_ns": quantile(va, 0.5),
                "alone_p99_ns": quantile(va, 0.99),
                "watched_p50_ns": quantile(vw, 0.5),
                "watched_p99_ns": quantile(vw, 0.99),
                "reader_cpu_ms": w["reader_cpu_ns"] / 1e6,
                "reader_cpu_share": w["reader_cpu_ns"] / 1e9 / secs,
                "events": w["events"],
                "lost_events": w["lost_events"],
                "cycles": (len(va), len(vw)),
            }
            row["p50_ratio"] = row["watched_p50_ns"] / row["alone_p50_ns"]
            row["p99_ratio"] = row["watched_p99_ns"] / row["alone_p99_ns"]
            rows.append(row)
            print(
                f"pair {i}: p50 {row['alone_p50_ns']} → {row['watched_p50_ns']} ns (×{row['p50_ratio']:.3f}), "
                f"p99 {row['alone_p99_ns']} → {row['watched_p99_ns']} ns (×{row['p99_ratio']:.3f}), "
                f"reader {row['reader_cpu_ms']:.1f} ms CPU ({row['reader_cpu_share'] * 100:.2f} % of a CPU), "
                f"{row['events']} events, {row['lost_events']} lost",
                flush=True,
            )
    summary = {
        "machine": platform.uname()._asdict(),
        "loops": a.loops,
        "pairs": rows,
        "median_p50_ratio": statistics.median(r["p50_ratio"] for r in rows),
        "median_p99_ratio": statistics.median(r["p99_ratio"] for r in rows),
        "median_reader_cpu_share": statistics.median(r["reader_cpu_share"] for r in rows),
        "lost_events": sum(r["lost_events"] for r in rows),
    }
    print(
        f"median p50 ratio ×{summary['median_p50_ratio']:.3f}, p99 ratio ×{summary['median_p99_ratio']:.3f}, "
        f"reader {summary['median_reader_cpu_share'] * 100:.2f} % of a CPU, {summary['lost_events']} events lost"
    )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
