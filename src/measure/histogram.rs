//! The latency histogram: linear buckets up to a range, then log-scale buckets up to 2^63 ns,
//! so no sample is ever dropped.
//!
//! # Layout and error bound
//! * Linear region: bucket `i` holds `[i·w, (i+1)·w)` for values below the range `r`
//!   (`r` is a multiple of the bucket width `w`, 1 µs and 10 ms by default).
//! * Log region: a value `v ≥ r` with `e = ⌊log2 v⌋` falls into one of 32 equal sub-buckets of
//!   the octave `[2^e, 2^(e+1))`, each `2^(e-5)` wide: a relative width of at most 1/32 (3.1 %).
//! * A percentile is reported as the upper edge of its bucket, capped at the exact maximum.
//!   It is therefore an upper bound on the true (nearest-rank) percentile and exceeds it by at
//!   most one bucket width: `w` below the range, `1/32` of the value above it.
//! * Negative latencies (possible with CLOCK_REALTIME steps) are counted in bucket 0.
//!
//! The counts are atomics written by a single thread with plain load + store (no locked
//! instruction), so the live display can read them while the probe runs.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Sub-buckets per octave in the log region, as a power of two.
const SUB_BITS: u32 = 5;
const SUBS: usize = 1 << SUB_BITS;

/// The percentiles every summary reports, as (JSON key, fraction).
pub const PERCENTILES: [(&str, f64); 6] =
    [("50", 0.5), ("90", 0.9), ("99", 0.99), ("99.9", 0.999), ("99.99", 0.9999), ("99.999", 0.99999)];

/// The upper edge of the bucket holding the ⌈q·total⌉-th smallest sample (nearest rank,
/// 0 < q ≤ 1), from `(upper edge, count)` pairs in ascending order. `None` when `total` is 0 or
/// the rank lies beyond the buckets (samples counted in `total` but not binned).
pub fn nearest_rank_edge(buckets: impl IntoIterator<Item = (u64, u64)>, total: u64, q: f64) -> Option<u64> {
    if total == 0 {
        return None;
    }
    edge_at_rank(buckets, nearest_rank(total, q))
}

/// The nearest rank (1-based) of the `q`-quantile of `total` samples: ⌈q·total⌉, at least 1
/// and at most `total` (`total` > 0).
pub fn nearest_rank(total: u64, q: f64) -> u64 {
    ((q * total as f64).ceil() as u64).clamp(1, total)
}

/// The upper edge of the bucket holding the `rank`-th smallest sample (1-based), from
/// `(upper edge, count)` pairs in ascending order; `None` beyond the buckets.
pub fn edge_at_rank(buckets: impl IntoIterator<Item = (u64, u64)>, rank: u64) -> Option<u64> {
    let mut seen = 0;
    buckets
        .into_iter()
        .find(|(_, c)| {
            seen += c;
            seen >= rank
        })
        .map(|(hi, _)| hi)
}

/// The shape of a histogram: bucket width and the end of the linear region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Layout {
    /// Width of a linear bucket in ns.
    pub bucket_ns: u64,
    /// End of the linear region in ns (a multiple of `bucket_ns`).
    pub range_ns: u64,
}

/// The most memory the histograms of a run may take, across its threads.
pub const MAX_HISTOGRAM_BYTES: u64 = 512 << 20;

impl Layout {
    /// Default: 1 µs buckets up to 10 ms.
    pub const DEFAULT: Layout = Layout { bucket_ns: 1_000, range_ns: 10_000_000 };

    /// A layout, or a sentence saying what is wrong with the values.
    pub fn new(bucket_ns: u64, range_ns: u64) -> Result<Layout, String> {
        if bucket_ns == 0 {
            return Err("--bucket-size must be greater than 0; use e.g. --bucket-size 1us".into());
        }
        if range_ns < 64 || range_ns < bucket_ns {
            return Err(format!(
                "--range ({range_ns} ns) must be at least the bucket size ({bucket_ns} ns) and 64 ns; use e.g. --range 10ms"
            ));
        }
        if !range_ns.is_multiple_of(bucket_ns) {
            return Err(format!(
                "--range ({range_ns} ns) must be a multiple of --bucket-size ({bucket_ns} ns); use e.g. --range {}ns",
                range_ns.div_ceil(bucket_ns) * bucket_ns
            ));
        }
        if range_ns / bucket_ns > 50_000_000 {
            return Err(format!(
                "--range / --bucket-size gives {} linear buckets, more than 50 million; use wider buckets",
                range_ns / bucket_ns
            ));
        }
        Ok(Layout { bucket_ns, range_ns })
    }

    /// Checks that `threads` histograms of this layout fit in memory: at most
    /// [`MAX_HISTOGRAM_BYTES`] in all and a quarter of the memory available (the result's
    /// copies need as much again); the error says what to change.
    pub fn check_memory(self, threads: usize) -> Result<(), String> {
        let per_thread = self.len() as u128 * 8;
        let total = per_thread * threads as u128;
        let avail = crate::rt::process::mem_available_bytes().map_or(u128::MAX, |a| a as u128 / 4);
        let limit = (MAX_HISTOGRAM_BYTES as u128).min(avail);
        if total <= limit {
            return Ok(());
        }
        let mib = |b: u128| b.div_ceil(1 << 20);
        Err(format!(
            "--range {} ns / --bucket-size {} ns gives {} buckets per thread ({} MiB), {} MiB for {threads} threads, \
             more than the {} MiB allowed; use wider buckets (e.g. --bucket-size {} ns), a smaller --range, or fewer threads",
            self.range_ns,
            self.bucket_ns,
            self.len(),
            mib(per_thread),
            mib(total),
            mib(limit),
            (self.bucket_ns * (total / limit + 1) as u64).max(self.bucket_ns + 1),
        ))
    }

    fn linear_buckets(self) -> usize {
        (self.range_ns / self.bucket_ns) as usize
    }

    fn first_octave(self) -> u32 {
        self.range_ns.ilog2()
    }

    /// Total number of buckets (linear and log).
    pub fn len(self) -> usize {
        self.linear_buckets() + (64 - self.first_octave() as usize) * SUBS
    }

    /// True when the layout has no bucket (never: every layout covers 0..2^64).
    pub fn is_empty(self) -> bool {
        false
    }

    /// The bucket index of `v` nanoseconds.
    #[inline(always)]
    pub fn index(self, v: u64) -> usize {
        if v < self.range_ns {
            (v / self.bucket_ns) as usize
        } else {
            let e = v.ilog2();
            let sub = ((v >> (e - SUB_BITS)) as usize) - SUBS;
            self.linear_buckets() + (e - self.first_octave()) as usize * SUBS + sub
        }
    }

    /// The half-open value range `[lo, hi)` of bucket `i` (`hi` saturates at `u64::MAX`).
    pub fn bounds(self, i: usize) -> (u64, u64) {
        let lin = self.linear_buckets();
        if i < lin {
            let lo = i as u64 * self.bucket_ns;
            return (lo, lo + self.bucket_ns);
        }
        let k = i - lin;
        let e = self.first_octave() + (k / SUBS) as u32;
        let sub = (k % SUBS) as u64;
        let shift = e - SUB_BITS;
        let lo = (SUBS as u64 + sub) << shift;
        let hi = (SUBS as u64 + sub + 1).checked_shl(shift).filter(|h| *h > lo).unwrap_or(u64::MAX);
        (lo.max(self.range_ns), hi.max(self.range_ns))
    }
}

/// A histogram filled by one thread and readable by others while it is filled.
#[derive(Debug)]
pub struct Histogram {
    layout: Layout,
    counts: Box<[AtomicU64]>,
}

impl Histogram {
    /// An empty histogram; all of its memory is written here, so later increments never fault.
    pub fn new(layout: Layout) -> Histogram {
        let counts: Box<[AtomicU64]> = (0..layout.len()).map(|_| AtomicU64::new(0)).collect();
        Histogram { layout, counts }
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Counts one sample of `latency_ns` (negative values count in bucket 0). Single writer.
    #[inline(always)]
    pub fn record(&self, latency_ns: i64) {
        let v = if latency_ns < 0 { 0 } else { latency_ns as u64 };
        let c = &self.counts[self.layout.index(v)];
        c.store(c.load(Relaxed) + 1, Relaxed);
    }

    /// Writes every bucket once more (after `mlockall`, from the measuring thread).
    pub fn prefault(&self) {
        for c in self.counts.iter() {
            c.store(c.load(Relaxed), Relaxed);
        }
    }

    /// A copy of the counts.
    pub fn snapshot(&self) -> Counts {
        Counts { layout: self.layout, counts: self.counts.iter().map(|c| c.load(Relaxed)).collect() }
    }

    /// Copies the counts into `into` (of this layout), without allocating.
    pub fn snapshot_into(&self, into: &mut Counts) {
        into.layout = self.layout;
        into.counts.resize(self.counts.len(), 0);
        for (d, c) in into.counts.iter_mut().zip(self.counts.iter()) {
            *d = c.load(Relaxed);
        }
    }
}

/// A plain (non-atomic) copy of histogram counts, for statistics and merging.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts {
    layout: Layout,
    counts: Vec<u64>,
}

impl Counts {
    /// Empty counts of `layout`.
    pub fn empty(layout: Layout) -> Counts {
        Counts { layout, counts: vec![0; layout.len()] }
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Total number of samples.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Counts `n` more samples of `v_ns` (saturating: a count cannot wrap).
    pub fn add(&mut self, v_ns: u64, n: u64) {
        let c = &mut self.counts[self.layout.index(v_ns)];
        *c = c.saturating_add(n);
    }

    /// Adds another histogram of the same layout.
    pub fn merge(&mut self, other: &Counts) {
        assert_eq!(self.layout, other.layout, "histograms of different layouts cannot be merged");
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// What was added since `earlier` (a copy of the same histogram taken before): bucket by
    /// bucket, never below zero.
    pub fn since(&self, earlier: &Counts) -> Counts {
        let mut out = self.clone();
        if self.layout == earlier.layout {
            for (a, b) in out.counts.iter_mut().zip(&earlier.counts) {
                *a = a.saturating_sub(*b);
            }
        }
        out
    }

    /// The count of every bucket, in the layout's order (see [`Layout::bounds`]).
    pub fn buckets(&self) -> &[u64] {
        &self.counts
    }

    /// The counts of the linear buckets (`[i·w, (i+1)·w)` for `i` below range / width).
    pub fn linear(&self) -> &[u64] {
        &self.counts[..self.layout.linear_buckets()]
    }

    /// Non-empty buckets as `(lo, hi, count)`, ascending.
    pub fn nonzero(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| {
            let (lo, hi) = self.layout.bounds(i);
            (lo, hi, *c)
        })
    }

    /// The nearest-rank percentile `q` (0 < q ≤ 1) as an upper bound: the upper edge of the
    /// bucket holding the ⌈q·n⌉-th smallest sample, capped at the exact maximum `max_ns`.
    /// `None` when there is no sample.
    pub fn percentile(&self, q: f64, max_ns: i64) -> Option<i64> {
        let buckets = self.counts.iter().enumerate().map(|(i, c)| (self.layout.bounds(i).1, *c));
        nearest_rank_edge(buckets, self.total(), q).map(|hi| i64::try_from(hi).unwrap_or(i64::MAX).min(max_ns.max(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn linear_buckets_are_one_width_wide() {
        let l = Layout::DEFAULT;
        assert_eq!(l.index(0), 0);
        assert_eq!(l.index(999), 0);
        assert_eq!(l.index(1_000), 1);
        assert_eq!(l.bounds(12), (12_000, 13_000));
        assert_eq!(l.index(9_999_999), 9_999);
    }

    #[test]
    fn values_beyond_the_range_land_in_log_buckets_that_contain_them() {
        let l = Layout::DEFAULT;
        for v in [10_000_000u64, 10_000_001, 16_777_215, 16_777_216, 1 << 40, u64::MAX >> 1, u64::MAX] {
            let (lo, hi) = l.bounds(l.index(v));
            assert!(lo <= v && (v < hi || hi == u64::MAX), "{v} not in [{lo},{hi})");
            assert!(l.index(v) < l.len());
        }
    }

    #[test]
    fn invalid_layouts_are_refused_with_a_fix() {
        assert!(Layout::new(0, 1000).unwrap_err().contains("--bucket-size"));
        assert!(Layout::new(1000, 1500).unwrap_err().contains("2000ns"));
        assert!(Layout::new(1000, 500).is_err());
        assert!(Layout::new(1, 1_000_000_000).is_err());
    }

    #[test]
    fn negative_latencies_count_in_the_first_bucket() {
        let h = Histogram::new(Layout::DEFAULT);
        h.record(-5);
        assert_eq!(h.snapshot().nonzero().collect::<Vec<_>>(), vec![(0, 1_000, 1)]);
    }

    proptest! {
        #[test]
        fn every_value_falls_in_exactly_the_bucket_whose_bounds_hold_it(
            bucket in 1u64..5_000, mult in 1u64..2_000, v in any::<u64>()
        ) {
            let range = (bucket * mult).max(64).div_ceil(bucket) * bucket;
            let l = Layout::new(bucket, range).unwrap();
            let i = l.index(v);
            let (lo, hi) = l.bounds(i);
            prop_assert!(lo <= v && (v < hi || hi == u64::MAX));
            prop_assert!(i < l.len());
            if v >= range {
                // log buckets are at most 1/32 of their lower edge wide
                prop_assert!(hi == u64::MAX || (hi - lo) * 32 <= lo);
            }
        }

        #[test]
        fn percentiles_are_upper_bounds_within_one_bucket_of_the_true_value(
            mut values in proptest::collection::vec(0i64..50_000_000, 1..400),
            q in prop::sample::select(vec![0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 1.0]),
        ) {
            let l = Layout::DEFAULT;
            let h = Histogram::new(l);
            for &v in &values { h.record(v); }
            values.sort_unstable();
            let n = values.len();
            let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
            let truth = values[rank - 1];
            let max = *values.last().unwrap();
            let got = h.snapshot().percentile(q, max).unwrap();
            let (_, hi) = l.bounds(l.index(truth as u64));
            prop_assert_eq!(got, (hi as i64).min(max));
            prop_assert!(got >= truth, "p{q}: {got} < true {truth}");
            prop_assert!(got - truth <= 1_000 || (got - truth) * 32 <= truth);
        }
    }
}
