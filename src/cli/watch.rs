//! `rtlab watch`: arguments, defaults, and validation into a [`RunOptions`] whose probe is the
//! watch probe (the run pipeline measures it like any probe).

use super::parse;
use super::UsageError;
use crate::commands::run::RunOptions;
use crate::measure::histogram::Layout;
use crate::probes::watch::{Backend, Plan as WatchPlan, Target, MAX_THREADS};
use crate::probes::ProbeSpec;
use crate::rt::affinity::CpuSet;
use crate::rt::process;
use crate::session::Plan;
use crate::units::Unit;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The long help of `rtlab watch`.
pub const LONG_ABOUT: &str = "Measure threads of any program, unmodified, from the kernel's events.

Per period of each watched thread, from rtlab's own tracefs instance (events filtered to the \
watched threads in the kernel, read in binary with exact nanoseconds): the release (the expiry \
its timer was armed for, or the instant another task or an interrupt woke it), the IRQ latency \
(its timer's interrupt − release), the thread latency (the switch to it − release, where the \
kernel traces that switch), the wakeup latency (its return to user space from the call it slept \
in − release: the moment a program reads its clock; the headline figure), the response time \
(its next block − release), slack against the deadline, skipped periods, the preemption it \
suffered while it worked and by whom, and the timer slack the kernel added.

Works for any hrtimer sleep (clock_nanosleep, nanosleep, timerfd, POSIX timers, poll/epoll/select \
and futex timeouts) and for threads woken by another task or an interrupt (released at their \
waking). The period is learnt per thread from its timer releases (--period sets it); the deadline \
is the period unless --deadline. Needs root and tracefs.

Ends on -D, Ctrl-C, or when every watched thread is gone (with -- CMD: when CMD exits; its exit \
status is reported; a CMD still running at the end is sent SIGTERM). Times without a unit are µs \
(--period, --deadline, --max-latency, --max-response) or seconds (-D).

Exit codes: 0 ok, 1 failure, 2 bad usage, 3 a verdict failed.";

/// `rtlab watch` arguments (see [`LONG_ABOUT`]).
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Examples:\n  rtlab watch -p $(pidof myctl) -D 1m --json ctl.json\n  rtlab watch --comm ctl-loop --max-response 800us\n  rtlab watch -D 10s -- cyclictest -t1 -p80 -i1000 -q"
)]
pub struct WatchArgs {
    /// Watch every thread of process PID, also threads it creates later
    #[arg(short = 'p', long = "pid", value_name = "PID", allow_negative_numbers = true)]
    pub pid: Option<i32>,

    /// Watch these threads (comma-separated thread ids)
    #[arg(long = "tid", value_name = "TID,…", value_delimiter = ',', allow_negative_numbers = true)]
    pub tids: Vec<i32>,

    /// Watch the threads named NAME (as in /proc/TID/comm), also those that appear later
    #[arg(long = "comm", value_name = "NAME")]
    pub comm: Option<String>,

    /// Run length: 30, 30s, 1.5m, 2h (plain number = seconds) [default: until Ctrl-C or every thread is gone]
    #[arg(short = 'D', long = "duration", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::duration)]
    pub duration: Option<Duration>,

    /// The watched threads' period [default: learnt per thread from its timer releases]
    #[arg(long = "period", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::interval)]
    pub period: Option<i64>,

    /// Verdict: fail (exit 3) if any wakeup latency exceeds this (plain number = µs)
    #[arg(long = "max-latency", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    pub max_latency: Option<i64>,

    /// Deadlines (default: each thread's period) and their verdicts
    #[command(flatten)]
    pub deadlines: super::run::DeadlineArgs,

    /// The most threads watched at once [default: those found at the start + 16, at most 96]
    #[arg(long = "max-threads", value_name = "N", value_parser = clap::value_parser!(u16).range(1..=MAX_THREADS as i64))]
    pub max_threads: Option<u16>,

    /// Pin rtlab's reporting and event-reading threads to these CPUs (keep them off the watched CPUs)
    #[arg(long = "mainaffinity", value_name = "CPUSET", value_parser = parse::cpuset)]
    pub main_affinity: Option<CpuSet>,

    /// No live view; print only the final summary
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,

    /// Show nanoseconds instead of microseconds
    #[arg(short = 'N', long = "nsecs")]
    pub nsecs: bool,

    /// Write the RunResult (schema rtlab.run/1, kind watch) to FILE, atomically; - for stdout
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Record every period (thread, period, release, wakeup latency, response) into FILE
    #[arg(long = "samples", value_name = "FILE")]
    pub samples: Option<PathBuf>,

    /// An HdrHistogram interval log
    #[command(flatten)]
    pub hlog: super::hlog::HlogArgs,

    /// Explain late periods from every CPU's kernel events: each wakeup above TIME (default:
    /// --max-latency, else the worst one) split into timer delay, IRQs, softirqs, tasks, the
    /// switch; each response past its deadline (or --max-response) also into the preemption
    /// and interrupts during the work
    #[arg(long = "explain", value_name = "TIME", num_args = 0..=1, require_equals = true, value_parser = parse::latency)]
    pub explain: Option<Option<i64>>,

    /// Also explain the N largest wakeups, whatever their size (implies --explain)
    #[arg(long = "explain-worst", value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub explain_worst: Option<u16>,

    /// An event loop's iteration busy longer than this is a stall, reported with what the
    /// kernel showed during it (plain number = µs) [default: 100ms, asyncio's slow-callback
    /// warning]
    #[arg(long = "stall", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    pub stall: Option<i64>,

    /// How the kernel's events are read: bpf (rtlab's programs on BTF tracepoints: less of the
    /// reader's CPU, fewer events lost at high rates) or tracefs (rtlab's instances) [default:
    /// bpf where this build and the kernel allow, else tracefs with a warning; tracefs with
    /// --explain]
    #[arg(long = "backend", value_name = "BACKEND", value_parser = ["bpf", "tracefs"])]
    pub backend: Option<String>,

    /// Write every event read, in time order, as trace lines with nanoseconds (fixtures)
    #[arg(long = "events", value_name = "FILE", hide = true)]
    pub events: Option<PathBuf>,

    /// The command to start and watch (after --)
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl WatchArgs {
    /// `--backend`, checked against this build and `--explain`.
    fn backend(&self) -> Result<Backend, UsageError> {
        match self.backend.as_deref() {
            // --explain reads every CPU's events, which only the tracefs backend records.
            None if self.explain.is_some() || self.explain_worst.is_some() => Ok(Backend::Tracefs),
            None => Ok(Backend::Preferred),
            Some("tracefs") => Ok(Backend::Tracefs),
            Some(_) if !crate::rt::bpf::built() => Err(usage(
                "--backend bpf: this rtlab was built without clang, so without its BPF programs; install clang and \
                 build again, or use --backend tracefs",
            )),
            Some(_) if self.explain.is_some() || self.explain_worst.is_some() => Err(usage(
                "--backend bpf: --explain reads every CPU's events through tracefs; use --backend tracefs or leave \
                 --backend out",
            )),
            Some(_) => Ok(Backend::Bpf),
        }
    }
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

impl RunOptions {
    /// `rtlab watch`: the watch probe through the run pipeline, checked before anything is traced.
    pub fn from_watch(a: WatchArgs) -> Result<RunOptions, UsageError> {
        let target = a.target()?;
        check_rights()?;
        let found = match &target {
            Target::Command(_) => 1,
            t => crate::probes::watch::threads_now(t).len(),
        };
        let capacity = match a.max_threads {
            Some(n) => usize::from(n),
            None => (found + 16).min(MAX_THREADS),
        };
        if found > capacity {
            return Err(usage(format!(
                "{} has {found} threads but --max-threads is {capacity}; raise --max-threads (at most {MAX_THREADS}) or \
                 watch some with --tid",
                target.describe()
            )));
        }
        if let (Some(d), Some(p)) = (a.deadlines.deadline, a.period) {
            if d > 100 * p {
                return Err(usage(
                    "--deadline is more than 100 periods; give a deadline near the period, e.g. --deadline 1ms",
                ));
            }
        }
        let window = a.deadlines.window()?;
        a.check_outputs()?;
        if let Some(set) = &a.main_affinity {
            super::run::check_online(set, &crate::rt::affinity::online_cpus(), "--mainaffinity")?;
        }
        let layout = Layout::DEFAULT;
        // Each slot keeps five histograms: wakeup, response, run, IRQ and switch.
        layout.check_memory(capacity * 5).map_err(usage)?;
        let probe = WatchPlan {
            backend: a.backend()?,
            target,
            period_ns: a.period,
            deadline_ns: a.deadlines.deadline,
            miss_window: window,
            capacity,
            layout,
            reader_cpus: a.main_affinity.clone(),
            events_out: a.events.clone(),
            stop_at: Default::default(),
            trace_out: None,
            stall_ns: a.stall.unwrap_or(crate::probes::watch::DEFAULT_STALL_NS),
            explain: a.explain(),
        };
        let probe_explain = probe.explain.map(|x| crate::session::explain::ExplainPlan {
            threshold_ns: x.threshold_ns,
            worst: x.worst,
            noise: false,
            hardware: None,
        });
        let plan = Plan {
            duration: a.duration,
            max_latency_ns: a.max_latency,
            max_response_ns: a.deadlines.max_response,
            max_misses: a.deadlines.max_misses,
            sample_ring: a.samples.is_some().then_some(crate::session::SAMPLE_RING),
            samples: a.samples,
            hlog: a.hlog.plan()?,
            doctor: None,
            // The probe explains its own periods; the plan says it was asked.
            explain: probe_explain,
            ..Plan::new(ProbeSpec::Watch(probe), layout)
        };
        let unit = if a.nsecs { Unit::Nanos } else { Unit::Micros };
        Ok(RunOptions { plan, json: a.json, unit, quiet: a.quiet, predict: None })
    }
}

impl WatchArgs {
    /// The outputs asked for, checked before anything is traced.
    fn check_outputs(&self) -> Result<(), UsageError> {
        let mut outputs: Vec<(String, &std::path::Path)> = Vec::new();
        if let Some(p) = &self.json {
            outputs.push(("--json".into(), p));
        }
        if let Some(p) = &self.events {
            outputs.push(("--events".into(), p));
        }
        if let Some(p) = &self.samples {
            if p.as_os_str() == "-" {
                return Err(usage("--samples -: a samples file is binary; give a file name, e.g. --samples watch.smp"));
            }
            outputs.push(("--samples".into(), p));
        }
        outputs.extend(self.hlog.output());
        crate::export::check_outputs(&outputs, &[]).map_err(usage)
    }

    /// What `--explain`/`--explain-worst` ask (the threshold defaults to `--max-latency`,
    /// else the worst one is explained).
    fn explain(&self) -> Option<crate::probes::watch::Explain> {
        if self.explain.is_none() && self.explain_worst.is_none() {
            return None;
        }
        let threshold_ns = self.explain.flatten().or(self.max_latency);
        let worst = self.explain_worst.map_or(usize::from(threshold_ns.is_none()), usize::from);
        Some(crate::probes::watch::Explain { threshold_ns, worst })
    }

    /// The one target asked for, checked against the running system.
    fn target(&self) -> Result<Target, UsageError> {
        let given = [self.pid.is_some(), !self.tids.is_empty(), self.comm.is_some(), !self.command.is_empty()];
        match given.iter().filter(|g| **g).count() {
            0 => {
                return Err(usage(
                    "say what to watch: -p PID, --tid TID,…, --comm NAME, or -- CMD ARGS (e.g. rtlab watch -p $(pidof app))",
                ))
            }
            1 => {}
            _ => return Err(usage("give one of -p, --tid, --comm and -- CMD; to watch several threads use --tid A,B")),
        }
        if let Some(pid) = self.pid {
            check_task(pid, "-p")?;
            not_rtlab_itself(pid, "-p")?;
            if process::process_of(pid).is_some_and(|tgid| tgid != pid) {
                return Err(usage(format!(
                    "-p {pid} is a thread of process {}; use --tid {pid} to watch it alone",
                    process::process_of(pid).unwrap_or(0)
                )));
            }
            return Ok(Target::Process(pid));
        }
        if !self.tids.is_empty() {
            for &t in &self.tids {
                check_task(t, "--tid")?;
                not_rtlab_itself(t, "--tid")?;
            }
            let mut tids = self.tids.clone();
            tids.sort_unstable();
            tids.dedup();
            return Ok(Target::Threads(tids));
        }
        if let Some(name) = &self.comm {
            // Arguments reach rtlab with bytes that are not UTF-8 as U+FFFD (and /proc's names
            // are read the same way, so they still match): such a byte counts as one.
            let bytes: usize = name.chars().map(|c| if c == '\u{fffd}' { 1 } else { c.len_utf8() }).sum();
            if bytes == 0 || bytes > 15 {
                return Err(usage(format!(
                    "--comm '{}': a thread name has 1 to 15 bytes (the kernel cuts longer ones); give the name as \
                     /proc/TID/comm shows it",
                    crate::units::printable(name)
                )));
            }
            if name == "rtlab" || name.starts_with("rtlab-") {
                return Err(usage(format!(
                    "--comm {name}: rtlab's own threads cannot be watched (watching its own reads feeds back on \
                     itself); watch another program"
                )));
            }
            return Ok(Target::Comm(name.clone()));
        }
        check_program(&self.command[0])?;
        Ok(Target::Command(self.command.clone()))
    }
}

/// The command after `--` must name a program that can run: a path to an executable file,
/// or a name found in `PATH`.
fn check_program(program: &str) -> Result<(), UsageError> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    let found = if program.contains('/') {
        runnable(std::path::Path::new(program))
    } else {
        std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|d| runnable(&d.join(program))))
    };
    if found {
        return Ok(());
    }
    Err(usage(format!(
        "-- {}: no such program (not an executable file, nor found in PATH); give the program's path",
        crate::units::printable(program)
    )))
}

/// A task `flag` names must exist and be a user-space thread.
fn check_task(tid: i32, flag: &str) -> Result<(), UsageError> {
    if tid <= 0 {
        return Err(usage(format!("{flag} {tid}: a thread id is a positive number (pgrep -f NAME finds one)")));
    }
    let Some(comm) = process::comm(tid) else {
        return Err(usage(format!(
            "{flag} {tid}: no such process or thread; give a running one (pgrep -f NAME finds it)"
        )));
    };
    if process::is_kernel_thread(tid) {
        return Err(usage(format!(
            "{flag} {tid}: {comm} is a kernel thread; rtlab watch measures user-space threads (their return to user space is the wakeup)"
        )));
    }
    Ok(())
}

/// This very rtlab cannot watch itself: every event it reads would make more.
fn not_rtlab_itself(tid: i32, flag: &str) -> Result<(), UsageError> {
    if process::process_of(tid) == Some(std::process::id() as i32) {
        return Err(usage(format!(
            "{flag} {tid}: that is this rtlab (watching its own reads feeds back on itself); watch another program"
        )));
    }
    Ok(())
}

/// Watching needs root (a tracefs instance of rtlab's own) and tracefs.
fn check_rights() -> Result<(), UsageError> {
    let p = crate::rt::privileges::Privileges::current();
    if p.euid != 0 {
        return Err(usage(
            "rtlab watch reads the kernel's events in a tracefs instance of its own: run it as root (sudo)",
        ));
    }
    crate::rt::tracefs::mount_point().map(|_| ()).map_err(|e| usage(format!("rtlab watch needs tracefs: {e}")))
}
