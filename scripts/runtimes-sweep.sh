#!/usr/bin/env bash
# Every runtime against its own CPU-bound workers, each beside its control (an OS thread with
# the same period and policy): the seed's Erlang question asked of every runtime on one machine.
# Runs the sweep, draws it, and prints per point the runtime's mean/p99/max, its control's p99
# and max, and the missed periods (the table in BENCHMARKS.md §12).
#
# usage: scripts/runtimes-sweep.sh [OUT_DIR] [path/to/rtlab] [WORKERS] [SECONDS]
# needs: gnat golang-go nodejs python3 erlang-nox (as .ci/run installs them)
set -euo pipefail
OUT=${1:-runtimes-sweep}
RTLAB=${2:-target/x86_64-unknown-linux-gnu/release/rtlab}
WORKERS=${3:-0..3}
SECONDS_PER_POINT=${4:-5}
"$RTLAB" sweep --runtime os,tokio,beam,ada,go,node,python --workers "$WORKERS" -i 1ms \
    -D "${SECONDS_PER_POINT}s" --control --out "$OUT"
"$RTLAB" plot "$OUT" -o "$OUT/runtimes-sweep.png"
python3 - "$OUT/sweep.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ms = lambda v: f"{float(v) * 1000:.0f}" if v else "-"
print("| runtime | workers | mean µs | p99 µs | max µs | missed | control p99 µs | control max µs |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['runtime']} | {r['cpu_workers']} | {ms(r['mean_latency_ms'])} | {ms(r['p99_latency_ms'])} | "
          f"{ms(r['max_latency_ms'])} | {r['missed']} | {ms(r.get('control_p99_latency_ms'))} | "
          f"{ms(r.get('control_max_latency_ms'))} |")
PY
