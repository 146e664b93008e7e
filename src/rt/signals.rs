//! Signal masks and the POSIX interval timer used by `--method posix-timer` (cyclictest `-x`).

use super::clock::ClockId;
use std::io;

/// SIGINT (Ctrl-C), for code above `rt` that names signals without libc.
pub const SIGINT: i32 = libc::SIGINT;
/// SIGTERM.
pub const SIGTERM: i32 = libc::SIGTERM;
/// SIGKILL.
pub const SIGKILL: i32 = libc::SIGKILL;
/// SIGUSR1 (print the current table).
pub const SIGUSR1: i32 = libc::SIGUSR1;
/// SIGHUP.
pub const SIGHUP: i32 = libc::SIGHUP;

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

fn change_mask(how: libc::c_int, signals: &[i32]) -> io::Result<()> {
    let set = sigset(signals);
    // SAFETY: `set` is an initialised sigset_t; the old mask is not needed.
    let rc = unsafe { libc::pthread_sigmask(how, &set, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// Blocks `signals` in the calling thread, so that they go to other threads (or wait for
/// `sigwait`). Measuring threads block the control signals so Ctrl-C never lands in the
/// middle of a sample.
pub fn block_in_current_thread(signals: &[i32]) -> io::Result<()> {
    change_mask(libc::SIG_BLOCK, signals)
}

/// Unblocks `signals` in the calling thread (a parent may have started rtlab with them
/// blocked); one that is pending is delivered at once.
pub fn unblock_in_current_thread(signals: &[i32]) -> io::Result<()> {
    change_mask(libc::SIG_UNBLOCK, signals)
}

/// The signal that wakes a measuring thread out of its sleep when the run stops (installed
/// without `SA_RESTART`, so the sleep returns `EINTR`): SIGSTKFLT, which Linux never sends, so
/// that SIGUSR1/SIGUSR2 stay the users' (cyclictest's status snapshot) and no signal another
/// program sends is taken. A standard signal, not a real-time one: the kernel keeps one of it
/// pending per thread however often it is sent, where each real-time signal sent is queued and
/// counted against the user's RLIMIT_SIGPENDING. A stopping run resends every 5 ms to a thread
/// that has not left its loop; with a queued signal a thread that could not take it (stuck in
/// the kernel, or in an emulator's lock under qemu-user) made every process of the user (root)
/// unable to queue a signal or create a POSIX timer within minutes.
pub fn wake_signal() -> i32 {
    libc::SIGSTKFLT
}

thread_local! {
    /// The stop flag of the run this thread measures for: an interrupted sleep ends early only
    /// when it is set (any other signal resumes the sleep).
    static STOP_FLAG: std::cell::Cell<*const std::sync::atomic::AtomicBool> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Makes the calling thread's sleeps end early when `flag` is set and [`wake_signal`] arrives.
/// The flag must outlive the thread's sleeps (the engine's shared state does); `None` undoes it.
pub fn interrupt_sleeps_on(flag: Option<&std::sync::atomic::AtomicBool>) {
    STOP_FLAG.with(|f| f.set(flag.map_or(std::ptr::null(), |r| r as *const _)));
}

/// True when the calling thread's run has been told to stop (see [`interrupt_sleeps_on`]).
#[cold]
pub fn stop_requested() -> bool {
    STOP_FLAG.with(|f| {
        let p = f.get();
        // SAFETY: set by `interrupt_sleeps_on` from a flag that outlives the thread's sleeps.
        !p.is_null() && unsafe { (*p).load(std::sync::atomic::Ordering::Relaxed) }
    })
}

extern "C" fn on_wake(_: libc::c_int) {}

/// Installs the no-op handler for [`wake_signal`] without `SA_RESTART` (once per process).
pub fn install_wake_handler() -> io::Result<()> {
    static ONCE: std::sync::Once = std::sync::Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        // SAFETY: sigaction is plain data; the handler only returns.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_wake as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = 0;
        // SAFETY: `sa` is initialised; the old action is not needed.
        if unsafe { libc::sigaction(wake_signal(), &sa, std::ptr::null_mut()) } != 0 {
            result = Err(io::Error::last_os_error());
        }
    });
    result
}

/// Sends [`wake_signal`] to thread `tid` of this process.
pub fn wake_thread(tid: i32) -> io::Result<()> {
    // SAFETY: tgkill takes plain integers; it only reaches a thread of this process.
    if unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, wake_signal()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
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

    /// Waits for the next expiry (`sigwaitinfo`) and returns the kernel's overrun count: the
    /// expiries that passed while the signal was pending, which the kernel folded into this
    /// one (it forwards the timer past the moment it hands the signal over). `None` when the
    /// wait was interrupted by the run's stop.
    #[inline(always)]
    pub fn wait(&self) -> Option<u64> {
        // SAFETY: siginfo_t is plain data; `wait_set` is an initialised sigset_t.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: both pointers are valid for the call.
            if unsafe { libc::sigwaitinfo(&self.wait_set, &mut info) } >= 0 {
                break;
            }
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) && stop_requested() {
                return None;
            }
        }
        // For SI_TIMER the kernel fills `si_tid` then `si_overrun` at the start of siginfo's
        // union, which begins at byte 16 on 64-bit Linux (<asm-generic/siginfo.h>).
        // SAFETY: siginfo_t is 128 bytes; bytes 20..24 lie within it.
        let overrun =
            unsafe { std::ptr::read_unaligned((&info as *const libc::siginfo_t as *const u8).add(20) as *const i32) };
        Some(overrun.max(0) as u64)
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

/// True when SIGINT, SIGTERM or SIGHUP is pending for this process while the calling thread
/// blocks them: a busy thread that starves the thread that would handle it can see a Ctrl-C
/// this way (one system call; the signal stays pending for its handler).
pub fn stop_signal_pending() -> bool {
    // SAFETY: sigset_t is plain data, initialised by sigpending.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is writable.
    if unsafe { libc::sigpending(&mut set) } != 0 {
        return false;
    }
    // SAFETY: `set` was initialised by sigpending.
    unsafe {
        libc::sigismember(&set, libc::SIGINT) == 1
            || libc::sigismember(&set, libc::SIGTERM) == 1
            || libc::sigismember(&set, libc::SIGHUP) == 1
    }
}

/// Makes `signal` end the run: the first one sets `stop`; one that comes while `stop` is set
/// already exits at once with 130 — after giving back the idle states only it disabled, and
/// switching off and removing rtlab's tracefs instance
/// (only async-signal-safe calls: close, open, write, rmdir, `_exit`), so that an emergency exit
/// never leaves the kernel recording. Returns the handler's id (to remove it again).
pub fn on_stop_signal(
    signal: i32,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> io::Result<signal_hook::SigId> {
    let action = move || {
        if stop.swap(true, std::sync::atomic::Ordering::SeqCst) {
            super::cpuidle::emergency_restore();
            super::tracefs::emergency_teardown();
            // SAFETY: _exit is async-signal-safe and ends the process at once.
            unsafe { libc::_exit(130) };
        }
    };
    // SAFETY: the action only uses atomics and async-signal-safe system calls.
    unsafe { signal_hook::low_level::register(signal, action) }
}

/// Removes a handler installed by [`on_stop_signal`].
pub fn remove_handler(id: signal_hook::SigId) {
    signal_hook::low_level::unregister(id);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes every instance of `signal` pending for the calling thread (which blocks it) and
    /// counts them, without waiting.
    fn drain(signal: i32) -> usize {
        let set = sigset(&[signal]);
        let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        let mut n = 0;
        // SAFETY: `set` is initialised; no siginfo is asked for; `zero` is valid for the call.
        while unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &zero) } == signal {
            n += 1;
        }
        n
    }

    #[test]
    fn wakes_sent_to_a_thread_that_cannot_take_them_yet_are_pending_once_not_once_each() {
        install_wake_handler().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            block_in_current_thread(&[wake_signal()]).unwrap();
            tx.send(super::super::thread::tid()).unwrap();
            wait.recv().unwrap();
            drain(wake_signal())
        });
        let tid = rx.recv().unwrap();
        // A stopping run resends every 5 ms to a thread stuck where it cannot take the signal:
        // a queued (real-time) signal would pile up in the user's RLIMIT_SIGPENDING until no
        // process of that user could queue a signal or create a POSIX timer.
        for _ in 0..200 {
            wake_thread(tid).unwrap();
        }
        go.send(()).unwrap();
        assert_eq!(thread.join().unwrap(), 1);
    }
}
