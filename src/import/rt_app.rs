//! rt-app's per-task logs (`<log_basename>-<task>-<index>.log`): one line per period, in µs,
//!
//! ```text
//! # Policy : SCHED_FIFO priority : 80
//! #idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat
//!    0    15000      322      956       167665271       167666227            7441        610        300       1000         21
//! ```
//!
//! read into a RunResult of one working task. A line is one loop of the task's phase: its job
//! (`start`), then its timer event, where rt-app sleeps until the next release when the slack
//! is positive and writes how late it woke (`wu_lat`) — the wakeup that starts the *next*
//! line's job, dated here at that release (`end − wu_lat`). A line that overran (negative
//! slack) did not sleep: its `wu_lat` 0 is no wakeup and enters no latency figure. Per line:
//! run time from `run`, response from the line's own columns (`c_period − slack`: the next
//! release minus the end of the work is the slack, so the end minus this release is the
//! period minus it), the deadline is the period (rt-app has no other), slack exactly as
//! logged, a miss where the slack is negative. No release is counted skipped: after an
//! overrun rt-app's default (`relative`) timer restarts its grid at the overrun's end, and
//! its `absolute` one runs the late periods back to back; neither drops a line. Columns are
//! found by their names in the header line.

use super::ImportError;
use crate::measure::histogram::Layout;
use crate::measure::stats::{Live, Recorder};
use crate::measure::work::{WorkKind, WorkLive, WorkRecorder, WorkSpec, DEFAULT_MISS_WINDOW};
use crate::result::build::{Obtained, ProbeFigures, ProbeRun};
use crate::result::{RunResult, Source};
use crate::rt::sched::{Policy, SchedParams};
use std::path::Path;

/// True when `text` looks like an rt-app log (its policy line or its column header first).
pub fn detect(text: &str) -> bool {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    first.starts_with("# Policy :") || first.starts_with("#idx")
}

/// The task's name from the log's file name (`rt-app-ctl-0.log`, `x-ctl-0.log` → `ctl`).
fn task_name(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_string_lossy().into_owned();
    let (rest, idx) = stem.rsplit_once('-')?;
    idx.parse::<u32>().ok()?;
    let name = rest.strip_prefix("rt-app-").or_else(|| rest.split_once('-').map(|(_, n)| n)).unwrap_or(rest);
    (!name.is_empty()).then(|| crate::units::printable(name).chars().take(64).collect())
}

/// A line of a log with its number (from 1), or why it could not be read.
type Numbered = (usize, Result<String, String>);

/// What a log's lines before its first period say: the policy, the columns and that period.
struct Head {
    sched: Option<SchedParams>,
    columns: Vec<String>,
    /// The first period's line number, text and values (`None`: the task ran no loop; rt-app
    /// then writes its two header lines only).
    first: Option<(usize, String, Vec<i64>)>,
}

/// The columns rtlab reads, by their index in a line.
struct Columns {
    run: usize,
    start: usize,
    end: usize,
    slack: usize,
    c_duration: usize,
    c_period: usize,
    wu_lat: usize,
}

/// What one data line says, in ns (see [`Columns::period`]).
struct Line {
    at: i64,
    wakeup: Option<(i64, i64)>,
    response: i64,
    run: i64,
    /// The line's period (ns; `None`: a loop without a timer, `c_period` 0).
    period: Option<i64>,
    /// Its slack as logged (ns), for a periodic line.
    slack: Option<i64>,
}

/// One data line's values: whole numbers, as many as the header has columns.
fn values(line: &str, columns: usize) -> Result<Vec<i64>, String> {
    let v: Vec<i64> = line.split_whitespace().map(|v| v.parse::<i64>()).collect::<Result<_, _>>().map_err(|_| {
        format!("'{}' is not a line of whole numbers", crate::units::printable(&crate::units::clip(line, 80)))
    })?;
    if v.len() != columns {
        return Err(format!("{} values for {} columns", v.len(), columns));
    }
    Ok(v)
}

/// The policy line (`SCHED_FIFO priority : 80`, after `# Policy :`).
fn policy_line(p: &str) -> Result<SchedParams, String> {
    let mut words = p.split_whitespace();
    let name = words.next().unwrap_or("");
    let policy: Policy = name.strip_prefix("SCHED_").unwrap_or(name).parse()?;
    let prio = p.rsplit(':').next().and_then(|v| v.trim().parse::<u32>().ok()).unwrap_or(0);
    Ok(SchedParams::simple(policy, if policy.is_realtime_priority() { prio.min(99) } else { 0 }))
}

impl Columns {
    /// One data line's period in ns, checked: its job's start after the first (`start`), the
    /// wakeup its timer gave (when, after the first start, and its latency; `None` when the
    /// job overran and rt-app did not sleep), its response (`c_period − slack`) and run time.
    fn period(&self, v: &[i64], t0: i64) -> Result<Line, String> {
        let ns = |v: Option<i64>, what: &str| {
            v.ok_or_else(|| format!("{what} is out of range"))
                .and_then(|v| crate::units::to_ns(v, crate::units::NS_PER_US, what))
        };
        if v[self.c_period] < 0 {
            return Err(format!("c_period {} is negative", v[self.c_period]));
        }
        if v[self.c_period] == 0 {
            // A loop of a phase without a timer (rt-app's event-driven tasks): no release, so no
            // wakeup and no deadline; its response is the loop's own time, end − start.
            return Ok(Line {
                at: ns(v[self.start].checked_sub(t0), "start")?,
                wakeup: None,
                response: ns(v[self.end].checked_sub(v[self.start]), "end − start")?,
                run: ns(Some(v[self.run]), "run")?,
                period: None,
                slack: None,
            });
        }
        // The line's timer event came at its end: it slept when the slack was positive, and
        // then woke `wu_lat` after the release that starts the next line's job. Overrun, rt-app
        // wrote 0 and did not sleep (a slack of 0 µs with wu_lat 0 is read the same way).
        let (slack, wu_lat) = (v[self.slack], v[self.wu_lat]);
        let slept = slack > 0 || (slack == 0 && wu_lat > 0);
        let wakeup = match slept {
            true => Some((
                ns(v[self.end].checked_sub(wu_lat).and_then(|r| r.checked_sub(t0)), "end − wu_lat")?,
                ns(Some(wu_lat), "wu_lat")?,
            )),
            false => None,
        };
        Ok(Line {
            at: ns(v[self.start].checked_sub(t0), "start")?,
            wakeup,
            response: ns(v[self.c_period].checked_sub(slack), "c_period − slack")?,
            run: ns(Some(v[self.run]), "run")?,
            period: Some(ns(Some(v[self.c_period]), "c_period")?),
            slack: Some(ns(Some(slack), "slack")?),
        })
    }
}

impl Head {
    /// Reads the lines up to the first period, and stops there.
    fn read(lines: &mut dyn Iterator<Item = Numbered>) -> Result<Head, (Option<usize>, String)> {
        let (mut sched, mut columns) = (None, None);
        for (no, line) in lines {
            let line = line.map_err(|e| (Some(no), e))?;
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if let Some(p) = line.strip_prefix("# Policy :") {
                sched = Some(policy_line(p).map_err(|e| (Some(no), e))?);
            } else if let Some(h) = line.strip_prefix('#') {
                columns = Some(h.split_whitespace().map(String::from).collect::<Vec<_>>());
            } else {
                let Some(columns) = columns else {
                    return Err((Some(no), "a data line before the column header (#idx perf run …)".into()));
                };
                let first = values(line, columns.len()).map_err(|e| (Some(no), e))?;
                return Ok(Head { sched, columns, first: Some((no, line.to_string(), first)) });
            }
        }
        match columns {
            Some(columns) => Ok(Head { sched, columns, first: None }),
            None => Err((None, "no column header (#idx perf run period …)".into())),
        }
    }

    fn columns(&self) -> Result<Columns, String> {
        let col = |name: &str| {
            self.columns.iter().position(|c| c == name).ok_or_else(|| format!("the log has no '{name}' column"))
        };
        Ok(Columns {
            run: col("run")?,
            start: col("start")?,
            slack: col("slack")?,
            c_duration: col("c_duration")?,
            c_period: col("c_period")?,
            wu_lat: col("wu_lat")?,
            end: col("end")?,
        })
    }
}

/// What the lines of a log said about its phases: their periods, work and slack.
#[derive(Default)]
struct Phases {
    /// The first periodic line's period, and whether every periodic line had it (ns).
    period: Option<(i64, bool)>,
    /// The first line's work, and whether every line asked the same (µs).
    work: Option<(i64, bool)>,
    /// The smallest and largest slack of the periodic lines (ns).
    slack: Option<(i64, i64)>,
}

impl Phases {
    fn saw(&mut self, l: &Line, work_us: i64) {
        let same = |kept: Option<(i64, bool)>, v: i64| Some(kept.map_or((v, true), |(k, s)| (k, s && k == v)));
        self.work = same(self.work, work_us);
        if let Some(p) = l.period {
            self.period = same(self.period, p);
        }
        if let Some(s) = l.slack {
            self.slack = Some(self.slack.map_or((s, s), |(lo, hi)| (lo.min(s), hi.max(s))));
        }
    }

    /// The task's figures as its lines give them: a deadline and a work only when every
    /// line had the same, the slack as logged.
    fn settle(&self, w: &mut crate::result::WorkResult) {
        w.deadline_ns = self.period.and_then(|(p, same)| same.then_some(p));
        if let Some((us, same)) = self.work {
            w.work_ns = same.then(|| us.max(0).saturating_mul(1000));
        }
        (w.slack_min_ns, w.slack_max_ns) = (self.slack.map(|s| s.0), self.slack.map(|s| s.1));
    }
}

/// Parses an rt-app log, line by line: it holds the log's histograms, never its lines. Every
/// phase imports: periodic ones (`c_period` > 0) with their own period as the deadline of
/// their lines, and loops without a timer (`c_period` 0) with their run and their own time.
pub fn parse(path: &Path, text: &str) -> Result<RunResult, ImportError> {
    parse_lines(path, &mut text.lines().map(|l| Ok(l.to_string())).enumerate().map(|(i, l)| (i + 1, l)))
}

/// Imports the rt-app log at `path` as it is read, line by line: rt-app writes a line per loop,
/// and a task that loops without sleeping writes gigabytes (Debian's taskset.json example, for
/// one), more than any text rtlab reads whole.
pub fn stream(path: &Path) -> Result<RunResult, ImportError> {
    use std::io::BufRead;
    let err = |message: String| ImportError { file: path.display().to_string(), line: None, message };
    let input = super::open_input(path, false).map_err(err)?;
    let mut lines = std::io::BufReader::with_capacity(1 << 16, input)
        .lines()
        .map(|l| l.map_err(|e| format!("cannot read: {e}")))
        .enumerate()
        .map(|(i, l)| (i + 1, l));
    parse_lines(path, &mut lines)
}

/// Whether the file at `path` starts as an rt-app log.
pub fn detect_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    super::open_input(path, false).is_ok_and(|f| f.take(256).read_to_end(&mut head).is_ok())
        && detect(&String::from_utf8_lossy(&head))
}

fn parse_lines(path: &Path, lines: &mut dyn Iterator<Item = Numbered>) -> Result<RunResult, ImportError> {
    let err = |line: Option<usize>, message: String| ImportError { file: path.display().to_string(), line, message };
    let head = Head::read(lines).map_err(|(line, m)| err(line, m))?;
    let c = head.columns().map_err(|m| err(None, m))?;
    // A task that ran no loop (it waited for an event that never came) imports with none.
    let (first_no, (work_us, t0)) = match &head.first {
        Some((no, _, first)) => (*no, (first[c.c_duration], first[c.start])),
        None => (0, (0, 0)),
    };
    let ns = |no: usize, v: Option<i64>, what: &str| {
        v.ok_or_else(|| format!("{what} is out of range"))
            .and_then(|v| crate::units::to_ns(v, crate::units::NS_PER_US, what))
            .map_err(|m| err(Some(no), m))
    };
    let layout = Layout::DEFAULT;
    let spec = WorkSpec {
        kind: WorkKind::Fixed,
        amount_ns: ns(first_no, Some(work_us.max(0)), "c_duration")?,
        deadline_ns: crate::measure::work::NO_DEADLINE,
        miss_window: DEFAULT_MISS_WINDOW,
    };
    let live = Live::new(layout);
    let work = WorkLive::new(spec, layout, &[]);
    let mut rec = Recorder::new(&live, None);
    let mut wrec = WorkRecorder::new(&work, None, None);
    let (mut last, mut periods, mut phases) = (t0, 0u64, Phases::default());
    let first = head.first.as_ref().map(|(no, line, _)| (*no, Ok(line.clone())));
    for (no, line) in first.into_iter().chain(lines) {
        let line = line.map_err(|m| err(Some(no), m))?;
        let line = line.trim();
        if line.is_empty() || line.starts_with("# Policy :") {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            // rt-app writes its header once; a log glued to another must say the same columns.
            if !h.split_whitespace().eq(head.columns.iter().map(String::as_str)) {
                return Err(err(Some(no), "a second, different column header: one log per file".into()));
            }
            continue;
        }
        periods += 1;
        if periods > 100_000_000 {
            return Err(err(Some(no), "more than 100 million periods; split the log".into()));
        }
        let v = values(line, head.columns.len()).map_err(|m| err(Some(no), m))?;
        let l = c.period(&v, t0).map_err(|m| err(Some(no), m))?;
        if let Some((at, latency)) = l.wakeup {
            rec.record(latency, at, 0);
        }
        phases.saw(&l, v[c.c_duration]);
        work.set_deadline(l.period.unwrap_or(crate::measure::work::NO_DEADLINE));
        wrec.record(l.wakeup.map_or(0, |w| w.1), l.response, l.run, l.at, 0);
        last = v[c.start];
    }
    let period_ns = phases.period.map_or(0, |p| p.0);
    let mut r = result(path, head.sched, rec.finish(), wrec.finish(), period_ns, (last as f64 - t0 as f64) / 1e6);
    for w in r.threads.iter_mut().filter_map(|t| t.work.as_mut()).chain(r.all.work.as_mut()) {
        phases.settle(w);
    }
    // A task without a timer has loops but no wakeup: its result is not empty.
    if periods > 0 {
        r.warnings.retain(|w| w.warning != crate::result::warning::Warning::NoSamples);
    }
    Ok(r)
}

/// The RunResult of one rt-app task's log: its wakeups, work, policy and name.
fn result(
    path: &Path,
    sched: Option<SchedParams>,
    summary: crate::measure::stats::Summary,
    work: crate::measure::work::WorkSummary,
    period_ns: i64,
    duration_s: f64,
) -> RunResult {
    let figures = ProbeFigures {
        thread: 0,
        cpu: None,
        interval_ns: period_ns,
        summary,
        drift_ns: None,
        samples_lost: None,
        obtained: sched.map(|sched| Obtained {
            sched,
            cpus_allowed: Default::default(),
            last_cpu: None,
            timer_slack_ns: None,
        }),
        break_hit: None,
        logs: None,
        noise: None,
        name: task_name(path),
        work: Some(work),
        watch: None,
        series: None,
    };
    let mut r = RunResult::build(ProbeRun::imported(
        vec![figures],
        Source {
            format: "rt-app-log".into(),
            file: path.display().to_string(),
            tool_version: None,
            command_line: None,
            unit: "us".into(),
        },
        Some(duration_s),
    ));
    // The log says neither the CPUs nor whether the work was run or runtime.
    for t in &mut r.threads {
        t.cpus_allowed = None;
    }
    for w in r.threads.iter_mut().filter_map(|t| t.work.as_mut()).chain(r.all.work.as_mut()) {
        w.kind = None;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "# Policy : SCHED_FIFO priority : 80
#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat
   0    15000      322      956       167665271       167666227            7441        610        300       1000         21
   0    15000      312      989       167666232       167667221            8402        660        300       1000         16
   0    15000     1322     1993       167667225       167669218            9394       -340        300       1000          0
";

    #[test]
    fn an_rt_app_log_becomes_a_working_task_with_its_own_numbers() {
        let r = parse(Path::new("/tmp/x-ctl-0.log"), LOG).unwrap();
        let t = &r.threads[0];
        assert_eq!(t.name.as_deref(), Some("ctl"));
        assert_eq!((t.policy, t.priority), (Some(Policy::Fifo), Some(80)));
        // The third line overran (slack −340): rt-app did not sleep and wrote wu_lat 0, which
        // is no wakeup; the first two lines' wakeups started the jobs of the lines after them.
        assert_eq!((t.stats.cycles, t.stats.min_ns, t.stats.max_ns), (2, Some(16_000), Some(21_000)));
        let w = t.work.as_ref().unwrap();
        assert_eq!((w.run.min_ns, w.run.max_ns), (Some(312_000), Some(1_322_000)));
        assert_eq!((w.slack_min_ns, w.slack_max_ns), (Some(-340_000), Some(660_000)));
        // response = c_period − slack: 390, 340, 1340 µs.
        assert_eq!((w.response.min_ns, w.response.max_ns), (Some(340_000), Some(1_340_000)));
        assert_eq!((w.deadlines.releases, w.deadlines.misses, w.deadline_ns, w.kind), (3, 1, Some(1_000_000), None));
        assert_eq!(r.source.as_ref().unwrap().format, "rt-app-log");
    }

    #[test]
    fn each_wakeup_is_dated_at_the_release_it_measured_the_next_lines_job() {
        let r = parse(Path::new("/tmp/x-ctl-0.log"), LOG).unwrap();
        let t = &r.threads[0];
        // Line 1 ends (wakes) at 167666227 µs, 21 µs after its release at 167666206: 935 µs
        // after the first job's start (167665271); the largest wakeup is that one.
        assert_eq!((t.stats.max_at_cycle, t.stats.max_at_ns), (Some(0), Some(935_000)));
        // A log of late lines only holds no wakeup at all, and its jobs are still read.
        let late = "#idx perf run period start end rel_st slack c_duration c_period wu_lat
0 1 1200 1200 100 1300 0 -200 300 1000 0
0 1 1200 1200 1300 2500 0 -1400 300 1000 0
";
        let r = parse(Path::new("/tmp/x-late-0.log"), late).unwrap();
        assert_eq!(r.threads[0].stats.cycles, 0);
        assert_eq!(r.threads[0].work.as_ref().unwrap().deadlines.misses, 2);
    }

    #[test]
    fn damaged_rt_app_logs_are_refused_with_the_line() {
        let e = parse(
            Path::new("l.log"),
            "# Policy : SCHED_OTHER priority : 0\n#idx run start slack c_duration c_period wu_lat\n0 1 2 3\n",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(3));
        let e = parse(Path::new("l.log"), "#idx run start\n0 1 2\n").unwrap_err();
        assert!(e.message.contains("'slack'"), "{}", e.message);
        let negative = LOG.to_string() + "   0    15000      322      956       167669271       167666227            7441        610        300       -5         21\n";
        assert!(parse(Path::new("l.log"), &negative).unwrap_err().message.contains("c_period -5 is negative"));
        assert_eq!(task_name(Path::new("rt-app-my-task-3.log")).as_deref(), Some("my-task"));
    }

    #[test]
    fn a_phase_that_changes_the_period_judges_each_line_by_its_own() {
        // A fourth line in a 2 ms phase: its response 2000 − 610 = 1390 µs is within its period,
        // though beyond the first phase's 1 ms.
        let phases = LOG.to_string() + "   0    15000      322      956       167669271       167666227            7441        610        300       2000         21\n";
        let r = parse(Path::new("l.log"), &phases).unwrap();
        let w = r.threads[0].work.as_ref().unwrap();
        assert_eq!((w.deadlines.releases, w.deadlines.misses), (4, 1), "only the overrun of the 1 ms phase");
        assert_eq!(w.deadline_ns, None, "the phases have different deadlines");
        assert_eq!((w.slack_min_ns, w.slack_max_ns), (Some(-340_000), Some(660_000)), "as logged");
        assert_eq!(w.response.max_ns, Some(1_390_000));
    }

    #[test]
    fn a_task_without_a_timer_imports_its_loops_run_and_time_with_no_wakeup() {
        // rt-app's mp3-short AudioOut: an event-driven loop, c_period 0 and wu_lat 0.
        let log = "# Policy : SCHED_OTHER priority : -19
#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat
   1    80084     2002    30057     23494614912     23494644969            2804          0       4725          0          0
   1    80084     2204    29990     23494644974     23494674964           32866          0       4725          0          0
";
        let r = parse(Path::new("mp3-AudioOut-1.log"), log).unwrap();
        assert_eq!(r.threads[0].stats.cycles, 0, "no timer, no wakeup latency");
        let w = r.threads[0].work.as_ref().unwrap();
        assert_eq!((w.run.min_ns, w.run.max_ns), (Some(2_002_000), Some(2_204_000)));
        // Its response is the loop's own time, end − start (rt-app's period column).
        assert_eq!((w.response.min_ns, w.response.max_ns), (Some(29_990_000), Some(30_057_000)));
        assert_eq!((w.deadline_ns, w.deadlines.misses, w.slack_min_ns), (None, 0, None));
        assert_eq!(w.work_ns, Some(4_725_000));
        // A task that never ended a loop (it waited for an event): rt-app writes the headers only.
        let none =
            parse(Path::new("rt-app-thread1-1.log"), &log.lines().take(2).collect::<Vec<_>>().join("\n")).unwrap();
        assert_eq!((none.threads[0].stats.cycles, none.threads[0].work.as_ref().unwrap().run.cycles), (0, 0));
    }

    #[test]
    fn a_header_after_data_lines_is_refused_not_a_panic() {
        let glued = LOG.to_string() + "#idx run start\n0 1 2\n";
        let e = parse(Path::new("l.log"), &glued).unwrap_err();
        assert_eq!(e.line, Some(6));
        assert!(e.message.contains("second, different column header"), "{}", e.message);
        // The same header again (two logs of one task glued) reads on.
        let twice = LOG.to_string() + &LOG[LOG.find("#idx").unwrap()..];
        assert_eq!(parse(Path::new("l.log"), &twice).unwrap().threads[0].work.as_ref().unwrap().deadlines.releases, 6);
    }

    #[test]
    fn values_past_what_nanoseconds_hold_are_refused_never_wrapped() {
        let huge = LOG.replace("         21\n", " 9223372036854776\n");
        let e = parse(Path::new("l.log"), &huge).unwrap_err();
        assert!(e.message.contains("wu_lat 9223372036854776 is out of range"), "{}", e.message);
        let start = LOG.replace("167666232", "-9223372036854775808");
        assert!(parse(Path::new("l.log"), &start).unwrap_err().message.contains("start"));
    }

    /// A log the real rt-app 1.0 wrote here.
    const REAL: &str = include_str!("../../tests/fixtures/rt-app/logs/rt-app-ctl-0.log");

    fn line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let num = prop_oneof![any::<i64>(), -2000i64..2000, Just(i64::MAX), Just(i64::MIN)];
        prop_oneof![
            proptest::collection::vec(num, 0..13).prop_map(|v| v
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" ")),
            Just("#idx perf run period start end rel_st slack c_duration c_period wu_lat".to_string()),
            Just("#idx run start slack".to_string()),
            Just("# Policy : SCHED_FIFO priority : 4294967295".to_string()),
            Just("# Policy : SCHED_WARP priority : 1".to_string()),
            "[ -~]{0,40}",
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Real logs (this file's, and the lines rt-app writes) cut, reordered and mixed with
        /// extreme values: every input is a result or an error, never a panic.
        #[test]
        fn no_rt_app_log_makes_the_importer_panic(
            real in proptest::prelude::any::<bool>(),
            keep in 0usize..8,
            extra in proptest::collection::vec(line(), 0..12),
            at in 0usize..12,
        ) {
            let base = if real { REAL } else { LOG };
            let mut lines: Vec<String> = base.lines().take(keep).map(String::from).collect();
            let at = at.min(lines.len());
            lines.splice(at..at, extra);
            let text = lines.join("\n");
            if let Ok(r) = parse(Path::new("f.log"), &text) {
                proptest::prop_assert!(r.threads.len() == 1);
            }
        }
    }
}
