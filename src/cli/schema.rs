//! `rtlab schema`.

use crate::commands::schema::SchemaOptions;
use clap::Args;

/// Print the JSON Schema of a file rtlab writes (generated from rtlab's own types).
#[derive(Args, Debug, Clone)]
pub struct SchemaArgs {
    /// run, sweep, load, samples-header, samples-trailer or doctor; none: list them
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
}

impl SchemaOptions {
    /// Validates the schema's name.
    pub fn from_cli(a: SchemaArgs) -> Result<SchemaOptions, super::UsageError> {
        let names: Vec<&str> = crate::export::schema::SCHEMAS.iter().map(|(n, _)| *n).collect();
        match a.name {
            Some(n) if !names.contains(&n.as_str()) => {
                Err(super::UsageError(format!("schema '{n}' does not exist; use one of {}", names.join(", "))))
            }
            name => Ok(SchemaOptions { name }),
        }
    }
}
