//! The noise probe (`rtlab noise`): one busy thread per CPU (pinned, its policy applied inside
//! the thread, memory locked), each pre-heating its CPU, calibrating its counter and timing its
//! own loop during the pre-heat, then running [`crate::measure::noise::noise_loop`]: every gap
//! of at least the threshold is a sample of the one pipeline (histogram, samples ring,
//! attribution), and the thread's time measured and noise are its figures.

use super::setup::{enter, ready, settle, wake_until_finished, Gate, GateState};
use super::{Finished, Probe, ProbeError, Sinks, Started, ThreadOutcome, ThreadPlan, ThreadStatus};
use crate::measure::histogram::Layout;
use crate::measure::noise::{self, Counter, Hardware, Monotonic, NoiseParams, Recording, Scale, Series};
use crate::measure::probe::LoopOutcome;
use crate::measure::relay;
use crate::measure::ring::SampleRing;
use crate::measure::stats::{ExceedLog, Live, Recorder};
use crate::result::warning::Warning;
use crate::result::{EndReason, NoiseFigures, NoiseSeries};
use crate::rt::affinity::{self, CpuSet};
use crate::rt::memory;
use crate::rt::privileges::Privileges;
use crate::rt::sched;
use crate::rt::signals;
use crate::rt::thread as rtthread;
use crate::rt::worker::Worker;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How long the threads may take to set up and pre-heat beyond the pre-heat itself.
const SETUP_SLACK: Duration = Duration::from_secs(10);

/// The busy loop's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CounterKind {
    /// The CPU's own counter (x86's TSC, aarch64's CNTVCT_EL0), calibrated against
    /// CLOCK_MONOTONIC (where it can be trusted).
    Hardware,
    /// `clock_gettime(CLOCK_MONOTONIC)` through the vDSO.
    Monotonic,
}

impl CounterKind {
    /// The name in results.
    pub fn name(self) -> &'static str {
        match self {
            CounterKind::Hardware => crate::rt::counter::NAME,
            CounterKind::Monotonic => "monotonic",
        }
    }
}

/// What the noise probe runs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// One busy thread per CPU (each pinned; `interval_ns` is the duty-cycle period).
    pub threads: Vec<ThreadPlan>,
    /// The busy loop's clock.
    pub counter: CounterKind,
    /// Why the TSC is not used, when it is not.
    pub counter_why: Option<String>,
    /// A gap of at least this is noise (ns).
    pub threshold_ns: i64,
    /// Busy part of each period (ns).
    pub runtime_ns: i64,
    /// Duty-cycle period (ns).
    pub period_ns: i64,
    /// Pre-heat (calibration and loop timing) before measuring.
    pub warmup: Duration,
    /// Lock memory.
    pub mlockall: bool,
    /// Pin the reporting (main) thread here.
    pub main_affinity: Option<CpuSet>,
    /// Every online CPU runs a busy thread at an RT priority: the thread that handles Ctrl-C
    /// may not get a CPU for up to a second, so the busy threads look for it themselves.
    pub watch_signals: bool,
    /// rtla osnoise's stop thresholds (`rtlab osnoise -s/-S/-a`): the first crossing ends the
    /// run (`breaktrace`).
    pub stop_above: crate::measure::noise::StopAbove,
    /// The bucket each gap is floored to for `noise_us_floor` (ns; 1 µs but for rtla osnoise
    /// hist's `-b`).
    pub edge_ns: u64,
    /// Each busy loop runs in a worker process named `NAME/CPU` (rtla osnoise's `osnoise`),
    /// forked once its thread has its CPU and policy and has pre-heated.
    pub workers: Option<String>,
}

struct Shared {
    gate: Gate,
    finished: Vec<AtomicBool>,
    /// CLOCK_MONOTONIC time the threads end by themselves (`i64::MAX`: never).
    until_ns: AtomicI64,
    /// A busy thread saw a SIGINT/SIGTERM pending and stopped.
    signalled: AtomicBool,
    /// With worker processes: their stop and interrupt, which the probe's stop sets.
    flags: Option<crate::rt::worker::SharedFlags>,
}

struct Setup {
    status: ThreadStatus,
    warnings: Vec<Warning>,
    /// The loop's iteration time over the pre-heat (ns).
    loop_ns: f64,
}

/// The noise probe, from its plan to its joined threads.
pub struct NoiseProbe {
    plan: Plan,
    shared: Option<Arc<Shared>>,
    handles: Vec<std::thread::JoinHandle<ThreadOutcome>>,
    statuses: Vec<ThreadStatus>,
    steal_at_start: BTreeMap<usize, u64>,
    /// Set by SIGINT/SIGTERM (the busy threads end on it before the pipeline sees it).
    interrupt: Option<Arc<AtomicBool>>,
}

impl NoiseProbe {
    /// A probe for `plan`, not started.
    pub fn new(plan: Plan) -> NoiseProbe {
        NoiseProbe {
            plan,
            shared: None,
            handles: Vec::new(),
            statuses: Vec::new(),
            steal_at_start: BTreeMap::new(),
            interrupt: None,
        }
    }

    fn abort(&mut self) {
        super::setup::abort_threads(self.shared.as_ref().map(|s| &s.gate), &mut self.handles);
    }
}

impl Probe for NoiseProbe {
    fn slots(&self) -> usize {
        self.plan.threads.len()
    }

    fn start(&mut self, sinks: &Sinks) -> Result<Started, ProbeError> {
        let plan = self.plan.clone();
        self.interrupt = Some(Arc::clone(&sinks.interrupt));
        let privileges = Privileges::current();
        let mut warnings = Vec::new();
        signals::install_wake_handler()
            .map_err(|e| ProbeError::Start(format!("cannot install the handler that wakes probes on a stop: {e}")))?;
        let shared =
            Arc::new(Shared {
                gate: Gate::new(),
                finished: plan.threads.iter().map(|_| AtomicBool::new(false)).collect(),
                until_ns: AtomicI64::new(i64::MAX),
                signalled: AtomicBool::new(false),
                flags: match plan.workers {
                    Some(_) => Some(crate::rt::worker::SharedFlags::new().map_err(|e| {
                        ProbeError::Start(format!("cannot share a page with the worker processes: {e}"))
                    })?),
                    None => None,
                },
            });
        self.shared = Some(Arc::clone(&shared));
        let (tx, rx) = std::sync::mpsc::channel::<Setup>();
        for tp in &plan.threads {
            let ctx = BusyThread {
                tp: tp.clone(),
                plan: plan.clone(),
                privileges: privileges.clone(),
                live: Arc::clone(&sinks.lives[tp.index]),
                ring: sinks.rings[tp.index].clone(),
                max_latency_ns: sinks.max_latency_ns,
                stop: Arc::clone(&sinks.stop),
                interrupt: Arc::clone(&sinks.interrupt),
                shared: Arc::clone(&shared),
                tx: tx.clone(),
            };
            let h = super::setup::spawn(format!("rtlab-noise-{}", tp.index), move || ctx.run());
            match h {
                Ok(h) => self.handles.push(h),
                Err(e) => {
                    self.abort();
                    return Err(ProbeError::Start(format!("could not start busy thread {}: {e}", tp.index)));
                }
            }
        }
        drop(tx);
        let reports = match super::setup::collect(&rx, plan.threads.len(), Instant::now() + plan.warmup + SETUP_SLACK) {
            Ok(r) => r,
            Err(missing) => {
                shared.gate.open(GateState::Abort);
                self.handles.clear();
                return Err(ProbeError::Start(format!(
                    "{missing} busy threads did not get a CPU to set up and pre-heat within {} s: a task at a higher RT \
                     priority is using their CPUs; stop it or give the threads a higher priority (--priority)",
                    (plan.warmup + SETUP_SLACK).as_secs()
                )));
            }
        };
        let mut statuses = Vec::with_capacity(plan.threads.len());
        let mut loop_ns: Vec<(usize, f64)> = Vec::new();
        for s in reports {
            loop_ns.push((s.status.index, s.loop_ns));
            statuses.push(s.status);
            warnings.extend(s.warnings);
        }
        statuses.sort_by_key(|s| s.index);
        // Interrupted during the pre-heat: the run starts and ends at once, as `rtlab run`'s does
        // (exit 0, `end_reason: signal`, every output written, no noise measured).
        let interrupted = sinks.interrupt.load(Relaxed);
        // A gap shorter than one pass of the loop cannot be told from the loop itself.
        if let Some(&(i, slowest)) = loop_ns.iter().filter(|_| !interrupted).max_by(|a, b| a.1.total_cmp(&b.1)) {
            if plan.threshold_ns as f64 <= slowest {
                self.abort();
                let cpu = plan.threads[i].cpu.map_or("?".into(), |c| c.to_string());
                return Err(ProbeError::Usage(format!(
                    "--threshold {} ns is not above the loop's own iteration time on CPU {cpu} ({slowest:.1} ns, \
                     measured over the pre-heat): every pass would count as noise; use --threshold {}ns or more",
                    plan.threshold_ns,
                    (slowest * 2.0).ceil() as i64
                )));
            }
        }
        let mlocked = match settle(plan.mlockall, plan.main_affinity.as_ref(), &privileges, sinks.strict, &mut warnings)
        {
            Ok(m) => m,
            Err(e) => {
                self.abort();
                return Err(e);
            }
        };
        let now = crate::rt::clock::now(crate::rt::clock::ClockId::MONOTONIC);
        if let Some(d) = sinks.duration {
            shared.until_ns.store(now.saturating_add(d.as_nanos().min(i64::MAX as u128) as i64), Relaxed);
        }
        self.steal_at_start = crate::doctor::steal_ticks(&crate::doctor::Sysroot::default());
        let start = SystemTime::now();
        let schedule_start = Instant::now();
        shared.gate.open(GateState::Go);
        self.statuses = statuses.clone();
        Ok(Started {
            slots: statuses,
            warnings,
            dma_latency_us: None,
            mlocked,
            start,
            schedule_start,
            own_duration: false,
            runtime: None,
            stages: Vec::new(),
        })
    }

    fn finished(&mut self) -> bool {
        self.shared.as_ref().is_some_and(|s| s.finished.iter().all(|f| f.load(Relaxed)))
    }

    fn stop(&mut self) {
        // Busy threads see the stop within 1024 reads; one sleeping out a duty cycle is woken.
        if let Some(shared) = &self.shared {
            if let Some(f) = &shared.flags {
                f.get(0).store(true, Relaxed);
            }
            wake_until_finished(&shared.finished, &self.statuses);
        }
    }

    fn join(self: Box<Self>) -> Finished {
        let mut fin = Finished::default();
        let steal_end = crate::doctor::steal_ticks(&crate::doctor::Sysroot::default());
        for h in self.handles {
            // A busy thread does not panic; if one did, its figures are lost and the run fails loudly.
            let mut t = h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            if let (Some(cpu), Some(n)) = (t.plan.cpu, t.noise.as_mut()) {
                n.steal_ns = steal_end
                    .get(&cpu)
                    .zip(self.steal_at_start.get(&cpu))
                    .map(|(e, s)| e.saturating_sub(*s) as i64 * crate::doctor::NS_PER_TICK);
            }
            // The first thread to cross a stop threshold (-s/-S) ended the run: a breaktrace.
            if let Some(b) = t.outcome.break_hit {
                if fin.break_hit.is_none_or(|(_, old)| b.at_ns < old.at_ns) {
                    fin.break_hit = Some((t.plan.index, b));
                }
            }
            fin.warnings.extend(t.warnings.iter().cloned());
            fin.slots.push(t);
        }
        if let Some(s) = &self.shared {
            let now = crate::rt::clock::now(crate::rt::clock::ClockId::MONOTONIC);
            if s.signalled.load(Relaxed) || self.interrupt.as_ref().is_some_and(|i| i.load(Relaxed)) {
                fin.end_reason = Some(EndReason::Signal);
            } else if now >= s.until_ns.load(Relaxed) {
                fin.end_reason = Some(EndReason::Duration);
            }
        }
        fin
    }
}

struct BusyThread {
    tp: ThreadPlan,
    plan: Plan,
    privileges: Privileges,
    live: Arc<Live>,
    ring: Option<Arc<SampleRing>>,
    max_latency_ns: Option<i64>,
    stop: Arc<AtomicBool>,
    interrupt: Arc<AtomicBool>,
    shared: Arc<Shared>,
    tx: std::sync::mpsc::Sender<Setup>,
}

impl BusyThread {
    fn run(self) -> ThreadOutcome {
        match self.plan.counter {
            CounterKind::Hardware => self.run_on(&Hardware),
            CounterKind::Monotonic => self.run_on(&Monotonic),
        }
    }

    fn run_on<C: Counter>(self, c: &C) -> ThreadOutcome {
        let tp = &self.tp;
        let mut warnings = Vec::new();
        // Control signals go to the reporting thread (or are seen pending, with watch_signals);
        // a duty cycle's sleep ends early when the run stops.
        enter(tp, &self.privileges, &mut warnings);
        ready(&self.stop, &self.live, self.ring.as_deref());
        lock_busy_loop(&mut warnings);
        let sched_now = sched::current_thread().unwrap_or(tp.sched);

        let (scale, loop_ns) = self.preheat(c);
        let params = NoiseParams {
            threshold_ticks: scale.ticks(self.plan.threshold_ns as u64),
            scale,
            runtime_ns: self.plan.runtime_ns,
            period_ns: self.plan.period_ns,
            until_ns: None,
            watch_signals: self.plan.watch_signals,
            stop_above: self.plan.stop_above,
            edge_ns: self.plan.edge_ns,
        };
        let worker = self.fork_worker(c, params, &mut warnings);
        let tid = worker.as_ref().map_or_else(rtthread::tid, |w| w.pid());

        let mut rec = Recorder::with_logs(
            &self.live,
            ExceedLog::new(self.max_latency_ns, 1),
            ExceedLog::off(),
            self.ring.as_deref(),
        );
        rec.prefault();
        let mut series = Series::new();
        let status = ThreadStatus {
            index: tp.index,
            cpu: tp.cpu,
            sched: sched_now,
            interval_ns: tp.interval_ns,
            tid,
            identity: None,
        };
        let _ = self.tx.send(Setup { status, warnings, loop_ns });

        let mut died = None;
        let outcome = if self.shared.gate.wait() == GateState::Abort {
            None
        } else {
            let until = self.shared.until_ns.load(Relaxed);
            let p = NoiseParams { until_ns: (until != i64::MAX).then_some(until), ..params };
            match &worker {
                Some(w) => {
                    let o = self.relayed(w, until, &mut rec, &mut series);
                    died = o.is_none().then(|| w.pid());
                    o
                }
                None => Some(noise::noise_loop(c, &p, &mut rec, &mut series, &self.stop, &self.interrupt)),
            }
        };
        // The worker outlives this thread until the command is done: rtla's actions see it.
        let own = worker.is_none();
        if let Some(w) = worker {
            crate::rt::worker::park(w);
        }
        if outcome.as_ref().is_some_and(|o| o.signalled) {
            self.shared.signalled.store(true, Relaxed);
        }
        signals::interrupt_sleeps_on(None);
        self.shared.finished[tp.index].store(true, Relaxed);
        let mut t = finished(tp, sched_now, tid, rec.finish(), outcome, &series, scale, loop_ns);
        // A worker's busy loop ran in its own process: this thread only relayed it.
        t.cpu_ns = own.then(|| crate::rt::clock::now(crate::rt::clock::ClockId::THREAD_CPUTIME));
        if let Some(pid) = died {
            t.warnings.push(Warning::RuntimeFailed {
                why: format!("the worker process of busy thread {} (pid {pid}) ended mid-run", tp.index),
            });
        }
        t
    }

    /// This thread's worker process (`Plan::workers`), forked once the thread has its CPU and
    /// policy (which it inherits) and has pre-heated: it waits for the run's end time, runs the
    /// busy loop with the shared stop and interrupt, sends its noises and outcome, and waits
    /// for rtlab to be done with it. While it spins it dies with this thread.
    fn fork_worker<C: Counter>(&self, c: &C, p: NoiseParams, warnings: &mut Vec<Warning>) -> Option<Worker> {
        use crate::rt::worker;
        let (name, flags) = (self.plan.workers.as_ref()?, self.shared.flags.as_ref()?);
        let name = format!("{name}/{}", self.tp.cpu.unwrap_or(self.tp.index));
        let forked = worker::fork(&name, self.plan.mlockall, |rx, tx| {
            worker::die_with_thread(true);
            let mut until = [0i64];
            if worker::read_words(rx, &mut until) != worker::Read::Full {
                return;
            }
            // Its signals are rtlab's to see: the stop comes through the shared flags.
            let q = NoiseParams { until_ns: (until[0] != i64::MAX).then_some(until[0]), watch_signals: false, ..p };
            let mut tee = relay::NoiseTee { fd: tx, stop: flags.get(0) };
            let out = noise::noise_loop_into(c, &q, &mut tee, flags.get(0), flags.get(1));
            worker::die_with_thread(false);
            tee.end(&out);
            worker::wait_for_end(rx);
        });
        forked
            .map_err(|e| {
                warnings.push(Warning::RuntimeFailed {
                    why: format!("{name}: fork failed ({e}); the busy loop runs in rtlab's thread"),
                })
            })
            .ok()
    }

    /// The busy loop replayed from this thread's worker; its stop (a threshold crossed, or a
    /// worker that ended without its outcome) ends the run.
    fn relayed(
        &self,
        w: &Worker,
        until: i64,
        rec: &mut Recorder<'_>,
        series: &mut Series,
    ) -> Option<noise::NoiseOutcome> {
        let o = if w.send(&[until]) { relay::noise_from(w, &mut Recording { rec, series }) } else { None };
        if o.as_ref().is_none_or(|o| o.stopped_at.is_some() && !self.plan.stop_above.continues) {
            self.stop.store(true, Relaxed);
        }
        o
    }

    /// Pre-heats the CPU (it leaves its low-power states), calibrates the counter against
    /// CLOCK_MONOTONIC over the whole pre-heat, and times the loop: the counter's scale and
    /// the loop's time per read (ns).
    fn preheat<C: Counter>(&self, c: &C) -> (Scale, f64) {
        let calibrate = || match self.plan.counter {
            CounterKind::Hardware => crate::rt::counter::pair(),
            CounterKind::Monotonic => {
                let m = c.mono_ns();
                (m as u64, m)
            }
        };
        let (t0, m0) = calibrate();
        let coarse = {
            let until = m0 + 2_000_000;
            while c.mono_ns() < until {
                std::hint::spin_loop();
            }
            let (t1, m1) = calibrate();
            Scale::new(t1.wrapping_sub(t0), (m1 - m0) as u64)
        };
        let scratch = Live::new(Layout::DEFAULT);
        let mut scratch_rec = Recorder::with_logs(&scratch, ExceedLog::off(), ExceedLog::off(), None);
        let mut scratch_series = Series::new();
        let warm_ns = self.plan.warmup.as_nanos().min(i64::MAX as u128) as i64;
        // The loop times itself without the gaps of 1 µs or more (whatever the threshold asked:
        // one below the loop's own time would count every pass as noise).
        let pre = NoiseParams {
            threshold_ticks: coarse.ticks(self.plan.threshold_ns.max(1_000) as u64),
            scale: coarse,
            runtime_ns: i64::MAX,
            period_ns: i64::MAX,
            until_ns: Some(m0 + warm_ns),
            watch_signals: self.plan.watch_signals,
            stop_above: Default::default(),
            edge_ns: 1_000,
        };
        let heated = noise::noise_loop(c, &pre, &mut scratch_rec, &mut scratch_series, &self.stop, &self.interrupt);
        let (t1, m1) = calibrate();
        let scale = match self.plan.counter {
            CounterKind::Hardware => Scale::new(t1.wrapping_sub(t0), (m1 - m0).max(1) as u64),
            CounterKind::Monotonic => Scale::NS,
        };
        let busy = scale.ns(coarse.ticks(heated.runtime_ns.max(0) as u64)) as f64
            - scale.ns(coarse.ticks(heated.noise_ns)) as f64;
        let loop_ns = if heated.iterations > 0 { busy.max(0.0) / heated.iterations as f64 } else { f64::MAX };

        (scale, loop_ns)
    }
}

/// Locks the busy loop's code (both counters') and the sleep calls in memory.
fn lock_busy_loop(warnings: &mut Vec<Warning>) {
    let hot = [
        noise::noise_loop_into::<Hardware, Recording> as *const () as usize,
        noise::noise_loop_into::<Monotonic, Recording> as *const () as usize,
    ];
    for addr in hot {
        if let Err(e) = memory::lock_code_at(addr, 16 << 10, 48 << 10) {
            warnings.push(Warning::MlockFailed { why: format!("locking the busy loop's code: {e}") });
            break;
        }
    }
    let _ = memory::lock_sleep_calls();
}

/// A busy thread's outcome for the pipeline: its noises, figures and series.
#[allow(clippy::too_many_arguments)]
fn finished(
    tp: &ThreadPlan,
    sched_now: crate::rt::sched::SchedParams,
    tid: i32,
    summary: crate::measure::stats::Summary,
    outcome: Option<noise::NoiseOutcome>,
    series: &Series,
    scale: Scale,
    loop_ns: f64,
) -> ThreadOutcome {
    let noise = outcome.as_ref().map(|o| {
        let n = series.len.min(series.points.len());
        NoiseFigures {
            counter_mhz: scale.mhz(),
            loop_ns,
            iterations: o.iterations,
            runtime_ns: o.runtime_ns,
            noise_ns: o.noise_ns,
            available_pct: 0.0,
            noise_per_s_ns: 0.0,
            noises_per_s: 0.0,
            noise_us_floor: o.noise_us_floor,
            steal_ns: None,
            sources: None,
            series: NoiseSeries {
                interval_ns: series.interval_ns,
                noise_ns: series.points[..n].iter().map(|p| p.0).collect(),
                count: series.points[..n].iter().map(|p| p.1).collect(),
                span_ns: o.elapsed_ns,
            },
            stop_hits: o.hits,
            max_period_noise_ns: o.max_period_noise_ns,
            noise_us_by_period: o.noise_us_by_period,
        }
        .derive(summary.cycles)
    });
    ThreadOutcome {
        series: None,
        watch: None,
        cpu_ns: None,
        plan: tp.clone(),
        sched: Some(sched_now),
        cpus_allowed: Some(affinity::current_thread().unwrap_or_default()),
        last_cpu: affinity::current_cpu(),
        timer_slack_ns: None,
        summary,
        outcome: LoopOutcome {
            iterations: outcome.as_ref().map_or(0, |o| o.iterations),
            drift_ns: 0,
            break_hit: outcome.as_ref().and_then(|o| o.stopped_at),
            start_ns: outcome.as_ref().map_or(0, |o| o.start_ns),
        },
        drift_ns: None,
        tid,
        samples_lost: 0,
        warnings: Vec::new(),
        noise,
        work: None,
    }
}
