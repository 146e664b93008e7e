//! What one CPU is doing, event by event: the task it runs (as the switches and every event's
//! header show it), the interrupt contexts open above that task (hard IRQs, softirqs,
//! architecture interrupts, NMIs), the contexts whose exit event was lost, and the tasks'
//! priorities as the events show them. The explainer walks a window with it; the watch
//! tracker walks a watched thread's work with it.

use super::event::{Event, Kind, Name};
use std::collections::{HashMap, HashSet};

/// A task's priority before any switch or wakeup has shown it.
pub const UNKNOWN: i32 = i32::MIN;

/// A task on the CPU (pid 0: idle).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// Thread id.
    pub pid: i32,
    /// Command name.
    pub comm: Name,
    /// Kernel priority ([`UNKNOWN`] until an event shows it).
    pub prio: i32,
}

/// An interrupt context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ctx {
    /// A device interrupt handler.
    Irq(Name),
    /// A softirq.
    Softirq(Name),
    /// An architecture interrupt; `true` for the local timer interrupt that fired the timer
    /// being explained.
    Vector(Name, bool),
    /// An NMI handler.
    Nmi(Name),
}

/// One step of a walk: an event, or an NMI's start or end (an NMI comes as one event at its
/// end, with its length).
#[derive(Clone, Debug)]
pub enum Step {
    /// An event.
    Event(Event),
    /// An NMI handler starts.
    NmiStart(Name),
    /// The NMI handler ends.
    NmiEnd,
}

/// `events` as steps in time order: NMIs split into start and end; the local timer entry at
/// index `own_vector` (the one that fired the explained timer) marked as such.
pub fn steps(events: &[Event], own_vector: Option<usize>) -> Vec<(i64, Step)> {
    let mut steps: Vec<(i64, Step)> = Vec::with_capacity(events.len() + 4);
    for (i, e) in events.iter().enumerate() {
        match &e.kind {
            Kind::Nmi { handler, delta_ns } => {
                steps.push((e.ts_ns - delta_ns, Step::NmiStart(handler.clone())));
                steps.push((e.ts_ns, Step::NmiEnd));
            }
            Kind::VectorEntry { name } if Some(i) == own_vector => {
                let mut e = e.clone();
                e.kind = Kind::VectorEntry { name: compact_str::format_compact!("{name}\u{0}own") };
                steps.push((e.ts_ns, Step::Event(e)));
            }
            _ => steps.push((e.ts_ns, Step::Event(e.clone()))),
        }
    }
    steps.sort_by_key(|s| s.0);
    steps
}

/// The state of one CPU.
#[derive(Clone, Debug, Default)]
pub struct CpuState {
    /// The task running (`None` before any event named one).
    pub task: Option<Task>,
    /// Open contexts, innermost last, each with the last instant an event showed it open.
    pub stack: Vec<(Ctx, i64)>,
    /// Contexts whose exit event was never seen: from their last sign of life to the instant
    /// something showed them closed, what ran is not known.
    pub lost: Vec<(i64, i64, Ctx)>,
    /// Kernel priorities the events showed, by task.
    pub prios: HashMap<i32, i32>,
    /// Tasks woken since the last switch.
    woken: HashSet<i32>,
}

/// Who held the CPU up to a step, as that step's header shows it.
#[derive(Clone, Debug)]
pub struct Header {
    /// The task the step's header names (`None` for an NMI's start or end).
    pub task: Option<Task>,
    /// That task is not the one the last switch put there: a switch went unrecorded (some
    /// kernels do not trace the switch out of idle) at an unknown instant since the last event.
    pub unseen_switch: bool,
}

impl CpuState {
    /// The task `step` names in its header, with its priority as known (`known` gives one
    /// task's priority outright: the explained probe's).
    pub fn header(&self, step: &Step, known: Option<(i32, i32)>) -> Header {
        let Step::Event(e) = step else { return Header { task: None, unseen_switch: false } };
        let unseen_switch = self.task.as_ref().is_some_and(|tk| tk.pid != e.pid);
        let prio = match known {
            Some((pid, prio)) if pid == e.pid => prio,
            _ => self.prios.get(&e.pid).copied().unwrap_or(UNKNOWN),
        };
        Header { task: Some(Task { pid: e.pid, comm: e.comm.clone(), prio }), unseen_switch }
    }

    /// The task that held the CPU since the previous step, given `header`: a task woken since
    /// the last switch took it as soon as the waking context ended; any other unseen switch
    /// happened at an unknown time (`None`).
    pub fn holder(&self, header: &Header) -> Option<Task> {
        match (&header.task, header.unseen_switch) {
            (Some(h), true) if self.woken.contains(&h.pid) => Some(h.clone()),
            (_, true) => None,
            _ => self.task.clone(),
        }
    }

    /// Takes the header's task as the running one when it shows a switch the kernel did not
    /// trace, or when none was known.
    pub fn adopt(&mut self, header: Header) {
        if let (Some(h), true) = (header.task, header.unseen_switch || self.task.is_none()) {
            self.task = Some(h);
        }
    }

    /// Learns the priorities a switch or a waking shows.
    pub fn learn(&mut self, step: &Step) {
        let Step::Event(e) = step else { return };
        match &e.kind {
            Kind::Switch { prev_pid, prev_prio, next_pid, next_prio, .. } => {
                self.prios.insert(*prev_pid, *prev_prio);
                self.prios.insert(*next_pid, *next_prio);
                self.woken.clear();
            }
            Kind::Waking { pid, prio, .. } => {
                self.prios.insert(*pid, *prio);
                self.woken.insert(*pid);
            }
            _ => {}
        }
    }

    /// Applies `step` at `at`: contexts open and close, a switch changes the task.
    pub fn apply(&mut self, step: &Step, at: i64) {
        // An event inside the open contexts shows them still open (a switch or an exit closes
        // them instead; an NMI may come at any time).
        if matches!(step, Step::Event(e) if !matches!(e.kind, Kind::Switch { .. } | Kind::IrqExit { .. } | Kind::SoftirqExit { .. } | Kind::VectorExit { .. }))
        {
            self.stack.iter_mut().filter(|c| !matches!(c.0, Ctx::Nmi(_))).for_each(|c| c.1 = c.1.max(at));
        }
        match step {
            Step::NmiStart(h) => self.stack.push((Ctx::Nmi(h.clone()), at)),
            // Only the NMI ends: what it interrupted (or what its rounded start put above it)
            // goes on.
            Step::NmiEnd => {
                if let Some(i) = self.stack.iter().rposition(|c| matches!(c.0, Ctx::Nmi(_))) {
                    self.stack.remove(i);
                }
            }
            Step::Event(e) => self.event(&e.kind, at),
        }
    }

    fn event(&mut self, kind: &Kind, at: i64) {
        match kind {
            Kind::Switch { next_pid, next_comm, next_prio, .. } => {
                self.task = Some(Task { pid: *next_pid, comm: next_comm.clone(), prio: *next_prio });
                // A switch happens in task context: whatever was open has ended, and an
                // interrupt context still open lost its exit event.
                for (c, seen) in self.stack.drain(..) {
                    if !matches!(c, Ctx::Nmi(_)) {
                        self.lost.push((seen, at, c));
                    }
                }
            }
            Kind::IrqEntry { name, .. } => self.enter(Ctx::Irq(name.clone()), at),
            Kind::IrqExit { .. } => self.pop(|c| matches!(c, Ctx::Irq(_)), at),
            Kind::SoftirqEntry { name } => self.enter(Ctx::Softirq(name.clone()), at),
            Kind::SoftirqExit { .. } => self.pop(|c| matches!(c, Ctx::Softirq(_)), at),
            Kind::VectorEntry { name } => match name.split_once('\u{0}') {
                Some((n, _)) => self.enter(Ctx::Vector(n.into(), true), at),
                None => self.enter(Ctx::Vector(name.clone(), false), at),
            },
            Kind::VectorExit { name } => self.pop(|c| matches!(c, Ctx::Vector(n, _) if n == name), at),
            _ => {}
        }
    }

    /// Opens `c` at `at`: beneath any NMI open above it (an NMI cannot be interrupted; an
    /// entry inside one is an artefact of the NMI's start being computed from its end).
    fn enter(&mut self, c: Ctx, at: i64) {
        let top = self.stack.iter().rposition(|c| !matches!(c.0, Ctx::Nmi(_))).map_or(0, |i| i + 1);
        self.stack.insert(top, (c, at));
    }

    /// Closes the innermost context that `is` at `at`: the contexts opened inside it that are
    /// still open lost their exit events (NMIs excepted: they end by themselves).
    fn pop(&mut self, is: impl Fn(&Ctx) -> bool, at: i64) {
        if let Some(i) = self.stack.iter().rposition(|c| is(&c.0)) {
            for (k, (c, seen)) in self.stack.drain(i..).collect::<Vec<_>>().into_iter().enumerate() {
                match c {
                    _ if k == 0 => {}
                    Ctx::Nmi(_) => self.stack.push((c, seen)),
                    c => self.lost.push((seen, at, c)),
                }
            }
        }
    }

    /// The innermost open context, if any.
    pub fn context(&self) -> Option<&Ctx> {
        self.stack.last().map(|c| &c.0)
    }
}
