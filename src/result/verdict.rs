//! The verdict: pass or fail against `--max-latency`/`--breaktrace`, with where and when each
//! probe first and worst exceeded it.

use crate::measure::stats::{Exceedance, Summary};
use crate::timefmt::rfc3339;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

/// Verdict status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictStatus {
    /// Every sample was within the threshold.
    Pass,
    /// At least one sample exceeded it (exit code 3).
    Fail,
    /// No threshold was given.
    NotChecked,
}

/// A thread's samples above the threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Exceeded {
    /// Thread.
    pub thread: usize,
    /// Its CPU.
    pub cpu: Option<usize>,
    /// Samples above the threshold.
    pub count: u64,
    /// First such sample: cycle.
    pub first_cycle: u64,
    /// First: time since start (ns).
    pub first_at_ns: i64,
    /// First: latency (ns).
    pub first_latency_ns: i64,
    /// Worst latency (ns) = the thread's maximum.
    pub worst_latency_ns: i64,
    /// Cycle of the worst.
    pub worst_at_cycle: u64,
    /// Worst minus the threshold (ns).
    pub over_by_ns: i64,
}

/// Pass/fail against the thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    /// Status.
    pub status: VerdictStatus,
    /// The threshold (ns): `--max-latency`, else `--breaktrace`.
    pub threshold_ns: Option<i64>,
    /// Threads that exceeded it.
    pub exceeded: Vec<Exceeded>,
    /// With `--tracemark`: a marker was written into tracefs and tracing stopped at the breaktrace hit.
    pub tracemark_written: bool,
    /// One sentence.
    pub message: String,
}

impl Verdict {
    /// No threshold was given.
    pub fn not_checked() -> Verdict {
        Verdict {
            status: VerdictStatus::NotChecked,
            threshold_ns: None,
            exceeded: vec![],
            tracemark_written: false,
            message: "no latency threshold was given (--max-latency)".into(),
        }
    }
}

/// What the verdict needs of one probe: index, CPU, statistics and a `--breaktrace` hit.
pub type VerdictInput<'a> = (usize, Option<usize>, &'a Summary, Option<Exceedance>);

/// The verdict of `threads` against `threshold` (ns); `start` dates the samples.
pub fn verdict(
    threads: &[VerdictInput],
    threshold: Option<i64>,
    start: SystemTime,
    tracemark_written: bool,
) -> Verdict {
    let Some(limit) = threshold else {
        return Verdict { tracemark_written, ..Verdict::not_checked() };
    };
    let exceeded: Vec<Exceeded> = threads
        .iter()
        .filter_map(|&(index, cpu, s, break_hit)| {
            let first = s.over.first().or(break_hit)?;
            let worst = s.max_ns.unwrap_or(first.latency_ns);
            Some(Exceeded {
                thread: index,
                cpu,
                count: s.over.count.max(1),
                first_cycle: first.cycle,
                first_at_ns: first.at_ns,
                first_latency_ns: first.latency_ns,
                worst_latency_ns: worst,
                worst_at_cycle: s.max_at_cycle.unwrap_or(first.cycle),
                over_by_ns: worst - limit,
            })
        })
        .collect();
    if exceeded.is_empty() {
        return Verdict {
            status: VerdictStatus::Pass,
            threshold_ns: Some(limit),
            exceeded,
            tracemark_written,
            message: format!("PASS: no sample exceeded {}", crate::units::us(limit as f64)),
        };
    }
    let total: u64 = exceeded.iter().map(|e| e.count).sum();
    let parts: Vec<String> = exceeded
        .iter()
        .map(|e| {
            let cpu = e.cpu.map(|c| format!(" (CPU {c})")).unwrap_or_default();
            format!(
                "thread {}{cpu}: {} over, first at cycle {} ({:.3} s into the run, {}) with {}, worst {} at cycle {}, {} over",
                e.thread,
                e.count,
                e.first_cycle,
                e.first_at_ns as f64 / 1e9,
                rfc3339(start + Duration::from_nanos(e.first_at_ns.max(0) as u64)),
                crate::units::us(e.first_latency_ns as f64),
                crate::units::us(e.worst_latency_ns as f64),
                e.worst_at_cycle,
                crate::units::us(e.over_by_ns as f64)
            )
        })
        .collect();
    Verdict {
        status: VerdictStatus::Fail,
        threshold_ns: Some(limit),
        message: format!(
            "FAIL: {total} {} exceeded {}; {}{}",
            if total == 1 { "sample" } else { "samples" },
            crate::units::us(limit as f64),
            parts.join("; "),
            if tracemark_written { "; trace marker written and tracing stopped" } else { "" }
        ),
        exceeded,
        tracemark_written,
    }
}
