//! `rtlab run` (and its alias `rtlab beam run`): any probe through the one pipeline, then
//! `--json` and the summary.

use crate::error::Error;
use crate::export::{json::Json, write_output, Exporter};
use crate::output::live::LiveView;
use crate::output::table;
use crate::output::warnings::WarningPrinter;
use crate::session::{self, Fanout, Provenance, Signals};
use crate::sysinfo::Environment;
use crate::units::Unit;
use std::io::IsTerminal;
use std::path::PathBuf;

/// A validated `run`: the session's plan and the output choices.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// What to measure and what to record (probe, length, loads, `--samples`, configuration).
    pub plan: session::Plan,
    /// `--json` target.
    pub json: Option<PathBuf>,
    /// Display unit.
    pub unit: Unit,
    /// `-q`.
    pub quiet: bool,
    /// `--predict`: the horizon (ns) of the worst case to expect.
    pub predict: Option<i64>,
}

/// Runs the measurement and writes every output; returns the exit code (0, 3 when the
/// verdict failed, 1 when an output or a load failed).
pub fn execute(opts: &RunOptions, command_line: Vec<String>) -> Result<i32, Error> {
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let to_stdout = opts.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    let draw = !opts.quiet && !to_stdout && std::io::stdout().is_terminal();
    let mut view = LiveView::new(draw, opts.unit);
    view.intro = opts.plan.probe.describe().filter(|_| !opts.quiet);
    view.total = opts.plan.duration;
    let mut warnings = WarningPrinter::default();
    let provenance = Provenance { command_line, environment: Environment::capture() };
    let (mut result, failure) = session::measure(
        &opts.plan,
        provenance,
        opts.json.as_deref(),
        &mut Fanout(vec![&mut view, &mut warnings]),
        &signals,
    )?;
    if let Some(horizon) = opts.predict {
        crate::result::predict::attach(&mut result, horizon);
    }
    warnings.rest(&result);
    let json = opts.json.as_deref();
    let written = match json {
        Some(path) => Json
            .serialize(&result)
            .and_then(|bytes| write_output(path, &bytes).map_err(|e| e.to_string()))
            .map_err(|e| {
                Error::Runtime(format!(
                    "cannot write --json {}: {e}; the summary above is all that is left",
                    path.display()
                ))
            }),
        None => Ok(()),
    };
    // A runtime probe's summary opens with the runtime's version line.
    let header = match &result.runtime {
        Some(rt) => {
            format!("{}\n", rt.version.clone().unwrap_or_else(|| format!("{} (version not reported)", rt.kind)))
        }
        None => String::new(),
    };
    table::print_summary(&result, opts.unit, &header, to_stdout);
    warnings.recap(&result);
    written?;
    if let Some(f) = failure {
        let kept = json.map(|p| format!("; the results so far are in {}", p.display())).unwrap_or_default();
        return Err(Error::Runtime(format!("{f}{kept}")));
    }
    Ok(result.exit_code())
}
