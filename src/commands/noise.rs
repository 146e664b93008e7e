//! `rtlab noise`: busy threads through the one pipeline, then `--json` and the osnoise-like
//! table (or oslat's layout).

use crate::error::Error;
use crate::export::{json::Json, write_output, Exporter};
use crate::output::warnings::WarningPrinter;
use crate::session::{self, Fanout, Provenance, Signals};
use crate::sysinfo::Environment;
use crate::units::Unit;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// The output layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// rtla osnoise's columns, per CPU
    Table,
    /// oslat's text (and its JSON with --json)
    Oslat,
}

/// A validated `rtlab noise`.
#[derive(Debug, Clone)]
pub struct NoiseOptions {
    /// What to measure (the noise probe, length, loads, `--samples`, attribution).
    pub plan: session::Plan,
    /// `--json` target.
    pub json: Option<PathBuf>,
    /// Output layout.
    pub format: Format,
    /// oslat's bucket count.
    pub oslat_buckets: u32,
    /// oslat's `-z` (its rows of zeros left out).
    pub oslat_omit_zeros: bool,
    /// Display unit.
    pub unit: Unit,
    /// `-q`.
    pub quiet: bool,
}

/// Measures and writes every output; exit 0, 3 when a single noise exceeded `--max-noise`, 1
/// when an output or a load failed, 2 when the threshold is below what the loop can see.
pub fn execute(opts: &NoiseOptions, command_line: Vec<String>) -> Result<i32, Error> {
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let to_stdout = opts.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    if !opts.quiet {
        let cpus = opts.plan.probe.slots().iter().filter_map(|s| s.cpu).map(|c| c.to_string()).collect::<Vec<_>>();
        eprintln!(
            "rtlab noise: pre-heating CPU {} for {}, then measuring{}…",
            cpus.join(","),
            opts.plan.noise_config().map_or_else(String::new, |c| crate::units::duration(c.warmup_ns)),
            opts.plan.duration.map_or_else(|| " until Ctrl-C".to_string(), |d| format!(" for {:?}", d))
        );
    }
    let mut warnings = WarningPrinter::default();
    let provenance = Provenance { command_line, environment: Environment::capture() };
    // On a terminal a line a second says how it goes.
    let in_place = !opts.quiet && !to_stdout && std::io::stdout().is_terminal();
    let mut line = crate::output::live::Heartbeat::new("rtlab noise", "noise", in_place, Duration::from_secs(1));
    line.total = opts.plan.duration;
    let mut observers: Vec<&mut dyn session::Observer> = vec![&mut warnings];
    if in_place {
        observers.push(&mut line);
    }
    let (result, failure) = session::measure(&opts.plan, provenance, None, &mut Fanout(observers), &signals)?;
    warnings.rest(&result);
    let bytes = match (&opts.json, opts.format) {
        (None, _) => None,
        (Some(_), Format::Table) => Some(Json.serialize(&result)),
        (Some(_), Format::Oslat) => Some(crate::export::oslat::json(&result, opts.oslat_buckets as usize)),
    };
    let written = match (&opts.json, bytes) {
        (Some(path), Some(b)) => {
            b.and_then(|bytes| write_output(path, &bytes).map_err(|e| e.to_string())).map_err(|e| {
                Error::Runtime(format!("cannot write --json {}: {e}; the summary is all that is left", path.display()))
            })
        }
        _ => Ok(()),
    };
    let text = match opts.format {
        Format::Table => crate::output::noise::summary(&result, opts.unit),
        Format::Oslat => {
            let layout = crate::export::oslat::TextLayout {
                buckets: opts.oslat_buckets as usize,
                omit_zeros: opts.oslat_omit_zeros,
                main_cpu: opts.plan.noise_main_affinity().map_or_else(|| "0".into(), |c| c.to_string()),
            };
            crate::export::oslat::text(&result, &layout).unwrap_or_else(|e| e + "\n")
        }
    };
    let text = text + &crate::output::table::loads_if_any(&result.loads);
    if to_stdout {
        eprint!("{text}");
    } else {
        crate::export::print(&text);
    }
    warnings.recap(&result);
    written?;
    if let Some(f) = failure {
        return Err(Error::Runtime(f));
    }
    Ok(result.exit_code())
}
