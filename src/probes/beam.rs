//! The Erlang VM probe: rtlab starts a real `erl`, compiles its probe module (shipped inside
//! rtlab, `rtlab_probe.erl`) in it, and reads the samples the VM streams back on a pipe. The
//! statistics, histogram and RunResult are built here exactly as for OS threads.

use super::{Finished, Probe, ProbeError, Sinks, Started, ThreadOutcome, ThreadPlan, ThreadStatus};
use crate::load::LoadResult;
use crate::measure::probe::LoopOutcome;
use crate::measure::stats::{ExceedLog, Recorder, Summary};
use crate::result::warning::Warning;
use crate::result::{EndReason, Runtime};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{mpsc, Arc};
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
    /// Runs only when no normal, high or max process is ready
    Low,
    /// Every process's default
    Normal,
    /// Runs before every normal and low process
    High,
    /// Meant for the VM's own processes: runs before all others
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
    /// The measuring process's pid (`<0.85.0>`).
    Identity(String),
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
    let bad = || format!("unexpected line from the Erlang probe: '{}'", crate::units::clip(line, 80));
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
        "I" if rest.starts_with('<') && rest.ends_with('>') && !rest.contains(' ') => {
            Ok(Msg::Identity(rest.to_string()))
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
    /// The `erl` program (`None`: erl on PATH, found when the probe starts).
    pub erl: Option<PathBuf>,
    /// Waiting method.
    pub method: Method,
    /// Period in ms (BEAM timers are millisecond-granular).
    pub period_ms: u32,
    /// Length of the measurement (the VM ends itself after it).
    pub duration: Duration,
    /// CPU-bound worker processes.
    pub workers: usize,
    /// Their priority.
    pub worker_priority: Priority,
    /// The measuring process's priority.
    pub probe_priority: Priority,
    /// Flags for the VM (`+S 2`, `+sbwt none`, …).
    pub vm_args: Vec<String>,
}

impl Plan {
    /// What runs, in a line.
    pub fn describe(&self) -> String {
        format!(
            "Erlang VM probe: {} every {} ms for {:.1} s, {} at priority {}, probe at {}",
            self.method.name(),
            self.period_ms,
            self.duration.as_secs_f64(),
            crate::units::count(self.workers as u64, "worker"),
            self.worker_priority.atom(),
            self.probe_priority.atom()
        )
    }

    fn runtime(&self, info: &VmInfo) -> Runtime {
        Runtime {
            kind: "beam".into(),
            method: self.method.name().into(),
            period_ns: self.period_ms as i64 * 1_000_000,
            timer_granularity_ns: 1_000_000,
            version: info.version.clone(),
            architecture: info.architecture.clone(),
            schedulers: info.schedulers,
            schedulers_online: info.online,
            scheduler_bind_type: info.bind.clone(),
            vm_args: self.vm_args.clone(),
            probe_priority: info.probe_priority.clone(),
            workers: self.workers,
            worker_priority: info.worker_priority.clone(),
            ..Runtime::default()
        }
    }
}

/// How long the VM may take to start its probe.
const START_LIMIT: Duration = Duration::from_secs(60);
/// How long after its duration the VM may take to finish before it is killed.
const END_GRACE: Duration = Duration::from_secs(15);

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
    /// The measuring process's pid.
    pub probe_pid: Option<String>,
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
            return Err(format!("the Erlang probe wrote after its end: '{}'", crate::units::clip(line, 80)));
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
            Msg::Identity(pid) => self.info.probe_pid = Some(pid),
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

/// What the reader of the VM's stream ends with.
struct Fed {
    session: Session,
    summary: Summary,
    /// `Some("")`: the stream ended before the probe did; `Some(why)`: it was broken.
    failure: Option<String>,
}

/// The Erlang VM probe in the pipeline: rtlab starts `erl`, a reader thread folds the VM's
/// stream into the slot's statistics (and samples ring) as it arrives. The VM is killed (its
/// whole process group) on a stop, on a protocol error, when it stops answering, and if rtlab dies.
pub struct BeamProbe {
    plan: Plan,
    child: Option<std::process::Child>,
    pgid: u32,
    reader: Option<std::thread::JoinHandle<Fed>>,
    stderr: Option<std::thread::JoinHandle<String>>,
    dir: Option<tempfile::TempDir>,
    started: Option<Instant>,
    interrupted: bool,
    hung: Option<String>,
}

impl BeamProbe {
    /// A probe for `plan`, not started.
    pub fn new(plan: Plan) -> BeamProbe {
        BeamProbe {
            plan,
            child: None,
            pgid: 0,
            reader: None,
            stderr: None,
            dir: None,
            started: None,
            interrupted: false,
            hung: None,
        }
    }

    fn kill(&self) {
        if self.pgid != 0 {
            let _ = crate::rt::process::kill_group(self.pgid, crate::rt::signals::SIGKILL);
        }
    }
}

/// `; it said: …` with the last line the VM wrote on stderr, if any.
fn last_words(stderr: &str) -> String {
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if last.is_empty() {
        String::new()
    } else {
        format!("; it said: {}", crate::units::clip(last, 200))
    }
}

impl BeamProbe {
    /// Waits for the VM's probe to start and returns when it did (monotonic, wall clock) and
    /// what the VM said of itself. A VM that dies, breaks the protocol or hangs before its
    /// probe starts is a failed run like one that does so later: the result says so, with the
    /// nothing that arrived.
    fn await_start(&mut self, rx: &mpsc::Receiver<Begun>, interrupt: &std::sync::atomic::AtomicBool) -> Begun {
        let deadline = Instant::now() + START_LIMIT;
        let now = || (Instant::now(), std::time::SystemTime::now(), VmInfo::default());
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(v) => return v,
                Err(mpsc::RecvTimeoutError::Disconnected) => return now(),
                Err(mpsc::RecvTimeoutError::Timeout) if interrupt.load(Relaxed) => {
                    // Ctrl-C while the VM starts: nothing was measured; the run ends at once.
                    self.interrupted = true;
                    self.kill();
                    return now();
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                    self.hung = Some(format!(
                        "the Erlang VM did not start its probe within {} s; it was killed",
                        START_LIMIT.as_secs()
                    ));
                    self.kill();
                    return now();
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    }
}

/// When the VM's probe started (monotonic, wall clock) and what the VM said of itself.
type Begun = (Instant, std::time::SystemTime, VmInfo);

/// Reads the VM's lines into the recorder until its end line, telling `begun` once its probe
/// started; a broken line or a read error kills the VM's group and is the run's failure.
fn read_vm(
    stdout: std::process::ChildStdout,
    live: &crate::measure::stats::Live,
    ring: Option<&crate::measure::ring::SampleRing>,
    threshold: Option<i64>,
    pgid: u32,
    begun: &mpsc::Sender<Begun>,
) -> Fed {
    let mut session = Session::new(false);
    let mut rec = Recorder::with_logs(live, ExceedLog::new(threshold, 1), ExceedLog::off(), ring);
    let mut failure = Some(String::new());
    for line in std::io::BufReader::with_capacity(1 << 16, stdout).lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                failure = Some(format!("cannot read from the Erlang VM: {e}"));
                break;
            }
        };
        let was_started = session.started();
        if let Err(e) = session.feed(&mut rec, &line) {
            failure = Some(e);
            let _ = crate::rt::process::kill_group(pgid, crate::rt::signals::SIGKILL);
            break;
        }
        if !was_started && session.started() {
            let _ = begun.send((Instant::now(), std::time::SystemTime::now(), session.info.clone()));
        }
        if session.end.is_some() {
            failure = None;
            break;
        }
    }
    let summary = rec.finish();
    Fed { session, summary, failure }
}

impl Probe for BeamProbe {
    fn slots(&self) -> usize {
        1
    }

    fn start(&mut self, sinks: &Sinks) -> Result<Started, ProbeError> {
        let plan = &self.plan;
        // An unpredictable directory of its own (0700): nothing planted in /tmp is written through.
        let dir = tempfile::Builder::new()
            .prefix("rtlab-beam-")
            .tempdir()
            .map_err(|e| ProbeError::Start(format!("cannot create a temporary directory: {e}")))?;
        let source = dir.path().join("rtlab_probe.erl");
        std::fs::write(&source, PROBE_SOURCE)
            .map_err(|e| ProbeError::Start(format!("cannot write {}: {e}", source.display())))?;
        let erl = find_erl(plan.erl.as_deref()).map_err(ProbeError::Start)?;
        let mut cmd = Command::new(&erl);
        cmd.args(&plan.vm_args)
            .args(["-noshell", "-noinput", "-eval", &eval_expr(&source, plan)])
            .env("ERL_CRASH_DUMP_SECONDS", "0")
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = crate::rt::process::spawn(&mut cmd, &Default::default())
            .map_err(|e| ProbeError::Start(format!("cannot start {}: {e}", erl.display())))?;
        self.dir = Some(dir);
        self.pgid = child.id();
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        self.child = Some(child);
        self.stderr = Some(std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.by_ref().take(64 << 10).read_to_string(&mut s);
            s
        }));
        let (tx, rx) = mpsc::channel::<Begun>();
        let (live, ring, threshold, pgid) =
            (Arc::clone(&sinks.lives[0]), sinks.rings[0].clone(), sinks.max_latency_ns, self.pgid);
        self.reader = Some(std::thread::spawn(move || read_vm(stdout, &live, ring.as_deref(), threshold, pgid, &tx)));
        let (at, wall, info) = self.await_start(&rx, &sinks.interrupt);
        self.started = Some(at);
        Ok(Started {
            slots: vec![ThreadStatus {
                index: 0,
                cpu: None,
                sched: crate::rt::sched::SchedParams::simple(crate::rt::sched::Policy::Other, 0),
                interval_ns: self.plan.period_ms as i64 * 1_000_000,
                tid: self.pgid as i32,
                identity: Some(format!("erlang process {}", info.probe_pid.as_deref().unwrap_or("(pid not reported)"))),
            }],
            warnings: Vec::new(),
            dma_latency_us: None,
            mlocked: false,
            start: wall,
            schedule_start: at,
            own_duration: true,
            runtime: Some(self.plan.runtime(&info)),
            stages: Vec::new(),
        })
    }

    fn finished(&mut self) -> bool {
        if self.reader.as_ref().is_none_or(|h| h.is_finished()) {
            return true;
        }
        let limit = self.plan.duration + END_GRACE;
        if self.hung.is_none() && self.started.is_some_and(|s| s.elapsed() > limit) {
            self.hung = Some(format!(
                "the Erlang VM stopped answering ({} s without finishing); it was killed",
                limit.as_secs()
            ));
            self.kill();
        }
        false
    }

    fn stop(&mut self) {
        if self.reader.as_ref().is_some_and(|h| !h.is_finished()) {
            self.interrupted = true;
            self.kill();
        }
    }

    fn join(mut self: Box<Self>) -> Finished {
        let fed = self.reader.take().and_then(|h| h.join().ok());
        if fed.as_ref().is_none_or(|f| f.session.end.is_none()) {
            self.kill();
        }
        let status = self.child.as_mut().and_then(|c| c.wait().ok());
        let said = self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
        drop(self.dir.take());
        let plan = &self.plan;
        let Some(fed) = fed else {
            let why = "the reader of the Erlang VM's stream panicked".to_string();
            return Finished {
                failure: Some(why.clone()),
                warnings: vec![Warning::RuntimeFailed { why }],
                ..Finished::default()
            };
        };
        let failure = match (self.hung.take(), fed.failure, self.interrupted) {
            (Some(h), _, _) => Some(h),
            (None, _, true) => None,
            (None, Some(msg), false) => {
                let how = status.map_or("an unknown status".into(), describe_status);
                let what = if msg.is_empty() { format!("the Erlang VM exited ({how})") } else { msg };
                Some(format!(
                    "{what} after {}{}",
                    crate::units::count(fed.session.samples(), "sample"),
                    last_words(&said)
                ))
            }
            (None, None, false) => None,
        };
        let mut fin = Finished {
            runtime: Some(plan.runtime(&fed.session.info)),
            warnings: vec![Warning::TimerGranularity { runtime: "The Erlang VM".into(), granularity_ns: 1_000_000 }],
            end_reason: Some(if self.interrupted { EndReason::Signal } else { EndReason::Duration }),
            ..Finished::default()
        };
        if plan.workers > 0 {
            let terms = fed.session.end.map(|e| e.1);
            let elapsed =
                self.started.map_or(0.0, |s| s.elapsed().as_secs_f64().min(plan.duration.as_secs_f64() + 1.0));
            let mut l = LoadResult::in_runtime(
                format!("beam-pi:workers={},priority={}", plan.workers, plan.worker_priority.atom()),
                "beam-pi",
                plan.workers,
                format!("erlang:{}", plan.worker_priority.atom()),
                terms.unwrap_or(0),
                elapsed,
            );
            if terms.is_none() {
                l.warnings.push("the VM did not finish: the workers' count is unknown".into());
            }
            fin.loads.push(l);
        }
        if let (Method::SendInterval, Some(min_ns)) = (plan.method, fed.summary.min_ns) {
            fin.warnings.push(Warning::AnchoredSchedule { min_ns });
        }
        if let Some(f) = &failure {
            fin.warnings.push(Warning::RuntimeFailed { why: f.clone() });
        }
        fin.failure = failure;
        fin.slots.push(ThreadOutcome {
            watch: None,
            plan: ThreadPlan::runtime_slot(plan.period_ms as i64 * 1_000_000),
            sched: None,
            cpus_allowed: None,
            last_cpu: None,
            timer_slack_ns: None,
            outcome: LoopOutcome { iterations: fed.summary.cycles, drift_ns: 0, break_hit: None, start_ns: 0 },
            drift_ns: None,
            summary: fed.summary,
            tid: self.pgid as i32,
            samples_lost: 0,
            warnings: Vec::new(),
            noise: None,
            work: None,
        });
        fin
    }
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
    use crate::measure::histogram::Layout;
    use crate::measure::stats::Live;

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
