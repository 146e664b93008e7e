//! The x86 SMI counter (MSR 0x34, `MSR_SMI_COUNT`) through `/dev/cpu/N/msr`.

use crate::rt::affinity::CpuSet;
use std::os::unix::fs::FileExt;

/// `MSR_SMI_COUNT`: System Management Interrupts since reset (Intel, Nehalem and later).
pub const MSR_SMI_COUNT: u64 = 0x34;

/// Reads SMI counts per CPU.
#[derive(Debug)]
pub struct SmiCounter;

impl SmiCounter {
    /// Says whether the counter can be read on every CPU of `cpus`, and why not.
    pub fn check(cpus: &CpuSet) -> Result<(), String> {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        if !cpuinfo.contains("GenuineIntel") {
            return Err("--smi: this CPU has no SMI counter (MSR 0x34 exists on Intel CPUs only)".into());
        }
        for &cpu in cpus.cpus() {
            SmiCounter::read(cpu).map_err(|e| format!("--smi: {e}"))?;
        }
        Ok(())
    }

    /// The SMI count of `cpu`.
    pub fn read(cpu: usize) -> Result<u64, String> {
        let path = format!("/dev/cpu/{cpu}/msr");
        let f = std::fs::File::open(&path)
            .map_err(|e| format!("cannot open {path} ({e}); load the msr module (modprobe msr) and run as root"))?;
        let mut buf = [0u8; 8];
        f.read_exact_at(&mut buf, MSR_SMI_COUNT)
            .map_err(|e| format!("cannot read MSR 0x34 from {path} ({e}); this CPU may lack the SMI counter"))?;
        Ok(u64::from_ne_bytes(buf))
    }
}
