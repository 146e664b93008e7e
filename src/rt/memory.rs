//! Memory locking and prefaulting, so the measuring loop never takes a page fault.

use std::io;

/// Locks all current pages of the process into RAM (`mlockall(MCL_CURRENT)`), and with
/// `future` every page mapped later too (`MCL_FUTURE`).
pub fn lock_all(future: bool) -> io::Result<()> {
    let flags = libc::MCL_CURRENT | if future { libc::MCL_FUTURE } else { 0 };
    // SAFETY: mlockall takes flags only.
    let rc = unsafe { libc::mlockall(flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Touches `bytes` of the calling thread's stack so that its pages are mapped (and, after
/// `mlockall`, locked) before the first sample.
#[inline(never)]
pub fn prefault_stack(bytes: usize) {
    const CHUNK: usize = 4096;
    fn touch(remaining: usize) {
        let mut page = [0u8; CHUNK];
        std::hint::black_box(&mut page);
        if remaining > CHUNK {
            touch(remaining - CHUNK);
        }
        std::hint::black_box(&page);
    }
    touch(bytes);
}

/// The process's resident set high-water mark in KiB (`VmHWM` in `/proc/self/status`).
pub fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
