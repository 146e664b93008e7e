//! From argv to one command: which front door (rtlab's subcommands, or cyclictest's flags when
//! rtlab runs as `cyclictest` or `rtlab cyclictest`), its validated options, and the command
//! that executes them.

use super::beam::BeamCommand;
use super::cyclictest::CyclictestArgs;
use super::{clap_error, Cli, Command, Lazy};
use crate::commands::{self, cyclictest::CyclictestOptions, export::ExportOptions, load::LoadOptions};
use crate::commands::{doctor::DoctorOptions, noise::NoiseOptions, schema::SchemaOptions, sweep::SweepOptions};
use crate::commands::{import::ImportOptions, import::ShowOptions, plot::PlotOptions, run::RunOptions};
use crate::commands::{report::CompareOptions, report::ReportOptions, samples::SamplesOptions};
use crate::error::Error;
use clap::{CommandFactory, FromArgMatches, Parser};

/// The tool rtlab stands in for, by the name it runs under (a link), whose exit statuses it
/// then keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StandIn {
    /// rtlab itself (and `cyclictest`, whose statuses are rtlab's).
    Rtlab,
    /// `rtla`.
    Rtla,
    /// `oslat`.
    Oslat,
}

impl StandIn {
    /// The stand-in `args[0]` names.
    pub fn of(args: &[String]) -> StandIn {
        if super::timerlat::invoked_as_rtla(args) {
            StandIn::Rtla
        } else if super::oslat::invoked_as_oslat(args) {
            StandIn::Oslat
        } else {
            StandIn::Rtlab
        }
    }

    /// That tool's exit status for rtlab's.
    pub fn exit_status(self, rtlab: i32) -> i32 {
        match self {
            StandIn::Rtlab => rtlab,
            StandIn::Rtla => super::timerlat::rtla_status(rtlab),
            StandIn::Oslat => super::oslat::oslat_status(rtlab),
        }
    }
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    /// Help or version text to print (exit 0).
    Help(String),
    /// cyclictest's flags.
    Cyclictest(Box<CyclictestArgs>),
    /// One of rtlab's subcommands.
    Rtlab(Box<Command>),
}

impl Parsed {
    /// Parses argv; a bad command line is a one-line usage error.
    pub fn from_args(args: &[String]) -> Result<Parsed, Error> {
        // Run as `rtla`: `rtla timerlat …` is `rtlab timerlat …`.
        // `rtla TOOL [MODE] --help`: rtla's help, with its version line.
        if let Some(help) = super::timerlat::rtla_help(args) {
            return Ok(Parsed::Help(help));
        }
        if let Some(rtla) = super::timerlat::rtla_args(args) {
            return Parsed::from_args(&rtla?);
        }
        // Run as `oslat`: its options are `rtlab noise --format oslat`'s.
        if super::oslat::asks_help(args) {
            return Ok(Parsed::Help(super::oslat::help()));
        }
        if super::oslat::asks_version(args) {
            return Ok(Parsed::Help(format!("{}\n", super::oslat::VERSION)));
        }
        if let Some(oslat) = super::oslat::oslat_args(args) {
            return Parsed::from_args(&oslat?);
        }
        if let Some(habit) = cyclictest_habit(args) {
            return Err(habit.into());
        }
        let (result, program) = match cyclictest_args(args) {
            Some(ct) => {
                // `rtlab cyclictest --help` says so in its usage; a link named cyclictest says cyclictest.
                let name = if ct.len() < args.len() { "rtlab cyclictest" } else { "cyclictest" };
                let parsed = CyclictestArgs::command()
                    .bin_name(name)
                    .try_get_matches_from(ct)
                    .and_then(|m| CyclictestArgs::from_arg_matches(&m));
                (parsed.map(|a| Parsed::Cyclictest(Box::new(a))), name.to_string())
            }
            None => (Cli::try_parse_from(args).map(|c| Parsed::Rtlab(Box::new(c.command))), help_name(args)),
        };
        match result {
            Ok(p) => Ok(p),
            Err(e) => match clap_error(e, &program, args) {
                Ok(help) => Ok(Parsed::Help(help)),
                Err(usage) => Err(usage.into()),
            },
        }
    }

    /// True when the command measures or runs loads: a signal ends it cleanly, with its outputs.
    pub fn stops_cleanly(&self) -> bool {
        match self {
            Parsed::Help(_) => false,
            Parsed::Cyclictest(_) => true,
            Parsed::Rtlab(c) => matches!(
                **c,
                Command::Run(_)
                    | Command::Cyclictest { .. }
                    | Command::Load(_)
                    | Command::Sweep(_)
                    | Command::Beam(_)
                    | Command::Doctor(_)
                    | Command::Noise(_)
                    | Command::Watch(_)
                    | Command::Timerlat(_)
                    | Command::Osnoise(_)
                    | Command::Monitor(_)
            ),
        }
    }

    /// Validates the options and executes the command; `command_line` is recorded in results.
    pub fn execute(self, command_line: Vec<String>) -> Result<i32, Error> {
        let cl = command_line;
        match self {
            Parsed::Help(text) => {
                crate::export::print(&text);
                Ok(0)
            }
            Parsed::Cyclictest(a) => commands::cyclictest::execute(&CyclictestOptions::from_cli(*a)?, cl),
            Parsed::Rtlab(c) => match *c {
                Command::Run(Lazy(a)) => commands::run::execute(&RunOptions::from_cli(*a)?, cl),
                Command::Cyclictest { args } => {
                    let argv: Vec<String> = std::iter::once("cyclictest".to_string()).chain(args).collect();
                    Parsed::from_args(&argv)?.execute(cl)
                }
                Command::Import(Lazy(a)) => commands::import::import(&ImportOptions::from_cli(a)?),
                Command::Show(Lazy(a)) => commands::import::show(&ShowOptions::from_cli(a)?),
                Command::Load(Lazy(a)) => commands::load::execute(&LoadOptions::from_cli(a)?),
                Command::Samples(Lazy(a)) => commands::samples::execute(&SamplesOptions::from_cli(a)?),
                Command::Sweep(Lazy(a)) => commands::sweep::execute(&SweepOptions::from_cli(*a)?, cl),
                Command::Plot(Lazy(a)) => commands::plot::execute(&PlotOptions::from_cli(a)?),
                Command::Report(Lazy(a)) => commands::report::report(&ReportOptions::from_cli(a)?),
                Command::Compare(Lazy(a)) => commands::report::compare(&CompareOptions::from_cli(a)?),
                Command::Beam(a) => match a.command {
                    BeamCommand::Run(Lazy(r)) => commands::run::execute(&RunOptions::from_beam(r)?, cl),
                    BeamCommand::Sweep(Lazy(s)) => commands::sweep::execute(&SweepOptions::from_beam(s)?, cl),
                },
                Command::Export(Lazy(a)) => commands::export::execute(&ExportOptions::from_cli(a)?),
                Command::Schema(Lazy(a)) => commands::schema::execute(&SchemaOptions::from_cli(a)?),
                Command::Doctor(Lazy(a)) => commands::doctor::execute(&DoctorOptions::from_cli(a)?),
                Command::Monitor(Lazy(a)) => {
                    commands::monitor::execute(&crate::commands::monitor::MonitorOptions::from_cli(*a)?, cl)
                }
                Command::Noise(a) => match a.sweep {
                    Some(crate::cli::noise::NoiseSubcommand::Sweep(Lazy(s))) => {
                        commands::sweep::execute(&SweepOptions::from_noise(*s)?, cl)
                    }
                    None => commands::noise::execute(&NoiseOptions::from_cli(a.args.0)?, cl),
                },
                Command::Watch(Lazy(a)) => commands::run::execute(&RunOptions::from_watch(*a)?, cl),
                Command::Timerlat(Lazy(a)) => {
                    commands::timerlat::execute(&crate::commands::timerlat::TimerlatOptions::from_cli(*a)?, cl)
                }
                Command::Osnoise(Lazy(a)) => {
                    commands::osnoise::execute(&crate::commands::osnoise::OsnoiseOptions::from_cli(*a)?, cl)
                }
                Command::LoadWorker { spec } => commands::load::worker(&spec),
                Command::Completions(Lazy(a)) => {
                    crate::export::print(&a.script());
                    Ok(0)
                }
                Command::Man(Lazy(a)) => {
                    crate::export::print(&a.page()?);
                    Ok(0)
                }
            },
        }
    }
}

/// The command whose `--help` a usage error points to: `rtlab`, `rtlab run`, `rtlab beam sweep`.
/// cyclictest's `-h US` (its histogram) given to `rtlab run`, where `-h` is help: a usage
/// error that names `rtlab cyclictest` instead of printing the help.
fn cyclictest_habit(args: &[String]) -> Option<super::UsageError> {
    if args.get(1).map(String::as_str) != Some("run") {
        return None;
    }
    let numeric = |s: &str| !s.is_empty() && s.trim_end_matches("us").chars().all(|c| c.is_ascii_digit());
    (2..args.len()).find_map(|i| {
        let us = match (args[i].as_str(), args.get(i + 1).map(String::as_str)) {
            ("-h", Some(v)) if numeric(v) => v.to_string(),
            (h, _) if h.strip_prefix("-h").is_some_and(numeric) => h[2..].to_string(),
            _ => return None,
        };
        Some(super::UsageError(format!(
            "-h {us}: in rtlab run -h is help; cyclictest's histogram is `rtlab cyclictest -h {us} …` (rtlab run keeps \
             the whole histogram in --json FILE: rtlab plot FILE)"
        )))
    })
}

fn help_name(args: &[String]) -> String {
    let root = Cli::command();
    let mut names = vec!["rtlab".to_string()];
    let mut at = &root;
    for a in args.iter().skip(1) {
        match at.find_subcommand(a) {
            Some(sub) => {
                names.push(a.clone());
                at = sub;
            }
            None => break,
        }
    }
    names.join(" ")
}

/// cyclictest's argv when rtlab runs as `cyclictest` (a link) or as `rtlab cyclictest ARGS…`.
fn cyclictest_args(args: &[String]) -> Option<Vec<String>> {
    let name = std::path::Path::new(args.first()?).file_name()?.to_string_lossy().into_owned();
    if name == "cyclictest" {
        return Some(args.to_vec());
    }
    (args.get(1).map(String::as_str) == Some("cyclictest")).then(|| args[1..].to_vec())
}
