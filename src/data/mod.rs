//! The data workload behind `swamp data put/get/list/rm/gc`: versioned
//! blobs under a placement's tier `data/NAME/VERSION/raw`.
//!
//! The files are the truth; writes go to disk first and then to the
//! [`Catalog`], and reads go through the catalog (which rebuilds itself
//! when stale). Names follow [`crate::catalog::name`]. Writing a version
//! lives in `put`.
//!
//! While a layout change is pending (`namespace set`, `setup` not yet
//! applied), reads also see each version wherever the change left it: at
//! the target or, failing that, at a recorded source (`pending`). New
//! versions go to the target, numbered after every version in any of them.
//!
//! No path is ever followed through a symlink below the datastore root:
//! every path is checked component by component before it is written,
//! read or removed.

mod pending;
mod put;
pub(crate) mod remote_only;

use std::io;
use std::path::{Path, PathBuf};

use crate::catalog::name::{NameError, RAW_FILE, check_name};
use crate::catalog::{Catalog, CatalogError, Entry, NameSummary};
use crate::config::Placement;
use crate::fsutil;
use crate::journal;
use crate::layout::{Layout, Tier, TierPath, TierPathError};

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("invalid data name `{name}`: {reason}")]
    InvalidName { name: String, reason: NameError },
    #[error("no data named `{name}`")]
    NotFound { name: String },
    #[error("`{name}` has no version {version} (latest is {latest})")]
    VersionNotFound {
        name: String,
        version: u64,
        latest: u64,
    },
    #[error("keeping 0 versions would delete every version")]
    InvalidKeep,
    #[error("`{name}` has used up its version numbers")]
    VersionsExhausted { name: String },
    #[error("cannot read the content for `{name}`: {source}; nothing was stored")]
    Input { name: String, source: io::Error },
    #[error("cannot {action} {}: {source}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error(
        "{} is a symlink; swamp never follows symlinks in the datastore",
        .path.display()
    )]
    Symlink { path: PathBuf },
    #[error(
        "{} is not a regular file",
        .path.display()
    )]
    NotAFile { path: PathBuf },
    /// The version is in the remote only (lazy hydration): fetch it, then
    /// read again.
    #[error("`{name}` version {version} is in the remote only and was not fetched")]
    NotHydrated {
        name: String,
        version: u64,
        path: TierPath,
    },
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Undo(#[from] crate::journal::UndoError),
    /// Unreachable for checked names; kept typed rather than panicking.
    #[error(transparent)]
    Path(#[from] TierPathError),
}

impl DataError {
    fn io(action: &'static str, path: &Path, source: io::Error) -> DataError {
        DataError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The data of one placement (and, while a layout change is pending, of
/// the placements it moves data from).
pub(crate) struct DataStore<'a> {
    layout: &'a Layout,
    placement: Placement,
    /// Where a pending layout change still has data (`migrating_from`).
    sources: Vec<Placement>,
    /// Versions only the remote holds (lazy hydration), by name then version.
    remote_only: Vec<remote_only::RemoteVersion>,
}

impl<'a> DataStore<'a> {
    pub(crate) fn new(layout: &'a Layout, placement: Placement) -> Self {
        DataStore {
            layout,
            placement,
            sources: Vec::new(),
            remote_only: Vec::new(),
        }
    }

    /// Versions the remote holds that the cache has not fetched (see
    /// [`remote_only::versions`]): listed, numbered after, and answered by
    /// `get` as [`DataError::NotHydrated`].
    pub(crate) fn with_remote_only(mut self, versions: Vec<remote_only::RemoteVersion>) -> Self {
        self.remote_only = versions;
        self
    }

    /// Reads also look at these placements (a pending layout change's
    /// sources); the target always wins for the same version.
    pub(crate) fn with_sources(mut self, sources: Vec<Placement>) -> Self {
        let target_dir = self.data_dir();
        self.sources = sources
            .into_iter()
            .filter(|p| self.layout.tier_dir(p, Tier::Data) != target_dir)
            .collect();
        self
    }

    /// A version (the latest when `version` is `None`) and its `raw` file.
    pub(crate) fn get(
        &self,
        name: &str,
        version: Option<u64>,
    ) -> Result<(Entry, PathBuf), DataError> {
        check(name)?;
        let local = self.get_local(name, version);
        if self.remote_only.is_empty() {
            return local;
        }
        self.unless_remote_only(name, version, local)
    }

    /// `get` among the versions this machine holds.
    fn get_local(&self, name: &str, version: Option<u64>) -> Result<(Entry, PathBuf), DataError> {
        let at_target = self.get_at_target(name, version);
        if self.sources.is_empty() {
            return at_target;
        }
        let pending = pending::versions(self, name)?;
        let pick = |pending: &[(Entry, PathBuf)]| match version {
            Some(v) => pending.iter().find(|(e, _)| e.version == v).cloned(),
            None => pending.iter().max_by_key(|(e, _)| e.version).cloned(),
        };
        match at_target {
            // The target's own copy, unless a source still holds a newer one.
            Ok((entry, path))
                if version.is_some() || pending.iter().all(|(e, _)| e.version <= entry.version) =>
            {
                Ok((entry, path))
            }
            Ok(found) => Ok(pick(&pending).unwrap_or(found)),
            Err(DataError::NotFound { .. } | DataError::VersionNotFound { .. })
                if pick(&pending).is_some() =>
            {
                Ok(pick(&pending).expect("checked"))
            }
            Err(DataError::NotFound { .. }) | Err(DataError::VersionNotFound { .. }) => {
                let latest = self
                    .get_at_target(name, None)
                    .ok()
                    .map(|(e, _)| e.version)
                    .into_iter()
                    .chain(pending.iter().map(|(e, _)| e.version))
                    .max();
                Err(match (version, latest) {
                    (Some(version), Some(latest)) => DataError::VersionNotFound {
                        name: name.into(),
                        version,
                        latest,
                    },
                    _ => DataError::NotFound { name: name.into() },
                })
            }
            Err(e) => Err(e),
        }
    }

    fn get_at_target(
        &self,
        name: &str,
        version: Option<u64>,
    ) -> Result<(Entry, PathBuf), DataError> {
        let entry = self.lookup(&Catalog::open(self.layout, &self.placement)?, name, version)?;
        let path = self.raw_path(name, entry.version)?;
        self.guard(&path)?;
        if path.exists() {
            return self.regular(entry, path);
        }
        // Removed behind the catalog's back: re-index once and look again.
        Catalog::rebuild(self.layout, &self.placement)?;
        let entry = self.lookup(&Catalog::open(self.layout, &self.placement)?, name, version)?;
        let path = self.raw_path(name, entry.version)?;
        self.guard(&path)?;
        self.regular(entry, path)
    }

    /// `path` must be a regular file (never a link to one).
    fn regular(&self, entry: Entry, path: PathBuf) -> Result<(Entry, PathBuf), DataError> {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_file() => Ok((entry, path)),
            Ok(m) if m.file_type().is_symlink() => Err(DataError::Symlink { path }),
            Ok(_) => Err(DataError::NotAFile { path }),
            Err(e) => Err(DataError::io("read", &path, e)),
        }
    }

    /// Every name with its latest version, sorted by name.
    pub(crate) fn list(&self) -> Result<Vec<NameSummary>, DataError> {
        let catalog = Catalog::open(self.layout, &self.placement)?;
        if self.sources.is_empty() && self.remote_only.is_empty() {
            return Ok(catalog.list()?);
        }
        let mut elsewhere = pending::all(self)?;
        elsewhere.extend(self.remote_only_entries());
        Ok(pending::merge(catalog.entries()?, elsewhere))
    }

    /// Refuses `path` if a component of it below the datastore root is a
    /// symlink.
    fn guard(&self, path: &Path) -> Result<(), DataError> {
        match self.link_in(&self.placement, path)? {
            None => Ok(()),
            Some(link) => Err(DataError::Symlink { path: link }),
        }
    }

    /// The first symlink among `path`'s components below `placement`'s
    /// datastore root, if any.
    fn link_in(&self, placement: &Placement, path: &Path) -> Result<Option<PathBuf>, DataError> {
        let root = self.layout.link_check_root(placement, path);
        fsutil::symlink_below(&root, path).map_err(|e| DataError::io("inspect", path, e))
    }

    /// Sets aside every version of exactly `name` (not nested names like
    /// `name/sub`) into the trash of a new apply journaled as `command`,
    /// then removes the directories that emptied, up to the data dir.
    /// Returns the versions and the apply id (`swamp undo ID` restores them).
    pub(crate) fn rm(&self, name: &str, command: &str) -> Result<(Vec<Entry>, String), DataError> {
        check(name)?;
        let mut catalog = Catalog::open(self.layout, &self.placement)?;
        let versions = catalog.versions(name)?;
        if versions.is_empty() {
            return Err(DataError::NotFound { name: name.into() });
        }
        let summary = format!("removed {name}: {} version(s)", versions.len());
        let id = self.set_aside_versions(&mut catalog, &versions, command, summary)?;
        fsutil::remove_empty_dirs(&self.name_dir(name)?, &self.data_dir());
        Ok((versions, id))
    }

    /// Journals `versions` as one apply, then sets each aside; the journal
    /// is written before the first file moves, and marked finished after
    /// the last.
    fn set_aside_versions(
        &self,
        catalog: &mut Catalog,
        versions: &[Entry],
        command: &str,
        summary: String,
    ) -> Result<String, DataError> {
        let placement = std::sync::Arc::new(self.placement.clone());
        let entries = versions
            .iter()
            .map(|e| {
                Ok(journal::Entry {
                    op: journal::Op::SetAside,
                    placement: std::sync::Arc::clone(&placement),
                    path: TierPath::parse(&raw_tier_path(&e.name, e.version))?,
                    sha256: e.sha256.clone(),
                    size: e.size,
                    written: None,
                    from: None,
                })
            })
            .collect::<Result<Vec<_>, DataError>>()?;
        let mut journal = journal::Journal::begin(self.layout, command, summary, entries);
        journal.save(self.layout)?;
        for (entry, rec) in versions.iter().zip(&journal.entries) {
            self.delete_version(catalog, entry, &journal.id, &rec.path)?;
        }
        journal.finished = true;
        journal.save(self.layout)?;
        Ok(journal.id)
    }

    /// Keeps the newest `keep` versions of each name and sets the rest
    /// aside (or, with `dry_run`, only reports them). Returns what was (or
    /// would be) removed, by name then version, and the apply id.
    pub(crate) fn gc(
        &self,
        keep: usize,
        dry_run: bool,
        command: &str,
    ) -> Result<(Vec<Entry>, Option<String>), DataError> {
        if keep == 0 {
            return Err(DataError::InvalidKeep);
        }
        let mut catalog = Catalog::open(self.layout, &self.placement)?;
        let all = catalog.entries()?;
        let doomed: Vec<Entry> = all
            .chunk_by(|a, b| a.name == b.name)
            .flat_map(|versions| &versions[..versions.len().saturating_sub(keep)])
            .cloned()
            .collect();
        if !dry_run && !doomed.is_empty() {
            let summary = format!("gc --keep {keep}: removed {} version(s)", doomed.len());
            let id = self.set_aside_versions(&mut catalog, &doomed, command, summary)?;
            return Ok((doomed, Some(id)));
        }
        Ok((doomed, None))
    }

    fn lookup(
        &self,
        catalog: &Catalog,
        name: &str,
        version: Option<u64>,
    ) -> Result<Entry, DataError> {
        let not_found = || DataError::NotFound { name: name.into() };
        let Some(version) = version else {
            return catalog.latest(name)?.ok_or_else(not_found);
        };
        if let Some(entry) = catalog.entry(name, version)? {
            return Ok(entry);
        }
        match catalog.latest(name)? {
            Some(latest) => Err(DataError::VersionNotFound {
                name: name.into(),
                version,
                latest: latest.version,
            }),
            None => Err(not_found()),
        }
    }

    /// Sets a version's file aside into apply `id`'s trash, removes its
    /// emptied directory, then its catalog row.
    fn delete_version(
        &self,
        catalog: &mut Catalog,
        entry: &Entry,
        id: &str,
        path: &TierPath,
    ) -> Result<(), DataError> {
        let dir = self.version_dir(&entry.name, entry.version)?;
        self.guard(&dir)?;
        journal::set_aside(self.layout, id, &self.placement, path)?;
        match std::fs::remove_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(DataError::io("remove", &dir, e)),
        }
        record(catalog, self.layout, |c| {
            c.remove_version(&entry.name, entry.version)
        })
    }

    fn data_dir(&self) -> PathBuf {
        self.layout.tier_dir(&self.placement, Tier::Data)
    }

    fn tier_file(&self, path: &str) -> Result<PathBuf, DataError> {
        Ok(self
            .layout
            .file_path(&self.placement, &TierPath::parse(path)?))
    }

    fn name_dir(&self, name: &str) -> Result<PathBuf, DataError> {
        self.tier_file(&format!("data/{name}"))
    }

    fn version_dir(&self, name: &str, version: u64) -> Result<PathBuf, DataError> {
        self.tier_file(&format!("data/{name}/{version}"))
    }

    fn raw_path(&self, name: &str, version: u64) -> Result<PathBuf, DataError> {
        self.tier_file(&raw_tier_path(name, version))
    }
}

fn check(name: &str) -> Result<(), DataError> {
    check_name(name).map_err(|reason| DataError::InvalidName {
        name: name.into(),
        reason,
    })
}

fn raw_tier_path(name: &str, version: u64) -> String {
    format!("data/{name}/{version}/{RAW_FILE}")
}

/// Applies a catalog change after the files changed. If it fails, the
/// catalog no longer matches the files, so it is invalidated (best effort)
/// for the next open to rebuild.
fn record(
    catalog: &mut Catalog,
    layout: &Layout,
    change: impl FnOnce(&mut Catalog) -> Result<(), CatalogError>,
) -> Result<(), DataError> {
    change(catalog).map_err(|e| {
        let _ = Catalog::invalidate(layout);
        DataError::Catalog(e)
    })
}

#[cfg(test)]
mod tests;
