//! `rtlab noise`: arguments, defaults, and validation into a [`NoiseOptions`].

use super::parse;
use super::UsageError;
use crate::commands::noise::{Format, NoiseOptions};
use crate::measure::histogram::Layout;
use crate::probes::noise::{CounterKind, Plan as NoisePlan};
use crate::probes::{ProbeSpec, ThreadPlan};
use crate::rt::affinity::{self, CpuSet};
use crate::rt::sched::{Policy, SchedParams};
use crate::session::Plan;
use crate::units::Unit;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The long help of `rtlab noise`.
pub const LONG_ABOUT: &str = "Measure OS noise: how much of each CPU the system takes from a busy thread.

One thread per CPU (pinned, its policy applied, memory locked) pre-heats its CPU for --warm-up \
(1 s, as oslat), calibrating its counter against CLOCK_MONOTONIC and timing its own loop, then \
reads the counter back to back (the CPU's own — x86's TSC, aarch64's CNTVCT — where it can be \
trusted, else clock_gettime). Every gap of \
at least --threshold is noise: its length goes into the histogram that drops nothing, and the \
table gives per CPU the runtime, the noise, the % of the CPU available, the largest single \
noise, noises per second and, with --attribute, from the CPU's trace events, how many came from \
hardware/the hypervisor (HW), NMIs, IRQs, softirqs and other threads (as rtla osnoise, on any \
kernel; tracing lengthens each interruption it records, so it is off unless asked for).

Defaults: every online CPU, SCHED_OTHER, threshold 1 µs, no duty cycle (--runtime = --period = \
1 s), no attribution (--attribute: every noise, from trace events; root and tracefs), until Ctrl-C \
(or -D). Times without a unit are µs (--threshold, --runtime, --period, --max-noise) or seconds (-D).

An RT-priority run needs -D; a busy RT thread on every CPU with RT throttling off is refused \
unless --force. --format oslat prints oslat's layout (and --json writes oslat's JSON).

Exit codes: 0 ok, 1 failure, 2 bad usage, 3 a single noise exceeded --max-noise.";

/// `rtlab noise [sweep]`: one measurement, or a grid of them.
#[derive(Args, Debug, Clone)]
#[command(args_conflicts_with_subcommands = true)]
pub struct NoiseCommandArgs {
    /// `sweep`: a grid of noise measurements.
    #[command(subcommand)]
    pub sweep: Option<NoiseSubcommand>,
    /// The measurement's options.
    #[command(flatten)]
    pub args: super::Lazy<NoiseArgs>,
}

/// `rtlab noise`'s subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum NoiseSubcommand {
    /// A grid of noise runs over loads (workers, kind, policy) and the busy threads' policy,
    /// each result in --out DIR (sweep.csv with noise columns, sweep.json, points/)
    Sweep(super::Lazy<Box<NoiseSweepArgs>>),
}

/// `rtlab noise sweep` arguments: the axes, then every point's noise options.
#[derive(Args, Debug, Clone)]
pub struct NoiseSweepArgs {
    /// Directory for sweep.csv, sweep.json and points/
    #[arg(long = "out", value_name = "DIR", required = true)]
    pub out: PathBuf,
    /// Load workers axis: 0..4, 0..8:2 or 0,2,4 (applies to the first --load; cpu if none)
    #[arg(long = "workers", value_name = "COUNTS", value_parser = super::sweep::counts)]
    pub workers: Option<super::sweep::Counts>,
    /// Load kind axis: cpu,messaging,memory,io
    #[arg(long = "load-kind", value_name = "KINDS", value_parser = super::sweep::kinds)]
    pub load_kinds: Option<super::sweep::List<String>>,
    /// Load policy axis: other,batch,idle,fifo:N,rr:N
    #[arg(long = "load-policy", value_name = "POLICIES", value_parser = super::sweep::load_policies)]
    pub load_policies: Option<super::sweep::List<crate::load::LoadSched>>,
    /// Busy threads' policy axis: other,fifo:95,…
    #[arg(long = "probe-policy", value_name = "POLICIES", value_parser = super::sweep::probe_policies)]
    pub probe_policies: Option<super::sweep::List<(Policy, Option<u32>)>>,
    /// Keep the points already in DIR and run only the missing ones
    #[arg(long)]
    pub resume: bool,
    /// The options of every point (see `rtlab noise --help`)
    #[command(flatten)]
    pub noise: NoiseArgs,
}

impl crate::commands::sweep::SweepOptions {
    /// `rtlab noise sweep`: every point a noise run, checked before the first one runs.
    pub fn from_noise(a: NoiseSweepArgs) -> Result<crate::commands::sweep::SweepOptions, UsageError> {
        if a.noise.duration.is_none() {
            return Err(usage("every sweep point needs a length: give -D (e.g. -D 5s)"));
        }
        if a.noise.json.is_some() || a.noise.samples.is_some() || a.noise.hlog.hlog.is_some() {
            return Err(usage(
                "--json, --samples and --hlog do not apply to a sweep; every result goes into --out DIR",
            ));
        }
        let axes = crate::sweep::Axes {
            deadlines: None,
            works: None,
            load_kinds: a.load_kinds.as_ref().map(|l| l.0.clone()),
            load_policies: a.load_policies.as_ref().map(|l| l.0.clone()),
            probe_policies: a.probe_policies.as_ref().map(|l| l.0.clone()),
            methods: None,
            workers: a.workers.as_ref().map(|c| c.0.clone()),
            workers_in_runtime: false,
        };
        let points = crate::sweep::expand(&axes, &a.noise.loads).map_err(usage)?;
        super::sweep::planned_sweep(a.out, a.resume, a.noise.duration, points, |p| {
            let mut n = a.noise.clone();
            n.loads = p.loads.clone();
            n.quiet = true;
            if let Some((policy, prio)) = p.probe {
                n.policy = Some(policy);
                n.priority = prio;
            }
            NoiseOptions::from_cli(n).map(|o| o.plan)
        })
    }
}

/// `rtlab noise` arguments (see [`LONG_ABOUT`]).
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Examples:\n  rtlab noise -c 1 -D 30s\n  rtlab noise -c 2,3 --policy fifo -p 95 -D 1m --json noise.json\n  rtlab noise -D 10s --runtime 900ms --period 1s\n  rtlab noise -c 1 -D 3 --format oslat"
)]
pub struct NoiseArgs {
    /// The CPUs to measure, one busy thread each (0, 1,3, 0-3) [default: every online CPU]
    #[arg(short = 'c', long = "cpus", value_name = "CPUSET", value_parser = parse::cpuset)]
    pub cpus: Option<CpuSet>,

    /// Run length: 30, 30s, 1.5m, 2h (plain number = seconds) [default: until Ctrl-C]
    #[arg(short = 'D', long = "duration", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::duration)]
    pub duration: Option<Duration>,

    /// Scheduling policy of the busy threads (not deadline) [default: other]
    #[arg(long, value_name = "POLICY", ignore_case = true, value_parser = super::parse::policy())]
    pub policy: Option<Policy>,

    /// Priority for fifo/rr, 1-99 [default: 95 with fifo/rr]
    #[arg(short = 'p', long = "priority", value_name = "PRIO", allow_negative_numbers = true, value_parser = parse::priority)]
    pub priority: Option<u32>,

    /// A gap of at least this is noise (plain number = µs); it must be above the loop's own
    /// iteration time, measured during the pre-heat
    #[arg(long = "threshold", value_name = "TIME", default_value = "1us", allow_negative_numbers = true, value_parser = parse::latency)]
    pub threshold: i64,

    /// Busy part of each period (duty cycle, as osnoise's runtime) [default: the whole period]
    #[arg(long = "runtime", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    pub runtime: Option<i64>,

    /// Duty-cycle period: the threads sleep for period − runtime of every period
    #[arg(long = "period", value_name = "TIME", default_value = "1s", allow_negative_numbers = true, value_parser = parse::latency)]
    pub period: i64,

    /// Pre-heat before measuring: calibrates the counter and times the loop (at least 100ms)
    #[arg(long = "warm-up", value_name = "TIME", default_value = "1s", allow_negative_numbers = true, value_parser = parse::duration)]
    pub warmup: Duration,

    /// The busy loop's clock: auto (the CPU's counter where it can be trusted — the TSC when
    /// invariant, CNTVCT — and it is the kernel's clocksource, else monotonic), tsc, cntvct, monotonic
    #[arg(long = "counter", value_name = "COUNTER", default_value = "auto", value_parser = ["auto", "tsc", "cntvct", "monotonic"])]
    pub counter: String,

    /// Attribute the noises of at least TIME (default: --threshold) to HW, NMI, IRQ, softirq
    /// and threads from the measured CPUs' trace events (rtlab's own tracefs instance). Off by
    /// default: recording the events lengthens each interruption (BENCHMARKS.md section 8)
    #[arg(long = "attribute", value_name = "TIME", num_args = 0..=1, require_equals = true, value_parser = parse::latency, conflicts_with = "no_attribute")]
    pub attribute: Option<Option<i64>>,

    /// Record no trace events (the default; kept for scripts written when attribution was on
    /// by default)
    #[arg(long = "no-attribute")]
    pub no_attribute: bool,

    /// With --attribute: keep the N largest noises explained whole (parts and timeline)
    #[arg(long = "explain-worst", value_name = "N", default_value = "10", value_parser = clap::value_parser!(u16).range(0..=1000))]
    pub explain_worst: u16,

    /// Verdict: fail (exit 3) if a single noise exceeds this (plain number = µs)
    #[arg(long = "max-noise", value_name = "TIME", allow_negative_numbers = true, value_parser = parse::latency)]
    pub max_noise: Option<i64>,

    /// Output layout: table (rtla osnoise's columns) or oslat (its text; --json writes its JSON)
    #[arg(long = "format", value_enum, default_value = "table")]
    pub format: Format,

    /// With --format oslat: histogram buckets of 1 µs (the last holds the overflows), as oslat -b
    #[arg(long = "oslat-buckets", value_name = "N", default_value = "32", value_parser = clap::value_parser!(u32).range(4..=1024))]
    pub oslat_buckets: u32,
    /// With --format oslat: leave out the buckets that are zero on every core, as oslat -z
    #[arg(long = "oslat-omit-zeros")]
    pub oslat_omit_zeros: bool,

    /// Write the RunResult (kind noise) to FILE, atomically; - for stdout
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Record every noise (CPU, time, length) into FILE (read it with `rtlab samples FILE`)
    #[arg(long = "samples", value_name = "FILE")]
    pub samples: Option<PathBuf>,

    /// An HdrHistogram interval log
    #[command(flatten)]
    pub hlog: super::hlog::HlogArgs,

    /// Pin the reporting (main) thread and the trace reader to these CPUs
    #[arg(long = "mainaffinity", value_name = "CPUSET", value_parser = parse::cpuset)]
    pub main_affinity: Option<CpuSet>,

    /// Do not lock memory
    #[arg(long = "no-mlockall")]
    pub no_mlockall: bool,

    /// Histogram bucket width (plain number = µs)
    #[arg(long = "bucket-size", value_name = "TIME", default_value = "1us", allow_negative_numbers = true, value_parser = parse::latency)]
    pub bucket_size: i64,

    /// End of the linear histogram region; beyond it buckets are 1/32 octave wide
    #[arg(long = "range", value_name = "TIME", default_value = "10ms", allow_negative_numbers = true, value_parser = parse::latency)]
    pub range: i64,

    /// Background load beside the measurement (repeatable; `rtlab load --help`)
    #[arg(long = "load", value_name = "SPEC", value_parser = super::load::parse_spec)]
    pub loads: Vec<crate::load::LoadSpec>,

    /// Allow a busy RT thread (or RT busy load) on every CPU even with RT throttling disabled
    #[arg(long)]
    pub force: bool,

    /// Treat any downgrade (policy, priority, mlockall, affinity) as an error
    #[arg(long)]
    pub strict: bool,

    /// Show nanoseconds instead of microseconds
    #[arg(short = 'N', long = "nsecs")]
    pub nsecs: bool,

    /// Print nothing while measuring
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,

    /// Read /proc, /sys and /dev under DIR for the doctor's findings instead of / (tests)
    #[arg(long = "sysroot", value_name = "DIR", hide = true)]
    pub sysroot: Option<PathBuf>,
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// Why a busy thread on each of `cpus` at `policy` would be refused: an RT priority on every
/// online CPU while RT throttling is off (`sched_rt_runtime_us` = -1) would starve the kernel's
/// own threads; `None` when it is allowed (or forced).
pub fn refuse_starving(
    policy: Policy,
    cpus: &CpuSet,
    online: &CpuSet,
    rt_runtime_us: Option<i64>,
    force: bool,
) -> Option<String> {
    if !policy.is_realtime_priority() {
        return None;
    }
    let what = format!("a busy SCHED_{} thread", policy.name().to_uppercase());
    let fix = "leave a CPU out of -c, or use --policy other";
    crate::rt::privileges::refuse_rt_starvation(&what, (cpus, 0), online, rt_runtime_us, (force, fix))
}

impl NoiseOptions {
    /// Validates `rtlab noise`'s arguments against each other and against this machine.
    pub fn from_cli(a: NoiseArgs) -> Result<NoiseOptions, UsageError> {
        a.validate()
    }
}

/// One busy thread per CPU of `cpus`, pinned, with `sched` and a duty-cycle period of `period_ns`.
fn busy_threads(cpus: &CpuSet, sched: SchedParams, period_ns: i64) -> Vec<ThreadPlan> {
    cpus.cpus()
        .iter()
        .enumerate()
        .map(|(index, &cpu)| ThreadPlan {
            index,
            cpu: Some(cpu),
            sched,
            interval_ns: period_ns,
            warmup_cycles: 0,
            name: None,
            work: None,
            offset_ns: 0,
        })
        .collect()
}

impl NoiseArgs {
    fn validate(self) -> Result<NoiseOptions, UsageError> {
        let online = affinity::online_cpus();
        let cpus = self.cpus.clone().unwrap_or_else(|| online.clone());
        if cpus.is_empty() {
            return Err(usage("-c names no CPU; give a CPU list such as 1 or 2-3"));
        }
        super::run::check_online(&cpus, &online, "-c")?;
        if let Some(set) = &self.main_affinity {
            super::run::check_online(set, &online, "--mainaffinity")?;
        }
        let policy = self.policy.unwrap_or(Policy::Other);
        if policy == Policy::Deadline {
            return Err(usage(
                "--policy deadline: a busy loop would only run for its runtime each period; use fifo/rr for an RT \
                 busy thread, or --runtime/--period for a duty cycle",
            ));
        }
        let priority = parse::policy_priority(policy, self.priority, super::run::DEFAULT_PRIORITY).map_err(usage)?;
        if policy.is_realtime_priority() && self.duration.is_none() {
            return Err(usage(format!(
                "a busy SCHED_{} thread needs a bounded run: give -D (e.g. -D 30s)",
                policy.name().to_uppercase()
            )));
        }
        let privileges = crate::rt::privileges::Privileges::current();
        if let Some(why) = refuse_starving(policy, &cpus, &online, privileges.sched_rt_runtime_us, self.force) {
            return Err(usage(why));
        }
        crate::load::check_safety(&self.loads, self.duration.is_some(), self.force, &privileges).map_err(usage)?;
        let (period, runtime) = self.timing()?;
        let (counter, counter_why) = self.counter()?;
        self.check_oslat_and_outputs()?;
        let layout = Layout::new(self.bucket_size as u64, self.range as u64).map_err(usage)?;
        layout.check_memory(cpus.len()).map_err(usage)?;
        let probe = NoisePlan {
            threads: busy_threads(&cpus, SchedParams::simple(policy, priority), period),
            counter,
            counter_why,
            threshold_ns: self.threshold,
            runtime_ns: runtime,
            period_ns: period,
            warmup: self.warmup,
            mlockall: !self.no_mlockall,
            main_affinity: self.main_affinity.clone(),
            watch_signals: policy.is_realtime_priority() && online.difference(&cpus).is_empty(),
            stop_above: Default::default(),
            edge_ns: 1_000,
            workers: None,
        };
        let explain = self.attribute.map(|at| crate::session::explain::ExplainPlan {
            threshold_ns: Some(at.unwrap_or(self.threshold).max(self.threshold)),
            worst: usize::from(self.explain_worst),
            noise: true,
            hardware: None,
        });
        let plan = Plan {
            duration: self.duration,
            max_latency_ns: self.max_noise,
            strict: self.strict,
            sample_ring: (self.samples.is_some() || explain.is_some()).then_some(crate::session::SAMPLE_RING),
            explain,
            loads: self.loads,
            samples: self.samples,
            hlog: self.hlog.plan()?,
            doctor: Some(super::doctor::sysroot(self.sysroot.as_ref())?),
            ..Plan::new(ProbeSpec::Noise(probe), layout)
        };
        Ok(NoiseOptions {
            plan,
            json: self.json,
            format: self.format,
            oslat_buckets: self.oslat_buckets,
            oslat_omit_zeros: self.oslat_omit_zeros,
            unit: if self.nsecs { Unit::Nanos } else { Unit::Micros },
            quiet: self.quiet,
        })
    }

    /// The period and the busy part of it (ns), checked against each other, the threshold and
    /// the warm-up.
    fn timing(&self) -> Result<(i64, i64), UsageError> {
        let period = self.period;
        let runtime = self.runtime.unwrap_or(period);
        if period > 3_600_000_000_000 {
            return Err(usage(format!("--period {period} ns is longer than an hour; use e.g. --period 1s")));
        }
        if runtime > period {
            return Err(usage(format!(
                "--runtime {} is longer than --period {}: the busy part cannot exceed the period; e.g. --runtime 900ms --period 1s",
                crate::units::duration(runtime),
                crate::units::duration(period)
            )));
        }
        if runtime < 100_000 {
            return Err(usage(format!(
                "--runtime {} is too short to measure in; use 100us or more",
                crate::units::duration(runtime)
            )));
        }
        if self.threshold >= runtime {
            return Err(usage(format!(
                "--threshold {} is not below --runtime {}: no gap could be seen; lower --threshold",
                crate::units::duration(self.threshold),
                crate::units::duration(runtime)
            )));
        }
        if self.warmup < Duration::from_millis(100) {
            return Err(usage(format!(
                "--warm-up {} ms is too short to calibrate the counter and time the loop; use 100ms or more",
                self.warmup.as_millis()
            )));
        }
        if self.warmup > Duration::from_secs(60) {
            return Err(usage("--warm-up longer than a minute pre-heats nothing more; use e.g. --warm-up 1s"));
        }
        Ok((period, runtime))
    }

    /// The counter the busy loop reads, and why it is not the CPU's own when it is not.
    fn counter(&self) -> Result<(CounterKind, Option<String>), UsageError> {
        Ok(match self.counter.as_str() {
            "monotonic" => (CounterKind::Monotonic, Some("--counter monotonic".to_string())),
            asked => match crate::doctor::counter_unusable(&crate::doctor::Sysroot::default()) {
                Some(why) if asked != "auto" => {
                    return Err(usage(format!(
                        "--counter {asked}: {why}; use --counter monotonic (or auto, which falls back to it)"
                    )))
                }
                _ if asked != "auto" && asked != crate::rt::counter::NAME => {
                    return Err(usage(format!(
                        "--counter {asked}: this machine's counter is {}; use --counter {} or monotonic",
                        crate::rt::counter::NAME,
                        crate::rt::counter::NAME
                    )))
                }
                None => (CounterKind::Hardware, None),
                Some(why) => (CounterKind::Monotonic, Some(why)),
            },
        })
    }

    /// oslat's layout needs every gap counted in 1 µs buckets; the outputs must be writable.
    fn check_oslat_and_outputs(&self) -> Result<(), UsageError> {
        if self.format == Format::Oslat {
            if self.threshold > 1_000 {
                return Err(usage(format!(
                    "--format oslat counts every gap in 1 µs buckets, but --threshold {} leaves gaps below it uncounted; \
                     use --threshold 1us or less",
                    crate::units::duration(self.threshold)
                )));
            }
            if 1_000 % self.bucket_size != 0 || self.range < i64::from(self.oslat_buckets) * 1_000 {
                return Err(usage(format!(
                    "--format oslat needs 1 µs buckets up to {} µs: use a --bucket-size that divides 1us and --range {}us or more",
                    self.oslat_buckets, self.oslat_buckets
                )));
            }
        }
        let mut outputs: Vec<(String, &std::path::Path)> = Vec::new();
        if let Some(p) = &self.json {
            outputs.push(("--json".into(), p));
        }
        if let Some(p) = &self.samples {
            if p.as_os_str() == "-" {
                return Err(usage("--samples -: a samples file is binary; give a file name, e.g. --samples noise.smp"));
            }
            outputs.push(("--samples".into(), p));
        }
        outputs.extend(self.hlog.output());
        crate::export::check_outputs(&outputs, &[]).map_err(usage)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_rt_thread_on_every_cpu_without_throttling_is_refused_unless_forced() {
        let online = CpuSet::from_cpus([0, 1]);
        let all = online.clone();
        let one = CpuSet::from_cpus([1]);
        let e = refuse_starving(Policy::Fifo, &all, &online, Some(-1), false).unwrap();
        assert!(e.contains("sched_rt_runtime_us = -1") && e.contains("--force"), "{e}");
        assert_eq!(refuse_starving(Policy::Fifo, &all, &online, Some(-1), true), None, "forced");
        assert_eq!(refuse_starving(Policy::Fifo, &one, &online, Some(-1), false), None, "a CPU is left free");
        assert_eq!(refuse_starving(Policy::Fifo, &all, &online, Some(950_000), false), None, "throttling protects");
        assert_eq!(refuse_starving(Policy::Other, &all, &online, Some(-1), false), None, "fair threads share");
    }
}
