//! The data catalog: a SQLite index (WAL mode) of one placement's `data/`
//! tier, one row per version, at [`Layout::catalog_path`] whatever the
//! namespace.
//!
//! It is derived state. [`Catalog::open`] rebuilds it from the files when
//! it is missing, invalidated, indexes another data dir, has another schema
//! version, or is corrupt (then the file and its sidecars are deleted
//! first). A rebuild replaces every row in one transaction.
//!
//! Submodules: [`name`] (what a data name / version dir may be), `scan`
//! (walking the data dir), `db` (SQLite).

mod db;
pub(crate) mod name;
mod scan;
pub(crate) use scan::version_of;

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, TransactionBehavior};
use serde::Serialize;

use crate::config::Placement;
use crate::layout::{Layout, Tier};

/// Appended to errors the user fixes by rebuilding.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("catalog {}: {source}", .path.display())]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "catalog {} is busy (another swamp is writing it): {source}",
        .path.display()
    )]
    Busy {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "cannot {action} {} for the catalog: {source}",
        .path.display()
    )]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error(
        "cannot remove the corrupt catalog file {}: {source}",
        .path.display()
    )]
    RemoveCorrupt { path: PathBuf, source: io::Error },
    #[error(
        "{} is a symlink; swamp never writes its catalog through a link (it could be someone else's file)",
        .path.display()
    )]
    Symlink { path: PathBuf },
}

/// Refuses a catalog whose file, sidecars or directories (below `.swamp/`)
/// are symlinks, and a data dir that is one: SQLite would follow them.
fn refuse_symlinks(
    layout: &Layout,
    data_dir: Option<(&Placement, &Path)>,
) -> Result<(), CatalogError> {
    let path = layout.catalog_path();
    let base = layout.swamp_dir();
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| CatalogError::Io {
            action: "inspect",
            path: p,
            source,
        }
    };
    let mut paths = vec![path.clone()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        paths.push(PathBuf::from(p));
    }
    for p in &paths {
        if let Some(link) = crate::fsutil::symlink_below(&base, p).map_err(io(p))? {
            return Err(CatalogError::Symlink { path: link });
        }
    }
    if let Some((placement, dir)) = data_dir {
        let root = layout.link_check_root(placement, dir);
        if let Some(link) = crate::fsutil::symlink_below(&root, dir).map_err(io(dir))? {
            return Err(CatalogError::Symlink { path: link });
        }
    }
    Ok(())
}

impl CatalogError {
    fn sql(path: &Path, source: rusqlite::Error) -> CatalogError {
        let path = path.to_path_buf();
        match source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                CatalogError::Busy { path, source }
            }
            _ => CatalogError::Sqlite { path, source },
        }
    }

    fn is_corrupt(&self) -> bool {
        matches!(self, CatalogError::Sqlite { source, .. } if db::is_corrupt(source))
    }
}

/// One version of one data name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Entry {
    pub name: String,
    pub version: u64,
    pub size: u64,
    pub sha256: String,
    /// The tier path, like `data/model/output/3/raw`.
    pub path: String,
}

/// One data name: its latest version and totals over all versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct NameSummary {
    pub name: String,
    pub latest_version: u64,
    pub latest_size: u64,
    pub versions: u64,
    pub total_size: u64,
}

/// What a rebuild indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct RebuildStats {
    pub names: u64,
    pub versions: u64,
    pub bytes: u64,
}

/// The state a catalog was found in, before any rebuild.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub(crate) enum Freshness {
    Fresh,
    /// No file, or no tables in it.
    Missing,
    /// `populated` was cleared (data files moved).
    Invalidated,
    /// It indexes another data dir (the placement changed).
    OtherDataDir {
        indexed: String,
    },
    /// Written by another schema version (`None`: none recorded).
    Schema {
        found: Option<String>,
    },
    /// Not readable as SQLite.
    Corrupt,
}

impl fmt::Display for Freshness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Freshness::Fresh => f.write_str("fresh"),
            Freshness::Missing => f.write_str("missing"),
            Freshness::Invalidated => f.write_str("invalidated (data files moved)"),
            Freshness::OtherDataDir { indexed } => {
                write!(f, "indexes another data dir ({indexed})")
            }
            Freshness::Schema { found } => write!(
                f,
                "schema version {} (expected {})",
                found.as_deref().unwrap_or("unknown"),
                db::SCHEMA_VERSION
            ),
            Freshness::Corrupt => f.write_str("corrupt"),
        }
    }
}

/// How the catalog compares with the data files on disk (for `swamp doctor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Completeness {
    pub freshness: Freshness,
    /// Version files on disk.
    pub on_disk: u64,
    /// Version files on disk that the catalog lacks or records with another hash.
    pub missing: u64,
    /// Rows with no version file on disk.
    pub extra: u64,
}

impl Completeness {
    /// The catalog answers queries exactly as the files would.
    pub(crate) fn is_complete(&self) -> bool {
        self.freshness == Freshness::Fresh && self.missing == 0 && self.extra == 0
    }
}

/// Every version file under `data_dir`, read from the files (no catalog):
/// for data a pending layout change has not moved yet.
pub(crate) fn scan_entries(data_dir: &Path) -> Result<Vec<Entry>, CatalogError> {
    let mut entries: Vec<Entry> = scan::scan(data_dir, &HashMap::new())?
        .into_values()
        .map(|s| s.entry)
        .collect();
    entries.sort_by(|a, b| (&a.name, a.version).cmp(&(&b.name, b.version)));
    Ok(entries)
}

/// An open, fresh catalog.
pub(crate) struct Catalog {
    conn: Connection,
    path: PathBuf,
    // What opening found and did: read by the tests of freshness.
    #[cfg_attr(not(test), allow(dead_code))]
    opened_as: Freshness,
    #[cfg_attr(not(test), allow(dead_code))]
    rebuilt: Option<RebuildStats>,
}

impl Catalog {
    /// Opens (creating if needed) and makes it fresh for `placement`'s data
    /// dir, rebuilding if needed.
    pub(crate) fn open(layout: &Layout, placement: &Placement) -> Result<Catalog, CatalogError> {
        let path = layout.catalog_path();
        let data_dir = data_dir(layout, placement)?;
        refuse_symlinks(layout, Some((placement, &data_dir)))?;
        let (conn, opened_as, rebuilt) = connect_fresh(&path, &data_dir, false)?;
        Ok(Catalog {
            conn,
            path,
            opened_as,
            rebuilt,
        })
    }

    /// Full rebuild from the files (`swamp catalog rebuild`).
    pub(crate) fn rebuild(
        layout: &Layout,
        placement: &Placement,
    ) -> Result<RebuildStats, CatalogError> {
        let path = layout.catalog_path();
        let data_dir = data_dir(layout, placement)?;
        refuse_symlinks(layout, Some((placement, &data_dir)))?;
        let (conn, _, rebuilt) = connect_fresh(&path, &data_dir, true)?;
        match rebuilt {
            Some(stats) => Ok(stats),
            // Unreachable when forced, but counting is always correct.
            None => db::stats(&conn).map_err(|e| CatalogError::sql(&path, e)),
        }
    }

    /// Marks it stale (clears `populated`) so the next open rebuilds; does
    /// nothing if there is no catalog file. Used by apply after moving data
    /// files.
    pub(crate) fn invalidate(layout: &Layout) -> Result<(), CatalogError> {
        let path = layout.catalog_path();
        refuse_symlinks(layout, None)?;
        if !exists(&path)? {
            return Ok(());
        }
        match db::connect(&path).and_then(|conn| db::mark_stale(&conn)) {
            Ok(()) => Ok(()),
            // A corrupt catalog is rebuilt from scratch anyway.
            Err(e) if db::is_corrupt(&e) => remove_db(&path),
            Err(e) => Err(CatalogError::sql(&path, e)),
        }
    }

    /// How the catalog stands for `placement`, without creating, changing
    /// or rebuilding it (for `swamp doctor`).
    pub(crate) fn check(layout: &Layout, placement: &Placement) -> Result<Freshness, CatalogError> {
        let path = layout.catalog_path();
        refuse_symlinks(layout, None)?;
        if !exists(&path)? {
            return Ok(Freshness::Missing);
        }
        let data_dir = data_dir(layout, placement)?;
        let key = data_dir_key(&data_dir);
        match db::connect_existing(&path).and_then(|conn| db::freshness(&conn, &key)) {
            Ok(f) => Ok(f),
            Err(e) if db::is_corrupt(&e) => Ok(Freshness::Corrupt),
            Err(e) => Err(CatalogError::sql(&path, e)),
        }
    }

    /// Compares the catalog's rows with a scan of the data files, without
    /// creating, changing or rebuilding it (for `swamp doctor`). A catalog
    /// that is not fresh counts every file as missing.
    pub(crate) fn completeness(
        layout: &Layout,
        placement: &Placement,
    ) -> Result<Completeness, CatalogError> {
        let freshness = Catalog::check(layout, placement)?;
        let on_disk = scan::scan(&data_dir(layout, placement)?, &HashMap::new())?;
        let (missing, extra) = if freshness == Freshness::Fresh {
            let path = layout.catalog_path();
            let rows = db::connect_existing(&path)
                .and_then(|conn| db::all(&conn))
                .map_err(|e| CatalogError::sql(&path, e))?;
            let indexed: HashMap<&str, &str> = rows
                .iter()
                .map(|e| (e.path.as_str(), e.sha256.as_str()))
                .collect();
            let missing = on_disk
                .iter()
                .filter(|(p, s)| indexed.get(p.as_str()) != Some(&s.entry.sha256.as_str()))
                .count();
            let extra = indexed
                .keys()
                .filter(|p| !on_disk.contains_key(**p))
                .count();
            (missing as u64, extra as u64)
        } else {
            (on_disk.len() as u64, 0)
        };
        Ok(Completeness {
            freshness,
            on_disk: on_disk.len() as u64,
            missing,
            extra,
        })
    }

    /// The state it was found in when opened.
    #[cfg(test)]
    pub(crate) fn opened_as(&self) -> &Freshness {
        &self.opened_as
    }

    /// What it holds after the rebuild `open` did, if it had to.
    #[cfg(test)]
    pub(crate) fn rebuilt(&self) -> Option<RebuildStats> {
        self.rebuilt
    }

    /// Every name, sorted by name.
    pub(crate) fn list(&self) -> Result<Vec<NameSummary>, CatalogError> {
        db::list(&self.conn).map_err(|e| self.err(e))
    }

    /// The versions of exactly `name`, ascending.
    pub(crate) fn versions(&self, name: &str) -> Result<Vec<Entry>, CatalogError> {
        db::versions(&self.conn, name).map_err(|e| self.err(e))
    }

    /// Every version of every name, by name then version.
    pub(crate) fn entries(&self) -> Result<Vec<Entry>, CatalogError> {
        db::all(&self.conn).map_err(|e| self.err(e))
    }

    pub(crate) fn entry(&self, name: &str, version: u64) -> Result<Option<Entry>, CatalogError> {
        db::one(&self.conn, name, version).map_err(|e| self.err(e))
    }

    pub(crate) fn latest(&self, name: &str) -> Result<Option<Entry>, CatalogError> {
        db::latest(&self.conn, name).map_err(|e| self.err(e))
    }

    pub(crate) fn upsert(&mut self, entry: &Entry) -> Result<(), CatalogError> {
        db::upsert(&self.conn, entry).map_err(|e| self.err(e))
    }

    pub(crate) fn remove_version(&mut self, name: &str, version: u64) -> Result<(), CatalogError> {
        db::remove(&self.conn, name, version).map_err(|e| self.err(e))
    }

    fn err(&self, e: rusqlite::Error) -> CatalogError {
        CatalogError::sql(&self.path, e)
    }
}

/// The placement's data dir, absolute so `meta.data_dir` does not depend on
/// the directory swamp runs from.
fn data_dir(layout: &Layout, placement: &Placement) -> Result<PathBuf, CatalogError> {
    let dir = layout.tier_dir(placement, Tier::Data);
    std::path::absolute(&dir).map_err(|source| CatalogError::Io {
        action: "resolve",
        path: dir,
        source,
    })
}

fn data_dir_key(dir: &Path) -> String {
    dir.to_string_lossy().into_owned()
}

fn exists(path: &Path) -> Result<bool, CatalogError> {
    path.try_exists().map_err(|source| CatalogError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    })
}

fn remove_db(path: &Path) -> Result<(), CatalogError> {
    db::remove_files(path).map_err(|(path, source)| CatalogError::RemoveCorrupt { path, source })
}

/// Connects (recovering from a corrupt file) and rebuilds when `force` or
/// stale. Returns the state it was found in and, if rebuilt, what it holds.
fn connect_fresh(
    path: &Path,
    data_dir: &Path,
    force: bool,
) -> Result<(Connection, Freshness, Option<RebuildStats>), CatalogError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| CatalogError::Io {
            action: "create",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    let key = data_dir_key(data_dir);
    let (mut conn, found) = match db::connect(path).and_then(|c| {
        let f = db::freshness(&c, &key)?;
        Ok((c, f))
    }) {
        Ok(found) => found,
        Err(e) if db::is_corrupt(&e) => (recreate(path)?, Freshness::Corrupt),
        Err(e) => return Err(CatalogError::sql(path, e)),
    };
    if found == Freshness::Fresh && !force {
        return Ok((conn, found, None));
    }
    match rebuild_from_disk(&mut conn, path, data_dir, &key, force) {
        Ok(stats) => Ok((conn, found, Some(stats))),
        // Damage deeper than the header shows up only when the tables are
        // touched; start over from an empty file.
        Err(e) if e.is_corrupt() => {
            drop(conn);
            let mut conn = recreate(path)?;
            let stats = rebuild_from_disk(&mut conn, path, data_dir, &key, true)?;
            Ok((conn, Freshness::Corrupt, Some(stats)))
        }
        Err(e) => Err(e),
    }
}

/// Deletes a corrupt database with its sidecars and connects to a new one.
fn recreate(path: &Path) -> Result<Connection, CatalogError> {
    remove_db(path)?;
    db::connect(path).map_err(|e| CatalogError::sql(path, e))
}

/// Replaces all rows with what is on disk, in one write transaction.
///
/// Files are hashed in a first scan outside the transaction, so other
/// processes are not kept waiting (past their busy timeout) on the hashing;
/// a second scan inside it picks up whatever changed meanwhile, reusing the
/// hashes of unchanged files. Unless `force`, a catalog another process made
/// fresh while we waited for the lock is left as it is.
fn rebuild_from_disk(
    conn: &mut Connection,
    path: &Path,
    data_dir: &Path,
    key: &str,
    force: bool,
) -> Result<RebuildStats, CatalogError> {
    let sql = |e| CatalogError::sql(path, e);
    let first = scan::scan(data_dir, &HashMap::new())?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    if !force && db::freshness(&tx, key).map_err(sql)? == Freshness::Fresh {
        return db::stats(&tx).map_err(sql);
    }
    let second = scan::scan(data_dir, &first)?;
    db::replace_all(&tx, key, second.values().map(|s| &s.entry)).map_err(sql)?;
    let stats = db::stats(&tx).map_err(sql)?;
    tx.commit().map_err(sql)?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, DatastoreConfig, Namespace};
    use crate::fsutil;
    use crate::layout::TierPath;
    use std::fs;
    use uuid::Uuid;

    /// The shared temp repo, with this module's helpers.
    struct Repo(crate::layout::test_support::TempRepo);

    impl std::ops::Deref for Repo {
        type Target = crate::layout::test_support::TempRepo;
        fn deref(&self) -> &Self::Target {
            &self.0
        }
    }

    fn repo(namespace: Option<&str>) -> Repo {
        Repo(crate::layout::test_support::TempRepo::new(namespace))
    }

    impl Repo {
        /// Writes a version file the way `swamp data put` leaves it.
        fn put(&self, name: &str, version: u64, content: &[u8]) {
            fsutil::atomic_write(&self.file(&format!("data/{name}/{version}/raw")), content)
                .unwrap();
        }

        fn open(&self) -> Catalog {
            Catalog::open(&self.layout, &self.placement).unwrap()
        }
    }

    fn names(c: &Catalog) -> Vec<(String, u64)> {
        c.entries()
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.version))
            .collect()
    }

    #[test]
    fn first_open_indexes_the_files() {
        let r = repo(None);
        r.put("model/output", 1, b"a");
        r.put("model/output", 2, b"bbb");
        r.put("other", 1, b"cc");
        let c = r.open();
        assert_eq!(c.opened_as(), &Freshness::Missing);
        assert_eq!(
            c.rebuilt(),
            Some(RebuildStats {
                names: 2,
                versions: 3,
                bytes: 6
            })
        );
        assert_eq!(
            c.versions("model/output").unwrap(),
            vec![
                Entry {
                    name: "model/output".into(),
                    version: 1,
                    size: 1,
                    sha256: fsutil::sha256_bytes(b"a"),
                    path: "data/model/output/1/raw".into(),
                },
                Entry {
                    name: "model/output".into(),
                    version: 2,
                    size: 3,
                    sha256: fsutil::sha256_bytes(b"bbb"),
                    path: "data/model/output/2/raw".into(),
                },
            ]
        );
        assert_eq!(
            c.list().unwrap(),
            vec![
                NameSummary {
                    name: "model/output".into(),
                    latest_version: 2,
                    latest_size: 3,
                    versions: 2,
                    total_size: 4
                },
                NameSummary {
                    name: "other".into(),
                    latest_version: 1,
                    latest_size: 2,
                    versions: 1,
                    total_size: 2
                },
            ]
        );
        // A second open finds it fresh and does not rebuild.
        drop(c);
        let c = r.open();
        assert_eq!(c.opened_as(), &Freshness::Fresh);
        assert_eq!(c.rebuilt(), None);
    }

    #[test]
    fn wal_mode_is_on() {
        let r = repo(None);
        let c = r.open();
        let mode: String = c
            .conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        // And it is recorded in the file, for every later connection.
        drop(c);
        let other = Connection::open(r.layout.catalog_path()).unwrap();
        let mode: String = other
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn survives_deletion_by_rebuilding() {
        let r = repo(None);
        r.put("a", 1, b"x");
        drop(r.open());
        for f in db::files(&r.layout.catalog_path()) {
            let _ = fs::remove_file(f);
        }
        assert_eq!(
            Catalog::check(&r.layout, &r.placement).unwrap(),
            Freshness::Missing
        );
        let c = r.open();
        assert_eq!(c.opened_as(), &Freshness::Missing);
        assert!(c.rebuilt().is_some());
        assert_eq!(names(&c), vec![("a".to_string(), 1)]);
    }

    #[test]
    fn corrupt_file_is_deleted_and_rebuilt() {
        let r = repo(None);
        r.put("a", 1, b"x");
        drop(r.open());
        let path = r.layout.catalog_path();
        // Stale sidecars of the old database must go too.
        for f in db::files(&path) {
            let _ = fs::remove_file(f);
        }
        fs::write(
            &path,
            b"this is not a sqlite database, just garbage bytes ".repeat(64),
        )
        .unwrap();
        let mut journal = path.as_os_str().to_owned();
        journal.push("-journal");
        fs::write(&journal, b"garbage journal").unwrap();
        assert_eq!(
            Catalog::check(&r.layout, &r.placement).unwrap(),
            Freshness::Corrupt
        );

        let c = r.open();
        assert_eq!(c.opened_as(), &Freshness::Corrupt);
        assert_eq!(names(&c), vec![("a".to_string(), 1)]);
        assert!(!Path::new(&journal).exists());
        drop(c);
        assert_eq!(r.open().opened_as(), &Freshness::Fresh);
    }

    #[test]
    fn corruption_found_only_while_rebuilding_starts_over() {
        let r = repo(None);
        r.put("a", 1, b"x");
        drop(r.open());
        Catalog::invalidate(&r.layout).unwrap();
        let path = r.layout.catalog_path();
        // Smash the `versions` table's root page; page 1 and `meta` stay
        // readable, so the damage shows only when the rebuild drops it.
        let (page_size, root): (i64, i64) = {
            let conn = Connection::open(&path).unwrap();
            let page_size = conn
                .query_row("PRAGMA page_size", [], |r| r.get(0))
                .unwrap();
            let root = conn
                .query_row(
                    "SELECT rootpage FROM sqlite_master WHERE name = 'versions'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            (page_size, root)
        };
        let mut bytes = fs::read(&path).unwrap();
        let start = ((root - 1) * page_size) as usize;
        bytes[start..start + page_size as usize].fill(0xFF);
        fs::write(&path, bytes).unwrap();
        assert_eq!(
            Catalog::check(&r.layout, &r.placement).unwrap(),
            Freshness::Invalidated
        );

        let c = r.open();
        assert_eq!(c.opened_as(), &Freshness::Corrupt);
        assert_eq!(names(&c), vec![("a".to_string(), 1)]);
    }

    #[test]
    fn explicit_rebuild_fixes_a_corrupt_file() {
        let r = repo(None);
        r.put("a", 1, b"xy");
        fs::create_dir_all(r.layout.catalog_path().parent().unwrap()).unwrap();
        fs::write(r.layout.catalog_path(), vec![0xAB; 8192]).unwrap();
        let stats = Catalog::rebuild(&r.layout, &r.placement).unwrap();
        assert_eq!(
            stats,
            RebuildStats {
                names: 1,
                versions: 1,
                bytes: 2
            }
        );
        assert_eq!(r.open().opened_as(), &Freshness::Fresh);
    }

    #[test]
    fn invalidate_makes_the_next_open_rebuild_and_drop_deleted_files() {
        let r = repo(None);
        r.put("a", 1, b"x");
        r.put("a", 2, b"y");
        r.put("b", 1, b"z");
        assert_eq!(names(&r.open()).len(), 3);
        // Files deleted behind the catalog's back (as apply does when moving).
        fs::remove_dir_all(r.file("data/a/2")).unwrap();
        fs::remove_dir_all(r.file("data/b")).unwrap();
        r.put("c", 1, b"new");
        Catalog::invalidate(&r.layout).unwrap();
        assert_eq!(
            Catalog::check(&r.layout, &r.placement).unwrap(),
            Freshness::Invalidated
        );
        let c = r.open();
        assert_eq!(c.opened_as(), &Freshness::Invalidated);
        assert_eq!(names(&c), vec![("a".to_string(), 1), ("c".to_string(), 1)]);
    }

    #[test]
    fn invalidate_without_a_catalog_does_nothing() {
        let r = repo(None);
        Catalog::invalidate(&r.layout).unwrap();
        assert!(!r.layout.catalog_path().exists());
    }

    #[test]
    fn a_catalog_of_another_data_dir_is_rebuilt() {
        let solo = repo(None);
        solo.put("solo-only", 1, b"x");
        drop(solo.open());
        // Same repo, now namespaced: same catalog file, other data dir.
        let config = Config::new(
            Uuid::nil(),
            DatastoreConfig::Local,
            Some(Namespace::parse("homelab").unwrap()),
        );
        let ns = config.target();
        let layout = Layout::new(solo.layout.repo(), &config, Path::new("/unused")).unwrap();
        fsutil::atomic_write(
            &layout.file_path(&ns, &TierPath::parse("data/ns-only/1/raw").unwrap()),
            b"y",
        )
        .unwrap();
        let c = Catalog::open(&layout, &ns).unwrap();
        assert!(matches!(c.opened_as(), Freshness::OtherDataDir { .. }));
        assert_eq!(names(&c), vec![("ns-only".to_string(), 1)]);
    }

    #[test]
    fn an_older_schema_is_rebuilt() {
        let r = repo(None);
        r.put("a", 1, b"x");
        drop(r.open());
        let conn = Connection::open(r.layout.catalog_path()).unwrap();
        conn.execute(
            "UPDATE meta SET value = '0' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
        conn.execute("DELETE FROM versions", []).unwrap();
        drop(conn);
        let c = r.open();
        assert_eq!(
            c.opened_as(),
            &Freshness::Schema {
                found: Some("0".into())
            }
        );
        assert_eq!(names(&c), vec![("a".to_string(), 1)]);
    }

    #[test]
    fn namespaced_catalog_lives_in_dot_swamp_data_and_ignores_catalog_files() {
        let r = repo(Some("homelab"));
        r.put("a", 1, b"x");
        // Look-alikes of the catalog inside the namespaced data dir, and
        // other files that are not versions.
        for junk in [
            "_catalog.db",
            "_catalog.db-wal",
            "a/_catalog.db",
            "a/1/.swamp-tmp-1",
        ] {
            fs::write(r.file(&format!("data/{junk}")), b"junk").unwrap();
        }
        let c = r.open();
        assert_eq!(c.path, r.layout.repo().join(".swamp/data/_catalog.db"));
        assert!(c.path.exists());
        assert!(r.layout.repo().join(".swamp/homelab/data/a/1/raw").exists());
        assert_eq!(names(&c), vec![("a".to_string(), 1)]);
    }

    #[test]
    fn solo_catalog_does_not_index_itself() {
        let r = repo(None);
        r.put("a", 1, b"x");
        drop(r.open());
        // The catalog and its sidecars now sit inside the scanned data dir.
        let stats = Catalog::rebuild(&r.layout, &r.placement).unwrap();
        assert_eq!(stats.versions, 1);
        assert_eq!(names(&r.open()), vec![("a".to_string(), 1)]);
    }

    #[test]
    fn ignores_ambiguous_and_invalid_layouts() {
        let r = repo(None);
        r.put("a", 1, b"x");
        for junk in ["a/01/raw", "a/0/raw", "a/1/2/raw", "_x/1/raw", "b/raw"] {
            fsutil::atomic_write(&r.file(&format!("data/{junk}")), b"junk").unwrap();
        }
        assert_eq!(names(&r.open()), vec![("a".to_string(), 1)]);
    }

    #[cfg(unix)]
    #[test]
    fn does_not_follow_symlinks() {
        let r = repo(None);
        let outside = r.layout.repo().join("outside");
        fs::create_dir_all(outside.join("1")).unwrap();
        fs::write(outside.join("1/raw"), b"x").unwrap();
        fs::create_dir_all(r.file("data/a/1")).unwrap();
        fs::create_dir_all(r.file("data/b")).unwrap();
        // A linked version file, and a linked name dir holding `1/raw`.
        std::os::unix::fs::symlink(outside.join("1/raw"), r.file("data/a/1/raw")).unwrap();
        std::os::unix::fs::symlink(&outside, r.file("data/b/linked")).unwrap();
        assert!(names(&r.open()).is_empty());
    }

    #[test]
    fn upsert_and_remove_version() {
        let r = repo(None);
        let mut c = r.open();
        let e = Entry {
            name: "a".into(),
            version: 1,
            size: 1,
            sha256: "h".into(),
            path: "data/a/1/raw".into(),
        };
        c.upsert(&e).unwrap();
        c.upsert(&Entry {
            size: 2,
            ..e.clone()
        })
        .unwrap();
        assert_eq!(c.entry("a", 1).unwrap().unwrap().size, 2);
        assert_eq!(c.latest("a").unwrap().unwrap().version, 1);
        c.remove_version("a", 1).unwrap();
        assert!(c.versions("a").unwrap().is_empty());
        assert!(c.list().unwrap().is_empty());
        assert_eq!(c.latest("a").unwrap(), None);
    }

    #[test]
    fn errors_name_the_file_and_leave_the_fix_to_the_hint() {
        let r = repo(None);
        let c = r.open();
        let e = c.err(rusqlite::Error::QueryReturnedNoRows);
        let msg = e.to_string();
        assert!(msg.contains("_catalog.db"), "{msg}");
        // The remedy is the CLI's hint (cli::hints), never said twice.
        assert!(!msg.contains("swamp catalog rebuild"), "{msg}");
    }
}
