//! The lock's rules on a directory store (the S3 and GCS servers run the
//! same scenarios end to end in `tests/it/lock.rs`).

use super::*;

fn target(dir: &std::path::Path) -> LockTarget {
    LockTarget {
        store: store::open_fs(dir),
        key: "p/ns/.swamp/lock.json".into(),
        url: "test://p/ns/.swamp/lock.json".into(),
    }
}

fn opts(ttl_ms: u64, timeout_ms: u64) -> LockOptions {
    LockOptions {
        operation: "test".into(),
        ttl: Duration::from_millis(ttl_ms),
        timeout: Duration::from_millis(timeout_ms),
        dead_holder_is_stale: false,
    }
}

fn state(t: &LockTarget) -> LockState {
    read(t).unwrap()
}

fn put_raw(t: &LockTarget, bytes: &[u8]) {
    small_runtime()
        .block_on(
            t.store
                .put_bytes(&t.key, bytes.to_vec(), &Precondition::None),
        )
        .unwrap();
}

#[test]
fn a_free_lock_is_taken_and_names_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path());
    assert_eq!(state(&t), LockState::Free);
    let guard = acquire(&t, &opts(60_000, 0), &mut |_| {}).unwrap();
    match state(&t) {
        LockState::Held { body, stale, .. } => {
            assert!(!stale);
            assert_eq!(body.pid, std::process::id());
            assert_eq!(body.operation, "test");
            assert!(body.holder.contains('@'), "{}", body.holder);
            assert_eq!(body.id, guard.body().id);
        }
        other => panic!("{other:?}"),
    }
    guard.release().unwrap();
    assert_eq!(state(&t), LockState::Free);
}

#[test]
fn a_held_lock_is_refused_naming_the_holder_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path());
    let guard = acquire(&t, &opts(60_000, 0), &mut |_| {}).unwrap();
    let mut waited = 0;
    let started = std::time::Instant::now();
    let err = acquire(&t, &opts(60_000, 300), &mut |e| {
        if matches!(e, Event::Waiting { .. }) {
            waited += 1;
        }
    })
    .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(waited, 1, "the holder is announced once");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("pid {}", std::process::id())),
        "{msg}"
    );
    assert!(matches!(err, LockError::Held { .. }));
    // The refused attempt did not disturb the holder.
    guard.check().unwrap();
    guard.release().unwrap();
}

#[test]
fn a_waiter_gets_the_lock_once_the_holder_releases_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path());
    let guard = acquire(&t, &opts(60_000, 0), &mut |_| {}).unwrap();
    let t2 = t.clone();
    let waiter = std::thread::spawn(move || {
        let mut waited = false;
        let got = acquire(&t2, &opts(60_000, 10_000), &mut |e| {
            waited |= matches!(e, Event::Waiting { .. });
        });
        (got, waited, std::time::Instant::now())
    });
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        !waiter.is_finished(),
        "the waiter must not get (or give up on) a lock that is held"
    );
    let released = std::time::Instant::now();
    guard.release().unwrap();
    let (second, waited, got_at) = waiter.join().unwrap();
    let second = second.unwrap();
    assert!(waited, "the waiter said it was waiting for the holder");
    assert!(
        got_at >= released,
        "the waiter got the lock only after its release"
    );
    second.release().unwrap();
}

#[test]
fn a_stale_lock_is_taken_over_with_a_swap_not_a_delete() {
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path());
    let mut old = LockBody::new("crashed", Duration::from_secs(1));
    old.expires_at = "2000-01-01T00:00:00Z".into();
    put_raw(&t, &old.to_bytes());
    let mut previous = None;
    let guard = acquire(&t, &opts(60_000, 0), &mut |e| {
        if let Event::TookOver { previous: p, .. } = e {
            previous = Some(p.id.clone());
        }
    })
    .unwrap();
    assert_eq!(previous.as_deref(), Some(old.id.as_str()));
    guard.release().unwrap();
}

#[test]
fn a_lock_not_yet_expired_is_not_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path());
    // A holder that died without releasing, 2 s left on its lock.
    let dead = LockBody::new("crashed", Duration::from_secs(2));
    put_raw(&t, &dead.to_bytes());
    let err = acquire(&t, &opts(60_000, 500), &mut |_| {}).unwrap_err();
    assert!(matches!(err, LockError::Held { .. }), "{err}");
    let started = std::time::Instant::now();
    let guard = acquire(&t, &opts(60_000, 10_000), &mut |_| {}).unwrap();
    assert!(
        SystemTime::now() > dead.expires().unwrap(),
        "taken after the dead holder's expiry, not before"
    );
    assert!(started.elapsed() > Duration::from_millis(200));
    guard.release().unwrap();
}

#[test]
fn the_heartbeat_renews_with_a_new_version_and_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path());
    let ttl = Duration::from_secs(60);
    let guard = acquire(&t, &opts(60_000, 0), &mut |_| {}).unwrap().manual();
    let first = guard.version();
    let first_expiry = guard.body().expires().unwrap();
    assert!(guard.beat(Beat::Look, ttl).is_continue(), "still ours");
    assert_eq!(guard.version(), first, "a look writes nothing");
    assert!(guard.beat(Beat::Renew, ttl).is_continue());
    // Renewed in place: a new version, an expiry no earlier.
    guard.check().unwrap();
    assert_ne!(guard.version(), first);
    assert!(guard.body().expires().unwrap() >= first_expiry);
    match state(&t) {
        LockState::Held { stale, body, .. } => {
            assert!(!stale);
            assert_eq!(body.id, guard.body().id);
            assert_eq!(body.expires_at, guard.body().expires_at);
        }
        other => panic!("{other:?}"),
    }
    guard.release().unwrap();
    assert_eq!(state(&t), LockState::Free);
}

#[test]
fn a_holder_whose_lock_was_taken_over_cannot_renew_or_delete_it() {
    let ttl = Duration::from_secs(60);
    // Found by a look between renewals, and by a renewal itself.
    for beat in [Beat::Look, Beat::Renew] {
        let dir = tempfile::tempdir().unwrap();
        let t = target(dir.path());
        let guard = acquire(&t, &opts(60_000, 0), &mut |_| {}).unwrap().manual();
        // Someone else's lock replaces ours (as a takeover after a stall would).
        let successor = LockBody::new("successor", Duration::from_secs(60));
        put_raw(&t, &successor.to_bytes());
        assert!(guard.beat(beat, ttl).is_break(), "{beat:?}");
        let err = guard.check().unwrap_err();
        assert!(matches!(err, LockError::Lost { .. }), "{beat:?}: {err}");
        assert!(ensure_held().is_err());
        assert!(guard.release().is_err(), "release reports the loss");
        match state(&t) {
            LockState::Held { body, .. } => assert_eq!(body.id, successor.id),
            other => panic!("{beat:?}: the successor's lock must survive: {other:?}"),
        }
    }
}

#[test]
fn a_holder_that_stalled_past_its_expiry_stops_without_writing() {
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path());
    let ttl = Duration::from_secs(60);
    let guard = acquire(&t, &opts(60_000, 0), &mut |_| {}).unwrap().manual();
    let version = guard.version();
    // As if this process had slept past its own expiry.
    guard.inner.body.lock().unwrap().expires_at = "2000-01-01T00:00:00Z".into();
    assert!(guard.beat(Beat::Renew, ttl).is_break());
    let err = guard.check().unwrap_err();
    assert!(
        err.to_string()
            .contains("expired before it could be renewed"),
        "{err}"
    );
    assert_eq!(guard.version(), version, "nothing was written");
    let _ = guard.release();
}

#[test]
fn an_unparseable_lock_is_held_by_an_unknown_owner_until_broken() {
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path());
    put_raw(&t, b"{ half a lock");
    let seen = state(&t);
    assert!(matches!(seen, LockState::Unparseable { .. }), "{seen:?}");
    let err = acquire(&t, &opts(60_000, 0), &mut |_| {}).unwrap_err();
    assert!(matches!(err, LockError::Unparseable { .. }), "{err}");
    break_lock(&t, &seen).unwrap();
    assert_eq!(state(&t), LockState::Free);
}

#[test]
fn breaking_a_lock_that_changed_since_it_was_read_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = target(dir.path());
    put_raw(&t, &LockBody::new("a", Duration::from_secs(60)).to_bytes());
    let seen = state(&t);
    std::thread::sleep(Duration::from_millis(20));
    put_raw(&t, &LockBody::new("b", Duration::from_secs(60)).to_bytes());
    let err = break_lock(&t, &seen).unwrap_err();
    assert!(
        matches!(err, StoreError::PreconditionFailed { .. }),
        "{err}"
    );
    assert!(matches!(state(&t), LockState::Held { .. }));
}
