//! An explained spike's window as a timeline: one row per context (interrupts, softirqs,
//! other tasks, the probe, unaccounted time), the deadline, the timer firing, the switch to the
//! probe and its wakeup marked.

use super::{color, draw, err, Caption, FAMILY};
use crate::trace::explain::{Explanation, Lane};
use crate::units::clip;
use plotters::prelude::*;

const LANES: [(Lane, &str); 5] = [
    (Lane::Irq, "IRQ / NMI"),
    (Lane::Softirq, "softirq"),
    (Lane::Task, "tasks"),
    (Lane::Probe, "probe"),
    (Lane::Unaccounted, "no event"),
];

fn row(lane: Lane) -> f64 {
    LANES.iter().position(|(l, _)| *l == lane).unwrap_or(0) as f64
}

/// The timeline of `e` as SVG (text as `<text>`; see [`super::encode`]).
pub fn svg(caption: &Caption, e: &Explanation) -> Result<String, String> {
    let end = (e.latency_ns.max(1) as f64) / 1e3;
    draw(caption, |area| {
        let mut chart = super::frame(area)
            .build_cartesian_2d(-end * 0.02..end * 1.02, -0.6f64..LANES.len() as f64 - 0.4)
            .map_err(err)?;
        super::axes(&mut chart.configure_mesh())
            .disable_y_mesh()
            .x_desc("µs after the deadline")
            .y_labels(LANES.len())
            .y_label_formatter(&|y| {
                let i = y.round();
                if (y - i).abs() < 0.01 && i >= 0.0 {
                    LANES.get(i as usize).map_or(String::new(), |(_, n)| n.to_string())
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(err)?;
        // One colour per distinct context, in order of appearance.
        let mut names: Vec<&str> = Vec::new();
        for s in &e.timeline {
            if !names.contains(&s.what.as_str()) {
                names.push(&s.what);
            }
        }
        for s in &e.timeline {
            let y = row(s.lane);
            let c = if s.lane == Lane::Unaccounted {
                RGBColor(150, 150, 150)
            } else {
                color(names.iter().position(|n| *n == s.what).unwrap_or(0))
            };
            let (x0, x1) = (s.start_ns as f64 / 1e3, s.end_ns as f64 / 1e3);
            chart.draw_series([Rectangle::new([(x0, y - 0.32), (x1, y + 0.32)], c.mix(0.8).filled())]).map_err(err)?;
            // A label where it fits (about 8 px a character on a 1100 px wide chart).
            let room = ((x1 - x0) / end * 1100.0 / 8.0) as usize;
            if room >= 6 {
                chart
                    .draw_series([Text::new(
                        clip(&s.what, room),
                        (x0 + end * 0.004, y + 0.12),
                        (FAMILY, 13).into_font(),
                    )])
                    .map_err(err)?;
            }
        }
        let marks = [
            (Some(0), "deadline"),
            (e.fired_ns, "timer fired"),
            (e.switched_ns, "switched to the probe"),
            (Some(e.latency_ns), "wakeup (clock read)"),
        ];
        for (i, (at, label)) in marks.iter().enumerate() {
            let Some(at) = at else { continue };
            let x = *at as f64 / 1e3;
            chart
                .draw_series(LineSeries::new(
                    [(x, -0.55), (x, LANES.len() as f64 - 0.45)],
                    BLACK.mix(0.6).stroke_width(1),
                ))
                .map_err(err)?;
            // Labels near the right edge run leftwards from their line, one text row each.
            let text = format!("{label} +{} µs", crate::units::us_short(*at as f64));
            let dx = if x > end * 0.6 { -6 - 7 * text.chars().count() as i32 } else { 6 };
            chart
                .draw_series([
                    EmptyElement::at((x, -0.55)) + Text::new(text, (dx, -14 - 16 * i as i32), (FAMILY, 13).into_font())
                ])
                .map_err(err)?;
        }
        Ok(())
    })
}
