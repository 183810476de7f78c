//! Retries of transient store failures with jittered exponential backoff.
//!
//! Owns which failures are worth repeating (5xx, 429 / `SlowDown` /
//! throttling, connection refused / reset / timed out) and which are not
//! (every other 4xx, including 404 and 412: repeating a request the server
//! judged wrong cannot make it right). Backends map their raw errors to
//! [`StoreError`] with [`classify_status`]; the loop here
//! only looks at [`StoreError::is_transient`].
//!
//! Retries are per request, but whether the server is there at all is a
//! question for the whole command: a [`Breaker`], shared by every request
//! of one store, counts failed attempts in a row across requests. Once the
//! server has refused connections for long enough (or failed for the whole
//! retry budget), the store is declared down and every later request fails
//! at once with [`StoreError::Down`], so a push of 300 files against a dead
//! endpoint ends in seconds instead of retrying each file five times.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
    /// Connection failures in a row (across requests) after which, once
    /// they have lasted [`RetryPolicy::down_after`], the server is down.
    pub trip_after: u32,
    /// How long connection failures in a row must last before the server
    /// is down (sooner when a request runs out of attempts on them): about
    /// one request's own retries, so a brief outage is ridden out.
    pub down_after: Duration,
    /// How long the server may keep failing (any transient failure,
    /// throttling included) before the command gives up on it.
    pub budget: Duration,
    /// Shared by every request of one store.
    pub breaker: Breaker,
}

/// The default budget, overridden by `SWAMP_RETRY_BUDGET` (humantime:
/// `30s`, `2m`).
const DEFAULT_BUDGET: Duration = Duration::from_secs(120);

impl Default for RetryPolicy {
    /// 5 attempts, waiting at most 0.1 + 0.2 + 0.4 + 0.8 s between them:
    /// long enough to ride out a restarting server or a throttling burst,
    /// short enough that an unreachable endpoint is reported within seconds.
    fn default() -> Self {
        let budget = std::env::var("SWAMP_RETRY_BUDGET")
            .ok()
            .and_then(|v| humantime::parse_duration(v.trim()).ok())
            .unwrap_or(DEFAULT_BUDGET);
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(2),
            trip_after: 10,
            down_after: Duration::from_millis(1500).min(budget),
            budget,
            breaker: Breaker::default(),
        }
    }
}

/// Failed attempts in a row across the requests of one store, and the
/// verdict once they show the server is down.
#[derive(Debug, Clone, Default)]
pub struct Breaker(Arc<BreakerState>);

#[derive(Debug, Default)]
struct BreakerState {
    /// Connection-level failures (refused, reset, timed out) in a row.
    unreachable: AtomicU32,
    /// When the current run of failures began.
    failing_since: Mutex<Option<Instant>>,
    /// Set once the server is judged down: every later request fails with it.
    down: Mutex<Option<(String, String, u32, Duration)>>,
}

impl PartialEq for Breaker {
    fn eq(&self, other: &Breaker) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Breaker {}

impl Breaker {
    fn down(&self) -> Option<StoreError> {
        self.0
            .down
            .lock()
            .unwrap()
            .as_ref()
            .map(|(target, message, failures, lasted)| StoreError::Down {
                target: target.clone(),
                message: message.clone(),
                failures: *failures,
                secs: lasted.as_secs_f64(),
            })
    }

    /// The server answered (even with a refusal): it is up.
    fn answered(&self) {
        self.0.unreachable.store(0, Ordering::SeqCst);
        *self.0.failing_since.lock().unwrap() = None;
    }

    /// Records a transient failure; returns the down verdict once the
    /// failures show the server is gone.
    fn failed(&self, e: &StoreError, policy: &RetryPolicy, gave_up: bool) -> Option<StoreError> {
        let since = *self
            .0
            .failing_since
            .lock()
            .unwrap()
            .get_or_insert_with(Instant::now);
        let lasted = since.elapsed();
        let unreachable = match e {
            StoreError::Unreachable { .. } => self.0.unreachable.fetch_add(1, Ordering::SeqCst) + 1,
            _ => 0,
        };
        // Down: connection failures in a row that outlasted one request's
        // own retries (or that one request ran out of attempts on), or any
        // failures for the whole budget.
        let down = (unreachable >= policy.trip_after && (gave_up || lasted >= policy.down_after))
            || lasted >= policy.budget;
        if !down {
            return None;
        }
        let (target, message) = match e {
            StoreError::Unreachable { target, message }
            | StoreError::Unavailable { target, message } => (target.clone(), message.clone()),
            other => (String::from("the datastore"), other.to_string()),
        };
        note_outage(&target);
        let mut slot = self.0.down.lock().unwrap();
        slot.get_or_insert((target, message, unreachable.max(1), lasted));
        drop(slot);
        self.down()
    }
}

/// The endpoint that failed this process's last request for good, for
/// the command-line hint ("when it is back, run … again").
static OUTAGE: Mutex<Option<String>> = Mutex::new(None);

fn note_outage(target: &str) {
    *OUTAGE.lock().unwrap() = Some(target.to_string());
}

/// The datastore this process gave up on because it did not answer, if
/// any.
pub fn outage() -> Option<String> {
    OUTAGE.lock().unwrap().clone()
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
pub(crate) enum Class {
    /// The same request may succeed later.
    Transient,
    /// It will fail the same way again.
    Permanent,
}

/// Classifies an HTTP status, with the provider's error code when there is
/// one (S3 answers throttling as `503 SlowDown`, sometimes as `400
/// Throttling`/`RequestLimitExceeded`, and concurrent conditional writes as
/// `409 ConditionalRequestConflict`, which AWS documents as "retry").
pub(crate) fn classify_status(status: u16, code: Option<&str>) -> Class {
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

/// Runs `op` until it succeeds, fails permanently, or `policy.max_attempts`
/// are spent; returns the last error. `op` gets the attempt number (1-based)
/// so a backend can tell a first try from a repeat (a repeated conditional
/// write that meets "precondition failed" may be meeting its own earlier
/// success).
///
/// A download whose bytes disagree with the object's sha256 is repeated
/// too (a flipped bit in transit); one that keeps disagreeing is reported
/// as corrupt. Once the store's [`Breaker`] has judged the server down, no
/// request is sent: it fails at once with [`StoreError::Down`].
/// Says why a request is tried again (the trace's `retry` event).
fn retrying(attempt: u32, e: &StoreError) {
    tracing::debug!(
        target: "swamp::store",
        event = "retry",
        attempt,
        reason = %e,
        "trying again"
    );
}

pub(crate) async fn with_retry<T, F, Fut>(policy: &RetryPolicy, mut op: F) -> Result<T, StoreError>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    let mut attempt = 1;
    loop {
        if let Some(down) = policy.breaker.down() {
            return Err(down);
        }
        let last = attempt >= policy.max_attempts.max(1);
        match crate::telemetry::requests::attempt(attempt, op(attempt)).await {
            Ok(v) => {
                policy.breaker.answered();
                return Ok(v);
            }
            Err(e) if e.is_transient() => {
                if let Some(down) = policy.breaker.failed(&e, policy, last) {
                    return Err(down);
                }
                if last {
                    note_outage(match &e {
                        StoreError::Unreachable { target, .. }
                        | StoreError::Unavailable { target, .. } => target,
                        _ => "the datastore",
                    });
                    return Err(e);
                }
                retrying(attempt, &e);
            }
            Err(
                e @ (StoreError::Integrity { .. }
                | StoreError::Corrupt { .. }
                | StoreError::Short { .. }),
            ) => {
                policy.breaker.answered();
                if last {
                    return Err(e);
                }
                retrying(attempt, &e);
            }
            Err(e) => {
                policy.breaker.answered();
                return Err(e);
            }
        }
        tokio::time::sleep(policy.backoff(attempt)).await;
        attempt += 1;
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
    fn backoff_is_jittered_and_bounded() {
        let p = RetryPolicy {
            max_attempts: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
            ..RetryPolicy::default()
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
            ..RetryPolicy::default()
        }
    }

    fn refused() -> StoreError {
        StoreError::Unreachable {
            target: "s3://b at http://127.0.0.1:9".into(),
            message: "connection refused".into(),
        }
    }

    #[tokio::test]
    async fn a_server_refusing_for_long_enough_is_down_and_later_requests_send_nothing() {
        let policy = RetryPolicy {
            trip_after: 6,
            down_after: Duration::from_millis(20),
            ..fast()
        };
        let calls = AtomicU32::new(0);
        let attempt = || async {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
            Err::<(), _>(refused())
        };
        // Two requests spend their four attempts each; the breaker trips
        // once six failures in a row have lasted 20 ms.
        let first = with_retry(&policy, |_| attempt()).await;
        assert!(
            matches!(first, Err(StoreError::Unreachable { .. })),
            "{first:?}"
        );
        let second = with_retry(&policy, |_| attempt()).await;
        let Err(StoreError::Down { target, .. }) = second else {
            panic!("expected the server to be down: {second:?}");
        };
        assert_eq!(target, "s3://b at http://127.0.0.1:9");
        let sent = calls.load(Ordering::SeqCst);
        assert!((6..=8).contains(&sent), "{sent}");
        // Every later request fails without a single attempt.
        let third = with_retry(&policy, |_| attempt()).await;
        assert!(matches!(third, Err(StoreError::Down { .. })));
        assert_eq!(calls.load(Ordering::SeqCst), sent);
        assert!(super::outage().is_some());
    }

    #[tokio::test]
    async fn an_answer_between_failures_keeps_the_server_up() {
        let policy = RetryPolicy {
            trip_after: 3,
            down_after: Duration::ZERO,
            ..fast()
        };
        for _ in 0..10 {
            // Fails twice, then answers: never three in a row.
            let r = with_retry(&policy, |attempt| async move {
                if attempt < 3 { Err(refused()) } else { Ok(()) }
            })
            .await;
            assert!(r.is_ok(), "{r:?}");
        }
    }

    #[tokio::test]
    async fn throttling_for_the_whole_budget_gives_up() {
        let policy = RetryPolicy {
            max_attempts: 1000,
            budget: Duration::from_millis(30),
            ..fast()
        };
        let r: Result<(), _> = with_retry(&policy, |_| async {
            tokio::time::sleep(Duration::from_millis(2)).await;
            Err(StoreError::Unavailable {
                target: "t".into(),
                message: "503 SlowDown".into(),
            })
        })
        .await;
        assert!(matches!(r, Err(StoreError::Down { .. })), "{r:?}");
    }

    #[tokio::test]
    async fn a_download_that_disagrees_with_its_sha256_is_tried_again() {
        let calls = AtomicU32::new(0);
        let corrupt = || StoreError::Integrity {
            key: "k".into(),
            algorithm: "sha256",
            expected: "aa".into(),
            found: "bb".into(),
        };
        let r = with_retry(&fast(), |attempt| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move { if attempt < 2 { Err(corrupt()) } else { Ok(()) } }
        })
        .await;
        assert!(r.is_ok());
        // One that keeps disagreeing is corrupt, after every attempt.
        let r: Result<(), _> = with_retry(&fast(), |_| async { Err(corrupt()) }).await;
        assert!(matches!(r, Err(StoreError::Integrity { .. })));
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
