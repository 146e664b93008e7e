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

With --backend both, each round runs cyclictest alone, under the tracefs backend and under the
BPF backend (the order rotating round by round), and each backend's ratios are to the same
round's run alone. Each --variant NAME=BINARY adds an arm to every round: that rtlab binary
watching through its BPF programs (another build of them: what a change to the programs costs,
measured in the same rounds).

Usage: scripts/watch-cost.py [--pairs 5] [--loops 5000] [--cpu 1] [--main-cpu 0]
       [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab] [--json out.json] [--backend bpf|tracefs|both]
       [--variant NAME=BINARY]...
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


def watched(a, tmp, backend):
    out = os.path.join(tmp, "watched.txt")
    js = os.path.join(tmp, "watch.json")
    binary = a.rtlab
    if backend in a.variants:
        binary, backend = a.variants[backend], "bpf"
    chosen = ["--backend", backend] if backend else []
    cmd = [binary, "watch", "-q", "--mainaffinity", str(a.main_cpu), "--json", js] + chosen + ["--"] + cyclictest_cmd(a, out)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(js) as f:
        r = json.load(f)
    return cycles(out), r


def arms(a):
    """The runs of one round: alone, then each backend watched (rtlab's default when none)."""
    backends = {"both": ["tracefs", "bpf"], None: [None]}.get(a.backend, [a.backend])
    return ["alone"] + backends + list(a.variants)


def row_of(i, name, alone_values, values, r, secs, variants):
    w = r["watch"]
    row = {
        "pair": i,
        "backend": name if name in variants else w["backend"].split(":")[0],
        "alone_p50_ns": quantile(alone_values, 0.5),
        "alone_p99_ns": quantile(alone_values, 0.99),
        "watched_p50_ns": quantile(values, 0.5),
        "watched_p99_ns": quantile(values, 0.99),
        "reader_cpu_ms": w["reader_cpu_ns"] / 1e6,
        "reader_cpu_share": w["reader_cpu_ns"] / 1e9 / secs,
        "events": w["events"],
        "lost_events": w["lost_events"],
        "cycles": (len(alone_values), len(values)),
    }
    row["p50_ratio"] = row["watched_p50_ns"] / row["alone_p50_ns"]
    row["p99_ratio"] = row["watched_p99_ns"] / row["alone_p99_ns"]
    print(
        f"pair {i} {row['backend']}: p50 {row['alone_p50_ns']} → {row['watched_p50_ns']} ns (×{row['p50_ratio']:.3f}), "
        f"p99 {row['alone_p99_ns']} → {row['watched_p99_ns']} ns (×{row['p99_ratio']:.3f}), "
        f"reader {row['reader_cpu_ms']:.1f} ms CPU ({row['reader_cpu_share'] * 100:.2f} % of a CPU), "
        f"{row['events']} events, {row['lost_events']} lost",
        flush=True,
    )
    return row


def summarise(rows):
    return {
        "median_p50_ratio": statistics.median(r["p50_ratio"] for r in rows),
        "median_p99_ratio": statistics.median(r["p99_ratio"] for r in rows),
        "median_reader_cpu_share": statistics.median(r["reader_cpu_share"] for r in rows),
        "lost_events": sum(r["lost_events"] for r in rows),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--loops", type=int, default=5000)
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--main-cpu", type=int, default=0)
    p.add_argument("--rtlab", default="target/x86_64-unknown-linux-gnu/release/rtlab")
    p.add_argument("--json")
    p.add_argument(
        "--backend",
        choices=["bpf", "tracefs", "both"],
        help="rtlab watch --backend; both: each round runs alone, tracefs and bpf, the order rotating (default: rtlab's)",
    )
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=BINARY",
        help="one more arm per round: BINARY watch --backend bpf, reported as NAME (another build's BPF programs)",
    )
    a = p.parse_args()
    a.variants = dict(v.split("=", 1) for v in a.variant)
    if os.geteuid() != 0:
        sys.exit("watch-cost.py needs root (SCHED_FIFO, tracefs)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.pairs):
            names = arms(a)
            # The order rotates (and flips) round by round: drift hits every arm alike.
            k = i % len(names)
            order = names[k:] + names[:k]
            if i % 2 == 1:
                order.reverse()
            got = {}
            for name in order:
                t0 = time.monotonic()
                got[name] = (alone(a, tmp) if name == "alone" else watched(a, tmp, name)) + (time.monotonic() - t0,)
            for name in names[1:]:
                values, r, secs = got[name]
                rows.append(row_of(i, name, got["alone"][0], values, r, secs, a.variants))
    by_backend = {}
    for r in rows:
        by_backend.setdefault(r["backend"], []).append(r)
    summary = {"machine": platform.uname()._asdict(), "loops": a.loops, "pairs": rows}
    for backend, its in by_backend.items():
        s = summarise(its)
        summary[backend] = s
        print(
            f"{backend}: median p50 ratio ×{s['median_p50_ratio']:.3f}, p99 ratio ×{s['median_p99_ratio']:.3f}, "
            f"reader {s['median_reader_cpu_share'] * 100:.2f} % of a CPU, {s['lost_events']} events lost"
        )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
