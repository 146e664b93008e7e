//! What each subcommand does, wired from the layers below.

pub mod cyclictest;
pub mod import;
pub mod run;
