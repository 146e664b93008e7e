//! `rtlab timerlat top|hist`: `rtlab run --stages` on one thread per CPU, printed in rtla
//! timerlat's layouts (`output::timerlat`), with the RunResult written by `--json`.

use crate::error::Error;
use crate::export::{json::Json, write_output, Exporter};
use crate::measure::stats::LiveSnapshot;
use crate::output::timerlat::perform;
pub use crate::output::timerlat::{Action, HistLayout, Mode};
use crate::output::warnings::WarningPrinter;
use crate::probes::ThreadStatus;
use crate::session::{self, Fanout, Observer, Provenance, Signals};
use crate::sysinfo::Environment;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

/// A validated `rtlab timerlat`.
#[derive(Clone, Debug)]
pub struct TimerlatOptions {
    /// The run: one probe thread per CPU, with stages.
    pub plan: session::Plan,
    /// `--json` target.
    pub json: Option<PathBuf>,
    /// top or hist.
    pub mode: Mode,
    /// `-q`: only the summary at the end.
    pub quiet: bool,
    /// hist's layout.
    pub hist: HistLayout,
    /// Say what the stop's explanation was (not `--no-aa`).
    pub aa: bool,
    /// `--aa-only`: print only the stop and its analysis.
    pub aa_only: bool,
    /// `--on-threshold`: done when a threshold stopped the run (with `continue`: at each hit).
    pub on_threshold: Vec<Action>,
    /// `--on-end`: done at the end.
    pub on_end: Vec<Action>,
    /// Where the run writes its events for the `trace` actions (`None`: no trace action).
    pub trace: Option<PathBuf>,
    /// `--dump-tasks`: after the stop's analysis, the task each measured CPU runs.
    pub dump_tasks: bool,
    /// What was asked that rtlab does differently, said before measuring.
    pub notes: Vec<String>,
}

/// rtla's screen while the run goes on: `top`'s table refreshed on a terminal, the
/// `--on-threshold` actions at each new hit with `continue`, and the last live figures.
struct Screen<'a> {
    opts: &'a TimerlatOptions,
    refresh: bool,
    continues: bool,
    hits: u64,
    last: Vec<LiveSnapshot>,
    /// The `continue` actions under way: they run beside the reporting loop (a slow `shell`
    /// command must not stall the table or the run's end), one round at a time.
    acting: Option<std::thread::JoinHandle<()>>,
}

impl Observer for Screen<'_> {
    fn tick(&mut self, threads: &[ThreadStatus], live: &[LiveSnapshot], elapsed: Duration) {
        self.last = live.to_vec();
        let hits: u64 = live.iter().filter_map(|l| l.stages).map(|s| s.hits).sum();
        let idle = self.acting.as_ref().is_none_or(|a| a.is_finished());
        if self.continues && hits > self.hits && idle {
            self.hits = hits;
            // The trace is written when the run ends: its action is done then.
            let actions: Vec<Action> =
                self.opts.on_threshold.iter().filter(|a| !matches!(a, Action::Trace(_))).cloned().collect();
            let act = move || {
                if let Err(why) = perform(&actions, None) {
                    eprintln!("rtlab: warning: {}", crate::units::printable(&why));
                }
            };
            self.acting = std::thread::Builder::new().name("rtlab-action".into()).spawn(act).ok();
        }
        if self.refresh {
            let rows = crate::output::timerlat::live_rows(threads, live);
            clear_screen();
            crate::export::print(&crate::output::timerlat::top(elapsed.as_secs(), &rows, self.opts.hist.nano));
        }
    }

    fn finished(&mut self, _threads: &[ThreadStatus], live: &[LiveSnapshot]) {
        self.last = live.to_vec();
    }
}

/// Resets the terminal (`ESC c`), as rtla's top does before each table.
fn clear_screen() {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(b"\x1bc").and_then(|()| out.flush());
}

/// The last table (or histogram) and the stop with its analysis, as rtla prints them.
fn table(opts: &TimerlatOptions, result: &crate::result::RunResult, screen: &Screen<'_>) -> String {
    let table = match (opts.aa_only, opts.mode) {
        (true, _) => String::new(),
        (false, Mode::Top) => {
            let rows = crate::output::timerlat::final_rows(result, &screen.last);
            if screen.refresh {
                clear_screen();
            }
            crate::output::timerlat::top(result.duration_s.unwrap_or(0.0) as u64, &rows, opts.hist.nano)
        }
        (false, Mode::Hist) => crate::output::timerlat::hist(result, &opts.hist),
    };
    table + &crate::output::timerlat::stop(result, opts.aa)
}

/// `--dump-tasks` after an analysed stop: the task each measured CPU runs now (rtla reads the
/// one at the stop from its tracer's buffer; here the kernel's /proc tells the task running
/// when the analysis is printed).
fn tasks_after_stop(opts: &TimerlatOptions, result: &crate::result::RunResult) -> String {
    let stopped = result.end_reason == crate::result::EndReason::Breaktrace;
    if !(opts.dump_tasks && opts.aa && stopped) {
        return String::new();
    }
    let cpus: Vec<usize> = result.threads.iter().filter_map(|t| t.cpu).collect();
    crate::output::timerlat::dump_tasks(&crate::sysinfo::running_tasks(std::path::Path::new("/proc"), &cpus))
}

/// Measures, then does the threshold's actions and prints rtla's table or histogram; exit 0,
/// 1 when an output failed.
pub fn execute(opts: &TimerlatOptions, command_line: Vec<String>) -> Result<i32, Error> {
    for n in &opts.notes {
        eprintln!("rtlab: warning: {n}");
    }
    let signals = Signals::install().map_err(|e| Error::Runtime(format!("cannot install signal handlers: {e}")))?;
    let mut warnings = WarningPrinter::default();
    let provenance = Provenance { command_line, environment: Environment::capture() };
    let continues = opts.on_threshold.contains(&Action::Continue);
    let mut screen = Screen {
        opts,
        refresh: opts.mode == Mode::Top && !opts.quiet && !opts.aa_only && std::io::stdout().is_terminal(),
        continues,
        hits: 0,
        last: Vec::new(),
        acting: None,
    };
    let (result, failure) = session::measure(
        &opts.plan,
        provenance,
        opts.json.as_deref(),
        &mut Fanout(vec![&mut warnings, &mut screen]),
        &signals,
    )?;
    warnings.rest(&result);
    // The result is written first: an action may read it.
    if let Some(path) = &opts.json {
        let bytes = Json.serialize(&result).map_err(Error::Runtime)?;
        write_output(path, &bytes)
            .map_err(|e| Error::Runtime(format!("cannot write --json {}: {e}", path.display())))?;
    }
    if let Some(a) = screen.acting.take() {
        let _ = a.join();
    }
    let hits: u64 = result.threads.iter().filter_map(|t| t.watch.as_ref()).map(|w| w.stage_hits).sum();
    let saved = opts.trace.as_deref().filter(|p| p.exists());
    // rtla does the threshold's actions when it sees the stop, before its last table; with
    // `continue` they ran at each tick that saw a new hit, and the trace is saved now.
    let acted = match continues {
        false if hits > 0 => perform(&opts.on_threshold, saved),
        true if hits > screen.hits => perform(&opts.on_threshold, saved),
        true if hits > 0 => perform(
            &opts.on_threshold.iter().filter(|a| matches!(a, Action::Trace(_))).cloned().collect::<Vec<_>>(),
            saved,
        ),
        _ => Ok(()),
    };
    crate::export::print(&(table(opts, &result, &screen) + &tasks_after_stop(opts, &result)));
    if let Err(why) = acted.and(perform(&opts.on_end, saved)) {
        eprintln!("rtlab: warning: {}", crate::units::printable(&why));
    }
    // The workers lived through the actions, as rtla's do.
    crate::rt::worker::end_parked();
    if let Some(f) = failure {
        return Err(Error::Runtime(f));
    }
    // A run a threshold stopped fails (3; rtla's 2 under its name, mapped in `main`).
    Ok(if result.end_reason == crate::result::EndReason::Breaktrace { 3 } else { 0 })
}
