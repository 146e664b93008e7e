#!/usr/bin/env python3
"""Does `--predict` predict? Cuts the first windows of a long run's HdrHistogram interval log,
predicts from each the largest latency over the whole run's length, and sets each prediction
beside what the run showed (BENCHMARKS.md, section 18).

Record the run first, e.g. (as root; 30 minutes):
    rtlab run -t1 -a1 --policy fifo -p95 -i1ms -D 30m -m -q --json run.json --hlog run.hlog
then:
    scripts/predict-windows.py run.hlog [--window 180] [--windows 10] [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab]

Each window is imported (`rtlab import`) and shown with `--predict` for the whole log's length;
the table gives each window's own maximum, the prediction and its 90 % interval (or why none was
given), and whether the run's maximum fell inside, above or below it.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"worst case to expect in [^:]+: (.*)$", re.M)
FIGURES = re.compile(r"^([\d.\s]+) µs \[([\d.\s]+), ([\d.\s]+)\]")


def us(text):
    return float(text.replace(" ", "").replace("\u202f", ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hlog")
    ap.add_argument("--window", type=int, default=180, help="seconds per window")
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--rtlab", default="target/x86_64-unknown-linux-gnu/release/rtlab")
    args = ap.parse_args()
    lines = open(args.hlog).read().splitlines()
    head = [l for l in lines if not l.startswith("Tag=")]
    body = [l for l in lines if l.startswith("Tag=")]
    if len(body) < args.window * args.windows:
        sys.exit(f"{args.hlog}: {len(body)} intervals, fewer than {args.windows} windows of {args.window}")
    maxima = [float(l.split(",")[3]) * 1000.0 for l in body]
    run_max = max(maxima)
    horizon = f"{len(body)}s"
    print(f"run: {len(body)} intervals of 1 s, its maximum {run_max:.1f} µs; predictions for {horizon}")
    print("| window | its maximum (µs) | predicted maximum (µs) | 90 % interval (µs) | the run's maximum |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for w in range(args.windows):
            part = body[w * args.window:(w + 1) * args.window]
            log, res = os.path.join(tmp, f"w{w}.hlog"), os.path.join(tmp, f"w{w}.json")
            open(log, "w").write("\n".join(head + part) + "\n")
            subprocess.run([args.rtlab, "import", log, "-o", res], check=True, capture_output=True)
            out = subprocess.run([args.rtlab, "show", res, "--predict", horizon], check=True,
                                 capture_output=True, text=True).stdout
            own = max(maxima[w * args.window:(w + 1) * args.window])
            said = LINE.search(out)
            said = said.group(1) if said else "(no line)"
            f = FIGURES.match(said)
            start = f"{w * args.window // 60}–{(w + 1) * args.window // 60} min"
            if not f:
                print(f"| {start} | {own:.1f} | none: {said.removeprefix('none given: ')} | | |")
                continue
            mid, lo, hi = us(f.group(1)), us(f.group(2)), us(f.group(3))
            where = "inside" if lo <= run_max <= hi else ("above" if run_max > hi else "below")
            print(f"| {start} | {own:.1f} | {mid:.1f} | [{lo:.1f}, {hi:.1f}] | {where} |")


if __name__ == "__main__":
    main()
