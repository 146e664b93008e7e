//! `rtlab export`.

use crate::commands::export::{ExportFormat, ExportOptions};
use clap::Args;
use std::path::PathBuf;

/// The formats `rtlab export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// rtlab's RunResult (rtlab.run/1)
    Json,
    /// cyclictest's --json file
    CyclictestJson,
    /// cyclictest's -h/-H histogram block
    CyclictestHist,
    /// cyclictest's --spike list (from a result written by rtlab cyclictest)
    CyclictestSpikes,
    /// An HdrHistogram interval log (from a result whose series keeps each interval's histogram)
    Hlog,
}

/// Which rt-tests release's layout to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompatArg {
    /// rt-tests 2.10 (current)
    #[value(name = "2.10")]
    V2_10,
    /// rt-tests 2.4
    #[value(name = "2.4")]
    V2_4,
}

/// Write a saved result (a RunResult, cyclictest output, a samples file) in another format:
/// rtlab's JSON, or cyclictest's --json, -h histogram or --spike list.
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Examples:\n  rtlab export run.json --format cyclictest-hist --histogram-size 100\n  rtlab export old-cyclictest.txt --format json -o run.json"
)]
pub struct ExportArgs {
    /// The result to export
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The format to write
    #[arg(long, value_enum)]
    pub format: FormatArg,

    /// Where to write it (- for stdout)
    #[arg(short = 'o', long = "output", value_name = "OUT", default_value = "-")]
    pub output: PathBuf,

    /// cyclictest layouts: which rt-tests release to imitate
    #[arg(long, value_enum, default_value = "2.10")]
    pub compat: CompatArg,

    /// cyclictest formats: values in nanoseconds (-N)
    #[arg(short = 'N', long = "nsecs")]
    pub nsecs: bool,

    /// cyclictest histogram: buckets of 1 µs (-h US) [default: the result's linear range]
    #[arg(long, value_name = "US", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub histogram_size: Option<u32>,

    /// cyclictest histogram: add the summary column (-H)
    #[arg(long)]
    pub histofall: bool,

    /// The unit of a text input's figures
    #[arg(long, value_enum)]
    pub unit: Option<super::import::FileUnit>,
}

impl ExportOptions {
    /// Validates the arguments: the options fit the format, the output may be written.
    pub fn from_cli(a: ExportArgs) -> Result<ExportOptions, super::UsageError> {
        let cyclictest = a.format != FormatArg::Json;
        if !cyclictest && (a.nsecs || a.histogram_size.is_some() || a.histofall || a.compat != CompatArg::V2_10) {
            return Err(super::UsageError(
                "-N, --histogram-size, --histofall and --compat shape cyclictest's formats; drop them for --format json"
                    .into(),
            ));
        }
        if (a.histogram_size.is_some() || a.histofall)
            && !matches!(a.format, FormatArg::CyclictestHist | FormatArg::CyclictestJson)
        {
            return Err(super::UsageError(
                "--histogram-size and --histofall apply to --format cyclictest-hist or cyclictest-json".into(),
            ));
        }
        crate::export::check_outputs(&[("-o".into(), &a.output)], &[&a.file]).map_err(super::UsageError)?;
        let v2_4 = a.compat == CompatArg::V2_4;
        Ok(ExportOptions {
            format: match a.format {
                FormatArg::Json => ExportFormat::Json,
                FormatArg::CyclictestJson => ExportFormat::CyclictestJson { v2_4 },
                FormatArg::CyclictestHist => ExportFormat::CyclictestHist { v2_4, histofall: a.histofall },
                FormatArg::CyclictestSpikes => ExportFormat::CyclictestSpikes,
                FormatArg::Hlog => ExportFormat::Hlog,
            },
            nsecs: a.nsecs,
            histogram_us: a.histogram_size,
            unit: a.unit.map(|u| u.to_unit()),
            file: a.file,
            output: a.output,
        })
    }
}
