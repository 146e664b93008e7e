//! `sweep.json` (schema `rtlab.sweep/1`).

use super::Point;
use crate::result::RunResult;
use serde::{Deserialize, Serialize};

/// The schema of `sweep.json`.
pub const SCHEMA: &str = "rtlab.sweep/1";

/// A point as stored in `sweep.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepPoint {
    /// Position.
    pub index: usize,
    /// Its label (the name of its file under `points/`).
    pub label: String,
    /// Axis values.
    pub axes: Vec<(String, String)>,
    /// The run (its environment is the sweep's).
    pub result: serde_json::Value,
}

/// `sweep.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepResult {
    /// [`SCHEMA`].
    pub schema: String,
    /// Tool and version.
    pub tool: crate::result::Tool,
    /// The sweep's command line.
    pub command_line: Vec<String>,
    /// The machine, once for all points.
    pub environment: crate::sysinfo::Environment,
    /// The runs done so far (with `--rounds`, one per point and round, the round an axis).
    pub points: Vec<SweepPoint>,
    /// Runs planned.
    pub planned: usize,
    /// `--rounds`: how many times each point was run, interleaved (absent: once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<usize>,
    /// With `--rounds`: every point's runs against the first point's, figure by figure (the
    /// method of `rtlab compare A… --vs B…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<PointComparison>,
}

/// One point's runs (group B) against the first point's (group A).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PointComparison {
    /// The first point's label (without the round).
    pub baseline: String,
    /// This point's label.
    pub label: String,
    /// This point's axis values.
    pub axes: Vec<(String, String)>,
    /// The margin of the verdicts (%).
    pub margin_pct: f64,
    /// All threads' figures, min to max.
    pub figures: Vec<FigureComparison>,
}

/// One figure of two groups of runs: each run's value and B ÷ A with its interval and verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FigureComparison {
    /// `min`, `mean`, `p50` … `p99.999`, `max`.
    pub figure: String,
    /// The baseline's runs' values (ns), round by round.
    pub a_ns: Vec<f64>,
    /// This point's.
    pub b_ns: Vec<f64>,
    /// B ÷ A (Hodges–Lehmann); `None` when a run does not know the figure exactly.
    pub ratio: Option<f64>,
    /// Its interval's lower end (`None`: unbounded, too few rounds).
    pub low: Option<f64>,
    /// Its upper end.
    pub high: Option<f64>,
    /// The interval's exact coverage.
    pub coverage: Option<f64>,
    /// `worse`, `better`, `no evidence` or `inconclusive`.
    pub verdict: Option<String>,
    /// When inconclusive: the rounds estimated to decide it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_to_decide: Option<u64>,
}

impl SweepResult {
    /// A point's entry: the result without its environment, which the sweep holds once.
    pub fn entry(point: &Point, result: &RunResult) -> SweepPoint {
        let mut v = serde_json::to_value(result).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.remove("environment");
        }
        SweepPoint { index: point.index, label: point.label(), axes: point.axes.clone(), result: v }
    }
}
