//! Limiting CPU idle states through sysfs (`cpuidle/stateN/disable`), restored on drop.

use super::affinity::CpuSet;
use std::path::PathBuf;

/// Keeps idle states deeper than a limit disabled on some CPUs while it lives.
#[derive(Debug)]
pub struct IdleLimit {
    saved: Vec<(PathBuf, String)>,
}

impl IdleLimit {
    /// Disables every idle state deeper than `deepest` (-1: none disabled, all allowed) on `cpus`.
    pub fn apply(cpus: &CpuSet, deepest: i32) -> Result<IdleLimit, String> {
        let mut limit = IdleLimit { saved: Vec::new() };
        for &cpu in cpus.cpus() {
            let dir = PathBuf::from(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle"));
            let entries = std::fs::read_dir(&dir).map_err(|e| {
                format!(
                    "--deepest-idle-state: {} is not readable ({e}); this kernel or machine exposes no cpuidle states",
                    dir.display()
                )
            })?;
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(n) = name.strip_prefix("state").and_then(|n| n.parse::<i32>().ok()) else { continue };
                let file = entry.path().join("disable");
                let old = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
                let want = if deepest >= 0 && n > deepest { "1" } else { "0" };
                std::fs::write(&file, want)
                    .map_err(|e| format!("cannot write {} ({e}); run as root", file.display()))?;
                limit.saved.push((file, old.trim().to_string()));
            }
        }
        Ok(limit)
    }
}

impl Drop for IdleLimit {
    fn drop(&mut self) {
        for (file, old) in &self.saved {
            let _ = std::fs::write(file, old);
        }
    }
}
