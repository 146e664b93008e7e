//! A probe that is another program (the Erlang VM, a Go, Ada, Node.js or Python program):
//! rtlab starts it in a process group of its own (killed with rtlab), and a reader thread folds
//! the lines it streams on a pipe into the slot's statistics as they arrive. Its stderr is kept
//! (64 KiB) for its last words. It is killed — its whole group — on a stop, on a protocol error,
//! when it does not start its probe in time, and when it stops answering.

use super::{Finished, ProbeError, Sinks, Started, ThreadStatus};
use crate::measure::stats::{ExceedLog, Recorder, Summary};
use crate::result::warning::Warning;
use crate::result::Runtime;
use crate::rt::sched::{Policy, SchedParams};
use std::io::{BufRead, Read};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime};

/// A protocol spoken on the child's stdout, folded line by line.
pub trait Stream: Send + 'static {
    /// What the child says of itself, sent to the probe once its schedule started.
    type Info: Clone + Default + Send + 'static;
    /// Handles one line; errors say what is wrong with the stream.
    fn feed(&mut self, rec: &mut Recorder, line: &str) -> Result<(), String>;
    /// True once the child's schedule started.
    fn started(&self) -> bool;
    /// True once the child said it ended.
    fn ended(&self) -> bool;
    /// Samples so far.
    fn samples(&self) -> u64;
    /// What the child said of itself so far.
    fn info(&self) -> Self::Info;
}

/// What the reader ends with.
pub struct Fed<S> {
    /// The protocol's state at the end.
    pub session: S,
    /// The slot's statistics.
    pub summary: Summary,
    /// `Some("")`: the stream ended before the child's end line; `Some(why)`: it was broken.
    pub failure: Option<String>,
}

/// When the child's schedule started (monotonic, wall clock) and what it said of itself.
pub type Begun<I> = (Instant, SystemTime, I);

/// A started child and its reader.
pub struct Child<S: Stream> {
    what: &'static str,
    child: std::process::Child,
    pgid: u32,
    reader: Option<std::thread::JoinHandle<Fed<S>>>,
    stderr: Option<std::thread::JoinHandle<String>>,
    started: Option<Instant>,
    interrupted: bool,
    hung: Option<String>,
    /// rtlab's children before this one started: any other found at the end is something it
    /// left behind, ended with it.
    before: Vec<u32>,
}

/// How a child's run ended, once joined.
pub struct Joined<S> {
    /// What the reader folded (`None`: the reader panicked).
    pub fed: Option<Fed<S>>,
    /// Why the run failed, with the child's last words (`None`: it did not).
    pub failure: Option<String>,
    /// The run was stopped (Ctrl-C, a stop condition) before the child ended.
    pub interrupted: bool,
    /// When the schedule started.
    pub started: Option<Instant>,
}

impl<S: Stream> Child<S> {
    /// Starts `cmd` (stdout and stderr piped, in its own process group, SIGKILLed if rtlab
    /// dies), folds its stream with `session` into slot 0 of `sinks`, and waits up to
    /// `start_limit` for its schedule to start. `what` names it in messages ("the Erlang VM").
    pub fn start(
        what: &'static str,
        cmd: &mut Command,
        session: S,
        sinks: &Sinks,
        start_limit: Duration,
    ) -> Result<(Child<S>, Begun<S::Info>), ProbeError> {
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        // What the program starts and leaves (a daemon of its own session holding its pipes)
        // becomes rtlab's to end.
        let _ = crate::rt::process::become_subreaper();
        let before = crate::rt::process::children();
        let mut child = crate::rt::process::spawn(cmd, &Default::default()).map_err(|e| {
            ProbeError::Start(format!("cannot start {what} ({}): {e}", cmd.get_program().to_string_lossy()))
        })?;
        let pgid = child.id();
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.by_ref().take(64 << 10).read_to_string(&mut s);
            s
        });
        let (tx, rx) = mpsc::channel::<Begun<S::Info>>();
        let (live, ring, threshold) = (Arc::clone(&sinks.lives[0]), sinks.rings[0].clone(), sinks.max_latency_ns);
        let reader = std::thread::spawn(move || {
            let rec = Recorder::with_logs(&live, ExceedLog::new(threshold, 1), ExceedLog::off(), ring.as_deref());
            read_stream(what, session, rec, stdout, pgid, &tx)
        });
        let mut c = Child {
            what,
            child,
            pgid,
            reader: Some(reader),
            stderr: Some(stderr),
            started: None,
            interrupted: false,
            hung: None,
            before,
        };
        let begun = c.await_start(&rx, &sinks.interrupt, start_limit);
        c.started = Some(begun.0);
        Ok((c, begun))
    }

    /// The child's process id (its group's id).
    pub fn pid(&self) -> u32 {
        self.pgid
    }

    /// The start of the one slot this child hosts, begun at `at` (monotonic, wall clock): a
    /// task of period `interval_ns` named `identity`, scheduled by its runtime on SCHED_OTHER
    /// threads, in a program that ends itself at its duration; `runtime` is what the runtime
    /// said of itself.
    pub fn started(&self, at: (Instant, SystemTime), interval_ns: i64, identity: String, runtime: Runtime) -> Started {
        Started {
            slots: vec![ThreadStatus {
                index: 0,
                cpu: None,
                sched: SchedParams::simple(Policy::Other, 0),
                interval_ns,
                tid: self.pgid as i32,
                identity: Some(identity),
            }],
            warnings: Vec::new(),
            dma_latency_us: None,
            mlocked: false,
            start: at.1,
            schedule_start: at.0,
            own_duration: true,
            runtime: Some(runtime),
            stages: Vec::new(),
        }
    }

    fn kill(&self) {
        let _ = crate::rt::process::kill_group(self.pgid, crate::rt::signals::SIGKILL);
    }

    /// Waits for the child's schedule to start. A child that dies, breaks the protocol or
    /// hangs before it starts is a failed run like one that does so later: the result says
    /// so, with the nothing that arrived.
    fn await_start(
        &mut self,
        rx: &mpsc::Receiver<Begun<S::Info>>,
        interrupt: &AtomicBool,
        limit: Duration,
    ) -> Begun<S::Info> {
        let deadline = Instant::now() + limit;
        let now = || (Instant::now(), SystemTime::now(), S::Info::default());
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(v) => return v,
                Err(mpsc::RecvTimeoutError::Disconnected) => return now(),
                Err(mpsc::RecvTimeoutError::Timeout) if interrupt.load(Relaxed) => {
                    // Ctrl-C while the child starts: nothing was measured; the run ends at once.
                    self.interrupted = true;
                    self.kill();
                    return now();
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                    self.hung = Some(format!(
                        "{} did not start its probe within {} s; it was killed",
                        self.what,
                        limit.as_secs()
                    ));
                    self.kill();
                    return now();
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// True once the reader ended; a child still running `limit` after its start is killed.
    pub fn finished(&mut self, limit: Duration) -> bool {
        if self.reader.as_ref().is_none_or(|h| h.is_finished()) {
            return true;
        }
        if self.hung.is_none() && self.started.is_some_and(|s| s.elapsed() > limit) {
            self.hung = Some(format!(
                "{} stopped answering ({} s without finishing); it was killed",
                self.what,
                limit.as_secs()
            ));
            self.kill();
        }
        false
    }

    /// Waits for the stream to end. Once the program itself has exited, its stream has a second
    /// more; then whatever it left holding the pipe (a daemon in a session of its own, out of
    /// its process group) is killed, so the stream ends and rtlab never waits for it for ever.
    fn await_stream(&mut self) {
        let mut exited: Option<Instant> = None;
        while self.reader.as_ref().is_some_and(|h| !h.is_finished()) {
            if exited.is_none() && matches!(self.child.try_wait(), Ok(Some(_))) {
                exited = Some(Instant::now());
            }
            if exited.is_some_and(|t| t.elapsed() > Duration::from_secs(1)) {
                self.kill();
                crate::rt::process::end_children_except(&self.before);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ends the child now (its samples so far are kept).
    pub fn stop(&mut self) {
        if self.reader.as_ref().is_some_and(|h| !h.is_finished()) {
            self.interrupted = true;
            self.kill();
        }
    }

    /// Waits for the reader and the child (killing it unless it ended on its own) and says
    /// how the run ended.
    pub fn join(mut self) -> Joined<S> {
        self.await_stream();
        let fed = self.reader.take().and_then(|h| h.join().ok());
        if fed.as_ref().is_none_or(|f| !f.session.ended()) {
            self.kill();
        }
        let status = self.child.wait().ok();
        crate::rt::process::end_children_except(&self.before);
        let said = self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
        let failure = match (&fed, self.hung.take(), self.interrupted) {
            (None, _, _) => Some(format!("the reader of {}'s stream panicked", self.what)),
            (_, Some(h), _) => Some(h),
            (_, None, true) => None,
            (Some(f), None, false) => f.failure.as_ref().map(|msg| {
                let how = status.map_or("an unknown status".into(), describe_status);
                let what = if msg.is_empty() { format!("{} exited ({how})", self.what) } else { msg.clone() };
                format!("{what} after {}{}", crate::units::count(f.session.samples(), "sample"), last_words(&said))
            }),
        };
        Joined { fed, failure, interrupted: self.interrupted, started: self.started }
    }
}

/// A child-program probe's own things: its private directory (0700, removed once the child
/// is joined) and, once started, the child.
pub struct Hosted<S: Stream> {
    dir: Option<tempfile::TempDir>,
    child: Option<Child<S>>,
}

impl<S: Stream> Default for Hosted<S> {
    fn default() -> Self {
        Hosted { dir: None, child: None }
    }
}

impl<S: Stream> Hosted<S> {
    /// Creates the private directory, an unpredictable name starting with `prefix`: nothing
    /// planted in /tmp is built, run or written through.
    pub fn make_dir(&mut self, prefix: &str) -> Result<&std::path::Path, ProbeError> {
        // The pid in the name: a dead rtlab's directory is told apart and removed at the next
        // start (rt::fs::remove_stale_private_dirs).
        let dir = tempfile::Builder::new()
            .prefix(&format!("{prefix}{}-", std::process::id()))
            .tempdir()
            .map_err(|e| ProbeError::Start(format!("cannot create a temporary directory: {e}")))?;
        Ok(self.dir.insert(dir).path())
    }

    /// Keeps the started child.
    pub fn hold(&mut self, child: Child<S>) {
        self.child = Some(child);
    }

    /// True once the child's reader ended (or it never started); see [`Child::finished`].
    pub fn finished(&mut self, limit: Duration) -> bool {
        self.child.as_mut().is_none_or(|c| c.finished(limit))
    }

    /// Ends the child now, if it runs.
    pub fn stop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            c.stop();
        }
    }

    /// Joins the child, then removes the directory: its process id and how it ended (`None`:
    /// it never started).
    pub fn join(&mut self) -> Option<(u32, Joined<S>)> {
        let child = self.child.take()?;
        let pid = child.pid();
        let joined = child.join();
        drop(self.dir.take());
        Some((pid, joined))
    }
}

impl<S> Joined<S> {
    /// Why a child that fed its stream ended: stopped by the run, or at its own duration.
    pub fn end_reason(&self) -> crate::result::EndReason {
        if self.interrupted {
            crate::result::EndReason::Signal
        } else {
            crate::result::EndReason::Duration
        }
    }

    /// What the child fed; when its reader left nothing, the probe's end instead: the run
    /// failed, and its warning says why.
    pub fn take_fed(&mut self) -> Result<Fed<S>, Box<Finished>> {
        self.fed.take().ok_or_else(|| {
            let why = self.failure.take().unwrap_or_default();
            Box::new(Finished {
                failure: Some(why.clone()),
                warnings: vec![Warning::RuntimeFailed { why }],
                ..Finished::default()
            })
        })
    }
}

/// Reads the child's lines into `rec` until its end line, telling `begun` once its schedule
/// started; a broken line or a read error kills the child's group and is the run's failure.
fn read_stream<S: Stream>(
    what: &str,
    mut session: S,
    mut rec: Recorder<'_>,
    stdout: std::process::ChildStdout,
    pgid: u32,
    begun: &mpsc::Sender<Begun<S::Info>>,
) -> Fed<S> {
    let mut failure = Some(String::new());
    // A line longer than this is no line of any probe: the stream is broken, not buffered.
    const MAX_LINE: u64 = 4096;
    let mut input = std::io::BufReader::with_capacity(1 << 16, stdout);
    let mut line = String::new();
    loop {
        line.clear();
        match input.by_ref().take(MAX_LINE).read_line(&mut line) {
            Ok(0) => break,
            Ok(_) if !line.ends_with('\n') && line.len() as u64 >= MAX_LINE => {
                failure = Some(format!("{what} wrote a line longer than {MAX_LINE} bytes"));
                let _ = crate::rt::process::kill_group(pgid, crate::rt::signals::SIGKILL);
                break;
            }
            Ok(_) => {}
            Err(e) => {
                failure = Some(format!("cannot read from {what}: {e}"));
                break;
            }
        }
        let was_started = session.started();
        if let Err(e) = session.feed(&mut rec, line.trim_end_matches('\n')) {
            failure = Some(e);
            let _ = crate::rt::process::kill_group(pgid, crate::rt::signals::SIGKILL);
            break;
        }
        if !was_started && session.started() {
            let _ = begun.send((Instant::now(), SystemTime::now(), session.info()));
        }
        if session.ended() {
            failure = None;
            break;
        }
    }
    let summary = rec.finish();
    Fed { session, summary, failure }
}

/// `; it said: …` with the last line the child wrote on stderr, if any.
fn last_words(stderr: &str) -> String {
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if last.is_empty() {
        String::new()
    } else {
        format!("; it said: {}", crate::units::clip(last, 200))
    }
}

/// The program `name` to run: `given` (it must be an executable file), else `name` on PATH.
/// The errors say how to get one: `flag` is the option that chooses it, `get` the fix when
/// PATH has none (`install Debian's … or pass --erl PATH`).
pub fn find_program(
    name: &str,
    given: Option<&std::path::Path>,
    flag: &str,
    get: &str,
) -> Result<std::path::PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let executable =
        |p: &std::path::Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if let Some(p) = given {
        return if executable(p) {
            Ok(p.to_path_buf())
        } else {
            Err(format!(
                "{flag} {}: not an executable file; give the path of {name}, e.g. /usr/bin/{name}",
                p.display()
            ))
        };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| executable(p))
        .ok_or_else(|| format!("{name} was not found on PATH; {get}"))
}

/// An exit status in words (`exit code 3`, `killed by signal 9`).
pub fn describe_status(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "unknown status".into(),
    }
}
