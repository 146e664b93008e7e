//! Sweeps: a grid of run configurations (load workers, load kind, load policy, probe policy,
//! method), run one after the other with every result written as soon as it exists.
//!
//! [`grid`] parses the axes and expands them into points, [`schema`] is `sweep.json`, [`csv`]
//! is `sweep.csv`; `commands/sweep.rs` runs the points through the one pipeline.

pub mod csv;
pub mod grid;
pub mod schema;

pub use csv::{csv, CSV_COLUMNS};
pub use grid::{expand, parse_counts, parse_load_policies, parse_probe, Axes, Point, MAX_POINTS, MAX_WORKERS};
pub use schema::{FigureComparison, PointComparison, SweepPoint, SweepResult, SCHEMA};
