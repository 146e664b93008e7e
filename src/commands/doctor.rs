//! `rtlab doctor`: is this machine set up for real time, for the CPUs you measure.

use crate::doctor::{self, Sysroot};
use crate::error::Error;
use crate::export::write_output;
use crate::rt::affinity::CpuSet;
use crate::session::Signals;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// A validated `rtlab doctor`.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// The measured CPUs.
    pub cpus: CpuSet,
    /// Where the JSON goes (`-`: stdout, instead of the table).
    pub json: Option<PathBuf>,
    /// Exit 3 on a warning too.
    pub strict: bool,
    /// Where /proc and /sys are read.
    pub root: Sysroot,
    /// `--brief`: the summary, the fixes and the boot settings only.
    pub brief: bool,
    /// The CPUs were not named: every online CPU is examined as measured.
    pub all_cpus: bool,
}

/// Examines the machine (sampling counters for one second; Ctrl-C ends the sample early and
/// the report covers what was sampled), prints the table and writes the JSON; exits 3 when a
/// check fails (or, `--strict`, warns).
pub fn execute(opts: &DoctorOptions) -> Result<i32, Error> {
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let exam = doctor::Examination::begin(opts.root.clone(), opts.cpus.clone());
    let end = exam.started() + doctor::SAMPLE;
    while Instant::now() < end && !signals.stop.load(Relaxed) {
        std::thread::sleep(end.saturating_duration_since(Instant::now()).min(Duration::from_millis(20)));
    }
    let report = exam.finish();
    let to_stdout = opts.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    if !to_stdout {
        let online = crate::doctor::online_cpus(&opts.root).ok();
        let view = crate::output::doctor::View {
            brief: opts.brief,
            width: crate::rt::term::columns().unwrap_or(100),
            all_cpus: opts.all_cpus,
            housekeeping: online.map(|o| o.difference(&opts.cpus)).filter(|h| !h.is_empty()).map(|h| h.to_string()),
            measured: opts.cpus.to_string(),
        };
        crate::export::print(&crate::output::doctor::table(&report, &view));
    }
    if let Some(p) = &opts.json {
        let mut bytes = serde_json::to_vec_pretty(&report).map_err(|e| Error::Runtime(e.to_string()))?;
        bytes.push(b'\n');
        write_output(p, &bytes).map_err(|e| Error::Runtime(format!("cannot write --json {}: {e}", p.display())))?;
    }
    Ok(report.exit_code(opts.strict))
}
