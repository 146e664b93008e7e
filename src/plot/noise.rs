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
}

/// The tracks of `r`'s CPUs (`prefix` names the input when several are drawn).
pub fn tracks(r: &RunResult, prefix: Option<&str>) -> Vec<Track> {
    r.threads
        .iter()
        .filter_map(|t| {
            let n = t.noise.as_ref()?;
            let s = &n.series;
            let width = s.interval_ns.max(1) as f64;
            let points = s
                .noise_ns
                .iter()
                .enumerate()
                .map(|(i, ns)| ((i as f64 + 0.5) * width / 1e9, *ns as f64 / 1e3 / (width / 1e9)))
                .collect();
            let cpu = t.cpu.map_or_else(|| format!("thread {}", t.thread), |c| format!("CPU {c}"));
            let label = match prefix {
                Some(p) => format!("{p}: {cpu} ({:.3} % available)", n.available_pct),
                None => format!("{cpu} ({:.3} % available)", n.available_pct),
            };
            Some(Track { label, points })
        })
        .collect()
}

/// Draws the tracks (SVG text).
pub fn svg(caption: &Caption, tracks: &[Track]) -> Result<String, String> {
    // The last interval's end: its middle plus half an interval (the first point's time).
    let x_end = tracks.iter().flat_map(|t| Some(t.points.last()?.0 + t.points.first()?.0)).fold(1.0, f64::max);
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
