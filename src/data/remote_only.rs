//! Versions the remote holds that this cache has not fetched
//! (`[sync] hydration = "lazy"`): they count for `list`, for the next
//! version number `put` claims, and for which version `get` means; `get`
//! of one answers [`DataError::NotHydrated`] so the caller fetches the
//! file (a pull of that one file) and reads it then.

use std::path::Path;

use super::{DataError, DataStore};
use crate::catalog::Entry;
use crate::layout::{Tier, TierPath};

/// One version only the remote holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemoteVersion {
    pub name: String,
    pub version: u64,
    pub size: u64,
    pub path: TierPath,
}

/// The data versions among `paths` (tier paths with sizes); anything that
/// is not `data/NAME/VERSION/raw` is not a version.
pub(crate) fn versions<'p>(
    paths: impl IntoIterator<Item = (&'p TierPath, u64)>,
) -> Vec<RemoteVersion> {
    let mut out: Vec<RemoteVersion> = paths
        .into_iter()
        .filter(|(p, _)| p.tier() == Tier::Data)
        .filter_map(|(p, size)| {
            let rel = p.as_str().strip_prefix("data/")?;
            let (name, version) = crate::catalog::version_of(Path::new(rel))?;
            Some(RemoteVersion {
                name,
                version,
                size,
                path: p.clone(),
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.name, a.version).cmp(&(&b.name, b.version)));
    out
}

impl DataStore<'_> {
    /// The remote-only versions of exactly `name`, oldest first.
    pub(super) fn remote_only_of(&self, name: &str) -> &[RemoteVersion] {
        let start = self.remote_only.partition_point(|r| r.name.as_str() < name);
        let end = start
            + self.remote_only[start..]
                .iter()
                .take_while(|r| r.name == name)
                .count();
        &self.remote_only[start..end]
    }

    /// What `get` answers once the local answer is known: the local one,
    /// unless the version asked for (or a newer latest) is remote-only.
    pub(super) fn unless_remote_only(
        &self,
        name: &str,
        version: Option<u64>,
        local: Result<(Entry, std::path::PathBuf), DataError>,
    ) -> Result<(Entry, std::path::PathBuf), DataError> {
        let remote = self.remote_only_of(name);
        let not_hydrated = |r: &RemoteVersion| DataError::NotHydrated {
            name: name.to_string(),
            version: r.version,
            path: r.path.clone(),
        };
        match (version, &local) {
            (_, Err(e))
                if !matches!(
                    e,
                    DataError::NotFound { .. } | DataError::VersionNotFound { .. }
                ) =>
            {
                local
            }
            (Some(v), Err(_)) => match remote.iter().find(|r| r.version == v) {
                Some(r) => Err(not_hydrated(r)),
                None => match (local, remote.last()) {
                    (Err(DataError::VersionNotFound { latest, .. }), Some(top)) => {
                        Err(DataError::VersionNotFound {
                            name: name.into(),
                            version: v,
                            latest: latest.max(top.version),
                        })
                    }
                    (Err(DataError::NotFound { .. }), Some(top)) => {
                        Err(DataError::VersionNotFound {
                            name: name.into(),
                            version: v,
                            latest: top.version,
                        })
                    }
                    (local, _) => local,
                },
            },
            (Some(_), Ok(_)) => local,
            (None, Ok((entry, _))) => match remote.last() {
                Some(top) if top.version > entry.version => Err(not_hydrated(top)),
                _ => local,
            },
            (None, Err(_)) => match remote.last() {
                Some(top) => Err(not_hydrated(top)),
                None => local,
            },
        }
    }

    /// The remote-only versions as entries (no sha256: never read), for
    /// listings.
    pub(super) fn remote_only_entries(&self) -> Vec<Entry> {
        self.remote_only
            .iter()
            .map(|r| Entry {
                name: r.name.clone(),
                version: r.version,
                size: r.size,
                sha256: String::new(),
                path: r.path.to_string(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_version_files_of_the_data_tier_are_versions() {
        let paths = [
            TierPath::parse("data/b/2/raw").unwrap(),
            TierPath::parse("data/a/1/raw").unwrap(),
            TierPath::parse("data/model/out/10/raw").unwrap(),
            TierPath::parse("data/a/x/raw").unwrap(),
            TierPath::parse("outputs/a/1/raw").unwrap(),
        ];
        let got = versions(paths.iter().map(|p| (p, 3)));
        let names: Vec<_> = got.iter().map(|r| (r.name.as_str(), r.version)).collect();
        assert_eq!(names, [("a", 1), ("b", 2), ("model/out", 10)]);
    }
}
