//! The worst case to expect: the largest latency a longer run would show, predicted from a
//! run's block maxima with extreme value theory (measurement-based probabilistic timing
//! analysis, as in Cucu-Grosjean et al., ECRTS 2012, and the chronovise tool).
//!
//! The method, step by step:
//! 1. **Block maxima.** The run's largest latency in each interval of its series (one per
//!    second at first): `n` maxima of blocks of equal length.
//! 2. **Checks before any fit.** The theory holds for maxima of blocks that are alike and
//!    independent. A trend in the intervals' maxima (Mann–Kendall's test, two-sided, p <
//!    [`CHECK_ALPHA`]) means the run does not describe a longer one: no number is given. Blocks
//!    of [`BLOCK_LENGTHS`] intervals are then tried in turn, as long as they make [`MIN_BLOCKS`]:
//!    the first whose maxima pass the rest is used. A dependence between neighbouring blocks
//!    (the lag-1 autocorrelation of their maxima's ranks beyond its 1 % two-sided bound,
//!    `2.576/√n`) rules a block length out, as does a failed fit (steps 3 and 4): a short
//!    block's maxima can be a mixture of calm seconds and late ones, which a longer block holds
//!    together.
//! 3. **Fit.** A generalised extreme value distribution (GEV: location μ, scale σ, shape ξ; ξ > 0
//!    a heavy tail, ξ = 0 Gumbel) by probability-weighted moments (Hosking, Wallis and Wood,
//!    1985), which stay well behaved on the few hundred blocks of a short run where maximum
//!    likelihood does not. A shape of 1 or more (no finite mean) is refused.
//! 4. **Goodness of fit.** The Anderson–Darling statistic of the maxima against the fit, its
//!    p-value from [`GOF_RESAMPLES`] samples of the fitted GEV, each refitted (the parametric
//!    bootstrap, since the parameters were estimated from the same data). p < [`GOF_ALPHA`]:
//!    the maxima do not follow a GEV, and no number is given.
//! 5. **Prediction.** The maximum over a horizon of `m` blocks has the distribution `G^m`. Its
//!    predictive distribution takes the fit's own uncertainty into account: [`RESAMPLES`] times,
//!    `n` maxima are drawn from the fitted GEV and refitted, the refit is reflected about the
//!    fit (the truth taken to lie as far from the fit as the refit does, on the other side: the
//!    basic bootstrap, which takes the moments' small-sample bias out), and one maximum over the
//!    horizon is drawn from it (a parametric bootstrap predictive distribution, after Harris
//!    1989). The interval is that distribution's 5th and 95th percentiles (90 %: the maximum
//!    stays below its upper end with 95 % probability); the expected maximum is its median.
//! 6. **How long to run.** The median maximum over the horizon (the return level) has its own
//!    90 % interval from the same refits; its half-width shrinks as `1/√n`, so the run length
//!    that would bring it within a precision is this run's times the square of their ratio (an
//!    estimate: it assumes a longer run is like this one).
//!
//! Deterministic: the resamples come from a fixed seed, so one result always gives one answer.

use super::uncertainty::SplitMix64;

/// The prediction interval's confidence (two-sided).
pub const CONFIDENCE: f64 = 0.90;

/// The fewest blocks a prediction is made from: with 20, the predictive interval held the true
/// maximum 81–84 % of the time where it says 90 % (BENCHMARKS.md, section 18).
pub const MIN_BLOCKS: usize = 30;

/// The significance of the trend and dependence checks.
pub const CHECK_ALPHA: f64 = 0.01;

/// The significance of the goodness-of-fit test.
pub const GOF_ALPHA: f64 = 0.05;

/// Refits drawn for the predictive distribution.
pub const RESAMPLES: usize = 1000;

/// Refits drawn for the goodness-of-fit test's p-value.
pub const GOF_RESAMPLES: usize = 200;

/// The precision "how long to run" aims at by default: the return level within ±10 %.
pub const PRECISION: f64 = 0.10;

const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// A generalised extreme value distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gev {
    /// Location μ.
    pub location: f64,
    /// Scale σ (> 0).
    pub scale: f64,
    /// Shape ξ: > 0 a heavy (Fréchet) tail, 0 Gumbel, < 0 a bounded (Weibull) one.
    pub shape: f64,
}

impl Gev {
    /// Its cumulative distribution at `x`.
    pub fn cdf(&self, x: f64) -> f64 {
        let z = (x - self.location) / self.scale;
        if self.shape.abs() < 1e-9 {
            return (-(-z).exp()).exp();
        }
        let t = 1.0 + self.shape * z;
        if t <= 0.0 {
            return if self.shape > 0.0 { 0.0 } else { 1.0 };
        }
        (-t.powf(-1.0 / self.shape)).exp()
    }

    /// The value whose cumulative probability `p` satisfies `-ln p = y` (`y` > 0): the
    /// quantile, written so that `p` near 1 (a maximum over many blocks) keeps its precision.
    pub fn quantile_of_log(&self, y: f64) -> f64 {
        if self.shape.abs() < 1e-9 {
            self.location - self.scale * y.ln()
        } else {
            self.location + self.scale / self.shape * (y.powf(-self.shape) - 1.0)
        }
    }

    /// The quantile of probability `p` in (0, 1).
    pub fn quantile(&self, p: f64) -> f64 {
        self.quantile_of_log(-p.ln())
    }

    /// One draw.
    fn draw(&self, rng: &mut SplitMix64) -> f64 {
        self.quantile_of_log(-(1.0 - rng.unit()).ln())
    }
}

/// The gamma function Γ(x) for x > 0 (Lanczos' approximation, g = 7, relative error ~1e-15).
pub fn gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return std::f64::consts::PI / ((std::f64::consts::PI * x).sin() * gamma(1.0 - x));
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = G[0] + (1..9).map(|i| G[i] / (x + i as f64)).sum::<f64>();
    (2.0 * std::f64::consts::PI).sqrt() * t.powf(x + 0.5) * (-t).exp() * sum
}

/// A GEV fitted to `sorted` (ascending) by probability-weighted moments; `None` for fewer than
/// 3 values, values all alike, or a shape of 1 or more (no finite mean: the moments fail).
pub fn fit_pwm(sorted: &[f64]) -> Option<Gev> {
    let n = sorted.len();
    if n < 3 {
        return None;
    }
    let nf = n as f64;
    let (mut b0, mut b1, mut b2) = (0.0, 0.0, 0.0);
    for (j, x) in sorted.iter().enumerate() {
        let j = j as f64;
        b0 += x;
        b1 += x * j / (nf - 1.0);
        b2 += x * j * (j - 1.0) / ((nf - 1.0) * (nf - 2.0));
    }
    (b0, b1, b2) = (b0 / nf, b1 / nf, b2 / nf);
    let (l2, l3) = (2.0 * b1 - b0, 3.0 * b2 - b0);
    // Values all alike (or not numbers) have no spread to fit.
    if l2.is_nan() || l2 <= 0.0 || !l3.is_finite() || l3 == 0.0 {
        return None;
    }
    // Hosking's k is −ξ.
    let c = l2 / l3 - 2f64.ln() / 3f64.ln();
    let k = 7.8590 * c + 2.9554 * c * c;
    if k <= -1.0 + 1e-6 {
        return None;
    }
    let (scale, location) = if k.abs() < 1e-6 {
        let scale = l2 / 2f64.ln();
        (scale, b0 - EULER_GAMMA * scale)
    } else {
        let g = gamma(1.0 + k);
        let scale = l2 * k / (g * (1.0 - 2f64.powf(-k)));
        (scale, b0 + scale * (g - 1.0) / k)
    };
    (scale > 0.0 && scale.is_finite() && location.is_finite()).then_some(Gev { location, scale, shape: -k })
}

/// The Anderson–Darling statistic of `sorted` (ascending) against `g`.
pub fn anderson_darling(sorted: &[f64], g: &Gev) -> f64 {
    let n = sorted.len();
    let z: Vec<f64> = sorted.iter().map(|x| g.cdf(*x).clamp(1e-300, 1.0 - 1e-16)).collect();
    let sum: f64 = (0..n).map(|i| (2 * i + 1) as f64 * (z[i].ln() + (1.0 - z[n - 1 - i]).ln())).sum::<f64>();
    -(n as f64) - sum / n as f64
}

/// Mann–Kendall's trend test on `xs` in time order: the two-sided p-value of no trend (the
/// normal approximation with its correction for ties; exact enough from 10 values on).
pub fn mann_kendall(xs: &[f64]) -> f64 {
    let n = xs.len();
    let mut s: i64 = 0;
    for i in 0..n {
        for j in i + 1..n {
            s += match xs[j].total_cmp(&xs[i]) {
                std::cmp::Ordering::Greater => 1,
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
            };
        }
    }
    let mut sorted = xs.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let ties: f64 = sorted
        .chunk_by(|a, b| a == b)
        .map(|t| {
            let t = t.len() as f64;
            t * (t - 1.0) * (2.0 * t + 5.0)
        })
        .sum();
    let nf = n as f64;
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    if var <= 0.0 {
        return 1.0;
    }
    let z = (s.abs() as f64 - 1.0).max(0.0) / var.sqrt();
    2.0 * upper_normal(z)
}

/// P(Z > z) for a standard normal Z (Abramowitz and Stegun 7.1.26 through erfc; error < 1.5e-7).
fn upper_normal(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly =
        t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

/// The lag-1 autocorrelation of the ranks of `xs` (in time order): robust to a heavy tail,
/// about normal with variance `1/n` when neighbours are independent.
pub fn lag1_of_ranks(xs: &[f64]) -> f64 {
    let n = xs.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|a, b| xs[*a].total_cmp(&xs[*b]));
    let mut rank = vec![0.0; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && xs[order[j + 1]] == xs[order[i]] {
            j += 1;
        }
        (i..=j).for_each(|k| rank[order[k]] = (i + j) as f64 / 2.0);
        i = j + 1;
    }
    let mean = (n as f64 - 1.0) / 2.0;
    let var: f64 = rank.iter().map(|r| (r - mean).powi(2)).sum();
    if var == 0.0 {
        return 0.0;
    }
    rank.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum::<f64>() / var
}

/// Why no prediction was made.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// Fewer blocks than [`MIN_BLOCKS`].
    TooFewBlocks(usize),
    /// The maxima drift: Mann–Kendall's p-value.
    Trend(f64),
    /// Neighbouring maxima depend on each other: their lag-1 rank autocorrelation.
    Dependent(f64),
    /// No GEV fits by moments (a shape of 1 or more, or maxima all alike).
    NoFit,
    /// The maxima do not follow the fitted GEV: the Anderson–Darling p-value.
    BadFit(f64),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::TooFewBlocks(n) => {
                write!(f, "{n} block maxima, fewer than the {MIN_BLOCKS} a fit needs: run longer")
            }
            Refusal::Trend(p) => {
                write!(f, "the block maxima drift (Mann–Kendall p = {p:.3}): this run does not describe a longer one")
            }
            Refusal::Dependent(r) => write!(
                f,
                "neighbouring block maxima depend on each other (lag-1 rank autocorrelation {r:.2}): \
                 late seconds come in bursts, so the blocks are not independent"
            ),
            Refusal::NoFit => {
                write!(f, "no extreme value distribution fits the block maxima (a tail too heavy for a finite mean)")
            }
            Refusal::BadFit(p) => {
                write!(f, "the block maxima do not follow an extreme value distribution (Anderson–Darling p = {p:.3})")
            }
        }
    }
}

/// A prediction of the maximum over a horizon.
#[derive(Clone, Debug, PartialEq)]
pub struct Forecast {
    /// The fit.
    pub fit: Gev,
    /// Intervals per block: the block length used.
    pub per_block: usize,
    /// Blocks fitted.
    pub blocks: usize,
    /// The Anderson–Darling statistic and its p-value.
    pub gof: (f64, f64),
    /// Mann–Kendall's p-value of no trend in the intervals' maxima.
    pub trend_p: f64,
    /// The maxima's lag-1 rank autocorrelation.
    pub lag1: f64,
    /// The predictive distribution's median: the maximum to expect.
    pub expected: f64,
    /// The predictive interval at [`CONFIDENCE`].
    pub interval: (f64, f64),
    /// The return level (the fit's median maximum over the horizon) and its interval.
    pub level: (f64, f64, f64),
    /// The blocks (of `per_block` intervals) a run would need for the return level's interval
    /// to be within ±`precision` of it (`None` when this run already is).
    pub blocks_needed: Option<f64>,
}

/// Block lengths tried, in intervals of the series: the shortest whose maxima pass every check
/// is used.
pub const BLOCK_LENGTHS: [usize; 10] = [1, 2, 3, 5, 10, 15, 20, 30, 60, 120];

/// The maximum over `horizon` intervals predicted from `maxima` (each interval's largest
/// latency, in time order), or why none is given; `precision` is "how long to run"'s aim (a
/// fraction). Blocks of [`BLOCK_LENGTHS`] intervals are tried in turn, as long as they make
/// [`MIN_BLOCKS`]: the first whose maxima pass the checks and the fit is used (a short block's
/// maxima can be a mixture, late seconds and calm ones, which no single law describes; a longer
/// block holds one of each burst). The refusal is the longest block's.
pub fn predict(maxima: &[f64], horizon: f64, precision: f64) -> Result<Forecast, Refusal> {
    let mut refusal = Refusal::TooFewBlocks(maxima.len());
    if maxima.len() < MIN_BLOCKS {
        return Err(refusal);
    }
    // A trend is sought in every interval's maximum, where it shows most: longer blocks
    // would only hide it.
    let trend_p = mann_kendall(maxima);
    if trend_p < CHECK_ALPHA {
        return Err(Refusal::Trend(trend_p));
    }
    for per in block_lengths(maxima.len()) {
        let blocks: Vec<f64> =
            maxima.chunks_exact(per).map(|c| c.iter().copied().fold(f64::NEG_INFINITY, f64::max)).collect();
        match predict_blocks(&blocks, (per, trend_p), horizon / per as f64, precision) {
            Ok(f) => return Ok(f),
            Err(r) => refusal = r,
        }
    }
    Err(refusal)
}

/// The block lengths (in intervals) [`predict`] tries for `intervals` maxima, shortest first:
/// those of [`BLOCK_LENGTHS`] that make [`MIN_BLOCKS`] blocks or more.
pub fn block_lengths(intervals: usize) -> impl Iterator<Item = usize> {
    BLOCK_LENGTHS.into_iter().take_while(move |k| intervals / k >= MIN_BLOCKS)
}

/// [`predict`] for one block length: `horizon_blocks` blocks ahead of `maxima`, the maxima of
/// blocks of `per` intervals whose maxima had Mann–Kendall's `trend_p`.
fn predict_blocks(
    maxima: &[f64],
    (per, trend_p): (usize, f64),
    horizon_blocks: f64,
    precision: f64,
) -> Result<Forecast, Refusal> {
    let n = maxima.len();
    let lag1 = lag1_of_ranks(maxima);
    if lag1.abs() * (n as f64).sqrt() > 2.576 {
        return Err(Refusal::Dependent(lag1));
    }
    let mut sorted = maxima.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let fit = fit_pwm(&sorted).ok_or(Refusal::NoFit)?;
    let mut rng = SplitMix64(0x5eed_0e7a_1e55_0001);
    let ad = anderson_darling(&sorted, &fit);
    let mut beyond = 0usize;
    for _ in 0..GOF_RESAMPLES {
        let Some((s, g)) = refit(&fit, n, &mut rng) else { continue };
        beyond += usize::from(anderson_darling(&s, &g) >= ad);
    }
    let gof_p = (1 + beyond) as f64 / (GOF_RESAMPLES + 1) as f64;
    if gof_p < GOF_ALPHA {
        return Err(Refusal::BadFit(gof_p));
    }
    let (mut draws, mut levels) = (Vec::with_capacity(RESAMPLES), Vec::with_capacity(RESAMPLES));
    let median_y = 2f64.ln() / horizon_blocks;
    for _ in 0..RESAMPLES {
        let Some((_, g)) = refit(&fit, n, &mut rng) else { continue };
        let g = reflected(&fit, &g);
        draws.push(g.quantile_of_log(-(1.0 - rng.unit()).ln() / horizon_blocks));
        levels.push(g.quantile_of_log(median_y));
    }
    draws.sort_unstable_by(f64::total_cmp);
    levels.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let level = fit.quantile_of_log(median_y);
    let (lo, hi) = (at(&levels, tail), at(&levels, 1.0 - tail));
    let half = (hi - lo) / 2.0 / level.abs().max(f64::MIN_POSITIVE);
    Ok(Forecast {
        fit,
        per_block: per,
        blocks: n,
        gof: (ad, gof_p),
        trend_p,
        lag1,
        expected: at(&draws, 0.5),
        interval: (at(&draws, tail), at(&draws, 1.0 - tail)),
        level: (level, lo, hi),
        blocks_needed: (half > precision).then(|| n as f64 * (half / precision).powi(2)),
    })
}

/// The parameters a refit `g` says the truth may have: the fit moved away from `g` by as much
/// as `g` lies from the fit (the basic bootstrap's reflection; the scale on a log scale), so
/// the moments' small-sample bias is taken out instead of doubled.
fn reflected(fit: &Gev, g: &Gev) -> Gev {
    Gev {
        location: 2.0 * fit.location - g.location,
        scale: fit.scale * fit.scale / g.scale,
        shape: 2.0 * fit.shape - g.shape,
    }
}

/// `n` draws from `g`, sorted, and the GEV refitted to them.
fn refit(g: &Gev, n: usize, rng: &mut SplitMix64) -> Option<(Vec<f64>, Gev)> {
    let mut s: Vec<f64> = (0..n).map(|_| g.draw(rng)).collect();
    s.sort_unstable_by(f64::total_cmp);
    let fit = fit_pwm(&s)?;
    Some((s, fit))
}

/// The `q`-quantile of `sorted` (nearest rank); NaN when empty.
fn at(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[super::histogram::nearest_rank(sorted.len() as u64, q) as usize - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_has_its_known_values() {
        for (x, want) in [(1.0, 1.0), (5.0, 24.0), (0.5, std::f64::consts::PI.sqrt()), (1.5, 0.886_226_925_452_758)] {
            assert!((gamma(x) - want).abs() < 1e-12 * want, "Γ({x}) = {} not {want}", gamma(x));
        }
    }

    #[test]
    fn the_quantile_inverts_the_cdf_for_each_kind_of_tail() {
        for shape in [-0.3, 0.0, 0.25, 0.6] {
            let g = Gev { location: 100.0, scale: 20.0, shape };
            for p in [0.01, 0.5, 0.99, 0.999_999] {
                let x = g.quantile(p);
                assert!((g.cdf(x) - p).abs() < 1e-9, "shape {shape}: cdf(q({p})) = {}", g.cdf(x));
            }
        }
    }

    #[test]
    fn the_moments_fit_recovers_a_known_gev_from_many_draws() {
        for shape in [-0.2, 0.0, 0.2, 0.4] {
            let g = Gev { location: 50.0, scale: 10.0, shape };
            let mut rng = SplitMix64(7);
            let (s, fit) = refit(&g, 200_000, &mut rng).unwrap();
            assert_eq!(s.len(), 200_000);
            assert!((fit.shape - shape).abs() < 0.02, "shape {shape}: fitted {fit:?}");
            assert!((fit.location - 50.0).abs() < 0.3 && (fit.scale - 10.0).abs() < 0.3, "{fit:?}");
        }
    }

    #[test]
    fn mann_kendall_finds_a_trend_and_not_noise() {
        let mut rng = SplitMix64(3);
        let noise: Vec<f64> = (0..200).map(|_| rng.unit()).collect();
        let drift: Vec<f64> = noise.iter().enumerate().map(|(i, x)| x + i as f64 * 0.01).collect();
        assert!(mann_kendall(&noise) > 0.05, "{}", mann_kendall(&noise));
        assert!(mann_kendall(&drift) < 1e-6, "{}", mann_kendall(&drift));
        // S = 3 on (1, 2, 3): var = 3·2·11/18, z = (3 − 1)/√(11/3); p = 2·P(Z > 1.0445) = 0.2963.
        assert!((mann_kendall(&[1.0, 2.0, 3.0]) - 0.2963).abs() < 1e-3);
    }

    #[test]
    fn the_rank_autocorrelation_sees_bursts_and_not_independent_draws() {
        let mut rng = SplitMix64(5);
        let iid: Vec<f64> = (0..400).map(|_| rng.unit()).collect();
        let bursts: Vec<f64> = iid.chunks(10).flat_map(|c| c.iter().map(|x| x + c[0] * 5.0)).collect();
        assert!(lag1_of_ranks(&iid).abs() * 20.0 < 2.576, "{}", lag1_of_ranks(&iid));
        assert!(lag1_of_ranks(&bursts) * 20.0 > 2.576, "{}", lag1_of_ranks(&bursts));
        // Ranks 0..3 in order: Σ(r−1.5)(r'−1.5) over neighbours / Σ(r−1.5)² = (0.75−0.25+0.75)/5.
        assert!((lag1_of_ranks(&[1.0, 2.0, 3.0, 4.0]) - 0.25).abs() < 1e-12);
    }

    /// The predicted interval holds the true maximum of `parent`'s runs as often as it says.
    fn holds_at_its_stated_confidence(name: &str, parent: known::Parent) {
        // 60 runs each here (the benchmark, examples/evt-coverage.rs, runs 400): a rate's
        // standard error is 3.9 points, so ±7.5 is about two of them.
        let [given, held, _, _] = known::coverage(parent, 60, 180, 1800.0, 11);
        let rate = held as f64 / given as f64;
        assert!(given >= 48, "{name}: only {given} of 60 runs gave a prediction");
        assert!((rate - CONFIDENCE).abs() <= 0.075, "{name}: {held} of {given} intervals held the maximum");
    }

    // One test per parent: they run side by side.
    #[test]
    fn the_predicted_interval_holds_an_exponential_parents_true_maximum_at_its_stated_confidence() {
        holds_at_its_stated_confidence("exponential", known::exponential);
    }

    #[test]
    fn the_predicted_interval_holds_a_pareto_parents_true_maximum_at_its_stated_confidence() {
        holds_at_its_stated_confidence("pareto", known::pareto);
    }

    #[test]
    fn the_predicted_interval_holds_a_lognormal_parents_true_maximum_at_its_stated_confidence() {
        holds_at_its_stated_confidence("lognormal", known::lognormal);
    }

    #[test]
    fn a_run_too_short_for_its_rare_spikes_gets_no_prediction() {
        // One sample in 10 000 a spike, at 1 000 samples a block: a 3-minute run's blocks of up
        // to 6 s are a mixture of calm blocks and spiked ones, which no GEV describes.
        let [given, ..] = known::coverage(known::spiky, 40, 180, 1800.0, 11);
        assert!(given <= 4, "{given} of 40 short runs gave a prediction");
        let mut rng = SplitMix64(1);
        let few: Vec<f64> = (0..MIN_BLOCKS - 1).map(|_| known::max_of(known::exponential, 1e3, &mut rng)).collect();
        assert_eq!(predict(&few, 100.0, PRECISION), Err(Refusal::TooFewBlocks(MIN_BLOCKS - 1)));
        let drift: Vec<f64> = (0..200).map(|i| known::max_of(known::exponential, 1e3, &mut rng) + i as f64).collect();
        assert!(matches!(predict(&drift, 100.0, PRECISION), Err(Refusal::Trend(_))));
    }

    #[test]
    fn how_long_to_run_shrinks_as_the_run_grows() {
        let mut rng = SplitMix64(2);
        let maxima: Vec<f64> = (0..1200).map(|_| known::max_of(known::exponential, 1e3, &mut rng)).collect();
        let short = predict(&maxima[..60], 3600.0, PRECISION).unwrap();
        let long = predict(&maxima, 3600.0, PRECISION).unwrap();
        let need = short.blocks_needed.expect("a minute's run is not within ±10 %");
        assert!(need > 60.0, "{need}");
        assert!(long.blocks_needed.is_none_or(|n| n < need), "{:?} against {need}", long.blocks_needed);
        let width = |f: &Forecast| (f.level.2 - f.level.1) / f.level.0;
        // Twenty times the blocks: about √20 ≈ 4.5 times narrower.
        assert!(width(&long) < width(&short) / 3.0, "{} against {}", width(&long), width(&short));
    }
}

/// Known answers for the method's tests and its benchmark (`examples/evt-coverage.rs`): parent
/// distributions of latency (µs), the exact maximum of many of their samples, and how often the
/// predicted interval holds the true maximum.
pub mod known {
    use super::{predict, SplitMix64, PRECISION};

    /// A parent distribution of latencies (µs) by its tail quantile: the value whose
    /// probability of being exceeded is `tail` (0 < tail < 1).
    pub type Parent = fn(f64) -> f64;

    /// 10 µs plus an exponential of mean 20 µs: a light tail (its maxima tend to Gumbel's law).
    pub fn exponential(tail: f64) -> f64 {
        10.0 - 20.0 * tail.ln()
    }

    /// Pareto from 10 µs, exponent 3: a heavy tail (maxima tend to Fréchet's law, shape 1/3).
    pub fn pareto(tail: f64) -> f64 {
        10.0 * tail.powf(-1.0 / 3.0)
    }

    /// Log-normal, median 15 µs, σ 0.5: maxima converge slowly (Gumbel's law in the limit).
    pub fn lognormal(tail: f64) -> f64 {
        15.0 * (0.5 * -crate::measure::uncertainty::normal_quantile(tail)).exp()
    }

    /// Mostly 10 µs plus an exponential of mean 5 µs; one sample in 10 000 a spike, Pareto from
    /// 200 µs with exponent 2.5 (a host's preemption).
    pub fn spiky(tail: f64) -> f64 {
        if tail < 1e-4 {
            200.0 * (tail / 1e-4).powf(-1.0 / 2.5)
        } else {
            10.0 - 5.0 * ((tail - 1e-4) / (1.0 - 1e-4)).ln()
        }
    }

    /// The maximum of `k` independent samples of `parent`: its tail probability is
    /// `1 − U^(1/k)`, computed without losing the digits that matter.
    pub fn max_of(parent: Parent, k: f64, rng: &mut SplitMix64) -> f64 {
        let u = 1.0 - rng.unit();
        parent(-(u.ln() / k).exp_m1())
    }

    /// Over `trials` runs of `blocks` blocks of 1 000 samples each: predictions given, and how
    /// many of their intervals held the true maximum over `horizon` blocks, were below it (the
    /// interval too low), or above it.
    pub fn coverage(parent: Parent, trials: usize, blocks: usize, horizon: f64, seed: u64) -> [usize; 4] {
        let mut rng = SplitMix64(seed);
        let mut out = [0; 4];
        for _ in 0..trials {
            let maxima: Vec<f64> = (0..blocks).map(|_| max_of(parent, 1000.0, &mut rng)).collect();
            let truth = max_of(parent, 1000.0 * horizon, &mut rng);
            let Ok(f) = predict(&maxima, horizon, PRECISION) else { continue };
            out[0] += 1;
            let i = if truth > f.interval.1 {
                2
            } else if truth < f.interval.0 {
                3
            } else {
                1
            };
            out[i] += 1;
        }
        out
    }
}
