//! Per-sample bookkeeping cost of the measuring loop, system calls excluded.
//!
//! The real `run_loop` and `Recorder` run against a waiter that replays precomputed latencies
//! instead of sleeping, so what is timed is everything rtlab does per sample besides the sleep
//! and the clock read: the latency and missed-period arithmetic, exact 128-bit sums, min/max
//! with their cycle, the threshold check, the histogram increment and the live stores.
//! Target: < 20 ns per sample.

use divan::counter::ItemsCount;
use rtlab::measure::histogram::{Histogram, Layout};
use rtlab::measure::probe::{run_loop, LoopParams, Waiter, Wake};
use rtlab::measure::stats::{Live, Recorder};
use std::sync::atomic::AtomicBool;

const SAMPLES: u64 = 100_000;

fn main() {
    divan::main();
}

/// Latencies like a real run: mostly 2-20 µs, a few spikes, some beyond the linear range.
fn latencies() -> Vec<i64> {
    let mut s = 0x1234_5678_u64;
    (0..4096)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            match s % 1000 {
                0 => 12_000_000 + (s >> 20) as i64 % 5_000_000,
                1..=9 => 50_000 + (s >> 20) as i64 % 200_000,
                _ => 2_000 + (s >> 20) as i64 % 18_000,
            }
        })
        .collect()
}

struct Replay {
    lat: Vec<i64>,
    i: usize,
}

impl Waiter for Replay {
    const ABSOLUTE: bool = true;
    fn start(&mut self, _: i64, _: Option<i64>) -> i64 {
        0
    }
    #[inline(always)]
    fn wait(&mut self, next: i64, _: i64) -> Wake {
        let l = self.lat[self.i & 4095];
        self.i += 1;
        Wake { intended: next, now: next + l, overrun: None }
    }
}

/// The loop's parameters for [`SAMPLES`] periods of 1 ms.
fn params(cyclictest_us: bool) -> LoopParams {
    LoopParams {
        interval_ns: 1_000_000,
        loops: SAMPLES,
        warmup_cycles: 0,
        break_ns: i64::MAX,
        start_at: None,
        origin_ns: None,
        cyclictest_us,
    }
}

/// Times `run_loop` over [`SAMPLES`] replayed latencies.
fn bench_loop(bencher: divan::Bencher, cyclictest_us: bool) {
    let live = Live::new(Layout::DEFAULT);
    let stop = AtomicBool::new(false);
    let lat = latencies();
    let params = params(cyclictest_us);
    bencher.counter(ItemsCount::new(SAMPLES)).bench_local(|| {
        let mut rec = Recorder::new(&live, Some(100_000));
        let mut w = Replay { lat: lat.clone(), i: 0 };
        run_loop(&mut w, &params, &mut rec, &stop)
    });
}

/// The whole per-sample path of the loop (time per iteration / 100 000 = ns per sample).
#[divan::bench]
fn loop_bookkeeping_per_sample(bencher: divan::Bencher) {
    bench_loop(bencher, false);
}

/// The same with cyclictest's per-sample µs sum (what `rtlab cyclictest` adds for its Avg).
#[divan::bench]
fn loop_bookkeeping_per_sample_cyclictest_mode(bencher: divan::Bencher) {
    bench_loop(bencher, true);
}

/// The histogram increment alone.
#[divan::bench]
fn histogram_record_per_sample(bencher: divan::Bencher) {
    let h = Histogram::new(Layout::DEFAULT);
    let lat = latencies();
    bencher.counter(ItemsCount::new(SAMPLES)).bench_local(|| {
        for i in 0..SAMPLES as usize {
            h.record(divan::black_box(lat[i & 4095]));
        }
    });
}

/// A job that takes no time: what the loop adds per sample for a working task (response and
/// run times, their histograms, the deadline tracker), the work itself excluded.
struct Instant;

impl rtlab::measure::work::Job for Instant {
    const ENABLED: bool = true;
    #[inline(always)]
    fn run(&mut self, woke_ns: i64) -> i64 {
        woke_ns + 100_000
    }
}

/// The per-sample path of a working task's loop, the work excluded.
#[divan::bench]
fn loop_bookkeeping_per_sample_with_work(bencher: divan::Bencher) {
    use rtlab::measure::work::{WorkKind, WorkLive, WorkRecorder, WorkSpec};
    let live = Live::new(Layout::DEFAULT);
    let spec = WorkSpec { kind: WorkKind::Fixed, amount_ns: 100_000, deadline_ns: 1_000_000, miss_window: 1000 };
    let work = WorkLive::new(spec, Layout::DEFAULT, &[]);
    let stop = AtomicBool::new(false);
    let lat = latencies();
    let params = params(false);
    bencher.counter(ItemsCount::new(SAMPLES)).bench_local(|| {
        let mut rec = Recorder::new(&live, Some(100_000));
        let mut wr = WorkRecorder::new(&work, Some(500_000), None);
        let mut w = Replay { lat: lat.clone(), i: 0 };
        rtlab::measure::probe::run_work_loop(&mut w, &mut Instant, &mut wr, &params, &mut rec, &stop)
    });
}

/// One second of a 1 kHz thread (a thousand of the benchmark's latencies) recorded into a
/// `Live`, alone: the baseline the series reading below is measured against.
#[divan::bench]
fn a_second_recorded(bencher: divan::Bencher) {
    let live = Live::new(Layout::DEFAULT);
    let mut rec = Recorder::new(&live, None);
    let lat = latencies();
    let mut k = 0usize;
    bencher.bench_local(|| {
        for _ in 0..1000 {
            rec.record(divan::black_box(lat[k & 4095]), 0, 0);
            k += 1;
        }
    });
}

/// The same second, then what the session does once a second per thread off the hot path: a
/// checkpoint of the `Live` and the series' reading of it (the buckets that grew, the interval's
/// HdrHistogram, its V2-deflate-base64 text kept in the series) — the cost of the series'
/// histograms and of `--hlog` (whose line encodes the histogram once more).
#[divan::bench]
fn a_second_recorded_and_read_into_the_series(bencher: divan::Bencher) {
    let live = Live::new(Layout::DEFAULT);
    let mut rec = Recorder::new(&live, None);
    let mut series = rtlab::measure::series::SeriesRecorder::new();
    let lat = latencies();
    let (mut k, mut at) = (0usize, 0i64);
    bencher.bench_local(|| {
        for _ in 0..1000 {
            rec.record(divan::black_box(lat[k & 4095]), 0, 0);
            k += 1;
        }
        at += 1_000_000_000;
        let now = live.checkpoint().expect("no probe is recording");
        divan::black_box(series.read(&now, at));
    });
}

/// Encoding and decoding one interval's histogram (a second of the benchmark's latencies).
#[divan::bench]
fn an_interval_histogram_encoded_and_decoded(bencher: divan::Bencher) {
    let mut h = rtlab::measure::hdr::empty();
    latencies().iter().take(1000).for_each(|v| h.record(*v as u64).unwrap());
    bencher.bench_local(|| {
        let text = rtlab::measure::hdr::encode(divan::black_box(&h));
        divan::black_box(rtlab::measure::hdr::decode(&text).unwrap())
    });
}
