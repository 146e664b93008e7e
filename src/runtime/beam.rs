//! The Erlang VM probe: rtlab starts a real `erl`, compiles its probe module (shipped inside
//! rtlab, `rtlab_probe.erl`) in it, and reads the samples the VM streams back on a pipe. The
//! statistics, histogram and RunResult are built here exactly as for OS threads.

use crate::measure::histogram::Layout;
use crate::measure::stats::{Live, Recorder, Summary};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The probe's Erlang source.
pub const PROBE_SOURCE: &str = include_str!("rtlab_probe.erl");

/// How the measuring process waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    /// RealtimeTests: `timer:send_interval`, latency against the ideal schedule anchored at start
    SendInterval,
    /// `erlang:start_timer` with absolute deadlines, latency against the real deadline
    AbsTimer,
    /// A plain `receive … after Period` (relative: drift accumulates)
    ReceiveAfter,
}

impl Method {
    /// The name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Method::SendInterval => "send-interval",
            Method::AbsTimer => "abs-timer",
            Method::ReceiveAfter => "receive-after",
        }
    }
}

/// An Erlang process priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Priority {
    /// low
    Low,
    /// normal
    Normal,
    /// high
    High,
    /// max
    Max,
}

impl Priority {
    /// The Erlang atom.
    pub fn atom(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Max => "max",
        }
    }
}

/// One line from the VM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// `erlang:system_info(system_version)`.
    Version(String),
    /// System architecture.
    Architecture(String),
    /// OTP release, schedulers, online, dirty CPU schedulers, bind type.
    Capabilities {
        /// OTP release (`25`).
        otp: String,
        /// Schedulers.
        schedulers: usize,
        /// Online.
        online: usize,
        /// Dirty CPU schedulers.
        dirty: usize,
        /// Scheduler bind type.
        bind: String,
    },
    /// Priorities read back: the measuring process's, and the workers' (`None`: no worker).
    Priorities {
        /// Measuring process.
        probe: String,
        /// Workers.
        workers: Option<String>,
    },
    /// The probe started (VM monotonic ns).
    Start(i64),
    /// One sample.
    Sample {
        /// Latency (ns).
        latency_ns: i64,
        /// Wake time since the start (ns).
        at_ns: i64,
        /// Periods missed.
        missed: u64,
    },
    /// The end: samples sent and pi terms computed by the workers.
    End {
        /// Samples.
        samples: u64,
        /// Terms.
        terms: u64,
    },
}

/// Parses one line of the probe's protocol; errors quote the line.
pub fn parse_line(line: &str) -> Result<Msg, String> {
    let bad = || format!("unexpected line from the Erlang probe: '{}'", crate::plot::clip(line, 80));
    let (tag, rest) = line.split_once(' ').ok_or_else(bad)?;
    let nums = |n: usize| -> Result<Vec<i64>, String> {
        let v: Vec<i64> = rest.split(' ').map(|x| x.parse::<i64>()).collect::<Result<_, _>>().map_err(|_| bad())?;
        if v.len() == n {
            Ok(v)
        } else {
            Err(bad())
        }
    };
    match tag {
        "V" if !rest.is_empty() => Ok(Msg::Version(rest.to_string())),
        "A" if !rest.is_empty() => Ok(Msg::Architecture(rest.to_string())),
        "C" => {
            let f: Vec<&str> = rest.split(' ').collect();
            let [otp, s, o, d, bind] = f.as_slice() else { return Err(bad()) };
            let n = |x: &str| x.parse::<usize>().map_err(|_| bad());
            Ok(Msg::Capabilities {
                otp: otp.to_string(),
                schedulers: n(s)?,
                online: n(o)?,
                dirty: n(d)?,
                bind: bind.to_string(),
            })
        }
        "P" => {
            let f: Vec<&str> = rest.split(' ').collect();
            let [probe, workers] = f.as_slice() else { return Err(bad()) };
            let known = ["low", "normal", "high", "max"];
            if !known.contains(probe) || !(known.contains(workers) || *workers == "none") {
                return Err(bad());
            }
            Ok(Msg::Priorities { probe: probe.to_string(), workers: (*workers != "none").then(|| workers.to_string()) })
        }
        "T" => Ok(Msg::Start(nums(1)?[0])),
        "S" => {
            let v = nums(3)?;
            if v[2] < 0 {
                return Err(bad());
            }
            Ok(Msg::Sample { latency_ns: v[0], at_ns: v[1], missed: v[2] as u64 })
        }
        "E" => {
            let v = nums(2)?;
            if v.iter().any(|x| *x < 0) {
                return Err(bad());
            }
            Ok(Msg::End { samples: v[0] as u64, terms: v[1] as u64 })
        }
        _ => Err(bad()),
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The `erl` program.
    pub erl: PathBuf,
    /// Waiting method.
    pub method: Method,
    /// Period in ms (BEAM timers are millisecond-granular).
    pub period_ms: u32,
    /// Length of the measurement.
    pub duration: Duration,
    /// CPU-bound worker processes.
    pub workers: usize,
    /// Their priority.
    pub worker_priority: Priority,
    /// The measuring process's priority.
    pub probe_priority: Priority,
    /// Flags for the VM (`+S 2`, `+sbwt none`, …).
    pub vm_args: Vec<String>,
    /// `--max-latency`.
    pub threshold_ns: Option<i64>,
}

/// What the VM said of itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VmInfo {
    /// System version line.
    pub version: Option<String>,
    /// Architecture.
    pub architecture: Option<String>,
    /// OTP release.
    pub otp: Option<String>,
    /// Schedulers.
    pub schedulers: Option<usize>,
    /// Online.
    pub online: Option<usize>,
    /// Bind type.
    pub bind: Option<String>,
    /// Measuring process priority.
    pub probe_priority: Option<String>,
    /// Workers' priority.
    pub worker_priority: Option<String>,
}

/// Folds the protocol into statistics; also checks its order and counts.
#[derive(Debug, Default)]
pub struct Session {
    /// What the VM said of itself.
    pub info: VmInfo,
    started: bool,
    samples: u64,
    /// Samples and pi terms, once the VM said it finished.
    pub end: Option<(u64, u64)>,
    records: Vec<(i64, i64)>,
    keep: bool,
}

impl Session {
    /// A session; `keep` stores `(at, latency)` of every sample (for `--samples`).
    pub fn new(keep: bool) -> Session {
        Session { keep, ..Session::default() }
    }

    /// Handles one line; errors say what is wrong with the stream.
    pub fn feed(&mut self, rec: &mut Recorder, line: &str) -> Result<(), String> {
        let msg = parse_line(line)?;
        if self.end.is_some() {
            return Err(format!("the Erlang probe wrote after its end: '{}'", crate::plot::clip(line, 80)));
        }
        match msg {
            Msg::Version(v) => self.info.version = Some(v),
            Msg::Architecture(a) => self.info.architecture = Some(a),
            Msg::Capabilities { otp, schedulers, online, bind, .. } => {
                self.info.otp = Some(otp);
                self.info.schedulers = Some(schedulers);
                self.info.online = Some(online);
                self.info.bind = Some(bind);
            }
            Msg::Priorities { probe, workers } => {
                self.info.probe_priority = Some(probe);
                self.info.worker_priority = workers;
            }
            Msg::Start(_) => self.started = true,
            Msg::Sample { latency_ns, at_ns, missed } => {
                if !self.started {
                    return Err("the Erlang probe sent a sample before it started".into());
                }
                rec.record(latency_ns, at_ns, missed);
                self.samples += 1;
                if self.keep {
                    self.records.push((at_ns, latency_ns));
                }
            }
            Msg::End { samples, terms } => {
                if samples != self.samples {
                    return Err(format!("the Erlang probe says it sent {samples} samples, {} arrived", self.samples));
                }
                self.end = Some((samples, terms));
            }
        }
        Ok(())
    }

    /// Samples so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// True once the probe started.
    pub fn started(&self) -> bool {
        self.started
    }

    /// Kept `(at, latency)` samples.
    pub fn records(&self) -> &[(i64, i64)] {
        &self.records
    }
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Statistics of the measuring process.
    pub summary: Summary,
    /// What the VM said.
    pub info: VmInfo,
    /// Pi terms computed by the workers (when the VM finished).
    pub terms: Option<u64>,
    /// Wall-clock start of the probe.
    pub start: std::time::SystemTime,
    /// Seconds the probe ran.
    pub elapsed_s: f64,
    /// Ended by a signal (Ctrl-C).
    pub interrupted: bool,
    /// Set when the VM failed mid-run (crashed, was killed, broke the protocol): the results
    /// so far are kept.
    pub failure: Option<String>,
    /// `(at, latency)` samples when asked.
    pub records: Vec<(i64, i64)>,
}

/// The `erl` to run: `--erl PATH`, else `erl` on PATH; the error says how to get one.
pub fn find_erl(given: Option<&Path>) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if let Some(p) = given {
        return if executable(p) {
            Ok(p.to_path_buf())
        } else {
            Err(format!("--erl {}: not an executable file; give the path of erl, e.g. /usr/bin/erl", p.display()))
        };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("erl"))
        .find(|p| executable(p))
        .ok_or_else(|| "erl (the Erlang VM) was not found on PATH; install Debian's erlang-nox (apt-get install erlang-nox) or pass --erl PATH".into())
}

fn eval_expr(source: &Path, plan: &Plan) -> String {
    let src = source.display().to_string().replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "case compile:file(\"{src}\", [binary, return_errors]) of \
           {{ok, M, B}} -> {{module, M}} = code:load_binary(M, \"{src}\", B), \
             rtlab_probe:main('{}', {}, {}, {}, {}, {}); \
           E -> io:format(standard_error, \"rtlab probe did not compile: ~p~n\", [E]), erlang:halt(3) \
         end.",
        plan.method.name(),
        plan.period_ms,
        plan.duration.as_millis(),
        plan.workers,
        plan.worker_priority.atom(),
        plan.probe_priority.atom()
    )
}

/// Runs the VM and the probe; `on_start` is called once the probe has started (to start OS
/// loads). The VM is killed (its whole process group) on `stop`, on a protocol error, when it
/// stops answering, and if rtlab dies.
pub fn run(plan: &Plan, stop: &AtomicBool, keep: bool, mut on_start: impl FnMut()) -> Result<Outcome, String> {
    // An unpredictable directory of its own (0700): nothing planted in /tmp is written through.
    let cleanup = tempfile::Builder::new()
        .prefix("rtlab-beam-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let dir = cleanup.path().to_path_buf();
    let source = dir.join("rtlab_probe.erl");
    std::fs::write(&source, PROBE_SOURCE).map_err(|e| format!("cannot write {}: {e}", source.display()))?;
    let mut cmd = Command::new(&plan.erl);
    cmd.args(&plan.vm_args)
        .args(["-noshell", "-noinput", "-eval", &eval_expr(&source, plan)])
        .env("ERL_CRASH_DUMP_SECONDS", "0")
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = crate::rt::process::spawn(&mut cmd, &Default::default())
        .map_err(|e| format!("cannot start {}: {e}", plan.erl.display()))?;
    let pgid = child.id();
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel::<std::io::Result<String>>();
    std::thread::spawn(move || {
        for line in std::io::BufReader::with_capacity(1 << 16, stdout).lines() {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let err_text = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.by_ref().take(64 << 10).read_to_string(&mut s);
        s
    });
    let mut session = Session::new(keep);
    let live = Live::new(Layout::DEFAULT);
    let summary: Summary;
    let failure;
    let mut interrupted = false;
    let launched = Instant::now();
    let mut started_at: Option<(Instant, std::time::SystemTime)> = None;
    {
        let mut rec = Recorder::new(&live, plan.threshold_ns);
        loop {
            if stop.load(Relaxed) {
                interrupted = true;
                failure = None;
                break;
            }
            let limit = match started_at {
                None => Duration::from_secs(60),
                Some(_) => plan.duration + Duration::from_secs(15),
            };
            let since = started_at.map_or(launched, |s| s.0);
            if since.elapsed() > limit {
                failure = Some(format!(
                    "the Erlang VM stopped answering ({} s without finishing); it was killed",
                    limit.as_secs()
                ));
                break;
            }
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(Ok(line)) => {
                    let was_started = session.started();
                    if let Err(e) = session.feed(&mut rec, &line) {
                        failure = Some(e);
                        break;
                    }
                    if !was_started && session.started() {
                        started_at = Some((Instant::now(), std::time::SystemTime::now()));
                        on_start();
                    }
                    if session.end.is_some() {
                        failure = None;
                        break;
                    }
                }
                Ok(Err(e)) => {
                    failure = Some(format!("cannot read from the Erlang VM: {e}"));
                    break;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    failure = Some(String::new());
                    break;
                }
            }
        }
        summary = rec.finish();
    }
    let finished = session.end.is_some();
    if !finished {
        let _ = crate::rt::process::kill_group(pgid, crate::rt::signals::SIGKILL);
    }
    let status = child.wait().ok();
    let stderr_text = err_text.join().unwrap_or_default();
    let failure = match failure {
        Some(msg) => {
            let last = stderr_text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
            let how = status.map_or("an unknown status".into(), describe_status);
            let what = if msg.is_empty() { format!("the Erlang VM exited ({how})") } else { msg };
            Some(format!(
                "{what} after {} samples{}",
                session.samples(),
                if last.is_empty() { String::new() } else { format!("; it said: {}", crate::plot::clip(&last, 200)) }
            ))
        }
        None => None,
    };
    drop(cleanup);
    let (t0, wall) = started_at.unwrap_or((launched, std::time::SystemTime::now()));
    Ok(Outcome {
        summary,
        info: session.info.clone(),
        terms: session.end.map(|e| e.1),
        start: wall,
        elapsed_s: t0.elapsed().as_secs_f64().min(plan.duration.as_secs_f64() + 1.0),
        interrupted,
        failure,
        records: std::mem::take(&mut session.records),
    })
}

fn describe_status(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown status".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_record_of_the_protocol_parses() {
        assert_eq!(
            parse_line("V Erlang/OTP 25 [erts-13.1.5]").unwrap(),
            Msg::Version("Erlang/OTP 25 [erts-13.1.5]".into())
        );
        assert_eq!(parse_line("A x86_64-pc-linux-gnu").unwrap(), Msg::Architecture("x86_64-pc-linux-gnu".into()));
        assert_eq!(
            parse_line("C 25 2 1 2 unbound").unwrap(),
            Msg::Capabilities { otp: "25".into(), schedulers: 2, online: 1, dirty: 2, bind: "unbound".into() }
        );
        assert_eq!(parse_line("P high none").unwrap(), Msg::Priorities { probe: "high".into(), workers: None });
        assert_eq!(parse_line("T -576460751488563008").unwrap(), Msg::Start(-576460751488563008));
        assert_eq!(parse_line("S -5 1000 2").unwrap(), Msg::Sample { latency_ns: -5, at_ns: 1000, missed: 2 });
        assert_eq!(parse_line("E 10 20000").unwrap(), Msg::End { samples: 10, terms: 20000 });
    }

    #[test]
    fn malformed_lines_are_refused_with_the_line_quoted() {
        for bad in [
            "",
            "S",
            "S 1 2",
            "S 1 2 3 4",
            "S a 2 3",
            "S 1 2 -1",
            "E 1",
            "E -1 2",
            "P low",
            "P urgent low",
            "C 25 x 1 1 u",
            "X 1",
            "V",
            "T 1 2",
        ] {
            let e = parse_line(bad).unwrap_err();
            assert!(e.contains("unexpected line"), "{bad}: {e}");
        }
    }

    fn feed(lines: &[&str]) -> Result<(Session, Summary), String> {
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        let mut s = Session::new(true);
        for l in lines {
            s.feed(&mut rec, l)?;
        }
        let sum = rec.finish();
        Ok((s, sum))
    }

    #[test]
    fn a_stream_folds_into_exact_statistics_and_its_order_is_checked() {
        let (s, sum) = feed(&[
            "V v",
            "A a",
            "C 25 2 2 2 unbound",
            "P normal low",
            "T 0",
            "S 1000 1000 0",
            "S 3000 2000 1",
            "E 2 7",
        ])
        .unwrap();
        assert_eq!((sum.cycles, sum.min_ns, sum.max_ns, sum.missed, sum.sum_ns), (2, Some(1000), Some(3000), 1, 4000));
        assert_eq!(s.end, Some((2, 7)));
        assert_eq!(s.info.worker_priority.as_deref(), Some("low"));
        assert_eq!(s.records(), &[(1000, 1000), (2000, 3000)]);
        assert!(feed(&["S 1 1 0"]).unwrap_err().contains("before it started"));
        assert!(feed(&["T 0", "S 1 1 0", "E 2 0"]).unwrap_err().contains("says it sent 2 samples, 1 arrived"));
        assert!(feed(&["T 0", "E 0 0", "S 1 1 0"]).unwrap_err().contains("after its end"));
    }

    proptest::proptest! {
        #[test]
        fn no_line_makes_the_parser_panic(line in ".{0,60}") {
            let _ = parse_line(&line);
        }
    }
}
