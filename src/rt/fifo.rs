//! Named pipes (cyclictest `-F`).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

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
