//! Reports: a document of headings, tables and figures built from the inputs once, then
//! written as self-contained HTML ([`html`]) or as Markdown ([`markdown`]); and comparisons
//! ([`compare`]).

pub mod compare;
pub mod html;
pub mod markdown;

use crate::import::input::{Content, Input};
use crate::plot::inputs::Of;
use crate::plot::inputs::{By, Kind, RenderError};
use crate::result::{RunResult, Stats, VerdictStatus};
use compare::{Comparison, Metric};

/// One piece of a report.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A heading (level 1 to 3).
    Heading(u8, String),
    /// A paragraph of plain text.
    Text(String),
    /// The verdict: status and message.
    Verdict(VerdictStatus, String),
    /// A table: header cells, then rows; `numeric` marks right-aligned columns.
    Table {
        /// Header cells.
        header: Vec<String>,
        /// Rows of cells.
        rows: Vec<Vec<String>>,
        /// Right-aligned columns.
        numeric: Vec<bool>,
    },
    /// A bulleted list.
    List(Vec<String>),
    /// The answer first: a run's few figures that matter, each a label and its value.
    Headline(Vec<(String, String)>),
    /// A folded section: its summary line, and what unfolds.
    Details(String, Vec<Block>),
    /// A picture: a name for files and anchors, a caption, and the SVG (text as outlines).
    Figure {
        /// File-name-safe name (`histogram-1`).
        name: String,
        /// Caption.
        caption: String,
        /// The SVG document.
        svg: String,
    },
}

/// A key/value table.
fn pairs(rows: Vec<(String, String)>) -> Block {
    Block::Table {
        header: vec!["".into(), "".into()],
        rows: rows.into_iter().map(|(k, v)| vec![k, v]).collect(),
        numeric: vec![false, false],
    }
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".into(), ToString::to_string)
}

/// The per-thread columns of summary tables.
pub const SUMMARY_COLUMNS: [&str; 16] = [
    "thread",
    "CPU",
    "policy",
    "samples",
    "missed",
    "min µs",
    "mean µs",
    "stdev µs",
    "p50 µs",
    "p90 µs",
    "p99 µs",
    "p99.9 µs",
    "p99.99 µs",
    "p99.999 µs",
    "max µs",
    "max at cycle",
];

fn latency_cell(m: Metric, s: &Stats) -> String {
    match m.value(s) {
        Some((v, false)) => crate::units::Unit::Micros.fmt_f(v),
        Some((v, true)) => format!("≥{}", crate::units::Unit::Micros.fmt_f(v)),
        None => "-".into(),
    }
}

fn summary_row(label: String, cpu: String, policy: String, s: &Stats) -> Vec<String> {
    let mut row = vec![label, cpu, policy, s.cycles.to_string(), opt(&s.missed)];
    row.extend(compare::METRICS.iter().filter(|m| m.is_latency()).map(|m| latency_cell(*m, s)));
    row.push(opt(&s.max_at_cycle));
    row
}

/// The per-thread summary table with an ALL row.
pub fn summary_table(r: &RunResult) -> Block {
    let mut rows: Vec<Vec<String>> = r
        .threads
        .iter()
        .map(|t| {
            let policy = match (t.policy, t.priority) {
                (Some(p), Some(prio)) if p.is_realtime_priority() => format!("{p}:{prio}"),
                (Some(p), _) => p.to_string(),
                (None, Some(prio)) => format!("prio {prio}"),
                _ => "-".into(),
            };
            summary_row(t.thread.to_string(), opt(&t.cpu), policy, &t.stats)
        })
        .collect();
    let policy = match (&r.all.policy, r.all.priority) {
        (Some(p), Some(prio)) => format!("{p}:{prio}"),
        (Some(p), None) => p.clone(),
        _ => "-".into(),
    };
    // One thread: its row is the ALL row.
    if r.threads.len() != 1 {
        rows.push(summary_row("ALL".into(), opt(&r.all.cpu), policy, &r.all.stats));
    }
    let numeric = SUMMARY_COLUMNS.iter().enumerate().map(|(i, _)| i >= 3).collect();
    Block::Table { header: SUMMARY_COLUMNS.iter().map(|s| s.to_string()).collect(), rows, numeric }
}

/// Latency as a share of each thread's period (p50, p99, p99.9, max): how much of the period's
/// budget the wakeup already took; `None` when no thread has a period.
pub fn period_share_table(r: &RunResult) -> Option<Block> {
    let share =
        |v: Option<i64>, period: i64| v.map_or("-".into(), |v| format!("{:.1} %", v as f64 * 100.0 / period as f64));
    let rows: Vec<Vec<String>> = r
        .threads
        .iter()
        .filter_map(|t| {
            let period = t.interval_ns.filter(|p| *p > 0)?;
            let p = |k: &str| t.stats.percentiles_ns.get(k).copied().flatten();
            Some(vec![
                t.thread.to_string(),
                crate::units::duration(period),
                share(p("50"), period),
                share(p("99"), period),
                share(p("99.9"), period),
                share(t.stats.max_ns, period),
            ])
        })
        .collect();
    (!rows.is_empty()).then(|| Block::Table {
        header: ["thread", "period", "p50", "p99", "p99.9", "max"].map(String::from).into(),
        rows,
        numeric: vec![false, true, true, true, true, true],
    })
}

/// A percentile cell: the value, `>X` when only a lower bound is known, `-` when unknown.
pub fn percentile_cell(s: &Stats, k: &str, u: crate::units::Unit) -> String {
    match (s.percentiles_ns.get(k).copied().flatten(), s.percentiles_above_ns.get(k)) {
        (Some(v), _) => u.fmt(v),
        (None, Some(lo)) => format!(">{}", u.fmt(*lo)),
        (None, None) => "-".into(),
    }
}

/// The working tasks' table as a header and rows (one per task, ALL when several); `None`
/// when no task works. The summary and the report both show it.
pub fn work_grid(r: &RunResult, u: crate::units::Unit) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let tasks: Vec<(String, &crate::result::WorkResult)> = r
        .threads
        .iter()
        .filter_map(|t| Some((t.name.clone().unwrap_or_else(|| t.thread.to_string()), t.work.as_ref()?)))
        .collect();
    let (_, first) = tasks.first()?;
    let l = u.label();
    let window = first.deadlines.window;
    let header: Vec<String> = [
        "task",
        "deadline",
        "releases",
        "misses",
        "late",
        "skipped",
        "streak",
        &format!("worst/{window}"),
        &format!("resp min {l}"),
        "avg",
        "p50",
        "p99",
        "p99.9",
        &format!("max {l}"),
        "run p50",
        "run max",
        "slack min",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let row = |name: &str, w: &crate::result::WorkResult| {
        let d = &w.deadlines;
        vec![
            name.to_string(),
            w.deadline_ns.map_or("-".into(), |v| u.fmt(v)),
            d.releases.to_string(),
            if d.misses > 0 { format!("{} ({:.2} %)", d.misses, w.miss_ratio * 100.0) } else { "0".into() },
            d.late.to_string(),
            d.skipped.to_string(),
            d.longest_miss_run.to_string(),
            d.worst_misses_in_window.to_string(),
            u.fmt_opt(w.response.min_ns),
            w.response.mean_ns.map_or("-".into(), |m| u.fmt_f(m)),
            percentile_cell(&w.response, "50", u),
            percentile_cell(&w.response, "99", u),
            percentile_cell(&w.response, "99.9", u),
            u.fmt_opt(w.response.max_ns),
            percentile_cell(&w.run, "50", u),
            u.fmt_opt(w.run.max_ns),
            u.fmt_opt(w.slack_min_ns),
        ]
    };
    let mut rows: Vec<Vec<String>> = tasks.iter().map(|(n, w)| row(n, w)).collect();
    if let (true, Some(all)) = (tasks.len() > 1, &r.all.work) {
        rows.push(row("ALL", all));
    }
    Some((header, rows))
}

/// An rt-app use case's waits for one another (`rtlab run --rt-app`) as a header and rows:
/// each hand-off (releasing task → woken task, by which event on which resource) and each
/// task's lock wait per mutex, with its count and latencies; `None` when the run has none.
pub fn rt_app_grid(r: &RunResult, u: crate::units::Unit) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let a = r.rt_app.as_ref()?;
    if a.handoffs.is_empty() && a.lock_waits.is_empty() {
        return None;
    }
    let l = u.label();
    let header: Vec<String> =
        ["wait", "from", "to", "on", "count", &format!("min {l}"), "p50", "p99", &format!("max {l}")]
            .iter()
            .map(|h| h.to_string())
            .collect();
    let cells = |st: &crate::result::Stats| {
        vec![
            st.cycles.to_string(),
            u.fmt_opt(st.min_ns),
            percentile_cell(st, "50", u),
            percentile_cell(st, "99", u),
            u.fmt_opt(st.max_ns),
        ]
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    for h in &a.handoffs {
        let mut row = vec![format!("hand-off ({})", h.via), h.from.clone(), h.to.clone(), h.resource.clone()];
        row.extend(cells(&h.stats));
        rows.push(row);
    }
    for w in &a.lock_waits {
        let mut row = vec!["lock".to_string(), "-".into(), w.task.clone(), w.mutex.clone()];
        row.extend(cells(&w.stats));
        rows.push(row);
    }
    Some((header, rows))
}

/// The watched threads' table (`rtlab watch`) as a header and rows, one per thread: how it
/// is released, its IRQ, thread and return-to-user latency (timerlat's IRQ/Thr/Usr), the
/// preemption it suffered while it worked and the timer slack the kernel gave it; `None`
/// when no thread was watched.
pub fn watch_grid(r: &RunResult, u: crate::units::Unit) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let watched: Vec<(&crate::result::ThreadResult, &crate::result::watch::WatchThread)> =
        r.threads.iter().filter_map(|t| Some((t, t.watch.as_ref()?))).collect();
    if watched.is_empty() {
        return None;
    }
    let l = u.label();
    let header: Vec<String> = [
        "thread",
        "policy",
        "cpus",
        "kind",
        "released by",
        &format!("period {l}"),
        "periods",
        "IRQ p99",
        "IRQ max",
        "Thr seen",
        "Thr p99",
        "Thr max",
        "Usr p99",
        "Usr max",
        "preempted max",
        "most by",
        "timer slack",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let dist = |s: &Option<Stats>, k: &str| s.as_ref().map_or("-".into(), |s| percentile_cell(s, k, u));
    let max = |s: &Option<Stats>| s.as_ref().map_or("-".into(), |s| u.fmt_opt(s.max_ns));
    let rows = watched
        .iter()
        .map(|(t, w)| {
            let released = match (w.timer_releases, w.event_releases) {
                (0, 0) => "-".to_string(),
                (_, 0) => "timer".into(),
                (0, _) => "waking".into(),
                (a, b) => format!("timer {a}, waking {b}"),
            };
            let seen = w.thread.as_ref().map_or(0, |s| s.cycles);
            let slack = match (w.timer_slack_min_ns, w.timer_slack_max_ns) {
                (Some(a), Some(b)) if a == b => crate::units::duration(a),
                (Some(a), Some(b)) => format!("{}-{}", crate::units::duration(a), crate::units::duration(b)),
                _ => "-".into(),
            };
            vec![
                format!("{}:{}", w.comm, w.tid),
                match (t.policy, t.priority) {
                    (Some(p), Some(prio)) if p.is_realtime_priority() => format!("{p}:{prio}"),
                    (Some(p), _) => p.to_string(),
                    _ => "-".into(),
                },
                if w.cpus.is_empty() { "-".into() } else { w.cpus.clone() },
                if w.kind.is_empty() { "-".into() } else { w.kind.clone() },
                released,
                match (w.period_ns, w.periodic) {
                    (Some(p), true) => u.fmt(p),
                    (Some(p), false) => format!("{} (irregular)", u.fmt(p)),
                    (None, _) => "-".into(),
                },
                w.periods.to_string(),
                dist(&w.irq, "99"),
                max(&w.irq),
                format!("{seen}/{}", w.periods),
                dist(&w.thread, "99"),
                max(&w.thread),
                percentile_cell(&t.stats, "99", u),
                u.fmt_opt(t.stats.max_ns),
                if w.preempted_max_ns > 0 { u.fmt(w.preempted_max_ns) } else { "0".into() },
                w.preemptors.first().map_or("-".into(), |p| p.task.clone()),
                slack,
            ]
        })
        .collect();
    Some((header, rows))
}

/// The jobs table: its header, its rows, and a line per stall.
pub type JobsGrid = (Vec<String>, Vec<Vec<String>>, Vec<String>);

/// The watched threads' jobs (`rtlab watch`) as a header and rows, one per thread: its kind
/// and the evidence, its jobs' running, waiting and blocked time, what it blocked on, its
/// wakeups inside jobs, an event loop's iterations and stalls; then one line per stall kept.
/// `None` when no thread was watched.
pub fn jobs_grid(r: &RunResult, u: crate::units::Unit) -> Option<JobsGrid> {
    let watched: Vec<&crate::result::watch::WatchThread> = r.threads.iter().filter_map(|t| t.watch.as_ref()).collect();
    if watched.is_empty() {
        return None;
    }
    let l = u.label();
    let header: Vec<String> = [
        "thread",
        "kind",
        "evidence",
        "jobs",
        &format!("running {l}"),
        &format!("waiting {l}"),
        &format!("blocked {l}"),
        "blocked most on",
        "wakeups inside",
        "iterations",
        "stalls",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    for w in watched {
        let j = &w.jobs;
        let blocked = w
            .blocked_on
            .first()
            .map_or("-".into(), |b| format!("{} ({} {l}, max {} {l})", b.on, u.fmt(b.ns), u.fmt(b.max_ns)));
        let el = w.event_loop.as_ref();
        rows.push(vec![
            format!("{}:{}", w.comm, w.tid),
            if w.kind.is_empty() { "-".into() } else { w.kind.clone() },
            if w.evidence.is_empty() { "-".into() } else { w.evidence.clone() },
            j.completed.to_string(),
            u.fmt(j.running_ns),
            u.fmt(j.waiting_ns),
            u.fmt(j.blocked_ns),
            blocked,
            j.inner_wakeups.to_string(),
            el.map_or("-".into(), |e| format!("{} ({} found input waiting)", e.iterations, e.found_waiting)),
            el.map_or("-".into(), |e| {
                format!("{} over {} {l} (longest {} {l})", e.stalls, u.fmt(e.stall_threshold_ns), u.fmt(e.busy_max_ns))
            }),
        ]);
        for s in el.map(|e| e.worst_stalls.as_slice()).unwrap_or_default() {
            let names = |v: &[crate::result::watch::Share]| {
                v.iter().map(|x| format!("{} {} {l}", x.name, u.fmt(x.ns))).collect::<Vec<_>>().join(", ")
            };
            let mut what = format!(
                "stall of {}:{} {} after the start: busy {} {l} (running {} {l}, waiting {} {l}, blocked {} {l})",
                w.comm,
                w.tid,
                crate::units::duration(s.at_ns),
                u.fmt(s.busy_ns),
                u.fmt(s.running_ns),
                u.fmt(s.waiting_ns),
                u.fmt(s.blocked_ns)
            );
            for (label, v) in
                [("preempted by", &s.preempted_by), ("interrupts", &s.interrupts), ("blocked on", &s.blocked_on)]
            {
                if !v.is_empty() {
                    what += &format!("; {label} {}", names(v));
                }
            }
            if let (Some(wk), Some(by)) = (s.wakeup_ns, &s.waker) {
                what += &format!("; woken by {by}, wakeup {} {l}", u.fmt(wk));
            }
            notes.push(what);
        }
    }
    Some((header, rows, notes))
}

/// Renders one figure of `kind` for `inputs` (SVG with text as outlines; ids prefixed so
/// several figures can share one HTML page); a sentence instead when the inputs lack the data.
pub fn figure(
    kind: Kind,
    inputs: &[Input],
    by: Option<By>,
    of: crate::plot::inputs::Of,
    name: String,
    caption: &str,
) -> Result<Block, String> {
    let svg = match crate::plot::inputs::render(kind, inputs, by, None, None, of) {
        Ok(svg) => svg,
        // The inputs do not hold what this picture needs (no histogram): say so in its place.
        Err(RenderError::Unfit(why)) => return Ok(Block::Text(format!("{caption}: not drawn — {why}."))),
        Err(RenderError::Draw(e)) => return Err(e),
    };
    let svg = crate::plot::encode_svg(&svg, &format!("{name}-"))?;
    Ok(Block::Figure { name, caption: caption.to_string(), svg })
}

fn provenance(r: &RunResult) -> Vec<(String, String)> {
    let mut v = vec![
        ("tool".into(), format!("{} {}", r.tool.name, r.tool.version)),
        ("command line".into(), if r.command_line.is_empty() { "-".into() } else { r.command_line.join(" ") }),
        ("start".into(), opt(&r.start_time)),
        ("end".into(), opt(&r.end_time)),
        ("duration".into(), r.duration_s.map_or("-".into(), |d| format!("{d:.3} s"))),
        ("ended by".into(), format!("{:?}", r.end_reason).to_lowercase()),
        ("simulated".into(), if r.simulated { "yes — not measured on this machine".into() } else { "no".into() }),
    ];
    if let Some(c) = &r.cost {
        v.push(("what it cost rtlab".into(), c.describe()));
    }
    if let Some(s) = &r.source {
        v.push(("imported from".into(), format!("{} ({}, figures in {})", s.file, s.format, s.unit)));
        if let Some(c) = &s.command_line {
            v.push(("original command line".into(), c.clone()));
        }
        if let Some(t) = &s.tool_version {
            v.push(("original tool version".into(), t.clone()));
        }
    }
    v
}

/// At most this many explained spikes get a timeline in a report (the largest).
const TIMELINES: usize = 10;

/// Each explained spike: its sentence, the attribution table and the timeline of its window.
fn explain_blocks(r: &RunResult, index: usize) -> Result<Vec<Block>, String> {
    let Some(s) = &r.explain else { return Ok(Vec::new()) };
    if let Some(why) = &s.unavailable {
        return Ok(vec![Block::Text(format!("Not explained: {why}."))]);
    }
    let over = match s.threshold_ns {
        Some(t) => {
            format!("{} above {}, ", crate::units::count(s.over_threshold, "sample"), crate::units::us(t as f64))
        }
        None => String::new(),
    };
    let mut out = vec![Block::Text(format!(
        "Events of the measured CPUs were recorded in rtlab's own tracefs instance ({} KiB per CPU, {} lost); {over}{} explained.",
        s.buffer_kb,
        s.lost_events,
        r.explanations.len()
    ))];
    let sub = crate::plot::describe(r);
    for (k, e) in r.explanations.iter().enumerate().take(TIMELINES) {
        out.push(Block::Text(e.describe(k == 0 && r.all.stats.max_ns == Some(e.latency_ns))));
        out.push(Block::Table {
            header: [if e.noise { "where the noise went" } else { "where the latency went" }, "µs", "share"]
                .map(String::from)
                .to_vec(),
            rows: e
                .parts
                .iter()
                .map(|p| vec![p.who(), format!("{:.1}", p.ns as f64 / 1e3), format!("{:.1} %", p.share)])
                .collect(),
            numeric: vec![false, true, true],
        });
        let caption = crate::plot::Caption {
            title: if e.noise {
                format!("{} µs noise on CPU {} (gap {})", crate::units::us_short(e.latency_ns as f64), e.cpu, e.cycle)
            } else {
                format!(
                    "{} µs on thread {} (CPU {}) cycle {}",
                    crate::units::us_short(e.latency_ns as f64),
                    e.thread,
                    e.cpu,
                    e.cycle
                )
            },
            subtitle: sub.clone(),
        };
        let svg = crate::plot::timeline::svg(&caption, e)?;
        let name = format!("timeline-{index}-{k}");
        let svg = crate::plot::encode_svg(&svg, &format!("{name}-"))?;
        out.push(Block::Figure {
            name,
            caption: format!(
                "The window of the {} µs sample, context by context",
                crate::units::us_short(e.latency_ns as f64)
            ),
            svg,
        });
    }
    if r.explanations.len() > TIMELINES {
        out.push(Block::Text(format!(
            "{} more explained samples are in the result's explanations.",
            r.explanations.len() - TIMELINES
        )));
    }
    Ok(out)
}

/// A noise run's figures per CPU (rtla osnoise's columns) and its largest interferers.
fn noise_blocks(r: &RunResult) -> Vec<Block> {
    use crate::trace::noise::Source;
    let mut header: Vec<String> = [
        "CPU",
        "runtime s",
        "noise µs",
        "% CPU available",
        "max single µs",
        "noise µs/s",
        "noises/s",
        "loop ns",
        "steal",
    ]
    .map(String::from)
    .to_vec();
    header.extend(Source::ALL.iter().map(|s| s.label().to_string()));
    let mut rows = Vec::new();
    let mut top = Vec::new();
    for t in &r.threads {
        let Some(n) = &t.noise else { continue };
        let cpu = opt(&t.cpu);
        let mut row = vec![
            cpu.clone(),
            format!("{:.3}", n.runtime_ns as f64 / 1e9),
            format!("{:.1}", n.noise_ns as f64 / 1e3),
            format!("{:.5}", n.available_pct),
            t.stats.max_ns.map_or("-".into(), |m| format!("{:.1}", m as f64 / 1e3)),
            format!("{:.1}", n.noise_per_s_ns / 1e3),
            format!("{:.1}", n.noises_per_s),
            format!("{:.1}", n.loop_ns),
            n.steal_ns.map_or("-".into(), crate::units::duration),
        ];
        match &n.sources {
            Some(src) => {
                row.extend(Source::ALL.iter().map(|s| src.of(*s).count.to_string()));
                top.extend(src.top.iter().map(|x| {
                    vec![
                        cpu.clone(),
                        x.source.label().to_string(),
                        x.name.clone(),
                        x.count.to_string(),
                        format!("{:.1}", x.ns as f64 / 1e3),
                    ]
                }));
            }
            None => row.extend(Source::ALL.iter().map(|_| "-".to_string())),
        }
        rows.push(row);
    }
    let numeric = header.iter().enumerate().map(|(i, _)| i > 0).collect();
    let mut out = vec![Block::Table { header, rows, numeric }];
    // Ranked by the time they took, whatever the CPU (the hypervisor's share is often the largest).
    top.sort_by(|a, b| b[4].parse::<f64>().unwrap_or(0.0).total_cmp(&a[4].parse::<f64>().unwrap_or(0.0)));
    if !top.is_empty() {
        out.push(Block::Text("The largest interferers by time (HW: gaps in which the kernel saw nothing):".into()));
        out.push(Block::Table {
            header: ["CPU", "source", "name", "count", "time µs"].map(String::from).to_vec(),
            rows: top,
            numeric: vec![false, false, false, true, true],
        });
    }
    out
}

/// The doctor's findings for the measured CPUs: the counts, the failures and warnings (worst
/// first), then the passing and unknown checks folded.
fn doctor_blocks(r: &RunResult) -> Vec<Block> {
    use crate::doctor::Status;
    let Some(d) = &r.environment.doctor else {
        return vec![Block::Text("Not examined (imported data, or cyclictest without --rtlab-json).".into())];
    };
    let table = |checks: Vec<&crate::doctor::Check>| Block::Table {
        header: ["status", "check", "finding", "consequence", "fix"].map(String::from).to_vec(),
        rows: checks
            .iter()
            .map(|c| {
                vec![
                    c.status.label().to_string(),
                    c.title.clone(),
                    c.finding.clone(),
                    c.consequence.clone(),
                    c.fix.clone().unwrap_or_default(),
                ]
            })
            .collect(),
        numeric: vec![false; 5],
    };
    let (mut bad, rest): (Vec<&crate::doctor::Check>, Vec<&crate::doctor::Check>) =
        d.checks.iter().partition(|c| matches!(c.status, Status::Fail | Status::Warn));
    bad.sort_by_key(|c| c.status != Status::Fail);
    let mut out = vec![Block::Text(format!(
        "CPU {}, counters sampled over {:.2} s: {} fail, {} warn, {} ok, {} unknown.",
        d.cpus, d.sample_s, d.counts.fail, d.counts.warn, d.counts.ok, d.counts.unknown
    ))];
    if !bad.is_empty() {
        out.push(table(bad));
    }
    if !rest.is_empty() {
        out.push(Block::Details(format!("{} checks ok or unknown", rest.len()), vec![table(rest)]));
    }
    out
}

/// The answer of a run in a few figures: the worst and the tail, what was missed, the verdict,
/// the largest explained cause and the doctor's count.
fn headline(r: &RunResult) -> Block {
    let us = |ns: i64| crate::units::us(ns as f64);
    let noise = r.kind == crate::result::Kind::Noise;
    let s = &r.all.stats;
    let mut v: Vec<(String, String)> = Vec::new();
    let worst = r.threads.iter().filter(|t| t.stats.max_ns.is_some()).max_by_key(|t| t.stats.max_ns);
    if noise {
        let avail = r.threads.iter().filter_map(|t| t.noise.as_ref()).map(|n| n.available_pct).reduce(f64::min);
        v.push(("largest noise".into(), s.max_ns.map_or("-".into(), us)));
        v.push(("CPU available, worst CPU".into(), avail.map_or("-".into(), |a| format!("{a:.3} %"))));
        if let Some((src, ns)) = top_noise_source(r) {
            v.push(("top source".into(), format!("{src}, {}", crate::units::duration(ns))));
        }
    } else {
        let max = match (s.max_ns, worst) {
            (Some(m), Some(t)) if r.threads.len() > 1 => format!("{} (thread {})", us(m), t.thread),
            (Some(m), _) => us(m),
            _ => "-".into(),
        };
        v.push(("max".into(), max));
        v.push(("p99.9".into(), percentile_cell(s, "99.9", crate::units::Unit::Micros) + " µs"));
        v.push(("missed periods".into(), opt(&s.missed)));
        if let Some(w) = &r.all.work {
            v.push(("deadline misses".into(), w.deadlines.misses.to_string()));
        }
    }
    v.push((
        "verdict".into(),
        match r.verdict.status {
            VerdictStatus::Pass => "PASS".into(),
            VerdictStatus::Fail => "FAIL".into(),
            VerdictStatus::NotChecked => "no threshold given".into(),
        },
    ));
    if let Some(cause) = top_cause(r) {
        v.push(("top explained cause".into(), cause));
    }
    v.push((
        "machine setup".into(),
        r.environment
            .doctor
            .as_ref()
            .map_or("not examined".into(), |d| format!("{} fail, {} warn", d.counts.fail, d.counts.warn)),
    ));
    Block::Headline(v)
}

/// The largest part of the largest explained spike: `timer delay (IRQs disabled) blk:12 89.5 %`.
fn top_cause(r: &RunResult) -> Option<String> {
    let e = r.explanations.iter().max_by_key(|e| e.latency_ns)?;
    let p = e.parts.iter().max_by(|a, b| a.share.total_cmp(&b.share))?;
    Some(format!("{}, {:.1} % of {}", p.who(), p.share, crate::units::us(e.latency_ns as f64)))
}

/// The noise source that took the most time over every CPU, and that time (ns).
fn top_noise_source(r: &RunResult) -> Option<(String, i64)> {
    use crate::trace::noise::Source;
    Source::ALL
        .iter()
        .map(|s| {
            let ns: i64 =
                r.threads.iter().filter_map(|t| t.noise.as_ref()?.sources.as_ref()).map(|src| src.of(*s).ns).sum();
            (s.label().to_string(), ns)
        })
        .filter(|(_, ns)| *ns > 0)
        .max_by_key(|(_, ns)| *ns)
}

fn section_of(prefix: &str, r: &RunResult) -> Vec<(String, String)> {
    strip(prefix, compare::settings(r))
}

/// The settings under `prefix`, named without it and with spaces for underscores.
fn strip(prefix: &str, settings: Vec<(String, String)>) -> Vec<(String, String)> {
    settings
        .into_iter()
        .filter_map(|(k, v)| k.strip_prefix(prefix).map(|k| (k.trim_start_matches('.').replace('_', " "), v)))
        .collect()
}

/// Watched threads drawn with their IRQ, thread and wakeup distributions side by side, at most.
const MAX_STAGE_FIGURES: usize = 8;

/// One figure per watched thread (with periods): its IRQ, Thr and Usr latency histograms side
/// by side, as `rtla timerlat hist` gives them.
fn stage_figures(input: &Input, r: &RunResult, index: usize) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    for t in r.threads.iter().filter(|t| t.watch.is_some() && t.stats.cycles > 0).take(MAX_STAGE_FIGURES) {
        let mut one = r.clone();
        one.threads = vec![t.clone()];
        let single = Input { content: Content::Run(Box::new(one)), samples: None, ..input.clone() };
        let label = crate::plot::inputs::thread_label(t);
        let caption = format!("{label}: IRQ, thread and wakeup latency (timerlat's IRQ/Thr/Usr)");
        let name = format!("stages-{index}-{}", t.thread);
        out.push(figure(Kind::Histogram, std::slice::from_ref(&single), Some(By::Thread), Of::Stages, name, &caption)?);
    }
    Ok(out)
}

fn run_blocks(input: &Input, r: &RunResult, index: usize, out: &mut Vec<Block>) -> Result<(), String> {
    // The answer first: the headline and the pictures; the evidence after; the setup folded.
    out.push(Block::Heading(2, input.name.clone()));
    out.push(Block::Text(crate::plot::describe(r)));
    out.push(headline(r));
    out.push(Block::Verdict(r.verdict.status, r.verdict.message.clone()));
    let noise = r.kind == crate::result::Kind::Noise;
    out.extend(picture_blocks(input, r, index)?);
    if r.explain.is_some() {
        out.push(Block::Heading(
            3,
            if noise { "The largest noises, explained" } else { "Why it was late (--explain)" }.into(),
        ));
        out.extend(explain_blocks(r, index)?);
    }
    out.push(Block::Heading(3, "Warnings".into()));
    out.push(if r.warnings.is_empty() {
        Block::Text("None.".into())
    } else {
        Block::List(r.warnings.iter().map(|w| w.message.clone()).collect())
    });
    if noise {
        out.push(Block::Heading(3, "Noise per CPU".into()));
        out.extend(noise_blocks(r));
    } else {
        out.push(Block::Heading(3, "Per-thread summary".into()));
        out.push(summary_table(r));
        if let Some(t) = period_share_table(r) {
            out.push(Block::Text(
                "Latency as a share of the period (what the wakeup took of each period's budget):".into(),
            ));
            out.push(t);
        }
        if let Some(d) = crate::result::uncertainty::describe(&r.all.stats, crate::units::Unit::Micros) {
            out.push(Block::Text(format!("How far a rerun may land: {d}.")));
        }
        if let Some(d) = crate::result::exceed::describe(&r.all.stats, crate::units::Unit::Micros) {
            out.push(Block::Text(format!("How often: {d}.")));
        }
    }
    out.extend(load_blocks(r));
    if let Some((header, rows)) = work_grid(r, crate::units::Unit::Micros) {
        out.push(Block::Heading(3, "Response time".into()));
        out.push(Block::Text(
            "Response time is completion − release; slack is deadline − response; a miss is a job that completed \
             after its deadline or a release skipped while an earlier job ran; streak is the longest run of consecutive \
             misses, worst/K the most misses in any K consecutive releases; run is the time the work ran. Times in µs."
                .into(),
        ));
        let numeric = header.iter().enumerate().map(|(i, _)| i > 0).collect();
        out.push(Block::Table { header, rows, numeric });
    }
    if let Some((header, rows)) = rt_app_grid(r, crate::units::Unit::Micros) {
        out.push(Block::Heading(3, "Waits for one another (rt-app)".into()));
        out.push(Block::Text(
            "A hand-off is the time from a release (resume, signal, broad, sync, a barrier's last arrival), stamped by \
             the releasing thread, to the woken thread done with its wait and running its next event; a lock wait is \
             the time a lock event blocked. Times in µs."
                .into(),
        ));
        let numeric = header.iter().enumerate().map(|(i, _)| i > 3).collect();
        out.push(Block::Table { header, rows, numeric });
    }
    out.extend(watch_blocks(input, r, index)?);
    out.push(Block::Heading(3, "Machine setup (rtlab doctor)".into()));
    out.extend(doctor_blocks(r));
    let config = if noise {
        pairs(section_of("noise", r).into_iter().filter(|(k, _)| !k.starts_with("cpu")).collect())
    } else if r.config.is_none() {
        Block::Text("Not known (imported data).".into())
    } else {
        pairs(section_of("config", r))
    };
    out.push(Block::Details("Configuration".into(), vec![config]));
    out.push(Block::Details("Provenance".into(), vec![pairs(provenance(r))]));
    out.push(Block::Details("Environment".into(), vec![pairs(section_of("environment", r))]));
    Ok(())
}

/// A run's pictures: its histogram and percentiles (noise: over time and its gaps), its
/// response time when it has one, and its latency over time.
fn picture_blocks(input: &Input, r: &RunResult, index: usize) -> Result<Vec<Block>, String> {
    let noise = r.kind == crate::result::Kind::Noise;
    let mut out = Vec::new();
    out.push(Block::Heading(3, "Pictures".into()));
    let one = std::slice::from_ref(input);
    let by = if r.threads.len() > MAX_CURVES {
        out.push(Block::Text(format!(
            "{} threads: the pictures draw them together (one curve per thread up to {MAX_CURVES}).",
            r.threads.len()
        )));
        By::Input
    } else {
        By::Thread
    };
    if noise {
        out.push(figure(Kind::Noise, one, None, Of::Latency, format!("noise-{index}"), "Noise over time")?);
    }
    let caption = if noise { "Noise gap histogram" } else { "Latency histogram" };
    out.push(figure(Kind::Histogram, one, Some(by), Of::Latency, format!("histogram-{index}"), caption)?);
    if !noise {
        out.push(figure(Kind::Cdf, one, Some(by), Of::Latency, format!("cdf-{index}"), "Latency percentiles (tail)")?);
        if r.all.work.is_some() {
            let (h, c) = (format!("response-{index}"), format!("response-cdf-{index}"));
            out.push(figure(Kind::Histogram, one, Some(by), Of::Response, h, "Response-time histogram")?);
            out.push(figure(Kind::Cdf, one, Some(by), Of::Both, c, "Latency and response time (tail)")?);
        }
    }
    if input.samples.is_some() || crate::plot::inputs::has_series(r) {
        out.push(figure(Kind::Timeseries, one, None, Of::Latency, format!("timeseries-{index}"), "Latency over time")?);
    }
    Ok(out)
}

/// A run's loads as a table (nothing without loads).
fn load_blocks(r: &RunResult) -> Vec<Block> {
    let mut out = Vec::new();
    if !r.loads.is_empty() {
        out.push(Block::Heading(3, "Loads".into()));
        out.push(Block::Table {
            header: ["load", "workers", "policy", "throughput /s", "unit", "CPU per worker"].map(String::from).to_vec(),
            rows: r
                .loads
                .iter()
                .map(|l| {
                    vec![
                        l.spec.clone(),
                        l.workers.to_string(),
                        l.policy.clone(),
                        crate::units::si(l.rate_per_s),
                        l.unit.clone(),
                        l.utilization.map_or("-".into(), |u| format!("{:.0} %", u * 100.0)),
                    ]
                })
                .collect(),
            numeric: vec![false, true, false, true, false, true],
        });
    }
    out
}

/// The watched threads' tables (threads, then their jobs and stalls) and stage pictures
/// (nothing for a run that watched none).
fn watch_blocks(input: &Input, r: &RunResult, index: usize) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    if let Some((header, rows)) = watch_grid(r, crate::units::Unit::Micros) {
        out.push(Block::Heading(3, "Watched threads".into()));
        out.push(Block::Text(
            "Per watched thread, from the kernel's events: IRQ = its timer's interrupt − the expiry it asked for; \
             Thr = the switch to it − release (seen only where the kernel traces that switch); Usr = its return to \
             user space − release (the wakeup latency); preempted = time runnable but not running during its work. \
             Times in µs."
                .into(),
        ));
        let numeric = header.iter().enumerate().map(|(i, _)| i > 4).collect();
        out.push(Block::Table { header, rows, numeric });
        if let Some((header, rows, notes)) = jobs_grid(r, crate::units::Unit::Micros) {
            out.push(Block::Text(
                "Jobs: each from its release (the expiry of the timer it waits on from one period to the next; an \
                 event loop's wait returning) to its completion (its next wait for that timer; the loop's next wait), \
                 whatever it blocked on inside. Running + waiting (runnable, not running) + blocked = the response."
                    .into(),
            ));
            let numeric = header.iter().enumerate().map(|(i, _)| i > 2).collect();
            out.push(Block::Table { header, rows, numeric });
            out.extend(notes.into_iter().map(Block::Text));
        }
        out.extend(stage_figures(input, r, index)?);
    }
    Ok(out)
}

fn sweep_blocks(input: &Input, index: usize, out: &mut Vec<Block>) -> Result<(), String> {
    let Content::Sweep(sweep, points) = &input.content else { return Ok(()) };
    out.push(Block::Heading(2, format!("Sweep {}", input.name)));
    out.push(Block::Text(format!(
        "{} of {} points done; command line: {}",
        points.len(),
        sweep.planned,
        sweep.command_line.join(" ")
    )));
    out.push(Block::Heading(3, "Sweep table".into()));
    let axes: Vec<String> =
        points.first().map(|p| p.point.axes.iter().map(|a| a.0.clone()).collect()).unwrap_or_default();
    let mut header = axes.clone();
    header.extend(
        [
            "samples",
            "missed",
            "min µs",
            "mean µs",
            "stdev µs",
            "p50 µs",
            "p99 µs",
            "p99.9 µs",
            "max µs",
            "throughput /s",
            "verdict",
        ]
        .map(String::from),
    );
    let rows = points
        .iter()
        .map(|p| {
            let s = &p.result.all.stats;
            let mut row: Vec<String> = p.point.axes.iter().map(|a| a.1.clone()).collect();
            row.push(s.cycles.to_string());
            row.push(opt(&s.missed));
            for m in [
                Metric::Min,
                Metric::Mean,
                Metric::Stdev,
                Metric::Percentile("50"),
                Metric::Percentile("99"),
                Metric::Percentile("99.9"),
                Metric::Max,
            ] {
                row.push(latency_cell(m, s));
            }
            row.push(
                p.result.loads.first().map_or("-".into(), |l| format!("{} {}", crate::units::si(l.rate_per_s), l.unit)),
            );
            row.push(match p.result.verdict.status {
                VerdictStatus::Pass => "pass".into(),
                VerdictStatus::Fail => "FAIL".into(),
                VerdictStatus::NotChecked => "not checked".into(),
            });
            row
        })
        .collect();
    let numeric = header.iter().enumerate().map(|(i, _)| i >= axes.len()).collect();
    out.push(Block::Table { header, rows, numeric });
    if !points.is_empty() {
        out.push(Block::Heading(3, "Plots".into()));
        let one = std::slice::from_ref(input);
        out.push(figure(
            Kind::Sweep,
            one,
            None,
            Of::Latency,
            format!("sweep-{index}"),
            "Latency and throughput across the sweep",
        )?);
        out.push(figure(
            Kind::Cdf,
            one,
            Some(By::Input),
            Of::Latency,
            format!("sweep-cdf-{index}"),
            "Tail of every point",
        )?);
    }
    out.push(Block::Heading(3, "Environment".into()));
    out.push(pairs(strip("environment", compare::environment_settings(&sweep.environment))));
    Ok(())
}

fn fmt_value(m: Metric, c: &Option<compare::Cell>) -> String {
    match c {
        None => "-".into(),
        Some(c) if m.is_latency() => {
            format!("{}{}", if c.at_least { "≥" } else { "" }, crate::units::Unit::Micros.fmt_f(c.value))
        }
        Some(c) => format!("{}{:.0}", if c.at_least { "≥" } else { "" }, c.value),
    }
}

/// The comparison as tables: one per section, then the differences.
pub fn comparison_blocks(c: &Comparison, max_threads: usize) -> Vec<Block> {
    let mut out = Vec::new();
    let lines = compare_headlines(c);
    if !lines.is_empty() {
        out.push(Block::Headline(lines));
    }
    let mut header = vec!["metric".to_string()];
    for (i, n) in c.names.iter().enumerate() {
        header.push(n.clone());
        if i > 0 {
            header.push(format!("Δ vs {}", c.names[0]));
            header.push("ratio".into());
        }
    }
    let numeric: Vec<bool> = header.iter().enumerate().map(|(i, _)| i > 0).collect();
    let threads = c.sections.iter().filter(|s| s.per_thread).count();
    let shown =
        c.sections.iter().filter(|s| !s.per_thread).chain(c.sections.iter().filter(|s| s.per_thread).take(max_threads));
    for s in shown {
        out.push(Block::Heading(3, format!("{} (µs; counts for samples and missed)", s.title)));
        let rows = s
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![r.metric.name()];
                for i in 0..c.names.len() {
                    row.push(fmt_value(r.metric, &r.cells[i]));
                    if i > 0 {
                        row.push(r.diffs[i].map_or("-".into(), |d| {
                            if r.metric.is_latency() {
                                crate::units::us_delta(d)
                            } else {
                                format!("{d:+.0}")
                            }
                        }));
                        row.push(r.ratios[i].map_or("-".into(), |x| format!("{x:.3}")));
                    }
                }
                row
            })
            .collect();
        out.push(Block::Table { header: header.clone(), rows, numeric: numeric.clone() });
    }
    if threads > max_threads {
        out.push(Block::Text(format!(
            "{} more per-thread tables are left out; rtlab compare --all-threads prints them all.",
            threads - max_threads
        )));
    }
    if !c.intervals.is_empty() {
        out.push(Block::Heading(3, "How far a rerun may land (95 % intervals, all threads, µs)".into()));
        let mut header = vec!["run".to_string(), "found by".to_string()];
        header.extend(crate::result::uncertainty::SHOWN.iter().map(|s| s.to_string()));
        let numeric = header.iter().enumerate().map(|(i, _)| i > 1).collect();
        out.push(Block::Table { header, rows: c.intervals.clone(), numeric });
    }
    out.push(Block::Heading(3, "What differs".into()));
    if c.differences.is_empty() {
        out.push(Block::Text("Nothing: the environments and configurations are the same.".into()));
    } else {
        let mut h = vec!["setting".to_string()];
        h.extend(c.names.iter().cloned());
        out.push(Block::Table {
            numeric: vec![false; h.len()],
            header: h,
            rows: c
                .differences
                .iter()
                .map(|d| {
                    let mut row = vec![d.field.clone()];
                    row.extend(d.values.iter().cloned());
                    row
                })
                .collect(),
        });
    }
    out
}

/// How a group comparison's verdict reads: `worse`, `inconclusive (about 9 runs a side would
/// decide)`.
pub fn group_verdict(r: &crate::measure::groups::Ratio, runs_a: usize, runs_b: usize) -> String {
    use crate::measure::groups::{Verdict, RUNS_CAP};
    match r.verdict {
        Verdict::Inconclusive(Some(n)) => format!("inconclusive (about {n} runs a side would decide)"),
        Verdict::Inconclusive(None) if runs_a + runs_b < 3 => "inconclusive (one run a side)".into(),
        Verdict::Inconclusive(None) => format!("inconclusive (more than {RUNS_CAP} runs a side)"),
        v => v.name().into(),
    }
}

/// A ratio's interval: `[×1.800, ×2.950]`, or `unbounded` (too few runs).
pub fn group_interval(r: &crate::measure::groups::Ratio) -> String {
    match (r.low, r.high) {
        (Some(l), Some(h)) => format!("[×{l:.3}, ×{h:.3}]"),
        _ => "unbounded".into(),
    }
}

/// The ratio and its interval in a line: `B ÷ A ×1.938, 94.3 % interval [×1.840, ×2.375]`.
pub fn group_figures(r: &crate::measure::groups::Ratio) -> String {
    match r.low {
        Some(_) => format!("B ÷ A ×{:.3}, {:.1} % interval {}", r.estimate, r.coverage * 100.0, group_interval(r)),
        None => format!("B ÷ A ×{:.3}, no interval", r.estimate),
    }
}

fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (n > 0).then(|| if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// Blocks as the terminal shows them.
pub fn terminal_text(blocks: Vec<Block>) -> String {
    let mut text = String::new();
    for b in blocks {
        match b {
            Block::Heading(_, t) => text += &format!("{t}\n"),
            Block::Text(t) => text += &format!("{t}\n\n"),
            Block::Headline(figures) => {
                text += &figures.iter().map(|(k, v)| format!("{k}: {v}\n")).collect::<String>();
                text += "\n";
            }
            Block::Table { header, rows, numeric } => text += &markdown::table(&header, &rows, &numeric),
            _ => {}
        }
    }
    text
}

/// Two groups compared as tables: per figure each group's median run and range, B ÷ A with its
/// interval and the verdict; how it was found; each run's own intervals when a side has too few
/// runs to bound the ratio.
pub fn group_blocks(g: &compare::GroupComparison) -> Vec<Block> {
    let (na, nb) = (g.a.len(), g.b.len());
    let mut out = vec![Block::Text(format!(
        "A (the baseline, {na} run{}): {}\nB ({nb} run{}): {}",
        if na == 1 { "" } else { "s" },
        g.a.join(", "),
        if nb == 1 { "" } else { "s" },
        g.b.join(", ")
    ))];
    let us = |v: f64| crate::units::Unit::Micros.fmt_f(v);
    let range = |v: &[f64]| {
        let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
        if v.is_empty() {
            "-".into()
        } else {
            format!("{}–{}", us(lo), us(hi))
        }
    };
    let header: Vec<String> = ["figure", "A median", "A range", "B median", "B range", "B ÷ A", "interval", "verdict"]
        .map(String::from)
        .into();
    let numeric = vec![false, true, true, true, true, true, true, false];
    let mut coverage = None;
    for s in &g.sections {
        out.push(Block::Heading(3, format!("{}: B against A (µs)", s.title)));
        let rows = s
            .rows
            .iter()
            .map(|r| {
                coverage = coverage.or(r.ratio.filter(|x| x.low.is_some()).map(|x| x.coverage));
                let cell = |v: &[f64]| median(v).map_or("-".into(), us);
                let (ratio, interval, verdict) = match &r.ratio {
                    Some(x) => (format!("×{:.3}", x.estimate), group_interval(x), group_verdict(x, na, nb)),
                    None => ("-".into(), "-".into(), "not comparable (a run lacks it, or it is 0)".into()),
                };
                vec![r.metric.name(), cell(&r.a), range(&r.a), cell(&r.b), range(&r.b), ratio, interval, verdict]
            })
            .collect();
        out.push(Block::Table { header: header.clone(), rows, numeric: numeric.clone() });
    }
    let t = 1.0 + g.margin_pct / 100.0;
    let held = |c: f64| format!("{:.1} %", c * 100.0);
    out.push(Block::Text(format!(
        "Each run gives one figure. B ÷ A is the median of the ratios of every B run to every A run (Hodges–Lehmann); \
         its interval is Moses's, from the exact distribution of the Mann–Whitney statistic, holding the true ratio \
         with probability {} whatever the figures' distribution, if the runs of a group are alike and independent \
         (interleave them). Verdicts for a margin of {} %: worse when the whole interval is above ×{t:.3}, better when \
         below ×{:.3}, no evidence (of a change beyond the margin) when inside, inconclusive otherwise; a verdict \
         of worse or better holds at {}. Fewer than 3 runs a side bound no interval.",
        coverage.map_or("- (no interval: fewer than 3 runs a side)".into(), held),
        g.margin_pct,
        1.0 / t,
        coverage.map_or("-".into(), |c| held((1.0 + c) / 2.0)),
    )));
    if na.min(nb) < 3 && !g.intervals.is_empty() {
        out.push(Block::Heading(3, "Each run's own 95 % intervals (all threads, µs)".into()));
        out.push(Block::Text(
            "They measure each run's sampling only, not how far runs of one configuration land apart on this machine, \
             so they decide no verdict: run at least 3 of each, interleaved."
                .into(),
        ));
        let mut header = vec!["run".to_string(), "found by".to_string()];
        header.extend(crate::result::uncertainty::SHOWN.iter().map(|s| s.to_string()));
        let numeric = header.iter().enumerate().map(|(i, _)| i > 1).collect();
        out.push(Block::Table { header, rows: g.intervals.clone(), numeric });
    }
    out
}

/// One figure per run against the baseline, from the all-threads table: (`b.json vs a.json`,
/// `p99 ×5.4, max ×34, missed 563 vs 1`).
pub fn compare_headlines(c: &Comparison) -> Vec<(String, String)> {
    let Some(all) = c.sections.first() else { return Vec::new() };
    let row = |name: &str| all.rows.iter().find(|r| r.metric.name() == name);
    (1..c.names.len())
        .map(|i| {
            let mut parts = Vec::new();
            for m in ["p99", "p99.9", "max"] {
                if let Some(x) = row(m).and_then(|r| r.ratios.get(i).copied().flatten()) {
                    parts.push(format!("{m} ×{}", ratio(x)));
                }
            }
            if let Some(r) = row("missed") {
                let v = |k: usize| r.cells.get(k).copied().flatten().map_or("-".into(), |c| format!("{:.0}", c.value));
                parts.push(format!("missed {} vs {}", v(i), v(0)));
            }
            (format!("{} vs {}", c.names[i], c.names[0]), parts.join(", "))
        })
        .collect()
}

/// A ratio with the digits that matter: ×34, ×5.4, ×0.92.
fn ratio(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// What the figures of `inputs` are, in a sentence's subject.
fn what_is_measured(inputs: &[Input]) -> &'static str {
    let kinds: Vec<crate::result::Kind> = compare::runs(inputs).iter().map(|(_, r)| r.kind).collect();
    if !kinds.is_empty() && kinds.iter().all(|k| *k == crate::result::Kind::Noise) {
        "Figures are noises (the time a busy thread lost in one gap)"
    } else if kinds.contains(&crate::result::Kind::Noise) {
        "Figures are wakeup latencies, and noises for the noise runs,"
    } else {
        "Latencies are wakeup latencies"
    }
}

/// The whole report of `inputs`.
pub fn build(inputs: &[Input]) -> Result<Vec<Block>, String> {
    let mut out = vec![Block::Heading(1, "rtlab latency report".into())];
    let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
    out.push(Block::Text(format!(
        "Written by rtlab {} at {} from {}. {} in µs; percentiles are upper bounds at most one histogram bucket above the true value.",
        env!("CARGO_PKG_VERSION"),
        crate::timefmt::rfc3339(std::time::SystemTime::now()),
        names.join(", "),
        what_is_measured(inputs)
    )));
    let runs = compare::runs(inputs);
    if inputs.len() > 1 && runs.len() > 1 {
        out.push(Block::Heading(2, format!("Comparison (baseline: {})", runs[0].0)));
        // The headline, then the picture, then the tables.
        let mut blocks = comparison_blocks(&compare::compare(&runs), 8);
        let at = blocks.iter().position(|b| !matches!(b, Block::Headline(_))).unwrap_or(blocks.len());
        let tails =
            figure(Kind::Cdf, inputs, Some(By::Input), Of::Latency, "compare-cdf".into(), "Tails side by side")?;
        blocks.insert(at, tails);
        out.extend(blocks);
    }
    for (i, input) in inputs.iter().enumerate().take(MAX_DETAILED) {
        match &input.content {
            Content::Run(r) => run_blocks(input, r, i, &mut out)?,
            Content::Sweep(..) => sweep_blocks(input, i, &mut out)?,
        }
    }
    if inputs.len() > MAX_DETAILED {
        out.push(Block::Heading(2, format!("{} more inputs", inputs.len() - MAX_DETAILED)));
        out.push(Block::Text(format!(
            "A report details at most {MAX_DETAILED} inputs (a fleet's worst first); the other {} are in the comparison above only: {}.",
            inputs.len() - MAX_DETAILED,
            crate::units::clip(&inputs[MAX_DETAILED..].iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", "), 2000)
        )));
    }
    Ok(out)
}

/// Inputs a report details (sections, tables, pictures); more are compared only, said so.
pub const MAX_DETAILED: usize = 50;

/// Threads drawn one curve each; a run with more is drawn with its threads together, said so.
pub const MAX_CURVES: usize = crate::plot::inputs::MAX_TRACKS;
