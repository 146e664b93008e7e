//! What each subcommand does, wired from the layers below.

pub mod cyclictest;
pub mod doctor;
pub mod export;
pub mod import;
pub mod load;
pub mod monitor;
pub mod noise;
pub mod osnoise;
pub mod plot;
pub mod report;
pub mod run;
pub mod samples;
pub mod schema;
pub mod sweep;
pub mod timerlat;
