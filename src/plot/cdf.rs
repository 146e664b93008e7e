//! The tail plot: latency (µs, log) against the percentile on a log "1 − P" axis, so p90,
//! p99, p99.9, p99.99 and p99.999 are equally spaced; one curve per thread or per input, the
//! reported percentiles marked on it.

use super::{at_least, color, draw, err, log_bottom, log_label, log_top, Caption};
use crate::result::Stats;
use crate::units::clip;
use plotters::prelude::*;

/// One curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Non-empty buckets `(hi_ns, count)`, ascending (an imported overflow is one more bucket
    /// at its lower bound).
    pub buckets: Vec<(u64, u64)>,
    /// The largest sample (ns), when known; steps are capped at it.
    pub max_ns: Option<i64>,
    /// The percentiles reported in the tables `(q in %, ns)`, marked on the curve.
    pub marks: Vec<(f64, i64)>,
}

impl Series {
    /// The curve of one thread's (or the aggregate's) statistics; `None` without a histogram.
    pub fn of(label: String, s: &Stats) -> Option<Series> {
        let h = s.histogram.as_ref()?;
        let mut buckets: Vec<(u64, u64)> = h.buckets.iter().map(|b| (b.hi_ns, b.count)).collect();
        let mut label = label;
        if let Some(u) = h.unbinned.filter(|u| u.count > 0) {
            buckets.push((u.at_least_ns, u.count));
            label += &format!(
                " ({} ≥ {} µs)",
                crate::units::count(u.count, "overflow"),
                crate::units::us_short(u.at_least_ns as f64)
            );
        }
        let mut marks: Vec<(f64, i64)> =
            s.percentiles_ns.iter().filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, (*v)?))).collect();
        marks.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(Series { label, buckets, max_ns: s.max_ns, marks })
    }

    /// Samples on the curve.
    pub fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.1).sum()
    }
}

/// The x position of the fraction `p` (0 ≤ p < 1): −log10(1 − p); 90 % → 1, 99.9 % → 3.
pub fn x_of(p: f64) -> f64 {
    -(1.0 - p).log10()
}

/// The tick label at `x`: the percentile `100·(1 − 10^−x)`, e.g. `p99.9`.
pub fn tick_label(x: &f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let s = format!("{p:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("p{s}")
}

/// The steps of the curve `(x, µs)`: the nearest-rank percentile is a bucket's upper edge over
/// the whole range of fractions that end in that bucket; the last step (which holds the
/// maximum) ends at x = log10(n), the rank of one sample in n.
pub fn steps(s: &Series) -> Vec<(f64, f64)> {
    let n = s.total();
    if n == 0 {
        return vec![];
    }
    let x_end = (n as f64).log10().max(0.0);
    let cap = |hi: u64| s.max_ns.map_or(hi as f64, |m| (hi as f64).min(m as f64)) / 1e3;
    let mut pts = Vec::with_capacity(s.buckets.len() * 2);
    let mut cum = 0u64;
    for &(hi, count) in &s.buckets {
        let x0 = x_of(cum as f64 / n as f64);
        cum += count;
        let x1 = if cum >= n { x_end } else { x_of(cum as f64 / n as f64) };
        let y = cap(hi);
        pts.push((x0, y));
        pts.push((x1.max(x0), y));
    }
    // Overflows are drawn at their lower bound; the maximum is the one-in-n sample.
    if let (Some(m), Some(&(_, y))) = (s.max_ns, pts.last()) {
        if (m as f64 / 1e3) > y {
            pts.push((x_end, m as f64 / 1e3));
        }
    }
    pts
}

/// Draws the curves (SVG text).
pub fn svg(caption: &Caption, series: &[Series], quantity: &str) -> Result<String, String> {
    let all: Vec<Vec<(f64, f64)>> = series.iter().map(steps).collect();
    let x_end = all.iter().flatten().map(|p| p.0).fold(2.0_f64, f64::max).ceil();
    let ys = all.iter().flatten().map(|p| p.1);
    let y_min = ys.clone().filter(|y| *y > 0.0).fold(f64::INFINITY, f64::min);
    let y_lo = log_bottom(if y_min.is_finite() { y_min } else { 1.0 });
    let y_top = log_top(ys.fold(0.0, f64::max), y_lo);
    draw(caption, |area| {
        let mut chart = super::frame(area).build_cartesian_2d(0f64..x_end, (y_lo..y_top).log_scale()).map_err(err)?;
        super::axes(&mut chart.configure_mesh())
            .x_labels(x_end as usize + 1)
            .x_label_formatter(&tick_label)
            .y_label_formatter(&log_label)
            .x_desc("Percentile (log scale of 1 − P)")
            .y_desc(format!("{quantity} (µs)"))
            .draw()
            .map_err(err)?;
        for (i, (s, pts)) in series.iter().zip(&all).enumerate() {
            let c = color(i);
            let pts: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x, at_least(y, y_lo))).collect();
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(err)?
                .label(clip(&s.label, 60))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)));
            let n = s.total() as f64;
            let marks = s
                .marks
                .iter()
                .filter(|(q, _)| n > 0.0 && x_of(q / 100.0) <= n.log10() + 1e-9)
                .map(|&(q, v)| Circle::new((x_of(q / 100.0), at_least(v as f64 / 1e3, y_lo)), 4, c.filled()));
            chart.draw_series(marks).map_err(err)?;
        }
        super::legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_read_as_percentiles() {
        assert_eq!(tick_label(&0.0), "p0");
        assert_eq!(tick_label(&1.0), "p90");
        assert_eq!(tick_label(&3.0), "p99.9");
        assert_eq!(tick_label(&5.0), "p99.999");
        assert!((x_of(0.99) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn steps_hold_each_bucket_edge_until_its_rank_and_end_at_one_sample_in_n() {
        // 100 samples: 90 below 2 µs, 9 below 3 µs, 1 below 50 µs with the max at 42 µs.
        let s = Series {
            label: "t".into(),
            buckets: vec![(2000, 90), (3000, 9), (50_000, 1)],
            max_ns: Some(42_000),
            marks: vec![],
        };
        let st = steps(&s);
        assert_eq!(st.len(), 6);
        assert_eq!(st[0], (0.0, 2.0));
        assert!((st[1].0 - 1.0).abs() < 1e-12 && st[1].1 == 2.0);
        assert!((st[3].0 - 2.0).abs() < 1e-12 && st[3].1 == 3.0);
        assert_eq!(st[5], (2.0, 42.0));
    }

    #[test]
    fn overflows_sit_at_their_lower_bound_and_the_curve_ends_at_the_max() {
        let s =
            Series { label: "t".into(), buckets: vec![(2000, 9), (40_000, 1)], max_ns: Some(193_000), marks: vec![] };
        let st = steps(&s);
        assert_eq!(st[3], (1.0, 40.0));
        assert_eq!(st[4], (1.0, 193.0));
    }
}
