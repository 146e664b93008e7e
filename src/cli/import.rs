//! `rtlab import` and `rtlab show`.

use crate::commands::import::{ImportOptions, ShowOptions};
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

    /// Predict the largest latency a run of DURATION would show (e.g. 24h) from the result's
    /// per-second maxima (extreme value theory; none where the data do not allow it)
    #[arg(long = "predict", value_name = "DURATION", allow_hyphen_values = true, value_parser = super::parse::horizon)]
    pub predict: Option<i64>,
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

impl ImportOptions {
    /// Validates the arguments: one target per input (a directory for several), each writable
    /// and none an input.
    pub fn from_cli(a: ImportArgs) -> Result<ImportOptions, super::UsageError> {
        let to_dir = a.output.is_dir();
        if a.files.len() > 1 && !to_dir {
            return Err(super::UsageError(format!(
                "-o {}: with {} input files, -o must be an existing directory (one NAME.json per input)",
                a.output.display(),
                a.files.len()
            )));
        }
        let target_of = |file: &std::path::Path| {
            if to_dir {
                let stem = file.file_stem().map_or_else(|| "import".into(), |s| s.to_string_lossy().into_owned());
                a.output.join(format!("{stem}.json"))
            } else {
                a.output.clone()
            }
        };
        let files: Vec<(PathBuf, PathBuf)> = a.files.iter().map(|f| (f.clone(), target_of(f))).collect();
        let outputs: Vec<(String, &std::path::Path)> =
            files.iter().map(|(f, t)| (format!("-o (for {})", f.display()), t.as_path())).collect();
        let inputs: Vec<&std::path::Path> = a.files.iter().map(PathBuf::as_path).collect();
        crate::export::check_outputs(&outputs, &inputs).map_err(super::UsageError)?;
        Ok(ImportOptions { files, unit: a.unit.map(|u| u.to_unit()) })
    }
}

impl ShowOptions {
    /// The arguments as options (nothing to check before reading the file).
    pub fn from_cli(a: ShowArgs) -> Result<ShowOptions, super::UsageError> {
        let unit = if a.nsecs { crate::units::Unit::Nanos } else { crate::units::Unit::Micros };
        Ok(ShowOptions { file: a.file, unit, file_unit: a.unit.map(|u| u.to_unit()), predict: a.predict })
    }
}
