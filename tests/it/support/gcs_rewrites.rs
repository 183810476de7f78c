//! Google's `objects.rewrite` between locations or storage classes,
//! emulated in the test proxy in front of fake-gcs-server, which finishes
//! every rewrite in its first call. From Google's documentation
//! (cloud.google.com/storage/docs/json_api/v1/objects/rewrite):
//!
//! - `POST …/b/<b>/o/<o>/rewriteTo/b/<b2>/o/<o2>` copies part of the
//!   object and answers `done: false`, the bytes copied so far, the
//!   object's size and a `rewriteToken`;
//! - the same request with `rewriteToken=<token>` continues from there;
//!   a token the server does not know (expired), or sent with other
//!   parameters than the first call's, is refused with `400`;
//! - the call that copies the last bytes answers `done: true` and the new
//!   object (`resource`).
//!
//! Here each rewrite takes [`Rewrites::set_calls`] calls: the earlier ones
//! are answered by the proxy, and the last is sent upstream without its
//! token, where fake-gcs-server makes the object under the request's
//! preconditions (`ifGenerationMatch`, `ifSourceGenerationMatch`).
//! Tokens outlive the client that got them, as Google's do: a rerun of a
//! killed copy can continue one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::gcs_sessions::{answer, error};

#[derive(Default)]
pub struct Rewrites {
    /// Calls each rewrite takes (0 or 1: the server's own, one call).
    calls: AtomicUsize,
    open: Mutex<HashMap<String, Rewrite>>,
    next: AtomicU64,
}

struct Rewrite {
    /// The first call's target, its token aside.
    target: String,
    /// Calls answered so far.
    call: usize,
}

/// What the proxy does with a rewrite.
pub enum Step {
    /// An unfinished call, answered here: the token to give, how many
    /// calls of `calls` it makes, and the source's metadata path upstream
    /// (for the object's size).
    Progress {
        token: String,
        call: usize,
        calls: usize,
        source: String,
    },
    /// The last call: this target (its token dropped) goes upstream.
    Finish(String),
    Answer(Vec<u8>),
}

impl Rewrites {
    /// From now on each rewrite takes `calls` calls.
    pub fn set_calls(&self, calls: usize) {
        self.calls.store(calls, Ordering::SeqCst);
    }

    /// What to do with a request: `None` forwards it unchanged.
    pub fn handle(&self, method: &str, target: &str) -> Option<Step> {
        let calls = self.calls.load(Ordering::SeqCst);
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        if calls < 2 || method != "POST" || !path.contains("/rewriteTo/") {
            return None;
        }
        let (token, rest): (Vec<&str>, Vec<&str>) = query
            .split('&')
            .filter(|p| !p.is_empty())
            .partition(|p| p.starts_with("rewriteToken="));
        let bare = format!("{path}?{}", rest.join("&"));
        let source = path.split("/rewriteTo/").next().unwrap_or(path).to_string();
        let mut open = self.open.lock().unwrap();
        let call = match token.first().map(|t| &t["rewriteToken=".len()..]) {
            None => 1,
            Some(t) => match open.remove(t) {
                Some(r) if r.target == bare => r.call + 1,
                Some(_) => {
                    return Some(Step::Answer(error(
                        400,
                        "Invalid rewrite token: made for another rewrite.",
                    )));
                }
                None => return Some(Step::Answer(error(400, "Invalid rewrite token."))),
            },
        };
        if call >= calls {
            return Some(Step::Finish(bare));
        }
        let token = format!(
            "rw{:04}{:016x}",
            self.next.fetch_add(1, Ordering::SeqCst),
            fastrand::u64(..)
        );
        open.insert(token.clone(), Rewrite { target: bare, call });
        Some(Step::Progress {
            token,
            call,
            calls,
            source,
        })
    }

    /// The answer to an unfinished call of an object of `size` bytes.
    pub fn progress(token: &str, call: usize, calls: usize, size: u64) -> Vec<u8> {
        let copied = size * call as u64 / calls as u64;
        let body = format!(
            "{{\"kind\":\"storage#rewriteResponse\",\"totalBytesRewritten\":\"{copied}\",\"objectSize\":\"{size}\",\"done\":false,\"rewriteToken\":\"{token}\"}}"
        );
        answer(
            "200 OK",
            &[("Content-Type", "application/json".into())],
            body.as_bytes(),
        )
    }
}
