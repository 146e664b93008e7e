//! Child processes for loads: each in its own process group, killed with SIGKILL if rtlab
//! dies (parent-death signal), with its scheduling, nice value and CPU affinity applied before
//! `exec` so the program never runs with anything else.

use super::affinity::CpuSet;
use super::sched::SchedParams;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// How a child is started.
#[derive(Clone, Debug, Default)]
pub struct SpawnOptions {
    /// Scheduling for the child (inherited by its own children).
    pub sched: Option<SchedParams>,
    /// Nice value (SCHED_OTHER/BATCH).
    pub nice: Option<i32>,
    /// CPU affinity.
    pub cpus: Option<CpuSet>,
    /// Signal the child gets when rtlab dies (SIGKILL when `None`); rtlab's own workers ask
    /// for SIGTERM so they can stop their process group first.
    pub death_signal: Option<i32>,
}

/// Spawns `cmd` in a new process group with a parent-death signal and `opts` applied. The
/// parent-death signal reaches only this child, not processes it forks: a child that runs
/// other programs must stop its own group when it gets the signal.
pub fn spawn(cmd: &mut Command, opts: &SpawnOptions) -> io::Result<Child> {
    let attr = opts.sched.as_ref().map(super::sched::raw_attr);
    let nice = opts.nice;
    let death = opts.death_signal.unwrap_or(libc::SIGKILL);
    let mask = opts.cpus.as_ref().map(|set| {
        // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
        let mut m: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in set.cpus() {
            // SAFETY: CpuSet holds CPUs below CPU_SETSIZE.
            unsafe { libc::CPU_SET(c, &mut m) };
        }
        m
    });
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls on values prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, death as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            if let Some(m) = &mask {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), m) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(attr) = &attr {
                if libc::syscall(libc::SYS_sched_setattr, 0, attr as *const libc::sched_attr, 0u32) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(n) = nice {
                if libc::setpriority(libc::PRIO_PROCESS, 0, n) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// The environment variable that marks every process a `command:` load starts, however it
/// detaches (`setsid`, a double fork): its value is a token unique to one load of one run.
pub const LOAD_MARK: &str = "RTLAB_LOAD";

/// A token no other process can predict: rtlab's PID, the load's number and random bits.
pub fn load_token(id: usize) -> String {
    let mut b = [0u8; 8];
    // SAFETY: `b` is writable for its length.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    let r = if n == 8 { u64::from_ne_bytes(b) } else { super::clock::now(super::clock::ClockId::MONOTONIC) as u64 };
    format!("{}-{id}-{r:016x}", std::process::id())
}

/// Sends SIGKILL to every process whose environment holds `LOAD_MARK=token` (read from
/// `/proc/PID/environ`); the number killed. What a load left behind in another session or
/// process group cannot outlive rtlab's stop this way.
pub fn kill_marked(token: &str) -> usize {
    let needle = format!("{LOAD_MARK}={token}");
    let me = std::process::id();
    let mut killed = 0;
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0 };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        // Bounded read: an environment is at most a few hundred KiB.
        let Ok(f) = std::fs::File::open(e.path().join("environ")) else { continue };
        let mut env = Vec::new();
        if std::io::Read::read_to_end(&mut std::io::Read::take(f, 1 << 20), &mut env).is_err() {
            continue;
        }
        if env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            // SAFETY: kill takes plain integers.
            if unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
    }
    killed
}

/// Sends `signal` to every process of the group `pgid`.
pub fn kill_group(pgid: u32, signal: i32) -> io::Result<()> {
    // SAFETY: kill with a negative pid addresses a process group; no memory is involved.
    if unsafe { libc::kill(-(pgid as libc::pid_t), signal) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the nice value of the calling thread (Linux applies `setpriority` to a thread id).
pub fn set_thread_nice(nice: i32) -> io::Result<()> {
    let tid = super::thread::tid();
    // SAFETY: setpriority takes plain integers.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Makes reads of `fd` return at once (`WouldBlock`) instead of waiting for data, so that one
/// thread can collect many children's answers against a deadline.
pub fn set_nonblocking(fd: &impl std::os::fd::AsRawFd) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller owns; no memory is involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Bytes of memory available for new allocations without swapping (`MemAvailable` of
/// /proc/meminfo), when known.
pub fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
