//! `rtlab timerlat top|hist`: `rtlab run --stages` on one thread per CPU, printed in rtla
//! timerlat's layouts (`output::timerlat`), with the RunResult written by `--json`.

use crate::error::Error;
use crate::export::{json::Json, write_output, Exporter};
pub use crate::output::timerlat::{HistLayout, Mode};
use crate::output::warnings::WarningPrinter;
use crate::session::{self, Fanout, Provenance, Signals};
use crate::sysinfo::Environment;
use std::path::PathBuf;

/// A validated `rtlab timerlat`.
#[derive(Clone, Debug)]
pub struct TimerlatOptions {
    /// The run: one probe thread per CPU, with stages.
    pub plan: session::Plan,
    /// `--json` target.
    pub json: Option<PathBuf>,
    /// top or hist.
    pub mode: Mode,
    /// `-q`: only the summary at the end.
    pub quiet: bool,
    /// hist's layout.
    pub hist: HistLayout,
    /// Say what the stop's explanation was (not `--no-aa`).
    pub aa: bool,
}

/// Measures, then prints rtla's table or histogram; exit 0, 1 when an output failed.
pub fn execute(opts: &TimerlatOptions, command_line: Vec<String>) -> Result<i32, Error> {
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let mut warnings = WarningPrinter::default();
    let provenance = Provenance { command_line, environment: Environment::capture() };
    let (result, failure) =
        session::measure(&opts.plan, provenance, opts.json.as_deref(), &mut Fanout(vec![&mut warnings]), &signals)
            .map_err(|e| match e {
                session::SessionError::Probe(crate::probes::ProbeError::Usage(m)) => Error::Usage(m),
                e => Error::Runtime(e.to_string()),
            })?;
    warnings.rest(&result);
    let text = match opts.mode {
        Mode::Top => crate::output::timerlat::top(&result),
        Mode::Hist => crate::output::timerlat::hist(&result, &opts.hist),
    };
    crate::export::print(&(text + &crate::output::timerlat::stop(&result, opts.aa)));
    if let Some(path) = &opts.json {
        let bytes = Json.serialize(&result).map_err(Error::Runtime)?;
        write_output(path, &bytes)
            .map_err(|e| Error::Runtime(format!("cannot write --json {}: {e}", path.display())))?;
    }
    if let Some(f) = failure {
        return Err(Error::Runtime(f));
    }
    Ok(0)
}
