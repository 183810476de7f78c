//! The exit-code table in README.md, driven through the real binary: every
//! code it documents is the one a command of that kind gets, and no code
//! is documented that no command gives ("nothing to undo" once exited 1
//! where "Nothing to prune" exited 0; a spec with `endpoint=file://rel`
//! exited 1 where every other bad spec exited 64).

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::support::bucket::{Backend, Bucket, Repo, Run, finish};

/// The codes README.md's exit-code table lists.
fn documented() -> BTreeSet<i32> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = readme
        .split("### Exit codes")
        .nth(1)
        .expect("README.md has an exit-code table");
    table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            l.trim_start_matches('|')
                .split('|')
                .next()?
                .trim()
                .parse()
                .ok()
        })
        .collect()
}

fn lock_holder_pid(repo: &Repo) -> Option<u64> {
    let run = repo.run(&["--json", "datastore", "lock", "status"]);
    let lock = run.json()["locks"][0].clone();
    (lock["state"] == "held")
        .then(|| lock["pid"].as_u64())
        .flatten()
}

#[test]
fn every_exit_code_the_readme_documents_is_the_one_a_command_gets() {
    let bucket = Bucket::new(Backend::Fs);
    let a = Repo::init(&bucket, Some("team"));
    let mut seen = BTreeSet::new();
    let mut got = |run: Run, code: i32, says: &str| -> Run {
        run.expect(code);
        assert!(
            run.stdout.contains(says) || run.stderr.contains(says),
            "exit {code} should say {says:?}:\n{}\n{}",
            run.stdout,
            run.stderr
        );
        seen.insert(code);
        run
    };

    // 0: nothing to do, and nothing to undo.
    got(a.run(&["plan"]), 0, "No changes");
    got(a.run(&["undo"]), 0, "Nothing to undo");
    // 2: changes not applied (no confirmation; --detailed-exitcode).
    a.write_cache("team/outputs/x.yaml", "base\n");
    got(a.run(&["plan", "--detailed-exitcode"]), 2, "to upload");
    got(
        a.run(&["datastore", "sync"]),
        2,
        "applying needs confirmation",
    );
    // 0: done.
    got(a.run(&["datastore", "sync", "-y"]), 0, "Converged");
    // 3: conflicts block the apply.
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    a.write_cache("team/outputs/x.yaml", "from a\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    b.write_cache("team/outputs/x.yaml", "from b\n");
    got(b.run(&["datastore", "sync", "-y"]), 3, "conflict");
    // 64: bad input on the command line, a flag or a spec.
    got(a.run(&["apply", "--yse"]), 64, "--yes");
    got(
        a.run(&[
            "init",
            "--repo",
            "elsewhere",
            "--datastore",
            "s3://bkt/x?regoin=eu-west-1",
        ]),
        64,
        "region",
    );
    // 1: an error found at run time: a saved plan that is not one.
    std::fs::write(a.root.join("plan.json"), "{}").unwrap();
    got(a.run(&["apply", "plan.json"]), 1, "error:");
    // 75: the lock is held by someone else; 130: its holder interrupted.
    a.write_cache("team/outputs/y.yaml", "y\n");
    let holder = a.spawn(
        &["datastore", "sync", "-y"],
        &[("FAILPOINTS", "lock-acquired=sleep(60000)")],
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while lock_holder_pid(&a) != Some(u64::from(holder.id())) {
        assert!(Instant::now() < deadline, "the holder never took the lock");
        std::thread::sleep(Duration::from_millis(50));
    }
    got(
        b.run(&[
            "--lock-timeout",
            "0",
            "datastore",
            "sync",
            "-y",
            "--conflict",
            "local",
        ]),
        75,
        "swamp datastore lock status",
    );
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(holder.id() as i32, libc::SIGINT) }, 0);
    got(finish(holder), 130, "Interrupted");

    assert_eq!(seen, documented(), "driven vs README.md's table");
}
