#!/bin/sh
# Builds and runs the stall injector (needs root, clang, bpftool, libbpf-dev; .ci/run installs
# them). Example, as the watch cases were checked: a late timer interrupt of 0.75–2.25 ms on
# CPU 1 about every 100 ms, while the tests run:
#   scripts/stall-inject/run.sh 1 1500 100000 a &  cargo test --test watch; kill %1
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$out/vmlinux.h"
clang -O2 -g -target bpf -I"$out" -c "$here/stall.bpf.c" -o "$out/stall.bpf.o"
bpftool gen skeleton "$out/stall.bpf.o" > "$out/stall.skel.h"
cc -O2 -I"$out" -o "$out/stall" "$here/stall.c" -lbpf
"$out/stall" "$@"
