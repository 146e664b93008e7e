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
    rt_app(&periodic_json(dir.path(), last_cpu(), 2));
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
    assert!(stderr.contains("rtlab: warning: --rt-app: global.calibration"), "{stderr}");
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

#[test]
fn an_rt_app_file_with_what_rtlab_cannot_map_is_refused_naming_the_key_and_task() {
    let lock = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/rt-app/lock.json");
    let e = refused(&["run", "--rt-app", lock]);
    assert!(e.contains("task worker: event 'lock' cannot be mapped"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ \"tasks\": { \"t\": { \"run\": 10, \"timer\": { \"ref\": \"x\", \"period\": 100 } } }")
        .unwrap();
    assert!(refused(&["run", "--rt-app", bad.to_str().unwrap()]).contains("not rt-app JSON"));
    let e = refused(&["run", "--rt-app", lock, "--task", "name=a,period=1ms"]);
    assert!(e.contains("cannot be used with"), "{e}");
}
