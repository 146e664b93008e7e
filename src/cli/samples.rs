//! `rtlab samples`.

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
