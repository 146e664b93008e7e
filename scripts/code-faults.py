#!/usr/bin/env python3
"""The functions of BIN whose code a run faulted in: reads `perf script --show-mmap-events -F
trace` of `exceptions:page_fault_user` on stdin and prints, one per line, the (mangled) name of
the function at each instruction fetch fault in BIN's code. Used by scripts/order-file.sh: the
kernel maps 64 KiB of a file's code around each fault, so each name here is a function outside
the link order's block that a run executed (BENCHMARKS.md, section 23).

Usage: perf script -i DATA --show-mmap-events -F trace | scripts/code-faults.py BIN
"""
import bisect
import os
import re
import subprocess
import sys

# The x86 page fault error code's bit for an instruction fetch.
FETCH = 0x10


def segments(binary):
    """(file offset, virtual address) of each LOAD segment."""
    out = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, check=True).stdout
    return [(int(f[1], 16), int(f[2], 16)) for f in (l.split() for l in out.splitlines()) if f and f[0] == "LOAD"]


def functions(binary):
    """(start, size, name) of every code symbol, by start."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tT":
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    return sorted(syms)


def main():
    binary = sys.argv[1]
    mmap = re.compile(r"MMAP2? .*\[0x([0-9a-f]+)\(0x[0-9a-f]+\) @ 0x([0-9a-f]+) .*\]: r-xp (\S+)")
    fault = re.compile(r"address=0x([0-9a-f]+) ip=0x[0-9a-f]+ error_code=0x([0-9a-f]+)")
    base = None
    faults = []
    for line in sys.stdin:
        m = mmap.search(line)
        if m and m.group(3) == os.path.realpath(binary):
            start, offset = int(m.group(1), 16), int(m.group(2), 16)
            for off, vaddr in segments(binary):
                if off & ~0xFFF == offset:
                    base = start - (vaddr & ~0xFFF)
            continue
        m = fault.search(line)
        if m and int(m.group(2), 16) & FETCH:
            faults.append(int(m.group(1), 16))
    if base is None:
        sys.exit(f"code-faults: no mapping of {binary}'s code in the trace")
    syms = functions(binary)
    starts = [s[0] for s in syms]
    names = set()
    for address in faults:
        at = address - base
        i = bisect.bisect_right(starts, at) - 1
        if i >= 0 and syms[i][0] <= at < syms[i][0] + max(syms[i][1], 1):
            names.add(syms[i][2])
    print("\n".join(sorted(names)))


if __name__ == "__main__":
    main()
