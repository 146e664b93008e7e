//! The tokio probe: a task in a tokio runtime waits for absolute deadlines (`sleep_until`) or
//! an `interval`, and records how late it wakes, with the same statistics as an OS thread.
//! Load inside the runtime: tasks that compute without ever yielding (they hold a worker
//! thread), and `spawn_blocking` work — the two classic async pitfalls.

use crate::measure::histogram::Layout;
use crate::measure::stats::{Live, Recorder, Summary};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// Samples to take, if limited.
    pub loops: Option<u64>,
    /// Length, if limited.
    pub duration: Option<Duration>,
    /// Tasks that compute without yielding.
    pub hogs: usize,
    /// `spawn_blocking` tasks that compute.
    pub blocking: usize,
    /// `--max-latency`.
    pub threshold_ns: Option<i64>,
    /// Histogram layout.
    pub layout: Layout,
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The periodic task's statistics.
    pub summary: Summary,
    /// Wall-clock start.
    pub start: std::time::SystemTime,
    /// Seconds it ran.
    pub elapsed_s: f64,
    /// Ended by Ctrl-C.
    pub interrupted: bool,
    /// Leibniz terms computed by the hog tasks and by the blocking tasks.
    pub terms: (u64, u64),
    /// Last wakeup minus the ideal schedule (ns).
    pub drift_ns: Option<i64>,
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

fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// Builds the runtime, starts the load tasks and the periodic task, and returns when the
/// task has its samples, the time is up, or `stop` is set.
pub fn run(plan: &Plan, stop: Arc<AtomicBool>, on_start: impl FnOnce()) -> Result<Outcome, String> {
    let rt = match plan.flavor {
        Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread().enable_time().build(),
        Flavor::MultiThread => {
            tokio::runtime::Builder::new_multi_thread().worker_threads(plan.workers).enable_time().build()
        }
    }
    .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    let done = Arc::new(AtomicBool::new(false));
    let hog_terms = Arc::new(AtomicU64::new(0));
    let blocking_terms = Arc::new(AtomicU64::new(0));
    // The stop condition lives outside the runtime: a hog on a current-thread runtime never
    // lets the periodic task (or anything else in it) run.
    let watcher = {
        let (done, stop) = (done.clone(), stop.clone());
        let deadline = plan.duration.map(|d| Instant::now() + d);
        std::thread::spawn(move || {
            while !done.load(Relaxed) {
                if stop.load(Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                    done.store(true, Relaxed);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let wall = std::time::SystemTime::now();
    let started = Instant::now();
    on_start();
    let p = plan.clone();
    let result = rt.block_on(async {
        for _ in 0..p.blocking {
            let (done, terms) = (done.clone(), blocking_terms.clone());
            tokio::task::spawn_blocking(move || compute(&done, &terms));
        }
        for _ in 0..p.hogs {
            let (done, terms) = (done.clone(), hog_terms.clone());
            tokio::spawn(async move { compute(&done, &terms) });
        }
        let probe_done = done.clone();
        // The schedule is anchored before the task first runs: a task that cannot run at
        // first (a hog holds its thread) sees that as lateness.
        let start = Instant::now();
        let probe = tokio::spawn(async move {
            let live = Live::new(p.layout);
            let mut rec = Recorder::new(&live, p.threshold_ns);
            let period = Duration::from_nanos(p.interval_ns as u64);
            let mut next = start + period;
            let mut interval = tokio::time::interval_at((start + period).into(), period);
            interval.set_missed_tick_behavior(p.missed_tick.to_tokio());
            let mut n = 0u64;
            let mut last: Instant;
            loop {
                let due = match p.wait {
                    Wait::SleepUntil => {
                        tokio::time::sleep_until(next.into()).await;
                        next
                    }
                    Wait::Interval => interval.tick().await.into_std(),
                };
                let now = Instant::now();
                let latency = nanos(now.saturating_duration_since(due)) - nanos(due.saturating_duration_since(now));
                let missed = match p.wait {
                    Wait::SleepUntil => {
                        // As the OS probe: skip (and count) the deadlines already passed.
                        next += period;
                        let late = nanos(now.saturating_duration_since(next));
                        let k = if late > 0 { (late - 1) / p.interval_ns + 1 } else { 0 };
                        next += Duration::from_nanos((k * p.interval_ns) as u64);
                        k as u64
                    }
                    Wait::Interval => (latency.max(0) / p.interval_ns) as u64,
                };
                rec.record(latency, nanos(now - start), missed);
                last = now;
                n += 1;
                if probe_done.load(Relaxed) || p.loops.is_some_and(|l| n >= l) {
                    break;
                }
            }
            probe_done.store(true, Relaxed);
            // The last wakeup against the ideal schedule (start + k·period).
            let since = nanos(last - start);
            let drift = Some(since - (since / p.interval_ns) * p.interval_ns);
            (rec.finish(), drift)
        });
        probe.await
    });
    done.store(true, Relaxed);
    let _ = watcher.join();
    drop(rt);
    let (summary, drift_ns) = result.map_err(|e| format!("the tokio probe task failed: {e}"))?;
    Ok(Outcome {
        summary,
        start: wall,
        elapsed_s: started.elapsed().as_secs_f64(),
        interrupted: stop.load(Relaxed),
        terms: (hog_terms.load(Relaxed), blocking_terms.load(Relaxed)),
        drift_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(flavor: Flavor, wait: Wait) -> Plan {
        Plan {
            flavor,
            workers: 2,
            wait,
            missed_tick: MissedTick::Burst,
            interval_ns: 1_000_000,
            loops: Some(50),
            duration: None,
            hogs: 0,
            blocking: 0,
            threshold_ns: None,
            layout: Layout::DEFAULT,
        }
    }

    #[test]
    fn the_periodic_task_takes_its_samples_in_both_runtime_kinds_and_both_waits() {
        for flavor in [Flavor::CurrentThread, Flavor::MultiThread] {
            for wait in [Wait::SleepUntil, Wait::Interval] {
                let o = run(&plan(flavor, wait), Arc::new(AtomicBool::new(false)), || {}).unwrap();
                assert_eq!(o.summary.cycles, 50, "{flavor:?} {wait:?}");
                assert!(o.summary.min_ns.unwrap() >= 0, "tokio never wakes before the deadline");
            }
        }
    }

    #[test]
    fn a_hog_on_a_current_thread_runtime_starves_the_task_until_the_time_is_up() {
        let mut p = plan(Flavor::CurrentThread, Wait::SleepUntil);
        p.loops = None;
        p.duration = Some(Duration::from_millis(300));
        p.hogs = 1;
        let o = run(&p, Arc::new(AtomicBool::new(false)), || {}).unwrap();
        // The hog holds the only thread until the watcher ends the run: the task wakes once,
        // when the hog has stopped, having missed the periods in between.
        assert_eq!(o.summary.cycles, 1);
        assert!(o.summary.missed >= 100, "{} missed", o.summary.missed);
        assert!(o.terms.0 > 0);
    }
}
