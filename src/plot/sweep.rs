//! The sweep picture: latency percentiles (p50, p99, p99.9, max; µs, log, left axis) against
//! the swept axis, and the load's throughput on the right axis — real-time against real-fast.

use super::{at_least, color, draw, err, log_bottom, log_label, log_top, Caption, FAMILY};
use crate::result::RunResult;
use crate::units::clip;
use plotters::coord::CoordTranslate;
use plotters::prelude::*;

/// The latency figures of one point (ns) and its load's throughput.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The swept value as written.
    pub x_label: String,
    /// p50, p99, p99.9 and max (ns).
    pub latency: [Option<f64>; 4],
    /// The first load's throughput (per second).
    pub throughput: Option<f64>,
    /// A runtime's control (`--control`): the p99 of the OS thread beside it (ns).
    pub control_p99: Option<f64>,
}

/// The names of [`Row::latency`].
pub const METRICS: [&str; 4] = ["p50", "p99", "p99.9", "max"];

impl Row {
    /// The row of one point's result: its response time when its tasks work, else its
    /// wakeup latency (a runtime's, without its control's: that is [`Row::control_p99`]).
    pub fn of(x_label: String, r: &RunResult) -> Row {
        let st = r.all.work.as_ref().map_or(&r.all.stats, |w| &w.response);
        let pct = |st: &crate::result::Stats, k: &str| st.percentiles_ns.get(k).copied().flatten().map(|v| v as f64);
        let control = r.runtime.as_ref().and_then(|rt| rt.control.as_ref());
        let control = control.and_then(|c| r.threads.iter().find(|t| t.thread == c.thread));
        Row {
            x_label,
            latency: [pct(st, "50"), pct(st, "99"), pct(st, "99.9"), st.max_ns.map(|v| v as f64)],
            throughput: r.loads.first().map(|l| l.rate_per_s),
            control_p99: control.and_then(|t| pct(&t.stats, "99")),
        }
    }
}

/// Points sharing the outer axes' values.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The outer axes' values (`method=abs`), empty when only one axis was swept.
    pub label: String,
    /// Points in sweep order.
    pub rows: Vec<Row>,
}

/// What the picture shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// The innermost swept axis (across).
    pub axis: String,
    /// Groups of points.
    pub groups: Vec<Group>,
    /// The throughput's unit (`ops`, `messages`, …), when a load ran.
    pub throughput_unit: Option<String>,
    /// The points' tasks work: the figures are response times.
    pub response: bool,
    /// The figures drawn, as indexes into [`METRICS`] (every one, or p99 and max when many
    /// groups would make the picture unreadable: the table has the rest).
    pub metrics: Vec<usize>,
}

impl Sweep {
    /// The figures a picture of `groups` groups draws: all four for up to four groups, p99 and
    /// the maximum for more.
    pub fn metrics_for(groups: usize) -> Vec<usize> {
        if groups > 4 {
            vec![1, 3]
        } else {
            (0..METRICS.len()).collect()
        }
    }
}

/// The x positions: the values themselves when every one is a number, else their order of
/// first appearance; with the labels of categorical positions.
pub fn positions(s: &Sweep) -> (Vec<Vec<f64>>, Option<Vec<String>>) {
    let all: Vec<&str> = s.groups.iter().flat_map(|g| g.rows.iter().map(|r| r.x_label.as_str())).collect();
    let numbers: Vec<f64> = all.iter().filter_map(|v| v.parse::<f64>().ok()).collect();
    let (lo, hi) = numbers.iter().fold((f64::INFINITY, 0f64), |(a, b), x| (a.min(*x), b.max(*x)));
    // Values spanning two decades or more (work from 50 µs to 20 ms) are spaced evenly, in
    // order: to scale, all but the largest would sit on top of each other.
    let spread = lo > 0.0 && hi / lo >= 100.0;
    if numbers.len() == all.len() && !spread {
        let xs = s.groups.iter().map(|g| g.rows.iter().map(|r| r.x_label.parse().unwrap_or(0.0)).collect()).collect();
        return (xs, None);
    }
    let mut cats: Vec<String> = Vec::new();
    for v in all {
        if !cats.iter().any(|c| c == v) {
            cats.push(v.to_string());
        }
    }
    let xs = s
        .groups
        .iter()
        .map(|g| g.rows.iter().map(|r| cats.iter().position(|c| *c == r.x_label).unwrap_or(0) as f64).collect())
        .collect();
    (xs, Some(cats))
}

/// The picture's extent: x from `x.0` to `x.1` (padded), the log latency axis from `y.0` to
/// `y.1` (µs), the throughput axis up to `tp_max`.
struct Bounds {
    x: (f64, f64),
    y: (f64, f64),
    tp_max: f64,
}

impl Bounds {
    fn of(s: &Sweep, xs: &[Vec<f64>]) -> Bounds {
        let flat = xs.iter().flatten().copied();
        let (x_lo, x_hi) = flat.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        let (x_lo, x_hi) = if x_lo.is_finite() { (x_lo, x_hi.max(x_lo + 1.0)) } else { (0.0, 1.0) };
        let pad = (x_hi - x_lo) * 0.04;
        let lat = || {
            s.groups.iter().flat_map(|g| {
                g.rows.iter().flat_map(|r| r.latency.iter().chain([&r.control_p99]).flatten().map(|v| v / 1e3))
            })
        };
        let y_lo = log_bottom(lat().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min).min(1e9));
        let y_top = log_top(lat().fold(0.0, f64::max), y_lo);
        let tp_max = s.groups.iter().flat_map(|g| g.rows.iter().filter_map(|r| r.throughput)).fold(0.0, f64::max);
        Bounds { x: (x_lo - pad, x_hi + pad), y: (y_lo, y_top), tp_max }
    }
}

/// The legend's entries: per group its four figures (the group by its colour, the figure by
/// its stroke; one group: by colour as well), its control's p99, its load's throughput.
fn legend(s: &Sweep, has_tp: bool) -> Vec<(String, RGBColor, Stroke)> {
    let many = s.groups.len() > 1;
    let mut legend = Vec::new();
    for (gi, g) in s.groups.iter().enumerate() {
        let prefix = if g.label.is_empty() { String::new() } else { format!("{} ", g.label) };
        for &mi in &s.metrics {
            let name = METRICS[mi];
            let (c, stroke) = if many { (color(gi), Stroke::of_metric(mi)) } else { (color(mi), Stroke::Solid) };
            legend.push((clip(&format!("{prefix}{name}"), 40), c, stroke));
        }
        if g.rows.iter().any(|r| r.control_p99.is_some()) {
            let c = if many { color(gi) } else { color(METRICS.len()) };
            legend.push((clip(&format!("{prefix}control p99"), 40), c, Stroke::Control));
        }
        if has_tp {
            let c = if many { color(gi) } else { RGBColor(60, 60, 60) };
            legend.push((clip(&format!("{prefix}throughput (right axis)"), 40), c, Stroke::Throughput));
        }
    }
    legend
}

/// Legend entries per row below the chart.
const PER_ROW: usize = 4;

/// Draws the legend in rows on `below`, `w` px wide: each entry's stroke as it is drawn.
fn draw_legend(
    below: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    legend: &[(String, RGBColor, Stroke)],
    w: u32,
) -> Result<(), String> {
    let col_w = (w as i32 - 80) / PER_ROW as i32;
    for (i, (label, c, stroke)) in legend.iter().enumerate() {
        let (x, y) = (70 + (i % PER_ROW) as i32 * col_w, 6 + (i / PER_ROW) as i32 * 22 + 8);
        stroke.sample(below, (x, y), *c)?;
        below.draw(&Text::new(label.clone(), (x + 40, y - 8), (FAMILY, 14).into_font())).map_err(err)?;
    }
    Ok(())
}

/// A group's points of one figure (`value` of each row), at its x positions `gx`, in µs
/// and never below the axis' bottom `y_lo`.
fn points(g: &Group, gx: &[f64], y_lo: f64, value: impl Fn(&Row) -> Option<f64>) -> Vec<(f64, f64)> {
    g.rows.iter().zip(gx).filter_map(|(r, x)| value(r).map(|v| (*x, at_least(v / 1e3, y_lo)))).collect()
}

/// Draws the sweep (SVG text).
pub fn svg(caption: &Caption, s: &Sweep) -> Result<String, String> {
    let (xs, cats) = positions(s);
    let Bounds { x: (x_lo, x_hi), y: (y_lo, y_top), tp_max } = Bounds::of(s, &xs);
    let has_tp = s.throughput_unit.is_some() && tp_max > 0.0;
    let integral = xs.iter().flatten().all(|x| x.fract() == 0.0);
    let mut distinct: Vec<f64> = xs.iter().flatten().copied().collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    let legend = legend(s, has_tp);
    let legend_h = legend.len().div_ceil(PER_ROW) as u32 * 22 + 12;
    draw(caption, |area| {
        let (w, h) = area.dim_in_pixel();
        let (plot, below) = area.split_vertically(h.saturating_sub(legend_h));
        let mut chart = super::frame(&plot)
            .right_y_label_area_size(if has_tp { 110 } else { 0 })
            .build_cartesian_2d(x_lo..x_hi, (y_lo..y_top).log_scale())
            .map_err(err)?
            .set_secondary_coord(x_lo..x_hi, 0f64..(tp_max * 1.15).max(1.0));
        let cat_label = |v: &f64| {
            let i = v.round();
            match &cats {
                Some(c) if (v - i).abs() < 1e-6 && i >= 0.0 => c.get(i as usize).cloned().unwrap_or_default(),
                Some(_) => String::new(),
                None if integral && (v - i).abs() > 1e-6 => String::new(),
                None => super::plain(v),
            }
        };
        let n_labels = cats.as_ref().map_or(if integral { distinct.len().clamp(2, 12) } else { 12 }, |c| c.len());
        super::axes(&mut chart.configure_mesh())
            .x_labels(n_labels)
            .x_label_formatter(&cat_label)
            .y_label_formatter(&log_label)
            .x_desc(s.axis.as_str())
            .y_desc(if s.response { "Response time (µs)" } else { "Latency (µs)" })
            .draw()
            .map_err(err)?;
        if has_tp {
            chart
                .configure_secondary_axes()
                .y_desc(format!("Load throughput ({}/s)", s.throughput_unit.as_deref().unwrap_or("ops")))
                .y_label_formatter(&|v| crate::units::si(*v))
                .label_style((FAMILY, 15))
                .axis_desc_style((FAMILY, 16))
                .draw()
                .map_err(err)?;
        }
        // Drawn in the legend's order, with its colours and strokes.
        let mut entries = legend.iter();
        for (g, gx) in s.groups.iter().zip(&xs) {
            for &mi in &s.metrics {
                let (_, c, stroke) = entries.next().cloned().ok_or("legend and lines disagree")?;
                let pts = points(g, gx, y_lo, |r| r.latency[mi]);
                stroke.draw(&mut chart, pts.clone(), c)?;
                chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled()))).map_err(err)?;
            }
            let control = points(g, gx, y_lo, |r| r.control_p99);
            if !control.is_empty() {
                let (_, c, stroke) = entries.next().cloned().ok_or("legend and lines disagree")?;
                stroke.draw(&mut chart, control.clone(), c)?;
                chart.draw_series(control.iter().map(|p| Cross::new(*p, 4, c.stroke_width(2)))).map_err(err)?;
            }
            if has_tp {
                let (_, c, _) = entries.next().cloned().ok_or("legend and lines disagree")?;
                let pts: Vec<(f64, f64)> =
                    g.rows.iter().zip(gx).filter_map(|(r, x)| r.throughput.map(|t| (*x, t))).collect();
                chart
                    .draw_secondary_series(DashedLineSeries::new(pts.clone(), 10, 5, c.mix(0.7).stroke_width(2)))
                    .map_err(err)?;
                chart.draw_secondary_series(pts.iter().map(|p| Rectangle::new([*p, *p], c.filled()))).map_err(err)?;
            }
        }
        draw_legend(&below, &legend, w)
    })
}

/// How a line is stroked, so that the figures of a group stay apart in colour-blind print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stroke {
    /// Solid, 2 px (p99; every figure when there is one group).
    Solid,
    /// Dotted (p50).
    Dotted,
    /// Dashed (p99.9).
    Dashed,
    /// Long dashes, thin (max).
    LongDashed,
    /// Dashed, faded (throughput, right axis).
    Throughput,
    /// Dash-dot, thin (a runtime's control, its p99).
    Control,
}

impl Stroke {
    fn of_metric(mi: usize) -> Stroke {
        match mi {
            0 => Stroke::Dotted,
            1 => Stroke::Solid,
            2 => Stroke::Dashed,
            _ => Stroke::LongDashed,
        }
    }

    /// The dash and gap lengths (px), `None` for a solid line, and the width.
    fn pattern(self) -> (Option<(u32, u32)>, u32) {
        match self {
            Stroke::Solid => (None, 2),
            Stroke::Dotted => (Some((2, 4)), 2),
            Stroke::Dashed => (Some((7, 4)), 2),
            Stroke::LongDashed => (Some((14, 5)), 1),
            Stroke::Throughput => (Some((10, 5)), 2),
            Stroke::Control => (Some((4, 2)), 1),
        }
    }

    fn draw<'a, CT>(
        self,
        chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
        pts: Vec<(f64, f64)>,
        c: RGBColor,
    ) -> Result<(), String>
    where
        CT: CoordTranslate<From = (f64, f64)>,
    {
        let (dash, width) = self.pattern();
        let style = c.stroke_width(width);
        match dash {
            None => chart.draw_series(LineSeries::new(pts, style)).map(|_| ()),
            Some((on, off)) => chart.draw_series(DashedLineSeries::new(pts, on, off, style)).map(|_| ()),
        }
        .map_err(err)
    }

    /// A 32 px sample of the stroke at `at` on `area` (for the legend).
    fn sample(
        self,
        area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
        at: (i32, i32),
        c: RGBColor,
    ) -> Result<(), String> {
        let (dash, width) = self.pattern();
        let c = if self == Stroke::Throughput { c.mix(0.7) } else { c.mix(1.0) };
        let style = c.stroke_width(width);
        let (on, off) = dash.map_or((32, 0), |(on, off)| (on as i32, off as i32));
        let mut x = 0;
        while x < 32 {
            let end = (x + on).min(32);
            area.draw(&PathElement::new(vec![(at.0 + x, at.1), (at.0 + end, at.1)], style)).map_err(err)?;
            x = end + off.max(1);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(x: &str) -> Row {
        Row { x_label: x.into(), latency: [None; 4], throughput: None, control_p99: None }
    }

    #[test]
    fn a_group_with_a_control_draws_its_p99_in_the_groups_colour_and_names_it_in_the_legend() {
        let controlled = Row { control_p99: Some(50_000.0), ..row("1") };
        let s = Sweep {
            axis: "workers".into(),
            groups: vec![
                Group { label: "runtime=os".into(), rows: vec![row("0"), row("1")] },
                Group { label: "runtime=go".into(), rows: vec![row("0"), controlled] },
            ],
            throughput_unit: None,
            response: false,
            metrics: Sweep::metrics_for(2),
        };
        let names: Vec<(String, RGBColor)> = legend(&s, false).into_iter().map(|(l, c, _)| (l, c)).collect();
        let controls: Vec<&(String, RGBColor)> = names.iter().filter(|(l, _)| l.contains("control")).collect();
        assert_eq!(controls, [&("runtime=go control p99".to_string(), color(1))]);
        assert_eq!(names.len(), 2 * METRICS.len() + 1, "four figures a group, and the one control");
        assert_eq!(Sweep::metrics_for(7).iter().map(|m| METRICS[*m]).collect::<Vec<_>>(), ["p99", "max"]);
    }

    #[test]
    fn numeric_axes_keep_their_values_and_others_their_order() {
        let s = Sweep {
            axis: "workers".into(),
            groups: vec![Group { label: String::new(), rows: vec![row("0"), row("4"), row("2")] }],
            throughput_unit: None,
            response: false,
            metrics: Sweep::metrics_for(2),
        };
        assert_eq!(positions(&s), (vec![vec![0.0, 4.0, 2.0]], None));
        let s = Sweep {
            axis: "method".into(),
            groups: vec![
                Group { label: "a".into(), rows: vec![row("abs"), row("rel")] },
                Group { label: "b".into(), rows: vec![row("rel"), row("sleep")] },
            ],
            throughput_unit: None,
            response: false,
            metrics: Sweep::metrics_for(2),
        };
        let (xs, cats) = positions(&s);
        assert_eq!(xs, vec![vec![0.0, 1.0], vec![1.0, 2.0]]);
        assert_eq!(cats.unwrap(), vec!["abs", "rel", "sleep"]);
        let s = Sweep {
            axis: "work_us".into(),
            groups: vec![Group { label: String::new(), rows: vec![row("50"), row("1000"), row("20000")] }],
            throughput_unit: None,
            response: true,
            metrics: Sweep::metrics_for(1),
        };
        let (xs, cats) = positions(&s);
        assert_eq!((xs, cats.unwrap()), (vec![vec![0.0, 1.0, 2.0]], vec!["50".into(), "1000".into(), "20000".into()]));
    }
}
