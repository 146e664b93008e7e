//! Noise over time: for each CPU of noise runs, the noise of every interval of its series
//! (µs of noise per second of wall time), so a periodic interferer shows as a level and a
//! burst as a peak.

use super::{color, draw, err, Caption};
use crate::result::RunResult;
use crate::units::clip;
use plotters::prelude::*;

/// One CPU's noise per interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    /// Legend text.
    pub label: String,
    /// `(s since start, µs of noise per s)` at the middle of each interval.
    pub points: Vec<(f64, f64)>,
    /// The end of the last interval (s since start).
    pub end_s: f64,
}

/// The tracks of `r`'s CPUs (`prefix` names the input when several are drawn).
pub fn tracks(r: &RunResult, prefix: Option<&str>) -> Vec<Track> {
    r.threads
        .iter()
        .filter_map(|t| {
            let n = t.noise.as_ref()?;
            let points = points(&n.series);
            let cpu = t.cpu.map_or_else(|| format!("thread {}", t.thread), |c| format!("CPU {c}"));
            let label = match prefix {
                Some(p) => format!("{p}: {cpu} ({:.3} % available)", n.available_pct),
                None => format!("{cpu} ({:.3} % available)", n.available_pct),
            };
            let s = &n.series;
            let full = s.noise_ns.len() as i64 * s.interval_ns;
            let end_s = if s.span_ns > 0 { s.span_ns.min(full) } else { full } as f64 / 1e9;
            Some(Track { label, points, end_s })
        })
        .collect()
}

/// `(s since start, µs of noise per s)` at the middle of each interval of `s`; the last one
/// lasts only as far as the series' span, and its noise is divided by that.
pub fn points(s: &crate::result::NoiseSeries) -> Vec<(f64, f64)> {
    let width = s.interval_ns.max(1);
    let n = s.noise_ns.len() as i64;
    s.noise_ns
        .iter()
        .enumerate()
        .map(|(i, ns)| {
            let from = i as i64 * width;
            let mut to = from + width;
            if i as i64 == n - 1 && s.span_ns > from && s.span_ns < to {
                to = s.span_ns;
            }
            let len_s = (to - from) as f64 / 1e9;
            ((from + to) as f64 / 2e9, *ns as f64 / 1e3 / len_s)
        })
        .collect()
}

/// Draws the tracks (SVG text).
pub fn svg(caption: &Caption, tracks: &[Track]) -> Result<String, String> {
    let x_end = tracks.iter().map(|t| t.end_s).fold(1.0, f64::max);
    let y_top = tracks.iter().flat_map(|t| t.points.iter().map(|p| p.1)).fold(1.0, f64::max) * 1.1;
    draw(caption, |area| {
        let mut chart = super::frame(area).build_cartesian_2d(0f64..x_end, 0f64..y_top).map_err(err)?;
        super::axes(&mut chart.configure_mesh())
            .x_desc("Time since start (s)")
            .y_desc("Noise (µs per second)")
            .x_label_formatter(&super::plain)
            .y_label_formatter(&super::plain)
            .draw()
            .map_err(err)?;
        for (i, t) in tracks.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(t.points.iter().copied(), c.stroke_width(2)))
                .map_err(err)?
                .label(clip(&t.label, 70))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3)));
            chart.draw_series(t.points.iter().map(|p| Circle::new(*p, 3, c.filled()))).map_err(err)?;
        }
        super::legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_partial_interval_is_divided_by_its_own_length() {
        let s = crate::result::NoiseSeries {
            interval_ns: 1_000_000_000,
            noise_ns: vec![1_000_000, 1_000_000],
            count: vec![3, 3],
            span_ns: 1_500_000_000,
        };
        assert_eq!(points(&s), vec![(0.5, 1_000.0), (1.25, 2_000.0)], "1 ms in the last half second: 2 ms/s");
        let old = crate::result::NoiseSeries { span_ns: 0, ..s };
        assert_eq!(points(&old), vec![(0.5, 1_000.0), (1.5, 1_000.0)], "no span recorded: full intervals");
    }
}
