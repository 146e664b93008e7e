//! Fleet data from a Prometheus server that scrapes `rtlab monitor`: one RunResult per host
//! (`instance`), one thread per measured CPU, its histogram the increase of
//! `rtlab_wakeup_latency_seconds_bucket` over the window, so that `rtlab report` and
//! `rtlab compare` judge a fleet with the same tables, plots and verdicts as one machine.
//! Queries go to the HTTP API (`GET /api/v1/query`), evaluated at one instant.

use crate::result::build::{percentiles, Stated, StatedRun};
use crate::result::{Bucket, HistogramRecord, RunResult, Source, Stats, ThreadResult, Unbinned};
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

/// Hosts, CPUs per host and buckets per CPU a fleet report holds at most: what a hostile or
/// misconfigured server answers beyond is left out, said so (a real fleet is far below).
const MAX_HOSTS: usize = 1_000;
/// CPUs per host at most.
const MAX_CPUS: usize = 4_096;
/// `le` buckets per CPU at most (rtlab monitor exports 44).
const MAX_LE: usize = 1_000;

/// Time allowed for each query.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer read from the server (a fleet of thousands of CPUs fits easily).
const MAX_BODY: u64 = 64 << 20;

/// What to ask the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// Base URL (`http://prometheus:9090`).
    pub url: String,
    /// The window, ending now.
    pub since: Duration,
    /// Label matchers without braces (`job="rtlab"`).
    pub matchers: String,
}

/// The matchers of `--match` (`{job="rtlab"}` or `job="rtlab"`), or why they are refused.
pub fn matchers(text: &str) -> Result<String, String> {
    let t = text.trim();
    let inner = t.strip_prefix('{').and_then(|x| x.strip_suffix('}')).unwrap_or(t).trim();
    if inner.is_empty() {
        return Err(format!("--match '{text}' names no label; give e.g. '{{job=\"rtlab\"}}'"));
    }
    if inner.contains(['{', '}', '[', ']', '(', ')']) || !inner.contains('=') {
        return Err(format!(
            "--match '{text}' is not a list of label matchers; give e.g. '{{job=\"rtlab\",site=\"lab\"}}'"
        ));
    }
    Ok(inner.to_string())
}

/// A Prometheus duration for `d` (`86400s`).
fn range(d: Duration) -> String {
    format!("{}s", d.as_secs().max(1))
}

/// One series of an instant query's answer: its labels and value.
type Series = (BTreeMap<String, String>, f64);

/// One series of the API's answer: labels (control characters replaced), and the sample of
/// an instant query or the points of a range query (`[time, "value"]`).
#[derive(Debug, Default, serde::Deserialize)]
struct RawSeries {
    #[serde(default)]
    metric: BTreeMap<String, String>,
    #[serde(default)]
    value: Option<(f64, String)>,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

#[derive(serde::Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<AnswerData>,
}

#[derive(serde::Deserialize)]
struct AnswerData {
    #[serde(default)]
    result: Vec<RawSeries>,
}

/// The time one fleet query (all its API calls together) may take.
const FLEET_BUDGET: Duration = Duration::from_secs(90);

impl Query {
    /// The URL as it may be shown or written: without its `user:password@` (sent as Basic
    /// authentication, never printed).
    pub fn shown_url(&self) -> String {
        strip_userinfo(&self.url)
    }
}

/// `url` without the userinfo of its authority.
pub fn strip_userinfo(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let out = if scheme.is_empty() { format!("{host}{tail}") } else { format!("{scheme}://{host}{tail}") };
    crate::units::printable(&out)
}

/// `GET {url}/api/v1/{path}` with `params`, within `deadline`: the answer's `data.result`, or what
/// went wrong. Redirects are not followed (Prometheus's API does not redirect), the answer is
/// read up to [`MAX_BODY`], and what the server says is shown without control characters.
fn api(q: &Query, deadline: Instant, path: &str, params: &[(&str, &str)]) -> Result<Vec<RawSeries>, String> {
    let shown = format!("{}/api/v1/{path}", q.shown_url().trim_end_matches('/'));
    let url = format!("{}/api/v1/{path}", q.url.trim_end_matches('/'));
    let promql = params.iter().find(|p| p.0 == "query").map_or("", |p| p.1);
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(format!(
            "the fleet query took more than {} s in all; narrow it with --match or --since",
            FLEET_BUDGET.as_secs()
        ));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(Some(TIMEOUT.min(left)))
        .build()
        .into();
    let mut req = agent.get(&url);
    for (k, v) in params {
        req = req.query(*k, *v);
    }
    let said = |text: &str| crate::units::printable(&crate::units::clip(text, 300));
    let mut resp = req.call().map_err(|e| {
        format!(
            "cannot query {shown}: {}; is Prometheus running there?",
            said(&e.to_string().replace(&q.url, &q.shown_url()))
        )
    })?;
    let code = resp.status().as_u16();
    if (300..400).contains(&code) {
        let to = resp.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or("?");
        return Err(format!(
            "{shown} answered a redirect ({code}) to {}: Prometheus's API does not redirect; give its own URL",
            said(&strip_userinfo(to))
        ));
    }
    // An error's body is only shown, clipped: its first 64 KiB are enough.
    let ok = (200..300).contains(&code);
    let limit = if ok { MAX_BODY + 1 } else { 64 << 10 };
    let mut body = Vec::new();
    let read = std::io::Read::read_to_end(&mut std::io::Read::take(resp.body_mut().as_reader(), limit), &mut body);
    if !ok {
        return Err(format!("{shown} answered {code} to {promql}: {}", said(&String::from_utf8_lossy(&body))));
    }
    read.map_err(|e| format!("reading the answer of {shown}: {e}"))?;
    if body.len() as u64 > MAX_BODY {
        return Err(format!(
            "{shown}: answer larger than {} MiB to {promql}; narrow it with --match or --since",
            MAX_BODY >> 20
        ));
    }
    let a: Answer = serde_json::from_slice(&body)
        .map_err(|e| format!("{shown} did not answer with Prometheus's JSON ({})", said(&e.to_string())))?;
    if a.status != "success" {
        return Err(format!("{shown}: {} ({promql})", said(a.error.as_deref().unwrap_or("no error given"))));
    }
    let mut result = a.data.map(|d| d.result).unwrap_or_default();
    for r in &mut result {
        r.metric = std::mem::take(&mut r.metric)
            .into_iter()
            .map(|(k, v)| (crate::units::printable(&k), crate::units::printable(&v)))
            .collect();
    }
    Ok(result)
}

/// A bucket's `le` label in ns (`+Inf`: `u64::MAX`).
fn le_ns(label: Option<&str>) -> Option<u64> {
    match label? {
        "+Inf" => Some(u64::MAX),
        x => x.parse::<f64>().ok().map(|s| (s * 1e9).round() as u64),
    }
}

/// Runs an instant query; each result as `(labels, value)` (NaN and infinities kept: the
/// caller decides what a non-finite value means).
fn instant(q: &Query, deadline: Instant, promql: &str) -> Result<Vec<Series>, String> {
    Ok(api(q, deadline, "query", &[("query", promql)])?
        .into_iter()
        .filter_map(|r| {
            let value = r.value.as_ref()?.1.parse::<f64>().ok()?;
            Some((r.metric, value))
        })
        .collect())
}

fn key(l: &BTreeMap<String, String>) -> (String, String) {
    (l.get("instance").cloned().unwrap_or_default(), l.get("cpu").cloned().unwrap_or_default())
}

/// One RunResult per host over the window, worst p99.9 first; an error says what failed.
pub fn fetch(q: &Query) -> Result<Vec<(String, RunResult)>, String> {
    let deadline = Instant::now() + FLEET_BUDGET;
    let (m, s) = (&q.matchers, range(q.since));
    let buckets = instant(
        q,
        deadline,
        &format!("sum by (instance, cpu, le) (increase(rtlab_wakeup_latency_seconds_bucket{{{m}}}[{s}]))"),
    )?;
    let none = |what: &str| {
        format!(
            "{} has no {what}rtlab_wakeup_latency_seconds_bucket{{{m}}} in the last {s}: is it scraping rtlab monitor (deploy/prometheus.yml)?",
            q.shown_url()
        )
    };
    if buckets.is_empty() {
        return Err(none(""));
    }
    // Per host and CPU: (le in ns, cumulative count); +Inf as u64::MAX.
    let mut cum: BTreeMap<(String, String), Vec<(u64, f64)>> = BTreeMap::new();
    for (l, v) in &buckets {
        let Some(le) = le_ns(l.get("le").map(String::as_str)) else { continue };
        cum.entry(key(l)).or_default().push((le, *v));
    }
    if cum.is_empty() {
        return Err(none("usable (with an le label) "));
    }
    let mut bad = Vec::new();
    cum.retain(|(host, cpu), les| {
        let why = if les.len() > MAX_LE {
            Some(format!("{} buckets (at most {MAX_LE})", les.len()))
        } else {
            les.iter().find(|(_, v)| !v.is_finite() || *v < 0.0).map(|(_, v)| format!("a count of {v}"))
        };
        if let Some(why) = why {
            bad.push((format!("{host} CPU {cpu}"), why));
        }
        les.len() <= MAX_LE && les.iter().all(|(_, v)| v.is_finite() && *v >= 0.0)
    });
    for (who, why) in &bad {
        eprintln!("rtlab: warning: {} is left out: its histogram answered {why}", crate::units::clip(who, 200));
    }
    if cum.is_empty() {
        return Err(none("usable (finite, non-negative) "));
    }
    let host_names: std::collections::BTreeSet<String> = cum.keys().map(|k| k.0.clone()).collect();
    if host_names.len() > MAX_HOSTS {
        let keep: std::collections::BTreeSet<String> = host_names.iter().take(MAX_HOSTS).cloned().collect();
        eprintln!(
            "rtlab: warning: {} hosts answered; the report holds the first {MAX_HOSTS} by name: narrow the selection with --match",
            host_names.len()
        );
        cum.retain(|k, _| keep.contains(&k.0));
    }
    let mut per_host: BTreeMap<String, usize> = BTreeMap::new();
    cum.retain(|k, _| {
        let n = per_host.entry(k.0.clone()).or_default();
        *n += 1;
        *n <= MAX_CPUS
    });
    if per_host.values().any(|n| *n > MAX_CPUS) {
        eprintln!(
            "rtlab: warning: a host answered more than {MAX_CPUS} CPUs; the report holds the first {MAX_CPUS} of each"
        );
    }
    let sums = instant(
        q,
        deadline,
        &format!("sum by (instance, cpu) (increase(rtlab_wakeup_latency_seconds_sum{{{m}}}[{s}]))"),
    )?;
    let missed =
        instant(q, deadline, &format!("sum by (instance, cpu) (increase(rtlab_missed_periods_total{{{m}}}[{s}]))"))?;
    let end = SystemTime::now();
    let start = end - q.since;
    let maxima = window_maxima(q, deadline, start, end)?;
    let versions =
        instant(q, deadline, &format!("max by (instance, version) (last_over_time(rtlab_build_info{{{m}}}[{s}]))"))?;
    // Sums and missed periods that are not finite non-negative numbers are unknown.
    let lookup = |v: &[Series]| -> BTreeMap<(String, String), f64> {
        v.iter().filter(|(_, x)| x.is_finite() && *x >= 0.0).map(|(l, x)| (key(l), *x)).collect()
    };
    let (sums, missed) = (lookup(&sums), lookup(&missed));
    let mut hosts: BTreeMap<String, Vec<ThreadResult>> = BTreeMap::new();
    for ((host, cpu), mut les) in cum {
        les.sort_by_key(|x| x.0);
        let mut out = Vec::new();
        let (mut prev_le, mut prev_n) = (0u64, 0u64);
        let mut unbinned = None;
        // increase() extrapolates to the window's edges: counts are rounded, never decreasing.
        for (le, v) in les {
            let n = (v.max(0.0).round() as u64).max(prev_n);
            if le == u64::MAX {
                if n > prev_n {
                    unbinned = Some(Unbinned { count: n - prev_n, at_least_ns: prev_le });
                }
            } else if n > prev_n {
                out.push(Bucket { lo_ns: prev_le, hi_ns: le, count: n - prev_n });
            }
            prev_n = n;
            if le != u64::MAX {
                prev_le = le;
            }
        }
        let cycles = prev_n;
        let k = (host.clone(), cpu.clone());
        // The gauges' largest sample inside the window, when the histogram agrees that the
        // largest sample lies in its bucket; otherwise the exact maximum is not known.
        let top = out.last().map(|b| (b.lo_ns, b.hi_ns)).map(|(lo, hi)| match unbinned {
            Some(u) => (u.at_least_ns, u64::MAX),
            None => (lo, hi),
        });
        let max_ns = maxima.get(&k).copied().filter(|g| {
            let g = *g as u64;
            top.is_some_and(|(lo, hi)| g >= lo && g <= hi)
        });
        let h = HistogramRecord { bucket_ns: 0, range_ns: 0, buckets: out, unbinned };
        let (pct, above) = percentiles(&h, cycles, max_ns);
        let stats = Stats {
            cycles,
            missed: missed.get(&k).map(|m| m.max(0.0).round() as u64),
            negative: None,
            min_ns: None,
            max_ns,
            max_at_cycle: None,
            max_at_ns: None,
            max_at_time: None,
            mean_ns: sums.get(&k).filter(|_| cycles > 0).map(|s| s * 1e9 / cycles as f64),
            mean_us_truncated: None,
            stdev_ns: None,
            percentiles_ns: pct,
            percentiles_above_ns: above,
            over_threshold: 0,
            exceedances: None,
            histogram: Some(h),
            uncertainty: None,
            prediction: None,
        };
        let threads = hosts.entry(host).or_default();
        threads.push(ThreadResult::of_figures(threads.len(), cpu.parse().ok(), stats));
    }
    let version: BTreeMap<String, String> =
        versions.iter().map(|(l, _)| (key(l).0, l.get("version").cloned().unwrap_or_default())).collect();
    let mut out: Vec<(String, RunResult)> = hosts
        .into_iter()
        .map(|(host, mut threads)| {
            threads.sort_by_key(|t| t.cpu);
            for (i, t) in threads.iter_mut().enumerate() {
                t.thread = i;
            }
            let mut environment = crate::sysinfo::Environment::unknown();
            environment.hostname = Some(host.clone());
            let r = RunResult::from_stated(StatedRun {
                threads,
                stated: Stated {
                    command_line: None,
                    tool_version: version.get(&host).cloned(),
                    start_time: Some(crate::timefmt::rfc3339(start)),
                    end_time: Some(crate::timefmt::rfc3339(end)),
                    environment: Some(environment),
                },
                source: Source {
                    format: "prometheus".into(),
                    file: format!("{} {{{}}} [{}]", q.shown_url(), q.matchers, s),
                    tool_version: version.get(&host).cloned(),
                    command_line: None,
                    unit: "ns".into(),
                },
            });
            (host, r)
        })
        .collect();
    let p999 = |r: &RunResult| r.all.stats.percentiles_ns.get("99.9").copied().flatten().unwrap_or(0);
    out.sort_by(|a, b| p999(&b.1).cmp(&p999(&a.1)).then(a.0.cmp(&b.0)));
    Ok(out)
}

/// One series of a range query's answer: its labels (without the name) and its points
/// (Unix ms → value).
type RangeSeries = (BTreeMap<String, String>, BTreeMap<i64, f64>);

/// Points of the window-max gauges read over the window, at most this many per series.
const MAXIMA_POINTS: u64 = 1_000;

/// Per `(instance, cpu)`: the largest latency (ns) the monitors' window-max gauges report
/// *inside* `start..end` — a gauge point counts only when the time gauge beside it says its
/// sample happened in the window (the gauge covers the minute before each scrape, which may
/// reach back before the window).
fn window_maxima(
    q: &Query,
    deadline: Instant,
    start: SystemTime,
    end: SystemTime,
) -> Result<BTreeMap<(String, String), i64>, String> {
    let unix = |t: SystemTime| t.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let (from, to) = (unix(start), unix(end));
    let step = (q.since.as_secs() / MAXIMA_POINTS).max(1);
    let range = |metric: &str| -> Result<Vec<RangeSeries>, String> {
        let promql = format!("{metric}{{{}}}", q.matchers);
        let (a, b, st) = (format!("{from:.3}"), format!("{to:.3}"), format!("{step}s"));
        let results =
            api(q, deadline, "query_range", &[("query", &promql), ("start", &a), ("end", &b), ("step", &st)])?;
        Ok(results
            .into_iter()
            .map(|mut r| {
                r.metric.remove("__name__");
                let points = r
                    .values
                    .iter()
                    .filter_map(|(t, v)| Some(((t * 1000.0).round() as i64, v.parse::<f64>().ok()?)))
                    .collect();
                (r.metric, points)
            })
            .collect())
    };
    let values = range("rtlab_wakeup_latency_window_max_seconds")?;
    let times: BTreeMap<BTreeMap<String, String>, BTreeMap<i64, f64>> =
        range("rtlab_wakeup_latency_window_max_time_seconds")?.into_iter().collect();
    let mut out: BTreeMap<(String, String), i64> = BTreeMap::new();
    for (labels, points) in values {
        let Some(when) = times.get(&labels) else { continue };
        // NaN, infinities and negative values say nothing about a latency: unknown.
        for (t, v) in points.into_iter().filter(|(_, v)| v.is_finite() && *v >= 0.0) {
            if when.get(&t).is_some_and(|w| *w >= from && *w <= to) {
                let ns = (v * 1e9).round() as i64;
                let m = out.entry(key(&labels)).or_insert(ns);
                *m = (*m).max(ns);
            }
        }
    }
    Ok(out)
}

/// Wakeups per latency bucket over time, the whole selection together (a heatmap's data).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Heat {
    /// The end of each step (Unix s).
    pub times: Vec<f64>,
    /// Bucket upper bounds (ns); the last is `u64::MAX` (+Inf).
    pub bounds_ns: Vec<u64>,
    /// Per step, wakeups per bucket (not cumulative) in the `width_s` seconds before it.
    pub counts: Vec<Vec<u64>>,
    /// The span each step counts (s): the step, at least a minute.
    pub width_s: u64,
}

/// The heatmap data of the window in about `steps` steps (at least 1 s each).
pub fn heat(q: &Query, steps: u32) -> Result<Heat, String> {
    let step = (q.since.as_secs() / u64::from(steps.max(1))).max(1);
    // increase() needs two scrapes in its range: at least a minute (4 × the usual 15 s scrape
    // interval), else one step.
    let width = step.max(60);
    let end = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let start = end.saturating_sub(q.since.as_secs());
    let promql = format!("sum by (le) (increase(rtlab_wakeup_latency_seconds_bucket{{{}}}[{width}s]))", q.matchers);
    let (start, end, step_s) = (start.to_string(), end.to_string(), format!("{step}s"));
    let deadline = Instant::now() + FLEET_BUDGET;
    let results =
        api(q, deadline, "query_range", &[("query", &promql), ("start", &start), ("end", &end), ("step", &step_s)])?;
    // le → (time → cumulative count), on the exposition's bounds only: a foreign `le` (another
    // exporter's, a hostile server's thousands) is not a row of the heatmap.
    let bounds: std::collections::BTreeSet<u64> =
        crate::serve::exposition::bucket_bounds_ns().into_iter().chain([u64::MAX]).collect();
    let mut by_le: BTreeMap<u64, BTreeMap<i64, f64>> = BTreeMap::new();
    for r in &results {
        let Some(le) = le_ns(r.metric.get("le").map(String::as_str)).filter(|le| bounds.contains(le)) else { continue };
        for (t, x) in &r.values {
            let Some(x) = x.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0) else { continue };
            by_le.entry(le).or_default().insert(t.round() as i64, x);
        }
    }
    let times: Vec<i64> =
        by_le.values().flat_map(|m| m.keys().copied()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let bounds_ns: Vec<u64> = by_le.keys().copied().collect();
    let counts = times
        .iter()
        .map(|t| {
            let mut prev = 0u64;
            bounds_ns
                .iter()
                .map(|le| {
                    let c = (by_le[le].get(t).copied().unwrap_or(0.0).max(0.0).round() as u64).max(prev);
                    let n = c - prev;
                    prev = c;
                    n
                })
                .collect()
        })
        .collect();
    Ok(Heat { times: times.iter().map(|t| *t as f64).collect(), bounds_ns, counts, width_s: width })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_are_label_lists_with_or_without_braces() {
        assert_eq!(matchers("{job=\"rtlab\"}").unwrap(), "job=\"rtlab\"");
        assert_eq!(matchers("job=\"rtlab\",site=~\"lab.*\"").unwrap(), "job=\"rtlab\",site=~\"lab.*\"");
        assert!(matchers("{}").is_err());
        assert!(matchers("up) or vector(1").is_err());
    }
}
