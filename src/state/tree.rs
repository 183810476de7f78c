//! The tier tree on this machine: a snapshot of what the datastore tier
//! holds at each placement the desired state names (the [`Observed`]
//! state's local part), with every entry typed:
//!
//! - a regular file (path, size, sha256): the only kind that is data;
//! - a symlink (never followed), a special file (FIFO, socket, device), a
//!   directory that holds no data file (it is in the way wherever a file
//!   must go), or a plain file where a directory must be: [`Obstacle`]s,
//!   which the diff turns into conflicts wherever a file is expected;
//! - a swamp temp file ([`TempFile`]): never data; a stale one is removed
//!   by a planned `remove-temp` action;
//! - a repo-local file (the catalog at `data/_catalog.db` and its sidecars)
//!   and files matching `exclude`: never part of the snapshot.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::config::Placement;
use crate::layout::{KnownPaths, Layout, TierPath, is_repo_local_path, is_swamp_temp};

use super::dir_listings::{DirListings, epoch_ns};
use super::stamp::Stamp;
use super::walk::{Seen, Stat, WalkEntry, WalkError, Walked, Walker};
use super::{FileState, HashCache};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObstacleKind {
    /// A plain file where a directory must be.
    NotADirectory,
    /// A symlink; swamp never follows or moves one.
    Symlink,
    /// A socket, FIFO or device.
    SpecialFile,
    /// A directory where a file must be (observed: a directory that holds
    /// no datastore file; one that does is seen through its files).
    Directory,
    /// A file whose name no datastore key can hold (not UTF-8, or with a
    /// backslash): never synced.
    BadName,
}

impl ObstacleKind {
    /// What it is, in a few words.
    pub fn noun(self) -> &'static str {
        match self {
            ObstacleKind::NotADirectory => "a plain file",
            ObstacleKind::Symlink => "a symlink",
            ObstacleKind::SpecialFile => "a special file (FIFO, socket or device)",
            ObstacleKind::Directory => "a directory",
            ObstacleKind::BadName => "a file whose name no key can hold",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            ObstacleKind::NotADirectory => "a plain file where a directory must be",
            ObstacleKind::Symlink => "a symlink (swamp never follows or moves symlinks)",
            ObstacleKind::SpecialFile => "a special file (socket, FIFO or device)",
            ObstacleKind::Directory => "a directory where a file must be",
            ObstacleKind::BadName => {
                "a file whose name no datastore key can hold (not UTF-8, or with a backslash)"
            }
        }
    }
}

/// Something at a placement that is not a regular datastore file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Obstacle {
    /// Path relative to the placement root ("" is the root itself).
    pub path: String,
    pub kind: ObstacleKind,
    /// For a symlink: where it points (never followed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

impl Obstacle {
    pub fn new(path: impl Into<String>, kind: ObstacleKind) -> Obstacle {
        Obstacle {
            path: path.into(),
            kind,
            link: None,
        }
    }
}

/// A swamp temp file (`.swamp-tmp-…`) left in a tier: never data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TempFile {
    /// Relative to the placement root.
    pub path: TierPath,
    pub size: u64,
    /// Older than the lock's TTL when observed: no live writer of ours
    /// still owns it (every writer finishes or renews within that time).
    pub stale: bool,
}

/// One earlier apply's set-aside files where swamp before 0.2 kept them
/// in a remote's cache: `<cache>/<ns>/.swamp-trash/<id>/`, inside the tier
/// tree that should mirror the bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyTrash {
    pub id: String,
    pub files: usize,
    pub bytes: u64,
}

/// What one placement holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementState {
    pub placement: Placement,
    /// `<root>/<ns>` or `<root>`, on this machine. Not serialised: a plan's
    /// fingerprint (and a saved plan's snapshot) name it by `label`, the
    /// same on every machine.
    #[serde(skip)]
    pub root: PathBuf,
    /// `root` as plans name it on any machine ([`Layout::root_label`]).
    ///
    /// [`Layout::root_label`]: crate::layout::Layout::root_label
    #[serde(default)]
    pub label: String,
    /// Shared by placements with one cache (a bucket move's target and
    /// source): a million files held once more were 58 MB.
    pub files: std::sync::Arc<BTreeMap<TierPath, FileState>>,
    pub obstacles: Vec<Obstacle>,
    /// Swamp temp files found in the tier directories.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub temps: Vec<TempFile>,
    /// For a remote source placement: what its bucket still holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<super::RemoteSnapshot>,
    /// A remote's cache: trash to move out of the tier tree, per apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub legacy_trash: Vec<LegacyTrash>,
}

impl PlacementState {
    /// An empty placement (nothing observed yet).
    pub fn empty(placement: Placement, root: PathBuf, label: String) -> PlacementState {
        PlacementState {
            placement,
            root,
            label,
            files: Default::default(),
            obstacles: Vec::new(),
            temps: Vec::new(),
            remote: None,
            legacy_trash: Vec::new(),
        }
    }

    /// The obstacle, if any, at `rel` (relative to the placement root).
    pub fn obstacle_at(&self, rel: &str) -> Option<&Obstacle> {
        self.obstacles
            .binary_search_by(|o| o.path.as_str().cmp(rel))
            .ok()
            .map(|i| &self.obstacles[i])
    }
}

/// The observation a plan is composed from (see [`super::observe`]): the
/// target placement first, then each source, and everything else planning
/// reads. Its fingerprint is what makes a saved plan's origin checkable.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Observed {
    pub placements: Vec<PlacementState>,
    /// The remote listing and sync base, when the target is remote and the
    /// scope syncs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<super::RemoteSnapshot>,
    /// What the managed-config mirror should hold, for the scopes that act
    /// on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<super::managed::Mirror>,
    /// The remote's managed-config sentinel, when the plan may publish one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentinel: Option<super::managed::RemoteSentinel>,
    /// Cache files' modification times (seconds), for `--conflict newer`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub modified: BTreeMap<TierPath, i64>,
    /// Small text files held differently by a source and the target.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub texts: Vec<TextPair>,
}

/// Both sides of a file a source and the target hold with different
/// content, for the diff the plan shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextPair {
    pub source: usize,
    pub path: TierPath,
    pub target: String,
    pub source_text: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error("cannot read {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Remote(#[from] super::remote::RemoteError),
    #[error(transparent)]
    Base(#[from] super::base::BaseError),
    #[error(transparent)]
    Managed(#[from] super::managed::ManagedError),
}

impl From<WalkError> for ObserveError {
    fn from(e: WalkError) -> ObserveError {
        ObserveError::Io {
            path: e.path,
            source: e.source,
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ObserveError + '_ {
    move |source| ObserveError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Observed {
    /// Walks each placement's datastore-tier directories.
    /// `known`: paths held already (the remote listing a verifying plan
    /// keeps), whose allocations the files' paths share.
    pub fn observe(
        layout: &Layout,
        placements: &[&Placement],
        cache: &mut HashCache,
        known: Option<&dyn KnownPaths>,
    ) -> Result<Observed, ObserveError> {
        let mut observed: Vec<PlacementState> = Vec::with_capacity(placements.len());
        for &p in placements {
            // A placement whose cache is one walked already (a move
            // between buckets: target and source share it) is that walk:
            // walked again, a million files were held twice over, 106 MB.
            let state = match observed
                .iter()
                .find(|o| layout.shares_cache(&o.placement, p))
            {
                Some(walked) => walked.same_tree(layout, p)?,
                None => observe_placement(layout, p, cache, known)?,
            };
            observed.push(state);
        }
        Ok(Observed {
            placements: observed,
            ..Observed::default()
        })
    }

    pub fn file_count(&self) -> usize {
        self.placements.iter().map(|p| p.files.len()).sum()
    }
}

impl PlacementState {
    /// `placement`'s state, its cache tree being this one's (the same
    /// files, not a copy; what is per placement observed anew).
    fn same_tree(
        &self,
        layout: &Layout,
        placement: &Placement,
    ) -> Result<PlacementState, ObserveError> {
        Ok(PlacementState {
            placement: placement.clone(),
            root: self.root.clone(),
            label: self.label.clone(),
            files: self.files.clone(),
            obstacles: self.obstacles.clone(),
            temps: self.temps.clone(),
            remote: None,
            legacy_trash: legacy_trash(layout, placement)?,
        })
    }
}

/// Directories being walked (pre-order), innermost last: each one's tier
/// path, depth, and whether a datastore file was found beneath it. A
/// directory that ends with none is recorded as a
/// [`ObstacleKind::Directory`] obstacle: harmless where a directory is
/// wanted, in the way where a file must go.
struct OpenDirs(Vec<(Vec<u8>, u32, bool)>);

impl OpenDirs {
    /// Closes every directory at `depth` or deeper.
    fn close_to(&mut self, depth: u32, obstacles: &mut Vec<Obstacle>) {
        while let Some((_, d, _)) = self.0.last()
            && *d >= depth
        {
            let (rel, _, has_data) = self.0.pop().expect("checked");
            if has_data {
                if let Some(parent) = self.0.last_mut() {
                    parent.2 = true;
                }
            } else {
                let path = String::from_utf8_lossy(&rel).into_owned();
                obstacles.push(Obstacle::new(path, ObstacleKind::Directory));
            }
        }
    }

    fn found_data(&mut self) {
        if let Some(top) = self.0.last_mut() {
            top.2 = true;
        }
    }
}

/// Records how the walk came by each directory's listing, so the next walk
/// skips reading those that stay unchanged.
fn remember(dirs: &mut DirListings, seen: Vec<Seen>) {
    for seen in seen {
        match seen {
            Seen::Remembered(key, at) => dirs.used_at(&key, at),
            Seen::Read(key, listing) => dirs.learn(key, listing),
            Seen::Racy => {}
        }
    }
}

/// What observing one tier keeps between its entries.
struct TierState<'a> {
    layout: &'a Layout,
    /// The tier directory's parent: an entry's file is `base/<its tier path>`.
    base: &'a Path,
    /// A temp file older than this is stale (nanoseconds since the epoch).
    stale_before_ns: i64,
    open: OpenDirs,
    state: &'a mut PlacementState,
    /// The placement's files, made a map as they come.
    files: &'a mut super::MapBuilder<TierPath, FileState>,
    cache: &'a mut HashCache,
    known: Option<&'a dyn KnownPaths>,
}

impl TierState<'_> {
    /// Walks the tier directory `dir` (named `name`, statted as `meta`),
    /// taking in each entry: one child of the tier at a time, so the
    /// entries of a whole 100,000-file tier are never held at once.
    fn walk(&mut self, dir: &Path, name: &str, meta: &fs::Metadata) -> Result<(), ObserveError> {
        let trust = self.cache.trust_before_ns();
        let dirs = self.cache.take_dirs();
        let mut seen = Vec::new();
        let walked = Walker::new(&dirs, trust).walk_in_parts(
            dir,
            name.as_bytes(),
            &Stat::of(meta),
            |part: Walked| {
                seen.extend(part.seen);
                part.entries
                    .into_iter()
                    .try_for_each(|entry| self.entry(entry))
            },
        );
        self.open.close_to(0, &mut self.state.obstacles);
        self.cache.put_dirs(dirs);
        walked?;
        remember(self.cache.dirs(), seen);
        Ok(())
    }

    /// Records one walked entry (in walk order).
    fn entry(&mut self, entry: WalkEntry) -> Result<(), ObserveError> {
        self.open.close_to(entry.depth, &mut self.state.obstacles);
        let stat = entry.stat;
        if stat.is_dir() {
            self.open.0.push((entry.rel.into_vec(), entry.depth, false));
            return Ok(());
        }
        let rel = match String::from_utf8(entry.rel.into_vec()) {
            Ok(rel) => rel,
            Err(e) => {
                // Non-UTF-8 names cannot be datastore keys.
                let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
                self.state
                    .obstacles
                    .push(Obstacle::new(lossy, ObstacleKind::BadName));
                self.open.found_data();
                return Ok(());
            }
        };
        let name = rel.rsplit('/').next().unwrap_or("");
        if stat.is_file()
            && is_swamp_temp(name)
            && let Ok(path) = TierPath::parse(&rel)
        {
            let stale =
                stat.mtime_ns < self.stale_before_ns || crate::fsutil::temp_writer_gone(name);
            self.state.temps.push(TempFile {
                path,
                size: stat.size,
                stale,
            });
            return Ok(());
        }
        let path = TierPath::parse(&rel).ok();
        if path.as_ref().is_some_and(is_repo_local_path) {
            return Ok(());
        }
        if path.as_ref().is_some_and(|p| self.layout.is_excluded(p)) {
            return Ok(());
        }
        self.open.found_data();
        if !stat.is_file() {
            let kind = if stat.is_symlink() {
                ObstacleKind::Symlink
            } else {
                ObstacleKind::SpecialFile
            };
            self.state
                .obstacles
                .push(obstacle(&self.base.join(&rel), rel, kind));
            return Ok(());
        }
        let Some(path) = path else {
            self.state
                .obstacles
                .push(Obstacle::new(rel, ObstacleKind::BadName));
            return Ok(());
        };
        let stamp = Stamp::of_stat(&stat);
        let sha256 = match self.cache.cached(stamp) {
            Some(sha) => sha,
            None => {
                let file = self.base.join(&rel);
                self.cache.hash(&file, stamp).map_err(io_err(&file))?
            }
        };
        self.files.push(
            path.shared_with(self.known),
            FileState {
                size: stat.size,
                sha256,
            },
        );
        Ok(())
    }
}

/// What swamp before 0.2 set aside in a remote's cache, per apply (see
/// [`LegacyTrash`]). Only real directories count: a symlink there, or
/// anything that is not an apply's directory, is left alone and not
/// followed.
fn legacy_trash(layout: &Layout, placement: &Placement) -> Result<Vec<LegacyTrash>, ObserveError> {
    use crate::config::DatastoreConfig;
    if !matches!(
        placement.datastore,
        DatastoreConfig::S3 { .. } | DatastoreConfig::Gcs { .. }
    ) {
        return Ok(Vec::new());
    }
    let dir = layout.legacy_trash_dir(placement);
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Ok(Vec::new()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(&dir)(e)),
    }
    let mut out = Vec::new();
    for entry in fs::read_dir(&dir).map_err(io_err(&dir))? {
        let entry = entry.map_err(io_err(&dir))?;
        let (Ok(id), Ok(kind)) = (entry.file_name().into_string(), entry.file_type()) else {
            continue;
        };
        if !kind.is_dir() || !crate::journal::is_id(&id) {
            continue;
        }
        let mut trash = LegacyTrash {
            id,
            files: 0,
            bytes: 0,
        };
        for f in walkdir::WalkDir::new(entry.path()).follow_links(false) {
            let f = f.map_err(|e| {
                let path = e.path().unwrap_or(&dir).to_path_buf();
                io_err(&path)(e.into())
            })?;
            if f.file_type().is_file() {
                trash.files += 1;
                trash.bytes += f.metadata().map_or(0, |m| m.len());
            }
        }
        out.push(trash);
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

fn observe_placement(
    layout: &Layout,
    placement: &Placement,
    cache: &mut HashCache,
    known: Option<&dyn KnownPaths>,
) -> Result<PlacementState, ObserveError> {
    let root = layout.placement_root(placement);
    let label = layout.root_label(&root);
    let mut state = PlacementState::empty(placement.clone(), root.clone(), label);
    match fs::symlink_metadata(&root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(state),
        Err(e) => return Err(io_err(&root)(e)),
        Ok(m) if !m.is_dir() => {
            state
                .obstacles
                .push(obstacle(&root, String::new(), kind_of(m.file_type())));
            return Ok(state);
        }
        Ok(_) => {}
    }
    state.legacy_trash = legacy_trash(layout, placement)?;
    let stale_before_ns = epoch_ns(
        SystemTime::now()
            .checked_sub(layout.temp_grace())
            .unwrap_or(SystemTime::UNIX_EPOCH),
    );
    let mut files = super::MapBuilder::default();
    for &tier in layout.tiers() {
        let dir = layout.tier_dir(placement, tier);
        let meta = match fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_err(&dir)(e)),
            Ok(m) => m,
        };
        if !meta.is_dir() {
            state.obstacles.push(obstacle(
                &dir,
                tier.as_str().to_string(),
                kind_of(meta.file_type()),
            ));
            continue;
        }
        let mut tier_state = TierState {
            layout,
            // Entries are named from the tier's name, so each one's name is
            // its tier path; its file is found from the tier directory's
            // parent.
            base: dir.parent().unwrap_or(Path::new("")),
            stale_before_ns,
            open: OpenDirs(Vec::new()),
            state: &mut state,
            files: &mut files,
            cache: &mut *cache,
            known,
        };
        debug_assert!(dir.ends_with(tier.as_str()));
        tier_state.walk(&dir, tier.as_str(), &meta)?;
    }
    state.obstacles.sort_by(|a, b| a.path.cmp(&b.path));
    state.files = files.finish().into();
    Ok(state)
}

/// The obstacle kind of an entry of type `ft` that is in the way.
fn kind_of(ft: fs::FileType) -> ObstacleKind {
    if ft.is_symlink() {
        ObstacleKind::Symlink
    } else if ft.is_file() {
        ObstacleKind::NotADirectory
    } else if ft.is_dir() {
        ObstacleKind::Directory
    } else {
        ObstacleKind::SpecialFile
    }
}

/// The obstacle an entry at `path` that is not a regular file (or not a
/// directory where one must be) makes, with a symlink's target.
fn obstacle(path: &Path, rel: String, kind: ObstacleKind) -> Obstacle {
    let link = (kind == ObstacleKind::Symlink)
        .then(|| fs::read_link(path).ok())
        .flatten()
        .map(|t| t.to_string_lossy().into_owned());
    Obstacle {
        path: rel,
        kind,
        link,
    }
}

/// A datastore file (not repo-local, not excluded) under a placement's tier
/// directories, if there is one. Cheaper than observing: nothing is hashed.
pub(crate) fn first_datastore_file(layout: &Layout, placement: &Placement) -> Option<PathBuf> {
    let root = layout.placement_root(placement);
    for &tier in layout.tiers() {
        let dir = layout.tier_dir(placement, tier);
        for entry in walkdir::WalkDir::new(&dir)
            .follow_links(false)
            .into_iter()
            .flatten()
        {
            if entry.file_type().is_dir() || is_swamp_temp(entry.file_name().to_str().unwrap_or(""))
            {
                continue;
            }
            let skipped = entry
                .path()
                .strip_prefix(&root)
                .ok()
                .and_then(Path::to_str)
                .and_then(|r| TierPath::parse(r).ok())
                .is_some_and(|tp| layout.is_excluded(&tp) || is_repo_local_path(&tp));
            if !skipped {
                return Some(entry.path().to_path_buf());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::layout::test_support::TempRepo;

    fn observe(repo: &TempRepo) -> PlacementState {
        let mut cache = HashCache::in_memory();
        Observed::observe(&repo.layout, &[&repo.placement], &mut cache, None)
            .unwrap()
            .placements
            .remove(0)
    }

    fn write(path: &Path, body: &[u8]) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, body).unwrap();
    }

    #[test]
    fn every_entry_is_typed_and_only_regular_files_are_data() {
        let repo = TempRepo::new(None);
        write(&repo.file("data/m/1/raw"), b"one");
        std::os::unix::fs::symlink("../../../elsewhere", repo.file("data/m/2")).unwrap();
        fs::create_dir_all(repo.file("data/m/3/raw")).unwrap();
        let fifo = std::ffi::CString::new(repo.file("outputs/pipe").to_str().unwrap()).unwrap();
        fs::create_dir_all(repo.file("outputs/x").parent().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let state = observe(&repo);
        assert_eq!(
            state.files.keys().map(TierPath::as_str).collect::<Vec<_>>(),
            ["data/m/1/raw"]
        );
        assert_eq!(
            state.obstacles,
            [
                Obstacle {
                    path: "data/m/2".into(),
                    kind: ObstacleKind::Symlink,
                    link: Some("../../../elsewhere".into()),
                },
                Obstacle::new("data/m/3", ObstacleKind::Directory),
                Obstacle::new("data/m/3/raw", ObstacleKind::Directory),
                Obstacle::new("outputs/pipe", ObstacleKind::SpecialFile),
            ]
        );
    }

    #[test]
    fn remembered_listings_still_see_every_change() {
        let repo = TempRepo::new(None);
        write(&repo.file("data/m/1/raw"), b"one");
        write(&repo.file("data/m/2/raw"), b"two");
        write(&repo.file("outputs/o.yaml"), b"o");
        let state = tempfile::tempdir().unwrap();
        let cache_path = state.path().join("hash-cache.tsv");
        // Each run loads what the last one saved, as plans do.
        let run = || {
            let mut cache = HashCache::load(&cache_path);
            cache.trust_all();
            let seen = Observed::observe(&repo.layout, &[&repo.placement], &mut cache, None)
                .unwrap()
                .placements
                .remove(0);
            cache.save().unwrap();
            (seen, cache.dirs().reused())
        };
        let files = |s: &PlacementState| {
            s.files
                .iter()
                .map(|(p, f)| format!("{p} {}", f.sha256.short(8)))
                .collect::<Vec<_>>()
        };
        let (first, reused) = run();
        assert_eq!(reused, 0);
        let (again, reused) = run();
        assert_eq!(again, first);
        // data, data/m, data/m/1, data/m/2, outputs: none read again.
        assert_eq!(reused, 5);

        // In place (directory untouched), added, removed, and replaced by a
        // symlink: every one is seen.
        fs::write(repo.file("data/m/1/raw"), b"ONE").unwrap();
        write(&repo.file("data/m/3/raw"), b"three");
        fs::remove_file(repo.file("outputs/o.yaml")).unwrap();
        fs::remove_file(repo.file("data/m/2/raw")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", repo.file("data/m/2/raw")).unwrap();
        let (changed, reused) = run();
        let sha = |b: &[u8]| crate::fsutil::sha256_bytes(b)[..8].to_string();
        assert_eq!(
            files(&changed),
            [
                format!("data/m/1/raw {}", sha(b"ONE")),
                format!("data/m/3/raw {}", sha(b"three")),
            ]
        );
        let obstacles: Vec<_> = changed
            .obstacles
            .iter()
            .map(|o| (o.path.as_str(), o.kind))
            .collect();
        assert_eq!(obstacles, [("data/m/2/raw", ObstacleKind::Symlink)]);
        // data and data/m/1 were unchanged; data/m, data/m/2, outputs changed.
        assert_eq!(reused, 2);
    }

    #[test]
    fn only_directories_without_data_are_recorded() {
        let repo = TempRepo::new(Some("ns"));
        write(&repo.file("data/a/1/raw"), b"x");
        fs::create_dir_all(repo.file("data/b/1")).unwrap();
        let state = observe(&repo);
        let dirs: Vec<_> = state.obstacles.iter().map(|o| o.path.as_str()).collect();
        assert_eq!(dirs, ["data/b", "data/b/1"]);
        assert!(state.obstacle_at("data/a").is_none());
    }

    #[test]
    fn temp_files_are_never_data_and_only_old_ones_are_stale() {
        let repo = TempRepo::new(None);
        write(&repo.file("data/m/1/.swamp-tmp-fresh"), b"partial");
        let old = repo.file("data/m/2/.swamp-tmp-old");
        write(&old, b"partial");
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        let state = observe(&repo);
        assert!(state.files.is_empty(), "{:?}", state.files);
        let temps: Vec<_> = state
            .temps
            .iter()
            .map(|t| (t.path.as_str(), t.stale))
            .collect();
        assert_eq!(
            temps,
            [
                ("data/m/1/.swamp-tmp-fresh", false),
                ("data/m/2/.swamp-tmp-old", true)
            ]
        );
        // A directory holding only a temp file is not data either.
        assert!(state.obstacle_at("data/m/1").is_some());
    }

    #[test]
    fn only_the_catalog_path_is_repo_local() {
        let repo = TempRepo::new(None);
        write(&repo.file("data/_catalog.db"), b"sqlite");
        write(&repo.file("data/_catalog.db-wal"), b"wal");
        write(
            &repo.file("data/m/_catalog.db"),
            b"data named like a catalog",
        );
        write(&repo.file("outputs/_catalog.db-shm"), b"data too");
        let state = observe(&repo);
        assert_eq!(
            state.files.keys().map(TierPath::as_str).collect::<Vec<_>>(),
            ["data/m/_catalog.db", "outputs/_catalog.db-shm"]
        );
    }
}
