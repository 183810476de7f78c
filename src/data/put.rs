//! Writing a new version: claiming the next version number on disk and
//! streaming the content into its `raw` file atomically.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{DataError, DataStore};
use crate::catalog::name::parse_version;
use crate::catalog::{Catalog, Entry};
use crate::fsutil;

/// How often a claim re-creates a name dir that a concurrent `rm` removed.
const NAME_DIR_RETRIES: u32 = 3;

impl DataStore<'_> {
    /// Stores `content` as the next version of `name`.
    pub(crate) fn put(&self, name: &str, content: &mut dyn Read) -> Result<Entry, DataError> {
        super::check(name)?;
        let name_dir = self.name_dir(name)?;
        self.guard(&name_dir)?;
        fs::create_dir_all(&name_dir).map_err(|e| DataError::io("create", &name_dir, e))?;
        self.guard(&name_dir)?;
        // After every version on disk, here and wherever a pending layout
        // change still has some, so the move never meets a different file.
        let mut next = max_version_on_disk(&name_dir)? + 1;
        for source in &self.sources {
            let dir = self.layout.file_path(
                source,
                &crate::layout::TierPath::parse(&format!("data/{name}"))?,
            );
            next = next.max(max_version_on_disk(&dir)? + 1);
        }
        // And after what the remote holds unfetched (lazy hydration): a
        // number it uses is never taken for different content here.
        if let Some(top) = self.remote_only_of(name).last() {
            next = next.max(top.version + 1);
        }
        let (version, version_dir) = self.claim_version(name, next)?;
        let written = self.write_raw(name, version, &version_dir, &name_dir, content);
        let entry = match written {
            Ok(entry) => entry,
            Err(e) => {
                // Give the number back rather than leave a version without `raw`.
                let _ = fs::remove_dir_all(&version_dir);
                return Err(e);
            }
        };
        let mut catalog = Catalog::open(self.layout, &self.placement)?;
        super::record(&mut catalog, self.layout, |c| c.upsert(&entry))?;
        Ok(entry)
    }

    /// Claims the first free version number from `from` on by creating its
    /// directory: `create_dir` fails if a concurrent writer got there
    /// first, and then we try the next number.
    pub(super) fn claim_version(&self, name: &str, from: u64) -> Result<(u64, PathBuf), DataError> {
        let mut version = from;
        let mut retries = 0;
        loop {
            if parse_version(&version.to_string()).is_none() {
                return Err(DataError::VersionsExhausted {
                    name: name.to_string(),
                });
            }
            let dir = self.version_dir(name, version)?;
            match fs::create_dir(&dir) {
                Ok(()) => return Ok((version, dir)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => version += 1,
                // A concurrent `rm` removed the (then empty) name dir.
                Err(e) if e.kind() == io::ErrorKind::NotFound && retries < NAME_DIR_RETRIES => {
                    retries += 1;
                    let name_dir = self.name_dir(name)?;
                    fs::create_dir_all(&name_dir)
                        .map_err(|e| DataError::io("create", &name_dir, e))?;
                }
                Err(e) => return Err(DataError::io("create", &dir, e)),
            }
        }
    }

    /// Streams `content` to a temp file in the version dir, hashing as it
    /// goes, then fsync, rename to `raw` (never replacing one) and fsync the
    /// directories so the new version survives a crash.
    fn write_raw(
        &self,
        name: &str,
        version: u64,
        version_dir: &Path,
        name_dir: &Path,
        content: &mut dyn Read,
    ) -> Result<Entry, DataError> {
        let raw = self.raw_path(name, version)?;
        let mut tmp = crate::fsutil::temp_file_in(version_dir)
            .map_err(|e| DataError::io("create a temp file in", version_dir, e))?;
        let mut hasher = Sha256::new();
        let mut size: u64 = 0;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match content.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(DataError::Input {
                        name: name.into(),
                        source: e,
                    });
                }
            };
            hasher.update(&buf[..n]);
            tmp.write_all(&buf[..n])
                .map_err(|e| DataError::io("write", tmp.path(), e))?;
            size += n as u64;
        }
        tmp.as_file()
            .sync_all()
            .map_err(|e| DataError::io("sync", tmp.path(), e))?;
        tmp.persist_noclobber(&raw)
            .map_err(|e| DataError::io("create", &raw, e.error))?;
        fsutil::sync_dir(version_dir).map_err(|e| DataError::io("sync", version_dir, e))?;
        fsutil::sync_dir(name_dir).map_err(|e| DataError::io("sync", name_dir, e))?;
        Ok(Entry {
            name: name.to_string(),
            version,
            size,
            sha256: hex::encode(hasher.finalize()),
            path: super::raw_tier_path(name, version),
        })
    }
}

/// The highest version directory under `name_dir` (0 if none). Directories
/// only, without following symlinks; nested names are not versions.
pub(super) fn max_version_on_disk(name_dir: &Path) -> Result<u64, DataError> {
    let entries = match fs::read_dir(name_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(DataError::io("read", name_dir, e)),
    };
    let mut max = 0;
    for entry in entries {
        let entry = entry.map_err(|e| DataError::io("read", name_dir, e))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if let (true, Some(v)) = (is_dir, entry.file_name().to_str().and_then(parse_version)) {
            max = max.max(v);
        }
    }
    Ok(max)
}
