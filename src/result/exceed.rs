//! How often the latency went above `--max-latency`: the samples above it, their bursts (runs
//! of consecutive samples above it, one late episode each), and the bursts' rate per hour and
//! the mean time between them, each with an exact Poisson interval (the guide's "How often").

use super::{Stats, ThreadResult};
use crate::measure::rate;
use crate::units::Unit;
use serde::{Deserialize, Serialize};

/// Samples above the threshold and how often their bursts came.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Exceedances {
    /// The threshold (ns): `--max-latency`.
    pub threshold_ns: i64,
    /// Samples above it.
    pub samples: u64,
    /// Bursts: runs of consecutive samples above it, counted once each.
    pub bursts: u64,
    /// The bursts' rate, when the run's duration is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
}

/// Bursts per hour and the mean time between them, with their 95 % intervals (exact, for
/// bursts that come independently at a constant rate: a Poisson process).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Rate {
    /// Hours measured.
    pub hours: f64,
    /// Bursts per hour.
    pub per_hour: f64,
    /// Its interval's lower end (0 when none was seen).
    pub per_hour_low: f64,
    /// Its interval's upper end.
    pub per_hour_high: f64,
    /// Mean time between bursts (s); `None` when none was seen.
    pub mean_between_s: Option<f64>,
    /// Its interval's lower end (s).
    pub mean_between_low_s: f64,
    /// Its interval's upper end (s); `None` (unbounded) when none was seen.
    pub mean_between_high_s: Option<f64>,
}

/// The rate of `bursts` seen in `hours`.
pub fn rate_of(bursts: u64, hours: f64) -> Option<Rate> {
    if !(hours > 0.0 && hours.is_finite()) {
        return None;
    }
    let (low, high) = rate::interval(bursts);
    let per_hour = bursts as f64 / hours;
    Some(Rate {
        hours,
        per_hour,
        per_hour_low: low / hours,
        per_hour_high: high / hours,
        mean_between_s: (bursts > 0).then(|| 3600.0 / per_hour),
        mean_between_low_s: 3600.0 * hours / high,
        mean_between_high_s: (low > 0.0).then(|| 3600.0 * hours / low),
    })
}

/// Fills in the rates of every thread's and of `all`'s exceedances over the run's
/// `duration_s` (each thread measured for the whole run).
pub fn attach(threads: &mut [ThreadResult], all: &mut Stats, duration_s: Option<f64>) {
    let Some(hours) = duration_s.map(|d| d / 3600.0) else { return };
    for x in threads.iter_mut().filter_map(|t| t.stats.exceedances.as_mut()).chain(all.exceedances.as_mut()) {
        x.rate = rate_of(x.bursts, hours);
    }
}

/// The line the summary, `show` and the report print: `above 100.0 µs: 12 samples in 7
/// bursts in 30.0 min: 14.0 bursts an hour [5.6, 28.8], one every 4.3 min [2.1 min, 10.7 min]
/// (95 %, …)`; `None` without a threshold or a rate.
pub fn describe(stats: &Stats, u: Unit) -> Option<String> {
    let x = stats.exceedances.as_ref()?;
    let r = x.rate.as_ref()?;
    let seen = if x.samples == 0 {
        "none".to_string()
    } else {
        format!("{} in {}", crate::units::count(x.samples, "sample"), crate::units::count(x.bursts, "burst"))
    };
    let every = match (r.mean_between_s, r.mean_between_high_s) {
        (Some(m), Some(h)) => format!(
            "one every {} [{}, {}]",
            crate::units::span(m),
            crate::units::span(r.mean_between_low_s),
            crate::units::span(h)
        ),
        _ => format!("one every {} or less often", crate::units::span(r.mean_between_low_s)),
    };
    Some(format!(
        "above {} {}: {seen} in {}: {:.1} bursts an hour [{:.1}, {:.1}], {every} (95 %, bursts taken as a Poisson process)",
        u.fmt(x.threshold_ns),
        u.label(),
        crate::units::span(r.hours * 3600.0),
        r.per_hour,
        r.per_hour_low,
        r.per_hour_high,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_and_the_time_between_are_the_counts_over_the_hours_with_garwoods_interval() {
        // 10 bursts in half an hour: 20 an hour, [4.795, 18.390] × 2; one every 3 min.
        let r = rate_of(10, 0.5).unwrap();
        assert!((r.per_hour - 20.0).abs() < 1e-12);
        assert!((r.per_hour_low - 9.59).abs() < 0.005 && (r.per_hour_high - 36.78).abs() < 0.005, "{r:?}");
        assert!((r.mean_between_s.unwrap() - 180.0).abs() < 1e-9);
        assert!((r.mean_between_low_s - 3600.0 / r.per_hour_high).abs() < 1e-9);
        assert!((r.mean_between_high_s.unwrap() - 3600.0 / r.per_hour_low).abs() < 1e-9);
        // None in 2 hours: at most 3.689 / 2 an hour, one every 32.5 min or less often.
        let none = rate_of(0, 2.0).unwrap();
        assert_eq!(
            (none.per_hour, none.per_hour_low, none.mean_between_s, none.mean_between_high_s),
            (0.0, 0.0, None, None)
        );
        assert!((none.per_hour_high - 3.689 / 2.0).abs() < 0.001);
        assert_eq!(rate_of(3, 0.0), None);
    }
}
