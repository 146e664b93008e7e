#!/usr/bin/env python3
"""Side-by-side benchmark: `rtlab run --rt-app FILE` against Debian's `rt-app FILE`, alternating.

One rt-app JSON file (one periodic task: `run` of --work µs every --period µs, SCHED_FIFO 80,
pinned to --cpu, lock_pages) is run by rt-app and by rtlab in turn, the order flipping every
pair so that drift in the machine's state hits both alike; both main threads are pinned to
--main-cpu (taskset for rt-app, --mainaffinity for rtlab). From every period it takes:

  wakeup latency: wu_lat of the lines that slept (µs), from rt-app's log and from rtlab's
                  log of the same layout (rtlab writes it where the file's logdir says)
  run duration:   run (µs: the time the run event took), from both logs

and prints, per pair, the medians, then over the pairs the median difference of the wakeup
medians (rtlab − rt-app, µs) and of rtlab's run against the run asked (%). rtlab's log is also
imported by rtlab and must give the run's own counts. Exit 0 when the difference is within
5 µs, the run within 3 % and every log imports exactly; 1 otherwise.

Usage: scripts/vs-rt-app.py [--runs 5] [--seconds 5] [--cpu 1] [--main-cpu 0] [--work 300]
       [--period 1000] [--mode relative|absolute] [--rtlab target/x86_64-unknown-linux-gnu/release/rtlab] [--json out.json]
Needs root (SCHED_FIFO, mlockall) and rt-app (Debian: rt-app).
"""
import argparse
import glob
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
                "timer": {"ref": "ctl", "period": a.period, "mode": a.mode},
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


def log_medians(tmp):
    """The medians of one rt-app-format log in `tmp`: wu_lat of the lines that slept (slack
    > 0: an overrun line's wu_lat 0 is no wakeup) and run, with the number of lines."""
    (log,) = glob.glob(os.path.join(tmp, "rt-app-ctl-*.log"))
    lines = open(log).read().splitlines()
    header = next(l for l in lines if l.startswith("#idx")).lstrip("#").split()
    rows = [dict(zip(header, map(int, l.split()))) for l in lines if l.strip() and not l.startswith("#")]
    slept = [r["wu_lat"] for r in rows if r["slack"] > 0] or [0]
    return statistics.median(slept), statistics.median(r["run"] for r in rows), len(rows), log


def clear_logs(tmp):
    for f in glob.glob(os.path.join(tmp, "rt-app-*.log")):
        os.remove(f)


def rt_app_once(path, tmp, a):
    clear_logs(tmp)
    subprocess.run(["taskset", "-c", str(a.main_cpu), "rt-app", path], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return log_medians(tmp)[:3]


def rtlab_once(binary, path, tmp, a):
    """rtlab runs the same file and writes the same log (its logdir); the log must import, by
    rtlab, to the run's own figures."""
    clear_logs(tmp)
    out = os.path.join(tmp, "r.json")
    subprocess.run([binary, "run", "--rt-app", path, "--mainaffinity", str(a.main_cpu), "-q", "--json", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = json.load(open(out))
    t = r["threads"][0]
    if t["policy"] != "fifo" or t["priority"] != 80:
        sys.exit(f"rtlab did not get SCHED_FIFO 80 ({t['policy']}:{t['priority']}); run as root")
    lat, run, n, log = log_medians(tmp)
    imported = os.path.join(tmp, "imported.json")
    subprocess.run([binary, "import", log, "-o", imported], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    i = json.load(open(imported))["threads"][0]
    agrees = i["cycles"] == t["cycles"] and i["work"]["releases"] == t["work"]["releases"]
    return lat, run, n, t["work"]["calibration"], agrees


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--main-cpu", type=int, default=0)
    p.add_argument("--work", type=int, default=300, help="µs of run per period")
    p.add_argument("--period", type=int, default=1000, help="µs")
    p.add_argument("--mode", default="relative", choices=["relative", "absolute"],
                   help="the timer's mode (rt-app's default: relative)")
    p.add_argument("--rtlab", default="target/x86_64-unknown-linux-gnu/release/rtlab")
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
            (rl, rr, rn), (tl, tr, tn, cal, agrees) = got["rt-app"], got["rtlab"]
            pair = {
                "rt_app": {"wu_lat_p50_us": rl, "run_p50_us": rr, "periods": rn},
                "rtlab": {"wu_lat_p50_us": tl, "run_p50_us": tr, "periods": tn, "calibration": cal,
                          "log_imports_to_its_figures": agrees},
                "wakeup_p50_difference_us": tl - rl,
                "run_vs_asked_pct": (tr - a.work) * 100.0 / a.work,
                "rt_app_run_vs_asked_pct": (rr - a.work) * 100.0 / a.work,
            }
            pairs.append(pair)
            print(f"pair {i + 1} ({' then '.join(order)}): wu_lat p50 rtlab {tl:.1f} µs / rt-app {rl:.1f} µs, "
                  f"run p50 rtlab {tr:.1f} µs / rt-app {rr:.1f} µs (of {a.work} asked), "
                  f"periods {tn} / {rn}, rtlab's log imports to its figures: {agrees}")
    diff = statistics.median(x["wakeup_p50_difference_us"] for x in pairs)
    run = statistics.median(x["run_vs_asked_pct"] for x in pairs)
    rt_run = statistics.median(x["rt_app_run_vs_asked_pct"] for x in pairs)
    summary = {
        "median_wakeup_p50_difference_us": diff,
        "median_run_vs_asked_pct": run,
        "median_rt_app_run_vs_asked_pct": rt_run,
        "logs_import_exactly": all(x["rtlab"]["log_imports_to_its_figures"] for x in pairs),
        "machine": platform.node(),
        "kernel": platform.release(),
        "settings": vars(a),
    }
    held = abs(diff) <= 5 and abs(run) <= 3 and summary["logs_import_exactly"]
    print(f"median over pairs: wakeup p50 rtlab − rt-app {diff:+.1f} µs (≤ 5 µs asked), run p50 rtlab "
          f"{run:+.1f} % of the {a.work} µs asked (≤ 3 %; rt-app {rt_run:+.1f} %), logs import exactly: "
          f"{summary['logs_import_exactly']} — {'HOLDS' if held else 'DOES NOT HOLD'}")
    if a.json:
        json.dump({"pairs": pairs, "summary": summary}, open(a.json, "w"), indent=1)
    sys.exit(0 if held else 1)


if __name__ == "__main__":
    main()
