//! The noise loop: a busy thread reads a cheap clock back to back; any gap between two reads
//! longer than the threshold is time the system took from it (an interrupt, another task, the
//! hypervisor). Every such gap is a sample for the same [`Recorder`] as a wakeup latency — the
//! histogram that drops nothing, exact sums, the samples ring — and its end is dated on
//! CLOCK_MONOTONIC so that trace events can be matched with it.

use super::stats::Recorder;
use crate::rt::clock::{self, ClockId};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// What the busy loop reads: a counter that only moves forward, and CLOCK_MONOTONIC for
/// dating what it finds (read only after a gap).
pub trait Counter {
    /// The counter now (ticks).
    fn ticks(&self) -> u64;
    /// CLOCK_MONOTONIC now (ns).
    fn mono_ns(&self) -> i64;
    /// Sleeps until `ns` on CLOCK_MONOTONIC (the idle part of a duty cycle); a stop cuts it short.
    fn sleep_until(&self, ns: i64);
}

/// The CPU's own counter (x86's TSC, aarch64's CNTVCT_EL0: `rt::counter`).
#[derive(Clone, Copy, Debug)]
pub struct Hardware;
impl Counter for Hardware {
    #[inline(always)]
    fn ticks(&self) -> u64 {
        crate::rt::counter::read()
    }
    fn mono_ns(&self) -> i64 {
        clock::now(ClockId::MONOTONIC)
    }
    fn sleep_until(&self, ns: i64) {
        clock::sleep_until(ClockId::MONOTONIC, ns)
    }
}

/// `clock_gettime(CLOCK_MONOTONIC)` through the vDSO, where the TSC cannot be trusted.
#[derive(Clone, Copy, Debug)]
pub struct Monotonic;
impl Counter for Monotonic {
    #[inline(always)]
    fn ticks(&self) -> u64 {
        clock::now(ClockId::MONOTONIC) as u64
    }
    fn mono_ns(&self) -> i64 {
        clock::now(ClockId::MONOTONIC)
    }
    fn sleep_until(&self, ns: i64) {
        clock::sleep_until(ClockId::MONOTONIC, ns)
    }
}

/// Ticks to nanoseconds: `ticks` of the counter took `ns` of CLOCK_MONOTONIC in a calibration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scale {
    ticks: u64,
    ns: u64,
}

impl Scale {
    /// A counter that counts nanoseconds.
    pub const NS: Scale = Scale { ticks: 1, ns: 1 };

    /// The scale of a calibration: `ticks` in `ns` (both positive).
    pub fn new(ticks: u64, ns: u64) -> Scale {
        Scale { ticks: ticks.max(1), ns: ns.max(1) }
    }

    /// `t` ticks in ns.
    pub fn ns(self, t: u64) -> u64 {
        (t as u128 * self.ns as u128 / self.ticks as u128).min(u64::MAX as u128) as u64
    }

    /// `ns` in ticks, rounded up (a gap of at least `ns` is at least this many ticks).
    pub fn ticks(self, ns: u64) -> u64 {
        (ns as u128 * self.ticks as u128).div_ceil(self.ns as u128).min(u64::MAX as u128) as u64
    }

    /// The counter's rate (MHz).
    pub fn mhz(self) -> f64 {
        self.ticks as f64 * 1000.0 / self.ns as f64
    }
}

/// Points a noise series keeps at most; a longer run merges neighbours (doubling the interval).
pub const SERIES_POINTS: usize = 3600;

/// Noise over time: total noise and count per interval since the start, in memory allocated
/// before measuring (a run longer than [`SERIES_POINTS`] intervals coarsens it in place).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Series {
    /// Interval (ns): 1 s, doubled each time the run outgrows the points.
    pub interval_ns: i64,
    /// Per interval: noise (ns) and noises.
    pub points: Vec<(u64, u32)>,
    /// Intervals used so far.
    pub len: usize,
}

impl Series {
    /// An empty series of 1 s intervals.
    pub fn new() -> Series {
        Series { interval_ns: 1_000_000_000, points: vec![(0, 0); SERIES_POINTS], len: 0 }
    }

    /// Adds a gap of `ns` that ended `at_ns` after the start.
    #[inline]
    pub fn add(&mut self, at_ns: i64, ns: u64) {
        let mut i = (at_ns.max(0) / self.interval_ns) as usize;
        while i >= self.points.len() {
            self.coarsen();
            i = (at_ns.max(0) / self.interval_ns) as usize;
        }
        let p = &mut self.points[i];
        p.0 += ns;
        p.1 = p.1.saturating_add(1);
        self.len = self.len.max(i + 1);
    }

    /// Marks the run as lasting `at_ns` (its last interval exists even without noise).
    pub fn extend_to(&mut self, at_ns: i64) {
        let mut i = (at_ns.max(1) - 1) / self.interval_ns;
        while i as usize >= self.points.len() {
            self.coarsen();
            i = (at_ns.max(1) - 1) / self.interval_ns;
        }
        self.len = self.len.max(i as usize + 1);
    }

    fn coarsen(&mut self) {
        let n = self.points.len();
        for i in 0..n / 2 {
            let (a, b) = (self.points[2 * i], self.points[2 * i + 1]);
            self.points[i] = (a.0 + b.0, a.1.saturating_add(b.1));
        }
        for p in &mut self.points[n / 2..] {
            *p = (0, 0);
        }
        self.interval_ns *= 2;
        self.len = self.len.div_ceil(2);
    }
}

impl Default for Series {
    fn default() -> Self {
        Series::new()
    }
}

/// What the loop is asked to do.
#[derive(Clone, Copy, Debug)]
pub struct NoiseParams {
    /// A gap of at least this many ticks is noise.
    pub threshold_ticks: u64,
    /// The counter's scale.
    pub scale: Scale,
    /// Busy part of each period (ns); equal to `period_ns` for a loop that never sleeps.
    pub runtime_ns: i64,
    /// Duty-cycle period (ns).
    pub period_ns: i64,
    /// Stop at this CLOCK_MONOTONIC time (ns), if set: the loop ends itself even when the
    /// thread that would tell it to cannot run.
    pub until_ns: Option<i64>,
    /// Every ~1 ms, look for a pending SIGINT/SIGTERM (when every CPU is busy at an RT
    /// priority the thread that handles signals may not run for a second).
    pub watch_signals: bool,
    /// Stop at the first noise above this (ns; rtla osnoise's `-s`), and at the first period
    /// whose noise adds up above the second (`-S`): `stop` is set for every thread.
    pub stop_above: StopAbove,
    /// What `noise_us_floor` floors each gap to (ns): 1 µs, or rtla osnoise hist's `-b`
    /// bucket, whose lower edge is the value rtla sums.
    pub edge_ns: u64,
}

/// rtla osnoise's stop thresholds (ns; `None`: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopAbove {
    /// A single noise above this stops the run.
    pub single_ns: Option<u64>,
    /// A period whose noises add up above this stops the run.
    pub total_ns: Option<u64>,
    /// rtla's `continue`: a crossing is counted (`NoiseOutcome::hits`) and the run goes on.
    pub continues: bool,
}

/// What the loop saw besides the gaps it recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoiseOutcome {
    /// Clock reads (loop iterations).
    pub iterations: u64,
    /// Time spent in the busy loop (ns): what the noise is a share of.
    pub runtime_ns: i64,
    /// Σ of the noises (ns).
    pub noise_ns: u64,
    /// Σ ⌊gap / edge⌋ · edge over the noises, in µs (oslat's average counts every gap in whole
    /// µs; rtla osnoise hist's every gap at its bucket's lower edge).
    pub noise_us_floor: u64,
    /// The largest noise of one period (ns): what rtla osnoise's sample of that period says.
    pub max_period_noise_ns: u64,
    /// Σ over the periods of ⌊the period's noise / 1 µs⌋: rtla osnoise top's Noise, which
    /// adds its tracer's per-period samples in whole µs.
    pub noise_us_by_period: u64,
    /// Time spent recording the noises (ns): kept out of both the noise and the runtime.
    pub own_ns: i64,
    /// Start on CLOCK_MONOTONIC (ns): gaps are dated from it.
    pub start_ns: i64,
    /// Time from the start to the end of the loop (ns): what the series covers.
    pub elapsed_ns: i64,
    /// It stopped because of a SIGINT/SIGTERM it saw pending.
    pub signalled: bool,
    /// The noise that crossed a stop threshold, if one did: where and how large (for a
    /// period's total: the total).
    pub stopped_at: Option<crate::measure::stats::Exceedance>,
    /// Crossings of a stop threshold (with `continue`, every one; otherwise the one that
    /// stopped the loop).
    pub hits: u64,
}

impl NoiseOutcome {
    /// Nothing seen yet, the loop starting at `start_ns`.
    fn starting(start_ns: i64) -> NoiseOutcome {
        NoiseOutcome {
            iterations: 0,
            runtime_ns: 0,
            noise_ns: 0,
            noise_us_floor: 0,
            max_period_noise_ns: 0,
            noise_us_by_period: 0,
            own_ns: 0,
            start_ns,
            elapsed_ns: 0,
            signalled: false,
            stopped_at: None,
            hits: 0,
        }
    }
}

/// The noises so far, for the stop thresholds: how many, and the period the latest fell in
/// with what its noises add up to.
#[derive(Debug, Default)]
struct Gaps {
    count: u64,
    period: i64,
    period_noise: u64,
    /// Σ ⌊noise / 1 µs⌋ of the periods before `period`.
    closed_us: u64,
    /// The largest `period_noise` so far.
    max_period_ns: u64,
}

impl Gaps {
    /// Counts a noise of `ns` at `at` (ns since the start); the exceedance when it crosses one
    /// of the stop thresholds (a single noise above `-s`, its period's total above `-S`).
    #[inline(always)]
    fn crossed(&mut self, p: &NoiseParams, at: i64, ns: u64) -> Option<crate::measure::stats::Exceedance> {
        self.count += 1;
        let period = at / p.period_ns.max(1);
        if period != self.period {
            self.closed_us += self.period_noise / 1000;
            (self.period, self.period_noise) = (period, 0);
        }
        self.period_noise += ns;
        self.max_period_ns = self.max_period_ns.max(self.period_noise);
        let v = match p.stop_above {
            StopAbove { single_ns: Some(s), .. } if ns > s => ns,
            StopAbove { total_ns: Some(t), .. } if self.period_noise > t => self.period_noise,
            _ => return None,
        };
        Some(crate::measure::stats::Exceedance { cycle: self.count - 1, at_ns: at, latency_ns: v as i64 })
    }
}

/// The counter now and the count at which the busy part of the window beginning at
/// `window_start` ends (`u64::MAX`: never, a loop without a duty cycle or an end).
fn window_end<C: Counter>(c: &C, p: &NoiseParams, duty: bool, window_start: i64) -> (u64, u64) {
    let now_mono = c.mono_ns();
    let mut end_mono = if duty { window_start + p.runtime_ns } else { i64::MAX };
    if let Some(u) = p.until_ns {
        end_mono = end_mono.min(u);
    }
    let first = c.ticks();
    let end_ticks = if end_mono == i64::MAX {
        u64::MAX
    } else {
        first.saturating_add(p.scale.ticks((end_mono - now_mono).max(0) as u64))
    };
    (first, end_ticks)
}

/// Where the busy loop's noises go: rtlab's recorder and series, or a worker process's pipe.
pub trait NoiseSink {
    /// The loop starts at `start_ns` (CLOCK_MONOTONIC).
    fn started(&mut self, start_ns: i64);
    /// A noise of `ns` at `at_ns` since the start.
    fn noise(&mut self, ns: u64, at_ns: i64);
    /// The loop ended `elapsed_ns` after its start.
    fn ended(&mut self, elapsed_ns: i64);
}

/// rtlab's own sink: each noise to the recorder (statistics, logs, samples) and the series.
pub struct Recording<'r, 'a> {
    /// The thread's recorder.
    pub rec: &'r mut Recorder<'a>,
    /// The thread's noise series.
    pub series: &'r mut Series,
}

impl NoiseSink for Recording<'_, '_> {
    fn started(&mut self, start_ns: i64) {
        self.rec.started(start_ns);
    }
    #[inline(always)]
    fn noise(&mut self, ns: u64, at_ns: i64) {
        self.rec.record(ns as i64, at_ns, 0);
        self.series.add(at_ns, ns);
    }
    fn ended(&mut self, elapsed_ns: i64) {
        self.series.extend_to(elapsed_ns);
    }
}

/// [`noise_loop_into`] recording into `rec` and `series`.
pub fn noise_loop<C: Counter>(
    c: &C,
    p: &NoiseParams,
    rec: &mut Recorder<'_>,
    series: &mut Series,
    stop: &AtomicBool,
    interrupt: &AtomicBool,
) -> NoiseOutcome {
    noise_loop_into(c, p, &mut Recording { rec, series }, stop, interrupt)
}

/// Runs the busy loop until `until_ns`, `stop` or `interrupt` (checked every 1024 reads), or
/// a pending stop signal with `watch_signals`. Per read: one counter read, a subtraction, two
/// compares; a gap adds a clock read and the sink's work.
#[inline(never)]
pub fn noise_loop_into<C: Counter, S: NoiseSink>(
    c: &C,
    p: &NoiseParams,
    sink: &mut S,
    stop: &AtomicBool,
    interrupt: &AtomicBool,
) -> NoiseOutcome {
    let start = c.mono_ns();
    sink.started(start);
    let threshold = p.threshold_ticks;
    let duty = p.runtime_ns < p.period_ns;
    let mut out = NoiseOutcome::starting(start);
    let mut gaps = Gaps::default();
    let mut window_start = start;
    // Signals are looked for about once a millisecond: 2^15 reads of a loop of 20-40 ns.
    let signal_mask: u64 = if p.watch_signals { (1 << 15) - 1 } else { u64::MAX };
    'run: loop {
        let (first, end_ticks) = window_end(c, p, duty, window_start);
        let mut last = first;
        let mut ended = false;
        // Ticks spent recording gaps in this window: the loop's own time, neither noise nor
        // runtime.
        let mut own = 0u64;
        loop {
            let t = c.ticks();
            let d = t.wrapping_sub(last);
            last = t;
            out.iterations += 1;
            if d >= threshold {
                let at = c.mono_ns() - start;
                let ns = p.scale.ns(d);
                sink.noise(ns, at);
                out.noise_ns += ns;
                out.noise_us_floor += ns / p.edge_ns.max(1) * p.edge_ns.max(1) / 1000;
                if let Some(e) = gaps.crossed(p, at, ns) {
                    out.hits += 1;
                    if !p.stop_above.continues {
                        out.stopped_at = Some(e);
                        stop.store(true, Relaxed);
                        ended = true;
                        break;
                    }
                }
                // The next gap is measured from here: recording one must not read as another.
                last = c.ticks();
                own += last.wrapping_sub(t);
            }
            if t >= end_ticks {
                break;
            }
            if out.iterations & 1023 == 0 {
                if stop.load(Relaxed) || interrupt.load(Relaxed) {
                    ended = true;
                    break;
                }
                if out.iterations & signal_mask == 0 && crate::rt::signals::stop_signal_pending() {
                    out.signalled = true;
                    ended = true;
                    break;
                }
            }
        }
        out.runtime_ns += p.scale.ns((last - first).saturating_sub(own)) as i64;
        out.own_ns += p.scale.ns(own) as i64;
        if ended || p.until_ns.is_some_and(|u| c.mono_ns() >= u) || !duty {
            break 'run;
        }
        window_start += p.period_ns;
        c.sleep_until(window_start);
        if stop.load(Relaxed) || interrupt.load(Relaxed) {
            break 'run;
        }
        if p.until_ns.is_some_and(|u| window_start >= u) {
            break 'run;
        }
    }
    out.elapsed_ns = c.mono_ns() - start;
    out.max_period_noise_ns = gaps.max_period_ns;
    out.noise_us_by_period = gaps.closed_us + gaps.period_noise / 1000;
    sink.ended(out.elapsed_ns);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::Layout;
    use crate::measure::stats::Live;
    use std::cell::Cell;

    /// A scripted counter: ticks of 0.5 ns (2 GHz); each read advances by `step` ticks except
    /// the reads listed in `gaps` (read index → extra ticks); sleeping jumps the clock.
    struct Script {
        t: Cell<u64>,
        reads: Cell<u64>,
        step: u64,
        gaps: Vec<(u64, u64)>,
        /// Ticks a CLOCK_MONOTONIC read (and the recording around it) costs.
        mono_cost: u64,
    }

    impl Counter for Script {
        fn ticks(&self) -> u64 {
            let n = self.reads.get();
            self.reads.set(n + 1);
            let extra = self.gaps.iter().find(|g| g.0 == n).map_or(0, |g| g.1);
            self.t.set(self.t.get() + self.step + extra);
            self.t.get()
        }
        fn mono_ns(&self) -> i64 {
            self.t.set(self.t.get() + self.mono_cost);
            (self.t.get() / 2) as i64
        }
        fn sleep_until(&self, ns: i64) {
            self.t.set(self.t.get().max(ns as u64 * 2));
        }
    }

    fn params(threshold_ns: u64, runtime_ns: i64, period_ns: i64, until_ns: i64) -> NoiseParams {
        let scale = Scale::new(2, 1);
        NoiseParams {
            threshold_ticks: scale.ticks(threshold_ns),
            scale,
            runtime_ns,
            period_ns,
            until_ns: Some(until_ns),
            watch_signals: false,
            stop_above: StopAbove::default(),
            edge_ns: 1_000,
        }
    }

    #[test]
    fn a_single_noise_or_a_periods_total_above_its_limit_stops_every_thread() {
        let script = || Script {
            t: Cell::new(0),
            reads: Cell::new(0),
            step: 40,
            // 3 µs, 2 µs, then 6 µs of noise in the first period of 1 ms.
            gaps: vec![(10, 6_000), (20, 4_000), (30, 12_000)],
            mono_cost: 0,
        };
        let run = |stop_above: StopAbove| {
            let live = Live::new(Layout::DEFAULT);
            let (mut rec, mut series, stop) = (Recorder::new(&live, None), Series::new(), AtomicBool::new(false));
            let p = NoiseParams { stop_above, ..params(1_000, 1_000_000, 1_000_000, 900_000) };
            let out = noise_loop(&script(), &p, &mut rec, &mut series, &stop, &stop);
            (out.stopped_at.map(|e| (e.cycle, e.latency_ns)), stop.load(Relaxed))
        };
        // -s 5 µs: the third noise (6 µs plus its 20 ns read) is the first above.
        assert_eq!(
            run(StopAbove { single_ns: Some(5_000), total_ns: None, continues: false }),
            (Some((2, 6_020)), true)
        );
        // -S 5 µs: the second noise brings the period's total to 5040 ns.
        assert_eq!(
            run(StopAbove { single_ns: None, total_ns: Some(5_000), continues: false }),
            (Some((1, 5_040)), true)
        );
        assert_eq!(run(StopAbove::default()), (None, false));
    }

    #[test]
    fn with_continue_every_crossing_is_counted_and_the_loop_goes_on() {
        let hits = |stop_above: StopAbove| {
            let script = Script {
                t: Cell::new(0),
                reads: Cell::new(0),
                step: 40,
                gaps: vec![(10, 6_000), (20, 4_000), (30, 12_000)],
                mono_cost: 0,
            };
            let live = Live::new(Layout::DEFAULT);
            let (mut rec, mut series, stop) = (Recorder::new(&live, None), Series::new(), AtomicBool::new(false));
            let p = NoiseParams { stop_above, ..params(1_000, 1_000_000, 1_000_000, 900_000) };
            let out = noise_loop(&script, &p, &mut rec, &mut series, &stop, &stop);
            (out.hits, out.stopped_at.is_some(), stop.load(Relaxed))
        };
        // Noises of 3.02, 2.02 and 6.02 µs in one period: one above 5 µs; the period's total
        // crosses 5 µs at the second and stays above at the third.
        assert_eq!(hits(StopAbove { single_ns: Some(5_000), total_ns: None, continues: true }), (1, false, false));
        assert_eq!(hits(StopAbove { single_ns: None, total_ns: Some(5_000), continues: true }), (2, false, false));
        assert_eq!(hits(StopAbove { single_ns: Some(5_000), total_ns: None, continues: false }), (1, true, true));
    }

    #[test]
    fn every_gap_of_at_least_the_threshold_is_recorded_with_its_exact_length_and_time() {
        // 20 ns per read; read 100 takes 5 µs more, read 200 980 ns more (a gap of exactly
        // the threshold), read 300 979.5 ns more (a gap half a nanosecond short of it).
        let c = Script {
            t: Cell::new(0),
            reads: Cell::new(0),
            step: 40,
            gaps: vec![(100, 10_000), (200, 2 * 980), (300, 2 * 979 + 1)],
            mono_cost: 0,
        };
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        let mut series = Series::new();
        let stop = AtomicBool::new(false);
        let out = noise_loop(&c, &params(1_000, 10, 10, 20_000), &mut rec, &mut series, &stop, &stop);
        let s = rec.finish();
        // 5020 ns and 1000 ns are noises; 999.5 ns (1999 ticks) is not.
        assert_eq!(s.cycles, 2);
        assert_eq!((s.max_ns, s.min_ns), (Some(5_020), Some(1_000)));
        assert_eq!(out.noise_ns, 6_020);
        assert_eq!(out.noise_us_floor, 5 + 1);
        // The first gap ended at read 100: 101 reads of 20 ns plus 5 µs after the start.
        assert_eq!(s.max_at_ns, Some(101 * 20 + 5_000));
        // The loop ends at the first read at or past 20 µs: read 653, at 40079 ticks; it
        // began at read 0 (40 ticks). Reads 101 and 201 resume the loop after recording a gap
        // (not iterations); those two reads (80 ticks) are the loop's own time, not runtime:
        // 40039 − 80 ticks are 19979.5 ns, rounded down.
        assert_eq!((out.iterations, out.runtime_ns, out.own_ns), (651, 19_979, 40));
        assert_eq!(series.len, 1);
        assert_eq!(series.points[0], (6_020, 2));
    }

    #[test]
    fn a_duty_cycle_measures_only_the_busy_part_of_each_period() {
        // 1 ms busy every 4 ms for 10 ms: three windows (0-1, 4-5, 8-9 ms); the sleeps are not noise.
        let c = Script { t: Cell::new(0), reads: Cell::new(0), step: 40, gaps: vec![], mono_cost: 0 };
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        let mut series = Series::new();
        let stop = AtomicBool::new(false);
        let out = noise_loop(&c, &params(1_000, 1_000_000, 4_000_000, 10_000_000), &mut rec, &mut series, &stop, &stop);
        assert_eq!(rec.finish().cycles, 0, "no gap: the sleeps between windows are not noise");
        assert_eq!((out.runtime_ns, out.iterations), (3_000_000, 3 * 50_000));
    }

    #[test]
    fn each_periods_noise_is_summed_apart_as_rtlas_per_period_samples_are() {
        // 20 ns a read, periods of 100 µs back to back: gaps of 2.52 and 1.72 µs in the first
        // period (reads 1000 and 2000), 3.92 µs in the second (read 8000, at about 164 µs).
        let gaps = vec![(1_000, 5_000), (2_000, 3_400), (8_000, 7_800)];
        let run = |edge_ns: u64| {
            let c = Script { t: Cell::new(0), reads: Cell::new(0), step: 40, gaps: gaps.clone(), mono_cost: 0 };
            let live = Live::new(Layout::DEFAULT);
            let (mut rec, mut series, stop) = (Recorder::new(&live, None), Series::new(), AtomicBool::new(false));
            let p = NoiseParams { edge_ns, ..params(1_000, 100_000, 100_000, 250_000) };
            noise_loop(&c, &p, &mut rec, &mut series, &stop, &stop)
        };
        let out = run(1_000);
        assert_eq!(out.noise_ns, 2_520 + 1_720 + 3_920);
        // rtla's Max Noise is one period's noise (4.24 µs), not the run's or a second's (8.16).
        assert_eq!(out.max_period_noise_ns, 4_240);
        // Its Noise adds whole µs per period: ⌊4.24⌋ + ⌊3.92⌋ = 7, where ⌊8.16⌋ = 8.
        assert_eq!(out.noise_us_by_period, 7);
        assert_eq!(out.noise_us_floor, 2 + 1 + 3, "1 µs edges: every gap floored to whole µs");
        // rtla osnoise hist -b 2: every noise at its 2 µs bucket's lower edge: 2 + 0 + 2.
        assert_eq!(run(2_000).noise_us_floor, 4);
    }

    #[test]
    fn recording_a_gap_is_neither_the_next_gap_nor_runtime() {
        // 10 ns a read, a 30 ns threshold, one 100 ns gap at read 100; dating and recording a
        // gap costs 62 ns (124 ticks), more than the threshold.
        let c = Script { t: Cell::new(0), reads: Cell::new(0), step: 20, gaps: vec![(100, 180)], mono_cost: 124 };
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        let mut series = Series::new();
        let stop = AtomicBool::new(false);
        let out = noise_loop(&c, &params(30, 10, 10, 20_000), &mut rec, &mut series, &stop, &stop);
        let s = rec.finish();
        assert_eq!(s.cycles, 1, "one gap, not one per read after it");
        assert_eq!(s.max_ns, Some(100));
        // The recording and the read that resumes the loop: 124 + 20 ticks.
        assert_eq!(out.own_ns, 72, "the recording, timed by the counter");
        // Runtime: the loop's reads after its first, 10 ns each, and the 90 ns of the gap beyond
        // its own read; the recording is not in it.
        assert_eq!(out.runtime_ns as u64, out.iterations * 10 + 90);
    }

    #[test]
    fn a_long_run_coarsens_its_series_without_losing_noise() {
        let mut s = Series::new();
        s.add(0, 5);
        s.add(3_599_999_999_999, 7);
        s.add(3_600_000_000_000, 11);
        assert_eq!(s.interval_ns, 2_000_000_000);
        assert_eq!(s.points[0], (5, 1));
        assert_eq!(s.points[1799], (7, 1));
        assert_eq!(s.points[1800], (11, 1));
        assert_eq!(s.len, 1801);
        assert_eq!(s.points.iter().map(|p| p.0).sum::<u64>(), 23);
    }

    #[test]
    fn scales_convert_both_ways_and_round_thresholds_up() {
        let s = Scale::new(2_445_402, 1_000_000);
        assert_eq!(s.ns(2_445_402), 1_000_000);
        assert_eq!(s.ticks(1_000), 2_446);
        assert!((s.mhz() - 2445.402).abs() < 1e-9);
        assert_eq!(Scale::NS.ns(123), 123);
    }
}
