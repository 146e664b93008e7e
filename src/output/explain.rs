//! `--explain`'s blocks after the summary, rtla-style: one line per late sample with where
//! its latency went, largest part first.

use crate::result::RunResult;

/// Every explanation of `r`, after a line saying where the events came from; empty without
/// `--explain`.
pub fn blocks(r: &RunResult) -> String {
    let Some(s) = &r.explain else { return String::new() };
    if let Some(why) = &s.unavailable {
        return format!("\nnot explained: {why}\n");
    }
    let worst = match s.worst {
        0 => None,
        1 => Some("the largest sample".to_string()),
        n => Some(format!("the {n} largest samples")),
    };
    let over = s
        .threshold_ns
        .map(|t| format!("{} above {}", crate::units::count(s.over_threshold, "sample"), crate::units::us(t as f64)));
    let asked = [over, worst].into_iter().flatten().collect::<Vec<_>>().join(" and ");
    let mut out = format!(
        "\nwhy it was late (events of tracefs instance {}, {} lost; {asked}, {} explained):\n",
        s.instance.as_deref().unwrap_or("?"),
        s.lost_events,
        r.explanations.len()
    );
    if s.skipped_for_time > 0 {
        out += &format!(
            "{} left unexplained: explaining costs the event reader time, and it may spend a tenth of the run\n",
            crate::units::count_was(s.skipped_for_time, "late period")
        );
    }
    if r.explanations.is_empty() {
        out += "nothing to explain: no sample was above the threshold\n";
    }
    for (i, e) in r.explanations.iter().enumerate() {
        out += &aligned(e, i == 0 && r.all.stats.max_ns == Some(e.latency_ns));
    }
    out
}

/// One explanation for a terminal: its heading, then one aligned row per cause (the parts
/// under 1 % together), then when the timer fired and the probe ran, and the notes.
pub fn aligned(e: &crate::trace::explain::Explanation, first: bool) -> String {
    let rows = e.rows();
    let width = rows.iter().map(|(w, _, _)| w.chars().count()).max().unwrap_or(0).min(60);
    let mut out = format!("{}:\n", e.heading(first));
    for (who, ns, share) in &rows {
        out += &format!(
            "  {:<width$}  {:>10}  {:>5.1} %\n",
            crate::units::clip(who, 60),
            crate::units::us(*ns as f64),
            share
        );
    }
    if !e.noise && e.work.is_none() {
        out += &format!("  {}\n", e.moments());
    } else if let Some(b) = &e.blocking {
        out += &format!("  {}:{} ({}) took the CPU\n", b.comm, b.pid, b.policy);
    }
    out + &e.notes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::explain::{Cause, Explanation, Part};

    fn part(cause: Cause, name: &str, ns: i64, share: f64) -> Part {
        Part { cause, name: name.into(), ns, share }
    }

    #[test]
    fn each_cause_is_one_aligned_row_and_the_parts_under_one_percent_are_one() {
        let e = Explanation {
            cpu: 1,
            cycle: 7,
            latency_ns: 100_000,
            fired_ns: Some(2_000),
            parts: vec![
                part(Cause::BlockingTask, "hog:9", 97_000, 97.0),
                part(Cause::TimerIrq, "", 2_000, 2.0),
                part(Cause::Softirq, "TIMER", 600, 0.6),
                part(Cause::Unaccounted, "", 400, 0.4),
            ],
            ..Explanation::blank()
        };
        let text = aligned(&e, true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "max 100.0 µs on thread 0 (CPU 1) cycle 7:");
        assert_eq!(lines.len(), 5, "{text}");
        assert!(
            lines[3].contains("2 smaller parts (under 1 % each)") && lines[3].ends_with("1.0 µs    1.0 %"),
            "{text}"
        );
        // The figures line up.
        let col = |l: &str| l.find(" µs").unwrap();
        assert!(lines[1..4].iter().all(|l| col(l) == col(lines[1])), "{text}");
        assert_eq!(lines[4], "  the timer fired at +2.0 µs; no event shows the switch to the probe");
    }
}
