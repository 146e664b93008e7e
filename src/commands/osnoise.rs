//! `rtlab osnoise top|hist` (and `rtla osnoise`/`rtla hwnoise`): the noise pipeline with
//! attribution, then rtla's table or histogram, the stop line and rtla's actions.

use crate::error::Error;
use crate::export::{json::Json, write_output, Exporter};
pub use crate::output::timerlat::{Action, HistLayout, Mode};
use crate::output::warnings::WarningPrinter;
use crate::session::{self, Fanout, Provenance, Signals};
use crate::sysinfo::Environment;

/// A validated `rtlab osnoise`.
#[derive(Debug, Clone)]
pub struct OsnoiseOptions {
    /// The noise run (busy threads, attribution, stop thresholds).
    pub plan: session::Plan,
    /// `--json` target.
    pub json: Option<std::path::PathBuf>,
    /// top or hist.
    pub mode: Mode,
    /// `rtla hwnoise`: only hardware and NMI noise is noise, and its table has no IRQ,
    /// Softirq or Thread column.
    pub hwnoise: bool,
    /// `-q`.
    pub quiet: bool,
    /// hist's layout.
    pub hist: HistLayout,
    /// `--on-threshold`: done when a stop threshold ended the run.
    pub on_threshold: Vec<Action>,
    /// `--on-end`: done at the end.
    pub on_end: Vec<Action>,
    /// Where the record of the noise is written for the `trace` actions.
    pub trace: Option<std::path::PathBuf>,
}

/// Measures, then prints rtla's table (or histogram) and, after a stop, `rtla osnoise hit stop
/// tracing`; exit 3 after a stop (rtla's 2 under its name), 0 otherwise.
pub fn execute(opts: &OsnoiseOptions, command_line: Vec<String>) -> Result<i32, Error> {
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let mut warnings = WarningPrinter::default();
    let provenance = Provenance { command_line, environment: Environment::capture() };
    let plan = &opts.plan;
    let (result, failure) = session::measure(plan, provenance, None, &mut Fanout(vec![&mut warnings]), &signals)?;
    warnings.rest(&result);
    let attributed = result.threads.iter().any(|t| t.noise.as_ref().is_some_and(|n| n.sources.is_some()));
    if opts.hwnoise && !attributed {
        eprintln!(
            "rtlab: warning: hwnoise: without the kernel's events no gap can be told from an interrupt or a thread: \
             its figures count every gap and -s/-S were not judged (run as root with tracefs mounted)"
        );
    }
    let elapsed = result.duration_s.unwrap_or(0.0) as u64;
    let mut text = match opts.mode {
        Mode::Top => {
            crate::output::osnoise::top(&crate::output::osnoise::cpus(&result, opts.hwnoise), opts.hwnoise, elapsed)
        }
        Mode::Hist => crate::output::osnoise::hist(&result, &opts.hist),
    };
    let stopped = result.end_reason == crate::result::EndReason::Breaktrace;
    if stopped {
        // rtla prints its tracer's name, osnoise, for hwnoise too.
        text += "rtla osnoise hit stop tracing\n";
    }
    if let Some(path) = &opts.json {
        let bytes = Json.serialize(&result).map_err(Error::Runtime)?;
        write_output(path, &bytes)
            .map_err(|e| Error::Runtime(format!("cannot write --json {}: {e}", path.display())))?;
    }
    let hits: u64 = result
        .threads
        .iter()
        .filter_map(|t| t.noise.as_ref())
        .map(|n| match (&n.sources, opts.hwnoise) {
            (Some(s), true) => s.hw_stop_hits,
            _ => n.stop_hits,
        })
        .sum();
    let on_end_trace = opts.on_end.iter().any(|a| matches!(a, Action::Trace(_)));
    let saved = match &opts.trace {
        Some(p) if hits > 0 || on_end_trace => {
            let record = crate::output::osnoise::record(&result, opts.hwnoise);
            write_output(p, record.as_bytes())
                .map_err(|e| Error::Runtime(format!("cannot write the trace {}: {e}", p.display())))?;
            Some(p.as_path())
        }
        _ => None,
    };
    // rtla does the threshold's actions when it sees the stop, before its last table (with
    // `continue`, once here for the run's hits).
    let acted = if hits > 0 { crate::output::timerlat::perform(&opts.on_threshold, saved) } else { Ok(()) };
    crate::export::print(&text);
    let acted = acted.and(crate::output::timerlat::perform(&opts.on_end, saved));
    // The workers lived through the actions, as rtla's do.
    crate::rt::worker::end_parked();
    if let Err(why) = acted {
        eprintln!("rtlab: warning: {}", crate::units::printable(&why));
    }
    if let Some(f) = failure {
        return Err(Error::Runtime(f));
    }
    Ok(if stopped { 3 } else { 0 })
}
