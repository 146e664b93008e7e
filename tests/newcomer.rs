//! What a new user meets: warnings on stderr (results alone on stdout), every input kind
//! readable by every command that reads results, a closed pipe that ends quietly, help that
//! points to the right place, completions and man pages.

mod common;

use common::{rtlab, rtlab_path, samples_file};
use std::process::Stdio;

#[test]
fn warnings_go_to_stderr_and_the_results_alone_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    // A 1.5 ms wakeup at a 1 ms period misses one period: a warning known at the end.
    let sim = samples_file(dir.path(), "1000\n1500000\n1000\n");
    let o = rtlab().args(["run", "-q", "--simulate", &sim, "-l", "3"]).output().unwrap();
    assert!(o.status.success());
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!out.contains("warning"), "stdout holds only results: {out}");
    assert!(err.contains("rtlab: warning: 1 period was missed"), "one period, in the singular, on stderr: {err}");
    // A setup downgrade is printed before the first sample: it reaches stderr while the run goes on.
    let (mut cmd, _guard) = common::unprivileged("rtlab");
    let mut child = cmd
        .args(["run", "-q", "-t", "1", "-D", "3s", "--no-mlockall", "--no-dma-latency"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = std::io::BufReader::new(child.stderr.take().unwrap());
    let started = std::time::Instant::now();
    let mut seen = Vec::new();
    let mut early = None;
    for line in std::io::BufRead::lines(err) {
        let line = line.unwrap();
        if early.is_none() && line.starts_with("rtlab: warning: thread 0 could not get SCHED") {
            early = Some(started.elapsed());
        }
        seen.push(line);
    }
    let _ = child.wait();
    let early = early.unwrap_or_else(|| panic!("no downgrade warning: {seen:?}"));
    assert!(seen.iter().all(|l| l.starts_with("rtlab: warning: ")), "{seen:?}");
    assert!(early < std::time::Duration::from_millis(2500), "printed when known, not after the run ({early:?})");
}

#[test]
fn show_reads_every_input_kind() {
    let dir = tempfile::tempdir().unwrap();
    let sim = samples_file(dir.path(), "1000\n2000\n3000\n");
    let (json, smp, sweep) = (dir.path().join("r.json"), dir.path().join("r.smp"), dir.path().join("sw"));
    rtlab().args(["run", "-q", "--simulate", &sim, "--json"]).arg(&json).arg("--samples").arg(&smp).assert().success();
    rtlab()
        .args(["sweep", "--methods", "abs,rel", "-l", "3", "--simulate", &sim, "--out"])
        .arg(&sweep)
        .assert()
        .success();
    let fixture = format!("{}/tests/fixtures/cyclictest", env!("CARGO_MANIFEST_DIR"));
    let cyclictest: Vec<String> = std::fs::read_dir(&fixture)
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .filter(|p| p.contains("cyclictest") && (p.ends_with(".json") || p.ends_with(".txt")))
        .take(3)
        .collect();
    assert!(!cyclictest.is_empty(), "no cyclictest fixture in {fixture}");
    let mut inputs: Vec<String> = vec![
        json.display().to_string(),
        smp.display().to_string(),
        sweep.display().to_string(),
        sweep.join("sweep.json").display().to_string(),
    ];
    inputs.extend(cyclictest);
    for input in &inputs {
        let o = rtlab().args(["show", input]).output().unwrap();
        assert!(o.status.success(), "show {input}: {}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains("cycles"), "show {input}: {out}");
    }
    // Import reads what show reads; a sweep says where its runs are.
    let out = dir.path().join("i.json");
    rtlab().arg("import").arg(&smp).arg("-o").arg(&out).assert().success();
    common::assert_valid_run_result(&common::read_json(&out));
    let e = common::refused(&["import", &sweep.display().to_string(), "-o", "/tmp/never.json"]);
    assert!(e.contains("points/"), "{e}");
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let smp = dir.path().join("big.smp");
    rtlab().args(["run", "-q", "--simulate", "seed:1", "-l", "100000", "--samples"]).arg(&smp).assert().success();
    let mut child = std::process::Command::new(rtlab_path())
        .arg("samples")
        .arg(&smp)
        .arg("--csv")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut head = [0u8; 64];
    std::io::Read::read_exact(&mut out, &mut head).unwrap();
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stderr.is_empty(), "nothing said: {}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn help_points_to_the_right_place() {
    let top = String::from_utf8(rtlab().arg("--help").output().unwrap().stdout).unwrap();
    assert!(top.contains("Exit codes: 0 ok") && top.contains("3 a threshold was exceeded"), "{top}");
    assert!(top.contains("a doctor check failed"), "the doctor's exit 3 is listed: {top}");
    let load = String::from_utf8(rtlab().args(["load", "--help"]).output().unwrap().stdout).unwrap();
    for kind in ["cpu", "messaging", "memory", "io", "command"] {
        assert!(load.contains(&format!("\n  {kind} ")), "load --help lists {kind}: {load}");
    }
    for key in [
        "workers=N",
        "policy=",
        "nice=N",
        "cpus=CPUSET",
        "mode=thread|process",
        "fds=N",
        "transport=",
        "block=",
        "cmd=",
    ] {
        assert!(load.contains(key), "load --help names {key}");
    }
    for (args, help) in [
        (vec!["run", "--policy", "warp"], "see rtlab run --help"),
        (vec!["beam", "sweep", "--workers", "x", "--out", "o"], "see rtlab beam sweep --help"),
        (vec!["cyclictest", "-i", "0"], "see rtlab cyclictest --help"),
        (vec!["nonsense"], "see rtlab --help"),
    ] {
        let e = common::refused(&args);
        assert!(e.contains(help), "{args:?}: {e}");
    }
    let ct = String::from_utf8(rtlab().args(["cyclictest", "--help"]).output().unwrap().stdout).unwrap();
    assert!(ct.contains("Usage: rtlab cyclictest"), "{ct}");
    let beam = String::from_utf8(rtlab().args(["beam", "run", "--help"]).output().unwrap().stdout).unwrap();
    assert!(!beam.contains("- low:    low"), "priorities are explained, not repeated: {beam}");
}

#[test]
fn completions_and_man_pages_are_generated_from_the_definitions() {
    for shell in ["bash", "zsh", "fish"] {
        let o = rtlab().args(["completions", shell]).output().unwrap();
        assert!(o.status.success());
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.contains("rtlab") && text.contains("max-latency"), "{shell}: {}", &text[..200.min(text.len())]);
    }
    let man = String::from_utf8(rtlab().arg("man").output().unwrap().stdout).unwrap();
    assert!(man.contains(".TH rtlab 1") && man.contains("sweep"), "{}", &man[..300.min(man.len())]);
    let run = String::from_utf8(rtlab().args(["man", "run"]).output().unwrap().stdout).unwrap();
    assert!(run.contains(".TH rtlab-run 1") && run.contains("max\\-latency"), "{}", &run[..300.min(run.len())]);
    let e = common::refused(&["man", "nope"]);
    assert!(e.contains("'nope'"), "{e}");
    // The after-help is named for what it is.
    assert!(run.contains(".SH EXAMPLES\n") && !run.contains(".SH EXTRA"), "{run}");
    assert!(man.contains(".SH EXIT STATUS\n"), "{man}");
    // The internal load worker is not offered; --policy offers its names, not files.
    let bash = String::from_utf8(rtlab().args(["completions", "bash"]).output().unwrap().stdout).unwrap();
    assert!(!bash.contains("load-worker"), "the hidden subcommand is not completed");
    assert!(bash.contains("compgen -W \"other batch idle fifo rr deadline\""), "--policy completes its names");
}

#[test]
fn cyclictest_habits_in_rtlab_run_point_to_rtlab_cyclictest() {
    for (args, says) in [
        (&["run", "-h", "200"][..], "rtlab cyclictest -h 200"),
        (&["run", "-h200"][..], "rtlab cyclictest -h 200"),
        (&["run", "--histogram", "100"][..], "rtlab cyclictest --histogram"),
        (&["run", "-v"][..], "rtlab cyclictest -v"),
        (&["run", "-n"][..], "-n/--nanosleep was removed"),
        (&["run", "-p", "150"][..], "use 1 to 99"),
    ] {
        let e = common::refused(args);
        assert!(e.contains(says), "{args:?}: {e}");
    }
    // -h alone is still help, and help groups the options under headings, examples first.
    let o = rtlab().args(["run", "-h"]).output().unwrap();
    assert!(o.status.success());
    let help = String::from_utf8(o.stdout).unwrap();
    assert!(help.starts_with("Examples:"), "{help}");
    for heading in ["Threads and scheduling:", "Timing:", "Output:", "Verdict and tracing:", "Background load:"] {
        assert!(help.contains(&format!("\n{heading}\n")), "{heading}: {help}");
    }
    let monitor = String::from_utf8(rtlab().args(["monitor", "-h"]).output().unwrap().stdout).unwrap();
    assert!(monitor.starts_with("Examples:") && monitor.contains("\nServing:\n"), "{monitor}");
    // --policy takes its names in any case, and `normal`/`dl` as aliases.
    let e = common::refused(&["run", "--policy", "warp"]);
    assert!(e.contains("[possible values: other, batch, idle, fifo, rr, deadline]"), "{e}");
}

#[test]
fn report_and_compare_judge_files_against_max_latency_and_report_defaults_to_the_inputs_name() {
    let dir = tempfile::tempdir().unwrap();
    let sim = samples_file(dir.path(), "10000\n150000\n20000\n");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for f in [&a, &b] {
        let o =
            rtlab().args(["run", "-q", "-t", "1", "--simulate", &sim, "-l", "3", "--json"]).arg(f).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // 150 µs is above 100 µs: the verdict fails, exit 3, in the report too.
    let o = rtlab().arg("report").arg(&a).args(["--max-latency", "100"]).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("FAIL: a.json exceeded 100.0 µs"), "{o:?}");
    let page = std::fs::read_to_string(dir.path().join("a.html")).expect("a.json's report is a.html");
    assert!(page.contains("FAIL: a.json exceeded 100.0 µs"));
    assert!(!page.contains("<td>ALL</td>"), "one thread: its row is the only row, not twice");
    let o = rtlab()
        .arg("report")
        .arg(&a)
        .args(["--max-latency", "200", "-o"])
        .arg(dir.path().join("p.html"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("PASS: no CPU of a.json exceeded 200.0 µs"), "{o:?}");
    let o = rtlab().arg("compare").arg(&a).arg(&b).args(["--max-latency", "100"]).output().unwrap();
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(String::from_utf8_lossy(&o.stdout).matches("FAIL: ").count(), 2, "{o:?}");
    // Several inputs need a name for their report.
    let o = rtlab().arg("report").arg(&a).arg(&b).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-o report.html"));
}
