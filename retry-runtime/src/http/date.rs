//! HTTP-dates (RFC 9110 §5.6.7) for `Retry-After`: IMF-fixdate, RFC 850 and asctime, parsed
//! without a date crate.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// An HTTP-date in any of RFC 9110's three forms (§5.6.7), as a point in time.
///
/// ```text
/// IMF-fixdate  Sun, 06 Nov 1994 08:49:37 GMT
/// RFC 850      Sunday, 06-Nov-94 08:49:37 GMT
/// asctime      Sun Nov  6 08:49:37 1994
/// ```
pub(super) fn parse_http_date(s: &str, now: SystemTime) -> Option<SystemTime> {
    let civil = match s.split_once(", ") {
        Some((day, rest)) if DAYS.contains(&day) => imf_fixdate(rest)?,
        Some((day, rest)) if LONG_DAYS.contains(&day) => rfc850(rest, now)?,
        Some(_) => return None,
        None => asctime(s)?,
    };
    civil.to_system_time()
}

/// `06 Nov 1994 08:49:37 GMT`
fn imf_fixdate(s: &str) -> Option<Civil> {
    let s = s.as_bytes();
    if s.len() != 24 || s[2] != b' ' || s[6] != b' ' || s[11] != b' ' || &s[20..] != b" GMT" {
        return None;
    }
    Civil::new(
        digits(&s[7..11])?,
        month(&s[3..6])?,
        digits(&s[0..2])?,
        &s[12..20],
    )
}

/// `06-Nov-94 08:49:37 GMT`, the two-digit year resolved against `now`.
fn rfc850(s: &str, now: SystemTime) -> Option<Civil> {
    let s = s.as_bytes();
    if s.len() != 22 || s[2] != b'-' || s[6] != b'-' || s[9] != b' ' || &s[18..] != b" GMT" {
        return None;
    }
    let yy = i64::from(digits(&s[7..9])?);
    // RFC 9110: a two-digit year that would be more than 50 years in the future is the most
    // recent past year with those digits.
    let this_year = Civil::year_of(now);
    let mut year = this_year - this_year.rem_euclid(100) + yy;
    if year > this_year + 50 {
        year -= 100;
    }
    Civil::new(
        u32::try_from(year).ok()?,
        month(&s[3..6])?,
        digits(&s[0..2])?,
        &s[10..18],
    )
}

/// `Sun Nov  6 08:49:37 1994` (the day of month padded with a space, not a zero).
fn asctime(s: &str) -> Option<Civil> {
    let s = s.as_bytes();
    if s.len() != 24 || s[3] != b' ' || s[7] != b' ' || s[10] != b' ' || s[19] != b' ' {
        return None;
    }
    if !DAYS.iter().any(|d| d.as_bytes() == &s[0..3]) {
        return None;
    }
    let day = match s[8] {
        b' ' => digits(&s[9..10])?,
        _ => digits(&s[8..10])?,
    };
    Civil::new(digits(&s[20..24])?, month(&s[4..7])?, day, &s[11..19])
}

/// Exactly `s.len()` ASCII digits as a number.
fn digits(s: &[u8]) -> Option<u32> {
    s.iter().try_fold(0u32, |n, &d| {
        d.is_ascii_digit()
            .then(|| n.saturating_mul(10).saturating_add(u32::from(d - b'0')))
    })
}

/// The month number (1-based) of a three-letter month name.
fn month(s: &[u8]) -> Option<u32> {
    let i = MONTHS.iter().position(|m| m.as_bytes() == s)?;
    u32::try_from(i + 1).ok()
}

/// A validated UTC date and time of day.
struct Civil {
    year: u32,
    month: u32,
    day: u32,
    seconds_of_day: u32,
}

impl Civil {
    /// The date and `HH:MM:SS` (second 60 allowed, for a leap second), if they exist.
    fn new(year: u32, month: u32, day: u32, time: &[u8]) -> Option<Civil> {
        if time.len() != 8 || time[2] != b':' || time[5] != b':' {
            return None;
        }
        let (h, m, s) = (
            digits(&time[0..2])?,
            digits(&time[3..5])?,
            digits(&time[6..8])?,
        );
        let days_in_month = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
            2 => 28,
            _ => return None,
        };
        if day == 0 || day > days_in_month || h > 23 || m > 59 || s > 60 {
            return None;
        }
        Some(Civil {
            year,
            month,
            day,
            seconds_of_day: h * 3600 + m * 60 + s,
        })
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's `days_from_civil`).
    fn days_since_epoch(year: i64, month: u32, day: u32) -> i64 {
        let y = if month <= 2 { year - 1 } else { year };
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let mp = i64::from((month + 9) % 12);
        let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The calendar year of a point in time (Hinnant's `civil_from_days`, year only).
    fn year_of(t: SystemTime) -> i64 {
        let secs = match t.duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
        };
        let z = secs.div_euclid(86_400) + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let year = yoe + era * 400;
        if mp >= 10 { year + 1 } else { year }
    }

    fn to_system_time(&self) -> Option<SystemTime> {
        let days = Civil::days_since_epoch(i64::from(self.year), self.month, self.day);
        let secs = days * 86_400 + i64::from(self.seconds_of_day);
        match u64::try_from(secs) {
            Ok(secs) => UNIX_EPOCH.checked_add(Duration::from_secs(secs)),
            // Before 1970: certainly in the past, and `duration_since` makes that zero.
            Err(_) => Some(UNIX_EPOCH),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{EXAMPLE, at};
    use super::*;

    #[test]
    fn rfc850_two_digit_years_are_never_more_than_50_years_ahead() {
        // Now: 2026-06-01.
        let now = at(1_780_272_000);
        assert_eq!(Civil::year_of(now), 2026);
        let year_of = |date: &str| {
            let t = parse_http_date(date, now).unwrap();
            Civil::year_of(t)
        };
        assert_eq!(year_of("Monday, 01-Jun-26 00:00:00 GMT"), 2026);
        assert_eq!(year_of("Monday, 01-Jun-76 00:00:00 GMT"), 2076);
        assert_eq!(year_of("Monday, 01-Jun-77 00:00:00 GMT"), 1977);
        assert_eq!(year_of("Monday, 01-Jun-94 00:00:00 GMT"), 1994);
        assert_eq!(year_of("Monday, 01-Jun-00 00:00:00 GMT"), 2000);
    }

    #[test]
    fn year_of_matches_known_dates() {
        assert_eq!(Civil::year_of(UNIX_EPOCH), 1970);
        assert_eq!(Civil::year_of(at(EXAMPLE)), 1994);
        assert_eq!(Civil::year_of(at(951_782_400)), 2000);
        assert_eq!(Civil::year_of(at(1_735_689_599)), 2024);
        assert_eq!(Civil::year_of(at(1_735_689_600)), 2025);
        assert_eq!(Civil::year_of(UNIX_EPOCH - Duration::from_secs(1)), 1969);
    }
}
