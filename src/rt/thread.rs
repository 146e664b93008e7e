//! Per-thread knobs: timer slack and the kernel thread id.

use std::io;

/// Sets the calling thread's timer slack (`PR_SET_TIMERSLACK`) in nanoseconds.
pub fn set_timer_slack(ns: u64) -> io::Result<()> {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer argument only.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The calling thread's current timer slack in nanoseconds.
pub fn timer_slack() -> Option<u64> {
    // SAFETY: prctl with PR_GET_TIMERSLACK returns the value; no pointers involved.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    u64::try_from(rc).ok()
}

/// The kernel thread id of the calling thread.
pub fn tid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}
