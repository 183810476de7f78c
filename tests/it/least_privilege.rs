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

    /// The writer stores `files` (name, content) and pushes them.
    fn push(&self, files: &[(&str, &str)]) {
        for (name, content) in files {
            self.writer.put(name, content);
        }
        self.writer
            .run(&["datastore", "sync", "--push", "-y"])
            .expect(0);
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
    s.push(&[("m/a", "a1\n"), ("m/b", "b1\n")]);
    let w = &s.writer;
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
    s.push(&[("m/big", "payload\n")]);
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
    s.push(&[("m/a", "a1\n")]);
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

#[test]
fn doctor_says_whether_the_credentials_can_read_and_probes_writes_only_when_asked() {
    let s = Setup::new();
    s.push(&[("m/a", "a1\n")]);
    let r = s.reader();
    r.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    let before = s.objects();
    let reachable = |repo: &Repo, args: &[&str]| -> (String, String) {
        let mut all = vec!["--json", "doctor", "datastores"];
        all.extend(args);
        let doc = repo.run(&all).json();
        let check = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "reachable")
            .unwrap()
            .clone();
        (
            check["status"].as_str().unwrap().to_string(),
            check["message"].as_str().unwrap().to_string(),
        )
    };
    let (status, message) = reachable(&r, &[]);
    assert_eq!(status, "pass", "{message}");
    assert!(
        message.contains("can read it (writes not probed"),
        "{message}"
    );
    assert_eq!(s.objects(), before, "a read-only doctor writes nothing");

    let (status, message) = reachable(&r, &["--check-write"]);
    assert_eq!(status, "fail", "{message}");
    assert!(
        message.contains("can read it but not write it"),
        "{message}"
    );
    assert_eq!(s.objects(), before);

    let (status, message) = reachable(&s.writer, &["--check-write"]);
    assert_eq!(status, "pass", "{message}");
    assert!(message.contains("can read and write it"), "{message}");
    assert_eq!(s.objects(), before, "the canary is removed");
}

/// What a converged run sends, request by request, through a counting
/// proxy: a namespace of a dozen files that fits one listing page.
fn converged_requests(backend: crate::support::bucket::Backend, args: &[&str]) -> Vec<String> {
    use crate::support::bucket::Bucket;
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("lab"));
    for i in 0..12 {
        a.put(&format!("m/f{i}"), &format!("{i}\n"));
    }
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
    let from = proxy.seen().len();
    b.run(args).expect(0);
    proxy.seen()[from..]
        .iter()
        .map(|s| format!("{} {}", s.method, s.target))
        .collect()
}

/// Measured on a dozen files (figures in the issue 27 note): S3 plan 2
/// requests (the remote id, one LIST), sync 5 (the lock and upstream's
/// read, the manifest, the remote id, one LIST); GCS reads a small object
/// with two requests (metadata, then media), so 3 and 7.
#[test]
fn a_converged_plan_lists_once_and_a_converged_sync_writes_nothing() {
    use crate::support::bucket::Backend;
    for (backend, plan_max, sync_max) in [(Backend::S3, 2, 5), (Backend::Gcs, 3, 7)] {
        let lists = |seen: &[String]| {
            seen.iter()
                .filter(|s| s.contains("list-type=2") || s.contains("/o?"))
                .count()
        };
        let writes = |seen: &[String]| {
            seen.iter()
                .filter(|s| !s.starts_with("GET ") && !s.starts_with("HEAD "))
                .count()
        };
        let plan = converged_requests(backend, &["plan", "--detailed-exitcode"]);
        assert_eq!(lists(&plan), 1, "{backend:?} plan: {plan:#?}");
        assert!(plan.len() <= plan_max, "{backend:?} plan: {plan:#?}");
        let sync = converged_requests(backend, &["datastore", "sync", "-y"]);
        assert_eq!(lists(&sync), 1, "{backend:?} sync: {sync:#?}");
        assert_eq!(
            writes(&sync),
            0,
            "no lock taken, nothing written: {sync:#?}"
        );
        assert!(sync.len() <= sync_max, "{backend:?} sync: {sync:#?}");
    }
}
