//! Jobs of a watched thread (`rtlab watch`): from its release to its completion, whatever it
//! blocked on in between. The [`super::watch::Tracker`] cuts a thread's time at every block
//! (each wakeup to the next block is one [`Period`]); here the periods become jobs once the
//! thread's [`Shape`] is known:
//!
//! - **timer-periodic**: the release is the expiry of the timer whose expiries form its
//!   cadence (an absolute `clock_nanosleep`, a `timerfd`, an `epoll_wait`/`poll` timeout, a futex
//!   wait with a timeout: whichever timer the events show it waits on from one period to the
//!   next); the job runs until the thread next blocks waiting for that timer. Sleeps on other
//!   timers, futex waits, reads and page faults inside it are part of the job.
//! - **event loop**: no periodic timer, and it waits for input (`epoll_wait`, `poll`, `select`,
//!   `read`, …): each iteration runs from the wait's return to the next wait, whether that
//!   wait blocked or found input waiting.
//! - **irregular**: neither; each wakeup is a job of its own, with no learnt period.
//!
//! The shape is learnt from the first periods ([`Learner`]), then fixed for the run.

use super::event::Name;
use super::syscalls::Arch;
use super::watch::{Arming, Cadence, Mark, Period, INPUT_WAITS_KEPT, ON_STACK};

/// What a watched thread was found to be, with the evidence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Released by the expiries of one timer.
    TimerPeriodic(TimerKey),
    /// Iterations between returns from a wait for input in this system call.
    EventLoop {
        /// The call it waits in.
        syscall: i64,
    },
    /// Neither.
    Irregular,
}

/// One of a thread's timers. A timer of its own (a `timerfd`, a POSIX timer) is its address;
/// a sleep's timer lives on the kernel stack at an address the kernel may randomise at every
/// call, so it is the call slept in and the mode (a period's absolute `clock_nanosleep` and a
/// relative pause inside the period differ in one or the other).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimerKey {
    /// The timer's address as the events print it (empty for a sleep's timer).
    pub addr: Name,
    /// Armed with a relative expiry.
    pub relative: bool,
    /// Its callback.
    pub function: Name,
    /// The call the thread slept in on it, when seen.
    pub syscall: Option<i64>,
}

impl TimerKey {
    fn of(p: &Period) -> Option<TimerKey> {
        let addr = p.timer_addr.clone().filter(|_| p.timer)?;
        let function = p.timer_function.clone().unwrap_or_default();
        let on_stack = function == ON_STACK;
        Some(TimerKey {
            addr: if on_stack { Name::default() } else { addr },
            relative: p.relative,
            function,
            syscall: p.syscall,
        })
    }

    fn same(&self, p: &Period) -> bool {
        TimerKey::of(p).is_some_and(|k| {
            k.relative == self.relative
                && k.function == self.function
                && k.addr == self.addr
                && (!self.addr.is_empty() || k.syscall == self.syscall)
        })
    }
}

impl Shape {
    /// `timer-periodic`, `event-loop` or `irregular`.
    pub fn name(&self) -> &'static str {
        match self {
            Shape::TimerPeriodic(_) => "timer-periodic",
            Shape::EventLoop { .. } => "event-loop",
            Shape::Irregular => "irregular",
        }
    }

    /// The evidence, in words: the timer and the call, or the wait (`learner`: what the
    /// shape was learnt from).
    pub fn evidence(&self, learner: &Learner) -> String {
        let arch = learner.arch;
        match self {
            Shape::TimerPeriodic(k) => {
                let call = k.syscall.map_or_else(|| "a timer".to_string(), |nr| arch.describe(nr));
                let mode = if k.relative { "relative" } else { "absolute" };
                format!("{call} on one {mode} timer ({}) at a steady period", k.function)
            }
            Shape::EventLoop { syscall } => format!(
                "no timer at a steady period; {} of the first {} wakeups returned from {}",
                learner.returns_from(*syscall),
                learner.wakeups,
                arch.describe(*syscall)
            ),
            Shape::Irregular => {
                let timers = if learner.keys.is_empty() { "no timer" } else { "no timer at a steady period" };
                match learner.top_syscall() {
                    Some((nr, n)) => format!(
                        "{timers} and no wait for input; {n} of the first {} wakeups returned from {}",
                        learner.wakeups,
                        arch.describe(nr)
                    ),
                    None => format!("{timers}, no wakeup seen"),
                }
            }
        }
    }
}

/// One timer's releases while the shape is learnt.
#[derive(Clone, Debug)]
struct KeyStats {
    key: TimerKey,
    cadence: Cadence,
    /// A relative timer's armed durations (its expiry − when it was armed): the program's
    /// own period, steady however late its wakeups come, where its releases drift by them.
    armed: Cadence,
    /// When the latest period armed the timer (ns, absolute).
    last_armed: Option<i64>,
    last_release: Option<i64>,
    releases: u64,
    /// How long the thread slept before each release (ns), the first few.
    sleeps: Vec<i64>,
    /// Its first intervals were not steady and it is learnt again from later ones.
    relearnt: bool,
}

/// Learns a thread's shape from its first periods.
#[derive(Clone, Debug, Default)]
pub struct Learner {
    arch: Arch,
    keys: Vec<KeyStats>,
    /// Wakeups per call returned from.
    syscalls: Vec<(i64, u64)>,
    wakeups: u64,
}

/// Timers and calls remembered while learning (a thread with more is judged on these).
const KEYS_KEPT: usize = 16;

/// Periods a thread's shape is learnt from at most: a thread with no steady timer by then is
/// an event loop or irregular.
pub const PENDING_MAX: usize = 256;

impl Learner {
    /// Learns a shape, reading system call numbers as `arch`'s.
    pub fn new(arch: Arch) -> Learner {
        Learner { arch, ..Default::default() }
    }

    /// Learns from period `p` (in order).
    pub fn observe(&mut self, p: &Period) {
        if p.continued {
            return;
        }
        self.wakeups += 1;
        if let Some(nr) = p.syscall {
            match self.syscalls.iter().position(|(n, _)| *n == nr) {
                Some(i) => self.syscalls[i].1 += 1,
                None if self.syscalls.len() < KEYS_KEPT => self.syscalls.push((nr, 1)),
                None => {}
            }
        }
        let Some(key) = TimerKey::of(p).filter(|_| p.wakeup_ns.is_some()) else { return };
        let i = match self.keys.iter().position(|k| k.key.same(p)) {
            Some(i) => i,
            None if self.keys.len() < KEYS_KEPT => {
                self.keys.push(KeyStats {
                    key,
                    cadence: Cadence::new(None),
                    armed: Cadence::new(None),
                    last_armed: None,
                    last_release: None,
                    releases: 0,
                    sleeps: Vec::new(),
                    relearnt: false,
                });
                self.keys.len() - 1
            }
            None => return,
        };
        let k = &mut self.keys[i];
        k.key.syscall = k.key.syscall.or(p.syscall);
        k.releases += 1;
        // The program's own schedule (consecutive armed expiries) when known: under overload a
        // release is not a sleep of every period.
        match (p.previous_armed_ns, k.last_release) {
            (Some(prev), _) if !p.relative => k.cadence.observe_interval(p.release_ns - prev),
            (_, Some(last)) => k.cadence.observe_interval(p.release_ns - last),
            _ => {}
        }
        k.last_release = Some(p.release_ns);
        if p.relative {
            if let Some(armed_at) = k.last_armed {
                k.armed.observe_interval(p.release_ns - armed_at);
            }
            k.last_armed = p.armed_last.as_ref().filter(|a| a.relative).map(|a| p.release_ns + a.at.at_ns);
        }
        if let Some(s) = p.slept_ns.filter(|_| k.sleeps.len() < 64) {
            k.sleeps.push(s);
        }
        // A timer whose first intervals were not steady is learnt again from the next ones: a
        // program's start, a stall of the host or one event seen out of place must not make a
        // periodic thread aperiodic for the whole run. Only a timer steady over a whole window
        // of intervals is taken for the thread's cadence.
        let steady = |c: &Cadence| c.learnt() >= Cadence::LEARN && c.periodic();
        if k.cadence.learnt() >= Cadence::LEARN && !(steady(&k.cadence) || k.key.relative && steady(&k.armed)) {
            k.cadence.relearn();
            k.armed.relearn();
            k.relearnt = true;
        }
    }

    /// The shape, once the periods seen tell it: a timer at a steady period seen
    /// [`Cadence::LEARN`] times; else (`last`: no more periods are waited for) a wait for
    /// input, or irregular. `period_ns` (`--period`) picks the timer nearest it.
    pub fn decide(&self, period_ns: Option<i64>, last: bool) -> Option<(Shape, Cadence)> {
        let last = last || self.wakeups >= PENDING_MAX as u64;
        let enough = self.keys.iter().any(|k| k.releases > Cadence::LEARN as u64);
        if !enough && !last {
            return None;
        }
        let least = if last { 2 } else { Cadence::LEARN as u64 / 2 };
        let mut steady: Vec<(&KeyStats, Cadence)> = self
            .keys
            .iter()
            .filter(|k| k.releases >= least && (last || !k.relearnt || k.cadence.learnt() >= Cadence::LEARN / 2))
            .filter_map(|k| {
                let (mut c, mut armed) = (k.cadence.clone(), k.armed.clone());
                c.settle();
                armed.settle();
                // A relative timer armed for one duration each period is the program's period
                // even when a busy machine makes its releases drift.
                (c.periodic() || k.key.relative && armed.periodic()).then_some((k, c))
            })
            .collect();
        // The program's schedule: an absolute timer before a relative one, then the timer it
        // sleeps longest on (a period's rest, not a pause inside the work); with --period, the
        // timer nearest it.
        let median = |v: &[i64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v.get(v.len() / 2).copied().unwrap_or(0)
        };
        steady.sort_by_key(|(k, c)| match period_ns {
            Some(p) => (false, (c.period_ns().unwrap_or(0) - p).abs(), 0),
            None => (k.key.relative, 0, -median(&k.sleeps)),
        });
        if let Some((k, c)) = steady.into_iter().next() {
            let cadence = match period_ns {
                Some(p) => Cadence::new(Some(p)),
                None => c,
            };
            return Some((Shape::TimerPeriodic(k.key.clone()), cadence));
        }
        if !last {
            return None;
        }
        Some((self.untimed(), Cadence::new(period_ns)))
    }

    /// The shape of a thread with no steady timer: an event loop when most wakeups return
    /// from one wait for input, else irregular.
    fn untimed(&self) -> Shape {
        match self.top_syscall() {
            Some((nr, n)) if self.arch.waits_for_input(nr) && n * 2 >= self.wakeups => Shape::EventLoop { syscall: nr },
            _ => Shape::Irregular,
        }
    }

    fn top_syscall(&self) -> Option<(i64, u64)> {
        self.syscalls.iter().copied().max_by_key(|(nr, n)| (*n, -nr))
    }

    fn returns_from(&self, nr: i64) -> u64 {
        self.syscalls.iter().find(|(n, _)| *n == nr).map_or(0, |x| x.1)
    }
}

/// One job: its release (the period that began it, whose `response_ns`, `running_ns`,
/// preemption and interrupts are the whole job's), and what it blocked on inside.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Job {
    /// The release and the job's totals.
    pub period: Period,
    /// Time blocked inside the job (ns).
    pub blocked_ns: i64,
    /// What it blocked on inside the job (a call's name, or why none), with the time (ns).
    pub blocked: Vec<(String, i64)>,
    /// Wakeups inside the job (not releases).
    pub resumes: u32,
    /// It began with a wakeup (else: an event-loop iteration that found input waiting).
    pub woke: bool,
    /// The sleep its latest period armed before it blocked: where the job ends if that sleep
    /// is the wait for its next release.
    tail: Option<Tail>,
    /// Its blocks, dated: when each ended (ns after the release), on what, for how long.
    blocks: Vec<(i64, String, i64)>,
}

/// The end of a job's latest period: the sleep it armed, with times after the job's release.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Tail {
    arming: Arming,
    /// The period's end (its block), ns after the job's release.
    end_ns: i64,
    /// The period's running and preempted time (ns).
    running_ns: i64,
    preempted_ns: i64,
}

impl Tail {
    /// The tail of period `p`, whose release is `shift` ns after its job's.
    fn of(p: &Period, shift: i64) -> Option<Tail> {
        let mut arming = p.armed_last.clone()?;
        arming.at.at_ns += shift;
        Some(Tail { arming, end_ns: p.response_ns? + shift, running_ns: p.running_ns, preempted_ns: p.preempted_ns })
    }
}

impl Job {
    fn start(p: Period) -> Job {
        Job { tail: Tail::of(&p, 0), woke: !p.continued, period: p, ..Default::default() }
    }

    /// Ends the job where it armed the wait for its next release (`key`: the thread's
    /// cadence), not where the kernel put it to sleep after: the time between is the kernel's.
    fn end_at_arming(&mut self, key: &TimerKey) {
        let Some(t) = self.tail.take().filter(|t| key.addr.is_empty() && t.arming.relative == key.relative) else {
            return;
        };
        let Some(response) = self.period.response_ns.filter(|r| *r == t.end_ns) else { return };
        let a = t.arming.at;
        let cut = response - a.at_ns;
        let (running_tail, preempted_tail) = (t.running_ns - a.running_ns, t.preempted_ns - a.preempted_ns);
        if cut < 0 || running_tail < 0 || preempted_tail < 0 || running_tail + preempted_tail > cut {
            return;
        }
        self.period.response_ns = Some(response - cut);
        self.period.running_ns -= running_tail;
        self.period.preempted_ns -= preempted_tail;
    }

    /// Time runnable but not running (ns): after the release until it ran, and preempted.
    pub fn waiting_ns(&self) -> Option<i64> {
        Some(self.period.response_ns? - self.period.running_ns - self.blocked_ns)
    }

    /// Time from its return to user space (or the wait's return) to its end (ns): an
    /// iteration's busy time.
    pub fn busy_ns(&self) -> Option<i64> {
        Some(self.period.response_ns? - self.period.wakeup_ns.filter(|_| self.woke).unwrap_or(0))
    }

    /// Adds period `p`, a wakeup inside this job, with the block before it.
    fn merge(&mut self, p: Period, arch: Arch) {
        let slept = p.slept_ns.unwrap_or(0);
        let on = match (p.syscall, p.slept_state.as_deref()) {
            (Some(nr), _) => arch.describe(nr),
            (None, Some(s)) if s.starts_with('D') => "uninterruptible, no system call (page fault?)".into(),
            _ => "no system call seen".into(),
        };
        let shift = p.release_ns - self.period.release_ns;
        // A sleep's timer that fired before it slept: a wakeup inside the job, no block. A job
        // that never ends (its cadence stopped) keeps a bounded list: past it, a block adds to
        // the latest of its kind.
        let full = self.blocks.len() >= BLOCKS_KEPT;
        match self.blocks.iter_mut().rev().find(|b| b.1 == on).filter(|_| full) {
            _ if slept == 0 => {}
            Some(b) => b.2 += slept,
            None => self.blocks.push((shift + p.waking_ns, on, slept)),
        }
        self.resumes += u32::from(!p.continued);
        self.tail = Tail::of(&p, shift);
        let j = &mut self.period;
        // A later period's marks count from the job's release, with the job's totals before it.
        let (running, preempted) = (j.running_ns, j.preempted_ns);
        let moved = |mut m: Mark| {
            m.at_ns += shift;
            m.running_ns += running;
            m.preempted_ns += preempted;
            m
        };
        // Bounded as a period's are: iterations past it are told as one.
        let room = INPUT_WAITS_KEPT.saturating_sub(j.input_waits.len());
        j.input_waits.extend(p.input_waits.into_iter().take(room).map(|(nr, m)| (nr, moved(m))));
        let room = INPUT_WAITS_KEPT.saturating_sub(j.unslept.len());
        j.unslept.extend(p.unslept.into_iter().take(room).map(|mut u| {
            u.at = moved(u.at);
            u
        }));
        j.response_ns = p.response_ns.map(|r| shift + r);
        j.running_ns += p.running_ns;
        j.preempted_ns += p.preempted_ns;
        p.preemptors.into_iter().for_each(|(who, ns)| add(&mut j.preemptors, who, ns));
        p.interrupts.into_iter().for_each(|(n, ns)| add(&mut j.interrupts, n, ns));
    }

    /// The blocks that ended in `(from, to]` (ns after the release): what, and the time.
    fn blocks_in(&self, from: i64, to: i64) -> Vec<(String, i64)> {
        let mut v = Vec::new();
        for (_, on, ns) in self.blocks.iter().filter(|(at, _, _)| *at > from && *at <= to) {
            add(&mut v, on.clone(), *ns);
        }
        v
    }

    /// Cuts the job at `cuts` (in time order): each cut ends a job and begins the next, released
    /// at the cut's release, from the cut's mark. Interrupts and preemptors, not dated, stay
    /// with the first.
    fn cut(self, cuts: Vec<Cut>) -> Vec<Job> {
        let Some(m) = cuts.first().map(|c| c.mark) else { return vec![self] };
        let mut first = self.clone();
        first.period.response_ns = Some(m.at_ns);
        first.period.running_ns = m.running_ns;
        first.period.preempted_ns = m.preempted_ns;
        first.blocked = self.blocks_in(i64::MIN, m.at_ns);
        first.blocked_ns = first.blocked.iter().map(|b| b.1).sum();
        first.tail = None;
        let mut out = vec![first];
        for (i, c) in cuts.iter().enumerate() {
            out.push(self.piece(c, cuts.get(i + 1).map(|n| n.mark)));
        }
        out
    }

    /// The job from cut `c` to mark `to` (`None`: to this job's end).
    fn piece(&self, c: &Cut, to: Option<Mark>) -> Job {
        let base = self.period.release_ns;
        let start = c.mark;
        let (end_at, running, preempted) = match to {
            Some(m) => (Some(m.at_ns), m.running_ns, m.preempted_ns),
            None => (self.period.response_ns, self.period.running_ns, self.period.preempted_ns),
        };
        let blocked = self.blocks_in(start.at_ns, end_at.unwrap_or(i64::MAX));
        let shift = base - c.release_ns;
        let blocks = self
            .blocks
            .iter()
            .filter(|b| b.0 > start.at_ns && b.0 <= end_at.unwrap_or(i64::MAX))
            .map(|(at, on, ns)| (at + shift, on.clone(), *ns))
            .collect();
        Job {
            period: Period {
                tid: self.period.tid,
                cpu: self.period.cpu,
                release_ns: c.release_ns,
                timer: c.irq_ns.is_some(),
                irq_ns: c.irq_ns.filter(|_| !c.unseen),
                unseen: c.unseen,
                wakeup_ns: Some(base + start.at_ns - c.release_ns),
                response_ns: end_at.map(|e| base + e - c.release_ns),
                running_ns: running - start.running_ns,
                preempted_ns: preempted - start.preempted_ns,
                ..Default::default()
            },
            blocked_ns: blocked.iter().map(|b| b.1).sum(),
            blocked,
            blocks,
            woke: c.irq_ns.is_some(),
            tail: self.tail.clone().filter(|_| to.is_none()).map(|mut t| {
                // The tail's times count from this piece's release.
                t.end_ns += base - c.release_ns;
                t.arming.at.at_ns += base - c.release_ns;
                t
            }),
            ..Default::default()
        }
    }
}

/// Where a job is cut in two: an event loop's return from its wait that did not block, or a
/// timer's release that found the thread working.
#[derive(Clone, Copy, Debug)]
struct Cut {
    /// The return from the wait (times after the job's release, with the job's totals).
    mark: Mark,
    /// The next job's release (ns, CLOCK_MONOTONIC): the return itself, or the timer's expiry.
    release_ns: i64,
    /// The timer's interrupt − its expiry, for a timer's release.
    irq_ns: Option<i64>,
    /// A timer's release whose callback was not seen (its interrupt unknown).
    unseen: bool,
}

/// At most this many dated blocks are kept per job.
const BLOCKS_KEPT: usize = 1024;

/// Adds `ns` to `name`'s entry of `v`.
fn add<S: PartialEq>(v: &mut Vec<(S, i64)>, name: S, ns: i64) {
    match v.iter_mut().find(|(n, _)| *n == name) {
        Some(x) => x.1 += ns,
        None => v.push((name, ns)),
    }
}

/// Turns one thread's periods into jobs, once its shape is known.
#[derive(Clone, Debug)]
pub struct Assembler {
    shape: Shape,
    arch: Arch,
    open: Option<Job>,
    /// Periods before its first release (not part of any job).
    pub before_first_release: u64,
}

impl Assembler {
    /// An assembler for a thread of `shape`.
    pub fn new(shape: Shape, arch: Arch) -> Assembler {
        Assembler { shape, arch, open: None, before_first_release: 0 }
    }

    /// The shape it assembles by.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The next period (in order); the jobs it ended go to `out`.
    pub fn push(&mut self, p: Period, out: &mut Vec<Job>) {
        let releases = match &self.shape {
            Shape::TimerPeriodic(key) => key.same(&p),
            Shape::EventLoop { syscall } => p.syscall == Some(*syscall),
            // A continued period (the previous one's list of waits was full) is no wakeup.
            Shape::Irregular => !p.continued,
        };
        match self.open.as_ref() {
            Some(j) if !releases => {
                // A job that never ends (its wakeups all inside it) is told up to its latest
                // cut before its lists fill, so no iteration or release is lost.
                let full = |now: usize, more: usize| now + more > INPUT_WAITS_KEPT;
                if full(j.period.input_waits.len(), p.input_waits.len())
                    || full(j.period.unslept.len(), p.unslept.len())
                {
                    self.split_open(out);
                }
                if let Some(j) = self.open.as_mut() {
                    j.merge(p, self.arch);
                }
            }
            None if !releases => self.before_first_release += 1,
            _ => {
                self.close(out);
                self.open = Some(Job::start(p));
            }
        }
        // A period that ended (or was cut) with the thread's exit closes its job at once.
        if self.open.as_ref().is_some_and(|j| j.period.response_ns.is_none()) {
            self.close(out);
        }
    }

    /// The run ends: the job under way, if any.
    pub fn finish(&mut self, out: &mut Vec<Job>) {
        self.close(out);
    }

    fn close(&mut self, out: &mut Vec<Job>) {
        let Some(mut j) = self.open.take() else { return };
        j.blocked = j.blocks_in(i64::MIN, i64::MAX);
        j.blocked_ns = j.blocked.iter().map(|b| b.1).sum();
        let mut jobs = self.cut_all(j);
        if let (Shape::TimerPeriodic(key), Some(last)) = (&self.shape, jobs.last_mut()) {
            last.end_at_arming(key);
        }
        for job in &mut jobs {
            job.blocks.clear();
        }
        out.extend(jobs);
    }

    /// The open job's iterations up to its latest cut go to `out`; the last stays open.
    fn split_open(&mut self, out: &mut Vec<Job>) {
        let Some(j) = self.open.take() else { return };
        let mut jobs = self.cut_all(j);
        self.open = jobs.pop();
        for job in &mut jobs {
            job.blocks.clear();
        }
        out.extend(jobs);
    }

    /// Job `j` cut at its event loop's waits that did not block, or at its timer's releases
    /// that found it working (by the shape), its lists of them emptied.
    fn cut_all(&self, mut j: Job) -> Vec<Job> {
        j.period.preemptors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        j.period.interrupts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let cuts: Vec<Cut> = match &self.shape {
            Shape::EventLoop { syscall } => {
                let release = j.period.release_ns;
                j.period
                    .input_waits
                    .iter()
                    .filter(|(nr, _)| nr == syscall)
                    .map(|(_, m)| Cut { mark: *m, release_ns: release + m.at_ns, irq_ns: None, unseen: false })
                    .collect()
            }
            Shape::TimerPeriodic(key) => j
                .period
                .unslept
                .iter()
                .filter(|u| u.timer == key.addr)
                .map(|u| Cut { mark: u.at, release_ns: u.release_ns, irq_ns: Some(u.irq_ns), unseen: u.unseen })
                .collect(),
            Shape::Irregular => Vec::new(),
        };
        j.period.input_waits.clear();
        j.period.unslept.clear();
        j.cut(cuts)
    }
}

/// The jobs of thread `tid` in a recording (`rtlab watch --events` lines, in time order) as the
/// watch probe makes them live: its periods from the tracker, its shape learnt from the first
/// ones (`period_ns`: `--period`), then every period assembled. `arch`: the system call numbers
/// of the kernel it was recorded on.
pub fn replay(events: &[super::event::Event], tid: i32, arch: Arch, period_ns: Option<i64>) -> Replay {
    let mut tracker = super::watch::Tracker::new(0).with_arch(arch);
    tracker.watch(tid);
    let mut notes = Vec::new();
    for e in events {
        tracker.feed(e, &mut notes);
    }
    tracker.finish(&mut notes);
    let periods: Vec<Period> = notes
        .into_iter()
        .filter_map(|n| match n {
            super::watch::Note::Period(p) if p.tid == tid => Some(*p),
            _ => None,
        })
        .collect();
    let mut learner = Learner::new(arch);
    let mut shape = None;
    for (i, p) in periods.iter().enumerate() {
        learner.observe(p);
        shape = learner.decide(period_ns, i + 1 >= PENDING_MAX);
        if shape.is_some() {
            break;
        }
    }
    let Some((shape, cadence)) = shape.or_else(|| learner.decide(period_ns, true)) else {
        return Replay { learner, shape: None, cadence: Cadence::new(period_ns), jobs: Vec::new() };
    };
    let mut assembler = Assembler::new(shape.clone(), arch);
    let mut jobs = Vec::new();
    for p in periods {
        assembler.push(p, &mut jobs);
    }
    assembler.finish(&mut jobs);
    Replay { learner, shape: Some(shape), cadence, jobs }
}

/// What [`replay`] found.
#[derive(Clone, Debug)]
pub struct Replay {
    /// What the shape was learnt from (for its evidence).
    pub learner: Learner,
    /// The thread's shape (`None`: it never woke).
    pub shape: Option<Shape>,
    /// Its schedule.
    pub cadence: Cadence,
    /// Its jobs, in order.
    pub jobs: Vec<Job>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::Mark;

    fn period(release: i64, response: i64, running: i64) -> Period {
        Period {
            tid: 7,
            release_ns: release,
            wakeup_ns: Some(10),
            response_ns: Some(response),
            running_ns: running,
            syscall: Some(232),
            ..Default::default()
        }
    }

    #[test]
    fn an_event_loops_job_is_cut_into_iterations_at_its_waits_that_did_not_block() {
        // Woken at 1000, it returns from epoll_wait without blocking at +300 and +700, and
        // waits (blocks) at +1000; it ran 250, 380 and 290 ns of those stretches.
        let mut p = period(1000, 1000, 920);
        let mark = |at, running| Mark { at_ns: at, running_ns: running, preempted_ns: 0 };
        p.input_waits = vec![(232, mark(300, 250)), (0, mark(500, 400)), (232, mark(700, 630))];
        let mut a = Assembler::new(Shape::EventLoop { syscall: 232 }, Arch::X86_64);
        let mut jobs = Vec::new();
        a.push(p, &mut jobs);
        a.push(period(5000, 100, 90), &mut jobs);
        let got: Vec<(i64, Option<i64>, i64, bool)> = jobs
            .iter()
            .take(3)
            .map(|j| (j.period.release_ns, j.period.response_ns, j.period.running_ns, j.woke))
            .collect();
        assert_eq!(
            got,
            [(1000, Some(300), 250, true), (1300, Some(400), 380, false), (1700, Some(300), 290, false)],
            "the read at +500 is no wait of the loop's"
        );
        assert_eq!(jobs[1].busy_ns(), Some(400));
        assert_eq!(jobs[0].busy_ns(), Some(290), "after its wakeup latency of 10");
        for j in &jobs[..3] {
            assert_eq!(j.waiting_ns().unwrap() + j.period.running_ns + j.blocked_ns, j.period.response_ns.unwrap());
        }
    }

    #[test]
    fn a_timer_periodic_job_keeps_the_blocks_inside_it_and_ends_where_it_armed_its_next_release() {
        let key = TimerKey { addr: Name::default(), relative: false, function: ON_STACK.into(), syscall: Some(230) };
        let release = |at: i64, relative: bool| Period {
            timer: true,
            relative,
            timer_addr: Some("ffff01".into()),
            timer_function: Some(ON_STACK.into()),
            syscall: Some(230),
            ..period(at, 0, 0)
        };
        let mut a = Assembler::new(Shape::TimerPeriodic(key), Arch::X86_64);
        let mut jobs = Vec::new();
        // Released at 0: runs 100, sleeps 50 on a relative timer (blocked 50 from +100).
        let mut first = Period { response_ns: Some(100), running_ns: 95, ..release(0, false) };
        first.armed_last =
            Some(Arming { at: Mark { at_ns: 98, running_ns: 93, preempted_ns: 0 }, relative: true, timer: "a".into() });
        a.push(first, &mut jobs);
        // Woken at +150 by its pause's timer (slept 50): runs 100, arms the next release at +248
        // (having run 97 of the 99 it runs) and blocks at +250.
        let mut second = Period {
            slept_ns: Some(50),
            slept_state: Some("S".into()),
            response_ns: Some(100),
            running_ns: 99,
            ..release(150, true)
        };
        second.armed_last = Some(Arming {
            at: Mark { at_ns: 98, running_ns: 97, preempted_ns: 0 },
            relative: false,
            timer: "b".into(),
        });
        a.push(second, &mut jobs);
        assert!(jobs.is_empty(), "the pause's wakeup is inside the job");
        a.push(Period { slept_ns: Some(750), ..release(1000, false) }, &mut jobs);
        let j = &jobs[0];
        assert_eq!((j.period.release_ns, j.period.response_ns), (0, Some(248)));
        assert_eq!((j.period.running_ns, j.blocked_ns, j.resumes), (95 + 97, 50, 1));
        assert_eq!(j.blocked, vec![("clock_nanosleep".to_string(), 50)]);
        assert_eq!(j.waiting_ns(), Some(248 - 192 - 50));
    }

    #[test]
    fn a_loop_that_keeps_finding_input_has_every_iteration_counted_however_long_it_never_blocks() {
        use crate::event::Kind;
        use crate::testing::{ev, switch};
        // Woken once (its epoll_wait returns at 1 100), it then finds input waiting 1 000 times
        // (held off the CPU, its input piled up), each iteration busy 90 ns, and blocks.
        let mut events = vec![
            ev(1_000, 0, 7, switch(7, "S", 0)),
            ev(1_050, 1, 3, Kind::Waking { pid: 7, comm: "t7".into(), prio: 120 }),
        ];
        events.push(ev(1_100, 0, 7, Kind::SysExit { nr: 232 }));
        for k in 1..=1_000 {
            events.push(ev(1_100 + k * 100, 0, 7, Kind::SysExit { nr: 232 }));
        }
        events.push(ev(1_100 + 1_000 * 100 + 90, 0, 7, switch(7, "S", 0)));
        let r = replay(&events, 7, Arch::X86_64, None);
        assert_eq!(r.shape, Some(Shape::EventLoop { syscall: 232 }));
        assert_eq!(r.jobs.len(), 1_001, "one iteration woken, then 1 000 that found input");
        assert_eq!(r.jobs.iter().filter(|j| j.woke).count(), 1);
        assert_eq!(r.learner.wakeups, 1, "only the first was a wakeup");
        for (i, j) in r.jobs.iter().enumerate() {
            assert_eq!(j.period.release_ns, if i == 0 { 1_050 } else { 1_100 + i as i64 * 100 }, "{i}");
            assert_eq!(j.busy_ns(), Some(if i == 1_000 { 90 } else { 100 }), "{i}");
        }
    }

    #[test]
    fn an_irregular_threads_job_is_not_cut_where_its_period_was_continued() {
        let mut a = Assembler::new(Shape::Irregular, Arch::X86_64);
        let mut jobs = Vec::new();
        a.push(period(0, 500, 400), &mut jobs);
        a.push(Period { continued: true, wakeup_ns: Some(0), ..period(500, 300, 300) }, &mut jobs);
        a.push(period(5_000, 100, 90), &mut jobs);
        a.finish(&mut jobs);
        let got: Vec<(i64, Option<i64>, i64, u32)> =
            jobs.iter().map(|j| (j.period.release_ns, j.period.response_ns, j.period.running_ns, j.resumes)).collect();
        assert_eq!(got, [(0, Some(800), 700, 0), (5_000, Some(100), 90, 0)]);
    }

    #[test]
    fn a_loop_woken_inside_its_iterations_but_never_at_its_wait_has_every_iteration_counted() {
        let mut a = Assembler::new(Shape::EventLoop { syscall: 232 }, Arch::X86_64);
        let mut jobs = Vec::new();
        a.push(period(0, 10, 10), &mut jobs);
        let mark = Mark { at_ns: 5, running_ns: 5, preempted_ns: 0 };
        for k in 1..=10_000 {
            // Woken from a futex (no release of the loop's), with a wait that did not block.
            let p = Period {
                syscall: Some(202),
                slept_ns: Some(7),
                input_waits: vec![(232, mark)],
                ..period(k * 100, 10, 10)
            };
            a.push(p, &mut jobs);
            let open = a.open.as_ref().unwrap();
            assert!(open.blocks.len() <= BLOCKS_KEPT && open.period.input_waits.len() <= INPUT_WAITS_KEPT);
        }
        a.finish(&mut jobs);
        assert_eq!(jobs.len(), 10_001, "every iteration told apart");
        assert_eq!(jobs.iter().map(|j| j.resumes).sum::<u32>(), 10_000, "every wakeup inside counted once");
        assert_eq!(jobs.iter().map(|j| j.blocked_ns).sum::<i64>(), 70_000, "every block counted once");
        // Each iteration: from its wait's return (+5 after a futex wakeup at k*100) to the next
        // one's: 100 ns, 7 of them blocked.
        assert!(jobs[1..10_000].iter().all(|j| j.busy_ns() == Some(100) && j.blocked_ns == 7), "{:?}", &jobs[1..3]);
    }

    #[test]
    fn a_periodic_absolute_timer_is_the_cadence_before_a_relative_pause_inside_the_period() {
        let mut l = Learner::new(Arch::X86_64);
        for k in 0..12 {
            let at = k * 1_000_000;
            let abs = Period {
                tid: 7,
                release_ns: at,
                timer: true,
                timer_addr: Some(format!("ff{k}").into()),
                timer_function: Some(ON_STACK.into()),
                wakeup_ns: Some(5_000),
                syscall: Some(230),
                slept_ns: Some(700_000),
                ..Default::default()
            };
            let pause = Period { release_ns: at + 150_000, relative: true, slept_ns: Some(50_000), ..abs.clone() };
            l.observe(&abs);
            l.observe(&pause);
        }
        let (shape, cadence) = l.decide(None, false).expect("decided");
        assert!(matches!(&shape, Shape::TimerPeriodic(k) if !k.relative && k.syscall == Some(230)), "{shape:?}");
        assert_eq!(cadence.period_ns(), Some(1_000_000));
        assert_eq!(shape.evidence(&l), "clock_nanosleep on one absolute timer (hrtimer_wakeup) at a steady period");
    }

    #[test]
    fn a_periodic_timer_whose_first_intervals_were_unsteady_is_learnt_from_the_next_ones() {
        // A 1 ms absolute timer: its first intervals are a start-up's (3 of the first 8 off the
        // grid), then steady. Learnt from the first 8 alone it would be no cadence at all.
        let mut l = Learner::new(Arch::X86_64);
        let mut armed = 0;
        for k in 0..24i64 {
            let interval = if [1, 3, 4].contains(&k) { 1_370_000 } else { 1_000_000 };
            let p = Period {
                tid: 7,
                release_ns: armed + interval,
                previous_armed_ns: (k > 0).then_some(armed),
                timer: true,
                timer_addr: Some("ffd".into()),
                timer_function: Some("timerfd_tmrproc".into()),
                wakeup_ns: Some(5_000),
                syscall: Some(0),
                slept_ns: Some(900_000),
                ..Default::default()
            };
            armed += interval;
            l.observe(&p);
            let decided = l.decide(None, false);
            // Not on the unsteady window (intervals 1–8), nor before half the next (9–12).
            assert_eq!(decided.is_some(), k >= 12, "period {k}: {decided:?}");
        }
        let (shape, cadence) = l.decide(None, false).expect("decided");
        assert!(matches!(&shape, Shape::TimerPeriodic(t) if t.addr == "ffd"), "{shape:?}");
        assert_eq!(cadence.period_ns(), Some(1_000_000));
    }

    #[test]
    fn a_relative_timer_armed_for_one_duration_is_periodic_however_late_its_wakeups_come_under_load() {
        // Each period sleeps 1 ms from where it armed the timer; a busy machine makes each
        // wakeup late by anything up to 0.9 ms, so the releases drift far from any grid.
        let mut l = Learner::new(Arch::X86_64);
        let mut release = 0;
        for k in 0..12i64 {
            let late = 50_000 + (k * 337_000) % 900_000;
            let p = Period {
                tid: 7,
                release_ns: release,
                timer: true,
                relative: true,
                timer_addr: Some("ffa".into()),
                timer_function: Some(ON_STACK.into()),
                wakeup_ns: Some(late),
                syscall: Some(230),
                slept_ns: Some(1_000_000),
                armed_last: Some(Arming {
                    at: Mark { at_ns: late + 20_000, running_ns: 20_000, preempted_ns: 0 },
                    relative: true,
                    timer: "ffa".into(),
                }),
                ..Default::default()
            };
            l.observe(&p);
            release += late + 20_000 + 1_000_000;
        }
        let (shape, _) = l.decide(None, false).expect("decided");
        assert!(matches!(&shape, Shape::TimerPeriodic(k) if k.relative), "{shape:?}");
    }

    #[test]
    fn a_thread_woken_by_others_in_a_wait_for_input_is_an_event_loop_and_in_a_lock_is_irregular() {
        for (nr, want) in [(232, "event-loop"), (202, "irregular")] {
            let mut l = Learner::new(Arch::X86_64);
            for k in 0..PENDING_MAX as i64 {
                l.observe(&Period { syscall: Some(nr), wakeup_ns: Some(1), ..period(k * 1000, 10, 5) });
            }
            assert_eq!(l.decide(None, false).map(|s| s.0.name()), Some(want));
        }
    }
}
