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

mod moves;

use std::path::Path;

use crate::catalog::Catalog;
use crate::config::Config;
use crate::layout::Layout;
use crate::plan::{Action, Plan};
use crate::state::HashCache;
use crate::state::observed::first_datastore_file;

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
    pub catalog_invalidated: bool,
    pub migration_finished: bool,
}

/// Receives progress: (actions done, actions total).
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize);

pub fn apply(
    plan: &Plan,
    layout: &Layout,
    repo: &Path,
    progress: Progress<'_>,
) -> Result<ApplyReport, ApplyError> {
    if plan.has_conflicts() {
        return Err(ApplyError::Conflicts(plan.conflicts.len()));
    }
    let mut cache = HashCache::load(&layout.hash_cache_path());
    let mut report = ApplyReport::default();
    let total = plan.actions.len();
    for (i, action) in plan.actions.iter().enumerate() {
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
                moves::move_file(&src, &dst, sha256, &mut cache)
                    .map_err(|e| stopped(e.to_string(), &report))?;
                prune_parents(&src, src_root);
                report.moved += 1;
                report.bytes_moved += size;
                fail::fail_point!("apply-after-move", |_| crash_for_tests());
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
                moves::drop_duplicate(&src, &dst, sha256, &mut cache)
                    .map_err(|e| stopped(e.to_string(), &report))?;
                prune_parents(&src, src_root);
                report.dropped += 1;
            }
            Action::InvalidateCatalog => {
                Catalog::invalidate(layout).map_err(|e| stopped(e.to_string(), &report))?;
                report.catalog_invalidated = true;
            }
            Action::FinishMigration => {
                finish_migration(plan, layout, repo).map_err(|e| stopped(e, &report))?;
                report.migration_finished = true;
            }
            Action::Upload { .. }
            | Action::Download { .. }
            | Action::DeleteLocal { .. }
            | Action::DeleteRemote { .. }
            | Action::RenameLocal { .. }
            | Action::RecordBase { .. } => {
                return Err(stopped(
                    "sync actions are applied by the remote apply, not the local one".into(),
                    &report,
                ));
            }
        }
        report.completed += 1;
        progress(report.completed, total);
    }
    // The cache only speeds up the next observation; failing to save it loses nothing.
    let _ = cache.save();
    Ok(report)
}

fn describe_global(action: &Action) -> &'static str {
    match action {
        Action::InvalidateCatalog => "the catalog",
        Action::FinishMigration => "the migration record",
        _ => "",
    }
}

/// Removes the directories a move emptied, up to the source tier root.
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
    // SAFETY: kill(2) on our own pid with a constant signal has no memory effects.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    unreachable!("SIGKILL does not return")
}
