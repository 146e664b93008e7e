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
    /// The points done so far.
    pub points: Vec<SweepPoint>,
    /// Points planned.
    pub planned: usize,
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
