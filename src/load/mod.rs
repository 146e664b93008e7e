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
use crate::rt::signals;
use serde::{Deserialize, Serialize};
pub use spec::{sched_text, Kind, LoadSched, LoadSpec};
use std::io::{BufRead, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `rtlab load --json` (schema `rtlab.load/1`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadReport {
    /// Each load and what it achieved.
    pub loads: Vec<LoadResult>,
    /// Always `rtlab.load/1`.
    pub schema: String,
    /// The rtlab version that wrote it.
    pub tool_version: String,
}

/// What a load achieved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadResult {
    /// The spec as written.
    pub spec: String,
    /// `cpu`, `messaging`, `memory`, `io` or `command`.
    pub kind: String,
    /// Workers.
    pub workers: usize,
    /// Scheduling the workers obtained (`other`, `idle`, `fifo:49`, …), read back from the
    /// kernel: without privileges an RT load runs as `other`.
    pub policy: String,
    /// Scheduling asked.
    #[serde(default)]
    pub policy_requested: String,
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
    /// A worker failed (died, could not allocate, could not start): the throughput covers
    /// only the work done before; the run fails (exit 1).
    #[serde(default)]
    pub failed: bool,
    /// Why the workers did not get `policy_requested` (with the fix), when they did not.
    #[serde(skip)]
    pub downgrade_why: Option<String>,
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
            policy_requested: policy.clone(),
            policy,
            unit: "terms".into(),
            ops: terms,
            elapsed_s,
            rate_per_s: terms as f64 / elapsed_s,
            cpu_s: None,
            utilization: None,
            warnings: vec![],
            failed: false,
            downgrade_why: None,
        }
    }
}

fn kind_name(k: &Kind) -> (&'static str, &'static str) {
    match k {
        Kind::Cpu { int: false, .. } => ("cpu", "terms"),
        Kind::Cpu { int: true, .. } => ("cpu", "iterations"),
        Kind::Messaging { .. } => ("messaging", "messages"),
        Kind::Memory { .. } => ("memory", "bytes"),
        Kind::Io { .. } => ("io", "bytes"),
        Kind::Command { .. } => ("command", "starts"),
    }
}

/// Most workers (threads or processes) per CPU a load may ask for without `--force`: beyond
/// it they only queue for the CPUs, and starting and stopping them takes longer than a run.
pub const MAX_WORKERS_PER_CPU: usize = 64;
/// How long workers may take to start before the rest are given up (and reported).
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long process workers get to report their count once told to stop; after it they are
/// killed and reported. Keeps the end of a run within a second of `-D`.
const STOP_WAIT: Duration = Duration::from_millis(500);

const GIB: f64 = (1u64 << 30) as f64;

/// Threads or processes a spec runs (a messaging worker is a group of 2·fds threads).
fn tasks(s: &LoadSpec) -> usize {
    match s.kind {
        Kind::Messaging { fds, .. } => s.workers.saturating_mul(2 * fds),
        _ => s.workers,
    }
}

/// Checks the loads before anything starts: CPUs that exist, an RT-priority load only in a
/// bounded run, no RT busy load on every CPU while RT throttling is off, no more workers than
/// the machine can run and no more memory than it has (the last three unless `force`).
pub fn check_safety(specs: &[LoadSpec], bounded: bool, force: bool, privileges: &Privileges) -> Result<(), String> {
    let online = affinity::online_cpus();
    for s in specs {
        if let Some(c) = s.cpu_set() {
            let missing = c.difference(&online);
            if !missing.is_empty() {
                return Err(format!(
                    "load '{}': cpus={c} names CPU {missing}, which does not exist or is offline; online CPUs are {online}",
                    s.text
                ));
            }
        }
    }
    let rt: Vec<&LoadSpec> = specs.iter().filter(|s| s.sched.is_realtime()).collect();
    if let (Some(s), false) = (rt.first(), bounded) {
        return Err(format!("load '{}' runs at {}: an RT-priority load needs a bounded run; give -D", s.text, s.sched));
    }
    if force {
        return Ok(());
    }
    let total: usize = specs.iter().map(tasks).fold(0, usize::saturating_add);
    let limit = MAX_WORKERS_PER_CPU * online.len().max(1);
    if total > limit {
        return Err(format!(
            "the loads ask for {total} worker threads/processes, more than {MAX_WORKERS_PER_CPU} per CPU ({limit} on \
             {} CPUs): they would only queue, and starting and stopping them outlasts the run; use fewer workers, or \
             pass --force",
            online.len()
        ));
    }
    let memory: u64 = specs
        .iter()
        .map(|s| match s.kind {
            Kind::Memory { bytes } => (bytes as u64).saturating_mul(s.workers as u64),
            _ => 0,
        })
        .fold(0, u64::saturating_add);
    if let Some(avail) = process::mem_available_bytes().filter(|a| memory > *a) {
        return Err(format!(
            "the memory loads need {:.1} GiB in all, more than the {:.1} GiB available: the machine would swap or \
             kill rtlab; use a smaller size= or fewer workers, or pass --force",
            memory as f64 / GIB,
            avail as f64 / GIB
        ));
    }
    if privileges.sched_rt_runtime_us != Some(-1) {
        return Ok(());
    }
    let mut covered = CpuSet::default();
    let mut unpinned_workers = 0;
    for s in rt.iter().filter(|s| s.is_busy()) {
        match s.cpu_set() {
            Some(c) => covered = CpuSet::from_cpus(covered.cpus().iter().chain(c.cpus()).copied()),
            None => unpinned_workers += s.workers,
        }
    }
    let fix = "leave a CPU free (cpus=…), or use fewer workers";
    match crate::rt::privileges::refuse_rt_starvation(
        "an RT-priority busy load",
        (&covered, unpinned_workers),
        &online,
        privileges.sched_rt_runtime_us,
        (false, fix),
    ) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// What the workers of one load say about themselves while they run.
#[derive(Default)]
struct Report {
    warnings: Mutex<Vec<String>>,
    failures: Mutex<Vec<String>>,
    /// The scheduling a worker obtained when it was not what was asked, and why.
    downgrade: Mutex<Option<(String, String)>>,
}

impl Report {
    fn warn(&self, m: String) {
        if let Ok(mut w) = self.warnings.lock() {
            if !w.contains(&m) {
                w.push(m);
            }
        }
    }
    fn fail(&self, m: String) {
        if let Ok(mut f) = self.failures.lock() {
            if !f.contains(&m) {
                f.push(m);
            }
        }
    }
    fn downgraded(&self, got: String, why: String) {
        if let Ok(mut d) = self.downgrade.lock() {
            d.get_or_insert((got, why));
        }
    }
}

/// A `mode=process` worker: the child, its pipes, and what it has said so far.
struct ProcessWorker {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: Option<std::process::ChildStdout>,
    said: Vec<u8>,
}

/// The final line of a `load-worker`: its work up to the end of the measured window.
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
struct WorkerReport {
    ops: u64,
    cpu_s: f64,
    policy: String,
    why: Option<String>,
    warnings: Vec<String>,
    failures: Vec<String>,
}

struct Running {
    spec: LoadSpec,
    ops: Arc<AtomicU64>,
    cpu_ns: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
    children: Vec<ProcessWorker>,
    commands: Vec<JoinHandle<()>>,
    report: Arc<Report>,
    started: usize,
}

/// Loads that are running. Workers are started by a thread of their own, so that starting
/// hundreds of processes never delays the run's stop; stopping is bounded in time.
pub struct LoadSet {
    running: Arc<Mutex<Vec<Running>>>,
    stop: Arc<AtomicBool>,
    cancel: Arc<AtomicBool>,
    /// Dropped to release the starter thread, which must outlive its child processes: the
    /// kernel sends a child its parent-death signal when the *thread* that forked it ends.
    release: Option<std::sync::mpsc::Sender<()>>,
    starter: Option<JoinHandle<()>>,
    started: Instant,
    stopped: bool,
}

/// Applies the load's CPUs, policy and nice value to the calling thread and records what it
/// obtained when that is less.
fn apply_sched(spec: &LoadSpec, report: &Report) {
    if let Some(c) = spec.cpu_set() {
        if let Err(e) = affinity::set_current_thread(&c) {
            report.warn(format!("could not pin to CPUs {c}: {e}"));
        }
    }
    if let Err(e) = sched::set_current_thread(&spec.sched.params()) {
        let why = if crate::rt::not_permitted(&e) { Privileges::current().explain_rt_denied() } else { e.to_string() };
        let got = sched::current_thread().map_or_else(|_| "other".into(), |p| p.label());
        report.downgraded(got, why);
    }
    if spec.sched.nice != 0 {
        if let Err(e) = process::set_thread_nice(spec.sched.nice) {
            report.warn(format!("could not set nice {} ({e})", spec.sched.nice));
        }
    }
}

impl LoadSet {
    /// Starts every load (in the background: this returns at once).
    pub fn start(specs: &[LoadSpec]) -> Result<LoadSet, String> {
        LoadSet::start_in(specs, false)
    }

    /// Starts every load; `in_worker` when this process is itself a `load-worker` (then
    /// commands run under this process's supervision instead of a further worker).
    fn start_in(specs: &[LoadSpec], in_worker: bool) -> Result<LoadSet, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find rtlab's own binary: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let cancel = Arc::new(AtomicBool::new(false));
        let running: Vec<Running> = specs
            .iter()
            .map(|spec| Running {
                spec: spec.clone(),
                ops: Arc::new(AtomicU64::new(0)),
                cpu_ns: Arc::new(AtomicU64::new(0)),
                threads: Vec::new(),
                children: Vec::new(),
                commands: Vec::new(),
                report: Arc::new(Report::default()),
                started: 0,
            })
            .collect();
        let running = Arc::new(Mutex::new(running));
        let (shared, stop2, cancel2) = (Arc::clone(&running), Arc::clone(&stop), Arc::clone(&cancel));
        let specs = specs.to_vec();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let starter = std::thread::Builder::new()
            .name("rtlab-load-start".into())
            .spawn(move || {
                start_workers(&specs, in_worker, &exe, &shared, &stop2, &cancel2);
                let _ = released.recv();
            })
            .map_err(|e| format!("cannot start the loads: {e}"))?;
        Ok(LoadSet {
            running,
            stop,
            cancel,
            release: Some(release),
            starter: Some(starter),
            started: Instant::now(),
            stopped: false,
        })
    }

    /// Takes the handles of every worker started so far, leaving the loads' entries (and their
    /// counters) for the starter thread.
    fn drain(&self) -> Vec<Running> {
        let Ok(mut all) = self.running.lock() else { return Vec::new() };
        all.iter_mut()
            .map(|r| Running {
                spec: r.spec.clone(),
                ops: Arc::clone(&r.ops),
                cpu_ns: Arc::clone(&r.cpu_ns),
                threads: std::mem::take(&mut r.threads),
                children: std::mem::take(&mut r.children),
                commands: std::mem::take(&mut r.commands),
                report: Arc::clone(&r.report),
                started: r.started,
            })
            .collect()
    }

    /// The work counted so far by in-process workers (what a `load-worker` samples).
    fn ops_now(&self) -> u64 {
        self.running.lock().map(|r| r.iter().map(|r| r.ops.load(Relaxed)).sum()).unwrap_or(0)
    }

    /// Stops every load and reports what each achieved in the window from its start to this
    /// call.
    pub fn stop(mut self) -> Vec<LoadResult> {
        self.stop_all()
    }

    fn stop_all(&mut self) -> Vec<LoadResult> {
        if self.stopped {
            return Vec::new();
        }
        self.stopped = true;
        // The window ends now: what in-process workers counted so far, and the same instant
        // for process workers, which report their count as of it.
        let end_mono = clock::now(ClockId::MONOTONIC);
        let elapsed = self.started.elapsed().as_secs_f64();
        self.cancel.store(true, Relaxed);
        let in_window: Vec<u64> =
            self.running.lock().map(|r| r.iter().map(|r| r.ops.load(Relaxed)).collect()).unwrap_or_default();
        self.stop.store(true, Relaxed);
        let mut running = self.drain();
        for r in &mut running {
            for w in &mut r.children {
                if let Some(mut stdin) = w.stdin.take() {
                    let _ = writeln!(stdin, "stop {end_mono}");
                }
            }
        }
        // Children are told first: the starter's last fork may still come in, and its
        // worker then gets told below; the starter itself ends after the children.
        let reports = collect_reports(&mut running);
        drop(self.release.take());
        if let Some(h) = self.starter.take() {
            let _ = h.join();
        }
        // A worker started after the lists were taken is stopped and reported too.
        for (r, l) in running.iter_mut().zip(self.drain()) {
            r.threads.extend(l.threads);
            r.commands.extend(l.commands);
            r.started = l.started;
            for mut w in l.children {
                let _ = process::kill_group(w.child.id(), signals::SIGKILL);
                let _ = w.child.wait(); // started as the load stopped: it did no work in the window
            }
        }
        let mut results = Vec::new();
        for ((r, ops_then), reports) in running.iter_mut().zip(in_window).zip(reports) {
            for h in r.threads.drain(..) {
                let _ = h.join();
            }
            for h in r.commands.drain(..) {
                let _ = h.join();
            }
            let mut ops = ops_then;
            let mut child_cpu = 0.0;
            for rep in reports {
                ops += rep.ops;
                child_cpu += rep.cpu_s;
                // The worker's downgrade comes up as such; its sentence is made here once.
                rep.warnings.into_iter().filter(|w| !w.starts_with("could not get ")).for_each(|w| r.report.warn(w));
                rep.failures.into_iter().for_each(|f| r.report.fail(f));
                if let Some(why) = rep.why {
                    r.report.downgraded(rep.policy, why);
                }
            }
            if r.started < r.spec.workers {
                r.report.warn(format!(
                    "only {} of {} workers had started when the load was stopped (the machine is overloaded); \
                     the throughput is theirs",
                    r.started, r.spec.workers
                ));
            }
            let (kind, unit) = kind_name(&r.spec.kind);
            let cpu_s = r.cpu_ns.load(Relaxed) as f64 / 1e9 + child_cpu;
            let known_cpu = !matches!(r.spec.kind, Kind::Command { .. }) && r.spec.workers > 0;
            let asked = sched_text(r.spec.sched);
            let downgrade = r.report.downgrade.lock().ok().and_then(|d| d.clone());
            let failures = r.report.failures.lock().map(|f| f.clone()).unwrap_or_default();
            // The downgrade first, then what the workers said, then their failures.
            let mut warnings: Vec<String> =
                downgrade.iter().map(|(got, why)| format!("could not get {asked}, ran as {got}: {why}")).collect();
            warnings.extend(r.report.warnings.lock().map(|w| w.clone()).unwrap_or_default());
            warnings.extend(failures.iter().cloned());
            let (policy, downgrade_why) = match downgrade {
                Some((got, why)) => (got, Some(why)),
                None => (asked.clone(), None),
            };
            results.push(LoadResult {
                spec: r.spec.text.clone(),
                kind: kind.into(),
                workers: r.spec.workers,
                policy,
                policy_requested: asked,
                unit: unit.into(),
                ops,
                elapsed_s: elapsed,
                rate_per_s: if elapsed > 0.0 { ops as f64 / elapsed } else { 0.0 },
                cpu_s: known_cpu.then_some(cpu_s),
                utilization: (known_cpu && elapsed > 0.0).then(|| cpu_s / elapsed / r.spec.workers as f64),
                warnings,
                failed: !failures.is_empty(),
                downgrade_why,
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

/// The starter thread: every worker of every load, until all run, the run is over, or
/// [`START_TIMEOUT`] passes.
fn start_workers(
    specs: &[LoadSpec],
    in_worker: bool,
    exe: &std::path::Path,
    running: &Mutex<Vec<Running>>,
    stop: &Arc<AtomicBool>,
    cancel: &AtomicBool,
) {
    let deadline = Instant::now() + START_TIMEOUT;
    for (i, spec) in specs.iter().enumerate() {
        let Some(report) = running.lock().ok().map(|r| Arc::clone(&r[i].report)) else { return };
        for id in 0..spec.workers {
            if cancel.load(Relaxed) {
                return;
            }
            if Instant::now() >= deadline {
                report.warn(format!(
                    "workers did not start within {} s (the machine is overloaded); the rest were not started",
                    START_TIMEOUT.as_secs()
                ));
                return;
            }
            let started = start_one(spec, id, in_worker, exe, running, i, stop, &report);
            match started {
                Ok(()) => {
                    if let Ok(mut r) = running.lock() {
                        r[i].started += 1;
                    }
                }
                Err(e) => {
                    report.fail(format!("cannot start a worker: {e}"));
                    break;
                }
            }
        }
    }
}

/// Starts worker `id` of `spec` and files its handle under `running[i]`.
#[allow(clippy::too_many_arguments)]
fn start_one(
    spec: &LoadSpec,
    id: usize,
    in_worker: bool,
    exe: &std::path::Path,
    running: &Mutex<Vec<Running>>,
    i: usize,
    stop: &Arc<AtomicBool>,
    report: &Arc<Report>,
) -> Result<(), String> {
    let lock = || running.lock().map_err(|_| "internal: a load worker panicked".to_string());
    // An external command runs under a load-worker process of rtlab's, which stops the
    // command's whole process group if rtlab dies (a shell's children would not get a
    // parent-death signal of their own).
    let via_worker = spec.process || matches!(spec.kind, Kind::Command { .. }) && !in_worker;
    match (&spec.kind, via_worker) {
        (Kind::Command { cmd }, false) => {
            let (ops, report) = (Arc::clone(&lock()?[i].ops), Arc::clone(report));
            let h = command_supervisor(cmd.clone(), spec, id, stop, ops, report).map_err(|e| e.to_string())?;
            lock()?[i].commands.push(h);
        }
        (_, true) => {
            let mut cmd = Command::new(exe);
            cmd.arg("load-worker")
                .arg(spec.with_workers(1).text_for_worker())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped());
            let opts =
                SpawnOptions { cpus: spec.cpu_set(), death_signal: Some(signals::SIGTERM), ..SpawnOptions::default() };
            let mut child = process::spawn(&mut cmd, &opts).map_err(|e| e.to_string())?;
            let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
            lock()?[i].children.push(ProcessWorker { child, stdin, stdout, said: Vec::new() });
        }
        (kind, false) => {
            let (kind, stop, spec2, report) = (kind.clone(), Arc::clone(stop), spec.clone(), Arc::clone(report));
            let (ops, cpu) = {
                let r = lock()?;
                (Arc::clone(&r[i].ops), Arc::clone(&r[i].cpu_ns))
            };
            let h = std::thread::Builder::new()
                .name(format!("rtlab-load-{id}"))
                .spawn(move || {
                    let _ = signals::block_in_current_thread(&[signals::SIGINT, signals::SIGTERM, signals::SIGUSR1]);
                    apply_sched(&spec2, &report);
                    if let Err(e) = workers::run(&kind, id, &ops, &stop, &cpu) {
                        report.fail(e);
                    }
                    cpu.fetch_add(clock::now(ClockId::THREAD_CPUTIME).max(0) as u64, Relaxed);
                })
                .map_err(|e| e.to_string())?;
            lock()?[i].threads.push(h);
        }
    }
    Ok(())
}

/// Collects every process worker's final report within [`STOP_WAIT`], then kills every
/// worker's process group and reaps it. A worker that died, or did not answer in time, is a
/// failure of its load, never a silent zero.
fn collect_reports(running: &mut [Running]) -> Vec<Vec<WorkerReport>> {
    let deadline = Instant::now() + STOP_WAIT;
    for w in running.iter_mut().flat_map(|r| r.children.iter_mut()) {
        if let Some(out) = &w.stdout {
            let _ = process::set_nonblocking(out);
        }
    }
    let answered = |w: &ProcessWorker| w.said.contains(&b'\n');
    loop {
        let mut waiting = false;
        for w in running.iter_mut().flat_map(|r| r.children.iter_mut()) {
            if answered(w) {
                continue;
            }
            let mut buf = [0u8; 4096];
            match w.stdout.as_mut().map(|o| std::io::Read::read(o, &mut buf)) {
                Some(Ok(0)) | None => w.stdout = None, // ended without a word: it died
                Some(Ok(n)) => {
                    w.said.extend_from_slice(&buf[..n]);
                    waiting |= !answered(w);
                }
                Some(Err(e)) if e.kind() == std::io::ErrorKind::WouldBlock => waiting = true,
                Some(Err(_)) => w.stdout = None,
            }
        }
        if !waiting || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    running
        .iter_mut()
        .map(|r| {
            r.children
                .drain(..)
                .enumerate()
                .map(|(n, mut w)| {
                    let answer = w.said.split(|b| *b == b'\n').next().unwrap_or_default().to_vec();
                    let _ = process::kill_group(w.child.id(), signals::SIGKILL);
                    let status = w.child.wait();
                    match serde_json::from_slice::<WorkerReport>(&answer) {
                        Ok(rep) if answered(&w) => rep,
                        _ => {
                            let what = match status {
                                Ok(s) if w.stdout.is_none() => format!("died ({s}) before reporting its work"),
                                _ => format!(
                                    "did not report its work within {} ms and was killed",
                                    STOP_WAIT.as_millis()
                                ),
                            };
                            WorkerReport {
                                failures: vec![format!("worker process {n} {what}")],
                                ..WorkerReport::default()
                            }
                        }
                    }
                })
                .collect()
        })
        .collect()
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
/// (as rteval does with hackbench), then stops its whole process group (SIGTERM, SIGKILL
/// after 300 ms). An RT policy that may not be had is dropped and reported.
fn command_supervisor(
    cmd: String,
    spec: &LoadSpec,
    id: usize,
    stop: &Arc<AtomicBool>,
    ops: Arc<AtomicU64>,
    report: Arc<Report>,
) -> std::io::Result<JoinHandle<()>> {
    let stop = Arc::clone(stop);
    let mut opts = SpawnOptions {
        sched: Some(spec.sched.params()),
        nice: (spec.sched.nice != 0).then_some(spec.sched.nice),
        cpus: spec.cpu_set(),
        ..SpawnOptions::default()
    };
    // Every process the command starts carries this mark, even one that leaves its process
    // group or session: the stop kills them all.
    let token = process::load_token(id);
    std::thread::Builder::new().name(format!("rtlab-cmd-{id}")).spawn(move || {
        let mut quick_failures = 0;
        while !stop.load(Relaxed) {
            let mut c = Command::new("sh");
            c.arg("-c").arg(&cmd).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
            c.env(process::LOAD_MARK, &token);
            let started = Instant::now();
            let mut child = match process::spawn(&mut c, &opts) {
                Ok(ch) => ch,
                Err(e) if crate::rt::not_permitted(&e) && opts.sched.is_some() => {
                    report.downgraded("other".into(), Privileges::current().explain_rt_denied());
                    opts.sched = None;
                    continue;
                }
                Err(e) => {
                    report.fail(format!("cannot start '{cmd}': {e}"));
                    return;
                }
            };
            ops.fetch_add(1, Relaxed);
            loop {
                if stop.load(Relaxed) {
                    let _ = process::kill_group(child.id(), signals::SIGTERM);
                    let deadline = Instant::now() + Duration::from_millis(300);
                    while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    let _ = process::kill_group(child.id(), signals::SIGKILL);
                    let _ = child.wait();
                    process::kill_marked(&token);
                    return;
                }
                if let Ok(Some(status)) = child.try_wait() {
                    // The command ended by itself: the rest of its group goes too (and what
                    // left it), then restart.
                    let _ = process::kill_group(child.id(), signals::SIGKILL);
                    process::kill_marked(&token);
                    if started.elapsed() < Duration::from_millis(200) {
                        quick_failures += 1;
                        if quick_failures >= 5 {
                            report.warn(format!("'{cmd}' keeps ending at once ({status}); it is no longer restarted"));
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

/// Samples of a worker's counters: (CLOCK_MONOTONIC ns, ops, process CPU ns).
type Sample3 = (i64, u64, i64);

/// The counters at `at` on the line between the samples around it (the last sample before
/// `at` and the first after it); a window end before the first sample counts nothing.
fn counters_at(history: &std::collections::VecDeque<Sample3>, at: i64) -> (u64, i64) {
    let after = history.iter().position(|s| s.0 >= at);
    match after {
        None => history.back().map_or((0, 0), |s| (s.1, s.2)),
        Some(0) => (0, 0),
        Some(k) => {
            let (a, b) = (history[k - 1], history[k]);
            let f = if b.0 > a.0 { (at - a.0) as f64 / (b.0 - a.0) as f64 } else { 1.0 };
            (a.1 + ((b.1 - a.1) as f64 * f) as u64, a.2 + ((b.2 - a.2) as f64 * f) as i64)
        }
    }
}

/// The body of `rtlab load-worker SPEC`: runs one worker until rtlab writes `stop T` (or its
/// standard input ends, or it gets SIGTERM/SIGINT: rtlab died, the parent-death signal), then
/// stops everything it started and prints one JSON line with its work up to the monotonic
/// instant T (the end of the run's window, interpolated between samples taken every 10 ms),
/// the scheduling it obtained, and its warnings and failures.
pub fn worker_main(spec: &LoadSpec) -> Result<(), String> {
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, Arc::clone(&term)).map_err(|e| e.to_string())?;
    }
    let set = LoadSet::start_in(&[spec.with_workers(1)], true)?;
    let told = Arc::new(AtomicBool::new(false));
    let window_end = Arc::new(std::sync::atomic::AtomicI64::new(i64::MAX));
    let (t, w) = (Arc::clone(&told), Arc::clone(&window_end));
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        if let Some(at) = line.trim().strip_prefix("stop ").and_then(|v| v.parse::<i64>().ok()) {
            w.store(at, Relaxed);
        }
        t.store(true, Relaxed);
    });
    let mut history: std::collections::VecDeque<Sample3> = std::collections::VecDeque::with_capacity(1024);
    let sample = |h: &mut std::collections::VecDeque<Sample3>, ops: u64| {
        if h.len() == 1024 {
            h.pop_front();
        }
        h.push_back((clock::now(ClockId::MONOTONIC), ops, clock::now(ClockId::PROCESS_CPUTIME)));
    };
    while !told.load(Relaxed) && !term.load(Relaxed) {
        sample(&mut history, set.ops_now());
        std::thread::sleep(Duration::from_millis(10));
    }
    sample(&mut history, set.ops_now());
    let end = window_end.load(Relaxed).min(clock::now(ClockId::MONOTONIC));
    let (ops, cpu_ns) = counters_at(&history, end);
    let r = set.stop().into_iter().next();
    let report = WorkerReport {
        ops,
        cpu_s: cpu_ns.max(0) as f64 / 1e9,
        policy: r.as_ref().map_or_else(|| sched_text(spec.sched), |r| r.policy.clone()),
        why: r.as_ref().and_then(|r| r.downgrade_why.clone()),
        // A failed load's warnings hold its failures; each goes up once.
        warnings: r.as_ref().filter(|r| !r.failed).map(|r| r.warnings.clone()).unwrap_or_default(),
        failures: r.as_ref().filter(|r| r.failed).map(|r| r.warnings.clone()).unwrap_or_default(),
    };
    let line = serde_json::to_string(&report).map_err(|e| e.to_string())?;
    // rtlab may be gone (killed): then nobody reads the report, and that is no error.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|_| out.flush());
    Ok(())
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
    fn a_workers_count_at_the_window_end_lies_on_the_line_between_its_samples() {
        let h: std::collections::VecDeque<Sample3> = [(100, 0, 0), (200, 1000, 50), (300, 3000, 150)].into();
        assert_eq!(counters_at(&h, 250), (2000, 100), "halfway between the samples around it");
        assert_eq!(counters_at(&h, 200), (1000, 50));
        assert_eq!(counters_at(&h, 50), (0, 0), "a window that ended before the worker counted anything");
        assert_eq!(counters_at(&h, 400), (3000, 150), "after the last sample: the last count");
    }

    #[test]
    fn missing_cpus_and_too_many_workers_are_refused_unless_forced() {
        let p = privileges(950_000);
        let many: Vec<LoadSpec> =
            vec![format!("cpu:workers={}", 64 * affinity::online_cpus().len() + 1).parse().unwrap()];
        assert!(check_safety(&many, true, false, &p).unwrap_err().contains("--force"));
        assert!(check_safety(&many, true, true, &p).is_ok());
        let groups: Vec<LoadSpec> = vec!["messaging:workers=10,fds=20".parse().unwrap()];
        assert!(check_safety(&groups, true, false, &p).unwrap_err().contains("400 worker"), "a group is 2·fds threads");
        let nowhere: Vec<LoadSpec> = vec!["cpu:cpus=1000".parse().unwrap()];
        assert!(check_safety(&nowhere, true, true, &p).unwrap_err().contains("does not exist"), "even with --force");
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
