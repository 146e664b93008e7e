//! `rtlab import` and `rtlab show`.
use crate::error::Error;
use std::path::PathBuf;

use crate::export::{json::Json, write_output, Exporter};
use crate::import::import_file;
use crate::output::table;
use std::io::Write;

/// A validated `rtlab show`.
#[derive(Debug, Clone)]
pub struct ShowOptions {
    /// The result file.
    pub file: PathBuf,
    /// The display unit.
    pub unit: crate::units::Unit,
    /// The unit of a text input.
    pub file_unit: Option<crate::import::Unit>,
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
        let result = import_file(file, opts.unit).map_err(|e| Error::Usage(e.to_string()))?;
        let bytes = Json.serialize(&result).map_err(Error::Runtime)?;
        write_output(target, &bytes).map_err(|e| Error::Runtime(format!("cannot write {}: {e}", target.display())))?;
        if target.as_os_str() != "-" {
            eprintln!(
                "{} → {} ({} threads, {} samples)",
                file.display(),
                target.display(),
                result.threads.len(),
                result.all.stats.cycles
            );
        }
    }
    Ok(0)
}

/// Prints the summary table of a result file.
pub fn show(opts: &ShowOptions) -> Result<i32, Error> {
    let result = import_file(&opts.file, opts.file_unit).map_err(|e| Error::Usage(e.to_string()))?;
    let _ = std::io::stdout().write_all(table::summary(&result, opts.unit).as_bytes());
    Ok(0)
}
