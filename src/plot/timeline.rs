//! An explained spike's window as a timeline: one row per context (interrupts, softirqs,
//! other tasks, the probe, unaccounted time), each in its own colour with a legend; one bar per
//! contiguous stretch of a task, labelled with its name and length where the label fits; the
//! deadline, the timer firing, the switch to the probe and its wakeup marked.

use super::{draw, err, Caption, FAMILY};
use crate::trace::explain::{Explanation, Lane, Span};
use crate::units::clip;
use plotters::prelude::*;

/// The rows, top to bottom, with their names and fixed colours.
const LANES: [(Lane, &str, RGBColor); 5] = [
    (Lane::Irq, "IRQ / NMI", RGBColor(214, 39, 40)),
    (Lane::Softirq, "softirq", RGBColor(255, 127, 14)),
    (Lane::Task, "tasks", RGBColor(31, 119, 180)),
    (Lane::Probe, "probe", RGBColor(44, 160, 44)),
    (Lane::Unaccounted, "no event", RGBColor(150, 150, 150)),
];

fn row(lane: Lane) -> f64 {
    LANES.iter().position(|(l, _, _)| *l == lane).unwrap_or(0) as f64
}

/// The spans of `e` with each run of one context in one lane joined into one bar: a task
/// interrupted by IRQs (which sit in their own lane) is one bar, not one stub per interrupt.
pub fn bars(e: &Explanation) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for (lane, _, _) in LANES {
        let mut spans: Vec<&Span> = e.timeline.iter().filter(|s| s.lane == lane).collect();
        spans.sort_by_key(|s| s.start_ns);
        for s in spans {
            match out.last_mut() {
                Some(last) if last.lane == lane && last.what == s.what => last.end_ns = last.end_ns.max(s.end_ns),
                _ => out.push(s.clone()),
            }
        }
    }
    out
}

/// The timeline of `e` as SVG (text as `<text>`; see [`super::encode`]).
pub fn svg(caption: &Caption, e: &Explanation) -> Result<String, String> {
    // Milliseconds from 1 ms on, microseconds below.
    let (scale, unit) = if e.latency_ns >= 1_000_000 { (1e6, "ms") } else { (1e3, "µs") };
    let end = e.latency_ns.max(1) as f64 / scale;
    let fmt = |v: f64| if unit == "ms" { format!("{v:.2}") } else { format!("{v:.1}") };
    let bars = bars(e);
    draw(caption, |area| {
        let mut chart = super::frame(area)
            .build_cartesian_2d(-end * 0.02..end * 1.02, -0.6f64..LANES.len() as f64 - 0.4)
            .map_err(err)?;
        super::axes(&mut chart.configure_mesh())
            .disable_y_mesh()
            .x_desc(format!("{unit} after the deadline"))
            .x_label_formatter(&|x| fmt(*x))
            .y_labels(LANES.len())
            .y_label_formatter(&|y| {
                let i = y.round();
                if (y - i).abs() < 0.01 && i >= 0.0 {
                    LANES.get(i as usize).map_or(String::new(), |(_, n, _)| n.to_string())
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(err)?;
        // The legend: one entry per lane that has a bar.
        for (lane, name, c) in LANES {
            if bars.iter().any(|b| b.lane == lane) {
                chart
                    .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
                    .map_err(err)?
                    .label(name)
                    .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()));
            }
        }
        // Where labels already are, per lane (x ranges in pixels): none overprints another.
        let mut taken: Vec<(f64, f64, f64)> = Vec::new();
        let px = |x: f64| x / end * 1100.0;
        for b in &bars {
            let y = row(b.lane);
            let c = LANES[y as usize].2;
            let (x0, x1) = (b.start_ns as f64 / scale, b.end_ns as f64 / scale);
            chart.draw_series([Rectangle::new([(x0, y - 0.32), (x1, y + 0.32)], c.mix(0.75).filled())]).map_err(err)?;
            chart.draw_series([Rectangle::new([(x0, y - 0.32), (x1, y + 0.32)], c.stroke_width(1))]).map_err(err)?;
            let text = format!("{} {}", b.what, crate::units::duration(b.end_ns - b.start_ns));
            // About 7.5 px a character in 13 px type.
            let room = ((px(x1) - px(x0)) / 7.5) as usize;
            let len = text.chars().count().min(room);
            if room < 6 {
                continue;
            }
            let (l0, l1) = (px(x0), px(x0) + len as f64 * 7.5);
            if taken.iter().any(|(ty, a, z)| *ty == y && l0 < *z && *a < l1) {
                continue;
            }
            taken.push((y, l0, l1));
            let label = Text::new(clip(&text, room), (x0 + end * 0.004, y + 0.12), (FAMILY, 13).into_font());
            chart.draw_series([label]).map_err(err)?;
        }
        let marks = [
            (Some(0), "deadline"),
            (e.fired_ns, "timer fired"),
            (e.switched_ns, "switched to the probe"),
            (Some(e.latency_ns), "wakeup (clock read)"),
        ];
        for (i, (at, label)) in marks.iter().enumerate() {
            let Some(at) = at else { continue };
            let x = *at as f64 / scale;
            chart
                .draw_series(LineSeries::new(
                    [(x, -0.55), (x, LANES.len() as f64 - 0.45)],
                    BLACK.mix(0.6).stroke_width(1),
                ))
                .map_err(err)?;
            // Labels near the right edge run leftwards from their line, one text row each.
            let text = format!("{label} +{} {unit}", fmt(x));
            let dx = if x > end * 0.6 { -6 - 7 * text.chars().count() as i32 } else { 6 };
            chart
                .draw_series([
                    EmptyElement::at((x, -0.55)) + Text::new(text, (dx, -14 - 16 * i as i32), (FAMILY, 13).into_font())
                ])
                .map_err(err)?;
        }
        super::legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(lane: Lane, what: &str, start_ns: i64, end_ns: i64) -> Span {
        Span { lane, what: what.into(), start_ns, end_ns }
    }

    #[test]
    fn a_task_interrupted_by_irqs_is_one_bar_and_the_irqs_keep_theirs() {
        let e = Explanation {
            timeline: vec![
                span(Lane::Task, "blocker:7", 0, 100),
                span(Lane::Irq, "IRQ 24", 100, 110),
                span(Lane::Task, "blocker:7", 110, 300),
                span(Lane::Irq, "IRQ 24", 300, 305),
                span(Lane::Task, "blocker:7", 305, 500),
                span(Lane::Task, "other:9", 500, 600),
                span(Lane::Probe, "probe", 600, 650),
            ],
            latency_ns: 650,
            fired_ns: Some(0),
            switched_ns: Some(600),
            ..Explanation::blank()
        };
        let b = bars(&e);
        let tasks: Vec<(&str, i64, i64)> =
            b.iter().filter(|s| s.lane == Lane::Task).map(|s| (s.what.as_str(), s.start_ns, s.end_ns)).collect();
        assert_eq!(tasks, [("blocker:7", 0, 500), ("other:9", 500, 600)]);
        assert_eq!(b.iter().filter(|s| s.lane == Lane::Irq).count(), 1, "two IRQ 24 in a row on their lane: one bar");
    }
}
