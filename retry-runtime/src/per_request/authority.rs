//! [`Authority`]: a request's host and port as the text a `PerKey` is keyed by, written on the
//! stack, so that choosing a request's breaker and budget allocates nothing.

use std::fmt;

/// Room for a DNS name (at most 253 bytes), a colon and a port.
const ROOM: usize = 260;

/// A request's authority written `host:port` (the scheme's default port when the URL names
/// none), so that `PER_HOST.get("api.example:443")` finds the entry of `https://api.example/..`:
/// the same text for a reqwest `Url` and an `http::Uri` naming one host. Kept on the stack; a
/// longer host (not a DNS name) goes on the heap.
// The large variant is the point: the text lives on the stack while a request's entries are
// chosen, and boxing it would be the allocation this avoids.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Authority {
    Inline { bytes: [u8; ROOM], len: usize },
    Heap(String),
}

impl Authority {
    /// `host:port`.
    pub(crate) fn new(host: &str, port: u16) -> Self {
        let mut digits = [0u8; 5];
        let mut at = digits.len();
        let mut rest = port;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let port = &digits[at..];
        let len = host.len() + 1 + port.len();
        if len > ROOM {
            let mut text = String::with_capacity(len);
            text.push_str(host);
            text.push(':');
            // ASCII digits.
            text.extend(port.iter().map(|&d| char::from(d)));
            return Authority::Heap(text);
        }
        let mut bytes = [0u8; ROOM];
        bytes[..host.len()].copy_from_slice(host.as_bytes());
        bytes[host.len()] = b':';
        bytes[host.len() + 1..len].copy_from_slice(port);
        Authority::Inline { bytes, len }
    }

    /// Text given whole (a gRPC layer's configured origin, or `""` for no authority).
    #[cfg(feature = "tonic")]
    pub(crate) fn text(text: &str) -> Self {
        if text.len() > ROOM {
            return Authority::Heap(text.to_owned());
        }
        let mut bytes = [0u8; ROOM];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Authority::Inline {
            bytes,
            len: text.len(),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            Authority::Inline { bytes, len } => {
                // Built from a `str`, a colon and ASCII digits only.
                std::str::from_utf8(&bytes[..*len]).unwrap_or_default()
            }
            Authority::Heap(text) => text,
        }
    }
}

impl fmt::Debug for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::Authority;

    #[test]
    fn host_and_port_are_written_as_format_would() {
        for (host, port) in [
            ("api.example", 443),
            ("a", 0),
            ("127.0.0.1", 8080),
            ("[::1]", 65535),
            ("h", 9),
            ("h", 10),
        ] {
            assert_eq!(
                Authority::new(host, port).as_str(),
                format!("{host}:{port}")
            );
        }
    }

    #[test]
    fn a_host_longer_than_the_room_is_written_whole() {
        let host = "x".repeat(300);
        let authority = Authority::new(&host, 80);
        assert!(matches!(authority, Authority::Heap(_)));
        assert_eq!(authority.as_str(), format!("{host}:80"));
        let longest_inline = "y".repeat(260 - ":65535".len());
        let authority = Authority::new(&longest_inline, 65535);
        assert!(matches!(authority, Authority::Inline { .. }));
        assert_eq!(authority.as_str(), format!("{longest_inline}:65535"));
    }

    #[cfg(feature = "tonic")]
    #[test]
    fn text_is_kept_as_given() {
        assert_eq!(Authority::text("").as_str(), "");
        assert_eq!(
            Authority::text("grpc.example:50051").as_str(),
            "grpc.example:50051"
        );
        assert_eq!(Authority::text(&"z".repeat(400)).as_str(), "z".repeat(400));
    }
}
