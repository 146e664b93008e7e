//! `rtlab export`: a saved result written again in rtlab's or cyclictest's formats.

use crate::error::Error;
use crate::export::cyclictest_json::{CyclictestJson, Version};
use crate::export::cyclictest_text::{CyclictestHistogram, CyclictestSpikes, Layout};
use crate::export::{json::Json, write_output, Exporter};
use crate::import::input::{self, Content};
use crate::result::RunResult;
use std::path::PathBuf;

/// The format written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// rtlab's RunResult.
    Json,
    /// cyclictest's `--json`.
    CyclictestJson {
        /// rt-tests 2.4's layout rather than 2.10's.
        v2_4: bool,
    },
    /// cyclictest's `-h`/`-H` block.
    CyclictestHist {
        /// rt-tests 2.4's layout rather than 2.10's.
        v2_4: bool,
        /// `-H`'s summary column.
        histofall: bool,
    },
    /// cyclictest's `--spike` list.
    CyclictestSpikes,
    /// An HdrHistogram interval log.
    Hlog,
}

/// A validated `rtlab export`.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The result to read.
    pub file: PathBuf,
    /// Where to write (`-`: stdout).
    pub output: PathBuf,
    /// The format.
    pub format: ExportFormat,
    /// cyclictest's `-N`.
    pub nsecs: bool,
    /// cyclictest's `-h` size (`None`: the result's linear range).
    pub histogram_us: Option<u32>,
    /// The unit of a text input.
    pub unit: Option<crate::import::Unit>,
}

/// The histogram size of a result when none is given: its linear range in 1 µs buckets.
fn default_size(r: &RunResult) -> usize {
    let h = r.all.stats.histogram.as_ref();
    h.filter(|h| h.bucket_ns == 1000).map_or(0, |h| (h.range_ns / 1000) as usize)
}

/// Reads the result and writes it in the chosen format.
pub fn execute(opts: &ExportOptions) -> Result<i32, Error> {
    let input = input::load(&opts.file, opts.unit).map_err(|e| Error::Usage(e.to_string()))?;
    let Content::Run(result) = input.content else {
        return Err(Error::Usage(format!(
            "{}: a sweep holds many runs; export one of its points (DIR/points/NNN-….json)",
            opts.file.display()
        )));
    };
    let histogram_us = opts.histogram_us.map(|u| u as usize);
    let exporter: Box<dyn Exporter> = match opts.format {
        ExportFormat::Json => Box::new(Json),
        ExportFormat::CyclictestJson { v2_4 } => Box::new(CyclictestJson {
            version: if v2_4 { Version::V2_4 } else { Version::V2_10 },
            nsecs: opts.nsecs,
            histogram_us: histogram_us.map(|u| u as i64),
            return_code: 0,
        }),
        ExportFormat::CyclictestHist { v2_4, histofall } => Box::new(CyclictestHistogram {
            layout: if v2_4 { Layout::V2_4 } else { Layout::V2_10 },
            histofall,
            nsecs: opts.nsecs,
            size: histogram_us.unwrap_or_else(|| default_size(&result)),
        }),
        ExportFormat::CyclictestSpikes => Box::new(CyclictestSpikes { nsecs: opts.nsecs }),
        ExportFormat::Hlog => Box::new(crate::export::hlog::Hlog),
    };
    let bytes = exporter.serialize(&result).map_err(|e| Error::Usage(format!("{}: {e}", opts.file.display())))?;
    write_output(&opts.output, &bytes)
        .map_err(|e| Error::Runtime(format!("cannot write {}: {e}", opts.output.display())))?;
    Ok(0)
}
