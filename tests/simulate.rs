//! Deterministic end-to-end tests of `rtlab run` through the hidden simulation mode: the real
//! loop, bookkeeping, result file, summary and verdict, fed with known latencies.

mod common;
use common::*;
use serde_json::{json, Value};

/// Thread 0: 1, 2, 3, 4, 10 µs. Thread 1: 0.5 µs, 2.5 ms (two missed 1 ms periods), 1.5 µs.
const TWO_THREADS: &str = "0 1000\n0 2000\n0 3000\n0 4000\n0 10000\n1 500\n1 2500000\n1 1500\n";

fn sim_run(samples: &str, extra: &[&str]) -> (Value, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let spec = samples_file(dir.path(), samples);
    let json = dir.path().join("r.json");
    let out = rtlab()
        .args(["run", "-q", "-i", "1ms", "--simulate", &spec, "--json"])
        .arg(&json)
        .args(extra)
        .output()
        .unwrap();
    let v = read_json(&json);
    assert_valid_run_result(&v);
    (v, out)
}

#[test]
fn statistics_of_known_samples_come_out_exactly() {
    let (r, out) = sim_run(TWO_THREADS, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(r["simulated"], true);
    assert_eq!(r["end_reason"], "loops");
    let t0 = &r["threads"][0];
    assert_eq!(t0["cycles"], 5);
    assert_eq!(t0["missed"], 0);
    assert_eq!((t0["min_ns"].as_i64(), t0["max_ns"].as_i64()), (Some(1000), Some(10000)));
    assert_eq!(t0["max_at_cycle"], 4);
    assert_eq!(t0["mean_ns"], 4000.0);
    assert_eq!(t0["stdev_ns"].as_f64().unwrap(), 10f64.sqrt() * 1000.0);
    assert_eq!(
        t0["percentiles_ns"],
        json!({"50": 4000, "90": 10000, "99": 10000, "99.9": 10000, "99.99": 10000, "99.999": 10000})
    );
    assert_eq!(
        t0["histogram"],
        json!({"bucket_ns": 1000, "range_ns": 10000000, "buckets": [
            {"lo_ns": 1000, "hi_ns": 2000, "count": 1}, {"lo_ns": 2000, "hi_ns": 3000, "count": 1},
            {"lo_ns": 3000, "hi_ns": 4000, "count": 1}, {"lo_ns": 4000, "hi_ns": 5000, "count": 1},
            {"lo_ns": 10000, "hi_ns": 11000, "count": 1}], "unbinned": null})
    );
    let t1 = &r["threads"][1];
    assert_eq!((t1["cycles"].as_u64(), t1["missed"].as_u64()), (Some(3), Some(2)));
    assert_eq!((t1["max_ns"].as_i64(), t1["max_at_cycle"].as_u64()), (Some(2_500_000), Some(1)));
    assert_eq!(t1["mean_ns"], 834000.0);
    assert_eq!(t1["percentiles_ns"]["50"], 2000);
    assert_eq!(t1["percentiles_ns"]["90"], 2_500_000);
    let all = &r["all"];
    assert_eq!((all["cycles"].as_u64(), all["missed"].as_u64()), (Some(8), Some(2)));
    assert_eq!((all["min_ns"].as_i64(), all["max_ns"].as_i64()), (Some(500), Some(2_500_000)));
    assert_eq!((all["max_at_thread"].as_u64(), all["max_at_cycle"].as_u64()), (Some(1), Some(1)));
    assert_eq!(all["mean_ns"], 315250.0);
    assert_eq!(all["threads"], 2);
    assert_eq!(r["verdict"]["status"], "not_checked");
    let kinds: Vec<&str> = r["warnings"].as_array().unwrap().iter().map(|w| w["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["missed_periods"]);
    let message = r["warnings"][0]["message"].as_str().unwrap();
    assert!(message.contains("run with --explain to see what delayed them"), "the fix says where to look: {message}");
}

#[test]
fn threads_are_placed_round_robin_and_intervals_grow_by_the_distance() {
    let (r, _) = sim_run(TWO_THREADS, &["-d", "250us", "-a", "0"]);
    assert_eq!(r["threads"][0]["interval_ns"], 1_000_000);
    assert_eq!(r["threads"][1]["interval_ns"], 1_250_000);
    assert_eq!(r["threads"][0]["cpu"], 0);
    assert_eq!(r["threads"][1]["cpu"], 0);
    assert_eq!(r["config"]["distance_ns"], 250_000);
}

#[test]
fn exceeding_max_latency_fails_the_verdict_with_exit_code_3_naming_thread_time_and_excess() {
    let (r, out) = sim_run(TWO_THREADS, &["--max-latency", "5"]);
    assert_eq!(out.status.code(), Some(3));
    let v = &r["verdict"];
    assert_eq!(v["status"], "fail");
    assert_eq!(v["threshold_ns"], 5000);
    let ex = v["exceeded"].as_array().unwrap();
    assert_eq!(ex.len(), 2);
    assert_eq!((ex[0]["thread"].as_u64(), ex[0]["count"].as_u64()), (Some(0), Some(1)));
    assert_eq!((ex[0]["first_cycle"].as_u64(), ex[0]["first_latency_ns"].as_i64()), (Some(4), Some(10000)));
    assert_eq!(ex[0]["over_by_ns"], 5000);
    assert_eq!(ex[1]["over_by_ns"], 2_495_000);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("FAIL: 2 samples exceeded 5.0 µs"), "{stdout}");
    assert!(stdout.contains("thread 1 (CPU") && stdout.contains("2495.0 µs over"), "{stdout}");
}

#[test]
fn exceedances_are_counted_in_bursts_with_their_rate_per_hour_and_time_between() {
    // Above 10 µs: 15 and 16 (one burst), 20 (another); 7 samples of a 1 ms period.
    let (r, out) = sim_run("1000\n2000\n15000\n16000\n3000\n20000\n1000\n", &["--max-latency", "10us"]);
    assert_eq!(out.status.code(), Some(3));
    let x = &r["all"]["exceedances"];
    assert_eq!(
        (x["threshold_ns"].as_i64(), x["samples"].as_u64(), x["bursts"].as_u64()),
        (Some(10_000), Some(3), Some(2))
    );
    assert_eq!(r["threads"][0]["exceedances"], *x, "one thread: its figures are all's");
    let hours = r["duration_s"].as_f64().unwrap() / 3600.0;
    let rate = &x["rate"];
    // Equal to the last bits an architecture may round differently (aarch64's fused multiply-add).
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
    assert!(close(rate["hours"].as_f64().unwrap(), hours), "{rate}");
    assert!(close(rate["per_hour"].as_f64().unwrap(), 2.0 / hours), "{rate}");
    // Garwood's 95 % interval for 2 events: [0.2422, 7.2247].
    let (low, high) = (rate["per_hour_low"].as_f64().unwrap() * hours, rate["per_hour_high"].as_f64().unwrap() * hours);
    assert!((low - 0.2422).abs() < 1e-3 && (high - 7.2247).abs() < 1e-3, "{rate}");
    assert!(close(rate["mean_between_s"].as_f64().unwrap(), 3600.0 / (2.0 / hours)), "{rate}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("above 10.0 µs: 3 samples in 2 bursts in "), "{stdout}");
    assert!(
        stdout.contains("bursts an hour [") && stdout.contains("(95 %, bursts taken as a Poisson process)"),
        "{stdout}"
    );
    // The report says how often, and what the latency took of the period.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    std::fs::write(&json, serde_json::to_vec(&r).unwrap()).unwrap();
    let md = dir.path().join("r.md");
    rtlab().arg("report").arg(&json).arg("-o").arg(&md).assert().success();
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("How often: above 10.0 µs: 3 samples in 2 bursts"), "{text}");
    let share =
        text.lines().find(|l| l.starts_with("| 0 ") && l.contains(" 1 ms ")).unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = share.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(
        cells,
        ["0", "1 ms", "0.4 %", "2.0 %", "2.0 %", "2.0 %"],
        "p50 4 µs (its bucket's upper edge), p99 and max 20 µs, of 1 ms"
    );
}

#[test]
fn staying_under_max_latency_passes_with_exit_code_0() {
    let (r, out) = sim_run(TWO_THREADS, &["--max-latency", "3ms"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(r["verdict"]["status"], "pass");
    assert!(String::from_utf8(out.stdout).unwrap().contains("PASS"));
}

#[test]
fn breaktrace_stops_at_the_first_sample_above_it() {
    let (r, out) = sim_run("1000\n5000\n1000\n1000\n", &["-b", "2us"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(r["end_reason"], "breaktrace");
    assert_eq!(r["threads"][0]["cycles"], 2);
    assert_eq!(r["verdict"]["exceeded"][0]["first_cycle"], 1);
}

#[test]
fn warm_up_cycles_are_left_out_of_the_statistics() {
    let (r, _) = sim_run(TWO_THREADS, &["--warm-up", "2", "-t", "2"]);
    assert_eq!(r["threads"][0]["cycles"], 3);
    assert_eq!(r["threads"][0]["min_ns"], 3000);
    assert_eq!(r["threads"][1]["cycles"], 1);
    assert_eq!(r["config"]["warmup_cycles"], 2);
}

#[test]
fn a_warm_up_time_becomes_whole_periods_per_thread() {
    let (r, _) = sim_run(TWO_THREADS, &["--warm-up", "1500us"]);
    // 1.5 ms at a 1 ms period rounds up to 2 periods
    assert_eq!(r["threads"][0]["cycles"], 3);
    assert_eq!(r["config"]["warmup_ns"], 1_500_000);
}

#[test]
fn loops_limit_every_thread() {
    let (r, _) = sim_run(TWO_THREADS, &["-l", "2"]);
    assert_eq!(r["threads"][0]["cycles"], 2);
    assert_eq!(r["threads"][1]["cycles"], 2);
}

#[test]
fn relative_sleeps_accumulate_drift_and_absolute_sleeps_do_not() {
    let samples = "50000\n".repeat(100);
    let (abs, _) = sim_run(&samples, &["--method", "abs"]);
    let (rel, out) = sim_run(&samples, &["--method", "rel"]);
    assert_eq!(abs["threads"][0]["drift_ns"], 50_000);
    assert_eq!(rel["threads"][0]["drift_ns"], 5_000_000);
    assert!(String::from_utf8(out.stdout).unwrap().contains("period drift 5000.0 µs after 100 cycles"));
}

#[test]
fn a_negative_latency_is_counted_and_clamped_never_wrapped() {
    let (r, _) = sim_run("-5000\n2000\n", &[]);
    let t = &r["threads"][0];
    assert_eq!((t["negative"].as_u64(), t["min_ns"].as_i64()), (Some(1), Some(-5000)));
    assert_eq!(t["histogram"]["buckets"][0], json!({"lo_ns": 0, "hi_ns": 1000, "count": 1}));
    assert!(r["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "negative_latencies"));
}

#[test]
fn latencies_beyond_the_range_are_kept_in_log_buckets() {
    let (r, _) = sim_run("1000\n25000000\n", &["--range", "10ms"]);
    let b = &r["threads"][0]["histogram"]["buckets"];
    assert_eq!(b.as_array().unwrap().len(), 2);
    let (lo, hi) = (b[1]["lo_ns"].as_u64().unwrap(), b[1]["hi_ns"].as_u64().unwrap());
    assert!(lo <= 25_000_000 && 25_000_000 < hi && (hi - lo) * 32 <= lo, "[{lo},{hi})");
    assert_eq!(r["threads"][0]["percentiles_ns"]["99"], 25_000_000);
}

#[test]
fn the_same_seed_gives_the_same_statistics() {
    let run = || {
        let (r, _) = sim_run_seed(&["-t", "2", "-l", "30000"]);
        (r["threads"].clone(), r["all"]["percentiles_ns"].clone(), r["all"]["missed"].clone())
    };
    let strip = |mut t: (Value, Value, Value)| {
        for th in t.0.as_array_mut().unwrap() {
            th.as_object_mut().unwrap().remove("max_at_time");
        }
        t
    };
    assert_eq!(strip(run()), strip(run()));
}

fn sim_run_seed(extra: &[&str]) -> (Value, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = rtlab().args(["run", "-q", "--simulate", "seed:7", "--json"]).arg(&json).args(extra).output().unwrap();
    let v = read_json(&json);
    assert_valid_run_result(&v);
    (v, out)
}

#[test]
fn a_simulated_duration_records_the_periods_that_fit() {
    let (r, _) = sim_run_seed(&["-t", "1", "-D", "2s", "-i", "500us"]);
    assert_eq!(r["threads"][0]["cycles"], 4000);
}

#[test]
fn json_to_stdout_is_pure_json_and_the_summary_goes_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let spec = samples_file(dir.path(), TWO_THREADS);
    let out = rtlab().args(["run", "-i", "1ms", "--simulate", &spec, "--json", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    assert_valid_run_result(&v);
    assert!(String::from_utf8(out.stderr).unwrap().contains("ALL"));
}

#[test]
fn the_summary_table_shows_every_thread_the_aggregate_and_the_maximum() {
    let (_, out) = sim_run(TWO_THREADS, &["-N"]);
    let s = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines[0].contains("min ns") && lines[0].contains("p99.999"), "{s}");
    assert!(lines[1].trim_start().starts_with("0 "), "{s}");
    assert!(lines[2].trim_start().starts_with("1 "), "{s}");
    assert!(lines[3].trim_start().starts_with("ALL"), "{s}");
    assert!(lines[3].contains("2500000"), "{s}");
    assert!(s.contains("max 2500000 ns on thread 1 at cycle 1"), "{s}");
}

#[test]
fn a_samples_file_with_garbage_is_a_usage_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let spec = samples_file(dir.path(), "1000\nfoo\n");
    let out = rtlab().args(["run", "--simulate", &spec]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("samples.txt:2:"));
}

/// Mounts tracefs if this process may and it is not mounted; true when trace_marker exists.
fn tracefs_available() -> bool {
    let root = std::path::Path::new("/sys/kernel/tracing");
    if !root.join("trace_marker").exists() && is_root() {
        let _ = std::process::Command::new("mount").args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"]).status();
    }
    root.join("trace_marker").exists()
        && std::fs::OpenOptions::new().write(true).open(root.join("trace_marker")).is_ok()
}

#[test]
fn tracemark_writes_a_marker_and_stops_tracing_at_the_breaktrace_hit_or_says_why_not() {
    let available = tracefs_available();
    let tracing_on = std::path::Path::new("/sys/kernel/tracing/tracing_on");
    if available {
        std::fs::write(tracing_on, "1").unwrap();
    }
    let (r, out) = sim_run("1000\n7000\n1000\n", &["-b", "5us", "--tracemark"]);
    assert_eq!(out.status.code(), Some(3));
    if available {
        assert_eq!(r["verdict"]["tracemark_written"], true);
        assert_eq!(std::fs::read_to_string(tracing_on).unwrap().trim(), "0", "tracing stopped");
        // The global buffer holds what anything else traced too: a thread's name is bytes, not UTF-8.
        let trace = String::from_utf8_lossy(&std::fs::read("/sys/kernel/tracing/trace").unwrap()).into_owned();
        assert!(trace.contains("rtlab: hit latency threshold (7000 ns > 5000 ns) on thread 0"), "{trace}");
        std::fs::write(tracing_on, "1").unwrap();
        assert!(String::from_utf8(out.stdout).unwrap().contains("trace marker written"));
    } else {
        assert_eq!(r["verdict"]["tracemark_written"], false);
        assert!(r["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "tracemark_unavailable"));
    }
}

#[test]
fn a_run_whose_seconds_are_alike_has_intervals_that_are_its_figures_and_a_short_one_says_order_statistics() {
    // Every tenth sample 8.5 µs, the others 3.5 µs: any second holds the same mixture, so every
    // resample of its seconds has the run's median (the 1 µs bucket's upper edge, 4 µs), p99 and
    // maximum (8.5 µs: the bucket's edge, 9 µs, capped at the largest sample).
    let line = |i: usize| format!("0 {}\n", if i % 10 == 9 { 8_500 } else { 3_500 });
    let long: String = (0..14_000).map(line).collect();
    let (r, out) = sim_run(&long, &["-t", "1"]);
    let t = &r["threads"][0];
    let u = &t["uncertainty"];
    assert_eq!(u["method"], "block-bootstrap", "{u}");
    assert!(u["blocks"].as_u64().unwrap() >= 10 && u["block_ns"] == 1_000_000_000i64, "{u}");
    assert_eq!((u["confidence"].as_f64(), u["resamples"].as_u64()), (Some(0.95), Some(1000)));
    let bound = |lo: i64, hi: i64| json!({"low_ns": lo, "high_ns": hi});
    assert_eq!((t["percentiles_ns"]["50"].as_i64(), t["percentiles_ns"]["99"].as_i64()), (Some(4_000), Some(8_500)));
    assert_eq!(u["percentiles_ns"]["50"], bound(4_000, 4_000));
    assert_eq!(u["percentiles_ns"]["99"], bound(8_500, 8_500));
    assert_eq!(u["max_ns"], bound(8_500, 8_500));
    assert_eq!(r["all"]["uncertainty"], *u, "one thread: all is the thread");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("95 % intervals, µs (block bootstrap over "), "{text}");
    assert!(text.contains("p99 8.5 [8.5, 8.5]"), "{text}");
    // Three seconds are too few blocks: order statistics of the 3 000 samples as independent.
    let short: String = (0..3_000).map(line).collect();
    let (r, out) = sim_run(&short, &["-t", "1"]);
    let u = &r["threads"][0]["uncertainty"];
    assert_eq!(u["method"], "order-statistics", "{u}");
    assert!(u.get("blocks").is_none() && u.get("resamples").is_none(), "{u}");
    assert_eq!(u["percentiles_ns"]["50"], bound(4_000, 4_000));
    // 300 samples of 8.5 µs: the 99th percentile's rank (2 970) and the ranks around it are all
    // in the top bucket.
    assert_eq!(u["percentiles_ns"]["99"], bound(8_500, 8_500));
    // Nothing above the largest sample is bounded by the data.
    assert_eq!(u["max_ns"], json!({"low_ns": 8_500, "high_ns": null}));
    assert!(String::from_utf8_lossy(&out.stdout).contains("order statistics of 3000 samples taken as independent"));
}

/// `n` latencies (ns, one a line) of 10 µs plus an exponential of mean 20 µs, from a fixed seed,
/// each plus `drift_ns` times its index.
fn exponential_samples(n: usize, drift_ns: f64) -> String {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut out = String::with_capacity(n * 8);
    for i in 0..n {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
        out += &format!("{}\n", (10_000.0 - 20_000.0 * (1.0 - u).ln() + drift_ns * i as f64) as i64);
    }
    out
}

#[test]
fn the_worst_case_predicted_from_a_known_light_tail_holds_its_true_median() {
    // 200 s of 1 ms periods; over an hour's 3.6 million samples the maximum's median is
    // 10 + 20·(−ln(1 − 0.5^(1/3.6e6))) µs = 319.3 µs.
    let (r, out) = sim_run(&exponential_samples(200_000, 0.0), &["--predict", "1h"]);
    assert_eq!(out.status.code(), Some(0));
    let p = &r["all"]["prediction"];
    assert_eq!((p["horizon_ns"].as_i64(), p["confidence"].as_f64()), (Some(3_600_000_000_000), Some(0.9)), "{p}");
    assert_eq!(r["threads"][0]["prediction"], *p, "one thread: its prediction is all's");
    assert_eq!(p["block_ns"].as_i64().unwrap() % 1_000_000_000, 0, "{p}");
    let f = &p["forecast"];
    let ns = |k: &str| f[k].as_i64().unwrap_or_else(|| panic!("{k}: {p}"));
    let level = |i: usize| f["level_ns"][i].as_i64().unwrap();
    assert!(ns("low_ns") <= ns("expected_ns") && ns("expected_ns") <= ns("high_ns"), "{p}");
    assert!(ns("low_ns") < 319_300 && 319_300 < ns("high_ns"), "the predicted interval misses the true median: {p}");
    assert!(level(1) < 319_300 && 319_300 < level(2), "the return level's interval misses it: {p}");
    assert!((f["shape"].as_f64().unwrap()).abs() < 0.15, "an exponential's maxima are Gumbel's (shape 0): {p}");
    // The summary says it, and `show --predict` of the saved result says the same.
    let stdout = String::from_utf8(out.stdout).unwrap();
    let line =
        stdout.lines().find(|l| l.starts_with("worst case to expect in 1 h: ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains(" (90 %; GEV shape "), "{line}");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    std::fs::write(&json, serde_json::to_vec(&r).unwrap()).unwrap();
    let shown = rtlab().arg("show").arg(&json).args(["--predict", "1h"]).output().unwrap();
    assert!(String::from_utf8(shown.stdout).unwrap().contains(line), "show --predict differs from the run's");
    let plain = rtlab().arg("show").arg(&json).output().unwrap();
    assert!(String::from_utf8(plain.stdout).unwrap().contains(line), "the saved prediction is shown");
}

#[test]
fn a_run_that_drifts_gets_no_worst_case_and_says_why() {
    // Each second 1 µs later than the one before it.
    let (r, out) = sim_run(&exponential_samples(60_000, 1.0), &["--predict", "24h"]);
    let p = &r["all"]["prediction"];
    assert!(p.get("forecast").is_none(), "{p}");
    let why = p["refused"].as_str().unwrap();
    assert!(why.starts_with("the block maxima drift (Mann–Kendall p = "), "{why}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains(&format!("worst case to expect in 1 day: none given: {why}")), "{stdout}");
    // Too short a run: fewer blocks than a fit needs.
    let (r, _) = sim_run(&exponential_samples(5_000, 0.0), &["--predict", "24h"]);
    let why = r["all"]["prediction"]["refused"].as_str().unwrap().to_string();
    assert!(why.contains("block maxima, fewer than the 30 a fit needs: run longer"), "{why}");
    assert!(r["all"].get("prediction").is_some() && sim_run("1000\n", &[]).0["all"].get("prediction").is_none());
}
