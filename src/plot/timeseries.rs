//! Latency over time, from a samples file or from a run's series. Samples are streamed into
//! one bin per pixel column, each keeping its minimum and maximum, so a million samples cost a
//! few kilobytes and no spike is averaged away: the upper line is the largest sample of each
//! column. A run's series (the largest latency of each interval, see
//! [`crate::measure::series`]) fills the same bins with its maxima — OSADL's view of a long
//! run — and, when the series keeps each interval's histogram (HdrHistogram), a shaded band from
//! the p50 to the p99 of the intervals each column holds, merged.

use super::{at_least, color, draw, err, log_bottom, log_label, log_top, Caption, FAMILY};
use crate::measure::hdr::Hdr;
use crate::units::clip;
use plotters::prelude::*;

/// Bins per picture (about one per pixel column of the chart).
pub const BINS: usize = 1000;

/// One thread's bins.
#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    /// Legend text.
    pub label: String,
    /// `(min_ns, max_ns)` of each bin; `None` for a bin without samples.
    pub bins: Vec<Option<(i64, i64)>>,
    /// `(p50_ns, p99_ns)` of each bin's merged interval histograms; empty when the track has
    /// none (a samples file, a series without histograms).
    pub bands: Vec<Option<(i64, i64)>>,
    /// The largest sample and its wake time (ns).
    pub max: Option<(i64, i64)>,
    /// Samples.
    pub count: u64,
    /// Intervals added (a series' points; 0 for samples).
    pub intervals: usize,
}

/// The quantiles a band spans.
pub const BAND: (f64, f64) = (0.50, 0.99);

/// What a picture's points are made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// Every sample (a samples file): each column's minimum and maximum.
    Samples,
    /// A series' intervals of this length (ns): each column's largest latency only.
    Intervals(i64),
}

/// Streams samples into per-thread bins over `[0, t_end_ns]`.
#[derive(Clone, Debug)]
pub struct Binner {
    t_end_ns: i64,
    tracks: Vec<Track>,
    /// Per track, the bin whose interval histograms are being merged, and their merge.
    open: Vec<Option<(usize, Hdr)>>,
}

impl Binner {
    /// Bins for tracks named `labels` over `[0, t_end_ns]` (the largest wake time).
    pub fn new(labels: Vec<String>, t_end_ns: i64) -> Binner {
        let tracks: Vec<Track> = labels
            .into_iter()
            .map(|label| Track { label, bins: vec![None; BINS], bands: vec![], max: None, count: 0, intervals: 0 })
            .collect();
        let open = vec![None; tracks.len()];
        Binner { t_end_ns: t_end_ns.max(1), tracks, open }
    }

    /// The bin of wake time `t`.
    pub fn bin_of(&self, t: i64) -> usize {
        let i = (t.max(0) as i128 * BINS as i128 / (self.t_end_ns as i128 + 1)) as usize;
        i.min(BINS - 1)
    }

    /// Adds one sample of track `track` (ignored when out of range).
    pub fn add(&mut self, track: usize, wake_ns: i64, latency_ns: i64) {
        let i = self.bin_of(wake_ns);
        let Some(t) = self.tracks.get_mut(track) else { return };
        t.count += 1;
        t.bins[i] = Some(match t.bins[i] {
            Some((lo, hi)) => (lo.min(latency_ns), hi.max(latency_ns)),
            None => (latency_ns, latency_ns),
        });
        if t.max.is_none_or(|(m, _)| latency_ns > m) {
            t.max = Some((latency_ns, wake_ns));
        }
    }

    /// Adds one interval of a series to track `track`: `samples` samples whose largest is
    /// `max_ns`, over `[start_ns, start_ns + len_ns)` (every bin it covers gets the maximum).
    pub fn add_interval(&mut self, track: usize, start_ns: i64, len_ns: i64, samples: u64, max_ns: i64) {
        let (first, last) = (self.bin_of(start_ns), self.bin_of(start_ns + len_ns.max(1) - 1));
        let Some(t) = self.tracks.get_mut(track) else { return };
        t.count += samples;
        t.intervals += 1;
        for b in &mut t.bins[first..=last] {
            *b = Some(b.map_or((max_ns, max_ns), |(lo, hi)| (lo.max(max_ns), hi.max(max_ns))));
        }
        if t.max.is_none_or(|(m, _)| max_ns > m) {
            t.max = Some((max_ns, start_ns));
        }
    }

    /// Adds the histogram of the interval `[start_ns, start_ns + len_ns)` of track `track` to
    /// the bands: each bin's band is the p50 and p99 of the merge of every interval it holds.
    /// Intervals come in time order.
    pub fn add_histogram(&mut self, track: usize, start_ns: i64, len_ns: i64, h: &Hdr) {
        if h.is_empty() || track >= self.tracks.len() {
            return;
        }
        let (first, last) = (self.bin_of(start_ns), self.bin_of(start_ns + len_ns.max(1) - 1));
        match &mut self.open[track] {
            Some((bin, merged)) if *bin == first => {
                let _ = merged.add(h);
            }
            open => {
                let previous = open.replace((first, h.clone()));
                self.close(track, previous);
            }
        }
        if last > first {
            // The bins strictly inside hold this interval alone; the last may share with the next.
            let previous = self.open[track].replace((last, h.clone()));
            self.close(track, previous);
            let band = quantiles(h);
            let t = &mut self.tracks[track];
            t.bands.resize(BINS, None);
            t.bands[first + 1..last].iter_mut().for_each(|b| *b = Some(band));
        }
    }

    /// Writes a merged bin's band.
    fn close(&mut self, track: usize, open: Option<(usize, Hdr)>) {
        if let Some((bin, merged)) = open {
            let t = &mut self.tracks[track];
            t.bands.resize(BINS, None);
            t.bands[bin] = Some(quantiles(&merged));
        }
    }

    /// Sets where track `track`'s largest latency is marked (when known more exactly than
    /// its interval).
    pub fn mark_max(&mut self, track: usize, max_ns: i64, at_ns: i64) {
        if let Some(t) = self.tracks.get_mut(track) {
            t.max = Some((max_ns, at_ns.clamp(0, self.t_end_ns)));
        }
    }

    /// The tracks and the time span.
    pub fn finish(mut self) -> (Vec<Track>, i64) {
        for track in 0..self.tracks.len() {
            let open = self.open[track].take();
            self.close(track, open);
        }
        (self.tracks, self.t_end_ns)
    }
}

/// A histogram's band: its p50 and p99 (ns).
fn quantiles(h: &Hdr) -> (i64, i64) {
    let at = |q: f64| i64::try_from(h.value_at_quantile(q)).unwrap_or(i64::MAX);
    (at(BAND.0), at(BAND.1))
}

/// The unit of a time axis `t_end_ns` long, and its length in ns: seconds up to two hours,
/// hours up to three days (OSADL's 24 h), days beyond (a week).
pub fn time_unit(t_end_ns: i64) -> (&'static str, f64) {
    const HOUR: i64 = 3_600_000_000_000;
    match t_end_ns {
        t if t <= 2 * HOUR => ("s", 1e9),
        t if t <= 72 * HOUR => ("h", 3.6e12),
        _ => ("days", 8.64e13),
    }
}

/// Time of the middle of bin `i`, in units of `unit_ns`.
fn bin_time(i: usize, t_end_ns: i64, unit_ns: f64) -> f64 {
    (i as f64 + 0.5) * (t_end_ns as f64 + 1.0) / BINS as f64 / unit_ns
}

/// A polyline `(time, µs)`.
pub type Line = Vec<(f64, f64)>;

/// Runs of consecutive non-empty entries of `bins` as pairs of lines `(time in units of
/// unit_ns, µs)`: one of the first values, one of the second.
pub fn lines(bins: &[Option<(i64, i64)>], t_end_ns: i64, unit_ns: f64, floor: f64) -> Vec<(Line, Line)> {
    let mut out: Vec<(Line, Line)> = Vec::new();
    let mut open = false;
    for (i, b) in bins.iter().enumerate() {
        match b {
            Some((lo, hi)) => {
                if !open {
                    out.push((vec![], vec![]));
                    open = true;
                }
                let x = bin_time(i, t_end_ns, unit_ns);
                let run = out.last_mut().expect("opened above");
                run.0.push((x, at_least(*lo as f64 / 1e3, floor)));
                run.1.push((x, at_least(*hi as f64 / 1e3, floor)));
            }
            None => open = false,
        }
    }
    out
}

/// The x axis' description.
fn x_desc(tracks: &[Track], resolution: Resolution, unit: &str) -> String {
    match resolution {
        Resolution::Samples => {
            let n = tracks.iter().map(|t| t.count).max().unwrap_or(0);
            format!(
                "Time since start ({unit}) — each column: min and max of {} samples or fewer",
                n.div_ceil(BINS as u64).max(1)
            )
        }
        Resolution::Intervals(ns) => {
            let band = if tracks.iter().any(|t| !t.bands.is_empty()) { "; shaded: its p50 to p99" } else { "" };
            format!(
                "Time since start ({unit}) — each point: the largest latency of {}{band}",
                crate::units::duration(ns)
            )
        }
    }
}

/// Draws latency over time (SVG text); `threshold_ns` adds a horizontal line.
pub fn svg(
    caption: &Caption,
    tracks: &[Track],
    t_end_ns: i64,
    threshold_ns: Option<i64>,
    resolution: Resolution,
) -> Result<String, String> {
    let highs = tracks.iter().flat_map(|t| t.bins.iter().flatten().map(|b| b.1 as f64 / 1e3));
    let lows = tracks.iter().flat_map(|t| t.bins.iter().chain(&t.bands).flatten().map(|b| b.0 as f64 / 1e3));
    let y_lo = log_bottom(lows.filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min).min(1e9));
    let top = highs.fold(threshold_ns.map_or(0.0, |t| t as f64 / 1e3), f64::max);
    let y_top = log_top(top, y_lo);
    let (unit, unit_ns) = time_unit(t_end_ns);
    let x_end = (t_end_ns as f64 / unit_ns).max(1e-6);
    draw(caption, |area| {
        let mut chart = super::frame(area).build_cartesian_2d(0f64..x_end, (y_lo..y_top).log_scale()).map_err(err)?;
        super::axes(&mut chart.configure_mesh())
            .x_desc(x_desc(tracks, resolution, unit))
            .y_desc("Latency (µs)")
            .y_label_formatter(&log_label)
            .draw()
            .map_err(err)?;
        let scale = Scale { t_end_ns, unit, unit_ns, x_end, y_lo };
        for (i, t) in tracks.iter().enumerate() {
            track(&mut chart, i, t, resolution, &scale)?;
        }
        if let Some(th) = threshold_ns {
            let y = at_least(th as f64 / 1e3, y_lo);
            let red = RGBColor(200, 0, 0);
            chart
                .draw_series(DashedLineSeries::new([(0.0, y), (x_end, y)], 8, 6, red.stroke_width(2)))
                .map_err(err)?
                .label(format!("threshold {} µs", crate::units::us_short(th as f64)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], red.stroke_width(2)));
        }
        super::legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
}

/// Where a picture's points go: the run's span, the time unit, the axes' ends.
struct Scale {
    t_end_ns: i64,
    unit: &'static str,
    unit_ns: f64,
    x_end: f64,
    y_lo: f64,
}

type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::combinators::LogCoord<f64>>,
>;

/// Draws track `i`: its band, its lines (labelled once) and its largest latency.
fn track(chart: &mut Chart, i: usize, t: &Track, resolution: Resolution, s: &Scale) -> Result<(), String> {
    let c = color(i);
    for (p50, p99) in lines(&t.bands, s.t_end_ns, s.unit_ns, s.y_lo) {
        let outline: Vec<(f64, f64)> = p50.iter().chain(p99.iter().rev()).copied().collect();
        chart.draw_series([Polygon::new(outline, c.mix(0.18).filled())]).map_err(err)?;
        chart.draw_series(LineSeries::new(p50, c.mix(0.5).stroke_width(1))).map_err(err)?;
    }
    for (k, (low, high)) in lines(&t.bins, s.t_end_ns, s.unit_ns, s.y_lo).into_iter().enumerate() {
        // A series knows each interval's largest latency, not its smallest.
        if resolution == Resolution::Samples {
            chart.draw_series(LineSeries::new(low, c.mix(0.45).stroke_width(1))).map_err(err)?;
        }
        let drawn = chart.draw_series(LineSeries::new(high, c.stroke_width(1))).map_err(err)?;
        if k == 0 {
            drawn
                .label(clip(&t.label, 60))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)));
        }
    }
    if let Some((m, at)) = t.max {
        let x = at as f64 / s.unit_ns;
        let when = if s.unit == "s" { format!("{x:.3} s") } else { format!("{x:.2} {}", s.unit) };
        let text = format!("max {} µs at {when}", crate::units::us_short(m as f64));
        let dx = if x > s.x_end * 0.7 { -8 - 8 * text.chars().count() as i32 } else { 8 };
        chart
            .draw_series([EmptyElement::at((x, at_least(m as f64 / 1e3, s.y_lo)))
                + TriangleMarker::new((0, 0), 6, c.filled())
                + Text::new(text, (dx, -8 - 18 * i as i32), (FAMILY, 14).into_font().color(&c))])
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_keep_the_min_and_max_of_their_samples_and_the_overall_max() {
        let mut b = Binner::new(vec!["a".into(), "b".into()], 999_999);
        assert_eq!((b.bin_of(0), b.bin_of(999), b.bin_of(1000), b.bin_of(999_999)), (0, 0, 1, BINS - 1));
        b.add(0, 10, 5);
        b.add(0, 20, 50);
        b.add(0, 5000, 7);
        b.add(1, 999_999, -3);
        b.add(7, 0, 1);
        let (t, end) = b.finish();
        assert_eq!(end, 999_999);
        assert_eq!(t[0].bins[0], Some((5, 50)));
        assert_eq!(t[0].bins[5], Some((7, 7)));
        assert_eq!(t[0].bins[1], None);
        assert_eq!((t[0].max, t[0].count), (Some((50, 20)), 3));
        assert_eq!(t[1].bins[BINS - 1], Some((-3, -3)));
    }

    #[test]
    fn an_interval_fills_every_bin_it_covers_with_its_largest_latency() {
        // 10 intervals of 100 ns over 1000 ns: each covers 100 bins.
        let mut b = Binner::new(vec!["a".into()], 999);
        b.add_interval(0, 0, 100, 7, 5_000);
        b.add_interval(0, 300, 100, 2, 9_000);
        b.add_interval(0, 300, 100, 1, 4_000);
        b.mark_max(0, 9_000, 333);
        let (t, _) = b.finish();
        assert_eq!(t[0].bins[..100].iter().flatten().count(), 100);
        assert!(t[0].bins[..100].iter().all(|x| *x == Some((5_000, 5_000))));
        assert_eq!(t[0].bins[100..300].iter().flatten().count(), 0);
        assert!(t[0].bins[300..400].iter().all(|x| *x == Some((9_000, 9_000))));
        assert_eq!((t[0].count, t[0].max), (10, Some((9_000, 333))));
    }

    fn hdr_of(values: &[(u64, u64)]) -> Hdr {
        let mut h = crate::measure::hdr::empty();
        values.iter().for_each(|(v, n)| h.record_n(*v, *n).unwrap());
        h
    }

    #[test]
    fn a_bins_band_is_the_p50_and_p99_of_every_interval_it_holds_merged() {
        // 1000 ns over 1000 bins: intervals of 1 ns share a bin with nothing, of 300 ns cover 300.
        let mut b = Binner::new(vec!["a".into(), "b".into()], 999);
        // Bin 0 holds two intervals: 98 samples at 1 µs and 2 at 5 µs, merged: p50 1 µs, p99 5 µs.
        b.add_histogram(0, 0, 1, &hdr_of(&[(1_000, 98)]));
        b.add_histogram(0, 0, 1, &hdr_of(&[(5_000, 2)]));
        // Bins 100..=399 hold one interval: its own quantiles.
        b.add_histogram(0, 100, 300, &hdr_of(&[(2_000, 50), (9_000, 50)]));
        b.add_histogram(1, 0, 1, &crate::measure::hdr::empty());
        let (t, _) = b.finish();
        let top = |v: u64| hdr_of(&[(v, 1)]).highest_equivalent(v) as i64;
        assert_eq!(t[0].bands[0], Some((top(1_000), top(5_000))));
        assert_eq!(t[0].bands[1..100].iter().flatten().count(), 0);
        assert!(t[0].bands[100..400].iter().all(|x| *x == Some((top(2_000), top(9_000)))));
        assert_eq!(t[0].bands[400..].iter().flatten().count(), 0);
        assert!(t[1].bands.is_empty(), "an empty interval draws no band");
    }

    #[test]
    fn the_time_axis_counts_seconds_to_two_hours_then_hours_to_three_days_then_days() {
        let hour = 3_600_000_000_000;
        assert_eq!(time_unit(30_000_000_000).0, "s");
        assert_eq!(time_unit(2 * hour).0, "s");
        assert_eq!(time_unit(24 * hour).0, "h");
        assert_eq!(time_unit(7 * 24 * hour), ("days", 8.64e13));
    }

    #[test]
    fn lines_break_across_empty_bins() {
        let mut b = Binner::new(vec!["a".into()], 999_999);
        b.add(0, 0, 2000);
        b.add(0, 1000, 3000);
        b.add(0, 5000, 1000);
        let (t, end) = b.finish();
        let runs = lines(&t[0].bins, end, 1e9, 0.1);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].1.iter().map(|p| p.1).collect::<Vec<_>>(), vec![2.0, 3.0]);
        assert_eq!(runs[1].0.len(), 1);
    }
}
