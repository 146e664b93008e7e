//! rtla timerlat's layouts from a RunResult with stages (`rtlab timerlat`, `rtlab run
//! --stages`): `top`'s per-CPU table, `hist`'s histograms with their summary rows, and the
//! stop with its analysis. Times are whole µs, as rtla prints them (truncated).

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
}

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
                Ok(Action::Signal { num, pid })
            }
            "trace" => {
                Err(format!("'{text}': trace saves the timerlat tracer's buffer, which this kernel does not have"))
            }
            "continue" => {
                Err(format!("'{text}': continue is not done by rtlab timerlat yet (a threshold ends the run)"))
            }
            _ => Err(format!("'{text}': an action is shell,command=CMD or signal,num=N,pid=PID|parent")),
        }
    }
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
            user: &t.stats,
        })
        .collect()
}

fn us(ns: Option<i64>) -> String {
    ns.map_or("-".into(), |v| (v / 1000).to_string())
}

fn avg(s: Option<&Stats>) -> String {
    s.and_then(|s| s.mean_ns).map_or("-".into(), |m| ((m / 1000.0) as i64).to_string())
}

/// `rtla timerlat top`'s table, at the end of the run.
pub fn top(r: &RunResult) -> String {
    let dur = r.duration_s.unwrap_or(0.0) as u64;
    let mut out = format!("{:>53}\n", "Timer Latency");
    out += &format!(
        "{:>2} {:02}:{:02}:{:02}    |{:>40} |{:>40} |{:>40}\n",
        dur / 86_400,
        dur / 3600 % 24,
        dur / 60 % 60,
        dur % 60,
        "IRQ Timer Latency (us)",
        "Thread Timer Latency (us)",
        "Ret user Timer Latency (us)"
    );
    let cols = format!("{:>9} {:>9} {:>9} {:>9}", "cur", "min", "avg", "max");
    out += &format!("CPU COUNT      | {cols} | {cols} | {cols}\n");
    let block = |s: Option<&Stats>| {
        format!("{:>9} {:>9} {:>9} {:>9}", "-", us(s.and_then(|s| s.min_ns)), avg(s), us(s.and_then(|s| s.max_ns)))
    };
    for c in cpus(r) {
        out += &format!(
            "{:>3} #{:<9} | {} | {} | {}\n",
            c.cpu,
            c.user.cycles,
            block(c.irq),
            block(c.thread),
            block(Some(c.user))
        );
    }
    out
}

/// One column's counts in `layout`'s buckets (µs of width `bucket_us`, `entries` of them) and
/// the count beyond them.
fn binned(s: Option<&Stats>, layout: &HistLayout) -> (Vec<u64>, u64) {
    let mut bins = vec![0u64; layout.entries as usize];
    let mut over = 0;
    for b in s.and_then(|s| s.histogram.as_ref()).map_or(&[][..], |h| &h.buckets[..]) {
        let i = (b.lo_ns / 1000) / layout.bucket_us;
        match bins.get_mut(i as usize) {
            Some(n) => *n += b.count,
            None => over += b.count,
        }
    }
    (bins, over)
}

/// `rtla timerlat hist`'s histogram: `# RTLA timerlat histogram`, the `Index IRQ-NNN Thr-NNN
/// Usr-NNN` rows, the `over:`/`count:`/`min:`/`avg:`/`max:` rows and the ALL columns.
pub fn hist(r: &RunResult, layout: &HistLayout) -> String {
    let cpus = cpus(r);
    let mut cols: Vec<(String, Option<&Stats>)> = Vec::new();
    for c in &cpus {
        if layout.irq {
            cols.push((format!("IRQ-{:03}", c.cpu), c.irq));
        }
        if layout.thread {
            cols.push((format!("Thr-{:03}", c.cpu), c.thread));
        }
        cols.push((format!("Usr-{:03}", c.cpu), Some(c.user)));
    }
    let mut out = String::new();
    if layout.header {
        let dur = r.duration_s.unwrap_or(0.0) as u64;
        out += "# RTLA timerlat histogram\n# Time unit is microseconds (us)\n";
        out +=
            &format!("# Duration: {:>3} {:02}:{:02}:{:02}\n", dur / 86_400, dur / 3600 % 24, dur / 60 % 60, dur % 60);
        let index = if layout.index { format!("{:<6}", "Index") } else { String::new() };
        out += &format!("{index}{}\n", cols.iter().map(|(n, _)| format!("{n:>9}")).collect::<String>());
    }
    let data: Vec<(Vec<u64>, u64)> = cols.iter().map(|(_, s)| binned(*s, layout)).collect();
    for i in 0..layout.entries as usize {
        let row: Vec<u64> = data.iter().map(|(b, _)| b[i]).collect();
        if !layout.zeros && row.iter().all(|n| *n == 0) {
            continue;
        }
        let index = if layout.index { format!("{:<6}", i as u64 * layout.bucket_us) } else { String::new() };
        out += &format!("{index}{}\n", row.iter().map(|n| format!("{n:>9}")).collect::<String>());
    }
    if layout.summary {
        let row = |label: &str, f: &dyn Fn(Option<&Stats>, u64) -> String| {
            let cells: String =
                cols.iter().zip(&data).map(|((_, s), (_, over))| format!("{:>9}", f(*s, *over))).collect();
            format!("{label:<6}{cells}\n")
        };
        out += &row("over:", &|_, over| over.to_string());
        out += &row("count:", &|s, _| s.map_or(0, |s| s.cycles).to_string());
        out += &row("min:", &|s, _| us(s.and_then(|s| s.min_ns)));
        out += &row("avg:", &|s, _| avg(s));
        out += &row("max:", &|s, _| us(s.and_then(|s| s.max_ns)));
        out += &all(&cpus, layout);
    }
    out
}

/// One summary figure of several distributions.
type Summarise = dyn Fn(&[&Stats]) -> String;

/// The ALL columns: every CPU together, per stage.
fn all(cpus: &[Cpu<'_>], layout: &HistLayout) -> String {
    let stages: Vec<(&str, Vec<&Stats>)> = [
        ("IRQ", cpus.iter().filter_map(|c| c.irq).collect::<Vec<_>>(), layout.irq),
        ("Thr", cpus.iter().filter_map(|c| c.thread).collect(), layout.thread),
        ("Usr", cpus.iter().map(|c| c.user).collect(), true),
    ]
    .into_iter()
    .filter(|s| s.2)
    .map(|(n, v, _)| (n, v))
    .collect();
    let mut out = format!("\n{:<6}{}\n", "ALL:", stages.iter().map(|(n, _)| format!("{n:>9}")).collect::<String>());
    let cell = |v: &Vec<&Stats>, f: &dyn Fn(&[&Stats]) -> String| format!("{:>9}", f(v));
    let rows: [(&str, &Summarise); 4] = [
        ("count:", &|v| v.iter().map(|s| s.cycles).sum::<u64>().to_string()),
        ("min:", &|v| us(v.iter().filter_map(|s| s.min_ns).min())),
        ("avg:", &|v| {
            let n: u64 = v.iter().map(|s| s.cycles).sum();
            let sum: f64 = v.iter().map(|s| s.mean_ns.unwrap_or(0.0) * s.cycles as f64).sum();
            if n == 0 {
                "-".into()
            } else {
                ((sum / n as f64 / 1000.0) as i64).to_string()
            }
        }),
        ("max:", &|v| us(v.iter().filter_map(|s| s.max_ns).max())),
    ];
    for (label, f) in rows {
        out += &format!("{label:<6}{}\n", stages.iter().map(|(_, v)| cell(v, f)).collect::<String>());
    }
    out
}

/// The stop, when a threshold stopped the run, in rtla's words, with the analysis of the
/// sample that crossed it (its explanation) unless `aa` is off.
pub fn stop(r: &RunResult, aa: bool) -> String {
    let Some((t, hit)) = r.threads.iter().find_map(|t| Some((t, t.watch.as_ref()?.stop.as_ref()?))) else {
        return String::new();
    };
    let cpu = t.cpu.unwrap_or(t.thread);
    let mut out =
        format!("rtlab timerlat hit stop tracing: CPU {cpu} {} latency {} us\n", hit.stage, hit.latency_ns / 1000);
    if !aa {
        return out;
    }
    out += &format!("## CPU {cpu} hit stop tracing, analyzing it ##\n");
    let Some(e) = r.explanations.iter().filter(|e| e.thread == t.thread).max_by_key(|e| e.latency_ns) else {
        out += "  no explanation: the events of that period were not recorded (--no-aa, or no tracefs)\n";
        return out;
    };
    let total = e.latency_ns.max(1) as f64;
    let line = |what: &str, ns: i64| {
        format!("  {what:<38}{:>9.2} us ({:>6.2} %)\n", ns as f64 / 1000.0, ns as f64 * 100.0 / total)
    };
    use crate::trace::Cause;
    let sum = |f: &dyn Fn(Cause) -> bool| e.parts.iter().filter(|p| f(p.cause)).map(|p| p.ns).sum::<i64>();
    out += &line("IRQ handler delay:", sum(&|c| matches!(c, Cause::ExitFromIdle | Cause::IrqsDisabled)));
    if let Some(f) = e.fired_ns {
        out += &format!("  {:<38}{:>9.2} us\n", "IRQ latency:", f as f64 / 1000.0);
    }
    if let Some(b) = &e.blocking {
        out +=
            &line(&format!("Blocking thread: {}:{} ({})", b.comm, b.pid, b.policy), sum(&|c| c == Cause::BlockingTask));
    }
    for (what, cause) in [
        ("IRQ interference:", &[Cause::Irq, Cause::Vector, Cause::TimerIrq, Cause::Nmi][..]),
        ("Softirq interference:", &[Cause::Softirq][..]),
        ("Thread interference:", &[Cause::OtherTask][..]),
    ] {
        let ns = sum(&|c| cause.contains(&c));
        if ns > 0 {
            out += &line(what, ns);
            for p in e.parts.iter().filter(|p| cause.contains(&p.cause) && !p.name.is_empty()) {
                out += &format!("  {:>38}{:>9.2} us\n", p.name, p.ns as f64 / 1000.0);
            }
        }
    }
    out += &line("Thread latency (to the clock read):", e.latency_ns);
    out
}
