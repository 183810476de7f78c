//! The operator's everyday experience: a closed pipe, the confirmation
//! prompt on a real terminal, usage errors under `--json`, completions and
//! the man page.

use std::io::Write;
use std::process::Stdio;

use crate::e2e::common::{Repo, data_files};
use crate::support::{pinned, swamp_bin};

/// A repo whose namespace was just set: `plan` shows the moves, `apply`
/// would make them.
fn repo_with_pending_moves() -> Repo {
    let repo = Repo::with_solo_data();
    repo.run(&["datastore", "namespace", "set", "infra"])
        .expect(0);
    repo
}

/// Runs swamp with its stdout a pipe whose reader is already gone, as
/// `swamp plan | head -0` leaves it.
fn run_with_closed_stdout(repo: &Repo, args: &[&str]) -> (Option<i32>, String) {
    let mut child = pinned(&mut std::process::Command::new(swamp_bin()), &repo.home)
        .current_dir(&repo.root)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn plan_into_a_closed_pipe_exits_quietly_instead_of_panicking() {
    let repo = repo_with_pending_moves();
    for args in [
        &["plan"][..],
        &["plan", "--detail"],
        &["--json", "plan"],
        &["status"],
    ] {
        let (code, stderr) = run_with_closed_stdout(&repo, args);
        assert_eq!(code, Some(0), "{args:?}: stderr: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
    // The outcome a script asked for still comes through (exit 2: changes).
    let (code, stderr) = run_with_closed_stdout(&repo, &["plan", "--detailed-exitcode"]);
    assert_eq!(code, Some(2), "stderr: {stderr}");
}

#[test]
fn an_apply_whose_stdout_closes_still_finishes_the_work() {
    let repo = repo_with_pending_moves();
    let (code, stderr) = run_with_closed_stdout(&repo, &["apply", "-y"]);
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(repo.exists(".swamp/infra/data/web/state/2/raw"));
    assert!(!repo.exists(".swamp/data/web/state/2/raw"));
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// Runs `swamp ARGS` on a pseudo-terminal (util-linux's `script`), typing
/// `answer` at the prompt. Returns the exit code and the screen's text.
fn on_a_terminal(repo: &Repo, args: &str, answer: &str) -> (Option<i32>, String) {
    let bin = swamp_bin();
    let mut child = pinned(&mut std::process::Command::new("script"), &repo.home)
        .args(["-qec", &format!("{} {args}", bin.display()), "/dev/null"])
        .current_dir(&repo.root)
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs a command on a pseudo-terminal");
    // Typed ahead: the terminal holds it until the prompt reads it.
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).replace('\r', ""),
    )
}

#[test]
fn the_prompt_takes_only_yes_and_anything_else_cancels() {
    let repo = repo_with_pending_moves();
    for answer in ["y\n", "no\n", "YES\n", "\n"] {
        let (code, screen) = on_a_terminal(&repo, "apply", answer);
        assert!(screen.contains("Only 'yes' will be accepted"), "{screen}");
        assert!(screen.contains("Apply cancelled."), "{answer:?}: {screen}");
        assert!(
            !screen.contains("no terminal to ask on"),
            "{answer:?}: {screen}"
        );
        assert_eq!(code, Some(1), "{answer:?}: {screen}");
        assert!(repo.exists(".swamp/data/web/state/2/raw"), "{answer:?}");
        assert!(!repo.exists(".swamp/infra/data/web/state/2/raw"));
    }
    let (code, screen) = on_a_terminal(&repo, "apply", "yes\n");
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("Converged"), "{screen}");
    assert!(repo.exists(".swamp/infra/data/web/state/2/raw"));
}

#[test]
fn without_a_terminal_the_refusal_names_this_very_command_with_y() {
    let repo = Repo::local(&["--datastore", "local"]);
    repo.seed();
    repo.run(&["datastore", "namespace", "set", "infra"])
        .expect(0);
    let run = repo.run(&["apply", "--scope", "layout"]);
    run.expect(2);
    assert!(
        run.stderr
            .contains("Run `swamp apply --scope layout -y` to apply it"),
        "{}",
        run.stderr
    );
}

#[test]
fn usage_errors_under_json_are_one_json_document_with_exit_64() {
    let repo = Repo::local(&[]);
    for args in [
        &["--json", "plan", "--bogus"][..],
        &["--json", "plan", "--scope", "bogus"],
        &["--json", "pln"],
        &["plan", "--json", "--conflict", "maybe"],
    ] {
        let run = repo.run(args);
        run.expect(64);
        let doc = run.json();
        assert_eq!(doc["error"]["kind"], "usage", "{args:?}");
        assert_eq!(doc["error"]["exit_code"], 64, "{args:?}");
        assert!(
            !doc["error"]["message"].as_str().unwrap().is_empty(),
            "{args:?}"
        );
        assert!(doc["error"]["hint"].is_string(), "{args:?}");
    }
    let run = repo.run(&["--json", "pln"]);
    assert!(
        run.json()["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("'plan'"),
        "{}",
        run.stdout
    );
    // Without --json, clap's own text on stderr, nothing on stdout.
    let run = repo.run(&["plan", "--bogus"]);
    run.expect(64);
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("--bogus"));
}

#[test]
fn completions_generate_for_bash_zsh_and_fish() {
    let repo = Repo::local(&[]);
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef swamp"),
        ("fish", "complete -c swamp"),
    ] {
        let run = repo.run(&["completions", shell]);
        run.expect(0);
        assert!(run.stdout.contains(marker), "{shell}: {}", run.stdout);
        // Subcommands and their flags are in it.
        assert!(run.stdout.contains("datastore"), "{shell}");
        assert!(run.stdout.contains("detailed-exitcode"), "{shell}");
    }
    let run = repo.run(&["completions", "tcsh"]);
    run.expect(64);
}

#[test]
fn the_man_page_renders_and_a_page_per_command_is_written() {
    let repo = Repo::local(&[]);
    let run = repo.run(&["man"]);
    run.expect(0);
    assert!(
        run.stdout.starts_with(".ie") || run.stdout.contains(".TH swamp"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("datastore"));
    let dir = tempfile::tempdir().unwrap();
    let run = repo.run(&["man", "--out-dir", dir.path().to_str().unwrap()]);
    run.expect(0);
    for page in [
        "swamp.1",
        "swamp-plan.1",
        "swamp-datastore-sync.1",
        "swamp-data-put.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH"), "{page}");
    }
}

#[test]
fn swamp_toml_keeps_its_comments_when_swamp_writes_it() {
    let repo = Repo::local(&[]);
    let shared = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/shared-filesystem/.swamp.toml"),
    )
    .unwrap()
    .replace("/tmp/swamp-shared-example", shared.path().to_str().unwrap());
    let example = example.replace(
        "concurrency = 8",
        "concurrency = 8 # two cores on the CI runners",
    );
    repo.write(".swamp.toml", &example);
    repo.run(&["datastore", "namespace", "set", "team-b"])
        .expect(0);
    let after = repo.config();
    for line in example.lines().filter(|l| !l.starts_with("namespace")) {
        assert!(after.contains(line), "lost {line:?}:\n{after}");
    }
    assert!(after.contains("namespace = \"team-b\""), "{after}");
    assert!(after.contains("[[migrating_from]]"), "{after}");
    // And it still reads as the same config: the migration converges.
    repo.run(&["apply", "-y"]).expect(0);
    let done = repo.config();
    assert!(
        done.starts_with("# A repository sharing a filesystem"),
        "{done}"
    );
    assert!(!done.contains("migrating_from"), "{done}");
    assert!(done.contains("# two cores on the CI runners"), "{done}");
}

#[test]
fn plan_and_show_speak_markdown_for_pull_requests_and_json_for_machines() {
    let repo = repo_with_pending_moves();
    let run = repo.run(&["plan", "--format", "markdown"]);
    run.expect(0);
    assert!(
        run.stdout.starts_with("### swamp plan (scope: all)\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("| move | 5 |"), "{}", run.stdout);
    assert!(run.stdout.contains("**Plan:** 5 to move"), "{}", run.stdout);
    let run = repo.run(&["plan", "--format", "json"]);
    run.expect(0);
    assert_eq!(run.json()["summary"]["move"], 5, "{}", run.stdout);
    repo.run(&["plan", "-o", "p.plan"]).expect(0);
    let shown = repo.run(&["show", "p.plan", "--format", "markdown"]);
    shown.expect(0);
    assert!(
        shown.stdout.starts_with("### swamp plan"),
        "{}",
        shown.stdout
    );
}

/// The README's main job runs unattended on a terminal too: `demo.sh`
/// under a pseudo-terminal (where a command without `-y` would ask) runs
/// every step to the health checks and exits 0.
#[test]
fn the_demo_runs_to_completion_on_a_terminal() {
    let home = tempfile::tempdir().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = crate::support::pinned(&mut std::process::Command::new("script"), home.path())
        .args(["-qec", "bash scripts/demo.sh", "/dev/null"])
        .current_dir(root)
        .env("TERM", "xterm")
        .env("SWAMP_BIN", crate::support::swamp_bin())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux `script` runs a command on a pseudo-terminal");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{screen}");
    for step in [
        "$ swamp datastore namespace set homelab --migrate --confirm",
        "$ swamp datastore namespace unset --migrate --confirm",
        "$ swamp doctor datastores",
    ] {
        assert!(screen.contains(step), "{step}\n{screen}");
    }
    assert!(!screen.contains("Do you want to apply"), "{screen}");
}

/// The one confirmation rule, over every command that applies changes:
/// without `-y` and without a terminal it shows the plan, changes nothing
/// and exits 2 naming this very command with `-y`; `--dry-run` does the
/// same with exit 0; on a terminal it asks, and an answer but `yes`
/// changes nothing (exit 1).
#[test]
fn every_applying_command_follows_one_confirmation_rule() {
    let repo = Repo::with_solo_data();
    // Something to undo (a version set aside) and moves pending (a
    // namespace recorded, its data not moved yet).
    repo.run(&["data", "gc", "--keep", "1"]).expect(0);
    repo.run(&["datastore", "namespace", "set", "infra"])
        .expect(0);
    let shared = tempfile::tempdir().unwrap();
    let store = shared.path().join("store");
    let setup = format!("datastore setup file://{}", store.display());
    let commands = [
        "apply",
        "datastore namespace migrate",
        "datastore namespace set other --migrate",
        setup.as_str(),
        "undo",
    ];
    let state = || (data_files(&repo.tree(".swamp")), repo.config());
    let before = state();
    for command in commands {
        let args: Vec<&str> = command.split(' ').collect();
        let run = repo.run(&args);
        run.expect(2);
        assert!(
            run.stderr.contains(&format!(
                "Nothing changed: applying needs confirmation, and there is no terminal to ask on. Run `swamp {command} -y` to apply it"
            )),
            "{command}: {}",
            run.stderr
        );
        assert_eq!(state(), before, "{command}");

        let mut dry = args.clone();
        dry.push("--dry-run");
        let run = repo.run(&dry);
        run.expect(0);
        assert!(
            run.stderr.contains(&format!(
                "This was a dry run; nothing changed. Run `swamp {command} -y` to apply it."
            )),
            "{command}: {}",
            run.stderr
        );
        assert_eq!(state(), before, "{command} --dry-run");
        // (Asking on a terminal holds the lock, which makes its directory.)
        if command == setup {
            assert!(!store.exists(), "no preview made the shared directory");
        }

        let (code, screen) = on_a_terminal(&repo, command, "no\n");
        assert!(
            screen.contains("Only 'yes' will be accepted") && screen.contains("Apply cancelled."),
            "{command}: {screen}"
        );
        assert_eq!(code, Some(1), "{command}: {screen}");
        assert_eq!(state(), before, "{command} on a terminal, answered no");
    }

    // `doctor --repair` too, once a check fails with an automatic fix.
    repo.write(".swamp/data/_catalog.db", "not a database");
    let run = repo.run(&["doctor", "datastores", "--repair"]);
    run.expect(2);
    assert!(
        run.stderr
            .contains("Run `swamp doctor datastores --repair -y` to apply it"),
        "{}",
        run.stderr
    );
    let (code, screen) = on_a_terminal(&repo, "doctor datastores --repair", "no\n");
    assert_eq!(code, Some(1), "{screen}");
    assert_eq!(
        std::fs::read_to_string(repo.path(".swamp/data/_catalog.db")).unwrap(),
        "not a database"
    );
}
