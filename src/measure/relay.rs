//! The measuring loop run in a worker process ([`crate::rt::worker`]) and relayed to rtlab:
//! the worker runs the one loop with [`Tee`], which writes its start and every wakeup to rtlab
//! as they happen; rtlab runs the same loop with [`Replay`], which waits for those words. Both
//! loops take the same decisions on the same times (missed periods, warm-up, loops, the break),
//! so rtlab's statistics, logs and series are those of the worker's wakeups, with no second
//! arithmetic.

use super::noise::{NoiseOutcome, NoiseSink};
use super::probe::{LoopParams, Waiter, Wake};
use super::stats::Exceedance;
use crate::rt::worker::{read_words, write_words, Read, Worker};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The worker's waiter: `inner`'s start and wakeups, each written to rtlab on `fd`. When rtlab
/// is gone, `gone` is set (the worker's loop ends at its next turn).
pub struct Tee<'a, W> {
    /// The real waiter.
    pub inner: W,
    /// The pipe to rtlab.
    pub fd: RawFd,
    /// Set when a write failed.
    pub gone: &'a AtomicBool,
}

impl<W: Waiter> Waiter for Tee<'_, W> {
    const ABSOLUTE: bool = W::ABSOLUTE;
    fn start(&mut self, interval_ns: i64, at: Option<i64>) -> i64 {
        let start = self.inner.start(interval_ns, at);
        if !write_words(self.fd, &[start]) {
            self.gone.store(true, Relaxed);
        }
        start
    }
    #[inline(always)]
    fn wait(&mut self, next: i64, interval_ns: i64) -> Wake {
        let wake = self.inner.wait(next, interval_ns);
        let overrun = wake.overrun.map_or(-1, |o| o as i64);
        if !write_words(self.fd, &[wake.intended, wake.now, overrun]) {
            self.gone.store(true, Relaxed);
        }
        wake
    }
}

/// rtlab's waiter for a worker's loop: the worker's start and wakeups as they arrive. A stop
/// interrupts the wait (the wake signal) and gives a wakeup before its deadline, which ends the
/// loop as a cut sleep does. A worker that ends before the loop does sets `ended` and the run's
/// stop.
pub struct Replay<'a> {
    /// The worker.
    pub worker: &'a Worker,
    /// The run's stop.
    pub stop: &'a AtomicBool,
    /// Set when the worker ended first.
    pub ended: bool,
}

impl Replay<'_> {
    fn read(&mut self, out: &mut [i64]) -> bool {
        loop {
            match self.worker.read(out) {
                Read::Full => return true,
                Read::Interrupted if !self.stop.load(Relaxed) => continue,
                Read::Interrupted => return false,
                Read::Ended => {
                    self.ended = true;
                    self.stop.store(true, Relaxed);
                    return false;
                }
            }
        }
    }
}

impl Waiter for Replay<'_> {
    // The worker's schedule is what the worker's waiter makes it; rtlab follows its words.
    const ABSOLUTE: bool = true;
    fn start(&mut self, _: i64, at: Option<i64>) -> i64 {
        let mut w = [0i64];
        if self.read(&mut w) {
            w[0]
        } else {
            at.unwrap_or(0)
        }
    }
    fn wait(&mut self, next: i64, _: i64) -> Wake {
        let mut w = [0i64; 3];
        if self.read(&mut w) {
            Wake { intended: w[0], now: w[1], overrun: u64::try_from(w[2]).ok() }
        } else {
            Wake { intended: next, now: next - 1, overrun: None }
        }
    }
}

/// The loop's parameters as the words sent to a worker.
pub fn params_to_words(p: &LoopParams) -> [i64; 7] {
    [
        p.interval_ns,
        p.loops as i64,
        p.warmup_cycles as i64,
        p.break_ns,
        p.start_at.unwrap_or(i64::MIN),
        p.origin_ns.unwrap_or(i64::MIN),
        i64::from(p.cyclictest_us),
    ]
}

/// The loop's parameters from the words a worker received.
pub fn params_from_words(w: &[i64; 7]) -> LoopParams {
    LoopParams {
        interval_ns: w[0],
        loops: w[1] as u64,
        warmup_cycles: w[2] as u64,
        break_ns: w[3],
        start_at: (w[4] != i64::MIN).then_some(w[4]),
        origin_ns: (w[5] != i64::MIN).then_some(w[5]),
        cyclictest_us: w[6] != 0,
    }
}

/// Reads the loop's parameters in the worker; `None` when rtlab ended it first.
pub fn receive_params(fd: RawFd) -> Option<LoopParams> {
    let mut w = [0i64; 7];
    loop {
        match read_words(fd, &mut w) {
            Read::Full => return Some(params_from_words(&w)),
            Read::Interrupted => continue,
            Read::Ended => return None,
        }
    }
}

/// A noise record's first word: the loop's start, one noise, or the loop's end and outcome.
const START: i64 = 1;
const NOISE: i64 = 2;
const END: i64 = 3;

/// The worker's noise sink: the start, every noise and the end, written to rtlab on `fd`. When
/// rtlab is gone, `stop` is set (the busy loop looks at it every 1 024 reads).
pub struct NoiseTee<'a> {
    /// The pipe to rtlab.
    pub fd: RawFd,
    /// The worker's stop.
    pub stop: &'a AtomicBool,
}

impl NoiseTee<'_> {
    fn send(&self, words: &[i64]) {
        if !write_words(self.fd, words) {
            self.stop.store(true, Relaxed);
        }
    }

    /// The loop's outcome, after which rtlab's replay ends.
    pub fn end(&self, o: &NoiseOutcome) {
        let e = o.stopped_at;
        self.send(&[
            END,
            o.iterations as i64,
            o.runtime_ns,
            o.noise_ns as i64,
            o.noise_us_floor as i64,
            o.max_period_noise_ns as i64,
            o.noise_us_by_period as i64,
            o.own_ns,
            o.start_ns,
            o.elapsed_ns,
            i64::from(o.signalled),
            o.hits as i64,
            e.map_or(-1, |e| e.cycle as i64),
            e.map_or(0, |e| e.at_ns),
            e.map_or(0, |e| e.latency_ns),
        ]);
    }
}

impl NoiseSink for NoiseTee<'_> {
    fn started(&mut self, start_ns: i64) {
        self.send(&[START, start_ns]);
    }
    #[inline(always)]
    fn noise(&mut self, ns: u64, at_ns: i64) {
        self.send(&[NOISE, at_ns, ns as i64]);
    }
    fn ended(&mut self, _: i64) {}
}

fn outcome_from_words(w: &[i64; 14]) -> NoiseOutcome {
    NoiseOutcome {
        iterations: w[0] as u64,
        runtime_ns: w[1],
        noise_ns: w[2] as u64,
        noise_us_floor: w[3] as u64,
        max_period_noise_ns: w[4] as u64,
        noise_us_by_period: w[5] as u64,
        own_ns: w[6],
        start_ns: w[7],
        elapsed_ns: w[8],
        signalled: w[9] != 0,
        hits: w[10] as u64,
        stopped_at: (w[11] >= 0).then_some(Exceedance { cycle: w[11] as u64, at_ns: w[12], latency_ns: w[13] }),
    }
}

/// A worker's busy loop replayed into `sink` (rtlab's recorder and series) as its records
/// arrive: the worker's outcome, or `None` when it ended without one.
pub fn noise_from(worker: &Worker, sink: &mut impl NoiseSink) -> Option<NoiseOutcome> {
    let mut tag = [0i64];
    let read = |out: &mut [i64]| loop {
        match worker.read(out) {
            Read::Full => return true,
            Read::Interrupted => continue,
            Read::Ended => return false,
        }
    };
    while read(&mut tag) {
        match tag[0] {
            START => {
                let mut w = [0i64];
                if !read(&mut w) {
                    return None;
                }
                sink.started(w[0]);
            }
            NOISE => {
                let mut w = [0i64; 2];
                if !read(&mut w) {
                    return None;
                }
                sink.noise(w[1] as u64, w[0]);
            }
            END => {
                let mut w = [0i64; 14];
                if !read(&mut w) {
                    return None;
                }
                let o = outcome_from_words(&w);
                sink.ended(o.elapsed_ns);
                return Some(o);
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::Layout;
    use crate::measure::probe::{run_loop, AbsSleep};
    use crate::measure::stats::{ExceedLog, Live, Recorder};
    use crate::rt::clock::ClockId;

    #[test]
    fn loop_parameters_cross_to_a_worker_unchanged() {
        let p = LoopParams {
            interval_ns: 1_000_000,
            loops: u64::MAX,
            warmup_cycles: 3,
            break_ns: i64::MAX,
            start_at: Some(-5),
            origin_ns: None,
            cyclictest_us: true,
        };
        let q = params_from_words(&params_to_words(&p));
        assert_eq!(
            (q.interval_ns, q.loops, q.warmup_cycles, q.break_ns, q.start_at, q.origin_ns, q.cyclictest_us),
            (p.interval_ns, p.loops, p.warmup_cycles, p.break_ns, p.start_at, p.origin_ns, p.cyclictest_us)
        );
    }

    #[test]
    fn rtlabs_loop_records_exactly_the_wakeups_of_the_worker_process() {
        // The worker keeps its own statistics (its copy of the cells) and sends them at the end;
        // rtlab's replayed loop must give the same count, minimum, maximum and sum.
        let live = Live::new(Layout::DEFAULT);
        let mut child_rec = Recorder::with_logs(&live, ExceedLog::off(), ExceedLog::off(), None);
        let worker = crate::rt::worker::fork("rtlabrelay/0", false, |rx, tx| {
            let Some(params) = receive_params(rx) else { return };
            let gone = AtomicBool::new(false);
            let mut tee = Tee { inner: AbsSleep(ClockId::MONOTONIC), fd: tx, gone: &gone };
            run_loop(&mut tee, &params, &mut child_rec, &gone);
            let s = child_rec.finish();
            write_words(tx, &[s.cycles as i64, s.min_ns.unwrap_or(-1), s.max_ns.unwrap_or(-1), s.sum_ns as i64]);
        })
        .unwrap();
        let params = LoopParams {
            interval_ns: 200_000,
            loops: 50,
            warmup_cycles: 2,
            break_ns: i64::MAX,
            start_at: None,
            origin_ns: None,
            cyclictest_us: false,
        };
        assert!(worker.send(&params_to_words(&params)));
        let stop = AtomicBool::new(false);
        let mut replay = Replay { worker: &worker, stop: &stop, ended: false };
        let mut rec = Recorder::with_logs(&live, ExceedLog::off(), ExceedLog::off(), None);
        let out = run_loop(&mut replay, &params, &mut rec, &stop);
        let s = rec.finish();
        let mut theirs = [0i64; 4];
        assert_eq!(worker.read(&mut theirs), Read::Full);
        assert_eq!(theirs, [s.cycles as i64, s.min_ns.unwrap(), s.max_ns.unwrap(), s.sum_ns as i64]);
        assert_eq!((s.cycles, out.iterations, replay.ended), (50, 52, false));
    }

    #[test]
    fn a_workers_busy_loop_replayed_in_rtlab_gives_its_noises_series_and_outcome() {
        use crate::measure::noise::{noise_loop_into, Monotonic, NoiseParams, Scale, Series};
        let flags = crate::rt::worker::SharedFlags::new().unwrap();
        let p = NoiseParams {
            threshold_ticks: 1_000,
            scale: Scale::NS,
            runtime_ns: 1_000_000,
            period_ns: 1_000_000,
            until_ns: None,
            watch_signals: false,
            stop_above: Default::default(),
            edge_ns: 1_000,
        };
        let worker = crate::rt::worker::fork("rtlabnoise/0", false, |rx, tx| {
            let mut until = [0i64];
            if read_words(rx, &mut until) != Read::Full {
                return;
            }
            let q = NoiseParams { until_ns: Some(until[0]), ..p };
            let mut tee = NoiseTee { fd: tx, stop: flags.get(0) };
            let out = noise_loop_into(&Monotonic, &q, &mut tee, flags.get(0), flags.get(1));
            tee.end(&out);
        })
        .unwrap();
        let until = crate::rt::clock::now(ClockId::MONOTONIC) + 100_000_000;
        assert!(worker.send(&[until]));
        let live = Live::new(Layout::DEFAULT);
        let mut series = Series::new();
        let mut rec = Recorder::with_logs(&live, ExceedLog::off(), ExceedLog::off(), None);
        let out = noise_from(&worker, &mut crate::measure::noise::Recording { rec: &mut rec, series: &mut series })
            .expect("the worker's outcome");
        let s = rec.finish();
        assert!(out.iterations > 0 && out.start_ns + out.elapsed_ns >= until, "it ran to its end: {out:?}");
        assert_eq!(s.cycles, series.points.iter().map(|p| u64::from(p.1)).sum::<u64>(), "each noise in the series too");
        assert_eq!(s.sum_ns as u64, out.noise_ns, "every noise the worker counted reached rtlab");
    }

    #[test]
    fn a_worker_that_dies_mid_run_ends_the_loop_and_the_run() {
        let worker = crate::rt::worker::fork("rtlabrelay/1", false, |_, tx| {
            write_words(tx, &[0]);
        })
        .unwrap();
        let stop = AtomicBool::new(false);
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::with_logs(&live, ExceedLog::off(), ExceedLog::off(), None);
        let params = LoopParams {
            interval_ns: 1_000_000,
            loops: 10,
            warmup_cycles: 0,
            break_ns: i64::MAX,
            start_at: None,
            origin_ns: None,
            cyclictest_us: false,
        };
        let mut replay = Replay { worker: &worker, stop: &stop, ended: false };
        run_loop(&mut replay, &params, &mut rec, &stop);
        assert!(replay.ended && stop.load(Relaxed));
        assert_eq!(rec.finish().cycles, 0);
    }
}
