//! Value parsers shared by the subcommands. Every error is one sentence naming the value and
//! the fix.

pub use crate::units::{time_ns, DefaultUnit};

/// A positive interval (plain number = µs), from 1 µs to 1 h.
pub fn interval(text: &str) -> Result<i64, String> {
    let ns = time_ns(text, DefaultUnit::Micros)?;
    if ns == 0 {
        return Err(format!("interval '{text}' is zero; a period must be at least 1 µs, e.g. -i 1000"));
    }
    if !(1_000..=3_600_000_000_000).contains(&ns) {
        return Err(format!("interval '{text}' is out of range; use 1us to 1h, e.g. -i 1000"));
    }
    Ok(ns)
}

/// A latency threshold or histogram size (plain number = µs), greater than zero.
pub fn latency(text: &str) -> Result<i64, String> {
    let ns = time_ns(text, DefaultUnit::Micros)?;
    if ns == 0 {
        return Err(format!("'{text}' is zero; give a positive time, e.g. 100 (µs) or 1ms"));
    }
    Ok(ns)
}

/// A non-negative time (plain number = µs), zero allowed (e.g. `--distance 0`).
pub fn time_or_zero(text: &str) -> Result<i64, String> {
    time_ns(text, DefaultUnit::Micros)
}

/// Work per period (plain number = µs): greater than zero, at most 100 ms.
pub fn work(text: &str) -> Result<i64, String> {
    crate::measure::work::check_amount(&format!("'{text}'"), latency(text)?)
}

/// A run duration (plain number = s), greater than zero.
pub fn duration(text: &str) -> Result<std::time::Duration, String> {
    let ns = time_ns(text, DefaultUnit::Seconds)?;
    if ns == 0 {
        return Err(format!("duration '{text}' is zero; omit -D to run until Ctrl-C, or give e.g. -D 30s"));
    }
    Ok(std::time::Duration::from_nanos(ns as u64))
}

/// `--predict`'s horizon (ns): a duration from 1 s to 100 years (`24h`, `7d`, `30m`).
pub fn horizon(text: &str) -> Result<i64, String> {
    const MOST: i64 = 100 * 365 * 86_400 * 1_000_000_000;
    let ns = time_ns(text, DefaultUnit::Seconds)?;
    if !(1_000_000_000..=MOST).contains(&ns) {
        return Err(format!(
            "--predict '{text}' is not a horizon from 1 s to 100 years; give how long the run to predict would be, e.g. --predict 24h"
        ));
    }
    Ok(ns)
}

/// `--simulate`: `seed:N`, or `file:PATH` read through the one input loader (bounded, special
/// files refused, nothing of its content echoed).
pub fn simulation(spec: &str) -> Result<crate::measure::simulate::Simulation, String> {
    use crate::measure::simulate::Simulation;
    let Some(path) = spec.strip_prefix("file:") else { return Simulation::parse(spec) };
    let shown = crate::units::printable(path);
    let text = crate::import::read_text_input(std::path::Path::new(path))
        .map_err(|(_, e)| format!("--simulate file:{shown}: {e}"))?;
    Simulation::from_text(&shown, &text)
}

/// A count that must be at least 1.
pub fn positive_count(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("'{text}' is negative; give a whole number of at least 1"));
    }
    match t.parse::<u64>() {
        Ok(0) => Err(format!("'{text}' is zero; give at least 1 (omit the option for the default)")),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{text}' is not a whole number; give e.g. 1000")),
    }
}

/// A thread count from 1 to 4096.
pub fn thread_count(text: &str) -> Result<u32, String> {
    let n = positive_count(text).map_err(|e| e.replace("at least 1", "at least 1 thread"))?;
    u32::try_from(n).ok().filter(|n| *n <= 4096).ok_or_else(|| format!("{text} threads is too many; use at most 4096"))
}

/// A priority: a whole number up to 99 (checked against the policy later: 1 to 99 for fifo
/// and rr, 0 for the others).
pub fn priority(text: &str) -> Result<u32, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("priority '{text}' is negative; real-time priorities are 1 to 99"));
    }
    t.parse::<u32>()
        .ok()
        .filter(|p| *p <= 99)
        .ok_or_else(|| format!("priority '{text}' is not a real-time priority: use 1 to 99, e.g. -p 80"))
}

/// A scheduling policy by name (`normal` and `dl` too, any case), offered to completions as
/// the list of names.
pub fn policy() -> impl clap::builder::TypedValueParser<Value = crate::rt::sched::Policy> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new([
        PossibleValue::new("other").alias("normal"),
        PossibleValue::new("batch"),
        PossibleValue::new("idle"),
        PossibleValue::new("fifo"),
        PossibleValue::new("rr"),
        PossibleValue::new("deadline").alias("dl"),
    ])
    .map(|s| s.parse::<crate::rt::sched::Policy>().expect("every listed name parses"))
}

/// The priority of `policy`: `asked` when it is in the policy's range, else a sentence with the
/// fix; without one, `rt_default` for SCHED_FIFO/RR and 0 for the others.
pub fn policy_priority(policy: crate::rt::sched::Policy, asked: Option<u32>, rt_default: u32) -> Result<u32, String> {
    let (lo, hi) = policy.priority_range();
    let name = policy.name().to_uppercase();
    match asked {
        Some(p) if (p < lo || p > hi) && policy.is_realtime_priority() => {
            Err(format!("priority {p} is out of range for SCHED_{name}: use 1 to 99, e.g. -p 80"))
        }
        Some(p) if p < lo || p > hi => {
            Err(format!("priority {p} is out of range for SCHED_{name} (only 0): drop -p, or use --policy fifo -p {p}"))
        }
        Some(p) => Ok(p),
        None if policy.is_realtime_priority() => Ok(rt_default),
        None => Ok(0),
    }
}

/// A warm-up: a number of cycles, or a time with a unit (`2s`, `500ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Warmup {
    /// Periods to discard.
    Cycles(u64),
    /// Time to discard (ns).
    Time(i64),
}

/// Parses a warm-up: a plain number is cycles, a number with a unit is time.
pub fn warmup(text: &str) -> Result<Warmup, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("warm-up '{text}' is negative; give cycles (e.g. 1000) or a time (e.g. 2s)"));
    }
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse().map(Warmup::Cycles).map_err(|_| format!("warm-up '{text}' is too large"));
    }
    time_ns(t, DefaultUnit::Seconds)
        .map(Warmup::Time)
        .map_err(|_| format!("warm-up '{text}' is neither cycles (e.g. 1000) nor a time (e.g. 2s)"))
}

/// A `/dev/cpu_dma_latency` value in µs (0 = stay in the shallowest idle state).
pub fn dma_latency(text: &str) -> Result<i32, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("--latency '{text}' is negative; give microseconds from 0, e.g. --latency 0"));
    }
    t.parse::<i32>()
        .map_err(|_| format!("--latency '{text}' is not a whole number of microseconds; use e.g. --latency 0"))
}

/// `--deepest-idle-state`: an idle state number, or -1 for none (every state disabled).
pub fn idle_state(s: &str) -> Result<i32, String> {
    s.trim().parse::<i32>().ok().filter(|n| *n >= -1).ok_or_else(|| {
        format!("--deepest-idle-state '{s}' is not a state number (0 keeps only the shallowest, -1 disables every idle state)")
    })
}

/// A CPU set (`0`, `1,3`, `0-3,6`).
pub fn cpuset(text: &str) -> Result<crate::rt::affinity::CpuSet, String> {
    crate::rt::affinity::CpuSet::parse(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_take_units_and_plain_numbers_use_the_default_unit() {
        assert_eq!(time_ns("250", DefaultUnit::Micros), Ok(250_000));
        assert_eq!(time_ns("250us", DefaultUnit::Micros), Ok(250_000));
        assert_eq!(time_ns("250µs", DefaultUnit::Micros), Ok(250_000));
        assert_eq!(time_ns("1ms", DefaultUnit::Micros), Ok(1_000_000));
        assert_eq!(time_ns("30", DefaultUnit::Seconds), Ok(30_000_000_000));
        assert_eq!(time_ns("1.5m", DefaultUnit::Seconds), Ok(90_000_000_000));
        assert_eq!(time_ns("2h", DefaultUnit::Seconds), Ok(7_200_000_000_000));
        assert_eq!(time_ns("1d", DefaultUnit::Seconds), Ok(86_400_000_000_000));
        assert_eq!(time_ns("500ns", DefaultUnit::Seconds), Ok(500));
    }

    #[test]
    fn bad_times_name_the_value() {
        for bad in ["", "abc", "-5", "1x", "1.2.3", "1e5", "ms", "inf", "99999999999d"] {
            let e = time_ns(bad, DefaultUnit::Seconds).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
    }

    #[test]
    fn zero_intervals_durations_and_counts_are_refused_with_a_fix() {
        assert!(interval("0").unwrap_err().contains("-i 1000"));
        assert!(interval("500ns").is_err());
        assert!(duration("0").unwrap_err().contains("Ctrl-C"));
        assert!(thread_count("0").unwrap_err().contains("at least 1"));
        assert!(positive_count("-3").unwrap_err().contains("negative"));
        assert!(positive_count("ten").is_err());
    }

    #[test]
    fn warm_up_is_cycles_without_a_unit_and_time_with_one() {
        assert_eq!(warmup("1000"), Ok(Warmup::Cycles(1000)));
        assert_eq!(warmup("2s"), Ok(Warmup::Time(2_000_000_000)));
        assert_eq!(warmup("500ms"), Ok(Warmup::Time(500_000_000)));
        assert!(warmup("soon").is_err());
    }

    #[test]
    fn priorities_are_zero_to_ninety_nine() {
        assert_eq!(priority("80"), Ok(80));
        assert!(priority("100").is_err());
        assert!(priority("-1").unwrap_err().contains("negative"));
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_errors_without_panicking(s in ".{0,24}") {
            let _ = time_ns(&s, DefaultUnit::Micros);
            let _ = warmup(&s);
            let _ = cpuset(&s);
            let _ = positive_count(&s);
        }

        #[test]
        fn whole_microseconds_round_trip(us in 1u32..3_600_000_000) {
            proptest::prop_assert_eq!(interval(&us.to_string()), Ok(us as i64 * 1000));
        }
    }
}
