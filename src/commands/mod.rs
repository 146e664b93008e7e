//! What each subcommand does, wired from the layers below.

pub mod run;
