//! The rtlab binary: parse → options → dispatch; errors become exit codes
//! (0 ok · 1 runtime failure · 2 bad usage · 3 latency threshold exceeded).

use clap::Parser;
use rtlab::cli::beam::BeamCommand;
use rtlab::cli::cyclictest::CyclictestArgs;
use rtlab::cli::{clap_error, Cli, Command};
use rtlab::commands;
use rtlab::commands::cyclictest::CyclictestOptions;
use rtlab::commands::export::ExportOptions;
use rtlab::commands::import::{ImportOptions, ShowOptions};
use rtlab::commands::load::LoadOptions;
use rtlab::commands::plot::PlotOptions;
use rtlab::commands::report::{CompareOptions, ReportOptions};
use rtlab::commands::run::RunOptions;
use rtlab::commands::samples::SamplesOptions;
use rtlab::commands::schema::SchemaOptions;
use rtlab::commands::sweep::SweepOptions;
use rtlab::error::Error;
use rtlab::session::Signals;

/// `rtlab cyclictest ARGS…`, or rtlab invoked through a link named `cyclictest`.
fn cyclictest_args(args: &[String]) -> Option<Vec<String>> {
    let name = std::path::Path::new(args.first()?).file_name()?.to_string_lossy().into_owned();
    if name == "cyclictest" {
        return Some(args.to_vec());
    }
    (args.get(1).map(String::as_str) == Some("cyclictest")).then(|| args[1..].to_vec())
}

fn cyclictest(args: Vec<String>, command_line: Vec<String>) -> Result<i32, Error> {
    let parsed = match CyclictestArgs::try_parse_from(&args) {
        Ok(a) => a,
        Err(e) => {
            return match clap_error(e, "cyclictest") {
                Ok(help) => {
                    print!("{help}");
                    Ok(0)
                }
                Err(u) => Err(u.into()),
            }
        }
    };
    commands::cyclictest::execute(&CyclictestOptions::from_cli(parsed)?, command_line)
}

fn run(args: Vec<String>, signals: &Signals) -> Result<i32, Error> {
    if let Some(ct) = cyclictest_args(&args) {
        return cyclictest(ct, args);
    }
    let cli = match Cli::parse_args(&args) {
        Ok(cli) => cli,
        Err(Ok(help)) => {
            print!("{help}");
            return Ok(0);
        }
        Err(Err(usage)) => return Err(usage.into()),
    };
    // Commands that measure or run loads stop cleanly on a signal; the others just end.
    if !matches!(
        cli.command,
        Command::Run(_)
            | Command::Cyclictest { .. }
            | Command::Load(_)
            | Command::Sweep(_)
            | Command::Beam(_)
            | Command::LoadWorker { .. }
    ) {
        signals.exit_on_signal();
    }
    match cli.command {
        Command::Run(a) => commands::run::execute(&RunOptions::from_cli(*a)?, args),
        Command::Import(a) => commands::import::import(&ImportOptions::from_cli(a)?),
        Command::Load(a) => commands::load::execute(&LoadOptions::from_cli(a)?),
        Command::Samples(a) => commands::samples::execute(&SamplesOptions::from_cli(a)?),
        Command::Plot(a) => commands::plot::execute(&PlotOptions::from_cli(a)?),
        Command::Report(a) => commands::report::report(&ReportOptions::from_cli(a)?),
        Command::Compare(a) => commands::report::compare(&CompareOptions::from_cli(a)?),
        Command::Beam(a) => match a.command {
            BeamCommand::Run(r) => commands::run::execute(&RunOptions::from_beam(r)?, args),
            BeamCommand::Sweep(s) => commands::sweep::execute(&SweepOptions::from_beam(s)?, args),
        },
        Command::Sweep(a) => commands::sweep::execute(&SweepOptions::from_cli(*a)?, args),
        Command::LoadWorker { spec } => commands::load::worker(&spec),
        Command::Export(a) => commands::export::execute(&ExportOptions::from_cli(a)?),
        Command::Schema(a) => commands::schema::execute(&SchemaOptions::from_cli(a)?),
        Command::Show(a) => commands::import::show(&ShowOptions::from_cli(a)?),
        Command::Cyclictest { args: rest } => {
            let mut ct = vec!["cyclictest".to_string()];
            ct.extend(rest);
            cyclictest(ct, args)
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    // First thing: a SIGINT from now on ends a measurement cleanly instead of killing rtlab.
    // Not in a load worker: it gets its parent-death signal once per exiting thread of rtlab,
    // and must stop its command's group on the first instead of exiting on the second.
    let signals = if args.get(1).is_some_and(|a| a == "load-worker") {
        Signals::default()
    } else {
        match Signals::install() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("rtlab: cannot install signal handlers: {e}");
                std::process::exit(1);
            }
        }
    };
    let code = match run(args, &signals) {
        Ok(code) => code,
        // The one place an error becomes an exit code.
        Err(e) => {
            eprintln!("rtlab: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
