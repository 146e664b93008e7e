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
        clap_complete::generate(self.shell, &mut public_command(), "rtlab", &mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    }
}

/// rtlab's command line without its hidden subcommands (the internal `load-worker`), which
/// clap_complete would offer.
fn public_command() -> clap::Command {
    let root = super::Cli::command();
    let subs: Vec<clap::Command> = root.get_subcommands().filter(|c| !c.is_hide_set()).cloned().collect();
    // clap cannot remove a subcommand: the same root, rebuilt with the public ones.
    let mut public = clap::Command::new("rtlab").subcommand_required(true).subcommands(subs);
    if let Some(v) = root.get_version() {
        public = public.version(v.to_string());
    }
    if let Some(a) = root.get_about() {
        public = public.about(a.clone());
    }
    public
}

/// Print a man page (roff): `rtlab man > rtlab.1`, `rtlab man run > rtlab-run.1`.
#[derive(Args, Debug, Clone)]
pub struct ManArgs {
    /// The subcommand whose page to print [default: rtlab's own, listing them all]
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

/// clap_mangen files the after-help under `.SH EXTRA`: name it for what it holds (EXAMPLES,
/// EXIT STATUS), as man pages do.
fn name_sections(page: &str) -> String {
    let Some((head, rest)) = page.split_once("\n.SH EXTRA\n") else { return page.to_string() };
    let (extra, tail) = rest.split_once("\n.SH ").map_or((rest, None), |(e, t)| (e, Some(t)));
    let mut out = String::from(head);
    // Paragraphs of the after-help, each under its own heading.
    for para in extra.split("\n\n").filter(|p| !p.trim().is_empty()) {
        let (title, body) = match para.split_once('\n') {
            Some(("Examples:", body)) => ("EXAMPLES", body.to_string()),
            _ if para.starts_with("Exit codes") || para.starts_with("Exit:") => ("EXIT STATUS", para.to_string()),
            _ => ("NOTES", para.to_string()),
        };
        out += &format!("\n.SH {title}\n{body}");
    }
    if let Some(t) = tail {
        out += &format!("\n.SH {t}");
    } else {
        out += "\n";
    }
    out
}

impl ManArgs {
    /// The man page of rtlab or of one subcommand (its options, from the definitions).
    pub fn page(&self) -> Result<String, super::UsageError> {
        let root = super::Cli::command();
        let mut cmd = match &self.command {
            None => root,
            Some(name) => {
                let sub = root.find_subcommand(name).filter(|s| !s.is_hide_set()).ok_or_else(|| {
                    super::UsageError(format!("'{name}' is not an rtlab command; see rtlab --help for the list"))
                })?;
                sub.clone().name(format!("rtlab-{name}")).bin_name(format!("rtlab {name}"))
            }
        };
        // The command's arguments and texts, deferred until it is built (`super::Lazy`).
        cmd.build();
        // The examples that lead the help (before_help) go to the page's EXAMPLES section.
        let cmd = match (cmd.get_before_help().map(|b| b.to_string()), cmd.get_after_help().map(|a| a.to_string())) {
            (Some(b), Some(a)) => cmd.after_help(format!("{b}\n\n{a}")),
            (Some(b), None) => cmd.after_help(b),
            _ => cmd,
        };
        let mut buf = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = clap_mangen::Man::new(cmd).render(&mut buf);
        Ok(name_sections(&String::from_utf8_lossy(&buf)))
    }
}
