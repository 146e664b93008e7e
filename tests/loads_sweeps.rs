//! Background loads and sweeps: real loads run and are cleaned up on every exit path;
//! simulated sweeps give exact CSV and JSON.

mod common;
use common::*;
use serde_json::Value;
use std::process::{Command as Std, Stdio};
use std::time::{Duration, Instant};

/// Processes whose command line contains `marker`, other than this test and the rtlab
/// processes it started (whose own arguments contain the marker).
fn processes_with(marker: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()) && e.file_name() != me.as_str())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok().map(|c| (e.file_name(), c)))
        .map(|(pid, c)| (pid.to_string_lossy().into_owned(), String::from_utf8_lossy(&c).replace('\0', " ")))
        .filter(|(_, c)| {
            c.contains(marker)
                && !c.contains("cargo")
                && !c.contains("loads_sweeps-")
                && !c.contains(" run -t1")
                && !c.contains(" load command:")
        })
        .map(|(pid, c)| format!("{pid}: {c}"))
        .collect()
}

fn wait_gone(marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_present(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with(marker).is_empty() {
        assert!(Instant::now() < deadline, "load '{marker}' never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn rtlab_load_runs_every_kind_and_reports_throughput_in_its_unit() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("loads.json");
    let out = rtlab()
        .args([
            "load",
            "cpu:workers=1",
            "cpu:variant=int",
            "memory:size=4M",
            "messaging:fds=2",
            "command:cmd=sleep 0.2",
        ])
        .arg(format!("io:block=64K,dir={}", dir.path().display()))
        .args(["-D", "1", "--json"])
        .arg(&json)
        .timeout(spawn_bound(Duration::from_secs(30)))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let loads = v["loads"].as_array().unwrap();
    let units: Vec<&str> = loads.iter().map(|l| l["unit"].as_str().unwrap()).collect();
    assert_eq!(units, ["terms", "iterations", "bytes", "messages", "starts", "bytes"]);
    for l in loads {
        assert!(l["ops"].as_u64().unwrap() > 0, "{l}");
    }
    assert!(loads[4]["ops"].as_u64().unwrap() >= 2, "a command that ends is restarted: {}", loads[4]);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("terms/s") && table.contains("messages/s"), "{table}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "the io load removed its files");
}

#[test]
fn run_with_loads_records_their_throughput_in_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    rtlab()
        .args([
            "run",
            "-t1",
            "-l",
            "300",
            "-q",
            "--load",
            "cpu:workers=1,policy=idle",
            "--load",
            "messaging:fds=2",
            "--json",
        ])
        .arg(&json)
        .timeout(spawn_bound(Duration::from_secs(30)))
        .assert()
        .success();
    let r = read_json(&json);
    assert_valid_run_result(&r);
    let loads = r["loads"].as_array().unwrap();
    assert_eq!(loads.len(), 2);
    assert_eq!(loads[0]["policy"], "idle");
    // SCHED_IDLE runs only when nothing else wants the CPU: on a busy machine it may do nothing
    // in 300 ms. Its rate is recorded all the same; the fair messaging load always progresses.
    assert!(loads[0]["rate_per_s"].as_f64().unwrap() >= 0.0);
    assert!(loads[1]["rate_per_s"].as_f64().unwrap() > 0.0, "{}", loads[1]);
}

#[test]
fn no_load_process_survives_sigint() {
    let marker = "sleep 987651";
    let child = Std::new(rtlab_path())
        .args([
            "run",
            "-t1",
            "-i",
            "1ms",
            "-q",
            "--load",
            &format!("command:cmd={marker}; true"),
            "--load",
            "cpu:mode=process,workers=2,nice=7",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_present(marker);
    wait_present("load-worker cpu:");
    Std::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(wait_gone(marker).is_empty(), "{:?}", processes_with(marker));
    assert!(wait_gone("nice=7").is_empty(), "{:?}", processes_with("nice=7"));
}

#[test]
fn a_command_that_leaves_its_session_does_not_outlive_the_run() {
    // setsid puts the sleeper in a new session and process group: a process-group kill misses it.
    let marker = "sleep 987653";
    let out = Std::new(rtlab_path())
        .args(["run", "-t1", "-i", "1ms", "-q", "-D", "1", "--load"])
        .arg(format!("command:cmd=setsid sh -c '{marker}' & {marker}"))
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(wait_gone(marker).is_empty(), "{:?}", processes_with(marker));
}

#[test]
fn no_load_process_survives_rtlab_being_killed() {
    let marker = "sleep 987652";
    let mut child = Std::new(rtlab_path())
        .args(["load", &format!("command:cmd={marker}; true"), "cpu:mode=process,workers=1,nice=6", "-D", "60"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_present(marker);
    wait_present("nice=6");
    child.kill().unwrap();
    let _ = child.wait();
    assert!(wait_gone(marker).is_empty(), "the parent-death signal stops the command: {:?}", processes_with(marker));
    assert!(wait_gone("nice=6").is_empty(), "{:?}", processes_with("nice=6"));
}

#[test]
fn no_load_process_survives_a_failing_run() {
    // --strict fails after the loads have started when RT scheduling is refused: run as nobody.
    use std::os::unix::fs::PermissionsExt;
    let marker = "sleep 987653";
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = dir.path().join("rtlab");
    std::fs::copy(rtlab_path(), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = if is_root() {
        let mut c = Std::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]).arg(&bin);
        c
    } else {
        Std::new(&bin)
    };
    let out = cmd
        .args(["run", "-t1", "-l", "100", "-q", "--strict", "--load", &format!("command:cmd={marker}")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(wait_gone(marker).is_empty(), "{:?}", processes_with(marker));
}

#[test]
fn bad_specs_and_axes_are_refused() {
    assert!(refused(&["load", "gpu", "-D", "1"]).contains("unknown load 'gpu'"));
    assert!(refused(&["load", "cpu"]).contains("--duration"), "loads never run unbounded");
    assert!(refused(&["run", "--load", "cpu:workers=x"]).contains("workers='x'"));
    assert!(refused(&["run", "-t1", "--load", "cpu:policy=fifo:10"]).contains("bounded run"));
    assert!(
        refused(&["run", "-t1", "-l", "100", "--load", "cpu:policy=fifo:10"]).contains("give -D"),
        "-l does not bound a starved probe"
    );
    assert!(refused(&["sweep", "--out", "/tmp/x", "--workers", "3..1", "-D", "1"]).contains("'3..1'"));
    assert!(refused(&["sweep", "--out", "/tmp/x", "--load-kind", "command", "-D", "1"]).contains("cannot be swept"));
    assert!(refused(&["sweep", "--out", "/tmp/x", "--probe-policy", "fifo:0", "-D", "1"]).contains("'0'"));
    assert!(refused(&["sweep", "--out", "/tmp/x", "--workers", "0..1"]).contains("-D"));
    assert!(refused(&["sweep", "--out", "/tmp/x", "--methods", "warp", "-D", "1"]).contains("'warp'"));
}

#[test]
fn a_real_short_sweep_has_one_row_per_point() {
    let dir = tempfile::tempdir().unwrap();
    let out = rtlab()
        .args(["sweep", "--out"])
        .arg(dir.path())
        .args(["--workers", "0..1", "-D", "1", "-t1", "-q"])
        .timeout(spawn_bound(Duration::from_secs(60)))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.path().join("sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "cpu_workers,min_latency_ms,max_latency_ms,mean_latency_ms,stdev_latency_ms,p99_latency_ms,p99.9_latency_ms,missed,load_throughput_per_s,load_unit,load_cpu_per_worker,max_drift_ms");
    assert_eq!(lines.len(), 3);
    assert!(lines[1].starts_with("0,") && lines[2].starts_with("1,"), "{csv}");
    assert!(lines.iter().skip(1).all(|l| l.split(',').count() == 12));
    let sweep: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("sweep.json")).unwrap()).unwrap();
    assert_eq!(sweep["schema"], "rtlab.sweep/1");
    assert_eq!(sweep["points"].as_array().unwrap().len(), 2);
    assert!(sweep["points"][0]["result"].get("environment").is_none(), "the environment is stored once");
    assert_eq!(sweep["points"][1]["result"]["loads"][0]["workers"], 1);
    let p1 = read_json(&dir.path().join("points/001-workers=1.json"));
    assert_valid_run_result(&p1);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("System: ") && stderr.contains("\nOptions: ") && stderr.contains("point 2/2 workers=1"),
        "{stderr}"
    );
}

fn sim_sweep(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let spec = samples_file(dir, "1000\n2000\n3000\n4000\n10000\n");
    rtlab()
        .args(["sweep", "--out"])
        .arg(dir.join("out"))
        .args(["-t1", "-q", "-i", "1ms", "-D", "1", "--simulate", &spec])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_simulated_sweep_writes_exact_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim_sweep(dir.path(), &["--methods", "abs,rel", "--workers", "0,2"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(dir.path().join("out/sweep.csv")).unwrap();
    // 1, 2, 3, 4, 10 µs: mean 4 µs, true stdev √10 µs, p99 = p99.9 = max; simulated points run
    // no load. Drift: the last wakeup's 10 µs for absolute sleeps, all five summed for relative.
    let row = "0.001000,0.010000,0.004000,0.003162,0.010000,0.010000,0,,,";
    assert_eq!(
        csv,
        format!("method,cpu_workers,min_latency_ms,max_latency_ms,mean_latency_ms,stdev_latency_ms,p99_latency_ms,p99.9_latency_ms,missed,load_throughput_per_s,load_unit,load_cpu_per_worker,max_drift_ms\nabs,0,{row},0.010000\nabs,2,{row},0.010000\nrel,0,{row},0.020000\nrel,2,{row},0.020000\n")
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), csv, "the table is printed too");
    let sweep: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/sweep.json")).unwrap()).unwrap();
    let p = &sweep["points"][3];
    assert_eq!(p["label"], "003-method=rel-workers=2");
    assert_eq!(p["axes"], serde_json::json!([["method", "rel"], ["workers", "2"]]));
    assert_eq!(p["result"]["config"]["method"], "rel");
    assert_eq!(p["result"]["all"]["cycles"], 5);
    assert_eq!(sweep["planned"], 4);
}

#[test]
fn resume_reruns_only_the_missing_points() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(sim_sweep(dir.path(), &["--workers", "0..2"]).status.code(), Some(0));
    std::fs::remove_file(dir.path().join("out/points/001-workers=1.json")).unwrap();
    let out = sim_sweep(dir.path(), &["--workers", "0..2", "--resume"]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.matches("kept from").count(), 2, "{err}");
    assert!(err.contains("point 2/3 workers=1 : max"), "{err}");
    assert!(dir.path().join("out/points/001-workers=1.json").exists());
    assert_eq!(std::fs::read_to_string(dir.path().join("out/sweep.csv")).unwrap().lines().count(), 4);
}

#[test]
fn rounds_interleave_the_points_flipping_the_order_and_compare_each_with_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim_sweep(dir.path(), &["--methods", "abs,rel,nanosleep", "--rounds", "4"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8(out.stderr).unwrap();
    let order: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("point ")?.split(" : ").next()?.split_once(' ').map(|(_, axes)| axes))
        .collect();
    let want: Vec<String> = [(1, ["abs", "rel", "nanosleep"]), (2, ["nanosleep", "rel", "abs"])]
        .iter()
        .chain(&[(3, ["abs", "rel", "nanosleep"]), (4, ["nanosleep", "rel", "abs"])])
        .flat_map(|(r, ms)| ms.iter().map(move |m| format!("method={m} round={r}")))
        .collect();
    assert_eq!(order, want, "A B C, C B A, …: {err}");
    assert!(err.contains("Points: 3 × 4 rounds, interleaved"), "{err}");
    assert!(err.contains("method=rel against method=abs (4 rounds):"), "{err}");
    let csv = std::fs::read_to_string(dir.path().join("out/sweep.csv")).unwrap();
    assert!(csv.starts_with("method,round,cpu_workers,") && csv.contains("\nnanosleep,2,0,"), "{csv}");
    assert_eq!(csv.lines().count(), 13);
    assert!(dir.path().join("out/points/002-method=nanosleep-round=4.json").is_file());
    let sweep: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/sweep.json")).unwrap()).unwrap();
    assert_eq!((sweep["rounds"].as_u64(), sweep["planned"].as_u64()), (Some(4), Some(12)));
    let c = sweep["comparisons"].as_array().unwrap();
    assert_eq!(c.len(), 2, "every point but the first against the first");
    assert_eq!(
        (c[0]["baseline"].as_str(), c[1]["label"].as_str()),
        (Some("000-method=abs"), Some("002-method=nanosleep"))
    );
    // Every run holds the same samples: each figure's ratio is exactly 1, its interval [1, 1].
    let p99 = c[1]["figures"].as_array().unwrap().iter().find(|f| f["figure"] == "p99").unwrap();
    assert_eq!(p99["a_ns"], serde_json::json!([10000.0, 10000.0, 10000.0, 10000.0]), "{p99}");
    assert_eq!(p99["b_ns"], p99["a_ns"]);
    assert_eq!((p99["ratio"].as_f64(), p99["low"].as_f64(), p99["high"].as_f64()), (Some(1.0), Some(1.0), Some(1.0)));
    assert_eq!(p99["verdict"], "no evidence");
    // One point alone has nothing to compare with.
    let again = tempfile::tempdir().unwrap();
    let out = sim_sweep(again.path(), &["--rounds", "3", "--methods", "abs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("this sweep has one point"));
}
