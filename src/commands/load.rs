//! `rtlab load` and the hidden `rtlab load-worker`.
use crate::error::Error;
use crate::load::LoadSpec;
use std::path::PathBuf;

use crate::export::write_output;
use crate::load::{LoadResult, LoadSet};
use crate::session::Signals;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// A validated `rtlab load`.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The loads.
    pub specs: Vec<LoadSpec>,
    /// How long they run.
    pub duration: std::time::Duration,
    /// Where their results go.
    pub json: Option<PathBuf>,
}

/// Runs the loads alone for the duration (or until SIGINT/SIGTERM) and prints their throughput.
pub fn execute(args: &LoadOptions) -> Result<i32, Error> {
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let set = LoadSet::start(&args.specs).map_err(Error::Runtime)?;
    let end = Instant::now() + args.duration;
    while Instant::now() < end && !signals.stop.load(Relaxed) {
        std::thread::sleep(end.saturating_duration_since(Instant::now()).min(Duration::from_millis(50)));
    }
    let results = set.stop();
    if let Some(p) = &args.json {
        let doc = crate::load::LoadReport {
            loads: results.clone(),
            schema: "rtlab.load/1".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
        };
        let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|e| Error::Runtime(e.to_string()))?;
        bytes.push(b'\n');
        write_output(p, &bytes).map_err(|e| Error::Runtime(format!("cannot write --json {}: {e}", p.display())))?;
    }
    let failed: Vec<&LoadResult> = results.iter().filter(|r| r.failed).collect();
    let text = crate::output::table::loads(&results);
    if args.json.as_ref().is_some_and(|p| p.as_os_str() == "-") {
        eprint!("{text}");
    } else {
        crate::export::print(&text);
    }
    crate::output::warnings::WarningPrinter::default().loads(&results);
    if let Some(f) = failed.first() {
        return Err(Error::Runtime(format!("load '{}' failed: {}", f.spec, f.warnings.join("; "))));
    }
    Ok(0)
}

/// `rtlab load-worker SPEC`: one worker of a `mode=process` load.
pub fn worker(spec: &str) -> Result<i32, Error> {
    let spec = spec.parse().map_err(Error::Usage)?;
    crate::load::worker_main(&spec).map_err(Error::Runtime)?;
    Ok(0)
}
