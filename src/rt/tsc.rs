//! The CPU's time-stamp counter, the noise probe's clock: reading it costs a few nanoseconds
//! and no system call. Whether it can be trusted as a clock is decided from what the CPU and
//! the kernel say of it ([`unusable`]); its rate is measured against CLOCK_MONOTONIC
//! ([`pair`] at both ends of a calibration).

use super::clock::{self, ClockId};

/// Reads the time-stamp counter (`rdtsc`, not serializing: a busy loop reads it back to back,
/// as oslat does). 0 on other architectures, where [`unusable`] says why it is not used.
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

/// Why the TSC cannot be the busy loop's clock, from `/proc/cpuinfo`'s text and the kernel's
/// current clocksource, or `None` when it can: an x86 CPU whose counter is invariant
/// (`constant_tsc`: one rate in every P-state; `nonstop_tsc`: it runs in every C-state) and
/// that the kernel itself keeps as its clocksource (it found it synchronized across CPUs).
pub fn unusable_from(arch_x86_64: bool, cpuinfo: &str, clocksource: &str) -> Option<String> {
    if !arch_x86_64 {
        return Some("this is not an x86_64 machine".into());
    }
    let flags = cpuinfo.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    for f in ["constant_tsc", "nonstop_tsc"] {
        if !has(f) {
            return Some(format!("the CPU does not report {f} (its TSC is not invariant)"));
        }
    }
    let cs = clocksource.trim();
    if cs != "tsc" {
        return Some(format!("the kernel's clocksource is {cs}, not tsc (it does not trust the TSC)"));
    }
    None
}

/// [`unusable_from`] on this machine.
pub fn unusable() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cs = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .unwrap_or_else(|_| "unknown".into());
    unusable_from(cfg!(target_arch = "x86_64"), &cpuinfo, &cs)
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

    const FLAGS: &str = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\n";

    #[test]
    fn an_invariant_tsc_the_kernel_keeps_as_its_clocksource_is_usable() {
        assert_eq!(unusable_from(true, FLAGS, "tsc\n"), None);
    }

    #[test]
    fn a_tsc_that_stops_in_idle_or_that_the_kernel_distrusts_is_not_used_and_says_why() {
        let no_nonstop = FLAGS.replace(" nonstop_tsc", "");
        assert!(unusable_from(true, &no_nonstop, "tsc").unwrap().contains("nonstop_tsc"));
        assert!(unusable_from(true, FLAGS, "hpet\n").unwrap().contains("clocksource is hpet"));
        assert!(unusable_from(false, FLAGS, "tsc").unwrap().contains("not an x86_64"));
    }

    #[test]
    fn the_counter_moves_forward_with_the_monotonic_clock() {
        if unusable().is_some() {
            eprintln!("SKIPPED (this machine's TSC is not usable): {:?}", unusable());
            return;
        }
        let (t0, m0) = pair();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t1, m1) = pair();
        assert!(t1 > t0 && m1 - m0 >= 20_000_000);
    }
}
