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
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .rand_bytes(12)
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(parent_of(path))
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

/// Opens an existing file or device for writing, never through a symlink and never creating
/// or truncating anything (rt-app's `io_device`, where `iorun` writes).
pub fn open_for_writing(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path)
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
