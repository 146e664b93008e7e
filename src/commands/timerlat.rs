//! `rtlab timerlat top|hist`: `rtlab run --stages` on one thread per CPU, printed in rtla
//! timerlat's layouts (`output::timerlat`), with the RunResult written by `--json`.

use crate::error::Error;
use crate::export::{json::Json, write_output, Exporter};
pub use crate::output::timerlat::{Action, HistLayout, Mode};
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
    /// `--on-threshold`: done when a threshold stopped the run.
    pub on_threshold: Vec<Action>,
    /// `--on-end`: done at the end.
    pub on_end: Vec<Action>,
}

/// Does `actions`, each in turn; a failure is a warning (the results are written).
fn act(actions: &[Action]) {
    for a in actions {
        let done = match a {
            Action::Shell(cmd) => std::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .status()
                .map_err(|e| e.to_string())
                .and_then(|s| if s.success() { Ok(()) } else { Err(format!("it ended with {s}")) }),
            Action::Signal { num, pid } => {
                let pid = pid.unwrap_or_else(crate::rt::process::parent_id);
                crate::rt::process::signal_process(pid, *num).map_err(|e| e.to_string())
            }
        };
        if let Err(why) = done {
            eprintln!("rtlab: warning: the action {a:?} failed: {why}");
        }
    }
}

/// Measures, then prints rtla's table or histogram; exit 0, 1 when an output failed.
pub fn execute(opts: &TimerlatOptions, command_line: Vec<String>) -> Result<i32, Error> {
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let mut warnings = WarningPrinter::default();
    let provenance = Provenance { command_line, environment: Environment::capture() };
    let (result, failure) =
        session::measure(&opts.plan, provenance, opts.json.as_deref(), &mut Fanout(vec![&mut warnings]), &signals)?;
    warnings.rest(&result);
    let text = match opts.mode {
        Mode::Top => crate::output::timerlat::top(&result),
        Mode::Hist => crate::output::timerlat::hist(&result, &opts.hist),
    };
    crate::export::print(&(text + &crate::output::timerlat::stop(&result, opts.aa)));
    // The result is written first: an action may read it.
    if let Some(path) = &opts.json {
        let bytes = Json.serialize(&result).map_err(Error::Runtime)?;
        write_output(path, &bytes)
            .map_err(|e| Error::Runtime(format!("cannot write --json {}: {e}", path.display())))?;
    }
    let stopped = result.threads.iter().any(|t| t.watch.as_ref().is_some_and(|w| w.stop.is_some()));
    if stopped {
        act(&opts.on_threshold);
    }
    act(&opts.on_end);
    if let Some(f) = failure {
        return Err(Error::Runtime(f));
    }
    Ok(0)
}
