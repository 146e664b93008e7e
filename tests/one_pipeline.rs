//! Every probe through the one pipeline: tokio and the Erlang VM get sweeps, the samples
//! file, the live table (SIGUSR1) and checkpoints exactly as OS threads do, and `rtlab beam
//! run|sweep` are aliases of `rtlab run|sweep --runtime beam`.

mod common;

use common::{assert_valid_run_result, fake_erl, read_json, real_erl, rtlab, rtlab_path};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

const FOUR: &str =
    "for i in 1 2 3 4; do echo \"S $(( (w+1)*i*1000 )) $((i*1000000)) 0\"; done\necho \"E 4 $((w*1000))\"";

/// The samples file's header (JSON after the magic and its length).
fn samples_header(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"RTLSMP01");
    let len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    serde_json::from_slice(&bytes[12..12 + len]).unwrap()
}

/// `rtlab samples FILE --csv` as (wake_ns, latency_ns) rows.
fn samples_rows(path: &Path) -> Vec<(i64, i64)> {
    let o = rtlab().arg("samples").arg(path).arg("--csv").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2].parse().unwrap(), f[3].parse().unwrap())
        })
        .collect()
}

/// What two results of the same deterministic stream must share (times, the command line and
/// throughputs differ).
fn measured(v: &Value) -> Value {
    let loads: Vec<Value> = v["loads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| serde_json::json!([l["spec"], l["kind"], l["ops"], l["policy"]]))
        .collect();
    let mut verdict = v["verdict"].clone();
    verdict.as_object_mut().unwrap().remove("message");
    let mut threads = v["threads"].clone();
    let mut all = v["all"].clone();
    for s in threads.as_array_mut().unwrap().iter_mut().chain(std::iter::once(&mut all)) {
        s.as_object_mut().unwrap().remove("max_at_time");
        // Which second a sample was read in depends on the wall clock, like the time above.
        s.as_object_mut().unwrap().remove("series");
        // So does a rate per hour: the exceedances' counts are compared, not their rate.
        if let Some(x) = s.get_mut("exceedances").and_then(Value::as_object_mut) {
            x.remove("rate");
        }
    }
    serde_json::json!({
        "threads": threads, "all": all, "verdict": verdict, "runtime": v["runtime"],
        "warnings": without_machine_setup(&v["warnings"]), "config": v["config"], "end_reason": v["end_reason"], "loads": loads,
    })
}

/// The warnings without the doctor's alarms, which tell the machine's moment, not the probe.
fn without_machine_setup(warnings: &Value) -> Value {
    warnings.as_array().unwrap().iter().filter(|w| w["kind"] != "machine_setup").cloned().collect()
}

/// `text` with every RFC 3339 time (`2026-11-23T00:48:03.627030Z`) replaced by `<time>`.
fn mask_times(text: &str) -> String {
    let b = text.as_bytes();
    let is_date = |i: usize| {
        i + 11 <= b.len()
            && b[i..i + 4].iter().all(u8::is_ascii_digit)
            && b[i + 4] == b'-'
            && b[i + 7] == b'-'
            && b[i + 10] == b'T'
    };
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if is_date(i) {
            let end = text[i..].find('Z').map_or(b.len(), |z| i + z + 1);
            out += "<time>";
            i = end;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

#[test]
fn beam_run_is_an_alias_of_run_with_the_beam_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let erl = fake_erl(dir.path(), "erl", FOUR);
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let alias = rtlab()
        .args(["beam", "run", "--workers", "1", "--period", "2", "-D", "1s", "--max-latency", "5us", "--erl"])
        .arg(&erl)
        .arg("--json")
        .arg(&a)
        .output()
        .unwrap();
    let run = rtlab()
        .args(["run", "--runtime", "beam", "--beam-workers", "1", "-i", "2ms", "-D", "1s", "--max-latency", "5us"])
        .arg("--erl")
        .arg(&erl)
        .arg("--json")
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(alias.status.code(), Some(3), "{}", String::from_utf8_lossy(&alias.stderr));
    assert_eq!(run.status.code(), alias.status.code());
    let (va, vb) = (read_json(&a), read_json(&b));
    assert_valid_run_result(&vb);
    assert_eq!(measured(&va), measured(&vb));
    assert_eq!(vb["threads"][0]["max_ns"], 8000, "the stream's exact maximum");
    assert_eq!(vb["runtime"]["period_ns"], 2_000_000);
    // The summary is the same up to the loads' throughput, which depends on the elapsed time.
    let until_loads = |o: &std::process::Output| {
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        // Without the exceedances' rate, which is per hour of the run's own duration.
        let lines = text.lines().take_while(|l| !l.starts_with("load ")).filter(|l| !l.starts_with("above "));
        mask_times(&lines.collect::<Vec<_>>().join("\n"))
    };
    assert_eq!(until_loads(&alias), until_loads(&run));
    assert!(until_loads(&run).starts_with("Erlang/OTP 99 [fake]"), "{}", until_loads(&run));
    // The doctor's alarms tell the machine's moment (an IRQ rate), not the probe.
    let said = |o: &std::process::Output| {
        let text = String::from_utf8_lossy(&o.stderr).into_owned();
        text.lines().filter(|l| !l.starts_with("rtlab: warning: doctor: ")).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(said(&alias), said(&run));
}

#[test]
fn a_beam_run_streams_every_sample_into_the_samples_file_with_its_process_identity() {
    let dir = tempfile::tempdir().unwrap();
    let erl = fake_erl(dir.path(), "erl", FOUR);
    let smp = dir.path().join("b.smp");
    rtlab()
        .args(["run", "--runtime", "beam", "-i", "1ms", "-D", "1s", "--erl"])
        .arg(&erl)
        .arg("--samples")
        .arg(&smp)
        .assert()
        .success();
    assert_eq!(samples_rows(&smp), vec![(1_000_000, 1000), (2_000_000, 2000), (3_000_000, 3000), (4_000_000, 4000)]);
    assert_eq!(samples_header(&smp)["threads"][0]["identity"], "erlang process (pid not reported)");

    // The real VM names its measuring process.
    let real = dir.path().join("real.smp");
    let json = dir.path().join("real.json");
    rtlab()
        .args(["run", "--runtime", "beam", "-i", "1ms", "-D", "1s", "--erl"])
        .arg(real_erl())
        .arg("--samples")
        .arg(&real)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let identity = samples_header(&real)["threads"][0]["identity"].as_str().unwrap().to_string();
    assert!(identity.starts_with("erlang process <0."), "{identity}");
    let v = read_json(&json);
    assert_eq!(samples_rows(&real).len() as u64, v["all"]["cycles"].as_u64().unwrap(), "every sample is in the file");
    assert_eq!(v["threads"][0]["samples_lost"], 0);
}

#[test]
fn a_tokio_run_streams_every_sample_into_the_samples_file_with_its_task_identity() {
    let dir = tempfile::tempdir().unwrap();
    let (smp, json) = (dir.path().join("t.smp"), dir.path().join("t.json"));
    rtlab()
        .args(["run", "--runtime", "tokio", "-l", "30", "-i", "2ms", "--samples"])
        .arg(&smp)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let v = read_json(&json);
    assert_valid_run_result(&v);
    let rows = samples_rows(&smp);
    assert_eq!(rows.len(), 30);
    assert_eq!(v["all"]["cycles"], 30);
    assert_eq!(rows.iter().map(|r| r.1).max(), v["all"]["max_ns"].as_i64(), "the file holds the run's samples");
    let identity = samples_header(&smp)["threads"][0]["identity"].as_str().unwrap().to_string();
    assert!(identity.starts_with("tokio task "), "{identity}");
}

#[test]
fn a_tokio_sweep_writes_the_same_files_as_an_os_sweep_with_the_workers_axis_inside_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sw");
    let o = rtlab()
        .args(["sweep", "--runtime", "tokio", "--workers", "0,1", "-l", "20", "-i", "2ms", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout), csv, "stdout is sweep.csv, as for OS threads");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.lines().next().unwrap().starts_with("cpu_workers,"), "RealtimeTests' column: {csv}");
    let sweep = read_json(&out.join("sweep.json"));
    assert_eq!(sweep["schema"], "rtlab.sweep/1");
    assert_eq!(sweep["points"].as_array().unwrap().len(), 2);
    for (i, w) in [(0, 0), (1, 1)] {
        let name = format!("{i:03}-workers={w}.json");
        let v = read_json(&out.join("points").join(&name));
        assert_valid_run_result(&v);
        assert_eq!(v["runtime"]["kind"], "tokio", "{name}");
        assert_eq!(v["runtime"]["workers"], w, "{name}: the axis sets the tokio hogs");
        assert_eq!(v["all"]["cycles"], 20, "{name}");
        assert!(v["loads"].as_array().unwrap().iter().all(|l| l["kind"] != "cpu"), "no OS load was added");
    }
    rtlab().arg("plot").arg(&out).arg("-o").arg(dir.path().join("s.svg")).assert().success();
}

#[test]
fn a_beam_sweep_writes_the_same_files_as_beam_sweep_and_an_os_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let erl = fake_erl(dir.path(), "erl", FOUR);
    let (a, b) = (dir.path().join("alias"), dir.path().join("run"));
    let alias = rtlab()
        .args(["beam", "sweep", "--workers", "0..2", "-D", "1s", "--erl"])
        .arg(&erl)
        .arg("--out")
        .arg(&a)
        .output()
        .unwrap();
    assert!(alias.status.success(), "{}", String::from_utf8_lossy(&alias.stderr));
    let o = rtlab()
        .args(["sweep", "--runtime", "beam", "--workers", "0..2", "-D", "1s", "-i", "1ms", "--erl"])
        .arg(&erl)
        .arg("--out")
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The rows' figures are exact (the throughput column depends on the elapsed time).
    let figures = |dir: &Path| -> Vec<String> {
        std::fs::read_to_string(dir.join("sweep.csv"))
            .unwrap()
            .lines()
            .map(|l| l.split(',').take(8).collect::<Vec<_>>().join(","))
            .collect()
    };
    assert_eq!(figures(&a), figures(&b));
    assert_eq!(figures(&b).len(), 4);
    assert!(figures(&b)[1].starts_with("0,0.001000,0.004000"), "{:?}", figures(&b));
    for dir in [&a, &b] {
        let names: Vec<String> = std::fs::read_dir(dir.join("points"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3);
        assert_eq!(read_json(&dir.join("sweep.json"))["points"].as_array().unwrap().len(), 3);
    }
    // The alias keeps RealtimeTests' printout; `rtlab sweep` prints sweep.csv.
    assert!(String::from_utf8_lossy(&alias.stdout).starts_with("System: Erlang/OTP 99 [fake]\n"));
    assert_eq!(String::from_utf8_lossy(&o.stdout), std::fs::read_to_string(b.join("sweep.csv")).unwrap());
}

#[test]
fn sweep_axes_that_only_mean_something_for_os_threads_are_refused_for_runtimes() {
    for bad in [
        vec!["sweep", "--runtime", "tokio", "--methods", "abs,rel", "-l", "5", "--out", "/tmp/never"],
        vec!["sweep", "--runtime", "tokio", "--probe-policy", "fifo:90,other", "-l", "5", "--out", "/tmp/never"],
        vec!["sweep", "--runtime", "beam", "--probe-policy", "other", "-D", "1s", "--out", "/tmp/never"],
        vec!["sweep", "--runtime", "tokio", "--workers", "0,1", "--tokio-hogs", "2", "-l", "5", "--out", "/tmp/never"],
        vec!["run", "--runtime", "beam", "-i", "1500us", "-D", "1s"],
        vec!["run", "--runtime", "beam", "-l", "5"],
        vec!["run", "--beam-workers", "2", "-l", "5"],
    ] {
        let err = common::refused(&bad);
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
    assert!(!Path::new("/tmp/never").exists());
}

/// Runs `args` for a while, asks for the live table with SIGUSR1 after `after` and then every
/// half second until the run ends (a runtime that starts slowly on a busy machine has its
/// samples in a later table), and returns stderr.
fn status_table(args: &[&str], after: Duration) -> String {
    let mut child = std::process::Command::new(rtlab_path())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    while child.try_wait().unwrap().is_none() {
        let _ = std::process::Command::new("kill").args(["-USR1", &child.id().to_string()]).status();
        std::thread::sleep(Duration::from_millis(500));
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_live_table_shows_a_runtime_probe_on_request() {
    for (args, after) in [
        (vec!["run", "--runtime", "tokio", "-D", "3s", "-i", "1ms", "-q"], Duration::from_millis(1500)),
        (vec!["run", "--runtime", "beam", "-D", "4s", "-i", "1ms", "-q"], Duration::from_millis(3000)),
    ] {
        let err = status_table(&args, after);
        // The tables printed: each a `rtlab: …` line, its header, and a row per thread.
        let lines: Vec<&str> = err.lines().collect();
        let tables: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with("rtlab: ") && !lines[i].starts_with("rtlab: warning"))
            .filter(|&i| {
                lines.get(i + 1).is_some_and(|h| h.split_whitespace().take(4).eq(["thread", "cpu", "policy", "cycles"]))
            })
            .collect();
        assert!(!tables.is_empty(), "{args:?}: no live table in {err}");
        let row: Vec<&str> = lines[tables[tables.len() - 1] + 2].split_whitespace().collect();
        assert_eq!(row[0], "0", "{args:?}: {err}");
        assert!(row[3].parse::<u64>().unwrap() > 0, "{args:?}: the probe had recorded samples: {err}");
    }
}

#[test]
fn a_tokio_run_writes_checkpoints_of_its_json_while_it_measures() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let mut child = std::process::Command::new(rtlab_path())
        .args(["run", "--runtime", "tokio", "-D", "6s", "-i", "1ms", "--checkpoint", "3s", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    let checkpoint = loop {
        if let Ok(text) = std::fs::read_to_string(&json) {
            break serde_json::from_str::<Value>(&text).unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(6), "no checkpoint within 6 s");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_valid_run_result(&checkpoint);
    assert_eq!(checkpoint["end_reason"], "checkpoint");
    assert_eq!(checkpoint["runtime"]["kind"], "tokio");
    assert!(checkpoint["all"]["cycles"].as_u64().unwrap() > 0);
    assert!(child.wait().unwrap().success());
    let v = read_json(&json);
    assert_eq!(v["end_reason"], "duration");
    assert!(v["all"]["cycles"].as_u64() > checkpoint["all"]["cycles"].as_u64());
}

#[test]
fn a_runtime_sweep_resumes_only_with_the_same_probe() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sw");
    let sweep = |interval: &str| {
        rtlab()
            .args(["sweep", "--runtime", "tokio", "--workers", "0", "-l", "5", "-i", interval, "--resume", "--out"])
            .arg(&out)
            .output()
            .unwrap()
    };
    assert!(sweep("2ms").status.success());
    let again = sweep("2ms");
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("kept from"), "the done point is kept");
    let other = sweep("3ms");
    assert_eq!(other.status.code(), Some(2));
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(err.contains("another probe") && err.contains("3000000 ns"), "{err}");
}

#[test]
fn a_vm_that_dies_before_its_probe_starts_is_a_failed_run_with_a_result() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let erl = dir.path().join("erl");
    std::fs::write(&erl, "#!/bin/sh\necho 'V Erlang/OTP 99 [fake]'\necho 'no probe here' >&2\nexit 7\n").unwrap();
    std::fs::set_permissions(&erl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let json = dir.path().join("r.json");
    let o = rtlab()
        .args(["run", "--runtime", "beam", "-i", "1ms", "-D", "1s", "--erl"])
        .arg(&erl)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("exit code 7") && err.contains("no probe here"), "{err}");
    let v = read_json(&json);
    assert_valid_run_result(&v);
    assert_eq!(v["end_reason"], "failed");
    assert_eq!(v["all"]["cycles"], 0);
}
