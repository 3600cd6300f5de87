//! The wait hints servers send besides `Retry-After`: `retry-after-ms` and
//! `x-ms-retry-after-ms` (milliseconds; the Azure SDKs honour them), and the `RateLimit` field
//! of the IETF RateLimit-headers draft (`RateLimit: "default";r=0;t=7`: a quota with nothing
//! remaining resets in 7 s). Each is read only when well formed; a malformed one is ignored,
//! as the draft requires of its field.

use ::http::HeaderMap;
use std::time::Duration;

/// The wait in the first well-formed millisecond header: `retry-after-ms`, then
/// `x-ms-retry-after-ms`. Whole milliseconds (ASCII digits, saturating), as Azure sends them.
pub(super) fn milliseconds(headers: &HeaderMap) -> Option<Duration> {
    ["retry-after-ms", "x-ms-retry-after-ms"]
        .iter()
        .find_map(|name| {
            let value = headers.get(*name)?.to_str().ok()?.trim_matches([' ', '\t']);
            let digits = value.as_bytes();
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            Some(Duration::from_millis(super::saturating_digits(digits)))
        })
}

/// The wait of the `RateLimit` field: the longest reset (`t`) of the quotas with nothing
/// remaining (`r=0`); `None` when every quota has some left, or when the field is malformed
/// (the whole field is then ignored). Several `RateLimit` lines are one list, in order.
pub(super) fn rate_limit(headers: &HeaderMap) -> Option<Duration> {
    let mut wait: Option<u64> = None;
    for value in headers.get_all("ratelimit") {
        let text = value.to_str().ok()?;
        for item in split_list(text)? {
            let (remaining, reset) = item_params(item)?;
            if remaining == Some(0) {
                if let Some(t) = reset {
                    wait = Some(wait.map_or(t, |w| w.max(t)));
                }
            }
        }
    }
    wait.map(Duration::from_secs)
}

/// The members of a structured-field list, split at commas outside quoted strings; `None` for
/// an unterminated string.
fn split_list(text: &str) -> Option<Vec<&str>> {
    let (mut items, mut start, mut quoted, mut escaped) = (Vec::new(), 0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ',' if !quoted => {
                items.push(text[start..i].trim_matches([' ', '\t']));
                start = i + 1;
            }
            _ => {}
        }
    }
    if quoted {
        return None;
    }
    items.push(text[start..].trim_matches([' ', '\t']));
    Some(items)
}

/// One list member: a policy name (a quoted string or a token) and its parameters; `r` and
/// `t`, when present, must be non-negative integers (RFC 9651 allows at most 15 digits).
/// `None` when the member is malformed.
fn item_params(item: &str) -> Option<(Option<u64>, Option<u64>)> {
    let mut parts = item.split(';');
    let name = parts.next()?.trim();
    let well_named = if let Some(inner) = name.strip_prefix('"') {
        inner.ends_with('"')
    } else {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~:/".contains(&b))
    };
    if !well_named {
        return None;
    }
    let (mut remaining, mut reset) = (None, None);
    for param in parts {
        let (key, value) = param.trim().split_once('=')?;
        let number = || -> Option<u64> {
            let v = value.trim();
            (!v.is_empty() && v.len() <= 15 && v.bytes().all(|b| b.is_ascii_digit()))
                .then(|| v.parse().ok())?
        };
        match key.trim() {
            "r" => remaining = Some(number()?),
            "t" => reset = Some(number()?),
            _ => {}
        }
    }
    Some((remaining, reset))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(*name, HeaderValue::from_static(value));
        }
        h
    }

    #[test]
    fn millisecond_headers_in_their_order_malformed_ones_ignored() {
        let ms = |pairs: &[(&'static str, &'static str)]| milliseconds(&headers(pairs));
        assert_eq!(
            ms(&[("retry-after-ms", "1500")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            ms(&[("x-ms-retry-after-ms", "20")]),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            ms(&[("retry-after-ms", "soon"), ("x-ms-retry-after-ms", "20")]),
            Some(Duration::from_millis(20))
        );
        assert_eq!(ms(&[("retry-after-ms", "-5")]), None);
        assert_eq!(ms(&[("retry-after-ms", "1.5")]), None);
    }

    #[test]
    fn rate_limit_waits_for_the_exhausted_quotas_only() {
        let rl = |pairs: &[(&'static str, &'static str)]| rate_limit(&headers(pairs));
        assert_eq!(
            rl(&[("ratelimit", "\"q\";r=0;t=7")]),
            Some(Duration::from_secs(7))
        );
        assert_eq!(rl(&[("ratelimit", "\"q\";r=3;t=7")]), None, "quota left");
        assert_eq!(
            rl(&[("ratelimit", "\"q\";t=7")]),
            None,
            "no r: not known to be exhausted"
        );
        assert_eq!(
            rl(&[("ratelimit", "\"a\";r=0;t=7, \"b\";r=0;t=30, \"c\";r=5;t=90")]),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            rl(&[
                ("ratelimit", "day;r=0;t=3600"),
                ("ratelimit", "\"burst\";r=1;t=1")
            ]),
            Some(Duration::from_secs(3600))
        );
        // Malformed: the field is ignored, as the draft requires.
        for bad in [
            "\"q\";r=0;t=-1",
            "\"q\";r=zero;t=7",
            "\"q;r=0;t=7",
            "\"q\";r=0;t=1.5",
            ";r=0;t=7",
            "\"q\";r=0;t=7;",
        ] {
            assert_eq!(rl(&[("ratelimit", bad)]), None, "{bad}");
        }
    }
}
