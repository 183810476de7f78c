//! Undo (issue 10), on the local datastore, a directory object store,
//! SeaweedFS (S3) and fake-gcs-server (GCS): what `data rm` and `data gc`
//! remove is set aside in the trash of a journaled apply, never destroyed.

use std::collections::BTreeMap;

use crate::support::bucket::{Backend, Bucket, Repo};
use crate::support::tree as files;

/// The trash of apply `id` in `root`: tier path → bytes.
fn trash(root: &std::path::Path, id: &str) -> BTreeMap<String, Vec<u8>> {
    files(&root.join(id))
}

/// `in_trash`: what precedes the tier path in an apply's trash (the
/// namespace directory, for repo-local trash).
fn gc_and_rm_set_every_removed_version_aside_byte_for_byte(
    repo: &Repo,
    trash_root: &std::path::Path,
    data: &std::path::Path,
    in_trash: &str,
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
    let want: BTreeMap<String, Vec<u8>> = ["m/x/1/raw", "m/x/2/raw"]
        .iter()
        .map(|p| (format!("{in_trash}data/{p}"), before[*p].clone()))
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
    gc_and_rm_set_every_removed_version_aside_byte_for_byte(&repo, &trash_root, &data, "_/");
}

fn remote_gc_and_rm_set_every_removed_version_aside_byte_for_byte(backend: Backend) {
    let bucket = Bucket::new(backend);
    let repo = Repo::init(&bucket, Some("alpha"));
    // In the cache's own trash, beside the namespace's tier tree (which
    // stays a mirror of the bucket), under the namespace's name.
    let trash_root = repo.cache().join(".swamp/trash");
    let data = repo.cache().join("alpha/data");
    gc_and_rm_set_every_removed_version_aside_byte_for_byte(&repo, &trash_root, &data, "alpha/");
    assert!(!repo.cache().join("alpha/.swamp-trash").exists());
    // The journal is repo-local, the bytes stay beside the cache.
    assert!(repo.root.join(".swamp/state/trash").is_dir());
}

// ---------------------------------------------------------------------------
// swamp undo

/// Every raw version under `data`: tier-relative path → bytes.
fn versions(data: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    files(data)
        .into_iter()
        .filter(|(k, _)| k.ends_with("/raw"))
        .collect()
}

/// Ids, times and who ran it vary; the rest of the text must not.
fn filtered(text: &str) -> String {
    let id = regex_lite_id(text);
    let mut out = text.to_string();
    for (n, i) in id.iter().enumerate() {
        // As wide as an id, so tables keep their shape.
        out = out.replace(i.as_str(), &format!("{:-<23}", format!("<apply-{}", n + 1)));
    }
    out
}

/// The apply ids in `text`, in order of first appearance.
fn regex_lite_id(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
        let looks = word.len() == 23 && word.as_bytes()[8] == b'T' && word.as_bytes()[15] == b'Z';
        if looks && !ids.iter().any(|i| i == word) {
            ids.push(word.to_string());
        }
    }
    ids
}

fn undo_brings_back_what_gc_removed_and_undo_of_undo_removes_it_again(
    repo: &Repo,
    data: &std::path::Path,
    sync: bool,
) {
    for body in ["one\n", "two\n", "three\n"] {
        repo.put("m/x", body);
    }
    if sync {
        repo.run_ok(&["datastore", "sync", "-y"]);
    }
    let before = versions(data);
    let gc = repo.json(&["--json", "data", "gc", "--keep", "1"], 0);
    let gc_id = gc["apply_id"].as_str().unwrap().to_string();
    // Without -y and no terminal: a preview that changes nothing.
    let preview = repo.run(&["undo", "--detailed-exitcode"]);
    preview.expect(2);
    assert!(
        preview
            .stderr
            .contains("Nothing changed: applying needs confirmation"),
        "{}",
        preview.stderr
    );
    assert_eq!(versions(data).len(), 1);
    let run = repo.run(&["undo", "-y"]);
    run.expect(0);
    assert!(
        run.stdout
            .contains(&format!("Undid apply {gc_id}: 2 file(s) restored")),
        "{}",
        run.stdout
    );
    assert_eq!(versions(data), before, "every version back, byte for byte");
    let list = repo.json(&["--json", "data", "list"], 0);
    assert_eq!(
        list["data"][0]["versions"], 3,
        "the catalog sees them again"
    );
    // Converged: undoing the same apply again is a no-op.
    let again = repo.run(&["undo", &gc_id, "--detailed-exitcode"]);
    again.expect(0);
    assert!(again.stdout.contains("Nothing to undo"), "{}", again.stdout);
    if sync {
        repo.run_ok(&["datastore", "sync", "-y"]);
        repo.run(&["plan", "--detailed-exitcode"]).expect(0);
    }
    if sync {
        // The first sync's uploads are an apply too: a bare undo walks
        // back to it next, to set aside what it created in the bucket.
        let next = repo.run(&["undo", "--dry-run"]);
        next.expect(0);
        assert!(
            next.stdout.contains("(swamp datastore sync -y)")
                && next
                    .stdout
                    .contains("Undo: 3 remote object(s) to set aside"),
            "{}",
            next.stdout
        );
    } else {
        // Every apply is undone now: a bare undo has nothing left to walk
        // back.
        let nothing = repo.run(&["undo", "-y"]);
        nothing.expect(0);
        assert!(
            nothing.stdout.contains("Nothing left to undo")
                && nothing.stdout.contains("swamp redo"),
            "{}",
            nothing.stdout
        );
    }
    // `redo` (the undo of that undo) sets the two aside again.
    let undo_of_undo = repo.run(&["redo", "-y"]);
    undo_of_undo.expect(0);
    assert!(
        undo_of_undo.stdout.contains(": 2 file(s) set aside"),
        "{}",
        undo_of_undo.stdout
    );
    assert_eq!(versions(data).len(), 1);
    repo.run_ok(&["undo", "-y"]);
    assert_eq!(versions(data), before);
    assert_eq!(journaled(repo).len(), if sync { 5 } else { 4 });
}

#[test]
fn local_undo_brings_back_what_gc_removed_and_undo_of_undo_removes_it_again() {
    let repo = Repo::empty(vec![]);
    repo.run_ok(&["init"]);
    let data = repo.root.join(".swamp/data");
    undo_brings_back_what_gc_removed_and_undo_of_undo_removes_it_again(&repo, &data, false);
}

fn remote_undo_brings_back_what_gc_removed_and_undo_of_undo_removes_it_again(backend: Backend) {
    let bucket = Bucket::new(backend);
    let repo = Repo::init(&bucket, Some("alpha"));
    let data = repo.cache().join("alpha/data");
    undo_brings_back_what_gc_removed_and_undo_of_undo_removes_it_again(&repo, &data, true);
    // The bucket holds every version again, byte for byte.
    let remote: BTreeMap<String, Vec<u8>> = bucket.contents_under("swamp/alpha/data/");
    assert_eq!(remote, versions(&data));
}

#[test]
fn an_undo_whose_file_changed_since_is_a_conflict_and_overwrites_nothing() {
    let repo = Repo::empty(vec![]);
    repo.run_ok(&["init"]);
    for body in ["one\n", "two\n"] {
        repo.put("m/x", body);
    }
    repo.run_ok(&["data", "gc", "--keep", "1"]);
    let raw = repo.root.join(".swamp/data/m/x/1/raw");
    std::fs::create_dir_all(raw.parent().unwrap()).unwrap();
    std::fs::write(&raw, "someone else's\n").unwrap();
    let run = repo.run(&["undo", "-y"]);
    run.expect(3);
    assert!(
        run.stdout
            .contains("data/m/x/1/raw: changed since the apply"),
        "{}",
        run.stdout
    );
    assert_eq!(std::fs::read(&raw).unwrap(), b"someone else's\n");
    // Moved out of the way, the undo goes through.
    std::fs::remove_file(&raw).unwrap();
    repo.run_ok(&["undo", "-y"]);
    assert_eq!(std::fs::read(&raw).unwrap(), b"one\n");
}

/// `swamp undo -o FILE` saves the reviewed undo; `swamp apply FILE` plans
/// it again and applies it only while nothing it touches changed.
#[test]
fn a_saved_undo_plan_applies_only_while_unchanged() {
    let repo = Repo::empty(vec![]);
    repo.run_ok(&["init"]);
    for body in ["one\n", "two\n", "three\n"] {
        repo.put("m/x", body);
    }
    let data = repo.root.join(".swamp/data");
    let before = versions(&data);
    repo.run_ok(&["data", "gc", "--keep", "1"]);
    let file = repo.root.join("undo.plan");
    let saved = repo.run(&["undo", "-o", file.to_str().unwrap()]);
    saved.expect(0);
    assert!(saved.stdout.contains("swamp apply"), "{}", saved.stdout);
    assert_eq!(versions(&data).len(), 1, "saving changes nothing");
    // Someone writes where the undo would restore: the saved plan is stale.
    let raw = data.join("m/x/1/raw");
    std::fs::create_dir_all(raw.parent().unwrap()).unwrap();
    std::fs::write(&raw, "someone else's\n").unwrap();
    let stale = repo.run(&["apply", file.to_str().unwrap()]);
    stale.expect(1);
    assert!(stale.stderr.contains("stale"), "{}", stale.stderr);
    assert_eq!(std::fs::read(&raw).unwrap(), b"someone else's\n");
    std::fs::remove_file(&raw).unwrap();
    repo.run_ok(&["apply", file.to_str().unwrap()]);
    assert_eq!(versions(&data), before, "every version back, byte for byte");
    // Applied once: planning it again now gives nothing, so it is stale.
    repo.run(&["apply", file.to_str().unwrap()]).expect(1);
    let show = repo.run(&["show", file.to_str().unwrap()]);
    show.expect(0);
    assert!(show.stdout.contains("restore"), "{}", show.stdout);
}

#[test]
fn an_undo_killed_mid_way_converges_when_run_again() {
    let repo = Repo::empty(vec![]);
    repo.run_ok(&["init"]);
    for i in 0..6 {
        repo.put("m/x", &format!("v{i}\n"));
    }
    let data = repo.root.join(".swamp/data");
    let before = versions(&data);
    let gc = repo.json(&["--json", "data", "gc", "--keep", "1"], 0);
    let gc_id = gc["apply_id"].as_str().unwrap().to_string();
    let killed = repo.run_with(
        &["undo", "-y"],
        &[("FAILPOINTS", "undo-step-done=1*off->return")],
    );
    assert_eq!(
        killed.code, None,
        "killed: {}{}",
        killed.stdout, killed.stderr
    );
    assert_eq!(versions(&data).len(), 3, "two restored before the kill");
    // The last apply is the cut-short undo: a bare `undo` names the way on.
    let bare = repo.run(&["undo", "-y"]);
    bare.expect(1);
    assert!(
        bare.stderr
            .contains(&format!("`swamp undo {gc_id}` finishes the undo it began")),
        "{}",
        bare.stderr
    );
    repo.run_ok(&["undo", &gc_id, "-y"]);
    assert_eq!(versions(&data), before);
    repo.run(&["undo", &gc_id, "--detailed-exitcode"]).expect(0);
}

#[test]
fn undo_plan_and_history_snapshots() {
    let repo = Repo::empty(vec![
        ("SWAMP_NOW", "2026-12-01T09:00:00Z".to_string()),
        ("USER", "ops".to_string()),
    ]);
    repo.run_ok(&["init"]);
    for body in ["one\n", "two\n", "three\n"] {
        repo.put("m/x", body);
    }
    repo.put("m/y", "why\n");
    repo.run_ok(&["data", "gc", "--keep", "1"]);
    repo.run_ok(&["data", "rm", "m/y"]);
    std::fs::create_dir_all(repo.root.join(".swamp/data/m/y/1")).unwrap();
    std::fs::write(repo.root.join(".swamp/data/m/y/1/raw"), "new\n").unwrap();
    let rm_plan = repo.run(&["undo"]);
    let gc_plan = repo.run(&[
        "undo",
        // The table shows the newest first: the gc is the last row.
        regex_lite_id(&repo.run(&["history"]).stdout)
            .last()
            .unwrap()
            .as_str(),
    ]);
    // The holder names this machine: the JSON document, with it masked.
    let mut history = repo.json(&["--json", "history"], 0);
    for apply in history["applies"].as_array_mut().unwrap() {
        assert!(apply["holder"].as_str().unwrap().starts_with("ops@"));
        apply["holder"] = "ops@[host]".into();
        apply["by"] = "ops@[host]".into();
    }
    crate::snapshot!("undo_plan_with_a_conflict", filtered(&rm_plan.stdout));
    crate::snapshot!(
        "undo_plan_restoring_two_versions",
        filtered(&gc_plan.stdout)
    );
    crate::snapshot!(
        "history_after_gc_and_rm",
        filtered(&serde_json::to_string_pretty(&history).unwrap())
    );
}

/// The remote lost the namespace's objects and the operator forced the
/// sync past every guard, `--force-delete-local` included: the cache's
/// only copies went into the trash, and `undo` brings them back for the
/// next sync to upload.
fn a_forced_delete_of_the_last_copy_is_undone(backend: Backend) {
    let bucket = Bucket::new(backend);
    let repo = Repo::init(&bucket, Some("alpha"));
    for body in ["one\n", "two\n", "three\n"] {
        repo.put("m/x", body);
    }
    repo.run_ok(&["datastore", "sync", "-y"]);
    let data = repo.cache().join("alpha/data");
    let before = versions(&data);
    for key in bucket
        .versions()
        .into_keys()
        .filter(|k| k.contains("/data/"))
    {
        bucket.delete(&key);
    }
    let run = repo.run(&["datastore", "sync", "--force", "--force-delete-local", "-y"]);
    run.expect(0);
    assert!(
        versions(&data).is_empty(),
        "the forced sync deleted the cache copies"
    );
    let last = journaled(&repo).last().unwrap().clone();
    assert_eq!(last["files"], 3, "{last}");
    assert_eq!(
        last["command"],
        "swamp datastore sync --force --force-delete-local -y"
    );
    let undo = repo.run(&["undo", "-y"]);
    undo.expect(0);
    assert!(
        undo.stdout.contains("3 file(s) restored"),
        "{}",
        undo.stdout
    );
    assert_eq!(versions(&data), before);
    repo.run_ok(&["datastore", "sync", "-y"]);
    let remote: BTreeMap<String, Vec<u8>> = bucket.contents_under("swamp/alpha/data/");
    assert_eq!(remote, before, "uploaded again, byte for byte");
}

/// A `--conflict local` sync overwrote a colleague's newer object; the
/// apply kept it in its remote trash first, so `undo` puts it back, and the
/// colleague's next pull (and this clone's) sees it.
fn a_conflict_local_overwrite_of_the_remote_is_undone(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.write_cache("alpha/outputs/report.txt", "first\n");
    a.run_ok(&["datastore", "sync", "-y"]);
    let b = a.clone_elsewhere();
    b.run_ok(&["datastore", "sync", "-y"]);
    b.write_cache("alpha/outputs/report.txt", "b's newer work\n");
    b.run_ok(&["datastore", "sync", "-y"]);
    a.write_cache("alpha/outputs/report.txt", "a's version\n");
    a.run(&["datastore", "sync", "-y"]).expect(3);
    a.run_ok(&["datastore", "sync", "--conflict", "local", "-y"]);
    let key = "swamp/alpha/outputs/report.txt";
    assert_eq!(bucket.get(key).unwrap(), b"a's version\n");
    let last = journaled(&a).last().unwrap().clone();
    assert!(
        last["summary"]
            .as_str()
            .unwrap()
            .contains("sync: 1 object(s) replaced"),
        "{last}"
    );
    let undo = a.run(&["undo", "-y"]);
    undo.expect(0);
    assert!(
        undo.stdout.contains("1 remote object(s) restored"),
        "{}",
        undo.stdout
    );
    assert_eq!(bucket.get(key).unwrap(), b"b's newer work\n");
    // Undone once, it is converged.
    a.run(&["undo", last["id"].as_str().unwrap(), "--detailed-exitcode"])
        .expect(0);
    // The undo kept what it replaced: undoing it puts a's version back,
    // and undoing that brings b's work back again.
    let undo_id = history_ids(&a).pop().unwrap();
    a.run_ok(&["undo", &undo_id, "-y"]);
    assert_eq!(bucket.get(key).unwrap(), b"a's version\n");
    a.run_ok(&["undo", "-y"]);
    assert_eq!(bucket.get(key).unwrap(), b"b's newer work\n");
    b.run_ok(&["datastore", "sync", "-y"]);
    assert_eq!(
        std::fs::read(b.cache().join("alpha/outputs/report.txt")).unwrap(),
        b"b's newer work\n"
    );
    a.run_ok(&["datastore", "sync", "-y"]);
    assert_eq!(
        std::fs::read(a.cache().join("alpha/outputs/report.txt")).unwrap(),
        b"b's newer work\n"
    );
    // The trash copy is internal: no sync ever lists it as data.
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// A clone whose unpushed edit of `alpha/outputs/report.txt` a
/// `--conflict remote` sync replaced with a colleague's version (the
/// edit went to the trash first): the clone and the file.
fn cache_overwritten_by_conflict_remote(bucket: &Bucket) -> (Repo, std::path::PathBuf) {
    let a = Repo::init(bucket, Some("alpha"));
    a.write_cache("alpha/outputs/report.txt", "first\n");
    a.run_ok(&["datastore", "sync", "-y"]);
    let b = a.clone_elsewhere();
    b.run_ok(&["datastore", "sync", "-y"]);
    b.write_cache("alpha/outputs/report.txt", "b's version\n");
    b.run_ok(&["datastore", "sync", "-y"]);
    a.write_cache("alpha/outputs/report.txt", "a's unpushed edits\n");
    a.run(&["datastore", "sync", "-y"]).expect(3);
    a.run_ok(&["datastore", "sync", "--conflict", "remote", "-y"]);
    let file = a.cache().join("alpha/outputs/report.txt");
    assert_eq!(std::fs::read(&file).unwrap(), b"b's version\n");
    (a, file)
}

/// A `--conflict remote` sync replaced this clone's edited file with the
/// remote's: the old bytes went to the trash first, and `undo` swaps them
/// back (and its undo swaps again).
fn a_conflict_remote_overwrite_of_the_cache_is_undone(backend: Backend) {
    let bucket = Bucket::new(backend);
    let (a, file) = cache_overwritten_by_conflict_remote(&bucket);
    let undo = a.run(&["undo", "-y"]);
    undo.expect(0);
    assert!(
        undo.stdout
            .contains("1 file(s) restored, 1 file(s) set aside"),
        "{}",
        undo.stdout
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"a's unpushed edits\n");
    // And forward again.
    a.run_ok(&["redo", "-y"]);
    assert_eq!(std::fs::read(&file).unwrap(), b"b's version\n");
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
    assert!(
        files(&a.cache()).keys().all(|k| !k.contains(".swamp-tmp")),
        "no temp file left"
    );
}

// ---------------------------------------------------------------------------
// Retention: `[undo] keep_days`, through a plan

const DAY0: &str = "2026-12-01T00:00:00Z";
const DAY3: &str = "2026-12-04T00:00:00Z";
const DAY8: &str = "2026-12-09T00:00:00Z";

/// Runs `args` at `now`, expecting exit 0.
fn at(repo: &Repo, now: &str, args: &[&str]) -> crate::support::bucket::Run {
    let run = repo.run_with(args, &[("SWAMP_NOW", now)]);
    run.expect(0);
    run
}

/// The apply ids of this clone's journals in `swamp history --mine`,
/// oldest first.
fn history_ids(repo: &Repo) -> Vec<String> {
    journaled(repo)
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect()
}

/// The applies `swamp history --mine` lists from this clone's journals
/// (what `undo` walks), oldest first.
fn journaled(repo: &Repo) -> Vec<serde_json::Value> {
    repo.json(&["--json", "history", "--mine"], 0)["applies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a.get("seq").is_some())
        .cloned()
        .collect()
}

/// The prune actions of `plan` (a plan document): (apply id, reason).
fn prunes(plan: &serde_json::Value) -> Vec<(String, String)> {
    plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "prune-trash")
        .map(|a| {
            (
                a["id"].as_str().unwrap().to_string(),
                a["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Two rounds of `data gc` (synced, on a remote) three days apart; on day
/// 8 the plan lists the first round's trash for pruning and nothing else,
/// and only applying it removes that trash (locally and in the remote
/// trash), never the second round's.
fn retention_prunes_only_expired_trash_through_a_plan(
    repo: &Repo,
    trash_root: &std::path::Path,
    bucket: Option<&Bucket>,
) {
    let sync = |now: &str| {
        if bucket.is_some() {
            at(repo, now, &["datastore", "sync", "-y"]);
        }
    };
    for body in ["one\n", "two\n"] {
        repo.put("m/x", body);
    }
    sync(DAY0);
    at(repo, DAY0, &["data", "gc", "--keep", "1"]);
    sync(DAY0);
    let old = history_ids(repo);
    repo.put("m/x", "three\n");
    sync(DAY3);
    at(repo, DAY3, &["data", "gc", "--keep", "1"]);
    sync(DAY3);
    let all = history_ids(repo);
    let new: Vec<String> = all[old.len()..].to_vec();
    assert_eq!(old.len(), new.len(), "{all:?}");
    // With a bucket each round's first sync uploads (journaled too): the
    // gc, then the sync that deletes in the bucket, follow it.
    let (g, d) = if bucket.is_some() { (1, 2) } else { (0, 1) };
    let remote_trash = |id: &str| {
        bucket
            .map(|b| {
                b.contents_under(&format!("swamp/alpha/.swamp/trash/{id}/"))
                    .len()
            })
            .unwrap_or(0)
    };
    if bucket.is_some() {
        assert_eq!(remote_trash(&old[d]), 1, "the sync kept the deleted object");
        assert_eq!(remote_trash(&new[d]), 1);
    }

    // Day 3 + 4: nothing is due yet.
    let plan = repo
        .run_with(
            &["--json", "plan"],
            &[("SWAMP_NOW", "2026-12-07T00:00:00Z")],
        )
        .json();
    assert!(prunes(&plan).is_empty(), "{plan}");

    // Day 8: the first round is past keep_days (7); the plan says so, and
    // planning prunes nothing.
    let plan = at(repo, DAY8, &["--json", "plan"]).json();
    // Not the first sync's uploads, whose journal holds no trash, only the
    // list of what it made: that goes with a plan that changes something
    // anyway.
    let want: Vec<(String, String)> = old[g..]
        .iter()
        .map(|id| (id.clone(), "expired".into()))
        .collect();
    let mut got = prunes(&plan);
    got.retain(|(id, _)| old.contains(id) || new.contains(id));
    assert_eq!(got, want, "{plan}");
    assert_eq!(plan["summary"]["prune_trash"], want.len());
    assert!(
        trash_root.join(&old[g]).is_dir(),
        "planning removed nothing"
    );
    let human = at(repo, DAY8, &["plan"]).stdout;
    assert!(
        human.contains("prune-trash") && human.contains("older than [undo] keep_days"),
        "{human}"
    );

    at(repo, DAY8, &["apply", "-y"]);
    assert!(
        !trash_root.join(&old[g]).exists(),
        "the expired trash is gone"
    );
    assert_eq!(
        trash(trash_root, &new[g]).len(),
        1,
        "the trash within keep_days stays"
    );
    if bucket.is_some() {
        assert_eq!(remote_trash(&old[d]), 0, "the expired remote trash is gone");
        assert_eq!(
            remote_trash(&new[d]),
            1,
            "the remote trash within keep_days stays"
        );
    }
    // Pruned applies stay in the history, and say why they cannot be undone.
    assert_eq!(history_ids(repo), all);
    let undo = repo.run_with(&["undo", &old[g]], &[("SWAMP_NOW", DAY8)]);
    undo.expect(1);
    assert!(undo.stderr.contains("pruned"), "{}", undo.stderr);
    // Converged: nothing more to prune.
    let plan = at(repo, DAY8, &["--json", "plan"]).json();
    assert!(prunes(&plan).is_empty(), "{plan}");
    // The rest still undoes.
    at(repo, DAY8, &["undo", &new[g], "-y"]);
}

/// A plan saved before an apply's trash came due does not prune it when
/// applied later (the reviewed plan did not say so) and is not stale for
/// it; a plan saved once it was due prunes it.
#[test]
fn a_saved_plan_prunes_only_the_trash_it_listed() {
    let repo = Repo::empty(vec![]);
    repo.run_ok(&["init"]);
    let trash_root = repo.root.join(".swamp/state/trash");
    for body in ["one\n", "two\n"] {
        repo.put("m/x", body);
    }
    at(&repo, DAY0, &["data", "gc", "--keep", "1"]);
    let id = history_ids(&repo).pop().unwrap();
    let early = repo.root.join("early.plan");
    let late = repo.root.join("late.plan");
    at(&repo, DAY3, &["plan", "-o", early.to_str().unwrap()]);
    at(&repo, DAY8, &["apply", early.to_str().unwrap(), "-y"]);
    assert!(
        trash_root.join(&id).is_dir(),
        "not in the reviewed plan: kept"
    );
    let plan = at(
        &repo,
        DAY8,
        &["--json", "plan", "-o", late.to_str().unwrap()],
    )
    .json();
    assert_eq!(prunes(&plan), [(id.clone(), "expired".to_string())]);
    at(&repo, DAY8, &["apply", late.to_str().unwrap(), "-y"]);
    assert!(
        !trash_root.join(&id).exists(),
        "listed in the reviewed plan: pruned"
    );
}

#[test]
fn local_retention_prunes_only_expired_trash_through_a_plan() {
    let repo = Repo::empty(vec![]);
    repo.run_ok(&["init"]);
    let trash_root = repo.root.join(".swamp/state/trash");
    retention_prunes_only_expired_trash_through_a_plan(&repo, &trash_root, None);
}

fn remote_retention_prunes_only_expired_trash_through_a_plan(backend: Backend) {
    let bucket = Bucket::new(backend);
    let repo = Repo::init(&bucket, Some("alpha"));
    let trash_root = repo.cache().join(".swamp/trash");
    retention_prunes_only_expired_trash_through_a_plan(&repo, &trash_root, Some(&bucket));
}

/// One sync that uploads and then prunes expired remote trash, on every
/// backend. (The prune goes out on the connections the uploads opened:
/// with a runtime per call instead of one per process it waited on them
/// until a timeout, 8 s instead of 1 s on S3 here, and then went through;
/// this test sees only the outcome, not the wait.)
fn a_sync_that_uploads_then_prunes_remote_trash_completes(backend: Backend) {
    let bucket = Bucket::new(backend);
    let repo = Repo::init(&bucket, Some("alpha"));
    for body in ["one\n", "two\n"] {
        repo.put("m/x", body);
    }
    at(&repo, DAY0, &["datastore", "sync", "-y"]);
    at(&repo, DAY0, &["data", "gc", "--keep", "1"]);
    at(&repo, DAY0, &["datastore", "sync", "-y"]);
    let trash = || bucket.contents_under("swamp/alpha/.swamp/trash/").len();
    assert!(trash() > 0, "the gc's remote trash");
    repo.put("m/y", "why\n");
    let plan = at(&repo, DAY8, &["--json", "plan", "--scope", "sync"]).json();
    let kinds = crate::support::action_kinds(&plan);
    let (upload, prune) = (
        kinds.iter().position(|k| *k == "upload"),
        kinds.iter().position(|k| *k == "prune-trash"),
    );
    assert!(
        upload.is_some() && prune.is_some() && upload < prune,
        "an upload, then the prune: {kinds:?}"
    );
    at(&repo, DAY8, &["datastore", "sync", "-y"]);
    assert_eq!(trash(), 0, "the expired remote trash is gone");
    assert!(bucket.contents_under("swamp/alpha/data/m/y/").len() == 1);
}

/// `max_bytes`: the oldest applies' trash goes first, until the rest fits;
/// `swamp undo --prune` previews it, and prunes it once confirmed.
#[test]
fn undo_prune_keeps_trash_under_max_bytes_oldest_first() {
    let repo = Repo::empty(vec![]);
    repo.run_ok(&["init"]);
    repo.append_config("\n[undo]\nmax_bytes = 10\n");
    let trash_root = repo.root.join(".swamp/state/trash");
    let mut ids = Vec::new();
    for (n, body) in ["aaaaaaaa\n", "bbbbbbbb\n", "cccccccc\n"]
        .iter()
        .enumerate()
    {
        repo.put(&format!("m/n{n}"), body);
        repo.put(&format!("m/n{n}"), "new\n");
        let doc = repo.json(&["--json", "data", "gc", "--keep", "1"], 0);
        ids.push(doc["apply_id"].as_str().unwrap().to_string());
    }
    let preview = repo.run(&["undo", "--prune"]);
    preview.expect(2);
    assert!(
        preview.stdout.contains(&ids[0]) && preview.stdout.contains(&ids[1]),
        "{}",
        preview.stdout
    );
    assert!(!preview.stdout.contains(&ids[2]), "{}", preview.stdout);
    assert!(
        trash_root.join(&ids[0]).is_dir(),
        "a preview prunes nothing"
    );
    let doc = repo.json(&["--json", "undo", "--prune", "-y"], 0);
    assert_eq!(doc["applied"].as_array().unwrap().len(), 2, "{doc}");
    assert!(!trash_root.join(&ids[0]).exists());
    assert!(!trash_root.join(&ids[1]).exists());
    assert_eq!(
        trash(&trash_root, &ids[2]).len(),
        1,
        "the newest fits and stays"
    );
    let again = repo.run(&["undo", "--prune"]);
    again.expect(0);
    assert!(
        again.stdout.contains("Nothing to prune"),
        "{}",
        again.stdout
    );
}

// ---------------------------------------------------------------------------
// --no-undo

/// `--no-undo` is named in the plan, keeps no remote trash copy, and the
/// history says the run cannot be undone.
fn no_undo_deletes_for_good_and_says_so(backend: Backend) {
    let bucket = Bucket::new(backend);
    let repo = Repo::init(&bucket, Some("alpha"));
    repo.put("m/x", "one\n");
    repo.put("m/y", "two\n");
    repo.run_ok(&["datastore", "sync", "-y"]);
    repo.run_ok(&["data", "rm", "m/y"]);
    let plan = repo.json(&["--json", "plan", "--no-undo"], 0);
    assert_eq!(plan["no_undo"], true, "{plan}");
    assert_eq!(plan["summary"]["trash_copies"], 0, "{plan}");
    let kept = repo.json(&["--json", "plan"], 0);
    assert_eq!(kept["summary"]["trash_copies"], 1, "{kept}");
    assert_eq!(
        kept["summary"]["requests"]["copy"].as_u64().unwrap(),
        plan["summary"]["requests"]["copy"].as_u64().unwrap() + 1,
        "the trash copy is counted"
    );
    let human = repo.run(&["plan", "--no-undo"]).stdout;
    assert!(
        human.contains("--no-undo") && human.contains("for good"),
        "{human}"
    );
    let key = "swamp/alpha/data/m/y/1/raw";
    assert_eq!(
        bucket.get(key).as_deref(),
        Some(&b"two\n"[..]),
        "pushed before"
    );
    repo.run_ok(&["apply", "--no-undo", "-y"]);
    assert_eq!(bucket.get(key), None, "the object left the bucket");
    assert!(
        bucket.get("swamp/alpha/data/m/x/1/raw").is_some(),
        "only the removed name was deleted"
    );
    assert!(
        bucket
            .contents_under("swamp/alpha/.swamp/trash/")
            .is_empty(),
        "no trash copy"
    );
    let undo = repo.run(&["undo"]);
    undo.expect(1);
    assert!(undo.stderr.contains("--no-undo"), "{}", undo.stderr);
}

/// After the `--conflict local` overwrite, the colleague changed the object
/// again: undoing would throw their new work away, so it is a conflict and
/// the remote keeps it.
fn a_remote_undo_whose_object_changed_since_is_a_conflict(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.write_cache("alpha/outputs/report.txt", "first\n");
    a.run_ok(&["datastore", "sync", "-y"]);
    let b = a.clone_elsewhere();
    b.run_ok(&["datastore", "sync", "-y"]);
    a.write_cache("alpha/outputs/report.txt", "a's version\n");
    b.write_cache("alpha/outputs/report.txt", "b's version\n");
    b.run_ok(&["datastore", "sync", "-y"]);
    a.run_ok(&["datastore", "sync", "--conflict", "local", "-y"]);
    b.run_ok(&["datastore", "sync", "-y"]);
    b.write_cache("alpha/outputs/report.txt", "b's third go\n");
    b.run_ok(&["datastore", "sync", "-y"]);
    let key = "swamp/alpha/outputs/report.txt";
    let undo = a.run(&["undo", "-y"]);
    undo.expect(3);
    assert!(
        undo.stdout.contains("outputs/report.txt"),
        "{}",
        undo.stdout
    );
    assert_eq!(
        bucket.get(key).unwrap(),
        b"b's third go\n",
        "nothing overwritten"
    );
}

/// `kill -9` between the restores of a remote undo (the lock left behind
/// expires): run again, it restores the rest and converges.
fn a_remote_undo_killed_mid_way_converges_when_run_again(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.append_config("\n[lock]\nttl_secs = 1\n");
    // More than the restores kept in flight at once (32), so a kill after
    // the first leaves some not started.
    for i in 0..40 {
        a.write_cache(&format!("alpha/outputs/r{i}.txt"), &format!("report {i}\n"));
    }
    a.run_ok(&["datastore", "sync", "-y"]);
    let before = bucket.contents_under("swamp/alpha/outputs/");
    assert_eq!(before.len(), 40);
    std::fs::remove_dir_all(a.cache().join("alpha/outputs")).unwrap();
    a.run_ok(&["datastore", "sync", "--force", "-y"]);
    assert!(bucket.contents_under("swamp/alpha/outputs/").is_empty());
    let id = history_ids(&a).pop().unwrap();
    let killed = a.run_with(
        &["undo", "-y"],
        &[("FAILPOINTS", "undo-step-done=1*off->return")],
    );
    assert_eq!(
        killed.code, None,
        "killed: {}{}",
        killed.stdout, killed.stderr
    );
    let restored = bucket.contents_under("swamp/alpha/outputs/").len();
    assert!(
        (1..40).contains(&restored),
        "{restored} restored before the kill"
    );
    a.run_ok(&["undo", &id, "-y"]);
    assert_eq!(bucket.contents_under("swamp/alpha/outputs/"), before);
    a.run(&["undo", &id, "--detailed-exitcode"]).expect(0);
}

/// Objects a sync deleted, brought back by `undo`; the undo of that undo
/// takes them away again (kept in its own remote trash), and undoing it in
/// turn brings them back, byte for byte. The undo points to `redo`, and the
/// redo says it is one: its header, its summary counting the objects it
/// sets aside, and its closing line.
fn a_remote_delete_undone_then_redone_then_undone_again(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    for i in 0..3 {
        a.write_cache(&format!("alpha/outputs/r{i}.txt"), &format!("report {i}\n"));
    }
    a.run_ok(&["datastore", "sync", "-y"]);
    let before = bucket.contents_under("swamp/alpha/outputs/");
    std::fs::remove_dir_all(a.cache().join("alpha/outputs")).unwrap();
    a.run_ok(&["datastore", "sync", "--force", "-y"]);
    assert!(bucket.contents_under("swamp/alpha/outputs/").is_empty());
    let sync = history_ids(&a).pop().unwrap();
    let undo = a.run(&["undo", "-y"]);
    undo.expect(0);
    assert!(
        undo.stdout.contains(&format!("Undid apply {sync}: ")),
        "{}",
        undo.stdout
    );
    assert!(
        undo.stdout.contains("`swamp redo` puts it back"),
        "{}",
        undo.stdout
    );
    let undo_id = history_ids(&a).pop().unwrap();
    assert_eq!(bucket.contents_under("swamp/alpha/outputs/"), before);
    let redo = a.run(&["redo", "-y"]);
    redo.expect(0);
    assert!(redo.stdout.contains("set-aside-remote"), "{}", redo.stdout);
    assert!(
        redo.stdout.contains(&format!(
            "Redo of apply {sync}: reverses its undo, apply {undo_id}"
        )),
        "{}",
        redo.stdout
    );
    assert!(
        redo.stdout
            .contains("Redo: 3 remote object(s) to set aside, 0 conflict(s)."),
        "{}",
        redo.stdout
    );
    assert!(
        redo.stdout.contains("3 remote object(s) set aside"),
        "{}",
        redo.stdout
    );
    assert!(
        redo.stdout.contains(&format!("Redid apply {sync}: ")),
        "{}",
        redo.stdout
    );
    assert!(bucket.contents_under("swamp/alpha/outputs/").is_empty());
    // An undo of the redo is an undo of the sync again, and says so (not
    // a "redo" of the undo the redo reversed).
    let again = a.run(&["undo", "-y"]);
    again.expect(0);
    assert!(
        again
            .stdout
            .contains(&format!("Undo of apply {sync} again: reverses its redo")),
        "{}",
        again.stdout
    );
    assert!(
        again
            .stdout
            .contains(&format!("Undid apply {sync} again: ")),
        "{}",
        again.stdout
    );
    assert_eq!(bucket.contents_under("swamp/alpha/outputs/"), before);
}

/// `data gc`, the sync that pushed it, then `undo` twice walks back both
/// applies (the sync, then the gc): every version is back byte for byte,
/// in the cache and in the bucket; `redo` walks forward one step (the gc
/// again). The history marks what is undone.
fn two_undos_walk_back_a_gc_and_its_sync_and_redo_walks_forward(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    for body in ["one\n", "two\n", "three\n"] {
        a.put("m/x", body);
    }
    a.put("m/y", "why\n");
    a.run_ok(&["datastore", "sync", "-y"]);
    let data = a.cache().join("alpha/data");
    let (local, remote) = (versions(&data), bucket.contents_under("swamp/alpha/data/"));
    assert_eq!(local.len(), 4);

    let gc = a.json(&["--json", "data", "gc", "--keep", "1"], 0)["apply_id"]
        .as_str()
        .unwrap()
        .to_string();
    a.run_ok(&["datastore", "sync", "-y"]);
    assert_eq!(bucket.contents_under("swamp/alpha/data/").len(), 2);

    let first = a.run(&["undo", "-y"]);
    first.expect(0);
    assert_eq!(
        bucket.contents_under("swamp/alpha/data/"),
        remote,
        "the sync undone: every object back"
    );
    assert_eq!(versions(&data).len(), 2, "the gc still in force");
    let second = a.run(&["undo", "-y"]);
    second.expect(0);
    assert!(
        second.stdout.contains(&format!("Undid apply {gc}")),
        "{}",
        second.stdout
    );
    assert_eq!(versions(&data), local, "every version back, byte for byte");
    assert_eq!(bucket.contents_under("swamp/alpha/data/"), remote);
    let history = journaled(&a);
    let undone: Vec<bool> = history.iter().map(|j| !j["undone_by"].is_null()).collect();
    // The first sync (its uploads), then the gc and the sync undone.
    assert_eq!(undone, [false, true, true, false, false], "{history:#?}");

    let redo = a.run(&["redo", "-y"]);
    redo.expect(0);
    assert_eq!(versions(&data).len(), 2, "the gc again: {}", redo.stdout);
    assert!(!data.join("m/x/1/raw").exists());
    // Nothing changed since: a redo of the sync's undo is next.
    a.run(&["redo", "--detailed-exitcode", "--dry-run"])
        .expect(2);
}

/// An undo over a file changed since it ran is a conflict (exit 3) that
/// overwrites nothing.
fn an_undo_over_a_file_changed_since_is_exit_3(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    for body in ["one\n", "two\n"] {
        a.put("m/x", body);
    }
    a.run_ok(&["datastore", "sync", "-y"]);
    a.run_ok(&["data", "gc", "--keep", "1"]);
    let file = a.cache().join("alpha/data/m/x/1/raw");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "written since\n").unwrap();
    let run = a.run(&["undo", "-y"]);
    run.expect(3);
    assert!(run.stdout.contains("data/m/x/1/raw"), "{}", run.stdout);
    assert_eq!(std::fs::read(&file).unwrap(), b"written since\n");
}

on_every_backend!(
    two_undos_walk_back_a_gc_and_its_sync_and_redo_walks_forward,
    an_undo_over_a_file_changed_since_is_exit_3,
    a_remote_delete_undone_then_redone_then_undone_again,
    a_remote_undo_whose_object_changed_since_is_a_conflict,
    a_remote_undo_killed_mid_way_converges_when_run_again,
    no_undo_deletes_for_good_and_says_so,
    remote_retention_prunes_only_expired_trash_through_a_plan,
    a_sync_that_uploads_then_prunes_remote_trash_completes,
    a_conflict_remote_overwrite_of_the_cache_is_undone,
    a_conflict_local_overwrite_of_the_remote_is_undone,
    a_forced_delete_of_the_last_copy_is_undone,
    remote_gc_and_rm_set_every_removed_version_aside_byte_for_byte,
    remote_undo_brings_back_what_gc_removed_and_undo_of_undo_removes_it_again,
);

/// An undo that restores only the cache holds the cache's lock: while a
/// push from the same clone holds it, the undo waits and, past its lock
/// timeout, gives up (75) having changed nothing; once the push is done
/// it goes through. (It took no lock, and could interleave with a pull or
/// a `data get` writing the same files.)
#[test]
fn an_undo_of_the_cache_only_waits_for_the_clones_lock() {
    let bucket = Bucket::new(Backend::Fs);
    let (a, file) = cache_overwritten_by_conflict_remote(&bucket);
    let id = history_ids(&a).pop().expect("the sync is in the history");

    a.write_cache("alpha/outputs/other.txt", "other\n");
    let push = a.spawn(
        &["datastore", "sync", "--push", "-y"],
        &[("FAILPOINTS", "lock-acquired=sleep(4000)")],
    );
    let lock = a.cache().join(".swamp/lock.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !lock.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the push took no lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let waited = a.run(&["--lock-timeout", "1", "undo", &id, "-y"]);
    waited.expect(75);
    assert_eq!(std::fs::read(&file).unwrap(), b"b's version\n", "unchanged");
    crate::support::bucket::finish(push).expect(0);
    a.run_ok(&["undo", &id, "-y"]);
    assert_eq!(std::fs::read(&file).unwrap(), b"a's unpushed edits\n");
}
