//! Any input of `plot`, `report` and `compare`: a RunResult, a sweep (its directory or its
//! `sweep.json`), a samples file, or cyclictest output — each read into RunResults.

use super::{import_text, ImportError, Unit};
use crate::export::samples::{Reader, Record};
use crate::measure::histogram::Layout;
use crate::measure::stats::{Live, Recorder};
use crate::measure::work::{WorkKind, WorkLive, WorkRecorder, WorkSpec, DEFAULT_MISS_WINDOW};
use crate::result::build::{ProbeFigures, ProbeRun};
use crate::result::{RunResult, Source};
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

/// Reads every input, in order; the first that cannot be read is the error.
pub fn load_all(paths: &[std::path::PathBuf], unit: Option<Unit>) -> Result<Vec<Input>, ImportError> {
    paths.iter().map(|p| load(p, unit)).collect()
}

/// Reads any input; errors name the file and what is wrong (exit code 2 for the caller).
pub fn load(path: &Path, unit: Option<Unit>) -> Result<Input, ImportError> {
    let name = name_of(path);
    let sweep_file = if path.is_dir() { path.join("sweep.json") } else { path.to_path_buf() };
    if path.is_dir() && !sweep_file.is_file() {
        return Err(error(path, "is a directory without sweep.json; give a result file or a sweep directory".into()));
    }
    let mut magic = [0u8; 8];
    let head = super::open_input(&sweep_file, false)
        .and_then(|mut f| crate::export::samples::read_full(&mut f, &mut magic))
        .map_err(|e| error(&sweep_file, e))?;
    if head == 8 && &magic == crate::export::samples::MAGIC {
        let result = summarize_samples(&sweep_file)?;
        return Ok(Input {
            path: path.into(),
            name,
            content: Content::Run(Box::new(result)),
            samples: Some(path.into()),
        });
    }
    if super::rt_app::detect_file(&sweep_file) {
        let result = super::imported_rt_app_log(&sweep_file)?;
        return Ok(Input { path: path.into(), name, content: Content::Run(Box::new(result)), samples: None });
    }
    let text = super::read_text_input(&sweep_file).map_err(|(_, e)| {
        error(&sweep_file, format!("{e}: expected a RunResult, a sweep, a samples file or cyclictest output"))
    })?;
    if text.contains("\"rtlab.sweep/1\"") {
        let (sweep, points) = read_sweep(&sweep_file, &text)?;
        return Ok(Input { path: path.into(), name, content: Content::Sweep(Box::new(sweep), points), samples: None });
    }
    let result = import_text(&sweep_file, &text, unit)?;
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

/// Opens a samples file for streaming (its header read); errors say what is wrong, without
/// the path.
pub fn open_samples(path: &Path) -> Result<Reader<Box<dyn std::io::Read>>, String> {
    Reader::new(super::open_input(path, true)?)
}

/// The histograms' layout for a samples file. A regular file is read twice: first for its
/// largest latency, so the histograms need not span the default 10 ms of 1 µs buckets per
/// thread when the samples do not (a file of 4096 threads would hold 370 MB of empty buckets).
/// Same 1 µs buckets below that range, so the same percentiles; a pipe is read once, with the
/// default layout.
fn layout_for(path: &Path) -> Result<Layout, ImportError> {
    if path.as_os_str() == "-" || !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Ok(Layout::DEFAULT);
    }
    let mut first = open_samples(path).map_err(|e| error(path, e))?;
    let mut largest = 0i64;
    while let Some(r) = first.next_record().map_err(|e| error(path, e))? {
        largest = largest.max(r.latency_ns).max(r.response_ns.unwrap_or(0));
    }
    let bucket = Layout::DEFAULT.bucket_ns;
    let range = ((largest.max(0) as u64 / bucket + 1) * bucket).clamp(bucket, Layout::DEFAULT.range_ns);
    Ok(Layout::new(bucket, range).unwrap_or(Layout::DEFAULT))
}

/// A working task's response and run times and deadlines, rebuilt record by record (run =
/// response − latency; releases skipped by the one rule): the work asked is not in the file.
fn work_cells(header: &crate::export::samples::Header, layout: Layout) -> Vec<Option<WorkLive>> {
    header
        .threads
        .iter()
        .map(|t| {
            t.deadline_ns.map(|deadline_ns| {
                let spec =
                    WorkSpec { kind: WorkKind::Fixed, amount_ns: 0, deadline_ns, miss_window: DEFAULT_MISS_WINDOW };
                WorkLive::new(spec, layout, &[])
            })
        })
        .collect()
}

/// Streams a samples file once and builds its RunResult: exact statistics and histograms per
/// thread (missed periods are not known from samples alone: `null`).
pub fn summarize_samples(path: &Path) -> Result<RunResult, ImportError> {
    let layout = layout_for(path)?;
    let mut reader = open_samples(path).map_err(|e| error(path, e))?;
    let header = reader.header().clone();
    let lives: Vec<Live> = header.threads.iter().map(|_| Live::new(layout)).collect();
    let mut recorders: Vec<Recorder> = lives.iter().map(|l| Recorder::new(l, None)).collect();
    let works = work_cells(&header, layout);
    let mut work_recs: Vec<Option<WorkRecorder>> =
        works.iter().map(|w| w.as_ref().map(|w| WorkRecorder::new(w, None, None))).collect();
    let mut last_wake = 0i64;
    while let Some(Record { thread, wake_ns, latency_ns, response_ns, .. }) =
        reader.next_record().map_err(|e| error(path, e))?
    {
        let t = thread as usize;
        let skipped = match (response_ns, &mut work_recs[t]) {
            (Some(resp), Some(w)) => {
                // A period not known at the start (a watched thread's) skips nothing here.
                let interval = header.threads[t].interval_ns;
                let skipped = if interval > 0 { crate::measure::probe::missed_periods(resp, interval) } else { 0 };
                w.record(latency_ns, resp, resp - latency_ns, wake_ns, skipped);
                skipped
            }
            _ => 0,
        };
        recorders[t].record(latency_ns, wake_ns, skipped);
        last_wake = last_wake.max(wake_ns);
    }
    let lost = reader.trailer().map(|t| t.lost.clone());
    let named = crate::export::samples::Trailer::threads_of(reader.trailer(), &header).to_vec();
    let start = crate::timefmt::parse_rfc3339(&header.start_time);
    let probes = header
        .threads
        .iter()
        .zip(&recorders)
        .filter(|(t, _)| !reader.trailer().is_some_and(|tr| tr.unused(t.thread)))
        .map(|(t, r)| ProbeFigures {
            thread: t.thread,
            cpu: t.cpu,
            interval_ns: t.interval_ns,
            summary: r.finish(),
            drift_ns: None,
            samples_lost: lost.as_ref().and_then(|l| l.get(t.thread).copied()),
            obtained: None,
            break_hit: None,
            logs: None,
            noise: None,
            name: named.iter().find(|n| n.thread == t.thread).and_then(|n| n.name.clone()),
            work: work_recs[t.thread].as_ref().map(|w| w.finish()),
            watch: None,
            series: None,
        })
        .collect();
    let mut r = RunResult::build(ProbeRun {
        start,
        ..ProbeRun::imported(
            probes,
            Source {
                format: "rtlab-samples".into(),
                file: path.display().to_string(),
                tool_version: None,
                command_line: None,
                unit: "ns".into(),
            },
            Some(last_wake.max(0) as f64 / 1e9),
        )
    });
    r.start_time = Some(header.start_time);
    // The file keeps deadlines, not what work was asked.
    for w in r.threads.iter_mut().filter_map(|t| t.work.as_mut()).chain(r.all.work.as_mut()) {
        (w.kind, w.work_ns) = (None, None);
    }
    Ok(r)
}
