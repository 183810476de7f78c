//! A directory used as an object store: key `a/b/c` is the file
//! `<root>/a/b/c`. Used for a `filesystem` datastore's lock and manifests
//! and for fast tests.
//!
//! - **sha256** is kept in the extended attribute `user.swamp.sha256` of the
//!   file itself (not a sidecar), so it moves with the file on rename and no
//!   extra files appear in a shared directory. On a filesystem without user
//!   xattrs (some NFS mounts) nothing is recorded: `sha256` is `None` and
//!   downloads are not verified.
//! - **version** is `size-mtime_ns-inode`: every write is a rename of a new
//!   file (new inode), and an in-place edit behind the store's back changes
//!   the mtime.
//! - **writes** are atomic: temp file in the same directory, fsync, rename,
//!   fsync of the directory. Create-only uses a no-clobber rename (`link`),
//!   so it holds even against writers that do not take the lock below.
//! - **preconditions** are checked under an exclusive `flock` on the key's
//!   parent directory, held across check-and-rename; every mutation takes
//!   it, so writers in other processes on the same host serialise too.
//!
//! All filesystem work runs on tokio's blocking pool.

use std::fs::{self, File, OpenOptions};

use crate::telemetry::{Class, Request};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use sha2::{Digest, Sha256};

use super::{Capabilities, ObjectMeta, Precondition, Store, StoreError, check_key, verify_sha256};
use crate::fsutil;

/// Prefix of the store's temp files; such names are never listed and are
/// refused as key components.
use crate::fsutil::{TEMP_PREFIX as TMP_PREFIX, is_swamp_temp};

/// Attempts at the locked write before giving up; only exceeded if the
/// directory keeps being removed under us (see [`FsStore::lock_dir`]).
const LOCK_ATTEMPTS: usize = 20;

pub(crate) struct FsStore {
    root: PathBuf,
    /// Whether its operations are a datastore's requests (reported and
    /// counted), or the repository's own state (a clone's lock).
    reported: bool,
    /// Temp files the listings walked past, by key, until taken
    /// ([`Store::temps_listed`]).
    temps: std::sync::Arc<std::sync::Mutex<BTreeMap<String, super::TempObject>>>,
}

impl FsStore {
    pub(crate) fn new(root: &Path) -> FsStore {
        FsStore {
            root: root.to_path_buf(),
            reported: true,
            temps: Default::default(),
        }
    }

    /// A directory of the repository's own state: no provider's, so its
    /// operations are no requests.
    pub(crate) fn unreported(root: &Path) -> FsStore {
        FsStore {
            reported: false,
            ..FsStore::new(root)
        }
    }

    fn path_of(&self, key: &str) -> Result<PathBuf, StoreError> {
        check_key(key)?;
        if key.split('/').any(is_swamp_temp) {
            return Err(StoreError::BadKey {
                key: key.to_string(),
                reason: format!("`{TMP_PREFIX}` names are reserved for temp files"),
            });
        }
        Ok(self.root.join(key))
    }

    fn not_found(&self, key: &str) -> StoreError {
        StoreError::NotFound {
            key: key.to_string(),
            target: self.describe(),
        }
    }

    /// Takes the exclusive lock of `dir`, creating it first when `create`.
    /// Returns `None` when `dir` does not exist and `create` is false.
    ///
    /// Deleting the last object of a directory removes the directory, so a
    /// waiter may end up holding a lock on a directory that is gone; it
    /// checks that the path still names the locked inode and starts again
    /// if not.
    fn lock_dir(&self, dir: &Path, create: bool) -> Result<Option<File>, StoreError> {
        for _ in 0..LOCK_ATTEMPTS {
            if create {
                fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
            }
            let file = match File::open(dir) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(StoreError::io(dir, e)),
            };
            file.lock().map_err(|e| StoreError::io(dir, e))?;
            let held = file.metadata().map_err(|e| StoreError::io(dir, e))?;
            match fs::metadata(dir) {
                Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                    return Ok(Some(file));
                }
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if create {
                        continue;
                    }
                    return Ok(None);
                }
                Err(e) => return Err(StoreError::io(dir, e)),
            }
        }
        Err(StoreError::KeptDisappearing {
            path: dir.to_path_buf(),
            doing: "trying to lock it".to_string(),
        })
    }

    /// Current version of the object at `path`, `None` if absent.
    fn current(&self, key: &str, path: &Path) -> Result<Option<ObjectMeta>, StoreError> {
        match open_object(path) {
            Ok(file) => Ok(Some(meta_of(key, path, &file)?)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(open_error(key, path, e)),
        }
    }

    fn check_pre(
        &self,
        key: &str,
        path: &Path,
        pre: &Precondition,
    ) -> Result<Option<ObjectMeta>, StoreError> {
        let current = self.current(key, path)?;
        let ok = match (pre, &current) {
            (Precondition::None, _) => true,
            (Precondition::CreateOnly, cur) => cur.is_none(),
            (Precondition::Matches(v), Some(cur)) => cur.version == *v,
            (Precondition::Matches(_), None) => false,
        };
        if ok {
            Ok(current)
        } else {
            Err(StoreError::PreconditionFailed {
                key: key.to_string(),
            })
        }
    }

    /// Writes `source` to `key` atomically under the directory lock,
    /// hashing it on the way. `expected_sha` (when given) must match the
    /// bytes written, so that content is never stored under a wrong hash;
    /// `mismatch(expected, found)` builds the error when it does not.
    fn write_object(
        &self,
        key: &str,
        source: &mut dyn Read,
        expected_sha: Option<&str>,
        mismatch: &dyn Fn(&str, &str) -> StoreError,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        let path = self.path_of(key)?;
        let dir = path.parent().expect("a key has a parent").to_path_buf();
        let mut source = Some(source);
        for _ in 0..LOCK_ATTEMPTS {
            let _lock = self.lock_dir(&dir, true)?;
            self.check_pre(key, &path, pre)?;
            let mut tmp = match crate::fsutil::temp_file_in(&dir) {
                Ok(t) => t,
                // A concurrent delete removed the (empty) directory between
                // our lock and here: start again.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StoreError::io(&dir, e)),
            };
            let src = source.take().expect("source is consumed once");
            let sha = copy_hashing(src, tmp.as_file_mut()).map_err(|e| StoreError::io(&path, e))?;
            if let Some(expected) = expected_sha
                && !expected.eq_ignore_ascii_case(&sha)
            {
                return Err(mismatch(expected, &sha));
            }
            set_sha_xattr(tmp.as_file(), &sha).map_err(|e| StoreError::io(tmp.path(), e))?;
            tmp.as_file()
                .sync_all()
                .map_err(|e| StoreError::io(tmp.path(), e))?;
            let file = match pre {
                Precondition::CreateOnly => tmp.persist_noclobber(&path),
                _ => tmp.persist(&path),
            }
            .map_err(|e| {
                if e.error.kind() == io::ErrorKind::AlreadyExists {
                    StoreError::PreconditionFailed {
                        key: key.to_string(),
                    }
                } else {
                    StoreError::io(&path, e.error)
                }
            })?;
            fsutil::sync_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
            return meta_of(key, &path, &file);
        }
        Err(StoreError::KeptDisappearing {
            path: dir.to_path_buf(),
            doing: format!("writing `{key}`"),
        })
    }

    fn read_verified(&self, key: &str, dest: &mut dyn Write) -> Result<ObjectMeta, StoreError> {
        let path = self.path_of(key)?;
        let mut file = match open_object(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(self.not_found(key)),
            Err(e) => return Err(open_error(key, &path, e)),
        };
        // Metadata from the same open file we read, so they agree even if
        // the key is replaced meanwhile.
        let meta = meta_of(key, &path, &file)?;
        let sha = copy_hashing(&mut file, dest).map_err(|e| StoreError::io(&path, e))?;
        verify_sha256(key, meta.sha256.as_deref(), &sha)?;
        Ok(ObjectMeta {
            sha256: Some(sha),
            ..meta
        })
    }

    fn delete_blocking(&self, key: &str, pre: &Precondition) -> Result<(), StoreError> {
        let path = self.path_of(key)?;
        let dir = path.parent().expect("a key has a parent").to_path_buf();
        let Some(_lock) = self.lock_dir(&dir, false)? else {
            return match pre {
                Precondition::Matches(_) => Err(StoreError::PreconditionFailed {
                    key: key.to_string(),
                }),
                _ => Ok(()),
            };
        };
        // CreateOnly makes no sense for a delete; treat it as unconditional.
        let pre = match pre {
            Precondition::CreateOnly => &Precondition::None,
            p => p,
        };
        self.check_pre(key, &path, pre)?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(StoreError::io(&path, e)),
        }
        // A concurrent delete in a subdirectory may prune this directory the
        // moment it is empty (it holds only its own lock): then the entry is
        // gone with it, and there is nothing left to sync.
        match fsutil::sync_dir(&dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(StoreError::io(&dir, e));
            }
            _ => {}
        }
        // Still under the lock, so a writer waiting on this directory sees
        // it gone and recreates it (see `lock_dir`).
        fsutil::remove_empty_dirs(&dir, &self.root);
        Ok(())
    }

    /// Keeps a temp file the walk passed, if under `prefix`.
    fn saw_temp(&self, entry: &walkdir::DirEntry, prefix: &str) {
        let Some(key) = entry
            .path()
            .strip_prefix(&self.root)
            .ok()
            .and_then(|rel| rel.to_str())
            .filter(|k| k.starts_with(prefix))
        else {
            return;
        };
        let Ok(meta) = entry.metadata() else { return };
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs() as i64);
        let temp = super::TempObject {
            key: key.to_string(),
            size: meta.len(),
            modified,
        };
        self.temps
            .lock()
            .expect("temps seen")
            .insert(temp.key.clone(), temp);
    }

    /// Removes the temp file at `key` if it is a plain temp file untouched
    /// for `untouched`.
    fn remove_temp_blocking(
        &self,
        key: &str,
        untouched: std::time::Duration,
    ) -> Result<(), StoreError> {
        check_key(key)?;
        let (dir, name) = key.rsplit_once('/').unwrap_or(("", key));
        if !is_swamp_temp(name) || dir.split('/').any(is_swamp_temp) {
            return Err(StoreError::BadKey {
                key: key.to_string(),
                reason: "not a temp file's name".to_string(),
            });
        }
        // No link on the way (the walk follows none either).
        let mut at = self.root.clone();
        for segment in dir.split('/').filter(|s| !s.is_empty()) {
            at.push(segment);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_dir() => {}
                Ok(_) => {
                    return Err(StoreError::Symlink {
                        key: key.to_string(),
                        path: at,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(StoreError::io(&at, e)),
            }
        }
        let path = self.root.join(key);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        let age = meta
            .modified()
            .ok()
            .and_then(|t| crate::clock::now().duration_since(t).ok())
            .unwrap_or_default();
        if !meta.file_type().is_file() || age < untouched {
            return Err(StoreError::PreconditionFailed {
                key: key.to_string(),
            });
        }
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(StoreError::io(&path, e)),
            _ => Ok(()),
        }
    }

    fn list_blocking(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError> {
        // The deepest directory that holds every match: the prefix up to its
        // last `/` (a prefix need not end at a component boundary).
        let dir_part = prefix.rfind('/').map_or("", |i| &prefix[..i]);
        if !dir_part.is_empty() {
            check_key(dir_part)?;
        }
        let base = self.root.join(dir_part);
        if !base.is_dir() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for entry in walkdir::WalkDir::new(&base).follow_links(false) {
            let entry = match entry {
                Ok(e) => e,
                // Removed while we walked: it is simply not there any more.
                Err(e) if e.io_error().map(io::Error::kind) == Some(io::ErrorKind::NotFound) => {
                    continue;
                }
                Err(e) => {
                    return Err(StoreError::CannotList {
                        path: base.to_path_buf(),
                        source: e,
                    });
                }
            };
            if !entry.file_type().is_file() {
                continue;
            }
            if is_swamp_temp(&entry.file_name().to_string_lossy()) {
                self.saw_temp(&entry, prefix);
                continue;
            }
            let rel = entry
                .path()
                .strip_prefix(&self.root)
                .expect("walk stays under root");
            let Some(key) = rel.to_str().map(str::to_owned) else {
                return Err(StoreError::NotUtf8 {
                    path: entry.path().to_path_buf(),
                });
            };
            if !key.starts_with(prefix) {
                continue;
            }
            if let Some(meta) = self.current(&key, entry.path())? {
                out.push(meta);
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Runs the blocking filesystem work of one request off the async
    /// threads, and reports it as a request (see [`crate::telemetry`]:
    /// the directory is this datastore's provider).
    async fn blocking<T, F>(&self, request: (Class, &str, &str), f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(FsStore) -> Result<T, StoreError> + Send + 'static,
    {
        let me = FsStore {
            temps: self.temps.clone(),
            ..FsStore::new(&self.root)
        };
        let started = std::time::Instant::now();
        let result = tokio::task::spawn_blocking(move || f(me))
            .await
            .map_err(|e| StoreError::task("filesystem task", e))
            .and_then(|r| r);
        if !self.reported {
            return result;
        }
        let (class, op, key) = request;
        // The answer an HTTP server would have given.
        let status = match &result {
            Ok(_) => Some(200),
            Err(StoreError::NotFound { .. }) => Some(404),
            Err(StoreError::PreconditionFailed { .. }) => Some(412),
            Err(_) => None,
        };
        let error = match (&result, status) {
            (Err(e), None) => Some(e.to_string()),
            _ => None,
        };
        Request {
            class,
            op,
            bucket: &self.root.to_string_lossy(),
            key,
            status,
            elapsed: started.elapsed(),
            bytes: None,
            error: error.as_deref(),
        }
        .sent();
        result
    }
}

#[async_trait]
impl Store for FsStore {
    fn describe(&self) -> String {
        format!("file://{}", self.root.display())
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            conditional_create: true,
            conditional_replace: true,
            conditional_delete: true,
            conditional_copy: true,
            batch_delete: false,
            server_side_copy: true,
            listing_has_sha256: true,
            delimited_listing: false,
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError> {
        let request = (Class::List, "list", prefix);
        let prefix = prefix.to_string();
        self.blocking(request, move |s| s.list_blocking(&prefix))
            .await
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        let request = (Class::Head, "head", key);
        let key = key.to_string();
        self.blocking(request, move |s| {
            let path = s.path_of(&key)?;
            s.current(&key, &path)
        })
        .await
    }

    async fn get_to_file(&self, key: &str, dest: &Path) -> Result<ObjectMeta, StoreError> {
        let request = (Class::Get, "get", key);
        let key = key.to_string();
        let dest = dest.to_path_buf();
        self.blocking(request, move |s| {
            let dir = dest.parent().filter(|p| !p.as_os_str().is_empty());
            let dir = dir.unwrap_or(Path::new("."));
            fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
            let mut tmp = crate::fsutil::temp_file_in(dir).map_err(|e| StoreError::io(dir, e))?;
            // On error `tmp` is dropped and removed: `dest` is untouched.
            let meta = s.read_verified(&key, tmp.as_file_mut())?;
            tmp.as_file()
                .sync_all()
                .map_err(|e| StoreError::io(tmp.path(), e))?;
            tmp.persist(&dest)
                .map_err(|e| StoreError::io(&dest, e.error))?;
            fsutil::sync_dir(dir).map_err(|e| StoreError::io(dir, e))?;
            Ok(meta)
        })
        .await
    }

    async fn get_bytes(&self, key: &str) -> Result<(ObjectMeta, Vec<u8>), StoreError> {
        let request = (Class::Get, "get", key);
        let key = key.to_string();
        self.blocking(request, move |s| {
            let mut buf = Vec::new();
            let meta = s.read_verified(&key, &mut buf)?;
            Ok((meta, buf))
        })
        .await
    }

    async fn put_file(
        &self,
        key: &str,
        src: &Path,
        sha256: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        let request = (Class::Put, "put", key);
        let (key, src, sha, pre) = (
            key.to_string(),
            src.to_path_buf(),
            sha256.to_string(),
            pre.clone(),
        );
        self.blocking(request, move |s| {
            let mut file = File::open(&src).map_err(|e| StoreError::io(&src, e))?;
            let mismatch = |expected: &str, found: &str| {
                StoreError::hashed_otherwise(&src, &key, found, expected)
            };
            s.write_object(&key, &mut file, Some(&sha), &mismatch, &pre)
        })
        .await
    }

    async fn put_bytes(
        &self,
        key: &str,
        bytes: Vec<u8>,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        let request = (Class::Put, "put", key);
        let (key, pre) = (key.to_string(), pre.clone());
        self.blocking(request, move |s| {
            let unreachable = |_: &str, _: &str| unreachable!("no expected hash given");
            s.write_object(&key, &mut bytes.as_slice(), None, &unreachable, &pre)
        })
        .await
    }

    async fn delete(&self, key: &str, pre: &Precondition) -> Result<(), StoreError> {
        let request = (Class::Delete, "delete", key);
        let (key, pre) = (key.to_string(), pre.clone());
        self.blocking(request, move |s| s.delete_blocking(&key, &pre))
            .await
    }

    fn temps_listed(&self) -> Vec<super::TempObject> {
        std::mem::take(&mut *self.temps.lock().expect("temps seen"))
            .into_values()
            .collect()
    }

    async fn remove_temp(
        &self,
        key: &str,
        untouched: std::time::Duration,
    ) -> Result<(), StoreError> {
        let request = (Class::Delete, "remove temp", key);
        let key = key.to_string();
        self.blocking(request, move |s| s.remove_temp_blocking(&key, untouched))
            .await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<(), StoreError> {
        let request = (Class::Delete, "delete_many", "");
        let keys = keys.to_vec();
        self.blocking(request, move |s| {
            keys.iter()
                .try_for_each(|k| s.delete_blocking(k, &Precondition::None))
        })
        .await
    }

    /// A directory store is one bucket: asked only for a copy within it
    /// (a namespace re-keyed), as `copies_server_side_to` says; of the
    /// version listed, as on S3 and GCS. One request: nothing to resume.
    async fn copy_from_bucket(
        &self,
        bucket: &str,
        from: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        _journal: Option<&super::resume::UploadJournal>,
    ) -> Result<ObjectMeta, StoreError> {
        let _ = bucket;
        self.copy_pinned(&from.key, Some(&from.version), to, pre)
            .await
    }

    async fn copy(
        &self,
        from: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        self.copy_pinned(from, None, to, pre).await
    }

    /// One request, as S3's `x-amz-copy-source-if-match`: the file opened
    /// is the version checked, so no read of it goes first.
    async fn copy_at(
        &self,
        from: &str,
        version: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<(), StoreError> {
        self.copy_pinned(from, Some(version), to, pre)
            .await
            .map(|_| ())
    }
}

impl FsStore {
    /// Copies `from` (only at `version`, when given) to `to`.
    async fn copy_pinned(
        &self,
        from: &str,
        version: Option<&str>,
        to: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        let request = (Class::Copy, "copy", from);
        let (from, to, pre) = (from.to_string(), to.to_string(), pre.clone());
        let version = version.map(str::to_string);
        self.blocking(request, move |s| {
            let src_path = s.path_of(&from)?;
            let mut file = match open_object(&src_path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(s.not_found(&from)),
                Err(e) => return Err(open_error(&from, &src_path, e)),
            };
            let src_meta = meta_of(&from, &src_path, &file)?;
            if version.as_ref().is_some_and(|v| *v != src_meta.version) {
                return Err(StoreError::PreconditionFailed { key: from });
            }
            // The recorded hash of the source must match what is copied, so
            // a corrupt source is not blessed with a fresh hash.
            let mismatch = |expected: &str, found: &str| StoreError::Integrity {
                key: from.clone(),
                algorithm: "sha256",
                expected: expected.to_string(),
                found: found.to_string(),
            };
            s.write_object(&to, &mut file, src_meta.sha256.as_deref(), &mismatch, &pre)
        })
        .await
    }
}

/// Opens an object for reading without following a symlink at the key
/// itself (a symlink in a shared datastore could point anywhere).
fn open_object(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

fn open_error(key: &str, path: &Path, e: io::Error) -> StoreError {
    if e.raw_os_error() == Some(libc::ELOOP) {
        StoreError::Symlink {
            key: key.to_string(),
            path: path.to_path_buf(),
        }
    } else {
        StoreError::io(path, e)
    }
}

fn meta_of(key: &str, path: &Path, file: &File) -> Result<ObjectMeta, StoreError> {
    let md = file.metadata().map_err(|e| StoreError::io(path, e))?;
    if !md.is_file() {
        return Err(StoreError::NotAFile {
            key: key.to_string(),
            path: path.to_path_buf(),
        });
    }
    let mtime_ns = i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec());
    Ok(ObjectMeta {
        key: key.to_string(),
        size: md.len(),
        version: format!("{}-{}-{}", md.len(), mtime_ns, md.ino()),
        sha256: get_sha_xattr(file).map_err(|e| StoreError::io(path, e))?,
        modified: Some(md.mtime()),
        md5: None,
        crc32c: None,
        content_encoded: false,
    })
}

/// Copies everything from `src` to `dst`, returning the hex sha256.
fn copy_hashing(src: &mut dyn Read, dst: &mut dyn Write) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        dst.write_all(&buf[..n])?;
    }
    dst.flush()?;
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(target_os = "linux")]
const XATTR_NAME: &std::ffi::CStr = c"user.swamp.sha256";

/// Whether an xattr error only means "this filesystem keeps none".
#[cfg(target_os = "linux")]
fn xattrs_unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOTSUP) | Some(libc::EPERM))
}

#[cfg(target_os = "linux")]
fn get_sha_xattr(file: &File) -> io::Result<Option<String>> {
    let mut buf = [0u8; 128];
    let n = match rustix::fs::fgetxattr(file, XATTR_NAME, &mut buf[..]) {
        Ok(n) => n,
        Err(e) => {
            let e = io::Error::from(e);
            if e.raw_os_error() == Some(libc::ENODATA) || xattrs_unsupported(&e) {
                return Ok(None);
            }
            return Err(e);
        }
    };
    let value = String::from_utf8_lossy(&buf[..n]).into_owned();
    Ok(Some(value))
}

#[cfg(target_os = "linux")]
fn set_sha_xattr(file: &File, sha: &str) -> io::Result<()> {
    match rustix::fs::fsetxattr(
        file,
        XATTR_NAME,
        sha.as_bytes(),
        rustix::fs::XattrFlags::empty(),
    ) {
        Ok(()) => Ok(()),
        Err(e) => {
            let e = io::Error::from(e);
            if xattrs_unsupported(&e) {
                return Ok(());
            }
            Err(e)
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn get_sha_xattr(_file: &File) -> io::Result<Option<String>> {
    Ok(None)
}

#[cfg(not(target_os = "linux"))]
fn set_sha_xattr(_file: &File, _sha: &str) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, FsStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = FsStore::new(dir.path());
        (dir, s)
    }

    #[tokio::test]
    async fn round_trip_records_sha256_in_an_xattr() {
        let (dir, s) = store();
        let m = s
            .put_bytes("p/a/b.txt", b"hello".to_vec(), &Precondition::None)
            .await
            .unwrap();
        assert_eq!(
            m.sha256.as_deref(),
            Some(fsutil::sha256_bytes(b"hello").as_str())
        );
        assert_eq!(fs::read(dir.path().join("p/a/b.txt")).unwrap(), b"hello");
        let (got, bytes) = s.get_bytes("p/a/b.txt").await.unwrap();
        assert_eq!((got, bytes), (m.clone(), b"hello".to_vec()));
        assert_eq!(s.head("p/a/b.txt").await.unwrap(), Some(m));
        assert_eq!(s.head("p/a/missing").await.unwrap(), None);
    }

    #[tokio::test]
    async fn version_changes_on_every_write() {
        let (_dir, s) = store();
        let a = s
            .put_bytes("k", b"same".to_vec(), &Precondition::None)
            .await
            .unwrap();
        let b = s
            .put_bytes("k", b"same".to_vec(), &Precondition::None)
            .await
            .unwrap();
        assert_ne!(a.version, b.version);
        let e = s
            .put_bytes("k", b"x".to_vec(), &Precondition::Matches(a.version))
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::PreconditionFailed { .. }), "{e}");
        s.put_bytes("k", b"x".to_vec(), &Precondition::Matches(b.version))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn bad_keys_are_refused_naming_the_key() {
        let (_dir, s) = store();
        for key in ["../escape", "/abs", "a\\b", "a\0b", "x/.swamp-tmp-1"] {
            let e = s
                .put_bytes(key, vec![], &Precondition::None)
                .await
                .unwrap_err();
            assert!(matches!(e, StoreError::BadKey { .. }), "{key:?}: {e}");
            assert!(e.to_string().contains(&format!("{key:?}")), "{e}");
        }
        let e = s.list("../").await.unwrap_err();
        assert!(e.to_string().contains("refusing"), "{e}");
    }

    #[tokio::test]
    async fn listing_skips_temp_files_and_symlinks_and_uses_string_prefixes() {
        let (dir, s) = store();
        for k in ["data/a/1", "data/ab/2", "data/b/3", "other/4"] {
            s.put_bytes(k, k.as_bytes().to_vec(), &Precondition::None)
                .await
                .unwrap();
        }
        fs::write(dir.path().join("data/a/.swamp-tmp-xyz"), b"partial").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("data/a/link")).unwrap();
        let keys = |v: Vec<ObjectMeta>| v.into_iter().map(|m| m.key).collect::<Vec<_>>();
        assert_eq!(
            keys(s.list("data/a").await.unwrap()),
            ["data/a/1", "data/ab/2"]
        );
        assert_eq!(keys(s.list("data/a/").await.unwrap()), ["data/a/1"]);
        assert_eq!(keys(s.list("").await.unwrap()).len(), 4);
        assert!(s.list("nothing/here").await.unwrap().is_empty());
        let e = s.head("data/a/link").await.unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
    }

    #[tokio::test]
    async fn delete_removes_empty_directories_but_not_the_root() {
        let (dir, s) = store();
        s.put_bytes("a/b/c", b"x".to_vec(), &Precondition::None)
            .await
            .unwrap();
        s.delete("a/b/c", &Precondition::None).await.unwrap();
        assert!(!dir.path().join("a").exists());
        assert!(dir.path().exists());
        // Missing: fine unconditionally, a failed precondition otherwise.
        s.delete("a/b/c", &Precondition::None).await.unwrap();
        let e = s
            .delete("a/b/c", &Precondition::Matches("1-2-3".into()))
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::PreconditionFailed { .. }));
    }

    #[tokio::test]
    async fn put_file_refuses_a_source_whose_hash_does_not_match() {
        let (dir, s) = store();
        let src = dir.path().join("src");
        fs::write(&src, b"content").unwrap();
        let e = s
            .put_file(
                "k",
                &src,
                &fsutil::sha256_bytes(b"other"),
                &Precondition::None,
            )
            .await
            .unwrap_err();
        assert!(e.to_string().contains("changed since it was hashed"), "{e}");
        assert_eq!(s.head("k").await.unwrap(), None);
    }

    #[tokio::test]
    async fn tampering_is_detected_and_dest_is_left_alone() {
        let (dir, s) = store();
        s.put_bytes("k", b"good".to_vec(), &Precondition::None)
            .await
            .unwrap();
        // Rewritten in place behind the store's back: the xattr stays.
        fs::write(dir.path().join("k"), b"evil").unwrap();
        let dest = dir.path().join("out/dest");
        let e = s.get_to_file("k", &dest).await.unwrap_err();
        assert!(matches!(e, StoreError::Integrity { .. }), "{e}");
        assert!(!dest.exists());
        assert_eq!(fs::read_dir(dir.path().join("out")).unwrap().count(), 0);
        let e = s.copy("k", "k2", &Precondition::None).await.unwrap_err();
        assert!(matches!(e, StoreError::Integrity { .. }), "{e}");
    }
}
