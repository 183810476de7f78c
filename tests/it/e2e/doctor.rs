//! `doctor datastores` on local and filesystem datastores: the wedge of
//! root-level copies in a namespaced repo, a bad configuration, and the
//! output snapshots. The remote backends are in `tests/it/doctor.rs`.

use crate::e2e::common::{Repo, data_files, tree};
use crate::support::{doctor_check as check, doctor_statuses as statuses};

/// A namespaced local repo whose `.swamp/` root still holds byte-identical
/// copies of the namespaced data (what an interrupted or re-run migration
/// by an older tool leaves).
fn wedged() -> Repo {
    let repo = Repo::with_solo_data();
    repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "-y",
    ])
    .expect(0);
    repo.run(&["data", "list"]).expect(0);
    for (rel, bytes) in repo.tree(".swamp/homelab") {
        if rel.starts_with("data/") || rel.starts_with("outputs/") {
            let dest = repo.path(&format!(".swamp/{rel}"));
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            std::fs::write(dest, bytes).unwrap();
        }
    }
    repo
}

#[test]
fn root_level_copies_in_a_namespaced_repo_fail_layout_and_repair_drops_them() {
    let repo = wedged();
    let before = data_files(&repo.tree(".swamp"));
    let namespaced = data_files(&repo.tree(".swamp/homelab"));

    let human = repo.run(&["doctor", "datastores"]);
    human.expect(1);
    snapshot!("doctor_layout_fail_human", repo.filter(&human.stdout));
    let json = repo.run(&["--json", "doctor", "datastores"]);
    json.expect(1);
    snapshot!("doctor_layout_fail_json", repo.filter(&json.stdout));
    let doc = json.json();
    assert_eq!(doc["ok"], false);
    assert_eq!(statuses(&doc)["layout"], "fail");
    assert_eq!(statuses(&doc)["catalog"], "pass");
    for skipped in ["reachable", "drift", "sentinel", "registration"] {
        assert_eq!(statuses(&doc)[skipped], "skip", "{skipped}: {doc}");
    }

    let preview = repo.run(&["doctor", "datastores", "--repair"]);
    preview.expect(2);
    snapshot!("doctor_repair_preview_human", repo.filter(&preview.stdout));
    assert!(
        data_files(&repo.tree(".swamp")) == before,
        "a preview changes nothing"
    );

    let applied = repo.run(&["doctor", "datastores", "--repair", "-y"]);
    applied.expect(0);
    assert!(
        applied.stdout.contains("3 identical duplicate(s) dropped"),
        "{}",
        applied.stdout
    );
    let after = repo.tree(".swamp");
    assert!(
        !after
            .keys()
            .any(|k| k.starts_with("outputs/") || k.starts_with("data/web")),
        "{:?}",
        after.keys()
    );
    assert!(
        data_files(&repo.tree(".swamp/homelab")) == namespaced,
        "the namespaced files are as they were"
    );
    assert_eq!(
        repo.read(".swamp/secrets/local_encryption/prod/db.enc"),
        "SECRET"
    );
    assert!(repo.exists(".swamp/data/_catalog.db"), "the catalog stays");
    repo.run(&["doctor", "datastores"]).expect(0);
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
    assert_eq!(
        repo.run(&["data", "get", "web/state"]).stdout,
        "replicas: 2\n"
    );
}

#[test]
fn a_root_copy_only_at_the_root_moves_in_and_the_catalog_follows() {
    let repo = Repo::with_solo_data();
    repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "-y",
    ])
    .expect(0);
    repo.run(&["data", "list"]).expect(0);
    repo.write(".swamp/data/late/1/raw", "late\n");
    let doc = repo.run(&["--json", "doctor", "datastores"]);
    doc.expect(1);
    repo.run(&["doctor", "datastores", "--repair", "-y"])
        .expect(0);
    assert_eq!(repo.read(".swamp/homelab/data/late/1/raw"), "late\n");
    let list = repo.run(&["--json", "data", "list"]);
    assert!(list.stdout.contains("\"late\""), "{}", list.stdout);
}

/// The catalog is derived: one that is missing (never built, or deleted)
/// or marked for rebuild by a migration passes, naming what rebuilds it, so
/// doctor does not fail after every migration.
#[test]
fn a_missing_or_invalidated_catalog_passes_naming_its_rebuild() {
    let repo = Repo::with_solo_data();
    repo.run(&["data", "list"]).expect(0);
    std::fs::remove_file(repo.path(".swamp/data/_catalog.db")).unwrap();
    let run = repo.run(&["--json", "doctor", "datastores"]);
    run.expect(0);
    let doc = run.json();
    let message = check(&doc, "catalog")["message"].as_str().unwrap();
    assert!(
        message.contains("missing") && message.contains("rebuilds it"),
        "{doc}"
    );

    repo.run(&["data", "list"]).expect(0);
    repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "-y",
    ])
    .expect(0);
    let run = repo.run(&["--json", "doctor", "datastores"]);
    run.expect(0);
    let doc = run.json();
    let message = check(&doc, "catalog")["message"].as_str().unwrap();
    assert!(message.contains("invalidated"), "{doc}");
}

/// A catalog that is not SQLite fails; the repair rebuilds it (a preview
/// changes nothing).
#[test]
fn a_corrupt_catalog_fails_and_repair_rebuilds_it() {
    let repo = Repo::with_solo_data();
    repo.run(&["data", "list"]).expect(0);
    repo.run(&["doctor", "datastores"]).expect(0);
    for f in std::fs::read_dir(repo.path(".swamp/data")).unwrap() {
        let f = f.unwrap();
        if f.file_name().to_string_lossy().starts_with("_catalog.db") {
            std::fs::remove_file(f.path()).unwrap();
        }
    }
    let garbage = "not a database, at all, not even close to one";
    std::fs::write(repo.path(".swamp/data/_catalog.db"), garbage).unwrap();
    let run = repo.run(&["--json", "doctor", "datastores"]);
    run.expect(1);
    let doc = run.json();
    assert_eq!(statuses(&doc)["catalog"], "fail", "{doc}");
    assert!(
        check(&doc, "catalog")["fix"]
            .as_str()
            .unwrap()
            .contains("`swamp catalog rebuild`"),
        "{doc}"
    );
    repo.run(&["doctor", "datastores", "--repair", "--dry-run"])
        .expect(0);
    assert_eq!(
        std::fs::read_to_string(repo.path(".swamp/data/_catalog.db")).unwrap(),
        garbage,
        "a preview changes nothing"
    );
    repo.run(&["doctor", "datastores", "--repair", "-y"])
        .expect(0);
    repo.run(&["doctor", "datastores"]).expect(0);
}

#[test]
fn a_filesystem_datastore_with_root_level_copies_is_repaired() {
    let shared = tempfile::tempdir().unwrap();
    let path = shared.path().canonicalize().unwrap().join("store");
    let spec = format!("file://{}", path.display());
    let repo = Repo::local(&["--namespace", "lab", "--datastore", &spec]);
    for rel in ["lab/outputs/a.yaml", "outputs/a.yaml"] {
        std::fs::create_dir_all(path.join(rel).parent().unwrap()).unwrap();
        std::fs::write(path.join(rel), "a\n").unwrap();
    }
    let run = repo.run(&["--json", "doctor", "datastores"]);
    run.expect(1);
    let doc = run.json();
    assert_eq!(statuses(&doc)["layout"], "fail", "{doc}");
    assert_eq!(statuses(&doc)["reachable"], "pass", "{doc}");
    repo.run(&["doctor", "datastores", "--repair", "-y"])
        .expect(0);
    // The dropped root-level copy waits in the trash (not data).
    assert_eq!(
        tree(&path)
            .into_keys()
            .filter(|k| !k.starts_with(".swamp-trash/"))
            .collect::<Vec<_>>(),
        vec!["lab/outputs/a.yaml".to_string()]
    );
}

#[test]
fn a_bad_config_fails_the_config_check_and_skips_the_rest() {
    let repo = Repo::local(&[]);
    let text = repo.config() + "colour = \"green\"\n";
    repo.write(".swamp.toml", &text);
    let run = repo.run(&["--json", "doctor", "datastores"]);
    run.expect(1);
    let doc = run.json();
    let s = statuses(&doc);
    assert_eq!(s["config"], "fail", "{doc}");
    assert!(
        doc["checks"][0]["message"]
            .as_str()
            .unwrap()
            .contains("colour"),
        "{doc}"
    );
    for (name, status) in &s {
        if name != "config" {
            assert_eq!(status, "skip", "{name}: {doc}");
        }
    }
    assert_eq!(repo.read(".swamp.toml"), text, "nothing was changed");
}

#[test]
fn yes_without_repair_is_a_usage_error() {
    let repo = Repo::local(&[]);
    let run = repo.run(&["doctor", "datastores", "-y"]);
    run.expect(64);
    assert!(run.stderr.contains("--repair"), "{}", run.stderr);
}

#[test]
fn a_version_file_written_behind_a_fresh_catalog_fails_and_repair_reindexes() {
    let repo = Repo::with_solo_data();
    repo.run(&["data", "list"]).expect(0);
    repo.write(".swamp/data/sneaky/1/raw", "behind its back\n");
    let run = repo.run(&["--json", "doctor", "datastores"]);
    run.expect(1);
    let doc = run.json();
    assert!(
        check(&doc, "catalog")["message"]
            .as_str()
            .unwrap()
            .starts_with("1 of 3 version file(s) are not indexed"),
        "{doc}"
    );
    // The catalog is fresh, so `data list` would not see it on its own.
    let list = repo.run(&["--json", "data", "list"]);
    assert!(!list.stdout.contains("sneaky"), "{}", list.stdout);
    repo.run(&["doctor", "datastores", "--repair", "-y"])
        .expect(0);
    let list = repo.run(&["--json", "data", "list"]);
    assert!(list.stdout.contains("sneaky"), "{}", list.stdout);
}

#[test]
fn repo_local_files_at_the_root_of_a_namespaced_repo_never_count_as_stray_data() {
    let repo = Repo::local(&["--namespace", "homelab"]);
    repo.write(".swamp/homelab/data/web/1/raw", "one\n");
    repo.run(&["data", "list"]).expect(0);
    repo.write(".swamp/data/_catalog.db-journal", "sidecar");
    repo.write(".swamp/data/_catalog.db-wal-extra", "sidecar");
    repo.write(".swamp/secrets/local_encryption/prod/db.enc", "SECRET");
    repo.write(".swamp/vault-bundles/prod.bundle", "BUNDLE");
    repo.write(".swamp/state/notes", "reconciler state");
    let run = repo.run(&["--json", "doctor", "datastores"]);
    run.expect(0);
    assert_eq!(statuses(&run.json())["layout"], "pass", "{}", run.stdout);
}
