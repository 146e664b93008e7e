//! `rtlab run`: plan → loads → engine → RunResult → files and summary.

use crate::cli::run::RunOptions;
use crate::export::{json::Json, write_output, Exporter};
use crate::load::LoadSet;
use crate::measure::engine::{self, Observer, Signals};
use crate::output::live::LiveView;
use crate::output::table;
use crate::result::{Provenance, RunResult};
use crate::sysinfo::Environment;
use std::io::{IsTerminal, Write};

/// A failure while running (exit code 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RunError(pub String);

/// Runs one measurement with its loads and returns the result (nothing is printed or written).
pub fn measure(
    opts: &RunOptions,
    command_line: Vec<String>,
    environment: Environment,
    observer: &mut dyn Observer,
    signals: &Signals,
) -> Result<RunResult, RunError> {
    let simulated = opts.plan.simulate.is_some();
    // Simulated probes get no real load: their samples would not depend on it. Real loads start
    // when the probes are released, so that a load above the probes' priority cannot keep them
    // from setting up.
    let specs = if simulated { Vec::new() } else { opts.loads.clone() };
    let clock = if opts.plan.clock == crate::measure::probe::ClockKind::Realtime { "realtime" } else { "monotonic" };
    let mut writer = None;
    let observer: &mut dyn Observer = match &opts.samples {
        Some(p) => writer.insert(crate::commands::samples::SamplesWriter::new(observer, p, clock)),
        None => observer,
    };
    let mut with_loads =
        WithLoads { inner: observer, specs, loads: None, results: Vec::new(), error: None, stop: signals.stop.clone() };
    let out = engine::run(&opts.plan, &mut with_loads, signals).map_err(|e| RunError(e.to_string()));
    with_loads.stopping();
    if let Some(e) = with_loads.error.take() {
        return Err(RunError(e));
    }
    let load_results = std::mem::take(&mut with_loads.results);
    drop(with_loads);
    let out = out?;
    let mut result =
        RunResult::build(Provenance { command_line, environment, config: opts.config.clone(), simulated }, &out);
    result.loads = load_results;
    if let (Some(w), Some(path)) = (writer, &opts.samples) {
        let lost: Vec<u64> = out.threads.iter().map(|t| t.samples_lost).collect();
        w.finish(lost.clone()).map_err(RunError)?;
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

/// Forwards the engine's events, starts the loads when the probes are released and stops them
/// the moment the probes are told to stop: a load above the probes' priority would otherwise
/// keep them from ever seeing the stop flag.
struct WithLoads<'a> {
    inner: &'a mut dyn Observer,
    specs: Vec<crate::load::LoadSpec>,
    loads: Option<LoadSet>,
    results: Vec<crate::load::LoadResult>,
    error: Option<String>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Observer for WithLoads<'_> {
    fn started(&mut self, t: &[engine::ThreadStatus], dma: Option<i32>) {
        if !self.specs.is_empty() {
            match LoadSet::start(&self.specs) {
                Ok(set) => self.loads = Some(set),
                Err(e) => {
                    self.error = Some(e);
                    self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
        self.inner.started(t, dma)
    }
    fn tick(&mut self, t: &[engine::ThreadStatus], l: &[crate::measure::stats::LiveSnapshot], e: std::time::Duration) {
        self.inner.tick(t, l, e)
    }
    fn status_requested(
        &mut self,
        t: &[engine::ThreadStatus],
        l: &[crate::measure::stats::LiveSnapshot],
        e: std::time::Duration,
    ) {
        self.inner.status_requested(t, l, e)
    }
    fn stopping(&mut self) {
        if let Some(set) = self.loads.take() {
            self.results = set.stop();
        }
        self.inner.stopping()
    }
    fn samples(&mut self, thread: usize, s: &[crate::measure::ring::Sample]) {
        self.inner.samples(thread, s)
    }
    fn checkpoint(&mut self, partial: &engine::EngineOutput) {
        self.inner.checkpoint(partial)
    }
    fn finished(&mut self, t: &[engine::ThreadStatus], l: &[crate::measure::stats::LiveSnapshot]) {
        self.inner.finished(t, l)
    }
}

/// Writes every checkpoint to the `--json` file, atomically (the final result replaces it).
struct Checkpoints<'a> {
    inner: &'a mut dyn Observer,
    path: std::path::PathBuf,
    provenance: Provenance,
    warned: bool,
}

impl Observer for Checkpoints<'_> {
    fn started(&mut self, t: &[engine::ThreadStatus], dma: Option<i32>) {
        self.inner.started(t, dma)
    }
    fn tick(&mut self, t: &[engine::ThreadStatus], l: &[crate::measure::stats::LiveSnapshot], e: std::time::Duration) {
        self.inner.tick(t, l, e)
    }
    fn status_requested(
        &mut self,
        t: &[engine::ThreadStatus],
        l: &[crate::measure::stats::LiveSnapshot],
        e: std::time::Duration,
    ) {
        self.inner.status_requested(t, l, e)
    }
    fn stopping(&mut self) {
        self.inner.stopping()
    }
    fn samples(&mut self, thread: usize, s: &[crate::measure::ring::Sample]) {
        self.inner.samples(thread, s)
    }
    fn checkpoint(&mut self, partial: &engine::EngineOutput) {
        let r = RunResult::build(self.provenance.clone(), partial);
        let written = Json.serialize(&r).map_err(std::io::Error::other).and_then(|b| write_output(&self.path, &b));
        if let (Err(e), false) = (written, self.warned) {
            eprintln!("rtlab: warning: cannot write a checkpoint to {}: {e}", self.path.display());
            self.warned = true;
        }
        self.inner.checkpoint(partial)
    }
    fn finished(&mut self, t: &[engine::ThreadStatus], l: &[crate::measure::stats::LiveSnapshot]) {
        self.inner.finished(t, l)
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
            inner: &mut view,
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
    let observer: &mut dyn Observer = match checkpoints.as_mut() {
        Some(c) => c,
        None => &mut view,
    };
    let result = measure(&opts, command_line, environment, observer, &signals)?;

    if let Some(path) = &opts.json {
        let bytes = Json.serialize(&result).map_err(RunError)?;
        write_output(path, &bytes).map_err(|e| RunError(format!("cannot write --json {}: {e}", path.display())))?;
    }
    let mut summary = table::summary(&result, opts.unit);
    if !result.loads.is_empty() {
        summary += &crate::commands::load::table(&result.loads);
    }
    if to_stdout {
        let _ = std::io::stderr().write_all(summary.as_bytes());
    } else {
        let _ = std::io::stdout().write_all(summary.as_bytes());
    }
    Ok(result.exit_code())
}
