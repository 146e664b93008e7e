//! `rtlab run --runtime tokio`: the tokio probe in both runtime kinds and both waits, its
//! result, and the options that do not apply to it.

mod common;

use common::{assert_valid_run_result, read_json, rtlab};

#[test]
fn the_tokio_probe_runs_in_both_runtime_kinds_and_writes_a_run_result() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str, &str); 3] = [
        (&["--tokio-flavor", "current-thread"], "current-thread", "sleep-until"),
        (&["--tokio-workers", "2", "--tokio-wait", "interval", "--missed-tick", "skip"], "multi-thread", "interval"),
        (&["--tokio-blocking", "1"], "multi-thread", "sleep-until"),
    ];
    for (i, (extra, flavor, method)) in cases.iter().enumerate() {
        let json = dir.path().join(format!("{i}.json"));
        let out = rtlab()
            .args(["run", "--runtime", "tokio", "-l", "40", "-i", "2ms", "-q"])
            .args(*extra)
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        assert!(out.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
        let v = read_json(&json);
        assert_valid_run_result(&v);
        assert_eq!(v["end_reason"], "loops");
        assert_eq!(v["all"]["cycles"], 40);
        let rt = &v["runtime"];
        assert_eq!(
            (rt["kind"].as_str(), rt["flavor"].as_str(), rt["method"].as_str()),
            (Some("tokio"), Some(*flavor), Some(*method))
        );
        assert_eq!(rt["period_ns"], 2_000_000);
        let missed = v["all"]["missed"].as_u64().expect("missed periods are known for tokio");
        if *method == "interval" {
            // skip: only ticks tokio skipped are missed, each a whole period between two tick
            // deadlines, so the deadlines stay on the grid and the drift is the last wakeup's own
            // lateness, one of the run's latencies (however late a loaded machine makes it;
            // `delay` would add every move of the schedule to it).
            let t = &v["threads"][0];
            let drift = t["drift_ns"].as_i64().unwrap();
            let (min, max) = (t["min_ns"].as_i64().unwrap(), t["max_ns"].as_i64().unwrap());
            assert!(
                (min..=max).contains(&drift),
                "skip keeps the grid: drift {drift}, latencies {min}..={max}, {missed} missed"
            );
        }
        assert_eq!(rt["timer_granularity_ns"], 1_000_000);
        assert!(rt["version"].as_str().unwrap().starts_with("tokio 1."));
        assert!(v["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "timer_granularity"));
        // A warning, so on stderr (the results alone go to stdout).
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("rtlab: warning: tokio's timers have 1 ms granularity"),
            "the output says so: {stderr}"
        );
    }
    let v = read_json(&dir.path().join("1.json"));
    assert_eq!(
        (v["runtime"]["schedulers"].as_u64(), v["runtime"]["missed_tick_behavior"].as_str()),
        (Some(2), Some("skip"))
    );
    let v = read_json(&dir.path().join("2.json"));
    assert_eq!(v["loads"][0]["kind"], "tokio-blocking");
    assert!(v["loads"][0]["ops"].as_u64().unwrap() > 0);
}

#[test]
fn a_task_that_never_yields_starves_the_probe_on_a_current_thread_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("hog.json");
    rtlab()
        .args([
            "run",
            "--runtime",
            "tokio",
            "--tokio-flavor",
            "current-thread",
            "--tokio-hogs",
            "1",
            "-D",
            "500ms",
            "-q",
        ])
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let v = read_json(&json);
    // One wakeup, after the hog let go at the end of the run, with every period in between missed.
    assert_eq!(v["all"]["cycles"], 1);
    assert!(v["all"]["missed"].as_u64().unwrap() >= 400, "{}", v["all"]["missed"]);
    assert_eq!(v["loads"][0]["kind"], "tokio-hog");
}

#[test]
fn options_for_os_threads_are_refused_with_tokio_and_tokio_options_need_it() {
    for bad in [
        vec!["run", "--runtime", "tokio", "-t", "2", "-l", "5"],
        vec!["run", "--runtime", "tokio", "--policy", "fifo", "-l", "5"],
        vec!["run", "--tokio-hogs", "1", "-l", "5"],
        vec!["run", "--runtime", "tokio", "--tokio-flavor", "current-thread", "--tokio-workers", "2", "-l", "5"],
        vec!["sweep", "--runtime", "tokio", "--methods", "abs,rel", "--out", "/tmp/never", "-l", "5"],
    ] {
        let out = rtlab().args(&bad).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
}
