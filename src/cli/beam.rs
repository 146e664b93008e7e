//! `rtlab beam run` and `rtlab beam sweep`.

use crate::cli::parse;
use crate::probes::beam::{Method, Priority};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// Measure the Erlang VM's scheduler: a process that waits for a timer every period, with
/// CPU-bound processes competing (RealtimeTests, done right).
#[derive(Args, Debug, Clone)]
pub struct BeamArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: BeamCommand,
}

/// The beam subcommands.
#[derive(Subcommand, Debug, Clone)]
pub enum BeamCommand {
    /// One measurement in a fresh VM.
    Run(super::Lazy<BeamRunArgs>),
    /// One measurement per worker count, RealtimeTests' sweep (0..20 workers, 5 s each).
    Sweep(super::Lazy<BeamSweepArgs>),
}

fn period_ms(s: &str) -> Result<u32, String> {
    s.trim_end_matches("ms")
        .parse::<u32>()
        .ok()
        .filter(|p| (1..=60_000).contains(p))
        .ok_or_else(|| format!("period '{s}' is not a whole number of milliseconds from 1 to 60000 (BEAM timers are millisecond-granular); e.g. --period 1"))
}

/// VM flags (a newtype, so clap takes them as one value).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VmArgs(pub Vec<String>);

/// Parses `--vm-args`, refusing the flags rtlab sets itself.
pub fn vm_args(s: &str) -> Result<VmArgs, String> {
    let v: Vec<String> = s.split_whitespace().map(String::from).collect();
    if let Some(bad) =
        v.iter().find(|a| ["-eval", "-s", "-run", "-noshell", "-noinput", "-extra"].contains(&a.as_str()))
    {
        return Err(format!("--vm-args: '{bad}' is set by rtlab; give emulator flags such as +S 2 +sbwt none"));
    }
    Ok(VmArgs(v))
}

fn counts(s: &str) -> Result<super::sweep::Counts, String> {
    crate::sweep::parse_counts(s).map(super::sweep::Counts)
}

/// Options shared by run and sweep.
#[derive(Args, Debug, Clone)]
pub struct BeamCommon {
    /// The Erlang VM to run [default: erl on PATH]
    #[arg(long, value_name = "PATH")]
    pub erl: Option<PathBuf>,

    /// How the measuring process waits
    #[arg(long, value_enum, default_value = "send-interval")]
    pub method: Method,

    /// Period in whole milliseconds (BEAM timers are millisecond-granular)
    #[arg(long, value_name = "MS", default_value = "1", value_parser = period_ms)]
    pub period: u32,

    /// Length of each measurement
    #[arg(short = 'D', long, value_name = "TIME", default_value = "5s", value_parser = parse::duration)]
    pub duration: std::time::Duration,

    /// Priority of the measuring process
    #[arg(long, value_enum, default_value = "normal")]
    pub probe_priority: Priority,

    /// Priority of the CPU-bound worker processes (RealtimeTests' cpu_process_flags)
    #[arg(long, value_enum, default_value = "normal")]
    pub worker_priority: Priority,

    /// Flags for the VM, e.g. "+S 2 +sbwt none +sbt db" (recorded in the result)
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true, value_parser = vm_args)]
    pub vm_args: Option<VmArgs>,

    /// OS-level background load outside the VM (repeatable; see `rtlab load --help`)
    #[arg(long = "load", value_name = "SPEC", value_parser = super::load::parse_spec)]
    pub loads: Vec<crate::load::LoadSpec>,

    /// Allow an RT-priority busy load on every CPU even with RT throttling disabled
    #[arg(long)]
    pub force: bool,

    /// Fail (exit 3) when a wakeup is later than this, e.g. 5ms
    #[arg(long = "max-latency", value_name = "LATENCY", value_parser = parse::latency)]
    pub max_latency: Option<i64>,
}

/// `rtlab beam run`.
#[derive(Args, Debug, Clone)]
pub struct BeamRunArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: BeamCommon,

    /// CPU-bound worker processes competing with the measuring one
    #[arg(long, value_name = "N", default_value = "0")]
    pub workers: usize,

    /// Write the RunResult here (- for stdout)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Record every sample in this file (see `rtlab samples`)
    #[arg(long, value_name = "FILE")]
    pub samples: Option<PathBuf>,
}

/// `rtlab beam sweep`.
#[derive(Args, Debug, Clone)]
pub struct BeamSweepArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: BeamCommon,

    /// Worker counts: 0..20, 0..20:2 or 0,2,4
    #[arg(long, value_name = "COUNTS", default_value = "0..20", value_parser = counts)]
    pub workers: super::sweep::Counts,

    /// Directory for sweep.csv, sweep.json and points/
    #[arg(long = "out", value_name = "DIR", required = true)]
    pub out: PathBuf,
}

/// `rtlab run`'s arguments at their defaults, to be filled from an alias.
#[derive(clap::Parser)]
struct Defaults {
    #[command(flatten)]
    run: super::run::RunArgs,
}

impl BeamCommon {
    /// These options as `rtlab run --runtime beam` arguments.
    fn run_args(&self, workers: usize) -> super::run::RunArgs {
        use clap::Parser;
        let mut a = Defaults::parse_from(["run"]).run;
        a.runtime.runtime = super::run::Runtimes(vec![super::run::RuntimeKind::Beam]);
        a.runtime.erl = self.erl.clone();
        a.runtime.beam_method = Some(self.method);
        a.runtime.beam_workers = Some(workers);
        a.runtime.beam_probe_priority = Some(self.probe_priority);
        a.runtime.beam_worker_priority = Some(self.worker_priority);
        a.runtime.vm_args = self.vm_args.clone();
        a.interval = i64::from(self.period) * 1_000_000;
        a.duration = Some(self.duration);
        a.loads = self.loads.clone();
        a.force = self.force;
        a.max_latency = self.max_latency;
        a
    }
}

impl crate::commands::run::RunOptions {
    /// `rtlab beam run` is `rtlab run --runtime beam` with the Erlang options named as
    /// RealtimeTests names them.
    pub fn from_beam(b: BeamRunArgs) -> Result<crate::commands::run::RunOptions, super::UsageError> {
        let mut a = b.common.run_args(b.workers);
        a.json = b.json;
        a.samples = b.samples;
        crate::commands::run::RunOptions::from_cli(a)
    }
}

impl BeamSweepArgs {
    /// The sweep this alias stands for (see [`crate::commands::sweep::SweepOptions::from_beam`]).
    pub(super) fn into_sweep(self) -> Result<crate::commands::sweep::SweepOptions, super::UsageError> {
        let c = &self.common;
        let input_options = format!(
            "[workers: {:?}, duration_ms: {}, period_ms: {}, method: {}, cpu_process_flags: [priority: :{}], probe_flags: [priority: :{}], vm_args: {:?}, os_loads: {:?}]",
            self.workers.0,
            c.duration.as_millis(),
            c.period,
            c.method.name(),
            c.worker_priority.atom(),
            c.probe_priority.atom(),
            c.vm_args.clone().unwrap_or_default().0,
            c.loads.iter().map(|l| l.text.as_str()).collect::<Vec<_>>()
        );
        let mut run = c.run_args(0);
        run.runtime.beam_workers = None;
        let sweep = super::sweep::SweepArgs {
            out: self.out,
            workers: Some(self.workers),
            load_kinds: None,
            load_policies: None,
            probe_policies: None,
            methods: None,
            works: None,
            deadlines: None,
            resume: false,
            rounds: 1,
            run,
        };
        let mut opts = crate::commands::sweep::SweepOptions::from_cli(sweep)?;
        opts.printout = crate::commands::sweep::Printout::RealtimeTests(input_options);
        Ok(opts)
    }
}
