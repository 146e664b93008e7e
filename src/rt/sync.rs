//! POSIX mutexes as rt-app uses them: a mutex that may lend its waiters' priority to its holder
//! (`PTHREAD_PRIO_INHERIT`, rt-app's `pi_enabled`). Rust's own `Mutex` cannot inherit priority,
//! and the priority inversion rt-app files model needs it.

use std::cell::UnsafeCell;
use std::io;

/// The error of a pthread call that returns its error number.
fn check(rc: libc::c_int) -> io::Result<()> {
    match rc {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// A pthread mutex, error-checking (an unlock by a thread that does not hold it is refused,
/// never undefined), optionally priority-inheriting; a wait for it ends when the run stops.
pub struct PMutex {
    // Boxed: a pthread mutex must not move once initialised.
    m: Box<UnsafeCell<libc::pthread_mutex_t>>,
    /// The holder's tid (0: free). Ownership is checked here rather than by glibc: a
    /// priority-inheriting mutex must be of the normal kind, since glibc asserts (aborts) when
    /// the kernel reports a lock-order deadlock on an error-checking PI mutex.
    owner: std::sync::atomic::AtomicI32,
}

/// How often a wait for a mutex looks at the run's stop.
const LOCK_POLL_NS: i64 = 50_000_000;

/// Why a mutex was not taken.
#[derive(Debug)]
pub enum LockError {
    /// The run stopped first.
    Stopped,
    /// The pthread call failed.
    Failed(io::Error),
}

// SAFETY: a pthread mutex is made to be shared between threads; every access goes through
// the pthread calls, which synchronise.
unsafe impl Send for PMutex {}
// SAFETY: as above.
unsafe impl Sync for PMutex {}

impl PMutex {
    /// A new unlocked mutex; `pi`: it lends its waiters' priority to its holder.
    pub fn new(pi: bool) -> io::Result<PMutex> {
        let m = Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
        // SAFETY: `attr` is initialised before use and destroyed after; `m` points to a mutex
        // that lives in its box for as long as the PMutex.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            check(libc::pthread_mutexattr_init(&mut attr))?;
            let kind = if pi { libc::PTHREAD_MUTEX_NORMAL } else { libc::PTHREAD_MUTEX_ERRORCHECK };
            let mut rc = libc::pthread_mutexattr_settype(&mut attr, kind);
            if rc == 0 && pi {
                rc = libc::pthread_mutexattr_setprotocol(&mut attr, libc::PTHREAD_PRIO_INHERIT);
            }
            if rc == 0 {
                rc = libc::pthread_mutex_init(m.get(), &attr);
            }
            libc::pthread_mutexattr_destroy(&mut attr);
            check(rc)?;
        }
        let m = PMutex { m, owner: std::sync::atomic::AtomicI32::new(0) };
        // A priority-inheriting mutex needs the kernel's PI futex operations (an emulator may
        // lack them), used only when contended: found out now, not at the first contention.
        if pi && !pi_futexes() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel (or emulator) has no priority-inheriting futexes (FUTEX_UNLOCK_PI)",
            ));
        }
        Ok(m)
    }

    /// Locks it: waits until it is free, or until `stop` is set (looked at every 50 ms, so a
    /// lock-order deadlock ends with the run). A deadlock the kernel finds between PI mutexes
    /// is waited out the same way.
    pub fn lock_until(&self, stop: &std::sync::atomic::AtomicBool) -> Result<(), LockError> {
        use std::sync::atomic::Ordering::Relaxed;
        let me = crate::rt::thread::tid();
        if self.owner.load(Relaxed) == me {
            return Err(LockError::Failed(io::Error::from_raw_os_error(libc::EDEADLK)));
        }
        // Free: taken at once, without reading the clock for a deadline.
        // SAFETY: the mutex was initialised in `new` and lives as long as `self`.
        if unsafe { libc::pthread_mutex_trylock(self.m.get()) } == 0 {
            self.owner.store(me, Relaxed);
            return Ok(());
        }
        loop {
            if stop.load(Relaxed) {
                return Err(LockError::Stopped);
            }
            let deadline = crate::rt::clock::now(crate::rt::clock::ClockId::REALTIME).saturating_add(LOCK_POLL_NS);
            let ts = libc::timespec {
                tv_sec: (deadline / 1_000_000_000) as libc::time_t,
                tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
            };
            // SAFETY: the mutex was initialised in `new` and lives as long as `self`; `ts` is
            // a valid timespec for the call.
            match unsafe { libc::pthread_mutex_timedlock(self.m.get(), &ts) } {
                // Taken as the run stopped (a stopping holder let it go): given back, so that
                // the wait is reported as the stop found it.
                0 if stop.load(Relaxed) => {
                    // SAFETY: as above; this thread has just taken it.
                    unsafe { libc::pthread_mutex_unlock(self.m.get()) };
                    return Err(LockError::Stopped);
                }
                0 => {
                    self.owner.store(me, Relaxed);
                    return Ok(());
                }
                libc::ETIMEDOUT | libc::EINTR => {}
                e => return Err(LockError::Failed(io::Error::from_raw_os_error(e))),
            }
        }
    }

    /// Unlocks it; refused (EPERM) when the calling thread does not hold it.
    pub fn unlock(&self) -> io::Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        let me = crate::rt::thread::tid();
        if self.owner.compare_exchange(me, 0, Relaxed, Relaxed).is_err() {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        // SAFETY: as in `lock_until`; this thread holds the mutex.
        check(unsafe { libc::pthread_mutex_unlock(self.m.get()) })
    }
}

impl Drop for PMutex {
    fn drop(&mut self) {
        // SAFETY: nothing can hold a reference to the mutex once it is dropped.
        unsafe { libc::pthread_mutex_destroy(self.m.get()) };
    }
}

/// True when the kernel serves the PI futex operations: `FUTEX_UNLOCK_PI` on a word this
/// thread owns succeeds (it is ENOSYS where they are missing).
fn pi_futexes() -> bool {
    let tid = crate::rt::thread::tid() as u32;
    let mut word = std::sync::atomic::AtomicU32::new(tid);
    // SAFETY: `word` is a valid, aligned u32 that lives across the call; FUTEX_UNLOCK_PI of a
    // word holding the caller's tid with no waiters only clears it.
    let rc = unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_UNLOCK_PI | libc::FUTEX_PRIVATE_FLAG, 0, 0, 0, 0)
    };
    let _ = word.get_mut();
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS)
}

/// Gives up the CPU (`sched_yield`, rt-app's `yield`).
pub fn yield_now() {
    // SAFETY: sched_yield has no preconditions.
    unsafe { libc::sched_yield() };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_order_inversion_ends_when_the_run_stops_with_or_without_priority_inheritance() {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        for pi in [false, true] {
            let (a, b) = (PMutex::new(pi).unwrap(), PMutex::new(pi).unwrap());
            let (stop, both) = (AtomicBool::new(false), std::sync::Barrier::new(3));
            std::thread::scope(|s| {
                let take = |first: &'static str| {
                    let (x, y) = if first == "a" { (&a, &b) } else { (&b, &a) };
                    let (stop, both) = (&stop, &both);
                    move || {
                        x.lock_until(stop).unwrap();
                        both.wait();
                        let second = y.lock_until(stop);
                        x.unlock().unwrap();
                        second
                    }
                };
                let (t1, t2) = (s.spawn(take("a")), s.spawn(take("b")));
                both.wait();
                std::thread::sleep(std::time::Duration::from_millis(200));
                assert!(!t1.is_finished() && !t2.is_finished(), "pi {pi}: each waits for the other");
                stop.store(true, Relaxed);
                assert!(matches!(t1.join().unwrap(), Err(LockError::Stopped)), "pi {pi}");
                assert!(matches!(t2.join().unwrap(), Err(LockError::Stopped)), "pi {pi}");
            });
        }
    }

    #[test]
    fn a_mutex_refuses_an_unlock_by_a_thread_that_does_not_hold_it() {
        for pi in [false, true] {
            let m = PMutex::new(pi).unwrap();
            let go = std::sync::atomic::AtomicBool::new(false);
            assert!(m.unlock().is_err());
            m.lock_until(&go).unwrap();
            m.unlock().unwrap();
        }
    }
}
