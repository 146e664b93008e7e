//! The latency histogram: latency (µs) across, samples (log) up, one line per thread or input,
//! each thread's maximum marked. By default the latency axis is logarithmic, so the body of the
//! distribution (a few µs) and its tail (milliseconds) are both readable; `linear` keeps
//! OSADL's look, where the tail sets the scale and the body hugs the axis.

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

/// The left end of a logarithmic latency axis (µs): a power of ten at or below the smallest
/// non-empty bucket's upper edge, never below 0.1 µs (a bucket from 0 is drawn from there).
fn log_x_start(series: &[Series]) -> f64 {
    let lowest = series.iter().filter_map(|s| s.buckets.first()).map(|b| b.1 as f64 / 1e3).fold(f64::MAX, f64::min);
    super::log_bottom(if lowest == f64::MAX { 1.0 } else { lowest / 2.0 }).max(0.1)
}

/// Draws the histogram of `series` (SVG text), the latency axis logarithmic unless `linear`.
/// `quantity` names what the samples are (`Latency`, `Noise gap`).
pub fn svg(caption: &Caption, series: &[Series], linear: bool, quantity: &str) -> Result<String, String> {
    if linear {
        draw_on(caption, series, None, quantity)
    } else {
        draw_on(caption, series, Some(log_x_start(series)), quantity)
    }
}

fn draw_on(caption: &Caption, series: &[Series], log_from: Option<f64>, quantity: &str) -> Result<String, String> {
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
    let y_max = series.iter().flat_map(|s| s.buckets.iter().map(|b| b.2)).max().unwrap_or(1) as f64;
    let y_top = log_top(y_max, 1.0);
    match log_from {
        None => {
            let x_max = x_max * 1.04 + 1.0;
            draw(caption, |area| {
                let mut chart =
                    super::frame(area).build_cartesian_2d(0f64..x_max, (floor..y_top).log_scale()).map_err(err)?;
                super::axes(&mut chart.configure_mesh())
                    .x_desc(format!("{quantity} (µs)"))
                    .y_desc("Samples per bucket")
                    .x_label_formatter(&super::plain)
                    .y_label_formatter(&log_label)
                    .draw()
                    .map_err(err)?;
                lines(&mut chart, series, floor, y_top, |x| x, |x| x / x_max)
            })
        }
        Some(x_lo) => {
            let x_hi = log_top(x_max, x_lo);
            draw(caption, |area| {
                let mut chart = super::frame(area)
                    .build_cartesian_2d((x_lo..x_hi).log_scale(), (floor..y_top).log_scale())
                    .map_err(err)?;
                super::axes(&mut chart.configure_mesh())
                    .x_desc(format!("{quantity} (µs, logarithmic)"))
                    .y_desc("Samples per bucket")
                    .x_label_formatter(&log_label)
                    .y_label_formatter(&log_label)
                    .draw()
                    .map_err(err)?;
                lines(
                    &mut chart,
                    series,
                    floor,
                    y_top,
                    move |x: f64| x.max(x_lo),
                    move |x: f64| (x / x_lo).ln() / (x_hi / x_lo).ln(),
                )
            })
        }
    }
}

/// Draws every series' line, its maximum and its overflows on `chart`; `at` places a latency
/// on the x axis (a log axis clamps latencies below its start), `across` says how far across
/// the axis it lies (0 to 1), so a label near the right edge is drawn to the left.
fn lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    series: &[Series],
    floor: f64,
    y_top: f64,
    at: impl Fn(f64) -> f64,
    across: impl Fn(f64) -> f64,
) -> Result<(), String>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        let pts: Vec<(f64, f64)> = line(s, floor).into_iter().map(|(x, y)| (at(x), y)).collect();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(err)?
            .label(clip(&s.label, 60))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)));
        if let Some(max) = s.max_ns {
            let x = at(max as f64 / 1e3);
            let y_mark = y_top / 3f64.powi(i as i32 + 1);
            let text = format!("max {} µs", crate::units::us_short(max as f64));
            let dx = if across(x) > 0.75 { -10 - 8 * text.chars().count() as i32 } else { 6 };
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
            let x = at(u.at_least_ns as f64 / 1e3);
            let y = at_least(u.count as f64, floor);
            chart
                .draw_series([EmptyElement::at((x, y))
                    + Circle::new((0, 0), 5, c.filled())
                    + Text::new(
                        format!(
                            "{} beyond the histogram (≥ {} µs)",
                            u.count,
                            crate::units::us_short(u.at_least_ns as f64)
                        ),
                        (-10, -20),
                        (FAMILY, 14).into_font().color(&c),
                    )])
                .map_err(err)?;
        }
    }
    super::legend(chart, SeriesLabelPosition::UpperRight)
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
