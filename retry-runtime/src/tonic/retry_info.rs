//! `google.rpc.RetryInfo` in a status's details (`grpc-status-details-bin`): the wait Google's
//! APIs ask for (AIP-194), which the crate honours as the retry-after when the server sent no
//! `grpc-retry-pushback-ms`. Read with a few lines of protobuf wire format rather than a
//! protobuf crate: three nested messages, two fields each.
//!
//! ```text
//! google.rpc.Status  { int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3; }
//! google.protobuf.Any { string type_url = 1; bytes value = 2; }
//! google.rpc.RetryInfo { google.protobuf.Duration retry_delay = 1; }
//! google.protobuf.Duration { int64 seconds = 1; int32 nanos = 2; }
//! ```

use ::http::HeaderMap;
use std::time::Duration;

const RETRY_INFO: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// The `RetryInfo` delay in an encoded `google.rpc.Status` (a `Status::details()`); `None`
/// when there is none, or when what is there is malformed or negative.
pub(crate) fn delay_in_details(status: &[u8]) -> Option<Duration> {
    let mut delay = None;
    for (field, value) in Fields(status) {
        if let (3, Value::Bytes(any)) = (field.ok()?, value.ok()?) {
            let (mut type_url, mut payload) = (None, None);
            for (field, value) in Fields(any) {
                match (field.ok()?, value.ok()?) {
                    (1, Value::Bytes(url)) => type_url = Some(url),
                    (2, Value::Bytes(bytes)) => payload = Some(bytes),
                    _ => {}
                }
            }
            if type_url == Some(RETRY_INFO.as_bytes()) {
                delay = Some(retry_delay(payload.unwrap_or_default())?);
            }
        }
    }
    delay
}

/// The `RetryInfo` delay in a response's `grpc-status-details-bin` header (base64).
pub(crate) fn delay_in_header(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(super::wire::DETAILS_KEY)?;
    delay_in_details(&base64(value.as_bytes())?)
}

/// `RetryInfo { retry_delay }` as a `Duration`: a zero delay when it is absent.
fn retry_delay(info: &[u8]) -> Option<Duration> {
    let mut delay = Duration::ZERO;
    for (field, value) in Fields(info) {
        if let (1, Value::Bytes(duration)) = (field.ok()?, value.ok()?) {
            let (mut seconds, mut nanos) = (0i64, 0i64);
            for (field, value) in Fields(duration) {
                match (field.ok()?, value.ok()?) {
                    (1, Value::Varint(v)) => seconds = v as i64,
                    // An int32 is sign-extended to 64 bits on the wire.
                    (2, Value::Varint(v)) => nanos = v as i64,
                    _ => {}
                }
            }
            if seconds < 0 || !(0..1_000_000_000).contains(&nanos) {
                return None;
            }
            delay = Duration::new(seconds as u64, nanos as u32);
        }
    }
    Some(delay)
}

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// The fields of a message, in order: `Err(())` once the bytes are malformed (the walk stops).
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = (Result<u64, ()>, Result<Value<'a>, ()>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let parsed = self.field();
        if parsed.is_err() {
            self.0 = &[];
        }
        Some(match parsed {
            Ok((field, value)) => (Ok(field), Ok(value)),
            Err(()) => (Err(()), Err(())),
        })
    }
}

impl<'a> Fields<'a> {
    fn field(&mut self) -> Result<(u64, Value<'a>), ()> {
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => self.skip(8)?,
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| ())?;
                let (bytes, rest) = self.0.split_at_checked(len).ok_or(())?;
                self.0 = rest;
                Value::Bytes(bytes)
            }
            5 => self.skip(4)?,
            _ => return Err(()),
        };
        Ok((key >> 3, value))
    }

    fn skip(&mut self, n: usize) -> Result<Value<'a>, ()> {
        self.0 = self.0.get(n..).ok_or(())?;
        Ok(Value::Fixed)
    }

    fn varint(&mut self) -> Result<u64, ()> {
        let mut value = 0u64;
        for (i, &byte) in self.0.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                self.0 = &self.0[i + 1..];
                return Ok(value);
            }
        }
        Err(())
    }
}

/// Standard base64, padded or not (gRPC's binary headers are sent unpadded).
fn base64(text: &[u8]) -> Option<Vec<u8>> {
    let digit = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let text = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= digit(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        match chunk.len() {
            4 => out.extend_from_slice(&bytes[1..4]),
            3 => out.extend_from_slice(&bytes[1..3]),
            2 => out.push(bytes[1]),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    fn bytes_field(field: u64, bytes: &[u8], out: &mut Vec<u8>) {
        varint(field << 3 | 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    /// An encoded `google.rpc.Status` with `code`, a message and the given `Any` details.
    pub(crate) fn status_with(details: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut status = Vec::new();
        varint(1 << 3, &mut status);
        varint(8, &mut status); // RESOURCE_EXHAUSTED
        bytes_field(2, b"slow down", &mut status);
        for (type_url, value) in details {
            let mut any = Vec::new();
            bytes_field(1, type_url.as_bytes(), &mut any);
            bytes_field(2, value, &mut any);
            bytes_field(3, &any, &mut status);
        }
        status
    }

    /// An encoded `RetryInfo` of `seconds` and `nanos`.
    pub(crate) fn retry_info(seconds: i64, nanos: i32) -> Vec<u8> {
        let mut duration = Vec::new();
        varint(1 << 3, &mut duration);
        varint(seconds as u64, &mut duration);
        varint(2 << 3, &mut duration);
        varint(nanos as i64 as u64, &mut duration);
        let mut info = Vec::new();
        bytes_field(1, &duration, &mut info);
        info
    }

    #[test]
    fn the_retry_delay_is_read_among_other_details() {
        let status = status_with(&[
            (
                "type.googleapis.com/google.rpc.ErrorInfo",
                vec![10, 3, b'a', b'b', b'c'],
            ),
            (RETRY_INFO, retry_info(2, 500_000_000)),
        ]);
        assert_eq!(delay_in_details(&status), Some(Duration::from_millis(2500)));
        assert_eq!(delay_in_details(&status_with(&[])), None);
    }

    #[test]
    fn malformed_or_negative_details_give_no_delay() {
        assert_eq!(
            delay_in_details(&status_with(&[(RETRY_INFO, retry_info(-1, 0))])),
            None
        );
        assert_eq!(
            delay_in_details(&status_with(&[(RETRY_INFO, retry_info(1, -5))])),
            None
        );
        let mut cut = status_with(&[(RETRY_INFO, retry_info(2, 0))]);
        cut.pop();
        assert_eq!(delay_in_details(&cut), None);
        assert_eq!(delay_in_details(&[0xff; 12]), None);
    }

    #[test]
    fn base64_padded_or_not() {
        assert_eq!(base64(b"aGVsbG8"), Some(b"hello".to_vec()));
        assert_eq!(base64(b"aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(base64(b"aGk="), Some(b"hi".to_vec()));
        assert_eq!(base64(b"a"), None);
        assert_eq!(base64(b"a*=="), None);
    }
}
