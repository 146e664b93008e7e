//! rtla timerlat's layouts from a RunResult with stages (`rtlab timerlat`, `rtlab run
//! --stages`): `top`'s per-CPU table, `hist`'s histograms with their summary rows, and the
//! stop with its analysis. Times are whole µs, as rtla prints them (truncated).

use crate::measure::stats::{LiveSnapshot, StageFigures};
use crate::probes::ThreadStatus;
use crate::result::{RunResult, Stats, ThreadResult};

/// rtla timerlat's two tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// A table per CPU: count, then cur/min/avg/max of the IRQ, thread and return-to-user latency
    Top,
    /// Histograms per CPU (IRQ-NNN, Thr-NNN, Usr-NNN columns) with their summary rows
    Hist,
}

/// What `hist` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistLayout {
    /// Bucket width (µs).
    pub bucket_us: u64,
    /// Buckets; latencies beyond them are counted in `over:`.
    pub entries: u64,
    /// IRQ columns.
    pub irq: bool,
    /// Thread columns.
    pub thread: bool,
    /// The `#` header lines.
    pub header: bool,
    /// The summary rows.
    pub summary: bool,
    /// The index column.
    pub index: bool,
    /// Rows whose counts are all zero.
    pub zeros: bool,
    /// `-n/--nano`: values and bucket sizes in ns instead of µs.
    pub nano: bool,
    /// The `Usr-NNN` columns (rtla's user-space threads, its default since 6.6).
    pub user: bool,
    /// The `ALL:` block after the summary rows (rtla's newest layout).
    pub all: bool,
}

impl HistLayout {
    /// ns per printed unit: 1 with `--nano`, 1000 otherwise (rtla's output divisor).
    fn divisor(&self) -> i64 {
        divisor(self.nano)
    }
}

/// ns per printed unit: 1 in nanoseconds (`-n`), 1000 in microseconds.
fn divisor(nano: bool) -> i64 {
    if nano {
        1
    } else {
        1000
    }
}

/// The unit's name in rtla's headers.
fn unit(nano: bool) -> &'static str {
    if nano {
        "ns"
    } else {
        "us"
    }
}

/// An rtla action (`--on-threshold`, `--on-end`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `shell,command=CMD`: run CMD with `sh -c`.
    Shell(String),
    /// `signal,num=N,pid=PID|parent`: send signal N to PID (or rtlab's parent).
    Signal {
        /// The signal.
        num: i32,
        /// The process (`None`: the parent).
        pid: Option<i32>,
    },
    /// `trace[,file=F]`: write the last events rtlab's tracker read to F (default
    /// `timerlat_trace.txt`), as `rtlab watch --events` lines.
    Trace(std::path::PathBuf),
    /// `continue`: a threshold does not end the run; the other actions run at each hit.
    Continue,
}

/// Where rtla's `trace` action writes by default.
pub const TRACE_FILE: &str = "timerlat_trace.txt";

impl Action {
    /// Parses rtla's action syntax; the error says what is accepted.
    pub fn parse(text: &str) -> Result<Action, String> {
        let (kind, rest) = text.split_once(',').unwrap_or((text, ""));
        let arg = |key: &str| {
            rest.split(',').find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('='))).map(str::to_string)
        };
        match kind {
            // The command is everything after `command=` (it may hold commas).
            "shell" => rest
                .strip_prefix("command=")
                .filter(|c| !c.trim().is_empty())
                .map(|c| Action::Shell(c.to_string()))
                .ok_or_else(|| format!("'{text}': give shell,command=CMD")),
            "signal" => {
                let num = arg("num")
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| format!("'{text}': give signal,num=N,pid=PID|parent"))?;
                let pid = match arg("pid").as_deref() {
                    Some("parent") => None,
                    Some(p) => Some(p.parse().map_err(|_| format!("'{text}': pid is a number or parent"))?),
                    None => return Err(format!("'{text}': give signal,num=N,pid=PID|parent")),
                };
                // rtla's checks: a signal number kill(2) takes, and a pid that names one process.
                if !(1..=64).contains(&num) {
                    return Err(format!("'{text}': num={num} is not a signal; give 1 to 64 (e.g. num=2)"));
                }
                if pid.is_some_and(|p: i32| p <= 0) {
                    return Err(format!(
                        "'{text}': pid={} would signal a process group or every process; give a process id or parent",
                        pid.unwrap_or(0)
                    ));
                }
                Ok(Action::Signal { num, pid })
            }
            "trace" => match rest {
                "" => Ok(Action::Trace(TRACE_FILE.into())),
                _ => rest
                    .strip_prefix("file=")
                    .filter(|f| !f.is_empty())
                    .map(|f| Action::Trace(f.into()))
                    .ok_or_else(|| format!("'{text}': give trace or trace,file=FILE")),
            },
            "continue" if rest.is_empty() => Ok(Action::Continue),
            _ => Err(format!(
                "'{text}': an action is trace[,file=FILE], shell,command=CMD, signal,num=N,pid=PID|parent or continue"
            )),
        }
    }
}

/// Does `actions`, each in turn, as rtla's `actions_perform` does: the first that fails ends
/// the list (a warning says why), and the others are not done. `trace` says where the trace
/// is (`saved`: the file the run wrote its events to, copied when the action names another);
/// `continue` was done by the thresholds. The failure is returned, not printed: rtla prints
/// nothing between an action's output and its table, so the caller says it after.
pub fn perform(actions: &[Action], saved: Option<&std::path::Path>) -> Result<(), String> {
    use std::io::Write;
    // What was printed comes before what an action prints.
    let _ = std::io::stdout().flush();
    for a in actions {
        let done = match a {
            Action::Shell(cmd) => std::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .status()
                .map_err(|e| e.to_string())
                .and_then(|s| if s.success() { Ok(()) } else { Err(format!("it ended with {s}")) }),
            Action::Signal { num, pid } => {
                let pid = pid.unwrap_or_else(crate::rt::process::parent_id);
                crate::rt::process::signal_process(pid, *num).map_err(|e| e.to_string())
            }
            Action::Trace(path) => save_trace(path, saved),
            Action::Continue => Ok(()),
        };
        if let Err(why) = done {
            return Err(format!("the action {} failed: {why}; the actions after it were not done", describe(a)));
        }
    }
    Ok(())
}

/// The `trace` action: rtla's `  Saving trace to FILE` line, the file being the one the run
/// wrote (`saved`) or a copy of it.
fn save_trace(path: &std::path::Path, saved: Option<&std::path::Path>) -> Result<(), String> {
    use std::io::Write;
    let saved = saved.ok_or("no events were recorded to save")?;
    println!("  Saving trace to {}", crate::units::printable(&path.display().to_string()));
    let _ = std::io::stdout().flush();
    if saved != path {
        let bytes = std::fs::read(saved).map_err(|e| format!("cannot read {}: {e}", saved.display()))?;
        crate::export::write_output(path, &bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// An action as its flag gives it, for a warning.
fn describe(a: &Action) -> String {
    match a {
        Action::Shell(c) => format!("shell,command={}", crate::units::printable(c)),
        Action::Signal { num, pid } => {
            format!("signal,num={num},pid={}", pid.map_or_else(|| "parent".to_string(), |p| p.to_string()))
        }
        Action::Trace(p) => format!("trace,file={}", crate::units::printable(&p.display().to_string())),
        Action::Continue => "continue".into(),
    }
}

/// `--dump-tasks`: rtla's list of the task each CPU runs (`    [%.3d] %24s:%llu`).
pub fn dump_tasks(tasks: &[crate::sysinfo::RunningTask]) -> String {
    let mut out = "\nPrinting CPU tasks:\n".to_string();
    for t in tasks {
        out += &format!("    [{:03}] {:>24}:{}\n", t.cpu, crate::units::printable(&t.comm), t.tid);
    }
    out
}

/// One CPU's three distributions: IRQ, thread, return to user.
struct Cpu<'a> {
    cpu: usize,
    irq: Option<&'a Stats>,
    thread: Option<&'a Stats>,
    user: &'a Stats,
}

fn cpus(r: &RunResult) -> Vec<Cpu<'_>> {
    r.threads
        .iter()
        .map(|t: &ThreadResult| Cpu {
            cpu: t.cpu.unwrap_or(t.thread),
            irq: t.watch.as_ref().and_then(|w| w.irq.as_ref()),
            thread: t.watch.as_ref().and_then(|w| w.thread.as_ref()),
            // The tracker's Usr (the same periods as IRQ and Thr) where the stages were
            // watched; the probe's own samples otherwise.
            user: t.watch.as_ref().and_then(|w| w.user.as_ref()).unwrap_or(&t.stats),
        })
        .collect()
}

/// One stage's columns in `top` (ns, and the mean in µs as rtla computes it; `None`: none).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cells {
    /// Samples.
    pub count: u64,
    /// The latest sample (ns).
    pub cur: Option<i64>,
    /// Smallest (ns).
    pub min: Option<i64>,
    /// Σ⌊µs⌋ / count (at the end; while the run goes on, the exact mean in µs).
    pub avg_us: Option<f64>,
    /// The exact mean (ns): what rtla's average is in nanoseconds (`-n`).
    pub mean_ns: Option<f64>,
    /// Largest (ns).
    pub max: Option<i64>,
}

/// rtla's empty cell.
const NO_VALUE: &str = "        -";

impl Cells {
    fn of_stats(s: Option<&Stats>, cur: Option<i64>) -> Cells {
        Cells {
            count: s.map_or(0, |s| s.cycles),
            cur,
            min: s.and_then(|s| s.min_ns),
            avg_us: s.and_then(|s| s.mean_us_truncated.or(s.mean_ns.map(|m| m / 1000.0))),
            mean_ns: s.and_then(|s| s.mean_ns),
            max: s.and_then(|s| s.max_ns),
        }
    }

    fn of_stage(f: Option<StageFigures>) -> Cells {
        f.map_or_else(Cells::default, |f| Cells {
            count: f.cycles,
            cur: Some(f.cur),
            min: Some(f.min),
            avg_us: Some(f.mean / 1000.0),
            mean_ns: Some(f.mean),
            max: Some(f.max),
        })
    }

    /// `%9llu` of a value in ns as rtla prints it (µs, truncated; ns with `nano`).
    fn value(ns: Option<i64>, nano: bool) -> String {
        ns.map_or_else(|| NO_VALUE.into(), |v| format!("{:9}", v.div_euclid(divisor(nano))))
    }

    /// The average as rtla prints it: Σ⌊µs⌋ / count, or Σns / count with `nano`.
    fn avg(&self, nano: bool) -> String {
        let avg = if nano { self.mean_ns } else { self.avg_us };
        avg.map_or_else(|| NO_VALUE.into(), |m| format!("{:9}", m.floor() as i64))
    }

    /// cur, min, avg and max (`%9llu ` each, the last without its space); four `-` without samples.
    fn text(&self, nano: bool) -> String {
        if self.count == 0 {
            return [NO_VALUE; 4].join(" ");
        }
        let v = |x| Cells::value(x, nano);
        format!("{} {} {} {}", v(self.cur), v(self.min), self.avg(nano), v(self.max))
    }

    /// The ALL row's cells: ten spaces where `cur` would be, then min, avg and max.
    fn all_text(&self, nano: bool) -> String {
        if self.count == 0 {
            return format!("          {}", [NO_VALUE; 3].join(" "));
        }
        format!("          {} {} {}", Cells::value(self.min, nano), self.avg(nano), Cells::value(self.max, nano))
    }

    /// Every CPU's cells of one stage together: counts and sums added (each sum is whole µs at
    /// the end), extremes of extremes.
    fn merged(cells: &[Cells]) -> Cells {
        let count: u64 = cells.iter().map(|c| c.count).sum();
        let sum: f64 = cells.iter().filter_map(|c| c.avg_us.map(|a| a * c.count as f64)).sum();
        let sum_ns: f64 = cells.iter().filter_map(|c| c.mean_ns.map(|a| a * c.count as f64)).sum();
        Cells {
            count,
            cur: None,
            min: cells.iter().filter_map(|c| c.min).min(),
            avg_us: (count > 0).then(|| sum.round() / count as f64),
            mean_ns: (count > 0).then(|| sum_ns.round() / count as f64),
            max: cells.iter().filter_map(|c| c.max).max(),
        }
    }
}

/// One row of `top`: a CPU's count and its three stages.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TopRow {
    /// The CPU (the thread's index when it is not pinned).
    pub cpu: usize,
    /// Wakeups measured.
    pub count: u64,
    /// Expiry → timer interrupt.
    pub irq: Cells,
    /// Expiry → switch to the thread.
    pub thread: Cells,
    /// Expiry → its return to user space.
    pub user: Cells,
}

/// `top`'s rows while the run goes on, from the live figures.
pub fn live_rows(threads: &[ThreadStatus], live: &[LiveSnapshot]) -> Vec<TopRow> {
    threads
        .iter()
        .zip(live)
        .map(|(t, l)| {
            let stages = l.stages;
            let user = stages.and_then(|s| s.user).or_else(|| StageFigures::from_snapshot(l));
            TopRow {
                cpu: t.cpu.unwrap_or(t.index),
                count: l.cycles,
                irq: Cells::of_stage(stages.and_then(|s| s.irq)),
                thread: Cells::of_stage(stages.and_then(|s| s.thread)),
                user: Cells::of_stage(user),
            }
        })
        .collect()
}

/// `top`'s rows at the end: the result's figures, with each stage's latest sample from `last`
/// (the final live figures, slot by slot; `-` where there are none).
pub fn final_rows(r: &RunResult, last: &[LiveSnapshot]) -> Vec<TopRow> {
    cpus(r)
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let l = last.get(i);
            let stage = |f: fn(&crate::measure::stats::StagesSnapshot) -> Option<StageFigures>| {
                l.and_then(|l| l.stages.as_ref()).and_then(f).map(|f| f.cur)
            };
            let own_cur = l.filter(|l| l.cycles > 0).map(|l| l.cur);
            TopRow {
                cpu: c.cpu,
                count: c.user.cycles,
                irq: Cells::of_stats(c.irq, stage(|s| s.irq)),
                thread: Cells::of_stats(c.thread, stage(|s| s.thread)),
                user: Cells::of_stats(Some(c.user), stage(|s| s.user).or(own_cur)),
            }
        })
        .collect()
}

/// `rtla timerlat top`'s table after `elapsed_s` seconds, byte for byte (`timerlat_top.c`, with
/// the Ret user columns): the header, a row per CPU that has samples (`%3d #%-9llu |` and the
/// IRQ count, as rtla's), the dashed line and the ALL row (`ALL #%-6llu e%d |`: the IRQ count
/// over 10^e so that it fits, blank `cur` cells).
/// With `nano`, every value is in ns and the headers say so (rtla's `-n`).
pub fn top(elapsed_s: u64, rows: &[TopRow], nano: bool) -> String {
    let d = elapsed_s;
    let mut out = format!("{:37}Timer Latency{:46}{:41}\n", "", "", "");
    let duration = format!("{:3} {:02}:{:02}:{:02}", d / 86_400, d / 3600 % 24, d / 60 % 60, d % 60);
    let u = unit(nano);
    out += &format!(
        "{duration:<6}   |          IRQ Timer Latency ({u})        |         Thread Timer Latency ({u})      |    Ret user Timer Latency ({u})\n"
    );
    let cols = "     cur       min       avg       max";
    out += &format!("CPU COUNT      | {cols} | {cols} | {cols}\n");
    let shown: Vec<&TopRow> = rows.iter().filter(|r| r.irq.count > 0 || r.thread.count > 0).collect();
    for c in &shown {
        let (irq, thread, user) = (c.irq.text(nano), c.thread.text(nano), c.user.text(nano));
        out += &format!("{:3} #{:<9} |{irq} |{thread} |{user}\n", c.cpu, c.irq.count);
    }
    let all = |f: fn(&TopRow) -> Cells| Cells::merged(&shown.iter().map(|r| f(r)).collect::<Vec<_>>());
    let (irq, thread, user) = (all(|r| r.irq), all(|r| r.thread), all(|r| r.user));
    if irq.count == 0 && thread.count == 0 {
        return out;
    }
    let split = "-".repeat(40);
    out += &format!("{}|{}|{}-|{}\n", &split[..15], split, &split[..39], &split[..39]);
    let (mut count, mut e) = (irq.count, 0);
    while count > 999_999 {
        e += 1;
        count /= 10;
    }
    let (irq, thread, user) = (irq.all_text(nano), thread.all_text(nano), user.all_text(nano));
    out += &format!("ALL #{count:<6} e{e} |{irq} |{thread} |{user}\n");
    out
}

/// One column's counts in `layout`'s buckets (µs of width `bucket_us`, `entries` of them) and
/// the count beyond them. rtla bins a sample by its latency truncated to µs over the bucket
/// size; the run's histogram has buckets of that size over the whole table (the stand-in sets
/// its layout so), so every bucket below the table's end is exactly one of rtla's.
fn binned(s: Option<&Stats>, layout: &HistLayout) -> (Vec<u64>, u64) {
    let mut bins = vec![0u64; layout.entries as usize];
    let mut over = 0;
    for b in s.and_then(|s| s.histogram.as_ref()).map_or(&[][..], |h| &h.buckets[..]) {
        let i = (b.lo_ns / layout.divisor() as u64) / layout.bucket_us;
        match bins.get_mut(i as usize) {
            Some(n) => *n += b.count,
            None => over += b.count,
        }
    }
    (bins, over)
}

/// rtla's summary figures of one column: count, and min, avg, max in µs (each sample truncated
/// to µs: the average is Σ⌊latency⌋ / count, integer), `-` without samples.
fn figures(s: Option<&Stats>, nano: bool) -> [String; 4] {
    let s = s.map(|s| Column {
        count: s.cycles,
        min_ns: s.min_ns,
        mean: if nano { s.mean_ns } else { s.mean_us_truncated },
        max_ns: s.max_ns,
    });
    figures_of(s.unwrap_or_default(), nano)
}

/// What rtla prints of a column: its count, extremes (ns) and its mean in the printed unit
/// (Σ⌊µs⌋ / count, or Σns / count in ns).
#[derive(Clone, Copy, Debug, Default)]
struct Column {
    count: u64,
    min_ns: Option<i64>,
    mean: Option<f64>,
    max_ns: Option<i64>,
}

fn figures_of(c: Column, nano: bool) -> [String; 4] {
    let count = c.count;
    let cell = |v: Option<i64>| match (count, v) {
        (0, _) | (_, None) => format!("{:>9} ", '-'),
        (_, Some(v)) => format!("{v:>9} "),
    };
    let floor = |ns: Option<i64>| ns.map(|v| v.div_euclid(divisor(nano)));
    [format!("{count:>9} "), cell(floor(c.min_ns)), cell(c.mean.map(|m| m.floor() as i64)), cell(floor(c.max_ns))]
}

/// `rtla timerlat hist`'s output, byte for byte (`timerlat_hist.c`): the `#` header, `Index`
/// and `   IRQ-NNN   Thr-NNN   Usr-NNN` columns of CPUs that have samples, one `%-6d` index and
/// `%9d ` cell per bucket (rows of zeros left out unless `--with-zeros`), `over:`, then the
/// `count:`/`min:`/`avg:`/`max:` rows and the ALL block.
pub fn hist(r: &RunResult, layout: &HistLayout) -> String {
    let cpus: Vec<Cpu<'_>> = cpus(r)
        .into_iter()
        .filter(|c| c.irq.is_some_and(|s| s.cycles > 0) || c.thread.is_some_and(|s| s.cycles > 0))
        .collect();
    let mut cols: Vec<(String, Option<&Stats>)> = Vec::new();
    for c in &cpus {
        if layout.irq {
            cols.push((format!("   IRQ-{:03}", c.cpu), c.irq));
        }
        if layout.thread {
            cols.push((format!("   Thr-{:03}", c.cpu), c.thread));
        }
        if layout.user {
            cols.push((format!("   Usr-{:03}", c.cpu), Some(c.user)));
        }
    }
    let label = |l: &str| if layout.index { l.to_string() } else { String::new() };
    let mut out = String::new();
    if layout.header {
        let dur = r.duration_s.unwrap_or(0.0) as u64;
        out += "# RTLA timerlat histogram\n";
        out += if layout.nano { "# Time unit is nanoseconds (ns)\n" } else { "# Time unit is microseconds (us)\n" };
        out +=
            &format!("# Duration: {:>3} {:02}:{:02}:{:02}\n", dur / 86_400, dur / 3600 % 24, dur / 60 % 60, dur % 60);
        out += &format!("{}{}\n", label("Index"), cols.iter().map(|(n, _)| n.as_str()).collect::<String>());
    }
    let data: Vec<(Vec<u64>, u64)> = cols.iter().map(|(_, s)| binned(*s, layout)).collect();
    for i in 0..layout.entries as usize {
        let row: Vec<u64> = data.iter().map(|(b, _)| b[i]).collect();
        if !layout.zeros && row.iter().all(|n| *n == 0) {
            continue;
        }
        let index = if layout.index { format!("{:<6}", i as u64 * layout.bucket_us) } else { String::new() };
        out += &format!("{index}{}\n", row.iter().map(|n| format!("{n:>9} ")).collect::<String>());
    }
    out += &format!("{}{}\n", label("over: "), data.iter().map(|(_, o)| format!("{o:>9} ")).collect::<String>());
    if layout.summary {
        let per_col: Vec<[String; 4]> = cols.iter().map(|(_, s)| figures(*s, layout.nano)).collect();
        for (k, name) in ["count:", "min:  ", "avg:  ", "max:  "].iter().enumerate() {
            out += &format!("{}{}\n", label(name), per_col.iter().map(|f| f[k].as_str()).collect::<String>());
        }
        if layout.all {
            out += &all(&cpus, layout);
        }
    }
    out
}

/// The ALL block: every CPU together, per stage (`ALL:  ` then `      IRQ       Thr       Usr`),
/// with rtla's arithmetic over the CPUs' sums.
fn all(cpus: &[Cpu<'_>], layout: &HistLayout) -> String {
    let label = |l: &str| if layout.index { l.to_string() } else { String::new() };
    let stages: Vec<Vec<&Stats>> = [
        (layout.irq, cpus.iter().filter_map(|c| c.irq).collect::<Vec<_>>()),
        (layout.thread, cpus.iter().filter_map(|c| c.thread).collect()),
        (layout.user, cpus.iter().map(|c| c.user).collect()),
    ]
    .into_iter()
    .filter_map(|(shown, v)| shown.then_some(v))
    .collect();
    let mut out = label("ALL:  ");
    if layout.irq {
        out += "      IRQ";
    }
    if layout.thread {
        out += "       Thr";
    }
    if layout.user {
        out += "       Usr";
    }
    out += "\n";
    let merged: Vec<[String; 4]> = stages
        .iter()
        .map(|v| {
            let count: u64 = v.iter().map(|s| s.cycles).sum();
            let mean = |s: &Stats| if layout.nano { s.mean_ns } else { s.mean_us_truncated };
            let sum: f64 = v.iter().map(|s| mean(s).unwrap_or(0.0) * s.cycles as f64).sum();
            let column = Column {
                count,
                min_ns: v.iter().filter_map(|s| s.min_ns).min(),
                max_ns: v.iter().filter_map(|s| s.max_ns).max(),
                // The sums are whole µs (or ns): rounding the float back gives them exactly.
                mean: (count > 0).then(|| sum.round() / count as f64),
            };
            figures_of(column, layout.nano)
        })
        .collect();
    for (k, name) in ["count:", "min:  ", "avg:  ", "max:  "].iter().enumerate() {
        out += &format!("{}{}\n", label(name), merged.iter().map(|f| f[k].as_str()).collect::<String>());
    }
    out
}

/// The stop, when a threshold stopped the run, in rtla's words (`rtla timerlat hit stop
/// tracing`, whatever name rtlab runs under: rtla's readers look for it), with rtla's
/// auto-analysis of the sample that crossed it (its explanation) unless `aa` is off.
pub fn stop(r: &RunResult, aa: bool) -> String {
    let Some((t, hit)) = r.threads.iter().find_map(|t| Some((t, t.watch.as_ref()?.stop.as_ref()?))) else {
        return String::new();
    };
    let mut out = "rtla timerlat hit stop tracing\n".to_string();
    if !aa {
        return out;
    }
    let cpu = t.cpu.unwrap_or(t.thread);
    out += &format!("## CPU {cpu} hit stop tracing, analyzing it ##\n");
    // The explained wakeup of the period that crossed (its cycle is its release over the period).
    let period = t.interval_ns.unwrap_or(1).max(1);
    match r
        .explanations
        .iter()
        .filter(|e| e.thread == t.thread)
        .min_by_key(|e| (e.cycle as i64 * period - hit.at_ns).abs())
    {
        Some(e) => out += &analysis(e, hit.stage == "IRQ"),
        None => {
            out += "------------------------------------------------------------------------\n";
            out += &format!(
                "  {} latency:\t\t\t\t\t{:9.2} us (100%)\n",
                if hit.stage == "IRQ" { "IRQ" } else { "Thread" },
                hit.latency_ns as f64 / 1000.0
            );
        }
    }
    out
}

/// rtla's auto-analysis lines (`timerlat_aa.c`'s format strings, tabs and widths) from an
/// explanation: the IRQ handler delay and latency, the timer IRQ's duration, the blocking
/// thread (its name on the next line), the interference blocks with one line per source, the
/// dashed line and the total (100 %). The stack rtla prints needs the kernel's tracer: there
/// is none here, and none is invented.
fn analysis(e: &crate::trace::Explanation, irq: bool) -> String {
    use crate::trace::Cause;
    let total = if irq { e.fired_ns.unwrap_or(e.latency_ns) } else { e.latency_ns };
    let us = |ns: i64| ns as f64 / 1000.0;
    let per = |ns: i64| if total > 0 { ns as f64 * 100.0 / total as f64 } else { 0.0 };
    let sum = |causes: &[Cause]| e.parts.iter().filter(|p| causes.contains(&p.cause)).map(|p| p.ns).sum::<i64>();
    let idle = sum(&[Cause::ExitFromIdle]);
    let delay = idle + sum(&[Cause::IrqsDisabled]);
    let mut out = format!(
        "  IRQ handler delay:\t\t{:>16}\t{:9.2} us ({:.2} %)\n",
        if us(idle) > 10.0 { "(exit from idle)" } else { "" },
        us(delay),
        per(delay)
    );
    out += &format!("  IRQ latency:\t\t\t\t\t\t{:9.2} us\n", us(e.fired_ns.unwrap_or(delay)));
    let (comm, pid) = e.blocking.as_ref().map_or(("<...>".to_string(), 0), |b| (b.comm.clone(), b.pid));
    if irq {
        out += &format!("  Blocking thread:\n\t{comm:>24}:{pid:<9}\n");
    } else {
        let timer = sum(&[Cause::TimerIrq]);
        out += &format!("  Timerlat IRQ duration:\t\t\t\t{:9.2} us ({:.2} %)\n", us(timer), per(timer));
        let blocking = sum(&[Cause::BlockingTask]);
        out += &format!("  Blocking thread:\t\t\t\t\t{:9.2} us ({:.2} %)\n", us(blocking), per(blocking));
        out += &format!("\t{comm:>24}:{pid:<9}\t\t{:9.2} us\n", us(blocking));
    }
    let nmi = sum(&[Cause::Nmi]);
    if nmi > 0 {
        out += &format!("  NMI interference\t\t\t\t\t{:9.2} us ({:.2} %)\n", us(nmi), per(nmi));
    }
    if !irq {
        for (what, causes, gap) in [
            ("IRQ interference", &[Cause::Irq, Cause::Vector][..], "\t\t\t"),
            ("Softirq interference", &[Cause::Softirq][..], "\t\t\t"),
            ("Thread interference", &[Cause::OtherTask][..], "\t\t\t"),
        ] {
            let ns = sum(causes);
            if ns > 0 {
                out += &format!("  {what}\t\t\t\t\t{:9.2} us ({:.2} %)\n", us(ns), per(ns));
                for p in e.parts.iter().filter(|p| causes.contains(&p.cause)) {
                    let (name, id) = p.name.rsplit_once(':').unwrap_or((p.name.as_str(), ""));
                    out += &format!("\t{name:>24}:{id:<3}{gap}{:9.2} us\n", us(p.ns));
                }
            }
        }
    }
    out += "------------------------------------------------------------------------\n";
    out += &format!("  {} latency:\t\t\t\t\t{:9.2} us (100%)\n", if irq { "IRQ" } else { "Thread" }, us(total));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stage statistics the watch records for `samples` (ns), in a run layout of buckets of
    /// `bucket_us` over `range_us` — as `rtlab timerlat` sets it.
    fn stage(samples: &[i64], bucket_us: u64, range_us: u64) -> Stats {
        let layout = crate::measure::histogram::Layout::new(bucket_us * 1000, range_us * 1000).unwrap();
        let live = crate::measure::stats::Live::new(layout);
        let mut rec = crate::measure::stats::Recorder::new(&live, None);
        rec.started(0);
        for (i, v) in samples.iter().enumerate() {
            rec.record(*v, i as i64 * 1_000_000, 0);
            rec.record_cyclictest_us(v.div_euclid(1000));
        }
        crate::result::build::stats_of(&rec.finish(), std::time::UNIX_EPOCH)
    }

    /// rtla's arithmetic, transcribed from `timerlat_hist.c` (`timerlat_hist_update`,
    /// `format_summary_value`): the latency in µs is the ns value divided by 1000 (integers),
    /// its bucket that over the bucket size (beyond the entries: the overflow cell), the sum of
    /// those µs over the count is the average, and a column prints `%9llu ` (or `%9c ` '-').
    fn rtla_column(samples: &[i64], bucket: u64, entries: usize) -> (Vec<u64>, u64, [String; 4]) {
        let mut hist = vec![0u64; entries + 1];
        let (mut min, mut max, mut sum) = (u64::MAX, 0u64, 0u64);
        for ns in samples {
            let latency = *ns as u64 / 1000;
            let b = (latency / bucket) as usize;
            hist[b.min(entries)] += 1;
            min = min.min(latency);
            max = max.max(latency);
            sum += latency;
        }
        let n = samples.len() as u64;
        let over = hist.pop().unwrap();
        (hist, over, [format!("{n:9} "), format!("{min:9} "), format!("{:9} ", sum / n), format!("{max:9} ")])
    }

    #[test]
    fn hist_prints_what_rtlas_own_arithmetic_computes_from_the_same_samples() {
        // Whole and fractional µs, a bucket's edges, samples beyond 10 ms and beyond the table.
        let irq: Vec<i64> = vec![999, 1_000, 1_999, 4_999, 5_000, 99_999, 100_000, 12_345_678, 15_000_000, 19_999_999];
        let thr: Vec<i64> = irq.iter().map(|v| v + 777).collect();
        let usr: Vec<i64> = thr.iter().map(|v| v + 1_501).chain([25_000_000]).collect();
        let (bucket, entries) = (100u64, 200usize);
        // rtlab timerlat's layout for -b 100 -E 200: buckets of 100 µs over 20 ms.
        let range = (entries as u64 * bucket).max(10_000).div_ceil(bucket) * bucket;
        let mut r: RunResult = serde_json::from_str(include_str!("../../tests/fixtures/minimal-run.json")).unwrap();
        r.threads.truncate(1);
        r.threads[0].cpu = Some(3);
        r.threads[0].watch = Some(crate::result::watch::WatchThread {
            irq: Some(stage(&irq, bucket, range)),
            thread: Some(stage(&thr, bucket, range)),
            user: Some(stage(&usr, bucket, range)),
            ..Default::default()
        });
        let layout = HistLayout {
            bucket_us: bucket,
            entries: entries as u64,
            irq: true,
            thread: true,
            header: false,
            summary: true,
            index: true,
            zeros: false,
            nano: false,
            user: true,
            all: true,
        };
        let printed = hist(&r, &layout);
        let cols = [
            rtla_column(&irq, bucket, entries),
            rtla_column(&thr, bucket, entries),
            rtla_column(&usr, bucket, entries),
        ];
        let mut want = table(&cols, bucket, entries);
        want += "ALL:        IRQ       Thr       Usr\n";
        for (k, label) in ["count:", "min:  ", "avg:  ", "max:  "].iter().enumerate() {
            want += &format!("{label}{}\n", cols.iter().map(|c| c.2[k].as_str()).collect::<String>());
        }
        assert_eq!(printed, want);
        // rtla 6.1's layout (kernel threads; what Linaro's parse_rtla.py reads): IRQ and Thr
        // pairs, the same figures, no Usr column and no ALL block.
        let old = HistLayout { user: false, all: false, ..layout };
        assert_eq!(hist(&r, &old), table(&cols[..2], bucket, entries));
    }

    /// The buckets rtla prints for `cols` (rows of zeros left out), `over:` and the summary rows.
    fn table(cols: &[(Vec<u64>, u64, [String; 4])], bucket: u64, entries: usize) -> String {
        let mut want = String::new();
        for b in 0..entries {
            if cols.iter().all(|c| c.0[b] == 0) {
                continue;
            }
            want += &format!("{:<6}", b as u64 * bucket);
            want += &cols.iter().map(|c| format!("{:9} ", c.0[b])).collect::<String>();
            want += "\n";
        }
        want += &format!("over: {}\n", cols.iter().map(|c| format!("{:9} ", c.1)).collect::<String>());
        for (k, label) in ["count:", "min:  ", "avg:  ", "max:  "].iter().enumerate() {
            want += &format!("{label}{}\n", cols.iter().map(|c| c.2[k].as_str()).collect::<String>());
        }
        want
    }

    fn cells(count: u64, cur: i64, min: i64, avg_us: f64, max: i64) -> Cells {
        Cells { count, cur: Some(cur), min: Some(min), avg_us: Some(avg_us), mean_ns: None, max: Some(max) }
    }

    #[test]
    fn top_is_rtlas_table_byte_for_byte_with_the_all_row_over_every_cpu() {
        let rows = [
            TopRow {
                cpu: 0,
                count: 1000,
                irq: cells(1000, 3_400, 1_999, 2.0, 9_000),
                thread: cells(1000, 5_000, 2_000, 4.0, 20_000),
                user: cells(1000, 6_000, 3_000, 5.0, 21_000),
            },
            TopRow {
                cpu: 1,
                count: 3000,
                irq: cells(3000, 4_000, 2_000, 6.0, 7_000),
                thread: cells(3000, 8_000, 3_000, 8.0, 30_000),
                user: cells(3000, 9_000, 4_000, 9.0, 31_000),
            },
            // A CPU without samples is left out, as rtla leaves it out.
            TopRow { cpu: 2, ..Default::default() },
        ];
        let want = [
            "                                     Timer Latency                                                                                       ",
            "  0 00:01:15   |          IRQ Timer Latency (us)        |         Thread Timer Latency (us)      |    Ret user Timer Latency (us)",
            "CPU COUNT      |      cur       min       avg       max |      cur       min       avg       max |      cur       min       avg       max",
            "  0 #1000      |        3         1         2         9 |        5         2         4        20 |        6         3         5        21",
            "  1 #3000      |        4         2         6         7 |        8         3         8        30 |        9         4         9        31",
            // rtla's "%.*s|%.*s|%.*s" (15, 40, 39) then "-|%.*s" (39).
            "---------------|----------------------------------------|----------------------------------------|---------------------------------------",
            // IRQ: (1000·2 + 3000·6) / 4000 = 5 µs; thread: (1000·4 + 3000·8) / 4000 = 7 µs.
            "ALL #4000   e0 |                  1         5         9 |                  2         7        30 |                  3         8        31",
        ];
        assert_eq!(top(75, &rows, false), want.join("\n") + "\n");
        // Past 999 999 wakeups the count is scaled by tens, as rtla's `e` says.
        let many = TopRow { cpu: 0, count: 12_345_678, irq: cells(12_345_678, 1_000, 1_000, 1.0, 1_000), ..rows[0] };
        let all = top(1, &[many], false).lines().last().unwrap().to_string();
        assert!(all.starts_with("ALL #123456 e2 |"), "{all}");
    }

    #[test]
    fn with_nano_top_prints_nanoseconds_and_says_ns_in_its_headers() {
        // rtla's -n: output_divisor 1, so each value is the ns value and the average Σns / n.
        let mut c = cells(2, 3_456, 1_999, 2.0, 9_001);
        c.mean_ns = Some(2_500.5);
        let row = TopRow { cpu: 0, count: 2, irq: c, thread: c, user: c };
        let text = top(1, &[row], true);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].contains("IRQ Timer Latency (ns)") && lines[1].contains("Ret user Timer Latency (ns)"));
        assert_eq!(
            lines[3],
            "  0 #2         |     3456      1999      2500      9001 |     3456      1999      2500      9001 |     3456      1999      2500      9001"
        );
        assert!(!top(1, &[row], false).contains("(ns)"));
    }

    #[test]
    fn actions_stop_at_the_first_that_fails_and_trace_saves_the_runs_file_under_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let (mark, saved, copy) = (dir.path().join("mark"), dir.path().join("run.txt"), dir.path().join("copy.txt"));
        let shell = |c: String| Action::Shell(c);
        let failing = [shell("false".into()), shell(format!("touch {}", mark.display()))];
        assert!(perform(&failing, None).unwrap_err().contains("shell,command=false"));
        assert!(!mark.exists(), "rtla's actions_perform stops at the first failure");
        assert!(perform(&[Action::Trace(copy.clone())], None).is_err(), "no recorded events: the trace action fails");
        std::fs::write(&saved, "events\n").unwrap();
        perform(&[Action::Trace(copy.clone()), shell(format!("touch {}", mark.display()))], Some(&saved)).unwrap();
        assert_eq!(std::fs::read_to_string(&copy).unwrap(), "events\n");
        assert!(mark.exists());
    }

    #[test]
    fn rtlas_actions_parse_with_their_defaults_and_a_bad_one_names_every_form() {
        assert_eq!(Action::parse("trace").unwrap(), Action::Trace(TRACE_FILE.into()));
        assert_eq!(Action::parse("trace,file=t.txt").unwrap(), Action::Trace("t.txt".into()));
        assert_eq!(Action::parse("continue").unwrap(), Action::Continue);
        assert_eq!(Action::parse("shell,command=a,b").unwrap(), Action::Shell("a,b".into()));
        assert_eq!(Action::parse("signal,num=2,pid=parent").unwrap(), Action::Signal { num: 2, pid: None });
        let e = Action::parse("reboot").unwrap_err();
        assert!(["trace", "shell", "signal", "continue"].iter().all(|a| e.contains(a)), "{e}");
    }
}
