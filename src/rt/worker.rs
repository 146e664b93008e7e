//! Worker processes: a measuring thread forks a child that runs its loop in a process of its
//! own, named as the real tool names its workers (rtla timerlat's `timerlatu/N`), so that tools
//! which look for the workers as processes (`pgrep`, the children of the tool's process) find
//! the task that measures. The child inherits the thread's CPU, policy, priority and timer slack
//! at the fork; it talks to rtlab over two pipes in whole `i64` words. Its life is tied to
//! rtlab's by those pipes, not to the forking thread's (which ends before the tool's actions
//! run): when rtlab is gone its reads end and its writes fail, and it exits.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// A forked worker: its pid, the pipe rtlab writes to it and the pipe it writes to rtlab.
/// Dropping it kills the worker and reaps it.
#[derive(Debug)]
pub struct Worker {
    pid: libc::pid_t,
    to_child: Option<OwnedFd>,
    from_child: OwnedFd,
}

/// What a read of words from the worker gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// Every word was read.
    Full,
    /// The worker closed its end (it ended) before the words were complete.
    Ended,
    /// A signal interrupted the wait before any byte of the words arrived.
    Interrupted,
}

/// Forks a worker named `name` (at most 15 bytes are kept, as the kernel keeps) that runs
/// `body(from_rtlab, to_rtlab)` and exits. In the child: it ignores the signals a terminal or a stop sends to rtlab's group (rtlab ends it), keeps only its two
/// pipe ends and the standard descriptors, and locks its memory on fault when `mlock` is set.
/// `body` must make no allocation and take no lock another thread may hold (the child has only
/// the forking thread): what it needs is prepared before the call.
pub fn fork(name: &str, mlock: bool, body: impl FnOnce(RawFd, RawFd)) -> io::Result<Worker> {
    let (down_r, down_w) = super::container::pipe()?;
    let (up_r, up_w) = super::container::pipe()?;
    let mut comm = [0u8; 16];
    for (c, b) in comm.iter_mut().zip(name.bytes().take(15)) {
        *c = if b == 0 { b'?' } else { b };
    }
    let (rfd, wfd) = (down_r.as_raw_fd(), up_w.as_raw_fd());
    // SAFETY: the child makes system calls on values prepared before the fork, runs `body`
    // (which the caller keeps free of allocation and locks), then `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the forked child; see above.
        unsafe {
            libc::prctl(libc::PR_SET_NAME, comm.as_ptr() as libc::c_ulong, 0, 0, 0);
            for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2] {
                libc::signal(s, libc::SIG_IGN);
            }
            let (lo, hi) = (rfd.min(wfd), rfd.max(wfd));
            libc::syscall(libc::SYS_close_range, 3u32, (lo - 1) as u32, 0u32);
            libc::syscall(libc::SYS_close_range, (lo + 1) as u32, (hi - 1) as u32, 0u32);
            libc::syscall(libc::SYS_close_range, (hi + 1) as u32, u32::MAX, 0u32);
            if mlock {
                libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE | libc::MCL_ONFAULT);
            }
            body(rfd, wfd);
            libc::_exit(0);
        }
    }
    drop((down_r, up_w));
    Ok(Worker { pid, to_child: Some(down_w), from_child: up_r })
}

/// Writes every word to `fd`; false when the reader is gone (or another error).
pub fn write_words(fd: RawFd, words: &[i64]) -> bool {
    let mut bytes = [0u8; 128];
    let n = words.len() * 8;
    assert!(n <= bytes.len(), "at most 16 words at once");
    for (chunk, w) in bytes.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
    let mut off = 0;
    while off < n {
        // SAFETY: `bytes[off..n]` is readable memory of that length.
        let w = unsafe { libc::write(fd, bytes[off..n].as_ptr().cast(), n - off) };
        if w > 0 {
            off += w as usize;
        } else if w < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        } else {
            return false;
        }
    }
    true
}

/// Reads `out.len()` words from `fd`. A signal before the first byte gives `Interrupted` (the
/// caller decides whether to wait on); once a byte came, the words are read to their end.
pub fn read_words(fd: RawFd, out: &mut [i64]) -> Read {
    let mut bytes = [0u8; 128];
    let n = out.len() * 8;
    assert!(n <= bytes.len(), "at most 16 words at once");
    let mut off = 0;
    while off < n {
        // SAFETY: `bytes[off..n]` is writable memory of that length.
        let r = unsafe { libc::read(fd, bytes[off..n].as_mut_ptr().cast(), n - off) };
        if r > 0 {
            off += r as usize;
        } else if r == 0 {
            return Read::Ended;
        } else if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            if off == 0 {
                return Read::Interrupted;
            }
        } else {
            return Read::Ended;
        }
    }
    for (w, chunk) in out.iter_mut().zip(bytes.chunks_exact(8)) {
        *w = i64::from_ne_bytes(chunk.try_into().expect("8 bytes"));
    }
    Read::Full
}

impl Worker {
    /// The worker's process id (its only thread's id too).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Sends words to the worker; false when it is gone.
    pub fn send(&self, words: &[i64]) -> bool {
        self.to_child.as_ref().is_some_and(|fd| write_words(fd.as_raw_fd(), words))
    }

    /// Reads words the worker wrote.
    pub fn read(&self, out: &mut [i64]) -> Read {
        read_words(self.from_child.as_raw_fd(), out)
    }
}

/// In a worker: die when the thread that forked it ends (`on`), or no longer (a parked worker
/// outlives its thread; its pipes end it when rtlab is gone). For a worker that could otherwise
/// spin with nothing to tell it that rtlab died.
pub fn die_with_thread(on: bool) {
    let sig = if on { libc::SIGKILL } else { 0 };
    // SAFETY: prctl with PR_SET_PDEATHSIG takes an integer argument only.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) };
}

/// In a worker: waits until rtlab closes its end (or is gone).
pub fn wait_for_end(fd: RawFd) {
    let mut w = [0i64];
    while matches!(read_words(fd, &mut w), Read::Full | Read::Interrupted) {}
}

/// Flags in memory shared with forked workers (an anonymous shared mapping): what either side
/// sets, the other sees, without a system call (a busy loop looks at them every 1 024 reads).
#[derive(Debug)]
pub struct SharedFlags {
    ptr: std::ptr::NonNull<std::sync::atomic::AtomicBool>,
}

// SAFETY: the mapping holds only atomics, valid for as long as the value lives.
unsafe impl Send for SharedFlags {}
// SAFETY: as above; every access is atomic.
unsafe impl Sync for SharedFlags {}

/// How many flags a [`SharedFlags`] holds.
pub const FLAGS: usize = 2;

impl SharedFlags {
    /// A new page of [`FLAGS`] flags, all false, shared with every worker forked after it.
    pub fn new() -> io::Result<SharedFlags> {
        // SAFETY: a fresh anonymous mapping; the kernel zeroes it (false).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = std::ptr::NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap gave a null page"))?;
        Ok(SharedFlags { ptr })
    }

    /// Flag `i` (< [`FLAGS`]).
    pub fn get(&self, i: usize) -> &std::sync::atomic::AtomicBool {
        assert!(i < FLAGS, "flag {i} of {FLAGS}");
        // SAFETY: the page holds FLAGS zero-initialised atomics, alive as long as `self`.
        unsafe { &*self.ptr.as_ptr().add(i) }
    }
}

impl Drop for SharedFlags {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer borrowed.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), 4096) };
    }
}

/// Workers whose loops are over, kept until the command is done with them.
static PARKED: std::sync::Mutex<Vec<Worker>> = std::sync::Mutex::new(Vec::new());

/// Keeps `w` alive after its thread is done, until [`end_parked`]: rtla runs its threshold
/// actions while its workers still exist (the kernel's suite checks their priority then).
pub fn park(w: Worker) {
    PARKED.lock().unwrap_or_else(|e| e.into_inner()).push(w);
}

/// Ends and reaps every parked worker; how many.
pub fn end_parked() -> usize {
    let parked = std::mem::take(&mut *PARKED.lock().unwrap_or_else(|e| e.into_inner()));
    parked.len()
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.to_child = None;
        // SAFETY: kill and waitpid on our own child; no memory is involved.
        unsafe {
            libc::kill(self.pid, libc::SIGKILL);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_is_a_named_child_process_that_answers_over_its_pipes_and_is_reaped() {
        let w = fork("rtlabtest/7", false, |rx, tx| {
            let mut got = [0i64; 2];
            if read_words(rx, &mut got) == Read::Full {
                write_words(tx, &[got[0] + got[1], -1]);
            }
        })
        .unwrap();
        let pid = w.pid();
        assert_ne!(pid as u32, std::process::id());
        assert!(w.send(&[40, 2]));
        let mut out = [0i64; 2];
        assert_eq!(w.read(&mut out), Read::Full);
        assert_eq!(out, [42, -1]);
        // It has answered, so it has named itself; its body has returned but it waits to be reaped.
        assert_eq!(crate::rt::process::comm(pid).as_deref(), Some("rtlabtest/7"));
        assert_eq!(crate::rt::process::process_of(pid), Some(pid), "a process of its own, not a thread of rtlab's");
        assert_eq!(w.read(&mut out[..1]), Read::Ended, "the worker ended after its body");
        drop(w);
        assert!(!crate::rt::process::alive(pid), "reaped");
    }

    #[test]
    fn a_flag_set_on_either_side_of_the_fork_is_seen_on_the_other() {
        let flags = SharedFlags::new().unwrap();
        let w = fork("rtlabtest/10", false, |rx, tx| {
            let mut go = [0i64];
            if read_words(rx, &mut go) == Read::Full {
                let seen = flags.get(0).load(std::sync::atomic::Ordering::SeqCst);
                flags.get(1).store(true, std::sync::atomic::Ordering::SeqCst);
                write_words(tx, &[i64::from(seen)]);
            }
        })
        .unwrap();
        flags.get(0).store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(w.send(&[1]));
        let mut seen = [0i64];
        assert_eq!(w.read(&mut seen), Read::Full);
        assert_eq!(seen, [1], "the worker saw rtlab's flag");
        assert!(flags.get(1).load(std::sync::atomic::Ordering::SeqCst), "rtlab sees the worker's");
    }

    #[test]
    fn a_worker_waiting_for_rtlab_ends_when_rtlab_closes_its_pipe_and_a_parked_one_lives_until_ended() {
        let body = |rx, _| {
            let mut w = [0i64];
            while read_words(rx, &mut w) == Read::Full {}
        };
        let w = fork("rtlabtest/8", false, body).unwrap();
        let pid = w.pid();
        park(w);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(crate::rt::process::alive(pid), "parked: still there");
        assert!(end_parked() >= 1);
        assert!(!crate::rt::process::alive(pid), "ended and reaped");
        // Without the kill: closing rtlab's end is enough for a waiting worker to exit.
        let mut w = fork("rtlabtest/9", false, body).unwrap();
        w.to_child = None;
        let mut status = 0;
        // SAFETY: waiting for our own child; `status` is writable.
        assert_eq!(unsafe { libc::waitpid(w.pid, &mut status, 0) }, w.pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "it exited by itself");
    }
}
