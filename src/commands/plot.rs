//! `rtlab plot`: inputs → one picture.

use crate::error::Error;
use crate::export::write_output;
use crate::import::input::{self, Content};
use crate::plot::encode;
use crate::plot::inputs::{self as figures, By, Kind};
use std::path::PathBuf;

/// A validated `rtlab plot`.
#[derive(Debug, Clone)]
pub struct PlotOptions {
    /// The inputs.
    pub inputs: Vec<PathBuf>,
    /// The picture to write.
    pub output: PathBuf,
    /// Its format (from the extension).
    pub format: crate::plot::Format,
    /// The kind of picture (`None`: chosen from the inputs).
    pub kind: Option<Kind>,
    /// What a curve stands for.
    pub by: Option<By>,
    /// Which times a histogram or CDF draws.
    pub of: crate::plot::inputs::Of,
    /// A threshold line (ns).
    pub threshold: Option<i64>,
    /// A title of the user's.
    pub title: Option<String>,
    /// The unit of text inputs.
    pub unit: Option<crate::import::Unit>,
}

/// `rtlab plot`.
pub fn execute(opts: &PlotOptions) -> Result<i32, Error> {
    let inputs = input::load_all(&opts.inputs, opts.unit).map_err(|e| Error::Usage(e.to_string()))?;
    if opts.of == crate::plot::inputs::Of::Stages && !crate::plot::inputs::has_stages(&inputs) {
        let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
        return Err(Error::Usage(format!(
            "--of stages: {} holds no IRQ or thread latencies; record them with rtlab run --stages, rtlab timerlat or \
             rtlab watch",
            names.join(", ")
        )));
    }
    let kind = opts.kind.unwrap_or(match inputs.as_slice() {
        [one] if matches!(one.content, Content::Sweep(..)) => Kind::Sweep,
        _ => Kind::Histogram,
    });
    let svg = figures::render(kind, &inputs, opts.by, opts.threshold, opts.title.as_deref(), opts.of)?;
    let bytes = encode(&svg, opts.format).map_err(Error::Runtime)?;
    write_output(&opts.output, &bytes)
        .map_err(|e| Error::Runtime(format!("cannot write {}: {e}", opts.output.display())))?;
    eprintln!("{} written ({} KiB)", opts.output.display(), bytes.len().div_ceil(1024));
    Ok(0)
}
