//! One rt-app thread's run of its phases, event by event, as rt-app 1.0 runs them, with the
//! clock read around each event that waits: timers and sleeps (wakeup latency, slack), locks
//! (lock wait), and waits that another thread ends (the hand-off, from the releasing thread's
//! own stamp). Shared resources live in [`Shared`].

use super::model::{Event, Ftrace, Phase, ResourceKind, ThreadSpec};
use crate::measure::stats::{Live, Recorder};
use crate::measure::work::{spin, WorkRecorder};
use crate::rt::clock::{self, ClockId};
use crate::rt::sync::PMutex;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

const MONO: ClockId = ClockId::MONOTONIC;

/// A resource as the threads share it.
pub enum Res {
    /// A mutex.
    Mutex(PMutex),
    /// A condition, suspend point or barrier: where threads wait for a release.
    Meet(Meet),
    /// A timer's next expiry (ns; `None` until its first use).
    Timer(Mutex<Option<i64>>),
}

/// Who released a wait, and when: the releasing thread's index and event, and its clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    /// The releasing thread.
    pub from: usize,
    /// Its event (`resume`, `signal`, …).
    pub via: &'static str,
    /// When it released (ns, CLOCK_MONOTONIC).
    pub at_ns: i64,
}

#[derive(Default)]
struct MeetState {
    /// The next waiter's token.
    next: u64,
    /// Waiters in the order they came.
    queue: std::collections::VecDeque<u64>,
    /// Waiters released and not yet gone, with who released them: a signal releases the
    /// first waiter there is, a broadcast all of them, and a release with none is lost, as
    /// with pthread's condition variables (a thread that comes to wait after a release is
    /// never the one it wakes).
    released: Vec<(u64, Stamp)>,
    /// A barrier's arrivals still missing (set at its first use).
    left: Option<u32>,
}

/// Where threads wait for a release (pthread condition semantics, exact: no wakeup is lost
/// between a waiter's check and its sleep, none is stolen by a later waiter, and a stop ends
/// every wait).
#[derive(Default)]
pub struct Meet {
    state: Mutex<MeetState>,
    cv: Condvar,
}

impl Meet {
    fn state(&self) -> std::sync::MutexGuard<'_, MeetState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Releases the first waiter (`one`) or all of them, stamped `stamp`.
    pub fn release(&self, one: bool, stamp: Stamp) {
        let mut s = self.state();
        Self::release_in(&mut s, one, stamp);
        self.cv.notify_all();
    }

    fn release_in(s: &mut MeetState, one: bool, stamp: Stamp) {
        if one {
            if let Some(t) = s.queue.pop_front() {
                s.released.push((t, stamp));
            }
        } else {
            let all: Vec<u64> = s.queue.drain(..).collect();
            s.released.extend(all.into_iter().map(|t| (t, stamp)));
        }
    }

    /// Waits for a release (`mutex`, held by the caller, is released while waiting and taken
    /// again after); `None` when the run stopped first. The flag: the mutex is held again (a
    /// stop can end the wait to take it back too).
    pub fn wait(&self, mutex: Option<&PMutex>, stop: &AtomicBool) -> (Option<Stamp>, bool) {
        let mut s = self.state();
        let token = s.next;
        s.next += 1;
        s.queue.push_back(token);
        if let Some(m) = mutex {
            let _ = m.unlock();
        }
        let (s, got) = self.until_released(s, token, stop);
        drop(s);
        let held = mutex.is_some_and(|m| m.lock_until(stop).is_ok());
        (got, held)
    }

    /// A barrier of `users`: the last to arrive releases the others, as rt-app's barrier
    /// does. `Some(None)` for the last; `None` when the run stopped first.
    pub fn barrier(&self, users: u32, stamp: Stamp, stop: &AtomicBool) -> Option<Option<Stamp>> {
        let mut s = self.state();
        let left = *s.left.get_or_insert(users.saturating_sub(1));
        if left == 0 {
            Self::release_in(&mut s, false, stamp);
            self.cv.notify_all();
            return Some(None);
        }
        s.left = Some(left - 1);
        let token = s.next;
        s.next += 1;
        s.queue.push_back(token);
        let (mut s, got) = self.until_released(s, token, stop);
        s.left = s.left.map(|l| l + 1);
        got.map(Some)
    }

    /// Wakes every waiter so that it sees the stop.
    pub fn wake_all(&self) {
        let _s = self.state();
        self.cv.notify_all();
    }

    fn until_released<'g>(
        &self,
        mut s: std::sync::MutexGuard<'g, MeetState>,
        token: u64,
        stop: &AtomicBool,
    ) -> (std::sync::MutexGuard<'g, MeetState>, Option<Stamp>) {
        loop {
            if let Some(i) = s.released.iter().position(|(t, _)| *t == token) {
                let (_, stamp) = s.released.swap_remove(i);
                return (s, Some(stamp));
            }
            if stop.load(Relaxed) {
                s.queue.retain(|t| *t != token);
                return (s, None);
            }
            // Bounded so that a stop is seen even if its notification raced the wait.
            s = self.cv.wait_timeout(s, Duration::from_millis(100)).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

/// What every thread of a use case shares.
pub struct Shared {
    /// The resources, by index.
    pub resources: Vec<Res>,
    /// Each resource's kind, by index.
    pub kinds: Vec<ResourceKind>,
    /// Set when the run ends.
    pub stop: std::sync::Arc<AtomicBool>,
    /// The common start (CLOCK_MONOTONIC ns), set before the threads are released.
    pub origin: AtomicI64,
    /// No phase loop starts at or after this (the start plus `global.duration`).
    pub end_ns: AtomicI64,
    /// A thread found the duration over (the run ended at its duration, not its loops).
    pub timed_out: AtomicBool,
    /// Picoseconds per unit of `run`'s work.
    pub ps_per_unit: u64,
    /// rt-app's pLoad (ns per loop) when `global.calibration` gives it: `perf` counts its loops.
    pub p_load_ns: Option<u64>,
    /// rt-app's trace markers (`global.ftrace`): the categories asked and `trace_marker`.
    pub marker: Option<Marker>,
    /// `global.cumulative_slack`.
    pub cumulative_slack: bool,
    /// Each thread's task, by index (hand-offs are reported between tasks).
    pub task_of: Vec<usize>,
}

/// rt-app's trace markers: the categories `global.ftrace` asks, written to `trace_marker`.
#[derive(Debug)]
pub struct Marker {
    /// The categories.
    pub asked: super::model::Ftrace,
    /// tracefs' `trace_marker`.
    pub file: std::fs::File,
}

impl Marker {
    /// Writes `text` when `category` is asked (one write, as rt-app's `log_ftrace`); a failed
    /// write loses that marker only.
    pub fn mark(&self, category: super::model::Ftrace, text: std::fmt::Arguments) {
        if self.asked.has(category) {
            use std::io::Write;
            let _ = (&self.file).write_all(text.to_string().as_bytes());
        }
    }
}

impl Shared {
    /// Writes rt-app's marker `text` of `category`, when markers are asked.
    pub fn mark(&self, category: super::model::Ftrace, text: std::fmt::Arguments) {
        if let Some(m) = &self.marker {
            m.mark(category, text);
        }
    }

    /// Wakes every thread waiting in a meet so that it sees the stop.
    pub fn wake_all(&self) {
        for r in &self.resources {
            if let Res::Meet(m) = r {
                m.wake_all();
            }
        }
    }
}

/// A hand-off series' key: the releasing task, the resource and the releasing event.
pub type HandoffKey = (usize, usize, &'static str);

/// What one thread measures besides its wakeups, and its rt-app log.
pub struct Series<'a> {
    /// Per hand-off into this thread.
    pub handoffs: Vec<(HandoffKey, Recorder<'a>)>,
    /// Per mutex it locks.
    pub locks: Vec<(usize, Recorder<'a>)>,
    /// Per timer it waits on.
    pub timers: Vec<TimerTally<'a>>,
    /// Its rt-app log, when one is written.
    pub log: Option<&'a mut dyn Write>,
}

/// One timer's figures in one thread.
pub struct TimerTally<'a> {
    /// The timer.
    pub res: usize,
    /// Its first period (ns).
    pub period_ns: i64,
    /// Its wakeups' latencies.
    pub rec: Recorder<'a>,
    /// Expiries reached late.
    pub overruns: u64,
    /// Smallest and largest slack (ns).
    pub slack: Option<(i64, i64)>,
}

/// What a thread's run of its phases ended with.
#[derive(Debug, Default)]
pub struct Ran {
    /// Phase loops completed.
    pub phase_loops: u64,
    /// The log could not be written: why.
    pub log_error: Option<String>,
    /// The run stopped while the thread waited for this resource (a mutex, or a condition,
    /// suspension or barrier it was not released from).
    pub blocked_on: Option<usize>,
    /// The mutexes it held when it stopped.
    pub held: Vec<usize>,
}

/// One phase loop's figures, as rt-app logs them (µs) and as the job model needs them (ns).
#[derive(Default)]
struct LoopData {
    perf: u64,
    run_us: i64,
    c_duration_us: i64,
    c_period_us: i64,
    wu_lat_us: i64,
    slack_us: i64,
}

/// The job between two timer events: its release, the latency of the wakeup that started it,
/// and the work run in it.
struct Job {
    release: i64,
    latency: i64,
    run_ns: i64,
}

/// One thread running its phases.
pub struct Runner<'a> {
    /// Its index.
    pub index: usize,
    /// What it runs.
    pub spec: &'a ThreadSpec,
    /// What it shares.
    pub shared: &'a Shared,
    /// Its wakeups (timers and sleeps).
    pub rec: Recorder<'a>,
    /// Its jobs (from timer to timer), when it has a timer.
    pub work: Option<WorkRecorder<'a>>,
    /// Its other figures.
    pub series: Series<'a>,
    /// Its buffer for `mem` and `iorun`.
    pub buffer: Vec<u8>,
    /// Where `iorun` writes.
    pub io: Option<std::fs::File>,
    origin: i64,
    held: Vec<usize>,
    job: Job,
    ran: Ran,
    /// A wait of the current phase loop was cut short by the stop.
    cut: bool,
    /// Lines written to its log.
    logged: u64,
}

/// The most lines one thread's log takes (about 1 GiB of rt-app's 120-byte lines): past it the
/// log stops, said, and the run goes on — a 1 µs timer would fill a disk.
pub const MAX_LOG_LINES: u64 = 9_000_000;

impl<'a> Runner<'a> {
    /// A runner for thread `index`; it starts at [`Runner::run`].
    pub fn new(
        index: usize,
        spec: &'a ThreadSpec,
        shared: &'a Shared,
        rec: Recorder<'a>,
        series: Series<'a>,
    ) -> Runner<'a> {
        Runner {
            index,
            spec,
            shared,
            rec,
            work: None,
            series,
            buffer: Vec::new(),
            io: None,
            origin: 0,
            held: Vec::new(),
            job: Job { release: 0, latency: 0, run_ns: 0 },
            ran: Ran::default(),
            cut: false,
            logged: 0,
        }
    }

    fn stopping(&self) -> bool {
        self.shared.stop.load(Relaxed)
    }

    /// Runs the thread's phases from the common start (plus its delay) until its loops are
    /// done, the duration is over or the run stops; `apply` sets a phase's CPUs and scheduling.
    pub fn run(&mut self, apply: &mut dyn FnMut(&Phase)) -> Ran {
        self.origin = self.shared.origin.load(Relaxed);
        let first = self.origin + self.spec.delay_ns;
        if self.spec.delay_ns > 0 {
            clock::sleep_until(MONO, first);
        }
        self.job = Job { release: first, latency: 0, run_ns: 0 };
        self.rec.started(self.origin);
        if let Some(w) = self.work.as_mut() {
            w.started(self.origin);
        }
        if self.index == 0 {
            let origin_us = self.origin / 1000;
            self.shared.mark(Ftrace::TASK, format_args!("rtapp_main: event=clock_ref data={origin_us}"));
        }
        self.shared.mark(Ftrace::TASK, format_args!("rtapp_task: event=start"));
        let mut thread_loop = 0u64;
        'run: while self.spec.loops.is_none_or(|n| thread_loop < n) {
            for (phase_no, phase) in self.spec.phases.iter().enumerate() {
                apply(phase);
                for phase_loop in 0..phase.loops {
                    if self.stopping() {
                        break 'run;
                    }
                    if clock::now(MONO) >= self.shared.end_ns.load(Relaxed) {
                        // The first thread to find the duration over says so, as rt-app's main
                        // thread does when its duration has slept out.
                        if !self.shared.timed_out.swap(true, Relaxed) {
                            self.shared.mark(Ftrace::MAIN, format_args!("rtapp_main: event=shutdown"));
                        }
                        break 'run;
                    }
                    if !self.phase_loop(phase, first, [thread_loop, phase_no as u64, phase_loop]) {
                        break 'run;
                    }
                }
            }
            thread_loop += 1;
        }
        self.shared.mark(Ftrace::TASK, format_args!("rtapp_task: event=end"));
        self.release_held();
        std::mem::take(&mut self.ran)
    }

    /// One loop of a phase; false when the run stopped in it: a loop is counted and logged
    /// when all its events ran to their end, so that its log line, its hand-offs and its
    /// wakeups agree.
    /// `at`: the thread's loop, the phase and the phase's loop, as rt-app's markers count them.
    fn phase_loop(&mut self, phase: &Phase, first: i64, at: [u64; 3]) -> bool {
        let [thread_loop, phase_no, phase_loop] = at;
        let mut d = LoopData::default();
        // Only a run that writes markers pays for their text.
        let loop_at = match self.shared.marker {
            Some(_) => format!("thread_loop={thread_loop} phase={phase_no} phase_loop={phase_loop}"),
            None => String::new(),
        };
        self.shared.mark(Ftrace::LOOP, format_args!("rtapp_loop: event=start {loop_at}"));
        let start = clock::now(MONO);
        self.cut = false;
        for (id, e) in phase.events.iter().enumerate() {
            if self.stopping() {
                return false;
            }
            if self.shared.marker.is_some() {
                let desc = phase.event_names.get(id).map_or(e.name(), String::as_str);
                let kind = e.rt_app_type();
                self.shared.mark(Ftrace::EVENT, format_args!("rtapp_event: id={id} type={kind} desc={desc}"));
            }
            self.event(e, &mut d, first);
            if self.cut {
                return false;
            }
        }
        let end = clock::now(MONO);
        self.ran.phase_loops += 1;
        self.log_line(&d, start, end);
        self.shared.mark(Ftrace::LOOP, format_args!("rtapp_loop: event=end {loop_at}"));
        self.shared.mark(
            Ftrace::STATS,
            format_args!(
                "rtapp_stats: period={} run={} wu_lat={} slack={} c_period={} c_run={}",
                us(end - start),
                d.run_us,
                d.wu_lat_us,
                d.slack_us,
                d.c_period_us,
                d.c_duration_us
            ),
        );
        true
    }

    /// Unlocks what the thread holds (a stop may come between a lock and its unlock), kept
    /// in its figures for the deadlock report.
    fn release_held(&mut self) {
        self.ran.held = self.held.clone();
        while let Some(m) = self.held.pop() {
            if let Res::Mutex(m) = &self.shared.resources[m] {
                let _ = m.unlock();
            }
        }
    }

    fn stamp(&self, via: &'static str) -> Stamp {
        Stamp { from: self.index, via, at_ns: clock::now(MONO) }
    }

    fn meet(&self, r: usize) -> &'a Meet {
        match &self.shared.resources[r] {
            Res::Meet(m) => m,
            _ => unreachable!("the parser gives waits and releases a meet"),
        }
    }

    fn mutex(&self, r: usize) -> &'a PMutex {
        match &self.shared.resources[r] {
            Res::Mutex(m) => m,
            _ => unreachable!("the parser gives locks a mutex"),
        }
    }

    /// Runs one event.
    fn event(&mut self, e: &Event, d: &mut LoopData, first: i64) {
        match *e {
            Event::Run(ns) => self.work_for(ns, d, true),
            Event::Runtime(ns) => self.work_for(ns, d, false),
            Event::Sleep(ns) => self.sleep(ns),
            Event::Timer { res, period_ns } => self.timer(res, period_ns, d, first),
            Event::Lock(m) => self.lock(m),
            Event::Unlock(m) => {
                let _ = self.mutex(m).unlock();
                self.held.retain(|h| *h != m);
            }
            Event::Suspend(r) => {
                let (got, _) = self.meet(r).wait(None, &self.shared.stop);
                self.handed(r, got);
            }
            Event::Wait { cond, mutex } => self.wait_on(cond, mutex),
            Event::Sync { cond, mutex } => {
                self.meet(cond).release(true, self.stamp("sync"));
                self.wait_on(cond, mutex);
            }
            Event::Resume(r) => self.meet(r).release(false, self.stamp("resume")),
            Event::Signal(r) => self.meet(r).release(true, self.stamp("signal")),
            Event::Broad(r) => self.meet(r).release(false, self.stamp("broad")),
            Event::Barrier(r) => {
                let users = match self.shared.kinds[r] {
                    ResourceKind::Barrier { users } => users,
                    _ => 1,
                };
                match self.meet(r).barrier(users, self.stamp("barrier"), &self.shared.stop) {
                    Some(None) => {}
                    Some(got) => self.handed(r, got),
                    None => {
                        self.ran.blocked_on.get_or_insert(r);
                        self.cut = true;
                    }
                }
            }
            Event::Mem(n) => self.mem(n),
            Event::IoRun(n) => self.iorun(n),
            Event::Yield => crate::rt::sync::yield_now(),
        }
    }
}

/// `ns` in whole µs, rounded to the nearest (halves away from zero) as rt-app rounds every
/// figure of its log.
fn us(ns: i64) -> i64 {
    let r = (ns.unsigned_abs() + 500) / 1000;
    if ns < 0 {
        -(r as i64)
    } else {
        r as i64
    }
}

/// The loops rt-app 1.0 counts in `perf` for `us` µs of work at `p_load_ns` ns per loop: its
/// `loadwait` runs whole seconds of 10⁹ / pLoad loops each, then ⌊rest · 1000 / pLoad⌋, and
/// returns the last burst's count only (a run of 1.5 s at 50 ns logs 10 000 000; checked with
/// Debian's rt-app).
pub fn rt_app_loops(us: i64, p_load_ns: u64) -> u64 {
    let (us, p) = (us.max(0) as u64, p_load_ns.max(1));
    (us % 1_000_000) * 1000 / p
}

/// Work is done in slices of this much (ns), the stop checked between them: a `run` of an
/// hour still ends with the run.
const SLICE_NS: i64 = 1_000_000;

impl Runner<'_> {
    /// `run` (calibrated units, `fixed`) or `runtime` (busy wall time) for `ns`.
    fn work_for(&mut self, ns: i64, d: &mut LoopData, fixed: bool) {
        let ps = self.shared.ps_per_unit.max(1) as i128;
        let units_of = |ns: i64| ((ns as i128 * 1000) / ps).clamp(0, u64::MAX as i128) as u64;
        let t0 = clock::now(MONO);
        let p_load = self.shared.p_load_ns;
        if fixed {
            let mut left = ns;
            while left > 0 && !self.stopping() {
                let slice = left.min(SLICE_NS);
                let units = units_of(slice);
                spin(units);
                if p_load.is_none() {
                    d.perf += units;
                }
                left -= slice;
            }
            d.perf += p_load.map_or(0, |p| rt_app_loops(ns / 1000, p));
        } else {
            // rt-app's `runtime`: work in steps of 32 µs until the wall time has passed.
            let step = units_of(32_000).max(1);
            while clock::now(MONO) - t0 < ns && !self.stopping() {
                spin(step);
                d.perf += p_load.map_or(step, |p| rt_app_loops(32, p));
            }
        }
        let took = clock::now(MONO) - t0;
        d.run_us += us(took);
        d.c_duration_us += ns / 1000;
        self.job.run_ns += took;
    }

    /// `sleep`: a relative sleep; its wakeup latency is recorded (not for `sleep 0`).
    fn sleep(&mut self, ns: i64) {
        let due = clock::now(MONO) + ns;
        clock::sleep_relative(MONO, ns);
        let woke = clock::now(MONO);
        if self.stopping() && woke < due {
            self.cut = true;
        } else if ns > 0 {
            self.rec.record(woke - due, woke - self.origin, 0);
        }
    }

    /// `timer`: ends the job begun at the last release, then sleeps until the timer's next
    /// expiry — or, reached late, does not sleep (rt-app's overrun: a relative timer's grid
    /// restarts now, an absolute one's stays).
    fn timer(&mut self, res: usize, period_ns: i64, d: &mut LoopData, first: i64) {
        let Res::Timer(t) = &self.shared.resources[res] else { unreachable!("the parser gives timers a timer") };
        let next = {
            let mut t = t.lock().unwrap_or_else(|p| p.into_inner());
            let n = t.unwrap_or(first).saturating_add(period_ns);
            *t = Some(n);
            n
        };
        let now = clock::now(MONO);
        let slack = next - now;
        d.c_period_us += period_ns / 1000;
        let slack_us = us(slack);
        d.slack_us = if self.shared.cumulative_slack { d.slack_us + slack_us } else { slack_us };
        // The job that ends here is recorded once the timer event is through (a stop in its
        // sleep leaves it out, with its phase loop).
        let j = &self.job;
        let ended = (j.latency, now - j.release, j.run_ns, j.release + j.latency - self.origin);
        let woke = if slack > 0 {
            clock::sleep_until(MONO, next);
            let woke = clock::now(MONO);
            if self.stopping() && woke < next {
                self.cut = true;
                return;
            }
            let lat = woke - next;
            d.wu_lat_us += us(lat);
            self.rec.record(lat, woke - self.origin, 0);
            self.job = Job { release: next, latency: lat, run_ns: 0 };
            Some(woke)
        } else {
            self.overrun(res, now, next, d);
            None
        };
        if let Some(x) = self.series.timers.iter_mut().find(|x| x.res == res) {
            match woke {
                Some(w) => x.rec.record(w - next, w - self.origin, 0),
                None => x.overruns += 1,
            }
            x.slack = Some(x.slack.map_or((slack, slack), |(lo, hi)| (lo.min(slack), hi.max(slack))));
        }
        if let Some(w) = self.work.as_mut() {
            w.record(ended.0, ended.1, ended.2, ended.3, 0);
        }
    }

    /// A timer event reached at or after its expiry: no sleep, a missed period, and the next
    /// job's release is now (a relative timer's grid restarts here) or the expiry (an absolute
    /// one keeps its grid).
    fn overrun(&mut self, res: usize, now: i64, next: i64, d: &mut LoopData) {
        let release = match (&self.shared.resources[res], self.shared.kinds[res]) {
            (Res::Timer(t), ResourceKind::Timer { relative: true }) => {
                *t.lock().unwrap_or_else(|p| p.into_inner()) = Some(now);
                now
            }
            _ => next,
        };
        d.wu_lat_us = 0;
        self.rec.add_missed(1);
        self.job = Job { release, latency: now - release, run_ns: 0 };
    }

    /// `wait`/`sync`'s wait on `cond` with `mutex` held: released while waiting, taken back
    /// after (unless the run stopped first).
    fn wait_on(&mut self, cond: usize, mutex: usize) {
        let (got, held) = self.meet(cond).wait(Some(self.mutex(mutex)), &self.shared.stop);
        if !held {
            self.held.retain(|h| *h != mutex);
            self.cut = true;
        }
        self.handed(cond, got);
    }

    /// `lock`: the wait for the mutex is recorded; a stop ends the wait (the phase loop is
    /// cut, and the mutex and its holder are kept for the deadlock report).
    fn lock(&mut self, m: usize) {
        let t0 = clock::now(MONO);
        if self.mutex(m).lock_until(&self.shared.stop).is_err() {
            self.ran.blocked_on = Some(m);
            self.cut = true;
            return;
        }
        let t1 = clock::now(MONO);
        self.held.push(m);
        if let Some((_, r)) = self.series.locks.iter_mut().find(|(x, _)| *x == m) {
            r.record(t1 - t0, t0 - self.origin, 0);
        }
    }

    /// A wait on `r` ended by `got`'s release: the hand-off from its thread is recorded.
    fn handed(&mut self, r: usize, got: Option<Stamp>) {
        let Some(s) = got else {
            self.ran.blocked_on.get_or_insert(r);
            self.cut = true;
            return;
        };
        let now = clock::now(MONO);
        let key = (self.shared.task_of[s.from], r, s.via);
        if let Some((_, rec)) = self.series.handoffs.iter_mut().find(|(k, _)| *k == key) {
            rec.record(now - s.at_ns, s.at_ns - self.origin, 0);
        }
    }

    /// `mem`: writes `n` bytes of the thread's buffer, a buffer at a time.
    fn mem(&mut self, mut n: u64) {
        while n > 0 && !self.buffer.is_empty() {
            let k = (n as usize).min(self.buffer.len());
            self.buffer[..k].fill(0);
            std::hint::black_box(&self.buffer);
            n -= k as u64;
        }
    }

    /// `iorun`: writes `n` bytes to the io device, a buffer at a time.
    fn iorun(&mut self, mut n: u64) {
        let Some(f) = self.io.as_mut() else { return };
        while n > 0 && !self.buffer.is_empty() && !self.shared.stop.load(Relaxed) {
            let k = (n as usize).min(self.buffer.len());
            match f.write(&self.buffer[..k]) {
                Ok(w) if w > 0 => n -= w as u64,
                _ => return,
            }
        }
    }

    /// rt-app's log line of one phase loop (its exact columns and widths).
    fn log_line(&mut self, d: &LoopData, start: i64, end: i64) {
        let Some(w) = self.series.log.as_mut() else { return };
        let r = writeln!(
            w,
            "{:4} {:8} {:8} {:8} {:15} {:15} {:15} {:10} {:10} {:10} {:10}",
            self.index,
            d.perf,
            d.run_us,
            us(end - start),
            us(start),
            us(end),
            us(start - self.origin),
            d.slack_us,
            d.c_duration_us,
            d.c_period_us,
            d.wu_lat_us
        );
        self.logged += 1;
        if let Err(e) = r {
            self.ran.log_error.get_or_insert(e.to_string());
            self.series.log = None;
        } else if self.logged >= MAX_LOG_LINES {
            self.ran.log_error.get_or_insert(format!(
                "it stopped at {MAX_LOG_LINES} lines (about 1 GiB, rtlab's bound per log); the run went on"
            ));
            self.series.log = None;
        }
    }
}

/// A histogram per series, allocated before the thread starts.
pub fn lives(n: usize, layout: crate::measure::histogram::Layout) -> Vec<Live> {
    (0..n).map(|_| Live::new(layout)).collect()
}

#[cfg(test)]
mod tests {
    use super::rt_app_loops;

    #[test]
    fn perf_counts_rt_apps_loops_as_its_loadwait_does() {
        // 2 ms at 20 ns a loop; under a second, ⌊µs · 1000 / pLoad⌋.
        assert_eq!(rt_app_loops(2_000, 20), 100_000);
        assert_eq!(rt_app_loops(333, 90), 3_700, "⌊333 000 / 90⌋");
        // 1.5 s at 50 ns: rt-app 1.0 runs a second's burst, then half a second's, and logs the
        // last burst's 10 000 000 (what Debian's rt-app wrote for that JSON).
        assert_eq!(rt_app_loops(1_500_000, 50), 10_000_000);
        // runtime's 32 µs steps.
        assert_eq!(rt_app_loops(32, 7), 4_571);
    }
}
