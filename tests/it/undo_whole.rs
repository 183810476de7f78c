//! An undo reverses the whole apply (issue 44, item 4): files a move
//! moved go back (and `.swamp.toml` with them), what an apply created is
//! set aside, and what cannot be reversed is a conflict that changes
//! nothing. Before, an undo after a namespace move put back only a dropped
//! duplicate, said "Undid apply", and left the moves in place.

use crate::support::bucket::{Backend, Bucket, Repo};

/// The local datastore's files of `repo` under `dir` (`.swamp/…`).
fn tree(repo: &Repo, dir: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    repo.tree(dir)
        .into_iter()
        .filter(|(k, _)| {
            !k.starts_with("state/") && !k.starts_with("team/") && !k.contains("_catalog")
        })
        .collect()
}

/// `swamp datastore namespace set team --migrate --confirm`.
fn move_into_team(repo: &Repo) {
    repo.run_ok(&[
        "datastore",
        "namespace",
        "set",
        "team",
        "--migrate",
        "--confirm",
    ]);
}

/// `namespace set --migrate` moves every file into the namespace; `undo`
/// moves each back and `.swamp.toml` names no namespace again, so the
/// next plan has nothing to do; `redo` moves them into the namespace
/// again, and `.swamp.toml` names it.
#[test]
fn undoing_a_namespace_move_moves_every_file_and_the_config_back_and_redo_moves_them_again() {
    let repo = Repo::with_solo_data();
    let before = tree(&repo, ".swamp");
    let config = repo.config();
    move_into_team(&repo);
    assert_ne!(tree(&repo, ".swamp"), before, "the datastore's files moved");
    let moved = repo.tree(".swamp/team");

    let undo = repo.run(&["undo", "-y"]);
    undo.expect(0);
    assert!(undo.stdout.contains("move-back"), "{}", undo.stdout);
    assert!(
        undo.stdout
            .contains("file(s) moved back; `.swamp.toml` names .swamp/ again"),
        "{}",
        undo.stdout
    );
    assert_eq!(
        tree(&repo, ".swamp"),
        before,
        "every file back, byte for byte"
    );
    assert!(!repo.exists(".swamp/team/outputs/deploy/web-1.yaml"));
    assert_eq!(repo.config(), config, "`.swamp.toml` as before the move");
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);

    let redo = repo.run(&["redo", "-y"]);
    redo.expect(0);
    assert!(
        redo.stdout.contains("Redo: ") && redo.stdout.contains("file(s) to move back"),
        "{}",
        redo.stdout
    );
    assert_eq!(repo.tree(".swamp/team"), moved, "moved again");
    assert!(
        repo.config().contains("namespace = \"team\""),
        "{}",
        repo.config()
    );
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// A file changed since the move is a conflict named in the undo plan
/// (exit 3): no file moves back and `.swamp.toml` keeps the namespace.
#[test]
fn a_namespace_move_whose_file_changed_since_is_a_conflict_that_moves_nothing_back() {
    let repo = Repo::with_solo_data();
    move_into_team(&repo);
    repo.write(".swamp/team/outputs/deploy/web-1.yaml", "edited since\n");
    let moved = repo.tree(".swamp/team");
    let config = repo.config();
    let undo = repo.run(&["undo", "-y"]);
    undo.expect(3);
    assert!(
        undo.stdout
            .contains("outputs/deploy/web-1.yaml: changed since the apply"),
        "{}",
        undo.stdout
    );
    assert_eq!(repo.tree(".swamp/team"), moved, "nothing moved back");
    assert_eq!(repo.config(), config);
}

/// A push that only created objects is undone by a bare `undo`: the
/// objects go to the bucket's trash, the cache keeps its files, and the
/// next plan uploads them again (the sync base forgot them), never
/// deleting the cache's copies. `redo` puts the objects back.
fn an_undone_push_sets_its_new_objects_aside_and_leaves_them_to_push_again(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.write_cache("alpha/outputs/one.txt", "one\n");
    a.write_cache("alpha/outputs/two.txt", "two\n");
    a.run_ok(&["push", "-y"]);
    let pushed = bucket.contents_under("swamp/alpha/outputs/");
    assert_eq!(pushed.len(), 2);

    let undo = a.run(&["undo", "-y"]);
    undo.expect(0);
    assert!(
        undo.stdout
            .contains("Undo: 2 remote object(s) to set aside, 0 conflict(s)."),
        "{}",
        undo.stdout
    );
    assert!(bucket.contents_under("swamp/alpha/outputs/").is_empty());
    assert!(a.cache().join("alpha/outputs/one.txt").is_file());
    let plan = a.json(&["--json", "plan"], 0);
    let kinds: Vec<&str> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| {
            x["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("outputs/"))
        })
        .map(|x| x["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["upload", "upload"], "{plan:#}");

    a.run_ok(&["redo", "-y"]);
    assert_eq!(bucket.contents_under("swamp/alpha/outputs/"), pushed);
}

/// A pull's downloads are undone by a bare `undo` in the clone that
/// pulled: set aside in its trash, and the next plan downloads them again
/// (never deletes them from the bucket).
fn an_undone_pull_sets_its_downloads_aside_and_leaves_them_to_pull_again(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.write_cache("alpha/outputs/one.txt", "one\n");
    a.run_ok(&["push", "-y"]);
    let b = a.clone_elsewhere();
    b.run_ok(&["pull", "-y"]);
    let file = b.cache().join("alpha/outputs/one.txt");
    assert!(file.is_file());

    let undo = b.run(&["undo", "-y"]);
    undo.expect(0);
    assert!(
        undo.stdout
            .contains("Undo: 1 file(s) to set aside, 0 conflict(s)."),
        "{}",
        undo.stdout
    );
    assert!(!file.exists());
    let plan = b.json(&["--json", "plan"], 0);
    let kinds: Vec<&str> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["path"] == "outputs/one.txt")
        .map(|x| x["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["download"], "{plan:#}");
    assert_eq!(bucket.contents_under("swamp/alpha/outputs/").len(), 1);

    b.run_ok(&["redo", "-y"]);
    assert_eq!(std::fs::read(&file).unwrap(), b"one\n");
}

/// `datastore setup BUCKET` from the local datastore, undone: the files
/// move back into `.swamp/`, the uploads go to the bucket's trash and
/// `.swamp.toml` names the local datastore again, so nothing is left
/// where swamp no longer looks (the plan is converged). `redo` moves
/// forward again, and so does the move back to `local` and its undo.
fn undoing_a_datastore_setup_puts_files_objects_and_config_back(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::empty(bucket.env());
    a.run_ok(&["init"]);
    a.write(".swamp/outputs/one.txt", "one\n");
    a.write(".swamp/data/m/x/1/raw", "x\n");
    let local = a.tree(".swamp/outputs");
    let config = a.config();
    a.run_ok(&["datastore", "setup", &bucket.spec(), "-y"]);
    let pushed = bucket.contents_under("swamp/outputs/");
    assert_eq!(pushed.len(), 1);

    let undo = a.run(&["undo", "-y"]);
    undo.expect(0);
    assert!(
        undo.stdout.contains("`.swamp.toml` names .swamp/ again"),
        "{}",
        undo.stdout
    );
    assert_eq!(a.config(), config);
    assert_eq!(a.tree(".swamp/outputs"), local, "back in .swamp/");
    assert_eq!(a.read(".swamp/data/m/x/1/raw"), "x\n");
    assert!(bucket.contents_under("swamp/outputs/").is_empty());
    a.run(&["plan", "--detailed-exitcode"]).expect(0);

    a.run_ok(&["redo", "-y"]);
    assert_eq!(bucket.contents_under("swamp/outputs/"), pushed);
    assert!(!a.exists(".swamp/outputs/one.txt"));
    settles(&a);

    // And back to `local`, undone: the bucket's objects and the cache are
    // as before, and `.swamp.toml` names the bucket.
    let in_bucket = a.config();
    a.run_ok(&["datastore", "setup", "local", "-y"]);
    assert!(bucket.contents_under("swamp/outputs/").is_empty());
    a.run_ok(&["undo", "-y"]);
    assert_eq!(a.config(), in_bucket);
    assert_eq!(bucket.contents_under("swamp/outputs/"), pushed);
    assert!(a.cache().join("outputs/one.txt").is_file());
    settles(&a);
}

/// The objects an undo or redo put back are as the cache's files: the
/// next plan only records them in the sync base (nothing moves), and then
/// has nothing to do.
fn settles(a: &Repo) {
    let plan = a.json(&["--json", "plan"], 0);
    for x in plan["actions"].as_array().unwrap() {
        assert_eq!(x["kind"], "record-base", "{plan:#}");
    }
    a.run_ok(&["apply", "-y"]);
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
}

on_every_backend!(
    an_undone_push_sets_its_new_objects_aside_and_leaves_them_to_push_again,
    an_undone_pull_sets_its_downloads_aside_and_leaves_them_to_pull_again,
    undoing_a_datastore_setup_puts_files_objects_and_config_back,
);

/// The list of what a push made (beside its journal, nothing in the
/// trash) goes past `[undo] keep_days` with a sync that changes something
/// anyway, never on its own: a converged sync stays converged.
#[test]
fn a_pushs_list_of_what_it_made_expires_with_a_sync_that_changes_something() {
    let bucket = Bucket::new(Backend::Fs);
    let a = Repo::init(&bucket, Some("alpha"));
    let at = |now: &str, args: &[&str]| a.run_with(args, &[("SWAMP_NOW", now)]);
    a.write_cache("alpha/outputs/one.txt", "one\n");
    at("2026-12-01T00:00:00Z", &["push", "-y"]).expect(0);
    let lists = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(a.root.join(".swamp/state/trash"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "made"))
            .collect()
    };
    assert_eq!(lists().len(), 1);
    let later = "2026-12-09T00:00:00Z";
    at(later, &["plan", "--detailed-exitcode"]).expect(0);
    assert_eq!(lists().len(), 1, "planning removes nothing");

    a.write_cache("alpha/outputs/two.txt", "two\n");
    let sync = at(later, &["--json", "push", "-y"]);
    sync.expect(0);
    let doc = sync.json();
    let pruned: Vec<&serde_json::Value> = doc["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "prune-trash")
        .collect();
    assert_eq!(pruned.len(), 1, "{}", sync.stdout);
    assert_eq!(lists().len(), 1, "only the new push's list is left");
    let id = pruned[0]["id"].as_str().unwrap();
    let undo = a.json(&["--json", "undo", id], 1);
    assert!(undo.to_string().contains("pruned"), "{undo}");
}
