//! An apply killed part-way is finished by the next apply.
//! Needs the test-only `failpoints` feature (the README's test command
//! enables it); without it the one test here fails, saying so, rather
//! than the crash tests passing by not existing.

#[cfg(not(feature = "failpoints"))]
#[test]
fn crash_tests_need_the_failpoints_feature() {
    panic!(
        "the crash tests are compiled only with `--features failpoints`: run `bash scripts/test.sh` (or `cargo test --features failpoints`)"
    );
}

#[cfg(feature = "failpoints")]
mod killed {
    use std::os::unix::process::ExitStatusExt;

    use crate::e2e::common::{Repo, data_files};

    #[test]
    fn an_apply_killed_part_way_through_its_moves_is_finished_by_the_next_apply() {
        let repo = Repo::with_solo_data();
        for i in 0..20 {
            repo.write(
                &format!(".swamp/outputs/batch/{i:02}.yaml"),
                &format!("n: {i}\n"),
            );
        }
        let mut before = data_files(&repo.tree(".swamp"));
        before.retain(|k, _| !k.starts_with("secrets/") && !k.starts_with("vault-bundles/"));
        repo.run(&["datastore", "namespace", "set", "homelab"])
            .expect(0);

        // The second hit of the failpoint SIGKILLs the process: after one
        // move, or one whole directory renamed.
        let out = repo
            .cmd()
            .env("FAILPOINTS", "apply-after-move=1*off->return")
            .args(["apply", "-y"])
            .output()
            .unwrap();
        assert_eq!(out.status.signal(), Some(9), "killed by SIGKILL: {out:?}");
        // Part-way: some files at the new place, some still at the old one
        // (a run of per-file moves links every file of the run first and
        // removes the old copies once the new directories are durable).
        let moved = data_files(&repo.tree(".swamp/homelab")).len();
        let mut still_old = data_files(&repo.tree(".swamp"));
        still_old.retain(|k, _| {
            !k.starts_with("homelab/")
                && !k.starts_with("secrets/")
                && !k.starts_with("vault-bundles/")
        });
        assert!(
            moved > 0 && !still_old.is_empty(),
            "killed part-way: {moved} of {} at the new place, {} at the old",
            before.len(),
            still_old.len()
        );

        repo.run(&["apply", "-y"]).expect(0);
        let after = data_files(&repo.tree(".swamp/homelab"));
        assert_eq!(
            after, before,
            "every file present exactly once, byte for byte"
        );
        let mut left = data_files(&repo.tree(".swamp"));
        left.retain(|k, _| {
            !k.starts_with("homelab/")
                && !k.starts_with("secrets/")
                && !k.starts_with("vault-bundles/")
        });
        assert!(left.is_empty(), "nothing left behind: {:?}", left.keys());
        repo.run(&["plan", "--detailed-exitcode"]).expect(0);
    }

    #[test]
    fn a_move_killed_between_link_and_unlink_leaves_a_duplicate_the_next_plan_drops() {
        let repo = Repo::with_solo_data();
        repo.run(&["datastore", "namespace", "set", "homelab"])
            .expect(0);
        // Simulate the window between link(2) and unlink(2): both copies exist.
        std::fs::create_dir_all(repo.path(".swamp/homelab/audit")).unwrap();
        std::fs::hard_link(
            repo.path(".swamp/audit/2026-11.log"),
            repo.path(".swamp/homelab/audit/2026-11.log"),
        )
        .unwrap();
        let plan = repo.run(&["--json", "plan"]);
        let kinds: Vec<String> = plan.json()["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                format!(
                    "{} {}",
                    a["kind"].as_str().unwrap(),
                    a["path"].as_str().unwrap_or("")
                )
            })
            .collect();
        assert!(
            kinds.contains(&"drop-duplicate audit/2026-11.log".to_string()),
            "{kinds:?}"
        );
        repo.run(&["apply", "-y"]).expect(0);
        assert_eq!(
            repo.read(".swamp/homelab/audit/2026-11.log"),
            "alice applied\n"
        );
    }
}
