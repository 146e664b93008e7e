//! Files on disk: what kind of filesystem a path lives on (the kernel's pseudo-filesystems hold
//! files that look regular but block on read or never end: `trace_pipe`, `/proc/kmsg`), and
//! writing a file atomically beside its target.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The kernel pseudo-filesystem `path` lives on (`proc`, `sysfs`, `tracefs`, …), or `None` for
/// an ordinary one (or when it cannot be told).
pub fn pseudo_filesystem(path: &Path) -> Option<&'static str> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs is plain data, filled by the call.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a writable struct.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // The magic numbers of linux/magic.h.
    match st.f_type as u64 {
        0x9fa0 => Some("proc"),
        0x6265_6572 => Some("sysfs"),
        0x7472_6163 => Some("tracefs"),
        0x6462_6720 => Some("debugfs"),
        0x7363_6673 => Some("securityfs"),
        0x6367_7270 => Some("cgroup2"),
        0x0027_e0eb => Some("cgroup"),
        0xcafe_4a11 => Some("bpf"),
        0x6e73_6673 => Some("nsfs"),
        _ => None,
    }
}

/// The directory `path` is in (`.` for a bare file name).
pub fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A new temporary file in the directory of `path`, named `.NAME.XXXXXXXXXXXX.tmp` with random
/// characters and created with `O_CREAT|O_EXCL` (so never through a planted symlink or into a
/// file that exists), mode 0644 before the umask. It is removed when dropped unless persisted.
pub fn temp_beside(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let name = path.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    remove_stale_temps(parent_of(path), &name);
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .rand_bytes(12)
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(parent_of(path))
}

/// How old a temporary file beside an output must be to be a dead rtlab's: a live one keeps
/// such a file for the moment of a write and a rename.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes what a dead rtlab left beside an output named `name` in `dir`: regular files of this
/// user named as [`temp_beside`] names them (`.NAME.` + 12 characters + `.tmp`), unchanged for
/// a minute.
fn remove_stale_temps(dir: &Path, name: &str) {
    let prefix = format!(".{name}.");
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(f) = file.to_str() else { continue };
        let Some(middle) = f.strip_prefix(&prefix).and_then(|r| r.strip_suffix(".tmp")) else { continue };
        let old =
            |m: &std::fs::Metadata| m.modified().ok().and_then(|t| t.elapsed().ok()).is_some_and(|a| a > STALE_AFTER);
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if middle.len() == 12
            && std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.file_type().is_file() && m.uid() == me && old(&m))
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Removes the private directories of dead rtlab processes in the temporary directory
/// (`rtlab-KIND-PID-XXXXXX`, this user's, their PID gone: a runtime probe's sources and build
/// after a SIGKILL); the names removed.
pub fn remove_stale_private_dirs() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return removed };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(f) = file.to_str() else { continue };
        let mut parts = f.splitn(4, '-');
        let (Some("rtlab"), Some(_), Some(pid), Some(_)) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        let dead = !Path::new(&format!("/proc/{pid}")).exists();
        let ours = std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if dead && ours && std::fs::remove_dir_all(e.path()).is_ok() {
            removed.push(e.path().display().to_string());
        }
    }
    removed
}

/// Writes what `produce` writes to a [`temp_beside`] file (buffered), syncs it and renames it
/// over `path`: a reader sees the old file or the whole new one, and if `produce` fails nothing
/// replaces `path`.
pub fn write_atomically(
    path: &Path,
    produce: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, temp_beside(path)?);
    produce(&mut out)?;
    let tmp = out.into_inner().map_err(|e| e.into_error())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Where rt-app's `iorun` may write (its `io_device`): a sink device, or a file that does not
/// exist yet and that rtlab creates itself (and removes at the end). Nothing that exists is
/// ever written: not a regular file, not a file behind a symlink, not `/proc` or `/sys`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoTarget {
    /// `/dev/null` or `/dev/zero` (character devices 1:3 and 1:5): writes go nowhere.
    Sink,
    /// A new file in an ordinary directory reached without a symlink.
    NewFile,
}

/// What `path` is as an `io_device`, or what it is that rtlab refuses to write to ("a FIFO",
/// "behind the symlink /x"), for the caller's sentence.
pub fn io_target(path: &Path) -> Result<IoTarget, String> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) => {
            let t = m.file_type();
            if t.is_char_device() && sink_device(m.rdev()) {
                return Ok(IoTarget::Sink);
            }
            Err(if t.is_symlink() {
                "a symlink"
            } else if t.is_dir() {
                "a directory"
            } else if t.is_fifo() {
                "a FIFO"
            } else if t.is_socket() {
                "a socket"
            } else if t.is_char_device() || t.is_block_device() {
                "a device other than /dev/null and /dev/zero"
            } else {
                "a file that exists"
            }
            .to_string())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => new_file_target(path),
        Err(e) => Err(format!("unreadable ({e})")),
    }
}

use std::os::unix::fs::MetadataExt;

/// `/dev/null` (1:3) or `/dev/zero` (1:5).
fn sink_device(rdev: u64) -> bool {
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    major == 1 && (minor == 3 || minor == 5)
}

/// A path that does not exist: its directory must exist, be reached through no symlink and
/// not be on a kernel pseudo-filesystem.
fn new_file_target(path: &Path) -> Result<IoTarget, String> {
    let absolute = std::path::absolute(path).map_err(|e| format!("not a usable path ({e})"))?;
    let dir = parent_of(&absolute);
    for a in dir.ancestors() {
        match std::fs::symlink_metadata(a) {
            Ok(m) if m.file_type().is_symlink() => return Err(format!("behind the symlink {}", a.display())),
            Ok(m) if a == dir && !m.is_dir() => return Err("in something that is not a directory".into()),
            Ok(_) => {}
            Err(_) if a == dir => return Err("in a directory that does not exist".into()),
            Err(e) => return Err(format!("behind {} ({e})", a.display())),
        }
    }
    match pseudo_filesystem(dir) {
        Some(fs) => Err(format!("in the kernel's {fs} filesystem")),
        None => Ok(IoTarget::NewFile),
    }
}

/// Opens an `io_device` that [`io_target`] allowed: a sink device as it is, a new file created
/// here (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600: never a file that appeared since the check,
/// never through a symlink).
pub fn open_io_target(path: &Path, target: IoTarget) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if target == IoTarget::NewFile {
        o.create_new(true).mode(0o600);
    }
    let f = o.open(path)?;
    let m = f.metadata()?;
    use std::os::unix::fs::FileTypeExt;
    let ok = match target {
        IoTarget::Sink => m.file_type().is_char_device() && sink_device(m.rdev()),
        IoTarget::NewFile => m.is_file(),
    };
    if !ok {
        return Err(std::io::Error::other("it changed since it was checked"));
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_and_sys_are_pseudo_filesystems_and_a_temporary_directory_is_not() {
        assert_eq!(pseudo_filesystem(Path::new("/proc/self/status")), Some("proc"));
        assert_eq!(pseudo_filesystem(Path::new("/sys/kernel")), Some("sysfs"));
        assert_eq!(pseudo_filesystem(&std::env::temp_dir()), None);
    }
}
