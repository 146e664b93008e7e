//! `rtlab run`: plan → loads → engine → RunResult → files and summary.

use crate::cli::run::RunOptions;
use crate::export::{json::Json, write_output, Exporter};
use crate::load::LoadSet;
use crate::measure::engine::{self, Fanout, Observer, Signals};
use crate::output::live::LiveView;
use crate::output::table;
use crate::result::{Provenance, RunResult};
use crate::sysinfo::Environment;
use std::io::{IsTerminal, Write};

/// A failure while running (exit code 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RunError(pub String);

/// Runs one measurement with its loads (and `--samples` file) and returns the result; prints
/// nothing. `observer` receives the engine's events too.
pub fn measure(
    opts: &RunOptions,
    command_line: Vec<String>,
    environment: Environment,
    observer: &mut dyn Observer,
    signals: &Signals,
) -> Result<RunResult, RunError> {
    let simulated = opts.plan.simulate.is_some();
    // Simulated probes get no real load: their samples would not depend on it.
    let mut loads = Loads {
        specs: if simulated { Vec::new() } else { opts.loads.clone() },
        running: None,
        results: Vec::new(),
        error: None,
        stop: signals.stop.clone(),
    };
    let clock = if opts.plan.clock == crate::measure::probe::ClockKind::Realtime { "realtime" } else { "monotonic" };
    let mut writer = opts.samples.as_ref().map(|p| crate::commands::samples::SamplesWriter::new(p, clock));
    let out = {
        let mut all: Vec<&mut dyn Observer> = vec![observer, &mut loads];
        if let Some(w) = writer.as_mut() {
            all.push(w);
        }
        engine::run(&opts.plan, &mut Fanout(all), signals).map_err(|e| RunError(e.to_string()))
    };
    loads.stopping();
    if let Some(e) = loads.error.take() {
        return Err(RunError(e));
    }
    let out = out?;
    let mut result =
        RunResult::build(Provenance { command_line, environment, config: opts.config.clone(), simulated }, &out);
    result.attach_loads(std::mem::take(&mut loads.results));
    if let (Some(w), Some(path)) = (writer, &opts.samples) {
        let lost: Vec<u64> = out.threads.iter().map(|t| t.samples_lost).collect();
        // A full disk costs the samples file, never the --json result or the summary.
        if let Err(why) = w.finish(lost.clone()) {
            let w =
                crate::output::warnings::Warning::OutputFailed { output: format!("--samples {}", path.display()), why };
            result.warnings.push(w.into());
        }
        for (t, l) in result.threads.iter_mut().zip(&lost) {
            t.samples_lost = Some(*l);
        }
        let total: u64 = lost.iter().sum();
        if total > 0 {
            let w = crate::output::warnings::Warning::SamplesLost { count: total, file: path.display().to_string() };
            result.warnings.push(w.into());
        }
    }
    Ok(result)
}

/// Starts the loads when the probes are released and stops them the moment the probes are told
/// to stop: a load above the probes' priority would otherwise keep them from ever seeing the
/// stop flag (or from setting up, had the loads started first).
struct Loads {
    specs: Vec<crate::load::LoadSpec>,
    running: Option<LoadSet>,
    results: Vec<crate::load::LoadResult>,
    error: Option<String>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Observer for Loads {
    fn started(&mut self, _: &[engine::ThreadStatus], _: Option<i32>) {
        if self.specs.is_empty() {
            return;
        }
        match LoadSet::start(&self.specs) {
            Ok(set) => self.running = Some(set),
            Err(e) => {
                self.error = Some(e);
                self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    fn stopping(&mut self) {
        if let Some(set) = self.running.take() {
            self.results = set.stop();
        }
    }
}

/// Writes every checkpoint to the `--json` file, atomically (the final result replaces it).
struct Checkpoints {
    path: std::path::PathBuf,
    provenance: Provenance,
    warned: bool,
}

impl Observer for Checkpoints {
    fn checkpoint(&mut self, partial: &engine::EngineOutput) {
        let r = RunResult::build(self.provenance.clone(), partial);
        let written = Json.serialize(&r).map_err(std::io::Error::other).and_then(|b| write_output(&self.path, &b));
        if let (Err(e), false) = (written, self.warned) {
            eprintln!("rtlab: warning: cannot write a checkpoint to {}: {e}", self.path.display());
            self.warned = true;
        }
    }
}

/// Runs the measurement and writes every output; returns the exit code (0, or 3 when the
/// verdict failed).
pub fn execute(opts: RunOptions, command_line: Vec<String>) -> Result<i32, RunError> {
    let signals = Signals::install().map_err(|e| RunError(format!("cannot install signal handlers: {e}")))?;
    let to_stdout = opts.json.as_ref().is_some_and(|p| p.as_os_str() == "-");
    let draw = !opts.quiet && !to_stdout && std::io::stdout().is_terminal();
    let mut view = LiveView::new(draw, opts.unit);
    let environment = Environment::capture();
    let mut checkpoints = match (&opts.json, opts.plan.checkpoint) {
        (Some(path), Some(_)) => Some(Checkpoints {
            path: path.clone(),
            provenance: Provenance {
                command_line: command_line.clone(),
                environment: environment.clone(),
                config: opts.config.clone(),
                simulated: opts.plan.simulate.is_some(),
            },
            warned: false,
        }),
        _ => None,
    };
    let mut observers: Vec<&mut dyn Observer> = vec![&mut view];
    if let Some(c) = checkpoints.as_mut() {
        observers.push(c);
    }
    let observer = &mut Fanout(observers);
    let result = measure(&opts, command_line, environment, observer, &signals)?;
    finish(&result, opts.json.as_deref(), opts.unit)
}

/// Writes `--json` and prints the summary; a write that fails still leaves the summary
/// printed (exit 1 with the reason).
fn finish(
    result: &RunResult,
    json: Option<&std::path::Path>,
    unit: crate::output::units::Unit,
) -> Result<i32, RunError> {
    let to_stdout = json.is_some_and(|p| p.as_os_str() == "-");
    let written = match json {
        Some(path) => Json
            .serialize(result)
            .and_then(|bytes| write_output(path, &bytes).map_err(|e| e.to_string()))
            .map_err(|e| {
                RunError(format!("cannot write --json {}: {e}; the summary above is all that is left", path.display()))
            }),
        None => Ok(()),
    };
    print_summary(result, unit, "", to_stdout);
    written?;
    Ok(result.exit_code())
}

/// Prints `header`, the summary table and the loads' table: on stderr when the result itself
/// goes to stdout.
pub fn print_summary(result: &RunResult, unit: crate::output::units::Unit, header: &str, to_stderr: bool) {
    let mut summary = header.to_string() + &table::summary(result, unit);
    if !result.loads.is_empty() {
        summary += &crate::commands::load::table(&result.loads);
    }
    if to_stderr {
        let _ = std::io::stderr().write_all(summary.as_bytes());
    } else {
        let _ = std::io::stdout().write_all(summary.as_bytes());
    }
}

/// `rtlab run --runtime tokio`: the tokio probe with the OS loads around it; the same
/// RunResult, summary and exit codes as OS threads.
pub fn execute_tokio(opts: RunOptions, command_line: Vec<String>) -> Result<i32, RunError> {
    use crate::load::LoadResult;
    use crate::result::{ProbeFigures, ProbeRun, Runtime};
    use crate::runtime::tokio_probe::{self, Flavor, Wait};
    let plan = opts.tokio.clone().ok_or_else(|| RunError("internal: no tokio plan".into()))?;
    let signals = Signals::install().map_err(|e| RunError(format!("cannot install signal handlers: {e}")))?;
    if !opts.quiet {
        eprintln!(
            "tokio {} runtime ({} worker thread{}), a task with {} every {}; tokio's timer wheel has 1 ms granularity",
            plan.flavor.name(),
            plan.workers,
            if plan.workers == 1 { "" } else { "s" },
            plan.wait.name(),
            crate::timefmt::duration_text(plan.interval_ns)
        );
    }
    let mut running: Option<LoadSet> = None;
    let mut load_error = None;
    let outcome = tokio_probe::run(&plan, signals.stop.clone(), || {
        if !opts.loads.is_empty() {
            match LoadSet::start(&opts.loads) {
                Ok(set) => running = Some(set),
                Err(e) => load_error = Some(e),
            }
        }
    });
    let os_loads = running.take().map(LoadSet::stop).unwrap_or_default();
    if let Some(e) = load_error {
        return Err(RunError(e));
    }
    let o = outcome.map_err(RunError)?;
    let end_reason = if o.interrupted {
        engine::EndReason::Signal
    } else if plan.loops.is_some_and(|l| o.summary.cycles >= l) {
        engine::EndReason::Loops
    } else {
        engine::EndReason::Duration
    };
    let mut result = RunResult::from_probes(ProbeRun {
        probes: vec![ProbeFigures {
            thread: 0,
            cpu: None,
            interval_ns: plan.interval_ns,
            summary: o.summary.clone(),
            drift_ns: o.drift_ns,
            samples_lost: None,
        }],
        start: Some(o.start),
        duration_s: Some(o.elapsed_s),
        end_reason,
        missed_known: true,
        command_line,
        environment: Environment::capture(),
        source: None,
        threshold_ns: plan.threshold_ns,
    });
    result.runtime = Some(Runtime {
        kind: "tokio".into(),
        method: plan.wait.name().into(),
        period_ns: plan.interval_ns,
        timer_granularity_ns: 1_000_000,
        version: Some(format!("tokio {}", tokio_probe::VERSION)),
        architecture: Some(std::env::consts::ARCH.into()),
        schedulers: Some(plan.workers),
        flavor: Some(plan.flavor.name().into()),
        missed_tick_behavior: (plan.wait == Wait::Interval).then(|| plan.missed_tick.name().into()),
        workers: plan.hogs,
        blocking_tasks: plan.blocking,
        ..Runtime::default()
    });
    let elapsed = o.elapsed_s;
    let in_runtime = |kind: &str, n: usize, terms: u64, policy: &str| {
        LoadResult::in_runtime(format!("{kind}:workers={n}"), kind, n, policy.into(), terms, elapsed)
    };
    if plan.hogs > 0 {
        let where_ = if plan.flavor == Flavor::CurrentThread { "tokio current-thread" } else { "tokio worker" };
        result.loads.push(in_runtime("tokio-hog", plan.hogs, o.terms.0, where_));
    }
    if plan.blocking > 0 {
        result.loads.push(in_runtime("tokio-blocking", plan.blocking, o.terms.1, "tokio blocking pool"));
    }
    result.attach_loads(os_loads);
    result.warnings.push(
        crate::output::warnings::Warning::TimerGranularity { runtime: "tokio".into(), granularity_ns: 1_000_000 }
            .into(),
    );
    finish(&result, opts.json.as_deref(), opts.unit)
}
