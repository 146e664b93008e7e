//! CPU power checks: frequency governor and limits, turbo, the P-state driver, idle states
//! against the PM QoS limit, and SMT siblings.

use super::{Area, Check, Facts, Status};
use crate::rt::affinity::CpuSet;

/// An idle state whose exit latency exceeds this (µs) costs a visible part of a wakeup.
const DEEP_IDLE_US: u64 = 10;

/// A sibling busier than this fraction of the sample shares the core with the measurement.
const SIBLING_BUSY: f64 = 0.5;

/// The value of `name` for each measured CPU under `cpu{N}/cpufreq/`, or why the first
/// missing one is missing.
fn per_cpu(f: &Facts, name: &str) -> Result<Vec<(usize, String)>, (String, String)> {
    f.cpus
        .cpus()
        .iter()
        .map(|&c| {
            let p = format!("/sys/devices/system/cpu/cpu{c}/cpufreq/{name}");
            f.root.read(&p).map(|v| (c, v)).map_err(|e| (p, e))
        })
        .collect()
}

fn no_cpufreq(c: Check, path: &str, why: &str) -> Check {
    if why == "does not exist" {
        c.evidence(path, "does not exist")
            .unknown("no cpufreq driver: the frequency is set by firmware or the hypervisor, out of the kernel's sight")
    } else {
        c.unreadable(path, why)
    }
}

fn governor(f: &Facts) -> Check {
    let c = Check::new(Area::Power, "power.governor", "cpufreq governor");
    let v = match per_cpu(f, "scaling_governor") {
        Ok(v) => v,
        Err((p, e)) => return no_cpufreq(c, &p, &e),
    };
    let mut c = c;
    for (cpu, g) in &v {
        c = c.evidence(format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"), g);
    }
    let slow: Vec<usize> = v.iter().filter(|(_, g)| g != "performance").map(|(c, _)| *c).collect();
    let list = |cs: &[usize]| CpuSet::from_cpus(cs.iter().copied()).to_string();
    c.verdict(slow.is_empty(), Status::Warn, if slow.is_empty() { "performance on every measured CPU".to_string() } else { format!("CPU {} not on performance ({})", list(&slow), v.iter().find(|(c, _)| slow.contains(c)).map(|(_, g)| g.as_str()).unwrap_or_default()) })
        .cpus(slow.clone())
        .consequence("A CPU that has slowed down while idle runs the wakeup path at low frequency and ramps up only later: latency depends on the recent load.")
        .fix(format!("cpupower -c {} frequency-set -g performance (or echo performance > /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor)", f.cpu_list()))
}

fn frequency(f: &Facts) -> Check {
    let c = Check::new(Area::Power, "power.frequency", "frequency limits");
    let (min, max) = match (per_cpu(f, "scaling_min_freq"), per_cpu(f, "scaling_max_freq")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err((p, e)), _) | (_, Err((p, e))) => return no_cpufreq(c, &p, &e),
    };
    let hw = per_cpu(f, "cpuinfo_max_freq").unwrap_or_default();
    let mut c = c;
    let mut varying = Vec::new();
    for ((cpu, lo), (_, hi)) in min.iter().zip(&max) {
        let top = hw.iter().find(|(c, _)| c == cpu).map(|(_, v)| v.as_str()).unwrap_or("?");
        c = c.evidence(
            format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_{{min,max}}_freq"),
            format!("{lo} {hi} kHz (hardware max {top})"),
        );
        if lo != hi {
            varying.push((*cpu, lo.clone(), hi.clone()));
        }
    }
    let cpus: Vec<usize> = varying.iter().map(|(c, _, _)| *c).collect();
    c.verdict(
        varying.is_empty(),
        Status::Warn,
        match varying.first() {
            None => "fixed frequency on every measured CPU".to_string(),
            Some((cpu, lo, hi)) => format!(
                "CPU {cpu} may run between {} and {} MHz",
                lo.parse::<u64>().unwrap_or(0) / 1000,
                hi.parse::<u64>().unwrap_or(0) / 1000
            ),
        },
    )
    .cpus(cpus)
    .consequence("Code paths take longer at low frequency: the same wakeup costs more after an idle stretch.")
    .fix("set scaling_min_freq to scaling_max_freq on the measured CPUs (cpupower frequency-set -d MAX -u MAX)")
}

fn boost(f: &Facts) -> Check {
    let c = Check::new(Area::Power, "power.boost", "turbo / boost");
    let intel = "/sys/devices/system/cpu/intel_pstate/no_turbo";
    let generic = "/sys/devices/system/cpu/cpufreq/boost";
    let (path, on) = match (f.root.read(intel), f.root.read(generic)) {
        (Ok(v), _) => (intel, v == "0"),
        (_, Ok(v)) => (generic, v == "1"),
        (Err(e), Err(_)) if e == "does not exist" => {
            return c
                .evidence(generic, "does not exist")
                .unknown("no boost switch (no cpufreq driver, or a driver without one)")
        }
        (Err(e), _) => return c.unreadable(intel, &e),
    };
    let value = f.root.read(path).unwrap_or_default();
    c.evidence(path, value)
        .verdict(!on, Status::Warn, if on { "turbo on" } else { "turbo off" })
        .consequence(if on {
            "The frequency depends on temperature and on how many cores are busy: the same code takes different times."
        } else {
            "The frequency does not depend on temperature or on the other cores."
        })
        .fix(if path == intel { format!("echo 1 > {intel}") } else { format!("echo 0 > {generic}") })
}

fn pstate(f: &Facts) -> Check {
    let c = Check::new(Area::Power, "power.pstate", "P-state driver mode");
    let driver = f.root.read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver");
    for (file, name) in [
        ("/sys/devices/system/cpu/intel_pstate/status", "intel_pstate"),
        ("/sys/devices/system/cpu/amd_pstate/status", "amd_pstate"),
    ] {
        if let Ok(mode) = f.root.read(file) {
            let mut c = c.evidence(file, &mode);
            if let Ok(d) = &driver {
                c = c.evidence("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", d);
            }
            let gov = per_cpu(f, "scaling_governor").unwrap_or_default();
            let powersave = gov.iter().any(|(_, g)| g != "performance");
            // In active mode the hardware (HWP/CPPC) picks the frequency inside the limits.
            return c
                .verdict(!(mode == "active" && powersave), Status::Warn, format!("{name} {mode}"))
                .consequence(if mode == "active" {
                    "The CPU chooses its own frequency (HWP/CPPC) within the limits; with the powersave policy it favours energy over latency."
                } else {
                    "The kernel's governor picks the frequency."
                })
                .fix(format!("use the performance governor, or boot with {name}=passive and the performance governor"));
        }
    }
    match driver {
        Ok(d) => c
            .evidence("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", &d)
            .ok(format!("{d} (no intel_pstate or amd_pstate)")),
        Err(e) if e == "does not exist" => c.unknown("no cpufreq driver, so no P-state driver mode"),
        Err(e) => c.unreadable("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", &e),
    }
}

fn idle(f: &Facts) -> Check {
    let c = Check::new(Area::Power, "power.idle", "idle states and /dev/cpu_dma_latency");
    let driver_path = "/sys/devices/system/cpu/cpuidle/current_driver";
    let driver = f.root.read(driver_path);
    let mut c = match &driver {
        Ok(d) => c.evidence(driver_path, d),
        Err(e) => c.evidence(driver_path, format!("unreadable: {e}")),
    };
    let qos = f.root.read_i32("/dev/cpu_dma_latency");
    c = match &qos {
        Ok(v) => c.evidence("/dev/cpu_dma_latency", v.to_string()),
        Err(e) => c.evidence("/dev/cpu_dma_latency", format!("unreadable: {e}")),
    };
    let mut deep = Vec::new();
    let mut seen_states = false;
    for &cpu in f.cpus.cpus() {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
        let Ok(states) = f.root.list(&dir) else { continue };
        for s in states.iter().filter(|s| s.starts_with("state")) {
            seen_states = true;
            let read = |n: &str| f.root.read(&format!("{dir}/{s}/{n}")).unwrap_or_default();
            let latency: u64 = read("latency").parse().unwrap_or(0);
            let disabled = read("disable") == "1";
            let allowed = match &qos {
                Ok(q) => u64::try_from(*q).is_ok_and(|q| latency <= q),
                Err(_) => true,
            };
            if !disabled && allowed && latency > DEEP_IDLE_US {
                deep.push((cpu, read("name"), latency));
            }
        }
    }
    if !seen_states {
        return match driver {
            Ok(d) if d != "none" => c.unknown(format!("cpuidle driver {d} exposes no states for the measured CPUs")),
            Ok(_) => c
                .ok("no cpuidle driver: idle CPUs halt (or the hypervisor decides)")
                .consequence("No deep C-state exit latency is added by the kernel."),
            Err(e) if e == "does not exist" => {
                c.ok("no cpuidle: idle CPUs halt").consequence("No deep C-state exit latency is added by the kernel.")
            }
            Err(e) => c.unreadable(driver_path, &e),
        };
    }
    if deep.is_empty() {
        return c
            .ok(format!("no enabled idle state exits slower than {DEEP_IDLE_US} µs (or the PM QoS limit forbids it)"))
            .consequence("Waking from idle costs a few µs at most.");
    }
    let worst = deep.iter().max_by_key(|d| d.2).cloned().unwrap_or_default();
    let c = c.evidence(
        format!("/sys/devices/system/cpu/cpu{}/cpuidle/*/latency", worst.0),
        deep.iter().map(|(c, n, l)| format!("CPU{c} {n} {l} µs")).collect::<Vec<_>>().join(", "),
    );
    c.warn(format!("CPU {} may enter {} (exit latency {} µs)", worst.0, worst.1, worst.2))
        .cpus(CpuSet::from_cpus(deep.iter().map(|d| d.0)).cpus().to_vec())
        .consequence(format!("A wakeup from that state is late by up to {} µs; rtlab run holds /dev/cpu_dma_latency at 0 while it measures (as cyclictest does), other programs do not.", worst.2))
        .fix(if f.arm() {
            // Arm SoCs' idle states come from the device tree through PSCI (psci_idle).
            "hold /dev/cpu_dma_latency at 0 in the real-time application, or disable the states: cpupower idle-set -D 10 (or add cpuidle.off=1 to the kernel command line)"
        } else {
            "hold /dev/cpu_dma_latency at 0 in the real-time application, or disable the states: cpupower idle-set -D 10 (or processor.max_cstate=1 intel_idle.max_cstate=0 at boot)"
        })
}

fn smt(f: &Facts) -> Check {
    let c = Check::new(Area::Power, "power.smt", "SMT siblings");
    let active = f.root.read("/sys/devices/system/cpu/smt/active");
    let control = f.root.read("/sys/devices/system/cpu/smt/control");
    let mut c = match &control {
        Ok(v) => c.evidence("/sys/devices/system/cpu/smt/control", v),
        Err(e) => c.evidence("/sys/devices/system/cpu/smt/control", format!("unreadable: {e}")),
    };
    let mut shared = Vec::new();
    for &cpu in f.cpus.cpus() {
        let p = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
        match f.cpu_list_file(&p) {
            Ok(s) => {
                c = c.evidence(&p, s.to_string());
                shared.extend(s.cpus().iter().filter(|&&o| o != cpu).map(|&o| (cpu, o)));
            }
            Err(e) => return c.unreadable(&p, &e),
        }
    }
    if shared.is_empty() {
        return c
            .ok(if active.as_deref() == Ok("1") {
                "SMT on, but no measured CPU shares its core"
            } else {
                "no measured CPU shares its core"
            })
            .consequence("Each measured CPU has its core to itself.");
    }
    let seconds = f.seconds();
    let busy_of = |o: usize| -> Option<f64> {
        let (b, a) = (f.before.stat.as_ref().ok()?.get(&o)?, f.after.stat.as_ref().ok()?.get(&o)?);
        let total = a.total().checked_sub(b.total())?;
        (total > 0).then(|| (a.busy - b.busy) as f64 / total as f64)
    };
    let mut busy = Vec::new();
    let mut notes = Vec::new();
    for (cpu, sib) in &shared {
        match busy_of(*sib) {
            Some(x) => {
                notes.push(format!("CPU{sib} (sibling of CPU{cpu}) busy {:.0}%", x * 100.0));
                if x > SIBLING_BUSY && !f.cpus.contains(*sib) {
                    busy.push((*cpu, *sib, x));
                }
            }
            None => notes.push(format!("CPU{sib}: busy time unknown over {seconds:.2} s")),
        }
    }
    let c = c.evidence("/proc/stat", notes.join("; "));
    if busy.is_empty() {
        return c
            .warn(format!(
                "SMT on: {} share a core with another CPU; the siblings were idle",
                shared.iter().map(|(c, s)| format!("CPU {c} with {s}")).collect::<Vec<_>>().join(", ")
            ))
            .cpus(shared.iter().map(|(c, _)| *c))
            .consequence(
                "Whatever runs on a sibling later shares the core's pipeline and caches with the measuring thread.",
            )
            .fix(format!(
                "echo off > /sys/devices/system/cpu/smt/control (or nosmt at boot), or keep CPU {} idle",
                CpuSet::from_cpus(shared.iter().map(|(_, s)| *s))
            ));
    }
    c.warn(busy.iter().map(|(c, s, x)| format!("the sibling of CPU {c} (CPU {s}) is busy {:.0}% of the time", x * 100.0)).collect::<Vec<_>>().join("; "))
        .cpus(busy.iter().map(|(c, _, _)| *c))
        .alarm()
        .consequence("The busy sibling shares the core's pipeline and caches: the measuring thread runs slower and its latency depends on the sibling's work.")
        .fix(format!("echo off > /sys/devices/system/cpu/smt/control (or nosmt at boot), or move the work off CPU {}", CpuSet::from_cpus(busy.iter().map(|b| b.1))))
}

/// CPU power checks.
pub(super) fn checks(f: &Facts) -> Vec<Check> {
    vec![governor(f), frequency(f), boost(f), pstate(f), idle(f), smt(f)]
}
