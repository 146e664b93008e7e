//! The Prometheus text exposition (format 0.0.4) and OpenMetrics 1.0 of a monitor snapshot.
//! Names follow Prometheus's conventions: base units (`_seconds`), counters ending in
//! `_total`, one histogram family with `_bucket{le}`, `_sum`, `_count`, low-cardinality labels
//! (`cpu`, `thread`, `threshold`, `check`, `source`).

use std::fmt::Write;

/// Histogram bucket upper bounds (ns): 1, 1.5, 2, 3, 4, 5 and 7 of each decade from 1 µs to
/// 1 s, so that `histogram_quantile` interpolates within at most a factor of 1.5 (p99 and
/// p99.9 of a real-time system fall in the µs to ms decades).
pub fn bucket_bounds_ns() -> Vec<u64> {
    let mut out = Vec::new();
    for e in 0..6 {
        for m in [10, 15, 20, 30, 40, 50, 70] {
            out.push(m * 100 * 10u64.pow(e));
        }
    }
    out.push(1_000_000_000);
    out
}

/// [`bucket_bounds_ns`] in seconds.
pub fn bucket_bounds() -> Vec<f64> {
    bucket_bounds_ns().iter().map(|b| *b as f64 / 1e9).collect()
}

/// Nanoseconds as decimal seconds, exactly (`5000` → `0.000005`, `1500000000` → `1.5`).
pub fn seconds(ns: u64) -> String {
    let (whole, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return whole.to_string();
    }
    let f = format!("{frac:09}");
    format!("{whole}.{}", f.trim_end_matches('0'))
}

/// One measuring slot's series.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeSeries {
    /// The `cpu` label (`"1"`, or `"any"` when the slot is not pinned).
    pub cpu: String,
    /// The `thread` label.
    pub thread: usize,
    /// Cumulative counts for each of [`bucket_bounds`] (samples ≤ bound).
    pub buckets: Vec<u64>,
    /// Samples.
    pub count: u64,
    /// Σ latency (s).
    pub sum_s: f64,
    /// Missed periods.
    pub missed: u64,
    /// Per threshold (same order as [`Snapshot::thresholds_ns`]): samples above it.
    pub exceedances: Vec<u64>,
    /// Largest latency in the sliding window (s) and its time (Unix s).
    pub window_max: Option<(f64, f64)>,
    /// Largest latency since the start (s) and its time (Unix s).
    pub max: Option<(f64, f64)>,
    /// A working task's response times and deadline misses.
    pub response: Option<ResponseSeries>,
    /// The `task` label: a watched thread's `comm:tid` (`rtlab monitor --watch`); absent for probes.
    pub task: Option<String>,
}

impl ProbeSeries {
    /// The slot's labels: `cpu="1",thread="0"`, and `task="ctl:4711"` for a watched thread.
    pub fn labels(&self) -> String {
        let mut l = format!("cpu=\"{}\",thread=\"{}\"", esc(&self.cpu), self.thread);
        if let Some(t) = &self.task {
            l += &format!(",task=\"{}\"", esc(t));
        }
        l
    }
}

/// A working task's series: its response-time histogram and deadline misses.
#[derive(Clone, Debug, PartialEq)]
pub struct ResponseSeries {
    /// Cumulative counts for each of [`bucket_bounds`] (responses ≤ bound).
    pub buckets: Vec<u64>,
    /// Responses (jobs run).
    pub count: u64,
    /// Σ response time (s).
    pub sum_s: f64,
    /// Deadline misses: late jobs and skipped releases.
    pub misses: u64,
}

/// What the probe is and what it obtained.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProbeInfo {
    /// `os`, `tokio`, `beam`.
    pub runtime: String,
    /// Sleep method.
    pub method: String,
    /// Policy obtained (`fifo`, `other`, …).
    pub policy: String,
    /// Priority obtained.
    pub priority: u32,
    /// Period (s).
    pub interval_s: f64,
    /// Something was obtained below what was asked.
    pub degraded: bool,
}

/// Everything `/metrics` shows, as of one publication.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// rtlab's version.
    pub version: String,
    /// Process start (Unix s).
    pub start_time_s: f64,
    /// Sliding window of the `window_max` gauges (s).
    pub window_s: f64,
    /// Exceedance thresholds (ns).
    pub thresholds_ns: Vec<u64>,
    /// Per slot.
    pub probes: Vec<ProbeSeries>,
    /// The probe.
    pub info: ProbeInfo,
    /// The doctor's checks for the measured CPUs: `(id, status)`.
    pub doctor: Vec<(String, String)>,
    /// `--explain`: late samples explained, and time, per cause: `(cause, spikes, seconds)`.
    pub attribution: Vec<(String, u64, f64)>,
    /// Process CPU time (s).
    pub cpu_seconds: f64,
    /// Resident memory (bytes).
    pub resident_bytes: u64,
}

/// Samples of `s` at or below `b` ns, exactly from the probe's cut counts (`cuts`: the
/// probe's sorted cuts, which hold every `le` bound and threshold); from the histogram only
/// when the probe counted no cuts (then exact where `b + 1` is a bucket edge, below otherwise).
pub fn samples_at_or_below(s: &crate::measure::stats::Summary, cuts: &[u64], b: u64) -> u64 {
    match cuts.binary_search(&b) {
        Ok(i) if s.cut_counts.len() == cuts.len() + 1 => s.cut_counts[..=i].iter().sum(),
        _ => s.counts.nonzero().filter(|(_, hi, _)| *hi <= b + 1).map(|(_, _, c)| c).sum(),
    }
}

/// A float as Prometheus writes it (`+Inf`, shortest round trip otherwise).
fn num(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v}")
    }
}

/// A label value, escaped (`\`, `"`, newline).
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Renders `s`: the Prometheus text format, or OpenMetrics 1.0 (`openmetrics`).
pub fn render(s: &Snapshot, openmetrics: bool) -> String {
    let mut o = String::with_capacity(4096 + s.probes.len() * 4096);
    // OpenMetrics names a counter family without `_total` and writes units; the text format
    // names the family as the sample.
    let family = |o: &mut String, name: &str, kind: &str, help: &str, unit: Option<&str>| {
        let fam = if openmetrics && kind == "counter" { name.trim_end_matches("_total") } else { name };
        let _ = writeln!(o, "# HELP {fam} {help}");
        let _ = writeln!(o, "# TYPE {fam} {kind}");
        if let (true, Some(u)) = (openmetrics, unit) {
            let _ = writeln!(o, "# UNIT {fam} {u}");
        }
    };
    let lat = "rtlab_wakeup_latency_seconds";
    family(&mut o, lat, "histogram", "Wakeup latency of the periodic probe (wakeup minus deadline).", Some("seconds"));
    let bounds: Vec<String> = bucket_bounds_ns().into_iter().map(seconds).collect();
    for p in &s.probes {
        let l = p.labels();
        for (b, c) in bounds.iter().zip(&p.buckets) {
            let _ = writeln!(o, "{lat}_bucket{{{l},le=\"{b}\"}} {c}");
        }
        let _ = writeln!(o, "{lat}_bucket{{{l},le=\"+Inf\"}} {}", p.count);
        let _ = writeln!(o, "{lat}_sum{{{l}}} {}", num(p.sum_s));
        let _ = writeln!(o, "{lat}_count{{{l}}} {}", p.count);
    }
    if s.probes.iter().any(|p| p.response.is_some()) {
        let resp = "rtlab_response_time_seconds";
        family(
            &mut o,
            resp,
            "histogram",
            "Response time of a working task (completion minus release).",
            Some("seconds"),
        );
        for p in &s.probes {
            let Some(r) = &p.response else { continue };
            let l = p.labels();
            for (b, c) in bounds.iter().zip(&r.buckets) {
                let _ = writeln!(o, "{resp}_bucket{{{l},le=\"{b}\"}} {c}");
            }
            let _ = writeln!(o, "{resp}_bucket{{{l},le=\"+Inf\"}} {}", r.count);
            let _ = writeln!(o, "{resp}_sum{{{l}}} {}", num(r.sum_s));
            let _ = writeln!(o, "{resp}_count{{{l}}} {}", r.count);
        }
        family(
            &mut o,
            "rtlab_deadline_misses_total",
            "counter",
            "Deadline misses of a working task: jobs completed after their deadline and releases skipped.",
            None,
        );
        for p in &s.probes {
            if let Some(r) = &p.response {
                let _ = writeln!(o, "rtlab_deadline_misses_total{{{}}} {}", p.labels(), r.misses);
            }
        }
    }
    family(&mut o, "rtlab_samples_total", "counter", "Wakeups measured.", None);
    for p in &s.probes {
        let _ = writeln!(o, "rtlab_samples_total{{{}}} {}", p.labels(), p.count);
    }
    family(
        &mut o,
        "rtlab_missed_periods_total",
        "counter",
        "Periods missed: deadlines that passed before the probe woke.",
        None,
    );
    for p in &s.probes {
        let _ = writeln!(o, "rtlab_missed_periods_total{{{}}} {}", p.labels(), p.missed);
    }
    family(&mut o, "rtlab_latency_exceedances_total", "counter", "Wakeups later than the threshold.", None);
    for p in &s.probes {
        for (t, n) in s.thresholds_ns.iter().zip(&p.exceedances) {
            let _ = writeln!(o, "rtlab_latency_exceedances_total{{{},threshold=\"{}\"}} {n}", p.labels(), seconds(*t));
        }
    }
    let gauge2 = |o: &mut String, name: &str, help: &str, f: &dyn Fn(&ProbeSeries) -> Option<f64>| {
        family(o, name, "gauge", help, if name.ends_with("_seconds") { Some("seconds") } else { None });
        for p in &s.probes {
            if let Some(v) = f(p) {
                let _ = writeln!(o, "{name}{{{}}} {}", p.labels(), num(v));
            }
        }
    };
    let w = format!("Largest wakeup latency in the last {} s.", s.window_s);
    gauge2(&mut o, "rtlab_wakeup_latency_window_max_seconds", &w, &|p| p.window_max.map(|m| m.0));
    gauge2(
        &mut o,
        "rtlab_wakeup_latency_window_max_time_seconds",
        "When the window's largest latency happened (Unix time).",
        &|p| p.window_max.map(|m| m.1),
    );
    gauge2(&mut o, "rtlab_wakeup_latency_max_seconds", "Largest wakeup latency since the start.", &|p| {
        p.max.map(|m| m.0)
    });
    gauge2(
        &mut o,
        "rtlab_wakeup_latency_max_time_seconds",
        "When the largest latency since the start happened (Unix time).",
        &|p| p.max.map(|m| m.1),
    );
    family(
        &mut o,
        "rtlab_probe_info",
        "gauge",
        "The probe: runtime, method, policy and priority obtained, period.",
        None,
    );
    let i = &s.info;
    let _ = writeln!(
        o,
        "rtlab_probe_info{{runtime=\"{}\",method=\"{}\",policy=\"{}\",priority=\"{}\",interval_seconds=\"{}\"}} 1",
        esc(&i.runtime),
        esc(&i.method),
        esc(&i.policy),
        i.priority,
        num(i.interval_s)
    );
    family(
        &mut o,
        "rtlab_probe_degraded",
        "gauge",
        "1 when the probe obtained less than it asked (policy, priority, memory lock).",
        None,
    );
    let _ = writeln!(o, "rtlab_probe_degraded {}", u8::from(i.degraded));
    family(&mut o, "rtlab_build_info", "gauge", "rtlab's version.", None);
    let _ = writeln!(o, "rtlab_build_info{{version=\"{}\"}} 1", esc(&s.version));
    family(&mut o, "rtlab_start_time_seconds", "gauge", "When the monitor started (Unix time).", Some("seconds"));
    let _ = writeln!(o, "rtlab_start_time_seconds {}", num(s.start_time_s));
    family(
        &mut o,
        "rtlab_process_cpu_seconds_total",
        "counter",
        "CPU time of the monitor process (user + system).",
        Some("seconds"),
    );
    let _ = writeln!(o, "rtlab_process_cpu_seconds_total {}", num(s.cpu_seconds));
    family(
        &mut o,
        "rtlab_process_resident_memory_bytes",
        "gauge",
        "Resident memory of the monitor process.",
        Some("bytes"),
    );
    let _ = writeln!(o, "rtlab_process_resident_memory_bytes {}", s.resident_bytes);
    if !s.doctor.is_empty() {
        family(
            &mut o,
            "rtlab_doctor_check",
            "gauge",
            "The doctor's checks for the measured CPUs: 1 for the status each has (ok, warn, fail, unknown).",
            None,
        );
        for (id, status) in &s.doctor {
            for st in ["ok", "warn", "fail", "unknown"] {
                let _ = writeln!(
                    o,
                    "rtlab_doctor_check{{check=\"{}\",status=\"{st}\"}} {}",
                    esc(id),
                    u8::from(status == st)
                );
            }
        }
    }
    if !s.attribution.is_empty() {
        family(
            &mut o,
            "rtlab_explained_spikes_total",
            "counter",
            "Late wakeups explained in which this cause took part.",
            None,
        );
        for (c, n, _) in &s.attribution {
            let _ = writeln!(o, "rtlab_explained_spikes_total{{cause=\"{}\"}} {n}", esc(c));
        }
        family(
            &mut o,
            "rtlab_explained_latency_seconds_total",
            "counter",
            "Time of explained late wakeups, by cause.",
            Some("seconds"),
        );
        for (c, _, secs) in &s.attribution {
            let _ = writeln!(o, "rtlab_explained_latency_seconds_total{{cause=\"{}\"}} {}", esc(c), num(*secs));
        }
    }
    if openmetrics {
        o.push_str("# EOF\n");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::Layout;
    use crate::measure::stats::{Live, Recorder};

    #[test]
    fn le_bounds_and_thresholds_count_exactly_whatever_the_histograms_buckets() {
        // 10 µs buckets and a 15 µs threshold: no bucket edge at 1.5 µs, 15 µs or 15 ms.
        let layout = Layout::new(10_000, 10_000_000).unwrap();
        let mut cuts = bucket_bounds_ns();
        cuts.push(15_000);
        cuts.sort_unstable();
        cuts.dedup();
        let live = Live::with_cuts(layout, &cuts);
        let mut r = Recorder::new(&live, None);
        for v in [11_400, 15_000, 15_001, 1_500, 1_501, 40_000_000] {
            r.record(v, 0, 0);
        }
        let s = r.finish();
        let le = |b: u64| samples_at_or_below(&s, &cuts, b);
        assert_eq!(le(1_500), 1, "a sample of exactly the bound is at or below it");
        assert_eq!(le(15_000), 4);
        assert_eq!(s.cycles - le(15_000), 2, "exceedances of 15 µs: the samples above it");
        assert_eq!(le(15_000_000), 5);
        assert_eq!(le(1_000_000_000), 6);
        // From the histogram alone, only bucket edges are exact: 15 µs reads as 10 µs.
        let mut bare = s.clone();
        bare.cut_counts.clear();
        assert_eq!(samples_at_or_below(&bare, &cuts, 15_000), 2);
    }

    fn one() -> Snapshot {
        let bounds = bucket_bounds();
        Snapshot {
            version: "0.1.0".into(),
            start_time_s: 1_800_000_000.5,
            window_s: 60.0,
            thresholds_ns: vec![100_000],
            probes: vec![ProbeSeries {
                cpu: "1".into(),
                thread: 0,
                buckets: bounds.iter().map(|b| if *b >= 2e-5 { 10 } else { 0 }).collect(),
                count: 10,
                sum_s: 1.5e-4,
                missed: 0,
                exceedances: vec![0],
                window_max: Some((1.9e-5, 1_800_000_010.0)),
                max: Some((1.9e-5, 1_800_000_010.0)),
                response: None,
                task: None,
            }],
            info: ProbeInfo {
                runtime: "os".into(),
                method: "abs".into(),
                policy: "fifo".into(),
                priority: 95,
                interval_s: 0.001,
                degraded: false,
            },
            doctor: vec![("kernel.preempt".into(), "fail".into())],
            attribution: vec![],
            cpu_seconds: 0.25,
            resident_bytes: 1 << 20,
        }
    }

    #[test]
    fn buckets_span_one_microsecond_to_one_second_in_steps_of_at_most_one_and_a_half() {
        let b = bucket_bounds();
        assert_eq!((b[0], *b.last().unwrap(), b.len()), (1e-6, 1.0, 43));
        assert!(b.windows(2).all(|w| w[1] > w[0] && w[1] / w[0] <= 1.5 + 1e-9), "{b:?}");
        assert_eq!(
            (seconds(5_000), seconds(1_500_000_000), seconds(1_000_000_000)),
            ("0.000005".into(), "1.5".into(), "1".into())
        );
    }

    #[test]
    fn a_working_task_adds_its_response_histogram_and_deadline_misses() {
        let plain = render(&one(), false);
        assert!(!plain.contains("rtlab_response_time_seconds"), "no family without a working task");
        let mut s = one();
        let bounds = bucket_bounds();
        s.probes[0].response = Some(ResponseSeries {
            buckets: bounds.iter().map(|b| if *b >= 5e-4 { 10 } else { 0 }).collect(),
            count: 10,
            sum_s: 4.5e-3,
            misses: 2,
        });
        let t = render(&s, false);
        assert!(t.contains("# TYPE rtlab_response_time_seconds histogram\n"), "{t}");
        assert!(t.contains("rtlab_response_time_seconds_bucket{cpu=\"1\",thread=\"0\",le=\"0.0004\"} 0\n"));
        assert!(t.contains("rtlab_response_time_seconds_bucket{cpu=\"1\",thread=\"0\",le=\"0.0005\"} 10\n"));
        assert!(t.contains("rtlab_response_time_seconds_count{cpu=\"1\",thread=\"0\"} 10\n"));
        assert!(t.contains("rtlab_deadline_misses_total{cpu=\"1\",thread=\"0\"} 2\n"));
        assert!(render(&s, true).contains("# TYPE rtlab_deadline_misses counter\n"));
    }

    #[test]
    fn the_text_format_has_one_family_per_metric_and_a_consistent_histogram() {
        let t = render(&one(), false);
        assert!(t.contains("# TYPE rtlab_wakeup_latency_seconds histogram\n"));
        assert!(t.contains("rtlab_wakeup_latency_seconds_bucket{cpu=\"1\",thread=\"0\",le=\"0.00002\"} 10\n"), "{t}");
        assert!(t.contains("rtlab_wakeup_latency_seconds_bucket{cpu=\"1\",thread=\"0\",le=\"+Inf\"} 10\n"));
        assert!(t.contains("rtlab_wakeup_latency_seconds_count{cpu=\"1\",thread=\"0\"} 10\n"));
        assert!(t.contains("# TYPE rtlab_samples_total counter\n"));
        assert!(t.contains("rtlab_latency_exceedances_total{cpu=\"1\",thread=\"0\",threshold=\"0.0001\"} 0\n"));
        assert!(t.contains("rtlab_doctor_check{check=\"kernel.preempt\",status=\"fail\"} 1\n"));
        assert!(!t.contains("# EOF"));
        let om = render(&one(), true);
        assert!(om.ends_with("# EOF\n") && om.contains("# TYPE rtlab_samples counter\n"), "{om}");
        assert!(om.contains("# UNIT rtlab_wakeup_latency_seconds seconds\n"));
    }
}
