//! Least privilege: a clone whose credentials may only read the bucket
//! (SeaweedFS's `reader` identity, `Read` and `List`) pulls, reads lazily,
//! follows a writer's deletes and plans, writing nothing to the bucket; a
//! push from it is refused with a message that says the credentials can
//! read but not write, before anything changes.

use std::collections::BTreeMap;

use crate::support::bucket::Repo;
use crate::support::servers;
use crate::support::tree as files;

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

/// The team's history (issue 44) is for readers too: a clone that may
/// only read lists the writer's applies and shows what one deleted; its
/// undo of one is refused, as a writer's command; it writes nothing.
#[test]
fn a_read_only_clone_lists_and_shows_the_teams_history_writing_nothing() {
    let s = Setup::new();
    s.push(&[("m/a", "a1\n"), ("m/b", "b1\n")]);
    let w = &s.writer;
    w.run(&["data", "rm", "m/b"]).expect(0);
    w.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let before = s.objects();

    let r = s.reader();
    let doc = r.json(&["--json", "history"], 0);
    let applies = doc["applies"].as_array().unwrap();
    assert_eq!(applies.len(), 2, "the writer's two pushes: {doc:#}");
    assert!(
        applies
            .iter()
            .all(|a| a["mine"] == false && a["in_bucket"] == true),
        "{doc:#}"
    );
    let id = applies[1]["id"].as_str().unwrap();
    let show = r.run(&["history", "show", id]);
    show.expect(0);
    assert!(
        show.stdout.contains("delete-remote") && show.stdout.contains("data/m/b/1/raw"),
        "{}",
        show.stdout
    );
    // Undoing it needs a writer: refused up front.
    let undo = r.run(&["undo", id, "-y"]);
    undo.expect(1);
    assert!(
        undo.stderr.contains("these credentials can read") && undo.stderr.contains("not write"),
        "{}",
        undo.stderr
    );
    assert_eq!(s.objects(), before, "nothing written to the bucket");
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
    proxy.seen()[from..].iter().map(|s| s.line()).collect()
}

/// A dozen files, converged: `plan` and `datastore sync -y` each send one
/// request, the LIST, on S3 and on GCS (no lock is listed, and the remote
/// id and namespace manifest are listed at versions read before).
#[test]
fn a_converged_plan_lists_once_and_a_converged_sync_writes_nothing() {
    use crate::support::bucket::Backend;
    for (backend, plan_max, sync_max) in [(Backend::S3, 1, 1), (Backend::Gcs, 1, 1)] {
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

/// A pull writes nothing to the bucket, so the plan that verifies it
/// observes the cache again and keeps the listing it planned from: one
/// LIST for the whole run (it was two). A push writes objects, so it
/// lists again to verify them (issue 29).
#[test]
fn a_pull_lists_once_and_a_push_lists_again_to_verify() {
    use crate::support::bucket::Backend;
    for backend in [Backend::S3, Backend::Gcs] {
        let lists = |seen: &[crate::support::faults::Seen]| {
            seen.iter().filter(|s| s.class() == "list").count()
        };
        let (_bucket, proxy, a, b) = twelve_pushed_and_a_new_clone(backend);
        let from = proxy.seen().len();
        let pull = b.run(&["datastore", "sync", "--pull", "-y"]);
        pull.expect(0);
        assert!(pull.stdout.contains("Converged"), "{}", pull.stdout);
        assert_eq!(
            lists(&proxy.seen()[from..]),
            1,
            "{backend:?}: the pull's verifying plan keeps its listing"
        );
        assert_eq!(files(&b.cache()), files(&a.cache()));
        b.run(&["plan", "--detailed-exitcode"]).expect(0);

        b.put("m/new", "new\n");
        let from = proxy.seen().len();
        let push = b.run(&["datastore", "sync", "--push", "-y"]);
        push.expect(0);
        assert!(push.stdout.contains("Converged"), "{}", push.stdout);
        // Planned before the lock and again under it, then verified.
        assert_eq!(
            lists(&proxy.seen()[from..]),
            3,
            "{backend:?}: a push lists again to verify what it wrote"
        );
    }
}

/// A large pull spills the listing its verifying plan keeps, and what its
/// downloads teach that plan, rather than hold them through the apply
/// (a million of each was 120 MB); the verifying plan reads both back:
/// still one LIST for the run, and no downloaded file read again to hash it.
#[test]
fn a_pull_that_spills_its_listing_lists_once_and_reads_no_download_back() {
    use crate::support::bucket::Backend;
    for backend in [Backend::S3, Backend::Gcs] {
        let (_bucket, proxy, a, b) = twelve_pushed_and_a_new_clone(backend);
        let from = proxy.seen().len();
        let pull = b.run_with(
            &["datastore", "sync", "--pull", "-y"],
            &[("SWAMP_SPILL_AT", "4"), ("SWAMP_LOG", "swamp::state=debug")],
        );
        pull.expect(0);
        assert!(pull.stdout.contains("Converged"), "{}", pull.stdout);
        for spilled in [
            "the listing kept for the verifying plan is spilled",
            "what downloads teach is spilled",
        ] {
            assert!(
                pull.stderr.contains(spilled),
                "{backend:?}: {}",
                pull.stderr
            );
        }
        let walks: Vec<&str> = pull
            .stderr
            .lines()
            .filter(|l| l.contains("cache walked"))
            .collect();
        assert_eq!(walks.len(), 2, "{backend:?}: {}", pull.stderr);
        assert!(
            walks[1].contains("files_read=0"),
            "{backend:?}: the verifying plan read downloads back: {}",
            walks[1]
        );
        assert_eq!(
            proxy.seen()[from..]
                .iter()
                .filter(|s| s.class() == "list")
                .count(),
            1,
            "{backend:?}: the verifying plan keeps its (spilled) listing"
        );
        assert_eq!(files(&b.cache()), files(&a.cache()));
        b.run(&["plan", "--detailed-exitcode"]).expect(0);
    }
}

/// Twelve files pushed by one clone through a counting proxy, and another
/// clone of that datastore which has pulled nothing yet.
fn twelve_pushed_and_a_new_clone(
    backend: crate::support::bucket::Backend,
) -> (
    crate::support::bucket::Bucket,
    crate::support::faults::FaultProxy,
    Repo,
    Repo,
) {
    let (bucket, proxy) = crate::support::bucket::Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("lab"));
    for i in 0..12 {
        a.put(&format!("m/f{i}"), &format!("{i}\n"));
    }
    a.run_ok(&["datastore", "sync", "-y"]);
    let b = a.clone_elsewhere();
    (bucket, proxy, a, b)
}

use crate::support::faults::class;

/// A sync with something of every kind to do, through a counting proxy:
/// the plan's request estimate, and what the run sent once it had planned
/// under the lock (after its second listing: the first is the plan made
/// before any lock), by class.
fn estimated_and_sent(backend: crate::support::bucket::Backend) -> Sent {
    use crate::support::bucket::Bucket;
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("lab"));
    for i in 0..4 {
        a.put(&format!("m/f{i}"), &format!("{i}\n"));
    }
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "-y"]).expect(0);
    // A new file from a (a download for b), one b adds (an upload) and one
    // b removes (a remote delete, its object copied to the trash first,
    // and a record of the delete).
    a.put("m/from-a", "a\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    b.put("m/from-b", "b\n");
    b.run(&["data", "rm", "m/f0"]).expect(0);
    let plan = b.run(&["--json", "plan", "--scope", "sync"]).json();
    let from = proxy.seen().len();
    let synced = b.run(&["--json", "datastore", "sync", "-y"]);
    synced.expect(0);
    let reported = synced.json()["applied"]["requests_sent"].clone();
    let seen: Vec<String> = proxy.seen()[from..].iter().map(|s| s.line()).collect();
    let second_listing = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| class(s) == "list")
        .nth(1)
        .map(|(i, _)| i)
        .expect("planned twice");
    let mut sent =
        serde_json::json!({"list": 0, "get": 0, "head": 0, "put": 0, "copy": 0, "delete": 0});
    // The lock object's requests are counted apart: besides giving it back
    // (estimated: a DELETE, and on GCS the metadata read before it), the
    // heartbeat looks at it once a second and renews it (not estimated,
    // README), as often as the machine is slow. The caller counts the
    // release from the lock requests returned, as they were sent.
    let after = &seen[second_listing + 1..];
    let lock = |s: &String| s.contains("/.swamp/lock.json") || s.contains("%2F.swamp%2Flock.json");
    assert!(
        after
            .iter()
            .rev()
            .find(|s| lock(s))
            .is_some_and(|s| s.starts_with("DELETE ")),
        "the lock is given back last: {seen:#?}"
    );
    for s in after.iter().filter(|s| !lock(s)) {
        let n = &mut sent[class(s)];
        *n = (n.as_u64().unwrap() + 1).into();
    }
    let lock_requests = after.iter().filter(|s| lock(s)).cloned().collect();
    Sent {
        estimate: plan["summary"]["requests"].clone(),
        sent,
        seen,
        lock_requests,
        reported,
    }
}

/// What [`estimated_and_sent`] found.
struct Sent {
    /// The plan's estimate.
    estimate: serde_json::Value,
    /// What the proxy saw after the planning under the lock, the lock's
    /// own requests aside, by class.
    sent: serde_json::Value,
    seen: Vec<String>,
    /// The lock object's requests, in order.
    lock_requests: Vec<String>,
    /// What the run reported it sent (`applied.requests_sent`).
    reported: serde_json::Value,
}

/// Estimated: the upload, the download, the trash copy, the delete, its
/// record and this clone's note, the apply's history record (written
/// first, rewritten last), the verifying listing and giving back the
/// lock (on GCS also the metadata read before each conditional copy and
/// delete); sent, on S3 and on GCS, exactly that, and the run reports
/// what it sent (`applied.requests_sent`) as the proxy counted it.
#[test]
fn a_sync_sends_the_requests_its_plan_estimated_and_reports_what_it_sent() {
    use crate::support::bucket::Backend;
    for (backend, heads, release_heads) in [(Backend::S3, 0, 0), (Backend::Gcs, 3, 1)] {
        let Sent {
            estimate,
            mut sent,
            seen,
            lock_requests,
            reported,
        } = estimated_and_sent(backend);
        assert_eq!(
            estimate,
            serde_json::json!({"list": 1, "get": 1, "head": heads, "put": 5, "copy": 1, "delete": 2}),
            "{backend:?}"
        );
        // Giving back the lock, as sent: its last requests, once the
        // heartbeat has stopped, are the metadata reads the release makes
        // (GCS) and then the DELETE.
        let release = &lock_requests[lock_requests.len().saturating_sub(1 + release_heads)..];
        assert!(
            release.last().is_some_and(|r| r.starts_with("DELETE "))
                && release[..release.len() - 1]
                    .iter()
                    .all(|r| class(r) == "head"),
            "{backend:?}: the release is {release_heads} read(s) and a delete: {lock_requests:#?}"
        );
        for r in release {
            let n = &mut sent[class(r)];
            *n = (n.as_u64().unwrap() + 1).into();
        }
        assert_eq!(sent, estimate, "{backend:?}: {seen:#?}");
        assert_eq!(reported, sent, "{backend:?}: reported as sent: {seen:#?}");
    }
}

/// What a converged plan of a namespace of `n` objects (under
/// `outputs/g0..g7/`) lists, through a counting proxy.
fn converged_listing(backend: crate::support::bucket::Backend, n: usize) -> Vec<String> {
    use crate::support::bucket::Bucket;
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("lab"));
    let root = a.cache().join("lab/outputs");
    for i in 0..n {
        let dir = root.join(format!("g{}", i % 8));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("r{i}.txt")), format!("{i}\n")).unwrap();
    }
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
    let from = proxy.seen().len();
    a.run(&["plan", "--detailed-exitcode"]).expect(0);
    proxy.seen()[from..].iter().map(|s| s.line()).collect()
}

/// A namespace that fits one page is one plain LIST; one of 2,000 objects
/// is a full first page, then the split listing (a delimited listing per
/// level and per prefix found, each `outputs/gN/` once), side by side.
#[test]
fn a_namespace_past_one_listing_page_splits_its_listing_and_a_small_one_never_does() {
    use crate::support::bucket::Backend;
    for backend in [Backend::S3, Backend::Gcs] {
        let small = converged_listing(backend, 12);
        assert_eq!(small.len(), 1, "{backend:?}: {small:#?}");
        assert!(!small[0].contains("delimiter"), "{small:#?}");

        let seen = converged_listing(backend, 2_000);
        assert!(
            seen.iter().all(|s| class(s) == "list"),
            "a converged plan only lists: {seen:#?}"
        );
        assert!(
            !seen[0].contains("delimiter"),
            "the first page first: {seen:#?}"
        );
        assert!(
            seen[1..].iter().all(|s| s.contains("delimiter")),
            "then only the split listing: {seen:#?}"
        );
        for g in 0..8 {
            let prefix = format!("outputs%2Fg{g}%2F");
            assert_eq!(
                seen.iter().filter(|s| s.contains(&prefix)).count(),
                1,
                "{backend:?} {prefix}: {seen:#?}"
            );
        }
        assert!(seen.len() <= 16, "{backend:?}: {seen:#?}");
    }
}

/// A file large enough to go in parts (S3: 256 MiB or more) is, in the
/// plan's estimate, a request to start, one per part (8 MiB each) and one
/// to complete: what the push sends and reports, as the proxy counts.
#[test]
fn a_multipart_push_sends_the_part_requests_its_plan_estimated() {
    use crate::support::bucket::{Backend, Bucket};
    let (bucket, proxy) = Bucket::behind_proxy(Backend::S3);
    let a = Repo::init(&bucket, Some("lab"));
    a.put("m/small", "small\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    // Sparse, with bytes at both ends: 300 MiB is 38 parts of 8 MiB.
    let big = a.cache().join("lab/files/big.bin");
    std::fs::create_dir_all(big.parent().unwrap()).unwrap();
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::File::create(&big).unwrap();
        f.write_all(b"start").unwrap();
        f.seek(SeekFrom::Start((300 << 20) - 3)).unwrap();
        f.write_all(b"end").unwrap();
    }
    let from = proxy.seen().len();
    let pushed = a.json(&["--json", "datastore", "sync", "--push", "-y"], 0);
    let estimate = &pushed["plan"]["summary"]["requests"];
    let reported = &pushed["applied"]["requests_sent"];
    assert_eq!(
        estimate["put"].as_u64().unwrap(),
        38 + 2 + 2,
        "start, 38 parts, complete, and the history record twice: {estimate}"
    );
    let parts = proxy.seen()[from..]
        .iter()
        .filter(|s| s.method == "PUT" && s.target.contains("partNumber="))
        .count();
    assert_eq!(parts, 38);
    for class in ["get", "put", "copy", "delete"] {
        assert_eq!(reported[class], estimate[class], "{class}: {pushed:#}");
    }
}
