//! Limiting CPU idle states through sysfs (`cpuidle/stateN/disable`), shared by overlapping
//! runs and repaired after a dead one.
//!
//! The machine's own values are kept in `/run/rtlab/cpuidle.json` (the first owner saves each
//! file's value before any rtlab changed it); each live owner holds an exclusive `flock` on a
//! file of its own (`cpuidle-PID-XXXXXXXX.owner`, listing the states it keeps disabled). A file
//! is disabled while any live owner wants it, and has its saved value again otherwise; the last
//! owner to leave restores everything and removes the state file. An owner whose lock is free
//! died (SIGKILL, a crash): every rtlab start repairs what it left ([`repair`]). All of it is
//! done under `cpuidle.lock`, so two rtlab never interleave their reads and writes.

use super::affinity::CpuSet;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Where rtlab keeps what it changed on the machine, under the sysroot.
const STATE_DIR: &str = "run/rtlab";

/// Keeps idle states deeper than a limit disabled on some CPUs while it lives.
#[derive(Debug)]
pub struct IdleLimit {
    root: PathBuf,
    /// This owner's file, locked while it lives.
    owner: Option<(PathBuf, std::fs::File)>,
    /// Its slot among the emergency restores.
    emergency: Option<usize>,
}

/// The saved values: sysfs file (relative to the sysroot) → the machine's own value.
type Saved = BTreeMap<String, String>;

/// `/run/rtlab` under `root`: created 0700 when missing; refused when it is a symlink, not a
/// directory, or not this user's (another user could plant state for root to act on).
fn state_dir(root: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = root.join(STATE_DIR);
    if let Err(e) = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir) {
        return Err(format!("cannot create {} ({e})", dir.display()));
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is not a directory of this user's that only it may write; remove it and run again",
            dir.display()
        ));
    }
    Ok(dir)
}

/// Opens (creating, never through a symlink) and locks `path` exclusively: `Some` when locked,
/// `None` when another process holds it and `wait` is false.
fn lock_file(path: &Path, wait: bool, create: bool) -> std::io::Result<Option<std::fs::File>> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    let how = if wait { libc::LOCK_EX } else { libc::LOCK_EX | libc::LOCK_NB };
    // SAFETY: a valid descriptor of our own.
    if unsafe { libc::flock(f.as_raw_fd(), how) } == 0 {
        return Ok(Some(f));
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(None)
    } else {
        Err(e)
    }
}

/// The guard every change of the shared state is made under.
fn guard(dir: &Path) -> Result<std::fs::File, String> {
    let path = dir.join("cpuidle.lock");
    match lock_file(&path, true, true) {
        Ok(Some(f)) => Ok(f),
        Ok(None) => Err(format!("{} stays locked", path.display())),
        Err(e) => Err(format!("cannot lock {} ({e})", path.display())),
    }
}

fn read_small(path: &Path) -> Option<String> {
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path).ok()?;
    let mut text = String::new();
    f.take(1 << 20).read_to_string(&mut text).ok()?;
    Some(text)
}

fn load_saved(dir: &Path) -> Saved {
    read_small(&dir.join("cpuidle.json")).and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
}

fn store_saved(dir: &Path, saved: &Saved) -> Result<(), String> {
    let path = dir.join("cpuidle.json");
    if saved.is_empty() {
        let _ = std::fs::remove_file(&path);
        return Ok(());
    }
    let text = serde_json::to_string_pretty(saved).map_err(|e| e.to_string())?;
    super::fs::write_atomically(&path, |w| w.write_all(text.as_bytes()))
        .map_err(|e| format!("cannot write {} ({e})", path.display()))
}

/// The live owners' wishes (files they keep disabled); owners whose lock is free are removed,
/// and each is said in words.
fn live_wishes(dir: &Path, dead: &mut Vec<String>) -> Vec<String> {
    let mut wanted = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return wanted };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_prefix("cpuidle-").and_then(|n| n.strip_suffix(".owner")) else { continue };
        let path = e.path();
        let files: Vec<String> = read_small(&path).and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
        match lock_file(&path, false, false) {
            // Free: its owner is gone (and so is every descriptor it had).
            Ok(Some(_)) => {
                let _ = std::fs::remove_file(&path);
                let pid = id.split('-').next().unwrap_or("?");
                dead.push(pid.to_string());
            }
            Ok(None) => wanted.extend(files),
            Err(_) => {}
        }
    }
    wanted
}

/// Writes every saved file's due value: disabled while a live owner wants it, else the
/// machine's own; when no owner is left, the state file goes. The files whose value changed.
fn settle(root: &Path, dir: &Path, saved: &mut Saved, wanted: &[String]) -> Result<Vec<(String, String)>, String> {
    // The machine's own values are on disk before any file is changed: an owner killed at any
    // moment leaves what the next rtlab needs to repair it.
    if !wanted.is_empty() {
        store_saved(dir, saved)?;
    }
    let mut changed = Vec::new();
    for (file, original) in saved.iter() {
        let due = if wanted.contains(file) { "1" } else { original.as_str() };
        let path = root.join(file);
        let now = std::fs::read_to_string(&path).map(|t| t.trim().to_string()).unwrap_or_default();
        if now != due && std::fs::write(&path, due).is_ok() {
            changed.push((file.clone(), due.to_string()));
        }
    }
    if wanted.is_empty() {
        saved.clear();
        store_saved(dir, saved)?;
    }
    Ok(changed)
}

/// `cpu1 state2` from `sys/devices/system/cpu/cpu1/cpuidle/state2/disable`.
fn state_name(file: &str) -> String {
    let parts: Vec<&str> = file.split('/').collect();
    match parts.as_slice() {
        [.., cpu, "cpuidle", state, "disable"] => format!("{cpu} {state}"),
        _ => file.to_string(),
    }
}

/// What was repaired, in words (`rtlab: warning: …` lines for the caller to print).
fn said(dead: &[String], changed: &[(String, String)]) -> Vec<String> {
    if dead.is_empty() || changed.is_empty() {
        return Vec::new();
    }
    let states: Vec<String> = changed.iter().map(|(f, v)| format!("{} disable={v}", state_name(f))).collect();
    vec![format!(
        "CPU idle states left disabled by a dead rtlab (pid {}) were restored: {}",
        dead.join(", "),
        states.join(", ")
    )]
}

/// Repairs what dead owners left under sysroot `root` (`/` on the machine): their wishes
/// dropped, the files set to what the live owners want or to the machine's own values.
/// Returns what it repaired, in words; nothing when no rtlab limits idle states.
pub fn repair_under(root: &Path) -> Vec<String> {
    let dir = root.join(STATE_DIR);
    if !dir.join("cpuidle.json").exists() {
        return Vec::new();
    }
    let Ok(dir) = state_dir(root) else { return Vec::new() };
    let Ok(_guard) = guard(&dir) else { return Vec::new() };
    let mut dead = Vec::new();
    let wanted = live_wishes(&dir, &mut dead);
    let mut saved = load_saved(&dir);
    match settle(root, &dir, &mut saved, &wanted) {
        Ok(changed) => said(&dead, &changed),
        Err(_) => Vec::new(),
    }
}

/// [`repair_under`] the real `/`.
pub fn repair() -> Vec<String> {
    repair_under(Path::new("/"))
}

impl IdleLimit {
    /// Disables every idle state deeper than `deepest` on `cpus` (-1: every state, as rtla and
    /// cyclictest mean it); shallower states are left as they are.
    pub fn apply(cpus: &CpuSet, deepest: i32) -> Result<IdleLimit, String> {
        IdleLimit::apply_under(Path::new("/"), cpus, deepest)
    }

    /// The `stateN/disable` files of `cpus` deeper than `deepest`, relative to `root`, with
    /// their value now.
    fn deeper(root: &Path, cpus: &CpuSet, deepest: i32) -> Result<Vec<(String, String)>, String> {
        let mut files = Vec::new();
        for &cpu in cpus.cpus() {
            let rel = format!("sys/devices/system/cpu/cpu{cpu}/cpuidle");
            let dir = root.join(&rel);
            let entries = std::fs::read_dir(&dir).map_err(|e| {
                format!(
                    "--deepest-idle-state: {} is not readable ({e}); this kernel or machine exposes no cpuidle states",
                    dir.display()
                )
            })?;
            let mut states = 0;
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(n) = name.strip_prefix("state").and_then(|n| n.parse::<i32>().ok()) else { continue };
                states += 1;
                if n > deepest {
                    let file = format!("{rel}/{name}/disable");
                    let now = std::fs::read_to_string(root.join(&file))
                        .map_err(|e| format!("{}: {e}", root.join(&file).display()))?;
                    files.push((file, now.trim().to_string()));
                }
            }
            // A directory without states is a CPU without idle states, as a missing one is.
            if states == 0 {
                return Err(format!(
                    "--deepest-idle-state: {} lists no idle state; this kernel or machine exposes no cpuidle states",
                    dir.display()
                ));
            }
        }
        Ok(files)
    }

    /// [`IdleLimit::apply`] on the sysfs and `/run` under `root` (a fake sysroot in tests).
    fn apply_under(root: &Path, cpus: &CpuSet, deepest: i32) -> Result<IdleLimit, String> {
        IdleLimit::deeper(root, cpus, deepest)?;
        let dir = state_dir(root)?;
        let _guard = guard(&dir)?;
        let mut dead = Vec::new();
        let mut wanted = live_wishes(&dir, &mut dead);
        let mut saved = load_saved(&dir);
        // A dead owner's wishes go first (every rtlab start has said what it repaired).
        settle(root, &dir, &mut saved, &wanted)?;
        // Read after the repair: a dead owner's "1" is not the machine's own value.
        let files = IdleLimit::deeper(root, cpus, deepest)?;
        for (file, now) in &files {
            saved.entry(file.clone()).or_insert_with(|| now.clone());
        }
        let mine: Vec<String> = files.iter().map(|(f, _)| f.clone()).collect();
        let path = dir.join(format!("cpuidle-{}-{:08x}.owner", std::process::id(), super::tracefs::random_u32()));
        let owner = match lock_file(&path, false, true) {
            Ok(Some(f)) => f,
            _ => return Err(format!("cannot take {}", path.display())),
        };
        let mut limit = IdleLimit { root: root.to_path_buf(), owner: None, emergency: None };
        (&owner).write_all(serde_json::to_string(&mine).unwrap_or_default().as_bytes()).map_err(|e| e.to_string())?;
        limit.owner = Some((path, owner));
        // What a second Ctrl-C writes: the saved values of the files no other owner wants.
        let alone: Vec<(PathBuf, String)> =
            mine.iter().filter(|f| !wanted.contains(f)).map(|f| (root.join(f), saved[f].clone())).collect();
        limit.emergency = register_emergency(&alone);
        wanted.extend(mine);
        settle(root, &dir, &mut saved, &wanted).map_err(|e| format!("--deepest-idle-state: {e}"))?;
        for (file, _) in &files {
            let now = std::fs::read_to_string(root.join(file)).unwrap_or_default();
            if now.trim() != "1" {
                return Err(format!("cannot write {}; run as root", root.join(file).display()));
            }
        }
        Ok(limit)
    }
}

impl Drop for IdleLimit {
    fn drop(&mut self) {
        // The emergency restore stays armed until the values are back: a second Ctrl-C at any
        // moment of this still gives them back.
        if let Ok(dir) = state_dir(&self.root) {
            if let Ok(_guard) = guard(&dir) {
                if let Some((path, lock)) = self.owner.take() {
                    let _ = std::fs::remove_file(&path);
                    drop(lock);
                }
                let mut dead = Vec::new();
                let wanted = live_wishes(&dir, &mut dead);
                let mut saved = load_saved(&dir);
                let _ = settle(&self.root, &dir, &mut saved, &wanted);
            }
        }
        unregister_emergency(self.emergency);
    }
}

/// What an emergency exit writes, prepared for async-signal-safe calls: paths and values.
struct Emergency {
    files: Vec<(std::ffi::CString, Vec<u8>)>,
}

/// The live limit's emergency restore, if any (leaked on purpose, as a signal handler may read
/// it at any moment).
static EMERGENCY: [std::sync::atomic::AtomicPtr<Emergency>; 2] =
    [const { std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) }; 2];

fn register_emergency(files: &[(PathBuf, String)]) -> Option<usize> {
    use std::os::unix::ffi::OsStrExt;
    use std::sync::atomic::Ordering::SeqCst;
    let files = files
        .iter()
        .filter_map(|(p, v)| Some((std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?, v.as_bytes().to_vec())))
        .collect();
    let e: *mut Emergency = Box::leak(Box::new(Emergency { files }));
    EMERGENCY.iter().position(|slot| slot.compare_exchange(std::ptr::null_mut(), e, SeqCst, SeqCst).is_ok())
}

fn unregister_emergency(slot: Option<usize>) {
    if let Some(i) = slot {
        EMERGENCY[i].store(std::ptr::null_mut(), std::sync::atomic::Ordering::SeqCst);
    }
}

/// Writes the machine's own values back to the idle states only this process disabled, from
/// a signal handler about to `_exit` (open, write, close). Its owner file stays, unlocked at
/// the exit: the next rtlab settles whatever other owners changed meanwhile.
pub fn emergency_restore() {
    for slot in &EMERGENCY {
        let p = slot.swap(std::ptr::null_mut(), std::sync::atomic::Ordering::SeqCst);
        // SAFETY: a registered Emergency is leaked, never freed.
        if let Some(e) = unsafe { p.as_ref() } {
            for (path, value) in &e.files {
                // SAFETY: a NUL-terminated path; plain system calls.
                unsafe {
                    let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
                    if fd >= 0 {
                        libc::write(fd, value.as_ptr().cast(), value.len());
                        libc::close(fd);
                    }
                }
            }
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

    fn disabled(root: &Path) -> Vec<String> {
        (0..3)
            .map(|n| {
                let f = root.join(format!("sys/devices/system/cpu/cpu1/cpuidle/state{n}/disable"));
                std::fs::read_to_string(f).unwrap().trim().to_string()
            })
            .collect()
    }

    fn cpu1() -> CpuSet {
        CpuSet::from_cpus([1])
    }

    #[test]
    fn states_deeper_than_the_limit_are_disabled_while_it_lives_and_restored_after() {
        let root = sysroot(3);
        let limit = IdleLimit::apply_under(root.path(), &cpu1(), 0).unwrap();
        assert_eq!(disabled(root.path()), ["0", "1", "1"]);
        drop(limit);
        assert_eq!(disabled(root.path()), ["0", "0", "0"]);
        assert!(!root.path().join("run/rtlab/cpuidle.json").exists(), "the last owner removes the state");
    }

    #[test]
    fn minus_one_disables_every_idle_state_as_rtla_and_cyclictest_mean_it() {
        let root = sysroot(3);
        let _limit = IdleLimit::apply_under(root.path(), &cpu1(), -1).unwrap();
        assert_eq!(disabled(root.path()), ["1", "1", "1"]);
    }

    #[test]
    fn a_cpu_without_idle_states_is_a_one_line_error_naming_the_directory() {
        let root = sysroot(0);
        let e = IdleLimit::apply_under(root.path(), &CpuSet::from_cpus([3]), 0).unwrap_err();
        assert!(e.contains("cpu3/cpuidle") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn a_cpu_whose_cpuidle_directory_lists_no_state_is_the_same_one_line_error() {
        let root = sysroot(0);
        std::fs::create_dir_all(root.path().join("sys/devices/system/cpu/cpu1/cpuidle")).unwrap();
        let e = IdleLimit::apply_under(root.path(), &cpu1(), 0).unwrap_err();
        assert!(e.contains("cpu1/cpuidle") && e.contains("no idle state") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn overlapping_limits_leave_the_machines_own_values_whichever_ends_first() {
        let root = sysroot(3);
        let state2 = root.path().join("sys/devices/system/cpu/cpu1/cpuidle/state2/disable");
        // The machine's own choice: state2 disabled before any rtlab.
        std::fs::write(&state2, "1\n").unwrap();
        let first = IdleLimit::apply_under(root.path(), &cpu1(), 0).unwrap();
        let second = IdleLimit::apply_under(root.path(), &cpu1(), 1).unwrap();
        assert_eq!(disabled(root.path()), ["0", "1", "1"]);
        // The first ends while the second lives: state1 is the machine's again, state2 kept.
        drop(first);
        assert_eq!(disabled(root.path()), ["0", "0", "1"]);
        drop(second);
        assert_eq!(disabled(root.path()), ["0", "0", "1"], "state2 stays as the machine had it");
    }

    #[test]
    fn a_dead_owners_limit_is_repaired_by_the_next_start_and_said() {
        let root = sysroot(3);
        let limit = IdleLimit::apply_under(root.path(), &cpu1(), 0).unwrap();
        // Dying without its Drop: the lock goes with the process, the files stay.
        let path = limit.owner.as_ref().map(|(p, _)| p.clone()).unwrap();
        std::mem::forget(limit);
        // Simulate the process's end: its descriptor closes, releasing the lock.
        let reopened = lock_file(&path, false, false).unwrap();
        assert!(reopened.is_none(), "still held by the forgotten owner in this process");
        for fd in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t == path) {
                let n: i32 = fd.file_name().to_string_lossy().parse().unwrap();
                // SAFETY: closing the forgotten owner's descriptor, as its process's exit would.
                unsafe { libc::close(n) };
            }
        }
        assert_eq!(disabled(root.path()), ["0", "1", "1"]);
        let said = repair_under(root.path());
        assert_eq!(disabled(root.path()), ["0", "0", "0"]);
        assert!(said.len() == 1 && said[0].contains("cpu1 state1 disable=0"), "{said:?}");
        assert!(repair_under(root.path()).is_empty(), "nothing left to repair");
    }

    #[test]
    fn a_new_limit_after_a_dead_one_saves_the_machines_value_not_the_dead_ones() {
        let root = sysroot(3);
        let dir = state_dir(root.path()).unwrap();
        let file = "sys/devices/system/cpu/cpu1/cpuidle/state1/disable";
        // A dead owner: its wish on disk, its lock gone, state1 disabled, the original saved.
        std::fs::write(dir.join("cpuidle-4242-0000abcd.owner"), format!("[\"{file}\"]")).unwrap();
        std::fs::write(dir.join("cpuidle.json"), format!("{{\"{file}\": \"0\"}}")).unwrap();
        std::fs::write(root.path().join(file), "1\n").unwrap();
        let limit = IdleLimit::apply_under(root.path(), &cpu1(), 1).unwrap();
        assert_eq!(disabled(root.path()), ["0", "0", "1"], "state1 is the machine's again; state2 is this limit's");
        drop(limit);
        assert_eq!(disabled(root.path()), ["0", "0", "0"]);
    }
}
