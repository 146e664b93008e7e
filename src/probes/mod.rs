//! Probes: what measures. Every probe — OS threads (the hot loop, or its simulation), a task in
//! a tokio runtime, a process in the Erlang VM — implements [`Probe`]: it is started with one
//! [`Live`] (and, with `--samples`, one [`SampleRing`]) per slot, records every wakeup into
//! them through a [`crate::measure::stats::Recorder`], and is stopped and joined by the one
//! pipeline in [`crate::session`], which gives every probe the same loads, live view, samples
//! file, checkpoints, stop conditions, verdict and RunResult.
//!
//! Adding a probe: one file here implementing [`Probe`], and one arm in [`ProbeSpec`].

pub mod beam;
pub mod child;
pub mod control;
pub mod noise;
pub mod os_thread;
pub mod rt_app;
pub mod runtimes;
pub mod setup;
pub mod tokio_task;
pub mod watch;

use crate::load::LoadResult;
use crate::measure::probe::LoopOutcome;
use crate::measure::ring::SampleRing;
use crate::measure::stats::{Exceedance, Live, Summary};
use crate::result::warning::Warning;
use crate::result::{EndReason, Runtime};
use crate::rt::affinity::CpuSet;
use crate::rt::sched::SchedParams;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Which probe a run measures with (chosen once, from `--runtime`).
#[derive(Clone, Debug)]
pub enum ProbeSpec {
    /// Periodic OS threads (cyclictest's method), or their simulation.
    Os(os_thread::Plan),
    /// A periodic task in a tokio runtime.
    Tokio(tokio_task::Plan),
    /// A periodic process in the Erlang VM.
    Beam(beam::Plan),
    /// A periodic wait in a program of another runtime (Ada, Go, Node.js, Python asyncio).
    Runtime(runtimes::Plan),
    /// Busy threads that measure OS noise (`rtlab noise`).
    Noise(noise::Plan),
    /// Threads of any program, from the kernel's events (`rtlab watch`).
    Watch(watch::Plan),
    /// An rt-app use case (`rtlab run --rt-app`).
    RtApp(rt_app::Plan),
    /// A runtime's probe with an OS thread measured beside it (`--control`).
    Controlled {
        /// The runtime's probe.
        inner: Box<ProbeSpec>,
        /// The control (see [`control::plan`]).
        control: os_thread::Plan,
    },
}

impl ProbeSpec {
    /// A probe ready to start.
    pub fn create(&self) -> Box<dyn Probe> {
        match self {
            ProbeSpec::Os(p) => Box::new(os_thread::OsThreads::new(p.clone())),
            ProbeSpec::Tokio(p) => Box::new(tokio_task::TokioProbe::new(p.clone())),
            ProbeSpec::Beam(p) => Box::new(beam::BeamProbe::new(p.clone())),
            ProbeSpec::Runtime(p) => Box::new(runtimes::RuntimeProbe::new(p.clone())),
            ProbeSpec::Noise(p) => Box::new(noise::NoiseProbe::new(p.clone())),
            ProbeSpec::Watch(p) => Box::new(watch::WatchProbe::new(p.clone())),
            ProbeSpec::RtApp(p) => Box::new(rt_app::RtAppProbe::new(p.clone())),
            ProbeSpec::Controlled { inner, control } => {
                Box::new(control::Controlled::new(inner.create(), control.clone()))
            }
        }
    }

    /// The runtime's name as `--runtime` spells it.
    pub fn runtime(&self) -> &'static str {
        match self {
            ProbeSpec::Os(_) => "os",
            ProbeSpec::Tokio(_) => "tokio",
            ProbeSpec::Beam(_) => "beam",
            ProbeSpec::Runtime(p) => p.lang.name(),
            ProbeSpec::Noise(_) => "noise",
            ProbeSpec::Watch(_) => "watch",
            ProbeSpec::RtApp(_) => "os",
            ProbeSpec::Controlled { inner, .. } => inner.runtime(),
        }
    }

    /// What the probe measures: wakeup latency, or the noise seen by busy threads.
    pub fn kind(&self) -> crate::result::Kind {
        match self {
            ProbeSpec::Noise(_) => crate::result::Kind::Noise,
            ProbeSpec::Watch(_) => crate::result::Kind::Watch,
            _ => crate::result::Kind::Wakeup,
        }
    }

    /// The CPUs the reporting thread is pinned to, when asked.
    pub fn main_affinity(&self) -> Option<&CpuSet> {
        match self {
            ProbeSpec::Os(p) => p.main_affinity.as_ref(),
            ProbeSpec::Noise(p) => p.main_affinity.as_ref(),
            ProbeSpec::Watch(p) => p.reader_cpus.as_ref(),
            ProbeSpec::RtApp(p) => p.main_affinity.as_ref(),
            _ => None,
        }
    }

    /// True when the samples are simulated, not measured on this machine.
    pub fn simulated(&self) -> bool {
        matches!(self, ProbeSpec::Os(p) if p.simulate.is_some())
    }

    /// A runtime probe's settings as its result records them (`runtime.kind`, `method`,
    /// `period_ns`, `workers`); `None` for OS threads, whose settings are the configuration.
    pub fn runtime_settings(&self) -> Option<(&'static str, &'static str, i64, usize)> {
        match self {
            ProbeSpec::Os(_) | ProbeSpec::Noise(_) | ProbeSpec::Watch(_) | ProbeSpec::RtApp(_) => None,
            ProbeSpec::Tokio(p) => Some(("tokio", p.wait.name(), p.interval_ns, p.hogs)),
            ProbeSpec::Beam(p) => Some(("beam", p.method.name(), p.period_ms as i64 * 1_000_000, p.workers)),
            ProbeSpec::Runtime(p) => Some((p.lang.name(), p.method, p.period_ns, p.workers)),
            ProbeSpec::Controlled { inner, .. } => inner.runtime_settings(),
        }
    }

    /// The slots (threads, tasks, processes) as planned.
    pub fn slots(&self) -> Vec<ThreadPlan> {
        match self {
            ProbeSpec::Os(p) => p.threads.clone(),
            ProbeSpec::Noise(p) => p.threads.clone(),
            ProbeSpec::Watch(p) => p.slots(),
            ProbeSpec::RtApp(p) => p.threads.clone(),
            ProbeSpec::Tokio(p) => vec![ThreadPlan::runtime_slot(p.interval_ns)],
            ProbeSpec::Beam(p) => vec![ThreadPlan::runtime_slot(p.period_ms as i64 * 1_000_000)],
            ProbeSpec::Runtime(p) => vec![ThreadPlan::runtime_slot(p.period_ns)],
            ProbeSpec::Controlled { inner, control } => {
                let mut slots = inner.slots();
                slots.extend(control.threads.iter().cloned());
                slots
            }
        }
    }

    /// The line that says what runs, for the terminal (`None` for OS threads, whose table says it).
    pub fn describe(&self) -> Option<String> {
        match self {
            ProbeSpec::Os(_) | ProbeSpec::Noise(_) => None,
            ProbeSpec::Watch(p) => Some(format!("rtlab: watching {} through the kernel's events", p.target.describe())),
            ProbeSpec::RtApp(p) => Some(p.describe()),
            ProbeSpec::Tokio(p) => Some(p.describe()),
            ProbeSpec::Beam(p) => Some(p.describe()),
            ProbeSpec::Runtime(p) => Some(p.describe()),
            ProbeSpec::Controlled { inner, control } => inner.describe().map(|d| {
                let period = control.threads.first().map_or(0, |t| t.interval_ns);
                format!(
                    "{d}, beside an OS thread (the control: absolute clock_nanosleep every {})",
                    crate::units::duration(period)
                )
            }),
        }
    }
}

/// One measuring slot as planned: an OS thread, or the one task/process of a runtime probe.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadPlan {
    /// Index (0-based).
    pub index: usize,
    /// CPU to pin to, or `None` to leave the thread free.
    pub cpu: Option<usize>,
    /// Scheduling asked for.
    pub sched: SchedParams,
    /// Period (ns).
    pub interval_ns: i64,
    /// Periods to discard before recording.
    pub warmup_cycles: u64,
    /// The task's name (`--task name=…`, an rt-app task), shown and stored with its results.
    pub name: Option<String>,
    /// Work done after each wakeup, and the deadline (`None`: the empty loop).
    pub work: Option<crate::measure::work::WorkSpec>,
    /// The first release's offset from the task set's common start (ns).
    pub offset_ns: i64,
}

impl ThreadPlan {
    /// The single slot of a runtime probe: unpinned, scheduled by the runtime on its SCHED_OTHER threads.
    pub fn runtime_slot(interval_ns: i64) -> ThreadPlan {
        ThreadPlan {
            index: 0,
            cpu: None,
            sched: SchedParams::simple(crate::rt::sched::Policy::Other, 0),
            interval_ns,
            warmup_cycles: 0,
            name: None,
            work: None,
            offset_ns: 0,
        }
    }
}

/// What the pipeline hands a probe at its start.
#[derive(Clone, Debug)]
pub struct Sinks {
    /// One per slot: where the slot publishes its statistics (the live view and checkpoints read them).
    pub lives: Vec<Arc<Live>>,
    /// One per slot with `--samples`: where every sample goes.
    pub rings: Vec<Option<Arc<SampleRing>>>,
    /// One per slot that works after each wakeup: its response, run and deadline figures.
    pub work: Vec<Option<Arc<crate::measure::work::WorkLive>>>,
    /// Count responses above this (ns): `--max-response`.
    pub max_response_ns: Option<i64>,
    /// Set by the pipeline to end the run; a probe may set it too (a `--breaktrace` hit).
    pub stop: Arc<AtomicBool>,
    /// Set by SIGINT/SIGTERM: a probe whose setup takes long gives up when it is set.
    pub interrupt: Arc<AtomicBool>,
    /// Samples per slot (`None`: until stopped).
    pub loops: Option<u64>,
    /// Run length (`None`: until stopped).
    pub duration: Option<Duration>,
    /// Count samples above this (ns): the verdict's threshold.
    pub max_latency_ns: Option<i64>,
    /// Any downgrade is an error.
    pub strict: bool,
}

/// What a slot obtained during setup (for the display and the samples file).
#[derive(Clone, Debug)]
pub struct ThreadStatus {
    /// Index.
    pub index: usize,
    /// CPU pinned to, if any.
    pub cpu: Option<usize>,
    /// Scheduling in force.
    pub sched: SchedParams,
    /// Period (ns).
    pub interval_ns: i64,
    /// Kernel thread id (a runtime probe: the id of the thread or process that hosts it).
    pub tid: i32,
    /// A runtime probe's own identity (`tokio task 1`, `erlang process <0.85.0>`); `None` for OS threads.
    pub identity: Option<String>,
}

impl ThreadStatus {
    /// A watched thread's command name, from its identity `comm:tid` (`rtlab watch`); `None`
    /// for rtlab's own slots.
    pub fn watched_comm(&self) -> Option<&str> {
        let (comm, tid) = self.identity.as_deref()?.rsplit_once(':')?;
        tid.parse::<i32>().ok().map(|_| comm)
    }
}

/// A started probe.
#[derive(Debug)]
pub struct Started {
    /// What each slot obtained.
    pub slots: Vec<ThreadStatus>,
    /// Downgrades and failures of the setup.
    pub warnings: Vec<Warning>,
    /// The PM QoS request held, in µs.
    pub dma_latency_us: Option<i32>,
    /// mlockall succeeded.
    pub mlocked: bool,
    /// Wall-clock start of the schedule (sample times count from it).
    pub start: SystemTime,
    /// The same instant on the monotonic clock (`--duration` counts from it).
    pub schedule_start: Instant,
    /// The probe ends itself at `--duration` (the simulation, the Erlang VM): the pipeline
    /// does not cut it.
    pub own_duration: bool,
    /// What the runtime says of itself so far (for checkpoints).
    pub runtime: Option<Runtime>,
    /// One per slot with `--stages`: the cells where its IRQ and thread latencies are
    /// published while it runs (empty without stages).
    pub stages: Vec<Option<Arc<crate::measure::work::WorkLive>>>,
}

/// What one slot obtained and measured.
#[derive(Clone, Debug)]
pub struct ThreadOutcome {
    /// The plan.
    pub plan: ThreadPlan,
    /// Scheduling in force (read back with `sched_getattr`); `None` for a runtime probe,
    /// scheduled by its runtime.
    pub sched: Option<SchedParams>,
    /// CPUs the thread was allowed to run on (read back).
    pub cpus_allowed: Option<CpuSet>,
    /// CPU it ran on last.
    pub last_cpu: Option<usize>,
    /// Timer slack in force (ns).
    pub timer_slack_ns: Option<u64>,
    /// Statistics.
    pub summary: Summary,
    /// Loop details (iterations, break, schedule start).
    pub outcome: LoopOutcome,
    /// Last wakeup minus the ideal schedule (ns), when known.
    pub drift_ns: Option<i64>,
    /// Kernel thread id.
    pub tid: i32,
    /// Samples the samples-file reader lost because it fell behind the ring.
    pub samples_lost: u64,
    /// What went wrong while measuring (e.g. the POSIX timer could not be armed).
    pub warnings: Vec<Warning>,
    /// A busy thread's noise figures (the noise probe only).
    pub noise: Option<crate::result::NoiseFigures>,
    /// A watched thread's own figures (the watch probe only).
    pub watch: Option<crate::result::watch::WatchFigures>,
    /// A working task's response, run and deadline figures.
    pub work: Option<crate::measure::work::WorkSummary>,
    /// Latency over time, when the probe reads it itself (a simulated thread, on its virtual
    /// clock); the pipeline reads every other thread's.
    pub series: Option<crate::measure::series::LatencySeries>,
    /// CPU time the measuring thread used, user and kernel (ns), read by the thread itself
    /// as it ended; `None` where the samples were not taken by a thread of rtlab's process.
    pub cpu_ns: Option<i64>,
}

impl ThreadOutcome {
    /// The one slot of a runtime probe (a task or process scheduled by its runtime, not an
    /// OS thread of rtlab's): its statistics, the host process's id, and its drift when the
    /// runtime reported one.
    pub fn of_runtime(interval_ns: i64, summary: Summary, pid: u32, drift_ns: Option<i64>) -> ThreadOutcome {
        ThreadOutcome {
            cpu_ns: None,
            series: None,
            watch: None,
            plan: ThreadPlan::runtime_slot(interval_ns),
            sched: None,
            cpus_allowed: None,
            last_cpu: None,
            timer_slack_ns: None,
            outcome: LoopOutcome {
                iterations: summary.cycles,
                drift_ns: drift_ns.unwrap_or(0),
                break_hit: None,
                start_ns: 0,
            },
            drift_ns,
            summary,
            tid: pid as i32,
            samples_lost: 0,
            warnings: Vec::new(),
            noise: None,
            work: None,
        }
    }
}

/// A joined probe.
#[derive(Debug, Default)]
pub struct Finished {
    /// Per slot.
    pub slots: Vec<ThreadOutcome>,
    /// Warnings that arose while measuring or at the end.
    pub warnings: Vec<Warning>,
    /// A `--breaktrace` hit: slot and sample.
    pub break_hit: Option<(usize, Exceedance)>,
    /// A trace marker was written for it.
    pub tracemark_written: bool,
    /// The probe's runtime failed mid-run (the results are partial): why.
    pub failure: Option<String>,
    /// The probe knows why it ended better than the pipeline (the VM ended at its duration).
    pub end_reason: Option<EndReason>,
    /// What the runtime says of itself.
    pub runtime: Option<Runtime>,
    /// Loads that ran inside the runtime (BEAM worker processes, tokio tasks).
    pub loads: Vec<LoadResult>,
    /// What a watch run watched.
    pub watch: Option<crate::result::watch::WatchRun>,
    /// An rt-app use case's hand-offs, lock waits and timers.
    pub rt_app: Option<crate::result::rt_app::RtAppFigures>,
    /// A probe that explains its own late samples (`rtlab watch --explain`): the explanations,
    /// largest first.
    pub explanations: Vec<crate::trace::Explanation>,
    /// How that explaining went.
    pub explain: Option<crate::trace::ExplainSummary>,
}

/// A probe that cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// `--strict` and something was downgraded.
    #[error("--strict: {0}")]
    Strict(String),
    /// Anything else that keeps the probe from measuring (the message says what and the fix).
    #[error("{0}")]
    Start(String),
    /// What was asked cannot be measured on this machine (found during setup; exit 2).
    #[error("{0}")]
    Usage(String),
}

/// A way of measuring wakeup latency.
pub trait Probe {
    /// Slots it measures (threads, tasks, processes); the pipeline makes one [`Live`] each.
    fn slots(&self) -> usize;
    /// Sets up and releases the slots; returns once they measure.
    fn start(&mut self, sinks: &Sinks) -> Result<Started, ProbeError>;
    /// True once every slot has left its loop by itself (loops done, the VM ended, a break).
    fn finished(&mut self) -> bool;
    /// The run ends (`sinks.stop` is set): make every slot notice now (wake it, stop the VM).
    fn stop(&mut self);
    /// Waits for the slots and returns what they measured.
    fn join(self: Box<Self>) -> Finished;
    /// The slots as they are now, for a probe whose slots fill while it runs (`None`: as
    /// [`Probe::start`] told them).
    fn statuses(&self) -> Option<Vec<ThreadStatus>> {
        None
    }
}
