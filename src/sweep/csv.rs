//! `sweep.csv`: RealtimeTests' columns, then rtlab's.

use super::Point;
use crate::result::RunResult;

/// The columns after the axes: RealtimeTests' (with a true standard deviation), then p99,
/// p99.9, missed periods, the first load's throughput, and the largest period drift of any
/// thread (what relative sleeping accumulates).
pub const CSV_COLUMNS: [&str; 12] = [
    "cpu_workers",
    "min_latency_ms",
    "max_latency_ms",
    "mean_latency_ms",
    "stdev_latency_ms",
    "p99_latency_ms",
    "p99.9_latency_ms",
    "missed",
    "load_throughput_per_s",
    "load_unit",
    "load_cpu_per_worker",
    "max_drift_ms",
];

fn ms(ns: Option<f64>) -> String {
    ns.map_or_else(String::new, |v| crate::units::ms_fixed(v, 6))
}

/// Columns added when a point's tasks work: the response time's p50, p99, p99.9 and max over
/// all tasks, their deadline misses and miss ratio, and the largest run time.
pub const WORK_COLUMNS: [&str; 7] = [
    "p50_response_ms",
    "p99_response_ms",
    "p99.9_response_ms",
    "max_response_ms",
    "deadline_misses",
    "miss_ratio",
    "max_run_ms",
];

/// Columns added when a point's runtime had a control (`--control`): the p99 and max of the
/// OS thread beside it (the other columns are the runtime's own).
pub const CONTROL_COLUMNS: [&str; 2] = ["control_p99_latency_ms", "control_max_latency_ms"];

/// The columns after the axes of a noise sweep (`rtlab noise sweep`): over all its CPUs, the
/// least % of a CPU available, the noise per second and noises per second of the noisiest
/// CPU, the largest single noise, the 99th percentile of the gaps, then the first load's
/// throughput.
pub const NOISE_COLUMNS: [&str; 9] = [
    "cpu_workers",
    "min_available_pct",
    "max_noise_us_per_s",
    "max_noises_per_s",
    "max_single_noise_us",
    "p99_gap_us",
    "load_throughput_per_s",
    "load_unit",
    "load_cpu_per_worker",
];

fn noise_csv(axis_names: &[String], rows: &[(&Point, &RunResult)]) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = axis_names.iter().filter(|a| *a != "workers").cloned().collect();
    header.extend(NOISE_COLUMNS.iter().map(|c| c.to_string()));
    let _ = w.write_record(&header);
    for (p, r) in rows {
        let mut cols: Vec<String> = p.axes.iter().filter(|(k, _)| k != "workers").map(|(_, v)| v.clone()).collect();
        let figures: Vec<&crate::result::NoiseFigures> = r.threads.iter().filter_map(|t| t.noise.as_ref()).collect();
        let most =
            |f: &dyn Fn(&crate::result::NoiseFigures) -> f64| figures.iter().map(|n| f(n)).fold(f64::NAN, f64::max);
        let st = &r.all.stats;
        let load = r.loads.first();
        cols.extend([
            p.workers.to_string(),
            format!("{:.5}", figures.iter().map(|n| n.available_pct).fold(f64::NAN, f64::min)),
            format!("{:.1}", most(&|n| n.noise_per_s_ns / 1e3)),
            format!("{:.1}", most(&|n| n.noises_per_s)),
            st.max_ns.map_or_else(String::new, |m| format!("{:.1}", m as f64 / 1e3)),
            st.percentiles_ns
                .get("99")
                .copied()
                .flatten()
                .map_or_else(String::new, |v| format!("{:.1}", v as f64 / 1e3)),
            load.map_or_else(String::new, |l| format!("{:.1}", l.rate_per_s)),
            load.map_or_else(String::new, |l| l.unit.clone()),
            load.and_then(|l| l.utilization).map_or_else(String::new, |u| format!("{u:.3}")),
        ]);
        let _ = w.write_record(&cols);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The threads a point measured: all but a runtime's control.
fn measured(r: &RunResult) -> impl Iterator<Item = &crate::result::ThreadResult> {
    let control = r.runtime.as_ref().and_then(|rt| rt.control.as_ref()).map(|c| c.thread);
    r.threads.iter().filter(move |t| Some(t.thread) != control)
}

/// `sweep.csv`: a header, then one row per point (written by the csv crate, which quotes a
/// value that needs it); a noise sweep gets [`NOISE_COLUMNS`].
pub fn csv(axis_names: &[String], rows: &[(&Point, &RunResult)]) -> String {
    if !rows.is_empty() && rows.iter().all(|(_, r)| r.kind == crate::result::Kind::Noise) {
        return noise_csv(axis_names, rows);
    }
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = axis_names.iter().filter(|a| *a != "workers").cloned().collect();
    header.extend(CSV_COLUMNS.iter().map(|c| c.to_string()));
    let working = rows.iter().any(|(_, r)| r.all.work.is_some());
    if working {
        header.extend(WORK_COLUMNS.iter().map(|c| c.to_string()));
    }
    let controlled = rows.iter().any(|(_, r)| r.runtime.as_ref().is_some_and(|rt| rt.control.is_some()));
    if controlled {
        header.extend(CONTROL_COLUMNS.iter().map(|c| c.to_string()));
    }
    let _ = w.write_record(&header);
    for (p, r) in rows {
        let st = &r.all.stats;
        let mut cols: Vec<String> = p.axes.iter().filter(|(k, _)| k != "workers").map(|(_, v)| v.clone()).collect();
        let load = r.loads.first();
        let pct = |k: &str| st.percentiles_ns.get(k).copied().flatten().map(|v| v as f64);
        cols.extend([
            p.workers.to_string(),
            ms(st.min_ns.map(|v| v as f64)),
            ms(st.max_ns.map(|v| v as f64)),
            ms(st.mean_ns),
            ms(st.stdev_ns),
            ms(pct("99")),
            ms(pct("99.9")),
            st.missed.map_or_else(String::new, |m| m.to_string()),
            load.map_or_else(String::new, |l| format!("{:.1}", l.rate_per_s)),
            load.map_or_else(String::new, |l| l.unit.clone()),
            load.and_then(|l| l.utilization).map_or_else(String::new, |u| format!("{u:.3}")),
            ms(measured(r).filter_map(|t| t.drift_ns).max_by_key(|d| d.abs()).map(|d| d as f64)),
        ]);
        if working {
            let work = r.all.work.as_ref();
            let rp = |k: &str| work.and_then(|w| w.response.percentiles_ns.get(k).copied().flatten()).map(|v| v as f64);
            cols.extend([
                ms(rp("50")),
                ms(rp("99")),
                ms(rp("99.9")),
                ms(work.and_then(|w| w.response.max_ns).map(|v| v as f64)),
                work.map_or_else(String::new, |w| w.deadlines.misses.to_string()),
                work.map_or_else(String::new, |w| format!("{:.6}", w.miss_ratio)),
                ms(work.and_then(|w| w.run.max_ns).map(|v| v as f64)),
            ]);
        }
        if controlled {
            let c = r.runtime.as_ref().and_then(|rt| rt.control.as_ref());
            let c = c.and_then(|c| r.threads.iter().find(|t| t.thread == c.thread)).map(|t| &t.stats);
            cols.extend([
                ms(c.and_then(|s| s.percentiles_ns.get("99").copied().flatten()).map(|v| v as f64)),
                ms(c.and_then(|s| s.max_ns).map(|v| v as f64)),
            ]);
        }
        let _ = w.write_record(&cols);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}
