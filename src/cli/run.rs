//! `rtlab run`: arguments, defaults, and validation into a [`RunOptions`].

use super::parse::{self, Warmup};
use super::tasks::TaskSpec;
use super::UsageError;
use crate::commands::run::RunOptions;
use crate::measure::histogram::Layout;
use crate::measure::probe::{ClockKind, Method};
use crate::measure::simulate::Simulation;
use crate::measure::work::{WorkKind, WorkSpec, DEFAULT_MISS_WINDOW, MAX_MISS_WINDOW};
use crate::probes::{os_thread, ProbeSpec, ThreadPlan};
use crate::result::verdict::MissLimit;
use crate::result::Config;
use crate::rt::affinity::{self, CpuSet};
use crate::rt::sched::{Policy, SchedParams};
use crate::session::Plan;
use crate::units::Unit;
use clap::Args;
use std::path::PathBuf;

/// Default SCHED_FIFO priority of `rtlab run`: rtla timerlat's, above threaded IRQs (50) and
/// below the kernel's own per-CPU watchdog/migration threads (99).
pub const DEFAULT_PRIORITY: u32 = 95;

/// The long help of `rtlab run`: what it does and its defaults.
pub const LONG_ABOUT: &str = "Measure wakeup latency on periodic threads (cyclictest's method, done right).

Defaults: one thread per online CPU, each pinned to its CPU, SCHED_FIFO priority 95, a 1 ms \
period on absolute clock_nanosleep(CLOCK_MONOTONIC), memory locked (mlockall), \
/dev/cpu_dma_latency held at 0, timer slack 1 ns, run until Ctrl-C (or -l/-D). \
Times without a unit are µs (-i, -d, --max-latency, -b, --dl-*) or seconds (-D). \
Missed periods are counted, not hidden; percentiles come from a histogram that drops nothing. \
Without RT privileges rtlab measures anyway with what it may use and says why (--strict: error).

Exit codes: 0 ok, 1 failure, 2 bad usage, 3 a sample exceeded --max-latency or -b.";

/// The deadline options `rtlab run` and `rtlab watch` share.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Work, deadlines and task sets")]
pub struct DeadlineArgs {
    /// Deadline relative to the release, shorter or longer than the period [default: the period]
    #[arg(long = "deadline", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    pub deadline: Option<i64>,

    /// Count the worst number of deadline misses in any K consecutive releases [default: 1000]
    #[arg(long = "miss-window", value_name = "K", value_parser = clap::value_parser!(u32).range(1..=MAX_MISS_WINDOW as i64))]
    pub miss_window: Option<u32>,

    /// Verdict: fail (exit 3) if any response time exceeds this (plain number = µs)
    #[arg(long = "max-response", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    pub max_response: Option<i64>,

    /// Verdict: fail (exit 3) on more than N deadline misses, or more than M in any K consecutive releases (M/K)
    #[arg(long = "max-misses", value_name = "N|M/K", value_parser = MissLimit::parse)]
    pub max_misses: Option<MissLimit>,
}

impl DeadlineArgs {
    /// K of the worst-window count: `--miss-window`, or the K of `--max-misses M/K`, which
    /// must agree when both are given.
    pub fn window(&self) -> Result<u32, UsageError> {
        match (self.miss_window, self.max_misses) {
            (Some(w), Some(MissLimit::Window { k, .. })) if w != k => Err(usage(format!(
                "--miss-window {w} and --max-misses .../{k} count different windows; give one K (or drop --miss-window)"
            ))),
            (Some(w), _) => Ok(w),
            (None, Some(MissLimit::Window { k, .. })) => Ok(k),
            (None, _) => Ok(DEFAULT_MISS_WINDOW),
        }
    }
}

/// `rtlab run` arguments (see [`LONG_ABOUT`]).
#[derive(Args, Debug, Clone)]
#[command(
    before_help = "Examples:\n  rtlab run -D 1m --json result.json\n  rtlab run -t1 -p80 -i200 -l10000 --max-latency 100\n  rtlab run --policy deadline --dl-runtime 100us -i 1ms -D 10s\n  rtlab run -D 30s --explain --json r.json && rtlab report r.json"
)]
pub struct RunArgs {
    /// Measuring threads; bare -t: one per CPU of the affinity set [default: one per online CPU]
    #[arg(short = 't', long = "threads", value_name = "N", num_args = 0..=1, value_parser = parse::thread_count)]
    #[arg(help_heading = "Threads and scheduling")]
    pub threads: Option<Option<u32>>,

    /// Pin threads round-robin to these CPUs (0, 1,3, 0-3,6); bare -a: all online [default: all online]
    #[arg(short = 'a', long = "affinity", value_name = "CPUSET", num_args = 0..=1, value_parser = parse::cpuset)]
    #[arg(help_heading = "Threads and scheduling")]
    pub affinity: Option<Option<CpuSet>>,

    /// One thread per CPU, pinned, all at the same priority (cyclictest -S)
    #[arg(short = 'S', long = "smp")]
    #[arg(help_heading = "Threads and scheduling")]
    pub smp: bool,

    /// Pin the reporting (main) thread to these CPUs
    #[arg(long = "mainaffinity", value_name = "CPUSET", value_parser = parse::cpuset)]
    #[arg(help_heading = "Threads and scheduling")]
    pub main_affinity: Option<CpuSet>,

    /// Scheduling policy [default: fifo]
    #[arg(long, value_name = "POLICY", ignore_case = true, value_parser = parse::policy())]
    #[arg(help_heading = "Threads and scheduling")]
    pub policy: Option<Policy>,

    /// Priority for fifo/rr, 1-99 [default: 95]
    #[arg(short = 'p', long = "priority", value_name = "PRIO", allow_negative_numbers = true, value_parser = parse::priority)]
    #[arg(help_heading = "Threads and scheduling")]
    pub priority: Option<u32>,

    /// Thread i gets priority PRIO - i
    #[arg(long)]
    #[arg(help_heading = "Threads and scheduling")]
    pub priospread: bool,

    /// SCHED_DEADLINE runtime [default: a tenth of the period]
    #[arg(long = "dl-runtime", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    #[arg(help_heading = "Threads and scheduling")]
    pub dl_runtime: Option<i64>,

    /// SCHED_DEADLINE relative deadline [default: the period]
    #[arg(long = "dl-deadline", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    #[arg(help_heading = "Threads and scheduling")]
    pub dl_deadline: Option<i64>,

    /// SCHED_DEADLINE period [default: the thread's interval]
    #[arg(long = "dl-period", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    #[arg(help_heading = "Threads and scheduling")]
    pub dl_period: Option<i64>,

    /// Period (plain number = µs; 250us, 1ms)
    #[arg(short = 'i', long = "interval", value_name = "TIME", default_value = "1000", allow_negative_numbers = true, value_parser = parse::interval)]
    #[arg(help_heading = "Timing")]
    pub interval: i64,

    /// Thread i's interval is interval + i·distance
    #[arg(short = 'd', long = "distance", value_name = "TIME", default_value = "0", allow_negative_numbers = true, value_parser = parse::time_or_zero)]
    #[arg(help_heading = "Timing")]
    pub distance: i64,

    /// Every thread records N samples, then the run ends
    #[arg(short = 'l', long = "loops", value_name = "N", allow_negative_numbers = true, value_parser = parse::positive_count)]
    #[arg(help_heading = "Timing")]
    pub loops: Option<u64>,

    /// Run length: 30, 30s, 1.5m, 2h, 1d (plain number = seconds)
    #[arg(short = 'D', long = "duration", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::duration)]
    #[arg(help_heading = "Timing")]
    pub duration: Option<std::time::Duration>,

    /// Discard the first cycles (1000) or time (2s) of every thread from the statistics
    #[arg(long = "warm-up", value_name = "CYCLES|TIME", allow_negative_numbers = true, value_parser = parse::warmup)]
    #[arg(help_heading = "Timing")]
    pub warmup: Option<Warmup>,

    /// How to sleep: abs (clock_nanosleep TIMER_ABSTIME), rel (-r), nanosleep (-s), sleep (std::thread::sleep), posix-timer (-x)
    #[arg(long, value_enum, default_value = "abs")]
    #[arg(help_heading = "Timing")]
    pub method: Method,

    /// Clock to read and sleep on
    #[arg(long, value_enum, default_value = "monotonic")]
    #[arg(help_heading = "Timing")]
    pub clock: ClockKind,

    /// Lock memory with mlockall (on by default)
    #[arg(short = 'm', long = "mlockall", conflicts_with = "no_mlockall")]
    #[arg(help_heading = "Machine")]
    pub mlockall: bool,

    /// Do not lock memory
    #[arg(long = "no-mlockall")]
    #[arg(help_heading = "Machine")]
    pub no_mlockall: bool,

    /// Hold /dev/cpu_dma_latency at US microseconds for the run
    #[arg(long = "latency", value_name = "US", default_value = "0", allow_negative_numbers = true, value_parser = parse::dma_latency)]
    #[arg(help_heading = "Machine")]
    pub dma_latency: i32,

    /// Do not touch /dev/cpu_dma_latency
    #[arg(long = "no-dma-latency")]
    #[arg(help_heading = "Machine")]
    pub no_dma_latency: bool,

    /// Disable CPU idle states deeper than N on the measured CPUs for the run (-1: all), restored after
    #[arg(long = "deepest-idle-state", value_name = "N", allow_negative_numbers = true, value_parser = parse::idle_state)]
    #[arg(help_heading = "Machine")]
    pub deepest_idle_state: Option<i32>,

    /// No live view; print only the final summary
    #[arg(short = 'q', long = "quiet")]
    #[arg(help_heading = "Output")]
    pub quiet: bool,

    /// Show nanoseconds instead of microseconds
    #[arg(short = 'N', long = "nsecs")]
    #[arg(help_heading = "Output")]
    pub nsecs: bool,

    /// Predict the largest latency a run of DURATION would show (e.g. 24h), with a 90 % interval,
    /// from this run's per-second maxima (extreme value theory; none where the data do not allow it)
    #[arg(long = "predict", value_name = "DURATION", allow_hyphen_values = true, value_parser = parse::horizon)]
    #[arg(help_heading = "Output")]
    pub predict: Option<i64>,

    /// Write the RunResult (schema rtlab.run/1) to FILE, atomically; - for stdout
    #[arg(long = "json", value_name = "FILE")]
    #[arg(help_heading = "Output")]
    pub json: Option<PathBuf>,

    /// Histogram bucket width (plain number = µs)
    #[arg(long = "bucket-size", value_name = "TIME", default_value = "1us", allow_negative_numbers = true, value_parser = parse::latency)]
    #[arg(help_heading = "Output")]
    pub bucket_size: i64,

    /// End of the linear histogram region; beyond it buckets are 1/32 octave wide (nothing is dropped)
    #[arg(long = "range", value_name = "TIME", default_value = "10ms", allow_negative_numbers = true, value_parser = parse::latency)]
    #[arg(help_heading = "Output")]
    pub range: i64,

    /// Verdict: fail (exit 3) if any sample exceeds this (plain number = µs)
    #[arg(long = "max-latency", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    #[arg(help_heading = "Verdict and tracing")]
    pub max_latency: Option<i64>,
    /// Explain late samples: record the measured CPUs' kernel events in rtlab's own tracefs
    /// instance and split each sample above TIME (default: --max-latency, else the worst
    /// sample) into timer delay, IRQs, softirqs, NMIs, tasks, the switch and unaccounted time
    #[arg(long = "explain", value_name = "TIME", num_args = 0..=1, require_equals = true, value_parser = parse::latency)]
    #[arg(help_heading = "Verdict and tracing")]
    pub explain: Option<Option<i64>>,
    /// Also explain the N largest samples, whatever their size (implies --explain)
    #[arg(long = "explain-worst", value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
    #[arg(help_heading = "Verdict and tracing")]
    pub explain_worst: Option<u16>,

    /// Stop the run at the first sample above this (plain number = µs); exit 3
    #[arg(short = 'b', long = "breaktrace", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    #[arg(help_heading = "Verdict and tracing")]
    pub breaktrace: Option<i64>,

    /// With -b: write a marker into tracefs trace_marker and stop tracing
    #[arg(long)]
    #[arg(help_heading = "Verdict and tracing")]
    pub tracemark: bool,

    /// Treat any downgrade (policy, priority, mlockall, affinity, dma latency) as an error
    #[arg(long)]
    #[arg(help_heading = "Machine")]
    pub strict: bool,

    /// Background load beside the measurement (repeatable), e.g. cpu:workers=2,policy=idle;
    /// every KIND and key: `rtlab load --help`
    #[arg(long = "load", value_name = "SPEC", value_parser = super::load::parse_spec)]
    #[arg(help_heading = "Background load")]
    pub loads: Vec<crate::load::LoadSpec>,

    /// Allow an RT-priority busy load on every CPU even with RT throttling disabled
    #[arg(long)]
    #[arg(help_heading = "Background load")]
    pub force: bool,

    /// With --json FILE: rewrite FILE with the results so far this often, so a crash loses at
    /// most one interval (end_reason "checkpoint"; exact as of the probes' last 1024 samples)
    #[arg(long = "checkpoint", value_name = "TIME", default_value = "60s", allow_negative_numbers = true, value_parser = parse::duration, requires = "json", conflicts_with = "no_checkpoint")]
    #[arg(help_heading = "Output")]
    pub checkpoint: std::time::Duration,

    /// Do not write checkpoints
    #[arg(long = "no-checkpoint")]
    #[arg(help_heading = "Output")]
    pub no_checkpoint: bool,

    /// Record every sample (thread, cycle, wake time, latency) into FILE (read it with
    /// `rtlab samples FILE --csv`); a writer that falls behind counts what it lost
    #[arg(long = "samples", value_name = "FILE")]
    #[arg(help_heading = "Output")]
    pub samples: Option<PathBuf>,

    /// An HdrHistogram interval log
    #[command(flatten)]
    pub hlog: super::hlog::HlogArgs,
    /// Read /proc, /sys and /dev under DIR for the doctor's findings instead of / (tests)
    #[arg(long = "sysroot", value_name = "DIR", hide = true)]
    pub sysroot: Option<PathBuf>,

    /// Where the periodic task runs, and the tokio probe's options
    #[command(flatten)]
    pub runtime: RuntimeArgs,

    /// Work after each wakeup, calibrated at start to take TIME on an undisturbed CPU (rt-app's
    /// run): response time, slack and deadline misses are measured (plain number = µs)
    #[arg(long = "work", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::work)]
    #[arg(help_heading = "Work, deadlines and task sets")]
    pub work: Option<i64>,

    /// What --work is fixed in: fixed (calibrated computation) or time (busy wall-clock time, rt-app's runtime)
    #[arg(long = "work-kind", value_enum, value_name = "KIND", requires = "work")]
    #[arg(help_heading = "Work, deadlines and task sets")]
    pub work_kind: Option<WorkKind>,

    /// Deadlines and their verdicts
    #[command(flatten)]
    pub deadlines: DeadlineArgs,

    /// Also trace each thread's timer interrupt and the switch to it (root, tracefs): per
    /// thread its IRQ, thread and wakeup latency (rtla timerlat's IRQ/Thr/Usr) in the summary,
    /// the result and the report
    #[arg(long = "stages")]
    #[arg(help_heading = "Verdict and tracing")]
    pub stages: bool,

    /// A periodic task (repeatable): name=ctl,period=1ms,work=200us,policy=fifo:80,cpu=1; keys: name, period,
    /// work, kind, deadline, policy, nice, cpu, offset, dl-runtime, dl-deadline, dl-period
    #[arg(long = "task", value_name = "SPEC")]
    #[arg(help_heading = "Work, deadlines and task sets")]
    pub tasks: Vec<String>,

    /// A task set in TOML: [[task]] tables with the keys of --task
    #[arg(long = "tasks", value_name = "FILE", conflicts_with = "tasks")]
    #[arg(help_heading = "Work, deadlines and task sets")]
    pub tasks_file: Option<PathBuf>,

    /// Run an rt-app use case (JSON, rt-app 1.0's grammar) unchanged: every event, its resources
    /// and hand-offs
    #[arg(long = "rt-app", value_name = "FILE", conflicts_with_all = ["tasks", "tasks_file"])]
    #[arg(help_heading = "Work, deadlines and task sets")]
    pub rt_app: Option<PathBuf>,

    /// Write rt-app's per-thread logs (rt-app's layout) into DIR, as global.logdir does
    #[arg(long = "rt-app-logs", value_name = "DIR", requires = "rt_app")]
    #[arg(help_heading = "Work, deadlines and task sets")]
    pub rt_app_logs: Option<PathBuf>,

    /// Simulated probe: seed:N or file:PATH (testing only)
    #[arg(long, value_name = "SPEC", hide = true, value_parser = parse::simulation)]
    pub simulate: Option<Simulation>,
}

impl RunOptions {
    /// Validates `rtlab run`'s arguments against each other and against this machine.
    pub fn from_cli(args: RunArgs) -> Result<RunOptions, UsageError> {
        args.validate()
    }
}

/// Where the periodic task runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RuntimeKind {
    /// OS threads with cyclictest's method (the default)
    Os,
    /// A task in a tokio runtime (timer wheel of 1 ms granularity)
    Tokio,
    /// A process in the Erlang VM (erl; timers of 1 ms granularity)
    Beam,
    /// An Ada program built with GNAT (gnatmake)
    Ada,
    /// A Go program (go build)
    Go,
    /// A Node.js program (timers of 1 ms granularity)
    Node,
    /// A Python asyncio program (python3; waits of 1 ms granularity)
    Python,
}

impl RuntimeKind {
    /// The name `--runtime` takes.
    pub fn name(self) -> &'static str {
        match self {
            RuntimeKind::Os => "os",
            RuntimeKind::Tokio => "tokio",
            RuntimeKind::Beam => "beam",
            RuntimeKind::Ada => "ada",
            RuntimeKind::Go => "go",
            RuntimeKind::Node => "node",
            RuntimeKind::Python => "python",
        }
    }

    /// The runtime measured through a program of its own language, if it is one.
    pub fn lang(self) -> Option<crate::probes::runtimes::Lang> {
        use crate::probes::runtimes::Lang;
        match self {
            RuntimeKind::Ada => Some(Lang::Ada),
            RuntimeKind::Go => Some(Lang::Go),
            RuntimeKind::Node => Some(Lang::Node),
            RuntimeKind::Python => Some(Lang::Python),
            _ => None,
        }
    }
}

/// `--runtime`: one runtime for `run`, a list for `sweep` (a newtype, so clap takes it as one value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runtimes(pub Vec<RuntimeKind>);

impl Runtimes {
    /// The first (for `run`, the only) runtime.
    pub fn first(&self) -> RuntimeKind {
        self.0.first().copied().unwrap_or(RuntimeKind::Os)
    }
}

/// Parses `--runtime os`, or a list `os,tokio,beam,ada,go,node,python` (each once).
pub fn runtimes(s: &str) -> Result<Runtimes, String> {
    let mut out = Vec::new();
    for name in s.split(',').map(str::trim) {
        let k = <RuntimeKind as clap::ValueEnum>::from_str(name, false)
            .map_err(|_| format!("runtime '{name}': use os, tokio, beam, ada, go, node or python"))?;
        if out.contains(&k) {
            return Err(format!("'{s}' gives {name} twice; list each runtime once"));
        }
        out.push(k);
    }
    Ok(Runtimes(out))
}

/// A method of a runtime's probe, checked against the runtime's list.
fn method_of(lang: crate::probes::runtimes::Lang, s: &str) -> Result<String, String> {
    lang.methods()
        .iter()
        .find(|m| **m == s)
        .map(|m| m.to_string())
        .ok_or_else(|| format!("{} method '{s}': use {}", lang.name(), lang.methods().join(", ")))
}

/// `--runtime` and the tokio probe's options.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Runtimes (tokio, the Erlang VM, Ada, Go, Node.js, Python)")]
pub struct RuntimeArgs {
    /// Where the periodic task runs: os, tokio, beam, ada, go, node, python (a list with rtlab sweep)
    #[arg(long = "runtime", value_name = "RUNTIME", default_value = "os", value_parser = runtimes)]
    pub runtime: Runtimes,

    /// Measure an OS thread beside the runtime (same period, policy, CPUs): how much of the
    /// runtime's lateness the OS shows too
    #[arg(long)]
    pub control: bool,

    /// How the Ada program waits: delay-until, delay (relative: drifts), task-delay-until
    #[arg(long, value_name = "METHOD", value_parser = |s: &str| method_of(crate::probes::runtimes::Lang::Ada, s))]
    pub ada_method: Option<String>,

    /// The Ada measuring task's priority (1-97) under FIFO_Within_Priorities (needs root)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=97))]
    pub ada_priority: Option<u32>,

    /// How the Go program waits: sleep-until, ticker, timer-reset
    #[arg(long, value_name = "METHOD", value_parser = |s: &str| method_of(crate::probes::runtimes::Lang::Go, s))]
    pub go_method: Option<String>,

    /// GOMAXPROCS for the Go program [default: the runtime's, one per CPU]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub gomaxprocs: Option<u32>,

    /// Lock the measuring goroutine to its OS thread (runtime.LockOSThread)
    #[arg(long)]
    pub go_lock_os_thread: bool,

    /// How the Node.js program waits: timeout-until, interval
    #[arg(long, value_name = "METHOD", value_parser = |s: &str| method_of(crate::probes::runtimes::Lang::Node, s))]
    pub node_method: Option<String>,

    /// How the Python program waits: sleep (asyncio.sleep to the deadline), call-at
    #[arg(long, value_name = "METHOD", value_parser = |s: &str| method_of(crate::probes::runtimes::Lang::Python, s))]
    pub python_method: Option<String>,

    /// CPU-bound workers inside an Ada, Go, Node.js or Python runtime
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub runtime_workers: Option<u16>,

    /// What they are: node loop|threads, python coroutines|threads [default: the first]
    #[arg(long, value_name = "KIND")]
    pub worker_kind: Option<String>,

    /// The gnatmake to build the Ada probe with [default: gnatmake on PATH]
    #[arg(long, value_name = "PATH")]
    pub gnatmake: Option<PathBuf>,

    /// The go to build the Go probe with [default: go on PATH]
    #[arg(long = "go", value_name = "PATH")]
    pub go_tool: Option<PathBuf>,

    /// The node to run the Node.js probe with [default: node on PATH]
    #[arg(long = "node", value_name = "PATH")]
    pub node_tool: Option<PathBuf>,

    /// The python3 to run the asyncio probe with [default: python3 on PATH]
    #[arg(long = "python3", value_name = "PATH")]
    pub python_tool: Option<PathBuf>,

    /// tokio runtime flavor
    #[arg(long, value_enum, default_value = "multi-thread")]
    pub tokio_flavor: crate::probes::tokio_task::Flavor,

    /// tokio worker threads (multi-thread) [default: one per online CPU]
    #[arg(long, value_name = "N", value_parser = parse::thread_count)]
    pub tokio_workers: Option<u32>,

    /// How the tokio task waits
    #[arg(long, value_enum, default_value = "sleep-until")]
    pub tokio_wait: crate::probes::tokio_task::Wait,

    /// With --tokio-wait interval: what a late tick does [default: burst]
    #[arg(long, value_enum)]
    pub missed_tick: Option<crate::probes::tokio_task::MissedTick>,

    /// tokio tasks that compute without ever yielding (they hold a worker thread)
    #[arg(long, value_name = "N", default_value = "0")]
    pub tokio_hogs: usize,

    /// spawn_blocking tasks that compute (on tokio's blocking pool)
    #[arg(long, value_name = "N", default_value = "0")]
    pub tokio_blocking: usize,

    /// The Erlang VM to run with --runtime beam [default: erl on PATH]
    #[arg(long, value_name = "PATH")]
    pub erl: Option<PathBuf>,

    /// How the Erlang process waits [default: send-interval]
    #[arg(long, value_enum)]
    pub beam_method: Option<crate::probes::beam::Method>,

    /// CPU-bound Erlang processes competing with the measuring one
    #[arg(long, value_name = "N")]
    pub beam_workers: Option<usize>,

    /// Priority of the measuring Erlang process [default: normal]
    #[arg(long, value_enum)]
    pub beam_probe_priority: Option<crate::probes::beam::Priority>,

    /// Priority of the CPU-bound Erlang processes [default: normal]
    #[arg(long, value_enum)]
    pub beam_worker_priority: Option<crate::probes::beam::Priority>,

    /// Flags for the VM, e.g. "+S 2 +sbwt none +sbt db" (recorded in the result)
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true, value_parser = super::beam::vm_args)]
    pub vm_args: Option<super::beam::VmArgs>,
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

impl RunArgs {
    fn validate(self) -> Result<RunOptions, UsageError> {
        let online = affinity::online_cpus();
        let runtime_probe = self.runtime_probe(&online)?;
        let policy = self.policy.unwrap_or(Policy::Fifo);
        let priority = parse::policy_priority(policy, self.priority, DEFAULT_PRIORITY).map_err(usage)?;
        self.check_flags(policy, &online)?;
        let layout = Layout::new(self.bucket_size as u64, self.range as u64).map_err(usage)?;
        let window = self.deadlines.window()?;
        let mut threads = self.os_threads(policy, priority, &online, layout, window)?;
        let (mut duration, mut mlockall) = (self.duration, !self.no_mlockall || self.mlockall);
        let mut align = None;
        let rt_app = self.rt_app_plan(&online)?;
        if let Some(r) = &rt_app {
            threads = r.threads.clone();
            duration = duration.or(r.use_case.duration);
            mlockall = r.use_case.lock_pages && !self.no_mlockall || self.mlockall;
            for why in &r.use_case.ignored {
                eprintln!("rtlab: warning: --rt-app: {}", crate::units::printable(why));
            }
            layout.check_memory(r.histograms()).map_err(|e| {
                usage(format!(
                    "--rt-app {}: its {} threads measure {} series (wakeups, jobs, hand-offs, lock waits, timers): {e}",
                    crate::units::printable(&r.file),
                    threads.len(),
                    r.histograms()
                ))
            })?;
        } else if let Some(set) = self.task_set(&online, SchedParams::simple(policy, priority))? {
            threads = set
                .tasks
                .iter()
                .enumerate()
                .map(|(i, t)| t.thread(i, self.warmup_cycles(t.period_ns), window))
                .collect();
            // Every task's schedule counts from one common start, offsets from there.
            align = Some(os_thread::Align::Threads { offset_ns: 0 });
            layout.check_memory(threads.len() * 3).map_err(usage)?;
        }
        self.check_work(threads.iter().any(|t| t.work.is_some()), self.method)?;
        let os = self.os_plan(threads, mlockall, align);
        let explain = self.explain_plan();
        let mut plan = Plan {
            loops: self.loops,
            duration,
            max_latency_ns: self.max_latency,
            max_response_ns: self.deadlines.max_response,
            max_misses: self.deadlines.max_misses,
            strict: self.strict,
            checkpoint: match (&self.json, self.no_checkpoint) {
                (Some(p), false) if p.as_os_str() != "-" => Some(self.checkpoint),
                _ => None,
            },
            sample_ring: (self.samples.is_some() || explain.is_some()).then_some(crate::session::SAMPLE_RING),
            explain,
            loads: self.loads.clone(),
            samples: self.samples.clone(),
            hlog: self.hlog.plan()?,
            doctor: Some(super::doctor::sysroot(self.sysroot.as_ref())?),
            ..Plan::new(ProbeSpec::Os(os), layout)
        };
        match runtime_probe {
            Some(probe) => plan.probe = probe,
            None => self.configure(&mut plan, rt_app),
        }
        Ok(RunOptions {
            plan,
            json: self.json,
            unit: if self.nsecs { Unit::Nanos } else { Unit::Micros },
            quiet: self.quiet,
            predict: self.predict,
        })
    }

    /// The checks of options alone and together, before anything is planned.
    fn check_flags(&self, policy: Policy, online: &CpuSet) -> Result<(), UsageError> {
        let sim = self.simulate.is_some();
        let deadline_given = self.dl_runtime.is_some() || self.dl_deadline.is_some() || self.dl_period.is_some();
        if deadline_given && policy != Policy::Deadline {
            return Err(usage("--dl-runtime/--dl-deadline/--dl-period need --policy deadline"));
        }
        if policy == Policy::Deadline && matches!(self.affinity, Some(Some(_))) {
            return Err(usage(
                "SCHED_DEADLINE threads cannot be pinned with -a: the kernel admits deadline tasks only with the \
                 affinity of their whole root domain; drop -a (or partition CPUs with cpusets)",
            ));
        }
        if self.tracemark && self.breaktrace.is_none() {
            return Err(usage(
                "--tracemark needs -b/--breaktrace US: the marker is written when that threshold is hit",
            ));
        }
        if let Some(Some(set)) = &self.affinity {
            check_online(set, online, "-a")?;
        }
        if let Some(set) = &self.main_affinity {
            check_online(set, online, "--mainaffinity")?;
        }
        if self.samples.as_ref().is_some_and(|p| p.as_os_str() == "-") {
            return Err(usage(
                "--samples -: a samples file is binary and cannot go to stdout; give a file name, e.g. --samples run.smp",
            ));
        }
        self.check_files()?;
        // Only -D bounds a run with an RT load: a starved probe may never reach its -l.
        let bounded = self.duration.is_some();
        crate::load::check_safety(&self.loads, bounded, self.force, &crate::rt::privileges::Privileges::current())
            .map_err(usage)?;
        if sim
            && self.loops.is_none()
            && self.duration.is_none()
            && self.simulate.as_ref().and_then(|s| s.thread_count()).is_none()
        {
            return Err(usage("--simulate seed:N needs -l or -D to know how many samples to make"));
        }
        Ok(())
    }

    /// The OS threads of `-t`/`-a`/`-i`/`-d`/`--policy`/`--work`: placed round robin over the
    /// CPUs, each with its interval, scheduling and work.
    fn os_threads(
        &self,
        policy: Policy,
        priority: u32,
        online: &CpuSet,
        layout: Layout,
        window: u32,
    ) -> Result<Vec<ThreadPlan>, UsageError> {
        let sim = self.simulate.is_some();
        // Thread placement: cpus for round robin, and the thread count.
        let cpus = match &self.affinity {
            Some(Some(set)) => set.clone(),
            _ => online.clone(),
        };
        let sim_threads = self.simulate.as_ref().and_then(|s| s.thread_count());
        let n = match (self.threads, self.smp) {
            (Some(Some(n)), _) => n as usize,
            _ => sim_threads.unwrap_or(cpus.len()),
        };
        if let (Some(k), true) = (sim_threads, sim) {
            if k != n {
                return Err(usage(format!(
                    "the simulation samples define {k} threads but -t asks for {n}; make them agree"
                )));
            }
        }
        let pinned = policy != Policy::Deadline;
        if self.priospread && !policy.is_realtime_priority() {
            return Err(usage(format!(
                "--priospread lowers RT priorities, but SCHED_{} has none; drop --priospread or use --policy fifo/rr",
                policy.name().to_uppercase()
            )));
        }
        let spread = self.priospread && !self.smp;
        if spread && policy.is_realtime_priority() && (n as u32) > priority {
            return Err(usage(format!(
                "--priospread with {n} threads from priority {priority} would go below 1; raise -p or use fewer threads"
            )));
        }

        layout.check_memory(if self.work.is_some() { n * 3 } else { n }).map_err(usage)?;
        let placed = os_thread::placement(n, pinned.then_some(&cpus));
        let mut threads = Vec::with_capacity(n);
        for (i, cpu) in placed.into_iter().enumerate() {
            let interval_ns = self
                .interval
                .checked_add(self.distance.checked_mul(i as i64).unwrap_or(i64::MAX))
                .filter(|v| *v <= 3_600_000_000_000)
                .ok_or_else(|| {
                    usage(format!(
                        "-d {} ns makes thread {i}'s interval longer than 1 h; use a smaller -d",
                        self.distance
                    ))
                })?;
            let sched = if policy == Policy::Deadline {
                self.deadline_sched(interval_ns)?
            } else {
                let p = if spread && policy.is_realtime_priority() { priority - i as u32 } else { priority };
                SchedParams::simple(policy, p)
            };
            threads.push(ThreadPlan {
                index: i,
                cpu,
                sched,
                interval_ns,
                warmup_cycles: self.warmup_cycles(interval_ns),
                name: None,
                work: self.work.map(|amount_ns| WorkSpec {
                    kind: self.work_kind.unwrap_or(WorkKind::Fixed),
                    amount_ns,
                    deadline_ns: self.deadlines.deadline.unwrap_or(interval_ns),
                    miss_window: window,
                }),
                offset_ns: 0,
            });
        }
        Ok(threads)
    }

    /// A SCHED_DEADLINE thread's parameters for `interval_ns` (`--dl-*`, checked).
    fn deadline_sched(&self, interval_ns: i64) -> Result<SchedParams, UsageError> {
        let period = self.dl_period.unwrap_or(interval_ns) as u64;
        let deadline = self.dl_deadline.unwrap_or(period as i64) as u64;
        let runtime = self.dl_runtime.map_or(period / 10, |r| r as u64);
        if !(runtime <= deadline && deadline <= period) {
            return Err(usage(format!(
                "SCHED_DEADLINE needs runtime <= deadline <= period, got runtime {runtime} ns, deadline {deadline} ns, \
                 period {period} ns; adjust --dl-runtime/--dl-deadline/--dl-period"
            )));
        }
        if runtime < 1024 {
            return Err(usage(format!(
                "SCHED_DEADLINE runtime {runtime} ns is below the kernel's minimum of 1024 ns; raise --dl-runtime"
            )));
        }
        if let Some(work) = self.work.filter(|w| *w as u64 > runtime) {
            return Err(usage(format!(
                "--dl-runtime {} is shorter than --work {}: SCHED_DEADLINE would throttle every job; give \
                 --dl-runtime at least the work",
                crate::units::duration(runtime as i64),
                crate::units::duration(work)
            )));
        }
        Ok(SchedParams {
            policy: Policy::Deadline,
            priority: 0,
            nice: 0,
            runtime_ns: runtime,
            deadline_ns: deadline,
            period_ns: period,
        })
    }

    /// The OS-thread probe's plan of `threads`.
    fn os_plan(&self, threads: Vec<ThreadPlan>, mlockall: bool, align: Option<os_thread::Align>) -> os_thread::Plan {
        os_thread::Plan {
            threads,
            method: self.method,
            clock: self.clock,
            mlockall,
            dma_latency_us: (!self.no_dma_latency).then_some(self.dma_latency),
            breaktrace_ns: self.breaktrace,
            tracemark: self.tracemark,
            main_affinity: self.main_affinity.clone(),
            simulate: self.simulate.clone(),
            stop_when_first_done: false,
            align,
            outliers: None,
            over_capacity: 1,
            cyclictest_compat: false,
            stages: self.stages,
            stage_stop: Default::default(),
            stage_trace: None,
            deepest_idle_state: self.deepest_idle_state,
            workers: None,
        }
    }

    /// `--explain` alone explains what --max-latency flags, else the worst sample.
    fn explain_plan(&self) -> Option<crate::session::explain::ExplainPlan> {
        match (self.explain, self.explain_worst) {
            (None, None) => None,
            (asked, worst) => {
                let threshold_ns = asked.flatten().or(self.max_latency);
                let worst = worst.map_or(usize::from(threshold_ns.is_none()), usize::from);
                Some(crate::session::explain::ExplainPlan { threshold_ns, worst, noise: false, hardware: None })
            }
        }
    }

    /// The configuration of an OS-thread run as applied; an rt-app use case then runs on its
    /// own probe with the same threads.
    fn configure(&self, plan: &mut Plan, rt_app: Option<crate::probes::rt_app::Plan>) {
        let Some(os) = plan.os() else { return };
        let (mlockall, main_affinity) = (os.mlockall, os.main_affinity.clone());
        plan.config = Some(Config {
            warmup_cycles: match self.warmup {
                Some(Warmup::Cycles(c)) => Some(c),
                _ => None,
            },
            warmup_ns: match self.warmup {
                Some(Warmup::Time(t)) => Some(t),
                _ => None,
            },
            ..crate::session::os_config(os, plan)
        });
        if let Some(mut r) = rt_app {
            r.mlockall = mlockall;
            r.main_affinity = main_affinity;
            plan.probe = ProbeSpec::RtApp(r);
        }
    }

    /// The task set of `--task`, `--tasks` or `--rt-app`, checked (`None` without one); the
    /// options that place or describe threads themselves are refused beside it.
    fn task_set(&self, online: &CpuSet, default_sched: SchedParams) -> Result<Option<TaskSet>, UsageError> {
        let given = if self.tasks_file.is_some() {
            "--tasks"
        } else if !self.tasks.is_empty() {
            "--task"
        } else {
            return Ok(None);
        };
        self.refuse_beside_task_set(given)?;
        let mut set = TaskSet { tasks: Vec::new() };
        if let Some(p) = &self.tasks_file {
            set.tasks = super::tasks::read_toml(p, default_sched).map_err(usage)?;
        } else {
            set.tasks = self
                .tasks
                .iter()
                .map(|t| TaskSpec::parse(t, default_sched))
                .collect::<Result<_, _>>()
                .map_err(usage)?;
        }
        let privileges = crate::rt::privileges::Privileges::current();
        super::tasks::check(&set.tasks, online, super::tasks::rt_share(&privileges), self.force).map_err(usage)?;
        Ok(Some(set))
    }

    /// The rt-app use case of `--rt-app` as the rt-app probe runs it (`None` without one); its
    /// log directory is checked before anything runs.
    fn rt_app_plan(&self, online: &CpuSet) -> Result<Option<crate::probes::rt_app::Plan>, UsageError> {
        let Some(p) = &self.rt_app else { return Ok(None) };
        self.refuse_beside_task_set("--rt-app")?;
        let uc = super::rt_app::read(p, online).map_err(usage)?;
        let mut plan = crate::probes::rt_app::Plan::new(p.display().to_string(), uc);
        let (covered, free) = plan.busy_rt_threads();
        let throttling = crate::rt::privileges::Privileges::current().sched_rt_runtime_us;
        let fix = "give the busy FIFO/RR tasks a sleep or a timer, or leave a CPU free";
        if let Some(why) = crate::rt::privileges::refuse_rt_starvation(
            "rt-app's FIFO/RR tasks that never wait",
            (&covered, free),
            online,
            throttling,
            (self.force, fix),
        ) {
            return Err(usage(format!("--rt-app {}: {why}", p.display())));
        }
        if let Some(dir) = &self.rt_app_logs {
            let basename = plan.log.as_ref().map_or_else(|| "rt-app".to_string(), |l| l.basename.clone());
            plan.log = Some(crate::probes::rt_app::model::LogSpec { dir: dir.clone(), basename });
        }
        for (task, rate) in plan.heavy_logs(10e6) {
            eprintln!(
                "rtlab: warning: --rt-app: the log of thread {} takes a line per phase loop, about {:.0} MB a second \
                 (rt-app's rate too): a long run fills the disk; lengthen its period or drop logdir",
                crate::units::printable(&task),
                rate / 1e6
            );
        }
        if let Some(l) = &plan.log {
            let probe = l.dir.join(".rtlab-check");
            if !l.dir.is_dir() || crate::rt::fs::temp_beside(&probe).is_err() {
                return Err(usage(format!(
                    "--rt-app {}: the log directory {} does not exist or cannot be written (rt-app refuses it too); \
                     create it, or give --rt-app-logs DIR",
                    p.display(),
                    l.dir.display()
                )));
            }
        }
        Ok(Some(plan))
    }

    /// Refuses the options that place or describe threads themselves beside a task set
    /// (`given`: `--task`, `--tasks` or `--rt-app`).
    fn refuse_beside_task_set(&self, given: &str) -> Result<(), UsageError> {
        let clashes = [
            ("-t", self.threads.is_some()),
            ("-a", self.affinity.is_some()),
            ("-S", self.smp),
            ("-d", self.distance != 0),
            ("--priospread", self.priospread),
            (
                "--dl-runtime/--dl-deadline/--dl-period",
                self.dl_runtime.is_some() || self.dl_deadline.is_some() || self.dl_period.is_some(),
            ),
            ("--work", self.work.is_some()),
            ("--deadline", self.deadlines.deadline.is_some()),
            ("--simulate", self.simulate.is_some()),
        ];
        if let Some((flag, _)) = clashes.iter().find(|(_, g)| *g) {
            return Err(usage(format!(
                "{flag} does not apply with {given}: each task gives its own (see --task's keys); drop {flag}"
            )));
        }
        Ok(())
    }

    /// The options of working tasks need work, and work needs an absolute schedule.
    fn check_work(&self, working: bool, method: Method) -> Result<(), UsageError> {
        let needs = [
            ("--deadline", self.deadlines.deadline.is_some()),
            ("--miss-window", self.deadlines.miss_window.is_some()),
            ("--max-response", self.deadlines.max_response.is_some()),
            ("--max-misses", self.deadlines.max_misses.is_some()),
        ];
        if let (Some((flag, _)), false) = (needs.iter().find(|(_, g)| *g), working) {
            return Err(usage(format!("{flag} needs work per period: add --work TIME (or tasks with work=)")));
        }
        if working && method != Method::Abs {
            return Err(usage(format!(
                "--work needs --method abs: releases follow an absolute schedule, which --method {} does not keep",
                method.name()
            )));
        }
        Ok(())
    }

    /// The periods `--warm-up` discards of a thread of period `period_ns`.
    fn warmup_cycles(&self, period_ns: i64) -> u64 {
        match self.warmup {
            None => 0,
            Some(Warmup::Cycles(c)) => c,
            Some(Warmup::Time(t)) => (t as u64).div_ceil(period_ns as u64),
        }
    }

    /// Checks every output before anything is measured: each can be written and none is
    /// another output.
    pub fn check_files(&self) -> Result<(), UsageError> {
        let mut outputs: Vec<(String, &std::path::Path)> = Vec::new();
        if let Some(p) = &self.json {
            outputs.push(("--json".into(), p));
        }
        if let Some(p) = &self.samples {
            outputs.push(("--samples".into(), p));
        }
        outputs.extend(self.hlog.output());
        crate::export::check_outputs(&outputs, &[]).map_err(usage)
    }

    /// The probe of `--runtime tokio|beam|ada|go|node|python` (`None` for OS threads), with
    /// `--control` beside it; the options that only apply to OS threads, or to another
    /// runtime, are refused.
    fn runtime_probe(&self, online: &CpuSet) -> Result<Option<ProbeSpec>, UsageError> {
        let r = &self.runtime;
        if r.runtime.0.len() > 1 {
            return Err(usage("--runtime takes one runtime in rtlab run; a list (os,tokio,…) is for rtlab sweep"));
        }
        let kind = r.runtime.first();
        self.refuse_other_runtimes(kind)?;
        if kind == RuntimeKind::Os {
            if r.control {
                return Err(usage(
                    "--control measures an OS thread beside a runtime's probe; give --runtime tokio, beam, ada, go, node or python",
                ));
            }
            return Ok(None);
        }
        let os_only = [
            ("-t", self.threads.is_some()),
            ("-a", self.affinity.is_some()),
            ("-S", self.smp),
            ("--policy", self.policy.is_some()),
            ("-p", self.priority.is_some()),
            ("--dl-runtime", self.dl_runtime.is_some()),
            ("--warm-up", self.warmup.is_some()),
            ("-b", self.breaktrace.is_some()),
            ("--simulate", self.simulate.is_some()),
            ("--work", self.work.is_some()),
            ("--task", !self.tasks.is_empty() || self.tasks_file.is_some() || self.rt_app.is_some()),
        ];
        if let Some((flag, _)) = os_only.iter().find(|(_, given)| *given) {
            return Err(usage(format!(
                "{flag} does not apply to --runtime {} (one task in a runtime, its threads SCHED_OTHER like any application); drop it",
                kind.name()
            )));
        }
        let probe = match kind.lang() {
            Some(lang) => self.lang_probe(lang)?,
            None if kind == RuntimeKind::Beam => self.beam_probe()?,
            None => self.tokio_probe(online)?,
        };
        if !r.control {
            return Ok(Some(probe));
        }
        // The control runs as the runtime's measuring task does: SCHED_OTHER, or Ada's priority.
        let sched = match r.ada_priority {
            Some(p) => SchedParams::simple(Policy::Fifo, p),
            None => SchedParams::simple(Policy::Other, 0),
        };
        let control = crate::probes::control::plan(probe.slots().len(), self.interval, sched);
        Ok(Some(ProbeSpec::Controlled { inner: Box::new(probe), control }))
    }

    /// Refuses the options of a runtime other than `kind`.
    fn refuse_other_runtimes(&self, kind: RuntimeKind) -> Result<(), UsageError> {
        let r = &self.runtime;
        let given = [
            (RuntimeKind::Tokio, "--tokio-workers", r.tokio_workers.is_some()),
            (RuntimeKind::Tokio, "--tokio-hogs", r.tokio_hogs > 0),
            (RuntimeKind::Tokio, "--tokio-blocking", r.tokio_blocking > 0),
            (RuntimeKind::Tokio, "--missed-tick", r.missed_tick.is_some()),
            (RuntimeKind::Beam, "--erl", r.erl.is_some()),
            (RuntimeKind::Beam, "--beam-method", r.beam_method.is_some()),
            (RuntimeKind::Beam, "--beam-workers", r.beam_workers.is_some()),
            (RuntimeKind::Beam, "--beam-probe-priority", r.beam_probe_priority.is_some()),
            (RuntimeKind::Beam, "--beam-worker-priority", r.beam_worker_priority.is_some()),
            (RuntimeKind::Beam, "--vm-args", r.vm_args.is_some()),
            (RuntimeKind::Ada, "--ada-method", r.ada_method.is_some()),
            (RuntimeKind::Ada, "--ada-priority", r.ada_priority.is_some()),
            (RuntimeKind::Ada, "--gnatmake", r.gnatmake.is_some()),
            (RuntimeKind::Go, "--go-method", r.go_method.is_some()),
            (RuntimeKind::Go, "--gomaxprocs", r.gomaxprocs.is_some()),
            (RuntimeKind::Go, "--go-lock-os-thread", r.go_lock_os_thread),
            (RuntimeKind::Go, "--go", r.go_tool.is_some()),
            (RuntimeKind::Node, "--node-method", r.node_method.is_some()),
            (RuntimeKind::Node, "--node", r.node_tool.is_some()),
            (RuntimeKind::Python, "--python-method", r.python_method.is_some()),
            (RuntimeKind::Python, "--python3", r.python_tool.is_some()),
        ];
        if let Some((needs, flag, _)) = given.iter().find(|(k, _, g)| *g && *k != kind) {
            return Err(usage(format!("{flag} needs --runtime {}", needs.name())));
        }
        if kind.lang().is_none() {
            for (flag, g) in
                [("--runtime-workers", r.runtime_workers.is_some()), ("--worker-kind", r.worker_kind.is_some())]
            {
                if g {
                    return Err(usage(format!("{flag} needs --runtime ada, go, node or python")));
                }
            }
        }
        Ok(())
    }

    /// The probe of `--runtime ada|go|node|python`: a duration (the program ends itself
    /// after it), a period the runtime's timers can express, a tool that is an executable.
    fn lang_probe(&self, lang: crate::probes::runtimes::Lang) -> Result<ProbeSpec, UsageError> {
        use crate::probes::runtimes::{self, Lang};
        let r = &self.runtime;
        let name = lang.name();
        if self.loops.is_some() {
            return Err(usage(format!(
                "-l does not apply to --runtime {name} (the program measures for a time); give -D instead"
            )));
        }
        let Some(duration) = self.duration else {
            return Err(usage(format!("--runtime {name} needs -D (the program measures for a time), e.g. -D 5s")));
        };
        if lang == Lang::Node && self.interval % 1_000_000 != 0 {
            return Err(usage(format!(
                "-i {} µs: Node.js timers count whole milliseconds; give e.g. -i 1ms",
                self.interval as f64 / 1000.0
            )));
        }
        if self.interval < 10_000 || duration.as_nanos() / self.interval as u128 > 100_000_000 {
            return Err(usage(format!(
                "-i {} µs for {:.0} s: a runtime probe takes a period of at least 10 µs and at most 10^8 periods; give a longer -i or a shorter -D",
                self.interval as f64 / 1000.0,
                duration.as_secs_f64()
            )));
        }
        let kind = match &r.worker_kind {
            Some(k) => *lang.worker_kinds().iter().find(|w| **w == k).ok_or_else(|| {
                usage(format!("--worker-kind {k}: {name}'s workers are {}", lang.worker_kinds().join(" or ")))
            })?,
            None => lang.worker_kinds()[0],
        };
        let (method, tool) = match lang {
            Lang::Ada => (&r.ada_method, &r.gnatmake),
            Lang::Go => (&r.go_method, &r.go_tool),
            Lang::Node => (&r.node_method, &r.node_tool),
            Lang::Python => (&r.python_method, &r.python_tool),
        };
        let method = method.as_deref().unwrap_or(lang.methods()[0]);
        let method = *lang.methods().iter().find(|m| **m == method).expect("checked by the parser");
        // A wrong --gnatmake/--go/… is bad usage; none on PATH is this machine's lack, told when the probe starts.
        let tool = tool.as_deref().map(|p| runtimes::find_tool(lang, Some(p))).transpose().map_err(usage)?;
        Ok(ProbeSpec::Runtime(runtimes::Plan {
            lang,
            tool,
            method,
            period_ns: self.interval,
            duration,
            workers: r.runtime_workers.unwrap_or(0) as usize,
            worker_kind: kind,
            gomaxprocs: r.gomaxprocs.unwrap_or(0),
            lock_os_thread: r.go_lock_os_thread,
            ada_priority: r.ada_priority.unwrap_or(0),
        }))
    }

    /// The tokio probe of `--runtime tokio`.
    fn tokio_probe(&self, online: &CpuSet) -> Result<ProbeSpec, UsageError> {
        use crate::probes::tokio_task::{Flavor, MissedTick, Wait};
        let r = &self.runtime;
        let workers = r.tokio_workers.map_or(online.len().max(1), |w| w as usize);
        if r.missed_tick.is_some() && r.tokio_wait != Wait::Interval {
            return Err(usage("--missed-tick applies to --tokio-wait interval only (sleep-until has no ticks); add --tokio-wait interval or drop it"));
        }
        if r.tokio_workers.is_some() && r.tokio_flavor == Flavor::CurrentThread {
            return Err(usage("--tokio-workers applies to --tokio-flavor multi-thread only"));
        }
        let threads = if r.tokio_flavor == Flavor::CurrentThread { 1 } else { workers };
        if r.tokio_hogs >= threads && self.duration.is_none() {
            return Err(usage(format!(
                "--tokio-hogs {} holds every one of the runtime's {}: the probe task may never run again, so -l \
                 alone may never end; give -D to bound the run (e.g. -D 10s)",
                r.tokio_hogs,
                crate::units::count(threads as u64, "worker thread")
            )));
        }
        Ok(ProbeSpec::Tokio(crate::probes::tokio_task::Plan {
            flavor: r.tokio_flavor,
            workers: if r.tokio_flavor == Flavor::CurrentThread { 1 } else { workers },
            wait: r.tokio_wait,
            missed_tick: r.missed_tick.unwrap_or(MissedTick::Burst),
            interval_ns: self.interval,
            hogs: r.tokio_hogs,
            blocking: r.tokio_blocking,
            // tokio does not promise a task progress while a hog blocks one of its workers: a run
            // that only its loops end must not wait for ever (seen: 1 run in 300 under load).
            stall_limit_ns: (r.tokio_hogs > 0 && self.duration.is_none())
                .then(|| (1000 * self.interval).max(10_000_000_000)),
        }))
    }

    /// The Erlang VM probe of `--runtime beam`: a whole-millisecond period and a duration
    /// (the VM ends itself after it).
    fn beam_probe(&self) -> Result<ProbeSpec, UsageError> {
        use crate::probes::beam::{self, Method, Priority};
        let r = &self.runtime;
        if self.interval % 1_000_000 != 0 || !(1_000_000..=60_000_000_000).contains(&self.interval) {
            return Err(usage(format!(
                "-i {} µs: the Erlang VM's timers count whole milliseconds from 1 to 60000; give e.g. -i 1ms",
                self.interval as f64 / 1000.0
            )));
        }
        if self.loops.is_some() {
            return Err(usage("-l does not apply to --runtime beam (the VM measures for a time); give -D instead"));
        }
        let Some(duration) = self.duration else {
            return Err(usage("--runtime beam needs -D (the VM measures for a time), e.g. -D 5s"));
        };
        // A wrong --erl is bad usage; no erl on PATH is this machine's lack, told when the probe starts.
        let erl = r.erl.as_deref().map(|p| beam::find_erl(Some(p))).transpose().map_err(usage)?;
        Ok(ProbeSpec::Beam(beam::Plan {
            erl,
            method: r.beam_method.unwrap_or(Method::SendInterval),
            period_ms: (self.interval / 1_000_000) as u32,
            duration,
            workers: r.beam_workers.unwrap_or(0),
            worker_priority: r.beam_worker_priority.unwrap_or(Priority::Normal),
            probe_priority: r.beam_probe_priority.unwrap_or(Priority::Normal),
            vm_args: r.vm_args.clone().unwrap_or_default().0,
        }))
    }
}

/// A task set as `rtlab run` applies it.
struct TaskSet {
    tasks: Vec<TaskSpec>,
}

/// A stand-in's CPU list option (`-H`, `-C`), checked under its own name before it becomes
/// rtlab's `--mainaffinity`: a message names what the user typed, not rtlab's option.
pub fn stand_in_cpus(text: &str, flag: &str) -> Result<String, UsageError> {
    let set = CpuSet::parse(text).map_err(|e| usage(format!("{flag} {}: {e}", crate::units::printable(text))))?;
    check_online(&set, &crate::rt::affinity::online_cpus(), flag)?;
    Ok(text.to_string())
}

/// Checks that every CPU of `set` is online; the error names the missing ones and the online set.
pub fn check_online(set: &CpuSet, online: &CpuSet, flag: &str) -> Result<(), UsageError> {
    let missing = set.difference(online);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(usage(format!("{flag} {set}: CPU {missing} does not exist or is offline; online CPUs are {online}")))
    }
}

/// Checks that an output path can be written before anything is measured (see
/// [`crate::export::check_output`]); the error names the option.
pub fn check_writable_target(p: &std::path::Path, flag: &str) -> Result<(), UsageError> {
    crate::export::check_output(p).map_err(|e| usage(format!("{flag} {e}")))
}
