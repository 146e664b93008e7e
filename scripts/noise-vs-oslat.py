#!/usr/bin/env python3
"""`rtlab noise` beside Debian's oslat (rt-tests) on the same CPU for the same time, alternating.

Each round runs oslat, `rtlab noise --no-attribute` and `rtlab noise --attribute` (attributing
every noise from trace events), in an order that rotates every round so that drift in the machine hits all
alike; both tools pin their main thread to --main-cpu, run SCHED_OTHER busy loops on --cpu for
--seconds after their own 1 s pre-heat, and write oslat's JSON (rtlab: --format oslat). Per run
it prints the gaps of 1 µs or more, the largest gap, the reads per second and the histogram's
shape (shares of the gaps ≥ 1 µs in 1-5, 5-10, 10-20, 20-31 and ≥ 31 µs); then per round the
ratios rtlab/oslat, and their medians.

Usage: scripts/noise-vs-oslat.py [--rounds 7] [--seconds 10] [--cpu 1] [--main-cpu 0]
       [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab] [--oslat oslat]
Needs root (mlockall, tracefs for the attributed runs).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

BINS = [(2, 5, "1-5"), (6, 10, "5-10"), (11, 20, "10-20"), (21, 31, "20-31"), (32, 32, ">=31")]


def figures(path):
    t = json.load(open(path))["thread"]["0"]
    h = {int(k): v for k, v in t["histogram"].items()}
    reads = sum(h.values())
    noises = reads - h.get(1, 0)
    shape = {name: sum(v for k, v in h.items() if lo <= k <= hi) / max(noises, 1) for lo, hi, name in BINS}
    # The mean gap of at least 1 µs, from the buckets (bucket k holds gaps of k-1 to k µs; the
    # last one the overflows, counted at its floor): what each interruption costs.
    mean = sum((k - 1) * v for k, v in h.items() if k >= 2) / max(noises, 1)
    return {"noises": noises, "max_us": t["max"], "mean_us": mean, "reads_per_s": reads / t["duration"],
            "shape": shape}


def once(args, tool, tmp):
    out = os.path.join(tmp, f"{tool}.json")
    if tool == "oslat":
        cmd = [args.oslat, "--cpu-list", str(args.cpu), "-C", str(args.main_cpu), "-D", str(args.seconds),
               "-b", "32", f"--json={out}"]
    else:
        cmd = [args.rtlab, "noise", "-c", str(args.cpu), "--mainaffinity", str(args.main_cpu), "-D",
               str(args.seconds), "--format", "oslat", "--oslat-buckets", "32", "-q", "--json", out]
        cmd.append("--no-attribute" if tool == "rtlab" else "--attribute")
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {p.stderr.decode(errors='replace')}")
    return figures(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--main-cpu", type=int, default=0)
    ap.add_argument("--rtlab", default="target/x86_64-unknown-linux-gnu/release/rtlab")
    ap.add_argument("--oslat", default="oslat")
    args = ap.parse_args()
    tools = ["oslat", "rtlab", "rtlab+attr"]
    ratios = {t: {"noises": [], "max_us": [], "mean_us": [], "reads_per_s": []} for t in tools[1:]}
    print("round tool        noises  max_us mean_us  reads/s     " + "  ".join(f"{n:>6}" for _, _, n in BINS))
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = tools[r % 3:] + tools[:r % 3]
            got = {t: once(args, t, tmp) for t in order}
            for t in tools:
                f = got[t]
                shape = "  ".join(f"{f['shape'][n]:6.3f}" for _, _, n in BINS)
                print(f"{r:5d} {t:10s} {f['noises']:7d} {f['max_us']:7d} {f['mean_us']:7.2f}  {f['reads_per_s']:10.3e}  {shape}")
            for t in tools[1:]:
                for k in ratios[t]:
                    ratios[t][k].append(got[t][k] / max(got["oslat"][k], 1))
            print("      ratios to oslat: " + "; ".join(
                f"{t} noises {ratios[t]['noises'][-1]:.2f} max {ratios[t]['max_us'][-1]:.2f} mean {ratios[t]['mean_us'][-1]:.2f}"
                for t in tools[1:]))
    for t in tools[1:]:
        med = {k: statistics.median(v) for k, v in ratios[t].items()}
        lo = {k: min(v) for k, v in ratios[t].items()}
        hi = {k: max(v) for k, v in ratios[t].items()}
        print(f"median {t}/oslat over {args.rounds} rounds: " + ", ".join(
            f"{k} {med[k]:.3f} ({lo[k]:.2f}-{hi[k]:.2f})" for k in med))


if __name__ == "__main__":
    main()
