//! HdrHistogram interval logs (`.hlog`): the header HdrHistogram's readers expect (format
//! version 1.3, StartTime, BaseTime, the legend), then one line per thread per interval —
//! `Tag=NAME,start,length,max,HISTOGRAM` — with the interval's histogram of ns (V2, deflated,
//! base64). Interval times are seconds since BaseTime, the run's start; the max column is in ms,
//! as HdrHistogram's Java writer puts it, with six decimals so that it keeps the exact ns.

use super::Exporter;
use crate::measure::hdr::{self, Hdr};
use crate::result::{RunResult, ThreadResult};
use std::fmt::Write;
use std::time::SystemTime;

/// The legend line HdrHistogram's Java writer puts before the intervals.
pub const LEGEND: &str = "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// The first line of every interval log.
pub const VERSION_LINE: &str = "#[Histogram log format version 1.3]";

/// The header: format version, what the values are, StartTime and BaseTime (both `start`),
/// the legend.
pub fn header(start: SystemTime, what: &str) -> String {
    let secs = start.duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    format!(
        "{VERSION_LINE}\n#[rtlab {}: {what}; values in ns, Interval_Max in ms]\n\
         #[StartTime: {secs:.3} (seconds since epoch), {}]\n#[BaseTime: {secs:.3} (seconds since epoch)]\n{LEGEND}\n",
        env!("CARGO_PKG_VERSION"),
        crate::timefmt::rfc3339(start),
    )
}

/// What a log of a run of `kind` holds, for its header.
pub fn what(kind: crate::result::Kind) -> &'static str {
    match kind {
        crate::result::Kind::Wakeup => "the wakeup latency of each thread, an interval histogram per thread",
        crate::result::Kind::Noise => "OS noise, the gaps each busy thread saw, an interval histogram per thread",
        crate::result::Kind::Watch => "the wakeup latency of each watched thread, an interval histogram per thread",
    }
}

/// The tag of a thread's intervals: `thread0_cpu1` (`thread0` when it is not pinned), with a
/// stage's name after it (`thread0_cpu1_irq`). A tag has no comma or space.
pub fn tag(thread: usize, cpu: Option<usize>, stage: Option<&str>) -> String {
    let mut t = format!("thread{thread}");
    if let Some(c) = cpu {
        let _ = write!(t, "_cpu{c}");
    }
    if let Some(s) = stage {
        let _ = write!(t, "_{s}");
    }
    t
}

/// One interval's line: from `start_ns` to `end_ns` after BaseTime, its largest latency, its
/// histogram.
pub fn line(tag: &str, start_ns: i64, end_ns: i64, max_ns: Option<i64>, histogram: &Hdr) -> String {
    let secs = |ns: i64| ns as f64 / 1e9;
    let max_ms = max_ns.unwrap_or(0).max(0) as f64 / 1e6;
    format!(
        "Tag={tag},{:.3},{:.3},{max_ms:.6},{}\n",
        secs(start_ns.max(0)),
        secs((end_ns - start_ns).max(0)),
        hdr::encode(histogram)
    )
}

/// A result's series as an interval log: every thread's intervals, in time order. Only a
/// series that keeps each interval's distribution can be written.
#[derive(Debug, Default)]
pub struct Hlog;

impl Exporter for Hlog {
    fn serialize(&self, r: &RunResult) -> Result<Vec<u8>, String> {
        let with: Vec<&ThreadResult> = r.threads.iter().filter(|t| t.series.is_some()).collect();
        if with.is_empty() {
            return Err("the result has no series (latency over time); record one with rtlab run, or import an \
                        interval log"
                .into());
        }
        if let Some(t) = with.iter().find(|t| t.series.as_ref().is_some_and(|s| s.histograms.is_empty())) {
            return Err(format!(
                "thread {}'s series keeps no distribution per interval (a result of rtlab before interval logs); \
                 measure again with rtlab run --hlog FILE",
                t.thread
            ));
        }
        let start = r.start_time.as_deref().and_then(crate::timefmt::parse_rfc3339).unwrap_or(SystemTime::UNIX_EPOCH);
        let mut out = header(start, what(r.kind));
        let mut lines: Vec<(i64, usize, String)> = Vec::new();
        for (i, t) in with.iter().enumerate() {
            let s = t.series.as_ref().expect("filtered above");
            let tag = tag(t.thread, t.cpu, None);
            for rd in s.readings() {
                let begin = (rd.at_ns - s.interval_ns).max(0);
                lines.push((begin, i, line(&tag, begin, rd.at_ns, rd.max_ns, &rd.histogram())));
            }
        }
        lines.sort_by_key(|(at, i, _)| (*at, *i));
        lines.into_iter().for_each(|(_, _, l)| out.push_str(&l));
        Ok(out.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_carries_its_tag_times_exact_maximum_and_histogram() {
        let mut h = hdr::empty();
        h.record_n(54_321, 3).unwrap();
        let l = line(&tag(0, Some(1), None), 2_000_000_000, 3_000_000_000, Some(54_321), &h);
        assert!(l.starts_with("Tag=thread0_cpu1,2.000,1.000,0.054321,HISTF"), "{l}");
        assert_eq!(tag(3, None, Some("irq")), "thread3_irq");
        let text = format!("{}{l}", header(SystemTime::UNIX_EPOCH, "test"));
        let parsed: Vec<_> = hdrhistogram::serialization::interval_log::IntervalLogIterator::new(text.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(parsed.len(), 3, "StartTime, BaseTime and the interval");
    }
}
