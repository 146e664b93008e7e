//! The doctor's table: one row per check, with what was read, what it costs and the fix.

use crate::doctor::{Area, DoctorReport, Status};

fn area_name(a: Area) -> &'static str {
    match a {
        Area::Kernel => "kernel",
        Area::Isolation => "isolation",
        Area::Interrupts => "interrupts",
        Area::Power => "CPU power",
        Area::Scheduler => "scheduler",
        Area::Memory => "memory",
        Area::Noise => "noise sources",
        Area::Rights => "rights",
    }
}

/// The report as a table: per area, one line per check (status, what is checked, the
/// finding), then its details indented, unwrapped so commands copy whole: `read:` the evidence,
/// `why:` the consequence, `fix:` for what is not ok; then the counts.
pub fn table(r: &DoctorReport) -> String {
    let width = r.checks.iter().map(|c| c.title.chars().count()).max().unwrap_or(0);
    let mut out = format!("rtlab doctor: CPU {} (counters sampled over {:.2} s)\n", r.cpus, r.sample_s);
    let mut area = None;
    for c in &r.checks {
        if area != Some(c.area) {
            area = Some(c.area);
            out += &format!("\n[{}]\n", area_name(c.area));
        }
        out += &format!("{:<8} {:<width$}  {}\n", c.status.label(), c.title, c.finding);
        let pad = " ".repeat(9);
        if !c.evidence.is_empty() {
            let read: Vec<String> = c.evidence.iter().map(|e| format!("{} = {}", e.file, e.value)).collect();
            out += &format!("{pad}read: {}\n", read.join("; "));
        }
        if !c.consequence.is_empty() {
            out += &format!("{pad}why:  {}\n", c.consequence);
        }
        if let (Some(f), false) = (&c.fix, c.status == Status::Ok) {
            out += &format!("{pad}fix:  {f}\n");
        }
    }
    out += &format!(
        "\n{} ok · {} warn · {} fail · {} unknown\n",
        r.counts.ok, r.counts.warn, r.counts.fail, r.counts.unknown
    );
    out
}
