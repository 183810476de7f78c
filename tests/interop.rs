//! Buckets other tools wrote: upstream swamp (the TypeScript tool this
//! project replaces), `aws s3 cp`, `gsutil`, the consoles. The same
//! scenarios on a directory object store, SeaweedFS (S3) and
//! fake-gcs-server (GCS); objects are written straight to the server, as
//! those tools write them (no swamp metadata).

mod support;

use support::bucket::{Backend, Bucket, Repo};

const UPSTREAM_ID: &str = "6f1c2a7e-3b7d-4e55-9c1a-0d6a1f2b3c4d";

/// `<prefix>/<ns>/.namespace.json` as upstream swamp writes it.
fn upstream_manifest(ns: &str) -> Vec<u8> {
    format!(
        "{{\"namespace\":\"{ns}\",\"repoId\":\"{UPSTREAM_ID}\",\"registeredAt\":\"2026-08-01T10:00:00.000Z\"}}\n"
    )
    .into_bytes()
}

/// A namespace upstream swamp registered and filled: its manifest, two data
/// files and an output, none with swamp's sha256 metadata.
fn upstream_bucket(backend: Backend) -> Bucket {
    let bucket = Bucket::new(backend);
    bucket.foreign_put("swamp/infra/.namespace.json", &upstream_manifest("infra"));
    bucket.foreign_put("swamp/infra/data/vm/web/state/1/raw", b"replicas: 1\n");
    bucket.foreign_put("swamp/infra/data/vm/web/state/2/raw", b"replicas: 2\n");
    bucket.foreign_put("swamp/infra/outputs/vm/deploy/web.yaml", b"ok: true\n");
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
    let repo = upstream_repo(&bucket);
    repo.run(&[
        "init",
        "--datastore",
        &bucket.spec(),
        "--namespace",
        "infra",
    ])
    .expect(0);
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

on_every_backend!(
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

on_object_servers!(folder_markers_and_unmanaged_keys_are_listed_and_never_touched);
