//! The watch probe (`rtlab watch`): threads of any program, unmodified, measured from the
//! kernel's events. rtlab's own tracefs instance records the watched threads' scheduling,
//! timer and system-call events (filtered to them in the kernel) and every timer interrupt;
//! one reader thread decodes the binary pages (exact nanoseconds), merges the CPUs' streams
//! in time order and feeds [`crate::trace::watch::Tracker`], whose periods are recorded into
//! the pipeline's cells like any probe's samples: the wakeup latency (return to user space
//! after the release) into the slot's [`Live`], the response into its [`WorkLive`].
//!
//! Slots are given to threads as they are found (at the start, and as they appear); a slot
//! keeps its thread for the run.

use super::{Finished, Probe, ProbeError, Sinks, Started, ThreadOutcome, ThreadPlan, ThreadStatus};
use crate::measure::histogram::Layout;
use crate::measure::probe::LoopOutcome;
use crate::measure::stats::Recorder;
use crate::measure::work::{WorkKind, WorkLive, WorkRecorder, WorkSpec, NO_DEADLINE};
use crate::result::warning::Warning;
use crate::result::watch::{BlockedOn, EventLoop, Preemptor, Share, Stall, WatchFigures, WatchRun, WatchThread};
use crate::result::EndReason;
use crate::rt::affinity::CpuSet;
use crate::rt::clock::{self, ClockId};
use crate::rt::process;
use crate::rt::sched::{Policy, SchedParams};
use crate::rt::tracefs::Instance;
use crate::trace::event::Event;
use crate::trace::job::{Assembler, Job, Learner, Shape, PENDING_MAX};
use crate::trace::raw::{decode_page, Formats};
use crate::trace::syscalls::Arch;
use crate::trace::watch::{Cadence, Note, Period, Tracker};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// What to watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every thread of a process, also those it creates later (`-p PID`).
    Process(i32),
    /// These threads (`--tid`).
    Threads(Vec<i32>),
    /// Threads whose name is this, also those that appear or take the name later (`--comm`).
    Comm(String),
    /// A command rtlab starts and watches, with every thread it creates (`-- CMD ARGS`).
    Command(Vec<String>),
}

impl Target {
    /// How the result names it.
    pub fn describe(&self) -> String {
        let list = |v: &[i32]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(",");
        match self {
            Target::Process(p) => format!("pid {p}"),
            Target::Threads(t) => format!("tid {}", list(t)),
            Target::Comm(c) => format!("comm {c}"),
            Target::Command(argv) => format!("command {}", argv.join(" ")),
        }
    }
}

/// The watched threads' events, recorded by an instance that traces only them
/// (`set_event_pid`; with `event-fork` for a process or a command, so the threads they create
/// are traced from their first instruction): what they do, switches to and from them, their
/// wakeups.
pub const THREAD_EVENTS: &[&str] = &[
    "sched/sched_switch",
    "sched/sched_waking",
    "timer/hrtimer_start",
    "raw_syscalls/sys_exit",
    "sched/sched_process_exit",
    // Interrupts taken in a watched thread's context while it works (a stall's causes): a
    // sleeping thread takes none, so a periodic thread's wakeup pays nothing for them.
    "irq/irq_handler_entry",
    "irq/irq_handler_exit",
    "irq/softirq_entry",
    "irq/softirq_exit",
    "irq_vectors/local_timer_entry",
    "irq_vectors/local_timer_exit",
];

/// Events of any task, recorded by a second instance: timer interrupts come in whatever task's
/// context the CPU was in (often idle); forks and renames name the threads to watch next.
pub const SYSTEM_EVENTS: &[&str] = &["timer/hrtimer_expire_entry", "sched/sched_process_fork", "task/task_rename"];

/// The most threads one watch takes (each keeps five histograms).
pub const MAX_THREADS: usize = 96;

/// Per-CPU trace buffer (KiB) of a watch.
const BUFFER_KB: usize = 4096;

/// After the BPF programs woke the reader, its next read comes this soon: the events that
/// woke it (a rename) are read once they are older than [`SETTLE_NS`].
const AFTER_WAKE: Duration = Duration::from_millis(25);

/// How often the reader drains tracefs's buffers.
const READ_EVERY: Duration = Duration::from_millis(50);

/// How often it drains the BPF programs' ring: they wake it sooner when the ring is half full,
/// so it can sleep longer (each read costs it its wakeup, whether or not events wait).
const BPF_READ_EVERY: Duration = Duration::from_millis(200);

/// How often it drains them while they fill fast (a read found more than [`BUSY_READ`]
/// events): a program waking hundreds of thousands of times a second fills them in less than
/// [`READ_EVERY`].
const READ_BUSY_EVERY: Duration = Duration::from_millis(2);

/// Events in one read that make the next come sooner.
const BUSY_READ: u64 = 4096;

/// Events younger than this are left for the next read: another CPU may still be writing
/// one older than them.
const SETTLE_NS: i64 = 20_000_000;

/// How often threads are looked for in `/proc` besides the fork and rename events (and their
/// policies and exits checked): each look reads a few files per thread, a quarter of an idle
/// reader's time when it looked four times a second.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// How a watch reads the kernel's events (`--backend`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// BPF programs on BTF tracepoints (src/rt/bpf.rs), or an error (`--backend bpf`).
    Bpf,
    /// BPF where this build has its programs and the kernel loads them, else tracefs with a
    /// warning that says why: `rtlab watch`'s default (BENCHMARKS.md section 20).
    Preferred,
    /// rtlab's tracefs instances (`--backend tracefs`, `--explain`, `run --stages`, `timerlat`).
    #[default]
    Tracefs,
}

/// A watch as asked.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What to watch.
    pub target: Target,
    /// How the events are read.
    pub backend: Backend,
    /// The watched threads' period (`--period`; `None`: learnt per thread).
    pub period_ns: Option<i64>,
    /// Their deadline relative to the release (`--deadline`; `None`: the period).
    pub deadline_ns: Option<i64>,
    /// K of "the worst misses in any K consecutive releases".
    pub miss_window: u32,
    /// Slots: the most threads watched at once.
    pub capacity: usize,
    /// Histogram layout of the IRQ and switch latencies.
    pub layout: Layout,
    /// Where the reader thread runs (`--mainaffinity`).
    pub reader_cpus: Option<CpuSet>,
    /// Write every event the tracker read, in time order, as `trace_pipe` lines with
    /// nanoseconds (`--events FILE`: a recording that replays through the same analysis).
    pub events_out: Option<std::path::PathBuf>,
    /// `--explain`: explain late periods from every CPU's events.
    pub explain: Option<Explain>,
    /// Stage thresholds (`rtlab timerlat -i`/`-T`).
    pub stop_at: StageLimits,
    /// After a stage threshold was crossed: write the last [`TRACE_KEEP_NS`] of events the
    /// tracker read here, as `--events` lines (rtla timerlat's `trace` action).
    pub trace_out: Option<std::path::PathBuf>,
    /// An event loop's iteration busy longer than this is a stall (`--stall`, ns).
    pub stall_ns: i64,
}

/// The stall threshold when `--stall` is not given: asyncio's slow-callback warning's.
pub const DEFAULT_STALL_NS: i64 = 100_000_000;

/// At most this many stalls are kept per thread (the longest).
const STALLS_KEPT: usize = 100;

/// How much of the latest events `trace_out` keeps (the rest is dropped as the run goes).
pub const TRACE_KEEP_NS: i64 = crate::trace::period::KEEP_NS;

impl StageLimits {
    /// The stage of `p` above its limit, and its latency: the IRQ latency against `irq_ns`;
    /// the thread latency or the return-to-user latency against `thread_ns` (rtla's
    /// user-thread mode stops on either).
    pub fn hit(&self, p: &Period) -> Option<(&'static str, i64)> {
        let over = |v: Option<i64>, limit: Option<i64>| v.filter(|v| limit.is_some_and(|l| *v > l));
        over(p.irq_ns, self.irq_ns)
            .map(|v| ("IRQ", v))
            .or_else(|| over(p.thread_ns, self.thread_ns).map(|v| ("thread", v)))
            .or_else(|| over(p.wakeup_ns, self.thread_ns).map(|v| ("user", v)))
    }
}

/// Stage thresholds: a period whose IRQ or thread latency is above its limit is a hit; the
/// first ends the run (through the pipeline's `stop`) unless `continues`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageLimits {
    /// IRQ latency limit (ns).
    pub irq_ns: Option<i64>,
    /// Thread latency limit (ns).
    pub thread_ns: Option<i64>,
    /// Hits are counted (the live cells' `hits`) and the run goes on (rtla's `continue`).
    pub continues: bool,
    /// The `trace` output is written at the end even without a hit (rtla's `--on-end trace`).
    pub trace_at_end: bool,
}

/// What `--explain` asks of a watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Explain {
    /// Explain every wakeup above this (ns).
    pub threshold_ns: Option<i64>,
    /// Explain the N largest wakeups, whatever their size.
    pub worst: usize,
}

/// The timer callbacks the events name (instead of their addresses).
const TIMER_FUNCTIONS: &[&str] =
    &["hrtimer_wakeup", "timerfd_tmrproc", "posix_timer_fn", "it_real_fn", "tick_nohz_handler", "tick_sched_timer"];

/// The events each instance records: the watched threads' own, and every CPU's (with
/// `--explain`, every CPU's switches, wakeups and interrupts too: the watched threads' switches
/// and wakeups then come from there, once).
fn instance_events(explain: bool) -> (Vec<&'static str>, Vec<&'static str>) {
    if !explain {
        return (THREAD_EVENTS.to_vec(), SYSTEM_EVENTS.to_vec());
    }
    let mut system: Vec<&str> = SYSTEM_EVENTS.to_vec();
    for e in crate::trace::recorder::events(false) {
        if !system.contains(&e) {
            system.push(e);
        }
    }
    let threads = THREAD_EVENTS.iter().copied().filter(|e| !system.contains(e)).collect();
    (threads, system)
}

impl Plan {
    /// The slots as the pipeline plans them: unpinned, their scheduling not rtlab's to set,
    /// each with observed work judged against the deadline (or the period once learnt).
    pub fn slots(&self) -> Vec<ThreadPlan> {
        let deadline = self.deadline_ns.or(self.period_ns).unwrap_or(NO_DEADLINE);
        (0..self.capacity)
            .map(|index| ThreadPlan {
                index,
                cpu: None,
                sched: SchedParams::simple(Policy::Other, 0),
                interval_ns: self.period_ns.unwrap_or(0),
                warmup_cycles: 0,
                name: None,
                work: Some(WorkSpec {
                    kind: WorkKind::Observed,
                    amount_ns: 0,
                    deadline_ns: deadline,
                    miss_window: self.miss_window,
                }),
                offset_ns: 0,
            })
            .collect()
    }
}

/// The threads `target` names now (a command has none before it starts).
pub fn threads_now(target: &Target) -> Vec<i32> {
    match target {
        Target::Process(pid) => process::thread_ids(*pid),
        Target::Threads(t) => t.iter().copied().filter(|t| process::comm(*t).is_some()).collect(),
        Target::Comm(name) => process::process_ids()
            .into_iter()
            .flat_map(process::thread_ids)
            .filter(|t| !process::is_kernel_thread(*t) && process::comm(*t).as_deref() == Some(name.as_str()))
            .collect(),
        Target::Command(_) => Vec::new(),
    }
}

/// What the probe and its reader share.
#[derive(Debug, Default)]
struct Shared {
    statuses: Mutex<Vec<ThreadStatus>>,
    /// Every watched thread is gone (and the command, if any, exited).
    gone: AtomicBool,
    stop: AtomicBool,
    dropped: AtomicUsize,
}

/// The watch probe.
#[derive(Debug)]
pub struct WatchProbe {
    plan: Plan,
    /// Events asked for that this kernel lacks.
    missing: Vec<String>,
    /// Why the preferred backend, BPF, could not watch (tracefs did).
    fallback: Option<String>,
    shared: Arc<Shared>,
    reader: Option<std::thread::JoinHandle<Harvest>>,
    child: Option<Arc<Mutex<process::Running>>>,
}

impl WatchProbe {
    /// A probe ready to start.
    pub fn new(plan: Plan) -> WatchProbe {
        WatchProbe { plan, missing: Vec::new(), fallback: None, shared: Arc::default(), reader: None, child: None }
    }

    /// Where the events will come from, set up to watch `tids` (`follow`: with the threads
    /// they create), and the formats that name what they carry: the plan's backend.
    /// With the preferred backend, why BPF could not watch lands in `fallback`.
    fn source(&mut self, tids: &[i32], follow: bool) -> Result<(Source, Formats), ProbeError> {
        // /proc/kallsyms (megabytes) is read while the programs load or the instances are made;
        // the reader needs the names from its first event on (a short-lived thread's policy is
        // only in /proc while it lives: the reader must keep up from the start).
        let names = std::thread::spawn(|| {
            let mut names = Formats::default();
            names.name_functions(TIMER_FUNCTIONS);
            names
        });
        let (source, mut formats) = self.backend_source(tids, follow)?;
        formats.extend(names.join().unwrap_or_default());
        Ok((source, formats))
    }

    /// [`WatchProbe::source`] without the timer callbacks' names.
    fn backend_source(&mut self, tids: &[i32], follow: bool) -> Result<(Source, Formats), ProbeError> {
        if matches!(self.plan.backend, Backend::Bpf | Backend::Preferred) {
            let cpus = crate::rt::affinity::online_cpus().cpus().len();
            let loaded = crate::rt::bpf::WatchPrograms::load(crate::rt::bpf::ring_bytes(cpus))
                .and_then(|mut programs| programs.watch(tids, follow).map(|()| programs));
            match loaded {
                Ok(mut programs) => {
                    self.missing = std::mem::take(&mut programs.missing);
                    return Ok((Source::Bpf { programs: Box::new(programs), follow }, Formats::default()));
                }
                Err(e) if self.plan.backend == Backend::Preferred => self.fallback = Some(e),
                Err(e) => return Err(ProbeError::Start(format!("the BPF backend cannot watch: {e}"))),
            }
        }
        let (threads, system, formats, pipes) = self.trace(tids, follow)?;
        Ok((Source::Tracefs { instances: Box::new([threads, system]), pipes }, formats))
    }

    /// The two tracefs instances (the system's first: a watched thread's first timer release
    /// needs its callback), the formats of their events and every CPU's pipe of each.
    fn trace(&mut self, tids: &[i32], follow: bool) -> Result<(Instance, Instance, Formats, Vec<Pipe>), ProbeError> {
        let online = crate::rt::affinity::online_cpus();
        let cannot = |e: String| ProbeError::Usage(format!("cannot trace the watched threads: {e}"));
        let (thread_events, system_events) = instance_events(self.plan.explain.is_some());
        let system_kb = if self.plan.explain.is_some() { BUFFER_KB } else { BUFFER_KB / 4 };
        let system = Instance::create("rtlab-watch", &online, system_kb, &system_events, None).map_err(cannot)?;
        // Before a thread of that name exists, the list names rtlab's own main thread (an empty
        // list would trace every task): a few events a second, ignored.
        let traced = if tids.is_empty() { vec![std::process::id() as i32] } else { tids.to_vec() };
        let threads = Instance::create("rtlab-watch", &online, BUFFER_KB, &thread_events, Some((&traced, follow)))
            .map_err(cannot)?;
        let mut formats = Formats::load(threads.dir(), &thread_events);
        formats.extend(Formats::load(system.dir(), &system_events));
        self.missing = [&threads, &system].iter().flat_map(|i| i.missing.clone()).collect();
        let mut pipes = Vec::new();
        for (instance, inst) in [&threads, &system].into_iter().enumerate() {
            for &cpu in online.cpus() {
                let file = inst
                    .pipe_raw(cpu)
                    .map_err(|e| ProbeError::Start(format!("cannot read CPU {cpu}'s events ({e})")))?;
                pipes.push(Pipe { cpu, instance, file });
            }
        }
        Ok((threads, system, formats, pipes))
    }
}

/// What the reader thread hands back.
#[derive(Debug, Default)]
struct Harvest {
    slots: Vec<ThreadOutcome>,
    run: WatchRun,
    error: Option<String>,
    explained: Option<Explaining>,
}

impl Probe for WatchProbe {
    fn slots(&self) -> usize {
        self.plan.capacity
    }

    fn start(&mut self, sinks: &Sinks) -> Result<Started, ProbeError> {
        let mut held = None;
        let tids = match &self.plan.target {
            Target::Command(argv) => {
                let mut cmd = std::process::Command::new(&argv[0]);
                cmd.args(&argv[1..]);
                let opts = process::SpawnOptions { contain: true, ..Default::default() };
                let h = process::spawn_held(cmd, opts)
                    .map_err(|e| ProbeError::Usage(format!("cannot run {} ({e}); check the command", argv[0])))?;
                let pid = h.pid;
                held = Some(h);
                vec![pid]
            }
            t => threads_now(t),
        };
        let follow = matches!(self.plan.target, Target::Process(_) | Target::Command(_));
        let (source, formats) = self.source(&tids, follow)?;
        let start_ns = clock::now(ClockId::MONOTONIC);
        let wall = SystemTime::now();
        let now = Instant::now();
        if let Some(h) = held {
            let child = h.release().map_err(|e| ProbeError::Start(format!("cannot release the command ({e})")))?;
            self.child = Some(Arc::new(Mutex::new(child)));
        }
        let identity = match self.plan.target {
            Target::Process(pid) => process::start_time(pid),
            _ => None,
        };
        let reader = Reader {
            plan: self.plan.clone(),
            sinks: sinks.clone(),
            shared: Arc::clone(&self.shared),
            child: self.child.clone(),
            identity,
            start_ns,
            realtime_offset_ns: clock::now(ClockId::REALTIME) - clock::now(ClockId::MONOTONIC),
            arch: Arch::of_machine(&crate::rt::machine::kernel().unwrap_or_default()),
        };
        let initial = tids.clone();
        let handle = std::thread::Builder::new()
            .name("rtlab-watch".into())
            .spawn(move || reader.run(source, formats, initial))
            .map_err(|e| ProbeError::Start(format!("cannot start the event reader ({e})")))?;
        self.reader = Some(handle);
        // Every slot as it stands at the start (a samples file's header lists them all); the
        // threads found fill them while the run goes on (`statuses`).
        let placeholder = |index| ThreadStatus {
            index,
            cpu: None,
            sched: SchedParams::simple(Policy::Other, 0),
            interval_ns: self.plan.period_ns.unwrap_or(0),
            tid: 0,
            identity: None,
        };
        Ok(Started {
            slots: (0..self.plan.capacity).map(placeholder).collect(),
            warnings: self.fallback.take().map(|why| Warning::BackendFallback { why }).into_iter().collect(),
            dma_latency_us: None,
            mlocked: false,
            start: wall,
            schedule_start: now,
            own_duration: false,
            runtime: None,
            stages: Vec::new(),
        })
    }

    fn finished(&mut self) -> bool {
        self.shared.gone.load(Relaxed) || self.reader.as_ref().is_some_and(|r| r.is_finished())
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Relaxed);
    }

    fn statuses(&self) -> Option<Vec<ThreadStatus>> {
        self.shared.statuses.lock().ok().map(|s| s.clone())
    }

    fn join(mut self: Box<Self>) -> Finished {
        self.shared.stop.store(true, Relaxed);
        let gone = self.shared.gone.load(Relaxed);
        let mut read = match self.reader.take().map(|r| r.join()) {
            Some(Ok(r)) => r,
            _ => Harvest { error: Some("the event reader failed".into()), ..Default::default() },
        };
        if let Some(child) = self.child.take() {
            match child
                .lock()
                .map_err(|_| std::io::Error::other("poisoned"))
                .and_then(|mut c| c.end(Duration::from_secs(2)))
            {
                Ok(status) => {
                    read.run.exit_status = status.code();
                    read.run.exit_signal = std::os::unix::process::ExitStatusExt::signal(&status);
                }
                Err(e) => read.error = read.error.or(Some(format!("the command could not run ({e})"))),
            }
        }
        read.run.threads_dropped = self.shared.dropped.load(Relaxed);
        let (explanations, explain) = match read.explained.take() {
            Some(x) => {
                let (done, summary) = x.finish(&read.run, &self.missing);
                (done, Some(summary))
            }
            None => (Vec::new(), None),
        };
        Finished {
            explanations,
            explain,
            slots: read.slots,
            failure: read.error,
            end_reason: gone.then_some(EndReason::Exited),
            watch: Some(read.run),
            ..Default::default()
        }
    }
}

/// The reader thread's inputs.
struct Reader {
    plan: Plan,
    sinks: Sinks,
    shared: Arc<Shared>,
    child: Option<Arc<Mutex<process::Running>>>,
    /// `-p PID`: when that process started (a later process given its PID is not it).
    identity: Option<u64>,
    start_ns: i64,
    realtime_offset_ns: i64,
    /// The traced kernel's system call numbers.
    arch: Arch,
}

/// One watched thread's slot while the reader runs.
#[derive(Debug)]
struct Slot {
    tid: i32,
    /// Its schedule once its shape is known (the period, for skipped releases).
    cadence: Cadence,
    /// Learns its shape from its first periods.
    learner: Learner,
    /// Periods kept until its shape is known.
    pending: Vec<Period>,
    /// Turns its periods into jobs, once its shape is known.
    jobs: Option<Assembler>,
    /// The last timer release recorded (for skipped releases).
    last_release: Option<i64>,
    figures: WatchThread,
    cpus: Vec<usize>,
    preemptors: HashMap<String, (i64, u64)>,
    /// Its scheduling as last read (`None`: never readable).
    sched: Option<SchedParams>,
    /// When it started (its identity beside its id).
    started: Option<u64>,
    /// When it was first watched (ns, CLOCK_MONOTONIC): a task created with its id later is
    /// another.
    added_ns: i64,
}

impl Slot {
    /// Its shape, once known.
    fn shape(&self) -> Option<&Shape> {
        self.jobs.as_ref().map(Assembler::shape)
    }
}

/// One CPU's binary stream of one of the two instances.
#[derive(Debug)]
struct Pipe {
    cpu: usize,
    /// Which instance (0: the watched threads', 1: the system's).
    instance: usize,
    file: std::fs::File,
}

/// Where the reader's events come from.
enum Source {
    /// Every CPU's pipe of the two tracefs instances (the watched threads', the system's), and
    /// the instances. The pipes come first: fields drop in order, and an instance with a pipe
    /// still open cannot be removed.
    Tracefs { pipes: Vec<Pipe>, instances: Box<[Instance; 2]> },
    /// The BPF programs; `follow`: threads found later are watched with the threads they create.
    Bpf { programs: Box<crate::rt::bpf::WatchPrograms>, follow: bool },
}

impl Source {
    /// The run is ending: the kernel records no more.
    fn stop(&self) {
        if let Source::Tracefs { instances, .. } = self {
            instances.iter().for_each(Instance::stop);
        }
    }

    /// Waits for the next read: sooner while the buffers fill fast (`busy`) or after the BPF
    /// programs woke it (`woken`: a half-full ring, a rename); true when they woke it now.
    fn wait(&mut self, busy: bool, woken: bool) -> bool {
        match self {
            Source::Tracefs { .. } => {
                std::thread::sleep(if busy { READ_BUSY_EVERY } else { READ_EVERY });
                false
            }
            Source::Bpf { programs, .. } => programs.wait(match (busy, woken) {
                (true, _) => READ_BUSY_EVERY,
                (false, true) => AFTER_WAKE,
                (false, false) => BPF_READ_EVERY,
            }),
        }
    }

    /// Reads every event waiting.
    fn read(&mut self, streams: &mut Streams, formats: &Formats) {
        match self {
            Source::Tracefs { pipes, .. } => streams.read(pipes, formats),
            Source::Bpf { programs, .. } => streams.read_bpf(programs, formats),
        }
    }

    /// Has the kernel trace the threads found since the last call.
    fn trace_new(&mut self, state: &mut State) -> Result<(), String> {
        if state.untraced.is_empty() {
            return Ok(());
        }
        match self {
            Source::Tracefs { instances, .. } => instances[0].add_pids(&state.untraced)?,
            Source::Bpf { programs, follow } => programs.watch(&state.untraced, *follow)?,
        }
        state.untraced.clear();
        Ok(())
    }

    /// How the events were read, the instances, and the events lost: per CPU and tracefs
    /// instance (the pages' flags and the kernel's own counts tell of the same events), or the
    /// BPF programs' counts.
    fn describe(&self, streams: &Streams) -> (String, String, u64) {
        match self {
            Source::Tracefs { instances, pipes } => {
                let lost = pipes
                    .iter()
                    .enumerate()
                    .map(|(i, p)| streams.lost.get(i).copied().unwrap_or(0).max(instances[p.instance].lost(p.cpu)))
                    .sum();
                let names = instances
                    .iter()
                    .filter_map(|i| i.dir().file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect::<Vec<_>>()
                    .join(", ");
                ("tracefs: trace_pipe_raw, filtered to the watched threads in the kernel".into(), names, lost)
            }
            Source::Bpf { programs, .. } => (
                "bpf: programs on BTF tracepoints, filtered to the watched threads in the kernel, one ring buffer"
                    .into(),
                String::new(),
                programs.lost(),
            ),
        }
    }
}

/// Each CPU's events read and not yet fed, in time order.
#[derive(Debug, Default)]
struct Streams {
    queues: crate::trace::merge::Queues,
    comms: HashMap<i32, crate::trace::event::Name>,
    events: u64,
    /// Per pipe: events the pages said were lost before them.
    lost: Vec<u64>,
    undecoded: u64,
}

impl Streams {
    /// Reads every page the CPUs' buffers hold.
    fn read(&mut self, pipes: &mut [Pipe], formats: &Formats) {
        self.lost.resize(pipes.len(), 0);
        let mut page = vec![0u8; 1 << 16];
        for (i, Pipe { cpu, file: f, .. }) in pipes.iter_mut().enumerate() {
            loop {
                match f.read(&mut page) {
                    Ok(0) => break,
                    Ok(n) => {
                        let got = decode_page(&page[..n], *cpu, formats, &mut self.comms);
                        self.events += got.events.len() as u64;
                        self.lost[i] += got.lost;
                        self.undecoded += got.undecoded;
                        self.queues.extend(i, got.events);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
    }

    /// Reads every record the BPF programs left in their ring, into its CPU's queue.
    fn read_bpf(&mut self, programs: &mut crate::rt::bpf::WatchPrograms, formats: &Formats) {
        let (queues, events, undecoded) = (&mut self.queues, &mut self.events, &mut self.undecoded);
        programs.drain(|record| {
            if queues.push_record(record, formats) {
                *events += 1;
            } else {
                *undecoded += 1;
            }
        });
    }

    /// The events up to `until` (ns), merged over the CPUs in time order (see
    /// [`crate::trace::merge::Queues::take`]).
    fn take(&mut self, until: i64) -> Vec<Event> {
        self.queues.take(until)
    }
}

/// The recorders of every slot, borrowing the pipeline's cells.
struct Recorders<'a> {
    wakeup: Vec<Recorder<'a>>,
    work: Vec<WorkRecorder<'a>>,
    irq: Vec<Recorder<'a>>,
    switch: Vec<Recorder<'a>>,
    user: Vec<Recorder<'a>>,
    hits: Vec<&'a AtomicU64>,
}

impl<'a> Recorders<'a> {
    /// The recorders of every slot over the pipeline's cells (`works`: the slots' work cells,
    /// `stages`: their stage cells), started at `start_ns`.
    fn new(
        sinks: &'a Sinks,
        works: &'a [Arc<WorkLive>],
        stages: &[&'a crate::measure::work::StageCells],
        start_ns: i64,
    ) -> Recorders<'a> {
        let mut recs = Recorders {
            wakeup: sinks.lives.iter().map(|l| Recorder::new(l, sinks.max_latency_ns)).collect(),
            work: works
                .iter()
                .zip(&sinks.rings)
                .map(|(w, r)| WorkRecorder::new(w, sinks.max_response_ns, r.as_deref()))
                .collect(),
            irq: stages.iter().map(|c| Recorder::new(&c.irq, None)).collect(),
            switch: stages.iter().map(|c| Recorder::new(&c.thread, None)).collect(),
            user: stages.iter().map(|c| Recorder::new(&c.user, None)).collect(),
            hits: stages.iter().map(|c| &c.hits).collect(),
        };
        recs.wakeup.iter_mut().for_each(|r| r.started(start_ns));
        recs.work.iter_mut().for_each(|r| r.started(start_ns));
        recs
    }
}

impl Reader {
    fn run(self, mut source: Source, formats: Formats, initial: Vec<i32>) -> Harvest {
        if let Some(cpus) = &self.plan.reader_cpus {
            let _ = crate::rt::affinity::set_current_thread(cpus);
        }
        let cpu0 = clock::now(ClockId::THREAD_CPUTIME);
        let works: Vec<Arc<WorkLive>> = self.sinks.work.iter().flatten().cloned().collect();
        // A watched slot's stage latencies go where the live view reads them (its work cells).
        let spare = crate::measure::work::StageCells::new(self.plan.layout);
        let stages: Vec<&crate::measure::work::StageCells> =
            works.iter().map(|w| w.stages.as_ref().unwrap_or(&spare)).collect();
        let mut recs = Recorders::new(&self.sinks, &works, &stages, self.start_ns);
        let mut state = self.state();
        for tid in initial {
            self.add(&mut state, tid, None);
        }
        let mut streams = Streams::default();
        let mut recording =
            self.plan.events_out.as_ref().and_then(|p| {
                crate::rt::fs::temp_beside(p).ok().map(|t| std::io::BufWriter::with_capacity(1 << 20, t))
            });
        // rtla's `trace` action: the latest events, written if a stage threshold is crossed.
        let mut kept = self.plan.trace_out.as_ref().map(|_| crate::trace::period::Recent::default());
        let (mut next_look, mut read_before, mut woken, mut exit_seen) = (Instant::now() + LOOK_EVERY, 0, false, false);
        let mut notes = Vec::new();
        let mut error: Option<String> = None;
        loop {
            let stopping = self.shared.stop.load(Relaxed);
            if stopping {
                source.stop();
            }
            let until = if stopping { i64::MAX } else { clock::now(ClockId::MONOTONIC) - SETTLE_NS };
            source.read(&mut streams, &formats);
            for e in streams.take(until) {
                if let Some(w) = recording.as_mut() {
                    let _ = writeln!(w, "{e}");
                }
                if let Some(x) = state.explaining.as_mut() {
                    x.recent.push(&e);
                }
                if let Some(k) = kept.as_mut() {
                    k.push(&e);
                }
                state.tracker.feed(&e, &mut notes);
                self.notes(&mut state, &mut recs, &mut notes);
            }
            if let Err(e) = source.trace_new(&mut state) {
                error = Some(e);
                break;
            }
            // The command's exit is known at once (its waiter ended): the run ends at this read,
            // not at the next look.
            let exited_now = !exit_seen && self.child.as_ref().is_some_and(|c| c.lock().is_ok_and(|c| c.exited()));
            exit_seen |= exited_now;
            if exited_now || Instant::now() >= next_look {
                next_look = Instant::now() + LOOK_EVERY;
                self.look(&mut state);
            }
            if stopping {
                break;
            }
            // Nothing is left to watch: the stop comes at the pipeline's next tick, read until it.
            let busy = streams.events - read_before > BUSY_READ || self.shared.gone.load(Relaxed);
            read_before = streams.events;
            woken = source.wait(busy, woken);
        }
        state.tracker.finish(&mut notes);
        self.notes(&mut state, &mut recs, &mut notes);
        let mut slots = Vec::new();
        for (i, slot) in state.slots.iter_mut().enumerate() {
            self.flush(slot, i, &mut recs, true, state.explaining.as_mut());
            slots.push(self.outcome(slot, i, &recs));
        }
        let run = self.watch_run(&source, &streams, state.slots.len(), cpu0);
        drop(source);
        let hit = recs.hits.iter().any(|h| h.load(Relaxed) > 0);
        error = error.or(self.write_outputs(kept.filter(|_| hit || self.plan.stop_at.trace_at_end), recording));
        Harvest { slots, run, error, explained: state.explaining.take() }
    }

    /// The reader's state before the first event.
    fn state(&self) -> State {
        State {
            tracker: Tracker::new(self.realtime_offset_ns).with_arch(self.arch),
            slots: Vec::new(),
            by_tid: Default::default(),
            untraced: Vec::new(),
            exited: Default::default(),
            explaining: self.plan.explain.map(|x| Explaining::new(x, self.arch)),
        }
    }

    /// What the watch watched and what reading cost: the target, how the events were read,
    /// the events read and lost, the reader's CPU time since `cpu0`.
    fn watch_run(&self, source: &Source, streams: &Streams, threads: usize, cpu0: i64) -> WatchRun {
        let (backend, instance, lost_events) = source.describe(streams);
        WatchRun {
            target: self.plan.target.describe(),
            command: match &self.plan.target {
                Target::Command(argv) => Some(argv.clone()),
                _ => None,
            },
            backend,
            instance,
            events: streams.events,
            lost_events,
            undecoded: streams.undecoded,
            late_events: streams.queues.late(),
            threads,
            reader_cpu_ns: clock::now(ClockId::THREAD_CPUTIME) - cpu0,
            ..Default::default()
        }
    }

    /// Writes the `trace` action's events (`kept`, when a threshold was crossed) and the
    /// `--events` recording; what could not be written.
    fn write_outputs(
        &self,
        kept: Option<crate::trace::period::Recent>,
        recording: Option<std::io::BufWriter<tempfile::NamedTempFile>>,
    ) -> Option<String> {
        let mut error = None;
        if let (Some(k), Some(path)) = (kept, &self.plan.trace_out) {
            if let Err(e) = write_events(path, &k.between(i64::MIN, i64::MAX, None)) {
                error = Some(format!("cannot write the trace {}: {e}", path.display()));
            }
        }
        if let (Some(w), Some(path)) = (recording, &self.plan.events_out) {
            let kept =
                w.into_inner().map_err(|e| e.to_string()).and_then(|t| t.persist(path).map_err(|e| e.to_string()));
            if let Err(e) = kept {
                error = error.or(Some(format!("cannot write --events {}: {e}", path.display())));
            }
        }
        error
    }

    /// The periodic look: the threads' scheduling read again, ids taken by strangers
    /// forgotten, new threads of the target added, and whether anything is left to watch.
    fn look(&self, state: &mut State) {
        self.resched(state);
        let watched: Vec<i32> = state.slots.iter().map(|s| s.tid).collect();
        for tid in watched {
            self.forget_replaced(state, tid);
        }
        for tid in self.target_threads() {
            if !state.by_tid.contains_key(&tid) {
                self.add(state, tid, None);
                state.untraced.push(tid);
            }
        }
        self.check_gone(state);
    }
}

/// Writes `events` to `path` as `--events` lines, atomically (the path was checked before
/// measuring).
fn write_events(path: &std::path::Path, events: &[Event]) -> std::io::Result<()> {
    crate::rt::fs::write_atomically(path, |w| events.iter().try_for_each(|e| writeln!(w, "{e}")))
}

/// The reader's state: the tracker and the slots.
struct State {
    tracker: Tracker,
    slots: Vec<Slot>,
    by_tid: crate::trace::watch::FastMap<i32, usize>,
    /// Threads found by their name or in `/proc` whose events the kernel does not trace yet.
    untraced: Vec<i32>,
    /// Watched threads that exited: their ids may be given to strangers, never adopted.
    exited: std::collections::HashSet<i32, foldhash::fast::RandomState>,
    /// `--explain`: the recent events and the explanations so far.
    explaining: Option<Explaining>,
}

/// At most this many late periods are explained and kept (the latest largest).
const MAX_EXPLAINED: usize = 100;

/// `--explain` while watching: every CPU's recent events and the late periods explained.
#[derive(Debug)]
struct Explaining {
    ask: Explain,
    /// The traced kernel's system call numbers.
    arch: Arch,
    recent: crate::trace::period::Recent,
    /// The largest wakeups so far (ascending, at most `worst` long).
    top: Vec<i64>,
    /// Wakeups above the threshold.
    over: u64,
    /// Responses past their deadline (or `--max-response`).
    late_responses: u64,
    done: Vec<crate::trace::Explanation>,
    /// When the watch began, and the time spent explaining: a tenth of the run (plus 50 ms) is
    /// what explanations may cost; past it late periods are counted, not explained.
    began: Instant,
    spent: Duration,
    skipped: u64,
}

impl Explaining {
    fn new(ask: Explain, arch: Arch) -> Explaining {
        Explaining {
            ask,
            arch,
            recent: Default::default(),
            top: Vec::new(),
            over: 0,
            late_responses: 0,
            done: Vec::new(),
            began: Instant::now(),
            spent: Duration::ZERO,
            skipped: 0,
        }
    }

    /// Explains period `p` of `slot` (recorded as its last period) when it was late: a wakeup
    /// above the threshold or among the worst, a response past `deadline` or `max_response`.
    fn consider(&mut self, index: usize, slot: &Slot, p: &Period, deadline: Option<i64>, max_response: Option<i64>) {
        let Some(wakeup) = p.wakeup_ns else { return };
        let over = self.ask.threshold_ns.is_some_and(|t| wakeup > t);
        self.over += over as u64;
        let worst = self.ask.worst > 0 && (self.top.len() < self.ask.worst || wakeup > self.top[0]);
        if worst {
            self.top.push(wakeup);
            self.top.sort_unstable();
            if self.top.len() > self.ask.worst {
                self.top.remove(0);
            }
        }
        let deadline = deadline.filter(|d| *d != NO_DEADLINE);
        let limit = match (deadline, max_response) {
            (Some(d), Some(m)) => Some(d.min(m)),
            (d, m) => d.or(m),
        };
        let late_response = p.response_ns.zip(limit).is_some_and(|(r, l)| r > l);
        self.late_responses += late_response as u64;
        if !(over || worst || late_response) {
            return;
        }
        let late = crate::trace::period::Late {
            thread: index,
            cycle: slot.figures.periods.saturating_sub(1),
            tid: p.tid,
            cpu: p.cpu,
            release_ns: p.release_ns,
            wakeup_ns: wakeup,
            response_ns: p.response_ns.filter(|_| late_response),
            deadline_ns: deadline.or(max_response),
            syscalls: self.arch,
        };
        if self.spent > self.began.elapsed() / 10 + Duration::from_millis(50) {
            self.skipped += 1;
            return;
        }
        let took = Instant::now();
        let policy_of = crate::trace::explain::policy_of;
        let e = if late_response {
            crate::trace::period::explain_response(&late, &self.recent, &policy_of)
        } else {
            crate::trace::period::explain_wakeup(&late, &self.recent, &policy_of)
        };
        self.spent += took.elapsed();
        self.done.push(e);
        if self.done.len() > 2 * MAX_EXPLAINED {
            self.trim();
        }
    }

    /// Keeps the largest [`MAX_EXPLAINED`] (lateness: a response past its deadline by how much
    /// it overran, a wakeup by its latency).
    fn trim(&mut self) {
        let lateness = |e: &crate::trace::Explanation| e.latency_ns - e.work.unwrap_or(0);
        self.done.sort_by_key(|e| std::cmp::Reverse(lateness(e)));
        self.done.truncate(MAX_EXPLAINED);
    }

    /// The explanations, largest first, and how the explaining went.
    fn finish(
        mut self,
        run: &WatchRun,
        missing: &[String],
    ) -> (Vec<crate::trace::Explanation>, crate::trace::ExplainSummary) {
        self.trim();
        for e in &mut self.done {
            e.lost_events = run.lost_events;
        }
        let summary = crate::trace::ExplainSummary {
            threshold_ns: self.ask.threshold_ns,
            worst: self.ask.worst,
            unavailable: None,
            instance: Some(run.instance.clone()),
            buffer_kb: BUFFER_KB,
            missing_events: missing.to_vec(),
            lost_events: run.lost_events,
            over_threshold: self.over + self.late_responses,
            explained: self.done.len(),
            skipped_for_time: self.skipped,
        };
        (self.done, summary)
    }
}

impl Reader {
    /// Watches `tid` in the next free slot (once; kernel threads never; beyond the capacity,
    /// counted as dropped).
    fn add(&self, state: &mut State, tid: i32, comm: Option<&str>) {
        // rtlab's own threads are never found by a process, a name or a command: watching its
        // own reads feeds back on itself. (`--stages` names its probe threads: Target::Threads.)
        let own = !matches!(self.plan.target, Target::Threads(_))
            && process::process_of(tid) == Some(std::process::id() as i32);
        if state.by_tid.contains_key(&tid) || state.exited.contains(&tid) || own || process::is_kernel_thread(tid) {
            return;
        }
        if state.slots.len() >= self.plan.capacity {
            self.shared.dropped.fetch_add(1, Relaxed);
            state.by_tid.insert(tid, usize::MAX);
            return;
        }
        let comm = comm.map(String::from).or_else(|| process::comm(tid)).unwrap_or_default();
        let index = state.slots.len();
        state.by_tid.insert(tid, index);
        state.tracker.watch(tid);
        if let Some(w) = self.sinks.work.get(index).and_then(|w| w.as_ref()) {
            if let Some(p) = self.plan.period_ns.filter(|_| self.plan.deadline_ns.is_none()) {
                w.set_deadline(p);
            }
        }
        let sched = crate::rt::sched::of_thread(tid).unwrap_or(SchedParams::simple(Policy::Other, 0));
        if let Ok(mut s) = self.shared.statuses.lock() {
            s.push(ThreadStatus {
                index,
                cpu: None,
                sched,
                interval_ns: self.plan.period_ns.unwrap_or(0),
                tid,
                identity: Some(format!("{comm}:{tid}")),
            });
        }
        state.slots.push(Slot {
            tid,
            cadence: Cadence::new(self.plan.period_ns),
            learner: Learner::new(self.arch),
            pending: Vec::new(),
            jobs: None,
            last_release: None,
            figures: WatchThread { tid, process: process::process_of(tid), comm, ..Default::default() },
            cpus: Vec::new(),
            preemptors: HashMap::new(),
            sched: crate::rt::sched::of_thread(tid).ok(),
            started: process::start_time(tid),
            added_ns: clock::now(ClockId::MONOTONIC),
        });
    }

    /// Reads the live threads' scheduling again (a program sets its threads' policy after it
    /// creates them); the live view shows it.
    fn resched(&self, state: &mut State) {
        let Ok(mut statuses) = self.shared.statuses.lock() else { return };
        for (slot, status) in state.slots.iter_mut().zip(statuses.iter_mut()) {
            if let Ok(s) = crate::rt::sched::of_thread(slot.tid) {
                slot.sched = Some(s);
                status.sched = s;
            }
        }
    }

    /// Marks watched thread `tid` exited when another task has its id now (a different start
    /// time): its exit event was lost, and nothing of the stranger is the watched thread's.
    fn forget_replaced(&self, state: &mut State, tid: i32) {
        let Some(&i) = state.by_tid.get(&tid).filter(|i| **i != usize::MAX) else { return };
        let slot = &mut state.slots[i];
        let now = process::start_time(tid);
        if !slot.figures.exited && now.is_some() && now != slot.started {
            slot.figures.exited = true;
            state.exited.insert(tid);
        }
    }

    /// The threads the target names now; none once `-p PID`'s process is gone (its PID may
    /// be a stranger's).
    fn target_threads(&self) -> Vec<i32> {
        match (&self.plan.target, self.identity) {
            (Target::Process(pid), Some(started)) if process::start_time(*pid) != Some(started) => Vec::new(),
            (target, _) => threads_now(target),
        }
    }

    /// Tells the pipeline when nothing is left to watch: every thread exited (and the command).
    fn check_gone(&self, state: &State) {
        let child_alive = self.child.as_ref().is_some_and(|c| c.lock().is_ok_and(|c| !c.exited()));
        // A zombie has ended: only its parent's wait is missing.
        let watching = state.slots.iter().any(|s| !s.figures.exited && process::alive(s.tid));
        let waits = matches!(self.plan.target, Target::Comm(_)) && state.slots.is_empty();
        if !child_alive && !watching && !waits && (self.child.is_some() || !state.slots.is_empty()) {
            self.shared.gone.store(true, Relaxed);
        }
    }

    /// Acts on what the tracker concluded.
    fn notes(&self, state: &mut State, recs: &mut Recorders<'_>, notes: &mut Vec<Note>) {
        for note in notes.drain(..) {
            match note {
                Note::Period(p) => {
                    if state.exited.contains(&p.tid) {
                        continue;
                    }
                    if let Some(&i) = state.by_tid.get(&p.tid).filter(|i| **i != usize::MAX) {
                        let slot = &mut state.slots[i];
                        if slot.jobs.is_none() {
                            slot.learner.observe(&p);
                        }
                        slot.pending.push(*p);
                        self.flush(slot, i, recs, false, state.explaining.as_mut());
                    }
                }
                Note::Forked { parent, child, comm, ts_ns } => {
                    // A lost exit event must not let a stranger with the parent's id in; and a
                    // task created with a watched id after that id was watched is a stranger.
                    self.forget_replaced(state, parent);
                    if let Some(&i) = state.by_tid.get(&child).filter(|i| **i != usize::MAX) {
                        if ts_ns > state.slots[i].added_ns {
                            state.slots[i].figures.exited = true;
                            state.exited.insert(child);
                        }
                        continue;
                    }
                    let ours = match &self.plan.target {
                        Target::Process(_) | Target::Command(_) => {
                            state.by_tid.contains_key(&parent) && !state.exited.contains(&parent)
                        }
                        Target::Comm(name) => *name == comm,
                        Target::Threads(_) => false,
                    };
                    if ours {
                        self.add(state, child, Some(&comm));
                        // A process's and a command's new threads are traced by the kernel
                        // from their creation (event-fork); others are added now.
                        if matches!(self.plan.target, Target::Comm(_)) {
                            state.untraced.push(child);
                        }
                    }
                }
                Note::Renamed { tid, comm } => {
                    // An exec of a stranger given a watched id whose exit event was lost.
                    self.forget_replaced(state, tid);
                    if state.exited.contains(&tid) {
                        continue;
                    }
                    if let Some(&i) = state.by_tid.get(&tid).filter(|i| **i != usize::MAX) {
                        state.slots[i].figures.comm = comm.to_string();
                        self.rename(i, &comm, tid);
                    } else if matches!(&self.plan.target, Target::Comm(name) if *name == comm) {
                        self.add(state, tid, Some(&comm));
                        state.untraced.push(tid);
                    }
                }
                Note::Exited(tid) => {
                    state.exited.insert(tid);
                    if let Some(&i) = state.by_tid.get(&tid).filter(|i| **i != usize::MAX) {
                        state.slots[i].figures.exited = true;
                    }
                }
            }
        }
    }

    fn rename(&self, index: usize, comm: &str, tid: i32) {
        if let Ok(mut s) = self.shared.statuses.lock() {
            if let Some(st) = s.get_mut(index) {
                st.identity = Some(format!("{comm}:{tid}"));
            }
        }
    }

    /// Records the slot's pending periods as jobs once its shape is known (or, at the end or
    /// when enough periods showed no steady timer, with what is known).
    fn flush(&self, slot: &mut Slot, index: usize, recs: &mut Recorders<'_>, end: bool, x: Option<&mut Explaining>) {
        if slot.jobs.is_none() {
            if slot.pending.is_empty() {
                return;
            }
            let last = end || slot.pending.len() >= PENDING_MAX;
            let Some((shape, cadence)) = slot.learner.decide(self.plan.period_ns, last) else { return };
            self.decided(slot, index, &shape, cadence);
            slot.jobs = Some(Assembler::new(shape, self.arch));
        }
        let mut jobs = Vec::new();
        if let Some(assembler) = slot.jobs.as_mut() {
            for p in std::mem::take(&mut slot.pending) {
                assembler.push(p, &mut jobs);
            }
            if end {
                assembler.finish(&mut jobs);
            }
            slot.figures.jobs.before_first_release = assembler.before_first_release;
        }
        self.record_all(slot, index, recs, jobs, x);
    }

    /// The slot's shape is known: its kind and evidence, and (a timer-periodic thread only)
    /// the period learnt and the deadline from it.
    fn decided(&self, slot: &mut Slot, index: usize, shape: &Shape, cadence: Cadence) {
        slot.figures.kind = shape.name().into();
        slot.figures.evidence = shape.evidence(&slot.learner);
        slot.cadence = cadence;
        let period = match shape {
            Shape::TimerPeriodic(_) => slot.cadence.period_ns(),
            _ => self.plan.period_ns,
        };
        let Some(period) = period else { return };
        if let Some(w) = self.sinks.work.get(index).and_then(|w| w.as_ref()) {
            if self.plan.deadline_ns.is_none() {
                w.set_deadline(period);
            }
        }
        if let Some(s) = self.shared.statuses.lock().ok().as_mut().and_then(|s| s.get_mut(index)) {
            s.interval_ns = period;
        }
    }

    /// Records the slot's finished jobs.
    fn record_all(
        &self,
        slot: &mut Slot,
        index: usize,
        recs: &mut Recorders<'_>,
        jobs: Vec<Job>,
        mut x: Option<&mut Explaining>,
    ) {
        for job in jobs {
            self.record_times(slot, &job);
            if !job.woke {
                continue;
            }
            self.record(slot, index, recs, &job.period);
            if let Some(x) = x.as_deref_mut() {
                let deadline = self.sinks.work.get(index).and_then(|w| w.as_ref()).map(|w| w.spec().deadline_ns);
                x.consider(index, slot, &job.period, deadline, self.sinks.max_response_ns);
            }
        }
    }

    /// Adds a job's split (running, waiting, blocked and on what) to the slot's figures, and
    /// an event loop's iteration (its busy time; a stall beyond `--stall`).
    fn record_times(&self, slot: &mut Slot, job: &Job) {
        let event_loop = matches!(slot.shape(), Some(Shape::EventLoop { .. }));
        let f = &mut slot.figures;
        f.jobs.inner_wakeups += u64::from(job.resumes);
        if let (Some(waiting), true) = (job.waiting_ns(), job.woke) {
            f.jobs.completed += 1;
            f.jobs.running_ns += job.period.running_ns;
            f.jobs.waiting_ns += waiting;
            f.jobs.blocked_ns += job.blocked_ns;
            f.jobs.blocked_max_ns = f.jobs.blocked_max_ns.max(job.blocked_ns);
            for (on, ns) in &job.blocked {
                match f.blocked_on.iter_mut().find(|b| b.on == *on) {
                    Some(b) => {
                        b.ns += ns;
                        b.max_ns = b.max_ns.max(*ns);
                        b.jobs += 1;
                    }
                    None => f.blocked_on.push(BlockedOn { on: on.clone(), ns: *ns, max_ns: *ns, jobs: 1 }),
                }
            }
        }
        if !event_loop {
            return;
        }
        let l = f
            .event_loop
            .get_or_insert_with(|| EventLoop { stall_threshold_ns: self.plan.stall_ns, ..Default::default() });
        l.iterations += 1;
        l.found_waiting += u64::from(!job.woke);
        let Some(busy) = job.busy_ns() else { return };
        l.busy_ns += busy;
        l.busy_max_ns = l.busy_max_ns.max(busy);
        if busy <= l.stall_threshold_ns {
            return;
        }
        l.stalls += 1;
        fn share<S: AsRef<str>>(v: &[(S, i64)]) -> Vec<Share> {
            v.iter().take(5).map(|(name, ns)| Share { name: name.as_ref().to_string(), ns: *ns }).collect()
        }
        let p = &job.period;
        l.worst_stalls.push(Stall {
            at_ns: p.release_ns - self.start_ns,
            busy_ns: busy,
            running_ns: p.running_ns,
            waiting_ns: job.waiting_ns().unwrap_or(0),
            blocked_ns: job.blocked_ns,
            wakeup_ns: p.wakeup_ns.filter(|_| job.woke),
            waker: p.waker.as_ref().filter(|_| job.woke).map(|w| w.to_string()),
            preempted_by: share(&p.preemptors),
            interrupts: share(&p.interrupts),
            blocked_on: share(&job.blocked),
        });
        if l.worst_stalls.len() > STALLS_KEPT {
            let shortest = (0..l.worst_stalls.len()).min_by_key(|&i| l.worst_stalls[i].busy_ns).unwrap_or(0);
            l.worst_stalls.remove(shortest);
        }
    }

    /// Records one job (its release, and the job's totals) into the slot's cells and figures.
    fn record(&self, slot: &mut Slot, i: usize, recs: &mut Recorders<'_>, p: &Period) {
        let periodic = matches!(slot.shape(), Some(Shape::TimerPeriodic(_)));
        let f = &mut slot.figures;
        f.unseen_wakeups += u64::from(p.unseen);
        let Some(wakeup) = p.wakeup_ns else {
            f.incomplete += 1;
            return;
        };
        let at = p.release_ns - self.start_ns;
        // A relative sleeper's release is its last wakeup plus the period: it never skips one.
        // Skipped: the expiries the program's schedule passed over (its armed expiries jump),
        // not the periods it ran through without sleeping; only a timer-periodic thread has a
        // schedule to skip.
        let skipped = match (periodic && p.timer && !p.relative, p.previous_armed_ns.or(slot.last_release)) {
            (true, Some(prev)) => slot.cadence.skipped(p.release_ns - prev),
            _ => 0,
        };
        if p.timer {
            slot.last_release = Some(p.release_ns);
            f.timer_releases += 1;
        } else {
            f.event_releases += 1;
        }
        f.periods += 1;
        recs.wakeup[i].record(wakeup, at, skipped);
        match p.response_ns {
            Some(response) => recs.work[i].record(wakeup, response, response - wakeup, at, skipped),
            None => {
                // It exited (or the run ended) before it blocked again: a wakeup, no response.
                f.unfinished += 1;
                if let Some(r) = self.sinks.rings.get(i).and_then(|r| r.as_ref()) {
                    r.push_without_response(at, wakeup);
                }
            }
        }
        self.record_stages(f, i, recs, p, at);
        if let Some(s) = p.slack_ns {
            f.timer_slack_min_ns = Some(f.timer_slack_min_ns.map_or(s, |m| m.min(s)));
            f.timer_slack_max_ns = Some(f.timer_slack_max_ns.map_or(s, |m| m.max(s)));
        }
        if p.preempted_ns > 0 {
            f.preempted_ns += p.preempted_ns;
            f.preempted_max_ns = f.preempted_max_ns.max(p.preempted_ns);
            f.preempted_periods += 1;
            for (who, ns) in &p.preemptors {
                let e = slot.preemptors.entry(who.to_string()).or_default();
                e.0 += ns;
                e.1 += 1;
            }
        }
        if !slot.cpus.contains(&p.cpu) {
            slot.cpus.push(p.cpu);
        }
    }

    /// A timer release's three stages (equal counts by construction), and the stage limits.
    fn record_stages(&self, f: &mut WatchThread, i: usize, recs: &mut Recorders<'_>, p: &Period, at: i64) {
        if let (true, Some(irq), Some(thr), Some(wakeup)) = (p.timer, p.irq_ns, p.thread_ns, p.wakeup_ns) {
            for (r, v) in [(&mut recs.irq[i], irq), (&mut recs.switch[i], thr), (&mut recs.user[i], wakeup)] {
                r.record(v, at, 0);
                // rtla's arithmetic: each sample truncated to whole µs before it is summed.
                r.record_cyclictest_us(v.div_euclid(1000));
            }
            let sources = &mut f.stage_sources;
            *if p.thread_by_first_event {
                &mut sources.thread_by_first_event
            } else {
                &mut sources.thread_by_switch
            } += 1;
        }
        let limits = self.plan.stop_at;
        if !p.stages_in_order() {
            f.stages_out_of_order += 1;
        }
        if let Some((stage, latency_ns)) = limits.hit(p) {
            recs.hits[i].fetch_add(1, Relaxed);
            f.stage_hits += 1;
            if !limits.continues && f.stop.is_none() {
                f.stop = Some(crate::result::watch::StageStop { stage: stage.into(), latency_ns, at_ns: at });
                self.sinks.stop.store(true, Relaxed);
            }
        }
    }

    /// The slot's outcome for the pipeline.
    fn outcome(&self, slot: &mut Slot, i: usize, recs: &Recorders<'_>) -> ThreadOutcome {
        let mut f = slot.figures.clone();
        f.period_ns = slot.cadence.period_ns();
        f.periodic = matches!(slot.shape(), Some(Shape::TimerPeriodic(_)));
        f.cpus = CpuSet::from_cpus(slot.cpus.iter().copied()).to_string();
        let mut who: Vec<Preemptor> = slot
            .preemptors
            .iter()
            .map(|(task, (ns, periods))| Preemptor { task: task.clone(), ns: *ns, periods: *periods })
            .collect();
        who.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.task.cmp(&b.task)));
        who.truncate(10);
        f.preemptors = who;
        let sched = crate::rt::sched::of_thread(slot.tid).ok().or(slot.sched);
        // cyclictest's truncated-µs mean belongs to its own clock reads, not to the wakeups.
        let exact = |mut s: crate::measure::stats::Summary| {
            s.sum_us_truncated = None;
            s
        };
        let summary = exact(recs.wakeup[i].finish());
        ThreadOutcome {
            series: None,
            cpu_ns: None,
            plan: ThreadPlan {
                name: Some(f.comm.clone()),
                interval_ns: f.period_ns.unwrap_or(0),
                ..self.plan.slots().swap_remove(i)
            },
            sched,
            cpus_allowed: None,
            last_cpu: slot.cpus.last().copied().or_else(|| process::last_cpu_of(slot.tid)),
            timer_slack_ns: process::timer_slack_of(slot.tid),
            outcome: LoopOutcome { iterations: summary.cycles, drift_ns: 0, break_hit: None, start_ns: self.start_ns },
            summary,
            drift_ns: None,
            tid: slot.tid,
            samples_lost: 0,
            warnings: Vec::new(),
            noise: None,
            work: Some(recs.work[i].finish()),
            watch: Some(WatchFigures {
                // The stages keep rtla's sums (each sample truncated to µs).
                irq: recs.irq[i].finish(),
                switch: recs.switch[i].finish(),
                user: recs.user[i].finish(),
                thread: f,
            }),
        }
    }
}
