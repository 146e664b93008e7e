//! The JSON Schemas are generated from rtlab's types (`rtlab schema NAME`); docs/schemas/ holds
//! them, and every file rtlab writes validates against its schema, which refuses unknown fields.

mod common;

use common::{read_json, rtlab, samples_file};
use serde_json::Value;

fn generated(name: &str) -> String {
    let o = rtlab().args(["schema", name]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn errors(schema: &str, instance: &Value) -> Vec<String> {
    let schema: Value = serde_json::from_str(schema).unwrap();
    let v = jsonschema::validator_for(&schema).expect("a valid schema");
    v.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path)).collect()
}

#[test]
fn the_schemas_in_docs_are_the_ones_the_types_generate() {
    for name in ["run", "sweep", "load", "samples-header", "samples-trailer"] {
        let path = format!("{}/docs/schemas/{name}.schema.json", env!("CARGO_MANIFEST_DIR"));
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            kept == generated(name),
            "{path} is out of date: regenerate it with `rtlab schema {name} > docs/schemas/{name}.schema.json`"
        );
    }
    let err = common::refused(&["schema", "nonsense"]);
    assert!(err.contains("run, sweep, load"), "{err}");
}

#[test]
fn every_file_rtlab_writes_validates_and_unknown_fields_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sim = samples_file(dir.path(), "0 1000\n0 2000\n0 3000\n");
    let (json, smp, out) = (dir.path().join("r.json"), dir.path().join("r.smp"), dir.path().join("sw"));
    rtlab().args(["run", "-q", "--simulate", &sim, "--json"]).arg(&json).assert().success();
    let mut run = read_json(&json);
    assert!(errors(&generated("run"), &run).is_empty(), "{:?}", errors(&generated("run"), &run));
    run["threads"][0]["bogus"] = Value::Bool(true);
    assert!(!errors(&generated("run"), &run).is_empty(), "an unknown field in a thread is refused");
    let mut run = read_json(&json);
    run["bogus"] = Value::Bool(true);
    assert!(!errors(&generated("run"), &run).is_empty(), "an unknown top-level field is refused");

    rtlab()
        .args(["sweep", "--methods", "abs,rel", "-l", "3", "--simulate", &sim, "--out"])
        .arg(&out)
        .assert()
        .success();
    let sweep = read_json(&out.join("sweep.json"));
    assert!(errors(&generated("sweep"), &sweep).is_empty(), "{:?}", errors(&generated("sweep"), &sweep));

    let load = dir.path().join("l.json");
    rtlab().args(["load", "cpu:workers=1", "-D", "0.3s", "--json"]).arg(&load).assert().success();
    let l = read_json(&load);
    assert!(errors(&generated("load"), &l).is_empty(), "{:?}", errors(&generated("load"), &l));

    rtlab().args(["run", "--runtime", "tokio", "-l", "5", "-i", "2ms", "-q", "--samples"]).arg(&smp).assert().success();
    let bytes = std::fs::read(&smp).unwrap();
    let len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&bytes[12..12 + len]).unwrap();
    assert!(errors(&generated("samples-header"), &header).is_empty());
    // The trailer follows the 26-byte end record (thread 0xFFFF) after the records.
    let mut at = 12 + len;
    while bytes[at..at + 2] != [0xFF, 0xFF] {
        at += 26;
    }
    let trailer: Value = serde_json::from_slice(&bytes[at + 26..]).unwrap();
    assert!(errors(&generated("samples-trailer"), &trailer).is_empty());
    assert_eq!(trailer["records"], 5);
}
