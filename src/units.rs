//! The one unit formatter: latencies in µs or ns, counts with SI prefixes, counted nouns.
//! Every table, message, plot label and report formats through here (times of day and
//! durations: `timefmt`).

/// How latencies are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds with one decimal (default).
    Micros,
    /// Whole nanoseconds (`-N`).
    Nanos,
}

impl Unit {
    /// Column header suffix.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Micros => "µs",
            Unit::Nanos => "ns",
        }
    }

    /// A latency in this unit.
    pub fn fmt(self, ns: i64) -> String {
        match self {
            Unit::Micros => format!("{:.1}", ns as f64 / 1000.0),
            Unit::Nanos => ns.to_string(),
        }
    }

    /// A fractional latency (mean, stdev) in this unit.
    pub fn fmt_f(self, ns: f64) -> String {
        match self {
            Unit::Micros => format!("{:.1}", ns / 1000.0),
            Unit::Nanos => format!("{:.0}", ns),
        }
    }

    /// An optional latency, `-` when absent.
    pub fn fmt_opt(self, ns: Option<i64>) -> String {
        ns.map_or_else(|| "-".into(), |v| self.fmt(v))
    }
}

/// A count or rate with an SI prefix: `950`, `12.5 k`, `1.38 G`.
pub fn si(v: f64) -> String {
    let (div, suffix) = match v.abs() {
        a if a >= 1e9 => (1e9, " G"),
        a if a >= 1e6 => (1e6, " M"),
        a if a >= 1e3 => (1e3, " k"),
        _ => (1.0, ""),
    };
    let x = v / div;
    let digits = if x.abs() >= 100.0 || div == 1.0 && x.fract() == 0.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.digits$}{suffix}")
}

/// A size given in KiB as people read it: `812 KiB`, `3.9 MiB`, `1.25 GiB`.
pub fn kib(kib: u64) -> String {
    match kib {
        k if k >= 1 << 20 => format!("{:.2} GiB", k as f64 / f64::from(1u32 << 20)),
        k if k >= 1 << 10 => format!("{:.1} MiB", k as f64 / 1024.0),
        k => format!("{k} KiB"),
    }
}

/// A period as people write it: `1 ms`, `200 µs`, `1.5 s`, `750 ns`.
pub fn duration(ns: i64) -> String {
    let trim = |v: f64| {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    match ns.unsigned_abs() {
        n if n >= 1_000_000_000 => format!("{} s", trim(ns as f64 / 1e9)),
        n if n >= 1_000_000 => format!("{} ms", trim(ns as f64 / 1e6)),
        n if n >= 1_000 => format!("{} µs", trim(ns as f64 / 1e3)),
        _ => format!("{ns} ns"),
    }
}

/// A long time as people say it: `45 s`, `4.3 min`, `2.1 h`, `3.5 days`.
pub fn span(secs: f64) -> String {
    match secs {
        s if s >= 2.0 * 86_400.0 => format!("{:.1} days", s / 86_400.0),
        s if s >= 2.0 * 3_600.0 => format!("{:.1} h", s / 3_600.0),
        s if s >= 120.0 => format!("{:.1} min", s / 60.0),
        s => format!("{s:.1} s"),
    }
}

/// A horizon as people say it, in the largest unit that divides it: `24 h`, `7 days`, `30 min`,
/// `90 s` (else as [`span`]).
pub fn horizon(ns: i64) -> String {
    let s = ns / 1_000_000_000;
    match s {
        _ if ns % 1_000_000_000 != 0 || s == 0 => span(ns as f64 / 1e9),
        _ if s % 86_400 == 0 => count((s / 86_400) as u64, "day"),
        _ if s % 3_600 == 0 => format!("{} h", s / 3_600),
        _ if s % 60 == 0 => format!("{} min", s / 60),
        _ => format!("{s} s"),
    }
}

/// Microseconds as a short label: `12.3`, `1 500`.
pub fn us_short(ns: f64) -> String {
    let us = ns / 1000.0;
    if us.abs() >= 100.0 {
        format!("{us:.0}")
    } else if us.abs() >= 10.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.2}")
    }
}

/// A latency with its unit for sentences: `12.3 µs`.
pub fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1000.0)
}

/// A difference of latencies in µs with its sign: `+1.5`, `-0.3`.
pub fn us_delta(ns: f64) -> String {
    format!("{:+.1}", ns / 1000.0)
}

/// A latency in milliseconds with `decimals` places and no unit (RealtimeTests' CSV columns,
/// progress lines): `0.002500`.
pub fn ms_fixed(ns: f64, decimals: usize) -> String {
    format!("{:.decimals$}", ns / 1e6)
}

/// `n` and the noun, plural when `n` is not 1: `1 worker thread`, `2 worker threads`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else if noun.ends_with(['s', 'x']) || noun.ends_with("sh") || noun.ends_with("ch") {
        format!("{n} {noun}es")
    } else {
        format!("{n} {noun}s")
    }
}

/// `s` with every control character (escape sequences, newlines, tabs) replaced by `�`, so
/// that text from outside (a label, a server's answer, a path) cannot move the terminal's
/// cursor, forge a line of output or break an SVG.
pub fn printable(s: &str) -> String {
    printable_but(s, &[])
}

/// [`printable`], keeping the control characters in `keep` (line ends and tabs of a text).
pub fn printable_but(s: &str, keep: &[char]) -> String {
    let bad = |c: char| c.is_control() && !keep.contains(&c);
    if s.chars().any(bad) {
        s.chars().map(|c| if bad(c) { '\u{fffd}' } else { c }).collect()
    } else {
        s.to_string()
    }
}

/// A whole document (SVG, HTML, Markdown, a terminal's text) made printable: [`printable`],
/// keeping its line ends and tabs. Every such output passes here once, whatever text from
/// outside (a watched thread's own name, an rt-app task, a log's tag, a host name) it holds.
pub fn printable_text(s: &str) -> String {
    printable_but(s, &['\n', '\r', '\t'])
}

/// `s` cut to `n` characters with an ellipsis.
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n.saturating_sub(1)).collect::<String>() + "…"
    }
}

/// `n` and the noun with its verb: `1 period was`, `3 periods were`.
pub fn count_was(n: u64, noun: &str) -> String {
    format!("{} {}", count(n, noun), if n == 1 { "was" } else { "were" })
}

/// Nanoseconds in a microsecond.
pub const NS_PER_US: i64 = 1_000;
/// Nanoseconds in a millisecond.
pub const NS_PER_MS: i64 = 1_000_000;
/// Nanoseconds in a second.
pub const NS_PER_S: i64 = 1_000_000_000;

/// THE conversion of a whole number of some unit into nanoseconds (`ns_per_unit`: one of the
/// `NS_PER_*` constants, or a multiple of one): checked, so that a value past what 64 bits hold
/// (about 292 years) is a sentence naming `what`, never a wrapped number. Negative values keep
/// their sign (a log's negative slack).
pub fn to_ns(value: i64, ns_per_unit: i64, what: &str) -> Result<i64, String> {
    value.checked_mul(ns_per_unit).ok_or_else(|| {
        format!("{what} {value} is out of range: at most {} of its unit fit in nanoseconds", i64::MAX / ns_per_unit)
    })
}

/// [`to_ns`] of an unsigned count (`-T 9223372036854776` µs): out of range when it does not fit.
pub fn to_ns_u(value: u64, ns_per_unit: i64, what: &str) -> Result<i64, String> {
    let v = i64::try_from(value).map_err(|_| format!("{what} {value} is out of range"))?;
    to_ns(v, ns_per_unit, what)
}

/// A time unit a value may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultUnit {
    /// Plain numbers are microseconds (intervals, latencies, cyclictest style).
    Micros,
    /// Plain numbers are seconds (durations).
    Seconds,
}

fn unit_ns(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "sec" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3_600e9,
        "d" => 86_400e9,
        _ => return None,
    })
}

/// Parses `250`, `250us`, `1.5ms`, `30s`, `2h`, `1d` into nanoseconds; a plain number is in
/// `default` units. Rejects negatives, non-numbers, unknown units and overflow.
// Not humantime::parse_duration: it takes whole numbers only, and cyclictest users write
// `-i 1.5ms` and `-D 0.5s`; its unit grammar is what this follows.
pub fn time_ns(text: &str, default: DefaultUnit) -> Result<i64, String> {
    let t = text.trim();
    let example = match default {
        DefaultUnit::Micros => "e.g. 1000, 250us or 1ms",
        DefaultUnit::Seconds => "e.g. 30, 30s, 1.5m, 2h or 1d",
    };
    if t.starts_with('-') {
        return Err(format!("'{text}' is negative; give a positive time, {example}"));
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 =
        num.parse().ok().filter(|v: &f64| v.is_finite()).ok_or_else(|| format!("'{text}' is not a time; {example}"))?;
    let scale = if unit.is_empty() {
        match default {
            DefaultUnit::Micros => 1e3,
            DefaultUnit::Seconds => 1e9,
        }
    } else {
        unit_ns(unit.trim())
            .ok_or_else(|| format!("'{text}' has an unknown unit '{unit}'; use ns, us, ms, s, m, h or d"))?
    };
    let ns = value * scale;
    if ns >= i64::MAX as f64 {
        return Err(format!("'{text}' is too large"));
    }
    Ok(ns.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_format_in_the_chosen_unit() {
        assert_eq!(Unit::Micros.fmt(12_345), "12.3");
        assert_eq!(Unit::Nanos.fmt(12_345), "12345");
        assert_eq!(Unit::Micros.fmt_opt(None), "-");
        assert_eq!(Unit::Micros.fmt_f(2_050.0), "2.0");
    }

    #[test]
    fn periods_read_as_people_write_them() {
        assert_eq!(duration(1_000_000), "1 ms");
        assert_eq!(duration(200_000), "200 µs");
        assert_eq!(duration(1_500_000_000), "1.5 s");
        assert_eq!(duration(750), "750 ns");
    }

    #[test]
    fn sentences_and_columns_format_latencies_one_way() {
        assert_eq!(us(12_345.0), "12.3 µs");
        assert_eq!(ms_fixed(2_500.0, 6), "0.002500");
        assert_eq!(us_short(150_000.0), "150");
        assert_eq!(us_short(12_345.0), "12.3");
        assert_eq!(us_short(1_234.0), "1.23");
    }

    #[test]
    fn unit_conversion_is_checked_and_never_wraps() {
        assert_eq!(to_ns(250, NS_PER_US, "-T"), Ok(250_000));
        assert_eq!(to_ns(-3, NS_PER_MS, "slack"), Ok(-3_000_000));
        let e = to_ns_u(9_223_372_036_854_776, NS_PER_US, "-T").unwrap_err();
        assert!(e.contains("-T 9223372036854776") && e.contains("out of range"), "{e}");
        assert!(to_ns(i64::MAX / 1000 + 1, NS_PER_US, "x").is_err());
        assert!(to_ns_u(u64::MAX, 1, "x").is_err());
        assert!(time_ns("213503982334602d", DefaultUnit::Seconds).is_err());
    }

    #[test]
    fn counted_nouns_are_plural_unless_there_is_one() {
        assert_eq!(count(1, "thread"), "1 thread");
        assert_eq!(count(0, "thread"), "0 threads");
        assert_eq!(count(2, "worker thread"), "2 worker threads");
        assert_eq!(count_was(1, "period"), "1 period was");
        assert_eq!(count_was(3, "period"), "3 periods were");
        assert_eq!(
            (count(2, "deadline miss"), count(1, "deadline miss")),
            ("2 deadline misses".into(), "1 deadline miss".into())
        );
        assert_eq!(count(3, "box"), "3 boxes");
    }
}
