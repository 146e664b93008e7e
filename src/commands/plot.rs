//! `rtlab plot`: inputs → one picture.
use crate::error::Error;

use crate::cli::plot::PlotArgs;
use crate::export::write_output;
use crate::import::input::{self, Content, Input};
use crate::plot::inputs::{self as figures, By, Kind, RenderError};
use crate::plot::{encode, Format};
use std::path::PathBuf;

/// Reads every input (exit code 2 naming the file when one cannot be read).
pub fn load_inputs(paths: &[PathBuf], unit: Option<crate::cli::import::FileUnit>) -> Result<Vec<Input>, Error> {
    paths.iter().map(|p| input::load(p, unit.map(|u| u.to_unit())).map_err(|e| Error::Usage(e.to_string()))).collect()
}

/// Draws the SVG of `kind` for `inputs`: exit code 2 when the inputs do not fit the kind, 1
/// when drawing fails.
pub fn svg(
    kind: Kind,
    inputs: &[Input],
    by: Option<By>,
    threshold_ns: Option<i64>,
    title: Option<&str>,
) -> Result<String, Error> {
    figures::render(kind, inputs, by, threshold_ns, title).map_err(|e| match e {
        RenderError::Unfit(m) => Error::Usage(m),
        RenderError::Draw(m) => Error::Runtime(m),
    })
}

/// `rtlab plot`.
pub fn execute(args: PlotArgs) -> Result<i32, Error> {
    let format = Format::of(&args.output).map_err(|e| Error::Usage(format!("-o {e}")))?;
    let ins: Vec<&std::path::Path> = args.inputs.iter().map(PathBuf::as_path).collect();
    crate::export::check_outputs(&[("-o".into(), &args.output)], &ins).map_err(Error::Usage)?;
    let inputs = load_inputs(&args.inputs, args.unit)?;
    let kind = args.kind.unwrap_or(match inputs.as_slice() {
        [one] if matches!(one.content, Content::Sweep(..)) => Kind::Sweep,
        _ => Kind::Histogram,
    });
    let svg = svg(kind, &inputs, args.by, args.threshold, args.title.as_deref())?;
    let bytes = encode(&svg, format).map_err(Error::Runtime)?;
    write_output(&args.output, &bytes)
        .map_err(|e| Error::Runtime(format!("cannot write {}: {e}", args.output.display())))?;
    eprintln!("{} written ({} KiB)", args.output.display(), bytes.len().div_ceil(1024));
    Ok(0)
}
