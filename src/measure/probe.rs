//! The measuring loop: cyclictest's method, with missed periods counted.
//!
//! One loop, generic over how it waits ([`Waiter`]), so that every method (absolute and
//! relative `clock_nanosleep`, `nanosleep`, `std::thread::sleep`, POSIX timers) and the
//! simulation share the same bookkeeping, and each is compiled without indirection.

use super::stats::{Exceedance, Recorder};
use crate::rt::clock::{self, ClockId};
use crate::rt::signals::PosixTimer;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// How the probe sleeps until its next period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
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

/// Waits for the next period and says when the wakeup was intended and when it happened.
pub trait Waiter {
    /// True when the intended times form an absolute schedule (`start + k·interval`).
    const ABSOLUTE: bool;
    /// Called once before the first period; returns the start time (ns): `at` when given (an
    /// aligned start), else now.
    fn start(&mut self, interval_ns: i64, at: Option<i64>) -> i64;
    /// Waits for the period that ends at `next` (absolute methods) or lasts `interval` (relative
    /// ones); returns `(intended, now)` in ns.
    fn wait(&mut self, next: i64, interval_ns: i64) -> (i64, i64);
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
    fn wait(&mut self, next: i64, _: i64) -> (i64, i64) {
        clock::sleep_until(self.0, next);
        (next, clock::now(self.0))
    }
}

/// Relative `clock_nanosleep`: intended = time before the sleep + interval.
#[derive(Debug)]
pub struct RelSleep(pub ClockId);
impl Waiter for RelSleep {
    const ABSOLUTE: bool = false;
    fn start(&mut self, _: i64, at: Option<i64>) -> i64 {
        at.unwrap_or_else(|| clock::now(self.0))
    }
    #[inline(always)]
    fn wait(&mut self, _: i64, interval: i64) -> (i64, i64) {
        let before = clock::now(self.0);
        clock::sleep_relative(self.0, interval);
        (before + interval, clock::now(self.0))
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
    fn wait(&mut self, _: i64, interval: i64) -> (i64, i64) {
        let before = clock::now(self.0);
        clock::nanosleep(interval);
        (before + interval, clock::now(self.0))
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
    fn wait(&mut self, _: i64, interval: i64) -> (i64, i64) {
        let before = clock::now(self.0);
        std::thread::sleep(std::time::Duration::from_nanos(interval as u64));
        (before + interval, clock::now(self.0))
    }
}

/// A periodic POSIX timer armed on an absolute schedule; the thread `sigwait`s each expiry.
#[derive(Debug)]
pub struct TimerWait {
    /// The clock the timer runs on.
    pub clock: ClockId,
    /// The timer (created by the measuring thread, signalling that thread).
    pub timer: PosixTimer,
}
impl Waiter for TimerWait {
    const ABSOLUTE: bool = true;
    fn start(&mut self, interval: i64, at: Option<i64>) -> i64 {
        let start = at.unwrap_or_else(|| clock::now(self.clock));
        // Arming a freshly created timer with valid values cannot fail.
        let _ = self.timer.arm(start + interval, interval);
        start
    }
    #[inline(always)]
    fn wait(&mut self, next: i64, _: i64) -> (i64, i64) {
        self.timer.wait();
        (next, clock::now(self.clock))
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
    /// Start the schedule here instead of now (aligned starts); absolute methods only.
    pub start_at: Option<i64>,
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
    let interval = p.interval_ns;
    let start = w.start(interval, p.start_at);
    let mut next = start + interval;
    let mut warm = p.warmup_cycles;
    let mut recorded = 0u64;
    let mut iterations = 0u64;
    let mut periods = 0i64;
    let mut last = start;
    let mut break_hit = None;
    while recorded < p.loops && !stop.load(Relaxed) {
        let (intended, now) = w.wait(next, interval);
        let latency = now - intended;
        let missed = if W::ABSOLUTE {
            next += interval;
            if now > next {
                let k = (now - next - 1) / interval + 1;
                next += k * interval;
                k
            } else {
                0
            }
        } else if latency >= interval {
            latency / interval
        } else {
            0
        };
        iterations += 1;
        periods += 1 + if W::ABSOLUTE { missed } else { 0 };
        last = now;
        if warm > 0 {
            warm -= 1;
            continue;
        }
        rec.record(latency, now - start, missed as u64);
        recorded += 1;
        if latency > p.break_ns {
            break_hit = Some(Exceedance { cycle: recorded - 1, at_ns: now - start, latency_ns: latency });
            break;
        }
    }
    LoopOutcome { iterations, drift_ns: last - start - periods * interval, break_hit, start_ns: start }
}

#[cfg(test)]
mod tests {
    use super::Method;

    #[test]
    fn method_names_are_the_names_in_result_files() {
        for m in [Method::Abs, Method::Rel, Method::Nanosleep, Method::Sleep, Method::PosixTimer] {
            assert_eq!(serde_json::to_value(m).unwrap(), m.name());
        }
    }
}
