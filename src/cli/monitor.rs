//! `rtlab monitor`: `rtlab run`'s probe options plus where to listen, the sliding window and
//! the exceedance thresholds.

use super::parse;
use super::run::RunArgs;
use super::UsageError;
use crate::commands::monitor::MonitorOptions;
use crate::commands::run::RunOptions;
use clap::Args;
use std::net::SocketAddr;

/// The default port of `rtlab monitor`.
pub const DEFAULT_PORT: u16 = 9737;

/// Run the probes continuously and serve their latency to Prometheus: GET /metrics
/// (histogram per CPU, samples, missed periods, exceedances, maxima, probe and doctor info),
/// /healthz and /status (the current RunResult). Listens on 127.0.0.1 unless told otherwise.
#[derive(Args, Debug, Clone)]
#[command(
    next_help_heading = "Serving",
    before_help = "Examples:\n  rtlab monitor\n  rtlab monitor -a 2,3 -p 90 --listen 127.0.0.1:9737 --thresholds 50us,100us,1ms\n  rtlab monitor --watch 4711 --json fleet.json --rotate 1h",
    after_help = "Defaults: one probe per online CPU at 1 ms, SCHED_FIFO 95 (as rtlab run), 127.0.0.1:9737, a 60 s window for the *_window_max gauges. SIGINT/SIGTERM stop it cleanly. Expose it beyond this host only through a reverse proxy with TLS and authentication (docs/guide/monitor.md)."
)]
pub struct MonitorArgs {
    /// Address and port to serve on (a non-loopback address exposes the metrics to the network)
    #[arg(long = "listen", value_name = "ADDR:PORT", default_value = "127.0.0.1:9737")]
    pub listen: SocketAddr,
    /// Sliding window of the rtlab_wakeup_latency_window_max_seconds gauges
    #[arg(long = "window", value_name = "TIME", default_value = "60s", value_parser = parse::duration)]
    pub window: std::time::Duration,
    /// Thresholds of rtlab_latency_exceedances_total (comma-separated; plain numbers are µs)
    #[arg(long = "thresholds", value_name = "TIMES", default_value = "100us,1ms", value_delimiter = ',', value_parser = parse::latency)]
    pub thresholds: Vec<i64>,
    /// With --json FILE: write the RunResult of each window of this length to FILE (the
    /// previous ones become FILE.1, FILE.2, …); SIGHUP ends the window at once
    #[arg(long = "rotate", value_name = "TIME", default_value = "1h", value_parser = parse::duration)]
    pub rotate: std::time::Duration,
    /// With --json FILE: how many earlier windows to keep (FILE.1 … FILE.N)
    #[arg(long = "keep", value_name = "N", default_value = "24", value_parser = clap::value_parser!(u16).range(0..=10000))]
    pub keep: u16,
    /// Serve a running program's threads instead of probes: PID (every thread of the process)
    /// or a thread name (those named so, as they appear), from the kernel's events (rtlab watch)
    #[arg(long = "watch", value_name = "PID|COMM")]
    pub watch: Option<String>,
    /// The probe's options (`rtlab run --help`)
    #[command(flatten)]
    pub run: RunArgs,
}

/// `rtlab watch`'s arguments for `--watch PID|COMM`, with the run options that apply to a
/// watch (length, verdict thresholds, where rtlab's own threads run).
fn watch_args(target: &str, run: &RunArgs) -> Result<super::watch::WatchArgs, UsageError> {
    let (pid, comm) = match target.parse::<i32>() {
        Ok(pid) => (Some(pid), None),
        Err(_) => (None, Some(target.to_string())),
    };
    Ok(super::watch::WatchArgs {
        pid,
        tids: Vec::new(),
        comm,
        duration: run.duration,
        period: None,
        max_latency: run.max_latency,
        deadlines: run.deadlines.clone(),
        max_threads: None,
        main_affinity: run.main_affinity.clone(),
        quiet: true,
        nsecs: false,
        json: None,
        samples: None,
        hlog: run.hlog.clone(),
        explain: run.explain,
        explain_worst: run.explain_worst,
        stall: None,
        backend: None,
        events: None,
        command: Vec::new(),
    })
}

impl MonitorOptions {
    /// Validates the options: the probe's as `rtlab run` does, then what a service may not do.
    pub fn from_cli(a: MonitorArgs) -> Result<MonitorOptions, UsageError> {
        for (given, flag, why) in [
            (a.run.loops.is_some(), "-l", "a monitor runs until stopped (or -D)"),
            (a.run.samples.is_some(), "--samples", "a samples file would grow without bound; use rtlab run --samples"),
            (
                a.run.json.as_ref().is_some_and(|j| j.as_os_str() == "-"),
                "--json -",
                "the current result is served at /status; give a file",
            ),
            (
                a.run.breaktrace.is_some(),
                "-b",
                "a monitor does not stop at a spike; alert on rtlab_latency_exceedances_total",
            ),
        ] {
            if given {
                return Err(UsageError(format!("{flag} does not apply to rtlab monitor: {why}")));
            }
        }
        if a.window < std::time::Duration::from_secs(1) {
            return Err(UsageError("--window must be at least 1s; e.g. --window 60s".into()));
        }
        let mut thresholds = a.thresholds.clone();
        thresholds.sort_unstable();
        thresholds.dedup();
        if thresholds.len() > 16 {
            return Err(UsageError("--thresholds: at most 16 (each is a series per CPU)".into()));
        }
        if a.rotate < std::time::Duration::from_secs(1) {
            return Err(UsageError("--rotate must be at least 1s; e.g. --rotate 1h".into()));
        }
        let json = a.run.json.clone();
        let predict = a.run.predict;
        if predict.is_some() && json.is_none() {
            return Err(UsageError(
                "--predict on rtlab monitor goes in each window's RunResult; add --json FILE (and --rotate TIME)"
                    .into(),
            ));
        }
        let mut run = a.run;
        run.quiet = true;
        run.no_checkpoint = true;
        let RunOptions { mut plan, .. } = match &a.watch {
            Some(target) => RunOptions::from_watch(watch_args(target, &run)?)?,
            None => RunOptions::from_cli(run)?,
        };
        // The monitor reads the probes' published figures once a second and sees every sample
        // (for the window maxima); neither touches the measuring loop.
        plan.checkpoint = Some(std::time::Duration::from_secs(1));
        plan.sample_ring = Some(crate::session::SAMPLE_RING);
        // Every `le` bound and threshold is counted exactly by the probes (≤ b, > t).
        plan.cuts_ns = crate::serve::exposition::bucket_bounds_ns();
        plan.cuts_ns.extend(thresholds.iter().map(|t| *t as u64));
        // With windows the log rotates with them, written by the monitor; else the run writes it.
        let hlog = if json.is_some() { plan.hlog.take() } else { None };
        Ok(MonitorOptions {
            hlog,
            plan,
            listen: a.listen,
            window: a.window,
            thresholds_ns: thresholds,
            json,
            rotate: a.rotate,
            keep: usize::from(a.keep),
            predict,
        })
    }
}
