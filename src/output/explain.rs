//! `--explain`'s blocks after the summary, rtla-style: one line per late sample with where
//! its latency went, largest part first.

use crate::result::RunResult;
use crate::trace::{Cause, Explanation};
use crate::units::us;

/// One explanation: `max 1037.0 µs on thread 1 (CPU 1) cycle 2210: blocking task blk:4711
/// (FIFO 90) 1001.0 µs 96.5 %, …`, then the timer and switch instants and any note.
pub fn block(e: &Explanation, first: bool) -> String {
    let parts: Vec<String> = e
        .parts
        .iter()
        .map(|p| {
            let mut who = p.cause.label().to_string();
            if !p.name.is_empty() {
                who += &format!(" {}", p.name);
            }
            if p.cause == Cause::BlockingTask {
                if let Some(b) = &e.blocking {
                    who += &format!(" ({})", b.policy);
                }
            }
            format!("{who} {} {:.1} %", us(p.ns as f64), p.share)
        })
        .collect();
    let mut out = format!(
        "{} {} on thread {} (CPU {}) cycle {}: {}\n",
        if first { "max" } else { "spike" },
        us(e.latency_ns as f64),
        e.thread,
        e.cpu,
        e.cycle,
        parts.join(", ")
    );
    let at = |x: Option<i64>| x.map_or_else(|| "not seen".to_string(), |v| format!("+{}", us(v as f64)));
    out += &format!("  timer fired {}, switched to the probe {}", at(e.fired_ns), at(e.switched_ns));
    if let Some(b) = &e.blocking {
        out += &format!(
            "; {}:{} {}",
            b.comm,
            b.pid,
            if b.preempted_late {
                "has lower priority than the probe yet kept the CPU: preempted late (a non-preemptible kernel section)"
            } else {
                "has higher priority than the probe"
            }
        );
    }
    out.push('\n');
    if let Some(st) = e.steal_ns.filter(|s| *s > 0) {
        out += &format!(
            "  the host stole {} of CPU {} around this window (/proc/stat, 10 ms ticks)\n",
            crate::units::duration(st),
            e.cpu
        );
    }
    if e.lost_events > 0 {
        out += &format!(
            "  {} trace events of CPU {} were lost during the run: this window may miss some\n",
            e.lost_events, e.cpu
        );
    }
    if let Some(n) = &e.note {
        out += &format!("  note: {n}\n");
    }
    out
}

/// Every explanation of `r`, after a line saying where the events came from; empty without
/// `--explain`.
pub fn blocks(r: &RunResult) -> String {
    let Some(s) = &r.explain else { return String::new() };
    if let Some(why) = &s.unavailable {
        return format!("\nnot explained: {why}\n");
    }
    let mut out = format!(
        "\nwhy it was late (events of tracefs instance {}, {} lost; {} samples above the threshold, {} explained):\n",
        s.instance.as_deref().unwrap_or("?"),
        s.lost_events,
        s.over_threshold,
        r.explanations.len()
    );
    if r.explanations.is_empty() {
        out += "nothing to explain: no sample was above the threshold\n";
    }
    for (i, e) in r.explanations.iter().enumerate() {
        out += &block(e, i == 0 && r.all.stats.max_ns == Some(e.latency_ns));
    }
    out
}
