//! The JSON Schemas of every file rtlab writes, generated from the types themselves
//! (`schemars`): the field docs are the descriptions, so a schema cannot drift from the code.
//! `rtlab schema NAME` prints one; docs/schemas/ holds them all (a test keeps them current).

use serde_json::Value;

/// Every schema rtlab can print, with the file it describes.
pub const SCHEMAS: &[(&str, &str)] = &[
    ("run", "rtlab.run/1: a RunResult (rtlab run --json, sweep points, rtlab import)"),
    ("sweep", "rtlab.sweep/1: sweep.json of a sweep directory"),
    ("load", "rtlab.load/1: rtlab load --json"),
    ("samples-header", "rtlab.samples/1: the JSON header of a samples file"),
    ("samples-trailer", "rtlab.samples/1: the JSON trailer of a samples file"),
    ("doctor", "rtlab.doctor/1: rtlab doctor --json (also a RunResult's environment.doctor)"),
];

/// The schema called `name` (one of [`SCHEMAS`]), as pretty JSON with a final newline.
pub fn schema(name: &str) -> Option<String> {
    let mut v: Value = match name {
        "run" => schemars::schema_for!(crate::result::RunResult).into(),
        "sweep" => schemars::schema_for!(crate::sweep::SweepResult).into(),
        "load" => schemars::schema_for!(crate::load::LoadReport).into(),
        "samples-header" => schemars::schema_for!(super::samples::Header).into(),
        "samples-trailer" => schemars::schema_for!(super::samples::Trailer).into(),
        "doctor" => schemars::schema_for!(crate::doctor::DoctorReport).into(),
        _ => return None,
    };
    let describes = SCHEMAS.iter().find(|(n, _)| *n == name).map(|(_, d)| *d).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("$id".into(), Value::String(format!("https://rtlab.dev/schemas/{name}.schema.json")));
        o.insert("description".into(), Value::String(describes.into()));
    }
    strict(&mut v, false);
    let mut text = serde_json::to_string_pretty(&v).ok()?;
    text.push('\n');
    Some(text)
}

/// Closes every plain object schema (`additionalProperties: false`), so a misspelt or unknown
/// field is an error; schemas combined with `oneOf`/`allOf`/`anyOf` (flattened enums) stay open,
/// as closing their parts would refuse each other's fields.
fn strict(v: &mut Value, in_combination: bool) {
    match v {
        Value::Object(o) => {
            let combined = ["oneOf", "allOf", "anyOf"].iter().any(|k| o.contains_key(*k));
            if o.contains_key("properties") && !combined && !in_combination && !o.contains_key("additionalProperties") {
                o.insert("additionalProperties".into(), Value::Bool(false));
            }
            for (k, child) in o.iter_mut() {
                let part = matches!(k.as_str(), "oneOf" | "allOf" | "anyOf");
                strict(child, part || (in_combination && k != "properties" && k != "$defs"));
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| strict(c, in_combination)),
        _ => {}
    }
}
