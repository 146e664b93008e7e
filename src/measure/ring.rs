//! A preallocated single-producer single-consumer ring of samples: the measuring thread
//! pushes with plain stores and never waits; a SCHED_OTHER reader drains it. If the reader
//! falls more than the ring's capacity behind, the overwritten samples are counted as lost,
//! never silently dropped.

use std::sync::atomic::{fence, AtomicI64, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

/// A response slot's value for "none" (no response is this small).
const NO_RESPONSE: i64 = i64::MIN;

/// One recorded sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Cycle index (0-based, after warm-up).
    pub cycle: u64,
    /// Wake time since the thread's start (ns).
    pub at_ns: i64,
    /// Latency (ns).
    pub latency_ns: i64,
    /// A working task's response time for the same period (ns); `None` for the empty loop.
    pub response_ns: Option<i64>,
}

/// The ring (capacity a power of two).
#[derive(Debug)]
pub struct SampleRing {
    at: Box<[AtomicI64]>,
    lat: Box<[AtomicI64]>,
    /// Response times beside the latencies (working tasks' rings only).
    resp: Option<Box<[AtomicI64]>>,
    /// Samples published (readable).
    head: AtomicU64,
    /// Samples whose slot the producer has started to write (head or head + 1).
    claim: AtomicU64,
    mask: u64,
}

/// The reader's position and loss count.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// Next sequence number to read.
    pub next: u64,
    /// Samples overwritten before they could be read.
    pub lost: u64,
}

impl SampleRing {
    /// A ring of at least `capacity` samples (rounded up to a power of two), all memory written.
    pub fn new(capacity: usize) -> SampleRing {
        let cap = capacity.max(2).next_power_of_two();
        SampleRing {
            at: (0..cap).map(|_| AtomicI64::new(0)).collect(),
            lat: (0..cap).map(|_| AtomicI64::new(0)).collect(),
            resp: None,
            head: AtomicU64::new(0),
            claim: AtomicU64::new(0),
            mask: cap as u64 - 1,
        }
    }

    /// A ring that also holds each sample's response time (a working task's).
    pub fn with_response(capacity: usize) -> SampleRing {
        let mut r = SampleRing::new(capacity);
        r.resp = Some((0..r.capacity()).map(|_| AtomicI64::new(0)).collect());
        r
    }

    /// Writes every slot once more from the calling thread (the probe, before it starts).
    pub fn prefault(&self) {
        for (a, l) in self.at.iter().zip(self.lat.iter()) {
            a.store(a.load(Relaxed), Relaxed);
            l.store(l.load(Relaxed), Relaxed);
        }
        for r in self.resp.iter().flat_map(|r| r.iter()) {
            r.store(r.load(Relaxed), Relaxed);
        }
    }

    /// Appends a sample whose period has no response (a watched thread that exited before it
    /// blocked again) to a ring that holds responses: it reads back without one.
    pub fn push_without_response(&self, at_ns: i64, latency_ns: i64) {
        self.write(at_ns, latency_ns, None);
    }

    /// Appends a sample with its response time (producer only; a ring made
    /// [`SampleRing::with_response`]; elsewhere the response is dropped).
    #[inline(always)]
    pub fn push_with_response(&self, at_ns: i64, latency_ns: i64, response_ns: i64) {
        self.write(at_ns, latency_ns, Some(response_ns));
    }

    /// The one producer path (inlined: without a response its branch compiles away).
    #[inline(always)]
    fn write(&self, at_ns: i64, latency_ns: i64, response_ns: Option<i64>) {
        let h = self.head.load(Relaxed);
        self.claim.store(h + 1, Relaxed);
        fence(Release);
        let i = (h & self.mask) as usize;
        self.at[i].store(at_ns, Relaxed);
        self.lat[i].store(latency_ns, Relaxed);
        if let Some(r) = &self.resp {
            r[i].store(response_ns.unwrap_or(NO_RESPONSE), Relaxed);
        }
        self.head.store(h + 1, Release);
    }

    /// Capacity in samples.
    pub fn capacity(&self) -> u64 {
        self.mask + 1
    }

    /// Appends a sample (producer only). Its cycle is its sequence number. Like a seqlock
    /// writer: claim the slot, fence, write, publish (plain stores on x86).
    #[inline(always)]
    pub fn push(&self, at_ns: i64, latency_ns: i64) {
        self.write(at_ns, latency_ns, None);
    }

    /// Reads every sample published since `cursor` (consumer only), calling `f` in order.
    pub fn drain(&self, cursor: &mut Cursor, f: impl FnMut(Sample)) {
        self.drain_upto(cursor, u64::MAX, f)
    }

    /// [`SampleRing::drain`], but only the samples before cycle `limit`: the rest stay for the
    /// next drain.
    pub fn drain_upto(&self, cursor: &mut Cursor, limit: u64, mut f: impl FnMut(Sample)) {
        let head = self.head.load(Acquire).min(limit.max(cursor.next));
        let cap = self.capacity();
        if head - cursor.next > cap {
            cursor.lost += head - cursor.next - cap;
            cursor.next = head - cap;
        }
        let mut read = Vec::with_capacity((head - cursor.next) as usize);
        for seq in cursor.next..head {
            let i = (seq & self.mask) as usize;
            read.push(Sample {
                cycle: seq,
                at_ns: self.at[i].load(Relaxed),
                latency_ns: self.lat[i].load(Relaxed),
                response_ns: self.resp.as_ref().map(|r| r[i].load(Relaxed)).filter(|r| *r != NO_RESPONSE),
            });
        }
        // Entries the producer may have overwritten while they were read are discarded as lost:
        // once sequence c - 1 is claimed, the slot of c - 1 - cap is no longer trustworthy.
        fence(Acquire);
        let claimed = self.claim.load(Relaxed);
        let safe_from = claimed.saturating_sub(cap);
        for s in read {
            if s.cycle >= safe_from {
                f(s);
            } else {
                cursor.lost += 1;
            }
        }
        cursor.next = head;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_come_out_in_order_with_their_cycle() {
        let r = SampleRing::new(8);
        for i in 0..5 {
            r.push(i * 10, i * 100);
        }
        let mut c = Cursor::default();
        let mut got = vec![];
        r.drain(&mut c, |s| got.push(s));
        assert_eq!(got.len(), 5);
        assert_eq!(got[3], Sample { cycle: 3, at_ns: 30, latency_ns: 300, response_ns: None });
        assert_eq!(c, Cursor { next: 5, lost: 0 });
    }

    #[test]
    fn a_drain_up_to_a_cycle_leaves_the_later_samples_for_the_next() {
        let r = SampleRing::new(8);
        for i in 0..6 {
            r.push(i, i);
        }
        let (mut c, mut got) = (Cursor::default(), vec![]);
        r.drain_upto(&mut c, 4, |s| got.push(s.cycle));
        assert_eq!((got.clone(), c.next), (vec![0, 1, 2, 3], 4));
        r.drain_upto(&mut c, 2, |s| got.push(s.cycle));
        assert_eq!(got.len(), 4, "a limit behind the cursor reads nothing");
        r.drain(&mut c, |s| got.push(s.cycle));
        assert_eq!(got, vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_working_tasks_ring_keeps_each_response_beside_its_latency() {
        let r = SampleRing::with_response(4);
        r.push_with_response(10, 5, 305);
        r.push_with_response(20, 7, 1_207);
        r.push_without_response(30, 9);
        let mut got = vec![];
        r.drain(&mut Cursor::default(), |s| got.push((s.latency_ns, s.response_ns)));
        assert_eq!(got, vec![(5, Some(305)), (7, Some(1_207)), (9, None)]);
    }

    #[test]
    fn a_reader_that_falls_behind_counts_what_it_lost() {
        let r = SampleRing::new(4);
        for i in 0..10 {
            r.push(i, i);
        }
        let mut c = Cursor::default();
        let mut got = vec![];
        r.drain(&mut c, |s| got.push(s.cycle));
        assert_eq!(got, vec![6, 7, 8, 9]);
        assert_eq!(c.lost, 6);
    }

    #[test]
    fn a_concurrent_reader_sees_every_sample_or_counts_it_lost() {
        let r = std::sync::Arc::new(SampleRing::new(64));
        let w = std::sync::Arc::clone(&r);
        let n = 200_000u64;
        let producer = std::thread::spawn(move || {
            for i in 0..n {
                w.push(i as i64, i as i64 * 3);
            }
        });
        let mut c = Cursor::default();
        let mut seen = 0u64;
        let mut last = None;
        while c.next < n {
            r.drain(&mut c, |s| {
                assert_eq!(s.latency_ns, s.cycle as i64 * 3, "torn sample");
                assert!(last.is_none_or(|l| s.cycle > l));
                last = Some(s.cycle);
                seen += 1;
            });
        }
        producer.join().unwrap();
        assert_eq!(seen + c.lost, n);
    }
}
