//! Command-line definitions (clap), one file per subcommand, and validation into typed options.

pub mod parse;
pub mod run;

use clap::{Parser, Subcommand};

/// A usage error: one sentence naming the bad value and the fix (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// rtlab: a real-time latency lab for Linux.
#[derive(Parser, Debug)]
#[command(name = "rtlab", version, about, long_about = None, propagate_version = true)]
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
    Run(run::RunArgs),
}

impl Cli {
    /// Parses `args`; a parse error becomes a one-line [`UsageError`]. Help and version are
    /// returned as `Err(Ok(text))` to be printed with exit code 0.
    pub fn parse_args<I, T>(args: I) -> Result<Cli, Result<String, UsageError>>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::error::ErrorKind;
        Cli::try_parse_from(args).map_err(|e| match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Ok(e.render().to_string()),
            _ => {
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or("invalid arguments");
                let first = first.strip_prefix("error: ").unwrap_or(first);
                // Keep clap's hints (valid values, similar names) on the same line.
                let hints: Vec<&str> = text
                    .lines()
                    .skip(1)
                    .map(str::trim)
                    .filter(|l| l.starts_with("[possible values") || l.starts_with("tip: a similar"))
                    .collect();
                let hints = if hints.is_empty() { String::new() } else { format!(" {}", hints.join(" ")) };
                Err(UsageError(format!("{first}{hints}; see rtlab --help")))
            }
        })
    }
}
