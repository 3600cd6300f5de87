//! Duration strings such as `"250ms"` and `"1.5s"`, parsed exactly.

use std::time::Duration;

/// Units a duration string may end in, with their length in nanoseconds.
pub(crate) const UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Parse `"250ms"`, `"1.5s"`, `"2m"`, ... exactly, or say what is wrong.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    const ACCEPTED: &str = "write a number and a unit, such as \"250ms\", \"1.5s\", \"2m\", \"1h\" or \"500us\" (units: ns, us, ms, s, m, h)";
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim();
    if number.is_empty() {
        return Err(format!("\"{text}\" is not a duration; {ACCEPTED}"));
    }
    let Some((_, per_unit)) = UNITS.iter().find(|(u, _)| *u == unit) else {
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
        .and_then(|w| w.checked_mul(*per_unit))
        .ok_or_else(too_long)?;
    let fraction = fraction.trim_end_matches('0');
    let fraction_nanos = if fraction.is_empty() {
        0
    } else {
        let scale = u32::try_from(fraction.len())
            .ok()
            .and_then(|n| 10u128.checked_pow(n));
        let numerator = digits(fraction).and_then(|f| f.checked_mul(*per_unit));
        match (numerator, scale) {
            (Some(n), Some(scale)) if n % scale == 0 => n / scale,
            _ => {
                return Err(format!(
                    "\"{text}\" is finer than a nanosecond, the resolution of `Duration`"
                ));
            }
        }
    };
    let total = whole_nanos
        .checked_add(fraction_nanos)
        .ok_or_else(too_long)?;
    let secs = u64::try_from(total / 1_000_000_000).map_err(|_| too_long())?;
    Ok(Duration::new(secs, (total % 1_000_000_000) as u32))
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
}
