//! Talking to people: the live terminal view, the summary table, unit formatting, warnings.

pub mod cyclictest;
pub mod live;
pub mod table;
