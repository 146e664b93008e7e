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

/// A task the kernel shows running (state `R`) on a CPU: for rtla's `--dump-tasks`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningTask {
    /// The CPU it last ran on (`/proc/PID/task/TID/stat` field 39).
    pub cpu: usize,
    /// Its name (`comm`).
    pub comm: String,
    /// Its thread id.
    pub tid: i32,
}

/// The task each CPU of `cpus` is running now, from `/proc` (`proc_root`): the runnable
/// thread whose last CPU it is (several: the lowest id; none: the CPU's idle task,
/// `swapper/N:0`).
pub fn running_tasks(proc_root: &std::path::Path, cpus: &[usize]) -> Vec<RunningTask> {
    let mut found: Vec<RunningTask> = Vec::new();
    let pids = std::fs::read_dir(proc_root).into_iter().flatten().flatten();
    for pid in pids.filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit())) {
        for task in std::fs::read_dir(pid.path().join("task")).into_iter().flatten().flatten() {
            let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else { continue };
            if let Some(t) = running_in(&stat).filter(|t| cpus.contains(&t.cpu)) {
                found.push(t);
            }
        }
    }
    cpus.iter()
        .map(|&cpu| {
            found.iter().filter(|t| t.cpu == cpu).min_by_key(|t| t.tid).cloned().unwrap_or(RunningTask {
                cpu,
                comm: format!("swapper/{cpu}"),
                tid: 0,
            })
        })
        .collect()
}

/// The task a `stat` line describes, when its state is `R`.
fn running_in(stat: &str) -> Option<RunningTask> {
    let fields = crate::rt::process::fields_after_comm(stat.as_bytes())?;
    let (tid, rest) = stat.split_once(" (")?;
    let comm = rest.rsplit_once(')')?.0;
    (fields.first()? == "R").then_some(())?;
    Some(RunningTask { cpu: fields.get(36)?.parse().ok()?, comm: comm.to_string(), tid: tid.trim().parse().ok()? })
}

#[cfg(test)]
mod running_tests {
    use super::*;

    #[test]
    fn the_running_task_of_each_cpu_is_read_from_proc_and_an_idle_cpu_names_its_swapper() {
        let dir = tempfile::tempdir().unwrap();
        let task = |pid: i32, tid: i32, comm: &str, state: &str, cpu: usize| {
            let d = dir.path().join(pid.to_string()).join("task").join(tid.to_string());
            std::fs::create_dir_all(&d).unwrap();
            let mut f: Vec<String> = (0..50).map(|_| "0".to_string()).collect();
            f[0] = state.to_string();
            f[36] = cpu.to_string();
            std::fs::write(d.join("stat"), format!("{tid} ({comm}) {}\n", f.join(" "))).unwrap();
        };
        task(10, 10, "busy (x)", "R", 1);
        task(10, 11, "sleeper", "S", 0);
        task(20, 20, "other", "R", 1);
        let got = running_tasks(dir.path(), &[0, 1]);
        assert_eq!(got[0], RunningTask { cpu: 0, comm: "swapper/0".into(), tid: 0 });
        assert_eq!(got[1], RunningTask { cpu: 1, comm: "busy (x)".into(), tid: 10 }, "a ')' in a name is kept");
    }
}
