//! Any input of `plot`, `report` and `compare`: a RunResult, a sweep (its directory or its
//! `sweep.json`), a samples file, or cyclictest output — each read into RunResults.

use super::{import_file, ImportError, Unit};
use crate::export::samples::{Reader, Record};
use crate::measure::histogram::Layout;
use crate::measure::stats::{Live, Recorder, Summary};
use crate::result::{AllResult, RunResult, Source, ThreadResult, Tool, Verdict};
use crate::sweep::{SweepPoint, SweepResult};
use std::path::{Path, PathBuf};

/// One point of a sweep, read back.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedPoint {
    /// Its entry in `sweep.json` (axes, label).
    pub point: SweepPoint,
    /// Its result, with the sweep's environment.
    pub result: RunResult,
}

/// What an input file turned out to be.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// One run (rtlab's, imported from cyclictest, or summarised from a samples file).
    Run(Box<RunResult>),
    /// A sweep and its points.
    Sweep(Box<SweepResult>, Vec<LoadedPoint>),
}

/// An input and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    /// The path as given.
    pub path: PathBuf,
    /// A short name for legends and headings (the file name; for a sweep its directory).
    pub name: String,
    /// What it holds.
    pub content: Content,
    /// The samples file, when the input was one (for the time-series plot).
    pub samples: Option<PathBuf>,
}

impl Input {
    /// The run, when the input is one.
    pub fn run(&self) -> Option<&RunResult> {
        match &self.content {
            Content::Run(r) => Some(r),
            Content::Sweep(..) => None,
        }
    }
}

fn error(path: &Path, message: String) -> ImportError {
    ImportError { file: path.display().to_string(), line: None, message }
}

fn name_of(path: &Path) -> String {
    let p = if path.file_name().is_some_and(|n| n == "sweep.json") { path.parent().unwrap_or(path) } else { path };
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Reads any input; errors name the file and what is wrong (exit code 2 for the caller).
pub fn load(path: &Path, unit: Option<Unit>) -> Result<Input, ImportError> {
    let name = name_of(path);
    let sweep_file = if path.is_dir() { path.join("sweep.json") } else { path.to_path_buf() };
    if path.is_dir() && !sweep_file.is_file() {
        return Err(error(path, "is a directory without sweep.json; give a result file or a sweep directory".into()));
    }
    let mut magic = [0u8; 8];
    let head = std::fs::File::open(&sweep_file)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut magic))
        .map_err(|e| error(&sweep_file, format!("cannot read: {e}")))?;
    if head == 8 && &magic == crate::export::samples::MAGIC {
        let result = summarize_samples(&sweep_file)?;
        return Ok(Input {
            path: path.into(),
            name,
            content: Content::Run(Box::new(result)),
            samples: Some(path.into()),
        });
    }
    let text = std::fs::read_to_string(&sweep_file).unwrap_or_default();
    if text.contains("\"rtlab.sweep/1\"") {
        let (sweep, points) = read_sweep(&sweep_file, &text)?;
        return Ok(Input { path: path.into(), name, content: Content::Sweep(Box::new(sweep), points), samples: None });
    }
    let result = import_file(&sweep_file, unit)?;
    Ok(Input { path: path.into(), name, content: Content::Run(Box::new(result)), samples: None })
}

fn read_sweep(path: &Path, text: &str) -> Result<(SweepResult, Vec<LoadedPoint>), ImportError> {
    let sweep: SweepResult = serde_json::from_str(text).map_err(|e| ImportError {
        file: path.display().to_string(),
        line: Some(e.line()),
        message: format!("not a valid rtlab.sweep/1 file: {e}"),
    })?;
    let env = serde_json::to_value(&sweep.environment).unwrap_or_default();
    let mut points = Vec::with_capacity(sweep.points.len());
    for p in &sweep.points {
        let mut v = p.result.clone();
        if let Some(o) = v.as_object_mut() {
            o.insert("environment".into(), env.clone());
        }
        let result: RunResult = serde_json::from_value(v)
            .map_err(|e| error(path, format!("point {} ({}) is not a valid run: {e}", p.index, p.label)))?;
        points.push(LoadedPoint { point: p.clone(), result });
    }
    Ok((sweep, points))
}

/// Streams a samples file once and builds its RunResult: exact statistics and histograms per
/// thread (missed periods are not known from samples alone: `null`).
pub fn summarize_samples(path: &Path) -> Result<RunResult, ImportError> {
    let file = std::fs::File::open(path).map_err(|e| error(path, format!("cannot read: {e}")))?;
    let mut reader = Reader::new(std::io::BufReader::with_capacity(1 << 16, file)).map_err(|e| error(path, e))?;
    let header = reader.header().clone();
    let lives: Vec<Live> = header.threads.iter().map(|_| Live::new(Layout::DEFAULT)).collect();
    let mut recorders: Vec<Recorder> = lives.iter().map(|l| Recorder::new(l, None)).collect();
    let mut last_wake = 0i64;
    while let Some(Record { thread, wake_ns, latency_ns, .. }) = reader.next_record().map_err(|e| error(path, e))? {
        recorders[thread as usize].record(latency_ns, wake_ns, 0);
        last_wake = last_wake.max(wake_ns);
    }
    let lost = reader.trailer().map(|t| t.lost.clone());
    let start = crate::timefmt::parse_rfc3339(&header.start_time);
    let summaries: Vec<Summary> = recorders.iter().map(Recorder::finish).collect();
    let at = start.unwrap_or(std::time::UNIX_EPOCH);
    let threads: Vec<ThreadResult> = header
        .threads
        .iter()
        .zip(&summaries)
        .map(|(t, s)| {
            let mut stats = crate::result::stats_of(s, at);
            stats.missed = None;
            if start.is_none() {
                stats.max_at_time = None;
            }
            ThreadResult {
                thread: t.thread,
                cpu: t.cpu,
                cpus_allowed: None,
                last_cpu: None,
                policy: None,
                priority: None,
                deadline: None,
                interval_ns: Some(t.interval_ns),
                timer_slack_ns: None,
                drift_ns: None,
                samples_lost: lost.as_ref().and_then(|l| l.get(t.thread).copied()),
                stats,
            }
        })
        .collect();
    let mut all = Summary::empty(Layout::DEFAULT);
    for (i, s) in summaries.iter().enumerate() {
        all.merge(s, i);
    }
    let mut all_stats = crate::result::stats_of(&all, at);
    all_stats.missed = None;
    let cpus = crate::rt::affinity::CpuSet::from_cpus(header.threads.iter().filter_map(|t| t.cpu));
    let end = start.map(|s| s + std::time::Duration::from_nanos(last_wake.max(0) as u64));
    Ok(RunResult {
        schema: crate::result::SCHEMA.into(),
        tool: Tool::this(),
        command_line: vec![],
        start_time: Some(header.start_time.clone()),
        end_time: end.map(crate::timefmt::rfc3339),
        duration_s: Some(last_wake.max(0) as f64 / 1e9),
        end_reason: crate::measure::engine::EndReason::Unknown,
        simulated: false,
        source: Some(Source {
            format: "rtlab-samples".into(),
            file: path.display().to_string(),
            tool_version: None,
            command_line: None,
            unit: "ns".into(),
        }),
        environment: crate::sysinfo::Environment::unknown(),
        config: None,
        all: AllResult {
            threads: threads.len(),
            policy: None,
            priority: None,
            cpu: (!cpus.is_empty()).then(|| cpus.to_string()),
            max_at_thread: all.max_at_thread,
            stats: all_stats,
        },
        threads,
        loads: vec![],
        warnings: vec![],
        verdict: Verdict::not_checked(),
    })
}
