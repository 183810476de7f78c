//! Test support shared by every integration test: the servers, buckets
//! and repositories, the fault proxy, and the one pinned environment every
//! command runs in.

#[macro_use]
pub mod bucket;
pub mod faults;
pub mod gcs_rewrites;
pub mod gcs_sessions;
pub mod kinds;
pub mod repo;
pub mod servers;
pub mod vocabulary;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The `swamp` binary under test.
pub fn swamp_bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("swamp")
}

/// Clears `cmd`'s environment and pins what a command may see: `PATH`
/// (to find `script` and the like), `TMPDIR` if set, `HOME` and
/// `SWAMP_HOME` at `home`, a fixed user, UTC, a UTF-8 C locale and no
/// colour. Nothing else of the developer's shell (`SWAMP_NOW`, `SWAMP_CLOCK_SKEW`, `SWAMP_CLOCK_FILE`,
/// `SWAMP_LOCK_TIMEOUT`, `SWAMP_RETRY_BUDGET`, `AWS_PROFILE`, `FAILPOINTS`,
/// …) leaks in: a test that wants one sets it.
pub fn pinned<'c>(cmd: &'c mut Command, home: &Path) -> &'c mut Command {
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("SWAMP_HOME", home)
        .env("USER", "tester")
        .env("LOGNAME", "tester")
        .env("TZ", "UTC")
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        // No instance-metadata lookups for credentials.
        .env("AWS_EC2_METADATA_DISABLED", "true");
    if let Some(tmp) = std::env::var_os("TMPDIR") {
        cmd.env("TMPDIR", tmp);
    }
    cmd
}

/// Every regular file under `root` (relative path → bytes); empty when
/// `root` does not exist.
#[allow(dead_code)]
pub fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    if !root.exists() {
        return out;
    }
    for e in walkdir::WalkDir::new(root).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string();
            out.insert(rel, std::fs::read(e.path()).unwrap());
        }
    }
    out
}

/// The kinds of a plan document's actions, in order.
#[allow(dead_code)]
pub fn action_kinds(plan: &serde_json::Value) -> Vec<&str> {
    plan["actions"]
        .as_array()
        .expect("a plan document has actions")
        .iter()
        .map(|a| a["kind"].as_str().expect("every action has a kind"))
        .collect()
}

/// The check named `name` in a `doctor datastores --json` document.
#[allow(dead_code)]
#[track_caller]
pub fn doctor_check<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check `{name}` in {doc}"))
}

/// Every check's status in a `doctor datastores --json` document.
#[allow(dead_code)]
pub fn doctor_statuses(doc: &serde_json::Value) -> BTreeMap<String, String> {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Snapshot settings: snapshots live in the top-level `snapshots/`.
#[macro_export]
macro_rules! snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({
            snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!($name, $value);
        })
    };
}
