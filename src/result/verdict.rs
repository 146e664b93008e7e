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
    /// `--max-response` (ns), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_response_ns: Option<i64>,
    /// `--max-misses` as given (`3`, `2/10`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_misses: Option<String>,
    /// Tasks whose response time or misses broke those limits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskVerdict>,
}

/// How many deadline misses a run may have: in all, or in any window of K releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissLimit {
    /// At most N misses per task in the whole run.
    Total(u64),
    /// At most M misses in any K consecutive releases (the weakly-hard constraint).
    Window {
        /// M.
        m: u64,
        /// K.
        k: u32,
    },
}

impl MissLimit {
    /// Parses `N` or `M/K` (M ≤ K, 1 ≤ K ≤ the largest window).
    pub fn parse(text: &str) -> Result<MissLimit, String> {
        let bad = || {
            format!(
                "invalid --max-misses '{text}': give a count (0, 3) or M/K, at most M misses in any K consecutive \
                 releases (1/10), with K from 1 to {}",
                crate::measure::work::MAX_MISS_WINDOW
            )
        };
        match text.split_once('/') {
            None => text.trim().parse().map(MissLimit::Total).map_err(|_| bad()),
            Some((m, k)) => {
                let m: u64 = m.trim().parse().map_err(|_| bad())?;
                let k: u32 = k.trim().parse().map_err(|_| bad())?;
                if k == 0 || k > crate::measure::work::MAX_MISS_WINDOW || m > k as u64 {
                    return Err(bad());
                }
                Ok(MissLimit::Window { m, k })
            }
        }
    }
}

impl std::fmt::Display for MissLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MissLimit::Total(n) => write!(f, "{n}"),
            MissLimit::Window { m, k } => write!(f, "{m}/{k}"),
        }
    }
}

/// A working task that broke `--max-response` or `--max-misses`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskVerdict {
    /// Thread index.
    pub thread: usize,
    /// Task name, when it has one.
    pub name: Option<String>,
    /// Responses above `--max-response`.
    pub responses_over: u64,
    /// The worst response (ns).
    pub worst_response_ns: Option<i64>,
    /// Its misses in all.
    pub misses: u64,
    /// Its most misses in any window of `window` releases.
    pub worst_misses_in_window: u64,
    /// The window.
    pub window: u32,
    /// What it broke, in words.
    pub why: String,
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
            max_response_ns: None,
            max_misses: None,
            tasks: vec![],
        }
    }

    /// Adds the working tasks' limits: `--max-response` and `--max-misses`; the verdict
    /// fails when any task breaks one, and passes when limits were given and none did.
    pub fn with_work(
        mut self,
        tasks: &[(usize, Option<&str>, &crate::measure::work::WorkSummary)],
        max_response_ns: Option<i64>,
        max_misses: Option<MissLimit>,
    ) -> Verdict {
        if max_response_ns.is_none() && max_misses.is_none() {
            return self;
        }
        self.max_response_ns = max_response_ns;
        self.max_misses = max_misses.map(|m| m.to_string());
        for &(thread, name, w) in tasks {
            let d = &w.deadlines;
            let mut why = Vec::new();
            let over = w.response.over.count;
            if let (Some(limit), true) = (max_response_ns, over > 0) {
                why.push(format!(
                    "{} above {} (worst {})",
                    crate::units::count(over, "response"),
                    crate::units::us(limit as f64),
                    crate::units::us(w.response.max_ns.unwrap_or(0) as f64)
                ));
            }
            match max_misses {
                Some(MissLimit::Total(n)) if d.misses > n => {
                    why.push(format!("{} (at most {n} allowed)", crate::units::count(d.misses, "deadline miss")))
                }
                Some(MissLimit::Window { m, k }) if d.worst_misses_in_window > m => why.push(format!(
                    "{} misses in a window of {k} releases (at most {m} allowed)",
                    d.worst_misses_in_window
                )),
                _ => {}
            }
            if !why.is_empty() {
                self.tasks.push(TaskVerdict {
                    thread,
                    name: name.map(String::from),
                    responses_over: over,
                    worst_response_ns: w.response.max_ns,
                    misses: d.misses,
                    worst_misses_in_window: d.worst_misses_in_window,
                    window: d.window,
                    why: why.join(", "),
                });
            }
        }
        let limits = [
            max_response_ns.map(|r| format!("no response above {}", crate::units::us(r as f64))),
            max_misses.map(|m| match m {
                MissLimit::Total(n) => format!("at most {n} deadline misses"),
                MissLimit::Window { m, k } => format!("at most {m} misses in any {k} releases"),
            }),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
        let failed: Vec<String> = self
            .tasks
            .iter()
            .map(|t| {
                let who = t.name.as_ref().map_or_else(|| format!("thread {}", t.thread), |n| format!("task {n}"));
                format!("{who}: {}", t.why)
            })
            .collect();
        match (self.status, failed.is_empty()) {
            (VerdictStatus::Fail, true) => {}
            (VerdictStatus::Fail, false) => self.message = format!("{}; {}", self.message, failed.join("; ")),
            (_, false) => {
                self.status = VerdictStatus::Fail;
                self.message = format!("FAIL: {}", failed.join("; "));
            }
            (VerdictStatus::Pass, true) => self.message = format!("{}; {limits}", self.message),
            (_, true) => {
                self.status = VerdictStatus::Pass;
                self.message = format!("PASS: {limits}");
            }
        }
        self
    }
}

impl Verdict {
    /// A verdict over data the kernel dropped events of cannot pass: the missing periods may
    /// hold the worst ones. A pass becomes a failure that says so; other verdicts are kept.
    pub fn with_lost_events(mut self, lost: u64) -> Verdict {
        if lost > 0 && self.status == VerdictStatus::Pass {
            self.status = VerdictStatus::Fail;
            self.message = format!(
                "FAIL: {} of the watched threads were lost, so periods are missing: the limits cannot be shown \
                 to hold ({})",
                crate::units::count(lost, "trace event"),
                self.message.trim_start_matches("PASS: ")
            );
        }
        self
    }
}

/// What the verdict needs of one probe: index, CPU, statistics and a `--breaktrace` hit.
pub type VerdictInput<'a> = (usize, Option<usize>, &'a Summary, Option<Exceedance>);

/// The verdict of `threads` against `threshold` (ns); `start` dates the samples; `noise`
/// names them as a noise run's (noises in gaps) rather than wakeups' (samples in cycles).
pub fn verdict(
    threads: &[VerdictInput],
    threshold: Option<i64>,
    start: SystemTime,
    tracemark_written: bool,
    noise: bool,
) -> Verdict {
    let (one, many, at) = if noise { ("noise", "noises", "gap") } else { ("sample", "samples", "cycle") };
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
            message: format!("PASS: no {one} exceeded {}", crate::units::us(limit as f64)),
            ..Verdict::not_checked()
        };
    }
    let total: u64 = exceeded.iter().map(|e| e.count).sum();
    let parts: Vec<String> = exceeded
        .iter()
        .map(|e| {
            let cpu = e.cpu.map(|c| format!(" (CPU {c})")).unwrap_or_default();
            format!(
                "thread {}{cpu}: {} over, first at {at} {} ({:.3} s into the run, {}) with {}, worst {} at {at} {}, {} over",
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
            if total == 1 { one } else { many },
            crate::units::us(limit as f64),
            parts.join("; "),
            if tracemark_written { "; trace marker written and tracing stopped" } else { "" }
        ),
        exceeded,
        tracemark_written,
        ..Verdict::not_checked()
    }
}

/// Judges a stored run (a file, or a fleet host's window) against `threshold_ns` from what it
/// kept: a CPU fails when its histogram has samples in buckets wholly above the threshold, or
/// when its largest sample is above it. The count is what the evidence shows: the
/// samples in buckets wholly above (a lower bound), or 1 for a maximum above the threshold in a
/// bucket that straddles it. A CPU whose top bucket straddles the threshold with no maximum
/// known also fails, its samples there said to be *possibly* above.
/// `name` names the run in the message, `scope` follows the threshold (` in the window`).
pub fn judge_stored(r: &mut super::RunResult, threshold_ns: i64, name: &str, scope: &str) {
    let mut exceeded = Vec::new();
    let mut unsure = Vec::new();
    for t in &r.threads {
        let h = t.stats.histogram.as_ref();
        let above: u64 =
            h.iter().flat_map(|h| &h.buckets).filter(|b| b.lo_ns as i64 >= threshold_ns).map(|b| b.count).sum::<u64>()
                + h.and_then(|h| h.unbinned).filter(|u| u.at_least_ns as i64 >= threshold_ns).map_or(0, |u| u.count);
        // The highest non-empty bucket: the largest sample lies in it.
        let top = h.and_then(|h| match h.unbinned {
            Some(u) => Some((u.at_least_ns as i64, i64::MAX, u.count)),
            None => h.buckets.last().map(|b| (b.lo_ns as i64, b.hi_ns as i64, b.count)),
        });
        let max = t.stats.max_ns.filter(|m| *m > threshold_ns);
        let count = if above > 0 { above } else { max.map_or(0, |_| 1) };
        if count == 0 {
            if let (None, Some((lo, hi, n))) = (t.stats.max_ns, top) {
                if hi > threshold_ns && lo < threshold_ns {
                    unsure.push(format!(
                        "CPU {}: {n} samples between {} and {} may be above (the window's maximum is not known)",
                        t.cpu.map_or("-".into(), |c| c.to_string()),
                        crate::units::us(lo as f64),
                        crate::units::us(hi as f64)
                    ));
                }
            }
            continue;
        }
        let max = max.or(top.map(|(lo, _, _)| lo)).unwrap_or(threshold_ns);
        exceeded.push(Exceeded {
            thread: t.thread,
            cpu: t.cpu,
            count,
            first_cycle: 0,
            first_at_ns: 0,
            first_latency_ns: max,
            worst_latency_ns: max,
            worst_at_cycle: 0,
            over_by_ns: max - threshold_ns,
        });
    }
    r.verdict = if exceeded.is_empty() && unsure.is_empty() {
        Verdict {
            status: VerdictStatus::Pass,
            threshold_ns: Some(threshold_ns),
            exceeded,
            tracemark_written: false,
            message: format!("PASS: no CPU of {name} exceeded {}{scope}", crate::units::us(threshold_ns as f64)),
            ..Verdict::not_checked()
        }
    } else {
        let known = |e: &Exceeded| r.threads.iter().any(|t| t.thread == e.thread && t.stats.max_ns.is_some());
        let mut parts: Vec<String> = exceeded
            .iter()
            .map(|e| {
                format!(
                    "CPU {}: {} {} (at least {} above)",
                    e.cpu.map_or("-".into(), |c| c.to_string()),
                    if known(e) { "max" } else { "max at least" },
                    crate::units::us(e.worst_latency_ns as f64),
                    crate::units::count(e.count, "sample")
                )
            })
            .collect();
        parts.extend(unsure);
        Verdict {
            status: VerdictStatus::Fail,
            threshold_ns: Some(threshold_ns),
            message: format!(
                "FAIL: {name} exceeded {}{scope}: {}",
                crate::units::us(threshold_ns as f64),
                parts.join("; ")
            ),
            exceeded,
            tracemark_written: false,
            ..Verdict::not_checked()
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passed() -> Verdict {
        Verdict {
            status: VerdictStatus::Pass,
            message: "PASS: no sample above 100.0 µs".into(),
            ..Verdict::not_checked()
        }
    }

    #[test]
    fn a_pass_over_data_with_lost_events_is_a_failure_that_says_why() {
        let v = passed().with_lost_events(12);
        assert_eq!(v.status, VerdictStatus::Fail);
        assert!(
            v.message.contains("12 trace events") && v.message.contains("no sample above 100.0 µs"),
            "{}",
            v.message
        );
        assert_eq!(passed().with_lost_events(0), passed());
        assert_eq!(Verdict::not_checked().with_lost_events(5).status, VerdictStatus::NotChecked);
    }
}
