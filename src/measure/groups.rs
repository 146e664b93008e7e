//! Two groups of runs of one figure each (a percentile, the maximum): how much larger group B's
//! runs are than group A's, as a ratio with an interval, and a verdict with a stated confidence.
//!
//! The method assumes no distribution. Each run gives one figure; the figures are compared on a
//! log scale, so the effect is a ratio. The estimate is the Hodges–Lehmann shift: the median of
//! the `m × n` differences `ln b − ln a` over every pair of an A run and a B run. Its interval is
//! Moses's: the `k`-th smallest and `k`-th largest of those differences, `k` taken from the exact
//! distribution of the Mann–Whitney statistic `U` (the count of pairs with `b < a`) when the
//! groups are alike, so the interval holds the true shift with probability at least
//! [`CONFIDENCE`] whatever the figures' distribution (computed exactly up to [`EXACT_LIMIT`] runs
//! a side; by `U`'s normal approximation beyond). It is the Mann–Whitney test turned into an
//! interval: its lower end is above `ln t` exactly when the one-sided test says, at
//! `(1 + CONFIDENCE) / 2`, that B's runs are larger than `t` times A's.
//!
//! What it assumes: the runs of a group are alike and independent (interleave the groups' runs
//! so that the machine's slow drift hits both), and B differs from A by a factor (a shift of the
//! log-figures). With fewer than 3 runs a side no interval at 90 % exists (3 a side is the
//! fewest whose most extreme arrangement has probability 1/20), so the verdict is inconclusive.
//!
//! Verdicts for a margin `t = 1 + PCT/100`: *worse* when the interval lies above `t`, *better*
//! when below `1/t`, *no evidence* (of a change beyond the margin) when within `[1/t, t]`,
//! *inconclusive* otherwise, with an estimate of the runs a side that would decide it.

use super::uncertainty::normal_quantile;
use std::sync::OnceLock;

/// The interval's confidence (two-sided); each one-sided verdict is at (1 + this) / 2 = 95 %.
pub const CONFIDENCE: f64 = 0.90;

/// Up to this many runs in each group, `U`'s distribution is computed exactly.
pub const EXACT_LIMIT: usize = 60;

/// The most runs a side an estimate names; beyond it, "more than" this.
pub const RUNS_CAP: u64 = 1000;

/// What the groups say about B against A, beyond the margin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// B's runs are larger than A's by more than the margin, with the confidence stated.
    Worse,
    /// B's runs are smaller than A's by more than the margin.
    Better,
    /// Any difference is within the margin.
    NoEvidence,
    /// Not decided: the runs a side estimated to decide it (`None`: more than [`RUNS_CAP`],
    /// or not estimable from one run a side).
    Inconclusive(Option<u64>),
}

impl Verdict {
    /// `worse`, `better`, `no evidence`, `inconclusive`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Worse => "worse",
            Verdict::Better => "better",
            Verdict::NoEvidence => "no evidence",
            Verdict::Inconclusive(_) => "inconclusive",
        }
    }
}

/// B ÷ A for one figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    /// The Hodges–Lehmann estimate.
    pub estimate: f64,
    /// The interval's ends (`None`: unbounded, too few runs).
    pub low: Option<f64>,
    /// Its upper end.
    pub high: Option<f64>,
    /// The interval's exact coverage (at least [`CONFIDENCE`]; 1 when unbounded).
    pub coverage: f64,
    /// The verdict for the margin asked.
    pub verdict: Verdict,
}

/// B's figures against A's (one per run, all > 0) for a margin of `margin_pct` percent; `None`
/// when a group is empty or a figure is not positive (no ratio).
pub fn compare(a: &[f64], b: &[f64], margin_pct: f64) -> Option<Ratio> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|v| !(*v > 0.0 && v.is_finite())) {
        return None;
    }
    let la: Vec<f64> = a.iter().map(|v| v.ln()).collect();
    let lb: Vec<f64> = b.iter().map(|v| v.ln()).collect();
    let mut d: Vec<f64> = lb.iter().flat_map(|y| la.iter().map(move |x| y - x)).collect();
    d.sort_by(f64::total_cmp);
    let mid = d.len() / 2;
    let estimate = if d.len() % 2 == 1 { d[mid] } else { (d[mid - 1] + d[mid]) / 2.0 };
    let (k, tail) = critical(a.len(), b.len(), (1.0 - CONFIDENCE) / 2.0);
    let (low, high) = if k == 0 { (None, None) } else { (Some(d[k - 1]), Some(d[d.len() - k])) };
    let t = (1.0 + margin_pct / 100.0).ln();
    let verdict = match (low, high) {
        (Some(l), _) if l > t => Verdict::Worse,
        (_, Some(h)) if h < -t => Verdict::Better,
        (Some(l), Some(h)) if l >= -t && h <= t => Verdict::NoEvidence,
        _ => Verdict::Inconclusive(runs_to_decide(&la, &lb, estimate, t)),
    };
    Some(Ratio {
        estimate: estimate.exp(),
        low: low.map(f64::exp),
        high: high.map(f64::exp),
        coverage: if k == 0 { 1.0 } else { 1.0 - 2.0 * tail },
        verdict,
    })
}

/// The largest `k` with `P(U ≤ k − 1) ≤ alpha` for groups of `m` and `n` alike, and that
/// probability (`k` = 0: none, the interval is unbounded).
pub fn critical(m: usize, n: usize, alpha: f64) -> (usize, f64) {
    if m <= EXACT_LIMIT && n <= EXACT_LIMIT {
        let p = null_distribution(m, n);
        let (mut k, mut cum, mut tail) = (0, 0.0, 0.0);
        for q in &p {
            cum += q;
            if cum > alpha + 1e-12 {
                break;
            }
            k += 1;
            tail = cum;
        }
        return (k, tail);
    }
    // U is near normal: mean mn/2, variance mn(m+n+1)/12 (continuity-corrected).
    let (mf, nf) = (m as f64, n as f64);
    let sd = (mf * nf * (mf + nf + 1.0) / 12.0).sqrt();
    let k = (mf * nf / 2.0 + normal_quantile(alpha) * sd - 0.5).floor().max(0.0) as usize + 1;
    (k.min(m * n / 2), alpha)
}

/// The probabilities of `U` = 0, 1, …, `m·n` when all arrangements of the `m + n` runs are
/// equally likely (the groups are alike).
pub fn null_distribution(m: usize, n: usize) -> Vec<f64> {
    // w[j]: arrangements of i A-runs and j B-runs counted by U, for the i reached. The largest
    // run is an A-run (above every B-run: U grows by j) or a B-run (U as without it).
    let mut w: Vec<Vec<f64>> = vec![vec![1.0]; n + 1];
    for i in 1..=m {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        for j in 0..=n {
            let mut row = vec![0.0; i * j + 1];
            for (u, c) in w[j].iter().enumerate() {
                row[u + j] += c;
            }
            if j > 0 {
                for (u, c) in cur[j - 1].iter().enumerate() {
                    row[u] += c;
                }
            }
            cur.push(row);
        }
        w = cur;
    }
    let total: f64 = w[n].iter().sum();
    w[n].iter().map(|c| c / total).collect()
}

/// Runs a side that would decide the verdict if the effect and the runs' spread stay as
/// measured: the fewest, more than either group has now (which did not decide it), whose
/// interval's half-width is below the effect's distance from the margin. The half-width for `n`
/// a side is that of a normal model, `z · s · √(2/n) · √(π/3)` (the rank method's efficiency of
/// 3/π against the mean's), with `z` the standard score of the exact critical rank at `n` a side
/// (wider than the normal one for few runs, where `U` takes few values).
fn runs_to_decide(la: &[f64], lb: &[f64], estimate: f64, t: f64) -> Option<u64> {
    let (m, n) = (la.len(), lb.len());
    if m + n < 3 {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let ss = |v: &[f64]| {
        let c = mean(v);
        v.iter().map(|x| (x - c) * (x - c)).sum::<f64>()
    };
    let s = ((ss(la) + ss(lb)) / (m + n - 2) as f64).sqrt();
    let distance = (estimate.abs() - t).abs();
    if distance <= 0.0 {
        return None;
    }
    let decides = |k: u64| {
        let z = critical_score(k as usize);
        z * s * (2.0 / k as f64).sqrt() * (std::f64::consts::PI / 3.0).sqrt() < distance
    };
    (m.max(n) as u64 + 1..=RUNS_CAP).find(|&k| decides(k))
}

/// Up to this many runs a side, [`runs_to_decide`] takes the exact critical rank's score; beyond,
/// `U`'s steps are small against its spread and the normal score is within a few percent.
const SCORE_EXACT_LIMIT: usize = 20;

/// The standard score of the exact critical rank of `n` runs a side: how many standard
/// deviations of `U` below its mean the interval's end lies (the normal score of the one-sided
/// level beyond [`SCORE_EXACT_LIMIT`], and infinite where no interval exists).
fn critical_score(n: usize) -> f64 {
    let alpha = (1.0 - CONFIDENCE) / 2.0;
    if n > SCORE_EXACT_LIMIT {
        return -normal_quantile(alpha);
    }
    // An undecided comparison asks for each n up to the limit, and each exact score costs the
    // whole distribution of U: computed once, the same numbers for every comparison after.
    static EXACT: OnceLock<Vec<f64>> = OnceLock::new();
    EXACT.get_or_init(|| (0..=SCORE_EXACT_LIMIT).map(|n| exact_critical_score(n, alpha)).collect())[n]
}

/// [`critical_score`] from `U`'s exact distribution for `n` runs a side.
fn exact_critical_score(n: usize, alpha: f64) -> f64 {
    let (k, _) = critical(n, n, alpha);
    if k == 0 {
        return f64::INFINITY;
    }
    let nf = n as f64;
    let sd = (nf * nf * (2.0 * nf + 1.0) / 12.0).sqrt();
    // U ≤ k − 1 is the critical region: its edge, continuity-corrected, in standard deviations.
    (nf * nf / 2.0 - (k as f64 - 0.5)) / sd
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::uncertainty::SplitMix64;

    #[test]
    fn u_has_its_tabled_exact_distribution() {
        // 3 a side: 20 arrangements, U = 0 in one; 4 a side: 70, U ≤ 1 in two.
        let p = null_distribution(3, 3);
        assert_eq!(p.len(), 10);
        assert!(
            (p[0] - 1.0 / 20.0).abs() < 1e-12 && (p[1] - 1.0 / 20.0).abs() < 1e-12 && (p[2] - 2.0 / 20.0).abs() < 1e-12
        );
        let p = null_distribution(4, 4);
        assert!((p[0] + p[1] - 2.0 / 70.0).abs() < 1e-12 && (p[2] - 2.0 / 70.0).abs() < 1e-12);
        assert!((p[8] - 8.0 / 70.0).abs() < 1e-12, "the middle of 4 a side: 8 of 70");
        for (m, n) in [(1, 1), (2, 5), (5, 2), (7, 9), (30, 30)] {
            let p = null_distribution(m, n);
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{m} {n}");
            for u in 0..=m * n {
                assert!((p[u] - p[m * n - u]).abs() < 1e-9, "symmetric: {m} {n} {u}");
            }
        }
        assert_eq!(critical(3, 3, 0.05).0, 1);
        assert_eq!(critical(4, 4, 0.05), (2, 2.0 / 70.0));
        assert_eq!(critical(2, 2, 0.05).0, 0, "2 a side: no 90 % interval");
        assert_eq!(critical(1, 9, 0.05).0, 0);
    }

    #[test]
    fn the_normal_approximation_agrees_with_the_exact_critical_rank_where_both_apply() {
        for n in [20, 40, 60] {
            let exact = critical(n, n, 0.05).0 as i64;
            let (mf, nf) = (n as f64, n as f64);
            let sd = (mf * nf * (mf + nf + 1.0) / 12.0).sqrt();
            let approx = (mf * nf / 2.0 + normal_quantile(0.05) * sd - 0.5).floor() as i64 + 1;
            assert!((exact - approx).abs() <= 1, "{n} a side: exact {exact}, normal {approx}");
        }
    }

    #[test]
    fn groups_far_apart_are_worse_and_their_ratio_is_the_median_pairwise_one() {
        let a = [100.0, 110.0, 120.0, 130.0];
        let b = [300.0, 330.0, 360.0, 390.0];
        let r = compare(&a, &b, 10.0).unwrap();
        assert_eq!(r.verdict, Verdict::Worse);
        // 16 ratios; the 2nd smallest (300/120 = 2.5) and 2nd largest (360/100) bound it.
        assert!((r.low.unwrap() - 2.5).abs() < 1e-9 && (r.high.unwrap() - 3.6).abs() < 1e-9, "{r:?}");
        assert!((r.coverage - (1.0 - 4.0 / 70.0)).abs() < 1e-12);
        assert!((r.estimate - 3.0).abs() < 0.01, "{r:?}");
        let back = compare(&b, &a, 10.0).unwrap();
        assert_eq!(back.verdict, Verdict::Better);
        assert!((back.estimate * r.estimate - 1.0).abs() < 1e-9);
    }

    #[test]
    fn alike_groups_within_the_margin_show_no_evidence_and_one_run_a_side_decides_nothing() {
        let a = [100.0, 101.0, 102.0, 103.0, 104.0];
        let b = [101.5, 102.5, 100.5, 103.5, 99.5];
        assert_eq!(compare(&a, &b, 10.0).unwrap().verdict, Verdict::NoEvidence);
        let one = compare(&[100.0], &[1000.0], 10.0).unwrap();
        assert_eq!((one.low, one.high, one.verdict), (None, None, Verdict::Inconclusive(None)));
        assert!((one.estimate - 10.0).abs() < 1e-9);
        assert_eq!(compare(&[100.0, 0.0], &[5.0], 10.0), None, "no ratio with a zero");
    }

    /// A heavy-tailed figure: Pareto with shape 1.5 and scale `scale`.
    fn pareto(rng: &mut SplitMix64, scale: f64) -> f64 {
        scale / (1.0 - rng.unit()).powf(1.0 / 1.5)
    }

    #[test]
    fn alike_groups_of_heavy_tailed_runs_are_called_worse_at_the_tests_exact_rate_and_never_at_a_margin() {
        // Groups of 4 from one Pareto: the interval lies above 1 when U ≤ 1, probability 2/70.
        let mut rng = SplitMix64(7);
        let trials = 4000;
        let (mut worse, mut worse_10) = (0, 0);
        for _ in 0..trials {
            let a: Vec<f64> = (0..4).map(|_| pareto(&mut rng, 100.0)).collect();
            let b: Vec<f64> = (0..4).map(|_| pareto(&mut rng, 100.0)).collect();
            worse += usize::from(compare(&a, &b, 0.0).unwrap().verdict == Verdict::Worse);
            worse_10 += usize::from(compare(&a, &b, 10.0).unwrap().verdict == Verdict::Worse);
        }
        let rate = worse as f64 / trials as f64;
        // Binomial(4000, 2/70): sd 0.26 points; ±1 point is beyond 3.5 sd.
        assert!((rate - 2.0 / 70.0).abs() < 0.01, "worse in {rate}");
        assert!(worse_10 <= worse, "a margin only removes verdicts");
    }

    #[test]
    fn the_interval_holds_a_known_factor_at_its_stated_coverage() {
        let mut rng = SplitMix64(11);
        let trials = 3000;
        let mut held = 0;
        let mut coverage = 0.0;
        for _ in 0..trials {
            let a: Vec<f64> = (0..5).map(|_| pareto(&mut rng, 50.0)).collect();
            let b: Vec<f64> = (0..6).map(|_| 2.0 * pareto(&mut rng, 50.0)).collect();
            let r = compare(&a, &b, 10.0).unwrap();
            coverage = r.coverage;
            held += usize::from(r.low.unwrap() <= 2.0 && 2.0 <= r.high.unwrap());
        }
        let rate = held as f64 / trials as f64;
        assert!(coverage >= CONFIDENCE);
        assert!((rate - coverage).abs() < 0.02, "held {rate}, stated {coverage}");
    }

    #[test]
    fn an_undecided_comparison_names_more_runs_the_closer_the_effect_is_to_the_margin() {
        // Spread alike, effects of ×1.25 and ×1.5 against a 10 % margin, 2 runs a side.
        let a = [100.0, 140.0];
        let near = compare(&a, &[125.0, 175.0], 10.0).unwrap();
        let far = compare(&a, &[150.0, 210.0], 10.0).unwrap();
        let (Verdict::Inconclusive(Some(n_near)), Verdict::Inconclusive(Some(n_far))) = (near.verdict, far.verdict)
        else {
            panic!("{near:?} {far:?}")
        };
        assert!(n_near > n_far && n_far >= 3, "{n_near} {n_far}");
        // The estimate: a spread of s = ln 1.4 / √2 a run; ln 1.5 − ln 1.1 away from the margin.
        // For n a side the half-width is z · s · √(2/n) · √(π/3): with the normal z (1.645) 4
        // would do (3.3 needed), but the exact intervals are wider for few runs: 3 a side
        // reach only U = 0 of 20 arrangements (z 1.75: 3.8 needed), 4 a side U ≤ 1 of 70 (z
        // 1.88: 4.4), 5 a side U ≤ 4 of 252 (z 1.67: 3.4), the first that decides.
        assert_eq!(n_far, 5);
        assert_eq!(critical(5, 5, 0.05).0, 5);
    }

    #[test]
    fn an_undecided_comparison_never_names_as_few_runs_as_it_already_has() {
        // p99s (µs) of 4 + 4 runs of this VM, B with a FIFO load of 100 µs every 4.9 ms: about
        // ×1.4, not decided by 4 a side (the normal approximation alone named 3).
        let a = [91.0, 60.0, 63.0, 80.0];
        let b = [111.0, 122.0, 113.0, 86.0];
        let r = compare(&a, &b, 10.0).unwrap();
        let Verdict::Inconclusive(Some(n)) = r.verdict else { panic!("{r:?}") };
        assert!(n > 4, "{n}");
        // Twice the runs a side, the same figures: decided (worse) when the estimate said so.
        let (a2, b2) = ([a, a].concat(), [b, b].concat());
        let twice = compare(&a2, &b2, 10.0).unwrap();
        assert_eq!(n <= 8, twice.verdict == Verdict::Worse, "{n} {twice:?}");
    }
}
