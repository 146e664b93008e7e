//! The summary table (after a run, and from any RunResult) and the live table.

use super::units::Unit;
use crate::measure::engine::ThreadStatus;
use crate::measure::stats::LiveSnapshot;
use crate::result::{RunResult, Stats};
use crate::rt::sched::{Policy, SchedParams};

fn policy_label(policy: Policy, priority: u32) -> String {
    if policy.is_realtime_priority() {
        format!("{policy}:{priority}")
    } else {
        policy.to_string()
    }
}

fn pct(s: &Stats, k: &str, u: Unit) -> String {
    u.fmt_opt(s.percentiles_ns.get(k).copied().flatten())
}

fn row(label: &str, cpu: &str, policy: &str, s: &Stats, u: Unit) -> String {
    format!(
        "{label:>6} {cpu:>4} {policy:>9} {:>10} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>8}",
        s.cycles,
        s.missed,
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
    let mut out = format!(
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
        let pol = match r.all.priority {
            Some(p) => r.all.policy.parse().map(|pp| policy_label(pp, p)).unwrap_or(r.all.policy.clone()),
            None => r.all.policy.clone(),
        };
        out += &row("ALL", "", &pol, &r.all.stats, u);
        out.push('\n');
    }
    if let (Some(max), Some(t)) = (r.all.stats.max_ns, r.all.max_at_thread.or(Some(0))) {
        let at = r.all.stats.max_at_cycle.unwrap_or(0);
        let when = r.all.stats.max_at_time.as_deref().unwrap_or("?");
        out += &format!("max {} {l} on thread {t} at cycle {at} ({when})\n", u.fmt(max));
    }
    for t in r.threads.iter().filter(|_| !r.config.method.is_absolute()) {
        out += &format!(
            "thread {}: period drift {} µs after {} cycles (relative sleeps accumulate every cycle's overhead)\n",
            t.thread,
            Unit::Micros.fmt(t.drift_ns),
            t.stats.cycles
        );
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
            policy_label(policy, priority),
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
