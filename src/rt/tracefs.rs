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

/// rtlab's own tracefs instance (`instances/rtlab-PID`): its own buffers, clock and events, so
/// the system's main buffer and other tools' instances are never touched. Removed on drop.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    /// The events enabled (`sched/sched_switch`).
    pub enabled: Vec<String>,
    /// The events asked for that this kernel does not have.
    pub missing: Vec<String>,
}

impl Instance {
    /// Creates `instances/NAME` with the `mono` clock (CLOCK_MONOTONIC, the probes' clock),
    /// `buffer_kb` per CPU, tracing only `cpus`, and each of `events` (`sched/sched_switch`)
    /// this kernel has; instances left by dead rtlab processes are removed first.
    pub fn create(
        name: &str,
        cpus: &super::affinity::CpuSet,
        buffer_kb: usize,
        events: &[&str],
    ) -> Result<Instance, String> {
        let root = mount_point()?;
        remove_stale(&root.join("instances"));
        let dir = root.join("instances").join(name);
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create the tracefs instance {} ({e})", dir.display()))?;
        let mut inst = Instance { dir, enabled: Vec::new(), missing: Vec::new() };
        inst.write("trace_clock", "mono").map_err(|e| format!("the mono trace clock is not available ({e})"))?;
        inst.write("buffer_size_kb", &buffer_kb.to_string()).map_err(|e| format!("buffer_size_kb: {e}"))?;
        let mut mask = vec![0u32; cpus.cpus().iter().max().map_or(1, |m| m / 32 + 1)];
        for &c in cpus.cpus() {
            mask[c / 32] |= 1 << (c % 32);
        }
        let text = mask.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join(",");
        inst.write("tracing_cpumask", &text).map_err(|e| format!("tracing_cpumask {text}: {e}"))?;
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
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(self.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe")))
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
    }
}

/// Removes `rtlab-PID` instances whose process no longer exists (left by a killed rtlab).
fn remove_stale(instances: &Path) {
    let Ok(entries) = std::fs::read_dir(instances) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix("rtlab-").and_then(|p| p.parse::<u32>().ok()) {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir(e.path());
            }
        }
    }
}
