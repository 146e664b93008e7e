//! The doctor on a terminal: the counts and what to fix first, then (unless `--brief`) one row
//! per check with what was read, what it costs and the fix; at the end the kernel command line
//! and the sysctl settings the fixes add up to, ready to copy.

use super::wrap;
use crate::doctor::{Area, Check, DoctorReport, Status};

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

/// How the report is printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// `--brief`: the summary, the fixes and the command line, not every check.
    pub brief: bool,
    /// Wrap explanations to this many columns (commands are never wrapped).
    pub width: usize,
    /// The CPUs were not named (`--cpus`): every online CPU is measured.
    pub all_cpus: bool,
    /// Online CPUs left for housekeeping (`None`: none).
    pub housekeeping: Option<String>,
    /// The measured CPUs (what `isolcpus=…,CPUS` isolates).
    pub measured: String,
}

/// The fixes' housekeeping advice, said once at the top when no CPU is left for it.
const UNMEASURED: [&str; 3] = [
    "leave at least one CPU unmeasured for housekeeping, then ",
    "leave one CPU unmeasured, then ",
    "leave one CPU unmeasured and ",
];

/// Most entries in "fix these first".
const FIRST: usize = 6;

impl View {
    /// A fix as printed: without the housekeeping advice when it was given once, with the
    /// housekeeping CPU filled in where there is one.
    fn fix(&self, f: &str) -> String {
        let mut f = f.to_string();
        if self.all_cpus {
            for p in UNMEASURED {
                if let Some(rest) = f.strip_prefix(p) {
                    // "… and move IRQ 36 there": there is the housekeeping CPU --cpus leaves.
                    f = rest.replacen(" there", " to a housekeeping CPU", 1).replacen(
                        " to it",
                        " to the housekeeping CPUs",
                        1,
                    );
                }
            }
        }
        if let Some(h) = &self.housekeeping {
            f = f.replace("THAT_CPU", h);
        }
        f.replace("domain,CPUS", &format!("domain,{}", self.measured))
    }
}

/// The checks that are not ok, failures first, in the table's order otherwise.
fn to_fix(r: &DoctorReport) -> Vec<&Check> {
    let mut v: Vec<&Check> = r.checks.iter().filter(|c| matches!(c.status, Status::Fail | Status::Warn)).collect();
    v.sort_by_key(|c| c.status != Status::Fail);
    v
}

/// The report for a terminal.
pub fn table(r: &DoctorReport, view: &View) -> String {
    let counts =
        format!("{} fail · {} warn · {} ok · {} unknown", r.counts.fail, r.counts.warn, r.counts.ok, r.counts.unknown);
    let board = r.model.as_deref().map(|m| format!(" of {m}")).unwrap_or_default();
    let mut out = format!("rtlab doctor: CPU {}{board}, sampled {:.2} s: {counts}\n", r.cpus, r.sample_s);
    if view.all_cpus
        && r.checks.iter().any(|c| c.fix.as_deref().is_some_and(|f| UNMEASURED.iter().any(|p| f.starts_with(p))))
    {
        out += &wrap(
            "Every online CPU was examined as a measured one: name the CPUs your real-time threads use with \
             --cpus (e.g. --cpus 1), so the others do the housekeeping the fixes below move to them.",
            view.width,
            "",
        );
    }
    let first = to_fix(r);
    if !first.is_empty() {
        out += "\nFix these first:\n";
        for (i, c) in first.iter().take(if view.brief { usize::MAX } else { FIRST }).enumerate() {
            out += &wrap(&format!("{}. {} {}: {}", i + 1, c.status.label(), c.title, c.finding), view.width, "     ");
            if let Some(f) = &c.fix {
                out += &format!("     fix: {}\n", view.fix(f));
            }
        }
        if !view.brief && first.len() > FIRST {
            out += &format!("   … and {} more below.\n", first.len() - FIRST);
        }
    }
    if !view.brief {
        out += &checks(r, view);
    }
    out += &boot_settings(r, view);
    out += &format!("\n{counts}\n");
    out
}

/// Every check by area: status, title and finding, then what was read and why (wrapped), and
/// the fix (whole, so it copies).
fn checks(r: &DoctorReport, view: &View) -> String {
    let width = r.checks.iter().map(|c| c.title.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    let mut area = None;
    let pad = " ".repeat(9);
    for c in &r.checks {
        if area != Some(c.area) {
            area = Some(c.area);
            out += &format!("\n[{}]\n", area_name(c.area));
        }
        let head = format!("{:<8} {:<width$}  {}", c.status.label(), c.title, c.finding);
        out += &wrap(&head, view.width, &" ".repeat(11 + width));
        if !c.evidence.is_empty() {
            let read: Vec<String> = c.evidence.iter().map(|e| format!("{} = {}", e.file, e.value)).collect();
            out += &wrap(&format!("{pad}read: {}", read.join("; ")), view.width, &format!("{pad}      "));
        }
        if !c.consequence.is_empty() {
            out += &wrap(&format!("{pad}why:  {}", c.consequence), view.width, &format!("{pad}      "));
        }
        if let (Some(f), false) = (&c.fix, c.status == Status::Ok) {
            out += &format!("{pad}fix:  {}\n", view.fix(f));
        }
    }
    out
}

/// The kernel command line and the sysctl settings that the fixes of what is not ok name,
/// each in one block to copy.
fn boot_settings(r: &DoctorReport, view: &View) -> String {
    let mut cmdline: Vec<String> = Vec::new();
    let mut later: Vec<String> = Vec::new();
    let mut sysctl: Vec<(String, String)> = Vec::new();
    for c in to_fix(r) {
        let Some(f) = &c.fix else { continue };
        let f = view.fix(f);
        if let Some(args) = f.strip_prefix("add ").and_then(|a| a.split(" to the kernel command line").next()) {
            if !f.contains(" to the kernel command line") {
                continue;
            }
            // Kernel parameters: `name=value`, or a flag with an underscore (`rcu_nocb_poll`).
            let param = |w: &&str| {
                w.chars().all(|c| c.is_ascii_alphanumeric() || "_.=,-".contains(c))
                    && (w.contains('=') || w.contains('_'))
            };
            for a in args.split_whitespace().filter(param) {
                let a = a.to_string();
                // Isolating every CPU leaves none for the kernel's own work: those wait for --cpus.
                if view.all_cpus && (a.starts_with("isolcpus=") || a.contains("THAT_CPU")) {
                    later.push(a);
                } else if !cmdline.contains(&a) {
                    cmdline.push(a);
                }
            }
        }
        if let Some(rest) = f.strip_prefix("sysctl -w ") {
            for kv in rest.split(" (").next().unwrap_or("").split_whitespace() {
                if let Some((k, v)) = kv.split_once('=') {
                    sysctl.push((k.to_string(), v.to_string()));
                }
            }
        }
    }
    let mut out = String::new();
    if !cmdline.is_empty() {
        out += "\n";
        let how = match &r.cmdline_file {
            Some(file) => format!("append to the one line of {file} on the boot partition, reboot"),
            None => "append to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub, reboot".to_string(),
        };
        out += &wrap(&format!("Kernel command line for what was found ({how}):"), view.width, "");
        out += &format!("  {}\n", cmdline.join(" "));
        if !later.is_empty() {
            out += &format!("  and once --cpus leaves CPUs for housekeeping: {}\n", later.join(" "));
        }
    }
    if !sysctl.is_empty() {
        out += "\n";
        out += &wrap(
            "sysctl settings for what was found (write to /etc/sysctl.d/90-realtime.conf, run sysctl --system):",
            view.width,
            "",
        );
        for (k, v) in sysctl {
            out += &format!("  {k} = {v}\n");
        }
    }
    out
}
