//! `rtlab monitor`: the probes run through the one pipeline for as long as the service lives;
//! once a second the monitor turns the probes' published figures into a metrics snapshot and
//! the current RunResult, and hands both to the HTTP server ([`crate::serve`]).

use crate::error::Error;
use crate::export::Exporter;
use crate::measure::ring::Sample;
use crate::output::warnings::WarningPrinter;
use crate::probes::ThreadStatus;
use crate::result::build::ProbeRun;
use crate::result::RunResult;
use crate::serve::exposition::{bucket_bounds_ns, ProbeInfo, ProbeSeries, ResponseSeries, Snapshot};
use crate::serve::http::Server;
use crate::serve::{Board, Published};
use crate::session::{self, Fanout, Observer, Output, Provenance, Signals};
use crate::sysinfo::Environment;
use std::collections::VecDeque;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A validated `rtlab monitor`.
#[derive(Debug, Clone)]
pub struct MonitorOptions {
    /// The probe, as `rtlab run` would measure it (checkpoints every second, samples streamed).
    pub plan: session::Plan,
    /// Where to serve.
    pub listen: SocketAddr,
    /// Sliding window of the window-max gauges.
    pub window: Duration,
    /// Exceedance thresholds (ns), ascending.
    pub thresholds_ns: Vec<i64>,
    /// `--json FILE`: each window's RunResult goes there.
    pub json: Option<std::path::PathBuf>,
    /// Window length for `--json`.
    pub rotate: Duration,
    /// Earlier windows kept (FILE.1 …).
    pub keep: usize,
    /// `--hlog` beside the `--json` windows, rotated with them (without windows the plan writes it).
    pub hlog: Option<session::observers::HlogPlan>,
    /// `--predict`: the horizon (ns) of the worst case each window predicts from its own seconds.
    pub predict: Option<i64>,
}

/// Serves until SIGINT/SIGTERM (or `-D`); exit 0, 1 when the probe failed.
pub fn execute(opts: &MonitorOptions, command_line: Vec<String>) -> Result<i32, Error> {
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let board = Board::default();
    let server = Server::start(opts.listen, board.clone(), opts.plan.probe.main_affinity().cloned()).map_err(|e| {
        Error::Usage(format!(
            "--listen {}: cannot listen there ({e}); choose a free port, e.g. --listen 127.0.0.1:9737",
            opts.listen
        ))
    })?;
    eprintln!("rtlab monitor: serving http://{}/metrics, /healthz and /status", server.addr);
    if !server.addr.ip().is_loopback() {
        eprintln!(
            "rtlab: warning: --listen {} is not a loopback address: /status serves this machine's kernel command line, hostname and findings to anyone who can reach it, without authentication; put a proxy with TLS and credentials in front, or listen on 127.0.0.1 (docs/guide/monitor.md, Security)",
            opts.listen
        );
    }
    let provenance = Provenance { command_line, environment: Environment::capture() };
    let mut monitor = Monitor::new(board, session::base_record(&opts.plan, provenance.clone()), opts);
    let hup = Arc::new(std::sync::atomic::AtomicBool::new(false));
    if opts.json.is_some() {
        // SIGHUP ends the window (logrotate's postrotate), not the monitor.
        signals.hup_does_not_stop();
        signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&hup))
            .map_err(|e| Error::Runtime(format!("cannot install the SIGHUP handler: {e}")))?;
        monitor.windows = Some(Windows::new(opts, hup));
    }
    let mut warnings = WarningPrinter::default();
    // A heartbeat on stderr: every 10 s on a terminal, every minute into a log.
    let every = Duration::from_secs(if std::io::stderr().is_terminal() { 10 } else { 60 });
    let mut beat = crate::output::live::Heartbeat::new("rtlab monitor", "wakeup", false, every);
    beat.total = opts.plan.duration;
    let measured = session::measure(
        &opts.plan,
        provenance,
        None,
        &mut Fanout(vec![&mut monitor, &mut warnings, &mut beat]),
        &signals,
    );
    server.stop();
    // The last window, up to the last second published, is written too.
    let windows = monitor.windows.as_mut().map(Windows::finish);
    let (result, failure) = measured.map_err(|e| Error::Runtime(e.to_string()))?;
    warnings.rest(&result);
    // What it measured while it served, as `rtlab run` prints it.
    eprint!(
        "rtlab monitor: stopped after {}\n{}",
        crate::units::duration(result.duration_s.map_or(0, |d| (d * 1e9) as i64)),
        crate::output::table::summary(&result, crate::units::Unit::Micros)
    );
    if let Some(f) = failure {
        return Err(Error::Runtime(f));
    }
    // A window that could not be written fails the monitor (exit 1), after it served to the end.
    windows.transpose()?;
    Ok(0)
}

/// One slot's window state: the largest latency of each second, for the sliding window.
#[derive(Debug, Default)]
struct Seconds(VecDeque<(i64, i64, i64)>);

impl Seconds {
    /// Adds a sample of `latency` ns at `at` ns (Unix).
    fn add(&mut self, at: i64, latency: i64) {
        let sec = at.div_euclid(1_000_000_000);
        match self.0.back_mut() {
            Some(b) if b.0 == sec => {
                if latency > b.1 {
                    *b = (sec, latency, at);
                }
            }
            _ => self.0.push_back((sec, latency, at)),
        }
    }

    /// Keeps at most `n` seconds (a simulated run's samples run ahead of the wall clock).
    fn bound(&mut self, n: usize) {
        while self.0.len() > n {
            self.0.pop_front();
        }
    }

    /// Forgets seconds before `from` (Unix s) and gives the largest `(latency, at)` left.
    fn max_since(&mut self, from: i64) -> Option<(i64, i64)> {
        while self.0.front().is_some_and(|b| b.0 < from) {
            self.0.pop_front();
        }
        self.0.iter().max_by_key(|b| b.1).map(|b| (b.1, b.2))
    }
}

/// `--json FILE`: one RunResult per window, from the difference of two checkpoints, with
/// each window's extremes taken from the samples themselves. FILE holds the current window,
/// rewritten every [`SAVE_EVERY`] checkpoints (`end_reason: checkpoint`) and when it closes; a
/// closed window moves to FILE.1 (the older ones further) only once the next one has been written
/// beside it ([`crate::export::write_rotated`]).
struct Windows {
    path: std::path::PathBuf,
    keep: usize,
    hup: Arc<std::sync::atomic::AtomicBool>,
    /// The checkpoint the window started from (`None`: the run's start).
    base: Option<Vec<crate::measure::stats::Summary>>,
    /// Checkpoints in a window (one a second: `--rotate` in seconds), and so far in this one.
    per_window: u64,
    checkpoints: u64,
    began_wall: Option<SystemTime>,
    /// Per slot: the window's smallest and largest sample (with its time since the window began).
    extremes: Vec<Option<(i64, (i64, i64))>>,
    /// The window so far, as of the last checkpoint.
    pending: Option<RunResult>,
    /// FILE holds a closed window (or an earlier run's file): the next write rotates first.
    closed_on_file: bool,
    /// The first write that failed, said again when the monitor ends (exit 1).
    failed: Option<String>,
    /// Per slot, a working task's window: its deadlines counted from the samples themselves
    /// (the probe's longest run and worst window are the run's, not the window's).
    work: Vec<Option<WindowWork>>,
    /// The working tasks' figures at the checkpoint the window started from.
    work_base: Option<Vec<Option<crate::measure::work::WorkSummary>>>,
    /// `--hlog`: the interval log beside the windows, rotated with them.
    hlog: Option<session::observers::HlogWriter>,
    /// `--predict`'s horizon (ns).
    predict: Option<i64>,
}

/// A working task's figures over one window, from its samples.
struct WindowWork {
    interval_ns: i64,
    spec: crate::measure::work::WorkSpec,
    tracker: crate::measure::work::DeadlineTracker,
    /// The window's smallest and largest response and run times (with the time since the
    /// window began).
    response: Option<(i64, (i64, i64))>,
    run: Option<(i64, (i64, i64))>,
}

impl WindowWork {
    fn new(interval_ns: i64, spec: crate::measure::work::WorkSpec) -> WindowWork {
        WindowWork {
            interval_ns,
            spec,
            tracker: crate::measure::work::DeadlineTracker::new(spec.miss_window),
            response: None,
            run: None,
        }
    }
}

/// `extremes` with `v` at `at` added.
fn widen(extremes: Option<(i64, (i64, i64))>, v: i64, at: i64) -> (i64, (i64, i64)) {
    match extremes {
        None => (v, (v, at)),
        Some((lo, (hi, hi_at))) => (lo.min(v), if v > hi { (v, at) } else { (hi, hi_at) }),
    }
}

/// The current window is rewritten every this many checkpoints (seconds): a crash or an
/// emergency exit loses at most that much of it.
const SAVE_EVERY: u64 = 10;

impl Windows {
    fn new(opts: &MonitorOptions, hup: Arc<std::sync::atomic::AtomicBool>) -> Windows {
        Windows {
            path: opts.json.clone().unwrap_or_default(),
            keep: opts.keep,
            hup,
            base: None,
            per_window: (opts.rotate.as_secs_f64().round() as u64).max(1),
            checkpoints: 0,
            began_wall: None,
            extremes: Vec::new(),
            pending: None,
            closed_on_file: true,
            failed: None,
            work: opts.plan.probe.slots().iter().map(|s| s.work.map(|w| WindowWork::new(s.interval_ns, w))).collect(),
            work_base: None,
            hlog: opts.hlog.clone().map(|h| session::observers::HlogWriter::new(h, opts.plan.probe.kind())),
            predict: opts.predict,
        }
    }

    /// A closing window's prediction, from its own seconds only.
    fn predict(&mut self) {
        if let (Some(h), Some(r)) = (self.predict, self.pending.as_mut()) {
            crate::result::predict::attach_last(r, h, (self.checkpoints as i64).saturating_mul(1_000_000_000));
        }
    }

    fn sample(&mut self, slot: usize, at_wall_ns: i64, latency: i64, response: Option<i64>) {
        let began = self.began_wall.map_or(0, |b| b.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64));
        if self.extremes.len() <= slot {
            self.extremes.resize(slot + 1, None);
        }
        let e = &mut self.extremes[slot];
        let at = at_wall_ns - began;
        *e = Some(widen(*e, latency, at));
        if let (Some(r), Some(Some(w))) = (response, self.work.get_mut(slot)) {
            w.response = Some(widen(w.response, r, at));
            w.run = Some(widen(w.run, r - latency, at));
            // A watched thread's period is not known when the run starts: it skips nothing here.
            let skipped = if w.interval_ns > 0 { crate::measure::probe::missed_periods(r, w.interval_ns) } else { 0 };
            w.tracker.record(r > w.spec.deadline_ns, skipped, at);
        }
    }

    /// The window so far from checkpoint `out`; when it is over (its `--rotate` worth of
    /// checkpoints, on the checkpoints' own one-second grid so windows do not drift, or SIGHUP
    /// came) it is written and the next one begins where it ended.
    fn checkpoint(&mut self, out: &Output, base: &ProbeRun) {
        let began_wall = *self.began_wall.get_or_insert(out.start);
        self.checkpoints += 1;
        let hup = self.hup.swap(false, std::sync::atomic::Ordering::Relaxed);
        let closing = hup || self.checkpoints >= self.per_window;
        let mut figures = out.record(base.clone());
        for (i, p) in figures.probes.iter_mut().enumerate() {
            let earlier = self.base.as_ref().and_then(|b| b.get(i));
            let extremes = self.extremes.get(i).copied().flatten();
            p.summary = match earlier {
                Some(e) => p.summary.since(e, extremes),
                None => p.summary.clone(),
            };
            let before = self.work_base.as_ref().and_then(|b| b.get(i).cloned().flatten());
            if let (Some(w), Some(Some(win))) = (p.work.as_mut(), self.work.get(i)) {
                if let Some(e) = before {
                    w.response = w.response.since(&e.response, win.response);
                    w.run = w.run.since(&e.run, win.run);
                }
                w.deadlines = win.tracker.figures();
            }
        }
        let end = SystemTime::now();
        figures.start = Some(began_wall);
        figures.end = Some(end);
        figures.end_reason =
            if closing { crate::result::EndReason::Duration } else { crate::result::EndReason::Checkpoint };
        self.pending = Some(RunResult::build(figures));
        if closing {
            self.predict();
            self.save(true);
            if let Some(h) = self.hlog.as_mut() {
                h.rotate(self.keep);
            }
            self.base = Some(out.threads.iter().map(|t| t.summary.clone()).collect());
            self.work_base = Some(out.threads.iter().map(|t| t.work.clone()).collect());
            for w in self.work.iter_mut().flatten() {
                *w = WindowWork::new(w.interval_ns, w.spec);
            }
            self.began_wall = Some(end);
            self.checkpoints = 0;
            self.extremes.clear();
        } else if self.checkpoints.is_multiple_of(SAVE_EVERY) {
            self.save(false);
        }
    }

    /// Writes the window so far to FILE (rotating first when FILE holds a closed window);
    /// `closes`: this is its last version. A failure is warned about at once and kept.
    fn save(&mut self, closes: bool) {
        let Some(r) = self.pending.as_ref() else { return };
        let written = crate::export::json::Json.serialize(r).and_then(|bytes| {
            if self.closed_on_file {
                crate::export::write_rotated(&self.path, self.keep, &bytes)
            } else {
                crate::export::write_output(&self.path, &bytes)
                    .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
            }
        });
        match written {
            Ok(()) => self.closed_on_file = closes,
            Err(e) => {
                eprintln!("rtlab: warning: --json window: {e}");
                self.failed.get_or_insert(format!("--json window: {e}"));
            }
        }
    }

    /// At the end: the last window, up to the last checkpoint, as a closed one.
    fn finish(&mut self) -> Result<(), Error> {
        if let Some(Err(e)) = self.hlog.take().map(session::observers::HlogWriter::finish) {
            eprintln!("rtlab: warning: --hlog: {e}");
            self.failed.get_or_insert(format!("--hlog: {e}"));
        }
        if self.pending.is_some() && self.checkpoints > 0 {
            if let Some(r) = self.pending.as_mut() {
                r.end_reason = crate::result::EndReason::Duration;
            }
            self.predict();
            self.save(true);
        }
        match self.failed.take() {
            Some(f) => Err(Error::Runtime(f)),
            None => Ok(()),
        }
    }
}

/// The observer that publishes.
struct Monitor {
    /// `--json FILE` windows.
    windows: Option<Windows>,
    board: Board,
    base: ProbeRun,
    window: Duration,
    thresholds_ns: Vec<i64>,
    started: Option<SystemTime>,
    statuses: Vec<ThreadStatus>,
    seconds: Vec<Seconds>,
    /// Per slot: the sample count and when it last grew.
    progress: Vec<(u64, Instant)>,
    /// Sample counts of every slot over the last seconds: `(when, counts)`.
    history: VecDeque<(Instant, Vec<u64>)>,
    interval: Duration,
    process_start: f64,
    /// The probes' exact count bounds (sorted): the plan's cuts.
    cuts: Vec<u64>,
    /// The slots are watched threads (`--watch`): labelled with their name, and not judged
    /// against a schedule (an application's thread may rightly be silent).
    watching: bool,
}

fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Resident memory of this process (bytes), from `/proc/self/status`.
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

impl Monitor {
    fn new(board: Board, base: ProbeRun, opts: &MonitorOptions) -> Monitor {
        let interval = opts.plan.probe.slots().first().map_or(1_000_000, |s| s.interval_ns);
        Monitor {
            windows: None,
            board,
            base,
            window: opts.window,
            thresholds_ns: opts.thresholds_ns.clone(),
            started: None,
            statuses: Vec::new(),
            seconds: Vec::new(),
            progress: Vec::new(),
            history: VecDeque::new(),
            interval: Duration::from_nanos(interval.max(0) as u64),
            process_start: unix_s(SystemTime::now()),
            watching: matches!(opts.plan.probe, crate::probes::ProbeSpec::Watch(_)),
            cuts: {
                let mut c = opts.plan.cuts_ns.clone();
                c.sort_unstable();
                c.dedup();
                c
            },
        }
    }

    fn snapshot(&mut self, out: &Output, result: &RunResult) -> Snapshot {
        let start = self.started.unwrap_or(out.start);
        let bounds = bucket_bounds_ns();
        let now_s = unix_s(SystemTime::now()) as i64;
        let from = now_s - self.window.as_secs().max(1) as i64;
        let probes = out
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let s = &t.summary;
                let le = |b: u64| crate::serve::exposition::samples_at_or_below(s, &self.cuts, b);
                let count = s.cycles;
                let at = |ns: i64| unix_s(start + Duration::from_nanos(ns.max(0) as u64));
                ProbeSeries {
                    cpu: t.plan.cpu.map_or_else(|| "any".to_string(), |c| c.to_string()),
                    thread: t.plan.index,
                    buckets: bounds.iter().map(|b| le(*b)).collect(),
                    count,
                    sum_s: s.sum_ns as f64 / 1e9,
                    missed: s.missed,
                    exceedances: self.thresholds_ns.iter().map(|th| count - le(*th as u64)).collect(),
                    window_max: self
                        .seconds
                        .get_mut(i)
                        .and_then(|w| w.max_since(from))
                        .map(|(l, a)| (l as f64 / 1e9, a as f64 / 1e9)),
                    max: s.max_ns.zip(s.max_at_ns).map(|(m, a)| (m as f64 / 1e9, at(a))),
                    task: t.plan.name.as_ref().map(|n| format!("{n}:{}", t.tid)).filter(|_| self.watching),
                    response: t.work.as_ref().map(|w| {
                        let r = &w.response;
                        ResponseSeries {
                            buckets: bounds
                                .iter()
                                .map(|b| crate::serve::exposition::samples_at_or_below(r, &self.cuts, *b))
                                .collect(),
                            count: r.cycles,
                            sum_s: r.sum_ns as f64 / 1e9,
                            misses: w.deadlines.misses,
                        }
                    }),
                }
            })
            .collect();
        let t0 = self.statuses.first();
        Snapshot {
            version: env!("CARGO_PKG_VERSION").into(),
            start_time_s: self.process_start,
            window_s: self.window.as_secs_f64(),
            thresholds_ns: self.thresholds_ns.iter().map(|t| *t as u64).collect(),
            probes,
            info: ProbeInfo {
                runtime: self.base.runtime.as_ref().map_or_else(|| "os".to_string(), |r| r.kind.clone()),
                method: result.config.as_ref().map_or_else(|| "-".to_string(), |c| c.method.name().to_string()),
                policy: t0.map_or_else(|| "-".to_string(), |s| s.sched.policy.to_string()),
                priority: t0.map_or(0, |s| s.sched.priority),
                interval_s: self.interval.as_secs_f64(),
                degraded: result.config.as_ref().is_some_and(|c| c.degraded),
            },
            doctor: out
                .doctor
                .as_ref()
                .map(|d| d.checks.iter().map(|c| (c.id.clone(), c.status.label().to_string())).collect())
                .unwrap_or_default(),
            attribution: out.causes.iter().map(|(c, n, ns)| (c.clone(), *n, *ns as f64 / 1e9)).collect(),
            cpu_seconds: crate::rt::clock::now(crate::rt::clock::ClockId::PROCESS_CPUTIME) as f64 / 1e9,
            resident_bytes: resident_bytes(),
        }
    }

    /// Why the probes are not alive and on schedule, if they are not: a slot without a new
    /// sample for three periods and two seconds, or one that delivered fewer than half of its
    /// periods as samples over the last five seconds or more.
    fn unhealthy(&mut self, out: &Output) -> Option<String> {
        if self.watching {
            return None;
        }
        let now = Instant::now();
        let patience = self.interval * 3 + Duration::from_secs(2);
        if self.progress.len() != out.threads.len() {
            self.progress = out.threads.iter().map(|t| (t.summary.counts.total(), now)).collect();
        }
        let mut stuck = Vec::new();
        for (t, p) in out.threads.iter().zip(self.progress.iter_mut()) {
            let n = t.summary.counts.total();
            if n > p.0 {
                *p = (n, now);
            } else if now - p.1 > patience {
                stuck.push(format!(
                    "thread {} (CPU {})",
                    t.plan.index,
                    t.plan.cpu.map_or("any".into(), |c| c.to_string())
                ));
            }
        }
        if !stuck.is_empty() {
            return Some(format!("no sample for {:.0} s from {}", patience.as_secs_f64(), stuck.join(", ")));
        }
        // On schedule: over the last 5 s or more, each slot delivered at least half of its periods
        // as samples (a starved or stalling probe misses the rest).
        self.history.push_back((now, out.threads.iter().map(|t| t.summary.counts.total()).collect()));
        while self.history.len() > 2 && now - self.history[1].0 >= Duration::from_secs(5) {
            self.history.pop_front();
        }
        let (then, counts) = self.history.front()?;
        let span = now - *then;
        if span < Duration::from_secs(5) || self.interval.is_zero() {
            return None;
        }
        let expected = span.as_secs_f64() / self.interval.as_secs_f64();
        let behind: Vec<String> = out
            .threads
            .iter()
            .zip(counts)
            .filter_map(|(t, before)| {
                let got = t.summary.counts.total().saturating_sub(*before) as f64;
                (got < expected / 2.0).then(|| {
                    format!(
                        "thread {} (CPU {}) delivered {got:.0} samples in {:.1} s, {expected:.0} periods",
                        t.plan.index,
                        t.plan.cpu.map_or("any".into(), |c| c.to_string()),
                        span.as_secs_f64()
                    )
                })
            })
            .collect();
        (!behind.is_empty()).then(|| format!("off schedule: {}", behind.join("; ")))
    }
}

impl Observer for Monitor {
    fn schedule_start(&mut self, start: SystemTime) {
        // Samples are dated from it, as the RunResult dates its maxima.
        self.started = Some(start);
        if let Some(h) = self.windows.as_mut().and_then(|w| w.hlog.as_mut()) {
            h.schedule_start(start);
        }
    }

    fn started(&mut self, threads: &[ThreadStatus], dma: Option<i32>) {
        self.statuses = threads.to_vec();
        self.seconds = threads.iter().map(|_| Seconds::default()).collect();
        if let Some(h) = self.windows.as_mut().and_then(|w| w.hlog.as_mut()) {
            h.started(threads, dma);
        }
    }

    fn interval(
        &mut self,
        slot: usize,
        stage: Option<&'static str>,
        reading: &crate::measure::series::IntervalReading,
    ) {
        if let Some(h) = self.windows.as_mut().and_then(|w| w.hlog.as_mut()) {
            h.interval(slot, stage, reading);
        }
    }

    fn samples(&mut self, thread: usize, samples: &[Sample]) {
        let start = self.started.get_or_insert_with(SystemTime::now);
        let base = start.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
        let keep = self.window.as_secs() as usize + 2;
        if let Some(w) = self.seconds.get_mut(thread) {
            for s in samples {
                w.add(base + s.at_ns, s.latency_ns);
            }
            w.bound(keep);
        }
        if let Some(win) = self.windows.as_mut() {
            for s in samples {
                win.sample(thread, base + s.at_ns, s.latency_ns, s.response_ns);
            }
        }
    }

    fn checkpoint(&mut self, partial: &Output) {
        if self.started.is_none() {
            self.started = Some(partial.start);
        }
        if let Some(w) = self.windows.as_mut() {
            w.checkpoint(partial, &self.base);
        }
        let result = RunResult::build(partial.record(self.base.clone()));
        let status = crate::export::json::Json.serialize(&result).unwrap_or_default();
        let snapshot = self.snapshot(partial, &result);
        let unhealthy = self.unhealthy(partial);
        self.board.publish(Published::new(snapshot, status, unhealthy));
    }
}
