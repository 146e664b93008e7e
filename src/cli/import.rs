//! `rtlab import` and `rtlab show`.

use clap::Args;
use std::path::PathBuf;

/// The unit of a text file's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FileUnit {
    /// Microseconds (cyclictest's default).
    Us,
    /// Nanoseconds (files from `cyclictest -N`).
    Ns,
}

/// Turn cyclictest output (--json from 2.4 or 2.10, the -h/-H histogram, -q T: lines) into
/// rtlab's RunResult, so summaries, plots, reports and comparisons work on old data.
#[derive(Args, Debug, Clone)]
pub struct ImportArgs {
    /// cyclictest output files
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Where to write: a file (one input; - for stdout) or an existing directory (one
    /// NAME.json per input)
    #[arg(short = 'o', long = "output", value_name = "OUT", required = true)]
    pub output: PathBuf,

    /// Unit of text files' figures when it cannot be seen (-h/-H output of `cyclictest -N`)
    #[arg(long, value_enum)]
    pub unit: Option<FileUnit>,
}

/// Print the summary table of a RunResult (or of any cyclictest output file).
#[derive(Args, Debug, Clone)]
pub struct ShowArgs {
    /// A RunResult JSON file, or a cyclictest output file
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Show nanoseconds instead of microseconds
    #[arg(short = 'N', long = "nsecs")]
    pub nsecs: bool,

    /// Unit of a cyclictest text file's figures when it cannot be seen
    #[arg(long, value_enum)]
    pub unit: Option<FileUnit>,
}

impl FileUnit {
    /// The importer's unit.
    pub fn to_unit(self) -> crate::import::Unit {
        match self {
            FileUnit::Us => crate::import::Unit::Micros,
            FileUnit::Ns => crate::import::Unit::Nanos,
        }
    }
}
