//! Clocks and sleeps in integer nanoseconds.

use std::io;

/// A clock that the measuring loop reads and sleeps on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockId(libc::clockid_t);

impl ClockId {
    /// CLOCK_MONOTONIC: never steps; the right clock for latency.
    pub const MONOTONIC: ClockId = ClockId(libc::CLOCK_MONOTONIC);
    /// CLOCK_REALTIME: wall-clock time; can step (NTP, `date -s`), which cyclictest turns into
    /// wrapped, huge latencies.
    pub const REALTIME: ClockId = ClockId(libc::CLOCK_REALTIME);
    /// CPU time consumed by the calling thread.
    pub const THREAD_CPUTIME: ClockId = ClockId(libc::CLOCK_THREAD_CPUTIME_ID);
    /// CPU time consumed by every thread of the calling process.
    pub const PROCESS_CPUTIME: ClockId = ClockId(libc::CLOCK_PROCESS_CPUTIME_ID);

    /// The raw clock id for libc calls.
    pub fn raw(self) -> libc::clockid_t {
        self.0
    }
}

const NS_PER_SEC: i64 = 1_000_000_000;

fn to_timespec(ns: i64) -> libc::timespec {
    libc::timespec {
        tv_sec: ns.div_euclid(NS_PER_SEC) as libc::time_t,
        tv_nsec: ns.rem_euclid(NS_PER_SEC) as libc::c_long,
    }
}

/// Reads `clock` (through the vDSO: no system call) and returns nanoseconds.
#[inline(always)]
pub fn now(clock: ClockId) -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock ids used here always exist on Linux.
    unsafe { libc::clock_gettime(clock.0, &mut ts) };
    from_timespec(&ts)
}

#[inline(always)]
fn from_timespec(ts: &libc::timespec) -> i64 {
    // time_t and c_long are 32-bit on 32-bit targets; the conversion is not useless there.
    #[allow(clippy::useless_conversion)]
    let ns = i64::from(ts.tv_sec) * NS_PER_SEC + i64::from(ts.tv_nsec);
    ns
}

/// Sleeps until the absolute time `deadline_ns` on `clock` (`clock_nanosleep` with
/// `TIMER_ABSTIME`). An interrupted sleep is resumed: the deadline does not move.
#[inline(always)]
pub fn sleep_until(clock: ClockId, deadline_ns: i64) {
    let ts = to_timespec(deadline_ns);
    loop {
        // SAFETY: `ts` is a valid timespec; a null remainder is allowed for absolute sleeps.
        let rc = unsafe { libc::clock_nanosleep(clock.0, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
        if rc != libc::EINTR || super::signals::stop_requested() {
            return;
        }
    }
}

/// Sleeps for `ns` nanoseconds on `clock` (`clock_nanosleep`, relative, cyclictest `-r`).
/// An interrupted sleep sleeps the remainder.
#[inline(always)]
pub fn sleep_relative(clock: ClockId, ns: i64) {
    let mut req = to_timespec(ns);
    loop {
        let mut rem = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: both pointers refer to valid timespecs owned by this frame.
        let rc = unsafe { libc::clock_nanosleep(clock.0, 0, &req, &mut rem) };
        if rc != libc::EINTR || super::signals::stop_requested() {
            return;
        }
        req = rem;
    }
}

/// Sleeps for `ns` nanoseconds with plain `nanosleep()` (cyclictest `-s`).
#[inline(always)]
pub fn nanosleep(ns: i64) {
    let mut req = to_timespec(ns);
    loop {
        let mut rem = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: both pointers refer to valid timespecs owned by this frame.
        let rc = unsafe { libc::nanosleep(&req, &mut rem) };
        if rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) || super::signals::stop_requested()
        {
            return;
        }
        req = rem;
    }
}

/// The resolution `clock_getres` reports for `clock` (ns).
pub fn resolution(clock: ClockId) -> Option<i64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    (unsafe { libc::clock_getres(clock.0, &mut ts) } == 0).then(|| from_timespec(&ts))
}

/// The smallest non-zero step between consecutive reads of `clock` over `reads` reads (ns):
/// the resolution a program actually sees, including the cost of a read.
pub fn measured_resolution(clock: ClockId, reads: usize) -> Option<i64> {
    let mut prev = now(clock);
    let mut best = None;
    for _ in 0..reads {
        let t = now(clock);
        let d = t - prev;
        if d > 0 && best.is_none_or(|b| d < b) {
            best = Some(d);
        }
        prev = t;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timespec_conversion_splits_seconds_and_nanoseconds() {
        let ts = to_timespec(3_000_000_007);
        assert_eq!((ts.tv_sec, ts.tv_nsec), (3, 7));
    }

    #[test]
    fn absolute_sleep_never_returns_before_its_deadline() {
        let t0 = now(ClockId::MONOTONIC);
        sleep_until(ClockId::MONOTONIC, t0 + 2_000_000);
        assert!(now(ClockId::MONOTONIC) >= t0 + 2_000_000);
    }

    #[test]
    fn relative_sleeps_last_at_least_their_length() {
        let t0 = now(ClockId::MONOTONIC);
        sleep_relative(ClockId::MONOTONIC, 1_000_000);
        nanosleep(1_000_000);
        assert!(now(ClockId::MONOTONIC) >= t0 + 2_000_000);
    }
}
