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

pub mod affinity;
pub mod clock;
pub mod counter;
pub mod cpuidle;
pub mod fifo;
pub mod fs;
pub mod memory;
pub mod msr;
pub mod pm_qos;
pub mod privileges;
pub mod process;
pub mod sched;
pub mod signals;
pub mod term;
pub mod thread;
pub mod tracefs;
