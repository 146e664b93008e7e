//! `rtlab plot`: inputs → one picture.

use crate::cli::plot::{Kind, PlotArgs};
use crate::export::write_output;
use crate::import::input::{self, Content, Input};
use crate::plot::inputs::{self as figures, By};
use crate::plot::{cdf, encode, histogram, sweep, timeseries, Format};
use std::path::PathBuf;

/// Reads every input (exit code 2 naming the file when one cannot be read).
pub fn load_inputs(paths: &[PathBuf], unit: Option<crate::cli::import::FileUnit>) -> Result<Vec<Input>, (i32, String)> {
    paths.iter().map(|p| input::load(p, unit.map(|u| u.to_unit())).map_err(|e| (2, e.to_string()))).collect()
}

/// Draws the SVG of `kind` for `inputs` (errors: exit code 2, the inputs do not fit the kind).
pub fn svg(
    kind: Kind,
    inputs: &[Input],
    by: Option<By>,
    threshold_ns: Option<i64>,
    title: Option<&str>,
) -> Result<String, (i32, String)> {
    let by = by.unwrap_or_else(|| By::auto(inputs));
    let usage = |m: String| (2, m);
    let title_or = |t: &str| title.map_or_else(|| t.to_string(), String::from);
    match kind {
        Kind::Histogram => {
            let s = figures::histogram_series(inputs, by).map_err(usage)?;
            histogram::svg(&figures::caption(&title_or("Latency histogram"), inputs), &s).map_err(|e| (1, e))
        }
        Kind::Cdf => {
            let s = figures::cdf_series(inputs, by).map_err(usage)?;
            cdf::svg(&figures::caption(&title_or("Latency percentiles (tail)"), inputs), &s).map_err(|e| (1, e))
        }
        Kind::Timeseries => {
            let [one] = inputs else {
                return Err(usage(format!(
                    "--kind timeseries draws one samples file; {} inputs were given",
                    inputs.len()
                )));
            };
            let (tracks, end) = figures::timeseries_tracks(one).map_err(usage)?.ok_or_else(|| {
                usage(format!(
                    "{}: --kind timeseries needs a samples file; record one with rtlab run --samples FILE",
                    one.path.display()
                ))
            })?;
            let caption = figures::caption(&title_or("Latency over time"), inputs);
            timeseries::svg(&caption, &tracks, end, threshold_ns).map_err(|e| (1, e))
        }
        Kind::Sweep => {
            let [one] = inputs else {
                return Err(usage(format!(
                    "--kind sweep draws one sweep directory; {} inputs were given",
                    inputs.len()
                )));
            };
            let data = figures::sweep_data(one).ok_or_else(|| {
                usage(format!(
                    "{}: --kind sweep needs a sweep directory (rtlab sweep -o DIR) or its sweep.json",
                    one.path.display()
                ))
            })?;
            if data.groups.is_empty() {
                return Err(usage(format!("{}: the sweep has no finished point yet", one.path.display())));
            }
            let caption =
                figures::caption(&title_or(&format!("Sweep: latency and throughput against {}", data.axis)), inputs);
            sweep::svg(&caption, &data).map_err(|e| (1, e))
        }
    }
}

/// `rtlab plot`.
pub fn execute(args: PlotArgs) -> Result<i32, (i32, String)> {
    let format = Format::of(&args.output).map_err(|e| (2, format!("-o {e}")))?;
    crate::cli::run::check_writable_target(&args.output, "-o").map_err(|e| (2, e.0))?;
    let inputs = load_inputs(&args.inputs, args.unit)?;
    let kind = args.kind.unwrap_or(match inputs.as_slice() {
        [one] if matches!(one.content, Content::Sweep(..)) => Kind::Sweep,
        _ => Kind::Histogram,
    });
    let svg = svg(kind, &inputs, args.by.map(|b| b.to_by()), args.threshold, args.title.as_deref())?;
    let bytes = encode(&svg, format).map_err(|e| (1, e))?;
    write_output(&args.output, &bytes).map_err(|e| (1, format!("cannot write {}: {e}", args.output.display())))?;
    eprintln!("{} written ({} KiB)", args.output.display(), bytes.len().div_ceil(1024));
    Ok(0)
}
