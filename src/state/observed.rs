//! Observed state: a snapshot of what the datastore tier holds at each
//! placement the desired state names (path, size, sha256), plus whatever
//! would stand in the way of a move (a plain file where a directory must
//! go, symlinks, special files).
//!
//! Only datastore-tier directories are walked; repo-local files (the
//! catalog and its sidecars, secrets, the reconciler's state) and files
//! matching `exclude` are never part of the snapshot.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Placement;
use crate::layout::{Layout, TierPath, is_repo_local_file};

use super::HashCache;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    pub size: u64,
    pub sha256: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObstacleKind {
    /// A plain file where a directory must be.
    NotADirectory,
    /// A symlink; swamp never follows or moves one.
    Symlink,
    /// A socket, FIFO or device.
    SpecialFile,
    /// A directory where a file must be.
    Directory,
}

impl ObstacleKind {
    pub fn describe(self) -> &'static str {
        match self {
            ObstacleKind::NotADirectory => "a plain file where a directory must be",
            ObstacleKind::Symlink => "a symlink (swamp never follows or moves symlinks)",
            ObstacleKind::SpecialFile => "a special file (socket, FIFO or device)",
            ObstacleKind::Directory => "a directory where a file must be",
        }
    }
}

/// Something at a placement that is not a regular datastore file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obstacle {
    /// Path relative to the placement root ("" is the root itself).
    pub path: String,
    pub kind: ObstacleKind,
}

/// What one placement holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementState {
    pub placement: Placement,
    /// `<root>/<ns>` or `<root>`.
    pub root: PathBuf,
    pub files: BTreeMap<TierPath, FileState>,
    pub obstacles: Vec<Obstacle>,
    /// For a remote source placement: what its bucket still holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<super::RemoteSnapshot>,
}

impl PlacementState {
    /// The obstacle, if any, at `rel` (relative to the placement root).
    pub fn obstacle_at(&self, rel: &str) -> Option<&Obstacle> {
        self.obstacles.iter().find(|o| o.path == rel)
    }
}

/// The snapshot: the target placement first, then each source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    pub placements: Vec<PlacementState>,
    /// The remote listing and sync base, when the target is remote and the
    /// scope syncs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<super::RemoteSnapshot>,
}

#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error("cannot read {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ObserveError + '_ {
    move |source| ObserveError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Observed {
    /// Walks each placement's datastore-tier directories.
    pub fn observe(
        layout: &Layout,
        placements: &[&Placement],
        cache: &mut HashCache,
    ) -> Result<Observed, ObserveError> {
        let placements = placements
            .iter()
            .map(|p| observe_placement(layout, p, cache))
            .collect::<Result<_, _>>()?;
        Ok(Observed {
            placements,
            remote: None,
        })
    }

    pub fn file_count(&self) -> usize {
        self.placements.iter().map(|p| p.files.len()).sum()
    }
}

fn observe_placement(
    layout: &Layout,
    placement: &Placement,
    cache: &mut HashCache,
) -> Result<PlacementState, ObserveError> {
    let root = layout.placement_root(placement);
    let mut state = PlacementState {
        placement: placement.clone(),
        root: root.clone(),
        files: BTreeMap::new(),
        obstacles: Vec::new(),
        remote: None,
    };
    match fs::symlink_metadata(&root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(state),
        Err(e) => return Err(io_err(&root)(e)),
        Ok(m) if !m.is_dir() => {
            state.obstacles.push(Obstacle {
                path: String::new(),
                kind: kind_of(&m),
            });
            return Ok(state);
        }
        Ok(_) => {}
    }
    for &tier in layout.tiers() {
        let dir = layout.tier_dir(placement, tier);
        let meta = match fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_err(&dir)(e)),
            Ok(m) => m,
        };
        if !meta.is_dir() {
            state.obstacles.push(Obstacle {
                path: tier.as_str().to_string(),
                kind: kind_of(&meta),
            });
            continue;
        }
        // Sorted walk so observation order (and any error) is deterministic.
        let walker = walkdir::WalkDir::new(&dir)
            .follow_links(false)
            .min_depth(1)
            .sort_by_file_name();
        for entry in walker {
            let entry = entry.map_err(|e| {
                let path = e
                    .path()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| dir.clone());
                ObserveError::Io {
                    source: e
                        .into_io_error()
                        .unwrap_or_else(|| io::Error::other("walk failed")),
                    path,
                }
            })?;
            let ft = entry.file_type();
            if ft.is_dir() {
                continue;
            }
            let rel_in_tier = entry
                .path()
                .strip_prefix(&dir)
                .expect("walk stays under its root");
            let Some(rel_in_tier) = rel_in_tier.to_str() else {
                // Non-UTF-8 names cannot be datastore keys.
                state.obstacles.push(Obstacle {
                    path: format!("{}/{}", tier.as_str(), rel_in_tier.to_string_lossy()),
                    kind: ObstacleKind::SpecialFile,
                });
                continue;
            };
            let rel = format!("{}/{}", tier.as_str(), rel_in_tier);
            if is_repo_local_file(entry.file_name().to_str().unwrap_or("")) {
                continue;
            }
            if !ft.is_file() {
                let meta = entry.metadata().map_err(|e| ObserveError::Io {
                    path: entry.path().to_path_buf(),
                    source: e
                        .into_io_error()
                        .unwrap_or_else(|| io::Error::other("stat failed")),
                })?;
                state.obstacles.push(Obstacle {
                    path: rel,
                    kind: kind_of(&meta),
                });
                continue;
            }
            let Ok(path) = TierPath::parse(&rel) else {
                state.obstacles.push(Obstacle {
                    path: rel,
                    kind: ObstacleKind::SpecialFile,
                });
                continue;
            };
            if layout.is_excluded(&path) {
                continue;
            }
            let meta = entry.metadata().map_err(|e| ObserveError::Io {
                path: entry.path().to_path_buf(),
                source: e
                    .into_io_error()
                    .unwrap_or_else(|| io::Error::other("stat failed")),
            })?;
            let sha256 = cache
                .sha256(entry.path(), &meta)
                .map_err(io_err(entry.path()))?;
            state.files.insert(
                path,
                FileState {
                    size: meta.len(),
                    sha256,
                },
            );
        }
    }
    state.obstacles.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(state)
}

fn kind_of(meta: &fs::Metadata) -> ObstacleKind {
    let ft = meta.file_type();
    if ft.is_symlink() {
        ObstacleKind::Symlink
    } else if ft.is_file() {
        ObstacleKind::NotADirectory
    } else {
        ObstacleKind::SpecialFile
    }
}

/// A datastore file (not repo-local, not excluded) under a placement's tier
/// directories, if there is one. Cheaper than observing: nothing is hashed.
pub fn first_datastore_file(layout: &Layout, placement: &Placement) -> Option<PathBuf> {
    let root = layout.placement_root(placement);
    for &tier in layout.tiers() {
        let dir = layout.tier_dir(placement, tier);
        for entry in walkdir::WalkDir::new(&dir)
            .follow_links(false)
            .into_iter()
            .flatten()
        {
            if entry.file_type().is_dir()
                || is_repo_local_file(entry.file_name().to_str().unwrap_or(""))
            {
                continue;
            }
            let excluded = entry
                .path()
                .strip_prefix(&root)
                .ok()
                .and_then(Path::to_str)
                .and_then(|r| TierPath::parse(r).ok())
                .is_some_and(|tp| layout.is_excluded(&tp));
            if !excluded {
                return Some(entry.path().to_path_buf());
            }
        }
    }
    None
}
