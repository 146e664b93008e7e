//! Command-line definitions (clap), one file per subcommand, and validation into typed options.

pub mod beam;
pub mod cyclictest;
pub mod dispatch;
pub mod docs;
pub mod doctor;
pub mod export;
pub mod hlog;
pub mod import;
pub mod load;
pub mod monitor;
pub mod noise;
pub mod oslat;
pub mod osnoise;
pub mod parse;
pub mod plot;
pub mod report;
pub mod rt_app;
pub mod run;
pub mod samples;
pub mod schema;
pub mod sweep;
pub mod tasks;
pub mod timerlat;
pub mod watch;

use clap::{Parser, Subcommand};

pub use crate::error::UsageError;

/// rtlab: a real-time latency lab for Linux.
#[derive(Parser, Debug)]
#[command(
    name = "rtlab",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = "Exit codes: 0 ok · 1 a runtime failure (the outputs that could be written were) · 2 bad usage \
                  (nothing was measured) · 3 a threshold was exceeded (--max-latency, -b, compare --fail-if-worse) or \
                  a doctor check failed (--strict: or warned).\n\
                  Each command's own options: rtlab COMMAND --help."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure wakeup latency on periodic threads (cyclictest's method, done right).
    #[command(long_about = run::LONG_ABOUT)]
    Run(Lazy<Box<run::RunArgs>>),
    /// A drop-in for cyclictest: its options and output formats on rtlab's engine
    /// (`rtlab cyclictest --help`; also runs when rtlab is invoked as `cyclictest`).
    Cyclictest {
        /// cyclictest's options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Turn cyclictest output (--json, -h/-H histogram, -q lines) into rtlab's RunResult.
    Import(Lazy<import::ImportArgs>),
    /// Print the summary table of a RunResult (or of any cyclictest output file).
    Show(Lazy<import::ShowArgs>),
    /// Run background loads alone and print the throughput each achieved (SPEC grammar: --help).
    #[command(long_about = load::SPEC_HELP)]
    Load(Lazy<load::LoadArgs>),
    /// Read a samples file written by `rtlab run --samples` (summary, or --csv).
    Samples(Lazy<samples::SamplesArgs>),
    /// Run a grid of configurations (load workers, kind, policy; probe policy; method).
    Sweep(Lazy<Box<sweep::SweepArgs>>),
    /// Draw a picture (histogram, cdf, timeseries, sweep) as PNG or SVG.
    Plot(Lazy<plot::PlotArgs>),
    /// Write a self-contained HTML (or Markdown) report of runs, sweeps and comparisons.
    Report(Lazy<report::ReportArgs>),
    /// Compare runs side by side; --fail-if-worse makes a regression exit 3 (for CI).
    Compare(Lazy<report::CompareArgs>),
    /// Measure the Erlang VM's scheduler (a real erl; RealtimeTests done right).
    Beam(beam::BeamArgs),
    /// Write a saved result in another format (rtlab JSON; cyclictest --json, -h histogram, spikes).
    Export(Lazy<export::ExportArgs>),
    /// Print the JSON Schema of a file rtlab writes (run, sweep, load, samples-header/-trailer).
    Schema(Lazy<schema::SchemaArgs>),
    /// Is this machine set up for real time? Kernel, isolation, IRQs, power, scheduler, memory,
    /// noise and rights for the CPUs you measure, each with evidence, consequence and fix.
    Doctor(Lazy<doctor::DoctorArgs>),
    /// Run the probes continuously and serve their latency to Prometheus (GET /metrics,
    /// /healthz, /status on 127.0.0.1:9737).
    Monitor(Lazy<Box<monitor::MonitorArgs>>),
    /// Measure OS noise: how much of each CPU the system takes from a busy thread, and who
    /// takes it (oslat, rtla osnoise/hwnoise on any kernel).
    #[command(long_about = noise::LONG_ABOUT)]
    Noise(Box<noise::NoiseCommandArgs>),
    /// Measure threads of any program, unmodified, from the kernel's events: per period the
    /// IRQ, thread and wakeup latency, response time and misses (-p PID, --comm, -- CMD).
    #[command(long_about = watch::LONG_ABOUT)]
    Watch(Lazy<Box<watch::WatchArgs>>),
    /// rtla timerlat's top and hist on kernels without its tracer: per CPU the IRQ, thread and
    /// return-to-user latency of rtlab's probe threads (also when rtlab runs as `rtla`).
    #[command(long_about = timerlat::LONG_ABOUT)]
    Timerlat(Lazy<Box<timerlat::TimerlatArgs>>),
    /// rtla osnoise's top and hist on kernels without its tracer: per CPU the noise of rtlab's
    /// busy threads with rtla's HW, NMI, IRQ, Softirq and Thread columns (also as `rtla`).
    #[command(long_about = osnoise::LONG_ABOUT)]
    Osnoise(Lazy<Box<osnoise::OsnoiseArgs>>),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(Lazy<docs::CompletionsArgs>),
    /// Print a man page (roff) of rtlab or of one of its commands.
    Man(Lazy<docs::ManArgs>),
    /// One worker of a `mode=process` load (internal).
    #[command(name = "load-worker", hide = true)]
    LoadWorker {
        /// The worker's load spec.
        spec: String,
    },
}

/// A subcommand's arguments, added to its parser only when that subcommand is the one parsed
/// (or its help, completions or man page are made, which build the whole tree): a run neither
/// builds nor pages in the parsers of the other commands (clap's `Command::defer`). A command
/// with subcommands of its own (`beam`, `noise`) stays eager, its arguments and subcommands
/// lazy: `rtlab help` lists the subcommands when it is built, before anything deferred is. At
/// most one per command: clap keeps one deferred function per command.
#[derive(Debug, Clone)]
pub struct Lazy<T>(pub T);

impl<T: clap::FromArgMatches> clap::FromArgMatches for Lazy<T> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(m).map(Lazy)
    }
    fn from_arg_matches_mut(m: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(m).map(Lazy)
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }
    fn update_from_arg_matches_mut(&mut self, m: &mut clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(m)
    }
}

impl<T: clap::Args> clap::Args for Lazy<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.defer(|c| keep_about(c, T::augment_args))
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        cmd.defer(|c| keep_about(c, T::augment_args_for_update))
    }
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

/// `augment` applied to `cmd` with `cmd`'s own about texts kept: the subcommand's (its
/// variant's) describe it, not the arguments struct's, which a deferred augment applies last.
fn keep_about(cmd: clap::Command, augment: fn(clap::Command) -> clap::Command) -> clap::Command {
    let (about, long) = (cmd.get_about().cloned(), cmd.get_long_about().cloned());
    let cmd = augment(cmd);
    let cmd = match about {
        Some(a) => cmd.about(a),
        None => cmd.about(None::<&str>),
    };
    match long {
        Some(l) => cmd.long_about(l),
        None => cmd.long_about(None::<&str>),
    }
}

/// Options whose value must be joined with `=` (their value is optional): `--explain 300us`
/// parses as `--explain` and a stray `300us`.
const JOINED_VALUE: [&str; 2] = ["--explain", "--attribute"];

/// `name` (`--histogram`, `-v`) is one of cyclictest's options.
fn is_cyclictest_option(name: &str) -> bool {
    use clap::CommandFactory;
    let c = cyclictest::CyclictestArgs::command();
    let found = c.get_arguments().any(|a| match name.strip_prefix("--") {
        Some(long) => a.get_long() == Some(long) || a.get_all_aliases().is_some_and(|v| v.contains(&long)),
        None => name.len() == 2 && name.starts_with('-') && a.get_short() == name.chars().nth(1),
    });
    found
}

/// Turns a clap error into cyclictest-style help (`Ok`) or a one-line usage error; `args` (the
/// command line) lets it say what a stray value was meant for.
pub fn clap_error(e: clap::Error, program: &str, args: &[String]) -> Result<String, UsageError> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if let (ErrorKind::UnknownArgument, Some(ContextValue::String(arg))) = (e.kind(), e.get(ContextKind::InvalidArg)) {
        let after = args.windows(2).find(|w| w[1] == *arg && JOINED_VALUE.contains(&w[0].as_str()));
        if let Some(w) = after {
            return Err(UsageError(format!(
                "unexpected argument '{arg}' after {0}: its value is joined with '='; did you mean {0}={arg}?",
                w[0]
            )));
        }
    }
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            Ok(e.render().to_string())
        }
        _ => {
            if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) {
                let name = arg.split('=').next().unwrap_or(arg);
                if let Some(hint) = cyclictest::removed_option_hint(name) {
                    return Err(UsageError(format!("{hint}; see {program} --help")));
                }
                // cyclictest's own options given to `rtlab run`.
                if program == "rtlab run" && is_cyclictest_option(name) {
                    return Err(UsageError(format!(
                        "unexpected argument '{name}': that is cyclictest's; `rtlab cyclictest {name} …` takes \
                         cyclictest's options as they are; see rtlab run --help for rtlab's"
                    )));
                }
            }
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            // Keep clap's hints (valid values, similar names) on the same line.
            // Keep the names of missing required arguments, listed on the following lines.
            let missing: Vec<&str> = if e.kind() == ErrorKind::MissingRequiredArgument {
                text.lines().skip(1).take_while(|l| l.starts_with("  ")).map(str::trim).collect()
            } else {
                Vec::new()
            };
            let hints: Vec<&str> = text
                .lines()
                .skip(1)
                .map(str::trim)
                .filter(|l| l.starts_with("[possible values") || l.starts_with("tip: a similar"))
                .chain(missing)
                .collect();
            let hints = if hints.is_empty() { String::new() } else { format!(" {}", hints.join(" ")) };
            Err(UsageError(format!("{first}{hints}; see {program} --help")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
        cyclictest::CyclictestArgs::command().debug_assert();
    }
}
