//! What `rtlab watch` (`kind: watch`) records besides each watched thread's wakeup latency
//! (its `stats`: the return to user space after the release) and its response (its `work`):
//! per thread the timer interrupt and switch latencies, what the events showed, the timer
//! slack, the preemption during the work ([`WatchThread`]); for the run, what was watched and
//! what the tracing cost ([`WatchRun`]).

use super::Stats;
use crate::measure::stats::Summary;
use serde::{Deserialize, Serialize};

/// One watched thread's figures besides its wakeup latency and response.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WatchThread {
    /// Kernel thread id.
    pub tid: i32,
    /// The process it belongs to.
    pub process: Option<i32>,
    /// Its command name (the latest seen).
    pub comm: String,
    /// Released by its own timer at a steady period (else event-driven, or too few releases).
    pub periodic: bool,
    /// Its period (ns): `--period`, or learnt from its timer releases (the median interval).
    pub period_ns: Option<i64>,
    /// The CPUs it ran on after its releases.
    pub cpus: String,
    /// Periods recorded: a release and the return to user space after it (the wakeup
    /// latency's samples).
    pub periods: u64,
    /// Of those, periods with no response: the thread exited, or the run ended, before it
    /// blocked again.
    pub unfinished: u64,
    /// Of those, released by a timer it armed.
    pub timer_releases: u64,
    /// Of those, woken by another task or an interrupt.
    pub event_releases: u64,
    /// Periods not recorded: no return to user space was seen after the release (the thread
    /// blocked again in the kernel, exited, or the run ended first).
    pub incomplete: u64,
    /// Periods whose wakeup the kernel's events did not show (no timer interrupt, waking or
    /// switch in was delivered: some contexts deliver none to BPF programs): released at the
    /// expiry of the sleep the thread armed, measured from its return to user space, without
    /// IRQ and thread latencies (or, with no such sleep, counted in `incomplete`).
    #[serde(default)]
    pub unseen_wakeups: u64,
    /// Timer interrupt latency (`hrtimer_expire_entry` − the expiry asked for): timerlat's
    /// "IRQ" (absent when no timer release was seen).
    pub irq: Option<Stats>,
    /// Thread latency (the switch to it − release): timerlat's "Thr", for the periods whose
    /// switch was traced (a switch out of idle is not traced on some kernels).
    pub thread: Option<Stats>,
    /// Timer slack the kernel added to the timers it slept on (`expires − softexpires`, ns):
    /// the smallest and the largest seen (SCHED_OTHER threads get 50 µs unless they ask).
    pub timer_slack_min_ns: Option<i64>,
    /// See `timer_slack_min_ns`.
    pub timer_slack_max_ns: Option<i64>,
    /// Time it was runnable but not running after it first ran in a period, all periods (ns).
    pub preempted_ns: i64,
    /// The most in one period (ns).
    pub preempted_max_ns: i64,
    /// Periods in which it was preempted.
    pub preempted_periods: u64,
    /// Who preempted it, most time first (at most 10).
    pub preemptors: Vec<Preemptor>,
    /// It exited during the run.
    pub exited: bool,
    /// The period that stopped the run (`rtlab timerlat -i`/`-T`), if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StageStop>,
    /// Periods above a stage threshold (`rtlab timerlat -i`/`-T`; more than one with
    /// `--on-threshold continue`, where the run goes on).
    #[serde(default)]
    pub stage_hits: u64,
    /// Periods whose stages were out of order: the timer interrupt after the switch to the
    /// thread, or the switch after its return to user space (0 when the events are consistent).
    #[serde(default)]
    pub stages_out_of_order: u64,
    /// Its return-to-user latencies (Usr) of the periods whose three stages were dated (the
    /// same periods as `irq` and `thread`: equal counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<Stats>,
    /// What dated each stage, in samples.
    #[serde(default)]
    pub stage_sources: StageSources,
    /// What it was found to be: `timer-periodic` (released by the expiries of one timer),
    /// `event-loop` (iterations between returns from a wait for input) or `irregular`
    /// (each wakeup a job of its own, no learnt period or deadline); empty when it never woke.
    #[serde(default)]
    pub kind: String,
    /// Why: the timer and the call it slept in, or the wait.
    #[serde(default)]
    pub evidence: String,
    /// Its jobs' time, split: running, runnable but waiting, blocked inside the job.
    #[serde(default)]
    pub jobs: JobTimes,
    /// What it blocked on inside its jobs, most time first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_on: Vec<BlockedOn>,
    /// An event loop's iterations and stalls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_loop: Option<EventLoop>,
}

/// A watched thread's jobs, each release to completion, split: every job's response is its
/// running, waiting and blocked time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobTimes {
    /// Jobs completed (a release and the block that ended the job).
    pub completed: u64,
    /// Time on a CPU, all completed jobs (ns; interrupts taken in its context included).
    pub running_ns: i64,
    /// Time runnable but not running: from the release until it ran, and preempted (ns).
    pub waiting_ns: i64,
    /// Time blocked inside its jobs: sleeps on other timers, locks, I/O, page faults (ns).
    pub blocked_ns: i64,
    /// The most blocked time in one job (ns).
    pub blocked_max_ns: i64,
    /// Wakeups inside jobs (not releases): they end no job and enter no latency histogram.
    pub inner_wakeups: u64,
    /// Wakeups before its first release (part of no job).
    pub before_first_release: u64,
}

/// One thing a watched thread blocked on inside its jobs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BlockedOn {
    /// The system call it slept in (`futex`, `clock_nanosleep`, `read`, …), or why none.
    pub on: String,
    /// Time, all jobs (ns).
    pub ns: i64,
    /// The most in one job (ns).
    pub max_ns: i64,
    /// Jobs in which it did.
    pub jobs: u64,
}

/// An event loop's iterations (each from a wait's return to the next wait) and stalls.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventLoop {
    /// Iterations seen: those that slept in the wait (a wakeup: in the latency histograms)
    /// and those that found input waiting.
    pub iterations: u64,
    /// Of those, iterations whose wait returned without blocking (no wakeup to measure).
    pub found_waiting: u64,
    /// Busy time (the wait's return to the next wait), all iterations (ns).
    pub busy_ns: i64,
    /// The longest iteration (ns).
    pub busy_max_ns: i64,
    /// An iteration busy longer than this is a stall (`--stall`, ns).
    pub stall_threshold_ns: i64,
    /// Stalls.
    pub stalls: u64,
    /// The longest stalls (at most 100), in time order.
    pub worst_stalls: Vec<Stall>,
}

/// One event-loop iteration busy beyond `--stall`, with what the kernel showed during it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stall {
    /// When the iteration began (ns since the start).
    pub at_ns: i64,
    /// Its busy time (ns).
    pub busy_ns: i64,
    /// Of its span from the wakeup that began it: on a CPU (ns).
    pub running_ns: i64,
    /// Runnable but not running (ns).
    pub waiting_ns: i64,
    /// Blocked (ns).
    pub blocked_ns: i64,
    /// The wakeup latency of the wakeup that ended the wait (ns; none when it found input
    /// waiting).
    pub wakeup_ns: Option<i64>,
    /// Who woke it (`comm:pid`).
    pub waker: Option<String>,
    /// Who ran while it waited for a CPU.
    pub preempted_by: Vec<Share>,
    /// Interrupts taken in its context.
    pub interrupts: Vec<Share>,
    /// What it blocked on.
    pub blocked_on: Vec<Share>,
}

/// A name and its time (ns).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Share {
    /// A task (`comm:pid`), an interrupt or a system call.
    pub name: String,
    /// Time (ns).
    pub ns: i64,
}

/// How many samples each source dated, per stage: the IRQ always by the timer's callback
/// (`hrtimer_expire_entry`), the Usr by the return to user space (`sys_exit`); the Thr by the
/// traced switch to the thread where the kernel traced one, else by the thread's first event
/// after its release (an upper bound, a few hundred ns late: a switch out of idle often is not
/// traced).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StageSources {
    /// Thr dated by the traced `sched_switch` to the thread.
    pub thread_by_switch: u64,
    /// Thr dated by the thread's first traced event after its release.
    pub thread_by_first_event: u64,
}

/// A latency above a stop threshold (`rtlab timerlat -i US` or `-T US`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StageStop {
    /// `IRQ` or `thread`.
    pub stage: String,
    /// The latency (ns).
    pub latency_ns: i64,
    /// When its period was released, ns since the start.
    pub at_ns: i64,
}

/// A task that took a watched thread's CPU while it worked.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Preemptor {
    /// `comm:pid`.
    pub task: String,
    /// Time it held the CPU while the thread was runnable (ns).
    pub ns: i64,
    /// Periods in which it did.
    pub periods: u64,
}

/// A watched thread's figures as the probe hands them to the builder.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchFigures {
    /// What is stored as is (its `irq` and `thread` are filled from the summaries).
    pub thread: WatchThread,
    /// Timer interrupt latencies.
    pub irq: Summary,
    /// Switch latencies.
    pub switch: Summary,
    /// Return-to-user latencies of the same periods.
    pub user: Summary,
}

/// What a watch run watched and what tracing cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WatchRun {
    /// What was asked: `pid 1234`, `tid 5,6`, `comm ctl`, `command ./app -x`.
    pub target: String,
    /// The command started (`rtlab watch -- CMD`), argv.
    pub command: Option<Vec<String>>,
    /// Its exit status when it exited during the run (`null`: it did not, or was not started).
    pub exit_status: Option<i32>,
    /// The signal that ended it, if one did.
    pub exit_signal: Option<i32>,
    /// How the events were read (`tracefs trace_pipe_raw, filtered to the watched threads`).
    pub backend: String,
    /// The tracefs instance (removed at exit).
    pub instance: String,
    /// Events read.
    pub events: u64,
    /// Events the kernel lost (overwritten or dropped before they were read): periods around
    /// them may be missing or incomplete.
    pub lost_events: u64,
    /// Records the decoder did not understand.
    pub undecoded: u64,
    /// Events read after younger ones of other CPUs had been analysed: the kernel published
    /// them more than 20 ms after they happened (a CPU stalled while writing one, as a host's
    /// preemption of a virtual CPU can do). They are analysed as read, out of their place, so
    /// the periods around them may be cut wrongly; 0 on a healthy machine.
    #[serde(default)]
    pub late_events: u64,
    /// Threads watched over the run.
    pub threads: usize,
    /// Threads that matched but were not watched (more than `--max-threads`).
    pub threads_dropped: usize,
    /// CPU time rtlab's event reader used (ns): the cost of watching, besides the kernel's.
    pub reader_cpu_ns: i64,
}
