//! Walks a placement's `data/` directory and finds its version files,
//! `<data dir>/<name segments…>/<version>/raw`, with size and sha256.
//! Everything else (the catalog and its sidecars, temp files, stray
//! files, symlinks) is ignored.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::time::SystemTime;

use walkdir::WalkDir;

use super::name::{RAW_FILE, check_name, parse_version};
use super::{CatalogError, Entry};
use crate::fsutil;
use crate::layout::{is_catalog_name, is_swamp_temp};

/// One version file found on disk; `mtime` lets a second scan reuse the hash.
#[derive(Debug, Clone)]
pub(crate) struct Scanned {
    pub entry: Entry,
    mtime: Option<SystemTime>,
}

/// Scans `data_dir`. A file whose path, size and mtime match one in `reuse`
/// takes its hash from there instead of being read again.
pub(crate) fn scan(
    data_dir: &Path,
    reuse: &HashMap<String, Scanned>,
) -> Result<HashMap<String, Scanned>, CatalogError> {
    let mut found = HashMap::new();
    let walker = WalkDir::new(data_dir)
        .follow_links(false)
        .into_iter()
        // `_`/`.` directories can hold no version (names refuse them).
        .filter_entry(|e| {
            e.depth() == 0
                || !e.file_type().is_dir()
                || !e
                    .file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with('_') || n.starts_with('.'))
        });
    for item in walker {
        let item = match item {
            Ok(item) => item,
            // No data dir yet, or a file removed while we walk: nothing to index.
            Err(e)
                if e.io_error()
                    .is_some_and(|io| io.kind() == io::ErrorKind::NotFound) =>
            {
                continue;
            }
            Err(e) => {
                let path = e.path().unwrap_or(data_dir).to_path_buf();
                return Err(CatalogError::Io {
                    action: "read",
                    path,
                    source: e.into(),
                });
            }
        };
        if let Some(scanned) = scan_one(&item, data_dir, reuse)? {
            found.insert(scanned.entry.path.clone(), scanned);
        }
    }
    Ok(found)
}

/// The version a walked file is, if any (the catalog, temp files and what
/// the data workload could not have written are none; a file removed
/// meanwhile is none either).
fn scan_one(
    item: &walkdir::DirEntry,
    data_dir: &Path,
    reuse: &HashMap<String, Scanned>,
) -> Result<Option<Scanned>, CatalogError> {
    // The catalog sits in the solo data dir, and temp files are
    // interrupted writes: neither is ever data.
    if !item.file_type().is_file()
        || item
            .file_name()
            .to_str()
            .is_none_or(|n| is_catalog_name(n) || is_swamp_temp(n))
    {
        return Ok(None);
    }
    let Ok(rel) = item.path().strip_prefix(data_dir) else {
        return Ok(None);
    };
    let Some((name, version)) = version_of(rel) else {
        return Ok(None);
    };
    let tier_path = format!("data/{name}/{version}/{RAW_FILE}");
    let meta = match item.metadata() {
        Ok(m) => m,
        Err(e)
            if e.io_error()
                .is_some_and(|io| io.kind() == io::ErrorKind::NotFound) =>
        {
            return Ok(None);
        }
        Err(e) => {
            return Err(CatalogError::Io {
                action: "read",
                path: item.path().to_path_buf(),
                source: e.into(),
            });
        }
    };
    let size = meta.len();
    let mtime = meta.modified().ok();
    let sha256 = match reuse.get(&tier_path) {
        Some(prev) if prev.entry.size == size && mtime.is_some() && prev.mtime == mtime => {
            prev.entry.sha256.clone()
        }
        _ => match fsutil::sha256_file(item.path()) {
            Ok(h) => h,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(CatalogError::Io {
                    action: "hash",
                    path: item.path().to_path_buf(),
                    source,
                });
            }
        },
    };
    let entry = Entry {
        name,
        version,
        size,
        sha256,
        path: tier_path,
    };
    Ok(Some(Scanned { entry, mtime }))
}

/// `model/output/3/raw` → (`model/output`, 3); `None` for anything the data
/// workload could not have written.
pub(crate) fn version_of(rel: &Path) -> Option<(String, u64)> {
    let parts: Vec<&str> = rel
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect::<Option<_>>()?;
    let [name_parts @ .., version, file] = parts.as_slice() else {
        return None;
    };
    if *file != RAW_FILE || name_parts.is_empty() {
        return None;
    }
    let version = parse_version(version)?;
    let name = name_parts.join("/");
    check_name(&name).ok()?;
    Some((name, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_only_version_files() {
        let ok = |p: &str| version_of(Path::new(p));
        assert_eq!(ok("a/1/raw"), Some(("a".into(), 1)));
        assert_eq!(ok("model/output/12/raw"), Some(("model/output".into(), 12)));
        for ignored in [
            "_catalog.db",
            "_catalog.db-wal",
            "a/raw",
            "1/raw",
            "a/01/raw",
            "a/0/raw",
            "a/1/raw2",
            "a/1/2/raw",
            "a/1/.swamp-tmp-x",
            "_x/1/raw",
            "a/x/raw",
        ] {
            assert_eq!(ok(ignored), None, "{ignored}");
        }
    }

    #[test]
    fn missing_data_dir_scans_empty() {
        let dir = tempfile::tempdir().unwrap();
        let found = scan(&dir.path().join("nope"), &HashMap::new()).unwrap();
        assert!(found.is_empty());
    }

    #[test]
    fn reuses_hashes_of_unchanged_files_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/1")).unwrap();
        std::fs::write(dir.path().join("a/1/raw"), b"abc").unwrap();
        let first = scan(dir.path(), &HashMap::new()).unwrap();
        assert_eq!(
            first["data/a/1/raw"].entry.sha256,
            fsutil::sha256_bytes(b"abc")
        );
        // A planted hash is reused while path, size and mtime are unchanged…
        let mut planted = first.clone();
        planted.get_mut("data/a/1/raw").unwrap().entry.sha256 = "planted".into();
        let second = scan(dir.path(), &planted).unwrap();
        assert_eq!(second["data/a/1/raw"].entry.sha256, "planted");
        // …but not once the size differs.
        std::fs::write(dir.path().join("a/1/raw"), b"abcd").unwrap();
        let third = scan(dir.path(), &planted).unwrap();
        assert_eq!(
            third["data/a/1/raw"].entry.sha256,
            fsutil::sha256_bytes(b"abcd")
        );
    }
}
