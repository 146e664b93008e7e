#!/usr/bin/env python3
"""Benchmark rtlab's loads against the reference tools, alternating, same parameters.

messaging: `rtlab load messaging:workers=G,fds=F,size=S` against `hackbench -T -g G -f F -l L
-s S` (threads, socketpairs). hackbench sends G*F*F*L messages and prints the time; rtlab's
load runs for a duration and counts messages, so the ratio compared is the time rtlab needs
for hackbench's message count (messages / rtlab's rate) over hackbench's time.

cpu: `rtlab load cpu:workers=N` against `stress-ng --cpu N --timeout T`. Their bogo-ops are
not the same unit, so the figure compared is the CPU utilisation each reaches: user+system CPU
time of the whole process tree (wait4) over wall time times N.

Usage: scripts/loads-vs-reference.py [--runs 5] [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab] [--quick]
Needs hackbench (rt-tests) and stress-ng (Debian: stress-ng).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def run(cmd):
    """Runs cmd; returns (stdout, wall seconds, CPU seconds of it and its waited children)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    out, err = p.stdout.read().decode(), p.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed: {err.strip()}")
    return out, wall, ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rtlab", default=os.path.join(os.path.dirname(__file__), "..", "target", "x86_64-unknown-linux-gnu", "release", "rtlab"))
    ap.add_argument("--quick", action="store_true", help="one short pair each (a smoke run)")
    a = ap.parse_args()
    for tool in ("hackbench", "stress-ng"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: apt-get install rt-tests stress-ng")
    runs = 1 if a.quick else a.runs
    g, f, loops, size = (2, 10, 200, 100) if a.quick else (4, 20, 1000, 100)
    seconds = 1 if a.quick else 5
    ncpu = os.cpu_count()

    print(f"messaging: {g} groups x {f} senders/receivers, {size}-byte messages; hackbench -T -l {loops}")
    ratios = []
    for i in range(runs):
        pair = {}
        order = ["rtlab", "hackbench"] if i % 2 == 0 else ["hackbench", "rtlab"]
        for tool in order:
            if tool == "hackbench":
                out, _, _ = run(["hackbench", "-T", "-g", str(g), "-f", str(f), "-l", str(loops), "-s", str(size)])
                pair[tool] = float(out.split("Time:")[1].split()[0])
            else:
                out, _, _ = run([a.rtlab, "load", f"messaging:workers={g},fds={f},size={size}", "-D", str(seconds), "--json", "-"])
                rate = json.loads(out)["loads"][0]["rate_per_s"]
                pair[tool] = g * f * f * loops / rate
        ratios.append(pair["rtlab"] / pair["hackbench"])
        print(f"  pair {i + 1}: rtlab {pair['rtlab']:.3f} s, hackbench {pair['hackbench']:.3f} s for {g * f * f * loops} messages, ratio {ratios[-1]:.3f}")
    print(f"  median time ratio rtlab/hackbench: {statistics.median(ratios):.3f}")

    print(f"cpu: {ncpu} workers for {seconds} s; CPU utilisation reached (CPU time / wall time / workers)")
    utils = {"rtlab": [], "stress-ng": []}
    for i in range(runs):
        order = ["rtlab", "stress-ng"] if i % 2 == 0 else ["stress-ng", "rtlab"]
        for tool in order:
            if tool == "rtlab":
                _, wall, cpu = run([a.rtlab, "load", f"cpu:workers={ncpu}", "-D", str(seconds)])
            else:
                _, wall, cpu = run(["stress-ng", "--cpu", str(ncpu), "--timeout", f"{seconds}s", "--quiet"])
            utils[tool].append(cpu / wall / ncpu)
        print(f"  pair {i + 1}: rtlab {utils['rtlab'][-1]:.3f}, stress-ng {utils['stress-ng'][-1]:.3f}")
    r, s = statistics.median(utils["rtlab"]), statistics.median(utils["stress-ng"])
    print(f"  median utilisation: rtlab {r:.3f}, stress-ng {s:.3f}, ratio {r / s:.3f}")


if __name__ == "__main__":
    main()
