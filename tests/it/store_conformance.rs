//! One suite of object-store scenarios, run alike against every backend:
//! `fs` (a temp directory), `s3` (SeaweedFS) and `gcs` (fake-gcs-server),
//! the real servers started by `crate::support::servers`. Each scenario is an
//! `async fn(Backend)`; the `conformance!` macro instantiates it once per
//! backend, so `cargo test --test store_conformance s3::` runs one backend.

use std::sync::Arc;
use std::time::{Duration, Instant};

use swamp::fsutil::sha256_bytes;
use swamp::store::{self, ObjectMeta, Precondition, RetryPolicy, Store, StoreError, StoreOptions};
use tempfile::TempDir;

use crate::support::servers;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Fs,
    S3,
    Gcs,
}

/// A fresh, empty store for one test, plus a scratch directory.
struct Fixture {
    backend: Backend,
    store: Arc<dyn Store>,
    /// Bucket name (S3/GCS) or unused (fs).
    bucket: String,
    /// Store root (fs only).
    root: Option<TempDir>,
    scratch: TempDir,
}

fn options() -> StoreOptions {
    StoreOptions {
        // Small pages so that listings must follow continuation tokens.
        page_size: 2,
        retry: RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(200),
            ..RetryPolicy::default()
        },
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_secs(30),
        s3_credentials: Some(servers::s3_credentials()),
    }
}

impl Fixture {
    fn new(backend: Backend) -> Fixture {
        let scratch = tempfile::tempdir().unwrap();
        match backend {
            Backend::Fs => {
                let root = tempfile::tempdir().unwrap();
                Fixture {
                    backend,
                    store: store::open_fs(root.path()),
                    bucket: String::new(),
                    root: Some(root),
                    scratch,
                }
            }
            Backend::S3 => {
                let server = servers::s3();
                let bucket = server.fresh_bucket();
                let store = store::open_with(&server.datastore(&bucket, None), options()).unwrap();
                Fixture {
                    backend,
                    store,
                    bucket,
                    root: None,
                    scratch,
                }
            }
            Backend::Gcs => {
                let server = servers::gcs();
                let bucket = server.fresh_bucket();
                let store = store::open_with(&server.datastore(&bucket, None), options()).unwrap();
                Fixture {
                    backend,
                    store,
                    bucket,
                    root: None,
                    scratch,
                }
            }
        }
    }

    /// Stores `body` at `key` with sha256 metadata claiming `claimed`,
    /// behind the store's back.
    async fn tamper(&self, key: &str, body: &[u8], claimed: &str) {
        match self.backend {
            Backend::Fs => {
                // Record the claimed content through the store (its hash goes
                // into the xattr), then rewrite the bytes in place.
                let meta = self
                    .store
                    .put_bytes(key, b"original".to_vec(), &Precondition::None)
                    .await
                    .unwrap();
                assert_eq!(
                    meta.sha256.as_deref(),
                    Some(sha256_bytes(b"original").as_str())
                );
                let path = self.root.as_ref().unwrap().path().join(key);
                std::fs::write(path, body).unwrap();
            }
            Backend::S3 => {
                let (bucket, key, body, claimed) = (
                    self.bucket.clone(),
                    key.to_string(),
                    body.to_vec(),
                    claimed.to_string(),
                );
                tokio::task::spawn_blocking(move || {
                    servers::s3().raw_put(&bucket, &key, &body, &claimed)
                })
                .await
                .unwrap();
            }
            Backend::Gcs => {
                let (bucket, key, body, claimed) = (
                    self.bucket.clone(),
                    key.to_string(),
                    body.to_vec(),
                    claimed.to_string(),
                );
                tokio::task::spawn_blocking(move || {
                    servers::gcs().raw_put(&bucket, &key, &body, &claimed)
                })
                .await
                .unwrap();
            }
        }
    }

    async fn body(&self, key: &str) -> Vec<u8> {
        self.store.get_bytes(key).await.unwrap().1
    }
}

fn is_precondition_failed(r: &Result<impl std::fmt::Debug, StoreError>) -> bool {
    matches!(r, Err(StoreError::PreconditionFailed { .. }))
}

fn keys(metas: &[ObjectMeta]) -> Vec<&str> {
    metas.iter().map(|m| m.key.as_str()).collect()
}

/// Objects per part of a split listing (each part its pages).
fn part_sizes(parts: &[Vec<Vec<ObjectMeta>>]) -> Vec<usize> {
    parts
        .iter()
        .map(|part| part.iter().map(Vec::len).sum())
        .collect()
}

/// A split listing's keys in the order its parts and pages came.
fn split_keys(parts: Vec<Vec<Vec<ObjectMeta>>>) -> Vec<String> {
    parts
        .into_iter()
        .flatten()
        .flatten()
        .map(|m| m.key)
        .collect()
}

// ---------------------------------------------------------------------------
// Scenarios

async fn put_get_head_round_trip_with_sha256(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let body = b"hello, datastore".to_vec();
    let sha = sha256_bytes(&body);

    let put = s
        .put_bytes("p/data/a/1/raw", body.clone(), &Precondition::None)
        .await
        .unwrap();
    assert_eq!(put.key, "p/data/a/1/raw");
    assert_eq!(put.size, body.len() as u64);
    assert_eq!(put.sha256.as_deref(), Some(sha.as_str()));
    assert!(!put.version.is_empty());

    let head = s
        .head("p/data/a/1/raw")
        .await
        .unwrap()
        .expect("head finds it");
    // A PUT's answer carries no last-modified time (S3); a HEAD's does.
    assert!(head.modified.is_some(), "head says when it was written");
    assert_eq!(
        ObjectMeta {
            modified: None,
            ..head.clone()
        },
        ObjectMeta {
            modified: None,
            ..put.clone()
        },
        "head agrees with what put returned"
    );

    let (meta, got) = s.get_bytes("p/data/a/1/raw").await.unwrap();
    assert_eq!(got, body);
    assert_eq!(meta.sha256.as_deref(), Some(sha.as_str()));

    let dest = f.scratch.path().join("out/deep/file");
    let meta = s.get_to_file("p/data/a/1/raw", &dest).await.unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), body);
    assert_eq!(meta.version, put.version);

    // put_file streams from disk and records the caller's hash.
    let src = f.scratch.path().join("src.bin");
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&src, &big).unwrap();
    let big_sha = sha256_bytes(&big);
    let put = s
        .put_file("p/data/big", &src, &big_sha, &Precondition::None)
        .await
        .unwrap();
    assert_eq!(put.size, big.len() as u64);
    let head = s.head("p/data/big").await.unwrap().unwrap();
    assert_eq!(head.sha256.as_deref(), Some(big_sha.as_str()));
    assert_eq!(f.body("p/data/big").await, big);

    // Empty objects are objects too.
    let empty = s
        .put_bytes("p/empty", Vec::new(), &Precondition::CreateOnly)
        .await
        .unwrap();
    assert_eq!(empty.size, 0);
    assert_eq!(f.body("p/empty").await, Vec::<u8>::new());

    assert_eq!(s.head("p/data/missing").await.unwrap(), None);
    let e = s.get_bytes("p/data/missing").await.unwrap_err();
    assert!(matches!(e, StoreError::NotFound { .. }), "{e}");
    let e = s
        .get_to_file("p/data/missing", &f.scratch.path().join("m"))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::NotFound { .. }), "{e}");
    assert!(!f.scratch.path().join("m").exists());
}

async fn list_follows_pages_and_respects_the_prefix(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let inside = [
        "p/ns/data/e",
        "p/ns/data/a",
        "p/ns/data/c/1",
        "p/ns/data/b",
        "p/ns/data/d",
    ];
    let outside = ["p/ns/database", "p/other/data/x", "q/ns/data/y", "p/ns/dat"];
    for k in inside.iter().chain(&outside) {
        s.put_bytes(k, k.as_bytes().to_vec(), &Precondition::None)
            .await
            .unwrap();
    }

    // 5 keys at page size 2: three pages, all followed, sorted. The
    // filesystem store has no pages: one "page" holds the whole listing.
    let mut pages = Vec::new();
    s.list_paged("p/ns/data/", &mut |page| pages.push(page.len()))
        .await
        .unwrap();
    match b {
        Backend::Fs => assert_eq!(pages, [5], "the fs store lists in one go"),
        Backend::S3 | Backend::Gcs => {
            assert_eq!(pages, [2, 2, 1], "pages of 2, each one followed")
        }
    }
    let listed = s.list("p/ns/data/").await.unwrap();
    assert_eq!(
        keys(&listed),
        [
            "p/ns/data/a",
            "p/ns/data/b",
            "p/ns/data/c/1",
            "p/ns/data/d",
            "p/ns/data/e"
        ]
    );
    for m in &listed {
        assert_eq!(m.size, m.key.len() as u64);
        assert!(!m.version.is_empty());
        if s.capabilities().listing_has_sha256 {
            assert_eq!(
                m.sha256.as_deref(),
                Some(sha256_bytes(m.key.as_bytes()).as_str())
            );
        } else {
            assert_eq!(m.sha256, None);
        }
    }

    // A prefix is a string prefix, not a directory.
    assert_eq!(
        keys(&s.list("p/ns/data").await.unwrap()),
        [
            "p/ns/data/a",
            "p/ns/data/b",
            "p/ns/data/c/1",
            "p/ns/data/d",
            "p/ns/data/e",
            "p/ns/database"
        ]
    );
    assert_eq!(s.list("").await.unwrap().len(), 9);
    assert!(s.list("nothing/").await.unwrap().is_empty());
}

/// A namespace whose files all sit under one directory (`outputs/bench/`)
/// is still listed in parts side by side: the split goes on down past
/// levels that name a single prefix.
async fn a_namespace_under_one_directory_is_listed_in_parallel_parts(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let mut want = Vec::new();
    for d in 0..20 {
        for i in 0..2 {
            let k = format!("p/ns/outputs/bench/d{d:02}/f{i}");
            s.put_bytes(&k, k.as_bytes().to_vec(), &Precondition::None)
                .await
                .unwrap();
            want.push(k);
        }
    }
    let parts = store::list_split_parts(s.as_ref(), "p/ns/", 2, 16, |page| page)
        .await
        .unwrap();
    let sizes = part_sizes(&parts);
    assert_eq!(
        parts.len(),
        21,
        "the levels' objects, then one part per directory: {sizes:?}"
    );
    // Parts in key order, each its pages in key order: the keys come
    // sorted, each once.
    assert_eq!(split_keys(parts), want);

    // Not down to a level of very many prefixes, though: a request each
    // would cost more than paging through their parent.
    let mut want = Vec::new();
    for d in 0..260 {
        let k = format!("p/wide/outputs/one/v{d:03}/raw");
        s.put_bytes(&k, Vec::new(), &Precondition::None)
            .await
            .unwrap();
        want.push(k);
    }
    let parts = store::list_split_parts(s.as_ref(), "p/wide/", 2, 16, |page| page)
        .await
        .unwrap();
    let sizes = part_sizes(&parts);
    assert_eq!(sizes, [0, 260], "outputs/one/ is listed whole");
    assert_eq!(
        parts[1].len(),
        130,
        "and handed over a page (of 2) at a time, as listed"
    );
    assert_eq!(split_keys(parts), want);
}

async fn a_split_listing_finds_every_key_a_plain_listing_does(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let inside = [
        "p/ns/.namespace.json",
        "p/ns/data/a",
        "p/ns/data/k1/x/1",
        "p/ns/data/k1/x/2",
        "p/ns/data/k1/y",
        "p/ns/data/k2/z/3",
        "p/ns/outputs/o",
        "p/ns/z",
    ];
    let outside = ["p/ns2/data/q", "p/nsx", "p/n", "q/ns/data/a"];
    for k in inside.iter().chain(&outside) {
        s.put_bytes(k, k.as_bytes().to_vec(), &Precondition::None)
            .await
            .unwrap();
    }
    // One level, across pages (page size 2): objects and prefixes apart.
    let level = s.list_level("p/ns/").await.unwrap();
    assert_eq!(keys(&level.objects), ["p/ns/.namespace.json", "p/ns/z"]);
    assert_eq!(level.prefixes, ["p/ns/data/", "p/ns/outputs/"]);
    let level = s.list_level("p/ns/data/").await.unwrap();
    assert_eq!(keys(&level.objects), ["p/ns/data/a"]);
    assert_eq!(level.prefixes, ["p/ns/data/k1/", "p/ns/data/k2/"]);

    // Split at any depth, the listing is the plain one: every key once,
    // nothing from outside, sorted, with the same metadata.
    let plain = s.list("p/ns/").await.unwrap();
    assert_eq!(keys(&plain), inside);
    for levels in 0..4 {
        let split = store::list_split(s.as_ref(), "p/ns/", levels, 3)
            .await
            .unwrap();
        assert_eq!(split, plain, "split {levels} level(s) down");
    }

    // Once every object under a prefix is deleted, neither listing shows
    // anything there (SeaweedFS keeps the directory it made for them, and
    // answers a delimiter listing of it with an object named as the prefix).
    s.delete("p/ns/outputs/o", &Precondition::None)
        .await
        .unwrap();
    let plain = s.list("p/ns/").await.unwrap();
    assert!(!keys(&plain).contains(&"p/ns/outputs/o"));
    for levels in 0..4 {
        let split = store::list_split(s.as_ref(), "p/ns/", levels, 3)
            .await
            .unwrap();
        assert_eq!(
            keys(&split),
            keys(&plain),
            "after a delete, split {levels} level(s) down"
        );
    }
}

async fn create_only_refuses_an_existing_key(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    s.put_bytes("lock", b"first".to_vec(), &Precondition::CreateOnly)
        .await
        .unwrap();
    let r = s
        .put_bytes("lock", b"second".to_vec(), &Precondition::CreateOnly)
        .await;
    assert!(is_precondition_failed(&r), "{r:?}");
    assert_eq!(f.body("lock").await, b"first");

    let src = f.scratch.path().join("f");
    std::fs::write(&src, b"third").unwrap();
    let r = s
        .put_file(
            "lock",
            &src,
            &sha256_bytes(b"third"),
            &Precondition::CreateOnly,
        )
        .await;
    assert!(is_precondition_failed(&r), "{r:?}");
    assert_eq!(f.body("lock").await, b"first");
}

async fn replace_needs_the_current_version(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let v1 = s
        .put_bytes("manifest", b"v1".to_vec(), &Precondition::None)
        .await
        .unwrap();
    let v2 = s
        .put_bytes(
            "manifest",
            b"v2".to_vec(),
            &Precondition::Matches(v1.version.clone()),
        )
        .await
        .unwrap();
    assert_ne!(v1.version, v2.version);
    assert_eq!(f.body("manifest").await, b"v2");

    let r = s
        .put_bytes(
            "manifest",
            b"v3".to_vec(),
            &Precondition::Matches(v1.version),
        )
        .await;
    assert!(is_precondition_failed(&r), "stale version must fail: {r:?}");
    assert_eq!(f.body("manifest").await, b"v2");

    let r = s
        .put_bytes("absent", b"x".to_vec(), &Precondition::Matches(v2.version))
        .await;
    assert!(is_precondition_failed(&r), "no object, no match: {r:?}");
    assert_eq!(s.head("absent").await.unwrap(), None);
}

async fn concurrent_create_only_has_exactly_one_winner(b: Backend) {
    let f = Fixture::new(b);
    assert!(f.store.capabilities().conditional_create);
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let s = f.store.clone();
            tokio::spawn(async move {
                let body = format!("writer-{i}").into_bytes();
                (
                    i,
                    s.put_bytes("race/lock", body, &Precondition::CreateOnly)
                        .await,
                )
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        let (i, r) = t.await.unwrap();
        match r {
            Ok(_) => winners.push(i),
            Err(StoreError::PreconditionFailed { .. }) => {}
            Err(e) => panic!("writer {i}: unexpected error {e}"),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    assert_eq!(
        f.body("race/lock").await,
        format!("writer-{}", winners[0]).into_bytes()
    );
}

async fn concurrent_replace_has_exactly_one_winner(b: Backend) {
    let f = Fixture::new(b);
    assert!(f.store.capabilities().conditional_replace);
    let base = f
        .store
        .put_bytes("race/m", b"base".to_vec(), &Precondition::None)
        .await
        .unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let s = f.store.clone();
            let pre = Precondition::Matches(base.version.clone());
            tokio::spawn(async move {
                (
                    i,
                    s.put_bytes("race/m", format!("writer-{i}").into_bytes(), &pre)
                        .await,
                )
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        let (i, r) = t.await.unwrap();
        match r {
            Ok(_) => winners.push(i),
            Err(StoreError::PreconditionFailed { .. }) => {}
            Err(e) => panic!("writer {i}: unexpected error {e}"),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    assert_eq!(
        f.body("race/m").await,
        format!("writer-{}", winners[0]).into_bytes()
    );
}

async fn delete_and_delete_many(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let mut metas = Vec::new();
    for k in ["d/1", "d/2", "d/3", "d/4", "d/sub/5"] {
        metas.push(
            s.put_bytes(k, k.as_bytes().to_vec(), &Precondition::None)
                .await
                .unwrap(),
        );
    }

    s.delete("d/1", &Precondition::None).await.unwrap();
    assert_eq!(s.head("d/1").await.unwrap(), None);
    // Deleting what is not there is fine without a precondition...
    s.delete("d/1", &Precondition::None).await.unwrap();
    // ...and a failed precondition with one.
    let r = s
        .delete("d/1", &Precondition::Matches(metas[0].version.clone()))
        .await;
    assert!(is_precondition_failed(&r), "{r:?}");

    // A stale version does not delete (checked at least just before; see
    // Capabilities::conditional_delete for whether the server enforces it).
    s.put_bytes("d/2", b"changed".to_vec(), &Precondition::None)
        .await
        .unwrap();
    let r = s
        .delete("d/2", &Precondition::Matches(metas[1].version.clone()))
        .await;
    assert!(is_precondition_failed(&r), "{r:?}");
    let current = s.head("d/2").await.unwrap().expect("still there");
    s.delete("d/2", &Precondition::Matches(current.version))
        .await
        .unwrap();
    assert_eq!(s.head("d/2").await.unwrap(), None);

    let batch = ["d/3", "d/4", "d/sub/5", "d/never-existed"].map(String::from);
    s.delete_many(&batch).await.unwrap();
    assert!(s.list("d/").await.unwrap().is_empty());
    s.delete_many(&[]).await.unwrap();
}

async fn copy_keeps_sha256(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let body = b"copied content".to_vec();
    let src = s
        .put_bytes("c/src", body.clone(), &Precondition::None)
        .await
        .unwrap();

    let dst = s
        .copy("c/src", "c/dst", &Precondition::CreateOnly)
        .await
        .unwrap();
    assert_eq!(dst.key, "c/dst");
    assert_eq!(dst.size, src.size);
    assert_eq!(dst.sha256, src.sha256);
    let head = s.head("c/dst").await.unwrap().unwrap();
    assert_eq!(head.sha256, src.sha256, "sha256 metadata survives a copy");
    assert_eq!(head.version, dst.version);
    assert_eq!(f.body("c/dst").await, body);
    assert_eq!(f.body("c/src").await, body, "the source stays");

    // Preconditions apply to the destination.
    let r = s.copy("c/src", "c/dst", &Precondition::CreateOnly).await;
    assert!(is_precondition_failed(&r), "{r:?}");
    let other = s
        .put_bytes("c/other", b"other".to_vec(), &Precondition::None)
        .await
        .unwrap();
    // (Not src.version: S3 ETags are content MD5s, so dst has src's.)
    let r = s
        .copy("c/other", "c/dst", &Precondition::Matches(other.version))
        .await;
    assert!(is_precondition_failed(&r), "{r:?}");
    assert_eq!(f.body("c/dst").await, body);
    s.copy("c/other", "c/dst", &Precondition::Matches(head.version))
        .await
        .unwrap();
    assert_eq!(f.body("c/dst").await, b"other");

    let e = s
        .copy("c/missing", "c/x", &Precondition::None)
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::NotFound { .. }), "{e}");
}

/// A trash copy: only the version the plan saw is copied; a source
/// replaced since is refused (so the delete or overwrite that follows is
/// refused by its own precondition too), a missing one is not found.
async fn copy_at_copies_only_the_version_it_names(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let old = s
        .put_bytes("t/src", b"old bytes".to_vec(), &Precondition::None)
        .await
        .unwrap();
    s.copy_at("t/src", &old.version, "t/trash", &Precondition::CreateOnly)
        .await
        .unwrap();
    assert_eq!(f.body("t/trash").await, b"old bytes");
    let head = s.head("t/trash").await.unwrap().unwrap();
    assert_eq!(head.sha256, old.sha256, "sha256 metadata survives");
    // Create-only at the destination.
    let r = s
        .copy_at("t/src", &old.version, "t/trash", &Precondition::CreateOnly)
        .await;
    assert!(is_precondition_failed(&r), "{r:?}");

    let new = s
        .put_bytes(
            "t/src",
            b"new bytes".to_vec(),
            &Precondition::Matches(old.version.clone()),
        )
        .await
        .unwrap();
    assert_ne!(new.version, old.version);
    let r = s
        .copy_at("t/src", &old.version, "t/trash2", &Precondition::CreateOnly)
        .await;
    // Refused: the condition failed (S3, GCS), or that generation is gone
    // (GCS, where the copy names it). Never the newer bytes copied.
    assert!(
        is_precondition_failed(&r) || matches!(r, Err(StoreError::NotFound { .. })),
        "{r:?}"
    );
    assert!(
        s.head("t/trash2").await.unwrap().is_none(),
        "nothing copied"
    );
    let e = s
        .copy_at("t/missing", "1", "t/x", &Precondition::None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::NotFound { .. } | StoreError::PreconditionFailed { .. }
        ),
        "{e}"
    );
}

async fn a_listed_download_lands_that_version_or_the_current_one(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let old = s
        .put_bytes("t/obj", b"listed bytes".to_vec(), &Precondition::None)
        .await
        .unwrap();
    let listed = s.list("t/").await.unwrap().remove(0);
    let dest = f.scratch.path().join("a/obj");
    let got = s
        .get_known_to_file(&listed, &dest, swamp::store::Durability::Synced)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"listed bytes");
    assert_eq!(got.version, old.version);
    assert_eq!(got.sha256, old.sha256, "the sha256 of the bytes landed");

    // Replaced since it was listed: the object as it is now.
    let new = s
        .put_bytes(
            "t/obj",
            b"newer bytes!".to_vec(),
            &Precondition::Matches(old.version.clone()),
        )
        .await
        .unwrap();
    let dest = f.scratch.path().join("b/obj");
    let got = s
        .get_known_to_file(&listed, &dest, swamp::store::Durability::Synced)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), b"newer bytes!");
    assert_eq!(got.version, new.version);
}

async fn downloads_verify_integrity(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let claimed = sha256_bytes(b"original");
    f.tamper("t/obj", b"tampered!", &claimed).await;
    let head = s.head("t/obj").await.unwrap().unwrap();
    assert_eq!(head.sha256.as_deref(), Some(claimed.as_str()));

    let dest_dir = f.scratch.path().join("dl");
    std::fs::create_dir_all(&dest_dir).unwrap();
    let dest = dest_dir.join("obj");
    let e = s.get_to_file("t/obj", &dest).await.unwrap_err();
    match &e {
        StoreError::Integrity {
            key,
            expected,
            found,
            ..
        } => {
            assert_eq!(key, "t/obj");
            assert_eq!(expected, &claimed);
            assert_eq!(found, &sha256_bytes(b"tampered!"));
        }
        e => panic!("expected an integrity error, got {e}"),
    }
    assert!(!dest.exists(), "nothing lands at the destination");
    assert_eq!(
        std::fs::read_dir(&dest_dir).unwrap().count(),
        0,
        "no temp file left"
    );

    // An existing destination is left as it was.
    std::fs::write(&dest, b"previous").unwrap();
    let e = s.get_to_file("t/obj", &dest).await.unwrap_err();
    assert!(matches!(e, StoreError::Integrity { .. }), "{e}");
    assert_eq!(std::fs::read(&dest).unwrap(), b"previous");

    let e = s.get_bytes("t/obj").await.unwrap_err();
    assert!(matches!(e, StoreError::Integrity { .. }), "{e}");
}

async fn put_file_refuses_content_that_does_not_match_its_hash(b: Backend) {
    let f = Fixture::new(b);
    let src = f.scratch.path().join("src");
    std::fs::write(&src, b"what is on disk").unwrap();
    // The caller hashed something else (say, the file changed after it was
    // hashed): storing it under that hash would poison every later check.
    let e = f
        .store
        .put_file(
            "h/obj",
            &src,
            &sha256_bytes(b"what was hashed"),
            &Precondition::None,
        )
        .await
        .unwrap_err();
    assert!(
        !e.is_transient(),
        "not retried as if the network failed: {e}"
    );
    assert!(e.to_string().contains("h/obj"), "names the key: {e}");
    assert!(
        e.to_string().contains("changed since it was hashed"),
        "says why: {e}"
    );
    assert_eq!(f.store.head("h/obj").await.unwrap(), None, "nothing stored");
}

async fn retries_ride_out_dropped_connections_and_throttling(b: Backend) {
    retried(b, servers::Flake::DropThenThrottle).await;
}

/// A create-only put whose first reply is lost is retried, meets "already
/// exists" (its own first attempt), and recognises the object as its own.
async fn a_retried_create_recognises_its_own_lost_success(b: Backend) {
    retried(b, servers::Flake::LoseFirstReply).await;
}

/// Put and get through a proxy that misbehaves as `flake` says.
async fn retried(b: Backend, flake: servers::Flake) {
    // A real server behind a proxy that drops the first connection and
    // answers the second with 503 SlowDown.
    let (config, accepted) = match b {
        Backend::S3 => {
            let server = servers::s3();
            let bucket = server.fresh_bucket();
            let (endpoint, accepted) = servers::flaky_proxy(server.addr(), flake);
            let config = swamp::config::DatastoreConfig::S3 {
                bucket,
                prefix: None,
                region: Some(servers::S3_REGION.into()),
                endpoint: Some(endpoint),
            };
            (config, accepted)
        }
        Backend::Gcs => {
            let server = servers::gcs();
            let bucket = server.fresh_bucket();
            let (endpoint, accepted) = servers::flaky_proxy(server.addr(), flake);
            let config = swamp::config::DatastoreConfig::Gcs {
                bucket,
                prefix: None,
                endpoint: Some(endpoint),
            };
            (config, accepted)
        }
        Backend::Fs => unreachable!("a directory has no network"),
    };
    let s = store::open_with(&config, options()).unwrap();
    let put = s
        .put_bytes("r/k", b"made it".to_vec(), &Precondition::CreateOnly)
        .await
        .unwrap();
    let min_connections = match flake {
        servers::Flake::DropThenThrottle => 3,
        servers::Flake::LoseFirstReply => 2,
    };
    assert!(
        accepted.load(std::sync::atomic::Ordering::SeqCst) >= min_connections,
        "the failed attempts were retried"
    );
    let (meta, body) = s.get_bytes("r/k").await.unwrap();
    assert_eq!(body, b"made it");
    assert_eq!(meta.version, put.version);
}

async fn unreachable_endpoint_fails_fast(b: Backend) {
    let port = servers::closed_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let config = match b {
        Backend::S3 => swamp::config::DatastoreConfig::S3 {
            bucket: "nobody-home".into(),
            prefix: None,
            region: Some(servers::S3_REGION.into()),
            endpoint: Some(endpoint.clone()),
        },
        Backend::Gcs => swamp::config::DatastoreConfig::Gcs {
            bucket: "nobody-home".into(),
            prefix: None,
            endpoint: Some(endpoint.clone()),
        },
        Backend::Fs => unreachable!("a directory has no endpoint"),
    };
    let s = store::open_with(&config, options()).unwrap();
    let start = Instant::now();
    let e = s.list("").await.unwrap_err();
    let elapsed = start.elapsed();
    assert!(matches!(e, StoreError::Unreachable { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("127.0.0.1:{port}")),
        "names the endpoint: {msg}"
    );
    assert!(
        msg.contains("check that the endpoint"),
        "says what to check: {msg}"
    );
    assert!(
        elapsed < Duration::from_secs(10),
        "bounded retries, took {elapsed:?}"
    );

    // Ten connection failures in a row, one request out of attempts: the
    // store is down, and later requests fail at once without a try.
    let start = Instant::now();
    let e = s
        .put_bytes("k", b"x".to_vec(), &Precondition::CreateOnly)
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Down { .. }), "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
    let e = s.head("k").await.unwrap_err();
    assert!(matches!(e, StoreError::Down { .. }), "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

async fn missing_bucket_is_named(b: Backend) {
    let config = match b {
        Backend::S3 => servers::s3().datastore("no-such-bucket-here", None),
        Backend::Gcs => servers::gcs().datastore("no-such-bucket-here", None),
        Backend::Fs => unreachable!("a directory has no bucket"),
    };
    let s = store::open_with(&config, options()).unwrap();
    // SeaweedFS answers signed requests for a missing bucket with 403
    // AccessDenied (AWS and GCS with 404): then the message must still name
    // the bucket and say to check that it exists.
    let check = |e: StoreError| {
        let msg = e.to_string();
        assert!(
            msg.contains("no-such-bucket-here"),
            "names the bucket: {msg}"
        );
        match e {
            StoreError::NoSuchBucket { .. } => {}
            StoreError::Denied { .. } if b == Backend::S3 => {
                assert!(msg.contains("check that the bucket exists"), "{msg}");
            }
            e => panic!("expected a missing-bucket error, got {e}"),
        }
    };
    check(s.list("").await.unwrap_err());
    check(
        s.put_bytes("k", b"x".to_vec(), &Precondition::None)
            .await
            .unwrap_err(),
    );
}

async fn bad_keys_are_refused(b: Backend) {
    let f = Fixture::new(b);
    for key in ["../escape", "/abs", "a//b", "a/./b"] {
        let e = f
            .store
            .put_bytes(key, b"x".to_vec(), &Precondition::None)
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::BadKey { .. }), "{key}: {e}");
        assert!(e.to_string().contains(key), "names the key: {e}");
    }
    assert!(f.store.list("").await.unwrap().is_empty());
}

/// Defence in depth under the planner: a store scoped to one namespace
/// refuses every key outside it (another namespace's, another tool's) and
/// leaves those objects as they were; keys inside work as usual.
async fn a_scoped_store_refuses_keys_outside_its_prefix_and_namespace(b: Backend) {
    let f = Fixture::new(b);
    let raw = &f.store;
    for key in ["other/precious.txt", "swamp/beta/data/m/1/raw"] {
        raw.put_bytes(key, b"keep".to_vec(), &Precondition::None)
            .await
            .unwrap();
    }
    let scoped = store::scoped::Scoped::new(raw.clone(), "swamp/alpha/");
    let mine = scoped
        .put_bytes(
            "swamp/alpha/data/m/1/raw",
            b"mine".to_vec(),
            &Precondition::None,
        )
        .await
        .unwrap();
    for key in ["other/precious.txt", "swamp/beta/data/m/1/raw"] {
        let e = scoped.delete(key, &Precondition::None).await.unwrap_err();
        assert!(matches!(e, StoreError::OutOfScope { .. }), "{key}: {e}");
        assert!(e.to_string().contains(key), "names the key: {e}");
        let e = scoped
            .put_bytes(key, b"x".to_vec(), &Precondition::None)
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::OutOfScope { .. }), "{key}: {e}");
        assert!(scoped.delete_many(&[key.to_string()]).await.is_err());
        assert!(
            scoped
                .copy("swamp/alpha/data/m/1/raw", key, &Precondition::None)
                .await
                .is_err()
        );
        assert_eq!(f.body(key).await, b"keep", "{key} untouched");
    }
    scoped
        .delete(
            "swamp/alpha/data/m/1/raw",
            &Precondition::Matches(mine.version),
        )
        .await
        .unwrap();
    assert!(
        raw.head("swamp/alpha/data/m/1/raw")
            .await
            .unwrap()
            .is_none()
    );
}

// ---------------------------------------------------------------------------
// Instantiation: every scenario on every backend it applies to.

macro_rules! conformance {
    ($backend:ident: $variant:expr => [$($scenario:ident),* $(,)?]) => {
        mod $backend {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $scenario() {
                    super::$scenario($variant).await
                }
            )*
        }
    };
}

conformance!(fs: Backend::Fs => [
    capabilities_claim_what_the_store_does,
    put_file_refuses_content_that_does_not_match_its_hash,
    put_get_head_round_trip_with_sha256,
    list_follows_pages_and_respects_the_prefix,
    a_split_listing_finds_every_key_a_plain_listing_does,
    create_only_refuses_an_existing_key,
    replace_needs_the_current_version,
    concurrent_create_only_has_exactly_one_winner,
    concurrent_replace_has_exactly_one_winner,
    delete_and_delete_many,
    copy_keeps_sha256,
    copy_at_copies_only_the_version_it_names,
    downloads_verify_integrity,
    a_listed_download_lands_that_version_or_the_current_one,
    bad_keys_are_refused,
    a_scoped_store_refuses_keys_outside_its_prefix_and_namespace,
]);

conformance!(s3: Backend::S3 => [
    capabilities_claim_what_the_store_does,
    a_namespace_under_one_directory_is_listed_in_parallel_parts,
    a_retried_create_recognises_its_own_lost_success,
    retries_ride_out_dropped_connections_and_throttling,
    put_file_refuses_content_that_does_not_match_its_hash,
    put_get_head_round_trip_with_sha256,
    list_follows_pages_and_respects_the_prefix,
    a_split_listing_finds_every_key_a_plain_listing_does,
    create_only_refuses_an_existing_key,
    replace_needs_the_current_version,
    concurrent_create_only_has_exactly_one_winner,
    concurrent_replace_has_exactly_one_winner,
    delete_and_delete_many,
    copy_keeps_sha256,
    copy_at_copies_only_the_version_it_names,
    downloads_verify_integrity,
    a_listed_download_lands_that_version_or_the_current_one,
    bad_keys_are_refused,
    a_scoped_store_refuses_keys_outside_its_prefix_and_namespace,
    unreachable_endpoint_fails_fast,
    missing_bucket_is_named,
]);

conformance!(gcs: Backend::Gcs => [
    capabilities_claim_what_the_store_does,
    a_namespace_under_one_directory_is_listed_in_parallel_parts,
    a_retried_create_recognises_its_own_lost_success,
    retries_ride_out_dropped_connections_and_throttling,
    put_file_refuses_content_that_does_not_match_its_hash,
    put_get_head_round_trip_with_sha256,
    list_follows_pages_and_respects_the_prefix,
    a_split_listing_finds_every_key_a_plain_listing_does,
    create_only_refuses_an_existing_key,
    replace_needs_the_current_version,
    concurrent_create_only_has_exactly_one_winner,
    concurrent_replace_has_exactly_one_winner,
    delete_and_delete_many,
    copy_keeps_sha256,
    copy_at_copies_only_the_version_it_names,
    downloads_verify_integrity,
    a_listed_download_lands_that_version_or_the_current_one,
    bad_keys_are_refused,
    a_scoped_store_refuses_keys_outside_its_prefix_and_namespace,
    unreachable_endpoint_fails_fast,
    missing_bucket_is_named,
]);

// ---------------------------------------------------------------------------
// Capabilities: what a store claims is checked against what it does. The
// atomic preconditions are raced in `concurrent_*_has_exactly_one_winner`;
// the rest are checked in the requests sent, through a counting proxy
// (`capabilities_are_what_the_requests_show`): a store that does not trust
// its server with a delete's or copy's precondition reads the version
// first.

/// A listing carries sha256 exactly when the store says it does, and a
/// store that lists one level at a time names the level's prefixes.
async fn capabilities_claim_what_the_store_does(b: Backend) {
    let f = Fixture::new(b);
    let s = &f.store;
    let caps = s.capabilities();
    for k in ["c/top", "c/sub/one", "c/sub/two", "c/other/x"] {
        s.put_bytes(k, k.as_bytes().to_vec(), &Precondition::None)
            .await
            .unwrap();
    }
    let listed = s.list("c/").await.unwrap();
    assert_eq!(listed.len(), 4);
    for m in &listed {
        assert_eq!(
            m.sha256.is_some(),
            caps.listing_has_sha256,
            "{}: listing_has_sha256 is {}",
            m.key,
            caps.listing_has_sha256
        );
    }
    let level = s.list_level("c/").await.unwrap();
    assert_eq!(keys(&level.objects), ["c/top"]);
    assert_eq!(level.prefixes, ["c/other/", "c/sub/"]);
}

/// The request-level capabilities, through a counting proxy: a store that
/// says it deletes in batches sends no DELETE per key, one that copies
/// server-side never reads the source's bytes, one that lists by level
/// asks the server for a level, and one whose server enforces a delete's
/// or a copy's precondition sends the request alone, where one whose server
/// does not reads the version first.
fn capabilities_are_what_the_requests_show(backend: crate::support::bucket::Backend) {
    use crate::support::bucket::{Backend, Bucket};
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    // Set up through the server itself; what is counted goes through the
    // proxy.
    let datastore = swamp::config::parse_datastore_spec(&bucket.spec()).unwrap();
    let options = StoreOptions {
        s3_credentials: Some(servers::s3_credentials()),
        ..StoreOptions::default()
    };
    let s = store::open_with(&datastore, options).unwrap();
    let caps = s.capabilities();
    for k in ["cap/a", "cap/b", "cap/c", "cap/source", "cap/gone"] {
        bucket.put(k, k.as_bytes());
    }
    // The requests `op` sends, as `METHOD target`.
    let sent = |op: &mut dyn FnMut()| {
        let from = proxy.seen().len();
        op();
        proxy.seen()[from..]
            .iter()
            .map(|r| format!("{} {}", r.method, r.target))
            .collect::<Vec<_>>()
    };
    let names = |r: &str, key: &str| r.contains(key) || r.contains(&key.replace('/', "%2F"));
    let reads_of = |reqs: &[String], key: &str| {
        reqs.iter()
            .filter(|r| (r.starts_with("GET ") || r.starts_with("HEAD ")) && names(r, key))
            .count()
    };

    let keys: Vec<String> = ["cap/a", "cap/b", "cap/c"].map(String::from).to_vec();
    let reqs = sent(&mut || Bucket::block_on(s.delete_many(&keys)).unwrap());
    let deletes = reqs.iter().filter(|r| r.starts_with("DELETE ")).count();
    if caps.batch_delete {
        assert!(
            deletes == 0 && reqs.len() < keys.len(),
            "{backend:?}: {reqs:#?}"
        );
    } else {
        assert_eq!(deletes, keys.len(), "{backend:?}: {reqs:#?}");
    }

    let reqs = sent(&mut || {
        Bucket::block_on(s.copy("cap/source", "cap/copy", &Precondition::CreateOnly)).unwrap();
    });
    assert_eq!(bucket.get("cap/copy").as_deref(), Some(&b"cap/source"[..]));
    if caps.server_side_copy {
        let media = |r: &&String| {
            names(r, "cap/source")
                && r.starts_with("GET ")
                && (backend == Backend::S3 || r.contains("alt=media"))
        };
        assert!(!reqs.iter().any(|r| media(&r)), "{backend:?}: {reqs:#?}");
    }
    // The copy's destination precondition: enforced by the server, or the
    // destination's version read first.
    assert_eq!(
        reads_of(&reqs, "cap/copy") == 0,
        caps.conditional_copy,
        "{backend:?}: conditional_copy is {}: {reqs:#?}",
        caps.conditional_copy
    );

    let version = Bucket::block_on(s.head("cap/gone"))
        .unwrap()
        .unwrap()
        .version;
    let reqs = sent(&mut || {
        Bucket::block_on(s.delete("cap/gone", &Precondition::Matches(version.clone()))).unwrap();
    });
    assert!(bucket.get("cap/gone").is_none());
    assert_eq!(
        reads_of(&reqs, "cap/gone") == 0,
        caps.conditional_delete,
        "{backend:?}: conditional_delete is {}: {reqs:#?}",
        caps.conditional_delete
    );

    let reqs = sent(&mut || {
        Bucket::block_on(s.list_level("cap/")).unwrap();
    });
    assert_eq!(
        reqs.iter().any(|r| r.contains("delimiter=")),
        caps.delimited_listing,
        "{backend:?}: {reqs:#?}"
    );
}

#[test]
fn s3_capabilities_are_what_the_requests_show() {
    capabilities_are_what_the_requests_show(crate::support::bucket::Backend::S3);
}

#[test]
fn gcs_capabilities_are_what_the_requests_show() {
    capabilities_are_what_the_requests_show(crate::support::bucket::Backend::Gcs);
}

// ---------------------------------------------------------------------------
// S3 credentials through the standard chain, in a child process (the
// environment is process-wide; setting it inside this multi-threaded test
// binary would race with other tests).

const CHILD_MODE: &str = "SWAMP_STORE_TEST_CHILD";

/// Runs `child_s3_default_chain` in a fresh copy of this test binary with
/// exactly `env` (plus the child-mode variables).
fn run_child(mode: &str, env: &[(&str, String)]) -> std::process::Output {
    let server = servers::s3();
    let bucket = server.fresh_bucket();
    let home = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "store_conformance::child_s3_default_chain",
        "--ignored",
        "--nocapture",
    ])
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    // No ~/.aws of the developer's: only what `env` gives.
    .env("HOME", home.path())
    .env("AWS_EC2_METADATA_DISABLED", "true")
    .env(CHILD_MODE, mode)
    .env("SWAMP_STORE_TEST_ENDPOINT", &server.endpoint)
    .env("SWAMP_STORE_TEST_BUCKET", &bucket);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn s3_credentials_come_from_the_environment() {
    let out = run_child("with-env", &servers::s3_child_env());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "the child test ran: {stdout}");
}

#[test]
fn s3_without_credentials_is_a_clear_error() {
    let env = [("AWS_REGION", servers::S3_REGION.to_string())];
    let out = run_child("no-credentials", &env);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "the child test ran: {stdout}");
}

/// Not a test on its own: the child half of the two tests above (does
/// nothing unless started by them).
#[tokio::test]
#[ignore = "run by s3_credentials_* in a child process"]
async fn child_s3_default_chain() {
    let Ok(mode) = std::env::var(CHILD_MODE) else {
        return;
    };
    let endpoint = std::env::var("SWAMP_STORE_TEST_ENDPOINT").unwrap();
    let bucket = std::env::var("SWAMP_STORE_TEST_BUCKET").unwrap();
    let config = swamp::config::DatastoreConfig::S3 {
        bucket,
        prefix: None,
        // Region from AWS_REGION, credentials from the chain.
        region: None,
        endpoint: Some(endpoint),
    };
    let s = store::open(&config).unwrap();
    let r = s
        .put_bytes("env/k", b"via env".to_vec(), &Precondition::CreateOnly)
        .await;
    match mode.as_str() {
        "with-env" => {
            r.unwrap();
            assert_eq!(s.get_bytes("env/k").await.unwrap().1, b"via env");
        }
        "no-credentials" => {
            let e = r.unwrap_err();
            assert!(matches!(e, StoreError::Denied { .. }), "{e}");
            let msg = e.to_string();
            assert!(
                msg.contains("AWS_ACCESS_KEY_ID") && msg.contains("AWS_PROFILE"),
                "{msg}"
            );
            assert!(msg.contains(".swamp.toml"), "{msg}");
        }
        other => panic!("unknown child mode {other}"),
    }
}

// ---------------------------------------------------------------------------
// Downloads signed without the SDK (src/store/s3/direct.rs), on a
// SeaweedFS that checks every signature, behind the fault proxy (which
// only counts here).

/// A store for `bucket` on the signature-checking server, through `proxy`,
/// signing with `secret`.
fn signed_store(
    bucket: &str,
    proxy: &crate::support::faults::FaultProxy,
    secret: &str,
) -> Arc<dyn Store> {
    let config = swamp::config::DatastoreConfig::S3 {
        bucket: bucket.to_string(),
        prefix: None,
        region: Some(servers::S3_REGION.to_string()),
        endpoint: Some(proxy.endpoint.clone()),
    };
    let mut options = options();
    options.s3_credentials = Some(store::StaticCredentials {
        access_key_id: servers::S3_ACCESS_KEY.to_string(),
        secret_access_key: secret.to_string(),
    });
    store::open_with(&config, options).unwrap()
}

/// The GETs the proxy saw of `key`, by user agent.
fn gets_of(proxy: &crate::support::faults::FaultProxy, path: &str) -> Vec<String> {
    proxy
        .seen()
        .into_iter()
        .filter(|s| s.method == "GET" && s.target.contains("x-id=GetObject"))
        .filter(|s| s.target.contains(&format!("{path}?")))
        .map(|s| s.agent)
        .collect()
}

/// `body` stored at `key` in parts of `part` bytes, as `aws s3 cp` does a
/// large file: no sha256 metadata, a multipart ETag.
async fn signed_multipart_put(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    body: &[u8],
    part: usize,
) {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    let upload = client
        .create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap();
    let id = upload.upload_id().unwrap();
    let mut parts = Vec::new();
    for (i, chunk) in body.chunks(part).enumerate() {
        let n = i as i32 + 1;
        let done = client
            .upload_part()
            .bucket(bucket)
            .key(key)
            .upload_id(id)
            .part_number(n)
            .body(chunk.to_vec().into())
            .send()
            .await
            .unwrap();
        parts.push(
            CompletedPart::builder()
                .part_number(n)
                .set_e_tag(done.e_tag().map(str::to_owned))
                .build(),
        );
    }
    client
        .complete_multipart_upload()
        .bucket(bucket)
        .key(key)
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .set_parts(Some(parts))
                .build(),
        )
        .send()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn downloads_are_signed_right_for_keys_s3_escapes_and_take_one_request_each() {
    let server = servers::s3_checking_signatures();
    let client = servers::signing_client(&server.endpoint).await;
    let bucket = servers::signed_bucket(&client).await;
    let proxy =
        crate::support::faults::FaultProxy::start(server.endpoint.trim_start_matches("http://"));
    let s = signed_store(&bucket, &proxy, servers::S3_SECRET_KEY);
    let scratch = tempfile::tempdir().unwrap();
    let keys = [
        "plain/a.txt",
        "with space/and+plus=eq&amp.txt",
        "pct%41/q?h#/semi;colon,comma",
        "ünï/çødé (1)*!'~.txt",
        "dots.../-_~$@:",
    ];
    for (i, key) in keys.iter().enumerate() {
        let body = format!("body {i} of {key}\n").into_bytes();
        s.put_bytes(key, body.clone(), &Precondition::None)
            .await
            .unwrap();
        let (meta, got) = s.get_bytes(key).await.unwrap();
        assert_eq!(got, body, "{key}");
        assert_eq!(meta.sha256.as_deref(), Some(sha256_bytes(&body).as_str()));
        let dest = scratch.path().join(format!("f{i}"));
        s.get_to_file(key, &dest).await.unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), body, "{key}");
    }
    for key in keys {
        let agents = gets_of(&proxy, &servers::uri_escape(key));
        assert_eq!(agents.len(), 2, "{key}: one GET per download: {agents:?}");
        assert!(
            agents.iter().all(|a| a.starts_with("swamp/")),
            "{key}: served by the fast path, not the SDK: {agents:?}"
        );
    }

    // An object only the server's checksum could vouch for (no sha256
    // metadata, a multipart ETag) is the SDK's: asked blind, the fast
    // path sees its headers and declines; known from a listing, it is not
    // asked at all.
    let big: Vec<u8> = (0..(5 << 20) + 7).map(|i| (i % 251) as u8).collect();
    signed_multipart_put(&client, &bucket, "foreign/parts.bin", &big, 5 << 20).await;
    let (_, got) = s.get_bytes("foreign/parts.bin").await.unwrap();
    assert!(got == big, "the multipart object read back whole");
    let agents = gets_of(&proxy, "foreign/parts.bin");
    assert!(
        agents.len() == 2 && agents[0].starts_with("swamp/") && agents[1].contains("aws-sdk-rust"),
        "{agents:?}"
    );
    let listed = s.list("foreign/").await.unwrap().remove(0);
    assert!(
        listed.sha256.is_none() && listed.version.contains('-'),
        "{listed:?}"
    );
    let dest = scratch.path().join("parts.bin");
    s.get_known_to_file(&listed, &dest, store::Durability::Synced)
        .await
        .unwrap();
    assert!(std::fs::read(&dest).unwrap() == big);
    let agents = gets_of(&proxy, "foreign/parts.bin");
    assert!(
        agents.len() == 3 && agents[2].contains("aws-sdk-rust"),
        "straight to the SDK: {agents:?}"
    );

    // A missing key is one request, answered by the fast path.
    match s.get_bytes("plain/missing").await {
        Err(StoreError::NotFound { key, .. }) => assert_eq!(key, "plain/missing"),
        other => panic!("expected not found, got {other:?}"),
    }
    let agents = gets_of(&proxy, "plain/missing");
    assert!(
        agents.len() == 1 && agents[0].starts_with("swamp/"),
        "{agents:?}"
    );

    // Throttled: the retry loop backs off and asks the same way again; the
    // SDK does not repeat the request at once.
    proxy.rule(
        crate::support::faults::Rule::new(crate::support::faults::Fault::Status(503))
            .method("GET")
            .target("plain/a.txt")
            .times(1),
    );
    let (_, got) = s.get_bytes("plain/a.txt").await.unwrap();
    assert!(got.starts_with(b"body 0"), "{got:?}");
    let agents = gets_of(&proxy, "plain/a.txt");
    assert!(
        agents.len() == 4 && agents[2..].iter().all(|a| a.starts_with("swamp/")),
        "one 503, then the fast path again: {agents:?}"
    );

    // A wrong secret is refused: the server checks what the fast path
    // signed, and the error is the SDK's, with its hint.
    let wrong = signed_store(&bucket, &proxy, "not-the-secret");
    match wrong.get_bytes("plain/a.txt").await {
        Err(StoreError::Denied { .. }) => {}
        other => panic!("expected access denied, got {other:?}"),
    }
    let agents = gets_of(&proxy, "plain/a.txt");
    assert!(
        agents.len() == 6 && agents[4].starts_with("swamp/") && agents[5].contains("aws-sdk-rust"),
        "the fast path asked first, then the SDK: {agents:?}"
    );
}
