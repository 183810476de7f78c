//! The transfer executor: a run of neighbouring sync actions of one class
//! (uploads, downloads and fetches; copies; deletes) side by side, and
//! the remote steps that run alone (a rename in the cache, the deletes
//! that drain a source remote). Only completed actions advance the sync
//! base.

use crate::plan::Action;

use super::remote::{self, BaseChange, SyncActionError};
use super::run::Run;
use super::{ApplyError, StopCause, concurrent_class};

/// Entries a run of transfers sets in the sync base are gathered in runs
/// of this many (see [`crate::state::SyncBase::set_many`]).
const SET_RUN: usize = 4096;

/// Most actions one call runs side by side: what a run holds for each
/// action until its end (the outcome, the base entry) is then bounded,
/// and the sync base is saved after each such run (a million-file pull
/// held a few hundred MB of outcomes with one run, and 40 MB with runs of
/// 262,144). The concurrency dips at each run's tail, a few requests in
/// 65,536.
const MOST_AT_ONCE: usize = 1 << 16;

/// The sync base is saved once this many transfers have advanced it since
/// it last was, and when a run of transfers ends or stops: each save
/// writes the whole base (a million entries, about 200 MB of JSON), so a
/// save per call made a million-file push 26 s slower. A kill loses at
/// most this many entries, which the next plan records again without a
/// transfer (both sides hold the same bytes).
const SAVE_EVERY: usize = 1 << 18;

impl Run<'_> {
    /// Runs the actions from `i` on that share `i`'s class side by side
    /// (at most [`MOST_AT_ONCE`]); returns how many it ran.
    pub(super) fn transfers(&mut self, i: usize) -> Result<usize, ApplyError> {
        let plan = self.plan;
        let class = concurrent_class(&plan.actions[i]);
        let run: Vec<&Action> = plan.actions[i..]
            .iter()
            .take_while(|a| concurrent_class(a) == class)
            .take(MOST_AT_ONCE)
            .collect();
        let rt = self.rt.expect("transfers run with a remote");
        let remote::Ran { outcomes, learnt } = {
            let trash = self.trash();
            rt.block_on(remote::run_many(
                &run,
                &plan.target.dir,
                &self.remotes(trash.as_ref()),
                usize::from(self.concurrency),
                &self.watch,
            ))
        };
        if self.report.landed.is_empty() && !learnt.is_empty() {
            // Sized once for the plan's downloads: doubling on the way, a
            // million-file pull held 100 MB at one moment.
            let landing = plan.actions[i..]
                .iter()
                .filter(|a| matches!(a, Action::Download { .. } | Action::Fetch { .. }))
                .count();
            self.report.landed.reserve_exact(landing);
        }
        self.report.landed.append(learnt);
        let mut first_error: Option<(usize, SyncActionError)> = None;
        // What the run set in the base, in runs recorded at once below (no
        // two actions of a run are on one path: they run side by side).
        let mut set: Vec<Vec<_>> = Vec::new();
        for (k, outcome) in outcomes.into_iter().enumerate() {
            match outcome {
                Ok(change) => {
                    self.completed(run[k], change, &mut set);
                }
                // The cause, not the actions it kept from starting.
                Err(e) => match &first_error {
                    None => first_error = Some((i + k, e)),
                    Some((_, SyncActionError::NotStarted { .. }))
                        if !matches!(e, SyncActionError::NotStarted { .. }) =>
                    {
                        first_error = Some((i + k, e))
                    }
                    Some(_) => {}
                },
            }
        }
        // Only completed actions advance the base; save it either way
        // when the run of transfers ends here or stops.
        self.base_unsaved += run.len();
        let run_goes_on = plan
            .actions
            .get(i + run.len())
            .is_some_and(|a| concurrent_class(a) == class);
        let due = first_error.is_some() || !run_goes_on || self.base_unsaved >= SAVE_EVERY;
        let saved = match self.base.as_mut() {
            Some((base, path)) => {
                base.set_many(set);
                if due {
                    self.base_unsaved = 0;
                    base.save(path).map(|_| ())
                } else {
                    Ok(())
                }
            }
            None => Ok(()),
        };
        if let Some((index, e)) = first_error {
            return Err(self.stopped(index, e.into()));
        }
        saved.map_err(|e| self.stopped_on(i, "the sync base", e.into()))?;
        Ok(run.len())
    }

    /// Counts one completed transfer and keeps what it changed in the base
    /// (entries it set go into `set`, recorded in runs).
    fn completed(
        &mut self,
        action: &Action,
        change: BaseChange,
        set: &mut Vec<Vec<(crate::layout::TierPath, crate::state::BaseEntry)>>,
    ) {
        if let (Action::Download { local: Some(_), .. }, BaseChange::Set(path, landed)) =
            (action, &change)
        {
            self.replaced_by.push((path.clone(), landed.sha256.hex()));
        }
        match (change, self.base.as_mut()) {
            (BaseChange::Set(path, entry), Some(_)) => {
                if set.last().is_none_or(|run| run.len() == SET_RUN) {
                    set.push(Vec::with_capacity(SET_RUN));
                }
                set.last_mut().expect("pushed").push((path, entry));
            }
            (change, Some((base, _))) => remote::record(base, change),
            (_, None) => {}
        }
        let report = &mut self.report;
        match action {
            Action::Upload { .. } => report.uploaded += 1,
            Action::Download { .. } | Action::Fetch { .. } => report.downloaded += 1,
            Action::DeleteLocal { .. } => report.deleted_local += 1,
            Action::CopyRemote { .. } => report.copied += 1,
            _ => report.deleted_remote += 1,
        }
        report.completed += 1;
    }

    /// A rename in the cache, or the deletes that drain a source remote
    /// (whose sync base then goes: it would outlive the remote).
    pub(super) fn remote_step(&mut self, action: &Action) -> Result<(), StopCause> {
        let rt = self.rt.ok_or(StopCause::NoRemote)?;
        {
            let trash = self.trash();
            rt.block_on(remote::run(
                action,
                &self.plan.target.dir,
                &self.remotes(trash.as_ref()),
            ))?;
        }
        if let Action::DeleteSourceRemote { objects, source } = action {
            self.report.deleted_remote += objects.len();
            let base = self
                .layout
                .sync_base_path(&self.plan.sources[*source].placement());
            match std::fs::remove_file(&base) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
