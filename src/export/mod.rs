//! Exporters turn a RunResult into bytes; [`write_output`] is the one place that writes them
//! (atomically, or to stdout for `-`), [`check_output`] checks a target before anything is
//! measured, and [`check_distinct`] keeps an output from destroying an input or another output.

pub mod cyclictest_json;
pub mod cyclictest_text;
pub mod hlog;
pub mod json;
pub mod oslat;
pub mod samples;
pub mod schema;

use crate::result::RunResult;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A file format for results. Exporters never do I/O.
pub trait Exporter {
    /// The bytes of `result` in this format.
    fn serialize(&self, result: &RunResult) -> Result<Vec<u8>, String>;
}

use crate::rt::fs::parent_of;
pub use crate::rt::fs::temp_beside;

/// Writes `bytes` to `path` atomically (an unpredictable temporary file beside it, fsync, then
/// rename over `path`, which replaces a symlink there instead of writing through it), or to
/// stdout when `path` is `-`.
pub fn write_output(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    stream_output(path, |w| w.write_all(bytes))
}

/// Writes what `produce` writes to `path` the way [`write_output`] does (buffered, so memory does
/// not grow with the output); if `produce` fails, nothing replaces `path`.
pub fn stream_output(path: &Path, produce: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> std::io::Result<()> {
    if path.as_os_str() == "-" {
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        // A reader that closed the pipe (`| head`) wants no more: that is not a failure.
        return quiet_on_closed_pipe(produce(&mut out).and_then(|()| out.flush()));
    }
    refuse_special(path)?;
    crate::rt::fs::write_atomically(path, produce)
}

/// Shifts the generations of `path` for a rotating output: `path.{keep-1}` → `path.{keep}`, …,
/// `path` → `path.1` (renames, of regular files only: anything else planted at one of the
/// names is refused and left where it is); the oldest beyond `keep` is replaced. `path` itself is then free for [`write_output`].
pub fn rotate(path: &Path, keep: usize) -> std::io::Result<()> {
    let gen = |i: usize| -> PathBuf {
        let mut s = path.as_os_str().to_owned();
        s.push(format!(".{i}"));
        PathBuf::from(s)
    };
    // Only rtlab's own generations move: a symlink, a directory or anything but a regular file
    // planted at a generation's name is refused before anything moves, never carried along.
    for p in (1..=keep).map(gen).chain([path.to_path_buf()]) {
        if std::fs::symlink_metadata(&p).is_ok_and(|m| !m.file_type().is_file()) {
            let why = format!("{} is not a regular file: rtlab rotates only its own files", p.display());
            return Err(std::io::Error::other(why));
        }
    }
    for i in (1..keep).rev() {
        if std::fs::symlink_metadata(gen(i)).is_ok() {
            std::fs::rename(gen(i), gen(i + 1))?;
        }
    }
    if keep > 0 && std::fs::symlink_metadata(path).is_ok() {
        std::fs::rename(path, gen(1))?;
    }
    Ok(())
}

/// Writes `bytes` as the newest generation of a rotating output: first to a temporary file
/// beside `path` (synced), then — only once that succeeded, and every generation's name was
/// checked to be free or a file — shifts the generations ([`rotate`]) and renames the temporary
/// file to `path`. A full disk or a directory planted at `path.N` fails before any generation
/// moves, and the error names the path at fault.
pub fn write_rotated(path: &Path, keep: usize, bytes: &[u8]) -> Result<(), String> {
    let fail = |p: &Path, e: &dyn std::fmt::Display| format!("cannot write {}: {e}", p.display());
    refuse_special(path).map_err(|e| fail(path, &e))?;
    let mut tmp = temp_beside(path).map_err(|e| fail(path, &e))?;
    tmp.write_all(bytes).and_then(|()| tmp.as_file().sync_all()).map_err(|e| fail(path, &e))?;
    for i in 1..=keep {
        let mut s = path.as_os_str().to_owned();
        s.push(format!(".{i}"));
        let g = PathBuf::from(s);
        if let Ok(m) = std::fs::symlink_metadata(&g) {
            if !(m.is_file() || m.file_type().is_symlink()) {
                return Err(format!(
                    "cannot rotate {}: {} is a {}; remove it",
                    path.display(),
                    g.display(),
                    kind_of(&m.file_type())
                ));
            }
        }
    }
    rotate(path, keep).map_err(|e| format!("cannot rotate {}: {e}", path.display()))?;
    tmp.persist(path).map_err(|e| fail(path, &e.error))?;
    Ok(())
}

/// `Ok` when the only failure is that the reader of stdout went away (EPIPE), as ripgrep does.
pub fn quiet_on_closed_pipe(r: std::io::Result<()>) -> std::io::Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Writes `text` to stdout; a closed pipe ends nothing (see [`quiet_on_closed_pipe`]), and
/// unlike `print!` no failure to write panics.
pub fn print(text: &str) {
    // Names and messages from the inputs (a host name, a label) must not drive the terminal:
    // control characters other than line ends and tabs are replaced.
    let text = crate::units::printable_but(text, &['\n', '\t']);
    let mut out = std::io::stdout().lock();
    let _ = quiet_on_closed_pipe(out.write_all(text.as_bytes()).and_then(|()| out.flush()));
}

/// An existing target that is not a regular file (a device, a FIFO, a socket) is never
/// replaced: `--json /dev/null` as root must not rename a file over the device node.
fn refuse_special(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Err(std::io::Error::other("is a directory")),
        Ok(m) if m.file_type().is_symlink() || m.is_file() => Ok(()),
        Ok(m) => Err(std::io::Error::other(format!(
            "is a {}, not a regular file; rtlab replaces its outputs, so give a file path",
            kind_of(&m.file_type())
        ))),
        Err(_) => Ok(()),
    }
}

fn kind_of(t: &std::fs::FileType) -> &'static str {
    if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_fifo() {
        "named pipe"
    } else if t.is_socket() {
        "socket"
    } else if t.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

/// Checks, before anything is measured or read, that `path` can be written: `-` (stdout), or a
/// path whose directory exists and takes a new file (a probe temporary file is created and
/// removed) and that is not a directory or a special file. The error says what is wrong and
/// the fix, without the option's name.
pub fn check_output(path: &Path) -> Result<(), String> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    let dir = parent_of(path);
    // `-o results/` names a directory: it must exist (a file cannot be written under that name).
    if path.as_os_str().as_encoded_bytes().ends_with(b"/") && !path.is_dir() {
        return Err(format!(
            "{}: directory does not exist; create it first, or name a file such as {}",
            path.display(),
            path.join("result.json").display()
        ));
    }
    if !dir.is_dir() {
        return Err(format!(
            "{}: directory '{}' does not exist; create it first or choose another path",
            path.display(),
            dir.display()
        ));
    }
    if path.is_dir() {
        return Err(format!(
            "{}: is a directory; give a file name such as {}",
            path.display(),
            path.join("result.json").display()
        ));
    }
    refuse_special(path).map_err(|e| format!("{}: {e}", path.display()))?;
    temp_beside(path).map(drop).map_err(|e| {
        // tempfile's message names its random file; the reason alone is what the user needs.
        let why =
            e.raw_os_error().map_or_else(|| e.kind().to_string(), |c| std::io::Error::from_raw_os_error(c).to_string());
        format!("{}: cannot create a file in '{}' ({why}); choose a writable directory", path.display(), dir.display())
    })
}

/// Checks every output of a command before it reads or measures anything: each one with
/// [`check_output`], then [`check_distinct`] against each other and the inputs. Outputs are
/// `(option, path)`; the error starts with the option.
pub fn check_outputs(outputs: &[(String, &Path)], inputs: &[&Path]) -> Result<(), String> {
    for (what, path) in outputs {
        check_output(path).map_err(|e| format!("{what} {e}"))?;
    }
    // A sweep directory is read through its sweep.json and points.
    let mut owned: Vec<PathBuf> = Vec::new();
    for p in inputs {
        if p.is_dir() {
            owned.push(p.join("sweep.json"));
            if let Ok(entries) = std::fs::read_dir(p.join("points")) {
                owned.extend(entries.flatten().map(|e| e.path()).take(100_000));
            }
        } else {
            owned.push(p.to_path_buf());
        }
    }
    let inputs: Vec<&Path> = owned.iter().map(PathBuf::as_path).collect();
    check_distinct(outputs, &inputs)
}

/// Identifies a file by its directory (resolved) and name, and by device and inode when it
/// exists, so that `a.json`, `./a.json` and a hard link to it are one file.
#[derive(Debug, PartialEq, Eq)]
struct FileId {
    place: Option<PathBuf>,
    inode: Option<(u64, u64)>,
}

impl FileId {
    fn of(path: &Path) -> FileId {
        let place = std::fs::canonicalize(parent_of(path)).ok().zip(path.file_name()).map(|(d, n)| d.join(n));
        let inode = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        FileId { place, inode }
    }

    fn same(&self, other: &FileId) -> bool {
        self.place.is_some() && self.place == other.place || self.inode.is_some() && self.inode == other.inode
    }
}

/// Refuses an output that is one of the inputs or another output (stdout `-` excepted):
/// outputs are `(option, path)`, e.g. `("--json", p)`; the error names both files.
pub fn check_distinct(outputs: &[(String, &Path)], inputs: &[&Path]) -> Result<(), String> {
    let outs: Vec<(&String, &Path, FileId)> =
        outputs.iter().filter(|(_, p)| p.as_os_str() != "-").map(|(w, p)| (w, *p, FileId::of(p))).collect();
    let ins: Vec<(&Path, FileId)> =
        inputs.iter().filter(|p| p.as_os_str() != "-").map(|p| (*p, FileId::of(p))).collect();
    for (i, (what, path, id)) in outs.iter().enumerate() {
        if let Some((ip, _)) = ins.iter().find(|(_, other)| id.same(other)) {
            return Err(format!(
                "{what} {} is the input {}: writing it would destroy that input; choose another output file",
                path.display(),
                ip.display()
            ));
        }
        if let Some((ow, op, _)) = outs[..i].iter().find(|(_, _, other)| id.same(other)) {
            return Err(format!(
                "{what} {} is also the output of {ow} ({}): one would overwrite the other; give each output its own file",
                path.display(),
                op.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_moves_only_regular_files_and_leaves_a_planted_symlink_or_directory_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("m.hlog");
        std::fs::write(&log, "current").unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("m.hlog.1")).unwrap();
        assert!(rotate(&log, 3).is_err());
        assert!(std::fs::symlink_metadata(dir.path().join("m.hlog.1")).unwrap().file_type().is_symlink());
        assert!(!dir.path().join("m.hlog.2").exists() && log.exists(), "nothing moved");
        std::fs::remove_file(dir.path().join("m.hlog.1")).unwrap();
        std::fs::create_dir(dir.path().join("m.hlog.2")).unwrap();
        std::fs::write(dir.path().join("m.hlog.1"), "older").unwrap();
        assert!(rotate(&log, 3).is_err(), "a directory at .2 is refused");
        std::fs::remove_dir(dir.path().join("m.hlog.2")).unwrap();
        rotate(&log, 3).unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("m.hlog.2")).unwrap(), "older");
        assert_eq!(std::fs::read_to_string(dir.path().join("m.hlog.1")).unwrap(), "current");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }

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

    #[test]
    fn a_planted_symlink_at_the_old_predictable_temporary_name_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        // The names an attacker could predict: the old `.NAME.PID.tmp` and a few neighbours.
        let pid = std::process::id();
        for p in pid.saturating_sub(2)..pid + 3 {
            std::os::unix::fs::symlink(&victim, dir.path().join(format!(".out.json.{p}.tmp"))).unwrap();
        }
        write_output(&dir.path().join("out.json"), b"result").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(dir.path().join("out.json")).unwrap(), "result");
    }

    #[test]
    fn a_symlink_at_the_target_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let target = dir.path().join("out.json");
        std::os::unix::fs::symlink(&victim, &target).unwrap();
        write_output(&target, b"result").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!std::fs::symlink_metadata(&target).unwrap().file_type().is_symlink());
    }

    #[test]
    fn temporary_names_are_unpredictable_and_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        let (a, b) = (temp_beside(&p).unwrap(), temp_beside(&p).unwrap());
        assert_ne!(a.path(), b.path());
        let name = a.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(".r.json.") && name.ends_with(".tmp") && !name.contains(&std::process::id().to_string())
        );
    }

    #[test]
    fn device_nodes_and_directories_are_never_replaced() {
        assert!(check_output(Path::new("/dev/null")).unwrap_err().contains("character device"));
        assert!(write_output(Path::new("/dev/null"), b"x").is_err());
        let dir = tempfile::tempdir().unwrap();
        assert!(check_output(dir.path()).unwrap_err().contains("is a directory"));
    }

    #[test]
    fn an_unwritable_directory_is_found_before_measuring() {
        let dir = tempfile::tempdir().unwrap();
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
        let writable_anyway = nix_is_root();
        let r = check_output(&ro.join("x.json"));
        if writable_anyway {
            // root ignores directory permissions; the probe file was created and removed.
            assert!(r.is_ok());
        } else {
            assert!(r.unwrap_err().contains("cannot create a file"));
        }
        assert_eq!(std::fs::read_dir(&ro).unwrap().count(), 0, "the probe file is removed");
    }

    fn nix_is_root() -> bool {
        std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
    }

    #[test]
    fn an_output_that_is_an_input_or_another_output_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        std::fs::write(&a, "{}").unwrap();
        let dotted = dir.path().join(".").join("a.json");
        let e = check_distinct(&[("-o".into(), &dotted)], &[a.as_path()]).unwrap_err();
        assert!(e.contains("would destroy that input"), "{e}");
        let link = dir.path().join("hard.json");
        std::fs::hard_link(&a, &link).unwrap();
        assert!(check_distinct(&[("-o".into(), &link)], &[a.as_path()]).is_err(), "a hard link is the same file");
        let x = dir.path().join("x");
        let e = check_distinct(&[("--json".into(), &x), ("--samples".into(), &x)], &[]).unwrap_err();
        assert!(e.contains("--samples") && e.contains("--json"), "{e}");
        let other = dir.path().join("b.json");
        assert!(check_distinct(&[("-o".into(), &other), ("--x".into(), Path::new("-"))], &[a.as_path()]).is_ok());
        let dash = Path::new("-");
        assert!(check_distinct(&[("-o".into(), dash), ("--json".into(), dash)], &[]).is_ok());
    }
}
