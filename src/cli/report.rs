//! `rtlab report` and `rtlab compare`.

use clap::Args;
use std::path::PathBuf;

/// Write a report: verdict, provenance, environment, configuration, per-thread percentiles,
/// warnings and plots; for a sweep its table and plots; for several inputs the comparison.
#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// RunResult JSON files, sweep directories, samples files, cyclictest --json or -h output
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// The report: FILE.html (one self-contained page) or FILE.md (pictures as SVG files
    /// beside it)
    #[arg(short = 'o', long = "output", value_name = "FILE", required = true)]
    pub output: PathBuf,

    /// Unit of text files' figures when it cannot be seen (-h/-H output of `cyclictest -N`)
    #[arg(long, value_enum)]
    pub unit: Option<crate::cli::import::FileUnit>,
}

/// Compare runs side by side (the first is the baseline): per-thread and all-threads
/// statistics with differences and ratios, and what differs in their environments.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Two or more RunResult files, cyclictest --json or -h output, samples files or sweep
    /// directories (each point is a run); the first is the baseline
    #[arg(required = true, num_args = 2.., value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// Also draw the tails side by side: FILE.png or FILE.svg
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Exit with code 3 when a run is more than PCT percent worse than the baseline on
    /// --percentile (all threads), e.g. 10
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub fail_if_worse: Option<f64>,

    /// The figure --fail-if-worse checks: 50, 90, 99, 99.9, 99.99, 99.999, max or mean
    #[arg(long, value_name = "P", default_value = "99", value_parser = parse_metric)]
    pub percentile: crate::report::compare::Metric,

    /// Print every thread's table (default: all threads, and each thread when there are 8 or
    /// fewer)
    #[arg(long)]
    pub all_threads: bool,

    /// Unit of text files' figures when it cannot be seen (-h/-H output of `cyclictest -N`)
    #[arg(long, value_enum)]
    pub unit: Option<crate::cli::import::FileUnit>,
}

fn parse_pct(s: &str) -> Result<f64, String> {
    s.trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0)
        .ok_or_else(|| format!("'{s}' is not a percentage; give e.g. 10 (percent worse allowed)"))
}

fn parse_metric(s: &str) -> Result<crate::report::compare::Metric, String> {
    crate::report::compare::Metric::parse(s)
}
