//! The sync base: what cache and remote both held after the last
//! successful sync, per file. It is what makes a delete on one side
//! distinguishable from a create on the other. Stored atomically in the
//! reconciler's repo-local state, and advanced only for actions that
//! completed.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil;
use crate::layout::{KnownPaths, TierPath};

/// One file as both sides held it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BaseEntry {
    pub sha256: crate::digest::Sha256,
    pub size: u64,
    /// The remote object's version (S3 ETag, GCS generation) at that time.
    pub version: crate::store::Version,
}

/// A remote object a lazy pull (`[sync] hydration = "lazy"`) recorded
/// without downloading it: the cache lacks it on purpose, so its absence is
/// no local delete, and the remote copy is the one truth until it is
/// fetched (`swamp data get`, `swamp datastore sync --pull --hydrate`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unhydrated {
    pub size: u64,
    /// The version listed when it was recorded.
    pub version: crate::store::Version,
    /// Known only when the listing said (S3 listings carry no metadata).
    /// Boxed: a lazy clone of an S3 bucket holds a million without one
    /// (8 bytes each instead of 33; 7 more where GCS lists them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Box<crate::digest::Sha256>>,
    /// The listing's hashes, for an object its sha256 does not check
    /// alone (see [`crate::state::RemoteObject::served`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<Box<crate::digest::Served>>,
}

/// Read by a hand-written `Deserialize`, so that the loader can share each
/// path with the cache's ([`SyncBase::load_sharing`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncBase {
    /// Which remote this base is for (`s3://bucket/prefix/ns`); a base for
    /// another remote is no base at all.
    pub remote: String,
    /// The id the remote held when this base was made
    /// (`<prefix>/<ns>/.swamp/remote-id.json`); `None` in a base written
    /// before remotes had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_id: Option<String>,
    pub files: BTreeMap<TierPath, BaseEntry>,
    /// Remote objects recorded, not downloaded (never a path `files` has).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unhydrated: BTreeMap<TierPath, Unhydrated>,
}

impl<'de> Deserialize<'de> for SyncBase {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        serde::de::DeserializeSeed::deserialize(Seeded(None), de)
    }
}

/// A base read with each path that `.0` holds too sharing its allocation:
/// loaded after the cache is walked, a million paths held once more were
/// 48 MB, and sharing them afterwards rebuilt the whole map. (A derived
/// `Deserialize` cannot hand a field's reader any state.)
struct Seeded<'k>(Option<&'k dyn KnownPaths>);

impl<'de> serde::de::DeserializeSeed<'de> for Seeded<'_> {
    type Value = SyncBase;
    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<SyncBase, D::Error> {
        const FIELDS: &[&str] = &["remote", "remote_id", "files", "unhydrated"];
        de.deserialize_struct("SyncBase", FIELDS, self)
    }
}

impl<'de> serde::de::Visitor<'de> for Seeded<'_> {
    type Value = SyncBase;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sync base")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<SyncBase, A::Error> {
        use serde::de::Error;
        let (mut remote, mut remote_id, mut files, mut unhydrated) = (None, None, None, None);
        while let Some(field) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*field {
                "remote" => remote = Some(map.next_value()?),
                "remote_id" => remote_id = map.next_value()?,
                "files" => files = Some(map.next_value_seed(PathMap::new(self.0))?),
                "unhydrated" => unhydrated = Some(map.next_value_seed(PathMap::new(self.0))?),
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(SyncBase {
            remote: remote.ok_or_else(|| A::Error::missing_field("remote"))?,
            remote_id,
            files: files.ok_or_else(|| A::Error::missing_field("files"))?,
            unhydrated: unhydrated.unwrap_or_default(),
        })
    }
}

/// A map of paths read as the pairs it was written as (in key order),
/// then built with full nodes (see [`super::sorted_map`]), each path
/// shared with `known`'s.
pub(super) struct PathMap<'k, V> {
    known: Option<&'k dyn KnownPaths>,
    values: std::marker::PhantomData<V>,
}

impl<'k, V> PathMap<'k, V> {
    pub(super) fn new(known: Option<&'k dyn KnownPaths>) -> Self {
        PathMap {
            known,
            values: std::marker::PhantomData,
        }
    }
}

impl<'de, V: Deserialize<'de>> serde::de::DeserializeSeed<'de> for PathMap<'_, V> {
    type Value = BTreeMap<TierPath, V>;
    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for PathMap<'_, V> {
    type Value = BTreeMap<TierPath, V>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a map of tier paths")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Made a map a run at a time: a million pairs held in one list
        // beside the map made of them were 84 MB more.
        let mut pairs = super::MapBuilder::default();
        while let Some((k, v)) = map.next_entry::<TierPath, V>()? {
            pairs.push(k.shared_with(self.known), v);
        }
        Ok(pairs.finish())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BaseError {
    #[error("cannot read the sync base {}: {source}", .path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error(
        "the sync base {} is corrupt ({message})",
        .path.display()
    )]
    Corrupt { path: PathBuf, message: String },
    #[error("cannot write the sync base {}: {source}", .path.display())]
    Write { path: PathBuf, source: io::Error },
}

impl SyncBase {
    /// Loads the base for `remote`; a missing file, or a base recorded for
    /// another remote, is an empty base (first sync: nothing is deleted).
    pub fn load(path: &Path, remote: &str) -> Result<SyncBase, BaseError> {
        SyncBase::load_sharing(path, remote, None)
    }

    /// [`SyncBase::load`], each path `known` holds too sharing its
    /// allocation (the cache's, or a listing's, walked before).
    pub fn load_sharing(
        path: &Path,
        remote: &str,
        known: Option<&dyn KnownPaths>,
    ) -> Result<SyncBase, BaseError> {
        let empty = SyncBase {
            remote: remote.to_string(),
            remote_id: None,
            files: BTreeMap::new(),
            unhydrated: BTreeMap::new(),
        };
        let file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(empty),
            Err(source) => {
                return Err(BaseError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        // Parsed as it is read: the text of a base of 100,000 files (20
        // MiB) is never held beside the map made of it.
        let reader = io::BufReader::with_capacity(256 * 1024, file);
        let mut de = serde_json::Deserializer::from_reader(reader);
        let read = serde::de::DeserializeSeed::deserialize(Seeded(known), &mut de);
        let base =
            read.and_then(|base| de.end().map(|()| base))
                .map_err(|e| match e.io_error_kind() {
                    Some(kind) => BaseError::Read {
                        path: path.to_path_buf(),
                        source: io::Error::new(kind, e.to_string()),
                    },
                    None => BaseError::Corrupt {
                        path: path.to_path_buf(),
                        message: e.to_string(),
                    },
                })?;
        Ok(if base.remote == remote { base } else { empty })
    }

    /// Why this base cannot be trusted for a remote that now holds
    /// `identity`, if it cannot: it was made with a remote that had another
    /// id (the bucket was wiped, re-created or drained since, or it is
    /// another endpoint's bucket of the same name). Such a base is no base:
    /// the sync is a first sync, and nothing is deleted.
    ///
    /// A base from before remote ids (none recorded) that lists files is
    /// not trusted either once the remote holds an id: nothing proves it
    /// was made with this remote rather than with an earlier life of it.
    pub fn mismatch(&self, identity: Option<&str>) -> Option<String> {
        self.mismatch_listing(
            identity,
            !self.files.is_empty() || !self.unhydrated.is_empty(),
        )
    }

    /// [`SyncBase::mismatch`] of a base whose files were taken out
    /// (`listed`: whether it listed any).
    pub fn mismatch_listing(&self, identity: Option<&str>, listed: bool) -> Option<String> {
        let Some(made_with) = self.remote_id.as_deref() else {
            return (identity.is_some() && listed).then(|| {
                format!(
                    "the last sync's record predates remote ids, so nothing proves it was made with {} as it is now",
                    self.remote
                )
            });
        };
        (Some(made_with) != identity).then(|| match identity {
            Some(now) => format!(
                "the last sync was with a remote whose id was {made_with}; {} now holds {now} (it was wiped, re-created or drained since)",
                self.remote
            ),
            None => format!(
                "the last sync was with a remote whose id was {made_with}; {} holds no id now (it was wiped or drained since)",
                self.remote
            ),
        })
    }

    /// Sets the record aside (a base made with another remote is no base).
    pub fn clear(&mut self) {
        self.files.clear();
        self.unhydrated.clear();
    }

    /// Records that both sides hold `entry` at `path` (it is hydrated now).
    pub fn set(&mut self, path: TierPath, entry: BaseEntry) {
        self.unhydrated.remove(&path);
        self.files.insert(path, entry);
    }

    /// Records each entry of `runs` as [`SyncBase::set`] does (each run in
    /// path order, no path twice), merged in at once: the base a
    /// 100,000-file pull records is built with full nodes (see
    /// [`super::merged_map`]), neither grown an insert at a time to twice
    /// the size nor held twice over as one list and a map.
    pub fn set_many(&mut self, runs: Vec<Vec<(TierPath, BaseEntry)>>) {
        if !self.unhydrated.is_empty() {
            for (path, _) in runs.iter().flatten() {
                self.unhydrated.remove(path);
            }
        }
        // A few into many: inserted (a merge rebuilds the whole map).
        if runs.iter().map(Vec::len).sum::<usize>() < self.files.len() / 16 {
            self.files.extend(runs.into_iter().flatten());
        } else {
            self.files.append(&mut super::merged_map(runs));
        }
    }

    /// Forgets `path` on both records.
    pub fn forget(&mut self, path: &TierPath) {
        self.files.remove(path);
        self.unhydrated.remove(path);
    }

    /// Records `path` as in the remote only.
    pub fn set_unhydrated(&mut self, path: TierPath, object: Unhydrated) {
        self.files.remove(&path);
        self.unhydrated.insert(path, object);
    }

    /// [`SyncBase::set_unhydrated`] for each of `records`, made a map
    /// with full nodes and merged in: inserted one by one (a lazy clone's
    /// million, in order), each node is left half empty, 60 MB more.
    pub fn set_unhydrated_many(&mut self, records: impl Iterator<Item = (TierPath, Unhydrated)>) {
        let mut map = super::MapBuilder::default();
        for (path, object) in records {
            if !self.files.is_empty() {
                self.files.remove(&path);
            }
            map.push(path, object);
        }
        self.unhydrated.append(&mut map.finish());
    }

    /// Writes the base atomically, unless it is unchanged on disk. The JSON
    /// is streamed (compared with the file, then written to the temp file)
    /// and never held whole: a base of 100,000 files is tens of megabytes.
    pub fn save(&self, path: &Path) -> Result<bool, BaseError> {
        if same_as_file(path, |w| self.write_json(w)) {
            return Ok(false);
        }
        fsutil::atomic_write_with(path, |w| self.write_json(w)).map_err(|source| {
            BaseError::Write {
                path: path.to_path_buf(),
                source,
            }
        })?;
        Ok(true)
    }

    fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *w, self).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    }
}

/// Whether the file at `path` holds exactly what `write` writes, compared
/// a block at a time as it is written.
fn same_as_file(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> bool {
    use std::io::{BufReader, Read, Write};
    /// Reads the file along with what is written; the first difference
    /// ends the writing (an error), so a changed base is not serialised
    /// to the end only to be compared.
    struct Compare {
        file: BufReader<std::fs::File>,
        buf: Vec<u8>,
    }
    impl Write for Compare {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.buf.resize(data.len(), 0);
            if self.file.read_exact(&mut self.buf).is_err() || self.buf != data {
                return Err(std::io::Error::other("differs"));
            }
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut cmp = std::io::BufWriter::with_capacity(
        64 * 1024,
        Compare {
            file: BufReader::with_capacity(64 * 1024, file),
            buf: Vec::new(),
        },
    );
    if write(&mut cmp).is_err() {
        return false;
    }
    let Ok(mut cmp) = cmp.into_inner() else {
        return false;
    };
    // Nothing may follow in the file.
    matches!(cmp.file.read(&mut [0u8; 1]), Ok(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_set_many_at_once_are_what_setting_each_one_makes() {
        let entry = |v: &str| BaseEntry {
            sha256: v.into(),
            size: 1,
            version: v.into(),
        };
        let path = |i: usize| TierPath::parse(&format!("data/m/{i:03}/raw")).unwrap();
        // A base holding every third path, two of them remote-only.
        let mut start = SyncBase::default();
        for i in (0..300).step_by(3) {
            start.set(path(i), entry("old"));
        }
        start.set_unhydrated(
            path(1),
            Unhydrated {
                size: 1,
                version: "u".into(),
                sha256: None,
                served: None,
            },
        );
        start.set_unhydrated(
            path(2),
            Unhydrated {
                size: 1,
                version: "u".into(),
                sha256: None,
                served: None,
            },
        );
        // Many (merged in) and a few (inserted), over old paths and new.
        for set in [(0..300).step_by(2).collect::<Vec<_>>(), vec![1, 3, 299]] {
            let runs: Vec<Vec<_>> = set
                .chunks(7)
                .rev()
                .map(|c| c.iter().map(|&i| (path(i), entry("new"))).collect())
                .collect();
            let mut each = start.clone();
            for (p, e) in runs.iter().flatten().cloned() {
                each.set(p, e);
            }
            let mut many = start.clone();
            many.set_many(runs);
            assert_eq!(many, each, "setting {} entries", set.len());
        }
    }

    #[test]
    fn remote_only_records_set_at_once_are_what_setting_each_one_makes() {
        let path = |i: usize| TierPath::parse(&format!("data/m/{i:03}/raw")).unwrap();
        let unhydrated = |v: &str| Unhydrated {
            size: 1,
            version: v.into(),
            sha256: None,
            served: None,
        };
        // Every third path synced, every fifth recorded remote-only.
        let mut start = SyncBase::default();
        for i in (0..300).step_by(3) {
            let entry = BaseEntry {
                sha256: "aa".into(),
                size: 1,
                version: "v".into(),
            };
            start.set(path(i), entry);
        }
        for i in (0..300).step_by(5) {
            start.set_unhydrated(path(i), unhydrated("old"));
        }
        // Over synced paths, recorded ones and new ones.
        let records: Vec<_> = (0..300)
            .step_by(2)
            .map(|i| (path(i), unhydrated("new")))
            .collect();
        let mut each = start.clone();
        for (p, u) in records.iter().cloned() {
            each.set_unhydrated(p, u);
        }
        let mut many = start.clone();
        many.set_unhydrated_many(records.into_iter());
        assert_eq!(many, each);
        assert!(!many.files.contains_key(&path(6)));
        assert_eq!(many.unhydrated[&path(10)].version.to_string(), "new");
        assert_eq!(many.unhydrated[&path(5)].version.to_string(), "old");
    }

    #[test]
    fn a_base_made_with_another_remote_id_is_no_base() {
        let mut b = SyncBase {
            remote: "s3://b/p/".into(),
            ..SyncBase::default()
        };
        // Written before remotes had an id: an empty one is harmless, one
        // that lists files is not trusted once the remote holds an id.
        assert_eq!(b.mismatch(Some("x")), None);
        assert_eq!(b.mismatch(None), None);
        b.files.insert(
            TierPath::parse("data/a/1/raw").unwrap(),
            BaseEntry {
                sha256: "aa".into(),
                size: 1,
                version: "v1".into(),
            },
        );
        let legacy = b.mismatch(Some("x")).unwrap();
        assert!(legacy.contains("predates remote ids"), "{legacy}");
        assert_eq!(b.mismatch(None), None, "nothing to compare with");
        b.remote_id = Some("x".into());
        assert_eq!(b.mismatch(Some("x")), None);
        let wiped = b.mismatch(None).unwrap();
        assert!(wiped.contains("holds no id now"), "{wiped}");
        let other = b.mismatch(Some("y")).unwrap();
        assert!(other.contains("now holds y"), "{other}");
    }

    #[test]
    fn a_base_loaded_beside_the_cache_holds_its_paths_in_the_caches_allocations() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("base.json");
        let path = |i: u32| TierPath::parse(&format!("data/m/{i:05}/raw")).unwrap();
        let entry = |i: u32| BaseEntry {
            sha256: crate::digest::Sha256::of(&i.to_be_bytes()),
            size: i.into(),
            version: format!("v{i}").into(),
        };
        // The base: every third path to 60,000, two remote-only; the
        // cache: the even ones to 40,000 (some in the base, some not).
        let mut b = SyncBase {
            remote: "s3://b/p".into(),
            remote_id: Some("id".into()),
            ..SyncBase::default()
        };
        for i in 0..20_000 {
            b.files.insert(path(3 * i), entry(i));
        }
        for i in [4, 5] {
            b.set_unhydrated(
                path(3 * i),
                Unhydrated {
                    size: 1,
                    version: "u".into(),
                    sha256: None,
                    served: None,
                },
            );
        }
        b.save(&p).unwrap();
        let cache: BTreeMap<TierPath, ()> = (0..20_000).map(|i| (path(2 * i), ())).collect();
        let loaded = SyncBase::load_sharing(&p, "s3://b/p", Some(&cache)).unwrap();
        assert_eq!(loaded, b, "the same base, whatever its paths share");
        let keys = loaded.files.keys().chain(loaded.unhydrated.keys());
        let mut shared = 0;
        for k in keys {
            match cache.get_key_value(k) {
                Some((c, _)) => {
                    assert!(k.same_allocation(c), "{k} is the cache's");
                    shared += 1;
                }
                None => assert!(!cache.contains_key(k)),
            }
        }
        // 0, 6, 12... below 40,000, the remote-only 12 among them.
        assert_eq!(shared, 6667);
        // A base with no files field is corrupt, not empty.
        std::fs::write(&p, br#"{"remote": "s3://b/p"}"#).unwrap();
        let err = SyncBase::load(&p, "s3://b/p").unwrap_err();
        assert!(err.to_string().contains("missing field `files`"), "{err}");
    }

    #[test]
    fn a_streamed_save_writes_the_same_json_and_rewrites_any_difference() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("base.json");
        let mut b = SyncBase::load(&p, "s3://b/p").unwrap();
        for i in 0..2000 {
            b.files.insert(
                TierPath::parse(&format!("data/n{i}/1/raw")).unwrap(),
                BaseEntry {
                    sha256: crate::digest::Sha256::of(format!("{i}").as_bytes()),
                    size: i,
                    version: format!("v{i}").into(),
                },
            );
        }
        let mut want = serde_json::to_vec_pretty(&b).unwrap();
        want.push(b'\n');
        assert!(b.save(&p).unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), want);
        // A byte changed deep inside, bytes after the end, bytes missing:
        // each is rewritten to the same content.
        let mut changed = want.clone();
        let mid = changed.len() / 2;
        changed[mid] ^= 1;
        let mut longer = want.clone();
        longer.extend_from_slice(b"  ");
        let shorter = want[..want.len() - 1].to_vec();
        for stale in [changed, longer, shorter] {
            std::fs::write(&p, &stale).unwrap();
            assert!(b.save(&p).unwrap(), "a differing file is rewritten");
            assert_eq!(std::fs::read(&p).unwrap(), want);
        }
        assert!(!b.save(&p).unwrap());
    }

    #[test]
    fn base_for_another_remote_is_empty_and_unchanged_base_is_not_rewritten() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("base.json");
        let mut b = SyncBase::load(&p, "s3://b/p").unwrap();
        assert!(b.files.is_empty());
        b.files.insert(
            TierPath::parse("data/a/1/raw").unwrap(),
            BaseEntry {
                sha256: "aa".into(),
                size: 1,
                version: "v1".into(),
            },
        );
        assert!(b.save(&p).unwrap());
        assert!(!b.save(&p).unwrap(), "unchanged: not rewritten");
        assert_eq!(SyncBase::load(&p, "s3://b/p").unwrap(), b);
        assert!(SyncBase::load(&p, "s3://other/p").unwrap().files.is_empty());
        std::fs::write(&p, b"{not json").unwrap();
        assert!(matches!(
            SyncBase::load(&p, "s3://b/p"),
            Err(BaseError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_base_written_out_of_order_loads_whole_and_a_bad_path_in_it_is_corrupt() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("base.json");
        let e = |v: &str| {
            format!(
                r#"{{"sha256":"{}","size":1,"version":"{v}"}}"#,
                "ab".repeat(32)
            )
        };
        // Edited by hand: keys out of order, one twice (the later kept, as
        // a JSON map read into a map would).
        let text = format!(
            r#"{{"remote":"s3://b/p","files":{{"data/z/1/raw":{},"data/a/1/raw":{},"data/m/1/raw":{},"data/a/1/raw":{}}},"unhydrated":{{"data/y/1/raw":{{"size":2,"version":"u"}},"data/b/1/raw":{{"size":3,"version":"w"}}}}}}"#,
            e("z"),
            e("a1"),
            e("m"),
            e("a2")
        );
        std::fs::write(&p, text).unwrap();
        let b = SyncBase::load(&p, "s3://b/p").unwrap();
        let versions: Vec<(&str, String)> = b
            .files
            .iter()
            .map(|(p, e)| (p.as_str(), e.version.to_string()))
            .collect();
        assert_eq!(
            versions,
            [
                ("data/a/1/raw", "a2".to_string()),
                ("data/m/1/raw", "m".to_string()),
                ("data/z/1/raw", "z".to_string())
            ]
        );
        assert!(
            b.files
                .contains_key(&TierPath::parse("data/m/1/raw").unwrap())
        );
        assert_eq!(b.unhydrated.len(), 2);
        assert!(
            b.unhydrated
                .contains_key(&TierPath::parse("data/b/1/raw").unwrap())
        );

        let text = format!(
            r#"{{"remote":"s3://b/p","files":{{"../escape":{}}}}}"#,
            e("x")
        );
        std::fs::write(&p, text).unwrap();
        assert!(matches!(
            SyncBase::load(&p, "s3://b/p"),
            Err(BaseError::Corrupt { .. })
        ));
    }
}
