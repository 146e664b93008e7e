//! The measuring loop: cyclictest's method, with missed periods counted.
//!
//! One loop, generic over how it waits ([`Waiter`]), so that every method (absolute and
//! relative `clock_nanosleep`, `nanosleep`, `std::thread::sleep`, POSIX timers) and the
//! simulation share the same bookkeeping, and each is compiled without indirection.

use super::stats::{Exceedance, Recorder};
use super::work::{Job, NoWork, WorkRecorder};
use crate::rt::clock::{self, ClockId};
use crate::rt::signals::PosixTimer;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// How the probe sleeps until its next period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// `clock_nanosleep(TIMER_ABSTIME)` until the next deadline (the right way; default).
    Abs,
    /// Relative `clock_nanosleep` of one interval (cyclictest `-r`): the period drifts.
    Rel,
    /// Plain `nanosleep()` of one interval (cyclictest `-s`): the period drifts.
    Nanosleep,
    /// Rust's `std::thread::sleep` of one interval: the period drifts.
    Sleep,
    /// A periodic POSIX timer and `sigwait` (cyclictest `-x`).
    PosixTimer,
}

impl Method {
    /// The name on the command line and in results (`abs`, `posix-timer`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Abs => "abs",
            Method::Rel => "rel",
            Method::Nanosleep => "nanosleep",
            Method::Sleep => "sleep",
            Method::PosixTimer => "posix-timer",
        }
    }

    /// True for the methods that sleep until absolute deadlines (no drift).
    pub fn is_absolute(self) -> bool {
        matches!(self, Method::Abs | Method::PosixTimer)
    }
}

/// The clock the probe reads and sleeps on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ClockKind {
    /// CLOCK_MONOTONIC (default).
    Monotonic,
    /// CLOCK_REALTIME: steps of the wall clock show up as negative or huge latencies.
    Realtime,
}

impl ClockKind {
    /// The kernel clock.
    pub fn id(self) -> ClockId {
        match self {
            ClockKind::Monotonic => ClockId::MONOTONIC,
            ClockKind::Realtime => ClockId::REALTIME,
        }
    }
}

/// One wakeup: when it was intended, when it happened, and (for a kernel timer) how many
/// later deadlines the kernel says passed before it was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wake {
    /// The deadline this wakeup was for (ns).
    pub intended: i64,
    /// When the probe read the clock after waking (ns).
    pub now: i64,
    /// Expiries the kernel folded into this one (a POSIX timer's overrun); `None` when the
    /// waiter does not know, and the loop counts them with [`missed_periods`].
    pub overrun: Option<u64>,
}

/// Deadlines missed by a wakeup `latency_ns` after its own: those that passed strictly before
/// it, ⌈latency/interval⌉ − 1 (none when on time; a wakeup exactly one interval late is
/// exactly on time for the next period and missed none). The one rule for every method.
#[inline(always)]
pub fn missed_periods(latency_ns: i64, interval_ns: i64) -> u64 {
    // Within one interval nothing was missed: no division on the common path.
    if latency_ns <= interval_ns {
        0
    } else {
        ((latency_ns - 1) / interval_ns) as u64
    }
}

/// Waits for the next period and says when the wakeup was intended and when it happened.
pub trait Waiter {
    /// True when the intended times form an absolute schedule (`start + k·interval`).
    const ABSOLUTE: bool;
    /// Called once before the first period; returns the start time (ns): `at` when given (an
    /// aligned start), else now.
    fn start(&mut self, interval_ns: i64, at: Option<i64>) -> i64;
    /// Waits for the period that ends at `next` (absolute methods) or lasts `interval` (relative
    /// ones). A wait cut short by the run's stop returns with `now < intended`.
    fn wait(&mut self, next: i64, interval_ns: i64) -> Wake;
}

/// `clock_nanosleep(TIMER_ABSTIME)`.
#[derive(Debug)]
pub struct AbsSleep(pub ClockId);
impl Waiter for AbsSleep {
    const ABSOLUTE: bool = true;
    fn start(&mut self, _: i64, at: Option<i64>) -> i64 {
        at.unwrap_or_else(|| clock::now(self.0))
    }
    #[inline(always)]
    fn wait(&mut self, next: i64, _: i64) -> Wake {
        clock::sleep_until(self.0, next);
        Wake { intended: next, now: clock::now(self.0), overrun: None }
    }
}

/// Relative `clock_nanosleep`: intended = time before the sleep + interval.
#[derive(Debug)]
pub struct RelSleep(pub ClockId);
impl Waiter for RelSleep {
    const ABSOLUTE: bool = false;
    /// A start in the future (a task's offset) is slept until: the first relative sleep
    /// counts from there.
    fn start(&mut self, _: i64, at: Option<i64>) -> i64 {
        if let Some(at) = at {
            clock::sleep_until(self.0, at);
        }
        at.unwrap_or_else(|| clock::now(self.0))
    }
    #[inline(always)]
    fn wait(&mut self, _: i64, interval: i64) -> Wake {
        let before = clock::now(self.0);
        clock::sleep_relative(self.0, interval);
        Wake { intended: before + interval, now: clock::now(self.0), overrun: None }
    }
}

/// `nanosleep()`: intended = time before the sleep + interval.
#[derive(Debug)]
pub struct NanoSleep(pub ClockId);
impl Waiter for NanoSleep {
    const ABSOLUTE: bool = false;
    fn start(&mut self, _: i64, at: Option<i64>) -> i64 {
        at.unwrap_or_else(|| clock::now(self.0))
    }
    #[inline(always)]
    fn wait(&mut self, _: i64, interval: i64) -> Wake {
        let before = clock::now(self.0);
        clock::nanosleep(interval);
        Wake { intended: before + interval, now: clock::now(self.0), overrun: None }
    }
}

/// `std::thread::sleep`: intended = time before the sleep + interval.
#[derive(Debug)]
pub struct StdSleep(pub ClockId);
impl Waiter for StdSleep {
    const ABSOLUTE: bool = false;
    fn start(&mut self, _: i64, at: Option<i64>) -> i64 {
        at.unwrap_or_else(|| clock::now(self.0))
    }
    #[inline(always)]
    fn wait(&mut self, _: i64, interval: i64) -> Wake {
        let before = clock::now(self.0);
        std::thread::sleep(std::time::Duration::from_nanos(interval as u64));
        Wake { intended: before + interval, now: clock::now(self.0), overrun: None }
    }
}

/// A periodic POSIX timer armed on an absolute schedule; the thread waits for each expiry
/// with `sigwaitinfo` and takes the kernel's overrun count, so that its schedule stays the
/// kernel's. If the timer cannot be armed, it sleeps with absolute `clock_nanosleep` instead
/// and says why in `failed` (the engine reports the downgrade).
#[derive(Debug)]
pub struct TimerWait {
    /// The clock the timer runs on.
    pub clock: ClockId,
    /// The timer (created by the measuring thread, signalling that thread).
    pub timer: PosixTimer,
    /// Why the timer could not be armed, when it could not.
    pub failed: Option<String>,
}
impl Waiter for TimerWait {
    const ABSOLUTE: bool = true;
    fn start(&mut self, interval: i64, at: Option<i64>) -> i64 {
        let start = at.unwrap_or_else(|| clock::now(self.clock));
        if let Err(e) = self.timer.arm(start + interval, interval) {
            self.failed = Some(format!("timer_settime failed ({e})"));
        }
        start
    }
    #[inline(always)]
    fn wait(&mut self, next: i64, _: i64) -> Wake {
        if self.failed.is_some() {
            clock::sleep_until(self.clock, next);
            return Wake { intended: next, now: clock::now(self.clock), overrun: None };
        }
        let overrun = self.timer.wait();
        // Interrupted by the stop: `now` is before `next` and the loop drops the period.
        let now = if overrun.is_some() { clock::now(self.clock) } else { clock::now(self.clock).min(next - 1) };
        Wake { intended: next, now, overrun }
    }
}

/// What the loop is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopParams {
    /// Period (ns).
    pub interval_ns: i64,
    /// Samples to record before stopping (`u64::MAX`: until told to stop).
    pub loops: u64,
    /// Periods measured before recording starts.
    pub warmup_cycles: u64,
    /// Stop at the first sample above this (ns); `i64::MAX` when off.
    pub break_ns: i64,
    /// Start the schedule here instead of now (aligned starts, a task's offset).
    pub start_at: Option<i64>,
    /// Sample times count from here (a task set's common start, before its offsets); `None`:
    /// from the schedule's start.
    pub origin_ns: Option<i64>,
    /// Also sum each latency as cyclictest computes it in whole µs (`rtlab cyclictest`'s Avg).
    pub cyclictest_us: bool,
}

/// What the loop saw besides the samples it recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopOutcome {
    /// Periods waited, warm-up included.
    pub iterations: u64,
    /// Last wakeup minus where an absolute schedule from the start would be after the same
    /// number of periods (ns). Bounded by one period for absolute methods; grows with every
    /// cycle's overhead for relative ones (Ada's `delay` versus `delay until`).
    pub drift_ns: i64,
    /// The sample that crossed `break_ns`, if one did.
    pub break_hit: Option<Exceedance>,
    /// The schedule's start on the probe's clock (ns); sample times are relative to it.
    pub start_ns: i64,
}

/// Runs the measuring loop until `loops` samples are recorded, `stop` is set, or a sample
/// crosses `break_ns`. Per period: one wait, one clock read, integer arithmetic and the
/// recorder's stores; no allocation, lock, I/O or other system call.
#[inline(never)]
pub fn run_loop<W: Waiter>(w: &mut W, p: &LoopParams, rec: &mut Recorder<'_>, stop: &AtomicBool) -> LoopOutcome {
    looped(w, &mut NoWork, None, p, rec, stop)
}

/// The same loop for a task that works after each wakeup (absolute schedules): `job` runs,
/// and `work` records its response and run times and its deadline; releases that pass while
/// it works are skipped and counted as missed periods (the one rule, on the response time).
#[inline(never)]
pub fn run_work_loop<W: Waiter, J: Job>(
    w: &mut W,
    job: &mut J,
    work: &mut WorkRecorder<'_>,
    p: &LoopParams,
    rec: &mut Recorder<'_>,
    stop: &AtomicBool,
) -> LoopOutcome {
    looped(w, job, Some(work), p, rec, stop)
}

/// The one loop; with [`NoWork`] every line about work compiles away.
#[inline(always)]
fn looped<W: Waiter, J: Job>(
    w: &mut W,
    job: &mut J,
    mut work: Option<&mut WorkRecorder<'_>>,
    p: &LoopParams,
    rec: &mut Recorder<'_>,
    stop: &AtomicBool,
) -> LoopOutcome {
    let interval = p.interval_ns;
    let start = w.start(interval, p.start_at);
    let origin = p.origin_ns.unwrap_or(start);
    rec.started(origin);
    if J::ENABLED {
        if let Some(wr) = work.as_deref_mut() {
            wr.started(origin);
        }
    }
    let mut next = start + interval;
    let mut warm = p.warmup_cycles;
    let (mut recorded, mut iterations, mut periods) = (0u64, 0u64, 0i64);
    let mut last = start;
    let mut break_hit = None;
    while recorded < p.loops && !stop.load(Relaxed) {
        let wake = w.wait(next, interval);
        let (intended, now) = (wake.intended, wake.now);
        let latency = now - intended;
        let mut missed = 0;
        // One branch on the common path: early (only when the stop cut a sleep short, or the
        // clock stepped) or more than one interval late both fall in here.
        if latency as u64 > interval as u64 {
            if latency < 0 && stop.load(Relaxed) {
                break; // woken by the stop before the deadline: no sample
            }
            missed = missed_periods(latency, interval);
        }
        // The kernel's own count when it has one (a POSIX timer forwards itself from the
        // moment the signal is taken); else the one rule.
        if let Some(k) = wake.overrun {
            missed = k;
        }
        let mut done = now;
        if J::ENABLED {
            done = job.run(now);
            // Releases that passed while the job ran are skipped: the one rule, on the response.
            if W::ABSOLUTE {
                missed = missed_periods(done - intended, interval);
            }
        }
        if W::ABSOLUTE {
            next = intended + interval;
            if missed > 0 {
                next += missed as i64 * interval;
            }
        }
        iterations += 1;
        periods += 1 + if W::ABSOLUTE { missed as i64 } else { 0 };
        last = now;
        if warm > 0 {
            warm -= 1;
            continue;
        }
        rec.record(latency, now - origin, missed);
        if J::ENABLED {
            if let Some(wr) = work.as_deref_mut() {
                wr.record(latency, done - intended, done - now, now - origin, missed);
            }
        }
        if p.cyclictest_us {
            rec.record_cyclictest_us(super::stats::cyclictest_us(intended, now));
        }
        recorded += 1;
        if latency > p.break_ns {
            break_hit = Some(Exceedance { cycle: recorded - 1, at_ns: now - origin, latency_ns: latency });
            break;
        }
    }
    LoopOutcome { iterations, drift_ns: last - start - periods * interval, break_hit, start_ns: origin }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::Layout;
    use crate::measure::stats::Live;

    /// The kernel's POSIX timer as rtlab sees it: expiries every `interval` from the start;
    /// the signal of an expiry is taken `lateness[i]` after it, at which moment the kernel
    /// forwards the timer past that instant and reports the expiries skipped as overrun; the
    /// probe reads the clock `read_after` ns after taking the signal.
    struct KernelTimer {
        expiry: i64,
        taken: i64,
        lateness: Vec<i64>,
        read_after: i64,
        i: usize,
    }

    impl Waiter for KernelTimer {
        const ABSOLUTE: bool = true;
        fn start(&mut self, interval: i64, _: Option<i64>) -> i64 {
            self.expiry = interval;
            0
        }
        fn wait(&mut self, next: i64, interval: i64) -> Wake {
            let late = self.lateness.get(self.i).copied().unwrap_or(0);
            self.i += 1;
            let fired = self.expiry;
            // The signal is taken when it is due and the thread is free (never before the
            // previous one was taken).
            self.taken = (fired + late).max(self.taken);
            let mut forwarded = fired + interval;
            let mut overrun = 0;
            while forwarded <= self.taken {
                forwarded += interval;
                overrun += 1;
            }
            self.expiry = forwarded;
            let _ = next; // the kernel does not know the loop's idea of the next deadline
            Wake { intended: fired, now: self.taken + self.read_after, overrun: Some(overrun) }
        }
    }

    fn run_timer(lateness: Vec<i64>, read_after: i64) -> (Vec<i64>, u64) {
        let n = lateness.len() as u64;
        use crate::measure::stats::ExceedLog;
        let live = Live::new(Layout::DEFAULT);
        let ring = crate::measure::ring::SampleRing::new(64);
        let mut rec = Recorder::with_logs(&live, ExceedLog::off(), ExceedLog::off(), Some(&ring));
        let mut w = KernelTimer { expiry: 0, taken: 0, lateness, read_after, i: 0 };
        let p = LoopParams {
            interval_ns: 1000,
            loops: n,
            warmup_cycles: 0,
            break_ns: i64::MAX,
            start_at: None,
            origin_ns: None,
            cyclictest_us: false,
        };
        run_loop(&mut w, &p, &mut rec, &AtomicBool::new(false));
        let mut lat = Vec::new();
        ring.drain(&mut crate::measure::ring::Cursor::default(), |s| lat.push(s.latency_ns));
        (lat, rec.finish().missed)
    }

    #[test]
    fn a_posix_timer_stays_on_the_kernels_schedule_after_a_wakeup_just_under_k_intervals_late() {
        // Taken 2999 ns late: the kernel skips the expiries at +1000 and +2000 (overrun 2) and
        // arms +3000; the probe reads the clock 5 ns later, just past +3000. Counting from its
        // own clock read, rtlab used to skip +3000 too, and every later sample was one interval
        // off (the next wakeup came "1000 ns early").
        let (lat, missed) = run_timer(vec![2_999, 10, 10, 10], 5);
        assert_eq!(lat, vec![3_004, 15, 15, 15]);
        assert_eq!(missed, 2);
        assert!(lat.iter().all(|l| *l >= 0), "{lat:?}");
    }

    #[test]
    fn missed_periods_follow_one_rule_at_exact_multiples() {
        let i = 1_000;
        for (lat, missed) in [(-5, 0), (0, 0), (1, 0), (i, 0), (i + 1, 1), (2 * i - 1, 1), (2 * i, 1), (2 * i + 1, 2)] {
            assert_eq!(missed_periods(lat, i), missed, "latency {lat}");
        }
    }

    #[test]
    fn absolute_and_relative_methods_count_the_same_missed_periods() {
        use crate::measure::simulate::{SampleSource, SimWaiter};
        let i = 1_000;
        let lats = vec![i, 2 * i, 2 * i - 1, 2 * i + 1, 5];
        let count = |abs: bool| {
            let live = Live::new(Layout::DEFAULT);
            let mut rec = Recorder::new(&live, None);
            let p = LoopParams {
                interval_ns: i,
                loops: 5,
                warmup_cycles: 0,
                break_ns: i64::MAX,
                start_at: None,
                origin_ns: None,
                cyclictest_us: false,
            };
            let stop = AtomicBool::new(false);
            if abs {
                run_loop(&mut SimWaiter::<true>::new(SampleSource::List(lats.clone(), 0)), &p, &mut rec, &stop);
            } else {
                run_loop(&mut SimWaiter::<false>::new(SampleSource::List(lats.clone(), 0)), &p, &mut rec, &stop);
            }
            rec.finish().missed
        };
        // I: none; 2I and 2I − 1: one each; 2I + 1: two; 5 ns: none.
        assert_eq!((count(true), count(false)), (4, 4));
    }

    #[test]
    fn a_timer_that_cannot_be_armed_falls_back_to_sleeping_instead_of_waiting_forever() {
        let _ = crate::rt::signals::block_in_current_thread(&[crate::rt::signals::TIMER_SIGNAL]);
        let timer = PosixTimer::for_current_thread(ClockId::MONOTONIC).unwrap();
        let mut w = TimerWait { clock: ClockId::MONOTONIC, timer, failed: None };
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        // A start before the epoch cannot be armed (EINVAL); the deadlines are long past.
        let p = LoopParams {
            interval_ns: 1_000,
            loops: 5,
            warmup_cycles: 0,
            break_ns: i64::MAX,
            start_at: Some(-5_000_000_000),
            origin_ns: None,
            cyclictest_us: false,
        };
        run_loop(&mut w, &p, &mut rec, &AtomicBool::new(false));
        assert!(w.failed.as_deref().is_some_and(|f| f.contains("timer_settime")), "{:?}", w.failed);
        assert_eq!(rec.finish().cycles, 5);
    }

    #[test]
    fn a_working_task_gets_exact_response_times_slack_misses_runs_and_windows() {
        use crate::measure::simulate::{SampleSource, SimWaiter};
        use crate::measure::work::{SimJob, WorkKind, WorkLive, WorkRecorder, WorkSpec};
        // Period 1000, deadline 800; per period (latency, work):
        //  (100, 300) → response 400, on time;
        //  (50, 900)  → 950: late, done before the next release;
        //  (100, 2000) → 2100: late, the releases at +1000 and +2000 passed: 2 skipped;
        //  (0, 1000)  → 1000: late, done exactly at the next release: none skipped;
        //  (10, 10)   → 20, on time.
        let spec = WorkSpec { kind: WorkKind::Fixed, amount_ns: 300, deadline_ns: 800, miss_window: 3 };
        let live = Live::new(Layout::DEFAULT);
        let wl = WorkLive::new(spec, Layout::DEFAULT, &[]);
        let mut rec = Recorder::new(&live, None);
        let mut wr = WorkRecorder::new(&wl, Some(900), None);
        let mut w = SimWaiter::<true>::new(SampleSource::List(vec![100, 50, 100, 0, 10], 0));
        let mut job = SimJob { durations: vec![300, 900, 2000, 1000, 10], next: 0 };
        let p = LoopParams {
            interval_ns: 1000,
            loops: 5,
            warmup_cycles: 0,
            break_ns: i64::MAX,
            start_at: None,
            origin_ns: None,
            cyclictest_us: false,
        };
        let out = run_work_loop(&mut w, &mut job, &mut wr, &p, &mut rec, &AtomicBool::new(false));
        let lat = rec.finish();
        let work = wr.finish();
        assert_eq!((lat.cycles, lat.missed, lat.max_ns), (5, 2, Some(100)));
        let r = &work.response;
        assert_eq!((r.cycles, r.min_ns, r.max_ns, r.sum_ns), (5, Some(20), Some(2100), 4470));
        assert_eq!((r.max_at_cycle, r.over.count), (Some(2), 3)); // 950, 2100, 1000 > 900
        assert_eq!((work.run.min_ns, work.run.max_ns, work.run.sum_ns), (Some(10), Some(2000), 4210));
        let d = work.deadlines;
        assert_eq!((d.releases, d.misses, d.late, d.skipped), (7, 5, 3, 2));
        // ok, late, late, skip, skip, late, ok: a run of 5; any three of it fill a window of 3.
        assert_eq!((d.longest_miss_run, d.worst_misses_in_window, d.first_miss_release), (5, 3, Some(1)));
        // The schedule stayed absolute: 5 jobs and 2 skips span 7 periods.
        assert_eq!(out.iterations, 5);
        assert_eq!(wl.checkpoint().unwrap().deadlines, d);
    }

    #[test]
    fn method_names_are_the_names_in_result_files() {
        for m in [Method::Abs, Method::Rel, Method::Nanosleep, Method::Sleep, Method::PosixTimer] {
            assert_eq!(serde_json::to_value(m).unwrap(), m.name());
        }
    }
}
