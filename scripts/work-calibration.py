#!/usr/bin/env python3
"""How close `rtlab run --work TIME` comes to TIME: the calibration's error on an idle CPU.

For each asked amount of fixed work (default 50 µs, 300 µs, 1 ms, 5 ms, 20 ms) it runs one
SCHED_FIFO 80 thread pinned to --cpu, with a period of twice the work (at least 1 ms), for
--periods periods with --samples, and prints the calibration rtlab recorded (units, ns per
unit, the calibrated amount timed once more) and the median and minimum run time (response −
latency, exact from the samples file) against the asked time, with their errors in percent.
The median is the figure that counts: preemption and interrupts only lengthen single runs.

Usage: scripts/work-calibration.py [--cpu 1] [--periods 1000] [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab]
       [--works 50,300,1000,5000,20000] [--json out.json]
Needs root (SCHED_FIFO, mlockall).
"""
import argparse
import csv
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--periods", type=int, default=1000)
    p.add_argument("--rtlab", default="target/x86_64-unknown-linux-gnu/release/rtlab")
    p.add_argument("--works", default="50,300,1000,5000,20000", help="µs, comma-separated")
    p.add_argument("--json")
    a = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for us in [int(w) for w in a.works.split(",")]:
            period = max(2 * us, 1000)
            out, smp = os.path.join(tmp, "r.json"), os.path.join(tmp, "s.smp")
            subprocess.run([a.rtlab, "run", "-t1", "-a", str(a.cpu), "-p", "80", "-i", f"{period}us", "--work",
                            f"{us}us", "-l", str(a.periods), "-q", "--json", out, "--samples", smp], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            r = json.load(open(out))
            t = r["threads"][0]
            if t["policy"] != "fifo":
                sys.exit("rtlab did not get SCHED_FIFO; run as root")
            cal = t["work"]["calibration"]
            text = subprocess.run([a.rtlab, "samples", smp, "--csv"], check=True, capture_output=True,
                                  text=True).stdout
            runs = [(int(x["response_ns"]) - int(x["latency_ns"])) / 1e3 for x in csv.DictReader(io.StringIO(text))]
            med, low = statistics.median(runs), min(runs)
            row = {
                "work_us": us,
                "units": cal["units"],
                "ns_per_unit": cal["ps_per_unit"] / 1000,
                "calibrated_us": cal["measured_ns"] / 1000,
                "run_p50_us": med,
                "run_min_us": low,
                "p50_error_pct": (med / us - 1) * 100,
                "min_error_pct": (low / us - 1) * 100,
            }
            rows.append(row)
            print(f"work {us:>6} µs: {cal['units']:>9} units × {row['ns_per_unit']:.3f} ns, calibrated "
                  f"{row['calibrated_us']:.1f} µs; run median {med:.1f} µs ({row['p50_error_pct']:+.2f} %), "
                  f"min {low:.1f} µs ({row['min_error_pct']:+.2f} %)")
    if a.json:
        json.dump({"rows": rows, "machine": platform.node(), "kernel": platform.release(), "settings": vars(a)},
                  open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
