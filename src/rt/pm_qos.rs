//! The `/dev/cpu_dma_latency` PM QoS request: keeps CPUs out of deep idle states while held.

use std::fs::File;
use std::io::{self, Write};

/// The PM QoS device.
pub const DEVICE: &str = "/dev/cpu_dma_latency";

/// Holds a CPU wakeup-latency request for as long as it lives; dropping it closes the file,
/// which withdraws the request (the kernel does this even if rtlab is killed).
#[derive(Debug)]
pub struct DmaLatencyGuard {
    _file: File,
    /// The latency written, in µs.
    pub latency_us: i32,
}

impl DmaLatencyGuard {
    /// Opens the device and writes `latency_us` as a binary 32-bit integer.
    pub fn acquire(latency_us: i32) -> io::Result<DmaLatencyGuard> {
        let mut file = std::fs::OpenOptions::new().write(true).open(DEVICE)?;
        file.write_all(&latency_us.to_ne_bytes())?;
        Ok(DmaLatencyGuard { _file: file, latency_us })
    }
}
