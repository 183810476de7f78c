//! `swamp datastore config migrate` against real object servers (SeaweedFS
//! for S3, fake-gcs-server for GCS), the real binary in temp dirs, and
//! "another machine" as another `SWAMP_HOME` with a copy of `.swamp.toml`.
//!
//! The outage scenarios put a TCP forwarder of their own in front of the
//! shared server and stop it (connection refused), so the shared server is
//! never paused under the other tests of this binary.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::bucket::{Backend, Bucket, Repo, sha};
use crate::support::servers;
use crate::support::tree as files;

const SENTINEL: &str = "swamp/config/managed-config-migrated.json";
const UNPUBLISHED: &str = "The migration is saved locally but was not published to the datastore";

/// The shared server's address (the forwarders' upstream).
fn addr(backend: Backend) -> &'static str {
    match backend {
        Backend::S3 => servers::s3().addr(),
        Backend::Gcs => servers::gcs().addr(),
        Backend::Fs => unreachable!("config migrate runs against servers"),
    }
}

/// The datastore spec for `bucket` (prefix `swamp`) reached at `endpoint`
/// (the server itself, or a forwarder in front of it).
fn spec(bucket: &Bucket, endpoint: &str) -> String {
    let name = &bucket.name;
    match bucket.backend {
        Backend::S3 => format!("s3://{name}/swamp?region=us-east-1&endpoint={endpoint}"),
        Backend::Gcs => format!("gs://{name}/swamp?endpoint={endpoint}"),
        Backend::Fs => unreachable!("config migrate runs against servers"),
    }
}

// ---------------------------------------------------------------------------
// A forwarder in front of the real server that can be stopped and started.

/// How the forwarder goes down.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trip {
    /// Only when [`Forwarder::stop`] is called.
    Manual,
    /// By itself, at the first upload it sees (S3 `PUT`, GCS `POST
    /// /upload`): planning works, publishing meets a dead endpoint.
    FirstUpload,
}

struct Forwarder {
    port: u16,
    target: String,
    trip: Trip,
    down: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    accept: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Forwarder {
    fn start(target: &str, trip: Trip) -> Arc<Forwarder> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let f = Arc::new(Forwarder {
            port: listener.local_addr().unwrap().port(),
            target: target.to_string(),
            trip,
            down: Arc::new(AtomicBool::new(false)),
            conns: Arc::new(Mutex::new(Vec::new())),
            accept: Mutex::new(None),
        });
        f.serve(listener);
        f
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn serve(self: &Arc<Self>, listener: TcpListener) {
        listener.set_nonblocking(true).unwrap();
        let me = self.clone();
        let handle = std::thread::spawn(move || {
            // Polling, so that going down closes the port promptly.
            while !me.down.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        me.pipe(client);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => {}
                }
            }
            // Dropping the listener: connections are refused from now on.
        });
        *self.accept.lock().unwrap() = Some(handle);
    }

    fn pipe(self: &Arc<Self>, client: TcpStream) {
        let Ok(server) = TcpStream::connect(&self.target) else {
            return;
        };
        {
            let mut conns = self.conns.lock().unwrap();
            conns.push(client.try_clone().unwrap());
            conns.push(server.try_clone().unwrap());
        }
        let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        let me = self.clone();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match c_in.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                // The lock object is written first (and renewed), and the
                // apply's history record before its first change; the trip
                // is for the first upload of content.
                let is_lock = chunk.windows(9).any(|w| w == b"lock.json")
                    || chunk.windows(15).any(|w| w == b".swamp/history/")
                    || chunk.windows(17).any(|w| w == b".swamp%2Fhistory%2F");
                if me.trip == Trip::FirstUpload
                    && (chunk.starts_with(b"PUT ") || chunk.starts_with(b"POST /upload"))
                    && !is_lock
                {
                    me.go_down();
                    break;
                }
                if s_out.write_all(chunk).is_err() {
                    break;
                }
            }
            let _ = s_out.shutdown(std::net::Shutdown::Write);
        });
        let (mut s_in, mut c_out) = (server, client);
        std::thread::spawn(move || {
            let _ = io::copy(&mut s_in, &mut c_out);
            let _ = c_out.shutdown(std::net::Shutdown::Write);
        });
    }

    /// Closes the port and cuts every open connection.
    fn go_down(&self) {
        self.down.store(true, Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Down: the port refuses connections once this returns.
    fn stop(&self) {
        self.go_down();
        if let Some(h) = self.accept.lock().unwrap().take() {
            h.join().unwrap();
        }
    }

    /// Up again on the same port, forwarding faithfully.
    fn restart(self: &Arc<Self>) -> Arc<Forwarder> {
        self.stop();
        let listener = TcpListener::bind(("127.0.0.1", self.port)).unwrap();
        let f = Arc::new(Forwarder {
            port: self.port,
            target: self.target.clone(),
            trip: Trip::Manual,
            down: Arc::new(AtomicBool::new(false)),
            conns: Arc::new(Mutex::new(Vec::new())),
            accept: Mutex::new(None),
        });
        f.serve(listener);
        f
    }
}

// ---------------------------------------------------------------------------
// Repositories

/// A repository on `spec` holding a model, a workflow and a vault (with a
/// fixed clock: sentinels say when they were written).
fn with_definitions(bucket: &Bucket, spec: &str) -> Repo {
    let mut env = bucket.env();
    env.push(("SWAMP_NOW", "2026-11-30T07:00:00Z".to_string()));
    let repo = Repo::empty(env);
    repo.run(&["init", "--datastore", spec]).expect(0);
    write_definitions(&repo);
    repo
}

fn write_definitions(repo: &Repo) {
    write(repo, "models/web.yaml", "name: web\nimage: nginx:1.27\n");
    write(repo, "models/db/postgres.yaml", "name: db\nversion: 16\n");
    write(repo, "workflows/deploy.yaml", "steps: [build, ship]\n");
    write(repo, "vaults/prod.yaml", "kind: sops\n");
}

fn write(repo: &Repo, rel: &str, content: &str) {
    let p = repo.root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

fn managed(repo: &Repo) -> bool {
    let toml: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo.root.join(".swamp.toml")).unwrap()).unwrap();
    toml.get("config")
        .and_then(|c| c.get("managed"))
        .and_then(toml::Value::as_bool)
        .unwrap_or(false)
}

/// The cache's `config/` tier: tier path → content.
fn cached_config(repo: &Repo) -> BTreeMap<String, Vec<u8>> {
    files(&repo.cache().join("config"))
        .into_iter()
        .map(|(k, v)| (format!("config/{k}"), v))
        .collect()
}

/// The definitions as the `config/` tier should hold them.
fn expected_config(repo: &Repo) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for dir in ["models", "workflows", "vaults"] {
        for (k, v) in files(&repo.root.join(dir)) {
            out.insert(format!("config/{dir}/{k}"), v);
        }
    }
    out
}

/// The `config/` objects in the bucket (sentinel excluded): tier path → content.
fn remote_config(contents: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    contents
        .iter()
        .filter(|(k, _)| k.starts_with("swamp/config/") && k.as_str() != SENTINEL)
        .map(|(k, v)| (k["swamp/".len()..].to_string(), v.clone()))
        .collect()
}

#[track_caller]
fn assert_sentinel_vouches_for(
    contents: &BTreeMap<String, Vec<u8>>,
    expected: &BTreeMap<String, Vec<u8>>,
) {
    let body: serde_json::Value = serde_json::from_slice(
        contents
            .get(SENTINEL)
            .expect("the sentinel is in the remote"),
    )
    .unwrap();
    assert_eq!(body["migratedAt"], "2026-11-30T07:00:00Z");
    assert_eq!(
        body["sources"],
        serde_json::json!(["models", "workflows", "vaults"])
    );
    let objects: BTreeMap<String, String> =
        serde_json::from_value(body["objects"].clone()).unwrap();
    let want: BTreeMap<String, String> =
        expected.iter().map(|(k, v)| (k.clone(), sha(v))).collect();
    assert_eq!(objects, want);
}

// ---------------------------------------------------------------------------
// Scenarios

/// Bug #59/#60 of the original tool: the sentinel was written before the
/// push, so after a failed push every re-run said "already migrated" and
/// never published. Here the endpoint is down for the whole first run.
fn a_migration_the_server_never_saw_is_published_by_the_rerun(backend: Backend) {
    let bucket = Bucket::new(backend);
    let fwd = Forwarder::start(addr(backend), Trip::Manual);
    let a = with_definitions(&bucket, &spec(&bucket, &fwd.endpoint()));
    fwd.stop();

    let started = Instant::now();
    let run = a.run(&["datastore", "config", "migrate", "-y"]);
    run.expect(1);
    eprintln!("the first migrate failed after {:?}", started.elapsed());
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "a refused endpoint fails fast, took {:?}",
        started.elapsed()
    );
    assert!(run.stderr.contains(UNPUBLISHED), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("Run `swamp datastore config migrate` again to publish it (or `swamp datastore sync --push`)"),
        "{}",
        run.stderr
    );
    // The local copy is kept, no sentinel anywhere.
    assert_eq!(cached_config(&a), expected_config(&a));
    assert!(
        !a.cache()
            .join("config/managed-config-migrated.json")
            .exists()
    );
    assert!(bucket.contents().is_empty(), "nothing reached the bucket");
    assert!(managed(&a), "[config] managed = true is recorded");

    let fwd = fwd.restart();
    a.run(&["datastore", "config", "migrate", "-y"]).expect(0);
    let contents = bucket.contents();
    assert_eq!(remote_config(&contents), expected_config(&a));
    assert_sentinel_vouches_for(&contents, &expected_config(&a));
    // Once published (not before), the cache holds the same sentinel, so
    // cache and remote agree and the next sync has nothing to do.
    assert_eq!(
        std::fs::read(a.cache().join("config/managed-config-migrated.json"))
            .ok()
            .as_ref(),
        contents.get(SENTINEL)
    );
    let sync = a.run(&["plan", "--scope", "sync", "--detailed-exitcode"]);
    sync.expect(0);

    // A fresh clone (another SWAMP_HOME) sees the definitions after a pull.
    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    let mut want = expected_config(&a);
    want.insert(
        "config/managed-config-migrated.json".into(),
        contents[SENTINEL].clone(),
    );
    assert_eq!(cached_config(&b), want);
    fwd.stop();
}

/// The endpoint dies at the first upload, after the plan was made: the
/// mirror is in the cache, nothing is vouched for, and the re-run (or
/// `sync --push`) publishes.
fn a_publish_that_dies_mid_way_writes_no_sentinel_and_the_rerun_publishes(backend: Backend) {
    let bucket = Bucket::new(backend);
    let fwd = Forwarder::start(addr(backend), Trip::FirstUpload);
    let a = with_definitions(&bucket, &spec(&bucket, &fwd.endpoint()));

    let started = Instant::now();
    let run = a.run(&["datastore", "config", "migrate", "-y", "--json"]);
    run.expect(1);
    eprintln!("the first migrate failed after {:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(30));
    let err = &run.json()["error"];
    assert_eq!(err["exit_code"], 1);
    let message = err["message"].as_str().unwrap();
    assert!(message.starts_with(UNPUBLISHED), "{message}");
    // It was the publish that failed, not the planning.
    assert!(message.contains("(upload config/"), "{message}");
    assert!(
        message.contains("Run `swamp datastore config migrate` again to publish it"),
        "{message}"
    );
    assert_eq!(cached_config(&a), expected_config(&a));
    let contents = bucket.contents();
    assert!(
        !contents.contains_key(SENTINEL),
        "no sentinel: {:?}",
        contents.keys()
    );

    // The dead endpoint also kept the lock from being released: the run
    // says how it ends, and `lock release` (its process is gone) ends it
    // now instead of after the TTL.
    assert!(
        run.stderr.contains("could not release the lock")
            && run.stderr.contains("swamp datastore lock release"),
        "{}",
        run.stderr
    );
    let fwd = fwd.restart();
    let released = a.run(&["datastore", "lock", "release"]);
    released.expect(0);
    assert!(
        released.stdout.contains("its process is gone"),
        "{}",
        released.stdout
    );
    // `sync --push` is the other way the message names.
    a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
    let contents = bucket.contents();
    assert_eq!(remote_config(&contents), expected_config(&a));
    assert_sentinel_vouches_for(&contents, &expected_config(&a));
    // And migrate agrees it is done.
    let run = a.run(&["datastore", "config", "migrate", "-y", "--json"]);
    run.expect(0);
    assert_eq!(run.json()["converged"], true, "{}", run.stdout);
    fwd.stop();
}

/// Bug #61: "already migrated" was judged from the local cache. A repo on
/// another machine sees the definitions; running migrate again anywhere is
/// a no-op that transfers nothing.
fn a_second_repo_sees_the_definitions_and_migrating_again_is_a_no_op(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = with_definitions(
        &bucket,
        &spec(&bucket, &format!("http://{}", addr(backend))),
    );
    a.run(&["datastore", "config", "migrate", "-y"]).expect(0);
    let before = bucket.versions();
    assert!(before.contains_key(SENTINEL));

    let run = a.run(&["datastore", "config", "migrate", "-y", "--json"]);
    run.expect(0);
    let doc = run.json();
    assert_eq!(doc["applied"], serde_json::Value::Null, "{doc}");
    assert_eq!(doc["plan"]["actions"], serde_json::json!([]));
    assert_eq!(bucket.versions(), before, "nothing rewritten");

    let b = a.clone_elsewhere();
    b.run(&["datastore", "sync", "--pull", "-y"]).expect(0);
    let cached = cached_config(&b);
    for (k, v) in expected_config(&a) {
        assert_eq!(cached.get(&k), Some(&v), "{k}");
    }
    // The pull rewrites nothing; it may add the remote's id (written once,
    // so that this clone's sync base is bound to this very remote).
    // And its note for the other clones' delete records.
    let mut after = bucket.versions();
    after.remove("swamp/.swamp/remote-id.json");
    let b_note = |k: &String| k.starts_with("swamp/.swamp/clones/") && !before.contains_key(k);
    after.retain(|k, _| !b_note(k));
    assert_eq!(after, before);
}

/// Bug #61, the other half: a second repo migrating over a datastore that
/// another repo already migrated must not overwrite that repo's config.
fn migrating_over_another_repos_config_is_a_conflict_showing_both(backend: Backend) {
    let bucket = Bucket::new(backend);
    let spec = spec(&bucket, &format!("http://{}", addr(backend)));
    let a = with_definitions(&bucket, &spec);
    a.run(&["datastore", "config", "migrate", "-y"]).expect(0);
    let before = bucket.contents();
    let versions = bucket.versions();

    // Another clone (same .swamp.toml, another machine) whose definitions differ.
    let b = a.clone_elsewhere();
    write_definitions(&b);
    write(&b, "models/web.yaml", "name: web\nimage: nginx:1.29\n");
    let run = b.run(&["datastore", "config", "migrate", "-y"]);
    run.expect(3);
    let out = format!("{}{}", run.stdout, run.stderr);
    assert!(
        out.contains("config-already-migrated") || out.contains("already migrated"),
        "{out}"
    );
    // Both sides shown: the published sentinel and what b would publish.
    let theirs = sha(&before["swamp/config/models/web.yaml"]);
    let ours = sha(b"name: web\nimage: nginx:1.29\n");
    assert!(out.contains(&theirs) && out.contains(&ours), "{out}");
    assert!(
        out.contains("2026-11-30T07:00:00Z"),
        "the remote sentinel is shown: {out}"
    );
    assert_eq!(bucket.contents(), before, "nothing overwritten");
    assert_eq!(bucket.versions(), versions);
    assert!(
        cached_config(&b).is_empty(),
        "nothing applied, not even locally"
    );

    let run = b.run(&["datastore", "config", "migrate", "-y", "--json"]);
    run.expect(3);
    let kinds: Vec<String> = run.json()["plan"]["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap().to_string())
        .collect();
    assert!(
        kinds.contains(&"config-already-migrated".to_string()),
        "{kinds:?}"
    );
}

/// Without `-y` migrate previews (like `namespace migrate`) and changes
/// nothing; `plan --scope config` shows the same plan.
fn a_first_migrate_previews_content_first_sentinel_last(backend: Backend) {
    let bucket = Bucket::new(backend);
    let endpoint = format!("http://{}", addr(backend));
    let a = with_definitions(&bucket, &spec(&bucket, &endpoint));
    let toml_before = std::fs::read_to_string(a.root.join(".swamp.toml")).unwrap();

    // No -y and no terminal: the plan, nothing changed, exit 2.
    let human = a.run(&["datastore", "config", "migrate"]);
    human.expect(2);
    let json = a.run(&["datastore", "config", "migrate", "--json"]);
    json.expect(2);
    let plan = a.run(&["plan", "--scope", "config", "--json"]);
    plan.expect(0);
    let mut doc = json.json();
    assert_eq!(doc["preview"], true);
    assert_eq!(doc["plan"]["actions"], plan.json()["actions"]);

    let kinds = crate::support::action_kinds(&doc["plan"]);
    assert_eq!(kinds.last(), Some(&"publish-sentinel"));
    assert!(
        kinds.iter().position(|k| *k == "upload")
            > kinds.iter().position(|k| *k == "mirror-config")
    );

    // The document matches the plan schema (it is closed: new kinds and
    // summary keys must be in it).
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas/plan.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    for d in [&doc["plan"], &plan.json()] {
        let errors: Vec<String> = validator.iter_errors(d).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{d}");
    }

    // Nothing changed.
    assert!(bucket.contents().is_empty());
    assert!(cached_config(&a).is_empty());
    assert_eq!(
        std::fs::read_to_string(a.root.join(".swamp.toml")).unwrap(),
        toml_before
    );

    let redact = |s: &str| {
        s.replace(&bucket.name, "[bucket]")
            .replace(&endpoint, "[endpoint]")
            .replace(&a.cache().display().to_string(), "[cache]")
            .replace(&a.repo_id(), "[repo-id]")
    };
    let name = match backend {
        Backend::S3 => "config_migrate_preview_s3",
        Backend::Gcs => "config_migrate_preview_gcs",
        Backend::Fs => unreachable!("config migrate runs against servers"),
    };
    insta::with_settings!({
        snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(format!("{name}_human"), redact(&human.stdout));
        doc["plan"]["fingerprint"] = "[fingerprint]".into();
        insta::assert_snapshot!(
            format!("{name}_json"),
            redact(&serde_json::to_string_pretty(&doc).unwrap())
        );
    });
}

/// A sentinel lost after a migration (payload without sentinel): doctor
/// fails `sentinel`; `--repair -y` re-publishes it through the
/// config-migrate plan, only after verifying the payload, and doctor then
/// passes. The config objects themselves are not rewritten.
fn a_lost_sentinel_fails_doctor_and_repair_republishes_it(backend: Backend) {
    let bucket = Bucket::new(backend);
    let a = with_definitions(
        &bucket,
        &spec(&bucket, &format!("http://{}", addr(backend))),
    );
    a.run(&["datastore", "config", "migrate", "-y"]).expect(0);
    bucket.delete(SENTINEL);
    let payload = bucket.versions();
    assert!(!payload.contains_key(SENTINEL));

    let run = a.run(&["--json", "doctor", "datastores"]);
    run.expect(1);
    let doc = run.json();
    let sentinel = crate::support::doctor_check(&doc, "sentinel");
    assert_eq!(sentinel["status"], "fail", "{doc}");

    let run = a.run(&["--json", "doctor", "datastores", "--repair", "-y"]);
    run.expect(0);
    let doc = run.json();
    assert_eq!(doc["ok"], true, "{doc}");
    let after = bucket.versions();
    assert!(after.contains_key(SENTINEL), "the sentinel is back");
    for (k, v) in &payload {
        assert_eq!(after.get(k), Some(v), "{k} was not rewritten");
    }
    assert_sentinel_vouches_for(&bucket.contents(), &expected_config(&a));
    a.run(&["doctor", "datastores"]).expect(0);
}

macro_rules! on_every_server {
    ($($scenario:ident),* $(,)?) => {
        mod s3 {
            $( #[test] fn $scenario() { super::$scenario(super::Backend::S3) } )*
        }
        mod gcs {
            $( #[test] fn $scenario() { super::$scenario(super::Backend::Gcs) } )*
        }
    };
}

/// Managed config needs a remote datastore: on `local` migrate refuses,
/// names the setup command, and changes nothing.
#[test]
fn migrate_on_a_local_datastore_names_setup_and_changes_nothing() {
    let a = Repo::empty(Vec::new());
    a.run(&["init"]).expect(0);
    write_definitions(&a);
    let before = std::fs::read_to_string(a.root.join(".swamp.toml")).unwrap();
    let run = a.run(&["datastore", "config", "migrate", "-y"]);
    run.expect(64);
    assert!(
        run.stderr.contains("swamp datastore setup"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(a.root.join(".swamp.toml")).unwrap(),
        before
    );
    assert!(!a.root.join(".swamp/config").exists());
    a.run(&["plan", "--scope", "config"]).expect(64);
}

on_every_server!(
    a_migration_the_server_never_saw_is_published_by_the_rerun,
    a_publish_that_dies_mid_way_writes_no_sentinel_and_the_rerun_publishes,
    a_second_repo_sees_the_definitions_and_migrating_again_is_a_no_op,
    migrating_over_another_repos_config_is_a_conflict_showing_both,
    a_first_migrate_previews_content_first_sentinel_last,
    a_lost_sentinel_fails_doctor_and_repair_republishes_it,
);
