//! tracefs: the ftrace marker (`-b --tracemark`) and rtlab's own instance for `--explain`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A mounted tracefs instance.
#[derive(Debug, Clone)]
pub struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// Finds a writable tracefs at `/sys/kernel/tracing` or `/sys/kernel/debug/tracing`, or
    /// says why there is none.
    pub fn open() -> Result<Tracefs, String> {
        let root = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
            .iter()
            .map(Path::new)
            .find(|p| p.join("trace_marker").exists())
            .ok_or("tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)")?;
        std::fs::OpenOptions::new()
            .write(true)
            .open(root.join("trace_marker"))
            .map_err(|e| format!("{}/trace_marker is not writable: {e}", root.display()))?;
        Ok(Tracefs { root: root.to_path_buf() })
    }

    /// `trace_marker`, open for writing many markers, once tracing is on (rt-app refuses to run
    /// its markers into a buffer that records nothing, and so does rtlab).
    pub fn marker(&self) -> Result<std::fs::File, String> {
        let on = std::fs::read_to_string(self.root.join("tracing_on")).unwrap_or_default();
        if on.trim() != "1" {
            return Err(format!(
                "tracing is off ({}/tracing_on is not 1); turn it on: echo 1 > {0}/tracing_on",
                self.root.display()
            ));
        }
        std::fs::OpenOptions::new()
            .write(true)
            .open(self.root.join("trace_marker"))
            .map_err(|e| format!("{}/trace_marker is not writable: {e}", self.root.display()))
    }

    /// Writes `text` into `trace_marker`.
    pub fn mark(&self, text: &str) -> io::Result<()> {
        std::fs::OpenOptions::new().write(true).open(self.root.join("trace_marker"))?.write_all(text.as_bytes())
    }

    /// Stops tracing (`tracing_on` = 0) so the buffer keeps what led to the event.
    pub fn stop(&self) -> io::Result<()> {
        std::fs::write(self.root.join("tracing_on"), b"0")
    }
}

/// Where tracefs is mounted, mounting it at `/sys/kernel/tracing` when it is not (root only).
pub fn mount_point() -> Result<PathBuf, String> {
    for p in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if Path::new(p).join("instances").is_dir() {
            return Ok(PathBuf::from(p));
        }
    }
    let target = c"/sys/kernel/tracing";
    // SAFETY: every pointer is a valid NUL-terminated string; data is null as tracefs takes none.
    let rc = unsafe { libc::mount(c"nodev".as_ptr(), target.as_ptr(), c"tracefs".as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        return Err(format!(
            "tracefs is not mounted and mounting it failed ({}); mount -t tracefs nodev /sys/kernel/tracing as root",
            io::Error::last_os_error()
        ));
    }
    Ok(PathBuf::from("/sys/kernel/tracing"))
}

/// rtlab's own tracefs instance (`instances/rtlab-PID-XXXXXXXX`, a random suffix: PIDs are reused
/// and containers share the host's tracefs): its own buffers, clock and events, so the system's
/// main buffer and other tools' instances are never touched. Its owner holds an exclusive
/// `flock` on its directory for as long as it lives, which is how a later rtlab tells a dead
/// run's instance (lock free) from a live one. Removed on drop, and by an emergency exit.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    /// The directory, locked while the instance is ours.
    _lock: std::fs::File,
    /// The events enabled (`sched/sched_switch`).
    pub enabled: Vec<String>,
    /// The events asked for that this kernel does not have.
    pub missing: Vec<String>,
    /// Its slot among the emergency teardowns.
    emergency: Option<usize>,
}

impl Instance {
    /// Creates `instances/PREFIX-PID-XXXXXXXX` with the `mono` clock (CLOCK_MONOTONIC, the
    /// probes' clock), `buffer_kb` per CPU, tracing only `cpus`, and each of `events`
    /// (`sched/sched_switch`) this kernel has; with `pids`, only the events of those tasks
    /// (`set_event_pid`: events in their context, switches to or from them, their wakeups) and,
    /// when its flag is set, of every task they create (`event-fork`) — set before any event is
    /// enabled, so nothing else is recorded. Instances left by dead rtlab processes are removed
    /// first.
    pub fn create(
        prefix: &str,
        cpus: &super::affinity::CpuSet,
        buffer_kb: usize,
        events: &[&str],
        pids: Option<(&[i32], bool)>,
    ) -> Result<Instance, String> {
        let root = mount_point()?;
        let instances = root.join("instances");
        let name = format!("{prefix}-{}-{:08x}", std::process::id(), random_u32());
        let dir = instances.join(name);
        // Registered before it exists: a second Ctrl-C at any moment from here removes it.
        let emergency = register_emergency(&dir);
        let created = {
            // Creating and locking under the guard: a cleaner never sees it unlocked.
            let _guard = guard(&instances);
            remove_stale_under(&instances);
            std::fs::create_dir(&dir)
                .map_err(|e| format!("cannot create the tracefs instance {} ({e})", dir.display()))
                .and_then(|()| match lock_dir(&dir) {
                    Ok(Some(f)) => Ok(f),
                    Ok(None) => Err(format!("the tracefs instance {} is locked by another process", dir.display())),
                    Err(e) => {
                        let _ = std::fs::remove_dir(&dir);
                        Err(format!("cannot lock the tracefs instance {} ({e})", dir.display()))
                    }
                })
        };
        let lock = created.inspect_err(|_| unregister_emergency(emergency))?;
        let mut inst = Instance { dir, _lock: lock, enabled: Vec::new(), missing: Vec::new(), emergency };
        inst.write("trace_clock", "mono").map_err(|e| match e.raw_os_error() {
            Some(libc::EINVAL) | Some(libc::ENOENT) => format!("the mono trace clock is not available ({e})"),
            _ => format!("cannot set the instance's trace clock ({e})"),
        })?;
        inst.write("buffer_size_kb", &buffer_kb.to_string()).map_err(|e| format!("buffer_size_kb: {e}"))?;
        let mut mask = vec![0u32; cpus.cpus().iter().max().map_or(1, |m| m / 32 + 1)];
        for &c in cpus.cpus() {
            mask[c / 32] |= 1 << (c % 32);
        }
        let text = mask.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(",");
        inst.write("tracing_cpumask", &text).map_err(|e| format!("tracing_cpumask {text}: {e}"))?;
        if let Some((pids, follow)) = pids {
            inst.write("options/event-fork", if follow { "1" } else { "0" })
                .map_err(|e| format!("options/event-fork: {e}"))?;
            // An empty list would trace every task.
            if pids.is_empty() {
                return Err("no task to trace was given".into());
            }
            let list = join(pids);
            inst.write("set_event_pid", &list).map_err(|e| format!("set_event_pid {list}: {e}"))?;
        }
        for e in events {
            let enable = inst.dir.join("events").join(e).join("enable");
            if enable.exists() {
                std::fs::write(&enable, b"1").map_err(|err| format!("cannot enable {e} ({err})"))?;
                inst.enabled.push(e.to_string());
            } else {
                inst.missing.push(e.to_string());
            }
        }
        inst.write("tracing_on", "1").map_err(|e| format!("tracing_on: {e}"))?;
        Ok(inst)
    }

    fn write(&self, file: &str, value: &str) -> io::Result<()> {
        std::fs::write(self.dir.join(file), value.as_bytes())
    }

    /// The instance's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// CPU `cpu`'s event stream in text form, opened non-blocking (a read with nothing to
    /// give fails with `WouldBlock`); each read consumes what it returns.
    pub fn pipe(&self, cpu: usize) -> io::Result<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe")))?;
        emergency_pipe(self.emergency, f.as_raw_fd());
        Ok(f)
    }

    /// CPU `cpu`'s event stream in binary form (ring-buffer pages, one per read), opened
    /// non-blocking; each read consumes what it returns.
    pub fn pipe_raw(&self, cpu: usize) -> io::Result<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")))?;
        emergency_pipe(self.emergency, f.as_raw_fd());
        Ok(f)
    }

    /// Adds tasks to the traced ones of an instance created with `pids` (`set_event_pid`,
    /// appended).
    pub fn add_pids(&self, pids: &[i32]) -> Result<(), String> {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join("set_event_pid"))
            .map_err(|e| format!("set_event_pid: {e}"))?;
        f.write_all(join(pids).as_bytes()).map_err(|e| format!("set_event_pid {}: {e}", join(pids)))
    }

    /// Events CPU `cpu`'s buffer lost: overwritten before they were read, and dropped.
    pub fn lost(&self, cpu: usize) -> u64 {
        let text = std::fs::read_to_string(self.dir.join(format!("per_cpu/cpu{cpu}/stats"))).unwrap_or_default();
        text.lines()
            .filter(|l| l.starts_with("overrun:") || l.starts_with("dropped events:"))
            .filter_map(|l| l.rsplit(':').next()?.trim().parse::<u64>().ok())
            .sum()
    }

    /// Stops recording (the buffers keep what they hold).
    pub fn stop(&self) {
        let _ = self.write("tracing_on", "0");
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.stop();
        // rmdir fails while a pipe is open: the readers are joined before the instance drops.
        let _ = std::fs::remove_dir(&self.dir);
        // Only now: a second Ctrl-C before this line still finds the instance to remove.
        unregister_emergency(self.emergency);
    }
}

fn join(pids: &[i32]) -> String {
    pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(" ")
}

/// A random number from the kernel (`getrandom`), for names no other process can predict.
pub(crate) fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    // SAFETY: `b` is writable for its length.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), b.len(), 0) };
    if n == 4 {
        u32::from_ne_bytes(b)
    } else {
        // No entropy source: the time is unique enough for a name (the lock decides ownership).
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos())
    }
}

/// Takes an exclusive, non-blocking `flock` on directory `dir`: the open directory while the
/// lock is held, `None` when another process holds it.
fn lock_dir(dir: &Path) -> io::Result<Option<std::fs::File>> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW).open(dir)?;
    // SAFETY: a valid descriptor of our own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(Some(f));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(None)
    } else {
        Err(e)
    }
}

/// Takes the exclusive `flock` every rtlab holds on `instances` while it creates and locks an
/// instance or removes stale ones (held for microseconds; after 2 s of trying, `None`: go on
/// unguarded rather than hang on a stranger's lock).
fn guard(instances: &Path) -> Option<std::fs::File> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        match lock_dir(instances) {
            Ok(Some(f)) => return Some(f),
            Ok(None) if std::time::Instant::now() < until => std::thread::sleep(std::time::Duration::from_millis(1)),
            _ => return None,
        }
    }
}

/// Who owns an instance of rtlab's, by its name.
#[derive(Debug, PartialEq, Eq)]
enum Owner {
    /// `rtlab[-KIND]-PID-XXXXXXXX`: whoever holds its lock (staleness is the lock alone: a PID
    /// may have been reused, or belong to another PID namespace).
    Lock,
    /// `rtlab[-KIND]-PID` of older rtlab versions, which took no lock: that process.
    Pid(u32),
}

/// The owner of instance `name` when it is one of rtlab's (any prefix: `rtlab`, `rtlab-watch`).
fn owner_of(name: &str) -> Option<Owner> {
    let rest = name.strip_prefix("rtlab-")?;
    let parts: Vec<&str> = rest.split('-').collect();
    let kind_ok = |kind: &[&str]| kind.iter().all(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_lowercase()));
    match parts.as_slice() {
        [kind @ .., pid, suffix]
            if pid.parse::<u32>().is_ok()
                && suffix.len() == 8
                && suffix.bytes().all(|b| b.is_ascii_hexdigit())
                && kind_ok(kind) =>
        {
            Some(Owner::Lock)
        }
        [kind @ .., pid] if kind_ok(kind) => pid.parse().ok().map(Owner::Pid),
        _ => None,
    }
}

/// Removes every instance a dead rtlab left (any prefix), under the guard; the names removed.
pub fn remove_stale() -> Vec<String> {
    let Some(root) = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(Path::new)
        .find(|p| p.join("instances").is_dir())
    else {
        return Vec::new();
    };
    let instances = root.join("instances");
    let _guard = guard(&instances);
    remove_stale_under(&instances)
}

/// [`remove_stale`] in `instances`, the guard held by the caller: instances whose lock nobody
/// holds, and lockless ones of older versions whose process is gone. A live one is never touched.
fn remove_stale_under(instances: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(instances) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let stale = match owner_of(&name) {
            Some(Owner::Lock) => matches!(lock_dir(&e.path()), Ok(Some(_))),
            Some(Owner::Pid(pid)) => !Path::new(&format!("/proc/{pid}")).exists(),
            None => false,
        };
        if stale {
            let _ = std::fs::write(e.path().join("tracing_on"), b"0");
            if std::fs::remove_dir(e.path()).is_ok() {
                removed.push(name);
            }
        }
    }
    removed
}

/// What an emergency exit needs to tear the live instance down with async-signal-safe calls
/// only: its paths as C strings and the descriptors of its open pipes.
struct Emergency {
    dir: std::ffi::CString,
    tracing_on: std::ffi::CString,
    pipes: [std::sync::atomic::AtomicI32; 64],
}

/// The live instances' teardowns (a watch runs two), if any (each leaked on purpose: a signal
/// handler may read it at any moment; one small allocation per instance).
static EMERGENCY: [std::sync::atomic::AtomicPtr<Emergency>; 4] =
    [const { std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) }; 4];

/// Registers `dir` for an emergency teardown; its slot, or `None` when four are live.
fn register_emergency(dir: &Path) -> Option<usize> {
    use std::os::unix::ffi::OsStrExt;
    use std::sync::atomic::Ordering::SeqCst;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).ok();
    let (Some(d), Some(on)) = (c(dir), c(&dir.join("tracing_on"))) else { return None };
    let e: *mut Emergency = Box::leak(Box::new(Emergency {
        dir: d,
        tracing_on: on,
        pipes: std::array::from_fn(|_| std::sync::atomic::AtomicI32::new(-1)),
    }));
    EMERGENCY.iter().position(|slot| slot.compare_exchange(std::ptr::null_mut(), e, SeqCst, SeqCst).is_ok())
}

fn emergency_pipe(slot: Option<usize>, fd: i32) {
    let Some(p) = slot.map(|i| EMERGENCY[i].load(std::sync::atomic::Ordering::SeqCst)) else { return };
    // SAFETY: a registered Emergency is leaked, never freed.
    if let Some(e) = unsafe { p.as_ref() } {
        if let Some(slot) = e.pipes.iter().find(|s| s.load(std::sync::atomic::Ordering::SeqCst) < 0) {
            slot.store(fd, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

fn unregister_emergency(slot: Option<usize>) {
    if let Some(i) = slot {
        EMERGENCY[i].store(std::ptr::null_mut(), std::sync::atomic::Ordering::SeqCst);
    }
}

/// Switches the live instance off and removes it, from a signal handler about to `_exit`:
/// closes its pipes (rmdir fails while one is open), writes 0 to its `tracing_on`, removes its
/// directory. Async-signal-safe: atomics, close, open, write, rmdir.
pub fn emergency_teardown() {
    for slot in &EMERGENCY {
        let p = slot.swap(std::ptr::null_mut(), std::sync::atomic::Ordering::SeqCst);
        // SAFETY: a registered Emergency is leaked, never freed.
        if let Some(e) = unsafe { p.as_ref() } {
            teardown(e);
        }
    }
}

fn teardown(e: &Emergency) {
    for slot in &e.pipes {
        let fd = slot.swap(-1, std::sync::atomic::Ordering::SeqCst);
        if fd >= 0 {
            // SAFETY: closing a descriptor we opened; the process exits right after.
            unsafe { libc::close(fd) };
        }
    }
    // Another thread may be opening a pipe of this instance right now (rmdir fails while one
    // is open): the process exits right after, so every descriptor past stderr may go.
    for _ in 0..3 {
        // SAFETY: NUL-terminated paths; plain system calls; the process `_exit`s right after.
        unsafe {
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
            let fd = libc::open(e.tracing_on.as_ptr(), libc::O_WRONLY);
            if fd >= 0 {
                libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
            }
            if libc::rmdir(e.dir.as_ptr()) == 0 || *libc::__errno_location() == libc::ENOENT {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rtlab_prefix_is_recognised_and_a_locked_name_is_judged_by_its_lock_alone() {
        assert_eq!(owner_of("rtlab-123-0a1b2c3d"), Some(Owner::Lock));
        assert_eq!(owner_of("rtlab-watch-123-deadbeef"), Some(Owner::Lock));
        assert_eq!(owner_of("rtlab-watch-123"), Some(Owner::Pid(123)));
        assert_eq!(owner_of("rtlab-77"), Some(Owner::Pid(77)));
        for other in ["rtlab", "rtla-1-0a1b2c3d", "trace-cmd-1", "rtlab-Watch-1-0a1b2c3d", "rtlab--1", "rtlab-x-1-zz"] {
            assert_eq!(owner_of(other), None, "{other}");
        }
    }
}
