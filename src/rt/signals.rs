//! Signal masks and the POSIX interval timer used by `--method posix-timer` (cyclictest `-x`).

use super::clock::ClockId;
use std::io;

/// The signal a POSIX-timer probe waits for.
pub const TIMER_SIGNAL: i32 = libc::SIGALRM;

fn sigset(signals: &[i32]) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
    }
    set
}

/// Blocks `signals` in the calling thread, so that they go to other threads (or wait for
/// `sigwait`). Measuring threads block the control signals so Ctrl-C never lands in the
/// middle of a sample.
pub fn block_in_current_thread(signals: &[i32]) -> io::Result<()> {
    let set = sigset(signals);
    // SAFETY: `set` is an initialised sigset_t; the old mask is not needed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// Unblocks `signals` in the calling thread (a parent may have started rtlab with them
/// blocked); one that is pending is delivered at once.
pub fn unblock_in_current_thread(signals: &[i32]) -> io::Result<()> {
    let set = sigset(signals);
    // SAFETY: `set` is an initialised sigset_t; the old mask is not needed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// A periodic POSIX timer whose expiries are delivered as [`TIMER_SIGNAL`] to one thread.
#[derive(Debug)]
pub struct PosixTimer {
    id: libc::timer_t,
    wait_set: libc::sigset_t,
}

impl PosixTimer {
    /// Creates a timer on `clock` that signals the calling thread. The caller must have
    /// blocked [`TIMER_SIGNAL`] in this thread.
    pub fn for_current_thread(clock: ClockId) -> io::Result<PosixTimer> {
        // SAFETY: sigevent is plain data; the fields that matter are set below.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = TIMER_SIGNAL;
        sev.sigev_notify_thread_id = super::thread::tid();
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `sev` and `id` are valid for the call.
        if unsafe { libc::timer_create(clock.raw(), &mut sev, &mut id) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PosixTimer { id, wait_set: sigset(&[TIMER_SIGNAL]) })
    }

    /// Arms the timer: first expiry at absolute `first_ns`, then every `interval_ns`.
    pub fn arm(&self, first_ns: i64, interval_ns: i64) -> io::Result<()> {
        let ts = |ns: i64| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        };
        let spec = libc::itimerspec { it_interval: ts(interval_ns), it_value: ts(first_ns) };
        // SAFETY: `self.id` is a live timer; `spec` is valid; the old value is not needed.
        let rc = unsafe { libc::timer_settime(self.id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Waits for the next expiry (`sigwait`).
    #[inline(always)]
    pub fn wait(&self) {
        let mut sig = 0;
        // SAFETY: `wait_set` is an initialised sigset_t and `sig` is writable.
        unsafe { libc::sigwait(&self.wait_set, &mut sig) };
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: `self.id` was returned by timer_create and is deleted once.
        unsafe { libc::timer_delete(self.id) };
    }
}

// SAFETY: a timer_t is an opaque kernel handle; it may be moved between threads.
unsafe impl Send for PosixTimer {}
