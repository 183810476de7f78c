//! Object stores: the one interface through which swamp reads and writes a
//! datastore's remote side (S3, GCS) and the lock and manifests of a
//! `filesystem` datastore.
//!
//! Owns: the [`Store`] trait (paged listing, head, verified downloads,
//! conditional uploads, deletes, server-side copy), what each backend can
//! enforce ([`Capabilities`]), typed errors that name the bucket or endpoint
//! and the fix ([`StoreError`]), and retries of transient failures
//! ([`retry`]). Backends: [`fs`] (a directory), [`s3`] (`aws-sdk-s3`),
//! [`gcs`] (`gcloud-storage`, the GCS JSON API).
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

pub(crate) mod fs;
pub(crate) mod gcs;
pub mod resume;
pub(crate) mod retry;
pub(crate) mod s3;
pub mod scoped;
pub(crate) mod target;
pub mod version;

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
    /// Stored compressed and served decompressed (GCS `contentEncoding:
    /// gzip`, as `gsutil cp -Z` writes): `size` and `md5` are the stored
    /// bytes', so neither can check what a download receives.
    pub content_encoded: bool,
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

/// One level of the keys under a prefix, as a delimiter listing gives it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Level {
    /// The objects whose key holds no `/` after the prefix, sorted by key.
    pub objects: Vec<ObjectMeta>,
    /// The distinct `<prefix><name>/` every other key starts with, sorted.
    pub prefixes: Vec<String>,
}

impl Level {
    /// Sorts a listing page by key (see [`Store::list_paged`]).
    fn sort_page(page: &mut [ObjectMeta]) {
        page.sort_by(|a, b| a.key.cmp(&b.key));
    }

    /// Sorted as a level is given: objects by key, prefixes each once (a
    /// server's pages may repeat a prefix at their seams).
    pub fn sorted(mut self) -> Level {
        self.objects.sort_by(|a, b| a.key.cmp(&b.key));
        self.prefixes.sort();
        self.prefixes.dedup();
        self
    }

    /// The level of `prefix` in `all`, a sorted listing of it.
    pub fn of(prefix: &str, all: Vec<ObjectMeta>) -> Level {
        let mut level = Level::default();
        for meta in all {
            let below = meta
                .key
                .get(prefix.len()..)
                .and_then(|rest| rest.find('/'))
                .map(|i| prefix.len() + i + 1);
            match below {
                // Keys sharing a prefix are adjacent in a sorted listing.
                Some(end) => {
                    let p = &meta.key[..end];
                    if level.prefixes.last().map(String::as_str) != Some(p) {
                        level.prefixes.push(p.to_string());
                    }
                }
                None => level.objects.push(meta),
            }
        }
        level
    }
}

/// Every object under `prefix`, as [`Store::list`] gives it (sorted by
/// key), found `levels` levels down by delimiter listings when the store
/// has them (and up to [`EXTRA_LEVELS`] further while fewer than
/// `concurrency` prefixes were found): each level's prefixes are listed
/// `concurrency` at a time, then
/// every prefix found is paged through on its own, side by side. A big
/// namespace's tiers and their first level are then paged in parallel
/// instead of one page after another; every key is still listed exactly
/// once (each falls under one prefix, or is an object of a level).
///
/// When the parts do not add up (a prefix a listing named holds nothing, a
/// key outside the prefix it was listed under, a key listed twice), a
/// listing changed underfoot or an answer was garbled on the way, and a
/// garbled prefix would hide a whole subtree: the plain listing is taken
/// instead.
pub async fn list_split(
    store: &dyn Store,
    prefix: &str,
    levels: u32,
    concurrency: usize,
) -> Result<Vec<ObjectMeta>, StoreError> {
    let parts = list_split_parts(store, prefix, levels, concurrency, |part| part).await?;
    let mut all = Vec::with_capacity(parts.iter().flatten().map(Vec::len).sum());
    all.extend(parts.into_iter().flatten().flatten());
    all.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(all)
}

/// [`list_split`] as the disjoint parts it was listed in (no key in two
/// parts, the parts in the order of their first keys), each as the pages
/// it was listed in (sorted, in key order), every page given to `take` as
/// soon as it is listed and checked: a caller that keeps less of an
/// object than its [`ObjectMeta`] never holds the listing whole. (When the
/// parts do not add up, what `take` made of them is dropped and the plain
/// listing is the one page of the one part.)
pub async fn list_split_parts<T: Send>(
    store: &dyn Store,
    prefix: &str,
    levels: u32,
    concurrency: usize,
    take: impl Fn(Vec<ObjectMeta>) -> T + Sync,
) -> Result<Vec<Vec<T>>, StoreError> {
    if levels == 0 || !store.capabilities().delimited_listing {
        return Ok(vec![vec![take(store.list(prefix).await?)]]);
    }
    // A listing that fits one page costs one request: splitting it (a
    // level listing per prefix) pays off only for a large one.
    if let Some(page) = store.list_if_one_page(prefix).await? {
        return Ok(vec![vec![take(page)]]);
    }
    match split_listing(store, prefix, levels, concurrency.max(1), &take).await? {
        Some(parts) => Ok(parts),
        None => Ok(vec![vec![take(store.list(prefix).await?)]]),
    }
}

/// How many levels below the ones asked for a split listing may go on
/// down while its prefixes are fewer than it lists at once.
const EXTRA_LEVELS: u32 = 4;

/// Most prefixes a level below the ones asked for may name and still be
/// listed one by one (see [`split_listing`]).
const MAX_EXTRA_PARTS: usize = 256;

/// [`list_split`]'s parallel listing, in parts; `None` when its parts do
/// not add up.
async fn split_listing<T: Send>(
    store: &dyn Store,
    prefix: &str,
    levels: u32,
    concurrency: usize,
    take: &(impl Fn(Vec<ObjectMeta>) -> T + Sync),
) -> Result<Option<Vec<Vec<T>>>, StoreError> {
    use futures_util::{StreamExt, TryStreamExt, stream};
    // The levels' own objects, then one part per prefix paged through.
    let mut objects = Vec::new();
    let mut frontier = vec![prefix.to_string()];
    // Prefixes listed whole, not split further.
    let mut whole = Vec::new();
    let mut depth = 0;
    // `levels` down at least; further while too few prefixes were found to
    // list side by side (a namespace whose files all sit under one
    // directory is otherwise paged through one page after another).
    while depth < levels || (frontier.len() < concurrency && depth < levels + EXTRA_LEVELS) {
        if frontier.is_empty() {
            break;
        }
        let found: Vec<(&String, Level)> = stream::iter(&frontier)
            .map(|p| async move { Ok::<_, StoreError>((p, store.list_level(p).await?)) })
            .buffer_unordered(concurrency)
            .try_collect()
            .await?;
        let mut next = Vec::new();
        let mut level_objects = Vec::new();
        let mut level_whole = Vec::new();
        for (p, level) in found {
            // An object named as the prefix itself: a folder marker (which
            // a plain listing shows), or the empty directory SeaweedFS
            // answers for a prefix whose objects are all deleted (which it
            // does not). Listed whole, the subtree is what a plain listing
            // says, whichever it is.
            if level.objects.iter().any(|o| &o.key == p) {
                level_whole.push(p.clone());
                continue;
            }
            if !level_adds_up(p, &level, depth == 0) {
                return Ok(None);
            }
            level_objects.extend(level.objects);
            next.extend(level.prefixes);
        }
        // A level below those asked for that names very many prefixes
        // (a directory of thousands of versions, one file each) would cost
        // a request per prefix: its parents are paged through whole
        // instead, as without it.
        if depth >= levels && next.len() > MAX_EXTRA_PARTS {
            whole.append(&mut frontier);
            break;
        }
        objects.extend(level_objects);
        whole.extend(level_whole);
        frontier = next;
        depth += 1;
    }
    let listed = frontier.len();
    frontier.extend(whole);
    let mut objects_part = Part::new("");
    objects_part.page(objects, take);
    let found: Vec<Part<T>> = stream::iter(frontier.iter().enumerate())
        .map(|(i, p)| async move {
            let mut part = Part::new(p);
            store
                .list_paged(p, &mut |page| part.page(page, take))
                .await?;
            // A prefix a level named holds something; one listed whole may
            // be SeaweedFS's empty directory.
            if i < listed && part.first.is_none() {
                part.does_not_add_up();
            }
            Ok::<_, StoreError>(part)
        })
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
    let mut parts = Vec::with_capacity(found.len() + 1);
    parts.push(objects_part);
    parts.extend(found);
    if parts.iter().any(|p| !p.adds_up) {
        return Ok(None);
    }
    parts.sort_by(|a, b| a.first.cmp(&b.first));
    Ok(Some(parts.into_iter().map(|p| p.pages).collect()))
}

/// One part of a split listing as its pages come: what `take` made of
/// each, and whether they add up so far.
struct Part<'a, T> {
    /// The prefix it is listed under (every key starts with it).
    under: &'a str,
    pages: Vec<T>,
    first: Option<String>,
    last: Option<String>,
    adds_up: bool,
}

impl<'a, T> Part<'a, T> {
    fn new(under: &'a str) -> Part<'a, T> {
        Part {
            under,
            pages: Vec::new(),
            first: None,
            last: None,
            adds_up: true,
        }
    }

    /// Takes the next page. Parts are disjoint (each under its own prefix,
    /// the levels' objects under none of them), so a key listed twice
    /// would be within one part: each page is sorted, and must start after
    /// the last.
    fn page(&mut self, mut page: Vec<ObjectMeta>, take: &impl Fn(Vec<ObjectMeta>) -> T) {
        if !self.adds_up {
            return;
        }
        Level::sort_page(&mut page);
        let (Some(first), Some(last)) = (page.first(), page.last()) else {
            return;
        };
        let in_order = self.last.as_ref().is_none_or(|l| *l < first.key)
            && page.windows(2).all(|w| w[0].key != w[1].key)
            && page.iter().all(|o| o.key.starts_with(self.under));
        if !in_order {
            return self.does_not_add_up();
        }
        if self.first.is_none() {
            self.first = Some(first.key.clone());
        }
        self.last = Some(last.key.clone());
        self.pages.push(take(page));
    }

    /// The part is found not to add up: what was made of it goes.
    fn does_not_add_up(&mut self) {
        self.adds_up = false;
        self.pages.clear();
    }
}

/// Whether a level listing of `prefix` is one a consistent bucket gives:
/// every object and prefix under it (each prefix one name and a `/`
/// longer), and something there unless it is the top of the listing.
fn level_adds_up(prefix: &str, level: &Level, top: bool) -> bool {
    let under = |k: &str| k.len() > prefix.len() && k.starts_with(prefix);
    (top || !level.objects.is_empty() || !level.prefixes.is_empty())
        && level.objects.iter().all(|o| under(&o.key))
        && level
            .prefixes
            .iter()
            .all(|p| under(p) && p.ends_with('/') && !p[prefix.len()..p.len() - 1].contains('/'))
}

/// One page of a listing, as the server answered it.
pub(crate) struct ListPage {
    pub objects: Vec<ObjectMeta>,
    /// Its common prefixes (a delimited listing only).
    pub prefixes: Vec<String>,
    /// Where the next page starts; `None` on the last.
    pub next: Option<String>,
}

/// A store whose server lists a page at a time (S3, GCS): its
/// [`Store::list`], [`Store::list_paged`] and [`Store::list_level`] are
/// made here, once, from its [`Pager::list_page`].
#[async_trait]
pub(crate) trait Pager: Sync {
    /// The page of the listing of `prefix` (one level of it when
    /// `delimited`) that starts at `token` (`None`: the first).
    async fn list_page(
        &self,
        prefix: &str,
        delimited: bool,
        token: Option<String>,
    ) -> Result<ListPage, StoreError>;

    /// Every page of the listing: each page's objects to `take`, its
    /// prefixes returned (unsorted).
    async fn list_pages(
        &self,
        prefix: &str,
        delimited: bool,
        take: &mut (dyn FnMut(Vec<ObjectMeta>) + Send),
    ) -> Result<Vec<String>, StoreError> {
        let mut prefixes = Vec::new();
        let mut token = None;
        loop {
            let page = self.list_page(prefix, delimited, token).await?;
            take(page.objects);
            prefixes.extend(page.prefixes);
            match page.next {
                Some(next) => token = Some(next),
                None => return Ok(prefixes),
            }
        }
    }

    /// [`Store::list`]: every page, sorted by key.
    async fn list_whole(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError> {
        let mut objects = Vec::new();
        self.list_pages(prefix, false, &mut |page| objects.extend(page))
            .await?;
        Level::sort_page(&mut objects);
        Ok(objects)
    }

    /// [`Store::list_paged`]: each page sorted by key.
    async fn list_sorted_pages(
        &self,
        prefix: &str,
        take: &mut (dyn FnMut(Vec<ObjectMeta>) + Send),
    ) -> Result<(), StoreError> {
        self.list_pages(prefix, false, &mut |mut page| {
            Level::sort_page(&mut page);
            take(page)
        })
        .await?;
        Ok(())
    }

    /// [`Store::list_if_one_page`].
    async fn list_first_page(&self, prefix: &str) -> Result<Option<Vec<ObjectMeta>>, StoreError> {
        let page = self.list_page(prefix, false, None).await?;
        if page.next.is_some() {
            return Ok(None);
        }
        let mut objects = page.objects;
        Level::sort_page(&mut objects);
        Ok(Some(objects))
    }

    /// [`Store::list_level`].
    async fn list_one_level(&self, prefix: &str) -> Result<Level, StoreError> {
        let mut objects = Vec::new();
        let prefixes = self
            .list_pages(prefix, true, &mut |page| objects.extend(page))
            .await?;
        Ok(Level { objects, prefixes }.sorted())
    }
}

/// Errors from any store. Messages name what failed (key, bucket or
/// endpoint) and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "precondition failed for `{key}`: it changed (or appeared) since it was observed; plan again"
    )]
    PreconditionFailed { key: String },
    #[error("`{key}` does not exist in {target}")]
    NotFound { key: String, target: String },
    #[error(
        "cannot reach {target}: {message}; check that the endpoint is right and the server is up"
    )]
    Unreachable { target: String, message: String },
    #[error(
        "{target} is unavailable or throttling ({message}) and kept failing after retries; try again later"
    )]
    Unavailable { target: String, message: String },
    #[error("{target} refused access ({message}); {hint}")]
    Denied {
        target: String,
        message: String,
        hint: String,
    },
    /// Where the bucket's name came from is the caller's to say.
    #[error("bucket `{bucket}` does not exist at {target}")]
    NoSuchBucket { bucket: String, target: String },
    #[error("invalid {kind} bucket name `{bucket}` (3-63 lowercase letters, digits, `-`, `.`)")]
    InvalidBucketName { kind: &'static str, bucket: String },
    #[error("no AWS region for {target}")]
    NoRegion { target: String },
    /// The server refused to copy `key` in one request (over 5 GiB on
    /// AWS); the S3 store copies it in parts instead.
    #[error("`{key}` is too large to copy in one request")]
    CopyTooLarge { key: String },
    #[error(
        "`{key}` is corrupt: its content has {algorithm} {found} but the server says {expected}; nothing was written locally"
    )]
    Integrity {
        key: String,
        /// `sha256` (swamp's metadata) or `md5` (what the server keeps).
        algorithm: &'static str,
        expected: String,
        found: String,
    },
    #[error(
        "{target} looks down: {failures} attempt(s) in a row failed over {secs:.1}s ({message}); nothing more was sent to it"
    )]
    Down {
        target: String,
        message: String,
        failures: u32,
        secs: f64,
    },
    #[error("`{key}` arrived corrupt ({detail}); nothing was written locally")]
    Corrupt { key: String, detail: String },
    #[error(
        "`{key}` arrived with {got} bytes where {target} announced {expected} (the connection dropped, or the object changed meanwhile); nothing was written locally"
    )]
    Short {
        key: String,
        target: String,
        got: u64,
        expected: u64,
    },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "refusing `{key}`: it lies outside {scope}, the prefix and namespace this command works in; nothing was changed"
    )]
    OutOfScope { key: String, scope: String },
    /// A key no object may have (see [`check_key`]).
    #[error("refusing object key {key:?}: {reason}")]
    BadKey { key: String, reason: String },
    /// The file to upload is not the content the caller hashed: it was
    /// written to since.
    #[error("not uploading {what}: it changed since it was hashed ({now}); plan again")]
    ChangedSinceHashed {
        /// The file and the object it was going to, in words.
        what: String,
        /// What it is now, in words (`sha256 …`, `1234 bytes`, `longer`).
        now: String,
    },
    /// A filesystem store's object is a symlink, never followed.
    #[error("`{key}` is a symlink ({}); objects must be regular files, remove or replace it", .path.display())]
    Symlink { key: String, path: PathBuf },
    /// A filesystem store's object is a directory, FIFO or device.
    #[error("`{key}` is not a regular file ({}); remove it or choose another key", .path.display())]
    NotAFile { key: String, path: PathBuf },
    /// A file in a filesystem store whose name cannot be a key.
    #[error(
        "{} has a name that is not UTF-8 and cannot be an object key; rename or remove it",
        .path.display()
    )]
    NotUtf8 { path: PathBuf },
    /// A directory removed again and again under a filesystem store's
    /// write or lock.
    #[error("{} kept disappearing while {doing}", .path.display())]
    KeptDisappearing { path: PathBuf, doing: String },
    #[error("cannot list {}: {source}", .path.display())]
    CannotList {
        path: PathBuf,
        #[source]
        source: walkdir::Error,
    },
    /// The server answered with an error of no kind above.
    #[error("{target}: {}{message}", in_key(.key))]
    Server {
        target: String,
        key: Option<String>,
        message: String,
    },
    /// A request that failed without an answer from the server, for a
    /// reason other than reaching it (it could not be built or sent).
    #[error("{target}: {message}")]
    Request { target: String, message: String },
    /// One key of a batch delete the server refused.
    #[error("{target}: could not delete `{key}`: {message}")]
    DeleteFailed {
        target: String,
        key: String,
        message: String,
    },
    /// A multipart upload aborted or expired before its completion.
    #[error(
        "{target}: the multipart upload of `{key}` was gone before it could be completed (aborted, or expired by a lifecycle rule); nothing was written, run it again"
    )]
    UploadGone { target: String, key: String },
    /// The `local` datastore has no object store to open.
    #[error(
        "the `local` datastore is the repository's own .swamp/ directory and has no object store; use `swamp datastore setup` to move it to a filesystem, s3 or gcs datastore"
    )]
    NoObjectStore,
    #[error("endpoint {endpoint:?} must name an absolute directory (file:///path)")]
    RelativeEndpoint { endpoint: String },
    /// Work handed to another task or thread that failed there.
    #[error("{what} failed: {source}")]
    Task {
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// "`key`: " where a message names the key, else nothing.
fn in_key(key: &Option<String>) -> String {
    key.as_ref().map(|k| format!("`{k}`: ")).unwrap_or_default()
}

impl StoreError {
    /// Whether trying the same request again may succeed (see [`retry`]).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            StoreError::Unreachable { .. } | StoreError::Unavailable { .. }
        )
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn task(
        what: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        StoreError::Task {
            what,
            source: Box::new(source),
        }
    }
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
        // `endpoint=file:///dir`: the bucket is the directory `dir/<bucket>`,
        // an object store on disk (for tests and trying swamp without a
        // server). Same keys, same preconditions, same sha256 metadata.
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
            let dir = Path::new(&endpoint["file://".len()..]);
            if !dir.is_absolute() {
                return Err(StoreError::RelativeEndpoint {
                    endpoint: endpoint.clone(),
                });
            }
            Ok(open_fs(&dir.join(bucket)))
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

/// A directory used as an object store (keys are relative paths under it).
pub fn open_fs(root: &Path) -> Arc<dyn Store> {
    Arc::new(fs::FsStore::new(root))
}

/// Where a remote download lands: a temp file beside the destination,
/// hashed as it is written, renamed into place only once verified.
///
/// The body is held in memory up to [`Landing::SPILL`] bytes (a cache file
/// is usually far smaller), so a download does its file work in one
/// blocking-pool hop at the end: make the directory, create the temp file,
/// write, fsync, rename. A larger body spills to the
/// temp file one hop per [`Landing::SPILL`] bytes. Nothing is created on
/// disk before the body has started to arrive, and dropping a `Landing`
/// removes its temp file.
/// Whether a download's bytes are fsynced before it is renamed into place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Fsynced, then renamed: the file at `dest` is durable (but for its
    /// directory entry, which the caller's directory fsync makes so).
    Synced,
    /// Written and renamed without an fsync: `dest` is a staging name the
    /// caller makes durable (a batch at a time) before renaming it to where
    /// a reader relies on it.
    Deferred,
}

pub(crate) struct Landing {
    dest: PathBuf,
    durability: Durability,
    buf: Vec<u8>,
    /// The temp file, once a large body has spilled to it.
    spilled: Option<tempfile::NamedTempFile>,
    hasher: sha2::Sha256,
    /// For an object the server vouches for only by MD5 (no sha256
    /// metadata): the body's MD5, checked against it.
    md5: Option<md5::Md5>,
    written: u64,
}

/// The directory a destination path lands in.
fn dest_dir(dest: &Path) -> &Path {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Creates a file in `dir` with `create`, making `dir` first only when
/// the create finds it missing: it usually exists already (a pull lands
/// many files in each directory).
fn in_dir<T>(dir: &Path, create: impl Fn() -> std::io::Result<T>) -> std::io::Result<T> {
    match create() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            create()
        }
        other => other,
    }
}

/// Writes `buf` to the temp file for `dest`, creating it (and its
/// directory) when there is none yet. A [`Durability::Deferred`] landing
/// writes `dest` itself (a staging name of the caller's, created only if
/// absent): no second temp name, no rename.
fn spill(
    dest: &Path,
    durability: Durability,
    tmp: Option<tempfile::NamedTempFile>,
    buf: &[u8],
) -> Result<tempfile::NamedTempFile, StoreError> {
    use std::io::Write;
    let mut tmp = match tmp {
        Some(t) => t,
        None => {
            let dir = dest_dir(dest);
            match durability {
                Durability::Synced => in_dir(dir, || crate::fsutil::temp_file_in(dir))
                    .map_err(|e| StoreError::io(dir, e))?,
                Durability::Deferred => {
                    let file = in_dir(dir, || {
                        std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(dest)
                    })
                    .map_err(|e| StoreError::io(dest, e))?;
                    // Removed if the landing is dropped unfinished.
                    let path = tempfile::TempPath::try_from_path(dest).map_err(|e| {
                        let _ = std::fs::remove_file(dest);
                        StoreError::io(dest, e)
                    })?;
                    tempfile::NamedTempFile::from_parts(file, path)
                }
            }
        }
    };
    tmp.as_file_mut()
        .write_all(buf)
        .map_err(|e| StoreError::io(tmp.path(), e))?;
    Ok(tmp)
}

impl Landing {
    /// Bytes held in memory before a body spills to its temp file.
    const SPILL: usize = 4 << 20;

    /// Bodies at most this large land on the calling (async) thread when
    /// no fsync is due: a create, a write and a rename cost less than the
    /// hand-off to a blocking thread and back.
    const INLINE: usize = 256 << 10;

    pub(crate) fn new(dest: &Path, durability: Durability) -> Result<Landing, StoreError> {
        Ok(Landing {
            dest: dest.to_path_buf(),
            durability,
            buf: Vec::new(),
            spilled: None,
            hasher: sha2::Sha256::default(),
            md5: None,
            written: 0,
        })
    }

    /// Also checks the body against `meta`'s MD5 when that is all the
    /// server says of it (an object another tool wrote).
    pub(crate) fn checking_md5(mut self, meta: &ObjectMeta) -> Landing {
        if checked_by_md5(meta) {
            self.md5 = Some(md5::Md5::default());
        }
        self
    }

    pub(crate) async fn write(&mut self, chunk: &[u8]) -> Result<(), StoreError> {
        use sha2::Digest;
        self.hasher.update(chunk);
        if let Some(m) = &mut self.md5 {
            m.update(chunk);
        }
        self.written += chunk.len() as u64;
        self.buf.extend_from_slice(chunk);
        if self.buf.len() >= Self::SPILL {
            let buf = std::mem::take(&mut self.buf);
            let tmp = self.spilled.take();
            let dest = self.dest.clone();
            let durability = self.durability;
            let (tmp, mut buf) = tokio::task::spawn_blocking(move || {
                spill(&dest, durability, tmp, &buf).map(|tmp| (tmp, buf))
            })
            .await
            .map_err(|e| StoreError::task("download task", e))??;
            buf.clear();
            self.buf = buf;
            self.spilled = Some(tmp);
        }
        Ok(())
    }

    /// Verifies size and sha256 against `meta`, then writes, fsyncs and
    /// renames into `dest` (its directory's fsync is the caller's, see
    /// [`Store::get_to_file`]). Returns `meta` as landed: the sha256 and
    /// size of the bytes written (the size differs from the stored one
    /// only for an object served decompressed). Dropping a `Landing`
    /// instead removes the temp file.
    pub(crate) async fn finish(
        mut self,
        target: &str,
        meta: ObjectMeta,
    ) -> Result<ObjectMeta, StoreError> {
        use sha2::Digest;
        let found = hex::encode(self.hasher.finalize_reset());
        let md5 = self
            .md5
            .take()
            .map(|m| crate::digest::Md5(m.finalize().into()));
        check_download(target, &meta, self.written, &found, md5)?;
        let landed = ObjectMeta {
            sha256: Some(found),
            size: self.written,
            ..meta
        };
        let Landing {
            dest,
            durability,
            buf,
            spilled,
            ..
        } = self;
        let inline =
            durability == Durability::Deferred && spilled.is_none() && buf.len() <= Self::INLINE;
        let land = move || {
            let tmp = spill(&dest, durability, spilled, &buf)?;
            match durability {
                Durability::Synced => {
                    tmp.as_file()
                        .sync_all()
                        .map_err(|e| StoreError::io(tmp.path(), e))?;
                    tmp.persist(&dest)
                        .map(|_| ())
                        .map_err(|e| StoreError::io(&dest, e.error))
                }
                // Already at `dest`: keep it.
                Durability::Deferred => tmp
                    .into_temp_path()
                    .keep()
                    .map(|_| ())
                    .map_err(|e| StoreError::io(&dest, e.error)),
            }
        };
        if inline {
            land()?;
        } else {
            tokio::task::spawn_blocking(land)
                .await
                .map_err(|e| StoreError::task("download task", e))??;
        }
        Ok(landed)
    }
}

/// Checks a finished download: the length the server announced (a short
/// body is a dropped connection, worth a retry), the sha256 metadata, and
/// for an object with none, the MD5 the server gave (`md5`: the body's,
/// when it was computed, see [`Landing::checking_md5`]).
pub(crate) fn check_download(
    target: &str,
    meta: &ObjectMeta,
    written: u64,
    sha: &str,
    md5: Option<crate::digest::Md5>,
) -> Result<(), StoreError> {
    if meta.content_encoded {
        // Served decompressed: only swamp's own sha256 (never written on
        // such an object by swamp, but honoured) could check it.
        return verify_sha256(&meta.key, meta.sha256.as_deref(), sha);
    }
    if written != meta.size {
        return Err(StoreError::Short {
            key: meta.key.clone(),
            target: target.to_string(),
            got: written,
            expected: meta.size,
        });
    }
    verify_sha256(&meta.key, meta.sha256.as_deref(), sha)?;
    match (meta.sha256.as_ref(), meta.md5, md5) {
        (None, Some(expected), Some(found)) if expected != found => Err(StoreError::Integrity {
            key: meta.key.clone(),
            algorithm: "md5",
            expected: expected.hex(),
            found: found.hex(),
        }),
        _ => Ok(()),
    }
}

/// Whether only the server's MD5 can check a download of `meta`: no
/// sha256 metadata, an MD5, and served as stored.
fn checked_by_md5(meta: &ObjectMeta) -> bool {
    meta.sha256.is_none() && meta.md5.is_some() && !meta.content_encoded
}

/// The MD5 of a body read whole, when only an MD5 can check it.
pub(crate) fn md5_to_check(meta: &ObjectMeta, body: &[u8]) -> Option<crate::digest::Md5> {
    checked_by_md5(meta).then(|| crate::digest::Md5::of(body))
}

/// An error with its sources on one line, so "connection refused" is not
/// hidden behind "error sending request" (sources whose text is already
/// there are skipped).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Checks the sha256 of downloaded content against the object's metadata.
pub(crate) fn verify_sha256(
    key: &str,
    expected: Option<&str>,
    found: &str,
) -> Result<(), StoreError> {
    match expected {
        Some(expected) if !expected.eq_ignore_ascii_case(found) => Err(StoreError::Integrity {
            key: key.to_string(),
            algorithm: "sha256",
            expected: expected.to_string(),
            found: found.to_string(),
        }),
        _ => Ok(()),
    }
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
    fn a_level_that_does_not_add_up_is_caught() {
        let meta = |k: &str| ObjectMeta {
            key: k.to_string(),
            size: 0,
            version: "1".into(),
            sha256: None,
            modified: None,
            md5: None,
            content_encoded: false,
        };
        let level = |objects: &[&str], prefixes: &[&str]| Level {
            objects: objects.iter().map(|k| meta(k)).collect(),
            prefixes: prefixes.iter().map(|p| p.to_string()).collect(),
        };
        assert!(level_adds_up("p/", &level(&["p/a"], &["p/d/"]), false));
        // An empty namespace is fine at the top, not below it.
        assert!(level_adds_up("p/", &level(&[], &[]), true));
        assert!(!level_adds_up("p/d/", &level(&[], &[]), false));
        // Garbled on the way: outside the prefix, or not one level down.
        assert!(!level_adds_up("p/", &level(&["q/a"], &[]), true));
        assert!(!level_adds_up("p/", &level(&[], &["P/d/"]), true));
        assert!(!level_adds_up("p/", &level(&[], &["p/d/e/"]), true));
        assert!(!level_adds_up("p/", &level(&[], &["p/d"]), true));
    }

    #[test]
    fn a_level_puts_every_key_under_one_prefix_or_among_its_objects() {
        // Keys other tools write: a folder marker, an empty segment, a
        // name sorting between `dir` and `dir/`.
        let all: Vec<ObjectMeta> = ["p/a", "p/dir-x", "p/dir/", "p/dir/f", "p/odd//x", "p/odd/y"]
            .iter()
            .map(|k| ObjectMeta {
                key: k.to_string(),
                size: 0,
                version: "1".into(),
                sha256: None,
                modified: None,
                md5: None,
                content_encoded: false,
            })
            .collect();
        let level = Level::of("p/", all);
        let objects: Vec<_> = level.objects.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(objects, ["p/a", "p/dir-x"]);
        assert_eq!(level.prefixes, ["p/dir/", "p/odd/"]);
    }

    fn meta_for(body: &[u8]) -> ObjectMeta {
        ObjectMeta {
            key: "k".into(),
            size: body.len() as u64,
            version: "v".into(),
            sha256: Some(crate::fsutil::sha256_bytes(body)),
            modified: None,
            md5: None,
            content_encoded: false,
        }
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_body_larger_than_the_buffer_spills_and_lands_whole() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("sub/dir/file");
        let body: Vec<u8> = (0..Landing::SPILL * 2 + 12345)
            .map(|i| (i % 251) as u8)
            .collect();
        let mut landing = Landing::new(&dest, Durability::Synced).unwrap();
        for chunk in body.chunks(64 * 1024) {
            landing.write(chunk).await.unwrap();
        }
        assert!(
            landing.spilled.is_some(),
            "a large body spills to its temp file"
        );
        let landed = landing.finish("test", meta_for(&body)).await.unwrap();
        assert_eq!(landed.sha256.unwrap(), crate::fsutil::sha256_bytes(&body));
        assert_eq!(std::fs::read(&dest).unwrap(), body);
        assert_eq!(names_in(dest.parent().unwrap()), ["file"]);
    }

    #[tokio::test]
    async fn a_download_that_fails_or_is_dropped_leaves_no_file_behind() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("file");
        // Spilled, then dropped (a cancelled transfer).
        let mut landing = Landing::new(&dest, Durability::Synced).unwrap();
        landing.write(&vec![7u8; Landing::SPILL]).await.unwrap();
        assert_eq!(names_in(dir.path()).len(), 1, "the spill made a temp file");
        drop(landing);
        assert!(names_in(dir.path()).is_empty());
        // Bytes that do not match the metadata are never renamed in.
        let mut landing = Landing::new(&dest, Durability::Synced).unwrap();
        landing.write(b"other bytes").await.unwrap();
        let e = landing
            .finish("test", meta_for(b"the bytes!!"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("sha256"), "{e}");
        assert!(names_in(dir.path()).is_empty());
    }

    #[tokio::test]
    async fn a_deferred_landing_writes_its_staging_name_and_never_one_that_exists() {
        let dir = tempfile::tempdir().unwrap();
        // Small and spilled bodies both land at the name given, nothing else.
        for (name, len) in [("small", 100), ("large", Landing::SPILL + 777)] {
            let dest = dir.path().join("sub").join(name);
            let body: Vec<u8> = (0..len).map(|i| (i % 13) as u8).collect();
            let mut landing = Landing::new(&dest, Durability::Deferred).unwrap();
            for chunk in body.chunks(64 * 1024) {
                landing.write(chunk).await.unwrap();
            }
            landing.finish("test", meta_for(&body)).await.unwrap();
            assert_eq!(std::fs::read(&dest).unwrap(), body);
        }
        assert_eq!(names_in(&dir.path().join("sub")), ["large", "small"]);
        // A name that is taken is left as it is: the landing fails.
        let taken = dir.path().join("sub/small");
        let before = std::fs::read(&taken).unwrap();
        let mut landing = Landing::new(&taken, Durability::Deferred).unwrap();
        landing.write(b"other").await.unwrap();
        landing
            .finish("test", meta_for(b"other"))
            .await
            .unwrap_err();
        assert_eq!(std::fs::read(&taken).unwrap(), before);
        // Spilled, then dropped: the staging file is removed.
        let dropped = dir.path().join("sub/dropped");
        let mut landing = Landing::new(&dropped, Durability::Deferred).unwrap();
        landing.write(&vec![1u8; Landing::SPILL]).await.unwrap();
        assert!(dropped.exists(), "the spill wrote the staging file");
        drop(landing);
        assert_eq!(names_in(&dir.path().join("sub")), ["large", "small"]);
    }

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
