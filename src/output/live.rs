//! The live terminal view: an [`Observer`] that redraws the table in place about once a
//! second, and prints it to stderr on SIGUSR1.

use super::table;
use crate::measure::stats::LiveSnapshot;
use crate::probes::ThreadStatus;
use crate::session::Observer;
use crate::units::Unit;
use std::io::Write;
use std::time::Duration;

/// Redraws the live table on a terminal (`draw` false: only answers SIGUSR1).
#[derive(Debug)]
pub struct LiveView {
    draw: bool,
    unit: Unit,
    lines: usize,
    /// Printed to stderr when the probes start (what a runtime probe runs).
    pub intro: Option<String>,
    /// The run's length, when it has one (`-D`): the header shows the progress.
    pub total: Option<Duration>,
}

impl LiveView {
    /// A live view; `draw` is true when stdout is a terminal and `-q` was not given.
    pub fn new(draw: bool, unit: Unit) -> LiveView {
        LiveView { draw, unit, lines: 0, intro: None, total: None }
    }
}

impl Observer for LiveView {
    fn started(&mut self, _: &[ThreadStatus], _: Option<i32>) {
        if let Some(text) = self.intro.take() {
            eprintln!("{text}");
        }
    }

    fn tick(&mut self, threads: &[ThreadStatus], live: &[LiveSnapshot], elapsed: Duration) {
        if !self.draw {
            return;
        }
        let text = table::live(threads, live, elapsed.as_secs_f64(), self.total.map(|t| t.as_secs_f64()), self.unit);
        let mut out = std::io::stdout().lock();
        // Back to column 0 first: the terminal may have echoed ^C where the cursor was.
        if self.lines > 0 {
            let _ = write!(out, "\r\x1b[{}A", self.lines);
        }
        for line in text.lines() {
            let _ = writeln!(out, "{line}\x1b[K");
        }
        self.lines = text.lines().count();
        let _ = out.flush();
    }

    fn status_requested(&mut self, threads: &[ThreadStatus], live: &[LiveSnapshot], elapsed: Duration) {
        let _ = std::io::stderr().write_all(
            table::live(threads, live, elapsed.as_secs_f64(), self.total.map(|t| t.as_secs_f64()), self.unit)
                .as_bytes(),
        );
    }

    fn finished(&mut self, _: &[ThreadStatus], _: &[LiveSnapshot]) {
        if self.draw && self.lines > 0 {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r\x1b[{}A\x1b[J", self.lines);
            let _ = out.flush();
        }
    }
}
