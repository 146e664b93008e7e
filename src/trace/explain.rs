//! Why was it late: the events of the probe's CPU from its deadline to its wakeup, turned into
//! a partition of the latency (timer delay, interrupts, softirqs, NMIs, the blocking task,
//! other tasks, the switch, and what no event explains), summing to 100 %.

use super::event::{Event, Kind};
use crate::units::us;
use serde::{Deserialize, Serialize};

/// How a run's explanation went (`explain` in the RunResult).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExplainSummary {
    /// Samples above this were explained (ns).
    pub threshold_ns: Option<i64>,
    /// The N largest samples were explained.
    pub worst: usize,
    /// Why nothing could be explained (no tracefs, no rights, a simulated probe), if so.
    pub unavailable: Option<String>,
    /// The tracefs instance used (removed at exit).
    pub instance: Option<String>,
    /// Per-CPU trace buffer (KiB).
    pub buffer_kb: usize,
    /// Events asked for that this kernel lacks (e.g. the osnoise tracepoints).
    pub missing_events: Vec<String>,
    /// Trace events lost over the run, all measured CPUs together.
    pub lost_events: u64,
    /// Samples above the threshold.
    pub over_threshold: u64,
    /// Of those, explained (the largest 100 are kept).
    pub explained: usize,
}

/// Where a part of the latency went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Timer delay while the CPU was idle: waking the CPU from its idle state (bounded by the
    /// deepest idle state's exit latency; beyond it: unaccounted).
    ExitFromIdle,
    /// Timer delay while a task ran: interrupts were disabled (or another interrupt was being
    /// entered) when the timer was due.
    IrqsDisabled,
    /// The probe's own timer interrupt, from its entry to its exit.
    TimerIrq,
    /// A device interrupt handler (named).
    Irq,
    /// An architecture interrupt: an IPI (reschedule, call function), irq_work, another
    /// local timer (named).
    Vector,
    /// A softirq (named: NET_RX, TIMER, …), net of the interrupts nested in it.
    Softirq,
    /// An NMI handler.
    Nmi,
    /// The task that held the CPU after the timer fired until the switch to the probe.
    BlockingTask,
    /// Other tasks that ran before the probe (higher priority, or fair sharing).
    OtherTask,
    /// The switch to the probe and its clock read.
    Switch,
    /// Time no event explains (a hypervisor's steal, an SMI, lost events).
    Unaccounted,
}

impl Cause {
    /// The words printed for it.
    pub fn label(self) -> &'static str {
        match self {
            Cause::ExitFromIdle => "timer delay (exit from idle)",
            Cause::IrqsDisabled => "timer delay (IRQs disabled)",
            Cause::TimerIrq => "timer IRQ",
            Cause::Irq => "IRQ",
            Cause::Vector => "interrupt",
            Cause::Softirq => "softirq",
            Cause::Nmi => "NMI",
            Cause::BlockingTask => "blocking task",
            Cause::OtherTask => "other task",
            Cause::Switch => "switch",
            Cause::Unaccounted => "unaccounted",
        }
    }
}

/// One part of a latency.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Part {
    /// Where it went.
    pub cause: Cause,
    /// The IRQ, softirq, interrupt or task (`blk:4711`); empty when the cause says it all.
    pub name: String,
    /// How long (ns).
    pub ns: i64,
    /// Its share of the latency, in percent (the parts sum to 100).
    pub share: f64,
}

/// The task that held the CPU between the timer and the switch to the probe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Blocker {
    /// Command name.
    pub comm: String,
    /// Thread id.
    pub pid: i32,
    /// Scheduling, as far as known (`FIFO 90`, `RT 90` when FIFO/RR cannot be told, `OTHER`).
    pub policy: String,
    /// It has lower priority than the probe yet kept the CPU: it was preempted late (a
    /// non-preemptible kernel section); false otherwise (see `priority`).
    pub preempted_late: bool,
    /// Its priority against the probe's, as far as the events (or its policy) show it.
    #[serde(default)]
    pub priority: Rank,
}

/// A blocking task's priority against the probe's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Rank {
    /// Higher: it rightly kept the CPU.
    Higher,
    /// The same: a FIFO task keeps the CPU until it blocks or yields, an RR task for its slice.
    Equal,
    /// Lower: it should have been preempted at once (preempted late).
    Lower,
    /// No switch, wakeup or policy in the window shows it.
    #[default]
    Unknown,
}

impl Rank {
    /// The words `describe` prints after the task's name.
    pub fn words(self) -> &'static str {
        match self {
            Rank::Higher => "has higher priority than the probe",
            Rank::Equal => {
                "has the probe's priority: a FIFO task keeps the CPU until it blocks or yields (RR: for its time slice)"
            }
            Rank::Lower => {
                "has lower priority than the probe yet kept the CPU: preempted late (a non-preemptible kernel section)"
            }
            Rank::Unknown => "kept the CPU; its priority is unknown (no switch or wakeup in the window shows it)",
        }
    }
}

/// Which row of the timeline a span is drawn in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Hard interrupts, architecture interrupts and NMIs.
    Irq,
    /// Softirqs.
    Softirq,
    /// Tasks other than the probe (and idle).
    Task,
    /// The probe.
    Probe,
    /// No event explains it.
    Unaccounted,
}

/// A stretch of the window spent in one context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Span {
    /// The row.
    pub lane: Lane,
    /// What ran (`IRQ virtio0-input`, `task blk:4711`, `idle`).
    pub what: String,
    /// Start, ns after the deadline.
    pub start_ns: i64,
    /// End, ns after the deadline.
    pub end_ns: i64,
}

/// Why one sample was late.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Explanation {
    /// The thread.
    pub thread: usize,
    /// The CPU it woke on.
    pub cpu: usize,
    /// The cycle.
    pub cycle: u64,
    /// The latency (ns) = wake − deadline.
    pub latency_ns: i64,
    /// The deadline (ns, CLOCK_MONOTONIC).
    pub deadline_ns: i64,
    /// When the probe's timer fired, ns after the deadline (`null`: no event shows it).
    pub fired_ns: Option<i64>,
    /// When the CPU switched to the probe, ns after the deadline (`null`: no event shows it).
    pub switched_ns: Option<i64>,
    /// Where the latency went, largest first; the shares sum to 100.
    pub parts: Vec<Part>,
    /// The task that held the CPU after the timer fired, if one did.
    pub blocking: Option<Blocker>,
    /// The window, context by context (for the timeline figure).
    pub timeline: Vec<Span>,
    /// Events of that CPU in the window.
    pub events: usize,
    /// Events the CPU's trace buffer lost during the run (0: nothing missing).
    pub lost_events: u64,
    /// Steal time of that CPU from `/proc/stat` between the readings that bracket the window
    /// (read every 50 ms, so it may include steal just outside it; ns in 10 ms ticks; `null`
    /// when not read).
    pub steal_ns: Option<i64>,
    /// SMIs on that CPU between the readings of the x86 MSR 0x34 that bracket the window (taken
    /// when the probe starts and when a spike is explained: a read costs the CPU an IPI; `null`:
    /// not readable here — not Intel, no root, no msr module, a VM).
    #[serde(default)]
    pub smis: Option<u64>,
    /// What the explanation could not see, in a sentence (`null`: nothing).
    pub note: Option<String>,
    /// A noise gap of a busy thread (`rtlab noise`): the window is the gap, not a deadline
    /// and a wakeup.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub noise: bool,
}

impl Explanation {
    /// One explanation: `max 1037.0 µs on thread 1 (CPU 1) cycle 2210: blocking task blk:4711
    /// (FIFO 90) 1001.0 µs 96.5 %, …`, then the timer and switch instants and any note.
    pub fn describe(&self, first: bool) -> String {
        let e = self;
        let parts: Vec<String> = e
            .parts
            .iter()
            .map(|p| {
                let mut who = p.cause.label().to_string();
                if !p.name.is_empty() {
                    who += &format!(" {}", p.name);
                }
                if p.cause == Cause::BlockingTask {
                    if let Some(b) = &e.blocking {
                        who += &format!(" ({})", b.policy);
                    }
                }
                format!("{who} {} {:.1} %", us(p.ns as f64), p.share)
            })
            .collect();
        let mut out = String::new();
        if e.noise {
            let label = if first { "max noise" } else { "noise" };
            out += &format!(
                "{label} {} on CPU {} (gap {}): {}\n",
                us(e.latency_ns as f64),
                e.cpu,
                e.cycle,
                parts.join(", ")
            );
            if let Some(b) = &e.blocking {
                out += &format!("  {}:{} ({}) took the CPU from the busy thread\n", b.comm, b.pid, b.policy);
            }
        } else {
            let label = if first { "max" } else { "spike" };
            out += &format!(
                "{label} {} on thread {} (CPU {}) cycle {}: {}\n",
                us(e.latency_ns as f64),
                e.thread,
                e.cpu,
                e.cycle,
                parts.join(", ")
            );
            let at = |x: Option<i64>| x.map_or_else(|| "not seen".to_string(), |v| format!("+{}", us(v as f64)));
            out += &format!("  timer fired {}, switched to the probe {}", at(e.fired_ns), at(e.switched_ns));
            if let Some(b) = &e.blocking {
                out += &format!("; {}:{} {}", b.comm, b.pid, b.priority.words());
            }
            out.push('\n');
        }
        if let Some(st) = e.steal_ns.filter(|s| *s > 0) {
            out += &format!(
                "  the host stole {} of CPU {} around this window (/proc/stat, 10 ms ticks)\n",
                crate::units::duration(st),
                e.cpu
            );
        }
        if let Some(n) = e.smis.filter(|n| *n > 0) {
            out += &format!("  {} on CPU {} around this window (MSR 0x34)\n", crate::units::count(n, "SMI"), e.cpu);
        }
        if e.lost_events > 0 {
            out += &format!(
                "  {} trace events of CPU {} were lost during the run: this window may miss some\n",
                e.lost_events, e.cpu
            );
        }
        if let Some(n) = &e.note {
            out += &format!("  note: {n}\n");
        }
        out
    }
}

/// The sample to explain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spike {
    /// The thread.
    pub thread: usize,
    /// Its CPU.
    pub cpu: usize,
    /// The cycle.
    pub cycle: u64,
    /// Its kernel thread id.
    pub tid: i32,
    /// The deadline (ns, CLOCK_MONOTONIC).
    pub deadline_ns: i64,
    /// The clock read after the wakeup (ns, CLOCK_MONOTONIC).
    pub wake_ns: i64,
}

/// What the attribution needs beyond the events.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The longest an idle CPU takes to take an interrupt (the deepest enabled idle state's
    /// exit latency plus interrupt entry); idle time beyond it before the timer fires is
    /// unaccounted.
    pub idle_exit_ns: i64,
    /// The longest the probe takes from being switched in to reading its clock with no event
    /// in between; beyond it: unaccounted.
    pub switch_ns: i64,
    /// The longest stretch without any event that is put down to a running task keeping
    /// interrupts disabled; a longer silence is unaccounted (a hypervisor or an SMI is likelier).
    pub irqs_off_ns: i64,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds { idle_exit_ns: 50_000, switch_ns: 50_000, irqs_off_ns: 1_000_000 }
    }
}

/// What runs on the CPU: a task (pid 0: idle), or unknown before the first switch is seen.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Task {
    pid: i32,
    comm: String,
    prio: i32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Ctx {
    Irq(String),
    Softirq(String),
    Vector(String, bool),
    Nmi(String),
}

/// A pseudo-event: NMIs come as one event at their end with their length.
#[derive(Clone, Debug)]
enum Step {
    Event(Event),
    NmiStart(String),
    NmiEnd,
}

/// A task's priority before any switch or wakeup has shown it.
const UNKNOWN: i32 = i32::MIN;

/// `prio` as a policy: `FIFO 90`-style from `policy_of`, else from the kernel priority.
fn policy_label(pid: i32, prio: i32, policy_of: &dyn Fn(i32) -> Option<String>) -> String {
    if prio == UNKNOWN {
        return policy_of(pid).unwrap_or_else(|| "priority unknown".into());
    }
    if prio < 0 {
        return "DEADLINE".into();
    }
    match (policy_of(pid), prio) {
        (Some(p), pr) if pr < 100 => format!("{p} {}", 99 - pr),
        (Some(p), _) => p,
        (None, pr) if pr < 100 => format!("RT {}", 99 - pr),
        (None, pr) => format!("OTHER nice {}", pr - 120),
    }
}

/// Attributes `spike`'s latency from `events` (that CPU's, in time order, starting before the
/// deadline so the state at the deadline is known). `policy_of` names a task's policy
/// (`FIFO`) when it can be read. The parts partition the window exactly.
pub fn explain(
    spike: &Spike,
    events: &[Event],
    bounds: Bounds,
    policy_of: &dyn Fn(i32) -> Option<String>,
) -> Explanation {
    let (d, w) = (spike.deadline_ns, spike.wake_ns.max(spike.deadline_ns));
    // The timer: the hrtimer_wakeup whose callback wakes the probe.
    let mut fired: Option<(i64, usize)> = None;
    let mut probe_prio = None;
    for (i, e) in events.iter().enumerate() {
        if e.ts_ns + 1_000 < d {
            continue;
        }
        if let Kind::Waking { pid, prio, .. } = &e.kind {
            if *pid == spike.tid {
                probe_prio = Some(*prio);
                // hrtimer_wakeup wakes the sleeper itself: its entry is just before the waking.
                let timer =
                    events[..i].iter().rev().take(4).take_while(|p| !matches!(p.kind, Kind::HrtimerExit)).find_map(
                        |p| match &p.kind {
                            Kind::HrtimerEntry { function, now_ns, .. } if function == "hrtimer_wakeup" => {
                                Some(now_ns.unwrap_or(p.ts_ns))
                            }
                            _ => None,
                        },
                    );
                fired = Some((timer.unwrap_or(e.ts_ns).clamp(d, w), i));
                break;
            }
        }
    }
    let switched = events
        .iter()
        .skip(fired.map_or(0, |f| f.1))
        .find(|e| e.ts_ns + 1_000 >= d && matches!(&e.kind, Kind::Switch { next_pid, .. } if *next_pid == spike.tid))
        .map(|e| e.ts_ns.clamp(fired.map_or(d, |f| f.0), w));
    // The probe's own timer interrupt: the local timer open when the timer fired.
    let own_vector = fired.and_then(|(_, i)| {
        let mut depth = 0;
        events[..i].iter().rposition(|e| match &e.kind {
            Kind::VectorExit { name } if name == "local_timer" => {
                depth += 1;
                false
            }
            Kind::VectorEntry { name } if name == "local_timer" => {
                if depth == 0 {
                    true
                } else {
                    depth -= 1;
                    false
                }
            }
            _ => false,
        })
    });
    let mut steps: Vec<(i64, Step)> = Vec::with_capacity(events.len() + 4);
    for (i, e) in events.iter().enumerate() {
        match &e.kind {
            Kind::Nmi { handler, delta_ns } => {
                steps.push((e.ts_ns - delta_ns, Step::NmiStart(handler.clone())));
                steps.push((e.ts_ns, Step::NmiEnd));
            }
            Kind::VectorEntry { name } if Some(i) == own_vector => {
                let mut e = e.clone();
                e.kind = Kind::VectorEntry { name: format!("{name}\u{0}own") };
                steps.push((e.ts_ns, Step::Event(e)));
            }
            _ => steps.push((e.ts_ns, Step::Event(e.clone()))),
        }
    }
    steps.sort_by_key(|s| s.0);
    let mut task: Option<Task> = None;
    // Open contexts, innermost last, each with the last instant an event showed it open.
    let mut stack: Vec<(Ctx, i64)> = Vec::new();
    // Contexts whose exit event was never seen: from their last sign of life to the instant
    // something showed them closed, what ran is not known.
    let mut lost: Vec<(i64, i64, Ctx)> = Vec::new();
    let mut blocking: Option<Task> = None;
    let mut spans: Vec<(i64, i64, Cause, String, Lane)> = Vec::new();
    let mut t = d;
    let fire_at = fired.map(|f| f.0);
    // The probe itself ran between the deadline and its timer: it went to sleep after the
    // deadline had passed (a late previous cycle), so its timer could not fire on time.
    // Whoever held the CPU before that kept the probe from sleeping: they are the cause.
    let late_arm = fire_at.is_some_and(|f| {
        events.iter().any(|e| {
            // Trace timestamps are truncated to the µs: an event printed before the deadline
            // happened before it (the probe slept in time).
            e.ts_ns >= d
                && e.ts_ns < f
                && (e.pid == spike.tid || matches!(&e.kind, Kind::Switch { next_pid, .. } if *next_pid == spike.tid))
        })
    });
    // The blocker is looked for once at the deadline (a late-armed timer) and once at the firing.
    let (mut looked_at_deadline, mut looked_at_fire) = (false, false);
    let mut seen = 0usize;
    let mut attribute = |from: i64, to: i64, task: &Option<Task>, stack: &[(Ctx, i64)], blocking: &mut Option<Task>| {
        if to <= from {
            return;
        }
        // Split at the instants the phase changes.
        let mut cuts = vec![from];
        for x in [fire_at, switched].into_iter().flatten() {
            if x > from && x < to {
                cuts.push(x);
            }
        }
        cuts.push(to);
        for pair in cuts.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let (cause, name, lane) = match stack.last().map(|c| &c.0) {
                Some(Ctx::Irq(n)) => (Cause::Irq, n.clone(), Lane::Irq),
                Some(Ctx::Softirq(n)) => (Cause::Softirq, n.clone(), Lane::Softirq),
                Some(Ctx::Vector(_, true)) => (Cause::TimerIrq, String::new(), Lane::Irq),
                Some(Ctx::Vector(n, false)) => (Cause::Vector, n.clone(), Lane::Irq),
                Some(Ctx::Nmi(n)) => (Cause::Nmi, n.clone(), Lane::Irq),
                None => {
                    let label = |t: &Task| format!("{}:{}", t.comm, t.pid);
                    match (fire_at, switched, task) {
                        (_, Some(s), Some(tk)) if a >= s && tk.pid == spike.tid => {
                            (Cause::Switch, String::new(), Lane::Probe)
                        }
                        (_, Some(s), Some(tk)) if a >= s => (Cause::OtherTask, label(tk), Lane::Task),
                        (None, _, _) | (_, _, None) => (Cause::Unaccounted, String::new(), Lane::Unaccounted),
                        (Some(f), _, Some(tk)) if a < f && !late_arm => {
                            if tk.pid == 0 {
                                (Cause::ExitFromIdle, String::new(), Lane::Task)
                            } else {
                                (Cause::IrqsDisabled, label(tk), Lane::Task)
                            }
                        }
                        // After the timer fired, or before it when the probe armed it late.
                        (Some(_), _, Some(tk)) => {
                            if tk.pid == spike.tid || tk.pid == 0 {
                                (Cause::Switch, String::new(), Lane::Probe)
                            } else if blocking.as_ref().is_some_and(|b| b.pid == tk.pid) {
                                (Cause::BlockingTask, label(tk), Lane::Task)
                            } else {
                                (Cause::OtherTask, label(tk), Lane::Task)
                            }
                        }
                    }
                }
            };
            spans.push((a, b, cause, name, lane));
        }
    };
    let mut prios: std::collections::HashMap<i32, i32> = std::collections::HashMap::new();
    let mut woken: std::collections::HashSet<i32> = std::collections::HashSet::new();
    for (ts, step) in &steps {
        let at = (*ts).clamp(t, w);
        // Every event names the task current on its CPU: one that is not the task the last
        // switch put there means a switch went unrecorded (some kernels do not trace the
        // switch out of idle) at an unknown instant since the previous event.
        let header = match step {
            Step::Event(e) => Some((e.pid, e.comm.clone())),
            _ => None,
        };
        let unseen_switch = header.as_ref().is_some_and(|(pid, _)| task.as_ref().is_some_and(|tk| tk.pid != *pid));
        let header_task = header.map(|(pid, comm)| {
            let prio =
                if pid == spike.tid { probe_prio.unwrap_or(0) } else { prios.get(&pid).copied().unwrap_or(UNKNOWN) };
            Task { pid, comm, prio }
        });
        if late_arm && *ts >= d && !looked_at_deadline {
            // The task running at the deadline blocked the probe from then on.
            looked_at_deadline = true;
            blocking = task.clone().filter(|tk| tk.pid != 0 && tk.pid != spike.tid);
        }
        if *ts >= d {
            // A task woken since the last switch took the CPU as soon as the waking context
            // ended (the previous event); any other unseen switch happened at an unknown time.
            let during = match (&header_task, unseen_switch) {
                (Some(h), true) if woken.contains(&h.pid) => &header_task,
                (_, true) => &None,
                _ => &task,
            };
            attribute(t, at, during, &stack, &mut blocking);
            t = at;
        }
        if let (Some(h), true) = (header_task, unseen_switch || task.is_none()) {
            task = Some(h);
        }
        if let Step::Event(e) = step {
            match &e.kind {
                Kind::Switch { prev_pid, prev_prio, next_pid, next_prio, .. } => {
                    prios.insert(*prev_pid, *prev_prio);
                    prios.insert(*next_pid, *next_prio);
                    woken.clear();
                }
                Kind::Waking { pid, prio, .. } => {
                    prios.insert(*pid, *prio);
                    woken.insert(*pid);
                }
                _ => {}
            }
        }
        if fire_at.is_some_and(|f| at >= f) && !looked_at_fire {
            looked_at_fire = true;
            if blocking.is_none() {
                blocking = task.clone().filter(|tk| tk.pid != 0 && tk.pid != spike.tid);
            }
        }
        if *ts > w {
            break;
        }
        if *ts >= d {
            seen += 1;
        }
        // An event inside the open contexts shows them still open (a switch or an exit
        // closes them instead; an NMI may come at any time).
        if matches!(step, Step::Event(e) if !matches!(e.kind, Kind::Switch { .. } | Kind::IrqExit { .. } | Kind::SoftirqExit { .. } | Kind::VectorExit { .. }))
        {
            stack.iter_mut().filter(|c| !matches!(c.0, Ctx::Nmi(_))).for_each(|c| c.1 = c.1.max(at));
        }
        match step {
            Step::NmiStart(h) => stack.push((Ctx::Nmi(h.clone()), at)),
            // Only the NMI ends: what it interrupted (or what its rounded start put above it)
            // goes on.
            Step::NmiEnd => {
                if let Some(i) = stack.iter().rposition(|c| matches!(c.0, Ctx::Nmi(_))) {
                    stack.remove(i);
                }
            }
            Step::Event(e) => match &e.kind {
                Kind::Switch { next_pid, next_comm, next_prio, .. } => {
                    task = Some(Task { pid: *next_pid, comm: next_comm.clone(), prio: *next_prio });
                    // A switch happens in task context: whatever was open has ended, and an
                    // interrupt context still open lost its exit event.
                    for (c, seen) in stack.drain(..) {
                        if !matches!(c, Ctx::Nmi(_)) {
                            lost.push((seen, at, c));
                        }
                    }
                }
                Kind::IrqEntry { name, .. } => enter(&mut stack, Ctx::Irq(name.clone()), at),
                Kind::IrqExit { .. } => pop(&mut stack, |c| matches!(c, Ctx::Irq(_)), at, &mut lost),
                Kind::SoftirqEntry { name } => enter(&mut stack, Ctx::Softirq(name.clone()), at),
                Kind::SoftirqExit { .. } => pop(&mut stack, |c| matches!(c, Ctx::Softirq(_)), at, &mut lost),
                Kind::VectorEntry { name } => match name.split_once('\u{0}') {
                    Some((n, _)) => enter(&mut stack, Ctx::Vector(n.to_string(), true), at),
                    None => enter(&mut stack, Ctx::Vector(name.clone(), false), at),
                },
                Kind::VectorExit { name } => {
                    pop(&mut stack, |c| matches!(c, Ctx::Vector(n, _) if n == name), at, &mut lost)
                }
                _ => {}
            },
        }
    }
    attribute(t, w, &task, &stack, &mut blocking);
    let mut note = Vec::new();
    // A context whose exit was lost: after its last event, the time is not known to be its.
    for (from, to, c) in &lost {
        let (cause, name) = match c {
            Ctx::Irq(n) => (Cause::Irq, n.as_str()),
            Ctx::Softirq(n) => (Cause::Softirq, n.as_str()),
            Ctx::Vector(_, true) => (Cause::TimerIrq, ""),
            Ctx::Vector(n, false) => (Cause::Vector, n.as_str()),
            Ctx::Nmi(n) => (Cause::Nmi, n.as_str()),
        };
        let mut moved = false;
        let mut out = Vec::with_capacity(spans.len() + 2);
        for sp in spans.drain(..) {
            let (a, b) = (sp.0.max(*from), sp.1.min(*to));
            if sp.2 != cause || sp.3 != name || a >= b {
                out.push(sp);
                continue;
            }
            moved = true;
            if sp.0 < a {
                out.push((sp.0, a, sp.2, sp.3.clone(), sp.4));
            }
            out.push((a, b, Cause::Unaccounted, String::new(), Lane::Unaccounted));
            if b < sp.1 {
                out.push((b, sp.1, sp.2, sp.3, sp.4));
            }
        }
        spans = out;
        if moved {
            note.push(format!(
                "the exit event of {} {} was lost: after its last event its time is unaccounted",
                cause.label(),
                name
            ));
        }
    }
    // Idle beyond the exit bound, and a silent switch beyond its bound: no event explains them.
    // The idle closest to the timer is the exit, up to the bound over all idle stretches;
    // every earlier idle moment is unexplained.
    spans.sort_by_key(|s| s.0);
    let mut idle_left = bounds.idle_exit_ns;
    let mut heads = Vec::new();
    for s in spans.iter_mut().rev() {
        if s.2 == Cause::ExitFromIdle {
            let len = s.1 - s.0;
            if len > idle_left {
                let cut = s.1 - idle_left;
                heads.push((s.0, cut, Cause::Unaccounted, String::new(), Lane::Unaccounted));
                s.0 = cut;
                idle_left = 0;
            } else {
                idle_left -= len;
            }
        }
    }
    if !heads.is_empty() {
        note.push("the CPU was idle longer than its deepest idle state takes to exit, with no event: a hypervisor (or an SMI) held it".to_string());
    }
    spans.extend(heads);
    spans.retain(|s| s.1 > s.0);
    for s in spans.iter_mut() {
        if s.2 == Cause::IrqsDisabled && s.1 - s.0 > bounds.irqs_off_ns {
            s.2 = Cause::Unaccounted;
            s.3 = String::new();
            s.4 = Lane::Unaccounted;
            note.push(format!(
                "{} µs passed without any event while a task ran and the timer was due: interrupts held off that long are rare, a hypervisor (or an SMI) is likelier",
                (s.1 - s.0) / 1000
            ));
        }
    }
    spans.sort_by_key(|s| s.0);
    // The first moments of the switch are the switch, up to its bound; the rest is unexplained
    // (split, never dropped: the parts always sum to the latency).
    let mut switch_left = bounds.switch_ns;
    let mut tails = Vec::new();
    for s in spans.iter_mut() {
        if s.2 == Cause::Switch && s.4 == Lane::Probe {
            let len = s.1 - s.0;
            if len > switch_left {
                tails.push((s.0 + switch_left, s.1, Cause::Unaccounted, String::new(), Lane::Unaccounted));
                s.1 = s.0 + switch_left;
                switch_left = 0;
                note.push("the probe ran for longer than a switch takes before reading its clock, with no event: a hypervisor (or an SMI) held the CPU".to_string());
            } else {
                switch_left -= len;
            }
        }
    }
    spans.extend(tails);
    spans.retain(|s| s.1 > s.0);
    spans.sort_by_key(|s| s.0);
    note.dedup();
    if fired.is_none() {
        note.push("no event shows the probe's timer firing (events lost, or another wakeup method): the time before its switch is unaccounted".into());
    }
    let total = (w - d).max(1) as f64;
    let mut parts: Vec<Part> = Vec::new();
    for (a, b, cause, name, _) in &spans {
        let name = name.clone();
        match parts.iter_mut().find(|p| p.cause == *cause && p.name == name) {
            Some(p) => p.ns += b - a,
            None => parts.push(Part { cause: *cause, name, ns: b - a, share: 0.0 }),
        }
    }
    for p in &mut parts {
        p.share = p.ns as f64 * 100.0 / total;
    }
    parts.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.cause.cmp(&b.cause)));
    let mut timeline: Vec<Span> = Vec::new();
    for (a, b, cause, name, lane) in spans {
        let what = match cause {
            Cause::ExitFromIdle => "idle".to_string(),
            Cause::Switch => "probe".to_string(),
            Cause::TimerIrq => "timer IRQ".to_string(),
            Cause::Unaccounted => "no event".to_string(),
            c => format!("{} {name}", c.label()),
        };
        match timeline.last_mut() {
            Some(l) if l.what == what && l.end_ns == a - d => l.end_ns = b - d,
            _ => timeline.push(Span { lane, what, start_ns: a - d, end_ns: b - d }),
        }
    }
    // A fair task beside a fair probe shares the CPU by the fair scheduler's rules: it is
    // another task's interference, not a blocking one.
    // A blocker first seen through another event gets its priority from any switch or wakeup
    // in the window, else from its policy.
    if let Some(b) = blocking.as_mut().filter(|b| b.prio == UNKNOWN) {
        b.prio = prios.get(&b.pid).copied().unwrap_or(UNKNOWN);
    }
    let fair_policy = |b: &Task| matches!(policy_of(b.pid).as_deref(), Some("OTHER" | "BATCH" | "IDLE"));
    let probe_fair = probe_prio.is_some_and(|p| p >= 100);
    if probe_fair && blocking.as_ref().is_some_and(|b| b.prio >= 100 || b.prio == UNKNOWN && fair_policy(b)) {
        for p in parts.iter_mut().filter(|p| p.cause == Cause::BlockingTask) {
            p.cause = Cause::OtherTask;
        }
        for s in timeline.iter_mut().filter(|s| s.what.starts_with(Cause::BlockingTask.label())) {
            s.what = s.what.replacen(Cause::BlockingTask.label(), Cause::OtherTask.label(), 1);
        }
        blocking = None;
    }
    let blocker = blocking.filter(|b| b.pid > 0).and_then(|b| {
        let held = parts.iter().any(|p| p.cause == Cause::BlockingTask);
        held.then(|| {
            let probe_rt = probe_prio.is_some_and(|p| p < 100);
            // Kernel priorities: the smaller, the higher.
            let priority = match probe_prio {
                Some(p) if b.prio != UNKNOWN => match b.prio.cmp(&p) {
                    std::cmp::Ordering::Less => Rank::Higher,
                    std::cmp::Ordering::Equal => Rank::Equal,
                    std::cmp::Ordering::Greater => Rank::Lower,
                },
                _ => Rank::Unknown,
            };
            Blocker {
                policy: policy_label(b.pid, b.prio, policy_of),
                preempted_late: probe_rt && priority == Rank::Lower,
                priority,
                comm: b.comm,
                pid: b.pid,
            }
        })
    });
    Explanation {
        thread: spike.thread,
        cpu: spike.cpu,
        cycle: spike.cycle,
        latency_ns: spike.wake_ns - spike.deadline_ns,
        deadline_ns: d,
        fired_ns: fire_at.map(|f| f - d),
        switched_ns: switched.map(|s| s - d),
        parts,
        blocking: blocker,
        timeline,
        events: seen,
        lost_events: 0,
        steal_ns: None,
        smis: None,
        note: (!note.is_empty()).then(|| note.join("; ")),
        noise: false,
    }
}

/// Opens `c` at `at`: beneath any NMI open above it (an NMI cannot be interrupted; an entry
/// inside one is an artefact of the NMI's start being computed from its end).
fn enter(stack: &mut Vec<(Ctx, i64)>, c: Ctx, at: i64) {
    let top = stack.iter().rposition(|c| !matches!(c.0, Ctx::Nmi(_))).map_or(0, |i| i + 1);
    stack.insert(top, (c, at));
}

/// Closes the innermost context that `is` at `at`: the contexts opened inside it that are still
/// open lost their exit events (NMIs excepted: they end by themselves).
fn pop(stack: &mut Vec<(Ctx, i64)>, is: impl Fn(&Ctx) -> bool, at: i64, lost: &mut Vec<(i64, i64, Ctx)>) {
    if let Some(i) = stack.iter().rposition(|c| is(&c.0)) {
        for (k, (c, seen)) in stack.drain(i..).collect::<Vec<_>>().into_iter().enumerate() {
            match c {
                _ if k == 0 => {}
                Ctx::Nmi(_) => stack.push((c, seen)),
                c => lost.push((seen, at, c)),
            }
        }
    }
}
