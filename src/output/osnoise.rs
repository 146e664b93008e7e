//! rtla osnoise's and hwnoise's tables, byte for byte (`osnoise_top.c`, `osnoise_hist.c`), from
//! a noise run's RunResult: per CPU its periods, busy time, noise, the share of the CPU left,
//! the largest noise in a period and the largest single one, and the noises by source.

use crate::result::{RunResult, ThreadResult};

/// The `%3d %02d:%02d:%02d` of rtla's `get_duration`.
fn duration(s: u64) -> String {
    format!("{:3} {:02}:{:02}:{:02}", s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60)
}

/// One CPU's figures as rtla's osnoise tracer sums them (µs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuNoise {
    /// The CPU.
    pub cpu: usize,
    /// Periods sampled.
    pub cycles: u64,
    /// Σ busy time.
    pub runtime_us: u64,
    /// Σ noise.
    pub noise_us: u64,
    /// The largest noise of one period.
    pub max_noise_us: u64,
    /// The largest single noise.
    pub max_single_us: u64,
    /// Noises by source: HW, NMI, IRQ, Softirq, Thread.
    pub counts: [u64; 5],
}

impl CpuNoise {
    /// A noise thread's figures; with `hw` (rtla hwnoise) only hardware and NMI noise is noise.
    pub fn of(t: &ThreadResult, period_ns: i64, hw: bool) -> Option<CpuNoise> {
        let n = t.noise.as_ref()?;
        let s = n.sources.as_ref();
        let c = |f: fn(&crate::trace::noise::NoiseSources) -> crate::trace::noise::SourceFigures| {
            s.map_or(0, |s| f(s).count)
        };
        let noise_us = match s {
            Some(s) if hw => (s.hw.ns + s.nmi.ns).max(0) as u64 / 1000,
            // rtla adds its tracer's per-period samples, each in whole µs.
            _ if n.noise_us_by_period > 0 || n.noise_ns == 0 => n.noise_us_by_period,
            _ => n.noise_ns / 1000,
        };
        let max_noise_us = match (s, n.max_period_noise_ns) {
            (Some(s), _) if hw => s.hw_max_period_ns.max(0) as u64 / 1000,
            (_, 0) => n.series.noise_ns.iter().copied().max().unwrap_or(0) / 1000,
            (_, ns) => ns / 1000,
        };
        let max_single_us = match s {
            Some(s) if hw => s.hw_max_single_ns.max(0) as u64 / 1000,
            _ => t.stats.max_ns.unwrap_or(0).max(0) as u64 / 1000,
        };
        Some(CpuNoise {
            cpu: t.cpu.unwrap_or(t.thread),
            // Periods sampled: the time covered over the period, to the nearest.
            cycles: ((n.series.span_ns.max(0) + period_ns.max(1) / 2) / period_ns.max(1)).max(1) as u64,
            runtime_us: n.runtime_ns.max(0) as u64 / 1000,
            noise_us,
            max_noise_us: max_noise_us.min(noise_us),
            max_single_us,
            counts: [c(|s| s.hw), c(|s| s.nmi), c(|s| s.irq), c(|s| s.softirq), c(|s| s.thread)],
        })
    }

    /// rtla's row: `%3d #%-6d %12llu ` … the available share as `%3d.%05d` from integers.
    fn row(&self, hw: bool) -> String {
        let pct = if self.runtime_us == 0 {
            0
        } else {
            (self.runtime_us.saturating_sub(self.noise_us) as u128 * 10_000_000 / self.runtime_us as u128) as u64
        };
        let mut out = format!("{:3} #{:<6} {:12} ", self.cpu, self.cycles, self.runtime_us);
        out += &format!("{:12} ", self.noise_us);
        out += &format!("  {:3}.{:05}", pct / 100_000, pct % 100_000);
        out += &format!("{:12} {:12}", self.max_noise_us, self.max_single_us);
        out += &format!("{:12} {:12} ", self.counts[0], self.counts[1]);
        if hw {
            return out + "\n";
        }
        out + &format!("{:12} {:12} {:12}\n", self.counts[2], self.counts[3], self.counts[4])
    }
}

/// The CPUs of a noise run, in rtla's figures.
pub fn cpus(r: &RunResult, hw: bool) -> Vec<CpuNoise> {
    let period = r.noise.as_ref().map_or(1_000_000_000, |n| n.period_ns);
    r.threads.iter().filter_map(|t| CpuNoise::of(t, period, hw)).filter(|c| c.runtime_us > 0).collect()
}

/// `rtla osnoise top`'s (or `rtla hwnoise`'s) table after `elapsed_s` seconds.
pub fn top(cpus: &[CpuNoise], hw: bool, elapsed_s: u64) -> String {
    let mut out = " ".repeat(42);
    out += if hw { "Hardware-related Noise" } else { "Operating System Noise" };
    if !hw {
        out += &" ".repeat(39);
    }
    out += &" ".repeat(35);
    out += "\n";
    out += &format!("duration: {:>9} | time is in us\n", duration(elapsed_s));
    out += "CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single          HW          NMI";
    if !hw {
        out += "          IRQ      Softirq       Thread";
    }
    out += "\n";
    for c in cpus {
        out += &c.row(hw);
    }
    out
}

/// One summary cell of a CPU's column.
type Cell<'a> = dyn Fn(&ThreadResult) -> String + 'a;

/// How `rtla osnoise hist`'s histogram is laid out.
pub use crate::output::timerlat::HistLayout;

/// `rtla osnoise hist`'s histogram of the noises, per CPU (`osnoise_hist.c`): the `#` header,
/// `Index   CPU-NNN` columns, `%-6d` indexes and `%9d ` cells, `over:`, then count/min/avg/max.
pub fn hist(r: &RunResult, layout: &HistLayout) -> String {
    let threads: Vec<&ThreadResult> = r.threads.iter().filter(|t| t.stats.cycles > 0).collect();
    let label = |l: &str| if layout.index { l.to_string() } else { String::new() };
    let mut out = String::new();
    if layout.header {
        out += "# RTLA osnoise histogram\n# Time unit is microseconds (us)\n";
        out += &format!("# Duration: {}\n", duration(r.duration_s.unwrap_or(0.0) as u64));
        out += &label("Index");
        for t in &threads {
            out += &format!("   CPU-{:03}", t.cpu.unwrap_or(t.thread));
        }
        out += "\n";
    }
    let bins: Vec<(Vec<u64>, u64)> = threads
        .iter()
        .map(|t| {
            let mut v = vec![0u64; layout.entries as usize];
            let mut over = 0;
            for b in t.stats.histogram.as_ref().map_or(&[][..], |h| &h.buckets[..]) {
                match v.get_mut(((b.lo_ns / 1000) / layout.bucket_us) as usize) {
                    Some(n) => *n += b.count,
                    None => over += b.count,
                }
            }
            (v, over)
        })
        .collect();
    for i in 0..layout.entries as usize {
        if !layout.zeros && bins.iter().all(|(v, _)| v[i] == 0) {
            continue;
        }
        out += &if layout.index { format!("{:<6}", i as u64 * layout.bucket_us) } else { String::new() };
        out += &bins.iter().map(|(v, _)| format!("{:9} ", v[i])).collect::<String>();
        out += "\n";
    }
    if layout.summary {
        out += &label("over: ");
        out += &bins.iter().map(|(_, o)| format!("{o:9} ")).collect::<String>();
        out += "\n";
        let cell = |v: Option<i64>| v.map_or_else(|| format!("{:>9} ", '-'), |v| format!("{v:9} "));
        // rtla reads its kernel histogram back: every noise is its bucket's lower edge, for the
        // minimum, the maximum and the sum the average divides.
        let b = layout.bucket_us.max(1) as i64;
        let edge = |ns: Option<i64>| ns.map(|v| v / 1000 / b * b);
        let rows: [(&str, &Cell<'_>); 4] = [
            ("count:", &|t| format!("{:9} ", t.stats.cycles)),
            ("min:  ", &|t| cell(edge(t.stats.min_ns))),
            ("avg:  ", &|t| cell(t.noise.as_ref().map(|n| (n.noise_us_floor / t.stats.cycles.max(1)) as i64))),
            ("max:  ", &|t| cell(edge(t.stats.max_ns))),
        ];
        for (name, f) in rows {
            out += &label(name);
            out += &threads.iter().map(|t| f(t)).collect::<String>();
            out += "\n";
        }
    }
    out
}

/// The `trace` action's file for a noise run. This kernel has no osnoise tracer, so there is no
/// tracer buffer to save: the file says so and holds what rtlab recorded instead — per CPU its
/// figures (as the table counts them, µs) and its noise per interval of the run's series.
pub fn record(r: &RunResult, hw: bool) -> String {
    let mut out = String::from(
        "# rtlab osnoise record: this kernel has no osnoise tracer (no tracer buffer to save).\n\
         # What rtlab recorded instead: per CPU, the table's figures (us), then its noise per\n\
         # interval of the run: start (s since the start), the noise in it (ns), the noises.\n",
    );
    for c in cpus(r, hw) {
        out += &format!(
            "cpu {} periods {} runtime_us {} noise_us {} max_noise_us {} max_single_us {} hw {} nmi {} irq {} softirq {} thread {}\n",
            c.cpu, c.cycles, c.runtime_us, c.noise_us, c.max_noise_us, c.max_single_us,
            c.counts[0], c.counts[1], c.counts[2], c.counts[3], c.counts[4]
        );
    }
    for t in &r.threads {
        let Some(n) = t.noise.as_ref() else { continue };
        let cpu = t.cpu.unwrap_or(t.thread);
        let step = n.series.interval_ns.max(1);
        for (i, (ns, count)) in n.series.noise_ns.iter().zip(&n.series.count).enumerate() {
            out += &format!("cpu {cpu} at {:.3} noise_ns {ns} noises {count}\n", (i as i64 * step) as f64 / 1e9);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_rtlas_format_with_its_integer_share_of_the_cpu() {
        let c = CpuNoise {
            cpu: 1,
            cycles: 5,
            runtime_us: 5_000_000,
            noise_us: 5_123,
            max_noise_us: 1_200,
            max_single_us: 1_001,
            counts: [2, 0, 5_004, 30, 5],
        };
        // (5000000 − 5123) · 10⁷ / 5000000 = 9989754 → 99.89754
        // "%3d #%-6d %12llu ": the count padded to 6, a space, the runtime right in 12.
        let want = "  1 #5           5000000         5123    99.89754        1200         1001           2            0         5004           30            5\n";
        assert_eq!(c.row(false), want);
        assert!(c.row(true).ends_with("           2            0 \n"), "{:?}", c.row(true));
        let t = top(&[c], false, 5);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0].trim(), "Operating System Noise");
        assert_eq!(lines[1], "duration:   0 00:00:05 | time is in us");
        assert!(
            lines[2].starts_with("CPU Period       Runtime        Noise  % CPU Aval   Max Noise   Max Single"),
            "{t}"
        );
        assert!(top(&[c], true, 5).starts_with(&format!("{}Hardware-related Noise", " ".repeat(42))));
    }
}
