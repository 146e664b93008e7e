//! Periodic tasks that work: `--work`, deadlines, task sets, rt-app's files and logs. Exact
//! figures come through the simulation; real runs check behaviour on this kernel (as root).

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

fn run_json(dir: &Path, args: &[&str]) -> (Value, std::process::Output) {
    let json = dir.join("r.json");
    let out = rtlab().args(args).arg("-q").arg("--json").arg(&json).output().unwrap();
    assert!(json.exists(), "no result: {}", String::from_utf8_lossy(&out.stderr));
    (read_json(&json), out)
}

fn work(r: &Value, thread: usize) -> &Value {
    &r["threads"][thread]["work"]
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn i(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn simulated_work_gives_exact_response_slack_misses_and_skipped_releases() {
    let dir = tempfile::tempdir().unwrap();
    // Latencies 100, 900, 50, 20 µs; 300 µs of work; period 1 ms; deadline 500 µs:
    // responses 400, 1200 (late; the release at +1 ms passed: 1 skipped), 350, 320.
    let sim = samples_file(dir.path(), "100000\n900000\n50000\n20000\n");
    let (r, out) = run_json(
        dir.path(),
        &["run", "--simulate", &sim, "-i", "1ms", "--work", "300us", "--deadline", "500us", "-l", "4"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_valid_run_result(&r);
    let w = work(&r, 0);
    assert_eq!((i(&w["response"]["min_ns"]), i(&w["response"]["max_ns"])), (320_000, 1_200_000));
    assert_eq!(w["response"]["mean_ns"].as_f64(), Some((400_000.0 + 1_200_000.0 + 350_000.0 + 320_000.0) / 4.0));
    assert_eq!((i(&w["slack_min_ns"]), i(&w["slack_max_ns"])), (-700_000, 180_000));
    assert_eq!((u(&w["releases"]), u(&w["misses"]), u(&w["late"]), u(&w["skipped"])), (5, 2, 1, 1));
    assert_eq!((u(&w["longest_miss_run"]), u(&w["worst_misses_in_window"])), (2, 2));
    assert_eq!((i(&w["run"]["min_ns"]), i(&w["run"]["max_ns"])), (300_000, 300_000));
    assert_eq!(w["miss_ratio"].as_f64(), Some(0.4));
    assert_eq!(u(&r["threads"][0]["missed"]), 1, "the skipped release is a missed period");
    assert_eq!(w["deadline_ns"], 500_000);
    assert!(w["calibration"].is_null(), "simulated work is not calibrated");
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(table.contains("resp min") && table.contains("2 (40.00 %)"), "{table}");
}

#[test]
fn response_and_miss_limits_fail_the_verdict_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let sim = samples_file(dir.path(), "100000\n900000\n50000\n20000\n");
    let base = ["run", "--simulate", sim.as_str(), "-i", "1ms", "--work", "300us", "--deadline", "500us", "-l", "4"];
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend(extra);
        run_json(dir.path(), &a)
    };
    let (r, out) = with(&["--max-response", "1ms"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(r["verdict"]["status"], "fail");
    assert_eq!(u(&r["verdict"]["tasks"][0]["responses_over"]), 1);
    let (r, out) = with(&["--max-misses", "2"]);
    assert_eq!((out.status.code(), r["verdict"]["status"].as_str()), (Some(0), Some("pass")));
    let (r, out) = with(&["--max-misses", "1/3"]);
    assert_eq!(out.status.code(), Some(3), "2 misses in a window of 3 releases");
    assert!(
        r["verdict"]["message"].as_str().unwrap().contains("2 misses in a window of 3 releases"),
        "{}",
        r["verdict"]
    );
    let (_, out) = with(&["--max-misses", "2/3"]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn bad_work_options_are_refused_before_anything_runs() {
    for (args, says) in [
        (vec!["run", "--work", "0", "-l", "1"], "'0' is zero"),
        (vec!["run", "--work", "150ms", "-l", "1"], "at most 100ms"),
        (vec!["run", "--task", "name=a,period=1s,work=200ms", "-l", "1"], "at most 100ms"),
        (vec!["run", "--work", "100us", "--deadline", "0", "-l", "1"], "'0' is zero"),
        (vec!["run", "--work", "100us", "--deadline=-5us", "-l", "1"], "'-5us' is negative"),
        (vec!["run", "--deadline", "1ms", "-l", "1"], "--deadline needs work per period"),
        (vec!["run", "--max-misses", "3", "-l", "1"], "--max-misses needs work"),
        (vec!["run", "--work", "100us", "--max-misses", "5/3", "-l", "1"], "invalid --max-misses '5/3'"),
        (vec!["run", "--work", "100us", "--method", "nanosleep", "-l", "1"], "--work needs --method abs"),
        (vec!["run", "--work", "100us", "--runtime", "tokio", "-l", "1"], "--work does not apply to --runtime tokio"),
        (vec!["run", "--task", "name=a,period=1ms,colour=red", "-l", "1"], "unknown key 'colour'"),
        (vec!["run", "--task", "name=a,period", "-l", "1"], "is not key=value"),
        (vec!["run", "--task", "name=a,period=1ms", "-t", "2", "-l", "1"], "-t does not apply with --task"),
        (vec!["run", "--task", "name=a,period=1ms,work=0", "-l", "1"], "work=0 must be greater than zero"),
        (vec!["run", "--task", "name=a,period=1ms,deadline=800us", "-l", "1"], "task a: deadline= needs work="),
        (vec!["run", "--work", "100us", "--miss-window", "10", "--max-misses", "1/20", "-l", "1"], "different windows"),
    ] {
        let e = refused(&args);
        assert!(e.contains(says), "{args:?}: {e}");
    }
}

#[test]
fn a_task_set_asking_more_rt_time_than_throttling_allows_is_refused_unless_forced() {
    let runtime: i64 = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap().trim().parse().unwrap();
    if runtime < 0 {
        eprintln!("NOT CHECKED (RT throttling is off on this machine: sched_rt_runtime_us = -1)");
        return;
    }
    let cpu = online_cpu();
    let a = format!("name=a,period=1ms,work=700us,policy=fifo:50,cpu={cpu}");
    let b = format!("name=b,period=2ms,work=700us,policy=fifo:40,cpu={cpu}");
    let e = refused(&["run", "--task", &a, "--task", &b, "-D", "1s"]);
    assert!(e.contains("RT throttling allows") && e.contains("--force"), "{e}");
}

/// The last online CPU (the test's tasks are pinned there).
fn online_cpu() -> usize {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let last = text.trim().rsplit([',', '-']).next().unwrap();
    last.parse().unwrap()
}

#[test]
fn a_task_set_runs_each_task_with_its_own_name_period_work_and_policy() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = online_cpu().to_string();
    let toml = dir.path().join("set.toml");
    std::fs::write(
        &toml,
        format!(
            "[[task]]\nname = \"ctl\"\nperiod = \"1ms\"\nwork = \"100us\"\npolicy = \"fifo:80\"\ncpu = {cpu}\n\n\
             [[task]]\nname = \"log\"\nperiod = \"4ms\"\nwork = \"300us\"\nkind = \"time\"\ndeadline = \"2ms\"\npolicy = \"fifo:70\"\ncpu = {cpu}\noffset = \"500us\"\n"
        ),
    )
    .unwrap();
    let (r, out) = run_json(dir.path(), &["run", "--tasks", toml.to_str().unwrap(), "-D", "1s"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_valid_run_result(&r);
    let t = &r["threads"];
    assert_eq!((t[0]["name"].as_str(), t[1]["name"].as_str()), (Some("ctl"), Some("log")));
    assert_eq!((t[0]["interval_ns"].as_i64(), t[1]["interval_ns"].as_i64()), (Some(1_000_000), Some(4_000_000)));
    assert_eq!((work(&r, 0)["kind"].as_str(), work(&r, 1)["kind"].as_str()), (Some("fixed"), Some("time")));
    assert_eq!((i(&work(&r, 0)["deadline_ns"]), i(&work(&r, 1)["deadline_ns"])), (1_000_000, 2_000_000));
    assert!(work(&r, 0)["calibration"]["units"].as_u64().unwrap() > 0);
    assert!(work(&r, 1)["calibration"].is_null(), "busy time needs no calibration");
    // Busy time ends 300 µs after the wakeup: no run is shorter.
    assert!(i(&work(&r, 1)["run"]["min_ns"]) >= 300_000, "{}", work(&r, 1)["run"]);
    if is_root() {
        assert_eq!((t[0]["policy"].as_str(), t[0]["priority"].as_u64()), (Some("fifo"), Some(80)));
        assert_eq!((t[1]["policy"].as_str(), t[1]["priority"].as_u64()), (Some("fifo"), Some(70)));
    }
    assert_eq!(r["all"]["work"]["work_ns"], Value::Null, "the tasks differ");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\nctl ") && stdout.contains("\nlog "), "{stdout}");
}

#[test]
fn calibrated_work_takes_the_asked_time_on_an_undisturbed_cpu() {
    if !is_root() {
        eprintln!("NOT CHECKED (an undisturbed CPU needs SCHED_FIFO: run the tests as root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cpu = online_cpu().to_string();
    let (r, _) = run_json(dir.path(), &["run", "-t1", "-a", &cpu, "-i", "1ms", "--work", "300us", "-l", "2000"]);
    let w = work(&r, 0);
    // The median run (response − latency, per period) of a FIFO task near 300 µs: the
    // calibration sized the work, not twice or half of it. The margin is the VM's: a vCPU runs
    // slower or faster as the host's other load comes and goes between the calibration and the
    // run (seen in CI: a median of 269 µs for a calibration that timed 300 µs; with the other
    // vCPU busy compiling or under stress-ng, 417 µs).
    let run_p50 = i(&w["run"]["percentiles_ns"]["50"]);
    assert!((150_000..600_000).contains(&run_p50), "median run {run_p50} ns for 300 µs of work: {w}");
    let c = &w["calibration"];
    assert_eq!(c["cpu"].as_u64(), Some(cpu.parse().unwrap()), "calibrated on the task's CPU");
}

#[test]
fn work_longer_than_the_period_misses_every_deadline_and_skips_releases() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = online_cpu().to_string();
    let (r, out) = run_json(
        dir.path(),
        &["run", "-t1", "-a", &cpu, "-i", "1ms", "--work", "1.2ms", "--work-kind", "time", "-l", "300"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let w = work(&r, 0);
    let jobs = u(&w["response"]["cycles"]);
    assert_eq!(jobs, 300);
    assert_eq!(u(&w["late"]), jobs, "every job ends after its 1 ms deadline");
    // Each job passes the next release (1.2 ms > 1 ms): at least one skipped per job.
    assert!(u(&w["skipped"]) >= jobs, "{w}");
    assert_eq!(u(&w["misses"]), u(&w["late"]) + u(&w["skipped"]));
    assert_eq!(u(&r["threads"][0]["missed"]), u(&w["skipped"]), "skipped releases are the missed periods");
    assert!(i(&w["slack_max_ns"]) < 0, "{w}");
    assert_eq!(u(&w["longest_miss_run"]), u(&w["releases"]));
}

#[test]
fn a_fifo_blocker_makes_the_task_miss_at_the_blockers_rate() {
    if !is_root() {
        eprintln!("NOT CHECKED (a FIFO-90 blocker needs root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cpu = online_cpu().to_string();
    let smp = dir.path().join("s.smp");
    let blocker = format!("cpu:policy=fifo:90,burst=2ms,every=20ms,cpus={cpu}");
    let (r, out) = run_json(
        dir.path(),
        &[
            "run",
            "-t1",
            "-a",
            &cpu,
            "-p",
            "80",
            "-i",
            "1ms",
            "--work",
            "300us",
            "--miss-window",
            "20",
            "-D",
            "4s",
            "--load",
            &blocker,
            "--samples",
            smp.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let w = work(&r, 0);
    assert!(u(&w["late"]) > 0, "{w}");
    // The late jobs' wakeups, modulo the blocker's 20 ms: they gather where the blocker runs.
    let csv = rtlab().args(["samples", smp.to_str().unwrap(), "--csv"]).output().unwrap();
    let text = String::from_utf8_lossy(&csv.stdout);
    let deadline = 1_000_000i64;
    let late: Vec<(i64, i64)> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let (wake, resp) = (f[2].parse::<i64>().ok()?, f[4].parse::<i64>().ok()?);
            (resp > deadline).then_some((wake, wake % 20_000_000))
        })
        .collect();
    let windows: std::collections::BTreeSet<i64> = late.iter().map(|(wake, _)| wake / 20_000_000).collect();
    let total_windows = 4_000 / 20;
    assert!(windows.len() * 2 >= total_windows, "misses in {} of {total_windows} blocker periods", windows.len());
    // Phase: one 4 ms band (of 20) holds a late wakeup in most blocker periods — the blocker's
    // (a busy machine adds late jobs elsewhere too, so their share is not asserted).
    let periods_in_band = |start: i64| {
        let hit = late.iter().filter(|(_, ph)| (ph - start).rem_euclid(20_000_000) < 4_000_000);
        hit.map(|(wake, _)| wake / 20_000_000).collect::<std::collections::BTreeSet<_>>().len()
    };
    let best = (0..20).map(|k| periods_in_band(k * 1_000_000)).max().unwrap();
    assert!(best * 2 >= total_windows, "the blocker's phase holds a late wakeup in {best} of {total_windows} periods");
    assert!(u(&w["worst_misses_in_window"]) >= 1);
}

#[test]
fn the_samples_file_keeps_each_response_and_reading_it_back_gives_the_same_figures() {
    let dir = tempfile::tempdir().unwrap();
    let smp = dir.path().join("s.smp");
    let sim = samples_file(dir.path(), "100000\n900000\n50000\n20000\n");
    let (r, _) = run_json(
        dir.path(),
        &[
            "run",
            "--simulate",
            &sim,
            "-i",
            "1ms",
            "--work",
            "300us",
            "--deadline",
            "500us",
            "-l",
            "4",
            "--samples",
            smp.to_str().unwrap(),
        ],
    );
    let csv = rtlab().args(["samples", smp.to_str().unwrap(), "--csv"]).output().unwrap();
    let text = String::from_utf8_lossy(&csv.stdout);
    assert_eq!(text.lines().next(), Some("thread,cycle,wake_ns,latency_ns,response_ns"));
    let responses: Vec<&str> = text.lines().skip(1).map(|l| l.rsplit(',').next().unwrap()).collect();
    assert_eq!(responses, ["400000", "1200000", "350000", "320000"]);
    let show = rtlab().args(["show", smp.to_str().unwrap()]).output().unwrap();
    assert!(show.status.success());
    let back = dir.path().join("back.json");
    rtlab().args(["import", smp.to_str().unwrap(), "-o", back.to_str().unwrap()]).assert().success();
    let b = read_json(&back);
    let (w, v) = (work(&r, 0), work(&b, 0));
    for k in ["releases", "misses", "late", "skipped", "longest_miss_run", "slack_min_ns", "slack_max_ns"] {
        assert_eq!(w[k], v[k], "{k}");
    }
    assert_eq!(w["response"]["max_ns"], v["response"]["max_ns"]);
    assert_eq!(w["run"]["sum_ns"], v["run"]["sum_ns"]);
}

#[test]
fn downstream_commands_show_response_times() {
    let dir = tempfile::tempdir().unwrap();
    let sim = samples_file(dir.path(), "100000\n900000\n50000\n20000\n");
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    for (f, w) in [(&a, "300us"), (&b, "600us")] {
        rtlab()
            .args([
                "run",
                "--simulate",
                &sim,
                "-i",
                "1ms",
                "--work",
                w,
                "--deadline",
                "500us",
                "-l",
                "4",
                "-q",
                "--json",
            ])
            .arg(f)
            .assert()
            .success();
    }
    let png = dir.path().join("p.png");
    for of in ["response", "run", "both"] {
        rtlab().args(["plot", "--of", of, "-k", "cdf", "-o"]).arg(&png).arg(&a).assert().success();
    }
    let e = rtlab().args(["plot", "--of", "response", "-k", "timeseries", "-o"]).arg(&png).arg(&a).output().unwrap();
    assert_eq!(e.status.code(), Some(2));
    let html = dir.path().join("r.html");
    rtlab().args(["report", "-o"]).arg(&html).arg(&a).assert().success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Response time") && page.contains("Response-time histogram"), "no response section");
    let cmp = rtlab()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--fail-if-worse", "10", "--percentile", "response:max"])
        .output()
        .unwrap();
    assert_eq!(cmp.status.code(), Some(3), "{}", String::from_utf8_lossy(&cmp.stdout));
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(text.contains("response time, all working tasks") && text.contains("FAIL: b.json response max"), "{text}");
    let misses = rtlab()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--fail-if-worse", "0", "--percentile", "misses"])
        .output()
        .unwrap();
    assert_eq!(
        misses.status.code(),
        Some(3),
        "600 µs of work misses the 500 µs deadline every period: 5 misses, not 2"
    );
}

#[test]
fn a_sweep_over_the_work_writes_response_columns_and_draws_response_times() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sw");
    let sim = samples_file(dir.path(), "100000\n900000\n50000\n20000\n");
    rtlab()
        .args(["sweep", "--out"])
        .arg(&out)
        .args(["--works", "100us,500us", "--simulate", &sim, "-i", "1ms", "-l", "4", "-q"])
        .assert()
        .success();
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    assert!(
        header.starts_with("work_us,") && header.contains("p99_response_ms") && header.contains("deadline_misses"),
        "{header}"
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2);
    // 500 µs of work after a 900 µs wakeup ends 400 µs after the 1 ms deadline.
    assert!(rows[0].starts_with("100,") && rows[1].starts_with("500,"), "{csv}");
    assert!(rows[1].contains(",1.400000,"), "max response 1.4 ms: {}", rows[1]);
    let png = dir.path().join("sw.png");
    rtlab().arg("plot").arg(&out).arg("-o").arg(&png).assert().success();
}

#[test]
fn the_rate_monotonic_and_edf_examples_run_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["rate-monotonic.toml", "edf.toml"] {
        let path = format!("{}/docs/examples/{file}", env!("CARGO_MANIFEST_DIR"));
        let (r, out) = run_json(dir.path(), &["run", "--tasks", &path, "-D", "1s"]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", String::from_utf8_lossy(&out.stderr));
        let names: Vec<&str> = r["threads"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["fast", "medium", "slow"], "{file}");
        let periods: Vec<i64> = r["threads"].as_array().unwrap().iter().map(|t| i(&t["interval_ns"])).collect();
        assert_eq!(periods, [1_000_000, 5_000_000, 10_000_000]);
        if is_root() {
            let policy = if file == "edf.toml" { "deadline" } else { "fifo" };
            assert!(r["threads"].as_array().unwrap().iter().all(|t| t["policy"] == policy), "{file}: {}", r["threads"]);
            if file == "edf.toml" {
                assert_eq!(r["threads"][2]["deadline"]["runtime_ns"], 3_600_000);
            }
        }
    }
}

#[test]
fn a_tasks_offset_delays_its_samples_and_dates_them_from_the_common_start() {
    let dir = tempfile::tempdir().unwrap();
    let (r, out) = run_json(
        dir.path(),
        &[
            "run",
            "--task",
            "name=early,period=1ms",
            "--task",
            "name=late,period=1ms,work=50us,offset=600ms",
            "-D",
            "1s",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Every sample of the offset task comes after its offset, the largest one included.
    let late = &r["threads"][1];
    let at = late["max_at_ns"].as_i64().unwrap();
    assert!((600_000_000..1_100_000_000).contains(&at), "max of the 600 ms offset task dated at {at} ns");
    // rt-app's `delay` is the same offset, for a task that sleeps relatively too.
    let json = dir.path().join("delay.json");
    std::fs::write(
        &json,
        r#"{ "tasks": { "s": { "delay": 600000, "run": 50, "sleep": 950 } }, "global": { "duration": 1 } }"#,
    )
    .unwrap();
    let (r, out) = run_json(dir.path(), &["run", "--rt-app", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let at = r["threads"][0]["max_at_ns"].as_i64().unwrap();
    assert!((600_000_000..1_100_000_000).contains(&at), "max of the task delayed 600 ms dated at {at} ns");
}
