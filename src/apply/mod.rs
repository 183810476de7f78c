//! Apply: runs a plan's actions in order, checking each precondition right
//! before acting, and never losing the only copy of a file.
//!
//! A move is `link(src, dst)` (which refuses to replace an existing file),
//! fsync of the destination directory, then `unlink(src)`; across
//! filesystems it copies to a temp file beside the destination and renames
//! it into place without clobbering. A crash between the two steps leaves
//! two identical copies, which the next plan drops as a duplicate.
//!
//! Apply stops at the first failed precondition: what is done stays done,
//! and planning again shows what is left.
//!
//! The managed-config sentinel is published in a phase of its own: it must
//! be the plan's last action, so every transfer before it has finished (or
//! apply has stopped), and each object it vouches for is verified in the
//! remote before the create-only write.

mod moves;
pub mod prune;
pub mod remote;
pub mod undo;

use std::path::{Path, PathBuf};

use crate::catalog::Catalog;
use crate::config::{Config, Placement};
use crate::digest::Sha256;
use crate::layout::Layout;
use crate::plan::{Action, Plan};
use crate::state::observed::first_datastore_file;
use crate::state::{HashCache, SyncBase};
use crate::store::RemoteTarget;
use crate::undo as journal;

pub use moves::MoveError;

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("apply refused: the plan has {0} conflict(s); resolve them and plan again")]
    Conflicts(usize),
    #[error("action {index} ({kind} {what}) stopped: {reason}")]
    Stopped {
        index: usize,
        kind: &'static str,
        what: String,
        reason: String,
        completed: usize,
    },
}

impl ApplyError {
    pub fn completed(&self) -> usize {
        match self {
            ApplyError::Conflicts(_) => 0,
            ApplyError::Stopped { completed, .. } => *completed,
        }
    }
}

/// What apply did.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ApplyReport {
    pub completed: usize,
    pub moved: usize,
    pub dropped: usize,
    pub bytes_moved: u64,
    pub uploaded: usize,
    pub downloaded: usize,
    pub deleted_local: usize,
    pub deleted_remote: usize,
    pub copied: usize,
    pub catalog_invalidated: bool,
    pub migration_finished: bool,
    /// Definition files copied into the cache's `config/` tier.
    pub mirrored: usize,
    /// The managed-config sentinel was published to the remote.
    pub sentinel_published: bool,
    /// Orphaned swamp temp files removed.
    pub temps_removed: usize,
    /// Earlier applies whose trash was pruned, and the bytes freed here.
    #[serde(skip_serializing_if = "is_zero")]
    pub trash_pruned: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub bytes_pruned: u64,
    /// Files this apply downloaded, with their stamps as landed: the
    /// verifying plan trusts these instead of reading the files back.
    #[serde(skip)]
    pub landed: crate::state::Learnt,
    /// Remote files recorded as in the remote only (lazy hydration).
    #[serde(skip_serializing_if = "is_zero")]
    pub recorded_remote_only: usize,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// The bytes an action carries (a transfer, a copy, a move), which the
/// progress meter counts; deletes carry none.
pub(crate) fn carried_bytes(action: &Action) -> u64 {
    match action {
        Action::Upload { .. }
        | Action::Download { .. }
        | Action::Fetch { .. }
        | Action::CopyRemote { .. }
        | Action::MirrorConfig { .. }
        | Action::Move { .. } => action.bytes().unwrap_or(0),
        _ => 0,
    }
}

/// One line for `-v`: what an action did.
pub(crate) fn describe_done(action: &Action) -> String {
    match action.path() {
        Some(path) => format!("{} {path}", action.kind()),
        None => action.kind().to_string(),
    }
}

/// Entries a run of transfers sets in the sync base are gathered in runs
/// of this many (see [`crate::state::SyncBase::set_many`]).
const SET_RUN: usize = 4096;

/// Sync actions that may run side by side with their neighbours.
fn concurrent_class(action: &Action) -> Option<u8> {
    match action {
        Action::Upload { .. } | Action::Download { .. } | Action::Fetch { .. } => Some(0),
        // Copies finish before the downloads that read their results.
        Action::CopyRemote { .. } => Some(2),
        Action::DeleteRemote { .. } | Action::DeleteLocal { .. } => Some(1),
        _ => None,
    }
}

pub fn apply(
    plan: &Plan,
    layout: &Layout,
    repo: &Path,
    remote: Option<&RemoteTarget>,
    sources: &[Option<RemoteTarget>],
    concurrency: u16,
) -> Result<ApplyReport, ApplyError> {
    if plan.has_conflicts() {
        return Err(ApplyError::Conflicts(plan.conflicts.len()));
    }
    let mut cache = HashCache::load(&layout.hash_cache_path());
    let mut report = ApplyReport::default();
    let total = plan.actions.len();
    let meter = crate::progress::meter();
    meter.start(
        "applying",
        plan.actions.iter().filter(|a| a.path().is_some()).count() as u64,
        plan.actions.iter().map(carried_bytes).sum(),
    );
    let rt = (remote.is_some() || sources.iter().any(Option::is_some)).then(crate::store::runtime);
    let mut base = match remote {
        Some(r) => {
            let base_path = layout.sync_base_path(&r.placement);
            let mut base = SyncBase::load(&base_path, &r.url).map_err(|e| ApplyError::Stopped {
                index: 0,
                kind: "sync",
                what: "the sync base".into(),
                reason: e.to_string(),
                completed: 0,
            })?;
            // Bound to the remote the plan saw: a base made with another is
            // set aside, as the plan did.
            let id = plan.remote.as_ref().and_then(|r| r.remote_id.clone());
            let ignored = plan.remote.as_ref().is_some_and(|r| r.base_ignored);
            if ignored || base.mismatch(id.as_deref()).is_some() {
                base.clear();
            }
            base.remote_id = id;
            Some((base, base_path))
        }
        None => None,
    };
    // The locks this command holds, watched by the transfer tasks.
    let watch = crate::lock::watch();
    let mut journaled = journal_deletes(plan, layout)?;
    // Replaced cache files and the sha256 of what replaced them.
    let mut replaced_by: Vec<(crate::layout::TierPath, String)> = Vec::new();
    let trash = journaled
        .as_ref()
        .filter(|j| !j.no_undo)
        .map(|j| journal::Trash {
            layout,
            id: &j.id,
            placement: plan.target.placement(),
        });
    // Moves done by renaming a whole directory, by action index; and how far
    // the runs of moves have been looked at for such directories.
    let mut moved_whole: std::collections::HashSet<usize> = std::collections::HashSet::new();
    // Per-file moves linked into place whose sources are still to go:
    // (source file, source root, destination file).
    let mut linked: Vec<(PathBuf, PathBuf, PathBuf)> = Vec::new();
    let mut scanned_to = 0;
    let mut i = 0;
    while i < plan.actions.len() {
        let action = &plan.actions[i];
        // A holder that stalled past its lock's TTL stops here instead of
        // working alongside its successor (remote writes are conditional
        // either way).
        if let Err(reason) = crate::lock::ensure_held() {
            return Err(ApplyError::Stopped {
                index: i + 1,
                kind: action.kind(),
                what: "the datastore lock".into(),
                reason,
                completed: report.completed,
            });
        }
        if let (Some(class), Some(rt)) = (concurrent_class(action), rt.as_ref()) {
            let run: Vec<&Action> = plan.actions[i..]
                .iter()
                .take_while(|a| concurrent_class(a) == Some(class))
                .collect();
            let remote::Ran { outcomes, learnt } = rt.block_on(remote::run_many(
                &run,
                &plan.target.root,
                &remotes_with(remote, sources, &cache, trash.as_ref()),
                usize::from(concurrency),
                &watch,
            ));
            let mut first_error = None;
            report.landed.append(learnt);
            // What the run set in the base, in runs recorded at once below
            // (no two actions of a run are on one path: they run side by
            // side).
            let mut set: Vec<Vec<_>> = Vec::new();
            for (k, outcome) in outcomes.into_iter().enumerate() {
                match outcome {
                    Ok(change) => {
                        if let (
                            Action::Download { local: Some(_), .. },
                            remote::BaseChange::Set(path, landed),
                        ) = (run[k], &change)
                        {
                            replaced_by.push((path.clone(), landed.sha256.hex()));
                        }
                        match (change, base.as_mut()) {
                            (remote::BaseChange::Set(path, entry), Some(_)) => {
                                if set.last().is_none_or(|run| run.len() == SET_RUN) {
                                    set.push(Vec::with_capacity(SET_RUN));
                                }
                                set.last_mut().expect("pushed").push((path, entry));
                            }
                            (change, Some((base, _))) => remote::record(base, change),
                            (_, None) => {}
                        }
                        match run[k] {
                            Action::Upload { .. } => report.uploaded += 1,
                            Action::Download { .. } | Action::Fetch { .. } => {
                                report.downloaded += 1
                            }
                            Action::DeleteLocal { .. } => report.deleted_local += 1,
                            Action::CopyRemote { .. } => report.copied += 1,
                            _ => report.deleted_remote += 1,
                        }
                        report.completed += 1;
                    }
                    // The cause, not the actions it kept from starting.
                    Err(e) => match &first_error {
                        None => first_error = Some((i + k, e)),
                        Some((_, remote::SyncActionError::NotStarted { .. }))
                            if !matches!(e, remote::SyncActionError::NotStarted { .. }) =>
                        {
                            first_error = Some((i + k, e))
                        }
                        Some(_) => {}
                    },
                }
            }
            // Only completed actions advance the base; save it either way.
            let saved = match base.as_mut() {
                Some((base, path)) => {
                    base.set_many(set);
                    base.save(path).map(|_| ())
                }
                None => Ok(()),
            };
            if let Some((index, e)) = first_error {
                return Err(ApplyError::Stopped {
                    index: index + 1,
                    kind: plan.actions[index].kind(),
                    what: plan.actions[index]
                        .path()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    reason: e.to_string(),
                    completed: report.completed,
                });
            }
            saved.map_err(|e| ApplyError::Stopped {
                index: i + 1,
                kind: action.kind(),
                what: "the sync base".into(),
                reason: e.to_string(),
                completed: report.completed,
            })?;
            i += run.len();
            continue;
        }
        i += 1;
        let i = i - 1;
        let stopped = |reason: String, report: &ApplyReport| ApplyError::Stopped {
            index: i + 1,
            kind: action.kind(),
            what: action
                .path()
                .map(ToString::to_string)
                .unwrap_or_else(|| describe_global(action).to_string()),
            reason,
            completed: report.completed,
        };
        if matches!(action, Action::Move { .. }) && i >= scanned_to {
            let end = i + plan.actions[i..]
                .iter()
                .take_while(|a| matches!(a, Action::Move { .. }))
                .count();
            scanned_to = end;
            let (done, failed) = rename_whole_dirs(plan, i..end, &cache);
            if let Some((at, e)) = failed {
                return Err(ApplyError::Stopped {
                    index: at + 1,
                    kind: "move",
                    what: plan.actions[at]
                        .path()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    reason: e.to_string(),
                    completed: report.completed + done.len(),
                });
            }
            moved_whole.extend(done);
        }
        if moved_whole.contains(&i) {
            if let Action::Move { size, .. } = action {
                report.moved += 1;
                report.bytes_moved += size;
            }
            report.completed += 1;
            meter.finished(
                u64::from(action.path().is_some()),
                carried_bytes(action),
                || describe_done(action),
            );
            continue;
        }
        match action {
            Action::Move {
                path,
                source,
                size,
                sha256,
            } => {
                let src_root = &plan.sources[*source].root;
                let src = src_root.join(path.as_str());
                let dst = plan.target.root.join(path.as_str());
                moves::link_file(&src, &dst, sha256, &mut cache)
                    .map_err(|e| stopped(e.to_string(), &report))?;
                linked.push((src, src_root.clone(), dst));
                report.moved += 1;
                report.bytes_moved += size;
                // The sources go once the run's destinations are durable:
                // each directory fsynced once, not once per file. Killed
                // before that, both copies are there (the next plan drops
                // the duplicate); nothing is ever only in an unsynced place.
                let run_goes_on = plan.actions.get(i + 1).is_some_and(|a| {
                    matches!(a, Action::Move { .. }) && !moved_whole.contains(&(i + 1))
                });
                if !run_goes_on || linked.len() >= MOVE_BATCH {
                    finish_moves(&mut linked).map_err(|e| stopped(e, &report))?;
                }
            }
            Action::DropDuplicate {
                path,
                source,
                sha256,
                ..
            } => {
                let src_root = &plan.sources[*source].root;
                let src = src_root.join(path.as_str());
                let dst = plan.target.root.join(path.as_str());
                let placement = plan.sources[*source].placement();
                moves::drop_duplicate(&src, &dst, sha256, &mut cache, |src| match &trash {
                    Some(t) => journal::set_aside(layout, t.id, &placement, path)
                        .map_err(std::io::Error::other),
                    None => std::fs::remove_file(src),
                })
                .map_err(|e| stopped(e.to_string(), &report))?;
                prune_parents(&src, src_root);
                report.dropped += 1;
            }
            Action::RemoveTemp { path, source, .. } => {
                let root = match source {
                    None => &plan.target.root,
                    Some(i) => &plan.sources[*i].root,
                };
                moves::remove_temp(root, path).map_err(|e| stopped(e.to_string(), &report))?;
                report.temps_removed += 1;
            }
            Action::InvalidateCatalog => {
                Catalog::invalidate(layout).map_err(|e| stopped(e.to_string(), &report))?;
                report.catalog_invalidated = true;
            }
            Action::FinishMigration => {
                finish_migration(plan, layout, repo).map_err(|e| stopped(e, &report))?;
                report.migration_finished = true;
            }
            Action::PruneTrash { id, .. } => {
                let done = prune::prune(layout, id, &plan.target.placement(), remote)
                    .map_err(|e| stopped(e.to_string(), &report))?;
                report.trash_pruned += 1;
                report.bytes_pruned += done.bytes;
            }
            Action::RenameLocal { .. } | Action::DeleteSourceRemote { .. } => {
                let Some(rt) = rt.as_ref() else {
                    return Err(stopped("a sync action needs the remote".into(), &report));
                };
                rt.block_on(remote::run(
                    action,
                    &plan.target.root,
                    &remotes_with(remote, sources, &cache, trash.as_ref()),
                ))
                .map_err(|e| stopped(e.to_string(), &report))?;
                if let Action::DeleteSourceRemote { objects, source } = action {
                    report.deleted_remote += objects.len();
                    // A drained remote's base would outlive it: drop it.
                    let base = layout.sync_base_path(&plan.sources[*source].placement());
                    match std::fs::remove_file(&base) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(stopped(e.to_string(), &report)),
                    }
                }
            }
            Action::RecordBase {
                add,
                unhydrated,
                drop,
            } => {
                let Some((base, base_path)) = base.as_mut() else {
                    return Err(stopped("a sync action needs the remote".into(), &report));
                };
                for rec in add {
                    base.set(
                        rec.path.clone(),
                        crate::state::BaseEntry {
                            sha256: rec.sha256,
                            size: rec.size,
                            version: rec.version.clone(),
                        },
                    );
                }
                for rec in unhydrated {
                    base.set_unhydrated(rec.path.clone(), rec.object());
                }
                report.recorded_remote_only += unhydrated.len();
                for p in drop {
                    base.forget(p);
                }
                base.save(base_path)
                    .map_err(|e| stopped(e.to_string(), &report))?;
            }
            Action::MirrorConfig {
                path,
                sha256,
                local,
                ..
            } => {
                remote::mirror_config(repo, &plan.target.root, path, sha256, *local)
                    .map_err(|e| stopped(e.to_string(), &report))?;
                report.mirrored += 1;
            }
            Action::PublishSentinel {
                path,
                sources,
                objects,
            } => {
                // A phase of its own: every other action (all uploads
                // included) has finished before the sentinel is considered.
                if i + 1 != plan.actions.len() {
                    return Err(stopped(
                        "the sentinel must be the plan's last action; plan again".into(),
                        &report,
                    ));
                }
                let (Some(rt), Some(target)) = (rt.as_ref(), remote) else {
                    return Err(stopped("a sync action needs the remote".into(), &report));
                };
                let change = rt
                    .block_on(remote::publish_sentinel(
                        target,
                        &plan.target.root,
                        path,
                        sources,
                        objects,
                    ))
                    .map_err(|e| stopped(e.to_string(), &report))?;
                report.sentinel_published = true;
                #[cfg(feature = "failpoints")]
                remote::action_done_for_tests();
                if let Some((base, base_path)) = base.as_mut() {
                    remote::record(base, change);
                    base.save(base_path)
                        .map_err(|e| stopped(e.to_string(), &report))?;
                }
            }
            Action::RecordDeletes {
                files,
                after,
                prune,
            } => {
                let (Some(rt), Some(target)) = (rt.as_ref(), remote) else {
                    return Err(stopped("a sync action needs the remote".into(), &report));
                };
                let me = crate::state::deliberate::clone_id(layout)
                    .map_err(|e| stopped(e.to_string(), &report))?;
                rt.block_on(remote::record_deletes(
                    target,
                    &me,
                    files,
                    after.as_deref(),
                    prune,
                ))
                .map_err(|e| stopped(e.to_string(), &report))?;
            }
            Action::PruneRecords { prune } => {
                let (Some(rt), Some(target)) = (rt.as_ref(), remote) else {
                    return Err(stopped("a sync action needs the remote".into(), &report));
                };
                rt.block_on(remote::remove_at_versions(target, prune))
                    .map_err(|e| stopped(e.to_string(), &report))?;
            }
            Action::NoteProgress {
                passed,
                check,
                replaces,
                prune,
            } => {
                let (Some(rt), Some(target), Some((base, _))) =
                    (rt.as_ref(), remote, base.as_ref())
                else {
                    return Err(stopped("a sync action needs the remote".into(), &report));
                };
                // Only what is true now: a base still holding a file
                // another clone deleted has not passed its record.
                if !check.iter().any(|f| {
                    base.files
                        .get(&f.path)
                        .is_some_and(|b| b.version == f.version)
                }) {
                    let me = crate::state::deliberate::clone_id(layout)
                        .map_err(|e| stopped(e.to_string(), &report))?;
                    rt.block_on(remote::note_progress(target, &me, passed, replaces, prune))
                        .map_err(|e| stopped(e.to_string(), &report))?;
                }
            }
            Action::Upload { .. }
            | Action::Download { .. }
            | Action::DeleteLocal { .. }
            | Action::DeleteRemote { .. }
            | Action::Fetch { .. }
            | Action::CopyRemote { .. } => {
                return Err(stopped("a sync action needs the remote".into(), &report));
            }
        }
        report.completed += 1;
        meter.finished(
            u64::from(action.path().is_some()),
            carried_bytes(action),
            || describe_done(action),
        );
    }
    // The cache only speeds up the next observation; failing to save it
    // loses nothing. Apply sees only the files it acts on, so it keeps the
    // entries it did not touch (saving only those it used would make the
    // verifying plan read every other file again).
    let _ = cache.save_keeping();
    drop(trash);
    if let Some(j) = journaled.as_mut() {
        for (path, sha) in replaced_by {
            if let Some(e) = j
                .entries
                .iter_mut()
                .find(|e| e.op == journal::Op::SetAside && e.path == path)
            {
                e.written = Some(sha);
            }
        }
        j.finished = true;
        let _ = j.save(layout);
    }
    // A lock lost during the last step: what was done stays done, but the
    // run did not hold the lock throughout, so it must not report success.
    if let Some(reason) = watch.lost() {
        return Err(ApplyError::Stopped {
            index: total,
            kind: "lock",
            what: "the datastore lock".into(),
            reason,
            completed: report.completed,
        });
    }
    // Every delete of this clone's made before this push has reached the
    // bucket: from now on they explain nothing (`state::deliberate`).
    if plan.remote.is_some() && plan.scope.direction().is_some_and(|d| d.pushes()) {
        let marker = layout.deletes_pushed_path(&plan.target.placement());
        let _ = crate::fsutil::atomic_write(&marker, crate::clock::now_rfc3339().as_bytes());
    }
    Ok(report)
}

/// The remotes for one step. Transfers check their preconditions against
/// the hash cache the plan was observed with (a file whose inode, size and
/// mtime are unchanged is not read again); built per step, as moves update
/// the cache.
fn remotes_with<'a>(
    target: Option<&'a RemoteTarget>,
    sources: &'a [Option<RemoteTarget>],
    hashes: &'a HashCache,
    trash: Option<&'a journal::Trash<'a>>,
) -> remote::Remotes<'a> {
    remote::Remotes {
        target,
        sources,
        hashes: Some(hashes),
        trash,
    }
}

/// The journal of an apply whose plan deletes or replaces anything,
/// written before anything runs: each cache delete sets the file aside
/// into its trash, each remote delete or replacement first copies the
/// object into its remote trash.
fn journal_deletes(plan: &Plan, layout: &Layout) -> Result<Option<journal::Journal>, ApplyError> {
    let placement = plan.target.placement();
    let remote_entry = |path: &crate::layout::TierPath, written: Option<&Sha256>| {
        journal::Entry::remote_set_aside(&placement, path, written.map(Sha256::hex))
    };
    let entry_in =
        |placement: Placement, path: &crate::layout::TierPath, sha256: &Sha256| journal::Entry {
            op: journal::Op::SetAside,
            size: std::fs::symlink_metadata(layout.file_path(&placement, path))
                .map(|m| m.len())
                .unwrap_or(0),
            placement,
            path: path.clone(),
            sha256: sha256.hex(),
            written: None,
        };
    let local_entry =
        |path: &crate::layout::TierPath, sha256: &Sha256| entry_in(placement.clone(), path, sha256);
    let entries: Vec<journal::Entry> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::DeleteLocal { path, sha256 } => Some(local_entry(path, sha256)),
            // A source's copy whose twin is at the target: set aside there.
            Action::DropDuplicate {
                path,
                source,
                sha256,
                ..
            } => Some(entry_in(plan.sources[*source].placement(), path, sha256)),
            // A replaced cache file: what it held goes to the trash; what
            // replaced it is recorded once it has landed.
            Action::Download {
                path,
                local: Some(old),
                ..
            } => Some(local_entry(path, old)),
            Action::DeleteRemote { path, .. } => Some(remote_entry(path, None)),
            Action::Upload {
                path,
                sha256,
                remote: crate::plan::RemoteExpect::Version { .. },
                ..
            } => Some(remote_entry(path, Some(sha256))),
            _ => None,
        })
        .collect();
    if entries.is_empty() {
        return Ok(None);
    }
    let local = entries
        .iter()
        .filter(|e| e.op == journal::Op::SetAside)
        .count();
    let mut summary = format!(
        "{}: {local} file(s) deleted or replaced, {} remote object(s) deleted or replaced",
        plan.scope.as_str(),
        entries.len() - local
    );
    // `--no-undo`: the history still shows the run, which kept nothing.
    let entries = if plan.no_undo {
        summary.push_str(" (--no-undo: not kept)");
        Vec::new()
    } else {
        entries
    };
    let mut j = journal::Journal::begin(layout, &journal::command_line(), summary, entries);
    j.no_undo = plan.no_undo;
    j.save(layout).map_err(|e| ApplyError::Stopped {
        index: 0,
        kind: "journal",
        what: "the undo journal".into(),
        reason: e.to_string(),
        completed: 0,
    })?;
    Ok(Some(j))
}

fn describe_global(action: &Action) -> &'static str {
    match action {
        Action::InvalidateCatalog => "the catalog",
        Action::FinishMigration => "the migration record",
        _ => "",
    }
}

/// Renames whole the directories every file of which a run of moves
/// (`run`, action indices) carries to the same place at the target (see
/// [`moves::whole_dirs`]), one source at a time. Returns the indices of the
/// moves done so and, if a rename failed, the index of a move it concerned
/// and why (the renames before it stand).
fn rename_whole_dirs(
    plan: &Plan,
    run: std::ops::Range<usize>,
    cache: &HashCache,
) -> (Vec<usize>, Option<(usize, moves::MoveError)>) {
    use std::collections::{BTreeMap, HashMap};
    // Sorted by path, so the moves under a directory are one range.
    let mut by_source: BTreeMap<usize, BTreeMap<&str, (&Sha256, usize)>> = BTreeMap::new();
    for k in run {
        if let Action::Move {
            path,
            source,
            sha256,
            ..
        } = &plan.actions[k]
        {
            by_source
                .entry(*source)
                .or_default()
                .insert(path.as_str(), (sha256, k));
        }
    }
    let mut done = Vec::new();
    for (source, moves_of) in by_source {
        let src_root = &plan.sources[source].root;
        let planned: HashMap<&str, &Sha256> = moves_of.iter().map(|(p, (s, _))| (*p, *s)).collect();
        for dir in moves::whole_dirs(src_root, &plan.target.root, &planned, cache) {
            let prefix = format!("{}/", dir.rel);
            let inside: Vec<usize> = moves_of
                .range(prefix.as_str()..)
                .take_while(|(p, _)| p.starts_with(&prefix))
                .map(|(_, (_, k))| *k)
                .collect();
            let first = inside
                .iter()
                .copied()
                .min()
                .expect("a whole dir holds files");
            if let Err(e) = moves::rename_dir(src_root, &plan.target.root, &dir.rel) {
                return (done, Some((first, e)));
            }
            prune_parents(&src_root.join(&dir.rel), src_root);
            done.extend(inside);
            #[cfg(feature = "failpoints")]
            if fail::eval("apply-after-move", |_| ()).is_some() {
                die_for_tests();
            }
        }
    }
    (done, None)
}

/// Removes the directories a move emptied, up to the source tier root.
/// How many per-file moves wait at most for their directories' fsync.
const MOVE_BATCH: usize = 4096;

/// Makes a run of linked moves final: every destination directory fsynced
/// once, then each source removed (and its emptied directories).
fn finish_moves(linked: &mut Vec<(PathBuf, PathBuf, PathBuf)>) -> Result<(), String> {
    let dirs: std::collections::BTreeSet<&Path> = linked
        .iter()
        .filter_map(|(_, _, dst)| dst.parent())
        .collect();
    for dir in dirs {
        crate::fsutil::sync_dir(dir).map_err(|e| format!("cannot sync {}: {e}", dir.display()))?;
    }
    for (src, src_root, _) in linked.drain(..) {
        match std::fs::remove_file(&src) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot remove {}: {e}", src.display())),
        }
        prune_parents(&src, &src_root);
        #[cfg(feature = "failpoints")]
        if fail::eval("apply-after-move", |_| ()).is_some() {
            die_for_tests();
        }
    }
    Ok(())
}

fn prune_parents(file: &Path, root: &Path) {
    if let Some(parent) = file.parent() {
        crate::fsutil::remove_empty_dirs(parent, root);
    }
}

/// Clears `migrating_from` once no source holds datastore files, and
/// removes the sources' emptied namespace directories.
fn finish_migration(plan: &Plan, layout: &Layout, repo: &Path) -> Result<(), String> {
    let mut config = Config::load(repo).map_err(|e| e.to_string())?;
    for source in &plan.sources {
        if let Some(left) = first_datastore_file(layout, &source.placement()) {
            return Err(format!(
                "{} still holds datastore files (e.g. {}); plan again to move them",
                source.root.display(),
                left.display()
            ));
        }
    }
    let recorded: Vec<_> = plan.sources.iter().map(|s| s.placement()).collect();
    config.migrating_from.retain(|p| !recorded.contains(p));
    config.save(repo).map_err(|e| e.to_string())?;
    for source in &plan.sources {
        let placement = source.placement();
        for &tier in layout.tiers() {
            let dir = layout.tier_dir(&placement, tier);
            if dir != layout.tier_dir(&config.target(), tier) {
                remove_empty_tree(&dir);
            }
        }
        if placement.namespace.is_some() {
            // Only removes it when empty: never another repo's data.
            let _ = std::fs::remove_dir(&source.root);
        }
    }
    Ok(())
}

/// Removes empty directories under (and including) `dir`, deepest first.
fn remove_empty_tree(dir: &Path) {
    let entries: Vec<_> = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .contents_first(true)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_dir())
        .collect();
    for e in entries {
        let _ = std::fs::remove_dir(e.path());
    }
}

/// Test-only crash: the failpoint `apply-after-move` set to `return`
/// kills the process with SIGKILL, as a power cut or OOM kill would.
#[allow(dead_code)]
fn crash_for_tests() -> Result<ApplyReport, ApplyError> {
    die_for_tests()
}

/// Test-only: SIGKILL ourselves, as `kill -9` would: no destructor, no
/// lock release, temp files left where they are.
pub(crate) fn die_for_tests() -> ! {
    // SAFETY: kill(2) on our own pid with a constant signal has no memory effects.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("SIGKILL does not return")
}
