//! Interrupt checks: device IRQs that fire on or may land on the measured CPUs, IPIs and
//! local interrupts, irqbalance, and device-driven softirqs.

use super::sample::{rates, Row};
use super::{mask_of, rate, Area, Check, Facts, Status};
use crate::rt::affinity::CpuSet;

/// Device IRQs at or above this rate on a measured CPU are named one by one.
const ACTIVE: f64 = 0.5;

/// A device IRQ at or above this rate on a measured CPU is told at the start of a run.
const ALARM: f64 = 10.0;

/// IPIs (rescheduling, function call, TLB shootdown) per second on a measured CPU above which
/// the doctor warns.
const IPI_WARN: f64 = 50.0;

/// Where IRQ `irq` goes: its effective affinity (where it is delivered now) when `allowed` is
/// false, else the affinity it is allowed (`smp_affinity_list`: where it may be moved to).
fn affinity(f: &Facts, irq: &str, allowed: bool) -> Option<(String, CpuSet)> {
    let names: &[&str] =
        if allowed { &["smp_affinity_list"] } else { &["effective_affinity_list", "smp_affinity_list"] };
    names.iter().find_map(|name| {
        let path = format!("/proc/irq/{irq}/{name}");
        let set = f.cpu_list_file(&path).ok()?;
        Some((path, set))
    })
}

fn device_irqs(f: &Facts) -> Vec<Check> {
    let (before, after) = match (&f.before.interrupts, &f.after.interrupts) {
        (Ok(b), Ok(a)) => (b, a),
        (Err(e), _) | (_, Err(e)) => {
            return vec![Check::new(Area::Interrupts, "interrupts.affinity", "device IRQs on the measured CPUs")
                .unknown(e.clone())]
        }
    };
    let seconds = f.seconds();
    let mut checks = Vec::new();
    let mut active_irqs = Vec::new();
    for row in after.iter().filter(|r| r.numbered()) {
        let mut on: Vec<(usize, f64)> = Vec::new();
        for &cpu in f.cpus.cpus() {
            if let Some((_, r)) = rates(before, std::slice::from_ref(row), cpu, seconds).into_iter().next() {
                if r >= ACTIVE {
                    on.push((cpu, r));
                }
            }
        }
        if on.is_empty() {
            continue;
        }
        active_irqs.push(row.name.clone());
        let device = row.device();
        let where_ = on
            .iter()
            .map(|(c, r)| format!("CPU {c} receives IRQ {} ({device}) {} times/s", row.name, rate(*r)))
            .collect::<Vec<_>>()
            .join("; ");
        let mut c =
            Check::new(Area::Interrupts, format!("interrupts.irq{}", row.name), format!("IRQ {} ({device})", row.name))
                .evidence(
                    "/proc/interrupts",
                    format!(
                        "{}: {} over {seconds:.2} s",
                        row.name,
                        on.iter().map(|(c, r)| format!("CPU{c} +{:.0}", r * seconds)).collect::<Vec<_>>().join(" ")
                    ),
                );
        let aff = affinity(f, &row.name, false);
        if let Some((path, set)) = &aff {
            c = c.evidence(path.clone(), set.to_string());
        }
        let hk = f.housekeeping();
        let fix = if hk.is_empty() {
            format!(
                "leave one CPU unmeasured and move IRQ {} there (echo CPU > /proc/irq/{}/smp_affinity_list)",
                row.name, row.name
            )
        } else {
            format!("echo {hk} > /proc/irq/{}/smp_affinity_list (managed IRQs follow isolcpus=managed_irq,…)", row.name)
        };
        let c = if on.iter().any(|(_, r)| *r >= ALARM) { c.alarm() } else { c };
        checks.push(
            c.warn(where_)
                .cpus(on.iter().map(|(c, _)| *c))
                .consequence("Each interrupt runs its handler (and on a non-RT kernel its softirq) on that CPU ahead of the measuring thread.")
                .fix(fix),
        );
    }
    // Affine but quiet: they may fire there later.
    let mut affine = Vec::new();
    let mut unreadable = None;
    for row in after.iter().filter(|r| r.numbered() && !active_irqs.contains(&r.name)) {
        match affinity(f, &row.name, true) {
            Some((_, set)) => {
                let hit = f.inside(&set).cpus().to_vec();
                if !hit.is_empty() {
                    affine.push((row.clone(), hit));
                }
            }
            None => unreadable = Some(format!("/proc/irq/{}/smp_affinity_list", row.name)),
        }
    }
    let c = Check::new(Area::Interrupts, "interrupts.affinity", "device IRQs allowed on the measured CPUs");
    let c = if affine.is_empty() {
        match unreadable {
            Some(p) => c.unreadable(&p, "not readable"),
            None => c.ok("no quiet device IRQ may land on the measured CPUs"),
        }
    } else {
        let names: Vec<String> = affine.iter().map(|(r, _)| format!("{} ({})", r.name, r.device())).collect();
        let cpus = CpuSet::from_cpus(affine.iter().flat_map(|(_, c)| c.clone()));
        let hk = f.housekeeping();
        c.evidence("/proc/irq/*/smp_affinity_list", format!("{} IRQs include CPU {cpus}", affine.len()))
            .warn(format!("{} quiet IRQs may fire on CPU {cpus}: {}", affine.len(), names.join(", ")))
            .cpus(cpus.cpus().to_vec())
            .consequence("They did not fire during the sample, but their handlers may run there when the device is busy.")
            .fix(if hk.is_empty() {
                "leave one CPU unmeasured and move the IRQs there".to_string()
            } else {
                format!("for i in /proc/irq/[0-9]*; do echo {hk} > $i/smp_affinity_list; done (or irqaffinity={hk} at boot)")
            })
    };
    checks.push(c);
    checks
}

fn local(f: &Facts) -> Check {
    let c = Check::new(Area::Interrupts, "interrupts.local", "timer interrupts and IPIs on the measured CPUs");
    let (before, after) = match (&f.before.interrupts, &f.after.interrupts) {
        (Ok(b), Ok(a)) => (b, a),
        (Err(e), _) | (_, Err(e)) => return c.unknown(e.clone()),
    };
    let seconds = f.seconds();
    if seconds <= 0.0 {
        return c.unknown("no sampling interval");
    }
    let ipis = ["RES", "CAL", "TLB"];
    let mut lines = Vec::new();
    let mut noisy = Vec::new();
    for &cpu in f.cpus.cpus() {
        let r: Vec<(Row, f64)> =
            rates(before, after, cpu, seconds).into_iter().filter(|(r, _)| !r.numbered()).collect();
        let get = |n: &str| r.iter().find(|(row, _)| row.name == n).map_or(0.0, |(_, v)| *v);
        let ipi: f64 = ipis.iter().map(|n| get(n)).sum();
        lines.push(format!(
            "CPU{cpu}: LOC {}/s, RES {}/s, CAL {}/s, TLB {}/s",
            rate(get("LOC")),
            rate(get("RES")),
            rate(get("CAL")),
            rate(get("TLB"))
        ));
        if ipi > IPI_WARN {
            noisy.push((cpu, ipi));
        }
    }
    let c = c.evidence("/proc/interrupts", lines.join("; "));
    if noisy.is_empty() {
        c.ok(format!("fewer than {IPI_WARN:.0} IPIs/s on each measured CPU"))
            .consequence("Local timer interrupts are the measurement's own wakeups and the tick.")
    } else {
        c.warn(noisy.iter().map(|(c, r)| format!("CPU {c} receives {} IPIs/s", rate(*r))).collect::<Vec<_>>().join("; "))
            .cpus(noisy.iter().map(|(c, _)| *c))
            // No alarm: a run's own threads (a runtime's schedulers, the reporting thread) send
            // IPIs too, so the figure during a run is not the machine's alone.
            .consequence("Rescheduling, function-call and TLB-shootdown IPIs come from other CPUs' work (wakeups, mprotect/munmap, RCU, perf) and interrupt the measuring thread.")
            .fix("isolate the CPUs (isolcpus=, nohz_full=, rcu_nocbs=) and keep multi-threaded programs that share memory with the measured task off them")
    }
}

fn irqbalance(f: &Facts) -> Check {
    let c = Check::new(Area::Interrupts, "interrupts.irqbalance", "irqbalance");
    let procs = match f.processes(&["irqbalance"]) {
        Ok(p) => p,
        Err(e) => return c.unreadable("/proc", &e),
    };
    let Some((pid, _)) = procs.first() else {
        return c
            .evidence("/proc/*/comm", "no irqbalance process")
            .ok("not running")
            .consequence("IRQ affinities stay where they are set.");
    };
    let mut c = c.evidence(format!("/proc/{pid}/comm"), "irqbalance");
    let mut banned = None;
    for conf in ["/etc/default/irqbalance", "/etc/sysconfig/irqbalance"] {
        if let Ok(text) = f.root.read(conf) {
            for line in text.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
                if let Some(v) = line.strip_prefix("IRQBALANCE_BANNED_CPULIST=") {
                    c = c.evidence(conf, line);
                    banned = CpuSet::parse(v.trim_matches('"')).ok();
                }
            }
        }
    }
    let isolated = f.cpu_list_file("/sys/devices/system/cpu/isolated").unwrap_or_default();
    let nohz = f.cpu_list_file("/sys/devices/system/cpu/nohz_full").unwrap_or_default();
    let avoided = CpuSet::from_cpus(
        banned
            .iter()
            .flat_map(|b| b.cpus().to_vec())
            .chain(isolated.cpus().iter().copied())
            .chain(nohz.cpus().iter().copied()),
    );
    let out = f.outside(&avoided);
    c.verdict(
        out.is_empty(),
        Status::Warn,
        if out.is_empty() {
            format!("running (pid {pid}), keeps off CPU {}", f.cpu_list())
        } else {
            format!("running (pid {pid}), may move IRQs onto CPU {out}")
        },
    )
    .cpus(out.cpus().to_vec())
    .consequence("irqbalance rewrites IRQ affinities every 10 s; it avoids isolated, nohz_full and banned CPUs only.")
    .fix(format!(
        "systemctl disable --now irqbalance, or IRQBALANCE_BANNED_CPULIST={} in /etc/default/irqbalance",
        f.cpu_list()
    ))
}

fn softirqs(f: &Facts) -> Check {
    let c = Check::new(Area::Interrupts, "interrupts.softirq", "softirqs on the measured CPUs");
    let (before, after) = match (&f.before.softirqs, &f.after.softirqs) {
        (Ok(b), Ok(a)) => (b, a),
        (Err(e), _) | (_, Err(e)) => return c.unknown(e.clone()),
    };
    let seconds = f.seconds();
    if seconds <= 0.0 {
        return c.unknown("no sampling interval");
    }
    // These follow device activity; TIMER, SCHED, RCU and HRTIMER are the CPU's own.
    let device = ["NET_RX", "NET_TX", "BLOCK", "IRQ_POLL", "TASKLET"];
    let mut lines = Vec::new();
    let mut busy = Vec::new();
    for &cpu in f.cpus.cpus() {
        let r = rates(before, after, cpu, seconds);
        lines.push(format!(
            "CPU{cpu}: {}",
            r.iter()
                .filter(|(_, v)| *v > 0.0)
                .map(|(row, v)| format!("{} {}/s", row.name, rate(*v)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let dev: Vec<String> = r
            .iter()
            .filter(|(row, v)| device.contains(&row.name.as_str()) && *v >= ACTIVE)
            .map(|(row, v)| format!("{} {}/s", row.name, rate(*v)))
            .collect();
        if !dev.is_empty() {
            busy.push((cpu, dev.join(", ")));
        }
    }
    let c = c.evidence("/proc/softirqs", lines.join("; "));
    if busy.is_empty() {
        c.ok("no device-driven softirq (network, block, tasklet) on the measured CPUs")
            .consequence("Softirqs there are the CPU's own timers, scheduler and RCU work.")
    } else {
        c.warn(busy.iter().map(|(c, d)| format!("CPU {c} runs {d}")).collect::<Vec<_>>().join("; "))
            .cpus(busy.iter().map(|(c, _)| *c))
            .alarm()
            .consequence("Network and block softirqs run for tens to hundreds of µs at interrupt exit, ahead of the measuring thread (on PREEMPT_RT they run in ksoftirqd and can be prioritised).")
            .fix(format!("move the devices' IRQs off CPU {} and steer packet processing with /sys/class/net/*/queues/rx-*/rps_cpus set to {}", f.cpu_list(), mask_of(&f.housekeeping())))
    }
}

/// Interrupt checks.
pub(super) fn checks(f: &Facts) -> Vec<Check> {
    let mut v = device_irqs(f);
    v.push(local(f));
    v.push(irqbalance(f));
    v.push(softirqs(f));
    v
}
