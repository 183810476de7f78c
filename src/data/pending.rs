//! Reads while a layout change is pending: the versions a recorded source
//! placement still holds (data stays readable until the move
//! converges). The target's catalog indexes the target only, so sources
//! are read from their files: one name's version dirs for `get`, a scan
//! of the data dir for `list`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{DataError, DataStore};
use crate::catalog::name::{RAW_FILE, parse_version};
use crate::catalog::{Entry, NameSummary};
use crate::layout::{Tier, TierPath};
use crate::state::HashCache;

/// Every version of exactly `name` at the sources, with its `raw` file;
/// the first source holding a version wins.
pub(super) fn versions(
    store: &DataStore<'_>,
    name: &str,
) -> Result<Vec<(Entry, PathBuf)>, DataError> {
    let mut found: BTreeMap<u64, (Entry, PathBuf)> = BTreeMap::new();
    let mut hashes = HashCache::load(&store.layout.hash_cache_path());
    for source in &store.sources {
        let name_dir = store
            .layout
            .file_path(source, &TierPath::parse(&format!("data/{name}"))?);
        if store.link_in(source, &name_dir)?.is_some() {
            continue; // never followed; the plan reports it
        }
        let entries = match std::fs::read_dir(&name_dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(DataError::io("read", &name_dir, e)),
        };
        for dir in entries {
            let dir = dir.map_err(|e| DataError::io("read", &name_dir, e))?;
            let Some(version) = dir.file_name().to_str().and_then(parse_version) else {
                continue;
            };
            if found.contains_key(&version) || !dir.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let raw = dir.path().join(RAW_FILE);
            let meta = match std::fs::symlink_metadata(&raw) {
                Ok(m) if m.file_type().is_file() => m,
                _ => continue,
            };
            let sha256 = hashes
                .sha256(&raw, &meta)
                .map_err(|e| DataError::io("read", &raw, e))?;
            let entry = Entry {
                name: name.to_string(),
                version,
                size: meta.len(),
                sha256: sha256.hex(),
                path: super::raw_tier_path(name, version),
            };
            found.insert(version, (entry, raw));
        }
    }
    let _ = hashes.save_keeping();
    Ok(found.into_values().collect())
}

/// Every version at the sources.
pub(super) fn all(store: &DataStore<'_>) -> Result<Vec<Entry>, DataError> {
    let mut out = Vec::new();
    for source in &store.sources {
        let dir = store.layout.tier_dir(source, Tier::Data);
        if store.link_in(source, &dir)?.is_some() {
            continue; // never followed; the plan reports it
        }
        out.extend(crate::catalog::scan_entries(&dir)?);
    }
    Ok(out)
}

/// One listing of the target's versions and the sources' (the target wins
/// for the same version).
pub(super) fn merge(target: Vec<Entry>, pending: Vec<Entry>) -> Vec<NameSummary> {
    let mut by_name: BTreeMap<String, BTreeMap<u64, Entry>> = BTreeMap::new();
    for e in pending.into_iter().chain(target) {
        by_name
            .entry(e.name.clone())
            .or_default()
            .insert(e.version, e);
    }
    by_name
        .into_iter()
        .filter_map(|(name, versions)| {
            let (&latest_version, latest) = versions.iter().next_back()?;
            Some(NameSummary {
                name,
                latest_version,
                latest_size: latest.size,
                versions: versions.len() as u64,
                total_size: versions.values().map(|e| e.size).sum(),
            })
        })
        .collect()
}
