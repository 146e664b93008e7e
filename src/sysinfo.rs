//! Environment capture for provenance: what machine, kernel and settings a result came from.

use crate::rt::affinity;
use crate::rt::privileges::Privileges;
use serde::{Deserialize, Serialize};

/// The machine and kernel a run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    /// Host name.
    pub hostname: Option<String>,
    /// `uname -r`.
    pub kernel_release: Option<String>,
    /// `uname -v` (build number, SMP, preemption flavour, date).
    pub kernel_version: Option<String>,
    /// Preemption model: `none`, `voluntary`, `full`, `lazy`, `rt`, or `dynamic` when the
    /// kernel is PREEMPT_DYNAMIC and the mode in force cannot be read.
    pub preempt_model: Option<String>,
    /// True on a PREEMPT_RT kernel (`null` when not known).
    pub preempt_rt: Option<bool>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Online CPUs (list format).
    pub online_cpus: Option<String>,
    /// Number of online CPUs.
    pub cpu_count: Option<usize>,
    /// CPUs isolated with `isolcpus=` (list format), if any.
    pub isolated_cpus: Option<String>,
    /// CPUs in `nohz_full=` (list format), if any.
    pub nohz_full_cpus: Option<String>,
    /// Current clocksource (`tsc` is what you want on x86).
    pub clocksource: Option<String>,
    /// cpufreq governor of CPU 0, if cpufreq is present.
    pub governor: Option<String>,
    /// Hypervisor, if the CPU reports running under one.
    pub virtualization: Option<String>,
    /// `/proc/cmdline`.
    pub kernel_cmdline: Option<String>,
    /// `uname -m` (e.g. `x86_64`).
    pub machine: Option<String>,
    /// NUMA node of each CPU (index = CPU number); all 0 without NUMA.
    pub numa_node_of_cpu: Vec<usize>,
    /// Privileges, limits and RT throttling settings (`null` for imported data).
    pub privileges: Option<Privileges>,
    /// What `rtlab doctor` finds for the measured CPUs, examined over the run's first second
    /// (`null` for imported data and for cyclictest without --rtlab-json).
    #[serde(default)]
    pub doctor: Option<crate::doctor::DoctorReport>,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

pub use crate::doctor::preempt_model;

/// The NUMA node of each CPU below `ncpus`, from `/sys/devices/system/node/node*/cpulist`.
fn numa_nodes(ncpus: usize) -> Vec<usize> {
    let mut nodes = vec![0; ncpus];
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") {
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(node) = name.strip_prefix("node").and_then(|n| n.parse::<usize>().ok()) else { continue };
            let list = std::fs::read_to_string(entry.path().join("cpulist")).unwrap_or_default();
            if let Ok(set) = affinity::CpuSet::parse(&list) {
                for &c in set.cpus().iter().filter(|c| **c < ncpus) {
                    nodes[c] = node;
                }
            }
        }
    }
    nodes
}

impl Environment {
    /// An environment of which nothing is known (imports fill what their file says).
    pub fn unknown() -> Environment {
        Environment {
            hostname: None,
            kernel_release: None,
            kernel_version: None,
            preempt_model: None,
            preempt_rt: None,
            cpu_model: None,
            online_cpus: None,
            cpu_count: None,
            isolated_cpus: None,
            nohz_full_cpus: None,
            clocksource: None,
            governor: None,
            virtualization: None,
            kernel_cmdline: None,
            machine: None,
            numa_node_of_cpu: Vec::new(),
            privileges: None,
            doctor: None,
        }
    }

    /// Reads the environment of this machine.
    pub fn capture() -> Environment {
        let version = read("/proc/sys/kernel/version");
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let realtime = read("/sys/kernel/realtime").as_deref() == Some("1");
        let online = affinity::online_cpus();
        let hypervisor =
            cpuinfo_field(&cpuinfo, "flags").is_some_and(|f| f.split_whitespace().any(|w| w == "hypervisor"));
        let virtualization = hypervisor.then(|| {
            read("/sys/class/dmi/id/product_name")
                .or_else(|| read("/sys/class/dmi/id/sys_vendor"))
                .or_else(|| read("/sys/hypervisor/type"))
                .unwrap_or_else(|| "unknown hypervisor".into())
        });
        Environment {
            hostname: read("/proc/sys/kernel/hostname"),
            kernel_release: read("/proc/sys/kernel/osrelease"),
            preempt_model: preempt_model(
                read("/sys/kernel/debug/sched/preempt").as_deref(),
                version.as_deref(),
                realtime,
            ),
            preempt_rt: Some(realtime || version.as_deref().is_some_and(|v| v.contains("PREEMPT_RT"))),
            kernel_version: version,
            cpu_model: cpuinfo_field(&cpuinfo, "model name").or_else(|| cpuinfo_field(&cpuinfo, "Model")),
            online_cpus: Some(online.to_string()),
            cpu_count: Some(online.len()),
            isolated_cpus: read("/sys/devices/system/cpu/isolated"),
            nohz_full_cpus: read("/sys/devices/system/cpu/nohz_full").filter(|s| s != "(null)"),
            clocksource: read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
            governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            virtualization,
            kernel_cmdline: read("/proc/cmdline"),
            machine: Some(std::env::consts::ARCH.to_string()),
            numa_node_of_cpu: numa_nodes(online.cpus().last().map_or(1, |c| c + 1)),
            privileges: Some(Privileges::current()),
            doctor: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capturing_this_machine_finds_its_kernel_and_cpus() {
        let e = Environment::capture();
        assert!(e.kernel_release.is_some());
        assert!(e.cpu_count >= Some(1));
        assert!(e.online_cpus.is_some_and(|c| !c.is_empty()));
    }
}
