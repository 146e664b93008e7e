//! Events for the analyses' unit tests.

use super::bpf::RECORD_BYTES;
use super::event::{Event, Kind};

/// An event at `ts_ns` on `cpu` in the context of `pid` (named `t{pid}`).
pub fn ev(ts_ns: i64, cpu: usize, pid: i32, kind: Kind) -> Event {
    Event { ts_ns, cpu, pid, comm: format!("t{pid}").into(), kind }
}

/// A switch from `prev` (leaving in `state`) to `next`, both at kernel priority 19 (FIFO 80).
pub fn switch(prev: i32, state: &str, next: i32) -> Kind {
    Kind::Switch {
        prev_pid: prev,
        prev_comm: format!("t{prev}").into(),
        prev_prio: 19,
        prev_state: state.into(),
        next_pid: next,
        next_comm: format!("t{next}").into(),
        next_prio: 19,
    }
}

/// A record of watch's BPF programs as bpf/watch.bpf.c fills it, at 1 000 000 123 ns on CPU 1:
/// its `kind`, `pid`, four ints, four wide fields, `comm` and strings `s`.
pub fn bpf_record(kind: u32, pid: i32, ints: [i32; 4], wide: [i64; 4], comm: &str, s: &[u8]) -> Vec<u8> {
    let mut r = vec![0u8; RECORD_BYTES];
    r[0..8].copy_from_slice(&1_000_000_123i64.to_ne_bytes());
    r[8..12].copy_from_slice(&kind.to_ne_bytes());
    r[12..16].copy_from_slice(&1u32.to_ne_bytes());
    r[16..20].copy_from_slice(&pid.to_ne_bytes());
    for (i, v) in ints.iter().enumerate() {
        r[20 + 4 * i..24 + 4 * i].copy_from_slice(&v.to_ne_bytes());
    }
    for (i, v) in wide.iter().enumerate() {
        r[40 + 8 * i..48 + 8 * i].copy_from_slice(&v.to_ne_bytes());
    }
    r[72..72 + comm.len()].copy_from_slice(comm.as_bytes());
    r[88..88 + s.len()].copy_from_slice(s);
    r
}
