//! cyclictest's terminal output, byte for byte: the live header and `T:` lines, the `-q`
//! lines, `-v` samples and the SIGUSR1 block (its files and end-of-run blocks — the `-h/-H`
//! histogram, the spikes, the `-b` footer — are exporters: `export::cyclictest_text`).

use crate::export::cyclictest_text::unit;
use crate::measure::ring::Sample;
use crate::measure::stats::LiveSnapshot;
use crate::probes::ThreadStatus;
use crate::rt::sched::Policy;
use crate::session::Observer;
use std::fmt::Write as _;
use std::io::Write;
use std::time::Duration;

/// One `T:` line's values, already in cyclictest's unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TLine {
    /// Thread index.
    pub index: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// Priority.
    pub prio: u32,
    /// Interval (µs).
    pub interval_us: i64,
    /// Cycles.
    pub cycles: u64,
    /// Minimum.
    pub min: i64,
    /// Latest.
    pub act: i64,
    /// Average (truncated).
    pub avg: i64,
    /// Maximum.
    pub max: i64,
    /// SMI count (`--smi`).
    pub smi: Option<u64>,
}

impl TLine {
    /// The line's values from a live snapshot.
    pub fn from_live(t: &ThreadStatus, s: &LiveSnapshot, nsecs: bool) -> TLine {
        let any = s.cycles > 0;
        TLine {
            index: t.index,
            tid: t.tid,
            prio: t.sched.priority,
            interval_us: t.interval_ns / 1000,
            cycles: s.cycles,
            min: if any { unit(s.min, nsecs) } else { 0 },
            act: if any { unit(s.cur, nsecs) } else { 0 },
            // cyclictest averages latencies already truncated to µs (with -N, exact ns).
            avg: match (any, nsecs) {
                (false, _) => 0,
                (true, true) => s.mean as i64,
                (true, false) => s.mean_us_truncated as i64,
            },
            max: if any { unit(s.max, nsecs) } else { 0 },
            smi: None,
        }
    }

    /// The line as cyclictest prints it (with the newline).
    pub fn render(&self, nsecs: bool) -> String {
        let mut s = if nsecs {
            format!(
                "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:8} Avg:{:8} Max:{:8}",
                self.index, self.tid, self.prio, self.interval_us, self.cycles, self.min, self.act, self.avg, self.max
            )
        } else {
            format!(
                "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
                self.index, self.tid, self.prio, self.interval_us, self.cycles, self.min, self.act, self.avg, self.max
            )
        };
        if let Some(n) = self.smi {
            let _ = write!(s, " SMI:{n:8}");
        }
        s.push('\n');
        s
    }
}

/// The live header: `policy: fifo: loadavg: …` and a blank line.
pub fn header(asked: Policy, forced_other: bool, loadavg: &str) -> String {
    let slash = if forced_other { "/other" } else { "" };
    format!("policy: {asked}{slash}: loadavg: {loadavg}          \n\n")
}

/// `/proc/loadavg` without its newline.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.trim_end_matches('\n').to_string()).unwrap_or_default()
}

/// The SIGUSR1 status block.
pub fn status_block(lines: &[TLine], nsecs: bool) -> String {
    let mut s = String::from("#---------------------------\n# cyclictest current status:\n");
    for l in lines {
        s += &l.render(nsecs);
    }
    s + "#---------------------------\n"
}

/// How the live output behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewMode {
    /// `-q`.
    pub quiet: bool,
    /// `-v`.
    pub verbose: bool,
    /// `-N`.
    pub nsecs: bool,
    /// `-M`.
    pub refresh_on_max: bool,
    /// `-h/-H` given (no `-q` lines then).
    pub histogram: bool,
    /// `-o`.
    pub oscope: u64,
}

/// cyclictest's live output as an engine observer.
pub struct CyclictestView {
    mode: ViewMode,
    asked: Policy,
    frames: usize,
    last_max: Vec<i64>,
    reduce: Vec<(u64, u64, i64)>,
    /// Printed before the first frame (the dma latency line, verbose preamble).
    pub preamble: String,
    /// SMI counts per thread, shown in the final `T:` lines with `--smi`.
    pub smi: Option<Vec<u64>>,
    /// `--smi`: each thread's CPU and its SMI count at the start.
    pub smi_base: Option<Vec<(Option<usize>, u64)>>,
    /// The latest `T:` lines, for the `-F` named pipe.
    pub latest: std::sync::Arc<std::sync::Mutex<String>>,
    out: Box<dyn Write>,
}

impl CyclictestView {
    /// A view writing to `out`.
    pub fn new(mode: ViewMode, asked: Policy, out: Box<dyn Write>) -> CyclictestView {
        CyclictestView {
            mode,
            asked,
            frames: 0,
            last_max: vec![],
            reduce: vec![],
            preamble: String::new(),
            smi: None,
            smi_base: None,
            latest: Default::default(),
            out,
        }
    }

    fn lines(&self, threads: &[ThreadStatus], live: &[LiveSnapshot]) -> Vec<TLine> {
        threads
            .iter()
            .zip(live)
            .map(|(t, s)| {
                let mut l = TLine::from_live(t, s, self.mode.nsecs);
                l.smi = self.smi.as_ref().map(|v| v.get(t.index).copied().unwrap_or(0));
                l
            })
            .collect()
    }

    fn frame(&mut self, threads: &[ThreadStatus], live: &[LiveSnapshot]) {
        let mut s = String::new();
        if self.frames > 0 {
            let _ = write!(s, "\x1b[{}A", threads.len() + 2);
        }
        let forced = threads.iter().any(|t| t.sched.policy == Policy::Other);
        s += &header(self.asked, forced, &loadavg());
        for l in self.lines(threads, live) {
            s += &l.render(self.mode.nsecs);
        }
        let _ = self.out.write_all(s.as_bytes());
        let _ = self.out.flush();
        self.frames += 1;
    }
}

impl Observer for CyclictestView {
    fn started(&mut self, threads: &[ThreadStatus], dma_latency_us: Option<i32>) {
        let mut p = std::mem::take(&mut self.preamble);
        if let Some(us) = dma_latency_us {
            let _ = writeln!(p, "# /dev/cpu_dma_latency set to {us}us");
        }
        if self.mode.verbose {
            for t in threads {
                let _ = writeln!(p, "Thread {} Interval: {}", t.index, t.interval_ns / 1000);
            }
        }
        let _ = self.out.write_all(p.as_bytes());
        let _ = self.out.flush();
    }

    fn tick(&mut self, threads: &[ThreadStatus], live: &[LiveSnapshot], _elapsed: Duration) {
        let lines: String = self.lines(threads, live).iter().map(|l| l.render(self.mode.nsecs)).collect();
        if let Ok(mut l) = self.latest.lock() {
            *l = lines;
        }
        if self.mode.quiet || self.mode.verbose {
            return;
        }
        let maxes: Vec<i64> = live.iter().map(|s| s.max).collect();
        if self.mode.refresh_on_max && self.frames > 0 && maxes == self.last_max {
            return;
        }
        self.last_max = maxes;
        self.frame(threads, live);
    }

    fn status_requested(&mut self, threads: &[ThreadStatus], live: &[LiveSnapshot], _elapsed: Duration) {
        let block = status_block(&self.lines(threads, live), self.mode.nsecs);
        let _ = std::io::stderr().write_all(block.as_bytes());
    }

    fn samples(&mut self, thread: usize, samples: &[Sample]) {
        if !self.mode.verbose {
            return;
        }
        if self.reduce.len() <= thread {
            self.reduce.resize(thread + 1, (0, 0, i64::MIN));
        }
        let mut s = String::with_capacity(samples.len() * 27);
        for smp in samples {
            let v = unit(smp.latency_ns, self.mode.nsecs);
            let (count, at, max) = &mut self.reduce[thread];
            if v > *max {
                *max = v;
                *at = smp.cycle;
            }
            *count += 1;
            if *count == self.mode.oscope.max(1) {
                let _ = writeln!(s, "{thread:8}:{at:8}:{max:8}");
                *count = 0;
                *max = i64::MIN;
            }
        }
        let _ = self.out.write_all(s.as_bytes());
        let _ = self.out.flush();
    }

    fn finished(&mut self, threads: &[ThreadStatus], live: &[LiveSnapshot]) {
        if let Some(base) = &self.smi_base {
            let now = |c: Option<usize>| c.and_then(|c| crate::rt::msr::SmiCounter::read(c).ok());
            self.smi = Some(base.iter().map(|(c, s)| now(*c).map_or(0, |e| e.saturating_sub(*s))).collect());
        }
        if self.mode.verbose {
            return;
        }
        if self.mode.quiet {
            if !self.mode.histogram {
                let mut s = String::new();
                for l in self.lines(threads, live) {
                    s += &l.render(self.mode.nsecs);
                }
                let _ = self.out.write_all(s.as_bytes());
            }
        } else {
            self.frame(threads, live);
        }
        let _ = self.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_lines_have_cyclictests_widths() {
        let l = TLine {
            index: 0,
            tid: 25877,
            prio: 80,
            interval_us: 1000,
            cycles: 3000,
            min: 8,
            act: 11,
            avg: 12,
            max: 59,
            smi: None,
        };
        assert_eq!(
            l.render(false),
            "T: 0 (25877) P:80 I:1000 C:   3000 Min:      8 Act:   11 Avg:   12 Max:      59\n"
        );
        let n = TLine { min: 9698, act: 11796, avg: 13322, max: 54516, cycles: 2000, tid: 25892, ..l };
        assert_eq!(
            n.render(true),
            "T: 0 (25892) P:80 I:1000 C:   2000 Min:   9698 Act:   11796 Avg:   13322 Max:   54516\n"
        );
    }

    #[test]
    fn the_header_names_the_policy_and_a_forced_sched_other() {
        assert_eq!(header(Policy::Fifo, false, "1 2 3"), "policy: fifo: loadavg: 1 2 3          \n\n");
        assert_eq!(header(Policy::Other, true, "x"), "policy: other/other: loadavg: x          \n\n");
    }

    #[derive(Clone, Default)]
    struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn status() -> ThreadStatus {
        let sched = crate::rt::sched::SchedParams::simple(Policy::Fifo, 80);
        ThreadStatus { index: 0, cpu: Some(0), sched, interval_ns: 1_000_000, tid: 42, identity: None }
    }

    fn snap(max: i64) -> LiveSnapshot {
        LiveSnapshot {
            cycles: 10,
            cur: 5_000,
            min: 1_000,
            max,
            missed: 0,
            mean: 3_000.0,
            mean_us_truncated: 2.5,
            p99: None,
            work: None,
            stages: None,
        }
    }

    fn frames_after(maxes: &[i64], refresh_on_max: bool) -> usize {
        let buf = Buf::default();
        let mode = ViewMode { quiet: false, verbose: false, nsecs: false, refresh_on_max, histogram: false, oscope: 1 };
        let mut v = CyclictestView::new(mode, Policy::Fifo, Box::new(buf.clone()));
        for m in maxes {
            v.tick(&[status()], &[snap(*m)], Duration::ZERO);
        }
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        text.matches("policy: ").count()
    }

    #[test]
    fn refresh_on_max_redraws_only_when_a_new_maximum_appears() {
        assert_eq!(frames_after(&[9_000, 9_000, 9_000, 12_000, 12_000], false), 5);
        assert_eq!(frames_after(&[9_000, 9_000, 9_000, 12_000, 12_000], true), 2);
    }
}
