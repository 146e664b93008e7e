//! Warnings on the terminal: every one on stderr as `rtlab: warning: …` the moment it is known
//! (a downgrade before the first sample, a failed load as the run ends), never mixed into the
//! results on stdout; after a long run the list once more, below the summary.

use crate::result::warning::Warning;
use crate::result::RunResult;
use crate::session::Observer;
use std::io::{IsTerminal, Write};

/// A run longer than this gets its warnings listed again after the summary (s).
pub const LONG_RUN_S: f64 = 60.0;

/// Prints warnings once each, to stderr.
#[derive(Debug, Default)]
pub struct WarningPrinter {
    printed: Vec<String>,
}

impl WarningPrinter {
    fn print(&mut self, message: &str) {
        if !self.printed.iter().any(|p| p == message) {
            let line = format!("rtlab: warning: {}", crate::units::printable(message));
            // On a terminal a warning wraps to its width (a pipe gets one line per warning).
            let text = match std::io::stderr().is_terminal().then(crate::rt::term::columns).flatten() {
                Some(width) => super::wrap(&line, width, "  "),
                None => line + "\n",
            };
            let _ = std::io::stderr().write_all(text.as_bytes());
            self.printed.push(message.to_string());
        }
    }

    /// Prints what the result warns of that was not printed yet: the run's own warnings and its
    /// loads' notes.
    pub fn rest(&mut self, result: &RunResult) {
        for w in &result.warnings {
            self.print(&w.message);
        }
        self.loads(&result.loads);
    }

    /// Prints the loads' notes not printed yet (`rtlab load`, and every run with loads).
    pub fn loads(&mut self, loads: &[crate::load::LoadResult]) {
        for l in loads {
            for note in &l.warnings {
                self.print(&format!("load '{}': {note}", l.spec));
            }
        }
    }

    /// After a long run: the warnings again, below the summary, so they are not scrolled away.
    pub fn recap(&self, result: &RunResult) {
        if self.printed.is_empty() || result.duration_s.is_none_or(|d| d < LONG_RUN_S) {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "rtlab: {} during the run:", crate::units::count(self.printed.len() as u64, "warning"));
        for m in &self.printed {
            let _ = writeln!(err, "  - {m}");
        }
    }
}

impl Observer for WarningPrinter {
    fn warning(&mut self, warning: &Warning) {
        self.print(&warning.message());
    }
}
