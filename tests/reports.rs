//! Plots, reports and comparisons, end to end from simulated runs, a simulated sweep, samples
//! files and imported cyclictest output.

mod common;

use common::{rtlab, samples_file};
use std::path::{Path, PathBuf};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cyclictest");

/// A seeded simulated run of two threads with its result file and samples file.
fn sim_run(dir: &Path, name: &str, seed: u32) -> (PathBuf, PathBuf) {
    let json = dir.join(format!("{name}.json"));
    let smp = dir.join(format!("{name}.smp"));
    rtlab()
        .args(["run", "--simulate", &format!("seed:{seed}"), "-t", "2", "-a", "0", "-l", "3000", "-i", "1ms", "-q"])
        .arg("--json")
        .arg(&json)
        .arg("--samples")
        .arg(&smp)
        .assert()
        .success();
    (json, smp)
}

fn sim_sweep(dir: &Path) -> PathBuf {
    let out = dir.join("sweep");
    rtlab()
        .args(["sweep", "--simulate", "seed:9", "--workers", "0..2", "-t", "1", "-l", "2000", "-q", "--out"])
        .arg(&out)
        .assert()
        .success();
    out
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR");
    (u32::from_be_bytes(bytes[16..20].try_into().unwrap()), u32::from_be_bytes(bytes[20..24].try_into().unwrap()))
}

fn assert_picture(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    if path.extension().unwrap() == "png" {
        assert_eq!(png_size(&bytes), (1200, 720), "{}", path.display());
        assert!(bytes.len() > 15_000, "{} is only {} bytes: nothing drawn?", path.display(), bytes.len());
        let pixmap = resvg::tiny_skia::Pixmap::decode_png(&bytes).unwrap();
        let dark = pixmap.pixels().iter().filter(|p| p.red() < 128 && p.green() < 128 && p.blue() < 128).count();
        assert!(dark > 2_000, "{}: only {dark} dark pixels — no text or axes?", path.display());
    } else {
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.starts_with("<svg"), "{}", path.display());
        assert!(text.contains("width=\"1200\"") && text.contains("height=\"720\""));
        assert!(!text.contains("<text"), "{}: text must be outlines (no font needed to view it)", path.display());
        assert!(text.matches("<path").count() > 100, "{}: too few paths", path.display());
    }
}

#[test]
fn every_plot_kind_renders_to_png_and_svg_of_the_right_size() {
    let dir = tempfile::tempdir().unwrap();
    let (json, smp) = sim_run(dir.path(), "a", 1);
    let sweep = sim_sweep(dir.path());
    let imported = PathBuf::from(format!("{FIXTURES}/v2.4-histofall-t2-H40.txt"));
    let jobs: [(&str, &Path, &[&str]); 5] = [
        ("histogram", &json, &[]),
        ("cdf", &json, &[]),
        ("timeseries", &smp, &["--threshold", "100us"]),
        ("sweep", &sweep, &[]),
        ("histogram", &imported, &[]),
    ];
    for (i, (kind, input, extra)) in jobs.iter().enumerate() {
        for ext in ["png", "svg"] {
            let out = dir.path().join(format!("{i}-{kind}.{ext}"));
            rtlab().args(["plot", "--kind", kind]).arg(input).args(*extra).arg("-o").arg(&out).assert().success();
            assert_picture(&out);
        }
    }
}

#[test]
fn the_kind_defaults_to_sweep_for_a_sweep_and_histogram_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = sim_sweep(dir.path());
    let out = dir.path().join("s.svg");
    rtlab().arg("plot").arg(&sweep).arg("-o").arg(&out).assert().success();
    let a = std::fs::read(&out).unwrap();
    rtlab().args(["plot", "--kind", "sweep"]).arg(sweep.join("sweep.json")).arg("-o").arg(&out).assert().success();
    assert_eq!(a, std::fs::read(&out).unwrap(), "a sweep directory and its sweep.json draw the same picture");
}

#[test]
fn plots_refuse_inputs_that_do_not_fit_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let (json, _) = sim_run(dir.path(), "a", 1);
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{ not json").unwrap();
    let truncated = dir.path().join("cut.smp");
    std::fs::write(&truncated, b"RTLSMP01\xff\x00\x00\x00{\"schema\"").unwrap();
    let nohist = format!("{FIXTURES}/v2.4-t1-nohist.json");
    let png = dir.path().join("x.png");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--kind".into(), "timeseries".into(), nohist.clone()], "needs a samples file"),
        (vec!["--kind".into(), "sweep".into(), json.display().to_string()], "needs a sweep directory"),
        (vec![nohist.clone()], "no histogram"),
        (vec![garbage.display().to_string()], "garbage.json"),
        (vec![truncated.display().to_string()], "cut short"),
        (vec![dir.path().display().to_string()], "without sweep.json"),
        (vec!["/nonexistent/run.json".into()], "cannot read"),
    ];
    for (args, expect) in cases {
        let out = rtlab().arg("plot").args(&args).arg("-o").arg(&png).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
    let out = rtlab().arg("plot").arg(&json).arg("-o").arg(dir.path().join("x.pdf")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(".png or .svg"));
    assert!(!png.exists(), "nothing is written on bad input");
}

/// The lines of a Markdown report that do not depend on the machine or the time: headings,
/// table headers, per-thread rows and pictures.
fn structure(md: &str) -> String {
    md.lines()
        .filter(|l| {
            l.starts_with('#')
                || l.starts_with("| thread")
                || l.starts_with("| metric")
                || l.starts_with("| 0 ")
                || l.starts_with("| 1 ")
                || l.starts_with("| ALL")
                || l.starts_with("![")
                || l.starts_with("| workers")
        })
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{name} differs from the snapshot (UPDATE_SNAPSHOTS=1 rewrites it after review):\n--- expected\n{expected}\n--- actual\n{actual}"
    );
}

#[test]
fn a_markdown_report_of_a_run_a_sweep_and_a_comparison_matches_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = sim_run(dir.path(), "a", 1);
    let (b, _) = sim_run(dir.path(), "b", 2);
    let sweep = sim_sweep(dir.path());
    let md = dir.path().join("rep.md");
    rtlab().arg("report").args([&a, &b, &sweep]).arg("-o").arg(&md).assert().success();
    let text = std::fs::read_to_string(&md).unwrap();
    snapshot("report.md.txt", &structure(&text));
    for pic in ["rep-compare-cdf.svg", "rep-histogram-0.svg", "rep-cdf-1.svg", "rep-sweep-2.svg"] {
        assert!(text.contains(&format!("]({pic})")), "{pic} not linked");
        assert_picture(&dir.path().join(pic));
    }
}

#[test]
fn an_html_report_is_one_self_contained_page_with_every_section() {
    let dir = tempfile::tempdir().unwrap();
    let (a, smp) = sim_run(dir.path(), "a", 1);
    let sweep = sim_sweep(dir.path());
    let html = dir.path().join("rep.html");
    let ct = format!("{FIXTURES}/v2.10-t2-H60.json");
    rtlab().arg("report").arg(&a).arg(&smp).arg(&sweep).arg(&ct).arg("-o").arg(&html).assert().success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("Content-Security-Policy") && page.contains("default-src 'none'"));
    for forbidden in ["<script", "<link", "<img", "src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!page.contains(forbidden), "the page must load nothing: found {forbidden}");
    }
    let heading = regex::Regex::new(r"<h([123])>([^<]*)</h").unwrap();
    let headings: Vec<String> = heading.captures_iter(&page).map(|c| format!("h{} {}", &c[1], &c[2])).collect();
    for h in [
        "h1 rtlab latency report",
        "h2 Comparison (baseline: a.json)",
        "h3 What differs",
        "h2 a.json",
        "h3 Per-thread summary",
        "h3 Warnings",
        "h3 Pictures",
        "h3 Machine setup (rtlab doctor)",
        "h2 a.smp",
        "h2 Sweep sweep",
        "h3 Sweep table",
        "h2 v2.10-t2-H60.json",
    ] {
        assert!(headings.iter().any(|x| x == h), "missing heading {h} in {headings:?}");
    }
    assert_eq!(
        page.matches("<figure").count(),
        11,
        "compare cdf + 2 per run ×3 + a timeseries per run with a series (a.json) or samples (a.smp) + sweep + sweep cdf"
    );
    assert_eq!(page.matches("<svg").count(), 11);
    assert!(page.contains("id=\"timeseries-1\""));
    assert!(page.contains("class=\"verdict not_checked\""));
    // Each run opens with the answer: its headline and its pictures before its tables; the
    // setup's details come last, folded.
    let run = &page[page.find("<h2>a.json</h2>").unwrap()..page.find("<h2>a.smp</h2>").unwrap()];
    let at = |s: &str| run.find(s).unwrap_or_else(|| panic!("{s} not in a.json's section"));
    assert!(at("class=\"headline\"") < at("<figure") && at("<figure") < at("<table"), "headline, pictures, tables");
    for folded in
        ["<summary>Configuration</summary>", "<summary>Provenance</summary>", "<summary>Environment</summary>"]
    {
        assert!(at(folded) > at("<h3>Machine setup (rtlab doctor)</h3>"), "{folded} is folded, after the setup");
    }
    for figure in ["max", "p99.9", "missed periods", "verdict", "machine setup"] {
        assert!(run.contains(&format!("<span class=\"k\">{figure}</span>")), "headline shows {figure}");
    }
}

#[test]
fn compare_prints_exact_differences_and_ratios_and_fails_on_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, samples: &str| {
        let spec = samples_file(dir.path(), samples);
        let json = dir.path().join(format!("{name}.json"));
        rtlab().args(["run", "--simulate", &spec, "-t", "1", "-l", "4", "-q", "--json"]).arg(&json).assert().success();
        json
    };
    let a = run("a", "1000\n2000\n3000\n4000\n");
    let b = run("b", "2000\n4000\n6000\n8000\n");
    let out = rtlab().arg("compare").args([&a, &b]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let row = |metric: &str| -> Vec<String> {
        let line =
            text.lines().find(|l| l.starts_with(&format!("| {metric} "))).unwrap_or_else(|| panic!("{metric}: {text}"));
        line.split('|').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect()
    };
    assert_eq!(row("mean"), vec!["mean", "2.5", "5.0", "+2.5", "2.000"]);
    assert_eq!(row("max"), vec!["max", "4.0", "8.0", "+4.0", "2.000"]);
    assert_eq!(row("min"), vec!["min", "1.0", "2.0", "+1.0", "2.000"]);
    assert_eq!(row("samples"), vec!["samples", "4", "4", "+0", "1.000"]);
    assert_eq!(row("p50"), vec!["p50", "3.0", "5.0", "+2.0", "1.667"]);
    // Each run's intervals: four samples are order statistics, Binomial(4, 1/2) for the median
    // (its lower end the smallest sample's bucket, no upper end at 95 %).
    let intervals = row("a.json");
    assert_eq!(
        intervals,
        vec![
            "a.json",
            "order statistics of 4 samples taken as independent: narrower than the truth",
            "3.0 [2.0, unbounded]",
            "4.0 [4.0, unbounded]",
            "4.0 [4.0, unbounded]",
            "4.0 [4.0, unbounded]"
        ]
    );
    assert!(text.contains("How far a rerun may land (95 % intervals, all threads, µs)"), "{text}");
    let fail =
        rtlab().arg("compare").args([&a, &b]).args(["--fail-if-worse", "50", "--percentile", "max"]).output().unwrap();
    assert_eq!(fail.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&fail.stdout).contains("FAIL: b.json max 8.0 µs is 100.0% worse than a.json (4.0 µs)")
    );
    rtlab().arg("compare").args([&a, &b]).args(["--fail-if-worse", "100", "--percentile", "max"]).assert().code(0);
    rtlab().arg("compare").args([&b, &a]).args(["--fail-if-worse", "0"]).assert().code(0);
    for bad in [vec!["--percentile", "p42"], vec!["--fail-if-worse", "ten"]] {
        let out = rtlab().arg("compare").args([&a, &b]).args(&bad).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
    let one = rtlab().arg("compare").arg(&a).output().unwrap();
    assert_eq!(one.status.code(), Some(2));
    let png = dir.path().join("tails.png");
    rtlab().arg("compare").args([&a, &b]).arg("-o").arg(&png).assert().success();
    assert_eq!(png_size(&std::fs::read(&png).unwrap()), (1200, 720));
}

#[test]
fn compare_of_two_groups_gives_each_figures_ratio_interval_and_verdict_and_fails_only_on_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, samples: &[i64]| {
        let text: String = samples.iter().map(|s| format!("{s}\n")).collect();
        let spec = samples_file(dir.path(), &text);
        let json = dir.path().join(format!("{name}.json"));
        rtlab().args(["run", "--simulate", &spec, "-t", "1", "-q", "--json"]).arg(&json).assert().success();
        json
    };
    // A's runs have maxima of 10, 11, 12, 13 µs; B's three times A's (the same samples below).
    let a: Vec<PathBuf> = (0..4).map(|i| run(&format!("a{i}"), &[1000, 2000, 10_000 + i * 1000])).collect();
    let b: Vec<PathBuf> = (0..4).map(|i| run(&format!("b{i}"), &[1000, 2000, 3 * (10_000 + i * 1000)])).collect();
    let compare = |a: &[PathBuf], b: &[PathBuf], extra: &[&str]| {
        rtlab().arg("compare").args(a).arg("--vs").args(b).args(extra).output().unwrap()
    };
    let out = compare(&a, &b, &["--fail-if-worse", "10", "--percentile", "max"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(3), "{text}");
    let row = |text: &str, figure: &str| -> Vec<String> {
        let line = text.lines().find(|l| l.starts_with(&format!("| {figure} "))).unwrap_or_else(|| panic!("{text}"));
        line.split('|').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect()
    };
    // 16 ratios of a B maximum to an A maximum: the 2nd smallest 30/12, the 2nd largest 36/10.
    assert_eq!(
        row(&text, "max"),
        ["max", "11.5", "10.0–13.0", "34.5", "30.0–39.0", "×3.000", "[×2.500, ×3.600]", "worse"]
    );
    assert_eq!(
        row(&text, "min"),
        ["min", "1.0", "1.0–1.0", "1.0", "1.0–1.0", "×1.000", "[×1.000, ×1.000]", "no evidence"]
    );
    assert!(text.contains("FAIL: B's max is more than 10% worse than A's at 97.1 % confidence"), "{text}");
    // The other way round it is better, and nothing fails.
    let back = compare(&b, &a, &["--fail-if-worse", "10", "--percentile", "max"]);
    assert_eq!(back.status.code(), Some(0));
    let back = String::from_utf8(back.stdout).unwrap();
    assert_eq!(row(&back, "max")[7], "better");
    assert!(back.contains("PASS: no evidence that B's max is more than 10% worse"), "{back}");
    // One run a side: no interval, never a failure, each run's own intervals shown.
    let one = compare(&a[..1], &b[..1], &["--fail-if-worse", "10", "--percentile", "max"]);
    assert_eq!(one.status.code(), Some(0));
    let one = String::from_utf8(one.stdout).unwrap();
    assert_eq!(row(&one, "max")[5..], ["×3.000", "unbounded", "inconclusive (one run a side)"]);
    assert!(one.contains("Each run's own 95 % intervals") && row(&one, "a0.json").len() == 6, "{one}");
    // Two runs a side: still no interval at 90 %, but the runs that would decide it.
    let two = String::from_utf8(compare(&a[..2], &b[..2], &[]).stdout).unwrap();
    assert!(row(&two, "max")[7].starts_with("inconclusive (about "), "{two}");
    for bad in [vec!["--percentile", "misses", "--fail-if-worse", "5"], vec!["--prometheus", "http://127.0.0.1:1"]] {
        let out = compare(&a, &b, &bad.iter().map(|s| &**s).collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn compare_works_on_imported_cyclictest_data_and_lists_environment_differences() {
    let a = format!("{FIXTURES}/v2.4-t2-h80.json");
    let b = format!("{FIXTURES}/v2.10-t2-H60.json");
    let out = rtlab().args(["compare", &a, &b]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("thread 1 (µs"), "per-thread tables: {text}");
    assert!(text.contains("What differs"));
    let differs = |field: &str| text.lines().any(|l| l.starts_with(&format!("| {field} ")));
    assert!(differs("source.tool_version") && differs("source.command_line"), "{text}");
    assert!(text.contains("≥80.0"), "percentiles among overflows are shown as lower bounds: {text}");
}

/// The report in a real browser: Debian's chromium, headless, takes a screenshot (not blank)
/// and dumps the DOM (the headings are there); no resource load fails or is refused.
#[test]
fn the_html_report_renders_in_chromium() {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find(|c| {
            std::process::Command::new("sh")
                .args(["-c", &format!("command -v {c}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("chromium is not installed: apt-get install chromium (.ci/run does)");
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = sim_run(dir.path(), "a", 1);
    let (b, _) = sim_run(dir.path(), "b", 2);
    let html = dir.path().join("rep.html");
    rtlab().arg("report").args([&a, &b]).arg("-o").arg(&html).assert().success();
    let url = format!("file://{}", html.display());
    let profile = dir.path().join("profile");
    let base = |extra: &[&str]| {
        let mut c = std::process::Command::new(chromium);
        c.args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(["--enable-logging=stderr", "--v=0"])
            .args(extra)
            .arg(&url);
        c
    };
    // The first screen (1280×900) shows the headline and a picture: the headline's boxes and
    // the first curve's colour (series 0 is #1f77b4).
    let first = dir.path().join("first.png");
    let out = base(&[&format!("--screenshot={}", first.display()), "--window-size=1280,900"]).output().unwrap();
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    let screen = resvg::tiny_skia::Pixmap::decode_png(&std::fs::read(&first).unwrap()).unwrap();
    let count = |rgb: (u8, u8, u8)| screen.pixels().iter().filter(|p| (p.red(), p.green(), p.blue()) == rgb).count();
    assert!(count((0xfa, 0xfb, 0xfc)) > 2_000, "the headline's boxes are on the first screen");
    assert!(count((31, 119, 180)) > 200, "a picture's curve is on the first screen");
    let shot = dir.path().join("shot.png");
    let out = base(&[&format!("--screenshot={}", shot.display()), "--window-size=1280,2400"]).output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "chromium failed: {log}");
    let pixmap = resvg::tiny_skia::Pixmap::decode_png(&std::fs::read(&shot).unwrap()).unwrap();
    assert_eq!((pixmap.width(), pixmap.height()), (1280, 2400));
    let mut colours: Vec<u32> =
        pixmap.pixels().iter().map(|p| u32::from_be_bytes([p.red(), p.green(), p.blue(), 0])).collect();
    let non_white = colours.iter().filter(|c| **c != 0xFFFF_FF00).count();
    colours.sort_unstable();
    colours.dedup();
    assert!(
        non_white > 50_000 && colours.len() > 50,
        "blank screenshot: {non_white} non-white pixels, {} colours",
        colours.len()
    );
    let dom = base(&["--dump-dom", "--window-size=1280,2400"]).output().unwrap();
    let dump = String::from_utf8_lossy(&dom.stdout);
    let log = log + &String::from_utf8_lossy(&dom.stderr);
    for h in [
        "<h1>rtlab latency report</h1>",
        "<h2>Comparison (baseline: a.json)</h2>",
        "<h3>Per-thread summary</h3>",
        "<h2>b.json</h2>",
    ] {
        assert!(dump.contains(h), "{h} not in the DOM");
    }
    // compare cdf, then per simulated run a histogram, a cdf and a timeseries (its series).
    assert_eq!(dump.matches("<svg").count(), 7);
    for bad in ["Failed to load resource", "Refused to", "net::ERR_", "Content Security Policy"] {
        assert!(!log.contains(bad), "the browser reported '{bad}':\n{log}");
    }
}

/// Checks that `svg` scales to its box (a viewBox of its own size, so a page narrower than the
/// picture shrinks it instead of cutting its right side off) and that its legend's text lies
/// inside the legend's box, and the box inside the picture.
fn assert_fits(svg: &str, what: &str) {
    let num = |re: &str| -> Vec<f64> {
        let caps = regex::Regex::new(re).unwrap().captures(svg).unwrap_or_else(|| panic!("{what}: no {re}"));
        caps.iter().skip(1).map(|c| c.unwrap().as_str().parse().unwrap()).collect()
    };
    let size = num(r#"^<svg width="([\d.]+)" height="([\d.]+)""#);
    let view = num(r#"^<svg [^>]*viewBox="0 0 ([\d.]+) ([\d.]+)""#);
    assert_eq!(view, size, "{what}: the viewBox is the picture's size");
    let Some(legend) =
        regex::Regex::new(r##"stroke="#b4b4b4" d="M ([\d.]+) ([\d.]+) L ([\d.]+) [\d.]+ L [\d.]+ ([\d.]+)"##)
            .unwrap()
            .captures(svg)
    else {
        return;
    };
    let b: Vec<f64> = legend.iter().skip(1).map(|c| c.unwrap().as_str().parse().unwrap()).collect();
    let (left, top, right, bottom) = (b[0], b[1], b[2], b[3]);
    assert!(left >= 0.0 && right <= size[0], "{what}: the legend [{left}, {right}] leaves the picture");
    // The glyphs drawn after the box, on its rows, are its labels.
    let rest = &svg[legend.get(0).unwrap().end()..];
    let point = regex::Regex::new(r"([\d.]+) ([\d.]+)").unwrap();
    let glyphs = regex::Regex::new(r##"<path fill="#[0-9a-f]{6}" stroke="none" d="([^"]*)""##).unwrap();
    let xs: Vec<f64> = glyphs
        .captures_iter(rest)
        .flat_map(|g| {
            point
                .captures_iter(g.get(1).unwrap().as_str())
                .map(|p| (p[1].parse().unwrap(), p[2].parse().unwrap()))
                .collect::<Vec<(f64, f64)>>()
        })
        .filter(|(_, y)| (top..=bottom).contains(y))
        .map(|(x, _)| x)
        .collect();
    assert!(!xs.is_empty(), "{what}: no legend text found");
    let (lo, hi) = xs.iter().fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(*x), b.max(*x)));
    assert!(lo >= left && hi <= right, "{what}: legend text [{lo}, {hi}] outside its box [{left}, {right}]");
}

#[test]
fn a_reports_pictures_shrink_with_the_page_and_every_legend_fits_its_picture() {
    let dir = tempfile::tempdir().unwrap();
    let (json, _) = sim_run(dir.path(), "two", 3);
    let html = dir.path().join("r.html");
    rtlab().arg("report").arg(&json).arg("-o").arg(&html).assert().success();
    let page = std::fs::read_to_string(&html).unwrap();
    let svgs: Vec<&str> =
        page.match_indices("<svg").map(|(at, _)| &page[at..at + page[at..].find("</svg>").unwrap()]).collect();
    assert!(svgs.len() >= 3, "histogram, cdf and timeseries: {}", svgs.len());
    svgs.iter().enumerate().for_each(|(i, svg)| assert_fits(svg, &format!("picture {i} of the report")));
    for kind in ["histogram", "histogram-linear", "cdf", "timeseries"] {
        let out = dir.path().join(format!("{kind}.svg"));
        rtlab().args(["plot", "--kind", kind]).arg(&json).arg("-o").arg(&out).assert().success();
        assert_fits(&std::fs::read_to_string(&out).unwrap(), kind);
    }
}

#[test]
fn a_control_character_in_a_name_cannot_deny_a_result_its_pictures_report_or_summary() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = rtlab()
        .args(["run", "--simulate", "seed:3", "-t", "2", "-D", "2s", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c == 0 || c == 3));
    // A watched program names its own threads, an rt-app file its tasks, a log its tags: here a
    // thread and the host carry terminal escapes and a byte that is no XML.
    let mut r: serde_json::Value = common::read_json(&json);
    r["threads"][0]["name"] = "evil\u{1}\u{1b}[2Jname".into();
    r["environment"]["hostname"] = "host\u{1b}]0;pwned\u{7}".into();
    let evil = dir.path().join("evil.json");
    std::fs::write(&evil, serde_json::to_string(&r).unwrap()).unwrap();
    for (args, file) in [
        (vec!["plot", "-o"], "p.svg"),
        (vec!["plot", "-o"], "p.png"),
        (vec!["report", "-o"], "r.html"),
        (vec!["report", "-o"], "r.md"),
        (vec!["show"], ""),
    ] {
        let mut cmd = rtlab();
        cmd.args(&args);
        if !file.is_empty() {
            cmd.arg(dir.path().join(file));
        }
        let out = cmd.arg(&evil).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?} {file}: {}", String::from_utf8_lossy(&out.stderr));
        let text = if file.is_empty() || file.ends_with("png") {
            String::from_utf8_lossy(&out.stdout).into_owned()
        } else {
            std::fs::read_to_string(dir.path().join(file)).unwrap()
        };
        let bad = text.chars().find(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'));
        assert_eq!(bad, None, "{args:?} {file}: a control character reached the output");
    }
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(
        html.contains("evil\u{fffd}\u{fffd}[2Jname") || html.contains("host\u{fffd}]0;pwned\u{fffd}"),
        "shown, made printable"
    );
}

#[test]
fn hostile_series_and_histograms_are_refused_by_every_reader_in_one_line_never_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = rtlab()
        .args(["run", "--simulate", "seed:4", "-t", "1", "-D", "3s", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c == 0 || c == 3));
    let good: serde_json::Value = common::read_json(&json);
    type Edit = fn(&mut serde_json::Value);
    let edits: [(&str, Edit); 4] = [
        ("interval", |r| r["threads"][0]["series"]["interval_ns"] = i64::MAX.into()),
        ("negative", |r| {
            let n = r["threads"][0]["series"]["max_ns"].as_array().unwrap().len();
            r["threads"][0]["series"]["max_ns"] = vec![-5_000_000i64; n].into();
        }),
        ("unsorted", |r| r["threads"][0]["histogram"]["buckets"].as_array_mut().unwrap().reverse()),
        ("overflow", |r| {
            let b = r["threads"][0]["histogram"]["buckets"].as_array_mut().unwrap();
            b[0]["count"] = u64::MAX.into();
            b[1]["count"] = u64::MAX.into();
        }),
    ];
    for (name, edit) in edits {
        let mut r = good.clone();
        edit(&mut r);
        let bad = dir.path().join(format!("{name}.json"));
        std::fs::write(&bad, serde_json::to_string(&r).unwrap()).unwrap();
        for args in [
            vec!["plot", "-o", dir.path().join("p.svg").to_str().unwrap()],
            vec!["report", "-o", dir.path().join("r.html").to_str().unwrap()],
            vec!["show"],
            vec!["compare", json.to_str().unwrap()],
        ] {
            let out = rtlab().args(&args).arg(&bad).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!((out.status.code(), err.trim().lines().count()), (Some(2), 1), "{name} {args:?}: {err}");
        }
    }
}
