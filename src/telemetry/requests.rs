//! Provider requests: their classes, one event each, and counters.
//!
//! Every backend reports each HTTP request it sent (each retry is a
//! request) through [`Request::sent`], at the one place its requests leave:
//! an interceptor on the S3 SDK, the S3 direct path's `send`, a middleware
//! on the GCS client, the directory store's operations. Counters are
//! process-wide: a command runs one apply at a time, and reads them before
//! and after ([`counts`]). Requests sent by the lock's heartbeat are
//! counted apart ([`heartbeat`]): how often it renews depends on how slow
//! the run is, so no plan can estimate them.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a request does, as plans estimate and applies report them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A listing page (objects, multipart uploads, parts).
    List,
    /// An object's content.
    Get,
    /// An object's metadata only (S3 HEAD, a GCS metadata GET).
    Head,
    /// A write of content: an object, a multipart upload's start, part or
    /// completion.
    Put,
    /// A server-side copy (S3 `CopyObject`, GCS `copyTo`/`rewriteTo`).
    Copy,
    /// A delete, a batch delete, an aborted upload.
    Delete,
}

impl Class {
    pub const ALL: [Class; 6] = [
        Class::List,
        Class::Get,
        Class::Head,
        Class::Put,
        Class::Copy,
        Class::Delete,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::List => "list",
            Class::Get => "get",
            Class::Head => "head",
            Class::Put => "put",
            Class::Copy => "copy",
            Class::Delete => "delete",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Requests by class: what a plan estimates, what an apply sent, or a
/// difference of two readings of the counters. (`head` and `copy` default
/// to 0: plans saved before they were counted apart lack them.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestCounts {
    pub list: u64,
    pub get: u64,
    /// Reads of an object's metadata only (S3 HEAD, a GCS metadata GET).
    #[serde(default)]
    pub head: u64,
    pub put: u64,
    /// Server-side copies.
    #[serde(default)]
    pub copy: u64,
    pub delete: u64,
}

impl RequestCounts {
    pub fn get(&self, class: Class) -> u64 {
        match class {
            Class::List => self.list,
            Class::Get => self.get,
            Class::Head => self.head,
            Class::Put => self.put,
            Class::Copy => self.copy,
            Class::Delete => self.delete,
        }
    }

    fn slot(&mut self, class: Class) -> &mut u64 {
        match class {
            Class::List => &mut self.list,
            Class::Get => &mut self.get,
            Class::Head => &mut self.head,
            Class::Put => &mut self.put,
            Class::Copy => &mut self.copy,
            Class::Delete => &mut self.delete,
        }
    }

    /// `1 list, 3 put, 2 delete`: the classes sent, in order.
    pub fn describe(&self) -> String {
        Class::ALL
            .iter()
            .filter(|c| self.get(**c) > 0)
            .map(|c| format!("{} {}", self.get(*c), c.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn total(&self) -> u64 {
        Class::ALL.iter().map(|c| self.get(*c)).sum()
    }

    /// What was sent between `earlier` and this reading.
    pub fn since(&self, earlier: &RequestCounts) -> RequestCounts {
        let mut out = RequestCounts::default();
        for c in Class::ALL {
            *out.slot(c) = self.get(c).saturating_sub(earlier.get(c));
        }
        out
    }
}

static SENT: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];
static HEARTBEAT: AtomicU64 = AtomicU64::new(0);

tokio::task_local! {
    /// The attempt of the request being made (1 for the first try), set
    /// by the retry loop around each try.
    static ATTEMPT: u32;
    /// Set while the lock's heartbeat runs.
    static IN_HEARTBEAT: ();
    /// The object a backend's request writes, where its URL does not name
    /// it (a GCS upload names it in the body).
    static WRITING: String;
}

/// The requests counted so far in this process, heartbeat aside.
pub fn counts() -> RequestCounts {
    let mut out = RequestCounts::default();
    for c in Class::ALL {
        *out.slot(c) = SENT[c.index()].load(Ordering::Relaxed);
    }
    out
}

/// The lock heartbeat's requests counted so far in this process.
pub fn heartbeat_count() -> u64 {
    HEARTBEAT.load(Ordering::Relaxed)
}

/// Runs `fut` as try `attempt` of a request: the requests it sends say so.
pub async fn attempt<F: Future>(attempt: u32, fut: F) -> F::Output {
    ATTEMPT.scope(attempt, fut).await
}

/// Runs `fut` as the lock's heartbeat: its requests are counted apart.
pub async fn heartbeat<F: Future>(fut: F) -> F::Output {
    IN_HEARTBEAT.scope((), fut).await
}

/// Runs `fut`, whose requests write `key`: they report it as their key.
pub async fn writing<F: Future>(key: &str, fut: F) -> F::Output {
    WRITING.scope(key.to_string(), fut).await
}

/// The key the request being made writes, if [`writing`] named one.
pub fn written_key() -> Option<String> {
    WRITING.try_with(Clone::clone).ok()
}

/// One request a backend sent, as it reports it once answered (or failed).
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub class: Class,
    /// The provider's name for it (`GetObject`, `objects.get`, `rename`).
    pub op: &'a str,
    pub bucket: &'a str,
    /// The object key or listing prefix; never a query string (a presigned
    /// one carries a signature).
    pub key: &'a str,
    /// The HTTP status, or `None` when no answer came (a transport error).
    pub status: Option<u16>,
    pub elapsed: Duration,
    /// Body bytes sent or received, when known.
    pub bytes: Option<u64>,
    /// Why no answer came, when none did (already free of secrets: a
    /// transport error names a host and a cause).
    pub error: Option<&'a str>,
}

impl Request<'_> {
    /// Counts the request and emits its event.
    pub fn sent(&self) {
        let heartbeat = IN_HEARTBEAT.try_with(|_| ()).is_ok();
        if heartbeat {
            HEARTBEAT.fetch_add(1, Ordering::Relaxed);
        } else {
            SENT[self.class.index()].fetch_add(1, Ordering::Relaxed);
        }
        let attempt = ATTEMPT.try_with(|a| *a).unwrap_or(1);
        tracing::debug!(
            target: "swamp::request",
            event = "request",
            class = self.class.as_str(),
            op = self.op,
            bucket = self.bucket,
            key = self.key,
            status = self.status,
            attempt,
            ms = self.elapsed.as_secs_f64() * 1000.0,
            bytes = self.bytes,
            heartbeat,
            error = self.error,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(class: Class) {
        Request {
            class,
            op: "test",
            bucket: "b",
            key: "k",
            status: Some(200),
            elapsed: Duration::ZERO,
            bytes: None,
            error: None,
        }
        .sent();
    }

    #[tokio::test]
    async fn requests_are_counted_by_class_and_the_heartbeats_apart() {
        let before = counts();
        let beats = heartbeat_count();
        sent(Class::Copy);
        sent(Class::Copy);
        heartbeat(async { sent(Class::Put) }).await;
        let now = counts().since(&before);
        // Other tests in this process may send requests too: only these
        // classes are looked at, and they only grow.
        assert!(now.copy >= 2, "{now:?}");
        assert!(heartbeat_count() > beats);
        assert_eq!(
            RequestCounts {
                put: 3,
                copy: 1,
                ..RequestCounts::default()
            }
            .since(&RequestCounts {
                put: 1,
                ..RequestCounts::default()
            }),
            RequestCounts {
                put: 2,
                copy: 1,
                ..RequestCounts::default()
            }
        );
    }
}
