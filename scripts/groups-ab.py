#!/usr/bin/env python3
"""How often `rtlab compare A… --vs B…` calls a difference: false alarms (A/A) and detection (A/B).

Each trial runs configuration A and every B configuration `--runs` times each, interleaved in
rounds (the order rotated and flipped each round, so the machine's drift hits all of them),
every run `rtlab run -t 1 -p 95 -i 1ms -a CPU -D DURATION`; a B is A with `--b-load SPEC` added
(repeat --b-load for several; `--b-load none` is A again: an A/A trial). After each trial it runs,
for every B,

    rtlab compare A1 … An --vs B1 … Bn --fail-if-worse MARGIN --percentile P   (exit 3 = "worse")
    rtlab compare B1 … Bn --vs A1 … An --fail-if-worse MARGIN --percentile P   (the reverse)
    rtlab compare Ai --vs Bi …                                                (one run a side)

and prints, over the trials, how many exited 3 each way and the verdicts, with every trial's
figures in --json. With --keep DIR the runs are kept (DIR/tNNN/<group>_<round>.json, and
DIR/groups.json naming the groups), and --judge DIR judges kept runs again with another rtlab
(nothing is run: two methods judged on the very same runs). Running needs root (SCHED_FIFO).

Usage: scripts/groups-ab.py [--trials 40] [--runs 4] [--duration 3s] [--cpu 1] [--percentile 99]
                            [--margin 10] [--b-load SPEC]... [--keep DIR | --judge DIR]
                            [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab] [--json out.json]
Example: --b-load none --b-load cpu:policy=fifo:96,cpus=1,burst=100us,every=4900us --keep /tmp/ab
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


def figure(args, path):
    return json.load(open(path))["all"]["percentiles_ns"].get(args.percentile)


def compare(binary, args, a, b):
    cmd = [binary, "compare", *a, "--vs", *b, "--fail-if-worse", str(args.margin), "--percentile", args.percentile]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit(f"rtlab compare failed ({p.returncode}): {p.stderr.strip()}")
    row = next((l for l in p.stdout.splitlines() if l.startswith(f"| p{args.percentile} ")), "")
    cells = [c.strip() for c in row.split("|") if c.strip()]
    return p.returncode, (cells[5] if len(cells) > 7 else "-"), (cells[7] if len(cells) > 7 else "-")


def record(args, where, loads):
    """Runs one trial's rounds into `where`; returns each group's run paths (A first)."""
    groups = [("a", None)] + [(f"b{i}", None if l == "none" else l) for i, l in enumerate(loads)]
    paths = {g: [] for g, _ in groups}
    for r in range(args.runs):
        shift = r % len(groups)
        order = groups[shift:] + groups[:shift]
        if r % 2 == 1:
            order.reverse()
        for g, load in order:
            path = os.path.join(where, f"{g}_{r}.json")
            run(args.rtlab, args, path, load)
            paths[g].append(path)
    return paths


def judge(args, t, paths, loads, out):
    a = paths["a"]
    for i, load in enumerate(loads):
        b = paths[f"b{i}"]
        forward = compare(args.rtlab, args, a, b)
        reverse = compare(args.rtlab, args, b, a)
        singles = [compare(args.rtlab, args, [x], [y])[0] for x, y in zip(a, b)]
        fa, fb = [figure(args, p) for p in a], [figure(args, p) for p in b]
        out[i].append({"a_ns": fa, "b_ns": fb, "forward": forward, "reverse": reverse, "single_exits": singles})
        print(f"trial {t + 1} [{load}]: A p{args.percentile} {[round(x / 1e3) for x in fa]} µs, "
              f"B {[round(x / 1e3) for x in fb]} µs: B÷A {forward[1]} {forward[2]} (exit {forward[0]}); "
              f"reverse exit {reverse[0]}; one a side: {singles.count(3)} of {len(singles)} exit 3", flush=True)


def summary(args, load, trials):
    n = len(trials)
    fwd3 = sum(1 for t in trials if t["forward"][0] == 3)
    rev3 = sum(1 for t in trials if t["reverse"][0] == 3)
    singles = [e for t in trials for e in t["single_exits"]]
    verdicts = {}
    for t in trials:
        v = t["forward"][2].split(" (")[0]
        verdicts[v] = verdicts.get(v, 0) + 1
    kind = "A/A" if load == "none" else f"A/B (B: --load {load})"
    print(f"\n{kind}, {n} trials of {args.runs} + {args.runs} runs of {args.duration}, p{args.percentile}, "
          f"margin {args.margin} %: forward exit 3 in {fwd3} ({100 * fwd3 / n:.1f} %), reverse exit 3 in {rev3}; "
          f"verdicts {verdicts}; one run a side: {singles.count(3)} of {len(singles)} exit 3")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--duration", default="3s")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--percentile", default="99")
    ap.add_argument("--margin", type=float, default=10)
    ap.add_argument("--b-load", action="append", default=[])
    ap.add_argument("--keep")
    ap.add_argument("--judge")
    ap.add_argument("--rtlab", default="target/x86_64-unknown-linux-gnu/release/rtlab")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.judge:
        kept = json.load(open(os.path.join(args.judge, "groups.json")))
        loads, args.runs, args.duration = kept["loads"], kept["runs"], kept["duration"]
        trials = sorted(d for d in os.listdir(args.judge) if d.startswith("t"))
    else:
        loads = args.b_load or ["none"]
        trials = [f"t{t:03}" for t in range(args.trials)]
        if os.geteuid() != 0:
            sys.exit("needs root (SCHED_FIFO)")
    out = [[] for _ in loads]
    with tempfile.TemporaryDirectory() as tmp:
        base = args.judge or args.keep or tmp
        if args.keep:
            os.makedirs(base, exist_ok=True)
            json.dump({"loads": loads, "runs": args.runs, "duration": args.duration}, open(os.path.join(base, "groups.json"), "w"))
        for t, name in enumerate(trials):
            where = os.path.join(base, name)
            if args.judge:
                paths = {g: [os.path.join(where, f"{g}_{r}.json") for r in range(args.runs)]
                         for g in ["a"] + [f"b{i}" for i in range(len(loads))]}
            else:
                os.makedirs(where, exist_ok=True)
                paths = record(args, where, loads)
            judge(args, t, paths, loads, out)
    for load, tr in zip(loads, out):
        summary(args, load, tr)
    if args.json:
        json.dump({"host": platform.node(), "kernel": platform.release(), "args": vars(args),
                   "comparisons": [{"b_load": l, "trials": tr} for l, tr in zip(loads, out)]},
                  open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
