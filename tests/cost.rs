//! What a run costs rtlab itself: said in the result, shown by `show` and the report, and a
//! guard that fails when a plain run grows heavier.

mod common;
use common::{read_json, rtlab};

/// The most memory a plain `rtlab run -q -D 2s` of this test build (the debug profile, whose
/// code is larger than the release build's) may hold resident at once: what it measured when
/// the budget was set (BENCHMARKS.md, section 16) plus about a quarter. A capability that makes
/// every run heavier crosses it; raise it only with the reason in BENCHMARKS.md.
const PEAK_RSS_BUDGET_KIB: u64 = 36 * 1024;

/// The most CPU time (user and kernel, every thread) the same run may take: what it measured
/// plus a margin wide enough for a busy host, whose interrupts and steal are charged to it.
const CPU_BUDGET_S: f64 = 0.5;

#[test]
fn a_plain_run_says_what_it_cost_and_stays_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("plain.json");
    rtlab().args(["run", "-q", "-D", "2s", "--json"]).arg(&json).assert().success();
    let r = read_json(&json);
    common::assert_valid_run_result(&r);
    let cost = &r["cost"];
    let rss = cost["peak_rss_kib"].as_u64().expect("the result says its peak RSS");
    let (user, system) = (cost["user_cpu_s"].as_f64().unwrap(), cost["system_cpu_s"].as_f64().unwrap());
    let measuring = cost["measuring_cpu_s"].as_f64().expect("the measuring threads are rtlab's own");
    println!("plain run: peak RSS {rss} KiB, CPU {user:.3} s user + {system:.3} s kernel, measuring {measuring:.3} s");
    assert!(rss > 0 && user + system > 0.0 && measuring > 0.0, "{cost}");
    // The measuring threads are part of the process: their time is inside its time (both are
    // the kernel's runtime of the threads; 1 ms for the rounding of getrusage's split).
    assert!(measuring <= user + system + 0.001, "measuring {measuring} s > process {} s", user + system);
    assert!(rss <= PEAK_RSS_BUDGET_KIB, "a plain run held {rss} KiB, over its budget of {PEAK_RSS_BUDGET_KIB} KiB");
    assert!(
        user + system <= CPU_BUDGET_S,
        "a plain run took {} s of CPU, over its budget of {CPU_BUDGET_S} s",
        user + system
    );
}

#[test]
fn show_and_the_report_say_what_the_run_cost_and_imported_data_claims_no_cost() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    rtlab().args(["run", "-q", "-t", "1", "-l", "200", "--json"]).arg(&json).assert().success();
    let r = read_json(&json);
    let rss = r["cost"]["peak_rss_kib"].as_u64().unwrap();
    let shown = rtlab().arg("show").arg(&json).assert().success().get_output().stdout.clone();
    let shown = String::from_utf8(shown).unwrap();
    let line = shown.lines().find(|l| l.starts_with("cost to rtlab: ")).expect("show has a cost line");
    // The same figure in the unit formatter's words: KiB below 1 MiB, MiB with one decimal above.
    let size = if rss >= 1024 { format!("{:.1} MiB peak resident", rss as f64 / 1024.0) } else { format!("{rss} KiB") };
    assert!(line.contains(&size), "{line} does not say {size}");
    assert!(line.contains("the measuring threads "), "{line}");
    let html = dir.path().join("r.html");
    rtlab().arg("report").arg(&json).arg("-o").arg(&html).assert().success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("what it cost rtlab") && page.contains(&size), "the report's provenance has no cost");
    // A file rtlab did not run says nothing of rtlab's cost.
    let imported = dir.path().join("i.json");
    let ct = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cyclictest/v2.10-t2-H60.json");
    rtlab().arg("import").arg(ct).arg("-o").arg(&imported).assert().success();
    assert!(read_json(&imported).get("cost").is_none(), "an import claims a cost");
}
