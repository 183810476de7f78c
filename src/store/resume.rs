//! What an interrupted transfer leaves behind to resume from, and the
//! resumable download.
//!
//! - **Uploads** (S3 multipart): before its first part, a large upload is
//!   recorded in a small file of the clone's state ([`UploadRecord`]:
//!   upload id, part size, the file's size and sha256), and again as each
//!   part is acknowledged. The next upload of the same file, unchanged,
//!   lists the parts the server holds, sends only the rest and completes
//!   under its own precondition. A record whose file changed, or older
//!   than [`STALE_UPLOAD_SECS`], is aborted by a planned action. A
//!   server-side copy in parts (S3) is recorded so too, with its source;
//!   a GCS rewrite with the token of its last call.
//! - **Downloads** (S3 and GCS) of an object of at least [`PARTIAL_MIN`]
//!   bytes land in a kept partial file named for the object's key and
//!   version ([`partial_name`]), outside the cache's tree; the next run
//!   resumes with a ranged read pinned to that version and checks the
//!   whole file's sha256 before it is renamed to where a reader sees it.
//!   Another version's partial is never continued: its name differs.
//!
//! Records are hostile input like any file in the clone: one that does
//! not parse is treated as absent (the upload it named, if any, is then
//! cleared by the bucket's lifecycle rule, never completed by us).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ObjectMeta, Store, StoreError};

/// Downloads of objects at least this large land in a kept partial file.
pub const PARTIAL_MIN: u64 = 16 << 20;

/// Partial downloads untouched this long are removed by the next plan,
/// whatever they hold: an object that large not pulled for a week has
/// likely changed, and the bytes are the cache's, not the user's.
pub const PARTIAL_MAX_AGE_SECS: u64 = 7 * 24 * 60 * 60;

/// Recorded uploads older than this are aborted rather than resumed (the
/// bucket may expire them any time after; S3's own advice is a day).
pub const STALE_UPLOAD_SECS: u64 = 24 * 60 * 60;

/// One part the server acknowledged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartRecord {
    pub number: i32,
    /// The ETag the server answered (quoted as it came).
    pub etag: String,
    /// Hex MD5 of the part's bytes as sent.
    pub md5: String,
}

/// A multipart upload in progress, as recorded in the clone's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRecord {
    /// The tier path, as plans name it.
    pub path: String,
    pub key: String,
    pub upload_id: String,
    /// GCS: the resumable session's URI (a capability: never in a plan;
    /// `upload_id` is then a hash of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// A server-side copy in parts (S3 `UploadPartCopy`): the object it
    /// reads, as `bucket/key@etag`; the upload is continued only from
    /// that very version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A GCS rewrite (`source` then `bucket/key@generation`): the token
    /// its last answer gave, to continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// A GCS rewrite: the bytes its last answer said were copied.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rewritten: u64,
    pub size: u64,
    /// Hex sha256 of the file being uploaded.
    pub sha256: String,
    pub part_size: u64,
    /// Seconds since the epoch when the upload was created.
    pub started: u64,
    #[serde(default)]
    pub parts: Vec<PartRecord>,
}

impl UploadRecord {
    /// Bytes of the parts acknowledged so far (of a rewrite: copied).
    pub fn done_bytes(&self) -> u64 {
        if self.token.is_some() {
            return self.rewritten.min(self.size);
        }
        self.parts
            .iter()
            .map(|p| {
                let start = (p.number.max(1) as u64 - 1) * self.part_size;
                self.part_size.min(self.size.saturating_sub(start))
            })
            .sum()
    }

    /// Whether it is older than [`STALE_UPLOAD_SECS`] at `now`.
    pub fn is_stale(&self, now: u64) -> bool {
        now.saturating_sub(self.started) > STALE_UPLOAD_SECS
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The record file of the upload of `path` (a tier path) in `dir`.
pub fn record_file(dir: &Path, path: &str) -> PathBuf {
    let id = crate::fsutil::sha256_bytes(path.as_bytes());
    dir.join(format!("{}.json", &id[..16]))
}

/// Every record in `dir` that parses, sorted by path. A missing
/// directory has none.
pub fn read_records(dir: &Path) -> Vec<UploadRecord> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut records: Vec<UploadRecord> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".json")))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
        .collect();
    records.sort_by(|a, b| a.path.cmp(&b.path));
    records
}

/// The record of one upload: read before it starts, written (atomically)
/// before its first part and after each part, removed when it completes
/// or is aborted.
#[derive(Debug, Clone)]
pub struct UploadJournal {
    file: PathBuf,
    path: String,
}

impl UploadJournal {
    /// The journal of the upload of `path` (a tier path) in `dir`.
    pub fn new(dir: &Path, path: &str) -> UploadJournal {
        UploadJournal {
            file: record_file(dir, path),
            path: path.to_string(),
        }
    }

    /// The tier path uploaded.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The upload recorded for this path, if one parses.
    pub fn read(&self) -> Option<UploadRecord> {
        let bytes = std::fs::read(&self.file).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    pub fn save(&self, record: &UploadRecord) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(record).expect("a record serialises");
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        crate::fsutil::atomic_write(&self.file, &bytes).map_err(|e| StoreError::io(&self.file, e))
    }

    /// Forgets the upload (done or aborted). A record already gone is fine.
    pub fn clear(&self) -> Result<(), StoreError> {
        match std::fs::remove_file(&self.file) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(&self.file, e)),
        }
    }
}

/// The partial file's name for `key` at `version`: both hashed, so no
/// key or version (hostile input) shapes a path.
pub fn partial_name(key: &str, version: &str) -> String {
    let k = crate::fsutil::sha256_bytes(key.as_bytes());
    let v = crate::fsutil::sha256_bytes(version.as_bytes());
    format!("{}-{}.part", &k[..16], &v[..16])
}

/// Whether `name` is one [`partial_name`] gives (a plan file naming
/// anything else is refused, and nothing else is ever removed).
pub fn is_partial_name(name: &str) -> bool {
    let hex = |s: &str| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
    name.strip_suffix(".part")
        .and_then(|stem| stem.split_once('-'))
        .is_some_and(|(k, v)| hex(k) && hex(v))
}

/// Removes the partial download `name` from `dir`, under its key's lock
/// (the name's first 16 characters are the key's hash): never one a
/// download is writing. Already gone is fine; anything but a plain file
/// is left, as an error.
pub fn remove_partial(dir: &Path, name: &str) -> Result<(), StoreError> {
    let path = dir.join(name);
    if !is_partial_name(name) {
        return Err(StoreError::io(
            &path,
            std::io::Error::other("not a partial download's name"),
        ));
    }
    let _held = lock_partials(dir, &name[..16])?;
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(&path, e)),
        Ok(m) if !m.file_type().is_file() => Err(StoreError::io(
            &path,
            std::io::Error::other("not a plain file; remove it"),
        )),
        Ok(_) => match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io(&path, e)),
            _ => Ok(()),
        },
    }
}

/// Holds the lock of one key's partial downloads (any version): the
/// file `partial-locks/<key_hash>.lock` beside `dir`, where `key_hash` is
/// the first 16 characters of the key's [`partial_name`]s. Waits for
/// whoever holds it; the lock goes with the returned file.
fn lock_partials(dir: &Path, key_hash: &str) -> Result<std::fs::File, StoreError> {
    let locks = dir.with_file_name("partial-locks");
    std::fs::create_dir_all(&locks).map_err(|e| StoreError::io(&locks, e))?;
    let lock = locks.join(format!("{key_hash}.lock"));
    crate::fsutil::lock_file(&lock).map_err(|e| StoreError::io(&lock, e))
}

/// The bytes a partial download of `key` at `version` holds in `dir`
/// (`None`: there is none, or it is not a plain file).
pub fn partial_len(dir: &Path, key: &str, version: &str) -> Option<u64> {
    let m = std::fs::symlink_metadata(dir.join(partial_name(key, version))).ok()?;
    m.file_type().is_file().then_some(m.len())
}

/// The other versions' partial files of `key` in `dir` (the object was
/// replaced since they were started: never continued).
fn other_partials(dir: &Path, key: &str, version: &str) -> Vec<PathBuf> {
    let own = partial_name(key, version);
    let k = &own[..17];
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(k) && n.ends_with(".part") && n != own)
        })
        .map(|e| e.path())
        .collect()
}

/// A body read from some offset on, a chunk at a time.
pub type Chunks =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<bytes::Bytes, StoreError>> + Send>>;

/// A ranged read: the object's sha256 metadata as the answer gave it
/// (S3 sends it with every read; GCS listings carry it instead), and the
/// bytes.
pub struct Ranged {
    pub sha256: Option<String>,
    pub body: Chunks,
}

/// How many times a body that broke off after making progress is read
/// again from where it stopped, within one download.
const BREAKS: u32 = 5;

/// Whether `known` is downloaded through a kept partial file.
pub fn resumable(known: &ObjectMeta) -> bool {
    // An object stored compressed has no ranges of what the cache holds.
    known.size >= PARTIAL_MIN && !known.content_encoded
}

/// Downloads `known` (a [`resumable`] object at the version a plan saw)
/// into `dir`'s partial file, continuing what an earlier run left there,
/// then renames it to `dest` once its size and sha256 are the object's
/// (the sha256 the listing gave, else the one the read's answer gave).
/// Returns `None` when the store cannot read ranges, the version is gone
/// (replaced or deleted since it was listed), or the object has no
/// sha256 to check the whole against: the partial is then removed and
/// the caller downloads the object as it is now, whole.
pub async fn get_resumable(
    store: &dyn Store,
    known: &ObjectMeta,
    dir: &Path,
    dest: &Path,
) -> Result<Option<ObjectMeta>, StoreError> {
    let (_held, partial) = take_partial(known, dir).await?;
    // Resumed at most once from what is there; a whole file that fails
    // its check is read again from byte 0, once.
    let mut expected = known.sha256.clone();
    let at = Partial {
        store,
        known,
        path: &partial,
    };
    let outcome = match at.attempt(dest, false, &mut expected).await? {
        Attempt::Afresh => at.attempt(dest, true, &mut expected).await?,
        outcome => outcome,
    };
    Ok(match outcome {
        Attempt::Landed(meta) => Some(meta),
        // A fresh attempt that fails its check is an error, never another
        // attempt; either way the caller may read the object whole.
        Attempt::Whole | Attempt::Afresh => None,
    })
}

/// Reads `known` (a [`resumable`] object) onto `dir`'s partial file
/// ahead of the download that lands it: a `data get` does this outside
/// the cache's lock, so reads of different names do not wait on each
/// other's transfers; the download under the lock ([`get_resumable`])
/// then finds the file whole, checks it and renames it. Where it cannot
/// be resumed, this reads nothing and the download reads it whole.
pub async fn prefetch(store: &dyn Store, known: &ObjectMeta, dir: &Path) -> Result<(), StoreError> {
    if !resumable(known) {
        return Ok(());
    }
    let (_held, partial) = take_partial(known, dir).await?;
    let at = Partial {
        store,
        known,
        path: &partial,
    };
    at.fill(&mut known.sha256.clone()).await
}

/// The partial file of `known` in `dir`, held by this process alone (the
/// lock goes with the returned file): two downloads of one object (two
/// `data get`, or one during a hydrating pull) would otherwise append to,
/// truncate and rename one partial file between them. Partials of its
/// other versions are removed.
async fn take_partial(
    known: &ObjectMeta,
    dir: &Path,
) -> Result<(std::fs::File, PathBuf), StoreError> {
    std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    let (locked, key_hash) = (
        dir.to_path_buf(),
        partial_name(&known.key, &known.version)[..16].to_string(),
    );
    let held = tokio::task::spawn_blocking(move || lock_partials(&locked, &key_hash))
        .await
        .map_err(|e| StoreError::task("waiting for a partial download", e))??;
    for stale in other_partials(dir, &known.key, &known.version) {
        let _ = std::fs::remove_file(stale);
    }
    let partial = dir.join(partial_name(&known.key, &known.version));
    // A link or directory under the name is not ours to continue.
    if let Ok(m) = std::fs::symlink_metadata(&partial)
        && !m.file_type().is_file()
    {
        return Err(StoreError::io(
            &partial,
            std::io::Error::other("not a plain file; remove it"),
        ));
    }
    Ok((held, partial))
}

/// What checking a whole partial file found.
enum Verdict {
    /// Nothing can check it (no sha256, no usable ETag).
    Unchecked,
    Matches,
    /// What failed: the check, what it expected, what it found.
    Differs(&'static str, String, String),
}

/// How a whole partial file of an object with no sha256 (another tool's,
/// on S3) is checked: against the ETag it was read at, the MD5 of a
/// single-part upload or the MD5 of the parts' MD5s of a multipart one
/// (the part sizes uploaders use tried in turn).
enum EtagCheck {
    Md5(crate::digest::Md5),
    /// The ETag and the part sizes that could have made it for the
    /// object's size.
    Multipart(crate::digest::MultipartEtag, Vec<u64>),
}

impl EtagCheck {
    fn of(known: &ObjectMeta) -> Option<EtagCheck> {
        crate::digest::Md5::from_etag(&known.version)
            .map(EtagCheck::Md5)
            .or_else(|| {
                let etag = crate::digest::MultipartEtag::from_etag(&known.version)?;
                let swamp_part = crate::store::parts::part_size(known.size);
                let sizes = etag.part_sizes(known.size, swamp_part);
                (!sizes.is_empty()).then_some(EtagCheck::Multipart(etag, sizes))
            })
    }

    /// `None` when the file at `path` (of sha256 `streamed`, as it came)
    /// is what the ETag says; else what failed, expected and found.
    fn mismatch(
        &self,
        path: &Path,
        streamed: &str,
    ) -> Result<Option<(&'static str, String, String)>, StoreError> {
        let io = |e| StoreError::io(path, e);
        let (sha, algorithm, expected, found) = match self {
            EtagCheck::Md5(md5) => {
                let (sha, found) = crate::fsutil::sha256_md5_file(path).map_err(io)?;
                (sha, "md5", md5.hex(), crate::digest::Md5(found).hex())
            }
            EtagCheck::Multipart(etag, sizes) => {
                let (sha, parts) = crate::fsutil::sha256_and_part_md5s(path, sizes).map_err(io)?;
                let etags: Vec<_> = parts
                    .iter()
                    .map(|p| crate::digest::MultipartEtag::of_parts(p))
                    .collect();
                // The one that matches, else the first part size's.
                let found = etags
                    .iter()
                    .find(|e| *e == etag)
                    .or(etags.first())
                    .map_or(String::new(), |e| e.to_string());
                (sha, "multipart etag", etag.to_string(), found)
            }
        };
        // The file must still hold the bytes that came.
        if !hex::encode(sha).eq_ignore_ascii_case(streamed) {
            return Ok(Some(("sha256", streamed.to_string(), hex::encode(sha))));
        }
        Ok((expected != found).then_some((algorithm, expected, found)))
    }
}

/// What one attempt at a partial download came to.
enum Attempt {
    /// Verified and renamed into place.
    Landed(ObjectMeta),
    /// The caller reads the object whole (the partial file is gone).
    Whole,
    /// What an earlier run left failed the check: read again from byte 0.
    Afresh,
}

/// How a body read onto the partial file ended.
enum Appended {
    /// It ended, or broke off with this error.
    Ended(Option<StoreError>),
    /// It sent more than the object holds.
    TooMuch,
}

/// One object's partial download in `path`.
struct Partial<'a> {
    store: &'a dyn Store,
    known: &'a ObjectMeta,
    path: &'a Path,
}

impl Partial<'_> {
    /// [`open_partial`], off the async threads.
    async fn open(&self, fresh: bool) -> Result<(tokio::fs::File, u64, sha2::Sha256), StoreError> {
        let partial = self.path.to_path_buf();
        let size = self.known.size;
        tokio::task::spawn_blocking(move || open_partial(&partial, size, fresh))
            .await
            .map_err(|e| StoreError::task("reading a partial download", e))?
    }

    /// Reads the rest of the object onto the partial file and makes it
    /// durable, leaving the check and the rename to [`Partial::attempt`].
    async fn fill(&self, expected: &mut Option<String>) -> Result<(), StoreError> {
        use tokio::io::AsyncWriteExt;
        let (mut file, mut at, mut hasher) = self.open(false).await?;
        self.read_rest(&mut file, &mut at, &mut hasher, expected)
            .await?;
        let io = |e| StoreError::io(self.path, e);
        file.flush().await.map_err(io)?;
        file.sync_all().await.map_err(io)
    }

    /// Reads the rest of the object onto the partial file (all of it when
    /// `fresh`), checks it whole and renames it to `dest`.
    async fn attempt(
        &self,
        dest: &Path,
        fresh: bool,
        expected: &mut Option<String>,
    ) -> Result<Attempt, StoreError> {
        use sha2::Digest;
        use tokio::io::AsyncWriteExt;
        let (mut file, mut at, mut hasher) = self.open(fresh).await?;
        let resumed_from = at;
        let whole = !self
            .read_rest(&mut file, &mut at, &mut hasher, expected)
            .await?;
        let io = |e| StoreError::io(self.path, e);
        if !whole {
            file.flush().await.map_err(io)?;
            file.sync_all().await.map_err(io)?;
        }
        drop(file);
        let found = hex::encode(hasher.finalize());
        if whole {
            let _ = std::fs::remove_file(self.path);
            return Ok(Attempt::Whole);
        }
        let verdict = self.check(expected.as_deref(), &found)?;
        if let Verdict::Unchecked = verdict {
            let _ = std::fs::remove_file(self.path);
            return Ok(Attempt::Whole);
        }
        if let Verdict::Differs(algorithm, expected, found) = verdict {
            let _ = std::fs::remove_file(self.path);
            // What an earlier run left may be what failed: once, whole.
            if !fresh && resumed_from > 0 {
                return Ok(Attempt::Afresh);
            }
            return Err(StoreError::Integrity {
                key: self.known.key.clone(),
                algorithm,
                expected,
                found,
            });
        }
        // The hash is of the bytes as they came; the file must hold just
        // them. Appends only, so anything that cut the file meanwhile
        // left it short.
        let len = std::fs::symlink_metadata(self.path)
            .map_err(|e| StoreError::io(self.path, e))?
            .len();
        if len != self.known.size {
            let _ = std::fs::remove_file(self.path);
            // Once more, whole; cut again, it is an error.
            if !fresh {
                return Ok(Attempt::Afresh);
            }
            return Err(StoreError::Integrity {
                key: self.known.key.clone(),
                algorithm: "size",
                expected: self.known.size.to_string(),
                found: format!("{len} (the partial file was changed while it was written)"),
            });
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| StoreError::io(parent, e))?;
        }
        std::fs::rename(self.path, dest).map_err(|e| StoreError::io(dest, e))?;
        Ok(Attempt::Landed(ObjectMeta {
            sha256: Some(found),
            ..self.known.clone()
        }))
    }

    /// Checks the whole partial file, of sha256 `found` as it came: by the
    /// sha256 `expected` (the listing's, or the first answer's), else by
    /// the S3 ETag it was read at (another tool's object).
    fn check(&self, expected: Option<&str>, found: &str) -> Result<Verdict, StoreError> {
        let differs = match expected {
            Some(expected) => (!found.eq_ignore_ascii_case(expected))
                .then(|| ("sha256", expected.to_string(), found.to_string())),
            None => match EtagCheck::of(self.known) {
                Some(check) => check.mismatch(self.path, found)?,
                None => return Ok(Verdict::Unchecked),
            },
        };
        Ok(match differs {
            Some((algorithm, expected, found)) => Verdict::Differs(algorithm, expected, found),
            None => Verdict::Matches,
        })
    }

    /// Reads the object from `at` to its end onto `file`, again from where
    /// it stopped when a body breaks off after making progress. `false`:
    /// it cannot be resumed (no sha256 to check the whole against, no
    /// ranges, the version gone, or a server that ignored the range), and
    /// the caller reads the object as it is now, whole.
    async fn read_rest(
        &self,
        file: &mut tokio::fs::File,
        at: &mut u64,
        hasher: &mut sha2::Sha256,
        expected: &mut Option<String>,
    ) -> Result<bool, StoreError> {
        let known = self.known;
        let mut breaks = 0;
        while *at < known.size {
            let body = match self.store.get_range(known, *at).await {
                Ok(Some(ranged))
                    if expected.is_some()
                        || ranged.sha256.is_some()
                        || EtagCheck::of(known).is_some() =>
                {
                    *expected = expected.take().or(ranged.sha256);
                    ranged.body
                }
                Ok(_)
                | Err(StoreError::PreconditionFailed { .. } | StoreError::NotFound { .. }) => {
                    return Ok(false);
                }
                Err(e) => return Err(e),
            };
            let before = *at;
            match self.append(body, file, at, hasher).await? {
                // More than the rest: a server that ignored the range sends
                // the whole object (GCS's client shows no status to tell).
                // What it appended goes with the partial file; the caller
                // reads the object whole, checking its size again.
                Appended::TooMuch if before > 0 => return Ok(false),
                Appended::TooMuch => {
                    return Err(StoreError::Integrity {
                        key: known.key.clone(),
                        algorithm: "size",
                        expected: known.size.to_string(),
                        found: format!("more than {}", known.size),
                    });
                }
                Appended::Ended(None) if *at < known.size => {
                    return Err(StoreError::Unreachable {
                        target: self.store.describe(),
                        message: format!(
                            "download of `{}` ended at byte {at} of {}",
                            known.key, known.size
                        ),
                    });
                }
                Appended::Ended(None) => {}
                Appended::Ended(Some(e)) if *at > before && breaks < BREAKS && e.is_transient() => {
                    breaks += 1
                }
                Appended::Ended(Some(e)) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Appends `body` to `file` as it comes, hashing it and counting `at`.
    async fn append(
        &self,
        mut body: Chunks,
        file: &mut tokio::fs::File,
        at: &mut u64,
        hasher: &mut sha2::Sha256,
    ) -> Result<Appended, StoreError> {
        use sha2::Digest;
        use tokio::io::AsyncWriteExt;
        while let Some(chunk) = futures_util::StreamExt::next(&mut body).await {
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) => return Ok(Appended::Ended(Some(e))),
            };
            if *at + chunk.len() as u64 > self.known.size {
                return Ok(Appended::TooMuch);
            }
            file.write_all(&chunk)
                .await
                .map_err(|e| StoreError::io(self.path, e))?;
            hasher.update(&chunk);
            *at += chunk.len() as u64;
            // Test-only: another writer cuts the file between chunks
            // (FAILPOINTS=partial-cut=1*return).
            #[cfg(feature = "failpoints")]
            if fail::eval("partial-cut", |_| ()).is_some() {
                let _ = file.flush().await;
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .open(self.path)
                    .and_then(|f| f.set_len(0));
            }
            #[cfg(feature = "failpoints")]
            if let Some(Some(n)) = fail::eval("download-partial", |arg| arg)
                && n.parse::<u64>().is_ok_and(|n| *at >= n)
            {
                let _ = file.flush().await;
                let _ = rustix::process::kill_process(
                    rustix::process::getpid(),
                    rustix::process::Signal::KILL,
                );
            }
        }
        Ok(Appended::Ended(None))
    }
}

/// Opens the partial file for appending (created if missing; emptied when
/// `fresh` or longer than the object), with the sha256 of what it holds.
fn open_partial(
    partial: &Path,
    size: u64,
    fresh: bool,
) -> Result<(tokio::fs::File, u64, sha2::Sha256), StoreError> {
    use sha2::Digest;
    use std::io::{Read, Seek};
    let io = |e| StoreError::io(partial, e);
    // Appends only: a file cut behind our back ends up short (caught
    // before the rename), never with a hole where the cut bytes were.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(partial)
        .map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let mut hasher = sha2::Sha256::default();
    if fresh || len > size {
        file.set_len(0).map_err(io)?;
    } else {
        let mut buf = vec![0u8; 1 << 20];
        let mut read = 0u64;
        while read < len {
            let n = file.read(&mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            read += n as u64;
        }
        // What was read is what is kept (a file that shrank meanwhile).
        file.set_len(read).map_err(io)?;
    }
    let at = file.seek(std::io::SeekFrom::End(0)).map_err(io)?;
    Ok((tokio::fs::File::from_std(file), at, hasher))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(size: u64, part: u64, parts: &[i32]) -> UploadRecord {
        UploadRecord {
            path: "data/x".into(),
            key: "k".into(),
            upload_id: "u".into(),
            size,
            sha256: "0".repeat(64),
            part_size: part,
            started: 100,
            parts: parts
                .iter()
                .map(|&number| PartRecord {
                    number,
                    etag: String::new(),
                    md5: String::new(),
                })
                .collect(),
            session: None,
            source: None,
            token: None,
            rewritten: 0,
        }
    }

    #[test]
    fn done_bytes_counts_a_short_last_part_as_it_is() {
        assert_eq!(record(25, 10, &[1, 2]).done_bytes(), 20);
        assert_eq!(record(25, 10, &[3]).done_bytes(), 5);
        assert_eq!(record(25, 10, &[]).done_bytes(), 0);
    }

    #[test]
    fn a_record_is_stale_after_a_day() {
        let r = record(1, 1, &[]);
        assert!(!r.is_stale(100 + STALE_UPLOAD_SECS));
        assert!(r.is_stale(101 + STALE_UPLOAD_SECS));
    }

    #[test]
    fn records_round_trip_and_garbage_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let j = UploadJournal::new(dir.path(), "data/x");
        assert_eq!(j.read(), None);
        let r = record(25, 10, &[1]);
        j.save(&r).unwrap();
        assert_eq!(j.read(), Some(r.clone()));
        assert_eq!(read_records(dir.path()), vec![r]);
        std::fs::write(record_file(dir.path(), "data/x"), b"{not json").unwrap();
        assert_eq!(j.read(), None);
        assert!(read_records(dir.path()).is_empty());
        j.clear().unwrap();
        j.clear().unwrap();
    }

    #[test]
    fn partial_names_are_hashes_of_key_and_version() {
        let a = partial_name("../../etc/passwd", "v1");
        assert!(is_partial_name(&a), "{a}");
        for bad in [
            "../x.part",
            "0123456789abcdef.part",
            "0123456789abcdef-0123456789abcdeg.part",
            "x",
        ] {
            assert!(!is_partial_name(bad), "{bad}");
        }
        assert!(!a.contains('/') && a.ends_with(".part"));
        assert_ne!(a, partial_name("../../etc/passwd", "v2"));
        assert_eq!(a[..17], partial_name("../../etc/passwd", "v2")[..17]);
    }

    #[test]
    fn a_partial_is_reopened_with_the_hash_of_what_it_holds() {
        use sha2::Digest;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.part");
        std::fs::write(&p, b"hello").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let (_, at, h) = open_partial(&p, 10, false).unwrap();
            assert_eq!(at, 5);
            assert_eq!(
                h.finalize().as_slice(),
                sha2::Sha256::digest(b"hello").as_slice()
            );
            // Longer than the object: emptied.
            let (_, at, _) = open_partial(&p, 3, false).unwrap();
            assert_eq!(at, 0);
        });
    }
}
