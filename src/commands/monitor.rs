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
use crate::serve::exposition::{bucket_bounds_ns, ProbeInfo, ProbeSeries, Snapshot};
use crate::serve::http::Server;
use crate::serve::{Board, Published};
use crate::session::{self, Fanout, Observer, Output, Provenance, Signals};
use crate::sysinfo::Environment;
use std::collections::VecDeque;
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
    let provenance = Provenance { command_line, environment: Environment::capture() };
    let mut monitor = Monitor::new(board, session::base_record(&opts.plan, provenance.clone()), opts);
    let mut warnings = WarningPrinter::default();
    let measured =
        session::measure(&opts.plan, provenance, None, &mut Fanout(vec![&mut monitor, &mut warnings]), &signals);
    server.stop();
    let (result, failure) = measured.map_err(|e| Error::Runtime(e.to_string()))?;
    warnings.rest(&result);
    if let Some(f) = failure {
        return Err(Error::Runtime(f));
    }
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

/// The observer that publishes.
struct Monitor {
    board: Board,
    base: ProbeRun,
    window: Duration,
    thresholds_ns: Vec<i64>,
    started: Option<SystemTime>,
    statuses: Vec<ThreadStatus>,
    seconds: Vec<Seconds>,
    /// Per slot: the sample count and when it last grew.
    progress: Vec<(u64, Instant)>,
    interval: Duration,
    process_start: f64,
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
            board,
            base,
            window: opts.window,
            thresholds_ns: opts.thresholds_ns.clone(),
            started: None,
            statuses: Vec::new(),
            seconds: Vec::new(),
            progress: Vec::new(),
            interval: Duration::from_nanos(interval.max(0) as u64),
            process_start: unix_s(SystemTime::now()),
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
                // Samples ≤ b: buckets whose every value is ≤ b (integer ns: hi ≤ b + 1).
                let le = |b: u64| s.counts.nonzero().filter(|(_, hi, _)| *hi <= b + 1).map(|(_, _, c)| c).sum::<u64>();
                let count = s.counts.total();
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
            attribution: Vec::new(),
            cpu_seconds: crate::rt::clock::now(crate::rt::clock::ClockId::PROCESS_CPUTIME) as f64 / 1e9,
            resident_bytes: resident_bytes(),
        }
    }

    /// Why the probes are not alive and on schedule, if they are not: a slot without a new
    /// sample for three periods and two seconds.
    fn unhealthy(&mut self, out: &Output) -> Option<String> {
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
        (!stuck.is_empty()).then(|| format!("no sample for {:.0} s from {}", patience.as_secs_f64(), stuck.join(", ")))
    }
}

impl Observer for Monitor {
    fn started(&mut self, threads: &[ThreadStatus], _dma: Option<i32>) {
        self.statuses = threads.to_vec();
        self.seconds = threads.iter().map(|_| Seconds::default()).collect();
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
    }

    fn checkpoint(&mut self, partial: &Output) {
        if self.started.is_none() {
            self.started = Some(partial.start);
        }
        let result = RunResult::build(partial.record(self.base.clone()));
        let status = crate::export::json::Json.serialize(&result).unwrap_or_default();
        let snapshot = self.snapshot(partial, &result);
        let unhealthy = self.unhealthy(partial);
        self.board.publish(Published {
            snapshot: Arc::new(snapshot),
            status: Arc::new(status),
            at: Instant::now(),
            unhealthy,
        });
    }
}
