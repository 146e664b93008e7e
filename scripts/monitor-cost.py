#!/usr/bin/env python3
"""What `rtlab monitor` costs next to cyclictest running the same probe for the same time.

Each pair runs `cyclictest -t1 -a CPU -p95 -i1000 -m -q -D SECONDS --mainaffinity=MAIN` and
`rtlab monitor -a CPU -p95 -i 1ms --mainaffinity MAIN -D SECONDS` (release build) while this
script scrapes its /metrics every second (a Prometheus at a 1 s interval, harsher than the usual
15 s), the order flipping every pair. CPU time (user + system) comes from wait4; the ratio
monitor/cyclictest is printed per pair, then the median. Also printed: the monitor's scrape
latency as this client sees it (median, max) and the response size.

Usage: scripts/monitor-cost.py [--pairs 5] [--seconds 20] [--cpu 1] [--main-cpu 0]
       [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab]
Needs root (SCHED_FIFO, mlockall) and cyclictest (rt-tests).
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def scrape(port):
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return time.perf_counter() - t0, len(data.split(b"\r\n\r\n", 1)[-1]), data.startswith(b"HTTP/1.1 200")


def run(cmd, port=None):
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lat, sizes, stop = [], [], threading.Event()

    def scraper():
        while not stop.wait(1.0):
            try:
                t, n, ok = scrape(port)
                if ok:
                    lat.append(t)
                    sizes.append(n)
            except OSError:
                pass

    th = None
    if port:
        th = threading.Thread(target=scraper)
        th.start()
    _, status, usage = os.wait4(proc.pid, 0)
    stop.set()
    if th:
        th.join()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[0]} failed: {status}")
    return usage.ru_utime + usage.ru_stime, lat, sizes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--main-cpu", type=int, default=0)
    ap.add_argument("--rtlab", default="target/x86_64-unknown-linux-gnu/release/rtlab")
    args = ap.parse_args()
    ratios, lats, sizes = [], [], []
    for i in range(args.pairs):
        port = free_port()
        cyc = ["cyclictest", "-t1", "-a", str(args.cpu), "-p95", "-i1000", "-m", "-q", "-D", str(args.seconds),
               f"--mainaffinity={args.main_cpu}"]
        mon = [args.rtlab, "monitor", "-a", str(args.cpu), "-p", "95", "-i", "1ms", "--mainaffinity",
               str(args.main_cpu), "-D", str(args.seconds), "--listen", f"127.0.0.1:{port}"]
        order = [("cyclictest", cyc, None), ("monitor", mon, port)]
        if i % 2:
            order.reverse()
        got = {}
        for name, cmd, p in order:
            got[name] = run(cmd, p)
        c, m = got["cyclictest"][0], got["monitor"][0]
        lats += got["monitor"][1]
        sizes += got["monitor"][2]
        ratios.append(m / c)
        print(f"pair {i}: CPU time cyclictest {c:.3f} s, monitor {m:.3f} s, ratio {m / c:.3f}")
    print(f"median CPU time ratio monitor/cyclictest over {args.pairs} pairs: {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f})")
    if lats:
        print(f"scrapes: {len(lats)}, latency median {statistics.median(lats) * 1e3:.2f} ms, "
              f"max {max(lats) * 1e3:.2f} ms, body {statistics.median(sizes)} bytes for one CPU")


if __name__ == "__main__":
    main()
