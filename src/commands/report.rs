//! `rtlab report` and `rtlab compare`.
use crate::error::Error;

use crate::cli::report::{CompareArgs, ReportArgs};
use crate::export::write_output;
use crate::plot::inputs::By;
use crate::report::{self, compare, Block};

fn written(path: &std::path::Path, bytes: &[u8]) -> Result<(), Error> {
    write_output(path, bytes).map_err(|e| Error::Runtime(format!("cannot write {}: {e}", path.display())))
}

/// `rtlab report`.
pub fn report(args: ReportArgs) -> Result<i32, Error> {
    let ext = args.output.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let markdown = match ext.as_deref() {
        Some("html" | "htm") => false,
        Some("md" | "markdown") => true,
        _ => {
            return Err(Error::Usage(format!(
                "-o {}: a report is FILE.html or FILE.md; name it e.g. report.html",
                args.output.display()
            )))
        }
    };
    let ins: Vec<&std::path::Path> = args.inputs.iter().map(std::path::PathBuf::as_path).collect();
    crate::export::check_outputs(&[("-o".into(), &args.output)], &ins).map_err(Error::Usage)?;
    let inputs = crate::commands::plot::load_inputs(&args.inputs, args.unit)?;
    let blocks = report::build(&inputs).map_err(Error::Runtime)?;
    if markdown {
        let stem = args.output.file_stem().map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
        let dir = args.output.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        let (text, files) = report::markdown::render(&blocks, &stem);
        let pictures: Vec<std::path::PathBuf> = files.iter().map(|(name, _)| dir.join(name)).collect();
        let mut outs: Vec<(String, &std::path::Path)> = vec![("-o".into(), &args.output)];
        outs.extend(pictures.iter().map(|p| ("a picture of the report".to_string(), p.as_path())));
        crate::export::check_outputs(&outs, &ins).map_err(Error::Usage)?;
        for (name, bytes) in &files {
            written(&dir.join(name), bytes)?;
        }
        written(&args.output, &text)?;
        eprintln!("{} written with {} pictures beside it", args.output.display(), files.len());
    } else {
        let page = report::html::render(&blocks);
        written(&args.output, &page)?;
        eprintln!("{} written ({} KiB, self-contained)", args.output.display(), page.len().div_ceil(1024));
    }
    Ok(0)
}

/// `rtlab compare`: tables on stdout, optionally the tails as a picture; exit code 3 on a
/// regression beyond `--fail-if-worse`.
pub fn compare(args: CompareArgs) -> Result<i32, Error> {
    let format = match &args.output {
        Some(o) => {
            let f = crate::plot::Format::of(o).map_err(|e| Error::Usage(format!("-o {e}")))?;
            let ins: Vec<&std::path::Path> = args.inputs.iter().map(std::path::PathBuf::as_path).collect();
            crate::export::check_outputs(&[("-o".into(), o)], &ins).map_err(Error::Usage)?;
            Some(f)
        }
        None => None,
    };
    let inputs = crate::commands::plot::load_inputs(&args.inputs, args.unit)?;
    let runs = compare::runs(&inputs);
    if runs.len() < 2 {
        return Err(Error::Usage("compare needs at least two runs; give two result files".into()));
    }
    let c = compare::compare(&runs);
    let max_sections = if args.all_threads || c.sections.len() <= 9 { usize::MAX } else { 1 };
    let mut text = String::new();
    text += &format!("baseline: {}\n\n", c.names[0]);
    for b in report::comparison_blocks(&c, max_sections) {
        match b {
            Block::Heading(_, t) => text += &format!("{t}\n"),
            Block::Text(t) => text += &format!("{t}\n\n"),
            Block::Table { header, rows, numeric } => text += &report::markdown::table(&header, &rows, &numeric),
            _ => {}
        }
    }
    print!("{text}");
    if let (Some(out), Some(format)) = (&args.output, format) {
        let svg = crate::commands::plot::svg(
            crate::plot::inputs::Kind::Cdf,
            &inputs,
            Some(By::Input),
            None,
            Some("Latency tails compared"),
        )?;
        let bytes = crate::plot::encode(&svg, format).map_err(Error::Runtime)?;
        written(out, &bytes)?;
        eprintln!("{} written", out.display());
    }
    if let Some(pct) = args.fail_if_worse {
        let worse = compare::regressions(&c, args.percentile, pct).map_err(Error::Usage)?;
        let name = args.percentile.name();
        if worse.is_empty() {
            println!("PASS: no run is more than {pct}% worse than {} on {name}", c.names[0]);
        } else {
            for w in &worse {
                println!(
                    "FAIL: {} {name} {:.1} µs is {:.1}% worse than {} ({:.1} µs), more than the {pct}% allowed",
                    w.name,
                    w.value / 1e3,
                    w.worse_pct,
                    c.names[0],
                    w.baseline / 1e3
                );
            }
            return Ok(3);
        }
    }
    Ok(0)
}
