//! Wall-clock times as a [`RetryState`](super::RetryState) keeps them: RFC 3339 in UTC with
//! the fraction of a second that is not zero (`2026-12-04T16:28:41.5Z`), readable by an
//! operator in a database row and exact to the nanosecond.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `time` as RFC 3339 UTC; times before 1970 are written as the epoch (a retried call's
/// record is never from then).
pub(crate) fn format(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (rest / 3600, rest % 3600 / 60, rest % 60);
    let mut out = format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}");
    let nanos = since.subsec_nanos();
    if nanos != 0 {
        let fraction = format!("{nanos:09}");
        out.push('.');
        out.push_str(fraction.trim_end_matches('0'));
    }
    out.push('Z');
    out
}

/// An RFC 3339 time with `Z` or a numeric offset, and a fraction of up to nine digits: what
/// [`format`] writes, and what a person or another program may write instead.
pub(crate) fn parse(text: &str) -> Result<SystemTime, String> {
    let bad =
        || format!("\"{text}\" is not a time in RFC 3339 form, such as \"2026-12-04T16:28:41Z\"");
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    if b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let num = |range: std::ops::Range<usize>| -> Result<u64, String> {
        let s = text.get(range).ok_or_else(bad)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        s.parse().map_err(|_| bad())
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mi, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) || hh > 23 || mi > 59 {
        return Err(bad());
    }
    // A leap second is read as the second before the next minute.
    let ss = ss.min(59);
    let mut rest = &text[19..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return Err(bad());
        }
        let padded = format!("{:0<9}", &fraction[..digits]);
        nanos = padded.parse().map_err(|_| bad())?;
        rest = &fraction[digits..];
    }
    let offset: i64 = match rest {
        "Z" | "z" => 0,
        _ => {
            let o = rest.as_bytes();
            if o.len() != 6 || !matches!(o[0], b'+' | b'-') || o[3] != b':' {
                return Err(bad());
            }
            let (oh, om) = (
                num_of(&rest[1..3]).ok_or_else(bad)?,
                num_of(&rest[4..6]).ok_or_else(bad)?,
            );
            let minutes = i64::try_from(oh * 60 + om).map_err(|_| bad())?;
            if o[0] == b'+' {
                minutes * 60
            } else {
                -minutes * 60
            }
        }
    };
    let days = days_from_civil(y, mo, d);
    let local = days * 86_400 + (hh * 3600 + mi * 60 + ss) as i64;
    let secs = u64::try_from(local - offset).map_err(|_| bad())?;
    UNIX_EPOCH
        .checked_add(Duration::new(secs, nanos))
        .ok_or_else(bad)
}

fn num_of(s: &str) -> Option<u64> {
    s.bytes()
        .all(|c| c.is_ascii_digit())
        .then(|| s.parse().ok())?
}

fn is_leap(y: u64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: u64, m: u64) -> u64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a date in the proleptic Gregorian calendar (Hinnant's algorithm).
fn days_from_civil(y: u64, m: u64, d: u64) -> i64 {
    let y = y as i64 - i64::from(m <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day counted from 1970-01-01 (the inverse of [`days_from_civil`]).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y as u64, m as u64, d as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_in_rfc_3339_and_read_back_exactly() {
        let cases = [
            (UNIX_EPOCH, "1970-01-01T00:00:00Z"),
            (
                UNIX_EPOCH + Duration::new(1_733_329_721, 0),
                "2024-12-04T16:28:41Z",
            ),
            (
                UNIX_EPOCH + Duration::new(951_782_400, 500_000_000),
                "2000-02-29T00:00:00.5Z",
            ),
            (
                UNIX_EPOCH + Duration::new(4_102_444_799, 1),
                "2099-12-31T23:59:59.000000001Z",
            ),
        ];
        for (time, text) in cases {
            assert_eq!(format(time), text);
            assert_eq!(parse(text), Ok(time), "{text}");
        }
    }

    #[test]
    fn offsets_and_bad_input() {
        let utc = parse("2026-12-04T16:28:41Z").unwrap();
        assert_eq!(parse("2026-12-04T18:28:41+02:00"), Ok(utc));
        assert_eq!(parse("2026-12-04T11:58:41-04:30"), Ok(utc));
        for bad in [
            "",
            "2026-12-04",
            "2026-13-04T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-12-04T16:28:41",
            "2026-12-04T16:28:41.Z",
            "2026-12-04T16:28:41.1234567890Z",
            "1969-12-31T23:59:59Z",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
