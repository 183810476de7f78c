//! A fault-injecting HTTP proxy in front of SeaweedFS or fake-gcs-server.
//!
//! The proxy understands just enough HTTP/1.1 to see each request (method
//! and target), forward it upstream on a fresh connection and read the
//! whole answer; then [`Rule`]s decide what the client gets: the answer,
//! an error status, a reset before or after the server acted (a lost
//! acknowledgement), a body cut off or with a flipped byte, or nothing for
//! a while. [`FaultProxy::set_down`] makes it reset every connection, as a
//! dead server would. Every request is logged so tests can count what was
//! sent after an outage.
#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::gcs_rewrites::{Rewrites, Step};
use super::gcs_sessions::Handled;

/// What the client gets instead of the server's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// This status with a small error body; the server never sees the request.
    Status(u16),
    /// The connection is reset before anything reaches the server.
    Reset,
    /// The server acts on the request, then the connection is reset before
    /// its answer reaches the client.
    LostAck,
    /// The answer's head promises the whole body; half of it arrives.
    Truncate,
    /// The answer arrives whole, with one byte of its body flipped.
    Corrupt,
    /// The server acts and answers, after this long.
    Delay(Duration),
    /// Nothing for this long, then the connection closes.
    Hang(Duration),
    /// An S3 error answer with this status, code and message (what AWS
    /// says where a test server would not); the server never sees it.
    S3Error(u16, &'static str, &'static str),
    /// The request reaches the server without its `Range` header (as
    /// through a gateway that drops it): the whole object comes back.
    IgnoreRange,
    /// An S3 ListParts answer says it is truncated and names part 1 as the
    /// next page's marker, whatever marker it was asked from: a server
    /// that repeats its marker.
    RepeatPartMarker,
}

/// Which requests a fault applies to, and how often.
#[derive(Debug, Clone)]
pub struct Rule {
    method: Option<String>,
    targets: Vec<String>,
    skip: usize,
    times: usize,
    fault: Fault,
    matched: usize,
    fired: usize,
}

impl Rule {
    /// Every request, every time, until narrowed.
    pub fn new(fault: Fault) -> Rule {
        Rule {
            method: None,
            targets: Vec::new(),
            skip: 0,
            times: usize::MAX,
            fault,
            matched: 0,
            fired: 0,
        }
    }

    pub fn method(mut self, method: &str) -> Rule {
        self.method = Some(method.to_string());
        self
    }

    /// Requests whose target (path and query) contains `s` (and every
    /// other string given so).
    pub fn target(mut self, s: &str) -> Rule {
        self.targets.push(s.to_string());
        self
    }

    /// Lets the first `n` matching requests through untouched.
    pub fn skip(mut self, n: usize) -> Rule {
        self.skip = n;
        self
    }

    /// Fires at most `n` times.
    pub fn times(mut self, n: usize) -> Rule {
        self.times = n;
        self
    }

    fn matches(&self, method: &str, target: &str) -> bool {
        self.method.as_deref().is_none_or(|m| m == method)
            && self.targets.iter().all(|t| target.contains(t.as_str()))
    }
}

/// One request the proxy saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub fault: Option<Fault>,
    pub at: Instant,
    /// The request's `User-Agent` (empty if none).
    pub agent: String,
    /// The request's `Range` (empty if none).
    pub range: String,
    /// An S3 server-side copy (`x-amz-copy-source` set).
    pub copy_source: bool,
}

impl Seen {
    /// `METHOD target`, marked ` (copy)` for an S3 server-side copy: what
    /// [`class`] reads.
    pub fn line(&self) -> String {
        let copy = if self.copy_source { " (copy)" } else { "" };
        format!("{} {}{copy}", self.method, self.target)
    }

    /// The request's class, as swamp's plans and applies count them.
    pub fn class(&self) -> &'static str {
        class(&self.line())
    }
}

/// The class of a request line ([`Seen::line`]), as swamp counts them:
/// `list`, `get` (content), `head` (metadata only: S3 HEAD, a GCS
/// metadata GET), `put`, `copy`, `delete`.
pub fn class(line: &str) -> &'static str {
    let get = line.starts_with("GET ");
    let gcs_object = line.contains("/storage/v1/b/") && line.contains("/o/");
    if line.contains("list-type=2")
        || (get && (line.contains("/o?") || line.ends_with("/o")))
        || (get && (line.contains("?uploads") || line.contains("uploadId=")))
    {
        "list"
    } else if line.ends_with(" (copy)") || line.contains("/copyTo/") || line.contains("/rewriteTo/")
    {
        "copy"
    } else if line.starts_with("HEAD ") || (get && gcs_object && !line.contains("alt=media")) {
        "head"
    } else if get {
        "get"
    } else if line.starts_with("DELETE ") || (line.starts_with("POST ") && line.contains("?delete"))
    {
        "delete"
    } else {
        "put"
    }
}

struct State {
    upstream: String,
    rules: Mutex<Vec<Rule>>,
    /// Seeded random faults on a share of the requests no rule took.
    chaos: Mutex<Option<(fastrand::Rng, f64)>>,
    down: AtomicBool,
    seen: Mutex<Vec<Seen>>,
    /// GCS resumable-upload sessions, emulated here (fake-gcs-server's
    /// are not faithful: see `gcs_sessions`).
    sessions: super::gcs_sessions::Sessions,
    /// GCS rewrites in several calls, emulated here (see `gcs_rewrites`).
    rewrites: super::gcs_rewrites::Rewrites,
    /// `http://127.0.0.1:PORT`: where the sessions' URIs point.
    endpoint: String,
}

pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    state: Arc<State>,
}

impl FaultProxy {
    /// A proxy to `upstream` (`host:port`), faithful until given rules.
    pub fn start(upstream: &str) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fault proxy");
        let endpoint = format!("http://{}", listener.local_addr().expect("proxy address"));
        let state = Arc::new(State {
            upstream: upstream.to_string(),
            rules: Mutex::new(Vec::new()),
            chaos: Mutex::new(None),
            down: AtomicBool::new(false),
            seen: Mutex::new(Vec::new()),
            sessions: Default::default(),
            rewrites: Default::default(),
            endpoint: endpoint.clone(),
        });
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(client) = conn else { continue };
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(&state, client));
            }
        });
        FaultProxy { endpoint, state }
    }

    pub fn rule(&self, rule: Rule) -> &FaultProxy {
        self.state.rules.lock().unwrap().push(rule);
        self
    }

    pub fn clear_rules(&self) {
        self.state.rules.lock().unwrap().clear();
        *self.state.chaos.lock().unwrap() = None;
    }

    /// From now on, a `rate` share of the requests (seeded) meet one of
    /// the faults a flaky network and an overloaded server cause: 503,
    /// 500, a reset, a lost acknowledgement, a body cut off or corrupted.
    pub fn chaos(&self, seed: u64, rate: f64) {
        *self.state.chaos.lock().unwrap() = Some((fastrand::Rng::with_seed(seed), rate));
    }

    /// Down: every connection is reset at once, as if the server died.
    pub fn set_down(&self, down: bool) {
        self.state.down.store(down, Ordering::SeqCst);
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// How many requests some rule changed.
    pub fn fired(&self) -> usize {
        self.seen().iter().filter(|s| s.fault.is_some()).count()
    }

    /// Connections made while the proxy was down.
    pub fn refused(&self) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.method == "(connection)")
            .count()
    }

    /// Forgets the GCS upload sessions it emulates (they expired).
    pub fn expire_sessions(&self) {
        self.state.sessions.expire();
    }

    /// From now on each GCS rewrite takes `calls` calls, each but the
    /// last answered with a token to continue from (as between locations).
    pub fn rewrite_in_calls(&self, calls: usize) {
        self.state.rewrites.set_calls(calls);
    }

    /// Requests with `method` whose target contains `target`.
    pub fn count(&self, method: &str, target: &str) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.method == method && s.target.contains(target))
            .count()
    }
}

/// A request read off the client connection.
struct Request {
    method: String,
    target: String,
    head: Vec<(String, String)>,
    body: Vec<u8>,
}

fn serve(state: &State, client: TcpStream) {
    if state.down.load(Ordering::SeqCst) {
        state.seen.lock().unwrap().push(Seen {
            method: "(connection)".into(),
            target: String::new(),
            fault: Some(Fault::Reset),
            at: Instant::now(),
            agent: String::new(),
            range: String::new(),
            copy_source: false,
        });
        reset(client);
        return;
    }
    let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(reader_half) = client.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(reader_half);
    let mut client = client;
    // Keep-alive: one request after another on the same connection.
    loop {
        let req = match read_request(&mut reader, &mut client) {
            Ok(Some(r)) => r,
            _ => return,
        };
        if state.down.load(Ordering::SeqCst) {
            reset(client);
            return;
        }
        let fault = pick(state, &req);
        state.seen.lock().unwrap().push(Seen {
            method: req.method.clone(),
            target: req.target.clone(),
            fault,
            at: Instant::now(),
            agent: req
                .head
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("user-agent"))
                .map(|(_, value)| value.clone())
                .unwrap_or_default(),
            range: req
                .head
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("range"))
                .map(|(_, value)| value.clone())
                .unwrap_or_default(),
            copy_source: req
                .head
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case("x-amz-copy-source")),
        });
        match fault {
            Some(Fault::Status(code)) => {
                let _ = client.write_all(&error_answer(&req, code));
                continue;
            }
            Some(Fault::S3Error(status, code, message)) => {
                let body = format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{message}</Message></Error>"
                );
                let _ = client.write_all(
                    format!(
                        "HTTP/1.1 {status} Error\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                );
                continue;
            }
            Some(Fault::Reset) => return reset(client),
            Some(Fault::Hang(d)) => {
                std::thread::sleep(d);
                return;
            }
            _ => {}
        }
        if let Some(Fault::Delay(d)) = fault {
            std::thread::sleep(d);
        }
        let mut req = req;
        if fault == Some(Fault::IgnoreRange) {
            req.head
                .retain(|(name, _)| !name.eq_ignore_ascii_case("range"));
        }
        match state.rewrites.handle(&req.method, &req.target) {
            None => {}
            Some(Step::Finish(target)) => req.target = target,
            Some(step) => {
                let bytes = match step {
                    Step::Progress {
                        token,
                        call,
                        calls,
                        source,
                    } => Rewrites::progress(&token, call, calls, object_size(state, &req, &source)),
                    Step::Answer(bytes) => bytes,
                    Step::Finish(_) => unreachable!("handled above"),
                };
                if fault == Some(Fault::LostAck) {
                    return reset(client);
                }
                if client.write_all(&bytes).is_err() {
                    return;
                }
                continue;
            }
        }
        let mut finalizing = None;
        match state.sessions.handle(
            &req.method,
            &req.target,
            header(&req.head, "content-range"),
            &req.body,
            &state.endpoint,
        ) {
            None => {}
            Some(Handled::Answer(bytes)) => {
                if fault == Some(Fault::LostAck) {
                    return reset(client);
                }
                if client.write_all(&bytes).is_err() {
                    return;
                }
                continue;
            }
            Some(Handled::Finalize {
                session,
                target,
                content_type,
                body,
            }) => {
                let mut head: Vec<(String, String)> = req
                    .head
                    .iter()
                    .filter(|(k, _)| {
                        !k.eq_ignore_ascii_case("content-range")
                            && !k.eq_ignore_ascii_case("content-type")
                    })
                    .cloned()
                    .collect();
                head.push(("Content-Type".into(), content_type));
                req = Request {
                    method: "POST".into(),
                    target,
                    head,
                    body,
                };
                finalizing = Some(session);
            }
        }
        let answer = match forward(&state.upstream, &req) {
            Ok(a) => a,
            Err(_) => return reset(client),
        };
        if let Some(session) = finalizing {
            state
                .sessions
                .finalized(&session, &answer.status_line, &answer.body);
        }
        let bytes = match fault {
            Some(Fault::LostAck) => return reset(client),
            Some(Fault::Truncate) => {
                let cut = answer.head.len() + answer.body.len() / 2;
                let whole = answer.encode(&req.method);
                let _ = client.write_all(&whole[..cut.min(whole.len())]);
                return reset(client);
            }
            Some(Fault::RepeatPartMarker) => {
                let mut a = answer;
                let body = String::from_utf8_lossy(&a.body).into_owned();
                let body = match body.split_once("<NextPartNumberMarker>") {
                    Some((head, rest)) => {
                        let tail = rest
                            .split_once("</NextPartNumberMarker>")
                            .map_or("", |(_, t)| t);
                        format!("{head}{tail}")
                    }
                    None => body,
                };
                let body = body
                    .replace(
                        "<IsTruncated>false</IsTruncated>",
                        "<IsTruncated>true</IsTruncated>",
                    )
                    .replace(
                        "</ListPartsResult>",
                        "<NextPartNumberMarker>1</NextPartNumberMarker></ListPartsResult>",
                    );
                a.body = body.into_bytes();
                a.encode(&req.method)
            }
            Some(Fault::Corrupt) if !answer.body.is_empty() => {
                let mut a = answer;
                let mid = a.body.len() / 2;
                a.body[mid] ^= 0x20;
                a.encode(&req.method)
            }
            _ => answer.encode(&req.method),
        };
        if client.write_all(&bytes).is_err() {
            return;
        }
    }
}

/// The size fake-gcs-server gives the object at `path` (its metadata),
/// asked with `req`'s credentials; 0 if it does not answer.
fn object_size(state: &State, req: &Request, path: &str) -> u64 {
    let head = req
        .head
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("host") || k.eq_ignore_ascii_case("authorization"))
        .cloned()
        .collect();
    let ask = Request {
        method: "GET".into(),
        target: path.to_string(),
        head,
        body: Vec::new(),
    };
    forward(&state.upstream, &ask)
        .ok()
        .and_then(|a| serde_json::from_slice::<serde_json::Value>(&a.body).ok())
        .and_then(|v| v["size"].as_str()?.parse().ok())
        .unwrap_or(0)
}

fn pick(state: &State, req: &Request) -> Option<Fault> {
    let mut rules = state.rules.lock().unwrap();
    for rule in rules.iter_mut() {
        if rule.fired >= rule.times || !rule.matches(&req.method, &req.target) {
            continue;
        }
        rule.matched += 1;
        if rule.matched <= rule.skip {
            continue;
        }
        rule.fired += 1;
        return Some(rule.fault);
    }
    drop(rules);
    let mut chaos = state.chaos.lock().unwrap();
    let (rng, rate) = chaos.as_mut()?;
    if rng.f64() >= *rate {
        return None;
    }
    const FAULTS: [Fault; 6] = [
        Fault::Status(503),
        Fault::Status(500),
        Fault::Reset,
        Fault::LostAck,
        Fault::Truncate,
        Fault::Corrupt,
    ];
    Some(FAULTS[rng.usize(..FAULTS.len())])
}

/// Closes with RST (linger 0): the client sees "connection reset".
fn reset(stream: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a correctly sized option value.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    drop(stream);
}

fn header<'a>(head: &'a [(String, String)], name: &str) -> Option<&'a str> {
    head.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn read_line(r: &mut impl BufRead) -> io::Result<String> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

fn read_head(r: &mut impl BufRead) -> io::Result<(String, Vec<(String, String)>)> {
    let first = read_line(r)?;
    let mut head = Vec::new();
    loop {
        let line = read_line(r)?;
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            head.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    Ok((first, head))
}

/// A body framed by `Content-Length` or chunked transfer encoding.
fn read_body(r: &mut impl BufRead, head: &[(String, String)]) -> io::Result<Vec<u8>> {
    let chunked = header(head, "transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        let mut body = Vec::new();
        loop {
            let size_line = read_line(r)?;
            let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the blank line.
                while !read_line(r)?.is_empty() {}
                return Ok(body);
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            read_line(r)?;
        }
    }
    let len = header(head, "content-length")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Ok(body)
}

fn read_request(r: &mut impl BufRead, client: &mut TcpStream) -> io::Result<Option<Request>> {
    let (first, head) = match read_head(r) {
        Ok(h) => h,
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    if header(&head, "expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        client.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let body = read_body(r, &head)?;
    Ok(Some(Request {
        method,
        target,
        head,
        body,
    }))
}

/// The server's answer, its body de-chunked.
struct Answer {
    status_line: String,
    headers: Vec<(String, String)>,
    /// The encoded head's length is only known once encoded; see `encode`.
    head: Vec<u8>,
    body: Vec<u8>,
}

impl Answer {
    /// The answer as the client gets it: a `Content-Length` body (none for
    /// HEAD, whose `Content-Length` describes the object).
    fn encode(&self, method: &str) -> Vec<u8> {
        let status: u16 = self
            .status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let bodiless = method == "HEAD" || status == 204 || status == 304;
        let mut out = format!("{}\r\n", self.status_line);
        for (k, v) in &self.headers {
            let skip = k.eq_ignore_ascii_case("transfer-encoding")
                || k.eq_ignore_ascii_case("connection")
                || (!bodiless && k.eq_ignore_ascii_case("content-length"));
            if !skip {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        if !bodiless {
            out.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        if !bodiless {
            bytes.extend_from_slice(&self.body);
        }
        bytes
    }
}

fn forward(upstream: &str, req: &Request) -> io::Result<Answer> {
    let mut server = TcpStream::connect(upstream)?;
    server.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut out = format!("{} {} HTTP/1.1\r\n", req.method, req.target);
    for (k, v) in &req.head {
        let skip = k.eq_ignore_ascii_case("connection")
            || k.eq_ignore_ascii_case("expect")
            || k.eq_ignore_ascii_case("transfer-encoding")
            || k.eq_ignore_ascii_case("content-length");
        if !skip {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    // A body that came with a length keeps it (it may be signed); a
    // chunked one now has one.
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        req.body.len()
    ));
    server.write_all(out.as_bytes())?;
    server.write_all(&req.body)?;
    let mut r = BufReader::new(server);
    loop {
        let (status_line, headers) = read_head(&mut r)?;
        if status_line.split_whitespace().nth(1) == Some("100") {
            continue;
        }
        let bodiless =
            req.method == "HEAD" || status_line.contains(" 204") || status_line.contains(" 304");
        let body = if bodiless {
            Vec::new()
        } else if header(&headers, "content-length").is_some()
            || header(&headers, "transfer-encoding").is_some()
        {
            read_body(&mut r, &headers)?
        } else {
            let mut rest = Vec::new();
            r.read_to_end(&mut rest)?;
            rest
        };
        let mut a = Answer {
            status_line,
            headers,
            head: Vec::new(),
            body,
        };
        let full = a.encode(&req.method);
        a.head = full[..full.len() - if bodiless { 0 } else { a.body.len() }].to_vec();
        return Ok(a);
    }
}

/// An error answer in the server's own dialect (S3's XML for signed
/// requests, GCS's JSON otherwise), so clients parse it as they would a
/// real one.
fn error_answer(req: &Request, code: u16) -> Vec<u8> {
    let s3 = header(&req.head, "authorization").is_some_and(|v| v.starts_with("AWS4"));
    let (ctype, body) = if s3 {
        (
            "application/xml",
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{}</Code><Message>injected by the test proxy</Message></Error>",
                if code == 503 {
                    "SlowDown"
                } else {
                    "InternalError"
                }
            ),
        )
    } else {
        (
            "application/json",
            format!("{{\"error\":{{\"code\":{code},\"message\":\"injected by the test proxy\"}}}}"),
        )
    };
    let body = if req.method == "HEAD" {
        String::new()
    } else {
        body
    };
    format!(
        "HTTP/1.1 {code} Injected\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
