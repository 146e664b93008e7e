// The watch cases every backend must pass, against real programs on the real kernel:
// cyclictest's own per-cycle numbers, rt-app's logs, stress-ng's cyclic stressor, test programs
// of known behaviour (tests/programs/watched.c). Included by tests/watch.rs (BACKEND
// "tracefs") and tests/watch_bpf.rs (BACKEND "bpf"), so each case runs on both backends and
// both give the same figures. Needs root (and, for BPF, a build with clang).

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::sync::Mutex;

/// The watched programs use SCHED_FIFO threads: one test at a time keeps them apart.
static SERIAL: Mutex<()> = Mutex::new(());

/// One watch test at a time, across this file's cases and the including file's own tests.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Root (and for BPF a build with its programs), or a loud failure: watching needs the
/// kernel's events.
pub fn need_root() {
    assert!(is_root(), "rtlab watch's tests need root (tracefs instances or BPF programs of rtlab's own); run the suite as root");
    assert!(
        BACKEND != "bpf" || rtlab::rt::bpf::built(),
        "this rtlab was built without clang, so without its BPF programs: apt-get install clang (.ci/run does) and \
         build again"
    );
}

/// The result says it was watched through BACKEND.
fn on_backend(r: &Value) {
    let backend = r["watch"]["backend"].as_str().unwrap();
    assert!(backend.starts_with(&format!("{BACKEND}:")), "watched through {backend}, not {BACKEND}");
}

/// `rtlab watch ARGS` to completion; its JSON result.
pub fn watch(dir: &Path, args: &[&str]) -> Value {
    let json = dir.join("watch.json");
    let out = rtlab()
        .args(["watch", "-q", "--backend", BACKEND, "--json"])
        .arg(&json)
        .args(args)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    watched_result(&json, out.status, &format!("rtlab watch {args:?}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// The result a watch that ended with `status` wrote to `json`, checked as every watch's is;
/// `what` tells the watch in a failure's message.
fn watched_result(json: &Path, status: std::process::ExitStatus, what: &str) -> Value {
    assert!(status.code().is_some_and(|c| c == 0 || c == 3), "{what}: {status:?}");
    let r = read_json(json);
    assert_valid_run_result(&r);
    assert_eq!(r["kind"], "watch");
    on_backend(&r);
    r
}

/// Sends `sig` (as kill(1) names it: `-STOP`) to process `pid`.
fn signal(sig: &str, pid: &str) {
    assert!(std::process::Command::new("kill").args([sig, pid]).status().unwrap().success(), "kill {sig} {pid}");
}

/// Waits until rtlab process `pid` reads events: its reader thread (`rtlab-watch`) starts once
/// the BPF programs are attached or the tracefs instances made. A fixed wait was too short for
/// a debug build's start beside the rest of the suite (a program started 800 ms after its watch
/// was renamed before the watch could see it).
pub fn reading(pid: u32) {
    let named = || {
        std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten().any(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == "rtlab-watch")
        })
    };
    wait_for(&format!("rtlab {pid}'s reader thread (rtlab-watch)"), spawn_bound(std::time::Duration::from_secs(60)), named);
}

/// The watched thread named `comm` (its entry in `threads`).
pub fn thread<'a>(r: &'a Value, comm: &str) -> &'a Value {
    r["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["watch"]["comm"] == comm)
        .unwrap_or_else(|| panic!("no watched thread named {comm}: {}", r["threads"]))
}

/// Every record of thread `index` in a samples file: (latency, response).
fn samples(path: &Path, index: u64) -> Vec<(i64, Option<i64>)> {
    let out = rtlab().args(["samples"]).arg(path).arg("--csv").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>())
        .filter(|f| f[0].parse::<u64>() == Ok(index))
        .map(|f| (f[3].parse().unwrap(), f.get(4).and_then(|v| v.parse().ok())))
        .collect()
}

fn median(mut v: Vec<i64>) -> i64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn quantile(mut v: Vec<i64>, q: f64) -> i64 {
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn every_cycle_cyclictest_prints_has_a_period_whose_wakeup_is_no_later_than_its_own() {
    need_root();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let printed = dir.path().join("cyclictest.txt");
    let smp = dir.path().join("watch.smp");
    let cpu = last_cpu().to_string();
    // -v --nsecs: every cycle's latency in ns, as cyclictest measured it (its clock read).
    let script = format!("exec cyclictest -t1 -a{cpu} -p80 -i1000 -l 3000 -v --nsecs -q > {}", printed.display());
    let r = watch(dir.path(), &["--samples", smp.to_str().unwrap(), "--", "sh", "-c", &script]);
    assert_eq!(r["end_reason"], "exited");
    assert_eq!(r["watch"]["exit_status"], 0);
    let t = r["threads"].as_array().unwrap().iter().find(|t| t["priority"] == 80).expect("the FIFO 80 thread");
    assert_eq!(t["policy"], "fifo");
    let theirs: Vec<i64> = std::fs::read_to_string(&printed)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').map(str::trim).collect();
            (f.len() == 3 && f[0] == "0").then(|| f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(theirs.len(), 3000, "cyclictest printed {} cycles", theirs.len());
    let ours = samples(&smp, t["thread"].as_u64().unwrap());
    assert_eq!(ours.len(), theirs.len(), "one period per cycle cyclictest printed");
    assert_eq!(t["watch"]["timer_releases"], 3000);
    // A period is skipped only when a wakeup came a whole period late, by cyclictest's clock.
    let late_periods: i64 = theirs.iter().map(|l| l / 1_000_000).sum();
    assert!(
        t["missed"].as_i64().unwrap() <= late_periods,
        "{} skipped, cyclictest late by {late_periods} periods",
        t["missed"]
    );
    // Per cycle: the return to user space comes before cyclictest's clock read.
    let diff: Vec<i64> = ours.iter().zip(&theirs).map(|((o, _), c)| c - o).collect();
    let before: Vec<usize> = diff.iter().enumerate().filter(|(_, d)| **d < 0).map(|(i, _)| i).collect();
    assert!(before.is_empty(), "rtlab's wakeup later than cyclictest's own at cycles {before:?}");
    eprintln!(
        "cyclictest − rtlab watch per cycle: median {} ns, p99 {} ns, max {} ns",
        median(diff.clone()),
        quantile(diff.clone(), 0.99),
        diff.iter().max().unwrap()
    );
    // The IRQ comes before the return to user space in every period it was seen: every period
    // but those whose wakeup's kernel events were not delivered (released at the expiry the
    // thread armed, measured to its return: no IRQ stage).
    let w = &t["watch"];
    let unseen = w["unseen_wakeups"].as_i64().unwrap();
    assert_eq!(w["irq"]["cycles"].as_i64().unwrap(), 3000 - unseen, "{unseen} unseen wakeups");
    assert!(w["irq"]["max_ns"].as_i64() <= t["max_ns"].as_i64());
    assert_eq!(w["timer_slack_max_ns"], 0, "a FIFO thread's timers get no slack");
}

#[test]
fn an_rt_app_task_watched_agrees_with_its_own_log() {
    need_root();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let cpu = last_cpu();
    let json = dir.path().join("ctl.json");
    // A loop's cost given (20 ns, what rt-app measures on this kind of machine), not calibrated:
    // rt-app's calibration takes seconds of the watch, a phase this test does not look at.
    let text = format!(
        r#"{{ "tasks": {{ "ctl": {{ "policy": "SCHED_FIFO", "priority": 80, "cpus": [{cpu}], "run": 300,
             "timer": {{ "ref": "ctl", "period": 1000, "mode": "absolute" }} }} }},
           "global": {{ "duration": 3, "calibration": 20, "default_policy": "SCHED_OTHER",
             "lock_pages": true, "logdir": "{}", "log_basename": "rt-app", "ftrace": false, "gnuplot": false }} }}"#,
        dir.path().display()
    );
    std::fs::write(&json, text).unwrap();
    let events_path = dir.path().join("ctl.trace");
    let r = watch(dir.path(), &["--events", events_path.to_str().unwrap(), "--", "rt-app", json.to_str().unwrap()]);
    let t = thread(&r, "ctl");
    let log = std::fs::read_to_string(dir.path().join("rt-app-ctl-0.log")).unwrap();
    let header: Vec<&str> =
        log.lines().find(|l| l.starts_with("#idx")).unwrap().trim_start_matches('#').split_whitespace().collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<i64>> = log
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect())
        .collect();
    // rt-app logs µs, one row per loop: its work, then its timer's sleep. A row's response is
    // its period's length minus its slack (from the release that began the row to the clock it
    // read before it slept); its end, less its wakeup latency, is the release that ends the
    // sleep, so a row's job was released where the row before ended. A row with no wakeup
    // latency did not sleep (its slack was gone: negative, or below 1 µs and logged as 0): the
    // job goes on with no wakeup to see, and no job of ours begins there.
    let (end, slack, wu_lat) = (col("end"), col("slack"), col("wu_lat"));
    let slept: Vec<usize> = (0..rows.len()).filter(|&k| rows[k][wu_lat] > 0).collect();
    assert!(rows.len() - slept.len() < rows.len() / 2, "rt-app slept in most of its periods");
    // Ours, from the recording of the same watch: every job the live watch counted.
    let events: Vec<rtlab::trace::event::Event> =
        std::fs::read_to_string(&events_path).unwrap().lines().filter_map(rtlab::trace::event::parse).collect();
    let tid = t["watch"]["tid"].as_i64().unwrap() as i32;
    // The kernel's system call numbers (under qemu-user, not the build's).
    let arch = rtlab::trace::syscalls::Arch::of_machine(&rtlab::rt::machine::kernel().unwrap_or_default());
    let jobs = rtlab::trace::job::replay(&events, tid, arch, None).jobs;
    assert_eq!(jobs.len() as u64, t["cycles"].as_u64().unwrap(), "the recording replays to the live watch's jobs");
    let keep = |why: String| -> ! {
        let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("watch-rt-app-{BACKEND}"));
        let _ = std::fs::create_dir_all(&kept);
        for f in [events_path.clone(), dir.path().join("rt-app-ctl-0.log"), dir.path().join("watch.json")] {
            let _ = std::fs::copy(&f, kept.join(f.file_name().unwrap()));
        }
        panic!("{why} (kept in {}): jobs {}, {} rows", kept.display(), t["watch"]["jobs"], rows.len())
    };
    let mut diffs = Vec::new();
    let mut wakeups = Vec::new();
    for &k in slept.iter().filter(|&&k| k + 1 < rows.len()) {
        let release_us = rows[k][end] - rows[k][wu_lat];
        // rt-app's end and wakeup latency are truncated µs of two clock reads, the end read
        // after the wakeup's (up to hundreds of µs after when the host stalls between): the
        // release is the one expiry (1 ms apart) in the millisecond up to that figure.
        let at = |j: &&rtlab::trace::job::Job| j.period.release_ns / 1000;
        let Some(j) = jobs.iter().find(|j| at(j) > release_us - 1000 && at(j) <= release_us + 2) else {
            keep(format!("rt-app's sleep ended by its release at {release_us} µs (row {k}) was not watched"))
        };
        let theirs = (rows[k + 1][col("c_period")] - rows[k + 1][slack]) * 1000;
        let Some(ours) = j.period.response_ns else { continue };
        // Ours ends where it armed its next sleep, after the clock rt-app read: never earlier.
        if ours + 1000 < theirs {
            keep(format!("row {}: our response {ours} ns, rt-app's {theirs} ns", k + 1))
        }
        diffs.push(ours - theirs);
        // Ours ends at the return to user space, before rt-app reads its clock.
        if let Some(w) = j.period.wakeup_ns {
            wakeups.push(rows[k][wu_lat] * 1000 + 1000 - w);
        }
    }
    let (diff, early) = (median(diffs.clone()), wakeups.iter().filter(|w| **w < 0).count());
    eprintln!("rt-app: {} jobs paired, response (ours − its own) median {diff} ns; wakeups later than its own: {early}", diffs.len());
    assert!(diffs.len() + 2 >= slept.len(), "{} of {} sleeps paired", diffs.len(), slept.len());
    assert!((0..50_000).contains(&diff), "response medians disagree beyond noise: {diff} ns");
    assert!(early <= wakeups.len() / 500, "{early} wakeups of ours later than rt-app's own of {}", wakeups.len());
}

#[test]
fn a_thread_busy_300us_per_period_responds_300us_after_it_returns_to_user() {
    need_root();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("own.txt");
    let smp = dir.path().join("w.smp");
    let r = watch(
        dir.path(),
        &[
            "--samples",
            smp.to_str().unwrap(),
            "--",
            watched().to_str().unwrap(),
            "busy",
            "300",
            "1000",
            "2000",
            "80",
            own.to_str().unwrap(),
        ],
    );
    let t = thread(&r, "worker");
    assert_eq!(t["watch"]["periodic"], true);
    assert_eq!(t["watch"]["period_ns"], 1_000_000);
    assert_eq!(t["work"]["deadline_ns"], 1_000_000, "the deadline is the period learnt");
    let theirs: Vec<(i64, i64)> = numbers(&own).iter().map(|v| (v[0], v[1])).collect();
    let ours = samples(&smp, t["thread"].as_u64().unwrap());
    assert_eq!(ours.len(), theirs.len(), "a period per period the program lived");
    // response − wakeup spans the program's own busy time: from before its clock read after
    // the wakeup to after its last one before it sleeps.
    let runs: Vec<i64> = ours.iter().filter_map(|(l, r)| Some(r.as_ref()? - l)).collect();
    assert_eq!(runs.len(), ours.len() - 1, "every period but the last (it exits instead of sleeping) has a response");
    let shorter: Vec<usize> =
        runs.iter().zip(&theirs).enumerate().filter(|(_, (o, t))| *o < &t.1).map(|(i, _)| i).collect();
    assert!(shorter.is_empty(), "response − wakeup shorter than the program's own busy time at periods {shorter:?}");
    let extra: Vec<i64> = runs.iter().zip(&theirs).map(|(o, t)| o - t.1).collect();
    eprintln!("(response − wakeup) − the program's busy time: median {} ns", median(extra.clone()));
    assert!(median(runs) >= 300_000);
    // Misses are whatever this machine made of it: counted one way.
    let w = &t["work"];
    assert_eq!(w["misses"].as_u64().unwrap(), w["late"].as_u64().unwrap() + w["skipped"].as_u64().unwrap());
}

#[test]
fn a_thread_busy_longer_than_its_period_misses_every_deadline() {
    need_root();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("own.txt");
    let r = watch(
        dir.path(),
        &[
            "--period",
            "1ms",
            "--max-misses",
            "0",
            "--",
            watched().to_str().unwrap(),
            "busy",
            "1200",
            "1000",
            "300",
            "80",
            own.to_str().unwrap(),
        ],
    );
    let t = thread(&r, "worker");
    let d = &t["work"];
    // Each job takes 1.2 ms of its 1 ms period: it is late, and the next release passes while it works.
    assert_eq!(d["late"], t["work"]["response"]["cycles"]);
    // Once in CI (bpf backend) fewer releases were counted skipped than jobs late, less one:
    // the figures are in the message, for the next one.
    assert!(d["skipped"].as_u64().unwrap() >= d["late"].as_u64().unwrap() - 1, "{d}\n{}\n{}", t["watch"], r["watch"]);
    assert_eq!(d["misses"], d["releases"], "every release misses: {d}");
    assert_eq!(r["verdict"]["status"], "fail");
}

#[test]
fn a_sched_other_sleeper_shows_the_kernels_50us_timer_slack() {
    need_root();
    let dir = tempfile::tempdir().unwrap();
    let r = watch(dir.path(), &["--", watched().to_str().unwrap(), "sleep", "300"]);
    let t = thread(&r, "sleeper");
    assert_eq!(t["policy"], "other");
    assert_eq!(t["watch"]["timer_slack_min_ns"], 50_000);
    assert_eq!(t["watch"]["timer_slack_max_ns"], 50_000);
    assert_eq!(t["timer_slack_ns"], serde_json::Value::Null, "read from /proc only while it lives");
    assert_eq!(t["watch"]["timer_releases"], 300);
}

#[test]
fn a_timerfd_and_an_epoll_timeout_release_their_threads_as_timers() {
    need_root();
    let dir = tempfile::tempdir().unwrap();
    let r = watch(dir.path(), &["--", watched().to_str().unwrap(), "timerfd", "300"]);
    let t = thread(&r, "ticker");
    // timerfd_settime arms it once, each read re-arms it (hrtimer_start in the thread's own
    // read), its callback (timerfd_tmrproc) wakes the reader.
    assert!(t["watch"]["timer_releases"].as_u64().unwrap() >= 295, "{}", t["watch"]);
    // Once in CI (an idle host) the period was not learnt (null) though the releases were
    // counted: its first 8 intervals were not steady, and they alone decided (now a timer is
    // judged again on later windows). The thread and the run (late events) are in the message.
    assert_eq!(t["watch"]["period_ns"], 1_000_000, "{}\n{}", t["watch"], r["watch"]);
    let r = watch(dir.path(), &["--", watched().to_str().unwrap(), "epoll", "300"]);
    let t = thread(&r, "poller");
    // Once in CI (tracefs, 2026-11-29) 299: one of 300 timeouts released no period (a 5 ms
    // stall at its 9th cycle); the run's late and lost events are in the message, for the next.
    assert_eq!(t["watch"]["timer_releases"], 300, "{}\n{}", t["watch"], r["watch"]);
    assert_eq!(t["watch"]["timer_slack_min_ns"], 50_000, "epoll's timeout gets the default slack");
}

#[test]
fn a_thread_woken_through_a_pipe_is_released_at_its_waking() {
    need_root();
    let dir = tempfile::tempdir().unwrap();
    let r = watch(dir.path(), &["--", watched().to_str().unwrap(), "pipe", "400"]);
    let reader = thread(&r, "reader");
    let w = &reader["watch"];
    // One waking per byte written and one when the writer closes the pipe (read returns 0) —
    // except where the reader, late, found a byte already there and did not sleep for it.
    let wakings = w["event_releases"].as_u64().unwrap();
    assert!((360..=401).contains(&wakings), "{w}");
    assert_eq!(w["periods"], wakings);
    assert_eq!(w["timer_releases"], 0);
    assert_eq!(w["periodic"], false);
    assert_eq!(w["irq"], Value::Null, "no timer released it");
    assert!(reader["min_ns"].as_i64().unwrap() >= 0);
    let writer = thread(&r, "writer");
    assert_eq!(writer["watch"]["timer_releases"], 400);
}

#[test]
fn threads_that_come_and_go_are_all_watched_and_an_exiting_process_ends_the_run() {
    need_root();
    let dir = tempfile::tempdir().unwrap();
    // The threads come after a second, but a watch can take longer to attach (emulated beside
    // stress-ng it saw none of the six): the program is held stopped until the watch reads.
    let mut child = std::process::Command::new(watched()).args(["churn", "6", "200", "1000"]).spawn().unwrap();
    let pid = child.id().to_string();
    signal("-STOP", &pid);
    let json = dir.path().join("watch.json");
    let mut w = std::process::Command::new(rtlab_path())
        .args(["watch", "-q", "--backend", BACKEND, "-p", &pid, "-D", "60", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    reading(w.id());
    signal("-CONT", &pid);
    let _ = child.wait();
    let r = watched_result(&json, w.wait().unwrap(), &format!("rtlab watch -p {pid}"));
    assert_eq!(r["end_reason"], "exited", "the run ends when the process is gone, long before -D");
    let churn: Vec<&Value> =
        r["threads"].as_array().unwrap().iter().filter(|t| t["watch"]["comm"] == "churn").collect();
    assert_eq!(churn.len(), 6, "every thread the process created was watched");
    for t in churn {
        assert_eq!(t["watch"]["exited"], true);
        assert_eq!(t["watch"]["timer_releases"], 200, "{}", t["watch"]);
    }
    assert_eq!(r["watch"]["threads"], 7);
}

#[test]
fn threads_named_later_are_found_by_their_name() {
    need_root();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("watch.json");
    let mut w = std::process::Command::new(rtlab_path())
        .args(["watch", "-q", "--backend", BACKEND, "--comm", "sleeper", "-D", "5", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    reading(w.id());
    let st = std::process::Command::new(watched()).args(["sleep", "500"]).status().unwrap();
    assert!(st.success());
    assert!(w.wait().unwrap().success());
    let r = read_json(&json);
    on_backend(&r);
    let t = thread(&r, "sleeper");
    // Found by its rename a moment after it started: most of its periods are there.
    assert!(t["watch"]["timer_releases"].as_u64().unwrap() >= 400, "{}", t["watch"]);
}

#[test]
fn one_thread_watched_by_tid_goes_through_the_verdict_plot_report_and_compare() {
    need_root();
    let dir = tempfile::tempdir().unwrap();
    let mut program = std::process::Command::new(watched()).args(["sleep", "5000"]).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    // The program's thread named "sleeper" (not its main thread).
    let tid = std::fs::read_dir(format!("/proc/{}/task", program.id()))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|t| std::fs::read_to_string(format!("/proc/{t}/comm")).is_ok_and(|c| c.trim() == "sleeper"))
        .expect("the sleeper thread");
    let json = dir.path().join("watch.json");
    let out = rtlab()
        .args(["watch", "-q", "--backend", BACKEND, "--tid", &tid, "-D", "2", "--max-latency", "1ns", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let _ = program.kill();
    let _ = program.wait();
    assert_eq!(out.status.code(), Some(3), "a 1 ns limit fails: {}", String::from_utf8_lossy(&out.stderr));
    let r = read_json(&json);
    on_backend(&r);
    assert_eq!(r["verdict"]["status"], "fail");
    assert_eq!(r["threads"].as_array().unwrap().len(), 1, "only the thread asked for");
    assert_eq!(r["threads"][0]["watch"]["tid"].as_i64(), tid.parse().ok());
    let md = dir.path().join("r.md");
    let rep = rtlab().arg("report").arg(&json).arg("-o").arg(&md).output().unwrap();
    assert!(rep.status.success(), "{}", String::from_utf8_lossy(&rep.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("### Watched threads") && text.contains(&format!("sleeper:{tid}")), "{text}");
    assert!(text.contains("IRQ, thread and wakeup latency"), "one IRQ/Thr/Usr picture per thread: {text}");
    // Its kind, with the evidence: a relative nanosleep of 1 ms.
    assert!(text.contains("timer-periodic") && text.contains("on one relative timer (hrtimer_wakeup)"), "{text}");
    let svg = dir.path().join("p.svg");
    let plot = rtlab().args(["plot", "--of", "stages", "-o"]).arg(&svg).arg(&json).output().unwrap();
    assert!(plot.status.success(), "{}", String::from_utf8_lossy(&plot.stderr));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let cmp = rtlab().arg("compare").arg(&json).arg(&json).output().unwrap();
    assert!(cmp.status.success(), "{}", String::from_utf8_lossy(&cmp.stderr));
    assert!(String::from_utf8_lossy(&cmp.stdout).contains("response time"), "compare shows the response too");
}

/// A program's own measurement: its numbers, per line.
fn numbers(path: &Path) -> Vec<Vec<i64>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect())
        .collect()
}

/// Every job of thread `index` in a samples file: (release since the start, response).
fn jobs_in(path: &Path, index: u64) -> Vec<(i64, Option<i64>)> {
    let out = rtlab().args(["samples"]).arg(path).arg("--csv").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>())
        .filter(|f| f[0].parse::<u64>() == Ok(index))
        .map(|f| (f[2].parse().unwrap(), f.get(4).and_then(|v| v.parse().ok())))
        .collect()
}

/// When thread `tid` began to sleep, by the recorded events (`--events`): each arming of its
/// sleep timer and each switch away from it in a sleeping state, in time order.
fn sleeps_of(events: &Path, tid: i32) -> Vec<i64> {
    use rtlab::trace::event::{parse, Kind};
    let text = std::fs::read_to_string(events).unwrap();
    let mut at: Vec<i64> = text
        .lines()
        .filter_map(parse)
        .filter(|e| match &e.kind {
            Kind::HrtimerStart { function, .. } => e.pid == tid && function == rtlab::trace::watch::ON_STACK,
            Kind::Switch { prev_pid, prev_state, .. } => *prev_pid == tid && !prev_state.starts_with('R'),
            _ => false,
        })
        .map(|e| e.ts_ns)
        .collect();
    at.sort_unstable();
    at
}

/// Each iteration of event loop `t` (a watched thread) that the program logged (`theirs`: its
/// lines of `watched evloop`), as the kernel saw it in the recorded events (`--events`): from
/// the wait's return before the program's first clock read to the thread's first wait after
/// its last (a switch away asleep, or a return that found input). (Start, length), ns. The
/// host may take the CPU between a clock read and the system call beside it (seen: 193 µs in a
/// CI run): the program's figure cannot show that time, the kernel's events and watch do.
fn iterations(events: &Path, t: &Value, theirs: &[Vec<i64>]) -> Vec<(i64, i64)> {
    use rtlab::trace::event::{parse, Kind};
    let tid = t["watch"]["tid"].as_i64().unwrap() as i32;
    // The traced kernel's numbers (an aarch64 build under qemu-user reads an x86_64 kernel).
    let arch = rtlab::trace::syscalls::Arch::of_machine(&rtlab::rt::machine::kernel().unwrap_or_default());
    let text = std::fs::read_to_string(events).unwrap();
    let (mut returns, mut ends) = (Vec::new(), Vec::new());
    for e in text.lines().filter_map(parse) {
        match &e.kind {
            Kind::SysExit { nr } if e.pid == tid && arch.waits_for_input(*nr) => {
                returns.push(e.ts_ns);
                ends.push(e.ts_ns);
            }
            Kind::Switch { prev_pid, prev_state, .. } if *prev_pid == tid && !prev_state.starts_with('R') => {
                ends.push(e.ts_ns)
            }
            _ => {}
        }
    }
    returns.sort_unstable();
    ends.sort_unstable();
    let kernel: Vec<(i64, i64)> = theirs
        .iter()
        .map(|v| {
            let start = returns.iter().rev().find(|&&ts| ts <= v[1]).expect("a wait's return before each iteration");
            let end = ends.iter().find(|&&ts| ts >= v[2]).expect("a wait after each iteration");
            (*start, end - start)
        })
        .collect();
    for (v, k) in theirs.iter().zip(&kernel) {
        assert!(k.0 <= v[1] && k.0 + k.1 >= v[2] && k.1 >= v[0], "the kernel's iteration {k:?} against the program's {v:?}");
    }
    kernel
}

/// Watches `watched MODE ARGS… OWN` with `--deadline 200us` and checks its thread `ctl` against
/// the program's own (release, response) per job: a job per job it counted, at its expiries,
/// the period learnt, every miss it counted a miss (a miss only we count is one it measured
/// within 10 µs of the deadline: ours ends where it armed its next release, after its last
/// clock read); the median of (ours − its own). The result, and `ctl`.
fn watch_ctl(dir: &Path, mode: &str, args: &[&str]) -> (Value, Value, i64) {
    let own_path = dir.join(format!("{mode}.own"));
    let smp = dir.join(format!("{mode}.smp"));
    let w = watched().to_str().unwrap().to_string();
    let events = dir.join(format!("{mode}.trace"));
    let mut argv = vec![
        "--deadline",
        "200us",
        "--samples",
        smp.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
        "--",
        &w,
        mode,
    ];
    argv.extend_from_slice(args);
    argv.push(own_path.to_str().unwrap());
    let r = watch(dir, &argv);
    let t = thread(&r, "ctl").clone();
    let w = &t["watch"];
    let shape = format!("{} ({}), period {}", w["kind"], w["evidence"], w["period_ns"]);
    assert_eq!((w["kind"].as_str(), w["periodic"].as_bool()), (Some("timer-periodic"), Some(true)), "{shape}");
    assert_eq!(w["period_ns"], 1_000_000, "{shape}");
    let theirs: Vec<(i64, i64)> = numbers(&own_path).iter().map(|v| (v[0], v[1])).collect();
    let ours = jobs_in(&smp, t["thread"].as_u64().unwrap());
    // Its jobs, and the release of its last wait (it exits instead of waiting again); a job
    // that overran its period makes both skip the release it passed.
    let (o0, t0) = (ours[0].0, theirs[0].0);
    let by_release: std::collections::HashMap<i64, Option<i64>> = ours.iter().map(|(at, r)| (at - o0, *r)).collect();
    let mut diffs = Vec::new();
    // Jobs we count late that it measured on time, beyond 10 µs of the deadline: ours end where
    // it slept again, its own at its last clock read, and this VM's host can take the CPU between
    // the two (seen: 102 µs; 13 jobs of 2 000 on a busy host). Each is shown and checked against
    // the recording: no count of them is a fault, an end not where the kernel saw it is.
    let mut preempted = Vec::new();
    // A disagreement keeps the recording for a look (target/tmp/watch-MODE).
    let keep = |why: String| -> ! {
        let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("watch-{mode}"));
        let _ = std::fs::create_dir_all(&kept);
        for f in [&events, &own_path, &smp] {
            let _ = std::fs::copy(f, kept.join(f.file_name().unwrap()));
        }
        panic!("{why} (ctl is tid {}; the recording is kept in {}): jobs {}", w["tid"], kept.display(), w["jobs"])
    };
    if ours.len().abs_diff(theirs.len()) > 2 {
        keep(format!("{} jobs watched, {} counted", ours.len(), theirs.len()));
    }
    for (i, t) in theirs.iter().enumerate() {
        let Some(o) = by_release.get(&(t.0 - t0)) else {
            keep(format!("its job {i} (released {} ns in) not watched", t.0 - t0))
        };
        let Some(o) = *o else { keep(format!("job {i} has no response")) };
        diffs.push(o - t.1);
        if o <= 200_000 && t.1 > 200_000 {
            keep(format!("job {i}: it missed ({} ns) and we did not ({o} ns)", t.1));
        }
        if o > 200_000 && t.1 <= 190_000 {
            preempted.push((i, o, t.1));
        }
    }
    if !preempted.is_empty() {
        eprintln!("{mode}: jobs late only by our end, (job, ours, its own): {preempted:?}");
    }
    // Each such job must end where the kernel first saw the thread go to sleep after its own
    // end: what lies between is time the kernel never saw (the hypervisor's) or interrupts.
    let slept = sleeps_of(&events, w["tid"].as_i64().unwrap() as i32);
    for &(i, o, its) in &preempted {
        let release = theirs[i].0;
        let first = slept.iter().find(|&&ts| ts >= release + its).map(|ts| ts - release);
        if first != Some(o) {
            keep(format!("job {i} ended at {o} ns, its first sleep after its own end ({its} ns) is at {first:?}"));
        }
    }
    let counted = theirs.iter().filter(|t| t.1 > 200_000).count() as u64;
    let late = t["work"]["late"].as_u64().unwrap();
    eprintln!("{mode}: {counted} misses counted by the program, {late} late jobs watched");
    let near = theirs.iter().filter(|t| (190_001..=200_000).contains(&t.1)).count() as u64;
    let near = near + preempted.len() as u64;
    assert!(late >= counted && late <= counted + near, "{late} late jobs watched, {counted} counted, {near} near");
    (r, t, median(diffs))
}

#[test]
fn a_mid_period_sleep_is_part_of_the_job_and_every_job_the_program_misses_is_a_miss() {
    need_root();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (_, t, diff) = watch_ctl(dir.path(), "midsleep", &["2000", "100"]);
    eprintln!("(ours − its own) response: median {diff} ns");
    assert!((0..=10_000).contains(&diff), "median (ours − its own) response {diff} ns");
    assert_eq!(t["work"]["late"], 2000, "2 × 100 µs around a 50 µs sleep always passes 200 µs");
    let on = &t["watch"]["blocked_on"][0];
    assert_eq!(on["on"], "clock_nanosleep");
    // One pause per job: one wakeup inside each, and a block unless its timer fired before the
    // kernel had put it to sleep (on this VM, up to a few % of 50 µs pauses: the hypervisor
    // takes the CPU there).
    assert_eq!(t["watch"]["jobs"]["inner_wakeups"], 2000, "{}", t["watch"]["jobs"]);
    assert!((1..=2000).contains(&on["jobs"].as_u64().unwrap()), "{on}");
}

#[test]
fn a_contended_mutex_is_a_futex_block_inside_the_job_and_its_misses_are_the_programs() {
    need_root();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (_, t, diff) = watch_ctl(dir.path(), "mutex", &["2000"]);
    assert!((0..=10_000).contains(&diff), "median (ours − its own) response {diff} ns");
    let on = &t["watch"]["blocked_on"];
    assert_eq!(on[0]["on"], "futex", "{on}");
    // The program says which jobs found the mutex held (its third column): about one in ten,
    // the holder taking it before their release; fewer when the holder wakes late. Every one
    // of them blocks in the kernel, unless the holder lets go between the program's try and
    // its wait (a window of nanoseconds).
    let waited = numbers(&dir.path().join("mutex.own")).iter().filter(|v| v[2] == 1).count() as u64;
    let blocked = on[0]["jobs"].as_u64().unwrap();
    eprintln!("mutex: {waited} jobs found it held, {blocked} blocked on the futex");
    assert!(waited > 0, "the holder never held the mutex at a job's turn: {on}");
    assert!(
        blocked <= waited && blocked + 2 + waited / 50 >= waited,
        "{blocked} jobs blocked on the futex, {waited} found it held"
    );
}

#[test]
fn a_blocking_read_mid_period_and_a_timerfd_loop_keep_their_jobs_whole() {
    need_root();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (_, t, _) = watch_ctl(dir.path(), "pipemid", &["1000"]);
    assert_eq!(t["watch"]["blocked_on"][0]["on"], "read", "{}", t["watch"]["blocked_on"]);
    let (_, t, diff) = watch_ctl(dir.path(), "tfdmid", &["1000"]);
    let evidence = t["watch"]["evidence"].as_str().unwrap();
    assert!(evidence.contains("read") && evidence.contains("timerfd_tmrproc"), "{evidence}");
    assert!((0..=10_000).contains(&diff), "median (ours − its own) response {diff} ns");
}

#[test]
fn an_epoll_loop_fed_through_a_pipe_has_its_iterations_and_each_stall_as_long_as_the_program_measured() {
    need_root();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let own_path = dir.path().join("evloop.own");
    let w = watched().to_str().unwrap().to_string();
    let events = dir.path().join("evloop.trace");
    let r = watch(
        dir.path(),
        &["--stall", "2ms", "--events", events.to_str().unwrap(), "--", &w, "evloop", "1000", own_path.to_str().unwrap()],
    );
    let t = thread(&r, "loop");
    assert_eq!(t["watch"]["kind"], "event-loop", "{}", t["watch"]["evidence"]);
    // No timer, no schedule: no learnt period, deadline or skipped release.
    assert_eq!((t["watch"]["period_ns"].as_i64(), t["work"]["deadline_ns"].as_i64()), (None, None));
    assert_eq!(t["work"]["skipped"], 0);
    assert!(t["watch"]["evidence"].as_str().unwrap().contains("epoll_wait"));
    let l = &t["watch"]["event_loop"];
    let theirs = numbers(&own_path);
    // Its iterations, each ended by its next wait; the stretch after the last wait's timeout
    // (writing its file, exiting) is one more when the events show it ending before the exit,
    // which depends on whether that writing blocked: seen both ways on this VM.
    let summary = format!("{} iterations, {} stalls", l["iterations"], l["stalls"]);
    let n = theirs.len() as u64;
    assert!((n..=n + 1).contains(&l["iterations"].as_u64().unwrap()), "{summary}, the program's {n}");
    // 1 % of 1000 iterations work 5 ms, and on this VM any can be held off the CPU past 2 ms.
    let kernel = iterations(&events, t, &theirs);
    // Ours, in time order, are the kernel's iterations over 2 ms, each exactly as long.
    let mut expected: Vec<(i64, i64)> = kernel.iter().copied().filter(|k| k.1 > 2_000_000).collect();
    assert!(expected.len() >= 10, "the kernel saw {} stalls", expected.len());
    assert_eq!(l["stalls"].as_u64(), Some(expected.len() as u64), "{summary}: the kernel's at {expected:?}");
    // The longest 100 are listed (a host that holds it off the CPU often makes more).
    let mut ours = l["worst_stalls"].as_array().unwrap().clone();
    expected.sort_by_key(|k| std::cmp::Reverse(k.1));
    expected.truncate(100);
    expected.sort_unstable();
    ours.sort_by_key(|s| s["at_ns"].as_i64());
    let busy: Vec<i64> = ours.iter().map(|o| o["busy_ns"].as_i64().unwrap()).collect();
    assert_eq!(busy, expected.iter().map(|k| k.1).collect::<Vec<_>>(), "{summary}: the kernel's at {expected:?}");
    for o in &ours {
        let parts = ["running_ns", "waiting_ns", "blocked_ns"].iter().map(|k| o[k].as_i64().unwrap()).sum::<i64>();
        assert_eq!(parts, o["busy_ns"].as_i64().unwrap() + o["wakeup_ns"].as_i64().unwrap_or(0), "{o}");
        // Woken by the feeder's write, or (held off the CPU, its bytes piling up) finding one.
        assert!(o["waker"].as_str().is_none_or(|w| w.starts_with("feeder:")), "{o}");
        assert_eq!(o["waker"].is_null(), o["wakeup_ns"].is_null(), "{o}");
    }
    let text = rtlab().args(["show"]).arg(dir.path().join("watch.json")).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("event-loop") && text.contains("stall of loop:"), "{text}");
}

#[test]
fn an_event_loop_that_falls_hundreds_of_iterations_behind_has_each_one_counted() {
    need_root();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let own_path = dir.path().join("evloop.own");
    let w = watched().to_str().unwrap().to_string();
    // Its 50th iteration works 400 ms while a byte arrives every 1 ms: the ~400 iterations
    // after it each find their byte waiting, and never block (more than a period's list of
    // such returns holds).
    let events = dir.path().join("evloop.trace");
    let r = watch(
        dir.path(),
        &["--stall", "2ms", "--events", events.to_str().unwrap(), "--", &w, "evloop", "1000", own_path.to_str().unwrap(), "400"],
    );
    let t = thread(&r, "loop");
    assert_eq!(t["watch"]["kind"], "event-loop", "{}", t["watch"]["evidence"]);
    let l = &t["watch"]["event_loop"];
    let theirs = numbers(&own_path);
    let n = theirs.len() as u64;
    let summary = format!("{} iterations ({} found input waiting)", l["iterations"], l["found_waiting"]);
    assert!((n..=n + 1).contains(&l["iterations"].as_u64().unwrap()), "{summary}, the program's {n}");
    assert!(l["found_waiting"].as_u64().unwrap() >= 300, "{summary}");
    // The longest, as the kernel saw it (the program's clock misses what the host takes
    // between its clock reads and its system calls).
    let longest = iterations(&events, t, &theirs).iter().map(|k| k.1).max().unwrap();
    assert_eq!(l["busy_max_ns"].as_i64(), Some(longest), "{summary}: {l}");
}

#[test]
fn stress_ngs_cyclic_stressor_watched_agrees_with_its_own_median() {
    need_root();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let smp = dir.path().join("w.smp");
    let log = dir.path().join("stress-ng.txt");
    let script = format!(
        "exec stress-ng --cyclic 1 --cyclic-method clock_ns --cyclic-policy fifo --cyclic-prio 80 \
         --cyclic-sleep 1000000 -t 3 -v > {} 2>&1",
        log.display()
    );
    let r = watch(dir.path(), &["--samples", smp.to_str().unwrap(), "--", "sh", "-c", &script]);
    let text = std::fs::read_to_string(&log).unwrap();
    let field = |key: &str| -> i64 {
        let line = text.lines().find(|l| l.contains(key)).unwrap_or_else(|| panic!("no {key:?} in {text}"));
        let after = &line[line.find(key).unwrap() + key.len()..];
        after.split_whitespace().next().unwrap().trim_end_matches(',').parse().unwrap()
    };
    let (taken, theirs) = (field("ns delay,"), field("50.00%:"));
    let t = r["threads"].as_array().unwrap().iter().find(|t| t["priority"] == 80 && t["cycles"].as_u64() > Some(100));
    let t = t.expect("the FIFO 80 cyclic thread");
    assert_eq!(t["watch"]["kind"], "timer-periodic", "{}", t["watch"]["evidence"]);
    assert!(t["watch"]["evidence"].as_str().unwrap().contains("relative"));
    let ours = samples(&smp, t["thread"].as_u64().unwrap());
    assert!(ours.len() as i64 >= taken, "{} periods watched, {taken} samples it took", ours.len());
    let ours = median(ours.iter().map(|s| s.0).collect());
    eprintln!("stress-ng cyclic median {theirs} ns, watched {ours} ns");
    // It reads its clock before it sleeps (its release: that read + the sleep) and after it
    // returns: a little later on both ends than the timer's expiry and the return to user.
    assert!((0..=5_000).contains(&(theirs - ours)), "stress-ng {theirs} ns, watched {ours} ns");
}

#[test]
fn a_fifteen_byte_thread_name_that_is_not_utf8_is_watched_by_its_name() {
    use std::os::unix::ffi::OsStrExt;
    need_root();
    // Beside the other tests (its program sleeps under SCHED_OTHER, and only its name is checked).
    let dir = tempfile::tempdir().unwrap();
    // A program that names itself with 15 bytes, three of them not UTF-8, and wakes every 5 ms.
    let script = "import ctypes, time\nctypes.CDLL(None).prctl(15, b'\\xff\\xfe\\xfdabcdefghijkl', 0, 0, 0)\n\
                  end = time.time() + 8\nwhile time.time() < end: time.sleep(0.005)\n";
    let mut child = std::process::Command::new("python3").arg("-c").arg(script).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let name = std::ffi::OsStr::from_bytes(b"\xff\xfe\xfdabcdefghijkl");
    let json = dir.path().join("w.json");
    let out = rtlab().args(["watch", "-q", "--backend", BACKEND, "-D", "2s", "--json"]).arg(&json).arg("--comm").arg(name).output().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let r = read_json(&json);
    on_backend(&r);
    assert_eq!(r["threads"].as_array().unwrap().len(), 1, "the thread of that name: {err}");
}
