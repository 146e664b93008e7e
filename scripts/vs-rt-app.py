#!/usr/bin/env python3
"""Side-by-side benchmark: `rtlab run --rt-app FILE` against Debian's `rt-app FILE`, alternating.

One rt-app JSON file (one periodic task: `run` of --work µs every --period µs, SCHED_FIFO 80,
pinned to --cpu, lock_pages) is run by rt-app and by rtlab in turn, the order flipping every
pair so that drift in the machine's state hits both alike; both main threads are pinned to
--main-cpu (taskset for rt-app, --mainaffinity for rtlab). From every period it takes:

  wakeup latency: rt-app's wu_lat (µs, as it logs it); rtlab's latency_ns from --samples
  run duration:   rt-app's run (µs: the time its run event took); rtlab's response − latency

and prints, per pair, the ratio rtlab/rt-app of the medians, then the median of each ratio.
rt-app logs whole µs: its medians are rounded to the µs, so ratios near 1 carry ±1 µs.

Usage: scripts/vs-rt-app.py [--runs 5] [--seconds 5] [--cpu 1] [--main-cpu 0] [--work 300]
       [--period 1000] [--rtlab target/release/rtlab] [--json out.json]
Needs root (SCHED_FIFO, mlockall) and rt-app (Debian: rt-app).
"""
import argparse
import csv
import glob
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile


def task_file(tmp, a):
    spec = {
        "tasks": {
            "ctl": {
                "policy": "SCHED_FIFO",
                "priority": 80,
                "cpus": [a.cpu],
                "run": a.work,
                "timer": {"ref": "ctl", "period": a.period, "mode": "absolute"},
            }
        },
        "global": {
            "duration": a.seconds,
            "calibration": f"CPU{a.cpu}",
            "default_policy": "SCHED_OTHER",
            "lock_pages": True,
            "logdir": tmp,
            "log_basename": "rt-app",
        },
    }
    path = os.path.join(tmp, "task.json")
    json.dump(spec, open(path, "w"), indent=1)
    return path


def rt_app_once(path, tmp, a):
    for f in glob.glob(os.path.join(tmp, "rt-app-*.log")):
        os.remove(f)
    subprocess.run(["taskset", "-c", str(a.main_cpu), "rt-app", path], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    (log,) = glob.glob(os.path.join(tmp, "rt-app-ctl-*.log"))
    lines = open(log).read().splitlines()
    header = next(l for l in lines if l.startswith("#idx")).lstrip("#").split()
    rows = [dict(zip(header, map(int, l.split()))) for l in lines if l.strip() and not l.startswith("#")]
    return statistics.median(r["wu_lat"] for r in rows), statistics.median(r["run"] for r in rows), len(rows)


def rtlab_once(binary, path, tmp, a):
    smp = os.path.join(tmp, "s.smp")
    out = os.path.join(tmp, "r.json")
    subprocess.run([binary, "run", "--rt-app", path, "--mainaffinity", str(a.main_cpu), "-q", "--json", out,
                    "--samples", smp], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = json.load(open(out))
    t = r["threads"][0]
    if t["policy"] != "fifo" or t["priority"] != 80:
        sys.exit(f"rtlab did not get SCHED_FIFO 80 ({t['policy']}:{t['priority']}); run as root")
    text = subprocess.run([binary, "samples", smp, "--csv"], check=True, capture_output=True, text=True).stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    lat = [int(x["latency_ns"]) / 1e3 for x in rows]
    run = [(int(x["response_ns"]) - int(x["latency_ns"])) / 1e3 for x in rows]
    return statistics.median(lat), statistics.median(run), len(rows), t["work"]["calibration"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--main-cpu", type=int, default=0)
    p.add_argument("--work", type=int, default=300, help="µs of run per period")
    p.add_argument("--period", type=int, default=1000, help="µs")
    p.add_argument("--rtlab", default="target/release/rtlab")
    p.add_argument("--json")
    a = p.parse_args()
    if shutil.which("rt-app") is None:
        sys.exit("rt-app is not installed (Debian: apt-get install rt-app)")
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        path = task_file(tmp, a)
        for i in range(a.runs):
            order = ["rt-app", "rtlab"] if i % 2 == 0 else ["rtlab", "rt-app"]
            got = {}
            for tool in order:
                got[tool] = rt_app_once(path, tmp, a) if tool == "rt-app" else rtlab_once(a.rtlab, path, tmp, a)
            (rl, rr, rn), (tl, tr, tn, cal) = got["rt-app"], got["rtlab"]
            pair = {
                "rt_app": {"wu_lat_p50_us": rl, "run_p50_us": rr, "periods": rn},
                "rtlab": {"latency_p50_us": tl, "run_p50_us": tr, "periods": tn, "calibration": cal},
                "latency_ratio": tl / rl if rl else None,
                "run_ratio": tr / rr,
            }
            pairs.append(pair)
            print(f"pair {i + 1} ({' then '.join(order)}): latency p50 rtlab {tl:.1f} µs / rt-app {rl:.1f} µs, "
                  f"run p50 rtlab {tr:.1f} µs / rt-app {rr:.1f} µs (of {a.work} asked), "
                  f"periods {tn} / {rn}")
    lat = [x["latency_ratio"] for x in pairs if x["latency_ratio"]]
    run = [x["run_ratio"] for x in pairs]
    summary = {
        "median_latency_ratio": statistics.median(lat) if lat else None,
        "median_run_ratio": statistics.median(run),
        "machine": platform.node(),
        "kernel": platform.release(),
        "settings": vars(a),
    }
    print(f"median ratio rtlab/rt-app: wakeup latency p50 {summary['median_latency_ratio']:.3f}, "
          f"run p50 {summary['median_run_ratio']:.3f}")
    if a.json:
        json.dump({"pairs": pairs, "summary": summary}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
