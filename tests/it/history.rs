//! The team's history (issue 44): every apply that changes a namespace's
//! objects keeps a record in the bucket (`.swamp/history/<id>.json`), so
//! another clone's `swamp history` names who changed what, `history show`
//! lists it key by key, an undo is marked on what it reversed, reading
//! costs one LIST and a GET per record not read before (a converged sync
//! reads none), and retention prunes records past `[undo] keep_days`.

use crate::support::bucket::{Backend, Bucket, Repo};

/// A repository run by `user` (the `user@host` its records name).
fn as_user(mut repo: Repo, user: &str) -> Repo {
    repo.env.push(("USER", user.to_string()));
    repo
}

/// The applies `swamp --json history` lists, oldest first.
fn applies(repo: &Repo, args: &[&str]) -> Vec<serde_json::Value> {
    let mut full = vec!["--json", "history"];
    full.extend_from_slice(args);
    repo.json(&full, 0)["applies"].as_array().unwrap().clone()
}

/// Alice's clone of namespace `lab`: two versions of `m/x`, and
/// `outputs/a.txt` and `outputs/b.txt`, pushed.
fn alice_pushed(bucket: &Bucket) -> Repo {
    let alice = as_user(Repo::init(bucket, Some("lab")), "alice");
    for body in ["one\n", "two\n"] {
        alice.put("m/x", body);
    }
    alice.write_cache("lab/outputs/a.txt", "a1\n");
    alice.write_cache("lab/outputs/b.txt", "b1\n");
    alice.run_ok(&["datastore", "sync", "-y"]);
    alice
}

/// A `data gc --keep 1`, `outputs/b.txt` deleted and `outputs/a.txt`
/// edited, pushed in one sync.
fn gc_delete_and_edit(repo: &Repo) {
    repo.run_ok(&["data", "gc", "--keep", "1"]);
    std::fs::remove_file(repo.cache().join("lab/outputs/b.txt")).unwrap();
    repo.write_cache("lab/outputs/a.txt", "a2\n");
    repo.run_ok(&["datastore", "sync", "--force", "-y"]);
}

/// The id of the newest apply `swamp history` lists.
fn last_id(repo: &Repo) -> String {
    applies(repo, &[]).last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The requests the proxy saw from `from` on, as (class, line).
fn since(proxy: &crate::support::faults::FaultProxy, from: usize) -> Vec<(&'static str, String)> {
    proxy.seen()[from..]
        .iter()
        .map(|s| (s.class(), s.line()))
        .collect()
}

/// Alice pushes files, then a `data gc`, a delete and an edit; Bob, on
/// another machine, sees each of her applies in his `history` with her
/// name, `history show` names what the second deleted and replaced, and
/// her undo of it is marked on it. Bob's first `history` reads each record
/// once (one LIST, one GET each); his second reads only the listing, and
/// a converged sync reads none of them.
fn a_teammates_gc_delete_and_edit_are_in_another_clones_history_with_her_name(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let alice = alice_pushed(&bucket);
    let bob = as_user(alice.clone_elsewhere(), "bob");
    bob.run_ok(&["datastore", "sync", "--pull", "-y"]);

    gc_delete_and_edit(&alice);

    let from = proxy.seen().len();
    let seen = applies(&bob, &[]);
    let theirs: Vec<&serde_json::Value> = seen.iter().filter(|a| a["mine"] == false).collect();
    assert_eq!(theirs.len(), 2, "alice's two syncs: {seen:#?}");
    assert!(
        theirs
            .iter()
            .all(|a| a["by"].as_str().unwrap().starts_with("alice@")),
        "{seen:#?}"
    );
    let push = theirs[1];
    assert_eq!(
        push["summary"], "sync: 1 object(s) replaced, 2 deleted",
        "{push:#}"
    );
    assert!(push["undone_by"].is_null(), "{push:#}");
    let requests = since(&proxy, from);
    let count = |class: &str| requests.iter().filter(|(c, _)| *c == class).count();
    assert_eq!(count("list"), 1, "{requests:#?}");
    assert_eq!(count("get"), 2, "a GET per record: {requests:#?}");
    assert!(
        requests
            .iter()
            .all(|(c, _)| matches!(*c, "list" | "get" | "head")),
        "history only reads: {requests:#?}"
    );

    // Read before: only the listing.
    let from = proxy.seen().len();
    let text = bob.run(&["history"]);
    text.expect(0);
    assert!(text.stdout.contains("alice@"), "{}", text.stdout);
    let requests = since(&proxy, from);
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(requests[0].0, "list", "{requests:#?}");

    // What it changed, key by key.
    let id = push["id"].as_str().unwrap();
    let show = bob.run(&["history", "show", id]);
    show.expect(0);
    for expected in [
        "by alice@",
        "delete-remote",
        "data/m/x/1/raw",
        "outputs/b.txt",
        "upload (replace)",
        "outputs/a.txt",
        "(removed)",
    ] {
        assert!(
            show.stdout.contains(expected),
            "{expected}: {}",
            show.stdout
        );
    }
    let doc = bob.json(&["--json", "history", "show", id], 0);
    let changes = doc["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 3, "{doc:#}");
    let deleted: Vec<&serde_json::Value> = changes.iter().filter(|c| c["op"] == "delete").collect();
    assert_eq!(deleted.len(), 2, "{doc:#}");
    assert!(
        deleted.iter().all(|c| c["trash"]
            .as_str()
            .unwrap()
            .starts_with(&format!("swamp/lab/.swamp/trash/{id}/"))),
        "each delete names its trash copy: {doc:#}"
    );
    let replaced = changes.iter().find(|c| c["op"] == "replace").unwrap();
    assert!(
        replaced["before"].is_string() && replaced["after"].is_string(),
        "{doc:#}"
    );
    assert_ne!(replaced["before"], replaced["after"], "{doc:#}");
    assert_eq!(doc["apply"]["finished"], true, "{doc:#}");

    // A converged sync reads no record.
    bob.run_ok(&["datastore", "sync", "-y"]);
    let from = proxy.seen().len();
    bob.run_ok(&["datastore", "sync", "-y"]);
    let requests = since(&proxy, from);
    assert!(
        requests.iter().all(|(_, line)| !line.contains("history")),
        "{requests:#?}"
    );

    // Alice undoes her sync: Bob's history marks it, and lists the undo.
    alice.run_ok(&["undo", id, "-y"]);
    let seen = applies(&bob, &[]);
    let undo = seen
        .iter()
        .find(|a| a["undoes"] == id)
        .unwrap_or_else(|| panic!("the undo is in the history: {seen:#?}"));
    let undone = seen.iter().find(|a| a["id"] == id).unwrap();
    assert_eq!(undone["undone_by"], undo["id"], "{seen:#?}");

    // Bob's own: his syncs' local deletes (following hers), none of hers.
    let mine = applies(&bob, &["--mine"]);
    assert!(
        mine.iter()
            .all(|a| a["mine"] == true && a["by"].as_str().unwrap().starts_with("bob@")),
        "{mine:#?}"
    );
}

mod teammates {
    use super::*;
    crate::on_both_servers!(
        a_teammates_gc_delete_and_edit_are_in_another_clones_history_with_her_name
    );
}

/// Bob undoes Alice's sync (a `data gc`, a delete and an edit, pushed)
/// by its id from his history: the objects come back in the bucket from
/// its trash, his cache follows at once, Alice's next pull follows with
/// no guard in the way, and her apply is marked undone by his undo.
fn undo_of_a_teammates_apply_restores_the_bucket_and_both_caches_follow(backend: Backend) {
    let bucket = Bucket::new(backend);
    let alice = alice_pushed(&bucket);
    let before = bucket.contents_under("swamp/lab/data/");
    let outputs = bucket.contents_under("swamp/lab/outputs/");
    let bob = as_user(alice.clone_elsewhere(), "bob");
    bob.run_ok(&["datastore", "sync", "--pull", "-y"]);

    gc_delete_and_edit(&alice);
    bob.run_ok(&["datastore", "sync", "--pull", "-y"]);
    assert!(!bob.cache().join("lab/outputs/b.txt").exists());
    let theirs = applies(&bob, &[]);
    let id = theirs.iter().rev().find(|a| a["mine"] == false).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    let undo = bob.run(&["undo", &id, "-y"]);
    undo.expect(0);
    assert!(
        undo.stdout.contains(&format!("Undid apply {id}: ")),
        "{}",
        undo.stdout
    );
    assert_eq!(bucket.contents_under("swamp/lab/data/"), before);
    assert_eq!(bucket.contents_under("swamp/lab/outputs/"), outputs);
    assert_eq!(
        std::fs::read_to_string(bob.cache().join("lab/outputs/b.txt")).unwrap(),
        "b1\n",
        "bob's cache followed: {}",
        undo.stdout
    );
    assert_eq!(
        std::fs::read_to_string(bob.cache().join("lab/outputs/a.txt")).unwrap(),
        "a1\n"
    );
    assert!(bob.cache().join("lab/data/m/x/1/raw").exists());

    alice.run_ok(&["datastore", "sync", "--pull", "-y"]);
    assert_eq!(
        std::fs::read_to_string(alice.cache().join("lab/outputs/a.txt")).unwrap(),
        "a1\n"
    );
    assert!(alice.cache().join("lab/outputs/b.txt").exists());
    let seen = applies(&alice, &[]);
    let undone = seen.iter().find(|a| a["id"] == id.as_str()).unwrap();
    let by = seen
        .iter()
        .find(|a| a["undoes"] == id.as_str())
        .unwrap_or_else(|| panic!("bob's undo is in alice's history: {seen:#?}"));
    assert_eq!(undone["undone_by"], by["id"], "{seen:#?}");
    assert!(by["by"].as_str().unwrap().starts_with("bob@"), "{by:#}");
}

/// An object a teammate's apply wrote has changed since: undoing that
/// apply is a conflict (exit 3) that changes nothing in the bucket.
fn undo_of_a_teammates_apply_over_a_change_since_is_a_conflict(backend: Backend) {
    let bucket = Bucket::new(backend);
    let alice = as_user(Repo::init(&bucket, Some("lab")), "alice");
    alice.write_cache("lab/outputs/a.txt", "a1\n");
    alice.run_ok(&["datastore", "sync", "-y"]);
    let bob = as_user(alice.clone_elsewhere(), "bob");
    alice.write_cache("lab/outputs/a.txt", "a2\n");
    alice.run_ok(&["datastore", "sync", "-y"]);
    let id = last_id(&bob);
    alice.write_cache("lab/outputs/a.txt", "a3\n");
    alice.run_ok(&["datastore", "sync", "-y"]);
    let before = bucket.contents_under("swamp/lab/outputs/");

    let undo = bob.run(&["undo", &id, "-y"]);
    undo.expect(3);
    assert!(undo.stdout.contains("outputs/a.txt"), "{}", undo.stdout);
    assert_eq!(bucket.contents_under("swamp/lab/outputs/"), before);
}

/// A plan that follows a teammate's changes names who made them, from
/// the record of her apply: "deleted in the remote by alice@… in apply
/// …, under a minute ago"; `--json` lists them in `authored`.
fn a_plan_names_the_teammate_whose_apply_it_follows(backend: Backend) {
    let bucket = Bucket::new(backend);
    let alice = as_user(Repo::init(&bucket, Some("lab")), "alice");
    alice.write_cache("lab/outputs/a.txt", "a1\n");
    alice.write_cache("lab/outputs/b.txt", "b1\n");
    alice.write_cache("lab/outputs/c.txt", "c1\n");
    alice.run_ok(&["datastore", "sync", "-y"]);
    let bob = as_user(alice.clone_elsewhere(), "bob");
    bob.run_ok(&["datastore", "sync", "--pull", "-y"]);
    std::fs::remove_file(alice.cache().join("lab/outputs/b.txt")).unwrap();
    alice.write_cache("lab/outputs/a.txt", "a2\n");
    alice.run_ok(&["datastore", "sync", "-y"]);
    let id = last_id(&alice);

    let plan = bob.run(&["plan"]);
    plan.expect(0);
    for expected in [
        "deleted in the remote by alice@".to_string(),
        "changed in the remote by alice@".to_string(),
        format!("in apply {id}, "),
        ", under a minute ago".to_string(),
    ] {
        assert!(
            plan.stdout.contains(&expected),
            "{expected}: {}",
            plan.stdout
        );
    }
    let doc = bob.json(&["--json", "plan"], 0);
    let authored = doc["authored"].as_array().unwrap();
    let rows: Vec<(&str, &str, &str)> = authored
        .iter()
        .map(|a| {
            (
                a["path"].as_str().unwrap(),
                a["change"].as_str().unwrap(),
                a["id"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("outputs/a.txt", "replaced", id.as_str()),
            ("outputs/b.txt", "deleted", id.as_str())
        ],
        "{doc:#}"
    );
}

/// Bob undoes Alice's first push, which created every object: the
/// objects go to his undo's trash, and Alice's next pull follows (her
/// cache's copies set aside) instead of stopping at the guard for a
/// remote emptied behind her back.
fn undo_of_a_teammates_push_sets_aside_what_it_created_and_she_follows(backend: Backend) {
    let bucket = Bucket::new(backend);
    let alice = as_user(Repo::init(&bucket, Some("lab")), "alice");
    alice.write_cache("lab/outputs/a.txt", "a1\n");
    alice.write_cache("lab/outputs/b.txt", "b1\n");
    alice.run_ok(&["datastore", "sync", "-y"]);
    let bob = as_user(alice.clone_elsewhere(), "bob");
    let id = last_id(&bob);
    let undo = bob.run(&["undo", &id, "-y"]);
    undo.expect(0);
    assert!(
        undo.stdout.contains("2 remote object(s) set aside"),
        "{}",
        undo.stdout
    );
    assert!(bucket.contents_under("swamp/lab/outputs/").is_empty());
    let pull = alice.run(&["datastore", "sync", "--pull", "-y"]);
    pull.expect(0);
    assert!(
        !alice.cache().join("lab/outputs/a.txt").exists(),
        "{}",
        pull.stdout
    );
    assert!(!alice.cache().join("lab/outputs/b.txt").exists());
}

mod teammates_undo {
    use super::*;
    crate::on_both_servers!(
        undo_of_a_teammates_apply_restores_the_bucket_and_both_caches_follow,
        undo_of_a_teammates_apply_over_a_change_since_is_a_conflict,
        a_plan_names_the_teammate_whose_apply_it_follows,
        undo_of_a_teammates_push_sets_aside_what_it_created_and_she_follows,
    );
}

/// A record written before an apply's first change says it is cut short
/// until the apply ends; a sync that writes the bucket on day 9 prunes,
/// through a planned `prune-history`, the records older than
/// `[undo] keep_days = 7`, and only those.
fn history_records_past_keep_days_are_pruned_through_a_plan(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("lab"));
    a.append_config("\n[undo]\nkeep_days = 7\n");
    let at = |now: &str, args: &[&str]| {
        let run = a.run_with(args, &[("SWAMP_NOW", now)]);
        run.expect(0);
        run
    };
    a.write_cache("lab/outputs/a.txt", "a1\n");
    at("2026-12-01T00:00:00Z", &["datastore", "sync", "-y"]);
    a.write_cache("lab/outputs/b.txt", "b1\n");
    at("2026-12-05T00:00:00Z", &["datastore", "sync", "-y"]);
    let records = || {
        bucket
            .contents_under("swamp/lab/.swamp/history/")
            .into_keys()
            .collect::<Vec<_>>()
    };
    assert_eq!(records().len(), 2, "{:?}", records());

    a.write_cache("lab/outputs/c.txt", "c1\n");
    let doc: serde_json::Value =
        serde_json::from_str(&at("2026-12-10T00:00:00Z", &["--json", "plan"]).stdout).unwrap();
    let prunes: Vec<&serde_json::Value> = doc["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "prune-history")
        .collect();
    assert_eq!(prunes.len(), 1, "{doc:#}");
    let keys: Vec<&str> = prunes[0]["prune"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 1, "only the first: {doc:#}");
    assert!(
        keys[0].starts_with("swamp/lab/.swamp/history/20261201T000000Z-"),
        "{keys:?}"
    );
    at("2026-12-10T00:00:00Z", &["datastore", "sync", "-y"]);
    let left = records();
    assert_eq!(left.len(), 2, "the day-5 and day-10 records: {left:?}");
    assert!(
        left.iter().all(|k| !k.contains("/20261201T000000Z-")),
        "{left:?}"
    );
}

mod retention {
    use super::*;
    crate::on_every_backend!(history_records_past_keep_days_are_pruned_through_a_plan);
}

/// Keys another tool wrote under `.swamp/history/` (not JSON, a record
/// naming another id, a name that is no apply id) are no records: the
/// history lists the real ones and names what it skipped, and `show`
/// of the forged id finds nothing.
#[test]
fn objects_under_history_that_are_no_records_are_skipped_and_named() {
    let bucket = Bucket::new(Backend::S3);
    let a = Repo::init(&bucket, Some("lab"));
    a.write_cache("lab/outputs/a.txt", "a1\n");
    a.run_ok(&["datastore", "sync", "-y"]);
    let real = applies(&a, &[]);
    assert_eq!(real.len(), 1, "{real:#?}");
    let forged = "20261201T000000Z-000bad";
    bucket.foreign_put(
        &format!("swamp/lab/.swamp/history/{forged}.json"),
        b"not json\n",
    );
    bucket.foreign_put(
        &format!("swamp/lab/.swamp/history/{forged}-2.json"),
        br#"{"format":1,"id":"20261201T000000Z-000abc","at":"2026-12-01T00:00:00Z","by":"mallory@x","clone":"c","tool":"t","command":"c","summary":"s","prefix":"swamp/lab/","finished":true,"changes":[]}"#,
    );
    bucket.foreign_put("swamp/lab/.swamp/history/.hidden.json", b"{}");
    bucket.foreign_put("swamp/lab/.swamp/history/notes.txt", b"hello\n");
    let run = a.run(&["--json", "history"]);
    run.expect(0);
    let listed = run.json()["applies"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 1, "only the real record: {listed:#?}");
    assert!(
        run.stderr.contains("not records this version reads"),
        "{}",
        run.stderr
    );
    a.run(&["history", "show", forged]).expect(1);
    a.run(&["history", "show", "20261201T000000Z-000abc"])
        .expect(1);
}
