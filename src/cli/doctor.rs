//! `rtlab doctor`.

use crate::commands::doctor::DoctorOptions;
use crate::doctor::Sysroot;
use crate::rt::affinity::CpuSet;
use clap::Args;
use std::path::PathBuf;

/// Is this machine set up for real time? Checks the kernel, isolation, interrupts, CPU power,
/// scheduler, memory, noise sources and rights for the CPUs you measure, with the evidence read,
/// the consequence and the fix (exit 3 when a check fails).
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Examples:\n  rtlab doctor\n  rtlab doctor --cpus 2,3 --strict\n  rtlab doctor --json doctor.json\n\nStatus: ok · warn (costs latency; a tuned machine fixes it) · fail (breaks real-time behaviour or the measurement) · unknown (not readable here; the reason is given).\nExit: 0 nothing fails · 3 a check fails (--strict: or warns) · 2 bad usage."
)]
pub struct DoctorArgs {
    /// The CPUs you measure (list: 1,3-5); default: every online CPU
    #[arg(long = "cpus", value_name = "CPUSET")]
    pub cpus: Option<String>,
    /// Write the findings as JSON (schema rtlab.doctor/1) to FILE; `-`: to stdout, instead of the table
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Exit 3 when a check warns, not only when one fails
    #[arg(long = "strict")]
    pub strict: bool,
    /// Only the counts, what to fix first and the boot settings, not every check
    #[arg(long = "brief")]
    pub brief: bool,
    /// Read /proc, /sys, /dev and /boot under DIR instead of / (tests)
    #[arg(long = "sysroot", value_name = "DIR", hide = true)]
    pub sysroot: Option<PathBuf>,
}

/// The measured CPUs `text` names, all of them online under `root`; `None` is every online CPU.
pub fn measured_cpus(option: &str, text: Option<&str>, root: &Sysroot) -> Result<CpuSet, super::UsageError> {
    let online = crate::doctor::online_cpus(root);
    let Some(text) = text else {
        return online.map_err(|e| {
            super::UsageError(format!("cannot tell which CPUs are online ({e}); name them with {option}"))
        });
    };
    let set = CpuSet::parse(text)
        .map_err(|e| super::UsageError(format!("{option} {text}: {e}; give a CPU list such as 1,3-5")))?;
    if set.is_empty() {
        return Err(super::UsageError(format!("{option} '{text}' names no CPU; give a CPU list such as 1,3-5")));
    }
    if let Ok(online) = online {
        let off = set.difference(&online);
        if !off.is_empty() {
            return Err(super::UsageError(format!(
                "{option} {text}: CPU {off} is not online (online: {online}); choose CPUs from that list"
            )));
        }
    }
    Ok(set)
}

/// The root the doctor reads: `/`, or `--sysroot DIR`, which must be a directory.
pub fn sysroot(dir: Option<&PathBuf>) -> Result<Sysroot, super::UsageError> {
    match dir {
        None => Ok(Sysroot::default()),
        Some(d) if d.is_dir() => Ok(Sysroot::new(d)),
        Some(d) => Err(super::UsageError(format!(
            "--sysroot {}: not a directory; give the root of a /proc and /sys tree",
            d.display()
        ))),
    }
}

impl DoctorOptions {
    /// Validates the CPUs against the examined machine and the JSON output before anything is read.
    pub fn from_cli(a: DoctorArgs) -> Result<DoctorOptions, super::UsageError> {
        let root = sysroot(a.sysroot.as_ref())?;
        let cpus = measured_cpus("--cpus", a.cpus.as_deref(), &root)?;
        if let Some(p) = &a.json {
            crate::export::check_outputs(&[("--json".into(), p.as_path())], &[]).map_err(super::UsageError)?;
        }
        Ok(DoctorOptions { cpus, json: a.json, strict: a.strict, root, brief: a.brief, all_cpus: a.cpus.is_none() })
    }
}
