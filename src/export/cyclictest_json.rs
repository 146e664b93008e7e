//! cyclictest's `--json` format, laid out exactly as rt-tests writes it (keys `"cmdline:"` and
//! `"rt_test_version:"` keep their stray colon so existing parsers keep working). No key is
//! added, so strict parsers accept the file; `"cmdline:"` shows that rtlab wrote it.

use super::Exporter;
use crate::result::RunResult;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// RFC 2822 date in UTC, as cyclictest's `strftime("%a, %d %b %Y %H:%M:%S %z")` prints it.
pub fn rfc2822(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MO: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} +0000",
        WD[days.rem_euclid(7) as usize],
        day,
        MO[(month - 1) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn parse_rfc3339(s: Option<&str>) -> SystemTime {
    s.and_then(|s| humantime::parse_rfc3339_weak(s).ok()).unwrap_or(UNIX_EPOCH)
}

fn jstr(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

impl Exporter for CyclictestJson {
    fn serialize(&self, r: &RunResult) -> Result<Vec<u8>, String> {
        let u = |ns: i64| if self.nsecs { ns } else { ns / 1000 };
        let e = &r.environment;
        let mut s = String::new();
        s += "{\n  \"file_version\": 1,\n";
        let _ = writeln!(s, "  \"cmdline:\": {},", jstr(&r.command_line.join(" ")));
        let version = match self.version {
            Version::V2_10 => "2.10",
            Version::V2_4 => "2.40",
        };
        let _ = writeln!(s, "  \"rt_test_version:\": \"{version}\",");
        let _ = writeln!(s, "  \"start_time\": \"{}\",", rfc2822(parse_rfc3339(r.start_time.as_deref())));
        let _ = writeln!(s, "  \"end_time\": \"{}\",", rfc2822(parse_rfc3339(r.end_time.as_deref())));
        let _ = writeln!(s, "  \"return_code\": {},", self.return_code);
        s += "  \"sysinfo\": {\n    \"sysname\": \"Linux\",\n";
        let _ = writeln!(s, "    \"nodename\": {},", jstr(e.hostname.as_deref().unwrap_or("")));
        let _ = writeln!(s, "    \"release\": {},", jstr(e.kernel_release.as_deref().unwrap_or("")));
        let _ = writeln!(s, "    \"version\": {},", jstr(e.kernel_version.as_deref().unwrap_or("")));
        let _ = writeln!(s, "    \"machine\": {},", jstr(e.machine.as_deref().unwrap_or("")));
        let _ = writeln!(s, "    \"realtime\": {}\n  }},", i32::from(e.preempt_rt == Some(true)));
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
                    s += "      \"histogram\": {";
                    if !rows.is_empty() {
                        s += "\n";
                        s += &rows.join(",\n");
                        s += "\n";
                    }
                    s += "      },\n";
                }
                (None, Version::V2_4) => s += "      \"histogram\": {      },\n",
                (None, Version::V2_10) => {}
            }
            let st = &t.stats;
            let _ = writeln!(s, "      \"cycles\": {},", st.cycles);
            let _ = writeln!(s, "      \"min\": {},", st.min_ns.map_or(0, u));
            let _ = writeln!(s, "      \"max\": {},", st.max_ns.map_or(0, u));
            let avg = st.mean_ns.map_or(0.0, |m| if self.nsecs { m } else { m / 1000.0 });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc_2822_in_utc() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_312_936); // 2026-11-22 02:02:16 UTC
        assert_eq!(rfc2822(t), "Sun, 22 Nov 2026 02:02:16 +0000");
        assert_eq!(rfc2822(UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(rfc2822(UNIX_EPOCH + Duration::from_secs(951_782_400)), "Tue, 29 Feb 2000 00:00:00 +0000");
    }
}
