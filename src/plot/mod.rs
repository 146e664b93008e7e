//! Plots: one file per kind (histogram, cdf, timeseries, sweep). Each draws an SVG with
//! plotters, measuring text with the embedded DejaVu Sans; [`encode`] then turns every text
//! into outlines (SVG) or rasterises it (PNG) with the same embedded font, so a picture looks
//! the same everywhere and needs neither fontconfig nor a system font.
//!
//! Plots are exporters: they return bytes and never do I/O.

pub mod cdf;
pub mod heatmap;
pub mod histogram;
pub mod inputs;
pub mod noise;
pub mod sweep;
pub mod timeline;
pub mod timeseries;

use crate::result::RunResult;
use crate::units::clip;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::{Arc, Once};

/// DejaVu Sans (Bitstream Vera licence, `assets/fonts/DejaVuSans.LICENSE`).
pub const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
/// The family name plotters writes into the SVG and the rasteriser resolves to [`FONT`].
const FAMILY: &str = "sans-serif";
/// Picture size in pixels (SVG user units).
pub const SIZE: (u32, u32) = (1200, 720);

/// An output format, chosen by the file name's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Scalable vector graphics, text as outlines.
    Svg,
    /// Portable network graphics at [`SIZE`].
    Png,
}

impl Format {
    /// The format of `path` (`.svg` or `.png`), or a sentence saying what to write instead.
    pub fn of(path: &Path) -> Result<Format, String> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("svg") => Ok(Format::Svg),
            Some("png") => Ok(Format::Png),
            _ => Err(format!("'{}' does not end in .png or .svg; name the picture e.g. plot.png", path.display())),
        }
    }
}

/// The colours of successive series (colour-blind-safe Tableau 10).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Title lines of a picture.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Caption {
    /// First line: what the picture shows.
    pub title: String,
    /// Second line: host, kernel and configuration.
    pub subtitle: String,
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is compiled in; a failure here would be a broken build, and plotters then
        // reports a missing font at the first text, which `draw` turns into an error.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// Converts a plotters error into a message.
pub(crate) fn err(e: impl std::fmt::Display) -> String {
    format!("cannot draw the picture: {e}")
}

/// Draws a picture: a white page with the caption on top; `body` draws the chart below it.
/// Returns the SVG text (text still as `<text>`; see [`encode`]).
pub fn draw(
    caption: &Caption,
    body: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<String, String> {
    register_font();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (top, rest) = root.split_vertically(64);
        top.draw(&Text::new(clip(&caption.title, 95), (24, 12), (FAMILY, 22).into_font())).map_err(err)?;
        let grey = (FAMILY, 14).into_font().color(&RGBColor(70, 70, 70));
        top.draw(&Text::new(clip(&caption.subtitle, 150), (24, 40), grey)).map_err(err)?;
        body(&rest)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A chart builder on `area` with the house margins and label areas.
pub(crate) fn frame<'a, 'b, DB: DrawingBackend>(area: &'a DrawingArea<DB, Shift>) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(area);
    b.margin(24).x_label_area_size(52).y_label_area_size(84);
    b
}

/// The house style of axes: label and description fonts, light grid lines.
pub(crate) fn axes<'a, 'b, X, Y, DB>(
    mesh: &'b mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>,
) -> &'b mut plotters::chart::MeshStyle<'a, 'b, X, Y, DB>
where
    X: plotters::coord::ranged1d::Ranged,
    Y: plotters::coord::ranged1d::Ranged,
    DB: DrawingBackend,
{
    mesh.label_style((FAMILY, 15)).axis_desc_style((FAMILY, 16)).light_line_style(RGBColor(235, 235, 235))
}

/// Draws the legend at `position` in the house style.
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut plotters::chart::ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FAMILY, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .draw()
        .map_err(err)
}

fn options() -> resvg::usvg::Options<'static> {
    let mut db = resvg::usvg::fontdb::Database::new();
    db.load_font_data(FONT.to_vec());
    db.set_sans_serif_family("DejaVu Sans");
    let mut opt = resvg::usvg::Options { font_family: "DejaVu Sans".into(), ..Default::default() };
    opt.fontdb = Arc::new(db);
    opt
}

/// Every picture passes here: its text made printable first (a control character in a thread's
/// or a tag's name is no XML, and would deny the whole result its pictures).
fn parse(svg: &str) -> Result<resvg::usvg::Tree, String> {
    let svg = crate::units::printable_text(svg);
    resvg::usvg::Tree::from_str(&svg, &options()).map_err(|e| format!("internal SVG error: {e}"))
}

fn write_svg(tree: &resvg::usvg::Tree, prefix: &str) -> String {
    let wo = resvg::usvg::WriteOptions {
        id_prefix: (!prefix.is_empty()).then(|| prefix.to_string()),
        coordinates_precision: 3,
        transforms_precision: 4,
        ..Default::default()
    };
    let svg = tree.to_string(&wo);
    // Without a viewBox a browser lays a picture narrower than its width out by cutting its
    // right side off (the legend first) instead of shrinking it.
    let size = tree.size();
    match svg.find('>') {
        Some(end) if svg.starts_with("<svg ") && !svg[..end].contains("viewBox") => {
            format!("{} viewBox=\"0 0 {} {}\"{}", &svg[..end], size.width(), size.height(), &svg[end..])
        }
        _ => svg,
    }
}

/// The picture's bytes: SVG with every text turned into outlines, or a PNG rendered with the
/// embedded font.
pub fn encode(svg: &str, format: Format) -> Result<Vec<u8>, String> {
    let tree = parse(svg)?;
    match format {
        Format::Svg => Ok(write_svg(&tree, "").into_bytes()),
        Format::Png => {
            let size = tree.size().to_int_size();
            let mut pixmap =
                resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("the picture has no area")?;
            resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
            pixmap.encode_png().map_err(|e| format!("cannot encode the PNG: {e}"))
        }
    }
}

/// SVG with text as outlines and every id prefixed with `prefix`, to be inlined in a page
/// next to other pictures.
pub fn encode_svg(svg: &str, prefix: &str) -> Result<String, String> {
    Ok(write_svg(&parse(svg)?, prefix))
}

/// One line describing where and how a run was measured: host, kernel, preemption model,
/// policy, interval, threads, length and loads (what is known of it).
pub fn describe(r: &RunResult) -> String {
    let env = &r.environment;
    let mut parts: Vec<String> = Vec::new();
    if let Some(h) = &env.hostname {
        parts.push(h.clone());
    }
    if let Some(k) = &env.kernel_release {
        let model = env.preempt_model.as_deref().map(|m| format!(" ({m})")).unwrap_or_default();
        parts.push(format!("Linux {k}{model}"));
    }
    match (&r.all.policy, r.all.priority) {
        (Some(p), Some(prio)) => parts.push(format!("{p} {prio}")),
        (Some(p), None) => parts.push(p.clone()),
        _ => {}
    }
    if let Some(n) = &r.noise {
        parts.push(format!("noise ≥ {}", crate::units::duration(n.threshold_ns)));
        parts.push(format!("counter {}", n.counter));
        if n.runtime_ns < n.period_ns {
            parts.push(format!(
                "busy {} of {}",
                crate::units::duration(n.runtime_ns),
                crate::units::duration(n.period_ns)
            ));
        }
    } else if let Some(w) = &r.watch {
        parts.push(format!("watched {}", w.target));
    } else if let Some(c) = &r.config {
        parts.push(format!("{} interval", crate::units::duration(c.interval_ns)));
        parts.push(format!("{} sleep", c.method.name()));
    } else if let Some(i) = r.threads.first().and_then(|t| t.interval_ns) {
        parts.push(format!("{} interval", crate::units::duration(i)));
    }
    if r.noise.is_none() {
        parts.push(format!("{} thread{}", r.threads.len(), if r.threads.len() == 1 { "" } else { "s" }));
    } else {
        parts.push(format!("{} CPU{}", r.threads.len(), if r.threads.len() == 1 { "" } else { "s" }));
    }
    // A simulated run's clock is virtual: its length is its series', not the seconds it took.
    let simulated_ns = r.threads.iter().filter_map(|t| t.series.as_ref()).map(|s| s.span_ns).max();
    match (r.simulated, simulated_ns, r.duration_s) {
        (true, Some(ns), _) => {
            let (unit, per) = timeseries::time_unit(ns);
            parts.push(format!("{:.1} {unit} simulated", ns as f64 / per));
        }
        (_, _, Some(d)) => parts.push(format!("{d:.1} s")),
        _ => {}
    }
    for l in &r.loads {
        parts.push(format!("load {}", l.spec));
    }
    if let Some(s) = &r.source {
        let v = s.tool_version.as_deref().map(|v| format!(" {v}")).unwrap_or_default();
        parts.push(format!("imported from {}{v}", s.format));
    }
    if r.simulated {
        parts.push("SIMULATED".into());
    }
    parts.join(" · ")
}

/// A linear axis label: integers without decimals, others with as few as needed.
pub fn plain(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A value for log-scale axes: values below `floor` are drawn at `floor`.
pub fn at_least(v: f64, floor: f64) -> f64 {
    if v.is_finite() && v > floor {
        v
    } else {
        floor
    }
}

/// The upper end of a log axis: the next power of ten above `v` (at least `floor`·10).
pub fn log_top(v: f64, floor: f64) -> f64 {
    let mut top = floor * 10.0;
    while top <= v * 1.05 && top < 1e18 {
        top *= 10.0;
    }
    top
}

/// The lower end of a log axis: the power of ten at or below `v`.
pub fn log_bottom(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 0.1;
    }
    10f64.powf(v.log10().floor())
}

/// Labels for a log axis of µs values: `0.1`, `1`, `10`, `1000`, `10k`, `1M`.
pub fn log_label(v: &f64) -> String {
    if *v >= 10_000.0 {
        // 10k, 100k, 1M: a label of nine digits cannot be read at a glance.
        let (div, suffix) =
            [(1e9, "G"), (1e6, "M"), (1e3, "k")].into_iter().find(|(d, _)| *v >= *d).unwrap_or((1.0, ""));
        let x = v / div;
        if (x - x.round()).abs() < 1e-9 {
            format!("{x:.0}{suffix}")
        } else {
            format!("{x:.1}{suffix}")
        }
    } else if *v >= 1.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_follows_the_extension() {
        assert_eq!(Format::of(Path::new("a.PNG")), Ok(Format::Png));
        assert_eq!(Format::of(Path::new("x/a.svg")), Ok(Format::Svg));
        assert!(Format::of(Path::new("a.pdf")).unwrap_err().contains("a.pdf"));
    }

    #[test]
    fn log_axes_end_on_powers_of_ten() {
        assert_eq!(log_top(42.0, 1.0), 100.0);
        assert_eq!(log_top(100.0, 1.0), 1000.0);
        assert_eq!(log_top(0.0, 1.0), 10.0);
        assert_eq!(log_bottom(42.0), 10.0);
        assert_eq!(log_bottom(0.5), 0.1);
        assert_eq!(log_bottom(0.0), 0.1);
        assert_eq!(log_label(&0.1), "0.1");
        assert_eq!(log_label(&1000.0), "1000");
        assert_eq!(
            (log_label(&10_000.0), log_label(&1e8), log_label(&2.5e6)),
            ("10k".into(), "100M".into(), "2.5M".into())
        );
        use crate::units::si;
        assert_eq!(
            (si(950.0), si(12_500.0), si(1.38e9), si(0.5)),
            ("950".into(), "12.5 k".into(), "1.38 G".into(), "0.50".into())
        );
        assert_eq!((plain(&20.0), plain(&2.5)), ("20".into(), "2.5".into()));
    }

    #[test]
    fn a_drawn_picture_has_no_text_left_in_svg_and_is_a_png_when_asked() {
        let c = Caption { title: "Title µs".into(), subtitle: "sub".into() };
        let svg = draw(&c, |_| Ok(())).unwrap();
        assert!(svg.contains("<text"));
        let out = String::from_utf8(encode(&svg, Format::Svg).unwrap()).unwrap();
        assert!(out.starts_with("<svg") && !out.contains("<text") && out.contains("<path"));
        let png = encode(&svg, Format::Png).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }
}
