//! `rtlab report` and `rtlab compare`.
use crate::error::Error;
use std::path::PathBuf;

use crate::export::write_output;
use crate::import::input;
use crate::plot::inputs::By;
use crate::report::{self, compare, Block};

fn written(path: &std::path::Path, bytes: &[u8]) -> Result<(), Error> {
    write_output(path, bytes).map_err(|e| Error::Runtime(format!("cannot write {}: {e}", path.display())))
}

/// A validated `rtlab compare`.
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// The inputs (the first is the baseline; with `vs`, group A).
    pub inputs: Vec<PathBuf>,
    /// Group B (`--vs`): empty for a comparison of runs with the first.
    pub vs: Vec<PathBuf>,
    /// The picture of the tails, and its format.
    pub output: Option<(PathBuf, crate::plot::Format)>,
    /// Fail (exit 3) when a run is this much worse (%).
    pub fail_if_worse: Option<f64>,
    /// The figure compared.
    pub percentile: crate::report::compare::Check,
    /// Every thread's section, however many.
    pub all_threads: bool,
    /// The unit of text inputs.
    pub unit: Option<crate::import::Unit>,
    /// A fleet from Prometheus instead of files.
    pub fleet: Option<crate::import::prometheus::Query>,
    /// `--max-latency` (ns): each run (each host) is judged against it.
    pub max_latency: Option<i64>,
}

/// A validated `rtlab report`.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// The inputs.
    pub inputs: Vec<PathBuf>,
    /// The report to write.
    pub output: PathBuf,
    /// Markdown (with pictures beside it) rather than self-contained HTML.
    pub markdown: bool,
    /// The unit of text inputs.
    pub unit: Option<crate::import::Unit>,
    /// A fleet from Prometheus instead of files.
    pub fleet: Option<crate::import::prometheus::Query>,
    /// `--max-latency` (ns): each run (each host) is judged against it.
    pub max_latency: Option<i64>,
}

/// The inputs: the files, or one run per host of the fleet; each run judged against
/// `threshold` when one is given (its verdict replaced), with the exit code the verdicts call
/// for (3 when a run failed).
fn gather(
    files: &[PathBuf],
    unit: Option<crate::import::Unit>,
    fleet: &Option<crate::import::prometheus::Query>,
    threshold: Option<i64>,
) -> Result<(Vec<input::Input>, i32), Error> {
    let mut inputs = match fleet {
        None => input::load_all(files, unit).map_err(|e| Error::Usage(e.to_string()))?,
        Some(q) => crate::import::prometheus::fetch(q)
            .map_err(Error::Runtime)?
            .into_iter()
            .map(|(host, r)| input::Input {
                path: PathBuf::from(q.shown_url()),
                name: host,
                content: input::Content::Run(Box::new(r)),
                samples: None,
            })
            .collect(),
    };
    let Some(t) = threshold else { return Ok((inputs, 0)) };
    let scope = if fleet.is_some() { " in the window" } else { "" };
    let mut failed = false;
    for i in inputs.iter_mut() {
        let mut judge = |r: &mut crate::result::RunResult, name: &str| {
            crate::result::verdict::judge_stored(r, t, name, scope);
            failed |= r.verdict.status == crate::result::VerdictStatus::Fail;
        };
        match &mut i.content {
            input::Content::Run(r) => judge(r, &i.name),
            input::Content::Sweep(_, points) => {
                for p in points.iter_mut() {
                    let name = format!("{} {}", i.name, p.point.label);
                    judge(&mut p.result, &name);
                }
            }
        }
    }
    Ok((inputs, if failed { 3 } else { 0 }))
}

/// The fleet's heatmap over the window (all selected hosts and CPUs together).
fn fleet_heatmap(q: &crate::import::prometheus::Query) -> Result<Vec<Block>, Error> {
    let heat = crate::import::prometheus::heat(q, 120).map_err(Error::Runtime)?;
    let caption = crate::plot::Caption {
        title: "Fleet: wakeup latency over time".into(),
        subtitle: format!("{} {{{}}}, last {} s", q.shown_url(), q.matchers, q.since.as_secs()),
    };
    if heat.counts.iter().flatten().all(|n| *n == 0) {
        return Ok(vec![
            Block::Heading(2, "Fleet heatmap".into()),
            Block::Text(format!("Not drawn: no wakeup was counted in the last {} s.", q.since.as_secs())),
        ]);
    }
    let svg = crate::plot::heatmap::svg(&caption, &heat.times, &heat.bounds_ns, &heat.counts, heat.width_s)
        .map_err(Error::Runtime)?;
    let svg = crate::plot::encode_svg(&svg, "heatmap-").map_err(Error::Runtime)?;
    Ok(vec![
        Block::Heading(2, "Fleet heatmap".into()),
        Block::Figure {
            name: "fleet-heatmap".into(),
            caption: "Wakeups per latency bucket over time, every selected host and CPU".into(),
            svg,
        },
    ])
}

/// The runs an input holds (a sweep's points).
fn runs_of(i: &input::Input) -> Vec<&crate::result::RunResult> {
    match &i.content {
        input::Content::Run(r) => vec![r.as_ref()],
        input::Content::Sweep(_, points) => points.iter().map(|p| &p.result).collect(),
    }
}

/// `rtlab report`.
pub fn report(args: &ReportOptions) -> Result<i32, Error> {
    let markdown = args.markdown;
    let ins: Vec<&std::path::Path> = args.inputs.iter().map(std::path::PathBuf::as_path).collect();
    let (inputs, code) = gather(&args.inputs, args.unit, &args.fleet, args.max_latency)?;
    if args.max_latency.is_some() {
        for r in inputs.iter().flat_map(runs_of) {
            crate::export::print(&format!("{}\n", r.verdict.message));
        }
    }
    let mut blocks = report::build(&inputs).map_err(Error::Runtime)?;
    if let Some(q) = &args.fleet {
        blocks.splice(1..1, fleet_heatmap(q)?);
    }
    if markdown {
        let stem = args.output.file_stem().map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
        let dir = args.output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        let (text, files) = report::markdown::render(&blocks, &stem);
        let pictures: Vec<std::path::PathBuf> = files.iter().map(|(name, _)| dir.join(name)).collect();
        let mut outs: Vec<(String, &std::path::Path)> = vec![("-o".into(), &args.output)];
        outs.extend(pictures.iter().map(|p| ("a picture of the report".to_string(), p.as_path())));
        crate::export::check_outputs(&outs, &ins).map_err(Error::Usage)?;
        for (name, bytes) in &files {
            written(&dir.join(name), bytes)?;
        }
        written(&args.output, &text)?;
        eprintln!("{} written with {} pictures beside it", args.output.display(), files.len());
    } else {
        let page = report::html::render(&blocks);
        written(&args.output, &page)?;
        eprintln!("{} written ({} KiB, self-contained)", args.output.display(), page.len().div_ceil(1024));
    }
    Ok(code)
}

/// `rtlab compare`: tables on stdout, optionally the tails as a picture; exit code 3 on a
/// regression beyond `--fail-if-worse`.
pub fn compare(args: &CompareOptions) -> Result<i32, Error> {
    let (mut inputs, judged_code) = gather(&args.inputs, args.unit, &args.fleet, args.max_latency)?;
    if !args.vs.is_empty() {
        return compare_groups(args, inputs, judged_code);
    }
    // A fleet's baseline is its best host (they come worst first).
    if args.fleet.is_some() {
        inputs.reverse();
    }
    let runs = compare::runs(&inputs);
    if runs.len() < 2 {
        return Err(Error::Usage("compare needs at least two runs; give two result files".into()));
    }
    same_kind(&runs)?;
    let c = compare::compare(&runs);
    let threads = c.sections.iter().filter(|s| s.per_thread).count();
    let max_threads = if args.all_threads || threads <= 8 { usize::MAX } else { 0 };
    let text =
        format!("baseline: {}\n\n{}", c.names[0], report::terminal_text(report::comparison_blocks(&c, max_threads)));
    crate::export::print(&text);
    draw_tails(args, &inputs)?;
    if let Some(pct) = args.fail_if_worse {
        let worse = compare::regressions(&c, args.percentile, pct).map_err(Error::Usage)?;
        let name = args.percentile.name();
        if worse.is_empty() {
            crate::export::print(&format!("PASS: no run is more than {pct}% worse than {} on {name}\n", c.names[0]));
        } else {
            let shown =
                |v: f64| if args.percentile.metric.is_latency() { crate::units::us(v) } else { format!("{v:.0}") };
            for w in &worse {
                crate::export::print(&format!(
                    "FAIL: {} {name} {} is {:.1}% worse than {} ({}), more than the {pct}% allowed\n",
                    w.name,
                    shown(w.value),
                    w.worse_pct,
                    c.names[0],
                    shown(w.baseline)
                ));
            }
            return Ok(3);
        }
    }
    // Runs judged against --max-latency: each verdict is printed, a failure exits 3.
    if args.max_latency.is_some() {
        for (_, r) in &runs {
            crate::export::print(&format!("{}\n", r.verdict.message));
        }
    }
    Ok(judged_code)
}

/// The verdicts' margin when `--fail-if-worse` gives none (%).
pub const GROUP_MARGIN_PCT: f64 = 10.0;

/// `rtlab compare A… --vs B…`: per figure B ÷ A with its interval and verdict; exit code 3
/// when B is worse on `--percentile` beyond `--fail-if-worse` at the stated confidence.
fn compare_groups(args: &CompareOptions, a_inputs: Vec<input::Input>, judged_a: i32) -> Result<i32, Error> {
    let (b_inputs, judged_b) = gather(&args.vs, args.unit, &None, args.max_latency)?;
    let (a, b) = (compare::runs(&a_inputs), compare::runs(&b_inputs));
    let both: Vec<(String, &crate::result::RunResult)> = a.iter().chain(&b).cloned().collect();
    same_kind(&both)?;
    let margin = args.fail_if_worse.unwrap_or(GROUP_MARGIN_PCT);
    let g = compare::compare_groups(&a, &b, margin);
    crate::export::print(&report::terminal_text(report::group_blocks(&g)));
    let all: Vec<input::Input> = a_inputs.iter().chain(&b_inputs).cloned().collect();
    draw_tails(args, &all)?;
    if let Some(pct) = args.fail_if_worse {
        let row = compare::group_check(&g, args.percentile).map_err(Error::Usage)?;
        let name = args.percentile.name();
        let Some(r) = &row.ratio else { return Err(Error::Usage(format!("{name}: not comparable"))) };
        let one_sided = (1.0 + r.coverage) / 2.0 * 100.0;
        let figures = report::group_figures(r);
        if r.verdict == crate::measure::groups::Verdict::Worse {
            crate::export::print(&format!(
                "FAIL: B's {name} is more than {pct}% worse than A's at {one_sided:.1} % confidence ({figures})\n"
            ));
            return Ok(3);
        }
        crate::export::print(&format!(
            "PASS: no evidence that B's {name} is more than {pct}% worse than A's ({figures}: {})\n",
            report::group_verdict(r, g.a.len(), g.b.len())
        ));
    }
    if args.max_latency.is_some() {
        for (_, r) in &both {
            crate::export::print(&format!("{}\n", r.verdict.message));
        }
    }
    Ok(judged_a.max(judged_b))
}

/// Refuses runs of different kinds: gaps of busy loops and wakeup latencies are different
/// quantities.
fn same_kind(runs: &[(String, &crate::result::RunResult)]) -> Result<(), Error> {
    let Some((first, r0)) = runs.first() else { return Ok(()) };
    match runs.iter().find(|(_, r)| r.kind != r0.kind) {
        Some((name, r)) => Err(Error::Usage(format!(
            "{name} is a {} run but {first} is a {} run: compare noise runs with noise runs and wakeup runs with wakeup runs",
            kind_name(r.kind),
            kind_name(r0.kind)
        ))),
        None => Ok(()),
    }
}

/// `-o`: the inputs' tails side by side.
fn draw_tails(args: &CompareOptions, inputs: &[input::Input]) -> Result<(), Error> {
    let Some((out, format)) = &args.output else { return Ok(()) };
    let svg = crate::plot::inputs::render(
        crate::plot::inputs::Kind::Cdf,
        inputs,
        Some(By::Input),
        None,
        Some("Latency tails compared"),
        crate::plot::inputs::Of::Latency,
    )?;
    let bytes = crate::plot::encode(&svg, *format).map_err(Error::Runtime)?;
    written(out, &bytes)?;
    eprintln!("{} written", out.display());
    Ok(())
}

fn kind_name(k: crate::result::Kind) -> &'static str {
    match k {
        crate::result::Kind::Wakeup => "wakeup-latency",
        crate::result::Kind::Noise => "noise",
        crate::result::Kind::Watch => "watched-threads",
    }
}
