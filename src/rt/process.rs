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
