//! The operating-system layer: the only place in rtlab with `unsafe` and libc calls.
//!
//! Everything above this module speaks in safe, typed Rust: clocks and sleeps, scheduling
//! policies (including SCHED_DEADLINE through `sched_setattr`), CPU sets and affinity, memory
//! locking, the `/dev/cpu_dma_latency` PM QoS request, privileges, signals, POSIX timers and
//! the tracefs marker.

/// True when `e` is the kernel's "operation not permitted" (EPERM): a privilege is missing.
pub fn not_permitted(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::EPERM)
}

/// True when `e` is EBUSY (e.g. SCHED_DEADLINE admission control refused the bandwidth).
pub fn busy(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::EBUSY)
}

/// Repairs what dead rtlab processes left on the machine (a SIGKILL, a crash, a power cut of
/// the terminal): tracefs instances still recording, CPU idle states still disabled, programs
/// a dead watch started. Cheap when nothing was left; every rtlab start runs it as root. What it
/// gave back to the machine, in words (the instances are removed silently).
pub fn repair_left_behind() -> Vec<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Vec::new();
    }
    // A dead run's instances go without a word: rtlab runs ended by SIGKILL leave them all
    // the time (a test harness, a supervisor), and nothing of the machine's is changed back.
    tracefs::remove_stale();
    let mut said = cpuidle::repair();
    said.extend(
        fs::remove_stale_private_dirs().into_iter().map(|d| format!("a dead rtlab's directory {d} is removed")),
    );
    said.extend(
        container::remove_stale().into_iter().map(|name| {
            format!("the programs a dead rtlab started were still running (cgroup {name}); they are ended")
        }),
    );
    said
}

pub mod affinity;
pub mod bpf;
pub mod clock;
pub mod container;
pub mod counter;
pub mod cpuidle;
pub mod fifo;
pub mod fs;
pub mod machine;
pub mod memory;
pub mod msr;
pub mod pm_qos;
pub mod privileges;
pub mod process;
pub mod sched;
pub mod signals;
pub mod sync;
pub mod term;
pub mod thread;
pub mod tracefs;
pub mod worker;
