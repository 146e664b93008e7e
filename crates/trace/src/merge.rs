//! Each CPU's events as they are read, merged over the CPUs in time order: what `rtlab watch`'s
//! reader does with every event before its analysis sees it.

use super::event::Event;
use super::raw::Formats;
use std::collections::VecDeque;

/// Per CPU, the events read and not yet taken, each queue in time order.
#[derive(Debug, Default)]
pub struct Queues {
    queues: Vec<VecDeque<Event>>,
    /// The end of the events taken so far (ns): one read later and older is late.
    taken_until: Option<i64>,
    /// Events taken after younger ones.
    late: u64,
}

impl Queues {
    /// Appends `events`, read in time order from CPU queue `i`'s own stream.
    pub fn extend(&mut self, i: usize, events: impl IntoIterator<Item = Event>) {
        self.room_for(i);
        self.queues[i].extend(events);
    }

    /// Decodes one record of watch's BPF programs into its CPU's queue in time order (an
    /// interrupt nested in an event may have reserved its record first); false when the
    /// record is not one the decoder knows.
    pub fn push_record(&mut self, record: &[u8], formats: &Formats) -> bool {
        let Some(e) = super::bpf::decode(record, formats) else { return false };
        self.room_for(e.cpu);
        let q = &mut self.queues[e.cpu];
        let at = q.iter().rposition(|o| o.ts_ns <= e.ts_ns).map_or(0, |i| i + 1);
        q.insert(at, e);
        true
    }

    /// The events up to `until` (ns), merged over the CPUs in time order; those older than
    /// what was taken before are counted late (they are still given, as read).
    pub fn take(&mut self, until: i64) -> Vec<Event> {
        let mut v: Vec<Event> = Vec::new();
        for q in &mut self.queues {
            let n = q.partition_point(|e| e.ts_ns <= until);
            v.extend(q.drain(..n));
        }
        if let Some(before) = self.taken_until {
            self.late += v.iter().filter(|e| e.ts_ns < before).count() as u64;
        }
        self.taken_until = self.taken_until.max(Some(until));
        v.sort_by_key(|e| (e.ts_ns, e.cpu));
        v
    }

    /// Events taken after younger ones were.
    pub fn late(&self) -> u64 {
        self.late
    }

    fn room_for(&mut self, i: usize) {
        if self.queues.len() <= i {
            self.queues.resize_with(i + 1, VecDeque::new);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{bpf_record, ev, switch};

    #[test]
    fn an_event_read_after_younger_ones_were_taken_is_counted_late_and_still_delivered() {
        let mut s = Queues::default();
        s.extend(0, [ev(10, 0, 1, switch(1, "S", 2)), ev(30, 0, 1, switch(1, "S", 2))]);
        s.extend(1, [ev(20, 1, 1, switch(1, "S", 2))]);
        let first: Vec<i64> = s.take(25).iter().map(|e| e.ts_ns).collect();
        assert_eq!(first, vec![10, 20]);
        // CPU 1 publishes an event of 22 ns only now: older than what was taken up to 25.
        s.extend(1, [ev(22, 1, 1, switch(1, "S", 2)), ev(40, 1, 1, switch(1, "S", 2))]);
        let second: Vec<i64> = s.take(35).iter().map(|e| e.ts_ns).collect();
        assert_eq!(second, vec![22, 30]);
        assert_eq!(s.late(), 1);
        // At the stop everything left is taken; 40 is not late.
        assert_eq!(s.take(i64::MAX).len(), 1);
        assert_eq!(s.late(), 1);
    }

    #[test]
    fn a_record_reserved_before_an_older_one_of_its_cpu_is_queued_behind_it_and_an_unknown_one_is_refused() {
        let switch_at = |ts: i64| {
            let mut r = bpf_record(1, 7, [7, 19, 5, 120], [1, 0, 0, 0], "t", &[0u8; 32]);
            r[0..8].copy_from_slice(&ts.to_ne_bytes());
            r
        };
        let mut s = Queues::default();
        let formats = Formats::default();
        for ts in [30, 10, 20, 20] {
            assert!(s.push_record(&switch_at(ts), &formats));
        }
        assert!(!s.push_record(&bpf_record(999, 7, [0; 4], [0; 4], "t", &[]), &formats));
        assert!(!s.push_record(&switch_at(40)[..100], &formats));
        // Taken up to 25: the queue must be in time order for the cut to find 10, 20 and 20.
        let taken: Vec<(i64, usize)> = s.take(25).iter().map(|e| (e.ts_ns, e.cpu)).collect();
        assert_eq!(taken, vec![(10, 1), (20, 1), (20, 1)]);
        assert_eq!(s.take(i64::MAX).iter().map(|e| e.ts_ns).collect::<Vec<_>>(), vec![30]);
        assert_eq!(s.late(), 0);
    }
}
