//! The state one apply shares between its executors: the plan and where it
//! acts, the report, the sync base it advances, the hash cache, the undo
//! journal written before the first destructive step, the moves still to
//! make durable, and progress. [`Run::start`] sets it up, [`Run::finish`]
//! settles it once every action has run.

use std::path::{Path, PathBuf};

use crate::journal;
use crate::layout::{Layout, TierPath};
use crate::plan::{Action, Plan};
use crate::state::{HashCache, SyncBase};
use crate::store::RemoteTarget;

use super::{ApplyError, ApplyReport, StopCause, carried_bytes, describe_done, remote};

pub(super) struct Run<'a> {
    pub(super) plan: &'a Plan,
    pub(super) layout: &'a Layout,
    pub(super) repo: &'a Path,
    pub(super) remote: Option<&'a RemoteTarget>,
    pub(super) sources: &'a [Option<RemoteTarget>],
    pub(super) concurrency: u16,
    /// The runtime remote work runs on, when the plan has a remote.
    pub(super) rt: Option<&'static tokio::runtime::Runtime>,
    /// The hash cache, loaded when an action first needs it ([`Run::cache`]):
    /// a push of small files checks the bytes it sends instead (a
    /// million entries are 72 MB).
    cache: Option<HashCache>,
    pub(super) report: ApplyReport,
    /// The sync base this apply advances, and where it is saved.
    pub(super) base: Option<(SyncBase, PathBuf)>,
    /// Transfers that advanced the base since it was last saved.
    pub(super) base_unsaved: usize,
    /// The locks this command holds, watched by the transfer tasks.
    pub(super) watch: crate::lock::LossWatch,
    /// The undo journal of a plan that deletes or replaces anything: its
    /// head, the entries being in its saved file only (a move's million
    /// were 88 MB held through the apply), which [`Run::finish`] rewrites
    /// (`Journal::rewrite_head`).
    pub(super) journaled: Option<journal::Journal>,
    /// This apply's record in the bucket's history, when it changes any
    /// object there.
    pub(super) recorded: Option<super::history::Recorded>,
    /// Replaced cache files and the sha256 of what replaced them.
    pub(super) replaced_by: Vec<(TierPath, String)>,
    /// Whether each action is a move done by renaming a whole directory
    /// (indexed like the plan's actions; sized at the first such rename).
    pub(super) moved_whole: Vec<bool>,
    /// How far the runs of moves have been looked at for such directories.
    pub(super) scanned_to: usize,
    /// Per-file moves linked into place whose sources are still to go:
    /// (source file, source root, destination file).
    pub(super) linked: Vec<(PathBuf, PathBuf, PathBuf)>,
}

impl<'a> Run<'a> {
    /// Loads the sync base (bound to the remote the plan saw) and writes
    /// the undo journal, before any action runs.
    pub(super) fn start(
        plan: &'a Plan,
        layout: &'a Layout,
        repo: &'a Path,
        remote: Option<&'a RemoteTarget>,
        sources: &'a [Option<RemoteTarget>],
        concurrency: u16,
        fingerprint: Option<String>,
    ) -> Result<Run<'a>, ApplyError> {
        let before = |kind, what: &str, source: StopCause| ApplyError::Stopped {
            index: 0,
            kind,
            what: what.into(),
            source: Box::new(source),
            completed: 0,
        };
        crate::progress::meter().start(
            "applying",
            plan.actions.iter().filter(|a| a.path().is_some()).count() as u64,
            plan.actions.iter().map(carried_bytes).sum(),
        );
        let base = match remote {
            Some(r) => {
                let base_path = layout.sync_base_path(&r.placement);
                let mut base = SyncBase::load(&base_path, &r.url)
                    .map_err(|e| before("sync", "the sync base", e.into()))?;
                // Bound to the remote the plan saw: a base made with another
                // is set aside, as the plan did.
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
        let watch = crate::lock::watch();
        let mut journaled = super::journaling::journal(plan, layout)
            .map_err(|e| before("journal", "the undo journal", e.into()))?;
        // Saved: the apply holds its head alone ([`Run::journaled`]).
        if let Some(j) = journaled.as_mut() {
            j.entries = Vec::new();
        }
        let rt =
            (remote.is_some() || sources.iter().any(Option::is_some)).then(crate::store::runtime);
        let recorded = match (rt, remote) {
            (Some(rt), Some(target)) => record(rt, plan, layout, target, &journaled, fingerprint)
                .map_err(|e| before("history", "the history record", e))?,
            _ => None,
        };
        Ok(Run {
            plan,
            layout,
            repo,
            remote,
            sources,
            concurrency,
            rt,
            cache: None,
            report: ApplyReport::default(),
            base,
            base_unsaved: 0,
            watch,
            journaled,
            recorded,
            replaced_by: Vec::new(),
            moved_whole: Vec::new(),
            scanned_to: 0,
            linked: Vec::new(),
        })
    }

    /// The hash cache, loaded at the first call.
    pub(super) fn cache(&mut self) -> &mut HashCache {
        let layout = self.layout;
        self.cache
            .get_or_insert_with(|| HashCache::load(&layout.hash_cache_path()))
    }

    /// Action `i` stopped for `source`.
    pub(super) fn stopped(&self, i: usize, source: StopCause) -> ApplyError {
        let action = &self.plan.actions[i];
        let what = match action.path() {
            Some(path) => path.to_string(),
            None => describe_global(action).to_string(),
        };
        self.stopped_on(i, &what, source)
    }

    /// Action `i` stopped for `source`, over `what` (not its own path).
    pub(super) fn stopped_on(&self, i: usize, what: &str, source: StopCause) -> ApplyError {
        ApplyError::Stopped {
            index: i + 1,
            kind: self.plan.actions[i].kind(),
            what: what.to_string(),
            source: Box::new(source),
            completed: self.report.completed,
        }
    }

    /// Counts `action` done and shows it.
    pub(super) fn done(&mut self, action: &Action) {
        self.report.completed += 1;
        crate::progress::meter().finished(
            u64::from(action.path().is_some()),
            carried_bytes(action),
            || describe_done(action),
        );
    }

    /// Where this apply's cache deletes set files aside (`None`: removed
    /// for good, under `--no-undo` or when the plan deletes nothing).
    pub(super) fn trash(&self) -> Option<journal::Trash<'_>> {
        self.journaled
            .as_ref()
            .filter(|j| !j.no_undo)
            .map(|j| journal::Trash {
                layout: self.layout,
                id: &j.id,
                placement: self.plan.target.placement(),
            })
    }

    /// The remotes for one step. Transfers check their preconditions
    /// against the hash cache the plan was observed with (a file whose
    /// inode, size and mtime are unchanged is not read again); built per
    /// step, as moves update the cache.
    pub(super) fn remotes<'r>(
        &'r self,
        trash: Option<&'r journal::Trash<'r>>,
    ) -> remote::Remotes<'r> {
        remote::Remotes {
            target: self.remote,
            sources: self.sources,
            // Unloaded: whatever checks a file reads it.
            hashes: self.cache.as_ref(),
            trash,
            resume: self.remote.map(|r| remote::ResumeDirs {
                uploads: self.layout.uploads_dir(&r.placement),
                partials: self.layout.partial_dir(),
                spool: self.layout.state_dir().join("moving"),
            }),
        }
    }

    /// The runtime and the target store, which remote bookkeeping needs.
    pub(super) fn remote_parts(
        &self,
    ) -> Result<(&'static tokio::runtime::Runtime, &'a RemoteTarget), StopCause> {
        match (self.rt, self.remote) {
            (Some(rt), Some(target)) => Ok((rt, target)),
            _ => Err(StopCause::NoRemote),
        }
    }

    /// Settles the run once every action ran: keeps the hash cache, marks
    /// the journal finished (with what replaced each replaced file), fails
    /// if the lock was lost on the way, and notes that this clone's deletes
    /// have reached the bucket.
    pub(super) fn finish(mut self) -> Result<ApplyReport, ApplyError> {
        // The cache only speeds up the next observation; failing to save it
        // loses nothing. Apply sees only the files it acts on, so it keeps
        // the entries it did not touch (saving only those it used would
        // make the verifying plan read every other file again).
        // Kept for the verifying plan, which would load it again.
        if let Some(cache) = self.cache.take() {
            let _ = cache.save_keeping_for_next_load();
        }
        if let Some(j) = self.journaled.as_mut() {
            // What replaced each replaced file, on its first set-aside.
            let mut replaced: std::collections::BTreeMap<TierPath, String> =
                std::mem::take(&mut self.replaced_by).into_iter().collect();
            j.finished = true;
            let _ = j.rewrite_head(self.layout, |e| {
                if e.op == journal::Op::SetAside
                    && let Some(sha) = replaced.remove(&e.path)
                {
                    e.written = Some(sha);
                }
            });
        }
        self.finish_record();
        // A lock lost during the last step: what was done stays done, but
        // the run did not hold the lock throughout, so it must not report
        // success.
        if let Some(reason) = self.watch.lost() {
            return Err(ApplyError::Stopped {
                index: self.plan.actions.len(),
                kind: "lock",
                what: "the datastore lock".into(),
                source: Box::new(StopCause::LockLost(reason)),
                completed: self.report.completed,
            });
        }
        // Every delete of this clone's made before this push has reached
        // the bucket: from now on they explain nothing (`state::delete_records`).
        let plan = self.plan;
        if plan.remote.is_some() && plan.scope.direction().is_some_and(|d| d.pushes()) {
            let marker = self.layout.deletes_pushed_path(&plan.target.placement());
            let _ = crate::fsutil::atomic_write(&marker, crate::clock::now_rfc3339().as_bytes());
        }
        Ok(self.report)
    }
}

/// This apply's record in `target`'s history, under its journal's id
/// (or a new one), before anything runs.
fn record(
    rt: &tokio::runtime::Runtime,
    plan: &Plan,
    layout: &Layout,
    target: &RemoteTarget,
    journaled: &Option<journal::Journal>,
    fingerprint: Option<String>,
) -> Result<Option<super::history::Recorded>, StopCause> {
    let id = journaled
        .as_ref()
        .map_or_else(journal::new_id, |j| j.id.clone());
    let author = super::history::Author {
        id: &id,
        clone: crate::state::delete_records::clone_id(layout)?,
        fingerprint,
        undoes: None,
    };
    super::history::begin(rt, layout, plan, target, author)
}

impl Run<'_> {
    /// Rewrites this apply's history record as finished.
    fn finish_record(&mut self) {
        let (Some(recorded), Some(rt), Some(target)) = (self.recorded.take(), self.rt, self.remote)
        else {
            return;
        };
        let base = self.base.as_ref().map(|(b, _)| b);
        super::history::finish(rt, self.layout, self.plan, target, recorded, base);
    }
}

fn describe_global(action: &Action) -> &'static str {
    match action {
        Action::InvalidateCatalog => "the catalog",
        Action::FinishMigration => "the migration record",
        _ => "",
    }
}
