//! Saved plans: `plan -o`, `show`, `apply FILE`, staleness.

use crate::e2e::common::{Repo, data_files};

#[test]
fn a_saved_plan_applies_exactly_once() {
    let repo = Repo::with_solo_data();
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    repo.run(&["plan", "-o", "plan.json"]).expect(0);

    let show = repo.run(&["show", "plan.json"]);
    show.expect(0);
    let plan = repo.run(&["plan"]);
    assert_eq!(show.stdout, plan.stdout, "show renders what plan rendered");

    repo.run(&["apply", "plan.json"]).expect(0);
    assert_eq!(data_files(&repo.tree(".swamp/homelab")).len(), 5);

    let again = repo.run(&["apply", "plan.json"]);
    again.expect(1);
    assert!(again.stderr.contains("stale"), "{}", again.stderr);
    snapshot!("saved_plan_second_apply_stderr", repo.filter(&again.stderr));
}

#[test]
fn a_stale_saved_plan_is_refused_naming_what_changed() {
    let repo = Repo::with_solo_data();
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    repo.run(&["plan", "-o", "plan.json"]).expect(0);
    repo.write(
        ".swamp/outputs/deploy/web-1.yaml",
        "status: changed after planning\n",
    );
    repo.write(".swamp/outputs/deploy/web-2.yaml", "new\n");
    let before = repo.tree(".swamp");

    let run = repo.run(&["apply", "plan.json"]);
    run.expect(1);
    assert!(
        run.stderr.contains("outputs/deploy/web-1.yaml changed"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("outputs/deploy/web-2.yaml appeared"),
        "{}",
        run.stderr
    );
    // As plan rows and what differs in them, never raw JSON.
    assert!(
        run.stderr
            .contains("(move outputs/deploy/web-1.yaml) differs: size 23 B in the saved plan, 31 B now; sha256 ")
            && run.stderr.contains(" in the saved plan, "),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("{\""), "{}", run.stderr);
    assert_eq!(
        data_files(&repo.tree(".swamp")),
        data_files(&before),
        "a refused plan changes nothing"
    );
}

#[test]
fn a_plan_made_against_nothing_is_not_reappliable_once_data_appears() {
    let repo = Repo::local(&[]);
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    repo.run(&["plan", "-o", "empty.json"]).expect(0);
    repo.write(".swamp/outputs/x.yaml", "x\n");
    let run = repo.run(&["apply", "empty.json"]);
    run.expect(1);
    assert!(
        run.stderr.contains("outputs/x.yaml appeared"),
        "{}",
        run.stderr
    );
    assert!(repo.exists(".swamp/outputs/x.yaml"), "nothing moved");
}

/// A saved plan is re-derived, never trusted: one whose observed state
/// changed without changing what apply would do still applies exactly
/// what was reviewed (here: nothing).
#[test]
fn a_saved_empty_plan_stays_empty_when_unrelated_data_appears() {
    let repo = Repo::local(&[]);
    repo.run(&["plan", "-o", "empty.json"]).expect(0);
    repo.write(".swamp/outputs/x.yaml", "x\n");
    let run = repo.run(&["apply", "empty.json"]);
    run.expect(0);
    assert!(run.stdout.contains("No changes"), "{}", run.stdout);
    assert_eq!(repo.read(".swamp/outputs/x.yaml"), "x\n");
}

/// Terraform rejects planning options with a plan file; so does swamp:
/// the saved plan carries its own scope, policy and --force.
#[test]
fn planning_options_with_a_saved_plan_are_a_usage_error() {
    let repo = Repo::with_solo_data();
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    repo.run(&["plan", "-o", "plan.json"]).expect(0);
    let before = data_files(&repo.tree(".swamp"));
    for extra in [
        &["--scope", "layout"][..],
        &["--conflict", "local"][..],
        &["--force"][..],
    ] {
        let mut args = vec!["apply", "plan.json", "-y"];
        args.extend_from_slice(extra);
        let run = repo.run(&args);
        run.expect(64);
        assert!(run.stderr.contains(extra[0]), "{extra:?}: {}", run.stderr);
    }
    assert_eq!(data_files(&repo.tree(".swamp")), before, "nothing applied");
    repo.run(&["apply", "plan.json"]).expect(0);
}

/// A hand-edited plan is refused, naming the first difference, and
/// nothing is applied: an action added, a path changed, a conflict removed.
#[test]
fn a_tampered_saved_plan_is_refused_and_changes_nothing() {
    let repo = Repo::with_solo_data();
    repo.write(".swamp/homelab/audit/2026-11.log", "someone else\n");
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    repo.run(&["plan", "-o", "conflicted.json"]).expect(3);
    std::fs::remove_file(repo.path(".swamp/homelab/audit/2026-11.log")).unwrap();
    repo.run(&["plan", "-o", "plan.json"]).expect(0);
    let before = data_files(&repo.tree(".swamp"));
    let edit = |from: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut doc: serde_json::Value = serde_json::from_str(&repo.read(from)).unwrap();
        f(&mut doc);
        // Keep the summary consistent, as a careful tamperer would.
        let plan: swamp::plan::Plan = serde_json::from_value(doc.clone()).unwrap();
        doc["summary"] = serde_json::to_value(plan.summary()).unwrap();
        repo.write(
            "tampered.json",
            &serde_json::to_string_pretty(&doc).unwrap(),
        );
    };
    let refused = |what: &str| {
        let run = repo.run(&["apply", "tampered.json", "-y"]);
        run.expect(1);
        assert!(run.stderr.contains("stale"), "{what}: {}", run.stderr);
        assert!(
            run.stderr.contains("differs")
                || run.stderr.contains("action(s)")
                || run.stderr.contains("conflict(s)"),
            "{what}: {}",
            run.stderr
        );
        assert_eq!(
            data_files(&repo.tree(".swamp")),
            before,
            "{what}: nothing applied"
        );
    };
    // An extra action.
    edit("plan.json", &|d| {
        let actions = d["actions"].as_array_mut().unwrap();
        let mut extra = actions[0].clone();
        extra["path"] = "data/web/state/9/raw".into();
        actions.insert(1, extra);
    });
    refused("extra action");
    // A changed path.
    edit("plan.json", &|d| {
        d["actions"][0]["path"] = "outputs/elsewhere.yaml".into();
    });
    refused("changed path");
    // A conflict removed from a blocked plan (made before the obstacle went
    // away, so the plan now differs anyway; with it back it is the same).
    repo.write(".swamp/homelab/audit/2026-11.log", "someone else\n");
    let before_conflict = data_files(&repo.tree(".swamp"));
    edit("conflicted.json", &|d| {
        d["conflicts"] = serde_json::json!([]);
    });
    let run = repo.run(&["apply", "tampered.json", "-y"]);
    run.expect(1);
    assert!(run.stderr.contains("conflict(s)"), "{}", run.stderr);
    assert_eq!(
        data_files(&repo.tree(".swamp")),
        before_conflict,
        "nothing applied"
    );
}

#[test]
fn a_saved_plan_is_refused_after_the_configuration_changed() {
    let repo = Repo::with_solo_data();
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    repo.run(&["plan", "-o", "plan.json"]).expect(0);
    repo.run(&["datastore", "namespace", "set", "other"])
        .expect(0);
    let run = repo.run(&["apply", "plan.json"]);
    run.expect(1);
    assert!(
        run.stderr.contains("configuration changed"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_malformed_plan_file_is_refused_and_changes_nothing() {
    let repo = Repo::with_solo_data();
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    repo.write("bad.json", "{\"format_version\": 1, \"actions\": 7}");
    let before = repo.tree(".swamp");
    let run = repo.run(&["apply", "bad.json"]);
    run.expect(1);
    assert!(
        run.stderr.contains("not a swamp plan file"),
        "{}",
        run.stderr
    );
    repo.write("future.json", "{\"format_version\": 99}");
    let run = repo.run(&["apply", "future.json"]);
    run.expect(1);
    assert!(run.stderr.contains("format 99"), "{}", run.stderr);
    assert_eq!(data_files(&repo.tree(".swamp")), data_files(&before));
}

#[test]
fn a_saved_plan_with_a_conflict_is_refused_with_exit_3() {
    let repo = Repo::with_solo_data();
    repo.write(".swamp/homelab/audit/2026-11.log", "someone else\n");
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    repo.run(&["plan", "-o", "plan.json"]).expect(3);
    let before = repo.tree(".swamp");
    let run = repo.run(&["apply", "plan.json"]);
    run.expect(3);
    assert!(
        run.stdout.contains("audit/2026-11.log"),
        "the refusal names the conflict: {}",
        run.stdout
    );
    assert_eq!(
        data_files(&repo.tree(".swamp")),
        data_files(&before),
        "nothing moved"
    );
}
