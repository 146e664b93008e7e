//! `rtlab run`: plan → loads → engine → RunResult → files and summary.

use crate::cli::run::RunOptions;
use crate::export::{json::Json, write_output, Exporter};
use crate::load::LoadSet;
use crate::measure::engine::{self, Observer, Signals};
use crate::output::live::LiveView;
use crate::output::table;
use crate::result::{Provenance, RunResult};
use crate::sysinfo::Environment;
use std::io::{IsTerminal, Write};

/// A failure while running (exit code 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RunError(pub String);

/// Runs one measurement with its loads and returns the result (nothing is printed or written).
pub fn measure(
    opts: &RunOptions,
    command_line: Vec<String>,
    environment: Environment,
    observer: &mut dyn Observer,
    signals: &Signals,
) -> Result<RunResult, RunError> {
    let simulated = opts.plan.simulate.is_some();
    // Simulated probes get no real load: their samples would not depend on it.
    let loads =
        if simulated || opts.loads.is_empty() { None } else { Some(LoadSet::start(&opts.loads).map_err(RunError)?) };
    let out = engine::run(&opts.plan, observer, signals).map_err(|e| RunError(e.to_string()));
    let load_results = loads.map(LoadSet::stop).unwrap_or_default();
    let out = out?;
    let mut result =
        RunResult::build(Provenance { command_line, environment, config: opts.config.clone(), simulated }, &out);
    result.loads = load_results;
    Ok(result)
}

/// Runs the measurement and writes every output; returns the exit code (0, or 3 when the
/// verdict failed).
pub fn execute(opts: RunOptions, command_line: Vec<String>) -> Result<i32, RunError> {
    let signals = Signals::install().map_err(|e| RunError(format!("cannot install signal handlers: {e}")))?;
    let to_stdout = opts.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    let draw = !opts.quiet && !to_stdout && std::io::stdout().is_terminal();
    let mut view = LiveView::new(draw, opts.unit);
    let result = measure(&opts, command_line, Environment::capture(), &mut view, &signals)?;

    if let Some(path) = &opts.json {
        let bytes = Json.serialize(&result).map_err(RunError)?;
        write_output(path, &bytes).map_err(|e| RunError(format!("cannot write --json {}: {e}", path.display())))?;
    }
    let mut summary = table::summary(&result, opts.unit);
    if !result.loads.is_empty() {
        summary += &crate::commands::load::table(&result.loads);
    }
    if to_stdout {
        let _ = std::io::stderr().write_all(summary.as_bytes());
    } else {
        let _ = std::io::stdout().write_all(summary.as_bytes());
    }
    Ok(result.exit_code())
}
