//! Namespace migration: forward, twice, resumed, reversed, merged.

use crate::e2e::common::{Repo, data_files, tree};

const NS: &str = ".swamp/homelab";

fn solo_files(repo: &Repo) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut t = data_files(&repo.tree(".swamp"));
    t.retain(|k, _| {
        !k.starts_with("homelab/") && !k.starts_with("secrets/") && !k.starts_with("vault-bundles/")
    });
    t
}

fn inode(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).unwrap().ino()
}

#[test]
fn a_migration_renames_whole_directories_and_moves_the_rest_file_by_file() {
    let repo = Repo::with_solo_data();
    for i in 0..30 {
        let rel = format!(".swamp/outputs/batch/{i:02}.yaml");
        repo.write(&rel, &format!("n: {i}\n"));
        // Written by an earlier run: a file changed within the last two
        // seconds is not vouched for by the hash cache, and moves by itself.
        repo.backdate(&rel);
    }
    // Not a datastore file (a temp file of a live writer, this test): its
    // directory cannot move whole, the file beside it moves on its own, and
    // the temp file stays where it is.
    let temp = format!("outputs/deploy/.swamp-tmp-{}-keep", std::process::id());
    repo.write(&format!(".swamp/{temp}"), "being written\n");
    let mut expected = solo_files(&repo);
    expected.remove(&temp);
    let batch_dir = inode(&repo.path(".swamp/outputs/batch"));
    let deploy_dir = inode(&repo.path(".swamp/outputs/deploy"));
    let plan = repo.run(&[
        "--json",
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "--dry-run",
    ]);
    plan.expect(0);
    let moves = plan.json()["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "move")
        .count();
    assert_eq!(moves, expected.len(), "the plan lists every file");
    repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "--confirm",
    ])
    .expect(0);

    assert_eq!(
        data_files(&repo.tree(NS)),
        expected,
        "every planned file moved byte for byte, and nothing else"
    );
    assert_eq!(
        inode(&repo.path(&format!("{NS}/outputs/batch"))),
        batch_dir,
        "outputs/batch was renamed whole"
    );
    assert_ne!(
        inode(&repo.path(&format!("{NS}/outputs/deploy"))),
        deploy_dir,
        "outputs/deploy moved file by file"
    );
    assert_eq!(
        std::fs::read(repo.path(&format!(".swamp/{temp}"))).unwrap(),
        b"being written\n"
    );
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
}

#[test]
fn migrate_preview_changes_nothing_and_confirm_moves_everything() {
    let repo = Repo::with_solo_data();
    let before = solo_files(&repo);
    let config_before = repo.config();

    let preview = repo.run(&["datastore", "namespace", "set", "homelab", "--migrate"]);
    preview.expect(2);
    snapshot!("migrate_preview_human", repo.filter(&preview.stdout));
    assert!(
        preview
            .stderr
            .contains("Nothing changed: applying needs confirmation")
    );
    assert_eq!(repo.config(), config_before, "a preview writes nothing");
    assert_eq!(solo_files(&repo), before);

    let json = repo.run(&[
        "--json",
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
    ]);
    json.expect(2);
    snapshot!("migrate_preview_json", repo.filter(&json.stdout));

    repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "--confirm",
    ])
    .expect(0);
    assert_eq!(
        data_files(&repo.tree(NS)),
        before,
        "every file moved byte for byte"
    );
    assert!(
        solo_files(&repo).is_empty(),
        "nothing left at the solo layout"
    );
    let config = repo.config();
    assert!(config.contains("namespace = \"homelab\""), "{config}");
    assert!(
        !config.contains("migrating_from"),
        "record cleared once converged: {config}"
    );
}

#[test]
fn migrate_twice_exits_zero_with_nothing_to_move_and_catalog_stays_repo_local() {
    let repo = Repo::with_solo_data();
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    repo.run(&["datastore", "namespace", "migrate", "--confirm"])
        .expect(0);
    repo.run(&["data", "list"]).expect(0);
    let after_first = repo.tree(".swamp");

    let second = repo.run(&["datastore", "namespace", "migrate"]);
    second.expect(0);
    assert!(second.stdout.contains("No changes"), "{}", second.stdout);
    snapshot!("migrate_second_time_human", repo.filter(&second.stdout));
    repo.run(&["datastore", "namespace", "migrate", "--confirm"])
        .expect(0);
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);

    assert!(repo.exists(".swamp/data/_catalog.db"));
    let ns_tree = repo.tree(NS);
    assert!(
        ns_tree.keys().all(|k| !k.contains("_catalog.db")),
        "no catalog file under the namespace: {:?}",
        ns_tree.keys()
    );
    assert_eq!(data_files(&repo.tree(".swamp")), data_files(&after_first));
}

#[test]
fn a_plain_file_where_the_namespace_outputs_dir_must_go_stops_apply_and_rerun_finishes() {
    let repo = Repo::with_solo_data();
    let before = solo_files(&repo);
    repo.write(".swamp/homelab/outputs", "I am a file, not a directory");

    let first = repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "--confirm",
    ]);
    first.expect(3);
    assert!(
        first
            .stdout
            .contains("homelab/outputs is a plain file where a directory must be"),
        "{}",
        first.stdout
    );
    snapshot!("obstacle_human", repo.filter(&first.stdout));
    assert_eq!(
        solo_files(&repo),
        before,
        "nothing moved while a conflict blocks apply"
    );
    // the desired state was recorded, so a plain plan continues toward it
    assert!(repo.config().contains("namespace = \"homelab\""));
    repo.run(&["plan"]).expect(3);

    std::fs::remove_file(repo.path(".swamp/homelab/outputs")).unwrap();
    repo.run(&["apply", "-y"]).expect(0);
    assert_eq!(data_files(&repo.tree(NS)), before);
    assert!(solo_files(&repo).is_empty());
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
}

#[test]
fn reverse_after_a_read_moves_everything_back_and_drops_the_namespace() {
    let repo = Repo::with_solo_data();
    let before = solo_files(&repo);
    repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "-y",
    ])
    .expect(0);
    // A read opens the catalog; a reader still holding it open keeps the
    // WAL sidecars beside it in .swamp/data/ while we migrate back.
    repo.run(&["data", "list"]).expect(0);
    let reader = rusqlite::Connection::open(repo.path(".swamp/data/_catalog.db")).unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    assert!(
        repo.exists(".swamp/data/_catalog.db-wal"),
        "WAL sidecar present"
    );
    assert!(
        repo.exists(".swamp/data/_catalog.db-shm"),
        "SHM sidecar present"
    );

    let reverse = repo.run(&["datastore", "namespace", "unset", "--migrate", "--confirm"]);
    reverse.expect(0);
    snapshot!("reverse_after_read_human", repo.filter(&reverse.stdout));
    assert_eq!(
        solo_files(&repo),
        before,
        "every file back at its solo path byte for byte"
    );
    assert!(
        !repo.exists(NS),
        "the emptied namespace directory is removed"
    );
    let config = repo.config();
    assert!(!config.contains("namespace"), "{config}");
    assert!(!config.contains("migrating_from"), "{config}");
    drop(reader);
    // and the catalog still reads the data
    let list = repo.run(&["--json", "data", "list"]);
    list.expect(0);
    assert_eq!(list.json()["data"][0]["latest_version"], 2);
}

#[test]
fn migrate_reverse_is_unset_migrate() {
    let repo = Repo::with_solo_data();
    let before = solo_files(&repo);
    repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "-y",
    ])
    .expect(0);
    repo.run(&[
        "datastore",
        "namespace",
        "migrate",
        "--reverse",
        "--confirm",
    ])
    .expect(0);
    assert_eq!(solo_files(&repo), before);
    assert!(!repo.config().contains("homelab"));
}

#[test]
fn merge_drops_identical_duplicates_and_a_different_file_blocks_everything() {
    let repo = Repo::with_solo_data();
    // identical copy already in the namespace
    repo.write(".swamp/homelab/audit/2026-11.log", "alice applied\n");
    // different content at the same path
    repo.write(
        ".swamp/homelab/outputs/deploy/web-1.yaml",
        "status: failed\nhost: web-1\n",
    );
    let before = repo.tree(".swamp");

    let run = repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "--confirm",
    ]);
    run.expect(3);
    snapshot!("merge_conflict_human", repo.filter(&run.stdout));
    assert!(
        run.stdout.contains(&sha("status: ok\nhost: web-1\n")),
        "source hash shown"
    );
    assert!(
        run.stdout.contains(&sha("status: failed\nhost: web-1\n")),
        "target hash shown"
    );
    assert_eq!(
        data_files(&repo.tree(".swamp")),
        data_files(&before),
        "nothing moved, nothing dropped"
    );

    let json = repo.run(&["--json", "plan"]);
    json.expect(3);
    snapshot!("merge_conflict_json", repo.filter(&json.stdout));

    // --confirm never exits 0 while work is left undone
    repo.run(&["datastore", "namespace", "migrate", "--confirm"])
        .expect(3);
    repo.run(&["apply", "-y"]).expect(3);

    // resolve by keeping the namespace's copy
    std::fs::remove_file(repo.path(".swamp/outputs/deploy/web-1.yaml")).unwrap();
    let apply = repo.run(&["apply", "-y"]);
    apply.expect(0);
    assert!(
        apply.stdout.contains("1 identical duplicate(s) dropped"),
        "{}",
        apply.stdout
    );
    assert!(!repo.exists(".swamp/audit/2026-11.log"));
    assert_eq!(
        repo.read(".swamp/homelab/audit/2026-11.log"),
        "alice applied\n"
    );
    assert_eq!(
        repo.read(".swamp/homelab/outputs/deploy/web-1.yaml"),
        "status: failed\nhost: web-1\n"
    );
    // The dropped copy was set aside, not destroyed: the history has it.
    let history = repo.run(&["--json", "history"]);
    history.expect(0);
    let doc: serde_json::Value = serde_json::from_str(&history.stdout).unwrap();
    let last = doc["applies"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["files"], 1, "{last}");
    assert_eq!(last["bytes_set_aside"], 14, "{last}");
}

#[test]
fn secrets_and_vault_bundles_never_move() {
    let repo = Repo::with_solo_data();
    let secrets = repo.tree(".swamp/secrets");
    let bundles = repo.tree(".swamp/vault-bundles");
    repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "-y",
    ])
    .expect(0);
    assert_eq!(repo.tree(".swamp/secrets"), secrets);
    assert_eq!(repo.tree(".swamp/vault-bundles"), bundles);
    assert!(!repo.exists(".swamp/homelab/secrets"));
    assert!(!repo.exists(".swamp/homelab/vault-bundles"));
    repo.run(&["datastore", "namespace", "unset", "--migrate", "-y"])
        .expect(0);
    assert_eq!(repo.tree(".swamp/secrets"), secrets);
    assert_eq!(repo.tree(".swamp/vault-bundles"), bundles);
}

#[test]
fn namespace_set_to_the_same_value_is_a_no_op_success() {
    let repo = Repo::local(&["--namespace", "homelab"]);
    let config = repo.config();
    let run = repo.run(&["datastore", "namespace", "set", "homelab"]);
    run.expect(0);
    assert!(run.stdout.contains("already"), "{}", run.stdout);
    assert_eq!(repo.config(), config);
}

#[test]
fn namespace_set_without_migrate_records_and_plan_continues_toward_it() {
    let repo = Repo::with_solo_data();
    let set = repo.run(&["datastore", "namespace", "set", "homelab"]);
    set.expect(0);
    assert!(
        set.stdout
            .contains("5 file(s) are still at the old location"),
        "{}",
        set.stdout
    );
    let config = repo.config();
    assert!(config.contains("[[migrating_from]]"), "{config}");
    repo.run(&["plan", "--detailed-exitcode"]).expect(2);
    repo.run(&["apply", "-y"]).expect(0);
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
    assert_eq!(tree(&repo.path(NS)).len(), 5);
}

#[test]
fn changing_namespace_moves_data_from_the_old_namespace() {
    let repo = Repo::with_solo_data();
    let before = solo_files(&repo);
    repo.run(&["datastore", "namespace", "set", "a", "--migrate", "-y"])
        .expect(0);
    repo.run(&["datastore", "namespace", "set", "b", "--migrate", "-y"])
        .expect(0);
    assert_eq!(data_files(&repo.tree(".swamp/b")), before);
    assert!(!repo.exists(".swamp/a"));
}

#[test]
fn apply_without_a_terminal_or_yes_refuses_and_changes_nothing() {
    let repo = Repo::with_solo_data();
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    let before = repo.tree(".swamp");
    let run = repo.run(&["apply"]);
    run.expect(2);
    assert!(run.stderr.contains("swamp apply -y"), "{}", run.stderr);
    assert_eq!(data_files(&repo.tree(".swamp")), data_files(&before));
    // --dry-run: the same plan, nothing changed, exit 0.
    let dry = repo.run(&["apply", "--dry-run"]);
    dry.expect(0);
    assert!(
        dry.stderr
            .contains("This was a dry run; nothing changed. Run `swamp apply -y`"),
        "{}",
        dry.stderr
    );
    assert_eq!(data_files(&repo.tree(".swamp")), data_files(&before));
}

#[test]
fn plan_detailed_exitcode_distinguishes_changes_from_none() {
    let repo = Repo::with_solo_data();
    let none = repo.run(&["plan", "--detailed-exitcode"]);
    none.expect(0);
    assert!(none.stdout.contains("No changes"), "{}", none.stdout);
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    let some = repo.run(&["plan", "--detailed-exitcode"]);
    some.expect(2);
    assert!(some.stdout.contains("to move"), "{}", some.stdout);
    let plain = repo.run(&["plan"]);
    plain.expect(0);
    assert_eq!(
        plain.stdout, some.stdout,
        "the same plan, another exit code"
    );
}

fn sha(s: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

/// An empty directory where a moved file must land used to be invisible to
/// the planner: apply moved part of the data, stopped on it, and every
/// later plan again showed no conflict. Now it is an obstacle at plan time.
#[test]
fn an_empty_directory_at_a_migration_destination_is_exit_3_at_plan_time() {
    let repo = Repo::with_solo_data();
    std::fs::create_dir_all(repo.path(".swamp/homelab/data/web/state/2/raw")).unwrap();
    let before = data_files(&repo.tree(".swamp"));
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    let plan = repo.run(&["plan"]);
    plan.expect(3);
    assert!(
        plan.stdout
            .contains("data/web/state/2/raw is a directory where a file must be"),
        "{}",
        plan.stdout
    );
    repo.run(&["apply", "-y"]).expect(3);
    assert_eq!(data_files(&repo.tree(".swamp")), before, "nothing moved");
    std::fs::remove_dir(repo.path(".swamp/homelab/data/web/state/2/raw")).unwrap();
    repo.run(&["apply", "-y"]).expect(0);
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// Data stays readable until the move converges: between `namespace set`
/// and its apply, `data get` and `data list` find it at the old place, and
/// a new version is numbered after it.
#[test]
fn data_get_between_namespace_set_and_its_apply_returns_the_data() {
    let repo = Repo::with_solo_data();
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    let get = repo.run(&["data", "get", "web/state"]);
    get.expect(0);
    assert_eq!(get.stdout, "replicas: 2\n");
    let get = repo.run(&["data", "get", "web/state", "--version", "1"]);
    get.expect(0);
    assert_eq!(get.stdout, "replicas: 1\n");
    let list = repo.run(&["--json", "data", "list"]);
    list.expect(0);
    assert_eq!(list.json()["data"][0]["latest_version"], 2);
    repo.write("v3.txt", "replicas: 3\n");
    let put = repo.run(&["--json", "data", "put", "web/state", "--file", "v3.txt"]);
    put.expect(0);
    assert_eq!(put.json()["version"], 3, "numbered after the old place's");
    assert!(repo.exists(".swamp/homelab/data/web/state/3/raw"));
    repo.run(&["apply", "-y"]).expect(0);
    assert_eq!(
        repo.run(&["data", "get", "web/state"]).stdout,
        "replicas: 3\n"
    );
    assert_eq!(
        repo.run(&["data", "get", "web/state", "--version", "1"])
            .stdout,
        "replicas: 1\n"
    );
}
