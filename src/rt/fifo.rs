//! Named pipes (cyclictest `-F`).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Opens the named pipe at `path` for writing without waiting for a reader (`O_NONBLOCK`:
/// fails at once when nobody reads).
pub fn open_writer(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(path)
}

/// Creates a named pipe at `path` (mode 0666), replacing an existing file.
pub fn make(path: &Path) -> io::Result<()> {
    let _ = std::fs::remove_file(path);
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::other("path contains a NUL byte"))?;
    // SAFETY: `c` is a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o666) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
