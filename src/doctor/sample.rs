//! Counters the doctor reads twice to turn totals into rates: `/proc/interrupts`,
//! `/proc/softirqs`, `/proc/stat` and the SMI counter (x86 MSR 0x34).

use super::Sysroot;
use crate::rt::affinity::CpuSet;
use crate::rt::msr::MSR_SMI_COUNT;
use std::collections::BTreeMap;
use std::time::Instant;

/// One row of `/proc/interrupts` or `/proc/softirqs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// `36`, `LOC`, `NET_RX`.
    pub name: String,
    /// Count per CPU number.
    pub counts: BTreeMap<usize, u64>,
    /// What follows the counts (`PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0`, `Local timer
    /// interrupts`).
    pub description: String,
}

impl Row {
    /// The device of a numbered interrupt: what follows its trigger type (`1-edge
    /// virtio1-req.0` → `virtio1-req.0`), else the last word.
    pub fn device(&self) -> String {
        let words: Vec<&str> = self.description.split_whitespace().collect();
        let trigger = words.iter().rposition(|w| {
            let w = w.to_ascii_lowercase();
            ["edge", "level", "fasteoi"].iter().any(|t| w == *t || w.ends_with(&format!("-{t}")))
        });
        match trigger {
            Some(i) if i + 1 < words.len() => words[i + 1..].join(" "),
            _ => words.last().map_or_else(|| "?".into(), |w| w.to_string()),
        }
    }

    /// Whether this is a device interrupt (numbered) rather than an architecture one (`LOC`).
    pub fn numbered(&self) -> bool {
        self.name.chars().all(|c| c.is_ascii_digit())
    }
}

/// Parses `/proc/interrupts` or `/proc/softirqs`: a header naming the CPU columns (`CPU0 CPU1`,
/// offline CPUs absent), then `NAME: counts… description`.
pub fn parse_table(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text.lines();
    let header = lines.next().ok_or("empty")?;
    let columns: Vec<usize> =
        header.split_whitespace().filter_map(|w| w.strip_prefix("CPU")).filter_map(|n| n.parse().ok()).collect();
    if columns.is_empty() {
        return Err(format!("no CPU columns in its header '{}'", header.trim()));
    }
    let mut rows = Vec::new();
    for line in lines {
        let Some((name, rest)) = line.split_once(':') else { continue };
        let mut words = rest.split_whitespace().peekable();
        let mut counts = BTreeMap::new();
        for &cpu in &columns {
            match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                Some(n) => {
                    counts.insert(cpu, n);
                    words.next();
                }
                None => break,
            }
        }
        rows.push(Row { name: name.trim().to_string(), counts, description: words.collect::<Vec<_>>().join(" ") });
    }
    Ok(rows)
}

/// `/proc/stat` counts in USER_HZ ticks: 100 a second on Linux.
pub const NS_PER_TICK: i64 = 10_000_000;

/// Steal ticks per CPU as `/proc/stat` under `root` says now (empty when it cannot be read).
pub fn steal_ticks(root: &Sysroot) -> BTreeMap<usize, u64> {
    root.read("/proc/stat")
        .ok()
        .and_then(|t| parse_stat(&t).ok())
        .map(|m| m.into_iter().map(|(c, t)| (c, t.steal)).collect())
        .unwrap_or_default()
}

/// Time a CPU spent in each state since boot, in USER_HZ ticks (`/proc/stat`'s `cpuN` line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq (+ guest time, counted in user).
    pub busy: u64,
    /// idle + iowait.
    pub idle: u64,
    /// Time the hypervisor ran something else while this vCPU wanted to run.
    pub steal: u64,
    /// Time in hard interrupts.
    pub irq: u64,
    /// Time in softirqs.
    pub softirq: u64,
}

impl CpuTimes {
    /// All the time accounted.
    pub fn total(&self) -> u64 {
        self.busy + self.idle + self.steal
    }
}

/// Parses `/proc/stat`'s per-CPU lines.
pub fn parse_stat(text: &str) -> Result<BTreeMap<usize, CpuTimes>, String> {
    let mut cpus = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(cpu) = words.next().and_then(|w| w.strip_prefix("cpu")).and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        let v: Vec<u64> = words.map(|w| w.parse().unwrap_or(0)).collect();
        let f = |i: usize| v.get(i).copied().unwrap_or(0);
        cpus.insert(
            cpu,
            CpuTimes {
                busy: f(0) + f(1) + f(2) + f(5) + f(6),
                idle: f(3) + f(4),
                steal: f(7),
                irq: f(5),
                softirq: f(6),
            },
        );
    }
    if cpus.is_empty() {
        return Err("no cpuN lines".into());
    }
    Ok(cpus)
}

/// The counters at one instant.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// When they were read.
    pub at: Instant,
    /// `/proc/interrupts`.
    pub interrupts: Result<Vec<Row>, String>,
    /// `/proc/softirqs`.
    pub softirqs: Result<Vec<Row>, String>,
    /// `/proc/stat`.
    pub stat: Result<BTreeMap<usize, CpuTimes>, String>,
    /// The SMI count of each measured CPU (x86 MSR 0x34), or why it cannot be read.
    pub smi: BTreeMap<usize, Result<u64, String>>,
}

impl Snapshot {
    /// Reads the counters under `root`; the SMI counter of each of `cpus`.
    pub fn take(root: &Sysroot, cpus: &CpuSet) -> Snapshot {
        let table = |p: &str| root.read(p).and_then(|t| parse_table(&t)).map_err(|e| format!("{p}: {e}"));
        Snapshot {
            at: Instant::now(),
            interrupts: table("/proc/interrupts"),
            softirqs: table("/proc/softirqs"),
            stat: root.read("/proc/stat").and_then(|t| parse_stat(&t)).map_err(|e| format!("/proc/stat: {e}")),
            smi: cpus
                .cpus()
                .iter()
                .map(|&c| {
                    let p = format!("/dev/cpu/{c}/msr");
                    (c, root.read_u64_at(&p, MSR_SMI_COUNT).map_err(|e| format!("{p}: {e}")))
                })
                .collect(),
        }
    }
}

/// The rate per second of each row's count on `cpu` between two tables (rows absent from
/// either, or counters that went backwards, are left out).
pub fn rates(before: &[Row], after: &[Row], cpu: usize, seconds: f64) -> Vec<(Row, f64)> {
    if seconds <= 0.0 {
        return Vec::new();
    }
    after
        .iter()
        .filter_map(|a| {
            let b = before.iter().find(|b| b.name == a.name)?;
            let (x, y) = (b.counts.get(&cpu)?, a.counts.get(&cpu)?);
            (y >= x).then(|| (a.clone(), (y - x) as f64 / seconds))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = "           CPU0       CPU1       \n  \
 26:          0          8  IO-APIC   4-edge      ttyS0\n  \
 36:          0     844642  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n  \
 11:       1234       5678     GICv3  27 Level     arch_timer\n\
NMI:          0          0   Non-maskable interrupts\n\
LOC:    6334338    6662566   Local timer interrupts\n\
ERR:          0\n";

    #[test]
    fn interrupt_rows_keep_counts_per_cpu_and_the_device_name() {
        let rows = parse_table(INTERRUPTS).unwrap();
        assert_eq!(rows.len(), 6);
        assert_eq!(rows[1].name, "36");
        assert_eq!(rows[1].counts[&1], 844642);
        assert_eq!(rows[1].device(), "virtio1-req.0");
        assert_eq!(rows[2].device(), "arch_timer");
        assert!(rows[1].numbered() && !rows[4].numbered());
        assert_eq!(rows[4].description, "Local timer interrupts");
        assert_eq!(rows[5].counts.len(), 1);
    }

    #[test]
    fn a_header_that_skips_an_offline_cpu_maps_columns_to_the_right_cpus() {
        let rows = parse_table("  CPU0 CPU2\n 5: 10 20 IO-APIC 5-edge eth0\n").unwrap();
        assert_eq!(rows[0].counts.get(&2), Some(&20));
        assert_eq!(rows[0].counts.get(&1), None);
    }

    #[test]
    fn rates_are_the_count_difference_over_the_seconds() {
        let before = parse_table("CPU0 CPU1\n 36: 0 1000 x 1-edge disk\n").unwrap();
        let after = parse_table("CPU0 CPU1\n 36: 0 1850 x 1-edge disk\n").unwrap();
        let r = rates(&before, &after, 1, 0.5);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].1, 1700.0);
        assert!(rates(&before, &after, 1, 0.0).is_empty());
    }

    #[test]
    fn stat_lines_split_busy_idle_and_steal() {
        let s = parse_stat("cpu 1 2 3 4 5 6 7 8 0 0\ncpu0 10 1 5 100 4 2 3 7 0 0\n").unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[&0], CpuTimes { busy: 21, idle: 104, steal: 7, irq: 2, softirq: 3 });
        assert_eq!(s[&0].total(), 132);
        assert!(parse_stat("intr 5\n").is_err());
    }
}
