//! `rtlab sweep`.
use crate::error::Error;

use crate::cli::sweep::SweepArgs;
use crate::cli::UsageError;
use crate::commands::run::measure;
use crate::export::write_output;
use crate::measure::engine::{Signals, Silent};
use crate::result::{RunResult, Tool};
use crate::sweep::{csv, expand, Axes, Point, SweepResult, SCHEMA};
use crate::sysinfo::Environment;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::Ordering::Relaxed;

fn usage(m: impl Into<String>) -> Error {
    Error::Usage(UsageError(m.into()).0)
}

/// Runs the sweep; exit 0 (also when interrupted: what was done is kept), 2 for bad usage.
pub fn execute(args: SweepArgs, command_line: Vec<String>) -> Result<i32, Error> {
    if args.run.duration.is_none() && args.run.loops.is_none() {
        return Err(usage("every sweep point needs a length: give -D (e.g. -D 5s) or -l"));
    }
    if args.run.runtime.runtime != crate::cli::run::RuntimeKind::Os {
        return Err(usage("rtlab sweep measures OS threads; for the Erlang VM use rtlab beam sweep, for tokio one rtlab run --runtime tokio per point"));
    }
    if args.run.json.is_some() {
        return Err(usage("--json does not apply to a sweep; every result goes into --out DIR"));
    }
    let axes = Axes {
        load_kinds: args.load_kinds.as_ref().map(|l| l.0.clone()),
        load_policies: args.load_policies.as_ref().map(|l| l.0.clone()),
        probe_policies: args.probe_policies.as_ref().map(|l| l.0.clone()),
        methods: args.methods.as_ref().map(|l| l.0.clone()),
        workers: args.workers.as_ref().map(|c| c.0.clone()),
    };
    let points = expand(&axes, &args.run.loads).map_err(usage)?;
    // Every point is validated before the first one runs.
    let mut plans = Vec::with_capacity(points.len());
    for p in &points {
        let mut a = args.run.clone();
        a.loads = p.loads.clone();
        if let Some((policy, prio)) = p.probe {
            a.policy = Some(policy);
            a.priority = prio;
        }
        if let Some(m) = p.method {
            a.method = m;
        }
        plans.push(a.into_options().map_err(|e| usage(format!("point {} ({}): {}", p.index, p.label(), e.0)))?);
    }
    if args.resume {
        check_resumable(&args.out, &points, &plans)?;
    }
    let points_dir = args.out.join("points");
    std::fs::create_dir_all(&points_dir).map_err(|e| {
        usage(format!("--out {}: cannot create it ({e}); choose a writable directory", args.out.display()))
    })?;

    let environment = Environment::capture();
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
        points.len()
    );
    if let Some(d) = args.run.duration {
        header += &format!(", {} s each, about {:.0} s in all", d.as_secs_f64(), d.as_secs_f64() * points.len() as f64);
    }
    eprintln!("{header}");

    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let bar = ProgressBar::new(points.len() as u64);
    if std::io::stderr().is_terminal() {
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} (ETA {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    } else {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    let plain = !std::io::stderr().is_terminal();
    let axis_names: Vec<String> =
        points.first().map(|p| p.axes.iter().map(|(k, _)| k.clone()).collect()).unwrap_or_default();
    let mut done: Vec<(Point, RunResult)> = Vec::new();
    let mut interrupted = false;
    for (p, opts) in points.iter().zip(&plans) {
        let file = points_dir.join(format!("{}.json", p.label()));
        let axes_text: String = p.axes.iter().map(|(k, v)| format!("{k}={v} ")).collect();
        if args.resume {
            if let Some(r) =
                std::fs::read_to_string(&file).ok().and_then(|t| serde_json::from_str::<RunResult>(&t).ok())
            {
                if r.end_reason != crate::measure::engine::EndReason::Signal {
                    if plain {
                        eprintln!("point {}/{} {axes_text}: kept from {}", p.index + 1, points.len(), file.display());
                    }
                    done.push((p.clone(), r));
                    bar.inc(1);
                    continue;
                }
            }
        }
        bar.set_message(axes_text.clone());
        let result = measure(opts, command_line.clone(), environment.clone(), &mut Silent, &signals)
            .map_err(|e| Error::Runtime(e.0))?;
        let bytes = crate::export::json::Json.serialize_result(&result)?;
        write_output(&file, &bytes).map_err(|e| Error::Runtime(format!("cannot write {}: {e}", file.display())))?;
        let cut = result.end_reason == crate::measure::engine::EndReason::Signal;
        if plain {
            let max = result.all.stats.max_ns.map_or("-".into(), |m| format!("{:.3} ms", m as f64 / 1e6));
            eprintln!(
                "point {}/{} {axes_text}: max {max}{}",
                p.index + 1,
                points.len(),
                if cut { " (interrupted)" } else { "" }
            );
        }
        bar.inc(1);
        if cut {
            interrupted = true;
            break;
        }
        done.push((p.clone(), result));
        write_summaries(&args.out, &axis_names, &done, &environment, &command_line, points.len())?;
        if signals.stop.load(Relaxed) {
            interrupted = true;
            break;
        }
    }
    bar.finish_and_clear();
    write_summaries(&args.out, &axis_names, &done, &environment, &command_line, points.len())?;
    let rows: Vec<(&Point, &RunResult)> = done.iter().map(|(p, r)| (p, r)).collect();
    print!("{}", csv(&axis_names, &rows));
    if interrupted {
        eprintln!(
            "interrupted after {} of {} points; everything done is in {}; run again with --resume to finish",
            done.len(),
            points.len(),
            args.out.display()
        );
    }
    Ok(0)
}

/// Writes `sweep.csv` and `sweep.json` into `out` (atomically) for the points done so far.
pub fn write_summaries(
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

/// The settings of a configuration that decide what is measured (what was obtained, such as
/// `degraded`, is left out), flattened for comparison.
fn asked_settings(config: &crate::result::Config, loads: &[String]) -> Vec<(String, String)> {
    let mut v = serde_json::to_value(config).unwrap_or_default();
    let mut out = Vec::new();
    if let Some(o) = v.as_object_mut() {
        for k in ["mlockall_obtained", "dma_latency_held", "degraded"] {
            o.remove(k);
        }
        out.extend(o.iter().map(|(k, v)| (k.clone(), v.to_string())));
    }
    out.push(("loads".into(), loads.join(" + ")));
    out
}

/// With `--resume`, refuses (exit 2) to add points to a sweep measured with other options:
/// every point already in DIR must have been measured as this sweep would measure it.
fn check_resumable(
    out: &std::path::Path,
    points: &[Point],
    plans: &[crate::cli::run::RunOptions],
) -> Result<(), Error> {
    for (p, opts) in points.iter().zip(plans) {
        let file = out.join("points").join(format!("{}.json", p.label()));
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let Ok(recorded) = serde_json::from_str::<RunResult>(&text) else { continue };
        let Some(config) = &recorded.config else { continue };
        // A simulated point runs no load: there is nothing recorded to compare them with.
        let specs = |v: Vec<String>| if recorded.simulated { Vec::new() } else { v };
        let then = asked_settings(config, &specs(recorded.loads.iter().map(|l| l.spec.clone()).collect()));
        let now = asked_settings(&opts.config, &specs(opts.loads.iter().map(|l| l.text.clone()).collect()));
        let differences: Vec<String> = now
            .iter()
            .filter_map(|(k, v)| {
                let old = then.iter().find(|(k2, _)| k2 == k).map_or("(none)", |(_, v)| v.as_str());
                (old != v).then(|| format!("{k} {old} → {v}"))
            })
            .collect();
        if !differences.is_empty() {
            return Err(usage(format!(
                "--resume: {} was measured with other options (point {}: {}); resume with the same options, or give a new --out",
                out.display(),
                p.label(),
                differences.join(", ")
            )));
        }
    }
    Ok(())
}
