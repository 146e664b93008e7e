//! `rtlab watch --backend bpf` against real programs on the real kernel: the BPF programs
//! (bpf/watch.bpf.c, built when clang is there; .ci/run installs it) pass every case the
//! tracefs backend passes (tests/watch/cases.rs, run here in `cases`), lose nothing at tens of
//! thousands of wakeups a second, and leave nothing loaded after any exit. Needs root, BTF and
//! a build with clang: without them every test says so loudly and fails.

mod common;
use cases::{need_root as need_bpf, serial, thread, watch};
use common::*;
use serde_json::Value;

/// Every case of tests/watch/cases.rs, on the BPF backend.
mod cases {
    /// The backend the shared cases run on here (tests/watch.rs runs them on tracefs).
    const BACKEND: &str = "bpf";

    include!("watch/cases.rs");
}

#[test]
fn a_program_waking_tens_of_thousands_of_times_a_second_loses_no_event_and_each_wakeup_is_counted() {
    need_bpf();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("own.txt");
    let watched = watched().to_str().unwrap().to_string();
    // A debug build's reader decodes about six times slower than a release one's: a debug run
    // asks for a rate it sustains beside the rest of the suite (about 10 000 wakeups a second
    // on an idle machine; 4 500 beside a hackbench, which takes its share of the program's
    // CPU). What it checks is exact at any rate: nothing lost, every wakeup counted; its floor
    // only says the program ran at all. `cargo test --release --test watch_bpf` checks at least
    // 50 000 a second on an idle machine (BENCHMARKS.md section 20).
    let (spin_us, at_least) = if cfg!(debug_assertions) { ("40", 2_500) } else { ("5", 250_000) };
    let r = watch(dir.path(), &["--", &watched, "pingpong", "5", spin_us, own.to_str().unwrap()]);
    let w = &r["watch"];
    assert_eq!(w["lost_events"], 0, "{w}");
    assert_eq!(w["undecoded"], 0);
    let text = std::fs::read_to_string(&own).unwrap();
    let mut total = 0;
    for line in text.lines() {
        let (name, blocks) = line.split_once(' ').unwrap();
        let blocks: i64 = blocks.parse().unwrap();
        total += blocks;
        let t = thread(&r, name);
        let x = &t["watch"];
        // Each block but the last (its exit) is a wakeup: a period, or one inside a job.
        let wakeups = ["periods", "incomplete"].iter().map(|k| x[k].as_i64().unwrap()).sum::<i64>()
            + x["jobs"]["inner_wakeups"].as_i64().unwrap();
        assert!((blocks - 1..=blocks).contains(&wakeups), "{name}: blocked {blocks} times, {wakeups} wakeups watched");
    }
    eprintln!("{total} wakeups in 5 s, {} events, reader {} ns of CPU", w["events"], w["reader_cpu_ns"]);
    assert!(total >= at_least, "the program woke {total} times in 5 s, fewer than {at_least}");
}

#[test]
fn only_the_expiries_of_timers_a_watched_thread_armed_leave_the_kernel() {
    use rtlab::trace::event::{parse, Kind};
    need_bpf();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("w.trace");
    // An unwatched cyclictest beside the watched sleeper: thousands of foreign timer expiries.
    let mut foreign = std::process::Command::new("cyclictest")
        .args(["-t1", "-i200", "-l", "20000", "-q"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("cyclictest (rt-tests) is installed");
    let r =
        watch(dir.path(), &["--events", events.to_str().unwrap(), "--", watched().to_str().unwrap(), "sleep", "300"]);
    // SIGTERM, not SIGKILL: cyclictest removes its /dev/shm/cyclictest<PID> only when it ends
    // cleanly, and a file left behind is found under that PID by a later cyclictest run.
    let _ = std::process::Command::new("kill").args(["-TERM", &foreign.id().to_string()]).status();
    let _ = foreign.wait();
    let sleeper = thread(&r, "sleeper");
    assert_eq!(sleeper["watch"]["timer_releases"], 300, "{}", sleeper["watch"]);
    let tid = sleeper["watch"]["tid"].as_i64().unwrap() as i32;
    let text = std::fs::read_to_string(&events).unwrap();
    // Timer -> whether the sleeper's sleep armed it last (its expiry is that sleep's).
    let (mut armed, mut sleeps_expired) = (std::collections::HashMap::new(), 0);
    for e in text.lines().filter_map(parse) {
        match e.kind {
            Kind::HrtimerStart { timer, function, .. } => {
                armed.insert(timer, e.pid == tid && function == "hrtimer_wakeup");
            }
            Kind::HrtimerEntry { timer, function, .. } => {
                let Some(slept) = armed.get(&timer) else {
                    panic!("the expiry of {timer} ({function}), which no watched thread armed");
                };
                sleeps_expired += usize::from(*slept);
            }
            _ => {}
        }
    }
    // A wakeup the kernel showed no program (the events in the context of a task it does not
    // trace: on this VM, its agent's) is counted unseen, never lost without a count.
    let unseen = sleeper["watch"]["unseen_wakeups"].as_u64().unwrap() as usize;
    assert_eq!(
        sleeps_expired + unseen,
        300,
        "{sleeps_expired} sleeps' expiries recorded and {unseen} wakeups unseen for 300 timed sleeps; the watch: {}",
        r["watch"]
    );
}

#[test]
fn nothing_of_rtlabs_stays_loaded_after_a_sigkill() {
    need_bpf();
    // The programs and maps of this watch, by the ids its descriptors hold (/proc/PID/fdinfo):
    // other tests' watches may load theirs meanwhile, so the test follows its own.
    let held = |pid: u32| -> (Vec<String>, Vec<String>) {
        let (mut progs, mut maps) = (Vec::new(), Vec::new());
        for fd in std::fs::read_dir(format!("/proc/{pid}/fdinfo")).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(fd.path()).unwrap_or_default();
            for l in text.lines() {
                if let Some(id) = l.strip_prefix("prog_id:") {
                    progs.push(id.trim().to_string());
                } else if let Some(id) = l.strip_prefix("map_id:") {
                    maps.push(id.trim().to_string());
                }
            }
        }
        progs.sort();
        progs.dedup();
        maps.sort();
        maps.dedup();
        (progs, maps)
    };
    // The ids `bpftool WHAT show` lists now.
    let listed = |what: &str| -> Vec<String> {
        let out = std::process::Command::new("bpftool")
            .args([what, "show"])
            .output()
            .unwrap_or_else(|e| panic!("bpftool is not installed ({e}): apt-get install bpftool (.ci/run does)"));
        assert!(out.status.success(), "bpftool {what} show: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| Some(l.split_once(':')?.0.to_string())).collect()
    };
    let mut child = std::process::Command::new(rtlab_path())
        .args(["watch", "-q", "--backend", "bpf", "-D", "20s", "--", "sleep", "20"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let mut ids = held(child.id());
    while ids.0.len() < 12 && start.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        ids = held(child.id());
    }
    let (progs, maps) = ids;
    assert!(progs.len() >= 12, "rtlab watch --backend bpf held {} programs: {progs:?}", progs.len());
    assert!(progs.iter().all(|id| listed("prog").contains(id)), "bpftool lists the programs {progs:?}");
    assert!(!maps.is_empty(), "rtlab watch --backend bpf held no maps");
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::process::Command::new("pkill").args(["-x", "-f", "sleep 20"]).status();
    // The kernel releases programs and maps whose last descriptor closed, after an RCU grace
    // period: none may stay (nothing of rtlab's is pinned).
    let left = || {
        let (p, m) = (listed("prog"), listed("map"));
        (progs.iter().filter(|id| p.contains(id)).count(), maps.iter().filter(|id| m.contains(id)).count())
    };
    let start = std::time::Instant::now();
    while left() != (0, 0) && start.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(left(), (0, 0), "programs and maps of rtlab's stay loaded after its SIGKILL: {progs:?} {maps:?}");
}

#[test]
fn watch_reads_through_bpf_by_default_and_through_tracefs_with_a_warning_where_bpf_cannot_load() {
    need_bpf();
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("w.json");
    let watch_sleep = |cmd: &mut std::process::Command| -> (Value, String) {
        let out = cmd.args(["watch", "-q", "-D", "2s", "--json"]).arg(&json).args(["--", "sleep", "0.3"]).output();
        let out = out.unwrap_or_else(|e| panic!("setpriv (util-linux) is installed: {e}"));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{err}");
        (read_json(&json), err)
    };
    let (r, err) = watch_sleep(&mut std::process::Command::new(rtlab_path()));
    assert!(r["watch"]["backend"].as_str().unwrap().starts_with("bpf:"), "{}", r["watch"]["backend"]);
    assert_eq!(r["warnings"], serde_json::json!([]), "{err}");
    // Without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN the kernel refuses the programs; root's
    // tracefs files stay writable to their owner.
    let dropped = || {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--inh-caps=-sys_admin,-bpf,-perfmon", "--bounding-set=-sys_admin,-bpf,-perfmon"]).arg(rtlab_path());
        c
    };
    let (r, err) = watch_sleep(&mut dropped());
    assert!(r["watch"]["backend"].as_str().unwrap().starts_with("tracefs:"), "{}", r["watch"]["backend"]);
    let w = &r["warnings"][0];
    assert_eq!(w["kind"], "backend_fallback", "{}", r["warnings"]);
    let line: Vec<&str> = err.lines().filter(|l| l.starts_with("rtlab: warning: watch: the BPF backend")).collect();
    assert_eq!(line.len(), 1, "one warning line, as soon as it is known: {err}");
    assert!(line[0].contains("read through tracefs"), "{err}");
    // Asked for, BPF that cannot load is an error, not a fallback.
    let out = dropped().args(["watch", "-q", "--backend", "bpf", "-D", "1s", "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_bpf_backend_with_explain_is_refused_before_anything_is_traced() {
    let out = rtlab().args(["watch", "--backend", "bpf", "--explain", "-D", "1s", "--", "true"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--backend bpf") && err.contains("--backend tracefs"), "{err}");
}
