//! What an rt-app use case (`rtlab run --rt-app`) records besides each thread's wakeup latency
//! (its `stats`: every timer and sleep it woke from) and its jobs (its `work`, from timer to
//! timer): how long one thread waited for another — the **hand-offs** from a `resume`,
//! `signal`, `broad`, `sync` or barrier in one task to the woken task running its next event —
//! the **lock waits** per mutex, and per timer its wakeups, overruns and slack.

use super::Stats;
use serde::{Deserialize, Serialize};

/// An rt-app use case's own figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RtAppRun {
    /// The file run.
    pub file: String,
    /// `global.pi_enabled`: the mutexes lent their waiters' priority to their holder.
    pub pi_enabled: bool,
    /// Per thread: what it ran, and its rt-app log.
    pub threads: Vec<RtAppThread>,
    /// Hand-off latencies, per releasing task, woken task, event and resource.
    pub handoffs: Vec<Handoff>,
    /// Time blocked in `lock`, per task and mutex.
    pub lock_waits: Vec<LockWait>,
    /// Per thread and timer: its wakeups and slack.
    pub timers: Vec<TimerFigures>,
}

/// One thread's run of its phases.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RtAppThread {
    /// Its name (`task-i` for instances).
    pub name: String,
    /// Its task.
    pub task: String,
    /// Phase loops completed (an rt-app log's lines).
    pub phase_loops: u64,
    /// Its log in rt-app's layout, when written.
    pub log: Option<String>,
}

/// How long woken threads of one task took to run after another task released them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Handoff {
    /// The releasing task.
    pub from: String,
    /// The woken task.
    pub to: String,
    /// The releasing event: `resume`, `signal`, `broad`, `sync` or `barrier`.
    pub via: String,
    /// The resource (suspend point, condition or barrier).
    pub resource: String,
    /// From the release (stamped by the releasing thread just before it) to the woken thread
    /// done with its wait (its mutex held again where it waited with one), ns; one sample per
    /// thread woken.
    pub stats: Stats,
}

/// Time a task's threads were blocked taking a mutex.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LockWait {
    /// The task.
    pub task: String,
    /// The mutex.
    pub mutex: String,
    /// From the `lock` event's start to the mutex held, ns; one sample per `lock`.
    pub stats: Stats,
}

/// One thread's use of one timer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimerFigures {
    /// The thread.
    pub thread: String,
    /// The timer (a `unique` timer is the thread's own).
    pub timer: String,
    /// Its period (ns; the first one asked).
    pub period_ns: i64,
    /// `relative` or `absolute`.
    pub mode: String,
    /// Wakeup latency of the expiries it slept until (ns).
    pub wakeups: Stats,
    /// Expiries it reached late, when rt-app does not sleep (a negative slack).
    pub overruns: u64,
    /// Smallest slack (next expiry − the timer event's start, ns; negative: an overrun).
    pub slack_min_ns: Option<i64>,
    /// Largest slack (ns).
    pub slack_max_ns: Option<i64>,
}

/// The probe's raw figures, made into an [`RtAppRun`] by the result builder (which dates the
/// maxima).
#[derive(Clone, Debug, PartialEq)]
pub struct RtAppFigures {
    /// See [`RtAppRun::file`].
    pub file: String,
    /// See [`RtAppRun::pi_enabled`].
    pub pi_enabled: bool,
    /// See [`RtAppRun::threads`].
    pub threads: Vec<RtAppThread>,
    /// Per hand-off: (from task, to task, via, resource) and its latencies.
    pub handoffs: Vec<((String, String, String, String), crate::measure::stats::Summary)>,
    /// Per lock wait: (task, mutex) and its waits.
    pub lock_waits: Vec<((String, String), crate::measure::stats::Summary)>,
    /// Per thread and timer: what it measured.
    pub timers: Vec<TimerRun>,
}

/// One thread's use of one timer as its probe measured it (see [`TimerFigures`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TimerRun {
    /// The thread.
    pub thread: String,
    /// The timer.
    pub timer: String,
    /// Its period (ns).
    pub period_ns: i64,
    /// rt-app's `relative` mode (else `absolute`).
    pub relative: bool,
    /// Wakeup latency of the expiries it slept until.
    pub wakeups: crate::measure::stats::Summary,
    /// Expiries it reached late.
    pub overruns: u64,
    /// Smallest and largest slack (ns).
    pub slack: Option<(i64, i64)>,
}

impl RtAppFigures {
    /// The result's form, maxima dated from `start`.
    pub fn into_run(self, start: std::time::SystemTime) -> RtAppRun {
        let stats = |s: &crate::measure::stats::Summary| super::build::stats_of(s, start);
        RtAppRun {
            file: self.file,
            pi_enabled: self.pi_enabled,
            threads: self.threads,
            handoffs: self
                .handoffs
                .iter()
                .map(|((from, to, via, resource), s)| Handoff {
                    from: from.clone(),
                    to: to.clone(),
                    via: via.clone(),
                    resource: resource.clone(),
                    stats: stats(s),
                })
                .collect(),
            lock_waits: self
                .lock_waits
                .iter()
                .map(|((task, mutex), s)| LockWait { task: task.clone(), mutex: mutex.clone(), stats: stats(s) })
                .collect(),
            timers: self
                .timers
                .into_iter()
                .map(|t| TimerFigures {
                    wakeups: stats(&t.wakeups),
                    thread: t.thread,
                    timer: t.timer,
                    period_ns: t.period_ns,
                    mode: if t.relative { "relative" } else { "absolute" }.into(),
                    overruns: t.overruns,
                    slack_min_ns: t.slack.map(|s| s.0),
                    slack_max_ns: t.slack.map(|s| s.1),
                })
                .collect(),
        }
    }
}
