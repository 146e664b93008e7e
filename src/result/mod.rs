//! RunResult: the data model every output reads (schema `rtlab.run/1`, documented in
//! `docs/schemas/run.schema.json`, generated from these types): the types here, the one
//! builder in [`build`], the verdict in [`verdict`], the warnings in [`warning`].

pub mod build;
pub mod exceed;
pub mod noise;
pub mod predict;
pub mod rt_app;
pub mod uncertainty;
pub mod verdict;
pub mod warning;
pub mod watch;

use crate::rt::sched::Policy;
use crate::sysinfo::Environment;
pub use noise::{Kind, NoiseConfig, NoiseFigures, NoiseSeries};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
pub use verdict::{Exceeded, Verdict, VerdictStatus};
use warning::{Warning, WarningRecord};

/// The schema identifier written into every result file.
pub const SCHEMA: &str = "rtlab.run/1";

/// One measurement run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The tool that wrote the file.
    pub tool: Tool,
    /// What was measured: `wakeup` latency (samples are wakeups) or `noise` (samples are gaps
    /// in busy loops); files written before noise existed are wakeup runs.
    #[serde(default)]
    pub kind: Kind,
    /// argv of the run.
    pub command_line: Vec<String>,
    /// When the threads were released (RFC 3339, UTC); `null` when an imported file lacks it.
    pub start_time: Option<String>,
    /// When the threads were joined (RFC 3339, UTC).
    pub end_time: Option<String>,
    /// Wall-clock length of the run (s).
    pub duration_s: Option<f64>,
    /// Why the run ended.
    pub end_reason: EndReason,
    /// True when the samples came from the simulation mode, not from this machine.
    pub simulated: bool,
    /// Where the data came from when it was imported (`null` for rtlab's own runs).
    pub source: Option<Source>,
    /// The machine.
    pub environment: Environment,
    /// The configuration as applied (`null` for imported data, whose configuration is not known).
    pub config: Option<Config>,
    /// Per measuring thread.
    pub threads: Vec<ThreadResult>,
    /// All threads together.
    pub all: AllResult,
    /// Background loads and the throughput each achieved during the run.
    #[serde(default)]
    pub loads: Vec<crate::load::LoadResult>,
    /// Warnings (downgrades, missed periods, clock steps…).
    pub warnings: Vec<WarningRecord>,
    /// Pass/fail against `--max-latency`/`--breaktrace`.
    pub verdict: Verdict,
    /// The language runtime the probe ran in (`rtlab beam`, `rtlab run --runtime tokio`) and
    /// what it reported of itself; absent for OS-thread probes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
    /// `--explain`: why the late samples were late, largest first (absent without it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub explanations: Vec<crate::trace::Explanation>,
    /// `--explain`: how the explaining went (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<crate::trace::ExplainSummary>,
    /// A noise run's settings (absent for wakeup runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseConfig>,
    /// What `rtlab watch` watched and what tracing cost (absent for other runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<watch::WatchRun>,
    /// What an rt-app use case showed: hand-offs, lock waits, timers (absent for other runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rt_app: Option<rt_app::RtAppRun>,
    /// What the run cost rtlab itself: memory and CPU time (absent for imported data and for
    /// files written before rtlab said it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

/// What a run cost rtlab's own process, read when the measuring threads had ended and before
/// any output was written (`getrusage(RUSAGE_SELF)`; child processes, such as a command load or
/// a runtime's VM, are not included).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cost {
    /// The most memory rtlab had resident at once, code and data (KiB; `ru_maxrss`), up to
    /// the moment this result was built: writing the outputs and exiting come after it and can
    /// add to the process's peak (about half a MiB for a plain run; BENCHMARKS.md section 23).
    pub peak_rss_kib: u64,
    /// CPU time of the whole process in user mode (s): every thread, the measuring ones, the
    /// reporting one and any load rtlab ran in its own threads.
    pub user_cpu_s: f64,
    /// CPU time the kernel spent on the process's behalf (s), its sleeps and wakeups included.
    pub system_cpu_s: f64,
    /// CPU time of the measuring threads together, user and kernel (s): the part of the cost
    /// that is the measurement itself; `null` when the probe's samples were taken outside
    /// rtlab's process (a runtime's VM, a worker process, a watched program).
    pub measuring_cpu_s: Option<f64>,
}

impl Cost {
    /// Process CPU time, user and kernel together (s).
    pub fn cpu_s(&self) -> f64 {
        self.user_cpu_s + self.system_cpu_s
    }

    /// The cost in one line: `3.9 MiB peak resident, 0.070 s CPU (user 0.010 s, kernel
    /// 0.060 s), the measuring threads 0.052 s`.
    pub fn describe(&self) -> String {
        let measuring = self.measuring_cpu_s.map(|m| format!(", the measuring threads {m:.3} s")).unwrap_or_default();
        format!(
            "{} peak resident, {:.3} s CPU (user {:.3} s, kernel {:.3} s){measuring}",
            crate::units::kib(self.peak_rss_kib),
            self.cpu_s(),
            self.user_cpu_s,
            self.system_cpu_s
        )
    }
}

/// A language runtime's probe: what was asked and what the runtime says of itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Runtime {
    /// `beam`, `tokio`, `ada`, `go`, `node` or `python`.
    pub kind: String,
    /// The waiting method (`send-interval`, `abs-timer`, `receive-after`; `sleep-until`,
    /// `interval`).
    pub method: String,
    /// Period (ns).
    pub period_ns: i64,
    /// The granularity of the runtime's timers (ns): both BEAM and tokio round to 1 ms.
    pub timer_granularity_ns: i64,
    /// The runtime's version line (`Erlang/OTP 25 [erts-13.1.5] …`, `tokio 1.48`).
    pub version: Option<String>,
    /// The runtime's architecture (`x86_64-pc-linux-gnu`).
    pub architecture: Option<String>,
    /// Schedulers (BEAM) or worker threads (tokio multi-thread).
    pub schedulers: Option<usize>,
    /// Schedulers online (BEAM).
    pub schedulers_online: Option<usize>,
    /// Scheduler binding (BEAM `+sbt`), as the VM reports it.
    pub scheduler_bind_type: Option<String>,
    /// Flags given to the VM, in order.
    pub vm_args: Vec<String>,
    /// tokio: `current-thread` or `multi-thread`.
    pub flavor: Option<String>,
    /// tokio `interval`: the missed-tick behaviour (`burst`, `delay`, `skip`).
    pub missed_tick_behavior: Option<String>,
    /// The measuring process's priority as the VM reports it (BEAM).
    pub probe_priority: Option<String>,
    /// CPU-bound workers inside the runtime (BEAM processes, tokio tasks that never yield).
    pub workers: usize,
    /// Their priority as the VM reports it (BEAM).
    pub worker_priority: Option<String>,
    /// `spawn_blocking` tasks doing CPU-bound work (tokio).
    pub blocking_tasks: usize,
    /// What the workers are (`goroutines`, `tasks`, `loop`, `threads`, `coroutines`) for the
    /// runtimes that have several kinds (absent without workers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_kind: Option<String>,
    /// What the runtime said of itself, as it said it (Ada: `delay_impl` — `nanosleep-loop`
    /// without tasking, `cond-timedwait` with it —, `dispatching`, `drift_ns`; Go: `gomaxprocs`,
    /// `locked_os_thread`, `sched_latency_p99_ns` from /sched/latencies; Node:
    /// `event_loop_delay_p99_ns` from monitorEventLoopDelay; Python: `loop`, `switch_interval_ns`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub facts: std::collections::BTreeMap<String, String>,
    /// `--control`: the OS thread measured beside the runtime's probe, and how much later the
    /// runtime woke than it (absent without a control).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<Control>,
}

/// An OS thread with the runtime's period, policy and CPUs, measured beside a runtime's probe
/// in the same run (jHiccup's control): the lateness the OS shows as well. The runtime's
/// figures are `all` (the control is not among them); the control's are its thread's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Control {
    /// The control's index in `threads`.
    pub thread: usize,
    /// Per percentile (`50` … `99.999`) and `max`: the runtime's lateness minus the control's
    /// (ns), what the runtime adds to the OS; `null` where either is unknown.
    pub excess_ns: std::collections::BTreeMap<String, Option<i64>>,
}

/// The origin of imported data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Source {
    /// `cyclictest-json`, `cyclictest-histogram` or `cyclictest-quiet`.
    pub format: String,
    /// The file it was read from.
    pub file: String,
    /// The writer's version, when the file says (`2.10`, `2.40`).
    pub tool_version: Option<String>,
    /// The writer's command line, when the file says.
    pub command_line: Option<String>,
    /// The unit of the file's figures: `us` or `ns`.
    pub unit: String,
}

/// Name and version of the writer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tool {
    /// `rtlab`.
    pub name: String,
    /// Crate version.
    pub version: String,
}

impl Tool {
    /// This build of rtlab.
    pub fn this() -> Tool {
        Tool { name: "rtlab".into(), version: env!("CARGO_PKG_VERSION").into() }
    }
}

/// SCHED_DEADLINE parameters (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeadlineParams {
    /// Runtime.
    pub runtime_ns: u64,
    /// Relative deadline.
    pub deadline_ns: u64,
    /// Period.
    pub period_ns: u64,
}

/// What the run was asked to do, and what the process obtained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Config {
    /// Sleep method (`abs`, `rel`, `nanosleep`, `sleep`, `posix-timer`).
    pub method: crate::measure::probe::Method,
    /// Clock (`monotonic`, `realtime`).
    pub clock: crate::measure::probe::ClockKind,
    /// Measuring threads.
    pub threads: usize,
    /// Base interval (ns).
    pub interval_ns: i64,
    /// Interval added per thread (ns).
    pub distance_ns: i64,
    /// Samples per thread, if limited.
    pub loops: Option<u64>,
    /// Run length (s), if limited.
    pub duration_s: Option<f64>,
    /// Warm-up periods discarded per thread, if given as cycles.
    pub warmup_cycles: Option<u64>,
    /// Warm-up time discarded (ns), if given as time.
    pub warmup_ns: Option<i64>,
    /// Policy asked.
    pub policy: Policy,
    /// Priority asked (of thread 0 with `--priospread`).
    pub priority: u32,
    /// Priorities decrease by one per thread.
    pub priospread: bool,
    /// SCHED_DEADLINE parameters asked.
    pub deadline: Option<DeadlineParams>,
    /// CPUs the threads were placed on (round robin), `null` when not pinned.
    pub affinity: Option<String>,
    /// CPUs of the reporting thread.
    pub main_affinity: Option<String>,
    /// mlockall asked.
    pub mlockall: bool,
    /// mlockall obtained.
    pub mlockall_obtained: bool,
    /// `/dev/cpu_dma_latency` value asked (µs), `null` with `--no-dma-latency`.
    pub dma_latency_us: Option<i32>,
    /// The PM QoS request was held for the run.
    pub dma_latency_held: bool,
    /// Timer slack asked for measuring threads (ns).
    pub timer_slack_ns: u64,
    /// Histogram bucket width (ns).
    pub bucket_ns: u64,
    /// End of the linear histogram region (ns).
    pub range_ns: u64,
    /// `--max-latency` (ns).
    pub max_latency_ns: Option<i64>,
    /// `--breaktrace` (ns).
    pub breaktrace_ns: Option<i64>,
    /// `--tracemark`.
    pub tracemark: bool,
    /// `--strict`.
    pub strict: bool,
    /// True when something was obtained below what was asked (see warnings).
    pub degraded: bool,
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// Every thread recorded its `--loops`.
    Loops,
    /// `--duration` elapsed.
    Duration,
    /// SIGINT or SIGTERM.
    Signal,
    /// A sample crossed `--breaktrace`.
    Breaktrace,
    /// Not known (imported data).
    Unknown,
    /// Not ended: a checkpoint written while the run goes on.
    Checkpoint,
    /// The probe's runtime failed mid-run (the results are partial).
    Failed,
    /// Every watched thread exited (`rtlab watch`; with `-- CMD`: the command ended).
    Exited,
}

/// A histogram as stored: its layout and the non-empty buckets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HistogramRecord {
    /// Linear bucket width (ns).
    pub bucket_ns: u64,
    /// End of the linear region (ns); beyond it buckets are 1/32 of an octave wide.
    pub range_ns: u64,
    /// Non-empty buckets, ascending.
    pub buckets: Vec<Bucket>,
    /// Samples outside the buckets whose values are unknown (imported cyclictest overflows);
    /// `null` for rtlab's own histograms, which keep every sample.
    pub unbinned: Option<Unbinned>,
}

impl HistogramRecord {
    /// Whether a histogram read from a file is one rtlab can draw: buckets of positive width,
    /// ascending and apart, and counts whose sum fits 64 bits; the error says which rule fails.
    pub fn check(&self) -> Result<(), String> {
        if self.bucket_ns == 0 {
            return Err("bucket_ns is 0".into());
        }
        let mut prev_hi = 0u64;
        let mut total = self.unbinned.map_or(0, |u| u.count);
        for b in &self.buckets {
            if b.lo_ns >= b.hi_ns || b.lo_ns < prev_hi {
                return Err(format!(
                    "bucket [{}, {}) is empty, or not above the one before (buckets are ascending and apart)",
                    b.lo_ns, b.hi_ns
                ));
            }
            prev_hi = b.hi_ns;
            total = total.checked_add(b.count).ok_or("its counts add up past 64 bits")?;
        }
        Ok(())
    }
}

/// Samples known only to be at least some value (cyclictest's histogram overflows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unbinned {
    /// How many.
    pub count: u64,
    /// Every one of them is at least this (ns).
    pub at_least_ns: u64,
}

/// One histogram bucket: samples with `lo_ns ≤ latency < hi_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bucket {
    /// Lower edge (ns, inclusive).
    pub lo_ns: u64,
    /// Upper edge (ns, exclusive).
    pub hi_ns: u64,
    /// Samples.
    pub count: u64,
}

/// Statistics shared by threads and the aggregate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stats {
    /// Samples recorded.
    pub cycles: u64,
    /// Periods missed (wakeups more than one interval late); `null` when not known (imports).
    pub missed: Option<u64>,
    /// Samples with negative latency (clock steps); `null` when not known.
    pub negative: Option<u64>,
    /// Minimum latency (ns).
    pub min_ns: Option<i64>,
    /// Maximum latency (ns).
    pub max_ns: Option<i64>,
    /// Cycle (0-based, after warm-up) of the maximum.
    pub max_at_cycle: Option<u64>,
    /// Time of the maximum since the thread started (ns).
    pub max_at_ns: Option<i64>,
    /// Wall-clock time of the maximum (RFC 3339).
    pub max_at_time: Option<String>,
    /// Exact mean (ns).
    pub mean_ns: Option<f64>,
    /// Mean of the per-sample latencies truncated to whole µs the way cyclictest computes
    /// them (what `rtlab cyclictest` prints as `Avg`); absent where not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_us_truncated: Option<f64>,
    /// True population standard deviation (ns).
    pub stdev_ns: Option<f64>,
    /// Percentiles (ns): upper bounds at most one bucket above the true value; `null` when
    /// there is no histogram or the percentile lies above its range.
    pub percentiles_ns: BTreeMap<String, Option<i64>>,
    /// Percentiles that lie among unbinned samples: only a lower bound (ns) is known.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub percentiles_above_ns: BTreeMap<String, i64>,
    /// Samples above `--max-latency`.
    pub over_threshold: u64,
    /// With `--max-latency`: the samples above it, their bursts and how often those came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exceedances: Option<exceed::Exceedances>,
    /// The histogram (`null` when the source had none).
    pub histogram: Option<HistogramRecord>,
    /// How far another run of the same configuration may land: a 95 % interval for each
    /// percentile and the maximum, from the run's own per-second histograms (block bootstrap)
    /// or, for a run of a few seconds, from order statistics (the guide's "Uncertainty").
    /// Absent where the source holds neither (imports, stages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<crate::measure::uncertainty::Uncertainty>,
    /// `--predict`: the largest latency to expect over a longer run, or why none is given
    /// (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction: Option<predict::Prediction>,
}

/// A task that works after each wakeup: its response time (completion − release), run time
/// (completion − wakeup), slack (deadline − response) and deadline misses. Absent for the
/// empty loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkResult {
    /// `fixed` (calibrated computation, rt-app's `run`) or `time` (busy wall-clock time,
    /// rt-app's `runtime`); `null` when tasks differ or a log does not say.
    pub kind: Option<crate::measure::work::WorkKind>,
    /// The work asked per period (ns); `null` when tasks differ.
    pub work_ns: Option<i64>,
    /// The deadline relative to the release (ns); `null` when tasks differ.
    pub deadline_ns: Option<i64>,
    /// How the fixed work was sized on this machine (`null` for busy time and imports).
    pub calibration: Option<crate::measure::work::Calibration>,
    /// Response times (ns): completion − release.
    pub response: Stats,
    /// Run times (ns): completion − wakeup, the work itself with whatever preempted it.
    pub run: Stats,
    /// Smallest slack (ns): deadline − the largest response; negative when a job was late.
    pub slack_min_ns: Option<i64>,
    /// Largest slack (ns): deadline − the smallest response.
    pub slack_max_ns: Option<i64>,
    /// Misses per release.
    pub miss_ratio: f64,
    /// Releases, misses (late jobs and skipped releases), the longest run of misses and the
    /// worst window.
    #[serde(flatten)]
    pub deadlines: crate::measure::work::DeadlineFigures,
}

/// The part of a thread another tool's file can tell: its index, CPU and statistics.
impl ThreadResult {
    /// A thread known only by its figures (an imported file): everything rtlab would have
    /// observed itself (policy, affinity, timer slack, logs, series…) left unknown.
    pub fn of_figures(thread: usize, cpu: Option<usize>, stats: Stats) -> ThreadResult {
        ThreadResult {
            name: None,
            work: None,
            thread,
            cpu,
            cpus_allowed: None,
            last_cpu: None,
            policy: None,
            priority: None,
            deadline: None,
            interval_ns: None,
            timer_slack_ns: None,
            drift_ns: None,
            samples_lost: None,
            stats,
            logs: None,
            noise: None,
            watch: None,
            series: None,
        }
    }
}

/// One measuring thread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThreadResult {
    /// Index.
    pub thread: usize,
    /// The task's name (`--task name=…`, rt-app's task); absent for unnamed threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// CPU the thread was pinned to (`null` = not pinned).
    pub cpu: Option<usize>,
    /// CPUs it was allowed on, as read back.
    pub cpus_allowed: Option<String>,
    /// CPU it ran on last.
    pub last_cpu: Option<usize>,
    /// Policy in force (read back).
    pub policy: Option<Policy>,
    /// Priority in force (read back).
    pub priority: Option<u32>,
    /// SCHED_DEADLINE parameters in force.
    pub deadline: Option<DeadlineParams>,
    /// Interval (ns).
    pub interval_ns: Option<i64>,
    /// Timer slack in force (ns).
    pub timer_slack_ns: Option<u64>,
    /// Last wakeup minus the ideal absolute schedule (ns): bounded for absolute methods,
    /// accumulating for relative ones.
    pub drift_ns: Option<i64>,
    /// Samples the `--samples` writer could not keep (`null` without `--samples`).
    #[serde(default)]
    pub samples_lost: Option<u64>,
    /// Statistics.
    #[serde(flatten)]
    pub stats: Stats,
    /// Samples an `rtlab cyclictest` run logged (histogram overflows, `--spike`s); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<SampleLogs>,
    /// A noise run's figures for this CPU (absent for wakeup runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<NoiseFigures>,
    /// A working task's response, run and deadline figures (absent for the empty loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<WorkResult>,
    /// A watched thread's own figures (`rtlab watch`; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<watch::WatchThread>,
    /// Latency over time: per interval, the samples, missed periods and largest latency (a
    /// measured run's; absent for simulated runs, noise runs and files of other tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<crate::measure::series::LatencySeries>,
}

/// The samples cyclictest's outputs list one by one, kept in the result so that its `-h`
/// histogram and `--spike` list can be written again from a saved file (`rtlab export`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SampleLogs {
    /// The schedule's start on the probe's clock (ns): a sample happened at `start + at_ns`.
    pub schedule_start_ns: i64,
    /// Samples above the `-h` histogram's last bucket (cyclictest's overflows).
    pub overflows: SampleLog,
    /// Samples above `--spike`.
    pub spikes: SampleLog,
}

/// Samples above a threshold: how many, and the first of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SampleLog {
    /// Samples strictly above this were logged (ns); `null`: none was asked.
    pub threshold_ns: Option<i64>,
    /// How many samples were above it.
    pub count: u64,
    /// The first of them, in order (as many as the run kept).
    pub samples: Vec<LoggedSample>,
}

/// One logged sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoggedSample {
    /// Cycle (0-based, after warm-up).
    pub cycle: u64,
    /// Wake time since the schedule's start (ns).
    pub at_ns: i64,
    /// Latency (ns).
    pub latency_ns: i64,
}

impl SampleLog {
    /// The log as stored.
    pub fn of(log: &crate::measure::stats::ExceedLog) -> SampleLog {
        SampleLog {
            threshold_ns: log.threshold_ns(),
            count: log.count,
            samples: log
                .entries
                .iter()
                .map(|e| LoggedSample { cycle: e.cycle, at_ns: e.at_ns, latency_ns: e.latency_ns })
                .collect(),
        }
    }
}

/// All measured threads together (a runtime's control, `runtime.control`, is beside them,
/// not among them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AllResult {
    /// Number of threads merged.
    pub threads: usize,
    /// Policy of the threads, or `mixed` (`null` when not known).
    pub policy: Option<String>,
    /// Priority if all threads had the same.
    pub priority: Option<u32>,
    /// The CPUs the threads were pinned to (list format), `null` if none was pinned.
    pub cpu: Option<String>,
    /// Thread that had the maximum.
    pub max_at_thread: Option<usize>,
    /// Statistics.
    #[serde(flatten)]
    pub stats: Stats,
    /// Every working task together (absent when none works).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<WorkResult>,
}

impl RunResult {
    /// Adds the loads' results, with a warning for each load that could not get its
    /// scheduling (the result is then degraded) and for each load that failed.
    pub fn attach_loads(&mut self, loads: Vec<crate::load::LoadResult>) {
        for l in &loads {
            if l.policy != l.policy_requested && !l.policy_requested.is_empty() {
                let why = l.downgrade_why.clone().unwrap_or_else(|| "the kernel refused it".into());
                self.warnings.push(
                    Warning::LoadPolicyDowngraded {
                        load: l.spec.clone(),
                        asked: l.policy_requested.clone(),
                        got: l.policy.clone(),
                        why,
                    }
                    .into(),
                );
                if let Some(c) = self.config.as_mut() {
                    c.degraded = true;
                }
            }
            if l.failed {
                let why = l.warnings.iter().filter(|w| !w.starts_with("could not get ")).cloned().collect::<Vec<_>>();
                self.warnings.push(Warning::LoadFailed { load: l.spec.clone(), why: why.join("; ") }.into());
            }
        }
        self.loads.extend(loads);
    }

    /// The exit code the run ends with: 1 when an output or a load failed (the rest was
    /// written), 3 when the verdict failed, else 0.
    pub fn exit_code(&self) -> i32 {
        let failed = self
            .warnings
            .iter()
            .any(|w| matches!(w.warning, Warning::OutputFailed { .. } | Warning::LoadFailed { .. }));
        if failed {
            1
        } else if self.verdict.status == VerdictStatus::Fail {
            3
        } else {
            0
        }
    }
}
