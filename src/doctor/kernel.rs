//! Kernel checks (preemption, tick, timers, clocksource) and isolation checks (isolcpus,
//! nohz_full, RCU callbacks, IRQ and workqueue affinity, cpusets, timer migration, RCU).

use super::{mask_of, parse_mask, Area, Check, Facts, Status, Sysroot};
use crate::rt::affinity::CpuSet;

/// The preemption model from the debugfs switch (`none voluntary (full) lazy`), else from the
/// kernel version string; `rt` when `/sys/kernel/realtime` says 1.
pub fn preempt_model(debugfs_preempt: Option<&str>, version: Option<&str>, realtime_flag: bool) -> Option<String> {
    if realtime_flag {
        return Some("rt".into());
    }
    if let Some(s) = debugfs_preempt {
        if let Some(m) = s.split_whitespace().find(|w| w.starts_with('(')) {
            return Some(m.trim_matches(|c| c == '(' || c == ')').to_string());
        }
    }
    let v = version?;
    let words: Vec<&str> = v.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    Some(
        if has("PREEMPT_RT") {
            "rt"
        } else if has("PREEMPT_DYNAMIC") {
            "dynamic"
        } else if has("PREEMPT_LAZY") {
            "lazy"
        } else if has("PREEMPT") {
            "full"
        } else {
            "none or voluntary"
        }
        .to_string(),
    )
}

/// The preemption mode a PREEMPT_DYNAMIC kernel boots in without `preempt=`: the one its
/// configuration selects (`CONFIG_PREEMPT_NONE=y` → `NONE`; full preemption is
/// `CONFIG_PREEMPT=y`), and that option.
fn default_mode(f: &Facts) -> Option<(&'static str, &'static str)> {
    [
        ("NONE", "CONFIG_PREEMPT_NONE"),
        ("VOLUNTARY", "CONFIG_PREEMPT_VOLUNTARY"),
        ("PREEMPT", "CONFIG_PREEMPT"),
        ("LAZY", "CONFIG_PREEMPT_LAZY"),
    ]
    .into_iter()
    .find(|(_, option)| f.config(option) == Ok(Some("y")))
}

const RT_FIX: &str = "boot a PREEMPT_RT kernel (Debian: apt install linux-image-rt-amd64, or linux-image-rt-arm64)";

fn preempt(f: &Facts) -> Check {
    let c = Check::new(Area::Kernel, "kernel.preempt", "preemption model");
    let version = f.root.read("/proc/sys/kernel/version");
    let realtime = f.root.read("/sys/kernel/realtime");
    let debugfs = f.root.read("/sys/kernel/debug/sched/preempt");
    let mut c = match &version {
        Ok(v) => c.evidence("/proc/sys/kernel/version", v),
        Err(e) => c.evidence("/proc/sys/kernel/version", format!("unreadable: {e}")),
    };
    if let Ok(r) = &realtime {
        c = c.evidence("/sys/kernel/realtime", r);
    }
    c = match &debugfs {
        Ok(d) => c.evidence("/sys/kernel/debug/sched/preempt", d),
        Err(e) => c.evidence("/sys/kernel/debug/sched/preempt", format!("unreadable: {e}")),
    };
    let mut model = preempt_model(debugfs.as_deref().ok(), version.as_deref().ok(), realtime.as_deref() == Ok("1"));
    let mut how = String::new();
    if model.as_deref() == Some("dynamic") {
        // Without debugfs, the mode in force is the preempt= parameter, else the build default.
        if let Some(p) = f.param("preempt").filter(|p| !p.is_empty()) {
            c = c.evidence("/proc/cmdline", format!("preempt={p}"));
            how = format!(" (from preempt={p}; debugfs not readable to confirm)");
            model = Some(p);
        } else if let Some((mode, option)) = default_mode(f) {
            let name = match mode {
                "PREEMPT" => "full",
                m => m,
            }
            .to_lowercase();
            let file = f.config.as_ref().map(|(p, _)| p.clone()).unwrap_or_default();
            c = c.evidence(file, format!("CONFIG_PREEMPT_DYNAMIC=y {option}=y"));
            how = format!(" (the build's default, {option}=y, no preempt= parameter; mount debugfs to confirm)");
            model = Some(name);
        }
    }
    let dynamic = version.as_deref().is_ok_and(|v| v.contains("PREEMPT_DYNAMIC"));
    let dyn_fix = if dynamic {
        format!(
            "add preempt=full to the kernel command line (this PREEMPT_DYNAMIC kernel switches at boot), or {RT_FIX}"
        )
    } else {
        RT_FIX.to_string()
    };
    match model.as_deref() {
        Some("rt") => c.ok("PREEMPT_RT").consequence("Kernel code is preemptible almost everywhere: wakeup latency is bounded."),
        Some(m @ ("full" | "lazy")) => c
            .warn(format!("{}preemption {m}{how}, not PREEMPT_RT", if dynamic { "PREEMPT_DYNAMIC, " } else { "" }))
            .consequence("Spinlocks, softirqs and interrupt handlers still hold off a woken real-time task: expect worst cases of tens to hundreds of µs that PREEMPT_RT would bound.")
            .fix(RT_FIX),
        Some(m @ ("none" | "voluntary" | "none or voluntary")) => c
            .fail(format!("{}preemption {m}{how}", if dynamic { "PREEMPT_DYNAMIC, " } else { "" }))
            .consequence("A woken real-time task waits until the running kernel code reaches a preemption point: milliseconds are possible.")
            .fix(dyn_fix),
        Some(_) => c
            .warn("PREEMPT_DYNAMIC, mode in force unreadable (debugfs not mounted, no kernel configuration)")
            .consequence("The mode may be none or voluntary, where a woken task waits for kernel code to reach a preemption point.")
            .fix(format!("mount -t debugfs none /sys/kernel/debug to read it; {dyn_fix}")),
        None => c.unknown("neither /proc/sys/kernel/version nor /sys/kernel/realtime is readable"),
    }
}

fn config_evidence(c: Check, f: &Facts, options: &[&str]) -> Check {
    match &f.config {
        Ok((file, _)) => {
            let v: Vec<String> =
                options.iter().map(|o| format!("{o}={}", f.config(o).ok().flatten().unwrap_or("(not set)"))).collect();
            c.evidence(file.clone(), v.join(" "))
        }
        Err(e) => c.evidence("/proc/config.gz", format!("unreadable: {e}")),
    }
}

fn hz(f: &Facts) -> Check {
    let c = config_evidence(Check::new(Area::Kernel, "kernel.hz", "tick rate (CONFIG_HZ)"), f, &["CONFIG_HZ"]);
    match f.config("CONFIG_HZ") {
        Err(e) => c.unknown(format!("the kernel configuration is not readable: {e}")),
        Ok(None) => c.unknown("the kernel configuration has no CONFIG_HZ"),
        Ok(Some(v)) => {
            let n: u32 = v.parse().unwrap_or(0);
            let period = if n > 0 { format!("{:.0} ms", 1000.0 / f64::from(n)) } else { "?".into() };
            c.verdict(n > 100, Status::Warn, format!("HZ={v}: a tick every {period}"))
                .consequence(if n > 100 {
                    "The tick paces SCHED_OTHER preemption and SCHED_RR slices; timers themselves are high-resolution and do not wait for it."
                } else {
                    "SCHED_RR slices and SCHED_OTHER preemption move in 10 ms steps."
                })
                .fix("rebuild the kernel with CONFIG_HZ_1000=y (PREEMPT_RT builds usually do)")
        }
    }
}

fn nohz(f: &Facts) -> Check {
    let c = config_evidence(
        Check::new(Area::Kernel, "kernel.nohz", "tickless mode (NO_HZ)"),
        f,
        &["CONFIG_NO_HZ_IDLE", "CONFIG_NO_HZ_FULL", "CONFIG_HZ_PERIODIC"],
    );
    let Ok(_) = f.config("CONFIG_HZ") else {
        return c.unknown("the kernel configuration is not readable");
    };
    let full = f.config("CONFIG_NO_HZ_FULL") == Ok(Some("y"));
    let idle = f.config("CONFIG_NO_HZ_IDLE") == Ok(Some("y"));
    let mode = if full {
        "NO_HZ_FULL (the tick can stop on nohz_full CPUs that run one task)"
    } else if idle {
        "NO_HZ_IDLE (the tick stops on idle CPUs only)"
    } else {
        "HZ_PERIODIC (the tick never stops)"
    };
    let asked = f.param("nohz_full");
    match (asked, full) {
        (Some(p), false) => c
            .warn(format!("nohz_full={p} is on the command line but this kernel is {mode}"))
            .consequence("The parameter is ignored: the measured CPUs keep their tick.")
            .fix("boot a kernel built with CONFIG_NO_HZ_FULL=y (Debian's -rt kernels are)"),
        _ => c.ok(mode).consequence(if full {
            "nohz_full CPUs can run a single task without the tick."
        } else {
            "Busy CPUs take every tick; nohz_full needs CONFIG_NO_HZ_FULL=y."
        }),
    }
}

fn hrtimers(f: &Facts) -> Check {
    let c = Check::new(Area::Kernel, "kernel.hrtimers", "high-resolution timers");
    match f.root.read("/proc/timer_list") {
        Ok(text) => {
            let mut cpu = None;
            let mut inactive = Vec::new();
            let mut seen = Vec::new();
            for line in text.lines() {
                if let Some(n) = line.strip_prefix("cpu: ") {
                    cpu = n.trim().parse::<usize>().ok();
                } else if let (Some(v), Some(c)) = (line.trim().strip_prefix(".hres_active"), cpu) {
                    let active = v.trim_start_matches([' ', ':']).trim() == "1";
                    if f.cpus.contains(c) {
                        seen.push(c);
                        if !active {
                            inactive.push(c);
                        }
                    }
                }
            }
            let c = c.evidence(
                "/proc/timer_list",
                format!("hres_active 1 on {} of {} measured CPUs", seen.len() - inactive.len(), f.cpus.len()),
            );
            if seen.is_empty() {
                c.unknown("/proc/timer_list names none of the measured CPUs")
            } else if inactive.is_empty() {
                c.ok("active on every measured CPU")
                    .consequence("clock_nanosleep wakes at the requested nanosecond, not at the next tick.")
            } else {
                c.fail(format!("inactive on CPU {}", CpuSet::from_cpus(inactive.clone())))
                    .cpus(inactive)
                    .consequence("Sleeps end on the next tick: every wakeup is late by up to one tick period.")
                    .fix("boot with highres=on and a clock event device that supports one-shot mode (CONFIG_HIGH_RES_TIMERS=y)")
            }
        }
        Err(e) => {
            let c = c.evidence("/proc/timer_list", format!("unreadable: {e}"));
            match f.config("CONFIG_HIGH_RES_TIMERS") {
                Ok(Some("y")) => config_evidence(c, f, &["CONFIG_HIGH_RES_TIMERS"]).unknown(format!(
                    "built in, but whether they are active needs /proc/timer_list ({e}; root reads it)"
                )),
                Ok(_) => config_evidence(c, f, &["CONFIG_HIGH_RES_TIMERS"])
                    .fail("not built in (CONFIG_HIGH_RES_TIMERS is not set)")
                    .consequence("Sleeps end on the next tick: every wakeup is late by up to one tick period.")
                    .fix("use a kernel built with CONFIG_HIGH_RES_TIMERS=y"),
                Err(why) => c.unknown(format!(
                    "/proc/timer_list is not readable ({e}) and neither is the kernel configuration ({why})"
                )),
            }
        }
    }
}

fn clocksource(f: &Facts) -> Check {
    let c = Check::new(Area::Kernel, "kernel.clocksource", "clocksource");
    let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    let current = match f.root.read(path) {
        Ok(v) => v,
        Err(e) => return c.unreadable(path, &e),
    };
    let mut c = c.evidence(path, &current);
    let available =
        f.root.read("/sys/devices/system/clocksource/clocksource0/available_clocksource").unwrap_or_default();
    if !available.is_empty() {
        c = c.evidence("/sys/devices/system/clocksource/clocksource0/available_clocksource", &available);
    }
    // These are read through the vDSO without entering the kernel.
    let fast = ["tsc", "arch_sys_counter", "kvm-clock", "hyperv_clocksource_tsc_page", "riscv_clocksource", "timebase"];
    if fast.contains(&current.as_str()) {
        c.ok(format!("{current} (read in user space through the vDSO)"))
            .consequence("clock_gettime costs tens of nanoseconds.")
    } else {
        let better =
            if available.split_whitespace().any(|a| a == "tsc") { "tsc" } else { "a vDSO-capable clocksource" };
        c.warn(format!("{current}: read through a system call or an I/O port"))
            .consequence(format!("Each clock_gettime costs a microsecond or more, added to every sample and to the loop; {current} is what the kernel falls back to when it distrusts the TSC."))
            .fix(format!("echo {better} > {path} (and find why it was not chosen: dmesg | grep -i clocksource; tsc=reliable only if the TSC is known to be stable)"))
    }
}

/// The generic timer on Arm: the counter the kernel, the vDSO and rtlab's noise loop read.
fn arch_timer(f: &Facts) -> Check {
    let c = Check::new(Area::Kernel, "kernel.arch_timer", "Arm generic timer (CNTVCT)");
    let path = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    let cs = match f.root.read(path) {
        Ok(v) => v,
        Err(e) => return c.unreadable(path, &e),
    };
    let c = c.evidence(path, &cs);
    if cs == "arch_sys_counter" {
        c.ok("the generic timer's virtual counter is the clocksource (no TSC on Arm)").consequence(
            "Every CPU reads one counter at one fixed rate (CNTFRQ_EL0) from user space: timestamps are comparable across CPUs, and rtlab noise reads it back to back.",
        )
    } else {
        c.warn(format!("the clocksource is {cs}, not the generic timer (arch_sys_counter)"))
            .consequence("The kernel distrusts or lacks the generic timer: clock reads may enter the kernel, and rtlab noise falls back to clock_gettime.")
            .fix(format!("echo arch_sys_counter > {path} (and see why it was not chosen: dmesg | grep -i -e arch_timer -e clocksource)"))
    }
}

fn tsc(f: &Facts) -> Check {
    let c = Check::new(Area::Kernel, "kernel.tsc", "TSC reliability");
    if !f.x86() {
        return c.unknown(format!(
            "not an x86 machine ({}): there is no TSC",
            f.arch.as_deref().unwrap_or("architecture unknown")
        ));
    }
    let flags = cpu_flags(&f.cpuinfo);
    if flags.is_empty() {
        return c.unknown("/proc/cpuinfo has no flags line");
    }
    let want = ["tsc", "constant_tsc", "nonstop_tsc"];
    let extra = ["tsc_known_freq", "tsc_reliable", "tsc_deadline_timer"];
    let have: Vec<&str> = want.iter().chain(&extra).copied().filter(|w| flags.contains(w)).collect();
    let missing: Vec<&str> = want.iter().copied().filter(|w| !flags.contains(w)).collect();
    let c = c.evidence("/proc/cpuinfo", format!("flags: {}", have.join(" ")));
    if missing.is_empty() {
        c.ok("constant and non-stop TSC")
            .consequence("The TSC ticks at one rate in every P- and C-state: timestamps are comparable across CPUs.")
    } else {
        c.warn(format!("the CPU lacks {}", missing.join(", ")))
            .consequence("The TSC may change rate or stop in deep idle states: the kernel may mark it unstable and switch to a slow clocksource mid-run.")
            .fix("use hardware with an invariant TSC, or keep CPUs out of deep C-states (rtlab holds /dev/cpu_dma_latency at 0 during runs)")
    }
}

/// The flags of `/proc/cpuinfo`'s first `flags` line.
fn cpu_flags(cpuinfo: &str) -> Vec<&str> {
    cpuinfo
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "flags").map(|(_, v)| v))
        .unwrap_or_default()
        .split_whitespace()
        .collect()
}

/// Why the CPU's counter cannot be a busy loop's clock on a machine of `arch`, from
/// `/proc/cpuinfo`'s text and the kernel's current clocksource, or `None` when it can. The rule
/// is the same on every architecture: the counter must run at one rate whatever the CPU does,
/// and the kernel itself must keep it as its clocksource (it found it synchronized across
/// CPUs). On x86 the TSC must be invariant (`constant_tsc`: one rate in every P-state;
/// `nonstop_tsc`: it runs in every C-state) and the clocksource `tsc`; on aarch64 the generic
/// timer runs at one rate by definition and the clocksource must be `arch_sys_counter`.
pub fn counter_unusable_from(arch: &str, cpuinfo: &str, clocksource: &str) -> Option<String> {
    let cs = clocksource.trim();
    match arch {
        "x86_64" => {
            let flags = cpu_flags(cpuinfo);
            if let Some(f) = ["constant_tsc", "nonstop_tsc"].into_iter().find(|f| !flags.contains(f)) {
                return Some(format!("the CPU does not report {f} (its TSC is not invariant)"));
            }
            (cs != "tsc").then(|| format!("the kernel's clocksource is {cs}, not tsc (it does not trust the TSC)"))
        }
        "aarch64" => (cs != "arch_sys_counter").then(|| {
            format!(
                "the kernel's clocksource is {cs}, not arch_sys_counter (it does not use the generic timer's counter)"
            )
        }),
        other => Some(format!("rtlab reads no counter of its own on {other}")),
    }
}

/// [`counter_unusable_from`] for the machine under `root`, built for this architecture.
pub fn counter_unusable(root: &Sysroot) -> Option<String> {
    let cpuinfo = root.read("/proc/cpuinfo").unwrap_or_default();
    let cs = root
        .read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .unwrap_or_else(|_| "unknown".into());
    if crate::rt::counter::frequency_hz() == Some(0) {
        return Some("CNTFRQ_EL0 is 0: the firmware did not set the generic timer's frequency".into());
    }
    // The counter rtlab reads is its build's: an aarch64 build's CNTVCT, an x86_64 build's TSC.
    counter_unusable_from(std::env::consts::ARCH, &cpuinfo, &cs)
}

/// Kernel checks.
pub(super) fn kernel(f: &Facts) -> Vec<Check> {
    // The CPU's own counter: the generic timer on Arm, the TSC elsewhere.
    let counter = if f.arm() { arch_timer(f) } else { tsc(f) };
    vec![preempt(f), hz(f), nohz(f), hrtimers(f), clocksource(f), counter]
}

fn isolated(f: &Facts) -> Check {
    let c = Check::new(Area::Isolation, "isolation.isolcpus", "isolated CPUs (isolcpus)");
    let path = "/sys/devices/system/cpu/isolated";
    let set = match f.cpu_list_file(path) {
        Ok(s) => s,
        Err(e) => return c.unreadable(path, &e),
    };
    let mut c = c.evidence(path, if set.is_empty() { "(none)".into() } else { set.to_string() });
    if let Some(p) = f.param("isolcpus") {
        c = c.evidence("/proc/cmdline", format!("isolcpus={p}"));
    }
    let out = f.outside(&set);
    let fix = if f.housekeeping().is_empty() {
        "leave at least one CPU unmeasured for housekeeping, then add isolcpus=managed_irq,domain,CPUS for the measured ones to the kernel command line".to_string()
    } else {
        format!("add isolcpus=managed_irq,domain,{} to the kernel command line (or put them in an isolated cpuset partition)", f.cpu_list())
    };
    c.verdict(
        out.is_empty(),
        Status::Warn,
        if out.is_empty() { format!("CPU {} isolated", f.cpu_list()) } else { format!("CPU {out} not isolated") },
    )
    .cpus(out.cpus().to_vec())
    .consequence(if out.is_empty() {
        "The scheduler places no other task there by itself."
    } else {
        "The scheduler balances other tasks and kernel threads onto these CPUs; each one that runs delays a wakeup."
    })
    .fix(fix)
}

fn nohz_full(f: &Facts) -> Check {
    let c = Check::new(Area::Isolation, "isolation.nohz_full", "tickless CPUs (nohz_full)");
    let path = "/sys/devices/system/cpu/nohz_full";
    let set = match f.cpu_list_file(path) {
        Ok(s) => s,
        Err(e) if e == "does not exist" => CpuSet::default(),
        Err(e) => return c.unreadable(path, &e),
    };
    let c = c.evidence(path, if set.is_empty() { "(none)".into() } else { set.to_string() });
    let out = f.outside(&set);
    c.verdict(
        out.is_empty(),
        Status::Warn,
        if out.is_empty() { format!("CPU {} tickless", f.cpu_list()) } else { format!("CPU {out} keeps the tick") },
    )
    .cpus(out.cpus().to_vec())
    .consequence(if out.is_empty() {
        "The tick stops while a single task runs there."
    } else {
        "The scheduler tick interrupts these CPUs HZ times a second while a task runs (a few µs each)."
    })
    .fix(format!("add nohz_full={} to the kernel command line (needs CONFIG_NO_HZ_FULL=y)", f.cpu_list()))
}

fn rcu_nocbs(f: &Facts) -> Check {
    let c = Check::new(Area::Isolation, "isolation.rcu_nocbs", "RCU callback offloading (rcu_nocbs)");
    let mut set = CpuSet::default();
    let mut c = c;
    let Ok(line) = &f.cmdline else {
        return c.unreadable("/proc/cmdline", f.cmdline.as_ref().err().map_or("", String::as_str));
    };
    // rcu_nocbs alone offloads nothing at boot (only at run time, through cpusets); its list
    // takes the kernel's cpu-list forms (`all`, `N`, `0-31:2/4`), as nohz_full's does.
    for p in ["rcu_nocbs", "nohz_full"] {
        if let Some(v) = f.param(p) {
            c = c.evidence("/proc/cmdline", if v.is_empty() { p.to_string() } else { format!("{p}={v}") });
            match super::kernel_cpu_list(&v, f.last_cpu()) {
                Ok(s) => set = CpuSet::from_cpus(set.cpus().iter().chain(s.cpus()).copied()),
                Err(e) => return c.unknown(format!("{p}={v} is not a CPU list the doctor understands ({e})")),
            }
        }
    }
    if c.evidence.is_empty() {
        c = c.evidence("/proc/cmdline", format!("no rcu_nocbs= or nohz_full= ({} characters)", line.len()));
    }
    let out = f.outside(&set);
    if out.is_empty() {
        return c
            .ok(format!("callbacks of CPU {} run in rcuo threads elsewhere", f.cpu_list()))
            .consequence("RCU callbacks do not run in softirq on the measured CPUs.");
    }
    let c = c.warn(format!("CPU {out} runs its own RCU callbacks")).cpus(out.cpus().to_vec()).consequence(
        "RCU callbacks run in softirq on these CPUs after each grace period, delaying whatever wakes there.",
    );
    match f.config("CONFIG_RCU_NOCB_CPU") {
        Ok(Some("y")) | Err(_) => {
            c.fix(format!("add rcu_nocbs={} rcu_nocb_poll to the kernel command line", f.cpu_list()))
        }
        Ok(_) => c.fix("use a kernel built with CONFIG_RCU_NOCB_CPU=y, then add rcu_nocbs=CPUS to its command line"),
    }
}

/// The CPU mask in `path` with `params` from the command line as evidence: the measured CPUs
/// it includes, or `None` with the check concluded `unknown`.
fn masked(f: &Facts, c: Check, path: &str, params: &[&str]) -> (Check, Option<CpuSet>) {
    let text = match f.root.read(path) {
        Ok(t) => t,
        Err(e) => return (c.unreadable(path, &e), None),
    };
    let mut c = c.evidence(path, &text);
    for p in params {
        if let Some(v) = f.param(p) {
            c = c.evidence("/proc/cmdline", format!("{p}={v}"));
        }
    }
    match parse_mask(&text) {
        Ok(set) => (c, Some(f.inside(&set))),
        Err(e) => (c.unknown(e), None),
    }
}

fn irq_default(f: &Facts) -> Check {
    let c = Check::new(Area::Isolation, "isolation.irqaffinity", "default IRQ affinity (irqaffinity)");
    let path = "/proc/irq/default_smp_affinity";
    let (c, hit) = masked(f, c, path, &["irqaffinity"]);
    let Some(hit) = hit else { return c };
    let hk = f.housekeeping();
    c.verdict(
        hit.is_empty(),
        Status::Warn,
        if hit.is_empty() {
            "new IRQs avoid the measured CPUs".to_string()
        } else {
            format!("new IRQs may land on CPU {hit}")
        },
    )
    .cpus(hit.cpus().to_vec())
    .consequence("A device that registers an interrupt later gets this mask: its handler can run on the measured CPUs.")
    .fix(if hk.is_empty() {
        "leave one CPU unmeasured, then add irqaffinity=THAT_CPU to the kernel command line".to_string()
    } else {
        format!("add irqaffinity={hk} to the kernel command line, or echo {} > {path}", mask_of(&hk))
    })
}

fn workqueues(f: &Facts) -> Check {
    let c = Check::new(Area::Isolation, "isolation.housekeeping", "kernel threads and unbound workqueues");
    let path = "/sys/devices/virtual/workqueue/cpumask";
    let (c, hit) = masked(f, c, path, &["workqueue.unbound_cpus", "isolcpus", "nohz_full"]);
    let Some(hit) = hit else { return c };
    let hk = f.housekeeping();
    c.verdict(
        hit.is_empty(),
        Status::Warn,
        if hit.is_empty() {
            "unbound work avoids the measured CPUs".to_string()
        } else {
            format!("unbound work may run on CPU {hit}")
        },
    )
    .cpus(hit.cpus().to_vec())
    .consequence("Unbound kworkers (writeback, crypto, flushes) can be scheduled on these CPUs.")
    .fix(if hk.is_empty() {
        "leave one CPU unmeasured, then confine unbound work to it".to_string()
    } else {
        format!(
            "echo {} > {path}; at boot: workqueue.unbound_cpus={hk} (Linux 6.6 and later), and nohz_full= or isolcpus=domain, on the measured CPUs (kernel threads keep to the housekeeping CPUs they leave)",
            mask_of(&hk)
        )
    })
}

/// rtlab's own cgroup for `controller` (v1) or the unified hierarchy (v2), from
/// `/proc/self/cgroup`; a path that climbs out (`..`) is refused.
pub(super) fn own_cgroup(f: &Facts, controller: &str) -> Option<(String, bool)> {
    let text = f.root.read("/proc/self/cgroup").ok()?;
    let mut v2 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        if path.split('/').any(|p| p == "..") {
            return None;
        }
        if ctrls.split(',').any(|c| c == controller) {
            return Some((format!("/sys/fs/cgroup/{controller}{path}").trim_end_matches('/').to_string(), false));
        }
        if ctrls.is_empty() {
            v2 = Some((format!("/sys/fs/cgroup{path}").trim_end_matches('/').to_string(), true));
        }
    }
    v2
}

fn cpuset(f: &Facts) -> Check {
    let c = Check::new(Area::Isolation, "isolation.cpuset", "rtlab's cpuset");
    let Some((dir, v2)) = own_cgroup(f, "cpuset") else {
        return c.unknown("/proc/self/cgroup is not readable");
    };
    let file = if v2 { format!("{dir}/cpuset.cpus.effective") } else { format!("{dir}/cpuset.effective_cpus") };
    let set = match f.cpu_list_file(&file) {
        Ok(s) => s,
        Err(e) if v2 && e == "does not exist" => {
            return c.evidence(&file, "does not exist").ok("the cpuset controller is not enabled for rtlab's cgroup: every CPU is allowed").consequence("No cpuset keeps other tasks off the measured CPUs either (isolcpus or an isolated partition would).");
        }
        Err(e) => return c.unreadable(&file, &e),
    };
    let c = c.evidence(&file, set.to_string());
    let out = f.outside(&set);
    if !out.is_empty() {
        return c
            .fail(format!("rtlab's cgroup may not run on CPU {out}"))
            .cpus(out.cpus().to_vec())
            .consequence("Pinning a measuring thread there fails, and the run measures elsewhere or not at all.")
            .fix(format!("run rtlab from a cgroup whose cpuset includes CPU {out} (e.g. systemd-run --scope -p AllowedCPUs={} rtlab …)", f.cpu_list()));
    }
    let partition = if v2 { f.root.read(&format!("{dir}/cpuset.cpus.partition")).ok() } else { None };
    let c = match &partition {
        Some(p) => c.evidence(format!("{dir}/cpuset.cpus.partition"), p),
        None => c,
    };
    c.ok(format!("allows CPU {set}{}", partition.map(|p| format!(" (partition: {p})")).unwrap_or_default()))
        .consequence("rtlab may pin its threads to every measured CPU.")
}

fn timer_migration(f: &Facts) -> Check {
    let c = Check::new(Area::Isolation, "isolation.timer_migration", "timer migration");
    let path = "/proc/sys/kernel/timer_migration";
    match f.root.read(path) {
        Ok(v) => c
            .evidence(path, &v)
            .verdict(v == "0", Status::Warn, if v == "0" { "off" } else { "on" })
            .consequence(if v == "0" {
                "Timers stay on the CPU that armed them."
            } else {
                "Timers armed on idle CPUs may be moved to busy ones, the measured CPUs among them."
            })
            .fix("sysctl -w kernel.timer_migration=0 (persist in /etc/sysctl.d/)"),
        Err(e) if e == "does not exist" => c
            .evidence(path, "does not exist")
            .unknown("this kernel has no timer migration switch (CONFIG_NO_HZ_COMMON unset)"),
        Err(e) => c.unreadable(path, &e),
    }
}

fn rcu(f: &Facts) -> Check {
    let c = Check::new(Area::Isolation, "isolation.rcu", "RCU expedited grace periods and boosting");
    let path = "/sys/kernel/rcu_expedited";
    let expedited = match f.root.read(path) {
        Ok(v) => v,
        Err(e) => return c.unreadable(path, &e),
    };
    let mut c = c.evidence(path, &expedited);
    if let Ok(n) = f.root.read("/sys/kernel/rcu_normal") {
        c = c.evidence("/sys/kernel/rcu_normal", n);
    }
    c = config_evidence(c, f, &["CONFIG_PREEMPT_RCU", "CONFIG_RCU_BOOST"]);
    if let Some(p) = f.param("rcutree.kthread_prio") {
        c = c.evidence("/proc/cmdline", format!("rcutree.kthread_prio={p}"));
    }
    if expedited != "0" {
        return c
            .warn("expedited grace periods are on")
            .consequence("Every synchronize_rcu() sends an IPI to every CPU, the measured ones included.")
            .fix("echo 0 > /sys/kernel/rcu_expedited; echo 1 > /sys/kernel/rcu_normal (or rcupdate.rcu_normal_after_boot=1 on the command line)");
    }
    match (f.config("CONFIG_PREEMPT_RCU"), f.config("CONFIG_RCU_BOOST")) {
        (Ok(Some("y")), Ok(boost)) if boost != Some("y") => c
            .warn("normal grace periods; preemptible RCU without priority boosting")
            .consequence("A reader preempted by a busy SCHED_FIFO task is never boosted: grace periods stall while the real-time task runs and memory waiting to be freed piles up.")
            .fix("use a kernel with CONFIG_RCU_BOOST=y (PREEMPT_RT kernels have it) and set rcutree.kthread_prio above your real-time tasks"),
        _ => c.ok("normal grace periods").consequence("Grace periods do not interrupt the measured CPUs with IPIs."),
    }
}

/// Isolation checks.
pub(super) fn isolation(f: &Facts) -> Vec<Check> {
    vec![isolated(f), nohz_full(f), rcu_nocbs(f), irq_default(f), workqueues(f), cpuset(f), timer_migration(f), rcu(f)]
}

#[cfg(test)]
mod tests {
    const FLAGS: &str = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\n";

    #[test]
    fn an_invariant_tsc_the_kernel_keeps_as_its_clocksource_is_usable() {
        assert_eq!(super::counter_unusable_from("x86_64", FLAGS, "tsc\n"), None);
    }

    #[test]
    fn a_tsc_that_stops_in_idle_or_that_the_kernel_distrusts_is_not_used_and_says_why() {
        let no_nonstop = FLAGS.replace(" nonstop_tsc", "");
        assert!(super::counter_unusable_from("x86_64", &no_nonstop, "tsc").unwrap().contains("nonstop_tsc"));
        assert!(super::counter_unusable_from("x86_64", FLAGS, "hpet\n").unwrap().contains("clocksource is hpet"));
        assert_eq!(super::counter_unusable_from("aarch64", "", "arch_sys_counter\n"), None);
        assert!(super::counter_unusable_from("aarch64", "", "jiffies").unwrap().contains("not arch_sys_counter"));
        assert!(super::counter_unusable_from("riscv64", FLAGS, "tsc")
            .unwrap()
            .contains("no counter of its own on riscv64"));
    }

    use super::*;

    #[test]
    fn the_preempt_model_comes_from_debugfs_first_then_the_version_string() {
        assert_eq!(
            preempt_model(Some("none voluntary (full) lazy"), Some("#1 SMP PREEMPT_DYNAMIC"), false).as_deref(),
            Some("full")
        );
        assert_eq!(preempt_model(None, Some("#1 SMP PREEMPT_DYNAMIC @0"), false).as_deref(), Some("dynamic"));
        assert_eq!(preempt_model(None, Some("#1 SMP PREEMPT_RT Debian"), false).as_deref(), Some("rt"));
        assert_eq!(preempt_model(None, Some("#1 SMP PREEMPT Tue"), false).as_deref(), Some("full"));
        assert_eq!(preempt_model(None, Some("#1 SMP Tue"), false).as_deref(), Some("none or voluntary"));
        assert_eq!(preempt_model(None, None, true).as_deref(), Some("rt"));
    }
}
