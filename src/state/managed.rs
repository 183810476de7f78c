//! Managed config (`swamp datastore config migrate`): the repository's
//! definition directories (`models/`, `workflows/`, `vaults/`) mirrored into
//! the datastore tier `config/`, and the sentinel
//! [`MANAGED_CONFIG_SENTINEL`] that says the remote holds them.
//!
//! Owns: what the mirror should hold (read from the repository: part of
//! the observation), the sentinel's body and what the remote's sentinel
//! said. The plan actions that produce both are [`crate::plan::managed`]'s.
//! The sentinel is judged from the remote only (never the cache), planned
//! after every object it vouches for, and published by apply in a phase of
//! its own, after each of those objects was verified in the remote.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::layout::{MANAGED_CONFIG_SENTINEL, Tier, TierPath};
use crate::state::FileState;

/// The repository directories a managed-config migration mirrors, in the
/// order the sentinel lists them.
pub(crate) const DEFINITION_DIRS: [&str; 3] = ["models", "workflows", "vaults"];

/// The sentinel's tier path.
pub(crate) fn sentinel_path() -> TierPath {
    TierPath::parse(MANAGED_CONFIG_SENTINEL).expect("the sentinel path is a tier path")
}

/// The repository file a `config/` tier path mirrors (`config/models/a.yaml`
/// → `<repo>/models/a.yaml`), if it is one of the definition directories.
pub(crate) fn repo_file(repo: &Path, path: &TierPath) -> Option<PathBuf> {
    if path.tier() != Tier::Config {
        return None;
    }
    let mut segs = path.rest_segments();
    let dir = segs.next()?;
    if !DEFINITION_DIRS.contains(&dir) {
        return None;
    }
    let mut p = repo.join(dir);
    let mut any = false;
    for s in segs {
        p.push(s);
        any = true;
    }
    any.then_some(p)
}

#[derive(Debug, thiserror::Error)]
pub enum ManagedError {
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} is {what}; managed config mirrors regular files only. Replace or remove it; nothing was changed",
        .path.display()
    )]
    Unsupported { path: PathBuf, what: &'static str },
    #[error("the managed-config sentinel {key} is not valid JSON ({message})")]
    Malformed { key: String, message: String },
}

/// What the `config/` tier should hold: each definition file by tier path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mirror {
    /// The definition directories that exist, in [`DEFINITION_DIRS`] order.
    pub sources: Vec<String>,
    pub files: BTreeMap<TierPath, FileState>,
}

impl Mirror {
    /// Reads the definition directories of `repo` (symlinks and special
    /// files are refused rather than followed).
    pub fn read(repo: &Path) -> Result<Mirror, ManagedError> {
        let mut mirror = Mirror::default();
        for dir in DEFINITION_DIRS {
            let root = repo.join(dir);
            match std::fs::symlink_metadata(&root) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => return Err(ManagedError::Io { path: root, source }),
                Ok(m) if m.is_dir() => {}
                Ok(m) => {
                    return Err(ManagedError::Unsupported {
                        path: root,
                        what: if m.file_type().is_symlink() {
                            "a symlink"
                        } else {
                            "not a directory"
                        },
                    });
                }
            }
            mirror.sources.push(dir.to_string());
            for entry in walkdir::WalkDir::new(&root)
                .follow_links(false)
                .min_depth(1)
                .sort_by_file_name()
            {
                let entry = entry.map_err(|e| ManagedError::Io {
                    path: e.path().map_or_else(|| root.clone(), Path::to_path_buf),
                    source: e
                        .into_io_error()
                        .unwrap_or_else(|| std::io::Error::other("walk failed")),
                })?;
                let ft = entry.file_type();
                if ft.is_dir() {
                    continue;
                }
                let unsupported = |what| ManagedError::Unsupported {
                    path: entry.path().to_path_buf(),
                    what,
                };
                if ft.is_symlink() {
                    return Err(unsupported("a symlink"));
                }
                if !ft.is_file() {
                    return Err(unsupported("a special file"));
                }
                let rel = entry
                    .path()
                    .strip_prefix(repo)
                    .expect("walk stays under the repository")
                    .to_str()
                    .ok_or_else(|| unsupported("not named in UTF-8"))?;
                let path = TierPath::parse(&format!("config/{rel}"))
                    .map_err(|_| unsupported("not a valid datastore path"))?;
                let io = |source| ManagedError::Io {
                    path: entry.path().to_path_buf(),
                    source,
                };
                let meta = entry.metadata().map_err(|e| {
                    io(e.into_io_error()
                        .unwrap_or_else(|| std::io::Error::other("stat failed")))
                })?;
                let sha256 = crate::digest::Sha256(
                    crate::fsutil::sha256_file_raw(entry.path()).map_err(io)?,
                );
                mirror.files.insert(
                    path,
                    FileState {
                        size: meta.len(),
                        sha256,
                    },
                );
            }
        }
        Ok(mirror)
    }

    /// The sentinel this mirror publishes (`migrated_at` filled at apply).
    pub fn sentinel(&self, migrated_at: &str) -> Sentinel {
        Sentinel {
            migrated_at: migrated_at.to_string(),
            sources: self.sources.clone(),
            objects: self
                .files
                .iter()
                .map(|(p, f)| (p.clone(), f.sha256.hex()))
                .collect(),
        }
    }
}

/// `config/managed-config-migrated.json`: when, from which directories, and
/// exactly which objects (with their sha256) the datastore holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sentinel {
    pub migrated_at: String,
    pub sources: Vec<String>,
    #[serde(default)]
    pub objects: BTreeMap<TierPath, String>,
}

impl Sentinel {
    pub fn parse(key: &str, bytes: &[u8]) -> Result<Sentinel, ManagedError> {
        serde_json::from_slice(bytes).map_err(|e| ManagedError::Malformed {
            key: key.to_string(),
            message: e.to_string(),
        })
    }

    /// The body as published: pretty JSON, keys in a fixed order.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut body = serde_json::to_vec_pretty(self).expect("the sentinel serialises");
        body.push(b'\n');
        body
    }

    /// Same content (when it was published does not matter).
    pub fn vouches_same(&self, sources: &[String], objects: &BTreeMap<TierPath, String>) -> bool {
        self.sources == sources && &self.objects == objects
    }
}

/// What the remote's sentinel said when the plan was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum RemoteSentinel {
    Absent,
    /// Present; its body as text (shown in conflicts) and parsed (`None`
    /// when it is not a sentinel this version understands).
    Present {
        body: String,
        parsed: Option<Sentinel>,
    },
}

/// The `config/` part of the cache as the scope sees it (the sentinel is
/// remote-owned and never part of what a cache offers).
pub(crate) fn config_only<V: Clone>(files: &BTreeMap<TierPath, V>) -> BTreeMap<TierPath, V> {
    let sentinel = sentinel_path();
    files
        .iter()
        .filter(|(p, _)| p.tier() == Tier::Config && **p != sentinel)
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_files_map_only_from_definition_dirs() {
        let repo = Path::new("/r");
        let p = |s: &str| TierPath::parse(s).unwrap();
        assert_eq!(
            repo_file(repo, &p("config/models/a/b.yaml")),
            Some(PathBuf::from("/r/models/a/b.yaml"))
        );
        assert_eq!(repo_file(repo, &p("config/other/x")), None);
        assert_eq!(repo_file(repo, &p("config/models")), None);
        assert_eq!(repo_file(repo, &p("data/models/x")), None);
    }

    #[test]
    fn sentinel_body_has_a_fixed_key_order() {
        let mut objects = BTreeMap::new();
        objects.insert(
            TierPath::parse("config/models/a.yaml").unwrap(),
            "ab".into(),
        );
        let s = Sentinel {
            migrated_at: "2026-01-01T00:00:00Z".into(),
            sources: vec!["models".into()],
            objects,
        };
        let text = String::from_utf8(s.to_bytes()).unwrap();
        let a = text.find("migratedAt").unwrap();
        let b = text.find("sources").unwrap();
        let c = text.find("objects").unwrap();
        assert!(a < b && b < c, "{text}");
        assert_eq!(Sentinel::parse("k", text.as_bytes()).unwrap(), s);
    }
}
