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
//! [`apply`] is the scheduler: it owns the order of the actions, checks the
//! lock before each step, and hands each step to the executor of its
//! family, which checks that step's preconditions as it acts: local moves
//! and renames ([`local`]), transfers run side by side ([`transfers`]),
//! bookkeeping in the remote and on this machine ([`records`]), and the
//! migration record ([`migration`]). [`run::Run`] is the state they share:
//! the report, the sync base, the hash cache, the undo journal, progress.
//!
//! The managed-config sentinel is published in a phase of its own: it must
//! be the plan's last action, so every transfer before it has finished (or
//! apply has stopped), and each object it vouches for is verified in the
//! remote before the create-only write.

mod copy;
mod history;
mod journaling;
mod local;
mod migration;
mod moves;
pub(crate) mod prune;
mod records;
pub(crate) mod remote;
mod run;
mod transfers;
pub(crate) mod undo;

use std::path::{Path, PathBuf};

use crate::catalog::CatalogError;
use crate::config::ConfigError;
use crate::journal::UndoError;
use crate::layout::Layout;
use crate::plan::{Action, Plan};
use crate::state::base::BaseError;
use crate::store::{RemoteTarget, StoreError};

pub(crate) use moves::MoveError;
use run::Run;

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("apply refused: the plan has {0} conflict(s); resolve them and plan again")]
    Conflicts(usize),
    #[error("{}", stopped_text(*.index, .kind, .what, .source))]
    Stopped {
        index: usize,
        kind: &'static str,
        what: String,
        #[source]
        source: Box<StopCause>,
        completed: usize,
    },
}

/// An apply stopped at action `index` (0: before the first, at its
/// bookkeeping: the sync base, the journal, the history record).
fn stopped_text(index: usize, kind: &str, what: &str, source: &StopCause) -> String {
    match index {
        0 => format!("stopped before the first action, at {what}: {source}"),
        _ => format!("action {index} ({kind} {what}) stopped: {source}"),
    }
}

impl ApplyError {
    pub fn completed(&self) -> usize {
        match self {
            ApplyError::Conflicts(_) => 0,
            ApplyError::Stopped { completed, .. } => *completed,
        }
    }

    /// The store error that stopped the apply, through the layers that
    /// wrap it.
    pub fn store_error(&self) -> Option<&StoreError> {
        match self {
            ApplyError::Stopped { source, .. } => match source.as_ref() {
                StopCause::Store(e)
                | StopCause::Sync(
                    remote::SyncActionError::Store { source: e, .. }
                    | remote::SyncActionError::Object { source: e, .. },
                ) => Some(e),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Why an action stopped.
#[derive(Debug, thiserror::Error)]
pub enum StopCause {
    #[error(transparent)]
    Sync(#[from] remote::SyncActionError),
    #[error(transparent)]
    Move(#[from] MoveError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Base(#[from] BaseError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Prune(#[from] prune::PruneError),
    #[error(transparent)]
    Journal(#[from] UndoError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("cannot sync {}: {source}", .dir.display())]
    SyncDir {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot remove {}: {source}", .path.display())]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} still holds datastore files (e.g. {}); plan again to move them", .root.display(), .left.display())]
    SourceNotEmpty { root: PathBuf, left: PathBuf },
    /// The lock this command held was broken or taken over (the lock's
    /// own words).
    #[error("{0}")]
    LockLost(String),
    #[error("cannot write the history record {}: {source}", .path.display())]
    HistoryRecord {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("a sync action needs the remote")]
    NoRemote,
    #[error("the sentinel must be the plan's last action; plan again")]
    SentinelNotLast,
}

/// What apply did.
#[derive(Debug, Default, serde::Serialize)]
pub(crate) struct ApplyReport {
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
    /// Partial downloads removed (no plan would continue them).
    #[serde(skip_serializing_if = "is_zero")]
    pub partials_removed: usize,
    /// Earlier applies whose set-aside files moved out of the cache's tier
    /// tree into its own trash.
    #[serde(skip_serializing_if = "is_zero")]
    pub trash_relocated: usize,
    /// Earlier applies whose trash was pruned, and the bytes freed here.
    #[serde(skip_serializing_if = "is_zero")]
    pub trash_pruned: usize,
    #[serde(skip_serializing_if = "is_zero")]
    pub bytes_pruned: u64,
    /// Files this apply downloaded, with their stamps as landed: the
    /// verifying plan trusts these instead of reading the files back.
    #[serde(skip)]
    pub landed: crate::state::Learnt,
    /// The requests the run sent, by class, from its first action to
    /// giving back the datastore's lock (set by the engine's flow; the
    /// heartbeat's apart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_sent: Option<crate::telemetry::RequestCounts>,
    /// The lock heartbeat's requests meanwhile (looks and renewals: as
    /// many as the run is slow, so no plan estimates them).
    #[serde(skip_serializing_if = "is_zero")]
    pub heartbeat_requests: u64,
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
        Action::Upload(_)
        | Action::Download(_)
        | Action::Fetch(_)
        | Action::CopyRemote(_)
        | Action::MirrorConfig(_)
        | Action::Move(_) => action.bytes().unwrap_or(0),
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

/// Sync actions that may run side by side with their neighbours.
fn concurrent_class(action: &Action) -> Option<u8> {
    match action {
        Action::Upload(_) | Action::Download(_) | Action::Fetch(_) => Some(0),
        // Copies finish before the downloads that read their results.
        Action::CopyRemote(_) => Some(2),
        Action::DeleteRemote(_) | Action::DeleteLocal(_) => Some(1),
        _ => None,
    }
}

/// Applies `plan` in order: a run of transfers side by side, every other
/// action on its own, each by the executor of its family. Stops at the
/// first action that fails (what is done stays done), and when the lock
/// this command holds is lost.
///
/// `switch`, when given, records the desired state once every copy is
/// verified: before the first action that lets go of a source (its
/// objects deleted, the migration finished), or at the end.
pub(crate) fn apply(
    plan: &Plan,
    layout: &Layout,
    repo: &Path,
    remotes: (Option<&RemoteTarget>, &[Option<RemoteTarget>]),
    options: Options<'_>,
) -> Result<ApplyReport, ApplyError> {
    if plan.has_conflicts() {
        return Err(ApplyError::Conflicts(plan.conflicts.len()));
    }
    let (remote, sources) = remotes;
    let Options {
        concurrency,
        mut switch,
        fingerprint,
    } = options;
    let mut run = Run::start(
        plan,
        layout,
        repo,
        remote,
        sources,
        concurrency,
        fingerprint,
    )?;
    let mut i = 0;
    while i < plan.actions.len() {
        let action = &plan.actions[i];
        if matches!(
            action,
            Action::DeleteSourceRemote(_) | Action::FinishMigration
        ) && let Some(switch) = switch.take()
        {
            switch().map_err(|e| run.stopped_on(i, ".swamp.toml", StopCause::Config(e)))?;
        }
        // A holder that stalled past its lock's TTL stops here instead of
        // working alongside its successor (remote writes are conditional
        // either way).
        if let Err(reason) = crate::lock::ensure_held() {
            return Err(run.stopped_on(i, "the datastore lock", StopCause::LockLost(reason)));
        }
        if concurrent_class(action).is_some() && run.rt.is_some() {
            i += run.transfers(i)?;
            continue;
        }
        if run.moved_already(i)? {
            run.done(action);
            i += 1;
            continue;
        }
        let started = action_started(action);
        let step = match action {
            Action::Move(a) => run.move_file(i, a),
            Action::DropDuplicate(a) => run.drop_duplicate(a),
            Action::RemoveTemp(a) => run.remove_temp(a),
            Action::RemovePartial(a) => run.remove_partial(a),
            Action::RelocateTrash(a) => run.relocate_trash(a),
            Action::RenameLocal(_) | Action::DeleteSourceRemote(_) | Action::AbortUpload(_) => {
                run.remote_step(action)
            }
            Action::RecordBase(a) => run.record_base(a),
            Action::InvalidateCatalog => run.invalidate_catalog(),
            Action::PruneTrash(a) => run.prune_trash(a),
            Action::MirrorConfig(a) => run.mirror_config(a),
            Action::PublishSentinel(a) => run.publish_sentinel(i, a),
            Action::RecordDeletes(a) => run.record_deletes(a),
            Action::PruneRecords(a) => run.prune_records(a),
            Action::PruneHistory(a) => run.prune_history(a),
            Action::NoteProgress(a) => run.note_progress(a),
            Action::FinishMigration => run.finish_migration(),
            Action::Upload(_)
            | Action::Download(_)
            | Action::DeleteLocal(_)
            | Action::DeleteRemote(_)
            | Action::Fetch(_)
            | Action::CopyRemote(_) => Err(StopCause::NoRemote),
        };
        action_ended(action, started, step.as_ref().err());
        step.map_err(|cause| run.stopped(i, cause))?;
        run.done(action);
        i += 1;
    }
    if let Some(switch) = switch {
        let last = plan.actions.len().saturating_sub(1);
        switch().map_err(|e| run.stopped_on(last, ".swamp.toml", StopCause::Config(e)))?;
    }
    run.finish()
}

/// How an apply runs, beyond its plan and places.
pub(crate) struct Options<'a> {
    /// Transfers side by side.
    pub concurrency: u16,
    /// Records the desired state once every copy is verified (see [`apply`]).
    pub switch: Option<Switch<'a>>,
    /// The fingerprint of the plan applied, for its history record.
    pub fingerprint: Option<String>,
}

impl Options<'_> {
    /// `concurrency` transfers, nothing else.
    pub(crate) fn transfers(concurrency: u16) -> Options<'static> {
        Options {
            concurrency,
            switch: None,
            fingerprint: None,
        }
    }
}

/// Records the desired state (the new `.swamp.toml`) from inside an apply.
pub(crate) type Switch<'a> = &'a mut dyn FnMut() -> Result<(), crate::config::ConfigError>;

/// An action starts (the trace's `{"event":"action","step":"start",…}`).
fn action_started(action: &Action) -> std::time::Instant {
    tracing::debug!(
        target: "swamp::action",
        event = "action",
        step = "start",
        kind = action.kind(),
        path = action.path().map(|p| p.as_str()),
    );
    std::time::Instant::now()
}

/// An action ends, done or failed.
fn action_ended<E: std::fmt::Display>(
    action: &Action,
    started: std::time::Instant,
    failed: Option<&E>,
) {
    let error = failed.map(ToString::to_string);
    tracing::debug!(
        target: "swamp::action",
        event = "action",
        step = "end",
        kind = action.kind(),
        path = action.path().map(|p| p.as_str()),
        ms = started.elapsed().as_secs_f64() * 1000.0,
        ok = failed.is_none(),
        error,
    );
}

/// Test-only: SIGKILL ourselves, as `kill -9` would: no destructor, no
/// lock release, temp files left where they are.
#[cfg(feature = "failpoints")]
pub(crate) fn die_for_tests() -> ! {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    unreachable!("SIGKILL does not return")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_before_the_first_action_names_what_stopped_it_not_an_action_0() {
        let stop = |index| ApplyError::Stopped {
            index,
            kind: "upload",
            what: "the history record".into(),
            source: Box::new(StopCause::NoRemote),
            completed: 0,
        };
        assert_eq!(
            stop(0).to_string(),
            "stopped before the first action, at the history record: a sync action needs the remote"
        );
        assert_eq!(
            stop(3).to_string(),
            "action 3 (upload the history record) stopped: a sync action needs the remote"
        );
    }
}
