//! The ftrace marker: write a line into the trace buffer and stop tracing (`-b --tracemark`).

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
