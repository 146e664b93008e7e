//! The summary table (after a run, and from any RunResult) and the live table.

use crate::load::LoadResult;
use crate::measure::stats::LiveSnapshot;
use crate::probes::ThreadStatus;
use crate::result::{RunResult, Stats};
use crate::rt::sched::{Policy, SchedParams};
use crate::units::si;
use crate::units::Unit;
use std::fmt::Write as _;

fn policy_label(policy: Option<Policy>, priority: Option<u32>) -> String {
    match (policy, priority) {
        (Some(p), Some(prio)) if p.is_realtime_priority() => format!("{p}:{prio}"),
        (Some(p), _) => p.to_string(),
        (None, Some(prio)) => format!("P:{prio}"),
        (None, None) => "-".into(),
    }
}

/// A percentile cell: the value, `>X` when only a lower bound is known, `-` when unknown.
fn pct(s: &Stats, k: &str, u: Unit) -> String {
    match (s.percentiles_ns.get(k).copied().flatten(), s.percentiles_above_ns.get(k)) {
        (Some(v), _) => u.fmt(v),
        (None, Some(lo)) => format!(">{}", u.fmt(*lo)),
        (None, None) => "-".into(),
    }
}

fn opt_count(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn row(label: &str, cpu: &str, policy: &str, s: &Stats, u: Unit) -> String {
    format!(
        "{label:>6} {cpu:>4} {policy:>9} {:>10} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8}",
        s.cycles,
        opt_count(s.missed),
        u.fmt_opt(s.min_ns),
        s.mean_ns.map_or("-".into(), |m| u.fmt_f(m)),
        pct(s, "50", u),
        pct(s, "99", u),
        pct(s, "99.9", u),
        pct(s, "99.99", u),
        pct(s, "99.999", u),
        u.fmt_opt(s.max_ns),
        s.stdev_ns.map_or("-".into(), |m| u.fmt_f(m)),
    )
}

/// The final summary of a result: one row per thread, an ALL row, then warnings and verdict.
pub fn summary(r: &RunResult, u: Unit) -> String {
    let l = u.label();
    let mut out = String::new();
    if let Some(src) = &r.source {
        out += &format!(
            "imported from {} ({}{}){}\n",
            src.file,
            src.format,
            src.tool_version.as_ref().map(|v| format!(" {v}")).unwrap_or_default(),
            src.command_line.as_ref().map(|c| format!(": {c}")).unwrap_or_default()
        );
    }
    out += &format!(
        "{:>6} {:>4} {:>9} {:>10} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8}\n",
        "thread",
        "cpu",
        "policy",
        "cycles",
        "missed",
        format!("min {l}"),
        format!("avg {l}"),
        "p50",
        "p99",
        "p99.9",
        "p99.99",
        "p99.999",
        format!("max {l}"),
        "stdev"
    );
    for t in &r.threads {
        let cpu = t.cpu.map_or("-".into(), |c| c.to_string());
        out += &row(&t.thread.to_string(), &cpu, &policy_label(t.policy, t.priority), &t.stats, u);
        out.push('\n');
    }
    if r.threads.len() > 1 {
        let pol = match (&r.all.policy, r.all.priority) {
            (Some(p), prio) => policy_label(p.parse().ok(), prio).replace('-', p),
            (None, _) => "-".into(),
        };
        out += &row("ALL", "", &pol, &r.all.stats, u);
        out.push('\n');
    }
    if let Some(max) = r.all.stats.max_ns {
        let t = r.all.max_at_thread.unwrap_or(0);
        let at = r.all.stats.max_at_cycle.map(|c| format!(" at cycle {c}")).unwrap_or_default();
        let when = r.all.stats.max_at_time.as_ref().map(|w| format!(" ({w})")).unwrap_or_default();
        out += &format!("max {} {l} on thread {t}{at}{when}\n", u.fmt(max));
    }
    if r.config.as_ref().is_some_and(|c| !c.method.is_absolute()) {
        for t in &r.threads {
            if let Some(d) = t.drift_ns {
                out += &format!(
                    "thread {}: period drift {} µs after {} cycles (relative sleeps accumulate every cycle's overhead)\n",
                    t.thread,
                    Unit::Micros.fmt(d),
                    t.stats.cycles
                );
            }
        }
    }
    for w in &r.warnings {
        out += &format!("warning: {}\n", w.message);
    }
    if r.verdict.threshold_ns.is_some() {
        out += &r.verdict.message;
        out.push('\n');
    }
    out
}

/// The loads' throughput table.
pub fn loads(results: &[LoadResult]) -> String {
    let mut s = format!("{:<40} {:>7} {:>10} {:>24} {:>11}\n", "load", "workers", "policy", "throughput", "cpu/worker");
    for r in results {
        let util = r.utilization.map_or("-".into(), |u| format!("{:.0} %", u * 100.0));
        let _ = writeln!(
            s,
            "{:<40} {:>7} {:>10} {:>24} {:>11}",
            r.spec,
            r.workers,
            r.policy,
            format!("{} {}/s", si(r.rate_per_s), r.unit),
            util
        );
        for w in &r.warnings {
            let _ = writeln!(s, "warning: load '{}': {w}", r.spec);
        }
    }
    s
}

/// The summary table and the loads' table, after `header`: on stderr when the result itself
/// goes to stdout.
pub fn print_summary(result: &RunResult, unit: Unit, header: &str, to_stderr: bool) {
    use std::io::Write;
    let mut text = header.to_string() + &summary(result, unit);
    if !result.loads.is_empty() {
        text += &loads(&result.loads);
    }
    if to_stderr {
        let _ = std::io::stderr().write_all(text.as_bytes());
    } else {
        let _ = std::io::stdout().write_all(text.as_bytes());
    }
}

/// The live table: cur, min, avg, max, p99 and missed per thread.
pub fn live(threads: &[ThreadStatus], snaps: &[LiveSnapshot], elapsed_s: f64, u: Unit) -> String {
    let l = u.label();
    let mut out = format!(
        "rtlab: {elapsed_s:.0} s  ({l})\n{:>6} {:>4} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}\n",
        "thread", "cpu", "policy", "cycles", "cur", "min", "avg", "p99", "max", "missed"
    );
    for (t, s) in threads.iter().zip(snaps) {
        let has = s.cycles > 0;
        let opt = |v: i64| if has { u.fmt(v) } else { "-".into() };
        let SchedParams { policy, priority, .. } = t.sched;
        out += &format!(
            "{:>6} {:>4} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}\n",
            t.index,
            t.cpu.map_or("-".into(), |c| c.to_string()),
            policy_label(Some(policy), Some(priority)),
            s.cycles,
            opt(s.cur),
            opt(s.min),
            if has { u.fmt_f(s.mean) } else { "-".into() },
            u.fmt_opt(s.p99),
            opt(s.max),
            s.missed
        );
    }
    out
}
