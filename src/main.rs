//! The rtlab binary: parse → options → execute; errors become exit codes
//! (0 ok · 1 runtime failure · 2 bad usage · 3 latency threshold exceeded).

use rtlab::cli::dispatch::Parsed;
use rtlab::error::Error;
use rtlab::session::Signals;

fn run(args: Vec<String>, signals: &Signals) -> Result<i32, Error> {
    let parsed = Parsed::from_args(&args)?;
    // Commands that measure or run loads stop cleanly on a signal; the others just end.
    if !parsed.stops_cleanly() {
        signals.exit_on_signal();
    }
    parsed.execute(args)
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
    if args.get(1).is_none_or(|a| a != "load-worker") {
        for repaired in rtlab::rt::repair_left_behind() {
            eprintln!("rtlab: warning: {}", rtlab::units::printable(&repaired));
        }
    }
    let stand_in = rtlab::cli::dispatch::StandIn::of(&args);
    let code = match run(args, &signals) {
        Ok(code) => code,
        // The one place an error becomes an exit code.
        Err(e) => {
            // One line, whatever a path or a server's answer in it holds.
            eprintln!("rtlab: {}", rtlab::units::printable(&e.to_string()));
            e.exit_code()
        }
    };
    // Under a stand-in's name, that tool's statuses.
    let code = stand_in.exit_status(code);
    std::process::exit(code);
}
