//! `rtlab osnoise top|hist` (and `rtla osnoise …`, `rtla hwnoise …` when rtlab runs under that
//! name): rtla osnoise's options mapped onto `rtlab noise` — busy threads on the measured CPUs,
//! each gap attributed from the kernel's events (rtla's HW, NMI, IRQ, Softirq and Thread
//! columns) — printed in rtla's tables.

use super::UsageError;
use crate::commands::osnoise::{Mode, OsnoiseOptions};
use crate::output::timerlat::Action;
use clap::{Args, Parser};
use std::path::PathBuf;

/// The long help of `rtlab osnoise`.
pub const LONG_ABOUT: &str = "rtla osnoise's interface and tables on kernels without the osnoise tracer.

One busy thread per CPU reads the CPU's counter in a loop (rtlab noise); a gap of at least the \
threshold (-T, 1 us) is a noise, attributed from the kernel's events to hardware, NMIs, IRQs, \
softirqs or threads as rtla's columns count them (this turns rtlab noise --attribute on, which \
records every measured CPU's interrupt and scheduling events in a tracefs instance). `top` prints \
the per-CPU table, `hist` the histogram of the noises in rtla's layout. -s/-S/-a stop the run at \
the first single noise / period total above US. Run as `rtla hwnoise`, the same with only \
hardware and NMI noise counted as noise (rtla disables IRQs for it, which a user-space loop cannot).";

/// `rtlab osnoise` arguments (rtla osnoise's; see [`LONG_ABOUT`]).
#[derive(Args, Debug, Clone)]
#[command(
    after_help = "Examples:\n  rtlab osnoise top -c 1 -d 10\n  rtlab osnoise hist -c 1 -d 1m -b 2 -E 100\n  rtla hwnoise -c 1 -d 5    (rtlab installed as rtla)"
)]
pub struct OsnoiseArgs {
    /// top (a table per CPU) or hist (the histogram of the noises per CPU)
    #[arg(value_enum, default_value = "top")]
    pub mode: Mode,
    /// rtla hwnoise: only hardware and NMI noise count (how `rtla hwnoise` is answered)
    #[arg(long = "hwnoise", hide = true)]
    pub hwnoise: bool,
    /// Stop at the first single noise above US
    #[arg(short = 'a', long = "auto", value_name = "US")]
    pub auto: Option<u64>,
    /// Sampling period in µs [default: 1000000]
    #[arg(short = 'p', long = "period", value_name = "US")]
    pub period: Option<u64>,
    /// Busy part of each period in µs [default: the period; 750000 for hwnoise]
    #[arg(short = 'r', long = "runtime", value_name = "US")]
    pub runtime: Option<u64>,
    /// Stop at the first single noise above US
    #[arg(short = 's', long = "stop", value_name = "US")]
    pub stop: Option<u64>,
    /// Stop at the first period whose noise adds up above US
    #[arg(short = 'S', long = "stop-total", value_name = "US")]
    pub stop_total: Option<u64>,
    /// The smallest gap that is a noise, in µs [default: 1]
    #[arg(short = 'T', long = "threshold", value_name = "US", default_value = "1")]
    pub threshold: u64,
    /// The CPUs to measure [default: every online CPU]
    #[arg(short = 'c', long = "cpus", value_name = "CPUS")]
    pub cpus: Option<String>,
    /// Run rtlab's own threads on these CPUs
    #[arg(short = 'H', long = "house-keeping", value_name = "CPUS")]
    pub house_keeping: Option<String>,
    /// Length: N (seconds), Ns, Nm, Nh, Nd [default: until Ctrl-C or a stop]
    #[arg(short = 'd', long = "duration", value_name = "TIME")]
    pub duration: Option<String>,
    /// Scheduling of the busy threads: o:0, r:PRIO, f:PRIO [default: SCHED_OTHER]
    #[arg(short = 'P', long = "priority", value_name = "POLICY")]
    pub priority: Option<String>,
    /// Print only the summary at the end
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Let the threads run S seconds before measuring [default: 1]
    #[arg(long = "warm-up", value_name = "S")]
    pub warm_up: Option<u64>,
    /// Accepted: rtlab's tracefs instance sizes its own buffers
    #[arg(long = "trace-buffer-size", value_name = "KB")]
    pub trace_buffer_size: Option<u64>,
    /// At a stop, save what rtlab recorded of the noise to FILE [default: osnoise_trace.txt]
    #[arg(short = 't', long = "trace", value_name = "FILE", num_args = 0..=1)]
    pub trace: Option<Option<String>>,
    /// Refused: events of the tracer's session
    #[arg(short = 'e', long = "event", value_name = "SYS:EVENT")]
    pub event: Vec<String>,
    /// Refused: filters of the tracer's events
    #[arg(long = "filter", value_name = "FILTER")]
    pub filter: Vec<String>,
    /// Refused: triggers of the tracer's events
    #[arg(long = "trigger", value_name = "TRIGGER")]
    pub trigger: Vec<String>,
    /// When a stop threshold is hit: trace[,file=F], shell,command=CMD, signal,num=N,pid=PID|parent, continue (repeatable)
    #[arg(long = "on-threshold", value_name = "ACTION")]
    pub on_threshold: Vec<String>,
    /// At the end of the run: the same actions
    #[arg(long = "on-end", value_name = "ACTION")]
    pub on_end: Vec<String>,
    /// hist's layout options (-b, -E, --no-header, --no-summary, --no-index, --with-zeros)
    #[command(flatten)]
    pub hist: super::timerlat::HistArgs,
    /// Write the RunResult (schema rtlab.run/1) to FILE
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

impl OsnoiseArgs {
    /// rtla's refusals, in its words, and what needs the kernel's tracer.
    fn refuse(&self) -> Result<(), UsageError> {
        if let Some(why) = self.hist.refusal() {
            return Err(usage(why));
        }
        super::timerlat::tracer_events(&self.event, &self.filter, &self.trigger)?;
        let tracer = "needs the kernel's osnoise tracer, which this kernel does not have (rtlab measures with its own \
                      busy threads and the kernel's events)";
        let refusals = [
            (
                self.period.is_some_and(|p| p > 10_000_000),
                format!("-p {}: Period longer than 10 s", self.period.unwrap_or(0)),
            ),
            (
                self.runtime.is_some_and(|r| r < 100),
                format!("-r {}: Runtime shorter than 100 us", self.runtime.unwrap_or(0)),
            ),
            (!self.event.is_empty(), format!("-e {tracer}")),
            (!self.filter.is_empty(), format!("--filter {tracer}")),
            (!self.trigger.is_empty(), format!("--trigger {tracer}")),
        ];
        match refusals.into_iter().find(|(bad, _)| *bad) {
            Some((_, why)) => Err(usage(why)),
            None => Ok(()),
        }
    }

    /// The `rtlab noise` command line these options are.
    fn noise_argv(&self) -> Result<Vec<String>, UsageError> {
        let period = self.period.unwrap_or(1_000_000);
        let runtime = self.runtime.unwrap_or(if self.hwnoise { period.min(750_000) } else { period });
        let mut argv: Vec<String> = ["rtlab", "noise", "-q"].map(String::from).to_vec();
        argv.extend(["--period".into(), format!("{period}us"), "--runtime".into(), format!("{runtime}us")]);
        argv.extend(["--threshold".into(), format!("{}us", self.threshold.max(1)), "--attribute".into()]);
        argv.extend(self.hist.layout_args(false));
        if let Some(c) = &self.cpus {
            argv.extend(["-c".into(), c.clone()]);
        }
        if let Some(h) = &self.house_keeping {
            argv.extend(["--mainaffinity".into(), super::run::stand_in_cpus(h, "-H")?]);
        }
        if let Some(d) = &self.duration {
            argv.extend(["-D".into(), super::timerlat::duration_seconds(d)?]);
        }
        if let Some(w) = self.warm_up {
            argv.extend(["--warm-up".into(), format!("{}s", w.max(1))]);
        }
        if let Some(p) = self.priority.as_deref() {
            let sched = super::timerlat::priority(p)?;
            if sched.iter().any(|a| a == "deadline") {
                return Err(usage(format!(
                    "-P '{p}': rtlab's busy threads take o:0, f:PRIO or r:PRIO (a deadline busy loop would only run \
                     its runtime)"
                )));
            }
            argv.extend(sched);
        }
        if let Some(j) = &self.json {
            argv.extend(["--json".into(), j.display().to_string()]);
        }
        Ok(argv)
    }
}

/// Where rtla osnoise's `trace` action writes by default.
pub const TRACE_FILE: &str = "osnoise_trace.txt";

impl OsnoiseArgs {
    /// The actions and where the run's record is written for `trace` (rtla's rules:
    /// [`super::timerlat::rtla_actions`]); `thresholds`: a stop threshold was given.
    fn actions(&self, thresholds: bool) -> Result<super::timerlat::Actions, UsageError> {
        super::timerlat::rtla_actions(&super::timerlat::RtlaActions {
            on_threshold: &self.on_threshold,
            on_end: &self.on_end,
            trace: self.trace.as_ref(),
            auto: self.auto.is_some(),
            default_file: TRACE_FILE,
            thresholds,
            threshold_flags: "-s US, -S US or -a US",
        })
    }
}

impl OsnoiseOptions {
    /// Validates rtla osnoise's options and maps them onto an `rtlab noise` plan.
    pub fn from_cli(a: OsnoiseArgs) -> Result<OsnoiseOptions, UsageError> {
        a.refuse()?;
        let argv = a.noise_argv()?;
        let noise = match super::Cli::try_parse_from(&argv) {
            Ok(super::Cli { command: super::Command::Noise(n) }) if n.sweep.is_none() => n.args.0,
            Ok(_) => unreachable!("the argv names `noise`"),
            Err(e) => return Err(usage(format!("{}", e.render()).lines().next().unwrap_or("bad option").to_string())),
        };
        let mut noise = crate::commands::noise::NoiseOptions::from_cli(noise)?;
        let us = |v: Option<u64>, flag: &str| {
            v.filter(|us| *us > 0)
                .map(|us| crate::units::to_ns_u(us, crate::units::NS_PER_US, flag).map(|ns| ns as u64))
                .transpose()
                .map_err(usage)
        };
        let stop_above = crate::measure::noise::StopAbove {
            single_ns: us(a.stop.or(a.auto), "-s")?,
            total_ns: us(a.stop_total, "-S")?,
            continues: false,
        };
        if let crate::probes::ProbeSpec::Noise(n) = &mut noise.plan.probe {
            n.stop_above = stop_above;
            // rtla's osnoise/CPU workload threads: one process per CPU, found as rtla's are.
            n.workers = Some("osnoise".into());
        }
        let (on_threshold, on_end, trace) = a.actions(stop_above != Default::default())?;
        if let crate::probes::ProbeSpec::Noise(n) = &mut noise.plan.probe {
            n.stop_above.continues = on_threshold.contains(&Action::Continue);
            if a.mode == Mode::Hist {
                // rtla's histogram sums every noise at its bucket's lower edge.
                n.edge_ns = a.hist.bucket_size.saturating_mul(1000).max(1000);
            }
            if a.hwnoise {
                // rtla runs hwnoise with interrupts off, so any gap is hardware noise; rtlab's
                // busy loop cannot turn them off, so a gap is judged by its hardware part once
                // its events are read: the loop itself never stops on a gap.
                let hardware =
                    crate::session::explain::HardwareStop { stop_above: n.stop_above, period_ns: n.period_ns };
                n.stop_above = Default::default();
                if let Some(x) = noise.plan.explain.as_mut() {
                    x.hardware = Some(hardware);
                }
            }
        }
        Ok(OsnoiseOptions {
            plan: noise.plan,
            json: noise.json,
            mode: a.mode,
            hwnoise: a.hwnoise,
            quiet: a.quiet,
            // One column per CPU: the IRQ and thread switches are timerlat's.
            hist: a.hist.layout(false, false, false),
            on_threshold,
            on_end,
            trace,
        })
    }
}
