//! Duration strings such as `"250ms"` and `"1.5s"`, parsed exactly.

use std::time::Duration;

/// Units a duration string may end in, with their length in nanoseconds. Microseconds are
/// `us`, or `µs` with either of the two characters people type for the prefix (U+00B5 MICRO
/// SIGN, U+03BC GREEK SMALL LETTER MU).
pub(crate) const UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

const ACCEPTED: &str = "write a number and a unit, such as \"250ms\", \"1.5s\", \"1m30s\" or \"500us\" (units: ns, us, ms, s, m, h)";

/// Parse `"250ms"`, `"1.5s"`, `"2m"`, `"1m30s"`, `"1h 30m"` ... exactly, or say what is
/// wrong. Several parts are added up; each part's unit must be smaller than the one before
/// it, so that a typo (`"30s1m"`, `"1s1s"`) is an error rather than a surprise.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err(format!("\"{text}\" is not a duration; {ACCEPTED}"));
    }
    let too_long = || format!("\"{text}\" is longer than the longest duration Rust can represent");
    let mut rest = text;
    let mut total: u128 = 0;
    let mut previous: Option<(&str, u128)> = None;
    while !rest.is_empty() {
        let (nanos, unit, after) = part(rest, text)?;
        if let Some((before, per_before)) = previous {
            if unit.1 >= per_before {
                return Err(format!(
                    "\"{text}\" has \"{}\" after \"{before}\"; write the parts from the largest unit down, each unit once, such as \"1m30s\"",
                    unit.0
                ));
            }
        }
        previous = Some(unit);
        total = total.checked_add(nanos).ok_or_else(too_long)?;
        rest = after.trim_start();
    }
    let secs = u64::try_from(total / 1_000_000_000).map_err(|_| too_long())?;
    Ok(Duration::new(secs, (total % 1_000_000_000) as u32))
}

/// The first part of `rest` (a number and its unit): its length in nanoseconds, its unit, and
/// what follows it. `text` is the whole string, for the messages.
fn part<'t>(rest: &'t str, text: &str) -> Result<(u128, (&'static str, u128), &'t str), String> {
    let split = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, after) = rest.split_at(split);
    if number.is_empty() {
        return Err(format!("\"{text}\" is not a duration; {ACCEPTED}"));
    }
    let after = after.trim_start();
    let unit_len = after
        .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
        .unwrap_or(after.len());
    let (unit, after) = after.split_at(unit_len);
    let Some(&(name, per_unit)) = UNITS.iter().find(|(u, _)| *u == unit) else {
        if unit.is_empty() {
            return Err(format!("\"{text}\" has no unit; {ACCEPTED}"));
        }
        return Err(format!("unknown unit \"{unit}\"; {ACCEPTED}"));
    };
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) if !f.contains('.') && (!w.is_empty() || !f.is_empty()) => (w, f),
        Some(_) => return Err(format!("\"{text}\" is not a number and a unit; {ACCEPTED}")),
        None => (number, ""),
    };
    let too_long = || format!("\"{text}\" is longer than the longest duration Rust can represent");
    let digits = |s: &str| -> Option<u128> {
        s.bytes().try_fold(0u128, |acc, b| {
            acc.checked_mul(10)?.checked_add(u128::from(b - b'0'))
        })
    };
    let whole_nanos = digits(whole)
        .and_then(|w| w.checked_mul(per_unit))
        .ok_or_else(too_long)?;
    let fraction = fraction.trim_end_matches('0');
    let fraction_nanos = if fraction.is_empty() {
        0
    } else {
        let scale = u32::try_from(fraction.len())
            .ok()
            .and_then(|n| 10u128.checked_pow(n));
        let numerator = digits(fraction).and_then(|f| f.checked_mul(per_unit));
        match (numerator, scale) {
            (Some(n), Some(scale)) if n % scale == 0 => n / scale,
            _ => {
                return Err(format!(
                    "\"{text}\" is finer than a nanosecond, the resolution of `Duration`"
                ));
            }
        }
    };
    let nanos = whole_nanos
        .checked_add(fraction_nanos)
        .ok_or_else(too_long)?;
    // The micro sign's spellings are one unit.
    let unit = if per_unit == 1_000 {
        ("us", per_unit)
    } else {
        (name, per_unit)
    };
    Ok((nanos, unit, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly() {
        let d = |s| parse_duration(s).map(|d| (d.as_secs(), d.subsec_nanos()));
        assert_eq!(d("250ms"), Ok((0, 250_000_000)));
        assert_eq!(d("1.5s"), Ok((1, 500_000_000)));
        assert_eq!(d("2m"), Ok((120, 0)));
        assert_eq!(d("1h"), Ok((3600, 0)));
        assert_eq!(d("500us"), Ok((0, 500_000)));
        assert_eq!(d("0ms"), Ok((0, 0)));
        assert_eq!(d("18446744073709551615s"), Ok((u64::MAX, 0)));
        assert_eq!(d("1.000000001s"), Ok((1, 1)));
        assert!(
            d("1.0000000001s")
                .unwrap_err()
                .contains("finer than a nanosecond")
        );
        assert!(d("18446744073709551616s").unwrap_err().contains("longer"));
        assert!(d("5").unwrap_err().contains("no unit"));
        assert!(d("5 parsecs").unwrap_err().contains("unknown unit"));
        assert!(d("").unwrap_err().contains("not a duration"));
        assert!(d("1.2.3s").is_err());
        assert!(d(".s").is_err());
        assert!(d("-1s").is_err());
    }

    #[test]
    fn compound_durations_add_up_from_the_largest_unit_down() {
        let d = |s| parse_duration(s).map(|d| (d.as_secs(), d.subsec_nanos()));
        assert_eq!(d("1m30s"), Ok((90, 0)));
        assert_eq!(d("1h 30m"), Ok((5400, 0)));
        assert_eq!(d("2s500ms"), Ok((2, 500_000_000)));
        assert_eq!(d("1h1m1s1ms1us1ns"), Ok((3661, 1_001_001)));
        assert_eq!(d("1.5m30s"), Ok((120, 0)));
        let wrong_order = d("30s1m").unwrap_err();
        assert!(wrong_order.contains("\"m\" after \"s\""), "{wrong_order}");
        assert!(d("1s1s").unwrap_err().contains("largest unit down"));
        assert!(d("1us1µs").unwrap_err().contains("largest unit down"));
        assert!(d("1m30").unwrap_err().contains("no unit"));
        assert!(d("1m 30 parsecs").unwrap_err().contains("unknown unit"));
        assert!(d("18446744073709551615s1ms").is_ok());
        assert!(
            d("18446744073709551615s1000ms")
                .unwrap_err()
                .contains("longer")
        );
    }

    #[test]
    fn both_micro_signs_are_microseconds() {
        let micro_sign = parse_duration("1\u{b5}s");
        let greek_mu = parse_duration("1\u{3bc}s");
        assert_eq!(micro_sign, Ok(Duration::from_micros(1)));
        assert_eq!(greek_mu, Ok(Duration::from_micros(1)));
    }
}
