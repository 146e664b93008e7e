//! `rtlab sweep` (and its alias `rtlab beam sweep`): every point through the one pipeline,
//! each result written as soon as it exists.

use crate::error::Error;
use crate::export::write_output;
use crate::result::{EndReason, RunResult, Tool};
use crate::session::{self, Provenance, Signals, Silent};
use crate::sweep::{csv, Point, SweepResult, SCHEMA};
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
}

/// Runs the sweep; exit 0 (also when interrupted: what was done is kept), 1 when a point's
/// runtime failed (the finished points are kept).
pub fn execute(opts: &SweepOptions, command_line: Vec<String>) -> Result<i32, Error> {
    let points_dir = opts.out.join("points");
    std::fs::create_dir_all(&points_dir).map_err(|e| {
        Error::Usage(format!("--out {}: cannot create it ({e}); choose a writable directory", opts.out.display()))
    })?;
    let total = opts.points.len();
    let environment = Environment::capture();
    if opts.printout == Printout::Csv {
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
            total
        );
        if let Some(d) = opts.duration {
            header += &format!(", {} s each, about {:.0} s in all", d.as_secs_f64(), d.as_secs_f64() * total as f64);
        }
        eprintln!("{header}");
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
    let mut done: Vec<(Point, RunResult)> = Vec::new();
    let mut interrupted = false;
    let started = std::time::Instant::now();
    let mut measured = 0usize;
    let mut stdout = std::io::stdout();
    for (p, plan) in &opts.points {
        let file = points_dir.join(format!("{}.json", p.label()));
        let axes_text: String = p.axes.iter().map(|(k, v)| format!("{k}={v} ")).collect();
        if opts.resume {
            if let Some(r) =
                std::fs::read_to_string(&file).ok().and_then(|t| serde_json::from_str::<RunResult>(&t).ok())
            {
                if r.end_reason != EndReason::Signal && r.end_reason != EndReason::Failed {
                    if !terminal {
                        eprintln!("point {}/{total} {axes_text}: kept from {}", p.index + 1, file.display());
                    }
                    done.push((p.clone(), r));
                    bar.inc(1);
                    continue;
                }
            }
        }
        bar.set_message(format!(
            "{axes_text}{}",
            eta(opts, measured, started.elapsed(), total - bar.position() as usize)
        ));
        if let (Printout::RealtimeTests(_), Some(intro)) = (&opts.printout, plan.probe.describe()) {
            eprintln!("point {}/{total}: {intro}", p.index + 1);
        }
        let provenance = Provenance { command_line: command_line.clone(), environment: environment.clone() };
        let (result, failure) = session::measure(plan, provenance, None, &mut Silent, &signals)
            .map_err(|e| Error::Runtime(e.to_string()))?;
        measured += 1;
        let bytes = crate::export::json::Json.serialize_result(&result)?;
        write_output(&file, &bytes).map_err(|e| Error::Runtime(format!("cannot write {}: {e}", file.display())))?;
        let cut = result.end_reason == EndReason::Signal;
        if !terminal && opts.printout == Printout::Csv {
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
            eprintln!(
                "point {}/{total} {axes_text}: max {max}{work}{}",
                p.index + 1,
                if cut { " (interrupted)" } else { "" }
            );
        }
        bar.inc(1);
        if let Some(why) = failure {
            bar.finish_and_clear();
            write_summaries(&opts.out, &opts.axis_names, &done, &environment, &command_line, total)?;
            return Err(Error::Runtime(format!(
                "point {} ({}): {why}; the finished points are in {}",
                p.index + 1,
                axes_text.trim_end(),
                opts.out.display()
            )));
        }
        if cut {
            interrupted = true;
            break;
        }
        if let Printout::RealtimeTests(input_options) = &opts.printout {
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
            let row = csv(&opts.axis_names, &[(p, &result)]);
            let _ = stdout.write_all(row.lines().nth(1).map(|l| format!("{l}\n")).unwrap_or_default().as_bytes());
            let _ = stdout.flush();
        }
        done.push((p.clone(), result));
        write_summaries(&opts.out, &opts.axis_names, &done, &environment, &command_line, total)?;
        if signals.stop.load(Relaxed) {
            interrupted = true;
            break;
        }
    }
    bar.finish_and_clear();
    write_summaries(&opts.out, &opts.axis_names, &done, &environment, &command_line, total)?;
    if opts.printout == Printout::Csv {
        let rows: Vec<(&Point, &RunResult)> = done.iter().map(|(p, r)| (p, r)).collect();
        crate::export::print(&csv(&opts.axis_names, &rows));
    }
    if interrupted {
        eprintln!(
            "interrupted after {} of {total} points; everything done is in {}; run again with --resume to finish",
            done.len(),
            opts.out.display()
        );
    }
    Ok(0)
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

/// Writes `sweep.csv` and `sweep.json` into `out` (atomically) for the points done so far.
fn write_summaries(
    out: &std::path::Path,
    axis_names: &[String],
    done: &[(Point, RunResult)],
    environment: &Environment,
    command_line: &[String],
    planned: usize,
) -> Result<(), Error> {
    let rows: Vec<(&Point, &RunResult)> = done.iter().map(|(p, r)| (p, r)).collect();
    let csv_path = out.join("sweep.csv");
    write_output(&csv_path, csv(axis_names, &rows).as_bytes())
        .map_err(|e| Error::Runtime(format!("cannot write {}: {e}", csv_path.display())))?;
    let doc = SweepResult {
        schema: SCHEMA.into(),
        tool: Tool::this(),
        command_line: command_line.to_vec(),
        environment: environment.clone(),
        points: done.iter().map(|(p, r)| SweepResult::entry(p, r)).collect(),
        planned,
    };
    let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|e| Error::Runtime(e.to_string()))?;
    bytes.push(b'\n');
    let json_path = out.join("sweep.json");
    write_output(&json_path, &bytes).map_err(|e| Error::Runtime(format!("cannot write {}: {e}", json_path.display())))
}
