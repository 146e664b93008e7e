//! `rtlab completions SHELL` and `rtlab man`: generated from the command-line definitions
//! themselves, so they never drift from the flags.

use clap::{Args, CommandFactory};

/// Print a shell completion script: `rtlab completions bash > /etc/bash_completion.d/rtlab`.
#[derive(Args, Debug, Clone)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

impl CompletionsArgs {
    /// The completion script.
    pub fn script(&self) -> String {
        let mut buf = Vec::new();
        clap_complete::generate(self.shell, &mut super::Cli::command(), "rtlab", &mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    }
}

/// Print a man page (roff): `rtlab man > rtlab.1`, `rtlab man run > rtlab-run.1`.
#[derive(Args, Debug, Clone)]
pub struct ManArgs {
    /// The subcommand whose page to print [default: rtlab's own, listing them all]
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

impl ManArgs {
    /// The man page of rtlab or of one subcommand (its options, from the definitions).
    pub fn page(&self) -> Result<String, super::UsageError> {
        let root = super::Cli::command();
        let cmd = match &self.command {
            None => root,
            Some(name) => {
                let sub = root.find_subcommand(name).filter(|s| !s.is_hide_set()).ok_or_else(|| {
                    super::UsageError(format!("'{name}' is not an rtlab command; see rtlab --help for the list"))
                })?;
                sub.clone().name(format!("rtlab-{name}")).bin_name(format!("rtlab {name}"))
            }
        };
        let mut buf = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = clap_mangen::Man::new(cmd).render(&mut buf);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}
