//! `rtlab beam`: the protocol pipeline end to end with a scripted stand-in for `erl` (exact
//! figures, broken streams), and real runs of Debian's erlang-nox (installed by .ci/run).

mod common;

use common::{assert_broken_run, assert_valid_run_result, fake_erl, read_json, real_erl, rtlab, rtlab_path};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const FOUR: &str =
    "for i in 1 2 3 4; do echo \"S $(( (w+1)*i*1000 )) $((i*1000000)) 0\"; done\necho \"E 4 $((w*1000))\"";

#[test]
fn a_scripted_stream_gives_exact_statistics_and_a_valid_result() {
    let dir = tempfile::tempdir().unwrap();
    let erl = fake_erl(dir.path(), "erl", FOUR);
    let json = dir.path().join("b.json");
    rtlab()
        .args(["beam", "run", "--workers", "1", "-D", "1s", "--erl"])
        .arg(&erl)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let v = read_json(&json);
    assert_valid_run_result(&v);
    let t = &v["threads"][0];
    assert_eq!((t["cycles"].as_u64(), t["min_ns"].as_i64(), t["max_ns"].as_i64()), (Some(4), Some(2000), Some(8000)));
    assert_eq!(t["mean_ns"].as_f64(), Some(5000.0));
    assert_eq!(v["runtime"]["kind"], "beam");
    assert_eq!(v["runtime"]["version"], "Erlang/OTP 99 [fake]");
    assert_eq!(v["runtime"]["timer_granularity_ns"], 1_000_000);
    assert_eq!(v["loads"][0]["ops"], 1000);
    assert_eq!(v["end_reason"], "duration");
    assert!(v["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "timer_granularity"));
}

#[test]
fn a_scripted_sweep_writes_realtime_tests_printout_and_exact_csv() {
    let dir = tempfile::tempdir().unwrap();
    let erl = fake_erl(dir.path(), "erl", FOUR);
    let out = dir.path().join("sw");
    let o = rtlab()
        .args(["beam", "sweep", "--workers", "0..2", "-D", "1s", "--erl"])
        .arg(&erl)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "System: Erlang/OTP 99 [fake]");
    assert_eq!(lines[1], "Architecture: fake-arch");
    assert!(lines[2]
        .starts_with("Input options: [workers: [0, 1, 2], duration_ms: 1000, period_ms: 1, method: send-interval"));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert_eq!(stdout.lines().skip(3).collect::<Vec<_>>(), csv.lines().collect::<Vec<_>>());
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        &rows[0][..8],
        &[
            "cpu_workers",
            "min_latency_ms",
            "max_latency_ms",
            "mean_latency_ms",
            "stdev_latency_ms",
            "p99_latency_ms",
            "p99.9_latency_ms",
            "missed"
        ]
    );
    // Latencies (w+1)·{1,2,3,4} µs: true stdev (w+1)·1.118034 µs, not the RMS (w+1)·2.738613.
    assert_eq!(&rows[1][..8], &["0", "0.001000", "0.004000", "0.002500", "0.001118", "0.004000", "0.004000", "0"]);
    assert_eq!(&rows[3][..8], &["2", "0.003000", "0.012000", "0.007500", "0.003354", "0.012000", "0.012000", "0"]);
    assert_eq!((rows[1][9], rows[2][9]), ("", "terms"));
    assert_eq!(std::fs::read_dir(out.join("points")).unwrap().count(), 3);
    let sweep = read_json(&out.join("sweep.json"));
    assert_eq!(sweep["points"].as_array().unwrap().len(), 3);
    // The same picture and report machinery reads it.
    rtlab().arg("plot").arg(&out).arg("-o").arg(dir.path().join("s.svg")).assert().success();
}

#[test]
fn a_broken_stream_ends_the_run_with_an_error_and_keeps_what_arrived() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "crash",
            "echo 'S 1000 1000 0'\necho 'S 2000 2000 0'\nkill -9 $$",
            "exited (killed by signal 9) after 2 samples",
        ),
        ("garbage", "echo 'S 1000 1000 0'\necho 'S x 2 3'", "unexpected line from the Erlang probe: 'S x 2 3'"),
        ("short", "echo 'S 1000 1000 0'\necho 'E 5 0'", "says it sent 5 samples, 1 arrived"),
        ("exit", "echo 'S 1000 1000 0'\nexit 0", "exited (exit code 0) after 1 sample;"),
    ];
    for (name, body, expect) in cases {
        let erl = fake_erl(dir.path(), name, body);
        let json = dir.path().join(format!("{name}.json"));
        let args = ["beam".as_ref(), "run".as_ref(), "-D".as_ref(), "1s".as_ref(), "--erl".as_ref(), erl.as_os_str()];
        assert_broken_run(name, &args, &json, expect);
    }
}

#[test]
fn without_erl_the_error_says_how_to_get_one() {
    let o = rtlab().args(["beam", "run", "-D", "1s"]).env("PATH", "/nonexistent").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("erlang-nox") && err.contains("--erl"), "{err}");
    assert_eq!(err.trim().lines().count(), 1);
    let o = rtlab().args(["beam", "run", "--erl", "/nonexistent/erl"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    for bad in [
        vec!["--period", "0"],
        vec!["--period", "0.5"],
        vec!["--vm-args", "-eval x"],
        vec!["--worker-priority", "urgent"],
    ] {
        let o = rtlab().args(["beam", "run"]).args(&bad).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn a_real_vm_gets_its_flags_and_priorities_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("b.json");
    rtlab()
        .args(["beam", "run", "-D", "1s", "--method", "abs-timer", "--workers", "1", "--worker-priority", "low"])
        .args(["--probe-priority", "high", "--vm-args", "+S 1 +sbt u", "--erl"])
        .arg(real_erl())
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let v = read_json(&json);
    assert_valid_run_result(&v);
    let rt = &v["runtime"];
    assert_eq!((rt["schedulers"].as_u64(), rt["schedulers_online"].as_u64()), (Some(1), Some(1)));
    assert_eq!((rt["probe_priority"].as_str(), rt["worker_priority"].as_str()), (Some("high"), Some("low")));
    assert_eq!(rt["scheduler_bind_type"], "unbound");
    assert_eq!(rt["vm_args"], serde_json::json!(["+S", "1", "+sbt", "u"]));
    assert!(rt["version"].as_str().unwrap().starts_with("Erlang/OTP"));
    assert!(v["all"]["cycles"].as_u64().unwrap() >= 1, "the probe always records its first wakeup");
    assert!(v["loads"][0]["ops"].as_u64().unwrap() > 0, "the worker computed pi terms");
}

#[test]
fn every_method_measures_in_a_real_vm_and_a_real_sweep_writes_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    for m in ["send-interval", "abs-timer", "receive-after"] {
        let json = dir.path().join(format!("{m}.json"));
        let smp = dir.path().join(format!("{m}.smp"));
        rtlab()
            .args(["beam", "run", "-D", "1s", "--method", m, "--erl"])
            .arg(real_erl())
            .arg("--json")
            .arg(&json)
            .arg("--samples")
            .arg(&smp)
            .assert()
            .success();
        let v = read_json(&json);
        assert_eq!(v["runtime"]["method"], m);
        let n = v["all"]["cycles"].as_u64().unwrap();
        assert!(n >= 1, "{m}: {n} samples");
        let o = rtlab().arg("samples").arg(&smp).output().unwrap();
        assert!(
            String::from_utf8_lossy(&o.stdout)
                .contains(&format!("{n} sample{} of 1 thread,", if n == 1 { "" } else { "s" })),
            "{m}"
        );
    }
    let out = dir.path().join("sw");
    let o = rtlab()
        .args(["beam", "sweep", "--workers", "0..2", "-D", "1s", "--erl"])
        .arg(real_erl())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let first: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(first, vec!["0", "1", "2"]);
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(stdout.starts_with("System: Erlang/OTP"));
    assert!(stdout.lines().nth(1).unwrap().starts_with("Architecture: "));
}

fn children_of(pid: u32) -> Vec<u32> {
    let out = std::process::Command::new("pgrep").args(["-P", &pid.to_string()]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse().ok()).collect()
}

fn group_alive(pgid: u32) -> bool {
    let out = std::process::Command::new("pgrep").args(["-g", &pgid.to_string()]).output().unwrap();
    out.status.success()
}

fn wait_exit(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(t.elapsed() < limit, "rtlab did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts a 30 s real beam run and returns it with the VM's pid once the VM is up.
fn start_long_run(json: &Path) -> (std::process::Child, u32) {
    let child = std::process::Command::new(rtlab_path())
        .args(["beam", "run", "-D", "30s", "--workers", "1", "--erl"])
        .arg(real_erl())
        .arg("--json")
        .arg(json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let vm = loop {
        if let Some(&vm) = children_of(child.id()).first() {
            break vm;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no VM started");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(2500));
    (child, vm)
}

#[test]
fn a_vm_killed_mid_run_is_an_error_with_partial_results_and_no_orphan() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("k.json");
    let (mut child, vm) = start_long_run(&json);
    std::process::Command::new("kill").args(["-9", &vm.to_string()]).status().unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(10));
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("the Erlang VM exited (killed by signal 9)") && err.contains("the results so far are in"),
        "{err}"
    );
    // What arrived before the kill is kept (how much depends on the machine's load; the
    // scripted crash test checks the exact count).
    let v = read_json(&json);
    assert_valid_run_result(&v);
    assert_eq!(v["end_reason"], "failed");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!group_alive(vm), "a process of the VM's group survived");
}

#[test]
fn ctrl_c_stops_the_vm_and_writes_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("i.json");
    let (mut child, vm) = start_long_run(&json);
    std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
    let v = read_json(&json);
    assert_valid_run_result(&v);
    assert_eq!(v["end_reason"], "signal");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!group_alive(vm), "the VM survived Ctrl-C");
}

#[test]
fn the_erlang_probe_counts_missed_periods_by_rtlabs_one_rule_and_stamps_receive_after_before_waiting() {
    let erl = real_erl();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("rtlab_probe.erl");
    let source = include_str!("../src/probes/rtlab_probe.erl");
    std::fs::write(&src, source).unwrap();
    let p = 1_000_000i64;
    let cases = [(-5, 0), (0, 0), (p, 0), (p + 1, 1), (2 * p - 1, 1), (2 * p, 1), (2 * p + 1, 2)];
    let calls: Vec<String> = cases.iter().map(|(lat, _)| format!("rtlab_probe:missed({lat}, {p})")).collect();
    let eval = format!(
        "{{ok, _}} = compile:file(\"{}\", [{{outdir, \"{}\"}}]), code:add_patha(\"{}\"), io:format(\"~w~n\", [[{}]]), halt().",
        src.display(),
        dir.path().display(),
        dir.path().display(),
        calls.join(", ")
    );
    let out = Command::new(&erl).args(["-noshell", "-eval", &eval]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let want: Vec<String> = cases.iter().map(|(_, m)| m.to_string()).collect();
    assert_eq!(text.trim(), format!("[{}]", want.join(",")), "{}", String::from_utf8_lossy(&out.stderr));
    // receive-after: the stamp is taken right before the wait, so recording is no latency.
    let body = &source[source.find("receive_after(S = ").unwrap()..];
    let (stamp, wait) = (body.find("Before = mono()").unwrap(), body.find("receive after PeriodMs").unwrap());
    assert!(stamp < wait && body.contains("Lat = Now - (Before + P)"), "{body}");
}
