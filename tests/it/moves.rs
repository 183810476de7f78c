//! Moving a datastore between buckets, prefixes and providers (`datastore
//! setup NEWSPEC` from a bucket): server-side copies on one provider and
//! endpoint, streamed ones across, adoption and conflicts at the
//! destination, `.swamp.toml` switched only once every copy is verified,
//! the old objects deleted (or kept) and a `moved` marker left for the
//! clones still configured for the old place.

use std::collections::BTreeMap;

use crate::support::bucket::{Backend, Bucket, Repo};

/// The data objects under `swamp/team/` (not swamp's own records), by
/// their key below the namespace.
fn data(contents: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    data_in(contents, "swamp/team/")
}

/// [`data`] under the namespace prefix `ns`.
fn data_in(contents: BTreeMap<String, Vec<u8>>, ns: &str) -> BTreeMap<String, Vec<u8>> {
    contents
        .into_iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(ns)?.to_string(), v)))
        .filter(|(k, _)| !k.starts_with(".swamp/") && k != ".namespace.json")
        .collect()
}

/// The keys of `contents` outside swamp's trash (`.swamp/trash/…`).
fn outside_trash(contents: BTreeMap<String, Vec<u8>>) -> Vec<String> {
    contents
        .into_keys()
        .filter(|k| !k.contains("/.swamp/trash/"))
        .collect()
}

/// What the trash under `ns` holds, by the key each file had (the apply
/// id left out).
fn trash_in(contents: BTreeMap<String, Vec<u8>>, ns: &str) -> BTreeMap<String, Vec<u8>> {
    let trash = format!("{ns}.swamp/trash/");
    contents
        .into_iter()
        .filter_map(|(k, v)| {
            let (_id, key) = k.strip_prefix(&trash)?.split_once('/')?;
            Some((key.to_string(), v))
        })
        .collect()
}

/// The copy actions of a run's plan, from its `--json` document.
fn copies(doc: &serde_json::Value) -> Vec<&serde_json::Value> {
    doc["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "copy-remote")
        .collect()
}

/// A repository in namespace `team` on `bucket` holding two files, pushed.
fn pushed(bucket: &Bucket) -> Repo {
    let a = Repo::init(bucket, Some("team"));
    a.put("m/x", "x\n");
    a.put("m/y", "y\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    a
}

/// A run sent exactly the requests its plan estimated, class by class.
#[track_caller]
fn assert_as_estimated(doc: &serde_json::Value) {
    let estimated = &doc["plan"]["summary"]["requests"];
    for class in ["list", "get", "head", "put", "copy", "delete"] {
        assert_eq!(
            sent(doc, class),
            estimated[class].as_u64().unwrap_or(0),
            "{class}: sent {} estimated {estimated}",
            doc["applied"]["requests_sent"]
        );
    }
}

/// A run's plan moved no file either way.
#[track_caller]
fn assert_no_transfers(doc: &serde_json::Value) {
    let s = &doc["plan"]["summary"];
    assert_eq!(
        (s["upload"].as_u64(), s["download"].as_u64()),
        (Some(0), Some(0)),
        "{doc}"
    );
}

/// The requests of a run, from its `--json` document.
fn sent(doc: &serde_json::Value, class: &str) -> u64 {
    doc["applied"]["requests_sent"][class].as_u64().unwrap_or(0)
}

/// The move on one server: a preview writes nothing anywhere; applied,
/// every object is copied by the server (no GET, no PUT of a body), the
/// old place keeps only the `moved` marker, and `.swamp.toml` names the
/// new bucket. A clone that takes that `.swamp.toml` syncs with nothing to
/// transfer; one still on the old place stops before writing, told where
/// the datastore went and how to follow, and following moves nothing.
fn moves_server_side(backend: Backend) {
    let from = Bucket::new(backend);
    let to = Bucket::new(backend);
    let a = pushed(&from);
    let stays = a.clone_elsewhere();
    stays.run(&["datastore", "sync", "-y"]).expect(0);
    let config = a.config();
    let before = from.contents();

    let preview = a.run(&["datastore", "setup", &to.spec(), "--dry-run"]);
    preview.expect(0);
    assert!(
        preview.stdout.contains("2 to copy server-side"),
        "{}",
        preview.stdout
    );
    assert!(
        preview.stdout.contains("server-side copy"),
        "{}",
        preview.stdout
    );
    assert!(to.contents().is_empty(), "{:?}", to.contents().keys());
    assert_eq!(from.contents(), before);
    assert_eq!(a.config(), config);

    let doc = a.json(&["--json", "datastore", "setup", &to.spec(), "-y"], 0);
    assert_eq!(doc["converged"], true, "{doc}");
    let copies = copies(&doc);
    assert_eq!(copies.len(), 2, "{doc}");
    assert!(copies.iter().all(|c| c.get("streamed").is_none()), "{doc}");
    // Two into the new bucket, two into the old place's trash.
    assert_eq!(sent(&doc, "copy"), 4, "{doc}");
    assert_eq!(
        sent(&doc, "get"),
        0,
        "no object body through this machine: {doc}"
    );
    assert_as_estimated(&doc);
    assert_eq!(data(to.contents()), data(before.clone()), "{doc}");
    assert_eq!(data(to.contents()).len(), 2, "{doc}");
    assert_sha256_metadata(&to);
    assert!(a.config().contains(&to.name), "{}", a.config());
    assert!(!a.config().contains("migrating_from"), "{}", a.config());
    let left = outside_trash(from.contents());
    assert_eq!(left, ["swamp/team/.swamp/moved.json"], "{left:?}");
    assert_eq!(
        trash_in(from.contents(), "swamp/team/"),
        data(before.clone()),
        "the old objects wait in the old place's trash"
    );
    let marker: serde_json::Value =
        serde_json::from_slice(&from.get("swamp/team/.swamp/moved.json").unwrap()).unwrap();
    assert!(
        marker["to"].as_str().unwrap().contains(&to.name),
        "{marker}"
    );

    let follower = a.clone_elsewhere();
    let doc = follower.json(&["--json", "datastore", "sync", "-y"], 0);
    let summary = &doc["plan"]["summary"];
    assert_eq!(summary["download"], 2, "a new clone downloads: {doc}");
    let again = a.json(&["--json", "datastore", "sync", "-y"], 0);
    assert_no_transfers(&again);

    let at_old = from.contents();
    let stopped = stays.run(&["datastore", "sync", "-y"]);
    stopped.expect(1);
    assert!(stopped.stderr.contains("moved away"), "{}", stopped.stderr);
    assert!(stopped.stderr.contains(&to.name), "{}", stopped.stderr);
    assert!(
        stopped.stderr.contains("swamp datastore setup"),
        "{}",
        stopped.stderr
    );
    assert_eq!(
        from.contents(),
        at_old,
        "the clone on the old place wrote nothing"
    );
    let followed = stays.json(&["--json", "datastore", "setup", &to.spec(), "-y"], 0);
    let s = &followed["plan"]["summary"];
    assert_eq!(
        (
            s["upload"].as_u64(),
            s["download"].as_u64(),
            s["copy_remote"].as_u64()
        ),
        (Some(0), Some(0), Some(0)),
        "{followed}"
    );
    stays.run(&["datastore", "sync", "-y"]).expect(0);
}

#[test]
fn a_move_to_another_bucket_on_one_s3_server_copies_server_side() {
    moves_server_side(Backend::S3);
}

#[test]
fn a_move_to_another_bucket_on_one_gcs_server_copies_server_side() {
    moves_server_side(Backend::Gcs);
}

/// Every data file in namespace `team` of the cache at `cache`.
fn cached_files(cache: &std::path::Path) -> Vec<String> {
    walkdir::WalkDir::new(cache.join("team/data"))
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().display().to_string())
        .collect()
}

/// The sha256 metadata of every data object under `swamp/team/`, checked
/// against the bytes.
fn assert_sha256_metadata(bucket: &Bucket) {
    let store = bucket.store();
    for (key, body) in data(bucket.contents()) {
        let key = format!("swamp/team/{key}");
        let meta = Bucket::block_on(store.head(&key)).unwrap().unwrap();
        assert_eq!(
            meta.sha256.as_deref(),
            Some(crate::support::bucket::sha(&body).as_str()),
            "{key}"
        );
    }
}

/// Across providers nothing can be copied server-side: each object is
/// streamed (GET, then PUT with its sha256), a large one through a spool
/// file, never the cache; moving back is the same move the other way,
/// into the place whose marker it clears.
#[test]
fn a_move_from_s3_to_gcs_and_back_streams_every_byte_with_its_sha256() {
    let s3 = Bucket::new(Backend::S3);
    let gcs = Bucket::new(Backend::Gcs);
    let mut env = s3.env();
    env.extend(gcs.env());
    let a = Repo::empty(env);
    a.run(&["init", "--datastore", &s3.spec(), "--namespace", "team"])
        .expect(0);
    a.put("m/x", "x\n");
    // Over the 1 MiB held in memory: through the spool file.
    let big: String = (0..300_000).map(|i| format!("{i:07}\n")).collect();
    a.put("m/big", &big);
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let before = data(s3.contents());
    assert_eq!(before.len(), 2);

    let doc = a.json(&["--json", "datastore", "setup", &gcs.spec(), "-y"], 0);
    let copies = copies(&doc);
    assert_eq!(copies.len(), 2, "{doc}");
    assert!(copies.iter().all(|c| c["streamed"] == true), "{doc}");
    assert_eq!(doc["plan"]["summary"]["copy_streamed"], 2, "{doc}");
    // Server-side only the old objects' copies into their trash.
    assert_eq!(sent(&doc, "copy"), 2, "{doc}");
    assert_eq!(sent(&doc, "get"), 2, "{doc}");
    assert_as_estimated(&doc);
    assert_eq!(data(gcs.contents()), before);
    assert_sha256_metadata(&gcs);
    let left = outside_trash(s3.contents());
    assert_eq!(left, ["swamp/team/.swamp/moved.json"]);
    assert!(
        !a.exists(".swamp/state/moving")
            || std::fs::read_dir(a.path(".swamp/state/moving"))
                .unwrap()
                .next()
                .is_none()
    );

    a.json(&["--json", "datastore", "setup", &s3.spec(), "-y"], 0);
    assert_eq!(data(s3.contents()), before);
    assert_sha256_metadata(&s3);
    assert!(
        s3.get("swamp/team/.swamp/moved.json").is_none(),
        "moving back clears the marker"
    );
    let left = outside_trash(gcs.contents());
    assert_eq!(left, ["swamp/team/.swamp/moved.json"]);
    let again = a.json(&["--json", "datastore", "sync", "-y"], 0);
    assert_no_transfers(&again);
}

/// What the new place already holds with the same sha256 is adopted (no
/// copy); other content there is a conflict: exit 3, nothing copied,
/// nothing deleted, `.swamp.toml` as it was, both sides named.
#[test]
fn an_object_already_at_the_new_place_is_adopted_and_a_different_one_blocks_the_move() {
    let from = Bucket::new(Backend::S3);
    let to = Bucket::new(Backend::S3);
    let a = pushed(&from);
    let before = data(from.contents());
    let config = a.config();
    to.put("swamp/team/data/m/x/1/raw", b"x\n");
    to.put("swamp/team/data/m/y/1/raw", b"not y\n");

    let run = a.run(&["datastore", "setup", &to.spec(), "-y"]);
    run.expect(3);
    assert!(
        run.stdout
            .contains("data/m/y/1/raw: a different file is already at the target"),
        "{}",
        run.stdout
    );
    let (ours, theirs) = (
        crate::support::bucket::sha(b"y\n"),
        crate::support::bucket::sha(b"not y\n"),
    );
    assert!(
        run.stdout.contains(&format!("sha256 {ours}  2 bytes")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("sha256 {theirs}  6 bytes")),
        "{}",
        run.stdout
    );
    assert_eq!(a.config(), config, ".swamp.toml unchanged");
    assert_eq!(data(from.contents()), before, "nothing deleted");
    assert_eq!(data(to.contents()).len(), 2, "nothing copied");
    assert_eq!(to.get("swamp/team/data/m/y/1/raw").unwrap(), b"not y\n");

    to.delete("swamp/team/data/m/y/1/raw");
    let doc = a.json(&["--json", "datastore", "setup", &to.spec(), "-y"], 0);
    assert_eq!(doc["plan"]["summary"]["copy_remote"], 1, "x adopted: {doc}");
    assert_eq!(data(to.contents()), before);
}

/// `--keep-source` copies and keeps the old objects; the marker still
/// tells the clones there where the datastore went.
#[test]
fn keep_source_copies_and_leaves_the_old_objects_with_the_marker() {
    let from = Bucket::new(Backend::S3);
    let to = Bucket::new(Backend::S3);
    let a = pushed(&from);
    let before = data(from.contents());
    let run = a.run(&["datastore", "setup", &to.spec(), "--keep-source", "-y"]);
    run.expect(0);
    assert!(
        run.stdout.contains("2 copied to the new place"),
        "{}",
        run.stdout
    );
    assert_eq!(data(from.contents()), before);
    assert!(from.get("swamp/team/.swamp/moved.json").is_some());
    assert_eq!(data(to.contents()), before);
    assert!(a.config().contains(&to.name), "{}", a.config());
    assert!(!a.config().contains("migrating_from"), "{}", a.config());
    let again = a.json(&["--json", "datastore", "sync", "-y"], 0);
    assert_eq!(again["converged"], true, "{again}");
}

/// A lazy clone holds few files: its move copies bucket to bucket and
/// downloads nothing; what it had recorded as in the remote only is then
/// in the new remote only, fetched from there when asked.
#[test]
fn a_lazy_clone_moves_the_datastore_without_hydrating_anything() {
    let from = Bucket::new(Backend::S3);
    let to = Bucket::new(Backend::S3);
    let a = pushed(&from);
    let before = data(from.contents());
    let lazy = a.clone_elsewhere();
    lazy.run(&["datastore", "hydration", "lazy"]).expect(0);
    lazy.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert!(cached_files(&lazy.cache()).is_empty());

    let doc = lazy.json(&["--json", "datastore", "setup", &to.spec(), "-y"], 0);
    assert_eq!(sent(&doc, "get"), 0, "{doc}");
    assert_eq!(doc["plan"]["summary"]["download"], 0, "{doc}");
    assert!(cached_files(&lazy.cache()).is_empty());
    assert_eq!(data(to.contents()), before);

    lazy.run(&["datastore", "sync", "--pull", "--hydrate", "-y"])
        .expect(0);
    assert_eq!(cached_files(&lazy.cache()).len(), 2);
}

/// Killed after some copies: `.swamp.toml` still names the old place
/// (which still holds everything), and the same command again copies only
/// what is missing, then finishes the move.
#[test]
fn a_move_killed_part_way_is_finished_by_a_rerun_that_copies_only_what_is_missing() {
    let from = Bucket::new(Backend::S3);
    let to = Bucket::new(Backend::S3);
    let a = Repo::init(&from, Some("team"));
    for i in 0..6 {
        a.put(&format!("m/f{i}"), &format!("{i}\n"));
    }
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let before = data(from.contents());
    let config = a.config();

    let killed = a.run_with(
        &["--transfers", "1", "datastore", "setup", &to.spec(), "-y"],
        &[("FAILPOINTS", "sync-action-done=2*off->return")],
    );
    assert_ne!(killed.code, Some(0), "{}", killed.stderr);
    let copied = data(to.contents()).len();
    assert!((1..6).contains(&copied), "{copied}");
    assert_eq!(
        a.config(),
        config,
        ".swamp.toml switches only after every copy"
    );
    assert_eq!(data(from.contents()), before);

    let rerun = a.run_with(
        &["--json", "datastore", "setup", &to.spec(), "-y"],
        &[("SWAMP_CLOCK_SKEW", "120")],
    );
    rerun.expect(0);
    let doc = rerun.json();
    assert_eq!(
        doc["plan"]["summary"]["copy_remote"].as_u64(),
        Some(6 - copied as u64),
        "{doc}"
    );
    assert_eq!(data(to.contents()), before);
    assert!(a.config().contains(&to.name));
    assert!(data(from.contents()).is_empty());
}

/// Another prefix of the same bucket: copied by the server inside the
/// bucket, the old prefix left with the marker alone.
fn moves_to_another_prefix(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = pushed(&bucket);
    let before = data(bucket.contents());
    let spec = bucket.spec().replacen("/swamp?", "/moved?", 1);
    let doc = a.json(&["--json", "datastore", "setup", &spec, "-y"], 0);
    assert_eq!(sent(&doc, "copy"), 4, "{doc}");
    assert_eq!(sent(&doc, "get"), 0, "{doc}");
    assert_as_estimated(&doc);
    assert_eq!(data_in(bucket.contents(), "moved/team/"), before);
    let old: Vec<String> = outside_trash(bucket.contents())
        .into_iter()
        .filter(|k| k.starts_with("swamp/"))
        .collect();
    assert_eq!(old, ["swamp/team/.swamp/moved.json"]);
    assert!(a.config().contains("prefix = \"moved\""), "{}", a.config());
}

#[test]
fn a_move_to_another_prefix_of_one_s3_bucket_copies_server_side() {
    moves_to_another_prefix(Backend::S3);
}

#[test]
fn a_move_to_another_prefix_of_one_gcs_bucket_copies_server_side() {
    moves_to_another_prefix(Backend::Gcs);
}

/// `swamp undo` after a move between buckets puts the old place back: its
/// objects come back from its trash, `.swamp.toml` names it again, its
/// marker goes and one at the new place points back. The clone that
/// stayed on the old place syncs again with nothing to transfer, as does
/// the one that undid; `swamp redo` moves forward again.
fn undo_of_a_move_puts_the_old_place_back(backend: Backend) {
    let from = Bucket::new(backend);
    let to = Bucket::new(backend);
    let a = pushed(&from);
    let stays = a.clone_elsewhere();
    stays.run(&["datastore", "sync", "-y"]).expect(0);
    let config = a.config();
    let before = data(from.contents());
    a.run(&["datastore", "setup", &to.spec(), "-y"]).expect(0);
    stays.run(&["datastore", "sync", "-y"]).expect(1);

    let preview = a.run(&["undo", "--dry-run"]);
    preview.expect(0);
    assert!(
        preview.stdout.contains("The datastore moves back"),
        "{}",
        preview.stdout
    );
    assert!(preview.stdout.contains(&from.name), "{}", preview.stdout);
    // What the move copied to the new place stays there, and the plan
    // says so (never a silent partial undo).
    let copied = data(to.contents()).len();
    assert!(
        preview
            .stdout
            .contains(&format!("The {copied} object(s) the move copied to")),
        "{}",
        preview.stdout
    );
    assert!(from.get("swamp/team/.swamp/moved.json").is_some());

    let undone = a.run(&["undo", "-y"]);
    undone.expect(0);
    assert!(undone.stdout.contains("names"), "{}", undone.stdout);
    assert_eq!(data(from.contents()), before, "{}", undone.stdout);
    assert!(
        from.get("swamp/team/.swamp/moved.json").is_none(),
        "the old place's marker goes"
    );
    let marker: serde_json::Value =
        serde_json::from_slice(&to.get("swamp/team/.swamp/moved.json").unwrap()).unwrap();
    assert!(
        marker["to"].as_str().unwrap().contains(&from.name),
        "{marker}"
    );
    assert!(a.config().contains(&from.name), "{}", a.config());
    assert!(!a.config().contains(&to.name), "{}", a.config());
    assert_eq!(a.config(), config);

    for clone in [&a, &stays] {
        assert_no_transfers(&clone.json(&["--json", "datastore", "sync", "-y"], 0));
    }

    let redone = a.run(&["redo", "-y"]);
    redone.expect(0);
    assert!(a.config().contains(&to.name), "{}", a.config());
    assert!(data(from.contents()).is_empty(), "{:?}", from.contents());
    assert!(from.get("swamp/team/.swamp/moved.json").is_some());
    assert!(to.get("swamp/team/.swamp/moved.json").is_none());
    assert_eq!(data(to.contents()), before);
    assert_no_transfers(&a.json(&["--json", "datastore", "sync", "-y"], 0));
}

#[test]
fn undo_of_a_move_between_s3_buckets_puts_the_old_place_back() {
    undo_of_a_move_puts_the_old_place_back(Backend::S3);
}

#[test]
fn undo_of_a_move_between_gcs_buckets_puts_the_old_place_back() {
    undo_of_a_move_puts_the_old_place_back(Backend::Gcs);
}

/// The old place's trash after a move is pruned by retention like any
/// other (nothing else would ever prune it): past `[undo] keep_days`,
/// `swamp undo --prune` empties it, and the move can no longer be undone.
#[test]
fn retention_prunes_the_old_places_trash_after_a_move() {
    let from = Bucket::new(Backend::S3);
    let to = Bucket::new(Backend::S3);
    let a = pushed(&from);
    let doc = a.json(&["--json", "datastore", "setup", &to.spec(), "-y"], 0);
    assert_eq!(trash_in(from.contents(), "swamp/team/").len(), 2, "{doc}");

    let later = [("SWAMP_NOW", "2027-06-01T00:00:00Z")];
    let pruned = a.run_with(&["undo", "--prune", "-y"], &later);
    pruned.expect(0);
    assert_eq!(
        from.contents().into_keys().collect::<Vec<_>>(),
        ["swamp/team/.swamp/moved.json"],
        "{}",
        pruned.stdout
    );
    let undo = a.run_with(&["undo", "-y"], &later);
    assert!(undo.stderr.contains("pruned"), "{}", undo.stderr);
    assert_eq!(data(to.contents()).len(), 2);
}

/// The id of the last apply in `repo`'s own history.
fn last_apply(repo: &Repo) -> String {
    let doc = repo.json(&["--json", "history", "--mine"], 0);
    let applies = doc["applies"].as_array().unwrap();
    applies.last().unwrap()["id"].as_str().unwrap().to_string()
}

/// Alice moves the team to another bucket and Bob's clone follows. Bob
/// then undoes Alice's move from its record in the new bucket: the old
/// bucket's objects come back from its trash, Bob's `.swamp.toml` names
/// it again and a marker in the new bucket sends the clones there back;
/// Alice follows with nothing to transfer. Before, a teammate's move
/// could be undone only from the clone that ran it.
fn a_teammates_move_is_undone_from_a_clone_that_followed_it(backend: Backend) {
    let from = Bucket::new(backend);
    let to = from.beside();
    let a = pushed(&from);
    let config = a.config();
    let before = data(from.contents());
    let b = a.clone_elsewhere();
    b.run_ok(&["datastore", "sync", "-y"]);
    a.run_ok(&["datastore", "setup", &to.spec(), "-y"]);
    let id = last_apply(&a);
    b.run_ok(&["datastore", "setup", &to.spec(), "-y"]);
    assert!(data(from.contents()).is_empty());

    let undo = b.run(&["undo", &id, "-y"]);
    undo.expect(0);
    assert!(
        undo.stdout.contains("The datastore moves back"),
        "{}",
        undo.stdout
    );
    assert_eq!(data(from.contents()), before, "{}", undo.stdout);
    assert_eq!(b.config(), config, "Bob's clone names the old bucket again");
    let marker: serde_json::Value =
        serde_json::from_slice(&to.get("swamp/team/.swamp/moved.json").unwrap()).unwrap();
    assert!(
        marker["to"].as_str().unwrap().contains(&from.name),
        "{marker}"
    );
    assert_no_transfers(&b.json(&["--json", "datastore", "sync", "-y"], 0));

    // Alice is sent back, and follows with nothing to transfer.
    let stopped = a.run(&["datastore", "sync", "-y"]);
    stopped.expect(1);
    assert!(stopped.stderr.contains(&from.name), "{}", stopped.stderr);
    a.run_ok(&["datastore", "setup", &from.spec(), "-y"]);
    assert_no_transfers(&a.json(&["--json", "datastore", "sync", "-y"], 0));
}

#[test]
fn a_teammates_move_between_s3_buckets_is_undone_from_a_clone_that_followed_it() {
    a_teammates_move_is_undone_from_a_clone_that_followed_it(Backend::S3);
}

#[test]
fn a_teammates_move_between_gcs_buckets_is_undone_from_a_clone_that_followed_it() {
    a_teammates_move_is_undone_from_a_clone_that_followed_it(Backend::Gcs);
}

/// A record is anyone's words: one naming a move from another server (an
/// S3 bucket, seen from GCS) is not followed there with this clone's
/// credentials. The undo is refused, naming why, and nothing changes.
#[test]
fn a_teammates_move_from_another_server_is_refused_and_changes_nothing() {
    let from = Bucket::new(Backend::S3);
    let to = Bucket::new(Backend::Gcs);
    let a = pushed(&from);
    let b = a.clone_elsewhere();
    b.run_ok(&["datastore", "sync", "-y"]);
    a.run_ok(&["datastore", "setup", &to.spec(), "-y"]);
    let id = last_apply(&a);
    b.run_ok(&["datastore", "setup", &to.spec(), "-y"]);
    let (at_old, at_new, config) = (from.contents(), to.contents(), b.config());
    let undo = b.run(&["undo", &id, "-y"]);
    undo.expect(1);
    assert!(
        undo.stderr.contains("undo it from the clone that ran it"),
        "{}",
        undo.stderr
    );
    assert_eq!(from.contents(), at_old);
    assert_eq!(to.contents(), at_new);
    assert_eq!(b.config(), config);
}

/// Two servers can hold a bucket of the same name (two directory stores
/// here, as a MinIO and an AWS bucket can be): a move from one to the
/// other keeps this clone's sync state for each, and converges. Before,
/// both places shared the one state named by their URL, and the move
/// ended "not converged".
#[test]
fn a_move_between_servers_holding_a_bucket_of_the_same_name_converges() {
    let from = Bucket::new(Backend::Fs);
    let to = from.beside();
    assert_eq!(from.name, to.name);
    let a = pushed(&from);
    let before = data(from.contents());
    a.run_ok(&["datastore", "setup", &to.spec(), "-y"]);
    assert_eq!(data(to.contents()), before);
    assert!(data(from.contents()).is_empty());
    assert_no_transfers(&a.json(&["--json", "datastore", "sync", "-y"], 0));
}
