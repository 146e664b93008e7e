//! Warnings: every one a full sentence that says what happened and how to fix it.

use serde::{Deserialize, Serialize};

/// Something that made the measurement differ from what was asked, or that makes its
/// figures less trustworthy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// A thread could not get the asked policy/priority and runs with another.
    PolicyDowngraded {
        /// Thread index.
        thread: usize,
        /// What was asked (e.g. `fifo:95`).
        asked: String,
        /// What the thread got.
        got: String,
        /// Why, with the fix.
        why: String,
    },
    /// The doctor found something that disturbs the measured CPUs while they are measured (an
    /// active IRQ, a busy SMT sibling, steal): `environment.doctor` has the evidence.
    MachineSetup {
        /// The doctor's check (`interrupts.irq36`).
        check: String,
        /// The finding, its consequence and the fix.
        detail: String,
    },
    /// `--explain`'s trace reader runs on measured CPUs (every CPU is measured, or the
    /// reporting thread is pinned to one): it can delay the probe there, and is named when it does.
    TraceReaderShared {
        /// The measured CPUs it may run on.
        cpus: String,
    },
    /// `--explain` could not record events: the run went on without explanations.
    ExplainUnavailable {
        /// Why, with the fix.
        why: String,
    },
    /// `--stages` could not record events: the run went on without IRQ and thread latencies.
    StagesUnavailable {
        /// Why, with the fix.
        why: String,
    },
    /// A thread could not be pinned to its CPU.
    AffinityFailed {
        /// Thread index.
        thread: usize,
        /// The CPU asked for.
        cpu: usize,
        /// Why.
        why: String,
    },
    /// `mlockall` failed: page faults may add latency.
    MlockFailed {
        /// Why, with the fix.
        why: String,
    },
    /// `/dev/cpu_dma_latency` could not be held: deep idle states may add exit latency.
    DmaLatencyFailed {
        /// The value asked (µs).
        latency_us: i32,
        /// Why.
        why: String,
    },
    /// The timer slack could not be set to 1 ns.
    TimerSlackFailed {
        /// Thread index.
        thread: usize,
        /// Why.
        why: String,
    },
    /// The reporting thread could not be pinned.
    MainAffinityFailed {
        /// The CPU set asked.
        cpus: String,
        /// Why.
        why: String,
    },
    /// Samples with a negative latency were seen: the clock stepped backwards, or a runtime's
    /// timer fired before the deadline rtlab measures against.
    NegativeLatencies {
        /// How many.
        count: u64,
        /// The runtime and method that woke early (`node (interval)`); absent for OS threads.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        runtime: Option<String>,
    },
    /// Periods were missed.
    MissedPeriods {
        /// How many.
        count: u64,
        /// How many of them were missed by tasks that work after each wakeup (a job that ran
        /// past the next release skips it, whether its wakeup was late or its work long).
        #[serde(default)]
        of_working_tasks: u64,
    },
    /// The run was stopped before it had recorded anything.
    NoSamples,
    /// The `--samples` writer fell behind and samples were lost from the file (not from the
    /// statistics).
    SamplesLost {
        /// How many.
        count: u64,
        /// The file.
        file: String,
    },
    /// A thread could not use the sleep method asked and measured with another.
    MethodDowngraded {
        /// Thread index.
        thread: usize,
        /// The method asked (`posix-timer`).
        asked: String,
        /// The method that ran (`abs`).
        got: String,
        /// Why.
        why: String,
    },
    /// Σx² exceeded 128 bits (latencies of years, e.g. a realtime clock step): the standard
    /// deviation was computed in floating point, not exactly.
    StdevInexact,
    /// An output could not be written (the others were; the run exits with 1).
    OutputFailed {
        /// The option and file, e.g. `--samples run.smp`.
        output: String,
        /// Why.
        why: String,
    },
    /// A load worker could not get the scheduling asked and runs with another.
    LoadPolicyDowngraded {
        /// The load's spec.
        load: String,
        /// What was asked (e.g. `fifo:50`).
        asked: String,
        /// What its workers got.
        got: String,
        /// Why, with the fix.
        why: String,
    },
    /// A load failed while running (a worker died, could not allocate or write); its
    /// throughput covers only what it did before (the run exits with 1).
    LoadFailed {
        /// The load's spec.
        load: String,
        /// What happened.
        why: String,
    },
    /// Trace markers were asked (`--tracemark`, rt-app's `global.ftrace`) but tracefs is not
    /// available or not writable, or tracing is off.
    TracemarkUnavailable {
        /// Why.
        why: String,
    },
    /// A language runtime's probe failed mid-run (the VM crashed or was killed).
    RuntimeFailed {
        /// What happened.
        why: String,
    },
    /// The runtime's timers are coarser than the kernel's.
    TimerGranularity {
        /// `the Erlang VM`, `tokio`.
        runtime: String,
        /// Granularity (ns).
        granularity_ns: i64,
    },
    /// Latencies are measured against a schedule anchored at the probe's start (the Erlang
    /// VM's `send-interval`, RealtimeTests' method): the start-up is in every sample.
    AnchoredSchedule {
        /// The smallest latency: the constant offset the start-up adds (ns).
        min_ns: i64,
    },
    /// The kernel dropped trace events of a watch before rtlab read them: periods are missing
    /// and others joined or cut, so the figures may be wrong either way (the verdict cannot pass).
    EventsLost {
        /// Events the kernel's buffers overwrote or dropped.
        count: u64,
    },
    /// The trace that explains late wakeups (`--explain`) or attributes noise (`noise
    /// --attribute`) lost events: the latencies and the noise are rtlab's own and complete, but
    /// the explanations and the noise's sources are not (a gap whose events were lost looks like
    /// hardware noise).
    AttributionEventsLost {
        /// Events the kernel's buffers overwrote or dropped.
        count: u64,
    },
    /// An rt-app run ended with threads waiting for mutexes (a lock-order deadlock when they
    /// wait on each other in a cycle): the run ended at its duration or stop, not at its loops.
    MutexWaits {
        /// Who waited for which mutex held by whom, in the cycle's order for a deadlock.
        waits: String,
        /// The waits form a cycle.
        deadlock: bool,
    },
    /// A runtime's task took no sample for the stall limit of a run bounded by its loops alone
    /// (tokio promises a task no progress while one of its workers is blocked by a hog): the
    /// run was ended there, and its last sample holds the wait.
    TaskStranded {
        /// `tokio`.
        runtime: String,
        /// How long the task took no sample (ns).
        quiet_ns: i64,
    },
    /// `rtlab watch` left to choose its backend could not load its BPF programs here (a build
    /// without clang, a kernel without BTF or BPF): it watched through tracefs.
    BackendFallback {
        /// Why the BPF backend could not watch.
        why: String,
    },
}

impl Warning {
    /// True for the warnings that mean rtlab got less than asked (errors under `--strict`).
    pub fn is_downgrade(&self) -> bool {
        matches!(
            self,
            Warning::PolicyDowngraded { .. }
                | Warning::AffinityFailed { .. }
                | Warning::MlockFailed { .. }
                | Warning::DmaLatencyFailed { .. }
                | Warning::TimerSlackFailed { .. }
                | Warning::MainAffinityFailed { .. }
                | Warning::LoadPolicyDowngraded { .. }
                | Warning::MethodDowngraded { .. }
        )
    }

    /// The sentence shown to the user.
    pub fn message(&self) -> String {
        match self {
            Warning::PolicyDowngraded { thread, asked, got, why } => {
                format!("thread {thread} could not get SCHED {asked} and measures with {got} instead: {why}.")
            }
            Warning::MachineSetup { detail, .. } => format!("doctor: {detail}"),
            Warning::TraceReaderShared { cpus } => format!(
                "--explain's trace reader shares CPU {cpus} with the measurement: it may delay the probe there (explanations name it rtlab-trace); leave a CPU unmeasured (-a) or pin the reporting thread elsewhere (--mainaffinity)"
            ),
            Warning::ExplainUnavailable { why } => {
                format!("spikes cannot be explained: {why}; the run goes on without explanations")
            }
            Warning::StagesUnavailable { why } => {
                format!("the IRQ and thread latencies cannot be traced: {why}; the run goes on with the wakeup latency only")
            }
            Warning::AffinityFailed { thread, cpu, why } => format!(
                "thread {thread} could not be pinned to CPU {cpu} ({why}); it may migrate. Fix: check the cpuset \
                 of this cgroup/container or choose CPUs with -a."
            ),
            Warning::MlockFailed { why } => {
                format!("memory could not be locked (mlockall: {why}); page faults may add latency.")
            }
            Warning::DmaLatencyFailed { latency_us, why } => format!(
                "/dev/cpu_dma_latency could not be set to {latency_us} µs ({why}); deep CPU idle states may add \
                 wakeup latency. Fix: run as root, or pass --no-dma-latency to silence this."
            ),
            Warning::TimerSlackFailed { thread, why } => {
                format!("thread {thread} could not set its timer slack to 1 ns ({why}); SCHED_OTHER wakeups may be up to 50 µs late.")
            }
            Warning::MainAffinityFailed { cpus, why } => {
                format!(
                    "the reporting thread could not be pinned to CPUs {cpus} ({why}); it may disturb measuring CPUs."
                )
            }
            Warning::NegativeLatencies { count, runtime } => negative_latencies(*count, runtime.as_deref()),
            Warning::MissedPeriods { count, of_working_tasks } => missed_periods(*count, *of_working_tasks),
            Warning::NoSamples => NO_SAMPLES.into(),
            Warning::SamplesLost { count, file } => format!(
                "{} could not be written to {file} because the writer fell behind (the statistics \
                 still count them); fix: use a faster disk or a longer interval.",
                crate::units::count(*count, "sample")
            ),
            Warning::MethodDowngraded { thread, asked, got, why } => format!(
                "thread {thread} could not use --method {asked} ({why}) and measured with {got} instead."
            ),
            Warning::StdevInexact => STDEV_INEXACT.into(),
            Warning::OutputFailed { output, why } => format!(
                "{output} could not be written ({why}); every other output was. Fix: free space or choose a writable path."
            ),
            Warning::LoadPolicyDowngraded { load, asked, got, why } => format!(
                "load '{load}' could not get SCHED {asked} and runs with {got} instead: {why}."
            ),
            Warning::LoadFailed { load, why } => {
                format!("load '{load}' failed: {why}; its throughput covers only the work done before that.")
            }
            Warning::TracemarkUnavailable { why } => format!(
                "trace markers were asked (--tracemark, rt-app's global.ftrace) but none can be written: {why}. Fix: \
                 mount tracefs, turn tracing on and run as root."
            ),
            Warning::RuntimeFailed { why } => {
                format!("{why}; the results cover the samples received before that (partial run).")
            }
            Warning::TaskStranded { runtime, quiet_ns } => format!(
                "the {runtime} task took no sample for {} while a hog held a worker ({runtime} does not promise a \
                 task progress while one of its workers is blocked: the timer driver or the next-task slot can be \
                 left with it); the run was ended there, short of its loops, and its last sample holds the wait. \
                 Give -D to measure such a stall for as long as you choose.",
                crate::units::duration(*quiet_ns)
            ),
            Warning::TimerGranularity { runtime, granularity_ns } => format!(
                "{runtime}'s timers have {} granularity: a wakeup is due at most that much after the requested instant, so the latencies include the runtime's rounding as well as the kernel's.",
                crate::units::duration(*granularity_ns)
            ),
            Warning::AnchoredSchedule { min_ns } => anchored_schedule(*min_ns),
            Warning::EventsLost { count } => events_lost(*count),
            Warning::AttributionEventsLost { count } => format!(
                "the trace lost {} (its buffer filled faster than rtlab read it): the latencies and the noise are \
                 measured by rtlab itself and complete, but the explanations and the noise's sources miss them: \
                 a gap whose events were lost shows as hardware noise (HW) or as unaccounted time. Fix: trace \
                 fewer CPUs (-c), or measure when the machine is less busy.",
                crate::units::count(*count, "event")
            ),
            Warning::BackendFallback { why } => format!(
                "watch: the BPF backend cannot watch here ({why}), so the events were read through tracefs; \
                 --backend tracefs says so without this warning."
            ),
            Warning::MutexWaits { waits, deadlock: true } => format!(
                "deadlock: {waits}; each waits for a mutex another holds, so they would wait for ever (rt-app \
                 too): the run ended at its duration or stop. Fix: take the mutexes in one order in every task."
            ),
            Warning::MutexWaits { waits, deadlock: false } => {
                format!("when the run ended, {waits}; those threads' last phase loops are not counted.")
            }
        }
    }
}

const NO_SAMPLES: &str = "the run ended before any sample was recorded, so there are no statistics: either it was \
     too short, or the probe threads never got a CPU (a load or another task at a higher RT priority starved them). \
     Fix: run longer, or give the probe a priority above the loads'.";

const STDEV_INEXACT: &str =
    "the sum of squared latencies exceeded 128 bits (latencies of years: a clock step), so the \
     standard deviation was computed in floating point, not exactly.";

fn anchored_schedule(min_ns: i64) -> String {
    format!(
        "send-interval measures every tick against a schedule anchored when the probe started (RealtimeTests' \
         method), so the VM's start-up is a constant offset in every sample: the minimum, {}, is that offset, \
         not scheduling latency. Fix: --beam-method abs-timer (--method abs-timer with rtlab beam) measures \
         each wakeup against its own deadline.",
        crate::units::us(min_ns as f64)
    )
}

fn events_lost(count: u64) -> String {
    format!(
        "the kernel dropped {} of the watched threads before rtlab read them: periods are missing, and a \
         lost wakeup or switch joins two periods into one long one or cuts one short, so the figures may \
         overstate as well as understate the latency (a verdict over them cannot pass). Fix: give the reader \
         its own CPU (--mainaffinity) or watch fewer threads.",
        crate::units::count(count, "trace event")
    )
}

/// A warning as stored in a result file: its kind, details and sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WarningRecord {
    /// The warning.
    #[serde(flatten)]
    pub warning: Warning,
    /// The sentence shown to the user.
    pub message: String,
}

/// The missed-periods sentence: a late wakeup skips the releases it passed; a working task's
/// job that ran past the next release skips it too, whichever of its wakeup or its work was long.
fn missed_periods(count: u64, of_working_tasks: u64) -> String {
    let missed = crate::units::count_was(count, "period");
    let wakeup =
        "a wakeup came more than one interval late and the releases it passed were skipped (cyclictest hides these)";
    let job =
        "a job ran past the next release (its wakeup late, or its work long) and the releases it passed were skipped";
    match of_working_tasks {
        0 => format!(
            "{missed} missed: {wakeup}. Fix: run with --explain to see what delayed them, or lengthen the period."
        ),
        n if n >= count => format!(
            "{missed} missed: {job}. Fix: compare the response and run times (the work table); --explain shows what \
             delayed the wakeups; shorten the work or lengthen the period."
        ),
        n => format!(
            "{missed} missed, {n} of them by working tasks: {wakeup}, or {job}. Fix: --explain shows what delayed the \
             wakeups; the work table shows the long jobs."
        ),
    }
}

impl From<Warning> for WarningRecord {
    fn from(warning: Warning) -> Self {
        WarningRecord { message: warning.message(), warning }
    }
}

/// The negative-latency warning: for OS threads a stepped clock; for a runtime (`runtime`
/// names it and its method) a timer armed from the runtime's own notion of now (a cached or
/// rounded loop time, a stale buffered tick), which can fire before the deadline.
fn negative_latencies(count: u64, runtime: Option<&str>) -> String {
    match runtime {
        None => format!(
            "{} woke before their deadline (negative latency), which means the clock stepped; \
             they count as 0 in the histogram. Fix: measure with --clock monotonic.",
            crate::units::count(count, "sample")
        ),
        Some(rt) => format!(
            "{rt} delivered {} before their deadline (negative latency): its timers are armed from the runtime's \
             own notion of now (a cached or rounded loop time, a buffered tick), not from the deadline, so they can \
             fire early; they count as 0 in the histogram. Fix: a method that waits for an absolute deadline, if \
             the runtime has one.",
            crate::units::count(count, "wakeup")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_events_are_said_to_make_the_figures_wrong_either_way_not_only_low() {
        let m = Warning::EventsLost { count: 5 }.message();
        assert!(m.contains("overstate as well as understate"), "{m}");
    }

    #[test]
    fn events_the_attribution_lost_are_said_to_leave_the_figures_whole_and_the_causes_short() {
        let m = Warning::AttributionEventsLost { count: 161_724 }.message();
        assert!(m.starts_with("the trace lost 161724 events"), "{m}");
        assert!(m.contains("complete") && m.contains("hardware noise (HW)") && m.contains("Fix: "), "{m}");
    }

    #[test]
    fn a_runtime_that_woke_early_is_told_its_timer_fired_early_not_that_the_clock_stepped() {
        let os = Warning::NegativeLatencies { count: 2, runtime: None }.message();
        assert!(os.contains("the clock stepped") && os.contains("--clock monotonic"), "{os}");
        let node = Warning::NegativeLatencies { count: 3, runtime: Some("node (interval)".into()) }.message();
        assert!(node.contains("node (interval) delivered 3 wakeups before their deadline"), "{node}");
        assert!(!node.contains("clock stepped") && !node.contains("--clock"), "{node}");
    }

    #[test]
    fn missed_periods_of_working_tasks_name_the_job_not_only_a_late_wakeup() {
        let jobs = Warning::MissedPeriods { count: 3, of_working_tasks: 3 }.message();
        assert!(jobs.contains("a job ran past the next release"), "{jobs}");
        assert!(!jobs.contains("a wakeup came more than one interval late"), "{jobs}");
        let wakeups = Warning::MissedPeriods { count: 2, of_working_tasks: 0 }.message();
        assert!(wakeups.contains("a wakeup came more than one interval late"), "{wakeups}");
        let both = Warning::MissedPeriods { count: 5, of_working_tasks: 2 }.message();
        assert!(both.contains("2 of them by working tasks"), "{both}");
    }
}
