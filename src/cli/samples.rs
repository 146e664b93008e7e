//! `rtlab samples`.

use crate::commands::samples::SamplesOptions;
use clap::Args;
use std::path::PathBuf;

/// Read a samples file written by `rtlab run --samples FILE`.
#[derive(Args, Debug, Clone)]
pub struct SamplesArgs {
    /// The samples file
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Print every sample as CSV: thread,cycle,wake_ns,latency_ns
    #[arg(long)]
    pub csv: bool,

    /// Write the CSV here instead of stdout
    #[arg(short = 'o', long = "output", value_name = "OUT", requires = "csv")]
    pub output: Option<PathBuf>,
}

impl SamplesOptions {
    /// Validates the arguments: the CSV target may be written and is not the input.
    pub fn from_cli(a: SamplesArgs) -> Result<SamplesOptions, super::UsageError> {
        let target = a.output.clone().unwrap_or_else(|| PathBuf::from("-"));
        if a.csv {
            crate::export::check_outputs(&[("-o".into(), &target)], &[&a.file]).map_err(super::UsageError)?;
        }
        Ok(SamplesOptions { csv: a.csv.then_some(target), file: a.file })
    }
}
