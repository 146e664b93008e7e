//! RunResult: the data model every output reads (schema `rtlab.run/1`, documented in
//! `docs/rtlab.run.schema.json`).

use crate::measure::engine::{EndReason, EngineOutput, Plan, ThreadOutcome};
use crate::measure::stats::Summary;
use crate::output::warnings::{Warning, WarningRecord};
use crate::rt::affinity::CpuSet;
use crate::rt::sched::Policy;
use crate::sysinfo::Environment;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// The schema identifier written into every result file.
pub const SCHEMA: &str = "rtlab.run/1";

/// One measurement run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The tool that wrote the file.
    pub tool: Tool,
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
}

/// A language runtime's probe: what was asked and what the runtime says of itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Runtime {
    /// `beam` or `tokio`.
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
}

/// The origin of imported data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadlineParams {
    /// Runtime.
    pub runtime_ns: u64,
    /// Relative deadline.
    pub deadline_ns: u64,
    /// Period.
    pub period_ns: u64,
}

/// What the run was asked to do, and what the process obtained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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

impl Config {
    /// The configuration a plan describes, as asked (the `*_obtained`/`held`/`degraded` fields
    /// are filled from the engine's output; warm-up is the caller's to fill).
    pub fn from_plan(plan: &Plan) -> Config {
        let t0 = plan.threads.first();
        let sched = t0.map(|t| t.sched);
        let pinned = CpuSet::from_cpus(plan.threads.iter().filter_map(|t| t.cpu));
        Config {
            method: plan.method,
            clock: plan.clock,
            threads: plan.threads.len(),
            interval_ns: t0.map_or(0, |t| t.interval_ns),
            distance_ns: plan.threads.get(1).zip(t0).map_or(0, |(b, a)| b.interval_ns - a.interval_ns),
            loops: plan.loops,
            duration_s: plan.duration.map(|d| d.as_secs_f64()),
            warmup_cycles: None,
            warmup_ns: None,
            policy: sched.map_or(Policy::Other, |s| s.policy),
            priority: sched.map_or(0, |s| s.priority),
            priospread: plan.threads.get(1).zip(t0).is_some_and(|(b, a)| b.sched.priority < a.sched.priority),
            deadline: sched.as_ref().and_then(deadline_of),
            affinity: (!pinned.is_empty()).then(|| pinned.to_string()),
            main_affinity: plan.main_affinity.as_ref().map(|c| c.to_string()),
            mlockall: plan.mlockall,
            mlockall_obtained: false,
            dma_latency_us: plan.dma_latency_us,
            dma_latency_held: false,
            timer_slack_ns: 1,
            bucket_ns: plan.layout.bucket_ns,
            range_ns: plan.layout.range_ns,
            max_latency_ns: plan.max_latency_ns,
            breaktrace_ns: plan.breaktrace_ns,
            tracemark: plan.tracemark,
            strict: plan.strict,
            degraded: false,
        }
    }
}

/// A histogram as stored: its layout and the non-empty buckets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// Samples known only to be at least some value (cyclictest's histogram overflows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unbinned {
    /// How many.
    pub count: u64,
    /// Every one of them is at least this (ns).
    pub at_least_ns: u64,
}

/// One histogram bucket: samples with `lo_ns ≤ latency < hi_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    /// Lower edge (ns, inclusive).
    pub lo_ns: u64,
    /// Upper edge (ns, exclusive).
    pub hi_ns: u64,
    /// Samples.
    pub count: u64,
}

/// Statistics shared by threads and the aggregate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// The histogram (`null` when the source had none).
    pub histogram: Option<HistogramRecord>,
}

/// One measuring thread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadResult {
    /// Index.
    pub thread: usize,
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
}

/// All threads together.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
}

/// Verdict status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictStatus {
    /// Every sample was within the threshold.
    Pass,
    /// At least one sample exceeded it (exit code 3).
    Fail,
    /// No threshold was given.
    NotChecked,
}

/// A thread's samples above the threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exceeded {
    /// Thread.
    pub thread: usize,
    /// Its CPU.
    pub cpu: Option<usize>,
    /// Samples above the threshold.
    pub count: u64,
    /// First such sample: cycle.
    pub first_cycle: u64,
    /// First: time since start (ns).
    pub first_at_ns: i64,
    /// First: latency (ns).
    pub first_latency_ns: i64,
    /// Worst latency (ns) = the thread's maximum.
    pub worst_latency_ns: i64,
    /// Cycle of the worst.
    pub worst_at_cycle: u64,
    /// Worst minus the threshold (ns).
    pub over_by_ns: i64,
}

/// Pass/fail against the thresholds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Status.
    pub status: VerdictStatus,
    /// The threshold (ns): `--max-latency`, else `--breaktrace`.
    pub threshold_ns: Option<i64>,
    /// Threads that exceeded it.
    pub exceeded: Vec<Exceeded>,
    /// With `--tracemark`: a marker was written into tracefs and tracing stopped at the breaktrace hit.
    pub tracemark_written: bool,
    /// One sentence.
    pub message: String,
}

use crate::timefmt::rfc3339;

pub(crate) fn stats_of(s: &Summary, start: SystemTime) -> Stats {
    Stats {
        cycles: s.cycles,
        missed: Some(s.missed),
        negative: Some(s.negative),
        min_ns: s.min_ns,
        max_ns: s.max_ns,
        max_at_cycle: s.max_at_cycle,
        max_at_ns: s.max_at_ns,
        max_at_time: s.max_at_ns.map(|ns| rfc3339(start + Duration::from_nanos(ns.max(0) as u64))),
        mean_ns: s.mean_ns(),
        mean_us_truncated: s.sum_us_truncated.filter(|_| s.cycles > 0).map(|u| u as f64 / s.cycles as f64),
        stdev_ns: s.stdev_ns(),
        percentiles_ns: s.percentiles(),
        percentiles_above_ns: BTreeMap::new(),
        over_threshold: s.over.count,
        histogram: Some(HistogramRecord {
            bucket_ns: s.counts.layout().bucket_ns,
            range_ns: s.counts.layout().range_ns,
            buckets: s.counts.nonzero().map(|(lo_ns, hi_ns, count)| Bucket { lo_ns, hi_ns, count }).collect(),
            unbinned: None,
        }),
    }
}

fn deadline_of(p: &crate::rt::sched::SchedParams) -> Option<DeadlineParams> {
    (p.policy == Policy::Deadline).then_some(DeadlineParams {
        runtime_ns: p.runtime_ns,
        deadline_ns: p.deadline_ns,
        period_ns: p.period_ns,
    })
}

fn thread_result(t: &ThreadOutcome, start: SystemTime) -> ThreadResult {
    ThreadResult {
        thread: t.plan.index,
        cpu: t.plan.cpu,
        cpus_allowed: Some(t.cpus_allowed.to_string()),
        last_cpu: t.last_cpu,
        policy: Some(t.sched.policy),
        priority: Some(t.sched.priority),
        deadline: deadline_of(&t.sched),
        interval_ns: Some(t.plan.interval_ns),
        timer_slack_ns: t.timer_slack_ns,
        drift_ns: (t.outcome.iterations > 0).then_some(t.outcome.drift_ns),
        samples_lost: None,
        stats: stats_of(&t.summary, start),
    }
}

/// Formats nanoseconds as µs for messages.
fn us(ns: i64) -> String {
    format!("{:.1} µs", ns as f64 / 1000.0)
}

impl Verdict {
    /// No threshold was given.
    pub fn not_checked() -> Verdict {
        Verdict {
            status: VerdictStatus::NotChecked,
            threshold_ns: None,
            exceeded: vec![],
            tracemark_written: false,
            message: "no latency threshold was given (--max-latency)".into(),
        }
    }
}

/// What the verdict needs of one probe: index, CPU, statistics and a `--breaktrace` hit.
type VerdictInput<'a> = (usize, Option<usize>, &'a Summary, Option<crate::measure::stats::Exceedance>);

fn verdict(threads: &[VerdictInput], threshold: Option<i64>, start: SystemTime, tracemark_written: bool) -> Verdict {
    let Some(limit) = threshold else {
        return Verdict { tracemark_written, ..Verdict::not_checked() };
    };
    let exceeded: Vec<Exceeded> = threads
        .iter()
        .filter_map(|&(index, cpu, s, break_hit)| {
            let first = s.over.first().or(break_hit)?;
            let worst = s.max_ns.unwrap_or(first.latency_ns);
            Some(Exceeded {
                thread: index,
                cpu,
                count: s.over.count.max(1),
                first_cycle: first.cycle,
                first_at_ns: first.at_ns,
                first_latency_ns: first.latency_ns,
                worst_latency_ns: worst,
                worst_at_cycle: s.max_at_cycle.unwrap_or(first.cycle),
                over_by_ns: worst - limit,
            })
        })
        .collect();
    if exceeded.is_empty() {
        return Verdict {
            status: VerdictStatus::Pass,
            threshold_ns: Some(limit),
            exceeded,
            tracemark_written,
            message: format!("PASS: no sample exceeded {}", us(limit)),
        };
    }
    let total: u64 = exceeded.iter().map(|e| e.count).sum();
    let parts: Vec<String> = exceeded
        .iter()
        .map(|e| {
            let cpu = e.cpu.map(|c| format!(" (CPU {c})")).unwrap_or_default();
            format!(
                "thread {}{cpu}: {} over, first at cycle {} ({:.3} s into the run, {}) with {}, worst {} at cycle {}, {} over",
                e.thread,
                e.count,
                e.first_cycle,
                e.first_at_ns as f64 / 1e9,
                rfc3339(start + Duration::from_nanos(e.first_at_ns.max(0) as u64)),
                us(e.first_latency_ns),
                us(e.worst_latency_ns),
                e.worst_at_cycle,
                us(e.over_by_ns)
            )
        })
        .collect();
    Verdict {
        status: VerdictStatus::Fail,
        threshold_ns: Some(limit),
        message: format!(
            "FAIL: {total} {} exceeded {}; {}{}",
            if total == 1 { "sample" } else { "samples" },
            us(limit),
            parts.join("; "),
            if tracemark_written { "; trace marker written and tracing stopped" } else { "" }
        ),
        exceeded,
        tracemark_written,
    }
}

/// `Some(Some(v))` when every thread has `v`, `Some(None)` when they differ, `None` when
/// there is no thread.
fn common<T: PartialEq + Copy>(threads: &[ThreadResult], f: impl Fn(&ThreadResult) -> T) -> Option<Option<T>> {
    let first = f(threads.first()?);
    Some(threads.iter().all(|t| f(t) == first).then_some(first))
}

/// One probe's figures for [`RunResult::from_probes`].
#[derive(Clone, Debug)]
pub struct ProbeFigures {
    /// Index.
    pub thread: usize,
    /// Pinned CPU.
    pub cpu: Option<usize>,
    /// Period (ns).
    pub interval_ns: i64,
    /// Statistics.
    pub summary: Summary,
    /// Drift against the ideal schedule (relative methods).
    pub drift_ns: Option<i64>,
    /// Samples a samples file could not keep.
    pub samples_lost: Option<u64>,
}

/// A run of probes that are not the engine's OS threads.
#[derive(Clone, Debug)]
pub struct ProbeRun {
    /// The probes.
    pub probes: Vec<ProbeFigures>,
    /// When they started.
    pub start: Option<SystemTime>,
    /// How long they ran (s).
    pub duration_s: Option<f64>,
    /// Why they stopped.
    pub end_reason: EndReason,
    /// False when missed periods cannot be known (samples files).
    pub missed_known: bool,
    /// argv.
    pub command_line: Vec<String>,
    /// The machine.
    pub environment: Environment,
    /// Where the data came from, when it was read from a file.
    pub source: Option<Source>,
    /// `--max-latency`.
    pub threshold_ns: Option<i64>,
}

/// What the engine does not know: the command line, the environment and the configuration.
#[derive(Clone, Debug)]
pub struct Provenance {
    /// argv.
    pub command_line: Vec<String>,
    /// The machine.
    pub environment: Environment,
    /// The configuration (the `*_obtained`, `dma_latency_held` and `degraded` fields are
    /// filled from the engine's output).
    pub config: Config,
    /// Simulated samples.
    pub simulated: bool,
}

impl RunResult {
    /// Builds the result from the engine's output.
    pub fn build(p: Provenance, out: &EngineOutput) -> RunResult {
        let mut warnings = out.warnings.clone();
        let threads: Vec<ThreadResult> = out.threads.iter().map(|t| thread_result(t, out.start)).collect();
        let layout = out
            .threads
            .first()
            .map(|t| t.summary.counts.layout())
            .unwrap_or(crate::measure::histogram::Layout::DEFAULT);
        let mut all = Summary::empty(layout);
        for t in &out.threads {
            all.merge(&t.summary, t.plan.index);
        }
        if all.missed > 0 {
            warnings.push(Warning::MissedPeriods { count: all.missed });
        }
        if all.negative > 0 {
            warnings.push(Warning::NegativeLatencies { count: all.negative });
        }
        if all.cycles == 0 {
            warnings.push(Warning::NoSamples);
        }
        if all.sum_sq_overflow.is_some() {
            warnings.push(Warning::StdevInexact);
        }
        let cpus = CpuSet::from_cpus(out.threads.iter().filter_map(|t| t.plan.cpu));
        let threshold = p.config.max_latency_ns.or(p.config.breaktrace_ns);
        let mut config = p.config;
        config.mlockall_obtained = out.mlocked;
        config.dma_latency_held = out.dma_latency_held.is_some();
        config.degraded = warnings.iter().any(Warning::is_downgrade);
        RunResult {
            schema: SCHEMA.into(),
            tool: Tool::this(),
            command_line: p.command_line,
            start_time: Some(rfc3339(out.start)),
            end_time: Some(rfc3339(out.end)),
            duration_s: Some(out.end.duration_since(out.start).unwrap_or_default().as_secs_f64()),
            end_reason: out.end_reason,
            simulated: p.simulated,
            source: None,
            environment: p.environment,
            config: Some(config),
            all: AllResult {
                threads: threads.len(),
                policy: match common(&threads, |t| t.policy) {
                    Some(Some(Some(p))) => Some(p.to_string()),
                    Some(None) => Some("mixed".into()),
                    _ => None,
                },
                priority: common(&threads, |t| t.priority).flatten().flatten(),
                cpu: (!cpus.is_empty()).then(|| cpus.to_string()),
                max_at_thread: all.max_at_thread,
                stats: stats_of(&all, out.start),
            },
            verdict: verdict(
                &out.threads
                    .iter()
                    .map(|t| (t.plan.index, t.plan.cpu, &t.summary, t.outcome.break_hit))
                    .collect::<Vec<_>>(),
                threshold,
                out.start,
                out.tracemark_written,
            ),
            threads,
            loads: Vec::new(),
            warnings: warnings.into_iter().map(WarningRecord::from).collect(),
            runtime: None,
        }
    }

    /// Builds a result from probes that are not the engine's OS threads (a runtime's probe, a
    /// samples file): exact statistics, the aggregate, the verdict against `threshold_ns`.
    pub fn from_probes(p: ProbeRun) -> RunResult {
        let at = p.start.unwrap_or(std::time::UNIX_EPOCH);
        let layout = p.probes.first().map_or(crate::measure::histogram::Layout::DEFAULT, |t| t.summary.counts.layout());
        let mut all = Summary::empty(layout);
        for t in &p.probes {
            all.merge(&t.summary, t.thread);
        }
        let known = |mut st: Stats| {
            // Runtime probes and samples files have no deadline/wakeup pairs to truncate.
            st.mean_us_truncated = None;
            if !p.missed_known {
                st.missed = None;
            }
            if p.start.is_none() {
                st.max_at_time = None;
            }
            st
        };
        let threads: Vec<ThreadResult> = p
            .probes
            .iter()
            .map(|t| ThreadResult {
                thread: t.thread,
                cpu: t.cpu,
                cpus_allowed: None,
                last_cpu: None,
                policy: None,
                priority: None,
                deadline: None,
                interval_ns: Some(t.interval_ns),
                timer_slack_ns: None,
                drift_ns: t.drift_ns,
                samples_lost: t.samples_lost,
                stats: known(stats_of(&t.summary, at)),
            })
            .collect();
        let mut warnings: Vec<Warning> = Vec::new();
        if p.missed_known && all.missed > 0 {
            warnings.push(Warning::MissedPeriods { count: all.missed });
        }
        if all.cycles == 0 {
            warnings.push(Warning::NoSamples);
        }
        let cpus = CpuSet::from_cpus(p.probes.iter().filter_map(|t| t.cpu));
        let inputs: Vec<VerdictInput> = p.probes.iter().map(|t| (t.thread, t.cpu, &t.summary, None)).collect();
        RunResult {
            schema: SCHEMA.into(),
            tool: Tool::this(),
            command_line: p.command_line,
            start_time: p.start.map(rfc3339),
            end_time: p.start.zip(p.duration_s).map(|(s, d)| rfc3339(s + Duration::from_secs_f64(d.max(0.0)))),
            duration_s: p.duration_s,
            end_reason: p.end_reason,
            simulated: false,
            source: p.source,
            environment: p.environment,
            config: None,
            all: AllResult {
                threads: threads.len(),
                policy: None,
                priority: None,
                cpu: (!cpus.is_empty()).then(|| cpus.to_string()),
                max_at_thread: all.max_at_thread,
                stats: known(stats_of(&all, at)),
            },
            verdict: verdict(&inputs, p.threshold_ns, at, false),
            threads,
            loads: Vec::new(),
            warnings: warnings.into_iter().map(WarningRecord::from).collect(),
            runtime: None,
        }
    }

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
