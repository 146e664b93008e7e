//! Date formats: RFC 3339 (rtlab's files) and RFC 2822 (cyclictest's JSON), UTC.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last second RFC 3339's four-digit years can write: 9999-12-31T23:59:59Z.
pub const LATEST_S: u64 = 253_402_300_799;

/// RFC 3339 with microseconds, UTC; a time after year 9999 (which RFC 3339 cannot write, and
/// which input is refused for before it gets here) is written as the last second of 9999.
pub fn rfc3339(t: SystemTime) -> String {
    let latest = UNIX_EPOCH + Duration::from_secs(LATEST_S);
    humantime::format_rfc3339_micros(t.min(latest)).to_string()
}

/// Parses RFC 3339 (years up to 9999).
pub fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(s).ok()
}

/// A time in seconds since the epoch that RFC 3339 can write (1970 to 9999), as a SystemTime.
pub fn from_epoch_secs(s: f64) -> Option<SystemTime> {
    (s.is_finite() && (0.0..=LATEST_S as f64).contains(&s)).then(|| UNIX_EPOCH + Duration::from_secs_f64(s))
}

/// RFC 2822 in UTC, as cyclictest's `strftime("%a, %d %b %Y %H:%M:%S %z")` prints it.
pub fn rfc2822(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs();
    time::OffsetDateTime::from_unix_timestamp(secs as i64)
        .ok()
        .and_then(|d| d.format(&time::format_description::well_known::Rfc2822).ok())
        .unwrap_or_default()
}

/// Parses RFC 2822 (`Sun, 22 Nov 2026 02:02:16 +0000`; weekday optional; numeric or RFC 822
/// zones such as `GMT` and `EST`).
pub fn parse_rfc2822(s: &str) -> Option<SystemTime> {
    let d = time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc2822).ok()?;
    u64::try_from(d.unix_timestamp()).ok().map(|s| UNIX_EPOCH + Duration::from_secs(s))
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
            "22 Nov 2026 02:02:16 XYZ",
        ] {
            assert_eq!(parse_rfc2822(bad), None, "{bad}");
        }
        // RFC 822's named zones are read as RFC 2822 defines them.
        assert_eq!(parse_rfc2822("21 Nov 2026 21:02:16 EST"), Some(UNIX_EPOCH + Duration::from_secs(1_795_312_936)));
    }

    proptest::proptest! {
        #[test]
        fn formatting_then_parsing_gives_back_the_second(secs in 0u64..8_000_000_000) {
            let t = UNIX_EPOCH + Duration::from_secs(secs);
            proptest::prop_assert_eq!(parse_rfc2822(&rfc2822(t)), Some(t));
        }
    }
}
