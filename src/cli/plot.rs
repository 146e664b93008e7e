//! `rtlab plot`.

use crate::commands::plot::PlotOptions;
use clap::Args;
use std::path::PathBuf;

pub use crate::plot::inputs::{By, Kind};

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

    /// Which times to draw (histogram and cdf): latency, response, run, or both latency and response
    #[arg(long, value_enum, default_value = "latency")]
    pub of: crate::plot::inputs::Of,

    /// One curve per thread or per input (histogram and cdf)
    #[arg(long, value_enum)]
    pub by: Option<By>,

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

impl PlotOptions {
    /// Validates the arguments: the picture's format and that it may be written.
    pub fn from_cli(a: PlotArgs) -> Result<PlotOptions, super::UsageError> {
        let format = crate::plot::Format::of(&a.output).map_err(|e| super::UsageError(format!("-o {e}")))?;
        let ins: Vec<&std::path::Path> = a.inputs.iter().map(PathBuf::as_path).collect();
        crate::export::check_outputs(&[("-o".into(), &a.output)], &ins).map_err(super::UsageError)?;
        Ok(PlotOptions {
            format,
            kind: a.kind,
            by: a.by,
            of: a.of,
            threshold: a.threshold,
            title: a.title,
            unit: a.unit.map(|u| u.to_unit()),
            inputs: a.inputs,
            output: a.output,
        })
    }
}
