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

    fn table(&self, threads: &[ThreadStatus], live: &[LiveSnapshot], elapsed: Duration) -> String {
        table::live(threads, live, elapsed.as_secs_f64(), self.total.map(|t| t.as_secs_f64()), self.unit)
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
        let text = self.table(threads, live, elapsed);
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
        let _ = std::io::stderr().write_all(self.table(threads, live, elapsed).as_bytes());
    }

    fn finished(&mut self, _: &[ThreadStatus], _: &[LiveSnapshot]) {
        if self.draw && self.lines > 0 {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r\x1b[{}A\x1b[J", self.lines);
            let _ = out.flush();
        }
    }
}

/// A one-line account of a run as it goes: on a terminal redrawn in place each second
/// (`rtlab noise`), or printed as a line every `every` (`rtlab monitor`'s heartbeat, which logs
/// read too). It says how long it has run, the samples, the largest and on which CPU.
#[derive(Debug)]
pub struct Heartbeat {
    /// What the line starts with (`rtlab noise`).
    pub name: &'static str,
    /// What one sample is (`noise`, `wakeup`).
    pub noun: &'static str,
    /// Redraw in place each tick (a terminal), else one line every `every`.
    pub in_place: bool,
    /// How often a line is printed when not in place.
    pub every: Duration,
    /// The run's length, when it has one.
    pub total: Option<Duration>,
    next: Duration,
    drawn: bool,
}

impl Heartbeat {
    /// A heartbeat; nothing is printed before the first `every` (or tick, in place).
    pub fn new(name: &'static str, noun: &'static str, in_place: bool, every: Duration) -> Heartbeat {
        Heartbeat { name, noun, in_place, every, total: None, next: every, drawn: false }
    }

    /// The line for `live` after `elapsed`.
    pub fn line(&self, threads: &[ThreadStatus], live: &[LiveSnapshot], elapsed: Duration) -> String {
        let n: u64 = live.iter().map(|l| l.cycles).sum();
        let missed: u64 = live.iter().map(|l| l.missed).sum();
        let of = self.total.map(|t| format!(" / {}", crate::units::duration(t.as_nanos() as i64))).unwrap_or_default();
        let mut s = format!(
            "{}: {}{of} · {}",
            self.name,
            crate::units::duration(elapsed.as_secs() as i64 * 1_000_000_000),
            crate::units::count(n, self.noun)
        );
        let worst = threads.iter().zip(live).filter(|(_, l)| l.cycles > 0).max_by_key(|(_, l)| l.max);
        if let Some((t, l)) = worst {
            let cpu = t.cpu.map_or(String::new(), |c| format!(" on CPU {c}"));
            s += &format!(" · max {}{cpu}", crate::units::us(l.max as f64));
        }
        if missed > 0 {
            s += &format!(" · {} missed", crate::units::count(missed, "period"));
        }
        s
    }
}

impl Observer for Heartbeat {
    fn tick(&mut self, threads: &[ThreadStatus], live: &[LiveSnapshot], elapsed: Duration) {
        if self.in_place {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r{}\x1b[K", self.line(threads, live, elapsed));
            let _ = out.flush();
            self.drawn = true;
        } else if elapsed >= self.next {
            eprintln!("{}", self.line(threads, live, elapsed));
            self.next = elapsed + self.every;
        }
    }

    fn finished(&mut self, _: &[ThreadStatus], _: &[LiveSnapshot]) {
        if self.drawn {
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "\r\x1b[K");
            let _ = out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::sched::SchedParams;

    fn status(index: usize, cpu: usize) -> ThreadStatus {
        ThreadStatus {
            index,
            cpu: Some(cpu),
            sched: SchedParams::simple(crate::rt::sched::Policy::Fifo, 95),
            interval_ns: 1_000_000,
            tid: 1,
            identity: None,
        }
    }

    #[test]
    fn a_heartbeat_says_how_long_how_many_the_largest_where_and_what_was_missed() {
        let snap = |cycles, max, missed| LiveSnapshot {
            cycles,
            cur: 0,
            min: 0,
            max,
            missed,
            mean: 0.0,
            mean_us_truncated: 0.0,
            p99: None,
            work: None,
            stages: None,
        };
        let mut h = Heartbeat::new("rtlab monitor", "wakeup", false, Duration::from_secs(60));
        h.total = Some(Duration::from_secs(600));
        let line = h.line(
            &[status(0, 2), status(1, 3)],
            &[snap(1000, 20_000, 0), snap(999, 4_476_100, 2)],
            Duration::from_secs(61),
        );
        assert_eq!(line, "rtlab monitor: 61 s / 600 s · 1999 wakeups · max 4476.1 µs on CPU 3 · 2 periods missed");
    }
}
