//! Explaining spikes on an ordinary kernel: rtlab's own tracefs instance records the measured
//! CPUs' scheduling and interrupt events ([`recorder`]), [`event`] parses them, and
//! [`explain`] turns the events between a late sample's deadline and its wakeup into the parts
//! of its latency; [`noise`] does the same for the gaps of a busy thread (`rtlab noise`).

pub mod bpf;
pub mod cpu;
pub mod event;
pub mod explain;
pub mod job;
pub mod noise;
pub mod period;
pub mod raw;
pub mod recorder;
pub mod syscalls;
#[cfg(test)]
pub(crate) mod testing;
pub mod watch;

pub use explain::{explain, Bounds, Cause, ExplainSummary, Explanation, Spike};
