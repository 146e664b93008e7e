//! Rights checks: root, CAP_SYS_NICE, CAP_IPC_LOCK, RLIMIT_RTPRIO, RLIMIT_MEMLOCK, containers.

use super::{Area, Check, Facts, Status};

const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_NICE: u32 = 23;

/// What `/proc/self/status` and `/proc/self/limits` say of rtlab's process.
struct Process {
    euid: Option<u32>,
    caps: Result<u64, String>,
    /// Soft limits: `None` is unlimited.
    rtprio: Result<Option<u64>, String>,
    memlock: Result<Option<u64>, String>,
}

fn limit(limits: &Result<String, String>, name: &str) -> Result<Option<u64>, String> {
    let text = limits.as_ref().map_err(|e| format!("/proc/self/limits: {e}"))?;
    let line =
        text.lines().find(|l| l.starts_with(name)).ok_or_else(|| format!("/proc/self/limits has no '{name}' line"))?;
    let soft = line[name.len()..].split_whitespace().next().unwrap_or("");
    match soft {
        "unlimited" => Ok(None),
        n => n.parse().map(Some).map_err(|_| format!("/proc/self/limits: '{name}' reads '{n}'")),
    }
}

impl Process {
    fn read(f: &Facts) -> Process {
        let status = f.root.read("/proc/self/status");
        let field = |k: &str| {
            status.as_ref().ok().and_then(|s| s.lines().find_map(|l| l.strip_prefix(k)).map(|v| v.trim().to_string()))
        };
        let limits = f.root.read("/proc/self/limits");
        Process {
            euid: field("Uid:").and_then(|v| v.split_whitespace().nth(1).and_then(|u| u.parse().ok())),
            caps: match (&status, field("CapEff:")) {
                (Err(e), _) => Err(format!("/proc/self/status: {e}")),
                (Ok(_), None) => Err("/proc/self/status has no CapEff line".into()),
                (Ok(_), Some(v)) => {
                    u64::from_str_radix(&v, 16).map_err(|_| format!("/proc/self/status: CapEff reads '{v}'"))
                }
            },
            rtprio: limit(&limits, "Max realtime priority"),
            memlock: limit(&limits, "Max locked memory"),
        }
    }

    fn has(&self, cap: u32) -> Option<bool> {
        self.caps.as_ref().ok().map(|c| c & (1 << cap) != 0)
    }
}

fn unknown_from(c: Check, e: &str) -> Check {
    match e.split_once(": ") {
        Some((path, why)) if path.starts_with('/') => c.unreadable(path, why),
        _ => c.unknown(e.to_string()),
    }
}

fn root(p: &Process) -> Check {
    let c = Check::new(Area::Rights, "rights.root", "root");
    match p.euid {
        None => c.unreadable("/proc/self/status", "no Uid line"),
        Some(u) => c
            .evidence("/proc/self/status", format!("Uid (effective): {u}"))
            .verdict(u == 0, Status::Warn, if u == 0 { "running as root".to_string() } else { format!("running as uid {u}") })
            .consequence(if u == 0 {
                "rtlab can hold /dev/cpu_dma_latency, read /proc/timer_list and the MSRs."
            } else {
                "Without root rtlab cannot hold /dev/cpu_dma_latency or read some of what the doctor checks (those checks say unknown)."
            })
            .fix("sudo rtlab … (or grant the capabilities: setcap cap_sys_nice,cap_ipc_lock+ep $(command -v rtlab))"),
    }
}

fn sys_nice(p: &Process) -> Check {
    let c = Check::new(Area::Rights, "rights.cap_sys_nice", "CAP_SYS_NICE and RLIMIT_RTPRIO");
    let caps = match &p.caps {
        Ok(c) => *c,
        Err(e) => return unknown_from(c, e),
    };
    let c = c.evidence("/proc/self/status", format!("CapEff: {caps:016x}"));
    let c = match &p.rtprio {
        Ok(v) => c.evidence(
            "/proc/self/limits",
            format!("Max realtime priority: {}", v.map_or("unlimited".into(), |v| v.to_string())),
        ),
        Err(e) => c.evidence("/proc/self/limits", format!("unreadable: {e}")),
    };
    if p.has(CAP_SYS_NICE) == Some(true) {
        return c
            .ok("CAP_SYS_NICE held: every real-time priority is allowed")
            .consequence("SCHED_FIFO/RR/DEADLINE at any priority.");
    }
    match &p.rtprio {
        Ok(None) => c.ok("no CAP_SYS_NICE, RLIMIT_RTPRIO unlimited").consequence("SCHED_FIFO/RR at any priority (SCHED_DEADLINE still needs the capability)."),
        Ok(Some(0)) => c
            .fail("no CAP_SYS_NICE and RLIMIT_RTPRIO is 0")
            .consequence("Real-time policies are refused: threads run SCHED_OTHER and the figures say nothing about real-time behaviour.")
            .fix("run as root, or set a limit: '@realtime - rtprio 99' in /etc/security/limits.d/ (then log in again), or setcap cap_sys_nice+ep $(command -v rtlab)"),
        Ok(Some(n)) => c
            .warn(format!("no CAP_SYS_NICE; RLIMIT_RTPRIO allows priorities up to {n}"))
            .consequence(format!("SCHED_FIFO/RR above {n} and SCHED_DEADLINE are refused."))
            .fix("raise the limit ('@realtime - rtprio 99' in /etc/security/limits.d/) or run as root"),
        Err(e) => c.unknown(format!("no CAP_SYS_NICE, and {e}")),
    }
}

fn ipc_lock(p: &Process) -> Check {
    let c = Check::new(Area::Rights, "rights.memlock", "CAP_IPC_LOCK and RLIMIT_MEMLOCK");
    let caps = match &p.caps {
        Ok(c) => *c,
        Err(e) => return unknown_from(c, e),
    };
    let c = c.evidence("/proc/self/status", format!("CapEff: {caps:016x}"));
    let c = match &p.memlock {
        Ok(v) => c.evidence(
            "/proc/self/limits",
            format!("Max locked memory: {}", v.map_or("unlimited".into(), |v| format!("{v} bytes"))),
        ),
        Err(e) => c.evidence("/proc/self/limits", format!("unreadable: {e}")),
    };
    if p.has(CAP_IPC_LOCK) == Some(true) {
        return c
            .ok("CAP_IPC_LOCK held: mlockall has no limit")
            .consequence("rtlab's memory stays resident: no page fault in the loop.");
    }
    match &p.memlock {
        Ok(None) => c.ok("no CAP_IPC_LOCK, RLIMIT_MEMLOCK unlimited").consequence("mlockall succeeds."),
        Ok(Some(n)) => c
            .warn(format!("no CAP_IPC_LOCK; RLIMIT_MEMLOCK is {} KiB", n / 1024))
            .consequence("mlockall(MCL_CURRENT|MCL_FUTURE) fails once the process outgrows the limit: page faults can add latency to the loop.")
            .fix("'@realtime - memlock unlimited' in /etc/security/limits.d/, ulimit -l unlimited, or run as root"),
        Err(e) => c.unknown(format!("no CAP_IPC_LOCK, and {e}")),
    }
}

fn container(f: &Facts) -> Check {
    let c = Check::new(Area::Rights, "rights.container", "container");
    let markers = ["/.dockerenv", "/run/.containerenv", "/proc/1/environ", "/proc/1/cgroup"];
    match crate::rt::privileges::detect_container(&f.root.path("/")) {
        Some(kind) => c
            .evidence(markers.iter().find(|m| f.root.exists(m)).copied().unwrap_or("/proc/1/cgroup"), format!("container: {kind}"))
            .warn(format!("inside a {kind} container"))
            .consequence("The host's kernel, IRQ routing and isolation decide the latency; /proc/sys and /sys show the host's values or are read-only, and real-time policies need the container to allow them.")
            .fix("run on the host, or start the container with --cap-add SYS_NICE --cap-add IPC_LOCK --ulimit rtprio=99 --ulimit memlock=-1 --cpuset-cpus CPUS"),
        None => c.evidence("/.dockerenv, /run/.containerenv, /proc/1/cgroup", "no container marker").ok("not in a container").consequence("The settings read are the machine's own."),
    }
}

/// Rights checks.
pub(super) fn checks(f: &Facts) -> Vec<Check> {
    let p = Process::read(f);
    vec![root(&p), sys_nice(&p), ipc_lock(&p), container(f)]
}
