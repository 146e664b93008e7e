#!/usr/bin/env python3
"""How often `rtlab compare A… --vs B…` calls a difference: false alarms (A/A) and detection (A/B).

Each trial runs one configuration A and one configuration B `--runs` times each, interleaved
(A B A B …, the order flipped each round, so the machine's drift hits both), every run
`rtlab run -t 1 -p 95 -i 1ms -a CPU -D DURATION`; B is A with `--b-load SPEC` added (none: an
A/A trial, B is A again). After each trial it runs

    rtlab compare A1 … An --vs B1 … Bn --fail-if-worse MARGIN --percentile P   (exit 3 = "worse")
    rtlab compare B1 … Bn --vs A1 … An --fail-if-worse MARGIN --percentile P   (the reverse)
    rtlab compare Ai --vs Bi …                                                (one run a side)

and prints, over the trials, how many exited 3 each way and the verdicts, with every trial's
figures in --json. Needs root (SCHED_FIFO).

Usage: scripts/groups-ab.py [--trials 40] [--runs 4] [--duration 3s] [--cpu 1] [--percentile 99]
                            [--margin 10] [--b-load SPEC] [--rtlab target/release/rtlab] [--json out.json]
Example (A/B): --b-load cpu:policy=fifo:96,cpus=1,burst=200us,every=5ms
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile


def run(binary, args, path, load):
    cmd = [binary, "run", "-t", "1", "-p", "95", "-i", "1ms", "-a", str(args.cpu), "-D", args.duration, "-q",
           "--json", path]
    if load:
        cmd += ["--load", load]
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 3):
        sys.exit(f"rtlab run failed ({p.returncode}): {p.stderr.strip()}")
    r = json.load(open(path))
    return r["all"]["percentiles_ns"].get(args.percentile)


def compare(binary, args, a, b):
    cmd = [binary, "compare", *a, "--vs", *b, "--fail-if-worse", str(args.margin), "--percentile", args.percentile]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit(f"rtlab compare failed ({p.returncode}): {p.stderr.strip()}")
    row = next((l for l in p.stdout.splitlines() if l.startswith(f"| p{args.percentile} ")), "")
    cells = [c.strip() for c in row.split("|") if c.strip()]
    return p.returncode, (cells[5] if len(cells) > 7 else "-"), (cells[7] if len(cells) > 7 else "-")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--duration", default="3s")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--percentile", default="99")
    ap.add_argument("--margin", type=float, default=10)
    ap.add_argument("--b-load", default=None)
    ap.add_argument("--rtlab", default="target/release/rtlab")
    ap.add_argument("--json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (SCHED_FIFO)")
    trials = []
    with tempfile.TemporaryDirectory() as tmp:
        for t in range(args.trials):
            a, b, fa, fb = [], [], [], []
            for r in range(args.runs):
                order = [("a", None), ("b", args.b_load)] if r % 2 == 0 else [("b", args.b_load), ("a", None)]
                for side, load in order:
                    path = os.path.join(tmp, f"{side}{r}.json")
                    v = run(args.rtlab, args, path, load)
                    (a if side == "a" else b).append(path)
                    (fa if side == "a" else fb).append(v)
            forward = compare(args.rtlab, args, a, b)
            reverse = compare(args.rtlab, args, b, a)
            singles = [compare(args.rtlab, args, [x], [y])[0] for x, y in zip(a, b)]
            trial = {"a_ns": fa, "b_ns": fb, "forward": forward, "reverse": reverse, "single_exits": singles}
            trials.append(trial)
            print(f"trial {t + 1}: A p{args.percentile} {[round(x / 1e3) for x in fa]} µs, "
                  f"B {[round(x / 1e3) for x in fb]} µs: B÷A {forward[1]} {forward[2]} (exit {forward[0]}); "
                  f"reverse exit {reverse[0]}; one a side: {singles.count(3)} of {len(singles)} exit 3", flush=True)
    n = len(trials)
    fwd3 = sum(1 for t in trials if t["forward"][0] == 3)
    rev3 = sum(1 for t in trials if t["reverse"][0] == 3)
    singles = [e for t in trials for e in t["single_exits"]]
    verdicts = {}
    for t in trials:
        v = t["forward"][2].split(" (")[0]
        verdicts[v] = verdicts.get(v, 0) + 1
    kind = f"A/B (B: --load {args.b_load})" if args.b_load else "A/A"
    print(f"\n{kind}, {n} trials of {args.runs} + {args.runs} runs of {args.duration}, p{args.percentile}, "
          f"margin {args.margin} %: forward exit 3 in {fwd3} ({100 * fwd3 / n:.1f} %), reverse exit 3 in {rev3}; "
          f"verdicts {verdicts}; one run a side: {singles.count(3)} of {len(singles)} exit 3")
    if args.json:
        json.dump({"host": platform.node(), "kernel": platform.release(), "args": vars(args), "trials": trials},
                  open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
