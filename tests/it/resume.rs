//! Interrupted transfers resume (issue 29, item 4), on SeaweedFS (S3)
//! and fake-gcs-server (GCS) behind a counting proxy: a push of a large
//! file killed after its third part sends only the parts the server
//! lacks; one whose file changed meanwhile aborts the old upload and
//! starts over; a pull killed part-way continues with a ranged read of
//! the same version, and an object replaced meanwhile is read whole, as
//! is one behind a server that ignores ranges.

use std::os::unix::process::ExitStatusExt as _;

use crate::support::bucket::{Backend, Bucket, Repo};
use crate::support::faults::{Fault, FaultProxy, Rule};

/// 256 MiB: the smallest file swamp uploads in parts (32 parts of 8 MiB).
const LARGE: usize = 256 << 20;
const PARTS: usize = 32;

/// `n` bytes no two parts of which are alike (xorshift, seeded).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// Runs `args` with a failpoint that SIGKILLs the process, and checks it
/// was killed.
#[track_caller]
fn killed(repo: &Repo, args: &[&str], failpoint: &str) {
    killed_with(repo, args, failpoint, &[]);
}

/// [`killed`], with more of the environment set.
#[track_caller]
fn killed_with(repo: &Repo, args: &[&str], failpoint: &str, env: &[(&str, &str)]) {
    let mut env = env.to_vec();
    env.push(("FAILPOINTS", failpoint));
    let out = repo.spawn(args, &env).wait_with_output().unwrap();
    assert_eq!(
        out.status.signal(),
        Some(9),
        "killed by the failpoint `{failpoint}`: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// How many of `run` were `method` requests whose target holds every one
/// of `parts`.
fn sent(run: &[crate::support::faults::Seen], method: &str, parts: &[&str]) -> usize {
    run.iter()
        .filter(|s| s.method == method && parts.iter().all(|p| s.target.contains(p)))
        .count()
}

/// The upload records in the clone's state.
fn records(repo: &Repo) -> Vec<serde_json::Value> {
    let state = repo.root.join(".swamp/state");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&state).unwrap().flatten() {
        if !dir.file_name().to_string_lossy().starts_with("uploads-") {
            continue;
        }
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            out.push(serde_json::from_slice(&std::fs::read(f.path()).unwrap()).unwrap());
        }
    }
    out
}

/// Runs `ask` with a signing S3 client straight to the server (not
/// through the proxy).
fn ask_s3<T, F: std::future::Future<Output = T>>(ask: impl FnOnce(aws_sdk_s3::Client) -> F) -> T {
    let endpoint = crate::support::servers::s3().endpoint.clone();
    Bucket::block_on(async { ask(crate::support::servers::signing_client(&endpoint).await).await })
}

/// The part numbers the server holds of `upload_id`.
fn parts_on_server(bucket: &Bucket, key: &str, upload_id: &str) -> Vec<i32> {
    ask_s3(|client| async move {
        let out = client
            .list_parts()
            .bucket(&bucket.name)
            .key(key)
            .upload_id(upload_id)
            .send()
            .await
            .unwrap();
        out.parts().iter().filter_map(|p| p.part_number()).collect()
    })
}

/// The multipart uploads in progress in the bucket.
fn uploads_in_progress(bucket: &Bucket) -> usize {
    ask_s3(|client| async move {
        let out = client
            .list_multipart_uploads()
            .bucket(&bucket.name)
            .send()
            .await
            .unwrap();
        out.uploads().len()
    })
}

const KEY: &str = "swamp/alpha/outputs/big.bin";

/// A repository with a 256 MiB file in its cache whose push was killed
/// after the server acknowledged its third part.
fn push_killed_after_three_parts() -> (Bucket, FaultProxy, Repo, Vec<u8>) {
    let (bucket, proxy) = Bucket::behind_proxy(Backend::S3);
    let repo = Repo::init(&bucket, Some("alpha"));
    let body = noise(LARGE, 7);
    std::fs::create_dir_all(repo.cache().join("alpha/outputs")).unwrap();
    std::fs::write(repo.cache().join("alpha/outputs/big.bin"), &body).unwrap();
    killed(
        &repo,
        &["datastore", "sync", "--push", "-y"],
        "multipart-part-recorded=2*off->return",
    );
    (bucket, proxy, repo, body)
}

#[test]
fn a_push_killed_after_its_third_part_resumes_with_the_parts_it_lacks() {
    let (bucket, proxy, repo, body) = push_killed_after_three_parts();
    let recorded = records(&repo);
    assert_eq!(recorded.len(), 1, "the upload is recorded: {recorded:?}");
    let upload_id = recorded[0]["upload_id"].as_str().unwrap().to_string();
    assert_eq!(recorded[0]["parts"].as_array().unwrap().len(), 3);
    assert!(
        bucket.get(KEY).is_none(),
        "nothing is visible before the complete"
    );

    // The plan says what is left, from the record alone.
    let plan = repo.json(&["plan", "--json"], 0);
    assert_eq!(plan["resumes"][0]["path"], "outputs/big.bin");
    assert_eq!(plan["resumes"][0]["transfer"], "upload");
    assert_eq!(plan["resumes"][0]["done"], 24 << 20);
    let shown = repo.run(&["plan"]);
    assert!(
        shown
            .stdout
            .contains("resume    outputs/big.bin (upload, 232.0 MiB of 256.0 MiB left)"),
        "{}",
        shown.stdout
    );

    // What the server holds: the three recorded, and any in flight then.
    let held = parts_on_server(&bucket, KEY, &upload_id);
    assert!(held.len() >= 3 && held.len() < PARTS, "{held:?}");
    let before = proxy.seen().len();
    repo.run_ok(&["datastore", "sync", "--push", "-y"]);
    let run: Vec<_> = proxy.seen().split_off(before);
    let count = |method: &str, parts: &[&str]| sent(&run, method, parts);
    assert_eq!(
        count("GET", &["uploadId="]),
        1,
        "one ListParts of the recorded upload"
    );
    assert_eq!(count("POST", &["uploads"]), 0, "no new upload is created");
    assert_eq!(
        count("PUT", &["partNumber=", &upload_id]),
        PARTS - held.len(),
        "only the parts the server lacked are sent"
    );
    assert_eq!(count("POST", &["uploadId="]), 1, "one complete");
    assert!(
        bucket.get(KEY).unwrap() == body,
        "the object is the file byte for byte"
    );
    assert!(
        records(&repo).is_empty(),
        "the record goes once it completes"
    );
    assert_eq!(uploads_in_progress(&bucket), 0);
    // Done: the next plan has nothing to do.
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// A server-side copy in parts (S3 `UploadPartCopy`, for objects over
/// 5 GiB: here a 51 MiB object in 11 parts of 5 MiB, the proxy answering
/// the CopyObject as AWS answers one too large) killed after its third
/// part (four are copied at once, so the server holds 3 to 6 of them):
/// the rerun lists the parts the server holds and copies the rest into
/// the same upload. A part the server holds counts only as recorded (its
/// size and ETag): one copied but not yet recorded when the kill came is
/// copied again, as nothing here has its bytes to check it by.
#[test]
fn a_move_killed_during_a_copy_in_parts_copies_only_the_parts_it_lacks() {
    const SIZE: usize = 51 << 20;
    const COPY_PARTS: usize = 11;
    let (from, proxy) = Bucket::behind_proxy(Backend::S3);
    let to = from.beside();
    let repo = Repo::init(&from, Some("team"));
    // The killed run's lock expires at once.
    repo.append_config("\n[lock]\nttl_secs = 1\n");
    let body = noise(SIZE, 11);
    std::fs::create_dir_all(repo.cache().join("team/outputs")).unwrap();
    std::fs::write(repo.cache().join("team/outputs/big.bin"), &body).unwrap();
    repo.write_cache("team/outputs/small.txt", "s\n");
    repo.run_ok(&["datastore", "sync", "--push", "-y"]);
    let key = "swamp/team/outputs/big.bin";
    let too_large = || {
        Rule::new(Fault::S3Error(
            400,
            "InvalidRequest",
            "The specified copy source is larger than the maximum allowable size for a copy source: 5368709120",
        ))
        .method("PUT")
        .target(&format!("/{}/{key}", to.name))
        .times(1)
    };
    let parts = [("SWAMP_COPY_PART_MIB", "5")];
    let setup = ["datastore", "setup", &to.spec(), "-y"];
    proxy.rule(too_large());
    killed_with(
        &repo,
        &setup,
        "multipart-part-recorded=2*off->return",
        &parts,
    );
    let recorded = records(&repo);
    assert_eq!(recorded.len(), 1, "the copy is recorded: {recorded:?}");
    let upload_id = recorded[0]["upload_id"].as_str().unwrap().to_string();
    assert_eq!(recorded[0]["parts"].as_array().unwrap().len(), 3);
    assert_eq!(recorded[0]["key"], key);
    let source = recorded[0]["source"].as_str().unwrap();
    assert!(
        source.starts_with(&format!("{}/{key}@", from.name)),
        "{source}"
    );
    assert!(
        to.get(key).is_none(),
        "nothing is visible before the complete"
    );
    assert!(!repo.config().contains(&to.name), "{}", repo.config());

    // The plan says what is left, from the record alone.
    let dry = repo.run_with(
        &["--json", "datastore", "setup", &to.spec(), "--dry-run"],
        &parts,
    );
    dry.expect(0);
    let plan = dry.json();
    let resumes = &plan["plan"]["resumes"];
    assert_eq!(resumes[0]["path"], "outputs/big.bin", "{plan:#}");
    assert_eq!(resumes[0]["transfer"], "copy", "{plan:#}");
    assert_eq!(resumes[0]["done"], 15 << 20, "{plan:#}");

    let held = parts_on_server(&to, key, &upload_id);
    assert!(held.len() >= 3 && held.len() < COPY_PARTS, "{held:?}");
    proxy.rule(too_large());
    let before = proxy.seen().len();
    repo.run_with(&setup, &parts).expect(0);
    let run: Vec<_> = proxy.seen().split_off(before);
    let count = |method: &str, parts: &[&str]| sent(&run, method, parts);
    assert_eq!(
        count("GET", &["uploadId=", &upload_id]),
        1,
        "one ListParts of the recorded copy"
    );
    assert_eq!(count("POST", &["uploads"]), 0, "no new upload is created");
    assert_eq!(
        count("PUT", &["partNumber=", &upload_id]),
        COPY_PARTS - 3,
        "only the parts not recorded are copied (the server held {held:?})"
    );
    assert_eq!(count("POST", &["uploadId=", &upload_id]), 1, "one complete");
    assert!(
        to.get(key).unwrap() == body,
        "the copy is the object byte for byte"
    );
    assert!(
        records(&repo).is_empty(),
        "the record goes once it completes"
    );
    assert_eq!(uploads_in_progress(&to), 0);
    assert!(repo.config().contains(&to.name), "{}", repo.config());
}

/// A GCS rewrite between locations takes a call per so many bytes, each
/// answering a token to continue from (emulated in the proxy: see
/// `support::gcs_rewrites`). Killed after two of four calls, the move's
/// rerun sends the last token it recorded and only the calls left.
#[test]
fn a_gcs_move_killed_mid_rewrite_continues_from_its_recorded_token() {
    const SIZE: usize = 3 << 20;
    const CALLS: usize = 4;
    let (from, proxy) = Bucket::behind_proxy(Backend::Gcs);
    let to = from.beside();
    let repo = Repo::init(&from, Some("team"));
    // The killed run's lock expires at once.
    repo.append_config("\n[lock]\nttl_secs = 1\n");
    let body = noise(SIZE, 13);
    std::fs::create_dir_all(repo.cache().join("team/outputs")).unwrap();
    std::fs::write(repo.cache().join("team/outputs/big.bin"), &body).unwrap();
    repo.run_ok(&["datastore", "sync", "--push", "-y"]);
    let key = "swamp/team/outputs/big.bin";
    proxy.rewrite_in_calls(CALLS);
    let setup = ["datastore", "setup", &to.spec(), "-y"];
    killed(&repo, &setup, "rewrite-token-recorded=1*off->return");
    let recorded = records(&repo);
    assert_eq!(recorded.len(), 1, "the rewrite is recorded: {recorded:?}");
    assert_eq!(recorded[0]["key"], key);
    let source = recorded[0]["source"].as_str().unwrap();
    assert!(
        source.starts_with(&format!("{}/{key}@", from.name)),
        "{source}"
    );
    assert_eq!(recorded[0]["rewritten"], SIZE / 2, "{recorded:?}");
    let token = recorded[0]["token"].as_str().unwrap().to_string();
    assert!(to.get(key).is_none(), "no object before the last call");
    assert!(!repo.config().contains(&to.name), "{}", repo.config());

    // The plan says what is left, from the record alone.
    let plan = repo.json(
        &["--json", "datastore", "setup", &to.spec(), "--dry-run"],
        0,
    );
    let resumes = &plan["plan"]["resumes"];
    assert_eq!(resumes[0]["path"], "outputs/big.bin", "{plan:#}");
    assert_eq!(resumes[0]["transfer"], "copy", "{plan:#}");
    assert_eq!(resumes[0]["done"], SIZE / 2, "{plan:#}");

    let before = proxy.seen().len();
    repo.run_ok(&setup);
    let run: Vec<_> = proxy.seen().split_off(before);
    let rewrites: Vec<&str> = run
        .iter()
        .filter(|s| s.method == "POST" && s.target.contains("/rewriteTo/"))
        .map(|s| s.target.as_str())
        .collect();
    assert_eq!(
        rewrites.len(),
        CALLS - 2,
        "only the calls its token had left: {rewrites:#?}"
    );
    assert!(
        rewrites[0].contains(&format!("rewriteToken={token}")),
        "the first continues the recorded token: {rewrites:#?}"
    );
    assert!(
        rewrites.iter().all(|t| t.contains("rewriteToken=")),
        "none starts over: {rewrites:#?}"
    );
    assert!(
        to.get(key).unwrap() == body,
        "the copy is the object byte for byte"
    );
    assert!(records(&repo).is_empty(), "the record goes once it is done");
    assert!(repo.config().contains(&to.name), "{}", repo.config());
}

/// A recorded token the server no longer knows (expired) starts the
/// rewrite over from byte 0; the move still finishes.
#[test]
fn a_gcs_rewrite_whose_token_expired_starts_over_and_finishes() {
    const CALLS: usize = 3;
    let (from, proxy) = Bucket::behind_proxy(Backend::Gcs);
    let to = from.beside();
    let repo = Repo::init(&from, Some("team"));
    repo.append_config("\n[lock]\nttl_secs = 1\n");
    let body = noise(1 << 20, 17);
    std::fs::create_dir_all(repo.cache().join("team/outputs")).unwrap();
    std::fs::write(repo.cache().join("team/outputs/big.bin"), &body).unwrap();
    repo.run_ok(&["datastore", "sync", "--push", "-y"]);
    let key = "swamp/team/outputs/big.bin";
    proxy.rewrite_in_calls(CALLS);
    let setup = ["datastore", "setup", &to.spec(), "-y"];
    killed(&repo, &setup, "rewrite-token-recorded=return");
    assert_eq!(records(&repo).len(), 1);
    // A token the server does not know, as once it expired.
    let mut record = records(&repo).remove(0);
    record["token"] = "rw-expired".into();
    let dir = std::fs::read_dir(repo.root.join(".swamp/state"))
        .unwrap()
        .flatten()
        .find(|d| d.file_name().to_string_lossy().starts_with("uploads-"))
        .unwrap()
        .path();
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    std::fs::write(&file, serde_json::to_vec(&record).unwrap()).unwrap();

    let before = proxy.seen().len();
    repo.run_ok(&setup);
    let run: Vec<_> = proxy.seen().split_off(before);
    let rewrites: Vec<&str> = run
        .iter()
        .filter(|s| s.method == "POST" && s.target.contains("/rewriteTo/"))
        .map(|s| s.target.as_str())
        .collect();
    assert_eq!(rewrites.len(), 1 + CALLS, "{rewrites:#?}");
    assert!(
        rewrites[0].contains("rewriteToken=rw-expired"),
        "{rewrites:#?}"
    );
    assert!(
        !rewrites[1].contains("rewriteToken="),
        "over from byte 0: {rewrites:#?}"
    );
    assert!(to.get(key).unwrap() == body);
    assert!(records(&repo).is_empty());
    assert!(repo.config().contains(&to.name), "{}", repo.config());
}

#[test]
fn a_file_changed_after_the_kill_aborts_the_old_upload_and_starts_over() {
    let (bucket, proxy, repo, mut body) = push_killed_after_three_parts();
    let old_id = records(&repo)[0]["upload_id"].as_str().unwrap().to_string();
    // Same size, other bytes (in the first part, which the server holds).
    body[0] ^= 0xff;
    std::fs::write(repo.cache().join("alpha/outputs/big.bin"), &body).unwrap();
    let plan = repo.json(&["plan", "--json"], 0);
    let aborts: Vec<_> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "abort-upload")
        .collect();
    assert_eq!(aborts.len(), 1, "{plan:#}");
    assert_eq!(aborts[0]["upload_id"], old_id.as_str());
    assert_eq!(aborts[0]["why"], "file-changed");
    assert!(plan.get("resumes").is_none(), "nothing resumes: {plan:#}");
    assert_eq!(plan["summary"]["abort_upload"], 1);

    let before = proxy.seen().len();
    repo.run_ok(&["datastore", "sync", "--push", "-y"]);
    let run: Vec<_> = proxy.seen().split_off(before);
    let count = |method: &str, parts: &[&str]| sent(&run, method, parts);
    assert_eq!(
        count("DELETE", &["uploadId=", &old_id]),
        1,
        "the old upload is aborted"
    );
    assert_eq!(count("GET", &["uploadId="]), 0, "nothing of it is listed");
    assert_eq!(count("POST", &["uploads"]), 1, "a new upload");
    assert_eq!(
        count("PUT", &["partNumber="]),
        PARTS,
        "all of it, from byte 0"
    );
    assert!(bucket.get(KEY).unwrap() == body);
    assert!(records(&repo).is_empty());
    assert_eq!(uploads_in_progress(&bucket), 0, "no upload left behind");
}

/// 40 MiB: large enough to land in a kept partial file.
const PULLED: usize = 40 << 20;

/// A pull of `repo`'s 40 MiB file by a clone, killed after 16 MiB landed.
fn pull_killed_part_way(backend: Backend) -> (Bucket, FaultProxy, Repo, Repo, Vec<u8>) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("alpha"));
    let body = noise(PULLED, 11);
    std::fs::create_dir_all(a.cache().join("alpha/outputs")).unwrap();
    std::fs::write(a.cache().join("alpha/outputs/big.bin"), &body).unwrap();
    a.run_ok(&["datastore", "sync", "--push", "-y"]);
    let b = a.clone_elsewhere();
    killed(
        &b,
        &["datastore", "sync", "--pull", "-y"],
        "download-partial=return(16777216)",
    );
    (bucket, proxy, a, b, body)
}

/// The partial downloads in `repo`'s cache: name and size.
fn partials(repo: &Repo) -> Vec<(String, u64)> {
    let dir = repo.cache().join(".swamp/partial");
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        e.metadata().unwrap().len(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The reads of the object's bytes (S3 GET of the key, GCS media
/// download), with the `Range` each asked for.
fn reads(proxy: &FaultProxy, since: usize) -> Vec<String> {
    proxy.seen()[since..]
        .iter()
        .filter(|s| s.method == "GET" && s.target.contains("big.bin"))
        .filter(|s| !s.target.contains("list-type") && !s.target.contains("prefix="))
        .filter(|s| !s.target.contains("/o/") || s.target.contains("alt=media"))
        .map(|s| s.range.clone())
        .collect()
}

fn a_pull_killed_part_way_resumes_with_a_ranged_read(backend: Backend) {
    let (_bucket, proxy, _a, b, body) = pull_killed_part_way(backend);
    let file = b.cache().join("alpha/outputs/big.bin");
    assert!(!file.exists(), "nothing partial at the file's path");
    let held = partials(&b);
    assert_eq!(held.len(), 1, "{held:?}");
    let done = held[0].1;
    assert!(done >= 16 << 20 && done < PULLED as u64, "{done}");

    let plan = b.json(&["plan", "--json"], 0);
    assert_eq!(plan["resumes"][0]["transfer"], "download");
    assert_eq!(plan["resumes"][0]["done"], done);
    let shown = b.run(&["plan"]);
    assert!(
        shown
            .stdout
            .contains("resume    outputs/big.bin (download, "),
        "{}",
        shown.stdout
    );

    let since = proxy.seen().len();
    b.run_ok(&["datastore", "sync", "--pull", "-y"]);
    assert_eq!(
        reads(&proxy, since),
        vec![format!("bytes={done}-")],
        "one read, of the rest only"
    );
    assert!(std::fs::read(&file).unwrap() == body, "the file is whole");
    assert!(partials(&b).is_empty(), "the partial file became the file");
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
}

fn an_object_replaced_after_the_kill_is_downloaded_whole(backend: Backend) {
    let (_bucket, proxy, a, b, mut body) = pull_killed_part_way(backend);
    assert_eq!(partials(&b).len(), 1);
    // Same size, other bytes where the partial file already has them.
    body[0] ^= 0xff;
    std::fs::write(a.cache().join("alpha/outputs/big.bin"), &body).unwrap();
    a.run_ok(&["datastore", "sync", "--push", "-y"]);

    let plan = b.json(&["plan", "--json"], 0);
    assert!(plan.get("resumes").is_none(), "nothing resumes: {plan:#}");
    let since = proxy.seen().len();
    b.run_ok(&["datastore", "sync", "--pull", "-y"]);
    assert_eq!(
        reads(&proxy, since),
        vec!["bytes=0-".to_string()],
        "read whole, from byte 0"
    );
    let file = b.cache().join("alpha/outputs/big.bin");
    assert!(
        std::fs::read(&file).unwrap() == body,
        "the new object, never spliced onto the old one's bytes"
    );
    assert!(partials(&b).is_empty(), "the old version's partial is gone");
}

fn a_server_that_ignores_ranges_gets_the_object_read_whole(backend: Backend) {
    let (_bucket, proxy, _a, b, body) = pull_killed_part_way(backend);
    let held = partials(&b);
    assert_eq!(held.len(), 1, "{held:?}");
    let done = held[0].1;
    // As through a gateway that drops the header: whole objects come back.
    proxy.rule(
        Rule::new(Fault::IgnoreRange)
            .method("GET")
            .target("big.bin"),
    );
    let since = proxy.seen().len();
    b.run_ok(&["datastore", "sync", "--pull", "-y"]);
    let asked = reads(&proxy, since);
    assert_eq!(
        asked.len(),
        2,
        "the rest asked for, then the whole: {asked:?}"
    );
    assert_eq!(asked[0], format!("bytes={done}-"));
    assert!(
        ["", "bytes=0-"].contains(&asked[1].as_str()),
        "the whole: {asked:?}"
    );
    assert!(
        proxy.fired() >= 2,
        "both reached the server without a range"
    );
    let file = b.cache().join("alpha/outputs/big.bin");
    assert!(
        std::fs::read(&file).unwrap() == body,
        "the object whole, never spliced onto the partial file"
    );
    assert!(partials(&b).is_empty(), "the partial file is gone");
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
}

mod s3 {
    use super::*;

    #[test]
    fn a_pull_killed_part_way_resumes_with_a_ranged_read() {
        super::a_pull_killed_part_way_resumes_with_a_ranged_read(Backend::S3);
    }

    #[test]
    fn an_object_replaced_after_the_kill_is_downloaded_whole() {
        super::an_object_replaced_after_the_kill_is_downloaded_whole(Backend::S3);
    }

    #[test]
    fn a_server_that_ignores_ranges_gets_the_object_read_whole() {
        super::a_server_that_ignores_ranges_gets_the_object_read_whole(Backend::S3);
    }

    #[test]
    fn a_partial_of_a_deleted_object_is_removed_by_the_next_pull() {
        super::a_partial_of_a_deleted_object_is_removed_by_the_next_pull(Backend::S3);
    }
}

mod gcs {
    use super::*;

    #[test]
    fn a_pull_killed_part_way_resumes_with_a_ranged_read() {
        super::a_pull_killed_part_way_resumes_with_a_ranged_read(Backend::Gcs);
    }

    #[test]
    fn an_object_replaced_after_the_kill_is_downloaded_whole() {
        super::an_object_replaced_after_the_kill_is_downloaded_whole(Backend::Gcs);
    }

    #[test]
    fn a_server_that_ignores_ranges_gets_the_object_read_whole() {
        super::a_server_that_ignores_ranges_gets_the_object_read_whole(Backend::Gcs);
    }

    #[test]
    fn a_partial_of_a_deleted_object_is_removed_by_the_next_pull() {
        super::a_partial_of_a_deleted_object_is_removed_by_the_next_pull(Backend::Gcs);
    }
}

/// A partial file cut behind the download's back between two chunks (as
/// a second process writing the same partial once did): the bytes
/// streamed still hash right, but the file is short, and that is caught
/// before it is renamed into the cache. The download is read again, once,
/// and the file lands whole; nothing with a hole is ever seen at its path
/// (without the check it landed with zeros where the cut bytes had
/// been, and the pull exited 0).
#[test]
fn a_partial_cut_between_chunks_is_caught_before_the_rename() {
    let bucket = Bucket::new(Backend::S3);
    let a = Repo::init(&bucket, Some("alpha"));
    let body = noise(PULLED, 13);
    std::fs::create_dir_all(a.cache().join("alpha/outputs")).unwrap();
    std::fs::write(a.cache().join("alpha/outputs/big.bin"), &body).unwrap();
    a.run_ok(&["datastore", "sync", "--push", "-y"]);
    let b = a.clone_elsewhere();
    let pull = b.run_with(
        &["datastore", "sync", "--pull", "-y"],
        &[("FAILPOINTS", "partial-cut=1*return")],
    );
    pull.expect(0);
    let file = b.cache().join("alpha/outputs/big.bin");
    assert!(std::fs::read(&file).unwrap() == body, "the file is whole");
    assert!(partials(&b).is_empty(), "{:?}", partials(&b));
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// A partial download of an object deleted since is removed by the next
/// pull, through a planned `remove-partial` action (it was kept forever,
/// 16 MiB or more each).
fn a_partial_of_a_deleted_object_is_removed_by_the_next_pull(backend: Backend) {
    let (_bucket, _proxy, a, b, _body) = pull_killed_part_way(backend);
    assert_eq!(partials(&b).len(), 1);
    // Other files stay, so the delete passes the delete guards.
    for i in 0..3 {
        a.write_cache(&format!("alpha/outputs/small{i}.txt"), "small\n");
    }
    a.run_ok(&["datastore", "sync", "-y"]);
    std::fs::remove_file(a.cache().join("alpha/outputs/big.bin")).unwrap();
    let deleted = a.run(&["datastore", "sync", "-y"]);
    deleted.expect(0);

    let plan = b.json(&["--json", "plan"], 0);
    let kinds = crate::support::action_kinds(&plan);
    assert!(kinds.contains(&"remove-partial"), "{kinds:?}");
    assert!(plan.get("resumes").is_none(), "{plan:#}");
    let shown = b.run(&["plan"]).stdout;
    assert!(shown.contains("1 partial download(s) to remove"), "{shown}");
    b.run_ok(&["datastore", "sync", "--pull", "-y"]);
    assert!(partials(&b).is_empty(), "{:?}", partials(&b));
    b.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// A partial download untouched for a week is removed by the next plan,
/// even of an object still listed: the pull reads it whole again.
#[test]
fn a_partial_untouched_for_a_week_is_removed_and_read_whole_again() {
    let (_bucket, proxy, _a, b, body) = pull_killed_part_way(Backend::S3);
    assert_eq!(partials(&b).len(), 1);
    // Eight days on, by the clock of a test build.
    let week_on = (8 * 24 * 3600).to_string();
    let plan = b.run_with(&["--json", "plan"], &[("SWAMP_CLOCK_SKEW", &week_on)]);
    plan.expect(0);
    let plan = plan.json();
    let removed: Vec<_> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "remove-partial")
        .collect();
    assert_eq!(removed.len(), 1, "{plan:#}");
    assert_eq!(removed[0]["why"], "aged");
    assert!(plan.get("resumes").is_none(), "not resumed: {plan:#}");
    let since = proxy.seen().len();
    b.run_with(
        &["datastore", "sync", "--pull", "-y"],
        &[("SWAMP_CLOCK_SKEW", &week_on)],
    )
    .expect(0);
    assert_eq!(reads(&proxy, since), vec!["bytes=0-".to_string()], "whole");
    let file = b.cache().join("alpha/outputs/big.bin");
    assert!(std::fs::read(&file).unwrap() == body);
    assert!(partials(&b).is_empty());
}

/// `doctor datastores` reports what interrupted transfers left on this
/// machine: a partial download in the cache (which the next sync resumes
/// or removes), and a temp file an interrupted write left in a directory
/// bucket, which no listing shows; a warning, naming the fix.
#[test]
fn doctor_reports_partial_downloads_and_temp_files_in_a_directory_bucket() {
    let bucket = Bucket::new(Backend::Fs);
    let a = Repo::init(&bucket, Some("alpha"));
    a.write_cache("alpha/outputs/report.txt", "one\n");
    a.run_ok(&["datastore", "sync", "-y"]);
    let clean = a.json(&["--json", "doctor", "datastores"], 0);
    let finding = |doc: &serde_json::Value| {
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "leftovers")
            .cloned()
            .unwrap_or_else(|| panic!("no leftovers check: {doc:#}"))
    };
    assert_eq!(finding(&clean)["status"], "pass", "{clean:#}");

    let partial = a.cache().join(".swamp/partial");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::write(
        partial.join("0123456789abcdef-0123456789abcdef.part"),
        vec![0u8; 1 << 20],
    )
    .unwrap();
    let temp = bucket
        .fs_root()
        .join("bucket/swamp/alpha/outputs/.swamp-tmp-4242-abc");
    std::fs::write(&temp, "half a write").unwrap();
    let found = a.json(&["--json", "doctor", "datastores"], 0);
    let f = finding(&found);
    assert_eq!(f["status"], "warn", "{f:#}");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("1 partial download(s) (1.0 MiB)"),
        "{message}"
    );
    assert!(message.contains("1 temp file(s)"), "{message}");
    assert!(
        f["fix"].as_str().unwrap().contains("swamp datastore sync"),
        "{f:#}"
    );
}

/// A push interrupted in a directory bucket leaves a temp file that no
/// listing shows. Untouched for a day, the next sync removes it by a
/// planned action (`remove-temp`, `remote: true`, counted as a request);
/// a younger one, which a writer on another machine sharing the directory
/// may still be writing, is left alone; then the plan is converged.
#[test]
fn a_temp_file_an_interrupted_push_left_in_a_directory_bucket_is_removed_once_a_day_old() {
    let bucket = Bucket::new(Backend::Fs);
    let a = Repo::init(&bucket, Some("alpha"));
    a.write_cache("alpha/outputs/report.txt", "one\n");
    a.run_ok(&["datastore", "sync", "-y"]);
    let dir = bucket.fs_root().join("bucket/swamp/alpha/outputs");
    let old = dir.join(".swamp-tmp-4242.1-abc");
    let young = dir.join(".swamp-tmp-4243.1-def");
    std::fs::write(&old, "half a write").unwrap();
    std::fs::write(&young, "still writing").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86400))
        .unwrap();

    let plan = a.json(&["--json", "plan", "--scope", "sync"], 0);
    let removals: Vec<_> = plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "remove-temp")
        .collect();
    assert_eq!(removals.len(), 1, "{plan:#}");
    assert_eq!(removals[0]["path"], "outputs/.swamp-tmp-4242.1-abc");
    assert_eq!(removals[0]["remote"], true);
    let applied = a.json(&["--json", "datastore", "sync", "-y"], 0);
    assert_eq!(
        applied["applied"]["requests_sent"]["delete"],
        applied["plan"]["summary"]["requests"]["delete"],
        "{applied:#}"
    );
    assert!(!old.exists(), "the day-old temp file is removed");
    assert!(young.exists(), "a younger one is left to its writer");
    a.run(&["plan", "--scope", "sync", "--detailed-exitcode"])
        .expect(0);
}

/// A server whose ListParts repeats the marker it was asked from (here, a
/// proxy that always says "truncated, next: part 1"): the resumed push
/// stops listing when the marker comes back, sends what it could not see
/// as held again, and completes. (It listed forever.)
#[test]
fn a_part_listing_that_repeats_its_marker_ends_and_the_upload_completes() {
    let (bucket, proxy, repo, body) = push_killed_after_three_parts();
    proxy.rule(
        Rule::new(Fault::RepeatPartMarker)
            .method("GET")
            .target("uploadId="),
    );
    let before = proxy.seen().len();
    let mut push = repo.spawn(&["datastore", "sync", "--push", "-y"], &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = push.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = push.kill();
            let lists = proxy.seen()[before..]
                .iter()
                .filter(|s| s.method == "GET" && s.target.contains("uploadId="))
                .count();
            panic!("the push never ended: {lists} part listings so far");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(status.success(), "{status}");
    let lists = proxy.seen()[before..]
        .iter()
        .filter(|s| s.method == "GET" && s.target.contains("uploadId="))
        .count();
    assert_eq!(lists, 2, "the first page, then the repeat that ends it");
    assert!(bucket.get(KEY).unwrap() == body, "the object is the file");
}

/// GCS uploads were one request for any size: a large upload cut near its
/// end started again from byte 0 (issue 43, item 2). A file of 40 MiB
/// now goes up in a resumable session of five 8 MiB chunks; killed after
/// the server acknowledged its third, the next push asks the session what
/// it holds and sends only the last two, opening no new session. The
/// session's URI (a capability) is in the clone's record only, never in
/// a plan. The session layer is the test proxy's (`gcs_sessions`), since
/// fake-gcs-server's is not faithful.
#[test]
fn a_gcs_upload_killed_after_its_third_chunk_sends_only_the_rest() {
    let (bucket, proxy) = Bucket::behind_proxy(Backend::Gcs);
    let repo = Repo::init(&bucket, Some("alpha"));
    let body = noise(40 << 20, 11);
    std::fs::create_dir_all(repo.cache().join("alpha/outputs")).unwrap();
    std::fs::write(repo.cache().join("alpha/outputs/big.bin"), &body).unwrap();
    killed(
        &repo,
        &["datastore", "sync", "--push", "-y"],
        "gcs-chunk-recorded=2*off->return",
    );
    let recorded = records(&repo);
    assert_eq!(recorded.len(), 1, "the session is recorded: {recorded:?}");
    assert_eq!(recorded[0]["parts"].as_array().unwrap().len(), 3);
    let session = recorded[0]["session"].as_str().unwrap().to_string();
    let secret = session.split("upload_id=").nth(1).unwrap().to_string();
    assert!(
        recorded[0]["upload_id"]
            .as_str()
            .unwrap()
            .starts_with("gcs-session-")
    );
    assert!(
        bucket.get(KEY).is_none(),
        "nothing is visible before the last chunk"
    );

    // The plan says what is left, and never the session's URI.
    let plan = repo.run(&["plan", "--json"]);
    plan.expect(0);
    assert_eq!(
        plan.json()["resumes"][0]["done"],
        24 << 20,
        "{}",
        plan.stdout
    );
    let saved = repo.root.join("plan.json");
    repo.run(&["plan", "-o", saved.to_str().unwrap()]).expect(0);
    let saved = std::fs::read_to_string(&saved).unwrap();
    assert!(!plan.stdout.contains(&secret) && !saved.contains(&secret));

    let before = proxy.seen().len();
    // The killed run's lock in the bucket is judged by its expiry (another
    // machine may hold one): the clock is moved past it, not waited out.
    let push = repo.run_with(
        &["datastore", "sync", "--push", "-y"],
        &[("SWAMP_CLOCK_SKEW", "120")],
    );
    push.expect(0);
    assert!(push.stdout.contains("(as estimated"), "{}", push.stdout);
    let run: Vec<_> = proxy.seen().split_off(before);
    let count = |method: &str, part: &str| sent(&run, method, &[part]);
    assert_eq!(count("POST", "uploadType=resumable"), 0, "no new session");
    assert_eq!(
        count("PUT", "upload_id="),
        3,
        "one status query, then only the two chunks the session lacked"
    );
    assert!(
        bucket.get(KEY).unwrap() == body,
        "the object is the file byte for byte"
    );
    assert!(
        records(&repo).is_empty(),
        "the record goes once it completes"
    );
    repo.run(&["plan", "--detailed-exitcode"]).expect(0);
}

/// A large GCS upload not interrupted: one session, five chunks, as the
/// plan estimated; and one whose file changed after the kill lets the old
/// session go and uploads the new content in a new one.
#[test]
fn a_gcs_upload_goes_in_chunks_as_estimated_and_a_changed_file_starts_a_new_session() {
    let (bucket, proxy) = Bucket::behind_proxy(Backend::Gcs);
    let repo = Repo::init(&bucket, Some("alpha"));
    let body = noise(40 << 20, 20);
    std::fs::create_dir_all(repo.cache().join("alpha/outputs")).unwrap();
    std::fs::write(repo.cache().join("alpha/outputs/big.bin"), &body).unwrap();
    let before = proxy.seen().len();
    let push = repo.run(&["datastore", "sync", "--push", "-y"]);
    push.expect(0);
    assert!(push.stdout.contains("(as estimated"), "{}", push.stdout);
    let run: Vec<_> = proxy.seen().split_off(before);
    let count = |method: &str, part: &str| sent(&run, method, &[part]);
    assert_eq!(count("POST", "uploadType=resumable"), 1, "one session");
    assert_eq!(count("PUT", "upload_id="), 5, "five chunks of 8 MiB");
    assert!(bucket.get(KEY).unwrap() == body);

    // Changed after a kill: the record names the old content. (Seeds
    // differ in more than their lowest bit: `noise` sets it.)
    let next = noise(40 << 20, 30);
    std::fs::write(repo.cache().join("alpha/outputs/big.bin"), &next).unwrap();
    killed(
        &repo,
        &["datastore", "sync", "--push", "-y"],
        "gcs-chunk-recorded=1*off->return",
    );
    let newer = noise(40 << 20, 40);
    std::fs::write(repo.cache().join("alpha/outputs/big.bin"), &newer).unwrap();
    let plan = repo.run_with(&["--detail", "plan"], &[("SWAMP_CLOCK_SKEW", "120")]);
    assert!(plan.stdout.contains("abort-upload"), "{}", plan.stdout);
    repo.run_with(
        &["datastore", "sync", "--push", "-y"],
        &[("SWAMP_CLOCK_SKEW", "120")],
    )
    .expect(0);
    assert!(bucket.get(KEY).unwrap() == newer, "the new content, whole");
    assert!(records(&repo).is_empty());
}

/// A recorded GCS session that cannot be continued starts over in a new
/// one, in the same run: one the server no longer has (expired), and one
/// whose recorded chunk the file no longer matches (the session holds
/// bytes the file does not: never completed with them).
#[test]
fn a_gcs_session_expired_or_holding_other_bytes_starts_over_in_a_new_one() {
    let (bucket, proxy) = Bucket::behind_proxy(Backend::Gcs);
    let repo = Repo::init(&bucket, Some("alpha"));
    let push = ["datastore", "sync", "--push", "-y"];
    let skew = [("SWAMP_CLOCK_SKEW", "120")];
    for (i, how) in ["expired", "other bytes"].iter().enumerate() {
        let body = noise(40 << 20, 100 + 20 * i as u64);
        std::fs::create_dir_all(repo.cache().join("alpha/outputs")).unwrap();
        std::fs::write(repo.cache().join("alpha/outputs/big.bin"), &body).unwrap();
        killed(&repo, &push, "gcs-chunk-recorded=1*off->return");
        match *how {
            "expired" => proxy.expire_sessions(),
            _ => {
                // The record says chunk 1 was other bytes than the file's.
                let dir = std::fs::read_dir(repo.root.join(".swamp/state"))
                    .unwrap()
                    .flatten()
                    .find(|d| d.file_name().to_string_lossy().starts_with("uploads-"))
                    .unwrap();
                let file = std::fs::read_dir(dir.path())
                    .unwrap()
                    .flatten()
                    .next()
                    .unwrap();
                let mut rec: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(file.path()).unwrap()).unwrap();
                rec["parts"][0]["md5"] = "00000000000000000000000000000000".into();
                std::fs::write(file.path(), serde_json::to_vec(&rec).unwrap()).unwrap();
            }
        }
        let before = proxy.seen().len();
        repo.run_with(&push, &skew).expect(0);
        let run: Vec<_> = proxy.seen().split_off(before);
        let opened = sent(&run, "POST", &["uploadType=resumable"]);
        assert_eq!(opened, 1, "{how}: a new session");
        assert!(bucket.get(KEY).unwrap() == body, "{how}: the file, whole");
        assert!(records(&repo).is_empty(), "{how}");
    }
}

/// A large object streamed from S3 into GCS (a move between providers)
/// and cut off after its third chunk: `.swamp.toml` still names S3, and
/// the same move again reads the object from S3 into its spool file once
/// more and sends GCS only the chunks the session lacks, in the same
/// session (issue 43).
#[test]
fn a_streamed_copy_killed_after_its_third_chunk_sends_only_the_rest() {
    let s3 = Bucket::new(Backend::S3);
    let (gcs, proxy) = Bucket::behind_proxy(Backend::Gcs);
    let mut env = s3.env();
    env.extend(gcs.env());
    let repo = Repo::empty(env);
    repo.run(&["init", "--datastore", &s3.spec(), "--namespace", "alpha"])
        .expect(0);
    let body = noise(40 << 20, 13);
    std::fs::create_dir_all(repo.cache().join("alpha/outputs")).unwrap();
    std::fs::write(repo.cache().join("alpha/outputs/big.bin"), &body).unwrap();
    repo.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let config = repo.config();

    let spec = gcs.spec();
    killed(
        &repo,
        &["datastore", "setup", &spec, "-y"],
        "gcs-chunk-recorded=2*off->return",
    );
    let recorded = records(&repo);
    assert_eq!(recorded.len(), 1, "the session is recorded: {recorded:?}");
    assert_eq!(recorded[0]["parts"].as_array().unwrap().len(), 3);
    assert_eq!(repo.config(), config, ".swamp.toml still names S3");
    assert!(gcs.get(KEY).is_none());

    let before = proxy.seen().len();
    let rerun = repo.run_with(
        &["datastore", "setup", &spec, "-y"],
        &[("SWAMP_CLOCK_SKEW", "120")],
    );
    rerun.expect(0);
    assert!(rerun.stdout.contains("resume"), "{}", rerun.stdout);
    let run: Vec<_> = proxy.seen().split_off(before);
    let count = |method: &str, part: &str| sent(&run, method, &[part]);
    assert_eq!(count("POST", "uploadType=resumable"), 0, "no new session");
    assert_eq!(
        count("PUT", "upload_id="),
        3,
        "one status query, then only the two chunks the session lacked"
    );
    assert!(gcs.get(KEY).unwrap() == body, "byte for byte");
    assert!(records(&repo).is_empty());
    assert!(repo.config().contains("gcs"), "{}", repo.config());
}
