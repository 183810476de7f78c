//! Bad configuration and bad command lines: clear errors, nothing written.

use crate::e2e::common::Repo;

#[test]
fn an_unknown_key_is_named_and_nothing_is_written() {
    let repo = Repo::with_solo_data();
    let bad = format!("{}colour = \"blue\"\n", repo.config());
    repo.write(".swamp.toml", &bad);
    let before = repo.tree(".swamp");
    let run = repo.run(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "-y",
    ]);
    run.expect(1);
    assert!(run.stderr.contains("colour"), "{}", run.stderr);
    assert_eq!(repo.config(), bad, ".swamp.toml untouched");
    assert_eq!(repo.tree(".swamp"), before);
}

#[test]
fn a_relative_filesystem_path_is_refused() {
    let repo = Repo::local(&[]);
    let bad = format!(
        "repo_id = \"{}\"\n[datastore]\ntype = \"filesystem\"\npath = \"shared/store\"\n",
        repo.repo_id()
    );
    repo.write(".swamp.toml", &bad);
    let run = repo.run(&["plan"]);
    run.expect(1);
    assert!(run.stderr.contains("relative"), "{}", run.stderr);
    assert!(run.stderr.contains("path"), "{}", run.stderr);
}

#[test]
fn a_namespace_that_is_a_tier_name_is_refused_on_the_command_line_and_in_the_file() {
    let repo = Repo::local(&[]);
    let run = repo.run(&["datastore", "namespace", "set", "data"]);
    run.expect(64);
    assert!(run.stderr.contains("reserved"), "{}", run.stderr);
    assert!(!repo.config().contains("namespace"));

    repo.write(
        ".swamp.toml",
        &format!("namespace = \"outputs\"\n{}", repo.config()),
    );
    let run = repo.run(&["status"]);
    run.expect(1);
    assert!(run.stderr.contains("reserved"), "{}", run.stderr);
}

#[test]
fn a_wrong_type_names_the_key() {
    let repo = Repo::local(&[]);
    repo.write(
        ".swamp.toml",
        &format!("{}[sync]\nconcurrency = \"lots\"\n", repo.config()),
    );
    let run = repo.run(&["plan"]);
    run.expect(1);
    assert!(run.stderr.contains("concurrency"), "{}", run.stderr);
}

#[test]
fn usage_errors_exit_64() {
    let repo = Repo::local(&[]);
    let run = repo.run(&["plan", "--scope", "everything"]);
    run.expect(64);
    assert!(
        run.stderr.contains("everything") && run.stderr.contains("layout"),
        "names the bad value and the valid ones: {}",
        run.stderr
    );
    let run = repo.run(&["no-such-command"]);
    run.expect(64);
    assert!(run.stderr.contains("no-such-command"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn sync_scope_on_a_local_datastore_is_a_usage_error_naming_the_fix() {
    let repo = Repo::local(&[]);
    let run = repo.run(&["plan", "--scope", "sync"]);
    run.expect(64);
    assert!(run.stderr.contains("remote datastore"), "{}", run.stderr);
}

#[test]
fn commands_outside_a_repo_say_how_to_make_one() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repo::local(&[]);
    let out = repo
        .cmd()
        .current_dir(dir.path())
        .arg("plan")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("swamp init"));
}

#[test]
fn init_twice_refuses_and_keeps_the_repo_id() {
    let repo = Repo::local(&[]);
    let id = repo.repo_id();
    repo.run(&["init"]).expect(1);
    assert_eq!(repo.repo_id(), id);
}

#[test]
fn json_errors_are_one_document_on_stdout() {
    let repo = Repo::local(&[]);
    let run = repo.run(&["--json", "data", "get", "nope"]);
    run.expect(1);
    let doc = run.json();
    assert_eq!(doc["error"]["exit_code"], 1);
    assert!(doc["error"]["message"].as_str().unwrap().contains("nope"));
}

/// `--repo` names the repository itself: a file, a missing path or a
/// subdirectory is a usage error, never the nearest enclosing repository.
#[test]
fn repo_pointing_at_a_file_a_missing_path_or_a_subdirectory_is_refused() {
    let repo = Repo::with_solo_data();
    repo.write("notes.txt", "x\n");
    std::fs::create_dir_all(repo.path("sub")).unwrap();
    for (arg, says) in [
        ("notes.txt", "not a directory"),
        ("missing", "no such directory"),
        ("sub", "not a swamp repository"),
    ] {
        let run = repo.run(&["--repo", arg, "plan"]);
        run.expect(64);
        assert!(run.stderr.contains(says), "{arg}: {}", run.stderr);
    }
    repo.run(&["--repo", ".", "plan"]).expect(0);
}

/// A FIFO as the plan file used to hang `show` and `apply` for ever, and
/// `/dev/zero` was read without limit.
#[test]
fn a_plan_file_that_is_not_a_regular_file_is_refused_at_once() {
    let repo = Repo::with_solo_data();
    let fifo = repo.path("plan.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path the test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for file in [fifo.to_str().unwrap(), "/dev/zero"] {
        for cmd in ["show", "apply"] {
            let run = repo.run(&[cmd, file]);
            run.expect(1);
            assert!(
                run.stderr.contains("not a regular file"),
                "{cmd} {file}: {}",
                run.stderr
            );
        }
    }
}

/// `init --repo NEWDIR` with a bad argument used to leave NEWDIR behind;
/// credentials in an endpoint used to be written to `.swamp.toml`.
#[test]
fn init_validates_everything_before_creating_anything() {
    let repo = Repo::local(&[]);
    let new = repo.path("new/deeper");
    for args in [
        &["--namespace", "data"][..],
        &["--datastore", "ftp://nowhere"][..],
        &[
            "--datastore",
            "s3://b/p?endpoint=http://AKIAEXAMPLE:s3cr3t@127.0.0.1:1",
        ][..],
    ] {
        let mut all = vec!["--repo", new.to_str().unwrap(), "init"];
        all.extend_from_slice(args);
        let run = repo.run(&all);
        run.expect(64);
        assert!(
            !run.stderr.contains("s3cr3t"),
            "never echoes a secret: {}",
            run.stderr
        );
        assert!(!repo.exists("new"), "{args:?} left a directory behind");
    }
    repo.write(
        ".swamp.toml",
        &format!(
            "repo_id = \"{}\"\n[datastore]\ntype = \"s3\"\nbucket = \"b\"\nendpoint = \"http://k:s@127.0.0.1:1\"\n",
            repo.repo_id()
        ),
    );
    let run = repo.run(&["plan"]);
    run.expect(1);
    assert!(run.stderr.contains("datastore.endpoint"), "{}", run.stderr);
    assert!(run.stderr.contains("credentials"), "{}", run.stderr);
}

#[test]
fn another_tools_word_for_a_command_gets_ours_as_a_tip_and_a_subcommands_does_not() {
    let repo = Repo::local(&[]);
    for (theirs, ours) in [("fetch", "pull"), ("log", "history"), ("revert", "undo")] {
        let run = repo.run(&[theirs]);
        run.expect(64);
        assert!(
            run.stderr
                .contains(&format!("tip: a similar subcommand exists: '{ours}'")),
            "{theirs}: {}",
            run.stderr
        );
    }
    let run = repo.run(&["--lock-timeout", "5s", "fetch"]);
    run.expect(64);
    assert!(run.stderr.contains("'pull'"), "{}", run.stderr);
    // `datastore` has no `pull`: no tip pointing at one.
    let run = repo.run(&["datastore", "fetch"]);
    run.expect(64);
    assert!(!run.stderr.contains("'pull'"), "{}", run.stderr);
}
