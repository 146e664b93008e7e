//! cyclictest's end-of-run text, byte for byte, written from a RunResult: the `-h/-H`
//! histogram (2.10 and 2.4 layouts), the `--spike` list and the `-b` footer. `rtlab
//! cyclictest` prints them after its run; `rtlab export --format cyclictest-hist` writes them
//! again from a saved result.

use super::Exporter;
use crate::result::{RunResult, ThreadResult};
use std::fmt::Write as _;

/// Converts ns to cyclictest's unit: µs truncated toward zero, or ns with `-N`.
pub fn unit(ns: i64, nsecs: bool) -> i64 {
    if nsecs {
        ns
    } else {
        ns / 1000
    }
}

/// The `-h`/`-H` histogram block of a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CyclictestHistogram {
    /// Which rt-tests layout.
    pub layout: Layout,
    /// `-H`: the summary column.
    pub histofall: bool,
    /// `-N`: nanoseconds.
    pub nsecs: bool,
    /// Buckets of 1 µs (`-h SIZE`).
    pub size: usize,
}

impl Exporter for CyclictestHistogram {
    fn serialize(&self, result: &RunResult) -> Result<Vec<u8>, String> {
        let threads: Option<Vec<ThreadHist>> =
            result.threads.iter().map(|t| ThreadHist::from_thread(t, self.size, self.nsecs)).collect();
        let threads = threads.ok_or_else(|| {
            "the result's histogram does not have 1 µs buckets, which cyclictest's histogram needs; measure with --bucket-size 1us".to_string()
        })?;
        Ok(histogram_block(&threads, self.histofall, self.layout).into_bytes())
    }
}

/// The `--spike` list of a result (`rtlab cyclictest --spike`): every logged spike in time order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CyclictestSpikes {
    /// `-N`: nanoseconds.
    pub nsecs: bool,
}

impl Exporter for CyclictestSpikes {
    fn serialize(&self, result: &RunResult) -> Result<Vec<u8>, String> {
        let mut spikes: Vec<(usize, i64, i64)> = Vec::new();
        let mut total = 0;
        for t in &result.threads {
            let Some(logs) = &t.logs else {
                return Err("the result holds no logged spikes: it was not written by rtlab cyclictest".into());
            };
            total += logs.spikes.count;
            spikes.extend(
                logs.spikes
                    .samples
                    .iter()
                    .map(|e| (t.thread, unit(e.latency_ns, self.nsecs), (logs.schedule_start_ns + e.at_ns) / 1000)),
            );
        }
        spikes.sort_by_key(|s| s.2);
        Ok(spikes_block(&spikes, total).into_bytes())
    }
}

/// Which layout to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// rt-tests 2.10: non-zero rows only, no `# Total:`, `# Thread N: ` + cycles joined by spaces.
    V2_10,
    /// rt-tests 2.4: every row, `# Total:`, `# Thread N:` + ` %05lu` per cycle.
    V2_4,
}

/// One thread's histogram data in cyclictest's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadHist {
    /// Count per 1 µs bucket, `0..size`.
    pub buckets: Vec<u64>,
    /// Samples at or above the size.
    pub overflows: u64,
    /// Cycle numbers (1-based) of the first overflows.
    pub overflow_cycles: Vec<u64>,
    /// Minimum, average and maximum in cyclictest's unit.
    pub min: i64,
    /// Average (truncated).
    pub avg: i64,
    /// Maximum.
    pub max: i64,
}

impl ThreadHist {
    /// The histogram of a thread of a result, `size` buckets of 1 µs; `None` when the
    /// result's histogram does not have 1 µs buckets.
    pub fn from_thread(t: &ThreadResult, size: usize, nsecs: bool) -> Option<ThreadHist> {
        let s = &t.stats;
        let h = s.histogram.as_ref()?;
        if h.bucket_ns != 1000 {
            return None;
        }
        let mut buckets = vec![0u64; size];
        for b in &h.buckets {
            let i = (b.lo_ns / 1000) as usize;
            if b.hi_ns - b.lo_ns == 1000 && i < size {
                buckets[i] += b.count;
            }
        }
        let inside: u64 = buckets.iter().sum();
        let logs = t.logs.as_ref();
        Some(ThreadHist {
            overflows: s.cycles.saturating_sub(inside),
            overflow_cycles: logs
                .map(|l| l.overflows.samples.iter().map(|e| e.cycle + 1).collect())
                .unwrap_or_default(),
            buckets,
            min: s.min_ns.map_or(0, |v| unit(v, nsecs)),
            // cyclictest averages latencies already truncated to µs (with -N, exact ns).
            avg: match (nsecs, s.mean_us_truncated) {
                (false, Some(us)) => us as i64,
                _ => s.mean_ns.map_or(0, |m| unit(m as i64, nsecs)),
            },
            max: s.max_ns.map_or(0, |v| unit(v, nsecs)),
        })
    }
}

/// The `-h`/`-H` histogram block, ending with its blank line.
pub fn histogram_block(threads: &[ThreadHist], histofall: bool, layout: Layout) -> String {
    let n = threads.len();
    let all = histofall && n > 1;
    let size = threads.iter().map(|t| t.buckets.len()).max().unwrap_or(0);
    let mut s = String::from("# Histogram\n");
    let mut totals = vec![0u64; n + 1];
    for i in 0..size {
        let row: Vec<u64> = threads.iter().map(|t| t.buckets.get(i).copied().unwrap_or(0)).collect();
        let sum: u64 = row.iter().sum();
        for (j, c) in row.iter().enumerate() {
            totals[j] += c;
        }
        totals[n] += sum;
        if layout == Layout::V2_10 && sum == 0 {
            continue;
        }
        let _ = write!(s, "{i:06} ");
        let cols: Vec<String> = row.iter().map(|c| format!("{c:06}")).collect();
        s += &cols.join("\t");
        if all {
            let _ = write!(s, "\t{sum:06}");
        }
        s.push('\n');
    }
    let line = |label: &str, vals: Vec<String>| {
        format!("# {label}:{}\n", vals.iter().map(|v| format!(" {v}")).collect::<String>())
    };
    if layout == Layout::V2_4 {
        let mut t: Vec<String> = totals[..n].iter().map(|v| format!("{v:09}")).collect();
        if all {
            t.push(format!("{:09}", totals[n]));
        }
        s += &line("Total", t);
    }
    s += &line("Min Latencies", threads.iter().map(|t| fmt5(t.min)).collect());
    s += &line("Avg Latencies", threads.iter().map(|t| fmt5(t.avg)).collect());
    let mut maxes: Vec<String> = threads.iter().map(|t| fmt5(t.max)).collect();
    if all {
        maxes.push(fmt5(threads.iter().map(|t| t.max).max().unwrap_or(0)));
    }
    s += &line("Max Latencies", maxes);
    let mut ofl: Vec<String> = threads.iter().map(|t| format!("{:05}", t.overflows)).collect();
    if all {
        ofl.push(format!("{:05}", threads.iter().map(|t| t.overflows).sum::<u64>()));
    }
    s += &line("Histogram Overflows", ofl);
    s += "# Histogram Overflow at cycle number:\n";
    for (i, t) in threads.iter().enumerate() {
        let cycles: Vec<String> = t.overflow_cycles.iter().map(|c| format!("{c:05}")).collect();
        match layout {
            Layout::V2_10 => {
                let _ = write!(s, "# Thread {i}: {}", cycles.join(" "));
            }
            Layout::V2_4 => {
                let _ = write!(s, "# Thread {i}:{}", cycles.iter().map(|c| format!(" {c}")).collect::<String>());
            }
        }
        let others = t.overflows.saturating_sub(t.overflow_cycles.len() as u64);
        if others > 0 {
            let _ = write!(s, " # {others:05} others");
        }
        s.push('\n');
    }
    s.push('\n');
    s
}

/// `%05ld`: zero-padded to five, a minus sign for negative values (never wrapped).
fn fmt5(v: i64) -> String {
    format!("{v:05}")
}

/// The `--spike` report: every recorded spike in time order and the total.
pub fn spikes_block(spikes: &[(usize, i64, i64)], total: u64) -> String {
    let mut s = String::from("\n");
    for (thread, value, ts_us) in spikes {
        let _ = writeln!(s, "T:{thread:2} Spike:{value:8}: TS: {ts_us:12}");
    }
    let _ = write!(s, "spikes = {total}\n\n");
    s
}

/// The `-b` footer: thread ids and, if the threshold was hit, which thread and value.
pub fn break_footer(tids: &[i32], hit: Option<(i32, i64)>) -> String {
    let mut s = format!("# Thread Ids:{}\n", tids.iter().map(|t| format!(" {t:05}")).collect::<String>());
    if let Some((tid, value)) = hit {
        let _ = write!(s, "# Break thread: {tid}\n# Break value: {value}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Vec<ThreadHist> {
        vec![
            ThreadHist { buckets: vec![0, 2, 0, 1], overflows: 1, overflow_cycles: vec![251], min: 1, avg: 2, max: 65 },
            ThreadHist { buckets: vec![0, 1, 0, 0], overflows: 0, overflow_cycles: vec![], min: 1, avg: 1, max: 1 },
        ]
    }

    #[test]
    fn the_2_10_histogram_omits_zero_rows_and_the_total() {
        let s = histogram_block(&two(), true, Layout::V2_10);
        assert_eq!(
            s,
            "# Histogram\n000001 000002\t000001\t000003\n000003 000001\t000000\t000001\n\
             # Min Latencies: 00001 00001\n# Avg Latencies: 00002 00001\n# Max Latencies: 00065 00001 00065\n\
             # Histogram Overflows: 00001 00000 00001\n# Histogram Overflow at cycle number:\n\
             # Thread 0: 00251\n# Thread 1: \n\n"
        );
    }

    #[test]
    fn the_2_4_histogram_prints_every_row_and_the_total() {
        let s = histogram_block(&two(), false, Layout::V2_4);
        assert!(s.starts_with("# Histogram\n000000 000000\t000000\n000001 000002\t000001\n000002"), "{s}");
        assert!(s.contains("# Total: 000000003 000000001\n"), "{s}");
        assert!(s.contains("# Max Latencies: 00065 00001\n"), "{s}");
        assert!(s.ends_with("# Thread 0: 00251\n# Thread 1:\n\n"), "{s}");
    }

    #[test]
    fn more_overflows_than_kept_cycles_are_counted_as_others() {
        let t = vec![ThreadHist { buckets: vec![1], overflows: 3, overflow_cycles: vec![5], min: 0, avg: 0, max: 9 }];
        assert!(histogram_block(&t, false, Layout::V2_10).contains("# Thread 0: 00005 # 00002 others\n"));
    }

    #[test]
    fn the_break_footer_lists_thread_ids_and_the_hit() {
        assert_eq!(
            break_footer(&[23107], Some((23107, 15))),
            "# Thread Ids: 23107\n# Break thread: 23107\n# Break value: 15\n"
        );
    }
}
