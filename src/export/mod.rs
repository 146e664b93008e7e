//! Exporters turn a RunResult into bytes; [`write_output`] is the one place that writes them
//! (atomically, or to stdout for `-`).

pub mod cyclictest_json;
pub mod json;
pub mod samples;

use crate::result::RunResult;
use std::io::Write;
use std::path::Path;

/// A file format for results. Exporters never do I/O.
pub trait Exporter {
    /// The bytes of `result` in this format.
    fn serialize(&self, result: &RunResult) -> Result<Vec<u8>, String>;
}

/// Writes `bytes` to `path` atomically (a temporary file in the same directory, fsync, then
/// rename), or to stdout when `path` is `-`.
pub fn write_output(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        return out.flush();
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_replace_the_file_and_leave_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        std::fs::write(&p, "old").unwrap();
        write_output(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_write_into_a_missing_directory_fails_without_debris() {
        let dir = tempfile::tempdir().unwrap();
        assert!(write_output(&dir.path().join("nope/r.json"), b"x").is_err());
    }
}
