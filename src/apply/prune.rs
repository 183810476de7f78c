//! Applies a `prune-trash` action: removes what an earlier apply set aside,
//! as its journal (never the plan) names it, then records the journal as
//! pruned. Idempotent: files and objects already gone are skipped, so a
//! prune cut short finishes when planned again.

use std::io;

use crate::config::Placement;
use crate::journal::{Journal, Op, UndoError};
use crate::layout::Layout;
use crate::store::{RemoteTarget, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum PruneError {
    #[error(transparent)]
    Journal(#[from] UndoError),
    #[error("cannot remove {}: {source}", .path.display())]
    Io {
        path: std::path::PathBuf,
        source: io::Error,
    },
    #[error("{} in the trash is not a file; nothing of it was removed", .path.display())]
    NotAFile { path: std::path::PathBuf },
    #[error("pruning the remote trash needs the remote")]
    NoRemote,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one prune removed.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub(crate) struct Pruned {
    pub files: usize,
    pub bytes: u64,
    pub remote_objects: usize,
}

/// Prunes apply `id`'s trash: its copies in `target`'s remote trash
/// (through `remote`), then its files on this machine. Remote trash of
/// other placements is left, and stays in the journal.
pub(crate) fn prune(
    layout: &Layout,
    id: &str,
    target: &Placement,
    remote: Option<&RemoteTarget>,
) -> Result<Pruned, PruneError> {
    let mut journal = Journal::load(layout, id)?;
    let mut done = Pruned::default();
    if journal.pruned.is_some() {
        return Ok(done);
    }
    let moved_from;
    (done.remote_objects, moved_from) = prune_remote(&journal, target, remote)?;
    for e in journal.entries.iter().filter(|e| e.op == Op::SetAside) {
        let path = layout.set_aside_path(&e.placement, &e.path, id);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => {
                std::fs::remove_file(&path).map_err(|source| PruneError::Io {
                    path: path.clone(),
                    source,
                })?;
                done.files += 1;
                done.bytes += m.len();
            }
            // A symlink is removed, never followed.
            Ok(m) if m.file_type().is_symlink() => {
                std::fs::remove_file(&path).map_err(|source| PruneError::Io {
                    path: path.clone(),
                    source,
                })?;
            }
            Ok(_) => return Err(PruneError::NotAFile { path }),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(PruneError::Io { path, source }),
        }
        let (mut id_root, mut stop) = layout.trash_root(&e.placement, &e.path, id);
        if !path.starts_with(&id_root) {
            // Where swamp before 0.2 set it aside in a remote's cache.
            stop = layout.placement_root(&e.placement);
            id_root = layout.legacy_trash_dir(&e.placement).join(id);
        }
        if let Some(parent) = path.parent() {
            crate::fsutil::remove_empty_dirs(parent, &stop);
        }
        let _ = std::fs::remove_dir(&id_root);
    }
    // The list of what it made: without its trash the apply is no longer
    // undone, so the list is of no use.
    let made = layout.made_path(id);
    match std::fs::remove_file(&made) {
        Ok(()) => journal.made = None,
        Err(e) if e.kind() == io::ErrorKind::NotFound => journal.made = None,
        Err(source) => return Err(PruneError::Io { path: made, source }),
    }
    journal.entries.retain(|e| {
        e.op == Op::RemoteSetAside
            && *e.placement != *target
            && moved_from.as_ref() != Some(&e.placement)
    });
    if journal.entries.is_empty() {
        journal.pruned = Some(crate::clock::now_rfc3339());
    }
    journal.save(layout)?;
    Ok(done)
}

/// Prunes the remote trash of `journal`'s apply in `target` (through
/// `remote`) and, for a move to `target`, at the place it left (nothing
/// else would ever prune that). Returns the copies removed, and that
/// place.
fn prune_remote(
    journal: &Journal,
    target: &Placement,
    remote: Option<&RemoteTarget>,
) -> Result<(usize, Option<Placement>), PruneError> {
    let keys_at = |placement: &Placement| -> Vec<String> {
        journal
            .entries
            .iter()
            .filter(|e| e.op == Op::RemoteSetAside && *e.placement == *placement)
            .map(|e| Layout::remote_trash_key(&e.placement, &journal.id, &e.path))
            .collect()
    };
    let mut removed = 0;
    let keys = keys_at(target);
    if !keys.is_empty() {
        let remote = remote.ok_or(PruneError::NoRemote)?;
        removed += delete_trash(remote, &keys)?;
    }
    let moved_from = journal.moved_from(target).cloned();
    if let Some(from) = &moved_from {
        let keys = keys_at(from);
        if !keys.is_empty() {
            removed += delete_trash(&RemoteTarget::open(from)?, &keys)?;
        }
    }
    Ok((removed, moved_from))
}

/// Deletes apply trash `keys` (under `.swamp/trash/<id>/`, which only that
/// apply wrote, create-only: nothing else can be there to lose).
fn delete_trash(remote: &RemoteTarget, keys: &[String]) -> Result<usize, PruneError> {
    match crate::store::runtime().block_on(remote.store.delete_many(keys)) {
        Ok(()) | Err(StoreError::NotFound { .. }) => Ok(keys.len()),
        Err(e) => Err(e.into()),
    }
}
