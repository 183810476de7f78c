//! Retries of transient store failures with jittered exponential backoff.
//!
//! Owns which failures are worth repeating (5xx, 429 / `SlowDown` /
//! throttling, connection refused / reset / timed out) and which are not
//! (every other 4xx, including 404 and 412: repeating a request the server
//! judged wrong cannot make it right). Backends map their raw errors to
//! [`StoreError`] with [`classify_status`] and [`classify_io`]; the loop here
//! only looks at [`StoreError::is_transient`].

use std::future::Future;
use std::io;
use std::time::Duration;

use super::StoreError;

/// How often and how patiently to repeat a transient failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included (1 = no retry).
    pub max_attempts: u32,
    /// Upper bound of the first backoff; doubles each attempt.
    pub base_delay: Duration,
    /// Upper bound of any single backoff.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// 5 attempts, waiting at most 0.1 + 0.2 + 0.4 + 0.8 s between them:
    /// long enough to ride out a restarting server or a throttling burst,
    /// short enough that an unreachable endpoint is reported within seconds.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` (after `attempt` failures):
    /// "full jitter", a uniform draw in `[0, min(max, base * 2^(attempt-1))]`,
    /// so that many clients failing together do not retry in lockstep.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(20);
        let cap = self
            .base_delay
            .saturating_mul(1u32 << exp)
            .min(self.max_delay);
        let nanos = u64::try_from(cap.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }
}

/// What to do with a failed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The same request may succeed later.
    Transient,
    /// It will fail the same way again.
    Permanent,
}

/// Classifies an HTTP status, with the provider's error code when there is
/// one (S3 answers throttling as `503 SlowDown`, sometimes as `400
/// Throttling`/`RequestLimitExceeded`, and concurrent conditional writes as
/// `409 ConditionalRequestConflict`, which AWS documents as "retry").
pub fn classify_status(status: u16, code: Option<&str>) -> Class {
    const THROTTLING_CODES: &[&str] = &[
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "RequestThrottled",
        "RequestTimeout",
        "ConditionalRequestConflict",
        "InternalError",
        "ServiceUnavailable",
    ];
    if code.is_some_and(|c| THROTTLING_CODES.contains(&c)) {
        return Class::Transient;
    }
    match status {
        408 | 429 => Class::Transient,
        500..=599 => Class::Transient,
        _ => Class::Permanent,
    }
}

/// Classifies an I/O error met while talking to a server.
pub fn classify_io(kind: io::ErrorKind) -> Class {
    use io::ErrorKind::*;
    match kind {
        ConnectionRefused | ConnectionReset | ConnectionAborted | NotConnected | BrokenPipe
        | TimedOut | UnexpectedEof | Interrupted | HostUnreachable | NetworkUnreachable
        | NetworkDown => Class::Transient,
        _ => Class::Permanent,
    }
}

/// Runs `op` until it succeeds, fails permanently, or `policy.max_attempts`
/// are spent; returns the last error. `op` gets the attempt number (1-based)
/// so a backend can tell a first try from a repeat (a repeated conditional
/// write that meets "precondition failed" may be meeting its own earlier
/// success).
pub async fn with_retry<T, F, Fut>(policy: &RetryPolicy, mut op: F) -> Result<T, StoreError>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut attempt = 1;
    loop {
        match op(attempt).await {
            Err(e) if e.is_transient() && attempt < policy.max_attempts.max(1) => {
                tokio::time::sleep(policy.backoff(attempt)).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn server_errors_and_throttling_are_transient() {
        for status in [500, 502, 503, 504, 429, 408] {
            assert_eq!(classify_status(status, None), Class::Transient, "{status}");
        }
        assert_eq!(classify_status(503, Some("SlowDown")), Class::Transient);
        assert_eq!(classify_status(400, Some("Throttling")), Class::Transient);
        assert_eq!(
            classify_status(409, Some("ConditionalRequestConflict")),
            Class::Transient
        );
    }

    #[test]
    fn client_errors_are_permanent() {
        for status in [400, 401, 403, 404, 409, 412, 416] {
            assert_eq!(classify_status(status, None), Class::Permanent, "{status}");
        }
        assert_eq!(
            classify_status(412, Some("PreconditionFailed")),
            Class::Permanent
        );
        assert_eq!(classify_status(404, Some("NoSuchKey")), Class::Permanent);
        assert_eq!(classify_status(403, Some("AccessDenied")), Class::Permanent);
    }

    #[test]
    fn network_failures_are_transient_and_local_ones_are_not() {
        for kind in [
            io::ErrorKind::ConnectionRefused,
            io::ErrorKind::ConnectionReset,
            io::ErrorKind::TimedOut,
            io::ErrorKind::UnexpectedEof,
        ] {
            assert_eq!(classify_io(kind), Class::Transient, "{kind:?}");
        }
        for kind in [
            io::ErrorKind::NotFound,
            io::ErrorKind::PermissionDenied,
            io::ErrorKind::InvalidData,
        ] {
            assert_eq!(classify_io(kind), Class::Permanent, "{kind:?}");
        }
    }

    #[test]
    fn backoff_is_jittered_and_bounded() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
        };
        for attempt in 1..10 {
            let cap = Duration::from_millis(100 * (1 << (attempt - 1))).min(p.max_delay);
            for _ in 0..50 {
                assert!(p.backoff(attempt) <= cap);
            }
        }
        // Jitter: 50 draws are not all the same.
        let draws: std::collections::HashSet<_> = (0..50).map(|_| p.backoff(3)).collect();
        assert!(draws.len() > 1);
    }

    fn fast() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        }
    }

    #[tokio::test]
    async fn transient_errors_are_retried_until_the_limit() {
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = with_retry(&fast(), |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                Err(StoreError::Unreachable {
                    target: "t".into(),
                    message: "refused".into(),
                })
            }
        })
        .await;
        assert!(matches!(r, Err(StoreError::Unreachable { .. })));
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn permanent_errors_are_not_retried() {
        let calls = AtomicU32::new(0);
        let r: Result<(), _> = with_retry(&fast(), |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(StoreError::PreconditionFailed { key: "k".into() }) }
        })
        .await;
        assert!(matches!(r, Err(StoreError::PreconditionFailed { .. })));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn success_after_a_transient_failure() {
        let r = with_retry(&fast(), |attempt| async move {
            if attempt < 3 {
                Err(StoreError::Unavailable {
                    target: "t".into(),
                    message: "503 SlowDown".into(),
                })
            } else {
                Ok(attempt)
            }
        })
        .await;
        assert_eq!(r.unwrap(), 3);
    }
}
