//! Google's resumable-upload protocol, emulated in the test proxy in front
//! of fake-gcs-server, which does not implement it faithfully (a status
//! query finalizes its session, and it mishandles non-final chunks:
//! fsouza/fake-gcs-server#1362, #2354). From Google's documentation
//! (cloud.google.com/storage/docs/performing-resumable-uploads):
//!
//! - `POST …/o?uploadType=resumable` with the object's metadata opens a
//!   session: `200` and its URI in `Location` (here, on the proxy);
//! - `PUT <session>` with `Content-Range: bytes */<total|*>` asks what it
//!   holds: `308`, with `Range: bytes=0-<last>` once it holds anything;
//! - `PUT <session>` with `Content-Range: bytes <first>-<last>/<total|*>`
//!   sends a chunk at the offset it holds (a non-final chunk a multiple
//!   of 256 KiB): `308` and the new `Range`; the chunk whose last byte
//!   is the total's last finalizes it;
//! - `DELETE <session>` cancels it: `499`.
//!
//! The object is created in fake-gcs-server by one multipart upload at
//! finalization, with the session's metadata and its preconditions
//! (`ifGenerationMatch`): what the final request of a real session does.
//! A finalized session answers every later request with the object.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Chunks other than the last are multiples of this.
const CHUNK_QUANTUM: u64 = 256 * 1024;

#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<String, Session>>,
    next: AtomicU64,
}

struct Session {
    /// `/upload/storage/v1/b/<bucket>/o`.
    path: String,
    /// The opening request's query, `uploadType` aside (the
    /// preconditions among it).
    query: Vec<String>,
    metadata: Vec<u8>,
    data: Vec<u8>,
    /// The object's answer once finalized.
    done: Option<(String, Vec<u8>)>,
}

/// What the proxy does with a request: answer it here, or forward it.
pub enum Handled {
    Answer(Vec<u8>),
    /// The finalizing upload to send upstream in the session's stead:
    /// method, target, headers and body; its answer is kept.
    Finalize {
        session: String,
        target: String,
        content_type: String,
        body: Vec<u8>,
    },
}

pub(super) fn answer(status: &str, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

pub(super) fn error(code: u16, why: &str) -> Vec<u8> {
    let body = format!("{{\"error\":{{\"code\":{code},\"message\":\"{why}\"}}}}");
    answer(
        &format!("{code} Session"),
        &[("Content-Type", "application/json".into())],
        body.as_bytes(),
    )
}

fn held(data: &[u8]) -> Vec<(&'static str, String)> {
    match data.len() {
        0 => Vec::new(),
        n => vec![("Range", format!("bytes=0-{}", n - 1))],
    }
}

impl Sessions {
    /// The session part of a request, or `None` to forward it unchanged.
    /// `endpoint`: the proxy's own (`http://127.0.0.1:PORT`).
    pub fn handle(
        &self,
        method: &str,
        target: &str,
        content_range: Option<&str>,
        body: &[u8],
        endpoint: &str,
    ) -> Option<Handled> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let params: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
        if !params.contains(&"uploadType=resumable") || !path.starts_with("/upload/storage/v1/b/") {
            return None;
        }
        let id = params.iter().find_map(|p| p.strip_prefix("upload_id="));
        Some(match (method, id) {
            ("POST", None) => self.open(path, &params, body, endpoint),
            ("PUT", Some(id)) => self.put(id, content_range, body),
            ("DELETE", Some(id)) => {
                self.open.lock().unwrap().remove(id);
                Handled::Answer(answer("499 Client Closed Request", &[], b""))
            }
            _ => Handled::Answer(error(400, "not a resumable-upload request")),
        })
    }

    fn open(&self, path: &str, params: &[&str], body: &[u8], endpoint: &str) -> Handled {
        // Long enough to be registered for redaction (as Google's are).
        let id = format!(
            "sess{:04}{:016x}",
            self.next.fetch_add(1, Ordering::SeqCst),
            fastrand::u64(..)
        );
        let query = params
            .iter()
            .filter(|p| !p.starts_with("uploadType="))
            .map(|p| p.to_string())
            .collect();
        self.open.lock().unwrap().insert(
            id.clone(),
            Session {
                path: path.to_string(),
                query,
                metadata: body.to_vec(),
                data: Vec::new(),
                done: None,
            },
        );
        let location = format!("{endpoint}{path}?uploadType=resumable&upload_id={id}");
        Handled::Answer(answer("200 OK", &[("Location", location)], b""))
    }

    fn put(&self, id: &str, content_range: Option<&str>, body: &[u8]) -> Handled {
        let mut open = self.open.lock().unwrap();
        let Some(s) = open.get_mut(id) else {
            return Handled::Answer(error(404, "no such upload session"));
        };
        if let Some((status, object)) = &s.done {
            let ctype = ("Content-Type", "application/json".to_string());
            return Handled::Answer(answer(status, &[ctype], object));
        }
        let Some(range) = content_range.and_then(|r| r.strip_prefix("bytes ")) else {
            return Handled::Answer(error(400, "a session PUT needs Content-Range"));
        };
        let Some((span, total)) = range.split_once('/') else {
            return Handled::Answer(error(400, "bad Content-Range"));
        };
        let total: Option<u64> = total.parse().ok();
        if span == "*" {
            // A status query.
            return Handled::Answer(answer("308 Resume Incomplete", &held(&s.data), b""));
        }
        let Some((first, last)) = span
            .split_once('-')
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        else {
            return Handled::Answer(error(400, "bad Content-Range"));
        };
        if first > s.data.len() as u64 || last + 1 - first != body.len() as u64 {
            return Handled::Answer(error(400, "chunk not at the offset the session holds"));
        }
        let last_chunk = total == Some(last + 1);
        if !last_chunk && !(body.len() as u64).is_multiple_of(CHUNK_QUANTUM) {
            return Handled::Answer(error(
                400,
                "a non-final chunk must be a multiple of 256 KiB",
            ));
        }
        // A chunk sent again after a lost acknowledgement overlaps what is
        // held: the same bytes, taken once.
        s.data.truncate(first as usize);
        s.data.extend_from_slice(body);
        if !last_chunk {
            return Handled::Answer(answer("308 Resume Incomplete", &held(&s.data), b""));
        }
        let boundary = "swamp-test-session-boundary";
        let mut multipart =
            format!("--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n")
                .into_bytes();
        multipart.extend_from_slice(&s.metadata);
        multipart.extend_from_slice(
            format!("\r\n--{boundary}\r\nContent-Type: application/octet-stream\r\n\r\n")
                .as_bytes(),
        );
        multipart.extend_from_slice(&s.data);
        multipart.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let mut query = vec!["uploadType=multipart".to_string()];
        query.extend(s.query.iter().cloned());
        Handled::Finalize {
            session: id.to_string(),
            target: format!("{}?{}", s.path, query.join("&")),
            content_type: format!("multipart/related; boundary={boundary}"),
            body: multipart,
        }
    }

    /// Forgets every open session, as Google does a week after one opens.
    pub fn expire(&self) {
        self.open.lock().unwrap().clear();
    }

    /// Keeps the finalizing upload's answer (a success only: a refused
    /// precondition leaves the session to be asked again, as Google's
    /// does not finalize then either).
    pub fn finalized(&self, id: &str, status_line: &str, body: &[u8]) {
        let status = status_line.split_once(' ').map_or("", |(_, s)| s);
        if status.starts_with('2')
            && let Some(s) = self.open.lock().unwrap().get_mut(id)
        {
            s.done = Some((status.to_string(), body.to_vec()));
            s.data = Vec::new();
        }
    }
}
