//! Why a busy thread lost its CPU: the events of that CPU during one noise gap, turned into a
//! partition of the gap by osnoise's kinds of interference — NMIs, IRQs (device handlers and
//! architecture vectors such as the local timer), softirqs, other threads — and what no event
//! explains. A gap in which the kernel saw nothing at all is hardware or hypervisor noise (an
//! SMI, the host running something else, an SMT sibling); time no event covers inside a gap
//! where something did run is the cost of entering and leaving the kernel (`overhead`).

use super::event::{Event, Kind};
use super::explain::{Blocker, Cause, Explanation, Lane, Spike};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Events this close outside a gap still belong to it: the trace's text has µs timestamps
/// and the gap's ends are dated by a clock read just after it.
pub const SLACK_NS: i64 = 2_000;

/// The most of a gap's uncovered time put down to the kernel's own entry and exit, per
/// interrupt, softirq, NMI or thread switch seen in it; beyond that the time is hardware or
/// hypervisor noise (a host that stole 200 µs next to a 3 µs tick is not 197 µs of overhead).
pub const OVERHEAD_PER_ENTRY_NS: i64 = 10_000;

/// osnoise's kinds of interference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Nothing ran in the kernel: an SMI, the hypervisor, an SMT sibling.
    Hw,
    /// An NMI handler.
    Nmi,
    /// A hard interrupt: a device handler or an architecture vector (local timer, IPI).
    Irq,
    /// A softirq.
    Softirq,
    /// Another thread (a kernel thread or a task) took the CPU.
    Thread,
}

impl Source {
    /// The column heading (rtla osnoise's).
    pub fn label(self) -> &'static str {
        match self {
            Source::Hw => "HW",
            Source::Nmi => "NMI",
            Source::Irq => "IRQ",
            Source::Softirq => "Softirq",
            Source::Thread => "Thread",
        }
    }

    /// Every source, in the table's order.
    pub const ALL: [Source; 5] = [Source::Hw, Source::Nmi, Source::Irq, Source::Softirq, Source::Thread];

    /// The source of a part of a gap (`None`: the kernel's own entry and exit, or nothing).
    pub fn of(cause: Cause) -> Option<Source> {
        match cause {
            Cause::Irq | Cause::Vector | Cause::TimerIrq => Some(Source::Irq),
            Cause::Softirq => Some(Source::Softirq),
            Cause::Nmi => Some(Source::Nmi),
            Cause::BlockingTask | Cause::OtherTask => Some(Source::Thread),
            _ => None,
        }
    }
}

/// How often and how long one kind of interference took the CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SourceFigures {
    /// Occurrences (an interrupt entered, a thread switched in; for HW: gaps with time no
    /// event and no kernel overhead explains).
    pub count: u64,
    /// Time (ns).
    pub ns: i64,
}

/// One named interferer (`IRQ local_timer`, `Thread stress-ng:4711`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Named {
    /// Its kind.
    pub source: Source,
    /// The IRQ, vector, softirq or `comm:pid`.
    pub name: String,
    /// Occurrences.
    pub count: u64,
    /// Time (ns).
    pub ns: i64,
}

/// A CPU's noise by source, over every gap attributed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NoiseSources {
    /// Gaps at or above the attribution threshold.
    pub gaps: u64,
    /// Of those, attributed from the CPU's events.
    pub attributed: u64,
    /// Hardware or hypervisor: gaps with no event at all, and time beyond the kernel's overhead
    /// in gaps with events.
    pub hw: SourceFigures,
    /// NMIs.
    pub nmi: SourceFigures,
    /// Hard interrupts.
    pub irq: SourceFigures,
    /// Softirqs.
    pub softirq: SourceFigures,
    /// Other threads.
    pub thread: SourceFigures,
    /// Time no event covers inside gaps where something ran, up to [`OVERHEAD_PER_ENTRY_NS`]
    /// per occurrence: entering and leaving the kernel, the switches (ns).
    pub overhead_ns: i64,
    /// The largest interferers by time (at most 10).
    pub top: Vec<Named>,
    /// Trace events the CPU lost during the run (gaps may then miss their cause).
    pub lost_events: u64,
    /// The largest hardware noise of one gap (ns): its HW and NMI time, what rtla hwnoise's
    /// Max Single counts with interrupts off (0 in files written before it was recorded).
    #[serde(default)]
    pub hw_max_single_ns: i64,
    /// The largest hardware noise of one duty-cycle period (ns): rtla hwnoise's Max Noise.
    #[serde(default)]
    pub hw_max_period_ns: i64,
    /// Crossings of rtla hwnoise's `-s`/`-S` by hardware noise (with `continue`, each one).
    #[serde(default)]
    pub hw_stop_hits: u64,
}

impl NoiseSources {
    /// The figures of `s`.
    pub fn of(&self, s: Source) -> SourceFigures {
        match s {
            Source::Hw => self.hw,
            Source::Nmi => self.nmi,
            Source::Irq => self.irq,
            Source::Softirq => self.softirq,
            Source::Thread => self.thread,
        }
    }
}

/// Occurrences of interference inside one gap: `(source, name)` → count.
pub type Occurrences = BTreeMap<(Source, String), u64>;

/// The running totals of one CPU's attribution.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    gaps: u64,
    attributed: u64,
    hw: SourceFigures,
    overhead_ns: i64,
    named: BTreeMap<(Source, String), (u64, i64)>,
    hw_max_single_ns: i64,
    /// Hardware noise per duty-cycle period: the latest periods (gaps are attributed about
    /// in time order; a few out of it still find their period).
    hw_periods: BTreeMap<i64, i64>,
    hw_max_period_ns: i64,
    /// Crossings of hwnoise's stop thresholds.
    pub hw_stop_hits: u64,
}

/// Periods whose hardware noise is kept for gaps attributed out of order.
const HW_PERIODS_KEPT: usize = 64;

impl Tally {
    /// Counts a gap at or above the attribution threshold (attributed or not).
    pub fn gap(&mut self) {
        self.gaps += 1;
    }

    /// Adds one attributed gap. Its uncovered time is the kernel's entry and exit up to
    /// [`OVERHEAD_PER_ENTRY_NS`] per occurrence of interference in it; the rest (all of it in
    /// a gap where nothing ran) is HW, and the gap counts as one HW occurrence.
    /// Returns the gap's hardware noise: its HW time and its NMIs' (what a gap would have been
    /// with interrupts off, as rtla hwnoise measures).
    pub fn add(&mut self, e: &Explanation, occurrences: &Occurrences) -> i64 {
        self.attributed += 1;
        let (mut uncovered, mut nmi) = (0, 0);
        for p in &e.parts {
            match Source::of(p.cause) {
                Some(s) => {
                    self.named.entry((s, p.name.clone())).or_default().1 += p.ns;
                    nmi += if s == Source::Nmi { p.ns } else { 0 };
                }
                None => uncovered += p.ns,
            }
        }
        let entries: u64 = occurrences.values().sum();
        let overhead = uncovered.min(entries as i64 * OVERHEAD_PER_ENTRY_NS);
        self.overhead_ns += overhead;
        if uncovered > overhead {
            self.hw.ns += uncovered - overhead;
            self.hw.count += 1;
        }
        for (k, n) in occurrences {
            self.named.entry(k.clone()).or_default().0 += n;
        }
        let hardware = uncovered - overhead + nmi;
        self.hw_max_single_ns = self.hw_max_single_ns.max(hardware);
        hardware
    }

    /// Adds a gap's hardware noise to its duty-cycle period `period` and returns that period's
    /// hardware noise so far.
    pub fn hardware_in_period(&mut self, period: i64, ns: i64) -> i64 {
        let sum = self.hw_periods.entry(period).or_default();
        *sum += ns;
        let sum = *sum;
        self.hw_max_period_ns = self.hw_max_period_ns.max(sum);
        while self.hw_periods.len() > HW_PERIODS_KEPT {
            self.hw_periods.pop_first();
        }
        sum
    }

    /// The totals as stored; `lost` is the CPU's lost trace events.
    pub fn figures(&self, lost: u64) -> NoiseSources {
        let mut out = NoiseSources {
            gaps: self.gaps,
            attributed: self.attributed,
            hw: self.hw,
            overhead_ns: self.overhead_ns,
            lost_events: lost,
            hw_max_single_ns: self.hw_max_single_ns,
            hw_max_period_ns: self.hw_max_period_ns,
            hw_stop_hits: self.hw_stop_hits,
            ..Default::default()
        };
        for ((s, _), (count, ns)) in &self.named {
            let f = match s {
                Source::Hw => &mut out.hw,
                Source::Nmi => &mut out.nmi,
                Source::Irq => &mut out.irq,
                Source::Softirq => &mut out.softirq,
                Source::Thread => &mut out.thread,
            };
            f.count += count;
            f.ns += ns;
        }
        let mut top: Vec<Named> = self
            .named
            .iter()
            .map(|((source, name), (count, ns))| Named { source: *source, name: name.clone(), count: *count, ns: *ns })
            .collect();
        top.sort_by(|a, b| b.ns.cmp(&a.ns).then(b.count.cmp(&a.count)).then(a.name.cmp(&b.name)));
        top.truncate(10);
        out.top = top;
        out
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Ctx {
    Irq(String),
    Vector(String),
    Softirq(String),
}

impl Ctx {
    fn part(&self) -> (Cause, String, Lane) {
        match self {
            Ctx::Irq(n) => (Cause::Irq, n.clone(), Lane::Irq),
            Ctx::Vector(n) => (Cause::Vector, n.clone(), Lane::Irq),
            Ctx::Softirq(n) => (Cause::Softirq, n.clone(), Lane::Softirq),
        }
    }
}

/// Attributes the noise gap `spike.deadline_ns..spike.wake_ns` of the busy thread `spike.tid`
/// from `events` (that CPU's, in time order, from [`SLACK_NS`] before the gap to as much after
/// it). The thread was running at the gap's start with nothing open. `policy_of` names a
/// thread's policy. The parts partition the gap exactly; the occurrences count each interrupt
/// entered and each thread switched in.
pub fn attribute(
    spike: &Spike,
    events: &[Event],
    policy_of: &dyn Fn(i32) -> Option<String>,
) -> (Explanation, Occurrences) {
    let (a, b) = (spike.deadline_ns, spike.wake_ns.max(spike.deadline_ns));
    let (spans, occurrences, nmis, seen) = walk_gap(spike, events);
    let (parts, timeline) = super::explain::partition(carve_nmis(spans, nmis), b - a, a);
    // The thread that took the most of the gap, named with its policy.
    let blocking = parts.iter().find(|p| p.cause == Cause::OtherTask).and_then(|p| {
        let (comm, pid) = p.name.rsplit_once(':')?;
        let pid: i32 = pid.parse().ok()?;
        Some(Blocker {
            comm: comm.to_string(),
            pid,
            policy: policy_of(pid).unwrap_or_else(|| "policy unknown".into()),
            preempted_late: false,
            priority: super::explain::Rank::Unknown,
        })
    });
    let nothing = parts.iter().all(|p| p.cause == Cause::Unaccounted);
    let note = nothing.then(|| {
        if seen == 0 {
            "no event on this CPU during the gap: the kernel did not run; the hardware or the hypervisor took the CPU"
                .to_string()
        } else {
            "events but no interrupt or thread during the gap".to_string()
        }
    });
    let e = Explanation {
        thread: spike.thread,
        cpu: spike.cpu,
        cycle: spike.cycle,
        latency_ns: b - a,
        deadline_ns: a,
        fired_ns: None,
        switched_ns: None,
        parts,
        blocking,
        timeline,
        events: seen,
        lost_events: 0,
        steal_ns: None,
        smis: None,
        note,
        noise: true,
        work: None,
    };
    (e, occurrences)
}

/// A stretch of a gap given to one context.
type GapSpan = super::explain::Stretch;

/// An NMI seen in a gap: `(start, end, handler)`.
type NmiSpan = (i64, i64, String);

/// Walks a gap's events: the stretches between them attributed to what ran, the occurrences
/// of each source, the NMIs (carved out afterwards) and the events inside the gap.
fn walk_gap(spike: &Spike, events: &[Event]) -> (Vec<GapSpan>, Occurrences, Vec<NmiSpan>, usize) {
    let (a, b) = (spike.deadline_ns, spike.wake_ns.max(spike.deadline_ns));
    let mut w = Walk {
        tid: spike.tid,
        stack: Vec::new(),
        // The task on the CPU: the busy thread until a switch says otherwise.
        task: (spike.tid, String::new(), true),
        spans: Vec::new(),
        occurrences: Occurrences::new(),
    };
    let (mut t, mut seen, mut nmis) = (a, 0usize, Vec::new());
    for e in events.iter().take_while(|e| e.ts_ns <= b + SLACK_NS) {
        let at = e.ts_ns.clamp(a, b);
        // An exit with no entry seen while nothing is open: its context began before the
        // gap's first event (the entry fell just outside the events read); the time since then
        // was spent in it.
        let unmatched = match &e.kind {
            Kind::IrqExit { irq } => Some(Ctx::Irq(format!("irq {irq}"))),
            Kind::SoftirqExit { name } => Some(Ctx::Softirq(name.to_string())),
            Kind::VectorExit { name } => Some(Ctx::Vector(name.to_string())),
            _ => None,
        }
        .filter(|_| w.stack.is_empty());
        w.spend(t, at, unmatched.as_ref());
        t = t.max(at);
        seen += (e.ts_ns >= a && e.ts_ns <= b) as usize;
        let inside = e.ts_ns <= b;
        match &e.kind {
            Kind::IrqEntry { name, .. } if inside => w.stack.push((Ctx::Irq(name.to_string()), false)),
            Kind::IrqExit { .. } => w.pop(|c| matches!(c, Ctx::Irq(_))),
            Kind::VectorEntry { name } if inside => w.stack.push((Ctx::Vector(name.to_string()), false)),
            Kind::VectorExit { name } => w.pop(|c| matches!(c, Ctx::Vector(n) if n == name)),
            Kind::SoftirqEntry { name } if inside => w.stack.push((Ctx::Softirq(name.to_string()), false)),
            Kind::SoftirqExit { .. } => w.pop(|c| matches!(c, Ctx::Softirq(_))),
            // An NMI is one event at its end (µs timestamps): it belongs to the gap when it
            // overlaps it, even when its end is printed just after the gap.
            Kind::Nmi { handler, delta_ns } if e.ts_ns - delta_ns < b && e.ts_ns > a => {
                nmis.push(((e.ts_ns - delta_ns).clamp(a, b), at, handler.to_string()));
                *w.occurrences.entry((Source::Nmi, handler.to_string())).or_default() += 1;
            }
            Kind::Switch { next_pid, next_comm, .. } => {
                w.stack.clear();
                w.task = (*next_pid, next_comm.to_string(), *next_pid == spike.tid);
            }
            _ => {}
        }
    }
    w.spend(t, b, None);
    (w.spans, w.occurrences, nmis, seen)
}

/// An NMI comes as one event at its end: its time is carved out of whatever it interrupted.
fn carve_nmis(mut spans: Vec<GapSpan>, nmis: Vec<NmiSpan>) -> Vec<GapSpan> {
    for (s, e, h) in nmis {
        let mut carved = Vec::new();
        for sp in spans.drain(..) {
            if sp.1 <= s || sp.0 >= e {
                carved.push(sp);
                continue;
            }
            if sp.0 < s {
                carved.push((sp.0, s, sp.2, sp.3.clone(), sp.4));
            }
            carved.push((s.max(sp.0), e.min(sp.1), Cause::Nmi, h.clone(), Lane::Irq));
            if sp.1 > e {
                carved.push((e, sp.1, sp.2, sp.3, sp.4));
            }
        }
        spans = carved;
    }
    spans
}

/// The walk through one gap's events: what is open, who runs, and the spans so far.
struct Walk {
    tid: i32,
    /// Open interrupt contexts, innermost last; `true` once counted as an occurrence.
    stack: Vec<(Ctx, bool)>,
    /// The task on the CPU: pid, command, counted.
    task: (i32, String, bool),
    spans: Vec<GapSpan>,
    occurrences: Occurrences,
}

impl Walk {
    /// Gives `from..to` to what runs (or to `unmatched`, an exit whose entry was not seen).
    /// A context is counted as an occurrence the first time it gets time inside the gap.
    fn spend(&mut self, from: i64, to: i64, unmatched: Option<&Ctx>) {
        if to <= from {
            return;
        }
        let (part, key) = match (unmatched, self.stack.last_mut()) {
            (Some(c), _) => (c.part(), Some(key_of(c))),
            (None, Some((c, counted))) => {
                let key = (!*counted).then(|| key_of(c));
                *counted = true;
                (c.part(), key)
            }
            (None, None) if self.task.0 == self.tid => ((Cause::Unaccounted, String::new(), Lane::Unaccounted), None),
            (None, None) => {
                let name = format!("{}:{}", self.task.1, self.task.0);
                let key = (!self.task.2).then(|| (Source::Thread, name.clone()));
                self.task.2 = true;
                ((Cause::OtherTask, name, Lane::Task), key)
            }
        };
        if let Some(k) = key {
            *self.occurrences.entry(k).or_default() += 1;
        }
        self.spans.push((from, to, part.0, part.1, part.2));
    }

    fn pop(&mut self, is: impl Fn(&Ctx) -> bool) {
        if let Some(i) = self.stack.iter().rposition(|(c, _)| is(c)) {
            self.stack.truncate(i);
        }
    }
}

fn key_of(c: &Ctx) -> (Source, String) {
    match c {
        Ctx::Irq(n) | Ctx::Vector(n) => (Source::Irq, n.clone()),
        Ctx::Softirq(n) => (Source::Softirq, n.clone()),
    }
}
