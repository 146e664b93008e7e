//! rt-app's per-task logs (`<log_basename>-<task>-<index>.log`): one line per period, in µs,
//!
//! ```text
//! # Policy : SCHED_FIFO priority : 80
//! #idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat
//!    0    15000      322      956       167665271       167666227            7441        610        300       1000         21
//! ```
//!
//! read into a RunResult of one working task: wakeup latency from `wu_lat`, run time from
//! `run`, response time from the line's own columns (`c_period − slack`: the next release
//! minus the end of the work is the slack, so the end minus this release is the period minus
//! it), the deadline is the period (rt-app has no other), slack exactly as logged, a miss
//! where the slack is negative. rt-app skips no release (it runs late periods back to back),
//! so none is counted skipped. Columns are found by their names in the header line.

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

/// Parses an rt-app log.
pub fn parse(path: &Path, text: &str) -> Result<RunResult, ImportError> {
    let err = |line: Option<usize>, message: String| ImportError { file: path.display().to_string(), line, message };
    let mut sched = None;
    let mut columns: Option<Vec<String>> = None;
    let mut rows: Vec<(usize, Vec<i64>)> = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(p) = line.strip_prefix("# Policy :") {
            // "SCHED_FIFO priority : 80"
            let mut words = p.split_whitespace();
            let name = words.next().unwrap_or("");
            let policy: Policy =
                name.strip_prefix("SCHED_").unwrap_or(name).parse().map_err(|e| err(Some(no + 1), e))?;
            let prio = p.rsplit(':').next().and_then(|v| v.trim().parse::<u32>().ok()).unwrap_or(0);
            sched = Some(SchedParams::simple(policy, if policy.is_realtime_priority() { prio } else { 0 }));
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            columns = Some(h.split_whitespace().map(String::from).collect());
            continue;
        }
        let Some(cols) = &columns else {
            return Err(err(Some(no + 1), "a data line before the column header (#idx perf run …)".into()));
        };
        let values: Vec<i64> =
            line.split_whitespace().map(|v| v.parse::<i64>()).collect::<Result<_, _>>().map_err(|_| {
                err(Some(no + 1), format!("'{}' is not a line of whole numbers", crate::units::clip(line, 80)))
            })?;
        if values.len() != cols.len() {
            return Err(err(Some(no + 1), format!("{} values for {} columns", values.len(), cols.len())));
        }
        if rows.len() >= 100_000_000 {
            return Err(err(Some(no + 1), "more than 100 million periods; split the log".into()));
        }
        rows.push((no + 1, values));
    }
    let cols = columns.ok_or_else(|| err(None, "no column header (#idx perf run period …)".into()))?;
    let col = |name: &str| {
        cols.iter().position(|c| c == name).ok_or_else(|| err(None, format!("the log has no '{name}' column")))
    };
    let (run, start, slack, c_duration, c_period, wu_lat) =
        (col("run")?, col("start")?, col("slack")?, col("c_duration")?, col("c_period")?, col("wu_lat")?);
    let Some((_, first)) = rows.first() else { return Err(err(None, "the log holds no period".into())) };
    let (period_us, work_us, t0) = (first[c_period], first[c_duration], first[start]);
    if period_us <= 0 {
        return Err(err(Some(rows[0].0), format!("c_period {period_us}: not a periodic task")));
    }
    let layout = Layout::DEFAULT;
    let spec = WorkSpec {
        kind: WorkKind::Fixed,
        amount_ns: work_us * 1000,
        deadline_ns: period_us * 1000,
        miss_window: DEFAULT_MISS_WINDOW,
    };
    let live = Live::new(layout);
    let work = WorkLive::new(spec, layout, &[]);
    let mut rec = Recorder::new(&live, None);
    let mut wrec = WorkRecorder::new(&work, None, None);
    for (no, v) in &rows {
        if v[c_period] != period_us {
            return Err(err(
                Some(*no),
                format!(
                    "c_period changes from {period_us} to {} µs: rtlab imports one periodic phase per log",
                    v[c_period]
                ),
            ));
        }
        let at = (v[start] - t0) * 1000;
        let latency = v[wu_lat] * 1000;
        let response = (v[c_period] - v[slack]) * 1000;
        rec.record(latency, at, 0);
        wrec.record(latency, response, v[run] * 1000, at, 0);
    }
    let summary = rec.finish();
    let figures = ProbeFigures {
        thread: 0,
        cpu: None,
        interval_ns: period_us * 1000,
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
        work: Some(wrec.finish()),
        watch: None,
        series: None,
    };
    let last = rows.last().map_or(t0, |(_, v)| v[start]);
    let mut r = RunResult::build(ProbeRun::imported(
        vec![figures],
        Source {
            format: "rt-app-log".into(),
            file: path.display().to_string(),
            tool_version: None,
            command_line: None,
            unit: "us".into(),
        },
        Some((last - t0) as f64 / 1e6),
    ));
    // The log says neither the CPUs nor whether the work was run or runtime.
    for t in &mut r.threads {
        t.cpus_allowed = None;
    }
    for w in r.threads.iter_mut().filter_map(|t| t.work.as_mut()).chain(r.all.work.as_mut()) {
        w.kind = None;
    }
    Ok(r)
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
        assert_eq!((t.stats.cycles, t.stats.min_ns, t.stats.max_ns), (3, Some(0), Some(21_000)));
        let w = t.work.as_ref().unwrap();
        assert_eq!((w.run.min_ns, w.run.max_ns), (Some(312_000), Some(1_322_000)));
        assert_eq!((w.slack_min_ns, w.slack_max_ns), (Some(-340_000), Some(660_000)));
        // response = c_period − slack: 390, 340, 1340 µs.
        assert_eq!((w.response.min_ns, w.response.max_ns), (Some(340_000), Some(1_340_000)));
        assert_eq!((w.deadlines.releases, w.deadlines.misses, w.deadline_ns, w.kind), (3, 1, Some(1_000_000), None));
        assert_eq!(r.source.as_ref().unwrap().format, "rt-app-log");
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
        let changing = LOG.to_string() + "   0    15000      322      956       167669271       167666227            7441        610        300       2000         21\n";
        assert!(parse(Path::new("l.log"), &changing).unwrap_err().message.contains("c_period changes"));
        assert_eq!(task_name(Path::new("rt-app-my-task-3.log")).as_deref(), Some("my-task"));
    }
}
