//! The remote side of the observed state: one listing of `<prefix>/<ns>/`,
//! mapped to tier paths, with each object's sha256 taken from the listing,
//! from the sync base (same version), or from a HEAD only where the cache
//! holds the same path and nothing else can tell whether they agree.
//!
//! Keys that would escape the cache (`..`, `.`, empty segments, a
//! backslash or NUL) are refused here, before anything is written.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::digest::{Md5, Sha256};
use crate::layout::{Tier, TierPath, is_repo_local_path, is_swamp_temp};
use crate::store::{ObjectMeta, Store, StoreError, Version};

use super::{BaseEntry, FileState, Unhydrated};

/// A remote object as the sync diff takes it: as observed.
pub type RemoteFile = RemoteObject;

/// A remote object as observed (the part that goes into the fingerprint):
/// as the listing (plus the base, or a HEAD) describes it.
///
/// 48 bytes, not 64: a listing holds a million at once (a map node of 11
/// is 176 bytes smaller), and what only some have is boxed together
/// ([`Known`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteObject {
    pub size: u64,
    pub version: Version,
    /// Last modified (seconds since the epoch), for `--conflict newer` and
    /// a conflict's report; [`NO_TIME`] when not known.
    modified: i64,
    known: Option<Box<Known>>,
}

/// [`RemoteObject::modified`] when the listing gave none (no time a
/// listing gives is this one, and none before 1970 is rendered anyway).
const NO_TIME: i64 = i64::MIN;

/// What is known of a remote object beyond its size and version, rarely:
/// one box, 8 bytes in every object, where a box each took 16.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Known {
    /// Known from the listing, a HEAD, or the cache's file the server's
    /// digest matched; never one the sync base records at this version
    /// (a converged million held it twice, 32 MB): [`RemoteObject::sha`]
    /// reads it from there.
    sha256: Option<crate::digest::Sha256>,
    /// The listing's MD5, CRC32C and encoding, kept for an object whose
    /// sha256 does not check a download alone (another tool's, or stored
    /// gzip-compressed): a download is then one request, checked by them.
    served: Option<crate::digest::Served>,
}

impl RemoteObject {
    pub fn new(size: u64, version: Version) -> RemoteObject {
        RemoteObject {
            size,
            version,
            modified: NO_TIME,
            known: None,
        }
    }

    pub fn with_sha256(mut self, sha256: Option<crate::digest::Sha256>) -> RemoteObject {
        self.set_sha256(sha256);
        self
    }

    pub fn with_served(mut self, served: Option<crate::digest::Served>) -> RemoteObject {
        self.change(|k| k.served = served);
        self
    }

    pub fn with_modified(mut self, modified: Option<i64>) -> RemoteObject {
        self.modified = modified.unwrap_or(NO_TIME);
        self
    }

    pub fn set_sha256(&mut self, sha256: Option<crate::digest::Sha256>) {
        self.change(|k| k.sha256 = sha256);
    }

    /// Its own sha256 (from the listing or a HEAD); see [`RemoteObject::sha`].
    pub fn own_sha256(&self) -> Option<&crate::digest::Sha256> {
        self.known.as_ref()?.sha256.as_ref()
    }

    pub fn served(&self) -> Option<&crate::digest::Served> {
        self.known.as_ref()?.served.as_ref()
    }

    pub fn modified(&self) -> Option<i64> {
        (self.modified != NO_TIME).then_some(self.modified)
    }

    /// Changes what is known, boxed only while anything is: setting
    /// nothing on an object that knows nothing allocates nothing (every
    /// S3 listing entry is made so).
    fn change(&mut self, f: impl FnOnce(&mut Known)) {
        match &mut self.known {
            Some(known) => {
                f(known);
                if **known == Known::default() {
                    self.known = None;
                }
            }
            None => {
                let mut known = Known::default();
                f(&mut known);
                if known != Known::default() {
                    self.known = Some(Box::new(known));
                }
            }
        }
    }

    /// The sha256 known of it: its own, or what `base` (the sync base's
    /// entry at its path) records at its version.
    pub fn sha(&self, base: Option<&super::BaseEntry>) -> Option<crate::digest::Sha256> {
        self.own_sha256()
            .copied()
            .or_else(|| base.filter(|b| b.version == self.version).map(|b| b.sha256))
    }
}

/// [`RemoteObject`] as plan files and fingerprints have always written it
/// (a missing `Option` reads as `None`).
#[derive(Serialize, Deserialize)]
struct RemoteObjectWire<V, S, D> {
    size: u64,
    version: V,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<S>,
    #[serde(skip_serializing_if = "Option::is_none")]
    served: Option<D>,
    #[serde(skip_serializing_if = "Option::is_none")]
    modified: Option<i64>,
}

impl Serialize for RemoteObject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RemoteObjectWire {
            size: self.size,
            version: &self.version,
            sha256: self.own_sha256(),
            served: self.served(),
            modified: self.modified(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for RemoteObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w =
            RemoteObjectWire::<Version, crate::digest::Sha256, crate::digest::Served>::deserialize(
                d,
            )?;
        Ok(RemoteObject::new(w.size, w.version)
            .with_sha256(w.sha256)
            .with_served(w.served)
            .with_modified(w.modified))
    }
}

/// What the remote holds under our key prefix, and the sync base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSnapshot {
    /// `s3://bucket/prefix/ns/`.
    pub url: String,
    /// `<prefix>/<ns>/` (or `<prefix>/`, or empty).
    pub key_prefix: String,
    pub files: BTreeMap<TierPath, RemoteObject>,
    /// Every object listed, including internal ones (`.namespace.json`),
    /// but not locks or doctor canaries (anything under a `.swamp/`).
    pub objects: usize,
    /// Keys at a repo-local path (the catalog `data/_catalog.db` and its
    /// sidecars): never synced, reported as conflicts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reserved: Vec<String>,
    /// Zero-byte keys ending in `/` (what the S3 and GCS consoles' "Create
    /// folder" make): never synced, never deleted, counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub folder_markers: usize,
    /// Objects this cache cannot hold as files (a key that is also a
    /// prefix, a name too long, two keys one file here): conflicts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unholdable: Vec<Unholdable>,
    /// Keys under the namespace in no tier swamp syncs (nor its own or
    /// upstream swamp's dot-files), by first path segment: listed in the
    /// plan, never synced or deleted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmanaged: Vec<Unmanaged>,
    /// The id the remote holds (`.swamp/remote-id.json`), and that
    /// object's version, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<RemoteIdentity>,
    /// Why the sync base was set aside as made with another remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_reset: Option<String>,
    /// Conditional requests the server is not known to enforce: each is
    /// preceded by a read of the object's version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prechecked: Vec<crate::store::enforced::Prechecked>,
    /// Files at least this large upload in parts (S3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multipart_threshold: Option<u64>,
    /// Version of `<key_prefix>.namespace.json`, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
    pub base: BTreeMap<TierPath, BaseEntry>,
    /// What a lazy pull recorded without downloading (from the base).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unhydrated: BTreeMap<TierPath, Unhydrated>,
    /// Clones' records of deletes they made on purpose.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete_records: Vec<super::delete_records::DeleteRecord>,
    /// Clones' notes of how far their bases have passed those records.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clone_notes: Vec<super::delete_records::CloneNote>,
    /// The team's history records (`.swamp/history/`), as listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<super::history::ListedRecord>,
    /// What this clone's own commands deleted since the last sync.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub deleted_here: BTreeMap<TierPath, crate::digest::Sha256>,
    /// Transfers to and from this remote an earlier run left part-way.
    #[serde(default, skip_serializing_if = "Interrupted::is_empty")]
    pub interrupted: Interrupted,
    /// Swamp's own objects as the listing showed them (not fingerprinted:
    /// a lock comes and goes with whoever works).
    #[serde(skip)]
    pub listed: ListedOwn,
}

impl RemoteSnapshot {
    /// The sha256 known of `object`, listed at `path`: its own, or what
    /// the base records at its version.
    pub fn sha_of(&self, path: &TierPath, object: &RemoteObject) -> Option<crate::digest::Sha256> {
        object.sha(self.base.get(path))
    }
}

/// What interrupted transfers left (see [`crate::store::resume`]): this
/// clone's multipart uploads to the remote in progress, and the cache's
/// partial downloads by file name (bytes held).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interrupted {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uploads: Vec<crate::store::resume::UploadRecord>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub partials: BTreeMap<String, u64>,
    /// Those of `partials` untouched for longer than
    /// [`crate::store::resume::PARTIAL_MAX_AGE_SECS`] when observed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub aged: std::collections::BTreeSet<String>,
    /// Temp files an interrupted write left in a directory store under
    /// the namespace, untouched for [`crate::store::TEMP_MAX_AGE`] when
    /// listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub temps: Vec<crate::store::TempObject>,
}

impl Interrupted {
    pub fn is_empty(&self) -> bool {
        self.uploads.is_empty() && self.partials.is_empty() && self.temps.is_empty()
    }

    /// Reads the upload records of `placement` and the cache's partial
    /// downloads; neither directory need exist.
    pub fn read(
        layout: &crate::layout::Layout,
        placement: &crate::config::Placement,
    ) -> Interrupted {
        let mut uploads = crate::store::resume::read_records(&layout.uploads_dir(placement));
        // A GCS session's URI is a capability: it stays in the record
        // file, out of the observation a saved plan carries.
        for u in &mut uploads {
            u.session = None;
        }
        let now = crate::clock::now();
        let max_age = std::time::Duration::from_secs(crate::store::resume::PARTIAL_MAX_AGE_SECS);
        let mut partials = BTreeMap::new();
        let mut aged = std::collections::BTreeSet::new();
        for e in std::fs::read_dir(layout.partial_dir())
            .into_iter()
            .flatten()
            .flatten()
        {
            let (Ok(name), Ok(m)) = (e.file_name().into_string(), e.metadata()) else {
                continue;
            };
            if !m.is_file() || !crate::store::resume::is_partial_name(&name) {
                continue;
            }
            if m.modified()
                .is_ok_and(|t| now.duration_since(t).is_ok_and(|d| d > max_age))
            {
                aged.insert(name.clone());
            }
            partials.insert(name, m.len());
        }
        Interrupted {
            uploads,
            partials,
            aged,
            // The remote's: its listing finds them (see `observe`).
            temps: Vec::new(),
        }
    }
}

/// The versions of swamp's own objects a listing showed, each `None` when
/// not listed: what vouches for them without a GET (see `state::seen`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedOwn {
    /// `.swamp/remote-id.json`.
    pub remote_id: Option<String>,
    /// `.swamp/lock.json`: a writer is, or was, at work.
    pub lock: Option<String>,
    /// `.swamp/moved.json`: the datastore moved away from here.
    pub moved: Option<String>,
}

/// A remote object the cache cannot hold as a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unholdable {
    pub key: String,
    /// The key it clashes with, when it is a clash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<String>,
    pub why: String,
}

/// The longest name (one path segment) and path Linux filesystems hold
/// (`NAME_MAX`, `PATH_MAX` with its NUL).
const NAME_MAX: usize = 255;
const PATH_MAX: usize = 4095;

/// Which of `files` a cache at `root` cannot hold as files: a key that is
/// also a prefix of others (`data/x` beside `data/x/1/raw`), a segment or
/// a whole path longer than the filesystem allows, and, where the
/// filesystem folds case (`case_insensitive`), two keys that would be one
/// file. Found at plan time, so nothing of it is half written at apply.
pub fn unholdable<'a>(
    files: &BTreeMap<TierPath, RemoteObject>,
    key_prefix: &str,
    root: &std::path::Path,
    case_insensitive: bool,
    local: impl IntoIterator<Item = &'a TierPath>,
) -> Vec<Unholdable> {
    let key = |p: &str| format!("{key_prefix}{p}");
    let dirs = directories_of(files);
    let mut folds = case_insensitive.then(|| CaseFolds::of_cache(local));
    let root_len = root.as_os_str().len();
    let mut out = Vec::new();
    for p in files.keys() {
        let s = p.as_str();
        let found = if dirs.contains(s) {
            let below = files
                .keys()
                .map(TierPath::as_str)
                .find(|q| q.len() > s.len() && q.starts_with(s) && q.as_bytes()[s.len()] == b'/')
                .unwrap_or(s);
            Some((
                Some(key(below)),
                "it is a file, and a directory holding other keys".to_string(),
            ))
        } else if let Some(why) = too_long(s, root_len) {
            Some((None, why))
        } else if let Some(folds) = &mut folds {
            folds.clash(s, &key(s)).map(|other| {
                (
                    Some(other),
                    "this filesystem ignores case, so both would be one file or directory"
                        .to_string(),
                )
            })
        } else {
            None
        };
        if let Some((other, why)) = found {
            out.push(Unholdable {
                key: key(s),
                other,
                why,
            });
        }
    }
    out
}

/// Every directory the keys of `files` imply.
fn directories_of(files: &BTreeMap<TierPath, RemoteObject>) -> std::collections::HashSet<&str> {
    let mut dirs = std::collections::HashSet::new();
    for p in files.keys() {
        let s = p.as_str();
        for (i, b) in s.bytes().enumerate() {
            if b == b'/' {
                dirs.insert(&s[..i]);
            }
        }
    }
    dirs
}

/// Why `path` cannot be a file in a cache whose root is `root_len` bytes
/// long: a name or the whole path longer than the filesystem allows.
fn too_long(path: &str, root_len: usize) -> Option<String> {
    if let Some(seg) = path.split('/').find(|seg| seg.len() > NAME_MAX) {
        return Some(format!(
            "a name in it is {} bytes long; the filesystem holds at most {NAME_MAX}",
            seg.len()
        ));
    }
    let len = root_len + 1 + path.len();
    (len > PATH_MAX).then(|| {
        format!(
            "its path in the cache would be {len} bytes long; the filesystem holds at most {PATH_MAX}"
        )
    })
}

/// Where case folds: each directory and name, by its folded spelling, with
/// the spelling met first and a path that has it (the cache's first: what
/// is there already is what a download would land on).
struct CaseFolds {
    spelled: std::collections::HashMap<String, (String, String)>,
}

impl CaseFolds {
    fn of_cache<'a>(local: impl IntoIterator<Item = &'a TierPath>) -> CaseFolds {
        let mut folds = CaseFolds {
            spelled: std::collections::HashMap::new(),
        };
        for p in local {
            folds.spell(p.as_str(), &|| format!("the cache's {p}"));
        }
        folds
    }

    fn spell(&mut self, s: &str, example: &dyn Fn() -> String) {
        for q in prefixes_and_self(s) {
            self.spelled
                .entry(q.to_lowercase())
                .or_insert_with(|| (q.to_string(), example()));
        }
    }

    /// What `s` (the object `key`) would be one file with; otherwise `s`
    /// is spelled for the keys after it.
    fn clash(&mut self, s: &str, key: &str) -> Option<String> {
        let clash = prefixes_and_self(s).find_map(|q| {
            self.spelled
                .get(&q.to_lowercase())
                .filter(|(spelling, _)| spelling != q)
                .map(|(_, example)| example.clone())
        });
        if clash.is_none() {
            self.spell(s, &|| key.to_string());
        }
        clash
    }
}

/// Objects under one top-level name of the namespace that is no tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unmanaged {
    /// The first segment below the key prefix, with a trailing `/` when it
    /// holds objects below it (`_index/`), bare for an object (`notes.txt`).
    pub name: String,
    pub objects: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How a listed key is taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Listed {
    /// Data in a tier.
    File(TierPath),
    /// A zero-byte "folder" key (`…/`).
    FolderMarker,
    /// Under the namespace, but in no tier: the first segment.
    Unmanaged(String),
    /// Not ours to sync or report: swamp's and upstream's internal files
    /// (dot-names), temp files, another namespace, outside the prefix.
    Other,
}

/// The id a remote holds at `<prefix>/<ns>/.swamp/remote-id.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteIdentity {
    pub id: String,
    pub version: String,
}

/// The body of `.swamp/remote-id.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteIdBody {
    pub id: String,
}

/// Reads the remote's id (`None`: it has none, or one no swamp wrote).
pub async fn read_identity(
    store: &dyn Store,
    key: &str,
) -> Result<Option<RemoteIdentity>, StoreError> {
    match store.get_bytes(key).await {
        Ok((meta, bytes)) => Ok(serde_json::from_slice::<RemoteIdBody>(&bytes)
            .ok()
            .map(|b| RemoteIdentity {
                id: b.id,
                version: meta.version,
            })),
        Err(StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "refusing remote object `{key}`: {reason}; nothing was written. Remove or rename it in the bucket"
    )]
    HostileKey { key: String, reason: String },
}

/// Maps a listed key to a tier path: `Ok(None)` for keys that are not
/// ours to sync (internal files, another namespace's directory).
pub fn tier_path_of(key: &str, key_prefix: &str) -> Result<Option<TierPath>, RemoteError> {
    Ok(match classify(key, 1, key_prefix, false)? {
        Listed::File(p) => Some(p),
        _ => None,
    })
}

/// Takes a listed key of `size` bytes: data, a folder marker, unmanaged,
/// or none of ours. `namespaced`: everything under the prefix belongs to
/// this namespace (a solo prefix also holds other namespaces' directories,
/// which are not unmanaged keys of ours).
pub fn classify(
    key: &str,
    size: u64,
    key_prefix: &str,
    namespaced: bool,
) -> Result<Listed, RemoteError> {
    let hostile = |reason: &str| RemoteError::HostileKey {
        key: key.to_string(),
        reason: reason.to_string(),
    };
    let Some(rel) = key.strip_prefix(key_prefix) else {
        return Ok(Listed::Other);
    };
    if size == 0 && rel.ends_with('/') && !rel.starts_with('/') {
        return Ok(Listed::FolderMarker);
    }
    if key.contains('\\') || key.contains('\0') {
        return Err(hostile("it contains a backslash or NUL"));
    }
    if rel.starts_with('/') {
        return Err(hostile("it would be an absolute path"));
    }
    if rel.split('/').any(|s| s == ".." || s == ".") {
        return Err(hostile(
            "it contains `..` or `.` and would land outside the cache",
        ));
    }
    let first = rel.split('/').next().unwrap_or("");
    if first.starts_with('.') {
        // `.namespace.json`, `.swamp/lock.json`, upstream's
        // `.datastore-index.json`: internal, never data.
        return Ok(Listed::Other);
    }
    if Tier::parse(first).is_none() {
        // In a solo prefix, most likely another namespace's directory.
        return Ok(if namespaced {
            Listed::Unmanaged(if rel.len() > first.len() {
                format!("{first}/")
            } else {
                first.to_string()
            })
        } else {
            Listed::Other
        });
    }
    if rel.split('/').any(is_swamp_temp) {
        // An interrupted write's leftover another tool (or an old swamp)
        // uploaded: never data, never downloaded, never deleted.
        return Ok(Listed::Other);
    }
    TierPath::parse(rel)
        .map(Listed::File)
        .map_err(|e| hostile(&e.to_string()))
}

/// A path's directories, outermost first, then the path itself.
fn prefixes_and_self(s: &str) -> impl Iterator<Item = &str> {
    s.match_indices('/')
        .map(|(i, _)| &s[..i])
        .chain(std::iter::once(s))
}

/// What a server says of an object's content without swamp's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerDigest {
    /// A single-part S3 ETag, a GCS md5Hash.
    Md5(crate::digest::Md5),
    /// An S3 multipart ETag.
    Multipart(crate::digest::MultipartEtag),
}

/// Whether the cache's file at a tier path, as the caller observed it (the
/// [`FileState`] given), has the content a server digest names (`false`:
/// it has not, it is another file now, or it cannot be told).
pub type LocalMatch<'a> = dyn FnMut(&TierPath, &FileState, ServerDigest) -> bool + 'a;

/// How many levels below a namespace its listing is split at, and how many
/// of its parts are listed at once (see [`crate::store::list_split`]).
const LIST_LEVELS: u32 = 2;
const LIST_CONCURRENCY: usize = 16;

/// Lists the remote under `key_prefix` and resolves sha256s.
///
/// `head_all`: resolve every sha256 (a HEAD per object the listing and the
/// base cannot vouch for), for draining a source whose objects get re-keyed.
/// `namespaced`: the prefix is one namespace's (see [`classify`]).
/// `local_match`: whether the cache's file at a path has the content the
/// server's digest names, asked only for an object without sha256
/// metadata whose digest (single-part S3 ETag or GCS md5Hash, or an S3
/// multipart ETag) and size could show it identical to that file: then
/// the object is known to hold the file's sha256, with no request.
#[allow(clippy::too_many_arguments)]
pub async fn observe_remote(
    store: &dyn Store,
    url: String,
    key_prefix: &str,
    namespaced: bool,
    // Its paths the cache's (`SyncBase::load_sharing`).
    base: BTreeMap<TierPath, BaseEntry>,
    local: &BTreeMap<TierPath, FileState>,
    head_all: bool,
    local_match: &mut LocalMatch<'_>,
) -> Result<RemoteSnapshot, RemoteError> {
    let names = Names::new(key_prefix, namespaced);
    // Tiers and their first level are paged side by side: a namespace of
    // 250,000 objects is hundreds of pages, one after another otherwise.
    // Each page is classified as it comes: the listing's metadata is never
    // held whole.
    let pages =
        crate::store::list_split_parts(store, key_prefix, LIST_LEVELS, LIST_CONCURRENCY, |page| {
            Page::of(page, &names, local, &base, head_all)
        })
        .await?
        .into_iter()
        .flatten()
        .collect::<Result<Vec<Page>, RemoteError>>()?;
    // The pages' findings together, their files as runs for one map.
    let mut listed = Page::default();
    let mut runs = Vec::with_capacity(pages.len());
    for page in pages {
        runs.push(listed.absorb(page));
    }
    let mut files = super::merged_map(runs);
    let unknown = resolve_pending(
        std::mem::take(&mut listed.pending),
        &mut files,
        local,
        local_match,
    );
    let Page {
        objects,
        manifest,
        own,
        mut reserved,
        folder_markers,
        unmanaged,
        delete_records,
        clone_notes,
        history,
        ..
    } = listed;
    reserved.sort();
    head_unknown(store, &unknown, &mut files).await?;
    Ok(RemoteSnapshot {
        url,
        key_prefix: key_prefix.to_string(),
        files,
        objects,
        reserved,
        folder_markers,
        unholdable: Vec::new(),
        unmanaged: unmanaged
            .into_iter()
            .map(|(name, objects)| Unmanaged { name, objects })
            .collect(),
        identity: None,
        base_reset: None,
        prechecked: Vec::new(),
        multipart_threshold: None,
        manifest,
        base,
        unhydrated: BTreeMap::new(),
        delete_records,
        clone_notes,
        history,
        deleted_here: BTreeMap::new(),
        interrupted: Interrupted::default(),
        listed: own,
    })
}

/// The pending files' sha256s that the cache's files vouch for (an object
/// another tool wrote is identical to the cache's file when the server's
/// digest of it is the file's); the rest, as (path, key) in key order, need
/// a HEAD.
fn resolve_pending(
    pending: Vec<Pending>,
    files: &mut BTreeMap<TierPath, RemoteObject>,
    local: &BTreeMap<TierPath, FileState>,
    local_match: &mut LocalMatch<'_>,
) -> Vec<(TierPath, String)> {
    let mut unknown = Vec::new();
    for Pending { path, key, digest } in pending {
        let Some(object) = files.get_mut(&path) else {
            continue;
        };
        if let Some(digest) = digest
            && let Some(file) = local.get(&path)
            && local_match(&path, file, digest)
        {
            object.set_sha256(Some(file.sha256));
        } else {
            unknown.push((path, key));
        }
    }
    // Listed in key order before: the HEADs go out in that order still.
    unknown.sort();
    unknown
}

/// Asks the server for the sha256 of each unknown object, a few at a time
/// (only the ambiguous ones get a HEAD); an object replaced meanwhile keeps
/// its sha256 unknown.
async fn head_unknown(
    store: &dyn Store,
    unknown: &[(TierPath, String)],
    files: &mut BTreeMap<TierPath, RemoteObject>,
) -> Result<(), RemoteError> {
    let heads = futures_util::future::join_all(unknown.chunks(32).map(|chunk| async move {
        let mut out = Vec::new();
        for (path, key) in chunk {
            out.push((path.clone(), store.head(key).await));
        }
        out
    }))
    .await;
    for (path, head) in heads.into_iter().flatten() {
        if let Some(meta) = head?
            && let Some(obj) = files.get_mut(&path)
            && meta.version == obj.version
        {
            obj.set_sha256(meta.sha256.as_deref().and_then(Sha256::parse));
        }
    }
    Ok(())
}

/// The names a listing's keys are told apart by.
struct Names<'a> {
    key_prefix: &'a str,
    namespaced: bool,
    manifest: String,
    remote_id: String,
    lock: String,
    moved: String,
    /// Other clones' delete records: listed with the rest, read later (see
    /// `deliberate::read_records`).
    records: String,
    /// And the clones' notes of how far they have passed them (their keys
    /// say it all).
    notes: String,
    /// The team's history records: listed, never read by a sync.
    history: String,
}

impl Names<'_> {
    fn new(key_prefix: &str, namespaced: bool) -> Names<'_> {
        Names {
            key_prefix,
            namespaced,
            manifest: format!("{key_prefix}.namespace.json"),
            remote_id: format!("{key_prefix}.swamp/remote-id.json"),
            lock: format!("{key_prefix}.swamp/lock.json"),
            moved: crate::layout::Layout::moved_marker_key_in(key_prefix),
            records: format!("{key_prefix}.swamp/deletes/"),
            notes: format!("{key_prefix}.swamp/clones/"),
            history: format!("{key_prefix}.swamp/history/"),
        }
    }
}

/// One page of a listing, classified: what of it the snapshot keeps.
#[derive(Default)]
struct Page {
    /// Every object listed, but not locks or doctor canaries.
    objects: usize,
    /// Files in the order listed.
    files: Vec<(TierPath, RemoteObject)>,
    /// Files whose sha256 neither the listing nor the base says.
    pending: Vec<Pending>,
    manifest: Option<String>,
    own: ListedOwn,
    reserved: Vec<String>,
    folder_markers: usize,
    unmanaged: BTreeMap<String, usize>,
    delete_records: Vec<super::delete_records::DeleteRecord>,
    clone_notes: Vec<super::delete_records::CloneNote>,
    history: Vec<super::history::ListedRecord>,
}

/// A file of unknown sha256 that is to be known (the cache holds a file
/// there, or every sha256 is asked for), with its key for a HEAD and the
/// server's digest if it could show the cache's file identical to it.
struct Pending {
    path: TierPath,
    key: String,
    digest: Option<ServerDigest>,
}

impl Page {
    /// Adds `page`'s findings to these, returning its files (a run for one
    /// merged map).
    fn absorb(&mut self, mut page: Page) -> Vec<(TierPath, RemoteObject)> {
        self.objects += page.objects;
        self.manifest = self.manifest.take().or(page.manifest);
        self.own.remote_id = self.own.remote_id.take().or(page.own.remote_id);
        self.own.lock = self.own.lock.take().or(page.own.lock);
        self.own.moved = self.own.moved.take().or(page.own.moved);
        self.reserved.append(&mut page.reserved);
        self.folder_markers += page.folder_markers;
        for (name, n) in page.unmanaged {
            *self.unmanaged.entry(name).or_default() += n;
        }
        self.delete_records.append(&mut page.delete_records);
        self.clone_notes.append(&mut page.clone_notes);
        self.history.append(&mut page.history);
        self.pending.append(&mut page.pending);
        page.files
    }

    /// Keeps a clone's delete record or progress note; any other object
    /// is given back.
    fn take_bookkeeping(&mut self, meta: ObjectMeta, names: &Names<'_>) -> Option<ObjectMeta> {
        if meta
            .key
            .strip_prefix(&names.records)
            .is_some_and(|name| !name.contains('/'))
            && super::delete_records::record_stem(&meta.key).is_some()
        {
            self.delete_records
                .push(super::delete_records::DeleteRecord {
                    key: meta.key,
                    version: meta.version,
                    files: Vec::new(),
                    expired: false,
                    young: false,
                    clone: None,
                    mine: false,
                });
            return None;
        }
        if super::history::listed_id(&names.history, &meta.key).is_some() {
            self.history.push(super::history::ListedRecord {
                key: meta.key,
                version: meta.version,
                size: meta.size,
            });
            return None;
        }
        if let Some(note) =
            super::delete_records::parse_note(&names.notes, &meta.key, &meta.version, meta.modified)
        {
            self.clone_notes.push(note);
            return None;
        }
        Some(meta)
    }

    /// Keeps a file at `path`, its sha256 from its metadata or the base,
    /// else pending a HEAD when it is to be known.
    fn take_file(
        &mut self,
        path: TierPath,
        meta: ObjectMeta,
        local: &BTreeMap<TierPath, FileState>,
        base: &BTreeMap<TierPath, BaseEntry>,
        head_all: bool,
    ) {
        let (path, file) = match local.get_key_value(&path) {
            Some((shared, file)) => (shared.clone(), Some(file)),
            None => (path.share(base), None),
        };
        // Metadata that is not a sha256 (another tool's) says nothing.
        let listed = meta.sha256.as_deref().and_then(Sha256::parse);
        let recorded = base
            .get(&path)
            .filter(|b| b.version == meta.version)
            .map(|b| b.sha256);
        let sha256 = listed.or(recorded);
        // What the base records is read from there (`RemoteObject::sha`).
        let own = listed.filter(|l| Some(*l) != recorded);
        // Kept where they check what a sha256 does not, and say more than
        // the version does (an S3 single-part ETag is the MD5 already).
        let served = meta
            .served()
            .filter(|s| sha256.is_none() || s.gzip)
            .filter(|s| s.gzip || s.crc32c.is_some() || s.md5 != Md5::from_etag(&meta.version));
        // Only the ambiguous ones get a HEAD (see `observe_remote`).
        if sha256.is_none() && (head_all || file.is_some()) {
            // (Only S3 versions are ETags of the `<hex>-<parts>` form: a
            // GCS generation and a directory store's version never parse.)
            let digest = meta
                .md5
                .map(ServerDigest::Md5)
                .or_else(|| {
                    crate::digest::MultipartEtag::from_etag(&meta.version)
                        .map(ServerDigest::Multipart)
                })
                .filter(|_| !meta.content_encoded && file.is_some_and(|f| f.size == meta.size));
            self.pending.push(Pending {
                path: path.clone(),
                key: meta.key,
                digest,
            });
        }
        self.files.push((
            path,
            RemoteObject::new(meta.size, meta.version.into())
                .with_sha256(own)
                .with_served(served)
                .with_modified(meta.modified),
        ));
    }

    fn of(
        listing: Vec<ObjectMeta>,
        names: &Names<'_>,
        local: &BTreeMap<TierPath, FileState>,
        base: &BTreeMap<TierPath, BaseEntry>,
        head_all: bool,
    ) -> Result<Page, RemoteError> {
        let mut page = Page {
            // Sized once: doubling leaves pages a third empty on average.
            files: Vec::with_capacity(listing.len()),
            ..Page::default()
        };
        for meta in listing {
            // Locks and doctor canaries (`…/.swamp/…`) come and go with
            // whoever is working; counting them would make a saved plan
            // stale for nothing.
            if !meta.key.split('/').any(|seg| seg == ".swamp") {
                page.objects += 1;
            }
            if meta.key == names.manifest {
                page.manifest = Some(meta.version.clone());
            } else if meta.key == names.remote_id {
                page.own.remote_id = Some(meta.version.clone());
            } else if meta.key == names.lock {
                page.own.lock = Some(meta.version.clone());
            } else if meta.key == names.moved {
                page.own.moved = Some(meta.version.clone());
            }
            let Some(meta) = page.take_bookkeeping(meta, names) else {
                continue;
            };
            let path = match classify(&meta.key, meta.size, names.key_prefix, names.namespaced)? {
                Listed::File(path) => path,
                Listed::FolderMarker => {
                    page.folder_markers += 1;
                    continue;
                }
                Listed::Unmanaged(name) => {
                    *page.unmanaged.entry(name).or_default() += 1;
                    continue;
                }
                Listed::Other => continue,
            };
            if is_repo_local_path(&path) {
                page.reserved.push(meta.key);
                continue;
            }
            page.take_file(path, meta, local, base, head_all);
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_object_is_held_in_48_bytes_and_written_as_before() {
        // A listing holds a million of them.
        assert_eq!(std::mem::size_of::<RemoteObject>(), 48);
        let served = crate::digest::Served {
            gzip: true,
            ..Default::default()
        };
        let full = RemoteObject::new(7, "v1".into())
            .with_sha256(Some(Sha256::of(b"x")))
            .with_served(Some(served.clone()))
            .with_modified(Some(1_796_580_120));
        let json = serde_json::to_value(&full).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "size": 7,
                "version": "v1",
                "sha256": Sha256::of(b"x").to_string(),
                "served": {"gzip": true},
                "modified": 1_796_580_120,
            })
        );
        let back: RemoteObject = serde_json::from_value(json).unwrap();
        assert_eq!(back, full);
        assert_eq!(back.own_sha256(), Some(&Sha256::of(b"x")));
        assert_eq!(back.served(), Some(&served));
        assert_eq!(back.modified(), Some(1_796_580_120));
        // Nothing but size and version: written and read so, boxing nothing.
        let bare: RemoteObject = serde_json::from_str(r#"{"size": 1, "version": "v"}"#).unwrap();
        assert_eq!(bare, RemoteObject::new(1, "v".into()));
        assert!(bare.known.is_none() && bare.modified().is_none());
        assert_eq!(
            serde_json::to_string(&bare).unwrap(),
            r#"{"size":1,"version":"v"}"#
        );
        // A sha256 set and then taken away leaves nothing boxed.
        let mut o = RemoteObject::new(1, "v".into()).with_sha256(Some(Sha256::of(b"y")));
        o.set_sha256(None);
        assert!(o.known.is_none());
    }

    #[test]
    fn keys_a_filesystem_cannot_hold_are_found_naming_the_other_key() {
        let obj = RemoteObject::new(1, "v".into());
        let files: BTreeMap<TierPath, RemoteObject> = [
            "data/m/x",
            "data/m/x-y/1/raw",
            "data/m/x/1/raw",
            "data/m/X/1/raw",
            "outputs/ok.yaml",
        ]
        .into_iter()
        .map(|p| (TierPath::parse(p).unwrap(), obj.clone()))
        .chain(std::iter::once((
            TierPath::parse(&format!("outputs/{}", "n".repeat(256))).unwrap(),
            obj.clone(),
        )))
        .collect();
        let root = std::path::Path::new("/cache");
        let found = |fold: bool| -> Vec<(String, Option<String>)> {
            unholdable(&files, "p/", root, fold, [])
                .into_iter()
                .map(|u| (u.key.chars().take(30).collect(), u.other))
                .collect()
        };
        let clash = (
            "p/data/m/x".to_string(),
            Some("p/data/m/x/1/raw".to_string()),
        );
        let long = (format!("p/outputs/{}", "n".repeat(20)), None);
        assert_eq!(found(false), [clash.clone(), long.clone()]);
        // Where case folds, `X` and `x` are one directory: `data/m/X/1/raw`
        // sorts first, so `data/m/x/1/raw` is the one named.
        let folded = (
            "p/data/m/x/1/raw".to_string(),
            Some("p/data/m/X/1/raw".to_string()),
        );
        assert_eq!(found(true), [clash, folded, long]);
        // A path too long for PATH_MAX under this root.
        let deep = std::path::PathBuf::from(format!("/{}", "d/".repeat(2045)));
        assert_eq!(
            unholdable(&files, "p/", &deep, false, []).len(),
            files.len()
        );
    }

    #[test]
    fn where_case_folds_directories_and_cache_files_clash_too() {
        let obj = RemoteObject::new(1, "v".into());
        let tp = |p: &str| TierPath::parse(p).unwrap();
        let files: BTreeMap<TierPath, RemoteObject> = [
            "data/A/1/raw",
            "data/a/2/raw",
            "outputs/Report.md",
            "outputs/x.yaml",
        ]
        .into_iter()
        .map(|p| (tp(p), obj.clone()))
        .collect();
        let local = [tp("outputs/report.md"), tp("outputs/x.yaml")];
        let found: Vec<(String, Option<String>)> =
            unholdable(&files, "p/", std::path::Path::new("/c"), true, &local)
                .into_iter()
                .map(|u| (u.key, u.other))
                .collect();
        assert_eq!(
            found,
            [
                // One directory here, though the names below differ.
                (
                    "p/data/a/2/raw".to_string(),
                    Some("p/data/A/1/raw".to_string())
                ),
                // The cache's file a download would land on.
                (
                    "p/outputs/Report.md".to_string(),
                    Some("the cache's outputs/report.md".to_string())
                ),
            ]
        );
        // Where case matters, all of them can be held.
        assert!(unholdable(&files, "p/", std::path::Path::new("/c"), false, &local).is_empty());
    }

    #[test]
    fn a_plain_directory_does_not_fold_case() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!crate::fsutil::folds_case(dir.path()));
        assert!(!crate::fsutil::folds_case(&dir.path().join("not/yet")));
    }

    #[test]
    fn keys_map_to_tier_paths_and_hostile_keys_are_refused() {
        let p = "swamp/homelab/";
        assert_eq!(
            tier_path_of("swamp/homelab/data/a/1/raw", p)
                .unwrap()
                .unwrap()
                .as_str(),
            "data/a/1/raw"
        );
        assert_eq!(
            tier_path_of("swamp/homelab/.namespace.json", p).unwrap(),
            None
        );
        assert_eq!(tier_path_of("swamp/other/data/x", "swamp/").unwrap(), None);
        assert_eq!(tier_path_of("elsewhere/data/x", p).unwrap(), None);
        assert_eq!(
            tier_path_of("swamp/homelab/data/a/.swamp-tmp-x1", p).unwrap(),
            None,
            "temp files are never data"
        );
        for bad in [
            "swamp/homelab/data/../../escape",
            "swamp/homelab/../escape",
            "swamp/homelab//data/x",
            "swamp/homelab/data\\x",
            "swamp/homelab/data/./x",
        ] {
            assert!(
                matches!(tier_path_of(bad, p), Err(RemoteError::HostileKey { .. })),
                "{bad}"
            );
        }
    }
}
