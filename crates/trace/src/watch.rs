//! Periods of any thread from the kernel's events (`rtlab watch`): a state machine per
//! watched thread that turns its events into periods — the release (the expiry its timer was
//! armed for, or the instant another task or an interrupt woke it), the timer interrupt, the
//! switch to it, its return to user space, and its next block — with the preemption it
//! suffered while it worked.
//!
//! Events arrive in time order over all CPUs ([`Tracker::feed`]). Nothing depends on one event
//! alone: this VM's kernel does not trace a switch out of idle, so the thread latency is known
//! only for the periods whose switch was seen, and every period says which figures it has.

use super::event::{Event, Kind, Name};
use super::syscalls::Arch;
use std::collections::HashMap;

/// The tracker's maps, looked up at every event: thread ids, CPUs and timer addresses hashed
/// fast (foldhash; SipHash took a tenth of the reader's time).
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One period of a watched thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Period {
    /// The thread.
    pub tid: i32,
    /// The release (ns, CLOCK_MONOTONIC): the expiry asked for, or the waking.
    pub release_ns: i64,
    /// Released by a timer it armed (else woken by another task or an interrupt).
    pub timer: bool,
    /// The timer's interrupt (`hrtimer_expire_entry`) − release (ns).
    pub irq_ns: Option<i64>,
    /// `sched_waking` − release (ns).
    pub waking_ns: i64,
    /// The switch to the thread − release (ns), when that switch was traced.
    pub thread_ns: Option<i64>,
    /// The return to user space (`sys_exit` of the call it slept in) − release (ns): the
    /// moment a program reads its clock after the wakeup.
    pub wakeup_ns: Option<i64>,
    /// The next block (a switch away in a sleeping state) − release (ns); `None` when the
    /// thread exited or the run ended first.
    pub response_ns: Option<i64>,
    /// Time it was runnable but not running after it first ran (ns).
    pub preempted_ns: i64,
    /// Who ran instead (`comm:pid`) and for how long (ns), longest first.
    pub preemptors: Vec<(Name, i64)>,
    /// The CPU it returned to user space on (else the one it was switched in on, else woken on).
    pub cpu: usize,
    /// The timer slack the kernel added to its timer (`expires − softexpires`, ns).
    pub slack_ns: Option<i64>,
    /// Its timer was armed with a relative expiry (`nanosleep`): its releases drift by each
    /// period's latency, and it never skips one.
    pub relative: bool,
    /// The expiry the same timer was armed for before this release's (ns): the program's own
    /// schedule, seen even in periods it did not sleep (overloaded, it arms an expiry already
    /// past and runs on), so the gap to it is the period, or the periods the program skipped.
    pub previous_armed_ns: Option<i64>,
    /// `thread_ns` is dated by the thread's first traced event after its release (its
    /// `sys_exit`), the switch in not being traced: an upper bound.
    pub thread_by_first_event: bool,
    /// The timer that released it (its address as the events print it), when one did: with
    /// `relative`, which of the thread's timers this was (a period's and a mid-period sleep's
    /// differ by address or mode).
    pub timer_addr: Option<Name>,
    /// That timer's callback (`hrtimer_wakeup`, `timerfd_tmrproc`, …).
    pub timer_function: Option<Name>,
    /// The system call it returned from first after the wakeup: the one it slept in.
    pub syscall: Option<i64>,
    /// How long it was asleep before this wakeup (its block to its waking, ns); `None` for
    /// the first wakeup watched.
    pub slept_ns: Option<i64>,
    /// The state it slept in (`S`: waiting for something; `D`: uninterruptible, I/O or a
    /// page fault).
    pub slept_state: Option<Name>,
    /// The task whose context woke it (`comm:pid`; an interrupt's is whatever it interrupted).
    pub waker: Option<Name>,
    /// Time it ran (on a CPU, its own work or interrupts taken in its context), ns.
    pub running_ns: i64,
    /// Interrupts and softirqs taken in its context while it ran, by name, with their time (ns).
    pub interrupts: Vec<(Name, i64)>,
    /// Its returns from a wait for input that did not block (an event loop that found work
    /// waiting), at most [`INPUT_WAITS_KEPT`]: the call, and when.
    pub input_waits: Vec<(i64, Mark)>,
    /// The last sleep it armed before it blocked (a timer on its stack): when its wait for
    /// that expiry began, before the kernel's own work to put it to sleep.
    pub armed_last: Option<Arming>,
    /// Expiries of a timer of its own that released it with no sleep: it was working when
    /// the timer fired, and its wait for it (a `read` of a timerfd) returned at once.
    pub unslept: Vec<Unslept>,
    /// It began at a return from a wait for input that did not block, not at a wakeup: the
    /// period before it kept finding input until its list of such returns was full.
    pub continued: bool,
    /// The kernel's events of its wakeup were not seen (no timer interrupt, waking or switch
    /// in: some contexts deliver no events to BPF programs): its release is the expiry of the
    /// sleep it armed, its wakeup latency its return to user space from that sleep, its IRQ and
    /// thread latencies unknown.
    pub unseen: bool,
}

/// A release with no sleep: its timer fired while the thread worked; the thread found the
/// expiry when it next waited.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unslept {
    /// The timer (its address).
    pub timer: Name,
    /// The expiry it was armed for (ns, CLOCK_MONOTONIC).
    pub release_ns: i64,
    /// Its interrupt − the expiry (ns).
    pub irq_ns: i64,
    /// The return from the wait that found it.
    pub at: Mark,
    /// Its callback was not seen (the BPF programs miss events in some contexts): the expiry is
    /// known from the timer's re-arming after it, its interrupt is not (`irq_ns` is 0).
    pub unseen: bool,
}

/// A sleep armed inside a period: the start of a wait.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Arming {
    /// When it armed it, and how long it had run and been preempted in the period by then
    /// (ns after the release, ns, ns).
    pub at: Mark,
    /// Relative (else absolute).
    pub relative: bool,
    /// The timer (its address).
    pub timer: Name,
}

/// A moment inside a period, with the period's totals by then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mark {
    /// When (ns after the period's release).
    pub at_ns: i64,
    /// Its running time in the period by then (ns).
    pub running_ns: i64,
    /// Its preemption in the period by then (ns).
    pub preempted_ns: i64,
}

/// At most this many returns from non-blocking waits are kept per period.
pub const INPUT_WAITS_KEPT: usize = 256;

impl Period {
    /// The stages are in the order time runs: the timer interrupt, then the switch to the
    /// thread, then its return to user space (each that was traced).
    pub fn stages_in_order(&self) -> bool {
        let known: Vec<i64> = [self.irq_ns, self.thread_ns, self.wakeup_ns].into_iter().flatten().collect();
        known.windows(2).all(|w| w[0] <= w[1])
    }

    /// Released by `timer`, armed as `a`: at the expiry it asked for.
    fn released_by(&mut self, timer: Name, a: &Armed) {
        self.release_ns = a.soft_ns;
        self.timer = true;
        self.slack_ns = Some(a.hard_ns - a.soft_ns);
        self.relative = a.relative;
        self.previous_armed_ns = a.previous_soft_ns;
        self.timer_addr = Some(timer);
        self.timer_function = Some(a.function.clone());
    }
}

/// A timer a watched thread armed: its expiry asked for and the latest one.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Armed {
    soft_ns: i64,
    hard_ns: i64,
    relative: bool,
    /// The expiry this timer was armed for before (ns).
    previous_soft_ns: Option<i64>,
    /// Its callback.
    function: Name,
}

/// The callback of a timer a task sleeps on (`clock_nanosleep`, `nanosleep`, poll, epoll and
/// futex timeouts): the timer is on the sleeper's kernel stack.
pub const ON_STACK: &str = "hrtimer_wakeup";

/// Where a watched thread is.
#[derive(Clone, Debug, Default)]
struct Thread {
    /// Timers it armed, by address and mode (the latest few, the latest arming last: one
    /// address may be armed absolute for the period and relative for a sleep inside it).
    armed: Vec<(Name, Armed)>,
    /// Running since (its switch in, or its first event after a wakeup).
    running_since: Option<i64>,
    /// Expiries of timers armed in its context that fired with no waking of it (yet), oldest
    /// first: each return from a wait for input finds the oldest of each timer. (A timerfd's
    /// read re-arms it before it returns, so the next expiry can fire before the read that
    /// found this one returns; a kernel timer armed in its context fires and is never waited
    /// for, and must not stand in the way.)
    fired: Vec<Unslept>,
    /// Asleep since (ns), and in which state.
    asleep: Option<(i64, Name)>,
    /// The period under way.
    open: Option<Period>,
    /// It ran during the open period (an event of its own was seen).
    ran: bool,
    /// Preempted at, by whom.
    runnable: Option<(i64, Name)>,
    /// Gone (exited).
    gone: bool,
    /// A waking traced while it still ran (the kernel was putting it to sleep and the waker's
    /// CPU traced first): what released it if it is next switched in from a sleep with no
    /// waking traced after it.
    early: Option<Event>,
}

impl Thread {
    /// Its period `p` begins: it has not run in it yet.
    fn opened(&mut self, p: Period) {
        self.open = Some(p);
        self.ran = false;
        self.runnable = None;
        self.running_since = None;
    }
}

/// A return from a wait for input (`at`) finds the oldest unfound expiry of each timer in
/// `fired`: the wait does not say which it was on (the job assembler keeps its cadence's).
fn found(fired: &mut Vec<Unslept>, at: Mark) -> Vec<Unslept> {
    let mut found: Vec<Unslept> = Vec::new();
    fired.retain(|f| {
        if found.iter().any(|u| u.timer == f.timer) {
            return true;
        }
        found.push(Unslept { at, ..f.clone() });
        false
    });
    found
}

/// A timer callback that started on a CPU.
#[derive(Clone, Debug)]
struct Callback {
    timer: Name,
    function: Name,
    /// The expiry time the kernel used (`now`).
    now: i64,
    /// When it started.
    ts: i64,
}

/// Callbacks that never wake a sleeping thread (the scheduler tick), by name.
const NOT_WAKING: &[&str] = &["tick_nohz_handler", "tick_sched_timer", "hrtick"];

/// At most this many expiries found by no wait yet are kept per thread (a timerfd has at most
/// two: one found by a read under way, the next fired before it returned).
const FIRED_KEPT: usize = 16;

/// At most this many armed timers are remembered per thread.
const ARMED_KEPT: usize = 8;

/// What the tracker tells its user besides periods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// A period ended (or was cut by an exit).
    Period(Box<Period>),
    /// A new task appeared (`sched_process_fork`): its tid, name and the task that created it.
    Forked {
        /// The creator.
        parent: i32,
        /// The new task.
        child: i32,
        /// Its name.
        comm: Name,
        /// When (ns, CLOCK_MONOTONIC).
        ts_ns: i64,
    },
    /// A task renamed itself.
    Renamed {
        /// The task.
        tid: i32,
        /// Its new name.
        comm: Name,
    },
    /// A watched thread exited.
    Exited(i32),
}

/// The state machine over every watched thread.
#[derive(Debug, Default)]
pub struct Tracker {
    threads: FastMap<i32, Thread>,
    /// Which watched thread armed a timer of its own (by address; a sleep's is not kept).
    timers: FastMap<Name, i32>,
    /// Per CPU, the latest timer callback that started there (an exit, where recorded, ends
    /// it; a waking uses it up).
    callbacks: FastMap<usize, Callback>,
    /// CLOCK_REALTIME − CLOCK_MONOTONIC (ns): a timer on the realtime clock expires in its time.
    realtime_offset_ns: i64,
    /// The kernel's system call numbers.
    arch: Arch,
    /// Per CPU and kind (hard, soft), the interrupt under way: its start and name.
    interrupts: FastMap<(usize, bool), (i64, Name)>,
}

impl Tracker {
    /// A tracker with no thread; `realtime_offset_ns` converts realtime timers' expiries.
    pub fn new(realtime_offset_ns: i64) -> Tracker {
        Tracker { realtime_offset_ns, ..Default::default() }
    }

    /// The same, reading system call numbers as `arch`'s (the traced kernel's).
    pub fn with_arch(self, arch: Arch) -> Tracker {
        Tracker { arch, ..self }
    }

    /// Starts watching `tid`.
    pub fn watch(&mut self, tid: i32) {
        self.threads.entry(tid).or_default();
    }

    /// True when `tid` is watched and alive.
    pub fn watching(&self, tid: i32) -> bool {
        self.threads.get(&tid).is_some_and(|t| !t.gone)
    }

    /// One event (in time order); what it concluded goes to `out`.
    pub fn feed(&mut self, e: &Event, out: &mut Vec<Note>) {
        // An event in the context of a thread asleep with no period open: it was woken and
        // switched in unseen (before this event changes what it armed).
        if let Some(t) = self.threads.get_mut(&e.pid).filter(|t| !t.gone && t.open.is_none() && t.asleep.is_some()) {
            unseen_wakeup(t, e);
        }
        match &e.kind {
            Kind::HrtimerStart { timer, function, expires_ns, softexpires_ns, relative } => {
                self.armed(e.pid, (timer, function), (*softexpires_ns, *expires_ns, *relative), e.ts_ns)
            }
            Kind::HrtimerEntry { timer, function, now_ns } => {
                let cb = Callback {
                    timer: timer.clone(),
                    function: function.clone(),
                    now: now_ns.unwrap_or(e.ts_ns),
                    ts: e.ts_ns,
                };
                self.fired(&cb);
                self.callbacks.insert(e.cpu, cb);
            }
            Kind::HrtimerExit => {
                self.callbacks.remove(&e.cpu);
            }
            Kind::Waking { pid, .. } => self.woken(*pid, e, out),
            Kind::Switch { prev_pid, prev_state, next_pid, next_comm, .. } => {
                self.switched_out(*prev_pid, prev_state, (next_comm, *next_pid), e.ts_ns, out);
                self.woken_before_it_slept(*next_pid, out);
                self.switched_in(*next_pid, e);
            }
            Kind::SysExit { .. } => self.returned(e, out),
            Kind::Exit { pid } => self.exited(*pid, out),
            Kind::Fork { child_pid, child_comm } => {
                out.push(Note::Forked { parent: e.pid, child: *child_pid, comm: child_comm.clone(), ts_ns: e.ts_ns })
            }
            Kind::Rename { pid, comm } => out.push(Note::Renamed { tid: *pid, comm: comm.clone() }),
            Kind::IrqEntry { name, .. } => self.interrupt(e, false, Some(name)),
            Kind::IrqExit { .. } => self.interrupt(e, false, None),
            Kind::SoftirqEntry { name } => self.interrupt(e, true, Some(name)),
            Kind::SoftirqExit { .. } => self.interrupt(e, true, None),
            Kind::VectorEntry { name } => self.interrupt(e, false, Some(name)),
            Kind::VectorExit { .. } => self.interrupt(e, false, None),
            _ => {}
        }
        if let Some(t) = self.threads.get_mut(&e.pid).filter(|t| !t.gone) {
            // Any event in the thread's own context shows it ran; the first one after its
            // release dates its switch in when the kernel traced none (out of idle it often
            // does not): an upper bound, a few hundred ns late.
            if let Some(p) = t.open.as_mut().filter(|_| !matches!(e.kind, Kind::Switch { .. })) {
                if !t.ran && p.thread_ns.is_none() {
                    p.thread_ns = Some(e.ts_ns - p.release_ns);
                    p.thread_by_first_event = true;
                }
                if !t.ran {
                    t.running_since = t.running_since.or(Some(e.ts_ns));
                }
                t.ran = true;
            }
        }
    }

    /// The run ends: periods still under way are cut (no response).
    pub fn finish(&mut self, out: &mut Vec<Note>) {
        let mut tids: Vec<i32> = self.threads.keys().copied().collect();
        tids.sort_unstable();
        for tid in tids {
            if let Some(p) = self.threads.get_mut(&tid).and_then(|t| t.open.take()) {
                out.push(Note::Period(Box::new(p)));
            }
        }
    }

    fn armed(&mut self, tid: i32, (timer, function): (&str, &str), (soft, hard, relative): (i64, i64, bool), now: i64) {
        let offset = self.realtime_offset_ns;
        let Some(t) = self.threads.get_mut(&tid).filter(|t| !t.gone) else { return };
        // A realtime timer's expiry is far beyond the monotonic clock (decades since boot).
        let shift = if soft > now + 1_000_000_000_000_000 { offset } else { 0 };
        // A sleeper's timer lives on the kernel stack, whose offset the kernel may randomise
        // at every system call: its address names no timer, its callback and mode do.
        let on_stack = function == ON_STACK;
        let same = |(a, x): &(Name, Armed)| {
            x.relative == relative && if on_stack { x.function == function } else { a == timer }
        };
        let previous = t.armed.iter().rev().find(|a| same(a)).map(|(_, a)| a.clone());
        if let Some(prev) = previous.as_ref().filter(|_| !on_stack) {
            fired_unseen(t, timer, prev, now);
        }
        let previous_soft_ns = previous.map(|a| a.soft_ns);
        let armed = Armed {
            soft_ns: soft - shift,
            hard_ns: hard - shift,
            relative,
            previous_soft_ns,
            function: function.into(),
        };
        t.armed.retain(|a| !same(a));
        t.armed.push((timer.into(), armed));
        if let (true, Some(p)) = (on_stack, t.open.as_mut()) {
            let running_ns = p.running_ns + t.running_since.map_or(0, |s| now - s);
            let at = Mark { at_ns: now - p.release_ns, running_ns, preempted_ns: p.preempted_ns };
            p.armed_last = Some(Arming { at, relative, timer: timer.into() });
        }
        if t.armed.len() > ARMED_KEPT {
            let (old, _) = t.armed.remove(0);
            if !t.armed.iter().any(|(a, _)| *a == old) {
                self.timers.remove(&old);
            }
        }
        // A sleep's timer is found by its callback, never by its address (a stack slot the
        // kernel may move at every system call): only a timer of the thread's own is kept, or
        // the map grows by one entry per sleep at a new address.
        if !on_stack {
            self.timers.insert(timer.into(), tid);
        }
    }

    /// A timer of a watched thread's own (a timerfd's, a POSIX timer's: not a sleep's) fires:
    /// if no waking of the thread follows, it was not waiting, and its next return from a
    /// wait for input is that expiry's release.
    fn fired(&mut self, c: &Callback) {
        if c.function == ON_STACK || NOT_WAKING.contains(&c.function.as_str()) {
            return;
        }
        let Some(t) = self.timers.get(&c.timer).and_then(|tid| self.threads.get_mut(tid)) else { return };
        if let Some((_, a)) = t.armed.iter().rev().find(|(a, _)| *a == c.timer).filter(|(_, a)| c.now >= a.soft_ns) {
            if t.fired.len() >= FIRED_KEPT {
                t.fired.remove(0);
            }
            t.fired.push(Unslept {
                timer: c.timer.clone(),
                release_ns: a.soft_ns,
                irq_ns: c.now - a.soft_ns,
                ..Default::default()
            });
        }
    }

    /// An interrupt (`soft`: a softirq) starts (`name`) or ends on `e`'s CPU; one that ends in
    /// a watched thread's context while it runs is counted in its period.
    fn interrupt(&mut self, e: &Event, soft: bool, name: Option<&Name>) {
        if let Some(name) = name {
            self.interrupts.insert((e.cpu, soft), (e.ts_ns, name.clone()));
            return;
        }
        let Some((start, name)) = self.interrupts.remove(&(e.cpu, soft)) else { return };
        let Some(t) = self.threads.get_mut(&e.pid).filter(|t| !t.gone && t.running_since.is_some()) else { return };
        let Some(p) = t.open.as_mut() else { return };
        let ns = e.ts_ns - start;
        match p.interrupts.iter_mut().find(|(n, _)| *n == name) {
            Some(x) => x.1 += ns,
            None => p.interrupts.push((name, ns)),
        }
    }

    fn woken(&mut self, tid: i32, e: &Event, out: &mut Vec<Note>) {
        let Some(t) = self.threads.get_mut(&tid).filter(|t| !t.gone) else { return };
        let asleep = t.asleep.take().or_else(|| {
            // The sleep it armed last fired before it got to sleep (the kernel was still putting
            // it to sleep, or the hypervisor took the CPU there): its period ends at that
            // instant and the timer's release begins, with no sleep between.
            let c = self.callbacks.get(&e.cpu).filter(|c| c.ts <= e.ts_ns)?;
            let armed = t.open.as_ref()?.armed_last.as_ref()?;
            if armed.timer != c.timer {
                return None;
            }
            let mut p = t.open.take()?;
            p.running_ns += t.running_since.take().map_or(0, |s| e.ts_ns - s);
            ended(p, e.ts_ns, out);
            // "Asleep" since its callback began: that callback is what released it.
            Some((c.ts, Name::const_new("R")))
        });
        let Some((since, state)) = asleep else {
            t.early = Some(e.clone());
            return;
        };
        t.early = None;
        // The expiry whose callback woke it is its release, not one it will find later.
        if let Some(c) = self.callbacks.get(&e.cpu) {
            if let Some(i) = t.fired.iter().rposition(|f| f.timer == c.timer) {
                t.fired.remove(i);
            }
        }
        // Woken by the latest timer callback on the CPU the waking is on, of a timer it armed,
        // started while it slept: its own timer released it, at the expiry it asked for. (No
        // callback's exit is needed: the callback wakes its sleeper before it ends.)
        let callback = self
            .callbacks
            .get(&e.cpu)
            .filter(|c| c.ts >= since && c.ts <= e.ts_ns && !NOT_WAKING.contains(&c.function.as_str()))
            .cloned();
        let never_slept = state == "R";
        let mut p = Period {
            tid,
            release_ns: e.ts_ns,
            cpu: e.cpu,
            slept_ns: Some(if never_slept { 0 } else { (e.ts_ns - since).max(0) }),
            slept_state: Some(state),
            ..Default::default()
        };
        let fired = callback.and_then(|c| {
            // The timer at that address armed last (one address may be armed in either mode).
            let armed = t.armed.iter().rev().find(|(a, _)| *a == c.timer).map(|(_, a)| a.clone())?;
            self.callbacks.remove(&e.cpu);
            Some((armed, c))
        });
        if let Some((armed, c)) = fired.filter(|(a, c)| c.now >= a.soft_ns) {
            p.released_by(c.timer, &armed);
            // The callback the expiry named (the same as armed unless the address was reused).
            p.timer_function = Some(c.function);
            p.irq_ns = Some(c.now - armed.soft_ns);
        } else {
            p.waker = Some(compact_str::format_compact!("{}:{}", e.comm, e.pid));
        }
        p.waking_ns = e.ts_ns - p.release_ns;
        t.opened(p);
    }

    /// `tid` switched out in `state` for `next` (its name and id: named `comm:pid` only if it
    /// preempted `tid`, the rare case, so that a switch formats nothing).
    fn switched_out(&mut self, tid: i32, state: &str, next: (&Name, i32), ts: i64, out: &mut Vec<Note>) {
        let Some(t) = self.threads.get_mut(&tid).filter(|t| !t.gone) else { return };
        if let (Some(since), Some(p)) = (t.running_since.take(), t.open.as_mut()) {
            p.running_ns += ts - since;
        }
        if state.starts_with('R') {
            t.runnable = Some((ts, compact_str::format_compact!("{}:{}", next.0, next.1)));
            return;
        }
        if state.contains('X') || state.contains('Z') {
            return;
        }
        if let Some(p) = t.open.take() {
            ended(p, ts, out);
        }
        t.runnable = None;
        t.asleep = Some((ts, state.into()));
    }

    /// Thread `tid`, about to be switched in, was asleep with no waking traced since: the
    /// waking traced just before it slept released it.
    fn woken_before_it_slept(&mut self, tid: i32, out: &mut Vec<Note>) {
        let Some(t) = self.threads.get_mut(&tid).filter(|t| !t.gone) else { return };
        let early = t.early.take();
        if let Some(w) = early.filter(|_| t.open.is_none() && t.asleep.is_some()) {
            self.woken(tid, &w, out);
        }
    }

    fn switched_in(&mut self, tid: i32, e: &Event) {
        let Some(t) = self.threads.get_mut(&tid).filter(|t| !t.gone) else { return };
        let Some(p) = t.open.as_mut() else {
            t.runnable = None;
            return;
        };
        if let Some((since, by)) = t.runnable.take() {
            if t.ran {
                p.preempted_ns += e.ts_ns - since;
                match p.preemptors.iter_mut().find(|(w, _)| *w == by) {
                    Some(x) => x.1 += e.ts_ns - since,
                    None => p.preemptors.push((by, e.ts_ns - since)),
                }
            }
        }
        if !t.ran && p.thread_ns.is_none() {
            p.thread_ns = Some(e.ts_ns - p.release_ns);
            p.cpu = e.cpu;
        }
        t.ran = true;
        t.running_since = Some(e.ts_ns);
    }

    fn returned(&mut self, e: &Event, out: &mut Vec<Note>) {
        let Some(t) = self.threads.get_mut(&e.pid) else { return };
        // Its wait returned: a waking traced while it ran was that wait's.
        t.early = None;
        let Some(p) = t.open.as_mut() else { return };
        let Kind::SysExit { nr } = e.kind else { return };
        if p.unseen && !p.timer {
            // Released by something unknown: no wakeup latency to give.
            return;
        }
        if p.wakeup_ns.is_none() {
            p.wakeup_ns = Some(e.ts_ns - p.release_ns);
            p.cpu = e.cpu;
            p.syscall = Some(nr);
        } else if self.arch.waits_for_input(nr) {
            let running_ns = p.running_ns + t.running_since.map_or(0, |s| e.ts_ns - s);
            let mark = Mark { at_ns: e.ts_ns - p.release_ns, running_ns, preempted_ns: p.preempted_ns };
            if p.input_waits.len() >= INPUT_WAITS_KEPT {
                // A thread that keeps finding input (an event loop held off the CPU while its
                // input piled up) is told in bounded pieces: its period ends here and the next
                // begins at this return, so every iteration is still counted.
                let next = Period {
                    tid: p.tid,
                    release_ns: e.ts_ns,
                    cpu: e.cpu,
                    wakeup_ns: Some(0),
                    slept_ns: Some(0),
                    syscall: Some(nr),
                    continued: true,
                    ..Default::default()
                };
                let mut done = std::mem::replace(p, next);
                done.running_ns = running_ns;
                t.running_since = t.running_since.map(|_| e.ts_ns);
                ended(done, e.ts_ns, out);
                let found = found(&mut t.fired, Mark::default());
                if let Some(p) = t.open.as_mut() {
                    p.unslept.extend(found);
                }
                return;
            }
            p.input_waits.push((nr, mark));
            let room = INPUT_WAITS_KEPT.saturating_sub(p.unslept.len());
            p.unslept.extend(found(&mut t.fired, mark).into_iter().take(room));
        }
    }

    fn exited(&mut self, tid: i32, out: &mut Vec<Note>) {
        // Once gone, a thread's id may be a stranger's: nothing of it is the watched thread's.
        let Some(t) = self.threads.get_mut(&tid).filter(|t| !t.gone) else { return };
        if let Some(p) = t.open.take() {
            out.push(Note::Period(Box::new(p)));
        }
        t.gone = true;
        for (timer, _) in std::mem::take(&mut t.armed) {
            self.timers.remove(&timer);
        }
        out.push(Note::Exited(tid));
    }
}

/// Thread `t`, asleep with no period open, shows in an event of its own (`e`): it was woken
/// and switched in without an event of either. Released by the sleep timer it armed (the latest
/// whose expiry falls between its sleep and this return) at that expiry, or by something
/// unknown (a period without a wakeup latency).
fn unseen_wakeup(t: &mut Thread, e: &Event) {
    let Some((since, state)) = t.asleep.take() else { return };
    let armed = t.armed.iter().rev().find(|(_, a)| a.soft_ns >= since && a.soft_ns <= e.ts_ns);
    let mut p = Period {
        tid: e.pid,
        release_ns: e.ts_ns,
        cpu: e.cpu,
        slept_state: Some(state),
        unseen: true,
        ..Default::default()
    };
    if let Some((timer, a)) = armed {
        p.released_by(timer.clone(), a);
        p.slept_ns = Some(a.soft_ns - since);
    }
    t.opened(p);
}

/// A timer of thread `t`'s own (a timerfd's, a POSIX timer's) is re-armed at `now`, after the
/// expiry `prev` it was armed for had passed: that expiry fired. If neither its callback was
/// seen (it would be in `t.fired`) nor it released the open period, its callback came where
/// no event is delivered (a BPF blind spot): the thread finds the expiry at its next return
/// from a wait, as when the callback is seen, with its interrupt unknown.
fn fired_unseen(t: &mut Thread, timer: &str, prev: &Armed, now: i64) {
    if prev.hard_ns > now || NOT_WAKING.contains(&prev.function.as_str()) {
        return;
    }
    let released_open =
        t.open.as_ref().is_some_and(|p| p.release_ns == prev.soft_ns && p.timer_addr.as_deref() == Some(timer));
    if released_open || t.fired.iter().any(|f| f.timer == timer && f.release_ns == prev.soft_ns) {
        return;
    }
    if t.fired.len() >= FIRED_KEPT {
        t.fired.remove(0);
    }
    t.fired.push(Unslept { timer: timer.into(), release_ns: prev.soft_ns, unseen: true, ..Default::default() });
}

/// Period `p` ended at `ts` (its response): told, its preemptors longest first.
fn ended(mut p: Period, ts: i64, out: &mut Vec<Note>) {
    p.response_ns = Some(ts - p.release_ns);
    p.preemptors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out.push(Note::Period(Box::new(p)));
}

/// A thread's period found from its timer releases: the median interval of the first
/// [`Cadence::LEARN`] once that many are seen (or the one given).
#[derive(Clone, Debug, Default)]
pub struct Cadence {
    intervals: Vec<i64>,
    last: Option<i64>,
    period_ns: Option<i64>,
}

impl Cadence {
    /// Intervals looked at before the period is fixed.
    pub const LEARN: usize = 8;

    /// A cadence with a known period (`--period`), or to be learnt.
    pub fn new(period_ns: Option<i64>) -> Cadence {
        Cadence { period_ns, ..Default::default() }
    }

    /// The period, once known.
    pub fn period_ns(&self) -> Option<i64> {
        self.period_ns
    }

    /// A timer release at `release_ns` while the period is being learnt: the interval from
    /// the previous one is kept; the period is fixed once [`Cadence::LEARN`] are.
    pub fn observe(&mut self, release_ns: i64) {
        if let Some(prev) = self.last.replace(release_ns) {
            self.observe_interval(release_ns - prev);
        }
    }

    /// An interval of the thread's schedule while the period is being learnt (between two
    /// expiries its timer was armed for: exact even when overload made it skip sleeps).
    pub fn observe_interval(&mut self, gap_ns: i64) {
        if self.period_ns.is_none() {
            self.intervals.push(gap_ns);
            if self.intervals.len() >= Self::LEARN {
                self.settle();
            }
        }
    }

    /// The releases skipped in an interval of `gap_ns` between two timer releases (0 while the
    /// period is not known). An interval that is not about a whole number of periods (±10 %)
    /// skips nothing.
    pub fn skipped(&self, gap_ns: i64) -> u64 {
        let Some(period) = self.period_ns.filter(|p| *p > 0) else { return 0 };
        let n = (gap_ns + period / 2) / period;
        if n >= 2 && (gap_ns - n * period).abs() <= period / 10 {
            (n - 1) as u64
        } else {
            0
        }
    }

    /// Intervals learnt from so far (none once a known period was given).
    pub fn learnt(&self) -> usize {
        self.intervals.len()
    }

    /// Forgets the intervals learnt and the period they gave, to learn again from the next
    /// ones (a given period, `--period`, has none to forget).
    pub fn relearn(&mut self) {
        if !self.intervals.is_empty() {
            self.intervals.clear();
            self.period_ns = None;
        }
    }

    /// Fixes the period from the intervals seen so far (at least one), if it is not known.
    pub fn settle(&mut self) {
        if self.period_ns.is_some() || self.intervals.is_empty() {
            return;
        }
        let mut v = self.intervals.clone();
        v.sort_unstable();
        let median = v[v.len() / 2];
        self.period_ns = (median > 0).then_some(median);
    }

    /// True when most intervals seen while learning (at least 3 of 4) are within 10 % of a
    /// whole number of periods: the thread is periodic.
    pub fn periodic(&self) -> bool {
        let Some(p) = self.period_ns else { return false };
        if self.intervals.is_empty() {
            return true;
        }
        let fits = self
            .intervals
            .iter()
            .filter(|&&g| {
                let n = ((g + p / 2) / p).max(1);
                (g - n * p).abs() <= p / 10
            })
            .count();
        fits * 4 >= self.intervals.len() * 3
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ev, switch};

    fn start(soft: i64, slack: i64) -> Kind {
        Kind::HrtimerStart {
            timer: "ff01".into(),
            function: "hrtimer_wakeup".into(),
            expires_ns: soft + slack,
            softexpires_ns: soft,
            relative: false,
        }
    }

    fn entry(now: i64) -> Kind {
        Kind::HrtimerEntry { timer: "ff01".into(), function: "hrtimer_wakeup".into(), now_ns: Some(now) }
    }

    /// `timer` (calling `function`) armed for the absolute expiry `at`, with no slack.
    fn absolute(timer: &str, function: &str, at: i64) -> Kind {
        Kind::HrtimerStart {
            timer: timer.into(),
            function: function.into(),
            expires_ns: at,
            softexpires_ns: at,
            relative: false,
        }
    }

    fn waking(pid: i32) -> Kind {
        Kind::Waking { pid, comm: format!("t{pid}").into(), prio: 19 }
    }

    /// Thread 7's timerfd armed for the absolute expiry `at`.
    fn tfd(at: i64) -> Kind {
        absolute("tfd", "timerfd_tmrproc", at)
    }

    /// That timerfd's callback, entered at `now`.
    fn tfd_fires(now: i64) -> Kind {
        Kind::HrtimerEntry { timer: "tfd".into(), function: "timerfd_tmrproc".into(), now_ns: Some(now) }
    }

    /// Thread 7 reads its timerfd armed for 10 000, whose callback wakes it; the read re-arms it
    /// for 20 000 and returns at 10 025.
    fn tfd_first_release() -> Vec<Event> {
        vec![
            ev(900, 1, 7, tfd(10_000)),
            ev(1_000, 1, 7, switch(7, "S", 0)),
            ev(10_010, 1, 0, tfd_fires(10_010)),
            ev(10_012, 1, 0, waking(7)),
            ev(10_014, 1, 0, Kind::HrtimerExit),
            ev(10_016, 1, 0, switch(0, "R", 7)),
            ev(10_020, 1, 7, tfd(20_000)),
            ev(10_025, 1, 7, Kind::SysExit { nr: 0 }),
        ]
    }

    fn run(events: &[Event]) -> Vec<Note> {
        let mut t = Tracker::new(0);
        t.watch(7);
        let mut out = Vec::new();
        for e in events {
            t.feed(e, &mut out);
        }
        t.finish(&mut out);
        out
    }

    #[test]
    fn sleeps_on_timers_at_a_new_stack_address_each_time_leave_the_tracker_no_bigger() {
        // The kernel may randomise the stack's offset at every system call: a sleeper's timer
        // is at a new address each period, for days. A sleep's timer is found by its callback,
        // so none of those addresses is remembered.
        let mut t = Tracker::new(0);
        t.watch(7);
        let mut out = Vec::new();
        for i in 0..10_000i64 {
            let at = 1_000_000 * (i + 1);
            let timer = format!("ffffc900{:08x}", 0x1000 + 0x10 * i);
            t.feed(&ev(at - 900_000, 1, 7, absolute(&timer, "hrtimer_wakeup", at)), &mut out);
            t.feed(&ev(at - 899_000, 1, 7, switch(7, "S", 0)), &mut out);
            t.feed(
                &ev(
                    at + 10,
                    1,
                    0,
                    Kind::HrtimerEntry { timer: timer.into(), function: "hrtimer_wakeup".into(), now_ns: Some(at) },
                ),
                &mut out,
            );
            t.feed(&ev(at + 20, 1, 0, waking(7)), &mut out);
            t.feed(&ev(at + 30, 1, 0, switch(0, "R", 7)), &mut out);
            t.feed(&ev(at + 40, 1, 7, Kind::SysExit { nr: 230 }), &mut out);
            out.clear();
        }
        assert_eq!(t.timers.len(), 0, "timers remembered for a thread that only sleeps");
    }

    #[test]
    fn a_timer_period_gives_irq_thread_wakeup_and_response_from_the_expiry_asked_for() {
        let notes = run(&[
            ev(900, 1, 7, start(10_000, 50)),
            ev(1_000, 1, 7, switch(7, "S", 0)),
            ev(10_070, 1, 0, entry(10_060)),
            ev(10_080, 1, 0, waking(7)),
            ev(10_082, 1, 0, Kind::HrtimerExit),
            ev(10_090, 1, 0, switch(0, "R", 7)),
            ev(10_095, 1, 7, Kind::SysExit { nr: 230 }),
            // Preempted by t9 for 200 ns while working, then blocks at +400.
            ev(10_200, 1, 7, switch(7, "R+", 9)),
            ev(10_400, 1, 9, switch(9, "S", 7)),
            ev(10_400, 1, 7, switch(7, "S", 0)),
        ]);
        let want = Period {
            tid: 7,
            release_ns: 10_000,
            timer: true,
            irq_ns: Some(60),
            waking_ns: 80,
            thread_ns: Some(90),
            wakeup_ns: Some(95),
            response_ns: Some(400),
            preempted_ns: 200,
            preemptors: vec![("t9:9".into(), 200)],
            cpu: 1,
            slack_ns: Some(50),
            relative: false,
            previous_armed_ns: None,
            thread_by_first_event: false,
            timer_addr: Some("ff01".into()),
            timer_function: Some("hrtimer_wakeup".into()),
            syscall: Some(230),
            slept_ns: Some(9_080),
            slept_state: Some("S".into()),
            waker: None,
            // Switched in at +90, preempted at +200, back at +400 and blocks at once.
            running_ns: 110,
            interrupts: Vec::new(),
            input_waits: Vec::new(),
            // It armed no sleep in the period (the test's timer was armed before it).
            armed_last: None,
            unslept: Vec::new(),
            continued: false,
            unseen: false,
        };
        assert_eq!(notes, vec![Note::Period(Box::new(want))]);
    }

    #[test]
    fn a_return_from_a_timer_sleep_whose_wakeup_events_were_not_delivered_is_released_at_the_expiry_it_armed() {
        let notes = run(&[
            ev(900, 1, 7, start(10_000, 50)),
            ev(1_000, 1, 7, switch(7, "S", 0)),
            // No timer interrupt, waking or switch in: the return is all there is.
            ev(10_095, 1, 7, Kind::SysExit { nr: 230 }),
            ev(10_400, 1, 7, switch(7, "S", 0)),
        ]);
        let [Note::Period(p)] = notes.as_slice() else { panic!("{notes:?}") };
        assert!(p.unseen && p.timer);
        assert_eq!((p.release_ns, p.wakeup_ns, p.response_ns), (10_000, Some(95), Some(400)));
        assert_eq!((p.irq_ns, p.slack_ns, p.slept_ns), (None, Some(50), Some(9_000)));
    }

    #[test]
    fn a_return_with_no_wakeup_events_and_no_timer_that_expired_is_a_period_without_a_wakeup_latency() {
        let notes = run(&[
            ev(900, 1, 7, start(50_000, 0)),
            ev(1_000, 1, 7, switch(7, "S", 0)),
            ev(10_095, 1, 7, Kind::SysExit { nr: 0 }),
            ev(10_400, 1, 7, switch(7, "S", 0)),
        ]);
        let [Note::Period(p)] = notes.as_slice() else { panic!("{notes:?}") };
        assert!(p.unseen && !p.timer);
        assert_eq!((p.wakeup_ns, p.irq_ns), (None, None), "an unknown release is not guessed");
    }

    #[test]
    fn a_timerfd_rearmed_before_the_return_still_releases_the_unseen_wakeup_at_its_old_expiry() {
        let notes = run(&[
            ev(900, 1, 7, tfd(10_000)),
            ev(1_000, 1, 7, switch(7, "S", 0)),
            // Its read re-arms the timerfd for the next period before it returns.
            ev(10_090, 1, 7, tfd(20_000)),
            ev(10_095, 1, 7, Kind::SysExit { nr: 0 }),
            ev(10_400, 1, 7, switch(7, "S", 0)),
        ]);
        let [Note::Period(p)] = notes.as_slice() else { panic!("{notes:?}") };
        assert!(p.unseen && p.timer);
        assert_eq!(
            (p.release_ns, p.wakeup_ns, p.timer_function.as_deref()),
            (10_000, Some(95), Some("timerfd_tmrproc"))
        );
    }

    #[test]
    fn an_expiry_that_fires_inside_the_read_consuming_the_one_before_waits_for_the_next_read_whatever_other_timers_fired(
    ) {
        // A kernel timer armed in its context (the RT bandwidth timer) fires and wakes nobody.
        let rt_period =
            |at: i64| Kind::HrtimerEntry { timer: "rtp".into(), function: "ffff81".into(), now_ns: Some(at) };
        let mut events = tfd_first_release();
        events.extend([
            ev(800, 0, 7, absolute("rtp", "ffff81", 5_000)),
            ev(5_000, 0, 0, rt_period(5_000)),
            ev(5_001, 0, 0, Kind::HrtimerExit),
            // Working past 20 000: that expiry fires in its context.
            ev(20_010, 1, 7, tfd_fires(20_010)),
            ev(20_012, 1, 7, Kind::HrtimerExit),
            // Its read finds it and re-arms for 30 000, which fires before the read returns:
            // that return is 20 000's release, the next read's is 30 000's.
            ev(25_000, 1, 7, tfd(30_000)),
            ev(30_005, 1, 7, tfd_fires(30_005)),
            ev(30_007, 1, 7, Kind::HrtimerExit),
            ev(30_010, 1, 7, Kind::SysExit { nr: 0 }),
            ev(30_110, 1, 7, Kind::SysExit { nr: 0 }),
            ev(31_000, 1, 7, switch(7, "S", 0)),
        ]);
        events.sort_by_key(|e| e.ts_ns);
        let notes = run(&events);
        let [Note::Period(p)] = notes.as_slice() else { panic!("{notes:?}") };
        let found: Vec<(i64, i64)> =
            p.unslept.iter().filter(|u| u.timer == "tfd").map(|u| (u.release_ns, u.at.at_ns)).collect();
        assert_eq!(found, [(20_000, 20_010), (30_000, 20_110)]);
    }

    #[test]
    fn an_expiry_whose_callback_was_not_seen_is_known_from_the_timers_rearming_and_found_by_the_next_read() {
        // The tfdmid job CI's BPF backend lost: the expiry at 20 000 fired while the thread
        // worked, in a context whose events are not delivered; its read re-arms the timerfd for
        // 30 000 (only an expired timerfd is re-armed by a read) and returns at once.
        let mut events = tfd_first_release();
        events.extend([
            ev(25_000, 1, 7, tfd(30_000)),
            ev(25_005, 1, 7, Kind::SysExit { nr: 0 }),
            ev(26_000, 1, 7, switch(7, "S", 0)),
        ]);
        let notes = run(&events);
        let [Note::Period(p)] = notes.as_slice() else { panic!("{notes:?}") };
        assert_eq!(p.release_ns, 10_000);
        let found: Vec<(i64, i64, bool)> = p.unslept.iter().map(|u| (u.release_ns, u.at.at_ns, u.unseen)).collect();
        assert_eq!(found, [(20_000, 15_005, true)], "once, at the read's return, its interrupt unknown");
    }

    #[test]
    fn a_return_after_a_traced_wakeup_is_not_an_unseen_one() {
        let notes = run(&[
            ev(900, 1, 7, start(10_000, 50)),
            ev(1_000, 1, 7, switch(7, "S", 0)),
            ev(10_070, 1, 0, entry(10_060)),
            ev(10_080, 1, 0, waking(7)),
            ev(10_095, 1, 7, Kind::SysExit { nr: 230 }),
            ev(10_400, 1, 7, switch(7, "S", 0)),
        ]);
        let [Note::Period(p)] = notes.as_slice() else { panic!("{notes:?}") };
        assert!(!p.unseen);
        assert_eq!(p.irq_ns, Some(60));
    }

    #[test]
    fn under_overload_the_schedule_is_learnt_from_the_armed_expiries_not_from_the_sleeps() {
        // A 1 ms loop whose work takes 1.5 ms: it arms every expiry (1, 2, 3 … ms) but sleeps
        // only when the expiry is still ahead — here at 2 ms and 4 ms, not at 3 ms.
        let mut events = vec![ev(500, 1, 7, start(1_000_000, 0))];
        for (armed_at, expiry, sleeps) in
            [(600, 2_000_000, true), (3_100_000, 3_000_000, false), (3_200_000, 4_000_000, true)]
        {
            events.push(ev(armed_at, 1, 7, start(expiry, 0)));
            if sleeps {
                events.push(ev(armed_at + 10, 1, 7, switch(7, "S", 0)));
                events.push(ev(expiry + 5, 1, 0, entry(expiry + 5)));
                events.push(ev(expiry + 8, 1, 0, waking(7)));
                events.push(ev(expiry + 9, 1, 0, Kind::HrtimerExit));
                events.push(ev(expiry + 12, 1, 7, Kind::SysExit { nr: 230 }));
            }
        }
        events.sort_by_key(|e| e.ts_ns);
        let periods: Vec<Period> =
            run(&events).into_iter().filter_map(|n| if let Note::Period(p) = n { Some(*p) } else { None }).collect();
        let gaps: Vec<(i64, Option<i64>)> = periods.iter().map(|p| (p.release_ns, p.previous_armed_ns)).collect();
        // The release at 4 ms follows the armed 3 ms: one period, nothing skipped.
        assert_eq!(gaps, [(2_000_000, Some(1_000_000)), (4_000_000, Some(3_000_000))]);
        let mut learnt = Cadence::new(None);
        for p in &periods {
            learnt.observe_interval(p.release_ns - p.previous_armed_ns.unwrap());
        }
        learnt.settle();
        assert_eq!(learnt.period_ns(), Some(1_000_000), "the releases alone are 2 ms apart");
        assert_eq!(learnt.skipped(4_000_000 - 3_000_000), 0);
    }

    #[test]
    fn stages_are_in_order_when_the_interrupt_precedes_the_switch_and_the_switch_the_return_to_user() {
        let Note::Period(mut p) = run(&[
            ev(900, 1, 7, start(10_000, 0)),
            ev(1_000, 1, 7, switch(7, "S", 0)),
            ev(10_070, 1, 0, entry(10_060)),
            ev(10_080, 1, 0, waking(7)),
            ev(10_090, 1, 0, switch(0, "R", 7)),
            ev(10_095, 1, 7, Kind::SysExit { nr: 230 }),
            ev(10_400, 1, 7, switch(7, "S", 0)),
        ])
        .remove(0) else {
            panic!("no period")
        };
        assert!(p.stages_in_order());
        p.thread_ns = None;
        assert!(p.stages_in_order(), "an untraced stage is skipped");
        p.irq_ns = Some(96);
        assert!(!p.stages_in_order(), "an interrupt after the return to user");
        p.irq_ns = Some(60);
        p.thread_ns = Some(100);
        assert!(!p.stages_in_order(), "a switch after the return to user");
    }

    #[test]
    fn without_the_switch_in_the_thread_latency_is_dated_by_the_threads_first_event_its_return_to_user() {
        let notes = run(&[
            ev(900, 0, 7, start(10_000, 0)),
            ev(1_000, 0, 7, switch(7, "S", 0)),
            ev(10_010, 0, 0, entry(10_005)),
            ev(10_012, 0, 0, waking(7)),
            ev(10_013, 0, 0, Kind::HrtimerExit),
            ev(10_030, 0, 7, Kind::SysExit { nr: 230 }),
            // A later switch in (after a preemption) is no thread latency.
            ev(10_100, 0, 7, switch(7, "R", 3)),
            ev(10_150, 0, 3, switch(3, "S", 7)),
            ev(10_300, 0, 7, switch(7, "S", 0)),
        ]);
        let Note::Period(p) = &notes[0] else { panic!("{notes:?}") };
        assert_eq!((p.thread_ns, p.wakeup_ns, p.response_ns, p.preempted_ns), (Some(30), Some(30), Some(300), 50));
        assert!(p.thread_by_first_event && p.stages_in_order());
    }

    #[test]
    fn a_thread_woken_by_another_task_is_released_at_its_waking() {
        let notes = run(&[
            ev(1_000, 0, 7, switch(7, "S", 0)),
            ev(5_000, 1, 3, waking(7)),
            ev(5_040, 0, 7, Kind::SysExit { nr: 0 }),
            ev(5_500, 0, 7, switch(7, "S", 0)),
        ]);
        let Note::Period(p) = &notes[0] else { panic!("{notes:?}") };
        assert_eq!(
            (p.timer, p.release_ns, p.irq_ns, p.wakeup_ns, p.response_ns),
            (false, 5_000, None, Some(40), Some(500))
        );
    }

    #[test]
    fn a_waking_traced_while_the_kernel_was_still_putting_the_thread_to_sleep_releases_it() {
        // The waker's CPU traces the waking (5 400) before the sleeper's traces its switch
        // out (5 410, still in a sleeping state): the switch in at 5 600 is that wakeup's.
        let in_ = |prev: i32| Kind::Switch {
            prev_pid: prev,
            prev_comm: format!("t{prev}").into(),
            prev_prio: 120,
            prev_state: "S".into(),
            next_pid: 7,
            next_comm: "t7".into(),
            next_prio: 120,
        };
        let notes = run(&[
            ev(1_000, 0, 7, switch(7, "S", 0)),
            ev(5_000, 1, 3, waking(7)),
            ev(5_040, 0, 7, Kind::SysExit { nr: 232 }),
            ev(5_400, 1, 3, waking(7)),
            ev(5_410, 0, 7, switch(7, "S", 0)),
            ev(5_600, 0, 0, in_(0)),
            ev(5_650, 0, 7, Kind::SysExit { nr: 232 }),
            ev(5_900, 0, 7, switch(7, "S", 0)),
        ]);
        let periods: Vec<_> = notes
            .iter()
            .filter_map(|n| match n {
                Note::Period(p) => Some((p.release_ns, p.thread_ns, p.wakeup_ns, p.response_ns, p.slept_ns)),
                _ => None,
            })
            .collect();
        assert_eq!(
            periods,
            [(5_000, Some(40), Some(40), Some(410), Some(4_000)), (5_400, Some(200), Some(250), Some(500), Some(0))]
        );
    }

    #[test]
    fn a_waking_while_it_runs_that_its_wait_consumed_releases_no_later_sleep() {
        // Woken at 5 400 while still on its way to sleep, its wait returns (5 450); it sleeps
        // at 5 600 for real and is switched in at 7 000 with no waking traced (lost): no
        // release is made up from the consumed waking.
        let notes = run(&[
            ev(1_000, 0, 7, switch(7, "S", 0)),
            ev(5_000, 1, 3, waking(7)),
            ev(5_040, 0, 7, Kind::SysExit { nr: 232 }),
            ev(5_400, 1, 3, waking(7)),
            ev(5_450, 0, 7, Kind::SysExit { nr: 232 }),
            ev(5_600, 0, 7, switch(7, "S", 0)),
            ev(7_000, 0, 0, switch(0, "R", 7)),
            ev(7_100, 0, 7, switch(7, "S", 0)),
        ]);
        let periods: Vec<(i64, Option<i64>, bool)> = notes
            .iter()
            .filter_map(|n| match n {
                Note::Period(p) => Some((p.release_ns, p.wakeup_ns, p.unseen)),
                _ => None,
            })
            .collect();
        // The run at 7 000 is a wakeup whose waking was not seen: a period without a wakeup
        // latency, not one released by the consumed waking at 5 400.
        assert_eq!(periods, [(5_000, Some(40), false), (7_100, None, true)]);
    }

    #[test]
    fn a_woken_sleeper_whose_timer_had_not_expired_is_event_driven() {
        // poll() with a timeout, woken early by data: the timer did not release it.
        let notes = run(&[
            ev(900, 0, 7, start(50_000, 0)),
            ev(1_000, 0, 7, switch(7, "S", 0)),
            ev(5_000, 1, 3, waking(7)),
            ev(5_500, 0, 7, switch(7, "S", 0)),
        ]);
        let Note::Period(p) = &notes[0] else { panic!("{notes:?}") };
        assert!(!p.timer);
        assert_eq!(p.release_ns, 5_000);
    }

    #[test]
    fn a_waking_outside_its_timers_callback_is_event_driven_even_after_that_timer_fired() {
        // The thread's timer fired (its callback ran and ended) but another task woke it later
        // on another CPU: not a timer release.
        let notes = run(&[
            ev(900, 0, 7, start(4_000, 0)),
            ev(1_000, 0, 7, switch(7, "S", 0)),
            ev(4_010, 0, 0, entry(4_005)),
            ev(4_020, 0, 0, Kind::HrtimerExit),
            ev(5_000, 1, 3, waking(7)),
            ev(5_500, 0, 7, switch(7, "S", 0)),
        ]);
        let Note::Period(p) = &notes[0] else { panic!("{notes:?}") };
        assert!(!p.timer);
        assert_eq!((p.release_ns, p.irq_ns), (5_000, None));
    }

    #[test]
    fn without_exit_events_only_a_callback_of_its_own_timer_since_it_slept_releases_it() {
        let tick =
            |now| Kind::HrtimerEntry { timer: "ff01".into(), function: "tick_nohz_handler".into(), now_ns: Some(now) };
        let notes = run(&[
            // Its timer fires while it sleeps: a timer release (no exit event recorded).
            ev(900, 0, 7, start(2_000, 0)),
            ev(1_000, 0, 7, switch(7, "S", 0)),
            ev(2_010, 0, 0, entry(2_005)),
            ev(2_012, 0, 0, waking(7)),
            ev(2_100, 0, 7, switch(7, "S", 0)),
            // Woken later by another task on that CPU: that callback was used up.
            ev(3_000, 0, 3, waking(7)),
            // A tick the thread happened to arm is no release either.
            ev(3_050, 0, 7, start(4_000, 0)),
            ev(3_100, 0, 7, switch(7, "S", 0)),
            ev(4_001, 0, 0, tick(4_000)),
            ev(4_002, 0, 0, waking(7)),
            ev(4_100, 0, 7, switch(7, "S", 0)),
        ]);
        let timers: Vec<bool> = notes
            .iter()
            .filter_map(|n| match n {
                Note::Period(p) => Some(p.timer),
                _ => None,
            })
            .collect();
        assert_eq!(timers, vec![true, false, false]);
    }

    #[test]
    fn a_sleep_whose_timer_fires_before_the_thread_slept_ends_its_period_and_releases_the_next() {
        // Woken at 5000 by another task, it arms its next release (10 000) at 9 990 and the
        // timer fires at 10 020 while the kernel is still putting it to sleep: no switch out.
        let notes = run(&[
            ev(1_000, 0, 7, switch(7, "S", 0)),
            ev(5_000, 1, 3, waking(7)),
            ev(5_040, 0, 7, Kind::SysExit { nr: 0 }),
            ev(9_990, 0, 7, start(10_000, 0)),
            ev(10_020, 0, 7, entry(10_019)),
            ev(10_021, 0, 7, waking(7)),
            ev(10_030, 0, 7, Kind::SysExit { nr: 230 }),
            ev(10_300, 0, 7, switch(7, "S", 0)),
        ]);
        let periods: Vec<&Period> = notes
            .iter()
            .filter_map(|n| match n {
                Note::Period(p) => Some(&**p),
                _ => None,
            })
            .collect();
        assert_eq!(periods.len(), 2, "{notes:?}");
        assert_eq!((periods[0].release_ns, periods[0].response_ns), (5_000, Some(5_021)));
        let p = periods[1];
        assert!(p.timer, "its own timer released it: {p:?}");
        assert_eq!((p.release_ns, p.irq_ns, p.wakeup_ns, p.slept_ns), (10_000, Some(19), Some(30), Some(0)));
        assert_eq!(p.slept_state.as_deref(), Some("R"));
    }

    #[test]
    fn an_exit_cuts_the_open_period_and_is_told() {
        let notes = run(&[
            ev(1_000, 0, 7, switch(7, "S", 0)),
            ev(5_000, 1, 3, waking(7)),
            ev(5_100, 0, 7, Kind::Exit { pid: 7 }),
        ]);
        assert!(matches!(&notes[0], Note::Period(p) if p.response_ns.is_none()));
        assert_eq!(notes[1], Note::Exited(7));
    }

    #[test]
    fn a_cadence_learns_the_median_interval_and_counts_skipped_releases() {
        let mut c = Cadence::new(None);
        let mut t = 0;
        for gap in [0, 1000, 1000, 1000, 3000, 1000, 1000, 1000] {
            t += gap;
            c.observe(t);
            assert_eq!(c.period_ns(), None);
        }
        c.observe(t + 1000);
        assert_eq!(c.period_ns(), Some(1000));
        assert!(c.periodic());
        assert_eq!(c.skipped(3000), 2);
        assert_eq!(c.skipped(1000), 0);
        // Not a whole number of periods: nothing skipped.
        assert_eq!(c.skipped(1500), 0);
    }

    #[test]
    fn irregular_releases_are_not_periodic() {
        let mut c = Cadence::new(None);
        for t in [0, 100, 350, 1000, 1100, 2500, 2600, 4000, 4010] {
            c.observe(t);
        }
        assert!(!c.periodic());
    }
}
