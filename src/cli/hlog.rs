//! `--hlog FILE` and `--hlog-interval`, shared by every command that measures latency over time
//! (run, cyclictest, monitor, watch, timerlat, noise).

use super::{parse, UsageError};
use crate::session::observers::HlogPlan;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The longest `--hlog-interval`: an hour (longer intervals hide when the tail grew).
const MAX_INTERVAL_S: u64 = 3600;

/// An HdrHistogram interval log of the run.
#[derive(Args, Debug, Clone, Default)]
pub struct HlogArgs {
    /// Write an HdrHistogram interval log to FILE as the run goes: per thread (and stage) one
    /// histogram of latencies in ns per interval, tagged thread0_cpu1, for HistogramLogAnalyzer,
    /// jHiccup's tools or `rtlab import FILE`
    #[arg(long = "hlog", value_name = "FILE", help_heading = "Output")]
    pub hlog: Option<PathBuf>,

    /// The interval log's interval, in whole seconds
    #[arg(long = "hlog-interval", value_name = "TIME", default_value = "1s", value_parser = parse::duration, requires = "hlog", help_heading = "Output")]
    pub hlog_interval: Duration,
}

impl HlogArgs {
    /// The writer's plan, or why the options cannot be: the interval is a whole number of
    /// seconds (the run is read once a second), at most an hour; the log is a file.
    pub fn plan(&self) -> Result<Option<HlogPlan>, UsageError> {
        let Some(path) = &self.hlog else { return Ok(None) };
        if path.as_os_str() == "-" {
            return Err(UsageError(
                "--hlog -: the interval log is written as the run goes and synced at its end; give a file name, \
                 e.g. --hlog run.hlog"
                    .into(),
            ));
        }
        let i = self.hlog_interval;
        if i.subsec_nanos() != 0 || i.as_secs() == 0 || i.as_secs() > MAX_INTERVAL_S {
            return Err(UsageError(format!(
                "--hlog-interval {}: give whole seconds from 1s to 1h (the run is read once a second), e.g. \
                 --hlog-interval 1s",
                crate::units::duration(i.as_nanos().min(i64::MAX as u128) as i64)
            )));
        }
        Ok(Some(HlogPlan { path: path.clone(), seconds: i.as_secs() as u32 }))
    }

    /// The log as an output to check before measuring.
    pub fn output(&self) -> Option<(String, &Path)> {
        self.hlog.as_deref().map(|p| ("--hlog".to_string(), p))
    }
}
