//! Import of HdrHistogram interval logs (rtlab's `--hlog`, jHiccup's, wrk2's, any
//! `HistogramLogWriter`'s): one thread per tag, its intervals merged into its statistics and
//! kept as its series (each interval's count, largest value and histogram). Values are taken as
//! ns. The file is not trusted: histograms are checked before they are inflated or allocated
//! (`measure::hdr::decode`), intervals must come in time order per tag, and a file of more than
//! [`MAX_INTERVALS`] intervals or [`MAX_TAGS`] tags is refused.

use super::ImportError;
use crate::measure::hdr::{self, Hdr};
use crate::measure::histogram::{Counts, Layout};
use crate::measure::series::{LatencySeries, MAX_POINTS};
use crate::result::build::{percentiles, Stated, StatedRun};
use crate::result::{Bucket, HistogramRecord, RunResult, Source, Stats, ThreadResult};
use crate::timefmt::from_epoch_secs as from_epoch;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The most intervals a log may hold: a week of 1 s intervals of one thread, or a day of twelve.
pub const MAX_INTERVALS: usize = 1 << 20;

/// The most tags (threads) a log may hold: as many threads as rtlab measures.
pub const MAX_TAGS: usize = crate::export::samples::MAX_THREADS;

/// A year in seconds: HdrHistogram's readers take timestamps this much below StartTime as
/// offsets from it, others as seconds since the epoch.
const YEAR_S: f64 = 365.25 * 86_400.0;

/// Whether `text` is an interval log: its first line that is not blank is one of the headers
/// HdrHistogram's writers put first, or an interval line (`[Tag=…,]start,length,max,HIST…`).
pub fn detect(text: &str) -> bool {
    const HEADERS: [&str; 4] = ["#[Histogram log format version", "#[StartTime:", "#[BaseTime:", "\"StartTimestamp\""];
    // Writers open with free comments of their own (jHiccup's "#[Logged with jHiccup…]", the Rust
    // crate's "#…"): the first known header or the first line that is not a comment decides.
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()).take(1_000) {
        if HEADERS.iter().any(|h| line.starts_with(h)) {
            return true;
        }
        if !line.starts_with('#') {
            return is_interval_line(line);
        }
    }
    false
}

/// Whether `line` is an interval line: `[Tag=T,]start,length,max,HIST…`.
fn is_interval_line(line: &str) -> bool {
    let body = line.strip_prefix("Tag=").and_then(|r| r.split_once(',')).map_or(line, |(_, r)| r);
    let fields: Vec<&str> = body.split(',').collect();
    fields.len() == 4 && fields[..3].iter().all(|f| f.parse::<f64>().is_ok()) && fields[3].starts_with("HIST")
}

/// The series' interval a tag is gathering: its reading's time, count, largest value and
/// histogram.
struct Open {
    at_ns: i64,
    samples: u64,
    max_ns: Option<i64>,
    histogram: Hdr,
}

/// One tag's intervals as they are read.
struct Tagged {
    name: String,
    merged: Hdr,
    series: LatencySeries,
    open: Option<Open>,
    /// The largest value of the log, as the interval lines state it where they agree with their
    /// histograms.
    max_ns: Option<i64>,
    last_start_ns: i64,
    total: u64,
}

/// An interval's largest value: its max column read as ms (HdrHistogram's Java writer) when that
/// lies within the histogram's precision of the histogram's largest value — exact to the ns for
/// rtlab's logs — else the histogram's own.
fn interval_max(stated: f64, h: &Hdr) -> i64 {
    let top = h.max();
    let ns = (stated * 1e6).round();
    if ns.is_finite() && ns >= h.lowest_equivalent(top) as f64 && ns <= h.highest_equivalent(top) as f64 {
        ns as i64
    } else {
        i64::try_from(top).unwrap_or(i64::MAX)
    }
}

/// Reads the log `text` (from `path`) into a RunResult.
pub fn parse(path: &Path, text: &str) -> Result<RunResult, ImportError> {
    let err = |line: Option<usize>, message: String| ImportError { file: path.display().to_string(), line, message };
    let (mut start_time, mut base_time): (Option<f64>, Option<f64>) = (None, None);
    let mut tags: Vec<Tagged> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut origin: Option<f64> = None;
    // Counted before any histogram is decoded: a log too long is refused at once.
    let Some(width) = series_width(text) else {
        return Err(err(
            None,
            format!("more than {MAX_INTERVALS} intervals; split the log, or write it with longer intervals"),
        ));
    };
    for (line, entry) in entries(text) {
        let entry = entry.map_err(|()| {
            err(
                Some(line),
                "not an interval log line (expected \
                [Tag=NAME,]START,LENGTH,MAX,HISTOGRAM, a #[StartTime: …] or #[BaseTime: …] header, or a # comment)"
                    .into(),
            )
        })?;
        let iv = match entry {
            LogEntry::StartTime(d) => {
                start_time.get_or_insert(d.as_secs_f64());
                continue;
            }
            LogEntry::BaseTime(d) => {
                base_time.get_or_insert(d.as_secs_f64());
                continue;
            }
            LogEntry::Interval(iv) => iv,
        };
        let h = hdr::decode(iv.encoded_histogram()).map_err(|e| err(Some(line), e))?;
        // Where interval times count from: BaseTime; else StartTime when they are offsets from
        // it (HdrHistogram's reader's rule); else the epoch.
        let ts = iv.start_timestamp().as_secs_f64();
        let base = base_time.unwrap_or(match start_time {
            Some(s) if ts < s - YEAR_S => s,
            _ => 0.0,
        });
        let at = base + ts;
        if crate::timefmt::from_epoch_secs(at).is_none() || start_time.is_some_and(|s| from_epoch(s).is_none()) {
            return Err(err(
                Some(line),
                "its time is before 1970 or after year 9999 (StartTime, BaseTime and the interval's start added): \
                 not a time rtlab can write"
                    .into(),
            ));
        }
        let run_start = *origin.get_or_insert(start_time.unwrap_or(at).min(at));
        let name = iv.tag().map_or_else(|| "untagged".to_string(), |t| t.as_str().to_string());
        let k = match index.get(&name) {
            Some(k) => *k,
            None if tags.len() >= MAX_TAGS => return Err(err(Some(line), format!("more than {MAX_TAGS} tags"))),
            None => {
                index.insert(name.clone(), tags.len());
                tags.push(Tagged::new(name, width));
                tags.len() - 1
            }
        };
        let start_ns = ((at - run_start) * 1e9).round() as i64;
        let max = (!h.is_empty()).then(|| interval_max(iv.max(), &h));
        tags[k].add(start_ns, iv.duration(), max, &h).map_err(|e| err(Some(line), e))?;
    }
    if tags.is_empty() {
        return Err(err(None, "the interval log holds no interval".into()));
    }
    tags.iter_mut().for_each(Tagged::close);
    let start = origin.and_then(from_epoch);
    let end = tags.iter().map(|t| t.series.span_ns).max().unwrap_or(0);
    Ok(result(path, tags, start, end))
}

/// The log's entries with their line numbers: each line parsed alone by HdrHistogram's parser
/// (which, given the whole text, rereads the rest of the file at every comment: a log of
/// comments took minutes), free comments skipped, the first line it cannot read an error.
fn entries(text: &str) -> impl Iterator<Item = (usize, Result<LogEntry<'_>, ()>)> {
    let headers = ["#[StartTime:", "#[BaseTime:"];
    text.split_inclusive('\n')
        .enumerate()
        .filter(move |(_, l)| !l.starts_with('#') || headers.iter().any(|h| l.starts_with(h)))
        .filter_map(|(i, l)| {
            let entry = IntervalLogIterator::new(l.as_bytes()).next()?;
            Some((i + 1, entry.map_err(|_| ())))
        })
        .scan(false, |failed, (i, e)| {
            // Nothing is read past the first line that is not the log's.
            (!std::mem::replace(failed, e.is_err())).then_some((i, e))
        })
}

/// The width of the series' intervals: the log's first interval, to the ms (jHiccup's wander by
/// a few), doubled until the log's time span fits the [`MAX_POINTS`] a series keeps, so that
/// each of its intervals is encoded once and never merged again. Found in one pass that decodes
/// no histogram; `None` when the log holds more than [`MAX_INTERVALS`] intervals.
fn series_width(text: &str) -> Option<i64> {
    let (mut first, mut lo, mut hi, mut n) = (None, f64::INFINITY, f64::NEG_INFINITY, 0usize);
    for (_, e) in entries(text) {
        if let Ok(LogEntry::Interval(iv)) = e {
            n += 1;
            if n > MAX_INTERVALS {
                return None;
            }
            first.get_or_insert(iv.duration());
            let ts = iv.start_timestamp().as_secs_f64();
            (lo, hi) = (lo.min(ts), hi.max(ts));
        }
    }
    let mut width = (first.map_or(1, |d| d.as_millis().clamp(1, 1 << 40)) as i64) * 1_000_000;
    let span = if n > 0 { ((hi - lo) * 1e9).min(1e18) as i64 } else { 0 };
    while span / width >= MAX_POINTS as i64 - 1 && width < 1 << 60 {
        width *= 2;
    }
    Some(width)
}

impl Tagged {
    fn new(name: String, interval_ns: i64) -> Tagged {
        Tagged {
            name,
            merged: hdr::empty(),
            series: LatencySeries { interval_ns, ..LatencySeries::new() },
            open: None,
            max_ns: None,
            last_start_ns: i64::MIN,
            total: 0,
        }
    }

    /// Adds the interval being gathered to the series, its histogram encoded once.
    fn close(&mut self) {
        if let Some(o) = self.open.take() {
            hdr::add_into(&mut self.merged, &o.histogram);
            self.series.add(o.at_ns, o.samples, 0, o.max_ns, Some(&o.histogram));
        }
    }

    /// Adds an interval starting `start_ns` after the log's start.
    fn add(&mut self, start_ns: i64, length: Duration, max: Option<i64>, h: &Hdr) -> Result<(), String> {
        if start_ns < self.last_start_ns {
            return Err(format!(
                "tag {}: this interval starts before the one above it; an interval log is in time order",
                self.name
            ));
        }
        self.last_start_ns = start_ns;
        self.total = self
            .total
            .checked_add(h.len())
            .ok_or_else(|| format!("tag {}: its counts add up past 64 bits", self.name))?;
        self.max_ns = self.max_ns.max(max);
        let w = self.series.interval_ns;
        // A reading that closes the interval the start falls in; the log's intervals that fall
        // in one of the series' are gathered before it is added.
        let at_ns = start_ns.max(0).saturating_add(w);
        let slot = (at_ns - 1) / w;
        if self.open.as_ref().is_some_and(|o| (o.at_ns - 1) / w != slot) {
            self.close();
        }
        match &mut self.open {
            Some(o) => {
                o.samples += h.len();
                o.max_ns = o.max_ns.max(max);
                hdr::add_into(&mut o.histogram, h);
            }
            None => self.open = Some(Open { at_ns, samples: h.len(), max_ns: max, histogram: h.clone() }),
        }
        self.series.span_ns = self.series.span_ns.max(start_ns.max(0) + length.as_nanos().min(i64::MAX as u128) as i64);
        Ok(())
    }

    /// `thread3_cpu1` (rtlab's tags) gives the thread's CPU.
    fn cpu(&self) -> Option<usize> {
        let rest = self.name.strip_prefix("thread")?;
        let (_, cpu) = rest.split_once("_cpu")?;
        cpu.split('_').next()?.parse().ok()
    }

    fn into_thread(self, index: usize) -> ThreadResult {
        let mut counts = Counts::empty(Layout::DEFAULT);
        for (_, hi, n) in hdr::ranges(&self.merged) {
            counts.add(hi - 1, n);
        }
        let histogram = HistogramRecord {
            bucket_ns: Layout::DEFAULT.bucket_ns,
            range_ns: Layout::DEFAULT.range_ns,
            buckets: counts.nonzero().map(|(lo_ns, hi_ns, count)| Bucket { lo_ns, hi_ns, count }).collect(),
            unbinned: None,
        };
        let (percentiles_ns, percentiles_above_ns) = percentiles(&histogram, self.total, self.max_ns);
        let cpu = self.cpu();
        let stats = Stats {
            cycles: self.total,
            missed: None,
            negative: None,
            min_ns: (self.total > 0).then(|| i64::try_from(self.merged.min()).unwrap_or(i64::MAX)),
            max_ns: self.max_ns,
            max_at_cycle: None,
            max_at_ns: None,
            max_at_time: None,
            mean_ns: (self.total > 0).then(|| self.merged.mean()),
            mean_us_truncated: None,
            stdev_ns: (self.total > 0).then(|| self.merged.stdev()),
            percentiles_ns,
            percentiles_above_ns,
            over_threshold: 0,
            exceedances: None,
            histogram: Some(histogram),
            uncertainty: None,
            prediction: None,
        };
        ThreadResult { name: Some(self.name), series: Some(self.series), ..ThreadResult::of_figures(index, cpu, stats) }
    }
}

fn result(path: &Path, tags: Vec<Tagged>, start: Option<SystemTime>, end_ns: i64) -> RunResult {
    let threads: Vec<ThreadResult> = tags.into_iter().enumerate().map(|(i, t)| t.into_thread(i)).collect();
    let rfc = crate::timefmt::rfc3339;
    let source = Source {
        format: "hdrhistogram-interval-log".into(),
        file: path.display().to_string(),
        tool_version: None,
        command_line: None,
        unit: "ns".into(),
    };
    let stated = Stated {
        command_line: None,
        tool_version: None,
        start_time: start.map(rfc),
        end_time: start.map(|s| rfc(s + Duration::from_nanos(end_ns.max(0) as u64))),
        environment: None,
    };
    RunResult::from_stated(StatedRun { threads, stated, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_known_by_its_headers_or_its_first_interval_line_after_any_comments() {
        assert!(detect("#written by the hdrhistogram crate\n#[StartTime: 1.000 (seconds since epoch)]\n"));
        assert!(detect("#[Logged with jHiccup version 2.0.10]\n#[Histogram log format version 1.2]\n"));
        assert!(detect("# a comment\nTag=a,0.000,1.000,0.001,HISTFAAAA\n"));
        assert!(detect("0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgZnNmq\n"));
        // cyclictest's -h output and -q lines are not logs, nor is a file of comments alone.
        assert!(!detect("# /dev/cpu_dma_latency set to 0us\n# Histogram\n000000 000000\n"));
        assert!(!detect("T: 0 ( 1234) P:80 I:1000 C:   1000 Min:      3 Act:    5 Avg:    4 Max:      12\n"));
        assert!(!detect("# only\n# comments\n"));
    }
}
