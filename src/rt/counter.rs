//! The CPU's own counter, the noise probe's clock: reading it costs a few nanoseconds and no
//! system call. The architecture split lives here and nowhere else: x86_64's time-stamp counter
//! (`rdtsc`), aarch64's generic timer virtual counter (`CNTVCT_EL0`, its frequency in
//! `CNTFRQ_EL0`). Whether it can be trusted as a clock is decided from what the CPU and the
//! kernel say of it (`doctor::counter_unusable`); its rate is measured against CLOCK_MONOTONIC
//! ([`pair`] at both ends of a calibration) on every architecture.

use super::clock::{self, ClockId};

/// The counter's name in results and options: `tsc`, `cntvct`, or `none` where there is none.
#[cfg(target_arch = "x86_64")]
pub const NAME: &str = "tsc";
/// The counter's name in results and options: `tsc`, `cntvct`, or `none` where there is none.
#[cfg(target_arch = "aarch64")]
pub const NAME: &str = "cntvct";
/// The counter's name in results and options: `tsc`, `cntvct`, or `none` where there is none.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const NAME: &str = "none";

/// Reads the counter: `rdtsc` (not serializing: a busy loop reads it back to back, as oslat
/// does) or `isb; mrs cntvct_el0` (the barrier keeps the read from being taken early, as the
/// kernel's own reads do). 0 on other architectures, where `doctor::counter_unusable` says why.
#[inline(always)]
pub fn read() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86_64 (user mode may read it unless the
        // kernel set CR4.TSD, which Linux does not do for ordinary processes).
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(target_arch = "aarch64")]
    {
        let v: u64;
        // SAFETY: Linux lets EL0 read CNTVCT_EL0 (CNTKCTL_EL1.EL0VCTEN is set for the vDSO);
        // the instructions touch no memory.
        unsafe { core::arch::asm!("isb", "mrs {v}, cntvct_el0", v = out(reg) v, options(nomem, nostack)) };
        v
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        0
    }
}

/// The counter's nominal frequency (Hz) where the architecture states it: aarch64's
/// `CNTFRQ_EL0` (set by the firmware; 0 when it forgot). `None` on x86_64, whose TSC rate is
/// only known by calibration.
pub fn frequency_hz() -> Option<u64> {
    #[cfg(target_arch = "aarch64")]
    {
        let f: u64;
        // SAFETY: CNTFRQ_EL0 is readable at EL0 whenever CNTVCT_EL0 is; no memory is touched.
        unsafe { core::arch::asm!("mrs {f}, cntfrq_el0", f = out(reg) f, options(nomem, nostack)) };
        Some(f)
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        None
    }
}

/// One reading of the counter and CLOCK_MONOTONIC at the same instant: the tightest of a few
/// tries (the counter read before and after the clock; its midpoint), so that an interrupt
/// between the two reads does not skew a calibration.
pub fn pair() -> (u64, i64) {
    let mut best = (u64::MAX, 0u64, 0i64);
    for _ in 0..8 {
        let a = read();
        let m = clock::now(ClockId::MONOTONIC);
        let b = read();
        let width = b.wrapping_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, m);
        }
    }
    (best.1, best.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn the_counter_moves_forward_with_the_monotonic_clock() {
        let (t0, m0) = pair();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t1, m1) = pair();
        assert!(t1 > t0 && m1 - m0 >= 20_000_000);
    }

    #[test]
    #[cfg(target_arch = "aarch64")]
    fn the_generic_timer_states_its_frequency_and_runs_at_it() {
        let hz = frequency_hz().expect("aarch64 states CNTFRQ_EL0");
        assert!(hz > 0, "the firmware set CNTFRQ_EL0");
        let (t0, m0) = pair();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (t1, m1) = pair();
        // The counter's ticks over the monotonic time: its measured rate (no latency bound: a
        // rate from two instants 50 ms apart, whatever the scheduling between them).
        let measured = (t1 - t0) as f64 / ((m1 - m0) as f64 / 1e9);
        assert!((measured / hz as f64 - 1.0).abs() < 0.01, "measured {measured:.0} Hz, stated {hz} Hz");
    }
}
