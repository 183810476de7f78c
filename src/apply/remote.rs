//! Applying sync actions: uploads and downloads with bounded concurrency,
//! each checking its precondition at the moment of acting (the cache file's
//! hash; the remote object's version through a conditional request), and
//! the sync base advanced only for actions that completed.

use std::path::{Path, PathBuf};

use futures_util::StreamExt;

use crate::digest::Sha256;
use crate::fsutil;
use crate::layout::TierPath;
use crate::plan::{Action, RemoteExpect};
use crate::state::hash_cache::Stamp;
use crate::state::{BaseEntry, HashCache, Learnt, SyncBase};
use crate::store::RemoteTarget;
use crate::store::{Durability, Precondition, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum SyncActionError {
    #[error("{path}: the cache file changed since the plan was made; plan again")]
    LocalChanged { path: TierPath },
    #[error("{path}: the cache file is gone; plan again")]
    LocalGone { path: TierPath },
    #[error("{path}: a cache file appeared where the plan expected none; plan again")]
    LocalAppeared { path: TierPath },
    #[error("{path}: {} is a symlink; swamp never follows symlinks out of the cache", .link.display())]
    Symlink { path: TierPath, link: PathBuf },
    #[error(
        "{path}: downloaded content has sha256 {found}, the plan expected {expected}; nothing was written"
    )]
    Integrity {
        path: TierPath,
        expected: String,
        found: String,
    },
    #[error("{path}: {source}")]
    Store { path: TierPath, source: StoreError },
    #[error(
        "{path}: the plan needs a remote this repository's configuration no longer names; plan again"
    )]
    NoRemote { path: TierPath },
    #[error("{key}: {source}")]
    Object { key: String, source: StoreError },
    #[error(
        "the plan deletes objects of a remote this repository's configuration no longer names; plan again"
    )]
    NoSourceRemote,
    #[error("{path}: {source}")]
    Io {
        path: TierPath,
        source: std::io::Error,
    },
    #[error("{path}: the repository copy {} changed since the plan was made; plan again", .file.display())]
    RepoChanged { path: TierPath, file: PathBuf },
    #[error(
        "{path} could not be verified in the remote ({reason}); the sentinel was not published"
    )]
    NotVerified { path: TierPath, reason: String },
    #[error(
        "{path}: another sentinel, vouching for other content, was published meanwhile; nothing was overwritten"
    )]
    SentinelTaken { path: TierPath },
    #[error("{what}: cancelled mid-way ({reason}); nothing of it was kept")]
    Cancelled { what: String, reason: String },
    #[error("not started: {reason}")]
    NotStarted { reason: String },
}

impl SyncActionError {
    /// Whether the failure is about the whole remote (it is down, gone or
    /// refuses us) rather than about one file: the rest of the batch is
    /// not started, since it would only fail the same way.
    pub fn is_systemic(&self) -> bool {
        match self {
            SyncActionError::Store { source, .. } | SyncActionError::Object { source, .. } => {
                matches!(
                    source,
                    StoreError::Down { .. }
                        | StoreError::Unreachable { .. }
                        | StoreError::Unavailable { .. }
                        | StoreError::NoSuchBucket { .. }
                        | StoreError::Denied { .. }
                )
            }
            SyncActionError::Cancelled { .. } | SyncActionError::NotStarted { .. } => true,
            _ => false,
        }
    }
}

/// What a completed sync action means for the base.
pub(crate) enum BaseChange {
    Set(TierPath, BaseEntry),
    Remove(TierPath),
    Nothing,
}

/// Refuses a destination whose directories under `root` include a symlink
/// (which could point out of the cache).
fn check_no_symlink(root: &Path, path: &TierPath) -> Result<PathBuf, SyncActionError> {
    let p = root.join(path.as_str());
    // An unreadable component is left to the action's own I/O to report.
    if let Ok(Some(link)) = fsutil::symlink_below(root, &p) {
        return Err(SyncActionError::Symlink {
            path: path.clone(),
            link,
        });
    }
    Ok(p)
}

/// The sha256 of the cache file now (`None`: it does not exist), from
/// `known` when its (device, inode, size, mtime) are unchanged since it was
/// hashed, else by reading it.
fn local_sha(
    file: &Path,
    path: &TierPath,
    known: Option<&HashCache>,
) -> Result<Option<Sha256>, SyncActionError> {
    let io = |source| SyncActionError::Io {
        path: path.clone(),
        source,
    };
    match std::fs::symlink_metadata(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(io(source)),
        Ok(m) => match known.and_then(|k| k.known(crate::state::hash_cache::Stamp::of(&m))) {
            Some(sha) => Ok(Some(sha)),
            None => fsutil::sha256_file_raw(file)
                .map(|s| Some(Sha256(s)))
                .map_err(io),
        },
    }
}

/// A download that did not land leaves no directory it made: the message
/// says nothing was written, and the tree must agree.
fn prune_after_failure(file: &Path, root: &Path) {
    if let Some(parent) = file.parent() {
        fsutil::remove_empty_dirs(parent, root);
    }
}

/// Checks the sha256 of a file a download just landed (`landed`, as the
/// store hashed the bytes it wrote; read again only when the store did not
/// say) against `expected`, removing it on a mismatch. Returns its sha256.
fn verify_landed(
    file: &Path,
    path: &TierPath,
    landed: Option<String>,
    expected: Option<Sha256>,
) -> Result<Sha256, SyncActionError> {
    let got = match landed.as_deref().and_then(Sha256::parse) {
        Some(sha) => sha,
        None => Sha256(
            fsutil::sha256_file_raw(file).map_err(|source| SyncActionError::Io {
                path: path.clone(),
                source,
            })?,
        ),
    };
    if let Some(expected) = expected
        && expected != got
    {
        let _ = std::fs::remove_file(file);
        return Err(SyncActionError::Integrity {
            path: path.clone(),
            expected: expected.hex(),
            found: got.hex(),
        });
    }
    Ok(got)
}

/// The remotes an apply talks to: the target's (if remote) and each
/// source's (if remote), by source index.
pub(crate) struct Remotes<'a> {
    pub target: Option<&'a RemoteTarget>,
    pub sources: &'a [Option<RemoteTarget>],
    /// Hashes already known by (device, inode, size, mtime), so a file the
    /// plan just hashed is not read a second time to check a precondition.
    pub hashes: Option<&'a HashCache>,
    /// Where cache deletes set the file aside (`None`: removed for good).
    pub trash: Option<&'a crate::undo::Trash<'a>>,
    /// Where interrupted transfers to and from the target are kept to be
    /// resumed (`None`: not kept).
    pub resume: Option<ResumeDirs>,
}

/// See [`crate::store::resume`].
pub(crate) struct ResumeDirs {
    /// The target placement's upload records.
    pub uploads: PathBuf,
    /// The cache's partial downloads.
    pub partials: PathBuf,
}

impl Remotes<'_> {
    fn target(&self, path: &TierPath) -> Result<&RemoteTarget, SyncActionError> {
        self.target
            .ok_or_else(|| SyncActionError::NoRemote { path: path.clone() })
    }

    fn source(&self, i: usize, path: &TierPath) -> Result<&RemoteTarget, SyncActionError> {
        self.sources
            .get(i)
            .and_then(Option::as_ref)
            .ok_or_else(|| SyncActionError::NoRemote { path: path.clone() })
    }
}

/// Before a remote object is deleted or replaced: one server-side copy of
/// it into this apply's remote trash. See [`keep_in_trash`].
async fn keep_in_remote_trash(
    remote: &RemoteTarget,
    remotes: &Remotes<'_>,
    path: &TierPath,
    version: &str,
) -> Result<(), SyncActionError> {
    let Some(trash) = remotes.trash else {
        return Ok(());
    };
    keep_in_trash(remote, trash.id, path, version)
        .await
        .map_err(|source| SyncActionError::Store {
            path: path.clone(),
            source,
        })
}

/// Copies the object at `path`, pinned to `version` (the version the plan
/// saw), into apply `id`'s remote trash, create-only: a copy already there
/// is that apply's own, from a retried or resumed attempt. An object gone
/// or replaced since has nothing to keep; the delete's or write's own
/// precondition then decides.
pub(super) async fn keep_in_trash(
    remote: &RemoteTarget,
    id: &str,
    path: &TierPath,
    version: &str,
) -> Result<(), StoreError> {
    let key = crate::layout::Layout::remote_trash_key(&remote.placement, id, path);
    match remote
        .store
        .copy_at(&remote.key(path), version, &key, &Precondition::CreateOnly)
        .await
    {
        Ok(_) | Err(StoreError::PreconditionFailed { .. } | StoreError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Runs one sync action. `root` is the target's directory (the cache, for
/// a remote target).
pub(crate) async fn run(
    action: &Action,
    root: &Path,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    match action {
        Action::Upload { .. } => upload(action, root, remotes).await,
        Action::Download { .. } => download(action, root, remotes, false)
            .await
            .map(|(change, _)| change),
        Action::DeleteLocal { .. } => delete_local(action, root, remotes),
        Action::DeleteRemote { .. } => delete_remote(action, remotes).await,
        Action::RenameLocal { .. } => rename_local(action, root, remotes),
        Action::Fetch { .. } => fetch(action, root, remotes).await,
        Action::CopyRemote { .. } => copy_remote(action, remotes).await,
        Action::DeleteSourceRemote { .. } => delete_source_remote(action, remotes).await,
        Action::AbortUpload { .. } => abort_upload(action, remotes).await,
        Action::RecordBase { .. }
        | Action::RecordDeletes { .. }
        | Action::NoteProgress { .. }
        | Action::PruneRecords { .. }
        | Action::MirrorConfig { .. }
        | Action::PublishSentinel { .. }
        | Action::RemoveTemp { .. }
        | Action::RelocateTrash { .. }
        | Action::PruneTrash { .. }
        | Action::Move { .. }
        | Action::DropDuplicate { .. }
        | Action::InvalidateCatalog
        | Action::FinishMigration => Ok(BaseChange::Nothing),
    }
}

/// A store error on `path`'s object, as a sync action's error.
fn store_err(path: &TierPath) -> impl FnOnce(StoreError) -> SyncActionError + use<> {
    let path = path.clone();
    move |source| SyncActionError::Store { path, source }
}

/// Uploads a cache file under the precondition the plan saw (keeping what it replaces in the remote trash).
async fn upload(
    action: &Action,
    root: &Path,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let Action::Upload {
        path,
        sha256,
        remote: expect,
        ..
    } = action
    else {
        unreachable!("dispatched by run")
    };
    let file = check_no_symlink(root, path)?;
    match local_sha(&file, path, remotes.hashes)? {
        None => return Err(SyncActionError::LocalGone { path: path.clone() }),
        Some(found) if &found != sha256 => {
            return Err(SyncActionError::LocalChanged { path: path.clone() });
        }
        Some(_) => {}
    }
    let pre = match expect {
        RemoteExpect::Absent => Precondition::CreateOnly,
        RemoteExpect::Version { version } => Precondition::Matches(version.to_string()),
    };
    let remote = remotes.target(path)?;
    if let RemoteExpect::Version { version } = expect {
        keep_in_remote_trash(remote, remotes, path, &version.as_str()).await?;
    }
    let key = remote.key(path);
    let meta = match &remotes.resume {
        Some(dirs) => {
            let journal = crate::store::resume::UploadJournal::new(&dirs.uploads, path.as_str());
            remote
                .store
                .put_file_resumable(&key, &file, &sha256.hex(), &pre, &journal)
                .await
        }
        None => {
            remote
                .store
                .put_file(&key, &file, &sha256.hex(), &pre)
                .await
        }
    }
    .map_err(store_err(path))?;
    Ok(BaseChange::Set(
        path.clone(),
        BaseEntry {
            sha256: *sha256,
            size: meta.size,
            version: meta.version.into(),
        },
    ))
}

/// Aborts an interrupted multipart upload and forgets its record (only
/// that upload's: a record another run made meanwhile stays).
async fn abort_upload(
    action: &Action,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let Action::AbortUpload {
        path, upload_id, ..
    } = action
    else {
        unreachable!("dispatched by run")
    };
    let remote = remotes.target(path)?;
    remote
        .store
        .abort_upload(&remote.key(path), upload_id)
        .await
        .map_err(store_err(path))?;
    if let Some(dirs) = &remotes.resume {
        let journal = crate::store::resume::UploadJournal::new(&dirs.uploads, path.as_str());
        if journal.read().is_some_and(|r| r.upload_id == *upload_id) {
            journal.clear().map_err(store_err(path))?;
        }
    }
    Ok(BaseChange::Nothing)
}

/// Deletes (sets aside) a cache file, if it is still what the plan saw.
fn delete_local(
    action: &Action,
    root: &Path,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let Action::DeleteLocal { path, sha256 } = action else {
        unreachable!("dispatched by run")
    };
    let file = check_no_symlink(root, path)?;
    match local_sha(&file, path, remotes.hashes)? {
        None => {}
        Some(found) if &found != sha256 => {
            return Err(SyncActionError::LocalChanged { path: path.clone() });
        }
        Some(_) => match remotes.trash {
            Some(trash) => trash.set_aside(path).map_err(|e| SyncActionError::Io {
                path: path.clone(),
                source: std::io::Error::other(e.to_string()),
            })?,
            None => std::fs::remove_file(&file).map_err(|source| SyncActionError::Io {
                path: path.clone(),
                source,
            })?,
        },
    }
    if let Some(parent) = file.parent() {
        fsutil::remove_empty_dirs(parent, root);
    }
    Ok(BaseChange::Remove(path.clone()))
}

/// Deletes an object at the version the plan saw, kept in the remote trash first.
async fn delete_remote(
    action: &Action,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let Action::DeleteRemote { path, version } = action else {
        unreachable!("dispatched by run")
    };
    let remote = remotes.target(path)?;
    keep_in_remote_trash(remote, remotes, path, &version.as_str()).await?;
    remote
        .store
        .delete(
            &remote.key(path),
            &Precondition::Matches(version.to_string()),
        )
        .await
        .map_err(store_err(path))?;
    Ok(BaseChange::Remove(path.clone()))
}

/// Renames a cache file (a renumbered data version), never over another.
fn rename_local(
    action: &Action,
    root: &Path,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let Action::RenameLocal { path, to, sha256 } = action else {
        unreachable!("dispatched by run")
    };
    let from = check_no_symlink(root, path)?;
    let dest = check_no_symlink(root, to)?;
    match local_sha(&from, path, remotes.hashes)? {
        Some(found) if &found == sha256 => {}
        Some(_) => return Err(SyncActionError::LocalChanged { path: path.clone() }),
        None => return Err(SyncActionError::LocalGone { path: path.clone() }),
    }
    if dest.exists() {
        return Err(SyncActionError::LocalAppeared { path: to.clone() });
    }
    // A renumbered data version goes into a version directory of
    // its own.
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|source| SyncActionError::Io {
            path: to.clone(),
            source,
        })?;
    }
    std::fs::rename(&from, &dest).map_err(|source| SyncActionError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(BaseChange::Nothing)
}

/// Fetches a source remote's object into a cache path that must still be free.
async fn fetch(
    action: &Action,
    root: &Path,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let Action::Fetch {
        path,
        source,
        sha256,
        ..
    } = action
    else {
        unreachable!("dispatched by run")
    };
    let file = check_no_symlink(root, path)?;
    if local_sha(&file, path, remotes.hashes)?.is_some() {
        return Err(SyncActionError::LocalAppeared { path: path.clone() });
    }
    let from = remotes.source(*source, path)?;
    let meta = from
        .store
        .get_to_file(&from.key(path), &file)
        .await
        .map_err(store_err(path))
        .inspect_err(|_| prune_after_failure(&file, root))?;
    verify_landed(&file, path, meta.sha256, *sha256)
        .inspect_err(|_| prune_after_failure(&file, root))?;
    Ok(BaseChange::Nothing)
}

/// Copies a source remote's object to the target, server-side, create-only.
async fn copy_remote(
    action: &Action,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let Action::CopyRemote {
        path,
        source,
        sha256,
        size,
        in_cache,
        ..
    } = action
    else {
        unreachable!("dispatched by run")
    };
    let from = remotes.source(*source, path)?;
    let to = remotes.target(path)?;
    let meta = to
        .store
        .copy(&from.key(path), &to.key(path), &Precondition::CreateOnly)
        .await
        .map_err(store_err(path))?;
    // The cache copy moved earlier in this plan: both sides agree.
    Ok(if *in_cache {
        BaseChange::Set(
            path.clone(),
            BaseEntry {
                sha256: *sha256,
                size: *size,
                version: meta.version.into(),
            },
        )
    } else {
        BaseChange::Nothing
    })
}

/// Deletes a drained source remote's objects at the versions the plan saw.
async fn delete_source_remote(
    action: &Action,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let Action::DeleteSourceRemote { source, objects } = action else {
        unreachable!("dispatched by run")
    };
    let from = remotes
        .sources
        .get(*source)
        .and_then(Option::as_ref)
        .ok_or(SyncActionError::NoSourceRemote)?;
    let results = futures_util::stream::iter(objects.iter().map(|o| {
        let store = from.store.clone();
        async move {
            store
                .delete(&o.key, &Precondition::Matches(o.version.to_string()))
                .await
                .map_err(|source| SyncActionError::Object {
                    key: o.key.clone(),
                    source,
                })
        }
    }))
    .buffer_unordered(16)
    .collect::<Vec<_>>()
    .await;
    for r in results {
        r?;
    }
    Ok(BaseChange::Nothing)
}

/// Writes a record of deliberate deletes (create-only, under a fresh
/// time-ordered key after `after`, naming this `clone`) for the other
/// clones' guards, then
/// removes what `prune` names.
/// Returns the record's key, version and body (for the records cache: the
/// next plan need not read back what this run wrote).
pub(crate) async fn record_deletes(
    target: &RemoteTarget,
    clone: &str,
    files: &[crate::state::deliberate::DeletedFile],
    after: Option<&str>,
    prune: &[crate::plan::RemoteObjectRef],
) -> Result<(String, String, crate::state::deliberate::RecordBody), StoreError> {
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(crate::clock::now_secs());
    let body = crate::state::deliberate::RecordBody {
        at: crate::clock::now_rfc3339(),
        by: crate::lock::who_am_i(),
        clone: Some(clone.to_string()),
        files: files.to_vec(),
    };
    let mut bytes = serde_json::to_vec_pretty(&body).expect("a record serialises");
    bytes.push(b'\n');
    let key = crate::state::deliberate::new_record_key(&target.placement, now, after);
    let written = target
        .store
        .put_bytes(&key, bytes, &Precondition::CreateOnly)
        .await?;
    remove_at_versions(target, prune).await?;
    Ok((key, written.version, body))
}

/// Writes this clone's note that its base has passed every other clone's
/// record up to `passed` (create-only; already there is as good), then
/// removes its older notes (`replaces`) and what `prune` names.
pub(crate) async fn note_progress(
    target: &RemoteTarget,
    clone: &str,
    passed: &str,
    replaces: &[crate::plan::RemoteObjectRef],
    prune: &[crate::plan::RemoteObjectRef],
) -> Result<(), StoreError> {
    let at = crate::clock::now_rfc3339();
    let by = crate::lock::who_am_i();
    let mut bytes =
        serde_json::to_vec_pretty(&crate::state::deliberate::NoteBody { at: &at, by: &by })
            .expect("a note serialises");
    bytes.push(b'\n');
    let key = crate::state::deliberate::note_key(&target.placement, clone, passed);
    match target
        .store
        .put_bytes(&key, bytes, &Precondition::CreateOnly)
        .await
    {
        Ok(_) | Err(StoreError::PreconditionFailed { .. }) => {}
        Err(e) => return Err(e),
    }
    remove_at_versions(target, replaces).await?;
    remove_at_versions(target, prune).await
}

/// Removes each object only at the version observed: one replaced or gone
/// since is left alone.
pub(crate) async fn remove_at_versions(
    target: &RemoteTarget,
    objects: &[crate::plan::RemoteObjectRef],
) -> Result<(), StoreError> {
    for old in objects {
        match target
            .store
            .delete(&old.key, &Precondition::Matches(old.version.to_string()))
            .await
        {
            Ok(()) | Err(StoreError::NotFound { .. } | StoreError::PreconditionFailed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Copies a definition file from the repository into the cache (`root`):
/// the repository file must still have `sha256`, the cache file must be as
/// `local` says; written atomically.
pub(crate) fn mirror_config(
    repo: &Path,
    root: &Path,
    path: &TierPath,
    sha256: &Sha256,
    local: Option<Sha256>,
) -> Result<(), SyncActionError> {
    let io = |source| SyncActionError::Io {
        path: path.clone(),
        source,
    };
    let from = crate::state::managed::repo_file(repo, path).ok_or_else(|| SyncActionError::Io {
        path: path.clone(),
        source: std::io::Error::other("not a managed-config path"),
    })?;
    let dest = check_no_symlink(root, path)?;
    if local_sha(&dest, path, None)? != local {
        return Err(match local {
            None => SyncActionError::LocalAppeared { path: path.clone() },
            Some(_) => SyncActionError::LocalChanged { path: path.clone() },
        });
    }
    let meta = std::fs::symlink_metadata(&from).map_err(io)?;
    if !meta.is_file() {
        return Err(SyncActionError::RepoChanged {
            path: path.clone(),
            file: from,
        });
    }
    let bytes = std::fs::read(&from).map_err(io)?;
    if fsutil::sha256_bytes(&bytes) != *sha256 {
        return Err(SyncActionError::RepoChanged {
            path: path.clone(),
            file: from,
        });
    }
    fsutil::atomic_write(&dest, &bytes).map_err(io)
}

/// Publishes the managed-config sentinel: each object it vouches for is
/// checked in the remote first (HEAD: present, sha256 metadata as expected),
/// then the sentinel is written create-only. A sentinel that appeared
/// meanwhile is accepted only if it vouches for the same content.
///
/// Once published, the sentinel also lands in the cache (`cache_root`) and
/// in the sync base, so cache and remote agree and the next sync has
/// nothing to fetch. Sync never uploads it, so this copy vouches for
/// nothing by itself.
pub(crate) async fn publish_sentinel(
    target: &RemoteTarget,
    cache_root: &Path,
    path: &TierPath,
    sources: &[String],
    objects: &std::collections::BTreeMap<TierPath, String>,
) -> Result<BaseChange, SyncActionError> {
    use crate::state::managed::Sentinel;
    // Where it lands in the cache, checked before anything is published:
    // like every download, never through a symlink out of the cache.
    let dest = check_no_symlink(cache_root, path)?;
    let heads = futures_util::stream::iter(objects.iter().map(|(p, sha)| async move {
        let head = target.store.head(&target.key(p)).await;
        (p, sha, head)
    }))
    .buffered(16)
    .collect::<Vec<_>>()
    .await;
    for (p, sha, head) in heads {
        let not_verified = |reason: String| SyncActionError::NotVerified {
            path: p.clone(),
            reason,
        };
        match head {
            Ok(Some(meta)) if meta.sha256.as_deref() == Some(sha.as_str()) => {}
            Ok(Some(meta)) => {
                return Err(not_verified(format!(
                    "its sha256 is {}, the sentinel would say {sha}",
                    meta.sha256.as_deref().unwrap_or("unknown")
                )));
            }
            Ok(None) => return Err(not_verified("it is not in the remote".into())),
            Err(e) => return Err(not_verified(e.to_string())),
        }
    }
    let sentinel = Sentinel {
        migrated_at: crate::clock::now_rfc3339(),
        sources: sources.to_vec(),
        objects: objects.clone(),
    };
    let key = target.key(path);
    let body = sentinel.to_bytes();
    let (meta, body) =
        match target
            .store
            .put_bytes(&key, body.clone(), &Precondition::CreateOnly)
            .await
        {
            Ok(meta) => (meta, body),
            Err(StoreError::PreconditionFailed { .. }) => {
                let (meta, bytes) = target.store.get_bytes(&key).await.map_err(|source| {
                    SyncActionError::Store {
                        path: path.clone(),
                        source,
                    }
                })?;
                match Sentinel::parse(&key, &bytes) {
                    Ok(s) if s.vouches_same(sources, objects) => (meta, bytes),
                    _ => return Err(SyncActionError::SentinelTaken { path: path.clone() }),
                }
            }
            Err(source) => {
                return Err(SyncActionError::Store {
                    path: path.clone(),
                    source,
                });
            }
        };
    #[cfg(feature = "failpoints")]
    if fail::eval("sentinel-put", |_| ()).is_some() {
        super::die_for_tests();
    }
    let sha256 = Sha256::of(&body);
    crate::fsutil::atomic_write(&dest, &body).map_err(|e| SyncActionError::Io {
        path: path.clone(),
        source: e,
    })?;
    Ok(BaseChange::Set(
        path.clone(),
        BaseEntry {
            sha256,
            size: meta.size,
            version: meta.version.into(),
        },
    ))
}

/// A file landed under a staging name, to be made durable and renamed
/// into place with others (see [`commit_staged`]).
struct Staged {
    staged: PathBuf,
    dest: PathBuf,
    size: u64,
}

/// A download. With `stage`, a download of a file the cache lacks lands
/// under a swamp temp name without an fsync and is returned as [`Staged`]:
/// the caller makes a batch of them durable at once and only then renames
/// each into place, so a file at its cache path is always whole and
/// durable. A replacement lands, is fsynced and renamed on its own.
async fn download(
    action: &Action,
    root: &Path,
    remotes: &Remotes<'_>,
    stage: bool,
) -> Result<(BaseChange, Option<Staged>), SyncActionError> {
    let store_err = |path: &TierPath| {
        let path = path.clone();
        move |source| SyncActionError::Store { path, source }
    };
    let Action::Download {
        path,
        version,
        sha256,
        local,
        size,
    } = action
    else {
        unreachable!("download() is given a download");
    };
    let file = check_no_symlink(root, path)?;
    let found = local_sha(&file, path, remotes.hashes)?;
    if found != local.as_deref().copied() {
        return Err(match (found, local) {
            (None, Some(_)) => SyncActionError::LocalGone { path: path.clone() },
            (Some(_), None) => SyncActionError::LocalAppeared { path: path.clone() },
            _ => SyncActionError::LocalChanged { path: path.clone() },
        });
    }
    let remote = remotes.target(path)?;
    let stage = stage && local.is_none();
    // Replacing a cache file under undo: land beside it first (a swamp
    // temp name, so a kill leaves nothing that is data), then set the old
    // bytes aside and rename the new ones into place. A staged download
    // lands under a temp name too.
    let trash = remotes.trash.filter(|_| local.is_some());
    let landing = match (trash, stage) {
        (Some(_), _) => temp_beside(&file, "replace"),
        (None, true) => temp_beside(&file, "stage"),
        (None, false) => file.clone(),
    };
    let known = crate::store::ObjectMeta {
        key: remote.key(path),
        size: *size,
        version: version.to_string(),
        sha256: sha256.map(|s| s.hex()),
        modified: None,
        md5: None,
        content_encoded: false,
    };
    let durability = if stage {
        Durability::Deferred
    } else {
        Durability::Synced
    };
    let resumed = match &remotes.resume {
        Some(dirs) if crate::store::resume::resumable(&known) => {
            crate::store::resume::get_resumable(&*remote.store, &known, &dirs.partials, &landing)
                .await
        }
        _ => Ok(None),
    };
    let meta = match resumed {
        Ok(Some(meta)) => Ok(meta),
        Ok(None) => {
            remote
                .store
                .get_known_to_file(&known, &landing, durability)
                .await
        }
        Err(e) => Err(e),
    }
    .map_err(store_err(path))
    .inspect_err(|_| prune_after_failure(&file, root))?;
    // The plan's hash binds only the version it saw.
    let expected = sha256.filter(|_| *version == meta.version);
    let got = verify_landed(&landing, path, meta.sha256.clone(), expected)
        .inspect_err(|_| prune_after_failure(&file, root))?;
    if let Some(trash) = trash {
        let io = |source| SyncActionError::Io {
            path: path.clone(),
            source,
        };
        trash
            .set_aside(path)
            .map_err(|e| io(std::io::Error::other(e.to_string())))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&landing);
            })?;
        std::fs::rename(&landing, &file).map_err(io)?;
        if let Some(dir) = file.parent() {
            fsutil::sync_dir(dir).map_err(io)?;
        }
    }
    let change = BaseChange::Set(
        path.clone(),
        BaseEntry {
            sha256: got,
            size: meta.size,
            version: meta.version.into(),
        },
    );
    let staged = stage.then_some(Staged {
        staged: landing,
        dest: file,
        size: meta.size,
    });
    Ok((change, staged))
}

/// A swamp temp name beside `file` (`what` says why), never data, swept
/// once its writer is gone. Unique within this process (a counter, not a
/// random number: two staged downloads in one directory must never share
/// a name), and the pid tells it from other processes' names.
fn temp_beside(file: &Path, what: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    file.with_file_name(format!(
        "{}{}-{what}-{:x}",
        fsutil::TEMP_PREFIX,
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Makes a batch of staged downloads durable (one filesystem sync for all
/// their bytes) and renames each into place unless a file appeared there
/// meanwhile. Their directories are fsynced with the run's other
/// downloads ([`sync_landed_dirs`]) before any is reported complete.
/// Returns the outcome of each, by its index in the run, with the stamp
/// the file had as it was renamed (for the verifying plan: see
/// [`crate::state::Learnt`]).
fn commit_staged(batch: Vec<(usize, TierPath, Staged)>) -> Vec<(usize, Committed)> {
    let io = |path: &TierPath, e: &std::io::Error| SyncActionError::Io {
        path: path.clone(),
        source: std::io::Error::new(e.kind(), e.to_string()),
    };
    let files: Vec<&Path> = batch.iter().map(|(_, _, s)| s.staged.as_path()).collect();
    let mut parents: Vec<&Path> = files.iter().filter_map(|f| f.parent()).collect();
    parents.sort_unstable();
    parents.dedup();
    if let Err(e) = fsutil::sync_files(&parents, &files) {
        return batch
            .into_iter()
            .map(|(i, path, s)| {
                let _ = std::fs::remove_file(&s.staged);
                (i, Err(io(&path, &e)))
            })
            .collect();
    }
    batch
        .into_iter()
        .map(|(i, path, s)| {
            // Of the staged name, which only this run writes: the rename
            // keeps inode, size and mtime.
            let stamp = std::fs::symlink_metadata(&s.staged)
                .ok()
                .map(|m| Stamp::of(&m));
            match fsutil::rename_noreplace(&s.staged, &s.dest) {
                Ok(()) => (i, Ok(stamp)),
                Err(e) => {
                    let _ = std::fs::remove_file(&s.staged);
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        (i, Err(SyncActionError::LocalAppeared { path }))
                    } else {
                        (i, Err(io(&path, &e)))
                    }
                }
            }
        })
        .collect()
}

/// A staged download's commit: the stamp it was renamed with, when known.
type Committed = Result<Option<Stamp>, SyncActionError>;

/// What [`run_many`] did: each action's outcome in plan order, and what
/// is known of the files its downloads landed (for the verifying plan).
pub(crate) struct Ran {
    pub outcomes: Vec<Result<BaseChange, SyncActionError>>,
    pub learnt: Learnt,
}

/// Runs a run of consecutive transfer actions concurrently (at most
/// `concurrency` at once), returning each one's outcome in plan order.
///
/// Stops at a safe point when the lock is lost (transfers in flight are
/// cancelled: an upload cut off is never completed, a download's temp
/// file is removed) or when an action fails for the whole remote (the
/// rest is not started). Either way the outcomes say what completed.
pub(crate) async fn run_many(
    actions: &[&Action],
    root: &Path,
    remotes: &Remotes<'_>,
    concurrency: usize,
    watch: &crate::lock::LossWatch,
) -> Ran {
    let halted: Halted = std::sync::Mutex::new(None);
    let halted = &halted;
    // Unordered: a finished transfer makes room for the next at once, not
    // once every transfer started before it has finished too (a slow one
    // would hold up the rest). Outcomes are put back in action order.
    let mut outcomes: Vec<Option<Result<BaseChange, SyncActionError>>> =
        (0..actions.len()).map(|_| None).collect();
    let mut stream = futures_util::stream::iter(
        actions
            .iter()
            .enumerate()
            .map(|(i, a)| run_one(i, a, root, remotes, watch, halted)),
    )
    .buffer_unordered(concurrency.max(1));
    let mut commits = Commits::default();
    let mut learnt = Learnt::default();
    let meter = crate::progress::meter();
    while let Some((i, outcome, staged)) = stream.next().await {
        if outcome.is_ok() {
            // Transferred (a staged download is durable once its batch is
            // committed, just after): shown as done.
            meter.finished(
                u64::from(actions[i].path().is_some()),
                super::carried_bytes(actions[i]),
                || super::describe_done(actions[i]),
            );
        }
        outcomes[i] = Some(outcome);
        if let (Some(staged), Some(path)) = (staged, actions[i].path()) {
            if learnt.is_empty() && commits.batch.is_empty() {
                // Sized once: at 100,000 downloads, doubling on the way
                // would hold 8 MB more at the apply's peak.
                let downloads = actions
                    .iter()
                    .filter(|a| matches!(a, Action::Download { .. }))
                    .count();
                learnt.reserve_exact(downloads);
            }
            commits.add(i, path.clone(), staged);
        }
        if commits.due() {
            commits.start(&mut outcomes, &mut learnt).await;
        }
    }
    drop(stream);
    commits.finish(&mut outcomes, &mut learnt).await;
    let mut outcomes: Vec<_> = outcomes
        .into_iter()
        .map(|o| o.expect("every action yields an outcome"))
        .collect();
    // A directory that fails its fsync fails the downloads into it, but
    // what was learnt of their bytes stays true of the files.
    sync_landed_dirs(actions, root, &mut outcomes).await;
    Ran { outcomes, learnt }
}

/// Why the rest of a run is not started (an action failed for the whole
/// remote), once known.
type Halted = std::sync::Mutex<Option<String>>;

/// One action of [`run_many`]: its index, outcome and, for a download, the
/// staged file its batch commit will rename into place.
async fn run_one(
    i: usize,
    a: &Action,
    root: &Path,
    remotes: &Remotes<'_>,
    watch: &crate::lock::LossWatch,
    halted: &Halted,
) -> (usize, Result<BaseChange, SyncActionError>, Option<Staged>) {
    let reason = halted.lock().unwrap().clone().or_else(|| watch.lost());
    if let Some(reason) = reason {
        return (i, Err(SyncActionError::NotStarted { reason }), None);
    }
    let work = async {
        match a {
            Action::Download { .. } => download(a, root, remotes, true).await,
            _ => run(a, root, remotes).await.map(|change| (change, None)),
        }
    };
    let outcome = tokio::select! {
        outcome = work => outcome,
        reason = lock_lost(watch) => Err(SyncActionError::Cancelled {
            what: a.path().map(ToString::to_string).unwrap_or_else(|| a.kind().to_string()),
            reason,
        }),
    };
    if let Err(e) = &outcome
        && e.is_systemic()
    {
        halted.lock().unwrap().get_or_insert_with(|| e.to_string());
    }
    // Test-only: die at an action boundary, others still in flight
    // (FAILPOINTS=sync-action-done=N*off->return). A staged download
    // reaches its boundary when its batch is committed.
    #[cfg(feature = "failpoints")]
    if matches!(&outcome, Ok((_, None))) {
        action_done_for_tests();
    }
    match outcome {
        Ok((change, staged)) => (i, Ok(change), staged),
        Err(e) => (i, Err(e), None),
    }
}

/// Staged downloads are committed a batch at a time on a blocking thread
/// while the transfers go on (one commit in flight at a time); until its
/// batch is committed a download is not complete.
#[derive(Default)]
struct Commits {
    batch: Vec<(usize, TierPath, Staged)>,
    bytes: u64,
    since: Option<std::time::Instant>,
    committing: Option<tokio::task::JoinHandle<Vec<(usize, Committed)>>>,
}

impl Commits {
    fn add(&mut self, i: usize, path: TierPath, staged: Staged) {
        self.since.get_or_insert_with(std::time::Instant::now);
        self.bytes += staged.size;
        self.batch.push((i, path, staged));
    }

    /// The batch is full (files or bytes) or old enough to commit.
    fn due(&self) -> bool {
        self.batch.len() >= COMMIT_FILES
            || self.bytes >= COMMIT_BYTES
            || self.since.is_some_and(|t| t.elapsed() >= COMMIT_AFTER)
    }

    /// Settles the commit in flight, if any, and starts committing the
    /// batch.
    async fn start(
        &mut self,
        outcomes: &mut [Option<Result<BaseChange, SyncActionError>>],
        learnt: &mut Learnt,
    ) {
        self.settle_in_flight(outcomes, learnt).await;
        let b = std::mem::take(&mut self.batch);
        self.bytes = 0;
        self.since = None;
        self.committing = Some(tokio::task::spawn_blocking(move || commit_staged(b)));
    }

    /// Settles the commit in flight, then commits what is left.
    async fn finish(
        mut self,
        outcomes: &mut [Option<Result<BaseChange, SyncActionError>>],
        learnt: &mut Learnt,
    ) {
        self.settle_in_flight(outcomes, learnt).await;
        if !self.batch.is_empty() {
            self.start(outcomes, learnt).await;
            self.settle_in_flight(outcomes, learnt).await;
        }
    }

    async fn settle_in_flight(
        &mut self,
        outcomes: &mut [Option<Result<BaseChange, SyncActionError>>],
        learnt: &mut Learnt,
    ) {
        if let Some(h) = self.committing.take() {
            let done = h
                .await
                .unwrap_or_else(|e| panic!("a commit of downloads failed to run: {e}"));
            settle(outcomes, learnt, done);
        }
    }
}

/// Staged downloads committed together: at most this many files, this
/// many bytes, or what landed within this long, so a kill loses little
/// finished work.
const COMMIT_FILES: usize = 1024;
const COMMIT_BYTES: u64 = 256 << 20;
const COMMIT_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Replaces the outcome of each staged download whose commit failed, and
/// adds what is known of each one committed to `learnt`.
fn settle(
    outcomes: &mut [Option<Result<BaseChange, SyncActionError>>],
    learnt: &mut Learnt,
    committed: Vec<(usize, Committed)>,
) {
    for (i, result) in committed {
        match result {
            Err(e) => outcomes[i] = Some(Err(e)),
            Ok(stamp) => {
                if let (Some(stamp), Some(Ok(BaseChange::Set(_, landed)))) = (stamp, &outcomes[i]) {
                    learnt.push(stamp, landed.sha256);
                }
                #[cfg(feature = "failpoints")]
                action_done_for_tests();
            }
        }
    }
}

/// Test-only: the failpoint `sync-action-done`, evaluated as an action
/// completes; dies there when it fires.
#[cfg(feature = "failpoints")]
pub(super) fn action_done_for_tests() {
    if fail::eval("sync-action-done", |_| ()).is_some() {
        super::die_for_tests();
    }
}

/// Makes the downloads of a run durable: fsyncs each directory a completed
/// download or fetch renamed a file into, once (not once per file), before
/// any of them is reported complete (and so before the sync base records
/// it or a later action relies on it). A directory that cannot be synced
/// fails the downloads into it.
async fn sync_landed_dirs(
    actions: &[&Action],
    root: &Path,
    outcomes: &mut [Result<BaseChange, SyncActionError>],
) {
    // (directory as a tier path's parent, action index), grouped by
    // directory: held compactly (a 100,000-file pull lands in tens of
    // thousands of directories), each made a path only while it is synced.
    let mut landed: Vec<(&str, usize)> = actions
        .iter()
        .zip(outcomes.iter())
        .enumerate()
        .filter_map(|(i, (action, outcome))| match (action, outcome) {
            (Action::Download { path, .. } | Action::Fetch { path, .. }, Ok(_)) => {
                Some((path.as_str().rsplit_once('/').map_or("", |(dir, _)| dir), i))
            }
            _ => None,
        })
        .collect();
    landed.sort_by(|a, b| a.0.cmp(b.0));
    let groups: Vec<&[(&str, usize)]> = landed.chunk_by(|a, b| a.0 == b.0).collect();
    let failed = futures_util::stream::iter(groups.into_iter().map(|group| async move {
        let dir = root.join(group[0].0);
        let outcome = tokio::task::spawn_blocking(move || fsutil::sync_dir(&dir))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(format!("fsync task failed: {e}"))));
        outcome.err().map(|e| (group, e))
    }))
    .buffer_unordered(16)
    .filter_map(std::future::ready)
    .collect::<Vec<_>>()
    .await;
    for (group, e) in failed {
        for &(_, i) in group {
            let path = actions[i].path().cloned().expect("a download has a path");
            outcomes[i] = Err(SyncActionError::Io {
                path,
                source: std::io::Error::new(e.kind(), e.to_string()),
            });
        }
    }
}

/// Resolves once a watched lock is lost, with why.
async fn lock_lost(watch: &crate::lock::LossWatch) -> String {
    loop {
        if let Some(reason) = watch.lost() {
            return reason;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Applies a base change.
pub(crate) fn record(base: &mut SyncBase, change: BaseChange) {
    match change {
        BaseChange::Set(path, entry) => base.set(path, entry),
        BaseChange::Remove(path) => base.forget(&path),
        BaseChange::Nothing => {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::{DatastoreConfig, Placement};
    use crate::state::managed::Sentinel;

    fn tp(s: &str) -> TierPath {
        TierPath::parse(s).unwrap()
    }

    /// A remote on a directory object store, keys under `swamp/`.
    fn target(dir: &Path) -> RemoteTarget {
        RemoteTarget {
            store: crate::store::open_fs(dir),
            placement: Placement {
                datastore: DatastoreConfig::Local,
                namespace: None,
            },
            url: "file:///test/swamp/".into(),
            key_prefix: "swamp/".into(),
        }
    }

    fn put(t: &RemoteTarget, path: &str, body: &[u8]) {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(
            t.store
                .put_bytes(&t.key(&tp(path)), body.to_vec(), &Precondition::None),
        )
        .unwrap();
    }

    fn publish(
        t: &RemoteTarget,
        objects: &BTreeMap<TierPath, String>,
    ) -> Result<(), SyncActionError> {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let path = crate::state::managed::sentinel_path();
        let change = rt.block_on(publish_sentinel(
            t,
            cache.path(),
            &path,
            &["models".to_string()],
            objects,
        ))?;
        // What was published is what the cache and the base now hold.
        let landed = std::fs::read(cache.path().join(path.as_str())).unwrap();
        assert_eq!(Some(&landed), sentinel_in(t).as_ref());
        match change {
            BaseChange::Set(p, entry) => {
                assert_eq!(p, path);
                assert_eq!(entry.sha256, fsutil::sha256_bytes(&landed));
            }
            _ => panic!("the base records the sentinel"),
        }
        Ok(())
    }

    fn sentinel_in(t: &RemoteTarget) -> Option<Vec<u8>> {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let key = t.key(&crate::state::managed::sentinel_path());
        rt.block_on(t.store.get_bytes(&key)).ok().map(|(_, b)| b)
    }

    /// A download of `path` as `put` left it in `t`.
    fn download_of(t: &RemoteTarget, path: &str, body: &[u8]) -> Action {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let meta = rt
            .block_on(t.store.head(&t.key(&tp(path))))
            .unwrap()
            .unwrap();
        Action::Download {
            path: tp(path),
            version: meta.version.into(),
            sha256: Some(Sha256::of(body)),
            local: None,
            size: body.len() as u64,
        }
    }

    /// Every file under `dir` whose name is a swamp temp name.
    fn temps_under(dir: &Path) -> Vec<PathBuf> {
        walkdir::WalkDir::new(dir)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| fsutil::is_swamp_temp(&e.file_name().to_string_lossy()))
            .map(|e| e.path().to_path_buf())
            .collect()
    }

    #[test]
    fn a_pull_larger_than_one_commit_lands_every_file_and_leaves_no_staging_file() {
        let remote = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let t = target(remote.path());
        // More than one batch of staged downloads, in a few directories.
        let n = COMMIT_FILES + 37;
        let bodies: Vec<(String, Vec<u8>)> = (0..n)
            .map(|i| {
                (
                    format!("outputs/d{}/f{i}", i % 7),
                    format!("body {i}\n").into_bytes(),
                )
            })
            .collect();
        for (path, body) in &bodies {
            put(&t, path, body);
        }
        let actions: Vec<Action> = bodies
            .iter()
            .map(|(path, body)| download_of(&t, path, body))
            .collect();
        let refs: Vec<&Action> = actions.iter().collect();
        let remotes = Remotes {
            target: Some(&t),
            sources: &[],
            hashes: None,
            trash: None,
            resume: None,
        };
        let rt = tokio::runtime::Runtime::new().unwrap();
        let Ran { outcomes, learnt } = rt.block_on(run_many(
            &refs,
            cache.path(),
            &remotes,
            16,
            &crate::lock::watch(),
        ));
        assert_eq!(outcomes.len(), n);
        for ((path, body), outcome) in bodies.iter().zip(&outcomes) {
            match outcome {
                Ok(BaseChange::Set(p, entry)) => {
                    assert_eq!(p.as_str(), path);
                    assert_eq!(entry.sha256, Sha256::of(body));
                }
                Ok(_) => panic!("{path}: a download sets the base"),
                Err(e) => panic!("{path}: {e}"),
            }
            assert_eq!(&std::fs::read(cache.path().join(path)).unwrap(), body);
        }
        assert_eq!(temps_under(cache.path()), Vec::<PathBuf>::new());
        // What was learnt of each landed file is its own stamp as it now
        // lies in the cache (what the verifying plan looks it up by) with
        // the sha256 of its bytes.
        let mut expected = Learnt::default();
        for (path, body) in &bodies {
            let meta = std::fs::symlink_metadata(cache.path().join(path)).unwrap();
            expected.push(Stamp::of(&meta), Sha256::of(body));
        }
        assert_eq!(learnt.sorted(), expected.sorted());
    }

    #[test]
    fn a_commit_never_replaces_a_file_that_appeared_at_the_destination_meanwhile() {
        let cache = tempfile::tempdir().unwrap();
        let dir = cache.path().join("outputs");
        std::fs::create_dir_all(&dir).unwrap();
        let staged = |name: &str, body: &[u8]| {
            let dest = dir.join(name);
            let staged = temp_beside(&dest, "stage");
            std::fs::write(&staged, body).unwrap();
            Staged {
                staged,
                dest,
                size: body.len() as u64,
            }
        };
        let fresh = staged("fresh", b"downloaded\n");
        let clash = staged("clash", b"downloaded\n");
        // Written by the user after the plan checked that it was absent.
        std::fs::write(dir.join("clash"), b"the user's own\n").unwrap();
        let out = commit_staged(vec![
            (0, tp("outputs/fresh"), fresh),
            (1, tp("outputs/clash"), clash),
        ]);
        assert!(matches!(out[0], (0, Ok(Some(_)))), "{:?}", out[0].1);
        assert!(
            matches!(&out[1], (1, Err(SyncActionError::LocalAppeared { path })) if path.as_str() == "outputs/clash"),
            "{:?}",
            out[1].1
        );
        assert_eq!(std::fs::read(dir.join("fresh")).unwrap(), b"downloaded\n");
        assert_eq!(
            std::fs::read(dir.join("clash")).unwrap(),
            b"the user's own\n"
        );
        assert_eq!(temps_under(cache.path()), Vec::<PathBuf>::new());
    }

    #[test]
    fn the_sentinel_is_not_published_while_an_object_it_vouches_for_is_missing_or_different() {
        let dir = tempfile::tempdir().unwrap();
        let t = target(dir.path());
        let body = b"name: web\n";
        let objects: BTreeMap<_, _> = [(tp("config/models/web.yaml"), fsutil::sha256_bytes(body))]
            .into_iter()
            .collect();
        let err = publish(&t, &objects).unwrap_err();
        assert!(matches!(err, SyncActionError::NotVerified { .. }), "{err}");
        assert!(sentinel_in(&t).is_none());

        put(&t, "config/models/web.yaml", b"name: other\n");
        let err = publish(&t, &objects).unwrap_err();
        assert!(err.to_string().contains("sha256"), "{err}");
        assert!(sentinel_in(&t).is_none());

        put(&t, "config/models/web.yaml", body);
        publish(&t, &objects).unwrap();
        let s = Sentinel::parse("k", &sentinel_in(&t).unwrap()).unwrap();
        assert!(s.vouches_same(&["models".to_string()], &objects));
    }

    #[test]
    fn a_sentinel_is_not_published_when_the_cache_tier_is_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let t = target(dir.path());
        let body = b"name: web\n";
        put(&t, "config/models/web.yaml", body);
        let objects: BTreeMap<_, _> = [(tp("config/models/web.yaml"), fsutil::sha256_bytes(body))]
            .into_iter()
            .collect();
        let cache = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), cache.path().join("config")).unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let Err(err) = rt.block_on(publish_sentinel(
            &t,
            cache.path(),
            &crate::state::managed::sentinel_path(),
            &["models".to_string()],
            &objects,
        )) else {
            panic!("published through a symlinked cache tier");
        };
        assert!(matches!(err, SyncActionError::Symlink { .. }), "{err}");
        assert!(sentinel_in(&t).is_none(), "nothing was published");
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_sentinel_published_meanwhile_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let t = target(dir.path());
        let body = b"name: web\n";
        put(&t, "config/models/web.yaml", body);
        let objects: BTreeMap<_, _> = [(tp("config/models/web.yaml"), fsutil::sha256_bytes(body))]
            .into_iter()
            .collect();
        // Someone else's, vouching for other content.
        let theirs = Sentinel {
            migrated_at: "2020-01-01T00:00:00Z".into(),
            sources: vec!["models".into()],
            objects: [(tp("config/models/web.yaml"), "0".repeat(64))]
                .into_iter()
                .collect(),
        };
        put(
            &t,
            "config/managed-config-migrated.json",
            &theirs.to_bytes(),
        );
        let err = publish(&t, &objects).unwrap_err();
        assert!(
            matches!(err, SyncActionError::SentinelTaken { .. }),
            "{err}"
        );
        assert_eq!(sentinel_in(&t).unwrap(), theirs.to_bytes());

        // The same content published meanwhile (a retry meeting its own
        // success, or a twin clone): fine, and left as it is.
        let same = Sentinel {
            objects: objects.clone(),
            ..theirs
        };
        put(&t, "config/managed-config-migrated.json", &same.to_bytes());
        publish(&t, &objects).unwrap();
        assert_eq!(sentinel_in(&t).unwrap(), same.to_bytes());
    }
}
