//! cyclictest's `--json` format, laid out exactly as rt-tests writes it (keys `"cmdline:"` and
//! `"rt_test_version:"` keep their stray colon so existing parsers keep working). No key is
//! added, so strict parsers accept the file; `"cmdline:"` shows that rtlab wrote it.

use super::Exporter;
use crate::result::RunResult;
use crate::timefmt::rfc2822;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// Which rt-tests release to imitate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// 2.10: `"histogram"` only when `-h` was given.
    V2_10,
    /// 2.4 (printed as "2.40"): `"histogram": {      }` even without `-h`.
    V2_4,
}

/// The exporter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CyclictestJson {
    /// Layout to imitate.
    pub version: Version,
    /// `-N`: values in ns, `"resolution_in_ns": 1`.
    pub nsecs: bool,
    /// `-h/-H` size in µs, if a histogram was asked.
    pub histogram_us: Option<i64>,
    /// `"return_code"`.
    pub return_code: i32,
}

fn parse_rfc3339(s: Option<&str>) -> SystemTime {
    s.and_then(crate::timefmt::parse_rfc3339).unwrap_or(UNIX_EPOCH)
}

fn jstr(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The part every rt-tests `--json` file opens with (rt-utils' `rt_write_json`): `{`, the file
/// version, command line, rt-tests version, start and end, return code and `sysinfo`, each line
/// ending with its comma; the tool's own keys follow.
pub fn rt_utils_header(r: &RunResult, version: &str, return_code: i32) -> String {
    let e = &r.environment;
    let mut s = String::new();
    s += "{\n  \"file_version\": 1,\n";
    let _ = writeln!(s, "  \"cmdline:\": {},", jstr(&r.command_line.join(" ")));
    let _ = writeln!(s, "  \"rt_test_version:\": \"{version}\",");
    let _ = writeln!(s, "  \"start_time\": \"{}\",", rfc2822(parse_rfc3339(r.start_time.as_deref())));
    let _ = writeln!(s, "  \"end_time\": \"{}\",", rfc2822(parse_rfc3339(r.end_time.as_deref())));
    let _ = writeln!(s, "  \"return_code\": {return_code},");
    s += "  \"sysinfo\": {\n    \"sysname\": \"Linux\",\n";
    let _ = writeln!(s, "    \"nodename\": {},", jstr(e.hostname.as_deref().unwrap_or("")));
    let _ = writeln!(s, "    \"release\": {},", jstr(e.kernel_release.as_deref().unwrap_or("")));
    let _ = writeln!(s, "    \"version\": {},", jstr(e.kernel_version.as_deref().unwrap_or("")));
    let _ = writeln!(s, "    \"machine\": {},", jstr(e.machine.as_deref().unwrap_or("")));
    let _ = writeln!(s, "    \"realtime\": {}\n  }},", i32::from(e.preempt_rt == Some(true)));
    s
}

/// rt-tests' `"histogram": {…}` block of one thread, without what follows its closing brace:
/// its `rows` (`        "BUCKET": COUNT`), one per line, or nothing between the braces.
pub fn rt_histogram(rows: &[String]) -> String {
    let mut s = "      \"histogram\": {".to_string();
    if !rows.is_empty() {
        s += "\n";
        s += &rows.join(",\n");
        s += "\n";
    }
    s + "      }"
}

impl Exporter for CyclictestJson {
    fn serialize(&self, r: &RunResult) -> Result<Vec<u8>, String> {
        let u = |ns: i64| if self.nsecs { ns } else { ns / 1000 };
        let e = &r.environment;
        let version = match self.version {
            Version::V2_10 => "2.10",
            Version::V2_4 => "2.40",
        };
        let mut s = rt_utils_header(r, version, self.return_code);
        let _ = writeln!(s, "  \"num_threads\": {},", r.threads.len());
        let _ = writeln!(s, "  \"resolution_in_ns\": {},", i32::from(self.nsecs));
        s += "  \"thread\": {\n";
        for (i, t) in r.threads.iter().enumerate() {
            let _ = writeln!(s, "    \"{i}\": {{");
            match (self.histogram_us, self.version) {
                (Some(size), _) => {
                    let size = size as u64 * 1000;
                    let rows: Vec<String> = t
                        .stats
                        .histogram
                        .iter()
                        .filter(|h| h.bucket_ns == 1000)
                        .flat_map(|h| h.buckets.iter())
                        .filter(|b| b.hi_ns <= size)
                        .map(|b| format!("        \"{}\": {}", b.lo_ns / 1000, b.count))
                        .collect();
                    s += &rt_histogram(&rows);
                    s += ",\n";
                }
                (None, Version::V2_4) => s += "      \"histogram\": {      },\n",
                (None, Version::V2_10) => {}
            }
            let st = &t.stats;
            let _ = writeln!(s, "      \"cycles\": {},", st.cycles);
            let _ = writeln!(s, "      \"min\": {},", st.min_ns.map_or(0, u));
            let _ = writeln!(s, "      \"max\": {},", st.max_ns.map_or(0, u));
            // cyclictest's avg: the mean of latencies already truncated to µs (exact with -N).
            let avg = match (self.nsecs, st.mean_us_truncated) {
                (false, Some(us)) => us,
                _ => st.mean_ns.map_or(0.0, |m| if self.nsecs { m } else { m / 1000.0 }),
            };
            let _ = writeln!(s, "      \"avg\": {avg:.2},");
            let _ = writeln!(s, "      \"cpu\": {},", t.cpu.map_or(-1, |c| c as i64));
            let node = t.cpu.or(t.last_cpu).and_then(|c| e.numa_node_of_cpu.get(c).copied()).unwrap_or(0);
            let _ = writeln!(s, "      \"node\": {node}");
            let _ = writeln!(s, "    }}{}", if i + 1 == r.threads.len() { "" } else { "," });
        }
        s += "  }\n}\n";
        Ok(s.into_bytes())
    }
}
