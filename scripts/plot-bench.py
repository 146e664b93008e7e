#!/usr/bin/env python3
"""Rendering time and peak memory of every plot kind (and of a report) for a 1-million-sample run.

Writes a samples file (docs/samples-format.md) of N samples over 2 threads with a realistic
shape (2-20 µs body, rare 50-250 µs and 12-17 ms spikes), a 21-point simulated sweep of as many
samples in total, then times `rtlab plot` for each kind and format with GNU time (wall seconds,
peak RSS). Prints a Markdown table for BENCHMARKS.md. The samples file's size next to the peak
RSS shows whether the samples are streamed (RSS far below the file) or loaded.

usage: scripts/plot-bench.py [--samples N] [--repeat K] [--rtlab PATH]
"""
import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile


def write_samples(path, n, threads=2, interval_ns=1_000_000):
    header = json.dumps({
        "schema": "rtlab.samples/1",
        "clock": "monotonic",
        "start_time": "2026-11-22T00:00:00Z",
        "threads": [{"thread": t, "cpu": t, "interval_ns": interval_ns} for t in range(threads)],
    }).encode()
    s = 0x12345678
    rec = struct.Struct("<HQqq")
    per = n // threads
    with open(path, "wb") as f:
        f.write(b"RTLSMP01" + struct.pack("<I", len(header)) + header)
        buf = bytearray()
        for c in range(per):
            for t in range(threads):
                s ^= (s << 13) & 0xFFFFFFFFFFFFFFFF
                s ^= s >> 7
                s ^= (s << 17) & 0xFFFFFFFFFFFFFFFF
                r = s % 100_000
                if r == 0:
                    lat = 12_000_000 + (s >> 20) % 5_000_000
                elif r < 100:
                    lat = 50_000 + (s >> 20) % 200_000
                else:
                    lat = 2_000 + (s >> 20) % 18_000
                buf += rec.pack(t, c, c * interval_ns + lat, lat)
            if len(buf) > 1 << 20:
                f.write(buf)
                buf.clear()
        f.write(buf)
        trailer = json.dumps({"records": per * threads, "lost": [0] * threads}).encode()
        f.write(rec.pack(0xFFFF, len(trailer), 0, 0) + trailer)


def timed(cmd):
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    wall, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rtlab", default="target/x86_64-unknown-linux-gnu/release/rtlab")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        smp = os.path.join(d, "run.smp")
        write_samples(smp, a.samples)
        sweep = os.path.join(d, "sweep")
        per_point = a.samples // 21
        subprocess.run([a.rtlab, "sweep", "--simulate", "seed:3", "--workers", "0..20", "-t", "1",
                        "-l", str(per_point), "-q", "--out", sweep], check=True, capture_output=True)
        jobs = [("histogram", smp), ("cdf", smp), ("timeseries", smp), ("sweep", sweep)]
        print(f"samples file: {a.samples} samples, {os.path.getsize(smp) / 2**20:.1f} MiB; "
              f"sweep: 21 points × {per_point} samples; median of {a.repeat}\n")
        print("| picture | input | format | wall time (s) | peak RSS (MiB) | output (KiB) |")
        print("|---|---|---|---:|---:|---:|")
        for kind, src in jobs:
            for ext in ("png", "svg"):
                out = os.path.join(d, f"{kind}.{ext}")
                runs = [timed([a.rtlab, "plot", "--kind", kind, src, "-o", out]) for _ in range(a.repeat)]
                wall = statistics.median(r[0] for r in runs)
                rss = max(r[1] for r in runs) / 1024
                name = "samples file" if src == smp else "sweep dir"
                print(f"| {kind} | {name} | {ext} | {wall:.2f} | {rss:.1f} | {os.path.getsize(out) / 1024:.0f} |")
        html = os.path.join(d, "report.html")
        runs = [timed([a.rtlab, "report", smp, "-o", html]) for _ in range(a.repeat)]
        print(f"| report (histogram, cdf, timeseries) | samples file | html | {statistics.median(r[0] for r in runs):.2f} "
              f"| {max(r[1] for r in runs) / 1024:.1f} | {os.path.getsize(html) / 1024:.0f} |")


if __name__ == "__main__":
    main()
