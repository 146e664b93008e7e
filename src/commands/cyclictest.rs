//! `rtlab cyclictest`: cyclictest's behaviour and outputs on rtlab's engine.

use crate::error::Error;
use crate::export::cyclictest_json::{CyclictestJson, Version};
use crate::export::cyclictest_text::{break_footer, unit, CyclictestHistogram, CyclictestSpikes, Layout};
use crate::export::{json::Json, write_output, Exporter};
use crate::output::cyclictest::{CyclictestView, ViewMode};
use crate::result::RunResult;
use crate::rt::affinity::{self, CpuSet};
use crate::rt::clock;
use crate::rt::cpuidle::IdleLimit;
use crate::rt::msr::SmiCounter;
use crate::session::{self, Provenance, Signals};
use crate::sysinfo::Environment;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// A validated `rtlab cyclictest`: the session's plan and cyclictest's outputs.
#[derive(Debug, Clone)]
pub struct CyclictestOptions {
    /// What the session runs.
    pub plan: session::Plan,
    /// What to show and write.
    pub args: Outputs,
    /// Histogram size in µs (`-h`/`-H`), if any.
    pub histogram_us: Option<i64>,
    /// `-H`: summary column.
    pub histofall: bool,
    /// The policy cyclictest's header names (`fifo`, `other`, …).
    pub policy: crate::rt::sched::Policy,
    /// Messages cyclictest prints to stderr while parsing (e.g. defaulting a priority).
    pub notices: Vec<String>,
}

/// Which cyclictest's output layout to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compat {
    /// rt-tests 2.10 (current).
    V2_10,
    /// rt-tests 2.4.
    V2_4,
}

/// cyclictest's display and file options, resolved.
#[derive(Debug, Clone)]
pub struct Outputs {
    /// `-q`: only the final table.
    pub quiet: bool,
    /// `-v`: every sample.
    pub verbose: bool,
    /// `-N`: nanoseconds.
    pub nsecs: bool,
    /// `-r`: redraw only when a maximum changes.
    pub refresh_on_max: bool,
    /// `-o`: oscilloscope reduction.
    pub oscope: Option<u64>,
    /// `-D`-style debug lines of the plan.
    pub dbg: bool,
    /// `-R`: report the clock's resolution.
    pub resolution: bool,
    /// `--smi`: count SMIs.
    pub smi: bool,
    /// `--deepest-idle-state`.
    pub deepest_idle_state: Option<i32>,
    /// `-F`: a named pipe serving the current lines.
    pub fifo: Option<PathBuf>,
    /// `--histfile`.
    pub histfile: Option<PathBuf>,
    /// `--json`: cyclictest's JSON.
    pub json: Option<PathBuf>,
    /// `--rtlab-json`: the RunResult.
    pub rtlab_json: Option<PathBuf>,
    /// `--predict`: the horizon (ns) of the worst case to expect.
    pub predict: Option<i64>,
    /// `--compat`.
    pub compat: Compat,
    /// `--spike` was given: print the spike list.
    pub spike: bool,
    /// `-b` was given: print the break footer.
    pub breaktrace: bool,
}

/// Runs cyclictest's measurement and prints its outputs; returns the exit code (3 when a
/// `-b` threshold was hit, else 0).
pub fn execute(opts: &CyclictestOptions, command_line: Vec<String>) -> Result<i32, Error> {
    let CyclictestOptions { plan, args, histogram_us, histofall, policy, notices } = opts;
    let (histogram_us, histofall, policy) = (*histogram_us, *histofall, *policy);
    let os = plan.os().ok_or_else(|| Error::Runtime("internal: cyclictest measures OS threads".into()))?;
    let nsecs = args.nsecs;
    let mut err = std::io::stderr();
    announce(notices, args, os);
    let used_cpus = CpuSet::from_cpus(os.threads.iter().filter_map(|t| t.cpu));
    let _idle = match args.deepest_idle_state {
        Some(n) => {
            let cpus = if used_cpus.is_empty() { affinity::online_cpus() } else { used_cpus.clone() };
            Some(IdleLimit::apply(&cpus, n).map_err(Error::Runtime)?)
        }
        None => None,
    };
    let smi_cpus: Vec<Option<usize>> = os.threads.iter().map(|t| t.cpu).collect();
    let smi_start: Option<Vec<u64>> =
        args.smi.then(|| smi_cpus.iter().map(|c| c.and_then(|c| SmiCounter::read(c).ok()).unwrap_or(0)).collect());

    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let environment = Environment::capture();
    let mode = ViewMode {
        quiet: args.quiet,
        verbose: args.verbose,
        nsecs,
        refresh_on_max: args.refresh_on_max,
        histogram: histogram_us.is_some(),
        oscope: args.oscope.unwrap_or(1),
    };
    let mut view = CyclictestView::new(mode, policy, Box::new(std::io::stdout()));
    if args.verbose {
        let n = affinity::online_cpus().len();
        view.preamble = format!("Max CPUs = {n}\nOnline CPUs = {n}\n");
    }
    view.smi_base = smi_start.clone().map(|start| smi_cpus.iter().copied().zip(start).collect());
    let fifo = args.fifo.as_ref().map(|p| FifoServer::start(p.clone(), Arc::clone(&view.latest))).transpose()?;
    let status = StatusFile::start(Arc::clone(&view.latest));

    let mut warnings = crate::output::warnings::WarningPrinter::default();
    let mut hlog = plan.hlog.clone().map(|h| session::observers::HlogWriter::new(h, crate::result::Kind::Wakeup));
    let mut observers: Vec<&mut dyn session::Observer> = vec![&mut view, &mut warnings];
    observers.extend(hlog.as_mut().map(|h| h as &mut dyn session::Observer));
    let out =
        session::run(plan, &mut session::Fanout(observers), &signals).map_err(|e| Error::Runtime(e.to_string()))?;
    if let Some(Err(e)) = hlog.map(session::observers::HlogWriter::finish) {
        eprintln!("rtlab: warning: {e}");
    }
    if let Some(f) = fifo {
        f.stop();
    }
    if let Some(s) = status {
        s.stop();
    }

    let mut result = RunResult::build(out.record(session::base_record(plan, Provenance { command_line, environment })));
    let broke = out.break_hit.is_some();
    if let Some(horizon) = args.predict {
        crate::result::predict::attach(&mut result, horizon);
    }
    write_files(args, histogram_us, &result)?;
    let mut text = end_text(args, (histogram_us, histofall), &out, &result)?;
    let unit = if nsecs { crate::units::Unit::Nanos } else { crate::units::Unit::Micros };
    if let Some(line) = crate::result::predict::describe(&result.all.stats, unit) {
        text += &format!("# {line}\n");
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
    warnings.rest(&result);
    for t in out.threads.iter().filter(|t| t.samples_lost > 0) {
        let _ = writeln!(
            err,
            "rtlab: warning: -v output fell behind; {} of thread {} lost",
            crate::units::count_was(t.samples_lost, "sample"),
            t.plan.index
        );
    }
    Ok(if broke { 3 } else { 0 })
}

/// cyclictest's notices, and with --dbg and -R the threads' setup and the clock's resolution,
/// on stderr before measuring.
fn announce(notices: &[String], args: &Outputs, os: &crate::probes::os_thread::Plan) {
    let mut err = std::io::stderr();
    for n in notices {
        let _ = writeln!(err, "{n}");
    }
    if args.dbg {
        for t in &os.threads {
            let _ = writeln!(
                err,
                "# rtlab: thread {} cpu {} policy {}:{} interval {} us method {:?} clock {:?}",
                t.index,
                t.cpu.map_or("any".into(), |c| c.to_string()),
                t.sched.policy,
                t.sched.priority,
                t.interval_ns / 1000,
                os.method,
                os.clock
            );
        }
    }
    if args.resolution {
        let id = os.clock.id();
        if let (Some(reported), Some(measured)) = (clock::resolution(id), clock::measured_resolution(id, 100_000)) {
            if args.verbose || measured > reported {
                let _ = writeln!(err, "WARN: reported clock resolution: {reported} nsec");
                let _ = writeln!(err, "WARN: measured clock resolution approximately: {measured} nsec");
            }
        }
    }
}

/// The --json (cyclictest's) and --rtlab-json files.
fn write_files(args: &Outputs, histogram_us: Option<i64>, result: &RunResult) -> Result<(), Error> {
    if let Some(path) = &args.json {
        let exporter = CyclictestJson {
            version: match args.compat {
                Compat::V2_10 => Version::V2_10,
                Compat::V2_4 => Version::V2_4,
            },
            nsecs: args.nsecs,
            histogram_us,
            return_code: 0,
        };
        let bytes = exporter.serialize(result).map_err(Error::Runtime)?;
        write_output(path, &bytes)
            .map_err(|e| Error::Runtime(format!("cannot write --json {}: {e}", path.display())))?;
    }
    if let Some(path) = &args.rtlab_json {
        let bytes = Json.serialize(result).map_err(Error::Runtime)?;
        write_output(path, &bytes)
            .map_err(|e| Error::Runtime(format!("cannot write --rtlab-json {}: {e}", path.display())))?;
    }

    Ok(())
}

/// What cyclictest prints after the run: spikes, the histogram (or writes it to --histfile), the
/// break footer with why it broke, missed periods.
fn end_text(
    args: &Outputs,
    (histogram_us, histofall): (Option<i64>, bool),
    out: &session::Output,
    result: &RunResult,
) -> Result<String, Error> {
    let nsecs = args.nsecs;
    let mut text = String::new();
    if args.spike {
        text += &text_of(&CyclictestSpikes { nsecs }, result)?;
    }
    if let Some(size) = histogram_us {
        let layout = match args.compat {
            Compat::V2_10 => Layout::V2_10,
            Compat::V2_4 => Layout::V2_4,
        };
        let block = text_of(&CyclictestHistogram { layout, histofall, nsecs, size: size as usize }, result)?;
        match &args.histfile {
            Some(p) => write_output(p, block.as_bytes())
                .map_err(|e| Error::Runtime(format!("cannot write --histfile {}: {e}", p.display())))?,
            None => text += &block,
        }
    }
    if args.breaktrace {
        let tids: Vec<i32> = out.threads.iter().map(|t| t.tid).collect();
        let hit = out.break_hit.map(|(i, e)| (out.threads[i].tid, unit(e.latency_ns, nsecs)));
        text += &break_footer(&tids, hit);
        // Why it broke, as comment lines after cyclictest's own.
        let why = crate::output::explain::blocks(result);
        text += &why.lines().filter(|l| !l.is_empty()).map(|l| format!("# {l}\n")).collect::<String>();
    }
    let missed: Vec<u64> = out.threads.iter().map(|t| t.summary.missed).collect();
    if missed.iter().any(|m| *m > 0) {
        text += &format!("# Missed periods:{}\n", missed.iter().map(|m| format!(" {m:05}")).collect::<String>());
    }
    Ok(text)
}

/// An end-of-run block as text.
fn text_of(exporter: &dyn Exporter, result: &RunResult) -> Result<String, Error> {
    let bytes = exporter.serialize(result).map_err(Error::Runtime)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Serves the current `T:` lines to whoever opens the named pipe (cyclictest `-F`).
struct FifoServer {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<()>,
    path: std::path::PathBuf,
}

impl FifoServer {
    fn start(path: std::path::PathBuf, latest: Arc<Mutex<String>>) -> Result<FifoServer, Error> {
        crate::rt::fifo::make(&path)
            .map_err(|e| Error::Runtime(format!("cannot create fifo {}: {e}", path.display())))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (s, p) = (Arc::clone(&stop), path.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(Relaxed) {
                match crate::rt::fifo::open_writer(&p) {
                    Ok(mut f) => {
                        let text = latest.lock().map(|t| t.clone()).unwrap_or_default();
                        let _ = f.write_all(text.as_bytes());
                        drop(f);
                        // Give the reader time to see end-of-file before the next writer opens.
                        std::thread::sleep(std::time::Duration::from_millis(100));
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
                }
            }
        });
        Ok(FifoServer { stop, handle, path })
    }

    fn stop(self) {
        self.stop.store(true, Relaxed);
        let _ = self.handle.join();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// cyclictest's status file, `/dev/shm/cyclictest<PID>`: rewritten with the current `T:` lines
/// each time SIGUSR2 arrives (what rt-tests' `get_cyclictest_snapshot` finds and reads), and
/// removed at the end. SIGUSR2 is taken before the file is made, as cyclictest takes it, so that
/// a snapshot never ends the run: without the file, each one is said on stderr. Created new,
/// never through an existing file or link; a file already there under this PID's name is a dead
/// process's (a killed cyclictest leaves its own), removed and made again once.
struct StatusFile {
    handle: signal_hook::iterator::Handle,
    thread: std::thread::JoinHandle<()>,
    path: Option<std::path::PathBuf>,
}

impl StatusFile {
    fn start(latest: Arc<Mutex<String>>) -> Option<StatusFile> {
        let path = std::path::PathBuf::from(format!("/dev/shm/cyclictest{}", std::process::id()));
        let warn =
            |e: String| eprintln!("rtlab: warning: no status file {} for SIGUSR2 snapshots: {e}", path.display());
        let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGUSR2])
            .map_err(|e| warn(e.to_string()))
            .ok()?;
        let create = || std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path);
        let opened = create().or_else(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => std::fs::remove_file(&path).and_then(|()| create()),
            _ => Err(e),
        });
        let mut file = opened.map_err(|e| warn(e.to_string())).ok();
        let made = file.is_some();
        let shown = path.display().to_string();
        let handle = signals.handle();
        let thread = std::thread::spawn(move || {
            use std::io::Seek;
            for _ in signals.forever() {
                let Some(file) = file.as_mut() else {
                    eprintln!("rtlab: warning: SIGUSR2: no snapshot written, there is no status file {shown}");
                    continue;
                };
                let lines = latest.lock().map(|t| t.clone()).unwrap_or_default();
                let text = format!(
                    "#---------------------------\n# cyclictest current status:\n{lines}#---------------------------\n"
                );
                let _ = file.set_len(0).and_then(|()| file.rewind()).and_then(|()| file.write_all(text.as_bytes()));
            }
        });
        Some(StatusFile { handle, thread, path: made.then_some(path) })
    }

    fn stop(self) {
        self.handle.close();
        let _ = self.thread.join();
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}
