//! The kernel's scheduling events as `rtlab watch` reads them, at every event: decoded from
//! tracefs text ([`event`]) and binary pages ([`raw`]) or from watch's BPF records ([`bpf`]),
//! each CPU's context ([`cpu`]), and a watched thread's periods ([`watch`]) and jobs ([`job`]).
//!
//! A crate of its own for one reason: it is the reader's hot path, built at full speed
//! (opt-level 3) while the rest of rtlab is built for size, which saves a fresh build a third
//! of the time it spends on rtlab (BENCHMARKS.md, section 35); Cargo sets the opt-level per
//! package. rtlab re-exports each module under `rtlab::trace`; nothing here knows of rtlab.

#![forbid(unsafe_code)]

pub mod bpf;
pub mod cpu;
pub mod event;
pub mod job;
pub mod merge;
pub mod raw;
pub mod syscalls;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod watch;
