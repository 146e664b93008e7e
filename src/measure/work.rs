//! Work per period: what a periodic task does after it wakes (a calibrated amount of
//! computation, or busy wall-clock time), and the figures of a task that works — response
//! time (completion − release), run time (completion − wakeup), slack (deadline − response),
//! deadline misses, the longest run of consecutive misses and the worst number of misses in
//! any window of K consecutive releases (the weakly-hard "at most m in any k").
//!
//! A release is one period of the absolute schedule. A release that passes while the task is
//! still working on an earlier one is skipped (the task never starts it; counted by the one
//! missed-period rule, [`super::probe::missed_periods`]) and is a miss: no job answered it.
//! A job that completes after its deadline is a miss too.

use super::histogram::Layout;
use super::stats::{Live, Recorder, Summary};
use crate::rt::clock::{self, ClockId};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};

/// What the task's work is fixed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkKind {
    /// A fixed amount of computation, calibrated at start to take the asked time on an
    /// undisturbed CPU (rt-app's `run`): preemption, interrupts and slower clocks lengthen it.
    Fixed,
    /// Busy wall-clock time from the wakeup (rt-app's `runtime`): a preempted task catches up
    /// on nothing, it just ends at the same instant.
    Time,
    /// Not done by rtlab: the work of a watched program's thread (`rtlab watch`), seen in the
    /// kernel's events.
    #[value(skip)]
    Observed,
}

/// The deadline of a task that has none (`rtlab watch` of a thread that is not periodic,
/// without `--deadline`): no response misses it.
pub const NO_DEADLINE: i64 = i64::MAX;

/// The most work a period may ask (ns): a longer job is no periodic real-time task, a stop
/// waits for the job under way, and calibration times the work a dozen times.
pub const MAX_WORK_NS: i64 = 100_000_000;

/// Checks an amount of work (ns) against [`MAX_WORK_NS`]; the error names `what`.
pub fn check_amount(what: &str, ns: i64) -> Result<i64, String> {
    if ns > MAX_WORK_NS {
        return Err(format!(
            "{what}: {} ms of work per period is more than the 100 ms rtlab runs (a stop waits for the job under way); \
             give at most 100ms",
            ns / 1_000_000
        ));
    }
    Ok(ns)
}

/// The windows `--miss-window` counts misses in when not given: 1000 consecutive releases.
pub const DEFAULT_MISS_WINDOW: u32 = 1000;
/// The largest `--miss-window` (the window is a bit set of this many releases).
pub const MAX_MISS_WINDOW: u32 = 1_000_000;

/// One task's work per period and its deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkSpec {
    /// What the amount is fixed in.
    pub kind: WorkKind,
    /// The work's duration on an undisturbed CPU (ns, > 0).
    pub amount_ns: i64,
    /// Deadline relative to the release (ns, > 0; shorter or longer than the period).
    pub deadline_ns: i64,
    /// K of "the worst number of misses in any K consecutive releases".
    pub miss_window: u32,
}

/// One unit of fixed work: a dependent shift, xor and multiply (a mixing step) that the
/// compiler can neither remove, vectorize nor fold into fewer steps (an affine step alone
/// would be: k of them compose into one).
#[inline(always)]
fn unit(x: u64) -> u64 {
    (x ^ (x >> 31)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Does `units` units of fixed work.
#[inline(never)]
pub fn spin(units: u64) {
    let mut x = std::hint::black_box(units);
    for _ in 0..units {
        x = unit(x);
    }
    std::hint::black_box(x);
}

/// How the fixed work was sized: measured on the measuring thread itself, at its policy and
/// on its CPU, before the schedule starts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Calibration {
    /// Units of work per period.
    pub units: u64,
    /// Picoseconds one unit took (the fastest of the calibration's trials).
    pub ps_per_unit: u64,
    /// The calibrated amount run once more and timed (fastest of 5, ns): how close the work
    /// comes to the asked time on an undisturbed CPU.
    pub measured_ns: i64,
    /// The CPU the calibration ran on.
    pub cpu: Option<usize>,
}

/// How long calibration keeps the CPU busy before it times anything (ns).
pub const CALIBRATION_WARMUP_NS: i64 = 100_000_000;

/// Sizes `target_ns` of fixed work on the calling thread: finds the fastest rate of [`spin`]
/// over several trials of about 1 ms (an interrupt lengthens a trial, never shortens it), sizes
/// the work, then times the sized work itself and corrects once for what short trials miss.
pub fn calibrate(clock: ClockId, target_ns: i64, cpu: Option<usize>, stop: &AtomicBool) -> Calibration {
    let stopping = || stop.load(Relaxed);
    let timed = |units: u64| {
        let t0 = clock::now(clock);
        spin(units);
        (clock::now(clock) - t0).max(1)
    };
    let mut units = 1_000u64;
    while timed(units) < 1_000_000 && units < 1 << 40 && !stopping() {
        units *= 2;
    }
    // Busy for a while first: a CPU that was idle runs slower until its clock ramps up, and
    // the work must be sized at the speed a busy task gets.
    let warm_until = clock::now(clock) + CALIBRATION_WARMUP_NS;
    while clock::now(clock) < warm_until && !stopping() {
        spin(units);
    }
    // A stop during set-up is honoured between timings (each at most the work's length).
    let fastest = (0..15).take_while(|_| !stopping()).map(|_| timed(units)).min().unwrap_or(1);
    let ps_per_unit = ((fastest as u128 * 1000) / units as u128).max(1) as u64;
    let fastest_of = |units: u64| (0..5).take_while(|_| !stopping()).map(|_| timed(units)).min().unwrap_or(1);
    let sized = scaled(target_ns as u128 * 1000, ps_per_unit as u128);
    let sized = scaled(sized as u128 * target_ns as u128, fastest_of(sized) as u128);
    Calibration { units: sized, ps_per_unit, measured_ns: fastest_of(sized), cpu }
}

/// `num / den` as a count of units, at least 1.
fn scaled(num: u128, den: u128) -> u64 {
    (num / den.max(1)).clamp(1, u64::MAX as u128) as u64
}

/// What a task does after each wakeup; the loop is compiled once per kind of work, and
/// without work ([`NoWork`]) not one instruction of it remains.
pub trait Job {
    /// False only for [`NoWork`].
    const ENABLED: bool;
    /// Does one period's work, begun at `woke_ns`; returns its completion time (ns).
    fn run(&mut self, woke_ns: i64) -> i64;
}

/// No work: the empty loop of cyclictest.
#[derive(Debug, Default)]
pub struct NoWork;
impl Job for NoWork {
    const ENABLED: bool = false;
    #[inline(always)]
    fn run(&mut self, woke_ns: i64) -> i64 {
        woke_ns
    }
}

/// Fixed work: `units` of [`spin`], then the clock.
#[derive(Debug)]
pub struct SpinJob {
    /// The clock read at completion.
    pub clock: ClockId,
    /// Units per period.
    pub units: u64,
}
impl Job for SpinJob {
    const ENABLED: bool = true;
    #[inline(always)]
    fn run(&mut self, _: i64) -> i64 {
        spin(self.units);
        clock::now(self.clock)
    }
}

/// Busy wall-clock time: reads the clock until `ns` after the wakeup.
#[derive(Debug)]
pub struct BusyJob {
    /// The clock.
    pub clock: ClockId,
    /// Busy time per period (ns).
    pub ns: i64,
}
impl Job for BusyJob {
    const ENABLED: bool = true;
    #[inline(always)]
    fn run(&mut self, woke_ns: i64) -> i64 {
        let end = woke_ns + self.ns;
        loop {
            let t = clock::now(self.clock);
            if t >= end {
                return t;
            }
            std::hint::spin_loop();
        }
    }
}

/// Simulated work on the simulation's virtual clock: each period's duration from a list
/// (then the last one again), so that response, slack and misses can be checked exactly.
#[derive(Debug, Clone)]
pub struct SimJob {
    /// Work durations (ns), in order.
    pub durations: Vec<i64>,
    /// The next one.
    pub next: usize,
}
impl Job for SimJob {
    const ENABLED: bool = true;
    fn run(&mut self, woke_ns: i64) -> i64 {
        let d = self.durations.get(self.next).or(self.durations.last()).copied().unwrap_or(0);
        self.next += 1;
        woke_ns + d
    }
}

/// What the live view and checkpoints read of a working task's deadlines.
#[derive(Debug, Default)]
pub struct DeadlineLive {
    /// Releases: jobs run plus releases skipped.
    pub releases: AtomicU64,
    /// Jobs that completed after their deadline.
    pub late: AtomicU64,
    /// Releases skipped because the task was still working.
    pub skipped: AtomicU64,
    /// The longest run of consecutive misses.
    pub longest_run: AtomicU64,
    /// The most misses in any window of K consecutive releases.
    pub worst_window: AtomicU64,
    /// The first miss: release index (`u64::MAX` before one).
    pub first_miss: AtomicU64,
    /// The first miss: time of its wakeup since the start (ns).
    pub first_miss_at_ns: AtomicI64,
}

/// The deadline figures of one task (or several merged: counts add, worst-ofs take the worst).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeadlineFigures {
    /// Releases: jobs run plus releases skipped.
    pub releases: u64,
    /// Misses: late jobs plus skipped releases.
    pub misses: u64,
    /// Jobs that completed after their deadline.
    pub late: u64,
    /// Releases skipped because the task was still working on an earlier one.
    pub skipped: u64,
    /// The longest run of consecutive misses.
    pub longest_miss_run: u64,
    /// K: the window of consecutive releases `worst_misses_in_window` counts in.
    pub window: u32,
    /// The most misses in any window of K consecutive releases (fewer releases than K: in
    /// all of them).
    pub worst_misses_in_window: u64,
    /// The first miss: its release index (0-based, after warm-up).
    pub first_miss_release: Option<u64>,
    /// The first miss: its wakeup's time since the start (ns).
    pub first_miss_at_ns: Option<i64>,
}

impl DeadlineFigures {
    /// Misses per release (0 without releases).
    pub fn miss_ratio(&self) -> f64 {
        if self.releases == 0 {
            0.0
        } else {
            self.misses as f64 / self.releases as f64
        }
    }

    /// Adds another task's figures (the worst run and window are the worst of either task's).
    pub fn merge(&mut self, o: &DeadlineFigures) {
        let first = match (self.first_miss_at_ns, o.first_miss_at_ns) {
            (Some(a), Some(b)) if b < a => (o.first_miss_release, o.first_miss_at_ns),
            (None, Some(_)) => (o.first_miss_release, o.first_miss_at_ns),
            _ => (self.first_miss_release, self.first_miss_at_ns),
        };
        (self.first_miss_release, self.first_miss_at_ns) = first;
        self.releases += o.releases;
        self.misses += o.misses;
        self.late += o.late;
        self.skipped += o.skipped;
        self.longest_miss_run = self.longest_miss_run.max(o.longest_miss_run);
        self.worst_misses_in_window = self.worst_misses_in_window.max(o.worst_misses_in_window);
        self.window = self.window.max(o.window);
    }
}

/// Counts misses release by release: the current and longest runs, and a sliding window of
/// the last K releases as a bit set (allocated once, before the schedule starts).
#[derive(Debug)]
pub struct DeadlineTracker {
    bits: Box<[u64]>,
    k: u64,
    pos: u64,
    in_window: u64,
    figures: DeadlineFigures,
    run: u64,
}

impl DeadlineTracker {
    /// A tracker of windows of `k` releases (1 ≤ k ≤ [`MAX_MISS_WINDOW`]).
    pub fn new(k: u32) -> DeadlineTracker {
        let k = k.clamp(1, MAX_MISS_WINDOW);
        DeadlineTracker {
            bits: vec![0u64; (k as usize).div_ceil(64)].into_boxed_slice(),
            k: k as u64,
            pos: 0,
            in_window: 0,
            figures: DeadlineFigures { window: k, ..Default::default() },
            run: 0,
        }
    }

    fn push(&mut self, miss: bool) {
        let i = (self.pos % self.k) as usize;
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        if self.pos >= self.k && self.bits[word] & bit != 0 {
            self.in_window -= 1;
        }
        if miss {
            self.bits[word] |= bit;
            self.in_window += 1;
            self.run += 1;
            self.figures.longest_miss_run = self.figures.longest_miss_run.max(self.run);
        } else {
            self.bits[word] &= !bit;
            self.run = 0;
        }
        self.pos += 1;
        self.figures.worst_misses_in_window = self.figures.worst_misses_in_window.max(self.in_window);
    }

    /// One job: whether it was late, then the `skipped` releases that passed while it ran
    /// (each a miss), in the order they happened; `release` and `at_ns` date a first miss.
    pub fn record(&mut self, late: bool, skipped: u64, at_ns: i64) {
        let f = &mut self.figures;
        if (late || skipped > 0) && f.first_miss_release.is_none() {
            f.first_miss_release = Some(f.releases + u64::from(!late));
            f.first_miss_at_ns = Some(at_ns);
        }
        f.releases += 1 + skipped;
        f.late += u64::from(late);
        f.skipped += skipped;
        f.misses += u64::from(late) + skipped;
        self.push(late);
        // A stall of more than K releases fills the window with misses: no need to push each.
        let direct = skipped.min(self.k);
        for _ in 0..direct {
            self.push(true);
        }
        if skipped > direct {
            self.run += skipped - direct;
            self.pos += skipped - direct;
            self.figures.longest_miss_run = self.figures.longest_miss_run.max(self.run);
        }
    }

    /// The figures so far.
    pub fn figures(&self) -> DeadlineFigures {
        self.figures
    }

    fn publish(&self, l: &DeadlineLive) {
        let f = &self.figures;
        l.releases.store(f.releases, Relaxed);
        l.late.store(f.late, Relaxed);
        l.skipped.store(f.skipped, Relaxed);
        l.longest_run.store(f.longest_miss_run, Relaxed);
        l.worst_window.store(f.worst_misses_in_window, Relaxed);
        if let (Some(r), Some(at)) = (f.first_miss_release, f.first_miss_at_ns) {
            l.first_miss_at_ns.store(at, Relaxed);
            l.first_miss.store(r, Relaxed);
        }
    }
}

/// A working task's live cells: response and run time histograms and sums (the same exact
/// statistics as the latency's), and the deadline figures.
#[derive(Debug)]
pub struct WorkLive {
    /// Response times (completion − release).
    pub response: Live,
    /// Run times (completion − wakeup): the work itself, lengthened by what preempted it.
    pub run: Live,
    /// Deadline figures.
    pub deadlines: DeadlineLive,
    /// The task's work and deadline.
    pub spec: WorkSpec,
    /// How the fixed work was sized, once the measuring thread has calibrated it.
    pub calibration: std::sync::OnceLock<Calibration>,
    /// The deadline in force (ns): the spec's, or one learnt later ([`WorkLive::set_deadline`]).
    deadline_ns: AtomicI64,
    /// A watched thread's stages (observed work only; the live view shows them).
    pub stages: Option<StageCells>,
}

/// Where a watched thread's stage latencies are published while it runs.
#[derive(Debug)]
pub struct StageCells {
    /// Timer interrupt latencies (expiry → its callback).
    pub irq: Live,
    /// Switch-in latencies (expiry → the switch to the thread, or its first event).
    pub thread: Live,
    /// Return-to-user latencies of the same periods (expiry → its `sys_exit`).
    pub user: Live,
    /// Stage thresholds crossed (each period above counts once).
    pub hits: AtomicU64,
}

impl StageCells {
    /// Empty cells with histograms of `layout`.
    pub fn new(layout: Layout) -> StageCells {
        StageCells {
            irq: Live::new(layout),
            thread: Live::new(layout),
            user: Live::new(layout),
            hits: AtomicU64::new(0),
        }
    }

    /// The figures as of now.
    pub fn snapshot(&self) -> super::stats::StagesSnapshot {
        super::stats::StagesSnapshot {
            irq: super::stats::StageFigures::of(&self.irq),
            thread: super::stats::StageFigures::of(&self.thread),
            user: super::stats::StageFigures::of(&self.user),
            hits: self.hits.load(Relaxed),
        }
    }
}

impl WorkLive {
    /// Empty cells for a task doing `spec`, histograms of `layout`; responses at or below
    /// each of `cuts` (ns) are counted exactly (see [`Live::with_cuts`]).
    pub fn new(spec: WorkSpec, layout: Layout, cuts: &[u64]) -> WorkLive {
        WorkLive {
            response: Live::with_cuts(layout, cuts),
            run: Live::new(layout),
            deadlines: DeadlineLive { first_miss: AtomicU64::new(u64::MAX), ..Default::default() },
            spec,
            calibration: std::sync::OnceLock::new(),
            deadline_ns: AtomicI64::new(spec.deadline_ns),
            stages: (spec.kind == WorkKind::Observed).then(|| StageCells::new(layout)),
        }
    }

    /// The deadline, once it is known after the start (a watched thread's period, learnt from
    /// its releases): responses recorded from now on are judged against it.
    pub fn set_deadline(&self, ns: i64) {
        self.deadline_ns.store(ns, Relaxed);
    }

    /// The work and the deadline in force.
    pub fn spec(&self) -> WorkSpec {
        WorkSpec { deadline_ns: self.deadline_ns.load(Relaxed), ..self.spec }
    }

    /// Adds this task's response and misses to its latency snapshot (for the live view).
    pub fn decorate(&self, snap: &mut super::stats::LiveSnapshot) {
        let r = self.response.snapshot();
        let d = &self.deadlines;
        let stages = self.stages.as_ref().map(StageCells::snapshot);
        snap.stages = stages;
        snap.work = (r.cycles > 0).then_some(super::stats::WorkSnapshot {
            cur: r.cur,
            p99: r.p99,
            max: r.max,
            misses: d.late.load(Relaxed) + d.skipped.load(Relaxed),
            irq: stages.and_then(|s| s.irq).map(|f| (f.p99, f.max)),
        });
    }

    /// The figures as of now (each histogram consistent in itself; `None` when a recorder
    /// could not be read between two samples).
    pub fn checkpoint(&self) -> Option<WorkSummary> {
        let d = &self.deadlines;
        let first = d.first_miss.load(Relaxed);
        let late = d.late.load(Relaxed);
        let skipped = d.skipped.load(Relaxed);
        Some(WorkSummary {
            response: self.response.checkpoint()?,
            run: self.run.checkpoint()?,
            deadlines: DeadlineFigures {
                releases: d.releases.load(Relaxed),
                misses: late + skipped,
                late,
                skipped,
                longest_miss_run: d.longest_run.load(Relaxed),
                window: self.spec.miss_window,
                worst_misses_in_window: d.worst_window.load(Relaxed),
                first_miss_release: (first != u64::MAX).then_some(first),
                first_miss_at_ns: (first != u64::MAX).then(|| d.first_miss_at_ns.load(Relaxed)),
            },
            spec: self.spec(),
            calibration: self.calibration.get().copied(),
        })
    }
}

/// A working task's finished figures.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkSummary {
    /// Response times.
    pub response: Summary,
    /// Run times.
    pub run: Summary,
    /// Deadline figures.
    pub deadlines: DeadlineFigures,
    /// The work and deadline.
    pub spec: WorkSpec,
    /// How the fixed work was sized (`None` for busy time and simulated work).
    pub calibration: Option<Calibration>,
}

/// The measuring thread's bookkeeping of its work: two recorders and the deadline tracker.
#[derive(Debug)]
pub struct WorkRecorder<'a> {
    live: &'a WorkLive,
    response: Recorder<'a>,
    run: Recorder<'a>,
    tracker: DeadlineTracker,
    ring: Option<&'a super::ring::SampleRing>,
}

impl<'a> WorkRecorder<'a> {
    /// A recorder into `live`; responses above `max_response_ns` are counted for the verdict;
    /// with `ring`, every sample goes there with its latency (the latency's recorder then has
    /// no ring of its own).
    pub fn new(
        live: &'a WorkLive,
        max_response_ns: Option<i64>,
        ring: Option<&'a super::ring::SampleRing>,
    ) -> WorkRecorder<'a> {
        WorkRecorder {
            live,
            response: Recorder::new(&live.response, max_response_ns),
            run: Recorder::new(&live.run, None),
            tracker: DeadlineTracker::new(live.spec.miss_window),
            ring,
        }
    }

    /// Records one job: its wakeup latency, response and run times (ns), when it woke (since
    /// the start), and the releases skipped while it ran.
    #[inline(always)]
    pub fn record(&mut self, latency: i64, response: i64, run: i64, at_ns: i64, skipped: u64) {
        if let Some(r) = self.ring {
            r.push_with_response(at_ns, latency, response);
        }
        self.response.record(response, at_ns, skipped);
        self.run.record(run, at_ns, 0);
        self.tracker.record(response > self.live.deadline_ns.load(Relaxed), skipped, at_ns);
        self.tracker.publish(&self.live.deadlines);
    }

    /// Tells readers the schedule start.
    pub fn started(&mut self, start_ns: i64) {
        self.response.started(start_ns);
        self.run.started(start_ns);
    }

    /// The finished figures.
    pub fn finish(&self) -> WorkSummary {
        WorkSummary {
            response: self.response.finish(),
            run: self.run.finish(),
            deadlines: self.tracker.figures(),
            spec: self.live.spec(),
            calibration: self.live.calibration.get().copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(jobs: &[(bool, u64)], k: u32) -> DeadlineFigures {
        let mut t = DeadlineTracker::new(k);
        for (i, &(late, skipped)) in jobs.iter().enumerate() {
            t.record(late, skipped, i as i64);
        }
        t.figures()
    }

    #[test]
    fn misses_count_late_jobs_and_skipped_releases_with_their_longest_run() {
        // ok, late, late+1 skipped, ok, late: releases 6; misses 4; the run late,late,skip = 3.
        let f = figures(&[(false, 0), (true, 0), (true, 1), (false, 0), (true, 0)], 1000);
        assert_eq!((f.releases, f.misses, f.late, f.skipped, f.longest_miss_run), (6, 4, 3, 1, 3));
        assert_eq!(f.first_miss_release, Some(1));
        assert_eq!(f.worst_misses_in_window, 4);
    }

    #[test]
    fn the_worst_window_slides_over_every_k_consecutive_releases() {
        // Misses at releases 0, 3, 4, 9 with k = 3: windows [2..5) hold 2 (3 and 4), none holds 3.
        let mut jobs = vec![(false, 0); 10];
        for i in [0, 3, 4, 9] {
            jobs[i] = (true, 0);
        }
        assert_eq!(figures(&jobs, 3).worst_misses_in_window, 2);
        assert_eq!(figures(&jobs, 6).worst_misses_in_window, 3); // [3..9) or [4..10)
        assert_eq!(figures(&jobs, 1).worst_misses_in_window, 1);
        assert_eq!(figures(&jobs, 100).worst_misses_in_window, 4);
    }

    #[test]
    fn a_stall_longer_than_the_window_fills_it_and_lengthens_the_run() {
        let f = figures(&[(false, 0), (true, 1_000_000), (false, 0)], 64);
        assert_eq!((f.releases, f.misses, f.skipped), (1_000_003, 1_000_001, 1_000_000));
        assert_eq!(f.longest_miss_run, 1_000_001);
        assert_eq!(f.worst_misses_in_window, 64);
        // The window is intact after the stall: the next 64 on-time jobs empty it.
        let mut t = DeadlineTracker::new(64);
        t.record(true, 1_000, 0);
        for i in 0..64 {
            t.record(false, 0, i);
        }
        t.record(true, 0, 99);
        assert_eq!(t.in_window, 1);
    }

    #[test]
    fn a_window_of_a_word_boundary_size_forgets_exactly_the_release_k_back() {
        for k in [63u32, 64, 65, 128] {
            let mut t = DeadlineTracker::new(k);
            t.record(true, 0, 0);
            for i in 1..k as i64 {
                t.record(false, 0, i);
            }
            assert_eq!(t.in_window, 1, "k = {k}");
            t.record(false, 0, k as i64);
            assert_eq!(t.in_window, 0, "k = {k}");
        }
    }

    #[test]
    fn response_and_run_figures_have_no_cyclictest_mean_they_were_never_summed_for() {
        let spec = WorkSpec { kind: WorkKind::Fixed, amount_ns: 1000, deadline_ns: 5000, miss_window: 10 };
        let live = WorkLive::new(spec, Layout::DEFAULT, &[]);
        let mut rec = WorkRecorder::new(&live, None, None);
        rec.record(10, 2000, 1000, 0, 0);
        let w = rec.finish();
        assert_eq!((w.response.sum_us_truncated, w.run.sum_us_truncated), (None, None));
    }

    #[test]
    fn merged_figures_add_counts_and_keep_the_worst_run_and_window() {
        let mut a = figures(&[(true, 0), (true, 0), (false, 0)], 10);
        let b = figures(&[(false, 0), (true, 2), (false, 0)], 10);
        a.merge(&b);
        assert_eq!((a.releases, a.misses, a.longest_miss_run, a.worst_misses_in_window), (8, 5, 3, 3));
        assert_eq!((a.first_miss_release, a.first_miss_at_ns), (Some(0), Some(0)));
        assert_eq!(a.miss_ratio(), 5.0 / 8.0);
    }

    #[test]
    fn work_is_sized_from_the_rate_then_corrected_by_its_own_timing() {
        // 300 µs at 1.5 ns a unit: 200 000 units; timed at 330 µs, they become 181 818.
        assert_eq!(scaled(300_000 * 1000, 1_500), 200_000);
        assert_eq!(scaled(200_000 * 300_000, 330_000), 181_818);
        assert_eq!(scaled(5, 0), 5);
        assert_eq!(scaled(0, 7), 1);
        let c = calibrate(ClockId::MONOTONIC, 50_000, Some(3), &AtomicBool::new(false));
        assert!(c.units > 0 && c.ps_per_unit > 0 && c.measured_ns > 0, "{c:?}");
        assert_eq!(c.cpu, Some(3));
    }
}
