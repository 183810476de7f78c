//! What `swamp undo` plans from: for each entry of a journal, what is at
//! the file's place now and what is in the apply's trash. And what
//! retention plans from ([`held`]): what each apply still keeps.

use std::io;
use std::path::Path;

use crate::fsutil;
use crate::journal::Journal;
use crate::layout::Layout;

/// What is at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Found {
    Absent,
    File {
        sha256: String,
    },
    /// Something that is not a regular file (named: "symlink", "directory", …).
    Other(&'static str),
    /// A remote object.
    Object {
        sha256: String,
        version: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntryState {
    pub file: Found,
    pub trash: Found,
}

/// One [`EntryState`] per journal entry, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct UndoObserved {
    pub entries: Vec<EntryState>,
}

fn found(path: &Path) -> io::Result<Found> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Absent),
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        Ok(Found::Other("symlink"))
    } else if ft.is_dir() {
        Ok(Found::Other("directory"))
    } else if !ft.is_file() {
        Ok(Found::Other("special file"))
    } else {
        Ok(Found::File {
            sha256: fsutil::sha256_file(path)?,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UndoObserveError {
    #[error(transparent)]
    Io(#[from] io::Error),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Journal(#[from] crate::journal::UndoError),
    #[error(
        "apply {id} changed remote objects of {url}, which this repository's configuration no longer names"
    )]
    NoRemote { id: String, url: String },
}

fn object(meta: Option<crate::store::ObjectMeta>) -> Found {
    match meta {
        None => Found::Absent,
        Some(m) => Found::Object {
            sha256: m.sha256.unwrap_or_default(),
            version: m.version,
        },
    }
}

/// Observes every entry of `journal`: local files on disk; remote objects
/// (and their trash copies) through `remote`, the store of the entries'
/// placement.
pub(crate) fn observe(
    layout: &Layout,
    journal: &Journal,
    remote: Option<&crate::store::RemoteTarget>,
) -> Result<UndoObserved, UndoObserveError> {
    use crate::journal::Op;
    let remote_entries: Vec<&crate::journal::Entry> = journal
        .entries
        .iter()
        .filter(|e| e.op.is_remote())
        .collect();
    // Each remote entry: a HEAD of the key and of its trash copy, many at
    // once (an undo of a 10,000-object delete is 20,000 HEADs).
    let mut remote_states = Vec::new();
    if !remote_entries.is_empty() {
        for e in &remote_entries {
            if remote.is_none_or(|r| r.placement != *e.placement) {
                return Err(UndoObserveError::NoRemote {
                    id: journal.id.clone(),
                    url: Layout::remote_url(&e.placement),
                });
            }
        }
        let target = remote.expect("checked above");
        remote_states = crate::store::runtime().block_on(async {
            use futures_util::StreamExt;
            futures_util::stream::iter(remote_entries.iter().map(|e| async move {
                let now = target.store.head(&target.key(&e.path)).await?;
                // An object the apply created left nothing in its trash.
                let trash = match e.op {
                    Op::RemoteCreated => None,
                    _ => {
                        let trash_key =
                            Layout::remote_trash_key(&e.placement, &journal.id, &e.path);
                        target.store.head(&trash_key).await?
                    }
                };
                Ok::<_, crate::store::StoreError>(EntryState {
                    file: object(now),
                    trash: object(trash),
                })
            }))
            .buffered(HEAD_CONCURRENCY)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
        })?;
    }
    let mut remote_states = remote_states.into_iter();
    let mut out = UndoObserved::default();
    for e in &journal.entries {
        if e.op.is_remote() {
            out.entries
                .push(remote_states.next().expect("one state per remote entry"));
            continue;
        }
        let file_state = found_at(layout, &e.placement, &e.path)?;
        // For a moved file: what is where it was moved from.
        let trash = match (e.op, &e.from) {
            (Op::Moved, Some(from)) => found_at(layout, from, &e.path)?,
            (Op::Created | Op::Moved, _) => Found::Absent,
            _ => found(&layout.set_aside_path(&e.placement, &e.path, &journal.id))?,
        };
        out.entries.push(EntryState {
            file: file_state,
            trash,
        });
    }
    Ok(out)
}

/// What is at `path` of `placement`; a symlink among the directories
/// above is never followed.
fn found_at(
    layout: &Layout,
    placement: &crate::config::Placement,
    path: &crate::layout::TierPath,
) -> io::Result<Found> {
    let file = layout.file_path(placement, path);
    match fsutil::symlink_below(&layout.link_check_root(placement, &file), &file)? {
        Some(_) => Ok(Found::Other("path through a symlink")),
        None => found(&file),
    }
}

/// Remote requests an undo keeps in flight (observing, and restoring).
pub(crate) const HEAD_CONCURRENCY: usize = 32;

/// What one apply still holds in trash: the input of retention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub id: String,
    /// When the apply ran (RFC 3339), as its journal says.
    pub at: String,
    /// The same, in seconds since the epoch (`None`: unreadable, so it
    /// never expires by age).
    pub at_secs: Option<u64>,
    /// Set-aside files still on this machine, and their bytes.
    pub files: usize,
    pub bytes: u64,
    /// Remote trash copies this apply made in the placement being planned.
    pub remote_objects: usize,
}

/// Every apply of this repository that still holds something to prune,
/// oldest first: set-aside files on this machine (stat only, never read),
/// and remote trash copies in `target` (counted from the journal; a copy
/// an interrupted apply never made is deleted as absent).
pub(crate) fn held(
    layout: &Layout,
    target: &crate::config::Placement,
) -> Result<Vec<Held>, UndoObserveError> {
    let mut out = Vec::new();
    for id in Journal::ids(layout)? {
        // A pruned journal holds nothing: read for its head alone.
        if Journal::head(layout, &id).is_some_and(|h| h.pruned.is_some()) {
            continue;
        }
        if let Some(held) = held_by(layout, target, &id)? {
            out.push(held);
        }
    }
    out.sort_by(|a, b| (a.0, &a.1.id).cmp(&(b.0, &b.1.id)));
    Ok(out.into_iter().map(|(_, h)| h).collect())
}

/// What apply `id` still holds (`None`: nothing), with its number. Its
/// journal is read as a stream, each entry counted and let go (a move's
/// journal has an entry per object).
fn held_by(
    layout: &Layout,
    target: &crate::config::Placement,
    id: &str,
) -> Result<Option<(u64, Held)>, UndoObserveError> {
    use crate::journal::Op;
    let (mut files, mut bytes) = (0, 0);
    let mut failed = None;
    // Remote trash copies by place, in runs (a journal's entries of one
    // place come together): which places count needs the journal's head.
    let mut remote: Vec<(std::sync::Arc<crate::config::Placement>, usize)> = Vec::new();
    let j = Journal::scan(layout, id, |e| match e.op {
        Op::SetAside if failed.is_none() => {
            let path = layout.set_aside_path(&e.placement, &e.path, id);
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_file() => {
                    files += 1;
                    bytes += m.len();
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => failed = Some(e),
            }
        }
        Op::RemoteSetAside => match remote.last_mut() {
            Some((p, n)) if **p == *e.placement => *n += 1,
            _ => remote.push((e.placement, 1)),
        },
        _ => {}
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    if j.pruned.is_some() {
        return Ok(None);
    }
    let moved_from = j.moved_from(target);
    let remote_objects = remote
        .iter()
        .filter(|(p, _)| **p == *target || moved_from == Some(&**p))
        .map(|(_, n)| n)
        .sum();
    let h = Held {
        id: j.id.clone(),
        at: j.at.clone(),
        at_secs: humantime::parse_rfc3339(&j.at)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs()),
        files,
        bytes,
        remote_objects,
    };
    // What it made (created, moved) is listed beside the journal: a pull of
    // a million files leaves a large list, which retention removes too.
    let made = j.made.is_some() && layout.made_path(&j.id).exists();
    Ok((h.files > 0 || h.remote_objects > 0 || made).then_some((j.seq, h)))
}
