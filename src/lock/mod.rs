//! The distributed lock: one object per namespace of a datastore
//! (`<prefix>/<ns>/.swamp/lock.json`, solo `<prefix>/.swamp/lock.json`,
//! computed by [`Layout::lock_key`]) that every command writing the remote
//! or migrating a layout holds for its whole run.
//!
//! Owns: the lock body ([`LockBody`]), reading a lock ([`inspect`]),
//! taking it ([`acquire`]: a create-only write; a lock past its expiry is
//! taken over with a compare-and-swap on the version seen, never by
//! delete-then-create), keeping it (a heartbeat thread renewing it with a
//! compare-and-swap on our own version), and giving it back (a delete
//! conditional on our own version, so a holder that stalled past its TTL
//! cannot remove its successor's lock). [`release_all`] gives back every
//! lock this process holds; the Ctrl-C handler calls it.
//!
//! Expiry is judged from the `expires_at` the holder wrote, against this
//! machine's clock: clocks of machines sharing a bucket are assumed to
//! agree to well within the TTL.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::config::{Config, DatastoreConfig, Placement};
use crate::layout::Layout;
use crate::store::{self, Precondition, Store, StoreError};

/// What a lock object says. Written whole by one request, so a reader sees
/// either the old body or the new one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockBody {
    /// Random, new for every acquisition.
    pub id: String,
    /// The command holding it (`datastore sync`, `apply`, …).
    pub operation: String,
    /// `user@host`.
    pub holder: String,
    pub pid: u32,
    pub tool_version: String,
    /// RFC 3339, UTC.
    pub acquired_at: String,
    /// RFC 3339, UTC; pushed forward by every renewal.
    pub expires_at: String,
    pub ttl_secs: u64,
    /// Boot, PID namespace and start time of the holder (see [`holder`]):
    /// what tells a live holder from a gone one on a machine it shares.
    #[serde(flatten)]
    pub whereabouts: holder::Whereabouts,
}

impl LockBody {
    fn new(operation: &str, ttl: Duration) -> LockBody {
        let now = crate::clock::now();
        LockBody {
            id: uuid::Uuid::new_v4().to_string(),
            operation: operation.to_string(),
            holder: who_am_i(),
            pid: std::process::id(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            acquired_at: rfc3339(now),
            expires_at: rfc3339(now + ttl),
            ttl_secs: ttl.as_secs().max(1),
            whereabouts: holder::Whereabouts::here(),
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("a lock body serialises");
        v.push(b'\n');
        v
    }

    pub fn expires(&self) -> Option<SystemTime> {
        humantime::parse_rfc3339_weak(&self.expires_at).ok()
    }

    pub fn acquired(&self) -> Option<SystemTime> {
        humantime::parse_rfc3339_weak(&self.acquired_at).ok()
    }

    /// Seconds from `acquired_at` to `now` (negative: acquired in the future).
    pub fn age_secs(&self, now: SystemTime) -> Option<i64> {
        self.acquired().map(|t| secs_between(t, now))
    }

    /// Seconds from `now` to `expires_at` (negative: already expired).
    pub fn expires_in_secs(&self, now: SystemTime) -> Option<i64> {
        self.expires().map(|t| secs_between(now, t))
    }

    /// Past its expiry (an unreadable expiry counts as never expiring).
    pub fn is_stale(&self, now: SystemTime) -> bool {
        self.expires().is_some_and(|e| e < now)
    }

    /// "alice@build-1 (pid 4242, `datastore sync`, since 2026-11-30T07:00:00Z)".
    pub fn describe(&self) -> String {
        format!(
            "{} (pid {}, `{}`, since {})",
            self.holder, self.pid, self.operation, self.acquired_at
        )
    }
}

/// What sits at a lock key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockState {
    Free,
    Held {
        body: LockBody,
        /// The object's version (etag, generation), for compare-and-swap.
        version: String,
        stale: bool,
    },
    /// Something is there but it is not a lock body we can read: held,
    /// owner unknown. Only `lock release --force` breaks it.
    Unparseable {
        version: String,
        size: u64,
        reason: String,
    },
}

impl LockState {
    /// `free`, `held`, `stale` or `unparseable`: the `state` of `--json`
    /// outputs.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            LockState::Free => "free",
            LockState::Held { stale: false, .. } => "held",
            LockState::Held { stale: true, .. } => "stale",
            LockState::Unparseable { .. } => "unparseable",
        }
    }
}

/// Where one lock lives: a store and a key in it.
#[derive(Clone)]
pub(crate) struct LockTarget {
    pub store: Arc<dyn Store>,
    pub key: String,
    /// `s3://bucket/prefix/ns/.swamp/lock.json`: names it in messages.
    pub url: String,
}

impl std::fmt::Debug for LockTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

impl LockTarget {
    /// The lock of a placement. A `local` datastore is the repository's own
    /// `.swamp/`, so its lock is repo-local state.
    pub(crate) fn of(layout: &Layout, placement: &Placement) -> Result<LockTarget, StoreError> {
        match &placement.datastore {
            DatastoreConfig::Local => Ok(LockTarget::in_dir(&layout.state_dir())),
            _ => LockTarget::shared(placement),
        }
    }

    /// A lock file `lock.json` in a directory of this machine's own state
    /// (a clone's, or its cache's): no datastore's requests.
    pub(crate) fn in_dir(dir: &std::path::Path) -> LockTarget {
        LockTarget {
            store: store::open_own_state(dir),
            key: "lock.json".into(),
            url: dir.join("lock.json").display().to_string(),
        }
    }

    /// The lock of a placement in a shared datastore (filesystem, S3, GCS):
    /// needs no repository.
    pub(crate) fn shared(placement: &Placement) -> Result<LockTarget, StoreError> {
        Ok(LockTarget {
            store: store::open(&placement.datastore)?,
            key: Layout::lock_key(placement),
            url: Layout::lock_url(placement),
        })
    }

    /// The locks a repository's commands hold: its target placement's and
    /// those of every placement it still drains, each once, ordered by URL
    /// (so two commands never each hold one the other waits for).
    pub(crate) fn all_of(layout: &Layout, config: &Config) -> Result<Vec<LockTarget>, StoreError> {
        let mut targets: Vec<LockTarget> = Vec::new();
        for p in std::iter::once(config.target()).chain(config.migrating_from.iter().cloned()) {
            let t = LockTarget::of(layout, &p)?;
            if !targets.iter().any(|x| x.url == t.url) {
                targets.push(t);
            }
        }
        targets.sort_by(|a, b| a.url.cmp(&b.url));
        Ok(targets)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "upstream swamp's lock {url} is held by {}, last renewed {} second(s) ago; gave up after waiting {waited}s",
        .body.describe(), .age_secs.map_or("an unknown time".to_string(), |a| a.to_string())
    )]
    HeldUpstream {
        url: String,
        body: Box<upstream::UpstreamBody>,
        age_secs: Option<u64>,
        waited: u64,
    },
    #[error(
        "the lock {url} is held by {} until {}; gave up after waiting {waited}s",
        .body.describe(), .body.expires_at
    )]
    Held {
        url: String,
        body: Box<LockBody>,
        waited: u64,
    },
    #[error("the lock {url} holds an unreadable object ({reason}); it is held by an unknown owner")]
    Unparseable { url: String, reason: String },
    #[error("lost the lock {url}: {reason}; stopped before doing more")]
    Lost { url: String, reason: String },
    /// The lock could be read but not written: read-only credentials.
    #[error("these credentials can read {url} but not write it ({op} denied)")]
    ReadOnly {
        /// The namespace (or datastore) the lock guards.
        url: String,
        /// The refused request, as the provider's policies name it.
        op: &'static str,
        /// What the server said.
        message: String,
    },
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// Reads the lock at `target`.
pub(crate) async fn inspect(target: &LockTarget) -> Result<LockState, StoreError> {
    let (meta, bytes) = match target.store.get_bytes(&target.key).await {
        Ok(x) => x,
        Err(StoreError::NotFound { .. }) => return Ok(LockState::Free),
        // Metadata that disagrees with the content: someone wrote it by hand.
        Err(StoreError::Integrity { .. }) => {
            let meta = target.store.head(&target.key).await?;
            return Ok(match meta {
                None => LockState::Free,
                Some(m) => LockState::Unparseable {
                    version: m.version,
                    size: m.size,
                    reason: "its content does not match its sha256 metadata".into(),
                },
            });
        }
        Err(e) => return Err(e),
    };
    Ok(match serde_json::from_slice::<LockBody>(&bytes) {
        Ok(body) => LockState::Held {
            stale: body.is_stale(crate::clock::now()),
            body,
            version: meta.version,
        },
        Err(e) => LockState::Unparseable {
            version: meta.version,
            size: meta.size,
            reason: format!("not a swamp lock: {e}"),
        },
    })
}

/// [`inspect`] for callers outside an async runtime.
pub(crate) fn read(target: &LockTarget) -> Result<LockState, StoreError> {
    small_runtime().block_on(inspect(target))
}

/// What [`acquire`] tells its caller while it works.
#[derive(Debug, Clone)]
pub(crate) enum Event<'a> {
    /// Held by someone else; waiting (sent once per holder).
    Waiting { url: &'a str, body: &'a LockBody },
    /// A lock past its expiry was taken over.
    TookOver {
        url: &'a str,
        previous: &'a LockBody,
        /// Taken over before its expiry: its holder, on this machine, is
        /// gone (the clone's own lock only).
        holder_gone: bool,
    },
    /// Upstream swamp holds its lock of the same namespace; waiting.
    WaitingUpstream {
        url: &'a str,
        body: &'a upstream::UpstreamBody,
    },
    /// Upstream's lock could not be looked at (credentials scoped to the
    /// namespace's own prefix); going on without it.
    UpstreamUnchecked { url: &'a str, reason: String },
}

/// Waits, up to `timeout`, while upstream swamp holds its lock of
/// `placement` (see [`upstream`]); a stale one does not count.
pub(crate) fn await_upstream(
    placement: &Placement,
    timeout: Duration,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Awaited, LockError> {
    let (Some(key), Some(url)) = (upstream::key(placement), upstream::url(placement)) else {
        return Ok(Awaited::Free);
    };
    let store = store::open(&placement.datastore)?;
    let rt = small_runtime();
    let started = std::time::Instant::now();
    let mut announced = false;
    loop {
        let seen = match rt.block_on(upstream::inspect(store.as_ref(), &key)) {
            Err(e @ StoreError::Denied { .. }) => {
                on_event(Event::UpstreamUnchecked {
                    url: &url,
                    reason: e.to_string(),
                });
                return Ok(Awaited::Passed);
            }
            other => other?,
        };
        match seen {
            upstream::UpstreamLock::Free => return Ok(Awaited::of(announced, false)),
            upstream::UpstreamLock::Held { stale: true, .. } => {
                return Ok(Awaited::of(announced, true));
            }
            upstream::UpstreamLock::Held { body, age_secs, .. } => {
                let waited = started.elapsed();
                if waited >= timeout {
                    return Err(LockError::HeldUpstream {
                        url,
                        body: Box::new(body),
                        age_secs,
                        waited: waited.as_secs(),
                    });
                }
                if !announced {
                    on_event(Event::WaitingUpstream {
                        url: &url,
                        body: &body,
                    });
                    announced = true;
                }
                std::thread::sleep(Duration::from_millis(500).min(timeout - waited));
            }
        }
    }
}

/// How to take a lock.
#[derive(Debug, Clone)]
pub(crate) struct LockOptions {
    pub operation: String,
    pub ttl: Duration,
    /// How long to wait for a lock someone else holds.
    pub timeout: Duration,
    /// A holder on this machine whose process is gone has let go: for the
    /// clone's own lock, which only this machine's runs take (a kill
    /// leaves nobody waiting out its TTL). The datastore's lock is shared,
    /// and waits for the TTL whoever held it.
    pub dead_holder_is_stale: bool,
}

/// Takes the lock at `target`, waiting up to `options.timeout` for a holder
/// to release it or for its lock to expire. On success a heartbeat keeps it
/// until the returned guard is released or dropped.
pub(crate) fn acquire(
    target: &LockTarget,
    options: &LockOptions,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<LockGuard, LockError> {
    let rt = small_runtime();
    let poll = Duration::from_millis(250)
        .min(options.ttl / 4)
        .max(Duration::from_millis(50));
    let mut wait = Wait::new(target, options.timeout, poll);
    loop {
        let body = LockBody::new(&options.operation, options.ttl);
        match rt.block_on(target.store.put_bytes(
            &target.key,
            body.to_bytes(),
            &Precondition::CreateOnly,
        )) {
            Ok(meta) => {
                lock_event(&target.url, "acquired", None);
                return Ok(LockGuard::start(
                    target.clone(),
                    body,
                    meta.version,
                    options.ttl,
                ));
            }
            Err(StoreError::PreconditionFailed { .. }) => {}
            Err(StoreError::Denied { message, .. }) if rt.block_on(inspect(target)).is_ok() => {
                return Err(read_only(target, message));
            }
            Err(e) => return Err(e.into()),
        }
        match rt.block_on(inspect(target))? {
            LockState::Free => continue,
            LockState::Held {
                body: old,
                version,
                stale,
            } if stale || (options.dead_holder_is_stale && holder_is_gone(&old)) => {
                // Compare-and-swap on the stale version: of several waiters
                // exactly one wins, and a holder that renewed in the
                // meantime keeps its lock.
                match rt.block_on(target.store.put_bytes(
                    &target.key,
                    body.to_bytes(),
                    &Precondition::Matches(version),
                )) {
                    Ok(meta) => {
                        lock_event(&target.url, "took-over", Some(&old.describe()));
                        on_event(Event::TookOver {
                            url: &target.url,
                            previous: &old,
                            holder_gone: !stale,
                        });
                        return Ok(LockGuard::start(
                            target.clone(),
                            body,
                            meta.version,
                            options.ttl,
                        ));
                    }
                    Err(StoreError::PreconditionFailed { .. } | StoreError::NotFound { .. }) => {
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            state => {
                if let LockState::Held { body, .. } = &state {
                    lock_event(&target.url, "waiting", Some(&body.describe()));
                }
                wait.on(state, on_event)?
            }
        }
    }
}

/// A lock step, for the trace (`{"event":"lock","step":"acquired",…}`).
fn lock_event(url: &str, step: &str, detail: Option<&str>) {
    tracing::info!(target: "swamp::lock", event = "lock", step, url, detail);
}

/// A refused lock write whose read went through: the credentials can read
/// the namespace but not write it.
fn read_only(target: &LockTarget, message: String) -> LockError {
    let described = target.store.describe();
    let op = if described.starts_with("gs://") {
        "storage.objects.create"
    } else {
        "PutObject"
    };
    let url = target
        .url
        .strip_suffix(".swamp/lock.json")
        .unwrap_or(&target.url)
        .to_string();
    LockError::ReadOnly { url, op, message }
}

/// Waits, up to `timeout`, while someone else holds a fresh lock at
/// `target`, without taking it: for a run that writes nothing there. A
/// stale lock does not count, nor one whose holder on this machine is gone.
pub(crate) fn await_free(
    target: &LockTarget,
    timeout: Duration,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Awaited, LockError> {
    let rt = small_runtime();
    let mut wait = Wait::new(target, timeout, Duration::from_millis(250));
    let mut waited = false;
    loop {
        let passed = match rt.block_on(inspect(target))? {
            LockState::Free => false,
            LockState::Held { stale: true, .. } => true,
            // A writer on this machine whose process is gone writes no
            // more: a reader need not wait out its TTL (a writer still
            // does, to take the lock over).
            LockState::Held { body, .. } if holder_is_gone(&body) => true,
            state => {
                wait.on(state, on_event)?;
                waited = true;
                continue;
            }
        };
        return Ok(Awaited::of(waited, passed));
    }
}

/// What waiting on a lock found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Awaited {
    /// No lock there.
    Free,
    /// A lock whose holder is gone (stale, or a dead process here): no wait.
    Passed,
    /// Held by a live writer: waited until it was not.
    Waited,
}

impl Awaited {
    fn of(waited: bool, passed: bool) -> Awaited {
        match (waited, passed) {
            (true, _) => Awaited::Waited,
            (false, true) => Awaited::Passed,
            (false, false) => Awaited::Free,
        }
    }
}

/// Waiting on a lock someone else holds (for [`acquire`] and
/// [`await_free`]): says once per holder that it waits, and gives up after
/// `timeout` naming the holder.
struct Wait<'t> {
    target: &'t LockTarget,
    timeout: Duration,
    poll: Duration,
    started: std::time::Instant,
    announced: Option<String>,
}

impl<'t> Wait<'t> {
    fn new(target: &'t LockTarget, timeout: Duration, poll: Duration) -> Wait<'t> {
        Wait {
            target,
            timeout,
            poll,
            started: std::time::Instant::now(),
            announced: None,
        }
    }

    /// The lock is `state` (held, or unreadable): an error once the time
    /// is up, else one poll's sleep.
    fn on(
        &mut self,
        state: LockState,
        on_event: &mut dyn FnMut(Event<'_>),
    ) -> Result<(), LockError> {
        let waited = self.started.elapsed();
        let url = &self.target.url;
        match state {
            LockState::Free => return Ok(()),
            LockState::Held { body, .. } => {
                if waited >= self.timeout {
                    return Err(LockError::Held {
                        url: url.clone(),
                        body: Box::new(body),
                        waited: waited.as_secs(),
                    });
                }
                if self.announced.as_deref() != Some(body.id.as_str()) {
                    on_event(Event::Waiting { url, body: &body });
                    self.announced = Some(body.id.clone());
                }
            }
            LockState::Unparseable { reason, .. } => {
                if waited >= self.timeout {
                    return Err(LockError::Unparseable {
                        url: url.clone(),
                        reason,
                    });
                }
            }
        }
        std::thread::sleep(self.poll.min(self.timeout.saturating_sub(waited)));
        Ok(())
    }
}

/// Breaks the lock at `target`: a delete conditional on the version seen,
/// so a lock that changed since it was read (renewed, or taken by someone
/// else) is left alone. Returns what was removed.
pub(crate) fn break_lock(target: &LockTarget, seen: &LockState) -> Result<(), StoreError> {
    let version = match seen {
        LockState::Free => return Ok(()),
        LockState::Held { version, .. } | LockState::Unparseable { version, .. } => version,
    };
    small_runtime().block_on(
        target
            .store
            .delete(&target.key, &Precondition::Matches(version.clone())),
    )
}

/// A held lock. Renewed by a heartbeat thread until [`LockGuard::release`]
/// (or drop).
pub(crate) struct LockGuard {
    inner: Arc<Held>,
    stop: Option<mpsc::Sender<()>>,
    heartbeat: Option<JoinHandle<()>>,
}

/// What the holder and its heartbeat share.
struct Held {
    target: LockTarget,
    body: Mutex<LockBody>,
    /// The version of our lock object, as of our last write.
    version: Mutex<String>,
    lost: Mutex<Option<String>>,
    released: AtomicBool,
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("url", &self.inner.target.url)
            .finish_non_exhaustive()
    }
}

impl LockGuard {
    fn start(target: LockTarget, body: LockBody, version: String, ttl: Duration) -> LockGuard {
        let inner = Arc::new(Held {
            target,
            body: Mutex::new(body),
            version: Mutex::new(version),
            lost: Mutex::new(None),
            released: AtomicBool::new(false),
        });
        register(&inner);
        let (stop, stopped) = mpsc::channel::<()>();
        let beat = Arc::clone(&inner);
        let heartbeat = std::thread::Builder::new()
            .name("swamp-lock-heartbeat".into())
            .spawn(move || heartbeat(beat, ttl, stopped))
            .expect("a heartbeat thread starts");
        LockGuard {
            inner,
            stop: Some(stop),
            heartbeat: Some(heartbeat),
        }
    }

    pub(crate) fn url(&self) -> &str {
        &self.inner.target.url
    }

    /// The version (etag, generation) of our lock object right now.
    pub(crate) fn version(&self) -> String {
        self.inner.version.lock().unwrap().clone()
    }

    pub(crate) fn body(&self) -> LockBody {
        self.inner.body.lock().unwrap().clone()
    }

    /// Errors when the lock was lost (a renewal found someone else's lock).
    pub(crate) fn check(&self) -> Result<(), LockError> {
        match self.inner.lost.lock().unwrap().clone() {
            None => Ok(()),
            Some(reason) => Err(LockError::Lost {
                url: self.inner.target.url.clone(),
                reason,
            }),
        }
    }

    /// Stops the heartbeat and deletes our lock object, on condition that
    /// it is still ours. A lost lock is left to its new holder.
    pub(crate) fn release(mut self) -> Result<(), LockError> {
        self.stop_heartbeat();
        let lost = self.check();
        self.inner.release()?;
        lost
    }

    fn stop_heartbeat(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(h) = self.heartbeat.take() {
            let _ = h.join();
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        self.stop_heartbeat();
        let _ = self.inner.release();
    }
}

impl Held {
    fn release(&self) -> Result<(), StoreError> {
        if self.released.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        unregister(self);
        if self.lost.lock().unwrap().is_some() {
            return Ok(());
        }
        let version = self.version.lock().unwrap().clone();
        match small_runtime().block_on(
            self.target
                .store
                .delete(&self.target.key, &Precondition::Matches(version)),
        ) {
            Ok(()) => {
                lock_event(&self.target.url, "released", None);
                Ok(())
            }
            // Not ours any more (taken over after we stalled): leave it.
            Err(StoreError::PreconditionFailed { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn lose(&self, reason: String) {
        let mut lost = self.lost.lock().unwrap();
        if lost.is_none() {
            lock_event(&self.target.url, "lost", Some(&reason));
            *lost = Some(reason);
        }
    }
}

/// How often the heartbeat looks at the lock object between renewals, so
/// that a lock broken by `lock release --force` (or taken over) stops the
/// work within about this long, not a third of the TTL later.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Renews the lock every third of its TTL with a compare-and-swap on our
/// own version, and between renewals reads the lock object's version. A
/// renewal or a read that finds another version (or none) means someone
/// took the lock over or broke it: the lock is lost and never written
/// again.
fn heartbeat(held: Arc<Held>, ttl: Duration, stopped: mpsc::Receiver<()>) {
    let rt = small_runtime();
    let every = (ttl / 3).max(Duration::from_millis(100));
    let look = LOOK_EVERY.min(every);
    let mut renewed = std::time::Instant::now();
    loop {
        match stopped.recv_timeout(look) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
        }
        let beat = if renewed.elapsed() < every {
            Beat::Look
        } else {
            renewed = std::time::Instant::now();
            Beat::Renew
        };
        if held.beat(beat, ttl, &rt).is_break() {
            return;
        }
    }
}

/// What one heartbeat does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Beat {
    /// Read the lock object's version: still ours?
    Look,
    /// Renew the lock with a compare-and-swap on our own version.
    Renew,
}

impl Held {
    /// One heartbeat; `Break` once the lock is lost (it is never written
    /// again).
    fn beat(
        &self,
        beat: Beat,
        ttl: Duration,
        rt: &tokio::runtime::Runtime,
    ) -> std::ops::ControlFlow<()> {
        use std::ops::ControlFlow::{Break, Continue};
        if beat == Beat::Look {
            let version = self.version.lock().unwrap().clone();
            let look =
                crate::telemetry::requests::heartbeat(self.target.store.head(&self.target.key));
            return match rt.block_on(look) {
                Ok(Some(meta)) if meta.version == version => Continue(()),
                Ok(Some(_)) => {
                    self.lose("another process took it over".into());
                    Break(())
                }
                Ok(None) => {
                    self.lose(
                        "it was broken (deleted, e.g. by `swamp datastore lock release --force`)"
                            .into(),
                    );
                    Break(())
                }
                // Unreachable for now: the renewal and the expiry check
                // decide.
                Err(_) => Continue(()),
            };
        }
        let now = crate::clock::now();
        let body = {
            let mut b = self.body.lock().unwrap();
            if b.is_stale(now) {
                // We stalled past our own expiry: someone may hold it now,
                // and what we did meanwhile was not covered.
                drop(b);
                self.lose(format!(
                    "it expired before it could be renewed (this process stalled for more than {}s)",
                    ttl.as_secs()
                ));
                return Break(());
            }
            b.expires_at = rfc3339(now + ttl);
            b.clone()
        };
        let version = self.version.lock().unwrap().clone();
        let ours = Precondition::Matches(version);
        let renew = crate::telemetry::requests::heartbeat(self.target.store.put_bytes(
            &self.target.key,
            body.to_bytes(),
            &ours,
        ));
        match rt.block_on(renew) {
            Ok(meta) => {
                lock_event(&self.target.url, "renewed", None);
                *self.version.lock().unwrap() = meta.version
            }
            Err(StoreError::PreconditionFailed { .. } | StoreError::NotFound { .. }) => {
                self.lose("another process took it over or broke it".into());
                return Break(());
            }
            // A transient failure: try again next beat; the expiry check
            // above stops us if it never comes back in time.
            Err(_) => {}
        }
        Continue(())
    }
}

/// Test-only: the heartbeat driven a beat at a time, so the lock's rules
/// are checked without sleeping through TTLs.
#[cfg(test)]
impl LockGuard {
    /// Stops the background heartbeat: the test beats instead.
    fn manual(mut self) -> LockGuard {
        self.stop_heartbeat();
        self
    }

    fn beat(&self, beat: Beat, ttl: Duration) -> std::ops::ControlFlow<()> {
        self.inner.beat(beat, ttl, &small_runtime())
    }
}

/// The locks this process holds, for the Ctrl-C handler.
static HELD: Mutex<BTreeMap<usize, std::sync::Weak<Held>>> = Mutex::new(BTreeMap::new());

thread_local! {
    /// The locks taken on this thread, which [`ensure_held`] answers for.
    /// Per thread, so that one command's loss never stops another's work
    /// (tests run many on one process).
    static MINE: std::cell::RefCell<Vec<std::sync::Weak<Held>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn register(held: &Arc<Held>) {
    HELD.lock()
        .unwrap()
        .insert(Arc::as_ptr(held) as usize, Arc::downgrade(held));
    MINE.with(|m| m.borrow_mut().push(Arc::downgrade(held)));
}

fn unregister(held: &Held) {
    HELD.lock().unwrap().remove(&(held as *const Held as usize));
}

/// The locks taken on one thread, watched from anywhere: apply hands it
/// to its transfer tasks so a loss stops them at the next safe point.
#[derive(Debug, Clone, Default)]
pub(crate) struct LossWatch(Vec<std::sync::Weak<Held>>);

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("url", &self.target.url)
            .finish_non_exhaustive()
    }
}

/// The locks taken on this thread and not yet released.
pub(crate) fn watch() -> LossWatch {
    MINE.with(|m| {
        let mut m = m.borrow_mut();
        m.retain(|w| w.strong_count() > 0);
        LossWatch(m.clone())
    })
}

impl LossWatch {
    /// Why a watched lock was lost, if one was.
    pub(crate) fn lost(&self) -> Option<String> {
        for h in self.0.iter().filter_map(std::sync::Weak::upgrade) {
            if h.released.load(Ordering::SeqCst) {
                continue;
            }
            // Our own expiry, read here rather than left to the heartbeat:
            // after a stall this thread may run before the heartbeat does.
            if h.body.lock().unwrap().is_stale(crate::clock::now()) {
                h.lose("it expired before it could be renewed (this process stalled)".into());
            }
            if let Some(r) = h.lost.lock().unwrap().as_ref() {
                return Some(format!("lost the lock {}: {r}", h.target.url));
            }
        }
        None
    }
}

/// Errors when a lock taken on this thread and still held was lost. Apply
/// calls this before each step, so a holder that stalled past its TTL stops
/// instead of working alongside its successor.
pub(crate) fn ensure_held() -> Result<(), String> {
    match watch().lost() {
        Some(reason) => Err(reason),
        None => Ok(()),
    }
}

/// A holder on this machine whose process surely no longer runs: same
/// `user@host`, and same boot and PID namespace with its pid free or
/// reused (see [`holder`]). A body of an older swamp, which records none
/// of that, is judged by its pid alone, as that swamp would.
pub(crate) fn holder_is_gone(body: &LockBody) -> bool {
    if body.holder != who_am_i() {
        return false;
    }
    match holder::surely_gone(body.pid, &body.whereabouts) {
        Some(gone) => gone,
        None => libc::pid_t::try_from(body.pid).is_ok_and(crate::fsutil::process_gone),
    }
}

/// Releases every lock this process holds (conditional deletes of our own
/// versions). For the Ctrl-C handler; guards dropped later do nothing.
pub(crate) fn release_all() {
    let held: Vec<_> = HELD
        .lock()
        .unwrap()
        .values()
        .filter_map(std::sync::Weak::upgrade)
        .collect();
    for h in held {
        let _ = h.release();
    }
}

/// Whole seconds from `a` to `b`, negative when `b` is earlier.
fn secs_between(a: SystemTime, b: SystemTime) -> i64 {
    match b.duration_since(a) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

pub(crate) mod holder;
pub(crate) mod upstream;

fn small_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// The name the password database gives this process's user (containers
/// and cron often set no `USER`).
fn login_name() -> Option<String> {
    let uid = nix::unistd::Uid::from_raw(rustix::process::getuid().as_raw());
    let user = nix::unistd::User::from_uid(uid).ok()??;
    Some(user.name).filter(|n| !n.is_empty())
}

/// `user@host` for the lock body.
pub(crate) fn who_am_i() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|u| !u.is_empty())
        .or_else(login_name)
        .unwrap_or_else(|| format!("uid{}", rustix::process::getuid().as_raw()));
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    let host = if host.is_empty() {
        "unknown-host".into()
    } else {
        host
    };
    format!("{user}@{host}")
}

#[cfg(test)]
mod tests;
