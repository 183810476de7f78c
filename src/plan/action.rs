//! The plan's vocabulary: typed actions, conflicts, and the plan itself.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::catalog::name::data_version;
use crate::config::{ConflictPolicy, DatastoreConfig, Namespace, Placement};
use crate::digest::Sha256;
use crate::layout::TierPath;
use crate::state::Scope;
use crate::store::Version;

/// One change apply will make, with the precondition it relies on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Action {
    /// Move a file from a source placement to the target placement.
    /// Precondition: the source still has `sha256`; the destination is absent.
    Move {
        path: TierPath,
        source: usize,
        size: u64,
        sha256: Sha256,
    },
    /// Remove a source copy whose byte-identical twin is already at the
    /// target. Precondition: both still have `sha256`.
    DropDuplicate {
        path: TierPath,
        source: usize,
        size: u64,
        sha256: Sha256,
    },
    /// Mark the catalog stale so the next read rebuilds it from the files.
    InvalidateCatalog,
    /// Clear the migration record from `.swamp.toml` and remove the sources'
    /// empty directories. Precondition: no source holds datastore files.
    FinishMigration,
    /// Upload a cache file. Precondition: the cache file still has
    /// `sha256`; the remote object is as `remote` says (absent, or at that
    /// version), enforced with a conditional write.
    Upload {
        path: TierPath,
        size: u64,
        sha256: Sha256,
        remote: RemoteExpect,
    },
    /// Download a remote object into the cache, verified against its
    /// sha256. Precondition: the cache file is as `local` says.
    Download {
        path: TierPath,
        size: u64,
        version: Version,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<Sha256>,
        /// The cache file's sha256 it replaces (`None`: absent). Boxed: a
        /// replacement is rare, and a million downloads held 24 bytes more
        /// each (every action has the size of the largest).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        local: Option<Box<Sha256>>,
    },
    /// Delete a cache file the remote deleted. Precondition: it still has `sha256`.
    DeleteLocal { path: TierPath, sha256: Sha256 },
    /// Delete a remote object the cache deleted. Precondition: it is still
    /// at `version`.
    DeleteRemote { path: TierPath, version: Version },
    /// Rename a cache file out of the way (`--conflict keep-both`).
    RenameLocal {
        path: TierPath,
        to: TierPath,
        sha256: Sha256,
    },
    /// Download an object that only a remote source still holds straight
    /// to the (local) target. Precondition: the target path is absent.
    Fetch {
        path: TierPath,
        source: usize,
        size: u64,
        version: Version,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<Sha256>,
    },
    /// Server-side copy from a remote source's key to the target's key in
    /// the same bucket (create-only at the destination).
    CopyRemote {
        path: TierPath,
        source: usize,
        size: u64,
        version: Version,
        sha256: Sha256,
        /// The cache copy moves in this plan too, so both sides will agree.
        in_cache: bool,
    },
    /// Delete what a remote source holds once everything is at the target:
    /// each object only at the version observed.
    DeleteSourceRemote {
        source: usize,
        objects: Vec<RemoteObjectRef>,
    },
    /// Record in the sync base the files both sides already agree on (and
    /// forget those gone from both). No transfer.
    RecordBase {
        add: Vec<BaseRecord>,
        /// Remote files recorded without downloading them
        /// (`[sync] hydration = "lazy"`): no local delete, no transfer.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unhydrated: Vec<UnhydratedRecord>,
        drop: Vec<TierPath>,
    },
    /// Copy a definition file from the repository (`config/models/a.yaml`
    /// from `models/a.yaml`) into the cache, atomically. Precondition: the
    /// repository file still has `sha256`; the cache file is as `local` says.
    MirrorConfig {
        path: TierPath,
        size: u64,
        sha256: Sha256,
        /// The cache file's sha256 it replaces (`None`: absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        local: Option<Sha256>,
    },
    /// Remove a swamp temp file (`.swamp-tmp-…`) that an interrupted write
    /// left behind: never data, and older than the lock's TTL, so no live
    /// writer owns it. `source`: `None` for the target, else the source
    /// placement. Precondition: it is still a regular temp file.
    RemoveTemp {
        path: TierPath,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<usize>,
        size: u64,
    },
    /// Abort a multipart upload an interrupted run of this clone left (its
    /// parts are discarded; no object is touched) and forget its record:
    /// it is not of the file as it is now, or too old to trust. One
    /// already gone is fine.
    AbortUpload {
        path: TierPath,
        upload_id: String,
        why: AbortWhy,
    },
    /// Publish the managed-config sentinel to the remote, after every other
    /// action has finished: each object in `objects` is verified in the
    /// remote (HEAD, sha256 metadata) first, then the sentinel is written
    /// create-only. Never written to the cache.
    PublishSentinel {
        path: TierPath,
        sources: Vec<String>,
        objects: BTreeMap<TierPath, String>,
    },
    /// Tell the other clones which of this sync's remote deletes swamp's
    /// own commands made (`data rm`, `data gc`): a create-only record
    /// under `<prefix>/<ns>/.swamp/deletes/`, which their delete guards do
    /// not count, keyed to sort after `after` (the newest record listed).
    /// Runs after the deletes it vouches for; also removes what `prune`
    /// names (see `NoteProgress`), each only at the version observed.
    RecordDeletes {
        files: Vec<crate::state::deliberate::DeletedFile>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        prune: Vec<RemoteObjectRef>,
    },
    /// Tell the other clones how far this clone's sync base has passed
    /// their delete records: a create-only note
    /// `<prefix>/<ns>/.swamp/clones/<clone-id>/<passed>.json`, then this
    /// clone's notes in `replaces` removed. Runs after the sync's other
    /// actions, and notes nothing if the base still holds a file of
    /// `check` at the version deleted (one this plan was to pass). Then
    /// removes `prune`: records every other clone has passed or older
    /// than 30 days, and the notes of clones that had not passed those by
    /// then; each only at the version observed.
    NoteProgress {
        passed: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        check: Vec<crate::state::deliberate::DeletedFile>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        replaces: Vec<RemoteObjectRef>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        prune: Vec<RemoteObjectRef>,
    },
    /// Remove delete records every other clone has passed (or that are
    /// older than 30 days) and the notes of clones that had not passed
    /// those by then, when no record or note of this plan's carries them;
    /// each only at the version observed.
    PruneRecords { prune: Vec<RemoteObjectRef> },
    /// Remove what apply `id` set aside (`[undo]` retention): its files in
    /// this machine's trash, and its copies in the target's remote trash
    /// (`<prefix>/<ns>/.swamp/trash/<id>/`, which only that apply wrote).
    /// Apply reads which files from the apply's journal, never from the
    /// plan; the counts are for review. Afterwards it cannot be undone.
    PruneTrash {
        id: String,
        /// When that apply ran.
        at: String,
        reason: PruneReason,
        files: usize,
        bytes: u64,
        remote_objects: usize,
    },
    /// Move what earlier applies set aside in a remote's cache out of the
    /// namespace's tier tree (`<cache>/<ns>/.swamp-trash/<id>/`, where
    /// swamp before 0.2 put it) into the cache's own trash
    /// (`<cache>/.swamp/trash/<id>/<ns>/`): renames on one filesystem, so
    /// the tree mirrors the bucket and undo still finds every file.
    /// `source`: `None` for the target, else the source placement.
    /// Precondition: each apply's directory is still a directory there; a
    /// file already at the new place is never replaced.
    RelocateTrash {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<usize>,
        applies: Vec<String>,
        files: usize,
        bytes: u64,
    },
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
    pub key: String,
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
}

impl UnhydratedRecord {
    pub fn object(&self) -> crate::state::Unhydrated {
        crate::state::Unhydrated {
            size: self.size,
            version: self.version.clone(),
            sha256: self.sha256.clone(),
        }
    }
}

impl Action {
    /// The size an action moves or removes, where the plan knows it.
    pub fn bytes(&self) -> Option<u64> {
        match self {
            Action::Move { size, .. }
            | Action::DropDuplicate { size, .. }
            | Action::Upload { size, .. }
            | Action::Download { size, .. }
            | Action::Fetch { size, .. }
            | Action::CopyRemote { size, .. }
            | Action::MirrorConfig { size, .. }
            | Action::RemoveTemp { size, .. } => Some(*size),
            Action::PruneTrash { bytes, .. } | Action::RelocateTrash { bytes, .. } => Some(*bytes),
            _ => None,
        }
    }

    /// Stable names, in the order the summary lists them.
    pub const KINDS: [&'static str; 22] = [
        "relocate-trash",
        "remove-temp",
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
        "invalidate-catalog",
        "finish-migration",
        "publish-sentinel",
        "prune-trash",
    ];

    /// Whether this action writes to a remote datastore's bucket; the rest
    /// change this clone's cache (see [`Plan::writes_remote`]).
    pub fn writes_remote(&self) -> bool {
        match self {
            Action::Upload { .. }
            | Action::DeleteRemote { .. }
            | Action::CopyRemote { .. }
            | Action::DeleteSourceRemote { .. }
            | Action::RecordDeletes { .. }
            | Action::NoteProgress { .. }
            | Action::PruneRecords { .. }
            | Action::PublishSentinel { .. }
            | Action::AbortUpload { .. } => true,
            Action::PruneTrash { remote_objects, .. } => *remote_objects > 0,
            Action::RemoveTemp { .. }
            | Action::RelocateTrash { .. }
            | Action::MirrorConfig { .. }
            | Action::Move { .. }
            | Action::DropDuplicate { .. }
            | Action::Fetch { .. }
            | Action::Download { .. }
            | Action::DeleteLocal { .. }
            | Action::RenameLocal { .. }
            | Action::RecordBase { .. }
            | Action::InvalidateCatalog
            | Action::FinishMigration => false,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Action::Move { .. } => "move",
            Action::DropDuplicate { .. } => "drop-duplicate",
            Action::InvalidateCatalog => "invalidate-catalog",
            Action::FinishMigration => "finish-migration",
            Action::Upload { .. } => "upload",
            Action::Download { .. } => "download",
            Action::DeleteLocal { .. } => "delete-local",
            Action::DeleteRemote { .. } => "delete-remote",
            Action::RenameLocal { .. } => "rename-local",
            Action::RecordBase { .. } => "record-base",
            Action::RecordDeletes { .. } => "record-deletes",
            Action::NoteProgress { .. } => "note-progress",
            Action::PruneRecords { .. } => "prune-records",
            Action::Fetch { .. } => "fetch",
            Action::CopyRemote { .. } => "copy-remote",
            Action::DeleteSourceRemote { .. } => "delete-source-remote",
            Action::MirrorConfig { .. } => "mirror-config",
            Action::PublishSentinel { .. } => "publish-sentinel",
            Action::RemoveTemp { .. } => "remove-temp",
            Action::PruneTrash { .. } => "prune-trash",
            Action::RelocateTrash { .. } => "relocate-trash",
            Action::AbortUpload { .. } => "abort-upload",
        }
    }

    pub fn path(&self) -> Option<&TierPath> {
        match self {
            Action::Move { path, .. }
            | Action::DropDuplicate { path, .. }
            | Action::Upload { path, .. }
            | Action::Download { path, .. }
            | Action::DeleteLocal { path, .. }
            | Action::DeleteRemote { path, .. }
            | Action::RenameLocal { path, .. }
            | Action::Fetch { path, .. }
            | Action::CopyRemote { path, .. }
            | Action::MirrorConfig { path, .. }
            | Action::PublishSentinel { path, .. }
            | Action::RemoveTemp { path, .. } => Some(path),
            Action::InvalidateCatalog
            | Action::FinishMigration
            | Action::RecordBase { .. }
            | Action::RecordDeletes { .. }
            | Action::NoteProgress { .. }
            | Action::PruneRecords { .. }
            | Action::PruneTrash { .. }
            | Action::RelocateTrash { .. }
            | Action::DeleteSourceRemote { .. } => None,
            Action::AbortUpload { path, .. } => Some(path),
        }
    }

    /// Why the action exists, in a few words.
    pub fn reason(&self) -> &'static str {
        match self {
            Action::Move { .. } => "not at the target yet",
            Action::DropDuplicate { .. } => "identical copy already at the target",
            Action::InvalidateCatalog => "data files changed",
            Action::FinishMigration => "every file is at the target",
            Action::Upload {
                remote: RemoteExpect::Absent,
                ..
            } => "new in the cache",
            Action::Upload { .. } => "changed in the cache",
            Action::Download { local: None, .. } => "new in the remote",
            Action::Download { .. } => "changed in the remote",
            Action::DeleteLocal { .. } => "deleted in the remote",
            Action::DeleteRemote { .. } => "deleted in the cache",
            Action::RenameLocal { path, to, .. }
                if data_version(path.as_str()).is_some() && data_version(to.as_str()).is_some() =>
            {
                "version made in two clones: kept both, renumbered"
            }
            Action::RenameLocal { .. } => "keep both: cache copy set aside",
            Action::RecordBase { unhydrated, .. } if !unhydrated.is_empty() => {
                "lazy: not downloaded"
            }
            Action::RecordBase { .. } => "both sides already agree",
            Action::RecordDeletes { .. } => "deleted by swamp: other clones' guards need not stop",
            Action::NoteProgress { replaces, .. } if replaces.is_empty() => {
                "first note: other clones' delete records wait for this clone"
            }
            Action::NoteProgress { .. } => "this clone's base has passed other clones' deletes",
            Action::PruneRecords { .. } => "every clone has passed them, or they are too old",
            Action::Fetch { .. } => "only the old remote has it",
            Action::CopyRemote { .. } => "re-keyed inside the bucket",
            Action::DeleteSourceRemote { .. } => "everything is at the target",
            Action::MirrorConfig { local: None, .. } => "new in the repository",
            Action::MirrorConfig { .. } => "changed in the repository",
            Action::PublishSentinel { .. } => "last, once every config object is verified",
            Action::RemoveTemp { .. } => "left by an interrupted write",
            Action::PruneTrash {
                reason: PruneReason::Expired,
                ..
            } => "older than [undo] keep_days",
            Action::PruneTrash { .. } => "trash over [undo] max_bytes",
            Action::RelocateTrash { .. } => {
                "set-aside files inside the cache's mirror of the bucket"
            }
            Action::AbortUpload {
                why: AbortWhy::FileChanged,
                ..
            } => "interrupted upload of a file changed since",
            Action::AbortUpload {
                why: AbortWhy::Stale,
                ..
            } => "interrupted upload older than a day",
            Action::AbortUpload { .. } => "interrupted upload no longer needed",
        }
    }
}

/// Something that blocks apply until a person resolves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Conflict {
    /// The target already holds a different file at the same path.
    DifferentAtTarget {
        path: TierPath,
        source: usize,
        source_sha256: String,
        target_sha256: String,
        /// Unified diff (target → source) for small text files.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
    },
    /// Something at the target stands where a directory must go.
    Obstacle {
        /// Relative to the target placement root ("" = the root itself).
        obstacle: String,
        what: crate::state::ObstacleKind,
        /// How many files it keeps from moving.
        blocked_files: usize,
        /// The first blocked file, as an example.
        example: TierPath,
    },
    /// In the cache, something other than a regular file stands where the
    /// remote or the last sync has a file (or files below it): a symlink, a
    /// special file, a directory, or a plain file where a directory must
    /// be. Nothing of it is followed, deleted, uploaded or downloaded over.
    NotAFile {
        /// Relative to the cache's placement root ("" = the root itself).
        at: String,
        what: crate::state::ObstacleKind,
        /// For a symlink: where it points (never followed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        link: Option<String>,
        /// How many synced files it stands in for.
        files: usize,
        /// The first of them, as an example.
        example: TierPath,
    },
    /// A remote object at a path that is repo-local in every clone (the
    /// catalog `data/_catalog.db` and its sidecars): never downloaded,
    /// never deleted.
    ReservedPath { key: String },
    /// A remote object the cache cannot hold as a file: a key that is also
    /// a prefix of other keys, a name or path too long for the filesystem,
    /// or (where the filesystem folds case) two keys that would be one
    /// file. Nothing is downloaded while it stands.
    Unholdable {
        key: String,
        /// The key it clashes with.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        other: Option<String>,
        why: String,
    },
    /// A cache file larger than the remote can hold as one object (5 TiB
    /// on S3 and GCS): never uploaded; the rest of the plan is blocked
    /// until it is moved out of the datastore or split.
    TooLarge {
        path: TierPath,
        size: u64,
        limit: u64,
    },
    /// Cache and remote both changed the file since the last sync.
    BothChanged {
        path: TierPath,
        local_sha256: Sha256,
        remote_version: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remote_sha256: Option<Sha256>,
        /// `None`: no sync base (first sync) for this file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base_sha256: Option<Sha256>,
    },
    /// One side deleted the file, the other changed it.
    DeletedAndChanged {
        path: TierPath,
        deleted_in: Side,
        changed_sha256: Option<Sha256>,
    },
    /// The old datastore's cache and bucket disagree about a file being
    /// moved off it.
    SourceDiverged {
        path: TierPath,
        source: usize,
        cache_sha256: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remote_sha256: Option<Sha256>,
    },
    /// A delete guard refuses the plan (checked at plan time; `--force` overrides).
    DeleteGuard { guard: String, message: String },
    /// A source holds something swamp cannot move (a symlink, a special file).
    Unsupported {
        /// Relative to the source placement root.
        path: String,
        source: usize,
        what: crate::state::ObstacleKind,
    },
    /// The remote already holds a managed-config sentinel that vouches for
    /// other content than this repository would publish (another clone
    /// migrated first). Nothing of it is overwritten.
    ConfigAlreadyMigrated {
        path: TierPath,
        /// The sentinel in the remote, as stored.
        remote_body: String,
        /// What this repository would publish (`sources` and `objects`).
        local_body: String,
    },
}

impl Conflict {
    pub fn kind(&self) -> &'static str {
        match self {
            Conflict::DifferentAtTarget { .. } => "different-at-target",
            Conflict::Obstacle { .. } => "obstacle",
            Conflict::NotAFile { .. } => "not-a-file",
            Conflict::ReservedPath { .. } => "reserved-path",
            Conflict::Unholdable { .. } => "unholdable",
            Conflict::TooLarge { .. } => "too-large",
            Conflict::Unsupported { .. } => "unsupported",
            Conflict::BothChanged { .. } => "both-changed",
            Conflict::DeletedAndChanged { .. } => "deleted-and-changed",
            Conflict::DeleteGuard { .. } => "delete-guard",
            Conflict::SourceDiverged { .. } => "source-diverged",
            Conflict::ConfigAlreadyMigrated { .. } => "config-already-migrated",
        }
    }
}

/// The cache (local) or the remote side of a sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Cache,
    Remote,
}

/// A placement as the plan shows it: the configuration plus its directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlacementInfo {
    pub datastore: DatastoreConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Namespace>,
    /// The directory as the plan document names it on any machine:
    /// `.swamp/homelab`, `$SWAMP_HOME/repos/<id>`, or a shared directory's
    /// absolute path ([`crate::layout::Layout::root_label`]).
    pub root: String,
    /// The directory on this machine, which apply acts on. Not in the
    /// document: it follows from the other fields and the machine's
    /// layout, so a plan read from a file has none (`apply FILE` runs the
    /// plan it makes again, never the file's).
    #[serde(skip)]
    pub dir: PathBuf,
}

/// Equal when the document says the same: `dir` follows from the rest.
impl PartialEq for PlacementInfo {
    fn eq(&self, other: &Self) -> bool {
        self.datastore == other.datastore
            && self.namespace == other.namespace
            && self.root == other.root
    }
}

impl Eq for PlacementInfo {}

impl PlacementInfo {
    /// The directory as plans show it, with a trailing slash: `./`,
    /// `.swamp/homelab/`, `$SWAMP_HOME/repos/<id>/`.
    pub fn shown(&self) -> String {
        format!("{}/", self.root)
    }

    /// `s3://bucket/prefix/ns/` for a remote placement.
    pub fn remote_label(&self) -> Option<String> {
        self.datastore
            .is_remote()
            .then(|| crate::layout::Layout::remote_url(&self.placement()))
    }

    pub fn placement(&self) -> Placement {
        Placement {
            datastore: self.datastore.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

/// Counts per action kind, conflicts, bytes, and an estimate of the
/// requests apply will make against the remote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    #[serde(rename = "move")]
    pub moves: usize,
    pub drop_duplicate: usize,
    pub upload: usize,
    pub download: usize,
    pub delete_local: usize,
    pub delete_remote: usize,
    pub rename_local: usize,
    pub record_base: usize,
    /// Records of deliberate deletes this sync writes (0 or 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub record_deletes: usize,
    /// Notes of this clone's progress past those records (0 or 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub note_progress: usize,
    /// Old records and notes removed without either (0 or 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prune_records: usize,
    pub fetch: usize,
    pub copy_remote: usize,
    pub delete_source_remote: usize,
    pub invalidate_catalog: usize,
    pub finish_migration: usize,
    pub mirror_config: usize,
    pub publish_sentinel: usize,
    pub remove_temp: usize,
    /// Interrupted multipart uploads to abort.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub abort_upload: usize,
    /// Applies whose set-aside files move out of the cache's tier tree.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub relocate_trash: usize,
    /// Applies whose trash this plan prunes, and the bytes freed here.
    #[serde(default)]
    pub prune_trash: usize,
    #[serde(default)]
    pub bytes_to_prune: u64,
    /// Files this run sets aside for `swamp undo` (cache files deleted or
    /// replaced, duplicates dropped).
    #[serde(default)]
    pub set_aside: usize,
    /// Remote objects this run deletes or replaces that it first copies
    /// into its remote trash (0 with `--no-undo`).
    #[serde(default)]
    pub trash_copies: usize,
    /// Remote keys skipped: folder markers, and keys in no tier.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: usize,
    /// Cache paths skipped: symlinks, special files and names no key can
    /// hold that stand in no synced file's way.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped_local: usize,
    pub conflicts: usize,
    pub bytes_to_move: u64,
    pub bytes_to_upload: u64,
    pub bytes_to_download: u64,
    pub requests: RequestEstimate,
}

/// Requests apply is expected to send (retries not counted). LIST covers
/// the re-observation that confirms convergence.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestEstimate {
    pub list: u64,
    pub put: u64,
    pub get: u64,
    pub delete: u64,
}

/// The remote side of a sync plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteInfo {
    /// `s3://bucket/prefix/ns/`: everything this plan may touch is below it.
    pub url: String,
    /// The key prefix (`<prefix>/<ns>/`).
    pub key_prefix: String,
    /// Objects listed under it.
    pub objects: usize,
    /// Deletes go in batches of up to 1000 when the backend allows.
    pub batch_delete: bool,
    /// How conflicts were settled (`fail` leaves them blocking).
    pub conflict_policy: ConflictPolicy,
    /// Delete guards were overridden with `--force`.
    pub forced: bool,
    /// `--force-delete-local`: cache files whose content exists nowhere
    /// else may be deleted too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub forced_delete_local: bool,
    /// `--no-base`: planned as a first sync, the last sync's record set
    /// aside (nothing is deleted on either side).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub base_ignored: bool,
    /// `--hydrate`: downloads what lazy pulls recorded as in the remote only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hydrate: bool,
    /// Remote files the cache does not hold on purpose (lazy hydration),
    /// as recorded when this plan was made.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unhydrated: usize,
    /// Folder markers skipped (zero-byte keys ending in `/`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub folder_markers: usize,
    /// Keys under the namespace in no tier: listed, never synced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmanaged: Vec<crate::state::remote::Unmanaged>,
    /// What in the cache this sync never reads, writes or deletes: symlinks
    /// (never followed), special files, and files whose names no key can
    /// hold, where no synced file is (those are `not-a-file` conflicts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_local: Vec<crate::state::Obstacle>,
    /// Conflicts settled by `conflict_policy`, for review.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resolved: Vec<Conflict>,
    /// The id the remote holds, which the sync base gets bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_id: Option<String>,
    /// Why the last sync's base was set aside (made with another remote):
    /// this sync is a first sync, and deletes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_reset: Option<String>,
}

/// The ordered actions that take observed to desired, and what blocks them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub scope: Scope,
    pub target: PlacementInfo,
    pub sources: Vec<PlacementInfo>,
    /// Present when the plan syncs with a remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteInfo>,
    pub actions: Vec<Action>,
    pub conflicts: Vec<Conflict>,
    /// `--no-undo`: this run deletes and replaces for good (nothing set
    /// aside, no remote trash copies).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_undo: bool,
    /// Content diffs: of each both-changed or deleted-and-changed conflict,
    /// and (`plan --diff`) of each upload or download that replaces a file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diffs: Vec<super::textdiff::ContentDiff>,
    /// Transfers that continue where an interrupted run stopped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumes: Vec<super::resume::Resume>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty() && self.conflicts.is_empty()
    }

    /// The datastore matches the configuration: no conflict, and nothing
    /// to do but housekeeping (pruning trash that came due, or moving an
    /// older swamp's trash out of the cache's tier tree, which is not
    /// drift).
    pub fn in_sync(&self) -> bool {
        self.conflicts.is_empty()
            && self
                .actions
                .iter()
                .all(|a| matches!(a, Action::PruneTrash { .. } | Action::RelocateTrash { .. }))
    }

    pub fn has_conflicts(&self) -> bool {
        !self.conflicts.is_empty()
    }

    /// Whether applying it writes to the bucket of a remote (S3 or GCS)
    /// datastore: only such a run needs the datastore's lock and
    /// credentials that may write. (A filesystem datastore's moves write
    /// its shared directory; its runs always take its lock.)
    pub fn writes_remote(&self) -> bool {
        self.actions.iter().any(Action::writes_remote)
    }

    pub fn summary(&self) -> Summary {
        let mut tally = Tally {
            summary: Summary {
                conflicts: self.conflicts.len(),
                ..Summary::default()
            },
            ..Tally::default()
        };
        for a in &self.actions {
            tally.count(a);
        }
        let mut s = std::mem::take(&mut tally.summary);
        if self.no_undo {
            s.set_aside = 0;
            s.trash_copies = 0;
        }
        if let Some(remote) = &self.remote {
            s.skipped =
                remote.folder_markers + remote.unmanaged.iter().map(|u| u.objects).sum::<usize>();
            s.skipped_local = remote.skipped_local.len();
        }
        s.requests = tally.requests(&s, self.remote.as_ref(), self.writes_remote());
        // The reads planning made to show diffs.
        s.requests.get += self.diffs.iter().filter(|d| d.read_remote).count() as u64;
        s
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
/// Counts a plan's actions into its [`Summary`], with what only the
/// request estimate needs.
#[derive(Default)]
struct Tally {
    summary: Summary,
    /// HEADs of the objects a sentinel vouches for.
    sentinel_heads: u64,
    /// Remote trash objects pruned.
    pruned_objects: u64,
    /// Delete records and notes removed.
    records_pruned: u64,
}

impl Tally {
    fn count(&mut self, a: &Action) {
        let s = &mut self.summary;
        match a {
            Action::Move { size, .. } => {
                s.moves += 1;
                s.bytes_to_move += size;
            }
            Action::DropDuplicate { .. } => {
                s.drop_duplicate += 1;
                s.set_aside += 1;
            }
            Action::InvalidateCatalog => s.invalidate_catalog += 1,
            Action::FinishMigration => s.finish_migration += 1,
            Action::Upload { size, remote, .. } => {
                s.upload += 1;
                s.bytes_to_upload += size;
                if matches!(remote, RemoteExpect::Version { .. }) {
                    s.trash_copies += 1;
                }
            }
            Action::Download { size, local, .. } => {
                s.download += 1;
                s.bytes_to_download += size;
                if local.is_some() {
                    s.set_aside += 1;
                }
            }
            Action::DeleteLocal { .. } => {
                s.delete_local += 1;
                s.set_aside += 1;
            }
            Action::DeleteRemote { .. } => {
                s.delete_remote += 1;
                s.trash_copies += 1;
            }
            Action::RenameLocal { .. } => s.rename_local += 1,
            Action::RecordBase { .. } => s.record_base += 1,
            Action::RecordDeletes { prune, .. } => {
                s.record_deletes += 1;
                self.records_pruned += prune.len() as u64;
            }
            Action::NoteProgress {
                replaces, prune, ..
            } => {
                s.note_progress += 1;
                self.records_pruned += (replaces.len() + prune.len()) as u64;
            }
            Action::PruneRecords { prune } => {
                s.prune_records += 1;
                self.records_pruned += prune.len() as u64;
            }
            Action::Fetch { size, .. } => {
                s.fetch += 1;
                s.bytes_to_download += size;
            }
            Action::CopyRemote { .. } => s.copy_remote += 1,
            Action::DeleteSourceRemote { objects, .. } => {
                s.delete_source_remote += objects.len();
            }
            Action::MirrorConfig { .. } => s.mirror_config += 1,
            Action::RemoveTemp { .. } => s.remove_temp += 1,
            Action::AbortUpload { .. } => s.abort_upload += 1,
            Action::RelocateTrash { applies, .. } => s.relocate_trash += applies.len(),
            Action::PublishSentinel { objects, .. } => {
                s.publish_sentinel += 1;
                self.sentinel_heads += objects.len() as u64;
            }
            Action::PruneTrash {
                bytes,
                remote_objects,
                ..
            } => {
                s.prune_trash += 1;
                s.bytes_to_prune += bytes;
                self.pruned_objects += *remote_objects as u64;
            }
        }
    }

    /// The requests the plan costs against its remote: the estimate the
    /// plan shows before anything is sent.
    ///
    /// Counted from the moment the plan is shown under the lock: its
    /// actions, the listing that verifies them, and giving back the
    /// datastore's lock a run that writes the bucket holds (a DELETE).
    /// Not counted: the listings planning itself costs (one per page, each
    /// time a run plans), and renewing a lock held longer than a third of
    /// its TTL (a PUT each time).
    fn requests(
        &self,
        s: &Summary,
        remote: Option<&RemoteInfo>,
        writes_remote: bool,
    ) -> RequestEstimate {
        let mut requests = RequestEstimate::default();
        if let Some(remote) = remote {
            let deletes = s.delete_remote as u64;
            let batched = |n: u64| {
                if remote.batch_delete {
                    n.div_ceil(1000)
                } else {
                    n
                }
            };
            requests = RequestEstimate {
                // The re-observation lists what the bucket will hold then;
                // a run that writes nothing there keeps the listing it
                // planned from (the bucket changed only if someone else
                // changed it, which the next plan shows).
                list: if writes_remote {
                    (remote.objects + s.upload)
                        .saturating_sub(s.delete_remote)
                        .div_ceil(1000)
                        .max(1) as u64
                } else {
                    0
                },
                // Each object deleted or replaced is first copied into the
                // remote trash: one server-side copy, counted as a PUT.
                put: (s.upload + s.trash_copies) as u64,
                get: s.download as u64,
                // An abort is a DELETE of the upload.
                delete: batched(deletes)
                    + batched(self.pruned_objects)
                    + s.abort_upload as u64
                    + u64::from(writes_remote),
            };
        }
        // Draining a remote source: a GET per fetch, a PUT (copy) per
        // re-keyed object, a DELETE per object left behind.
        requests.get += s.fetch as u64;
        requests.put += s.copy_remote as u64;
        requests.delete += s.delete_source_remote as u64;
        // Publishing the sentinel: a HEAD per object it vouches for
        // (counted with the GETs), then one PUT.
        requests.get += self.sentinel_heads;
        requests.put += s.publish_sentinel as u64;
        // A delete record or a note: one PUT each, and a DELETE per
        // record or note removed.
        requests.put += (s.record_deletes + s.note_progress) as u64;
        requests.delete += self.records_pruned;
        // GCS: a conditional delete or copy reads the object's metadata
        // first (the precondition checked before the request, as
        // fake-gcs-server does not enforce it on either).
        if remote.is_some_and(|r| r.url.starts_with("gs://")) {
            requests.get += (s.delete_remote + s.trash_copies) as u64
                + self.records_pruned
                + u64::from(writes_remote);
        }
        requests
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_action_is_small_enough_to_hold_a_million() {
        // Every action takes the size of the largest kind, and a plan of a
        // million downloads holds a million (128 bytes each before the
        // version went inline and a replaced file's sha256 into a box).
        let size = std::mem::size_of::<super::Action>();
        assert!(size <= 104, "an action is {size} bytes");
    }
}
