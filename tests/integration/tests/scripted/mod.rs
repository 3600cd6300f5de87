//! A scripted HTTP/1.1 server on 127.0.0.1, written over blocking std sockets (not hyper) so
//! that it can misbehave as networks do: reset a connection (`SO_LINGER` 0, so an RST, not a
//! FIN), write half a response head, close without answering, hang, answer before reading the
//! body, or write its answer in slow pieces. One thread per connection, in real time: the
//! client's paused tokio clock does not reach it.
//!
//! For every request it reads the head, then (unless the behaviour answers or resets first)
//! the body to the last byte by its framing (`Content-Length` or chunked), and records a
//! [`Receipt`]: the method, the framing, the `Idempotency-Key`, the body bytes and whether the
//! request arrived complete.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long a connection thread waits on a read before it gives up: a safety net only (a test
/// that reaches it is reported, it never decides an outcome).
pub const SAFETY: Duration = Duration::from_secs(5);

/// What the server does with every request it is sent (a row of the matrix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// Read the request, answer 200 `answer`; keep the connection open for the next one.
    Answer,
    /// Read the request, answer 503 `busy` (no `Retry-After`); keep the connection open.
    Unavailable,
    /// Read the head only, then reset the connection.
    ResetBeforeBody,
    /// Read the whole request, then reset the connection.
    ResetAfterBody,
    /// Read the whole request, write `HTTP/1.1 200 OK\r\nContent-Len`, then reset.
    HalfHead,
    /// Read the whole request, then close cleanly (FIN) without a word.
    Close,
    /// Read the whole request, then never answer, until the client goes away.
    Hang,
    /// Read the head only, answer 200 `early` with `Connection: close` at once, and close
    /// (politely: stop writing, then read and discard what the client still sends, so the
    /// client reads the answer rather than a reset).
    EarlyAnswer,
    /// Read the request, answer 200 with its body written in four pieces, with real pauses
    /// between them; keep the connection open.
    SlowBody,
    /// Nothing listens on the port.
    Refused,
}

impl Behaviour {
    /// The response body this behaviour answers with, if it answers.
    pub fn reply(self) -> Option<&'static [u8]> {
        match self {
            Behaviour::Answer => Some(b"answer"),
            Behaviour::Unavailable => Some(b"busy"),
            Behaviour::EarlyAnswer => Some(b"early"),
            Behaviour::SlowBody => Some(SLOW_BODY),
            _ => None,
        }
    }

    /// The server reads the request body before it acts.
    fn reads_body(self) -> bool {
        !matches!(self, Behaviour::ResetBeforeBody | Behaviour::EarlyAnswer)
    }
}

/// What [`Behaviour::SlowBody`] answers, written five bytes at a time.
const SLOW_BODY: &[u8] = b"slow body in pieces";

/// How a request announced its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Neither `Content-Length` nor `Transfer-Encoding`: no body.
    NoBody,
    /// `content-length: N`.
    Length(u64),
    /// `transfer-encoding: chunked`.
    Chunked,
}

impl std::fmt::Display for Framing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Framing::NoBody => f.write_str("no body"),
            Framing::Length(n) => write!(f, "content-length: {n}"),
            Framing::Chunked => f.write_str("chunked"),
        }
    }
}

/// One request as the server received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub method: String,
    pub framing: Framing,
    pub key: Option<String>,
    /// The body bytes read (all of them when `complete`, what arrived otherwise; none when the
    /// behaviour did not read the body).
    pub body: Vec<u8>,
    /// The head and the whole body (by its framing) arrived.
    pub complete: bool,
}

/// What a server saw once every connection had ended.
#[derive(Debug, Default)]
pub struct Seen {
    pub receipts: Vec<Receipt>,
    pub connections: usize,
    /// Hung connections ended by [`SAFETY`] rather than by the client going away.
    pub hangs_expired: usize,
    /// Every connection had ended within the limit given to [`Server::finish`].
    pub settled: bool,
}

#[derive(Default)]
struct Log {
    receipts: Mutex<Vec<Receipt>>,
    connections: AtomicUsize,
    hangs_expired: AtomicUsize,
    /// Connection threads still running, and a signal when one ends.
    active: Mutex<usize>,
    ended: Condvar,
    stopping: AtomicBool,
    /// The local address of the connection that wakes the accept loop to stop it.
    waker: Mutex<Option<SocketAddr>>,
    waker_known: Condvar,
}

/// A running scripted server.
pub struct Server {
    addr: SocketAddr,
    log: Arc<Log>,
    /// Connections that have read a whole request and are now hanging: what a client under a
    /// paused clock waits for before it lets its attempt timeout fire.
    parked: Arc<AtomicUsize>,
    accept: JoinHandle<()>,
}

impl Server {
    /// A server on 127.0.0.1 (port 0) doing `behaviour` with every request.
    pub fn start(behaviour: Behaviour) -> Server {
        assert_ne!(
            behaviour,
            Behaviour::Refused,
            "a refused port has no server"
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Log::default());
        let parked = Arc::new(AtomicUsize::new(0));
        let accept = {
            let (log, parked) = (log.clone(), parked.clone());
            thread::spawn(move || accept_loop(&listener, behaviour, &log, &parked))
        };
        Server {
            addr,
            log,
            parked,
            accept,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn parked(&self) -> Arc<AtomicUsize> {
        self.parked.clone()
    }

    /// Blocking: stop accepting (every connection the client made is accepted first: they are
    /// ahead of ours in the backlog), wait up to `limit` for every connection to end — that is,
    /// for the server to have read everything the client wrote — and say what it saw.
    pub fn finish(self, limit: Duration) -> Seen {
        self.log.stopping.store(true, Ordering::SeqCst);
        let waker = TcpStream::connect(self.addr).unwrap();
        *self.log.waker.lock().unwrap() = Some(waker.local_addr().unwrap());
        self.log.waker_known.notify_all();
        self.accept.join().unwrap();
        drop(waker);
        let deadline = Instant::now() + limit;
        let mut active = self.log.active.lock().unwrap();
        while *active > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            active = self.log.ended.wait_timeout(active, left).unwrap().0;
        }
        let settled = *active == 0;
        drop(active);
        Seen {
            receipts: self.log.receipts.lock().unwrap().clone(),
            connections: self.log.connections.load(Ordering::SeqCst),
            hangs_expired: self.log.hangs_expired.load(Ordering::SeqCst),
            settled,
        }
    }
}

/// An address with nothing listening: bound, read, closed.
pub fn refused_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn accept_loop(
    listener: &TcpListener,
    behaviour: Behaviour,
    log: &Arc<Log>,
    parked: &Arc<AtomicUsize>,
) {
    loop {
        let Ok((stream, peer)) = listener.accept() else {
            return;
        };
        if log.stopping.load(Ordering::SeqCst) {
            let mut waker = log.waker.lock().unwrap();
            while waker.is_none() {
                waker = log.waker_known.wait(waker).unwrap();
            }
            if *waker == Some(peer) {
                return;
            }
        }
        log.connections.fetch_add(1, Ordering::SeqCst);
        *log.active.lock().unwrap() += 1;
        let (log, parked) = (log.clone(), parked.clone());
        thread::spawn(move || {
            // Counted out even if the thread panics.
            let _active = Active(&log);
            connection(stream, behaviour, &log, &parked);
        });
    }
}

struct Active<'a>(&'a Log);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        *self.0.active.lock().unwrap() -= 1;
        self.0.ended.notify_all();
    }
}

/// Serve one connection: request after request while the behaviour keeps it alive.
fn connection(stream: TcpStream, behaviour: Behaviour, log: &Log, parked: &AtomicUsize) {
    stream.set_read_timeout(Some(SAFETY)).unwrap();
    stream.set_nodelay(true).unwrap();
    // One descriptor only (no `try_clone`), so that a reset takes effect when it is dropped.
    let mut reader = BufReader::new(stream);
    loop {
        let Ok(Some(mut receipt)) = read_head(&mut reader) else {
            // The client closed (or broke) the connection between requests.
            return;
        };
        if behaviour.reads_body() {
            receipt.complete = read_body(&mut reader, receipt.framing, &mut receipt.body).is_ok();
        } else {
            receipt.complete = matches!(receipt.framing, Framing::NoBody | Framing::Length(0));
        }
        let complete = receipt.complete;
        log.receipts.lock().unwrap().push(receipt);
        if behaviour.reads_body() && !complete {
            // The client stopped sending mid-body: there is no request to act on.
            return;
        }
        let stream = reader.get_ref();
        match behaviour {
            Behaviour::Answer => {
                if write(
                    stream,
                    b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nanswer",
                )
                .is_err()
                {
                    return;
                }
            }
            Behaviour::Unavailable => {
                let reply = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy";
                if write(stream, reply).is_err() {
                    return;
                }
            }
            Behaviour::SlowBody => {
                let length = SLOW_BODY.len();
                let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {length}\r\n\r\n");
                if write(stream, head.as_bytes()).is_err() {
                    return;
                }
                for piece in SLOW_BODY.chunks(5) {
                    thread::sleep(Duration::from_millis(5));
                    if write(stream, piece).is_err() {
                        return;
                    }
                }
            }
            Behaviour::ResetBeforeBody | Behaviour::ResetAfterBody => {
                return reset(reader.into_inner());
            }
            Behaviour::HalfHead => {
                let _ = write(stream, b"HTTP/1.1 200 OK\r\nContent-Len");
                return reset(reader.into_inner());
            }
            Behaviour::Close => {
                // Everything the client sent was read, so the close is a FIN.
                drop(reader);
                return;
            }
            Behaviour::Hang => {
                parked.fetch_add(1, Ordering::SeqCst);
                if drain(&mut reader) == Drained::Expired {
                    log.hangs_expired.fetch_add(1, Ordering::SeqCst);
                }
                return;
            }
            Behaviour::EarlyAnswer => {
                let reply =
                    b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 5\r\n\r\nearly";
                if write(stream, reply).is_ok() {
                    let _ = stream.shutdown(Shutdown::Write);
                    drain(&mut reader);
                }
                return;
            }
            Behaviour::Refused => unreachable!(),
        }
    }
}

fn write(mut stream: &TcpStream, bytes: &[u8]) -> io::Result<()> {
    stream.write_all(bytes)?;
    stream.flush()
}

/// Close with an RST: `SO_LINGER` 0, then drop (through tokio's `TcpSocket`, which sets socket
/// options on a std socket without a runtime).
fn reset(stream: TcpStream) {
    let socket = tokio::net::TcpSocket::from_std_stream(stream);
    // Deprecated because a non-zero linger blocks the dropping thread; zero never does.
    #[allow(deprecated)]
    socket.set_linger(Some(Duration::ZERO)).unwrap();
    drop(socket);
}

#[derive(PartialEq, Eq)]
enum Drained {
    /// The client closed or reset the connection.
    ClientLeft,
    /// [`SAFETY`] passed first.
    Expired,
}

/// Read and discard until the client goes away (or the safety limit passes).
fn drain(reader: &mut BufReader<TcpStream>) -> Drained {
    let mut sink = [0; 4096];
    loop {
        match reader.read(&mut sink) {
            Ok(0) => return Drained::ClientLeft,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Drained::Expired;
            }
            Err(_) => return Drained::ClientLeft,
        }
    }
}

/// One line ending in `\n`, or an error if the connection ends first.
fn read_line(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line)?;
    if line.last() != Some(&b'\n') {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(line)
}

/// A request head, as a receipt with no body yet; `None` if the connection ended cleanly
/// before a request began.
fn read_head(reader: &mut impl BufRead) -> io::Result<Option<Receipt>> {
    if reader.fill_buf()?.is_empty() {
        return Ok(None);
    }
    let request_line = String::from_utf8_lossy(&read_line(reader)?).into_owned();
    let method = request_line
        .split(' ')
        .next()
        .unwrap_or_default()
        .to_owned();
    let mut receipt = Receipt {
        method,
        framing: Framing::NoBody,
        key: None,
        body: Vec::new(),
        complete: false,
    };
    loop {
        let line = read_line(reader)?;
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end();
        if line.is_empty() {
            return Ok(Some(receipt));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(io::ErrorKind::InvalidData.into());
        };
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-length" if receipt.framing != Framing::Chunked => {
                let n = value
                    .parse()
                    .map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
                receipt.framing = Framing::Length(n);
            }
            "transfer-encoding" if value.to_ascii_lowercase().contains("chunked") => {
                receipt.framing = Framing::Chunked;
            }
            "idempotency-key" => receipt.key = Some(value.to_owned()),
            _ => {}
        }
    }
}

/// Read the body to its last byte by its framing, into `body`; an error if the connection ends
/// (or breaks) first, with what did arrive left in `body`.
fn read_body(reader: &mut impl BufRead, framing: Framing, body: &mut Vec<u8>) -> io::Result<()> {
    match framing {
        Framing::NoBody => Ok(()),
        Framing::Length(n) => read_exactly(reader, n, body),
        Framing::Chunked => loop {
            let line = read_line(reader)?;
            let line = String::from_utf8_lossy(&line);
            let size = line.trim_end().split(';').next().unwrap_or_default();
            let size = u64::from_str_radix(size.trim(), 16)
                .map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while read_line(reader)? != b"\r\n" {}
                return Ok(());
            }
            read_exactly(reader, size, body)?;
            if read_line(reader)? != b"\r\n" {
                return Err(io::ErrorKind::InvalidData.into());
            }
        },
    }
}

fn read_exactly(reader: &mut impl BufRead, n: u64, body: &mut Vec<u8>) -> io::Result<()> {
    let before = body.len();
    Read::take(&mut *reader, n).read_to_end(body)?;
    if ((body.len() - before) as u64) < n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}
