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
/// never undefined), optionally priority-inheriting.
pub struct PMutex {
    // Boxed: a pthread mutex must not move once initialised.
    m: Box<UnsafeCell<libc::pthread_mutex_t>>,
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
            let mut rc = libc::pthread_mutexattr_settype(&mut attr, libc::PTHREAD_MUTEX_ERRORCHECK);
            if rc == 0 && pi {
                rc = libc::pthread_mutexattr_setprotocol(&mut attr, libc::PTHREAD_PRIO_INHERIT);
            }
            if rc == 0 {
                rc = libc::pthread_mutex_init(m.get(), &attr);
            }
            libc::pthread_mutexattr_destroy(&mut attr);
            check(rc)?;
        }
        let m = PMutex { m };
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

    /// Locks it (blocks until it is free).
    pub fn lock(&self) -> io::Result<()> {
        // SAFETY: the mutex was initialised in `new` and lives as long as `self`.
        check(unsafe { libc::pthread_mutex_lock(self.m.get()) })
    }

    /// Unlocks it; refused (EPERM) when the calling thread does not hold it.
    pub fn unlock(&self) -> io::Result<()> {
        // SAFETY: as in `lock`.
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
    fn a_mutex_refuses_an_unlock_by_a_thread_that_does_not_hold_it() {
        for pi in [false, true] {
            let m = PMutex::new(pi).unwrap();
            assert!(m.unlock().is_err());
            m.lock().unwrap();
            m.unlock().unwrap();
        }
    }
}
