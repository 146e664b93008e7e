//! rtlab: a real-time latency lab for Linux.
//!
//! The crate is laid out as in `DESIGN.md`: `cli` parses and validates, `measure` runs the
//! probes and owns the hot loop, `result` is the data model, `export` turns results into
//! bytes, `output` talks to the terminal, and `rt` is the only place that touches the kernel
//! through `unsafe`.
#![deny(missing_docs)]
// Only `rt` may use `unsafe` (it allows it for itself); everything else is safe Rust.
#![deny(unsafe_code)]

pub mod cli;
pub mod commands;
pub mod doctor;
pub mod error;
pub mod export;
pub mod import;
pub mod load;
pub mod measure;
pub mod output;
pub mod plot;
pub mod probes;
pub mod report;
pub mod result;
#[allow(unsafe_code)]
pub mod rt;
pub mod serve;
pub mod session;
pub mod sweep;
pub mod sysinfo;
pub mod timefmt;
pub mod trace;
pub mod units;
