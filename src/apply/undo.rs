//! Applying an undo plan: each step checks its precondition right before
//! acting, and the undo is itself journaled (written before its first
//! step), so it can be undone in turn.

use crate::catalog::Catalog;
use crate::fsutil;
use crate::journal::{self, Entry, Journal, Op};
use crate::layout::TierPath;
use crate::layout::{Layout, Tier};
use crate::plan::undo::{MoveBack, Restore, RestoreRemote, SetAside, SetAsideRemote};
use crate::plan::undo::{UndoAction, UndoPlan};
use crate::state::HashCache;

use super::moves;
use super::remote::keep_in_trash;

#[derive(Debug, thiserror::Error)]
pub enum UndoApplyError {
    #[error("undo refused: the plan has {0} conflict(s)")]
    Conflicts(usize),
    #[error("{path}: {reason}; {completed} step(s) completed and stay done")]
    Stopped {
        path: String,
        reason: String,
        completed: usize,
        undoes: String,
    },
    #[error(transparent)]
    Journal(#[from] journal::UndoError),
}

/// What an undo did, and the id it is recorded under.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct UndoReport {
    pub apply_id: String,
    pub restored: usize,
    pub set_aside: usize,
    pub restored_remote: usize,
    /// Remote objects an earlier undo restored, taken away again (kept in
    /// this undo's remote trash).
    pub set_aside_remote: usize,
    /// Files an apply moved, moved back where they came from.
    pub moved_back: usize,
    /// Undoing a teammate's apply: the cache files a pull then changed, so
    /// this clone's cache follows the bucket (set by the engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub followed: Option<usize>,
    /// The requests the undo sent to the datastore, by class (set by the
    /// engine; none for an undo of the cache only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_sent: Option<crate::telemetry::RequestCounts>,
}

impl UndoReport {
    /// Steps done, local and remote.
    fn completed(&self) -> usize {
        self.restored
            + self.set_aside
            + self.restored_remote
            + self.set_aside_remote
            + self.moved_back
    }
}

/// Applies `plan`; `remote` is the store of the placement whose remote
/// objects it restores (when it restores any).
pub(crate) fn apply(
    layout: &Layout,
    plan: &UndoPlan,
    command: &str,
    remote: Option<&crate::store::RemoteTarget>,
) -> Result<UndoReport, UndoApplyError> {
    if !plan.conflicts.is_empty() {
        return Err(UndoApplyError::Conflicts(plan.conflicts.len()));
    }
    // What it moves back is what it made (its redo moves them again).
    let (entries, moved): (Vec<Entry>, Vec<Entry>) = plan
        .actions
        .iter()
        .map(journal_entry)
        .partition(|e| e.op != Op::Moved);
    let summary = format!("undo of {}", plan.undoes);
    let mut journal = Journal::begin(layout, command, summary, entries);
    journal.undoes = Some(plan.undoes.clone());
    journal.moved = plan.moves_back.clone();
    if !moved.is_empty() {
        journal.made = Some(journal::made::write_entries(layout, &journal.id, moved)?);
    }
    journal.save(layout)?;
    let mut recorded = record(layout, plan, remote, &journal.id)?;
    let mut cache = HashCache::load(&layout.hash_cache_path());
    let mut report = UndoReport {
        apply_id: journal.id.clone(),
        ..UndoReport::default()
    };
    let stopped = |path: &str, reason: String, report: &UndoReport| UndoApplyError::Stopped {
        path: path.to_string(),
        reason,
        completed: report.completed(),
        undoes: plan.undoes.clone(),
    };
    let mut data_touched = false;
    let mut i = 0;
    while i < plan.actions.len() {
        let action = &plan.actions[i];
        match action {
            UndoAction::Restore(r) => restore(layout, r, &mut cache).map(|()| report.restored += 1),
            UndoAction::SetAside(s) => {
                set_aside_local(layout, &journal.id, s).map(|()| report.set_aside += 1)
            }
            UndoAction::MoveBack(m) => {
                move_back(layout, m, &mut cache).map(|()| report.moved_back += 1)
            }
            UndoAction::RestoreRemote(_) | UndoAction::SetAsideRemote(_) => {
                // Consecutive remote steps run side by side.
                i += remote_run(&plan.actions[i..], remote, &journal.id, &mut report)
                    .map_err(|(path, e)| stopped(path.as_str(), e, &report))?;
                continue;
            }
        }
        .map_err(|reason| stopped(action.path().as_str(), reason, &report))?;
        i += 1;
        data_touched |= action.path().tier() == Tier::Data;
        // Test-only: die between two steps (FAILPOINTS=undo-step-done=N*off->return).
        #[cfg(feature = "failpoints")]
        if fail::eval("undo-step-done", |_| ()).is_some() {
            super::die_for_tests();
        }
    }
    let _ = cache.save_keeping();
    // The catalog describes the data tier: it is rebuilt on its next open.
    if data_touched {
        Catalog::invalidate(layout).map_err(|e| stopped("the catalog", e.to_string(), &report))?;
    }
    if report.set_aside_remote > 0 {
        record_set_asides(layout, plan, remote);
    }
    forget_made(layout, plan).map_err(|e| stopped("the sync base", e.to_string(), &report))?;
    journal.finished = true;
    journal.save(layout)?;
    if let (Some(recorded), Some(target)) = (recorded.take(), remote) {
        super::history::finish_undo(crate::store::runtime(), layout, plan, target, recorded);
    }
    Ok(report)
}

/// What the undo took away from the bucket is a deliberate delete, as a
/// sync's own are: recorded for the other clones, whose next pulls then
/// follow it instead of counting it against their delete guards. The
/// undo is done either way: a failure is logged.
fn record_set_asides(
    layout: &Layout,
    plan: &UndoPlan,
    remote: Option<&crate::store::RemoteTarget>,
) {
    let Some(target) = remote else {
        return;
    };
    let files: Vec<crate::state::delete_records::DeletedFile> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            UndoAction::SetAsideRemote(s) if *s.placement == target.placement => {
                Some(crate::state::delete_records::DeletedFile {
                    path: s.path.clone(),
                    sha256: crate::digest::Sha256::parse(&s.sha256)?,
                    version: s.version.clone(),
                })
            }
            _ => None,
        })
        .collect();
    let Ok(me) = crate::state::delete_records::clone_id(layout) else {
        return;
    };
    if files.is_empty() {
        return;
    }
    let written = crate::store::runtime().block_on(super::remote::record_deletes(
        target,
        &me,
        &files,
        None,
        &[],
    ));
    match written {
        Ok((key, version, body)) => crate::state::delete_records::remember_record(
            &layout.delete_records_cache_path(&target.placement),
            key,
            version,
            body,
        ),
        Err(e) => {
            tracing::warn!(target: "swamp::apply", "the undo's deletes were not recorded: {e}")
        }
    }
}

/// The undo's record in the team's history, written before its first
/// remote step (when it has one).
fn record(
    layout: &Layout,
    plan: &UndoPlan,
    remote: Option<&crate::store::RemoteTarget>,
    id: &str,
) -> Result<Option<super::history::Recorded>, UndoApplyError> {
    let Some(target) = remote else {
        return Ok(None);
    };
    let stopped = |reason: String| UndoApplyError::Stopped {
        path: "the history record".to_string(),
        reason,
        completed: 0,
        undoes: plan.undoes.clone(),
    };
    let author = super::history::Author {
        id,
        clone: crate::state::delete_records::clone_id(layout)
            .map_err(|e| stopped(e.to_string()))?,
        fingerprint: None,
        undoes: Some(plan.undoes.clone()),
    };
    super::history::begin_undo(crate::store::runtime(), layout, plan, target, author)
        .map_err(|e| stopped(e.to_string()))
}

/// A remote step of an undo, as its action holds it.
#[derive(Clone, Copy)]
enum RemoteStep<'a> {
    Restore(&'a RestoreRemote),
    SetAside(&'a SetAsideRemote),
}

impl<'a> RemoteStep<'a> {
    fn of(action: &'a UndoAction) -> Option<Self> {
        match action {
            UndoAction::RestoreRemote(r) => Some(RemoteStep::Restore(r)),
            UndoAction::SetAsideRemote(s) => Some(RemoteStep::SetAside(s)),
            UndoAction::Restore(_) | UndoAction::SetAside(_) | UndoAction::MoveBack(_) => None,
        }
    }

    fn target(self) -> (&'a crate::config::Placement, &'a TierPath) {
        match self {
            RemoteStep::Restore(r) => (&r.placement, &r.path),
            RemoteStep::SetAside(s) => (&s.placement, &s.path),
        }
    }
}

/// Runs the remote steps at the head of `actions` side by side (see
/// [`remote_many`]), counting each done in `report`. Returns how many ran,
/// or the path and reason of the first that failed.
fn remote_run<'a>(
    actions: &'a [UndoAction],
    remote: Option<&crate::store::RemoteTarget>,
    id: &str,
    report: &mut UndoReport,
) -> Result<usize, (&'a TierPath, String)> {
    let run: Vec<RemoteStep> = actions.iter().map_while(RemoteStep::of).collect();
    let done = crate::store::runtime().block_on(remote_many(&run, remote, id));
    for (step, r) in run.iter().zip(&done) {
        match (step, r) {
            (RemoteStep::SetAside(_), Ok(())) => report.set_aside_remote += 1,
            (RemoteStep::Restore(_), Ok(())) => report.restored_remote += 1,
            (_, Err(_)) => {}
        }
    }
    match done
        .into_iter()
        .zip(&run)
        .find_map(|(r, step)| r.err().map(|e| (step, e)))
    {
        Some((step, e)) => Err((step.target().1, e)),
        None => Ok(run.len()),
    }
}

/// What the undo's own journal records of one of its actions, so the undo
/// can be undone in turn.
fn journal_entry(a: &UndoAction) -> Entry {
    match a {
        UndoAction::Restore(Restore {
            placement,
            path,
            sha256,
            size,
            ..
        }) => Entry {
            op: Op::Restored,
            placement: placement.clone(),
            path: path.clone(),
            sha256: sha256.clone(),
            size: *size,
            written: None,
            from: None,
        },
        UndoAction::SetAside(SetAside {
            placement,
            path,
            sha256,
            size,
            ..
        }) => Entry {
            op: Op::SetAside,
            placement: placement.clone(),
            path: path.clone(),
            sha256: sha256.clone(),
            size: *size,
            written: None,
            from: None,
        },
        // Moved again by a redo.
        UndoAction::MoveBack(MoveBack {
            placement,
            to,
            path,
            sha256,
            size,
        }) => Entry {
            op: Op::Moved,
            placement: to.clone(),
            path: path.clone(),
            sha256: sha256.clone(),
            size: *size,
            written: None,
            from: Some(placement.clone()),
        },
        // Into an absent key: undone by taking it away again.
        UndoAction::RestoreRemote(RestoreRemote {
            placement,
            path,
            sha256,
            expect: None,
            ..
        }) => Entry {
            op: Op::RemoteRestored,
            placement: placement.clone(),
            path: path.clone(),
            sha256: sha256.clone(),
            size: 0,
            written: None,
            from: None,
        },
        // Over an object: what it replaces is kept in this undo's
        // remote trash first, exactly as a sync's overwrite does.
        UndoAction::RestoreRemote(RestoreRemote {
            placement,
            path,
            sha256,
            expect: Some(_),
            ..
        }) => Entry::remote_set_aside(placement, path, Some(sha256.clone())),
        // Kept in this undo's remote trash, then deleted.
        UndoAction::SetAsideRemote(SetAsideRemote {
            placement, path, ..
        }) => Entry::remote_set_aside(placement, path, None),
    }
}

/// Moves a file back from its apply's trash, never through a symlink.
fn restore(layout: &Layout, action: &Restore, cache: &mut HashCache) -> Result<(), String> {
    let Restore {
        placement,
        path,
        from,
        sha256,
        ..
    } = action;
    let src = layout.set_aside_path(placement, path, from);
    move_to(
        layout,
        &src,
        placement,
        path,
        sha256,
        cache,
        Arrival::Restored,
    )
}

/// Moves a file the apply moved back where it came from, never through a
/// symlink and never over anything there.
fn move_back(layout: &Layout, action: &MoveBack, cache: &mut HashCache) -> Result<(), String> {
    let MoveBack {
        placement,
        to,
        path,
        sha256,
        ..
    } = action;
    let src = layout.file_path(placement, path);
    move_to(layout, &src, to, path, sha256, cache, Arrival::MovedBack)?;
    if let Some(dir) = src.parent() {
        fsutil::remove_empty_dirs(dir, &layout.tier_dir(placement, path.tier()));
    }
    Ok(())
}

/// How an undo step puts a file at its place.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arrival {
    /// From the trash (an identical file there already, from an
    /// interrupted undo, is taken as done).
    Restored,
    /// From where the apply moved it (never over anything there).
    MovedBack,
}

/// Moves `src` to `path` of `placement` if it still hashes to `sha256`,
/// never through a symlink.
fn move_to(
    layout: &Layout,
    src: &std::path::Path,
    placement: &crate::config::Placement,
    path: &TierPath,
    sha256: &str,
    cache: &mut HashCache,
    how: Arrival,
) -> Result<(), String> {
    let dst = layout.file_path(placement, path);
    let verb = match how {
        Arrival::Restored => "restored",
        Arrival::MovedBack => "moved",
    };
    if let Ok(Some(link)) = fsutil::symlink_below(&layout.link_check_root(placement, &dst), &dst) {
        return Err(format!(
            "{} is a symlink; nothing is {verb} through it",
            link.display()
        ));
    }
    if how == Arrival::MovedBack && std::fs::symlink_metadata(&dst).is_ok() {
        return Err(format!(
            "{} exists since the plan; nothing was moved over it, plan again",
            dst.display()
        ));
    }
    let Some(sha256) = crate::digest::Sha256::parse(sha256) else {
        return Err(format!(
            "the journal's sha256 for {path} is not a sha256 ({sha256})"
        ));
    };
    moves::move_file(src, &dst, &sha256, cache).map_err(|e| e.to_string())
}

/// What the undo set aside because the apply made it (downloaded or
/// uploaded it) leaves this clone's sync base too: the clone is as before
/// the apply, with a download or an upload pending, never a delete.
fn forget_made(layout: &Layout, plan: &UndoPlan) -> Result<(), crate::state::base::BaseError> {
    // By base file: two places of one URL (on two servers) have two.
    let mut by_base: std::collections::BTreeMap<_, (&crate::config::Placement, Vec<&TierPath>)> =
        std::collections::BTreeMap::new();
    for a in &plan.actions {
        let (placement, path) = match a {
            UndoAction::SetAside(s) if s.made => (&*s.placement, &s.path),
            UndoAction::SetAsideRemote(s) if s.made => (&*s.placement, &s.path),
            _ => continue,
        };
        by_base
            .entry(layout.sync_base_path(placement))
            .or_insert_with(|| (placement, Vec::new()))
            .1
            .push(path);
    }
    for (at, (placement, paths)) in by_base {
        let mut base = crate::state::SyncBase::load(&at, &Layout::remote_url(placement))?;
        for p in paths {
            base.forget(p);
        }
        base.save(&at)?;
    }
    Ok(())
}

/// Sets a file aside into this undo's trash, if it is still what the plan
/// saw.
fn set_aside_local(layout: &Layout, id: &str, action: &SetAside) -> Result<(), String> {
    let SetAside {
        placement,
        path,
        sha256,
        ..
    } = action;
    let file = layout.file_path(placement, path);
    match fsutil::sha256_file(&file) {
        Ok(found) if &found == sha256 => {}
        Ok(found) => {
            return Err(format!(
                "it changed since the plan (sha256 {found}); plan again"
            ));
        }
        Err(e) => return Err(e.to_string()),
    }
    journal::set_aside(layout, id, placement, path).map_err(|e| e.to_string())?;
    if let Some(dir) = file.parent() {
        fsutil::remove_empty_dirs(dir, &layout.tier_dir(placement, path.tier()));
    }
    Ok(())
}

/// Runs remote undo steps, up to [`crate::state::journaled::HEAD_CONCURRENCY`]
/// at once: a restore copies the object back from its apply's remote
/// trash, only while the key is absent or still at the version the apply
/// wrote, after keeping what it replaces in this undo's (`id`) remote
/// trash; a set-aside keeps the object there, then deletes it at the
/// version observed. One outcome per action, in order.
async fn remote_many(
    run: &[RemoteStep<'_>],
    remote: Option<&crate::store::RemoteTarget>,
    id: &str,
) -> Vec<Result<(), String>> {
    use crate::store::{Precondition, StoreError};
    use futures_util::StreamExt;
    futures_util::stream::iter(run.iter().map(|&step| async move {
        let (placement, path) = step.target();
        let Some(target) = remote.filter(|r| &r.placement == placement) else {
            return Err("the remote it restores into is not configured".to_string());
        };
        let key = target.key(path);
        let key = key.as_str();
        match step {
            RemoteStep::Restore(RestoreRemote { from, expect, .. }) => {
                let pre = match expect {
                    None => Precondition::CreateOnly,
                    Some(v) => {
                        // What it replaces is kept in this undo's trash.
                        keep_in_trash(target, id, path, v)
                            .await
                            .map_err(|e| e.to_string())?;
                        Precondition::Matches(v.clone())
                    }
                };
                let trash_key = Layout::remote_trash_key(placement, from, path);
                target
                    .store
                    .copy(&trash_key, key, &pre)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            RemoteStep::SetAside(SetAsideRemote { version, .. }) => {
                keep_in_trash(target, id, path, version)
                    .await
                    .map_err(|e| e.to_string())?;
                match target
                    .store
                    .delete(key, &Precondition::Matches(version.clone()))
                    .await
                {
                    Ok(()) | Err(StoreError::NotFound { .. }) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        // Test-only: die between two steps (FAILPOINTS=undo-step-done=N*off->return).
        #[cfg(feature = "failpoints")]
        if fail::eval("undo-step-done", |_| ()).is_some() {
            super::die_for_tests();
        }
        Ok(())
    }))
    .buffered(crate::state::journaled::HEAD_CONCURRENCY)
    .collect()
    .await
}
