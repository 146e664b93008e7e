//! `rtlab schema`: the JSON Schema of a file rtlab writes, or the list of them.

use crate::error::Error;
use crate::export::schema::{schema, SCHEMAS};

/// A validated `rtlab schema`.
#[derive(Debug, Clone)]
pub struct SchemaOptions {
    /// The schema to print; `None`: list them.
    pub name: Option<String>,
}

/// Prints the schema (or the list).
pub fn execute(opts: &SchemaOptions) -> Result<i32, Error> {
    match &opts.name {
        Some(n) => {
            crate::export::print(&schema(n).ok_or_else(|| Error::Runtime(format!("cannot generate schema '{n}'")))?)
        }
        None => crate::export::print(&SCHEMAS.iter().map(|(n, d)| format!("{n:16} {d}\n")).collect::<String>()),
    }
    Ok(0)
}
