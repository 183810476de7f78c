//! Trust the plan (issue 8), on a directory object store, SeaweedFS (S3)
//! and fake-gcs-server (GCS): nothing in the cache tree, the bucket or a
//! saved plan can trick a sync into deleting or uploading what the plan
//! did not name.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::support::bucket::{Backend, Bucket, Repo};
use crate::support::servers;
use crate::support::tree as files;

/// A namespaced repo with three versions of `m/x`, synced.
fn synced_repo(bucket: &Bucket) -> Repo {
    let a = Repo::init(bucket, Some("alpha"));
    for body in ["one\n", "two\n", "three\n"] {
        a.put("m/x", body);
    }
    a.run(&["datastore", "sync", "-y"]).expect(0);
    a
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path the test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

fn backdate(path: &Path) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
}

/// Puts something in place of a cache file.
type Replace<'a> = &'a dyn Fn(&Path);

/// The original bug: a symlink, a FIFO or a directory put where a synced
/// cache file was is planned as a delete, and the sync deletes the remote
/// object. Now each is a conflict naming what it is, and the object stays.
fn a_symlink_fifo_or_directory_replacing_a_synced_file_is_a_conflict_not_a_delete(
    backend: Backend,
) {
    let bucket = Bucket::new(backend);
    let a = synced_repo(&bucket);
    let raw = a.cache().join("alpha/data/m/x/2/raw");
    let key = "swamp/alpha/data/m/x/2/raw";
    let versions = bucket.versions();
    let replacements: [(&str, Replace); 3] = [
        ("symlink", &|p| {
            std::os::unix::fs::symlink("../../../../../elsewhere", p).unwrap()
        }),
        ("special file", &|p| mkfifo(p)),
        ("directory", &|p| {
            std::fs::create_dir(p).unwrap();
            std::fs::write(p.join("inner"), "inner\n").unwrap();
        }),
    ];
    for (what, replace) in replacements {
        std::fs::remove_file(&raw).unwrap();
        replace(&raw);
        let run = a.run(&["datastore", "sync", "-y"]);
        run.expect(3);
        let out = format!("{}{}", run.stdout, run.stderr);
        assert!(
            out.contains(&format!("in the cache this is a {what}")),
            "{what}: names what it is: {out}"
        );
        assert!(!out.contains("delete-remote"), "{what}: {out}");
        assert!(!out.contains("Converged"), "{what}: {out}");
        assert_eq!(
            bucket.versions(),
            versions,
            "{what}: the bucket is untouched"
        );
        let doc = a.json(&["--json", "plan"], 3);
        assert_eq!(doc["conflicts"][0]["kind"], "not-a-file", "{what}: {doc}");
        assert_eq!(doc["conflicts"][0]["at"], "data/m/x/2/raw", "{what}");
        // Put the file back: converged, nothing transferred.
        if std::fs::symlink_metadata(&raw).unwrap().is_dir() {
            std::fs::remove_dir_all(&raw).unwrap();
        } else {
            std::fs::remove_file(&raw).unwrap();
        }
        std::fs::write(&raw, "two\n").unwrap();
        a.run(&["plan", "--detailed-exitcode"]).expect(0);
    }
    assert_eq!(bucket.get(key).unwrap(), b"two\n");
}

/// What a sync will not touch is said, never skipped silently: a
/// dangling link, a link loop, a FIFO and a name no key can hold in the
/// cache, where no synced file is, are counted as skipped in the plan
/// (`--detail` lists each), left where they are, and never uploaded.
fn links_fifos_and_unkeyable_names_in_the_cache_are_counted_as_skipped(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = synced_repo(&bucket);
    let outputs = a.cache().join("alpha/outputs");
    std::fs::create_dir_all(&outputs).unwrap();
    std::os::unix::fs::symlink("nowhere", outputs.join("dangling")).unwrap();
    std::os::unix::fs::symlink("loop", outputs.join("loop")).unwrap();
    mkfifo(&outputs.join("pipe"));
    std::fs::write(outputs.join("a\\b"), "backslash\n").unwrap();
    let before = bucket.contents();

    let shown = a.run(&["datastore", "sync", "--dry-run"]);
    shown.expect(0);
    assert!(
        shown.stdout.contains(
            "skipped   4 path(s) in the cache (2 symlink(s), 1 special file(s), 1 name(s) no key can hold)"
        ),
        "{}",
        shown.stdout
    );
    let detail = a.run(&["datastore", "sync", "--dry-run", "--detail"]);
    detail.expect(0);
    for line in [
        "skipped   outputs/dangling (a symlink to nowhere)",
        "skipped   outputs/loop (a symlink to loop)",
        "skipped   outputs/pipe (a special file (FIFO, socket or device))",
        "skipped   outputs/a\\b (a file whose name no key can hold)",
    ] {
        assert!(detail.stdout.contains(line), "{line}\n{}", detail.stdout);
    }
    let doc = a.json(&["--json", "plan"], 0);
    assert_eq!(doc["summary"]["skipped_local"], 4, "{doc:#}");
    let kinds: Vec<(&str, &str)> = doc["remote"]["skipped_local"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["path"].as_str().unwrap(), o["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("outputs/a\\b", "bad-name"),
            ("outputs/dangling", "symlink"),
            ("outputs/loop", "symlink"),
            ("outputs/pipe", "special-file"),
        ]
    );
    // Skipping is not drift.
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
    a.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(
        bucket.contents(),
        before,
        "nothing skipped reached the bucket"
    );
    for name in ["dangling", "loop", "pipe", "a\\b"] {
        assert!(
            std::fs::symlink_metadata(outputs.join(name)).is_ok(),
            "{name} left where it was"
        );
    }
}

/// A hand-edited saved plan that adds a key outside the repo's prefix and
/// namespace to a delete is refused as stale before anything runs; and the
/// store would refuse that key anyway.
fn a_tampered_saved_plan_deletes_nothing_outside_its_namespace(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, None);
    a.put("m/x", "1\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    bucket.put("other/precious.txt", b"precious\n");
    bucket.put("swamp/beta/data/m/x/1/raw", b"beta's\n");
    a.run(&["datastore", "namespace", "set", "alpha"]).expect(0);
    a.run(&["plan", "-o", "p.json"]).expect(0);
    let before = bucket.contents();

    let path = a.root.join("p.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let versions = bucket.versions();
    let delete = doc["actions"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|a| a["kind"] == "delete-source-remote")
        .expect("the plan drains the solo keys");
    for key in ["other/precious.txt", "swamp/beta/data/m/x/1/raw"] {
        delete["objects"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"key": key, "version": versions[key]}));
    }
    let plan: swamp::plan::Plan = serde_json::from_value(doc.clone()).unwrap();
    doc["summary"] = serde_json::to_value(plan.summary()).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();

    let run = a.run(&["apply", "p.json", "-y"]);
    run.expect(1);
    assert!(run.stderr.contains("stale"), "{}", run.stderr);
    assert!(
        run.stderr.contains("delete-source-remote"),
        "names the difference: {}",
        run.stderr
    );
    assert_eq!(bucket.contents(), before, "nothing touched");
    // The honest plan still applies, and the foreign keys survive it.
    a.run(&["apply", "-y"]).expect(0);
    let after = bucket.contents();
    assert_eq!(after["other/precious.txt"], b"precious\n");
    assert_eq!(after["swamp/beta/data/m/x/1/raw"], b"beta's\n");
    assert_eq!(after["swamp/alpha/data/m/x/1/raw"], b"1\n");
}

/// A `data put` killed between creating its temp file and renaming it
/// leaves `.swamp-tmp-…` in the cache. While its writer lives the temp file
/// is left alone and never uploaded; once the writer is gone (its pid is in
/// the name) the next sync removes it with a planned remove-temp. A temp
/// file that names no writer is removed once older than the lock's TTL.
fn an_orphaned_temp_file_after_a_kill_is_never_uploaded_and_then_removed(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = synced_repo(&bucket);
    let mut child = a.spawn_piped(&["data", "put", "m/y"]);
    // A first byte (an empty stdin is refused before anything is
    // written), then the pipe held open: the writer waits for the rest.
    let mut stdin = child.stdin.take();
    {
        use std::io::Write;
        let pipe = stdin.as_mut().unwrap();
        pipe.write_all(b"y").unwrap();
        pipe.flush().unwrap();
    }
    let version_dir = a.cache().join("alpha/data/m/y/1");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let temp = loop {
        let found = std::fs::read_dir(&version_dir).ok().and_then(|mut d| {
            d.find_map(|e| {
                let e = e.ok()?;
                e.file_name()
                    .to_str()?
                    .starts_with(".swamp-tmp-")
                    .then(|| e.path())
            })
        });
        if let Some(t) = found {
            break t;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no temp file appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // Its writer is alive (waiting on stdin): left alone, never uploaded.
    let run = a.run(&["datastore", "sync", "-y"]);
    run.expect(0);
    assert!(temp.exists(), "a live writer's temp file is left alone");
    assert!(
        bucket.contents().keys().all(|k| !k.contains(".swamp-tmp-")),
        "{:?}",
        bucket.contents().keys()
    );
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    drop(stdin);
    assert!(temp.exists(), "the kill left the temp file");
    // Its writer is gone: a planned remove-temp at once, then converged.
    let plan = a.run(&["plan"]);
    assert!(plan.stdout.contains("remove-temp"), "{}", plan.stdout);
    a.run(&["datastore", "sync", "-y"]).expect(0);
    assert!(!temp.exists());
    assert!(!version_dir.exists(), "its emptied directory is pruned");
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
    // A temp file naming no writer (another tool, an older swamp): kept
    // while fresh, removed once older than the lock's TTL.
    let foreign = a.cache().join("alpha/data/m/x/.swamp-tmp-abc123");
    std::fs::write(&foreign, "partial").unwrap();
    a.run(&["datastore", "sync", "-y"]).expect(0);
    assert!(
        foreign.exists(),
        "fresh and writer unknown: someone's write in progress"
    );
    backdate(&foreign);
    a.run(&["datastore", "sync", "-y"]).expect(0);
    assert!(!foreign.exists());
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
    assert!(bucket.contents().keys().all(|k| !k.contains(".swamp-tmp-")));
}

/// Files named like the catalog anywhere but at the catalog's own path are
/// data and round-trip; an object at the catalog's path is a conflict,
/// never downloaded, never deleted.
fn catalog_named_files_round_trip_and_the_catalog_path_is_reserved(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.write_cache("alpha/data/m/_catalog.db", "data, named like a catalog\n");
    a.write_cache("alpha/outputs/_catalog.db-wal", "more data\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let keys: Vec<String> = bucket.contents().into_keys().collect();
    assert!(
        keys.contains(&"swamp/alpha/data/m/_catalog.db".to_string()),
        "{keys:?}"
    );
    assert!(
        keys.contains(&"swamp/alpha/outputs/_catalog.db-wal".to_string()),
        "{keys:?}"
    );

    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(
        files(&b.cache())["alpha/data/m/_catalog.db"],
        b"data, named like a catalog\n"
    );
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
    let versions = bucket.versions();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(bucket.versions(), versions, "a no-op sync deletes nothing");

    bucket.put("swamp/alpha/data/_catalog.db", b"not a catalog\n");
    let run = b.run(&["datastore", "sync", "-y"]);
    run.expect(3);
    assert!(
        run.stdout.contains(
            "swamp/alpha/data/_catalog.db: the remote holds an object at the catalog's path"
        ),
        "{}",
        run.stdout
    );
    assert!(
        !b.cache().join("alpha/data/_catalog.db").exists(),
        "never downloaded"
    );
    assert_eq!(
        bucket.get("swamp/alpha/data/_catalog.db").unwrap(),
        b"not a catalog\n",
        "never deleted"
    );
}

/// Issue 9's first bug: `setup s3`, `setup local`, `setup s3` again planned
/// to delete every file (the sync base of the first stay outlived the
/// drain), and the guard's own `--force` hint destroyed the data. A drained
/// remote's base is dropped, and its id with it: the third setup is a first
/// sync, uploads, and deletes nothing.
fn a_second_setup_to_a_remote_used_before_deletes_nothing(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::empty(bucket.env());
    a.run_ok(&["init"]);
    a.put("model/output", "hello\n");
    let spec = bucket.spec();
    a.run(&["datastore", "setup", &spec, "-y"]).expect(0);
    a.run(&["datastore", "setup", "local", "-y"]).expect(0);
    assert!(
        !bucket.contents().keys().any(|k| k.contains("remote-id")),
        "the drained remote keeps no id: {:?}",
        bucket.contents().keys()
    );
    let run = a.run(&["datastore", "setup", &spec, "-y"]);
    run.expect(0);
    assert!(!run.stdout.contains("delete-local"), "{}", run.stdout);
    let get = a.run(&["data", "get", "model/output"]);
    get.expect(0);
    assert_eq!(get.stdout, "hello\n");
    assert_eq!(
        bucket.get("swamp/data/model/output/1/raw").unwrap(),
        b"hello\n"
    );
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// A bucket wiped behind swamp's back (its id gone with it) is not a
/// reason to delete the cache: the base made with the old remote is set
/// aside, the plan says why, and the sync uploads everything again.
fn a_wiped_bucket_is_a_first_sync_not_a_delete(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = synced_repo(&bucket);
    for key in bucket.contents().keys() {
        bucket.delete(key);
    }
    let data = |repo: &Repo| crate::support::tree(&repo.cache().join("alpha/data"));
    let before = data(&a);
    assert_eq!(before.len(), 3, "{:?}", before.keys());
    let plan = a.run(&["plan"]);
    assert!(
        plan.stdout
            .contains("this sync is a first sync: nothing is deleted"),
        "{}",
        plan.stdout
    );
    assert!(!plan.stdout.contains("delete-local"), "{}", plan.stdout);
    a.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(
        bucket.get("swamp/alpha/data/m/x/2/raw").unwrap(),
        b"two\n",
        "uploaded again"
    );
    assert_eq!(data(&a), before, "nothing deleted or changed in the cache");
    for v in 1..=3 {
        assert!(
            bucket
                .get(&format!("swamp/alpha/data/m/x/{v}/raw"))
                .is_some(),
            "version {v} uploaded again"
        );
    }
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// Someone deleted the namespace's data objects (its id stays): the guard
/// names the likely causes and the safe command, `--force` still keeps
/// every cache file that exists nowhere else, and `--no-base` uploads
/// them again.
fn a_remote_that_lost_its_objects_keeps_the_only_copies_even_under_force(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = synced_repo(&bucket);
    let before = files(&a.cache().join("alpha/data"));
    let data: Vec<String> = bucket
        .versions()
        .into_keys()
        .filter(|k| k.contains("/data/"))
        .collect();
    assert_eq!(data.len(), 3);
    for key in &data {
        bucket.delete(key);
    }
    let run = a.run(&["datastore", "sync", "-y"]);
    run.expect(3);
    let out = format!("{}{}", run.stdout, run.stderr);
    assert!(out.contains("delete guard"), "{out}");
    assert!(
        out.contains("likely: a wrong endpoint or bucket"),
        "names the causes: {out}"
    );
    assert!(
        out.contains("swamp datastore sync --no-base"),
        "names the safe command: {out}"
    );
    // The guard's "if intended" route: --force alone deletes no only copy.
    let run = a.run(&["datastore", "sync", "--force", "-y"]);
    run.expect(3);
    let out = format!("{}{}", run.stdout, run.stderr);
    assert!(out.contains("only-copy"), "{out}");
    assert!(!out.contains("Converged"), "{out}");
    assert_eq!(
        files(&a.cache().join("alpha/data")),
        before,
        "the cache is intact"
    );
    // --force-delete-local is refused without --force (a usage error).
    a.run(&["datastore", "sync", "--force-delete-local", "-y"])
        .expect(64);
    // The safe command: a first sync, which uploads what the remote lacks.
    let run = a.run(&["datastore", "sync", "--no-base", "-y"]);
    run.expect(0);
    assert!(
        run.stdout
            .contains("--no-base sets the record of the last sync aside"),
        "{}",
        run.stdout
    );
    for key in &data {
        assert!(bucket.get(key).is_some(), "{key} uploaded again");
    }
    a.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(files(&a.cache().join("alpha/data")), before);
}

on_every_backend!(
    a_symlink_fifo_or_directory_replacing_a_synced_file_is_a_conflict_not_a_delete,
    links_fifos_and_unkeyable_names_in_the_cache_are_counted_as_skipped,
    a_tampered_saved_plan_deletes_nothing_outside_its_namespace,
    an_orphaned_temp_file_after_a_kill_is_never_uploaded_and_then_removed,
    catalog_named_files_round_trip_and_the_catalog_path_is_reserved,
    a_second_setup_to_a_remote_used_before_deletes_nothing,
    a_wiped_bucket_is_a_first_sync_not_a_delete,
    a_remote_that_lost_its_objects_keeps_the_only_copies_even_under_force,
);

/// A download refused for a bad sha256 said nothing was written, and left
/// the directories it had made. S3 and GCS (a directory store computes the
/// metadata itself, so it cannot be made to lie).
fn a_download_refused_for_a_bad_sha256_leaves_no_directory(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    let lie = "0".repeat(64);
    let key = "swamp/alpha/data/deep/name/1/raw";
    match backend {
        Backend::S3 => servers::s3().raw_put(&bucket.name, key, b"body\n", &lie),
        Backend::Gcs => servers::gcs().raw_put(&bucket.name, key, b"body\n", &lie),
        Backend::Fs => unreachable!(),
    }
    let run = a.run(&["datastore", "sync", "--pull", "-y"]);
    assert_ne!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        !a.cache().join("alpha/data/deep").exists(),
        "left {:?}",
        files(&a.cache())
    );
}

#[test]
fn s3_a_download_refused_for_a_bad_sha256_leaves_no_directory() {
    a_download_refused_for_a_bad_sha256_leaves_no_directory(Backend::S3)
}

#[test]
fn gcs_a_download_refused_for_a_bad_sha256_leaves_no_directory() {
    a_download_refused_for_a_bad_sha256_leaves_no_directory(Backend::Gcs)
}

/// A key holding ESC and BEL (an OSC title change) reached the terminal
/// raw through `plan` (GCS), and on S3 wedged every sync of the namespace:
/// listings were not asked for `encoding-type=url`, so the XML could not
/// carry the key.
fn control_characters_in_a_remote_key_never_reach_the_terminal(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    let key = "swamp/alpha/outputs/\u{1b}]0;pwned\u{7}x.yaml";
    bucket.raw_put(key, b"x\n");
    let run = a.run(&["plan"]);
    run.expect(0);
    assert!(!run.stdout.contains('\u{1b}'), "{:?}", run.stdout);
    assert!(!run.stdout.contains('\u{7}'), "{:?}", run.stdout);
    assert!(
        run.stdout.contains("\\x1b]0;pwned\\x07x.yaml"),
        "{}",
        run.stdout
    );
}

#[test]
fn gcs_control_characters_in_a_remote_key_never_reach_the_terminal() {
    control_characters_in_a_remote_key_never_reach_the_terminal(Backend::Gcs)
}

#[test]
fn s3_control_characters_in_a_remote_key_never_reach_the_terminal() {
    control_characters_in_a_remote_key_never_reach_the_terminal(Backend::S3)
}

/// A datastore spec that must be refused (a prefix whose `..` would name
/// another place in the bucket, an empty endpoint, a mistyped parameter
/// or a bare path) is a usage error, exit 64, with help where a typo is
/// likely, and refused before anything is written: `init --repo NEWDIR`
/// leaves no NEWDIR and nothing under SWAMP_HOME.
#[test]
fn a_refused_init_leaves_no_directory_behind() {
    let repo = Repo::empty(Vec::new());
    let new = repo.root.join("NEW");
    for (spec, says) in [
        ("gs://bkt/../x?endpoint=http://127.0.0.1:9", "`..` segment"),
        (
            "s3://bkt/a/../../x?region=us-east-1&endpoint=http://127.0.0.1:9",
            "`..` segment",
        ),
        ("s3://bkt/x?endpoint=", "`endpoint=` is empty"),
        ("s3://bkt/x?regoin=us-east-1", "did you mean `region`?"),
        ("/srv/swamp", "did you mean `file:///srv/swamp`?"),
        ("s3://bkt/x?endpoint=file://rel", "needs an absolute path"),
    ] {
        let run = repo.run(&["init", "--repo", new.to_str().unwrap(), "--datastore", spec]);
        run.expect(64);
        assert!(run.stderr.contains(says), "{spec}: {}", run.stderr);
        assert!(!new.exists(), "{spec}: NEWDIR was created");
        let home: Vec<_> = std::fs::read_dir(&repo.home)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(home.is_empty(), "{spec}: left under SWAMP_HOME: {home:?}");
    }
    // A file endpoint whose bucket directory nobody made is no bucket
    // (a mistyped path must not become a new, empty one).
    let buckets = repo.root.join("buckets");
    std::fs::create_dir(&buckets).unwrap();
    let spec = format!("s3://typo/x?endpoint=file://{}", buckets.display());
    let run = repo.run(&[
        "init",
        "--repo",
        new.to_str().unwrap(),
        "--datastore",
        &spec,
    ]);
    run.expect(1);
    assert!(
        run.stderr.contains("bucket `typo` does not exist"),
        "{}",
        run.stderr
    );
    assert!(!buckets.join("typo").exists() && !new.exists());
}

/// A mistyped flag is a usage error (exit 64) that names the flag meant,
/// letters swapped (`--yse`) or dropped (`--detial`), in text and JSON.
#[test]
fn a_mistyped_flag_names_the_one_meant() {
    let repo = Repo::empty(Vec::new());
    for (typed, meant) in [("--yse", "--yes"), ("--detial", "--detail")] {
        let run = repo.run(&["apply", typed]);
        run.expect(64);
        assert!(
            run.stderr.contains(&format!("'{meant}'")),
            "{typed}: {}",
            run.stderr
        );
        let run = repo.run(&["--json", "apply", typed]);
        run.expect(64);
        assert!(run.stdout.contains(meant), "{typed}: {}", run.stdout);
    }
}
