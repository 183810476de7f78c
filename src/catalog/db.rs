//! The SQLite side of the catalog: connecting (WAL, busy timeout), the
//! schema, telling a fresh catalog from a stale one, the full replace, and
//! the row queries. Callers in [`super`] turn its `rusqlite` errors into
//! [`super::CatalogError`]s that name the file.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, Row, Transaction, params};

use super::{Entry, Freshness, NameSummary, RebuildStats};

/// Bump when the tables change: an older catalog is then rebuilt.
pub(crate) const SCHEMA_VERSION: &str = "1";

const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);

const CREATE_TABLES: &str = "
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE versions (
        name    TEXT    NOT NULL,
        version INTEGER NOT NULL,
        size    INTEGER NOT NULL,
        sha256  TEXT    NOT NULL,
        path    TEXT    NOT NULL,
        PRIMARY KEY (name, version)
    ) WITHOUT ROWID;
";

/// Opens (creating) the database and switches it to WAL, so readers never
/// wait for a writer.
pub(crate) fn connect(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    ensure_wal(&conn)?;
    // Safe with WAL (no corruption on power loss); losing the last commit
    // only costs a rebuild, since the catalog is derived state.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

/// Switches the file to WAL once (the mode is stored in the file).
///
/// The switch needs an exclusive lock and SQLite reports a conflict with
/// another connection at once, without its busy handler, so two processes
/// creating the catalog together would fail; we retry up to the busy
/// timeout instead.
fn ensure_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        // The first statement reads the header: a garbage file fails here.
        let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
            // A filesystem without WAL support keeps its mode; still usable.
            Ok(_) => return Ok(()),
            Err(e)
                if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Opens an existing database without creating it or changing its mode.
pub(crate) fn connect_existing(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

/// Errors that mean the file itself is damaged (not merely busy or locked).
pub(crate) fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    )
}

/// The database and each SQLite sidecar that may sit beside it.
pub(crate) fn files(path: &Path) -> Vec<PathBuf> {
    let mut all = vec![path.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = OsString::from(path.as_os_str());
        p.push(suffix);
        all.push(PathBuf::from(p));
    }
    all
}

/// Deletes the database and its sidecars; missing ones are fine.
pub(crate) fn remove_files(path: &Path) -> Result<(), (PathBuf, io::Error)> {
    for f in files(path) {
        match std::fs::remove_file(&f) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err((f, e)),
        }
    }
    Ok(())
}

/// Whether the catalog can be trusted as an index of `data_dir`.
pub(crate) fn freshness(conn: &Connection, data_dir: &str) -> rusqlite::Result<Freshness> {
    let tables: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'versions')",
        [],
        |r| r.get(0),
    )?;
    if tables != 2 {
        return Ok(Freshness::Missing);
    }
    let meta = |key: &str| -> rusqlite::Result<Option<String>> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
    };
    let schema = meta("schema_version")?;
    if schema.as_deref() != Some(SCHEMA_VERSION) {
        return Ok(Freshness::Schema { found: schema });
    }
    if meta("populated")?.as_deref() != Some("1") {
        return Ok(Freshness::Invalidated);
    }
    match meta("data_dir")? {
        Some(indexed) if indexed == data_dir => Ok(Freshness::Fresh),
        indexed => Ok(Freshness::OtherDataDir {
            indexed: indexed.unwrap_or_default(),
        }),
    }
}

/// Clears `populated` so the next open rebuilds.
pub(crate) fn mark_stale(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO meta (key, value) VALUES ('populated', '0')
             ON CONFLICT (key) DO UPDATE SET value = excluded.value;",
    )
}

/// Replaces everything with `entries`, inside the caller's transaction.
/// Dropping the tables (rather than deleting rows) also upgrades any older
/// or unknown schema.
pub(crate) fn replace_all<'e>(
    tx: &Transaction<'_>,
    data_dir: &str,
    entries: impl Iterator<Item = &'e Entry>,
) -> rusqlite::Result<()> {
    tx.execute_batch("DROP TABLE IF EXISTS versions; DROP TABLE IF EXISTS meta;")?;
    tx.execute_batch(CREATE_TABLES)?;
    {
        let mut insert = tx.prepare(
            "INSERT INTO versions (name, version, size, sha256, path) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for e in entries {
            insert.execute(params![
                e.name,
                int(e.version)?,
                int(e.size)?,
                e.sha256,
                e.path
            ])?;
        }
    }
    let mut meta = tx.prepare("INSERT INTO meta (key, value) VALUES (?1, ?2)")?;
    meta.execute(["schema_version", SCHEMA_VERSION])?;
    meta.execute(["data_dir", data_dir])?;
    meta.execute(["populated", "1"])?;
    Ok(())
}

pub(crate) fn stats(conn: &Connection) -> rusqlite::Result<RebuildStats> {
    conn.query_row(
        "SELECT count(DISTINCT name), count(*), coalesce(sum(size), 0) FROM versions",
        [],
        |r| {
            Ok(RebuildStats {
                names: uint(r, 0)?,
                versions: uint(r, 1)?,
                bytes: uint(r, 2)?,
            })
        },
    )
}

pub(crate) fn list(conn: &Connection) -> rusqlite::Result<Vec<NameSummary>> {
    let mut stmt = conn.prepare(
        "SELECT v.name, v.version, v.size, g.n, g.total
         FROM versions v
         JOIN (SELECT name, max(version) AS latest, count(*) AS n, sum(size) AS total
               FROM versions GROUP BY name) g
           ON g.name = v.name AND g.latest = v.version
         ORDER BY v.name",
    )?;
    stmt.query_map([], |r| {
        Ok(NameSummary {
            name: r.get(0)?,
            latest_version: uint(r, 1)?,
            latest_size: uint(r, 2)?,
            versions: uint(r, 3)?,
            total_size: uint(r, 4)?,
        })
    })?
    .collect()
}

const ENTRY_COLUMNS: &str = "SELECT name, version, size, sha256, path FROM versions";

pub(crate) fn versions(conn: &Connection, name: &str) -> rusqlite::Result<Vec<Entry>> {
    let mut stmt = conn.prepare(&format!("{ENTRY_COLUMNS} WHERE name = ?1 ORDER BY version"))?;
    stmt.query_map([name], entry)?.collect()
}

pub(crate) fn all(conn: &Connection) -> rusqlite::Result<Vec<Entry>> {
    let mut stmt = conn.prepare(&format!("{ENTRY_COLUMNS} ORDER BY name, version"))?;
    stmt.query_map([], entry)?.collect()
}

pub(crate) fn one(conn: &Connection, name: &str, version: u64) -> rusqlite::Result<Option<Entry>> {
    conn.query_row(
        &format!("{ENTRY_COLUMNS} WHERE name = ?1 AND version = ?2"),
        params![name, int(version)?],
        entry,
    )
    .optional()
}

pub(crate) fn latest(conn: &Connection, name: &str) -> rusqlite::Result<Option<Entry>> {
    conn.query_row(
        &format!("{ENTRY_COLUMNS} WHERE name = ?1 ORDER BY version DESC LIMIT 1"),
        [name],
        entry,
    )
    .optional()
}

pub(crate) fn upsert(conn: &Connection, e: &Entry) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO versions (name, version, size, sha256, path) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (name, version) DO UPDATE
             SET size = excluded.size, sha256 = excluded.sha256, path = excluded.path",
        params![e.name, int(e.version)?, int(e.size)?, e.sha256, e.path],
    )?;
    Ok(())
}

pub(crate) fn remove(conn: &Connection, name: &str, version: u64) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM versions WHERE name = ?1 AND version = ?2",
        params![name, int(version)?],
    )?;
    Ok(())
}

fn entry(r: &Row<'_>) -> rusqlite::Result<Entry> {
    Ok(Entry {
        name: r.get(0)?,
        version: uint(r, 1)?,
        size: uint(r, 2)?,
        sha256: r.get(3)?,
        path: r.get(4)?,
    })
}

/// SQLite integers are signed; a negative one can only come from a
/// hand-edited file, and is reported like any other bad column.
fn uint(r: &Row<'_>, idx: usize) -> rusqlite::Result<u64> {
    let v: i64 = r.get(idx)?;
    u64::try_from(v).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(idx, v))
}

fn int(v: u64) -> rusqlite::Result<i64> {
    i64::try_from(v).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}
