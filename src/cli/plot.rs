//! `rtlab plot`.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// The kind of picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Latency histogram: µs across, samples (log) up, one line per thread, max marked
    Histogram,
    /// Tail percentiles: latency against p50 … p99.999 on a log "1 − P" axis
    Cdf,
    /// Latency over time from a samples file (rtlab run --samples), spikes visible
    Timeseries,
    /// A sweep directory: p50/p99/p99.9/max against the swept axis, throughput on the right
    Sweep,
}

/// What a curve stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ByArg {
    /// One curve per measuring thread (default for one run)
    Thread,
    /// One curve per input, all its threads together (default for several inputs)
    Input,
}

impl ByArg {
    /// The plot module's choice.
    pub fn to_by(self) -> crate::plot::inputs::By {
        match self {
            ByArg::Thread => crate::plot::inputs::By::Thread,
            ByArg::Input => crate::plot::inputs::By::Input,
        }
    }
}

/// Draw a picture (PNG or SVG, fonts embedded) from RunResults, sweep directories, samples
/// files or cyclictest output.
#[derive(Args, Debug, Clone)]
pub struct PlotArgs {
    /// RunResult JSON files, sweep directories, samples files, cyclictest --json or -h output
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// The picture: FILE.png or FILE.svg
    #[arg(short = 'o', long = "output", value_name = "FILE", required = true)]
    pub output: PathBuf,

    /// What to draw (default: sweep for a sweep directory, histogram otherwise)
    #[arg(short = 'k', long, value_enum)]
    pub kind: Option<Kind>,

    /// One curve per thread or per input (histogram and cdf)
    #[arg(long, value_enum)]
    pub by: Option<ByArg>,

    /// Draw this latency as a threshold line (timeseries), e.g. 100us
    #[arg(long, value_name = "LATENCY", value_parser = crate::cli::parse::latency)]
    pub threshold: Option<i64>,

    /// The picture's title (default: what it shows)
    #[arg(long)]
    pub title: Option<String>,

    /// Unit of text files' figures when it cannot be seen (-h/-H output of `cyclictest -N`)
    #[arg(long, value_enum)]
    pub unit: Option<crate::cli::import::FileUnit>,
}
