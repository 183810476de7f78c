//! What a plan does: [`Action`], one kind of change apply makes, each
//! kind a struct of its own that names the precondition it relies on.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::catalog::name::data_version;
use crate::config::ConflictPolicy;
use crate::digest::Sha256;
use crate::layout::TierPath;
use crate::store::Version;

/// One change apply will make, with the precondition it relies on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Action {
    Move(Move),
    DropDuplicate(DropDuplicate),
    /// Mark the catalog stale so the next read rebuilds it from the files.
    InvalidateCatalog,
    /// Clear the migration record from `.swamp.toml` and remove the sources'
    /// empty directories. Precondition: no source holds datastore files.
    FinishMigration,
    Upload(Upload),
    Download(Download),
    DeleteLocal(DeleteLocal),
    DeleteRemote(DeleteRemote),
    RenameLocal(RenameLocal),
    Fetch(Fetch),
    CopyRemote(CopyRemote),
    DeleteSourceRemote(DeleteSourceRemote),
    RecordBase(RecordBase),
    MirrorConfig(MirrorConfig),
    RemoveTemp(RemoveTemp),
    RemovePartial(RemovePartial),
    AbortUpload(AbortUpload),
    PublishSentinel(PublishSentinel),
    RecordDeletes(RecordDeletes),
    NoteProgress(NoteProgress),
    PruneRecords(PruneRecords),
    PruneHistory(PruneHistory),
    PruneTrash(PruneTrash),
    RelocateTrash(RelocateTrash),
}

/// Move a file from a source placement to the target placement.
/// Precondition: the source still has `sha256`; the destination is absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    pub path: TierPath,
    pub source: usize,
    pub size: u64,
    pub sha256: Sha256,
}

/// Remove a source copy whose byte-identical twin is already at the
/// target. Precondition: both still have `sha256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropDuplicate {
    pub path: TierPath,
    pub source: usize,
    pub size: u64,
    pub sha256: Sha256,
}

/// Upload a cache file. Precondition: the cache file still has
/// `sha256`; the remote object is as `remote` says (absent, or at that
/// version), enforced with a conditional write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Upload {
    pub path: TierPath,
    pub size: u64,
    pub sha256: Sha256,
    pub remote: RemoteExpect,
    /// The `--conflict` policy that chose this action over a conflict
    /// (`None`: no conflict): a reviewer sees which rows replace or
    /// delete what the other side changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_by: Option<ConflictPolicy>,
}

/// Download a remote object into the cache, verified against its
/// sha256 (or the server's hashes). Precondition: the cache file is as `local` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Download {
    pub path: TierPath,
    pub size: u64,
    pub version: Version,
    /// What the bytes are checked against (`sha256`, or the server's
    /// hashes for an object another tool wrote).
    #[serde(flatten)]
    pub expect: super::Expect,
    /// The cache file's sha256 it replaces (`None`: absent). Boxed: a
    /// replacement is rare, and a million downloads held 24 bytes more
    /// each (every action has the size of the largest). In JSON
    /// `replaces_sha256`, and `local` (its name before STYLE.md's
    /// vocabulary) beside it through plan `format_version` 1.
    #[serde(flatten, with = "replaces")]
    pub local: Option<Box<Sha256>>,
    /// The `--conflict` policy that chose this action over a conflict
    /// (`None`: no conflict): a reviewer sees which rows replace or
    /// delete what the other side changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_by: Option<ConflictPolicy>,
}

/// A download's `replaces_sha256`, written with its old name `local`
/// beside it, read from either.
mod replaces {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::digest::Sha256;

    #[derive(Serialize)]
    struct Both<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        replaces_sha256: Option<&'a Sha256>,
        #[serde(skip_serializing_if = "Option::is_none")]
        local: Option<&'a Sha256>,
    }

    #[derive(Deserialize)]
    struct Either {
        #[serde(default)]
        replaces_sha256: Option<Sha256>,
        #[serde(default)]
        local: Option<Sha256>,
    }

    pub(super) fn serialize<S: Serializer>(
        v: &Option<Box<Sha256>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let v = v.as_deref();
        Both {
            replaces_sha256: v,
            local: v,
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Box<Sha256>>, D::Error> {
        let e = Either::deserialize(d)?;
        Ok(e.replaces_sha256.or(e.local).map(Box::new))
    }
}

/// Delete a cache file the remote deleted. Precondition: it still has `sha256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteLocal {
    pub path: TierPath,
    pub sha256: Sha256,
    /// The `--conflict` policy that chose this action over a conflict
    /// (`None`: no conflict): a reviewer sees which rows replace or
    /// delete what the other side changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_by: Option<ConflictPolicy>,
}

/// Delete a remote object the cache deleted. Precondition: it is still
/// at `version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteRemote {
    pub path: TierPath,
    pub version: Version,
    /// The `--conflict` policy that chose this action over a conflict
    /// (`None`: no conflict): a reviewer sees which rows replace or
    /// delete what the other side changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_by: Option<ConflictPolicy>,
}

/// Rename a cache file out of the way (`--conflict keep-both`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenameLocal {
    pub path: TierPath,
    pub to: TierPath,
    pub sha256: Sha256,
    /// The `--conflict` policy that chose this action over a conflict
    /// (`None`: no conflict): a reviewer sees which rows replace or
    /// delete what the other side changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_by: Option<ConflictPolicy>,
}

/// Download an object that only a remote source still holds straight
/// to the (local) target. Precondition: the target path is absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetch {
    pub path: TierPath,
    pub source: usize,
    pub size: u64,
    pub version: Version,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256>,
}

/// A copy from a remote source's key to the target's key (create-only at
/// the destination, its sha256 carried and checked): server-side on one
/// provider and endpoint, streamed through this machine otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CopyRemote {
    pub path: TierPath,
    pub source: usize,
    pub size: u64,
    pub version: Version,
    pub sha256: Sha256,
    /// The cache copy moves in this plan too, so both sides will agree.
    pub in_cache: bool,
    /// GET from the source, PUT to the target (never through the cache):
    /// the two are on different providers or endpoints.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub streamed: bool,
}

/// Delete what a remote source holds once everything is at the target:
/// each object only at the version observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteSourceRemote {
    pub source: usize,
    pub objects: Vec<RemoteObjectRef>,
    /// Where the datastore went: said in the `moved` marker left at the
    /// source once its objects are gone, for the clones still on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<MovedTo>,
}

/// The place a move went, as its `moved` marker names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovedTo {
    /// A URL, `local`, or a directory.
    pub to: String,
    /// What `swamp datastore setup` takes to follow (remote targets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
}

/// Record in the sync base the files both sides already agree on (and
/// forget those gone from both). No transfer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordBase {
    pub add: Vec<BaseRecord>,
    /// Remote files recorded without downloading them
    /// (`[sync] hydration = "lazy"`): no local delete, no transfer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unhydrated: Vec<UnhydratedRecord>,
    pub drop: Vec<TierPath>,
}

/// Copy a definition file from the repository (`config/models/a.yaml`
/// from `models/a.yaml`) into the cache, atomically. Precondition: the
/// repository file still has `sha256`; the cache file is as `local` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorConfig {
    pub path: TierPath,
    pub size: u64,
    pub sha256: Sha256,
    /// The cache file's sha256 it replaces (`None`: absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<Sha256>,
}

/// Remove a swamp temp file (`.swamp-tmp-…`) that an interrupted write
/// left behind: never data, and older than the lock's TTL, so no live
/// writer owns it. `source`: `None` for the target, else the source
/// placement. Precondition: it is still a regular temp file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoveTemp {
    pub path: TierPath,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<usize>,
    pub size: u64,
    /// In the remote datastore (a directory bucket), not the cache:
    /// untouched for [`crate::store::TEMP_MAX_AGE`], so no writer on any
    /// machine sharing the directory still writes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remote: bool,
}

/// Remove a partial download no plan will continue (see
/// [`crate::store::resume`]): its object was deleted, replaced or
/// excluded since, or untouched for longer than
/// [`crate::store::resume::PARTIAL_MAX_AGE_SECS`].
/// Precondition: still a plain file of that name in the cache's partial
/// directory; removed under its key's partial lock, never while a
/// download writes it. One already gone is fine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemovePartial {
    /// `<key hash>-<version hash>.part`.
    pub name: String,
    pub size: u64,
    pub why: PartialWhy,
}

/// Why a partial download is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartialWhy {
    /// No object the remote lists is at that key and version now.
    Unwanted,
    /// Untouched for longer than
    /// [`crate::store::resume::PARTIAL_MAX_AGE_SECS`].
    Aged,
}

/// Abort a multipart upload an interrupted run of this clone left (its
/// parts are discarded; no object is touched) and forget its record:
/// it is not of the file as it is now, or too old to trust. One
/// already gone is fine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortUpload {
    pub path: TierPath,
    pub upload_id: String,
    pub why: AbortWhy,
}

/// Publish the managed-config sentinel to the remote, after every other
/// action has finished: each object in `objects` is verified in the
/// remote (HEAD, sha256 metadata) first, then the sentinel is written
/// create-only. Never written to the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishSentinel {
    pub path: TierPath,
    pub sources: Vec<String>,
    pub objects: BTreeMap<TierPath, String>,
}

/// Tell the other clones which of this sync's remote deletes swamp's
/// own commands made (`data rm`, `data gc`): a create-only record
/// under `<prefix>/<ns>/.swamp/deletes/`, which their delete guards do
/// not count, keyed to sort after `after` (the newest record listed).
/// Runs after the deletes it vouches for; also removes what `prune`
/// names (see `NoteProgress`), each only at the version observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordDeletes {
    pub files: Vec<crate::state::delete_records::DeletedFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prune: Vec<RemoteObjectRef>,
}

/// Tell the other clones how far this clone's sync base has passed
/// their delete records: a create-only note
/// `<prefix>/<ns>/.swamp/clones/<clone-id>/<passed>.json`, then this
/// clone's notes in `replaces` removed. Runs after the sync's other
/// actions, and notes nothing if the base still holds a file of
/// `check` at the version deleted (one this plan was to pass). Then
/// removes `prune`: records every other clone has passed or older
/// than 30 days, and the notes of clones that had not passed those by
/// then; each only at the version observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteProgress {
    pub passed: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check: Vec<crate::state::delete_records::DeletedFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<RemoteObjectRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prune: Vec<RemoteObjectRef>,
}

/// Remove delete records every other clone has passed (or that are
/// older than 30 days) and the notes of clones that had not passed
/// those by then, when no record or note of this plan's carries them;
/// each only at the version observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneRecords {
    pub prune: Vec<RemoteObjectRef>,
}

/// Remove the team's history records (`<prefix>/<ns>/.swamp/history/`)
/// older than `[undo] keep_days`, as their apply ids date them; each only
/// at the version listed. Rides on a run that writes the bucket anyway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneHistory {
    pub prune: Vec<RemoteObjectRef>,
    pub keep_days: u32,
}

/// Remove what apply `id` set aside (`[undo]` retention): its files in
/// this machine's trash, and its copies in the target's remote trash
/// (`<prefix>/<ns>/.swamp/trash/<id>/`, which only that apply wrote).
/// Apply reads which files from the apply's journal, never from the
/// plan; the counts are for review. Afterwards it cannot be undone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PruneTrash {
    pub id: String,
    /// When that apply ran.
    pub at: String,
    pub reason: PruneReason,
    pub files: usize,
    pub bytes: u64,
    pub remote_objects: usize,
}

/// Move what earlier applies set aside in a remote's cache out of the
/// namespace's tier tree (`<cache>/<ns>/.swamp-trash/<id>/`, where
/// swamp before 0.2 put it) into the cache's own trash
/// (`<cache>/.swamp/trash/<id>/<ns>/`): renames on one filesystem, so
/// the tree mirrors the bucket and undo still finds every file.
/// `source`: `None` for the target, else the source placement.
/// Precondition: each apply's directory is still a directory there; a
/// file already at the new place is never replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelocateTrash {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<usize>,
    pub applies: Vec<String>,
    pub files: usize,
    pub bytes: u64,
}

/// Why an interrupted upload is aborted rather than resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AbortWhy {
    /// The file is no longer what the upload was of.
    FileChanged,
    /// Started longer ago than a day: the bucket may expire it any time.
    Stale,
    /// Nothing is to be uploaded at that path now.
    Unneeded,
}

/// Why an apply's trash is pruned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PruneReason {
    /// Older than `[undo] keep_days`.
    Expired,
    /// The trash on this machine is over `[undo] max_bytes`; oldest first.
    OverMaxBytes,
}

/// What the remote must hold for an upload to proceed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum RemoteExpect {
    /// Create-only (`If-None-Match: *`, `ifGenerationMatch=0`).
    Absent,
    /// Replace only this version (`If-Match`, `ifGenerationMatch=N`).
    Version { version: Version },
}

/// An object to delete, at the version it was seen at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteObjectRef {
    /// Held split ([`crate::layout::ObjectKey`]): a move names a million.
    pub key: crate::layout::ObjectKey,
    pub version: Version,
}

/// One file both sides agree on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseRecord {
    pub path: TierPath,
    pub sha256: Sha256,
    pub size: u64,
    pub version: Version,
}

/// One remote file a lazy pull records without downloading it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnhydratedRecord {
    pub path: TierPath,
    pub size: u64,
    pub version: Version,
    /// Boxed, as in [`crate::state::Unhydrated`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Box<Sha256>>,
    /// As in [`crate::state::Unhydrated`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<Box<crate::digest::Served>>,
}

impl UnhydratedRecord {
    pub fn object(&self) -> crate::state::Unhydrated {
        crate::state::Unhydrated {
            size: self.size,
            version: self.version.clone(),
            sha256: self.sha256.clone(),
            served: self.served.clone(),
        }
    }
}

impl Action {
    /// The size an action moves or removes, where the plan knows it.
    pub fn bytes(&self) -> Option<u64> {
        match self {
            Action::Move(Move { size, .. })
            | Action::DropDuplicate(DropDuplicate { size, .. })
            | Action::Upload(Upload { size, .. })
            | Action::Download(Download { size, .. })
            | Action::Fetch(Fetch { size, .. })
            | Action::CopyRemote(CopyRemote { size, .. })
            | Action::MirrorConfig(MirrorConfig { size, .. })
            | Action::RemoveTemp(RemoveTemp { size, .. })
            | Action::RemovePartial(RemovePartial { size, .. }) => Some(*size),
            Action::PruneTrash(PruneTrash { bytes, .. })
            | Action::RelocateTrash(RelocateTrash { bytes, .. }) => Some(*bytes),
            _ => None,
        }
    }

    /// Stable names, in the order the summary lists them.
    pub const KINDS: [&'static str; 24] = [
        "relocate-trash",
        "remove-temp",
        "remove-partial",
        "abort-upload",
        "mirror-config",
        "move",
        "drop-duplicate",
        "fetch",
        "copy-remote",
        "delete-source-remote",
        "upload",
        "download",
        "delete-local",
        "delete-remote",
        "rename-local",
        "record-base",
        "record-deletes",
        "note-progress",
        "prune-records",
        "prune-history",
        "invalidate-catalog",
        "finish-migration",
        "publish-sentinel",
        "prune-trash",
    ];

    /// Whether this action writes to a remote datastore's bucket; the rest
    /// change this clone's cache (see [`Plan::writes_remote`]).
    pub fn writes_remote(&self) -> bool {
        match self {
            Action::Upload(_)
            | Action::DeleteRemote(_)
            | Action::CopyRemote(_)
            | Action::DeleteSourceRemote(_)
            | Action::RecordDeletes(_)
            | Action::NoteProgress(_)
            | Action::PruneRecords(_)
            | Action::PruneHistory(_)
            | Action::PublishSentinel(_)
            | Action::AbortUpload(_) => true,
            Action::PruneTrash(PruneTrash { remote_objects, .. }) => *remote_objects > 0,
            Action::RemoveTemp(RemoveTemp { remote, .. }) => *remote,
            Action::RemovePartial(_)
            | Action::RelocateTrash(_)
            | Action::MirrorConfig(_)
            | Action::Move(_)
            | Action::DropDuplicate(_)
            | Action::Fetch(_)
            | Action::Download(_)
            | Action::DeleteLocal(_)
            | Action::RenameLocal(_)
            | Action::RecordBase(_)
            | Action::InvalidateCatalog
            | Action::FinishMigration => false,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Action::Move(_) => "move",
            Action::DropDuplicate(_) => "drop-duplicate",
            Action::InvalidateCatalog => "invalidate-catalog",
            Action::FinishMigration => "finish-migration",
            Action::Upload(_) => "upload",
            Action::Download(_) => "download",
            Action::DeleteLocal(_) => "delete-local",
            Action::DeleteRemote(_) => "delete-remote",
            Action::RenameLocal(_) => "rename-local",
            Action::RecordBase(_) => "record-base",
            Action::RecordDeletes(_) => "record-deletes",
            Action::NoteProgress(_) => "note-progress",
            Action::PruneRecords(_) => "prune-records",
            Action::PruneHistory(_) => "prune-history",
            Action::Fetch(_) => "fetch",
            Action::CopyRemote(_) => "copy-remote",
            Action::DeleteSourceRemote(_) => "delete-source-remote",
            Action::MirrorConfig(_) => "mirror-config",
            Action::PublishSentinel(_) => "publish-sentinel",
            Action::RemoveTemp(_) => "remove-temp",
            Action::RemovePartial(_) => "remove-partial",
            Action::PruneTrash(_) => "prune-trash",
            Action::RelocateTrash(_) => "relocate-trash",
            Action::AbortUpload(_) => "abort-upload",
        }
    }

    pub fn path(&self) -> Option<&TierPath> {
        match self {
            Action::Move(Move { path, .. })
            | Action::DropDuplicate(DropDuplicate { path, .. })
            | Action::Upload(Upload { path, .. })
            | Action::Download(Download { path, .. })
            | Action::DeleteLocal(DeleteLocal { path, .. })
            | Action::DeleteRemote(DeleteRemote { path, .. })
            | Action::RenameLocal(RenameLocal { path, .. })
            | Action::Fetch(Fetch { path, .. })
            | Action::CopyRemote(CopyRemote { path, .. })
            | Action::MirrorConfig(MirrorConfig { path, .. })
            | Action::PublishSentinel(PublishSentinel { path, .. })
            | Action::RemoveTemp(RemoveTemp { path, .. }) => Some(path),
            Action::InvalidateCatalog
            | Action::FinishMigration
            | Action::RecordBase(_)
            | Action::RecordDeletes(_)
            | Action::NoteProgress(_)
            | Action::PruneRecords(_)
            | Action::PruneHistory(_)
            | Action::PruneTrash(_)
            | Action::RelocateTrash(_)
            | Action::RemovePartial(_)
            | Action::DeleteSourceRemote(_) => None,
            Action::AbortUpload(AbortUpload { path, .. }) => Some(path),
        }
    }

    /// swamp's own records of a sync (the sync base, delete records and
    /// progress notes): a plan lists them only with `--detail`.
    pub fn is_bookkeeping(&self) -> bool {
        matches!(
            self,
            Action::RecordBase(_)
                | Action::RecordDeletes(_)
                | Action::NoteProgress(_)
                | Action::PruneRecords(_)
                | Action::PruneHistory(_)
        )
    }

    /// The `--conflict` policy that chose it over a conflict, if one did.
    pub fn settled_by(&self) -> Option<ConflictPolicy> {
        match self {
            Action::Upload(a) => a.settled_by,
            Action::Download(a) => a.settled_by,
            Action::DeleteLocal(a) => a.settled_by,
            Action::DeleteRemote(a) => a.settled_by,
            Action::RenameLocal(a) => a.settled_by,
            _ => None,
        }
    }

    /// Marks it as chosen by `by` over a conflict (the kinds a policy
    /// settles with; any other keeps `None`).
    pub(crate) fn mark_settled(&mut self, by: Option<ConflictPolicy>) {
        match self {
            Action::Upload(a) => a.settled_by = by,
            Action::Download(a) => a.settled_by = by,
            Action::DeleteLocal(a) => a.settled_by = by,
            Action::DeleteRemote(a) => a.settled_by = by,
            Action::RenameLocal(a) => a.settled_by = by,
            _ => {}
        }
    }

    /// Why the action exists, in a few words.
    pub fn reason(&self) -> &'static str {
        if self.settled_by().is_some() {
            // The plan's rows say which conflict and what it replaces.
            return "conflict settled by `--conflict`";
        }
        match self {
            Action::Move(_) => "not at the target yet",
            Action::DropDuplicate(_) => "identical copy already at the target",
            Action::InvalidateCatalog => "data files changed",
            Action::FinishMigration => "every file is at the target",
            Action::Upload(Upload {
                remote: RemoteExpect::Absent,
                ..
            }) => "new in the cache",
            Action::Upload(_) => "changed in the cache",
            Action::Download(Download { local: None, .. }) => "new in the remote",
            Action::Download(_) => "changed in the remote",
            Action::DeleteLocal(_) => "deleted in the remote",
            Action::DeleteRemote(_) => "deleted in the cache",
            Action::RenameLocal(RenameLocal { path, to, .. })
                if data_version(path.as_str()).is_some() && data_version(to.as_str()).is_some() =>
            {
                "version made in two clones: kept both, renumbered"
            }
            Action::RenameLocal(_) => "keep both: cache copy set aside",
            Action::RecordBase(RecordBase { unhydrated, .. }) if !unhydrated.is_empty() => {
                "lazy: not downloaded"
            }
            Action::RecordBase(_) => "both sides already agree",
            Action::RecordDeletes(_) => "deleted by swamp: other clones' guards need not stop",
            Action::NoteProgress(NoteProgress { replaces, .. }) if replaces.is_empty() => {
                "first note: other clones' delete records wait for this clone"
            }
            Action::NoteProgress(_) => "this clone's base has passed other clones' deletes",
            Action::PruneRecords(_) => "every clone has passed them, or they are too old",
            Action::PruneHistory(_) => "older than [undo] keep_days",
            Action::Fetch(_) => "only the old remote has it",
            Action::CopyRemote(CopyRemote {
                streamed: false, ..
            }) => "server-side copy",
            Action::CopyRemote(_) => "streamed through this machine",
            Action::DeleteSourceRemote(_) => "everything is at the target",
            Action::MirrorConfig(MirrorConfig { local: None, .. }) => "new in the repository",
            Action::MirrorConfig(_) => "changed in the repository",
            Action::PublishSentinel(_) => "last, once every config object is verified",
            Action::RemoveTemp(RemoveTemp { remote: true, .. }) => {
                "left in the datastore by an interrupted write, untouched for a day"
            }
            Action::RemoveTemp(_) => "left by an interrupted write",
            Action::RemovePartial(RemovePartial {
                why: PartialWhy::Unwanted,
                ..
            }) => "partial download of an object deleted or replaced since",
            Action::RemovePartial(_) => "partial download untouched for a week",
            Action::PruneTrash(PruneTrash {
                reason: PruneReason::Expired,
                ..
            }) => "older than [undo] keep_days",
            Action::PruneTrash(_) => "trash over [undo] max_bytes",
            Action::RelocateTrash(_) => "set-aside files inside the cache's mirror of the bucket",
            Action::AbortUpload(AbortUpload {
                why: AbortWhy::FileChanged,
                ..
            }) => "interrupted upload of a file changed since",
            Action::AbortUpload(AbortUpload {
                why: AbortWhy::Stale,
                ..
            }) => "interrupted upload older than a day",
            Action::AbortUpload(_) => "interrupted upload no longer needed",
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_download_says_replaces_sha256_and_still_reads_local() {
        use super::{Action, Download};
        use crate::digest::Sha256;
        let d = Action::Download(Download {
            path: crate::layout::TierPath::parse("outputs/a").unwrap(),
            size: 1,
            version: "v1".into(),
            expect: crate::plan::Expect::Sha256(Sha256::from("new")),
            local: Some(Box::new(Sha256::from("old"))),
            settled_by: None,
        });
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["replaces_sha256"], json["local"], "{json}");
        assert_eq!(json["sha256"], serde_json::json!(Sha256::from("new")));
        let mut old = json.clone();
        old.as_object_mut().unwrap().remove("replaces_sha256");
        assert_eq!(serde_json::from_value::<Action>(old).unwrap(), d);
        let mut fresh = json;
        fresh.as_object_mut().unwrap().remove("local");
        assert_eq!(serde_json::from_value::<Action>(fresh).unwrap(), d);
        let mut none = serde_json::to_value(&d).unwrap();
        none.as_object_mut().unwrap().remove("local");
        none.as_object_mut().unwrap().remove("replaces_sha256");
        match serde_json::from_value::<Action>(none).unwrap() {
            Action::Download(d) => assert_eq!(d.local, None),
            a => panic!("{a:?}"),
        }
    }

    #[test]
    fn an_action_is_small_enough_to_hold_a_million() {
        // Every action takes the size of the largest kind, and a plan of a
        // million downloads holds a million (128 bytes each before the
        // version went inline and a replaced file's sha256 into a box).
        let size = std::mem::size_of::<super::Action>();
        assert!(size <= 104, "an action is {size} bytes");
    }
}
