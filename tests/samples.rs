//! `rtlab run --samples FILE` and `rtlab samples FILE`.

mod common;
use common::*;
use std::time::Duration;

#[test]
fn simulated_samples_are_recorded_exactly_and_read_back_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let spec = samples_file(dir.path(), "1000\n2500000\n1000\n");
    let bin = dir.path().join("s.bin");
    rtlab().args(["run", "-q", "-i", "1ms", "--simulate", &spec, "--samples"]).arg(&bin).assert().success();
    let out = rtlab().arg("samples").arg(&bin).arg("--csv").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    // Wake times count from the schedule's start: 1 ms + 1 µs; 2 ms + 2.5 ms (two periods
    // missed, the schedule resumes at 5 ms); 5 ms + 1 µs.
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "thread,cycle,wake_ns,latency_ns\n0,0,1001000,1000\n0,1,4500000,2500000\n0,2,5001000,1000\n"
    );
}

#[test]
fn a_real_run_records_every_sample_or_counts_it_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (bin, json) = (dir.path().join("s.bin"), dir.path().join("r.json"));
    rtlab()
        .args(["run", "-t2", "-l", "400", "-i", "500us", "-q", "--samples"])
        .arg(&bin)
        .arg("--json")
        .arg(&json)
        .timeout(Duration::from_secs(30))
        .assert()
        .success();
    let r = read_json(&json);
    assert_valid_run_result(&r);
    let csv = String::from_utf8(rtlab().arg("samples").arg(&bin).arg("--csv").output().unwrap().stdout).unwrap();
    for t in r["threads"].as_array().unwrap() {
        let id = t["thread"].as_u64().unwrap().to_string();
        let rows: Vec<u64> = csv
            .lines()
            .skip(1)
            .filter(|l| l.split(',').next() == Some(&id))
            .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
            .collect();
        let lost = t["samples_lost"].as_u64().unwrap();
        assert_eq!(rows.len() as u64 + lost, t["cycles"].as_u64().unwrap());
        // 800 samples in 0.2 s never fill a 65 536-sample ring: a loss here is a bug.
        assert_eq!(lost, 0, "thread {id} lost samples at 2 kHz");
        assert_eq!(rows, (0..400).collect::<Vec<u64>>(), "every cycle, in order");
    }
    let summary = String::from_utf8(rtlab().arg("samples").arg(&bin).output().unwrap().stdout).unwrap();
    assert!(summary.contains("800 samples of 2 threads"), "{summary}");
}

#[test]
fn sigint_still_finishes_the_samples_file() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("s.bin");
    let child = std::process::Command::new(rtlab_path())
        .args(["run", "-t1", "-i", "1ms", "-q", "--samples"])
        .arg(&bin)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
    let s = String::from_utf8(rtlab().arg("samples").arg(&bin).output().unwrap().stdout).unwrap();
    assert!(s.contains("thread 0:") && !s.contains("no end record"), "{s}");
}

#[test]
fn files_that_are_not_samples_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.bin");
    std::fs::write(&p, b"hello").unwrap();
    let out = rtlab().arg("samples").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an rtlab samples file"));
    let out = rtlab().args(["run", "-l", "5", "--samples", "/nonexistent-dir/s.bin"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
