//! The remote listing a run keeps for its verifying plan when it writes
//! nothing to the bucket ([`KeptListing`]: a pull, a lazy pull): held
//! through the apply only as far as the verifying plan needs it. Its
//! sync base goes at once (that plan reads the base the apply recorded),
//! and a large listing's files are spilled to an unnamed file in the
//! clone's state directory and read back when the verifying plan observes:
//! a million listed objects held 58 MB beside the plan's million
//! downloads through the whole apply.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Seek, Write};
use std::path::Path;

use super::RemoteObject;
use super::remote::RemoteSnapshot;
use crate::layout::{KnownPaths, TierPath};

/// A listing kept for the verifying plan, its files in memory or spilled.
#[derive(Debug)]
pub struct KeptListing {
    snapshot: RemoteSnapshot,
    spilled: Option<File>,
}

impl KeptListing {
    /// Keeps `snapshot` for the verifying plan: without its sync base,
    /// and with its files spilled to `dir` (created if missing) when there
    /// are at least `spill_at`. Where they cannot be spilled they are held.
    pub fn keep(mut snapshot: RemoteSnapshot, dir: &Path, spill_at: usize) -> KeptListing {
        snapshot.base = BTreeMap::new();
        snapshot.unhydrated = BTreeMap::new();
        let spilled = if snapshot.files.len() < spill_at {
            None
        } else {
            match spill(&snapshot.files, dir) {
                Ok(file) => {
                    tracing::debug!(target: "swamp::state", files = snapshot.files.len(),
                        "the listing kept for the verifying plan is spilled");
                    snapshot.files = BTreeMap::new();
                    Some(file)
                }
                Err(e) => {
                    tracing::debug!(target: "swamp::state", dir = %dir.display(), error = %e,
                        "the listing kept for the verifying plan is held in memory: it could not be spilled");
                    None
                }
            }
        };
        KeptListing { snapshot, spilled }
    }

    /// Where the listing is of.
    pub fn url(&self) -> &str {
        &self.snapshot.url
    }

    /// The listing's files, when held (not spilled): the cache's walk
    /// shares their paths.
    pub fn held_files(&self) -> Option<&BTreeMap<TierPath, RemoteObject>> {
        self.spilled.is_none().then_some(&self.snapshot.files)
    }

    /// The listing as kept (its base to be read again), spilled files read
    /// back with each path `known` holds sharing its allocation (read
    /// after the cache's walk: the walk's hash cache is gone by then); or
    /// `None` when they cannot be read back: the verifying plan then lists
    /// the bucket again.
    pub fn restore(self, known: Option<&dyn KnownPaths>) -> Option<RemoteSnapshot> {
        let KeptListing {
            mut snapshot,
            spilled,
        } = self;
        if let Some(file) = spilled {
            match read_back(file, known) {
                Ok(files) => snapshot.files = files,
                Err(e) => {
                    tracing::debug!(target: "swamp::state", error = %e,
                        "the spilled listing could not be read back: listing again");
                    return None;
                }
            }
        }
        Some(snapshot)
    }
}

/// Writes `files` to a scratch file in `dir`, as JSON.
fn spill(files: &BTreeMap<TierPath, RemoteObject>, dir: &Path) -> io::Result<File> {
    let mut out = BufWriter::with_capacity(1 << 16, super::spill::scratch_file(dir)?);
    serde_json::to_writer(&mut out, files)?;
    out.flush()?;
    let mut file = out.into_inner().map_err(|e| e.into_error())?;
    file.rewind()?;
    Ok(file)
}

/// The spilled map, built a run at a time with full nodes, each path
/// `known` holds sharing its allocation.
fn read_back(
    file: File,
    known: Option<&dyn KnownPaths>,
) -> io::Result<BTreeMap<TierPath, RemoteObject>> {
    use serde::de::DeserializeSeed;
    let reader = BufReader::with_capacity(1 << 16, file);
    let mut de = serde_json::Deserializer::from_reader(reader);
    let files = super::base::PathMap::new(known).deserialize(&mut de)?;
    de.end()?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Version;

    fn snapshot(n: usize) -> RemoteSnapshot {
        let mut files = BTreeMap::new();
        for i in 0..n {
            let path = TierPath::parse(&format!("data/d{}/f{i}", i % 7)).unwrap();
            let mut object = RemoteObject::new(i as u64, Version::new(&format!("\"{i:032x}\"")));
            if i % 3 == 0 {
                object = object.with_modified(Some(1_700_000_000 + i as i64));
            }
            if i % 5 == 0 {
                object = object.with_sha256(Some(crate::digest::Sha256::of(&i.to_le_bytes())));
            }
            files.insert(path, object);
        }
        let mut base = BTreeMap::new();
        base.insert(
            TierPath::parse("data/d0/f0").unwrap(),
            crate::state::BaseEntry {
                sha256: crate::digest::Sha256::of(b"0"),
                size: 0,
                version: Version::new("v"),
            },
        );
        RemoteSnapshot {
            url: "s3://b/p/".into(),
            key_prefix: "p/".into(),
            objects: n + 1,
            files,
            base,
            ..serde_json::from_str(r#"{"url":"","key_prefix":"","files":{},"objects":0,"base":{}}"#)
                .unwrap()
        }
    }

    #[test]
    fn a_large_kept_listing_is_spilled_through_the_apply_and_restored_as_listed() {
        let dir = tempfile::tempdir().unwrap();
        let listed = snapshot(500);
        let kept = KeptListing::keep(listed.clone(), dir.path(), 100);
        // Nothing of the files stays in memory, and the base is gone.
        assert!(kept.spilled.is_some());
        assert!(kept.snapshot.files.is_empty() && kept.snapshot.base.is_empty());
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
        let cache: BTreeMap<TierPath, ()> = listed
            .files
            .keys()
            .take(10)
            .map(|p| (TierPath::parse(p.as_str()).unwrap(), ()))
            .collect();
        let restored = kept.restore(Some(&cache)).unwrap();
        assert_eq!(restored.files, listed.files);
        // Read back after the walk, each path the cache holds is its allocation.
        for p in cache.keys() {
            let (q, _) = restored.files.get_key_value(p).unwrap();
            assert!(q.same_allocation(p));
        }
        assert_eq!(
            RemoteSnapshot {
                base: listed.base.clone(),
                ..restored
            },
            listed
        );
    }

    #[test]
    fn a_small_kept_listing_is_held_without_its_base() {
        let dir = tempfile::tempdir().unwrap();
        let listed = snapshot(50);
        let kept = KeptListing::keep(listed.clone(), dir.path(), 100);
        assert!(kept.spilled.is_none());
        assert!(kept.held_files().is_some());
        let restored = kept.restore(None).unwrap();
        assert!(restored.base.is_empty());
        assert_eq!(restored.files, listed.files);
    }

    #[test]
    fn with_nowhere_to_spill_the_listing_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let blocked = dir.path().join("a-file");
        std::fs::write(&blocked, b"").unwrap();
        let listed = snapshot(200);
        let kept = KeptListing::keep(listed.clone(), &blocked.join("state"), 100);
        assert!(kept.spilled.is_none());
        assert_eq!(kept.restore(None).unwrap().files, listed.files);
    }

    #[test]
    fn a_spill_that_cannot_be_read_back_lists_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut kept = KeptListing::keep(snapshot(200), dir.path(), 100);
        let file = kept.spilled.as_mut().unwrap();
        file.set_len(10).unwrap();
        assert!(kept.restore(None).is_none());
    }
}
