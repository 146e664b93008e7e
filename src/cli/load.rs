//! `rtlab load`: run background loads alone and report their throughput.

use crate::commands::load::LoadOptions;
use crate::load::LoadSpec;
use clap::Args;
use std::path::PathBuf;

/// Run background loads alone for a while and print the throughput each achieved.
///
/// SPEC is KIND[:key=value,…] with KIND cpu, messaging, memory, io or command. Common keys:
/// workers=N, policy=other|batch|idle|fifo:N|rr:N, nice=N, cpus=CPUSET, mode=thread|process.
/// cpu: variant=float|int. messaging (hackbench): fds=20, size=100, transport=socket|pipe
/// (workers = groups). memory: size=64M (per worker). io: block=1M, dir=/tmp. command:
/// cmd=… (last; the rest of the spec), restarted whenever it ends early.
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Loads to run, e.g. cpu:workers=2,policy=idle
    #[arg(required = true, value_name = "SPEC", value_parser = parse_spec)]
    pub specs: Vec<LoadSpec>,

    /// How long to run them: 30, 30s, 1.5m (required: loads never run unbounded)
    #[arg(short = 'D', long = "duration", value_name = "TIME", required = true, value_parser = super::parse::duration)]
    pub duration: std::time::Duration,

    /// Allow an RT-priority busy load on every CPU even with RT throttling disabled
    #[arg(long)]
    pub force: bool,

    /// Also write the results as JSON (schema rtlab.load/1); - for stdout
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Parses a load SPEC (for clap).
pub fn parse_spec(s: &str) -> Result<LoadSpec, String> {
    s.parse()
}

impl LoadOptions {
    /// Validates the arguments: the loads are safe to run here, the output may be written.
    pub fn from_cli(a: LoadArgs) -> Result<LoadOptions, super::UsageError> {
        crate::load::check_safety(&a.specs, true, a.force, &crate::rt::privileges::Privileges::current())
            .map_err(super::UsageError)?;
        if let Some(p) = &a.json {
            crate::export::check_outputs(&[("--json".into(), p)], &[]).map_err(super::UsageError)?;
        }
        Ok(LoadOptions { specs: a.specs, duration: a.duration, json: a.json })
    }
}
