//! What rtlab changes on the machine is never left behind: tracefs instances still recording
//! after a SIGKILL (whatever process took the dead run's PID), CPU idle states disabled by
//! overlapping, killed or doubly interrupted runs. These tests need root and the real tracefs
//! and sysfs of this machine.

mod common;
use common::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One test at a time: each judges the whole machine's instances and idle states, and a
/// concurrent rtlab's clean-up would hide what another left.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn need_root() -> std::sync::MutexGuard<'static, ()> {
    assert!(is_root(), "these tests change tracefs and CPU idle states: run the suite as root");
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// This run's instances (`rtlab-…-PID-XXXXXXXX`) present in tracefs now.
fn instances_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("rtlab") && n.contains(&format!("-{pid}-")))
                .collect()
        })
        .unwrap_or_default()
}

/// A process that takes PID `pid` (through `ns_last_pid`, which root may set), or `None`
/// after a few tries when another process took it first.
fn squat(pid: u32) -> Option<Child> {
    squat_with(pid, &["sleep", "30"])
}

/// [`squat`] with a command of one's choice.
fn squat_with(pid: u32, argv: &[&str]) -> Option<Child> {
    for _ in 0..50 {
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
        let c = Command::new(argv[0]).args(&argv[1..]).spawn().ok()?;
        if c.id() == pid {
            return Some(c);
        }
        let mut c = c;
        let _ = c.kill();
        let _ = c.wait();
    }
    None
}

#[test]
fn a_killed_watchs_instances_are_removed_by_the_next_rtlab_even_when_its_pid_was_taken() {
    let _one = need_root();
    let mut watch = Command::new(rtlab_path())
        .args(["watch", "-q", "--backend", "tracefs", "-D", "30s", "--", "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = watch.id();
    wait_for("the watch's two instances", Duration::from_secs(15), || instances_of(pid).len() == 2);
    watch.kill().unwrap();
    watch.wait().unwrap();
    let mut squatter = squat(pid).expect("no process could take the dead watch's PID");
    assert_eq!(instances_of(pid).len(), 2, "the dead run's instances are still there, its PID alive");
    // Any rtlab that uses tracefs: a short run explaining its spikes.
    let next = rtlab().args(["run", "-l", "50", "-q", "--explain", "-t", "1"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    squatter.kill().unwrap();
    squatter.wait().unwrap();
    assert!(next.status.success(), "{stderr}");
    assert_eq!(instances_of(pid), Vec::<String>::new(), "the dead watch's instances remain");
}

#[test]
fn a_double_ctrl_c_in_a_watchs_first_moments_leaves_no_instance() {
    let _one = need_root();
    let mut left = Vec::new();
    for trial in 0..12u64 {
        let mut watch = Command::new(rtlab_path())
            .args(["watch", "-q", "--backend", "tracefs", "-D", "10s", "--", "sleep", "10"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = watch.id();
        // Between 0 and ~110 ms after the start: the instances are being created and opened.
        std::thread::sleep(Duration::from_millis(trial * 10));
        for _ in 0..2 {
            let _ = Command::new("kill").args(["-INT", &pid.to_string()]).status();
        }
        watch.wait().unwrap();
        left.extend(instances_of(pid));
    }
    assert_eq!(left, Vec::<String>::new(), "a doubly interrupted watch left instances behind");
}

/// The `disable` value of every idle state of every CPU, in order.
fn idle_states() -> Vec<(String, String)> {
    let mut v = Vec::new();
    for cpu in std::fs::read_dir("/sys/devices/system/cpu").unwrap().flatten() {
        let dir = cpu.path().join("cpuidle");
        for state in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let f = state.path().join("disable");
            if let Ok(value) = std::fs::read_to_string(&f) {
                v.push((f.display().to_string(), value.trim().to_string()));
            }
        }
    }
    v.sort();
    v
}

fn deepest_state_run(args: &[&str]) -> Child {
    Command::new(rtlab_path()).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
}

fn some_state_disabled() -> bool {
    idle_states().iter().any(|(_, v)| v == "1")
}

fn idle_states_exist() -> bool {
    let exist = idle_states().len() > 1;
    if !exist {
        eprintln!("NOT CHECKED: this machine has no CPU idle state deeper than state0 to disable");
    }
    exist
}

#[test]
fn overlapping_and_killed_idle_state_limits_leave_every_state_as_it_was() {
    let _one = need_root();
    if !idle_states_exist() {
        return;
    }
    let before = idle_states();
    // Overlapping, both ending normally: timerlat first, a run a second later.
    let a = deepest_state_run(&["timerlat", "hist", "-d", "3", "-q", "--deepest-idle-state", "0"]);
    std::thread::sleep(Duration::from_secs(1));
    let b = deepest_state_run(&["run", "-D", "3s", "-q", "-t", "1", "--deepest-idle-state", "0"]);
    wait_for("the limit", Duration::from_secs(15), some_state_disabled);
    for c in [a, b] {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(idle_states(), before, "overlapping runs left idle states changed");

    // SIGKILL: nothing of rtlab runs, the next rtlab repairs and says so.
    let mut killed = deepest_state_run(&["run", "-D", "30s", "-q", "-t", "1", "--deepest-idle-state", "0"]);
    wait_for("the limit", Duration::from_secs(15), some_state_disabled);
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_ne!(idle_states(), before, "a SIGKILL leaves them disabled until the next rtlab");
    let next = rtlab().args(["run", "--simulate", "seed:1", "-l", "10", "-q"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&next.stderr);
    assert_eq!(idle_states(), before, "the next rtlab did not repair the idle states: {stderr}");
    assert!(stderr.contains("CPU idle states left disabled by a dead rtlab"), "{stderr}");

    // A fast double Ctrl-C: the emergency exit gives them back itself.
    for _ in 0..3 {
        let c = deepest_state_run(&["run", "-D", "30s", "-q", "-t", "1", "--deepest-idle-state", "0"]);
        wait_for("the limit", Duration::from_secs(15), some_state_disabled);
        for _ in 0..2 {
            let _ = Command::new("kill").args(["-INT", &c.id().to_string()]).status();
        }
        let o = c.wait_with_output().unwrap();
        // 130: the second Ctrl-C's emergency exit; 0 when the first had already ended the run.
        assert!(matches!(o.status.code(), Some(130) | Some(0)), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(idle_states(), before, "a double Ctrl-C left idle states disabled");
    }
}

#[test]
fn a_watched_process_that_exits_is_not_replaced_by_the_stranger_that_takes_its_pid() {
    let _one = need_root();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("w.json");
    // A program that starts nothing itself (`python3` may be a shell shim that forks).
    let mut target = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = target.id();
    let started = Instant::now();
    let watch = Command::new(rtlab_path())
        .args(["watch", "-q", "--backend", "tracefs", "-D", "40s", "-p", &pid.to_string(), "--json"])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The watch is tracing (its instances exist, its reader has begun) before the target ends.
    wait_for("the watch's instances", Duration::from_secs(15), || instances_of(watch.id()).len() == 2);
    std::thread::sleep(Duration::from_millis(1000));
    target.kill().unwrap();
    target.wait().unwrap();
    // The stranger forks at once: a process that adopted it would watch its children too.
    let mut stranger = squat_with(pid, &["sh", "-c", "tail -f /dev/null & exec tail -f /dev/null"])
        .expect("no process could take the watched process's PID");
    let out = watch.wait_with_output().unwrap();
    let took = started.elapsed();
    let _ = Command::new("pkill").args(["-KILL", "-P", &pid.to_string()]).status();
    stranger.kill().unwrap();
    stranger.wait().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(took < Duration::from_secs(30), "the watch went on with the stranger for {took:?}");
    let r = read_json(&json);
    assert_eq!(r["end_reason"], "exited");
    let names: Vec<&str> = r["threads"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["sleep"], "only the watched process's thread");
}

#[test]
fn explaining_a_fast_loops_late_responses_does_not_stretch_the_watch() {
    let _one = need_root();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("w.json");
    let cpu = last_cpu().to_string();
    let started = Instant::now();
    // A loop every 200 µs whose work takes 150 µs: with a 50 µs deadline every response is late.
    let out = Command::new(rtlab_path())
        .args(["watch", "-q", "-D", "4s", "--deadline", "50us", "--explain", "--mainaffinity", "0", "--json"])
        .arg(&json)
        .args(["--", "taskset", "-c", &cpu])
        .arg(watched())
        .args(["busy", "150", "200", "100000", "0", "/dev/null"])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(out.status.success() || out.status.code() == Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(took < slow(Duration::from_secs(12)), "a 4 s watch took {took:?}");
    let r = read_json(&json);
    let s = &r["explain"];
    assert!(s["skipped_for_time"].as_u64().unwrap_or(0) > 0, "late periods past the budget are counted: {s}");
    assert!(s["explained"].as_u64().unwrap() > 0, "{s}");
}

/// Processes whose command line holds `marker` now.
fn running(marker: &str) -> usize {
    let out = Command::new("pgrep").args(["-f", marker]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// `rtlab watch -- sh -c '…'` whose command starts a daemonising descendant (setsid) and a
/// plain child, both `sleep SECONDS` (the marker).
fn watch_tree(seconds: &str, duration: &str) -> Child {
    let script = format!("setsid sleep {seconds} & sleep {seconds} & wait");
    let c = Command::new(rtlab_path())
        .args(["watch", "-q", "--backend", "tracefs", "-D", duration, "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the command's two descendants", Duration::from_secs(15), || running(&format!("^sleep {seconds}$")) == 2);
    c
}

#[test]
fn everything_a_watched_command_started_ends_with_rtlab_however_rtlab_ends() {
    let _one = need_root();
    // A normal end: the daemonised descendant too.
    let c = watch_tree("61.25", "1s");
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success());
    wait_for("the normal end's descendants to end", Duration::from_secs(15), || running("^sleep 61.25$") == 0);
    // SIGKILL: rtlab cannot act; its guardian does.
    let mut c = watch_tree("62.25", "30s");
    c.kill().unwrap();
    c.wait().unwrap();
    wait_for("a SIGKILLed watch's descendants to end", Duration::from_secs(15), || running("^sleep 62.25$") == 0);
    // Its tracefs instances are left for the next rtlab: that is this one (the tests after
    // these expect a machine with nothing to repair).
    let next = rtlab().args(["run", "--simulate", "seed:1", "-l", "10", "-q"]).output().unwrap();
    assert!(next.status.success());
    // A double Ctrl-C's emergency exit.
    let mut c = watch_tree("63.25", "30s");
    for _ in 0..2 {
        let _ = Command::new("kill").args(["-INT", &c.id().to_string()]).status();
    }
    c.wait().unwrap();
    wait_for("a doubly interrupted watch's descendants to end", Duration::from_secs(15), || {
        running("^sleep 63.25$") == 0
    });
}

#[test]
fn a_watched_command_that_reads_the_terminal_gets_it() {
    let _one = need_root();
    let cmd = format!("{} watch -q -D 20s -- sh -c 'read x; echo got:$x'", rtlab_path().display());
    let mut child = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    use std::io::Write;
    child.stdin.as_mut().unwrap().write_all(b"hello\n").unwrap();
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("got:hello"), "the command read the terminal: {s:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "the watch ended with its command");
}

#[test]
fn a_watched_process_left_a_zombie_by_its_parent_ends_the_watch() {
    let _one = need_root();
    // The child exits after 0.5 s; its parent sleeps on without reaping it: a zombie.
    let mut parent = Command::new("perl")
        .args([
            "-e",
            "$|=1; my $p = fork(); if ($p == 0) { select(undef, undef, undef, 0.5); exit 0 } print \"$p\\n\"; sleep 30",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(parent.stdout.as_mut().unwrap()), &mut line).unwrap();
    let child = line.trim().to_string();
    let started = Instant::now();
    let out = Command::new(rtlab_path()).args(["watch", "-q", "-D", "20s", "-p", &child]).output().unwrap();
    let took = started.elapsed();
    let _ = parent.kill();
    let _ = parent.wait();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(took < Duration::from_secs(8), "a zombie is gone: the watch ended after {took:?}, not at -D 20s");
}

#[test]
fn a_dead_rtlabs_private_directory_and_an_outputs_stale_temporary_file_are_removed_at_the_next_start() {
    if !common::is_root() {
        eprintln!("NOT CHECKED (the repair at start runs as root)");
        return;
    }
    // A runtime probe's directory of a pid that cannot be alive, and one of this (live) process.
    let dead = std::env::temp_dir().join("rtlab-python-4194305-AbCdEf");
    let live = std::env::temp_dir().join(format!("rtlab-python-{}-AbCdEf", std::process::id()));
    for d in [&dead, &live] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("rtlab_probe.py"), "left").unwrap();
    }
    // A rotated log's temporary file left an hour ago, and one just made (a live writer's).
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("m.hlog");
    let (stale, fresh) = (dir.path().join(".m.hlog.ABCDEFGHIJKL.tmp"), dir.path().join(".m.hlog.MNOPQRSTUVWX.tmp"));
    std::fs::write(&stale, "half").unwrap();
    std::fs::write(&fresh, "half").unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&stale).unwrap().set_modified(hour_ago).unwrap();
    let out = common::rtlab()
        .args(["run", "--simulate", "seed:1", "-t", "1", "-D", "2s", "-q", "--hlog"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c == 0 || c == 3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dead.exists(), "the dead rtlab's directory is removed");
    assert!(live.exists(), "a live process's directory is kept");
    assert!(!stale.exists() && fresh.exists(), "only the stale temporary file is removed");
    std::fs::remove_dir_all(&live).unwrap();
}
