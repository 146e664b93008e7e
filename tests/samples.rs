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
        .timeout(spawn_bound(Duration::from_secs(30)))
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

#[test]
fn a_trailer_too_large_or_not_matching_the_threads_is_refused() {
    use rtlab::export::samples::{header_bytes, push_record, trailer_bytes, Header, Record, ThreadInfo, Trailer};
    let dir = tempfile::tempdir().unwrap();
    let header = Header {
        schema: "rtlab.samples/1".into(),
        clock: "monotonic".into(),
        start_time: "2026-11-23T00:00:00Z".into(),
        threads: vec![ThreadInfo {
            thread: 0,
            cpu: Some(0),
            interval_ns: 1_000_000,
            identity: None,
            name: None,
            deadline_ns: None,
        }],
    };
    let write = |name: &str, trailer: &[u8]| {
        let mut b = header_bytes(&header);
        push_record(&mut b, &Record { thread: 0, cycle: 0, wake_ns: 1_000, latency_ns: 5_000, response_ns: None });
        b.extend_from_slice(trailer);
        let p = dir.path().join(name);
        std::fs::write(&p, b).unwrap();
        p
    };
    // The lost counts of 100 000 threads for a file of one.
    let p = write("lost.smp", &trailer_bytes(&Trailer { records: 1, lost: vec![0; 100_000], threads: vec![] }));
    let out = rtlab().arg("samples").arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the trailer counts lost samples for 100000 threads, but the header has 1"), "{err}");
    // An end record that announces a 512 MiB trailer.
    let mut end = Vec::new();
    push_record(&mut end, &Record { thread: 0xFFFF, cycle: 512 << 20, wake_ns: 0, latency_ns: 0, response_ns: None });
    let p = write("big.smp", &end);
    let out = rtlab().arg("samples").arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the trailer claims 536870912 bytes"), "{err}");
}

#[test]
fn an_import_of_more_threads_than_cyclictest_runs_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.txt");
    std::fs::write(
        &p,
        "T: 0 ( 100) P:95 I:1000 C:   10 Min:      1 Act:    2 Avg:    2 Max:       5\n\
         T:5000 ( 101) P:95 I:1000 C:   10 Min:      1 Act:    2 Avg:    2 Max:       5\n",
    )
    .unwrap();
    let out = rtlab().arg("show").arg(&p).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("thread 5000: cyclictest runs at most 4096 threads"), "{err}");
}

#[test]
fn a_samples_file_of_4096_threads_makes_a_report_of_bounded_size() {
    use rtlab::export::samples::{header_bytes, push_record, trailer_bytes, Header, Record, ThreadInfo, Trailer};
    let dir = tempfile::tempdir().unwrap();
    let n = 4096;
    let header = Header {
        schema: "rtlab.samples/1".into(),
        clock: "monotonic".into(),
        start_time: "2026-11-23T00:00:00Z".into(),
        threads: (0..n)
            .map(|t| ThreadInfo {
                thread: t,
                cpu: Some(t % 2),
                interval_ns: 1_000_000,
                identity: None,
                name: None,
                deadline_ns: None,
            })
            .collect(),
    };
    let mut b = header_bytes(&header);
    for c in 0..3u64 {
        for t in 0..n {
            push_record(
                &mut b,
                &Record {
                    thread: t as u16,
                    cycle: c,
                    wake_ns: (c as i64 + 1) * 1_000_000,
                    latency_ns: 5_000 + t as i64,
                    response_ns: None,
                },
            );
        }
    }
    b.extend_from_slice(&trailer_bytes(&Trailer { records: 3 * n as u64, lost: vec![0; n], threads: vec![] }));
    let smp = dir.path().join("many.smp");
    std::fs::write(&smp, b).unwrap();
    let html = dir.path().join("r.html");
    let out = rtlab().arg("report").arg(&smp).arg("-o").arg(&html).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let size = std::fs::metadata(&html).unwrap().len();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("4096 threads: the pictures draw them together"), "said so");
    assert!(size < 10 << 20, "the report of 4096 threads is {size} bytes");
    // SAFETY: getrusage fills a plain struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    eprintln!("report: {} KiB of HTML, children's peak RSS {} MiB", size >> 10, ru.ru_maxrss >> 10);
    assert!(
        ru.ru_maxrss < 512 << 10,
        "peak RSS {} KiB (the histograms of a samples file are sized to its samples)",
        ru.ru_maxrss
    );
}
