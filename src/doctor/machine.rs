//! Scheduler, memory and noise-source checks.

use super::kernel::own_cgroup;
use super::{rate, Area, Check, Facts, Status};
use crate::rt::affinity::CpuSet;

/// A sysctl-like file: its value, or the check concluded `unknown`.
fn value(c: Check, f: &Facts, path: &str) -> Result<(Check, String), Box<Check>> {
    match f.root.read(path) {
        Ok(v) => Ok((c.evidence(path, &v), v)),
        Err(e) => Err(Box::new(c.unreadable(path, &e))),
    }
}

/// The word in brackets of a sysfs choice (`always [madvise] never` → `madvise`).
fn chosen(text: &str) -> &str {
    text.split_whitespace().find(|w| w.starts_with('[')).map_or(text, |w| w.trim_matches(|c| c == '[' || c == ']'))
}

fn rt_throttling(f: &Facts) -> Check {
    let c = Check::new(Area::Scheduler, "sched.rt_throttling", "RT throttling");
    let (c, runtime) = match value(c, f, "/proc/sys/kernel/sched_rt_runtime_us") {
        Ok(x) => x,
        Err(c) => return *c,
    };
    let (c, period) = match value(c, f, "/proc/sys/kernel/sched_rt_period_us") {
        Ok(x) => x,
        Err(c) => return *c,
    };
    let (r, p): (i64, i64) = (runtime.parse().unwrap_or(-1), period.parse().unwrap_or(1));
    if r < 0 {
        return c.ok("off (sched_rt_runtime_us = -1)").consequence("A real-time task may use all of its CPU; a runaway one starves everything else there (stalld guards against that).");
    }
    c.warn(format!("on: real-time tasks get {} ms of every {} ms", r / 1000, p / 1000))
        .consequence(format!("A real-time task that runs {} ms without sleeping is stopped for {} ms; a periodic probe that sleeps is not affected, busy real-time loads are.", r / 1000, (p - r) / 1000))
        .fix("sysctl -w kernel.sched_rt_runtime_us=-1 (only with stalld or a watchdog of your own)")
}

fn fair_server(f: &Facts) -> Check {
    let c = Check::new(Area::Scheduler, "sched.fair_server", "fair server (dl_server)");
    let dir = "/sys/kernel/debug/sched/fair_server";
    match f.root.list(dir) {
        Err(e) if e == "does not exist" && f.root.list("/sys/kernel/debug/sched").is_ok() => {
            return c
                .evidence(dir, "does not exist")
                .ok("this kernel has no fair server")
                .consequence("Only RT throttling limits real-time tasks.")
        }
        Err(e) => {
            return c.evidence(dir, format!("unreadable: {e}")).unknown(format!(
            "{dir} is not readable ({e}); mount debugfs as root (mount -t debugfs none /sys/kernel/debug) to see it"
        ))
        }
        Ok(_) => {}
    }
    let mut c = c;
    let mut on = Vec::new();
    for &cpu in f.cpus.cpus() {
        let (rp, pp) = (format!("{dir}/cpu{cpu}/runtime"), format!("{dir}/cpu{cpu}/period"));
        match (f.root.read(&rp), f.root.read(&pp)) {
            (Ok(r), Ok(p)) => {
                c = c.evidence(&rp, &r).evidence(&pp, &p);
                let (r, p): (u64, u64) = (r.parse().unwrap_or(0), p.parse().unwrap_or(0));
                if r > 0 {
                    on.push((cpu, r, p));
                }
            }
            (Err(e), _) => return c.unreadable(&rp, &e),
            (_, Err(e)) => return c.unreadable(&pp, &e),
        }
    }
    match on.first() {
        None => c.ok("off on every measured CPU").consequence("Real-time tasks are not preempted to serve SCHED_OTHER tasks."),
        Some((_, r, p)) => c
            .warn(format!("on: SCHED_OTHER tasks get {} ms of every {} ms on CPU {}", r / 1_000_000, p / 1_000_000, CpuSet::from_cpus(on.iter().map(|o| o.0))))
            .cpus(on.iter().map(|o| o.0))
            .consequence("When fair tasks starve, the deadline server preempts real-time tasks to run them: a busy real-time load sees gaps of that length.")
            .fix(format!("for c in {}; do echo 0 > {dir}/cpu$c/runtime; done", f.cpus.cpus().iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" "))),
    }
}

fn autogroup(f: &Facts) -> Check {
    switched_off(
        Check::new(Area::Scheduler, "sched.autogroup", "scheduler autogroup"),
        f,
        "/proc/sys/kernel/sched_autogroup_enabled",
        "nice values of SCHED_OTHER tasks compare across the whole machine.",
        "SCHED_OTHER tasks share CPU time per session first: nice values, and so SCHED_OTHER/BATCH/IDLE measurements, depend on which terminal started what.",
        "sysctl -w kernel.sched_autogroup_enabled=0 (or noautogroup at boot)".into(),
        "not built in (CONFIG_SCHED_AUTOGROUP unset)",
    )
}

/// A kernel switch that a real-time machine keeps off (`0` in `path`): ok when off, warn when
/// on, ok when this kernel lacks it (`absent` says so). `off`/`on` are the consequences.
fn switched_off(c: Check, f: &Facts, path: &str, off: &str, on: &str, fix: String, absent: &str) -> Check {
    match f.root.read(path) {
        Ok(v) => {
            let is_off = v == "0";
            c.evidence(path, &v)
                .verdict(is_off, Status::Warn, if is_off { "off" } else { "on" })
                .consequence(if is_off { off } else { on })
                .fix(fix)
        }
        Err(e) if e == "does not exist" => c.evidence(path, "does not exist").ok(absent),
        Err(e) => c.unreadable(path, &e),
    }
}

fn rt_cgroup(f: &Facts) -> Check {
    let c = Check::new(Area::Scheduler, "sched.rt_cgroup", "real-time budget of rtlab's cgroup");
    let Some((dir, _)) = own_cgroup(f, "cpu") else {
        return c.unknown("/proc/self/cgroup is not readable");
    };
    let path = format!("{dir}/cpu.rt_runtime_us");
    match f.root.read(&path) {
        Ok(v) => {
            let us: i64 = v.parse().unwrap_or(0);
            c.evidence(&path, &v)
                .verdict(us != 0, Status::Fail, if us == 0 { "0 µs: no real-time budget".to_string() } else if us < 0 { "unlimited".to_string() } else { format!("{} ms per period", us / 1000) })
                .consequence(if us == 0 {
                    "SCHED_FIFO/RR/DEADLINE are refused (EPERM) in this cgroup, even to root: the run measures SCHED_OTHER."
                } else {
                    "Real-time policies are allowed in rtlab's cgroup."
                })
                .fix(format!("echo 950000 > {path} (or run rtlab from the root cpu cgroup)"))
        }
        Err(e) if e == "does not exist" => c
            .evidence(&path, "does not exist")
            .ok("no RT group scheduling here: the budget is the global one")
            .consequence("Real-time policies are allowed."),
        Err(e) => c.unreadable(&path, &e),
    }
}

/// Scheduler checks.
pub(super) fn scheduler(f: &Facts) -> Vec<Check> {
    vec![rt_throttling(f), fair_server(f), autogroup(f), rt_cgroup(f)]
}

fn thp(f: &Facts) -> Vec<Check> {
    let base = "/sys/kernel/mm/transparent_hugepage";
    let enabled = match value(
        Check::new(Area::Memory, "memory.thp", "transparent hugepages"),
        f,
        &format!("{base}/enabled"),
    ) {
        Ok((c, v)) => {
            let mode = chosen(&v).to_string();
            c.verdict(mode != "always", Status::Warn, mode.clone())
                .consequence(if mode == "always" {
                    "Any anonymous mapping may be backed by huge pages: khugepaged scans and collapses pages in the background, and a fault may zero 2 MiB at once."
                } else {
                    "Huge pages only where a program asks (madvise) or never: no background collapsing of rtlab's memory."
                })
                .fix(format!("echo madvise > {base}/enabled (or never; transparent_hugepage=madvise at boot)"))
        }
        Err(c) => *c,
    };
    let defrag = match value(
        Check::new(Area::Memory, "memory.thp_defrag", "transparent hugepage defrag"),
        f,
        &format!("{base}/defrag"),
    ) {
        Ok((c, v)) => {
            let mode = chosen(&v).to_string();
            c.verdict(mode != "always", Status::Warn, mode.clone())
                .consequence(if mode == "always" {
                    "An allocation that wants a huge page compacts memory synchronously: stalls of milliseconds."
                } else {
                    "No synchronous compaction for allocations that did not ask for it."
                })
                .fix(format!("echo never > {base}/defrag (or madvise)"))
        }
        Err(c) => *c,
    };
    vec![enabled, defrag]
}

fn ksm(f: &Facts) -> Check {
    let path = "/sys/kernel/mm/ksm/run";
    switched_off(
        Check::new(Area::Memory, "memory.ksm", "kernel samepage merging (KSM)"),
        f,
        path,
        "No page scanning for merging.",
        "ksmd scans memory and merges pages: a later write to a merged page takes a copy-on-write fault.",
        format!("echo 2 > {path} (unmerge and stop)"),
        "not built in",
    )
}

fn numa_balancing(f: &Facts) -> Check {
    switched_off(
        Check::new(Area::Memory, "memory.numa_balancing", "automatic NUMA balancing"),
        f,
        "/proc/sys/kernel/numa_balancing",
        "Pages are not unmapped to track accesses.",
        "The kernel periodically unmaps pages to see which node uses them: the next access takes a NUMA hinting fault, and pages may migrate.",
        "sysctl -w kernel.numa_balancing=0 (or numa_balancing=disable at boot)".into(),
        "not built in",
    )
}

fn swap(f: &Facts) -> Check {
    let c = Check::new(Area::Memory, "memory.swap", "swap in use");
    let (c, text) = match value(c, f, "/proc/meminfo") {
        Ok(x) => x,
        Err(c) => return *c,
    };
    let kb = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    let (Some(total), Some(free)) = (kb("SwapTotal:"), kb("SwapFree:")) else {
        return c.unknown("/proc/meminfo has no SwapTotal/SwapFree");
    };
    let mut c = c;
    if let Some(e) = c.evidence.last_mut() {
        e.value = format!("SwapTotal: {total} kB, SwapFree: {free} kB");
    }
    let used = total - free.min(total);
    c.verdict(used == 0, Status::Warn, if total == 0 { "no swap".to_string() } else { format!("{} MiB of {} MiB swap in use", used / 1024, total / 1024) })
        .consequence(if used == 0 { "No page has to come back from swap." } else { "Memory is short: other programs page in from disk, holding locks and I/O; rtlab locks its own memory (mlockall)." })
        .fix("free memory or add RAM; swapoff -a on a real-time machine")
}

fn stat_interval(f: &Facts) -> Check {
    let c = Check::new(Area::Memory, "memory.stat_interval", "vmstat update interval");
    match value(c, f, "/proc/sys/vm/stat_interval") {
        Ok((c, v)) => {
            let s: u64 = v.parse().unwrap_or(1);
            c.verdict(s >= 10, Status::Warn, format!("{s} s"))
                .consequence("vmstat_update work runs on every CPU with changed counters at this interval (nohz_full CPUs are spared only when quiet).")
                .fix("sysctl -w vm.stat_interval=10")
        }
        Err(c) => *c,
    }
}

/// Memory checks.
pub(super) fn memory(f: &Facts) -> Vec<Check> {
    let mut v = thp(f);
    v.extend([ksm(f), numa_balancing(f), swap(f), stat_interval(f)]);
    v
}

fn watchdog(f: &Facts) -> Check {
    let c = Check::new(Area::Noise, "noise.watchdog", "lockup watchdogs");
    let (c, soft) = match value(c, f, "/proc/sys/kernel/watchdog") {
        Ok(x) => x,
        Err(c) => return *c,
    };
    let (c, nmi) = match f.root.read("/proc/sys/kernel/nmi_watchdog") {
        Ok(v) => (c.evidence("/proc/sys/kernel/nmi_watchdog", &v), v),
        Err(e) => (c.evidence("/proc/sys/kernel/nmi_watchdog", format!("unreadable: {e}")), "0".into()),
    };
    let mut c = c;
    let mut spared = CpuSet::default();
    if let Ok(m) = f.root.read("/proc/sys/kernel/watchdog_cpumask") {
        c = c.evidence("/proc/sys/kernel/watchdog_cpumask", &m);
        spared = f.online.difference(&CpuSet::parse(&m).unwrap_or_default());
    }
    let covered = f.outside(&spared);
    let on: Vec<&str> = [("soft lockup (hrtimer)", soft != "0"), ("NMI (perf counter)", nmi != "0")]
        .iter()
        .filter(|x| x.1)
        .map(|x| x.0)
        .collect();
    if on.is_empty() || covered.is_empty() {
        return c
            .ok(if on.is_empty() {
                "off".to_string()
            } else {
                format!("{} on, but not on the measured CPUs", on.join(" and "))
            })
            .consequence("No watchdog timer or NMI fires on the measured CPUs.");
    }
    c.warn(format!("{} on", on.join(" and ")))
        .cpus(covered.cpus().to_vec())
        .consequence("The watchdog's hrtimer (and, with nmi_watchdog, a perf NMI) fires on every CPU every few seconds.")
        .fix("sysctl -w kernel.watchdog=0 kernel.nmi_watchdog=0 (or nowatchdog at boot; watchdog_cpumask to spare only some CPUs)")
}

fn stalld(f: &Facts) -> Check {
    let c = Check::new(Area::Noise, "noise.stalld", "stalld");
    let procs = match f.processes(&["stalld"]) {
        Ok(p) => p,
        Err(e) => return c.unreadable("/proc", &e),
    };
    let runtime = f.root.read("/proc/sys/kernel/sched_rt_runtime_us").ok();
    let unthrottled = runtime.as_deref().is_some_and(|r| r.starts_with('-'));
    match procs.first() {
        Some((pid, _)) => c.evidence(format!("/proc/{pid}/comm"), "stalld").ok(format!("running (pid {pid})")).consequence("Starved tasks get short boosts (a few µs, SCHED_DEADLINE) on the CPU where they wait, including under a busy real-time task."),
        None => {
            let c = c.evidence("/proc/*/comm", "no stalld process");
            c.verdict(!unthrottled, Status::Warn, if unthrottled { "not running, and RT throttling is off" } else { "not running (RT throttling guards against starvation)" })
                .consequence(if unthrottled {
                    "A busy real-time task starves the kworkers and ksoftirqd of its CPU for as long as it runs: the machine can hang."
                } else {
                    "RT throttling gives other tasks the remaining share of each period."
                })
                .fix("apt install stalld && systemctl enable --now stalld, or turn RT throttling back on (sysctl -w kernel.sched_rt_runtime_us=950000)")
        }
    }
}

fn virtualization(f: &Facts) -> Check {
    let c = Check::new(Area::Noise, "noise.virtualization", "virtualization");
    if !f.x86() && f.cpuinfo.is_empty() {
        return c.unknown("/proc/cpuinfo is not readable");
    }
    let flagged = f.cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"));
    let mut c = c;
    if flagged {
        c = c.evidence("/proc/cpuinfo", "flags: hypervisor");
    }
    let mut name = None;
    for p in ["/sys/hypervisor/type", "/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"] {
        if let Ok(v) = f.root.read(p) {
            c = c.evidence(p, &v);
            name.get_or_insert(v);
        }
    }
    let guest = flagged || f.root.read("/sys/hypervisor/type").is_ok();
    if !guest {
        let probe = if f.x86() { "no hypervisor flag in /proc/cpuinfo" } else { "no /sys/hypervisor/type" };
        return c
            .evidence(if f.x86() { "/proc/cpuinfo" } else { "/sys/hypervisor/type" }, probe)
            .ok("bare metal (no hypervisor seen)")
            .consequence("No host can preempt the CPUs.");
    }
    c.warn(format!("a guest of {}", name.unwrap_or_else(|| "a hypervisor".into())))
        .consequence("The host can deschedule a vCPU at any moment: multi-millisecond spikes that no tuning inside the guest removes.")
        .fix("measure on bare metal, or pin the vCPUs to isolated host CPUs (and run the host with the same tuning)")
}

fn steal(f: &Facts) -> Check {
    let c = Check::new(Area::Noise, "noise.steal", "steal time");
    let (before, after) = match (&f.before.stat, &f.after.stat) {
        (Ok(b), Ok(a)) => (b, a),
        (Err(e), _) | (_, Err(e)) => return c.unknown(e.clone()),
    };
    let mut lines = Vec::new();
    let mut now = Vec::new();
    let mut since_boot = 0.0_f64;
    for &cpu in f.cpus.cpus() {
        let (Some(b), Some(a)) = (before.get(&cpu), after.get(&cpu)) else { continue };
        let boot = if a.total() > 0 { a.steal as f64 / a.total() as f64 } else { 0.0 };
        since_boot = since_boot.max(boot);
        let dt = a.total().saturating_sub(b.total());
        let ds = a.steal.saturating_sub(b.steal);
        let frac = if dt > 0 { ds as f64 / dt as f64 } else { 0.0 };
        lines.push(format!("CPU{cpu}: {:.2}% since boot, {:.1}% over the sample", boot * 100.0, frac * 100.0));
        if ds > 0 {
            now.push((cpu, frac));
        }
    }
    if lines.is_empty() {
        return c.unknown("/proc/stat has no line for the measured CPUs");
    }
    let c = c.evidence("/proc/stat", lines.join("; "));
    if !now.is_empty() {
        return c
            .warn(now.iter().map(|(c, x)| format!("the host took {:.1}% of CPU {c} during the sample", x * 100.0)).collect::<Vec<_>>().join("; "))
            .cpus(now.iter().map(|n| n.0))
            .alarm()
            .consequence("While the host runs something else, the vCPU does not run at all: every wakeup due then is late by the whole gap.")
            .fix("give the guest dedicated host CPUs (pinning, isolcpus on the host), or measure on bare metal");
    }
    c.verdict(
        since_boot < 0.001,
        Status::Warn,
        if since_boot < 0.001 {
            "none".to_string()
        } else {
            format!("none over the sample, {:.2}% since boot", since_boot * 100.0)
        },
    )
    .consequence("The host has taken time from these vCPUs before: spikes come and go with the host's load.")
    .fix("give the guest dedicated host CPUs, or measure on bare metal")
}

fn smi(f: &Facts) -> Check {
    let c = Check::new(Area::Noise, "noise.smi", "system management interrupts (SMIs)");
    if f.arm() {
        return c.unknown(
            "no SMIs on Arm, and no counter for what stands in for them: firmware runs at EL3 through SMC calls (PSCI, TrustZone) that Linux cannot count; a spike no event explains may be one",
        );
    }
    if !f.x86() {
        return c.unknown(format!(
            "not an x86 machine ({}): no SMI counter",
            f.arch.as_deref().unwrap_or("architecture unknown")
        ));
    }
    if !f.cpuinfo.contains("GenuineIntel") {
        return c
            .evidence("/proc/cpuinfo", "vendor_id is not GenuineIntel")
            .unknown("MSR 0x34 (SMI count) exists on Intel CPUs only");
    }
    let mut c = c;
    let mut seen = Vec::new();
    for &cpu in f.cpus.cpus() {
        match (f.before.smi.get(&cpu), f.after.smi.get(&cpu)) {
            (Some(Ok(b)), Some(Ok(a))) => {
                c = c.evidence(format!("/dev/cpu/{cpu}/msr"), format!("MSR 0x34: {b} then {a}"));
                seen.push((cpu, a.saturating_sub(*b)));
            }
            (Some(Err(e)), _) | (_, Some(Err(e))) => {
                let (path, why) = e.split_once(": ").unwrap_or((e.as_str(), ""));
                return c
                    .unreadable(path, why)
                    .fix("modprobe msr, and run as root on bare metal (hypervisors hide the counter)");
            }
            _ => {}
        }
    }
    let during: u64 = seen.iter().map(|s| s.1).sum();
    let s = f.seconds();
    c.verdict(during == 0, Status::Warn, if during == 0 { "none during the sample".to_string() } else { format!("{during} SMIs in {s:.2} s ({}/s)", rate(during as f64 / s.max(1e-9))) })
        .cpus(seen.iter().filter(|x| x.1 > 0).map(|x| x.0))
        .alarm()
        .consequence("An SMI stops every CPU for the firmware, invisible to the kernel: each one is a spike of tens to hundreds of µs.")
        .fix("in the firmware setup, turn off what polls through SMM (USB legacy, power and thermal management, error reporting); ask the vendor for a real-time BIOS profile")
}

fn mce(f: &Facts) -> Check {
    let c = Check::new(Area::Noise, "noise.mce", "machine-check polling");
    let mut c = c;
    let mut polling = Vec::new();
    for &cpu in f.cpus.cpus() {
        let p = format!("/sys/devices/system/machinecheck/machinecheck{cpu}/check_interval");
        match f.root.read(&p) {
            Ok(v) => {
                c = c.evidence(&p, &v);
                if v != "0" {
                    polling.push((cpu, v));
                }
            }
            Err(e) if e == "does not exist" && f.arm() => {
                return c.evidence(&p, "does not exist").ok(
                    "no machine-check polling on Arm: RAS errors arrive as interrupts (APEI/SDEI, EDAC), no timer polls for them",
                )
            }
            Err(e) if e == "does not exist" => {
                return c.evidence(&p, "does not exist").unknown(if f.x86() {
                    "no machine-check device (CONFIG_X86_MCE unset, or a hypervisor without MCE)"
                } else {
                    "not an x86 machine: no machine-check polling timer"
                })
            }
            Err(e) => return c.unreadable(&p, &e),
        }
    }
    match polling.first() {
        None => c.ok("off").consequence("No machine-check polling timer fires on the measured CPUs."),
        Some((_, v)) => c
            .warn(format!("every {v} s on CPU {}", CpuSet::from_cpus(polling.iter().map(|p| p.0))))
            .cpus(polling.iter().map(|p| p.0))
            .consequence("A timer reads the machine-check banks on each CPU at this interval (tens of µs with many banks).")
            .fix("for f in /sys/devices/system/machinecheck/machinecheck*/check_interval; do echo 0 > $f; done (or mce=ignore_ce at boot)"),
    }
}

/// Noise-source checks.
pub(super) fn noise(f: &Facts) -> Vec<Check> {
    vec![watchdog(f), stalld(f), virtualization(f), steal(f), smi(f), mce(f)]
}
