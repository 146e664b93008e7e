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

/// `sweep.csv`: a header, then one row per point (written by the csv crate, which quotes a
/// value that needs it).
pub fn csv(axis_names: &[String], rows: &[(&Point, &RunResult)]) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = axis_names.iter().filter(|a| *a != "workers").cloned().collect();
    header.extend(CSV_COLUMNS.iter().map(|c| c.to_string()));
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
            ms(r.threads.iter().filter_map(|t| t.drift_ns).max_by_key(|d| d.abs()).map(|d| d as f64)),
        ]);
        let _ = w.write_record(&cols);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}
