//! `rtlab import` and `rtlab show`.
use crate::error::Error;

use crate::cli::import::{ImportArgs, ShowArgs};
use crate::cli::UsageError;
use crate::export::{json::Json, write_output, Exporter};
use crate::import::import_file;
use crate::output::table;
use crate::units::Unit;
use std::io::Write;

/// Imports every file; malformed input is a usage error (exit 2) naming the file and line.
pub fn import(args: ImportArgs) -> Result<i32, Error> {
    let unit = args.unit.map(|u| u.to_unit());
    let to_dir = args.output.is_dir();
    if args.files.len() > 1 && !to_dir {
        return Err(Error::Usage(
            UsageError(format!(
                "-o {}: with {} input files, -o must be an existing directory (one NAME.json per input)",
                args.output.display(),
                args.files.len()
            ))
            .0,
        ));
    }
    let target_of = |file: &std::path::Path| {
        if to_dir {
            let stem = file.file_stem().map_or_else(|| "import".into(), |s| s.to_string_lossy().into_owned());
            args.output.join(format!("{stem}.json"))
        } else {
            args.output.clone()
        }
    };
    let targets: Vec<std::path::PathBuf> = args.files.iter().map(|f| target_of(f)).collect();
    let outputs: Vec<(String, &std::path::Path)> =
        targets.iter().zip(&args.files).map(|(t, f)| (format!("-o (for {})", f.display()), t.as_path())).collect();
    let inputs: Vec<&std::path::Path> = args.files.iter().map(std::path::PathBuf::as_path).collect();
    crate::export::check_outputs(&outputs, &inputs).map_err(Error::Usage)?;
    for file in &args.files {
        let result = import_file(file, unit).map_err(|e| Error::Usage(e.to_string()))?;
        let bytes = Json.serialize(&result).map_err(Error::Runtime)?;
        let target = target_of(file);
        write_output(&target, &bytes).map_err(|e| Error::Runtime(format!("cannot write {}: {e}", target.display())))?;
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
pub fn show(args: ShowArgs) -> Result<i32, Error> {
    let result = import_file(&args.file, args.unit.map(|u| u.to_unit())).map_err(|e| Error::Usage(e.to_string()))?;
    let unit = if args.nsecs { Unit::Nanos } else { Unit::Micros };
    let _ = std::io::stdout().write_all(table::summary(&result, unit).as_bytes());
    Ok(0)
}
