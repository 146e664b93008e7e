//! The CPU's time-stamp counter, the noise probe's clock: reading it costs a few nanoseconds
//! and no system call. Whether it can be trusted as a clock is decided from what the CPU and
//! the kernel say of it (`doctor::tsc_unusable`); its rate is measured against CLOCK_MONOTONIC
//! ([`pair`] at both ends of a calibration).

use super::clock::{self, ClockId};

/// Reads the time-stamp counter (`rdtsc`, not serializing: a busy loop reads it back to back,
/// as oslat does). 0 on other architectures, where `doctor::tsc_unusable` says why it is not used.
#[inline(always)]
pub fn read() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86_64 (user mode may read it unless the
        // kernel set CR4.TSD, which Linux does not do for ordinary processes).
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// One reading of the TSC and CLOCK_MONOTONIC at the same instant: the tightest of a few
/// tries (the TSC read before and after the clock; its midpoint), so that an interrupt
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
    #[cfg(target_arch = "x86_64")]
    fn the_counter_moves_forward_with_the_monotonic_clock() {
        let (t0, m0) = pair();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t1, m1) = pair();
        assert!(t1 > t0 && m1 - m0 >= 20_000_000);
    }
}
