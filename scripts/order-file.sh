#!/usr/bin/env bash
# Records the link order of rtlab's release binary: the functions a plain run and a cyclictest
# stand-in run execute, so that the release link (build.rs, lld's --symbol-ordering-file) puts
# them side by side. The kernel maps a file's code 64 KiB at a time around each fault, so code
# a run executes, scattered through the binary, keeps far more of it resident than it uses
# (BENCHMARKS.md, sections 16 and 26). The release binary is the README's: static, its C
# library's code linked in (and ordered) with rtlab's.
#
# Usage: scripts/order-file.sh          regenerate link/plain-run.order (needs valgrind and perf,
#                                       root; about 30 minutes: a link per round)
#        scripts/order-file.sh --check  say how much of the order the release binary still has
#        scripts/order-file.sh --faults list the functions the runs fault on that the order lacks
#                                       (needs perf)
# Regenerate after a Rust or dependency upgrade (the symbols' hashes change; --check says so)
# and after a change to what a plain run executes.
set -euo pipefail
cd "$(dirname "$0")/.."
order=link/plain-run.order
triple=$(rustc -vV | sed -n 's/^host: //p')
bin=target/$triple/release/rtlab
# The README's release build.
build() { RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --locked --target "$triple"; }
# The two recorded runs: 2 s, the benchmark's (past the first second, so that each second's
# reading is recorded too).
plain_run=(run -t1 -a1 --policy fifo -p80 -i200 -l10000 -m --latency 0 -q)
stand_in=(cyclictest -t1 -a1 -p80 -i200 -l10000 -m --latency=0 -q -N)

symbols() { nm --defined-only "$1" | awk '$2 ~ /^[tTWi]$/ {print $3}' | sort -u; }

if [ "${1:-}" = "--check" ]; then
    [ -x "$bin" ] || { echo "order-file: no $bin; build it as the README says first" >&2; exit 2; }
    total=$(grep -c . "$order")
    found=$(comm -12 <(sort -u "$order") <(symbols "$bin") | wc -l)
    echo "link order: $found of $total recorded functions are in $bin"
    if [ $((found * 10)) -lt $((total * 9)) ]; then
        echo "rtlab: warning: the link order is stale (a Rust or dependency upgrade renamed the symbols): the release binary keeps more code resident; run scripts/order-file.sh" >&2
    fi
    exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "${1:-}" = "--faults" ]; then
    # The functions the two runs fault on (their code mapped in) that the order does not name,
    # twice each (warnings and paths vary from run to run).
    for k in 1 2; do
        perf record -q -d -e exceptions:page_fault_user -o "$tmp/r$k" -- "$bin" "${plain_run[@]}" \
            --json "$tmp/r.json" >/dev/null 2>&1
        perf record -q -d -e exceptions:page_fault_user -o "$tmp/c$k" -- "$bin" "${stand_in[@]}" \
            --json="$tmp/c.json" >/dev/null 2>&1
    done
    for f in "$tmp"/r? "$tmp"/c?; do
        perf script -i "$f" --show-mmap-events -F trace 2>/dev/null | python3 scripts/code-faults.py "$bin"
    done | sort -u | comm -23 - <(sort -u "$order")
    exit 0
fi

command -v valgrind >/dev/null || { echo "order-file: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
# The order is recorded from a binary linked without it, so that every symbol is its own.
RTLAB_LINK_ORDER=off build
run() { valgrind --tool=callgrind --demangle=no --callgrind-out-file="$tmp/cg.$1" "$bin" "${@:2}" >/dev/null 2>&1; }
run 1 "${plain_run[@]}" --json "$tmp/r.json"
run 2 "${stand_in[@]}" --json="$tmp/c.json"
# Functions in the order callgrind first names them (which varies from run to run), kept when
# they are the binary's own (the C library's weak and ifunc names included: callgrind may name
# `clock_gettime` where the binary also has `__clock_gettime`).
awk 'match($0, /^c?fn=\([0-9]+\) /) { n = substr($0, RLENGTH + 1); if (!(n in seen)) { seen[n] = 1; print n } }' \
    "$tmp/cg.1" "$tmp/cg.2" > "$tmp/all"
symbols "$bin" > "$tmp/own"
awk 'NR == FNR { own[$0] = 1; next } ($0 in own)' "$tmp/own" "$tmp/all" > "$order"
echo "wrote $order: $(wc -l < "$order") functions; linking the release binary in this order"
build
# callgrind misses what runs only outside valgrind: code chosen by CPU features valgrind hides
# (the C library's AVX-512 string functions, crc32fast's AVX-512 path), warnings this machine's
# state raises, the measuring thread's real scheduling. The kernel names the rest: each fault on
# code outside the ordered block names a function the runs execute; it joins the order and the
# binary is linked again, until no fault is left outside (a fault only names the first function
# of each 64 KiB it maps in, hence rounds).
if ! command -v perf >/dev/null; then
    echo "order-file: no perf (apt-get install linux-perf): the order is callgrind's alone" >&2
    exit 0
fi
for round in 1 2 3 4 5 6 7 8 9 10; do
    missing=$(scripts/order-file.sh --faults)
    [ -z "$missing" ] && { echo "round $round: every function the runs fault on is in the order"; exit 0; }
    echo "round $round: $(echo "$missing" | wc -l) more functions from the kernel's faults"
    echo "$missing" >> "$order"
    build
done
