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
    let mut out = format!(
        "\nwhy it was late (events of tracefs instance {}, {} lost; {} above the threshold, {} explained):\n",
        s.instance.as_deref().unwrap_or("?"),
        s.lost_events,
        crate::units::count(s.over_threshold, "sample"),
        r.explanations.len()
    );
    if r.explanations.is_empty() {
        out += "nothing to explain: no sample was above the threshold\n";
    }
    for (i, e) in r.explanations.iter().enumerate() {
        out += &e.describe(i == 0 && r.all.stats.max_ns == Some(e.latency_ns));
    }
    out
}
