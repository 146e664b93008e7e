//! Benchmark of `--predict` (BENCHMARKS.md, section 18): on simulated runs from known parent
//! distributions, how often the predicted 90 % interval holds the true maximum over a horizon
//! ten times the run, and how often a prediction is refused.
//!
//! `cargo run --release --example evt-coverage [TRIALS [BLOCKS…]]` (default 400 trials; the
//! table below, or with BLOCKS the three converging parents at each count of blocks).

use rtlab::measure::evt::known::{self, Parent};

fn main() {
    let trials: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(400);
    let counts: Vec<usize> = std::env::args().skip(2).filter_map(|a| a.parse().ok()).collect();
    let parents: [(&str, Parent); 3] = [
        ("exponential", known::exponential),
        ("pareto (exponent 3)", known::pareto),
        ("lognormal (sigma 0.5)", known::lognormal),
    ];
    let by_count: Vec<(&str, Parent, usize)> =
        counts.iter().flat_map(|&n| parents.iter().map(move |&(name, p)| (name, p, n))).collect();
    let table: [(&str, Parent, usize); 8] = [
        ("exponential", known::exponential, 180),
        ("pareto (exponent 3)", known::pareto, 180),
        ("lognormal (sigma 0.5)", known::lognormal, 180),
        ("spikes 1 in 10 000", known::spiky, 180),
        ("exponential", known::exponential, 1800),
        ("pareto (exponent 3)", known::pareto, 1800),
        ("lognormal (sigma 0.5)", known::lognormal, 1800),
        ("spikes 1 in 10 000", known::spiky, 1800),
    ];
    let cases = if counts.is_empty() { table.to_vec() } else { by_count };
    println!("| parent | blocks of 1 000 samples | horizon | predictions | held | truth above | truth below |");
    println!("|---|---|---|---|---|---|---|");
    for (name, parent, blocks) in cases {
        let [given, held, above, below] = known::coverage(parent, trials, blocks, 10.0 * blocks as f64, 11);
        let pct = |k: usize| 100.0 * k as f64 / given.max(1) as f64;
        println!(
            "| {name} | {blocks} | {} | {given} of {trials} | {:.1} % | {:.1} % | {:.1} % |",
            10 * blocks,
            pct(held),
            pct(above),
            pct(below)
        );
    }
}
