//! RunResult as pretty JSON (schema `rtlab.run/1`).

use super::Exporter;
use crate::result::RunResult;

/// The JSON exporter.
#[derive(Debug, Default, Clone, Copy)]
pub struct Json;

impl Json {
    /// The bytes of a result, with the error as a runtime failure.
    pub fn serialize_result(&self, result: &RunResult) -> Result<Vec<u8>, crate::error::Error> {
        self.serialize(result).map_err(crate::error::Error::Runtime)
    }
}

impl Exporter for Json {
    fn serialize(&self, result: &RunResult) -> Result<Vec<u8>, String> {
        let mut v = serde_json::to_vec_pretty(result).map_err(|e| e.to_string())?;
        v.push(b'\n');
        Ok(v)
    }
}
