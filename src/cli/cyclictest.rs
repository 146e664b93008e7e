//! `rtlab cyclictest` (and the binary invoked as `cyclictest`): cyclictest's options, defaults
//! and quirks where they are harmless, validated where cyclictest is broken.

use super::parse;
use super::run::check_online;
use super::UsageError;
use crate::commands::cyclictest::{Compat, CyclictestOptions, Outputs};
use crate::measure::histogram::Layout;
use crate::measure::probe::{ClockKind, Method};
use crate::probes::os_thread::{self, Align};
use crate::probes::{ProbeSpec, ThreadPlan};
use crate::rt::affinity::{self, CpuSet};
use crate::rt::sched::{Policy, SchedParams};
use crate::session::Plan;
use clap::{ArgAction, Parser};
use std::path::PathBuf;
use std::time::Duration;

/// Which cyclictest's output layout to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompatVersion {
    /// rt-tests 2.10 (current): zero histogram rows omitted, no `# Total:` line.
    #[value(name = "2.10")]
    V2_10,
    /// rt-tests 2.4 (Debian 12): every histogram row, `# Total:`, JSON histogram always present.
    #[value(name = "2.4")]
    V2_4,
}

/// cyclictest's options (rt-tests 2.x), run on rtlab's engine.
///
/// Differences from cyclictest, where cyclictest is broken: impossible values (-i 0, -t 0,
/// negative numbers, -h 0, unknown policies) and unknown or removed options are errors (exit
/// 2) instead of help with exit 0; missed periods are counted and reported ("# Missed
/// periods:" line); negative latencies never wrap; a -b hit exits with 3; SCHED_OTHER runs
/// need no RT privileges and RT requests without them degrade with a warning; --policy
/// batch/idle are applied as asked; with -N the histogram keeps 1 µs buckets (cyclictest's
/// 1 ns buckets overflow at once); -b/--spike thresholds stay in µs with -N.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "cyclictest",
    disable_help_flag = true,
    disable_version_flag = true,
    infer_long_args = true,
    after_help = "Run as `rtlab cyclictest …` or through a symlink named `cyclictest`. --compat 2.4 reproduces rt-tests 2.4's layout; --rtlab-json FILE also writes rtlab's full RunResult."
)]
pub struct CyclictestArgs {
    /// Print this help
    #[arg(long = "help", action = ArgAction::Help)]
    pub help: Option<bool>,

    /// Run thread #N on CPU #N, or pin threads round-robin to CPUSET
    #[arg(short = 'a', long = "affinity", value_name = "CPUSET", num_args = 0..=1, value_parser = affinity_set)]
    pub affinity: Option<Option<CpuSet>>,

    /// Align thread wakeups to a specific offset (µs per thread)
    #[arg(short = 'A', long = "aligned", value_name = "USEC", num_args = 0..=1, value_parser = non_negative)]
    pub aligned: Option<Option<i64>>,

    /// Stop and exit 3 when a latency exceeds USEC
    #[arg(short = 'b', long = "breaktrace", value_name = "USEC", allow_negative_numbers = true, value_parser = positive)]
    pub breaktrace: Option<i64>,

    /// Clock: 0 = CLOCK_MONOTONIC (default), 1 = CLOCK_REALTIME
    #[arg(short = 'c', long = "clock", value_name = "CLOCK", allow_negative_numbers = true, value_parser = clock)]
    pub clock: Option<ClockKind>,

    /// Do not tune power management (no /dev/cpu_dma_latency)
    #[arg(long = "default-system")]
    pub default_system: bool,

    /// Distance of thread intervals in µs [default: 500; 0 with -h]
    #[arg(short = 'd', long = "distance", value_name = "DIST", allow_negative_numbers = true, value_parser = non_negative)]
    pub distance: Option<i64>,

    /// Run length: seconds, or with m, h, d
    #[arg(short = 'D', long = "duration", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::duration)]
    pub duration: Option<Duration>,

    /// Create a named pipe at PATH and write the current stats to it when read
    #[arg(short = 'F', long = "fifo", value_name = "PATH")]
    pub fifo: Option<PathBuf>,

    /// Dump a latency histogram up to US µs after the run
    #[arg(short = 'h', long = "histogram", value_name = "US", allow_negative_numbers = true, value_parser = positive)]
    pub histogram: Option<i64>,

    /// Like -h, with an extra column summing all threads
    #[arg(short = 'H', long = "histofall", value_name = "US", allow_negative_numbers = true, value_parser = positive)]
    pub histofall: Option<i64>,

    /// Write the histogram to PATH instead of stdout
    #[arg(long = "histfile", value_name = "PATH")]
    pub histfile: Option<PathBuf>,

    /// Base interval of thread in µs
    #[arg(short = 'i', long = "interval", value_name = "INTV", default_value = "1000", allow_negative_numbers = true, value_parser = parse::interval)]
    pub interval: i64,

    /// Write the final results to FILE in cyclictest's JSON format
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Save battery (no /dev/cpu_dma_latency)
    #[arg(long = "laptop")]
    pub laptop: bool,

    /// Power management latency target written to /dev/cpu_dma_latency (µs)
    #[arg(long = "latency", value_name = "PM_QOS", default_value = "0", allow_negative_numbers = true, value_parser = parse::dma_latency)]
    pub latency: i32,

    /// Number of loops; the run ends when the first thread reaches it (0 = endless)
    #[arg(short = 'l', long = "loops", value_name = "LOOPS", allow_negative_numbers = true, value_parser = loops)]
    pub loops: Option<u64>,

    /// Run the main thread on these CPUs
    #[arg(long = "mainaffinity", value_name = "CPUSET", value_parser = parse::cpuset)]
    pub main_affinity: Option<CpuSet>,

    /// Lock current and future memory allocations
    #[arg(short = 'm', long = "mlockall")]
    pub mlockall: bool,

    /// Update the screen only when a new maximum is hit
    #[arg(short = 'M', long = "refresh_on_max")]
    pub refresh_on_max: bool,

    /// Print results in ns instead of µs
    #[arg(short = 'N', long = "nsecs")]
    pub nsecs: bool,

    /// Oscilloscope mode: with -v print the maximum of every RED samples
    #[arg(short = 'o', long = "oscope", value_name = "RED", allow_negative_numbers = true, value_parser = parse::positive_count)]
    pub oscope: Option<u64>,

    /// Priority of the highest-priority thread (sets SCHED_FIFO)
    #[arg(short = 'p', long = "priority", value_name = "PRIO", allow_negative_numbers = true, value_parser = parse::priority)]
    pub priority: Option<u32>,

    /// Policy: other, normal, batch, idle, fifo, rr
    #[arg(long = "policy", value_name = "NAME", value_parser = compat_policy)]
    pub policy: Option<Policy>,

    /// Spread priorities downwards from -p
    #[arg(long = "priospread")]
    pub priospread: bool,

    /// Print a summary only on exit
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,

    /// Use relative clock_nanosleep instead of absolute
    #[arg(short = 'r', long = "relative")]
    pub relative: bool,

    /// Check the clock resolution
    #[arg(short = 'R', long = "resolution")]
    pub resolution: bool,

    /// Align thread wakeups to the next full second plus USEC
    #[arg(long = "secaligned", value_name = "USEC", num_args = 0..=1, value_parser = non_negative)]
    pub secaligned: Option<Option<i64>>,

    /// Use nanosleep() instead of clock_nanosleep
    #[arg(short = 's', long = "system")]
    pub system: bool,

    /// Standard SMP testing: -a -t and the same priority for all threads
    #[arg(short = 'S', long = "smp")]
    pub smp: bool,

    /// Record every spike above USEC and list them at the end
    #[arg(long = "spike", value_name = "USEC", allow_negative_numbers = true, value_parser = positive)]
    pub spike: Option<i64>,

    /// Maximum number of spikes recorded
    #[arg(long = "spike-nodes", value_name = "NUM", default_value = "1024", allow_negative_numbers = true, value_parser = parse::positive_count)]
    pub spike_nodes: u64,

    /// Count SMIs (x86 MSR 0x34) per thread
    #[arg(long = "smi")]
    pub smi: bool,

    /// Number of threads; bare -t: one per CPU [default: 1]
    #[arg(short = 't', long = "threads", value_name = "NUM", num_args = 0..=1, value_parser = parse::thread_count)]
    pub threads: Option<Option<u32>>,

    /// With -b: write a marker to tracefs and stop tracing
    #[arg(long = "tracemark")]
    pub tracemark: bool,

    /// Unbuffered output (rtlab always flushes)
    #[arg(short = 'u', long = "unbuffered")]
    pub unbuffered: bool,

    /// Print every sample: thread:cycle:value
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,

    /// Print the resolved plan (threads, CPUs, intervals, policies) to stderr
    #[arg(long = "dbg_cyclictest")]
    pub dbg: bool,

    /// Use POSIX timers instead of clock_nanosleep
    #[arg(short = 'x', long = "posix_timers")]
    pub posix_timers: bool,

    /// Disable CPU idle states deeper than N on the measured CPUs for the run
    #[arg(long = "deepest-idle-state", value_name = "N", allow_negative_numbers = true, value_parser = parse::idle_state)]
    pub deepest_idle_state: Option<i32>,

    /// Output layout to reproduce: 2.10 (default) or 2.4
    #[arg(long = "compat", value_enum, default_value = "2.10")]
    pub compat: CompatVersion,

    /// Also write rtlab's full RunResult (schema rtlab.run/1) to FILE
    #[arg(long = "rtlab-json", value_name = "FILE")]
    pub rtlab_json: Option<PathBuf>,

    /// rtlab: predict the largest latency a run of DURATION would show (e.g. 24h), printed after
    /// the summary as a `#` line (and in --rtlab-json)
    #[arg(long = "predict", value_name = "DURATION", allow_hyphen_values = true, value_parser = parse::horizon)]
    pub predict: Option<i64>,

    /// rtlab's HdrHistogram interval log
    #[command(flatten)]
    pub hlog: super::hlog::HlogArgs,

    /// Simulated probe: seed:N or file:PATH (testing only)
    #[arg(long, value_name = "SPEC", hide = true, value_parser = super::parse::simulation)]
    pub simulate: Option<crate::measure::simulate::Simulation>,
}

fn positive(s: &str) -> Result<i64, String> {
    match parse::positive_count(s) {
        Ok(n) => i64::try_from(n).map_err(|_| format!("'{s}' is too large")),
        Err(e) => Err(e),
    }
}

fn non_negative(s: &str) -> Result<i64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("'{s}' is negative; give microseconds from 0"));
    }
    t.parse::<i64>().map_err(|_| format!("'{s}' is not a whole number of microseconds"))
}

fn loops(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!("'{s}' is negative; give a number of loops (0 = endless)"));
    }
    t.parse::<u64>().map_err(|_| format!("'{s}' is not a whole number of loops"))
}

fn clock(s: &str) -> Result<ClockKind, String> {
    match s.trim() {
        "0" => Ok(ClockKind::Monotonic),
        "1" => Ok(ClockKind::Realtime),
        _ => Err(format!("clock '{s}' does not exist; use 0 (CLOCK_MONOTONIC) or 1 (CLOCK_REALTIME)")),
    }
}

fn compat_policy(s: &str) -> Result<Policy, String> {
    match s.parse::<Policy>()? {
        Policy::Deadline => Err("cyclictest has no SCHED_DEADLINE; use `rtlab run --policy deadline`".into()),
        p => Ok(p),
    }
}

/// Removed or never-existing cyclictest options people still pass, with what replaced them.
pub fn removed_option_hint(arg: &str) -> Option<&'static str> {
    Some(match arg {
        "--numa" => "--numa was removed in rt-tests 2.0 (NUMA is detected automatically)",
        "-n" | "--nanosleep" => "-n/--nanosleep was removed in rt-tests 2.0 (clock_nanosleep is the default)",
        "-e" => "-e was removed in rt-tests 2.0",
        "-f" | "--ftrace" | "-B" | "--preemptirqs" | "-C" | "--context" | "-E" | "--event" | "-I" | "--irqsoff"
        | "-P" | "--preemptoff" | "-T" | "--tracer" | "-w" | "--wakeup" | "-W" | "--wakeuprt" | "-O" | "--traceopt" => {
            "the ftrace options were removed in rt-tests 2.0; use -b with --tracemark and trace-cmd"
        }
        _ => return None,
    })
}

impl CyclictestOptions {
    /// Resolves cyclictest's defaults and checks the values against each other and this machine.
    pub fn from_cli(args: CyclictestArgs) -> Result<CyclictestOptions, UsageError> {
        args.validate()
    }
}

/// A cyclictest threshold of `us` µs in ns: cyclictest compares whole microseconds, so
/// "diff > US" means a latency of at least (US + 1) µs.
fn above_us(us: i64) -> i64 {
    (us + 1) * 1000 - 1
}

impl CyclictestArgs {
    fn validate(self) -> Result<CyclictestOptions, UsageError> {
        let online = affinity::online_cpus();
        let mut notices = Vec::new();
        self.check_flags(&online)?;
        let histofall = self.histofall.is_some();
        let histogram_us = self.histofall.or(self.histogram);
        if let Some(h) = histogram_us {
            if h > 10_000_000 {
                return Err(UsageError(format!("histogram size {h} µs is above 10 s; use a smaller -h")));
            }
        }
        let (n, cpus) = self.placement(&online)?;
        let (policy, priority, spread) = self.scheduling(n, &mut notices)?;
        let distance_us = if histogram_us.is_some() {
            if self.distance.is_some() {
                notices.push("WARN: distance is ignored and set to 0, if histogram enabled".into());
            }
            0
        } else {
            self.distance.unwrap_or(500)
        };
        let threads = self.thread_plans(n, cpus.as_ref(), (policy, priority, spread), distance_us)?;
        let layout = match histogram_us {
            Some(h) => Layout::new(1_000, (h as u64 * 1000).max(64)).map_err(UsageError)?,
            None => Layout::DEFAULT,
        };
        layout.check_memory(threads.len()).map_err(|_| {
            UsageError(format!(
                "-h/-H {} µs for {} threads takes {} MiB of histograms, more than rtlab allows; use a smaller -h or fewer threads",
                histogram_us.unwrap_or(0),
                threads.len(),
                (layout.len() * 8 * threads.len()) >> 20
            ))
        })?;
        let os = self.os_plan(threads, histogram_us);
        let plan = self.plan(os, layout)?;
        let args = self.outputs();
        Ok(CyclictestOptions { plan, histogram_us, histofall, policy, notices, args })
    }

    /// Flags that exclude or need each other, CPUs that must be online, outputs that must be
    /// writable.
    fn check_flags(&self, online: &CpuSet) -> Result<(), UsageError> {
        let usage = |m: String| UsageError(m);
        if self.aligned.is_some() && self.secaligned.is_some() {
            return Err(usage("-A/--aligned and --secaligned cannot be combined; choose one".into()));
        }
        if self.oscope.is_some_and(|o| o > 1) && !self.verbose {
            return Err(usage("-o/--oscope only works with -v; add -v or drop -o".into()));
        }
        if self.tracemark && self.breaktrace.is_none() {
            return Err(usage("--tracemark needs -b USEC: the marker is written when that latency is exceeded".into()));
        }
        if let Some(Some(set)) = &self.affinity {
            check_online(set, online, "-a")?;
        }
        if let Some(set) = &self.main_affinity {
            check_online(set, online, "--mainaffinity")?;
        }
        let outputs = [("--json", &self.json), ("--rtlab-json", &self.rtlab_json), ("--histfile", &self.histfile)];
        for (flag, path) in outputs.into_iter().chain([("--hlog", &self.hlog.hlog)]) {
            if let Some(p) = path {
                super::run::check_writable_target(p, flag)?;
            }
        }
        if self.smi {
            if self.affinity.is_none() && !self.smp {
                return Err(usage("--smi counts per CPU, so the threads must be pinned: add -a or -S".into()));
            }
            crate::rt::msr::SmiCounter::check(online).map_err(usage)?;
        }
        Ok(())
    }

    /// The number of threads and the CPUs they may use, as cyclictest places them.
    fn placement(&self, online: &CpuSet) -> Result<(usize, Option<CpuSet>), UsageError> {
        let current = affinity::current_thread().unwrap_or_else(|_| online.clone());
        let (n, cpus): (usize, Option<CpuSet>) = if self.smp {
            (current.len(), Some(current.clone()))
        } else {
            let cpus = match &self.affinity {
                None => None,
                Some(None) => Some(current.clone()),
                Some(Some(set)) => Some(set.clone()),
            };
            let n = match self.threads {
                None => 1,
                Some(Some(n)) => n as usize,
                Some(None) => cpus.as_ref().unwrap_or(&current).len(),
            };
            (n, cpus)
        };
        if let Some(sim) = self.simulate.as_ref().and_then(|s| s.thread_count()) {
            if sim != n {
                return Err(UsageError(format!("the simulation samples define {sim} threads but -t asks for {n}")));
            }
        }
        Ok((n, cpus))
    }

    /// Policy, priority and whether priorities spread, with cyclictest's defaulting (its notices
    /// go to `notices`).
    fn scheduling(&self, n: usize, notices: &mut Vec<String>) -> Result<(Policy, u32, bool), UsageError> {
        let mut policy = self.policy.unwrap_or(Policy::Other);
        let mut priority = self.priority.unwrap_or(0);
        if self.priority.is_some() && !policy.is_realtime_priority() {
            if self.policy.is_some() {
                notices.push("policy and priority don't match: setting policy to SCHED_FIFO".into());
            }
            policy = Policy::Fifo;
        }
        if (self.priospread || policy.is_realtime_priority()) && priority == 0 {
            priority = (n as u32 + 1).min(99);
            notices.push(format!("defaulting realtime priority to {priority}"));
            if !policy.is_realtime_priority() {
                policy = Policy::Fifo;
            }
        }
        let spread = self.priospread && !self.smp;
        if spread && (n as u32) > priority {
            return Err(UsageError(format!(
                "--priospread with {n} threads from priority {priority} would go below 1; raise -p or use fewer threads"
            )));
        }
        Ok((policy, priority, spread))
    }

    /// One plan per thread: its CPU, its priority (spread or not), its interval (`-d` apart).
    fn thread_plans(
        &self,
        n: usize,
        cpus: Option<&CpuSet>,
        (policy, priority, spread): (Policy, u32, bool),
        distance_us: i64,
    ) -> Result<Vec<ThreadPlan>, UsageError> {
        let mut threads = Vec::with_capacity(n);
        for (i, cpu) in os_thread::placement(n, cpus).into_iter().enumerate() {
            let interval_ns = self
                .interval
                .checked_add(distance_us.saturating_mul(1000).saturating_mul(i as i64))
                .filter(|v| *v <= 3_600_000_000_000)
                .ok_or_else(|| UsageError(format!("-d {distance_us} makes thread {i}'s interval longer than 1 h")))?;
            let prio = match (policy.is_realtime_priority(), spread) {
                (false, _) => 0,
                (true, true) => priority - i as u32,
                (true, false) => priority,
            };
            threads.push(ThreadPlan {
                index: i,
                cpu,
                sched: SchedParams::simple(policy, prio),
                interval_ns,
                warmup_cycles: 0,
                name: None,
                work: None,
                offset_ns: 0,
            });
        }
        Ok(threads)
    }

    /// The OS threads' plan: the method, the clock and cyclictest's run-wide options.
    fn os_plan(&self, threads: Vec<ThreadPlan>, histogram_us: Option<i64>) -> os_thread::Plan {
        let method = if self.posix_timers {
            Method::PosixTimer
        } else if self.system {
            Method::Nanosleep
        } else if self.relative {
            Method::Rel
        } else {
            Method::Abs
        };
        let loops = self.loops.filter(|l| *l > 0);
        os_thread::Plan {
            threads,
            method,
            clock: self.clock.unwrap_or(ClockKind::Monotonic),
            mlockall: self.mlockall,
            dma_latency_us: (!self.laptop && !self.default_system).then_some(self.latency),
            breaktrace_ns: self.breaktrace.map(above_us),
            tracemark: self.tracemark,
            main_affinity: self.main_affinity.clone(),
            simulate: self.simulate.clone(),
            stop_when_first_done: loops.is_some(),
            align: match (self.aligned, self.secaligned) {
                (Some(o), _) => Some(Align::Threads { offset_ns: o.unwrap_or(0) * 1000 }),
                (_, Some(o)) => Some(Align::Second { offset_ns: o.unwrap_or(0) * 1000 }),
                _ => None,
            },
            // Histogram overflows: latency >= size µs; cyclictest keeps as many as the size.
            outliers: histogram_us.map(|h| (h * 1000 - 1, h as usize)),
            over_capacity: self.spike_nodes.min(1 << 20) as usize,
            cyclictest_compat: true,
            stages: false,
            stage_stop: Default::default(),
            stage_trace: None,
            deepest_idle_state: None,
            workers: None,
        }
    }

    /// The session's plan around the OS threads' plan `os`.
    fn plan(&self, os: os_thread::Plan, layout: Layout) -> Result<Plan, UsageError> {
        let loops = self.loops.filter(|l| *l > 0);
        let mut plan = Plan {
            loops,
            duration: self.duration,
            max_latency_ns: self.spike.map(above_us),
            refresh: Duration::from_millis(10),
            // -b explains the sample that broke the run (rtlab's own tracefs instance).
            sample_ring: (self.verbose || self.breaktrace.is_some()).then_some(1 << 16),
            explain: self.breaktrace.map(|b| crate::session::explain::ExplainPlan {
                threshold_ns: Some(above_us(b)),
                worst: 0,
                noise: false,
                hardware: None,
            }),
            // cyclictest's own outputs stay cyclictest's; the findings go with --rtlab-json.
            doctor: self.rtlab_json.is_some().then(crate::doctor::Sysroot::default),
            hlog: self.hlog.plan()?,
            ..Plan::new(ProbeSpec::Os(os.clone()), layout)
        };
        plan.config = Some(crate::session::os_config(&os, &plan));
        Ok(plan)
    }

    /// What is printed and written, and how.
    fn outputs(&self) -> Outputs {
        Outputs {
            quiet: self.quiet,
            verbose: self.verbose,
            nsecs: self.nsecs,
            refresh_on_max: self.refresh_on_max,
            oscope: self.oscope,
            dbg: self.dbg,
            resolution: self.resolution,
            smi: self.smi,
            deepest_idle_state: self.deepest_idle_state,
            fifo: self.fifo.clone(),
            histfile: self.histfile.clone(),
            json: self.json.clone(),
            rtlab_json: self.rtlab_json.clone(),
            predict: self.predict,
            compat: match self.compat {
                CompatVersion::V2_10 => Compat::V2_10,
                CompatVersion::V2_4 => Compat::V2_4,
            },
            spike: self.spike.is_some(),
            breaktrace: self.breaktrace.is_some(),
        }
    }
}

/// cyclictest's `-a` set: a CPU list, or `all` (every online CPU, as rt-tests' numa parser
/// reads it; Linaro's cyclictest.sh passes `-a all` with `-t 0`).
fn affinity_set(text: &str) -> Result<CpuSet, String> {
    if text.trim() == "all" {
        return Ok(affinity::online_cpus());
    }
    parse::cpuset(text)
}
