//! `rtlab timerlat top|hist` (and `rtla timerlat …` when rtlab runs under that name): rtla
//! timerlat's options, mapped onto `rtlab run --stages` — rtlab's probe threads, one per CPU,
//! with the tracker that gives each its IRQ and thread latency beside its own return-to-user
//! latency. Options that need the kernel's timerlat tracer are refused with the reason.

use super::UsageError;
use crate::commands::timerlat::{Action, HistLayout, Mode, TimerlatOptions};
use clap::{Args, Parser};
use std::path::PathBuf;

/// The long help of `rtlab timerlat`.
pub const LONG_ABOUT: &str = "rtla timerlat's interface and tables on kernels without the timerlat tracer.

One SCHED_FIFO 95 thread per CPU wakes every 1 ms (absolute clock_nanosleep) and reads its clock: \
its return-to-user latency (rtla's Usr, cyclictest's latency); rtlab's tracker on the kernel's events \
gives each wakeup's timer interrupt (IRQ: hrtimer_expire_entry − expiry) and the switch to the \
thread (Thr: sched_switch − expiry, where the kernel traces it). `top` prints the per-CPU table, \
`hist` the histograms in rtla's layout (readable by tools that read rtla's). Times are µs, as rtla's. \
-i/-T stop at the first IRQ/thread latency above the threshold and analyse it from the kernel's \
events; -a also writes the last events to timerlat_trace.txt. Needs root and tracefs. On a \
terminal, top refreshes every second. The same run writes a RunResult with --json.

Refused (the kernel's timerlat tracer does them): -k (kernel threads), -s (stack at the IRQ), -t \
(the tracer's buffer; the action trace writes rtlab's events instead), -e/--filter/--trigger \
(tracer events).";

/// `rtlab timerlat` arguments (rtla timerlat's; see [`LONG_ABOUT`]).
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Examples:\n  rtlab timerlat top -d 10s\n  rtlab timerlat hist -c 1 -d 1m -b 2 -E 100 --no-irq\n  rtla timerlat hist -T 100    (rtlab installed as rtla)"
)]
pub struct TimerlatArgs {
    /// top (a table per CPU) or hist (histograms per CPU)
    #[arg(value_enum, default_value = "top")]
    pub mode: Mode,
    /// Stop at the first IRQ or thread latency above US and write the trace (timerlat_trace.txt)
    #[arg(short = 'a', long = "auto", value_name = "US")]
    pub auto: Option<u64>,
    /// Timer period in µs [default: 1000]
    #[arg(short = 'p', long = "period", value_name = "US", default_value = "1000")]
    pub period: u64,
    /// Stop at the first IRQ latency above US
    #[arg(short = 'i', long = "irq", value_name = "US")]
    pub irq: Option<u64>,
    /// Stop at the first thread latency above US
    #[arg(short = 'T', long = "thread", value_name = "US")]
    pub thread: Option<u64>,
    /// The CPUs to measure (one thread each) [default: every online CPU]
    #[arg(short = 'c', long = "cpus", value_name = "CPUS")]
    pub cpus: Option<String>,
    /// Run rtlab's own threads on these CPUs
    #[arg(short = 'H', long = "house-keeping", value_name = "CPUS")]
    pub house_keeping: Option<String>,
    /// Length: N (seconds), Ns, Nm, Nh, Nd [default: until Ctrl-C or a threshold]
    #[arg(short = 'd', long = "duration", value_name = "TIME")]
    pub duration: Option<String>,
    /// Scheduling: o:NICE, r:PRIO, f:PRIO, d:RUNTIME:PERIOD [default: f:95]
    #[arg(short = 'P', long = "priority", value_name = "POLICY")]
    pub priority: Option<String>,
    /// Hold /dev/cpu_dma_latency at US while measuring [default: not touched]
    #[arg(long = "dma-latency", value_name = "US")]
    pub dma_latency: Option<i32>,
    /// Print only the summary at the end
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Display the latencies in nanoseconds (-b is then in ns too)
    #[arg(short = 'n', long = "nano")]
    pub nano: bool,
    /// After the stop's analysis, print the task each measured CPU was running
    #[arg(long = "dump-tasks")]
    pub dump_tasks: bool,
    /// Let the threads run S seconds before collecting data
    #[arg(long = "warm-up", value_name = "S")]
    pub warm_up: Option<u64>,
    /// User-space threads measure (what rtlab's probes always are)
    #[arg(short = 'u', long = "user-threads")]
    pub user_threads: bool,
    /// Do not auto-analyse a stop
    #[arg(long = "no-aa")]
    pub no_aa: bool,
    /// Refused: kernel threads are the timerlat tracer's
    #[arg(short = 'k', long = "kernel-threads")]
    pub kernel_threads: bool,
    /// Refused: the stack at the IRQ needs the timerlat tracer
    #[arg(short = 's', long = "stack", value_name = "US")]
    pub stack: Option<u64>,
    /// At a stop, save the events rtlab's tracker read last to FILE [default: timerlat_trace.txt]
    #[arg(short = 't', long = "trace", value_name = "FILE", num_args = 0..=1)]
    pub trace: Option<Option<String>>,
    /// Refused: events of the tracer's session
    #[arg(short = 'e', long = "event", value_name = "SYS:EVENT")]
    pub event: Vec<String>,
    /// Refused: filters of the tracer's events
    #[arg(long = "filter", value_name = "FILTER")]
    pub filter: Vec<String>,
    /// Refused: triggers of the tracer's events
    #[arg(long = "trigger", value_name = "TRIGGER")]
    pub trigger: Vec<String>,
    /// Disable idle states deeper than N on the measured CPUs for the run (-1: all), restored after
    #[arg(long = "deepest-idle-state", value_name = "N", allow_negative_numbers = true, value_parser = super::parse::idle_state)]
    pub deepest_idle_state: Option<i32>,
    /// When a threshold is hit: trace[,file=F], shell,command=CMD, signal,num=N,pid=PID|parent, continue (repeatable)
    #[arg(long = "on-threshold", value_name = "ACTION")]
    pub on_threshold: Vec<String>,
    /// At the end of the run: the same actions (but continue)
    #[arg(long = "on-end", value_name = "ACTION")]
    pub on_end: Vec<String>,
    /// Stop at the first IRQ or thread latency above US; print only the analysis
    #[arg(long = "aa-only", value_name = "US")]
    pub aa_only: Option<u64>,
    /// hist: no IRQ columns
    #[arg(long = "no-irq")]
    pub no_irq: bool,
    /// hist: no thread columns
    #[arg(long = "no-thread")]
    pub no_thread: bool,
    /// hist's layout options (-b, -E, --no-header, --no-summary, --no-index, --with-zeros)
    #[command(flatten)]
    pub hist: HistArgs,
    /// Write the RunResult (schema rtlab.run/1) to FILE
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// rtlab's HdrHistogram interval log (tags thread0_cpu1, with _irq, _thread and _user stages)
    #[command(flatten)]
    pub hlog: super::hlog::HlogArgs,
}

/// The histogram options rtla's `timerlat hist` and `osnoise hist` share.
#[derive(Args, Debug, Clone)]
pub struct HistArgs {
    /// hist: bucket size in µs [default: 1]
    #[arg(short = 'b', long = "bucket-size", value_name = "N", default_value = "1")]
    pub bucket_size: u64,
    /// hist: number of buckets [default: 256]
    #[arg(short = 'E', long = "entries", value_name = "N", default_value = "256")]
    pub entries: u64,
    /// hist: no header
    #[arg(long = "no-header")]
    pub no_header: bool,
    /// hist: no summary rows
    #[arg(long = "no-summary")]
    pub no_summary: bool,
    /// hist: no index column
    #[arg(long = "no-index")]
    pub no_index: bool,
    /// hist: print rows whose counts are all zero
    #[arg(long = "with-zeros")]
    pub with_zeros: bool,
}

impl HistArgs {
    /// rtla's refusal of these values, in its words, if one applies.
    pub fn refusal(&self) -> Option<String> {
        if self.bucket_size == 0 || self.bucket_size >= 1_000_000 {
            return Some(format!("-b {}: Bucket size needs to be > 0 and <= 1000000", self.bucket_size));
        }
        if !(10..=9_999_999).contains(&self.entries) {
            return Some(format!("-E {}: Entries must be > 10 and < 9999999", self.entries));
        }
        (self.no_index && !self.with_zeros)
            .then(|| "--no-index: no-index set with with-zeros is not set - it does not make sense".to_string())
    }

    /// The run's histogram options: buckets of -b µs (ns with `nano`) over the whole table (-E
    /// of them) and at least 10 ms, so that every sample below the table's end lands in exactly
    /// rtla's bucket.
    pub fn layout_args(&self, nano: bool) -> [String; 4] {
        let (b, unit, least) =
            if nano { (self.bucket_size, "ns", 10_000_000) } else { (self.bucket_size, "us", 10_000) };
        let range = (self.entries * b).max(least).div_ceil(b) * b;
        ["--bucket-size".into(), format!("{b}{unit}"), "--range".into(), format!("{range}{unit}")]
    }

    /// hist's layout, with the IRQ and thread columns as asked, in ns with `nano`.
    pub fn layout(&self, irq: bool, thread: bool, nano: bool) -> HistLayout {
        HistLayout {
            bucket_us: self.bucket_size,
            entries: self.entries,
            irq,
            thread,
            header: !self.no_header,
            summary: !self.no_summary,
            index: !self.no_index,
            zeros: self.with_zeros,
            nano,
            user: true,
            all: true,
        }
    }
}

/// `RTLAB_RTLA_LAYOUT`: `6.1` prints `timerlat hist` as rtla 6.1 (Debian 12's) did, IRQ and Thr
/// columns and no ALL block, for parsers written against it (Linaro's `parse_rtla.py` fails on
/// the newest rtla's `ALL:` line and reads its Usr columns as the next CPU's); unset or `latest`,
/// the newest rtla's layout.
fn rtla_6_1_layout() -> Result<bool, UsageError> {
    match std::env::var_os("RTLAB_RTLA_LAYOUT") {
        None => Ok(false),
        Some(v) if v == "latest" => Ok(false),
        Some(v) if v == "6.1" => Ok(true),
        Some(v) => Err(usage(format!(
            "RTLAB_RTLA_LAYOUT={}: not a layout rtlab prints; use 6.1 (IRQ and Thr columns, no ALL block) or \
             latest (unset)",
            v.to_string_lossy()
        ))),
    }
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// rtla's duration: N seconds, or N with s, m, h or d.
fn duration(text: &str) -> Result<u64, UsageError> {
    let t = text.trim();
    let (num, mult) = match t.chars().last() {
        Some('s') => (&t[..t.len() - 1], 1),
        Some('m') => (&t[..t.len() - 1], 60),
        Some('h') => (&t[..t.len() - 1], 3600),
        Some('d') => (&t[..t.len() - 1], 86_400),
        _ => (t, 1),
    };
    match num.parse::<u64>() {
        Ok(n) if n > 0 => n
            .checked_mul(mult)
            .filter(|s| crate::units::to_ns_u(*s, crate::units::NS_PER_S, "").is_ok())
            .ok_or_else(|| {
                usage(format!(
                    "-d '{text}' is out of range: at most {} days (e.g. -d 10m)",
                    i64::MAX / crate::units::NS_PER_S / 86_400
                ))
            }),
        _ => Err(usage(format!("-d '{text}': give a whole number of seconds, or N with s, m, h or d (e.g. -d 10m)"))),
    }
}

/// rtla's duration (`-d`) as rtlab's: `10m` → `600s`.
pub fn duration_seconds(text: &str) -> Result<String, UsageError> {
    duration(text).map(|s| format!("{s}s"))
}

/// rtla's `-P`: `o:NICE`, `r:PRIO`, `f:PRIO`, `d:RUNTIME:PERIOD` as `rtlab run` flags.
pub fn priority(text: &str) -> Result<Vec<String>, UsageError> {
    let bad = || usage(format!("-P '{text}': give o:NICE, r:PRIO, f:PRIO or d:RUNTIME:PERIOD (e.g. -P f:95)"));
    // rtla's parse_prio takes the policy letter in either case (F:1 as f:1).
    let lower = text.get(..1).map(|p| p.to_ascii_lowercase() + &text[1..]).unwrap_or_default();
    let parts: Vec<&str> = lower.split(':').collect();
    Ok(match parts.as_slice() {
        ["o", nice] => match nice.parse::<i32>().map_err(|_| bad())? {
            0 => vec!["--policy".into(), "other".into()],
            _ => return Err(usage(format!("-P '{text}': rtlab's probes take no nice value; use -P o:0"))),
        },
        [policy @ ("r" | "f"), p] => {
            // Checked here, under -P: rtlab's own -p would name itself in the message.
            let prio = p.parse::<u32>().ok().filter(|n| (1..=99).contains(n));
            let prio =
                prio.ok_or_else(|| usage(format!("-P '{text}': the priority must be 1 to 99 (e.g. -P f:95)")))?;
            let name = if *policy == "r" { "rr" } else { "fifo" };
            vec!["--policy".into(), name.into(), "-p".into(), prio.to_string()]
        }
        ["d", runtime, period] => {
            let ns = |v: &str| if v.chars().all(|c| c.is_ascii_digit()) { format!("{v}ns") } else { v.to_string() };
            vec![
                "--policy".into(),
                "deadline".into(),
                "--dl-runtime".into(),
                ns(runtime),
                "--dl-period".into(),
                ns(period),
            ]
        }
        _ => return Err(bad()),
    })
}

impl TimerlatOptions {
    /// Validates rtla's options and maps them onto an `rtlab run --stages` plan.
    pub fn from_cli(a: TimerlatArgs) -> Result<TimerlatOptions, UsageError> {
        a.refuse()?;
        a.refuse_as_rtla()?;
        let (irq, thread) = a.thresholds();
        let ns = |v: Option<u64>, flag: &str| {
            v.map(|us| crate::units::to_ns_u(us, crate::units::NS_PER_US, flag)).transpose().map_err(usage)
        };
        let (irq_ns, thread_ns) = (ns(irq, "-i")?, ns(thread, "-T")?);
        let run = match super::Cli::try_parse_from(a.run_argv(irq, thread)?) {
            Ok(super::Cli { command: super::Command::Run(super::Lazy(r)) }) => *r,
            Ok(_) => unreachable!("the argv names `run`"),
            Err(e) => return Err(usage(format!("{}", e.render()).lines().next().unwrap_or("bad option").to_string())),
        };
        let (on_threshold, on_end, trace) = a.actions(irq.is_some() || thread.is_some())?;
        let trace_at_end = on_end.iter().any(|x| matches!(x, Action::Trace(_)));
        let mut notes = Vec::new();
        if a.auto.is_some() {
            notes.push(
                "-a: the stack at the IRQ needs the kernel's timerlat tracer; the analysis names the blocking \
                 task and the interference instead"
                    .to_string(),
            );
        }
        let mut run = crate::commands::run::RunOptions::from_cli(run)?;
        if let crate::probes::ProbeSpec::Os(os) = &mut run.plan.probe {
            os.stage_stop = crate::probes::watch::StageLimits {
                irq_ns,
                thread_ns,
                continues: on_threshold.contains(&Action::Continue),
                trace_at_end,
            };
            os.stage_trace = trace.clone();
            // rtla's user-space workers: one process per CPU, found by tools as rtla's are.
            os.workers = Some("timerlatu".into());
        }
        let mut hist = a.hist.layout(!a.no_irq, !a.no_thread, a.nano);
        if rtla_6_1_layout()? {
            (hist.user, hist.all) = (false, false);
        }
        Ok(TimerlatOptions {
            plan: run.plan,
            json: run.json,
            mode: a.mode,
            quiet: a.quiet,
            hist,
            aa: !a.no_aa,
            aa_only: a.aa_only.is_some(),
            on_threshold,
            on_end,
            trace,
            dump_tasks: a.dump_tasks,
            notes,
        })
    }
}

/// The `--on-threshold` actions, the `--on-end` ones, and where the `trace` action writes.
pub type Actions = (Vec<Action>, Vec<Action>, Option<PathBuf>);

impl TimerlatArgs {
    /// The IRQ and thread thresholds (µs) the options set (-i, -T, -a, --aa-only); as in rtla,
    /// 0 is none.
    fn thresholds(&self) -> (Option<u64>, Option<u64>) {
        let given = |v: Option<u64>| v.filter(|us| *us > 0);
        let preset = given(self.auto).or(given(self.aa_only));
        (given(self.irq).or(preset), given(self.thread).or(preset))
    }

    /// The `rtlab run --stages` command line rtla's options are.
    fn run_argv(&self, irq: Option<u64>, thread: Option<u64>) -> Result<Vec<String>, UsageError> {
        let mut argv: Vec<String> = vec!["rtlab".into(), "run".into(), "--stages".into(), "-q".into()];
        argv.extend(["-i".into(), format!("{}us", self.period)]);
        argv.extend(self.hist.layout_args(self.nano));
        match &self.cpus {
            Some(c) => argv.extend(["-a".into(), super::run::stand_in_cpus(c, "-c")?, "-t".into()]),
            None => argv.push("-t".into()),
        }
        argv.extend(
            self.priority
                .as_deref()
                .map(priority)
                .transpose()?
                .unwrap_or_else(|| vec!["--policy".into(), "fifo".into(), "-p".into(), "95".into()]),
        );
        match self.dma_latency {
            Some(us) => argv.extend(["--latency".into(), us.to_string()]),
            None => argv.push("--no-dma-latency".into()),
        }
        if let Some(d) = &self.duration {
            argv.extend(["-D".into(), duration_seconds(d)?]);
        }
        // rtla's --warm-up: the workload runs S seconds before its data are collected.
        if let Some(s) = self.warm_up.filter(|s| *s > 0) {
            argv.extend(["--warm-up".into(), format!("{s}s")]);
        }
        if let Some(h) = &self.house_keeping {
            argv.extend(["--mainaffinity".into(), super::run::stand_in_cpus(h, "-H")?]);
        }
        // A stop is analysed from its explanation: every wakeup above the lowest threshold is
        // explained (an IRQ or thread latency above it makes the wakeup above it too).
        if let (Some(t), false) = ([irq, thread].into_iter().flatten().min(), self.no_aa) {
            argv.push(format!("--explain={t}us"));
        }
        if let Some(n) = self.deepest_idle_state {
            argv.extend(["--deepest-idle-state".into(), n.to_string()]);
        }
        if let Some(j) = &self.json {
            argv.extend(["--json".into(), j.display().to_string(), "--no-checkpoint".into()]);
        }
        if let Some(h) = &self.hlog.hlog {
            let secs = self.hlog.hlog_interval.as_secs_f64();
            argv.extend(["--hlog".into(), h.display().to_string(), "--hlog-interval".into(), format!("{secs}s")]);
        }
        Ok(argv)
    }

    /// The `--on-threshold` and `--on-end` actions and where the run writes its events for
    /// the `trace` actions (see [`rtla_actions`]); `thresholds`: a threshold was given.
    fn actions(&self, thresholds: bool) -> Result<Actions, UsageError> {
        let asks = RtlaActions {
            on_threshold: &self.on_threshold,
            on_end: &self.on_end,
            trace: self.trace.as_ref(),
            auto: self.auto.is_some(),
            default_file: crate::output::timerlat::TRACE_FILE,
            thresholds,
            threshold_flags: "-i US, -T US or -a US",
        };
        rtla_actions(&asks)
    }
}

/// What rtla's action options ask, for [`rtla_actions`].
pub struct RtlaActions<'a> {
    /// `--on-threshold` values.
    pub on_threshold: &'a [String],
    /// `--on-end` values.
    pub on_end: &'a [String],
    /// `-t [FILE]`.
    pub trace: Option<&'a Option<String>>,
    /// `-a` was given (it saves the trace at the stop).
    pub auto: bool,
    /// The tool's trace file (`timerlat_trace.txt`, `osnoise_trace.txt`).
    pub default_file: &'a str,
    /// A threshold was given to act on.
    pub thresholds: bool,
    /// The options that give one, for the refusal of `--on-threshold` without.
    pub threshold_flags: &'a str,
}

/// rtla's actions, checked: `-t [FILE]` and `-a` add a `trace` at the threshold, as rtla's
/// `actions_add_trace_output` does; the file the run writes its record to is the `--on-end`
/// trace's when there is one (written at every end; a threshold's `trace` naming another file
/// copies it), else the threshold's. Every trace file is checked before anything runs.
pub fn rtla_actions(a: &RtlaActions<'_>) -> Result<Actions, UsageError> {
    let parse = |flag: &str, v: &[String]| -> Result<Vec<Action>, UsageError> {
        v.iter()
            .map(|t| match Action::parse(t) {
                Ok(Action::Trace(_)) if t == "trace" => Ok(Action::Trace(a.default_file.into())),
                Ok(x) => Ok(x),
                Err(e) => Err(usage(format!("{flag} {e}"))),
            })
            .collect()
    };
    let mut on_threshold = parse("--on-threshold", a.on_threshold)?;
    let on_end = parse("--on-end", a.on_end)?;
    if on_end.contains(&Action::Continue) {
        return Err(usage("--on-end continue: the run has ended; continue is an --on-threshold action"));
    }
    if !a.thresholds && !on_threshold.is_empty() {
        return Err(usage(format!("--on-threshold: give a threshold to act on ({})", a.threshold_flags)));
    }
    let traced = |v: &[Action]| -> Vec<PathBuf> {
        v.iter().filter_map(|x| if let Action::Trace(f) = x { Some(f.clone()) } else { None }).collect()
    };
    let asked = match a.trace {
        Some(f) => Some(f.clone().unwrap_or_else(|| a.default_file.into())),
        None => a.auto.then(|| a.default_file.into()),
    };
    if let (Some(f), true) = (asked, traced(&on_threshold).is_empty()) {
        on_threshold.push(Action::Trace(f.into()));
    }
    for (flag, list) in [("--on-threshold", &on_threshold), ("--on-end", &on_end)] {
        for f in traced(list) {
            crate::export::check_output(&f).map_err(|e| usage(format!("{flag} trace: {e}")))?;
        }
    }
    let trace = traced(&on_end).pop().or_else(|| traced(&on_threshold).pop());
    Ok((on_threshold, on_end, trace))
}

impl TimerlatArgs {
    /// rtla's own refusals of values and combinations, in its words.
    fn refuse_as_rtla(&self) -> Result<(), UsageError> {
        if let Some(why) = self.hist.refusal() {
            return Err(usage(why));
        }
        let refusals = [
            (self.period > 1_000_000, format!("-p {}: Period longer than 1 s", self.period)),
            (self.period == 0, "-p 0: the period must be at least 1 us".to_string()),
            (
                self.dma_latency.is_some_and(|d| !(0..=10_000).contains(&d)),
                format!("--dma-latency {}: --dma-latency needs to be >= 0 and < 10000", self.dma_latency.unwrap_or(0)),
            ),
            (
                self.no_irq && self.no_thread,
                "--no-irq --no-thread: no-irq and no-thread set, there is nothing to do here".to_string(),
            ),
        ];
        match refusals.into_iter().find(|(bad, _)| *bad) {
            Some((_, why)) => Err(usage(why)),
            None => Ok(()),
        }
    }

    /// The options only the kernel's tracer can do: exit 2 with the reason.
    fn refuse(&self) -> Result<(), UsageError> {
        tracer_events(&self.event, &self.filter, &self.trigger)?;
        let tracer =
            "needs the kernel's timerlat tracer, which this kernel does not have (rtlab measures with its own \
                      threads and the kernel's events)";
        for (given, flag, why) in [
            (self.kernel_threads, "-k", tracer),
            (self.stack.is_some(), "-s", "saves the stack at the IRQ from inside the timerlat tracer; use --explain's attribution instead (rtlab run --stages --explain)"),
            (!self.event.is_empty(), "-e", tracer),
            (!self.filter.is_empty(), "--filter", tracer),
            (!self.trigger.is_empty(), "--trigger", tracer),
        ] {
            if given {
                return Err(usage(format!("{flag} {why}")));
            }
        }
        Ok(())
    }
}

/// rtla's own order check of `-e`, `--filter` and `--trigger` (each filter or trigger goes to
/// the `-e` before it), in its words; given twice, each pair is checked, never clap's "cannot
/// be used multiple times".
pub fn tracer_events(events: &[String], filters: &[String], triggers: &[String]) -> Result<(), UsageError> {
    if events.is_empty() && !triggers.is_empty() {
        return Err(usage("--trigger requires a previous -e"));
    }
    if events.is_empty() && !filters.is_empty() {
        return Err(usage("--filter requires a previous -e"));
    }
    Ok(())
}

/// The help rtla prints for `rtla TOOL [MODE] --help` (its `TOOL version …` or `rtla TOOL
/// MODE: … (version …)` line first, as rtla's clients look for it), when argv asks for it
/// under rtla's name.
pub fn rtla_help(args: &[String]) -> Option<String> {
    if !invoked_as_rtla(args) {
        return None;
    }
    let tool = args.get(1)?.as_str();
    if !args.iter().skip(2).any(|a| a == "-h" || a == "--help") {
        return None;
    }
    let v = env!("CARGO_PKG_VERSION");
    let mode = args.get(2).map(String::as_str).filter(|m| *m == "top" || *m == "hist");
    let long = |name: &str| {
        let mut cmd = <super::Cli as clap::CommandFactory>::command();
        cmd.find_subcommand_mut(name).map(|c| c.render_long_help().to_string()).unwrap_or_default()
    };
    Some(match (tool, mode) {
        ("timerlat", None) => format!(
            "\ntimerlat version {v} (rtlab)\n\n  usage: [rtla] timerlat [MODE] ...\n\n  modes:\n     top   - a per-CPU \
             summary of the timer latency\n     hist  - a histogram of the timer latency per CPU\n\nwithout a MODE, \
             top runs with the arguments given\n"
        ),
        ("osnoise", None) => format!(
            "\nosnoise version {v} (rtlab)\n\n  usage: [rtla] osnoise [MODE] ...\n\n  modes:\n     top   - a per-CPU \
             summary of the OS noise\n     hist  - a histogram of the OS noise per CPU\n\nwithout a MODE, top runs \
             with the arguments given\n"
        ),
        ("timerlat", Some(m)) => {
            let what = if m == "top" {
                "a per-cpu summary of the timer latency"
            } else {
                "a per-cpu histogram of the timer latency"
            };
            format!("rtla timerlat {m}: {what} (version {v}, rtlab)\n\n{}", long("timerlat"))
        }
        ("osnoise", Some(m)) => {
            let what =
                if m == "top" { "a per-cpu summary of the OS noise" } else { "a per-cpu histogram of the OS noise" };
            format!("rtla osnoise {m}: {what} (version {v}, rtlab)\n\n{}", long("osnoise"))
        }
        ("hwnoise", _) => {
            format!("rtla hwnoise: a summary of hardware-related noise (version {v}, rtlab)\n\n{HWNOISE_HELP}")
        }
        _ => return None,
    })
}

/// `rtla hwnoise --help` after its version line: hwnoise's own options and what its figures are.
const HWNOISE_HELP: &str = "  usage: rtla hwnoise [-h] [-q] [-d s] [-a us] [-p us] [-r us] [-s us] [-S us] [-T us] \\
          [-t [file]] [-c cpu-list] [-H cpu-list] [-P priority] [--warm-up s] \\
          [--on-threshold action] [--on-end action]

  One busy thread per CPU reads the CPU's counter in a loop; a gap of at least -T us that no
  interrupt, softirq or thread of this kernel explains is hardware noise (rtla runs its loop
  with interrupts off; rtlab's runs in user space and judges each gap from the kernel's events,
  so only hardware and NMI noise is counted, judged and printed).

          -h/--help: print this menu
          -a/--auto us: stop at the first hardware noise above us and save the trace
          -p/--period us: period of each sample, in us [default: 1000000]
          -r/--runtime us: busy part of each period, in us [default: 750000]
          -s/--stop us: stop at the first single hardware noise above us
          -S/--stop-total us: stop when a period's hardware noise adds up above us
          -T/--threshold us: the smallest gap that is a noise, in us [default: 1]
          -t/--trace [file]: at a stop, save what was recorded to [file|osnoise_trace.txt]
          -c/--cpus cpu-list: the CPUs to measure
          -H/--house-keeping cpu-list: run rtlab's own threads on these CPUs
          -d/--duration time[s|m|h|d]: duration of the session
          -P/--priority o:prio|r:prio|f:prio: scheduling of the busy threads
          -q/--quiet: print only a summary at the end
             --warm-up s: let the busy threads run s seconds before collecting data
             --on-threshold action: trace[,file=F], shell,command=CMD, signal,num=N,pid=PID|parent, continue
             --on-end action: the same, at the end of the run
";

/// True when rtlab runs under rtla's name (a link named `rtla`): its exit statuses are then
/// rtla's ([`rtla_status`]).
pub fn invoked_as_rtla(args: &[String]) -> bool {
    args.first().and_then(|a| std::path::Path::new(a).file_name()).is_some_and(|n| n == "rtla")
}

/// rtla's exit status for rtlab's (its man pages, EXIT STATUS): 0 when no stop condition was
/// hit, 1 for an error or an invalid argument, 2 when the run hit its stop condition.
pub fn rtla_status(rtlab: i32) -> i32 {
    match rtlab {
        0 => 0,
        3 => 2,
        130 => 130,
        _ => 1,
    }
}

/// argv as `rtlab` sees it when rtlab runs as `rtla` (a link): `rtla timerlat …` → `rtlab
/// timerlat …`; rtla's other tools are named with what rtlab has instead.
pub fn rtla_args(args: &[String]) -> Option<Result<Vec<String>, UsageError>> {
    let name = std::path::Path::new(args.first()?).file_name()?.to_str()?;
    if name != "rtla" {
        return None;
    }
    Some(match args.get(1).map(String::as_str) {
        Some("timerlat") => Ok(std::iter::once("rtlab".to_string()).chain(args[1..].iter().cloned()).collect()),
        Some("osnoise") => Ok(["rtlab"].iter().map(|s| s.to_string()).chain(args[1..].iter().cloned()).collect()),
        // hwnoise is osnoise's top with only hardware and NMI noise counted.
        Some("hwnoise") => Ok(["rtlab", "osnoise", "top", "--hwnoise"]
            .iter()
            .map(|s| s.to_string())
            .chain(args[2..].iter().cloned())
            .collect()),
        Some(other) => Err(usage(format!(
            "rtla {other}: rtlab answers as rtla for `rtla timerlat`, `rtla osnoise` and `rtla hwnoise` only"
        ))),
        None => Err(usage("rtla: give a tool, e.g. rtla timerlat hist")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtla_durations_and_priorities_map_onto_rtlabs() {
        assert_eq!(duration("10").unwrap(), 10);
        assert_eq!(duration("2m").unwrap(), 120);
        assert_eq!(duration("1d").unwrap(), 86_400);
        assert!(duration("x").is_err());
        assert_eq!(priority("f:95").unwrap(), ["--policy", "fifo", "-p", "95"]);
        assert_eq!(priority("d:100us:1ms").unwrap()[1], "deadline");
        assert!(priority("q:1").is_err());
        assert_eq!(priority("F:1").unwrap(), ["--policy", "fifo", "-p", "1"], "rtla takes upper-case letters");
        assert_eq!(priority("R:2").unwrap(), ["--policy", "rr", "-p", "2"]);
        assert_eq!(priority("O:0").unwrap(), ["--policy", "other"]);
    }

    fn options(args: &[&str]) -> crate::commands::timerlat::TimerlatOptions {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["rtlab", "timerlat"].iter().chain(args)).unwrap();
        let crate::cli::Command::Timerlat(crate::cli::Lazy(a)) = cli.command else { panic!("not timerlat") };
        TimerlatOptions::from_cli(*a).unwrap()
    }

    #[test]
    fn rtlas_run_options_become_the_runs_cpus_period_housekeeping_pm_qos_and_thresholds() {
        let online = crate::rt::affinity::online_cpus();
        let cpu = online.cpus().last().expect("a CPU").to_string();
        let o =
            options(&["top", "-c", &cpu, "-p", "500", "-H", "0", "--dma-latency", "0", "-u", "-i", "40", "-T", "50"]);
        let os = o.plan.os().expect("OS probe threads");
        assert!(os.stages, "the stages are watched");
        let want: usize = cpu.parse().unwrap();
        assert!(os.threads.iter().all(|t| t.cpu == Some(want) && t.interval_ns == 500_000), "{:?}", os.threads);
        assert_eq!(
            os.main_affinity,
            Some(crate::rt::affinity::CpuSet::from_cpus([0])),
            "-H: where rtlab's own threads run"
        );
        assert_eq!(os.dma_latency_us, Some(0));
        assert_eq!((os.stage_stop.irq_ns, os.stage_stop.thread_ns), (Some(40_000), Some(50_000)));
        // rtla leaves /dev/cpu_dma_latency alone unless asked, and so does rtlab timerlat.
        let plain = options(&["hist", "-c", &cpu]);
        assert_eq!(plain.plan.os().unwrap().dma_latency_us, None);
        assert_eq!(plain.plan.os().unwrap().threads[0].interval_ns, 1_000_000, "rtla's default period: 1 ms");
    }
}
