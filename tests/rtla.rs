//! rtlab installed as `rtla` (and as `oslat`), read the way their clients read them. rteval: rteval's timerlat module
//! runs `rtla timerlat hist -p100 -P f:95 -u -cCPUS -E3500 --no-summary --no-aa
//! --dma-latency=0 [-T N]`, stops it with SIGINT, takes every row as the bucket index then IRQ,
//! Thr, Usr per CPU, and on a stop reads rtla's analysis line by line. The parser below does
//! what that module does, field by field.

mod common;
use common::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A directory holding `rtla`, a link to rtlab.
fn rtla() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let rtla = dir.path().join("rtla");
    std::os::unix::fs::symlink(rtlab_path(), &rtla).unwrap();
    (dir, rtla)
}

/// What rteval takes from the output.
#[derive(Debug, Default)]
struct Rteval {
    /// Per row: the bucket index and its cells (IRQ, Thr, Usr per CPU, in -c order).
    rows: Vec<(u64, Vec<u64>)>,
    /// The `over:` cells (rteval skips the line; the test reads it for the counts).
    over: Vec<u64>,
    stop: Option<Stop>,
}

/// rteval's reading of a stop's analysis.
#[derive(Debug, Default)]
struct Stop {
    cpu: Option<u64>,
    /// `Thread latency:`'s `fields[-3]` and `fields[-1]` stripped of `()%`.
    thread_latency: Option<(f64, f64)>,
    /// `IRQ handler delay`, `Blocking thread`, `… interference`, `Timerlat IRQ duration`:
    /// `fields[-4]` and `fields[-2]` stripped of `(`.
    parts: HashMap<String, (f64, f64)>,
    /// The line after `Blocking thread:`, all fields but the last two.
    blocking_thread: Option<String>,
}

fn rteval_parse(text: &str) -> Rteval {
    let mut r = Rteval::default();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with("rtla timerlat hit stop tracing") {
            r.stop = Some(Stop::default());
            continue;
        }
        if let Some(stop) = r.stop.as_mut() {
            let num = |s: &str| s.parse::<f64>().unwrap_or_else(|_| panic!("not a number: {s:?} in {line:?}"));
            if line.starts_with("## CPU") {
                stop.cpu = fields.get(2).and_then(|c| c.parse().ok());
            } else if line.contains("Thread latency:") {
                let n = fields.len();
                stop.thread_latency = Some((num(fields[n - 3]), num(fields[n - 1].trim_matches(['(', ')', '%']))));
            }
            for key in [
                "IRQ handler delay",
                "Blocking thread",
                "IRQ interference",
                "Softirq interference",
                "Timerlat IRQ duration",
            ] {
                if line.trim_start().starts_with(key) && fields.len() >= 5 {
                    let n = fields.len();
                    stop.parts.insert(key.into(), (num(fields[n - 4]), num(fields[n - 2].trim_start_matches('('))));
                    if key == "Blocking thread" {
                        let next: Vec<&str> = lines.peek().map(|l| l.split_whitespace().collect()).unwrap_or_default();
                        stop.blocking_thread = Some(next[..next.len().saturating_sub(2)].join(" "));
                    }
                }
            }
            continue;
        }
        if line.starts_with('#') || fields.is_empty() {
            continue;
        }
        if fields[0] == "over:" {
            r.over = fields[1..].iter().map(|v| v.parse().unwrap()).collect();
            continue;
        }
        if let Ok(index) = fields[0].parse::<u64>() {
            r.rows.push((index, fields[1..].iter().map(|v| v.parse().unwrap()).collect()));
        }
    }
    r
}

/// Runs `rtla ARGS` (through the link), sends SIGINT after `after` as rteval does, and returns
/// its exit status and output.
fn interrupted(args: &[&str], after: Duration) -> (Option<i32>, String, String) {
    let (_dir, rtla) = rtla();
    let child = Command::new(&rtla).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id().to_string();
    let (done, ended) = std::sync::mpsc::channel::<()>();
    let killer = std::thread::spawn(move || {
        if ended.recv_timeout(after).is_err() {
            let _ = Command::new("kill").args(["-INT", &pid]).status();
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = done.send(());
    killer.join().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn rtevals_invocation_reads_three_stages_per_cpu_counted_alike_and_in_stage_order() {
    assert!(is_root(), "rtla timerlat needs root (SCHED_FIFO, tracefs)");
    let args = [
        "timerlat",
        "hist",
        "-p100",
        "-P",
        "f:95",
        "-u",
        "-c0,1",
        "-E3500",
        "--no-summary",
        "--no-aa",
        "--dma-latency=0",
    ];
    let (code, out, err) = interrupted(&args, Duration::from_secs(5));
    assert_eq!(code, Some(0), "a run ended by SIGINT without a stop: {err}");
    let r = rteval_parse(&out);
    assert!(r.stop.is_none(), "{out}");
    assert!(!r.rows.is_empty() && r.rows.iter().all(|(_, v)| v.len() == 6), "IRQ, Thr, Usr for CPUs 0 and 1:\n{out}");
    assert_eq!(r.over.len(), 6, "{out}");
    for cpu in 0..2 {
        let col = |stage: usize| cpu * 3 + stage;
        let count = |c: usize| r.rows.iter().map(|(_, v)| v[c]).sum::<u64>() + r.over[c];
        let counts = [count(col(0)), count(col(1)), count(col(2))];
        assert!(counts[0] > 1000, "CPU {cpu}: {counts:?}");
        assert!(counts.iter().all(|c| *c == counts[0]), "CPU {cpu}: IRQ, Thr and Usr counted alike: {counts:?}");
        // The largest non-empty bucket (over: beyond the table) of each stage, in stage order.
        let largest = |c: usize| {
            if r.over[c] > 0 {
                u64::MAX
            } else {
                r.rows.iter().filter(|(_, v)| v[c] > 0).map(|(i, _)| *i).max().unwrap()
            }
        };
        let l = [largest(col(0)), largest(col(1)), largest(col(2))];
        assert!(l[0] <= l[1] && l[1] <= l[2], "CPU {cpu}: IRQ ≤ Thr ≤ Usr in every sample, so in the largest: {l:?}");
    }
}

#[test]
fn a_fifo_96_blocker_stops_minus_t_50_with_an_analysis_rteval_reads_and_exit_2() {
    assert!(is_root(), "rtla timerlat needs root (SCHED_FIFO, tracefs)");
    // 1 ms busy every 20 ms at SCHED_FIFO 96 on CPU 1, above rtla's FIFO 95 thread.
    let blocker = fifo_bursts_of(1, 96, 5, 30);
    let (code, out, err) =
        interrupted(&["timerlat", "hist", "-c", "1", "-T", "50", "-d", "25"], Duration::from_secs(27));
    stop_bursts(blocker);
    assert_eq!(code, Some(2), "rtla's status for a run that hit its stop condition: {err}");
    let r = rteval_parse(&out);
    let stop = r.stop.unwrap_or_else(|| panic!("no `rtla timerlat hit stop tracing` line:\n{out}"));
    assert_eq!(stop.cpu, Some(1), "{out}");
    let (latency, share) = stop.thread_latency.unwrap_or_else(|| panic!("no Thread latency line:\n{out}"));
    assert!(latency >= 50.0 && share == 100.0, "{latency} us ({share} %):\n{out}");
    let (blocked, blocked_share) = stop.parts["Blocking thread"];
    assert!(blocked >= 0.0 && (0.0..=100.0).contains(&blocked_share), "{out}");
    let name = stop.blocking_thread.unwrap_or_default();
    assert!(name.contains(':') && name.len() > 2, "the blocking thread's comm:pid on the line after: {name:?}\n{out}");
    assert!(stop.parts.contains_key("IRQ handler delay") && stop.parts.contains_key("Timerlat IRQ duration"), "{out}");
}

#[test]
fn bad_options_are_refused_with_rtlas_status_and_one_line() {
    let (_dir, rtla) = rtla();
    for (args, says) in [
        (&["timerlat", "hist", "-b", "0"][..], "Bucket size needs to be > 0 and <= 1000000"),
        (&["timerlat", "hist", "-E", "5"][..], "Entries must be > 10 and < 9999999"),
        (&["timerlat", "top", "-p", "2000000"][..], "Period longer than 1 s"),
        (&["timerlat", "hist", "--no-irq", "--no-thread"][..], "nothing to do here"),
        (&["timerlat", "hist", "--no-index"][..], "it does not make sense"),
        (&["timerlat", "top", "--dma-latency", "20000"][..], "--dma-latency needs to be >= 0 and < 10000"),
        (&["timerlat", "top", "-k"][..], "-k needs the kernel's timerlat tracer"),
        (&["timerlat", "top", "--bogus"][..], "--bogus"),
        (&["timerlat", "top", "-T", "9223372036854776"][..], "out of range"),
    ] {
        let out = Command::new(&rtla).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: rtla's status for an invalid argument: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says) && !err.contains("panicked"), "{args:?}: {err}");
    }
}

/// The keys of a JSON object, sorted.
fn keys(v: &serde_json::Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    k.sort();
    k
}

/// The labels of oslat's text lines (what comes before the first tab or number).
fn labels(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split(['\t', ':']).next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// A directory holding `oslat`, a link to rtlab.
fn oslat() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let oslat = dir.path().join("oslat");
    std::os::unix::fs::symlink(rtlab_path(), &oslat).unwrap();
    (dir, oslat)
}

#[test]
fn run_as_oslat_it_writes_oslats_text_and_json_as_the_real_oslat_does() {
    assert!(is_root(), "oslat's busy threads need root here as oslat's do");
    let (dir, oslat) = oslat();
    let (ours, real) = (dir.path().join("ours.json"), dir.path().join("real.json"));
    let out = Command::new(&oslat).args(["-c", "1", "-D", "5", "--json"]).arg(&ours).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let reference = Command::new("oslat")
        .args(["-c", "1", "-D", "1", "--json"])
        .arg(&real)
        .output()
        .expect("the real oslat (apt install rt-tests; .ci/run does)");
    assert!(reference.status.success());
    let (a, b) = (read_json(&ours), read_json(&real));
    assert_eq!(keys(&a), keys(&b), "oslat 2.x's top-level keys");
    assert_eq!(keys(&a["thread"]["0"]), keys(&b["thread"]["0"]), "a thread's keys");
    assert_eq!(keys(&a["sysinfo"]), keys(&b["sysinfo"]));
    assert_eq!((a["num_threads"].as_u64(), a["thread"]["0"]["cpu"].as_u64()), (Some(1), Some(1)));
    let hist = a["thread"]["0"]["histogram"].as_object().unwrap();
    assert!(hist.keys().all(|k| k.parse::<u32>().is_ok_and(|b| (1..=32).contains(&b))), "{hist:?}");
    // The text: oslat's lines, in oslat's order.
    let text = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(labels(&text(&out)), labels(&text(&reference)), "{}\n---\n{}", text(&out), text(&reference));
    // -v and a bad option, with oslat's statuses.
    let v = Command::new(&oslat).arg("-v").output().unwrap();
    assert_eq!((v.status.code(), String::from_utf8_lossy(&v.stdout).trim()), (Some(0), "oslat V 2.40"));
    let bad = Command::new(&oslat).args(["-b", "2"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(1), "{}", String::from_utf8_lossy(&bad.stderr));
}

/// stress-ng busy 1 ms every 50 ms at SCHED_FIFO 90 on CPU 1: a blocker of known size.
fn blocker() -> std::process::Child {
    fifo_bursts_of(1, 90, 2, 20)
}

/// rtla osnoise top's CPU row as numbers: cpu, #periods, runtime, noise, % available, max
/// noise, max single, then the counts.
fn osnoise_row(text: &str) -> Vec<f64> {
    let row =
        text.lines().find(|l| l.trim_start().starts_with("1 #")).unwrap_or_else(|| panic!("no CPU 1 row:\n{text}"));
    row.split_whitespace().map(|f| f.trim_start_matches('#').parse().unwrap()).collect()
}

#[test]
fn rtla_osnoise_and_hwnoise_put_a_fifo_blockers_noise_in_the_right_columns() {
    assert!(is_root(), "rtla osnoise needs root (tracefs for the attribution)");
    let (_dir, rtla) = rtla();
    let stress = blocker();
    let os = Command::new(&rtla).args(["osnoise", "top", "-c", "1", "-d", "5"]).output().unwrap();
    let hw = Command::new(&rtla).args(["hwnoise", "-c", "1", "-d", "5"]).output().unwrap();
    stop_bursts(stress);
    let (os_text, hw_text) = (String::from_utf8_lossy(&os.stdout), String::from_utf8_lossy(&hw.stdout));
    assert_eq!(os.status.code(), Some(0), "{}", String::from_utf8_lossy(&os.stderr));
    assert_eq!(hw.status.code(), Some(0), "{}", String::from_utf8_lossy(&hw.stderr));
    let head = "CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI";
    assert!(os_text.contains(&format!("{head}          IRQ      Softirq       Thread\n")), "{os_text}");
    assert!(os_text.starts_with(&format!("{}Operating System Noise", " ".repeat(42))), "{os_text}");
    assert!(hw_text.contains(&format!("{head}\n")) && hw_text.contains("Hardware-related Noise"), "{hw_text}");
    let o = osnoise_row(&os_text);
    assert_eq!(o.len(), 12, "{os_text}");
    // About 100 bursts of 1 ms in 5 s preempt the busy thread: thread noise, each a long single.
    assert!(o[11] >= 50.0, "the blocker is counted in Thread: {os_text}");
    assert!(o[6] >= 500.0, "Max Single is a burst: {os_text}");
    assert!(o[3] >= 50_000.0 && (o[4] - (o[2] - o[3]) * 100.0 / o[2]).abs() < 0.001, "{os_text}");
    // hwnoise counts only hardware and NMI noise: the blocker's time is not in its Noise.
    let h = osnoise_row(&hw_text);
    assert_eq!(h.len(), 9, "no IRQ, Softirq or Thread column: {hw_text}");
    assert!(h[3] * 2.0 < o[3], "hwnoise leaves the thread noise out: {hw_text}\n{os_text}");
    // Its Max Noise and Max Single are hardware noise too: neither above its total.
    assert!(h[5] <= h[3] && h[6] <= h[3], "Max Noise and Max Single are parts of Noise: {hw_text}");
}

#[test]
fn hwnoise_stops_only_on_hardware_noise_never_on_a_threads_burst() {
    assert!(is_root(), "rtla hwnoise needs root (tracefs for the attribution)");
    let (dir, rtla) = rtla();
    let json = dir.path().join("hw.json");
    let stress = blocker();
    let out =
        Command::new(&rtla).args(["hwnoise", "-c", "1", "-s", "500", "-d", "4", "--json"]).arg(&json).output().unwrap();
    stop_bursts(stress);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let sources = &v["threads"][0]["noise"]["sources"];
    let hardware_single = sources["hw_max_single_ns"].as_i64().unwrap();
    match out.status.code() {
        // The FIFO blocker's 1 ms bursts are gaps above -s 500, but not hardware noise.
        Some(0) => {
            assert!(v["threads"][0]["max_ns"].as_i64().unwrap() >= 900_000, "a burst was seen: {text}");
            assert!(hardware_single <= 500_000, "{text}");
            assert!(!text.contains("hit stop tracing"), "{text}");
        }
        // A stop is hardware noise above -s: this machine's host took the CPU for that long.
        Some(2) => {
            assert!(hardware_single > 500_000, "stopped on a gap whose hardware part is {hardware_single} ns: {text}");
            assert!(text.ends_with("rtla osnoise hit stop tracing\n"), "{text}");
            assert!(sources["hw_stop_hits"].as_u64().unwrap() >= 1, "{sources}");
        }
        other => panic!("exit {other:?}: {}", String::from_utf8_lossy(&out.stderr)),
    }
}

#[test]
fn rtla_osnoise_stops_at_the_first_single_noise_above_s_with_exit_2() {
    assert!(is_root(), "rtla osnoise needs root (tracefs for the attribution)");
    let (_dir, rtla) = rtla();
    let stress = blocker();
    let started = std::time::Instant::now();
    let out = Command::new(&rtla).args(["osnoise", "top", "-c", "1", "-s", "500", "-d", "15"]).output().unwrap();
    stop_bursts(stress);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "rtla's status for a stop: {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.ends_with("rtla osnoise hit stop tracing\n"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(12), "stopped before -d 15");
    let bad = Command::new(&rtla).args(["osnoise", "top", "-r", "50"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("Runtime shorter than 100 us"));
}

#[test]
fn a_stand_ins_bad_cpu_list_or_priority_is_named_as_the_user_typed_it_not_as_rtlabs_option() {
    let (dir, rtla) = rtla();
    let oslat = dir.path().join("oslat");
    std::os::unix::fs::symlink(common::rtlab_path(), &oslat).unwrap();
    for (tool, args, flag) in [
        (&rtla, vec!["timerlat", "-H", "99", "-d", "1"], "-H 99"),
        (&rtla, vec!["osnoise", "-H", "99", "-d", "1"], "-H 99"),
        (&oslat, vec!["-C", "99", "-D", "1"], "-C 99"),
        (&rtla, vec!["timerlat", "-c", "99", "-d", "1"], "-c 99"),
        (&rtla, vec!["timerlat", "-P", "f:100", "-d", "1"], "-P 'f:100'"),
        (&rtla, vec!["osnoise", "-P", "r:0", "-d", "1"], "-P 'r:0'"),
    ] {
        let out = std::process::Command::new(tool).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!((out.status.code(), err.lines().count()), (Some(1), 1), "{args:?}: {err}");
        let internal = ["--mainaffinity", "--priority", "-p 80", "-a 99"];
        assert!(err.contains(flag) && !internal.iter().any(|o| err.contains(o)), "{args:?}: {err}");
    }
}

#[test]
fn a_trace_action_that_cannot_write_its_file_is_refused_before_measuring() {
    let (dir, rtla) = rtla();
    for file in [dir.path().to_path_buf(), dir.path().join("missing/t.txt")] {
        let t0 = std::time::Instant::now();
        let out = Command::new(&rtla)
            .args(["timerlat", "top", "-T", "1", "-d", "30", "-q"])
            .arg(format!("--on-threshold=trace,file={}", file.display()))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!((out.status.code(), err.lines().count()), (Some(1), 1), "{}: {err}", file.display());
        assert!(err.contains("--on-threshold trace"), "{err}");
        assert!(t0.elapsed() < Duration::from_secs(20), "refused before the 30 s run: {:?}", t0.elapsed());
    }
}

/// `rtla ARGS` in `dir` (where the trace files land): status, stdout, stderr.
fn rtla_in(dir: &std::path::Path, rtla: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(rtla).current_dir(dir).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn the_kernel_suites_action_cases_stop_at_a_failed_action_before_the_table() {
    assert!(is_root(), "rtla timerlat needs root (SCHED_FIFO, tracefs)");
    let (dir, rtla) = rtla();
    // tests/timerlat.t "hist stop at failed action": the first action prints 1 and fails, the
    // second never runs, and the histogram follows the action's output.
    let failing = ["--on-threshold", "shell,command=echo -n 1; false", "--on-threshold", "shell,command=echo -n 2"];
    let (code, out, err) = rtla_in(dir.path(), &rtla, &[&["timerlat", "hist", "-T", "1"][..], &failing].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(out.lines().any(|l| l == "1# RTLA timerlat histogram"), "{out}");
    assert!(!out.starts_with("12"), "the action after a failed one is not done: {out}");
    assert!(err.contains("shell,command=echo -n 1; false failed"), "said after the table: {err}");
    // "multiple actions": both run, in order.
    let both = ["--on-threshold", "shell,command=echo -n 1", "--on-threshold", "shell,command=echo 2"];
    let (code, out, _) = rtla_in(dir.path(), &rtla, &[&["timerlat", "top", "-q", "-T", "1"][..], &both].concat());
    assert_eq!((code, out.lines().any(|l| l == "12")), (Some(2), true), "{out}");
}

#[test]
fn trace_actions_say_where_they_save_and_write_the_file_at_a_stop_or_at_the_end() {
    assert!(is_root(), "rtla timerlat needs root (SCHED_FIFO, tracefs)");
    let (dir, rtla) = rtla();
    for (args, file) in [
        (&["timerlat", "hist", "-T", "1", "-t"][..], "timerlat_trace.txt"),
        (&["timerlat", "hist", "-T", "1", "-t", "custom.txt"][..], "custom.txt"),
        (&["timerlat", "hist", "-T", "1", "-t=eq.txt"][..], "eq.txt"),
        (&["timerlat", "top", "-q", "-d", "1", "--on-end", "trace"][..], "timerlat_trace.txt"),
        (&["osnoise", "hist", "-S", "1", "-t", "noise.txt"][..], "noise.txt"),
        (&["osnoise", "top", "-q", "-d", "1", "--on-end", "trace"][..], "osnoise_trace.txt"),
    ] {
        let _ = std::fs::remove_file(dir.path().join(file));
        let (code, out, err) = rtla_in(dir.path(), &rtla, args);
        let want = if args.contains(&"--on-end") { 0 } else { 2 };
        assert_eq!(code, Some(want), "{args:?}: {err}");
        assert!(out.lines().any(|l| l == format!("  Saving trace to {file}")), "{args:?}: {out}");
        let saved = std::fs::read_to_string(dir.path().join(file)).unwrap();
        assert!(!saved.is_empty(), "{args:?}: the file holds what was recorded");
    }
    let record = std::fs::read_to_string(dir.path().join("osnoise_trace.txt")).unwrap();
    assert!(record.starts_with("# rtlab osnoise record: this kernel has no osnoise tracer"), "{record}");
}

#[test]
fn rtlas_help_pages_its_policy_letters_and_nanoseconds_are_answered_as_rtla_answers_them() {
    assert!(is_root(), "rtla timerlat needs root (SCHED_FIFO, tracefs)");
    let (dir, rtla) = rtla();
    for (args, says) in [
        (&["timerlat", "--help"][..], "timerlat version"),
        (&["osnoise", "--help"][..], "osnoise version"),
        (&["hwnoise", "--help"][..], "rtla hwnoise: a summary of hardware-related noise"),
        (&["timerlat", "hist", "--help"][..], "rtla timerlat hist:"),
    ] {
        let (code, out, err) = rtla_in(dir.path(), &rtla, args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(out.contains(says), "{args:?}: {out}");
    }
    let json = dir.path().join("r.json");
    let j = json.display().to_string();
    let (code, _, err) =
        rtla_in(dir.path(), &rtla, &["timerlat", "top", "-q", "-P", "F:1", "-c", "0", "-d", "1", "--json", &j]);
    assert_eq!(code, Some(0), "{err}");
    let r = read_json(&json);
    assert_eq!((r["threads"][0]["policy"].as_str(), r["threads"][0]["priority"].as_u64()), (Some("fifo"), Some(1)));
    let (code, out, err) = rtla_in(dir.path(), &rtla, &["timerlat", "hist", "-c", "0", "-n", "-d", "1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("# Time unit is nanoseconds (ns)"), "{out}");
    let (code, out, _) = rtla_in(dir.path(), &rtla, &["timerlat", "top", "-c", "0", "-n", "-d", "1"]);
    assert_eq!((code, out.contains("IRQ Timer Latency (ns)")), (Some(0), true), "{out}");
}

#[test]
fn osnoise_continue_does_its_actions_and_the_run_goes_on_to_its_end() {
    assert!(is_root(), "rtla osnoise needs root (tracefs)");
    let (dir, rtla) = rtla();
    let args = [
        "osnoise",
        "hist",
        "-S",
        "1",
        "-d",
        "2",
        "--on-threshold",
        "shell,command=echo TestOutput",
        "--on-threshold",
        "continue",
    ];
    let (code, out, err) = rtla_in(dir.path(), &rtla, &args);
    assert_eq!(code, Some(0), "continue: the run ends at its duration, not at a hit: {err}");
    assert!(out.lines().any(|l| l == "TestOutput"), "{out}");
    assert!(!out.contains("hit stop tracing"), "{out}");
    let (code, out, _) = rtla_in(dir.path(), &rtla, &["hwnoise", "-s", "1", "-T", "1", "-d", "1"]);
    if code == Some(2) {
        assert!(
            out.contains("rtla osnoise hit stop tracing"),
            "hwnoise's stop line is osnoise's, as rtla prints it: {out}"
        );
    }
}

#[test]
fn osnoise_hist_summarises_every_noise_at_its_buckets_lower_edge_as_rtla_reads_its_kernel_histogram() {
    assert!(is_root(), "rtla osnoise needs root (tracefs for the attribution)");
    let (dir, rtla) = rtla();
    let json = dir.path().join("h.json");
    let stress = blocker();
    let out = Command::new(&rtla)
        // 100 000 buckets of 7 µs: a noise past 700 ms would be rtla's `over:`, whose edge the
        // run's histogram cannot give (a busy machine gave 14 ms noises past 2 000 buckets).
        .args(["osnoise", "hist", "-c", "1", "-d", "3", "-b", "7", "-E", "100000", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    stop_bursts(stress);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let t = &v["threads"][0];
    assert_eq!(t["histogram"]["bucket_ns"], 7_000, "the run's buckets are rtla's -b");
    // rtla's osnoise_read_trace_hist then osnoise_hist_update_multiple, transcribed: each kernel
    // bucket gives (its lower edge in µs, its count); min, max and the sum take the edge.
    let (mut count, mut min, mut max, mut sum) = (0u64, u64::MAX, 0u64, 0u64);
    for b in t["histogram"]["buckets"].as_array().unwrap() {
        let (edge, n) = (b["lo_ns"].as_u64().unwrap() / 1000, b["count"].as_u64().unwrap());
        assert_eq!(edge % 7, 0, "every bucket of the run starts on a 7 µs edge: {b}");
        count += n;
        min = min.min(edge);
        max = max.max(edge);
        sum += edge * n;
    }
    assert!(count > 0, "the FIFO blocker's bursts are noise: {text}");
    let cell = |name: &str| -> u64 {
        let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name}\n{text}"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert_eq!(cell("count:"), count, "{text}");
    assert_eq!(cell("min:"), min, "{text}");
    assert_eq!(cell("max:"), max, "{text}");
    assert_eq!(cell("avg:"), sum / count, "{text}");
    let index: Vec<u64> = text
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert!(!index.is_empty() && index.iter().all(|i| i % 7 == 0), "the index counts in 7 µs: {text}");
}

/// The keys of a JSON file in the order its lines give them (bucket numbers left out).
fn keys_in_order(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix('"')?.split_once("\":").map(|(k, _)| k.to_string()))
        .filter(|k| k.parse::<u64>().is_err() || k == "0")
        .collect()
}

#[test]
fn oslat_z_marks_what_it_left_out_keeps_its_last_bucket_and_its_json_is_laid_out_as_oslats() {
    assert!(is_root(), "oslat's busy threads need root here as oslat's do");
    let (dir, oslat) = oslat();
    let (ours, real) = (dir.path().join("ours.json"), dir.path().join("real.json"));
    let out =
        Command::new(&oslat).args(["-c", "1", "-D", "2", "-z", "-b", "1024", "--json"]).arg(&ours).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    let first = lines.iter().position(|l| l.starts_with("Counter Freq:")).unwrap() + 1;
    let end = lines.iter().position(|l| l.trim_start().starts_with("Minimum:")).unwrap();
    let rows = &lines[first..end];
    // oslat's `%12s:\t` label: "001 (us)" after four spaces, "1024 (us)" after three.
    assert_eq!(rows.last().unwrap().split('\t').next().unwrap(), "   1024 (us):", "{text}");
    assert!(rows.last().unwrap().ends_with(" (including overflows)"), "the last bucket is always printed: {text}");
    let mut previous = 0;
    for (i, row) in rows.iter().enumerate() {
        if *row == "    ..." {
            assert!(i + 1 < rows.len() && rows[i + 1] != "    ...", "a `...` stands before a bucket: {text}");
            continue;
        }
        let (label, _) = row.split_once(":\t").unwrap_or_else(|| panic!("{row:?} in\n{text}"));
        assert_eq!(label.len(), 12, "{row:?}");
        let bucket: u64 = label.trim().trim_end_matches(" (us)").parse().unwrap();
        let skipped = bucket > previous + 1;
        assert_eq!(skipped, i > 0 && rows[i - 1] == "    ..." || (i == 0 && bucket > 1), "{text}");
        previous = bucket;
    }
    let reference = Command::new("oslat")
        .args(["-c", "1", "-D", "1", "--json"])
        .arg(&real)
        .output()
        .expect("the real oslat (apt install rt-tests; .ci/run does)");
    assert!(reference.status.success());
    let (a, b) = (std::fs::read_to_string(&ours).unwrap(), std::fs::read_to_string(&real).unwrap());
    assert_eq!(keys_in_order(&a), keys_in_order(&b), "oslat's keys in oslat's order\n{a}\n---\n{b}");
    let (va, vb) = (read_json(&ours), read_json(&real));
    assert_eq!(va["rt_test_version:"], vb["rt_test_version:"], "the version oslat writes");
    let avg = a.lines().find(|l| l.trim_start().starts_with("\"avg\":")).unwrap();
    assert_eq!(avg.rsplit_once('.').unwrap().1.trim_end_matches(',').len(), 6, "%lf: six decimals: {avg}");
}

#[test]
fn timerlat_measures_in_worker_processes_named_timerlatu_children_of_rtla_at_the_asked_priority() {
    // rtla's user-space workers are processes `timerlatu/CPU`; the kernel's suite finds them with
    // pgrep (scripts/check-priority.sh) among rtla's children and reads their policy with chrt.
    assert!(is_root(), "rtla timerlat needs root (SCHED_FIFO, tracefs)");
    workers_are_rtlas_children(&["timerlat", "top", "-c", "0", "-P", "f:1", "-q", "-d", "4s"], "timerlatu/0");
}

#[test]
fn osnoise_measures_in_worker_processes_named_osnoise_children_of_rtla_at_the_asked_priority() {
    // rtla osnoise's workload threads are `osnoise/CPU` (the kernel's); rtlab's busy loops run in
    // processes of that name, children of rtla, so the same check finds them.
    assert!(is_root(), "rtla osnoise needs root (SCHED_FIFO, tracefs)");
    workers_are_rtlas_children(
        &["osnoise", "top", "-c", "0", "-P", "f:1", "-r", "900000", "-q", "-d", "4s"],
        "osnoise/0",
    );
}

/// Runs rtla with `args` and checks, while it runs, that its one worker is a child process named
/// `name` at SCHED_FIFO 1 pinned to CPU 0; then that the run ends well and takes its worker along.
fn workers_are_rtlas_children(args: &[&str], name: &str) {
    let (dir, rtla) = rtla();
    let mut run = Command::new(&rtla)
        .current_dir(dir.path())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (parent, prefix) = (run.id().to_string(), format!("^{}", name.split('/').next().unwrap()));
    let mut workers = Vec::new();
    // Until it has its workers or has ended: no bound on how long a busy machine takes to start.
    while run.try_wait().unwrap().is_none() {
        let out = Command::new("pgrep").args(["-P", &parent, &format!("{prefix}/")]).output().unwrap();
        workers = String::from_utf8_lossy(&out.stdout).lines().map(|l| l.trim().to_string()).collect();
        if !workers.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(workers.len(), 1, "one worker process for -c 0, a child of rtla: {workers:?}");
    let pid = &workers[0];
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert_eq!(comm.trim(), name);
    let chrt = Command::new("chrt").args(["-p", pid]).output().unwrap();
    let chrt = String::from_utf8_lossy(&chrt.stdout);
    let fields: Vec<&str> = chrt.lines().map(|l| l.split(':').nth(1).unwrap_or("").trim()).collect();
    assert_eq!(fields[..2], ["SCHED_FIFO", "1"], "check-priority.sh's two lines: {chrt}");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(status.lines().any(|l| l == "Cpus_allowed_list:\t0"), "pinned to its CPU: {status}");
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).lines().count() > 2, "the table of the worker's figures");
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "the worker ends with the run");
}
