//! rt-app compatibility against Debian's real `rt-app` (1.0): its JSON files run unchanged by
//! `rtlab run --rt-app`, and its per-task logs read by `rtlab import` with its own numbers.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The periodic fixture for `cpu`, `duration` s, logs into `logdir`.
fn periodic_json(dir: &Path, cpu: usize, duration: u32) -> PathBuf {
    let text = include_str!("fixtures/rt-app/periodic.json")
        .replace("__CPU__", &cpu.to_string())
        .replace("__DURATION__", &duration.to_string())
        .replace("__LOGDIR__", &dir.display().to_string());
    let p = dir.join("periodic.json");
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs Debian's rt-app on `json`; the suite needs it (`.ci/run` installs the rt-app package).
fn rt_app(json: &Path) {
    let out = std::process::Command::new("rt-app").arg(json).output().unwrap_or_else(|e| {
        panic!("rt-app is not installed ({e}): the rt-app tests run the real one; apt-get install rt-app")
    });
    assert!(out.status.success(), "rt-app failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// A log's columns by name, one map per line.
fn log_rows(path: &Path) -> Vec<std::collections::HashMap<String, i64>> {
    let text = std::fs::read_to_string(path).unwrap();
    let header: Vec<String> = text
        .lines()
        .find(|l| l.starts_with("#idx"))
        .unwrap()
        .trim_start_matches('#')
        .split_whitespace()
        .map(String::from)
        .collect();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| header.iter().cloned().zip(l.split_whitespace().map(|v| v.parse::<i64>().unwrap())).collect())
        .collect()
}

#[test]
fn importing_rt_apps_logs_reproduces_its_own_numbers_exactly() {
    if !is_root() {
        eprintln!("NOT CHECKED (rt-app's SCHED_FIFO task needs root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // rt-app's calibration of a CPU (seconds idle, up to 20 s beside the rest of the suite) is
    // given instead (20 ns a loop, what rt-app measures on this kind of machine): what is
    // imported is what rt-app measured and logged, whatever a loop costs.
    let json = periodic_json(dir.path(), last_cpu(), 2);
    let text = std::fs::read_to_string(&json).unwrap();
    let calibration = format!("\"calibration\" : \"CPU{}\"", last_cpu());
    assert!(text.contains(&calibration), "{text}");
    std::fs::write(&json, text.replace(&calibration, "\"calibration\" : 20")).unwrap();
    rt_app(&json);
    for (log, name) in [("rt-app-ctl-0.log", "ctl"), ("rt-app-logger-1.log", "logger")] {
        let path = dir.path().join(log);
        let rows = log_rows(&path);
        assert!(rows.len() > 10, "{log}: {} lines", rows.len());
        let out = dir.path().join(format!("{name}.json"));
        rtlab().arg("import").arg(&path).arg("-o").arg(&out).assert().success();
        let r = read_json(&out);
        assert_valid_run_result(&r);
        let t = &r["threads"][0];
        let w = &t["work"];
        // Smallest and largest of a column, in ns.
        let span = |k: &str| {
            let v = rows.iter().map(|r| r[k] * 1000);
            (Some(v.clone().min().unwrap()), Some(v.max().unwrap()))
        };
        assert_eq!(t["name"].as_str(), Some(name));
        // A wakeup for each line that slept (a positive slack); an overrun line's wu_lat 0
        // is no wakeup.
        let slept: Vec<i64> =
            rows.iter().filter(|r| r["slack"] > 0 || r["wu_lat"] > 0).map(|r| r["wu_lat"] * 1000).collect();
        assert_eq!(t["cycles"].as_u64(), Some(slept.len() as u64), "{log}: count");
        assert_eq!(
            (t["min_ns"].as_i64(), t["max_ns"].as_i64()),
            (slept.iter().min().copied(), slept.iter().max().copied()),
            "{log}: wu_lat"
        );
        assert_eq!(w["releases"].as_u64(), Some(rows.len() as u64), "{log}: one job per line");
        assert_eq!((w["run"]["min_ns"].as_i64(), w["run"]["max_ns"].as_i64()), span("run"), "{log}: run");
        assert_eq!((w["slack_min_ns"].as_i64(), w["slack_max_ns"].as_i64()), span("slack"), "{log}: slack");
        let negative = rows.iter().filter(|r| r["slack"] < 0).count() as u64;
        assert_eq!(w["misses"].as_u64(), Some(negative), "{log}: a miss is a negative slack");
        assert_eq!(w["deadline_ns"].as_i64(), Some(rows[0]["c_period"] * 1000));
    }
    let ctl = read_json(&dir.path().join("ctl.json"));
    assert_eq!(
        (ctl["threads"][0]["policy"].as_str(), ctl["threads"][0]["priority"].as_u64()),
        (Some("fifo"), Some(80))
    );
}

#[test]
fn rtlab_runs_rt_apps_json_file_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = last_cpu();
    let json = periodic_json(dir.path(), cpu, 1);
    let result = dir.path().join("r.json");
    let out = rtlab().args(["run", "--rt-app"]).arg(&json).args(["-q", "--json"]).arg(&result).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("global.ftrace"), "\"ftrace\": false is honoured (no markers): {stderr}");
    let r: Value = read_json(&result);
    assert_valid_run_result(&r);
    let t = &r["threads"];
    assert_eq!((t[0]["name"].as_str(), t[1]["name"].as_str()), (Some("ctl"), Some("logger")));
    assert_eq!((t[0]["interval_ns"].as_i64(), t[1]["interval_ns"].as_i64()), (Some(1_000_000), Some(10_000_000)));
    assert_eq!((t[0]["work"]["kind"].as_str(), t[1]["work"]["kind"].as_str()), (Some("fixed"), Some("time")));
    assert_eq!((t[0]["work"]["work_ns"].as_i64(), t[1]["work"]["work_ns"].as_i64()), (Some(300_000), Some(1_000_000)));
    assert_eq!((t[0]["cpu"].as_u64(), t[1]["cpu"].as_u64()), (Some(cpu as u64), Some(cpu as u64)));
    // global.duration 1 s ends the run, and the periods fit the run's length (the stop is
    // noticed a little later under emulation: the periods counted are those of the run's own
    // length, never more).
    assert_eq!(r["end_reason"].as_str(), Some("duration"));
    let length_s = r["duration_s"].as_f64().unwrap();
    assert!(length_s >= 1.0, "a run of global.duration 1 s lasted {length_s} s");
    let ctl_cycles = t[0]["cycles"].as_u64().unwrap() + t[0]["missed"].as_u64().unwrap();
    let fit = (length_s * 1000.0) as u64 + 1;
    assert!(ctl_cycles <= fit && ctl_cycles >= 900, "{ctl_cycles} periods of 1 ms in a run of {length_s} s");
    assert_eq!(r["config"]["mlockall"], true, "lock_pages is honoured");
    if is_root() {
        assert_eq!((t[0]["policy"].as_str(), t[0]["priority"].as_u64()), (Some("fifo"), Some(80)));
        assert_eq!(t[1]["policy"].as_str(), Some("other"));
    }
}

/// Runs `rtlab run --rt-app json` with `args` in `dir` (rt-app's logs go to the file's
/// `logdir`, often `./`); the exit status, stderr and the result (when written).
fn run_in(dir: &Path, json: &Path, args: &[&str]) -> (Option<i32>, String, Option<Value>) {
    let result = dir.join("r.json");
    let _ = std::fs::remove_file(&result);
    let out = rtlab()
        .current_dir(dir)
        .args(["run", "--rt-app"])
        .arg(json)
        .args(args)
        .args(["-q", "--json"])
        .arg(&result)
        .output()
        .unwrap();
    let r = result.exists().then(|| read_json(&result));
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), r)
}

/// The threads a file names, instances numbered as rtlab numbers them (read here with
/// serde_json, apart from rtlab's reader).
fn threads_named(json: &Path) -> Vec<String> {
    let mut text = std::fs::read_to_string(json).unwrap();
    json_strip_comments::strip(&mut text).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut names = Vec::new();
    for (name, t) in v["tasks"].as_object().unwrap() {
        let n = t["instance"].as_u64().unwrap_or(1);
        names.extend((0..n).map(|i| if n == 1 { name.clone() } else { format!("{name}-{i}") }));
    }
    names
}

/// Debian's rt-app examples: `examples/*.json`, `examples/tutorial/*.json`, `taskset.json` and
/// the cpufreq governor examples (`examples/merge/` holds fragments, not use cases).
fn debian_examples() -> Vec<PathBuf> {
    let doc = Path::new("/usr/share/doc/rt-app");
    assert!(doc.is_dir(), "rt-app's examples are not installed: the rt-app tests need them; apt-get install rt-app");
    let mut files = vec![doc.join("taskset.json")];
    for d in ["examples", "examples/tutorial", "examples/cpufreq_governor_efficiency"] {
        for e in std::fs::read_dir(doc.join(d)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "json") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// The tests whose runs write rt-app's trace markers (Debian's tutorial examples ask for them):
/// one at a time, so that the marker test reads its own.
static MARKERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn every_example_rt_app_runs_here_runs_under_rtlab_and_the_ones_it_refuses_are_refused() {
    let _markers = MARKERS.lock().unwrap_or_else(|e| e.into_inner());
    let files = debian_examples();
    assert_eq!(files.len(), 19, "{files:?}");
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Whether file `f` ran (false: refused, as rt-app refuses it).
    let check = |f: &PathBuf| -> bool {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let dir = tempfile::tempdir().unwrap();
        // One second: every task has started well within it, and the run ends at -D.
        let (code, stderr, r) = run_in(dir.path(), f, &["-D", "1s"]);
        // rt-app's own parser refuses the video files (a bare "suspend" key), and
        // example8.json pins a thread to CPU 2.
        let refused_by_rt_app = name.starts_with("video-") || (name == "example8.json" && online < 3);
        if refused_by_rt_app {
            assert_eq!(code, Some(2), "{name}: {stderr}");
            let errors: Vec<&str> = stderr.lines().collect();
            assert_eq!(errors.len(), 1, "{name}: one line of reason: {stderr}");
            assert!(errors[0].contains("suspend") || errors[0].contains("CPU 2"), "{name}: {stderr}");
            return false;
        }
        assert_eq!(code, Some(0), "{name}: {stderr}");
        let r = r.unwrap_or_else(|| panic!("{name}: no result"));
        assert_valid_run_result(&r);
        let mut got: Vec<&str> = r["threads"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        got.sort();
        let mut named = threads_named(f);
        named.sort();
        assert_eq!(got, named, "{name}: every task it names, instances numbered");
        assert_eq!(r["rt_app"]["threads"].as_array().map(Vec::len), Some(got.len()), "{name}");
        true
    };
    // Two files at a time (each waits out its second): the SCHED_FIFO ones (cpufreq_governor_
    // efficiency's) in one lane, never beside each other. One at a time emulated, where each
    // run is the emulator's CPU.
    let (fifo, other): (Vec<&PathBuf>, Vec<&PathBuf>) =
        files.iter().partition(|f| f.parent().is_some_and(|d| d.ends_with("cpufreq_governor_efficiency")));
    let emulated = slow(std::time::Duration::from_secs(1)) > std::time::Duration::from_secs(1);
    let mut lanes = [fifo, Vec::new()];
    for f in other {
        let shorter = usize::from(!emulated && lanes[1].len() < lanes[0].len());
        lanes[shorter].push(f);
    }
    let ran: usize = std::thread::scope(|s| {
        let runs: Vec<_> = lanes.iter().map(|lane| s.spawn(|| lane.iter().filter(|f| check(f)).count())).collect();
        runs.into_iter().map(|r| r.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).sum()
    });
    assert_eq!(ran, if online < 3 { 16 } else { 17 });
}

/// A task that runs 1 ms every 10 ms, its phase loop bounded by its thread's.
const BOUNDED: &str = r#"{ "tasks": { "t": { "loop": 4, "phases": {
    "p": { "run": 1000, "timer": { "ref": "t", "period": 10000 } } } } } }"#;

#[test]
fn a_phase_without_loop_runs_once_per_loop_of_its_thread_and_the_run_ends_with_the_threads() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bounded.json");
    std::fs::write(&json, BOUNDED).unwrap();
    let (code, stderr, r) = run_in(dir.path(), &json, &["--rt-app-logs", "."]);
    assert_eq!(code, Some(0), "{stderr}");
    let r = r.unwrap();
    assert_eq!(r["rt_app"]["threads"][0]["phase_loops"].as_u64(), Some(4));
    assert_eq!(r["threads"][0]["work"]["releases"].as_u64(), Some(4), "a job per timer event");
    // rt-app's log: its two header lines, then one line per phase loop.
    let log = std::fs::read_to_string(dir.path().join("rt-app-t-0.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines[0], "# Policy : SCHED_OTHER priority : 0");
    assert_eq!(
        lines[1],
        "#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat"
    );
    assert_eq!(lines.len(), 6, "{log}");
    for l in &lines[2..] {
        let v: Vec<i64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
        assert_eq!(v.len(), 11, "{l}");
        assert_eq!((v[0], v[8], v[9]), (0, 1000, 10000), "idx, c_duration, c_period: {l}");
        // rt-app truncates start, end and their difference to µs each.
        assert!((v[5] - v[4] - v[3]).abs() <= 1, "period = end − start: {l}");
    }
}

#[test]
fn a_sleep_task_is_not_refused_and_misses_nothing_and_its_delay_holds() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sleep.json");
    // 900 µs of work and a 100 µs sleep asks 90 % of a CPU, not 900 %.
    std::fs::write(
        &json,
        r#"{ "tasks": { "s": { "delay": 300000, "runtime": 900, "sleep": 100 } }, "global": { "duration": 1 } }"#,
    )
    .unwrap();
    let (code, stderr, r) = run_in(dir.path(), &json, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let t = &r.unwrap()["threads"][0];
    assert!(t["cycles"].as_u64().unwrap() > 0, "its sleeps' wakeups");
    assert!(t["work"].is_null(), "no timer, no deadline: nothing to miss");
    assert_eq!(t["interval_ns"].as_i64(), Some(1_000_000), "its period is its work and sleep");
    assert!(t["max_at_ns"].as_i64().unwrap() >= 300_000_000, "nothing before its delay");
}

#[test]
fn rtlabs_rt_app_log_imports_to_the_figures_of_its_run() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    std::fs::write(
        &json,
        r#"{ "tasks": { "ctl": { "run": 200, "timer": { "ref": "c", "period": 2000 } } }, "global": { "duration": 1 } }"#,
    )
    .unwrap();
    let (code, stderr, r) = run_in(dir.path(), &json, &["--rt-app-logs", "."]);
    assert_eq!(code, Some(0), "{stderr}");
    let r = r.unwrap();
    let log = dir.path().join("rt-app-ctl-0.log");
    let out = dir.path().join("imported.json");
    rtlab().arg("import").arg(&log).arg("-o").arg(&out).assert().success();
    let i = read_json(&out);
    let (t, it) = (&r["threads"][0], &i["threads"][0]);
    // The log is in whole µs, rounded as rt-app rounds: the run's figures rounded are the
    // import's.
    let us = |v: &Value| v.as_i64().map(|n| (n + 500) / 1000 * 1000);
    assert_eq!(it["cycles"], t["cycles"], "one wakeup per line that slept");
    assert_eq!((us(&it["min_ns"]), us(&it["max_ns"])), (us(&t["min_ns"]), us(&t["max_ns"])));
    let (w, iw) = (&t["work"], &it["work"]);
    assert_eq!(iw["releases"], w["releases"]);
    // A job late by less than half a µs is a miss in ns and a slack of 0 in the log: the
    // import's misses are the run's, but for the lines at that edge.
    let edge = log_rows(&log).iter().filter(|r| r["slack"] == 0).count() as u64;
    let (misses, logged) = (w["misses"].as_u64().unwrap(), iw["misses"].as_u64().unwrap());
    assert!(logged <= misses && misses <= logged + edge, "{misses} misses, {logged} in the log, {edge} at the edge");
    assert_eq!(
        (us(&iw["run"]["min_ns"]), us(&iw["run"]["max_ns"])),
        (us(&w["run"]["min_ns"]), us(&w["run"]["max_ns"]))
    );
    assert_eq!(r["rt_app"]["threads"][0]["log"].as_str().map(|p| p.ends_with("rt-app-ctl-0.log")), Some(true));
}

#[test]
fn mp3_short_reports_each_hand_off_pair_with_the_count_that_happened() {
    let mp3 = Path::new("/usr/share/doc/rt-app/examples/mp3-short.json");
    assert!(mp3.exists(), "rt-app's examples are not installed: apt-get install rt-app");
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, r) = run_in(dir.path(), mp3, &["-D", "3s"]);
    assert_eq!(code, Some(0), "{stderr}");
    let r = r.unwrap();
    let a = &r["rt_app"];
    let loops = |name: &str| {
        a["threads"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()["phase_loops"].as_u64().unwrap()
    };
    let handoffs = |from: &str, to: &str, via: &str| {
        a["handoffs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["from"] == from && h["to"] == to && h["via"] == via)
            .map(|h| h["stats"]["cycles"].as_u64().unwrap())
            .sum::<u64>()
    };
    // AudioOut's loop ends in its one wait, its suspend, which only AudioTick resumes: each
    // completed loop is one hand-off from AudioTick. OMXCall's loop holds one wait, ended only
    // by mp3.decoder's signal.
    // The run's end may fall between a hand-off and the end of the loop it released (seen
    // emulated on aarch64, where loops are slow): that loop is not completed, its hand-off is.
    assert!(loops("AudioOut") > 10, "AudioOut ran {} loops", loops("AudioOut"));
    for (from, to, via) in [
        ("AudioTick", "AudioOut", "resume"),
        ("mp3.decoder", "OMXCall", "signal"),
        ("OMXCall", "mp3.decoder", "signal"),
    ] {
        let (h, l) = (handoffs(from, to, via), loops(to));
        assert!(h == l || h == l + 1, "{from} → {to} ({via}): {h} hand-offs, {l} loops completed");
    }
    let text = String::from_utf8_lossy(&rtlab().args(["show"]).arg(dir.path().join("r.json")).output().unwrap().stdout)
        .into_owned();
    assert!(text.contains("hand-off (resume)") && text.contains("AudioTick"), "{text}");
    // The picture of the hand-offs has a curve per pair; compare has a section per pair.
    let run = dir.path().join("r.json");
    let svg = dir.path().join("h.svg");
    rtlab().arg("plot").arg(&run).args(["--of", "handoffs", "--kind", "cdf", "-o"]).arg(&svg).assert().success();
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let inputs = [rtlab::import::input::load(&run, None).unwrap()];
    use rtlab::plot::inputs::{curves, By, Of};
    let labels: Vec<String> = curves(&inputs, By::Thread, Of::Handoffs).into_iter().map(|(l, _)| l).collect();
    assert_eq!(labels.len(), a["handoffs"].as_array().unwrap().len(), "{labels:?}");
    assert!(labels.iter().any(|l| l == "AudioTick → AudioOut (resume AudioOut)"), "{labels:?}");
    let out = rtlab().arg("compare").arg(&run).arg(&run).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("hand-off AudioTick → AudioOut (resume AudioOut)"), "{text}");
    assert!(text.contains("lock wait OMXCall on mutex"), "{text}");
}

#[test]
fn a_run_without_hand_offs_is_refused_a_picture_of_them_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("plain.json");
    rtlab().args(["run", "-D", "200ms", "-q", "--json"]).arg(&run).assert().success();
    let out = rtlab()
        .arg("plot")
        .arg(&run)
        .args(["--of", "lock-waits", "-o"])
        .arg(dir.path().join("x.svg"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no lock waits") && stderr.contains("--rt-app"), "{stderr}");
    assert!(!dir.path().join("x.svg").exists());
}

/// The shipped example (docs/examples/priority-inversion.json): a FIFO 90 task that takes a
/// mutex a FIFO 10 task holds for 2 ms, while a FIFO 50 task spins 20 ms on the same CPU — the
/// classic priority inversion — moved to `cpu`, 2 s long, with `pi` as `pi_enabled`.
fn inversion(cpu: usize, pi: bool) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples/priority-inversion.json");
    let text = std::fs::read_to_string(path).unwrap();
    // Edited as text: the events' order is the file's, which a JSON map would not keep.
    let mut out = text.clone();
    for (from, to) in [
        (r#""cpus" : [0]"#.to_string(), format!(r#""cpus" : [{cpu}]"#)),
        (r#""duration" : 10"#.into(), r#""duration" : 2"#.into()),
        (r#""pi_enabled" : false"#.into(), format!(r#""pi_enabled" : {pi}"#)),
        (r#""calibration" : "CPU0""#.into(), format!(r#""calibration" : "CPU{cpu}""#)),
    ] {
        assert!(text.contains(&from), "the example has no {from}");
        out = out.replace(&from, &to);
    }
    out
}

#[test]
fn priority_inversion_is_a_lock_wait_as_long_as_the_spinner_without_pi_and_the_critical_section_with_it() {
    if !is_root() {
        eprintln!("NOT CHECKED (SCHED_FIFO tasks need root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cpu = last_cpu();
    let mut waits = Vec::new();
    for pi in [false, true] {
        let json = dir.path().join(format!("inversion-{pi}.json"));
        std::fs::write(&json, inversion(cpu, pi)).unwrap();
        let (code, stderr, r) = run_in(dir.path(), &json, &[]);
        assert_eq!(code, Some(0), "pi {pi}: {stderr}");
        let r = r.unwrap();
        let w = r["rt_app"]["lock_waits"].as_array().unwrap().iter().find(|w| w["task"] == "high").cloned().unwrap();
        assert!(w["stats"]["cycles"].as_u64().unwrap() >= 10, "{w}");
        waits.push(w["stats"]["percentiles_ns"]["50"].as_i64().unwrap());
    }
    // Without PI the holder waits out the 20 ms spin before it can unlock; with it, the
    // holder runs at the waiter's priority and only its critical section (2 ms, 0.5 ms
    // of it done) stands between: the median wait is on either side of the spin's half.
    assert!(waits[0] > 10_000_000, "without pi_enabled the wait holds the spin: {} ns", waits[0]);
    assert!(waits[1] < 10_000_000, "with pi_enabled it does not: {} ns", waits[1]);
}

#[test]
fn bad_and_hostile_rt_app_files_are_refused_or_bounded_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (r#"{ "tasks": { "t": { "run": 10, "timer": { "ref": "x", "period": 100 } } }"#, "not rt-app JSON"),
        (r#"{ "tasks": { "t": { "unlock": "m", "run": 10 } } }"#, "task t: event 'unlock'"),
        (r#"{ "tasks": { "t": { "wait": { "ref": "c", "mutex": "m" } } } }"#, "not locked before it"),
        (r#"{ "tasks": { "t": { "lock": "m", "run": 10 } } }"#, "still locked at the phase's end"),
        (r#"{ "tasks": { "t": { "priority": 120, "policy": "SCHED_FIFO", "run": 10 } } }"#, "priority 120"),
        (r#"{ "tasks": { "t": { "timer": { "ref": "x", "period": 100, "mode": "sideways" } } } }"#, "timer.mode"),
        (r#"{ "tasks": { "t": { "cpus": [0, 4096], "run": 1 } } }"#, "CPU 4096"),
        (r#"{ "tasks": { "t": { "run": -5 } } }"#, "run -5 µs is out of range"),
        (r#"{ "tasks": { "t": { "fork": "u", "run": 1 } } }"#, "fork"),
        (r#"{ "tasks": { "t": { "instance": 5000, "run": 1 } } }"#, "instance 5000"),
        (r#"{ "global": { "ftrace": "verbose" }, "tasks": { "t": { "run": 1 } } }"#, "global.ftrace"),
        (r#"{ "tasks": { "t": { "loop": 0, "run": 1 } } }"#, "loop 0"),
    ];
    for (i, (json, says)) in cases.iter().enumerate() {
        let f = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&f, json).unwrap();
        let (code, stderr, _) = run_in(dir.path(), &f, &["-D", "1s"]);
        assert_eq!(code, Some(2), "{json}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{json}: {stderr}");
        assert!(stderr.contains(says), "{json}: {stderr}");
    }
    // Deep nesting is refused by the reader's depth limit, not a stack overflow.
    let deep = dir.path().join("deep.json");
    std::fs::write(&deep, format!(r#"{{ "tasks": {{ "t": {} }} }}"#, "[".repeat(100_000) + &"]".repeat(100_000)))
        .unwrap();
    assert_eq!(run_in(dir.path(), &deep, &[]).0, Some(2));
    // Two tasks that each wait for the other's resume before resuming it: both wait for good,
    // and the run still ends at its duration (a cycle of resumes is the file's, not a hang).
    let cycle = dir.path().join("cycle.json");
    std::fs::write(
        &cycle,
        r#"{ "tasks": { "a": { "suspend": "a", "resume": "b" }, "b": { "suspend": "b", "resume": "a" } } }"#,
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let (code, stderr, r) = run_in(dir.path(), &cycle, &["-D", "1s"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(20), "ended at its duration");
    let r = r.unwrap();
    assert_eq!(r["rt_app"]["threads"][0]["phase_loops"].as_u64(), Some(0));
    // The result says who waited on what when the run ended.
    let w = r["warnings"].as_array().unwrap().iter().find(|w| w["kind"] == "mutex_waits").expect(&stderr);
    assert_eq!(w["waits"], "a waited for a resume of a, b waited for a resume of b", "{w}");
    // 10 000 tasks are refused before any thread starts; a phase looping 2^62 times ends with
    // the run's duration.
    let many = dir.path().join("many.json");
    let tasks: Vec<String> = (0..10_000).map(|i| format!(r#""t{i}": {{ "run": 10 }}"#)).collect();
    std::fs::write(&many, format!(r#"{{ "tasks": {{ {} }} }}"#, tasks.join(","))).unwrap();
    let (code, stderr, _) = run_in(dir.path(), &many, &["-D", "1s"]);
    assert_eq!((code, stderr.lines().count()), (Some(2), 1), "{stderr}");
    assert!(stderr.contains("4096"), "{stderr}");
    let huge = dir.path().join("huge.json");
    std::fs::write(
        &huge,
        r#"{ "tasks": { "t": { "loop": 1, "phases": { "p": { "loop": 4611686018427387904, "run": 10, "sleep": 100 } } } } }"#,
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let (code, stderr, _) = run_in(dir.path(), &huge, &["-D", "1s"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(20), "ended at its duration");
}

#[test]
fn explain_follows_an_rt_app_threads_late_wakeups() {
    if !is_root() {
        eprintln!("NOT CHECKED (--explain traces the kernel's events: it needs root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("e.json");
    let cpu = last_cpu();
    std::fs::write(
        &json,
        format!(
            r#"{{ "tasks": {{ "c": {{ "policy": "SCHED_FIFO", "priority": 80, "cpus": [{cpu}], "run": 100,
                 "timer": {{ "ref": "c", "period": 1000 }} }} }}, "global": {{ "duration": 1 }} }}"#
        ),
    )
    .unwrap();
    // Every wakeup is over 1 ns: each explained one is a wakeup of the rt-app thread.
    let (code, stderr, r) = run_in(dir.path(), &json, &["--explain=1ns"]);
    assert_eq!(code, Some(0), "{stderr}");
    let r = r.unwrap();
    assert!(r["explain"]["unavailable"].is_null(), "{}", r["explain"]);
    assert!(r["explain"]["explained"].as_u64().unwrap() > 0, "{}", r["explain"]);
    assert!(r["explanations"].as_array().unwrap().iter().all(|x| x["thread"] == 0), "one thread, pinned");
}

#[test]
fn an_io_device_that_exists_is_never_written_and_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("keep.txt");
    std::fs::write(&keep, "precious").unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("inner.txt"), "precious").unwrap();
    std::os::unix::fs::symlink(&sub, dir.path().join("link")).unwrap();
    std::os::unix::fs::symlink(&keep, dir.path().join("filelink")).unwrap();
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
    let cases: [(PathBuf, &str); 8] = [
        (keep.clone(), "a file that exists"),
        (dir.path().join("link/inner.txt"), "a file that exists"),
        (dir.path().join("link/new.bin"), "behind the symlink"),
        (dir.path().join("filelink"), "a symlink"),
        (fifo, "a FIFO"),
        (sub.clone(), "a directory"),
        (dir.path().join("nowhere/new.bin"), "does not exist"),
        // (a file that exists; under qemu-user, which serves /proc/self itself, maybe not:
        // then a new file in the kernel's proc filesystem, refused as well)
        (PathBuf::from("/proc/self/comm"), "/proc/self/comm is "),
    ];
    for (device, says) in &cases {
        let f = dir.path().join("io.json");
        let json = format!(
            r#"{{ "global": {{ "io_device": "{}" }}, "tasks": {{ "t": {{ "iorun": 4096, "sleep": 1000 }} }} }}"#,
            device.display()
        );
        std::fs::write(&f, json).unwrap();
        let t0 = std::time::Instant::now();
        let (code, stderr, r) = run_in(dir.path(), &f, &["-D", "1s"]);
        assert_eq!((code, stderr.lines().count()), (Some(2), 1), "{}: {stderr}", device.display());
        assert!(stderr.contains("io_device") && stderr.contains(says), "{}: {stderr}", device.display());
        assert!(r.is_none() && t0.elapsed() < std::time::Duration::from_secs(5), "refused before running");
    }
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "precious");
    assert_eq!(std::fs::read_to_string(sub.join("inner.txt")).unwrap(), "precious");
    assert_eq!(std::fs::read_to_string("/proc/self/comm").unwrap(), comm);
    assert!(!sub.join("new.bin").exists());
    // /dev/null is written as it is, and a new file is created for the run and removed after.
    for device in ["/dev/null".to_string(), dir.path().join("scratch.bin").display().to_string()] {
        let f = dir.path().join("ok.json");
        let json = format!(
            r#"{{ "global": {{ "io_device": "{device}" }}, "tasks": {{ "t": {{ "iorun": 4096, "sleep": 1000 }} }} }}"#
        );
        std::fs::write(&f, json).unwrap();
        let (code, stderr, r) = run_in(dir.path(), &f, &["-D", "1s"]);
        assert_eq!(code, Some(0), "{device}: {stderr}");
        assert!(r.unwrap()["rt_app"]["threads"][0]["phase_loops"].as_u64().unwrap() > 0, "{device}");
    }
    assert!(!dir.path().join("scratch.bin").exists(), "the file rtlab made for iorun is gone after the run");
}

/// Tasks that each hold one mutex, meet at a barrier, then lock the next one's: a cycle of
/// `n` waits that no task can leave (`pi`: priority-inheriting mutexes), or `forever` with no
/// duration.
fn lock_cycle(n: usize, pi: bool, duration: i64) -> String {
    let tasks: Vec<String> = (0..n)
        .map(|i| {
            let (mine, next) = (format!("m{i}"), format!("m{}", (i + 1) % n));
            format!(
                r#""t{i}": {{ "lock": "{mine}", "barrier": "all", "lock1": "{next}", "unlock1": "{next}", "unlock": "{mine}" }}"#
            )
        })
        .collect();
    format!(r#"{{ "global": {{ "pi_enabled": {pi}, "duration": {duration} }}, "tasks": {{ {} }} }}"#, tasks.join(", "))
}

#[test]
fn a_lock_order_deadlock_ends_at_the_duration_with_the_result_written_and_the_cycle_named() {
    let dir = tempfile::tempdir().unwrap();
    for (n, pi) in [(2, false), (2, true), (3, false), (3, true)] {
        let f = dir.path().join("cycle.json");
        std::fs::write(&f, lock_cycle(n, pi, 2)).unwrap();
        let t0 = std::time::Instant::now();
        let (code, stderr, r) = run_in(dir.path(), &f, &[]);
        assert_eq!(code, Some(0), "{n} tasks, pi {pi}: {stderr}");
        // -D + 5 s; an emulated aarch64 build (CI's qemu-user) starts far slower.
        let bound = if cfg!(target_arch = "aarch64") { 20 } else { 7 };
        assert!(t0.elapsed() < std::time::Duration::from_secs(bound), "ended at its 2 s duration (+5 s)");
        let r = r.unwrap();
        let w = r["warnings"].as_array().unwrap().iter().find(|w| w["kind"] == "mutex_waits").expect(&stderr);
        assert_eq!(w["deadlock"], true, "{w}");
        for i in 0..n {
            assert!(w["waits"].as_str().unwrap().contains(&format!("t{i} waited for mutex m{}", (i + 1) % n)), "{w}");
        }
        assert!(stderr.contains("deadlock: "), "said on stderr too: {stderr}");
    }
}

#[test]
fn a_deadlocked_use_case_without_a_duration_ends_at_one_ctrl_c_or_sigterm_with_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("forever.json");
    std::fs::write(&f, lock_cycle(2, true, -1)).unwrap();
    for signal in ["-INT", "-TERM"] {
        let json = dir.path().join(format!("r{signal}.json"));
        let mut child = std::process::Command::new(rtlab_path())
            .args(["run", "-q", "--rt-app"])
            .arg(&f)
            .arg("--json")
            .arg(&json)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        std::process::Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
        let t0 = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() && t0.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let status = child.try_wait().unwrap();
        let _ = child.kill();
        assert!(status.is_some(), "{signal}: still running 5 s after one signal");
        let r = read_json(&json);
        assert!(r["warnings"].as_array().unwrap().iter().any(|w| w["deadlock"] == true), "{signal}: {r}");
    }
}

#[test]
fn small_rt_app_files_that_would_allocate_gigabytes_are_refused_before_anything_is_allocated() {
    let dir = tempfile::tempdir().unwrap();
    // 400 tasks that each wait on and release one resource: 160 000 hand-off series (about
    // 14 GB of histograms) from a 17 KB file.
    let tasks: Vec<String> = (0..400).map(|i| format!(r#""t{i}": {{ "suspend": "x", "resume": "x" }}"#)).collect();
    let handoffs = format!(r#"{{ "tasks": {{ {} }} }}"#, tasks.join(", "));
    // 1 024 threads with a 4 MiB buffer each: 4 GiB.
    let buffers = r#"{ "global": { "mem_buffer_size": 4194304 }, "tasks": { "t": { "instance": 1024, "mem": 10, "sleep": 1000 } } }"#;
    for (json, says) in [(handoffs.as_str(), "series"), (buffers, "MiB in all")] {
        assert!(json.len() < 21_000);
        let f = dir.path().join("big.json");
        std::fs::write(&f, json).unwrap();
        let t0 = std::time::Instant::now();
        let (code, stderr, r) = run_in(dir.path(), &f, &["-D", "1s"]);
        assert_eq!((code, stderr.lines().count()), (Some(2), 1), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(r.is_none() && t0.elapsed() < std::time::Duration::from_secs(10), "refused before running");
    }
    // A task's ignored keys are said once, not once per instance.
    let keys: Vec<String> = (0..30).map(|k| format!(r#""junk{k}": 1"#)).collect();
    let f = dir.path().join("many.json");
    std::fs::write(
        &f,
        format!(r#"{{ "tasks": {{ "t": {{ "instance": 64, {}, "sleep": 1000 }} }} }}"#, keys.join(", ")),
    )
    .unwrap();
    let (code, stderr, _) = run_in(dir.path(), &f, &["-D", "1s"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stderr.lines().filter(|l| l.contains("junk")).count(), 30, "{stderr}");
}

#[test]
fn a_log_that_would_fill_the_disk_is_said_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("fast.json");
    let json = format!(
        r#"{{ "global": {{ "logdir": "{}" }}, "tasks": {{ "fast": {{ "timer": {{ "ref": "t", "period": 1 }} }}, "slow": {{ "timer": {{ "ref": "u", "period": 10000 }} }} }} }}"#,
        dir.path().display()
    );
    std::fs::write(&f, json).unwrap();
    let (code, stderr, _) = run_in(dir.path(), &f, &["-D", "1s"]);
    assert_eq!(code, Some(0), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("fills the disk")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("thread fast") && said[0].contains("120 MB a second"), "{stderr}");
}

#[test]
fn every_log_rt_app_writes_for_its_own_mp3_example_imports_with_its_own_columns() {
    // Debian's mp3-short.json: one periodic task (AudioTick, 6 ms) and four event-driven ones
    // (c_period 0) that wake each other through resources.
    let dir = tempfile::tempdir().unwrap();
    // Its calibration ("CPU0": rt-app times a loop on CPU 0 before the run, 4 s idle and up to
    // 25 s beside the rest of the suite) is given instead (20 ns a loop, what rt-app measures on
    // this kind of machine): the columns imported are times rt-app measured, whatever a loop costs.
    let example = std::fs::read_to_string("/usr/share/doc/rt-app/examples/mp3-short.json")
        .expect("rt-app's examples (apt install rt-app; .ci/run does)")
        .replace("\"logdir\" : \"./\"", &format!("\"logdir\" : \"{}\"", dir.path().display()));
    assert!(example.contains("\"calibration\" : \"CPU0\""), "Debian's mp3-short.json changed: {example}");
    let example = example.replace("\"calibration\" : \"CPU0\"", "\"calibration\" : 20");
    let json = dir.path().join("mp3.json");
    std::fs::write(&json, example).unwrap();
    rt_app(&json);
    let logs: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    assert_eq!(logs.len(), 5, "{logs:?}");
    for log in logs {
        let rows = log_rows(&log);
        let out = dir.path().join("x.json");
        let o = rtlab().arg("import").arg(&log).arg("-o").arg(&out).output().unwrap();
        assert!(o.status.success(), "{}: {}", log.display(), String::from_utf8_lossy(&o.stderr));
        let v = read_json(&out);
        let w = &v["threads"][0]["work"];
        assert_eq!(w["releases"].as_u64(), Some(rows.len() as u64), "{}: a loop per line", log.display());
        let runs: Vec<i64> = rows.iter().map(|r| r["run"] * 1000).collect();
        assert_eq!(w["run"]["max_ns"].as_i64(), runs.iter().copied().max(), "{}", log.display());
        if rows.iter().all(|r| r["c_period"] == 0) {
            // No timer: no wakeup, and the loop's own time (end − start) as its response.
            assert_eq!(v["threads"][0]["cycles"], 0, "{}", log.display());
            let own = rows.iter().map(|r| (r["end"] - r["start"]) * 1000).max();
            assert_eq!(w["response"]["max_ns"].as_i64(), own, "{}", log.display());
        } else {
            let slack = rows.iter().map(|r| r["slack"] * 1000).min();
            assert_eq!(w["slack_min_ns"].as_i64(), slack, "{}", log.display());
        }
    }
}

#[test]
fn with_a_calibration_in_ns_the_logs_perf_is_rt_apps_count_of_its_loops() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let text = format!(
        r#"{{ "global": {{ "duration": 1, "calibration": 50, "logdir": "{}", "log_basename": "p" }},
             "tasks": {{ "t": {{ "loop": 20, "run": 2000, "timer": {{ "ref": "t", "period": 10000 }} }} }} }}"#,
        dir.path().display()
    );
    std::fs::write(&json, text).unwrap();
    let out = rtlab().args(["run", "--rt-app"]).arg(&json).arg("-q").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = log_rows(&dir.path().join("p-t-0.log"));
    assert!(!rows.is_empty());
    // rt-app's loadwait: 2000 µs · 1000 / 50 ns = 40 000 loops per run.
    assert!(rows.iter().all(|r| r["perf"] == 40_000), "{:?}", rows.iter().map(|r| r["perf"]).collect::<Vec<_>>());
}

#[test]
fn global_ftrace_writes_rt_apps_markers_and_each_loops_stats_match_its_log_line() {
    assert!(is_root(), "trace markers need root (tracefs)");
    let _markers = MARKERS.lock().unwrap_or_else(|e| e.into_inner());
    let tracing = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.join("trace_marker").exists())
        .expect("tracefs mounted (mount -t tracefs nodev /sys/kernel/tracing)");
    // rt-app refuses to write markers into a buffer that records nothing; so does rtlab.
    std::fs::write(tracing.join("tracing_on"), "1").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("f.json");
    let text = format!(
        r#"{{ "global": {{ "duration": 5, "ftrace": true, "calibration": 50, "logdir": "{}", "log_basename": "f" }},
             "tasks": {{ "t": {{ "loop": 3, "phases": {{ "p": {{ "run7321": 1000, "timer": {{ "ref": "t", "period": 20000 }} }} }} }} }} }}"#,
        dir.path().display()
    );
    std::fs::write(&json, text).unwrap();
    let out = rtlab().args(["run", "--rt-app"]).arg(&json).arg("-q").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The global buffer holds what anything else traced too: a thread's name is bytes, not UTF-8.
    let trace = String::from_utf8_lossy(&std::fs::read(tracing.join("trace")).unwrap()).into_owned();
    let marks: Vec<&str> =
        trace.lines().filter_map(|l| l.split_once("tracing_mark_write: ").map(|m| m.1.trim_end())).collect();
    let from = marks.iter().rposition(|m| *m == "rtapp_main: event=start").expect("rtapp_main: event=start");
    let marks = &marks[from..];
    assert!(marks[1].starts_with("rtapp_main: event=clock_ref data="), "{marks:#?}");
    assert_eq!(marks[2], "rtapp_task: event=start", "{marks:#?}");
    let rows = log_rows(&dir.path().join("f-t-0.log"));
    assert_eq!(rows.len(), 3, "three loops of one phase");
    for (k, row) in rows.iter().enumerate() {
        let at = format!("thread_loop={k} phase=0 phase_loop=0");
        let lines = &marks[3 + 5 * k..3 + 5 * (k + 1)];
        let stats = format!(
            "rtapp_stats: period={} run={} wu_lat={} slack={} c_period={} c_run={}",
            row["period"], row["run"], row["wu_lat"], row["slack"], row["c_period"], row["c_duration"]
        );
        let want = [
            format!("rtapp_loop: event=start {at}"),
            "rtapp_event: id=0 type=6 desc=run7321".to_string(),
            "rtapp_event: id=1 type=10 desc=timer".to_string(),
            format!("rtapp_loop: event=end {at}"),
            stats,
        ];
        assert_eq!(lines, want, "loop {k}: rt-app's markers, its stats the log line's");
    }
    assert_eq!(&marks[18..], ["rtapp_task: event=end", "rtapp_main: event=end"], "{marks:#?}");
}
