//! The observers every run gets: the loads (started with the probes, stopped the moment they
//! are told to stop), the `--samples` file, and the `--json` checkpoints.

use super::{Observer, Output};
use crate::export::samples::{self, Header, Record, ThreadInfo, Trailer};
use crate::export::{json::Json, write_output, Exporter};
use crate::load::{LoadResult, LoadSet, LoadSpec};
use crate::measure::ring::Sample;
use crate::measure::series::IntervalReading;
use crate::measure::stats::LiveSnapshot;
use crate::probes::ThreadStatus;
use crate::result::build::ProbeRun;
use crate::result::RunResult;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// Starts the loads when the probes are released and stops them the moment the probes are told
/// to stop: a load above the probes' priority would otherwise keep them from ever seeing the
/// stop flag (or from setting up, had the loads started first).
pub struct Loads {
    specs: Vec<LoadSpec>,
    running: Option<LoadSet>,
    /// What the loads did (after the stop).
    pub results: Vec<LoadResult>,
    /// Why the loads could not start, if they could not.
    pub error: Option<String>,
    stop: Arc<AtomicBool>,
}

impl Loads {
    /// Loads of `specs`; a failure to start them sets `stop` (the run ends).
    pub fn new(specs: Vec<LoadSpec>, stop: Arc<AtomicBool>) -> Loads {
        Loads { specs, running: None, results: Vec::new(), error: None, stop }
    }
}

impl Observer for Loads {
    fn started(&mut self, _: &[ThreadStatus], _: Option<i32>) {
        if self.specs.is_empty() {
            return;
        }
        match LoadSet::start(&self.specs) {
            Ok(set) => self.running = Some(set),
            Err(e) => {
                self.error = Some(e);
                self.stop.store(true, Relaxed);
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
pub struct Checkpoints {
    path: PathBuf,
    base: ProbeRun,
    warned: bool,
}

impl Checkpoints {
    /// Checkpoints into `path`; `base` holds what the pipeline does not know (command line,
    /// environment, configuration).
    pub fn new(path: PathBuf, base: ProbeRun) -> Checkpoints {
        Checkpoints { path, base, warned: false }
    }
}

impl Observer for Checkpoints {
    fn checkpoint(&mut self, partial: &Output) {
        let r = RunResult::build(partial.record(self.base.clone()));
        let written = Json.serialize(&r).map_err(std::io::Error::other).and_then(|b| write_output(&self.path, &b));
        if let (Err(e), false) = (written, self.warned) {
            eprintln!("rtlab: warning: cannot write a checkpoint to {}: {e}", self.path.display());
            self.warned = true;
        }
    }
}

/// Streams every sample from the engine's rings into a samples file (SCHED_OTHER, on the
/// reporting thread). The file is made through an unpredictable temporary file and moved
/// into place with its header as soon as the probes start, then flushed every second and
/// synced at every checkpoint: a crash (SIGKILL, a second Ctrl-C) leaves a valid file, without
/// its end record, holding everything up to the last flush.
pub struct SamplesWriter {
    path: PathBuf,
    /// Per slot: the task's name and a working task's deadline (for the header).
    tasks: Vec<(Option<String>, Option<i64>)>,
    clock: String,
    file: Option<std::io::BufWriter<std::fs::File>>,
    buf: Vec<u8>,
    records: u64,
    error: Option<String>,
    /// The threads as the header named them.
    header: Vec<ThreadInfo>,
    /// The threads as learnt by the end, when they differ (the trailer carries them).
    learnt: Vec<ThreadInfo>,
}

impl SamplesWriter {
    /// A writer to `path` of the samples of `slots`.
    pub fn new(path: &Path, clock: &str, slots: &[crate::probes::ThreadPlan]) -> SamplesWriter {
        SamplesWriter {
            path: path.to_path_buf(),
            tasks: slots.iter().map(|s| (s.name.clone(), s.work.map(|w| w.deadline_ns))).collect(),
            clock: clock.into(),
            file: None,
            buf: Vec::with_capacity(1 << 16),
            records: 0,
            error: None,
            header: Vec::new(),
            learnt: Vec::new(),
        }
    }

    fn fail(&mut self, e: impl std::fmt::Display) {
        if self.error.is_none() {
            self.error = Some(format!("cannot write --samples {}: {e}", self.path.display()));
        }
        self.file = None;
    }

    fn flush(&mut self, sync: bool) {
        if let Some(f) = self.file.as_mut() {
            let done = f.flush().and_then(|_| if sync { f.get_ref().sync_data() } else { Ok(()) });
            if let Err(e) = done {
                self.fail(e);
            }
        }
    }

    fn create(&mut self, header: &Header) -> std::io::Result<()> {
        let mut tmp = crate::export::temp_beside(&self.path)?;
        tmp.write_all(&samples::header_bytes(header))?;
        let file = tmp.persist(&self.path).map_err(|e| e.error)?;
        self.file = Some(std::io::BufWriter::with_capacity(1 << 20, file));
        Ok(())
    }

    /// Writes the trailer with the per-thread loss counts and syncs the file; returns the
    /// records written, or why the file is incomplete.
    pub fn finish(mut self, lost: Vec<u64>) -> Result<u64, String> {
        if let Some(f) = self.file.as_mut() {
            let done = f
                .write_all(&samples::trailer_bytes(&Trailer {
                    records: self.records,
                    lost,
                    threads: std::mem::take(&mut self.learnt),
                }))
                .and_then(|_| f.flush())
                .and_then(|_| f.get_ref().sync_all());
            if let Err(e) = done {
                self.fail(e);
            }
        }
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(self.records),
        }
    }
}

impl Observer for SamplesWriter {
    fn started(&mut self, threads: &[ThreadStatus], _: Option<i32>) {
        let header = Header {
            schema: "rtlab.samples/1".into(),
            clock: self.clock.clone(),
            start_time: crate::timefmt::rfc3339(std::time::SystemTime::now()),
            threads: threads
                .iter()
                .map(|t| ThreadInfo {
                    thread: t.index,
                    cpu: t.cpu,
                    interval_ns: t.interval_ns,
                    identity: t.identity.clone(),
                    name: self.tasks.get(t.index).and_then(|t| t.0.clone()),
                    deadline_ns: self.tasks.get(t.index).and_then(|t| t.1),
                })
                .collect(),
        };
        self.header = header.threads.clone();
        if let Err(e) = self.create(&header) {
            self.fail(e);
        }
    }
    fn finished(&mut self, threads: &[ThreadStatus], _: &[LiveSnapshot]) {
        // Threads whose identity was learnt during the run (a watch's) go into the trailer.
        let learnt = threads.iter().any(|t| self.header.get(t.index).is_some_and(|h| h.identity != t.identity));
        if learnt {
            self.learnt = self
                .header
                .iter()
                .map(|h| match threads.iter().find(|t| t.index == h.thread) {
                    Some(t) => ThreadInfo {
                        identity: t.identity.clone(),
                        name: t.watched_comm().map(String::from),
                        interval_ns: t.interval_ns,
                        ..h.clone()
                    },
                    None => h.clone(),
                })
                .collect();
        }
    }
    fn tick(&mut self, _: &[ThreadStatus], _: &[LiveSnapshot], _: std::time::Duration) {
        self.flush(false);
    }
    fn checkpoint(&mut self, _: &Output) {
        self.flush(true);
    }
    fn samples(&mut self, thread: usize, batch: &[Sample]) {
        if let Some(f) = self.file.as_mut() {
            self.buf.clear();
            for s in batch {
                let r = Record {
                    thread: thread as u16,
                    cycle: s.cycle,
                    wake_ns: s.at_ns,
                    latency_ns: s.latency_ns,
                    response_ns: s.response_ns,
                };
                samples::push_record(&mut self.buf, &r);
            }
            match f.write_all(&self.buf) {
                Ok(()) => self.records += batch.len() as u64,
                Err(e) => self.fail(e),
            }
        }
    }
}

/// Where and how often `--hlog` writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HlogPlan {
    /// The interval log.
    pub path: PathBuf,
    /// Seconds per interval (`--hlog-interval`, whole seconds: the pipeline reads once a second).
    pub seconds: u32,
}

/// One tag's interval being gathered: where it began and ends so far, its largest latency,
/// its histogram.
#[derive(Debug)]
struct Gathering {
    begin_ns: i64,
    end_ns: i64,
    max_ns: Option<i64>,
    histogram: crate::measure::hdr::Hdr,
    readings: u32,
}

/// Writes `--hlog`: an HdrHistogram interval log of every slot (and stage), from the readings
/// the pipeline takes of the live cells once a second. The file is made through an
/// unpredictable temporary file and moved into place with its header when the probes start;
/// each interval's lines are appended and flushed as it closes, the file is synced at the end,
/// so a crash keeps every interval written and Ctrl-C every interval measured. Memory holds one
/// interval per tag.
pub struct HlogWriter {
    plan: HlogPlan,
    kind: crate::result::Kind,
    start: Option<std::time::SystemTime>,
    /// Per slot: thread index and CPU, for the tags.
    slots: Vec<(usize, Option<usize>)>,
    gathering: std::collections::BTreeMap<(usize, Option<&'static str>), Gathering>,
    /// Where each tag's last interval ended.
    ends: std::collections::BTreeMap<(usize, Option<&'static str>), i64>,
    file: Option<std::io::BufWriter<std::fs::File>>,
    /// Intervals written.
    pub intervals: u64,
    error: Option<String>,
}

impl HlogWriter {
    /// A writer of `plan` for a run of `kind`.
    pub fn new(plan: HlogPlan, kind: crate::result::Kind) -> HlogWriter {
        HlogWriter {
            plan,
            kind,
            start: None,
            slots: Vec::new(),
            gathering: Default::default(),
            ends: Default::default(),
            file: None,
            intervals: 0,
            error: None,
        }
    }

    fn fail(&mut self, e: impl std::fmt::Display) {
        if self.error.is_none() {
            self.error = Some(format!("cannot write --hlog {}: {e}", self.plan.path.display()));
        }
        self.file = None;
    }

    /// Puts a new log with its header in place (replacing what is there, never through a symlink).
    fn create(&mut self) {
        let start = self.start.unwrap_or_else(std::time::SystemTime::now);
        let header = crate::export::hlog::header(start, crate::export::hlog::what(self.kind));
        let made = crate::export::temp_beside(&self.plan.path).and_then(|mut tmp| {
            tmp.write_all(header.as_bytes())?;
            tmp.persist(&self.plan.path).map_err(|e| e.error)
        });
        match made {
            Ok(f) => self.file = Some(std::io::BufWriter::with_capacity(1 << 16, f)),
            Err(e) => self.fail(e),
        }
    }

    /// Writes every interval gathered so far (the run's last, shorter ones at its end).
    fn write_all_gathered(&mut self) {
        let gathered = std::mem::take(&mut self.gathering);
        for (key, g) in gathered {
            self.write(key, &g);
        }
    }

    fn write(&mut self, (slot, stage): (usize, Option<&'static str>), g: &Gathering) {
        let (thread, cpu) = self.slots.get(slot).copied().unwrap_or((slot, None));
        let tag = crate::export::hlog::tag(thread, cpu, stage);
        let line = crate::export::hlog::line(&tag, g.begin_ns, g.end_ns, g.max_ns, &g.histogram);
        if let Some(f) = self.file.as_mut() {
            match f.write_all(line.as_bytes()) {
                Ok(()) => self.intervals += 1,
                Err(e) => self.fail(e),
            }
        }
    }

    /// Closes the current log and starts the next (`rtlab monitor`'s windows): the closed one
    /// moves to FILE.1 (older ones further, at most `keep`), the new one starts with its header.
    pub fn rotate(&mut self, keep: usize) {
        self.write_all_gathered();
        self.sync();
        if let Err(e) = crate::export::rotate(&self.plan.path, keep) {
            self.fail(e);
            return;
        }
        self.create();
    }

    fn sync(&mut self) {
        if let Some(f) = self.file.as_mut() {
            if let Err(e) = f.flush().and_then(|_| f.get_ref().sync_all()) {
                self.fail(e);
            }
        }
    }

    /// Writes the last intervals and syncs the log; returns the intervals written, or why the
    /// log is incomplete.
    pub fn finish(mut self) -> Result<u64, String> {
        self.write_all_gathered();
        self.sync();
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(self.intervals),
        }
    }
}

impl Observer for HlogWriter {
    fn schedule_start(&mut self, start: std::time::SystemTime) {
        self.start = Some(start);
    }
    fn started(&mut self, threads: &[ThreadStatus], _: Option<i32>) {
        self.slots = threads.iter().map(|t| (t.index, t.cpu)).collect();
        self.create();
    }
    fn interval(&mut self, slot: usize, stage: Option<&'static str>, r: &IntervalReading) {
        let key = (slot, stage);
        // An interval begins where the tag's last one ended.
        let begin_ns = self.ends.get(&key).copied().unwrap_or(0);
        let g = self.gathering.entry(key).or_insert_with(|| Gathering {
            begin_ns,
            end_ns: begin_ns,
            max_ns: None,
            histogram: crate::measure::hdr::empty(),
            readings: 0,
        });
        g.max_ns = g.max_ns.max(r.max_ns);
        // Histograms that grow to any value take any other's values.
        let _ = g.histogram.add(&*r.histogram());
        g.readings += 1;
        g.end_ns = g.end_ns.max(r.at_ns);
        if g.readings >= self.plan.seconds {
            let g = self.gathering.remove(&key).expect("inserted above");
            self.ends.insert(key, g.end_ns);
            self.write(key, &g);
            if let Some(Err(e)) = self.file.as_mut().map(|f| f.flush()) {
                self.fail(e);
            }
        }
    }
}
