//! `rtlab report` and `rtlab compare`.

use crate::commands::report::{CompareOptions, ReportOptions};
use clap::Args;
use std::path::PathBuf;

/// Write a report: verdict, provenance, environment, configuration, per-thread percentiles,
/// warnings and plots; for a sweep its table and plots; for several inputs the comparison.
#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// RunResult JSON files, sweep directories, samples files, cyclictest --json or -h output
    #[arg(required_unless_present = "prometheus", value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// The fleet instead: query the Prometheus at URL (http://host:9090) that scrapes rtlab
    /// monitor; one run per host over --since, worst p99.9 first
    #[command(flatten)]
    pub fleet: FleetArgs,

    /// The report: FILE.html (one self-contained page) or FILE.md (pictures as SVG files
    /// beside it) [default: the input's name with .html, for one input]
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Unit of text files' figures when it cannot be seen (-h/-H output of `cyclictest -N`)
    #[arg(long, value_enum)]
    pub unit: Option<crate::cli::import::FileUnit>,
}

/// Compare runs side by side (the first is the baseline): per-thread and all-threads
/// statistics with differences and ratios, and what differs in their environments.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Two or more RunResult files, cyclictest --json or -h output, samples files or sweep
    /// directories (each point is a run); the first is the baseline (with --vs: group A, one or
    /// more)
    #[arg(required_unless_present = "prometheus", num_args = 1.., value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// Compare two groups of runs: the INPUTs (group A, the baseline) against these (group B).
    /// Per figure, B ÷ A with an interval that assumes no distribution and a verdict: worse,
    /// better, no evidence or inconclusive (with the runs a side that would decide it); run at
    /// least 3 of each, interleaved
    #[arg(long, num_args = 1.., value_name = "INPUT", conflicts_with = "prometheus")]
    pub vs: Vec<PathBuf>,

    /// The fleet instead: every host the Prometheus at URL scrapes (the best p99.9 is the
    /// baseline)
    #[command(flatten)]
    pub fleet: FleetArgs,

    /// Also draw the tails side by side: FILE.png or FILE.svg
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Exit with code 3 when a run is more than PCT percent worse than the baseline on
    /// --percentile (all threads), e.g. 10; with --vs, when group B is, at the stated confidence
    /// (also the verdicts' margin, 10 % by default)
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub fail_if_worse: Option<f64>,

    /// The figure --fail-if-worse checks: 50, 90, 99, 99.9, 99.99, 99.999, max or mean of the
    /// latency; response:P of working tasks' response time; misses (deadline misses)
    #[arg(long, value_name = "P", default_value = "99", value_parser = parse_metric)]
    pub percentile: crate::report::compare::Check,

    /// Print every thread's table (default: all threads, and each thread when there are 8 or
    /// fewer)
    #[arg(long)]
    pub all_threads: bool,

    /// Unit of text files' figures when it cannot be seen (-h/-H output of `cyclictest -N`)
    #[arg(long, value_enum)]
    pub unit: Option<crate::cli::import::FileUnit>,
}

/// Where a fleet's data comes from: a Prometheus that scrapes `rtlab monitor`.
#[derive(Args, Debug, Clone)]
pub struct FleetArgs {
    /// Prometheus base URL, e.g. http://127.0.0.1:9090 (plain HTTP; put TLS in front of it)
    #[arg(long = "prometheus", value_name = "URL", conflicts_with = "inputs")]
    pub prometheus: Option<String>,
    /// The window, ending now (plain number = seconds)
    #[arg(long = "since", value_name = "TIME", default_value = "24h", requires = "prometheus", value_parser = super::parse::duration)]
    pub since: std::time::Duration,
    /// Which series: Prometheus label matchers
    #[arg(long = "match", value_name = "MATCHERS", default_value = "{job=\"rtlab\"}", requires = "prometheus")]
    pub matchers: String,
    /// Verdict per run (per host of a fleet): fail (exit 3) when a CPU's largest latency exceeds TIME
    #[arg(long = "max-latency", value_name = "TIME", value_parser = super::parse::latency)]
    pub max_latency: Option<i64>,
}

impl FleetArgs {
    /// The query, when a Prometheus is given; its URL must be http://.
    pub fn query(&self) -> Result<Option<crate::import::prometheus::Query>, super::UsageError> {
        let Some(url) = &self.prometheus else { return Ok(None) };
        if !url.starts_with("http://") {
            return Err(super::UsageError(format!(
                "--prometheus {}: give an http:// URL (e.g. http://127.0.0.1:9090); for TLS, query through a local proxy",
                crate::import::prometheus::strip_userinfo(url)
            )));
        }
        let matchers = crate::import::prometheus::matchers(&self.matchers).map_err(super::UsageError)?;
        Ok(Some(crate::import::prometheus::Query { url: url.clone(), since: self.since, matchers }))
    }
}

fn parse_pct(s: &str) -> Result<f64, String> {
    s.trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0)
        .ok_or_else(|| format!("'{s}' is not a percentage; give e.g. 10 (percent worse allowed)"))
}

fn parse_metric(s: &str) -> Result<crate::report::compare::Check, String> {
    crate::report::compare::Check::parse(s)
}

impl ReportOptions {
    /// Validates the arguments: the report's kind from its extension, and that it may be written.
    pub fn from_cli(a: ReportArgs) -> Result<ReportOptions, super::UsageError> {
        let output = match (&a.output, a.inputs.as_slice()) {
            (Some(o), _) => o.clone(),
            // One input: its report beside it (`r.json` → `r.html`, a sweep directory `d` → `d.html`).
            (None, [one]) if a.fleet.prometheus.is_none() => {
                if one.is_dir() {
                    let mut s = one.as_os_str().to_owned();
                    s.push(".html");
                    PathBuf::from(s)
                } else {
                    one.with_extension("html")
                }
            }
            _ => {
                return Err(super::UsageError(
                    "-o: name the report of several inputs or of a fleet, e.g. -o report.html".into(),
                ))
            }
        };
        let ext = output.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let markdown = match ext.as_deref() {
            Some("html" | "htm") => false,
            Some("md" | "markdown") => true,
            _ => {
                return Err(super::UsageError(format!(
                    "-o {}: a report is FILE.html or FILE.md; name it e.g. report.html",
                    output.display()
                )))
            }
        };
        let ins: Vec<&std::path::Path> = a.inputs.iter().map(PathBuf::as_path).collect();
        crate::export::check_outputs(&[("-o".into(), &output)], &ins).map_err(super::UsageError)?;
        Ok(ReportOptions {
            markdown,
            unit: a.unit.map(|u| u.to_unit()),
            fleet: a.fleet.query()?,
            max_latency: a.fleet.max_latency,
            inputs: a.inputs,
            output,
        })
    }
}

impl CompareOptions {
    /// Validates the arguments: the picture's format and that it may be written.
    pub fn from_cli(a: CompareArgs) -> Result<CompareOptions, super::UsageError> {
        if a.vs.is_empty() && a.inputs.len() == 1 {
            return Err(super::UsageError(format!(
                "compare {}: give 2 inputs or more (the first is the baseline), or two groups: A… --vs B…",
                a.inputs[0].display()
            )));
        }
        let output = match a.output {
            Some(o) => {
                let f = crate::plot::Format::of(&o).map_err(|e| super::UsageError(format!("-o {e}")))?;
                let ins: Vec<&std::path::Path> = a.inputs.iter().chain(&a.vs).map(PathBuf::as_path).collect();
                crate::export::check_outputs(&[("-o".into(), &o)], &ins).map_err(super::UsageError)?;
                Some((o, f))
            }
            None => None,
        };
        Ok(CompareOptions {
            fleet: a.fleet.query()?,
            max_latency: a.fleet.max_latency,
            output,
            fail_if_worse: a.fail_if_worse,
            percentile: a.percentile,
            all_threads: a.all_threads,
            unit: a.unit.map(|u| u.to_unit()),
            inputs: a.inputs,
            vs: a.vs,
        })
    }
}
