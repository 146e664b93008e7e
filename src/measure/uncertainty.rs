//! How far another run of the same configuration may land from this one: a 95 % interval for
//! each percentile and for the maximum, from the run's own data.
//!
//! Two methods, chosen by what the run holds:
//! - **Block bootstrap** (at least [`MIN_BLOCKS`] blocks). The run's per-interval histograms (its
//!   series, one per second at first) are merged into at most [`MAX_BLOCKS`] contiguous blocks of
//!   equal length; a resample draws as many blocks with replacement, pools their samples and
//!   reads each percentile and the maximum as the run's own figures are read (nearest rank, the
//!   upper edge of the bucket, never above the pooled maximum). The interval is the 2.5th and
//!   97.5th percentile of [`RESAMPLES`] resamples (the percentile bootstrap). Whole blocks keep
//!   what happens within seconds together (a burst of late wakeups, a load's period); what it
//!   assumes is that blocks far apart are alike and independent: a run that drifts (a load that
//!   grows) is wider than it says. The maximum's interval cannot reach above the largest block's
//!   maximum: what a run longer than this one would show beyond it is another question.
//! - **Order statistics** (fewer blocks: a run of a few seconds). The samples are taken as
//!   independent draws: the number above the true p-quantile is binomial, and the interval is
//!   the pair of order statistics that holds the quantile with 95 % probability (exactly, from
//!   the binomial distribution, where fewer than [`EXACT_MEAN_LIMIT`] samples are expected above
//!   it; by its normal approximation beyond). Latency samples are not independent (spikes come
//!   in bursts), so these intervals are narrower than the truth; where the quantile lies so far
//!   in the tail that even the maximum is below it with more than 2.5 % probability, the interval
//!   has no upper end. The maximum's interval is that of the largest sample: [max, none].
//!
//! Deterministic: the resamples come from a fixed seed, so one result always gives one answer.

use super::histogram::{edge_at_rank, nearest_rank, PERCENTILES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The intervals' confidence.
pub const CONFIDENCE: f64 = 0.95;

/// Resamples drawn by the block bootstrap.
pub const RESAMPLES: usize = 1000;

/// The fewest blocks the bootstrap uses; fewer, and order statistics are used.
pub const MIN_BLOCKS: usize = 10;

/// The most blocks: longer runs merge more intervals into each.
pub const MAX_BLOCKS: usize = 60;

/// Where the binomial tail is computed exactly: up to this many samples expected above the
/// quantile (beyond, its normal approximation is within a rank or two).
pub const EXACT_MEAN_LIMIT: f64 = 500.0;

/// How an interval was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Resampling whole blocks of the run's per-interval histograms.
    BlockBootstrap,
    /// Order statistics of samples taken as independent.
    OrderStatistics,
}

/// A 95 % interval (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bound {
    /// Its lower end.
    pub low_ns: i64,
    /// Its upper end; `null` when the data bound the figure only from below (a quantile beyond
    /// what the samples can hold, or the maximum by order statistics).
    pub high_ns: Option<i64>,
}

/// The intervals of one set of statistics, and how they were found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Uncertainty {
    /// How the intervals were found.
    pub method: Method,
    /// Their confidence: 0.95.
    pub confidence: f64,
    /// Blocks resampled (bootstrap only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<usize>,
    /// Length of a block (ns; bootstrap only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_ns: Option<i64>,
    /// Resamples drawn (bootstrap only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resamples: Option<usize>,
    /// Per percentile (the keys of `percentiles_ns`): its interval; absent for a percentile the
    /// data cannot place (no samples).
    pub percentiles_ns: BTreeMap<String, Bound>,
    /// The maximum's interval.
    pub max_ns: Option<Bound>,
}

/// A block of samples: `(upper bucket edge, count)` ascending, and its largest sample.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Block {
    /// Its buckets: `(upper edge ns, count)`, ascending, counts above 0.
    pub buckets: Vec<(u64, u64)>,
    /// Its largest sample (ns).
    pub max_ns: i64,
}

impl Block {
    fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.1).sum()
    }
}

/// Merges consecutive intervals (`count` of them, of `interval_ns` each, taken one by one from
/// `intervals`) into at most [`MAX_BLOCKS`] blocks of equal length (the last may be shorter),
/// and says that length. Intervals without samples count in the time and add nothing (a block
/// of them is empty, and kept: blocks of two series made alike stay aligned). Holds one block's
/// buckets at a time besides the blocks made.
pub fn blocks_of(count: usize, intervals: impl Iterator<Item = Block>, interval_ns: i64) -> (Vec<Block>, i64) {
    let per = count.div_ceil(MAX_BLOCKS).max(1);
    let mut blocks = Vec::new();
    let (mut sum, mut max, mut taken): (BTreeMap<u64, u64>, i64, usize) = (BTreeMap::new(), 0, 0);
    let mut close = |sum: &mut BTreeMap<u64, u64>, max: i64| {
        blocks.push(Block { buckets: std::mem::take(sum).into_iter().collect(), max_ns: max });
    };
    for b in intervals {
        for (edge, n) in b.buckets {
            *sum.entry(edge).or_default() += n;
        }
        max = max.max(b.max_ns);
        taken += 1;
        if taken == per {
            close(&mut sum, max);
            (max, taken) = (0, 0);
        }
    }
    if taken > 0 {
        close(&mut sum, max);
    }
    (blocks, interval_ns.saturating_mul(per as i64))
}

/// Sums blocks of several series made alike (the same count of intervals of one length), block
/// by block: their samples together, the largest of their maxima.
pub fn summed(series: &[Vec<Block>]) -> Vec<Block> {
    let n = series.first().map_or(0, Vec::len);
    (0..n)
        .map(|k| {
            let mut sum: BTreeMap<u64, u64> = BTreeMap::new();
            for b in series.iter().filter_map(|s| s.get(k)) {
                b.buckets.iter().for_each(|(e, c)| *sum.entry(*e).or_default() += c);
            }
            let max = series.iter().filter_map(|s| s.get(k)).map(|b| b.max_ns).max().unwrap_or(0);
            Block { buckets: sum.into_iter().collect(), max_ns: max }
        })
        .collect()
}

/// The block bootstrap's intervals over `blocks` (see the module's text), those without samples
/// left out; `None` with fewer than [`MIN_BLOCKS`] that hold samples.
pub fn bootstrap(blocks: &[Block], block_ns: i64) -> Option<Uncertainty> {
    let blocks: Vec<&Block> = blocks.iter().filter(|b| !b.buckets.is_empty()).collect();
    if blocks.len() < MIN_BLOCKS {
        return None;
    }
    let pooled = Pooled::new(&blocks);
    let mut rng = SplitMix64(0x0005_eed0_f1a7_e0c7);
    let m = blocks.len();
    let mut draws: Vec<Vec<i64>> = vec![Vec::with_capacity(RESAMPLES); PERCENTILES.len() + 1];
    let mut weights = vec![0u64; m];
    for _ in 0..RESAMPLES {
        weights.iter_mut().for_each(|w| *w = 0);
        for _ in 0..m {
            weights[rng.below(m)] += 1;
        }
        // The blocks drawn, each with how many times: every percentile of the resample reads them.
        let chosen: Vec<(usize, u64)> = (0..m).filter(|&j| weights[j] > 0).map(|j| (j, weights[j])).collect();
        let max = chosen.iter().map(|&(j, _)| blocks[j].max_ns).max().unwrap_or(0);
        for (k, (_, q)) in PERCENTILES.iter().enumerate() {
            draws[k].push(pooled.quantile(&chosen, *q).map_or(max, |e| e.min(max)));
        }
        draws[PERCENTILES.len()].push(max);
    }
    let mut bounds = draws.into_iter().map(|mut d| {
        d.sort_unstable();
        let tail = (1.0 - CONFIDENCE) / 2.0;
        let at = |p: f64| d[((p * RESAMPLES as f64).ceil() as usize).clamp(1, RESAMPLES) - 1];
        Bound { low_ns: at(tail), high_ns: Some(at(1.0 - tail)) }
    });
    let percentiles_ns = PERCENTILES.iter().map(|(k, _)| (k.to_string(), bounds.next().expect("one per percentile")));
    Some(Uncertainty {
        method: Method::BlockBootstrap,
        confidence: CONFIDENCE,
        blocks: Some(m),
        block_ns: Some(block_ns),
        resamples: Some(RESAMPLES),
        percentiles_ns: percentiles_ns.collect(),
        max_ns: bounds.next(),
    })
}

/// Every block's cumulative counts over the union of their bucket edges, so that a resample's
/// rank is found by a binary search over the edges, each step a weighted sum over the blocks.
struct Pooled {
    edges: Vec<u64>,
    /// Per block, per edge: its samples at or below the edge.
    cumulative: Vec<Vec<u64>>,
    totals: Vec<u64>,
}

impl Pooled {
    fn new(blocks: &[&Block]) -> Pooled {
        let mut edges: Vec<u64> = blocks.iter().flat_map(|b| b.buckets.iter().map(|e| e.0)).collect();
        edges.sort_unstable();
        edges.dedup();
        let cumulative = blocks
            .iter()
            .map(|b| {
                let (mut k, mut seen) = (0, 0u64);
                edges
                    .iter()
                    .map(|e| {
                        while k < b.buckets.len() && b.buckets[k].0 <= *e {
                            seen += b.buckets[k].1;
                            k += 1;
                        }
                        seen
                    })
                    .collect()
            })
            .collect();
        Pooled { edges, cumulative, totals: blocks.iter().map(|b| b.total()).collect() }
    }

    /// The nearest-rank `q`-quantile's bucket edge of the `chosen` blocks pooled, each
    /// `(block, times drawn)`.
    fn quantile(&self, chosen: &[(usize, u64)], q: f64) -> Option<i64> {
        let total: u64 = chosen.iter().map(|&(j, w)| w * self.totals[j]).sum();
        if total == 0 {
            return None;
        }
        let rank = nearest_rank(total, q);
        let at = |g: usize| chosen.iter().map(|&(j, w)| w * self.cumulative[j][g]).sum::<u64>();
        let (mut lo, mut hi) = (0, self.edges.len() - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if at(mid) >= rank {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(i64::try_from(self.edges[lo]).unwrap_or(i64::MAX))
    }
}

/// The order-statistics intervals of `buckets` (`(upper edge, count)`, ascending) holding
/// `total` samples, the largest `max_ns` (see the module's text).
pub fn order_statistics(buckets: &[(u64, u64)], total: u64, max_ns: i64) -> Uncertainty {
    let mut percentiles_ns = BTreeMap::new();
    if total > 0 {
        for (k, q) in PERCENTILES {
            let (low_rank, high_rank) = rank_interval(total, q);
            let edge = |rank: u64| {
                edge_at_rank(buckets.iter().copied(), rank).map(|e| i64::try_from(e).unwrap_or(i64::MAX).min(max_ns))
            };
            if let Some(low_ns) = edge(low_rank) {
                percentiles_ns.insert(k.to_string(), Bound { low_ns, high_ns: high_rank.and_then(edge) });
            }
        }
    }
    Uncertainty {
        method: Method::OrderStatistics,
        confidence: CONFIDENCE,
        blocks: None,
        block_ns: None,
        resamples: None,
        percentiles_ns,
        max_ns: (total > 0).then_some(Bound { low_ns: max_ns, high_ns: None }),
    }
}

/// The ranks (1-based, ascending) of the order statistics that hold the `q`-quantile of `n`
/// independent samples with [`CONFIDENCE`]: the lower one is below the quantile unless at least
/// `n − low + 1` samples lie above it, the upper one above it unless fewer than `n − high + 1`
/// do, each with probability at most 2.5 %. `None` for the upper rank when even the largest
/// sample is below the quantile with more than 2.5 % probability.
pub fn rank_interval(n: u64, q: f64) -> (u64, Option<u64>) {
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let above = Binomial { n, p: 1.0 - q };
    // The number of samples above the quantile, X, is Binomial(n, 1 − q). The j-th largest
    // sample is at or below the quantile when X < j: the lower end is the j-th largest for the
    // smallest j with P(X ≤ j − 1) ≥ 97.5 %; the upper end the i-th largest for the largest i
    // with P(X ≥ i) ≥ 97.5 %, that is P(X ≤ i − 1) ≤ 2.5 %.
    let j = above.smallest_k_with_cdf_at_least(1.0 - tail) + 1;
    let i = above.largest_k_with_cdf_at_most(tail).map(|k| k + 1);
    let from_top = |j: u64| n.saturating_sub(j) + 1;
    (from_top(j.min(n)), i.filter(|i| *i >= 1 && *i <= n).map(from_top))
}

/// A binomial distribution's tail, exactly where few successes are expected.
struct Binomial {
    n: u64,
    p: f64,
}

impl Binomial {
    fn mean(&self) -> f64 {
        self.n as f64 * self.p
    }

    /// The first k = 0, 1, … whose P(X ≤ k) `stop` accepts (exact: pmf by its recurrence).
    fn exact_cdf_until(&self, stop: impl Fn(f64) -> bool) -> Option<u64> {
        let (n, p) = (self.n as f64, self.p);
        let mut pmf = (n * (-p).ln_1p()).exp();
        let mut cdf = pmf;
        for k in 0..=self.n {
            if stop(cdf) {
                return Some(k);
            }
            pmf *= (n - k as f64) / (k as f64 + 1.0) * p / (1.0 - p);
            cdf += pmf;
        }
        None
    }

    /// The smallest k with P(X ≤ k) ≥ `level`.
    fn smallest_k_with_cdf_at_least(&self, level: f64) -> u64 {
        if self.p <= 0.0 {
            return 0;
        }
        if self.mean() <= EXACT_MEAN_LIMIT {
            return self.exact_cdf_until(|cdf| cdf >= level).unwrap_or(self.n);
        }
        let sd = (self.mean() * (1.0 - self.p)).sqrt();
        ((self.mean() + normal_quantile(level) * sd - 0.5).ceil().max(0.0) as u64).min(self.n)
    }

    /// The largest k with P(X ≤ k) ≤ `level`, if any.
    fn largest_k_with_cdf_at_most(&self, level: f64) -> Option<u64> {
        if self.p <= 0.0 {
            return None;
        }
        if self.mean() <= EXACT_MEAN_LIMIT {
            let first_above = self.exact_cdf_until(|cdf| cdf > level)?;
            return first_above.checked_sub(1);
        }
        let sd = (self.mean() * (1.0 - self.p)).sqrt();
        let k = (self.mean() + normal_quantile(level) * sd - 0.5).floor();
        (k >= 0.0).then_some((k as u64).min(self.n))
    }
}

/// The standard normal distribution's quantile (Acklam's rational approximation, relative
/// error below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): the resamples' random numbers.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform integer below `n` (`n` > 0; Lemire's multiply-shift, bias below 2⁻³²·n).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }

    /// A uniform number in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` samples of an exponential distribution of mean `mean_ns`, in 1 µs buckets
    /// (`(upper edge, count)`, ascending), and their largest.
    fn exponential(rng: &mut SplitMix64, n: usize, mean_ns: f64) -> Block {
        let mut sum: BTreeMap<u64, u64> = BTreeMap::new();
        let mut max = 0;
        for _ in 0..n {
            let v = (-(1.0 - rng.unit()).ln() * mean_ns) as i64;
            max = max.max(v);
            *sum.entry((v as u64 / 1000 + 1) * 1000).or_default() += 1;
        }
        Block { buckets: sum.into_iter().collect(), max_ns: max }
    }

    /// The upper edge of the 1 µs bucket of the exponential distribution's `q`-quantile.
    fn true_edge(q: f64, mean_ns: f64) -> i64 {
        let v = -(1.0 - q).ln() * mean_ns;
        (v as i64 / 1000 + 1) * 1000
    }

    #[test]
    fn the_median_of_100_samples_lies_between_the_40th_and_61st_as_the_tables_say() {
        // The distribution-free 95 % interval of a median from 100 samples (e.g. Conover,
        // Practical Nonparametric Statistics, table A3): X(40) to X(61).
        assert_eq!(rank_interval(100, 0.5), (40, Some(61)));
        // Far in the tail the largest sample is the lower end and nothing bounds it above:
        // 1 000 samples hold a p99.999 with probability 1 %.
        assert_eq!(rank_interval(1000, 0.99999), (1000, None));
        // Past the exact computation's limit the normal approximation takes over, a rank or two
        // from the exact answer: compare at the limit, where both apply.
        let n = 50_000;
        let exact = rank_interval(n, 0.99);
        let b = Binomial { n, p: 0.01 };
        let z = normal_quantile(0.975);
        let sd = (b.mean() * 0.99).sqrt();
        let normal_low = n - (b.mean() + z * sd - 0.5).ceil() as u64;
        assert!(exact.0.abs_diff(normal_low) <= 2, "{exact:?} vs {normal_low}");
    }

    #[test]
    fn normal_quantiles_match_the_tables() {
        for (p, z) in [(0.975, 1.959_963_985), (0.5, 0.0), (0.025, -1.959_963_985), (0.999, 3.090_232_306)] {
            assert!((normal_quantile(p) - z).abs() < 1e-8, "{p}: {}", normal_quantile(p));
        }
    }

    #[test]
    fn order_statistics_cover_an_exponentials_quantiles_at_least_as_often_as_they_say() {
        let mean = 20_000.0;
        let mut rng = SplitMix64(11);
        let trials = 300;
        let mut covered: BTreeMap<&str, usize> = BTreeMap::new();
        for _ in 0..trials {
            let b = exponential(&mut rng, 2000, mean);
            let u = order_statistics(&b.buckets, 2000, b.max_ns);
            for (k, q) in [("50", 0.5), ("90", 0.9), ("99", 0.99)] {
                let bound = u.percentiles_ns[k];
                let truth = true_edge(q, mean);
                if bound.low_ns <= truth && bound.high_ns.is_some_and(|h| truth <= h) {
                    *covered.entry(k).or_default() += 1;
                }
            }
        }
        // Independent samples: at least 95 % (bucketing makes it a little more), and not all.
        for (k, n) in covered {
            let rate = n as f64 / trials as f64;
            assert!((0.93..0.995).contains(&rate), "p{k}: {rate}");
        }
    }

    #[test]
    fn the_block_bootstrap_covers_a_heavy_tailed_runs_p99_about_as_often_as_it_says() {
        // Runs of 20 seconds of 300 samples each, from a Pareto-tailed distribution (index 2.5,
        // from 10 µs): its p99 is known exactly.
        let (alpha, x0) = (2.5, 10_000.0);
        let truth = |q: f64| x0 * (1.0 - q).powf(-1.0 / alpha);
        let edge = |v: f64| (v as i64 / 1000 + 1) * 1000;
        let mut rng = SplitMix64(5);
        let trials = 120;
        let mut covered = 0;
        for _ in 0..trials {
            let blocks: Vec<Block> = (0..20)
                .map(|_| {
                    let mut sum: BTreeMap<u64, u64> = BTreeMap::new();
                    let mut max = 0;
                    for _ in 0..300 {
                        let v = (x0 * (1.0 - rng.unit()).powf(-1.0 / alpha)) as i64;
                        max = max.max(v);
                        *sum.entry((v as u64 / 1000 + 1) * 1000).or_default() += 1;
                    }
                    Block { buckets: sum.into_iter().collect(), max_ns: max }
                })
                .collect();
            let u = bootstrap(&blocks, 1_000_000_000).unwrap();
            let b = u.percentiles_ns["99"];
            let t = edge(truth(0.99));
            covered += usize::from(b.low_ns <= t && b.high_ns.is_some_and(|h| t <= h));
        }
        // The percentile bootstrap of a tail quantile from 6 000 samples: near its 95 %,
        // seldom exact (it is an approximation); far from it would be a wrong method.
        let rate = covered as f64 / trials as f64;
        assert!((0.85..0.995).contains(&rate), "{rate}");
    }

    #[test]
    fn identical_blocks_leave_nothing_to_resample_and_each_interval_is_the_figure_itself() {
        let block = Block { buckets: vec![(3_000, 90), (8_000, 9), (51_000, 1)], max_ns: 50_321 };
        let u = bootstrap(&vec![block; 12], 2_000_000_000).unwrap();
        assert_eq!(
            (u.method, u.blocks, u.block_ns, u.resamples),
            (Method::BlockBootstrap, Some(12), Some(2_000_000_000), Some(1000))
        );
        // Pooled: 1 200 samples; p99 is the 1 188th (at 8 µs), p99.9 the 1 199th (the top bucket,
        // capped at the maximum).
        assert_eq!(u.percentiles_ns["99"], Bound { low_ns: 8_000, high_ns: Some(8_000) });
        assert_eq!(u.percentiles_ns["99.9"], Bound { low_ns: 50_321, high_ns: Some(50_321) });
        assert_eq!(u.max_ns, Some(Bound { low_ns: 50_321, high_ns: Some(50_321) }));
        // Too few blocks: no bootstrap.
        let few = vec![Block { buckets: vec![(1_000, 1)], max_ns: 1 }; 9];
        assert!(bootstrap(&few, 1).is_none());
    }

    #[test]
    fn intervals_are_merged_into_at_most_sixty_blocks_of_equal_length_and_empty_seconds_count() {
        let one = |edge: u64, max: i64| Block { buckets: vec![(edge, 1)], max_ns: max };
        let mut intervals: Vec<Block> = (0..130).map(|k| one(1_000 * (k % 7 + 1), k as i64)).collect();
        intervals[3] = Block::default();
        let (blocks, block_ns) = blocks_of(130, intervals.into_iter(), 1_000_000_000);
        // 130 seconds: three per block, 44 blocks (the last of one second).
        assert_eq!((blocks.len(), block_ns), (44, 3_000_000_000));
        assert_eq!(blocks[0].buckets, vec![(1_000, 1), (2_000, 1), (3_000, 1)]);
        assert_eq!(blocks[1].buckets.iter().map(|b| b.1).sum::<u64>(), 2, "the empty second adds nothing");
        assert_eq!((blocks[1].max_ns, blocks[43].max_ns), (5, 129));
    }
}
