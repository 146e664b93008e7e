//! Why was it late: the events of the probe's CPU from its deadline to its wakeup, turned into
//! a partition of the latency (timer delay, interrupts, softirqs, NMIs, the blocking task,
//! other tasks, the switch, and what no event explains), summing to 100 %.

use super::cpu::{steps, CpuState, Ctx, Step, Task, UNKNOWN};
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
    /// Late periods left unexplained because explaining them would have cost the reader more
    /// than a tenth of the run's time (`rtlab watch --explain`: the run's length holds).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped_for_time: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
    /// A watched thread running its own work (the part of a response that is not interference).
    OwnWork,
    /// A task that ran while a watched thread, preempted during its work, waited for the CPU.
    Preemption,
    /// A watched thread asleep inside its job (a lock, a pause, I/O: named by the call it
    /// slept in, when its return was seen).
    Blocked,
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
            Cause::OwnWork => "its own work",
            Cause::Preemption => "preempted by",
            Cause::Blocked => "blocked in",
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

impl Part {
    /// Its cause, and its name when it has one (`blocking task blk:4711`).
    pub fn who(&self) -> String {
        if self.name.is_empty() {
            self.cause.label().to_string()
        } else {
            format!("{} {}", self.cause.label(), self.name)
        }
    }
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
    /// A watched thread's late response (`rtlab watch --explain`): its relative deadline (ns).
    /// The window is then the whole period, from the release (`deadline_ns`) to the block
    /// (`latency_ns` is the response time), and the parts are its wakeup's and its work's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<i64>,
}

impl Explanation {
    /// One explanation: `max 1037.0 µs on thread 1 (CPU 1) cycle 2210: blocking task blk:4711
    /// (FIFO 90) 1001.0 µs 96.5 %, …`, then the timer and switch instants and any note.
    /// When the timer fired and the probe was switched in, in plain words (what no event
    /// shows is said so), and why the blocking task kept the CPU.
    pub fn moments(&self) -> String {
        let fired = match self.fired_ns {
            Some(v) => format!("the timer fired at +{}", us(v as f64)),
            None => "no event shows the timer firing".to_string(),
        };
        let switched = match self.switched_ns {
            Some(v) => format!("the probe was switched in at +{}", us(v as f64)),
            None => "no event shows the switch to the probe".to_string(),
        };
        let mut out = format!("{fired}; {switched}");
        if let Some(b) = &self.blocking {
            out += &format!("; {}:{} {}", b.comm, b.pid, b.priority.words());
        }
        out
    }

    /// Where the latency went, one row per cause and name, largest first, the parts under 1 %
    /// together in one row: (what, ns, share).
    pub fn rows(&self) -> Vec<(String, i64, f64)> {
        let mut rows = Vec::new();
        let (mut small_ns, mut small_share, mut small_n) = (0, 0.0, 0);
        for p in &self.parts {
            if p.share < 1.0 && self.parts.len() > 1 {
                small_ns += p.ns;
                small_share += p.share;
                small_n += 1;
                continue;
            }
            rows.push((self.label(p), p.ns, p.share));
        }
        match small_n {
            0 => {}
            1 => {
                let p = self.parts.iter().find(|p| p.share < 1.0).expect("counted");
                rows.push((p.who(), small_ns, small_share));
            }
            n => rows.push((format!("{n} smaller parts (under 1 % each)"), small_ns, small_share)),
        }
        rows
    }

    /// A part as the rows and paragraphs name it: its cause and name, and a blocking task's
    /// policy.
    fn label(&self, p: &Part) -> String {
        match (&self.blocking, p.cause) {
            (Some(b), Cause::BlockingTask) => format!("{} ({})", p.who(), b.policy),
            _ => p.who(),
        }
    }

    /// The first line of [`Explanation::describe`], without the parts.
    pub fn heading(&self, first: bool) -> String {
        let e = self;
        if let Some(deadline) = e.work {
            let late = e.latency_ns - deadline;
            let how = if late > 0 { format!("finished {} late", us(late as f64)) } else { "finished in time".into() };
            format!(
                "period {} of thread {} (CPU {}) {how} (response {}, deadline {})",
                e.cycle,
                e.thread,
                e.cpu,
                us(e.latency_ns as f64),
                us(deadline as f64)
            )
        } else if e.noise {
            format!(
                "{} {} on CPU {} (gap {})",
                if first { "max noise" } else { "noise" },
                us(e.latency_ns as f64),
                e.cpu,
                e.cycle
            )
        } else {
            format!(
                "{} {} on thread {} (CPU {}) cycle {}",
                if first { "max" } else { "spike" },
                us(e.latency_ns as f64),
                e.thread,
                e.cpu,
                e.cycle
            )
        }
    }

    /// What the machine did around the window besides the parts (steal, SMIs, lost events, a
    /// note), one indented line each.
    pub fn notes(&self) -> String {
        let e = self;
        let mut out = String::new();
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

    /// The explanation in a paragraph: the heading with its parts inline, when the timer fired
    /// and the probe ran, and the notes.
    pub fn describe(&self, first: bool) -> String {
        let e = self;
        let parts: Vec<String> =
            e.parts.iter().map(|p| format!("{} {} {:.1} %", e.label(p), us(p.ns as f64), p.share)).collect();
        let mut out = format!("{}: {}\n", e.heading(first), parts.join(", "));
        match (e.work, e.noise, &e.blocking) {
            (None, false, _) => out += &format!("  {}\n", e.moments()),
            (None, true, Some(b)) => {
                out += &format!("  {}:{} ({}) took the CPU from the busy thread\n", b.comm, b.pid, b.policy)
            }
            _ => {}
        }
        out += &e.notes();
        out
    }
}

#[cfg(test)]
impl Explanation {
    /// An explanation with nothing in it, for tests to fill in.
    pub(crate) fn blank() -> Explanation {
        Explanation {
            thread: 0,
            cpu: 0,
            cycle: 0,
            latency_ns: 0,
            deadline_ns: 0,
            fired_ns: None,
            switched_ns: None,
            parts: Vec::new(),
            blocking: None,
            timeline: Vec::new(),
            events: 0,
            lost_events: 0,
            steal_ns: None,
            smis: None,
            note: None,
            noise: false,
            work: None,
        }
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

/// The policy name of a task from `/proc/PID/stat` (field 41), while it exists.
pub fn policy_of(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    // Fields after the comm start at field 3 (state); policy is field 41.
    let policy: u32 = after.split_whitespace().nth(38)?.parse().ok()?;
    Some(
        match policy {
            0 => "OTHER",
            1 => "FIFO",
            2 => "RR",
            3 => "BATCH",
            5 => "IDLE",
            6 => "DEADLINE",
            _ => return None,
        }
        .into(),
    )
}

/// Interrupt entry on top of an idle state's exit latency.
pub const IRQ_ENTRY_NS: i64 = 20_000;

/// The longest an idle `cpu` takes to take an interrupt: the exit latency of the deepest idle
/// state it may enter, plus [`IRQ_ENTRY_NS`]. A state may be entered when it is enabled and its
/// exit latency is within the PM QoS limit `qos_us` (`/dev/cpu_dma_latency`, which rtlab holds
/// at 0 µs by default: then only polling idle is entered). Without cpuidle states (a VM, no
/// driver) the default bound.
pub fn idle_exit_ns(root: &crate::doctor::Sysroot, cpu: usize, qos_us: Option<i32>) -> i64 {
    let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
    let states: Vec<String> =
        root.list(&dir).unwrap_or_default().into_iter().filter(|n| n.starts_with("state")).collect();
    if states.is_empty() {
        return Bounds::default().idle_exit_ns;
    }
    let deepest = states
        .iter()
        .filter(|n| root.read(&format!("{dir}/{n}/disable")).is_ok_and(|d| d.trim() == "0"))
        .filter_map(|n| root.read(&format!("{dir}/{n}/latency")).ok()?.trim().parse::<i64>().ok())
        .filter(|lat| qos_us.is_none_or(|q| *lat <= i64::from(q.max(0))))
        .max()
        .unwrap_or(0);
    deepest * 1000 + IRQ_ENTRY_NS
}

/// One stretch of the window: `(from, to, cause, name, lane)`.
pub(super) type Stretch = (i64, i64, Cause, String, Lane);

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

/// The instants that divide a window into its phases: the deadline, the probe's timer firing,
/// the switch to the probe, its wakeup.
#[derive(Clone, Debug)]
struct Phases {
    tid: i32,
    deadline: i64,
    wake: i64,
    /// When the probe's timer fired (clamped into the window), and the index of its waking.
    fired: Option<(i64, usize)>,
    switched: Option<i64>,
    probe_prio: Option<i32>,
    /// The local timer interrupt open when the timer fired (index in the events).
    own_vector: Option<usize>,
    /// The probe itself ran between the deadline and its timer: it went to sleep after the
    /// deadline had passed (a late previous cycle), so its timer could not fire on time.
    late_arm: bool,
}

impl Phases {
    fn fire_at(&self) -> Option<i64> {
        self.fired.map(|f| f.0)
    }
}

/// The probe's timer (the `hrtimer_wakeup` whose callback wakes it), its priority, the switch
/// to it, its own timer interrupt and whether it armed its timer late.
fn phases(spike: &Spike, events: &[Event]) -> Phases {
    let (d, w) = (spike.deadline_ns, spike.wake_ns.max(spike.deadline_ns));
    let mut fired: Option<(i64, usize)> = None;
    let mut probe_prio = None;
    for (i, e) in events.iter().enumerate().filter(|(_, e)| e.ts_ns + 1_000 >= d) {
        let Kind::Waking { pid, prio, .. } = &e.kind else { continue };
        if *pid != spike.tid {
            continue;
        }
        probe_prio = Some(*prio);
        // hrtimer_wakeup wakes the sleeper itself: its entry is just before the waking.
        let timer = events[..i].iter().rev().take(4).take_while(|p| !matches!(p.kind, Kind::HrtimerExit)).find_map(
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
    let switched = events
        .iter()
        .skip(fired.map_or(0, |f| f.1))
        .find(|e| e.ts_ns + 1_000 >= d && matches!(&e.kind, Kind::Switch { next_pid, .. } if *next_pid == spike.tid))
        .map(|e| e.ts_ns.clamp(fired.map_or(d, |f| f.0), w));
    let fire_at = fired.map(|f| f.0);
    // Trace timestamps are truncated to the µs: an event printed before the deadline happened
    // before it (the probe slept in time).
    let late_arm = fire_at.is_some_and(|f| {
        events.iter().any(|e| {
            e.ts_ns >= d
                && e.ts_ns < f
                && (e.pid == spike.tid || matches!(&e.kind, Kind::Switch { next_pid, .. } if *next_pid == spike.tid))
        })
    });
    Phases {
        tid: spike.tid,
        deadline: d,
        wake: w,
        fired,
        switched,
        probe_prio,
        own_vector: fired.and_then(|(_, i)| own_vector(&events[..i])),
        late_arm,
    }
}

/// The local timer interrupt still open at the end of `before`: the one that fired the timer.
fn own_vector(before: &[Event]) -> Option<usize> {
    let mut depth = 0;
    before.iter().rposition(|e| match &e.kind {
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
}

impl Phases {
    /// What the time from `a` on was, given the context on top and the task running: an
    /// interrupt, the probe's switch, a task's interference, the timer's delay, or unknown.
    fn classify(
        &self,
        a: i64,
        ctx: Option<&Ctx>,
        task: &Option<Task>,
        blocking: &Option<Task>,
    ) -> (Cause, String, Lane) {
        match ctx {
            Some(Ctx::Irq(n)) => return (Cause::Irq, n.to_string(), Lane::Irq),
            Some(Ctx::Softirq(n)) => return (Cause::Softirq, n.to_string(), Lane::Softirq),
            Some(Ctx::Vector(_, true)) => return (Cause::TimerIrq, String::new(), Lane::Irq),
            Some(Ctx::Vector(n, false)) => return (Cause::Vector, n.to_string(), Lane::Irq),
            Some(Ctx::Nmi(n)) => return (Cause::Nmi, n.to_string(), Lane::Irq),
            None => {}
        }
        let label = |t: &Task| format!("{}:{}", t.comm, t.pid);
        match (self.fire_at(), self.switched, task) {
            (_, Some(s), Some(tk)) if a >= s && tk.pid == self.tid => (Cause::Switch, String::new(), Lane::Probe),
            (_, Some(s), Some(tk)) if a >= s => (Cause::OtherTask, label(tk), Lane::Task),
            (None, _, _) | (_, _, None) => (Cause::Unaccounted, String::new(), Lane::Unaccounted),
            (Some(f), _, Some(tk)) if a < f && !self.late_arm => {
                if tk.pid == 0 {
                    (Cause::ExitFromIdle, String::new(), Lane::Task)
                } else {
                    (Cause::IrqsDisabled, label(tk), Lane::Task)
                }
            }
            // After the timer fired, or before it when the probe armed it late.
            (Some(_), _, Some(tk)) => {
                if tk.pid == self.tid || tk.pid == 0 {
                    (Cause::Switch, String::new(), Lane::Probe)
                } else if blocking.as_ref().is_some_and(|b| b.pid == tk.pid) {
                    (Cause::BlockingTask, label(tk), Lane::Task)
                } else {
                    (Cause::OtherTask, label(tk), Lane::Task)
                }
            }
        }
    }

    /// Attributes `from..to` (split where the phase changes) to what ran.
    fn attribute(
        &self,
        from: i64,
        to: i64,
        cpu: &CpuState,
        task: &Option<Task>,
        blocking: &Option<Task>,
        out: &mut Vec<Stretch>,
    ) {
        if to <= from {
            return;
        }
        let mut cuts = vec![from];
        cuts.extend([self.fire_at(), self.switched].into_iter().flatten().filter(|x| *x > from && *x < to));
        cuts.push(to);
        for pair in cuts.windows(2) {
            let (cause, name, lane) = self.classify(pair[0], cpu.context(), task, blocking);
            out.push((pair[0], pair[1], cause, name, lane));
        }
    }
}

/// What walking a window found.
struct Walk {
    stretches: Vec<Stretch>,
    blocking: Option<Task>,
    cpu: CpuState,
    /// Events inside the window.
    seen: usize,
}

/// Walks the window's steps with the CPU's state, attributing each stretch between two steps
/// to what ran; the blocking task is the one running at the deadline (a late-armed timer) or
/// when the timer fired, or (the CPU idle then) the first other task to run before the probe.
fn walk(ph: &Phases, steps: &[(i64, Step)]) -> Walk {
    let (d, w) = (ph.deadline, ph.wake);
    let mut cpu = CpuState::default();
    let (mut blocking, mut stretches, mut seen, mut t) = (None::<Task>, Vec::new(), 0usize, d);
    let (mut looked_at_deadline, mut looked_at_fire) = (false, false);
    let not_probe = |tk: &Task| tk.pid != 0 && tk.pid != ph.tid;
    for (ts, step) in steps {
        let at = (*ts).clamp(t, w);
        let header = cpu.header(step, Some((ph.tid, ph.probe_prio.unwrap_or(0))));
        if ph.late_arm && *ts >= d && !looked_at_deadline {
            looked_at_deadline = true;
            blocking = cpu.task.clone().filter(not_probe);
        }
        if *ts >= d {
            let during = cpu.holder(&header);
            ph.attribute(t, at, &cpu, &during, &blocking, &mut stretches);
            t = at;
        }
        cpu.adopt(header);
        cpu.learn(step);
        if ph.fire_at().is_some_and(|f| at >= f) && !looked_at_fire {
            looked_at_fire = true;
            if blocking.is_none() {
                blocking = cpu.task.clone().filter(not_probe);
            }
        }
        if *ts > w {
            break;
        }
        seen += (*ts >= d) as usize;
        cpu.apply(step, at);
        // An idle CPU when the timer fired: the first other task given the CPU before the probe
        // blocks it as one running at the fire would (the same task, the same cause, in every spike).
        if looked_at_fire && blocking.is_none() && ph.switched.is_none_or(|s| at < s) {
            blocking = cpu.task.clone().filter(not_probe);
        }
    }
    let task = cpu.task.clone();
    ph.attribute(t, w, &cpu, &task, &blocking, &mut stretches);
    Walk { stretches, blocking, cpu, seen }
}

/// A context whose exit was lost: after its last event, the time is not known to be its.
fn unaccount_lost(stretches: Vec<Stretch>, lost: &[(i64, i64, Ctx)], note: &mut Vec<String>) -> Vec<Stretch> {
    let mut spans = stretches;
    for (from, to, c) in lost {
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
    spans
}

/// Idle beyond the exit bound, and interrupts held off beyond theirs: no event explains them.
/// The idle closest to the timer is the exit, up to the bound over all idle stretches; every
/// earlier idle moment is unexplained.
fn bound_silences(mut spans: Vec<Stretch>, bounds: Bounds, note: &mut Vec<String>) -> Vec<Stretch> {
    spans.sort_by_key(|s| s.0);
    let mut idle_left = bounds.idle_exit_ns;
    let mut heads = Vec::new();
    for s in spans.iter_mut().rev().filter(|s| s.2 == Cause::ExitFromIdle) {
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
    if !heads.is_empty() {
        note.push("the CPU was idle longer than its deepest idle state takes to exit, with no event: a hypervisor (or an SMI) held it".to_string());
    }
    spans.extend(heads);
    spans.retain(|s| s.1 > s.0);
    for s in spans.iter_mut().filter(|s| s.2 == Cause::IrqsDisabled && s.1 - s.0 > bounds.irqs_off_ns) {
        s.2 = Cause::Unaccounted;
        s.3 = String::new();
        s.4 = Lane::Unaccounted;
        note.push(format!(
            "{} µs passed without any event while a task ran and the timer was due: interrupts held off that long are rare, a hypervisor (or an SMI) is likelier",
            (s.1 - s.0) / 1000
        ));
    }
    spans.sort_by_key(|s| s.0);
    spans
}

/// The first moments of the switch are the switch, up to its bound; the rest is unexplained
/// (split, never dropped: the parts always sum to the latency).
fn bound_switch(mut spans: Vec<Stretch>, bounds: Bounds, note: &mut Vec<String>) -> Vec<Stretch> {
    let mut switch_left = bounds.switch_ns;
    let mut tails = Vec::new();
    for s in spans.iter_mut().filter(|s| s.2 == Cause::Switch && s.4 == Lane::Probe) {
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
    spans.extend(tails);
    spans.retain(|s| s.1 > s.0);
    spans.sort_by_key(|s| s.0);
    spans
}

/// The stretches summed by cause and name (largest first, shares of `total`), and the
/// timeline (contiguous stretches of one context merged), times from `origin`.
pub(super) fn partition(spans: Vec<Stretch>, total: i64, origin: i64) -> (Vec<Part>, Vec<Span>) {
    // Empty stretches say nothing (a context entered and left at one instant).
    let spans: Vec<Stretch> = spans.into_iter().filter(|s| s.1 > s.0).collect();
    let mut parts: Vec<Part> = Vec::new();
    for (a, b, cause, name, _) in &spans {
        match parts.iter_mut().find(|p| p.cause == *cause && p.name == *name) {
            Some(p) => p.ns += b - a,
            None => parts.push(Part { cause: *cause, name: name.clone(), ns: b - a, share: 0.0 }),
        }
    }
    for p in &mut parts {
        p.share = p.ns as f64 * 100.0 / total.max(1) as f64;
    }
    parts.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.cause.cmp(&b.cause)));
    let mut timeline: Vec<Span> = Vec::new();
    for (a, b, cause, name, lane) in spans {
        let what = match cause {
            Cause::ExitFromIdle => "idle".to_string(),
            Cause::Switch => "probe".to_string(),
            Cause::TimerIrq => "timer IRQ".to_string(),
            Cause::Unaccounted => "no event".to_string(),
            Cause::OwnWork => "work".to_string(),
            c => format!("{} {name}", c.label()),
        };
        match timeline.last_mut() {
            Some(l) if l.what == what && l.end_ns == a - origin => l.end_ns = b - origin,
            _ => timeline.push(Span { lane, what, start_ns: a - origin, end_ns: b - origin }),
        }
    }
    (parts, timeline)
}

/// The task that kept the CPU, as the explanation names it: a fair task beside a fair probe
/// shares the CPU by the fair scheduler's rules (another task's interference, not a blocking
/// one); a blocker first seen through another event gets its priority from any switch or
/// wakeup in the window, else from its policy.
fn blocker(
    blocking: Option<Task>,
    prios: &std::collections::HashMap<i32, i32>,
    probe_prio: Option<i32>,
    parts: &mut [Part],
    timeline: &mut [Span],
    policy_of: &dyn Fn(i32) -> Option<String>,
) -> Option<Blocker> {
    let mut b = blocking.filter(|b| b.pid > 0)?;
    if b.prio == UNKNOWN {
        b.prio = prios.get(&b.pid).copied().unwrap_or(UNKNOWN);
    }
    let fair_policy = matches!(policy_of(b.pid).as_deref(), Some("OTHER" | "BATCH" | "IDLE"));
    if probe_prio.is_some_and(|p| p >= 100) && (b.prio >= 100 || b.prio == UNKNOWN && fair_policy) {
        for p in parts.iter_mut().filter(|p| p.cause == Cause::BlockingTask) {
            p.cause = Cause::OtherTask;
        }
        for s in timeline.iter_mut().filter(|s| s.what.starts_with(Cause::BlockingTask.label())) {
            s.what = s.what.replacen(Cause::BlockingTask.label(), Cause::OtherTask.label(), 1);
        }
        return None;
    }
    if !parts.iter().any(|p| p.cause == Cause::BlockingTask) {
        return None;
    }
    // Kernel priorities: the smaller, the higher.
    let priority = match probe_prio {
        Some(p) if b.prio != UNKNOWN => match b.prio.cmp(&p) {
            std::cmp::Ordering::Less => Rank::Higher,
            std::cmp::Ordering::Equal => Rank::Equal,
            std::cmp::Ordering::Greater => Rank::Lower,
        },
        _ => Rank::Unknown,
    };
    Some(Blocker {
        policy: policy_label(b.pid, b.prio, policy_of),
        preempted_late: probe_prio.is_some_and(|p| p < 100) && priority == Rank::Lower,
        priority,
        comm: b.comm.to_string(),
        pid: b.pid,
    })
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
    let ph = phases(spike, events);
    let walk = walk(&ph, &steps(events, ph.own_vector));
    let mut note = Vec::new();
    let spans = unaccount_lost(walk.stretches, &walk.cpu.lost, &mut note);
    let spans = bound_silences(spans, bounds, &mut note);
    let spans = bound_switch(spans, bounds, &mut note);
    note.dedup();
    if ph.fired.is_none() {
        note.push("no event shows the probe's timer firing (events lost, or another wakeup method): the time before its switch is unaccounted".into());
    }
    let (d, w) = (ph.deadline, ph.wake);
    let (mut parts, mut timeline) = partition(spans, w - d, d);
    let blocking = blocker(walk.blocking, &walk.cpu.prios, ph.probe_prio, &mut parts, &mut timeline, policy_of);
    Explanation {
        thread: spike.thread,
        cpu: spike.cpu,
        cycle: spike.cycle,
        latency_ns: spike.wake_ns - spike.deadline_ns,
        deadline_ns: d,
        fired_ns: ph.fire_at().map(|f| f - d),
        switched_ns: ph.switched.map(|s| s - d),
        parts,
        blocking,
        timeline,
        events: walk.seen,
        lost_events: 0,
        steal_ns: None,
        smis: None,
        note: (!note.is_empty()).then(|| note.join("; ")),
        noise: false,
        work: None,
    }
}
