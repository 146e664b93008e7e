//! `rtlab load`: run background loads alone and report their throughput.

use crate::commands::load::LoadOptions;
use crate::load::LoadSpec;
use clap::Args;
use std::path::PathBuf;

/// The grammar of a load SPEC, for `rtlab load --help` (and `--load` everywhere).
pub const SPEC_HELP: &str = "Run background loads alone for a while and print the throughput each achieved.

A load SPEC is KIND[:key=value,...] (the same SPEC as --load of run, sweep and beam):

  KIND       what each worker does                          throughput counted in
  cpu        a busy loop (Leibniz pi; variant=int: integers)  terms/s (iterations/s)
  messaging  hackbench groups: fds senders x fds receivers    messages/s
  memory     copies between the halves of its own buffer      bytes/s
  io         writes and syncs blocks to a file in dir         bytes/s
  command    runs cmd, restarted whenever it ends early       starts

Keys of every kind:
  workers=N                      workers (messaging: groups) [1]
  policy=other|batch|idle|fifo:N|rr:N   their scheduling [other]
  nice=N                         -20..19, with other or batch [0]
  cpus=CPUSET                    pin the workers round robin (0, 1,3, 0-3) [none]
  mode=thread|process            threads of rtlab, or processes of their own [thread]
Keys of one kind:
  cpu        variant=float|int   [float]
             burst=TIME,every=TIME  busy only TIME of every period (1us..1s), on an absolute
                                 schedule: a periodic task of known size [always busy]
  messaging  fds=N (1..1000) [20]  size=BYTES [100]  transport=socket|pipe [socket]
  memory     size=BYTES per worker (64M, 1G) [64M]
  io         block=BYTES [1M]  dir=PATH [/tmp]
  command    cmd=COMMAND LINE    (last: the rest of the SPEC is the command)

An RT policy on every CPU with RT throttling off would lock the machine: rtlab refuses it
unless --force. Examples:
  rtlab load cpu:workers=2,policy=idle -D 10s
  rtlab load messaging:workers=4,fds=10,transport=pipe memory:size=256M -D 30s --json l.json
  rtlab run --load cpu:workers=2,policy=fifo:50,cpus=1 -D 1m";

/// Run background loads alone for a while and print the throughput each achieved (see
/// [`SPEC_HELP`]).
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
