//! The bookkeeping executors. On this machine: the sync base recorded
//! (`record-base`), the catalog marked for rebuild, due trash pruned,
//! definition files mirrored into the cache. In the remote: the
//! managed-config sentinel published last, delete records written and
//! pruned, this clone's progress noted.

use crate::catalog::Catalog;
use crate::plan::action::{
    MirrorConfig, NoteProgress, PruneRecords, PruneTrash, PublishSentinel, RecordBase,
    RecordDeletes,
};

use super::run::Run;
use super::{StopCause, prune, remote};

impl Run<'_> {
    /// Records in the sync base what both sides already agree on.
    pub(super) fn record_base(&mut self, action: &RecordBase) -> Result<(), StopCause> {
        let RecordBase {
            add,
            unhydrated,
            drop,
        } = action;
        let (base, base_path) = self.base.as_mut().ok_or(StopCause::NoRemote)?;
        // Made maps, not inserted one by one (see `set_unhydrated_many`).
        let entry = |rec: &crate::plan::BaseRecord| {
            let entry = crate::state::BaseEntry {
                sha256: rec.sha256,
                size: rec.size,
                version: rec.version.clone(),
            };
            (rec.path.clone(), entry)
        };
        base.set_many(vec![add.iter().map(entry).collect()]);
        base.set_unhydrated_many(
            unhydrated
                .iter()
                .map(|rec| (rec.path.clone(), rec.object())),
        );
        self.report.recorded_remote_only += unhydrated.len();
        for p in drop {
            base.forget(p);
        }
        base.save(base_path)?;
        Ok(())
    }

    pub(super) fn invalidate_catalog(&mut self) -> Result<(), StopCause> {
        Catalog::invalidate(self.layout)?;
        self.report.catalog_invalidated = true;
        Ok(())
    }

    /// Prunes an earlier apply's trash, as its journal names it.
    pub(super) fn prune_trash(&mut self, action: &PruneTrash) -> Result<(), StopCause> {
        let PruneTrash { id, .. } = action;
        let done = prune::prune(self.layout, id, &self.plan.target.placement(), self.remote)?;
        self.report.trash_pruned += 1;
        self.report.bytes_pruned += done.bytes;
        Ok(())
    }

    /// Copies a definition file into the cache's `config/` tier.
    pub(super) fn mirror_config(&mut self, action: &MirrorConfig) -> Result<(), StopCause> {
        let MirrorConfig {
            path,
            sha256,
            local,
            ..
        } = action;
        remote::mirror_config(self.repo, &self.plan.target.dir, path, sha256, *local)?;
        self.report.mirrored += 1;
        Ok(())
    }

    /// Publishes the managed-config sentinel (action `i`): a phase of its
    /// own, so every other action (all uploads included) has finished.
    pub(super) fn publish_sentinel(
        &mut self,
        i: usize,
        action: &PublishSentinel,
    ) -> Result<(), StopCause> {
        let plan = self.plan;
        let PublishSentinel {
            path,
            sources,
            objects,
        } = action;
        if i + 1 != plan.actions.len() {
            return Err(StopCause::SentinelNotLast);
        }
        let (rt, target) = self.remote_parts()?;
        let change = rt.block_on(remote::publish_sentinel(
            target,
            &plan.target.dir,
            path,
            sources,
            objects,
        ))?;
        self.report.sentinel_published = true;
        #[cfg(feature = "failpoints")]
        remote::action_done_for_tests();
        if let Some((base, base_path)) = self.base.as_mut() {
            remote::record(base, change);
            base.save(base_path)?;
        }
        Ok(())
    }

    /// Writes the record of this clone's deliberate deletes to the bucket.
    pub(super) fn record_deletes(&mut self, action: &RecordDeletes) -> Result<(), StopCause> {
        let RecordDeletes {
            files,
            after,
            prune,
        } = action;
        let (rt, target) = self.remote_parts()?;
        let me = crate::state::delete_records::clone_id(self.layout)?;
        let (key, version, body) = rt.block_on(remote::record_deletes(
            target,
            &me,
            files,
            after.as_deref(),
            prune,
        ))?;
        crate::state::delete_records::remember_record(
            &self.layout.delete_records_cache_path(&target.placement),
            key,
            version,
            body,
        );
        Ok(())
    }

    /// Removes delete records (and notes) every clone has passed.
    pub(super) fn prune_records(&mut self, action: &PruneRecords) -> Result<(), StopCause> {
        let PruneRecords { prune } = action;
        let (rt, target) = self.remote_parts()?;
        rt.block_on(remote::remove_at_versions(target, prune))?;
        Ok(())
    }

    /// Removes the team's history records past `[undo] keep_days`.
    pub(super) fn prune_history(
        &mut self,
        action: &crate::plan::action::PruneHistory,
    ) -> Result<(), StopCause> {
        let (rt, target) = self.remote_parts()?;
        rt.block_on(remote::remove_at_versions(target, &action.prune))?;
        Ok(())
    }

    /// Notes how far this clone's sync base has passed the delete records,
    /// only where that is true now: a base still holding a file another
    /// clone deleted has not passed its record.
    pub(super) fn note_progress(&mut self, action: &NoteProgress) -> Result<(), StopCause> {
        let NoteProgress {
            passed,
            check,
            replaces,
            prune,
        } = action;
        let (rt, target) = self.remote_parts()?;
        let Some((base, _)) = self.base.as_ref() else {
            return Err(StopCause::NoRemote);
        };
        if !check.iter().any(|f| {
            base.files
                .get(&f.path)
                .is_some_and(|b| b.version == f.version)
        }) {
            let me = crate::state::delete_records::clone_id(self.layout)?;
            rt.block_on(remote::note_progress(target, &me, passed, replaces, prune))?;
        }
        Ok(())
    }
}
