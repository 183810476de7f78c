//! Plans: the [`Plan`] itself (here), what it does ([`action`]), what
//! blocks it ([`conflict`]), what it adds up to ([`summary`]), the pure
//! diffs that produce it ([`diff`] of a layout, [`sync_diff`] of a sync),
//! their composition ([`compose`]), the observed-state fingerprint that
//! makes a saved plan refusable when stale ([`fingerprint`]), and saving
//! and loading ([`file`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::{ConflictPolicy, DatastoreConfig, Namespace, Placement};
use crate::layout::TierPath;
use crate::state::Scope;

pub mod action;
pub(crate) mod compose;
pub mod conflict;
pub(crate) mod delete_notes;
pub(crate) mod drain;
mod expect;
pub(crate) mod file;
pub(crate) mod fingerprint;
pub(crate) mod layout_diff;
pub(crate) mod managed;
pub mod resume;
pub(crate) mod retention;
pub(crate) mod stale;
pub mod summary;
pub(crate) mod sync_diff;
pub mod textdiff;
pub(crate) mod undo;

/// What planning found standing where a file or directory must be.
pub use crate::state::{Obstacle, ObstacleKind};
pub use action::{AbortWhy, Action, BaseRecord, RemoteExpect, RemoteObjectRef, UnhydratedRecord};
pub use conflict::{Conflict, Side};
pub use expect::Expect;
pub use file::{LockInfo, PlanFileError, SavedPlan};
pub use fingerprint::Fingerprint;
pub use layout_diff::diff;
pub use summary::{RequestEstimate, Summary};

/// Version of the plan JSON document (`--json` and saved plan files).
/// Additive changes keep it; anything a reader must understand bumps it.
pub const FORMAT_VERSION: u32 = 1;

/// For `skip_serializing_if`: a count of nothing is left out.
fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// `root` relative to `repo` when inside it, with a trailing slash (an
/// empty `repo`: no repository, the path as it is).
pub fn root_label(root: &std::path::Path, repo: &std::path::Path) -> String {
    if repo.as_os_str().is_empty() {
        return format!("{}/", root.display());
    }
    let shown = match root.strip_prefix(repo) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => root.display().to_string(),
    };
    format!("{shown}/")
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
    /// Conditional requests the server is not known to enforce (`delete`,
    /// `copy`): each reads the object's version just before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prechecked: Vec<crate::store::enforced::Prechecked>,
    /// Files at least this large upload in parts: S3 a request to start,
    /// one per part, one to complete; GCS a request to open a resumable
    /// session, then one per chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multipart_threshold: Option<u64>,
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
    pub diffs: Vec<textdiff::ContentDiff>,
    /// Transfers that continue where an interrupted run stopped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumes: Vec<resume::Resume>,
    /// Other clones whose progress notes sit in a remote source this plan
    /// moves away from: they still sync with the old place.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_clones: Vec<OtherClone>,
    /// Who made the remote changes this plan follows (its downloads and
    /// cache deletes), as the team's history records them, by path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authored: Vec<Authored>,
}

/// A remote change a teammate's apply made, as its record names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Authored {
    pub path: TierPath,
    /// `created`, `replaced` or `deleted`.
    pub change: String,
    /// The apply, and who ran it when (RFC 3339).
    pub id: String,
    pub by: String,
    pub at: String,
}

impl Plan {
    /// Who made the remote change at `path`, when the history says.
    pub fn authored(&self, path: &TierPath) -> Option<&Authored> {
        self.authored
            .binary_search_by(|a| a.path.cmp(path))
            .ok()
            .map(|i| &self.authored[i])
    }
}

/// Another clone that synced a remote source (its progress note there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OtherClone {
    /// Index into `sources`.
    pub source: usize,
    /// Its clone id (`.swamp/clones/<id>/` in the bucket).
    pub clone: String,
    /// When its note was last written (seconds since the epoch), if listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noted: Option<i64>,
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
                .all(|a| matches!(a, Action::PruneTrash(_) | Action::RelocateTrash(_)))
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
}
