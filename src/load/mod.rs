//! Background loads: CPU, messaging (hackbench's model), memory, io and external commands,
//! each counting its own work so a run can report latency *and* the throughput it cost.
//!
//! Loads never outlive rtlab: threads end with the process; child processes run in their own
//! process group with a parent-death signal, and are stopped group-wide on every exit path.

pub mod spec;
pub mod workers;

use crate::rt::affinity::{self, CpuSet};
use crate::rt::clock::{self, ClockId};
use crate::rt::privileges::Privileges;
use crate::rt::process::{self, SpawnOptions};
use crate::rt::sched;
use serde::{Deserialize, Serialize};
pub use spec::{Kind, LoadSched, LoadSpec};
use std::io::{BufRead, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a load achieved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    /// The spec as written.
    pub spec: String,
    /// `cpu`, `messaging`, `memory`, `io` or `command`.
    pub kind: String,
    /// Workers.
    pub workers: usize,
    /// Scheduling asked (`other`, `idle`, `fifo:49`, …).
    pub policy: String,
    /// What one op is: `terms`, `iterations`, `messages`, `bytes` or `starts`.
    pub unit: String,
    /// Ops counted.
    pub ops: u64,
    /// How long the load ran (s).
    pub elapsed_s: f64,
    /// Ops per second.
    pub rate_per_s: f64,
    /// CPU time the workers used (s), when known.
    pub cpu_s: Option<f64>,
    /// CPU time per worker per second of run: 1.0 is a fully busy worker.
    pub utilization: Option<f64>,
    /// What went wrong or was downgraded (e.g. no privilege for fifo:49).
    pub warnings: Vec<String>,
}

impl LoadResult {
    /// A load that ran inside a language runtime (pi-loop terms over `elapsed_s`): CPU time
    /// and utilisation are not known from outside the runtime.
    pub fn in_runtime(
        spec: String,
        kind: &str,
        workers: usize,
        policy: String,
        terms: u64,
        elapsed_s: f64,
    ) -> LoadResult {
        let elapsed_s = elapsed_s.max(1e-9);
        LoadResult {
            spec,
            kind: kind.into(),
            workers,
            policy,
            unit: "terms".into(),
            ops: terms,
            elapsed_s,
            rate_per_s: terms as f64 / elapsed_s,
            cpu_s: None,
            utilization: None,
            warnings: vec![],
        }
    }
}

fn kind_name(k: &Kind) -> (&'static str, &'static str) {
    match k {
        Kind::Cpu { int: false } => ("cpu", "terms"),
        Kind::Cpu { int: true } => ("cpu", "iterations"),
        Kind::Messaging { .. } => ("messaging", "messages"),
        Kind::Memory { .. } => ("memory", "bytes"),
        Kind::Io { .. } => ("io", "bytes"),
        Kind::Command { .. } => ("command", "starts"),
    }
}

/// Checks the safety rules before anything starts: an RT-priority load needs a bounded run,
/// and an RT busy load on every CPU is refused when RT throttling is off unless `force`.
pub fn check_safety(specs: &[LoadSpec], bounded: bool, force: bool, privileges: &Privileges) -> Result<(), String> {
    let rt: Vec<&LoadSpec> = specs.iter().filter(|s| s.sched.is_realtime()).collect();
    if let (Some(s), false) = (rt.first(), bounded) {
        return Err(format!("load '{}' runs at {}: an RT-priority load needs a bounded run; give -D", s.text, s.sched));
    }
    if force || privileges.sched_rt_runtime_us != Some(-1) {
        return Ok(());
    }
    let online = affinity::online_cpus();
    let mut covered = CpuSet::default();
    let mut unpinned_workers = 0;
    for s in rt.iter().filter(|s| s.is_busy()) {
        match s.cpu_set() {
            Some(c) => covered = CpuSet::from_cpus(covered.cpus().iter().chain(c.cpus()).copied()),
            None => unpinned_workers += s.workers,
        }
    }
    if unpinned_workers >= online.len() || online.difference(&covered).is_empty() && !covered.is_empty() {
        return Err("refusing an RT-priority busy load on every CPU while RT throttling is disabled \
             (sched_rt_runtime_us = -1): it would starve the kernel's own threads and can hang the machine; \
             leave a CPU free (cpus=…), use fewer workers, or pass --force"
            .into());
    }
    Ok(())
}

struct Running {
    spec: LoadSpec,
    ops: Arc<AtomicU64>,
    cpu_ns: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
    children: Vec<(Child, std::process::ChildStdin)>,
    commands: Vec<JoinHandle<()>>,
    warnings: Arc<Mutex<Vec<String>>>,
}

/// Loads that are running.
pub struct LoadSet {
    running: Vec<Running>,
    stop: Arc<AtomicBool>,
    started: Instant,
    stopped: bool,
}

fn apply_sched(spec: &LoadSpec, warnings: &Mutex<Vec<String>>) {
    let note = |m: String| {
        if let Ok(mut w) = warnings.lock() {
            if !w.contains(&m) {
                w.push(m);
            }
        }
    };
    if let Some(c) = spec.cpu_set() {
        if let Err(e) = affinity::set_current_thread(&c) {
            note(format!("could not pin to CPUs {c}: {e}"));
        }
    }
    if let Err(e) = sched::set_current_thread(&spec.sched.params()) {
        note(format!("could not get {} ({e}); the load runs with the default policy", spec.sched));
    }
    if spec.sched.nice != 0 {
        if let Err(e) = process::set_thread_nice(spec.sched.nice) {
            note(format!("could not set nice {} ({e})", spec.sched.nice));
        }
    }
}

impl LoadSet {
    /// Starts every load.
    pub fn start(specs: &[LoadSpec]) -> Result<LoadSet, String> {
        LoadSet::start_in(specs, false)
    }

    /// Starts every load; `in_worker` when this process is itself a `load-worker` (then
    /// commands run under this process's supervision instead of a further worker).
    fn start_in(specs: &[LoadSpec], in_worker: bool) -> Result<LoadSet, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut set = LoadSet { running: Vec::new(), stop: Arc::clone(&stop), started: Instant::now(), stopped: false };
        for spec in specs {
            let r = Running {
                spec: spec.clone(),
                ops: Arc::new(AtomicU64::new(0)),
                cpu_ns: Arc::new(AtomicU64::new(0)),
                threads: Vec::new(),
                children: Vec::new(),
                commands: Vec::new(),
                warnings: Arc::new(Mutex::new(Vec::new())),
            };
            set.running.push(r);
            let r = set.running.last_mut().expect("just pushed");
            for id in 0..spec.workers {
                // An external command runs under a load-worker process of rtlab's, which stops the
                // command's whole process group if rtlab dies (a shell's children would not get
                // a parent-death signal of their own).
                let via_worker = spec.process || matches!(spec.kind, Kind::Command { .. }) && !in_worker;
                match (&spec.kind, via_worker) {
                    (Kind::Command { cmd }, false) => {
                        let h = command_supervisor(cmd.clone(), spec, id, &stop, r)
                            .map_err(|e| format!("cannot start load '{}': {e}", spec.text))?;
                        r.commands.push(h);
                    }
                    (_, true) => {
                        let exe =
                            std::env::current_exe().map_err(|e| format!("cannot find rtlab's own binary: {e}"))?;
                        let mut cmd = Command::new(exe);
                        cmd.arg("load-worker")
                            .arg(spec.with_workers(1).text_for_worker())
                            .stdin(Stdio::piped())
                            .stdout(Stdio::piped());
                        let opts = SpawnOptions {
                            cpus: spec.cpu_set(),
                            death_signal: Some(libc::SIGTERM),
                            ..SpawnOptions::default()
                        };
                        let mut child = process::spawn(&mut cmd, &opts)
                            .map_err(|e| format!("cannot start load '{}': {e}", spec.text))?;
                        let stdin = child.stdin.take().expect("piped");
                        r.children.push((child, stdin));
                    }
                    (kind, false) => {
                        let (kind, ops, cpu, stop, warnings, spec2) = (
                            kind.clone(),
                            Arc::clone(&r.ops),
                            Arc::clone(&r.cpu_ns),
                            Arc::clone(&stop),
                            Arc::clone(&r.warnings),
                            spec.clone(),
                        );
                        let h = std::thread::Builder::new()
                            .name(format!("rtlab-load-{id}"))
                            .spawn(move || {
                                let _ = crate::rt::signals::block_in_current_thread(&[
                                    libc::SIGINT,
                                    libc::SIGTERM,
                                    libc::SIGUSR1,
                                ]);
                                apply_sched(&spec2, &warnings);
                                if let Err(e) = workers::run(&kind, id, &ops, &stop, &cpu) {
                                    if let Ok(mut w) = warnings.lock() {
                                        w.push(e);
                                    }
                                }
                                cpu.fetch_add(clock::now(ClockId::THREAD_CPUTIME).max(0) as u64, Relaxed);
                            })
                            .map_err(|e| format!("cannot start a worker of '{}': {e}", spec.text))?;
                        r.threads.push(h);
                    }
                }
            }
        }
        Ok(set)
    }

    /// Stops every load and reports what each achieved.
    pub fn stop(mut self) -> Vec<LoadResult> {
        self.stop_all()
    }

    fn stop_all(&mut self) -> Vec<LoadResult> {
        if self.stopped {
            return Vec::new();
        }
        self.stopped = true;
        self.stop.store(true, Relaxed);
        let elapsed = self.started.elapsed().as_secs_f64();
        let mut results = Vec::new();
        for r in &mut self.running {
            for h in r.threads.drain(..) {
                let _ = h.join();
            }
            for h in r.commands.drain(..) {
                let _ = h.join();
            }
            let mut child_cpu = 0.0;
            for (mut child, stdin) in r.children.drain(..) {
                drop(stdin); // the worker stops at end of input and prints its count
                let mut line = String::new();
                if let Some(out) = child.stdout.take() {
                    let _ = std::io::BufReader::new(out).read_line(&mut line);
                }
                let _ = process::kill_group(child.id(), libc::SIGKILL);
                let _ = child.wait();
                let f: Vec<&str> = line.split_whitespace().collect();
                if let ["ops", n, "cpu_s", c] = f.as_slice() {
                    r.ops.fetch_add(n.parse().unwrap_or(0), Relaxed);
                    child_cpu += c.parse::<f64>().unwrap_or(0.0);
                }
            }
            let (kind, unit) = kind_name(&r.spec.kind);
            let ops = r.ops.load(Relaxed);
            let cpu_s = r.cpu_ns.load(Relaxed) as f64 / 1e9 + child_cpu;
            let known_cpu = !matches!(r.spec.kind, Kind::Command { .. }) && r.spec.workers > 0;
            results.push(LoadResult {
                spec: r.spec.text.clone(),
                kind: kind.into(),
                workers: r.spec.workers,
                policy: r.spec.sched.to_string(),
                unit: unit.into(),
                ops,
                elapsed_s: elapsed,
                rate_per_s: if elapsed > 0.0 { ops as f64 / elapsed } else { 0.0 },
                cpu_s: known_cpu.then_some(cpu_s),
                utilization: (known_cpu && elapsed > 0.0).then(|| cpu_s / elapsed / r.spec.workers as f64),
                warnings: r.warnings.lock().map(|w| w.clone()).unwrap_or_default(),
            });
        }
        results
    }
}

impl Drop for LoadSet {
    fn drop(&mut self) {
        let _ = self.stop_all();
    }
}

impl LoadSpec {
    /// The spec text for a child worker process (thread mode, one worker).
    fn text_for_worker(&self) -> String {
        let (kind, rest) = self.text.split_once(':').unwrap_or((&self.text, ""));
        let items: Vec<&str> = rest
            .split(',')
            .filter(|i| !i.is_empty() && !i.starts_with("workers=") && !i.starts_with("mode="))
            .collect();
        if items.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}:{}", items.join(","))
        }
    }
}

/// Keeps one instance of `cmd` running until the stop flag, restarting it when it ends early
/// (as rteval does with hackbench), then stops its whole process group.
fn command_supervisor(
    cmd: String,
    spec: &LoadSpec,
    id: usize,
    stop: &Arc<AtomicBool>,
    r: &Running,
) -> std::io::Result<JoinHandle<()>> {
    let (stop, ops, warnings) = (Arc::clone(stop), Arc::clone(&r.ops), Arc::clone(&r.warnings));
    let opts = SpawnOptions {
        sched: Some(spec.sched.params()),
        nice: (spec.sched.nice != 0).then_some(spec.sched.nice),
        cpus: spec.cpu_set(),
        death_signal: None,
    };
    std::thread::Builder::new().name(format!("rtlab-cmd-{id}")).spawn(move || {
        let note = |m: String| {
            if let Ok(mut w) = warnings.lock() {
                w.push(m);
            }
        };
        let mut quick_failures = 0;
        while !stop.load(Relaxed) {
            let mut c = Command::new("sh");
            c.arg("-c").arg(&cmd).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
            let started = Instant::now();
            let mut child = match process::spawn(&mut c, &opts) {
                Ok(ch) => ch,
                Err(e) => {
                    note(format!("cannot start '{cmd}': {e}"));
                    return;
                }
            };
            ops.fetch_add(1, Relaxed);
            loop {
                if stop.load(Relaxed) {
                    let _ = process::kill_group(child.id(), libc::SIGTERM);
                    let deadline = Instant::now() + Duration::from_secs(2);
                    while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    let _ = process::kill_group(child.id(), libc::SIGKILL);
                    let _ = child.wait();
                    return;
                }
                if let Ok(Some(status)) = child.try_wait() {
                    // The command ended by itself: the rest of its group goes too, then restart.
                    let _ = process::kill_group(child.id(), libc::SIGKILL);
                    if started.elapsed() < Duration::from_millis(200) {
                        quick_failures += 1;
                        if quick_failures >= 5 {
                            note(format!("'{cmd}' keeps ending at once ({status}); it is no longer restarted"));
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    })
}

/// The body of `rtlab load-worker SPEC`: runs one worker until its standard input ends or it
/// gets SIGTERM/SIGINT (rtlab died: the parent-death signal), then stops everything it started
/// and prints `ops N cpu_s X`.
pub fn worker_main(spec: &LoadSpec) -> Result<(), String> {
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, Arc::clone(&term)).map_err(|e| e.to_string())?;
    }
    let set = LoadSet::start_in(&[spec.with_workers(1)], true)?;
    let eof = Arc::new(AtomicBool::new(false));
    let e = Arc::clone(&eof);
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        e.store(true, Relaxed);
    });
    while !eof.load(Relaxed) && !term.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = set.stop();
    let (ops, cpu) = r.first().map_or((0, 0.0), |r| (r.ops, r.cpu_s.unwrap_or(0.0)));
    let mut out = std::io::stdout().lock();
    writeln!(out, "ops {ops} cpu_s {cpu}").map_err(|e| e.to_string())?;
    out.flush().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn privileges(rt_runtime: i64) -> Privileges {
        Privileges { sched_rt_runtime_us: Some(rt_runtime), ..Privileges::current() }
    }

    #[test]
    fn rt_loads_need_a_bounded_run() {
        let rt: Vec<LoadSpec> = vec!["cpu:policy=fifo:10".parse().unwrap()];
        assert!(check_safety(&rt, false, false, &privileges(950_000)).unwrap_err().contains("bounded"));
        assert!(check_safety(&rt, true, false, &privileges(950_000)).is_ok());
        let other: Vec<LoadSpec> = vec!["cpu:workers=8".parse().unwrap()];
        assert!(check_safety(&other, false, false, &privileges(-1)).is_ok());
    }

    #[test]
    fn an_rt_busy_load_on_every_cpu_without_throttling_is_refused_unless_forced() {
        let n = affinity::online_cpus().len();
        let all: Vec<LoadSpec> = vec![format!("cpu:workers={n},policy=fifo:49").parse().unwrap()];
        let e = check_safety(&all, true, false, &privileges(-1)).unwrap_err();
        assert!(e.contains("RT throttling is disabled") && e.contains("--force"), "{e}");
        assert!(check_safety(&all, true, true, &privileges(-1)).is_ok());
        assert!(check_safety(&all, true, false, &privileges(950_000)).is_ok(), "throttling protects the machine");
        let online = affinity::online_cpus();
        let pinned: Vec<LoadSpec> = vec![format!("cpu:workers=1,policy=fifo:49,cpus={online}").parse().unwrap()];
        assert!(check_safety(&pinned, true, false, &privileges(-1)).is_err(), "pinned to every CPU counts too");
        let io: Vec<LoadSpec> = vec![format!("io:workers={n},policy=fifo:49").parse().unwrap()];
        assert!(check_safety(&io, true, false, &privileges(-1)).is_ok(), "io sleeps in fsync; it is not busy");
    }

    #[test]
    fn rates_are_ops_over_elapsed_time() {
        let set = LoadSet::start(&["cpu:workers=1".parse().unwrap()]).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let r = &set.stop()[0];
        assert!(r.ops > 0);
        assert!((r.rate_per_s * r.elapsed_s - r.ops as f64).abs() < 1e-6 * r.ops as f64);
        assert_eq!((r.kind.as_str(), r.unit.as_str(), r.workers), ("cpu", "terms", 1));
    }
}
