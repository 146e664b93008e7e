//! Explaining spikes on an ordinary kernel: rtlab's own tracefs instance records the measured
//! CPUs' scheduling and interrupt events ([`recorder`]), [`event`] parses them, and
//! [`explain`] turns the events between a late sample's deadline and its wakeup into the parts
//! of its latency; [`noise`] does the same for the gaps of a busy thread (`rtlab noise`).
//!
//! The analyses `rtlab watch` runs at every event (decoding, each CPU's context, periods, jobs)
//! are the crate `rtlab-trace` (crates/trace), built at full speed while rtlab is built for
//! size; they are re-exported here under their module names.

pub use rtlab_trace::{bpf, cpu, event, job, merge, raw, syscalls, watch};
pub mod explain;
pub mod noise;
pub mod period;
pub mod recorder;
#[cfg(test)]
pub(crate) use rtlab_trace::testing;

pub use explain::{explain, Bounds, Cause, ExplainSummary, Explanation, Spike};
