//! Least privilege: a clone whose credentials may only read the bucket
//! (SeaweedFS's `reader` identity, `Read` and `List`) pulls, reads lazily,
//! follows a writer's deletes and plans, writing nothing to the bucket; a
//! push from it is refused with a message that says the credentials can
//! read but not write, before anything changes.

use std::collections::BTreeMap;

use crate::support::bucket::Repo;
use crate::support::servers;

/// A bucket on the signature-checking SeaweedFS and a writer repository
/// of its namespace `lab`.
struct Setup {
    bucket: String,
    writer: Repo,
}

impl Setup {
    fn new() -> Setup {
        let server = servers::s3_checking_signatures();
        let bucket = server.signed_fresh_bucket();
        let spec = format!(
            "s3://{bucket}/swamp?region={}&endpoint={}",
            servers::S3_REGION,
            server.endpoint
        );
        let writer = Repo::empty(servers::s3_child_env());
        writer
            .run(&["init", "--datastore", &spec, "--namespace", "lab"])
            .expect(0);
        Setup { bucket, writer }
    }

    /// A clone of the writer's repository with the reader's credentials.
    fn reader(&self) -> Repo {
        let mut r = self.writer.clone_elsewhere();
        r.env = servers::s3_reader_env();
        r
    }

    /// Every object in the bucket, with its version.
    fn objects(&self) -> BTreeMap<String, String> {
        let store = servers::s3_checking_signatures().signed_store(&self.bucket);
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(store.list(""))
            .unwrap()
            .into_iter()
            .map(|m| (m.key, m.version))
            .collect()
    }
}

#[test]
fn a_read_only_clone_pulls_follows_deletes_and_plans_without_writing_the_bucket() {
    let s = Setup::new();
    let w = &s.writer;
    w.put("m/a", "a1\n");
    w.put("m/b", "b1\n");
    w.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let before = s.objects();

    let r = s.reader();
    r.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(r.run(&["data", "get", "m/a"]).stdout, "a1\n");
    // Nothing written: no lock object, no progress note.
    assert_eq!(s.objects(), before);

    // A bidirectional sync with nothing to push, a saved plan, the status.
    r.run(&["datastore", "sync", "-y"]).expect(0);
    let plan = r.root.join("pull.plan.json");
    r.run(&["plan", "-o", plan.to_str().unwrap()]).expect(0);
    r.run(&["status"]).expect(0);
    assert_eq!(s.objects(), before);

    // The writer deletes a name; the reader follows.
    w.run(&["data", "rm", "m/b"]).expect(0);
    w.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let after_delete = s.objects();
    r.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    r.run(&["data", "get", "m/b"]).expect(1);
    assert_eq!(r.run(&["data", "get", "m/a"]).stdout, "a1\n");
    assert_eq!(s.objects(), after_delete);
}

#[test]
fn a_lazy_read_only_clone_fetches_on_first_read() {
    let s = Setup::new();
    s.writer.put("m/big", "payload\n");
    s.writer
        .run(&["datastore", "sync", "--push", "-y"])
        .expect(0);
    let before = s.objects();
    let r = s.reader();
    r.append_config("\n[sync]\nhydration = \"lazy\"\n");
    r.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(r.run(&["data", "get", "m/big"]).stdout, "payload\n");
    assert_eq!(s.objects(), before);
}

#[test]
fn a_push_with_read_only_credentials_says_they_cannot_write_and_changes_nothing() {
    let s = Setup::new();
    s.writer.put("m/a", "a1\n");
    s.writer
        .run(&["datastore", "sync", "--push", "-y"])
        .expect(0);
    let r = s.reader();
    r.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    r.put("m/a", "a2\n");
    let before = s.objects();
    let cache = crate::support::tree(&r.cache());

    let run = r.run(&["datastore", "sync", "--push", "-y"]);
    run.expect(1);
    let expected = format!(
        "error: these credentials can read s3://{}/swamp/lab/ but not write it (PutObject denied)",
        s.bucket
    );
    assert!(run.stderr.contains(&expected), "{}", run.stderr);
    assert!(
        run.stderr.contains("s3:PutObject") && run.stderr.contains("--pull"),
        "the hint names what a writer needs and what works read-only: {}",
        run.stderr
    );
    assert_eq!(s.objects(), before, "nothing written to the bucket");
    assert_eq!(
        crate::support::tree(&r.cache()),
        cache,
        "nothing changed in the cache"
    );

    let doc = r.json(&["--json", "datastore", "sync", "--push", "-y"], 1);
    assert_eq!(doc["error"]["kind"], "failure", "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("can read") && m.contains("but not write it")),
        "{doc}"
    );
}
