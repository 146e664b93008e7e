//! Latency over time without a samples file: once per interval the pipeline reads a thread's
//! live figures (a checkpoint) and keeps what the interval added — its samples, its missed
//! periods and its largest latency — so a result can draw latency over time from its JSON
//! alone, with memory bounded however long the run.

use super::hdr::{self, Hdr};
use super::histogram::Layout;
use super::stats::Summary;
use serde::{Deserialize, Serialize};

/// The interval a series starts with (ns): 1 s.
pub const INTERVAL_NS: i64 = 1_000_000_000;

/// The most intervals a series keeps: past it, neighbouring intervals are merged in pairs and
/// the interval doubles (a day at 1 s becomes 5 400 intervals of 16 s… at most this many).
pub const MAX_POINTS: usize = 3_600;

/// The longest interval a series may have (ns): a day, a ten-year run's.
pub const MAX_INTERVAL_NS: i64 = 86_400 * 1_000_000_000;

/// A thread's latency over time: per interval since measuring began, the samples read in it,
/// the periods missed and its largest latency.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencySeries {
    /// Interval (ns): 1 s, doubled whenever the run outgrows 3 600 intervals.
    pub interval_ns: i64,
    /// Samples per interval (a sample counts in the interval whose reading first saw it).
    pub samples: Vec<u64>,
    /// Missed periods per interval.
    pub missed: Vec<u64>,
    /// The largest latency of each interval (ns; `null`: no sample). Exact when it is the
    /// run's largest so far; otherwise the upper edge of the interval's highest histogram
    /// bucket, capped at the run's largest so far — like the percentiles, at most one bucket
    /// above the true value.
    pub max_ns: Vec<Option<i64>>,
    /// Time the series covers (ns): the last interval ends there. It may be shorter than the
    /// others, or longer by what was recorded while the run stopped (a few ms).
    pub span_ns: i64,
    /// Each interval's distribution: an HdrHistogram of its latencies in ns (3 significant
    /// figures, V2, deflated, base64: an interval log's text), `""` for an interval without
    /// samples. Empty when the series was made without them (rtlab before interval logs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histograms: Vec<String>,
}

/// What one reading of a thread's live cells added: the interval it closes.
#[derive(Clone, Debug)]
pub struct IntervalReading {
    /// Where the reading was taken (ns since the start): the interval ends there.
    pub at_ns: i64,
    /// Samples added.
    pub samples: u64,
    /// Missed periods added.
    pub missed: u64,
    /// The largest latency added (as the series keeps it).
    pub max_ns: Option<i64>,
    /// The samples added (see [`IntervalReading::histogram`]).
    pub added: Added,
}

/// An interval's samples: an HdrHistogram already (read back from a series), or the buckets of
/// the live histogram a reading found grown, of which one is built only for an observer that
/// asks (an interval log): a plain run writes the series' text straight from the buckets.
#[derive(Clone, Debug)]
pub enum Added {
    /// A histogram.
    Histogram(Hdr),
    /// `(bucket, added count)` of a histogram of `layout`, ascending, capped at `max_ns`.
    Buckets {
        /// The live histogram's layout.
        layout: Layout,
        /// Its buckets that grew, with what they gained.
        grew: hdr::Buckets,
        /// The interval's largest latency, the cap of every value.
        max_ns: Option<i64>,
    },
}

impl IntervalReading {
    /// The samples added, as an HdrHistogram (built from the buckets when that is what the
    /// reading holds).
    pub fn histogram(&self) -> std::borrow::Cow<'_, Hdr> {
        match &self.added {
            Added::Histogram(h) => std::borrow::Cow::Borrowed(h),
            Added::Buckets { layout, grew, max_ns } => std::borrow::Cow::Owned(hdr::of_added(*layout, grew, *max_ns)),
        }
    }
}

impl LatencySeries {
    /// What a series read from a file must be to be drawn: a positive interval, at most
    /// [`MAX_POINTS`] intervals (what a run keeps), its three lists of one length, sums that
    /// fit 64 bits, and a span that is not negative; the error says which rule it breaks.
    pub fn check(&self) -> Result<(), String> {
        let n = self.samples.len();
        if self.interval_ns <= 0 {
            return Err(format!("interval_ns {} is not positive", self.interval_ns));
        }
        if n > MAX_POINTS {
            return Err(format!("{n} intervals: a run keeps at most {MAX_POINTS}"));
        }
        if self.missed.len() != n
            || self.max_ns.len() != n
            || !(self.histograms.is_empty() || self.histograms.len() == n)
        {
            return Err(format!(
                "samples, missed, max_ns and histograms differ in length ({n}, {}, {}, {})",
                self.missed.len(),
                self.max_ns.len(),
                self.histograms.len()
            ));
        }
        let fits = |v: &[u64]| v.iter().try_fold(0u64, |a, b| a.checked_add(*b)).is_some();
        if !fits(&self.samples) || !fits(&self.missed) {
            return Err("its counts add up past 64 bits".into());
        }
        if self.span_ns < 0 {
            return Err(format!("span_ns {} is negative", self.span_ns));
        }
        // A ten-year run keeps intervals of a day at most; nothing longer is a run's.
        if self.interval_ns > MAX_INTERVAL_NS || self.span_ns > MAX_INTERVAL_NS.saturating_mul(MAX_POINTS as i64) {
            return Err(format!("interval_ns {} or span_ns {} is longer than any run", self.interval_ns, self.span_ns));
        }
        if let Some(m) = self.max_ns.iter().flatten().find(|m| **m < 0) {
            return Err(format!("an interval's max_ns {m} is negative (rtlab clamps negative latencies to 0)"));
        }
        Ok(())
    }

    /// An empty series of 1 s intervals.
    pub fn new() -> LatencySeries {
        LatencySeries { interval_ns: INTERVAL_NS, ..LatencySeries::default() }
    }

    /// Adds what was read at `at_ns` after the start (the end of the interval it belongs to:
    /// a reading at exactly 1 s closes the first interval), with its distribution when known (a
    /// series keeps distributions only if every reading brings one).
    pub fn add(&mut self, at_ns: i64, samples: u64, missed: u64, max_ns: Option<i64>, histogram: Option<&Hdr>) {
        let text = histogram.map(|h| if h.is_empty() { String::new() } else { hdr::encode(h) });
        self.add_text(at_ns, samples, missed, max_ns, text);
    }

    /// [`LatencySeries::add`] with the distribution as its text already (`""`: no sample).
    pub fn add_text(&mut self, at_ns: i64, samples: u64, missed: u64, max_ns: Option<i64>, histogram: Option<String>) {
        let at_ns = at_ns.max(0);
        let first = self.samples.is_empty();
        self.span_ns = self.span_ns.max(at_ns);
        let mut index = self.index_of(at_ns);
        while index >= MAX_POINTS {
            self.halve();
            index = self.index_of(at_ns);
        }
        if self.samples.len() <= index {
            self.samples.resize(index + 1, 0);
            self.missed.resize(index + 1, 0);
            self.max_ns.resize(index + 1, None);
        }
        self.samples[index] += samples;
        self.missed[index] += missed;
        // `None` orders below every latency: the larger of two, or the one there is.
        self.max_ns[index] = self.max_ns[index].max(max_ns);
        match histogram {
            Some(h) if first || !self.histograms.is_empty() => {
                self.histograms.resize(self.samples.len(), String::new());
                // The usual reading opens its interval: its text is kept as it is.
                let kept = &mut self.histograms[index];
                *kept = if kept.is_empty() { h } else { merged(&[kept, &h]) };
            }
            _ => self.histograms.clear(),
        }
    }

    fn index_of(&self, at_ns: i64) -> usize {
        // Interval k holds readings in (k·w, (k+1)·w]; a reading at 0 belongs to the first.
        ((at_ns.max(1) - 1) / self.interval_ns.max(1)) as usize
    }

    /// Merges neighbouring intervals in pairs: the interval doubles, every sum and maximum
    /// stays exact.
    fn halve(&mut self) {
        self.samples = self.samples.chunks(2).map(|p| p.iter().sum()).collect();
        self.missed = self.missed.chunks(2).map(|p| p.iter().sum()).collect();
        self.max_ns = self.max_ns.chunks(2).map(|p| p.iter().flatten().max().copied()).collect();
        let pairs = self.histograms.chunks(2);
        self.histograms = pairs.map(|p| merged(&p.iter().collect::<Vec<_>>())).collect();
        self.interval_ns *= 2;
    }

    /// Every interval as a reading of it (its end, samples, missed periods, maximum and
    /// distribution: an empty one where the series keeps none).
    pub fn readings(&self) -> impl Iterator<Item = IntervalReading> + '_ {
        (0..self.samples.len()).map(|k| IntervalReading {
            at_ns: ((k as i64 + 1) * self.interval_ns).min(self.span_ns.max(k as i64 * self.interval_ns + 1)),
            samples: self.samples[k],
            missed: self.missed[k],
            max_ns: self.max_ns[k],
            added: Added::Histogram(self.histogram(k).unwrap_or_else(hdr::empty)),
        })
    }

    /// Interval `k`'s distribution, when the series keeps them and the interval has samples.
    pub fn histogram(&self, k: usize) -> Option<Hdr> {
        self.histograms.get(k).filter(|t| !t.is_empty()).and_then(|t| hdr::decode(t).ok())
    }
}

/// The text of the sum of `texts` (interval histograms, `""` for none); `""` when all are
/// empty.
fn merged(texts: &[&String]) -> String {
    let mut sum = hdr::empty();
    for h in texts.iter().filter(|t| !t.is_empty()).filter_map(|t| hdr::decode(t).ok()) {
        hdr::add_into(&mut sum, &h);
    }
    if sum.is_empty() {
        String::new()
    } else {
        hdr::encode(&sum)
    }
}

/// Builds a thread's series from checkpoints of its live figures: each reading keeps what was
/// added since the one before. Holds the previous histogram as its non-empty buckets only.
#[derive(Clone, Debug)]
pub struct SeriesRecorder {
    series: LatencySeries,
    cycles: u64,
    missed: u64,
    max_ns: Option<i64>,
    /// The non-empty buckets at the last reading: `(index, count)`, ascending.
    buckets: Vec<(usize, u64)>,
}

impl Default for SeriesRecorder {
    fn default() -> Self {
        SeriesRecorder::new()
    }
}

impl SeriesRecorder {
    /// A recorder before the first reading.
    pub fn new() -> SeriesRecorder {
        SeriesRecorder { series: LatencySeries::new(), cycles: 0, missed: 0, max_ns: None, buckets: Vec::new() }
    }

    /// Keeps what `now` (a checkpoint taken `at_ns` after the start) added since the last
    /// reading, and says what that was.
    pub fn read(&mut self, now: &Summary, at_ns: i64) -> IntervalReading {
        let samples = now.cycles.saturating_sub(self.cycles);
        let missed = now.missed.saturating_sub(self.missed);
        let (grew, nonzero) = hdr::added(&now.counts, &self.buckets);
        let max = if samples == 0 {
            None
        } else if now.max_ns > self.max_ns {
            // The run's maximum rose in this interval: it is this interval's, exactly.
            now.max_ns
        } else {
            // The upper edge of the highest bucket that grew.
            grew.last()
                .map(|(i, _)| now.counts.layout().bounds(*i).1)
                .map(|hi| i64::try_from(hi).unwrap_or(i64::MAX).min(now.max_ns.unwrap_or(i64::MAX)))
        };
        let layout = now.counts.layout();
        let text = if grew.is_empty() { String::new() } else { hdr::encode_added(layout, &grew, max) };
        self.series.add_text(at_ns, samples, missed, max, Some(text));
        self.cycles = now.cycles;
        self.missed = now.missed;
        self.max_ns = now.max_ns.max(self.max_ns);
        self.buckets = nonzero;
        IntervalReading { at_ns, samples, missed, max_ns: max, added: Added::Buckets { layout, grew, max_ns: max } }
    }

    /// Says the series covers `at_ns` from the start (its last interval ends there).
    pub fn end_at(&mut self, at_ns: i64) {
        self.series.span_ns = self.series.span_ns.max(at_ns);
    }

    /// The series so far.
    pub fn series(&self) -> &LatencySeries {
        &self.series
    }

    /// The series, once measuring is over.
    pub fn finish(self) -> LatencySeries {
        self.series
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::histogram::Layout;
    use crate::measure::stats::{Live, Recorder};

    /// What the pipeline reads: a checkpoint of the live cells the probe records into.
    fn summary_of(live: &Live) -> Summary {
        live.checkpoint().expect("no probe is recording")
    }

    #[test]
    fn each_reading_keeps_what_its_interval_added() {
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        let mut s = SeriesRecorder::new();
        for v in [5_000, 40_000, 7_000] {
            rec.record(v, 0, 0);
        }
        s.read(&summary_of(&live), INTERVAL_NS);
        // Nothing in the second second.
        s.read(&summary_of(&live), 2 * INTERVAL_NS);
        // The third second's largest is below the run's maximum: its bucket's upper edge.
        for v in [12_345, 3_000] {
            rec.record(v, 0, 0);
        }
        s.read(&summary_of(&live), 3 * INTERVAL_NS);
        // The last, partial interval raises the maximum: exact.
        rec.record(41_234, 0, 2);
        s.read(&summary_of(&live), 3 * INTERVAL_NS + 400_000_000);
        let series = s.finish();
        assert_eq!(series.interval_ns, INTERVAL_NS);
        assert_eq!(series.samples, vec![3, 0, 2, 1]);
        assert_eq!(series.missed, vec![0, 0, 0, 2]);
        assert_eq!(series.max_ns, vec![Some(40_000), None, Some(13_000), Some(41_234)]);
        assert_eq!(series.span_ns, 3_400_000_000);
    }

    #[test]
    fn a_bucket_that_only_grew_below_the_top_gives_the_top_of_what_was_added() {
        let live = Live::new(Layout::DEFAULT);
        let mut rec = Recorder::new(&live, None);
        let mut s = SeriesRecorder::new();
        rec.record(90_000, 0, 0);
        rec.record(2_500, 0, 0);
        s.read(&summary_of(&live), INTERVAL_NS);
        rec.record(2_900, 0, 0);
        s.read(&summary_of(&live), 2 * INTERVAL_NS);
        assert_eq!(s.series().max_ns, vec![Some(90_000), Some(3_000)]);
    }

    #[test]
    fn a_long_series_merges_intervals_in_pairs_and_keeps_every_sum_and_maximum() {
        let mut series = LatencySeries::new();
        for k in 0..(MAX_POINTS as i64 + 1) {
            series.add((k + 1) * INTERVAL_NS, 10, (k % 2) as u64, Some(k), None);
        }
        assert_eq!(series.interval_ns, 2 * INTERVAL_NS);
        assert_eq!(series.samples.len(), MAX_POINTS / 2 + 1);
        assert_eq!(series.samples.iter().sum::<u64>(), 10 * (MAX_POINTS as u64 + 1));
        assert_eq!(series.missed.iter().sum::<u64>(), MAX_POINTS as u64 / 2);
        assert_eq!(series.max_ns[0], Some(1));
        assert_eq!(series.max_ns.last(), Some(&Some(MAX_POINTS as i64)));
        assert_eq!(series.samples.last(), Some(&10));
    }

    #[test]
    fn readings_between_interval_ends_land_in_the_interval_they_close() {
        let mut series = LatencySeries::new();
        series.add(0, 1, 0, Some(1), None);
        series.add(1, 1, 0, Some(2), None);
        series.add(INTERVAL_NS, 1, 0, Some(3), None);
        series.add(INTERVAL_NS + 1, 1, 0, Some(4), None);
        assert_eq!(series.samples, vec![3, 1]);
        assert_eq!(series.max_ns, vec![Some(3), Some(4)]);
    }
}
