#!/usr/bin/env bash
# Records the link order of rtlab's code: the functions a plain run and a cyclictest stand-in run
# execute (the set is what matters; callgrind lists them in no fixed order), so that the release
# link (build.rs, lld's --symbol-ordering-file) puts them side by side. The kernel maps a file's code 64 KiB at a time
# around each fault, so code a run executes, scattered through the binary, keeps far more of it
# resident than it uses (BENCHMARKS.md, section 16).
#
# Usage: scripts/order-file.sh          regenerate link/plain-run.order (needs valgrind, root)
#        scripts/order-file.sh --check  say how much of the order the release binary still has
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
