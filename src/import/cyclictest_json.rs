//! cyclictest's `--json` files (rt-tests 2.4 and 2.10).

use super::{build, ImportError, ThreadFigures, Unit};
use crate::result::build::Stated;
use crate::result::RunResult;
use crate::sysinfo::Environment;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// cyclictest writes `nan` or `-nan` for the average of a thread without cycles, which is not
/// JSON; outside strings such tokens become `null`.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_str, mut escaped) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
        } else {
            let word_before = out.ends_with(|p: char| p.is_ascii_alphanumeric());
            let token = ["-nan", "nan", "-inf", "inf"].into_iter().find(|t| {
                rest.starts_with(t) && !rest[t.len()..].starts_with(|n: char| n.is_ascii_alphanumeric()) && !word_before
            });
            if let Some(t) = token {
                out.push_str("null");
                rest = &rest[t.len()..];
                continue;
            }
            in_str = c == '"';
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The histogram size (`-h`/`-H`/`--histogram`/`--histofall`) in a cyclictest command line.
fn histogram_size(cmdline: &str) -> Option<u64> {
    let words: Vec<&str> = cmdline.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        for flag in ["-h", "-H", "--histogram", "--histofall"] {
            if let Some(v) = w.strip_prefix(flag) {
                let v = v.strip_prefix('=').unwrap_or(v);
                if !v.is_empty() {
                    if let Ok(n) = v.parse() {
                        return Some(n);
                    }
                } else if *w == flag {
                    if let Some(Ok(n)) = words.get(i + 1).map(|n| n.parse()) {
                        return Some(n);
                    }
                }
            }
        }
    }
    None
}

/// Parses a cyclictest JSON file.
pub fn parse(path: &Path, text: &str) -> Result<RunResult, ImportError> {
    let err = |line: Option<usize>, message: String| ImportError { file: path.display().to_string(), line, message };
    let v: Value = serde_json::from_str(&sanitize(text))
        .map_err(|e| err(Some(e.line()), format!("not valid JSON ({e}); is the file complete?")))?;
    let obj =
        v.as_object().ok_or_else(|| err(None, "not a cyclictest JSON file: the top level is not an object".into()))?;
    let threads = obj
        .get("thread")
        .and_then(Value::as_object)
        .ok_or_else(|| err(None, "not a cyclictest JSON file: there is no \"thread\" object".into()))?;
    let text_of = |k: &str| obj.get(k).or_else(|| obj.get(&format!("{k}:"))).and_then(Value::as_str).map(String::from);
    let command_line = text_of("cmdline");
    let unit = match obj.get("resolution_in_ns").and_then(Value::as_u64) {
        Some(1) => Unit::Nanos,
        _ => Unit::Micros,
    };
    let declared_size = command_line.as_deref().and_then(histogram_size);

    let mut indexed: Vec<(usize, &Value)> = Vec::new();
    for (k, t) in threads {
        let i: usize = k.parse().map_err(|_| err(None, format!("thread key \"{k}\" is not a thread number")))?;
        indexed.push((i, t));
    }
    if indexed.len() > crate::export::samples::MAX_THREADS {
        return Err(err(
            None,
            format!("{} threads: cyclictest runs at most {}", indexed.len(), crate::export::samples::MAX_THREADS),
        ));
    }
    indexed.sort_by_key(|(i, _)| *i);
    if indexed.iter().enumerate().any(|(pos, (i, _))| pos != *i) {
        return Err(err(None, "thread numbers are not 0, 1, 2, …".into()));
    }
    if let Some(n) = obj.get("num_threads").and_then(Value::as_u64) {
        if n as usize != indexed.len() {
            return Err(err(None, format!("num_threads says {n} but {} threads are listed", indexed.len())));
        }
    }
    let mut figures = Vec::new();
    for (i, t) in indexed {
        let field = |k: &str| t.get(k);
        let int = |k: &str| -> Result<Option<i64>, ImportError> {
            match field(k) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => {
                    v.as_i64().map(Some).ok_or_else(|| err(None, format!("thread {i}: \"{k}\" is not an integer: {v}")))
                }
            }
        };
        let cycles = field("cycles")
            .and_then(Value::as_u64)
            .ok_or_else(|| err(None, format!("thread {i}: \"cycles\" is missing or not a count")))?;
        let avg = match field("avg") {
            None | Some(Value::Null) => None,
            Some(v) => Some(v.as_f64().ok_or_else(|| err(None, format!("thread {i}: \"avg\" is not a number: {v}")))?),
        };
        let mut histogram = None;
        let mut binned = 0u64;
        if let Some(h) = field("histogram") {
            let h = h.as_object().ok_or_else(|| err(None, format!("thread {i}: \"histogram\" is not an object")))?;
            if !h.is_empty() {
                let mut m = BTreeMap::new();
                for (k, c) in h {
                    let b: u64 = k
                        .parse()
                        .map_err(|_| err(None, format!("thread {i}: histogram bucket \"{k}\" is not a number")))?;
                    let c = c
                        .as_u64()
                        .ok_or_else(|| err(None, format!("thread {i}: histogram bucket {k} has count {c}")))?;
                    binned = binned
                        .checked_add(c)
                        .ok_or_else(|| err(None, format!("thread {i}: histogram counts overflow")))?;
                    m.insert(b, c);
                }
                histogram = Some(m);
            }
        }
        if binned > cycles {
            return Err(err(None, format!("thread {i}: the histogram holds {binned} samples but cycles is {cycles}")));
        }
        let has = cycles > 0;
        let range = declared_size
            .unwrap_or_else(|| histogram.as_ref().and_then(|h| h.keys().last().map(|k| k + 1)).unwrap_or(0));
        figures.push(ThreadFigures {
            cycles,
            min: int("min")?.filter(|_| has),
            max: int("max")?.filter(|_| has),
            avg: avg.filter(|_| has),
            cpu: int("cpu")?.and_then(|c| usize::try_from(c).ok()),
            priority: None,
            interval_us: None,
            missed: None,
            overflows: if histogram.is_some() { cycles - binned } else { 0 },
            histogram,
            range,
        });
    }
    let sysinfo = obj.get("sysinfo").and_then(Value::as_object);
    let environment = sysinfo.map(|s| {
        let str_of = |k: &str| s.get(k).and_then(Value::as_str).map(String::from);
        let realtime = s.get("realtime").and_then(Value::as_i64).map(|r| r == 1);
        let version = str_of("version");
        Environment {
            hostname: str_of("nodename"),
            kernel_release: str_of("release"),
            preempt_model: crate::sysinfo::preempt_model(None, version.as_deref(), realtime == Some(true)),
            kernel_version: version,
            machine: str_of("machine"),
            preempt_rt: realtime,
            ..Environment::unknown()
        }
    });
    let time = |k: &str| text_of(k).and_then(|t| crate::timefmt::parse_rfc2822(&t)).map(crate::timefmt::rfc3339);
    let prov = Stated {
        tool_version: text_of("rt_test_version"),
        start_time: time("start_time"),
        end_time: time("end_time"),
        environment,
        command_line,
    };
    Ok(build(path, "cyclictest-json", unit, prov, &figures))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_outside_strings_becomes_null() {
        assert_eq!(
            sanitize(r#"{"avg": nan, "b": -nan, "s": "nan", "x": 1}"#),
            r#"{"avg": null, "b": null, "s": "nan", "x": 1}"#
        );
        assert_eq!(sanitize(r#"{"q": "a\"nan", "avg": -nan}"#), r#"{"q": "a\"nan", "avg": null}"#);
        assert_eq!(sanitize("{\"µ\": 1}"), "{\"µ\": 1}");
    }

    #[test]
    fn the_histogram_size_comes_from_the_command_line() {
        assert_eq!(histogram_size("cyclictest -t2 -a -p80 -l1000 -q -H 60 --json=x"), Some(60));
        assert_eq!(histogram_size("cyclictest -h80 -q"), Some(80));
        assert_eq!(histogram_size("cyclictest --histogram=40"), Some(40));
        assert_eq!(histogram_size("cyclictest -q"), None);
    }
}
