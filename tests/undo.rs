//! Undo (issue 10), on the local datastore, a directory object store,
//! SeaweedFS (S3) and fake-gcs-server (GCS): what `data rm` and `data gc`
//! remove is set aside in the trash of a journaled apply, never destroyed.

mod support;

use std::collections::BTreeMap;

use support::bucket::{Backend, Bucket, Repo};
use support::tree as files;

/// The trash of apply `id` in `root`: tier path → bytes.
fn trash(root: &std::path::Path, id: &str) -> BTreeMap<String, Vec<u8>> {
    files(&root.join(id))
}

fn gc_and_rm_set_every_removed_version_aside_byte_for_byte(
    repo: &Repo,
    trash_root: &std::path::Path,
    data: &std::path::Path,
) {
    for body in ["one\n", "two\n", "three\n"] {
        repo.put("m/x", body);
    }
    repo.put("m/y", "why\n");
    let before = files(data);
    let doc = repo.json(&["--json", "data", "gc", "--keep", "1"], 0);
    let id = doc["apply_id"]
        .as_str()
        .expect("gc names its apply")
        .to_string();
    let set_aside = trash(trash_root, &id);
    let ns = set_aside
        .keys()
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let want: BTreeMap<String, Vec<u8>> = ["m/x/1/raw", "m/x/2/raw"]
        .iter()
        .map(|p| (format!("{ns}/data/{p}"), before[*p].clone()))
        .collect();
    assert_eq!(set_aside, want, "every removed version, byte for byte");
    let (removed, rm_id) = {
        let doc = repo.json(&["--json", "data", "rm", "m/y"], 0);
        (
            doc["removed"].as_array().unwrap().len(),
            doc["apply_id"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(removed, 1);
    assert_eq!(
        trash(trash_root, &rm_id).into_values().collect::<Vec<_>>(),
        vec![b"why\n".to_vec()]
    );
    // Nothing set aside is data: the datastore holds only what was kept.
    let raw: Vec<String> = files(data)
        .into_keys()
        .filter(|k| k.ends_with("/raw"))
        .collect();
    assert_eq!(raw, ["m/x/3/raw"]);
    let history = repo.json(&["--json", "history"], 0);
    let applies = history["applies"].as_array().unwrap();
    assert_eq!(applies.len(), 2);
    assert_eq!(applies[0]["id"], id.as_str());
    assert_eq!(applies[0]["files"], 2);
    assert_eq!(applies[0]["bytes_set_aside"], 8);
    assert_eq!(applies[0]["finished"], true);
    assert_eq!(applies[0]["command"], "swamp --json data gc --keep 1");
    assert_eq!(applies[1]["id"], rm_id.as_str());
    let table = repo.run(&["history"]);
    table.expect(0);
    assert!(
        table.stdout.contains(&rm_id) && table.stdout.contains("removed m/y: 1 version(s)"),
        "{}",
        table.stdout
    );
}

#[test]
fn local_gc_and_rm_set_every_removed_version_aside_byte_for_byte() {
    let repo = Repo::empty(vec![]);
    repo.run_ok(&["init"]);
    let trash_root = repo.root.join(".swamp/state/trash");
    let data = repo.root.join(".swamp/data");
    gc_and_rm_set_every_removed_version_aside_byte_for_byte(&repo, &trash_root, &data);
}

fn remote_gc_and_rm_set_every_removed_version_aside_byte_for_byte(backend: Backend) {
    let bucket = Bucket::new(backend);
    let repo = Repo::init(&bucket, Some("alpha"));
    let trash_root = repo.cache().join(".swamp-trash");
    let data = repo.cache().join("alpha/data");
    gc_and_rm_set_every_removed_version_aside_byte_for_byte(&repo, &trash_root, &data);
    // The journal is repo-local, the bytes stay beside the cache.
    assert!(repo.root.join(".swamp/state/trash").is_dir());
}

on_every_backend!(remote_gc_and_rm_set_every_removed_version_aside_byte_for_byte);
