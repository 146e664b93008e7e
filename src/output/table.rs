//! The summary table (after a run, and from any RunResult) and the live table.

use crate::load::LoadResult;
use crate::measure::stats::LiveSnapshot;
use crate::probes::ThreadStatus;
use crate::result::{RunResult, Stats};
use crate::rt::sched::{Policy, SchedParams};
use crate::units::si;
use crate::units::Unit;

/// A table sized to its content: columns as wide as their widest cell, the first `left`
/// columns aligned left and the rest right, separated by two spaces, no borders (so tables
/// stay easy to read, to grep and to split on whitespace).
pub fn grid(header: &[String], rows: &[Vec<String>], left: usize) -> String {
    use comfy_table::{CellAlignment, ContentArrangement, Table};
    let mut t = Table::new();
    t.load_style(comfy_table::presets::NOTHING).set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(header);
    for r in rows {
        t.add_row(r);
    }
    for (i, c) in t.column_iter_mut().enumerate() {
        c.set_cell_alignment(if i < left { CellAlignment::Left } else { CellAlignment::Right });
        c.set_padding((0, 2));
    }
    let mut out = String::new();
    for line in t.lines() {
        out += line.trim_end();
        out.push('\n');
    }
    out
}

/// [`grid`] narrowed to `width` columns: the columns named in `drop` are left out, in that
/// order, until the table fits (or none is left to drop).
pub fn fitted(header: &[String], rows: &[Vec<String>], left: usize, width: Option<usize>, drop: &[&str]) -> String {
    let (mut header, mut rows) = (header.to_vec(), rows.to_vec());
    let mut text = grid(&header, &rows, left);
    let wide = |t: &str| t.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let Some(width) = width else { return text };
    for name in drop {
        if wide(&text) <= width {
            break;
        }
        if let Some(i) = header.iter().position(|h| h == name) {
            header.remove(i);
            rows.iter_mut().for_each(|r| {
                if i < r.len() {
                    r.remove(i);
                }
            });
            text = grid(&header, &rows, left);
        }
    }
    text
}

fn policy_label(policy: Option<Policy>, priority: Option<u32>) -> String {
    match (policy, priority) {
        (Some(p), Some(prio)) if p.is_realtime_priority() => format!("{p}:{prio}"),
        (Some(p), _) => p.to_string(),
        (None, Some(prio)) => format!("P:{prio}"),
        (None, None) => "-".into(),
    }
}

use crate::report::percentile_cell as pct;

fn opt_count(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn row(label: &str, cpu: &str, policy: &str, s: &Stats, u: Unit) -> Vec<String> {
    vec![
        label.to_string(),
        cpu.to_string(),
        policy.to_string(),
        s.cycles.to_string(),
        opt_count(s.missed),
        u.fmt_opt(s.min_ns),
        s.mean_ns.map_or("-".into(), |m| u.fmt_f(m)),
        pct(s, "50", u),
        pct(s, "99", u),
        pct(s, "99.9", u),
        pct(s, "99.99", u),
        pct(s, "99.999", u),
        u.fmt_opt(s.max_ns),
        s.stdev_ns.map_or("-".into(), |m| u.fmt_f(m)),
    ]
}

/// The final summary of a result: one row per thread, an ALL row, then the verdict (warnings go
/// to stderr: `output::warnings`).
pub fn summary(r: &RunResult, u: Unit) -> String {
    summary_within(r, u, None)
}

/// [`summary`] with its table narrowed to `width` columns (a terminal's): the rarer
/// percentiles, the standard deviation and the median give way first.
pub fn summary_within(r: &RunResult, u: Unit, width: Option<usize>) -> String {
    if r.kind == crate::result::Kind::Noise {
        return super::noise::summary(r, u);
    }
    let l = u.label();
    let mut out = String::new();
    if let Some(src) = &r.source {
        out += &format!(
            "imported from {} ({}{}){}\n",
            src.file,
            src.format,
            src.tool_version.as_ref().map(|v| format!(" {v}")).unwrap_or_default(),
            src.command_line.as_ref().map(|c| format!(": {c}")).unwrap_or_default()
        );
    }
    let header: Vec<String> = [
        "thread",
        "cpu",
        "policy",
        "cycles",
        "missed",
        &format!("min {l}"),
        &format!("avg {l}"),
        "p50",
        "p99",
        "p99.9",
        "p99.99",
        "p99.999",
        &format!("max {l}"),
        "stdev",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let control = r.runtime.as_ref().and_then(|rt| rt.control.as_ref());
    let mut rows: Vec<Vec<String>> = r
        .threads
        .iter()
        .map(|t| {
            let cpu = t.cpu.map_or("-".into(), |c| c.to_string());
            let label = match (&t.watch, control) {
                (Some(w), _) => format!("{}:{}", w.comm, w.tid),
                (None, Some(c)) if c.thread == t.thread => crate::probes::control::NAME.to_string(),
                (None, _) => t.thread.to_string(),
            };
            row(&label, &cpu, &policy_label(t.policy, t.priority), &t.stats, u)
        })
        .collect();
    if r.all.threads > 1 {
        let pol = match (&r.all.policy, r.all.priority) {
            (Some(p), prio) => policy_label(p.parse().ok(), prio).replace('-', p),
            (None, _) => "-".into(),
        };
        rows.push(row("ALL", "", &pol, &r.all.stats, u));
    }
    out += &fitted(&header, &rows, 0, width, &["p99.999", "p99.99", "stdev", "p50", "cycles"]);
    out += &watch(r, u);
    out += &work(r, u);
    out += &rt_app(r, u);
    if let Some(max) = r.all.stats.max_ns {
        let t = r.all.max_at_thread.unwrap_or(0);
        let at = r.all.stats.max_at_cycle.map(|c| format!(" at cycle {c}")).unwrap_or_default();
        let when = r.all.stats.max_at_time.as_ref().map(|w| format!(" ({w})")).unwrap_or_default();
        out += &format!("max {} {l} on thread {t}{at}{when}\n", u.fmt(max));
    }
    out += &uncertainty(r, u);
    out += &crate::result::exceed::describe(&r.all.stats, u).map_or_else(String::new, |d| d + "\n");
    out += &crate::result::predict::describe(&r.all.stats, u).map_or_else(String::new, |d| d + "\n");
    out += &drifts(r);
    out += &control_excess(r, u);
    if r.verdict.threshold_ns.is_some() || r.verdict.max_response_ns.is_some() || r.verdict.max_misses.is_some() {
        out += &r.verdict.message;
        out.push('\n');
    }
    out
}

/// The 95 % intervals of the run's median, p99, p99.9 and maximum (all threads together) on a
/// line; nothing when the result has none (imports).
fn uncertainty(r: &RunResult, u: Unit) -> String {
    crate::result::uncertainty::describe(&r.all.stats, u).map_or_else(String::new, |d| d + "\n")
}

/// An rt-app use case's hand-off and lock-wait table (nothing for other runs).
pub fn rt_app(r: &RunResult, u: Unit) -> String {
    let Some((header, rows)) = crate::report::rt_app_grid(r, u) else { return String::new() };
    "\nhand-off = a release in one task → the woken task running its next event; lock = time blocked in lock\n"
        .to_string()
        + &grid(&header, &rows, 4)
}

/// What the runtime adds to the OS: per percentile, its lateness minus its control's
/// (nothing without `--control`).
fn control_excess(r: &RunResult, u: Unit) -> String {
    let Some(c) = r.runtime.as_ref().and_then(|rt| rt.control.as_ref()) else { return String::new() };
    let figures: Vec<String> = ["50", "99", "99.9", "max"]
        .iter()
        .filter_map(|k| {
            let v = (*c.excess_ns.get(*k)?)?;
            let name = if *k == "max" { "max".to_string() } else { format!("p{k}") };
            Some(format!("{name} {}{}", if v >= 0 { "+" } else { "−" }, u.fmt(v.abs())))
        })
        .collect();
    if figures.is_empty() {
        return String::new();
    }
    format!("the runtime minus its control (the OS thread beside it), {}: {}\n", u.label(), figures.join(", "))
}

/// Each relative sleeper's period drift, in all and per second of schedule (nothing for
/// absolute schedules): OS threads with a relative method, a runtime's relative wait (Ada's
/// `delay`, the Erlang VM's `receive-after`).
fn drifts(r: &RunResult) -> String {
    let relative = r.config.as_ref().is_some_and(|c| !c.method.is_absolute())
        || r.runtime.as_ref().is_some_and(|rt| matches!(rt.method.as_str(), "delay" | "receive-after"));
    let mut out = String::new();
    if relative {
        for t in &r.threads {
            if let (Some(d), Some(p)) = (t.drift_ns, t.interval_ns.filter(|p| *p > 0)) {
                let seconds = (t.stats.cycles as f64 * p as f64 / 1e9).max(1e-9);
                out += &format!(
                    "thread {}: period drift {} µs after {} ({:.1} µs per second; relative sleeps accumulate every cycle's overhead)\n",
                    t.thread,
                    Unit::Micros.fmt(d),
                    crate::units::count(t.stats.cycles, "cycle"),
                    d as f64 / 1e3 / seconds
                );
            }
        }
    }
    out
}

/// The watched threads' table and what was watched (nothing for other runs).
pub fn watch(r: &RunResult, u: Unit) -> String {
    let Some((header, rows)) = crate::report::watch_grid(r, u) else { return String::new() };
    let mut out =
        "\nIRQ = timer interrupt − release; Thr = switch to the thread − release (seen where the kernel traces it); \
                   Usr = return to user space − release (the wakeup latency)\n"
            .to_string();
    out += &grid(&header, &rows, 5);
    if let Some((header, rows, notes)) = crate::report::jobs_grid(r, u) {
        out += "\njobs = release to completion, whatever blocked inside; running + waiting + blocked = response\n";
        out += &grid(&header, &rows, 3);
        for n in notes.iter().take(10) {
            out += n;
            out.push('\n');
        }
    }
    if let Some(w) = &r.watch {
        let ended = match (w.exit_status, w.exit_signal) {
            (Some(code), _) => format!("; it exited with status {code}"),
            (_, Some(sig)) => format!("; it ended on signal {sig}"),
            _ => String::new(),
        };
        let unseen: u64 = r.threads.iter().filter_map(|t| t.watch.as_ref()).map(|w| w.unseen_wakeups).sum();
        let unseen = if unseen > 0 {
            format!("; {} without the kernel's events of it", crate::units::count(unseen, "wakeup"))
        } else {
            String::new()
        };
        let late = if w.late_events > 0 {
            format!(", {} published over 20 ms late, analysed out of place", w.late_events)
        } else {
            String::new()
        };
        out += &format!(
            "watched {}{ended}: {}, {} events through {} ({} lost{late}{unseen}), rtlab's reader used {} of CPU\n",
            w.target,
            crate::units::count(w.threads as u64, "thread"),
            w.events,
            w.backend.split(':').next().unwrap_or("tracefs"),
            w.lost_events,
            crate::units::duration(w.reader_cpu_ns)
        );
    }
    out
}

/// The working tasks' table (nothing when no task works): per task its deadline, response
/// time (min, avg, percentiles, max), run time, smallest slack and deadline misses.
pub fn work(r: &RunResult, u: Unit) -> String {
    let Some((header, rows)) = crate::report::work_grid(r, u) else { return String::new() };
    let mut out = "\nresponse time = completion − release; run = time the work ran; streak = most consecutive misses\n"
        .to_string();
    out += &grid(&header, &rows, 1);
    for t in &r.threads {
        if let (Some(w), Some(c)) = (&t.work, t.work.as_ref().and_then(|w| w.calibration.as_ref())) {
            out += &format!(
                "task {}: {} µs of work = {} units at {:.3} ns each, calibrated on CPU {} (measured {} µs undisturbed)\n",
                t.name.clone().unwrap_or_else(|| t.thread.to_string()),
                Unit::Micros.fmt(w.work_ns.unwrap_or(0)),
                c.units,
                c.ps_per_unit as f64 / 1000.0,
                c.cpu.map_or("-".into(), |c| c.to_string()),
                Unit::Micros.fmt(c.measured_ns)
            );
        }
    }
    out
}

/// The loads' table after a blank line, or nothing without loads.
pub fn loads_if_any(results: &[LoadResult]) -> String {
    if results.is_empty() {
        String::new()
    } else {
        loads(results)
    }
}

/// A sweep: one row per point, its axes and all its threads together.
pub fn sweep(s: &crate::sweep::SweepResult, points: &[crate::import::input::LoadedPoint], u: Unit) -> String {
    let axes: Vec<String> =
        points.first().map(|p| p.point.axes.iter().map(|(k, _)| k.clone()).collect()).unwrap_or_default();
    let l = u.label();
    let mut header = vec!["point".to_string()];
    header.extend(axes.iter().cloned());
    header.extend(
        ["cycles", "missed", &format!("min {l}"), &format!("avg {l}"), "p50", "p99", "p99.9", &format!("max {l}")]
            .iter()
            .map(|h| h.to_string()),
    );
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let st = &p.result.all.stats;
            let mut r = vec![p.point.index.to_string()];
            r.extend(p.point.axes.iter().map(|(_, v)| v.clone()));
            r.extend([
                st.cycles.to_string(),
                opt_count(st.missed),
                u.fmt_opt(st.min_ns),
                st.mean_ns.map_or("-".into(), |m| u.fmt_f(m)),
                pct(st, "50", u),
                pct(st, "99", u),
                pct(st, "99.9", u),
                u.fmt_opt(st.max_ns),
            ]);
            r
        })
        .collect();
    format!(
        "sweep: {} of {} points done ({})\n{}",
        s.points.len(),
        s.planned,
        s.command_line.join(" "),
        grid(&header, &rows, 1 + axes.len())
    )
}

/// The loads' throughput table.
pub fn loads(results: &[LoadResult]) -> String {
    let header: Vec<String> =
        ["load", "workers", "policy", "throughput", "cpu/worker"].iter().map(|h| h.to_string()).collect();
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            vec![
                r.spec.clone(),
                r.workers.to_string(),
                r.policy.clone(),
                format!("{} {}/s", si(r.rate_per_s), r.unit),
                r.utilization.map_or("-".into(), |u| format!("{:.0} %", u * 100.0)),
            ]
        })
        .collect();
    grid(&header, &rows, 1)
}

/// The summary table and the loads' table, after `header`: on stderr when the result itself
/// goes to stdout.
pub fn print_summary(result: &RunResult, unit: Unit, header: &str, to_stderr: bool) {
    use std::io::IsTerminal;
    // A terminal gets a table that fits it; a pipe or a file gets every column.
    let width = (!to_stderr && std::io::stdout().is_terminal()).then(crate::rt::term::columns).flatten();
    let mut text = header.to_string() + &summary_within(result, unit, width);
    text += &loads_if_any(&result.loads);
    let footer = machine_footer(result);
    text += &match width {
        Some(w) if !footer.is_empty() => super::wrap(footer.trim_end(), w, "  "),
        _ => footer,
    };
    if result.kind != crate::result::Kind::Noise {
        text += &super::explain::blocks(result);
    }
    if to_stderr {
        let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
    } else {
        crate::export::print(&text);
    }
}

/// One line on what the machine does to the figures, from the doctor's findings: the
/// preemption model, a hypervisor, and how many checks fail or warn (empty when all is well).
pub fn machine_footer(r: &RunResult) -> String {
    use crate::doctor::Status;
    // Simulated samples owe nothing to this machine.
    let Some(d) = r.environment.doctor.as_ref().filter(|_| !r.simulated) else { return String::new() };
    let mut parts = Vec::new();
    let find = |id: &str| d.checks.iter().find(|c| c.id == id && c.status != Status::Ok && c.status != Status::Unknown);
    if let Some(c) = find("kernel.preempt") {
        let model = ["none", "voluntary"].into_iter().find(|m| c.finding.contains(&format!("preemption {m}")));
        parts.push(match model {
            Some(m) => format!("this kernel runs preempt={m}: expect millisecond spikes"),
            None => format!("{}: expect millisecond spikes", c.finding),
        });
    }
    if find("noise.virtualization").is_some() {
        parts.push("a hypervisor's guest: steal and host preemption show as spikes".to_string());
    }
    if d.counts.fail + d.counts.warn > 0 {
        parts.push(format!(
            "the doctor: {} fail, {} warn on CPU {} (rtlab doctor --cpus {} --brief)",
            d.counts.fail, d.counts.warn, d.cpus, d.cpus
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("machine: {}\n", parts.join("; "))
    }
}

/// The live table: cur, min, avg, max, p99 and missed per thread; its header says how far
/// the run is (`5 s / 10 s` when its length, `total_s`, is known).
pub fn live(threads: &[ThreadStatus], snaps: &[LiveSnapshot], elapsed_s: f64, total_s: Option<f64>, u: Unit) -> String {
    let l = u.label();
    let working = snaps.iter().any(|s| s.work.is_some());
    let mut header: Vec<String> = ["thread", "cpu", "policy", "cycles", "cur", "min", "avg", "p99", "max", "missed"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    let watched = snaps.iter().any(|s| s.work.is_some_and(|w| w.irq.is_some()));
    if watched {
        header.extend(["IRQ p99", "IRQ max"].iter().map(|h| h.to_string()));
    }
    if working {
        header.extend(["resp", "resp p99", "resp max", "misses"].iter().map(|h| h.to_string()));
    }
    let rows: Vec<Vec<String>> = threads
        .iter()
        .zip(snaps)
        .map(|(t, s)| {
            let has = s.cycles > 0;
            let opt = |v: i64| if has { u.fmt(v) } else { "-".into() };
            let SchedParams { policy, priority, .. } = t.sched;
            let mut row = vec![
                // A watched thread is named `comm:tid`.
                match (t.watched_comm(), &t.identity) {
                    (Some(_), Some(identity)) => identity.clone(),
                    _ => t.index.to_string(),
                },
                t.cpu.map_or("-".into(), |c| c.to_string()),
                policy_label(Some(policy), Some(priority)),
                s.cycles.to_string(),
                opt(s.cur),
                opt(s.min),
                if has { u.fmt_f(s.mean) } else { "-".into() },
                u.fmt_opt(s.p99),
                opt(s.max),
                s.missed.to_string(),
            ];
            if watched {
                match s.work.and_then(|w| w.irq) {
                    Some((p99, max)) => row.extend([u.fmt_opt(p99), u.fmt(max)]),
                    None => row.extend(["-", "-"].map(String::from)),
                }
            }
            if working {
                match s.work {
                    Some(w) => row.extend([u.fmt(w.cur), u.fmt_opt(w.p99), u.fmt(w.max), w.misses.to_string()]),
                    None => row.extend(["-", "-", "-", "-"].map(String::from)),
                }
            }
            row
        })
        .collect();
    let of = total_s.map(|t| format!(" / {}", crate::units::duration((t * 1e9) as i64))).unwrap_or_default();
    format!("rtlab: {elapsed_s:.0} s{of}  ({l})\n{}", grid(&header, &rows, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::WorkSnapshot;

    #[test]
    fn the_work_table_names_the_miss_streak_apart_from_the_run_times() {
        let log = include_str!("../../tests/fixtures/rt-app/logs/rt-app-ctl-0.log");
        let r = crate::import::rt_app::parse(std::path::Path::new("rt-app-ctl-0.log"), log).unwrap();
        let out = work(&r, Unit::Micros);
        let mut lines = out.lines().filter(|l| !l.is_empty());
        let (legend, header) = (lines.next().unwrap(), lines.next().unwrap());
        // "run" is the run time (run p50, run max); the longest run of misses is the streak.
        assert!(legend.contains("streak = most consecutive misses"), "{legend}");
        assert_eq!(header.matches("run").count(), 2, "{header}");
        assert!(header.contains("run p50") && header.contains("run max") && header.contains(" streak "), "{header}");
    }

    #[test]
    fn the_live_table_gets_response_columns_when_a_task_works() {
        let status = |index| ThreadStatus {
            index,
            cpu: Some(index),
            sched: SchedParams::simple(Policy::Fifo, 80),
            interval_ns: 1_000_000,
            tid: 1,
            identity: None,
        };
        let snap = LiveSnapshot {
            cycles: 10,
            cur: 5_000,
            min: 1_000,
            max: 9_000,
            missed: 1,
            mean: 3_000.0,
            mean_us_truncated: 3.0,
            p99: Some(9_000),
            work: None,
            stages: None,
        };
        let plain = live(&[status(0)], &[snap], 1.0, Some(10.0), Unit::Micros);
        assert!(!plain.contains("resp"), "{plain}");
        assert!(plain.starts_with("rtlab: 1 s / 10 s "), "the header says how far the run is: {plain}");
        let working = LiveSnapshot {
            work: Some(WorkSnapshot { cur: 305_000, p99: Some(320_000), max: 410_000, misses: 2, irq: None }),
            stages: None,
            ..snap
        };
        let text = live(&[status(0), status(1)], &[working, snap], 1.0, None, Unit::Micros);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].ends_with("resp  resp p99  resp max  misses"), "{text}");
        assert!(lines[2].ends_with("305.0     320.0     410.0       2"), "{text}");
        assert!(lines[3].ends_with("-         -         -       -"), "{text}");
    }

    #[test]
    fn a_watched_thread_is_named_comm_tid_with_its_irq_latency_in_the_live_table() {
        let status = ThreadStatus {
            index: 0,
            cpu: None,
            sched: SchedParams::simple(Policy::Fifo, 80),
            interval_ns: 1_000_000,
            tid: 4711,
            identity: Some("ctl:4711".into()),
        };
        let snap = LiveSnapshot {
            cycles: 10,
            cur: 5_000,
            min: 1_000,
            max: 9_000,
            missed: 0,
            mean: 3_000.0,
            mean_us_truncated: 3.0,
            p99: Some(9_000),
            work: Some(WorkSnapshot {
                cur: 305_000,
                p99: Some(320_000),
                max: 410_000,
                misses: 0,
                irq: Some((Some(2_000), 3_000)),
            }),
            stages: None,
        };
        let text = live(&[status], &[snap], 1.0, None, Unit::Micros);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].contains("missed  IRQ p99  IRQ max   resp"), "{text}");
        assert!(lines[2].starts_with("ctl:4711"), "{text}");
        assert!(lines[2].contains("      2.0      3.0  305.0"), "{text}");
    }
}
