#!/usr/bin/env python3
"""What watching costs the watched: cyclictest alone against cyclictest under `rtlab watch`.

The same cyclictest command (one SCHED_FIFO 80 thread pinned to --cpu, 1 ms absolute period,
-v --nsecs: every cycle's latency in ns, as cyclictest itself measured it) runs alone and
under `rtlab watch -- …` in turn, the order flipping every pair so that drift in the machine's
state hits both alike. rtlab's threads (its reporting thread and its event reader) are pinned to
--main-cpu with --mainaffinity; cyclictest's own main thread is left where it is in both runs.

Per pair it prints cyclictest's p50 and p99 alone and watched, their ratios (watched/alone),
rtlab's event reader's CPU time (from its RunResult) and its share of the run, the events read
and the events the kernel lost; then the median of each ratio over the pairs. The target of
issue 26 is a p50 ratio of at most 1.05.

With --backend both, each round runs cyclictest alone, under the tracefs backend and under the
BPF backend (the order rotating round by round), and each backend's ratios are to the same
round's run alone. Each --variant NAME=BINARY adds an arm to every round: that rtlab binary
watching through its BPF programs (another build of them: what a change to the programs costs,
measured in the same rounds); with --attach, each variant's watched p50 is also set against main's
in the same round (the median of those ratios, and a sign test).

With --attach, one cyclictest runs through the whole measurement and the pairs are windows of
it: --window seconds unwatched and --window seconds with `rtlab watch -p PID -D WINDOW` attached
to it (one more window per --variant, that build watching), the order rotating every round
(with --containment, the treated window moves cyclictest into a fresh cgroup v2 group instead of
watching it: what `watch -- CMD`'s containment costs alone).
A drift of the machine's state between two runs of seconds (this VM's p50 moves by ±10–20 % from
one run to the next) then falls on both halves of a pair alike, and the program, its memory and
its cgroup are the same in both. Each cycle's time is its place on cyclictest's absolute schedule,
counted back from the moment cyclictest exits; the first 0.5 s of every window (watch's start:
its BPF programs loaded and attached) and its last 0.2 s are not counted. The pair's ratio is
p50 treated / p50 untreated; the summary adds in how many pairs the treated half was the higher
and the two-sided sign test's p.

Usage: scripts/watch-cost.py [--pairs 5] [--loops 5000] [--cpu 1] [--main-cpu 0]
       [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab] [--json out.json] [--backend bpf|tracefs|both]
       [--variant NAME=BINARY]... [--attach [--window 3] [--containment]]
Needs root (SCHED_FIFO, tracefs) and cyclictest (Debian: rt-tests).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from signtest import sign_p


def cyclictest_cmd(a, out):
    return ["sh", "-c", f"exec cyclictest -t1 -a{a.cpu} -p80 -i1000 -l{a.loops} -v --nsecs -q > {out}"]


def cycles(path):
    values = []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(":")]
            if len(parts) == 3 and parts[0] == "0":
                values.append(int(parts[2]))
    return values


def quantile(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, int(round((len(s) - 1) * q)))]


def alone(a, tmp):
    out = os.path.join(tmp, "alone.txt")
    subprocess.run(cyclictest_cmd(a, out), check=True)
    return cycles(out), None


def watched(a, tmp, backend):
    out = os.path.join(tmp, "watched.txt")
    js = os.path.join(tmp, "watch.json")
    binary = a.rtlab
    if backend in a.variants:
        binary, backend = a.variants[backend], "bpf"
    chosen = ["--backend", backend] if backend else []
    cmd = [binary, "watch", "-q", "--mainaffinity", str(a.main_cpu), "--json", js] + chosen + ["--"] + cyclictest_cmd(a, out)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(js) as f:
        r = json.load(f)
    return cycles(out), r


def arms(a):
    """The runs of one round: alone, then each backend watched (rtlab's default when none)."""
    backends = {"both": ["tracefs", "bpf"], None: [None]}.get(a.backend, [a.backend])
    return ["alone"] + backends + list(a.variants)


def row_of(i, name, alone_values, values, r, secs, variants):
    w = r["watch"]
    row = {
        "pair": i,
        "backend": name if name in variants else w["backend"].split(":")[0],
        "alone_p50_ns": quantile(alone_values, 0.5),
        "alone_p99_ns": quantile(alone_values, 0.99),
        "watched_p50_ns": quantile(values, 0.5),
        "watched_p99_ns": quantile(values, 0.99),
        "reader_cpu_ms": w["reader_cpu_ns"] / 1e6,
        "reader_cpu_share": w["reader_cpu_ns"] / 1e9 / secs,
        "events": w["events"],
        "lost_events": w["lost_events"],
        "cycles": (len(alone_values), len(values)),
    }
    row["p50_ratio"] = row["watched_p50_ns"] / row["alone_p50_ns"]
    row["p99_ratio"] = row["watched_p99_ns"] / row["alone_p99_ns"]
    print(
        f"pair {i} {row['backend']}: p50 {row['alone_p50_ns']} → {row['watched_p50_ns']} ns (×{row['p50_ratio']:.3f}), "
        f"p99 {row['alone_p99_ns']} → {row['watched_p99_ns']} ns (×{row['p99_ratio']:.3f}), "
        f"reader {row['reader_cpu_ms']:.1f} ms CPU ({row['reader_cpu_share'] * 100:.2f} % of a CPU), "
        f"{row['events']} events, {row['lost_events']} lost",
        flush=True,
    )
    return row


def summarise(rows):
    return {
        "median_p50_ratio": statistics.median(r["p50_ratio"] for r in rows),
        "median_p99_ratio": statistics.median(r["p99_ratio"] for r in rows),
        "median_reader_cpu_share": statistics.median(r["reader_cpu_share"] for r in rows),
        "lost_events": sum(r["lost_events"] for r in rows),
    }


def cgroup2_mount():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[0] == "cgroup2":
                return left.split()[4]
    sys.exit("--containment needs a cgroup v2 hierarchy")


def contained_window(a, pid):
    """Moves every thread of pid into a fresh cgroup v2 group for a window, then back."""
    root = cgroup2_mount()
    with open(f"/proc/{pid}/cgroup") as f:
        home = next(line.split(":", 2)[2].strip() for line in f if line.startswith("0::"))
    group = tempfile.mkdtemp(prefix="watch-cost-", dir=root)
    t0 = time.monotonic()
    with open(os.path.join(group, "cgroup.procs"), "w") as f:
        f.write(str(pid))
    time.sleep(a.window)
    with open(os.path.join(root + home, "cgroup.procs"), "w") as f:
        f.write(str(pid))
    t1 = time.monotonic()
    os.rmdir(group)
    return t0, t1, None


def watched_window(a, pid, tmp, arm):
    js = os.path.join(tmp, "attach.json")
    binary, backend = (a.variants[arm], "bpf") if arm in a.variants else (a.rtlab, a.backend)
    chosen = ["--backend", backend] if backend else []
    cmd = [binary, "watch", "-q", "-p", str(pid), "-D", str(a.window), "--mainaffinity", str(a.main_cpu), "--json", js] + chosen
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    t1 = time.monotonic()
    with open(js) as f:
        return t0, t1, json.load(f)["watch"]


def attach_pairs(a, tmp):
    """The pairs of --attach: windows of one cyclictest, untreated and treated by each arm in turn
    (rows per arm and round)."""
    interval_s = 0.001
    arms = ["treated"] + list(a.variants)
    loops = int((a.pairs * (1 + len(arms)) * (a.window + 0.3) + 3) / interval_s)
    out = os.path.join(tmp, "long.txt")
    ct = subprocess.Popen(["cyclictest", "-t1", f"-a{a.cpu}", "-p80", "-i1000", f"-l{loops}", "-v", "--nsecs", "-q"],
                          stdout=open(out, "w"))
    try:
        windows = treat_windows(a, ct, arms, tmp)
    except BaseException:
        # A failed watch (or Ctrl-C) must not leave a FIFO 80 cyclictest running for minutes.
        # SIGTERM first: a SIGKILLed cyclictest leaves its /dev/shm/cyclictest<PID> behind.
        ct.terminate()
        try:
            ct.wait(timeout=5)
        except subprocess.TimeoutExpired:
            ct.kill()
        raise
    if ct.wait() != 0:
        sys.exit("cyclictest failed")
    end = time.monotonic()
    return pairs_of(a, arms, windows, cycles(out), end, interval_s)


def treat_windows(a, ct, arms, tmp):
    """The windows of every round: (round, arm, start, end, the watch's result or None)."""
    time.sleep(1.0)
    windows = []
    for i in range(a.pairs):
        # The order rotates (and flips) round by round: drift hits every arm alike.
        order = ["alone"] + arms
        k = i % len(order)
        order = order[k:] + order[:k]
        if i % 2 == 1:
            order.reverse()
        for kind in order:
            if kind == "alone":
                t0 = time.monotonic()
                time.sleep(a.window)
                windows.append((i, kind, t0, time.monotonic(), None))
            else:
                got = contained_window(a, ct.pid) if a.containment else watched_window(a, ct.pid, tmp, kind)
                windows.append((i, kind) + got)
    return windows


def pairs_of(a, arms, windows, values, end, interval_s):
    """Each round's ratio per arm, from cyclictest's cycles placed on its schedule."""
    head, tail = 0.5, 0.2
    # Cycle k woke at first + k·interval on cyclictest's absolute schedule; it exits just after the last.
    first = end - len(values) * interval_s
    rows = []
    for i, arm in ((i, arm) for i in range(a.pairs) for arm in arms):
        halves = {}
        for pair, kind, t0, t1, w in windows:
            if pair == i:
                lo, hi = int((t0 + head - first) / interval_s), int((t1 - tail - first) / interval_s)
                halves[kind] = (values[max(lo, 0):max(hi, 0)], w, t1 - t0)
        (alone_v, _, _), (treated_v, w, secs) = halves["alone"], halves[arm]
        if len(alone_v) < 100 or len(treated_v) < 100:
            sys.exit(f"pair {i}: a window holds fewer than 100 cycles (cyclictest ended early?)")
        row = {"pair": i, "arm": arm, "alone_p50_ns": quantile(alone_v, 0.5), "treated_p50_ns": quantile(treated_v, 0.5),
               "alone_p99_ns": quantile(alone_v, 0.99), "treated_p99_ns": quantile(treated_v, 0.99),
               "cycles": (len(alone_v), len(treated_v))}
        row["p50_ratio"] = row["treated_p50_ns"] / row["alone_p50_ns"]
        row["p99_ratio"] = row["treated_p99_ns"] / row["alone_p99_ns"]
        extra = ""
        if w:
            row.update(reader_cpu_share=w["reader_cpu_ns"] / 1e9 / secs, events=w["events"], lost_events=w["lost_events"])
            extra = f", reader {row['reader_cpu_share'] * 100:.2f} % of a CPU, {w['events']} events, {w['lost_events']} lost"
        print(f"pair {i} {arm}: p50 {row['alone_p50_ns']} → {row['treated_p50_ns']} ns (×{row['p50_ratio']:.3f}), "
              f"p99 ×{row['p99_ratio']:.3f}, cycles {row['cycles'][0]}/{row['cycles'][1]}{extra}", flush=True)
        rows.append(row)
    return rows


def attach_main(a):
    with tempfile.TemporaryDirectory() as tmp:
        all_rows = attach_pairs(a, tmp)
    results = {}
    for arm in ["treated"] + list(a.variants):
        what = ("containment (a fresh cgroup v2 group)" if a.containment
                else f"watch -p ({a.backend or 'default backend'})" if arm == "treated" else f"{arm}: watch -p (bpf)")
        results[arm] = summarise_attach(a, [r for r in all_rows if r["arm"] == arm], what)
    for arm in a.variants:
        results[arm]["vs_main"] = variant_vs_main(arm, all_rows)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": platform.uname()._asdict(), "window_s": a.window, "arms": results}, f, indent=2)


def variant_vs_main(arm, rows):
    """Per round, the variant's watched p50 over main's (the treated arm's) in the same round: the
    comparison of the two builds that the rounds' shared state does not blur."""
    main = {r["pair"]: r["treated_p50_ns"] for r in rows if r["arm"] == "treated"}
    ratios = [r["treated_p50_ns"] / main[r["pair"]] for r in rows if r["arm"] == arm and r["pair"] in main]
    higher, lower = sum(x > 1 for x in ratios), sum(x < 1 for x in ratios)
    summary = {"median_p50_ratio": statistics.median(ratios), "higher": higher, "lower": lower,
               "sign_p": sign_p(higher, lower)}
    print(f"{arm} against main's watch, per round: p50 ×{summary['median_p50_ratio']:.3f}; "
          f"{arm}'s higher in {higher} of {higher + lower} rounds (sign p {summary['sign_p']:.3f})")
    return summary


def summarise_attach(a, rows, what):
    higher = sum(r["p50_ratio"] > 1 for r in rows)
    lower = sum(r["p50_ratio"] < 1 for r in rows)
    summary = {"treatment": what, "pairs": rows,
               "median_p50_ratio": statistics.median(r["p50_ratio"] for r in rows),
               "median_p99_ratio": statistics.median(r["p99_ratio"] for r in rows),
               "treated_higher": higher, "treated_lower": lower, "sign_p": sign_p(higher, lower)}
    if not a.containment:
        summary["median_reader_cpu_share"] = statistics.median(r["reader_cpu_share"] for r in rows)
        summary["lost_events"] = sum(r["lost_events"] for r in rows)
    print(f"{what}: median p50 ratio ×{summary['median_p50_ratio']:.3f}, p99 ×{summary['median_p99_ratio']:.3f}; "
          f"treated higher in {higher} of {higher + lower} pairs (sign p {summary['sign_p']:.3f})"
          + (f"; reader {summary['median_reader_cpu_share'] * 100:.2f} % of a CPU, {summary['lost_events']} events lost"
             if not a.containment else ""))
    return summary


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--loops", type=int, default=5000)
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--main-cpu", type=int, default=0)
    p.add_argument("--rtlab", default="target/x86_64-unknown-linux-gnu/release/rtlab")
    p.add_argument("--json")
    p.add_argument(
        "--backend",
        choices=["bpf", "tracefs", "both"],
        help="rtlab watch --backend; both: each round runs alone, tracefs and bpf, the order rotating (default: rtlab's)",
    )
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=BINARY",
        help="one more arm per round: BINARY watch --backend bpf, reported as NAME (another build's BPF programs)",
    )
    p.add_argument("--attach", action="store_true", help="pairs of windows of one long cyclictest (see above)")
    p.add_argument("--window", type=float, default=3.0, help="--attach: seconds per window (default 3)")
    p.add_argument("--containment", action="store_true", help="--attach: treat by a cgroup v2 move, not a watch")
    a = p.parse_args()
    a.variants = dict(v.split("=", 1) for v in a.variant)
    if os.geteuid() != 0:
        sys.exit("watch-cost.py needs root (SCHED_FIFO, tracefs)")
    if a.attach:
        if a.backend == "both" or (a.containment and a.variants) or a.window < 1.5 or a.pairs < 1:
            sys.exit("--attach takes one backend, --window of at least 1.5 s, --pairs of at least 1, and --variant only without --containment")
        return attach_main(a)
    if a.containment:
        sys.exit("--containment goes with --attach")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.pairs):
            names = arms(a)
            # The order rotates (and flips) round by round: drift hits every arm alike.
            k = i % len(names)
            order = names[k:] + names[:k]
            if i % 2 == 1:
                order.reverse()
            got = {}
            for name in order:
                t0 = time.monotonic()
                got[name] = (alone(a, tmp) if name == "alone" else watched(a, tmp, name)) + (time.monotonic() - t0,)
            for name in names[1:]:
                values, r, secs = got[name]
                rows.append(row_of(i, name, got["alone"][0], values, r, secs, a.variants))
    by_backend = {}
    for r in rows:
        by_backend.setdefault(r["backend"], []).append(r)
    summary = {"machine": platform.uname()._asdict(), "loops": a.loops, "pairs": rows}
    for backend, its in by_backend.items():
        s = summarise(its)
        summary[backend] = s
        print(
            f"{backend}: median p50 ratio ×{s['median_p50_ratio']:.3f}, p99 ratio ×{s['median_p99_ratio']:.3f}, "
            f"reader {s['median_reader_cpu_share'] * 100:.2f} % of a CPU, {s['lost_events']} events lost"
        )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
