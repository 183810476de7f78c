//! Sync actions, one at a time: uploads, downloads, deletes, renames,
//! copies and the remote bookkeeping, each checking its precondition at
//! the moment of acting (the cache file's hash; the remote object's
//! version through a conditional request) and saying how the sync base
//! changes ([`BaseChange`]), applied only for actions that completed.
//! Running many side by side is [`super::transfers`]'s.

use crate::plan::action::{
    AbortUpload, DeleteLocal, DeleteRemote, DeleteSourceRemote, Download, Fetch, RenameLocal,
    Upload,
};
use std::path::{Path, PathBuf};

use futures_util::StreamExt;

use crate::digest::Sha256;
use crate::fsutil;
use crate::layout::TierPath;
use crate::plan::{Action, RemoteExpect};
use crate::state::{BaseEntry, HashCache, SyncBase};
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
    /// In the remote only: a copy a lazy clone does not download (or one a
    /// download later in the plan records in full).
    SetUnhydrated(TierPath, crate::state::Unhydrated),
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
        Ok(m) => match known.and_then(|k| k.known(crate::state::stamp::Stamp::of(&m))) {
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
pub(super) fn verify_landed(
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
    pub trash: Option<&'a crate::journal::Trash<'a>>,
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
    /// Large objects a streamed copy carries between providers, on their
    /// way (in `.swamp/state/`, never in the cache).
    pub spool: PathBuf,
}

impl Remotes<'_> {
    pub(super) fn target(&self, path: &TierPath) -> Result<&RemoteTarget, SyncActionError> {
        self.target
            .ok_or_else(|| SyncActionError::NoRemote { path: path.clone() })
    }

    pub(super) fn source(
        &self,
        i: usize,
        path: &TierPath,
    ) -> Result<&RemoteTarget, SyncActionError> {
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
        Action::Upload(a) => upload(a, root, remotes).await,
        Action::Download(a) => download(a, root, remotes, false)
            .await
            .map(|(change, _)| change),
        Action::DeleteLocal(a) => delete_local(a, root, remotes),
        Action::DeleteRemote(a) => delete_remote(a, remotes).await,
        Action::RenameLocal(a) => rename_local(a, root, remotes),
        Action::Fetch(a) => fetch(a, root, remotes).await,
        // Copies run with the transfers (`super::copy`), never here.
        Action::CopyRemote(_) => Err(SyncActionError::NotStarted {
            reason: "a copy runs with the transfers".into(),
        }),
        Action::DeleteSourceRemote(a) => delete_source_remote(a, remotes).await,
        Action::AbortUpload(a) => abort_upload(a, remotes).await,
        Action::RecordBase(_)
        | Action::RecordDeletes(_)
        | Action::NoteProgress(_)
        | Action::PruneRecords(_)
        | Action::PruneHistory(_)
        | Action::MirrorConfig(_)
        | Action::PublishSentinel(_)
        | Action::RemoveTemp(_)
        | Action::RemovePartial(_)
        | Action::RelocateTrash(_)
        | Action::PruneTrash(_)
        | Action::Move(_)
        | Action::DropDuplicate(_)
        | Action::InvalidateCatalog
        | Action::FinishMigration => Ok(BaseChange::Nothing),
    }
}

/// A store error on `path`'s object, as a sync action's error.
pub(super) fn store_err(path: &TierPath) -> impl FnOnce(StoreError) -> SyncActionError + use<> {
    let path = path.clone();
    move |source| SyncActionError::Store { path, source }
}

/// Uploads a cache file under the precondition the plan saw (keeping what it replaces in the remote trash).
async fn upload(
    action: &Upload,
    root: &Path,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let Upload {
        path,
        sha256,
        remote: expect,
        ..
    } = action;
    let file = check_no_symlink(root, path)?;
    // A small file is read whole and its bytes checked, then sent: what
    // goes up is what the plan saw, with no hash cache loaded.
    let small = if action.size <= CHECKED_BY_BYTES {
        read_checked(&file, path, sha256)?
    } else {
        None
    };
    if small.is_none() {
        match local_sha(&file, path, remotes.hashes)? {
            None => return Err(SyncActionError::LocalGone { path: path.clone() }),
            Some(found) if &found != sha256 => {
                return Err(SyncActionError::LocalChanged { path: path.clone() });
            }
            Some(_) => {}
        }
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
    let meta = match (small, &remotes.resume) {
        (Some(bytes), _) => {
            remote
                .store
                .put_bytes_hashed(&key, bytes, &sha256.hex(), &pre)
                .await
        }
        (None, Some(dirs)) => {
            let journal = crate::store::resume::UploadJournal::new(&dirs.uploads, path.as_str());
            remote
                .store
                .put_file_resumable(&key, &file, &sha256.hex(), &pre, &journal)
                .await
        }
        (None, None) => {
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

/// Uploads of files at most this large read them whole and check their
/// bytes against the plan's sha256 (see [`read_checked`]).
pub(super) const CHECKED_BY_BYTES: u64 = 256 << 10;

/// The bytes of `file` (planned at most [`CHECKED_BY_BYTES`]) when they
/// are the plan's `sha256`; `None` when it has grown past that since
/// (checked as a large one is). Gone, or other bytes: the upload stops.
fn read_checked(
    file: &Path,
    path: &TierPath,
    sha256: &Sha256,
) -> Result<Option<Vec<u8>>, SyncActionError> {
    match fsutil::read_small(file, CHECKED_BY_BYTES) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(SyncActionError::LocalGone { path: path.clone() })
        }
        Err(source) => Err(SyncActionError::Io {
            path: path.clone(),
            source,
        }),
        Ok(Some(bytes)) if Sha256::of(&bytes) != *sha256 => {
            Err(SyncActionError::LocalChanged { path: path.clone() })
        }
        Ok(read) => Ok(read),
    }
}

/// Aborts an interrupted multipart upload and forgets its record (only
/// that upload's: a record another run made meanwhile stays).
async fn abort_upload(
    action: &AbortUpload,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let AbortUpload {
        path, upload_id, ..
    } = action;
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
    action: &DeleteLocal,
    root: &Path,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let DeleteLocal { path, sha256, .. } = action;
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
    action: &DeleteRemote,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let DeleteRemote { path, version, .. } = action;
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
    action: &RenameLocal,
    root: &Path,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let RenameLocal {
        path, to, sha256, ..
    } = action;
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
    action: &Fetch,
    root: &Path,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let Fetch {
        path,
        source,
        sha256,
        ..
    } = action;
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

/// Deletes of a drained source's objects in flight at once: as many as the
/// transfers (`[sync] concurrency`'s default), each a small request; at
/// 16, deleting 10,000 old objects after a move took longer than a third
/// of the move.
const DRAIN_DELETES: usize = 64;

/// Deletes a drained source remote's objects at the versions the plan saw.
async fn delete_source_remote(
    action: &DeleteSourceRemote,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let DeleteSourceRemote {
        source,
        objects,
        moved_to,
    } = action;
    let from = remotes
        .sources
        .get(*source)
        .and_then(Option::as_ref)
        .ok_or(SyncActionError::NoSourceRemote)?;
    // Each file first goes to this apply's trash at the old place (one
    // server-side copy), as any remote delete's does.
    let trash = remotes.trash.map(|t| t.id);
    let mut results = futures_util::stream::iter(objects.iter().map(|o| async move {
        let key = o.key.to_key();
        let object_err = |source| SyncActionError::Object {
            key: key.clone(),
            source,
        };
        if let (Some(id), Some(path)) = (trash, o.key.path_under(&from.key_prefix)) {
            keep_in_trash(from, id, &path, &o.version.as_str())
                .await
                .map_err(object_err)?;
        }
        from.store
            .delete(&key, &Precondition::Matches(o.version.to_string()))
            .await
            .map_err(object_err)
    }))
    .buffer_unordered(DRAIN_DELETES);
    // The first failure, once the rest are done (not a result held for
    // each of a million objects).
    let mut failed = None;
    while let Some(r) = results.next().await {
        if let Err(e) = r {
            failed.get_or_insert(e);
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    // Last, once nothing of the datastore is left there: the marker the
    // clones still on the old place stop at.
    if let Some(moved) = moved_to {
        let marker = crate::state::moved::Moved {
            to: moved.to.clone(),
            spec: moved.spec.clone(),
            at: crate::clock::now_rfc3339(),
            by: crate::lock::who_am_i(),
        };
        crate::state::moved::leave(from, &marker)
            .await
            .map_err(|source| SyncActionError::Object {
                key: crate::layout::Layout::moved_marker_key(&from.placement),
                source,
            })?;
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
    files: &[crate::state::delete_records::DeletedFile],
    after: Option<&str>,
    prune: &[crate::plan::RemoteObjectRef],
) -> Result<(String, String, crate::state::delete_records::RecordBody), StoreError> {
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(crate::clock::now_secs());
    let body = crate::state::delete_records::RecordBody {
        at: crate::clock::now_rfc3339(),
        by: crate::lock::who_am_i(),
        clone: Some(clone.to_string()),
        files: files.to_vec(),
    };
    let mut bytes = serde_json::to_vec_pretty(&body).expect("a record serialises");
    bytes.push(b'\n');
    let key = crate::state::delete_records::new_record_key(&target.placement, now, after);
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
        serde_json::to_vec_pretty(&crate::state::delete_records::NoteBody { at: &at, by: &by })
            .expect("a note serialises");
    bytes.push(b'\n');
    let key = crate::state::delete_records::note_key(&target.placement, clone, passed);
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
            .delete(
                &old.key.to_key(),
                &Precondition::Matches(old.version.to_string()),
            )
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
    verify_vouched(target, objects).await?;
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
/// into place with others (see [`super::transfers`]).
pub(super) struct Staged {
    pub(super) staged: PathBuf,
    pub(super) dest: PathBuf,
    pub(super) size: u64,
}

/// A download. With `stage`, a download of a file the cache lacks lands
/// under a swamp temp name without an fsync and is returned as [`Staged`]:
/// the caller makes a batch of them durable at once and only then renames
/// each into place, so a file at its cache path is always whole and
/// durable. A replacement lands, is fsynced and renamed on its own.
pub(super) async fn download(
    action: &Download,
    root: &Path,
    remotes: &Remotes<'_>,
    stage: bool,
) -> Result<(BaseChange, Option<Staged>), SyncActionError> {
    let Download {
        path,
        version,
        expect,
        local,
        size,
        ..
    } = action;
    let sha256 = expect.sha256();
    let file = check_no_symlink(root, path)?;
    still_as_planned(&file, path, local.as_deref(), remotes.hashes)?;
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
    let known = expect.object(remote.key(path), *size, version.to_string());
    let durability = if stage {
        Durability::Deferred
    } else {
        Durability::Synced
    };
    let meta = get_to(remote, remotes, &known, &landing, durability)
        .await
        .map_err(store_err(path))
        .inspect_err(|_| prune_after_failure(&file, root))?;
    // The plan's hash binds only the version it saw.
    let expected = sha256.filter(|_| *version == meta.version);
    let got = verify_landed(&landing, path, meta.sha256.clone(), expected)
        .inspect_err(|_| prune_after_failure(&file, root))?;
    if let Some(trash) = trash {
        replace_from(trash, path, &landing, &file)?;
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

/// Refuses a download over a cache file that is no longer what the plan
/// saw there (`local`: its sha256, `None` for no file).
fn still_as_planned(
    file: &Path,
    path: &TierPath,
    local: Option<&Sha256>,
    hashes: Option<&HashCache>,
) -> Result<(), SyncActionError> {
    let found = local_sha(file, path, hashes)?;
    if found.as_ref() == local {
        return Ok(());
    }
    Err(match (found, local) {
        (None, Some(_)) => SyncActionError::LocalGone { path: path.clone() },
        (Some(_), None) => SyncActionError::LocalAppeared { path: path.clone() },
        _ => SyncActionError::LocalChanged { path: path.clone() },
    })
}

/// Reads `known` to `landing`: through a kept partial file when it is big
/// enough to resume, else (or when it cannot be resumed) whole.
async fn get_to(
    remote: &RemoteTarget,
    remotes: &Remotes<'_>,
    known: &crate::store::ObjectMeta,
    landing: &Path,
    durability: Durability,
) -> Result<crate::store::ObjectMeta, StoreError> {
    if let Some(dirs) = &remotes.resume
        && crate::store::resume::resumable(known)
        && let Some(meta) =
            crate::store::resume::get_resumable(&*remote.store, known, &dirs.partials, landing)
                .await?
    {
        return Ok(meta);
    }
    remote
        .store
        .get_known_to_file(known, landing, durability)
        .await
}

/// Sets the cache file `file` aside in `trash` and renames the download
/// that replaces it from `landing` into its place, durably.
fn replace_from(
    trash: &crate::journal::Trash<'_>,
    path: &TierPath,
    landing: &Path,
    file: &Path,
) -> Result<(), SyncActionError> {
    let io = |source| SyncActionError::Io {
        path: path.clone(),
        source,
    };
    trash
        .set_aside(path)
        .map_err(|e| io(std::io::Error::other(e.to_string())))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(landing);
        })?;
    std::fs::rename(landing, file).map_err(io)?;
    if let Some(dir) = file.parent() {
        fsutil::sync_dir(dir).map_err(io)?;
    }
    Ok(())
}

/// Checks, one HEAD each (16 at a time), that every object a sentinel
/// vouches for is in the remote with the sha256 it would say.
async fn verify_vouched(
    target: &RemoteTarget,
    objects: &std::collections::BTreeMap<TierPath, String>,
) -> Result<(), SyncActionError> {
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
    Ok(())
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
        fsutil::temp_owner(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Test-only: the failpoint `sync-action-done`, evaluated as an action
/// completes; dies there when it fires.
#[cfg(feature = "failpoints")]
pub(super) fn action_done_for_tests() {
    if fail::eval("sync-action-done", |_| ()).is_some() {
        super::die_for_tests();
    }
}

/// Applies a base change.
pub(crate) fn record(base: &mut SyncBase, change: BaseChange) {
    match change {
        BaseChange::Set(path, entry) => base.set(path, entry),
        BaseChange::SetUnhydrated(path, object) => base.set_unhydrated(path, object),
        BaseChange::Remove(path) => base.forget(&path),
        BaseChange::Nothing => {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::transfers::{COMMIT_FILES, Ran, commit_staged, run_many};
    use super::*;
    use crate::state::Learnt;
    use crate::state::managed::Sentinel;
    use crate::state::stamp::Stamp;

    use crate::testutil::tp;

    /// A remote on a directory object store, keys under `swamp/`.
    use crate::testutil::{fs_target as target, put};

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
        Action::Download(Download {
            path: tp(path),
            version: meta.version.into(),
            expect: crate::plan::Expect::Sha256(Sha256::of(body)),
            local: None,
            size: body.len() as u64,
            settled_by: None,
        })
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
