//! The local executor: moves (a run of them renamed a whole directory at
//! a time where every file of it goes to the same place, else each file
//! linked into place, its directory made durable once per batch, then the
//! source removed), identical duplicates dropped, and swamp temp files
//! cleared.

use crate::plan::action::{DropDuplicate, Move, RelocateTrash, RemovePartial, RemoveTemp};
use std::path::{Path, PathBuf};

use crate::journal;
use crate::plan::{Action, Plan};
use crate::state::HashCache;

use super::run::Run;
use super::{ApplyError, StopCause, moves};

impl Run<'_> {
    /// Whether move `i` was already made by renaming its whole directory
    /// (counted as moved if so). The first move of each run of moves
    /// renames the run's whole directories.
    pub(super) fn moved_already(&mut self, i: usize) -> Result<bool, ApplyError> {
        let plan = self.plan;
        let Action::Move(Move { size, .. }) = &plan.actions[i] else {
            return Ok(false);
        };
        if i >= self.scanned_to {
            let end = i + plan.actions[i..]
                .iter()
                .take_while(|a| matches!(a, Action::Move(_)))
                .count();
            self.scanned_to = end;
            let (done, failed) = rename_whole_dirs(plan, i..end, self.cache());
            if let Some((at, e)) = failed {
                return Err(ApplyError::Stopped {
                    index: at + 1,
                    kind: "move",
                    what: plan.actions[at]
                        .path()
                        .map(ToString::to_string)
                        .unwrap_or_default(),
                    source: Box::new(e.into()),
                    completed: self.report.completed + done.len(),
                });
            }
            if !done.is_empty() && self.moved_whole.is_empty() {
                self.moved_whole = vec![false; plan.actions.len()];
            }
            for k in done {
                self.moved_whole[k] = true;
            }
        }
        if !self.moved_whole.get(i).copied().unwrap_or(false) {
            return Ok(false);
        }
        self.report.moved += 1;
        self.report.bytes_moved += size;
        Ok(true)
    }

    /// Links move `i`'s file into place; the sources of a run go once the
    /// run's destinations are durable: each directory fsynced once, not
    /// once per file. Killed before that, both copies are there (the next
    /// plan drops the duplicate); nothing is ever only in an unsynced place.
    pub(super) fn move_file(&mut self, i: usize, action: &Move) -> Result<(), StopCause> {
        let plan = self.plan;
        let Move {
            path,
            source,
            size,
            sha256,
        } = action;
        let src_root = &plan.sources[*source].dir;
        let src = src_root.join(path.as_str());
        let dst = plan.target.dir.join(path.as_str());
        moves::link_file(&src, &dst, sha256, self.cache())?;
        self.linked.push((src, src_root.clone(), dst));
        self.report.moved += 1;
        self.report.bytes_moved += size;
        let run_goes_on = plan.actions.get(i + 1).is_some_and(|a| {
            matches!(a, Action::Move(_)) && !self.moved_whole.get(i + 1).copied().unwrap_or(false)
        });
        if !run_goes_on || self.linked.len() >= MOVE_BATCH {
            finish_moves(&mut self.linked)?;
        }
        Ok(())
    }

    /// Drops a source's copy whose twin is at the target (set aside for
    /// undo when the run keeps a trash).
    pub(super) fn drop_duplicate(&mut self, action: &DropDuplicate) -> Result<(), StopCause> {
        let DropDuplicate {
            path,
            source,
            sha256,
            ..
        } = action;
        let plan = self.plan;
        let src_root = &plan.sources[*source].dir;
        let src = src_root.join(path.as_str());
        let dst = plan.target.dir.join(path.as_str());
        let placement = plan.sources[*source].placement();
        let trash_id = self.trash().map(|t| t.id.to_string());
        let layout = self.layout;
        moves::drop_duplicate(&src, &dst, sha256, self.cache(), |src| match &trash_id {
            Some(id) => {
                journal::set_aside(layout, id, &placement, path).map_err(std::io::Error::other)
            }
            None => std::fs::remove_file(src),
        })?;
        prune_parents(&src, src_root);
        self.report.dropped += 1;
        Ok(())
    }

    /// Clears a swamp temp file whose writer is gone.
    pub(super) fn remove_temp(&mut self, action: &RemoveTemp) -> Result<(), StopCause> {
        let RemoveTemp {
            path,
            source,
            remote,
            ..
        } = action;
        if *remote {
            return self.remove_remote_temp(path);
        }
        let root = match source {
            None => &self.plan.target.dir,
            Some(i) => &self.plan.sources[*i].dir,
        };
        moves::remove_temp(root, path)?;
        self.report.temps_removed += 1;
        Ok(())
    }

    /// Removes a temp file an interrupted write left in the remote
    /// datastore (a directory bucket), if still untouched for a day.
    fn remove_remote_temp(&mut self, path: &crate::layout::TierPath) -> Result<(), StopCause> {
        let (Some(remote), Some(rt)) = (self.remote, self.rt) else {
            return Ok(());
        };
        let key = remote.key(path);
        rt.block_on(remote.store.remove_temp(&key, crate::store::TEMP_MAX_AGE))?;
        self.report.temps_removed += 1;
        Ok(())
    }

    /// Removes a partial download no plan will continue, under its key's
    /// partial lock (so never one a download is writing).
    pub(super) fn remove_partial(&mut self, action: &RemovePartial) -> Result<(), StopCause> {
        crate::store::resume::remove_partial(&self.layout.partial_dir(), &action.name)?;
        self.report.partials_removed += 1;
        Ok(())
    }

    /// Moves what earlier applies set aside inside a remote's cache tier
    /// tree into the cache's own trash, an apply's directory at a time.
    pub(super) fn relocate_trash(&mut self, action: &RelocateTrash) -> Result<(), StopCause> {
        let RelocateTrash {
            source, applies, ..
        } = action;
        let placement = match source {
            None => self.plan.target.placement(),
            Some(i) => self.plan.sources[*i].placement(),
        };
        let from = self.layout.legacy_trash_dir(&placement);
        let ns = placement.namespace.as_ref().map_or("_", |n| n.as_str());
        let to = self.layout.cache_trash_dir();
        moves::relocate_trash(&self.layout.cache_root(), &from, &to, applies, ns)?;
        self.report.trash_relocated += applies.len();
        Ok(())
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
    cache: &mut HashCache,
) -> (Vec<usize>, Option<(usize, moves::MoveError)>) {
    use std::collections::BTreeMap;
    let mut by_source: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
    for k in run {
        if let Action::Move(Move { source, .. }) = &plan.actions[k] {
            by_source.entry(*source).or_default().push(k as u32);
        }
    }
    let mut done = Vec::new();
    for (source, moves_of) in by_source {
        let src_root = &plan.sources[source].dir;
        let moves_of = moves::Planned::new(&plan.actions, moves_of);
        for dir in moves::whole_dirs(src_root, &plan.target.dir, &moves_of, cache) {
            let inside: Vec<usize> = moves_of.under(&dir.rel).collect();
            let first = inside
                .iter()
                .copied()
                .min()
                .expect("a whole dir holds files");
            if let Err(e) = moves::rename_dir(src_root, &plan.target.dir, &dir.rel) {
                return (done, Some((first, e)));
            }
            prune_parents(&src_root.join(&dir.rel), src_root);
            done.extend(inside);
            #[cfg(feature = "failpoints")]
            if fail::eval("apply-after-move", |_| ()).is_some() {
                super::die_for_tests();
            }
        }
    }
    (done, None)
}

/// How many per-file moves wait at most for their directories' fsync.
const MOVE_BATCH: usize = 4096;

/// Makes a run of linked moves final: every destination directory fsynced
/// once, then each source removed (and its emptied directories).
fn finish_moves(linked: &mut Vec<(PathBuf, PathBuf, PathBuf)>) -> Result<(), StopCause> {
    let dirs: std::collections::BTreeSet<&Path> = linked
        .iter()
        .filter_map(|(_, _, dst)| dst.parent())
        .collect();
    for dir in dirs {
        crate::fsutil::sync_dir(dir).map_err(|source| StopCause::SyncDir {
            dir: dir.to_path_buf(),
            source,
        })?;
    }
    for (src, src_root, _) in linked.drain(..) {
        match std::fs::remove_file(&src) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(StopCause::Remove { path: src, source }),
        }
        prune_parents(&src, &src_root);
        #[cfg(feature = "failpoints")]
        if fail::eval("apply-after-move", |_| ()).is_some() {
            super::die_for_tests();
        }
    }
    Ok(())
}

/// Removes the directories a move emptied, up to the source tier root.
pub(super) fn prune_parents(file: &Path, root: &Path) {
    if let Some(parent) = file.parent() {
        crate::fsutil::remove_empty_dirs(parent, root);
    }
}
