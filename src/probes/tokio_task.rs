//! The tokio probe: a task in a tokio runtime waits for absolute deadlines (`sleep_until`) or
//! an `interval`, and records how late it wakes, with the same statistics as an OS thread.
//! Load inside the runtime: tasks that compute without ever yielding (they hold a worker
//! thread), and `spawn_blocking` work — the two classic async pitfalls.

use super::{Finished, Probe, ProbeError, Sinks, Started, ThreadOutcome, ThreadPlan, ThreadStatus};
use crate::load::LoadResult;
use crate::measure::probe::{missed_periods, LoopOutcome};
use crate::measure::ring::SampleRing;
use crate::measure::stats::{ExceedLog, Live, Recorder, Summary};
use crate::result::warning::Warning;
use crate::result::Runtime;
use crate::rt::sched::SchedParams;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The tokio version rtlab is built with.
pub const VERSION: &str = env!("RTLAB_TOKIO_VERSION");

/// The runtime flavor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Flavor {
    /// One thread runs every task (`new_current_thread`)
    CurrentThread,
    /// A pool of worker threads (`new_multi_thread`)
    MultiThread,
}

impl Flavor {
    /// The name in results.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::CurrentThread => "current-thread",
            Flavor::MultiThread => "multi-thread",
        }
    }
}

/// How the periodic task waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Wait {
    /// `sleep_until` on absolute deadlines (start + k·period); late periods are skipped and counted
    SleepUntil,
    /// `tokio::time::interval` with the chosen missed-tick behaviour; latency against each tick's deadline
    Interval,
}

impl Wait {
    /// The name in results.
    pub fn name(self) -> &'static str {
        match self {
            Wait::SleepUntil => "sleep-until",
            Wait::Interval => "interval",
        }
    }
}

/// Nanoseconds from `origin` to `t` (negative before it).
fn signed_nanos(t: Instant, origin: Instant) -> i64 {
    nanos(t.saturating_duration_since(origin)) - nanos(origin.saturating_duration_since(t))
}

/// One wakeup of the tokio probe, accounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tick {
    /// Wakeup minus its deadline (ns).
    pub latency_ns: i64,
    /// Deadlines of the schedule that passed without a wakeup of their own.
    pub missed: u64,
}

/// The probe's schedule: latency, missed deadlines and drift, in ns since the start.
#[derive(Clone, Debug)]
pub struct Schedule {
    period_ns: i64,
    /// Schedule positions consumed (each wakeup and each deadline it missed).
    periods: i64,
    prev_due: Option<i64>,
    last_wake: i64,
}

impl Schedule {
    /// A schedule of `period_ns` from 0.
    pub fn new(period_ns: i64) -> Schedule {
        Schedule { period_ns, periods: 0, prev_due: None, last_wake: 0 }
    }

    /// A wakeup at `now` for the deadline `due`. With `sleep_until` the missed deadlines are the
    /// OS probe's rule ([`missed_periods`]); with `interval` they come from consecutive tick
    /// deadlines, because tokio decides which ticks exist: `burst` delivers every late tick
    /// (none missed, however late), `skip` jumps over some (those are missed), `delay` moves
    /// the schedule (whole periods it moved by are missed).
    pub fn on_wake(&mut self, due: i64, now: i64, ticks: bool) -> Tick {
        let latency_ns = now - due;
        let missed = if ticks {
            let gap = self.prev_due.map_or(due, |p| due - p);
            ((gap - self.period_ns).max(0) / self.period_ns) as u64
        } else {
            missed_periods(latency_ns, self.period_ns)
        };
        self.prev_due = Some(due);
        self.periods += 1 + missed as i64;
        self.last_wake = now;
        Tick { latency_ns, missed }
    }

    /// Last wakeup minus where the ideal schedule (start + k·period) is after as many periods
    /// as were consumed: bounded by the last latency when the schedule holds, growing when it
    /// moves (`delay`), as for OS threads.
    pub fn drift_ns(&self) -> i64 {
        self.last_wake - self.periods * self.period_ns
    }
}

/// `interval`'s behaviour after a missed tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MissedTick {
    /// Fire the missed ticks at once (tokio's default)
    Burst,
    /// Restart the schedule from the late tick
    Delay,
    /// Skip to the next tick on the original schedule
    Skip,
}

impl MissedTick {
    /// The name in results.
    pub fn name(self) -> &'static str {
        match self {
            MissedTick::Burst => "burst",
            MissedTick::Delay => "delay",
            MissedTick::Skip => "skip",
        }
    }

    fn to_tokio(self) -> tokio::time::MissedTickBehavior {
        match self {
            MissedTick::Burst => tokio::time::MissedTickBehavior::Burst,
            MissedTick::Delay => tokio::time::MissedTickBehavior::Delay,
            MissedTick::Skip => tokio::time::MissedTickBehavior::Skip,
        }
    }
}

/// What to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Runtime flavor.
    pub flavor: Flavor,
    /// Worker threads (multi-thread).
    pub workers: usize,
    /// Waiting method.
    pub wait: Wait,
    /// `interval`'s missed-tick behaviour.
    pub missed_tick: MissedTick,
    /// Period (ns).
    pub interval_ns: i64,
    /// Tasks that compute without yielding.
    pub hogs: usize,
    /// `spawn_blocking` tasks that compute.
    pub blocking: usize,
    /// A run bounded by its loops alone ends when the task takes no sample for this long (ns).
    pub stall_limit_ns: Option<i64>,
}

impl Plan {
    /// What runs, in a line.
    pub fn describe(&self) -> String {
        format!(
            "tokio {} runtime ({}), a task with {} every {}; tokio's timer wheel has 1 ms granularity",
            self.flavor.name(),
            crate::units::count(self.workers as u64, "worker thread"),
            self.wait.name(),
            crate::units::duration(self.interval_ns)
        )
    }

    fn runtime(&self) -> Runtime {
        Runtime {
            kind: "tokio".into(),
            method: self.wait.name().into(),
            period_ns: self.interval_ns,
            timer_granularity_ns: 1_000_000,
            version: Some(format!("tokio {VERSION}")),
            architecture: Some(std::env::consts::ARCH.into()),
            schedulers: Some(self.workers),
            flavor: Some(self.flavor.name().into()),
            missed_tick_behavior: (self.wait == Wait::Interval).then(|| self.missed_tick.name().into()),
            workers: self.hogs,
            blocking_tasks: self.blocking,
            ..Runtime::default()
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The periodic task's statistics.
    pub summary: Summary,
    /// Leibniz terms computed by the hog tasks and by the blocking tasks.
    pub terms: (u64, u64),
    /// Last wakeup minus the ideal schedule (ns).
    pub drift_ns: Option<i64>,
    /// How long the task took no sample when the stall limit ended the run (ns).
    pub stranded_ns: Option<i64>,
}

/// One chunk of the Leibniz series (RealtimeTests' pi loop), 10 000 terms.
fn pi_chunk(k0: u64, acc: f64) -> f64 {
    let mut a = acc;
    for k in k0..k0 + 10_000 {
        let sign = if k & 1 == 0 { 1.0 } else { -1.0 };
        a += 4.0 * sign / (2 * k + 1) as f64;
    }
    std::hint::black_box(a)
}

/// Computes until `done`, counting terms.
fn compute(done: &AtomicBool, terms: &AtomicU64) {
    let (mut k, mut acc) = (0u64, 0.0);
    while !done.load(Relaxed) {
        acc = pi_chunk(k, acc);
        k += 10_000;
        terms.fetch_add(10_000, Relaxed);
    }
}

/// Ends the run (sets `done`) once the task has taken no sample for `limit_ns` since `start`
/// (`last` holds its last sample's time, ns since `start`); returns that quiet time if it did.
/// A thread of its own, because a stranded task's runtime may have no thread left to run a timer.
fn watch_stall(
    limit_ns: i64,
    start: Instant,
    last: Arc<AtomicI64>,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Option<i64>> {
    std::thread::spawn(move || {
        let tick = Duration::from_nanos((limit_ns / 20).clamp(1_000_000, 100_000_000) as u64);
        while !done.load(Relaxed) {
            std::thread::park_timeout(tick);
            let quiet = signed_nanos(Instant::now(), start) - last.load(Relaxed);
            if quiet >= limit_ns {
                done.store(true, Relaxed);
                return Some(quiet);
            }
        }
        None
    })
}

fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// Where the periodic task records, and when it ends.
pub struct Target {
    /// Its statistics.
    pub live: Arc<Live>,
    /// Every sample, with `--samples`.
    pub ring: Option<Arc<SampleRing>>,
    /// Samples to take, if limited.
    pub loops: Option<u64>,
    /// The verdict's threshold (ns).
    pub threshold_ns: Option<i64>,
    /// Set to end the run (the task, the hogs and the blocking tasks stop).
    pub done: Arc<AtomicBool>,
}

/// Builds the runtime, starts the load tasks and the periodic task, calls `on_start` with the
/// task's identity once its schedule is anchored, and returns when the task has its samples
/// or `done` is set.
pub fn run(plan: &Plan, target: Target, on_start: impl FnOnce(String)) -> Result<Outcome, String> {
    let rt = match plan.flavor {
        Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread().enable_time().build(),
        Flavor::MultiThread => {
            tokio::runtime::Builder::new_multi_thread().worker_threads(plan.workers).enable_time().build()
        }
    }
    .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    let done = target.done;
    let hog_terms = Arc::new(AtomicU64::new(0));
    let blocking_terms = Arc::new(AtomicU64::new(0));
    let p = plan.clone();
    let (live, ring, loops, threshold) = (target.live, target.ring, target.loops, target.threshold_ns);
    let result = rt.block_on(async {
        for _ in 0..p.blocking {
            let (done, terms) = (done.clone(), blocking_terms.clone());
            tokio::task::spawn_blocking(move || compute(&done, &terms));
        }
        let running = Arc::new(AtomicUsize::new(0));
        for _ in 0..p.hogs {
            let (done, terms, running) = (done.clone(), hog_terms.clone(), running.clone());
            tokio::spawn(async move {
                running.fetch_add(1, Relaxed);
                compute(&done, &terms)
            });
        }
        if p.flavor == Flavor::MultiThread {
            // The periodic task is spawned once every hog holds its worker: spawned beside them,
            // it could be taken into a hog's worker queue with them and stay there, the other
            // workers parked, for as long as the hog runs (seen: a run with -l never ended).
            let holding = p.hogs.min(p.workers);
            while running.load(Relaxed) < holding && !done.load(Relaxed) {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
        // The schedule is anchored before the task first runs: a task that cannot run at
        // first (a hog holds its thread) sees that as lateness.
        let start = Instant::now();
        let period = Duration::from_nanos(p.interval_ns as u64);
        let probe_done = done.clone();
        let last = Arc::new(AtomicI64::new(0));
        let stall = p.stall_limit_ns.map(|limit| watch_stall(limit, start, last.clone(), done.clone()));
        let probe = tokio::spawn(async move {
            let mut rec = Recorder::with_logs(&live, ExceedLog::new(threshold, 1), ExceedLog::off(), ring.as_deref());
            let mut next = start + period;
            let mut interval = tokio::time::interval_at((start + period).into(), period);
            interval.set_missed_tick_behavior(p.missed_tick.to_tokio());
            let mut n = 0u64;
            let mut schedule = Schedule::new(p.interval_ns);
            loop {
                let due = match p.wait {
                    Wait::SleepUntil => {
                        tokio::time::sleep_until(next.into()).await;
                        next
                    }
                    Wait::Interval => interval.tick().await.into_std(),
                };
                let now = Instant::now();
                let (due_ns, now_ns) = (signed_nanos(due, start), signed_nanos(now, start));
                let tick = schedule.on_wake(due_ns, now_ns, p.wait == Wait::Interval);
                if p.wait == Wait::SleepUntil {
                    // As the OS probe: skip the deadlines already passed (counted as missed).
                    next = due + Duration::from_nanos((1 + tick.missed) * p.interval_ns as u64);
                }
                rec.record(tick.latency_ns, now_ns, tick.missed);
                last.store(now_ns, Relaxed);
                n += 1;
                if probe_done.load(Relaxed) || loops.is_some_and(|l| n >= l) {
                    break;
                }
            }
            probe_done.store(true, Relaxed);
            let summary = rec.finish();
            (summary, Some(schedule.drift_ns()))
        });
        on_start(format!("tokio task {}", probe.id()));
        (probe.await, stall)
    });
    done.store(true, Relaxed);
    drop(rt);
    let stranded_ns = result.1.and_then(|w| {
        w.thread().unpark();
        w.join().ok().flatten()
    });
    let (summary, drift_ns) = result.0.map_err(|e| format!("the tokio probe task failed: {e}"))?;
    let terms = (hog_terms.load(Relaxed), blocking_terms.load(Relaxed));
    Ok(Outcome { summary, terms, drift_ns, stranded_ns })
}

/// The tokio probe in the pipeline: the runtime runs on a thread of its own.
pub struct TokioProbe {
    plan: Plan,
    done: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Result<Outcome, String>>>,
    start: Option<Instant>,
}

impl TokioProbe {
    /// A probe for `plan`, not started.
    pub fn new(plan: Plan) -> TokioProbe {
        TokioProbe { plan, done: Arc::new(AtomicBool::new(false)), handle: None, start: None }
    }
}

impl Probe for TokioProbe {
    fn slots(&self) -> usize {
        1
    }

    fn start(&mut self, sinks: &Sinks) -> Result<Started, ProbeError> {
        let (tx, rx) = std::sync::mpsc::channel::<(String, i32)>();
        let plan = self.plan.clone();
        let live = Arc::clone(&sinks.lives[0]);
        let ring = sinks.rings[0].clone();
        let (loops, threshold_ns, done) = (sinks.loops, sinks.max_latency_ns, Arc::clone(&self.done));
        let handle = std::thread::Builder::new()
            .name("rtlab-tokio".into())
            .spawn(move || {
                let target = Target { live, ring, loops, threshold_ns, done };
                run(&plan, target, |identity| {
                    let _ = tx.send((identity, crate::rt::thread::tid()));
                })
            })
            .map_err(|e| ProbeError::Start(format!("cannot start the tokio runtime's thread: {e}")))?;
        let wall = SystemTime::now();
        let now = Instant::now();
        let (identity, tid) = match rx.recv() {
            Ok(v) => v,
            Err(_) => {
                let why = handle.join().map_or_else(|_| "it panicked".into(), |r| r.err().unwrap_or_default());
                return Err(ProbeError::Start(why));
            }
        };
        self.handle = Some(handle);
        self.start = Some(now);
        Ok(Started {
            slots: vec![ThreadStatus {
                index: 0,
                cpu: None,
                sched: SchedParams::simple(crate::rt::sched::Policy::Other, 0),
                interval_ns: self.plan.interval_ns,
                tid,
                identity: Some(identity),
            }],
            warnings: Vec::new(),
            dma_latency_us: None,
            mlocked: false,
            start: wall,
            schedule_start: now,
            own_duration: false,
            runtime: Some(self.plan.runtime()),
            stages: Vec::new(),
        })
    }

    fn finished(&mut self) -> bool {
        self.handle.as_ref().is_none_or(|h| h.is_finished())
    }

    fn stop(&mut self) {
        self.done.store(true, Relaxed);
    }

    fn join(self: Box<Self>) -> Finished {
        let plan = &self.plan;
        let elapsed = self.start.map_or(0.0, |s| s.elapsed().as_secs_f64());
        let outcome = match self.handle.map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err("the tokio probe's thread panicked".into()),
            None => Err("the tokio probe never started".into()),
        };
        let mut fin = Finished {
            runtime: Some(plan.runtime()),
            warnings: vec![Warning::TimerGranularity { runtime: "tokio".into(), granularity_ns: 1_000_000 }],
            ..Finished::default()
        };
        let o = match outcome {
            Ok(o) => o,
            Err(why) => {
                fin.failure = Some(why.clone());
                fin.warnings.push(Warning::RuntimeFailed { why });
                return fin;
            }
        };
        let in_runtime = |kind: &str, n: usize, terms: u64, policy: &str| {
            LoadResult::in_runtime(format!("{kind}:workers={n}"), kind, n, policy.into(), terms, elapsed)
        };
        if plan.hogs > 0 {
            let where_ = if plan.flavor == Flavor::CurrentThread { "tokio current-thread" } else { "tokio worker" };
            fin.loads.push(in_runtime("tokio-hog", plan.hogs, o.terms.0, where_));
        }
        if plan.blocking > 0 {
            fin.loads.push(in_runtime("tokio-blocking", plan.blocking, o.terms.1, "tokio blocking pool"));
        }
        if let Some(quiet_ns) = o.stranded_ns {
            fin.warnings.push(Warning::TaskStranded { runtime: "tokio".into(), quiet_ns });
        }
        fin.slots.push(ThreadOutcome {
            cpu_ns: None,
            series: None,
            watch: None,
            plan: ThreadPlan::runtime_slot(plan.interval_ns),
            sched: None,
            cpus_allowed: None,
            last_cpu: None,
            timer_slack_ns: None,
            outcome: LoopOutcome { iterations: o.summary.cycles, drift_ns: 0, break_hit: None, start_ns: 0 },
            drift_ns: o.drift_ns,
            summary: o.summary,
            tid: 0,
            samples_lost: 0,
            warnings: Vec::new(),
            noise: None,
            work: None,
        });
        fin
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::Layout;

    const MS: i64 = 1_000_000;

    #[test]
    fn a_burst_after_one_stall_misses_no_period_however_late_its_ticks_are() {
        // A 3.5 ms stall at 1 ms: burst delivers the ticks due at 1, 2, 3 and 4 ms together
        // at 4.5 ms. Counting lateness / period gave 3 + 2 + 1 + 0 = 6 missed; none was.
        let mut s = Schedule::new(MS);
        let ticks: Vec<Tick> = [
            (MS, 1_000_000 + 500),
            (2 * MS, 4_500_000),
            (3 * MS, 4_500_010),
            (4 * MS, 4_500_020),
            (5 * MS, 5 * MS + 300),
        ]
        .iter()
        .map(|&(due, now)| s.on_wake(due, now, true))
        .collect();
        assert_eq!(ticks.iter().map(|t| t.missed).sum::<u64>(), 0);
        assert_eq!(ticks[1].latency_ns, 2_500_000);
        assert_eq!(s.drift_ns(), 300, "the schedule held: the drift is the last lateness");
    }

    #[test]
    fn skipped_ticks_are_missed_and_sleep_until_uses_the_os_rule() {
        let mut s = Schedule::new(MS);
        s.on_wake(MS, MS + 10, true);
        assert_eq!(s.on_wake(5 * MS, 5 * MS + 10, true).missed, 3, "ticks 2, 3 and 4 were skipped");
        let mut s = Schedule::new(MS);
        assert_eq!(s.on_wake(MS, 3 * MS, false).missed, 1, "2 ms late: the 2 ms deadline passed");
        assert_eq!(s.on_wake(3 * MS, 3 * MS + 5, false).missed, 0, "the loop's next deadline: 1 + 2·1 ms");
        assert_eq!(s.drift_ns(), 5);
    }

    #[test]
    fn a_delayed_schedule_shows_as_growing_drift_not_a_remainder() {
        // Delay: every tick 0.3 ms late moves the schedule by 0.3 ms. After four ticks the task
        // runs 1.2 ms behind the grid; (last − start) mod period said 0.2 ms.
        let mut s = Schedule::new(MS);
        for (due, now) in
            [(1_000_000, 1_300_000), (2_300_000, 2_600_000), (3_600_000, 3_900_000), (4_900_000, 5_200_000)]
        {
            assert_eq!(s.on_wake(due, now, true).missed, 0);
        }
        assert_eq!(s.drift_ns(), 1_200_000);
    }

    fn plan(flavor: Flavor, wait: Wait) -> Plan {
        let missed_tick = MissedTick::Burst;
        Plan {
            flavor,
            workers: 2,
            wait,
            missed_tick,
            interval_ns: 1_000_000,
            hogs: 0,
            blocking: 0,
            stall_limit_ns: None,
        }
    }

    fn target(loops: Option<u64>, done: Arc<AtomicBool>) -> Target {
        Target { live: Arc::new(Live::new(Layout::DEFAULT)), ring: None, loops, threshold_ns: None, done }
    }

    #[test]
    fn the_periodic_task_takes_its_samples_in_both_runtime_kinds_and_both_waits() {
        for flavor in [Flavor::CurrentThread, Flavor::MultiThread] {
            for wait in [Wait::SleepUntil, Wait::Interval] {
                let o = run(&plan(flavor, wait), target(Some(50), Arc::new(AtomicBool::new(false))), |_| {}).unwrap();
                assert_eq!(o.summary.cycles, 50, "{flavor:?} {wait:?}");
                assert!(o.summary.min_ns.unwrap() >= 0, "tokio never wakes before the deadline");
            }
        }
    }

    #[test]
    fn a_hog_on_one_of_two_workers_ends_every_run_by_its_samples_or_by_the_stall_limit() {
        // tokio promises a task no progress while a worker is blocked. Seen: the task stranded
        // behind the hog's worker (natively, before the hogs were started first), and once in
        // about 400 runs under qemu-user with the hog already running (the task in the global
        // queue, the other worker parked on its condvar). A run ended by its loops alone must
        // end all the same, and say so. The outside watchdog (30 s) catches a broken limit.
        let mut p = plan(Flavor::MultiThread, Wait::SleepUntil);
        (p.hogs, p.interval_ns, p.stall_limit_ns) = (1, 200_000, Some(2_000_000_000));
        for attempt in 0..300 {
            let done = Arc::new(AtomicBool::new(false));
            let finished = Arc::new(AtomicBool::new(false));
            let watchdog = {
                let (done, finished) = (done.clone(), finished.clone());
                std::thread::spawn(move || {
                    let until = Instant::now() + Duration::from_secs(30);
                    while !finished.load(Relaxed) && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    done.store(true, Relaxed);
                })
            };
            let o = run(&p, target(Some(3), done), |_| {}).unwrap();
            finished.store(true, Relaxed);
            watchdog.join().unwrap();
            match o.stranded_ns {
                None => {
                    assert_eq!(o.summary.cycles, 3, "attempt {attempt}: neither its samples nor the limit ended it")
                }
                Some(quiet) => {
                    assert!(quiet >= 2_000_000_000, "attempt {attempt}: ended after {quiet} ns quiet");
                    assert!(o.summary.cycles < 3, "attempt {attempt}: stranded yet had its samples");
                }
            }
        }
    }

    #[test]
    fn a_task_stranded_past_the_stall_limit_ends_the_run_and_its_last_sample_holds_the_wait() {
        // The hog holds a current-thread runtime's only thread: the task cannot run until the
        // limit ends the run and the hog with it; it then wakes once, 300 ms or more late.
        let mut p = plan(Flavor::CurrentThread, Wait::SleepUntil);
        (p.hogs, p.stall_limit_ns) = (1, Some(300 * MS));
        let o = run(&p, target(Some(3), Arc::new(AtomicBool::new(false))), |_| {}).unwrap();
        assert!(o.stranded_ns.is_some_and(|q| q >= 300 * MS), "{:?}", o.stranded_ns);
        assert_eq!(o.summary.cycles, 1);
        assert!(
            o.summary.max_ns.is_some_and(|m| m >= 299 * MS),
            "the wait is in the last sample: {:?}",
            o.summary.max_ns
        );
        assert!(o.terms.0 > 0, "the hog ran");
    }

    #[test]
    fn a_run_that_takes_its_samples_is_not_said_stranded() {
        let mut p = plan(Flavor::MultiThread, Wait::SleepUntil);
        p.stall_limit_ns = Some(10_000 * MS);
        let o = run(&p, target(Some(5), Arc::new(AtomicBool::new(false))), |_| {}).unwrap();
        assert_eq!((o.summary.cycles, o.stranded_ns), (5, None));
    }

    #[test]
    fn a_hog_on_a_current_thread_runtime_starves_the_task_until_the_time_is_up() {
        let mut p = plan(Flavor::CurrentThread, Wait::SleepUntil);
        p.hogs = 1;
        // The pipeline ends the run after its duration by setting `done` (here, 300 ms).
        let done = Arc::new(AtomicBool::new(false));
        let timer = {
            let done = done.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                done.store(true, Relaxed);
            })
        };
        let o = run(&p, target(None, done), |_| {}).unwrap();
        let _ = timer.join();
        // The hog holds the only thread until the run is ended: the task wakes once,
        // when the hog has stopped, having missed the periods in between.
        assert_eq!(o.summary.cycles, 1);
        assert!(o.summary.missed >= 100, "{} missed", o.summary.missed);
        assert!(o.terms.0 > 0);
    }
}
