#!/usr/bin/env bash
# Records the link order of rtlab's code: the functions a plain run and a cyclictest stand-in run
# execute (the set is what matters; callgrind lists them in no fixed order), so that the release
# link (build.rs, lld's --symbol-ordering-file) puts them side by side. The kernel maps a file's code 64 KiB at a time
# around each fault, so code a run executes, scattered through the binary, keeps far more of it
# resident than it uses (BENCHMARKS.md, section 16).
#
# Usage: scripts/order-file.sh          regenerate link/plain-run.order (needs valgrind and perf,
#                                       root; about 20 minutes: a link per round)
#        scripts/order-file.sh --check  say how much of the order the release binary still has
#        scripts/order-file.sh --faults list the functions the runs execute that the order lacks
# Regenerate after a Rust or dependency upgrade (the symbols' hashes change; --check says so).
set -euo pipefail
cd "$(dirname "$0")/.."
order=link/plain-run.order
bin=target/release/rtlab

symbols() { nm "$1" | awk '$2 ~ /^[tT]$/ {print $3}' | sort -u; }

if [ "${1:-}" = "--check" ]; then
    [ -x "$bin" ] || { echo "order-file: no $bin; cargo build --release first" >&2; exit 2; }
    total=$(grep -c . "$order")
    found=$(comm -12 <(sort -u "$order") <(symbols "$bin") | wc -l)
    echo "link order: $found of $total recorded functions are in $bin"
    if [ $((found * 10)) -lt $((total * 9)) ]; then
        echo "rtlab: warning: the link order is stale (a Rust or dependency upgrade renamed the symbols): the release binary keeps more code resident; run scripts/order-file.sh" >&2
    fi
    exit 0
fi

if [ "${1:-}" = "--faults" ]; then
    # The functions a plain run and a cyclictest run fault on (their code mapped in) that the
    # order does not name, twice each (warnings and paths vary from run to run).
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    for k in 1 2; do
        perf record -q -d -e exceptions:page_fault_user -o "$tmp/r$k" -- "$bin" run -t1 -a1 --policy fifo -p80 -i200 \
            -l10000 -m --latency 0 -q --json "$tmp/r.json" >/dev/null 2>&1
        perf record -q -d -e exceptions:page_fault_user -o "$tmp/c$k" -- "$bin" cyclictest -t1 -a1 -p80 -i200 -l10000 \
            -m --latency=0 -q -N --json="$tmp/c.json" >/dev/null 2>&1
    done
    for f in "$tmp"/r? "$tmp"/c?; do
        perf script -i "$f" --show-mmap-events -F trace 2>/dev/null | python3 scripts/code-faults.py "$bin"
    done | sort -u | comm -23 - <(sort -u "$order")
    exit 0
fi

command -v valgrind >/dev/null || { echo "order-file: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
# The order is recorded from a binary linked without it, so that every symbol is its own.
RTLAB_LINK_ORDER=off cargo build --release --locked
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { valgrind --tool=callgrind --demangle=no --callgrind-out-file="$tmp/cg.$1" "$bin" "${@:2}" >/dev/null 2>&1; }
# Runs of 2 s (the benchmark's): past the first second, so that each second's reading (the
# series' interval histograms) is recorded too.
run 1 run -t1 -a1 --policy fifo -p80 -i200 -l10000 -m --latency 0 -q --json "$tmp/r.json"
run 2 cyclictest -t1 -a1 -p80 -i200 -l10000 -m --latency=0 -q -N --json="$tmp/c.json"
# Functions in the order callgrind first names them (which varies from run to run), kept when
# they are the binary's own.
awk 'match($0, /^c?fn=\([0-9]+\) /) { n = substr($0, RLENGTH + 1); if (!(n in seen)) { seen[n] = 1; print n } }' \
    "$tmp/cg.1" "$tmp/cg.2" > "$tmp/all"
symbols "$bin" > "$tmp/own"
awk 'NR == FNR { own[$0] = 1; next } ($0 in own)' "$tmp/own" "$tmp/all" > "$order"
echo "wrote $order: $(wc -l < "$order") functions; linking the release binary in this order"
cargo build --release --locked
# callgrind misses what runs only outside valgrind: code chosen by CPU features valgrind hides
# (crc32fast's AVX-512 path), warnings this machine's state raises, the measuring thread's real
# scheduling. The kernel names the rest: each fault on code outside the ordered block names a
# function the runs execute; it joins the order and the binary is linked again, until no fault
# is left outside (a fault only names the first function of each 64 KiB it maps in, hence rounds).
if ! command -v perf >/dev/null; then
    echo "order-file: no perf (apt-get install linux-perf): the order is callgrind's alone" >&2
    exit 0
fi
for round in 1 2 3 4 5 6; do
    missing=$(scripts/order-file.sh --faults)
    [ -z "$missing" ] && { echo "round $round: every function the runs fault on is in the order"; exit 0; }
    echo "round $round: $(echo "$missing" | wc -l) more functions from the kernel's faults"
    echo "$missing" >> "$order"
    cargo build --release --locked
done
