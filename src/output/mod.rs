//! Talking to people: the live terminal view, the summary table, cyclictest's live lines, warnings.

pub mod cyclictest;
pub mod doctor;
pub mod explain;
pub mod live;
pub mod noise;
pub mod table;
pub mod timerlat;
pub mod warnings;
