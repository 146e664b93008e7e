//! The rtlab binary: parse → options → dispatch; errors become exit codes
//! (0 ok · 1 runtime failure · 2 bad usage · 3 latency threshold exceeded).

use rtlab::cli::{Cli, Command};
use rtlab::commands;

fn run(args: Vec<String>) -> Result<i32, (i32, String)> {
    let cli = match Cli::parse_args(&args) {
        Ok(cli) => cli,
        Err(Ok(help)) => {
            print!("{help}");
            return Ok(0);
        }
        Err(Err(usage)) => return Err((2, usage.0)),
    };
    match cli.command {
        Command::Run(a) => {
            let opts = a.into_options().map_err(|e| (2, e.0))?;
            commands::run::execute(opts, args).map_err(|e| (1, e.0))
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let code = match run(args) {
        Ok(code) => code,
        Err((code, msg)) => {
            eprintln!("rtlab: {msg}");
            code
        }
    };
    std::process::exit(code);
}
