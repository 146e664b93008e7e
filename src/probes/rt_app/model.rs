//! An rt-app use case as rtlab runs it (rt-app 1.0's `doc/tutorial.txt`): threads, instances
//! expanded, each a list of phases of events in file order, the resources they share by name,
//! and what `global` asks of the run. Read by `cli::rt_app`, run by [`super::engine`].

use crate::rt::affinity::CpuSet;
use crate::rt::sched::SchedParams;
use std::path::PathBuf;
use std::time::Duration;

/// A whole use case.
#[derive(Clone, Debug, PartialEq)]
pub struct UseCase {
    /// The threads, one per instance, in file order.
    pub threads: Vec<ThreadSpec>,
    /// The resources, by the index events name them with.
    pub resources: Vec<Resource>,
    /// `global.duration` (`None`: -1, until the threads end or the run is stopped).
    pub duration: Option<Duration>,
    /// `global.lock_pages`.
    pub lock_pages: bool,
    /// `global.pi_enabled`: mutexes lend their waiters' priority to their holder.
    pub pi_enabled: bool,
    /// `global.calibration` `"CPUn"`: where `run`'s work is sized (`None`: on each thread's own CPU).
    pub calibration_cpu: Option<usize>,
    /// `global.calibration` in ns per loop (rt-app's pLoad): the logs' `perf` column counts
    /// rt-app's loops of that size, as rt-app's does (`None`: rtlab's own work units).
    pub p_load_ns: Option<u64>,
    /// `global.ftrace`: which of rt-app's trace markers are written (`Ftrace::NONE`: none).
    pub ftrace: Ftrace,
    /// `global.cumulative_slack`: a phase loop's slack is the sum of its timers' slacks.
    pub cumulative_slack: bool,
    /// `global.io_device`: where `iorun` writes.
    pub io_device: PathBuf,
    /// `global.mem_buffer_size`: each thread's buffer for `mem` and `iorun` (bytes).
    pub mem_buffer_size: usize,
    /// `global.logdir`/`log_basename`: rt-app's per-thread logs are written there.
    pub log: Option<LogSpec>,
    /// Keys read and not applied, each with why (said once as warnings).
    pub ignored: Vec<String>,
}

/// Where rt-app's per-thread logs go: `<dir>/<basename>-<thread>-<index>.log`.
#[derive(Clone, Debug, PartialEq)]
pub struct LogSpec {
    /// The directory (it must exist).
    pub dir: PathBuf,
    /// The file names' prefix.
    pub basename: String,
}

/// One thread (one instance of a task).
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadSpec {
    /// Its name: the task's, numbered `name-i` when the task has several instances.
    pub name: String,
    /// The task it is an instance of (hand-offs are reported between tasks).
    pub task: String,
    /// Scheduling at its start.
    pub sched: SchedParams,
    /// CPUs it may run on (`None`: all).
    pub cpus: Option<CpuSet>,
    /// Delay before its first phase (ns).
    pub delay_ns: i64,
    /// Times its phases run (`None`: until the run ends).
    pub loops: Option<u64>,
    /// Its phases in order.
    pub phases: Vec<Phase>,
}

impl ThreadSpec {
    /// True when one of its events is an `iorun`: it writes to `global.io_device`.
    pub fn does_iorun(&self) -> bool {
        self.phases.iter().flat_map(|p| &p.events).any(|e| matches!(e, Event::IoRun(_)))
    }
}

/// One phase: events run `loops` times before the next phase.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// Its name in the file.
    pub name: String,
    /// Times it runs per loop of the thread (rt-app's default: 1).
    pub loops: u64,
    /// CPUs for this phase (`None`: the thread's).
    pub cpus: Option<CpuSet>,
    /// Scheduling for this phase (`None`: as it was).
    pub sched: Option<SchedParams>,
    /// The events in file order.
    pub events: Vec<Event>,
    /// Each event's key in the file (`run0`, `timer`): rt-app's `rtapp_event` marker says it.
    pub event_names: Vec<String>,
}

/// One event, with the resources it names resolved to their index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Calibrated work of this many ns on an undisturbed CPU (`run`).
    Run(i64),
    /// Busy for this many ns of wall time (`runtime`).
    Runtime(i64),
    /// A relative sleep (ns).
    Sleep(i64),
    /// Waits for the next expiry of a periodic timer.
    Timer {
        /// The timer.
        res: usize,
        /// Its period (ns).
        period_ns: i64,
    },
    /// Blocks until another thread resumes the resource.
    Suspend(usize),
    /// Wakes every thread suspended on the resource.
    Resume(usize),
    /// Locks a mutex.
    Lock(usize),
    /// Unlocks a mutex.
    Unlock(usize),
    /// Waits on a condition with its mutex held.
    Wait {
        /// The condition.
        cond: usize,
        /// The mutex held.
        mutex: usize,
    },
    /// Wakes one waiter of a condition.
    Signal(usize),
    /// Wakes every waiter of a condition.
    Broad(usize),
    /// Wakes one waiter and waits on the same condition.
    Sync {
        /// The condition.
        cond: usize,
        /// The mutex held.
        mutex: usize,
    },
    /// Waits until every user of the barrier has reached it.
    Barrier(usize),
    /// Writes this many bytes of memory.
    Mem(u64),
    /// Writes this many bytes to the io device.
    IoRun(u64),
    /// Gives up the CPU.
    Yield,
}

/// rt-app's trace marker categories (`global.ftrace`): a set of `Ftrace::MAIN` … `ATTRS`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ftrace(pub u8);

impl Ftrace {
    /// No marker.
    pub const NONE: Ftrace = Ftrace(0);
    /// `rtapp_main`: the run's start, shutdown and end.
    pub const MAIN: Ftrace = Ftrace(1);
    /// `rtapp_task`: each thread's start and end (and the clock reference).
    pub const TASK: Ftrace = Ftrace(2);
    /// `rtapp_loop`: each phase loop's start and end.
    pub const LOOP: Ftrace = Ftrace(4);
    /// `rtapp_event`: each event as it runs.
    pub const EVENT: Ftrace = Ftrace(8);
    /// `rtapp_stats`: each phase loop's log line.
    pub const STATS: Ftrace = Ftrace(16);
    /// `rtapp_attrs`: scheduling changes.
    pub const ATTRS: Ftrace = Ftrace(32);
    /// Every category (`"ftrace": true`).
    pub const ALL: Ftrace = Ftrace(63);

    /// Whether `c` is asked.
    pub fn has(self, c: Ftrace) -> bool {
        self.0 & c.0 != 0
    }
}

impl Event {
    /// rt-app's number of the event's kind (its `resource_t`), which `rtapp_event` writes.
    pub fn rt_app_type(&self) -> u8 {
        match self {
            Event::Wait { .. } => 2,
            Event::Signal(_) => 3,
            Event::Broad(_) => 4,
            Event::Sleep(_) => 5,
            Event::Run(_) => 6,
            Event::Sync { .. } => 7,
            Event::Lock(_) => 8,
            Event::Unlock(_) => 9,
            Event::Timer { .. } => 10,
            Event::Suspend(_) => 11,
            Event::Resume(_) => 12,
            Event::Mem(_) => 13,
            Event::IoRun(_) => 14,
            Event::Runtime(_) => 15,
            Event::Yield => 16,
            Event::Barrier(_) => 17,
        }
    }

    /// rt-app's name of the event.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Run(_) => "run",
            Event::Runtime(_) => "runtime",
            Event::Sleep(_) => "sleep",
            Event::Timer { .. } => "timer",
            Event::Suspend(_) => "suspend",
            Event::Resume(_) => "resume",
            Event::Lock(_) => "lock",
            Event::Unlock(_) => "unlock",
            Event::Wait { .. } => "wait",
            Event::Signal(_) => "signal",
            Event::Broad(_) => "broad",
            Event::Sync { .. } => "sync",
            Event::Barrier(_) => "barrier",
            Event::Mem(_) => "mem",
            Event::IoRun(_) => "iorun",
            Event::Yield => "yield",
        }
    }

    /// The resource a thread blocks on until another thread releases it (a hand-off's end).
    pub fn waits_on(&self) -> Option<usize> {
        match *self {
            Event::Suspend(r) | Event::Barrier(r) => Some(r),
            Event::Wait { cond, .. } | Event::Sync { cond, .. } => Some(cond),
            _ => None,
        }
    }

    /// The resource a thread releases others from (a hand-off's start).
    pub fn releases(&self) -> Option<usize> {
        match *self {
            Event::Resume(r) | Event::Signal(r) | Event::Broad(r) | Event::Barrier(r) => Some(r),
            Event::Sync { cond, .. } => Some(cond),
            _ => None,
        }
    }
}

/// A named resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// Its name in the file (a `unique` timer's with its thread's index).
    pub name: String,
    /// What it is.
    pub kind: ResourceKind,
}

/// What a resource is; one name is one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceKind {
    /// A mutex (`lock`/`unlock`, the mutex of `wait`/`sync`).
    Mutex,
    /// A condition (`wait`/`signal`/`broad`/`sync`).
    Condition,
    /// What `suspend`/`resume` meet on.
    Suspension,
    /// A barrier and how many threads use it.
    Barrier {
        /// Threads that reach it (instances counted).
        users: u32,
    },
    /// A periodic timer.
    Timer {
        /// `relative` (rt-app's default): after an overrun the next expiry counts from the
        /// late job's end; `absolute` keeps the grid.
        relative: bool,
    },
}

impl ResourceKind {
    /// What it is, in words.
    pub fn describe(&self) -> &'static str {
        match self {
            ResourceKind::Mutex => "a mutex",
            ResourceKind::Condition => "a condition",
            ResourceKind::Suspension => "a suspend/resume point",
            ResourceKind::Barrier { .. } => "a barrier",
            ResourceKind::Timer { .. } => "a timer",
        }
    }
}
