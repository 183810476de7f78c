//! Diffs where content changes (issue 28, item 2), on SeaweedFS (S3) and
//! fake-gcs-server (GCS) behind a counting proxy: a sync conflict shows a
//! unified diff of both sides when both are small text (the remote side
//! read once, verified), says why not otherwise, and `plan --diff` shows
//! what each upload or download would replace.

use crate::support::bucket::{Backend, Bucket, Repo};

/// A 70 KiB text body: over the 64 KiB a diff shows.
fn large(tag: &str) -> String {
    format!("{tag}\n").repeat(70 * 1024 / (tag.len() + 1) + 1)
}

/// The requests that read an object's bytes: an S3 GET of the key, a GCS
/// media download (`alt=media`) of it.
fn reads_of(proxy: &crate::support::faults::FaultProxy, name: &str) -> usize {
    proxy
        .seen()
        .iter()
        .filter(|s| s.method == "GET" && s.target.contains(name))
        .filter(|s| !s.target.contains("list-type") && !s.target.contains("prefix="))
        .filter(|s| !s.target.contains("/o?") || s.target.contains("alt=media"))
        .filter(|s| !s.target.contains("/o/") || s.target.contains("alt=media"))
        .count()
}

fn both_changed_conflicts_show_a_diff_or_why_not(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    let blob = |b: u8| (0..=255u8).map(|i| i ^ b).collect::<Vec<u8>>();
    let write = |r: &Repo, report: &str, blob_byte: u8, big: &str| {
        r.write_cache("alpha/outputs/report.txt", report);
        std::fs::write(r.cache().join("alpha/outputs/blob.bin"), blob(blob_byte)).unwrap();
        r.write_cache("alpha/outputs/big.log", big);
    };
    write(&a, "status: ok\nowner: alice\n", 1, &large("base"));
    // Not everything changes (that would trip a delete guard).
    a.write_cache("alpha/outputs/keep.txt", "kept\n");
    a.run_ok(&["datastore", "sync", "--push", "-y"]);
    let b = a.clone_elsewhere();
    b.run_ok(&["datastore", "sync", "--pull", "-y"]);
    write(&a, "status: ok\nowner: carol\n", 2, &large("carol"));
    a.run_ok(&["datastore", "sync", "--push", "-y"]);
    write(&b, "status: ok\nowner: bob\n", 3, &large("bob"));

    proxy.clear_rules();
    let before = reads_of(&proxy, "report.txt");
    let shown = b.run(&["plan"]);
    shown.expect(3);
    assert_eq!(
        reads_of(&proxy, "report.txt") - before,
        1,
        "the remote side is read once"
    );
    for line in [
        "      --- remote/outputs/report.txt",
        "      +++ cache/outputs/report.txt",
        "       status: ok",
        "      -owner: carol",
        "      +owner: bob",
        "      no diff: not text (256 B in the remote, 256 B in the cache)",
        "      no diff: larger than 64.0 KiB (",
    ] {
        assert!(shown.stdout.contains(line), "{line}\n{}", shown.stdout);
    }
    let big_reads = reads_of(&proxy, "big.log");
    let doc = b.json(&["--json", "plan"], 3);
    assert_eq!(
        reads_of(&proxy, "big.log"),
        big_reads,
        "a side too large to show is never read"
    );
    let diffs = doc["diffs"].as_array().expect("diffs in --json");
    let of = |path: &str| {
        diffs
            .iter()
            .find(|d| d["path"] == format!("outputs/{path}"))
            .unwrap_or_else(|| panic!("{path}: {doc:#}"))
    };
    assert_eq!(of("report.txt")["for"], "conflict");
    assert_eq!(of("report.txt")["shown"], "text");
    assert!(
        of("report.txt")["diff"]
            .as_str()
            .unwrap()
            .contains("+owner: bob\n")
    );
    assert_eq!(of("report.txt")["read_remote"], true);
    assert_eq!(of("blob.bin")["shown"], "binary");
    assert_eq!(of("big.log")["shown"], "too-large");
    assert!(of("big.log").get("read_remote").is_none());
    assert!(doc["summary"]["requests"]["get"].as_u64().unwrap() >= 2);
    // Settled by a policy, the conflict is gone and so is its diff.
    let settled = b.json(&["--json", "plan", "--conflict", "local"], 0);
    assert!(settled.get("diffs").is_none(), "{settled:#}");
}

fn plan_diff_shows_what_uploads_and_downloads_replace(backend: Backend) {
    let (bucket, _proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    a.write_cache("alpha/outputs/x.txt", "v1\nsame\n");
    a.write_cache("alpha/outputs/y.txt", "y1\n");
    a.write_cache("alpha/outputs/new.txt", "new\n");
    a.run_ok(&["datastore", "sync", "--push", "-y"]);
    let b = a.clone_elsewhere();
    b.run_ok(&["datastore", "sync", "--pull", "-y"]);
    a.write_cache("alpha/outputs/x.txt", "v2\nsame\n");
    a.run_ok(&["datastore", "sync", "--push", "-y"]);
    b.write_cache("alpha/outputs/y.txt", "y2\n");
    b.write_cache("alpha/outputs/fresh.txt", "fresh\n");

    let plain = b.run(&["plan"]);
    plain.expect(0);
    assert!(
        !plain.stdout.contains("Changes to the files"),
        "{}",
        plain.stdout
    );
    let shown = b.run(&["plan", "--diff"]);
    shown.expect(0);
    for line in [
        "Changes to the files this plan replaces (--diff):",
        "  ~ outputs/x.txt  download: the remote's copy replaces the cache's",
        "      --- cache/outputs/x.txt",
        "      +++ remote/outputs/x.txt",
        "      -v1",
        "      +v2",
        "  ~ outputs/y.txt  upload: the cache's copy replaces the remote's",
        "      --- remote/outputs/y.txt",
        "      +++ cache/outputs/y.txt",
        "      -y1",
        "      +y2",
    ] {
        assert!(shown.stdout.contains(line), "{line}\n{}", shown.stdout);
    }
    // A new file replaces nothing: no diff for it.
    assert!(
        !shown.stdout.contains("~ outputs/fresh.txt"),
        "{}",
        shown.stdout
    );
    let doc = b.json(&["--json", "plan", "--diff"], 0);
    let fors: Vec<(&str, &str)> = doc["diffs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["path"].as_str().unwrap(), d["for"].as_str().unwrap()))
        .collect();
    assert_eq!(
        fors,
        [("outputs/y.txt", "upload"), ("outputs/x.txt", "download")],
        "{doc:#}"
    );
    // The diffs change nothing of what applies.
    b.run_ok(&["datastore", "sync", "-y"]);
    assert_eq!(
        std::fs::read_to_string(b.cache().join("alpha/outputs/x.txt")).unwrap(),
        "v2\nsame\n"
    );
    assert_eq!(bucket.get("swamp/alpha/outputs/y.txt").unwrap(), b"y2\n");
}

on_both_servers!(
    both_changed_conflicts_show_a_diff_or_why_not,
    plan_diff_shows_what_uploads_and_downloads_replace,
);
