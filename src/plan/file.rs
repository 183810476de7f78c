//! The plan document: what `--json` prints and what `plan -o FILE` saves.
//! A saved plan also carries the observed snapshot it was computed from,
//! so `apply FILE` can say exactly what changed when it refuses it.

use crate::plan::action::{
    CopyRemote, DeleteSourceRemote, DropDuplicate, Fetch, Move, RelocateTrash, RemoveTemp,
};
use crate::plan::conflict::{DifferentAtTarget, SourceDiverged, Unsupported};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::fsutil;
use crate::state::{Desired, Observed};

use super::{FORMAT_VERSION, Fingerprint, Plan, Summary};

#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    #[error("cannot read plan file {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a swamp plan file: {message}", .path.display())]
    Malformed { path: PathBuf, message: String },
    #[error(
        "{} has plan format {found}; this swamp reads format {FORMAT_VERSION}",
        .path.display()
    )]
    Version { path: PathBuf, found: u64 },
    #[error("cannot write plan file {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A saved undo plan (`swamp undo [ID] -o FILE`): `swamp apply FILE`
/// plans the same undo again and applies it only if the plans are equal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SavedUndo {
    pub format_version: u32,
    /// Always `undo`: what tells the two kinds of plan file apart.
    pub kind: String,
    pub repo_id: Uuid,
    pub undo: super::undo::UndoPlan,
}

impl SavedUndo {
    pub(crate) fn new(repo_id: Uuid, undo: super::undo::UndoPlan) -> SavedUndo {
        SavedUndo {
            format_version: FORMAT_VERSION,
            kind: "undo".into(),
            repo_id,
            undo,
        }
    }

    pub(crate) fn save(&self, path: &Path) -> Result<(), PlanFileError> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("an undo plan serialises");
        bytes.push(b'\n');
        fsutil::atomic_write(path, &bytes).map_err(|source| PlanFileError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// What a plan file holds.
#[derive(Debug)]
pub(crate) enum Loaded {
    Plan(Box<SavedPlan>),
    Undo(Box<SavedUndo>),
}

/// Reads a plan file of either kind, checking its format version first.
pub(crate) fn load_any(path: &Path) -> Result<Loaded, PlanFileError> {
    let bytes = read_capped(path)?;
    let malformed = |message: String| PlanFileError::Malformed {
        path: path.to_path_buf(),
        message,
    };
    // The two fields that say what the file is, first; the file is then
    // read straight into its type (a `serde_json::Value` of a 100,000-file
    // plan's file is several times the file's size).
    #[derive(serde::Deserialize)]
    struct Head {
        #[serde(default)]
        format_version: Option<serde_json::Value>,
        #[serde(default)]
        kind: Option<serde_json::Value>,
    }
    let head: Head = serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))?;
    match head.format_version.as_ref().and_then(|v| v.as_u64()) {
        Some(v) if v == u64::from(FORMAT_VERSION) => {}
        Some(found) => {
            return Err(PlanFileError::Version {
                path: path.to_path_buf(),
                found,
            });
        }
        None => return Err(malformed("no `format_version`".into())),
    }
    if head.kind.as_ref().and_then(|k| k.as_str()) == Some("undo") {
        let saved: SavedUndo =
            serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))?;
        return Ok(Loaded::Undo(Box::new(saved)));
    }
    Ok(Loaded::Plan(Box::new(SavedPlan::from_slice(path, &bytes)?)))
}

/// The largest plan file read (a plan of a million actions is a few
/// hundred MiB); anything larger is refused, not read without limit.
pub(crate) const MAX_PLAN_FILE_BYTES: u64 = 1 << 30;

/// A plan file's bytes: only a regular file (never a FIFO, which would hang
/// the read, or a device such as `/dev/zero`), at most
/// [`MAX_PLAN_FILE_BYTES`].
fn read_capped(path: &Path) -> Result<Vec<u8>, PlanFileError> {
    use std::io::Read;
    let read_err = |source| PlanFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let not_a_plan = |message: &str| PlanFileError::Malformed {
        path: path.to_path_buf(),
        message: message.to_string(),
    };
    let meta = std::fs::metadata(path).map_err(read_err)?;
    if !meta.is_file() {
        return Err(not_a_plan(
            "it is not a regular file (a plan file is what `swamp plan -o FILE` wrote)",
        ));
    }
    if meta.len() > MAX_PLAN_FILE_BYTES {
        return Err(not_a_plan(
            "it is larger than any plan swamp writes (1 GiB)",
        ));
    }
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_PLAN_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_PLAN_FILE_BYTES {
        return Err(not_a_plan(
            "it is larger than any plan swamp writes (1 GiB)",
        ));
    }
    Ok(bytes)
}

/// The plan as a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedPlan {
    pub format_version: u32,
    pub repo_id: Uuid,
    /// Fingerprint of the desired and observed state the plan came from.
    pub fingerprint: Fingerprint,
    pub summary: Summary,
    #[serde(flatten)]
    pub plan: Plan,
    /// The lock this plan was made under: information only. Staleness is
    /// judged from the observed state, never from the lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<LockInfo>,
    /// Present in saved files only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Observed>,
}

/// A [`SavedPlan`] without its observed snapshot, borrowed: the `--json`
/// document (same fields, same order).
#[derive(Debug, Serialize)]
pub struct PlanDoc<'a> {
    format_version: u32,
    repo_id: &'a Uuid,
    fingerprint: &'a Fingerprint,
    summary: &'a Summary,
    #[serde(flatten)]
    plan: &'a Plan,
    #[serde(skip_serializing_if = "Option::is_none")]
    lock: Option<&'a LockInfo>,
}

/// Which lock object (and which version of it) a plan was made under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    pub url: String,
    /// The lock object's version (etag, generation) when planning ended.
    pub version: String,
    /// The lock body's random id.
    pub id: String,
}

impl SavedPlan {
    pub fn new(repo_id: Uuid, plan: Plan, desired: &Desired, observed: Observed) -> SavedPlan {
        SavedPlan {
            format_version: FORMAT_VERSION,
            repo_id,
            fingerprint: Fingerprint::of(desired, &observed),
            summary: plan.summary(),
            plan,
            lock: None,
            observed: Some(observed),
        }
    }

    /// The desired state the plan was computed for.
    pub fn desired(&self) -> Desired {
        Desired {
            scope: self.plan.scope,
            target: self.plan.target.placement(),
            sources: self.plan.sources.iter().map(|s| s.placement()).collect(),
        }
    }

    /// The JSON that `--json` prints (without the observed snapshot).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self.doc()).expect("plan serialises")
    }

    /// What `--json` prints, as a view to serialize straight to the output:
    /// a 100,000-action plan as a `serde_json::Value` tree is hundreds of
    /// megabytes.
    pub fn doc(&self) -> PlanDoc<'_> {
        PlanDoc {
            format_version: self.format_version,
            repo_id: &self.repo_id,
            fingerprint: &self.fingerprint,
            summary: &self.summary,
            plan: &self.plan,
            lock: self.lock.as_ref(),
        }
    }

    pub fn save(&self, path: &Path) -> Result<(), PlanFileError> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("plan serialises");
        bytes.push(b'\n');
        fsutil::atomic_write(path, &bytes).map_err(|source| PlanFileError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    pub fn load(path: &Path) -> Result<SavedPlan, PlanFileError> {
        match load_any(path)? {
            Loaded::Plan(saved) => Ok(*saved),
            Loaded::Undo(_) => Err(PlanFileError::Malformed {
                path: path.to_path_buf(),
                message: "it is an undo plan (`swamp undo -o`); `swamp apply FILE` applies it"
                    .into(),
            }),
        }
    }

    fn from_slice(path: &Path, bytes: &[u8]) -> Result<SavedPlan, PlanFileError> {
        let malformed = |message: String| PlanFileError::Malformed {
            path: path.to_path_buf(),
            message,
        };
        let saved: SavedPlan =
            serde_json::from_slice(bytes).map_err(|e| malformed(e.to_string()))?;
        if saved.observed.is_none() {
            return Err(malformed(
                "it has no observed state (was it printed with --json instead of saved with `plan -o`?)"
                    .into(),
            ));
        }
        saved.validate().map_err(malformed)?;
        Ok(saved)
    }

    /// Internal consistency a hand-edited file could break.
    fn validate(&self) -> Result<(), String> {
        use super::{Action, Conflict};
        let n = self.plan.sources.len();
        for a in &self.plan.actions {
            if let Action::RemovePartial(super::action::RemovePartial { name, .. }) = a
                && !crate::store::resume::is_partial_name(name)
            {
                return Err(format!("{name:?} is not a partial download's name"));
            }
            let source = match a {
                Action::Move(Move { source, .. })
                | Action::DropDuplicate(DropDuplicate { source, .. })
                | Action::Fetch(Fetch { source, .. })
                | Action::CopyRemote(CopyRemote { source, .. })
                | Action::DeleteSourceRemote(DeleteSourceRemote { source, .. })
                | Action::RemoveTemp(RemoveTemp {
                    source: Some(source),
                    ..
                })
                | Action::RelocateTrash(RelocateTrash {
                    source: Some(source),
                    ..
                }) => Some(*source),
                _ => None,
            };
            if let Some(source) = source
                && source >= n
            {
                return Err(format!(
                    "an action names source {source}, but the plan has {n}"
                ));
            }
        }
        for c in &self.plan.conflicts {
            if let Conflict::DifferentAtTarget(DifferentAtTarget { source, .. })
            | Conflict::SourceDiverged(SourceDiverged { source, .. })
            | Conflict::Unsupported(Unsupported { source, .. }) = c
                && *source >= n
            {
                return Err(format!(
                    "a conflict names source {source}, but the plan has {n}"
                ));
            }
        }
        if self.summary != self.plan.summary() {
            return Err("its summary does not match its actions".into());
        }
        Ok(())
    }
}
