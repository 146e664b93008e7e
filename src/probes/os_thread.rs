//! The OS-thread probe: sets the process up (mlockall, PM QoS), starts one measuring thread
//! per [`ThreadPlan`] (affinity, policy and timer slack applied inside the thread), releases
//! them together, and collects what each thread actually obtained and measured. The loop each
//! thread runs is [`crate::measure::probe::run_loop`]; with `--simulate` the same threads run
//! it on a simulated clock ([`crate::measure::simulate`]).

use super::setup::{enter, ready, settle, wake_until_finished, Gate, GateState};
use super::{Finished, Probe, ProbeError, Sinks, Started, ThreadOutcome, ThreadPlan, ThreadStatus};
use crate::measure::probe::{self, ClockKind, LoopOutcome, LoopParams, Method, Waiter};
use crate::measure::relay;
use crate::measure::ring::SampleRing;
use crate::measure::series::LatencySeries;
use crate::measure::simulate::{SimWaiter, Simulation};
use crate::measure::stats::{ExceedLog, Exceedance, Live, Recorder};
use crate::measure::work::{calibrate, BusyJob, SimJob, SpinJob, WorkKind, WorkLive, WorkRecorder};
use crate::result::warning::Warning;
use crate::rt::affinity::{self, CpuSet};
use crate::rt::clock::{self, ClockId};
use crate::rt::memory;
use crate::rt::pm_qos::DmaLatencyGuard;
use crate::rt::privileges::Privileges;
use crate::rt::sched;
use crate::rt::signals::{self, PosixTimer};
use crate::rt::thread as rtthread;
use crate::rt::tracefs::Tracefs;
use crate::rt::worker::Worker;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How long probe threads may take to set up before the run is abandoned.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// What the OS-thread probe runs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The threads.
    pub threads: Vec<ThreadPlan>,
    /// Sleep method.
    pub method: Method,
    /// Clock.
    pub clock: ClockKind,
    /// Lock memory.
    pub mlockall: bool,
    /// Hold `/dev/cpu_dma_latency` at this many µs.
    pub dma_latency_us: Option<i32>,
    /// Stop at the first sample above this (ns).
    pub breaktrace_ns: Option<i64>,
    /// On a breaktrace hit, write a marker to tracefs and stop tracing.
    pub tracemark: bool,
    /// Pin the reporting (main) thread here.
    pub main_affinity: Option<CpuSet>,
    /// Run a simulated probe instead of sleeping.
    pub simulate: Option<Simulation>,
    /// End the whole run when the first thread has recorded its loops (cyclictest's `-l`).
    pub stop_when_first_done: bool,
    /// Start every thread's schedule at a common, aligned time.
    pub align: Option<Align>,
    /// Log samples above this threshold (ns), keeping the first `capacity`.
    pub outliers: Option<(i64, usize)>,
    /// How many samples above the verdict's threshold each thread keeps (1 for the verdict;
    /// more for cyclictest's `--spike` list).
    pub over_capacity: usize,
    /// cyclictest's compatibility mode (`rtlab cyclictest`): also sum every latency as
    /// cyclictest does (its Avg), and keep the logged overflows and spikes in the result.
    pub cyclictest_compat: bool,
    /// `--stages`: the threads are also watched through the kernel's events (the watch probe
    /// on their thread ids), giving each its IRQ and thread latencies beside its own wakeup
    /// latency (rtla timerlat's IRQ/Thr/Usr).
    pub stages: bool,
    /// With `stages`: the stage thresholds (`rtlab timerlat -i`/`-T`).
    pub stage_stop: super::watch::StageLimits,
    /// With `stages`: after a stage threshold was crossed, write the last events the tracker
    /// read here (rtla's `trace` action).
    pub stage_trace: Option<std::path::PathBuf>,
    /// Disable idle states deeper than this on the measured CPUs while measuring (-1: all).
    pub deepest_idle_state: Option<i32>,
    /// Each thread measures in a worker process named `NAME/CPU` (rtla timerlat's `timerlatu`),
    /// forked once the thread has its CPU, policy and timer slack (absolute sleeps, no work).
    pub workers: Option<String>,
}

/// The CPU of each of `n` measuring threads: round robin over `cpus`, unpinned without them.
/// `rtlab run` and `rtlab cyclictest` differ in their defaults (which CPUs, how many threads),
/// never in how threads are placed.
pub fn placement(n: usize, cpus: Option<&CpuSet>) -> Vec<Option<usize>> {
    (0..n).map(|i| cpus.filter(|c| !c.is_empty()).map(|c| c.cpus()[i % c.len()])).collect()
}

/// Aligned thread starts (cyclictest `-A`/`--secaligned`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// All threads start at a common time, thread i offset by i·offset.
    Threads {
        /// Offset between threads (ns).
        offset_ns: i64,
    },
    /// All threads start at the next full second of the clock plus an offset.
    Second {
        /// Offset after the second (ns).
        offset_ns: i64,
    },
}

struct Shared {
    gate: Gate,
    stop: Arc<AtomicBool>,
    /// Per thread: it has left its loop (the run may end; it needs no more wake signals).
    finished: Vec<AtomicBool>,
    tracefs: Option<Tracefs>,
    tracemark_written: AtomicBool,
    stop_when_first_done: bool,
    align_base: std::sync::atomic::AtomicI64,
}

impl Shared {
    fn new(plan: &Plan, sinks: &Sinks, tracefs: Option<Tracefs>) -> Shared {
        Shared {
            gate: Gate::new(),
            stop: Arc::clone(&sinks.stop),
            // By thread index; an index this plan does not measure (a control's slot comes after
            // the runtime's) has nothing to wait for.
            finished: (0..plan.threads.iter().map(|t| t.index + 1).max().unwrap_or(0))
                .map(|i| AtomicBool::new(!plan.threads.iter().any(|t| t.index == i)))
                .collect(),
            tracefs,
            tracemark_written: AtomicBool::new(false),
            stop_when_first_done: plan.stop_when_first_done,
            align_base: std::sync::atomic::AtomicI64::new(0),
        }
    }
}

/// With `--align`: sets the schedule's common base and returns how long after now the schedule
/// begins (up to 2 s: -D counts from there); zero without.
fn aligned(plan: &Plan, shared: &Shared) -> Duration {
    let Some(a) = plan.align else { return Duration::ZERO };
    let now = crate::rt::clock::now(plan.clock.id());
    let base = match a {
        Align::Threads { .. } => now,
        // The next full second, or the one after when this one is nearly over (cyclictest).
        Align::Second { .. } => {
            (now / 1_000_000_000 + if now % 1_000_000_000 > 900_000_000 { 2 } else { 1 }) * 1_000_000_000
        }
    };
    shared.align_base.store(base, Relaxed);
    Duration::from_nanos((base - crate::rt::clock::now(plan.clock.id())).max(0) as u64)
}

struct Setup {
    status: ThreadStatus,
    warnings: Vec<Warning>,
}

/// The OS-thread probe, from its plan to its joined threads.
pub struct OsThreads {
    plan: Plan,
    shared: Option<Arc<Shared>>,
    handles: Vec<std::thread::JoinHandle<ThreadOutcome>>,
    statuses: Vec<ThreadStatus>,
    dma: Option<DmaLatencyGuard>,
    /// `--deepest-idle-state`, held until the threads are joined.
    idle: Option<crate::rt::cpuidle::IdleLimit>,
    /// `--stages`: the watch probe on the measuring threads.
    stages: Option<Box<dyn Probe>>,
    /// Sample times count from here instead of the schedule's start (see [`OsThreads::dated_from`]).
    origin_ns: Option<i64>,
}

impl OsThreads {
    /// A probe for `plan`, not started.
    pub fn new(plan: Plan) -> OsThreads {
        OsThreads {
            plan,
            shared: None,
            handles: Vec::new(),
            statuses: Vec::new(),
            dma: None,
            idle: None,
            stages: None,
            origin_ns: None,
        }
    }

    /// The same probe with its sample times counted from `origin_ns` (on the plan's clock)
    /// instead of its schedule's start: a runtime's control dates its samples from the
    /// runtime's start.
    pub fn dated_from(mut self, origin_ns: i64) -> OsThreads {
        self.origin_ns = Some(origin_ns);
        self
    }

    /// Takes what the whole run holds (the PM QoS request, the idle limit) and opens tracefs
    /// for `--tracemark`; what fails to be held is a warning.
    fn hold(&mut self, plan: &Plan, warnings: &mut Vec<Warning>) -> Result<Option<Tracefs>, ProbeError> {
        let sim = plan.simulate.is_some();
        if let (Some(us), false) = (plan.dma_latency_us, sim) {
            match DmaLatencyGuard::acquire(us) {
                Ok(g) => self.dma = Some(g),
                Err(e) => warnings.push(Warning::DmaLatencyFailed { latency_us: us, why: e.to_string() }),
            }
        }
        if let (Some(n), false) = (plan.deepest_idle_state, sim) {
            let pinned = crate::rt::affinity::CpuSet::from_cpus(plan.threads.iter().filter_map(|t| t.cpu));
            let cpus =
                if plan.threads.iter().all(|t| t.cpu.is_some()) { pinned } else { crate::rt::affinity::online_cpus() };
            self.idle = Some(crate::rt::cpuidle::IdleLimit::apply(&cpus, n).map_err(ProbeError::Start)?);
        }
        // The marker is real even in simulation, so that --tracemark can be tested deterministically.
        Ok(if plan.tracemark {
            Tracefs::open().map_err(|why| warnings.push(Warning::TracemarkUnavailable { why })).ok()
        } else {
            None
        })
    }

    /// Starts a measuring thread per planned one and waits for each to finish its setup;
    /// returns what they obtained, in index order (their warnings into `warnings`).
    fn spawn_threads(
        &mut self,
        plan: &Plan,
        sinks: &Sinks,
        shared: &Arc<Shared>,
        privileges: &Privileges,
        warnings: &mut Vec<Warning>,
    ) -> Result<Vec<ThreadStatus>, ProbeError> {
        let (tx, rx) = std::sync::mpsc::channel::<Setup>();
        for tp in &plan.threads {
            let ctx = ThreadCtx {
                tp: tp.clone(),
                method: plan.method,
                clock: plan.clock,
                loops: match (&plan.simulate, sinks.duration) {
                    // A simulated run of a duration records the periods that fit in it.
                    (Some(_), Some(d)) => {
                        sinks.loops.unwrap_or(u64::MAX).min(d.as_nanos() as u64 / tp.interval_ns as u64)
                    }
                    _ => sinks.loops.unwrap_or(u64::MAX),
                },
                max_latency_ns: sinks.max_latency_ns,
                break_ns: plan.breaktrace_ns.unwrap_or(i64::MAX),
                simulate: plan.simulate.clone(),
                privileges: privileges.clone(),
                live: Arc::clone(&sinks.lives[tp.index]),
                work: sinks.work.get(tp.index).cloned().flatten(),
                max_response_ns: sinks.max_response_ns,
                ring: sinks.rings[tp.index].clone(),
                outliers: plan.outliers,
                over_capacity: plan.over_capacity,
                align: plan.align,
                cyclictest_compat: plan.cyclictest_compat,
                origin_ns: self.origin_ns,
                shared: Arc::clone(shared),
                tx: tx.clone(),
                workers: plan.workers.clone(),
                mlockall: plan.mlockall,
            };
            let stack =
                if ctx.simulate.is_some() { super::setup::SIMULATED_STACK_BYTES } else { super::setup::STACK_BYTES };
            let h = super::setup::spawn_with_stack(format!("rtlab-probe-{}", tp.index), stack, move || ctx.run());
            match h {
                Ok(h) => self.handles.push(h),
                Err(e) => {
                    self.abort();
                    return Err(ProbeError::Start(format!("could not start measuring thread {}: {e}", tp.index)));
                }
            }
        }
        drop(tx);
        // A probe that cannot even finish its setup is starved by something at a higher RT
        // priority; waiting forever would hang rtlab.
        let reports = match super::setup::collect(&rx, plan.threads.len(), Instant::now() + SETUP_TIMEOUT) {
            Ok(r) => r,
            Err(missing) => {
                shared.gate.open(GateState::Abort);
                // Threads still in setup will see the abort when they get a CPU; they are not joined.
                self.handles.clear();
                return Err(ProbeError::Start(format!(
                    "{missing} measuring threads did not get a CPU within 10 s to set up: a task at a higher RT priority \
                     is using every CPU they may run on; stop it or give the probe a higher priority (-p)"
                )));
            }
        };
        let mut statuses: Vec<ThreadStatus> = Vec::with_capacity(plan.threads.len());
        for s in reports {
            statuses.push(s.status);
            warnings.extend(s.warnings);
        }
        statuses.sort_by_key(|s| s.index);
        Ok(statuses)
    }

    fn abort(&mut self) {
        super::setup::abort_threads(self.shared.as_ref().map(|s| &s.gate), &mut self.handles);
    }
}

impl Probe for OsThreads {
    fn slots(&self) -> usize {
        self.plan.threads.len()
    }

    fn start(&mut self, sinks: &Sinks) -> Result<Started, ProbeError> {
        let plan = &self.plan.clone();
        let sim = plan.simulate.is_some();
        let privileges = Privileges::current();
        let mut warnings = Vec::new();
        // A stop wakes the probes out of their sleep: without this, `-i 1h` would end an hour late.
        signals::install_wake_handler()
            .map_err(|e| ProbeError::Start(format!("cannot install the handler that wakes probes on a stop: {e}")))?;
        let tracefs = self.hold(plan, &mut warnings)?;
        let shared = Arc::new(Shared::new(plan, sinks, tracefs));
        self.shared = Some(Arc::clone(&shared));
        let statuses = self.spawn_threads(plan, sinks, &shared, &privileges, &mut warnings)?;
        // Lock memory once every thread has mapped and touched its stack, histogram and ring, so
        // that everything the measuring loops use is locked.
        let main_affinity = plan.main_affinity.as_ref().filter(|_| !sim);
        let mlocked = match settle(plan.mlockall && !sim, main_affinity, &privileges, sinks.strict, &mut warnings) {
            Ok(m) => m,
            Err(e) => {
                self.abort();
                return Err(e);
            }
        };
        let start_wall = SystemTime::now();
        let started = Instant::now();
        let schedule_delay = aligned(plan, &shared);
        let mut stage_cells = Vec::new();
        if plan.stages && !sim {
            match watch_stages(plan, &statuses, &sinks.stop) {
                Ok((probe, cells)) => {
                    self.stages = Some(probe);
                    stage_cells = cells;
                }
                Err(why) => warnings.push(Warning::StagesUnavailable { why }),
            }
        }
        shared.gate.open(GateState::Go);
        self.statuses = statuses.clone();
        Ok(Started {
            slots: statuses,
            warnings,
            dma_latency_us: self.dma.as_ref().map(|g| g.latency_us),
            mlocked,
            // Sample times count from the schedule's start, and so does the result's start time.
            start: start_wall + schedule_delay,
            schedule_start: started + schedule_delay,
            own_duration: sim,
            runtime: None,
            stages: stage_cells,
        })
    }

    fn finished(&mut self) -> bool {
        self.shared.as_ref().is_some_and(|s| s.finished.iter().all(|f| f.load(Relaxed)))
    }

    fn stop(&mut self) {
        if let (Some(shared), false) = (&self.shared, self.plan.simulate.is_some()) {
            wake_until_finished(&shared.finished, &self.statuses);
        }
        if let Some(s) = self.stages.as_mut() {
            s.stop();
        }
    }

    fn join(mut self: Box<Self>) -> Finished {
        let mut fin = Finished::default();
        let stages = self.stages.take();
        for h in self.handles {
            // A measuring thread does not panic; if one did, its samples are lost and the run fails loudly.
            let t = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            if let Some(b) = t.outcome.break_hit {
                if fin.break_hit.is_none_or(|(_, old)| b.at_ns < old.at_ns) {
                    fin.break_hit = Some((t.plan.index, b));
                }
            }
            fin.warnings.extend(t.warnings.iter().cloned());
            fin.slots.push(t);
        }
        fin.tracemark_written = self.shared.as_ref().is_some_and(|s| s.tracemark_written.load(Relaxed));
        // The PM QoS request and the idle limit are held until every thread has been joined.
        drop(self.dma);
        drop(self.idle);
        // Each thread's stages, matched by its thread id.
        if let Some(watch) = stages {
            let mut watched = watch.join();
            fin.warnings.append(&mut watched.warnings);
            for t in fin.slots.iter_mut() {
                t.watch = watched.slots.iter().find(|w| w.tid == t.tid).and_then(|w| w.watch.clone());
            }
            // A stage threshold ended the run as a --breaktrace hit does.
            if fin.slots.iter().any(|t| t.watch.as_ref().is_some_and(|w| w.thread.stop.is_some())) {
                fin.end_reason = Some(crate::result::EndReason::Breaktrace);
            }
        }
        fin
    }
}

struct ThreadCtx {
    tp: ThreadPlan,
    method: Method,
    clock: ClockKind,
    loops: u64,
    max_latency_ns: Option<i64>,
    break_ns: i64,
    simulate: Option<Simulation>,
    privileges: Privileges,
    live: Arc<Live>,
    work: Option<Arc<WorkLive>>,
    max_response_ns: Option<i64>,
    ring: Option<Arc<SampleRing>>,
    outliers: Option<(i64, usize)>,
    over_capacity: usize,
    align: Option<Align>,
    cyclictest_compat: bool,
    origin_ns: Option<i64>,
    shared: Arc<Shared>,
    tx: std::sync::mpsc::Sender<Setup>,
    workers: Option<String>,
    mlockall: bool,
}

impl ThreadCtx {
    fn run(self) -> ThreadOutcome {
        let tp = &self.tp;
        let mut warnings = Vec::new();
        let sim = self.simulate.as_ref().map(|s| s.source(tp.index));
        let (sched_now, timer) = if sim.is_some() { (tp.sched, None) } else { self.enter(&mut warnings) };
        if sim.is_none() {
            self.size_work();
        }
        let mut work_rec =
            self.work.as_deref().map(|w| WorkRecorder::new(w, self.max_response_ns, self.ring.as_deref()));
        // Every log the loop writes is allocated and touched here, before the start: nothing
        // faults in once measuring.
        let outliers = self.outliers.map_or_else(ExceedLog::off, |(t, cap)| ExceedLog::new(Some(t), cap));
        // A working task's samples go to the ring with their response times, from its work recorder.
        let mut rec = Recorder::with_logs(
            &self.live,
            ExceedLog::new(self.max_latency_ns, self.over_capacity),
            outliers,
            self.ring.as_deref().filter(|_| self.work.is_none()),
        );
        rec.prefault();
        let worker = self.fork_worker(sim.is_none(), &mut warnings);
        let tid = worker.as_ref().map_or_else(rtthread::tid, |w| w.pid());
        let status = ThreadStatus {
            index: tp.index,
            cpu: tp.cpu,
            sched: sched_now,
            interval_ns: tp.interval_ns,
            tid,
            identity: None,
        };
        let _ = self.tx.send(Setup { status, warnings });
        let known = sim.as_ref().and_then(|s| s.len());
        let loops = known.map_or(self.loops, |n| n.saturating_sub(tp.warmup_cycles).min(self.loops));
        let mut late_warnings = Vec::new();
        let (outcome, series) = if self.shared.gate.wait() == GateState::Abort {
            (LoopOutcome { iterations: 0, drift_ns: 0, break_hit: None, start_ns: 0 }, None)
        } else {
            let params = self.params(loops, sim.is_some());
            match &worker {
                Some(w) => (self.relayed(w, &params, &mut rec, &mut late_warnings), None),
                None => self.measure(sim, timer, work_rec.as_mut(), &params, &mut rec, &mut late_warnings),
            }
        };
        // A worker measured in its own process, and a simulated thread measured nothing.
        let cpu_ns = (worker.is_none() && self.simulate.is_none()).then(|| clock::now(ClockId::THREAD_CPUTIME));
        // The worker outlives this thread until the command is done: rtla's actions see it.
        if let Some(w) = worker {
            crate::rt::worker::park(w);
        }
        if let Some(b) = outcome.break_hit {
            self.broke(b);
        }
        let summary = rec.finish();
        if self.shared.stop_when_first_done && summary.cycles >= loops {
            self.shared.stop.store(true, Relaxed);
        }
        signals::interrupt_sleeps_on(None);
        self.shared.finished[tp.index].store(true, Relaxed);
        let (cpus_allowed, last_cpu, timer_slack_ns) = self.placement();
        ThreadOutcome {
            series,
            watch: None,
            cpu_ns,
            plan: tp.clone(),
            sched: Some(sched_now),
            cpus_allowed: Some(cpus_allowed),
            last_cpu,
            timer_slack_ns,
            summary,
            drift_ns: (outcome.iterations > 0).then_some(outcome.drift_ns),
            outcome,
            tid,
            samples_lost: 0,
            warnings: late_warnings,
            noise: None,
            work: work_rec.map(|w| w.finish()),
        }
    }

    /// Sizes fixed work here, on this thread's CPU at its policy, before the schedule.
    fn size_work(&self) {
        if let Some(w) = self.work.as_deref().filter(|w| w.spec.kind == WorkKind::Fixed) {
            let cpu = affinity::current_cpu();
            let _ = w.calibration.set(calibrate(self.clock.id(), w.spec.amount_ns, cpu, &self.shared.stop));
        }
    }

    /// Where the thread ran, read back: the CPUs it was allowed, the last it ran on, its timer
    /// slack (a simulated thread's, as planned).
    fn placement(&self) -> (CpuSet, Option<usize>, Option<u64>) {
        let tp = &self.tp;
        if self.simulate.is_some() {
            (tp.cpu.map(|c| CpuSet::from_cpus([c])).unwrap_or_default(), tp.cpu, Some(1))
        } else {
            (affinity::current_thread().unwrap_or_default(), affinity::current_cpu(), rtthread::timer_slack())
        }
    }

    /// Takes this thread's scheduling, CPU, timer slack and (`--method posix-timer`) timer,
    /// and locks the measuring code in RAM; returns the scheduling obtained and the timer.
    fn enter(&self, warnings: &mut Vec<Warning>) -> (sched::SchedParams, Option<PosixTimer>) {
        let tp = &self.tp;
        let mut timer = None;
        enter(tp, &self.privileges, warnings);
        if let Err(e) = rtthread::set_timer_slack(1) {
            warnings.push(Warning::TimerSlackFailed { thread: tp.index, why: e.to_string() });
        }
        if self.method == Method::PosixTimer {
            let _ = signals::block_in_current_thread(&[signals::TIMER_SIGNAL]);
            match PosixTimer::for_current_thread(self.clock.id()) {
                Ok(t) => timer = Some(t),
                Err(e) => warnings.push(Warning::MethodDowngraded {
                    thread: tp.index,
                    asked: Method::PosixTimer.name().into(),
                    got: Method::Abs.name().into(),
                    why: format!("timer_create failed ({e})"),
                }),
            }
        }
        ready(&self.shared.stop, &self.live, self.ring.as_deref());
        // The measuring code itself must be in RAM before the first sample: memory is
        // locked on fault, so load and lock the loop and the libc calls it makes.
        if let Err(e) = lock_hot_code(self.method) {
            warnings.push(Warning::MlockFailed { why: format!("locking the measuring code: {e}") });
        }
        (sched::current_thread().unwrap_or(tp.sched), timer)
    }

    /// This thread's worker process (`Plan::workers`), forked now that the thread has its CPU,
    /// policy and timer slack, which the worker inherits. Its loop's recorder is made before
    /// the fork (the worker allocates nothing); it counts into the worker's copy of the cells,
    /// while rtlab's loop replays the worker's wakeups into the real ones.
    fn fork_worker(&self, real: bool, warnings: &mut Vec<Warning>) -> Option<Worker> {
        let name = self.workers.as_ref().filter(|_| real && self.method == Method::Abs && self.work.is_none())?;
        let name = format!("{name}/{}", self.tp.cpu.unwrap_or(self.tp.index));
        let mut worker_rec = Recorder::with_logs(&self.live, ExceedLog::off(), ExceedLog::off(), None);
        let clock = self.clock.id();
        let forked = crate::rt::worker::fork(&name, self.mlockall, move |rx, tx| {
            let Some(params) = relay::receive_params(rx) else { return };
            let gone = AtomicBool::new(false);
            let mut tee = relay::Tee { inner: probe::AbsSleep(clock), fd: tx, gone: &gone };
            probe::run_loop(&mut tee, &params, &mut worker_rec, &gone);
        });
        forked
            .map_err(|e| {
                warnings.push(Warning::MethodDowngraded {
                    thread: self.tp.index,
                    asked: format!("abs in a worker process ({name})"),
                    got: "abs in rtlab's thread".into(),
                    why: format!("fork failed ({e})"),
                })
            })
            .ok()
    }

    /// The loop replayed from this thread's worker process; a worker that ends mid-run ends
    /// the run and says so.
    fn relayed(&self, w: &Worker, params: &LoopParams, rec: &mut Recorder<'_>, late: &mut Vec<Warning>) -> LoopOutcome {
        let stop = &self.shared.stop;
        let mut replay = relay::Replay { worker: w, stop, ended: false };
        let out = if w.send(&relay::params_to_words(params)) {
            probe::run_loop(&mut replay, params, rec, stop)
        } else {
            replay.ended = true;
            stop.store(true, Relaxed);
            LoopOutcome { iterations: 0, drift_ns: 0, break_hit: None, start_ns: 0 }
        };
        if replay.ended {
            late.push(Warning::RuntimeFailed {
                why: format!("the worker process of thread {} (pid {}) ended mid-run", self.tp.index, w.pid()),
            });
        }
        out
    }

    /// The loop's parameters, its first expiry aligned (`--align`) once the gate opened.
    fn params(&self, loops: u64, simulated: bool) -> LoopParams {
        let tp = &self.tp;
        let mut params = LoopParams {
            interval_ns: tp.interval_ns,
            loops,
            warmup_cycles: tp.warmup_cycles,
            break_ns: self.break_ns,
            start_at: None,
            origin_ns: self.origin_ns,
            cyclictest_us: self.cyclictest_compat,
        };
        if let (Some(a), true, false) = (self.align, self.method.is_absolute(), simulated) {
            let base = self.shared.align_base.load(Relaxed);
            params.origin_ns = Some(base);
            params.start_at = Some(
                tp.offset_ns
                    + match a {
                        Align::Threads { offset_ns } => base + offset_ns * tp.index as i64,
                        Align::Second { offset_ns } => base + offset_ns,
                    },
            );
        }
        params
    }

    /// The measuring loop on this thread's waiter (simulated, a sleep or a POSIX timer), with
    /// its work; a timer that fails mid-run says so in `late_warnings`. A simulated thread also
    /// gives its series, read on its virtual clock.
    fn measure(
        &self,
        sim: Option<crate::measure::simulate::SampleSource>,
        timer: Option<PosixTimer>,
        work_rec: Option<&mut WorkRecorder<'_>>,
        params: &LoopParams,
        rec: &mut Recorder<'_>,
        late_warnings: &mut Vec<Warning>,
    ) -> (LoopOutcome, Option<LatencySeries>) {
        let stop = &self.shared.stop;
        let clock = self.clock.id();
        let live = &*self.live;
        match (sim, work_rec.zip(self.work.as_deref())) {
            (Some(src), Some((wr, w))) => {
                let mut job = SimJob { durations: vec![w.spec.amount_ns], next: 0 };
                let mut sim = SimWaiter::<true>::new(src).reading(live);
                (probe::run_work_loop(&mut sim, &mut job, wr, params, rec, stop), sim.series())
            }
            (None, Some((wr, w))) => (working(&mut probe::AbsSleep(clock), clock, w, wr, params, rec, stop), None),
            (Some(src), None) if self.method.is_absolute() => {
                let mut sim = SimWaiter::<true>::new(src).reading(live);
                (measure(&mut sim, params, rec, stop), sim.series())
            }
            (Some(src), None) => {
                let mut sim = SimWaiter::<false>::new(src).reading(live);
                (measure(&mut sim, params, rec, stop), sim.series())
            }
            (None, None) => (self.measure_real(timer, params, rec, late_warnings), None),
        }
    }

    /// The measuring loop on a real clock: a sleep of this thread's method, or a POSIX timer.
    fn measure_real(
        &self,
        timer: Option<PosixTimer>,
        params: &LoopParams,
        rec: &mut Recorder<'_>,
        late_warnings: &mut Vec<Warning>,
    ) -> LoopOutcome {
        let (stop, clock) = (&self.shared.stop, self.clock.id());
        match (self.method, timer) {
            (Method::Abs, _) => measure(&mut probe::AbsSleep(clock), params, rec, stop),
            (Method::Rel, _) => measure(&mut probe::RelSleep(clock), params, rec, stop),
            (Method::Nanosleep, _) => measure(&mut probe::NanoSleep(clock), params, rec, stop),
            (Method::Sleep, _) => measure(&mut probe::StdSleep(clock), params, rec, stop),
            (Method::PosixTimer, Some(timer)) => {
                let mut w = probe::TimerWait { clock, timer, failed: None };
                let out = measure(&mut w, params, rec, stop);
                late_warnings.extend(w.failed.map(|why| Warning::MethodDowngraded {
                    thread: self.tp.index,
                    asked: Method::PosixTimer.name().into(),
                    got: Method::Abs.name().into(),
                    why,
                }));
                out
            }
            (Method::PosixTimer, None) => measure(&mut probe::AbsSleep(clock), params, rec, stop),
        }
    }

    /// `-b` was hit by `b`: every thread stops, and the trace gets its marker and stops.
    fn broke(&self, b: Exceedance) {
        self.shared.stop.store(true, Relaxed);
        if let Some(t) = &self.shared.tracefs {
            let marked = t
                .mark(&format!(
                    "rtlab: hit latency threshold ({} ns > {} ns) on thread {}",
                    b.latency_ns, self.break_ns, self.tp.index
                ))
                .and_then(|_| t.stop());
            if marked.is_ok() {
                self.shared.tracemark_written.store(true, Relaxed);
            }
        }
    }
}

/// A working task's loop on waiter `w`: its calibrated units of fixed work, or busy time.
fn working<W: Waiter>(
    w: &mut W,
    clock: crate::rt::clock::ClockId,
    work: &WorkLive,
    wr: &mut WorkRecorder<'_>,
    p: &LoopParams,
    rec: &mut Recorder<'_>,
    stop: &AtomicBool,
) -> LoopOutcome {
    match work.spec.kind {
        // Observed work is a watched thread's; a thread of rtlab's own never has it.
        WorkKind::Time | WorkKind::Observed => {
            probe::run_work_loop(w, &mut BusyJob { clock, ns: work.spec.amount_ns }, wr, p, rec, stop)
        }
        WorkKind::Fixed => {
            let units = work.calibration.get().map_or(1, |c| c.units);
            probe::run_work_loop(w, &mut SpinJob { clock, units }, wr, p, rec, stop)
        }
    }
}

/// The watch probe on the measuring threads `statuses` (`--stages`), started before they are
/// released so their first periods are traced; its own cells are its own (the run's samples are
/// the threads' own measurement), and their stage cells are returned for the live view.
type StageLives = Vec<Option<Arc<crate::measure::work::WorkLive>>>;
fn watch_stages(
    plan: &Plan,
    statuses: &[ThreadStatus],
    stop: &Arc<AtomicBool>,
) -> Result<(Box<dyn Probe>, StageLives), String> {
    use crate::measure::histogram::Layout;
    let tids: Vec<i32> = statuses.iter().map(|s| s.tid).collect();
    let watch = super::watch::Plan {
        target: super::watch::Target::Threads(tids),
        // The timerlat stand-in's stages stay on tracefs until BPF is measured for them.
        backend: super::watch::Backend::Tracefs,
        period_ns: None,
        deadline_ns: None,
        miss_window: crate::measure::work::DEFAULT_MISS_WINDOW,
        capacity: statuses.len(),
        layout: Layout::DEFAULT,
        reader_cpus: plan.main_affinity.clone(),
        events_out: None,
        explain: None,
        stop_at: plan.stage_stop,
        trace_out: plan.stage_trace.clone(),
        stall_ns: super::watch::DEFAULT_STALL_NS,
    };
    let slots = watch.slots();
    let mut probe: Box<dyn Probe> = Box::new(super::watch::WatchProbe::new(watch));
    let sinks = Sinks {
        lives: slots.iter().map(|_| Arc::new(crate::measure::stats::Live::new(Layout::DEFAULT))).collect(),
        rings: slots.iter().map(|_| None).collect(),
        work: slots
            .iter()
            .map(|s| s.work.map(|w| Arc::new(crate::measure::work::WorkLive::new(w, Layout::DEFAULT, &[]))))
            .collect(),
        max_response_ns: None,
        // A stop threshold ends the whole run.
        stop: Arc::clone(stop),
        interrupt: Arc::new(AtomicBool::new(false)),
        loops: None,
        duration: None,
        max_latency_ns: None,
        strict: false,
    };
    probe.start(&sinks).map_err(|e| e.to_string())?;
    Ok((probe, sinks.work))
}

/// Locks the code a measuring loop of `method` runs: the loop (with its inlined bookkeeping)
/// and the libc functions it calls. Pages are locked around each entry point, generously
/// (16 KiB before, 48 KiB after), as a function's exact extent is not known.
fn lock_hot_code(method: Method) -> std::io::Result<()> {
    let loop_fn = match method {
        Method::Abs => probe::run_loop::<probe::AbsSleep> as *const () as usize,
        Method::Rel => probe::run_loop::<probe::RelSleep> as *const () as usize,
        Method::Nanosleep => probe::run_loop::<probe::NanoSleep> as *const () as usize,
        Method::Sleep => probe::run_loop::<probe::StdSleep> as *const () as usize,
        Method::PosixTimer => probe::run_loop::<probe::TimerWait> as *const () as usize,
    };
    memory::lock_code_at(loop_fn, 16 << 10, 48 << 10)?;
    for work_loop in [
        probe::run_work_loop::<probe::AbsSleep, SpinJob> as *const () as usize,
        probe::run_work_loop::<probe::AbsSleep, BusyJob> as *const () as usize,
    ] {
        memory::lock_code_at(work_loop, 16 << 10, 48 << 10)?;
    }
    memory::lock_code_at(measure::<probe::AbsSleep> as *const () as usize, 4 << 10, 12 << 10)?;
    memory::lock_sleep_calls()?;
    if method == Method::Sleep {
        memory::lock_code_at(std::thread::sleep as *const () as usize, 4 << 10, 12 << 10)?;
    }
    Ok(())
}

fn measure<W: Waiter>(w: &mut W, p: &LoopParams, rec: &mut Recorder<'_>, stop: &AtomicBool) -> LoopOutcome {
    probe::run_loop(w, p, rec, stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_placed_round_robin_over_the_cpus_or_left_free() {
        let cpus = CpuSet::from_cpus([1, 3]);
        assert_eq!(placement(3, Some(&cpus)), vec![Some(1), Some(3), Some(1)]);
        assert_eq!(placement(2, None), vec![None, None]);
        assert_eq!(placement(1, Some(&CpuSet::default())), vec![None], "an empty set pins nothing");
    }
}
