//! Plans a team can snapshot in its own CI: the same repository content
//! plans byte-identical `--json`, Markdown and human text in any directory
//! and under any `SWAMP_HOME` (roots are named relative to the repository,
//! a remote's cache as `$SWAMP_HOME/...`).

use crate::support::bucket::{Backend, Bucket, Repo};

/// The three renderings of one plan command.
fn renderings(run: &dyn Fn(&[&str]) -> String, args: &[&str]) -> [String; 3] {
    let with = |extra: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(extra);
        run(&all)
    };
    [
        with(&["--json"]),
        with(&["--format", "markdown"]),
        with(&[]),
    ]
}

#[test]
fn the_same_repository_in_two_directories_plans_byte_identical_json_markdown_and_text() {
    let a = Repo::with_solo_data();
    let b = Repo::local(&[]);
    std::fs::copy(a.path(".swamp.toml"), b.path(".swamp.toml")).unwrap();
    b.seed();
    assert_ne!(a.root, b.root);
    assert_ne!(a.home, b.home);
    for repo in [&a, &b] {
        // Recorded, not moved: `plan` shows the moves.
        repo.run(&["datastore", "namespace", "set", "alpha"])
            .expect(0);
    }
    let plan = |repo: &Repo| {
        renderings(
            &|args| {
                let run = repo.run(args);
                run.expect(0);
                run.stdout
            },
            &["plan"],
        )
    };
    let (from_a, from_b) = (plan(&a), plan(&b));
    for (x, y) in from_a.iter().zip(&from_b) {
        assert_eq!(x, y, "the two directories plan differently");
        assert!(
            !x.contains(a.root.to_str().unwrap()) && !x.contains(a.home.to_str().unwrap()),
            "a plan names a machine's path:\n{x}"
        );
    }
    let doc: serde_json::Value = serde_json::from_str(&from_a[0]).unwrap();
    assert_eq!(doc["target"]["root"], ".swamp/alpha");
    assert_eq!(doc["sources"][0]["root"], ".swamp");
    assert_eq!(doc["summary"]["move"], 5, "{doc:#}");
    assert!(from_a[2].contains("  target    .swamp/alpha/  (local, namespace alpha)"));
}

#[test]
fn two_clones_with_their_own_swamp_home_plan_the_same_sync_on_s3() {
    let bucket = Bucket::new(Backend::S3);
    let writer = Repo::init(&bucket, Some("alpha"));
    writer.put("web/state", "replicas: 2\n");
    writer.put("db/state", "replicas: 1\n");
    writer.run_ok(&["datastore", "sync", "--push", "-y"]);
    let (a, b) = (writer.clone_elsewhere(), writer.clone_elsewhere());
    assert_ne!(a.home, b.home);
    let plan = |repo: &Repo| {
        renderings(
            &|args| {
                let run = repo.run(args);
                run.expect(0);
                run.stdout
            },
            &["plan"],
        )
    };
    let (from_a, from_b) = (plan(&a), plan(&b));
    for (x, y) in from_a.iter().zip(&from_b) {
        assert_eq!(x, y, "two clones plan the same sync differently");
        for place in [&a.root, &a.home, &b.root, &b.home] {
            assert!(
                !x.contains(place.to_str().unwrap()),
                "a plan names a machine's path:\n{x}"
            );
        }
    }
    let doc: serde_json::Value = serde_json::from_str(&from_a[0]).unwrap();
    let cache = format!("$SWAMP_HOME/repos/{}/alpha", writer.repo_id());
    assert_eq!(doc["target"]["root"], cache.as_str());
    assert_eq!(doc["summary"]["download"], 2, "{doc:#}");
    assert!(
        from_a[2].contains(&format!("  cache     {cache}/")),
        "{}",
        from_a[2]
    );
}
