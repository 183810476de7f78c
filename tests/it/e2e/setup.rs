//! `datastore setup`: local ⇄ filesystem, through the plan.

use crate::e2e::common::{Repo, data_files, tree};

#[test]
fn local_to_filesystem_and_back_keeps_every_file_byte_identical() {
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
    let before = data_files(&repo.tree(".swamp/homelab"));
    let shared = tempfile::tempdir().unwrap();
    let shared_path = shared.path().join("store");
    let spec = format!("file://{}", shared_path.display());

    let preview = repo.run(&["datastore", "setup", &spec, "--dry-run"]);
    preview.expect(0);
    assert!(preview.stderr.contains("dry run"), "{}", preview.stderr);
    assert!(!shared_path.exists(), "a preview creates nothing");

    repo.run(&["datastore", "setup", &spec, "-y"]).expect(0);
    assert_eq!(data_files(&tree(&shared_path.join("homelab"))), before);
    assert!(!repo.exists(".swamp/homelab"), "the local copy is gone");
    assert!(repo.config().contains("type = \"filesystem\""));
    assert_eq!(
        repo.tree(".swamp/secrets").len(),
        1,
        "secrets stay in the repo"
    );
    // data commands now read the shared store through the repo-local catalog
    let list = repo.run(&["--json", "data", "list"]);
    assert_eq!(list.json()["data"][0]["latest_version"], 2);

    repo.run(&["datastore", "setup", "local", "-y"]).expect(0);
    assert_eq!(data_files(&repo.tree(".swamp/homelab")), before);
    assert!(data_files(&tree(&shared_path)).is_empty());
    let config: toml::Value = toml::from_str(&repo.config()).unwrap();
    let datastore = config.get("datastore");
    assert!(
        datastore.is_none_or(|d| d["type"].as_str() == Some("local")),
        "back on local: {}",
        repo.config()
    );
    assert!(!repo.config().contains("filesystem"), "{}", repo.config());
}

#[test]
fn setup_to_a_path_that_is_a_file_is_refused() {
    let repo = Repo::with_solo_data();
    let f = tempfile::NamedTempFile::new().unwrap();
    let run = repo.run(&[
        "datastore",
        "setup",
        &format!("file://{}", f.path().display()),
        "-y",
    ]);
    run.expect(1);
    assert!(run.stderr.contains("not a directory"), "{}", run.stderr);
    assert!(!repo.config().contains("filesystem"));
}

#[test]
fn setup_with_a_relative_path_is_a_usage_error() {
    let repo = Repo::local(&[]);
    let config = repo.config();
    let run = repo.run(&["datastore", "setup", "file://relative/dir"]);
    run.expect(64);
    assert!(run.stderr.contains("relative"), "{}", run.stderr);
    assert_eq!(repo.config(), config, ".swamp.toml unchanged");
    assert!(!repo.exists("relative"), "nothing created");
}
