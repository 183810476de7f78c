//! `.swamp.toml`: the repository's desired datastore configuration.
//!
//! Owns parsing (strict: unknown keys and bad values are errors naming the
//! key), validation of namespaces and paths, and atomic writes. It does not
//! compute paths: that is [`crate::layout`]'s job.

pub mod clone;
mod edit;
pub(crate) mod namespace;
mod spec;
mod tier;

pub use namespace::{Namespace, NamespaceError};
pub(crate) use spec::did_you_mean;
pub use spec::{DatastoreSpecError, datastore_spec, parse_datastore_spec};
pub use tier::Tier;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::fsutil;

/// File name of the repository marker and configuration.
pub const CONFIG_FILE: &str = ".swamp.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no {CONFIG_FILE} found in {} or any parent directory", .0.display())]
    NotFound(PathBuf),
    #[error("--repo {}: {reason}", .path.display())]
    NotARepo { path: PathBuf, reason: &'static str },
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid {}: {message}", .path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The whole of `.swamp.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Names the repository (and, for remote datastores, its cache).
    pub repo_id: Uuid,
    /// Datastore-tier paths live under `<root>/<namespace>/` when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Namespace>,
    #[serde(default)]
    pub datastore: DatastoreConfig,
    /// Which tier subdirectories belong to the datastore (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directories: Option<Vec<Tier>>,
    /// Globs (on the tier-relative path) of files that stay repo-local.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    #[serde(default, skip_serializing_if = "SyncConfig::is_default")]
    pub sync: SyncConfig,
    #[serde(default, skip_serializing_if = "ManagedConfig::is_default")]
    pub config: ManagedConfig,
    #[serde(default, skip_serializing_if = "LockConfig::is_default")]
    pub lock: LockConfig,
    #[serde(default, skip_serializing_if = "UndoConfig::is_default")]
    pub undo: UndoConfig,
    /// Where datastore files may still sit while a layout change converges.
    /// Written together with the new desired state, cleared once converged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub migrating_from: Vec<Placement>,
}

/// Where the datastore lives.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", try_from = "RawDatastore")]
pub enum DatastoreConfig {
    /// The repository's own `.swamp/` directory.
    #[default]
    Local,
    /// A (possibly shared) directory given by absolute path.
    Filesystem { path: AbsPath },
    /// An S3 bucket, worked on through the local cache.
    S3 {
        bucket: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        region: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        endpoint: Option<String>,
    },
    /// A GCS bucket, worked on through the local cache.
    Gcs {
        bucket: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        endpoint: Option<String>,
    },
}

/// The `[datastore]` table as written, before checking which keys its
/// `type` allows (serde's `deny_unknown_fields` does not reach into
/// internally tagged enums).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDatastore {
    #[serde(rename = "type")]
    kind: String,
    path: Option<AbsPath>,
    bucket: Option<String>,
    prefix: Option<String>,
    region: Option<String>,
    endpoint: Option<String>,
}

impl TryFrom<RawDatastore> for DatastoreConfig {
    type Error = String;
    fn try_from(raw: RawDatastore) -> Result<Self, String> {
        let RawDatastore {
            kind,
            path,
            bucket,
            prefix,
            region,
            endpoint,
        } = raw;
        let given = [
            ("path", path.is_some()),
            ("bucket", bucket.is_some()),
            ("prefix", prefix.is_some()),
            ("region", region.is_some()),
            ("endpoint", endpoint.is_some()),
        ];
        let allowed: &[&str] = match kind.as_str() {
            "local" => &[],
            "filesystem" => &["path"],
            "s3" => &["bucket", "prefix", "region", "endpoint"],
            "gcs" => &["bucket", "prefix", "endpoint"],
            other => {
                return Err(format!(
                    "key `datastore.type`: unknown datastore type {other:?} (one of: local, filesystem, s3, gcs)"
                ));
            }
        };
        if let Some((key, _)) = given.iter().find(|(k, set)| *set && !allowed.contains(k)) {
            return Err(format!(
                "key `datastore.{key}` is not valid for a `{kind}` datastore"
            ));
        }
        if let Some(endpoint) = &endpoint {
            spec::check_endpoint(endpoint).map_err(|e| format!("key `datastore.endpoint`: {e}"))?;
        }
        if let Some(prefix) = prefix
            .as_deref()
            .map(|p| p.trim_matches('/'))
            .filter(|p| !p.is_empty())
        {
            spec::check_prefix(prefix).map_err(|e| format!("key `datastore.prefix`: {e}"))?;
        }
        let missing =
            |key: &str| format!("key `datastore.{key}` is required for a `{kind}` datastore");
        Ok(match kind.as_str() {
            "local" => DatastoreConfig::Local,
            "filesystem" => DatastoreConfig::Filesystem {
                path: path.ok_or_else(|| missing("path"))?,
            },
            "s3" => DatastoreConfig::S3 {
                bucket: bucket.ok_or_else(|| missing("bucket"))?,
                prefix,
                region,
                endpoint,
            },
            _ => DatastoreConfig::Gcs {
                bucket: bucket.ok_or_else(|| missing("bucket"))?,
                prefix,
                endpoint,
            },
        })
    }
}

impl DatastoreConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            DatastoreConfig::Local => "local",
            DatastoreConfig::Filesystem { .. } => "filesystem",
            DatastoreConfig::S3 { .. } => "s3",
            DatastoreConfig::Gcs { .. } => "gcs",
        }
    }

    pub fn is_remote(&self) -> bool {
        matches!(
            self,
            DatastoreConfig::S3 { .. } | DatastoreConfig::Gcs { .. }
        )
    }

    /// The largest object the datastore holds (S3 and GCS: 5 TiB), if it
    /// has a limit.
    pub fn max_object_size(&self) -> Option<u64> {
        self.is_remote().then_some(5 << 40)
    }

    /// The bucket of a remote datastore.
    pub fn bucket(&self) -> Option<&str> {
        match self {
            DatastoreConfig::S3 { bucket, .. } | DatastoreConfig::Gcs { bucket, .. } => {
                Some(bucket)
            }
            _ => None,
        }
    }

    /// Whether an object of this remote datastore reaches `other` by a
    /// server-side copy: one provider at one endpoint (S3 `CopyObject`
    /// names the source bucket, GCS `rewrite` both). Across providers or
    /// endpoints, or between `file://` test buckets (each a directory
    /// store of its own), objects are streamed through this machine.
    pub fn copies_server_side_to(&self, other: &DatastoreConfig) -> bool {
        let on_disk = |e: &Option<String>| e.as_deref().is_some_and(|e| e.starts_with("file://"));
        match (self, other) {
            (
                DatastoreConfig::S3 {
                    bucket: a,
                    endpoint: ea,
                    region: ra,
                    ..
                },
                DatastoreConfig::S3 {
                    bucket: b,
                    endpoint: eb,
                    region: rb,
                    ..
                },
            ) => ea == eb && (a == b || (ra == rb && !on_disk(ea))),
            (
                DatastoreConfig::Gcs {
                    bucket: a,
                    endpoint: ea,
                    ..
                },
                DatastoreConfig::Gcs {
                    bucket: b,
                    endpoint: eb,
                    ..
                },
            ) => ea == eb && (a == b || !on_disk(ea)),
            _ => false,
        }
    }
}

impl fmt::Display for DatastoreConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatastoreConfig::Local => f.write_str("local"),
            DatastoreConfig::Filesystem { path } => write!(f, "file://{}", path.0.display()),
            DatastoreConfig::S3 { bucket, prefix, .. } => {
                write!(f, "s3://{bucket}/{}", prefix.as_deref().unwrap_or(""))
            }
            DatastoreConfig::Gcs { bucket, prefix, .. } => {
                write!(f, "gs://{bucket}/{}", prefix.as_deref().unwrap_or(""))
            }
        }
    }
}

/// An absolute path; relative ones are refused when parsed, since a shared
/// datastore must not depend on the directory a command runs from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PathBuf", into = "PathBuf")]
pub struct AbsPath(PathBuf);

impl AbsPath {
    pub fn new(path: impl Into<PathBuf>) -> Result<Self, String> {
        let path = path.into();
        if path.is_absolute() {
            Ok(AbsPath(path))
        } else {
            Err(format!(
                "path {:?} is relative; a filesystem datastore needs an absolute path",
                path.display().to_string()
            ))
        }
    }

    pub fn as_path(&self) -> &Path {
        &self.0
    }
}

impl TryFrom<PathBuf> for AbsPath {
    type Error = String;
    fn try_from(p: PathBuf) -> Result<Self, String> {
        AbsPath::new(p)
    }
}

impl From<AbsPath> for PathBuf {
    fn from(p: AbsPath) -> PathBuf {
        p.0
    }
}

/// One place datastore files can be: a datastore plus a namespace (or solo).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    pub datastore: DatastoreConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<Namespace>,
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} (namespace {ns})", self.datastore),
            None => write!(f, "{} (solo)", self.datastore),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ConflictPolicy {
    #[default]
    Fail,
    Local,
    Remote,
    Newer,
    KeepBoth,
}

impl ConflictPolicy {
    /// Its name as `--conflict` and `[sync] conflict` take it.
    pub fn name(self) -> &'static str {
        match self {
            ConflictPolicy::Fail => "fail",
            ConflictPolicy::Local => "local",
            ConflictPolicy::Remote => "remote",
            ConflictPolicy::Newer => "newer",
            ConflictPolicy::KeepBoth => "keep-both",
        }
    }
}

impl std::fmt::Display for ConflictPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncConfig {
    #[serde(default = "default_max_delete_percent")]
    pub max_delete_percent: u8,
    #[serde(default)]
    pub conflict: ConflictPolicy,
    #[serde(default = "default_concurrency")]
    pub concurrency: u16,
    /// When a pull fetches what the remote added (s3/gcs only).
    #[serde(default)]
    pub hydration: Hydration,
}

/// `[sync] hydration`: whether a pull downloads every file (`full`), or
/// records what the remote holds and fetches each file on first read
/// (`lazy`, upstream swamp's `--hydration-strategy lazy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Hydration {
    #[default]
    Full,
    Lazy,
}

impl Hydration {
    pub fn parse(s: &str) -> Option<Hydration> {
        match s {
            "full" => Some(Hydration::Full),
            "lazy" => Some(Hydration::Lazy),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Hydration::Full => "full",
            Hydration::Lazy => "lazy",
        }
    }
}

fn default_max_delete_percent() -> u8 {
    50
}

fn default_concurrency() -> u16 {
    64
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig {
            max_delete_percent: default_max_delete_percent(),
            conflict: ConflictPolicy::Fail,
            concurrency: default_concurrency(),
            hydration: Hydration::Full,
        }
    }
}

impl SyncConfig {
    fn is_default(&self) -> bool {
        *self == SyncConfig::default()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedConfig {
    #[serde(default)]
    pub managed: bool,
}

impl ManagedConfig {
    fn is_default(&self) -> bool {
        !self.managed
    }
}

/// `[lock]`: the distributed lock held by commands that write the
/// datastore (see [`crate::lock`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockConfig {
    /// Seconds a lock lives without renewal; a holder renews it every
    /// third of that. Others take over a lock this far past its last renewal.
    #[serde(default = "default_lock_ttl")]
    pub ttl_secs: u64,
    /// Seconds a command waits for a lock someone else holds before it
    /// gives up (exit 75). `--lock-timeout` overrides it.
    #[serde(default = "default_lock_timeout")]
    pub timeout_secs: u64,
}

/// How long a lock lives without renewal, unless `[lock] ttl_secs` says.
pub const DEFAULT_LOCK_TTL: std::time::Duration = std::time::Duration::from_secs(60);
/// How long a command waits for a held lock, unless told otherwise.
pub const DEFAULT_LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn default_lock_ttl() -> u64 {
    DEFAULT_LOCK_TTL.as_secs()
}

fn default_lock_timeout() -> u64 {
    DEFAULT_LOCK_TIMEOUT.as_secs()
}

impl Default for LockConfig {
    fn default() -> Self {
        LockConfig {
            ttl_secs: default_lock_ttl(),
            timeout_secs: default_lock_timeout(),
        }
    }
}

impl LockConfig {
    fn is_default(&self) -> bool {
        *self == LockConfig::default()
    }
}

/// `[undo]`: how long what applies set aside is kept (see [`crate::journal`]).
/// Pruning is a planned action of later applies (and of `swamp undo
/// --prune`), never done behind the plan's back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoConfig {
    /// Days an apply's trash is kept; after that the next plan prunes it.
    #[serde(default = "default_keep_days")]
    pub keep_days: u32,
    /// At most this many bytes of set-aside files on this machine (the
    /// repository's and the cache's trash); the oldest applies' trash is
    /// pruned first. Unset: no limit but `keep_days`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
}

fn default_keep_days() -> u32 {
    7
}

impl Default for UndoConfig {
    fn default() -> Self {
        UndoConfig {
            keep_days: default_keep_days(),
            max_bytes: None,
        }
    }
}

impl UndoConfig {
    fn is_default(&self) -> bool {
        *self == UndoConfig::default()
    }
}

impl Config {
    pub fn new(repo_id: Uuid, datastore: DatastoreConfig, namespace: Option<Namespace>) -> Self {
        Config {
            repo_id,
            namespace,
            datastore,
            directories: None,
            exclude: Vec::new(),
            sync: SyncConfig::default(),
            config: ManagedConfig::default(),
            lock: LockConfig::default(),
            undo: UndoConfig::default(),
            migrating_from: Vec::new(),
        }
    }

    /// Parses and validates; `path` only names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let config: Config = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        config.validate().map_err(invalid)?;
        Ok(config)
    }

    /// Checks that span several keys (serde checks the rest).
    pub fn validate(&self) -> Result<(), String> {
        if self.sync.max_delete_percent > 100 {
            return Err(format!(
                "key `sync.max_delete_percent`: {} is not a percentage (0-100)",
                self.sync.max_delete_percent
            ));
        }
        if self.sync.concurrency == 0 {
            return Err("key `sync.concurrency`: must be at least 1".into());
        }
        if !(1..=86_400).contains(&self.lock.ttl_secs) {
            return Err(format!(
                "key `lock.ttl_secs`: {} is out of range (1-86400 seconds)",
                self.lock.ttl_secs
            ));
        }
        if self.undo.keep_days > 36_500 {
            return Err(format!(
                "key `undo.keep_days`: {} is out of range (0-36500 days)",
                self.undo.keep_days
            ));
        }
        for (i, glob) in self.exclude.iter().enumerate() {
            globset::Glob::new(glob)
                .map_err(|e| format!("key `exclude[{i}]`: invalid glob {glob:?}: {e}"))?;
        }
        Ok(())
    }

    /// Where the data should be now.
    pub fn target(&self) -> Placement {
        Placement {
            datastore: self.datastore.clone(),
            namespace: self.namespace.clone(),
        }
    }

    /// Whether this configuration moves the datastore from one remote to
    /// another (another bucket, prefix or provider), the cache staying
    /// where it is: its objects are copied, not moved with the cache.
    pub fn moves_between_remotes(&self) -> bool {
        self.datastore.is_remote()
            && self.migrating_from.iter().any(|p| {
                p.datastore.is_remote()
                    && p.datastore != self.datastore
                    && p.namespace == self.namespace
            })
    }

    /// Records a new desired placement, remembering where data may still
    /// be. Going back to a placement we were migrating from drops it from
    /// the sources, so reversing is just another desired state.
    pub fn retarget(&mut self, to: Placement) {
        let from = self.target();
        if from == to {
            return;
        }
        self.migrating_from.retain(|p| *p != to);
        if !self.migrating_from.contains(&from) {
            self.migrating_from.push(from);
        }
        self.datastore = to.datastore;
        self.namespace = to.namespace;
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("config serialises")
    }

    /// [`Config::to_toml`] with the sections it leaves out as defaults
    /// (`[sync]`, `[config]`, `[lock]`, `[undo]`) written out, so a save can
    /// tell a default from a value the user set.
    fn to_full_toml(&self) -> String {
        let mut doc: toml_edit::DocumentMut = match self.to_toml().parse() {
            Ok(d) => d,
            Err(_) => return self.to_toml(),
        };
        let sections = [
            ("sync", toml::to_string(&self.sync)),
            ("config", toml::to_string(&self.config)),
            ("lock", toml::to_string(&self.lock)),
            ("undo", toml::to_string(&self.undo)),
        ];
        for (name, text) in sections {
            let Ok(table) = text.map(|t| t.parse::<toml_edit::DocumentMut>()) else {
                continue;
            };
            if let (false, Ok(table)) = (doc.contains_key(name), table) {
                doc.insert(name, toml_edit::Item::Table(table.as_table().clone()));
            }
        }
        doc.to_string()
    }

    /// Atomically writes `.swamp.toml` in `repo`. Over an existing file
    /// only what changed is rewritten: its comments and formatting stay.
    pub fn save(&self, repo: &Path) -> Result<(), ConfigError> {
        let path = repo.join(CONFIG_FILE);
        let fresh = self.to_toml();
        let text = match std::fs::read_to_string(&path) {
            Ok(existing) => {
                // The config as the file reads now, serialised the same way:
                // what `fresh` repeats of it that the file leaves out is a
                // default, not written.
                let before = Config::parse(&existing, &path)
                    .ok()
                    .map(|c| c.to_full_toml());
                edit::merged(&existing, before.as_deref(), &fresh)
                    // Never write what would not read back as this config.
                    .filter(|m| Config::parse(m, &path).is_ok_and(|c| c == *self))
                    .unwrap_or(fresh)
            }
            Err(_) => fresh,
        };
        fsutil::atomic_write(&path, text.as_bytes())
            .map_err(|source| ConfigError::Write { path, source })
    }

    pub fn load(repo: &Path) -> Result<Config, ConfigError> {
        let path = repo.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        Config::parse(&text, &path)
    }
}

/// The repository root: `start` or its nearest ancestor holding `.swamp.toml`.
/// The repository `--repo DIR` names: `DIR` itself, which must be a
/// directory holding [`CONFIG_FILE`] (no search through its parents: a
/// typo must not open some enclosing repository).
pub fn repo_at(dir: &Path) -> Result<PathBuf, ConfigError> {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let not = |reason| ConfigError::NotARepo {
        path: dir.clone(),
        reason,
    };
    match std::fs::metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(not("no such directory")),
        Err(source) => Err(ConfigError::Read { path: dir, source }),
        Ok(m) if !m.is_dir() => Err(not("not a directory")),
        Ok(_) if !dir.join(CONFIG_FILE).is_file() => {
            Err(not("not a swamp repository (it has no .swamp.toml)"))
        }
        Ok(_) => Ok(dir),
    }
}

pub fn find_repo(start: &Path) -> Result<PathBuf, ConfigError> {
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_path_buf());
    let mut dir = start.as_path();
    loop {
        if dir.join(CONFIG_FILE).is_file() {
            return Ok(dir.to_path_buf());
        }
        match dir.parent() {
            Some(parent) => dir = parent,
            None => return Err(ConfigError::NotFound(start)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new(".swamp.toml")).map_err(|e| e.to_string())
    }

    const ID: &str = "repo_id = \"0b3c5bd4-4f5e-4a0e-9d4c-6d8a9c1e2f30\"\n";

    /// Server-side only on one provider and endpoint; `file://` test
    /// buckets are directory stores of their own, copied within one only.
    #[test]
    fn a_copy_is_server_side_only_on_one_provider_and_endpoint() {
        let ds = |s: &str| parse_datastore_spec(s).unwrap();
        let on = |a: &str, b: &str| ds(a).copies_server_side_to(&ds(b));
        let e = "endpoint=http://127.0.0.1:8333";
        assert!(on(&format!("s3://a/p?{e}"), &format!("s3://b/q?{e}")));
        assert!(!on(&format!("s3://a/p?{e}"), "s3://b/q"));
        assert!(!on(
            "s3://a/p?region=eu-west-1",
            "s3://b/p?region=us-east-1"
        ));
        assert!(on("gs://a/p", "gs://b/p"));
        assert!(!on("s3://a/p", "gs://a/p"));
        assert!(!on(
            "s3://a/p?endpoint=file:///x",
            "s3://b/p?endpoint=file:///x"
        ));
        assert!(on(
            "s3://a/p?endpoint=file:///x",
            "s3://a/q?endpoint=file:///x"
        ));
        assert!(!on("local", "s3://a/p"));
    }

    #[test]
    fn minimal_config_defaults_to_local_solo() {
        let c = parse(ID).unwrap();
        assert_eq!(c.datastore, DatastoreConfig::Local);
        assert_eq!(c.namespace, None);
    }

    #[test]
    fn unknown_top_level_key_is_named() {
        let e = parse(&format!("{ID}bogus = 1\n")).unwrap_err();
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn unknown_datastore_key_is_named() {
        let e = parse(&format!(
            "{ID}[datastore]\ntype = \"local\"\nbukket = \"x\"\n"
        ))
        .unwrap_err();
        assert!(e.contains("bukket"), "{e}");
    }

    #[test]
    fn relative_filesystem_path_is_refused() {
        let e = parse(&format!(
            "{ID}[datastore]\ntype = \"filesystem\"\npath = \"rel/dir\"\n"
        ))
        .unwrap_err();
        assert!(e.contains("relative"), "{e}");
    }

    #[test]
    fn missing_filesystem_path_is_refused() {
        let e = parse(&format!("{ID}[datastore]\ntype = \"filesystem\"\n")).unwrap_err();
        assert!(e.contains("path"), "{e}");
    }

    #[test]
    fn namespace_equal_to_tier_is_refused() {
        let e = parse(&format!("namespace = \"data\"\n{ID}")).unwrap_err();
        assert!(e.contains("reserved"), "{e}");
    }

    #[test]
    fn wrong_type_is_named() {
        let e = parse(&format!("{ID}[sync]\nconcurrency = \"many\"\n")).unwrap_err();
        assert!(e.contains("concurrency"), "{e}");
    }

    #[test]
    fn max_delete_percent_over_100_is_refused() {
        let e = parse(&format!("{ID}[sync]\nmax_delete_percent = 150\n")).unwrap_err();
        assert!(e.contains("max_delete_percent"), "{e}");
    }

    #[test]
    fn round_trips_with_migration_record() {
        let mut c = parse(ID).unwrap();
        c.retarget(Placement {
            datastore: DatastoreConfig::Local,
            namespace: Some(Namespace::parse("homelab").unwrap()),
        });
        let again = parse(&c.to_toml()).unwrap();
        assert_eq!(again, c);
        assert_eq!(again.migrating_from.len(), 1);
        assert_eq!(again.migrating_from[0].namespace, None);
    }

    #[test]
    fn retarget_back_drops_the_source() {
        let mut c = parse(ID).unwrap();
        let solo = c.target();
        c.retarget(Placement {
            datastore: DatastoreConfig::Local,
            namespace: Some(Namespace::parse("homelab").unwrap()),
        });
        c.retarget(solo.clone());
        assert_eq!(c.target(), solo);
        assert_eq!(c.migrating_from.len(), 1);
        assert_eq!(
            c.migrating_from[0].namespace.as_ref().unwrap().as_str(),
            "homelab"
        );
    }
}
