//! Eyes for a real bucket (issue 41): `--trace FILE` writes a JSON line per
//! provider request, lock step and action; `SWAMP_LOG` logs to stderr; no
//! credential reaches any of it, nor stdout, an error or a plan file.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::bucket::{Backend, Bucket, Repo};
use crate::support::faults::{Fault, FaultProxy, Rule};

/// The trace's lines, parsed (each must be one JSON object).
fn trace(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l:?}")))
        .collect()
}

/// Requests by class: the trace's request events, and the proxy's count.
fn by_class<'a>(classes: impl Iterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for c in classes {
        *out.entry(c.to_string()).or_default() += 1;
    }
    out
}

/// Runs `args` with `--trace`, and checks the trace's request events
/// against what the proxy saw meanwhile: one line per request, of the same
/// class. Returns the trace.
fn traced(
    repo: &Repo,
    proxy: &FaultProxy,
    args: &[&str],
    backend: Backend,
) -> Vec<serde_json::Value> {
    let file = tempfile::NamedTempFile::new().unwrap();
    let path = file.path().to_str().unwrap().to_string();
    let mut all = vec!["--trace", path.as_str()];
    all.extend_from_slice(args);
    let from = proxy.seen().len();
    let run = repo.run(&all);
    run.expect(0);
    // `--trace` alone logs nothing to stderr.
    assert!(!run.stderr.contains("\"event\""), "{}", run.stderr);
    let seen = proxy.seen()[from..].to_vec();
    let lines = trace(file.path());
    let requests: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["event"] == "request").collect();
    for r in &requests {
        for field in ["class", "op", "bucket", "key", "attempt", "ms"] {
            assert!(!r[field].is_null(), "{backend:?}: no {field}: {r}");
        }
        assert!(r["status"].is_u64(), "{backend:?}: answered: {r}");
    }
    assert_eq!(
        by_class(requests.iter().map(|r| r["class"].as_str().unwrap())),
        by_class(seen.iter().map(|s| s.class())),
        "{backend:?} {args:?}: the trace's requests are the proxy's\ntrace: {requests:#?}\nproxy: {:#?}",
        seen.iter().map(|s| s.line()).collect::<Vec<_>>()
    );
    lines
}

/// A push and a pull through a counting proxy, on S3 and GCS: the trace
/// holds one request line per request the server saw (heartbeat and
/// retries included), with its class, key, status and time; the lock's
/// steps; and a start and an end for each action.
#[test]
fn a_trace_has_one_line_per_request_the_server_saw() {
    for backend in [Backend::S3, Backend::Gcs] {
        let (bucket, proxy) = Bucket::behind_proxy(backend);
        let a = Repo::init(&bucket, Some("lab"));
        // A first writer's run registers the namespace (and, on GCS,
        // probes which preconditions the server enforces): not traced.
        a.put("m/first", "first\n");
        a.run(&["datastore", "sync", "--push", "-y"]).expect(0);
        for i in 0..5 {
            a.put(&format!("m/f{i}"), &format!("{i}\n"));
        }
        // One upload answered 503 once: its retry is a request too. (A
        // GCS upload names its object in the body: the third upload.)
        let rule = match backend {
            Backend::Gcs => Rule::new(Fault::Status(503))
                .method("POST")
                .target("uploadType")
                .skip(2),
            // The file's path, not "f3" alone: an apply id (in a history
            // record's key) may hold those two characters too.
            _ => Rule::new(Fault::Status(503))
                .method("PUT")
                .target("data/m/f3"),
        };
        proxy.rule(rule.times(1));
        let push = traced(&a, &proxy, &["datastore", "sync", "--push", "-y"], backend);
        let failed: Vec<_> = push
            .iter()
            .filter(|l| l["event"] == "request" && l["status"] == 503)
            .collect();
        assert_eq!(failed.len(), 1, "{backend:?}: {push:#?}");
        assert_eq!(failed[0]["attempt"], 1);
        let key = failed[0]["key"].as_str().unwrap();
        assert!(key.contains("/data/m/f"), "{backend:?}: named: {key}");
        assert!(
            push.iter().any(|l| l["event"] == "request"
                && l["key"] == key
                && l["attempt"] == 2
                && l["status"] == 200),
            "{backend:?}: tried again: {push:#?}"
        );
        let steps = |lines: &[serde_json::Value], event: &str, step: &str| {
            lines
                .iter()
                .filter(|l| l["event"] == event && l["step"] == step)
                .count()
        };
        assert!(steps(&push, "lock", "acquired") >= 1, "{push:#?}");
        assert!(steps(&push, "lock", "released") >= 1, "{push:#?}");
        let started = steps(&push, "action", "start");
        assert!(
            started >= 5,
            "{backend:?}: five uploads at least: {push:#?}"
        );
        assert_eq!(started, steps(&push, "action", "end"));

        let b = a.clone_elsewhere();
        let pull = traced(&b, &proxy, &["datastore", "sync", "--pull", "-y"], backend);
        let gets = pull
            .iter()
            .filter(|l| {
                l["event"] == "request"
                    && l["class"] == "get"
                    && l["key"].as_str().is_some_and(|k| k.contains("/data/m/"))
            })
            .count();
        assert_eq!(gets, 6, "{backend:?}: one GET per file: {pull:#?}");
    }
}

const SECRET_KEY: &str = "swampSECRETkeyVv0Q8rJ3xYz9WmT4pL7aB2cD5eF";
const SESSION_TOKEN: &str = "swampSESSIONtokenIQoJb3JpZ2luX2VjEDkaCXVzLWVhc3QtMSJHMEUCIQD";

/// Every file under `root`, read as text where it can be.
fn every_file(root: &Path) -> Vec<(String, String)> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            (
                e.path().display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            )
        })
        .collect()
}

/// Where `text` shows a credential: the secret key, the session token, or
/// a SigV4 signature.
fn leaks(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for secret in [SECRET_KEY, SESSION_TOKEN] {
        if text.contains(secret) {
            found.push(secret.to_string());
        }
    }
    for marker in ["Signature=", "signature="] {
        for (at, _) in text.match_indices(marker) {
            let value: String = text[at + marker.len()..]
                .chars()
                .take_while(char::is_ascii_hexdigit)
                .collect();
            if value.len() >= 16 {
                found.push(format!("{marker}{value}"));
            }
        }
    }
    found
}

/// A push at `SWAMP_LOG=trace` with distinctive credentials (a secret key
/// and a session token), through a retried upload, a saved plan and a run
/// that fails on a server error quoting the token back (as S3's
/// `SignatureDoesNotMatch` quotes what was signed): nothing any of it
/// writes (stdout, stderr, the trace, the plan file, every file in the
/// repository and the cache) holds the secret, the token or a signature.
/// The SDK's `trace` events name the token's header (masked by the SDK
/// itself, and cut again here); the quoted refusal carries the token and
/// a signature in full, which only swamp's redaction cuts (the test fails
/// without it).
#[test]
fn no_credential_reaches_stdout_stderr_a_trace_or_a_file_at_trace_level() {
    let (bucket, proxy) = Bucket::behind_proxy(Backend::S3);
    let mut env = bucket.env();
    for (k, v) in env.iter_mut() {
        if *k == "AWS_SECRET_ACCESS_KEY" {
            *v = SECRET_KEY.to_string();
        }
    }
    env.push(("AWS_SESSION_TOKEN", SESSION_TOKEN.to_string()));
    env.push(("SWAMP_LOG", "trace".to_string()));
    let repo = Repo::empty(env);
    let spec = bucket.spec();
    repo.run(&["init", "--datastore", spec.as_str(), "--namespace", "lab"])
        .expect(0);
    for i in 0..3 {
        repo.put(&format!("m/f{i}"), &format!("{i}\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let trace_file = dir.path().join("trace.jsonl");
    let plan_file = dir.path().join("plan.json");
    let mut runs = Vec::new();
    let plan = repo.run(&["plan", "-o", plan_file.to_str().unwrap()]);
    runs.push(plan);
    proxy.rule(
        Rule::new(Fault::Status(503))
            .method("PUT")
            .target("f1")
            .times(1),
    );
    let push = repo.run(&[
        "--trace",
        trace_file.to_str().unwrap(),
        "datastore",
        "sync",
        "--push",
        "-y",
    ]);
    push.expect(0);
    runs.push(push);
    // The server refuses, quoting the request's token back.
    let quoted: &'static str = Box::leak(
        format!(
            "The request signature we calculated does not match. StringToSign: AWS4-HMAC-SHA256 x-amz-security-token:{SESSION_TOKEN} Signature=0123456789abcdef0123456789abcdef"
        )
        .into_boxed_str(),
    );
    proxy.rule(Rule::new(Fault::S3Error(
        403,
        "SignatureDoesNotMatch",
        quoted,
    )));
    repo.put("m/f9", "9\n");
    for json in [false, true] {
        let mut args = vec!["datastore", "sync", "--push", "-y"];
        if json {
            args.insert(0, "--json");
        }
        let failed = repo.run(&args);
        assert_ne!(failed.code, Some(0), "{}", failed.stderr);
        runs.push(failed);
    }
    proxy.clear_rules();

    let stderr: String = runs.iter().map(|r| r.stderr.as_str()).collect();
    assert!(
        stderr.contains("[redacted]"),
        "the SDK's trace events carry credentials, cut here: {}",
        &stderr[..stderr.len().min(4000)]
    );
    assert!(
        runs.last()
            .unwrap()
            .stdout
            .contains("SignatureDoesNotMatch"),
        "the server's refusal is still reported: {}",
        runs.last().unwrap().stdout
    );
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(leaks(&run.stdout), Vec::<String>::new(), "run {i} stdout");
        assert_eq!(leaks(&run.stderr), Vec::<String>::new(), "run {i} stderr");
    }
    let mut files = every_file(dir.path());
    files.extend(every_file(&repo.root));
    files.extend(every_file(&repo.home));
    assert!(files.iter().any(|(p, _)| p.ends_with("trace.jsonl")));
    for (path, text) in files {
        assert_eq!(leaks(&text), Vec::<String>::new(), "{path}");
    }
}

/// A log filter that does not parse, or a trace file that cannot be
/// written, is bad input: exit 64 before the command runs, with a hint,
/// in text and in `--json`.
#[test]
fn a_bad_log_filter_or_trace_file_is_refused_before_anything_runs() {
    let repo = Repo::local(&[]);
    let bad = repo.run_with(&["status"], &[("SWAMP_LOG", "swamp=[")]);
    bad.expect(64);
    assert!(bad.stderr.contains("is not a log filter"), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("hint: unset SWAMP_LOG"),
        "{}",
        bad.stderr
    );
    let json = repo.run(&["--json", "--trace", "/nonexistent/dir/t.jsonl", "status"]);
    json.expect(64);
    let doc = json.json();
    assert_eq!(doc["error"]["kind"], "usage", "{doc}");
    assert!(
        doc["error"]["hint"].as_str().unwrap().contains("--trace"),
        "{doc}"
    );
    // Unset, nothing is logged: stderr stays as it was.
    let quiet = repo.run(&["status"]);
    quiet.expect(0);
    assert!(!quiet.stderr.contains("INFO") && !quiet.stderr.contains("DEBUG"));
}
