//! The transfer executor: a run of neighbouring sync actions of one class
//! (uploads, downloads and fetches; copies; deletes) side by side
//! ([`run_many`]: bounded concurrency, staged downloads committed in
//! batches, a lost lock stopping what is in flight), and the remote steps
//! that run alone (a rename in the cache, the deletes that drain a source
//! remote). Only completed actions advance the sync base.

use std::path::Path;

use futures_util::StreamExt;

use crate::fsutil;
use crate::layout::TierPath;
use crate::state::Learnt;
use crate::state::stamp::Stamp;

use crate::plan::Action;
use crate::plan::action::{DeleteSourceRemote, Download, Fetch};

use super::remote::{self, BaseChange, Remotes, Staged, SyncActionError};
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
        if run.iter().any(|a| checks_by_hash_cache(a)) {
            self.cache();
        }
        let Ran { outcomes, learnt } = {
            let trash = self.trash();
            rt.block_on(run_many(
                &run,
                &plan.target.dir,
                &self.remotes(trash.as_ref()),
                usize::from(self.concurrency),
                &self.watch,
            ))
        };
        self.make_room_to_learn(i, &learnt);
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

    /// Before the first of a plan's downloads is known: room for what
    /// they all teach, sized once (doubling on the way, a million-file
    /// pull held 100 MB at one moment), or, for many, a spill file (64
    /// bytes a file, which only the verifying plan reads).
    fn make_room_to_learn(&mut self, i: usize, learnt: &Learnt) {
        if !self.report.landed.is_empty() || learnt.is_empty() {
            return;
        }
        let landing = self.plan.actions[i..]
            .iter()
            .filter(|a| matches!(a, Action::Download(_) | Action::Fetch(_)))
            .count();
        if landing >= crate::state::spill::threshold() {
            self.report.landed = Learnt::spilling_in(&self.layout.state_dir());
        }
        self.report.landed.reserve_exact(landing);
    }

    /// Counts one completed transfer and keeps what it changed in the base
    /// (entries it set go into `set`, recorded in runs).
    fn completed(
        &mut self,
        action: &Action,
        change: BaseChange,
        set: &mut Vec<Vec<(crate::layout::TierPath, crate::state::BaseEntry)>>,
    ) {
        if let (Action::Download(Download { local: Some(_), .. }), BaseChange::Set(path, landed)) =
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
            Action::Upload(_) => report.uploaded += 1,
            Action::Download(_) | Action::Fetch(_) => report.downloaded += 1,
            Action::DeleteLocal(_) => report.deleted_local += 1,
            Action::CopyRemote(_) => report.copied += 1,
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
        if let Action::DeleteSourceRemote(DeleteSourceRemote {
            objects, source, ..
        }) = action
        {
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

/// Makes a batch of staged downloads durable (one filesystem sync for all
/// their bytes) and renames each into place unless a file appeared there
/// meanwhile. Their directories are fsynced with the run's other
/// downloads ([`sync_landed_dirs`]) before any is reported complete.
/// Returns the outcome of each, by its index in the run, with the stamp
/// the file had as it was renamed (for the verifying plan: see
/// [`crate::state::Learnt`]).
pub(super) fn commit_staged(batch: Vec<(usize, TierPath, Staged)>) -> Vec<(usize, Committed)> {
    let io = |path: &TierPath, e: &std::io::Error| SyncActionError::Io {
        path: path.clone(),
        source: std::io::Error::new(e.kind(), e.to_string()),
    };
    let files: Vec<&Path> = batch.iter().map(|(_, _, s)| s.staged.as_path()).collect();
    let mut parents: Vec<&Path> = files.iter().filter_map(|f| f.parent()).collect();
    parents.sort_unstable();
    parents.dedup();
    if let Err(e) = fsutil::sync_files(&parents, &files) {
        return batch
            .into_iter()
            .map(|(i, path, s)| {
                let _ = std::fs::remove_file(&s.staged);
                (i, Err(io(&path, &e)))
            })
            .collect();
    }
    batch
        .into_iter()
        .map(|(i, path, s)| {
            // Of the staged name, which only this run writes: the rename
            // keeps inode, size and mtime.
            let stamp = std::fs::symlink_metadata(&s.staged)
                .ok()
                .map(|m| Stamp::of(&m));
            match fsutil::rename_noreplace(&s.staged, &s.dest) {
                Ok(()) => (i, Ok(stamp)),
                Err(e) => {
                    let _ = std::fs::remove_file(&s.staged);
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        (i, Err(SyncActionError::LocalAppeared { path }))
                    } else {
                        (i, Err(io(&path, &e)))
                    }
                }
            }
        })
        .collect()
}

/// Whether `action` checks a cache file through the hash cache (a file
/// whose inode, size and mtime are unchanged is not read again): not an
/// upload of a small file (which checks the bytes it sends), a download
/// into an absent path or what acts on the remote alone.
fn checks_by_hash_cache(action: &Action) -> bool {
    match action {
        Action::Upload(u) => u.size > remote::CHECKED_BY_BYTES,
        Action::Download(d) => d.local.is_some(),
        Action::CopyRemote(_) | Action::DeleteRemote(_) | Action::AbortUpload(_) => false,
        _ => true,
    }
}

/// A staged download's commit: the stamp it was renamed with, when known.
pub(super) type Committed = Result<Option<Stamp>, SyncActionError>;

/// What [`run_many`] did: each action's outcome in plan order, and what
/// is known of the files its downloads landed (for the verifying plan).
pub(crate) struct Ran {
    pub outcomes: Vec<Result<BaseChange, SyncActionError>>,
    pub learnt: Learnt,
}

/// Runs a run of consecutive transfer actions concurrently (at most
/// `concurrency` at once), returning each one's outcome in plan order.
///
/// Stops at a safe point when the lock is lost (transfers in flight are
/// cancelled: an upload cut off is never completed, a download's temp
/// file is removed) or when an action fails for the whole remote (the
/// rest is not started). Either way the outcomes say what completed.
pub(crate) async fn run_many(
    actions: &[&Action],
    root: &Path,
    remotes: &Remotes<'_>,
    concurrency: usize,
    watch: &crate::lock::LossWatch,
) -> Ran {
    let halted: Halted = std::sync::Mutex::new(None);
    let halted = &halted;
    // Unordered: a finished transfer makes room for the next at once, not
    // once every transfer started before it has finished too (a slow one
    // would hold up the rest). Outcomes are put back in action order.
    let mut outcomes: Vec<Option<Result<BaseChange, SyncActionError>>> =
        (0..actions.len()).map(|_| None).collect();
    let mut stream = futures_util::stream::iter(
        actions
            .iter()
            .enumerate()
            .map(|(i, a)| run_one(i, a, root, remotes, watch, halted)),
    )
    .buffer_unordered(concurrency.max(1));
    let mut commits = Commits::default();
    let mut learnt = Learnt::default();
    let meter = crate::progress::meter();
    while let Some((i, outcome, staged)) = stream.next().await {
        if outcome.is_ok() {
            // Transferred (a staged download is durable once its batch is
            // committed, just after): shown as done.
            meter.finished(
                u64::from(actions[i].path().is_some()),
                super::carried_bytes(actions[i]),
                || super::describe_done(actions[i]),
            );
        }
        outcomes[i] = Some(outcome);
        if let (Some(staged), Some(path)) = (staged, actions[i].path()) {
            if learnt.is_empty() && commits.batch.is_empty() {
                // Sized once: at 100,000 downloads, doubling on the way
                // would hold 8 MB more at the apply's peak.
                let downloads = actions
                    .iter()
                    .filter(|a| matches!(a, Action::Download(_)))
                    .count();
                learnt.reserve_exact(downloads);
            }
            commits.add(i, path.clone(), staged);
        }
        if commits.due() {
            commits.start(&mut outcomes, &mut learnt).await;
        }
    }
    drop(stream);
    commits.finish(&mut outcomes, &mut learnt).await;
    let mut outcomes: Vec<_> = outcomes
        .into_iter()
        .map(|o| o.expect("every action yields an outcome"))
        .collect();
    // A directory that fails its fsync fails the downloads into it, but
    // what was learnt of their bytes stays true of the files.
    sync_landed_dirs(actions, root, &mut outcomes).await;
    Ran { outcomes, learnt }
}

/// Why the rest of a run is not started (an action failed for the whole
/// remote), once known.
pub(super) type Halted = std::sync::Mutex<Option<String>>;

/// One action of [`run_many`]: its index, outcome and, for a download, the
/// staged file its batch commit will rename into place.
pub(super) async fn run_one(
    i: usize,
    a: &Action,
    root: &Path,
    remotes: &Remotes<'_>,
    watch: &crate::lock::LossWatch,
    halted: &Halted,
) -> (usize, Result<BaseChange, SyncActionError>, Option<Staged>) {
    let reason = halted.lock().unwrap().clone().or_else(|| watch.lost());
    if let Some(reason) = reason {
        return (i, Err(SyncActionError::NotStarted { reason }), None);
    }
    let started = super::action_started(a);
    let work = async {
        match a {
            Action::Download(d) => remote::download(d, root, remotes, true).await,
            Action::CopyRemote(c) => super::copy::copy_remote(c, remotes)
                .await
                .map(|change| (change, None)),
            _ => remote::run(a, root, remotes)
                .await
                .map(|change| (change, None)),
        }
    };
    let outcome = tokio::select! {
        outcome = work => outcome,
        reason = lock_lost(watch) => Err(SyncActionError::Cancelled {
            what: a.path().map(ToString::to_string).unwrap_or_else(|| a.kind().to_string()),
            reason,
        }),
    };
    super::action_ended(a, started, outcome.as_ref().err());
    if let Err(e) = &outcome
        && e.is_systemic()
    {
        halted.lock().unwrap().get_or_insert_with(|| e.to_string());
    }
    // Test-only: die at an action boundary, others still in flight
    // (FAILPOINTS=sync-action-done=N*off->return). A staged download
    // reaches its boundary when its batch is committed.
    #[cfg(feature = "failpoints")]
    if matches!(&outcome, Ok((_, None))) {
        remote::action_done_for_tests();
    }
    match outcome {
        Ok((change, staged)) => (i, Ok(change), staged),
        Err(e) => (i, Err(e), None),
    }
}

/// Staged downloads are committed a batch at a time on a blocking thread
/// while the transfers go on (one commit in flight at a time); until its
/// batch is committed a download is not complete.
#[derive(Default)]
pub(super) struct Commits {
    batch: Vec<(usize, TierPath, Staged)>,
    bytes: u64,
    since: Option<std::time::Instant>,
    committing: Option<tokio::task::JoinHandle<Vec<(usize, Committed)>>>,
}

impl Commits {
    fn add(&mut self, i: usize, path: TierPath, staged: Staged) {
        self.since.get_or_insert_with(std::time::Instant::now);
        self.bytes += staged.size;
        self.batch.push((i, path, staged));
    }

    /// The batch is full (files or bytes) or old enough to commit.
    fn due(&self) -> bool {
        self.batch.len() >= COMMIT_FILES
            || self.bytes >= COMMIT_BYTES
            || self.since.is_some_and(|t| t.elapsed() >= COMMIT_AFTER)
    }

    /// Settles the commit in flight, if any, and starts committing the
    /// batch.
    async fn start(
        &mut self,
        outcomes: &mut [Option<Result<BaseChange, SyncActionError>>],
        learnt: &mut Learnt,
    ) {
        self.settle_in_flight(outcomes, learnt).await;
        let b = std::mem::take(&mut self.batch);
        self.bytes = 0;
        self.since = None;
        self.committing = Some(tokio::task::spawn_blocking(move || commit_staged(b)));
    }

    /// Settles the commit in flight, then commits what is left.
    async fn finish(
        mut self,
        outcomes: &mut [Option<Result<BaseChange, SyncActionError>>],
        learnt: &mut Learnt,
    ) {
        self.settle_in_flight(outcomes, learnt).await;
        if !self.batch.is_empty() {
            self.start(outcomes, learnt).await;
            self.settle_in_flight(outcomes, learnt).await;
        }
    }

    async fn settle_in_flight(
        &mut self,
        outcomes: &mut [Option<Result<BaseChange, SyncActionError>>],
        learnt: &mut Learnt,
    ) {
        if let Some(h) = self.committing.take() {
            let done = h
                .await
                .unwrap_or_else(|e| panic!("a commit of downloads failed to run: {e}"));
            settle(outcomes, learnt, done);
        }
    }
}

/// Staged downloads committed together: at most this many files, this
/// many bytes, or what landed within this long, so a kill loses little
/// finished work.
pub(super) const COMMIT_FILES: usize = 1024;

pub(super) const COMMIT_BYTES: u64 = 256 << 20;

pub(super) const COMMIT_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// Replaces the outcome of each staged download whose commit failed, and
/// adds what is known of each one committed to `learnt`.
pub(super) fn settle(
    outcomes: &mut [Option<Result<BaseChange, SyncActionError>>],
    learnt: &mut Learnt,
    committed: Vec<(usize, Committed)>,
) {
    for (i, result) in committed {
        match result {
            Err(e) => outcomes[i] = Some(Err(e)),
            Ok(stamp) => {
                if let (Some(stamp), Some(Ok(BaseChange::Set(_, landed)))) = (stamp, &outcomes[i]) {
                    learnt.push(stamp, landed.sha256);
                }
                #[cfg(feature = "failpoints")]
                remote::action_done_for_tests();
            }
        }
    }
}

/// Makes the downloads of a run durable: fsyncs each directory a completed
/// download or fetch renamed a file into, once (not once per file), before
/// any of them is reported complete (and so before the sync base records
/// it or a later action relies on it). A directory that cannot be synced
/// fails the downloads into it.
pub(super) async fn sync_landed_dirs(
    actions: &[&Action],
    root: &Path,
    outcomes: &mut [Result<BaseChange, SyncActionError>],
) {
    // (directory as a tier path's parent, action index), grouped by
    // directory: held compactly (a 100,000-file pull lands in tens of
    // thousands of directories), each made a path only while it is synced.
    let mut landed: Vec<(&str, usize)> = actions
        .iter()
        .zip(outcomes.iter())
        .enumerate()
        .filter_map(|(i, (action, outcome))| match (action, outcome) {
            (
                Action::Download(Download { path, .. }) | Action::Fetch(Fetch { path, .. }),
                Ok(_),
            ) => Some((path.as_str().rsplit_once('/').map_or("", |(dir, _)| dir), i)),
            _ => None,
        })
        .collect();
    landed.sort_by(|a, b| a.0.cmp(b.0));
    let groups: Vec<&[(&str, usize)]> = landed.chunk_by(|a, b| a.0 == b.0).collect();
    let failed = futures_util::stream::iter(groups.into_iter().map(|group| async move {
        let dir = root.join(group[0].0);
        let outcome = tokio::task::spawn_blocking(move || fsutil::sync_dir(&dir))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(format!("fsync task failed: {e}"))));
        outcome.err().map(|e| (group, e))
    }))
    .buffer_unordered(16)
    .filter_map(std::future::ready)
    .collect::<Vec<_>>()
    .await;
    for (group, e) in failed {
        for &(_, i) in group {
            let path = actions[i].path().cloned().expect("a download has a path");
            outcomes[i] = Err(SyncActionError::Io {
                path,
                source: std::io::Error::new(e.kind(), e.to_string()),
            });
        }
    }
}

/// Resolves once a watched lock is lost, with why.
pub(super) async fn lock_lost(watch: &crate::lock::LossWatch) -> String {
    loop {
        if let Some(reason) = watch.lost() {
            return reason;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
