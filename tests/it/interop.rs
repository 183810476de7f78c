//! Buckets other tools wrote: upstream swamp (the TypeScript tool this
//! project replaces), `aws s3 cp`, `gsutil`, the consoles. The same
//! scenarios on a directory object store, SeaweedFS (S3) and
//! fake-gcs-server (GCS); objects are written straight to the server, as
//! those tools write them (no swamp metadata).

use crate::support::bucket::{Backend, Bucket, Repo};
use crate::support::faults::{Fault, FaultProxy, Rule};

const UPSTREAM_ID: &str = "6f1c2a7e-3b7d-4e55-9c1a-0d6a1f2b3c4d";

/// `<prefix>/<ns>/.namespace.json` as upstream swamp writes it.
fn upstream_manifest(ns: &str) -> Vec<u8> {
    format!(
        "{{\"namespace\":\"{ns}\",\"repoId\":\"{UPSTREAM_ID}\",\"registeredAt\":\"2026-08-01T10:00:00.000Z\"}}\n"
    )
    .into_bytes()
}

/// What upstream swamp left in its namespace: two data files and an
/// output (keys below `<prefix>/<ns>/`).
const UPSTREAM_FILES: [(&str, &str); 3] = [
    ("data/vm/web/state/1/raw", "replicas: 1\n"),
    ("data/vm/web/state/2/raw", "replicas: 2\n"),
    ("outputs/vm/deploy/web.yaml", "ok: true\n"),
];

/// The upstream repository, initialised on `bucket` in upstream's
/// namespace `infra` (its id kept from `.swamp.yaml`).
fn upstream_joined(bucket: &Bucket) -> Repo {
    let repo = upstream_repo(bucket);
    repo.run(&[
        "init",
        "--datastore",
        &bucket.spec(),
        "--namespace",
        "infra",
    ])
    .expect(0);
    repo
}

/// A namespace upstream swamp registered and filled: its manifest and
/// [`UPSTREAM_FILES`], none with swamp's sha256 metadata.
fn upstream_bucket(backend: Backend) -> Bucket {
    let bucket = Bucket::new(backend);
    bucket.foreign_put("swamp/infra/.namespace.json", &upstream_manifest("infra"));
    for (key, body) in UPSTREAM_FILES {
        bucket.foreign_put(&format!("swamp/infra/{key}"), body.as_bytes());
    }
    bucket
}

/// The upstream repository's directory: its `.swamp.yaml` names its id.
fn upstream_repo(bucket: &Bucket) -> Repo {
    let repo = Repo::empty(bucket.env());
    std::fs::write(
        repo.root.join(".swamp.yaml"),
        format!("swampVersion: \"20260801.0\"\nrepoId: \"{UPSTREAM_ID}\"\n"),
    )
    .unwrap();
    repo
}

/// Upstream's manifest spells its fields `repoId`/`registeredAt`: the
/// repository that registered the namespace joins it (its id kept from
/// `.swamp.yaml`), the manifest is left byte for byte, and the data pulls.
/// Any other repository is refused with the flag that would join it.
fn an_upstream_namespace_is_joined_by_the_repository_that_registered_it(backend: Backend) {
    let bucket = upstream_bucket(backend);
    let spec = bucket.spec();

    let stranger = Repo::empty(bucket.env());
    let run = stranger.run(&["init", "--datastore", &spec, "--namespace", "infra"]);
    run.expect(1);
    assert!(
        run.stderr.contains("registered to another repository")
            && run.stderr.contains(&format!("--repo-id {UPSTREAM_ID}")),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("not valid JSON"), "{}", run.stderr);

    let repo = upstream_repo(&bucket);
    let init = repo.run(&["init", "--datastore", &spec, "--namespace", "infra"]);
    init.expect(0);
    assert!(init.stdout.contains("Kept repo_id"), "{}", init.stdout);
    let toml = std::fs::read_to_string(repo.root.join(".swamp.toml")).unwrap();
    assert!(toml.contains(UPSTREAM_ID), "{toml}");

    repo.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(
        repo.run(&["data", "get", "vm/web/state"]).stdout,
        "replicas: 2\n"
    );
    repo.run(&["datastore", "sync", "-y"]).expect(0);
    repo.run(&["plan", "--scope", "sync", "--detailed-exitcode"])
        .expect(0);
    assert_eq!(
        bucket.get("swamp/infra/.namespace.json").unwrap(),
        upstream_manifest("infra"),
        "upstream's manifest is never rewritten"
    );
    let listed = repo.json(&["--json", "datastore", "namespaces"], 0);
    assert_eq!(listed["namespaces"][0]["namespace"], "infra");
    assert_eq!(listed["namespaces"][0]["repo_id"], UPSTREAM_ID);
    assert_eq!(listed["namespaces"][0]["is_current"], true);
}

/// A manifest neither tool wrote is named as unrecognised, and does not
/// stop `datastore namespaces` from listing the others.
fn namespaces_lists_what_it_can_read_and_names_what_it_cannot(backend: Backend) {
    let bucket = upstream_bucket(backend);
    bucket.foreign_put("swamp/junk/.namespace.json", b"<html>not a manifest</html>");
    let _mine = Repo::init(&bucket, Some("lab"));
    let repo = upstream_joined(&bucket);
    let listed = repo.json(&["--json", "datastore", "namespaces"], 0);
    let names: Vec<_> = listed["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["namespace"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["infra", "lab"]);
    assert_eq!(listed["unrecognised"][0]["namespace"], "junk");
    assert_eq!(
        listed["unrecognised"][0]["key"],
        "swamp/junk/.namespace.json"
    );
    let human = repo.run(&["datastore", "namespaces"]);
    human.expect(0);
    assert!(
        human
            .stdout
            .contains("swamp/junk/.namespace.json is unrecognised"),
        "{}",
        human.stdout
    );

    // Joining the unrecognised one names it so, and changes nothing.
    let other = Repo::empty(bucket.env());
    let run = other.run(&["init", "--datastore", &bucket.spec(), "--namespace", "junk"]);
    run.expect(1);
    assert!(
        run.stderr
            .contains("is unrecognised: neither swamp nor upstream swamp wrote it"),
        "{}",
        run.stderr
    );
    assert_eq!(
        bucket.get("swamp/junk/.namespace.json").unwrap(),
        b"<html>not a manifest</html>"
    );
}

/// Zero-byte "folder" keys (a console's "Create folder") and keys in no
/// tier are skipped, counted and listed; never synced, never deleted, and
/// they block nothing.
fn folder_markers_and_unmanaged_keys_are_listed_and_never_touched(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("lab"));
    a.put("m/x", "one\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let foreign = [
        ("swamp/lab/data/", &b""[..]),
        ("swamp/lab/data/m/", b""),
        ("swamp/lab/_index/data--m.json", b"{}"),
        ("swamp/lab/notes.txt", b"hello"),
    ];
    for (key, body) in foreign {
        bucket.foreign_put(key, body);
    }
    let before = bucket.versions();

    let plan = a.run(&["plan", "--scope", "sync", "--detailed-exitcode"]);
    plan.expect(0);
    assert!(
        plan.stdout.contains("skipped   2 folder marker(s)"),
        "{}",
        plan.stdout
    );
    assert!(
        plan.stdout.contains("swamp/lab/_index/ (1 object(s))")
            && plan.stdout.contains("swamp/lab/notes.txt (1 object(s))"),
        "{}",
        plan.stdout
    );
    let doc = a.json(&["--json", "plan", "--scope", "sync"], 0);
    assert_eq!(doc["summary"]["skipped"], 4, "{doc}");
    assert_eq!(doc["remote"]["folder_markers"], 2);
    assert_eq!(doc["remote"]["unmanaged"][0]["name"], "_index/");

    a.put("m/x", "two\n");
    a.run(&["datastore", "sync", "-y"]).expect(0);
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(b.run(&["data", "get", "m/x"]).stdout, "two\n");
    let ns = b.cache().join("lab");
    assert!(
        ns.join("data/m/x/2/raw").exists(),
        "the cache layout is as expected"
    );
    assert!(!ns.join("notes.txt").exists() && !ns.join("_index").exists());
    let after = bucket.versions();
    for (key, _) in foreign {
        assert_eq!(after.get(key), before.get(key), "{key} untouched");
    }
}

/// Upstream counts `logs` among the datastore directories: it syncs like
/// every other tier.
fn the_logs_tier_syncs_both_ways(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("lab"));
    a.write_cache("lab/logs/run-1.log", "started\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    assert_eq!(
        bucket.get("swamp/lab/logs/run-1.log").as_deref(),
        Some(&b"started\n"[..])
    );
    bucket.foreign_put("swamp/lab/logs/run-2.log", b"from upstream\n");
    a.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(
        std::fs::read(a.cache().join("lab/logs/run-2.log")).unwrap(),
        b"from upstream\n"
    );
}

/// Requests the proxy saw that read or wrote one of upstream's data
/// objects (all their names hold `vm`), listings aside.
fn object_requests(proxy: &FaultProxy) -> Vec<String> {
    proxy
        .seen()
        .into_iter()
        .filter(|s| s.target.contains("vm") && !s.target.contains("prefix="))
        .map(|s| format!("{} {}", s.method, s.target))
        .collect()
}

/// A bucket upstream swamp filled, joined by a clone whose cache already
/// holds the same files (copied by hand, or left from before its sync
/// base was lost): the server's MD5 of each object (S3 ETag, GCS md5Hash)
/// shows them identical, so the first sync only records them: no PUT, no
/// GET, no HEAD of any object, and no conflict.
fn identical_files_on_both_sides_converge_without_a_transfer(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    for (key, body) in UPSTREAM_FILES {
        bucket.foreign_put(&format!("swamp/infra/{key}"), body.as_bytes());
    }
    bucket.foreign_put("swamp/infra/.namespace.json", &upstream_manifest("infra"));
    let repo = upstream_joined(&bucket);
    for (key, body) in UPSTREAM_FILES {
        repo.write_cache(&format!("infra/{key}"), body);
    }
    // A file that differs is not mistaken for the same. (Not a data
    // version: two of those with one number are both kept, renumbered.)
    repo.write_cache("infra/outputs/vm/db.yaml", "mine\n");
    bucket.foreign_put("swamp/infra/outputs/vm/db.yaml", b"theirs\n");

    let before = bucket.versions();
    let sync = repo.json(&["--json", "datastore", "sync", "-y"], 3);
    let plan = &sync["plan"];
    assert_eq!(plan["summary"]["upload"], 0, "{sync}");
    assert_eq!(plan["summary"]["download"], 0, "{sync}");
    assert_eq!(plan["actions"][0]["kind"], "record-base", "{sync}");
    let recorded: Vec<_> = plan["actions"][0]["add"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap().to_string())
        .collect();
    let expected: Vec<_> = UPSTREAM_FILES.iter().map(|(k, _)| k.to_string()).collect();
    assert_eq!(recorded, expected, "{sync}");
    let conflicts: Vec<_> = plan["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(conflicts, ["outputs/vm/db.yaml"], "{sync}");
    let touched: Vec<_> = object_requests(&proxy)
        .into_iter()
        .filter(|r| !r.contains("db"))
        .collect();
    assert!(
        touched.is_empty(),
        "requests for identical objects: {touched:?}"
    );
    // swamp's own objects (`.swamp/`: its remote id, its lock) aside.
    let ours = |v: std::collections::BTreeMap<String, String>| {
        v.into_iter()
            .filter(|(k, _)| !k.contains("/.swamp/"))
            .collect::<Vec<_>>()
    };
    assert_eq!(ours(bucket.versions()), ours(before), "nothing rewritten");

    // Settled by hand, the next sync converges; the identical ones stay
    // recorded: still not one request for them.
    std::fs::write(repo.cache().join("infra/outputs/vm/db.yaml"), "theirs\n").unwrap();
    let requests = proxy.seen().len();
    repo.run(&["datastore", "sync", "-y"]).expect(0);
    repo.run(&["plan", "--scope", "sync", "--detailed-exitcode"])
        .expect(0);
    let later: Vec<_> = proxy.seen()[requests..]
        .iter()
        .filter(|s| s.target.contains("vm") && !s.target.contains("prefix="))
        .map(|s| format!("{} {}", s.method, s.target))
        .collect();
    assert!(later.is_empty(), "{later:?}");
}

/// An object `aws s3 cp` uploaded in parts has an ETag that is no MD5 of
/// its content (`<md5 of the parts' MD5s>-<parts>`): a cache file with the
/// same content is still recognised, by trying the part sizes uploaders
/// use (8 MiB here, the aws CLI's), and only recorded; one that differs in
/// a single byte is not.
fn an_aws_cli_multipart_object_is_recognised_by_its_composite_etag(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    bucket.foreign_put("swamp/infra/.namespace.json", &upstream_manifest("infra"));
    let mut body = vec![b'.'; (8 << 20) * 2 + 1234];
    body[7] = b'x';
    let etag = crate::support::servers::s3().multipart_put(
        &bucket.name,
        "swamp/infra/files/vm/image.bin",
        &body,
        8 << 20,
    );
    assert!(etag.ends_with("-3"), "{etag}");
    let mut other = body.clone();
    other[body.len() - 1] = b'!';
    crate::support::servers::s3().multipart_put(
        &bucket.name,
        "swamp/infra/files/vm/other.bin",
        &other,
        8 << 20,
    );
    let repo = upstream_joined(&bucket);
    let cache = repo.cache().join("infra/files/vm");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join("image.bin"), &body).unwrap();
    std::fs::write(cache.join("other.bin"), &body).unwrap();

    let doc = repo.json(&["--json", "datastore", "sync", "-y"], 3);
    let plan = &doc["plan"];
    assert_eq!(plan["actions"][0]["kind"], "record-base", "{doc}");
    assert_eq!(plan["actions"][0]["add"][0]["path"], "files/vm/image.bin");
    assert_eq!(plan["conflicts"][0]["path"], "files/vm/other.bin", "{doc}");
    let touched: Vec<_> = object_requests(&proxy)
        .into_iter()
        .filter(|r| r.contains("image.bin"))
        .collect();
    assert!(touched.is_empty(), "{touched:?}");
}

/// An object another tool wrote carries no sha256 metadata: its download
/// is checked against the MD5 the server gives, so a body damaged on the
/// way is refused and fetched again, never written as the file.
fn a_third_party_download_is_checked_against_the_servers_md5(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    bucket.foreign_put("swamp/infra/.namespace.json", &upstream_manifest("infra"));
    let body = "x".repeat(5000);
    bucket.foreign_put("swamp/infra/outputs/vm/big.txt", body.as_bytes());
    let repo = upstream_joined(&bucket);
    proxy.rule(
        Rule::new(Fault::Corrupt)
            .method("GET")
            .target("big.txt")
            .times(1),
    );
    repo.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(proxy.fired(), 1, "the damaged body was sent");
    assert_eq!(
        std::fs::read_to_string(repo.cache().join("infra/outputs/vm/big.txt")).unwrap(),
        body
    );
}

/// Upstream swamp's lock of the namespace (`<prefix>/.locks/<ns>.lock`)
/// is honoured as held: swamp waits, then exits 75 naming it, having
/// written nothing. Once stale by upstream's own rule (unwritten for longer
/// than its `ttlMs`) it no longer counts, and is left where it is.
fn upstream_swamps_lock_is_honoured_until_stale_by_its_own_rule(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("lab"));
    a.put("m/x", "one\n");
    let lock = br#"{"holder":"ada@vm","hostname":"vm","pid":42,"acquiredAt":"2026-12-02T07:00:00.000Z","ttlMs":1000,"nonce":"0b7c"}"#;
    bucket.foreign_put("swamp/.locks/lab.lock", lock);
    let run = a.run(&["--lock-timeout", "1s", "datastore", "sync", "--push", "-y"]);
    run.expect(75);
    assert!(
        run.stderr.contains("upstream swamp's lock")
            && run.stderr.contains("swamp/.locks/lab.lock")
            && run.stderr.contains("ada@vm (pid 42)"),
        "{}",
        run.stderr
    );
    assert_eq!(
        bucket.get("swamp/lab/data/m/x/1/raw"),
        None,
        "nothing pushed"
    );

    // Unrenewed past its TTL (1 s, and a second's grace): stale.
    std::thread::sleep(std::time::Duration::from_millis(3100));
    // Another namespace's upstream lock, fresh, is not ours to wait for.
    bucket.foreign_put(
        "swamp/.locks/other.lock",
        br#"{"holder":"bob@vm","pid":7,"ttlMs":60000}"#,
    );
    a.run(&["--lock-timeout", "1s", "datastore", "sync", "--push", "-y"])
        .expect(0);
    assert_eq!(
        bucket.get("swamp/lab/data/m/x/1/raw").as_deref(),
        Some(&b"one\n"[..])
    );
    assert_eq!(
        bucket.get("swamp/.locks/lab.lock").as_deref(),
        Some(&lock[..]),
        "upstream's lock is never removed by swamp"
    );
}

on_every_backend!(
    upstream_swamps_lock_is_honoured_until_stale_by_its_own_rule,
    an_upstream_namespace_is_joined_by_the_repository_that_registered_it,
    namespaces_lists_what_it_can_read_and_names_what_it_cannot,
    the_logs_tier_syncs_both_ways,
);

/// Scenarios whose keys a directory cannot hold as objects (a key ending
/// in `/`): the object servers only.
macro_rules! on_object_servers {
    ($($scenario:ident),* $(,)?) => {
        mod s3_only {
            $( #[test] fn $scenario() { super::$scenario(super::Backend::S3) } )*
        }
        mod gcs_only {
            $( #[test] fn $scenario() { super::$scenario(super::Backend::Gcs) } )*
        }
    };
}

/// Keys a filesystem cannot hold (a key that is a file and a prefix of
/// others; a name longer than 255 bytes) are conflicts at plan time naming
/// them: nothing is written, rather than some siblings before an OS error.
fn keys_the_cache_cannot_hold_are_conflicts_at_plan_time(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = Repo::init(&bucket, Some("lab"));
    a.put("m/y", "y\n");
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    // SeaweedFS refuses a name over 255 bytes itself (KeyTooLongError);
    // GCS takes one, as AWS S3 does.
    let long =
        (backend == Backend::Gcs).then(|| format!("swamp/lab/outputs/{}.yaml", "a".repeat(260)));
    let mut foreign = vec![
        "swamp/lab/data/m/x".to_string(),
        "swamp/lab/data/m/x/1/raw".to_string(),
    ];
    foreign.extend(long.clone());
    for key in &foreign {
        bucket.foreign_put(key, b"z\n");
    }
    let b = a.clone_elsewhere();
    let doc = b.json(&["--json", "datastore", "sync", "--pull", "-y"], 3);
    let conflicts: Vec<_> = doc["plan"]["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "unholdable")
        .map(|c| {
            (
                c["key"].as_str().unwrap().to_string(),
                c["other"].as_str().map(str::to_string),
            )
        })
        .collect();
    let mut expected = vec![(
        "swamp/lab/data/m/x".to_string(),
        Some("swamp/lab/data/m/x/1/raw".to_string()),
    )];
    expected.extend(long.map(|k| (k, None)));
    assert_eq!(conflicts, expected, "{doc}");
    let human = b.run(&["datastore", "sync", "--pull", "-y"]);
    human.expect(3);
    assert!(
        human
            .stdout
            .contains("cannot be held as a file in this cache")
            && human
                .stdout
                .contains("it clashes with swamp/lab/data/m/x/1/raw"),
        "{}",
        human.stdout
    );
    let written = crate::support::tree(&b.cache());
    assert!(
        written.keys().all(|k| !k.starts_with("lab/")),
        "{:?}",
        written.keys()
    );

    for key in &foreign {
        bucket.delete(key);
    }
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(b.run(&["data", "get", "m/y"]).stdout, "y\n");
}

/// `body` gzip-compressed, as `gsutil cp -Z` uploads it (stored blocks:
/// the test's bodies are random, and this is quick in a debug build).
fn gzipped(body: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    gz.write_all(body).unwrap();
    gz.finish().unwrap()
}

/// An object stored gzip-compressed (`Content-Encoding: gzip`), large
/// enough that it would be read through a partial file: GCS serves it
/// decompressed unless asked for it as stored, and then neither its
/// stored size nor its hashes can check the bytes. It is read as stored
/// in one request, checked against the listing's MD5, decoded into the
/// cache; a body damaged on the way is refused and read again, never
/// written as the file; and it stays converged.
fn a_large_gzip_encoded_gcs_object_arrives_decoded_checked_and_stays_converged(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    bucket.foreign_put("swamp/infra/.namespace.json", &upstream_manifest("infra"));
    let text = random_bytes(17 << 20);
    let stored = gzipped(&text);
    assert!(
        stored.len() >= 16 << 20,
        "stored as large as a resumable read"
    );
    crate::support::servers::gcs().upload(
        &bucket.name,
        &serde_json::json!({
            "name": "swamp/infra/logs/run.log",
            "contentEncoding": "gzip",
            "contentType": "application/octet-stream",
        }),
        &stored,
    );
    let repo = upstream_joined(&bucket);
    let plan = repo.json(&["--json", "plan", "--scope", "sync"], 0);
    let download = &plan["actions"][0];
    assert_eq!(download["kind"], "download", "{plan}");
    assert_eq!(download["content_encoding"], "gzip", "{download}");
    assert!(download["md5"].is_string(), "{download}");
    proxy.rule(
        Rule::new(Fault::Corrupt)
            .method("GET")
            .target("run.log")
            .times(1),
    );
    repo.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert_eq!(proxy.fired(), 1, "the damaged body was sent");
    assert!(
        std::fs::read(repo.cache().join("infra/logs/run.log")).unwrap() == text,
        "the cache holds the object decoded"
    );
    let reads: Vec<String> = proxy
        .seen()
        .iter()
        .filter(|s| s.target.contains("run.log"))
        .map(|s| format!("{} [{}]", s.line(), s.class()))
        .collect();
    assert_eq!(
        reads.len(),
        2,
        "the damaged read and one more, no metadata read, no range: {reads:?}"
    );
    assert!(reads.iter().all(|r| r.ends_with("[get]")), "{reads:?}");
    repo.run(&["datastore", "sync", "-y"]).expect(0);
    repo.run(&["plan", "--scope", "sync", "--detailed-exitcode"])
        .expect(0);
}

/// `n` bytes no compressor shrinks (a fixed seed: the same every run).
fn random_bytes(n: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Files another tool wrote carry no sha256 metadata; the listing gives
/// each one's generation, MD5 and CRC32C. A pull of N such files is N
/// media requests (each pinned to the generation listed, checked against
/// the listing's hashes) besides the listing: no metadata read first.
fn a_gcs_pull_of_files_another_tool_wrote_sends_one_media_request_each(backend: Backend) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    bucket.foreign_put("swamp/infra/.namespace.json", &upstream_manifest("infra"));
    let names: Vec<String> = (0..7).map(|i| format!("outputs/vm/peer-{i}.txt")).collect();
    for (i, name) in names.iter().enumerate() {
        bucket.foreign_put(
            &format!("swamp/infra/{name}"),
            format!("peer {i}\n").as_bytes(),
        );
    }
    let repo = upstream_joined(&bucket);
    let before = proxy.seen().len();
    repo.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    let peer: Vec<(String, &str)> = proxy.seen()[before..]
        .iter()
        .filter(|s| s.target.contains("peer-"))
        .map(|s| (s.line(), s.class()))
        .collect();
    let media = peer.iter().filter(|(_, c)| *c == "get").count();
    assert_eq!(media, names.len(), "one media request per file: {peer:#?}");
    assert_eq!(peer.len(), names.len(), "nothing else per file: {peer:#?}");
    assert!(
        peer.iter().all(|(l, _)| l.contains("generation=")),
        "each pinned to the generation listed: {peer:#?}"
    );
    for (i, name) in names.iter().enumerate() {
        assert_eq!(
            std::fs::read_to_string(repo.cache().join("infra").join(name)).unwrap(),
            format!("peer {i}\n")
        );
    }
}

/// Large objects another tool wrote to S3 (no sha256 metadata; one put
/// whole, one put in parts as `aws s3 cp` does) are read through a partial
/// file like swamp's own: one GET each, checked against the ETag they
/// were listed at (the MD5, or the MD5 of the parts' MD5s), never a
/// second whole read; a body damaged on the way is refused, never
/// written as the file, and the next run reads it again.
fn large_objects_another_tool_wrote_to_s3_are_read_once_and_checked_by_their_etag(
    backend: Backend,
) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    bucket.foreign_put("swamp/infra/.namespace.json", &upstream_manifest("infra"));
    let whole = random_bytes(17 << 20);
    bucket.foreign_put("swamp/infra/files/vm/whole.bin", &whole);
    let mut parted = random_bytes(17 << 20);
    parted.reverse();
    let etag = crate::support::servers::s3().multipart_put(
        &bucket.name,
        "swamp/infra/files/vm/parted.bin",
        &parted,
        8 << 20,
    );
    assert!(etag.ends_with("-3"), "{etag}");
    let repo = upstream_joined(&bucket);
    let before = proxy.seen().len();
    repo.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    for name in ["whole.bin", "parted.bin"] {
        let gets = proxy.seen()[before..]
            .iter()
            .filter(|s| s.method == "GET" && s.target.contains(name))
            .count();
        assert_eq!(gets, 1, "{name}: one read");
    }
    let cache = repo.cache().join("infra/files/vm");
    assert!(std::fs::read(cache.join("whole.bin")).unwrap() == whole);
    assert!(std::fs::read(cache.join("parted.bin")).unwrap() == parted);

    // Damaged on the way: refused, nothing written; the next run reads
    // it whole again.
    let b = upstream_joined(&bucket);
    proxy.rule(
        Rule::new(Fault::Corrupt)
            .method("GET")
            .target("parted.bin")
            .times(1),
    );
    let damaged = b.run(&["datastore", "sync", "--pull", "-y"]);
    damaged.expect(1);
    assert_eq!(proxy.fired(), 1, "the damaged body was sent");
    assert!(
        damaged.stderr.contains("multipart etag"),
        "{}",
        damaged.stderr
    );
    let landed = b.cache().join("infra/files/vm/parted.bin");
    assert!(!landed.exists(), "nothing written as the file");
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    assert!(std::fs::read(&landed).unwrap() == parted);
}

/// The clone's record of what it read of the remote (and what the
/// server enforces): `.swamp/state/remote-seen-<hash>.json`.
fn remote_seen(repo: &Repo) -> std::path::PathBuf {
    fn find(dir: &std::path::Path) -> Option<std::path::PathBuf> {
        for e in std::fs::read_dir(dir).ok()?.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("remote-seen-") && name.ends_with(".json") {
                return Some(p);
            }
            if e.file_type().is_ok_and(|t| t.is_dir())
                && let Some(found) = find(&p)
            {
                return Some(found);
            }
        }
        None
    }
    find(&repo.root)
        .or_else(|| find(&repo.home))
        .expect("a remote-seen record")
}

/// fake-gcs-server ignores `ifGenerationMatch` on delete and copy; real
/// GCS enforces it. A writer's first run finds out with a probe (scratch
/// objects under the namespace's `.swamp/`, removed after), kept in the
/// clone's state, so later runs do not probe again; here it finds neither
/// enforced: the plan says each delete and copy reads the object's version
/// first (and counts those reads), and `doctor` says so. Told instead that
/// the server enforces both (what a probe of real GCS records), a
/// conditional delete is the one request carrying the condition, with no
/// metadata read first.
fn gcs_preconditions_are_probed_once_per_remote_and_relied_on_only_where_enforced(
    backend: Backend,
) {
    let (bucket, proxy) = Bucket::behind_proxy(backend);
    let a = Repo::init(&bucket, Some("lab"));
    for name in ["m/x", "m/y", "m/z"] {
        a.put(name, &format!("{name}\n"));
    }
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let probe = |from: usize| {
        proxy.seen()[from..]
            .iter()
            .filter(|s| s.target.contains("probe-"))
            .count()
    };
    // (Uploads name their object in the body; deletes and copies in the URL.)
    assert!(probe(0) >= 3, "a first writer's run probes the server");
    assert!(
        bucket.contents().keys().all(|k| !k.contains("probe-")),
        "the probe's objects are removed"
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(remote_seen(&a)).unwrap()).unwrap();
    assert_eq!(record["enforced"]["delete"], false, "{record}");
    assert_eq!(record["enforced"]["copy"], false, "{record}");
    let doctor = a.run(&["doctor", "datastores"]);
    assert!(
        doctor.stdout.contains("does not enforce preconditions"),
        "{}",
        doctor.stdout
    );

    // Not enforced: a delete reads the version first, as the plan says.
    std::fs::remove_file(a.cache().join("lab/data/m/x/1/raw")).ok();
    a.run(&["data", "rm", "m/x"]).expect(0);
    let before = proxy.seen().len();
    let plan = a.json(&["--json", "plan", "--scope", "sync"], 0);
    assert_eq!(
        plan["remote"]["prechecked"],
        serde_json::json!(["delete", "copy"]),
        "{plan}"
    );
    let applied = a.json(&["--json", "datastore", "sync", "--push", "-y"], 0);
    assert_eq!(probe(before), 0, "probed once per remote id");
    let sent = &applied["applied"]["requests_sent"];
    let estimated = &applied["plan"]["summary"]["requests"];
    for class in ["get", "put", "copy", "delete", "head"] {
        assert_eq!(sent[class], estimated[class], "{class}: {applied}");
    }
    assert!(sent["head"].as_u64().unwrap() > 0, "{applied}");

    // Enforced (as real GCS records): no read before the delete.
    let mut record = record;
    record["enforced"]["delete"] = true.into();
    record["enforced"]["copy"] = true.into();
    std::fs::write(remote_seen(&a), record.to_string()).unwrap();
    a.run(&["data", "rm", "m/y"]).expect(0);
    let plan = a.json(&["--json", "plan", "--scope", "sync"], 0);
    assert!(plan["remote"].get("prechecked").is_none(), "{plan}");
    let before = proxy.seen().len();
    let applied = a.json(&["--json", "datastore", "sync", "--push", "-y"], 0);
    let on_y: Vec<String> = proxy.seen()[before..]
        .iter()
        .filter(|s| s.target.contains("%2Fy%2F") || s.target.contains("/y/"))
        .map(|s| format!("{} [{}]", s.line(), s.class()))
        .collect();
    assert!(
        on_y.iter().all(|l| !l.ends_with("[head]")),
        "no metadata read of the object deleted: {on_y:#?}"
    );
    let sent = &applied["applied"]["requests_sent"];
    assert_eq!(sent["head"], 0, "{applied}");
    assert_eq!(sent, &applied["plan"]["summary"]["requests"], "{applied}");
    assert!(bucket.get("swamp/lab/data/m/y/1/raw").is_none());
}

/// The sha256 of a file, streamed (a 6 GiB file is never held whole).
fn sha256_of_file(path: &std::path::Path) -> String {
    use sha2::Digest;
    use std::io::Read;
    let mut f = std::fs::File::open(path).unwrap();
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    hex::encode(h.finalize())
}

/// A file over S3's 5 GiB single-request limit (sparse, with bytes at its
/// start, middle and end) pushes in parts, completed under the plan's
/// precondition, and a clone reads it back verified.
fn a_file_over_5_gib_pushes_in_parts_and_reads_back_verified(size: u64) {
    let bucket = Bucket::new(Backend::S3);
    let a = Repo::init(&bucket, None);
    let path = a.cache().join("files/big.bin");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::File::create(&path).unwrap();
        f.set_len(size).unwrap();
        for (at, text) in [(0, "head"), (size / 2, "middle"), (size - 4, "tail")] {
            f.seek(SeekFrom::Start(at)).unwrap();
            f.write_all(text.as_bytes()).unwrap();
        }
    }
    let want = sha256_of_file(&path);
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let versions = bucket.versions();
    let etag = &versions["swamp/files/big.bin"];
    let parts = size.div_ceil(8 << 20);
    assert!(
        etag.ends_with(&format!("-{parts}")),
        "a multipart ETag: {etag}"
    );
    a.run(&["plan", "--scope", "sync", "--detailed-exitcode"])
        .expect(0);

    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    let got = b.cache().join("files/big.bin");
    assert_eq!(std::fs::metadata(&got).unwrap().len(), size);
    assert_eq!(sha256_of_file(&got), want);
    // Freed at once: these are large.
    std::fs::remove_file(&got).unwrap();
    std::fs::remove_file(&path).unwrap();
}

mod s3_multipart {
    #[test]
    fn a_file_over_5_gib_pushes_in_parts_and_reads_back_verified() {
        let size = std::env::var("SWAMP_TEST_BIG_FILE_BYTES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(6u64 << 30);
        super::a_file_over_5_gib_pushes_in_parts_and_reads_back_verified(size)
    }
}

mod gcs_reads {
    #[test]
    fn a_large_gzip_encoded_gcs_object_arrives_decoded_checked_and_stays_converged() {
        super::a_large_gzip_encoded_gcs_object_arrives_decoded_checked_and_stays_converged(
            super::Backend::Gcs,
        )
    }

    #[test]
    fn gcs_preconditions_are_probed_once_per_remote_and_relied_on_only_where_enforced() {
        super::gcs_preconditions_are_probed_once_per_remote_and_relied_on_only_where_enforced(
            super::Backend::Gcs,
        )
    }

    #[test]
    fn a_gcs_pull_of_files_another_tool_wrote_sends_one_media_request_each() {
        super::a_gcs_pull_of_files_another_tool_wrote_sends_one_media_request_each(
            super::Backend::Gcs,
        )
    }
}

// A directory store keeps no MD5: identity there needs swamp's sha256.
on_object_servers!(
    keys_the_cache_cannot_hold_are_conflicts_at_plan_time,
    folder_markers_and_unmanaged_keys_are_listed_and_never_touched,
    identical_files_on_both_sides_converge_without_a_transfer,
    a_third_party_download_is_checked_against_the_servers_md5,
);

mod s3_multipart_etag {
    #[test]
    fn an_aws_cli_multipart_object_is_recognised_by_its_composite_etag() {
        super::an_aws_cli_multipart_object_is_recognised_by_its_composite_etag(super::Backend::S3)
    }

    #[test]
    fn large_objects_another_tool_wrote_to_s3_are_read_once_and_checked_by_their_etag() {
        super::large_objects_another_tool_wrote_to_s3_are_read_once_and_checked_by_their_etag(
            super::Backend::S3,
        )
    }
}
