//! oslat's outputs from a noise RunResult: its text layout (one column per core) and its
//! `--json` file. oslat counts every gap between two reads in 1 µs buckets — bucket k holds the
//! gaps of k−1 to k µs, the last one everything longer — and averages the gaps in those whole
//! µs; rtlab keeps the noises themselves and the number of reads, from which the same figures
//! follow exactly.

use crate::result::{RunResult, ThreadResult};

/// One core's figures as oslat prints them.
#[derive(Clone, Debug, PartialEq)]
pub struct Core {
    /// CPU.
    pub cpu: usize,
    /// Counter frequency (MHz, whole).
    pub freq_mhz: u64,
    /// Gap counts per 1 µs bucket (index 0 is oslat's `001`).
    pub buckets: Vec<u64>,
    /// Smallest gap in whole µs, counted as oslat does (a gap below 1 µs is 1).
    pub min_us: u64,
    /// Mean of the gaps in those whole µs.
    pub avg_us: f64,
    /// Largest gap, counted the same way.
    pub max_us: u64,
    /// Time measured (s).
    pub duration_s: f64,
}

/// The cores of `r` with `buckets` buckets, or why `r` cannot be shown as oslat: it is not a
/// noise run, or its threshold left gaps of 1 µs or more uncounted.
pub fn cores(r: &RunResult, buckets: usize) -> Result<Vec<Core>, String> {
    let Some(cfg) = &r.noise else {
        return Err("oslat's layout shows noise runs (rtlab noise); this file holds wakeup latencies".into());
    };
    if cfg.threshold_ns > 1_000 {
        return Err(format!(
            "this run counted only gaps of at least {} ns; oslat's layout needs every gap from 1 µs (--threshold 1us)",
            cfg.threshold_ns
        ));
    }
    r.threads.iter().filter(|t| t.noise.is_some()).map(|t| core(t, buckets.max(1))).collect()
}

fn core(t: &ThreadResult, buckets: usize) -> Result<Core, String> {
    let n = t.noise.as_ref().ok_or("no noise figures")?;
    let noises = t.stats.cycles;
    let quiet = n.iterations.saturating_sub(noises);
    let mut counts = vec![0u64; buckets];
    counts[0] = quiet;
    let hist = t.stats.histogram.as_ref().ok_or("the run has no histogram")?;
    for b in &hist.buckets {
        // A bucket within one whole µs goes where oslat would put each of its gaps.
        let k = (b.lo_ns / 1_000) as usize;
        if b.hi_ns > (k as u64 + 1) * 1_000 && k + 1 < buckets {
            return Err(format!("histogram bucket {}..{} ns spans more than one µs", b.lo_ns, b.hi_ns));
        }
        counts[k.min(buckets - 1)] += b.count;
    }
    let to_us = |ns: Option<i64>| ns.map(|v| (v.max(0) as u64) / 1_000 + 1);
    let min_us = if quiet > 0 { 1 } else { to_us(t.stats.min_ns).unwrap_or(1) };
    let max_us = if noises > 0 { to_us(t.stats.max_ns).unwrap_or(1) } else { 1 };
    let reads = n.iterations.max(1);
    Ok(Core {
        cpu: t.cpu.unwrap_or(t.thread),
        // oslat truncates its measured rate to whole MHz.
        freq_mhz: n.counter_mhz.floor() as u64,
        buckets: counts,
        min_us,
        avg_us: (n.iterations + n.noise_us_floor) as f64 / reads as f64,
        max_us,
        duration_s: n.runtime_ns as f64 / 1e9,
    })
}

/// How oslat's text is laid out: its `-b` buckets, `-z` (rows of zeros left out) and the CPU its
/// main thread runs on (`-C`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextLayout {
    /// Histogram buckets of 1 µs (the last holds the overflows).
    pub buckets: usize,
    /// `-z`: leave out the buckets that are zero on every core.
    pub omit_zeros: bool,
    /// Where the main thread runs (oslat's default: 0).
    pub main_cpu: String,
}

/// oslat's text, as oslat 2.40 prints it: its header, then one column per core.
pub fn text(r: &RunResult, layout: &TextLayout) -> Result<String, String> {
    let cores = cores(r, layout.buckets)?;
    let cfg = r.noise.as_ref().ok_or("not a noise run")?;
    let row = |f: &dyn Fn(&Core) -> String| cores.iter().map(f).collect::<Vec<_>>().join(" ");
    let mut out = "oslat V 2.40\n".to_string();
    out += &format!("Total runtime: \t\t{} seconds\n", r.duration_s.unwrap_or(0.0).round() as u64);
    out += &format!(
        "Thread priority: \t{}\n",
        if cfg.policy.is_realtime_priority() {
            format!("SCHED_{}:{}", cfg.policy.name().to_uppercase(), cfg.priority)
        } else {
            "default".into()
        }
    );
    out += &format!("CPU list: \t\t{}\n", cfg.cpus);
    out += &format!("CPU for main thread: \t{}\n", layout.main_cpu);
    out += "Workload: \t\tno\nWorkload mem: \t\t0 (KiB)\n";
    out += &format!("Preheat cores: \t\t{}\n\n", cores.len());
    out += &format!("Pre-heat for {} seconds...\nTest starts...\nTest completed.\n\n", cfg.warmup_ns as f64 / 1e9);
    out += &format!("        Core:\t {}\n", row(&|c| c.cpu.to_string()));
    out += &format!("Counter Freq:\t {} (Mhz)\n", row(&|c| c.freq_mhz.to_string()));
    // -z leaves out the buckets that are zero on every core, the last one excepted, and says
    // where it did with `    ...` before the next bucket it prints.
    let mut left_out = false;
    for k in 0..layout.buckets {
        let last = k + 1 == layout.buckets;
        if !last && layout.omit_zeros && cores.iter().all(|c| c.buckets[k] == 0) {
            left_out = true;
            continue;
        }
        if std::mem::take(&mut left_out) {
            out += "    ...\n";
        }
        let tail = if last { " (including overflows)" } else { "" };
        let label = format!("{:03} (us)", k + 1);
        out += &format!("{label:>12}:\t {}{tail}\n", row(&|c| c.buckets[k].to_string()));
    }
    out += &format!("     Minimum:\t {} (us)\n", row(&|c| c.min_us.to_string()));
    out += &format!("     Average:\t {} (us)\n", row(&|c| format!("{:.3}", c.avg_us)));
    out += &format!("     Maximum:\t {} (us)\n", row(&|c| c.max_us.to_string()));
    out += &format!("     Max-Min:\t {} (us)\n", row(&|c| (c.max_us - c.min_us.min(c.max_us)).to_string()));
    out += &format!("    Duration:\t {} (sec)\n", row(&|c| format!("{:.3}", c.duration_s)));
    Ok(out)
}

/// oslat's `--json` file, laid out as oslat 2.40 writes it: rt-utils' header, then its
/// `num_threads` and per thread `cpu`, `freq`, `min`, `avg` (`%lf`), `max`, `duration` (`%.3f`)
/// and the non-empty buckets, in that order.
pub fn json(r: &RunResult, buckets: usize) -> Result<Vec<u8>, String> {
    use std::fmt::Write as _;
    let cores = cores(r, buckets)?;
    let mut s = super::cyclictest_json::rt_utils_header(r, "2.40", r.exit_code());
    let _ = writeln!(s, "  \"num_threads\": {},", cores.len());
    s += "  \"thread\": {\n";
    for (i, c) in cores.iter().enumerate() {
        let _ = writeln!(s, "    \"{i}\": {{");
        let _ = writeln!(s, "      \"cpu\": {},\n      \"freq\": {},", c.cpu, c.freq_mhz);
        let _ = writeln!(s, "      \"min\": {},\n      \"avg\": {:.6},", c.min_us, c.avg_us);
        let _ = writeln!(s, "      \"max\": {},\n      \"duration\": {:.3},", c.max_us, c.duration_s);
        let rows: Vec<String> = c
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("        \"{}\": {n}", k + 1))
            .collect();
        s += &super::cyclictest_json::rt_histogram(&rows);
        s += "\n";
        let _ = writeln!(s, "    }}{}", if i + 1 == cores.len() { "" } else { "," });
    }
    s += "  }\n}\n";
    Ok(s.into_bytes())
}
