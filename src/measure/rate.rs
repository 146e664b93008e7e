//! How often: a count of events over an exposure as a rate, with the exact (Garwood) interval
//! of a Poisson process's mean.
//!
//! `k` events seen: the interval's lower end is the mean under which `k` or more would be seen
//! with probability `(1 − C)/2`, its upper end the mean under which `k` or fewer would (0 when
//! `k` = 0 for the lower). The Poisson assumption is that events come independently at a
//! constant rate: bursts of late samples, counted once each, are closer to it than the samples.

/// The interval's confidence.
pub const CONFIDENCE: f64 = 0.95;

/// P(X ≤ k) for X Poisson of mean `mu`, summed in log space (exact to rounding).
pub fn poisson_cdf(k: u64, mu: f64) -> f64 {
    if mu <= 0.0 {
        return 1.0;
    }
    // Terms grow up to i ≈ mu, then fall: sum from the largest down both ways to stay finite.
    let log_term = |i: u64| i as f64 * mu.ln() - mu - ln_factorial(i);
    let peak = (mu.floor() as u64).min(k);
    let top = log_term(peak);
    let mut sum = 0.0;
    for i in (0..=peak).rev() {
        let t = (log_term(i) - top).exp();
        sum += t;
        if t < 1e-17 * sum {
            break;
        }
    }
    for i in peak + 1..=k {
        let t = (log_term(i) - top).exp();
        sum += t;
        if t < 1e-17 * sum {
            break;
        }
    }
    (top.exp() * sum).min(1.0)
}

/// ln(n!) (Stirling's series beyond 20, exact sums below).
fn ln_factorial(n: u64) -> f64 {
    if n < 20 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let x = n as f64 + 1.0;
    (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + 1.0 / (12.0 * x) - 1.0 / (360.0 * x.powi(3))
        + 1.0 / (1260.0 * x.powi(5))
}

/// The exact [`CONFIDENCE`] interval of the mean count of a Poisson process that showed `k`.
pub fn interval(k: u64) -> (f64, f64) {
    let alpha = (1.0 - CONFIDENCE) / 2.0;
    let hi_bound = k as f64 + 20.0 * (k as f64 + 1.0).sqrt() + 20.0;
    // P(X ≥ k; mu) = alpha: P(X ≤ k − 1; mu) = 1 − alpha, falling in mu.
    let low = if k == 0 { 0.0 } else { solve(|mu| poisson_cdf(k - 1, mu) - (1.0 - alpha), hi_bound) };
    let high = solve(|mu| poisson_cdf(k, mu) - alpha, hi_bound);
    (low, high)
}

/// The root in [0, `hi`] of `f`, falling from positive to negative (bisection to 1e-12).
fn solve(f: impl Fn(f64) -> f64, hi: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, hi);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 * hi.max(1.0) {
            break;
        }
    }
    (lo + hi) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_intervals_are_garwoods_tabled_ones() {
        // Garwood (1936), as tabled for 95 %: 0 → [0, 3.689], 1 → [0.0253, 5.572],
        // 5 → [1.623, 11.668], 10 → [4.795, 18.390], 100 → [81.364, 121.627].
        for (k, lo, hi) in
            [(0, 0.0, 3.689), (1, 0.0253, 5.572), (5, 1.623, 11.668), (10, 4.795, 18.390), (100, 81.364, 121.627)]
        {
            let (l, h) = interval(k);
            assert!((l - lo).abs() < 0.002 && (h - hi).abs() < 0.002, "{k}: [{l}, {h}]");
        }
    }

    #[test]
    fn the_cdf_sums_to_one_and_matches_small_cases() {
        assert!((poisson_cdf(0, 2.0) - (-2.0f64).exp()).abs() < 1e-15);
        assert!((poisson_cdf(2, 1.0) - 2.5 * (-1.0f64).exp()).abs() < 1e-15);
        assert!((poisson_cdf(100_000, 1000.0) - 1.0).abs() < 1e-12);
        // The median of a large Poisson lies within one of its mean.
        assert!(poisson_cdf(99_999, 100_000.0) < 0.5 && poisson_cdf(100_001, 100_000.0) > 0.5);
    }

    #[test]
    fn the_interval_holds_the_true_mean_at_least_as_often_as_it_says() {
        use crate::measure::uncertainty::SplitMix64;
        let mut rng = SplitMix64(3);
        for mu in [0.5, 3.0, 12.0] {
            let trials = 4000;
            let mut held = 0;
            for _ in 0..trials {
                // A Poisson draw: exponential gaps within a unit of time.
                let (mut t, mut k) = (0.0, 0u64);
                loop {
                    t += -(1.0 - rng.unit()).ln() / mu;
                    if t > 1.0 {
                        break;
                    }
                    k += 1;
                }
                let (l, h) = interval(k);
                held += usize::from(l <= mu && mu <= h);
            }
            let rate = held as f64 / trials as f64;
            assert!(rate >= CONFIDENCE - 0.01, "mean {mu}: held {rate}");
        }
    }
}
