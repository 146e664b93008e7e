//! Date formats: RFC 3339 (rtlab's files) and RFC 2822 (cyclictest's JSON), UTC.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// RFC 3339 with microseconds, UTC.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// Parses RFC 3339.
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(s).ok()
}

const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// Days since 1970-01-01 of a civil date (Howard Hinnant's days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01 (Howard Hinnant's civil_from_days).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// RFC 2822 in UTC, as cyclictest's `strftime("%a, %d %b %Y %H:%M:%S %z")` prints it.
pub fn rfc2822(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} +0000",
        WEEKDAYS[days.rem_euclid(7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Parses RFC 2822 (`Sun, 22 Nov 2026 02:02:16 +0000`, any numeric zone, weekday optional).
pub fn parse_rfc2822(s: &str) -> Option<SystemTime> {
    let s = s.trim();
    let s = match s.split_once(", ") {
        Some((wd, rest)) if WEEKDAYS.contains(&wd) => rest,
        _ => s,
    };
    let f: Vec<&str> = s.split_whitespace().collect();
    let [d, mon, y, hms, zone] = f.as_slice() else { return None };
    let day: i64 = d.parse().ok().filter(|d| (1..=31).contains(d))?;
    let month = MONTHS.iter().position(|m| m == mon)? as i64 + 1;
    let year: i64 = y.parse().ok().filter(|y| (1970..=9999).contains(y))?;
    let t: Vec<i64> = hms.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [h, mi, sec] = t.as_slice() else { return None };
    if !(0..24).contains(h) || !(0..60).contains(mi) || !(0..61).contains(sec) {
        return None;
    }
    let (sign, zh, zm) = match zone.as_bytes() {
        [s @ (b'+' | b'-'), rest @ ..] if rest.len() == 4 && rest.iter().all(u8::is_ascii_digit) => {
            let z: i64 = zone[1..].parse().ok()?;
            (if *s == b'-' { -1 } else { 1 }, z / 100, z % 100)
        }
        _ if *zone == "GMT" || *zone == "UT" || *zone == "UTC" => (1, 0, 0),
        _ => return None,
    };
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + mi * 60 + sec - sign * (zh * 3600 + zm * 60);
    u64::try_from(secs).ok().map(|s| UNIX_EPOCH + Duration::from_secs(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_2822_dates_format_in_utc() {
        assert_eq!(rfc2822(UNIX_EPOCH + Duration::from_secs(1_795_312_936)), "Sun, 22 Nov 2026 02:02:16 +0000");
        assert_eq!(rfc2822(UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(rfc2822(UNIX_EPOCH + Duration::from_secs(951_782_400)), "Tue, 29 Feb 2000 00:00:00 +0000");
    }

    #[test]
    fn rfc_2822_dates_parse_with_their_zone() {
        assert_eq!(
            parse_rfc2822("Sun, 22 Nov 2026 02:02:16 +0000"),
            Some(UNIX_EPOCH + Duration::from_secs(1_795_312_936))
        );
        assert_eq!(
            parse_rfc2822("Sun, 22 Nov 2026 03:02:16 +0100"),
            Some(UNIX_EPOCH + Duration::from_secs(1_795_312_936))
        );
        for bad in [
            "",
            "yesterday",
            "Sun, 32 Nov 2026 02:02:16 +0000",
            "Sun, 22 Nov 2026 25:02:16 +0000",
            "22 Nov 2026 02:02:16 EST",
        ] {
            assert_eq!(parse_rfc2822(bad), None, "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn formatting_then_parsing_gives_back_the_second(secs in 0u64..8_000_000_000) {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            proptest::prop_assert_eq!(parse_rfc2822(&rfc2822(t)), Some(t));
        }
    }
}
