//! `rtlab import` and `rtlab show`.
use crate::error::Error;
use std::path::PathBuf;

use crate::export::{json::Json, write_output, Exporter};
use crate::import::input::{self, Content};
use crate::output::table;

/// A validated `rtlab show`.
#[derive(Debug, Clone)]
pub struct ShowOptions {
    /// The result file.
    pub file: PathBuf,
    /// The display unit.
    pub unit: crate::units::Unit,
    /// The unit of a text input.
    pub file_unit: Option<crate::import::Unit>,
    /// `--predict`: the horizon (ns) of the worst case to expect.
    pub predict: Option<i64>,
}

/// A validated `rtlab import`.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Each input and the file its RunResult goes to.
    pub files: Vec<(PathBuf, PathBuf)>,
    /// The unit of text inputs.
    pub unit: Option<crate::import::Unit>,
}

/// Imports every file; malformed input is a usage error (exit 2) naming the file and line.
pub fn import(opts: &ImportOptions) -> Result<i32, Error> {
    for (file, target) in &opts.files {
        let result = match input::load(file, opts.unit).map_err(|e| Error::Usage(e.to_string()))?.content {
            Content::Run(r) => r,
            Content::Sweep(..) => {
                return Err(Error::Usage(format!(
                    "{}: a sweep is already RunResults, one per point in its points/ directory; import a single run",
                    file.display()
                )))
            }
        };
        let bytes = Json.serialize(&result).map_err(Error::Runtime)?;
        write_output(target, &bytes).map_err(|e| Error::Runtime(format!("cannot write {}: {e}", target.display())))?;
        if target.as_os_str() != "-" {
            eprintln!(
                "{} → {} ({}, {})",
                file.display(),
                target.display(),
                crate::units::count(result.threads.len() as u64, "thread"),
                crate::units::count(result.all.stats.cycles, "sample")
            );
        }
    }
    Ok(0)
}

/// Prints the summary table of a result file.
pub fn show(opts: &ShowOptions) -> Result<i32, Error> {
    match input::load(&opts.file, opts.file_unit).map_err(|e| Error::Usage(e.to_string()))?.content {
        Content::Run(mut result) => {
            if let Some(horizon) = opts.predict {
                crate::result::predict::attach(&mut result, horizon);
            }
            // The saved explanations too: why it was late is part of what was measured.
            let explained = if result.kind == crate::result::Kind::Noise {
                String::new()
            } else {
                crate::output::explain::blocks(&result)
            };
            let cost = result.cost.map(|c| format!("cost to rtlab: {}\n", c.describe())).unwrap_or_default();
            crate::export::print(&(table::summary(&result, opts.unit) + &cost + &explained));
            crate::output::warnings::WarningPrinter::default().rest(&result);
        }
        Content::Sweep(sweep, points) => crate::export::print(&table::sweep(&sweep, &points, opts.unit)),
    }
    Ok(0)
}
