//! The harness: a temp repo, a temp SWAMP_HOME, and helpers to run the
//! binary and look at the tree.

use std::collections::BTreeMap;
use std::path::PathBuf;

use assert_cmd::Command;
use tempfile::TempDir;

pub use crate::support::bucket::Run;

pub struct TestRepo {
    _dir: TempDir,
    _home: TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
}

impl TestRepo {
    /// A fresh repo made by `swamp init` with the given extra arguments.
    pub fn init(args: &[&str]) -> TestRepo {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        let repo = TestRepo {
            root,
            home: home.path().canonicalize().unwrap(),
            _dir: dir,
            _home: home,
        };
        let mut init = vec!["init"];
        init.extend_from_slice(args);
        repo.run(&init).expect(0);
        repo
    }

    pub fn cmd(&self) -> Command {
        let mut c = std::process::Command::new(crate::support::swamp_bin());
        crate::support::pinned(&mut c, &self.home).current_dir(&self.root);
        Command::from_std(c)
    }

    pub fn run(&self, args: &[&str]) -> Run {
        let output = self.cmd().args(args).output().unwrap();
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// Sets the file's mtime an hour back: older than the two seconds
    /// within which swamp does not trust a stamp (so the hash cache keeps
    /// what it learnt about it), as data written by an earlier run is.
    pub fn backdate(&self, rel: &str) {
        std::fs::File::options()
            .write(true)
            .open(self.path(rel))
            .unwrap()
            .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
            .unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    pub fn config(&self) -> String {
        self.read(".swamp.toml")
    }

    pub fn repo_id(&self) -> String {
        let c: toml::Value = toml::from_str(&self.config()).unwrap();
        c["repo_id"].as_str().unwrap().to_string()
    }

    /// Every file under `rel` (relative path → bytes).
    pub fn tree(&self, rel: &str) -> BTreeMap<String, Vec<u8>> {
        tree(&self.path(rel))
    }

    /// Replaces what differs between runs: temp paths, the repo id, the
    /// fingerprint.
    pub fn filter(&self, text: &str) -> String {
        let mut out = text
            .replace(self.root.to_str().unwrap(), "[REPO]")
            .replace(self.home.to_str().unwrap(), "[HOME]")
            .replace(&self.repo_id(), "[REPO_ID]");
        while let Some(i) = out.find("\"sha256:") {
            let end = i + 1 + "sha256:".len() + 64;
            out.replace_range(i + 1..end, "[FINGERPRINT]");
        }
        out
    }

    /// A typical solo-layout repo: two data versions, outputs, a workflow
    /// run, an audit log, and repo-local secrets and vault bundles.
    pub fn with_solo_data() -> TestRepo {
        let repo = TestRepo::init(&[]);
        repo.seed();
        repo
    }

    pub fn seed(&self) {
        self.write(".swamp/data/web/state/1/raw", "replicas: 1\n");
        self.write(".swamp/data/web/state/2/raw", "replicas: 2\n");
        self.write(
            ".swamp/outputs/deploy/web-1.yaml",
            "status: ok\nhost: web-1\n",
        );
        self.write(
            ".swamp/workflow-runs/nightly/run-0001.yaml",
            "result: passed\n",
        );
        self.write(".swamp/audit/2026-11.log", "alice applied\n");
        self.write(".swamp/secrets/local_encryption/prod/db.enc", "SECRET");
        self.write(".swamp/vault-bundles/prod.bundle", "BUNDLE");
    }
}

pub use crate::support::tree;

/// The datastore files of a tree: no catalog files, no reconciler state.
pub fn data_files(tree: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    tree.iter()
        .filter(|(k, _)| !k.contains("_catalog.db") && !k.starts_with("state/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
