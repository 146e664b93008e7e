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
    if r.explanations.is_empty() {
        out += "nothing to explain: no sample was above the threshold\n";
    }
    for (i, e) in r.explanations.iter().enumerate() {
        out += &e.describe(i == 0 && r.all.stats.max_ns == Some(e.latency_ns));
    }
    out
}
