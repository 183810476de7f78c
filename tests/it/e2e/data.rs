//! The data workload through the real binary.

use crate::e2e::common::Repo;

#[test]
fn put_get_list_rm_gc_round_trip() {
    let repo = Repo::local(&[]);
    repo.write("v1.txt", "first\n");
    repo.write("v2.txt", "second\n");
    repo.run(&["data", "put", "model/output", "--file", "v1.txt"])
        .expect(0);
    let put = repo.run(&["--json", "data", "put", "model/output", "--file", "v2.txt"]);
    put.expect(0);
    assert_eq!(put.json()["version"], 2);
    assert!(repo.exists(".swamp/data/model/output/2/raw"));

    assert_eq!(
        repo.run(&["data", "get", "model/output"]).stdout,
        "second\n"
    );
    assert_eq!(
        repo.run(&["data", "get", "model/output", "--version", "1"])
            .stdout,
        "first\n"
    );
    let list = repo.run(&["--json", "data", "list"]);
    list.expect(0);
    let names = &list.json()["data"];
    assert_eq!(names[0]["name"], "model/output");
    assert_eq!(names[0]["latest_version"], 2);
    assert_eq!(names[0]["versions"], 2);

    let gc = repo.run(&["--json", "data", "gc", "--keep", "1"]);
    gc.expect(0);
    assert_eq!(gc.json()["removed"].as_array().unwrap().len(), 1);
    assert!(!repo.exists(".swamp/data/model/output/1"));
    assert!(repo.exists(".swamp/data/model/output/2/raw"));

    repo.run(&["data", "rm", "model/output"]).expect(0);
    let list = repo.run(&["--json", "data", "list"]);
    assert_eq!(list.json()["data"].as_array().unwrap().len(), 0);
    repo.run(&["data", "get", "model/output"]).expect(1);
}

/// An empty stdin is usually a mistake upstream in a pipe: refused (a
/// usage error, nothing stored) unless `--allow-empty` says it is meant.
#[test]
fn an_empty_stdin_stores_nothing_unless_allowed() {
    let repo = Repo::local(&[]);
    let refused = repo.run(&["data", "put", "notes"]);
    refused.expect(64);
    assert!(
        refused.stderr.contains("--allow-empty"),
        "{}",
        refused.stderr
    );
    let list = repo.run(&["--json", "data", "list"]);
    assert_eq!(list.json()["data"].as_array().unwrap().len(), 0);
    repo.run(&["data", "put", "notes", "--allow-empty"])
        .expect(0);
    assert_eq!(repo.run(&["data", "get", "notes"]).stdout, "");
}

#[test]
fn put_reads_stdin_and_writes_under_the_namespace() {
    let repo = Repo::local(&["--namespace", "homelab"]);
    let out = repo
        .cmd()
        .args(["data", "put", "notes"])
        .write_stdin("from stdin\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(repo.read(".swamp/homelab/data/notes/1/raw"), "from stdin\n");
    assert!(
        repo.exists(".swamp/data/_catalog.db"),
        "catalog stays repo-local"
    );
    assert!(!repo.exists(".swamp/homelab/data/_catalog.db"));
}

#[test]
fn a_deleted_or_corrupt_catalog_is_rebuilt_from_the_files() {
    let repo = Repo::local(&[]);
    repo.write("v.txt", "x\n");
    repo.run(&["data", "put", "a", "--file", "v.txt"]).expect(0);
    repo.run(&["data", "put", "b", "--file", "v.txt"]).expect(0);
    for f in ["_catalog.db", "_catalog.db-wal", "_catalog.db-shm"] {
        let _ = std::fs::remove_file(repo.path(&format!(".swamp/data/{f}")));
    }
    let list = repo.run(&["--json", "data", "list"]);
    assert_eq!(list.json()["data"].as_array().unwrap().len(), 2);

    for f in ["_catalog.db-wal", "_catalog.db-shm"] {
        let _ = std::fs::remove_file(repo.path(&format!(".swamp/data/{f}")));
    }
    std::fs::write(
        repo.path(".swamp/data/_catalog.db"),
        b"this is not sqlite at all, not at all",
    )
    .unwrap();
    let list = repo.run(&["--json", "data", "list"]);
    list.expect(0);
    assert_eq!(list.json()["data"].as_array().unwrap().len(), 2);

    let rebuild = repo.run(&["--json", "catalog", "rebuild"]);
    rebuild.expect(0);
    assert_eq!(rebuild.json()["rebuilt"]["versions"], 2);
}

#[test]
fn the_catalog_follows_data_moved_by_a_migration() {
    let repo = Repo::local(&[]);
    repo.write("v.txt", "x\n");
    repo.run(&["data", "put", "a", "--file", "v.txt"]).expect(0);
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
    let list = repo.run(&["--json", "data", "list"]);
    list.expect(0);
    assert_eq!(list.json()["data"][0]["name"], "a");
    assert_eq!(repo.run(&["data", "get", "a"]).stdout, "x\n");
}

#[test]
fn a_bad_data_name_is_refused() {
    let repo = Repo::local(&[]);
    repo.write("v.txt", "x\n");
    // A name given on the command line is command-line input: 64, as a
    // bad namespace is (issue 13's one table of exit codes).
    for bad in ["../escape", "a//b", "_catalog.db", "a/1"] {
        let run = repo.run(&["data", "put", bad, "--file", "v.txt"]);
        run.expect(64);
    }
    assert!(!repo.exists(".swamp/escape"));
}

/// `data put` through a symlink used to write outside the datastore.
#[test]
fn data_put_through_a_symlink_is_refused_and_writes_nothing_outside() {
    let repo = Repo::local(&[]);
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path(".swamp/data")).unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path(".swamp/data/ln")).unwrap();
    repo.write("y.txt", "y\n");
    let run = repo.run(&["data", "put", "ln/y", "--file", "y.txt"]);
    run.expect(1);
    assert!(run.stderr.contains("is a symlink"), "{}", run.stderr);
    assert!(
        run.stderr.contains(".swamp/data/ln"),
        "names the link: {}",
        run.stderr
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    // A raw file replaced by a link to someone else's file is not printed.
    repo.run(&["data", "put", "m", "--file", "y.txt"]).expect(0);
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "secret\n").unwrap();
    std::fs::remove_file(repo.path(".swamp/data/m/1/raw")).unwrap();
    std::os::unix::fs::symlink(&secret, repo.path(".swamp/data/m/1/raw")).unwrap();
    let get = repo.run(&["data", "get", "m"]);
    get.expect(1);
    assert!(!get.stdout.contains("secret"), "{}", get.stdout);
}
