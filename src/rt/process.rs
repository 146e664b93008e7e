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
    /// ([`spawn_held`] only) hold the child and everything it starts in a cgroup of their own
    /// that ends with rtlab however rtlab ends ([`super::container`]); the child then stays in
    /// rtlab's process group (the terminal's foreground: it may read the terminal, and a Ctrl-C
    /// reaches it as it reaches rtlab). Without cgroup v2 here: its own process group.
    pub contain: bool,
}

fn pipe() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) })
}

/// A child created but held before `exec` ([`spawn_held`]).
#[derive(Debug)]
pub struct Held {
    /// Its process id.
    pub pid: i32,
    go: std::fs::File,
    waiter: std::thread::JoinHandle<io::Result<std::process::ExitStatus>>,
    container: Option<super::container::Container>,
}

impl Held {
    /// Lets the child `exec` its program.
    pub fn release(mut self) -> io::Result<Running> {
        use std::io::Write;
        self.go.write_all(b"g")?;
        Ok(Running { pid: self.pid, waiter: Some(self.waiter), container: self.container })
    }

    /// True when the child and what it starts are held in a cgroup of their own.
    pub fn contained(&self) -> bool {
        self.container.is_some()
    }
}

/// A child started by [`spawn_held`] and released: the thread that spawned it waits for it
/// (a parent-death signal fires when the parent *thread* ends, so that thread lives as long
/// as the child).
#[derive(Debug)]
pub struct Running {
    /// Its process id (and process group).
    pub pid: i32,
    waiter: Option<std::thread::JoinHandle<io::Result<std::process::ExitStatus>>>,
    /// Its cgroup, when it has one: everything it started ends with it.
    container: Option<super::container::Container>,
}

impl Running {
    /// True once the child has exited (or could not start).
    pub fn exited(&self) -> bool {
        self.waiter.as_ref().is_none_or(|w| w.is_finished())
    }

    /// Its exit status: at once when it has exited; else its process group gets SIGTERM, and
    /// SIGKILL after `grace`. `Err`: it could not start (the `exec` failed).
    pub fn end(&mut self, grace: std::time::Duration) -> io::Result<std::process::ExitStatus> {
        let Some(w) = self.waiter.take() else { return Err(io::Error::other("already ended")) };
        let c = self.container.as_ref();
        // Done when the child has exited and, held in a group, nothing it started runs on.
        let done = |w: &std::thread::JoinHandle<_>| w.is_finished() && !c.is_some_and(|c| c.populated());
        if !done(&w) {
            match c {
                Some(c) => c.signal_all(libc::SIGTERM),
                None => drop(kill_group(self.pid as u32, libc::SIGTERM)),
            }
            let until = std::time::Instant::now() + grace;
            while !done(&w) && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            match c {
                Some(c) => c.kill_all(),
                None if !w.is_finished() => drop(kill_group(self.pid as u32, libc::SIGKILL)),
                None => {}
            }
        }
        let status = w.join().map_err(|_| io::Error::other("the waiting thread panicked"))?;
        // The group goes with its last process.
        drop(self.container.take());
        status
    }
}

/// Spawns `cmd` like [`spawn`] but holds the child before `exec` until [`Held::release`]: its
/// parent learns its pid and sets things up around it first (`rtlab watch -- CMD` traces it
/// from its first instruction). A child that cannot start gives the spawn's error.
pub fn spawn_held(mut cmd: Command, opts: SpawnOptions) -> io::Result<Held> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    // First of all: the guardian forks before anything else of the run is open.
    let container = opts.contain.then(super::container::Container::create).and_then(Result::ok);
    let join = container.as_ref().map(|c| c.procs_fd());
    let (ready_r, ready_w) = pipe()?;
    let (go_r, go_w) = pipe()?;
    let gate = Some((ready_w.as_raw_fd(), go_r.as_raw_fd()));
    // `spawn` returns only once the child has exec'd: it runs on a thread of its own.
    let waiter = std::thread::Builder::new().name("rtlab-child".into()).spawn(move || {
        let child = spawn_gated(&mut cmd, &opts, gate, join);
        // The child's copies are its own; these go, so a child that never started ends the read.
        drop((ready_w, go_r));
        child?.wait()
    })?;
    let mut buf = [0u8; 4];
    let mut ready = std::fs::File::from(ready_r);
    if ready.read_exact(&mut buf).is_err() {
        return match waiter.join() {
            Ok(Err(e)) => Err(e),
            _ => Err(io::Error::other("the child ended before it could start")),
        };
    }
    Ok(Held { pid: i32::from_ne_bytes(buf), go: std::fs::File::from(go_w), waiter, container })
}

/// Makes rtlab the reaper of its orphaned descendants (`PR_SET_CHILD_SUBREAPER`): a daemon a
/// child leaves behind (in a session of its own, out of its process group) becomes rtlab's
/// child instead of init's, so that [`end_children_except`] can find and end it.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// rtlab's children (of every thread), ascending.
pub fn children() -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
                .flat_map(|s| s.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<u32>>())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v.dedup();
    v
}

/// Kills (SIGKILL, each with its process group) and reaps every child of rtlab's that is not in
/// `keep` (ascending), again while that makes new orphans of theirs rtlab's: what a program
/// left behind ends with the run. How many were ended.
pub fn end_children_except(keep: &[u32]) -> usize {
    let mut ended = 0;
    for _ in 0..50 {
        let left: Vec<u32> = children().into_iter().filter(|c| keep.binary_search(c).is_err()).collect();
        if left.is_empty() {
            break;
        }
        for &pid in &left {
            let _ = kill_group(pid, libc::SIGKILL);
            // SAFETY: kill and waitpid on a child of ours; no memory is involved.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
                libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0);
            }
            ended += 1;
        }
    }
    ended
}

/// The threads of process `pid` (`/proc/PID/task`), ascending; empty when it is gone.
pub fn thread_ids(pid: i32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// Every process id (`/proc`), ascending.
pub fn process_ids() -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir("/proc")
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect())
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// Thread `tid`'s command name, if it exists (bytes that are not UTF-8 shown as `�`: a name
/// is any 15 bytes a program chose).
pub fn comm(tid: i32) -> Option<String> {
    let bytes = std::fs::read(format!("/proc/{tid}/comm")).ok()?;
    Some(String::from_utf8_lossy(&bytes).trim_end_matches('\n').to_string())
}

/// The fields of `/proc/TID/stat` after the command name (which may hold spaces and
/// parentheses, and bytes that are not UTF-8): the state is the first.
fn stat_fields(tid: i32) -> Option<Vec<String>> {
    fields_after_comm(&std::fs::read(format!("/proc/{tid}/stat")).ok()?)
}

/// The fields of a `stat` line (`/proc/TID/stat`) after the command name, however odd the
/// name: the state is the first, the CPU it last ran on the 37th.
pub fn fields_after_comm(stat: &[u8]) -> Option<Vec<String>> {
    let end = stat.iter().rposition(|b| *b == b')')?;
    Some(String::from_utf8_lossy(&stat[end + 1..]).split_whitespace().map(String::from).collect())
}

/// When task `tid` started (clock ticks since boot, `/proc/TID/stat`'s 22nd field): with its
/// id, what tells it from a later task that was given the same id.
pub fn start_time(tid: i32) -> Option<u64> {
    stat_fields(tid)?.get(19)?.parse().ok()
}

/// True while task `tid` runs: it exists and is neither a zombie nor dead.
pub fn alive(tid: i32) -> bool {
    stat_fields(tid).and_then(|f| f.first().cloned()).is_some_and(|state| state != "Z" && state != "X")
}

/// The process thread `tid` belongs to (its thread group id), if it exists.
pub fn process_of(tid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok())
}

/// True when `pid` is a kernel thread (`PF_KTHREAD` in `/proc/PID/stat`'s flags).
pub fn is_kernel_thread(pid: i32) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // Fields after the command name (which may hold spaces and parentheses): state is 3rd, flags 9th.
    let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
    rest.split_whitespace().nth(6).and_then(|f| f.parse::<u64>().ok()).is_some_and(|f| f & PF_KTHREAD != 0)
}

/// Thread `tid`'s timer slack (ns, `/proc/TID/timerslack_ns`; root may read any thread's).
pub fn timer_slack_of(tid: i32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{tid}/timerslack_ns")).ok()?.trim().parse().ok()
}

/// The CPU thread `tid` last ran on (`/proc/TID/stat`'s 39th field).
pub fn last_cpu_of(tid: i32) -> Option<usize> {
    let stat = std::fs::read_to_string(format!("/proc/{tid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split_whitespace().nth(36)?.parse().ok()
}

/// Spawns `cmd` in a new process group with a parent-death signal and `opts` applied. The
/// parent-death signal reaches only this child, not processes it forks: a child that runs
/// other programs must stop its own group when it gets the signal.
pub fn spawn(cmd: &mut Command, opts: &SpawnOptions) -> io::Result<Child> {
    spawn_gated(cmd, opts, None, None)
}

/// [`spawn`], the child first writing its pid into `gate.0` (a pipe's write end) and waiting
/// for a byte on `gate.1` (a read end) when given; with `join` (a cgroup's `cgroup.procs`), the
/// child joins that group and stays in its parent's process group.
fn spawn_gated(
    cmd: &mut Command,
    opts: &SpawnOptions,
    gate: Option<(i32, i32)>,
    join: Option<i32>,
) -> io::Result<Child> {
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
            match join {
                // "0": the writing process itself.
                Some(procs) if libc::write(procs, b"0".as_ptr().cast(), 1) != 1 => {
                    return Err(io::Error::last_os_error());
                }
                Some(_) => {}
                None if libc::setpgid(0, 0) != 0 => return Err(io::Error::last_os_error()),
                None => {}
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
            if let Some((ready, go)) = gate {
                let pid = libc::getpid().to_ne_bytes();
                if libc::write(ready, pid.as_ptr().cast(), pid.len()) != pid.len() as isize {
                    return Err(io::Error::last_os_error());
                }
                let mut b = [0u8; 1];
                // Wait for the parent's byte (or the pipe's end); retry on a signal.
                while libc::read(go, b.as_mut_ptr().cast(), 1) < 0 && *libc::__errno_location() == libc::EINTR {}
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

/// Sends `signal` to process `pid`.
pub fn signal_process(pid: i32, signal: i32) -> io::Result<()> {
    // SAFETY: kill of one process id; no memory is involved.
    if pid > 0 && unsafe { libc::kill(pid, signal) } == 0 {
        Ok(())
    } else if pid <= 0 {
        Err(io::Error::other(format!("{pid} is not a process id")))
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The parent process's id.
pub fn parent_id() -> i32 {
    std::os::unix::process::parent_id() as i32
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

/// What this process has cost so far: its peak resident set and its CPU time, every thread's
/// (living or ended) but no child process's (`getrusage(RUSAGE_SELF)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// The most memory the process has had resident at once (KiB; `ru_maxrss`).
    pub peak_rss_kib: u64,
    /// CPU time spent in user mode (ns).
    pub user_ns: i64,
    /// CPU time spent in the kernel on the process's behalf (ns).
    pub system_ns: i64,
}

/// This process's [`Usage`] so far.
pub fn usage_self() -> io::Result<Usage> {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct getrusage fills.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let ns = |t: libc::timeval| t.tv_sec * 1_000_000_000 + t.tv_usec * 1_000;
    Ok(Usage { peak_rss_kib: ru.ru_maxrss.max(0) as u64, user_ns: ns(ru.ru_utime), system_ns: ns(ru.ru_stime) })
}
