//! What the process may do, and why not: root, CAP_SYS_NICE, RLIMIT_RTPRIO, RLIMIT_MEMLOCK,
//! RT throttling, containers.

use super::affinity::CpuSet;
use serde::{Deserialize, Serialize};

/// Linux capability number of CAP_SYS_NICE.
const CAP_SYS_NICE: u32 = 23;
/// Linux capability number of CAP_IPC_LOCK.
const CAP_IPC_LOCK: u32 = 14;

/// The privileges that decide whether real-time scheduling, memory locking and the PM QoS
/// request are allowed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Privileges {
    /// Effective user id.
    pub euid: u32,
    /// CAP_SYS_NICE is in the effective capability set.
    pub cap_sys_nice: bool,
    /// CAP_IPC_LOCK is in the effective capability set.
    pub cap_ipc_lock: bool,
    /// RLIMIT_RTPRIO soft limit (the highest RT priority allowed without CAP_SYS_NICE).
    pub rlimit_rtprio: u64,
    /// RLIMIT_MEMLOCK soft limit in bytes (`null` = unlimited).
    pub rlimit_memlock_bytes: Option<u64>,
    /// `/proc/sys/kernel/sched_rt_runtime_us` (-1 = RT throttling disabled).
    pub sched_rt_runtime_us: Option<i64>,
    /// `/proc/sys/kernel/sched_rt_period_us`.
    pub sched_rt_period_us: Option<i64>,
    /// The container runtime rtlab appears to run in, if any.
    pub container: Option<String>,
}

fn rlimit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `r` is a valid, writable rlimit.
    if unsafe { libc::getrlimit(resource, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(r.rlim_cur)
}

fn effective_caps() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("CapEff:")).and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

fn read_i64(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Detects a container from the usual markers under `root` (`/.dockerenv`,
/// `/run/.containerenv`, `container=` in init's or this process's environment as
/// systemd-nspawn and LXC set it, cgroup paths): the runtime's name.
pub fn detect_container(root: &std::path::Path) -> Option<String> {
    if root.join(".dockerenv").exists() {
        return Some("docker".into());
    }
    if root.join("run/.containerenv").exists() {
        return Some("podman".into());
    }
    for environ in ["proc/1/environ", "proc/self/environ"] {
        let env = std::fs::read(root.join(environ)).unwrap_or_default();
        let found = env.split(|b| *b == 0).find_map(|kv| kv.strip_prefix(b"container="));
        if let Some(c) = found.filter(|c| !c.is_empty()) {
            return Some(String::from_utf8_lossy(c).into_owned());
        }
    }
    let cg = std::fs::read_to_string(root.join("proc/1/cgroup")).unwrap_or_default();
    ["docker", "kubepods", "lxc", "containerd"].iter().find(|k| cg.contains(*k)).map(|k| k.to_string())
}

impl Privileges {
    /// Reads the privileges of the running process.
    pub fn current() -> Privileges {
        let caps = effective_caps();
        Privileges {
            // SAFETY: geteuid has no arguments and cannot fail.
            euid: unsafe { libc::geteuid() },
            cap_sys_nice: caps & (1 << CAP_SYS_NICE) != 0,
            cap_ipc_lock: caps & (1 << CAP_IPC_LOCK) != 0,
            rlimit_rtprio: rlimit(libc::RLIMIT_RTPRIO).unwrap_or(u64::MAX),
            rlimit_memlock_bytes: rlimit(libc::RLIMIT_MEMLOCK),
            sched_rt_runtime_us: read_i64("/proc/sys/kernel/sched_rt_runtime_us"),
            sched_rt_period_us: read_i64("/proc/sys/kernel/sched_rt_period_us"),
            container: detect_container(std::path::Path::new("/")),
        }
    }

    /// A sentence saying why a real-time policy was refused, with the fix.
    pub fn explain_rt_denied(&self) -> String {
        let mut why = Vec::new();
        if self.euid != 0 {
            why.push(format!("not running as root (uid {})", self.euid));
        }
        if !self.cap_sys_nice {
            why.push("no CAP_SYS_NICE".to_string());
        }
        why.push(format!("RLIMIT_RTPRIO is {}", self.rlimit_rtprio));
        if let Some(c) = &self.container {
            why.push(format!("running in a {c} container"));
        }
        if self.sched_rt_runtime_us == Some(0) {
            why.push("sched_rt_runtime_us is 0 (no RT time at all)".into());
        }
        format!(
            "{}; fix: run as root, or `setcap cap_sys_nice,cap_ipc_lock+ep $(which rtlab)`, or raise \
             rtprio in /etc/security/limits.conf (a container needs --cap-add SYS_NICE)",
            why.join(", ")
        )
    }

    /// A sentence saying why memory locking failed, with the fix.
    pub fn explain_mlock_denied(&self) -> String {
        let limit = match self.rlimit_memlock_bytes {
            Some(b) => format!("RLIMIT_MEMLOCK is {} KiB", b / 1024),
            None => "RLIMIT_MEMLOCK is unlimited".into(),
        };
        format!(
            "{limit}{}; fix: run as root, raise memlock in /etc/security/limits.conf or `ulimit -l unlimited`",
            if self.cap_ipc_lock { "" } else { " and there is no CAP_IPC_LOCK" }
        )
    }
}

/// Why real-time threads that can keep CPUs busy are refused (the one rule of `noise`, `load`,
/// task sets and rt-app files): they would cover every online CPU — the CPUs they are pinned to
/// (`covered`) with as many unpinned ones as the rest (`unpinned`) — while RT throttling is off
/// (`sched_rt_runtime_us` = -1), starving the kernel's own threads; `None` when allowed (a CPU
/// is left, throttling protects, or `force`). `what` names the threads, `fix` says what to change.
pub fn refuse_rt_starvation(
    what: &str,
    (covered, unpinned): (&CpuSet, usize),
    online: &CpuSet,
    rt_runtime_us: Option<i64>,
    (force, fix): (bool, &str),
) -> Option<String> {
    let left = online.difference(covered).len();
    let every = !online.is_empty() && (unpinned >= left);
    (every && rt_runtime_us == Some(-1) && !force).then(|| {
        format!(
            "refusing {what} on every CPU while RT throttling is disabled (sched_rt_runtime_us = -1): it would \
             starve the kernel's own threads and can hang the machine; {fix}, or pass --force"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rt_threads_that_cover_every_cpu_without_throttling_are_refused_by_one_rule() {
        let online = CpuSet::from_cpus([0, 1]);
        let refuse = |covered: &[usize], free: usize, rt: Option<i64>, force: bool| {
            refuse_rt_starvation("x", (&CpuSet::from_cpus(covered.iter().copied()), free), &online, rt, (force, "fix"))
        };
        assert!(refuse(&[0, 1], 0, Some(-1), false).is_some(), "pinned on both");
        assert!(refuse(&[0], 1, Some(-1), false).is_some(), "one pinned, one free");
        assert!(refuse(&[], 2, Some(-1), false).is_some(), "two free");
        assert!(refuse(&[0], 0, Some(-1), false).is_none(), "a CPU left");
        assert!(refuse(&[], 0, Some(-1), false).is_none(), "nothing busy");
        assert!(refuse(&[0, 1], 0, Some(950_000), false).is_none(), "throttling protects");
        assert!(refuse(&[0, 1], 0, Some(-1), true).is_none(), "forced");
    }
}
