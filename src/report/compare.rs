//! Comparison of runs: the same statistics side by side, per thread and for all threads, with
//! each run's difference to and ratio against the first (the baseline); the differences of
//! their environments and configurations; and the regression check of `--fail-if-worse`.

use crate::import::input::{Content, Input};
use crate::result::{RunResult, Stats};
use serde_json::Value;

/// A metric of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Samples.
    Samples,
    /// Minimum.
    Min,
    /// Mean.
    Mean,
    /// Standard deviation.
    Stdev,
    /// A percentile (its key: `99.9`).
    Percentile(&'static str),
    /// Maximum.
    Max,
    /// Missed periods.
    Missed,
}

/// The rows of every table, in order.
pub const METRICS: [Metric; 12] = [
    Metric::Samples,
    Metric::Min,
    Metric::Mean,
    Metric::Stdev,
    Metric::Percentile("50"),
    Metric::Percentile("90"),
    Metric::Percentile("99"),
    Metric::Percentile("99.9"),
    Metric::Percentile("99.99"),
    Metric::Percentile("99.999"),
    Metric::Max,
    Metric::Missed,
];

impl Metric {
    /// The row label: `p99.9`, `max`.
    pub fn name(self) -> String {
        match self {
            Metric::Samples => "samples".into(),
            Metric::Min => "min".into(),
            Metric::Mean => "mean".into(),
            Metric::Stdev => "stdev".into(),
            Metric::Percentile(k) => format!("p{k}"),
            Metric::Max => "max".into(),
            Metric::Missed => "missed".into(),
        }
    }

    /// True for latencies (shown in µs), false for counts.
    pub fn is_latency(self) -> bool {
        !matches!(self, Metric::Samples | Metric::Missed)
    }

    /// Parses `p99`, `99.9`, `max`, `mean`, `min`, `stdev` (for `--percentile`).
    pub fn parse(s: &str) -> Result<Metric, String> {
        let t = s.trim().to_ascii_lowercase();
        let key = t.strip_prefix('p').unwrap_or(&t);
        match key {
            "min" => return Ok(Metric::Min),
            "mean" | "avg" => return Ok(Metric::Mean),
            "stdev" => return Ok(Metric::Stdev),
            "max" | "100" => return Ok(Metric::Max),
            _ => {}
        }
        crate::measure::histogram::PERCENTILES
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(k, _)| Metric::Percentile(k))
            .ok_or_else(|| {
                format!("'{s}' is not a percentile rtlab reports; use 50, 90, 99, 99.9, 99.99, 99.999, max or mean")
            })
    }

    /// The value of this metric (ns or a count), and whether it is only a lower bound
    /// (imported percentiles among histogram overflows).
    pub fn value(self, s: &Stats) -> Option<(f64, bool)> {
        let v = |x: Option<i64>| x.map(|v| (v as f64, false));
        match self {
            Metric::Samples => Some((s.cycles as f64, false)),
            Metric::Min => v(s.min_ns),
            Metric::Mean => s.mean_ns.map(|m| (m, false)),
            Metric::Stdev => s.stdev_ns.map(|m| (m, false)),
            Metric::Percentile(k) => {
                match (s.percentiles_ns.get(k).copied().flatten(), s.percentiles_above_ns.get(k)) {
                    (Some(x), _) => Some((x as f64, false)),
                    (None, Some(lo)) => Some((*lo as f64, true)),
                    _ => None,
                }
            }
            Metric::Max => v(s.max_ns),
            Metric::Missed => s.missed.map(|m| (m as f64, false)),
        }
    }
}

/// The title of the working tasks' section: response times, `missed` counting deadline misses.
pub const RESPONSE_SECTION: &str = "response time, all working tasks (missed = deadline misses)";

/// What `--fail-if-worse` checks: a metric of the latency or of the response time (`misses`:
/// the deadline misses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// Of the working tasks' response time (else the wakeup latency).
    pub response: bool,
    /// The metric.
    pub metric: Metric,
}

impl Check {
    /// Parses `99`, `p99.9`, `max`, `mean` (latency), `response:99`, `response:max`, or
    /// `misses` (deadline misses).
    pub fn parse(s: &str) -> Result<Check, String> {
        let t = s.trim().to_ascii_lowercase();
        if t == "misses" {
            return Ok(Check { response: true, metric: Metric::Missed });
        }
        match t.strip_prefix("response:") {
            Some(m) => Metric::parse(m).map(|metric| Check { response: true, metric }),
            None => Metric::parse(&t).map(|metric| Check { response: false, metric }),
        }
        .map_err(|e| format!("{e}; or response:P for the response time, or misses"))
    }

    /// `p99`, `response p99`, `deadline misses`.
    pub fn name(self) -> String {
        match (self.response, self.metric) {
            (true, Metric::Missed) => "deadline misses".into(),
            (true, m) => format!("response {}", m.name()),
            (false, m) => m.name(),
        }
    }
}

/// One cell: a value (ns or count), `at_least` when only a lower bound is known.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    /// The value.
    pub value: f64,
    /// Only a lower bound.
    pub at_least: bool,
}

/// One row: a metric across the runs, with differences to and ratios against the baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The metric.
    pub metric: Metric,
    /// One cell per run (`None`: not known).
    pub cells: Vec<Option<Cell>>,
    /// Run − baseline, per run (`None` for the baseline and when either is unknown or a bound).
    pub diffs: Vec<Option<f64>>,
    /// Run ÷ baseline, per run (`None` also when the baseline is 0).
    pub ratios: Vec<Option<f64>>,
}

/// One table: all threads, working tasks' response, one thread index, one hand-off pair or one
/// mutex's waits.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// `all threads`, `thread 2`, `hand-off a → b (resume b)`, …
    pub title: String,
    /// A table of one measuring thread (the ones left out of a long comparison).
    pub per_thread: bool,
    /// Rows in [`METRICS`] order (only metrics some run knows).
    pub rows: Vec<Row>,
}

/// A setting that differs between the runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// `environment.kernel_release`, `config.interval`…
    pub field: String,
    /// Each run's value (`-` when unknown).
    pub values: Vec<String>,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The runs' names (the first is the baseline).
    pub names: Vec<String>,
    /// All threads first, then each thread index.
    pub sections: Vec<Section>,
    /// What differs between the runs' environments and configurations.
    pub differences: Vec<Difference>,
    /// Per run that has them, its all-threads intervals: the run's name, how they were found,
    /// then the cells of `result::uncertainty::SHOWN` (µs).
    pub intervals: Vec<Vec<String>>,
}

/// Every run of the inputs with its name (a sweep gives one run per point).
pub fn runs(inputs: &[Input]) -> Vec<(String, &RunResult)> {
    let mut out = Vec::new();
    for i in inputs {
        match &i.content {
            Content::Run(r) => out.push((i.name.clone(), r.as_ref())),
            Content::Sweep(_, points) => {
                out.extend(points.iter().map(|p| (format!("{}/{}", i.name, p.point.label), &p.result)))
            }
        }
    }
    out
}

fn row(metric: Metric, stats: &[Option<&Stats>]) -> Row {
    let cells: Vec<Option<Cell>> = stats
        .iter()
        .map(|s| s.and_then(|s| metric.value(s)).map(|(value, at_least)| Cell { value, at_least }))
        .collect();
    let base = cells.first().copied().flatten().filter(|c| !c.at_least);
    let exact = |c: &Option<Cell>| c.filter(|c| !c.at_least);
    let diffs = cells
        .iter()
        .enumerate()
        .map(|(i, c)| if i == 0 { None } else { exact(c).zip(base).map(|(c, b)| c.value - b.value) })
        .collect();
    let ratios = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if i == 0 {
                None
            } else {
                exact(c).zip(base).filter(|(_, b)| b.value != 0.0).map(|(c, b)| c.value / b.value)
            }
        })
        .collect();
    Row { metric, cells, diffs, ratios }
}

fn section(title: String, stats: &[Option<&Stats>]) -> Section {
    let rows = METRICS.iter().map(|m| row(*m, stats)).filter(|r| r.cells.iter().any(Option::is_some)).collect();
    Section { title, per_thread: false, rows }
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                flatten(&format!("{prefix}.{k}"), x, out);
            }
        }
        Value::Null => out.push((prefix.to_string(), "-".into())),
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// The machine as `(environment.field, value)`, nested fields dotted (the per-CPU NUMA list
/// and the doctor's report left out: [`settings`] lists the doctor's findings one by one).
pub fn environment_settings(env: &crate::sysinfo::Environment) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut v = serde_json::to_value(env).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("numa_node_of_cpu");
        o.remove("doctor");
    }
    flatten("environment", &v, &mut out);
    out
}

/// The settings that say how a run was measured, as `(field, value)`.
pub fn settings(r: &RunResult) -> Vec<(String, String)> {
    let mut out = environment_settings(&r.environment);
    let mut config = serde_json::to_value(&r.config).unwrap_or_default();
    if let Some(o) = config.as_object_mut() {
        o.retain(|k, _| !k.ends_with("_obtained"));
    }
    flatten("config", &config, &mut out);
    let loads: Vec<&str> = r.loads.iter().map(|l| l.spec.as_str()).collect();
    out.push(("loads".into(), if loads.is_empty() { "none".into() } else { loads.join(" + ") }));
    out.push(("source".into(), r.source.as_ref().map_or_else(|| "rtlab run".into(), |s| s.format.clone())));
    if let Some(s) = &r.source {
        out.push(("source.tool_version".into(), s.tool_version.clone().unwrap_or_else(|| "-".into())));
        out.push(("source.command_line".into(), s.command_line.clone().unwrap_or_else(|| "-".into())));
    }
    out.push(("simulated".into(), r.simulated.to_string()));
    if let Some(a) = &r.rt_app {
        out.push(("rt_app.file".into(), a.file.clone()));
        out.push(("rt_app.pi_enabled".into(), a.pi_enabled.to_string()));
    }
    // --explain: the share of each cause over every explained sample, so two runs compare by
    // where their latency went.
    if !r.explanations.is_empty() {
        let total: i64 = r.explanations.iter().map(|e| e.latency_ns).sum();
        let mut by: Vec<(crate::trace::Cause, i64)> = Vec::new();
        for p in r.explanations.iter().flat_map(|e| &e.parts) {
            match by.iter_mut().find(|(c, _)| *c == p.cause) {
                Some(x) => x.1 += p.ns,
                None => by.push((p.cause, p.ns)),
            }
        }
        by.sort_by_key(|(c, _)| *c);
        for (c, ns) in by {
            out.push((format!("explained.{}", c.label()), format!("{:.1} %", ns as f64 * 100.0 / total.max(1) as f64)));
        }
    }
    if let Some(d) = &r.environment.doctor {
        out.extend(d.checks.iter().map(|c| (format!("doctor.{}", c.id), c.comparable())));
    }
    out.extend(noise_settings(r));
    out
}

/// A noise run's settings (`noise.threshold_ns`, …) and, per CPU, what it measured: the share
/// available, the noise per second, the largest single noise and the noises by source
/// (`noise.cpu1.available_pct`, `noise.cpu1.irq`), so two noise runs compare side by side.
pub fn noise_settings(r: &RunResult) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(cfg) = &r.noise else { return out };
    let mut v = serde_json::to_value(cfg).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.retain(|k, _| !k.ends_with("_obtained"));
    }
    flatten("noise", &v, &mut out);
    for t in &r.threads {
        let Some(n) = &t.noise else { continue };
        let cpu = format!("noise.cpu{}", t.cpu.unwrap_or(t.thread));
        out.push((format!("{cpu}.available_pct"), format!("{:.5}", n.available_pct)));
        out.push((format!("{cpu}.noise_us_per_s"), format!("{:.1}", n.noise_per_s_ns / 1e3)));
        out.push((format!("{cpu}.noises_per_s"), format!("{:.1}", n.noises_per_s)));
        out.push((
            format!("{cpu}.max_single_us"),
            t.stats.max_ns.map_or("-".into(), |m| format!("{:.1}", m as f64 / 1e3)),
        ));
        out.push((format!("{cpu}.loop_ns"), format!("{:.1}", n.loop_ns)));
        if let Some(src) = &n.sources {
            for s in crate::trace::noise::Source::ALL {
                let f = src.of(s);
                out.push((
                    format!("{cpu}.{}", s.label().to_lowercase()),
                    format!("{} ({:.1} µs)", f.count, f.ns as f64 / 1e3),
                ));
            }
        }
    }
    out
}

/// The hand-off and lock-wait sections of rt-app use cases, one per pair or mutex seen in any
/// run, in the order they first appear.
fn rt_app_sections(runs: &[(String, &RunResult)]) -> Vec<Section> {
    let mut titles: Vec<String> = Vec::new();
    let mut keyed: Vec<Vec<(String, &Stats)>> = Vec::new();
    for (_, r) in runs {
        let Some(a) = &r.rt_app else {
            keyed.push(Vec::new());
            continue;
        };
        let handoffs =
            a.handoffs.iter().map(|h| (format!("hand-off {} → {} ({} {})", h.from, h.to, h.via, h.resource), &h.stats));
        let waits = a.lock_waits.iter().map(|w| (format!("lock wait {} on {}", w.task, w.mutex), &w.stats));
        let these: Vec<(String, &Stats)> = handoffs.chain(waits).collect();
        for (t, _) in &these {
            if !titles.contains(t) {
                titles.push(t.clone());
            }
        }
        keyed.push(these);
    }
    titles
        .into_iter()
        .map(|t| {
            let stats: Vec<Option<&Stats>> =
                keyed.iter().map(|k| k.iter().find(|(title, _)| *title == t).map(|(_, s)| *s)).collect();
            section(t, &stats)
        })
        .collect()
}

/// Compares `runs` (the first is the baseline).
pub fn compare(runs: &[(String, &RunResult)]) -> Comparison {
    let names = runs.iter().map(|(n, _)| n.clone()).collect();
    let mut sections =
        vec![section("all threads".into(), &runs.iter().map(|(_, r)| Some(&r.all.stats)).collect::<Vec<_>>())];
    let mut indices: Vec<usize> = runs.iter().flat_map(|(_, r)| r.threads.iter().map(|t| t.thread)).collect();
    indices.sort_unstable();
    indices.dedup();
    let responses: Vec<Option<Stats>> = runs.iter().map(|(_, r)| response_stats(r)).collect();
    if responses.iter().any(Option::is_some) {
        sections.push(section(RESPONSE_SECTION.into(), &responses.iter().map(Option::as_ref).collect::<Vec<_>>()));
    }
    for i in indices {
        let stats: Vec<Option<&Stats>> =
            runs.iter().map(|(_, r)| r.threads.iter().find(|t| t.thread == i).map(|t| &t.stats)).collect();
        sections.push(Section { per_thread: true, ..section(format!("thread {i}"), &stats) });
    }
    sections.extend(rt_app_sections(runs));
    let all: Vec<Vec<(String, String)>> = runs.iter().map(|(_, r)| settings(r)).collect();
    let mut fields: Vec<String> = Vec::new();
    for s in &all {
        for (k, _) in s {
            if !fields.contains(k) {
                fields.push(k.clone());
            }
        }
    }
    // Findings compare only between runs the doctor examined (not with imported data).
    let examined = runs.iter().all(|(_, r)| r.environment.doctor.is_some());
    let differences = fields
        .into_iter()
        .filter(|f| examined || !f.starts_with("doctor."))
        .filter_map(|f| {
            let values: Vec<String> = all
                .iter()
                .map(|s| s.iter().find(|(k, _)| *k == f).map_or_else(|| "-".into(), |(_, v)| v.clone()))
                .collect();
            // A counter the doctor sampled for a second names the IRQs and softirqs that happened
            // to fire then: one seen in one run and not in another is sampling jitter, not a
            // difference of the machines.
            let jitter = f.starts_with("doctor.")
                && crate::doctor::SAMPLED.iter().any(|p| f["doctor.".len()..].starts_with(p))
                && values.iter().any(|v| v == "-");
            (!jitter && values.iter().any(|v| *v != values[0])).then_some(Difference { field: f, values })
        })
        .collect();
    Comparison { names, sections, differences, intervals: interval_rows(runs) }
}

/// Per run that has them, its all-threads intervals: the run's name, how they were found, then
/// the cells of `result::uncertainty::SHOWN` (µs).
fn interval_rows(runs: &[(String, &RunResult)]) -> Vec<Vec<String>> {
    runs.iter()
        .filter_map(|(n, r)| {
            let x = r.all.stats.uncertainty.as_ref()?;
            let mut row = vec![n.clone(), crate::result::uncertainty::method_text(x, r.all.stats.cycles)];
            row.extend(crate::result::uncertainty::cells(&r.all.stats, crate::units::Unit::Micros));
            Some(row)
        })
        .collect()
}

/// A run's working tasks' response times, `missed` standing for their deadline misses.
fn response_stats(r: &RunResult) -> Option<Stats> {
    r.all.work.as_ref().map(|w| Stats { missed: Some(w.deadlines.misses), ..w.response.clone() })
}

/// The figures two groups of runs are compared on: latencies, of which a ratio says something.
pub const GROUP_METRICS: [Metric; 9] = [
    Metric::Min,
    Metric::Mean,
    Metric::Percentile("50"),
    Metric::Percentile("90"),
    Metric::Percentile("99"),
    Metric::Percentile("99.9"),
    Metric::Percentile("99.99"),
    Metric::Percentile("99.999"),
    Metric::Max,
];

/// One figure of two groups: each run's value (ns) and B ÷ A.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRow {
    /// The figure.
    pub metric: Metric,
    /// Group A's runs' values (ns), in input order (only when every run knows it exactly).
    pub a: Vec<f64>,
    /// Group B's.
    pub b: Vec<f64>,
    /// B ÷ A with its interval and verdict (`None`: a run does not know it exactly, or a value
    /// is 0).
    pub ratio: Option<crate::measure::groups::Ratio>,
}

/// One table of a group comparison: all threads, or the working tasks' response.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupSection {
    /// `all threads` or [`RESPONSE_SECTION`].
    pub title: String,
    /// Rows in [`GROUP_METRICS`] order.
    pub rows: Vec<GroupRow>,
}

/// Two groups of runs compared figure by figure (`rtlab compare A… --vs B…`).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupComparison {
    /// Group A's runs (the baseline).
    pub a: Vec<String>,
    /// Group B's.
    pub b: Vec<String>,
    /// The margin of the verdicts (%).
    pub margin_pct: f64,
    /// All threads first, then (when every run has working tasks) their response.
    pub sections: Vec<GroupSection>,
    /// Each run's own intervals, as [`Comparison::intervals`] (A's runs, then B's).
    pub intervals: Vec<Vec<String>>,
}

fn group_section(title: &str, a: &[Option<Stats>], b: &[Option<Stats>], margin_pct: f64) -> GroupSection {
    let values = |side: &[Option<Stats>], m: Metric| -> Option<Vec<f64>> {
        side.iter().map(|s| s.as_ref().and_then(|s| m.value(s)).filter(|(_, bound)| !bound).map(|(v, _)| v)).collect()
    };
    let rows = GROUP_METRICS
        .iter()
        .map(|m| {
            let (a, b) = (values(a, *m).unwrap_or_default(), values(b, *m).unwrap_or_default());
            let ratio = crate::measure::groups::compare(&a, &b, margin_pct);
            GroupRow { metric: *m, a, b, ratio }
        })
        .collect();
    GroupSection { title: title.into(), rows }
}

/// Compares group `b` against group `a` (each run one figure per metric), verdicts for a margin
/// of `margin_pct` percent.
pub fn compare_groups(a: &[(String, &RunResult)], b: &[(String, &RunResult)], margin_pct: f64) -> GroupComparison {
    let all = |side: &[(String, &RunResult)]| -> Vec<Option<Stats>> {
        side.iter().map(|(_, r)| Some(r.all.stats.clone())).collect()
    };
    let mut sections = vec![group_section("all threads", &all(a), &all(b), margin_pct)];
    let response =
        |side: &[(String, &RunResult)]| -> Vec<Option<Stats>> { side.iter().map(|(_, r)| response_stats(r)).collect() };
    let (ra, rb) = (response(a), response(b));
    if ra.iter().chain(&rb).all(Option::is_some) {
        sections.push(group_section(RESPONSE_SECTION, &ra, &rb, margin_pct));
    }
    let names = |side: &[(String, &RunResult)]| side.iter().map(|(n, _)| n.clone()).collect();
    let both: Vec<(String, &RunResult)> = a.iter().chain(b).cloned().collect();
    GroupComparison { a: names(a), b: names(b), margin_pct, sections, intervals: interval_rows(&both) }
}

/// The row `check` looks at in a group comparison; an error when it cannot be judged.
pub fn group_check(g: &GroupComparison, check: Check) -> Result<&GroupRow, String> {
    let title = if check.response { RESPONSE_SECTION } else { "all threads" };
    let section = g.sections.iter().find(|s| s.title == title).ok_or_else(|| {
        format!("{} compares response times, but not every run has working tasks (rtlab run --work)", check.name())
    })?;
    section.rows.iter().find(|r| r.metric == check.metric && r.ratio.is_some()).ok_or_else(|| {
        format!(
            "{}: groups are compared on a latency that every run knows exactly and above 0; use --percentile 99, 99.9 or max",
            check.name()
        )
    })
}

/// A run that is worse than the baseline by more than the allowed percentage.
#[derive(Clone, Debug, PartialEq)]
pub struct Regression {
    /// The run's name.
    pub name: String,
    /// Its value (ns).
    pub value: f64,
    /// The baseline's value (ns).
    pub baseline: f64,
    /// How much worse, in percent.
    pub worse_pct: f64,
}

/// The all-threads `check` of each run against the baseline's: runs more than `pct` percent
/// worse (higher). An error when a value is unknown or only a bound.
pub fn regressions(c: &Comparison, check: Check, pct: f64) -> Result<Vec<Regression>, String> {
    let metric = check.metric;
    let section = if check.response {
        c.sections.iter().find(|s| s.title == RESPONSE_SECTION).ok_or_else(|| {
            format!("{} compares response times, but no run has working tasks (rtlab run --work)", check.name())
        })?
    } else {
        &c.sections[0]
    };
    let row = section.rows.iter().find(|r| r.metric == metric);
    let cell = |i: usize| -> Result<f64, String> {
        match row.and_then(|r| r.cells[i]) {
            Some(Cell { value, at_least: false }) => Ok(value),
            Some(_) => Err(format!(
                "{}: {} is only known as a lower bound (beyond the imported histogram); compare on max or a lower percentile",
                c.names[i],
                metric.name()
            )),
            None => Err(format!(
                "{}: {} is not known (no histogram, or no working task?); use --percentile max, or record a histogram",
                c.names[i],
                check.name()
            )),
        }
    };
    let base = cell(0)?;
    let mut out = Vec::new();
    for i in 1..c.names.len() {
        let v = cell(i)?;
        let worse_pct = if base == 0.0 {
            if v > 0.0 {
                f64::INFINITY
            } else {
                0.0
            }
        } else {
            (v - base) / base * 100.0
        };
        if worse_pct > pct {
            out.push(Regression { name: c.names[i].clone(), value: v, baseline: base, worse_pct });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::Layout;
    use crate::measure::stats::Summary;

    fn run(samples: &[i64]) -> RunResult {
        let s = Summary::from_samples(Layout::DEFAULT, samples);
        let stats = crate::result::build::stats_of(&s, std::time::UNIX_EPOCH);
        let mut r: RunResult = serde_json::from_str(include_str!("../../tests/fixtures/minimal-run.json")).unwrap();
        r.all.stats = stats.clone();
        r.threads[0].stats = stats;
        r
    }

    #[test]
    fn differences_and_ratios_are_exact_against_the_first_run() {
        let a = run(&[1000, 2000, 3000, 4000]);
        let b = run(&[2000, 4000, 6000, 8000]);
        let c = compare(&[("a".into(), &a), ("b".into(), &b)]);
        assert_eq!(c.sections.len(), 2);
        let get = |m: Metric| c.sections[0].rows.iter().find(|r| r.metric == m).unwrap().clone();
        let mean = get(Metric::Mean);
        assert_eq!(mean.cells[0].unwrap().value, 2500.0);
        assert_eq!(mean.cells[1].unwrap().value, 5000.0);
        assert_eq!(mean.diffs, vec![None, Some(2500.0)]);
        assert_eq!(mean.ratios, vec![None, Some(2.0)]);
        let max = get(Metric::Max);
        assert_eq!((max.diffs[1], max.ratios[1]), (Some(4000.0), Some(2.0)));
        let p50 = get(Metric::Percentile("50"));
        assert_eq!((p50.cells[0].unwrap().value, p50.cells[1].unwrap().value), (3000.0, 5000.0));
        let samples = get(Metric::Samples);
        assert_eq!(samples.ratios[1], Some(1.0));
        // mean +100 % is a regression at 50 %, not at 150 %.
        let r = regressions(&c, Check { response: false, metric: Metric::Mean }, 50.0).unwrap();
        assert_eq!((r.len(), r[0].worse_pct), (1, 100.0));
        assert!(regressions(&c, Check { response: false, metric: Metric::Mean }, 150.0).unwrap().is_empty());
    }

    #[test]
    fn hand_offs_and_lock_waits_are_compared_per_pair_and_mutex() {
        use crate::result::rt_app::{Handoff, LockWait, RtAppRun};
        let stats = |v: &[i64]| {
            crate::result::build::stats_of(&Summary::from_samples(Layout::DEFAULT, v), std::time::UNIX_EPOCH)
        };
        let app = |handoff: &[i64], wait: Option<&[i64]>| RtAppRun {
            file: "f.json".into(),
            pi_enabled: false,
            threads: Vec::new(),
            handoffs: vec![Handoff {
                from: "tick".into(),
                to: "out".into(),
                via: "resume".into(),
                resource: "out".into(),
                stats: stats(handoff),
            }],
            lock_waits: wait
                .map(|w| LockWait { task: "high".into(), mutex: "m".into(), stats: stats(w) })
                .into_iter()
                .collect(),
            timers: Vec::new(),
        };
        let mut a = run(&[1000]);
        a.rt_app = Some(app(&[10_000, 20_000], None));
        let mut b = run(&[1000]);
        b.rt_app = Some(app(&[20_000, 40_000], Some(&[5_000])));
        let c = compare(&[("a".into(), &a), ("b".into(), &b)]);
        assert!(c.differences.is_empty(), "{:?}", c.differences);
        b.rt_app.as_mut().unwrap().pi_enabled = true;
        let c = compare(&[("a".into(), &a), ("b".into(), &b)]);
        let fields: Vec<&str> = c.differences.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(fields, ["rt_app.pi_enabled"]);
        let titles: Vec<&str> = c.sections.iter().map(|s| s.title.as_str()).collect();
        assert_eq!(titles, ["all threads", "thread 0", "hand-off tick → out (resume out)", "lock wait high on m"]);
        let mean = c.sections[2].rows.iter().find(|r| r.metric == Metric::Mean).unwrap();
        assert_eq!((mean.diffs[1], mean.ratios[1]), (Some(15_000.0), Some(2.0)));
        let wait = c.sections[3].rows.iter().find(|r| r.metric == Metric::Max).unwrap();
        assert!(wait.cells[0].is_none());
        assert_eq!(wait.cells[1].unwrap().value, 5_000.0);
    }

    #[test]
    fn environments_that_differ_are_listed_and_equal_ones_are_not() {
        let a = run(&[1000]);
        let mut b = run(&[1000]);
        b.environment.kernel_release = Some("6.1.0-rt".into());
        let c = compare(&[("a".into(), &a), ("b".into(), &b)]);
        let fields: Vec<&str> = c.differences.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(fields, vec!["environment.kernel_release"]);
        assert_eq!(c.differences[0].values[1], "6.1.0-rt");
    }

    #[test]
    fn metrics_parse_with_or_without_p() {
        assert_eq!(Metric::parse("p99").unwrap(), Metric::Percentile("99"));
        assert_eq!(Metric::parse("99.9").unwrap(), Metric::Percentile("99.9"));
        assert_eq!(Metric::parse("max").unwrap(), Metric::Max);
        assert!(Metric::parse("p42").unwrap_err().contains("p42"));
    }

    #[test]
    fn an_unknown_or_bounded_value_cannot_be_checked() {
        let a = run(&[1000]);
        let mut b = run(&[1000]);
        b.all.stats.percentiles_ns.insert("99".into(), None);
        b.all.stats.percentiles_above_ns.insert("99".into(), 5000);
        let c = compare(&[("a".into(), &a), ("b".into(), &b)]);
        assert!(regressions(&c, Check { response: false, metric: Metric::Percentile("99") }, 10.0)
            .unwrap_err()
            .contains("lower bound"));
        assert_eq!(c.sections[0].rows.iter().find(|r| r.metric == Metric::Percentile("99")).unwrap().diffs[1], None);
    }
}
