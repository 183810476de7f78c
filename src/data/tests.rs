//! Unit tests of the data workload against temp repositories.

use std::fs;
use std::io::{self, Read};
use std::sync::Arc;

use super::*;
use crate::catalog::Freshness;

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
    fn store(&self) -> DataStore<'_> {
        DataStore::new(&self.layout, self.placement.clone())
    }

    fn put(&self, name: &str, content: &[u8]) -> Entry {
        self.store().put(name, &mut &content[..]).unwrap()
    }
}

fn versions(entries: &[Entry]) -> Vec<(&str, u64)> {
    entries
        .iter()
        .map(|e| (e.name.as_str(), e.version))
        .collect()
}

#[test]
fn put_twice_gives_versions_1_and_2() {
    let r = repo(None);
    let one = r.put("model/output", b"first");
    let two = r.put("model/output", b"second!");
    assert_eq!((one.version, two.version), (1, 2));
    assert_eq!(two.path, "data/model/output/2/raw");
    assert_eq!(two.size, 7);
    assert_eq!(two.sha256, fsutil::sha256_bytes(b"second!"));
    assert_eq!(
        fs::read(r.file("data/model/output/1/raw")).unwrap(),
        b"first"
    );
    assert_eq!(
        fs::read(r.file("data/model/output/2/raw")).unwrap(),
        b"second!"
    );
    // Only `raw` in the version dir: the temp file was renamed, not copied.
    assert_eq!(
        fs::read_dir(r.file("data/model/output/2")).unwrap().count(),
        1
    );
    // The catalog was updated in place, not rebuilt to find them.
    let c = Catalog::open(&r.layout, &r.placement).unwrap();
    assert_eq!(c.opened_as(), &Freshness::Fresh);
    assert_eq!(c.versions("model/output").unwrap(), vec![one, two]);
}

#[test]
fn put_refuses_invalid_names_and_writes_nothing() {
    let r = repo(None);
    for bad in [
        "",
        "a//b",
        "../x",
        "a/..",
        "_catalog.db",
        ".hidden",
        "a/1",
        "a b",
        &"x".repeat(256),
    ] {
        let err = r.store().put(bad, &mut &b"x"[..]).unwrap_err();
        assert!(matches!(err, DataError::InvalidName { .. }), "{bad}: {err}");
        assert!(err.to_string().contains("invalid data name"), "{err}");
    }
    assert!(!r.layout.tier_dir(&r.placement, Tier::Data).exists());
    // The same check guards the readers.
    assert!(matches!(
        r.store().get("a/1", None),
        Err(DataError::InvalidName { .. })
    ));
    assert!(matches!(
        r.store().rm("../x", "swamp data rm").map(|(v, _)| v),
        Err(DataError::InvalidName { .. })
    ));
}

#[test]
fn put_streams_large_input_in_chunks() {
    /// Yields `len` bytes a few at a time, like a pipe.
    struct Trickle {
        left: usize,
    }
    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.left.min(buf.len()).min(4099);
            buf[..n].fill(b'z');
            self.left -= n;
            Ok(n)
        }
    }
    let r = repo(None);
    let len = 1024 * 1024 + 3;
    let e = r.store().put("big", &mut Trickle { left: len }).unwrap();
    assert_eq!(e.size, len as u64);
    assert_eq!(e.sha256, fsutil::sha256_bytes(&vec![b'z'; len]));
    assert_eq!(
        fs::metadata(r.file("data/big/1/raw")).unwrap().len(),
        len as u64
    );
}

#[test]
fn failed_input_leaves_no_version_behind() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("pipe closed"))
        }
    }
    let r = repo(None);
    let err = r.store().put("a", &mut Broken).unwrap_err();
    assert!(matches!(err, DataError::Input { .. }), "{err}");
    assert!(!r.file("data/a/1").exists());
    // The number was given back.
    assert_eq!(r.put("a", b"ok").version, 1);
}

#[test]
fn get_latest_specific_and_missing() {
    let r = repo(None);
    r.put("a", b"one");
    r.put("a", b"two");
    let s = r.store();
    let (latest, path) = s.get("a", None).unwrap();
    assert_eq!(latest.version, 2);
    assert_eq!(fs::read(&path).unwrap(), b"two");
    assert_eq!(path, r.file("data/a/2/raw"));
    let (first, path) = s.get("a", Some(1)).unwrap();
    assert_eq!(first.version, 1);
    assert_eq!(fs::read(path).unwrap(), b"one");

    let err = s.get("a", Some(7)).unwrap_err();
    assert!(
        matches!(
            err,
            DataError::VersionNotFound {
                version: 7,
                latest: 2,
                ..
            }
        ),
        "{err}"
    );
    let err = s.get("nope", None).unwrap_err();
    assert!(matches!(err, DataError::NotFound { .. }), "{err}");
    assert_eq!(err.to_string(), "no data named `nope`");
    assert!(matches!(
        s.get("nope", Some(1)),
        Err(DataError::NotFound { .. })
    ));
}

#[test]
fn get_reindexes_when_a_file_vanished_behind_the_catalog() {
    let r = repo(None);
    r.put("a", b"one");
    r.put("a", b"two");
    fs::remove_dir_all(r.file("data/a/2")).unwrap();
    let (entry, path) = r.store().get("a", None).unwrap();
    assert_eq!(entry.version, 1);
    assert_eq!(fs::read(path).unwrap(), b"one");
}

#[test]
fn reads_see_files_written_without_the_catalog() {
    let r = repo(None);
    r.put("a", b"one");
    // Data arriving by other means (a pull, a migration) invalidates.
    fsutil::atomic_write(&r.file("data/b/1/raw"), b"pulled").unwrap();
    Catalog::invalidate(&r.layout).unwrap();
    let names: Vec<_> = r
        .store()
        .list()
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn list_summarises_each_name() {
    let r = repo(None);
    r.put("b", b"x");
    r.put("a", b"xx");
    r.put("a", b"xxx");
    assert_eq!(
        r.store().list().unwrap(),
        vec![
            NameSummary {
                name: "a".into(),
                latest_version: 2,
                latest_size: 3,
                versions: 2,
                total_size: 5
            },
            NameSummary {
                name: "b".into(),
                latest_version: 1,
                latest_size: 1,
                versions: 1,
                total_size: 1
            },
        ]
    );
}

#[test]
fn rm_deletes_exactly_that_name_and_emptied_dirs() {
    let r = repo(None);
    r.put("model", b"1");
    r.put("model", b"2");
    r.put("model/sub", b"nested");
    r.put("deep/inside/name", b"x");
    let removed = r
        .store()
        .rm("model", "swamp data rm")
        .map(|(v, _)| v)
        .unwrap();
    assert_eq!(versions(&removed), [("model", 1), ("model", 2)]);
    assert!(!r.file("data/model/1").exists());
    assert!(!r.file("data/model/2").exists());
    // The nested name survives, so does the dir that holds it.
    assert_eq!(r.store().get("model/sub", None).unwrap().0.version, 1);
    assert!(matches!(
        r.store().get("model", None),
        Err(DataError::NotFound { .. })
    ));

    r.store()
        .rm("deep/inside/name", "swamp data rm")
        .map(|(v, _)| v)
        .unwrap();
    assert!(!r.file("data/deep").exists());
    // Up to, not including, the data dir.
    assert!(r.layout.tier_dir(&r.placement, Tier::Data).exists());
    let names: Vec<_> = r
        .store()
        .list()
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(names, ["model/sub"]);

    assert!(matches!(
        r.store().rm("model", "swamp data rm").map(|(v, _)| v),
        Err(DataError::NotFound { .. })
    ));
}

#[test]
fn gc_keeps_the_newest_versions_of_each_name() {
    let r = repo(None);
    for i in 0..3 {
        r.put("a", format!("a{i}").as_bytes());
    }
    r.put("b", b"only");
    let s = r.store();
    assert!(matches!(
        s.gc(0, true, "swamp data gc").map(|(v, _)| v),
        Err(DataError::InvalidKeep)
    ));

    let would = s.gc(1, true, "swamp data gc").map(|(v, _)| v).unwrap();
    assert_eq!(versions(&would), [("a", 1), ("a", 2)]);
    assert!(r.file("data/a/1/raw").exists(), "dry run deletes nothing");

    let removed = s.gc(1, false, "swamp data gc").map(|(v, _)| v).unwrap();
    assert_eq!(removed, would);
    assert!(!r.file("data/a/1").exists());
    assert!(!r.file("data/a/2").exists());
    assert_eq!(fs::read(r.file("data/a/3/raw")).unwrap(), b"a2");
    assert_eq!(s.get("b", None).unwrap().0.version, 1);
    let c = Catalog::open(&r.layout, &r.placement).unwrap();
    assert_eq!(versions(&c.entries().unwrap()), [("a", 3), ("b", 1)]);
    assert!(
        s.gc(1, false, "swamp data gc")
            .map(|(v, _)| v)
            .unwrap()
            .is_empty()
    );
    // Numbers keep counting up from what is on disk.
    assert_eq!(r.put("a", b"next").version, 4);
}

#[test]
fn a_version_dir_claimed_by_another_writer_is_skipped() {
    let r = repo(None);
    r.put("a", b"one");
    // Another writer has claimed 2 but not written `raw` yet.
    fs::create_dir(r.file("data/a/2")).unwrap();
    let e = r.put("a", b"mine");
    assert_eq!(e.version, 3);
    assert!(
        !r.file("data/a/2/raw").exists(),
        "the other writer's dir is untouched"
    );

    // The race itself: the claim starts at a number that got taken after
    // we looked, and moves on.
    let (v, dir) = r.store().claim_version("a", 2).unwrap();
    assert_eq!(v, 4);
    assert_eq!(dir, r.file("data/a/4"));
}

#[test]
fn concurrent_puts_get_distinct_versions() {
    let r = Arc::new(repo(None));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let r = Arc::clone(&r);
            std::thread::spawn(move || r.put("shared", format!("writer {i}").as_bytes()))
        })
        .collect();
    let mut got: Vec<u64> = threads
        .into_iter()
        .map(|t| t.join().unwrap().version)
        .collect();
    got.sort();
    assert_eq!(got, (1..=8).collect::<Vec<_>>());
    let listed = r.store().list().unwrap();
    assert_eq!(listed[0].versions, 8);
}

#[test]
fn namespaced_data_lives_under_the_namespace_and_catalog_stays_put() {
    let r = repo(Some("homelab"));
    r.put("a", b"x");
    let swamp = r.layout.swamp_dir();
    assert!(swamp.join("homelab/data/a/1/raw").exists());
    assert!(!swamp.join("data/a").exists());
    assert!(swamp.join("data/_catalog.db").exists());
    assert_eq!(
        r.store().get("a", None).unwrap().1,
        swamp.join("homelab/data/a/1/raw")
    );
}

#[test]
fn put_through_a_symlinked_directory_is_refused_and_writes_nothing_outside() {
    let r = repo(None);
    let outside = tempfile::tempdir().unwrap();
    let data_dir = r.layout.tier_dir(&r.placement, crate::layout::Tier::Data);
    fs::create_dir_all(&data_dir).unwrap();
    std::os::unix::fs::symlink(outside.path(), data_dir.join("ln")).unwrap();
    let err = r.store().put("ln/y", &mut &b"x"[..]).unwrap_err();
    assert!(matches!(err, DataError::Symlink { .. }), "{err}");
    assert!(err.to_string().contains("ln"), "names the link: {err}");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn a_symlinked_raw_is_never_read_and_never_removed_through() {
    let r = repo(None);
    r.put("m", b"mine");
    let secret = tempfile::NamedTempFile::new().unwrap();
    fs::write(secret.path(), b"someone else's").unwrap();
    let raw = r.file("data/m/1/raw");
    fs::remove_file(&raw).unwrap();
    std::os::unix::fs::symlink(secret.path(), &raw).unwrap();
    let err = r.store().get("m", None).unwrap_err();
    assert!(matches!(err, DataError::Symlink { .. }), "{err}");

    // A version dir that became a link is not removed through.
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("raw"), b"keep").unwrap();
    r.put("n", b"n");
    fs::remove_dir_all(r.file("data/n/1/raw").parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(outside.path(), r.file("data/n/1/raw").parent().unwrap()).unwrap();
    assert!(r.store().rm("n", "swamp data rm").map(|(v, _)| v).is_err());
    assert_eq!(fs::read(outside.path().join("raw")).unwrap(), b"keep");
}

#[test]
fn a_symlinked_catalog_is_refused_and_the_other_file_left_alone() {
    let r = repo(None);
    let other = tempfile::NamedTempFile::new().unwrap();
    fs::write(other.path(), b"not yours").unwrap();
    fs::create_dir_all(r.layout.catalog_path().parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(other.path(), r.layout.catalog_path()).unwrap();
    let err = r.store().put("m", &mut &b"x"[..]).unwrap_err();
    assert!(
        matches!(err, DataError::Catalog(CatalogError::Symlink { .. })),
        "{err}"
    );
    assert_eq!(fs::read(other.path()).unwrap(), b"not yours");
    assert!(Catalog::rebuild(&r.layout, &r.placement).is_err());
    assert_eq!(fs::read(other.path()).unwrap(), b"not yours");
}

#[test]
fn reads_see_versions_a_pending_layout_change_has_not_moved_yet() {
    let r = repo(Some("ns"));
    let solo = crate::config::Placement {
        datastore: crate::config::DatastoreConfig::Local,
        namespace: None,
    };
    for (v, body) in [(1, "one"), (2, "two")] {
        let p = r
            .layout
            .file_path(&solo, &TierPath::parse(&format!("data/m/{v}/raw")).unwrap());
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, body).unwrap();
    }
    let store = || r.store().with_sources(vec![solo.clone()]);
    let (entry, path) = store().get("m", None).unwrap();
    assert_eq!(
        (entry.version, fs::read(&path).unwrap()),
        (2, b"two".to_vec())
    );
    let (_, path) = store().get("m", Some(1)).unwrap();
    assert_eq!(fs::read(path).unwrap(), b"one");
    assert!(matches!(
        store().get("m", Some(7)),
        Err(DataError::VersionNotFound { latest: 2, .. })
    ));
    // A new version goes to the target, after every version anywhere.
    let three = store().put("m", &mut &b"three"[..]).unwrap();
    assert_eq!(three.version, 3);
    assert_eq!(fs::read(r.file("data/m/3/raw")).unwrap(), b"three");
    let (entry, _) = store().get("m", None).unwrap();
    assert_eq!(entry.version, 3);
    let listed = store().list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].latest_version, listed[0].versions), (3, 3));
    // Without the sources, only the target's version is seen.
    assert_eq!(r.store().list().unwrap()[0].versions, 1);
}
