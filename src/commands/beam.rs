//! `rtlab beam run` and `rtlab beam sweep`: the Erlang VM probe, into RunResults and sweeps.
use crate::error::Error;

use crate::cli::beam::{BeamCommand, BeamCommon, BeamRunArgs, BeamSweepArgs};
use crate::export::{json::Json, write_output, Exporter};
use crate::load::{LoadResult, LoadSet};
use crate::measure::engine::{EndReason, Signals};
use crate::output::units::Unit;
use crate::output::warnings::Warning;
use crate::result::{ProbeFigures, ProbeRun, RunResult, Runtime};
use crate::runtime::beam::{self, Plan};
use crate::sweep::{csv, Point};
use crate::sysinfo::Environment;
use std::io::Write;

/// Dispatches `rtlab beam …`.
pub fn execute(args: crate::cli::beam::BeamArgs, command_line: Vec<String>) -> Result<i32, Error> {
    match args.command {
        BeamCommand::Run(a) => run(a, command_line),
        BeamCommand::Sweep(a) => sweep(a, command_line),
    }
}

fn check(common: &BeamCommon) -> Result<std::path::PathBuf, Error> {
    crate::load::check_safety(&common.loads, true, common.force, &crate::rt::privileges::Privileges::current())
        .map_err(Error::Usage)?;
    beam::find_erl(common.erl.as_deref()).map_err(|e| {
        if common.erl.is_some() {
            Error::Usage(e)
        } else {
            Error::Runtime(e)
        }
    })
}

fn plan(common: &BeamCommon, erl: std::path::PathBuf, workers: usize) -> Plan {
    Plan {
        erl,
        method: common.method,
        period_ms: common.period,
        duration: common.duration,
        workers,
        worker_priority: common.worker_priority,
        probe_priority: common.probe_priority,
        vm_args: common.vm_args.clone().unwrap_or_default().0,
        threshold_ns: common.max_latency,
    }
}

/// A measurement: the result, the VM's failure when it failed mid-run (the result then holds
/// what arrived), and the `(at, latency)` samples when asked for.
pub type Measured = (RunResult, Option<String>, Vec<(i64, i64)>);

/// One measurement: the VM's run with the OS loads around it, as a RunResult.
pub fn measure(
    plan: &Plan,
    loads: &[crate::load::LoadSpec],
    command_line: Vec<String>,
    environment: Environment,
    signals: &Signals,
    keep_samples: bool,
) -> Result<Measured, Error> {
    let mut running: Option<LoadSet> = None;
    let mut load_error = None;
    let outcome = beam::run(plan, &signals.stop, keep_samples, || {
        if !loads.is_empty() {
            match LoadSet::start(loads) {
                Ok(set) => running = Some(set),
                Err(e) => load_error = Some(e),
            }
        }
    });
    let os_loads = running.take().map(LoadSet::stop).unwrap_or_default();
    if let Some(e) = load_error {
        return Err(Error::Runtime(e));
    }
    let outcome = outcome.map_err(Error::Runtime)?;
    let period_ns = plan.period_ms as i64 * 1_000_000;
    let end_reason = if outcome.failure.is_some() {
        EndReason::Failed
    } else if outcome.interrupted {
        EndReason::Signal
    } else {
        EndReason::Duration
    };
    let mut r = RunResult::from_probes(ProbeRun {
        probes: vec![ProbeFigures {
            thread: 0,
            cpu: None,
            interval_ns: period_ns,
            summary: outcome.summary.clone(),
            drift_ns: None,
            samples_lost: None,
        }],
        start: Some(outcome.start),
        duration_s: Some(outcome.elapsed_s),
        end_reason,
        missed_known: true,
        command_line,
        environment,
        source: None,
        threshold_ns: plan.threshold_ns,
    });
    let info = &outcome.info;
    r.runtime = Some(Runtime {
        kind: "beam".into(),
        method: plan.method.name().into(),
        period_ns,
        timer_granularity_ns: 1_000_000,
        version: info.version.clone(),
        architecture: info.architecture.clone(),
        schedulers: info.schedulers,
        schedulers_online: info.online,
        scheduler_bind_type: info.bind.clone(),
        vm_args: plan.vm_args.clone(),
        probe_priority: info.probe_priority.clone(),
        workers: plan.workers,
        worker_priority: info.worker_priority.clone(),
        ..Runtime::default()
    });
    if plan.workers > 0 {
        let terms = outcome.terms.unwrap_or(0);
        let elapsed = outcome.elapsed_s;
        let mut l = LoadResult::in_runtime(
            format!("beam-pi:workers={},priority={}", plan.workers, plan.worker_priority.atom()),
            "beam-pi",
            plan.workers,
            format!("erlang:{}", plan.worker_priority.atom()),
            terms,
            elapsed,
        );
        if outcome.terms.is_none() {
            l.warnings.push("the VM did not finish: the workers' count is unknown".into());
        }
        r.loads.push(l);
    }
    r.attach_loads(os_loads);
    r.warnings.push(Warning::TimerGranularity { runtime: "The Erlang VM".into(), granularity_ns: 1_000_000 }.into());
    if let Some(f) = &outcome.failure {
        r.warnings.push(Warning::RuntimeFailed { why: f.clone() }.into());
    }
    Ok((r, outcome.failure, outcome.records))
}

fn samples_bytes(records: &[(i64, i64)], period_ns: i64, start: &Option<String>) -> Vec<u8> {
    use crate::export::samples::{header_bytes, push_record, trailer_bytes, Header, Record, ThreadInfo, Trailer};
    let mut out = header_bytes(&Header {
        schema: "rtlab.samples/1".into(),
        clock: "monotonic".into(),
        start_time: start.clone().unwrap_or_default(),
        threads: vec![ThreadInfo { thread: 0, cpu: None, interval_ns: period_ns }],
    });
    for (i, (at, lat)) in records.iter().enumerate() {
        push_record(&mut out, &Record { thread: 0, cycle: i as u64, wake_ns: *at, latency_ns: *lat });
    }
    out.extend(trailer_bytes(&Trailer { records: records.len() as u64, lost: vec![0] }));
    out
}

fn run(args: BeamRunArgs, command_line: Vec<String>) -> Result<i32, Error> {
    for (flag, p) in [("--json", &args.json), ("--samples", &args.samples)] {
        if let Some(p) = p {
            crate::cli::run::check_writable_target(p, flag).map_err(|e| Error::Usage(e.0))?;
        }
    }
    let erl = check(&args.common)?;
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let plan = plan(&args.common, erl, args.workers);
    eprintln!(
        "Erlang VM probe: {} every {} ms for {:.1} s, {} worker(s) at priority {}, probe at {}",
        plan.method.name(),
        plan.period_ms,
        plan.duration.as_secs_f64(),
        plan.workers,
        plan.worker_priority.atom(),
        plan.probe_priority.atom()
    );
    let (result, failure, records) =
        measure(&plan, &args.common.loads, command_line, Environment::capture(), &signals, args.samples.is_some())?;
    if let Some(path) = &args.json {
        let bytes = Json.serialize(&result).map_err(Error::Runtime)?;
        write_output(path, &bytes)
            .map_err(|e| Error::Runtime(format!("cannot write --json {}: {e}", path.display())))?;
    }
    if let Some(path) = &args.samples {
        let bytes = samples_bytes(&records, plan.period_ms as i64 * 1_000_000, &result.start_time);
        write_output(path, &bytes)
            .map_err(|e| Error::Runtime(format!("cannot write --samples {}: {e}", path.display())))?;
    }
    let version = result.runtime.as_ref().and_then(|rt| rt.version.clone());
    let header = format!("{}\n", version.as_deref().unwrap_or("Erlang VM (version not reported)"));
    let to_stdout = args.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    crate::commands::run::print_summary(&result, Unit::Micros, &header, to_stdout);
    if let Some(f) = failure {
        let kept =
            args.json.as_ref().map(|p| format!("; the results so far are in {}", p.display())).unwrap_or_default();
        return Err(Error::Runtime(format!("{f}{kept}")));
    }
    Ok(result.exit_code())
}

/// RealtimeTests' `Input options:` line for rtlab's options.
fn input_options(a: &BeamSweepArgs) -> String {
    let c = &a.common;
    format!(
        "[workers: {:?}, duration_ms: {}, period_ms: {}, method: {}, cpu_process_flags: [priority: :{}], probe_flags: [priority: :{}], vm_args: {:?}, os_loads: {:?}]",
        a.workers.0,
        c.duration.as_millis(),
        c.period,
        c.method.name(),
        c.worker_priority.atom(),
        c.probe_priority.atom(),
        c.vm_args.clone().unwrap_or_default().0,
        c.loads.iter().map(|l| l.text.as_str()).collect::<Vec<_>>()
    )
}

fn sweep(args: BeamSweepArgs, command_line: Vec<String>) -> Result<i32, Error> {
    let erl = check(&args.common)?;
    let points_dir = args.out.join("points");
    std::fs::create_dir_all(&points_dir).map_err(|e| {
        Error::Usage(format!("--out {}: cannot create it ({e}); choose a writable directory", args.out.display()))
    })?;
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let environment = Environment::capture();
    let axis = vec!["workers".to_string()];
    let mut done: Vec<(Point, RunResult)> = Vec::new();
    let total = args.workers.0.len();
    let mut out = std::io::stdout();
    for (index, &w) in args.workers.0.iter().enumerate() {
        let point = Point {
            index,
            axes: vec![("workers".into(), w.to_string())],
            loads: vec![],
            probe: None,
            method: None,
            workers: w,
        };
        eprintln!("point {}/{total}: {w} worker(s), {:.1} s", index + 1, args.common.duration.as_secs_f64());
        let plan = plan(&args.common, erl.clone(), w);
        let (result, failure, _) =
            measure(&plan, &args.common.loads, command_line.clone(), environment.clone(), &signals, false)?;
        let file = points_dir.join(format!("{}.json", point.label()));
        let bytes = Json.serialize(&result).map_err(Error::Runtime)?;
        write_output(&file, &bytes).map_err(|e| Error::Runtime(format!("cannot write {}: {e}", file.display())))?;
        if failure.is_some() || result.end_reason == EndReason::Signal {
            crate::commands::sweep::write_summaries(&args.out, &axis, &done, &environment, &command_line, total)?;
            let why = failure.unwrap_or_else(|| "interrupted".into());
            return Err(Error::Runtime(format!(
                "point {} ({w} workers): {why}; the finished points are in {}",
                index + 1,
                args.out.display()
            )));
        }
        if index == 0 {
            let rt = result.runtime.clone().unwrap_or_default();
            let head = format!(
                "System: {}\nArchitecture: {}\nInput options: {}\n",
                rt.version.as_deref().unwrap_or("?"),
                rt.architecture.as_deref().unwrap_or("?"),
                input_options(&args)
            );
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(csv(&axis, &[]).as_bytes());
        }
        let row = csv(&axis, &[(&point, &result)]);
        let _ = out.write_all(row.lines().nth(1).map(|l| format!("{l}\n")).unwrap_or_default().as_bytes());
        let _ = out.flush();
        done.push((point, result));
        crate::commands::sweep::write_summaries(&args.out, &axis, &done, &environment, &command_line, total)?;
    }
    Ok(0)
}
