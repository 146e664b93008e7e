//! `rtlab watch`'s BPF programs (bpf/watch.bpf.c, compiled by build.rs when clang is there),
//! loaded through aya: attached to BTF tracepoints, they filter the kernel's events to the
//! watched threads and send fixed records through one ring buffer, which the reader drains on
//! its own clock (the programs never wake it). Everything is released with the process: no
//! program or map is pinned, so an exit of any kind (SIGKILL included) leaves nothing loaded.

/// True when this build carries the BPF programs (clang was there when it was built).
pub fn built() -> bool {
    cfg!(rtlab_bpf)
}

/// Each program (its name in bpf/watch.bpf.c) and the tracepoint it is attached to; those
/// marked optional may be absent on a kernel (the x86 `local_timer` vector events).
#[cfg(rtlab_bpf)]
const PROGRAMS: &[(&str, &str, bool)] = &[
    ("rtlab_switch", "sched_switch", false),
    ("rtlab_waking", "sched_waking", false),
    ("rtlab_hrstart", "hrtimer_start", false),
    ("rtlab_hrexpire", "hrtimer_expire_entry", false),
    ("rtlab_sysexit", "sys_exit", false),
    ("rtlab_exit", "sched_process_exit", false),
    ("rtlab_fork", "sched_process_fork", false),
    ("rtlab_rename", "task_rename", false),
    ("rtlab_irq_in", "irq_handler_entry", false),
    ("rtlab_irq_out", "irq_handler_exit", false),
    ("rtlab_sirq_in", "softirq_entry", false),
    ("rtlab_sirq_out", "softirq_exit", false),
    ("rtlab_tick_in", "local_timer_entry", true),
    ("rtlab_tick_out", "local_timer_exit", true),
];

/// The loaded and attached programs, their maps, and what could not be attached.
pub struct WatchPrograms {
    #[cfg(rtlab_bpf)]
    inner: loaded::Loaded,
    /// Optional tracepoints this kernel lacks (as `system/event` names, like tracefs's).
    pub missing: Vec<String>,
}

impl std::fmt::Debug for WatchPrograms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchPrograms").field("missing", &self.missing).finish_non_exhaustive()
    }
}

/// The ring buffer's size for `cpus` CPUs: what the tracefs backend gives its buffers
/// (4 MiB a CPU), as a power of two.
pub fn ring_bytes(cpus: usize) -> u32 {
    ((cpus.max(2) * (4 << 20)) as u32).next_power_of_two().min(1 << 28)
}

#[cfg(not(rtlab_bpf))]
impl WatchPrograms {
    /// Without the programs in this build: why, and how to have them.
    pub fn load(_ring_bytes: u32) -> Result<WatchPrograms, String> {
        Err("this rtlab was built without clang, so without the BPF programs (install clang and build again)".into())
    }
    /// Watches `tids` (never reached without the programs).
    pub fn watch(&mut self, _tids: &[i32], _follow: bool) -> Result<(), String> {
        Ok(())
    }
    /// Hands every record waiting in the ring to `f` (never reached without the programs).
    pub fn drain(&mut self, _f: impl FnMut(&[u8])) {}
    /// Sleeps `timeout` (never reached without the programs).
    pub fn wait(&mut self, timeout: std::time::Duration) -> bool {
        std::thread::sleep(timeout);
        false
    }
    /// Records lost (never reached without the programs).
    pub fn lost(&self) -> u64 {
        0
    }
}

#[cfg(rtlab_bpf)]
impl WatchPrograms {
    /// Loads the programs (the ring buffer `ring_bytes` large: a power of two of pages) and
    /// attaches them; a kernel without BTF, BPF rights or a needed tracepoint is an error,
    /// in words.
    pub fn load(ring_bytes: u32) -> Result<WatchPrograms, String> {
        may_use_bpf()?;
        let (inner, missing) = loaded::Loaded::new(ring_bytes)?;
        Ok(WatchPrograms { inner, missing })
    }

    /// Watches `tids` from now on (`follow`: the threads they create too, from their creation).
    pub fn watch(&mut self, tids: &[i32], follow: bool) -> Result<(), String> {
        for &tid in tids {
            self.inner
                .watched
                .insert(tid as u32, u8::from(follow), 0)
                .map_err(|e| format!("cannot watch thread {tid} in the kernel ({e})"))?;
        }
        Ok(())
    }

    /// Hands every record waiting in the ring to `f`, oldest first (records of one CPU are in
    /// the order they were reserved, which an interrupt nested in an event may swap).
    pub fn drain(&mut self, mut f: impl FnMut(&[u8])) {
        while let Some(item) = self.inner.ring.next() {
            f(&item);
        }
    }

    /// Sleeps until `timeout` has passed or the programs woke the reader (the ring half full,
    /// or a thread renamed), whichever comes first; true when they did.
    pub fn wait(&mut self, timeout: std::time::Duration) -> bool {
        use std::os::fd::{AsFd, AsRawFd};
        let mut fd = libc::pollfd { fd: self.inner.wake.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd, owned here, for the length of the call.
        let woken = unsafe { libc::poll(&mut fd, 1, ms) } > 0;
        if woken {
            while self.inner.wake.next().is_some() {}
        }
        woken
    }

    /// Records lost so far: those that found the ring full, and the programs' runs the kernel
    /// skipped because one was already running on that CPU (their `recursion_misses`).
    pub fn lost(&self) -> u64 {
        let full: u64 = self.inner.lost.get(&0, 0).map(|v| v.iter().sum()).unwrap_or(0);
        full + self.inner.recursion_misses()
    }
}

/// Whether the kernel lets this process create BPF maps at all, asked with a map of one entry
/// before the kernel's BTF (megabytes) is read and parsed: a process without the rights, or
/// under an emulator that does not pass bpf(2) through, is told at once.
#[cfg(rtlab_bpf)]
fn may_use_bpf() -> Result<(), String> {
    // union bpf_attr for BPF_MAP_CREATE: map_type, key_size, value_size, max_entries, the rest 0.
    let mut attr = [0u32; 18];
    attr[..4].copy_from_slice(&[2, 4, 4, 1]); // BPF_MAP_TYPE_ARRAY, u32 -> u32, 1 entry
                                              // SAFETY: BPF_MAP_CREATE reads `size_of_val(&attr)` bytes of attr, which outlives the call.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, 0, attr.as_ptr(), std::mem::size_of_val(&attr)) };
    if fd < 0 {
        return Err(format!("the kernel refuses BPF maps to this process ({})", std::io::Error::last_os_error()));
    }
    // SAFETY: fd is the map's descriptor, owned here and closed once.
    unsafe { libc::close(fd as i32) };
    Ok(())
}

#[cfg(rtlab_bpf)]
mod loaded {
    use super::PROGRAMS;
    use aya::maps::{HashMap, MapData, PerCpuArray, RingBuf};
    use aya::programs::BtfTracePoint;
    use aya::{Btf, Ebpf, EbpfLoader};
    use std::os::fd::{AsFd, AsRawFd};

    /// The object file build.rs compiled.
    static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/watch.bpf.o"));

    pub(super) struct Loaded {
        pub(super) watched: HashMap<MapData, u32, u8>,
        pub(super) ring: RingBuf<MapData>,
        /// The ring that only signals a half-full `ring`.
        pub(super) wake: RingBuf<MapData>,
        pub(super) lost: PerCpuArray<MapData, u64>,
        /// The programs' descriptors, for their statistics in /proc.
        fds: Vec<i32>,
        // Dropped last: the programs and their links.
        _ebpf: Ebpf,
    }

    impl Loaded {
        pub(super) fn new(ring_bytes: u32) -> Result<(Loaded, Vec<String>), String> {
            // aya's loader parses the kernel's BTF when it is made, and the programs' loads need
            // a parse of their own: the two run side by side (each takes a fifth of a second).
            let (btf, mut loader) = std::thread::scope(|s| {
                let ours = s.spawn(Btf::from_sys_fs);
                let loader = EbpfLoader::new();
                (ours.join(), loader)
            });
            let btf = btf
                .map_err(|_| "the kernel's BTF could not be parsed".to_string())?
                .map_err(|e| format!("the kernel's BTF is not readable ({e})"))?;
            let mut ebpf = loader
                .btf(Some(&btf))
                .map_max_entries("rtlab_events", ring_bytes)
                .load(OBJECT)
                .map_err(|e| format!("the kernel refused rtlab's BPF maps ({e})"))?;
            let mut missing = Vec::new();
            let mut fds = Vec::new();
            for &(name, tracepoint, optional) in PROGRAMS {
                let program: &mut BtfTracePoint = ebpf
                    .program_mut(name)
                    .and_then(|p| p.try_into().ok())
                    .ok_or_else(|| format!("the BPF object has no program {name}"))?;
                match program.load(tracepoint, &btf) {
                    Ok(()) => {}
                    Err(_) if optional => {
                        missing.push(format!("irq_vectors/{tracepoint}"));
                        continue;
                    }
                    Err(e) => return Err(format!("the kernel refused the program for {tracepoint} ({e})")),
                }
                program.attach().map_err(|e| format!("cannot attach to the tracepoint {tracepoint} ({e})"))?;
                if let Ok(fd) = program.fd() {
                    fds.push(fd.as_fd().as_raw_fd());
                }
            }
            let mut map = |name: &str| ebpf.take_map(name).ok_or_else(|| format!("the BPF object has no map {name}"));
            let bad = |e: aya::maps::MapError| format!("a BPF map is not what rtlab expects ({e})");
            let watched = HashMap::try_from(map("rtlab_watched")?).map_err(bad)?;
            let ring = RingBuf::try_from(map("rtlab_events")?).map_err(bad)?;
            let wake = RingBuf::try_from(map("rtlab_wake")?).map_err(bad)?;
            let lost = PerCpuArray::try_from(map("rtlab_lost")?).map_err(bad)?;
            Ok((Loaded { watched, ring, wake, lost, fds, _ebpf: ebpf }, missing))
        }

        /// The sum of the programs' `recursion_misses` (their /proc fdinfo).
        pub(super) fn recursion_misses(&self) -> u64 {
            self.fds
                .iter()
                .filter_map(|fd| std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok())
                .filter_map(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix("recursion_misses:"))
                        .and_then(|v| v.trim().parse::<u64>().ok())
                })
                .sum()
        }
    }
}
