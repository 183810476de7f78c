//! Object stores: the one interface through which swamp reads and writes a
//! datastore's remote side (S3, GCS) and the lock and manifests of a
//! `filesystem` datastore.
//!
//! Owns: the [`Store`] trait (paged listing, head, verified downloads,
//! conditional uploads, deletes, server-side copy) and what each backend
//! can enforce ([`Capabilities`]), here; typed errors that name the bucket
//! or endpoint and the fix ([`error`]); listings split to run side by side
//! ([`listing`]); where a download lands and how it is checked
//! ([`landing`]); retries of transient failures ([`retry`]). Backends:
//! [`fs`] (a directory), [`s3`] (`aws-sdk-s3`), [`gcs`] (`gcloud-storage`,
//! the GCS JSON API).
//!
//! Does not own: key layout. Keys given to a store are full object keys
//! built by [`crate::layout::Layout::remote_key`]; a store never adds the
//! configured prefix itself. Nor does it own credentials: S3 uses the
//! standard AWS chain (env, profile, instance role) and GCS application
//! default credentials; nothing is ever read from `.swamp.toml` for them.
//!
//! Every remote object carries the sha256 of its content as metadata (S3
//! user metadata `x-amz-meta-sha256`, GCS custom metadata `sha256`, an
//! extended attribute `user.swamp.sha256` on a filesystem), and downloads
//! are checked against it before they land at their destination.

pub mod enforced;
mod error;
pub(crate) mod fs;
pub(crate) mod gcs;
mod gcs_stored;
mod gcs_traced;
mod landing;
mod listing;
pub mod parts;
pub mod resume;
pub(crate) mod retry;
pub(crate) mod s3;
pub mod scoped;
pub(crate) mod target;
pub mod version;

pub use error::StoreError;
pub(crate) use error::error_chain;
pub use landing::Durability;
pub(crate) use landing::{
    Landing, Received, check_download, checked_by_served_only, verify_sha256,
};
pub use listing::{Level, list_split, list_split_parts};
pub(crate) use listing::{ListPage, Pager};
pub use target::{RemoteTarget, runtime};
pub use version::Version;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::config::DatastoreConfig;
pub use retry::{Breaker, RetryPolicy, outage};

/// Name of the sha256 metadata entry (S3 user metadata and GCS custom
/// metadata alike).
pub const SHA256_METADATA: &str = "sha256";

/// What a store knows about one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    pub key: String,
    pub size: u64,
    /// Opaque token that changes whenever the object does: S3 ETag (quotes
    /// stripped), GCS generation, `size-mtime_ns-inode` on a filesystem.
    /// [`Precondition::Matches`] takes it back.
    pub version: String,
    /// Hex sha256 from the object's metadata; `None` when the object has
    /// none or the listing does not carry it
    /// ([`Capabilities::listing_has_sha256`]).
    pub sha256: Option<String>,
    /// Last modified, seconds since the epoch, when the backend says
    /// (listings fill it; `--conflict newer` uses it).
    pub modified: Option<i64>,
    /// The content's MD5 when the server says (an S3 single-part ETag,
    /// GCS `md5Hash`): identity and verification for objects without
    /// sha256 metadata.
    pub md5: Option<crate::digest::Md5>,
    /// GCS `crc32c`: the one hash a composite object has.
    pub crc32c: Option<crate::digest::Crc32c>,
    /// Stored gzip-compressed (GCS `contentEncoding: gzip`, as `gsutil cp
    /// -Z` writes): `size`, `md5` and `crc32c` are the stored bytes', so
    /// they check a download only when it is read as stored.
    pub content_encoded: bool,
}

impl ObjectMeta {
    /// What the listing says of the bytes besides a sha256.
    pub fn served(&self) -> Option<crate::digest::Served> {
        crate::digest::Served::listed(self.md5, self.crc32c, self.content_encoded)
    }
}

/// How long a temp file in a directory store must be untouched before a
/// plan removes it: a writer on any machine sharing the directory would
/// have touched it since (a pid names a process on one machine only).
pub const TEMP_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// A temp file an interrupted write left in a directory store (an object
/// store has none: a write there is one request, or an upload the plan
/// aborts). Never an object: listings skip it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TempObject {
    /// Where it lies, as a key (its last segment a swamp temp name).
    pub key: String,
    pub size: u64,
    /// Last modified, seconds since the epoch.
    pub modified: i64,
}

/// Condition a write or delete is made on, checked by the server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Precondition {
    /// Unconditional.
    #[default]
    None,
    /// Only if no object exists at the key (S3 `If-None-Match: *`, GCS
    /// `ifGenerationMatch=0`, `O_EXCL`/no-clobber rename on a filesystem).
    CreateOnly,
    /// Only if the object's current version is this one (S3 `If-Match`, GCS
    /// `ifGenerationMatch=N`, a lock around check-and-rename on a
    /// filesystem).
    Matches(String),
}

/// Which guarantees a backend really gives, so the planner can choose a
/// strategy (or refuse) instead of assuming. Each flag says what was
/// observed against the servers the tests run, not what the API promises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// [`Precondition::CreateOnly`] on puts is enforced atomically (exactly
    /// one of many concurrent creators wins).
    pub conditional_create: bool,
    /// [`Precondition::Matches`] on puts is enforced atomically.
    pub conditional_replace: bool,
    /// [`Precondition::Matches`] on delete is enforced by the server. When
    /// false the store still sends the condition and checks the version
    /// just before deleting, but a concurrent writer can slip in between.
    pub conditional_delete: bool,
    /// A precondition on the destination of [`Store::copy`] is enforced by
    /// the server (otherwise: checked just before, like `conditional_delete`).
    pub conditional_copy: bool,
    /// [`Store::delete_many`] sends batches, not one request per key.
    pub batch_delete: bool,
    /// [`Store::copy`] does not move the bytes through this process.
    pub server_side_copy: bool,
    /// [`Store::list`] fills [`ObjectMeta::sha256`] (no head per object
    /// needed to plan).
    pub listing_has_sha256: bool,
    /// [`Store::list_level`] asks the server for one level (a delimiter
    /// listing), so [`list_split`] can page through a big prefix's parts
    /// side by side.
    pub delimited_listing: bool,
}

/// Static credentials handed to a store in code. swamp itself never sets
/// them (credentials come from the provider's standard chain, never from
/// `.swamp.toml`); tests and embedders may.
#[derive(Clone, PartialEq, Eq)]
pub struct StaticCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
}

impl fmt::Debug for StaticCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the secret, even in debug output.
        f.debug_struct("StaticCredentials")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

/// Tuning that is not part of the datastore configuration.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Objects per listing page (S3 `max-keys`, GCS `maxResults`). Tests use
    /// a small value so that paging is exercised.
    pub page_size: u32,
    pub retry: RetryPolicy,
    /// How long to wait for a TCP connection before treating the endpoint
    /// as unreachable (each attempt).
    pub connect_timeout: Duration,
    /// How long a response may stall between bytes before the attempt is
    /// abandoned (and retried).
    pub read_timeout: Duration,
    /// S3 only: use these instead of the default AWS credential chain.
    pub s3_credentials: Option<StaticCredentials>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            page_size: 1000,
            retry: RetryPolicy::default(),
            // Per attempt: with the default retry policy an endpoint that
            // drops packets is reported after about half a minute.
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(60),
            s3_credentials: None,
        }
    }
}

/// An object store. Keys are full keys (`prefix/namespace/tier/...`),
/// `/`-separated, never starting with `/`.
#[async_trait]
pub trait Store: Send + Sync {
    /// `s3://bucket`, `gs://bucket`, `file:///path`, plus the endpoint when
    /// one is configured: used in messages.
    fn describe(&self) -> String;

    fn capabilities(&self) -> Capabilities;

    /// Every object whose key starts with `prefix` (a plain string prefix,
    /// not only at `/`), following all pages, sorted by key.
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError>;

    /// [`Store::list`] a page at a time: `take` is given each page as it is
    /// listed, sorted by key, so that a caller keeping less of an object
    /// than its [`ObjectMeta`] never holds the listing whole. Pages come in
    /// the server's order (key order for S3 and GCS). The default lists
    /// whole, as one page.
    async fn list_paged(
        &self,
        prefix: &str,
        take: &mut (dyn FnMut(Vec<ObjectMeta>) + Send),
    ) -> Result<(), StoreError> {
        take(self.list(prefix).await?);
        Ok(())
    }

    /// The whole listing of `prefix`, sorted by key, when it fits in one
    /// page (one request); `None` when there is more. The default lists
    /// whole.
    async fn list_if_one_page(&self, prefix: &str) -> Result<Option<Vec<ObjectMeta>>, StoreError> {
        Ok(Some(self.list(prefix).await?))
    }

    /// One level of the keys under `prefix` (see [`Level`]). The default
    /// reads the whole listing; a store whose server lists by delimiter
    /// overrides it and says so in [`Capabilities::delimited_listing`].
    async fn list_level(&self, prefix: &str) -> Result<Level, StoreError> {
        Ok(Level::of(prefix, self.list(prefix).await?))
    }

    /// The object's metadata (with sha256), or `None` when it does not exist.
    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError>;

    /// Streams the object to a temp file beside `dest`, verifies its sha256
    /// against the metadata when the object has one, fsyncs and renames it
    /// into place. On any error `dest` is left as it was. The returned
    /// metadata's `sha256` is that of the bytes landed (so a caller need not
    /// read the file again to know it).
    ///
    /// The rename is made durable by the caller, which fsyncs `dest`'s
    /// directory before it relies on the file (once for many downloads into
    /// one directory, as git's `core.fsyncMethod=batch` does).
    async fn get_to_file(&self, key: &str, dest: &Path) -> Result<ObjectMeta, StoreError>;

    /// [`Store::get_to_file`] of the object as a listing described it
    /// (`known`: key, version, size, and sha256 when known). A backend that
    /// can read one version in one request does so (GCS: no metadata
    /// request first) and verifies the bytes against `known`'s size and
    /// sha256; when that version is gone, it reads the object as it is now,
    /// as [`Store::get_to_file`] does. Either way the caller still checks
    /// the returned sha256 against what its plan expects.
    ///
    /// With [`Durability::Deferred`] the file's bytes are not fsynced: the
    /// caller makes them durable (for many files at once) before it renames
    /// `dest` anywhere a reader relies on. A backend may fsync anyway.
    async fn get_known_to_file(
        &self,
        known: &ObjectMeta,
        dest: &Path,
        durability: Durability,
    ) -> Result<ObjectMeta, StoreError> {
        let _ = durability;
        self.get_to_file(&known.key, dest).await
    }

    /// The whole object in memory, verified like [`Store::get_to_file`]; for
    /// small objects (manifests, locks).
    async fn get_bytes(&self, key: &str) -> Result<(ObjectMeta, Vec<u8>), StoreError>;

    /// Uploads `src`, recording `sha256` (its hex content hash, computed by
    /// the caller) as metadata. Returns the new object's metadata.
    async fn put_file(
        &self,
        key: &str,
        src: &Path,
        sha256: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError>;

    /// [`Store::put_file`], resumable: a backend that uploads a large
    /// file in parts records the upload in `journal` before its first
    /// part and as each part is acknowledged, and continues the upload
    /// recorded there when it is of this file unchanged (see
    /// [`resume`]). The default uploads as [`Store::put_file`] does.
    async fn put_file_resumable(
        &self,
        key: &str,
        src: &Path,
        sha256: &str,
        pre: &Precondition,
        journal: &resume::UploadJournal,
    ) -> Result<ObjectMeta, StoreError> {
        let _ = journal;
        self.put_file(key, src, sha256, pre).await
    }

    /// Aborts the multipart upload `upload_id` of `key` (its parts are
    /// discarded; no object is touched). One already gone is fine.
    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<(), StoreError> {
        let _ = (key, upload_id);
        Ok(())
    }

    /// The bytes of `known`'s object from `offset` to its end, read only
    /// while it is at `known.version` (S3 `If-Match`, GCS `generation`):
    /// another version is [`StoreError::PreconditionFailed`] or
    /// [`StoreError::NotFound`], never its bytes. `None`: this store does
    /// not read ranges. Opening is retried; a body that breaks off is the
    /// caller's to read again from where it stopped.
    async fn get_range(
        &self,
        known: &ObjectMeta,
        offset: u64,
    ) -> Result<Option<resume::Ranged>, StoreError> {
        let _ = (known, offset);
        Ok(None)
    }

    /// Uploads `bytes`; computes the sha256 itself.
    async fn put_bytes(
        &self,
        key: &str,
        bytes: Vec<u8>,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError>;

    /// [`Store::put_bytes`] of bytes whose sha256 (hex) the caller just
    /// computed from them, not hashed again where the store would.
    async fn put_bytes_hashed(
        &self,
        key: &str,
        bytes: Vec<u8>,
        sha256: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        let _ = sha256;
        self.put_bytes(key, bytes, pre).await
    }

    /// Deletes `key`. A missing key is fine unless `pre` is
    /// [`Precondition::Matches`] (then: [`StoreError::PreconditionFailed`]).
    async fn delete(&self, key: &str, pre: &Precondition) -> Result<(), StoreError>;

    /// Deletes every key (missing ones are fine), batched where the backend
    /// allows ([`Capabilities::batch_delete`]).
    async fn delete_many(&self, keys: &[String]) -> Result<(), StoreError>;

    /// Copies `from` to `to` inside the store, keeping the sha256 metadata;
    /// `pre` applies to the destination.
    async fn copy(
        &self,
        from: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError>;

    /// Copies `from` to `to` only while `from` is at `version` (the version
    /// a plan saw), so what is copied is exactly that version: a trash copy
    /// before a delete or an overwrite. `pre` applies to the destination.
    /// A source at another version is `PreconditionFailed`, a missing one
    /// `NotFound`. Backends with a source precondition override this with
    /// one request; the default checks first, then copies.
    async fn copy_at(
        &self,
        from: &str,
        version: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<(), StoreError> {
        match self.head(from).await? {
            Some(m) if m.version == version => {}
            Some(_) => {
                return Err(StoreError::PreconditionFailed {
                    key: from.to_string(),
                });
            }
            None => {
                return Err(StoreError::NotFound {
                    key: from.to_string(),
                    target: String::new(),
                });
            }
        }
        self.copy(from, to, pre).await.map(|_| ())
    }

    /// Copies `from`, an object of `bucket` (this store's own, or another
    /// bucket of its service: one provider, endpoint and credentials) as a
    /// listing showed it (key, version, size, sha256), to `to` here,
    /// server-side, keeping its sha256 metadata; the copy reads that very
    /// version (S3 `x-amz-copy-source-if-match`, GCS
    /// `ifSourceGenerationMatch`) and no request reads the source first.
    /// `pre` applies to the destination. A copy in parts (S3 above 5 GiB)
    /// is recorded in `journal`, when given, as an upload is (see
    /// [`Store::put_file_resumable`]): a run stopped part-way is continued
    /// by the next, which copies only the parts the server lacks. A
    /// backend without such copies says so with
    /// [`StoreError::NoCrossBucketCopy`]; callers ask only where
    /// [`crate::config::DatastoreConfig::copies_server_side_to`] holds.
    async fn copy_from_bucket(
        &self,
        bucket: &str,
        from: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        journal: Option<&resume::UploadJournal>,
    ) -> Result<ObjectMeta, StoreError> {
        let _ = (bucket, from, to, pre, journal);
        Err(StoreError::NoCrossBucketCopy {
            target: self.describe(),
        })
    }

    /// Files at least this large are uploaded in parts (of
    /// [`parts::part_size`] each): a request to start, one per part,
    /// one to complete. `None`: every upload is one request.
    fn multipart_threshold(&self) -> Option<u64> {
        None
    }

    /// The temp files the listings so far walked past, taken (each once).
    fn temps_listed(&self) -> Vec<TempObject> {
        Vec::new()
    }

    /// Removes the temp file at `key` if it is still a plain temp file
    /// untouched for `untouched` (a writer on any machine sharing the
    /// directory would have touched it since); one already gone is fine.
    async fn remove_temp(
        &self,
        key: &str,
        untouched: std::time::Duration,
    ) -> Result<(), StoreError> {
        let _ = untouched;
        Err(StoreError::BadKey {
            key: key.to_string(),
            reason: "this store keeps no temp files".to_string(),
        })
    }

    /// Whether [`Store::probe_enforcement`] has anything to find out.
    fn probes_enforcement(&self) -> bool {
        false
    }

    /// Whether the server enforces preconditions on delete and copy, found
    /// with scratch objects at keys starting `scratch` (removed after).
    /// `None`: nothing to probe, [`Store::capabilities`] says.
    async fn probe_enforcement(
        &self,
        scratch: &str,
    ) -> Result<Option<enforced::Enforced>, StoreError> {
        let _ = scratch;
        Ok(None)
    }
}

/// Opens the store behind a datastore configuration with default options.
pub fn open(datastore: &DatastoreConfig) -> Result<Arc<dyn Store>, StoreError> {
    open_with(datastore, StoreOptions::default())
}

/// Opens the store behind a datastore configuration. Cheap and offline:
/// clients connect (and credentials are resolved) on first use, so errors
/// about reachability and access come from the first call.
pub fn open_with(
    datastore: &DatastoreConfig,
    options: StoreOptions,
) -> Result<Arc<dyn Store>, StoreError> {
    match datastore {
        DatastoreConfig::Local => Err(StoreError::NoObjectStore),
        DatastoreConfig::Filesystem { path } => Ok(open_fs(path.as_path())),
        // `endpoint=file:///dir`: see [`endpoint_dir`].
        DatastoreConfig::S3 {
            bucket,
            endpoint: Some(endpoint),
            ..
        }
        | DatastoreConfig::Gcs {
            bucket,
            endpoint: Some(endpoint),
            ..
        } if endpoint.starts_with("file://") => {
            // As a server answers for a bucket nobody made: a mistyped
            // path must not become a new, empty bucket.
            let dir = endpoint_dir(bucket, endpoint)?;
            if !dir.is_dir() {
                return Err(StoreError::NoSuchBucket {
                    bucket: bucket.clone(),
                    target: endpoint.clone(),
                });
            }
            Ok(open_fs(&dir))
        }
        DatastoreConfig::S3 {
            bucket,
            region,
            endpoint,
            ..
        } => Ok(Arc::new(s3::S3Store::new(
            bucket,
            region.as_deref(),
            endpoint.as_deref(),
            options,
        )?)),
        DatastoreConfig::Gcs {
            bucket, endpoint, ..
        } => Ok(Arc::new(gcs::GcsStore::new(
            bucket,
            endpoint.as_deref(),
            options,
        )?)),
    }
}

/// The directory of bucket `bucket` at `endpoint=file:///dir`: `dir/<bucket>`,
/// an object store on disk (for tests and trying swamp without a server:
/// same keys, same preconditions, same sha256 metadata). An endpoint
/// naming a relative directory is an error.
pub(crate) fn endpoint_dir(bucket: &str, endpoint: &str) -> Result<PathBuf, StoreError> {
    let dir = Path::new(endpoint.strip_prefix("file://").unwrap_or(endpoint));
    if !dir.is_absolute() {
        return Err(StoreError::RelativeEndpoint {
            endpoint: endpoint.to_string(),
        });
    }
    Ok(dir.join(bucket))
}

/// A directory used as an object store (keys are relative paths under it).
pub fn open_fs(root: &Path) -> Arc<dyn Store> {
    Arc::new(fs::FsStore::new(root))
}

/// The repository's own state directory as a store (a clone's lock): its
/// operations are not a datastore's requests, so none is reported.
pub(crate) fn open_own_state(root: &Path) -> Arc<dyn Store> {
    Arc::new(fs::FsStore::unreported(root))
}

/// Checks a bucket name the way both S3 and GCS do (3-63 characters of
/// lowercase letters, digits, `-`, `.`, `_`), so a typo is reported before
/// any request is made.
pub fn check_bucket_name(bucket: &str, kind: &'static str) -> Result<(), StoreError> {
    let ok_len = (3..=63).contains(&bucket.len());
    let ok_chars = bucket
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._".contains(c));
    let ok_ends = bucket
        .chars()
        .next()
        .zip(bucket.chars().last())
        .is_some_and(|(a, z)| a.is_ascii_alphanumeric() && z.is_ascii_alphanumeric());
    if ok_len && ok_chars && ok_ends {
        Ok(())
    } else {
        Err(StoreError::InvalidBucketName {
            kind,
            bucket: bucket.to_string(),
        })
    }
}

/// Refuses keys a backend would interpret differently from the others or
/// that could escape a filesystem root.
pub(crate) fn check_key(key: &str) -> Result<(), StoreError> {
    let reason = if key.is_empty() {
        Some("it is empty")
    } else if key.starts_with('/') {
        Some("it starts with `/`")
    } else if key.contains('\\') {
        Some("it contains a backslash")
    } else if key.contains('\0') {
        Some("it contains a NUL byte")
    } else if key.split('/').any(|c| c == ".." || c == ".") {
        Some("it has a `.` or `..` component")
    } else if key.split('/').any(str::is_empty) {
        Some("it has an empty path component")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(StoreError::BadKey {
            key: key.to_string(),
            reason: reason.to_string(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_could_escape_are_refused() {
        for bad in [
            "", "/abs", "a/../b", "..", "a\\b", "a\0b", "a//b", "a/", "./a",
        ] {
            let e = check_key(bad).unwrap_err();
            assert!(
                e.to_string().contains("refusing object key"),
                "{bad:?}: {e}"
            );
        }
        for good in ["a", "p/ns/data/x/1/raw", "a..b/c", ".hidden/x"] {
            check_key(good).unwrap();
        }
    }

    #[test]
    fn bucket_names_are_checked() {
        for bad in ["ab", "Bucket", "-abc", "abc-", "a_b!c"] {
            assert!(check_bucket_name(bad, "S3").is_err(), "{bad}");
        }
        for good in ["abc", "swamp-test-1", "my.bucket"] {
            check_bucket_name(good, "S3").unwrap();
        }
    }

    #[test]
    fn integrity_mismatch_names_both_hashes() {
        verify_sha256("k", None, "aa").unwrap();
        verify_sha256("k", Some("AA"), "aa").unwrap();
        let e = verify_sha256("k", Some("bb"), "aa").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("bb") && msg.contains("aa") && msg.contains("`k`"));
    }
}
