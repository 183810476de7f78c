//! The plan's vocabulary: typed actions, conflicts, and the plan itself.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::{DatastoreConfig, Namespace, Placement};
use crate::layout::TierPath;
use crate::state::Scope;

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
        sha256: String,
    },
    /// Remove a source copy whose byte-identical twin is already at the
    /// target. Precondition: both still have `sha256`.
    DropDuplicate {
        path: TierPath,
        source: usize,
        size: u64,
        sha256: String,
    },
    /// Mark the catalog stale so the next read rebuilds it from the files.
    InvalidateCatalog,
    /// Clear the migration record from `.swamp.toml` and remove the sources'
    /// empty directories. Precondition: no source holds datastore files.
    FinishMigration,
}

impl Action {
    /// Stable names, in the order the summary lists them.
    pub const KINDS: [&'static str; 4] = [
        "move",
        "drop-duplicate",
        "invalidate-catalog",
        "finish-migration",
    ];

    pub fn kind(&self) -> &'static str {
        match self {
            Action::Move { .. } => "move",
            Action::DropDuplicate { .. } => "drop-duplicate",
            Action::InvalidateCatalog => "invalidate-catalog",
            Action::FinishMigration => "finish-migration",
        }
    }

    pub fn path(&self) -> Option<&TierPath> {
        match self {
            Action::Move { path, .. } | Action::DropDuplicate { path, .. } => Some(path),
            Action::InvalidateCatalog | Action::FinishMigration => None,
        }
    }

    /// Why the action exists, in a few words.
    pub fn reason(&self) -> &'static str {
        match self {
            Action::Move { .. } => "not at the target yet",
            Action::DropDuplicate { .. } => "identical copy already at the target",
            Action::InvalidateCatalog => "data files moved",
            Action::FinishMigration => "every file is at the target",
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
    /// A source holds something swamp cannot move (a symlink, a special file).
    Unsupported {
        /// Relative to the source placement root.
        path: String,
        source: usize,
        what: crate::state::ObstacleKind,
    },
}

impl Conflict {
    pub fn kind(&self) -> &'static str {
        match self {
            Conflict::DifferentAtTarget { .. } => "different-at-target",
            Conflict::Obstacle { .. } => "obstacle",
            Conflict::Unsupported { .. } => "unsupported",
        }
    }
}

/// A placement as the plan shows it: the configuration plus its directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementInfo {
    pub datastore: DatastoreConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Namespace>,
    pub root: PathBuf,
}

impl PlacementInfo {
    pub fn placement(&self) -> Placement {
        Placement {
            datastore: self.datastore.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

/// Counts per action kind, plus conflicts and bytes to move.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    #[serde(rename = "move")]
    pub moves: usize,
    pub drop_duplicate: usize,
    pub invalidate_catalog: usize,
    pub finish_migration: usize,
    pub conflicts: usize,
    pub bytes_to_move: u64,
}

/// The ordered actions that take observed to desired, and what blocks them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub scope: Scope,
    pub target: PlacementInfo,
    pub sources: Vec<PlacementInfo>,
    pub actions: Vec<Action>,
    pub conflicts: Vec<Conflict>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty() && self.conflicts.is_empty()
    }

    pub fn has_conflicts(&self) -> bool {
        !self.conflicts.is_empty()
    }

    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            conflicts: self.conflicts.len(),
            ..Summary::default()
        };
        for a in &self.actions {
            match a {
                Action::Move { size, .. } => {
                    s.moves += 1;
                    s.bytes_to_move += size;
                }
                Action::DropDuplicate { .. } => s.drop_duplicate += 1,
                Action::InvalidateCatalog => s.invalidate_catalog += 1,
                Action::FinishMigration => s.finish_migration += 1,
            }
        }
        s
    }
}
