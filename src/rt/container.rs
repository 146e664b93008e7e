//! A cgroup (v2) that holds a program rtlab started and everything that program starts, so
//! that all of it ends with rtlab however rtlab ends: at a normal end rtlab kills the group,
//! and a guardian process (forked before anything else of the run exists, waiting on a pipe
//! only rtlab writes to) kills it when rtlab dies — a SIGKILL, a crash, an emergency exit.
//! The owner holds an exclusive `flock` on the cgroup's directory; a later rtlab removes a
//! group whose lock is free ([`remove_stale`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The names of rtlab's groups start with this.
const PREFIX: &str = "rtlab-cmd-";

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on
/// a hybrid machine), if it is.
fn mount_point() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let at = left.split_whitespace().nth(4)?;
        (right.split_whitespace().next()? == "cgroup2").then(|| PathBuf::from(at))
    })
}

/// A started program's group.
#[derive(Debug)]
pub struct Container {
    dir: PathBuf,
    /// `cgroup.procs`, open for the child to write itself into before it runs its program.
    procs: std::fs::File,
    /// The directory, locked while the group is this rtlab's.
    _lock: std::fs::File,
    /// The guardian's pid and the write end of its pipe (closing it lets the guardian go).
    guardian: Option<(libc::pid_t, OwnedFd)>,
}

/// A pipe whose two ends close on exec.
pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Container {
    /// A new group under the cgroup v2 mount, with its guardian; `Err` when there is no cgroup
    /// v2 here or it cannot be made (not root): the caller falls back to a process group.
    pub fn create() -> io::Result<Container> {
        let root = mount_point().ok_or_else(|| io::Error::other("no cgroup v2 hierarchy is mounted"))?;
        let name = format!("{PREFIX}{}-{:08x}", std::process::id(), super::tracefs::random_u32());
        let dir = root.join(name);
        std::fs::create_dir(&dir)?;
        let made = (|| {
            let lock = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&dir)?;
            // SAFETY: a valid descriptor of our own.
            if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                return Err(io::Error::last_os_error());
            }
            let procs =
                std::fs::OpenOptions::new().write(true).custom_flags(libc::O_CLOEXEC).open(dir.join("cgroup.procs"))?;
            let kill =
                std::fs::OpenOptions::new().write(true).custom_flags(libc::O_CLOEXEC).open(dir.join("cgroup.kill"))?;
            let guardian = guard(kill)?;
            Ok(Container { dir: dir.clone(), procs, _lock: lock, guardian: Some(guardian) })
        })();
        if made.is_err() {
            let _ = std::fs::remove_dir(&dir);
        }
        made
    }

    /// The descriptor of `cgroup.procs` a child writes `0` into (before `exec`) to join.
    pub fn procs_fd(&self) -> i32 {
        self.procs.as_raw_fd()
    }

    /// Sends `signal` to every process in the group.
    pub fn signal_all(&self, signal: i32) {
        let text = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for pid in text.lines().filter_map(|l| l.trim().parse::<libc::pid_t>().ok()) {
            // SAFETY: kill takes plain integers.
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// True while a process is in the group.
    pub fn populated(&self) -> bool {
        populated(&self.dir)
    }

    /// Kills every process in the group at once (`cgroup.kill`).
    pub fn kill_all(&self) {
        let _ = std::fs::write(self.dir.join("cgroup.kill"), b"1");
    }
}

fn populated(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.events")).is_ok_and(|t| t.lines().any(|l| l == "populated 1"))
}

impl Drop for Container {
    fn drop(&mut self) {
        self.kill_all();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while self.populated() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if let Some((pid, pipe)) = self.guardian.take() {
            drop(pipe);
            let mut status = 0;
            // SAFETY: waiting for our own child; `status` is writable.
            unsafe { libc::waitpid(pid, &mut status, 0) };
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Forks the guardian: it leaves rtlab's session (a Ctrl-C to rtlab's terminal is not its
/// business), keeps only the pipe's read end and `kill` (`cgroup.kill`), blocks until the pipe
/// ends — when rtlab closes it or dies — then writes `1` to `kill` and exits. Only
/// async-signal-safe calls run in the child.
fn guard(kill: std::fs::File) -> io::Result<(libc::pid_t, OwnedFd)> {
    let (r, w) = pipe()?;
    let (rfd, wfd, kfd) = (r.as_raw_fd(), w.as_raw_fd(), kill.as_raw_fd());
    // SAFETY: the child only makes async-signal-safe system calls on values prepared before
    // the fork, then `_exit`s; the parent continues as usual.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the forked child; see above.
        unsafe {
            libc::close(wfd);
            libc::setsid();
            let (lo, hi) = (rfd.min(kfd), rfd.max(kfd));
            libc::syscall(libc::SYS_close_range, 3u32, (lo - 1) as u32, 0u32);
            libc::syscall(libc::SYS_close_range, (lo + 1) as u32, (hi - 1) as u32, 0u32);
            libc::syscall(libc::SYS_close_range, (hi + 1) as u32, u32::MAX, 0u32);
            let mut b = [0u8; 1];
            loop {
                let n = libc::read(rfd, b.as_mut_ptr().cast(), 1);
                if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
                    break;
                }
            }
            libc::write(kfd, b"1".as_ptr().cast(), 1);
            libc::_exit(0);
        }
    }
    drop(r);
    drop(kill);
    Ok((pid, w))
}

/// Removes the groups dead rtlab processes left (lock free): what is still in them is killed
/// first. The names removed.
pub fn remove_stale() -> Vec<String> {
    let Some(root) = mount_point() else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(&root) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(PREFIX) {
            continue;
        }
        let Ok(dir) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(e.path())
        else {
            continue;
        };
        // SAFETY: a valid descriptor of our own.
        if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            continue;
        }
        let was_populated = populated(&e.path());
        let _ = std::fs::write(e.path().join("cgroup.kill"), b"1");
        for _ in 0..200 {
            if !populated(&e.path()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if std::fs::remove_dir(e.path()).is_ok() && was_populated {
            removed.push(name);
        }
    }
    removed
}
