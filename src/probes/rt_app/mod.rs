//! The rt-app probe (`rtlab run --rt-app FILE`): runs an rt-app use case ([`model::UseCase`])
//! as rt-app 1.0 does — one thread per instance, its phases and events in file order, the
//! resources they share — and measures what rt-app logs and what it does not: each thread's
//! timer and sleep wakeups (its slot's samples), its jobs from timer to timer (its `work`), the
//! hand-off from one thread's release to another's next event, and the wait for each mutex.
//! With a log directory it writes rt-app's per-thread logs, line for line in rt-app's layout.

pub mod engine;
pub mod model;

use super::setup::{apply_sched, collect, ready, settle, spawn, wake_until_finished, Gate, GateState};
use super::{Finished, Probe, ProbeError, Sinks, Started, ThreadOutcome, ThreadPlan, ThreadStatus};
use crate::measure::probe::LoopOutcome;
use crate::measure::stats::{ExceedLog, Recorder, Summary};
use crate::measure::work::{WorkKind, WorkRecorder, WorkSpec, DEFAULT_MISS_WINDOW};
use crate::result::rt_app::{RtAppFigures, RtAppThread, TimerRun};
use crate::result::warning::Warning;
use crate::rt::affinity::{self, CpuSet};
use crate::rt::clock::{self, ClockId};
use crate::rt::privileges::Privileges;
use crate::rt::{sched, signals};
use engine::{Meet, Res, Runner, Series, Shared, TimerTally};
use model::{Event, LogSpec, ResourceKind, ThreadSpec, UseCase};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How long the threads may take to set up before the run is abandoned.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// What the rt-app probe runs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The file, as given.
    pub file: String,
    /// The use case.
    pub use_case: UseCase,
    /// One slot per thread.
    pub threads: Vec<ThreadPlan>,
    /// Where rt-app's logs go (`global.logdir`, or rtlab's `--rt-app-logs`).
    pub log: Option<LogSpec>,
    /// Lock memory (`global.lock_pages`, or rtlab's own options).
    pub mlockall: bool,
    /// Pin the reporting thread here.
    pub main_affinity: Option<CpuSet>,
}

impl Plan {
    /// The plan of `use_case` from `file`: a slot per thread, named, with its first timer's
    /// period as its period and deadline (a thread without a timer has no deadline).
    pub fn new(file: String, use_case: UseCase) -> Plan {
        let threads = use_case.threads.iter().enumerate().map(|(i, t)| slot(i, t)).collect();
        Plan { file, log: use_case.log.clone(), mlockall: use_case.lock_pages, use_case, threads, main_affinity: None }
    }

    /// What the terminal says runs.
    pub fn describe(&self) -> String {
        format!(
            "rtlab: running rt-app's {} ({} threads, {} resources)",
            self.file,
            self.threads.len(),
            self.use_case.resources.len()
        )
    }

    /// Each thread's log file (`<dir>/<basename>-<task>-<index>.log`, rt-app's names).
    pub fn log_paths(&self) -> Vec<PathBuf> {
        let Some(l) = &self.log else { return Vec::new() };
        let name = |i: usize, t: &ThreadSpec| format!("{}-{}-{i}.log", l.basename, t.task);
        self.use_case.threads.iter().enumerate().map(|(i, t)| l.dir.join(name(i, t))).collect()
    }
}

/// A thread's slot: its period is its first timer's (else its first phase's work and sleeps:
/// a `run X, sleep Y` task's is X + Y), and a thread with a timer works and has that period
/// as its deadline.
fn slot(index: usize, t: &ThreadSpec) -> ThreadPlan {
    let events = || t.phases.iter().flat_map(|p| &p.events);
    let timer = events().find_map(|e| match e {
        Event::Timer { period_ns, .. } => Some(*period_ns),
        _ => None,
    });
    let first = t.phases.first().map_or(0, |p| {
        p.events
            .iter()
            .map(|e| match e {
                Event::Run(ns) | Event::Runtime(ns) | Event::Sleep(ns) => *ns,
                _ => 0,
            })
            .sum()
    });
    let amount = t.phases.iter().find(|p| p.events.iter().any(|e| matches!(e, Event::Timer { .. }))).map_or(0, |p| {
        p.events
            .iter()
            .map(|e| match e {
                Event::Run(ns) | Event::Runtime(ns) => *ns,
                _ => 0,
            })
            .sum::<i64>()
    });
    let kind = if events().any(|e| matches!(e, Event::Run(_))) { WorkKind::Fixed } else { WorkKind::Time };
    ThreadPlan {
        index,
        cpu: t.cpus.as_ref().filter(|c| c.len() == 1).map(|c| c.cpus()[0]),
        sched: t.sched,
        interval_ns: timer.unwrap_or(first),
        warmup_cycles: 0,
        name: Some(t.name.clone()),
        work: timer.map(|period| WorkSpec {
            kind,
            amount_ns: amount.max(1),
            deadline_ns: period,
            miss_window: DEFAULT_MISS_WINDOW,
        }),
        offset_ns: t.delay_ns,
    }
}

/// The tasks' names, each once, in file order (what [`tasks_of`] indexes).
fn task_names(uc: &UseCase) -> Vec<String> {
    let mut t: Vec<String> = Vec::new();
    for th in &uc.threads {
        if !t.contains(&th.task) {
            t.push(th.task.clone());
        }
    }
    t
}

/// Each task's index, by thread (a task's instances share it).
fn tasks_of(uc: &UseCase) -> Vec<usize> {
    let mut tasks: Vec<&str> = Vec::new();
    uc.threads
        .iter()
        .map(|t| match tasks.iter().position(|n| *n == t.task) {
            Some(i) => i,
            None => {
                tasks.push(&t.task);
                tasks.len() - 1
            }
        })
        .collect()
}

/// Per resource, each (task, event) that releases it, once, with its rank in file order:
/// one pass over the events, so that hand-offs are counted and keyed in time linear in the
/// file whatever its threads and tasks.
type Releasers = Vec<Vec<(usize, usize, &'static str)>>;

fn releasers(uc: &UseCase, task_of: &[usize]) -> Releasers {
    let mut out: Releasers = vec![Vec::new(); uc.resources.len()];
    let mut rank = 0;
    for (j, t) in uc.threads.iter().enumerate() {
        for e in t.phases.iter().flat_map(|p| &p.events) {
            if let Some(r) = e.releases() {
                if !out[r].iter().any(|(_, task, via)| *task == task_of[j] && *via == e.name()) {
                    out[r].push((rank, task_of[j], e.name()));
                    rank += 1;
                }
            }
        }
    }
    out
}

/// The resources thread `t` waits on, each once.
fn waited(t: &ThreadSpec) -> Vec<usize> {
    let mut waits: Vec<usize> = t.phases.iter().flat_map(|p| &p.events).filter_map(Event::waits_on).collect();
    waits.sort_unstable();
    waits.dedup();
    waits
}

/// The hand-offs thread `i` can receive: per resource it waits on, each task that releases
/// that resource and how, in file order.
fn handoff_keys(uc: &UseCase, releasers: &Releasers, i: usize) -> Vec<engine::HandoffKey> {
    let mut keys: Vec<(usize, engine::HandoffKey)> = waited(&uc.threads[i])
        .into_iter()
        .flat_map(|r| releasers[r].iter().map(move |&(rank, task, via)| (rank, (task, r, via))))
        .collect();
    keys.sort_unstable_by_key(|k| k.0);
    keys.into_iter().map(|k| k.1).collect()
}

impl Plan {
    /// The FIFO/RR threads that never wait (no sleep, timer or wait for another thread in any
    /// phase: busy for as long as they run): the CPUs those pinned to one CPU fill, and how
    /// many others there are.
    pub fn busy_rt_threads(&self) -> (CpuSet, usize) {
        let waits =
            |e: &Event| matches!(e, Event::Sleep(_) | Event::Timer { .. } | Event::Lock(_)) || e.waits_on().is_some();
        let busy = self.use_case.threads.iter().filter(|t| {
            let rt = t.sched.policy.is_realtime_priority()
                || t.phases.iter().any(|p| p.sched.is_some_and(|s| s.policy.is_realtime_priority()));
            rt && !t.phases.iter().flat_map(|p| &p.events).any(waits)
        });
        let (mut pinned, mut free) = (Vec::new(), 0);
        for t in busy {
            match t.cpus.as_ref().filter(|c| c.len() == 1) {
                Some(c) => pinned.push(c.cpus()[0]),
                None => free += 1,
            }
        }
        (CpuSet::from_cpus(pinned), free)
    }

    /// The threads whose logs would grow past `bytes_per_s` (a line of about 120 bytes per
    /// phase loop, a loop no shorter than its timers, sleeps and work): each with its rate.
    pub fn heavy_logs(&self, bytes_per_s: f64) -> Vec<(String, f64)> {
        if self.log.is_none() {
            return Vec::new();
        }
        let loop_ns = |p: &model::Phase| -> i64 {
            p.events
                .iter()
                .map(|e| match *e {
                    Event::Timer { period_ns, .. } => period_ns,
                    Event::Sleep(ns) | Event::Run(ns) | Event::Runtime(ns) => ns,
                    _ => 0,
                })
                .sum()
        };
        self.use_case
            .threads
            .iter()
            .filter_map(|t| {
                let shortest = t.phases.iter().map(loop_ns).min()?.max(1);
                let rate = 120.0 * 1e9 / shortest as f64;
                (rate > bytes_per_s).then(|| (t.name.clone(), rate))
            })
            .collect()
    }

    /// How many histograms the run allocates, counted without allocating any: per thread its
    /// wakeups, its jobs' two (with a timer), and one per hand-off it can receive, mutex it
    /// locks and timer it waits on.
    pub fn histograms(&self) -> usize {
        let uc = &self.use_case;
        let releasers = releasers(uc, &tasks_of(uc));
        uc.threads
            .iter()
            .map(|t| {
                let (locks, timers) = used(t);
                let handoffs: usize = waited(t).into_iter().map(|r| releasers[r].len()).sum();
                1 + if timers.is_empty() { 0 } else { 2 } + handoffs + locks.len() + timers.len()
            })
            .fold(0usize, usize::saturating_add)
    }
}

/// The mutexes thread `t` locks and the timers it waits on (each once, in first use order).
fn used(t: &ThreadSpec) -> (Vec<usize>, Vec<(usize, i64)>) {
    let (mut locks, mut timers) = (Vec::new(), Vec::<(usize, i64)>::new());
    for e in t.phases.iter().flat_map(|p| &p.events) {
        match *e {
            Event::Lock(m) if !locks.contains(&m) => locks.push(m),
            Event::Timer { res, period_ns } if !timers.iter().any(|(r, _)| *r == res) => timers.push((res, period_ns)),
            _ => {}
        }
    }
    (locks, timers)
}

/// One timer's figures in one thread: the timer, its period, its wakeups, its overruns and
/// its smallest and largest slack.
type TimerDone = (usize, i64, Summary, u64, Option<(i64, i64)>);

/// What one thread brings back.
struct Done {
    outcome: ThreadOutcome,
    phase_loops: u64,
    handoffs: Vec<(engine::HandoffKey, Summary)>,
    locks: Vec<(usize, Summary)>,
    timers: Vec<TimerDone>,
    log: Option<(tempfile::NamedTempFile, PathBuf)>,
    log_error: Option<String>,
    blocked_on: Option<usize>,
    held: Vec<usize>,
}

struct Setup {
    status: ThreadStatus,
    warnings: Vec<Warning>,
}

/// The rt-app probe, from its plan to its joined threads.
pub struct RtAppProbe {
    plan: Plan,
    shared: Option<Arc<Shared>>,
    gate: Arc<Gate>,
    finished: Arc<Vec<AtomicBool>>,
    handles: Vec<std::thread::JoinHandle<Done>>,
    statuses: Vec<ThreadStatus>,
    /// Where `iorun` writes (opened once, each thread with an `iorun` given its own handle),
    /// and the file rtlab created for it, removed when the run ends.
    io: Option<std::fs::File>,
    io_created: Option<PathBuf>,
}

impl RtAppProbe {
    /// A probe for `plan`, not started.
    pub fn new(plan: Plan) -> RtAppProbe {
        let n = plan.threads.len();
        RtAppProbe {
            plan,
            shared: None,
            gate: Arc::new(Gate::new()),
            finished: Arc::new((0..n).map(|_| AtomicBool::new(false)).collect()),
            handles: Vec::new(),
            statuses: Vec::new(),
            io: None,
            io_created: None,
        }
    }

    /// Opens the io device when a thread has an `iorun`: checked again as the reader checked
    /// it (a sink device, or a new file created here), since the path may have changed since.
    fn open_io(&mut self) -> Result<(), ProbeError> {
        let uc = &self.plan.use_case;
        if !uc.threads.iter().any(ThreadSpec::does_iorun) {
            return Ok(());
        }
        let path = &uc.io_device;
        let fail = |why: String| ProbeError::Start(format!("cannot open io_device {}: {why}", path.display()));
        let target = crate::rt::fs::io_target(path).map_err(|what| fail(format!("it is {what}")))?;
        let file = crate::rt::fs::open_io_target(path, target).map_err(|e| fail(e.to_string()))?;
        if target == crate::rt::fs::IoTarget::NewFile {
            self.io_created = Some(path.clone());
        }
        self.io = Some(file);
        Ok(())
    }

    /// Removes the file rtlab created for `iorun`.
    fn remove_io(&mut self) {
        self.io = None;
        if let Some(p) = self.io_created.take() {
            let _ = std::fs::remove_file(p);
        }
    }

    fn abort(&mut self) {
        self.gate.open(GateState::Abort);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        self.remove_io();
    }
}

/// Sizes `run`'s unit of work on `cpu` (rt-app calibrates on `global.calibration`'s CPU,
/// CPU0 by default): picoseconds per unit.
fn calibrate_on(cpu: usize, stop: &AtomicBool) -> u64 {
    std::thread::scope(|s| {
        s.spawn(|| {
            let _ = affinity::set_current_thread(&CpuSet::from_cpus([cpu]));
            crate::measure::work::calibrate(ClockId::MONOTONIC, 1_000_000, Some(cpu), stop).ps_per_unit
        })
        .join()
        .unwrap_or(1000)
    })
}

/// rt-app's trace markers when `global.ftrace` asks for them, `rtapp_main: event=start` written
/// (as rt-app does, before it calibrates). Where tracefs or tracing is off (rt-app then refuses
/// to run) the run goes on without them, and says so.
fn markers(uc: &UseCase, warnings: &mut Vec<Warning>) -> Option<engine::Marker> {
    if uc.ftrace == model::Ftrace::NONE {
        return None;
    }
    let file = crate::rt::tracefs::Tracefs::open()
        .and_then(|t| t.marker())
        .map_err(|why| warnings.push(Warning::TracemarkUnavailable { why }))
        .ok()?;
    let m = engine::Marker { asked: uc.ftrace, file };
    m.mark(model::Ftrace::MAIN, format_args!("rtapp_main: event=start"));
    Some(m)
}

/// What the threads of `uc` share: its resources, each thread's task, `run`'s unit.
fn shared_of(
    uc: &UseCase,
    ps_per_unit: u64,
    marker: Option<engine::Marker>,
    stop: &Arc<AtomicBool>,
) -> Result<Shared, ProbeError> {
    let task_of = tasks_of(uc);
    Ok(Shared {
        resources: resources(uc)?,
        kinds: uc.resources.iter().map(|r| r.kind).collect(),
        stop: Arc::clone(stop),
        origin: AtomicI64::new(0),
        end_ns: AtomicI64::new(i64::MAX),
        timed_out: AtomicBool::new(false),
        ps_per_unit,
        p_load_ns: uc.p_load_ns,
        marker,
        cumulative_slack: uc.cumulative_slack,
        task_of,
    })
}

/// The shared resources of `uc`.
fn resources(uc: &UseCase) -> Result<Vec<Res>, ProbeError> {
    uc.resources
        .iter()
        .map(|r| match r.kind {
            ResourceKind::Mutex => crate::rt::sync::PMutex::new(uc.pi_enabled)
                .map(Res::Mutex)
                .map_err(|e| ProbeError::Start(format!("cannot make mutex '{}': {e}", r.name))),
            ResourceKind::Timer { .. } => Ok(Res::Timer(std::sync::Mutex::new(None))),
            _ => Ok(Res::Meet(Meet::default())),
        })
        .collect()
}

impl Probe for RtAppProbe {
    fn slots(&self) -> usize {
        self.plan.threads.len()
    }

    fn start(&mut self, sinks: &Sinks) -> Result<Started, ProbeError> {
        let uc = &self.plan.use_case.clone();
        let privileges = Privileges::current();
        let mut warnings = Vec::new();
        signals::install_wake_handler()
            .map_err(|e| ProbeError::Start(format!("cannot install the handler that wakes threads on a stop: {e}")))?;
        let runs =
            uc.threads.iter().flat_map(|t| t.phases.iter().flat_map(|p| &p.events)).any(|e| matches!(e, Event::Run(_)));
        let online = affinity::online_cpus();
        let cpu =
            uc.calibration_cpu.filter(|c| online.contains(*c)).or_else(|| online.cpus().first().copied()).unwrap_or(0);
        let marker = markers(uc, &mut warnings);
        let ps_per_unit = if runs { calibrate_on(cpu, &sinks.interrupt) } else { 1000 };
        let shared = Arc::new(shared_of(uc, ps_per_unit, marker, &sinks.stop)?);
        self.shared = Some(Arc::clone(&shared));
        self.open_io()?;
        let setups = self.spawn_threads(uc, &shared, sinks, &privileges)?;
        let mut statuses: Vec<ThreadStatus> = Vec::new();
        for s in setups {
            warnings.extend(s.warnings);
            statuses.push(s.status);
        }
        statuses.sort_by_key(|s| s.index);
        let mlocked = match settle(
            self.plan.mlockall,
            self.plan.main_affinity.as_ref(),
            &privileges,
            sinks.strict,
            &mut warnings,
        ) {
            Ok(m) => m,
            Err(e) => {
                self.abort();
                return Err(e);
            }
        };
        let origin = clock::now(ClockId::MONOTONIC);
        shared.origin.store(origin, Relaxed);
        if let Some(d) = sinks.duration.or(uc.duration) {
            shared.end_ns.store(origin.saturating_add(d.as_nanos().min(i64::MAX as u128) as i64), Relaxed);
        }
        let start = SystemTime::now();
        self.gate.open(GateState::Go);
        self.statuses = statuses.clone();
        Ok(Started {
            slots: statuses,
            warnings,
            dma_latency_us: None,
            mlocked,
            start,
            schedule_start: Instant::now(),
            own_duration: false,
            runtime: None,
            stages: Vec::new(),
        })
    }

    fn finished(&mut self) -> bool {
        self.finished.iter().all(|f| f.load(Relaxed))
    }

    fn stop(&mut self) {
        if let Some(s) = &self.shared {
            s.wake_all();
        }
        wake_until_finished(&self.finished, &self.statuses);
    }

    fn join(mut self: Box<Self>) -> Finished {
        let mut fin = Finished::default();
        let mut done = Vec::new();
        for h in self.handles.drain(..) {
            // A measuring thread does not panic; if one did, the run fails loudly.
            done.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        if let Some(s) = &self.shared {
            s.mark(model::Ftrace::MAIN, format_args!("rtapp_main: event=end"));
        }
        self.remove_io();
        let mut figures = RtAppFigures {
            file: self.plan.file.clone(),
            pi_enabled: self.plan.use_case.pi_enabled,
            threads: Vec::new(),
            handoffs: Vec::new(),
            lock_waits: Vec::new(),
            timers: Vec::new(),
        };
        let uc = &self.plan.use_case;
        let tasks = task_names(uc);
        if let Some(w) = self.mutex_waits(&done) {
            fin.warnings.push(w);
        }
        for d in done {
            let i = d.outcome.plan.index;
            let spec = &uc.threads[i];
            let log = d.log.and_then(|(tmp, path)| match persist(tmp, &path) {
                Ok(()) => Some(path.display().to_string()),
                Err(e) => {
                    fin.warnings
                        .push(Warning::OutputFailed { output: format!("rt-app log {}", path.display()), why: e });
                    None
                }
            });
            if let Some(e) = d.log_error {
                fin.warnings
                    .push(Warning::OutputFailed { output: format!("rt-app log of thread {}", spec.name), why: e });
            }
            figures.threads.push(RtAppThread {
                name: spec.name.clone(),
                task: spec.task.clone(),
                phase_loops: d.phase_loops,
                log,
            });
            // A pair that could hand off and never did is no figure (a signal of one's own condition).
            for ((from, r, via), s) in d.handoffs.into_iter().filter(|(_, s)| s.cycles > 0) {
                let key = (tasks[from].clone(), spec.task.clone(), via.to_string(), uc.resources[r].name.clone());
                merge_into(&mut figures.handoffs, key, &s, i);
            }
            for (m, s) in d.locks {
                merge_into(&mut figures.lock_waits, (spec.task.clone(), uc.resources[m].name.clone()), &s, i);
            }
            for (r, period_ns, s, overruns, slack) in d.timers {
                let relative = matches!(uc.resources[r].kind, ResourceKind::Timer { relative: true });
                let name = uc.resources[r].name.split('#').next().unwrap_or("").to_string();
                figures.timers.push(TimerRun {
                    thread: spec.name.clone(),
                    timer: name,
                    period_ns,
                    relative,
                    wakeups: s,
                    overruns,
                    slack,
                });
            }
            fin.warnings.extend(d.outcome.warnings.iter().cloned());
            fin.slots.push(d.outcome);
        }
        fin.slots.sort_by_key(|t| t.plan.index);
        if self.shared.as_ref().is_some_and(|s| s.timed_out.load(Relaxed)) {
            fin.end_reason = Some(crate::result::EndReason::Duration);
        }
        fin.rt_app = Some(figures);
        fin
    }
}

impl RtAppProbe {
    /// The threads the stop found waiting for a mutex, each with the mutex and its holder, and
    /// whether they wait on each other in a cycle (a deadlock): `None` when none waited.
    fn mutex_waits(&self, done: &[Done]) -> Option<Warning> {
        let uc = &self.plan.use_case;
        // Only a mutex has a holder: a wait on anything else is no edge of a cycle.
        let holder_of = |m: usize| {
            (uc.resources[m].kind == ResourceKind::Mutex)
                .then(|| done.iter().find(|d| d.held.contains(&m)).map(|d| d.outcome.plan.index))
                .flatten()
        };
        // Thread → (mutex, the thread holding it).
        let waits: Vec<(usize, usize, Option<usize>)> =
            done.iter().filter_map(|d| d.blocked_on.map(|m| (d.outcome.plan.index, m, holder_of(m)))).collect();
        if waits.is_empty() {
            return None;
        }
        let next = |t: usize| waits.iter().find(|w| w.0 == t).and_then(|w| w.2);
        // A cycle: following holders from a waiter comes back to it.
        let cycle = waits.iter().find_map(|&(start, _, _)| {
            let mut path = vec![start];
            let mut at = next(start)?;
            while at != start {
                if path.contains(&at) || path.len() > waits.len() {
                    return None;
                }
                path.push(at);
                at = next(at)?;
            }
            Some(path)
        });
        let said = |&(t, r, h): &(usize, usize, Option<usize>)| {
            let (who, res) = (&uc.threads[t].name, &uc.resources[r]);
            match res.kind {
                ResourceKind::Mutex => {
                    let by = h.map_or_else(|| "no thread".to_string(), |h| uc.threads[h].name.clone());
                    format!("{who} waited for mutex {} held by {by}", res.name)
                }
                ResourceKind::Barrier { .. } => format!("{who} waited at barrier {}", res.name),
                ResourceKind::Suspension => format!("{who} waited for a resume of {}", res.name),
                _ => format!("{who} waited on condition {}", res.name),
            }
        };
        let shown: Vec<&(usize, usize, Option<usize>)> = match &cycle {
            Some(path) => path.iter().filter_map(|t| waits.iter().find(|w| w.0 == *t)).collect(),
            None => waits.iter().collect(),
        };
        Some(Warning::MutexWaits {
            waits: shown.into_iter().map(said).collect::<Vec<_>>().join(", "),
            deadlock: cycle.is_some(),
        })
    }
}

/// Adds `s` (thread `thread`'s) to the series of `key`, made when new.
fn merge_into<K: PartialEq>(into: &mut Vec<(K, Summary)>, key: K, s: &Summary, thread: usize) {
    match into.iter_mut().find(|(k, _)| *k == key) {
        Some((_, sum)) => sum.merge(s, thread),
        None => {
            let mut sum = Summary::empty(s.counts.layout());
            sum.merge(s, thread);
            into.push((key, sum));
        }
    }
}

/// Renames a finished log over its path (the temporary file was made beside it, so a reader
/// sees no half-written log and a planted symlink is replaced, never followed).
fn persist(tmp: tempfile::NamedTempFile, path: &std::path::Path) -> Result<(), String> {
    tmp.as_file().sync_all().map_err(|e| e.to_string())?;
    tmp.persist(path).map(|_| ()).map_err(|e| e.error.to_string())
}

impl RtAppProbe {
    /// Starts one thread per instance and waits for each to be set up (or gives up, the
    /// started ones sent home).
    fn spawn_threads(
        &mut self,
        uc: &UseCase,
        shared: &Arc<Shared>,
        sinks: &Sinks,
        privileges: &Privileges,
    ) -> Result<Vec<Setup>, ProbeError> {
        let logs = self.open_logs()?;
        let (tx, rx) = std::sync::mpsc::channel::<Setup>();
        let releasers = releasers(uc, &shared.task_of);
        for (i, log) in logs.into_iter().enumerate() {
            let ctx = ThreadCtx {
                index: i,
                plan: self.plan.threads[i].clone(),
                spec: uc.threads[i].clone(),
                keys: handoff_keys(uc, &releasers, i),
                shared: Arc::clone(shared),
                gate: Arc::clone(&self.gate),
                finished: Arc::clone(&self.finished),
                live: Arc::clone(&sinks.lives[i]),
                ring: sinks.rings.get(i).cloned().flatten(),
                work: sinks.work.get(i).cloned().flatten(),
                max_latency_ns: sinks.max_latency_ns,
                max_response_ns: sinks.max_response_ns,
                privileges: privileges.clone(),
                io: self.io_for(&uc.threads[i])?,
                mem_buffer_size: uc.mem_buffer_size,
                log,
                tx: tx.clone(),
            };
            match spawn(format!("rtlab-rtapp-{i}"), move || ctx.run()) {
                Ok(h) => self.handles.push(h),
                Err(e) => {
                    self.abort();
                    return Err(ProbeError::Start(format!("cannot start thread {i}: {e}")));
                }
            }
        }
        drop(tx);
        collect(&rx, self.handles.len(), Instant::now() + SETUP_TIMEOUT).map_err(|missing| {
            self.abort();
            ProbeError::Start(format!(
                "{missing} of the use case's threads did not finish their setup within {} s (starved by a task at a \
                 higher RT priority?)",
                SETUP_TIMEOUT.as_secs()
            ))
        })
    }

    /// The thread's own handle on the io device, when it has an `iorun`.
    fn io_for(&mut self, t: &ThreadSpec) -> Result<Option<std::fs::File>, ProbeError> {
        let (Some(f), true) = (&self.io, t.does_iorun()) else {
            return Ok(None);
        };
        match f.try_clone() {
            Ok(f) => Ok(Some(f)),
            Err(e) => {
                self.abort();
                Err(ProbeError::Start(format!("cannot share the io device between threads: {e}")))
            }
        }
    }

    /// A temporary file beside each thread's log, its header written (rt-app 1.0's two lines).
    fn open_logs(&self) -> Result<Vec<Option<(tempfile::NamedTempFile, PathBuf)>>, ProbeError> {
        let paths = self.plan.log_paths();
        if paths.is_empty() {
            return Ok(self.plan.threads.iter().map(|_| None).collect());
        }
        let mut out = Vec::new();
        for (t, path) in self.plan.use_case.threads.iter().zip(paths) {
            let fail =
                |e: std::io::Error| ProbeError::Start(format!("cannot write rt-app's log {}: {e}", path.display()));
            let mut tmp = crate::rt::fs::temp_beside(&path).map_err(fail)?;
            let prio = match t.sched.policy {
                p if p.is_realtime_priority() => t.sched.priority as i64,
                _ => t.sched.nice as i64,
            };
            writeln!(tmp, "# Policy : SCHED_{} priority : {prio}", t.sched.policy.name().to_uppercase())
                .map_err(fail)?;
            writeln!(
                tmp,
                "#idx {:>8} {:>8} {:>8} {:>15} {:>15} {:>15} {:>10} {:>10} {:>10} {:>10}",
                "perf", "run", "period", "start", "end", "rel_st", "slack", "c_duration", "c_period", "wu_lat"
            )
            .map_err(fail)?;
            out.push(Some((tmp, path)));
        }
        Ok(out)
    }
}

/// What a thread is given.
struct ThreadCtx {
    index: usize,
    plan: ThreadPlan,
    spec: ThreadSpec,
    keys: Vec<engine::HandoffKey>,
    shared: Arc<Shared>,
    gate: Arc<Gate>,
    finished: Arc<Vec<AtomicBool>>,
    live: Arc<crate::measure::stats::Live>,
    ring: Option<Arc<crate::measure::ring::SampleRing>>,
    work: Option<Arc<crate::measure::work::WorkLive>>,
    max_latency_ns: Option<i64>,
    max_response_ns: Option<i64>,
    privileges: Privileges,
    io: Option<std::fs::File>,
    mem_buffer_size: usize,
    log: Option<(tempfile::NamedTempFile, PathBuf)>,
    tx: std::sync::mpsc::Sender<Setup>,
}

impl ThreadCtx {
    fn run(mut self) -> Done {
        let mut warnings = Vec::new();
        self.enter(&mut warnings);
        let layout = self.live.hist.layout();
        let (locks, timers) = used(&self.spec);
        let hand_lives = engine::lives(self.keys.len(), layout);
        let lock_lives = engine::lives(locks.len(), layout);
        let timer_lives = engine::lives(timers.len(), layout);
        let uses_buffer =
            self.spec.phases.iter().flat_map(|p| &p.events).any(|e| matches!(e, Event::Mem(_) | Event::IoRun(_)));
        ready(&self.shared.stop, &self.live, self.ring.as_deref());
        let status = ThreadStatus {
            index: self.index,
            cpu: self.plan.cpu,
            sched: sched::current_thread().unwrap_or(self.plan.sched),
            interval_ns: self.plan.interval_ns,
            tid: crate::rt::thread::tid(),
            identity: None,
        };
        let (tid, _) = (status.tid, self.tx.send(Setup { status, warnings: std::mem::take(&mut warnings) }));
        let mut writer = self.log.as_mut().map(|(f, _)| std::io::BufWriter::with_capacity(1 << 16, f.as_file_mut()));
        let series = Series {
            handoffs: self.keys.iter().zip(&hand_lives).map(|(k, l)| (*k, Recorder::new(l, None))).collect(),
            locks: locks.iter().zip(&lock_lives).map(|(m, l)| (*m, Recorder::new(l, None))).collect(),
            timers: timers
                .iter()
                .zip(&timer_lives)
                .map(|((r, p), l)| TimerTally {
                    res: *r,
                    period_ns: *p,
                    rec: Recorder::new(l, None),
                    overruns: 0,
                    slack: None,
                })
                .collect(),
            log: writer.as_mut().map(|w| w as &mut dyn Write),
        };
        let rec = Recorder::with_logs(
            &self.live,
            ExceedLog::new(self.max_latency_ns, 1),
            ExceedLog::off(),
            self.ring.as_deref().filter(|_| self.work.is_none()),
        );
        let mut runner = Runner::new(self.index, &self.spec, &self.shared, rec, series);
        runner.work = self.work.as_deref().map(|w| WorkRecorder::new(w, self.max_response_ns, self.ring.as_deref()));
        runner.buffer = if uses_buffer { vec![0u8; self.mem_buffer_size] } else { Vec::new() };
        runner.io = self.io.take();
        let ran = match self.gate.wait() {
            GateState::Go => {
                let mut current = (self.spec.cpus.clone(), self.spec.sched);
                let privileges = self.privileges.clone();
                let (index, thread_cpus) = (self.index, self.spec.cpus.clone());
                let plan = self.plan.clone();
                runner.run(&mut |p| phase_settings(p, &mut current, &thread_cpus, &plan, index, &privileges))
            }
            _ => engine::Ran::default(),
        };
        let summary = runner.rec.finish();
        let work = runner.work.as_ref().map(|w| w.finish());
        let handoffs = runner.series.handoffs.iter().map(|(k, r)| (*k, r.finish())).collect();
        let locks = runner.series.locks.iter().map(|(m, r)| (*m, r.finish())).collect();
        let timers =
            runner.series.timers.iter().map(|t| (t.res, t.period_ns, t.rec.finish(), t.overruns, t.slack)).collect();
        drop(runner);
        let log_error = writer.take().and_then(|mut w| w.flush().err().map(|e| e.to_string()));
        drop(writer);
        signals::interrupt_sleeps_on(None);
        self.finished[self.index].store(true, Relaxed);
        Done {
            outcome: self.outcome(summary, work, ran.phase_loops, tid, warnings),
            phase_loops: ran.phase_loops,
            handoffs,
            locks,
            timers,
            log: self.log.take(),
            log_error: ran.log_error.or(log_error),
            blocked_on: ran.blocked_on,
            held: ran.held,
        }
    }

    /// What the thread obtained (read back) and measured.
    fn outcome(
        &self,
        summary: Summary,
        work: Option<crate::measure::work::WorkSummary>,
        phase_loops: u64,
        tid: i32,
        warnings: Vec<Warning>,
    ) -> ThreadOutcome {
        let origin = self.shared.origin.load(Relaxed);
        ThreadOutcome {
            cpu_ns: Some(crate::rt::clock::now(crate::rt::clock::ClockId::THREAD_CPUTIME)),
            series: None,
            plan: self.plan.clone(),
            sched: sched::current_thread().ok(),
            cpus_allowed: affinity::current_thread().ok(),
            last_cpu: affinity::current_cpu(),
            timer_slack_ns: crate::rt::thread::timer_slack(),
            summary,
            outcome: LoopOutcome { iterations: phase_loops, drift_ns: 0, break_hit: None, start_ns: origin },
            drift_ns: None,
            tid,
            samples_lost: 0,
            warnings,
            noise: None,
            watch: None,
            work,
        }
    }

    /// Enters the thread: control signals blocked, its CPUs and its scheduling applied.
    fn enter(&self, warnings: &mut Vec<Warning>) {
        let _ =
            signals::block_in_current_thread(&[signals::SIGINT, signals::SIGTERM, signals::SIGUSR1, signals::SIGHUP]);
        if let Some(cpus) = &self.spec.cpus {
            if let Err(e) = affinity::set_current_thread(cpus) {
                warnings.push(Warning::AffinityFailed { thread: self.index, cpu: cpus.cpus()[0], why: e.to_string() });
            }
        }
        apply_sched(&self.plan, &self.privileges, warnings);
        let _ = crate::rt::thread::set_timer_slack(1);
    }
}

/// Applies a phase's CPUs (else the thread's) and scheduling (else as it was) when they change.
fn phase_settings(
    p: &model::Phase,
    current: &mut (Option<CpuSet>, crate::rt::sched::SchedParams),
    thread_cpus: &Option<CpuSet>,
    plan: &ThreadPlan,
    index: usize,
    privileges: &Privileges,
) {
    let cpus = p.cpus.clone().or_else(|| thread_cpus.clone());
    if cpus != current.0 {
        let set = cpus.clone().unwrap_or_else(affinity::online_cpus);
        let _ = affinity::set_current_thread(&set);
        current.0 = cpus;
    }
    if let Some(s) = p.sched.filter(|s| *s != current.1) {
        let mut warnings = Vec::new();
        apply_sched(&ThreadPlan { sched: s, index, ..plan.clone() }, privileges, &mut warnings);
        current.1 = s;
    }
}
