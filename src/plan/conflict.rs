//! What blocks a plan: [`Conflict`], one kind a struct each, until a
//! person resolves it.

use serde::{Deserialize, Serialize};

use crate::config::ConflictPolicy;
use crate::digest::Sha256;
use crate::layout::TierPath;

/// Something that blocks apply until a person resolves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Conflict {
    DifferentAtTarget(DifferentAtTarget),
    Obstacle(Obstacle),
    NotAFile(NotAFile),
    ReservedPath(ReservedPath),
    Unholdable(Unholdable),
    TooLarge(TooLarge),
    BothChanged(BothChanged),
    DeletedAndChanged(DeletedAndChanged),
    SourceDiverged(SourceDiverged),
    DeleteGuard(DeleteGuard),
    Unsupported(Unsupported),
    ConfigAlreadyMigrated(ConfigAlreadyMigrated),
}

/// The target already holds a different file at the same path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DifferentAtTarget {
    pub path: TierPath,
    pub source: usize,
    pub source_sha256: String,
    pub target_sha256: String,
    /// Both sides' sizes, where the plan knows them (a move between
    /// remotes: from the listings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_size: Option<u64>,
    /// Unified diff (target → source) for small text files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// Something at the target stands where a directory must go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obstacle {
    /// Relative to the target placement root ("" = the root itself).
    pub obstacle: String,
    pub what: crate::state::ObstacleKind,
    /// How many files it keeps from moving.
    pub blocked_files: usize,
    /// The first blocked file, as an example.
    pub example: TierPath,
}

/// In the cache, something other than a regular file stands where the
/// remote or the last sync has a file (or files below it): a symlink, a
/// special file, a directory, or a plain file where a directory must
/// be. Nothing of it is followed, deleted, uploaded or downloaded over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotAFile {
    /// Relative to the cache's placement root ("" = the root itself).
    pub at: String,
    pub what: crate::state::ObstacleKind,
    /// For a symlink: where it points (never followed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// How many synced files it stands in for.
    pub files: usize,
    /// The first of them, as an example.
    pub example: TierPath,
}

/// A remote object at a path that is repo-local in every clone (the
/// catalog `data/_catalog.db` and its sidecars): never downloaded,
/// never deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservedPath {
    pub key: String,
}

/// A remote object the cache cannot hold as a file: a key that is also
/// a prefix of other keys, a name or path too long for the filesystem,
/// or (where the filesystem folds case) two keys that would be one
/// file. Nothing is downloaded while it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unholdable {
    pub key: String,
    /// The key it clashes with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<String>,
    pub why: String,
}

/// A cache file larger than the remote can hold as one object (5 TiB
/// on S3 and GCS): never uploaded; the rest of the plan is blocked
/// until it is moved out of the datastore or split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TooLarge {
    pub path: TierPath,
    pub size: u64,
    pub limit: u64,
}

/// Cache and remote both changed the file since the last sync.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "BothChangedDoc", into = "BothChangedDoc")]
pub struct BothChanged {
    pub path: TierPath,
    pub cache_sha256: Sha256,
    pub remote_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_sha256: Option<Sha256>,
    /// `None`: no sync base (first sync) for this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_sha256: Option<Sha256>,
    /// When the remote's version was written (seconds since the epoch),
    /// when the listing says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_modified: Option<i64>,
}

/// A both-changed conflict as JSON: the cache's sha256 is `cache_sha256`
/// (STYLE.md's vocabulary); `local_sha256`, its name before, is printed
/// too and read when alone, through plan `format_version` 1.
#[derive(Serialize, Deserialize)]
struct BothChangedDoc {
    path: TierPath,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cache_sha256: Option<Sha256>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    local_sha256: Option<Sha256>,
    remote_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remote_sha256: Option<Sha256>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base_sha256: Option<Sha256>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remote_modified: Option<i64>,
}

impl TryFrom<BothChangedDoc> for BothChanged {
    type Error = &'static str;

    fn try_from(d: BothChangedDoc) -> Result<Self, Self::Error> {
        Ok(BothChanged {
            path: d.path,
            cache_sha256: d
                .cache_sha256
                .or(d.local_sha256)
                .ok_or("a both-changed conflict needs `cache_sha256`")?,
            remote_version: d.remote_version,
            remote_sha256: d.remote_sha256,
            base_sha256: d.base_sha256,
            remote_modified: d.remote_modified,
        })
    }
}

impl From<BothChanged> for BothChangedDoc {
    fn from(c: BothChanged) -> Self {
        BothChangedDoc {
            path: c.path,
            cache_sha256: Some(c.cache_sha256),
            local_sha256: Some(c.cache_sha256),
            remote_version: c.remote_version,
            remote_sha256: c.remote_sha256,
            base_sha256: c.base_sha256,
            remote_modified: c.remote_modified,
        }
    }
}

/// One side deleted the file, the other changed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletedAndChanged {
    pub path: TierPath,
    pub deleted_in: Side,
    pub changed_sha256: Option<Sha256>,
    /// When the remote's changed version was written (deleted in the
    /// cache), when the listing says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_modified: Option<i64>,
}

/// The old datastore's cache and bucket disagree about a file being
/// moved off it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceDiverged {
    pub path: TierPath,
    pub source: usize,
    pub cache_sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_sha256: Option<Sha256>,
}

/// A delete guard refuses the plan (checked at plan time; `--force` overrides).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteGuard {
    pub guard: String,
    pub message: String,
}

/// A source holds something swamp cannot move (a symlink, a special file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unsupported {
    /// Relative to the source placement root.
    pub path: String,
    pub source: usize,
    pub what: crate::state::ObstacleKind,
}

/// The remote already holds a managed-config sentinel that vouches for
/// other content than this repository would publish (another clone
/// migrated first). Nothing of it is overwritten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigAlreadyMigrated {
    pub path: TierPath,
    /// The sentinel in the remote, as stored.
    pub remote_body: String,
    /// What this repository would publish (`sources` and `objects`).
    pub local_body: String,
}

impl Conflict {
    /// What it is about, as the plan shows it (`None`: a guard).
    pub fn path(&self) -> Option<String> {
        Some(match self {
            Conflict::DifferentAtTarget(c) => c.path.to_string(),
            Conflict::Obstacle(c) => c.obstacle.clone(),
            Conflict::NotAFile(c) => c.at.clone(),
            Conflict::ReservedPath(c) => c.key.clone(),
            Conflict::Unholdable(c) => c.key.clone(),
            Conflict::TooLarge(c) => c.path.to_string(),
            Conflict::Unsupported(c) => c.path.clone(),
            Conflict::BothChanged(c) => c.path.to_string(),
            Conflict::DeletedAndChanged(c) => c.path.to_string(),
            Conflict::SourceDiverged(c) => c.path.to_string(),
            Conflict::ConfigAlreadyMigrated(c) => c.path.to_string(),
            Conflict::DeleteGuard(_) => return None,
        })
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Conflict::DifferentAtTarget(_) => "different-at-target",
            Conflict::Obstacle(_) => "obstacle",
            Conflict::NotAFile(_) => "not-a-file",
            Conflict::ReservedPath(_) => "reserved-path",
            Conflict::Unholdable(_) => "unholdable",
            Conflict::TooLarge(_) => "too-large",
            Conflict::Unsupported(_) => "unsupported",
            Conflict::BothChanged(_) => "both-changed",
            Conflict::DeletedAndChanged(_) => "deleted-and-changed",
            Conflict::DeleteGuard(_) => "delete-guard",
            Conflict::SourceDiverged(_) => "source-diverged",
            Conflict::ConfigAlreadyMigrated(_) => "config-already-migrated",
        }
    }
}

/// A `--conflict` policy asked of a plan whose conflicts it cannot
/// settle: refused at plan time rather than silently ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Misfit {
    pub policy: ConflictPolicy,
    /// The kinds it met and does not settle, each once, in plan order.
    pub kinds: Vec<&'static str>,
    /// A path of each (the first few).
    pub paths: Vec<String>,
    /// The kinds it does settle.
    pub settles: &'static [&'static str],
}

/// The conflict kinds `policy` settles.
pub fn settled_kinds(policy: ConflictPolicy) -> &'static [&'static str] {
    match policy {
        ConflictPolicy::Fail => &[],
        // A delete has no time to compare.
        ConflictPolicy::Newer => &["both-changed"],
        _ => &["both-changed", "deleted-and-changed"],
    }
}

/// Whether a `--conflict policy` the command line asked for misfits
/// `conflicts` (those it left) after it settled `settled` of them: `newer`
/// meeting a deleted-and-changed conflict, or any policy meeting only
/// kinds it never settles (a layout conflict).
pub fn misfit(policy: ConflictPolicy, conflicts: &[Conflict], settled: usize) -> Option<Misfit> {
    let settles = settled_kinds(policy);
    if policy == ConflictPolicy::Fail || conflicts.is_empty() {
        return None;
    }
    let foreign = |c: &&Conflict| !settles.contains(&c.kind());
    let refused: Vec<&Conflict> = if conflicts.iter().all(|c| foreign(&c)) && settled == 0 {
        conflicts.iter().collect()
    } else if policy == ConflictPolicy::Newer {
        conflicts
            .iter()
            .filter(|c| matches!(c, Conflict::DeletedAndChanged(_)))
            .collect()
    } else {
        Vec::new()
    };
    if refused.is_empty() {
        return None;
    }
    let mut kinds: Vec<&'static str> = Vec::new();
    for c in &refused {
        if !kinds.contains(&c.kind()) {
            kinds.push(c.kind());
        }
    }
    Some(Misfit {
        policy,
        kinds,
        paths: refused.iter().filter_map(|c| c.path()).take(3).collect(),
        settles,
    })
}

/// The cache (local) or the remote side of a sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Cache,
    Remote,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both() -> Conflict {
        Conflict::BothChanged(BothChanged {
            path: TierPath::parse("outputs/a").unwrap(),
            cache_sha256: Sha256::from("a"),
            remote_version: "v".into(),
            remote_sha256: None,
            base_sha256: None,
            remote_modified: None,
        })
    }

    fn deleted() -> Conflict {
        Conflict::DeletedAndChanged(DeletedAndChanged {
            path: TierPath::parse("outputs/d").unwrap(),
            deleted_in: Side::Cache,
            changed_sha256: None,
            remote_modified: None,
        })
    }

    fn layout() -> Conflict {
        Conflict::DifferentAtTarget(DifferentAtTarget {
            path: TierPath::parse("data/x/1/raw").unwrap(),
            source: 0,
            source_sha256: "s".into(),
            target_sha256: "t".into(),
            source_size: None,
            target_size: None,
            diff: None,
        })
    }

    #[test]
    fn a_both_changed_conflict_says_cache_sha256_and_still_reads_local_sha256() {
        let json = serde_json::to_value(both()).unwrap();
        assert_eq!(json["kind"], "both-changed");
        assert_eq!(json["cache_sha256"], json["local_sha256"], "{json}");
        let mut old = json.clone();
        old.as_object_mut().unwrap().remove("cache_sha256");
        let read: Conflict = serde_json::from_value(old).unwrap();
        assert_eq!(read, both(), "a plan saved before the rename still loads");
        let mut neither = json;
        neither.as_object_mut().unwrap().remove("cache_sha256");
        neither.as_object_mut().unwrap().remove("local_sha256");
        assert!(serde_json::from_value::<Conflict>(neither).is_err());
    }

    #[test]
    fn newer_is_refused_on_a_delete_and_named_with_what_it_settles() {
        let m = misfit(ConflictPolicy::Newer, &[both(), deleted()], 0).expect("refused");
        assert_eq!(m.kinds, ["deleted-and-changed"]);
        assert_eq!(m.paths, ["outputs/d"]);
        assert_eq!(m.settles, ["both-changed"]);
        assert_eq!(misfit(ConflictPolicy::Newer, &[both()], 0), None);
        assert_eq!(misfit(ConflictPolicy::Local, &[deleted()], 0), None);
    }

    #[test]
    fn a_policy_on_a_plan_of_layout_conflicts_only_is_refused_not_ignored() {
        let m = misfit(ConflictPolicy::Local, &[layout()], 0).expect("refused");
        assert_eq!(m.kinds, ["different-at-target"]);
        // Beside a conflict it settled, another kind is left to block.
        assert_eq!(misfit(ConflictPolicy::Local, &[layout()], 1), None);
        assert_eq!(misfit(ConflictPolicy::Fail, &[layout()], 0), None);
        assert_eq!(misfit(ConflictPolicy::Remote, &[], 0), None);
    }
}
