//! Import of cyclictest's outputs into RunResult: `--json` (2.4 and 2.10), the `-h/-H`
//! histogram text (2.4 dense with `# Total:`, 2.10 sparse) and the `-q` `T:` lines. Min, max,
//! average and counts are kept exactly as cyclictest printed them; percentiles come from the
//! histogram, and one that falls among the overflows is only bounded ("above range").

pub mod cyclictest_json;
pub mod cyclictest_text;
pub mod hlog;
pub mod input;
pub mod prometheus;
pub mod rt_app;

use crate::measure::histogram::PERCENTILES;
use crate::result::build::{percentiles, Stated, StatedRun};
use crate::result::{Bucket, HistogramRecord, RunResult, Source, Stats, ThreadResult, Unbinned};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// Why a file could not be imported: the file, the line when known, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    /// The file.
    pub file: String,
    /// 1-based line number, when the problem has one.
    pub line: Option<usize>,
    /// What is wrong, with the fix when there is one.
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ImportError {}

/// The unit of a file's figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds (cyclictest's default).
    Micros,
    /// Nanoseconds (`-N`).
    Nanos,
}

impl Unit {
    /// Nanoseconds per unit.
    pub fn ns(self) -> i64 {
        match self {
            Unit::Micros => 1000,
            Unit::Nanos => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Unit::Micros => "us",
            Unit::Nanos => "ns",
        }
    }
}

/// One thread as a cyclictest file states it, in the file's unit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadFigures {
    /// Samples.
    pub cycles: u64,
    /// Minimum, maximum (`None` without samples).
    pub min: Option<i64>,
    /// Maximum.
    pub max: Option<i64>,
    /// Average as printed (`None` for cyclictest's `nan`).
    pub avg: Option<f64>,
    /// CPU (`None` when unpinned).
    pub cpu: Option<usize>,
    /// Priority (`T:` lines only).
    pub priority: Option<u32>,
    /// Interval in µs (`T:` lines only).
    pub interval_us: Option<i64>,
    /// Missed periods, when the file is rtlab's and says.
    pub missed: Option<u64>,
    /// Histogram counts per bucket index (one bucket = one unit).
    pub histogram: Option<BTreeMap<u64, u64>>,
    /// Samples beyond the histogram (overflows).
    pub overflows: u64,
    /// Every overflow is at least this many units (the histogram's size, or a lower bound).
    pub range: u64,
}

/// The statistics of one thread as a file states them.
pub fn stats_of(f: &ThreadFigures, unit: Unit) -> Stats {
    let u = unit.ns();
    let scale = |v: i64| v.saturating_mul(u);
    let histogram = f.histogram.as_ref().map(|h| HistogramRecord {
        bucket_ns: u as u64,
        range_ns: f.range.saturating_mul(u as u64),
        buckets: h
            .iter()
            .filter(|(_, c)| **c > 0)
            .map(|(k, c)| Bucket {
                lo_ns: k.saturating_mul(u as u64),
                hi_ns: (k + 1).saturating_mul(u as u64),
                count: *c,
            })
            .collect(),
        unbinned: (f.overflows > 0)
            .then_some(Unbinned { count: f.overflows, at_least_ns: f.range.saturating_mul(u as u64) }),
    });
    let max_ns = f.max.map(scale);
    let (percentiles_ns, percentiles_above_ns) = match &histogram {
        Some(h) => percentiles(h, f.cycles, max_ns),
        None => (PERCENTILES.iter().map(|(k, _)| (k.to_string(), None)).collect(), BTreeMap::new()),
    };
    Stats {
        cycles: f.cycles,
        missed: f.missed,
        negative: None,
        min_ns: f.min.map(scale),
        max_ns,
        max_at_cycle: None,
        max_at_ns: None,
        max_at_time: None,
        // avg has two decimals in µs: whole nanoseconds keep it exact.
        mean_ns: f.avg.map(|a| if u == 1 { a } else { (a * u as f64).round() }),
        mean_us_truncated: None,
        stdev_ns: None,
        percentiles_ns,
        percentiles_above_ns,
        over_threshold: 0,
        exceedances: None,
        histogram,
        uncertainty: None,
        prediction: None,
    }
}

/// Builds a RunResult from parsed threads.
pub fn build(file: &Path, format: &str, unit: Unit, p: Stated, figures: &[ThreadFigures]) -> RunResult {
    let threads: Vec<ThreadResult> = figures
        .iter()
        .enumerate()
        .map(|(i, f)| ThreadResult {
            priority: f.priority,
            interval_ns: f.interval_us.map(|i| i * 1000),
            ..ThreadResult::of_figures(i, f.cpu, stats_of(f, unit))
        })
        .collect();
    let source = Source {
        format: format.into(),
        file: file.display().to_string(),
        tool_version: p.tool_version.clone(),
        command_line: p.command_line.clone(),
        unit: unit.name().into(),
    };
    RunResult::from_stated(StatedRun { threads, stated: p, source })
}

/// The most a text or JSON input may hold (a cyclictest `-h` file of every bucket for 4096
/// threads is far below it); a larger file is refused instead of read into memory.
pub const MAX_TEXT_INPUT: u64 = 256 << 20;

/// What the first bytes of an input say it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detected {
    /// An rtlab samples file (binary, `RTLSMP01`).
    Samples,
    /// Binary data that rtlab does not read.
    Binary,
    /// Text (JSON or cyclictest output).
    Text,
}

/// Opens an input to read: a regular file, or where `streaming` is meant a named pipe (or `-`,
/// standard input). Directories, devices and sockets are refused with what they are, so that
/// `/dev/zero` is never read into memory.
pub fn open_input(path: &Path, streaming: bool) -> Result<Box<dyn std::io::Read>, String> {
    use std::os::unix::fs::FileTypeExt;
    if streaming && path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin()));
    }
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    let t = meta.file_type();
    let what = if t.is_file() || (streaming && t.is_fifo()) {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a named pipe")
    } else if t.is_char_device() || t.is_block_device() {
        Some("a device")
    } else {
        Some("a socket or special file")
    };
    if let Some(what) = what {
        return Err(format!("is {what}, not a result file; give a regular file"));
    }
    // /proc, /sys and tracefs files pass as regular files but may block forever or consume
    // what they give (trace_pipe takes the system's events).
    if let Some(fs) = crate::rt::fs::pseudo_filesystem(path) {
        return Err(format!("is a {fs} pseudo-file, not a result file; copy what you need to a regular file first"));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    Ok(Box::new(std::io::BufReader::with_capacity(1 << 16, file)))
}

/// Reads a text input whole, at most [`MAX_TEXT_INPUT`] bytes, after looking at its first bytes:
/// a samples file or binary data is refused with what it is (the caller adds what it expects).
pub fn read_text_input(path: &Path) -> Result<String, (Detected, String)> {
    use std::io::Read;
    let input = open_input(path, false).map_err(|e| (Detected::Text, e))?;
    let mut input = input.take(MAX_TEXT_INPUT + 1);
    let mut bytes = Vec::new();
    let read = |input: &mut dyn Read, bytes: &mut Vec<u8>, n: u64| {
        input.take(n).read_to_end(bytes).map_err(|e| (Detected::Text, format!("cannot read: {e}")))
    };
    read(&mut input, &mut bytes, 8192)?;
    match detect(&bytes) {
        Detected::Samples => return Err((Detected::Samples, "is an rtlab samples file (binary)".into())),
        Detected::Binary => return Err((Detected::Binary, "holds binary data".into())),
        Detected::Text => {}
    }
    read(&mut input, &mut bytes, u64::MAX)?;
    if bytes.len() as u64 > MAX_TEXT_INPUT {
        return Err((
            Detected::Text,
            format!("is larger than {} MiB, more than any result file", MAX_TEXT_INPUT >> 20),
        ));
    }
    // A UTF-8 byte order mark (Windows editors write one) is not part of any format's text.
    let body = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&bytes).to_vec();
    String::from_utf8(body)
        .map_err(|e| (Detected::Binary, format!("holds binary data at byte {}", e.utf8_error().valid_up_to())))
}

/// What the first bytes (up to 8 KiB) of `bytes` say: a samples file, binary data (a NUL, or
/// bytes that are not UTF-8), or text.
pub fn detect(bytes: &[u8]) -> Detected {
    if bytes.starts_with(crate::export::samples::MAGIC) {
        return Detected::Samples;
    }
    let head = &bytes[..bytes.len().min(8192)];
    // A character cut by the 8 KiB boundary is not an error (error_len is None then).
    let bad_utf8 = std::str::from_utf8(head).is_err_and(|e| e.error_len().is_some());
    if head.contains(&0) || bad_utf8 {
        Detected::Binary
    } else {
        Detected::Text
    }
}

/// Reads `path` and imports whatever cyclictest output it holds (or an rtlab RunResult).
/// `unit` overrides the unit where a text format cannot say (`-N` runs).
pub fn import_file(path: &Path, unit: Option<Unit>) -> Result<RunResult, ImportError> {
    let err = |line: Option<usize>, message: String| ImportError { file: path.display().to_string(), line, message };
    if rt_app::detect_file(path) {
        return imported_rt_app_log(path);
    }
    let text = read_text_input(path).map_err(|(kind, e)| {
        err(
            None,
            match kind {
                Detected::Samples => {
                    format!("{e}: read it with `rtlab samples FILE`, or give it to plot, report or compare")
                }
                Detected::Binary => format!("{e}: not cyclictest output (expected text or JSON)"),
                Detected::Text => e,
            },
        )
    })?;
    import_text(path, &text, unit)
}

/// Imports `text`, already read from `path`: a RunResult, cyclictest JSON or cyclictest text.
pub fn import_text(path: &Path, text: &str, unit: Option<Unit>) -> Result<RunResult, ImportError> {
    let err = |line: Option<usize>, message: String| ImportError { file: path.display().to_string(), line, message };
    if text.bytes().all(|b| b.is_ascii_whitespace()) {
        return Err(err(None, "the file is empty; give a cyclictest --json file, -h/-H histogram or -q output".into()));
    }
    let r = if rt_app::detect(text) {
        rt_app::parse(path, text)?
    } else if hlog::detect(text) {
        hlog::parse(path, text)?
    } else if text.trim_start().starts_with('{') {
        if text.contains("\"schema\": \"rtlab.run/1\"") || text.contains("\"schema\":\"rtlab.run/1\"") {
            serde_json::from_str(text).map_err(|e| err(Some(e.line()), format!("not a valid rtlab.run/1 file: {e}")))?
        } else {
            cyclictest_json::parse(path, text)?
        }
    } else {
        cyclictest_text::parse(path, text, unit)?
    };
    // Whatever the source, a result is one rtlab writes and reads back: an import that could
    // not be read again is refused here rather than written.
    check_result(&r).map_err(|why| err(None, why))?;
    Ok(r)
}

/// An rt-app log, read as it streams (it can be larger than any text rtlab reads whole).
pub fn imported_rt_app_log(path: &Path) -> Result<RunResult, ImportError> {
    let r = rt_app::stream(path)?;
    check_result(&r).map_err(|why| ImportError { file: path.display().to_string(), line: None, message: why })?;
    Ok(r)
}

/// Whether a result (read, or imported) is one rtlab writes: at most its threads, times it can
/// write, histograms ascending with counts that fit 64 bits, series it can draw.
fn check_result(r: &RunResult) -> Result<(), String> {
    if r.threads.len() > crate::export::samples::MAX_THREADS {
        return Err(format!(
            "{} threads: rtlab measures at most {}; the file is not one of its results",
            r.threads.len(),
            crate::export::samples::MAX_THREADS
        ));
    }
    for (name, t) in [("start_time", &r.start_time), ("end_time", &r.end_time)] {
        if let Some(t) = t.as_deref().filter(|t| crate::timefmt::parse_rfc3339(t).is_none()) {
            return Err(format!(
                "{name} {}: not an RFC 3339 time of the years 1970 to 9999, which rtlab writes",
                crate::units::printable(&crate::units::clip(t, 40))
            ));
        }
    }
    let histograms = r.threads.iter().map(|t| (t.thread.to_string(), &t.stats.histogram));
    for (who, h) in histograms.chain([("ALL".to_string(), &r.all.stats.histogram)]) {
        if let Some(Err(why)) = h.as_ref().map(|h| h.check()) {
            return Err(format!("thread {who}'s histogram is not one rtlab writes: {why}"));
        }
    }
    for t in &r.threads {
        if let Some(Err(why)) = t.series.as_ref().map(|s| s.check()) {
            return Err(format!("thread {}'s series is not one rtlab writes: {why}", t.thread));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FIXTURES: [&str; 6] = [
        include_str!("../../tests/fixtures/cyclictest/v2.10-t2-H60.json"),
        include_str!("../../tests/fixtures/cyclictest/v2.4-t1-nohist.json"),
        include_str!("../../tests/fixtures/cyclictest/v2.4-hist-t1-h60.txt"),
        include_str!("../../tests/fixtures/cyclictest/v2.10-histofall-t2-H60.txt"),
        include_str!("../../tests/fixtures/cyclictest/v2.4-quiet-t2.txt"),
        include_str!("../../tests/fixtures/cyclictest/v2.4-t2-h80.stdout.txt"),
    ];

    fn parse_any(text: &str) {
        let p = Path::new("fuzz");
        let _ = cyclictest_json::parse(p, text);
        let _ = cyclictest_text::parse(p, text, None);
        let _ = cyclictest_text::parse(p, text, Some(Unit::Nanos));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn parsers_never_panic_on_arbitrary_text(s in "\\PC{0,300}") {
            parse_any(&s);
        }

        #[test]
        fn parsers_never_panic_on_mutated_cyclictest_output(
            which in 0usize..FIXTURES.len(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), "[0-9a-z# \\t\\n:{}\",.-]{0,3}", 0usize..6), 1..8),
        ) {
            let mut text = FIXTURES[which].to_string();
            for (at, insert, cut) in edits {
                let mut pos = at.index(text.len().max(1));
                while !text.is_char_boundary(pos) { pos -= 1; }
                let mut end = (pos + cut).min(text.len());
                while !text.is_char_boundary(end) { end += 1; }
                text.replace_range(pos..end, &insert);
            }
            parse_any(&text);
        }

        #[test]
        fn dropping_lines_never_panics(which in 0usize..FIXTURES.len(), keep in proptest::collection::vec(any::<bool>(), 200)) {
            let text: String = FIXTURES[which].lines().zip(keep.iter().cycle()).filter(|(_, k)| **k).map(|(l, _)| format!("{l}\n")).collect();
            parse_any(&text);
        }
    }
}
