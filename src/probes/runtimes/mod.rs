//! Probes inside real runtimes: a small program in the runtime's own language (Ada with GNAT,
//! Go, Node.js, Python asyncio), shipped inside rtlab, built or run with the toolchain found on
//! PATH in a private directory, waits for a period in the runtime's own ways and streams each
//! wakeup's lateness back on a pipe ([`super::child`]). Every program speaks one protocol:
//!
//! ```text
//! V <version>                      the runtime
//! R <key>=<value> ...              what the runtime says of itself (any number, before E)
//! T <start_ns>                     the schedule's start
//! S <latency_ns> <at_ns> <missed>  one wakeup
//! E <samples> <work_units>         the end: samples sent, units of work its workers did
//! ```

use super::child::{Child, Hosted, Stream};
use super::{Finished, Probe, ProbeError, Sinks, Started, ThreadOutcome};
use crate::load::LoadResult;
use crate::measure::stats::Recorder;
use crate::result::warning::Warning;
use crate::result::Runtime;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

const ADA_SPEC: &str = include_str!("rtlab_report.ads");
const ADA_BODY: &str = include_str!("rtlab_report.adb");
const ADA_MAIN: &str = include_str!("rtlab_probe.adb");
const ADA_TASKS: &str = include_str!("rtlab_probe_tasks.adb");
const GO_SOURCE: &str = include_str!("rtlab_probe.go");
const NODE_SOURCE: &str = include_str!("rtlab_probe.js");
const PYTHON_SOURCE: &str = include_str!("rtlab_probe.py");

/// A runtime rtlab measures through a program of its own language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// Ada, built with GNAT's gnatmake.
    Ada,
    /// Go, built with `go build`.
    Go,
    /// JavaScript on Node.js.
    Node,
    /// Python's asyncio.
    Python,
}

impl Lang {
    /// The name `--runtime` and results use.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Ada => "ada",
            Lang::Go => "go",
            Lang::Node => "node",
            Lang::Python => "python",
        }
    }

    /// The waiting methods, the default first.
    pub fn methods(self) -> &'static [&'static str] {
        match self {
            Lang::Ada => &["delay-until", "delay", "task-delay-until"],
            Lang::Go => &["sleep-until", "ticker", "timer-reset"],
            Lang::Node => &["timeout-until", "interval"],
            Lang::Python => &["sleep", "call-at"],
        }
    }

    /// The kinds of CPU-bound workers, the default first.
    pub fn worker_kinds(self) -> &'static [&'static str] {
        match self {
            Lang::Ada => &["tasks"],
            Lang::Go => &["goroutines"],
            Lang::Node => &["loop", "threads"],
            Lang::Python => &["coroutines", "threads"],
        }
    }

    /// The program on PATH that builds or runs the probe, and the Debian package that has it.
    pub fn tool(self) -> (&'static str, &'static str) {
        match self {
            Lang::Ada => ("gnatmake", "gnat"),
            Lang::Go => ("go", "golang-go"),
            Lang::Node => ("node", "nodejs"),
            Lang::Python => ("python3", "python3"),
        }
    }

    /// The runtime in messages.
    pub fn what(self) -> &'static str {
        match self {
            Lang::Ada => "the Ada program",
            Lang::Go => "the Go program",
            Lang::Node => "the Node.js program",
            Lang::Python => "the Python program",
        }
    }

    /// The option that chooses the tool (`--gnatmake PATH`).
    pub fn tool_flag(self) -> String {
        format!("--{}", self.tool().0)
    }

    /// The granularity of the runtime's timers (ns): Node's count milliseconds, asyncio's
    /// selector and Go 1.19's netpoller wait with epoll's millisecond timeouts, Ada without
    /// tasking reads Ada.Calendar's microseconds; GNAT's tasking timers take nanoseconds.
    fn granularity_ns(self, facts: &BTreeMap<String, String>) -> i64 {
        match self {
            Lang::Node | Lang::Python | Lang::Go => 1_000_000,
            Lang::Ada => facts.get("clock_resolution_ns").and_then(|v| v.parse().ok()).unwrap_or(1),
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The runtime.
    pub lang: Lang,
    /// The tool (checked to be an executable; `None`: found on PATH when the probe starts).
    pub tool: Option<PathBuf>,
    /// One of [`Lang::methods`].
    pub method: &'static str,
    /// Period (ns).
    pub period_ns: i64,
    /// Length of the measurement (the program ends itself after it).
    pub duration: Duration,
    /// CPU-bound workers inside the runtime.
    pub workers: usize,
    /// One of [`Lang::worker_kinds`].
    pub worker_kind: &'static str,
    /// Go: GOMAXPROCS (0: the runtime's default).
    pub gomaxprocs: u32,
    /// Go: the measuring goroutine locked to its OS thread.
    pub lock_os_thread: bool,
    /// Ada: the measuring task's priority (0: the default; else under FIFO_Within_Priorities).
    pub ada_priority: u32,
}

/// How long a program may take to be built and start its probe.
const START_LIMIT: Duration = Duration::from_secs(120);
/// How long after its duration a program may take to finish before it is killed.
const END_GRACE: Duration = Duration::from_secs(15);

impl Plan {
    /// What runs, in a line.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} probe: {} every {} for {:.1} s, {}",
            self.lang.name(),
            self.method,
            crate::units::duration(self.period_ns),
            self.duration.as_secs_f64(),
            crate::units::count(self.workers as u64, "worker")
        );
        if self.workers > 0 {
            s += &format!(" ({})", self.worker_kind);
        }
        s
    }

    /// True when the Ada program needs GNAT's tasking runtime (a task, workers, a priority).
    fn ada_tasking(&self) -> bool {
        self.method == "task-delay-until" || self.workers > 0 || self.ada_priority > 0
    }

    /// The result's `runtime` section from what the program said of itself.
    pub fn runtime(&self, info: &RtInfo) -> Runtime {
        let fact = |k: &str| info.facts.get(k).cloned();
        Runtime {
            kind: self.lang.name().into(),
            method: self.method.into(),
            period_ns: self.period_ns,
            timer_granularity_ns: self.lang.granularity_ns(&info.facts),
            version: info.version.clone(),
            architecture: fact("arch"),
            schedulers: fact("gomaxprocs").and_then(|v| v.parse().ok()),
            workers: self.workers,
            worker_kind: (self.workers > 0).then(|| self.worker_kind.to_string()),
            facts: info.facts.clone(),
            ..Runtime::default()
        }
    }

    /// The program's arguments after its path: METHOD PERIOD_NS DURATION_NS WORKERS, then the
    /// runtime's own.
    fn args(&self) -> Vec<String> {
        let mut a = vec![
            self.method.to_string(),
            self.period_ns.to_string(),
            self.duration.as_nanos().to_string(),
            self.workers.to_string(),
        ];
        match self.lang {
            Lang::Ada => {
                a.push(self.ada_priority.to_string());
                a.push(if self.ada_priority > 0 { "fifo_within_priorities" } else { "default" }.into());
            }
            Lang::Go => {
                a.push(self.gomaxprocs.to_string());
                a.push(u8::from(self.lock_os_thread).to_string());
            }
            Lang::Node | Lang::Python => a.push(self.worker_kind.to_string()),
        }
        a
    }

    /// Writes the program into `dir`, builds it when its language is compiled, and returns
    /// the command that runs it.
    fn prepare(&self, dir: &Path, interrupt: &AtomicBool) -> Result<Command, ProbeError> {
        let tool = find_tool(self.lang, self.tool.as_deref()).map_err(ProbeError::Start)?;
        let write = |name: &str, text: &str| {
            std::fs::write(dir.join(name), text)
                .map_err(|e| ProbeError::Start(format!("cannot write {}: {e}", dir.join(name).display())))
        };
        let mut cmd = match self.lang {
            Lang::Ada => {
                for (name, text) in [
                    ("rtlab_report.ads", ADA_SPEC),
                    ("rtlab_report.adb", ADA_BODY),
                    ("rtlab_probe.adb", ADA_MAIN),
                    ("rtlab_probe_tasks.adb", ADA_TASKS),
                ] {
                    write(name, text)?;
                }
                if self.ada_priority > 0 {
                    write("gnat.adc", "pragma Task_Dispatching_Policy (FIFO_Within_Priorities);\n")?;
                }
                let main = if self.ada_tasking() { "rtlab_probe_tasks" } else { "rtlab_probe" };
                let mut b = Command::new(&tool);
                b.args(["-q", "-O2", "-gnat2022", &format!("{main}.adb")]);
                build(self.lang, &mut b, dir, interrupt)?;
                Command::new(dir.join(main))
            }
            Lang::Go => {
                write("rtlab_probe.go", GO_SOURCE)?;
                let mut b = Command::new(&tool);
                b.args(["build", "-o", "rtlab_probe", "rtlab_probe.go"])
                    .env("GOCACHE", dir.join("go-cache"))
                    .env("GOPATH", dir.join("go-path"))
                    .env("GO111MODULE", "off")
                    .env("GOFLAGS", "");
                build(self.lang, &mut b, dir, interrupt)?;
                Command::new(dir.join("rtlab_probe"))
            }
            Lang::Node => {
                write("rtlab_probe.js", NODE_SOURCE)?;
                let mut c = Command::new(&tool);
                c.arg(dir.join("rtlab_probe.js"));
                c
            }
            Lang::Python => {
                write("rtlab_probe.py", PYTHON_SOURCE)?;
                let mut c = Command::new(&tool);
                // Isolated: no user site, no PYTHON* variables, not the current directory.
                c.args(["-I", "-u"]).arg(dir.join("rtlab_probe.py"));
                c
            }
        };
        cmd.args(self.args()).current_dir(dir);
        Ok(cmd)
    }
}

/// The longest a probe's build may take before measuring starts (measured here: go build 1 s
/// with a cold cache, gnatmake 2 s: fifteen times the slowest).
pub const BUILD_LIMIT: Duration = Duration::from_secs(30);

/// The compiler's last words kept (its output beyond is read and dropped).
const BUILD_WORDS: usize = 64 << 10;

/// Runs a build in `dir`, in a process group of its own, for at most [`BUILD_LIMIT`] and not past
/// a stop (Ctrl-C): what it started is ended with it either way. Its failure is a start error
/// with the compiler's last words.
fn build(lang: Lang, cmd: &mut Command, dir: &Path, interrupt: &AtomicBool) -> Result<(), ProbeError> {
    use std::io::Read;
    cmd.current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let _ = crate::rt::process::become_subreaper();
    let before = crate::rt::process::children();
    let mut child = crate::rt::process::spawn(cmd, &Default::default())
        .map_err(|e| ProbeError::Start(format!("cannot run {}: {e}", lang.tool().0)))?;
    let mut stderr = child.stderr.take().expect("piped");
    let words = std::thread::spawn(move || {
        let (mut kept, mut buf) = (Vec::new(), [0u8; 8192]);
        while let Ok(n @ 1..) = stderr.read(&mut buf) {
            kept.extend_from_slice(&buf[..n]);
            if kept.len() > 2 * BUILD_WORDS {
                kept.drain(..kept.len() - BUILD_WORDS);
            }
        }
        kept
    });
    let began = Instant::now();
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if interrupt.load(Relaxed) => break Err("stopped (Ctrl-C)".to_string()),
            Ok(None) if began.elapsed() > BUILD_LIMIT => {
                break Err(format!("did not finish within {} s", BUILD_LIMIT.as_secs()))
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(e.to_string()),
        }
    };
    let _ = crate::rt::process::kill_group(child.id(), crate::rt::signals::SIGKILL);
    let _ = child.wait();
    crate::rt::process::end_children_except(&before);
    let said = words.join().unwrap_or_default();
    let said = String::from_utf8_lossy(&said);
    let last = said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("(nothing on stderr)");
    let how = match ended {
        Ok(s) if s.success() => return Ok(()),
        Ok(s) => super::child::describe_status(s),
        Err(why) => why,
    };
    Err(ProbeError::Start(format!(
        "{} did not build ({how}): {}",
        lang.what(),
        crate::units::printable(&crate::units::clip(last.trim(), 200))
    )))
}

/// The tool that builds or runs `lang`'s probe: `given` (`--gnatmake PATH`, …), else the
/// tool on PATH; the error names the Debian package that has it.
pub fn find_tool(lang: Lang, given: Option<&Path>) -> Result<PathBuf, String> {
    let (name, package) = lang.tool();
    super::child::find_program(
        name,
        given,
        &lang.tool_flag(),
        &format!("install Debian's {package} (apt-get install {package}) or pass {} PATH", lang.tool_flag()),
    )
}

/// What the program said of itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RtInfo {
    /// Its V line.
    pub version: Option<String>,
    /// Its R facts.
    pub facts: BTreeMap<String, String>,
}

/// Most facts a program may state (each key and value at most 64 bytes): a stream is bounded.
const MAX_FACTS: usize = 64;

/// Folds the protocol into statistics; checks its order and counts.
#[derive(Debug)]
pub struct Session {
    what: &'static str,
    /// What the program said of itself.
    pub info: RtInfo,
    started: bool,
    samples: u64,
    /// Samples and work units, once the program said it finished.
    pub end: Option<(u64, u64)>,
}

impl Session {
    /// A session for the program `what` names.
    pub fn new(what: &'static str) -> Session {
        Session { what, info: RtInfo::default(), started: false, samples: 0, end: None }
    }

    fn facts(&mut self, rest: &str, bad: &dyn Fn() -> String) -> Result<(), String> {
        for pair in rest.split(' ').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(bad)?;
            let ok = |s: &str| !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_graphic());
            if !ok(k) || !ok(v) || (self.info.facts.len() >= MAX_FACTS && !self.info.facts.contains_key(k)) {
                return Err(bad());
            }
            self.info.facts.insert(k.to_string(), v.to_string());
        }
        Ok(())
    }
}

impl Stream for Session {
    type Info = RtInfo;

    fn feed(&mut self, rec: &mut Recorder, line: &str) -> Result<(), String> {
        let what = self.what;
        let bad = || format!("unexpected line from {what}: '{}'", crate::units::clip(line, 80));
        if self.end.is_some() {
            return Err(format!("{} wrote after its end: '{}'", self.what, crate::units::clip(line, 80)));
        }
        let (tag, rest) = line.split_once(' ').ok_or_else(bad)?;
        let nums = |n: usize| -> Result<Vec<i64>, String> {
            let v: Vec<i64> = rest.split(' ').map(str::parse).collect::<Result<_, _>>().map_err(|_| bad())?;
            if v.len() == n {
                Ok(v)
            } else {
                Err(bad())
            }
        };
        match tag {
            "V" if !rest.trim().is_empty() && rest.len() <= 200 => {
                self.info.version = Some(crate::units::printable(rest.trim()).to_string())
            }
            "R" => self.facts(rest, &bad)?,
            "T" if !self.started => {
                nums(1)?;
                self.started = true;
            }
            "S" => {
                let v = nums(3)?;
                if v[2] < 0 {
                    return Err(bad());
                }
                if !self.started {
                    return Err(format!("{} sent a sample before it started", self.what));
                }
                rec.record(v[0], v[1], v[2] as u64);
                self.samples += 1;
            }
            "E" => {
                let v = nums(2)?;
                if v.iter().any(|x| *x < 0) {
                    return Err(bad());
                }
                if v[0] as u64 != self.samples {
                    return Err(format!("{} says it sent {} samples, {} arrived", self.what, v[0], self.samples));
                }
                self.end = Some((v[0] as u64, v[1] as u64));
            }
            _ => return Err(bad()),
        }
        Ok(())
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

    fn info(&self) -> RtInfo {
        self.info.clone()
    }
}

/// A runtime's probe in the pipeline.
pub struct RuntimeProbe {
    plan: Plan,
    host: Hosted<Session>,
}

impl RuntimeProbe {
    /// A probe for `plan`, not started.
    pub fn new(plan: Plan) -> RuntimeProbe {
        RuntimeProbe { plan, host: Hosted::default() }
    }

    fn identity(&self) -> String {
        match self.plan.lang {
            Lang::Ada if self.plan.method == "task-delay-until" => "ada task".into(),
            Lang::Ada => "ada environment task".into(),
            Lang::Go => "go goroutine".into(),
            Lang::Node => "node event loop".into(),
            Lang::Python => "python asyncio task".into(),
        }
    }

    /// The workers as a load that ran inside the runtime (`None` without workers).
    fn workers_load(&self, units: Option<u64>, elapsed_s: f64) -> Option<LoadResult> {
        let p = &self.plan;
        (p.workers > 0).then(|| {
            let kind = format!("{}-{}", p.lang.name(), p.worker_kind);
            let mut l = LoadResult::in_runtime(
                format!("{kind}:workers={}", p.workers),
                &kind,
                p.workers,
                format!("{}:{}", p.lang.name(), p.worker_kind),
                units.unwrap_or(0),
                elapsed_s,
            );
            if units.is_none() {
                l.warnings.push(format!("{} did not finish: the workers' count is unknown", p.lang.what()));
            }
            l
        })
    }
}

impl Probe for RuntimeProbe {
    fn slots(&self) -> usize {
        1
    }

    fn start(&mut self, sinks: &Sinks) -> Result<Started, ProbeError> {
        let dir = self.host.make_dir(&format!("rtlab-{}-", self.plan.lang.name()))?;
        let mut cmd = self.plan.prepare(dir, &sinks.interrupt)?;
        let session = Session::new(self.plan.lang.what());
        let (child, (at, wall, info)) = Child::start(self.plan.lang.what(), &mut cmd, session, sinks, START_LIMIT)?;
        let started = child.started((at, wall), self.plan.period_ns, self.identity(), self.plan.runtime(&info));
        self.host.hold(child);
        Ok(started)
    }

    fn finished(&mut self) -> bool {
        let limit = self.plan.duration * 2 + END_GRACE;
        self.host.finished(limit)
    }

    fn stop(&mut self) {
        self.host.stop();
    }

    fn join(mut self: Box<Self>) -> Finished {
        let Some((pid, mut joined)) = self.host.join() else { return Finished::default() };
        let fed = match joined.take_fed() {
            Ok(fed) => fed,
            Err(failed) => return *failed,
        };
        let plan = &self.plan;
        let runtime = plan.runtime(&fed.session.info);
        let mut fin = Finished { end_reason: Some(joined.end_reason()), ..Finished::default() };
        if runtime.timer_granularity_ns >= 1000 {
            let name = format!("{} ({})", plan.lang.name(), plan.method);
            fin.warnings
                .push(Warning::TimerGranularity { runtime: name, granularity_ns: runtime.timer_granularity_ns });
        }
        let elapsed = joined.started.map_or(0.0, |s| s.elapsed().as_secs_f64());
        fin.loads.extend(self.workers_load(fed.session.end.map(|e| e.1), elapsed));
        if let Some(f) = &joined.failure {
            fin.warnings.push(Warning::RuntimeFailed { why: f.clone() });
        }
        let drift = fed.session.info.facts.get("drift_ns").and_then(|v| v.parse().ok());
        fin.failure = joined.failure;
        fin.runtime = Some(runtime);
        fin.slots.push(ThreadOutcome::of_runtime(plan.period_ns, fed.summary, pid, drift));
        fin
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::Layout;
    use crate::measure::stats::Live;

    fn feed(lines: &[&str]) -> Result<(Session, crate::measure::stats::Summary), String> {
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        let mut s = Session::new("the Go program");
        for l in lines {
            s.feed(&mut rec, l)?;
        }
        let sum = rec.finish();
        Ok((s, sum))
    }

    #[test]
    fn a_runtimes_stream_folds_into_exact_statistics_and_its_facts() {
        let (s, sum) = feed(&[
            "V go1.19.8",
            "R arch=amd64 gomaxprocs=2",
            "T 5",
            "S 1000 1000 0",
            "S 3000 2000 2",
            "R drift_ns=7",
            "E 2 99",
        ])
        .unwrap();
        assert_eq!((sum.cycles, sum.min_ns, sum.max_ns, sum.missed, sum.sum_ns), (2, Some(1000), Some(3000), 2, 4000));
        assert_eq!(s.end, Some((2, 99)));
        assert_eq!(s.info.version.as_deref(), Some("go1.19.8"));
        assert_eq!(s.info.facts.get("gomaxprocs").map(String::as_str), Some("2"));
        assert_eq!(s.info.facts.get("drift_ns").map(String::as_str), Some("7"));
    }

    #[test]
    fn a_garbled_or_unordered_stream_is_refused_with_the_line_quoted() {
        for (lines, says) in [
            (&["S 1 1 0"][..], "before it started"),
            (&["T 0", "S 1 1 0", "E 2 0"][..], "says it sent 2 samples, 1 arrived"),
            (&["T 0", "E 0 0", "S 1 1 0"][..], "after its end"),
            (&["T 0", "S 1 x 0"][..], "unexpected line from the Go program: 'S 1 x 0'"),
            (&["T 0", "S 1 1 -1"][..], "unexpected line"),
            (&["R novalue"][..], "unexpected line"),
            (&["garbage"][..], "unexpected line"),
            (&["T 0", "T 0"][..], "unexpected line"),
        ] {
            let e = feed(lines).unwrap_err();
            assert!(e.contains(says), "{lines:?}: {e}");
        }
        let many: Vec<String> = (0..=MAX_FACTS).map(|i| format!("R k{i}=v")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(feed(&many).unwrap_err().contains("unexpected line"), "facts are bounded");
    }

    #[test]
    fn each_language_asks_for_the_debian_package_that_has_its_tool() {
        let e = find_tool(Lang::Ada, Some(Path::new("/nonexistent/gnatmake"))).unwrap_err();
        assert!(e.contains("--gnatmake /nonexistent/gnatmake"), "{e}");
        for (lang, package) in
            [(Lang::Ada, "gnat"), (Lang::Go, "golang-go"), (Lang::Node, "nodejs"), (Lang::Python, "python3")]
        {
            assert_eq!(lang.tool().1, package);
        }
    }
}
