//! The one module that computes paths and keys.
//!
//! Everything that needs to know where a datastore file lives asks a
//! [`Layout`]: the datastore root per type, `<root>/<ns>/<tier>` versus
//! `<root>/<tier>`, the repo-local tier (catalog and its sidecars, secrets,
//! vault bundles, the reconciler's own state) and remote keys
//! `<prefix>/<ns>/…`. Nothing else joins these paths by hand.

mod object_key;
mod tier_path;

pub use crate::config::Tier;
pub use crate::config::namespace::RESERVED_NAMES;
pub use object_key::ObjectKey;
pub use tier_path::{AnyOf, KnownPaths, TierPath, TierPathError};

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use uuid::Uuid;

use crate::config::{Config, DatastoreConfig, Namespace, Placement};

/// Repo-local directories under `.swamp/`: never synced, namespaced or moved.
pub const REPO_LOCAL_DIRS: [&str; 2] = ["secrets", "vault-bundles"];

/// The reconciler's own state directory under `.swamp/`.
pub const STATE_DIR: &str = "state";

/// Catalog file name; it lives in `.swamp/data/` whatever the namespace.
pub const CATALOG_FILE: &str = "_catalog.db";
pub const MANAGED_CONFIG_SENTINEL: &str = "config/managed-config-migrated.json";

/// True for the catalog's file name and every SQLite sidecar of it
/// (`-wal`, `-shm`, `-journal`).
pub fn is_catalog_name(name: &str) -> bool {
    name == CATALOG_FILE
        || name
            .strip_prefix(CATALOG_FILE)
            .is_some_and(|rest| rest.starts_with('-'))
}

/// True for the tier paths that belong to the repo-local tier even though
/// they sit inside a tier directory: the catalog at `data/_catalog.db` and
/// its sidecars, in every placement (the same names anywhere else are
/// ordinary data). Such paths are never moved, synced, compared, or counted
/// as data in the way; a remote object at one is a reserved-path conflict.
pub fn is_repo_local_path(path: &TierPath) -> bool {
    path.tier() == Tier::Data && {
        let mut rest = path.rest_segments();
        matches!((rest.next(), rest.next()), (Some(name), None) if is_catalog_name(name))
    }
}

/// Which kind of trash a set-aside file goes into (see
/// [`Layout::trash_path`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TrashHome {
    /// `.swamp/state/trash/`.
    State,
    /// A remote's cache: `<cache>/.swamp/trash/`.
    Cache,
    /// A shared path: `<placement root>/.swamp-trash/`.
    Shared,
}

/// Temp files: one constant and one predicate, owned by the writers.
/// The trash directory in a shared-path datastore or a remote's cache
/// (never a tier or a namespace name).
pub const TRASH_DIR: &str = ".swamp-trash";

/// A remote's cache's own state directory (`<cache>/.swamp/`), beside the
/// namespaces' tier trees: never a tier or a namespace name.
pub const CACHE_STATE_DIR: &str = ".swamp";

pub use crate::fsutil::{TEMP_PREFIX, is_swamp_temp};

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("cannot find the home directory for SWAMP_HOME")]
    NoHome,
    #[error("invalid exclude glob {glob:?}: {source}")]
    Exclude {
        glob: String,
        source: globset::Error,
    },
}

/// Paths for one repository, from its configuration.
#[derive(Debug, Clone)]
pub struct Layout {
    repo: PathBuf,
    swamp_home: PathBuf,
    repo_id: Uuid,
    tiers: Vec<Tier>,
    exclude: GlobSet,
    /// How old a swamp temp file must be to count as orphaned: the lock's
    /// TTL (a live writer finishes or renews within it).
    temp_grace: std::time::Duration,
}

impl Layout {
    pub fn new(repo: &Path, config: &Config, swamp_home: &Path) -> Result<Layout, LayoutError> {
        let mut tiers = config
            .directories
            .clone()
            .unwrap_or_else(|| Tier::ALL.to_vec());
        tiers.sort();
        tiers.dedup();
        let mut builder = GlobSetBuilder::new();
        for glob in &config.exclude {
            builder.add(Glob::new(glob).map_err(|source| LayoutError::Exclude {
                glob: glob.clone(),
                source,
            })?);
        }
        let exclude = builder.build().map_err(|source| LayoutError::Exclude {
            glob: config.exclude.join(", "),
            source,
        })?;
        Ok(Layout {
            repo: repo.to_path_buf(),
            swamp_home: swamp_home.to_path_buf(),
            repo_id: config.repo_id,
            tiers,
            exclude,
            temp_grace: std::time::Duration::from_secs(config.lock.ttl_secs),
        })
    }

    /// `SWAMP_HOME`, or `~/.swamp`.
    pub fn default_swamp_home() -> Result<PathBuf, LayoutError> {
        if let Some(home) = std::env::var_os("SWAMP_HOME").filter(|h| !h.is_empty()) {
            return Ok(PathBuf::from(home));
        }
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".swamp"))
            .ok_or(LayoutError::NoHome)
    }

    pub fn repo(&self) -> &Path {
        &self.repo
    }

    /// How old a swamp temp file must be before a plan removes it.
    pub fn temp_grace(&self) -> std::time::Duration {
        self.temp_grace
    }

    pub fn swamp_home(&self) -> &Path {
        &self.swamp_home
    }

    /// The repository's `.swamp/` directory (always repo-local).
    pub fn swamp_dir(&self) -> PathBuf {
        self.repo.join(".swamp")
    }

    /// The tier subdirectories that belong to the datastore.
    pub fn tiers(&self) -> &[Tier] {
        &self.tiers
    }

    pub fn is_datastore_tier(&self, tier: Tier) -> bool {
        self.tiers.contains(&tier)
    }

    /// Files matching an `exclude` glob stay repo-local.
    pub fn is_excluded(&self, path: &TierPath) -> bool {
        self.exclude.is_match(path.as_str())
    }

    /// Where a datastore keeps its tier: `.swamp/` for `local`, the path for
    /// `filesystem`, the cache `$SWAMP_HOME/repos/<repo_id>/` for remotes.
    pub fn datastore_root(&self, datastore: &DatastoreConfig) -> PathBuf {
        match datastore {
            DatastoreConfig::Local => self.swamp_dir(),
            DatastoreConfig::Filesystem { path } => path.as_path().to_path_buf(),
            DatastoreConfig::S3 { .. } | DatastoreConfig::Gcs { .. } => self.cache_root(),
        }
    }

    /// Where checks for symlinks start for `path` of `placement`: its
    /// datastore root (which may itself be a link, say to another disk), or
    /// `.swamp/` for a repo-local tier.
    pub fn link_check_root(&self, placement: &Placement, path: &Path) -> PathBuf {
        let root = self.datastore_root(&placement.datastore);
        if path.starts_with(&root) {
            root
        } else {
            self.swamp_dir()
        }
    }

    /// How a plan names `dir` so that the same repository plans the same
    /// text on any machine: relative to the repository when inside it
    /// (`.swamp/homelab`, `.` for the repository itself), as
    /// `$SWAMP_HOME/...` inside the swamp home (a remote's cache), else the
    /// absolute path (a shared directory, as `.swamp.toml` names it).
    pub fn root_label(&self, dir: &Path) -> String {
        if let Ok(rel) = dir.strip_prefix(&self.repo) {
            return match rel.as_os_str().is_empty() {
                true => ".".to_string(),
                false => rel.display().to_string(),
            };
        }
        match dir.strip_prefix(&self.swamp_home) {
            Ok(rel) if rel.as_os_str().is_empty() => "$SWAMP_HOME".to_string(),
            Ok(rel) => format!("$SWAMP_HOME/{}", rel.display()),
            Err(_) => dir.display().to_string(),
        }
    }

    /// The cache of a remote datastore.
    pub fn cache_root(&self) -> PathBuf {
        self.swamp_home.join("repos").join(self.repo_id.to_string())
    }

    /// `<root>/<ns>` or `<root>`: the directory holding the tier subdirs.
    pub fn placement_root(&self, placement: &Placement) -> PathBuf {
        let root = self.datastore_root(&placement.datastore);
        match &placement.namespace {
            Some(ns) => root.join(ns.as_str()),
            None => root,
        }
    }

    /// The directory of one tier subdir for a placement: under the placement
    /// root when the tier belongs to the datastore, else repo-local.
    pub fn tier_dir(&self, placement: &Placement, tier: Tier) -> PathBuf {
        if self.is_datastore_tier(tier) {
            self.placement_root(placement).join(tier.as_str())
        } else {
            self.swamp_dir().join(tier.as_str())
        }
    }

    /// Whether `a`'s tier directories are `b`'s (two remotes, one
    /// namespace: one cache): a file of one is the other's.
    pub fn shares_cache(&self, a: &Placement, b: &Placement) -> bool {
        self.tiers()
            .iter()
            .all(|&t| self.tier_dir(a, t) == self.tier_dir(b, t))
    }

    /// The absolute path of a tier file at a placement.
    pub fn file_path(&self, placement: &Placement, path: &TierPath) -> PathBuf {
        let mut p = self.tier_dir(placement, path.tier());
        for seg in path.rest_segments() {
            p.push(seg);
        }
        p
    }

    /// The catalog: `.swamp/data/_catalog.db`, whatever the namespace or datastore.
    pub fn catalog_path(&self) -> PathBuf {
        self.swamp_dir().join("data").join(CATALOG_FILE)
    }

    /// The reconciler's own repo-local state (hash cache, sync base, …).
    pub fn state_dir(&self) -> PathBuf {
        self.swamp_dir().join(STATE_DIR)
    }

    /// Where journals live, and the trash of files repo-local or in the
    /// local datastore: `.swamp/state/trash/`.
    pub fn trash_dir(&self) -> PathBuf {
        self.state_dir().join("trash")
    }

    /// The journal of apply `id`.
    pub fn journal_path(&self, id: &str) -> PathBuf {
        self.trash_dir().join(format!("{id}.json"))
    }

    /// What apply `id` made that holds no trash (see `journal::made`).
    pub fn made_path(&self, id: &str) -> PathBuf {
        self.trash_dir().join(format!("{id}.made"))
    }

    /// Where apply `id` sets aside `path` of `placement`: on the same
    /// filesystem as the file, so that setting aside is a rename, and never
    /// in a tree that mirrors a bucket.
    /// - `.swamp/state/trash/<id>/<ns or _>/…` for the local datastore and
    ///   repo-local tiers;
    /// - `<cache>/.swamp/trash/<id>/<ns or _>/…` in a remote's cache: its
    ///   own state directory, beside (not inside) the namespace's tier
    ///   tree, so the tree compares equal with the bucket
    ///   (`rclone check`, `aws s3 sync --dryrun`);
    /// - `<placement root>/.swamp-trash/<id>/…` in a shared path (inside
    ///   the namespace's own directory, which is all a namespaced command
    ///   may touch there);
    ///
    /// then the tier path.
    pub fn trash_path(&self, placement: &Placement, path: &TierPath, id: &str) -> PathBuf {
        let (mut p, _) = self.trash_root(placement, path, id);
        if self.trash_home(placement, path) != TrashHome::Shared {
            p.push(placement.namespace.as_ref().map_or("_", |n| n.as_str()));
        }
        p.push(path.tier().as_str());
        for seg in path.rest_segments() {
            p.push(seg);
        }
        p
    }

    /// Where a file set aside by apply `id` is now: [`Layout::trash_path`],
    /// or, in a remote's cache, where swamp before 0.2 put it
    /// (`<cache>/<ns>/.swamp-trash/<id>/…`) until a plan's
    /// `relocate-trash` moves it.
    pub fn set_aside_path(&self, placement: &Placement, path: &TierPath, id: &str) -> PathBuf {
        let now = self.trash_path(placement, path, id);
        if self.trash_home(placement, path) == TrashHome::Cache
            && std::fs::symlink_metadata(&now).is_err()
        {
            let mut old = self.legacy_trash_dir(placement).join(id);
            old.push(path.tier().as_str());
            for seg in path.rest_segments() {
                old.push(seg);
            }
            if std::fs::symlink_metadata(&old).is_ok() {
                return old;
            }
        }
        now
    }

    /// `<cache>/<ns>/.swamp-trash/`: where swamp before 0.2 set aside the
    /// files of a remote's cache, inside the namespace's tier tree.
    pub fn legacy_trash_dir(&self, placement: &Placement) -> PathBuf {
        self.placement_root(placement).join(TRASH_DIR)
    }

    /// `<cache>/.swamp/trash/`: a remote's cache's own trash.
    pub fn cache_trash_dir(&self) -> PathBuf {
        self.cache_root().join(CACHE_STATE_DIR).join("trash")
    }

    /// Which kind of trash `path` of `placement` is set aside into.
    fn trash_home(&self, placement: &Placement, path: &TierPath) -> TrashHome {
        if !self.is_datastore_tier(path.tier()) {
            return TrashHome::State;
        }
        match &placement.datastore {
            DatastoreConfig::Local => TrashHome::State,
            DatastoreConfig::S3 { .. } | DatastoreConfig::Gcs { .. } => TrashHome::Cache,
            DatastoreConfig::Filesystem { .. } => TrashHome::Shared,
        }
    }

    /// The directory apply `id`'s set-aside files of `placement` go under,
    /// and the directory above it that stays when the trash empties
    /// (`.swamp/state/trash/`, which holds the journals; or the cache root
    /// or placement root, so an empty trash directory goes too).
    pub fn trash_root(
        &self,
        placement: &Placement,
        path: &TierPath,
        id: &str,
    ) -> (PathBuf, PathBuf) {
        match self.trash_home(placement, path) {
            TrashHome::State => (self.trash_dir().join(id), self.trash_dir()),
            TrashHome::Cache => (self.cache_trash_dir().join(id), self.cache_root()),
            TrashHome::Shared => {
                let root = self.placement_root(placement);
                (root.join(TRASH_DIR).join(id), root)
            }
        }
    }

    pub fn hash_cache_path(&self) -> PathBuf {
        self.state_dir().join("hash-cache.bin")
    }

    /// The key prefix everything of a placement lives under in its bucket:
    /// `<prefix>/<ns>/`, `<prefix>/`, or `""` (no prefix, solo).
    pub fn remote_prefix(placement: &Placement) -> String {
        let prefix = match &placement.datastore {
            DatastoreConfig::S3 { prefix, .. } | DatastoreConfig::Gcs { prefix, .. } => {
                prefix.as_deref()
            }
            _ => None,
        };
        let mut key = String::new();
        for part in [prefix, placement.namespace.as_ref().map(Namespace::as_str)]
            .into_iter()
            .flatten()
        {
            let part = part.trim_matches('/');
            if !part.is_empty() {
                key.push_str(part);
                key.push('/');
            }
        }
        key
    }

    /// The datastore file a key of the placement whose prefix is
    /// `prefix` ([`Layout::remote_prefix`], made once for many keys)
    /// holds, or `None` for swamp's own records there (`.swamp/…`,
    /// `.namespace.json`) and keys of other placements.
    pub fn remote_file_path(prefix: &str, key: &str) -> Option<TierPath> {
        key.strip_prefix(prefix)
            .and_then(|rest| TierPath::parse(rest).ok())
    }

    /// `s3://bucket/<prefix>/<ns>/`: names the remote side in plans.
    pub fn remote_url(placement: &Placement) -> String {
        let (scheme, bucket) = match &placement.datastore {
            DatastoreConfig::S3 { bucket, .. } => ("s3", bucket.as_str()),
            DatastoreConfig::Gcs { bucket, .. } => ("gs", bucket.as_str()),
            DatastoreConfig::Local | DatastoreConfig::Filesystem { .. } => ("file", ""),
        };
        format!("{scheme}://{bucket}/{}", Layout::remote_prefix(placement))
    }

    /// This clone's own settings ([`crate::config::clone`]): repo-local,
    /// beside the rest of the clone's state, never in `.swamp.toml`.
    pub fn clone_settings_path(&self) -> PathBuf {
        self.state_dir().join("clone.toml")
    }

    /// `.swamp/state/<stem>-<id><ext>`: repo-local state of one remote
    /// placement, `<id>` naming it by its URL and, when it has one, its
    /// endpoint (two servers can hold a bucket of the same name, and a
    /// move from one to the other keeps the state of each). State named
    /// by the URL alone, as before endpoints counted, is taken over by the
    /// first placement that asks for it.
    fn place_state(&self, placement: &Placement, stem: &str, ext: &str) -> PathBuf {
        let url = Layout::remote_url(placement);
        let named = |key: &str| {
            let id = crate::fsutil::sha256_bytes(key.as_bytes());
            self.state_dir().join(format!("{stem}-{}{ext}", &id[..16]))
        };
        let endpoint = match &placement.datastore {
            DatastoreConfig::S3 { endpoint, .. } | DatastoreConfig::Gcs { endpoint, .. } => {
                endpoint.as_deref()
            }
            DatastoreConfig::Local | DatastoreConfig::Filesystem { .. } => None,
        };
        let Some(endpoint) = endpoint else {
            return named(&url);
        };
        let path = named(&format!("{url} {endpoint}"));
        if std::fs::symlink_metadata(&path).is_err() {
            let legacy = named(&url);
            if std::fs::symlink_metadata(&legacy).is_ok() {
                // Best effort: without it, the state is made afresh.
                let _ = std::fs::rename(&legacy, &path);
            }
        }
        path
    }

    /// The sync base for one remote placement, in the repo-local state.
    pub fn sync_base_path(&self, placement: &Placement) -> PathBuf {
        self.place_state(placement, "sync-base", ".json")
    }

    /// The records of this clone's multipart uploads to `placement` in
    /// progress (see [`crate::store::resume`]): a run stopped part-way
    /// continues them.
    pub fn uploads_dir(&self, placement: &Placement) -> PathBuf {
        self.place_state(placement, "uploads", "")
    }

    /// `<cache>/.swamp/partial/`: large downloads in progress, named for
    /// the object's key and version, outside the cache's tree (nothing
    /// partial is ever at a file's path).
    pub fn partial_dir(&self) -> PathBuf {
        self.cache_root().join(CACHE_STATE_DIR).join("partial")
    }

    /// Touched when a sync that pushes to `placement` has finished: the
    /// deletes this clone's commands made before it reached the bucket,
    /// so only later ones still explain a remote delete (see
    /// `state::delete_records`). A pull in between changes nothing of that.
    pub fn deletes_pushed_path(&self, placement: &Placement) -> PathBuf {
        self.place_state(placement, "deletes-pushed", "")
    }

    /// The delete records of `placement`'s remote already read (they never
    /// change): `.swamp/state/delete-records-<id>.json`.
    pub fn delete_records_cache_path(&self, placement: &Placement) -> PathBuf {
        self.place_state(placement, "delete-records", ".json")
    }

    /// The team's history records of `placement`'s remote already read,
    /// one file per apply, and the version each was read at:
    /// `.swamp/state/history-<id>/` (see `state::history`).
    pub fn history_cache_dir(&self, placement: &Placement) -> PathBuf {
        self.place_state(placement, "history", "")
    }

    /// What this clone read and checked of `placement`'s own objects (its
    /// remote id, the namespace manifest), by version: see `state::seen`.
    pub fn remote_seen_path(&self, placement: &Placement) -> PathBuf {
        self.place_state(placement, "remote-seen", ".json")
    }

    /// Cache contents known not to be the multipart objects they were
    /// compared with (a whole read each to find out):
    /// `.swamp/state/multipart-misses.json`.
    pub fn multipart_misses_path(&self) -> PathBuf {
        self.state_dir().join("multipart-misses.json")
    }

    /// This clone's id, for its notes in the bucket (see
    /// `state::delete_records`): `.swamp/state/clone-id`.
    pub fn clone_id_path(&self) -> PathBuf {
        self.state_dir().join("clone-id")
    }

    /// A throwaway object `swamp doctor` writes to probe conditional
    /// writes: `<prefix>/<ns>/.swamp/doctor-canary-<token>`.
    pub fn doctor_canary_key(placement: &Placement, token: &str) -> String {
        format!(
            "{}.swamp/doctor-canary-{token}",
            Layout::remote_prefix(placement)
        )
    }

    /// Scratch objects of the probe of what the server enforces (see
    /// `store::enforced`), removed once it has run.
    pub fn enforcement_probe_key(placement: &Placement, token: &str) -> String {
        format!("{}.swamp/probe-{token}-", Layout::remote_prefix(placement))
    }

    /// The marker a move leaves at the place it left
    /// (`<prefix>/<ns>/.swamp/moved.json`), naming where the datastore
    /// went: a clone still configured for it stops there.
    pub fn moved_marker_key(placement: &Placement) -> String {
        Layout::moved_marker_key_in(&Layout::remote_prefix(placement))
    }

    /// [`Layout::moved_marker_key`] under a key prefix.
    pub fn moved_marker_key_in(key_prefix: &str) -> String {
        format!("{key_prefix}.swamp/moved.json")
    }

    /// The id the remote itself holds, written once: binds a sync base to
    /// this very remote (`<prefix>/<ns>/.swamp/remote-id.json`).
    pub fn remote_id_key(placement: &Placement) -> String {
        format!("{}.swamp/remote-id.json", Layout::remote_prefix(placement))
    }

    /// Where syncs record the deletes swamp's own commands made, for the
    /// other clones' delete guards: `<prefix>/<ns>/.swamp/deletes/`.
    pub fn remote_deletes_prefix(placement: &Placement) -> String {
        format!("{}.swamp/deletes/", Layout::remote_prefix(placement))
    }

    /// Where every apply that changed the namespace's objects keeps its
    /// record, for the whole team: `<prefix>/<ns>/.swamp/history/`.
    pub fn remote_history_prefix(placement: &Placement) -> String {
        format!("{}.swamp/history/", Layout::remote_prefix(placement))
    }

    /// Apply `id`'s record: `<prefix>/<ns>/.swamp/history/<id>.json`.
    pub fn remote_history_key(placement: &Placement, id: &str) -> String {
        format!("{}{id}.json", Layout::remote_history_prefix(placement))
    }

    /// Where clones note how far their sync bases have passed the delete
    /// records: `<prefix>/<ns>/.swamp/clones/`.
    pub fn remote_clones_prefix(placement: &Placement) -> String {
        format!("{}.swamp/clones/", Layout::remote_prefix(placement))
    }

    /// A namespace's manifest key: `<prefix>/<ns>/.namespace.json`.
    pub fn namespace_manifest_key(placement: &Placement) -> String {
        format!("{}.namespace.json", Layout::remote_prefix(placement))
    }

    /// A placement's lock object: `<prefix>/<ns>/.swamp/lock.json` (solo:
    /// `<prefix>/.swamp/lock.json`), relative to its store's root (the
    /// bucket, or the path of a filesystem datastore).
    /// Where apply `id` keeps the remote object at `path` it deletes or
    /// replaces: `<prefix>/<ns>/.swamp/trash/<id>/<path>`.
    pub fn remote_trash_key(placement: &Placement, id: &str, path: &TierPath) -> String {
        format!(
            "{}.swamp/trash/{id}/{}",
            Layout::remote_prefix(placement),
            path.as_str()
        )
    }

    pub fn lock_key(placement: &Placement) -> String {
        format!("{}.swamp/lock.json", Layout::remote_prefix(placement))
    }

    /// The lock object as a URL, for messages: `s3://bucket/p/ns/.swamp/lock.json`.
    pub fn lock_url(placement: &Placement) -> String {
        match &placement.datastore {
            DatastoreConfig::Filesystem { path } => {
                let mut p = path.as_path().to_path_buf();
                p.push(Layout::lock_key(placement));
                p.display().to_string()
            }
            _ => format!("{}.swamp/lock.json", Layout::remote_url(placement)),
        }
    }

    /// A remote object key: `<prefix>/<ns>/<tier path>`.
    pub fn remote_key(
        prefix: Option<&str>,
        namespace: Option<&Namespace>,
        path: &TierPath,
    ) -> String {
        let mut key = String::new();
        for part in [prefix, namespace.map(Namespace::as_str)]
            .into_iter()
            .flatten()
        {
            let part = part.trim_matches('/');
            if !part.is_empty() {
                key.push_str(part);
                key.push('/');
            }
        }
        key.push_str(path.as_str());
        key
    }
}

/// A repository in a temp dir, with its layout and desired placement, for
/// the unit tests of modules that work through a [`Layout`].
#[cfg(test)]
pub(crate) mod test_support {
    use std::path::Path;

    use uuid::Uuid;

    use super::Layout;
    use crate::config::{Config, DatastoreConfig, Namespace, Placement};

    pub(crate) struct TempRepo {
        pub(crate) _dir: tempfile::TempDir,
        pub(crate) layout: Layout,
        pub(crate) placement: Placement,
    }

    impl TempRepo {
        /// A local-datastore repo at `<tmp>/repo`, solo or namespaced.
        pub(crate) fn new(namespace: Option<&str>) -> TempRepo {
            let dir = tempfile::tempdir().unwrap();
            let repo = dir.path().join("repo");
            std::fs::create_dir_all(&repo).unwrap();
            let config = Config::new(
                Uuid::nil(),
                DatastoreConfig::Local,
                namespace.map(|n| Namespace::parse(n).unwrap()),
            );
            let home: &Path = &dir.path().join("home");
            let layout = Layout::new(&repo, &config, home).unwrap();
            TempRepo {
                _dir: dir,
                layout,
                placement: config.target(),
            }
        }

        /// The absolute path of a tier file at the desired placement.
        pub(crate) fn file(&self, tier_path: &str) -> std::path::PathBuf {
            self.layout
                .file_path(&self.placement, &super::TierPath::parse(tier_path).unwrap())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_servers_holding_a_bucket_of_one_name_keep_their_own_state_and_old_state_is_taken_over() {
        let t = test_support::TempRepo::new(None);
        let at = |endpoint: Option<&str>| Placement {
            datastore: DatastoreConfig::S3 {
                bucket: "data".into(),
                prefix: Some("p".into()),
                region: None,
                endpoint: endpoint.map(String::from),
            },
            namespace: None,
        };
        let (one, two) = (at(Some("http://minio:9000")), at(Some("http://other:9000")));
        let aws = at(None);
        assert_ne!(t.layout.sync_base_path(&one), t.layout.sync_base_path(&two));
        assert_ne!(
            t.layout.history_cache_dir(&one),
            t.layout.history_cache_dir(&two)
        );
        // Without an endpoint, the name is the URL's, as it always was.
        let by_url = t.layout.sync_base_path(&aws);
        // A base named by the URL alone (before endpoints counted) is
        // taken over by the first placement that asks.
        std::fs::create_dir_all(by_url.parent().unwrap()).unwrap();
        std::fs::write(&by_url, "base").unwrap();
        let now = t.layout.sync_base_path(&one);
        assert_ne!(now, by_url);
        assert_eq!(std::fs::read_to_string(&now).unwrap(), "base");
        assert!(!by_url.exists());
        assert!(
            !t.layout.sync_base_path(&two).exists(),
            "the other starts afresh"
        );
    }

    #[test]
    fn a_namespace_cannot_take_the_name_of_a_tier_or_internal_directory() {
        for tier in Tier::ALL {
            assert!(RESERVED_NAMES.contains(&tier.as_str()), "{tier}");
        }
        for dir in REPO_LOCAL_DIRS.iter().chain([&STATE_DIR]) {
            assert!(RESERVED_NAMES.contains(dir), "{dir}");
        }
    }
    use crate::config::AbsPath;

    fn config(ds: DatastoreConfig, ns: Option<&str>) -> Config {
        Config::new(Uuid::nil(), ds, ns.map(|n| Namespace::parse(n).unwrap()))
    }

    fn layout(c: &Config) -> Layout {
        Layout::new(Path::new("/repo"), c, Path::new("/home/u/.swamp")).unwrap()
    }

    use crate::testutil::tp;

    #[test]
    fn a_remote_key_names_a_datastore_file_only_below_its_placement() {
        let c = config(
            DatastoreConfig::S3 {
                bucket: "b".into(),
                prefix: Some("p".into()),
                region: None,
                endpoint: None,
            },
            Some("team"),
        );
        let at = Layout::remote_prefix(&c.target());
        assert_eq!(
            Layout::remote_file_path(&at, "p/team/data/m/1/raw"),
            Some(tp("data/m/1/raw"))
        );
        // swamp's own records there, and another namespace's files
        for key in [
            "p/team/.swamp/remote-id.json",
            "p/team/.namespace.json",
            "p/team/.swamp/trash/x/data/m/1/raw",
            "p/other/data/m/1/raw",
            "p/team/data",
        ] {
            assert_eq!(Layout::remote_file_path(&at, key), None, "{key}");
        }
    }

    #[test]
    fn plans_name_roots_the_same_on_every_machine() {
        let c = config(DatastoreConfig::Local, None);
        let l = layout(&c);
        let label = |p: &str| l.root_label(Path::new(p));
        assert_eq!(label("/repo"), ".");
        assert_eq!(label("/repo/.swamp/homelab"), ".swamp/homelab");
        assert_eq!(
            label("/home/u/.swamp/repos/x/alpha"),
            "$SWAMP_HOME/repos/x/alpha"
        );
        assert_eq!(label("/home/u/.swamp"), "$SWAMP_HOME");
        // A shared directory: as .swamp.toml names it (absolute).
        assert_eq!(label("/mnt/shared/ns"), "/mnt/shared/ns");
        // Components, not characters: `/repository` is not inside `/repo`.
        assert_eq!(label("/repository/x"), "/repository/x");
    }

    #[test]
    fn solo_local_paths_sit_directly_under_dot_swamp() {
        let c = config(DatastoreConfig::Local, None);
        let l = layout(&c);
        assert_eq!(
            l.file_path(&c.target(), &tp("data/m/1/raw")),
            Path::new("/repo/.swamp/data/m/1/raw")
        );
    }

    #[test]
    fn namespace_is_the_outermost_segment() {
        let c = config(DatastoreConfig::Local, Some("homelab"));
        let l = layout(&c);
        assert_eq!(
            l.file_path(&c.target(), &tp("outputs/x.yaml")),
            Path::new("/repo/.swamp/homelab/outputs/x.yaml")
        );
    }

    #[test]
    fn catalog_and_state_are_repo_local_whatever_the_namespace() {
        for ds in [
            DatastoreConfig::Local,
            DatastoreConfig::Filesystem {
                path: AbsPath::new("/srv/shared").unwrap(),
            },
        ] {
            let c = config(ds, Some("homelab"));
            let l = layout(&c);
            assert_eq!(l.catalog_path(), Path::new("/repo/.swamp/data/_catalog.db"));
            assert_eq!(l.state_dir(), Path::new("/repo/.swamp/state"));
        }
    }

    #[test]
    fn filesystem_and_remote_roots() {
        let c = config(
            DatastoreConfig::Filesystem {
                path: AbsPath::new("/srv/shared").unwrap(),
            },
            Some("team-a"),
        );
        let l = layout(&c);
        assert_eq!(
            l.placement_root(&c.target()),
            Path::new("/srv/shared/team-a")
        );
        let c = config(
            DatastoreConfig::S3 {
                bucket: "b".into(),
                prefix: None,
                region: None,
                endpoint: None,
            },
            None,
        );
        let l = layout(&c);
        assert_eq!(
            l.placement_root(&c.target()),
            Path::new("/home/u/.swamp/repos/00000000-0000-0000-0000-000000000000")
        );
    }

    #[test]
    fn tiers_outside_directories_stay_repo_local() {
        let mut c = config(
            DatastoreConfig::Filesystem {
                path: AbsPath::new("/srv/shared").unwrap(),
            },
            None,
        );
        c.directories = Some(vec![Tier::Data]);
        let l = layout(&c);
        assert_eq!(
            l.tier_dir(&c.target(), Tier::Audit),
            Path::new("/repo/.swamp/audit")
        );
        assert_eq!(
            l.tier_dir(&c.target(), Tier::Data),
            Path::new("/srv/shared/data")
        );
    }

    #[test]
    fn remote_keys_put_namespace_after_prefix() {
        let ns = Namespace::parse("homelab").unwrap();
        assert_eq!(
            Layout::remote_key(Some("swamp/"), Some(&ns), &tp("data/a/1/raw")),
            "swamp/homelab/data/a/1/raw"
        );
        assert_eq!(
            Layout::remote_key(None, None, &tp("data/a/1/raw")),
            "data/a/1/raw"
        );
    }

    #[test]
    fn only_the_catalog_path_and_its_sidecars_are_repo_local() {
        for name in [
            "_catalog.db",
            "_catalog.db-wal",
            "_catalog.db-shm",
            "_catalog.db-journal",
        ] {
            assert!(is_catalog_name(name), "{name}");
            assert!(is_repo_local_path(&tp(&format!("data/{name}"))), "{name}");
            // The same names elsewhere are ordinary data.
            assert!(
                !is_repo_local_path(&tp(&format!("data/m/{name}"))),
                "{name}"
            );
            assert!(
                !is_repo_local_path(&tp(&format!("outputs/{name}"))),
                "{name}"
            );
        }
        assert!(!is_catalog_name("_catalog.dbx"));
        assert!(!is_repo_local_path(&tp("data/_catalog.dbx")));
        assert!(!is_repo_local_path(&tp("data/raw")));
    }

    #[test]
    fn temp_files_are_named_by_one_prefix() {
        assert!(is_swamp_temp(".swamp-tmp-abc123"));
        assert!(!is_swamp_temp("swamp-tmp-abc"));
        assert!(!is_swamp_temp("raw"));
    }
}
