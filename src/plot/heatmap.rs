//! A latency heatmap: time across, latency buckets up (one row per bucket of the exposition,
//! so rows are logarithmic in latency), the colour the number of wakeups (logarithmic: one
//! wakeup in a thousand still shows).

use super::{draw, err, Caption};
use plotters::prelude::*;

/// The colour of `n` wakeups where the busiest cell has `max`.
fn shade(n: u64, max: u64) -> RGBColor {
    if n == 0 {
        return WHITE;
    }
    let f = ((n as f64).ln_1p() / (max.max(1) as f64).ln_1p()).clamp(0.0, 1.0);
    // White → orange → dark red.
    let lerp = |a: f64, b: f64, t: f64| (a + (b - a) * t) as u8;
    if f < 0.5 {
        let t = f * 2.0;
        RGBColor(255, lerp(240.0, 140.0, t), lerp(220.0, 0.0, t))
    } else {
        let t = (f - 0.5) * 2.0;
        RGBColor(lerp(255.0, 120.0, t), lerp(140.0, 0.0, t), 0)
    }
}

/// The label of a bucket bound (ns): `20 µs`, `1.5 ms`, `+Inf`.
fn bound_label(ns: u64) -> String {
    if ns == u64::MAX {
        "+Inf".into()
    } else {
        crate::units::duration(ns as i64)
    }
}

/// Draws the heatmap (SVG text): `times` (s, any origin), `bounds_ns` (ascending, +Inf last as
/// `u64::MAX`), `counts[time][bucket]`, each the wakeups of the `width_s` seconds before it.
pub fn svg(
    caption: &Caption,
    times: &[f64],
    bounds_ns: &[u64],
    counts: &[Vec<u64>],
    width_s: u64,
) -> Result<String, String> {
    // Rows from the first bucket with a wakeup to the last.
    let used = |b: usize| counts.iter().any(|row| row.get(b).is_some_and(|n| *n > 0));
    let lo = (0..bounds_ns.len()).find(|b| used(*b)).unwrap_or(0);
    let hi = (0..bounds_ns.len()).rev().find(|b| used(*b)).unwrap_or(0).max(lo);
    let max = counts.iter().flatten().copied().max().unwrap_or(0);
    let t0 = times.first().copied().unwrap_or(0.0);
    let step = if times.len() > 1 { times[1] - times[0] } else { 1.0 };
    let x_end = times.last().map_or(1.0, |t| t - t0 + step);
    draw(caption, |area| {
        let mut chart =
            super::frame(area).build_cartesian_2d(-step..x_end - step, lo as f64..hi as f64 + 1.0).map_err(err)?;
        super::axes(&mut chart.configure_mesh())
            .x_desc(format!("Time (s since the first step with data); each cell: wakeups in the {width_s} s before it (darkest {max})"))
            .y_desc("Wakeup latency (bucket upper bound)")
            .y_labels((hi - lo + 1).min(24))
            .y_label_formatter(&|y| bounds_ns.get(*y as usize).map_or(String::new(), |b| bound_label(*b)))
            .x_label_formatter(&super::plain)
            .disable_x_mesh()
            .disable_y_mesh()
            .draw()
            .map_err(err)?;
        let cells = times.iter().zip(counts).flat_map(|(t, row)| {
            let x = t - t0;
            (lo..=hi).filter_map(move |b| {
                let n = row.get(b).copied().unwrap_or(0);
                (n > 0).then(|| Rectangle::new([(x - step, b as f64), (x, b as f64 + 1.0)], shade(n, max).filled()))
            })
        });
        chart.draw_series(cells).map_err(err)?;
        Ok(())
    })
}
