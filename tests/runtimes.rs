//! `rtlab run --runtime ada|go|node|python`: the real runtimes (Debian's gnat, golang-go,
//! nodejs and python3, installed by .ci/run) measured through rtlab's pipeline, their period
//! counts exact, Ada's `delay` drifting and `delay until` not, and a broken, dying or missing
//! runtime an error that keeps what arrived and leaves nothing behind.

mod common;

use common::{assert_broken_run, assert_valid_run_result, is_root, read_json, rtlab, rtlab_path, slow, spawn_bound};
use serde_json::Value;
use std::path::Path;

/// Runs `rtlab run --runtime …` with `args` into `json`; the result, after checking it is valid.
fn run(dir: &Path, name: &str, args: &[&str]) -> Value {
    let json = dir.join(format!("{name}.json"));
    let o = rtlab().args(["run", "-q"]).args(args).arg("--json").arg(&json).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{name}: {err}");
    let v = read_json(&json);
    assert_valid_run_result(&v);
    v
}

/// The toolchain a runtime needs, or a loud failure naming the package (.ci/run installs it).
fn need(tool: &str, package: &str) {
    let found = std::env::var_os("PATH").iter().flat_map(std::env::split_paths).any(|d| d.join(tool).is_file());
    assert!(found, "{tool} is not installed: this test needs Debian's {package} (apt-get install {package})");
}

#[test]
fn every_runtime_counts_its_periods_exactly_for_five_seconds() {
    for (tool, package) in [("gnatmake", "gnat"), ("go", "golang-go"), ("node", "nodejs"), ("python3", "python3")] {
        need(tool, package);
    }
    let dir = tempfile::tempdir().unwrap();
    // (runtime, method, period, its workers): the runs go side by side; they count periods,
    // which no noise changes (a late wakeup's skipped periods are counted as missed).
    let cases: [(&str, &[&str], u64); 6] = [
        ("ada", &["--ada-method", "task-delay-until", "-i", "200us"], 200_000),
        ("ada", &["--ada-method", "delay-until", "-i", "1ms"], 1_000_000),
        ("go", &["--go-method", "ticker", "-i", "1ms", "--runtime-workers", "1"], 1_000_000),
        (
            "node",
            &["--node-method", "interval", "-i", "1ms", "--runtime-workers", "1", "--worker-kind", "threads"],
            1_000_000,
        ),
        ("python", &["--python-method", "call-at", "-i", "1ms"], 1_000_000),
        ("python", &["--python-method", "sleep", "-i", "1ms", "--runtime-workers", "1"], 1_000_000),
    ];
    let results: Vec<(String, Value, u64, std::path::PathBuf)> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .enumerate()
            .map(|(i, (rt, args, period))| {
                let dir = dir.path();
                s.spawn(move || {
                    let samples = dir.join(format!("{i}-{rt}.samples"));
                    let mut a = vec!["--runtime", rt, "-D", "5s", "--control", "--samples", samples.to_str().unwrap()];
                    a.extend_from_slice(args);
                    let v = run(dir, &format!("{i}-{rt}"), &a);
                    (format!("{rt} {args:?}"), v, *period, samples)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (name, v, period, samples) in results {
        let t = &v["threads"][0];
        let periods = 5_000_000_000 / period;
        let (cycles, missed) = (t["cycles"].as_u64().unwrap(), t["missed"].as_u64().unwrap());
        assert_eq!(cycles + missed, periods, "{name}: every period is a sample or a missed one");
        assert_controlled(&name, &v, &samples);
        let rt = &v["runtime"];
        assert!(rt["version"].as_str().is_some_and(|s| !s.is_empty()), "{name}: {rt}");
        assert_eq!(rt["period_ns"].as_u64(), Some(period), "{name}");
        assert!(rt["facts"].as_object().is_some_and(|f| !f.is_empty()), "{name}: the runtime says what it is");
        if rt["workers"].as_u64() == Some(1) {
            assert_eq!(v["loads"][0]["workers"], 1, "{name}: the workers are a load inside the runtime");
            assert!(v["loads"][0]["ops"].as_u64().unwrap() > 0, "{name}: the workers worked");
        }
    }
}

/// A run with `--control`: the OS thread beside the runtime is thread 1, named `control`, in
/// the same samples file with every one of its samples; `all` is the runtime's alone; the
/// comparison is the runtime's figure minus the control's, exactly.
fn assert_controlled(name: &str, v: &Value, samples: &Path) {
    let (runtime, control) = (&v["threads"][0], &v["threads"][1]);
    assert_eq!(v["threads"].as_array().map(Vec::len), Some(2), "{name}");
    assert_eq!((control["thread"].as_u64(), control["name"].as_str()), (Some(1), Some("control")), "{name}");
    assert_eq!(control["policy"], "other", "{name}: the control is scheduled as the runtime's task is");
    assert!(control["cycles"].as_u64().unwrap() > 0, "{name}: the control measured");
    assert_eq!(v["runtime"]["control"]["thread"], 1, "{name}");
    assert_eq!((v["all"]["threads"].as_u64(), &v["all"]["cycles"]), (Some(1), &runtime["cycles"]), "{name}");
    let excess = &v["runtime"]["control"]["excess_ns"];
    // A percentile above the histogram's range is unknown (null), and so is its difference.
    let minus = |r: &Value, c: &Value| r.as_i64().zip(c.as_i64()).map(|(r, c)| r - c);
    for k in ["50", "90", "99", "99.9"] {
        let (r, c) = (&runtime["percentiles_ns"][k], &control["percentiles_ns"][k]);
        assert_eq!(excess[k].as_i64(), minus(r, c), "{name}: p{k}");
    }
    assert!(excess["50"].as_i64().is_some(), "{name}: the medians are known");
    assert_eq!(excess["max"].as_i64(), minus(&runtime["max_ns"], &control["max_ns"]), "{name}: max");
    let o = rtlab().arg("samples").arg(samples).arg("--csv").output().unwrap();
    assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    for thread in [runtime, control] {
        let n = thread["thread"].as_u64().unwrap().to_string();
        let rows = text.lines().skip(1).filter(|l| l.split(',').next() == Some(n.as_str())).count();
        assert_eq!(rows as u64, thread["cycles"].as_u64().unwrap(), "{name}: thread {n}'s samples in the file");
    }
}

#[test]
fn adas_delay_drifts_by_every_cycles_overhead_and_delay_until_does_not() {
    need("gnatmake", "gnat");
    let dir = tempfile::tempdir().unwrap();
    let (relative, absolute) = std::thread::scope(|s| {
        let d = dir.path();
        // 4 000 cycles: the drift is a sum over every cycle, so the relation holds at any length.
        let rel = s.spawn(move || run(d, "delay", &["--runtime", "ada", "--ada-method", "delay", "-D", "4s"]));
        let abs = s.spawn(move || run(d, "until", &["--runtime", "ada", "--ada-method", "delay-until", "-D", "4s"]));
        (rel.join().unwrap(), abs.join().unwrap())
    });
    let figures = |v: &Value| {
        let t = &v["threads"][0];
        let sum = t["mean_ns"].as_f64().unwrap() * t["cycles"].as_f64().unwrap();
        (t["drift_ns"].as_i64().unwrap(), sum.round() as i64, t["max_ns"].as_i64().unwrap())
    };
    // `delay`: the n-th wakeup is late by every earlier delay's lateness and the time between
    // wakeup and the next delay, so the drift is at least the sum of the latencies.
    let (drift, sum, _) = figures(&relative);
    assert_eq!(relative["threads"][0]["cycles"], 4_000);
    assert!(drift >= sum && sum > 0, "delay: drift {drift} ns against latencies summing to {sum} ns");
    assert_eq!(relative["runtime"]["facts"]["delay_impl"], "nanosleep-loop");
    // `delay until`: the last wakeup is late by its own latency only, never more than the largest.
    let (drift, _, max) = figures(&absolute);
    assert!((0..=max).contains(&drift), "delay until: drift {drift} ns, largest latency {max} ns");
    // The summary says it per second.
    let o = rtlab().arg("show").arg(dir.path().join("delay.json")).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("µs per second"), "{text}");
}

/// A stand-in `python3` that says what `body` says (a runtime that breaks, on purpose).
fn broken_python(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\necho 'V broken'\necho 'T 0'\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn a_runtime_that_dies_or_garbles_is_an_error_that_keeps_what_arrived_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "garbage",
            "echo 'S 1000 1000 0'\necho 'S 2000 2000 0'\necho 'S what'\nsleep 300",
            "unexpected line from the Python program: 'S what'",
        ),
        ("crash", "echo 'S 1000 1000 0'\nkill -9 $$", "exited (killed by signal 9) after 1 sample"),
        ("short", "echo 'S 1000 1000 0'\necho 'E 3 0'\nsleep 300", "says it sent 3 samples, 1 arrived"),
    ];
    for (name, body, expect) in cases {
        let fake = broken_python(dir.path(), name, body);
        let json = dir.path().join(format!("{name}.json"));
        let args: Vec<&std::ffi::OsStr> = ["run", "-q", "--runtime", "python", "-D", "5s", "--python3"]
            .iter()
            .map(|a| a.as_ref())
            .chain([fake.as_os_str()])
            .collect();
        assert_broken_run(name, &args, &json, expect);
        let left = std::process::Command::new("pgrep").arg("-f").arg(&fake).output().unwrap();
        assert!(
            left.stdout.is_empty(),
            "{name}: the stand-in was left running: {}",
            String::from_utf8_lossy(&left.stdout)
        );
    }
    // A directory is left when its rtlab (the pid in its name) has ended: other tests' runs
    // may be running beside this one.
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.strip_prefix("rtlab-python-").and_then(|r| r.split('-').next()).map(str::to_string);
            pid.is_some_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        })
        .collect();
    assert!(leftovers.is_empty(), "the probe's private directory was left: {leftovers:?}");
}

#[test]
fn a_missing_toolchain_names_its_debian_package_and_bad_options_are_refused() {
    for (rt, package, flag) in
        [("ada", "gnat", "--gnatmake"), ("go", "golang-go", "--go"), ("node", "nodejs", "--node")]
    {
        let o = rtlab().args(["run", "--runtime", rt, "-D", "1s"]).env("PATH", "/nonexistent").output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{rt}: {err}");
        assert!(err.contains(package) && err.contains(flag), "{rt}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{rt}: {err}");
    }
    for bad in [
        vec!["--runtime", "go", "--gomaxprocs", "2"],
        vec!["--runtime", "go", "-D", "1s", "--go", "/nonexistent/go"],
        vec!["--runtime", "node", "-D", "1s", "-i", "500us"],
        vec!["--runtime", "python", "-D", "1s", "--python-method", "select"],
        vec!["--runtime", "python", "-D", "1s", "--worker-kind", "goroutines"],
        vec!["--runtime", "ada", "-D", "1s", "--go-method", "ticker"],
        vec!["--runtime", "ada", "-l", "100"],
        vec!["--runtime", "go,node", "-D", "1s"],
        vec!["--gomaxprocs", "2", "-D", "1s"],
        vec!["--runtime", "ada", "-D", "1s", "--ada-priority", "98"],
    ] {
        let o = rtlab().arg("run").args(&bad).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
}

#[test]
fn a_control_runs_beside_tokio_too_is_refused_without_a_runtime_and_a_runtime_sweep_draws_it() {
    need("python3", "python3");
    need("node", "nodejs");
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("tokio.samples");
    let v = run(
        dir.path(),
        "tokio",
        &["--runtime", "tokio", "-i", "1ms", "-D", "1s", "--control", "--samples", samples.to_str().unwrap()],
    );
    assert_controlled("tokio", &v, &samples);
    let none = dir.path().join("none");
    let none = none.to_str().unwrap();
    for args in
        [&["run", "--control", "-D", "1s"][..], &["sweep", "--runtime", "os", "--control", "-D", "1s", "--out", none]]
    {
        let o = rtlab().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--control measures an OS thread beside a runtime's probe"), "{err}");
    }
    // Three runtimes against their own workers: os is its own control, the others have one.
    let out = dir.path().join("sweep");
    let o = rtlab()
        .args(["sweep", "--runtime", "os,python,node", "--workers", "0,1", "-i", "1ms", "-D", "1s", "--control"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    let column = |name: &str| rows[0].iter().position(|c| *c == name).unwrap();
    let (runtime, workers, control) = (column("runtime"), column("cpu_workers"), column("control_p99_latency_ms"));
    let points: Vec<(&str, &str, bool)> =
        rows[1..].iter().map(|r| (r[runtime], r[workers], !r[control].is_empty())).collect();
    assert_eq!(
        points,
        [
            ("os", "0", false),
            ("os", "1", false),
            ("python", "0", true),
            ("python", "1", true),
            ("node", "0", true),
            ("node", "1", true)
        ]
    );
    let svg = dir.path().join("sweep.svg");
    let o = rtlab().arg("plot").arg(&out).arg("-o").arg(&svg).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"), "the picture is drawn");
}

/// True when a process whose command line holds `marker` is alive.
fn alive(marker: &str) -> bool {
    !std::process::Command::new("pgrep").arg("-f").arg(marker).output().unwrap().stdout.is_empty()
}

#[test]
fn a_daemon_that_keeps_the_probes_pipes_open_neither_hangs_rtlab_nor_outlives_it() {
    let dir = tempfile::tempdir().unwrap();
    // It sends one sample and its end, leaves a daemon of its own session holding its stdout
    // and stderr, and exits.
    let fake = broken_python(dir.path(), "daemon", "echo 'S 1000 1000 0'\necho 'E 1 0'\nsetsid sleep 3901 &\nexit 0");
    let json = dir.path().join("d.json");
    let t0 = std::time::Instant::now();
    let out = rtlab()
        .args(["run", "-q", "--runtime", "python", "-D", "3s", "--python3"])
        .arg(&fake)
        .arg("--json")
        .arg(&json)
        .timeout(spawn_bound(std::time::Duration::from_secs(60)))
        .output()
        .unwrap();
    assert!(out.status.code().is_some(), "rtlab hung on the daemon's pipe");
    assert!(t0.elapsed() < slow(std::time::Duration::from_secs(20)), "ended with its run: {:?}", t0.elapsed());
    assert_eq!(read_json(&json)["threads"][0]["cycles"], 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!alive("sleep 3901"), "the daemon outlived rtlab");
}

#[test]
fn a_build_that_never_ends_or_floods_its_output_is_stopped_bounded_and_leaves_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let tool = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    };
    // A compiler that hangs (with a helper of its own session): one Ctrl-C ends rtlab at once.
    let hang = tool("hang-gnatmake", "setsid sleep 3902 &\nsleep 3903");
    let mut child = std::process::Command::new(rtlab_path())
        .args(["run", "-q", "--runtime", "ada", "-D", "2s", "--gnatmake"])
        .arg(&hang)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !alive("sleep 3903") && t0.elapsed() < slow(std::time::Duration::from_secs(10)) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(alive("sleep 3903"), "the build runs");
    std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < slow(std::time::Duration::from_secs(10)) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let ended = child.try_wait().unwrap();
    let _ = child.kill();
    assert!(ended.is_some(), "one Ctrl-C ends a build");
    assert!(!alive("sleep 3902") && !alive("sleep 3903"), "the build and its helper ended with rtlab");
    // A compiler that writes 300 MB on stderr and fails: its last words, in bounded memory.
    let flood = tool(
        "flood-gnatmake",
        "head -c 300000000 /dev/zero | tr '\\0' 'x' | fold -w 1000 >&2\necho >&2\necho 'the last word' >&2\nexit 4",
    );
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(rtlab_path())
        .args(["run", "-q", "--runtime", "ada", "-D", "2s", "--gnatmake"])
        .arg(&flood)
        .output()
        .expect("GNU time (apt-get install time)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did not build (exit code 4): the last word"), "{err}");
    let rss_kb: u64 = err.lines().last().unwrap().trim().parse().unwrap();
    // Well below the 300 MB it wrote (qemu-user's own translation buffers included, emulated).
    assert!(rss_kb < 200_000, "the build's output was kept whole: {rss_kb} KB");
}

/// True when process `pid`'s parents lead to `ancestor`.
fn descends_from(mut pid: u32, ancestor: u32) -> bool {
    while pid > 1 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
        // The parent is the second field after the command's closing parenthesis.
        match stat.rsplit(')').next().and_then(|s| s.split_whitespace().nth(1)).and_then(|p| p.parse().ok()) {
            Some(parent) if parent == ancestor => return true,
            Some(parent) => pid = parent,
            None => return false,
        }
    }
    false
}

#[test]
fn adas_workers_never_run_above_its_measuring_task() {
    need("gnatmake", "gnat");
    if !is_root() {
        eprintln!("NOT CHECKED (FIFO priorities need root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("a.json");
    let mut child = std::process::Command::new(rtlab_path())
        .args(["run", "-q", "--runtime", "ada", "--ada-priority", "10", "--runtime-workers", "1", "-D", "6s", "--json"])
        .arg(&json)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The program's threads and their real-time priorities while it measures.
    let mut prios: Vec<i64> = Vec::new();
    let t0 = std::time::Instant::now();
    while prios.len() < 2 && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let pids = std::process::Command::new("pgrep").args(["-f", "rtlab_probe_tasks"]).output().unwrap();
        // This run's program: another test's Ada program may run beside it.
        let ours = String::from_utf8_lossy(&pids.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect::<Vec<u32>>();
        for pid in ours.into_iter().filter(|p| descends_from(*p, child.id())) {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten();
            prios = tasks
                .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
                .filter_map(|s| s.rsplit(')').next()?.split_whitespace().nth(37)?.parse().ok())
                .filter(|p: &i64| *p > 0)
                .collect();
        }
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{:?}", child.stderr.take().map(std::io::read_to_string));
    // rt_priority (stat field 40; the 38th from the state on) of the FIFO threads: the
    // environment task, which measures, at the asked 10 (GNAT maps Ada P to SCHED_FIFO P + 1:
    // 11), and the worker, which spins and must be below it.
    prios.sort_unstable();
    eprintln!("the Ada program's FIFO threads: {prios:?}");
    assert_eq!(prios.last(), Some(&11), "the measuring task at the asked priority: {prios:?}");
    assert!(prios[0] < 11, "the worker below the measurer: {prios:?}");
}
