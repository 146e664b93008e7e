//! Memory locking and prefaulting, so the measuring loop never takes a page fault.

use std::io;

/// Locks the process's memory into RAM: `mlockall(MCL_CURRENT | MCL_ONFAULT)`, and with
/// `future` `MCL_FUTURE` too. With `MCL_ONFAULT` every page already resident (everything
/// touched so far) is locked at once and any other page is locked when first touched, so code
/// that never runs is never loaded; what the measuring loop will touch must be resident first
/// (see [`lock_code_at`]).
pub fn lock_all(future: bool) -> io::Result<()> {
    let flags = libc::MCL_CURRENT | libc::MCL_ONFAULT | if future { libc::MCL_FUTURE } else { 0 };
    // SAFETY: mlockall takes flags only.
    let rc = unsafe { libc::mlockall(flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Loads and locks the code of the libc calls a measuring loop makes (the sleeps and
/// `sigwaitinfo`), a few KiB around each entry point.
pub fn lock_sleep_calls() -> io::Result<()> {
    for f in [
        libc::clock_nanosleep as *const () as usize,
        libc::nanosleep as *const () as usize,
        libc::sigwaitinfo as *const () as usize,
    ] {
        lock_code_at(f, 4 << 10, 12 << 10)?;
    }
    Ok(())
}

/// Loads and locks the code around `addr` (a function's address): `before` bytes below and
/// `after` bytes above, clamped to the mapping that holds `addr`.
pub fn lock_code_at(addr: usize, before: usize, after: usize) -> io::Result<()> {
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let (lo, hi) = maps
        .lines()
        .filter_map(|l| {
            let range = l.split_whitespace().next()?;
            let (a, b) = range.split_once('-')?;
            Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?))
        })
        .find(|(a, b)| (*a..*b).contains(&addr))
        .ok_or_else(|| io::Error::other(format!("no mapping holds address {addr:#x}")))?;
    const PAGE: usize = 4096;
    let start = (addr.saturating_sub(before) & !(PAGE - 1)).max(lo);
    let end = ((addr + after + PAGE - 1) & !(PAGE - 1)).min(hi);
    // SAFETY: [start, end) lies inside one existing mapping; mlock only pins its pages.
    if unsafe { libc::mlock(start as *const libc::c_void, end - start) } == 0 {
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
