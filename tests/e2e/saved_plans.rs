//! Saved plans: `plan -o`, `show`, `apply FILE`, staleness.

use crate::common::{TestRepo, data_files};
use crate::snapshot;

#[test]
fn a_saved_plan_applies_exactly_once() {
    let repo = TestRepo::with_solo_data();
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
    let repo = TestRepo::with_solo_data();
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
    assert_eq!(
        data_files(&repo.tree(".swamp")),
        data_files(&before),
        "a refused plan changes nothing"
    );
}

#[test]
fn a_plan_made_against_nothing_is_not_reappliable_once_data_appears() {
    let repo = TestRepo::init(&[]);
    repo.run(&["plan", "-o", "empty.json"]).expect(0);
    repo.write(".swamp/outputs/x.yaml", "x\n");
    let run = repo.run(&["apply", "empty.json"]);
    run.expect(1);
    assert!(
        run.stderr.contains("outputs/x.yaml appeared"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_saved_plan_is_refused_after_the_configuration_changed() {
    let repo = TestRepo::with_solo_data();
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
    let repo = TestRepo::with_solo_data();
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
    let repo = TestRepo::with_solo_data();
    repo.write(".swamp/homelab/audit/2026-11.log", "someone else\n");
    repo.run(&["datastore", "namespace", "set", "homelab"])
        .expect(0);
    repo.run(&["plan", "-o", "plan.json"]).expect(3);
    repo.run(&["apply", "plan.json"]).expect(3);
}
