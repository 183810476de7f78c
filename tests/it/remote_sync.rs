//! Sync scenarios against a directory object store (`endpoint=file://…`)
//! and real servers: SeaweedFS (S3) and fake-gcs-server (GCS), the same
//! scenarios on each backend. Each test
//! takes a fresh bucket; repositories are the real binary in temp dirs,
//! and "another machine" is another `SWAMP_HOME` with a copy of
//! `.swamp.toml` (a clone).

use std::collections::BTreeMap;

use crate::support::bucket::{Backend, Bucket, Repo};
use crate::support::tree as files;

/// The namespace-scoped pull (the original bug): data already under
/// `swamp/homelab/…`; a fresh clone's sync writes only under
/// `<cache>/homelab/`, the next sync is a no-op, and a push after it too.
fn namespace_scoped_pull_writes_only_under_the_namespace(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("homelab"));
    a.put("web/state", "replicas: 1\n");
    a.put("web/state", "replicas: 2\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let keys: Vec<String> = bucket.contents().into_keys().collect();
    assert!(
        keys.contains(&"swamp/homelab/data/web/state/2/raw".to_string()),
        "{keys:?}"
    );
    assert!(
        keys.contains(&"swamp/homelab/.namespace.json".to_string()),
        "{keys:?}"
    );

    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    let cache = files(&b.cache());
    assert!(!cache.is_empty());
    for k in cache.keys() {
        assert!(
            k.starts_with("homelab/"),
            "written outside <cache>/homelab/: {k}"
        );
    }
    assert_eq!(cache["homelab/data/web/state/1/raw"], b"replicas: 1\n");

    let plan = b.run(&["plan", "--detailed-exitcode"]);
    plan.expect(0);
    let base_files = || files(&b.root.join(".swamp/state"));
    let base_before = base_files();
    assert!(
        base_before.keys().any(|k| k.starts_with("sync-base-")),
        "{:?}",
        base_before.keys()
    );
    let second = b.run(&["datastore", "sync", "-y"]);
    second.expect(0);
    assert!(second.stdout.contains("No changes"), "{}", second.stdout);
    b.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    assert_eq!(files(&b.cache()), cache, "nothing rewritten");
    let base_after = base_files();
    assert_eq!(
        base_after
            .iter()
            .filter(|(k, _)| k.starts_with("sync-base-"))
            .collect::<Vec<_>>(),
        base_before
            .iter()
            .filter(|(k, _)| k.starts_with("sync-base-"))
            .collect::<Vec<_>>(),
        "a converged sync does not rewrite the base"
    );
    // the catalog sees the pulled data
    let list = b.run(&["--json", "data", "list"]);
    list.expect(0);
    assert!(list.stdout.contains("web/state"), "{}", list.stdout);
}

/// Peer deletion: A collects garbage and syncs; B's sync deletes its
/// copies, and B's next push does not bring them back.
fn a_peer_deletion_propagates_and_is_not_resurrected(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("team"));
    a.put("model/out", "v1\n");
    a.put("model/out", "v2\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    assert!(b.cache().join("team/data/model/out/1/raw").exists());

    a.run(&["data", "gc", "--keep", "1"]).expect(0);
    a.run(&["datastore", "sync", "-y"]).expect(0);
    assert!(
        !bucket
            .contents()
            .contains_key("swamp/team/data/model/out/1/raw")
    );

    b.run(&["datastore", "sync", "-y"]).expect(0);
    assert!(
        !b.cache().join("team/data/model/out/1/raw").exists(),
        "B's copy deleted"
    );
    b.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    assert!(
        !bucket
            .contents()
            .contains_key("swamp/team/data/model/out/1/raw"),
        "not resurrected by B's push"
    );
}

/// `datastore setup --hydration lazy` is this clone's choice: `.swamp.toml`
/// comes out byte-identical to a setup without it (the datastore keys
/// asked for, comments kept, no defaults added, no `[sync]`), and the
/// choice lands in `.swamp/state/clone.toml`.
#[test]
fn a_lazy_setup_leaves_swamp_toml_as_a_plain_setup_writes_it() {
    let bucket = Bucket::new(Backend::Fs);
    let plain = Repo::empty(bucket.env());
    plain.run(&["init", "--namespace", "lab"]).expect(0);
    let path = plain.root.join(".swamp.toml");
    let before = format!(
        "# the team's store\n{}",
        std::fs::read_to_string(&path).unwrap()
    );
    std::fs::write(&path, &before).unwrap();
    let lazy = plain.clone_elsewhere();
    let spec = bucket.spec();
    plain.run(&["datastore", "setup", &spec, "-y"]).expect(0);
    lazy.run(&["datastore", "setup", &spec, "--hydration", "lazy", "-y"])
        .expect(0);
    let after = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        std::fs::read_to_string(lazy.root.join(".swamp.toml")).unwrap(),
        after,
        "the shared file does not carry one clone's choice"
    );
    assert!(after.starts_with("# the team's store\n"), "{after}");
    for default in [
        "[sync]",
        "hydration",
        "max_delete_percent",
        "conflict",
        "concurrency",
        "[lock]",
        "[undo]",
    ] {
        assert!(!after.contains(default), "{default}: {after}");
    }
    let clone = std::fs::read_to_string(lazy.root.join(".swamp/state/clone.toml")).unwrap();
    assert!(clone.ends_with("[sync]\nhydration = \"lazy\"\n"), "{clone}");
    assert!(!plain.root.join(".swamp/state/clone.toml").exists());
}

/// Git's habits: `swamp push`, `swamp pull` and `swamp sync` do what
/// `datastore sync --push`, `--pull` and both ways do.
#[test]
fn push_pull_and_sync_at_the_top_are_datastore_syncs() {
    let bucket = Bucket::new(Backend::Fs);
    let a = Repo::init(&bucket, Some("team"));
    a.put("model/out", "v1\n");
    a.run(&["push", "-y"]).expect(0);
    assert!(
        bucket
            .contents()
            .contains_key("swamp/team/data/model/out/1/raw")
    );
    let b = a.clone_elsewhere();
    b.run(&["pull", "-y"]).expect(0);
    assert!(b.cache().join("team/data/model/out/1/raw").is_file());
    b.put("model/out", "v2\n");
    // Without -y and no terminal: the plan, nothing uploaded, exit 2.
    for args in [&["sync"][..], &["push"], &["datastore", "sync"]] {
        let run = b.run(args);
        run.expect(2);
        assert!(run.stderr.contains("Nothing changed"), "{}", run.stderr);
        assert!(
            !bucket
                .contents()
                .contains_key("swamp/team/data/model/out/2/raw")
        );
    }
    let run = b.run(&["sync", "-y"]);
    run.expect(0);
    assert!(
        bucket
            .contents()
            .contains_key("swamp/team/data/model/out/2/raw")
    );
    // A pull alone never uploads.
    a.put("other/x", "x\n");
    a.run(&["pull", "-y"]).expect(0);
    assert!(
        !bucket
            .contents()
            .contains_key("swamp/team/data/other/x/1/raw")
    );
    assert!(a.cache().join("team/data/model/out/2/raw").is_file());
}

/// Changes on both sides: a conflict (exit 3), nothing overwritten; each
/// policy settles it as named.
fn both_sides_changed_is_a_conflict_until_a_policy_settles_it(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("ns"));
    a.write_cache("ns/outputs/x.yaml", "base\n");
    a.write_cache("ns/outputs/keep.yaml", "keep\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);

    a.write_cache("ns/outputs/x.yaml", "from a\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    b.write_cache("ns/outputs/x.yaml", "from b\n");

    let run = b.run(&["datastore", "sync", "-y"]);
    run.expect(3);
    assert!(run.stdout.contains("changed in both"), "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(b.cache().join("ns/outputs/x.yaml")).unwrap(),
        "from b\n"
    );
    assert_eq!(bucket.contents()["swamp/ns/outputs/x.yaml"], b"from a\n");

    // keep-both: the remote copy takes the path, ours is set aside and uploaded
    let kb = b.run(&["datastore", "sync", "-y", "--conflict", "keep-both"]);
    kb.expect(0);
    assert_eq!(
        std::fs::read_to_string(b.cache().join("ns/outputs/x.yaml")).unwrap(),
        "from a\n"
    );
    let aside: Vec<String> = bucket
        .contents()
        .into_keys()
        .filter(|k| k.starts_with("swamp/ns/outputs/x.yaml.conflict-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");

    // local and remote, on a fresh conflict
    b.write_cache("ns/outputs/x.yaml", "b again\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    a.write_cache("ns/outputs/x.yaml", "a again\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    b.run(&["datastore", "sync", "-y"]).expect(3);
    b.run(&["datastore", "sync", "-y", "--conflict", "local"])
        .expect(0);
    assert_eq!(bucket.contents()["swamp/ns/outputs/x.yaml"], b"b again\n");

    a.write_cache("ns/outputs/x.yaml", "a third\n");
    b.write_cache("ns/outputs/x.yaml", "b third\n");
    a.run(&["datastore", "sync", "-y", "--conflict", "local"])
        .expect(0);
    b.run(&["datastore", "sync", "-y", "--conflict", "remote"])
        .expect(0);
    assert_eq!(
        std::fs::read_to_string(b.cache().join("ns/outputs/x.yaml")).unwrap(),
        "a third\n"
    );

    // newer: the cache copy written after the remote one wins
    a.write_cache("ns/outputs/x.yaml", "a fourth\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let newer_time = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    b.write_cache("ns/outputs/x.yaml", "b fourth, newer\n");
    std::fs::File::options()
        .write(true)
        .open(b.cache().join("ns/outputs/x.yaml"))
        .unwrap()
        .set_modified(newer_time)
        .unwrap();
    b.run(&["datastore", "sync", "-y"]).expect(3);
    b.run(&["datastore", "sync", "-y", "--conflict", "newer"])
        .expect(0);
    assert_eq!(
        bucket.contents()["swamp/ns/outputs/x.yaml"],
        b"b fourth, newer\n"
    );
    // and an older cache copy loses
    b.write_cache("ns/outputs/x.yaml", "b fifth, older\n");
    std::fs::File::options()
        .write(true)
        .open(b.cache().join("ns/outputs/x.yaml"))
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    a.run(&["datastore", "sync", "-y"]).expect(0);
    a.write_cache("ns/outputs/x.yaml", "a fifth, newer\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    b.run(&["datastore", "sync", "-y", "--conflict", "newer"])
        .expect(0);
    assert_eq!(
        std::fs::read_to_string(b.cache().join("ns/outputs/x.yaml")).unwrap(),
        "a fifth, newer\n"
    );
}

/// Another namespace's objects and keys outside `<prefix>/` are untouched
/// by every command of a namespaced repo.
fn other_namespaces_and_foreign_keys_are_never_touched(backend: Backend) {
    let bucket = Bucket::new(backend);
    bucket.raw_put("swamp/other/data/theirs/1/raw", b"theirs");
    bucket.raw_put("swamp/other/.namespace.json", b"{\"namespace\":\"other\",\"repo_id\":\"00000000-0000-0000-0000-000000000001\",\"registered_at\":\"2026-01-01T00:00:00Z\"}");
    bucket.raw_put("unrelated/file.txt", b"not swamp's");
    bucket.raw_put("swamp/data/solo/1/raw", b"solo");
    let foreign = |c: BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        c.into_iter()
            .filter(|(k, _)| !k.starts_with("swamp/mine/"))
            .collect()
    };
    let before = foreign(bucket.contents());

    let a = Repo::init(&bucket, Some("mine"));
    a.put("m/x", "1\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    a.run(&["data", "rm", "m/x"]).expect(0);
    a.run(&["datastore", "sync", "--push", "-y", "--force"])
        .expect(0);
    a.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    a.run(&["datastore", "namespaces"]).expect(0);
    assert_eq!(foreign(bucket.contents()), before);
    // The namespace's tree, and what was set aside for undo in the cache's
    // own trash under the namespace's name: nothing of another namespace.
    for k in files(&a.cache()).keys() {
        let in_trash = k
            .strip_prefix(".swamp/trash/")
            .and_then(|rest| rest.split_once('/'))
            .is_some_and(|(_, rest)| rest.starts_with("mine/"));
        assert!(k.starts_with("mine/") || in_trash, "{k}");
    }

    let ns = a.run(&["--json", "datastore", "namespaces"]);
    ns.expect(0);
    assert!(ns.stdout.contains("\"other\""), "{}", ns.stdout);
    assert!(ns.stdout.contains("\"mine\""), "{}", ns.stdout);
}

/// Emptying the cache by hand and syncing is refused by a guard.
fn an_emptied_cache_is_refused_naming_the_guard_and_force(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("ns"));
    a.put("a", "1\n");
    a.put("b", "2\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    std::fs::remove_dir_all(a.cache().join("ns")).unwrap();
    let before = bucket.contents();
    let run = a.run(&["datastore", "sync", "--push", "-y"]);
    run.expect(3);
    assert!(run.stdout.contains("empty-cache"), "{}", run.stdout);
    assert!(run.stdout.contains("--force"), "{}", run.stdout);
    assert_eq!(bucket.contents(), before, "nothing deleted");
}

/// A namespace registered by another repository is refused.
fn a_namespace_owned_by_another_repo_is_refused(backend: Backend) {
    let bucket = Bucket::new(backend);
    let _a = Repo::init(&bucket, Some("taken"));
    let b = Repo::empty(bucket.env());
    let spec = bucket.spec();
    let run = b.run(&["init", "--datastore", &spec, "--namespace", "taken"]);
    run.expect(1);
    assert!(
        run.stderr.contains("registered to another repository"),
        "{}",
        run.stderr
    );
    assert!(!b.root.join(".swamp.toml").exists(), "nothing written");
}

/// Setup from the local datastore to the bucket goes through the plan:
/// the data moves into the cache and is uploaded.
fn setup_moves_local_data_into_the_bucket(backend: Backend) {
    let bucket = Bucket::new(backend);
    let repo = Repo::empty(bucket.env());
    repo.run(&["init", "--namespace", "lab"]).expect(0);
    repo.put("x", "hello\n");
    std::fs::create_dir_all(repo.root.join(".swamp/lab/outputs")).unwrap();
    std::fs::write(repo.root.join(".swamp/lab/outputs/o.yaml"), "o\n").unwrap();
    let spec = bucket.spec();
    let preview = repo.run(&["datastore", "setup", &spec]);
    preview.expect(2);
    assert!(bucket.contents().is_empty(), "a preview uploads nothing");
    repo.run(&["datastore", "setup", &spec, "-y"]).expect(0);
    let contents = bucket.contents();
    assert_eq!(contents["swamp/lab/data/x/1/raw"], b"hello\n");
    assert_eq!(contents["swamp/lab/outputs/o.yaml"], b"o\n");
    assert!(
        !repo.root.join(".swamp/lab").exists(),
        "moved out of .swamp/"
    );
    let plan = repo.run(&["plan", "--detailed-exitcode"]);
    plan.expect(0);
    // The sync base that setup recorded is bound to the bucket's id: the
    // next sync trusts it (it once was not, and every file edited after a
    // setup became a both-sides-changed conflict).
    assert!(!plan.stdout.contains("first sync"), "{}", plan.stdout);
    assert_eq!(repo.run(&["data", "get", "x"]).stdout, "hello\n");
    std::fs::write(repo.cache().join("lab/outputs/o.yaml"), "o2\n").unwrap();
    repo.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    assert_eq!(bucket.contents()["swamp/lab/outputs/o.yaml"], b"o2\n");
}

/// local → bucket → local leaves every file byte-identical and the bucket
/// empty of this repository's keys.
fn setup_round_trip_leaves_files_identical_and_the_bucket_empty(backend: Backend) {
    let bucket = Bucket::new(backend);
    bucket.raw_put("swamp/other/data/theirs/1/raw", b"theirs");
    let repo = Repo::empty(bucket.env());
    repo.run(&["init", "--namespace", "lab"]).expect(0);
    repo.put("model/out", "v1\n");
    repo.put("model/out", "v2\n");
    std::fs::create_dir_all(repo.root.join(".swamp/lab/audit")).unwrap();
    std::fs::write(repo.root.join(".swamp/lab/audit/log"), "entry\n").unwrap();
    let before = files(&repo.root.join(".swamp/lab"));
    let spec = bucket.spec();
    repo.run(&["datastore", "setup", &spec, "-y"]).expect(0);
    assert!(!repo.root.join(".swamp/lab").exists());

    let back = repo.run(&["datastore", "setup", "local", "-y"]);
    back.expect(0);
    assert_eq!(
        files(&repo.root.join(".swamp/lab")),
        before,
        "byte-identical"
    );
    let (trash, left): (Vec<String>, Vec<String>) = bucket
        .contents()
        .into_keys()
        .partition(|k| k.starts_with("swamp/lab/.swamp/trash/"));
    assert_eq!(
        left,
        [
            "swamp/lab/.swamp/moved.json",
            "swamp/other/data/theirs/1/raw"
        ],
        "only the other repo's key is left, the marker of the move and its trash"
    );
    // What the drain deleted waits in its trash, for `swamp undo`.
    assert_eq!(trash.len(), 3, "{trash:?}");
    assert!(
        !repo.cache().join("lab").exists(),
        "the old cache is drained"
    );
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
    assert!(
        !std::fs::read_to_string(repo.root.join(".swamp.toml"))
            .unwrap()
            .contains("migrating_from")
    );
}

/// Setting a namespace on a remote repository re-keys its objects inside
/// the bucket (server-side copy, then delete) and moves its cache.
fn setting_a_namespace_re_keys_remote_objects(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, None);
    a.put("x", "1\n");
    a.write_cache("outputs/o.yaml", "o\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    // an object only the remote has (pushed by a clone)
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    b.write_cache("outputs/from-b.yaml", "b\n");
    b.run(&["datastore", "sync", "-y"]).expect(0);

    let preview = a.run(&["datastore", "namespace", "set", "homelab", "--migrate"]);
    preview.expect(2);
    assert!(preview.stdout.contains("copy-remote"), "{}", preview.stdout);
    a.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "-y",
    ])
    .expect(0);
    let (trash, kept): (Vec<String>, Vec<String>) = bucket
        .contents()
        .into_keys()
        .partition(|k| k.starts_with("swamp/.swamp/trash/"));
    // The old prefix's files wait in its trash, for `swamp undo`.
    assert_eq!(trash.len(), 3, "{trash:?}");
    let (notes, keys): (Vec<String>, Vec<String>) = kept
        .into_iter()
        .partition(|k| k.contains("/.swamp/clones/"));
    // The old prefix's notes went with it; the new namespace has A's.
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("swamp/homelab/.swamp/clones/"),
        "{notes:?}"
    );
    // The move's record in the team's history, at the new namespace
    // (the solo prefix's went with it).
    let (history, keys): (Vec<String>, Vec<String>) = keys
        .into_iter()
        .partition(|k| k.contains("/.swamp/history/"));
    assert_eq!(history.len(), 1, "{history:?}");
    assert!(
        history[0].starts_with("swamp/homelab/.swamp/history/"),
        "{history:?}"
    );
    // The new namespace holds the id its sync base is bound to, written
    // before the move was planned.
    // The solo prefix keeps only the marker of the move.
    assert_eq!(
        keys,
        [
            "swamp/.swamp/moved.json",
            "swamp/homelab/.namespace.json",
            "swamp/homelab/.swamp/remote-id.json",
            "swamp/homelab/data/x/1/raw",
            "swamp/homelab/outputs/from-b.yaml",
            "swamp/homelab/outputs/o.yaml",
        ]
    );
    let cache = files(&a.cache());
    assert!(
        cache.keys().all(|k| k.starts_with("homelab/")),
        "{:?}",
        cache.keys()
    );
    assert_eq!(cache["homelab/outputs/from-b.yaml"], b"b\n");
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
    // B, still on the solo prefix, is told where the data went.
    let stopped = b.run(&["datastore", "sync", "-y"]);
    stopped.expect(1);
    assert!(
        stopped.stderr.contains("swamp/homelab"),
        "{}",
        stopped.stderr
    );
}

/// A symlink in the cache is never followed out of it.
fn a_symlink_in_the_cache_is_never_followed(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("ns"));
    a.write_cache("ns/outputs/report.yaml", "r\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(b.cache().join("ns")).unwrap();
    std::os::unix::fs::symlink(outside.path(), b.cache().join("ns/outputs")).unwrap();
    let run = b.run(&["datastore", "sync", "-y"]);
    assert_ne!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        std::fs::read_dir(outside.path()).unwrap().next().is_none(),
        "nothing written through the symlink"
    );
}

/// A hostile key in the remote is refused and nothing is written.
/// GCS only: SeaweedFS answers such a PUT with 400 InvalidRequest, so an
/// S3 bucket here can never hold one; `state::remote`'s unit tests cover
/// the key check for every backend.
#[test]
fn gcs_a_hostile_remote_key_is_refused() {
    let backend = Backend::Gcs;
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("homelab"));
    bucket.raw_put("swamp/homelab/data/../../escape", b"evil");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let keys: Vec<String> = rt
        .block_on(bucket.store().list(""))
        .unwrap()
        .into_iter()
        .map(|m| m.key)
        .collect();
    assert!(
        keys.contains(&"swamp/homelab/data/../../escape".to_string()),
        "the server must hold the hostile key for this test to mean anything: {keys:?}"
    );
    let run = a.run(&["datastore", "sync", "-y"]);
    run.expect(1);
    assert!(
        run.stderr.contains("refusing remote object"),
        "{}",
        run.stderr
    );
    assert!(files(&a.cache()).is_empty(), "nothing written");
    assert!(!a.home.join("repos/escape").exists());
    assert!(!a.home.join("escape").exists());
}

/// A clone with `[sync] hydration = "lazy"` whose first pull recorded
/// everything and downloaded nothing.
fn lazy_clone_of(a: &Repo) -> Repo {
    let b = a.clone_elsewhere();
    b.append_config("\n[sync]\nhydration = \"lazy\"\n");
    let pull = b.run(&["datastore", "sync", "--pull", "-y"]);
    pull.expect(0);
    assert!(
        pull.stdout
            .contains("remote file(s) recorded without downloading"),
        "{}",
        pull.stdout
    );
    b
}

/// Lazy hydration: the first pull records the remote without downloading
/// it; the missing files are not local deletes (a sync both ways deletes
/// and uploads nothing); reads fetch on first use and the fetched file
/// counts as synced; a peer's later change is recorded, never overwritten.
fn a_lazy_clone_fetches_on_first_read_and_never_deletes_what_it_did_not_fetch(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("team"));
    for body in ["one\n", "two\n", "three\n"] {
        a.put("m/x", body);
    }
    a.put("m/y", "why\n");
    a.write_cache("team/outputs/report.md", "# report\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    // The clones' notes of their sync progress aside (B writes its own on
    // its first pull).
    let objects = || {
        let mut all = bucket.contents();
        all.retain(|k, _| !k.contains("/.swamp/clones/"));
        all
    };
    let pushed = objects();

    let b = lazy_clone_of(&a);
    assert!(
        files(&b.cache()).is_empty(),
        "a lazy pull downloads nothing: {:?}",
        files(&b.cache()).keys()
    );
    let plan = b.run(&["plan", "--detailed-exitcode"]);
    plan.expect(0);
    assert!(
        plan.stdout.contains("5 file(s) in the remote only"),
        "{}",
        plan.stdout
    );
    // Both ways: the files it lacks are no deletes to push.
    b.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(objects(), pushed, "the bucket is untouched");

    // Reads see every version, and fetch the one they read.
    let list = b.json(&["--json", "data", "list"], 0);
    let x = &list["data"].as_array().unwrap()[0];
    assert_eq!(
        (x["name"].as_str(), x["latest_version"].as_u64()),
        (Some("m/x"), Some(3))
    );
    assert_eq!(x["versions"].as_u64(), Some(3));
    let got = b.run(&["data", "get", "m/x"]);
    got.expect(0);
    assert_eq!(got.stdout, "three\n");
    assert_eq!(
        std::fs::read_to_string(b.cache().join("team/data/m/x/3/raw")).unwrap(),
        "three\n"
    );
    assert!(
        !b.cache().join("team/data/m/x/1/raw").exists(),
        "only what was read"
    );
    assert_eq!(
        b.run(&["data", "get", "m/x", "--version", "1"]).stdout,
        "one\n"
    );
    let plan = b.run(&["plan", "--detailed-exitcode"]);
    plan.expect(0);
    assert!(
        plan.stdout.contains("3 file(s) in the remote only"),
        "{}",
        plan.stdout
    );

    // A new version is numbered after what the remote holds, never over it.
    b.put("m/y", "why not\n");
    assert!(b.cache().join("team/data/m/y/2/raw").exists());
    b.run(&["datastore", "sync", "-y"]).expect(0);
    let now = bucket.contents();
    assert_eq!(now["swamp/team/data/m/y/1/raw"], b"why\n");
    assert_eq!(now["swamp/team/data/m/y/2/raw"], b"why not\n");

    // A peer's change to a file B never fetched: recorded, then read.
    a.write_cache("team/outputs/report.md", "# report v2\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    b.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(
        bucket.contents()["swamp/team/outputs/report.md"],
        b"# report v2\n"
    );
    assert!(!b.cache().join("team/outputs/report.md").exists());
    // A peer's delete of a file B never fetched: forgotten, not resurrected.
    a.run(&["data", "gc", "--keep", "1"]).expect(0);
    a.run(&["datastore", "sync", "-y"]).expect(0);
    b.run(&["datastore", "sync", "-y"]).expect(0);
    assert!(!bucket.contents().contains_key("swamp/team/data/m/x/2/raw"));
    let got = b.run(&["data", "get", "m/x", "--version", "2"]);
    got.expect(1);
    assert!(got.stderr.contains("no version 2"), "{}", got.stderr);
}

/// `--hydrate` (and `hydration = "full"`) fetch everything a lazy pull
/// recorded; `datastore setup SPEC --hydration lazy` is how a clone opts in.
fn hydrate_fetches_everything_a_lazy_pull_recorded(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, None);
    a.put("m/x", "one\n");
    a.put("m/x", "two\n");
    a.write_cache("outputs/o.txt", "out\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);

    let b = a.clone_elsewhere();
    b.run(&[
        "datastore",
        "setup",
        &bucket.spec(),
        "--hydration",
        "lazy",
        "-y",
    ])
    .expect(0);
    assert!(
        !std::fs::read_to_string(b.root.join(".swamp.toml"))
            .unwrap()
            .contains("hydration"),
        "one clone's choice stays out of .swamp.toml"
    );
    assert!(
        std::fs::read_to_string(b.root.join(".swamp/state/clone.toml"))
            .unwrap()
            .contains("hydration = \"lazy\""),
        "written to this clone's settings"
    );
    assert!(files(&b.cache()).is_empty());
    let plan = b.json(&["--json", "plan", "--hydrate"], 0);
    let kinds = crate::support::action_kinds(&plan);
    assert_eq!(
        kinds.iter().filter(|k| **k == "download").count(),
        3,
        "{kinds:?}"
    );
    b.run(&["datastore", "sync", "--pull", "--hydrate", "-y"])
        .expect(0);
    assert_eq!(files(&b.cache()), files(&a.cache()));
    let plan = b.run(&["plan", "--detailed-exitcode"]);
    plan.expect(0);
    assert!(!plan.stdout.contains("remote only"), "{}", plan.stdout);
    let status = b.json(&["--json", "status"], 0);
    assert_eq!(status["hydration"], "lazy");
    assert_eq!(status["hydration_source"], "clone");
    assert_eq!(status["unhydrated"], 0);
}

/// Hydration is each clone's own: `datastore hydration lazy` turns this
/// clone lazy and no other (`.swamp.toml` stays byte for byte), `data
/// list` says which versions are here and which only in the remote,
/// `full` brings the rest with the next pull, and `default` follows
/// `.swamp.toml` again.
fn hydration_is_each_clones_own_choice(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, None);
    a.put("m/x", "one\n");
    a.put("m/x", "two\n");
    a.put("n/y", "why\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    let shared = std::fs::read(b.root.join(".swamp.toml")).unwrap();

    let shown = b.json(&["--json", "datastore", "hydration"], 0);
    assert_eq!(shown["hydration"], "full");
    assert_eq!(shown["source"], "repository");
    let set = b.run(&["datastore", "hydration", "lazy"]);
    set.expect(0);
    assert!(
        set.stdout
            .contains("This clone's hydration is lazy now, from this clone's setting"),
        "{}",
        set.stdout
    );
    assert_eq!(std::fs::read(b.root.join(".swamp.toml")).unwrap(), shared);
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert!(files(&b.cache()).keys().all(|k| !k.starts_with("data/")));

    let listed = b.run(&["data", "list"]);
    listed.expect(0);
    assert!(listed.stdout.contains("in this cache"), "{}", listed.stdout);
    assert!(
        listed.stdout.contains("none (remote only)"),
        "{}",
        listed.stdout
    );
    assert_eq!(
        b.run(&["data", "get", "m/x", "--version", "1"]).stdout,
        "one\n"
    );
    let listed = b.json(&["--json", "data", "list"], 0);
    let m = &listed["data"][0];
    assert_eq!(m["name"], "m/x");
    assert_eq!(m["versions"], 2);
    assert_eq!(m["local_versions"], 1);
    assert_eq!(m["remote_only_versions"], 1);
    assert_eq!(m["latest_is_local"], false);
    let text = b.run(&["data", "list"]).stdout;
    assert!(
        text.contains("1 of 2 (latest in the remote only)"),
        "{text}"
    );

    // The other clone never turned lazy.
    assert_eq!(a.json(&["--json", "status"], 0)["hydration"], "full");

    let full = b.run(&["datastore", "hydration", "full"]);
    full.expect(0);
    assert!(
        full.stdout
            .contains("downloads the 2 file(s) recorded as in the remote only"),
        "{}",
        full.stdout
    );
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(files(&b.cache()), files(&a.cache()));
    let back = b.json(&["--json", "datastore", "hydration", "default"], 0);
    assert_eq!(back["source"], "repository");
    assert!(!b.root.join(".swamp/state/clone.toml").exists());
    assert_eq!(std::fs::read(b.root.join(".swamp.toml")).unwrap(), shared);
}

/// Leaving a lazy remote datastore for a local one brings home every file,
/// the ones never fetched included.
fn a_lazy_clone_moving_to_a_local_datastore_brings_every_file_home(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, None);
    a.put("m/x", "one\n");
    a.put("m/x", "two\n");
    a.write_cache("outputs/o.txt", "out\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let b = lazy_clone_of(&a);
    let status = b.run(&["status"]);
    assert!(
        status
            .stdout
            .contains("hydration   lazy: 3 file(s) in the remote only"),
        "{}",
        status.stdout
    );
    assert_eq!(
        b.run(&["data", "get", "m/x", "--version", "1"]).stdout,
        "one\n"
    );
    b.run(&["datastore", "setup", "local", "-y"]).expect(0);
    let home: BTreeMap<String, Vec<u8>> = files(&b.root.join(".swamp"))
        .into_iter()
        .filter(|(k, _)| !k.starts_with("state/") && !k.starts_with("data/_catalog"))
        .collect();
    assert_eq!(home, files(&a.cache()));
    assert_eq!(b.run(&["data", "get", "m/x"]).stdout, "two\n");
}

/// On a terminal a push shows its progress as it goes (issue 13: a push of
/// 5,000 files once showed nothing for 20 s): bytes done of the total, a
/// rate, an ETA and files done, drawn while the transfers run, not once at
/// the end. Uploads are slowed by a proxy so the screen is seen
/// mid-transfer.
#[test]
fn a_push_on_a_terminal_shows_bytes_rate_and_files_as_it_goes() {
    use crate::support::faults::{Fault, Rule};
    let (bucket, proxy) = Bucket::behind_proxy(Backend::S3);
    let repo = Repo::init(&bucket, Some("lab"));
    let dir = repo.cache().join("lab/outputs/big");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..40 {
        std::fs::write(
            dir.join(format!("f{i:02}.bin")),
            vec![b'x' + (i % 3) as u8; 64 << 10],
        )
        .unwrap();
    }
    proxy.rule(Rule::new(Fault::Delay(std::time::Duration::from_millis(60))).method("PUT"));
    let run = repo.run_on_terminal(&["datastore", "sync", "--push", "-y", "--transfers", "1"]);
    run.expect(0);
    let screen = run.stdout.replace('\r', "\n");
    // A frame drawn mid-transfer: some but not all of the bytes and files.
    let mid = screen
        .lines()
        .find(|l| {
            l.contains("applying")
                && l.contains("/2.5 MiB")
                && l.contains("/40 files")
                && !l.contains(" 0/40 files")
                && !l.contains("40/40 files")
        })
        .unwrap_or_else(|| panic!("no progress frame mid-transfer:\n{screen}"));
    assert!(mid.contains("iB/s"), "a rate: {mid}");
    assert!(mid.contains("ETA"), "an ETA: {mid}");
    assert!(mid.contains("/40 files"), "files done of the total: {mid}");
    // Before a byte has moved, neither is known: no `0 B/s, ETA 0s`.
    assert!(!screen.contains(", 0 B/s"), "{screen}");
    // The close says how long it took and how fast, as rclone's does.
    assert!(screen.contains("Transferred 2.5 MiB in "), "{screen}");
    assert!(screen.contains("iB/s)."), "{screen}");
    assert!(screen.contains("Converged"), "{screen}");
    // Piped, the same push draws nothing.
    for i in 0..40 {
        std::fs::write(dir.join(format!("f{i:02}.bin")), vec![b'a'; 64 << 10]).unwrap();
    }
    let piped = repo.run(&["datastore", "sync", "--push", "-y", "--force"]);
    piped.expect(0);
    assert!(!piped.stderr.contains("applying"), "{}", piped.stderr);
}

/// Two clones each store a new version of `m/x` before syncing: both
/// number it 2 (issue 13: a sync conflict, exit 3, and `keep-both` left a
/// copy `data list` could not see). Now the sync keeps both, with no
/// policy: the remote's keeps 2, the cache's becomes 3, and every clone
/// ends up with all three versions.
fn two_clones_storing_a_version_at_once_keep_both_versions(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("ns"));
    a.put("m/x", "one\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);

    a.put("m/x", "two from a\n");
    b.put("m/x", "two from b\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let run = b.run(&["datastore", "sync", "-y"]);
    run.expect(0);
    assert!(run.stdout.contains("renumbered"), "{}", run.stdout);
    a.run(&["datastore", "sync", "-y"]).expect(0);
    for clone in [&a, &b] {
        for (version, content) in [("1", "one\n"), ("2", "two from a\n"), ("3", "two from b\n")] {
            let got = clone.run(&["data", "get", "m/x", "--version", version]);
            got.expect(0);
            assert_eq!(got.stdout, content, "version {version}");
        }
        let list = clone.json(&["--json", "data", "list"], 0);
        assert_eq!(list["data"][0]["latest_version"], 3, "{list}");
        assert_eq!(list["data"][0]["versions"], 3, "{list}");
        clone.run(&["plan", "--detailed-exitcode"]).expect(0);
    }
    assert_eq!(
        bucket.contents()["swamp/ns/data/m/x/3/raw"],
        b"two from b\n"
    );
}

/// Clone A in namespace `ns` with versions 1–4 of `m/x` and one of `m/y`,
/// synced.
fn four_versions_of_x_and_one_of_y(bucket: &Bucket) -> Repo {
    let a = Repo::init(bucket, Some("ns"));
    for v in 1..=4 {
        a.put("m/x", &format!("x{v}\n"));
    }
    a.put("m/y", "y\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    a
}

/// Another clone of `a`'s repository, synced once.
fn synced_clone(a: &Repo) -> Repo {
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    b
}

/// A peer's `data gc` (issue 13): once, clone A needed `--force` to push
/// its own gc (more than half its files deleted), and then every other
/// clone's sync was refused by the same guard. Deletes swamp's commands
/// make travel with their intent now: A syncs without `--force` and
/// records them in the bucket, and B syncs without `--force` too, losing
/// exactly A's deleted versions. Objects that vanish behind swamp's back
/// still trip B's guard.
fn a_peers_gc_reaches_other_clones_but_a_bucket_emptied_behind_swamps_back_still_trips_the_guard(
    backend: Backend,
) {
    let bucket = Bucket::new(backend);
    let a = four_versions_of_x_and_one_of_y(&bucket);
    let b = synced_clone(&a);

    // 3 of 5 files: over the 50% guard, but swamp's own doing; a pull in
    // between does not make it less so.
    a.run(&["data", "gc", "--keep", "1"]).expect(0);
    a.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    // Sync records are listed by kind with --detail.
    let run = a.run(&["--detail", "datastore", "sync", "-y"]);
    run.expect(0);
    assert!(run.stdout.contains("record-deletes"), "{}", run.stdout);
    let records: Vec<String> = bucket
        .contents()
        .into_keys()
        .filter(|k| k.starts_with("swamp/ns/.swamp/deletes/"))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");

    let run = b.run(&["datastore", "sync", "-y"]);
    run.expect(0);
    let b_data: Vec<String> = files(&b.cache().join("ns/data")).into_keys().collect();
    assert_eq!(b_data, ["m/x/4/raw", "m/y/1/raw"], "{}", run.stdout);
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
    a.run(&["plan", "--detailed-exitcode"]).expect(0);

    // Emptied behind swamp's back: no record explains it.
    for key in bucket.contents().into_keys() {
        if key.starts_with("swamp/ns/data/") {
            bucket.delete(&key);
        }
    }
    let run = b.run(&["datastore", "sync", "-y"]);
    run.expect(3);
    assert!(run.stdout.contains("delete guard"), "{}", run.stdout);
    assert_eq!(
        files(&b.cache().join("ns/data")).len(),
        2,
        "nothing deleted from the cache"
    );
}

/// A delete record is kept until every other clone's sync base has
/// passed it (and a week at least), then removed (issue 13: records were
/// pruned by age alone). Each clone notes how far it has got in a key of
/// its own under `.swamp/clones/`, written only when it advances.
fn a_delete_record_stays_until_every_other_clone_has_passed_it(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = four_versions_of_x_and_one_of_y(&bucket);
    let keys = |under: &str| -> Vec<String> {
        bucket
            .contents()
            .into_keys()
            .filter(|k| k.starts_with(&format!("swamp/ns/.swamp/{under}/")))
            .collect()
    };
    let clones = |keys: Vec<String>| -> std::collections::BTreeSet<String> {
        keys.iter()
            .map(|k| k.split('/').nth(4).unwrap().to_string())
            .collect()
    };
    // A clone that only pulls writes nothing to the bucket, not even its
    // progress note (credentials that may only read must do).
    let b = synced_clone(&a);
    let c = synced_clone(&a);
    assert_eq!(clones(keys("clones")).len(), 1, "{:?}", keys("clones"));
    // Each notes its progress once it writes the bucket anyway.
    b.put("m/b", "b1\n");
    b.run(&["datastore", "sync", "-y"]).expect(0);
    c.put("m/c", "c1\n");
    c.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(clones(keys("clones")).len(), 3, "{:?}", keys("clones"));

    a.run(&["data", "gc", "--keep", "1"]).expect(0);
    a.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(keys("deletes").len(), 1, "recorded");

    // B has passed it (noting so with a push of its own), C has not yet:
    // it stays.
    b.put("m/b", "b2\n");
    b.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(keys("deletes").len(), 1, "C still needs it");
    let quiet = b.run(&["plan", "--detailed-exitcode"]);
    quiet.expect(0);

    // C passes it last, without --force, and notes so. A record is kept a
    // week at least (a clone that never noted may still need it), then the
    // next sync that writes the bucket anywhere removes it.
    c.put("m/c", "c2\n");
    let run = c.run(&["--detail", "datastore", "sync", "-y"]);
    run.expect(0);
    assert!(run.stdout.contains("note-progress"), "{}", run.stdout);
    let c_data: Vec<String> = files(&c.cache().join("ns/data")).into_keys().collect();
    assert_eq!(
        c_data,
        [
            "m/b/1/raw",
            "m/b/2/raw",
            "m/c/1/raw",
            "m/c/2/raw",
            "m/x/4/raw",
            "m/y/1/raw"
        ],
        "{}",
        run.stdout
    );
    assert_eq!(keys("deletes").len(), 1, "kept for a week");
    let week_later = humantime::format_rfc3339_seconds(
        std::time::SystemTime::now() + std::time::Duration::from_secs(8 * 86_400),
    )
    .to_string();
    // A pull alone would prune nothing: the prune rides along with a push.
    let detail = ["--detail", "datastore", "sync", "-y"];
    let run = b.run_with(&detail, &[("SWAMP_NOW", &week_later)]);
    run.expect(0);
    assert!(!run.stdout.contains("prune-records"), "{}", run.stdout);
    assert_eq!(keys("deletes").len(), 1);
    b.put("m/b", "b3\n");
    let run = b.run_with(&detail, &[("SWAMP_NOW", &week_later)]);
    run.expect(0);
    assert!(run.stdout.contains("prune-records"), "{}", run.stdout);
    assert!(keys("deletes").is_empty(), "{:?}", keys("deletes"));
    // One note per clone, however often each advanced.
    let notes = keys("clones");
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert_eq!(clones(notes).len(), 3);
    for clone in [&a, &c] {
        clone.run(&["datastore", "sync", "-y"]).expect(0);
    }
    for clone in [&a, &b, &c] {
        clone.run(&["plan", "--detailed-exitcode"]).expect(0);
    }
}

/// Delete records never change once written, so a clone reads each once:
/// a converged sync after it reads no record and no note, however many
/// records the bucket holds (they stay at least a week).
#[test]
fn each_delete_record_is_read_once() {
    let (bucket, proxy) = Bucket::behind_proxy(Backend::S3);
    let a = Repo::init(&bucket, Some("ns"));
    for v in 1..=3 {
        a.put("m/x", &format!("x{v}\n"));
    }
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    a.run(&["data", "gc", "--keep", "1"]).expect(0);
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let record_gets = |from: usize| {
        proxy.seen()[from..]
            .iter()
            .filter(|s| s.method == "GET" && s.target.contains("/.swamp/deletes/"))
            .count()
    };
    let from = proxy.seen().len();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    assert_eq!(record_gets(from), 1, "read once by the sync that passes it");
    let from = proxy.seen().len();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
    assert_eq!(record_gets(from), 0, "and never again");
    // Nor any request for a data object or a note.
    let objects: Vec<String> = proxy.seen()[from..]
        .iter()
        .filter(|s| !s.target.contains("prefix="))
        .filter(|s| s.target.contains("/data/") || s.target.contains("/.swamp/clones/"))
        .map(|s| format!("{} {}", s.method, s.target))
        .collect();
    assert!(objects.is_empty(), "{objects:?}");
}

/// What AWS answers a CopyObject of more than 5 GiB (SeaweedFS has no
/// such limit, so the fault proxy answers for it).
fn copy_source_too_large() -> crate::support::faults::Fault {
    crate::support::faults::Fault::S3Error(
        400,
        "InvalidRequest",
        "The specified copy source is larger than the maximum allowable size for a copy source: 5368709120",
    )
}

/// A repository in namespace `lab` whose cache holds `files/<name>` and
/// two small files (so that deleting the big one trips no guard).
fn lab_with_a_big_file(bucket: &Bucket, name: &str, body: &[u8]) -> Repo {
    let repo = Repo::init(bucket, Some("lab"));
    std::fs::create_dir_all(repo.cache().join("lab/files")).unwrap();
    std::fs::write(repo.cache().join("lab/files").join(name), body).unwrap();
    std::fs::write(repo.cache().join("lab/files/small.txt"), "s\n").unwrap();
    std::fs::write(repo.cache().join("lab/files/other.txt"), "o\n").unwrap();
    repo
}

/// A copy made in parts carries over what CopyObject would: the object's
/// Content-Type and Cache-Control and its user metadata (issue 12: the part
/// copy kept only swamp's sha256, so an object another tool wrote lost its
/// headers in the remote trash and came back from `undo` without them).
#[test]
fn a_copy_in_parts_keeps_the_objects_headers_and_metadata() {
    use crate::support::faults::Rule;
    use sha2::Digest;
    let (bucket, proxy) = Bucket::behind_proxy(Backend::S3);
    let body: Vec<u8> = (0..(12u32 << 20)).map(|i| (i % 251) as u8).collect();
    let repo = lab_with_a_big_file(&bucket, "big.csv", &body);
    let sha = hex::encode(sha2::Sha256::digest(&body));
    crate::support::servers::s3().put_with(
        &bucket.name,
        "swamp/lab/files/big.csv",
        &body,
        &[
            ("Content-Type", "text/csv"),
            ("Cache-Control", "max-age=60"),
            ("x-amz-meta-owner", "ops"),
            ("x-amz-meta-sha256", &sha),
        ],
    );
    repo.run(&["datastore", "sync", "-y"]).expect(0);
    proxy.rule(
        Rule::new(copy_source_too_large())
            .method("PUT")
            .target(".swamp/trash/")
            .times(1),
    );
    std::fs::remove_file(repo.cache().join("lab/files/big.csv")).unwrap();
    repo.run_with(
        &["datastore", "sync", "--push", "-y"],
        &[("SWAMP_COPY_PART_MIB", "5")],
    )
    .expect(0);
    let trashed: Vec<String> = bucket
        .contents()
        .into_keys()
        .filter(|k| k.contains("/.swamp/trash/") && k.ends_with("files/big.csv"))
        .collect();
    assert_eq!(trashed.len(), 1, "{:?}", bucket.contents().keys());
    let parts = proxy
        .seen()
        .iter()
        .filter(|s| s.method == "PUT" && s.target.contains("partNumber="))
        .count();
    assert!(parts >= 3, "copied in parts: {parts}");
    let headers = crate::support::servers::s3().head_headers(&bucket.name, &trashed[0]);
    assert_eq!(
        headers.get("content-type").map(String::as_str),
        Some("text/csv"),
        "{headers:?}"
    );
    assert_eq!(
        headers.get("cache-control").map(String::as_str),
        Some("max-age=60"),
        "{headers:?}"
    );
    assert_eq!(
        headers.get("x-amz-meta-owner").map(String::as_str),
        Some("ops"),
        "{headers:?}"
    );
    assert_eq!(headers.get("x-amz-meta-sha256"), Some(&sha), "{headers:?}");
}

/// A multipart upload that vanished before it was completed (aborted by
/// someone, expired by a lifecycle rule) is said to be so, not reported as
/// a changed object (a precondition conflict); nothing was deleted, and the
/// next run goes through.
#[test]
fn a_multipart_upload_gone_before_completion_says_so_and_deletes_nothing() {
    use crate::support::faults::{Fault, Rule};
    let (bucket, proxy) = Bucket::behind_proxy(Backend::S3);
    let body: Vec<u8> = (0..(12u32 << 20)).map(|i| (i % 241) as u8).collect();
    let repo = lab_with_a_big_file(&bucket, "big.bin", &body);
    repo.run(&["datastore", "sync", "-y"]).expect(0);
    let too_large = || {
        Rule::new(copy_source_too_large())
            .method("PUT")
            .target(".swamp/trash/")
            .times(1)
    };
    proxy.rule(too_large());
    proxy.rule(
        Rule::new(Fault::S3Error(
            404,
            "NoSuchUpload",
            "The specified upload does not exist.",
        ))
        .method("POST")
        .target("uploadId=")
        .times(1),
    );
    std::fs::remove_file(repo.cache().join("lab/files/big.bin")).unwrap();
    let env = [("SWAMP_COPY_PART_MIB", "5")];
    let run = repo.run_with(&["datastore", "sync", "--push", "-y"], &env);
    run.expect(1);
    assert!(run.stderr.contains("upload of"), "{}", run.stderr);
    assert!(run.stderr.contains("was gone"), "{}", run.stderr);
    assert!(!run.stderr.contains("precondition"), "{}", run.stderr);
    assert!(
        bucket.contents().contains_key("swamp/lab/files/big.bin"),
        "not deleted"
    );
    proxy.rule(too_large());
    repo.run_with(&["datastore", "sync", "--push", "-y"], &env)
        .expect(0);
    assert!(!bucket.contents().contains_key("swamp/lab/files/big.bin"));
}

/// An object over CopyObject's limit (5 GiB on AWS; SeaweedFS has none,
/// so the proxy answers as AWS does) is still set aside before a delete,
/// and restored by `undo`: copied in parts (UploadPartCopy, each pinned to
/// the source's ETag), with its sha256 metadata. Issue 12: such objects
/// once failed every sync that deleted or replaced them.
#[test]
fn an_object_too_large_to_copy_in_one_request_is_trashed_and_restored_in_parts() {
    use crate::support::faults::Rule;
    let (bucket, proxy) = Bucket::behind_proxy(Backend::S3);
    let body: Vec<u8> = (0..(12u32 << 20)).map(|i| (i % 251) as u8).collect();
    let repo = lab_with_a_big_file(&bucket, "big.bin", &body);
    repo.run(&["datastore", "sync", "-y"]).expect(0);
    let too_large = copy_source_too_large();
    // The trash copy before the delete, and undo's copy back.
    proxy.rule(
        Rule::new(too_large)
            .method("PUT")
            .target(".swamp/trash/")
            .times(1),
    );
    std::fs::remove_file(repo.cache().join("lab/files/big.bin")).unwrap();
    let run = repo.run_with(
        &["datastore", "sync", "--push", "-y"],
        &[("SWAMP_COPY_PART_MIB", "5")],
    );
    run.expect(0);
    let trashed: Vec<(String, Vec<u8>)> = bucket
        .contents()
        .into_iter()
        .filter(|(k, _)| k.contains("/.swamp/trash/") && k.ends_with("files/big.bin"))
        .collect();
    assert_eq!(trashed.len(), 1, "{:?}", bucket.contents().keys());
    assert!(
        trashed[0].1 == body,
        "the trash copy holds the object's bytes"
    );
    let parts = proxy
        .seen()
        .iter()
        .filter(|s| {
            s.method == "PUT"
                && s.target.contains("partNumber=")
                && s.target.contains(".swamp/trash/")
        })
        .count();
    assert_eq!(parts, 3, "12 MiB in parts of 5 MiB");
    assert!(!bucket.contents().contains_key("swamp/lab/files/big.bin"));

    proxy.rule(
        Rule::new(too_large)
            .method("PUT")
            .target("files/big.bin")
            .times(1),
    );
    let undo = repo.run_with(&["undo", "-y"], &[("SWAMP_COPY_PART_MIB", "5")]);
    undo.expect(0);
    assert!(bucket.contents()["swamp/lab/files/big.bin"] == body);
    // Restored with its sha256: a pull verifies it, and then all agree.
    repo.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert!(std::fs::read(repo.cache().join("lab/files/big.bin")).unwrap() == body);
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
}

on_every_backend!(
    a_peers_gc_reaches_other_clones_but_a_bucket_emptied_behind_swamps_back_still_trips_the_guard,
    a_delete_record_stays_until_every_other_clone_has_passed_it,
    two_clones_storing_a_version_at_once_keep_both_versions,
    namespace_scoped_pull_writes_only_under_the_namespace,
    a_peer_deletion_propagates_and_is_not_resurrected,
    both_sides_changed_is_a_conflict_until_a_policy_settles_it,
    other_namespaces_and_foreign_keys_are_never_touched,
    an_emptied_cache_is_refused_naming_the_guard_and_force,
    a_namespace_owned_by_another_repo_is_refused,
    setup_moves_local_data_into_the_bucket,
    setup_round_trip_leaves_files_identical_and_the_bucket_empty,
    setting_a_namespace_re_keys_remote_objects,
    a_symlink_in_the_cache_is_never_followed,
    a_lazy_clone_fetches_on_first_read_and_never_deletes_what_it_did_not_fetch,
    hydrate_fetches_everything_a_lazy_pull_recorded,
    hydration_is_each_clones_own_choice,
    a_lazy_clone_moving_to_a_local_datastore_brings_every_file_home,
);

/// Three `data get` of one 24 MiB lazy version and a hydrating pull, all
/// at once, in one clone: each get prints the version's bytes, the pull
/// converges, and the cache holds the file whole. (They once shared one
/// partial file, and two of three gets failed with "a cache file appeared
/// where the plan expected none".)
#[test]
fn concurrent_reads_of_one_lazy_version_and_a_hydrating_pull_all_get_it_whole() {
    let bucket = Bucket::new(Backend::S3);
    let a = Repo::init(&bucket, Some("team"));
    let mut body = String::with_capacity(24 << 20);
    let mut i = 0u64;
    while body.len() < 24 << 20 {
        body.push_str(&format!("{i:015}\n"));
        i += 1;
    }
    std::fs::write(a.root.join("big.txt"), &body).unwrap();
    a.run_ok(&["data", "put", "m/big", "--file", "big.txt"]);
    a.run_ok(&["datastore", "sync", "--push", "-y"]);
    let b = lazy_clone_of(&a);

    let gets: Vec<_> = (0..3)
        .map(|_| b.spawn(&["--lock-timeout", "120", "data", "get", "m/big"], &[]))
        .collect();
    let pull = b.spawn(
        &[
            "--lock-timeout",
            "120",
            "datastore",
            "sync",
            "--pull",
            "--hydrate",
            "-y",
        ],
        &[],
    );
    for (n, get) in gets.into_iter().enumerate() {
        let got = crate::support::bucket::finish(get);
        got.expect(0);
        assert!(
            got.stdout == body,
            "get {n}: {} bytes, not the version's",
            got.stdout.len()
        );
    }
    crate::support::bucket::finish(pull).expect(0);
    let cached = std::fs::read_to_string(b.cache().join("team/data/m/big/1/raw")).unwrap();
    assert!(cached == body, "the cache file is whole");
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// Two `data get` of different large lazy versions: the cache's lock is
/// held only while each lands, not through its transfer, so a read whose
/// download is slow keeps no other read waiting.
#[test]
fn a_slow_lazy_read_keeps_no_read_of_another_name_waiting() {
    use crate::support::faults::{Fault, Rule};
    let (bucket, proxy) = Bucket::behind_proxy(Backend::S3);
    let a = Repo::init(&bucket, Some("team"));
    for (name, fill) in [("slow", b'a'), ("fast", b'b')] {
        std::fs::write(a.root.join(name), vec![fill; 17 << 20]).unwrap();
        a.run_ok(&["data", "put", &format!("m/{name}"), "--file", name]);
    }
    a.run_ok(&["datastore", "sync", "--push", "-y"]);
    let b = lazy_clone_of(&a);
    // The slow version's answers are held this long; the fast read must
    // reach the server well inside it.
    let held = std::time::Duration::from_secs(10);
    proxy.rule(
        Rule::new(Fault::Delay(held))
            .method("GET")
            .target("m/slow/")
            .times(1),
    );
    let slow = b.spawn(&["--lock-timeout", "120", "data", "get", "m/slow"], &[]);
    // Until the slow read's transfer has started.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while proxy.fired() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow read never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let fast = b.run(&["--lock-timeout", "120", "data", "get", "m/fast"]);
    fast.expect(0);
    assert!(fast.stdout.len() == 17 << 20 && fast.stdout.bytes().all(|c| c == b'b'));
    let seen = proxy.seen();
    let slow_at = seen.iter().find(|s| s.fault.is_some()).unwrap().at;
    let fast_at = seen
        .iter()
        .find(|s| s.method == "GET" && s.target.contains("m/fast/"))
        .expect("the fast read's GET")
        .at;
    assert!(
        fast_at < slow_at + held,
        "the fast read waited for the slow one's transfer: it reached the server {:?} after it",
        fast_at - slow_at
    );
    let slow = crate::support::bucket::finish(slow);
    slow.expect(0);
    assert!(slow.stdout.len() == 17 << 20 && slow.stdout.bytes().all(|c| c == b'a'));
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// `swamp sync --conflict local` showed `upload … changed in the cache`,
/// like an upload nobody else touched, and `--conflict newer` on a
/// deleted-versus-changed conflict was taken and shown as `new in the
/// cache` (issue 42). Now each row a policy chose says which conflict it
/// settles and what it replaces, the JSON action carries `settled_by`,
/// and a policy that does not settle a conflict's kind is refused (64)
/// before anything is written.
#[test]
fn a_row_settled_by_a_policy_says_so_and_newer_on_a_delete_is_refused() {
    let bucket = Bucket::new(Backend::S3);
    let a = Repo::init(&bucket, Some("ns"));
    a.write_cache("ns/outputs/x.yaml", "base\n");
    a.write_cache("ns/outputs/d.yaml", "base\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    a.write_cache("ns/outputs/x.yaml", "from a\n");
    a.write_cache("ns/outputs/d.yaml", "changed by a\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    b.write_cache("ns/outputs/x.yaml", "from b\n");
    std::fs::remove_file(b.cache().join("ns/outputs/d.yaml")).unwrap();
    let before = bucket.contents();

    let newer = b.run(&["datastore", "sync", "-y", "--conflict", "newer"]);
    newer.expect(64);
    assert!(
        newer.stderr.contains(
            "`--conflict newer` does not settle deleted-and-changed conflicts (outputs/d.yaml)"
        ),
        "{}",
        newer.stderr
    );
    assert!(
        newer.stderr.contains("--conflict remote"),
        "{}",
        newer.stderr
    );
    assert_eq!(bucket.contents(), before, "refused before any write");

    let preview = b.run(&["datastore", "sync", "--conflict", "local"]);
    for row in [
        "both changed: `--conflict local` keeps the cache's copy, replacing the remote's version written ",
        "deleted in the cache, changed in the remote: `--conflict local` keeps the delete, deleting the remote's version written ",
        "2 conflict(s) settled by `--conflict local`",
    ] {
        assert!(preview.stdout.contains(row), "{row}\n{}", preview.stdout);
    }
    let json = b.json(&["datastore", "sync", "--conflict", "local", "--json"], 2);
    let settled: Vec<(&str, &str)> = json["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a.get("settled_by").is_some())
        .map(|a| (a["kind"].as_str().unwrap(), a["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        settled,
        [
            ("upload", "outputs/x.yaml"),
            ("delete-remote", "outputs/d.yaml")
        ],
        "{json}"
    );
    assert_eq!(json["plan"]["summary"]["settled"], 2);
    assert_eq!(bucket.contents(), before, "a preview writes nothing");
}

/// `lock status --datastore …` without `--namespace` reported the unused
/// top-level lock `free`, and a plan under a mistyped namespace showed an
/// empty remote, neither naming the namespace the bucket does hold
/// (issue 42). Both now say which namespaces are there.
#[test]
fn a_lock_or_plan_that_finds_nothing_names_the_namespaces_the_bucket_holds() {
    let bucket = Bucket::new(Backend::S3);
    let a = Repo::init(&bucket, Some("team"));
    a.put("m/x", "x\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);

    let spec = bucket.spec();
    let lock = a.run(&["datastore", "lock", "status", "--datastore", &spec]);
    lock.expect(0);
    assert!(lock.stdout.contains("free"), "{}", lock.stdout);
    assert!(
        lock.stderr
            .contains("it holds namespace(s) team: add `--namespace team`"),
        "{}",
        lock.stderr
    );
    let json = a.json(
        &[
            "--json",
            "datastore",
            "lock",
            "status",
            "--datastore",
            &spec,
        ],
        0,
    );
    assert_eq!(json["namespaces"], serde_json::json!(["team"]));
    let listed = a.json(
        &["--json", "datastore", "namespaces", "--datastore", &spec],
        0,
    );
    assert_eq!(
        listed["namespaces"][0]["namespace"], "team",
        "no repository needed"
    );

    let typo = Repo::init(&bucket, Some("tema"));
    let plan = typo.run(&["plan"]);
    plan.expect(0);
    assert!(
        plan.stderr.contains("beside it the datastore holds team"),
        "{}",
        plan.stderr
    );
    let quiet = typo.run(&["-q", "plan"]);
    assert!(!quiet.stderr.contains("beside it"), "-q silences notes");
}

/// `datastore setup local` in one clone planned `410 old object(s) to
/// delete` without a word about the other clones whose progress notes sat
/// in the bucket, who then found it emptied (issue 43). A plan moving
/// away from a bucket names each other clone that synced there.
#[test]
fn a_plan_moving_away_from_a_bucket_names_the_other_clones_that_sync_there() {
    let bucket = Bucket::new(Backend::Fs);
    let a = Repo::init(&bucket, Some("team"));
    a.put("m/x", "x\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    b.put("m/y", "y\n");
    b.run(&["datastore", "sync", "-y"]).expect(0);
    let b_id = std::fs::read_to_string(b.root.join(".swamp/state/clone-id")).unwrap();
    let b_id = b_id.trim();

    let preview = a.run(&["datastore", "setup", "local"]);
    preview.expect(2);
    assert!(
        preview.stdout.contains(&format!(
            "1 other clone(s) synced with source 0: {}",
            &b_id[..12]
        )),
        "{}",
        preview.stdout
    );
    let json = a.json(&["--json", "datastore", "setup", "local"], 2);
    let others = json["plan"]["other_clones"].as_array().unwrap();
    assert_eq!(others.len(), 1, "{json}");
    assert_eq!(others[0]["clone"], b_id);
    assert!(others[0]["noted"].is_i64(), "{json}");
    // A clone that last noted its progress past `[undo] keep_days` (7)
    // is not named.
    let week_on = (8 * 86_400).to_string();
    let later = a.run_with(
        &["datastore", "setup", "local"],
        &[("SWAMP_CLOCK_SKEW", &week_on)],
    );
    later.expect(2);
    assert!(!later.stdout.contains("other clone(s)"), "{}", later.stdout);
}
