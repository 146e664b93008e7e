//! rtlab run as `oslat` (a link): oslat's options, as `oslat --help` (rt-tests 2.4) lists them,
//! mapped onto `rtlab noise --format oslat`, whose busy threads, 1 µs histogram, text and
//! `--json` are oslat 2.x's layout. Under that name rtlab keeps oslat's exit statuses: 0, and
//! 1 for a bad option or a failure.

use super::UsageError;

/// oslat's version line (`-v`), the version whose layout rtlab writes.
pub const VERSION: &str = "oslat V 2.40";

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// True when rtlab runs under oslat's name.
pub fn invoked_as_oslat(args: &[String]) -> bool {
    args.first().and_then(|a| std::path::Path::new(a).file_name()).is_some_and(|n| n == "oslat")
}

/// oslat's exit status for rtlab's: 0 when it measured, 1 otherwise (130 after a second Ctrl-C).
pub fn oslat_status(rtlab: i32) -> i32 {
    match rtlab {
        0 | 130 => rtlab,
        _ => 1,
    }
}

/// oslat's duration: seconds, or with m/M, h/H, d/D (and s); checked against overflow.
fn duration(text: &str) -> Result<String, UsageError> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 's' | 'S')) => (&t[..i], 1u64),
        Some((i, 'm' | 'M')) => (&t[..i], 60),
        Some((i, 'h' | 'H')) => (&t[..i], 3600),
        Some((i, 'd' | 'D')) => (&t[..i], 86_400),
        _ => (t, 1),
    };
    num.parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .and_then(|n| n.checked_mul(mult))
        .filter(|s| crate::units::to_ns_u(*s, crate::units::NS_PER_S, "-D").is_ok())
        .map(|s| format!("{s}s"))
        .ok_or_else(|| usage(format!("-D '{text}': give a duration such as 60, 20m, 2H or 1d")))
}

/// argv as `rtlab` sees it when rtlab runs as `oslat`: `oslat -c 1 -D 5 --json F` →
/// `rtlab noise --format oslat -c 1 -D 5s --json F` (`-v` is answered before: [`asks_version`]).
pub fn oslat_args(args: &[String]) -> Option<Result<Vec<String>, UsageError>> {
    invoked_as_oslat(args).then(|| translate(&args[1..]))
}

/// oslat's usage, for `oslat --help`/`-h` (exit 0, as crucible's bench-oslat expects): its
/// version line and the options rtlab answers under oslat's name.
pub fn help() -> String {
    format!(
        "{VERSION} (rtlab)
Usage:
oslat <options>

This is an OS latency detector: busy threads, one per CPU, read the CPU's counter in a loop,
and every gap between two reads is a latency, counted in a 1 us histogram.

Available options:

  -b, --bucket-size      Number of 1 us buckets, 4-1024 [default: 32]
  -c, --cpu-list         CPUs to run on, e.g. 1,3,5,7-15
  -C, --cpu-main-thread  CPU for the main thread
  -D, --duration         Test duration: 60, 20m, 2H, 1d [default: until Ctrl-C]
  -f, --rtprio           SCHED_FIFO priority of the busy threads (1-99) [default: SCHED_OTHER]
      --json=FILENAME    Write the final results as JSON
  -m, --workload-mem     Accepted (only the memmove workload uses it, which rtlab does not run)
  -q, --quiet            Print only the final results
  -s, --single-preheat   Accepted (every measured CPU is pre-heated by its own thread)
  -w, --workload         Workload between the reads: no (the only one rtlab runs)
  -z, --zero-omit        Leave out buckets with no count
  (refused, with the reason: -B/--bias, -T/--trace-threshold)
  -v, --version          Print the version
  -h, --help             Print this help
"
    )
}

/// True when oslat's arguments ask for its help (`-h`, `--help`).
pub fn asks_help(args: &[String]) -> bool {
    invoked_as_oslat(args) && args[1..].iter().any(|a| a == "-h" || a == "--help")
}

/// True when oslat's arguments ask for its version (`-v`): printed, exit 0.
pub fn asks_version(args: &[String]) -> bool {
    invoked_as_oslat(args) && args[1..].iter().any(|a| a == "-v" || a == "--version")
}

fn translate(args: &[String]) -> Result<Vec<String>, UsageError> {
    let mut out: Vec<String> = ["rtlab", "noise", "--format", "oslat"].map(String::from).to_vec();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = |name: &str| {
            inline.clone().or_else(|| it.next().cloned()).ok_or_else(|| usage(format!("{name} needs a value")))
        };
        match flag {
            "-b" | "--bucket-size" => {
                let v = value(flag)?;
                match v.parse::<u32>() {
                    Ok(n) if (4..=1024).contains(&n) => out.extend(["--oslat-buckets".into(), n.to_string()]),
                    _ => return Err(usage(format!("-b {v}: the bucket count must be 4-1024"))),
                }
            }
            "-c" | "--cpu-list" => out.extend(["-c".into(), value(flag)?]),
            "-C" | "--cpu-main-thread" => {
                out.extend(["--mainaffinity".into(), super::run::stand_in_cpus(&value(flag)?, flag)?])
            }
            "-D" | "--duration" => out.extend(["-D".into(), duration(&value(flag)?)?]),
            "--json" => out.extend(["--json".into(), value(flag)?]),
            "-f" | "--rtprio" => out.extend(["--policy".into(), "fifo".into(), "-p".into(), value(flag)?]),
            "-q" | "--quiet" => out.push("-q".into()),
            "-z" | "--zero-omit" => out.push("--oslat-omit-zeros".into()),
            // rtlab pre-heats every measured CPU with its own thread already.
            "-s" | "--single-preheat" => {}
            "-m" | "--workload-mem" => {
                // Sized for the memmove workload only, which rtlab does not run (below).
                value(flag)?;
            }
            "-w" | "--workload" => match value(flag)?.as_str() {
                "no" => {}
                w => {
                    return Err(usage(format!(
                        "-w {w}: rtlab's busy loop runs no workload between its reads; run one beside it with \
                         rtlab noise --load memory:… instead"
                    )))
                }
            },
            "-B" | "--bias" => {
                return Err(usage(
                    "-B: rtlab measures every gap from its calibrated counter and adds no bias estimated from the \
                     minimum; leave -B out",
                ))
            }
            "-T" | "--trace-threshold" => {
                value(flag)?;
                return Err(usage(
                    "-T: stopping at a threshold and marking ftrace is not done by rtlab's noise threads; use rtlab \
                     noise --attribute to see what made each gap",
                ));
            }
            other => return Err(usage(format!("{other}: not an oslat option (oslat --help lists them)"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Result<Vec<String>, UsageError> {
        let full: Vec<String> =
            std::iter::once("/usr/local/bin/oslat").chain(a.iter().copied()).map(String::from).collect();
        oslat_args(&full).expect("invoked as oslat")
    }

    #[test]
    fn help_and_h_print_the_usage_with_the_version_and_every_option_it_takes() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        assert!(asks_help(&args(&["oslat", "--help"])) && asks_help(&args(&["/usr/bin/oslat", "-h"])));
        assert!(!asks_help(&args(&["rtlab", "--help"])));
        let h = help();
        assert!(h.starts_with(VERSION));
        for flag in ["-b", "-c", "-C", "-D", "-f", "--json", "-m", "-q", "-s", "-w", "-z", "-v", "-h"] {
            assert!(h.contains(&format!("  {flag}")) || h.contains(&format!(", {flag}")), "{flag}");
        }
    }

    #[test]
    fn oslats_options_become_rtlab_noise_in_oslats_layout() {
        let got =
            argv(&["-c", "1", "-D", "2H", "--json=f.json", "-b", "64", "-z", "-f", "80", "-C", "0", "-q"]).unwrap();
        let want = "rtlab noise --format oslat -c 1 -D 7200s --json f.json --oslat-buckets 64 --oslat-omit-zeros \
                    --policy fifo -p 80 --mainaffinity 0 -q";
        assert_eq!(got.join(" "), want);
        assert_eq!(argv(&["-D", "20m"]).unwrap()[5], "1200s");
        assert_eq!(argv(&["-D", "60"]).unwrap()[5], "60s");
    }

    #[test]
    fn what_oslat_refuses_and_what_rtlab_cannot_do_are_one_line_each() {
        for (a, says) in [
            (&["-b", "2"][..], "4-1024"),
            (&["-D", "xyz"][..], "-D 'xyz'"),
            (&["-D", "213503982334602d"][..], "213503982334602d"),
            (&["--bogus"][..], "--bogus"),
            (&["-w", "memmove"][..], "-w memmove"),
            (&["-B"][..], "-B"),
            (&["-T", "10"][..], "-T"),
            (&["-c"][..], "-c needs a value"),
        ] {
            let e = argv(a).unwrap_err().0;
            assert!(e.contains(says) && !e.contains('\n'), "{a:?}: {e}");
        }
        assert_eq!((oslat_status(2), oslat_status(1), oslat_status(0)), (1, 1, 0));
        assert!(oslat_args(&["rtlab".into(), "noise".into()]).is_none());
    }
}
