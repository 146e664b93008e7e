//! `rtlab sweep` (and its alias `rtlab beam sweep`): every point through the one pipeline,
//! each result written as soon as it exists.

use crate::error::Error;
use crate::export::write_output;
use crate::report::compare::GroupComparison;
use crate::result::{EndReason, RunResult, Tool};
use crate::session::{self, Provenance, Signals, Silent};
use crate::sweep::{csv, FigureComparison, Point, PointComparison, SweepResult, SCHEMA};
use crate::sysinfo::Environment;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;

/// What a sweep prints on stdout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Printout {
    /// sweep.csv at the end (`rtlab sweep`).
    Csv,
    /// RealtimeTests' printout, row by row (`rtlab beam sweep`): `System:`, `Architecture:`,
    /// `Input options:` (this line), then the CSV header and one row per point as it finishes.
    RealtimeTests(String),
}

/// A validated sweep: every point's options, checked before the first one runs.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    /// Directory for sweep.csv, sweep.json and points/.
    pub out: PathBuf,
    /// Keep the points already in `out`.
    pub resume: bool,
    /// The points with their options, in order.
    pub points: Vec<(Point, session::Plan)>,
    /// Names of the swept axes, outermost first.
    pub axis_names: Vec<String>,
    /// Each point's length, when it is a time.
    pub duration: Option<std::time::Duration>,
    /// What goes to stdout.
    pub printout: Printout,
    /// `--rounds`: runs of every point, interleaved (1: each point once).
    pub rounds: usize,
}

/// One run of a sweep: a point (with `--rounds`, its round as a last axis) and its result.
type Done = (Point, RunResult);

/// Where a sweep is: what it has run and how far.
struct Progress {
    done: Vec<Done>,
    measured: usize,
    started: std::time::Instant,
    bar: ProgressBar,
    terminal: bool,
}

/// Runs the sweep; exit 0 (also when interrupted: what was done is kept), 1 when a point's
/// runtime failed (the finished points are kept).
pub fn execute(opts: &SweepOptions, command_line: Vec<String>) -> Result<i32, Error> {
    let points_dir = opts.out.join("points");
    std::fs::create_dir_all(&points_dir).map_err(|e| {
        Error::Usage(format!("--out {}: cannot create it ({e}); choose a writable directory", opts.out.display()))
    })?;
    let runs = schedule(opts);
    let total = runs.len();
    let environment = Environment::capture();
    if opts.printout == Printout::Csv {
        eprintln!("{}", header(opts, &environment, &command_line, total));
    }
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let terminal = std::io::stderr().is_terminal();
    let bar = ProgressBar::new(total as u64);
    if terminal {
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    let mut progress = Progress { done: Vec::new(), measured: 0, started: std::time::Instant::now(), bar, terminal };
    let summaries = Summaries { opts, environment: &environment, command_line: &command_line, total };
    let mut interrupted = false;
    for (p, plan) in runs {
        let file = points_dir.join(format!("{}.json", p.label()));
        if let Some(r) = opts.resume.then(|| kept(&file)).flatten() {
            if !terminal {
                eprintln!(
                    "point {}/{total} {}: kept from {}",
                    progress.bar.position() + 1,
                    axes_text(&p),
                    file.display()
                );
            }
            progress.done.push((p, r));
            progress.bar.inc(1);
            continue;
        }
        let (result, failure) =
            measure_one(opts, &mut progress, &p, plan, (&file, &command_line, &environment), &signals)?;
        let cut = result.end_reason == EndReason::Signal;
        if let Some(why) = failure {
            progress.bar.finish_and_clear();
            summaries.write(&progress.done)?;
            return Err(Error::Runtime(format!(
                "point {} ({}): {why}; the finished points are in {}",
                progress.bar.position(),
                axes_text(&p).trim_end(),
                opts.out.display()
            )));
        }
        if cut {
            interrupted = true;
            break;
        }
        realtime_tests_row(opts, &progress.done, &p, &result);
        progress.done.push((p, result));
        summaries.write(&progress.done)?;
        if signals.stop.load(Relaxed) {
            interrupted = true;
            break;
        }
    }
    progress.bar.finish_and_clear();
    summaries.write(&progress.done)?;
    finish(opts, &progress.done, interrupted, total);
    Ok(0)
}

/// The runs in order: each point once, or with `--rounds N` every point in each of N rounds,
/// forward in the first, backward in the second and so on (A B, B A, …), the round a last axis.
fn schedule(opts: &SweepOptions) -> Vec<(Point, &session::Plan)> {
    let mut runs = Vec::with_capacity(opts.points.len() * opts.rounds);
    for round in 0..opts.rounds {
        let order: Vec<&(Point, session::Plan)> =
            if round % 2 == 0 { opts.points.iter().collect() } else { opts.points.iter().rev().collect() };
        for (p, plan) in order {
            let mut p = p.clone();
            if opts.rounds > 1 {
                p.axes.push(("round".into(), (round + 1).to_string()));
            }
            runs.push((p, plan));
        }
    }
    runs
}

/// The header on stderr: the machine, the command line and how many runs.
fn header(opts: &SweepOptions, environment: &Environment, command_line: &[String], total: usize) -> String {
    let mut header = format!(
        "System: {} {} ({} preemption{}), {}, {} CPUs{}\nOptions: {}\nPoints: {}",
        environment.kernel_release.as_deref().unwrap_or("?"),
        environment.kernel_version.as_deref().unwrap_or(""),
        environment.preempt_model.as_deref().unwrap_or("?"),
        if environment.preempt_rt == Some(true) { ", PREEMPT_RT" } else { "" },
        environment.cpu_model.as_deref().unwrap_or("unknown CPU"),
        environment.cpu_count.unwrap_or(0),
        environment.virtualization.as_ref().map(|v| format!(", virtualized ({v})")).unwrap_or_default(),
        command_line.join(" "),
        opts.points.len()
    );
    if opts.rounds > 1 {
        header += &format!(" × {} rounds, interleaved", opts.rounds);
    }
    if let Some(d) = opts.duration {
        header += &format!(", {} s each, about {:.0} s in all", d.as_secs_f64(), d.as_secs_f64() * total as f64);
    }
    header
}

/// A run `--resume` keeps: the one in `file`, when it ended neither by a signal nor failed.
fn kept(file: &std::path::Path) -> Option<RunResult> {
    let r = serde_json::from_str::<RunResult>(&std::fs::read_to_string(file).ok()?).ok()?;
    (r.end_reason != EndReason::Signal && r.end_reason != EndReason::Failed).then_some(r)
}

/// `axis=value ` for each axis of `p`.
fn axes_text(p: &Point) -> String {
    p.axes.iter().map(|(k, v)| format!("{k}={v} ")).collect()
}

/// Measures one run of the sweep, writes its result to `file` and says so on stderr.
fn measure_one(
    opts: &SweepOptions,
    progress: &mut Progress,
    p: &Point,
    plan: &session::Plan,
    (file, command_line, environment): (&std::path::Path, &[String], &Environment),
    signals: &Signals,
) -> Result<(RunResult, Option<String>), Error> {
    let total = progress.bar.length().unwrap_or(0) as usize;
    let left = total - progress.bar.position() as usize;
    progress.bar.set_message(format!(
        "{}{}",
        axes_text(p),
        eta(opts, progress.measured, progress.started.elapsed(), left)
    ));
    if let (Printout::RealtimeTests(_), Some(intro)) = (&opts.printout, plan.probe.describe()) {
        eprintln!("point {}/{total}: {intro}", progress.bar.position() + 1);
    }
    let provenance = Provenance { command_line: command_line.to_vec(), environment: environment.clone() };
    let (result, failure) =
        session::measure(plan, provenance, None, &mut Silent, signals).map_err(|e| Error::Runtime(e.to_string()))?;
    progress.measured += 1;
    let bytes = crate::export::json::Json.serialize_result(&result)?;
    write_output(file, &bytes).map_err(|e| Error::Runtime(format!("cannot write {}: {e}", file.display())))?;
    if !progress.terminal && opts.printout == Printout::Csv {
        let ms = |v: Option<i64>| v.map_or("-".into(), |m| format!("{} ms", crate::units::ms_fixed(m as f64, 3)));
        let max = ms(result.all.stats.max_ns);
        // A working point: its worst response and its deadline misses too.
        let work = result.all.work.as_ref().map_or(String::new(), |w| {
            format!(
                ", response max {}, {}",
                ms(w.response.max_ns),
                crate::units::count(w.deadlines.misses, "deadline miss")
            )
        });
        let cut = if result.end_reason == EndReason::Signal { " (interrupted)" } else { "" };
        eprintln!("point {}/{total} {}: max {max}{work}{cut}", progress.bar.position() + 1, axes_text(p));
    }
    progress.bar.inc(1);
    Ok((result, failure))
}

/// `rtlab beam sweep`'s printout: RealtimeTests' header before the first row, then a row per
/// point as it finishes.
fn realtime_tests_row(opts: &SweepOptions, done: &[Done], p: &Point, result: &RunResult) {
    let Printout::RealtimeTests(input_options) = &opts.printout else { return };
    let mut stdout = std::io::stdout();
    if done.is_empty() {
        let rt = result.runtime.clone().unwrap_or_default();
        let head = format!(
            "System: {}\nArchitecture: {}\nInput options: {input_options}\n",
            rt.version.as_deref().unwrap_or("?"),
            rt.architecture.as_deref().unwrap_or("?"),
        );
        let _ = stdout.write_all(head.as_bytes());
        let _ = stdout.write_all(csv(&opts.axis_names, &[]).as_bytes());
    }
    let row = csv(&opts.axis_names, &[(p, result)]);
    let _ = stdout.write_all(row.lines().nth(1).map(|l| format!("{l}\n")).unwrap_or_default().as_bytes());
    let _ = stdout.flush();
}

/// The end: sweep.csv on stdout, each point against the first with `--rounds` (stderr), and
/// what an interruption left.
fn finish(opts: &SweepOptions, done: &[Done], interrupted: bool, total: usize) {
    if opts.printout == Printout::Csv {
        let rows: Vec<(&Point, &RunResult)> = done.iter().map(|(p, r)| (p, r)).collect();
        crate::export::print(&csv(&axis_names(opts), &rows));
    }
    let groups = groups(opts, done);
    for (k, g) in against_first(&groups) {
        eprintln!(
            "\n{} against {} ({} rounds):\n{}",
            groups[k].0,
            groups[0].0,
            g.a.len().min(g.b.len()),
            crate::report::terminal_text(crate::report::group_blocks(&g)).trim_end()
        );
    }
    if interrupted {
        eprintln!(
            "interrupted after {} of {total} runs; everything done is in {}; run again with --resume to finish",
            done.len(),
            opts.out.display()
        );
    }
}

/// The margin (%) of the verdicts of `--rounds`' comparisons, as `rtlab compare --vs`'s default.
pub const ROUNDS_MARGIN_PCT: f64 = 10.0;

/// The sweep's axes, and `round` with `--rounds`.
fn axis_names(opts: &SweepOptions) -> Vec<String> {
    let mut names = opts.axis_names.clone();
    if opts.rounds > 1 {
        names.push("round".into());
    }
    names
}

/// With `--rounds`: each point's label (its round left out) and its runs named by round, in
/// the points' order; empty otherwise.
fn groups<'a>(opts: &SweepOptions, done: &'a [Done]) -> Vec<(String, Vec<(String, &'a RunResult)>)> {
    if opts.rounds < 2 {
        return Vec::new();
    }
    opts.points
        .iter()
        .map(|(p, _)| {
            let runs = done.iter().filter(|(q, _)| q.index == p.index).map(|(q, r)| (q.label(), r)).collect();
            (axes_text(p).trim_end().to_string(), runs)
        })
        .collect()
}

/// What `write` needs besides the runs.
struct Summaries<'a> {
    opts: &'a SweepOptions,
    environment: &'a Environment,
    command_line: &'a [String],
    total: usize,
}

impl Summaries<'_> {
    /// Writes `sweep.csv` and `sweep.json` into the sweep's directory (atomically) for the runs
    /// done so far, with `--rounds` each point compared with the first.
    fn write(&self, done: &[Done]) -> Result<(), Error> {
        let opts = self.opts;
        let rows: Vec<(&Point, &RunResult)> = done.iter().map(|(p, r)| (p, r)).collect();
        let csv_path = opts.out.join("sweep.csv");
        write_output(&csv_path, csv(&axis_names(opts), &rows).as_bytes())
            .map_err(|e| Error::Runtime(format!("cannot write {}: {e}", csv_path.display())))?;
        let doc = SweepResult {
            schema: SCHEMA.into(),
            tool: Tool::this(),
            command_line: self.command_line.to_vec(),
            environment: self.environment.clone(),
            points: done.iter().map(|(p, r)| SweepResult::entry(p, r)).collect(),
            planned: self.total,
            rounds: (opts.rounds > 1).then_some(opts.rounds),
            comparisons: comparisons(opts, done),
        };
        let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|e| Error::Runtime(e.to_string()))?;
        bytes.push(b'\n');
        let json_path = opts.out.join("sweep.json");
        write_output(&json_path, &bytes)
            .map_err(|e| Error::Runtime(format!("cannot write {}: {e}", json_path.display())))
    }
}

/// Each point of `groups` (by its position) with runs, against the first point's runs, when it
/// has some.
fn against_first(groups: &[(String, Vec<(String, &RunResult)>)]) -> Vec<(usize, GroupComparison)> {
    let Some((_, a)) = groups.first().filter(|(_, a)| !a.is_empty()) else { return Vec::new() };
    (1..groups.len())
        .filter(|k| !groups[*k].1.is_empty())
        .map(|k| (k, crate::report::compare::compare_groups(a, &groups[k].1, ROUNDS_MARGIN_PCT)))
        .collect()
}

/// With `--rounds`: every point's runs against the first point's, all threads' figures.
fn comparisons(opts: &SweepOptions, done: &[Done]) -> Vec<PointComparison> {
    against_first(&groups(opts, done))
        .into_iter()
        .map(|(k, g)| PointComparison {
            baseline: opts.points[0].0.label(),
            label: opts.points[k].0.label(),
            axes: opts.points[k].0.axes.clone(),
            margin_pct: ROUNDS_MARGIN_PCT,
            figures: g.sections.first().map(|s| s.rows.iter().map(figure).collect()).unwrap_or_default(),
        })
        .collect()
}

/// One figure of a group comparison as `sweep.json` keeps it.
fn figure(row: &crate::report::compare::GroupRow) -> FigureComparison {
    let r = row.ratio.as_ref();
    FigureComparison {
        figure: row.metric.name(),
        a_ns: row.a.clone(),
        b_ns: row.b.clone(),
        ratio: r.map(|r| r.estimate),
        low: r.and_then(|r| r.low),
        high: r.and_then(|r| r.high),
        coverage: r.map(|r| r.coverage),
        verdict: r.map(|r| r.verdict.name().to_string()),
        rounds_to_decide: r.and_then(|r| match r.verdict {
            crate::measure::groups::Verdict::Inconclusive(n) => n,
            _ => None,
        }),
    }
}

/// The time left, for the progress line: the points to go times their `-D` when it is known,
/// else times the mean time of the points measured so far (kept points take no time).
fn eta(opts: &SweepOptions, measured: usize, elapsed: std::time::Duration, left: usize) -> String {
    let each = match (opts.duration, measured) {
        (Some(d), _) => d.as_secs_f64(),
        (None, 0) => return String::new(),
        (None, n) => elapsed.as_secs_f64() / n as f64,
    };
    format!("(about {} left)", crate::units::duration((each * left as f64 * 1e9) as i64))
}
