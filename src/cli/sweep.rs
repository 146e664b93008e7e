//! `rtlab sweep`: a grid of runs.

use super::run::RunArgs;
use crate::load::LoadSched;
use crate::measure::probe::Method;
use crate::rt::sched::Policy;
use clap::Args;
use std::path::PathBuf;

/// A list of counts (`0..20`, `0..20:2`, `0,2,4`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts(pub Vec<usize>);

fn counts(s: &str) -> Result<Counts, String> {
    crate::sweep::parse_counts(s).map(Counts)
}

fn list<T>(s: &str, f: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    s.split(',').map(|x| f(x.trim())).collect()
}

/// A comma-separated axis (a newtype, so clap takes it as one value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct List<T>(pub Vec<T>);

fn kinds(s: &str) -> Result<List<String>, String> {
    list(s, |k| match k {
        "cpu" | "messaging" | "memory" | "io" => Ok(k.to_string()),
        _ => Err(format!("load kind '{k}' cannot be swept; use cpu, messaging, memory or io")),
    })
    .map(List)
}

fn load_policies(s: &str) -> Result<List<LoadSched>, String> {
    crate::sweep::parse_load_policies(s).map(List)
}

fn probe_policies(s: &str) -> Result<List<(Policy, Option<u32>)>, String> {
    list(s, crate::sweep::parse_probe).map(List)
}

fn methods(s: &str) -> Result<List<Method>, String> {
    list(s, |m| {
        <Method as clap::ValueEnum>::from_str(m, true)
            .map_err(|_| format!("method '{m}': use abs, rel, nanosleep, sleep or posix-timer"))
    })
    .map(List)
}

/// Run a grid of configurations and write every result into a directory.
///
/// Every point runs for -D (or -l) with the `rtlab run` options given here; the axes vary the
/// load workers (--workers), the load kind, the load policy, the probe policy and the method.
/// DIR gets sweep.csv (RealtimeTests' columns with a true stdev, plus p99, p99.9, missed and
/// throughput), sweep.json and points/NNN-….json, rewritten after every point; --resume skips
/// points already done.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Directory for sweep.csv, sweep.json and points/
    #[arg(long = "out", value_name = "DIR", required = true)]
    pub out: PathBuf,

    /// Load workers axis: 0..20, 0..20:2 or 0,2,4 (applies to the first --load; cpu if none)
    #[arg(long = "workers", value_name = "COUNTS", value_parser = counts)]
    pub workers: Option<Counts>,

    /// Load kind axis: cpu,messaging,memory,io
    #[arg(long = "load-kind", value_name = "KINDS", value_parser = kinds)]
    pub load_kinds: Option<List<String>>,

    /// Load policy axis: other,batch,idle,fifo:N,rr:N
    #[arg(long = "load-policy", value_name = "POLICIES", value_parser = load_policies)]
    pub load_policies: Option<List<LoadSched>>,

    /// Probe policy axis: fifo:99,rr:99,other,…
    #[arg(long = "probe-policy", value_name = "POLICIES", value_parser = probe_policies)]
    pub probe_policies: Option<List<(Policy, Option<u32>)>>,

    /// Method axis: abs,rel,nanosleep,sleep,posix-timer
    #[arg(long = "methods", value_name = "METHODS", value_parser = methods)]
    pub methods: Option<List<Method>>,

    /// Keep the points already in DIR and run only the missing ones
    #[arg(long)]
    pub resume: bool,

    /// The options of every point (see `rtlab run --help`)
    #[command(flatten)]
    pub run: RunArgs,
}
