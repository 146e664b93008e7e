//! cyclictest's text outputs: the `-h`/`-H` histogram block (2.4: every row and `# Total:`;
//! 2.10: non-zero rows only) and the `T:` lines of `-q` (or of a captured live display).

use super::{build, ImportError, ThreadFigures, Unit};
use crate::result::build::Stated;
use crate::result::RunResult;
use std::collections::BTreeMap;
use std::path::Path;

struct Ctx<'a> {
    file: &'a Path,
}

impl Ctx<'_> {
    fn err(&self, line: usize, message: impl Into<String>) -> ImportError {
        ImportError { file: self.file.display().to_string(), line: Some(line), message: message.into() }
    }

    fn num<T: std::str::FromStr>(&self, line: usize, s: &str, what: &str) -> Result<T, ImportError> {
        s.parse().map_err(|_| self.err(line, format!("{what} '{s}' is not a number in range")))
    }

    /// The numbers after `# Label:`.
    fn values(&self, line: usize, rest: &str, label: &str) -> Result<Vec<i64>, ImportError> {
        rest.split_whitespace().map(|v| self.num(line, v, label)).collect()
    }
}

/// Parses cyclictest text output; `unit` is µs unless told (`-N` cannot be seen in a histogram).
pub fn parse(path: &Path, text: &str, unit: Option<Unit>) -> Result<RunResult, ImportError> {
    let ctx = Ctx { file: path };
    // A captured live display redraws with escape sequences; keep what follows the last one.
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| match l.rsplit_once("\u{1b}[") {
            Some((_, tail)) => (i + 1, tail.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start_matches('A')),
            None => (i + 1, l),
        })
        .collect();
    if lines.iter().any(|(_, l)| l.trim_end() == "# Histogram") {
        parse_histogram(&ctx, &lines, unit.unwrap_or(Unit::Micros))
    } else if lines.iter().any(|(_, l)| l.starts_with("T:")) {
        parse_t_lines(&ctx, &lines, unit)
    } else {
        Err(ImportError {
            file: path.display().to_string(),
            line: None,
            message:
                "no cyclictest output found: expected a JSON file, a '# Histogram' block (-h/-H) or 'T:' lines (-q)"
                    .into(),
        })
    }
}

/// A histogram's rows (line, bucket, counts) in order, its `# Label:` footer lines, and how many
/// `# Thread N:` overflow lines it has.
type Histogram<'a> = (Vec<(usize, u64, Vec<u64>)>, BTreeMap<&'a str, (usize, Vec<i64>)>, usize);

/// Reads the rows and the footer after `# Histogram`.
fn read_rows<'a>(ctx: &Ctx<'_>, lines: &[(usize, &'a str)]) -> Result<Histogram<'a>, ImportError> {
    let start = lines.iter().position(|(_, l)| l.trim_end() == "# Histogram").unwrap_or(0);
    let mut rows: Vec<(usize, u64, Vec<u64>)> = Vec::new();
    let mut footer: BTreeMap<&str, (usize, Vec<i64>)> = BTreeMap::new();
    let mut overflow_lines = 0;
    for &(no, line) in &lines[start + 1..] {
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let Some((label, values)) = rest.split_once(':') else { continue };
            match label {
                "Total"
                | "Min Latencies"
                | "Avg Latencies"
                | "Max Latencies"
                | "Histogram Overflows"
                | "Missed periods" => {
                    footer.insert(label, (no, ctx.values(no, values, label)?));
                }
                l if l.starts_with("Thread ") && l != "Thread Ids" => overflow_lines += 1,
                _ => {}
            }
            continue;
        }
        if line.starts_with('#') || line.starts_with("T:") {
            continue;
        }
        let mut fields = line.split_whitespace();
        let bucket: u64 = ctx.num(no, fields.next().unwrap_or(""), "histogram bucket")?;
        let counts: Vec<u64> = fields.map(|c| ctx.num(no, c, "histogram count")).collect::<Result<_, _>>()?;
        if counts.is_empty() {
            return Err(ctx.err(no, format!("histogram row '{line}' has a bucket but no counts")));
        }
        if let Some((_, prev, _)) = rows.last() {
            if bucket <= *prev {
                return Err(ctx.err(no, format!("histogram bucket {bucket} does not follow bucket {prev}")));
            }
        }
        rows.push((no, bucket, counts));
    }
    Ok((rows, footer, overflow_lines))
}

/// Each row has a count per thread (and with -H a sum column that adds them up), as many as the
/// first row.
fn check_rows(ctx: &Ctx<'_>, rows: &[(usize, u64, Vec<u64>)], n: usize) -> Result<(), ImportError> {
    let width = rows.first().map_or(n, |(_, _, c)| c.len());
    for (no, _, counts) in rows {
        let sum_column = n > 1 && counts.len() == n + 1;
        if counts.len() != n && !sum_column {
            return Err(ctx.err(*no, format!("histogram row has {} counts for {n} threads", counts.len())));
        }
        if counts.len() != width {
            return Err(
                ctx.err(*no, format!("histogram row has {} counts where the first row has {width}", counts.len()))
            );
        }
        let sum = counts[..n].iter().try_fold(0u64, |a, c| a.checked_add(*c));
        if sum_column && sum != Some(counts[n]) {
            return Err(ctx.err(*no, format!("the -H sum column {} does not add up the threads' counts", counts[n])));
        }
    }
    Ok(())
}

fn parse_histogram(ctx: &Ctx<'_>, lines: &[(usize, &str)], unit: Unit) -> Result<RunResult, ImportError> {
    let (rows, footer, overflow_lines) = read_rows(ctx, lines)?;
    let (min_no, mins) = footer.get("Min Latencies").cloned().ok_or_else(|| {
        ctx.err(lines.last().map_or(1, |l| l.0), "the histogram has no '# Min Latencies:' line; is the file complete?")
    })?;
    let n = mins.len();
    if n == 0 {
        return Err(ctx.err(min_no, "'# Min Latencies:' lists no thread"));
    }
    if n > crate::export::samples::MAX_THREADS {
        return Err(ctx.err(
            min_no,
            format!(
                "'# Min Latencies:' lists {n} threads; cyclictest runs at most {}",
                crate::export::samples::MAX_THREADS
            ),
        ));
    }
    let need = |label: &str| -> Result<Vec<i64>, ImportError> {
        let (no, v) = footer
            .get(label)
            .cloned()
            .ok_or_else(|| ctx.err(min_no, format!("the '# {label}:' line is missing; is the file complete?")))?;
        if v.len() != n && v.len() != n + 1 {
            return Err(ctx.err(no, format!("'# {label}:' has {} values for {n} threads", v.len())));
        }
        Ok(v)
    };
    let avgs = need("Avg Latencies")?;
    let maxes = need("Max Latencies")?;
    let overflows = need("Histogram Overflows")?;
    // -H adds a column with the sum of the threads (only for more than one thread).
    check_rows(ctx, &rows, n)?;
    // 2.4 prints every bucket up to the size, so overflows start right after the last row; 2.10
    // omits zero rows, so the last row only gives a lower bound, which is all that is claimed.
    let range = rows.last().map_or(0, |(_, b, _)| b + 1);
    let mut figures = Vec::with_capacity(n);
    for t in 0..n {
        let hist: BTreeMap<u64, u64> = rows.iter().map(|(_, b, c)| (*b, c[t])).filter(|(_, c)| *c > 0).collect();
        let binned = hist
            .values()
            .try_fold(0u64, |a, c| a.checked_add(*c))
            .ok_or_else(|| ctx.err(min_no, format!("thread {t}'s bucket counts add up past 64 bits")))?;
        let ofl = u64::try_from(overflows[t]).map_err(|_| ctx.err(min_no, "a negative overflow count"))?;
        if let Some((no, totals)) = footer.get("Total") {
            if totals.get(t).is_some_and(|v| *v != binned as i64) {
                return Err(ctx.err(
                    *no,
                    format!("'# Total:' says {} for thread {t} but its rows add up to {binned}", totals[t]),
                ));
            }
        }
        let cycles = binned.checked_add(ofl).ok_or_else(|| ctx.err(min_no, "sample counts overflow"))?;
        figures.push(ThreadFigures {
            cycles,
            min: (cycles > 0).then_some(mins[t]),
            max: (cycles > 0).then_some(maxes[t]),
            avg: (cycles > 0).then_some(avgs[t] as f64),
            missed: footer.get("Missed periods").and_then(|(_, m)| m.get(t)).and_then(|m| u64::try_from(*m).ok()),
            histogram: Some(hist),
            overflows: ofl,
            range,
            ..ThreadFigures::default()
        });
    }
    if overflow_lines > 0 && overflow_lines != n {
        return Err(ctx.err(min_no, format!("{overflow_lines} '# Thread N:' overflow lines for {n} threads")));
    }
    Ok(build(ctx.file, "cyclictest-histogram", unit, Stated::default(), &figures))
}

fn parse_t_lines(ctx: &Ctx<'_>, lines: &[(usize, &str)], unit: Option<Unit>) -> Result<RunResult, ImportError> {
    let mut threads: BTreeMap<usize, (ThreadFigures, bool)> = BTreeMap::new();
    for &(no, line) in lines {
        let line = line.trim_end();
        if !line.starts_with("T:") {
            continue;
        }
        let field = |key: &str, next: &str| -> Result<&str, ImportError> {
            let start =
                line.find(key).ok_or_else(|| ctx.err(no, format!("'{key}' is missing from the T: line")))? + key.len();
            let rest = &line[start..];
            let end = if next.is_empty() { rest.len() } else { rest.find(next).unwrap_or(rest.len()) };
            Ok(&rest[..end])
        };
        let index: usize = ctx.num(no, field("T:", "(")?.trim(), "thread number")?;
        if index >= crate::export::samples::MAX_THREADS {
            return Err(ctx.err(
                no,
                format!("thread {index}: cyclictest runs at most {} threads", crate::export::samples::MAX_THREADS),
            ));
        }
        let prio: u32 = ctx.num(no, field("P:", " I:")?.trim(), "priority")?;
        let interval: i64 = ctx.num(no, field("I:", " C:")?.trim(), "interval")?;
        let cycles: u64 = ctx.num(no, field("C:", " Min:")?.trim(), "cycle count")?;
        let min: i64 = ctx.num(no, field("Min:", " Act:")?.trim(), "Min")?;
        let act = field("Act:", " Avg:")?;
        let avg: i64 = ctx.num(no, field("Avg:", " Max:")?.trim(), "Avg")?;
        let max_s = field("Max:", " SMI:")?;
        let max: i64 = ctx.num(no, max_s.trim(), "Max")?;
        let _: i64 = ctx.num(no, act.trim(), "Act")?;
        // -N prints Act and Avg in 8 columns instead of 5.
        let wide = act.len() >= 8;
        let has = cycles > 0;
        threads.insert(
            index,
            (
                ThreadFigures {
                    cycles,
                    min: has.then_some(min),
                    max: has.then_some(max),
                    avg: has.then_some(avg as f64),
                    priority: Some(prio),
                    interval_us: Some(interval),
                    ..ThreadFigures::default()
                },
                wide,
            ),
        );
    }
    if threads.keys().enumerate().any(|(pos, i)| pos != *i) {
        return Err(ctx.err(1, "the T: lines do not number their threads 0, 1, 2, …"));
    }
    let unit = unit.unwrap_or(if threads.values().all(|(_, wide)| *wide) { Unit::Nanos } else { Unit::Micros });
    let figures: Vec<ThreadFigures> = threads.into_values().map(|(f, _)| f).collect();
    Ok(build(ctx.file, "cyclictest-quiet", unit, Stated::default(), &figures))
}
