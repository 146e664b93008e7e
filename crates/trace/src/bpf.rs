//! The records of `rtlab watch`'s BPF programs (bpf/watch.bpf.c's `struct record`) turned into
//! the [`Event`]s the tracefs decoder gives, so both backends feed the same analysis.

use super::event::{Event, Kind, Name};
use super::raw::{address_name, c_string as name, switch_state, u32_at, u64_at, Formats, SOFTIRQS};

/// A record's size, in bytes.
pub const RECORD_BYTES: usize = 120;

// Records are checked to be RECORD_BYTES long before any field is read.
fn i32_at(b: &[u8], at: usize) -> i32 {
    u32_at(b, at).unwrap_or_default() as i32
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    u64_at(b, at).unwrap_or_default() as i64
}

/// One record's event; `None` for a record shorter than [`RECORD_BYTES`] or of an unknown
/// kind (counted by the caller, never guessed at). `formats` names the timer callbacks.
pub fn decode(r: &[u8], formats: &Formats) -> Option<Event> {
    if r.len() < RECORD_BYTES {
        return None;
    }
    let (a, b, c, d) = (i32_at(r, 20), i32_at(r, 24), i32_at(r, 28), i32_at(r, 32));
    let (x, y, p, q) = (i64_at(r, 40), i64_at(r, 48), i64_at(r, 56) as u64, i64_at(r, 64) as u64);
    let (s1, s2) = (&r[88..104], &r[104..120]);
    let kind = match u32::from_ne_bytes(r[8..12].try_into().ok()?) {
        1 => Kind::Switch {
            prev_pid: a,
            prev_comm: name(s1),
            prev_prio: b,
            prev_state: switch_state(x),
            next_pid: c,
            next_comm: name(s2),
            next_prio: d,
        },
        2 => Kind::Waking { pid: a, comm: name(s1), prio: b },
        3 => Kind::HrtimerStart {
            timer: address_name(p),
            function: formats.function(q),
            expires_ns: x,
            softexpires_ns: y,
            // HRTIMER_MODE_REL is bit 0 of the mode.
            relative: a & 1 != 0,
        },
        4 => Kind::HrtimerEntry { timer: address_name(p), function: formats.function(q), now_ns: Some(x) },
        5 => Kind::SysExit { nr: x },
        6 => Kind::Exit { pid: a },
        7 => Kind::Fork { child_pid: a, child_comm: name(s1) },
        8 => Kind::Rename { pid: a, comm: name(s1) },
        9 => Kind::IrqEntry { irq: a as u32, name: name(&r[88..120]) },
        10 => Kind::IrqExit { irq: a as u32 },
        11 => Kind::SoftirqEntry { name: Name::const_new(SOFTIRQS.get(a as usize).copied().unwrap_or("?")) },
        12 => Kind::SoftirqExit { name: Name::const_new(SOFTIRQS.get(a as usize).copied().unwrap_or("?")) },
        13 => Kind::VectorEntry { name: "local_timer".into() },
        14 => Kind::VectorExit { name: "local_timer".into() },
        _ => return None,
    };
    let pid = i32_at(r, 16);
    // The tracefs stream names the idle task so.
    let comm = if pid == 0 { "<idle>".into() } else { name(&r[72..88]) };
    Some(Event { ts_ns: i64_at(r, 0), cpu: u32::from_ne_bytes(r[12..16].try_into().ok()?) as usize, pid, comm, kind })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::bpf_record as record;

    #[test]
    fn a_switch_record_reads_as_the_tracefs_event_with_its_state_and_both_names() {
        let mut names = [0u8; 32];
        names[..5].copy_from_slice(b"probe");
        names[16..21].copy_from_slice(b"kwork");
        let r = record(1, 77, [77, 19, 5, 120], [1, 0, 0, 0], "probe", &names);
        let e = decode(&r, &Formats::default()).unwrap();
        assert_eq!((e.ts_ns, e.cpu, e.pid, e.comm.as_str()), (1_000_000_123, 1, 77, "probe"));
        assert_eq!(
            e.kind,
            Kind::Switch {
                prev_pid: 77,
                prev_comm: "probe".into(),
                prev_prio: 19,
                prev_state: "S".into(),
                next_pid: 5,
                next_comm: "kwork".into(),
                next_prio: 120
            }
        );
        let preempted = record(1, 77, [77, 19, 0, 120], [0x100, 0, 0, 0], "probe", &names);
        assert!(
            matches!(decode(&preempted, &Formats::default()).unwrap().kind, Kind::Switch { prev_state, .. } if prev_state == "R+")
        );
    }

    #[test]
    fn timer_records_carry_the_timer_its_expiries_and_mode_and_the_idle_task_is_named_as_tracefs_names_it() {
        let start = record(3, 9, [1, 0, 0, 0], [2_000, 1_950, 0xff01, 0xabc], "sleeper", &[]);
        let e = decode(&start, &Formats::default()).unwrap();
        assert_eq!(
            e.kind,
            Kind::HrtimerStart {
                timer: "000000000000ff01".into(),
                function: "0000000000000abc".into(),
                expires_ns: 2_000,
                softexpires_ns: 1_950,
                relative: true
            }
        );
        let expire = record(4, 0, [0; 4], [1_960, 0, 0xff01, 0xabc], "swapper/1", &[]);
        let e = decode(&expire, &Formats::default()).unwrap();
        assert_eq!(e.comm, "<idle>");
        assert_eq!(
            e.kind,
            Kind::HrtimerEntry {
                timer: "000000000000ff01".into(),
                function: "0000000000000abc".into(),
                now_ns: Some(1_960)
            }
        );
    }

    #[test]
    fn interrupts_system_calls_and_task_lifecycle_records_read_as_their_events() {
        let f = Formats::default();
        let kind = |k, ints, wide, s: &[u8]| decode(&record(k, 9, ints, wide, "t", s), &f).map(|e| e.kind);
        assert_eq!(kind(5, [0; 4], [230, 0, 0, 0], b""), Some(Kind::SysExit { nr: 230 }));
        assert_eq!(kind(6, [9, 0, 0, 0], [0; 4], b""), Some(Kind::Exit { pid: 9 }));
        assert_eq!(
            kind(7, [10, 0, 0, 0], [0; 4], b"worker"),
            Some(Kind::Fork { child_pid: 10, child_comm: "worker".into() })
        );
        assert_eq!(kind(8, [9, 0, 0, 0], [0; 4], b"renamed"), Some(Kind::Rename { pid: 9, comm: "renamed".into() }));
        assert_eq!(
            kind(9, [11, 0, 0, 0], [0; 4], b"virtio0-input.0-and-more"),
            Some(Kind::IrqEntry { irq: 11, name: "virtio0-input.0-and-more".into() })
        );
        assert_eq!(kind(10, [11, 0, 0, 0], [0; 4], b""), Some(Kind::IrqExit { irq: 11 }));
        assert_eq!(kind(11, [1, 0, 0, 0], [0; 4], b""), Some(Kind::SoftirqEntry { name: "TIMER".into() }));
        assert_eq!(kind(12, [9, 0, 0, 0], [0; 4], b""), Some(Kind::SoftirqExit { name: "RCU".into() }));
        assert_eq!(kind(13, [0; 4], [0; 4], b""), Some(Kind::VectorEntry { name: "local_timer".into() }));
        assert_eq!(kind(14, [0; 4], [0; 4], b""), Some(Kind::VectorExit { name: "local_timer".into() }));
        assert_eq!(kind(99, [0; 4], [0; 4], b""), None, "an unknown kind is not guessed at");
        assert_eq!(decode(&[0u8; 100], &f), None, "a short record is not read");
    }
}
