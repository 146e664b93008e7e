//! Limiting CPU idle states through sysfs (`cpuidle/stateN/disable`), restored on drop.

use super::affinity::CpuSet;
use std::path::PathBuf;

/// Keeps idle states deeper than a limit disabled on some CPUs while it lives.
#[derive(Debug)]
pub struct IdleLimit {
    saved: Vec<(PathBuf, String)>,
}

impl IdleLimit {
    /// Disables every idle state deeper than `deepest` on `cpus` (-1: every state, as rtla and
    /// cyclictest mean it).
    pub fn apply(cpus: &CpuSet, deepest: i32) -> Result<IdleLimit, String> {
        IdleLimit::apply_under(std::path::Path::new("/"), cpus, deepest)
    }

    /// [`IdleLimit::apply`] on the sysfs under `root` (a fake sysroot in tests).
    fn apply_under(root: &std::path::Path, cpus: &CpuSet, deepest: i32) -> Result<IdleLimit, String> {
        let mut limit = IdleLimit { saved: Vec::new() };
        for &cpu in cpus.cpus() {
            let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}/cpuidle"));
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
                let want = if n > deepest { "1" } else { "0" };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sysroot(states: usize) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for n in 0..states {
            let d = root.path().join(format!("sys/devices/system/cpu/cpu1/cpuidle/state{n}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("disable"), "0\n").unwrap();
        }
        root
    }

    fn disabled(root: &std::path::Path) -> Vec<String> {
        (0..3)
            .map(|n| {
                let f = root.join(format!("sys/devices/system/cpu/cpu1/cpuidle/state{n}/disable"));
                std::fs::read_to_string(f).unwrap().trim().to_string()
            })
            .collect()
    }

    #[test]
    fn states_deeper_than_the_limit_are_disabled_while_it_lives_and_restored_after() {
        let root = sysroot(3);
        let limit = IdleLimit::apply_under(root.path(), &CpuSet::from_cpus([1]), 0).unwrap();
        assert_eq!(disabled(root.path()), ["0", "1", "1"]);
        drop(limit);
        assert_eq!(disabled(root.path()), ["0", "0", "0"]);
    }

    #[test]
    fn minus_one_disables_every_idle_state_as_rtla_and_cyclictest_mean_it() {
        let root = sysroot(3);
        let _limit = IdleLimit::apply_under(root.path(), &CpuSet::from_cpus([1]), -1).unwrap();
        assert_eq!(disabled(root.path()), ["1", "1", "1"]);
    }

    #[test]
    fn a_cpu_without_idle_states_is_a_one_line_error_naming_the_directory() {
        let root = sysroot(0);
        let e = IdleLimit::apply_under(root.path(), &CpuSet::from_cpus([3]), 0).unwrap_err();
        assert!(e.contains("cpu3/cpuidle") && !e.contains('\n'), "{e}");
    }
}
