//! Events for the analyses' unit tests.

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
