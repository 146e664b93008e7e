//! The Erlang VM probe: rtlab starts a real `erl`, compiles its probe module (shipped inside
//! rtlab, `rtlab_probe.erl`) in it, and reads the samples the VM streams back on a pipe. The
//! statistics, histogram and RunResult are built here exactly as for OS threads.

use super::child::{Child, Hosted};
use super::{Finished, Probe, ProbeError, Sinks, Started, ThreadOutcome};
use crate::load::LoadResult;
use crate::measure::stats::Recorder;
use crate::result::warning::Warning;
use crate::result::Runtime;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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
    super::child::find_program(
        "erl",
        given,
        "--erl",
        "install Debian's erlang-nox (apt-get install erlang-nox) or pass --erl PATH",
    )
    .map_err(|e| {
        if given.is_none() {
            e.replacen("erl was not found", "erl (the Erlang VM) was not found", 1)
        } else {
            e
        }
    })
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

/// The Erlang VM probe in the pipeline: rtlab starts `erl`, whose stream a reader thread
/// folds into the slot's statistics (and samples ring) as it arrives ([`super::child`]).
pub struct BeamProbe {
    plan: Plan,
    host: Hosted<Session>,
}

impl BeamProbe {
    /// A probe for `plan`, not started.
    pub fn new(plan: Plan) -> BeamProbe {
        BeamProbe { plan, host: Hosted::default() }
    }
}

impl super::child::Stream for Session {
    type Info = VmInfo;
    fn feed(&mut self, rec: &mut Recorder, line: &str) -> Result<(), String> {
        Session::feed(self, rec, line)
    }
    fn started(&self) -> bool {
        self.started
    }
    fn ended(&self) -> bool {
        self.end.is_some()
    }
    fn samples(&self) -> u64 {
        self.samples
    }
    fn info(&self) -> VmInfo {
        self.info.clone()
    }
}

impl Probe for BeamProbe {
    fn slots(&self) -> usize {
        1
    }

    fn start(&mut self, sinks: &Sinks) -> Result<Started, ProbeError> {
        let plan = &self.plan;
        let dir = self.host.make_dir("rtlab-beam-")?.to_path_buf();
        let source = dir.join("rtlab_probe.erl");
        std::fs::write(&source, PROBE_SOURCE)
            .map_err(|e| ProbeError::Start(format!("cannot write {}: {e}", source.display())))?;
        let erl = find_erl(plan.erl.as_deref()).map_err(ProbeError::Start)?;
        let mut cmd = Command::new(&erl);
        cmd.args(&plan.vm_args)
            .args(["-noshell", "-noinput", "-eval", &eval_expr(&source, plan)])
            .env("ERL_CRASH_DUMP_SECONDS", "0")
            .current_dir(&dir);
        let (child, (at, wall, info)) =
            Child::start("the Erlang VM", &mut cmd, Session::new(false), sinks, START_LIMIT)?;
        let identity = format!("erlang process {}", info.probe_pid.as_deref().unwrap_or("(pid not reported)"));
        let started =
            child.started((at, wall), self.plan.period_ms as i64 * 1_000_000, identity, self.plan.runtime(&info));
        self.host.hold(child);
        Ok(started)
    }

    fn finished(&mut self) -> bool {
        let limit = self.plan.duration + END_GRACE;
        self.host.finished(limit)
    }

    fn stop(&mut self) {
        self.host.stop();
    }

    fn join(mut self: Box<Self>) -> Finished {
        let Some((pid, mut joined)) = self.host.join() else { return Finished::default() };
        let plan = &self.plan;
        let fed = match joined.take_fed() {
            Ok(fed) => fed,
            Err(failed) => return *failed,
        };
        let mut fin = Finished {
            runtime: Some(plan.runtime(&fed.session.info)),
            warnings: vec![Warning::TimerGranularity { runtime: "The Erlang VM".into(), granularity_ns: 1_000_000 }],
            end_reason: Some(joined.end_reason()),
            ..Finished::default()
        };
        if plan.workers > 0 {
            let terms = fed.session.end.map(|e| e.1);
            let elapsed =
                joined.started.map_or(0.0, |s| s.elapsed().as_secs_f64().min(plan.duration.as_secs_f64() + 1.0));
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
        if let Some(f) = &joined.failure {
            fin.warnings.push(Warning::RuntimeFailed { why: f.clone() });
        }
        fin.failure = joined.failure;
        fin.slots.push(ThreadOutcome::of_runtime(plan.period_ms as i64 * 1_000_000, fed.summary, pid, None));
        fin
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

    fn feed(lines: &[&str]) -> Result<(Session, crate::measure::stats::Summary), String> {
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
