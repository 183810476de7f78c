//! Faults between swamp and the server (issue 9), on SeaweedFS (S3) and
//! fake-gcs-server (GCS) behind the fault proxy of `support::faults`:
//! every cut-off answer, flipped byte, outage and broken lock ends in a
//! clear error or convergence, never in a corrupt or lost file.

mod support;

use std::time::{Duration, Instant};

use support::bucket::{Backend, Bucket, Repo, finish};
use support::faults::{Fault, FaultProxy, Rule};
use support::tree as files;

/// The request target that marks a listing on `backend`.
fn listing(backend: Backend) -> &'static str {
    match backend {
        Backend::S3 => "list-type=2",
        _ => "/o?",
    }
}

/// The request target that marks an object download on `backend`.
fn download(backend: Backend) -> &'static str {
    match backend {
        Backend::S3 => "x-id=GetObject",
        _ => "alt=media",
    }
}

/// A rule narrowed to uploads on `backend` (GCS names the object in the
/// body of a multipart upload, not in the target).
fn uploads(backend: Backend, rule: Rule) -> Rule {
    match backend {
        Backend::S3 => rule.method("PUT").target("bulk"),
        _ => rule.method("POST").target("uploadType=multipart"),
    }
}

fn upload_count(proxy: &FaultProxy, backend: Backend) -> usize {
    match backend {
        Backend::S3 => proxy.count("PUT", "bulk"),
        _ => proxy.count("POST", "uploadType=multipart"),
    }
}

/// How a data key appears in request targets (GCS escapes the slashes).
fn in_target(backend: Backend, key: &str) -> String {
    match backend {
        Backend::S3 => key.to_string(),
        _ => key.replace('/', "%2F"),
    }
}

/// A repo with `m/x` (three versions) and `m/y` pushed straight to the
/// server, and a clone that reaches it through the proxy.
fn pushed_then_cloned_behind(backend: Backend) -> (Bucket, FaultProxy, Repo, Repo) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    for body in ["one\n", "two\n", "three\n"] {
        a.put("m/x", body);
    }
    a.put("m/y", "why\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    (bucket, proxy, a, b)
}

/// No swamp temp file anywhere under `root`.
fn assert_no_temps(root: &std::path::Path) {
    let temps: Vec<_> = files(root)
        .into_keys()
        .filter(|p| p.rsplit('/').next().unwrap().starts_with(".swamp-tmp"))
        .collect();
    assert!(temps.is_empty(), "temp files left: {temps:?}");
}

fn data_files(repo: &Repo) -> Vec<(String, Vec<u8>)> {
    files(&repo.cache().join("alpha/data"))
        .into_iter()
        .collect()
}

fn a_listing_cut_off_mid_way_is_retried(backend: Backend) {
    let (_bucket, proxy, a, b) = pushed_then_cloned_behind(backend);
    proxy.rule(
        Rule::new(Fault::Truncate)
            .method("GET")
            .target(listing(backend))
            .times(1),
    );
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(proxy.fired(), 1, "the fault was injected once");
    assert_eq!(data_files(&b), data_files(&a));
}

fn a_download_with_a_flipped_byte_is_retried_and_lands_intact(backend: Backend) {
    let (_bucket, proxy, a, b) = pushed_then_cloned_behind(backend);
    let key = in_target(backend, "alpha/data/m/x/2/raw");
    proxy.rule(
        Rule::new(Fault::Corrupt)
            .method("GET")
            .target(download(backend))
            .target(&key)
            .times(1),
    );
    proxy.rule(
        Rule::new(Fault::Truncate)
            .method("GET")
            .target(download(backend))
            .times(1),
    );
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(proxy.fired(), 2);
    assert_eq!(data_files(&b), data_files(&a));
    assert_no_temps(&b.cache());
}

fn a_download_that_stays_corrupt_is_an_error_naming_the_object_and_writes_nothing(
    backend: Backend,
) {
    let (_bucket, proxy, _a, b) = pushed_then_cloned_behind(backend);
    let key = in_target(backend, "alpha/data/m/y/1/raw");
    proxy.rule(
        Rule::new(Fault::Corrupt)
            .method("GET")
            .target(download(backend))
            .target(&key),
    );
    let run = b.run(&["datastore", "sync", "--pull", "-y"]);
    run.expect(1);
    assert!(
        run.stderr.contains("data/m/y/1/raw") && run.stderr.contains("corrupt"),
        "names the object and what is wrong: {}",
        run.stderr
    );
    assert!(proxy.fired() >= 2, "it was tried again before giving up");
    assert!(
        !b.cache().join("alpha/data/m/y").exists(),
        "nothing of it was written"
    );
    assert_no_temps(&b.cache());
    // The other files landed: one bad object does not hold back the rest.
    assert!(b.cache().join("alpha/data/m/x/3/raw").is_file());
}

/// `n` files straight into the cache's data tier of `repo`.
fn bulk(repo: &Repo, n: usize) {
    for i in 0..n {
        repo.write_cache(
            &format!("alpha/data/bulk/f{i:04}/1/raw"),
            &format!("file {i}\n"),
        );
    }
}

fn a_dead_server_ends_a_300_file_push_in_seconds_naming_the_command_to_rerun(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.append_config("\n[sync]\nconcurrency = 1\n");
    bulk(&a, 300);
    // Slow enough to pull the plug mid-way.
    proxy.rule(uploads(
        backend,
        Rule::new(Fault::Delay(Duration::from_millis(15))),
    ));
    let child = a.spawn(&["datastore", "sync", "--push", "-y"], &[]);
    let start = Instant::now();
    while upload_count(&proxy, backend) < 20 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the push never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    proxy.set_down(true);
    let down_at = Instant::now();
    let run = finish(child);
    let took = down_at.elapsed();
    run.expect(1);
    assert!(
        took < Duration::from_secs(30),
        "took {took:?} after the server died"
    );
    let endpoint = proxy.endpoint.trim_start_matches("http://");
    assert!(
        run.stderr.contains(endpoint),
        "names the endpoint: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("run `swamp datastore sync --push -y` again"),
        "names the command to re-run: {}",
        run.stderr
    );
    assert!(
        proxy.refused() < 40,
        "gave up after a handful of attempts, not one round per file: {}",
        proxy.refused()
    );
    // Back up: the same command finishes the job.
    proxy.set_down(false);
    proxy.clear_rules();
    // The lock it could not release is ours and its process is gone: the
    // warning's own command removes it, rather than waiting out the TTL.
    assert!(
        run.stderr
            .contains("`swamp datastore lock release` removes it"),
        "{}",
        run.stderr
    );
    a.run(&["datastore", "lock", "release"]).expect(0);
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let keys = bucket.versions();
    let pushed = keys.keys().filter(|k| k.contains("/bulk/")).count();
    assert_eq!(pushed, 300);
}

fn a_lock_broken_mid_push_stops_the_push_and_never_says_converged(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.append_config("\n[sync]\nconcurrency = 2\n");
    bulk(&a, 300);
    proxy.rule(uploads(
        backend,
        Rule::new(Fault::Delay(Duration::from_millis(30))),
    ));
    let child = a.spawn(&["datastore", "sync", "--push", "-y"], &[]);
    let start = Instant::now();
    while upload_count(&proxy, backend) < 10 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the push never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    a.run(&["datastore", "lock", "release", "--force"])
        .expect(0);
    let broken_at = Instant::now();
    let run = finish(child);
    run.expect(1);
    assert!(!run.stdout.contains("Converged"), "{}", run.stdout);
    assert!(run.stderr.contains("lost the lock"), "{}", run.stderr);
    let late = proxy
        .seen()
        .iter()
        .filter(|s| {
            let upload = match backend {
                Backend::S3 => s.method == "PUT" && s.target.contains("bulk"),
                _ => s.method == "POST" && s.target.contains("uploadType=multipart"),
            };
            upload && s.at > broken_at + Duration::from_secs(3)
        })
        .count();
    assert_eq!(
        late, 0,
        "no upload started more than 3 s after the lock was broken"
    );
    let pushed = bucket
        .versions()
        .keys()
        .filter(|k| k.contains("/bulk/"))
        .count();
    assert!(pushed < 300, "the push stopped part-way ({pushed} of 300)");
    // What completed stays done; the next run finishes it.
    proxy.clear_rules();
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let pushed = bucket
        .versions()
        .keys()
        .filter(|k| k.contains("/bulk/"))
        .count();
    assert_eq!(pushed, 300);
}

mod s3 {
    use super::*;
    #[test]
    fn a_listing_cut_off_mid_way_is_retried() {
        super::a_listing_cut_off_mid_way_is_retried(Backend::S3)
    }
    #[test]
    fn a_download_with_a_flipped_byte_is_retried_and_lands_intact() {
        super::a_download_with_a_flipped_byte_is_retried_and_lands_intact(Backend::S3)
    }
    #[test]
    fn a_download_that_stays_corrupt_is_an_error_naming_the_object_and_writes_nothing() {
        super::a_download_that_stays_corrupt_is_an_error_naming_the_object_and_writes_nothing(
            Backend::S3,
        )
    }
    #[test]
    fn a_dead_server_ends_a_300_file_push_in_seconds_naming_the_command_to_rerun() {
        super::a_dead_server_ends_a_300_file_push_in_seconds_naming_the_command_to_rerun(
            Backend::S3,
        )
    }
    #[test]
    fn a_lock_broken_mid_push_stops_the_push_and_never_says_converged() {
        super::a_lock_broken_mid_push_stops_the_push_and_never_says_converged(Backend::S3)
    }
}

mod gcs {
    use super::*;
    #[test]
    fn a_listing_cut_off_mid_way_is_retried() {
        super::a_listing_cut_off_mid_way_is_retried(Backend::Gcs)
    }
    #[test]
    fn a_download_with_a_flipped_byte_is_retried_and_lands_intact() {
        super::a_download_with_a_flipped_byte_is_retried_and_lands_intact(Backend::Gcs)
    }
    #[test]
    fn a_download_that_stays_corrupt_is_an_error_naming_the_object_and_writes_nothing() {
        super::a_download_that_stays_corrupt_is_an_error_naming_the_object_and_writes_nothing(
            Backend::Gcs,
        )
    }
    #[test]
    fn a_dead_server_ends_a_300_file_push_in_seconds_naming_the_command_to_rerun() {
        super::a_dead_server_ends_a_300_file_push_in_seconds_naming_the_command_to_rerun(
            Backend::Gcs,
        )
    }
    #[test]
    fn a_lock_broken_mid_push_stops_the_push_and_never_says_converged() {
        super::a_lock_broken_mid_push_stops_the_push_and_never_says_converged(Backend::Gcs)
    }
}
