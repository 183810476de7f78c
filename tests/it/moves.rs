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
    contents
        .into_iter()
        .filter(|(k, _)| k.starts_with("swamp/team/"))
        .filter(|(k, _)| !k.contains("/.swamp/") && !k.ends_with(".namespace.json"))
        .map(|(k, v)| (k["swamp/team/".len()..].to_string(), v))
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
    let copies: Vec<_> = doc["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "copy-remote")
        .collect();
    assert_eq!(copies.len(), 2, "{doc}");
    assert!(copies.iter().all(|c| c.get("streamed").is_none()), "{doc}");
    assert_eq!(sent(&doc, "copy"), 2, "{doc}");
    assert_eq!(
        sent(&doc, "get"),
        0,
        "no object body through this machine: {doc}"
    );
    assert_eq!(data(to.contents()), data(before.clone()), "{doc}");
    assert_eq!(data(to.contents()).len(), 2, "{doc}");
    assert!(a.config().contains(&to.name), "{}", a.config());
    assert!(!a.config().contains("migrating_from"), "{}", a.config());
    let left: Vec<String> = from.contents().into_keys().collect();
    assert_eq!(left, ["swamp/team/.swamp/moved.json"], "{left:?}");
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
    assert_eq!(again["plan"]["summary"]["upload"], 0, "{again}");
    assert_eq!(again["plan"]["summary"]["download"], 0, "{again}");

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
