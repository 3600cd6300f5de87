//! [`Authority`]: a request's host and port as the text a `PerKey` is keyed by, written on the
//! stack, so that choosing a request's breaker and budget allocates nothing.

use std::fmt::{self, Write as _};
use std::net::Ipv6Addr;

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
    /// `host:port`, the host written as reqwest's URL parser writes it: letters in lower case
    /// (host names are case-insensitive), an IPv6 address in its canonical form (`[::1]` for
    /// `[0:0:0:0:0:0:0:1]`); so that one host is one key, through either front end.
    pub(crate) fn new(host: &str, port: u16) -> Self {
        let mut text = Authority::Inline {
            bytes: [0u8; ROOM],
            len: 0,
        };
        let ipv6 = host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .and_then(|inner| inner.parse::<Ipv6Addr>().ok());
        match ipv6 {
            Some(address) => {
                // Writing to `Authority` does not fail.
                let _ = write!(text, "[{address}]");
            }
            None => text.push_lowercase(host),
        }
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
        text.push_ascii(b":");
        text.push_ascii(&digits[at..]);
        text
    }

    /// A gRPC request's authority as a `PerKey` key, `host:port` (the scheme's default port
    /// when it names none); `""` for a request without one (a generated client without an
    /// origin).
    #[cfg(feature = "tonic")]
    pub(crate) fn of_uri(uri: &::http::Uri) -> Self {
        match uri.host() {
            Some(host) => {
                let default_port = if uri.scheme_str() == Some("https") {
                    443
                } else {
                    80
                };
                Authority::new(host, uri.port_u16().unwrap_or(default_port))
            }
            None => Authority::text(""),
        }
    }

    /// Text given whole (a gRPC layer's configured origin, a streamed request's authority
    /// written before it was sent, or `""` for no authority).
    #[cfg(any(feature = "tonic", feature = "reqwest-middleware"))]
    pub(crate) fn text(text: &str) -> Self {
        let mut authority = Authority::Inline {
            bytes: [0u8; ROOM],
            len: 0,
        };
        let _ = authority.write_str(text);
        authority
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            Authority::Inline { bytes, len } => {
                // Only whole `str`s and ASCII bytes are ever written.
                std::str::from_utf8(&bytes[..*len]).unwrap_or_default()
            }
            Authority::Heap(text) => text,
        }
    }

    /// Append `host` with its ASCII letters in lower case.
    fn push_lowercase(&mut self, host: &str) {
        let _ = self.write_str(host);
        let written = host.len();
        match self {
            Authority::Inline { bytes, len } => bytes[*len - written..*len].make_ascii_lowercase(),
            Authority::Heap(text) => {
                let from = text.len() - written;
                text[from..].make_ascii_lowercase();
            }
        }
    }

    /// Append ASCII bytes.
    fn push_ascii(&mut self, ascii: &[u8]) {
        debug_assert!(ascii.is_ascii());
        let _ = self.write_str(std::str::from_utf8(ascii).unwrap_or_default());
    }
}

/// Appends on the stack while the text fits, then moves it to the heap.
impl fmt::Write for Authority {
    fn write_str(&mut self, more: &str) -> fmt::Result {
        match self {
            Authority::Inline { bytes, len } if *len + more.len() <= ROOM => {
                bytes[*len..*len + more.len()].copy_from_slice(more.as_bytes());
                *len += more.len();
            }
            Authority::Inline { .. } => {
                let mut text = String::with_capacity(self.as_str().len() + more.len());
                text.push_str(self.as_str());
                text.push_str(more);
                *self = Authority::Heap(text);
            }
            Authority::Heap(text) => text.push_str(more),
        }
        Ok(())
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
    fn hosts_are_written_as_reqwest_writes_them() {
        assert_eq!(
            Authority::new("API.Example.COM", 443).as_str(),
            "api.example.com:443"
        );
        assert_eq!(Authority::new("LOCALHOST", 8084).as_str(), "localhost:8084");
        assert_eq!(
            Authority::new("[0:0:0:0:0:0:0:1]", 8083).as_str(),
            "[::1]:8083"
        );
        assert_eq!(
            Authority::new("[2001:DB8::0:1]", 80).as_str(),
            "[2001:db8::1]:80"
        );
        // Not an address: written as given, in lower case.
        assert_eq!(Authority::new("[nonsense]", 1).as_str(), "[nonsense]:1");
        let long = "Y".repeat(300);
        assert_eq!(
            Authority::new(&long, 80).as_str(),
            format!("{}:80", long.to_lowercase())
        );
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
