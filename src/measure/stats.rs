//! Exact per-thread statistics and the live cells the display reads.

use super::histogram::{Counts, Histogram, Layout, PERCENTILES};
use super::ring::SampleRing;
use std::collections::BTreeMap;
use std::sync::atomic::{fence, AtomicI64, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

/// Values the display reads while a probe runs. Written by the probe thread only, with plain
/// relaxed stores (a `mov` on x86, no `lock` prefix); padded to keep threads off each other's
/// cache lines.
#[derive(Debug)]
#[repr(align(128))]
pub struct Live {
    /// Samples recorded.
    pub cycles: AtomicU64,
    /// Latest latency (ns).
    pub cur: AtomicI64,
    /// Smallest latency so far (ns); `i64::MAX` before the first sample.
    pub min: AtomicI64,
    /// Largest latency so far (ns); `i64::MIN` before the first sample.
    pub max: AtomicI64,
    /// Missed periods so far.
    pub missed: AtomicU64,
    /// Sum of latencies (ns, wrapping) for the live mean.
    pub sum: AtomicI64,
    /// The histogram (also the final one).
    pub hist: Histogram,
    /// Σ of the latencies as cyclictest computes each one, in whole µs (see
    /// [`cyclictest_us`]).
    pub sum_us: AtomicI64,
    /// The exact sums and the seqlock that makes every figure here one instant's (for
    /// checkpoints).
    published: Published,
    /// Exact count boundaries (ns, ascending): samples ≤ each are counted exactly, whatever
    /// the histogram's buckets (`rtlab monitor`'s `le` bounds and thresholds). Usually empty.
    cuts: Box<[u64]>,
    /// Samples per interval between cuts: `[0]` ≤ cuts[0], `[i]` in (cuts[i−1], cuts[i]], the
    /// last > every cut.
    cut_counts: Box<[AtomicU64]>,
    /// The probe's schedule start (ns on its clock; `i64::MIN` until it starts): a sample's
    /// `at_ns` is relative to it.
    pub start_ns: AtomicI64,
}

/// How many times a checkpoint tries to read a consistent state before it gives up.
pub const CHECKPOINT_TRIES: u32 = 10_000;

/// How many times a checkpoint tries to copy the histogram between two samples before it
/// copies it just before the other figures instead.
const STRICT_TRIES: u32 = 64;

/// The probe's exact sums, written with every sample; `seq` is odd while a sample is being
/// recorded, so that a checkpoint reads every live figure (count, sums, extremes, missed,
/// histogram, cut counts) as of one sample.
#[derive(Debug, Default)]
struct Published {
    seq: AtomicU64,
    sum_lo: AtomicU64,
    sum_hi: AtomicU64,
    sq_lo: AtomicU64,
    sq_hi: AtomicU64,
    /// Carries of Σx² out of 128 bits.
    sq_wraps: AtomicU64,
    negative: AtomicU64,
    max_at_cycle: AtomicU64,
    max_at_ns: AtomicI64,
}

impl Live {
    /// Empty live cells with a histogram of `layout`.
    pub fn new(layout: Layout) -> Live {
        Live::with_cuts(layout, &[])
    }

    /// Empty live cells that also count exactly how many samples are ≤ each of `cuts` (ns).
    pub fn with_cuts(layout: Layout, cuts: &[u64]) -> Live {
        let mut cuts = cuts.to_vec();
        cuts.sort_unstable();
        cuts.dedup();
        let intervals = if cuts.is_empty() { 0 } else { cuts.len() + 1 };
        Live {
            cuts: cuts.into_boxed_slice(),
            cut_counts: (0..intervals).map(|_| AtomicU64::new(0)).collect(),
            cycles: AtomicU64::new(0),
            cur: AtomicI64::new(0),
            min: AtomicI64::new(i64::MAX),
            max: AtomicI64::new(i64::MIN),
            missed: AtomicU64::new(0),
            sum: AtomicI64::new(0),
            sum_us: AtomicI64::new(0),
            hist: Histogram::new(layout),
            published: Published::default(),
            start_ns: AtomicI64::new(i64::MIN),
        }
    }

    /// The exact count boundaries (ns, ascending), if any.
    pub fn cuts(&self) -> &[u64] {
        &self.cuts
    }

    /// A checkpoint of a running probe: every figure — count, exact sums, minimum, maximum and
    /// its position, missed periods, the histogram, the cut counts — as of one sample (read
    /// between two samples under the probe's seqlock, so a percentile is never below a sample
    /// it holds and `sum / count` is a true mean). A probe that records faster than the
    /// histogram can be copied between two samples (only a simulated one does) gets the
    /// histogram of an instant just before the rest, every other figure still of one instant.
    /// `None` when no consistent state could be read in [`CHECKPOINT_TRIES`] tries (the probe
    /// preempted while recording): the reader never spins without bound.
    pub fn checkpoint(&self) -> Option<Summary> {
        let p = &self.published;
        let mut counts = self.hist.snapshot();
        let mut cut_counts = vec![0; self.cut_counts.len()];
        let mut tries = 0;
        let (cycles, sum, sq, sq_wraps, negative, min, max, at_cycle, at_ns, missed) = loop {
            tries += 1;
            if tries > CHECKPOINT_TRIES {
                return None;
            }
            // A probe recording faster than the histogram can be copied between two samples
            // (a simulated one): the histogram is copied just before the rest, which is then
            // one instant's. Its maximum is still at least every sample the copy holds.
            let racing = tries > STRICT_TRIES;
            if racing {
                self.hist.snapshot_into(&mut counts);
                fence(Acquire);
            }
            let s1 = p.seq.load(Acquire);
            if s1 % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let v = (
                self.cycles.load(Relaxed),
                ((p.sum_hi.load(Relaxed) as u128) << 64 | p.sum_lo.load(Relaxed) as u128) as i128,
                (p.sq_hi.load(Relaxed) as u128) << 64 | p.sq_lo.load(Relaxed) as u128,
                p.sq_wraps.load(Relaxed),
                p.negative.load(Relaxed),
                self.min.load(Relaxed),
                self.max.load(Relaxed),
                p.max_at_cycle.load(Relaxed),
                p.max_at_ns.load(Relaxed),
                self.missed.load(Relaxed),
            );
            if !racing {
                self.hist.snapshot_into(&mut counts);
            }
            for (c, a) in cut_counts.iter_mut().zip(self.cut_counts.iter()) {
                *c = a.load(Relaxed);
            }
            fence(Acquire);
            if p.seq.load(Relaxed) == s1 {
                break v;
            }
        };
        let has = cycles > 0;
        Some(Summary {
            cycles,
            missed,
            negative,
            min_ns: has.then_some(min),
            max_ns: has.then_some(max),
            max_at_cycle: has.then_some(at_cycle),
            max_at_ns: has.then_some(at_ns),
            max_at_thread: None,
            sum_ns: sum,
            sum_sq_ns2: sq,
            sum_sq_overflow: sum_sq_beyond_128_bits(sq_wraps, sq),
            sum_us_truncated: None,
            over: ExceedLog::off(),
            outliers: ExceedLog::off(),
            counts,
            cut_counts,
        })
    }

    /// A consistent-enough copy for display (fields may be one sample apart).
    pub fn snapshot(&self) -> LiveSnapshot {
        let cycles = self.cycles.load(Relaxed);
        let counts = self.hist.snapshot();
        let max = self.max.load(Relaxed);
        LiveSnapshot {
            cycles,
            cur: self.cur.load(Relaxed),
            min: self.min.load(Relaxed),
            max,
            missed: self.missed.load(Relaxed),
            mean: if cycles == 0 { 0.0 } else { self.sum.load(Relaxed) as f64 / cycles as f64 },
            mean_us_truncated: if cycles == 0 { 0.0 } else { self.sum_us.load(Relaxed) as f64 / cycles as f64 },
            p99: counts.percentile(0.99, max),
            work: None,
            stages: None,
        }
    }
}

/// What the live display shows for one thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LiveSnapshot {
    /// Samples so far.
    pub cycles: u64,
    /// Latest latency (ns).
    pub cur: i64,
    /// Minimum (ns).
    pub min: i64,
    /// Maximum (ns).
    pub max: i64,
    /// Missed periods.
    pub missed: u64,
    /// Mean (ns).
    pub mean: f64,
    /// Mean of the per-sample latencies in whole µs as cyclictest computes them.
    pub mean_us_truncated: f64,
    /// 99th percentile upper bound (ns), if any sample.
    pub p99: Option<i64>,
    /// A working task's response time and deadline misses so far.
    pub work: Option<WorkSnapshot>,
    /// A measuring thread watched through the kernel's events (`--stages`): its timer
    /// interrupt and switch-in latencies so far.
    pub stages: Option<StagesSnapshot>,
}

/// One stage's live figures (ns), for `rtlab timerlat top`'s columns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageFigures {
    /// Samples so far.
    pub cycles: u64,
    /// Latest.
    pub cur: i64,
    /// Smallest.
    pub min: i64,
    /// Mean.
    pub mean: f64,
    /// Largest.
    pub max: i64,
    /// 99th percentile (the upper edge of its bucket).
    pub p99: Option<i64>,
}

impl StageFigures {
    /// A stage cell's figures, `None` before its first sample.
    pub fn of(live: &Live) -> Option<StageFigures> {
        StageFigures::from_snapshot(&live.snapshot())
    }

    /// The figures of a live snapshot, `None` before its first sample.
    pub fn from_snapshot(s: &LiveSnapshot) -> Option<StageFigures> {
        (s.cycles > 0).then_some(StageFigures {
            cycles: s.cycles,
            cur: s.cur,
            min: s.min,
            mean: s.mean,
            max: s.max,
            p99: s.p99,
        })
    }
}

/// A watched thread's stages as they are now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StagesSnapshot {
    /// Expiry → the timer's interrupt callback.
    pub irq: Option<StageFigures>,
    /// Expiry → the switch to the thread (or its first event).
    pub thread: Option<StageFigures>,
    /// Expiry → its return to user space, in the same periods.
    pub user: Option<StageFigures>,
    /// Stage thresholds crossed so far (`rtlab timerlat --on-threshold continue`).
    pub hits: u64,
}

/// What the live display shows of a working task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorkSnapshot {
    /// Latest response time (ns).
    pub cur: i64,
    /// 99th percentile of the response time, upper bound (ns).
    pub p99: Option<i64>,
    /// Largest response time (ns).
    pub max: i64,
    /// Deadline misses (late jobs and skipped releases).
    pub misses: u64,
    /// A watched thread's timer interrupt latency: 99th percentile (upper bound) and largest
    /// (ns); `None` for rtlab's own tasks, or before a timer release.
    pub irq: Option<(Option<i64>, i64)>,
}

/// A sample that exceeded a threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exceedance {
    /// Cycle index (0-based, after warm-up).
    pub cycle: u64,
    /// Time since the thread's start (ns).
    pub at_ns: i64,
    /// The latency (ns).
    pub latency_ns: i64,
}

/// Samples above a threshold: how many, and the first `capacity` of them (preallocated, so
/// logging never allocates in the measuring loop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExceedLog {
    threshold_ns: i64,
    /// Samples above the threshold.
    pub count: u64,
    /// Bursts of them: runs of consecutive samples above the threshold (one late episode, such
    /// as a host's stall, often makes several), counted as one each.
    pub bursts: u64,
    /// The cycle of the latest sample above the threshold.
    last_cycle: u64,
    /// The first of them, up to the capacity given at creation.
    pub entries: Vec<Exceedance>,
}

impl ExceedLog {
    /// The threshold: samples strictly above it are logged (`None`: none is).
    pub fn threshold_ns(&self) -> Option<i64> {
        (self.threshold_ns != i64::MAX).then_some(self.threshold_ns)
    }

    /// A log of samples strictly above `threshold_ns` (`None`: never), keeping `capacity`.
    pub fn new(threshold_ns: Option<i64>, capacity: usize) -> ExceedLog {
        ExceedLog {
            threshold_ns: threshold_ns.unwrap_or(i64::MAX),
            count: 0,
            bursts: 0,
            last_cycle: 0,
            entries: Vec::with_capacity(capacity),
        }
    }

    /// A log that records nothing.
    pub fn off() -> ExceedLog {
        ExceedLog::new(None, 0)
    }

    /// The first sample above the threshold.
    pub fn first(&self) -> Option<Exceedance> {
        self.entries.first().copied()
    }

    /// Adds another log's count and entries (for all-thread summaries).
    pub fn merge(&mut self, other: &ExceedLog) {
        // An empty summary (all threads') takes the threshold of what it gathers.
        self.threshold_ns = self.threshold_ns.min(other.threshold_ns);
        self.count += other.count;
        self.bursts += other.bursts;
        self.entries.extend_from_slice(&other.entries);
    }

    #[inline(always)]
    fn check(&mut self, latency: i64, cycle: u64, at_ns: i64) {
        if latency > self.threshold_ns {
            // Only a sample above the threshold pays for the burst count.
            self.bursts += u64::from(self.count == 0 || cycle != self.last_cycle.wrapping_add(1));
            self.last_cycle = cycle;
            self.count += 1;
            if self.entries.len() < self.entries.capacity() {
                self.entries.push(Exceedance { cycle, at_ns, latency_ns: latency });
            }
        }
    }
}

/// One latency as cyclictest computes it (`calcdiff`): whole seconds × 10⁶ plus the
/// difference of the nanosecond parts divided by 1000, truncated toward zero. Averaging these
/// is how cyclictest gets its `Avg`, about 0.5 µs below the exact mean.
#[inline(always)]
pub fn cyclictest_us(intended_ns: i64, now_ns: i64) -> i64 {
    const S: i64 = 1_000_000_000;
    let late = now_ns - intended_ns;
    if intended_ns >= 0 && late >= 0 && intended_ns % S + late < S {
        // Both in the same second: the nanosecond difference is the latency.
        return late / 1000;
    }
    (now_ns.div_euclid(S) - intended_ns.div_euclid(S)) * 1_000_000
        + (now_ns.rem_euclid(S) - intended_ns.rem_euclid(S)) / 1000
}

/// Σx² in floating point from its carries out of 128 bits and the low 128 bits, when it
/// did not fit (`None` when it did: then the u128 is exact).
fn sum_sq_beyond_128_bits(wraps: u64, low: u128) -> Option<f64> {
    (wraps > 0).then(|| wraps as f64 * 2f64.powi(128) + low as f64)
}

/// The measuring thread's bookkeeping: exact sums in 128 bits plus the live cells.
#[derive(Debug)]
pub struct Recorder<'a> {
    live: &'a Live,
    sum: i128,
    sum_sq: u128,
    /// Carries of Σx² out of 128 bits (latencies of years).
    sum_sq_wraps: u64,
    negative: u64,
    max_at_cycle: u64,
    max_at_ns: i64,
    over: ExceedLog,
    outliers: ExceedLog,
    ring: Option<&'a SampleRing>,
    /// Latencies were also summed as cyclictest truncates them ([`Recorder::record_cyclictest_us`]).
    sums_us: bool,
}

impl<'a> Recorder<'a> {
    /// A recorder writing into `live`; samples above `threshold_ns` are counted as over (the
    /// first one kept).
    pub fn new(live: &'a Live, threshold_ns: Option<i64>) -> Recorder<'a> {
        Recorder::with_logs(live, ExceedLog::new(threshold_ns, 1), ExceedLog::off(), None)
    }

    /// A recorder with explicit logs: `over` (the verdict threshold), `outliers` (e.g.
    /// cyclictest's histogram overflows or spikes), and an optional ring that receives every
    /// sample.
    pub fn with_logs(
        live: &'a Live,
        over: ExceedLog,
        outliers: ExceedLog,
        ring: Option<&'a SampleRing>,
    ) -> Recorder<'a> {
        Recorder {
            live,
            sum: 0,
            sum_sq: 0,
            sum_sq_wraps: 0,
            negative: 0,
            max_at_cycle: 0,
            max_at_ns: 0,
            over,
            outliers,
            ring,
            sums_us: false,
        }
    }

    /// Records one sample: `latency` ns at `at_ns` since the start, `missed` periods skipped.
    #[inline(always)]
    pub fn record(&mut self, latency: i64, at_ns: i64, missed: u64) {
        let l = self.live;
        let p = &l.published;
        // Seqlock writer (plain stores on x86): odd while this sample is being recorded.
        let seq = p.seq.load(Relaxed);
        p.seq.store(seq + 1, Relaxed);
        fence(Release);
        let cycle = l.cycles.load(Relaxed);
        self.sum += latency as i128;
        // |latency| ≤ 2^63, so a square fits in u128; the sum may not: each carry out of 128
        // bits is counted (without a branch), so Σx² = wraps·2^128 + sum_sq, never wrapped.
        let (sq, carry) = self.sum_sq.overflowing_add((latency as i128 * latency as i128) as u128);
        self.sum_sq = sq;
        self.sum_sq_wraps += carry as u64;
        if latency < l.min.load(Relaxed) {
            l.min.store(latency, Relaxed);
        }
        // Figures that change rarely are published only when they change.
        if latency > l.max.load(Relaxed) {
            l.max.store(latency, Relaxed);
            self.max_at_cycle = cycle;
            self.max_at_ns = at_ns;
            p.max_at_cycle.store(cycle, Relaxed);
            p.max_at_ns.store(at_ns, Relaxed);
        }
        if latency < 0 {
            self.negative += 1;
            p.negative.store(self.negative, Relaxed);
        }
        self.over.check(latency, cycle, at_ns);
        self.outliers.check(latency, cycle, at_ns);
        if let Some(r) = self.ring {
            r.push(at_ns, latency);
        }
        l.hist.record(latency);
        if !l.cuts.is_empty() {
            let i = l.cuts.partition_point(|c| (*c as i128) < latency as i128);
            let c = &l.cut_counts[i];
            c.store(c.load(Relaxed) + 1, Relaxed);
        }
        l.cur.store(latency, Relaxed);
        l.sum.store(l.sum.load(Relaxed).wrapping_add(latency), Relaxed);
        l.missed.store(l.missed.load(Relaxed) + missed, Relaxed);
        l.cycles.store(cycle + 1, Relaxed);
        p.sum_lo.store(self.sum as u128 as u64, Relaxed);
        p.sum_hi.store(((self.sum as u128) >> 64) as u64, Relaxed);
        p.sq_lo.store(self.sum_sq as u64, Relaxed);
        p.sq_hi.store((self.sum_sq >> 64) as u64, Relaxed);
        p.sq_wraps.store(self.sum_sq_wraps, Relaxed);
        p.seq.store(seq + 2, Release);
    }

    /// Counts `n` periods missed without a sample (a release that found its task still
    /// working, as rt-app's overrun timer event does).
    pub fn add_missed(&mut self, n: u64) {
        let l = &self.live.missed;
        l.store(l.load(Relaxed) + n, Relaxed);
    }

    /// Tells readers the schedule start (once, before the first sample).
    pub fn started(&mut self, start_ns: i64) {
        self.live.start_ns.store(start_ns, Relaxed);
    }

    /// Adds one sample's latency as cyclictest computes it (see [`cyclictest_us`]); the loop
    /// calls it right after [`Recorder::record`].
    #[inline(always)]
    pub fn record_cyclictest_us(&mut self, us: i64) {
        let l = &self.live.sum_us;
        l.store(l.load(Relaxed).wrapping_add(us), Relaxed);
        self.sums_us = true;
    }

    /// Writes every entry of the logs once (then empties them), so that recording an
    /// exceedance never faults a page in while measuring.
    pub fn prefault(&mut self) {
        for log in [&mut self.over, &mut self.outliers] {
            let cap = log.entries.capacity();
            log.entries.resize(cap, Exceedance { cycle: 0, at_ns: 0, latency_ns: 0 });
            std::hint::black_box(&log.entries);
            log.entries.clear();
        }
    }

    /// The finished statistics.
    pub fn finish(&self) -> Summary {
        let l = self.live;
        let cycles = l.cycles.load(Relaxed);
        Summary {
            cycles,
            missed: l.missed.load(Relaxed),
            negative: self.negative,
            min_ns: (cycles > 0).then(|| l.min.load(Relaxed)),
            max_ns: (cycles > 0).then(|| l.max.load(Relaxed)),
            max_at_cycle: (cycles > 0).then_some(self.max_at_cycle),
            max_at_ns: (cycles > 0).then_some(self.max_at_ns),
            max_at_thread: None,
            sum_ns: self.sum,
            sum_sq_ns2: self.sum_sq,
            sum_sq_overflow: sum_sq_beyond_128_bits(self.sum_sq_wraps, self.sum_sq),
            sum_us_truncated: self.sums_us.then(|| l.sum_us.load(Relaxed)),
            over: self.over.clone(),
            outliers: self.outliers.clone(),
            counts: l.hist.snapshot(),
            cut_counts: l.cut_counts.iter().map(|c| c.load(Relaxed)).collect(),
        }
    }
}

/// Exact statistics of one thread or of several merged.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Samples.
    pub cycles: u64,
    /// Missed periods.
    pub missed: u64,
    /// Samples with a negative latency (counted as 0 in the histogram).
    pub negative: u64,
    /// Minimum latency (ns).
    pub min_ns: Option<i64>,
    /// Maximum latency (ns).
    pub max_ns: Option<i64>,
    /// Cycle index of the maximum.
    pub max_at_cycle: Option<u64>,
    /// Time of the maximum since the thread's start (ns).
    pub max_at_ns: Option<i64>,
    /// Thread of the maximum (for merged summaries).
    pub max_at_thread: Option<usize>,
    /// Σ latency (ns).
    pub sum_ns: i128,
    /// Σ latency² (ns²), exact (unless `sum_sq_overflow` is set).
    pub sum_sq_ns2: u128,
    /// Σ latency² in floating point, when the exact sum would have overflowed 128 bits: the
    /// standard deviation is then computed in f64 (and the result says so).
    pub sum_sq_overflow: Option<f64>,
    /// Σ of the per-sample latencies in whole µs as cyclictest computes them (OS-thread
    /// probes only), for `rtlab cyclictest`'s `Avg`.
    pub sum_us_truncated: Option<i64>,
    /// Samples above the `--max-latency` threshold, and the first of them.
    pub over: ExceedLog,
    /// The outlier log (histogram overflows or spikes in cyclictest mode).
    pub outliers: ExceedLog,
    /// The histogram.
    pub counts: Counts,
    /// Exact counts between the probe's cuts ([`Live::cuts`]; empty without cuts): `[0]` ≤
    /// the first cut, `[i]` in (cut i−1, cut i], the last above every cut.
    pub cut_counts: Vec<u64>,
}

impl Summary {
    /// A summary with no sample.
    pub fn empty(layout: Layout) -> Summary {
        Summary {
            cycles: 0,
            missed: 0,
            negative: 0,
            min_ns: None,
            max_ns: None,
            max_at_cycle: None,
            max_at_ns: None,
            max_at_thread: None,
            sum_ns: 0,
            sum_sq_ns2: 0,
            sum_sq_overflow: None,
            sum_us_truncated: Some(0),
            over: ExceedLog::off(),
            outliers: ExceedLog::off(),
            counts: Counts::empty(layout),
            cut_counts: Vec::new(),
        }
    }

    /// Builds a summary from plain samples (brute force; used by the simulation tests and
    /// by anything that holds raw samples).
    pub fn from_samples(layout: Layout, samples: &[i64]) -> Summary {
        let live = Live::new(layout);
        let mut r = Recorder::new(&live, None);
        for (i, &s) in samples.iter().enumerate() {
            r.record(s, i as i64, 0);
        }
        r.finish()
    }

    /// Adds thread `thread`'s summary into this one (`self` tracks which thread had the max).
    pub fn merge(&mut self, other: &Summary, thread: usize) {
        let was_empty = self.cycles == 0 && self.cut_counts.is_empty();
        self.cycles += other.cycles;
        self.missed += other.missed;
        self.negative += other.negative;
        self.sum_ns += other.sum_ns;
        self.sum_us_truncated = self.sum_us_truncated.zip(other.sum_us_truncated).map(|(a, b)| a + b);
        match (self.sum_sq_overflow, other.sum_sq_overflow, self.sum_sq_ns2.checked_add(other.sum_sq_ns2)) {
            (None, None, Some(v)) => self.sum_sq_ns2 = v,
            (a, b, _) => {
                let f = |o: Option<f64>, exact: u128| o.unwrap_or(exact as f64);
                self.sum_sq_overflow = Some(f(a, self.sum_sq_ns2) + f(b, other.sum_sq_ns2));
            }
        }
        self.over.merge(&other.over);
        self.outliers.merge(&other.outliers);
        self.min_ns = match (self.min_ns, other.min_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if other.max_ns.is_some() && (self.max_ns.is_none() || other.max_ns > self.max_ns) {
            self.max_ns = other.max_ns;
            self.max_at_cycle = other.max_at_cycle;
            self.max_at_ns = other.max_at_ns;
            self.max_at_thread = Some(other.max_at_thread.unwrap_or(thread));
        }
        self.counts.merge(&other.counts);
        if was_empty {
            self.cut_counts = other.cut_counts.clone();
        } else if self.cut_counts.len() == other.cut_counts.len() {
            self.cut_counts.iter_mut().zip(&other.cut_counts).for_each(|(a, b)| *a += b);
        } else {
            // Different cuts cannot be added: none is exact any more.
            self.cut_counts.clear();
        }
    }

    /// The samples added since `earlier` (a checkpoint of the same probe taken before): counts,
    /// sums and histogram are differences; the window's smallest and largest samples, known
    /// only from the samples themselves, are `min_max` (`(min, (max, at_ns))`).
    pub fn since(&self, earlier: &Summary, min_max: Option<(i64, (i64, i64))>) -> Summary {
        let cycles = self.cycles.saturating_sub(earlier.cycles);
        let exact = self.sum_sq_overflow.is_none() && earlier.sum_sq_overflow.is_none();
        let mut over = ExceedLog::new(self.over.threshold_ns(), 0);
        over.count = self.over.count.saturating_sub(earlier.over.count);
        over.bursts = self.over.bursts.saturating_sub(earlier.over.bursts);
        let has = cycles > 0;
        Summary {
            cycles,
            missed: self.missed.saturating_sub(earlier.missed),
            negative: self.negative.saturating_sub(earlier.negative),
            min_ns: min_max.filter(|_| has).map(|m| m.0),
            max_ns: min_max.filter(|_| has).map(|m| m.1 .0),
            max_at_cycle: None,
            max_at_ns: min_max.filter(|_| has).map(|m| m.1 .1),
            max_at_thread: None,
            sum_ns: self.sum_ns - earlier.sum_ns,
            sum_sq_ns2: if exact { self.sum_sq_ns2.wrapping_sub(earlier.sum_sq_ns2) } else { 0 },
            sum_sq_overflow: (!exact).then(|| {
                self.sum_sq_overflow.unwrap_or(self.sum_sq_ns2 as f64)
                    - earlier.sum_sq_overflow.unwrap_or(earlier.sum_sq_ns2 as f64)
            }),
            sum_us_truncated: None,
            over,
            outliers: ExceedLog::off(),
            counts: self.counts.since(&earlier.counts),
            cut_counts: if self.cut_counts.len() == earlier.cut_counts.len() {
                self.cut_counts.iter().zip(&earlier.cut_counts).map(|(a, b)| a.saturating_sub(*b)).collect()
            } else {
                self.cut_counts.clone()
            },
        }
    }

    /// Exact mean in ns.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.cycles > 0).then(|| self.sum_ns as f64 / self.cycles as f64)
    }

    /// True (population) standard deviation in ns: √(Σ(x−μ)²/n), from the exact sums.
    /// Σ(x−μ)² = (n·Σx² − (Σx)²)/n is computed in 128-bit integers when it fits.
    pub fn stdev_ns(&self) -> Option<f64> {
        if self.cycles == 0 {
            return None;
        }
        let n = self.cycles as u128;
        // n·Σx² − (Σx)², all in unsigned 128 bits (a cast to i128 could turn it negative).
        let exact = self
            .sum_sq_overflow
            .is_none()
            .then(|| {
                let square = self.sum_ns.unsigned_abs().checked_mul(self.sum_ns.unsigned_abs());
                self.sum_sq_ns2.checked_mul(n).zip(square).map(|(a, b)| a.saturating_sub(b))
            })
            .flatten();
        let var = match exact {
            Some(num) => num as f64 / (n as f64 * n as f64),
            None => {
                let mean = self.sum_ns as f64 / n as f64;
                let sq = self.sum_sq_overflow.unwrap_or(self.sum_sq_ns2 as f64);
                (sq / n as f64 - mean * mean).max(0.0)
            }
        };
        Some(var.sqrt())
    }

    /// The standard percentiles (upper bounds, see [`super::histogram`]).
    pub fn percentiles(&self) -> BTreeMap<String, Option<i64>> {
        let max = self.max_ns.unwrap_or(0);
        PERCENTILES.iter().map(|(k, q)| (k.to_string(), self.counts.percentile(*q, max))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_window_is_the_difference_of_two_checkpoints() {
        let layout = Layout::DEFAULT;
        let live = Live::new(layout);
        let mut r = Recorder::new(&live, Some(50_000));
        for (i, l) in [10_000i64, 20_000, 60_000].iter().enumerate() {
            r.record(*l, i as i64, 0);
        }
        let before = r.finish();
        for (i, l) in [30_000i64, 70_000].iter().enumerate() {
            r.record(*l, 10 + i as i64, 1);
        }
        let now = r.finish();
        let w = now.since(&before, Some((30_000, (70_000, 11))));
        assert_eq!((w.cycles, w.missed, w.sum_ns, w.over.count), (2, 2, 100_000, 1));
        assert_eq!(w.sum_sq_ns2, 30_000u128.pow(2) + 70_000u128.pow(2));
        assert_eq!((w.min_ns, w.max_ns, w.max_at_ns), (Some(30_000), Some(70_000), Some(11)));
        assert_eq!(w.counts.total(), 2);
        assert_eq!(w.stdev_ns(), Some(20_000.0));
    }

    #[test]
    fn an_empty_summary_has_no_min_max_mean_or_percentiles() {
        let s = Summary::from_samples(Layout::DEFAULT, &[]);
        assert_eq!((s.cycles, s.min_ns, s.max_ns, s.mean_ns(), s.stdev_ns()), (0, None, None, None, None));
        assert!(s.percentiles().values().all(Option::is_none));
    }

    #[test]
    fn a_sum_of_squares_beyond_128_bits_falls_back_to_floating_point_instead_of_a_silent_zero() {
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        let (a, b) = (1i64 << 62, (1i64 << 62) - (1i64 << 50));
        for i in 0..32 {
            rec.record(if i % 2 == 0 { a } else { b }, i, 0);
        }
        let s = rec.finish();
        assert!(s.sum_sq_overflow.is_some(), "32 squares of 2^62 exceed 2^128");
        let sd = s.stdev_ns().unwrap();
        let truth = (1u64 << 49) as f64;
        assert!((sd - truth).abs() < truth * 1e-6, "stdev {sd} vs {truth}");
        let mut merged = Summary::empty(Layout::DEFAULT);
        merged.merge(&s, 0);
        merged.merge(&s, 1);
        assert!((merged.stdev_ns().unwrap() - truth).abs() < truth * 1e-6);
        assert!(live.checkpoint().is_some());
    }

    #[test]
    fn cyclictest_truncates_each_latency_to_whole_microseconds_across_second_boundaries() {
        assert_eq!(cyclictest_us(1_000_000_000, 1_000_001_999), 1);
        // The deadline just below a second, the wakeup just after: cyclictest's arithmetic
        // gives 2 µs for 1.5 µs (the nanosecond difference is negative and truncates up).
        assert_eq!(cyclictest_us(1_999_999_000, 2_000_000_500), 2);
        assert_eq!(cyclictest_us(5_000_000_000, 5_000_000_999), 0);
        // Every path agrees with the arithmetic on seconds and nanoseconds.
        let calcdiff = |a: i64, b: i64| {
            const S: i64 = 1_000_000_000;
            (b.div_euclid(S) - a.div_euclid(S)) * 1_000_000 + (b.rem_euclid(S) - a.rem_euclid(S)) / 1000
        };
        for (a, b) in [(999_999_999, 1_000_000_001), (123, 99), (7_000_000_500, 9_500_000_000), (1, 1)] {
            assert_eq!(cyclictest_us(a, b), calcdiff(a, b), "{a} → {b}");
        }
    }

    #[test]
    fn a_checkpoint_of_a_probe_preempted_mid_publication_gives_up_instead_of_spinning() {
        let live = Live::new(Layout::DEFAULT);
        live.published.seq.store(1, Relaxed); // a writer stopped between its two stores
        assert!(live.checkpoint().is_none());
    }

    #[test]
    fn stdev_is_the_true_standard_deviation_not_the_rms() {
        let s = Summary::from_samples(Layout::DEFAULT, &[2, 4, 4, 4, 5, 5, 7, 9]);
        assert_eq!(s.mean_ns(), Some(5.0));
        assert_eq!(s.stdev_ns(), Some(2.0));
    }

    #[test]
    fn the_maximum_remembers_its_cycle_and_time() {
        let s = Summary::from_samples(Layout::DEFAULT, &[5, 9, 3, 9, 1]);
        assert_eq!((s.max_ns, s.max_at_cycle, s.max_at_ns), (Some(9), Some(1), Some(1)));
        assert_eq!(s.min_ns, Some(1));
    }

    #[test]
    fn a_checkpoint_holds_every_figure_of_one_instant() {
        let live = Live::new(Layout::DEFAULT);
        let mut r = Recorder::new(&live, None);
        // A 40 ms stall among ordinary samples: the checkpoint right after it must hold it
        // everywhere (count, sums, maximum, histogram), not only in the histogram.
        let mut samples: Vec<i64> = (0..2_000i64).map(|i| (i * 37) % 5000 - 10).collect();
        samples.push(40_000_000);
        for (i, &v) in samples.iter().enumerate() {
            r.record(v, i as i64, (v > 1_000_000) as u64 * 40);
        }
        let c = live.checkpoint().unwrap();
        let exact = Summary::from_samples(Layout::DEFAULT, &samples);
        assert_eq!(c.cycles, samples.len() as u64);
        assert_eq!((c.sum_ns, c.sum_sq_ns2, c.negative), (exact.sum_ns, exact.sum_sq_ns2, exact.negative));
        assert_eq!((c.max_ns, c.max_at_cycle, c.min_ns), (Some(40_000_000), Some(2_000), exact.min_ns));
        assert_eq!(c.missed, 40);
        assert_eq!(c.counts.total(), c.cycles);
        assert_eq!(c.percentiles()["99.99"], Some(40_000_000), "the stall's bucket edge, capped at the true max");
        let empty = Live::new(Layout::DEFAULT);
        assert_eq!(empty.checkpoint().unwrap().mean_ns(), None);
    }

    #[test]
    fn checkpoints_taken_while_a_probe_records_are_each_a_prefix_of_its_samples() {
        // 100 µs buckets to 10 ms: a histogram small enough to copy between two samples even
        // in a debug build.
        let layout = Layout::new(100_000, 10_000_000).unwrap();
        let live = std::sync::Arc::new(Live::with_cuts(layout, &[1_000, 2_500]));
        let samples: Vec<i64> = (0..3_000i64).map(|i| (i * 7919) % 4_000).collect();
        let writer = {
            let (live, samples) = (std::sync::Arc::clone(&live), samples.clone());
            std::thread::spawn(move || {
                let mut r = Recorder::new(&live, None);
                for (i, &v) in samples.iter().enumerate() {
                    r.record(v, i as i64, 0);
                    // A period of 100 µs, busy: checkpoints fall between samples and during them.
                    let t = std::time::Instant::now();
                    while t.elapsed() < std::time::Duration::from_micros(100) {
                        std::hint::spin_loop();
                    }
                }
            })
        };
        let (mut seen, mut mid_run, mut whole) = (0, 0, 0);
        while !writer.is_finished() || seen == 0 {
            if let Some(c) = live.checkpoint() {
                let n = c.cycles as usize;
                let prefix = &samples[..n];
                // The histogram is of the same instant, or (when the reader could not copy it
                // between two samples) of one just before.
                assert!(c.counts.total() <= c.cycles);
                whole += (c.counts.total() == c.cycles && n > 0 && n < samples.len()) as usize;
                assert_eq!(c.sum_ns, prefix.iter().map(|v| *v as i128).sum::<i128>());
                assert_eq!(c.max_ns, prefix.iter().copied().max());
                let le = |b: i64| prefix.iter().filter(|v| **v <= b).count() as u64;
                if n > 0 {
                    assert_eq!(c.cut_counts, vec![le(1_000), le(2_500) - le(1_000), n as u64 - le(2_500)]);
                }
                seen += 1;
                mid_run += (n > 0 && n < samples.len()) as usize;
            }
        }
        writer.join().unwrap();
        assert!(seen > 0 && mid_run > 0, "checkpoints were taken while the probe recorded: {mid_run} of {seen}");
        assert!(whole > 0, "at 100 µs a sample, the histogram is copied between two samples: {whole} of {mid_run}");
    }

    #[test]
    fn cuts_count_samples_at_or_below_each_bound_exactly() {
        let live = Live::with_cuts(Layout::DEFAULT, &[15_000, 1_500, 1_500]);
        assert_eq!(live.cuts(), &[1_500, 15_000], "sorted, once each");
        let mut r = Recorder::new(&live, None);
        for v in [-5, 1_000, 1_500, 1_501, 14_999, 15_000, 15_001, 40_000_000] {
            r.record(v, 0, 0);
        }
        let s = r.finish();
        // ≤ 1.5 µs: -5, 1000, 1500; ≤ 15 µs: 1501, 14999, 15000; above: 15001, 40 ms.
        assert_eq!(s.cut_counts, vec![3, 3, 2]);
        let mut all = Summary::empty(Layout::DEFAULT);
        all.merge(&s, 0);
        all.merge(&s, 1);
        assert_eq!(all.cut_counts, vec![6, 6, 4]);
        assert_eq!(all.since(&s, None).cut_counts, vec![3, 3, 2]);
    }

    #[test]
    fn samples_over_the_threshold_are_counted_and_the_first_is_kept() {
        let live = Live::new(Layout::DEFAULT);
        let mut r = Recorder::new(&live, Some(10));
        for (i, v) in [5, 11, 3, 20, 10].into_iter().enumerate() {
            r.record(v, 100 * i as i64, 0);
        }
        let s = r.finish();
        assert_eq!(s.over.count, 2);
        assert_eq!(s.over.first(), Some(Exceedance { cycle: 1, at_ns: 100, latency_ns: 11 }));
    }

    #[test]
    fn consecutive_samples_over_the_threshold_are_one_burst() {
        let live = Live::new(Layout::DEFAULT);
        let mut r = Recorder::new(&live, Some(10));
        let mut first_half = None;
        for (i, v) in [5, 11, 12, 3, 20, 10, 30, 31, 32].into_iter().enumerate() {
            r.record(v, 100 * i as i64, 0);
            if i == 4 {
                first_half = Some(r.finish());
            }
        }
        let s = r.finish();
        assert_eq!((s.over.count, s.over.bursts), (6, 3), "11 12 | 20 | 30 31 32");
        let earlier = first_half.unwrap();
        assert_eq!((earlier.over.count, earlier.over.bursts), (3, 2));
        let window = s.since(&earlier, None);
        assert_eq!((window.over.count, window.over.bursts), (3, 1));
        let mut all = Summary::empty(Layout::DEFAULT);
        all.merge(&s, 0);
        all.merge(&s, 1);
        assert_eq!((all.over.count, all.over.bursts), (12, 6));
    }

    proptest! {
        #[test]
        fn statistics_equal_brute_force_on_random_samples(
            samples in proptest::collection::vec(-1_000_000i64..5_000_000_000, 1..500)
        ) {
            let s = Summary::from_samples(Layout::DEFAULT, &samples);
            let n = samples.len() as u64;
            prop_assert_eq!(s.cycles, n);
            prop_assert_eq!(s.min_ns, samples.iter().copied().min());
            prop_assert_eq!(s.max_ns, samples.iter().copied().max());
            prop_assert_eq!(s.negative, samples.iter().filter(|v| **v < 0).count() as u64);
            let sum: i128 = samples.iter().map(|v| *v as i128).sum();
            prop_assert_eq!(s.sum_ns, sum);
            let mean = sum as f64 / n as f64;
            let var = samples.iter().map(|v| (*v as f64 - mean).powi(2)).sum::<f64>() / n as f64;
            let sd = s.stdev_ns().unwrap();
            prop_assert!((sd - var.sqrt()).abs() <= 1e-6 * var.sqrt().max(1.0), "{} vs {}", sd, var.sqrt());
            prop_assert_eq!(s.counts.total(), n);
        }

        #[test]
        fn merging_thread_summaries_equals_summarising_all_samples(
            a in proptest::collection::vec(0i64..20_000_000, 0..200),
            b in proptest::collection::vec(0i64..20_000_000, 0..200),
        ) {
            let mut m = Summary::empty(Layout::DEFAULT);
            m.merge(&Summary::from_samples(Layout::DEFAULT, &a), 0);
            m.merge(&Summary::from_samples(Layout::DEFAULT, &b), 1);
            let all: Vec<i64> = a.iter().chain(&b).copied().collect();
            let whole = Summary::from_samples(Layout::DEFAULT, &all);
            prop_assert_eq!(m.cycles, whole.cycles);
            prop_assert_eq!(m.sum_ns, whole.sum_ns);
            prop_assert_eq!(m.sum_sq_ns2, whole.sum_sq_ns2);
            prop_assert_eq!(m.min_ns, whole.min_ns);
            prop_assert_eq!(m.max_ns, whole.max_ns);
            prop_assert_eq!(&m.counts, &whole.counts);
            prop_assert_eq!(m.percentiles(), whole.percentiles());
            if let Some(max) = whole.max_ns {
                let t = m.max_at_thread.unwrap();
                let src = if t == 0 { &a } else { &b };
                prop_assert_eq!(src.iter().copied().max(), Some(max));
            }
        }
    }
}
