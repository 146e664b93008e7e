//! `rtlab import` and `rtlab show` on real cyclictest outputs (tests/fixtures/cyclictest) and
//! on malformed input.

mod common;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cyclictest").join(name)
}

fn import(path: &Path, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let o = rtlab().arg("import").arg(path).arg("-o").arg(&out).args(extra).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v = read_json(&out);
    assert_valid_run_result(&v);
    v
}

#[test]
fn every_reference_output_imports_into_a_valid_run_result() {
    for entry in std::fs::read_dir(fixture("")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "json" || e == "txt") {
            let v = import(&p, &[]);
            assert!(v["all"]["cycles"].as_u64().unwrap() > 0, "{}", p.display());
            assert_eq!(v["source"]["file"], p.display().to_string());
        }
    }
}

#[test]
fn json_2_10_keeps_cyclictests_figures_and_bounds_the_overflow_percentiles() {
    let v = import(&fixture("v2.10-t2-H60.json"), &[]);
    assert_eq!(v["source"]["format"], "cyclictest-json");
    assert_eq!(v["source"]["tool_version"], "2.10");
    assert_eq!(v["source"]["command_line"], "cyclictest -t2 -a -p80 -l1000 -q -H 60 --json=cyclictest_v2.10_H60.json");
    assert_eq!(v["start_time"], "2026-11-22T02:02:16.000000Z");
    assert_eq!(v["environment"]["kernel_release"], "6.18.44-fc-v769");
    assert_eq!(v["environment"]["preempt_rt"], false);
    let t = &v["threads"][0];
    assert_eq!(
        (t["cycles"].as_u64(), t["min_ns"].as_i64(), t["max_ns"].as_i64()),
        (Some(1000), Some(8000), Some(65000))
    );
    assert_eq!(t["mean_ns"], 12430.0, "avg 12.43 µs exactly");
    assert_eq!(t["cpu"], 0);
    assert_eq!(t["missed"], Value::Null, "cyclictest does not count missed periods");
    assert_eq!(t["stdev_ns"], Value::Null);
    assert_eq!(t["histogram"]["unbinned"], json!({"count": 1, "at_least_ns": 60000}));
    assert_eq!(t["percentiles_ns"]["50"], 12000);
    assert_eq!(t["percentiles_ns"]["99.9"], 55000);
    assert_eq!(t["percentiles_ns"]["99.99"], Value::Null);
    assert_eq!(t["percentiles_above_ns"], json!({"99.99": 60000, "99.999": 60000}));
    assert_eq!(v["threads"][1]["mean_ns"], 11560.0);
    assert_eq!(v["all"]["cycles"], 2000);
    assert_eq!(v["config"], Value::Null);
}

#[test]
fn json_2_4_without_a_histogram_has_no_percentiles() {
    let v = import(&fixture("v2.4-t1-nohist.json"), &[]);
    let t = &v["threads"][0];
    assert_eq!(t["histogram"], Value::Null);
    assert!(t["percentiles_ns"].as_object().unwrap().values().all(Value::is_null));
    assert_eq!(
        (t["min_ns"].as_i64(), t["max_ns"].as_i64(), t["mean_ns"].as_f64()),
        (Some(7000), Some(51000), Some(11800.0))
    );
    assert_eq!(v["source"]["tool_version"], "2.40");
}

#[test]
fn a_nan_average_of_a_thread_without_cycles_imports_as_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let text = include_str!("fixtures/cyclictest/v2.10-t2-nohist.json")
        .replace("\"cycles\": 141", "\"cycles\": 0")
        .replace("\"avg\": 13.82", "\"avg\": -nan")
        .replace("\"avg\": 14.53", "\"avg\": nan")
        .replace("\"cycles\": 200", "\"cycles\": 0");
    let p = dir.path().join("nan.json");
    std::fs::write(&p, text).unwrap();
    let v = import(&p, &[]);
    for t in v["threads"].as_array().unwrap() {
        assert_eq!((t["cycles"].as_u64(), &t["mean_ns"], &t["min_ns"]), (Some(0), &Value::Null, &Value::Null));
    }
}

#[test]
fn the_2_4_histogram_text_with_total_imports_exactly() {
    let v = import(&fixture("v2.4-hist-t1-h60.txt"), &[]);
    let t = &v["threads"][0];
    assert_eq!(t["cycles"], 3000, "2993 in the rows + 7 overflows");
    assert_eq!(
        (t["min_ns"].as_i64(), t["max_ns"].as_i64(), t["mean_ns"].as_f64()),
        (Some(7000), Some(95000), Some(11000.0))
    );
    assert_eq!(t["histogram"]["unbinned"], json!({"count": 7, "at_least_ns": 60000}));
    assert_eq!(v["source"]["format"], "cyclictest-histogram");
}

#[test]
fn the_2_10_histofall_text_ignores_the_summary_column() {
    let v = import(&fixture("v2.10-histofall-t2-H60.txt"), &[]);
    assert_eq!(v["threads"].as_array().unwrap().len(), 2);
    assert_eq!(v["threads"][0]["cycles"], 1000);
    assert_eq!(v["threads"][1]["cycles"], 1000);
    assert_eq!(v["threads"][0]["histogram"]["unbinned"]["count"], 1);
    assert_eq!(v["threads"][1]["max_ns"], 19000);
    // Rows stop at 54 in this sparse layout, so an overflow is only known to be ≥ 55 µs.
    assert_eq!(v["threads"][0]["histogram"]["unbinned"]["at_least_ns"], 55000);
}

#[test]
fn quiet_lines_import_with_interval_and_priority() {
    let v = import(&fixture("v2.4-quiet-t2.txt"), &[]);
    let t: Vec<&Value> = v["threads"].as_array().unwrap().iter().collect();
    assert_eq!((t[0]["cycles"].as_u64(), t[1]["cycles"].as_u64()), (Some(3000), Some(1520)));
    assert_eq!((t[0]["interval_ns"].as_i64(), t[1]["interval_ns"].as_i64()), (Some(500_000), Some(1_000_000)));
    assert_eq!(t[0]["priority"], 80);
    assert_eq!(
        (t[1]["min_ns"].as_i64(), t[1]["mean_ns"].as_f64(), t[1]["max_ns"].as_i64()),
        (Some(8000), Some(11000.0), Some(34000))
    );
    assert_eq!(v["source"]["unit"], "us");
}

#[test]
fn nanosecond_quiet_lines_are_recognised_by_their_width() {
    let v = import(&fixture("v2.4-quiet-nsecs.txt"), &[]);
    assert_eq!(v["source"]["unit"], "ns");
    assert_eq!((v["threads"][0]["min_ns"].as_i64(), v["threads"][0]["max_ns"].as_i64()), (Some(9698), Some(54516)));
}

#[test]
fn rtlabs_own_cyclictest_json_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let spec = samples_file(dir.path(), "1000\n2000\n2500\n70000\n3000\n");
    let ct = dir.path().join("ct.json");
    let o = rtlab()
        .args(["cyclictest", "-q", "-h", "60", "--simulate", &spec])
        .arg(format!("--json={}", ct.display()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let v = import(&ct, &[]);
    let t = &v["threads"][0];
    // The file holds cyclictest's avg (of latencies truncated to µs): 15.6 µs, and that is
    // what an import of it can know.
    assert_eq!(
        (t["cycles"].as_u64(), t["min_ns"].as_i64(), t["max_ns"].as_i64(), t["mean_ns"].as_f64()),
        (Some(5), Some(1000), Some(70000), Some(15600.0))
    );
    assert_eq!(t["histogram"]["unbinned"], json!({"count": 1, "at_least_ns": 60000}));
}

#[test]
fn several_files_go_into_a_directory_one_result_each() {
    let dir = tempfile::tempdir().unwrap();
    let o = rtlab()
        .arg("import")
        .arg(fixture("v2.4-quiet-t1.txt"))
        .arg(fixture("v2.10-t2-H60.json"))
        .arg("-o")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_valid_run_result(&read_json(&dir.path().join("v2.4-quiet-t1.json")));
    assert_valid_run_result(&read_json(&dir.path().join("v2.10-t2-H60.json")));
    let o = rtlab()
        .arg("import")
        .arg(fixture("v2.4-quiet-t1.txt"))
        .arg(fixture("v2.4-quiet-t2.txt"))
        .args(["-o", "/tmp/not-a-dir.json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn show_prints_the_summary_of_a_result_or_of_a_cyclictest_file() {
    let o = rtlab().arg("show").arg(fixture("v2.4-t2-h80.json")).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(s.contains("imported from") && s.contains("ALL") && s.contains(">80.0"), "{s}");
    // A file without per-second maxima cannot be predicted from, and says so.
    let o = rtlab().arg("show").arg(fixture("v2.4-t2-h80.json")).args(["--predict", "24h"]).output().unwrap();
    let s = String::from_utf8(o.stdout).unwrap();
    assert!(s.contains("worst case to expect in 1 day: none given: this result holds no maxima per second"), "{s}");
    let dir = tempfile::tempdir().unwrap();
    let spec = samples_file(dir.path(), "1000\n2000\n");
    let r = dir.path().join("r.json");
    rtlab().args(["run", "-q", "--simulate", &spec, "--json"]).arg(&r).assert().success();
    let s = String::from_utf8(rtlab().arg("show").arg(&r).args(["-N"]).output().unwrap().stdout).unwrap();
    assert!(s.contains("min ns") && s.lines().nth(1).unwrap().contains("1000"), "{s}");
}

/// Imports `content` from a file and expects a one-line error naming the file (and line).
fn malformed(name: &str, content: &[u8], expect: &str) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, content).unwrap();
    let o = rtlab().arg("import").arg(&p).arg("-o").arg(dir.path().join("out.json")).output().unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(o.status.code(), Some(2), "{name}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(&p.display().to_string()) && err.contains(expect), "{name}: expected '{expect}' in {err}");
    assert!(!dir.path().join("out.json").exists(), "nothing written for bad input");
}

#[test]
fn malformed_input_is_refused_naming_the_file_and_line() {
    let json = include_str!("fixtures/cyclictest/v2.10-t2-H60.json");
    malformed("truncated.json", &json.as_bytes()[..json.len() / 2], "not valid JSON");
    malformed("empty.txt", b"", "empty");
    malformed("garbage.bin", &[0x7f, 0x45, 0x4c, 0x46, 0xff, 0xfe, 0x00, 0x01], "binary data");
    let hist = include_str!("fixtures/cyclictest/v2.4-hist-t1-h60.txt");
    malformed(
        "columns.txt",
        hist.replacen("000009 000204", "000009 000204\t000001", 1).as_bytes(),
        ":12: histogram row has 2 counts for 1 threads",
    );
    malformed(
        "nonnumeric.txt",
        hist.replacen("000009 000204", "000009 0002x4", 1).as_bytes(),
        ":12: histogram count '0002x4'",
    );
    malformed("huge.txt", hist.replacen("000009 000204", "000009 99999999999999999999999", 1).as_bytes(), ":12:");
    malformed("total.txt", hist.replacen("# Total: 000002993", "# Total: 000002990", 1).as_bytes(), "add up to 2993");
    malformed("cut.txt", hist.split("# Min").next().unwrap().as_bytes(), "Min Latencies");
    malformed(
        "tline.txt",
        b"T: 0 (25877) P:80 I:1000 C:   30x0 Min:      8 Act:   11 Avg:   12 Max:      59\n",
        ":1: cycle count",
    );
    malformed("prose.txt", b"hello world\n", "no cyclictest output found");
    malformed("nothread.json", b"{\"file_version\": 1}", "no \"thread\" object");
    malformed("badcount.json", json.replacen("\"cycles\": 1000", "\"cycles\": \"many\"", 1).as_bytes(), "\"cycles\"");
}

#[test]
fn real_rt_app_logs_import_and_the_fuzzers_crashing_inputs_are_refused_without_a_panic() {
    let ctl = import(&fixture("../rt-app/logs/rt-app-ctl-0.log"), &[]);
    assert_eq!(ctl["threads"][0]["cycles"], 58, "one sample per logged period");
    assert_eq!(ctl["threads"][0]["name"], "ctl");
    import(&fixture("../rt-app/logs/rt-app-logger-1.log"), &[]);
    // A task that ended no loop (it waited for an event that never came; rt-app's tutorial
    // example5 writes such logs): its two header lines import as a task with none.
    let idle = import(&fixture("../rt-app/logs/rt-app-idle-2.log"), &[]);
    assert_eq!((idle["threads"][0]["cycles"].as_u64(), idle["threads"][0]["policy"].as_str()), (Some(0), Some("fifo")));
    let corpus: Vec<PathBuf> =
        std::fs::read_dir(fixture("../rt-app/fuzz")).unwrap().flatten().map(|e| e.path()).collect();
    assert!(corpus.len() >= 6, "the corpus is in the tests");
    let dir = tempfile::tempdir().unwrap();
    for path in corpus {
        let out = rtlab().arg("import").arg(&path).arg("-o").arg(dir.path().join("x.json")).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", path.display());
        assert!(!stderr.contains("panicked") && stderr.trim().lines().count() == 1, "{}: {stderr}", path.display());
    }
}

#[test]
fn an_import_is_refused_when_its_counts_overflow_and_what_it_writes_rtlab_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let footer = "# Total: 000000003\n# Min Latencies: 00000\n# Avg Latencies: 00001\n# Max Latencies: 00005\n# Histogram Overflows: 00000\n";
    let over = dir.path().join("over.txt");
    std::fs::write(&over, format!("# Histogram\n000000 18446744073709551615\n000001 000002\n{footer}")).unwrap();
    let out = rtlab().arg("import").arg(&over).arg("-o").arg(dir.path().join("o.json")).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), err.trim().lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("past 64 bits"), "{err}");
    // A bucket at the edge of 64 bits of ns: imported only as a result rtlab reads back.
    let edge = dir.path().join("edge.txt");
    std::fs::write(&edge, format!("# Histogram\n000000 000001\n18446744073709551 000002\n{footer}")).unwrap();
    let json = dir.path().join("e.json");
    let out = rtlab().arg("import").arg(&edge).arg("-o").arg(&json).output().unwrap();
    if out.status.success() {
        let show = rtlab().arg("show").arg(&json).output().unwrap();
        assert!(show.status.success(), "{}", String::from_utf8_lossy(&show.stderr));
    } else {
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    }
}
