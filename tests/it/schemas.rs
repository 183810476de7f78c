//! The JSON Schemas in `schemas/` against the real thing:
//!
//! - both schemas are valid draft 2020-12 schemas;
//! - every `.swamp.toml` under `examples/` validates against the config
//!   schema, and the config schema agrees with the real parser
//!   (`Config::parse`) on a set of good and bad configurations, so it is
//!   neither vacuous nor stricter than swamp where it matters;
//! - the enums the schemas spell out (tiers, reserved namespace names,
//!   action kinds, scopes) are the ones the code uses;
//! - the documents the real binary prints with `plan --json` (solo,
//!   namespaced migration, drop-duplicate and conflict cases), saves with
//!   `plan -o` and embeds in `apply --json` validate against the plan schema;
//! - so do the sync plans it prints against real object servers
//!   (SeaweedFS for S3, fake-gcs-server for GCS, from `tests/support`), and
//!   a value of every action and conflict kind built from the types.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::support::bucket::{Backend, Bucket, Repo};
use crate::support::kinds::{every_action, every_conflict};
use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn config_schema() -> Value {
    read_json(&manifest_dir().join("schemas/config.schema.json"))
}

fn plan_schema() -> Value {
    read_json(&manifest_dir().join("schemas/plan.schema.json"))
}

/// A validator that also checks `format` (draft 2020-12 only annotates it by default).
fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|e| panic!("schema does not compile: {e}"))
}

fn errors(v: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[track_caller]
fn assert_valid(v: &jsonschema::Validator, instance: &Value, what: &str) {
    let errs = errors(v, instance);
    assert!(
        errs.is_empty(),
        "{what} does not match its schema:\n  {}\ndocument:\n{}",
        errs.join("\n  "),
        serde_json::to_string_pretty(instance).unwrap()
    );
}

fn toml_to_json(text: &str) -> Value {
    let value: toml::Value =
        toml::from_str(text).unwrap_or_else(|e| panic!("not TOML: {e}\n{text}"));
    serde_json::to_value(value).expect("TOML converts to JSON")
}

fn parses(text: &str) -> Result<(), String> {
    swamp::config::Config::parse(text, Path::new(".swamp.toml"))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn string_enum(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .expect("an enum array")
        .iter()
        .map(|s| s.as_str().expect("string enum").to_string())
        .collect()
}

// ---------------------------------------------------------------- schemas

#[test]
fn both_schemas_are_valid_draft_2020_12_schemas() {
    for (name, schema) in [("config", config_schema()), ("plan", plan_schema())] {
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name} schema declares draft 2020-12"
        );
        if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
            panic!("{name} schema is not a valid draft 2020-12 schema: {e}");
        }
        validator(&schema);
    }
}

#[test]
fn schema_enums_match_the_code() {
    let config = config_schema();
    let plan = plan_schema();

    let tiers: BTreeSet<String> = swamp::layout::Tier::ALL
        .iter()
        .map(|t| t.as_str().to_string())
        .collect();
    assert_eq!(string_enum(&config["$defs"]["tier"]["enum"]), tiers);

    let reserved: BTreeSet<String> = swamp::layout::RESERVED_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    for schema in [&config, &plan] {
        assert_eq!(
            string_enum(&schema["$defs"]["namespace"]["not"]["enum"]),
            reserved
        );
        // The plan schema repeats these definitions so it stands alone.
        for def in ["datastore", "bucket", "namespace"] {
            assert_eq!(schema["$defs"][def], config["$defs"][def], "$defs/{def}");
        }
    }

    let kinds: BTreeSet<String> = swamp::plan::Action::KINDS
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        string_enum(&plan["$defs"]["action"]["properties"]["kind"]["enum"]),
        kinds
    );

    let scopes: BTreeSet<String> = swamp::state::Scope::NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(string_enum(&plan["properties"]["scope"]["enum"]), scopes);
}

// ---------------------------------------------------------------- config

fn example_configs() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = walkdir::WalkDir::new(manifest_dir().join("examples"))
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.expect("examples/ is readable"))
        .filter(|e| e.file_type().is_file() && e.file_name() == ".swamp.toml")
        .map(|e| e.into_path())
        .collect();
    found.sort();
    found
}

#[test]
fn every_example_config_validates() {
    let v = validator(&config_schema());
    let configs = example_configs();
    assert!(
        configs.len() >= 2,
        "expected the homelab and shared-filesystem examples, found {configs:?}"
    );
    for path in configs {
        let text = fs::read_to_string(&path).unwrap();
        assert_valid(&v, &toml_to_json(&text), &path.display().to_string());
        parses(&text).unwrap_or_else(|e| panic!("swamp refuses {}: {e}", path.display()));
    }
}

const ID: &str = "repo_id = \"0b3c5bd4-4f5e-4a0e-9d4c-6d8a9c1e2f30\"\n";

/// Configurations swamp accepts: the schema must accept them too.
fn good_configs() -> Vec<(&'static str, String)> {
    vec![
        ("minimal", ID.to_string()),
        (
            "namespaced local",
            format!("{ID}namespace = \"homelab\"\n[datastore]\ntype = \"local\"\n"),
        ),
        (
            "filesystem",
            format!(
                "{ID}namespace = \"team-a\"\n[datastore]\ntype = \"filesystem\"\npath = \"/srv/swamp\"\n"
            ),
        ),
        (
            "s3, every key",
            format!(
                "{ID}[datastore]\ntype = \"s3\"\nbucket = \"swamp-data\"\nprefix = \"repos\"\nregion = \"eu-west-1\"\nendpoint = \"http://127.0.0.1:8333\"\n"
            ),
        ),
        (
            "s3, bucket only",
            format!("{ID}[datastore]\ntype = \"s3\"\nbucket = \"swamp-data\"\n"),
        ),
        (
            "gcs",
            format!(
                "{ID}[datastore]\ntype = \"gcs\"\nbucket = \"swamp-data\"\nprefix = \"p\"\nendpoint = \"http://127.0.0.1:4443\"\n"
            ),
        ),
        (
            "every top-level key",
            format!(
                "{ID}namespace = \"x9\"\ndirectories = [\"data\", \"outputs\", \"workflow-runs\"]\nexclude = [\"data/scratch/**\", \"*.tmp\"]\n\
                 [sync]\nmax_delete_percent = 0\nconflict = \"keep-both\"\nconcurrency = 1\n\
                 [config]\nmanaged = true\n\
                 [[migrating_from]]\ndatastore = {{ type = \"local\" }}\n\
                 [[migrating_from]]\nnamespace = \"old-ns\"\ndatastore = {{ type = \"filesystem\", path = \"/srv/old\" }}\n"
            ),
        ),
        (
            "max_delete_percent 100",
            format!("{ID}[sync]\nmax_delete_percent = 100\n"),
        ),
        (
            "64-character namespace",
            format!("{ID}namespace = \"{}\"\n", "a".repeat(64)),
        ),
    ]
}

/// Configurations swamp refuses: the schema must refuse them too.
fn bad_configs() -> Vec<(&'static str, String)> {
    vec![
        ("no repo_id", "namespace = \"homelab\"\n".to_string()),
        (
            "repo_id not a uuid",
            "repo_id = \"not-a-uuid\"\n".to_string(),
        ),
        ("unknown top-level key", format!("{ID}bogus = 1\n")),
        (
            "unknown s3 key",
            format!("{ID}[datastore]\ntype = \"s3\"\nbucket = \"swamp-data\"\nbukket = \"x\"\n"),
        ),
        (
            "unknown filesystem key",
            format!("{ID}[datastore]\ntype = \"filesystem\"\npath = \"/srv\"\nprefix = \"x\"\n"),
        ),
        ("unknown sync key", format!("{ID}[sync]\nmax_delete = 10\n")),
        (
            "unknown config key",
            format!("{ID}[config]\nmanged = true\n"),
        ),
        (
            "unknown key in a local datastore table",
            format!("{ID}[datastore]\ntype = \"local\"\nbukket = \"x\"\n"),
        ),
        (
            "path in a local datastore table",
            format!("{ID}[datastore]\ntype = \"local\"\npath = \"/srv\"\n"),
        ),
        (
            "unknown key in a local migrating_from datastore",
            format!("{ID}[[migrating_from]]\ndatastore = {{ type = \"local\", bukket = \"x\" }}\n"),
        ),
        (
            "relative filesystem path",
            format!("{ID}[datastore]\ntype = \"filesystem\"\npath = \"rel/dir\"\n"),
        ),
        (
            "filesystem without path",
            format!("{ID}[datastore]\ntype = \"filesystem\"\n"),
        ),
        (
            "s3 without bucket",
            format!("{ID}[datastore]\ntype = \"s3\"\n"),
        ),
        (
            "gcs with region",
            format!("{ID}[datastore]\ntype = \"gcs\"\nbucket = \"swamp-data\"\nregion = \"x\"\n"),
        ),
        (
            "unknown datastore type",
            format!("{ID}[datastore]\ntype = \"ftp\"\n"),
        ),
        (
            "datastore without type",
            format!("{ID}[datastore]\npath = \"/srv\"\n"),
        ),
        ("namespace `data`", format!("namespace = \"data\"\n{ID}")),
        ("namespace `state`", format!("namespace = \"state\"\n{ID}")),
        (
            "namespace with capitals",
            format!("{ID}namespace = \"Homelab\"\n"),
        ),
        (
            "namespace with trailing dash",
            format!("{ID}namespace = \"team-\"\n"),
        ),
        ("empty namespace", format!("{ID}namespace = \"\"\n")),
        (
            "65-character namespace",
            format!("{ID}namespace = \"{}\"\n", "a".repeat(65)),
        ),
        (
            "max_delete_percent 150",
            format!("{ID}[sync]\nmax_delete_percent = 150\n"),
        ),
        (
            "negative max_delete_percent",
            format!("{ID}[sync]\nmax_delete_percent = -1\n"),
        ),
        ("concurrency 0", format!("{ID}[sync]\nconcurrency = 0\n")),
        (
            "concurrency as a string",
            format!("{ID}[sync]\nconcurrency = \"many\"\n"),
        ),
        (
            "unknown conflict policy",
            format!("{ID}[sync]\nconflict = \"merge\"\n"),
        ),
        (
            "managed not a bool",
            format!("{ID}[config]\nmanaged = \"yes\"\n"),
        ),
        (
            "unknown tier in directories",
            format!("{ID}directories = [\"data\", \"secrets\"]\n"),
        ),
        ("exclude not a list", format!("{ID}exclude = \"*.tmp\"\n")),
        (
            "migrating_from without datastore",
            format!("{ID}[[migrating_from]]\nnamespace = \"old\"\n"),
        ),
        (
            "migrating_from with unknown key",
            format!("{ID}[[migrating_from]]\ndatastore = {{ type = \"local\" }}\nwhen = 1\n"),
        ),
    ]
}

/// Configurations the schema refuses although swamp's parser lets them
/// through today. The schema is deliberately the stricter contract here.
fn stricter_than_swamp() -> Vec<(&'static str, String)> {
    vec![
        // Accepted by the uuid crate, but not the form `swamp init` writes.
        (
            "repo_id in simple (unhyphenated) form",
            "repo_id = \"0b3c5bd44f5e4a0e9d4c6d8a9c1e2f30\"\n".to_string(),
        ),
        (
            "repo_id in braced form",
            "repo_id = \"{0b3c5bd4-4f5e-4a0e-9d4c-6d8a9c1e2f30}\"\n".to_string(),
        ),
        // Meaningless, though the parser does not check it.
        (
            "a tier listed twice",
            format!("{ID}directories = [\"data\", \"data\"]\n"),
        ),
        // Bucket names swamp refuses when it opens the store (before any
        // request), not when it parses the file.
        (
            "an empty bucket",
            format!("{ID}[datastore]\ntype = \"gcs\"\nbucket = \"\"\n"),
        ),
        (
            "a two-character bucket",
            format!("{ID}[datastore]\ntype = \"s3\"\nbucket = \"ab\"\n"),
        ),
        (
            "a bucket with capitals",
            format!("{ID}[datastore]\ntype = \"s3\"\nbucket = \"Swamp-Data\"\n"),
        ),
        (
            "a bucket ending in a dash",
            format!("{ID}[datastore]\ntype = \"gcs\"\nbucket = \"swamp-\"\n"),
        ),
    ]
}

#[test]
fn the_config_schema_is_stricter_where_documented() {
    let v = validator(&config_schema());
    for (what, text) in stricter_than_swamp() {
        assert!(
            !v.is_valid(&toml_to_json(&text)),
            "the config schema accepts `{what}`:\n{text}"
        );
    }
}

#[test]
fn the_config_schema_accepts_what_swamp_accepts() {
    let v = validator(&config_schema());
    for (what, text) in good_configs() {
        parses(&text)
            .unwrap_or_else(|e| panic!("swamp refuses the good config `{what}`: {e}\n{text}"));
        assert_valid(&v, &toml_to_json(&text), &format!("good config `{what}`"));
    }
}

#[test]
fn the_config_schema_rejects_what_swamp_rejects() {
    let v = validator(&config_schema());
    for (what, text) in bad_configs() {
        assert!(
            parses(&text).is_err(),
            "swamp accepts the bad config `{what}`:\n{text}"
        );
        assert!(
            !v.is_valid(&toml_to_json(&text)),
            "the config schema accepts the bad config `{what}`:\n{text}"
        );
    }
}

#[test]
fn the_config_schema_rejects_what_the_brief_names() {
    // The cases the schema exists to catch, each checked on its own so a
    // vacuous schema cannot pass by accident.
    let v = validator(&config_schema());
    for text in [
        format!("{ID}colour = \"green\"\n"),
        format!("{ID}[datastore]\ntype = \"filesystem\"\npath = \"shared/dir\"\n"),
        format!("{ID}namespace = \"data\"\n"),
        format!("{ID}[sync]\nmax_delete_percent = 150\n"),
    ] {
        let errs = errors(&v, &toml_to_json(&text));
        assert!(!errs.is_empty(), "schema accepts:\n{text}");
    }
}

// ---------------------------------------------------------------- plan

struct Sandbox {
    _home: TempDir,
    home_path: PathBuf,
    _repo_parent: TempDir,
    repo: PathBuf,
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            fs::create_dir_all(&dest).unwrap();
        } else {
            fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// A temp copy of `examples/<name>` with its own `SWAMP_HOME`.
fn sandbox(example: &str) -> Sandbox {
    let home = TempDir::new().unwrap();
    let repo_parent = TempDir::new().unwrap();
    let repo = repo_parent.path().join(example);
    copy_tree(&manifest_dir().join("examples").join(example), &repo);
    Sandbox {
        home_path: home.path().to_path_buf(),
        _home: home,
        _repo_parent: repo_parent,
        repo,
    }
}

impl Sandbox {
    fn swamp(&self, args: &[&str]) -> Command {
        let mut cmd = std::process::Command::new(crate::support::swamp_bin());
        crate::support::pinned(&mut cmd, &self.home_path)
            .current_dir(&self.repo)
            .args(args);
        Command::from_std(cmd)
    }

    /// Runs swamp, checks the exit code, and parses stdout as one JSON document.
    fn json(&self, args: &[&str], code: i32) -> Value {
        let out = self.swamp(args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(code),
            "swamp {args:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
        );
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("swamp {args:?} printed no JSON document ({e}):\n{stdout}"))
    }

    fn run_ok(&self, args: &[&str]) {
        self.swamp(args).assert().success();
    }
}

fn paths_of(doc: &Value, kind: &str) -> BTreeSet<String> {
    doc["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == kind)
        .map(|a| a["path"].as_str().unwrap().to_string())
        .collect()
}

/// The datastore files of examples/homelab, as tier paths, with their sizes.
fn homelab_datastore_files() -> Vec<(String, u64)> {
    let swamp_dir = manifest_dir().join("examples/homelab/.swamp");
    let tiers: Vec<&str> = swamp::layout::Tier::ALL
        .iter()
        .map(|t| t.as_str())
        .collect();
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(&swamp_dir).sort_by_file_name() {
        let entry = entry.unwrap();
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(&swamp_dir)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let tier = rel.split('/').next().unwrap();
        if tiers.contains(&tier) {
            files.push((rel, entry.metadata().unwrap().len()));
        }
    }
    files
}

#[test]
fn homelab_example_has_the_solo_layout() {
    let files = homelab_datastore_files();
    let paths: BTreeSet<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    for expected in [
        "data/ec2-instance/web-1/state/1/raw",
        "data/ec2-instance/web-1/state/2/raw",
        "outputs/ec2-instance/deploy/web-1-2026-11-01.yaml",
        "workflow-runs/nightly/workflow-run-0001.yaml",
        "audit/2026-11.log",
    ] {
        assert!(
            paths.contains(expected),
            "examples/homelab lacks {expected}"
        );
    }
    // Every data file is `data/<name>/<version>/raw`.
    for p in paths.iter().filter(|p| p.starts_with("data/")) {
        let segs: Vec<&str> = p.split('/').collect();
        assert!(segs.len() >= 4, "{p}");
        assert_eq!(segs[segs.len() - 1], "raw", "{p}");
        let version = segs[segs.len() - 2];
        assert!(
            !version.starts_with('0') && version.bytes().all(|b| b.is_ascii_digit()),
            "{p}: version {version}"
        );
    }
    assert!(
        manifest_dir()
            .join("examples/homelab/.swamp/secrets/local_encryption/prod/db-password.enc")
            .is_file()
    );
}

#[test]
fn solo_plan_json_matches_the_schema_and_is_empty() {
    let v = validator(&plan_schema());
    let sb = sandbox("homelab");
    let doc = sb.json(&["plan", "--json"], 0);
    assert_valid(&v, &doc, "`swamp plan --json` (solo, converged)");
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["repo_id"], "7d0c6f1e-2b1a-4c3e-9f6a-5e4d3c2b1a09");
    assert_eq!(doc["scope"], "all");
    assert_eq!(doc["target"]["datastore"]["type"], "local");
    assert!(doc["target"].get("namespace").is_none(), "{doc}");
    assert_eq!(doc["sources"], Value::Array(vec![]));
    assert_eq!(doc["actions"], Value::Array(vec![]));
    assert_eq!(doc["conflicts"], Value::Array(vec![]));
    assert!(
        doc.get("observed").is_none(),
        "--json never carries the snapshot"
    );
    // The same under `--scope layout`.
    let doc = sb.json(&["plan", "--json", "--scope", "layout"], 0);
    assert_valid(&v, &doc, "`swamp plan --json --scope layout`");
    assert_eq!(doc["scope"], "layout");
}

#[test]
fn namespace_migration_plan_json_matches_the_schema() {
    let v = validator(&plan_schema());
    let sb = sandbox("homelab");
    sb.run_ok(&["datastore", "namespace", "set", "homelab"]);

    // The recorded config still validates against the config schema.
    let config_text = fs::read_to_string(sb.repo.join(".swamp.toml")).unwrap();
    assert_valid(
        &validator(&config_schema()),
        &toml_to_json(&config_text),
        ".swamp.toml after `namespace set`",
    );

    let doc = sb.json(&["plan", "--json"], 0);
    assert_valid(&v, &doc, "`swamp plan --json` (namespace migration)");
    assert_eq!(doc["target"]["namespace"], "homelab");
    let sources = doc["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 1, "{doc}");
    assert!(
        sources[0].get("namespace").is_none(),
        "the source is the solo layout"
    );
    assert!(
        Path::new(doc["target"]["root"].as_str().unwrap()).ends_with(".swamp/homelab"),
        "{}",
        doc["target"]["root"]
    );

    // One move per datastore file, none for the repo-local secrets.
    let files = homelab_datastore_files();
    let expected: BTreeSet<String> = files.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(paths_of(&doc, "move"), expected);
    assert!(
        paths_of(&doc, "move")
            .iter()
            .all(|p| !p.contains("secrets"))
    );
    for a in doc["actions"].as_array().unwrap() {
        if a["kind"] == "move" {
            assert_eq!(a["source"], 0);
        }
    }
    let ks = crate::support::action_kinds(&doc);
    assert!(ks.contains(&"invalidate-catalog"), "{ks:?}");
    assert!(ks.contains(&"finish-migration"), "{ks:?}");
    assert_eq!(ks.last(), Some(&"finish-migration"), "{ks:?}");
    assert_eq!(doc["summary"]["move"], files.len());
    assert_eq!(
        doc["summary"]["bytes_to_move"],
        files.iter().map(|(_, n)| n).sum::<u64>()
    );
    assert_eq!(doc["summary"]["conflicts"], 0);
    assert_eq!(doc["conflicts"], Value::Array(vec![]));

    // A saved plan is the same document plus the observed snapshot.
    let saved_path = sb.repo.join("migrate.plan.json");
    sb.run_ok(&["plan", "-o", saved_path.to_str().unwrap()]);
    let saved = read_json(&saved_path);
    assert_valid(&v, &saved, "a plan saved with `plan -o`");
    assert!(saved["observed"].is_object());
    // It records the lock it was made under, as information.
    assert!(
        saved["lock"]["url"]
            .as_str()
            .is_some_and(|u| u.ends_with("lock.json")),
        "{}",
        saved["lock"]
    );
    let mut without = saved.clone();
    without.as_object_mut().unwrap().remove("observed");
    without.as_object_mut().unwrap().remove("lock");
    assert_eq!(
        without, doc,
        "--json prints the saved plan minus `observed` and `lock`"
    );
    let shown = sb.json(&["show", "--json", saved_path.to_str().unwrap()], 0);
    assert_valid(&v, &shown, "`swamp show --json FILE`");
    fs::remove_file(&saved_path).unwrap();

    // Apply: the report embeds the plan it ran; afterwards the plan is empty.
    let applied = sb.json(&["apply", "-y", "--json"], 0);
    assert_valid(&v, &applied["plan"], "the `plan` member of `apply --json`");
    assert_eq!(applied["converged"], true, "{applied}");
    let after = sb.json(&["plan", "--json"], 0);
    assert_valid(&v, &after, "`swamp plan --json` after the migration");
    assert_eq!(after["actions"], Value::Array(vec![]), "{after}");
    assert_eq!(after["sources"], Value::Array(vec![]), "{after}");
    assert_eq!(after["target"]["namespace"], "homelab");
    assert!(sb.repo.join(".swamp/homelab/audit/2026-11.log").is_file());
    assert!(
        sb.repo
            .join(".swamp/secrets/local_encryption/prod/db-password.enc")
            .is_file(),
        "secrets stay repo-local"
    );
}

#[test]
fn duplicate_and_conflict_plan_json_matches_the_schema() {
    let v = validator(&plan_schema());
    let sb = sandbox("homelab");
    // An identical copy already at the target, and a different file there.
    let ns = sb.repo.join(".swamp/homelab");
    fs::create_dir_all(ns.join("workflow-runs/nightly")).unwrap();
    fs::copy(
        sb.repo
            .join(".swamp/workflow-runs/nightly/workflow-run-0001.yaml"),
        ns.join("workflow-runs/nightly/workflow-run-0001.yaml"),
    )
    .unwrap();
    fs::create_dir_all(ns.join("audit")).unwrap();
    fs::write(
        ns.join("audit/2026-11.log"),
        "2026-11-03T10:00:00Z bob@laptop data.write something-else version=1\n",
    )
    .unwrap();
    sb.run_ok(&["datastore", "namespace", "set", "homelab"]);

    let doc = sb.json(&["plan", "--json"], 3);
    assert_valid(&v, &doc, "`swamp plan --json` (duplicate + conflict)");
    assert_eq!(
        paths_of(&doc, "drop-duplicate"),
        BTreeSet::from(["workflow-runs/nightly/workflow-run-0001.yaml".to_string()])
    );
    assert!(!paths_of(&doc, "move").contains("audit/2026-11.log"));
    let conflicts = doc["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{doc}");
    let c = &conflicts[0];
    assert_eq!(c["kind"], "different-at-target");
    assert_eq!(c["path"], "audit/2026-11.log");
    assert_ne!(c["source_sha256"], c["target_sha256"]);
    assert_eq!(doc["summary"]["conflicts"], 1);
    assert_eq!(doc["summary"]["drop_duplicate"], 1);
}

#[test]
fn obstacle_plan_json_matches_the_schema() {
    let v = validator(&plan_schema());
    let sb = sandbox("homelab");
    // A plain file where the target's `data/` directory must go.
    fs::create_dir_all(sb.repo.join(".swamp/homelab")).unwrap();
    fs::write(sb.repo.join(".swamp/homelab/data"), "in the way\n").unwrap();
    sb.run_ok(&["datastore", "namespace", "set", "homelab"]);

    let doc = sb.json(&["plan", "--json"], 3);
    assert_valid(&v, &doc, "`swamp plan --json` (obstacle)");
    let conflicts = doc["conflicts"].as_array().unwrap();
    assert!(
        conflicts
            .iter()
            .any(|c| c["kind"] == "obstacle" && c["obstacle"] == "data"),
        "{doc}"
    );
}

#[test]
fn the_plan_schema_is_not_vacuous() {
    let v = validator(&plan_schema());
    let sb = sandbox("homelab");
    sb.run_ok(&["datastore", "namespace", "set", "homelab"]);
    let doc = sb.json(&["plan", "--json"], 0);
    assert_valid(&v, &doc, "the base document");

    let mutate = |f: &dyn Fn(&mut Value)| {
        let mut d = doc.clone();
        f(&mut d);
        d
    };
    let bad: Vec<(&str, Value)> = vec![
        (
            "format_version 2",
            mutate(&|d| d["format_version"] = 2.into()),
        ),
        (
            "unknown top-level member",
            mutate(&|d| d["extra"] = true.into()),
        ),
        (
            "missing summary",
            mutate(&|d| {
                d.as_object_mut().unwrap().remove("summary");
            }),
        ),
        (
            "unknown scope",
            mutate(&|d| d["scope"] = "everything".into()),
        ),
        (
            "unknown action kind",
            mutate(&|d| d["actions"][0]["kind"] = "copy".into()),
        ),
        (
            "snake_case action kind",
            mutate(&|d| {
                d["actions"]
                    .as_array_mut()
                    .unwrap()
                    .push(serde_json::json!({"kind": "finish_migration"}))
            }),
        ),
        (
            "move without sha256",
            mutate(&|d| {
                d["actions"][0].as_object_mut().unwrap().remove("sha256");
            }),
        ),
        (
            "path escaping the tier",
            mutate(&|d| d["actions"][0]["path"] = "data/../../etc/passwd".into()),
        ),
        (
            "path outside a tier",
            mutate(&|d| d["actions"][0]["path"] = "secrets/key".into()),
        ),
        (
            "absolute path",
            mutate(&|d| d["actions"][0]["path"] = "/data/x/1/raw".into()),
        ),
        (
            "bare tier",
            mutate(&|d| d["actions"][0]["path"] = "data".into()),
        ),
        (
            "negative source",
            mutate(&|d| d["actions"][0]["source"] = (-1).into()),
        ),
        (
            "fingerprint without prefix",
            mutate(&|d| {
                let fp = d["fingerprint"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("sha256:")
                    .to_string();
                d["fingerprint"] = fp.into();
            }),
        ),
        (
            "reserved target namespace",
            mutate(&|d| d["target"]["namespace"] = "data".into()),
        ),
        (
            "target without root",
            mutate(&|d| {
                d["target"].as_object_mut().unwrap().remove("root");
            }),
        ),
        (
            "summary with kebab-case key",
            mutate(&|d| {
                let s = d["summary"].as_object_mut().unwrap();
                let n = s.remove("drop_duplicate").unwrap();
                s.insert("drop-duplicate".into(), n);
            }),
        ),
        (
            "conflict of unknown kind",
            mutate(&|d| {
                d["conflicts"] = serde_json::json!([{"kind": "weird", "path": "data/a/1/raw"}])
            }),
        ),
    ];
    for (what, d) in bad {
        assert!(
            !v.is_valid(&d),
            "the plan schema accepts a document with {what}"
        );
    }
}

// ------------------------------------------------- every variant, by type

/// A schema that validates one `$defs` entry of the plan schema.
fn plan_def_validator(def: &str) -> jsonschema::Validator {
    let plan = plan_schema();
    validator(&serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/$defs/{def}"),
        "$defs": plan["$defs"],
    }))
}

#[test]
fn every_action_and_conflict_kind_matches_the_schema() {
    let actions = plan_def_validator("action");
    let built: BTreeSet<&str> = every_action().iter().map(|a| a.kind()).collect();
    let known: BTreeSet<&str> = swamp::plan::Action::KINDS.into_iter().collect();
    assert_eq!(built, known, "every_action() covers every action kind");
    for a in every_action() {
        let doc = serde_json::to_value(&a).unwrap();
        assert_valid(&actions, &doc, &format!("action `{}`", a.kind()));
    }

    let conflicts = plan_def_validator("conflict");
    let schema_kinds =
        string_enum(&plan_schema()["$defs"]["conflict"]["properties"]["kind"]["enum"]);
    let built: BTreeSet<String> = every_conflict()
        .iter()
        .map(|c| c.kind().to_string())
        .collect();
    assert_eq!(
        built, schema_kinds,
        "every_conflict() covers the schema's conflict kinds"
    );
    for c in every_conflict() {
        let doc = serde_json::to_value(&c).unwrap();
        assert_valid(&conflicts, &doc, &format!("conflict `{}`", c.kind()));
    }
}

#[test]
fn a_sync_plan_document_matches_the_schema() {
    use swamp::config::{ConflictPolicy, DatastoreConfig, Namespace, Placement};
    use swamp::plan::RemoteInfo;
    use swamp::plan::{PlacementInfo, Plan, SavedPlan};
    use swamp::state::{Desired, Observed, Scope};

    let datastore = DatastoreConfig::S3 {
        bucket: "swamp-data".into(),
        prefix: Some("repos".into()),
        region: Some("eu-west-1".into()),
        endpoint: Some("http://127.0.0.1:8333".into()),
    };
    let namespace = Some(Namespace::parse("homelab").unwrap());
    let plan = Plan {
        scope: Scope::Sync,
        target: PlacementInfo {
            datastore: datastore.clone(),
            namespace: namespace.clone(),
            root: "$SWAMP_HOME/repos/7d0c6f1e-2b1a-4c3e-9f6a-5e4d3c2b1a09/homelab".into(),
            dir: PathBuf::from(
                "/home/u/.swamp/repos/7d0c6f1e-2b1a-4c3e-9f6a-5e4d3c2b1a09/homelab",
            ),
        },
        sources: vec![],
        remote: Some(RemoteInfo {
            url: "s3://swamp-data/repos/homelab/".into(),
            key_prefix: "repos/homelab/".into(),
            objects: 2500,
            batch_delete: true,
            prechecked: vec![
                swamp::store::enforced::Prechecked::Delete,
                swamp::store::enforced::Prechecked::Copy,
            ],
            multipart_threshold: Some(256 << 20),
            conflict_policy: ConflictPolicy::KeepBoth,
            forced: false,
            forced_delete_local: false,
            base_ignored: false,
            hydrate: true,
            unhydrated: 1200,
            resolved: every_conflict()
                .into_iter()
                .filter(|c| c.kind() == "both-changed")
                .collect(),
            folder_markers: 2,
            unmanaged: vec![
                swamp::state::remote::Unmanaged {
                    name: "_index/".into(),
                    objects: 40,
                },
                swamp::state::remote::Unmanaged {
                    name: "notes.txt".into(),
                    objects: 1,
                },
            ],
            skipped_local: vec![
                swamp::state::Obstacle {
                    path: "outputs/latest".into(),
                    kind: swamp::state::ObstacleKind::Symlink,
                    link: Some("run-0002".into()),
                },
                swamp::state::Obstacle::new("data/a\\b", swamp::state::ObstacleKind::BadName),
            ],
            remote_id: Some("2b0c6f1e-7d1a-4c3e-9f6a-5e4d3c2b1a77".into()),
            base_reset: Some("the last sync was with a remote whose id was 1f…; s3://swamp-data/repos/homelab/ now holds 2b…".into()),
        }),
        actions: every_action()
            .into_iter()
            .filter(|a| !matches!(a.kind(), "move" | "drop-duplicate" | "finish-migration"))
            .collect(),
        conflicts: vec![],
        no_undo: true,
        diffs: {
            use swamp::plan::Side;
            use swamp::plan::textdiff::{ContentDiff, DiffBody, DiffFor};
            let one = |path: &str, shown_for, body, old_size| ContentDiff {
                path: swamp::layout::TierPath::parse(path).unwrap(),
                shown_for,
                old: Side::Remote,
                new: Side::Cache,
                old_size,
                new_size: Some(3),
                body,
                read_remote: old_size.is_some(),
            };
            vec![
                one(
                    "outputs/a.txt",
                    DiffFor::Conflict,
                    DiffBody::Text {
                        diff: "--- remote/outputs/a.txt\n+++ cache/outputs/a.txt\n".into(),
                    },
                    Some(2),
                ),
                one("outputs/b.bin", DiffFor::Upload, DiffBody::Binary, Some(4)),
                one(
                    "outputs/c.log",
                    DiffFor::Download,
                    DiffBody::TooLarge { limit: 65536 },
                    None,
                ),
                one(
                    "outputs/d.txt",
                    DiffFor::Conflict,
                    DiffBody::Unavailable {
                        reason: "the remote object changed since it was listed; plan again".into(),
                    },
                    Some(5),
                ),
            ]
        },
        resumes: {
            use swamp::plan::resume::{Resume, Transfer};
            vec![
                Resume {
                    path: swamp::layout::TierPath::parse("data/big/1/raw").unwrap(),
                    transfer: Transfer::Upload,
                    done: 24 << 20,
                    size: 256 << 20,
                },
                Resume {
                    path: swamp::layout::TierPath::parse("outputs/weights.bin").unwrap(),
                    transfer: Transfer::Download,
                    done: 612 << 20,
                    size: 1 << 30,
                },
            ]
        },
        other_clones: Vec::new(),
        authored: Vec::new(),
    };
    let desired = Desired {
        scope: Scope::Sync,
        target: Placement {
            datastore,
            namespace,
        },
        sources: vec![],
    };
    let repo_id = "7d0c6f1e-2b1a-4c3e-9f6a-5e4d3c2b1a09".parse().unwrap();
    let observed: Observed = serde_json::from_value(serde_json::json!({"placements": []})).unwrap();
    let saved = SavedPlan::new(repo_id, plan, &desired, observed);
    let v = validator(&plan_schema());
    let doc = saved.to_json();
    assert_valid(&v, &doc, "a sync plan built from the types");
    assert_eq!(doc["summary"]["upload"], 2);
    // Three, and the resumed multipart upload's listing of its parts.
    assert_eq!(doc["summary"]["requests"]["list"], 4);
    assert_eq!(doc["remote"]["conflict_policy"], "keep-both");
    // And as a saved file, with the (empty) observed snapshot.
    assert_valid(
        &v,
        &serde_json::to_value(&saved).unwrap(),
        "the same plan as saved",
    );
}

// ------------------------------------------------- sync plans, real servers

fn sync_plan_json_matches_the_schema(backend: Backend) {
    let v = validator(&plan_schema());
    let bucket = Bucket::new(backend);
    let (spec, env) = (bucket.spec(), bucket.env());
    let a = Repo::empty(env);
    a.run_ok(&["init", "--datastore", &spec, "--namespace", "homelab"]);
    let config_text = fs::read_to_string(a.root.join(".swamp.toml")).unwrap();
    assert_valid(
        &validator(&config_schema()),
        &toml_to_json(&config_text),
        &format!("the .swamp.toml `swamp init --datastore {spec}` writes"),
    );
    a.write_cache("homelab/outputs/x.yaml", "base\n");
    a.write_cache("homelab/outputs/keep.yaml", "keep\n");

    // First push: uploads, create-only.
    let doc = a.json(&["plan", "--json"], 0);
    assert_valid(&v, &doc, "a sync plan with uploads");
    assert!(doc["remote"].is_object(), "{doc}");
    assert!(
        doc["remote"]["key_prefix"]
            .as_str()
            .unwrap()
            .ends_with("homelab/")
    );
    assert_eq!(
        paths_of(&doc, "upload"),
        BTreeSet::from([
            "outputs/keep.yaml".to_string(),
            "outputs/x.yaml".to_string()
        ])
    );
    for act in doc["actions"].as_array().unwrap() {
        if act["kind"] == "upload" {
            assert_eq!(act["remote"]["state"], "absent", "{act}");
        }
    }
    assert_eq!(doc["summary"]["upload"], 2);
    assert_eq!(
        doc["summary"]["note_progress"], 1,
        "a first sync notes the clone"
    );
    // The two uploads, the clone's first note and the history record
    // (written first, rewritten last).
    assert_eq!(doc["summary"]["requests"]["put"], 5);
    a.run_ok(&["datastore", "sync", "-y"]);
    let synced = a.json(&["plan", "--json"], 0);
    assert_valid(&v, &synced, "a converged sync plan");
    assert_eq!(synced["actions"], Value::Array(vec![]), "{synced}");

    // A fresh clone: downloads.
    let b = a.clone_elsewhere();
    let doc = b.json(&["plan", "--json"], 0);
    assert_valid(&v, &doc, "a sync plan with downloads");
    assert_eq!(paths_of(&doc, "download").len(), 2, "{doc}");
    b.run_ok(&["datastore", "sync", "-y"]);

    // Both sides change one file: a conflict, then keep-both settles it.
    a.write_cache("homelab/outputs/x.yaml", "from a\n");
    a.run_ok(&["datastore", "sync", "-y"]);
    b.write_cache("homelab/outputs/x.yaml", "from b\n");
    let doc = b.json(&["plan", "--json"], 3);
    assert_valid(&v, &doc, "a sync plan with a both-changed conflict");
    let conflicts = doc["conflicts"].as_array().unwrap();
    assert!(
        conflicts
            .iter()
            .any(|c| c["kind"] == "both-changed" && c["path"] == "outputs/x.yaml"),
        "{doc}"
    );
    let doc = b.json(&["plan", "--json", "--conflict", "keep-both"], 0);
    assert_valid(&v, &doc, "a sync plan settled with keep-both");
    assert_eq!(doc["remote"]["conflict_policy"], "keep-both");
    assert!(
        !doc["remote"]["resolved"].as_array().unwrap().is_empty(),
        "{doc}"
    );
    assert!(
        crate::support::action_kinds(&doc).contains(&"rename-local"),
        "{doc}"
    );

    // Emptying the cache trips a delete guard.
    fs::remove_dir_all(a.cache().join("homelab")).unwrap();
    let doc = a.json(&["plan", "--json"], 3);
    assert_valid(&v, &doc, "a sync plan refused by a delete guard");
    assert!(
        doc["conflicts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["kind"] == "delete-guard"),
        "{doc}"
    );
    // Forced, it deletes the remote copies.
    let doc = a.json(&["plan", "--json", "--force"], 0);
    assert_valid(&v, &doc, "a forced sync plan with remote deletes");
    assert_eq!(paths_of(&doc, "delete-remote").len(), 2, "{doc}");
    assert_eq!(doc["remote"]["forced"], true);
}

#[test]
fn s3_sync_plan_json_matches_the_schema() {
    sync_plan_json_matches_the_schema(Backend::S3);
}

#[test]
fn gcs_sync_plan_json_matches_the_schema() {
    sync_plan_json_matches_the_schema(Backend::Gcs);
}

// ------------------------------------------------------------- doctor

fn doctor_schema() -> Value {
    read_json(&manifest_dir().join("schemas/doctor.schema.json"))
}

#[test]
fn the_doctor_schema_is_a_valid_draft_2020_12_schema() {
    let schema = doctor_schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
        panic!("doctor schema is not a valid draft 2020-12 schema: {e}");
    }
    validator(&schema);
    // Every check swamp runs has a name the schema knows.
    let names = string_enum(&schema["$defs"]["check_name"]["enum"]);
    for check in swamp::doctor::checks() {
        assert!(names.contains(check.name()), "{}", check.name());
    }
}

/// Checks a doctor document, and each plan it embeds against the plan schema.
fn assert_doctor_valid(doc: &Value, what: &str) {
    assert_valid(&validator(&doctor_schema()), doc, what);
    if let Some(plans) = doc["repair"]["plans"].as_array() {
        let v = validator(&plan_schema());
        for p in plans {
            assert_valid(&v, p, &format!("a plan in {what}"));
        }
    }
}

#[test]
fn doctor_json_matches_the_schema_through_a_repair() {
    let sb = sandbox("homelab");
    sb.run_ok(&[
        "datastore",
        "namespace",
        "set",
        "homelab",
        "--migrate",
        "-y",
    ]);
    sb.run_ok(&["data", "list"]);
    let doc = sb.json(&["--json", "doctor", "datastores"], 0);
    assert_doctor_valid(&doc, "`doctor datastores --json` (healthy, local)");
    assert_eq!(doc["ok"], true);
    assert!(doc.get("repair").is_none(), "{doc}");
    let doc = sb.json(&["--json", "doctor", "datastores", "--repair"], 0);
    assert_doctor_valid(&doc, "`doctor --repair` with nothing to repair");
    assert_eq!(doc["repair"]["needed"], false);

    // A byte-identical root copy, and a differing one: conflicts.
    let ns = sb.repo.join(".swamp/homelab");
    let root = sb.repo.join(".swamp");
    fs::create_dir_all(root.join("audit")).unwrap();
    fs::copy(ns.join("audit/2026-11.log"), root.join("audit/2026-11.log")).unwrap();
    fs::create_dir_all(root.join("workflow-runs/nightly")).unwrap();
    fs::write(
        root.join("workflow-runs/nightly/workflow-run-0001.yaml"),
        "differs\n",
    )
    .unwrap();
    let doc = sb.json(&["--json", "doctor", "datastores"], 1);
    assert_doctor_valid(&doc, "`doctor datastores --json` (layout fails)");
    let doc = sb.json(&["--json", "doctor", "datastores", "--repair", "-y"], 3);
    assert_doctor_valid(&doc, "`doctor --repair -y` blocked by a conflict");
    assert_eq!(doc["repair"]["results"], Value::Array(vec![]));

    fs::remove_file(root.join("workflow-runs/nightly/workflow-run-0001.yaml")).unwrap();
    let doc = sb.json(&["--json", "doctor", "datastores", "--repair"], 2);
    assert_doctor_valid(&doc, "`doctor --repair` preview");
    assert_eq!(doc["repair"]["preview"], true);
    let doc = sb.json(&["--json", "doctor", "datastores", "--repair", "-y"], 0);
    assert_doctor_valid(&doc, "`doctor --repair -y` applied");
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(doc["repair"]["results"][0]["status"], "applied");
}

fn doctor_json_on_a_bucket_matches_the_schema(backend: Backend) {
    let bucket = Bucket::new(backend);
    let (spec, env) = (bucket.spec(), bucket.env());
    let a = Repo::empty(env);
    a.run_ok(&["init", "--datastore", &spec, "--namespace", "homelab"]);
    a.write_cache("homelab/outputs/x.yaml", "x\n");
    a.run_ok(&["datastore", "sync", "-y"]);
    let doc = a.json(&["--json", "doctor", "datastores"], 0);
    assert_doctor_valid(&doc, "`doctor datastores --json` on a bucket");
    a.write_cache("outputs/x.yaml", "x\n");
    a.write_cache("homelab/outputs/y.yaml", "y\n");
    let doc = a.json(&["--json", "doctor", "datastores", "--repair", "-y"], 0);
    assert_doctor_valid(&doc, "`doctor --repair -y` on a bucket, drift left");
    let drift = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "drift")
        .unwrap();
    assert_eq!(drift["status"], "warn", "{doc}");
    assert_eq!(doc["checks"][3]["name"], "layout");
    assert_eq!(doc["checks"][3]["status"], "pass", "{doc}");
}

#[test]
fn s3_doctor_json_matches_the_schema() {
    doctor_json_on_a_bucket_matches_the_schema(Backend::S3);
}

#[test]
fn gcs_doctor_json_matches_the_schema() {
    doctor_json_on_a_bucket_matches_the_schema(Backend::Gcs);
}

fn run_schema() -> Value {
    read_json(&manifest_dir().join("schemas/run.schema.json"))
}

/// `swamp pull --json` without `-y` printed only `preview` and `applied`,
/// an applied run `{plan, applied, converged, remaining}`, a conflict
/// `{plan, applied, converged, recorded}` with no `error`, and a failure
/// `{error}` alone (issue 42). Every outcome of a command that applies a
/// plan now prints the same keys in the same order, valid against
/// `schemas/run.schema.json`, with `reason` and `error` saying why.
#[test]
fn a_command_that_applies_prints_one_json_shape_whatever_the_outcome() {
    let run = validator(&run_schema());
    let plan = validator(&plan_schema());
    let sb = sandbox("homelab");
    let ns = sb.repo.join(".swamp/homelab");
    fs::create_dir_all(ns.join("audit")).unwrap();
    fs::write(ns.join("audit/2026-11.log"), "not the same\n").unwrap();
    sb.run_ok(&["datastore", "namespace", "set", "homelab"]);

    let mut keys: Option<Vec<String>> = None;
    let mut check = |args: &[&str], code: i32, reason: Option<&str>, error: Option<&str>| {
        let doc = sb.json(args, code);
        assert_valid(&run, &doc, &format!("swamp {args:?}"));
        for member in ["plan", "remaining"] {
            if !doc[member].is_null() {
                assert_valid(&plan, &doc[member], &format!("{member} of swamp {args:?}"));
            }
        }
        let these: Vec<String> = doc.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys.get_or_insert_with(|| these.clone()),
            &these,
            "{args:?}"
        );
        assert_eq!(doc["reason"]["kind"].as_str(), reason, "{args:?}: {doc}");
        assert_eq!(doc["error"]["kind"].as_str(), error, "{args:?}: {doc}");
        if let Some(kind) = error {
            assert_eq!(doc["error"]["exit_code"], code, "{kind}");
        }
        doc
    };
    let conflict = check(
        &["apply", "-y", "--json"],
        3,
        Some("conflicts"),
        Some("conflicts"),
    );
    assert_eq!(conflict["converged"], false);
    fs::remove_file(ns.join("audit/2026-11.log")).unwrap();
    let preview = check(&["apply", "--json"], 2, Some("not-confirmed"), None);
    assert_eq!(preview["preview"], true);
    assert!(preview["applied"].is_null());
    check(&["apply", "--json", "--dry-run"], 0, Some("dry-run"), None);
    let applied = check(&["apply", "-y", "--json"], 0, None, None);
    assert_eq!(applied["converged"], true);
    assert!(applied["applied"].is_object());
    check(&["apply", "--json"], 0, Some("no-changes"), None);
    // Failures before any plan: the same keys, `plan` null.
    let failed = check(
        &["datastore", "sync", "--json"],
        64,
        Some("failed"),
        Some("usage"),
    );
    assert!(failed["plan"].is_null());
    check(
        &["apply", "--json", "--bogus"],
        64,
        Some("failed"),
        Some("usage"),
    );

    // `undo` keeps the rule with its own first key: `undo`, not `plan`.
    // (A gc sets a version aside: an apply to undo.)
    fs::write(sb.repo.join("v.txt"), "one\n").unwrap();
    sb.run_ok(&["data", "put", "notes", "--file", "v.txt"]);
    fs::write(sb.repo.join("v.txt"), "two\n").unwrap();
    sb.run_ok(&["data", "put", "notes", "--file", "v.txt"]);
    let gc = sb.json(&["--json", "data", "gc", "--keep", "1"], 0)["apply_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut undo_keys: Option<Vec<String>> = None;
    let mut undo = |args: &[&str], code: i32, reason: Option<&str>| {
        let doc = sb.json(args, code);
        let these: Vec<String> = doc.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            undo_keys.get_or_insert_with(|| these.clone()),
            &these,
            "{args:?}"
        );
        assert_eq!(doc["reason"]["kind"].as_str(), reason, "{args:?}: {doc}");
        doc
    };
    assert_eq!(
        undo(&["undo", "--json"], 2, Some("not-confirmed"))["preview"],
        true
    );
    assert!(undo(&["undo", "-y", "--json"], 0, None)["applied"].is_object());
    // Undone already (a bare undo would walk on to the move before it).
    undo(&["undo", &gc, "-y", "--json"], 0, Some("no-changes"));
    let failed = undo(&["undo", "nosuch", "--json"], 1, Some("failed"));
    assert_eq!(failed["error"]["exit_code"], 1);
}
