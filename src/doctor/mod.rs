//! The doctor: is this machine set up for real time, what disturbs the CPUs a run measures,
//! and how to fix it. Every check reads the system through one root directory ([`Sysroot`]:
//! `/`, or a fake tree in tests), says what it read (the evidence), what that costs a
//! real-time task (the consequence) and the exact command that fixes it. A file that cannot
//! be read makes its check `unknown` with the reason, never a guess.
//!
//! `rtlab doctor` prints the checks; `rtlab run`, `sweep` and `cyclictest` record them in the
//! RunResult's environment ([`Examination`] samples counters over the run's first second).

mod interrupts;
mod kernel;
mod machine;
mod power;
mod rights;
mod sample;
mod sysroot;

pub use kernel::{counter_unusable, counter_unusable_from, preempt_model};
pub use sample::{parse_stat, steal_ticks, CpuTimes, Snapshot, NS_PER_TICK};
pub use sysroot::Sysroot;

use crate::rt::affinity::CpuSet;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// The schema tag of a doctor report.
pub const SCHEMA: &str = "rtlab.doctor/1";

/// How long the doctor samples interrupt, softirq, CPU-time and SMI counters.
pub const SAMPLE: Duration = Duration::from_secs(1);

/// What a check concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Set up for real time.
    Ok,
    /// Costs latency or makes figures less trustworthy; a tuned machine fixes it.
    Warn,
    /// Breaks real-time behaviour or the measurement.
    Fail,
    /// Could not be read here (no root, container, other architecture): the reason says why.
    Unknown,
}

impl Status {
    /// The word printed in the table.
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Unknown => "unknown",
        }
    }
}

/// The part of the machine a check looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Area {
    /// Preemption model, tick, timers, clocksource.
    Kernel,
    /// CPU isolation: isolcpus, nohz_full, RCU callbacks, housekeeping, cpusets.
    Isolation,
    /// Device interrupts, IPIs and softirqs on the measured CPUs.
    Interrupts,
    /// Frequency scaling, turbo, idle states, SMT.
    Power,
    /// RT throttling, the fair server, autogroup, RT cgroup budget.
    Scheduler,
    /// Transparent hugepages, KSM, NUMA balancing, swap, vmstat.
    Memory,
    /// Watchdogs, stalld, virtualization and steal, SMIs, machine-check polling.
    Noise,
    /// Root, capabilities, rlimits, containers.
    Rights,
}

/// One file read and the value found there (or why it could not be read).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Evidence {
    /// The file, as a path on the examined machine (e.g. `/proc/cmdline`).
    pub file: String,
    /// What it holds (shortened to 200 characters), or `unreadable: why`.
    pub value: String,
}

/// One finding of the doctor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Check {
    /// Stable identifier (`kernel.preempt`, `interrupts.irq36`): `rtlab compare` matches
    /// findings of two runs by it.
    pub id: String,
    /// The part of the machine it concerns.
    pub area: Area,
    /// What is checked, in a few words.
    pub title: String,
    /// The conclusion.
    pub status: Status,
    /// What was found, in one line (for `unknown`: why it could not be found).
    pub finding: String,
    /// The files read and their values.
    pub evidence: Vec<Evidence>,
    /// What this costs a real-time task, in one sentence (empty when ok and nothing to say).
    pub consequence: String,
    /// The exact command, sysctl or kernel parameter that fixes it (`null`: nothing to fix).
    pub fix: Option<String>,
    /// The measured CPUs it concerns (empty: the whole machine).
    pub cpus: Vec<usize>,
    /// It disturbs the measured CPUs while they are measured (an active IRQ, a busy SMT
    /// sibling, steal): a run prints it as a warning when it becomes known.
    pub alarm: bool,
}

/// Checks (by id prefix) whose findings come from counters sampled over about a second: which
/// IRQ fired, and how often, differs from one sample to the next.
pub const SAMPLED: [&str; 6] =
    ["interrupts.irq", "interrupts.local", "interrupts.softirq", "noise.steal", "noise.smi", "power.smt"];

impl Check {
    /// A check that has found nothing yet (status `unknown` until one of the setters says).
    pub(crate) fn new(area: Area, id: impl Into<String>, title: impl Into<String>) -> Check {
        Check {
            id: id.into(),
            area,
            title: title.into(),
            status: Status::Unknown,
            finding: String::new(),
            evidence: Vec::new(),
            consequence: String::new(),
            fix: None,
            cpus: Vec::new(),
            alarm: false,
        }
    }

    fn with(mut self, status: Status, finding: impl Into<String>) -> Check {
        self.status = status;
        self.finding = finding.into();
        self
    }

    /// Concludes `ok`.
    pub(crate) fn ok(self, finding: impl Into<String>) -> Check {
        self.with(Status::Ok, finding)
    }

    /// Concludes `warn`.
    pub(crate) fn warn(self, finding: impl Into<String>) -> Check {
        self.with(Status::Warn, finding)
    }

    /// Concludes `fail`.
    pub(crate) fn fail(self, finding: impl Into<String>) -> Check {
        self.with(Status::Fail, finding)
    }

    /// Concludes `unknown`, saying why.
    pub(crate) fn unknown(self, why: impl Into<String>) -> Check {
        self.with(Status::Unknown, why)
    }

    /// Concludes `unknown` because `file` could not be read.
    pub(crate) fn unreadable(self, file: &str, why: &str) -> Check {
        self.evidence(file, format!("unreadable: {why}")).unknown(format!("cannot read {file} ({why})"))
    }

    /// Concludes `ok` when `good`, else `bad` (warn or fail).
    pub(crate) fn verdict(self, good: bool, bad: Status, finding: impl Into<String>) -> Check {
        self.with(if good { Status::Ok } else { bad }, finding)
    }

    /// Adds a file read and its value.
    pub(crate) fn evidence(mut self, file: impl Into<String>, value: impl AsRef<str>) -> Check {
        let v = value.as_ref().trim();
        let value =
            if v.chars().count() > 200 { format!("{}…", v.chars().take(200).collect::<String>()) } else { v.into() };
        self.evidence.push(Evidence { file: file.into(), value });
        self
    }

    /// Says what the finding costs a real-time task.
    pub(crate) fn consequence(mut self, text: impl Into<String>) -> Check {
        self.consequence = text.into();
        self
    }

    /// Says how to fix it.
    pub(crate) fn fix(mut self, text: impl Into<String>) -> Check {
        self.fix = Some(text.into());
        self
    }

    /// Names the measured CPUs it concerns.
    pub(crate) fn cpus(mut self, cpus: impl IntoIterator<Item = usize>) -> Check {
        self.cpus = cpus.into_iter().collect();
        self
    }

    /// Marks it as disturbing the measured CPUs now (when it is not ok).
    pub(crate) fn alarm(mut self) -> Check {
        self.alarm = true;
        self
    }

    /// The fix is shown only for what is not ok.
    fn settle(mut self) -> Check {
        if self.status == Status::Ok {
            self.fix = None;
            self.alarm = false;
        }
        if self.status == Status::Unknown {
            self.alarm = false;
        }
        self
    }

    /// What `rtlab compare` matches between two runs: the status and the finding, except for
    /// checks of sampled counters (IRQ rates, IPIs, softirqs, steal, SMIs, a busy sibling),
    /// whose figures change from run to run: for them the status and the CPUs concerned.
    pub fn comparable(&self) -> String {
        if SAMPLED.iter().any(|p| self.id.starts_with(p)) {
            let cpus = CpuSet::from_cpus(self.cpus.iter().copied());
            if cpus.is_empty() {
                self.status.label().to_string()
            } else {
                format!("{} on CPU {cpus}", self.status.label())
            }
        } else {
            format!("{}: {}", self.status.label(), self.finding)
        }
    }

    /// The sentence a run prints when this check raises an alarm.
    pub fn alarm_sentence(&self) -> String {
        let mut why = self.consequence.trim_end_matches('.').to_string();
        if let Some(first) = why.get(..1) {
            why = first.to_lowercase() + &why[1..];
        }
        let mut s = format!("{}: {why}", self.finding);
        if let Some(f) = &self.fix {
            s += &format!("; fix: {f}");
        }
        s
    }
}

/// How many checks concluded each status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Counts {
    /// `ok` checks.
    pub ok: usize,
    /// `warn` checks.
    pub warn: usize,
    /// `fail` checks.
    pub fail: usize,
    /// `unknown` checks.
    pub unknown: usize,
}

/// Everything the doctor found (`rtlab doctor --json`, and a RunResult's
/// `environment.doctor`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DoctorReport {
    /// Always `rtlab.doctor/1`.
    pub schema: String,
    /// The CPUs examined as measured ones (list format, e.g. `1,3`).
    pub cpus: String,
    /// How long counters were sampled, in seconds (rates are per second of this window).
    pub sample_s: f64,
    /// How many checks concluded each status.
    pub counts: Counts,
    /// The checks, area by area.
    pub checks: Vec<Check>,
    /// The board, from the device tree (`Raspberry Pi 4 Model B Rev 1.4`); `null` without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where the kernel command line is set on this machine when it is not the bootloader's
    /// configuration (a Raspberry Pi's `cmdline.txt` on its boot partition); `null`: GRUB's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdline_file: Option<String>,
}

impl DoctorReport {
    /// The exit status of `rtlab doctor`: 3 when a check fails (or, `strict`, warns), else 0.
    pub fn exit_code(&self, strict: bool) -> i32 {
        if self.counts.fail > 0 || strict && self.counts.warn > 0 {
            3
        } else {
            0
        }
    }

    /// The checks that disturb the measured CPUs now (what a run warns about).
    pub fn alarms(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.alarm && matches!(c.status, Status::Warn | Status::Fail))
    }
}

/// What every check may look at: the machine's static files and two counter snapshots.
pub(crate) struct Facts<'a> {
    /// Where files are read.
    pub root: &'a Sysroot,
    /// The measured CPUs.
    pub cpus: &'a CpuSet,
    /// The online CPUs.
    pub online: CpuSet,
    /// `/proc/cmdline`.
    pub cmdline: Result<String, String>,
    /// The kernel's build configuration and where it was read.
    pub config: Result<(String, std::collections::HashMap<String, String>), String>,
    /// `/proc/cpuinfo`.
    pub cpuinfo: String,
    /// The architecture (`x86_64`, `aarch64`, …) when known.
    pub arch: Option<String>,
    /// The board's model from the device tree, when there is one.
    pub model: Option<String>,
    /// Counters at the start and at the end of the sample.
    pub before: &'a Snapshot,
    /// Counters at the end of the sample.
    pub after: &'a Snapshot,
}

impl Facts<'_> {
    /// The sample's length in seconds.
    pub fn seconds(&self) -> f64 {
        self.after.at.saturating_duration_since(self.before.at).as_secs_f64()
    }

    /// A kernel command-line parameter's value (`isolcpus=1-3` → `1-3`; `nowatchdog` → ``).
    pub fn param(&self, name: &str) -> Option<String> {
        let line = self.cmdline.as_ref().ok()?;
        // Arguments after `--` go to init, not to the kernel.
        let kernel = line.split(" -- ").next().unwrap_or(line);
        kernel.split_whitespace().rev().find_map(|w| match w.split_once('=') {
            Some((k, v)) if k == name => Some(v.to_string()),
            None if w == name => Some(String::new()),
            _ => None,
        })
    }

    /// The highest CPU number of the machine (what `N` means in a kernel CPU list): the last
    /// possible CPU, else the last online one.
    pub fn last_cpu(&self) -> usize {
        self.root
            .read("/sys/devices/system/cpu/possible")
            .ok()
            .and_then(|t| CpuSet::parse(t.trim()).ok())
            .and_then(|s| s.cpus().last().copied())
            .or_else(|| self.online.cpus().last().copied())
            .unwrap_or(0)
    }

    /// A `CONFIG_` option's value (`y`, `m`, a number) when the configuration is readable; only
    /// the options in [`CONFIG_OPTIONS`] are kept (a check that asks for another fails in tests).
    pub fn config(&self, option: &str) -> Result<Option<&str>, &str> {
        debug_assert!(CONFIG_OPTIONS.contains(&option), "{option} is not in doctor::CONFIG_OPTIONS: add it there");
        match &self.config {
            Ok((_, map)) => Ok(map.get(option).map(String::as_str)),
            Err(why) => Err(why),
        }
    }

    /// True on x86 (where TSC, MSRs and SMIs exist).
    pub fn x86(&self) -> bool {
        self.arch.as_deref().is_some_and(|a| a == "x86_64" || a == "i686" || a == "i386")
    }

    /// True on Arm (the generic timer's counter, PSCI firmware, no SMIs).
    pub fn arm(&self) -> bool {
        self.arch.as_deref().is_some_and(|a| a == "aarch64" || a.starts_with("arm"))
    }

    /// Where this board takes its kernel command line, when it is not GRUB's: a Raspberry
    /// Pi's `cmdline.txt` (`/boot/firmware/` since Raspberry Pi OS 12, `/boot/` before).
    pub fn cmdline_file(&self) -> Option<String> {
        if !self.model.as_deref().is_some_and(|m| m.starts_with("Raspberry Pi")) {
            return None;
        }
        let old = "/boot/cmdline.txt";
        Some(
            if self.root.exists(old) && !self.root.exists("/boot/firmware/cmdline.txt") {
                old
            } else {
                "/boot/firmware/cmdline.txt"
            }
            .into(),
        )
    }

    /// The measured CPUs as a list string.
    pub fn cpu_list(&self) -> String {
        self.cpus.to_string()
    }
}

/// The kernel options the doctor's checks read ([`Facts::config`]): only these are kept of a
/// configuration's thousands of lines, so that neither its text (100 KiB) nor a map of every
/// option is held through a run.
pub const CONFIG_OPTIONS: [&str; 12] = [
    "CONFIG_HZ",
    "CONFIG_HZ_PERIODIC",
    "CONFIG_NO_HZ_IDLE",
    "CONFIG_NO_HZ_FULL",
    "CONFIG_HIGH_RES_TIMERS",
    "CONFIG_RCU_NOCB_CPU",
    "CONFIG_PREEMPT_RCU",
    "CONFIG_RCU_BOOST",
    "CONFIG_PREEMPT_NONE",
    "CONFIG_PREEMPT_VOLUNTARY",
    "CONFIG_PREEMPT",
    "CONFIG_PREEMPT_LAZY",
];

/// The kernel's build configuration (the options in [`CONFIG_OPTIONS`]): `/proc/config.gz`,
/// else `/boot/config-RELEASE`.
fn kernel_config(root: &Sysroot) -> Result<(String, std::collections::HashMap<String, String>), String> {
    let read = |path: &str, gzip: bool| {
        let mut map = std::collections::HashMap::new();
        root.each_line(path, gzip, |l| {
            if let Some((k, v)) = l.split_once('=').filter(|(k, _)| CONFIG_OPTIONS.contains(k)) {
                map.insert(k.to_string(), v.trim_matches('"').to_string());
            }
        })
        .map(|()| (path.to_string(), map))
    };
    let gz = read("/proc/config.gz", true);
    if gz.is_ok() {
        return gz;
    }
    let release = root.read("/proc/sys/kernel/osrelease").map_err(|e| format!("/proc/sys/kernel/osrelease: {e}"))?;
    let boot = format!("/boot/config-{release}");
    read(&boot, false)
        .map_err(|e| format!("neither /proc/config.gz ({}) nor {boot} ({e}) is readable", gz.err().unwrap_or_default()))
}

/// The architecture: `/proc/sys/kernel/arch` (Linux 6.1+), else guessed from `/proc/cpuinfo`'s
/// field names (x86's `vendor_id`, Arm's `CPU implementer`).
fn architecture(root: &Sysroot, cpuinfo: &str) -> Option<String> {
    if let Ok(a) = root.read("/proc/sys/kernel/arch") {
        return Some(a);
    }
    let has = |k: &str| cpuinfo.lines().any(|l| l.split(':').next().is_some_and(|f| f.trim() == k));
    if has("vendor_id") && has("flags") {
        Some("x86_64".into())
    } else if has("CPU implementer") {
        Some("aarch64".into())
    } else {
        None
    }
}

/// The board's model from the device tree (`/proc/device-tree/model`, or the firmware's copy),
/// without its terminating NUL.
fn board_model(root: &Sysroot) -> Option<String> {
    ["/proc/device-tree/model", "/sys/firmware/devicetree/base/model"]
        .iter()
        .find_map(|p| root.read(p).ok())
        .map(|m| m.trim_end_matches('\0').trim().to_string())
        .filter(|m| !m.is_empty())
}

/// The online CPUs of the examined machine.
pub fn online_cpus(root: &Sysroot) -> Result<CpuSet, String> {
    let text =
        root.read("/sys/devices/system/cpu/online").map_err(|e| format!("/sys/devices/system/cpu/online: {e}"))?;
    CpuSet::parse(&text).map_err(|e| format!("/sys/devices/system/cpu/online holds '{text}': {e}"))
}

/// An examination in progress: counters read at its start, the checks made at [`finish`].
///
/// [`finish`]: Examination::finish
#[derive(Debug)]
pub struct Examination {
    root: Sysroot,
    cpus: CpuSet,
    before: Snapshot,
}

impl Examination {
    /// Reads the counters of `cpus` under `root` (the start of the sample).
    pub fn begin(root: Sysroot, cpus: CpuSet) -> Examination {
        let before = Snapshot::take(&root, &cpus);
        Examination { root, cpus, before }
    }

    /// When the sample began.
    pub fn started(&self) -> Instant {
        self.before.at
    }

    /// Reads the counters again and makes every check.
    pub fn finish(self) -> DoctorReport {
        let after = Snapshot::take(&self.root, &self.cpus);
        let cpuinfo = self.root.read("/proc/cpuinfo").unwrap_or_default();
        let facts = Facts {
            root: &self.root,
            cpus: &self.cpus,
            online: online_cpus(&self.root).unwrap_or_else(|_| self.cpus.clone()),
            cmdline: self.root.read("/proc/cmdline"),
            config: kernel_config(&self.root),
            arch: architecture(&self.root, &cpuinfo),
            model: board_model(&self.root),
            cpuinfo,
            before: &self.before,
            after: &after,
        };
        let mut checks = Vec::new();
        checks.extend(kernel::kernel(&facts));
        checks.extend(kernel::isolation(&facts));
        checks.extend(interrupts::checks(&facts));
        checks.extend(power::checks(&facts));
        checks.extend(machine::scheduler(&facts));
        checks.extend(machine::memory(&facts));
        checks.extend(machine::noise(&facts));
        checks.extend(rights::checks(&facts));
        // A board whose kernel command line is a file says so in every fix that adds to it.
        let cmdline_file = facts.cmdline_file();
        if let Some(file) = &cmdline_file {
            for c in checks.iter_mut() {
                if let Some(f) = c.fix.as_mut() {
                    *f = f.replace(
                        "to the kernel command line",
                        &format!("to the kernel command line ({file}, one line)"),
                    );
                }
            }
        }
        let checks: Vec<Check> = checks.into_iter().map(Check::settle).collect();
        let mut counts = Counts::default();
        for c in &checks {
            match c.status {
                Status::Ok => counts.ok += 1,
                Status::Warn => counts.warn += 1,
                Status::Fail => counts.fail += 1,
                Status::Unknown => counts.unknown += 1,
            }
        }
        DoctorReport {
            schema: SCHEMA.into(),
            cpus: self.cpus.to_string(),
            sample_s: facts.seconds(),
            counts,
            checks,
            model: facts.model.clone(),
            cmdline_file,
        }
    }
}

/// A rate per second as printed: whole numbers from 10 up, one decimal below.
pub(crate) fn rate(per_s: f64) -> String {
    if per_s >= 10.0 {
        format!("{per_s:.0}")
    } else {
        format!("{per_s:.1}")
    }
}

impl Facts<'_> {
    /// A CPU list file (`/sys/devices/system/cpu/isolated`): empty or `(null)` is no CPU.
    pub fn cpu_list_file(&self, path: &str) -> Result<CpuSet, String> {
        match self.root.read(path) {
            Ok(t) if t == "(null)" => Ok(CpuSet::default()),
            Ok(t) => CpuSet::parse(&t).map_err(|e| format!("holds '{t}': {e}")),
            Err(e) if e == "empty" => Ok(CpuSet::default()),
            Err(e) => Err(e),
        }
    }

    /// The measured CPUs in `set`.
    pub fn inside(&self, set: &CpuSet) -> CpuSet {
        CpuSet::from_cpus(self.cpus.cpus().iter().copied().filter(|c| set.contains(*c)))
    }

    /// The measured CPUs not in `set`.
    pub fn outside(&self, set: &CpuSet) -> CpuSet {
        self.cpus.difference(set)
    }

    /// Where housekeeping (IRQs, kthreads, unbound work) should go: the online CPUs neither
    /// measured nor isolated (`isolcpus`, `nohz_full`); the unmeasured ones when every other
    /// CPU is isolated.
    pub fn housekeeping(&self) -> CpuSet {
        let free = self.online.difference(self.cpus);
        let mut hk = free.clone();
        for p in ["/sys/devices/system/cpu/isolated", "/sys/devices/system/cpu/nohz_full"] {
            if let Ok(set) = self.cpu_list_file(p) {
                hk = hk.difference(&set);
            }
        }
        if hk.is_empty() {
            free
        } else {
            hk
        }
    }
}

/// A CPU mask as the kernel writes it (`ff,ffffffff`) → the CPUs set in it.
pub(crate) fn parse_mask(text: &str) -> Result<CpuSet, String> {
    let mut cpus = Vec::new();
    for (word_index, word) in text.trim().split(',').rev().enumerate() {
        let bits = u32::from_str_radix(word, 16).map_err(|_| format!("'{text}' is not a CPU mask"))?;
        cpus.extend((0..32).filter(|b| bits & (1 << b) != 0).map(|b| word_index * 32 + b));
    }
    Ok(CpuSet::from_cpus(cpus))
}

/// A CPU list as the kernel parses it on its command line (kernel-parameters.txt, "cpu lists"):
/// comma-separated `A`, `A-B`, `A-B:USED/GROUP` (the first USED of every GROUP CPUs of the
/// range), where a number may be `N` (the last CPU, `last`); `all` for every CPU; empty for none.
pub fn kernel_cpu_list(text: &str, last: usize) -> Result<CpuSet, String> {
    let num = |t: &str| -> Result<usize, String> {
        match t.trim() {
            "N" => Ok(last),
            t => t.parse::<usize>().map_err(|_| format!("'{t}' is not a CPU number")),
        }
    };
    let mut cpus = Vec::new();
    for group in text.split(',').map(str::trim).filter(|g| !g.is_empty()) {
        if group == "all" {
            cpus.extend(0..=last);
            continue;
        }
        let (range, stride) = match group.split_once(':') {
            Some((r, s)) => {
                let (used, size) = s.split_once('/').ok_or_else(|| format!("'{group}': expected A-B:USED/GROUP"))?;
                let (used, size) = (num(used)?, num(size)?);
                if used == 0 || size == 0 || used > size {
                    return Err(format!("'{group}': USED/GROUP must be 1 ≤ USED ≤ GROUP"));
                }
                (r, Some((used, size)))
            }
            None => (group, None),
        };
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(range)?, num(range)?),
        };
        if a > b || b > last {
            return Err(format!("'{group}' is outside CPUs 0-{last}"));
        }
        let (used, size) = stride.unwrap_or((1, 1));
        cpus.extend((a..=b).filter(|c| (c - a) % size < used));
    }
    Ok(CpuSet::from_cpus(cpus))
}

/// The mask of `cpus` as the kernel reads it (`/proc/irq/*/smp_affinity`).
pub(crate) fn mask_of(cpus: &CpuSet) -> String {
    let words = cpus.cpus().iter().max().map_or(1, |m| m / 32 + 1);
    let mut w = vec![0u32; words];
    for &c in cpus.cpus() {
        w[c / 32] |= 1 << (c % 32);
    }
    w.iter()
        .rev()
        .enumerate()
        .map(|(i, x)| if i == 0 { format!("{x:x}") } else { format!("{x:08x}") })
        .collect::<Vec<_>>()
        .join(",")
}

impl Facts<'_> {
    /// The processes whose command name is one of `names`: `(pid, name)`.
    pub fn processes(&self, names: &[&str]) -> Result<Vec<(u32, String)>, String> {
        let mut found = Vec::new();
        for entry in self.root.list("/proc")? {
            let Ok(pid) = entry.parse::<u32>() else { continue };
            if let Ok(comm) = self.root.read(&format!("/proc/{pid}/comm")) {
                if names.contains(&comm.as_str()) {
                    found.push((pid, comm));
                }
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_cpu_lists_take_all_n_and_strided_ranges() {
        let l = |t: &str| kernel_cpu_list(t, 7).map(|s| s.to_string());
        assert_eq!(l("all").unwrap(), "0-7");
        assert_eq!(l("N").unwrap(), "7");
        assert_eq!(l("1-N").unwrap(), "1-7");
        assert_eq!(l("0-7:2/4").unwrap(), "0-1,4-5");
        assert_eq!(l("1,3-5").unwrap(), "1,3-5");
        assert_eq!(l("").unwrap(), "");
        assert!(l("0-9").is_err() && l("x").is_err() && l("0-3:3/2").is_err());
    }

    #[test]
    fn cpu_masks_read_and_write_as_the_kernel_does() {
        assert_eq!(parse_mask("3").unwrap().cpus(), &[0, 1]);
        assert_eq!(parse_mask("1,00000002").unwrap().cpus(), &[1, 32]);
        assert!(parse_mask("xyz").is_err());
        assert_eq!(mask_of(&CpuSet::from_cpus([1, 32])), "1,00000002");
        assert_eq!(mask_of(&CpuSet::from_cpus([0])), "1");
    }

    #[test]
    fn the_exit_code_is_3_on_fail_and_with_strict_on_warn() {
        let mut r = DoctorReport {
            schema: SCHEMA.into(),
            cpus: "0".into(),
            sample_s: 1.0,
            counts: Counts::default(),
            checks: vec![],
            model: None,
            cmdline_file: None,
        };
        assert_eq!(r.exit_code(true), 0);
        r.counts.warn = 1;
        assert_eq!((r.exit_code(false), r.exit_code(true)), (0, 3));
        r.counts.fail = 1;
        assert_eq!(r.exit_code(false), 3);
    }
}
