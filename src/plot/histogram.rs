//! The OSADL-style latency histogram: latency (µs, linear) across, samples (log) up, one line
//! per thread or input, each thread's maximum marked.

use super::{at_least, color, draw, err, log_label, log_top, Caption, FAMILY};
use crate::result::{Stats, Unbinned};
use crate::units::clip;
use plotters::prelude::*;

/// One line of the histogram.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Non-empty buckets `(lo_ns, hi_ns, count)`, ascending.
    pub buckets: Vec<(u64, u64, u64)>,
    /// The largest sample (ns), when known.
    pub max_ns: Option<i64>,
    /// Samples beyond the histogram (imported cyclictest overflows).
    pub unbinned: Option<Unbinned>,
}

impl Series {
    /// The series of one thread's (or the aggregate's) statistics; `None` without a histogram.
    pub fn of(label: String, s: &Stats) -> Option<Series> {
        let h = s.histogram.as_ref()?;
        Some(Series {
            label,
            buckets: h.buckets.iter().map(|b| (b.lo_ns, b.hi_ns, b.count)).collect(),
            max_ns: s.max_ns,
            unbinned: h.unbinned.filter(|u| u.count > 0),
        })
    }
}

/// Where the line goes: each bucket's count at its lower edge (µs), dropping to the floor
/// across empty buckets so gaps read as gaps on the log axis.
pub fn line(s: &Series, floor: f64) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(s.buckets.len() * 2 + 2);
    let mut prev_hi: Option<u64> = None;
    for &(lo, hi, count) in &s.buckets {
        if prev_hi != Some(lo) {
            if let Some(p) = prev_hi {
                pts.push((p as f64 / 1e3, floor));
            }
            pts.push((lo as f64 / 1e3, floor));
        }
        pts.push((lo as f64 / 1e3, count as f64));
        pts.push((hi as f64 / 1e3, count as f64));
        prev_hi = Some(hi);
    }
    if let Some(p) = prev_hi {
        pts.push((p as f64 / 1e3, floor));
    }
    pts
}

/// Draws the histogram of `series` (SVG text).
pub fn svg(caption: &Caption, series: &[Series]) -> Result<String, String> {
    let floor = 0.7;
    let x_max = series
        .iter()
        .flat_map(|s| {
            let top = s.buckets.last().map(|b| b.1 as f64);
            let u = s.unbinned.map(|u| u.at_least_ns as f64);
            [s.max_ns.map(|m| m as f64), top, u]
        })
        .flatten()
        .fold(1000.0_f64, f64::max)
        / 1e3;
    let x_max = x_max * 1.04 + 1.0;
    let y_max = series.iter().flat_map(|s| s.buckets.iter().map(|b| b.2)).max().unwrap_or(1) as f64;
    let y_top = log_top(y_max, 1.0);
    draw(caption, |area| {
        let mut chart = super::frame(area).build_cartesian_2d(0f64..x_max, (floor..y_top).log_scale()).map_err(err)?;
        super::axes(&mut chart.configure_mesh())
            .x_desc("Latency (µs)")
            .y_desc("Samples per bucket")
            .x_label_formatter(&super::plain)
            .y_label_formatter(&log_label)
            .draw()
            .map_err(err)?;
        for (i, s) in series.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(line(s, floor), c.stroke_width(2)))
                .map_err(err)?
                .label(clip(&s.label, 60))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)));
            if let Some(max) = s.max_ns {
                let x = max as f64 / 1e3;
                let y_mark = y_top / 3f64.powi(i as i32 + 1);
                let text = format!("max {} µs", crate::units::us_short(max as f64));
                let dx = if x > x_max * 0.8 { -10 - 8 * text.chars().count() as i32 } else { 6 };
                chart
                    .draw_series([PathElement::new(vec![(x, floor), (x, y_mark)], c.mix(0.8).stroke_width(1))])
                    .map_err(err)?;
                chart
                    .draw_series([EmptyElement::at((x, y_mark))
                        + TriangleMarker::new((0, 0), 6, c.filled())
                        + Text::new(text, (dx, -8), (FAMILY, 14).into_font().color(&c))])
                    .map_err(err)?;
            }
            if let Some(u) = s.unbinned {
                let x = u.at_least_ns as f64 / 1e3;
                let y = at_least(u.count as f64, floor);
                chart
                    .draw_series([EmptyElement::at((x, y))
                        + Circle::new((0, 0), 5, c.filled())
                        + Text::new(
                            format!("{} beyond the histogram (≥ {} µs)", u.count, crate::units::us_short(x * 1e3)),
                            (-10, -20),
                            (FAMILY, 14).into_font().color(&c),
                        )])
                    .map_err(err)?;
            }
        }
        super::legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_steps_over_each_bucket_and_drops_to_the_floor_across_gaps() {
        let s = Series {
            label: "t".into(),
            buckets: vec![(1000, 2000, 5), (2000, 3000, 2), (5000, 6000, 1)],
            max_ns: Some(5500),
            unbinned: None,
        };
        assert_eq!(
            line(&s, 0.5),
            vec![
                (1.0, 0.5),
                (1.0, 5.0),
                (2.0, 5.0),
                (2.0, 2.0),
                (3.0, 2.0),
                (3.0, 0.5),
                (5.0, 0.5),
                (5.0, 1.0),
                (6.0, 1.0),
                (6.0, 0.5)
            ]
        );
    }
}
