//! The one RunResult builder: every result — a run of any probe, a checkpoint, a samples file
//! read back — is built here from per-probe [`Summary`]s, so the statistics, the aggregate,
//! the standard warnings and the verdict are computed one way. Files of another tool
//! (cyclictest's) state statistics instead of samples: [`RunResult::from_stated`] combines them.

use super::verdict::{verdict, VerdictInput};
use super::warning::{Warning, WarningRecord};
use super::WorkResult;
use super::{
    AllResult, Bucket, Config, DeadlineParams, EndReason, HistogramRecord, RunResult, Runtime, Source, Stats,
    ThreadResult, Tool, Unbinned, SCHEMA,
};
use crate::measure::histogram::{nearest_rank_edge, Layout, PERCENTILES};
use crate::measure::stats::{Exceedance, Summary};
use crate::measure::work::WorkSummary;
use crate::rt::affinity::CpuSet;
use crate::rt::sched::{Policy, SchedParams};
use crate::sysinfo::Environment;
use crate::timefmt::rfc3339;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// What an OS thread obtained (read back from the kernel); runtime probes and files have none.
#[derive(Clone, Debug)]
pub struct Obtained {
    /// Scheduling in force.
    pub sched: SchedParams,
    /// CPUs it was allowed to run on.
    pub cpus_allowed: CpuSet,
    /// CPU it ran on last.
    pub last_cpu: Option<usize>,
    /// Timer slack in force (ns).
    pub timer_slack_ns: Option<u64>,
}

/// One probe's figures.
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
    /// Drift against the ideal schedule, when known.
    pub drift_ns: Option<i64>,
    /// Samples a samples file could not keep.
    pub samples_lost: Option<u64>,
    /// What the thread obtained, for OS threads.
    pub obtained: Option<Obtained>,
    /// The sample that crossed `--breaktrace`, if any.
    pub break_hit: Option<Exceedance>,
    /// cyclictest's logged samples, kept in the result (`rtlab cyclictest`).
    pub logs: Option<super::SampleLogs>,
    /// A noise run's figures for this CPU.
    pub noise: Option<super::NoiseFigures>,
    /// The task's name.
    pub name: Option<String>,
    /// A working task's figures.
    pub work: Option<WorkSummary>,
    /// A watched thread's own figures.
    pub watch: Option<super::watch::WatchFigures>,
    /// Latency over time, when it was read while measuring.
    pub series: Option<crate::measure::series::LatencySeries>,
}

/// Everything a RunResult is built from.
#[derive(Clone, Debug)]
pub struct ProbeRun {
    /// The probes.
    pub probes: Vec<ProbeFigures>,
    /// When they started (`None`: a file that does not say).
    pub start: Option<SystemTime>,
    /// When they ended, when known exactly.
    pub end: Option<SystemTime>,
    /// How long they ran (s), when `end` is not known.
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
    /// The verdict's threshold (ns).
    pub threshold_ns: Option<i64>,
    /// The configuration as asked and obtained (`degraded` is set here), for OS threads.
    pub config: Option<Config>,
    /// Warnings known before the figures (setup, the probe's own), in the order they arose.
    pub warnings: Vec<Warning>,
    /// Simulated samples.
    pub simulated: bool,
    /// A trace marker was written for a `--breaktrace` hit.
    pub tracemark_written: bool,
    /// The runtime the probe ran in.
    pub runtime: Option<Runtime>,
    /// `--explain`'s explanations.
    pub explanations: Vec<crate::trace::Explanation>,
    /// `--explain`'s summary.
    pub explain: Option<crate::trace::ExplainSummary>,
    /// What was measured.
    pub kind: crate::result::Kind,
    /// A noise run's settings.
    pub noise: Option<crate::result::NoiseConfig>,
    /// The verdict's response-time threshold (ns).
    pub max_response_ns: Option<i64>,
    /// The verdict's deadline-miss limit.
    pub max_misses: Option<super::verdict::MissLimit>,
    /// What a watch run watched.
    pub watch: Option<super::watch::WatchRun>,
    /// An rt-app use case's hand-offs, lock waits and timers.
    pub rt_app: Option<super::rt_app::RtAppFigures>,
    /// What the run cost rtlab (`None`: read from a file, not run).
    pub cost: Option<super::Cost>,
}

impl ProbeRun {
    /// The builder's input for samples read from a file (`source`): no configuration, no
    /// threshold, no known end, missed periods not known, a wakeup run of `duration_s`.
    pub fn imported(probes: Vec<ProbeFigures>, source: Source, duration_s: Option<f64>) -> ProbeRun {
        ProbeRun {
            probes,
            start: None,
            end: None,
            duration_s,
            end_reason: EndReason::Unknown,
            missed_known: false,
            command_line: vec![],
            environment: Environment::unknown(),
            source: Some(source),
            threshold_ns: None,
            config: None,
            warnings: Vec::new(),
            simulated: false,
            tracemark_written: false,
            runtime: None,
            explanations: Vec::new(),
            explain: None,
            max_response_ns: None,
            max_misses: None,
            kind: crate::result::Kind::Wakeup,
            noise: None,
            watch: None,
            rt_app: None,
            cost: None,
        }
    }
}

impl RunResult {
    /// Builds a result: per-probe and aggregate statistics, the warnings every result carries
    /// (missed periods, negative latencies, no samples, an inexact stdev), and the verdict.
    pub fn build(p: ProbeRun) -> RunResult {
        let at = p.start.unwrap_or(std::time::UNIX_EPOCH);
        let layout = p.probes.first().map_or(Layout::DEFAULT, |t| t.summary.counts.layout());
        // A runtime's control is measured beside the runtime, not as part of it: `all`, the
        // verdict and the warnings are the runtime's.
        let control = p.runtime.as_ref().and_then(|r| r.control.as_ref()).map(|c| c.thread);
        let measured: Vec<&ProbeFigures> = p.probes.iter().filter(|t| Some(t.thread) != control).collect();
        let mut all = Summary::empty(layout);
        measured.iter().for_each(|t| all.merge(&t.summary, t.thread));
        let known = |st: Stats| known_stats(st, p.missed_known, p.start.is_some());
        let mut threads: Vec<ThreadResult> = p.probes.iter().map(|t| thread_result(t, at, &known)).collect();
        let mut all_stats = known(stats_of(&all, at));
        super::uncertainty::attach(&mut threads, &mut all_stats, control, p.end_reason);
        let (end, duration_s) = span(&p);
        super::exceed::attach(&mut threads, &mut all_stats, duration_s);
        let lost_events = p.watch.as_ref().map_or(0, |w| w.lost_events);
        // A watch's explanations read the watch's own trace: its loss is said once, as the watch's.
        let explained = if p.watch.is_some() { 0 } else { p.explain.as_ref().map_or(0, |e| e.lost_events) };
        let lost = Lost { watched: lost_events, explained };
        let mut warnings = p.warnings;
        let of_working_tasks = measured.iter().filter(|t| t.work.is_some()).map(|t| t.summary.missed).sum();
        let runtime = p.runtime.as_ref().map(|r| format!("{} ({})", r.kind, r.method));
        warnings.extend(standard_warnings(&all, (p.missed_known, of_working_tasks), p.kind, lost, runtime));
        let degraded = warnings.iter().any(Warning::is_downgrade);
        let config = p.config.map(|c| super::Config { degraded, ..c });
        let noise = p.noise.map(|n| super::NoiseConfig { degraded, ..n });
        let cpus = CpuSet::from_cpus(measured.iter().filter_map(|t| t.cpu));
        let inputs: Vec<VerdictInput> = measured.iter().map(|t| (t.thread, t.cpu, &t.summary, t.break_hit)).collect();
        let subject: Vec<&ThreadResult> = threads.iter().filter(|t| Some(t.thread) != control).collect();
        RunResult {
            schema: SCHEMA.into(),
            tool: Tool::this(),
            command_line: p.command_line,
            start_time: p.start.map(rfc3339),
            end_time: end.map(rfc3339),
            duration_s,
            end_reason: p.end_reason,
            simulated: p.simulated,
            source: p.source,
            environment: p.environment,
            config,
            all: AllResult {
                threads: measured.len(),
                policy: match common(&subject, |t| t.policy) {
                    Some(Some(Some(p))) => Some(p.to_string()),
                    Some(None) => Some("mixed".into()),
                    _ => None,
                },
                priority: common(&subject, |t| t.priority).flatten().flatten(),
                cpu: (!cpus.is_empty()).then(|| cpus.to_string()),
                max_at_thread: all.max_at_thread,
                stats: all_stats.clone(),
                work: all_work(&p.probes, layout, at),
            },
            verdict: verdict(&inputs, p.threshold_ns, at, p.tracemark_written, p.kind == crate::result::Kind::Noise)
                .with_work(
                    &p.probes
                        .iter()
                        .filter_map(|t| Some((t.thread, t.name.as_deref(), t.work.as_ref()?)))
                        .collect::<Vec<_>>(),
                    p.max_response_ns,
                    p.max_misses,
                )
                .with_lost_events(lost_events),
            loads: Vec::new(),
            warnings: warnings.into_iter().map(WarningRecord::from).collect(),
            runtime: p.runtime.map(|r| with_excess(r, &all_stats, &threads)),
            threads,
            explanations: p.explanations,
            explain: p.explain,
            kind: p.kind,
            noise,
            watch: p.watch,
            rt_app: p.rt_app.map(|f| f.into_run(at)),
            cost: p.cost,
        }
    }
}

/// When the run ended and how long it lasted (s), from its start and end or its duration.
fn span(p: &ProbeRun) -> (Option<SystemTime>, Option<f64>) {
    let end = p.end.or_else(|| p.start.zip(p.duration_s).map(|(s, d)| s + Duration::from_secs_f64(d.max(0.0))));
    let duration_s = match (p.start, p.end) {
        (Some(s), Some(e)) => Some(e.duration_since(s).unwrap_or_default().as_secs_f64()),
        _ => p.duration_s,
    };
    (end, duration_s)
}

/// A runtime's section with its control's comparison filled in: per percentile and for the
/// maximum, the runtime's lateness (`all`) minus the control thread's.
fn with_excess(mut r: Runtime, all: &Stats, threads: &[ThreadResult]) -> Runtime {
    if let Some(c) = r.control.as_mut() {
        let Some(control) = threads.iter().find(|t| t.thread == c.thread).map(|t| &t.stats) else { return r };
        let minus = |a: Option<i64>, b: Option<i64>| a.zip(b).map(|(a, b)| a - b);
        c.excess_ns = all
            .percentiles_ns
            .iter()
            .map(|(k, v)| (k.clone(), minus(*v, control.percentiles_ns.get(k).copied().flatten())))
            .collect();
        c.excess_ns.insert("max".into(), minus(all.max_ns, control.max_ns));
    }
    r
}

/// Trace events a run lost: a watch's (its figures are made of them) and those of the trace
/// that explains late wakeups or attributes noise (only the explanations miss them).
#[derive(Clone, Copy, Debug, Default)]
struct Lost {
    watched: u64,
    explained: u64,
}

/// The warnings every result carries when they apply: missed periods, negative latencies, no
/// samples, an inexact stdev, trace events lost. `missed_known` with how many of the missed
/// periods are working tasks'; `runtime` names a runtime's probe (`node (interval)`).
fn standard_warnings(
    all: &Summary,
    (missed_known, of_working_tasks): (bool, u64),
    kind: crate::result::Kind,
    lost: Lost,
    runtime: Option<String>,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if missed_known && all.missed > 0 {
        warnings.push(Warning::MissedPeriods { count: all.missed, of_working_tasks });
    }
    if all.negative > 0 {
        warnings.push(Warning::NegativeLatencies { count: all.negative, runtime });
    }
    // A noise run without a single gap is a clean CPU, not an empty measurement.
    if all.cycles == 0 && kind != crate::result::Kind::Noise {
        warnings.push(Warning::NoSamples);
    }
    if all.sum_sq_overflow.is_some() {
        warnings.push(Warning::StdevInexact);
    }
    if lost.watched > 0 {
        warnings.push(Warning::EventsLost { count: lost.watched });
    }
    if lost.explained > 0 {
        warnings.push(Warning::AttributionEventsLost { count: lost.explained });
    }
    warnings
}

/// What a run knows of `st`: no missed count when the probe cannot tell, no date for the
/// maximum without a start time.
fn known_stats(mut st: Stats, missed_known: bool, dated: bool) -> Stats {
    if !missed_known {
        st.missed = None;
    }
    if !dated {
        st.max_at_time = None;
    }
    st
}

/// One probe's result: its figures as stored, dated from `at`.
fn thread_result(t: &ProbeFigures, at: SystemTime, known: &dyn Fn(Stats) -> Stats) -> ThreadResult {
    let o = t.obtained.as_ref();
    ThreadResult {
        thread: t.thread,
        name: t.name.clone(),
        work: t.work.as_ref().map(|w| work_of(w, at)),
        cpu: t.cpu,
        cpus_allowed: o.map(|o| o.cpus_allowed.to_string()),
        last_cpu: o.and_then(|o| o.last_cpu),
        policy: o.map(|o| o.sched.policy),
        priority: o.map(|o| o.sched.priority),
        deadline: o.and_then(|o| deadline_of(&o.sched)),
        interval_ns: Some(t.interval_ns),
        timer_slack_ns: o.and_then(|o| o.timer_slack_ns),
        drift_ns: t.drift_ns,
        samples_lost: t.samples_lost,
        stats: known(stats_of(&t.summary, at)),
        logs: t.logs.clone(),
        noise: t.noise.clone(),
        series: t.series.clone(),
        watch: t.watch.as_ref().map(|w| super::watch::WatchThread {
            irq: (w.irq.cycles > 0).then(|| stats_of(&w.irq, at)),
            thread: (w.switch.cycles > 0).then(|| stats_of(&w.switch, at)),
            user: (w.user.cycles > 0).then(|| stats_of(&w.user, at)),
            ..w.thread.clone()
        }),
    }
}

/// A summary's statistics as stored; `start` dates the maximum.
pub fn stats_of(s: &Summary, start: SystemTime) -> Stats {
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
        exceedances: s.over.threshold_ns().map(|threshold_ns| super::exceed::Exceedances {
            threshold_ns,
            samples: s.over.count,
            bursts: s.over.bursts,
            rate: None,
        }),
        histogram: Some(HistogramRecord {
            bucket_ns: s.counts.layout().bucket_ns,
            range_ns: s.counts.layout().range_ns,
            buckets: s.counts.nonzero().map(|(lo_ns, hi_ns, count)| Bucket { lo_ns, hi_ns, count }).collect(),
            unbinned: None,
        }),
        uncertainty: None,
        prediction: None,
    }
}

/// A working task's figures as stored; `start` dates the maxima.
pub fn work_of(w: &WorkSummary, start: SystemTime) -> WorkResult {
    let deadline = w.spec.deadline_ns;
    let known = (deadline != crate::measure::work::NO_DEADLINE).then_some(deadline);
    WorkResult {
        kind: Some(w.spec.kind),
        work_ns: (w.spec.kind != crate::measure::work::WorkKind::Observed).then_some(w.spec.amount_ns),
        deadline_ns: known,
        calibration: w.calibration,
        response: stats_of(&w.response, start),
        run: stats_of(&w.run, start),
        slack_min_ns: known.and_then(|d| w.response.max_ns.map(|r| d - r)),
        slack_max_ns: known.and_then(|d| w.response.min_ns.map(|r| d - r)),
        miss_ratio: w.deadlines.miss_ratio(),
        deadlines: w.deadlines,
    }
}

/// Every working task together: the response and run histograms merge, counts add, the
/// slack spans every task's; work and deadline are stated when every task has the same.
fn all_work(probes: &[ProbeFigures], layout: Layout, start: SystemTime) -> Option<WorkResult> {
    let works: Vec<(usize, &WorkSummary)> = probes.iter().filter_map(|p| Some((p.thread, p.work.as_ref()?))).collect();
    let first = works.first()?.1;
    let (mut response, mut run) = (Summary::empty(layout), Summary::empty(layout));
    let mut deadlines = crate::measure::work::DeadlineFigures { window: first.deadlines.window, ..Default::default() };
    let (mut slack_min, mut slack_max) = (None::<i64>, None::<i64>);
    for (thread, w) in &works {
        response.merge(&w.response, *thread);
        run.merge(&w.run, *thread);
        deadlines.merge(&w.deadlines);
        let d = w.spec.deadline_ns;
        if d == crate::measure::work::NO_DEADLINE {
            continue;
        }
        if let Some(r) = w.response.max_ns {
            slack_min = Some(slack_min.map_or(d - r, |s| s.min(d - r)));
        }
        if let Some(r) = w.response.min_ns {
            slack_max = Some(slack_max.map_or(d - r, |s| s.max(d - r)));
        }
    }
    let same = |f: &dyn Fn(&WorkSummary) -> i64| works.iter().all(|(_, w)| f(w) == f(first)).then(|| f(first));
    Some(WorkResult {
        kind: works.iter().all(|(_, w)| w.spec.kind == first.spec.kind).then_some(first.spec.kind),
        work_ns: same(&|w| w.spec.amount_ns),
        deadline_ns: same(&|w| w.spec.deadline_ns).filter(|d| *d != crate::measure::work::NO_DEADLINE),
        calibration: if works.len() == 1 { first.calibration } else { None },
        response: stats_of(&response, start),
        run: stats_of(&run, start),
        slack_min_ns: slack_min,
        slack_max_ns: slack_max,
        miss_ratio: deadlines.miss_ratio(),
        deadlines,
    })
}

/// The SCHED_DEADLINE parameters of `p`, when it is SCHED_DEADLINE.
pub fn deadline_of(p: &SchedParams) -> Option<DeadlineParams> {
    (p.policy == Policy::Deadline).then_some(DeadlineParams {
        runtime_ns: p.runtime_ns,
        deadline_ns: p.deadline_ns,
        period_ns: p.period_ns,
    })
}

/// `Some(Some(v))` when every thread has `v`, `Some(None)` when they differ, `None` when
/// there is no thread.
fn common<T: PartialEq + Copy>(threads: &[&ThreadResult], f: impl Fn(&ThreadResult) -> T) -> Option<Option<T>> {
    let first = f(threads.first()?);
    Some(threads.iter().all(|t| f(t) == first).then_some(first))
}

/// What another tool's file says of its run besides the threads.
#[derive(Clone, Debug, Default)]
pub struct Stated {
    /// The tool's command line.
    pub command_line: Option<String>,
    /// The tool's version.
    pub tool_version: Option<String>,
    /// Start (RFC 3339).
    pub start_time: Option<String>,
    /// End (RFC 3339).
    pub end_time: Option<String>,
    /// What the file says of the machine.
    pub environment: Option<Environment>,
}

/// A run as another tool printed it (cyclictest's files): per-thread statistics stated, not
/// samples, so the aggregate is combined from them.
#[derive(Clone, Debug)]
pub struct StatedRun {
    /// The threads as stated.
    pub threads: Vec<ThreadResult>,
    /// The rest the file says.
    pub stated: Stated,
    /// The file and its format.
    pub source: Source,
}

impl RunResult {
    /// Builds a result from statistics another tool printed (no verdict: no threshold was set).
    pub fn from_stated(s: StatedRun) -> RunResult {
        let p = s.stated;
        let duration_s = match (&p.start_time, &p.end_time) {
            (Some(a), Some(b)) => crate::timefmt::parse_rfc3339(a)
                .zip(crate::timefmt::parse_rfc3339(b))
                .and_then(|(a, b)| b.duration_since(a).ok())
                .map(|d| d.as_secs_f64()),
            _ => None,
        };
        RunResult {
            schema: SCHEMA.into(),
            tool: Tool::this(),
            command_line: p
                .command_line
                .as_deref()
                .map(|c| c.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            start_time: p.start_time,
            end_time: p.end_time,
            duration_s,
            end_reason: EndReason::Unknown,
            simulated: false,
            source: Some(s.source),
            environment: p.environment.unwrap_or_else(Environment::unknown),
            config: None,
            all: all_of(&s.threads),
            threads: s.threads,
            loads: vec![],
            warnings: vec![],
            verdict: super::Verdict::not_checked(),
            runtime: None,
            explanations: Vec::new(),
            explain: None,
            kind: crate::result::Kind::Wakeup,
            noise: None,
            watch: None,
            rt_app: None,
            cost: None,
        }
    }
}

/// Percentiles from a stored histogram: exact where the nearest rank falls in a bucket,
/// bounded ("at least") where it falls among the unbinned overflows.
pub fn percentiles(
    h: &HistogramRecord,
    cycles: u64,
    max_ns: Option<i64>,
) -> (BTreeMap<String, Option<i64>>, BTreeMap<String, i64>) {
    let mut exact = BTreeMap::new();
    let mut above = BTreeMap::new();
    for (k, q) in PERCENTILES {
        let edge = nearest_rank_edge(h.buckets.iter().map(|b| (b.hi_ns, b.count)), cycles, q);
        let value = edge.map(|hi| i64::try_from(hi).unwrap_or(i64::MAX)).map(|top| max_ns.map_or(top, |m| top.min(m)));
        if value.is_none() && cycles > 0 {
            above.insert(k.to_string(), h.unbinned.map_or(0, |u| u.at_least_ns as i64));
        }
        exact.insert(k.to_string(), value);
    }
    (exact, above)
}

/// All threads together: counts add up, min and max combine, the mean is the
/// cycle-weighted mean of the printed averages, histograms merge when every thread has one.
fn all_of(threads: &[ThreadResult]) -> AllResult {
    let stats: Vec<&Stats> = threads.iter().map(|t| &t.stats).collect();
    let cycles: u64 = stats.iter().map(|s| s.cycles).sum();
    let max_thread =
        threads.iter().filter(|t| t.stats.max_ns.is_some()).max_by_key(|t| t.stats.max_ns).map(|t| t.thread);
    let mean = if cycles > 0 && stats.iter().all(|s| s.cycles == 0 || s.mean_ns.is_some()) {
        Some(stats.iter().map(|s| s.mean_ns.unwrap_or(0.0) * s.cycles as f64).sum::<f64>() / cycles as f64)
    } else {
        None
    };
    let histogram = if stats.iter().all(|s| s.histogram.is_some()) && !stats.is_empty() {
        let hs: Vec<&HistogramRecord> = stats.iter().filter_map(|s| s.histogram.as_ref()).collect();
        let mut counts: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for b in hs.iter().flat_map(|h| h.buckets.iter()) {
            *counts.entry((b.lo_ns, b.hi_ns)).or_default() += b.count;
        }
        let unbinned_count: u64 = hs.iter().filter_map(|h| h.unbinned).map(|u| u.count).sum();
        let at_least = hs.iter().filter_map(|h| h.unbinned).map(|u| u.at_least_ns).min();
        Some(HistogramRecord {
            bucket_ns: hs[0].bucket_ns,
            range_ns: hs.iter().map(|h| h.range_ns).min().unwrap_or(0),
            buckets: counts.into_iter().map(|((lo_ns, hi_ns), count)| Bucket { lo_ns, hi_ns, count }).collect(),
            unbinned: at_least.map(|a| Unbinned { count: unbinned_count, at_least_ns: a }),
        })
    } else {
        None
    };
    let max_ns = stats.iter().filter_map(|s| s.max_ns).max();
    let (percentiles_ns, percentiles_above_ns) = match &histogram {
        Some(h) => percentiles(h, cycles, max_ns),
        None => (PERCENTILES.iter().map(|(k, _)| (k.to_string(), None)).collect(), BTreeMap::new()),
    };
    let missed = stats.iter().map(|s| s.missed).sum::<Option<u64>>();
    AllResult {
        threads: threads.len(),
        policy: None,
        priority: None,
        cpu: None,
        max_at_thread: max_thread,
        stats: Stats {
            cycles,
            missed,
            negative: None,
            min_ns: stats.iter().filter_map(|s| s.min_ns).min(),
            max_ns,
            max_at_cycle: None,
            max_at_ns: None,
            max_at_time: None,
            mean_ns: mean,
            mean_us_truncated: None,
            stdev_ns: None,
            percentiles_ns,
            percentiles_above_ns,
            over_threshold: 0,
            exceedances: None,
            histogram,
            uncertainty: None,
            prediction: None,
        },
        work: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings_for(lost: Lost) -> Vec<Warning> {
        standard_warnings(&Summary::empty(Layout::DEFAULT), (true, 0), crate::result::Kind::Noise, lost, None)
    }

    #[test]
    fn events_the_attributing_trace_lost_are_a_warning_about_the_explanations_not_about_the_figures() {
        let w = warnings_for(Lost { watched: 0, explained: 161_724 });
        assert_eq!(w, vec![Warning::AttributionEventsLost { count: 161_724 }]);
        assert!(warnings_for(Lost::default()).is_empty());
    }

    #[test]
    fn events_a_watch_lost_are_the_figures_own_warning_and_said_once() {
        let w = warnings_for(Lost { watched: 12, explained: 0 });
        assert_eq!(w, vec![Warning::EventsLost { count: 12 }]);
    }
}
