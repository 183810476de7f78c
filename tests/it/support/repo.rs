//! The one repository harness of the end-to-end tests: a repository is
//! the real binary run in a temp dir with its own `SWAMP_HOME` ("one
//! machine"), every command in the pinned environment of
//! [`super::pinned`]. On the embedded default datastore
//! ([`Repo::local`]) or a bucket ([`Repo::init`]); another machine is a
//! clone ([`Repo::clone_elsewhere`]).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use tempfile::TempDir;

use super::bucket::Bucket;

/// A repository on one "machine" (its own SWAMP_HOME).
pub struct Repo {
    _dir: TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub env: Vec<(&'static str, String)>,
}

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    #[track_caller]
    pub fn expect(&self, code: i32) -> &Run {
        assert_eq!(
            self.code,
            Some(code),
            "expected exit {code}\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }

    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", self.stdout))
    }
}

impl Repo {
    pub fn empty(env: Vec<(&'static str, String)>) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("repo");
        let home = dir.path().canonicalize().unwrap().join("home");
        std::fs::create_dir_all(&root).unwrap();
        Repo {
            _dir: dir,
            root,
            home,
            env,
        }
    }

    pub fn init(bucket: &Bucket, namespace: Option<&str>) -> Repo {
        let repo = Repo::empty(bucket.env());
        let spec = bucket.spec();
        let mut args = vec!["init", "--datastore", spec.as_str()];
        if let Some(ns) = namespace {
            args.extend(["--namespace", ns]);
        }
        repo.run(&args).expect(0);
        repo
    }

    /// The same repository on another machine: its .swamp.toml, an empty cache.
    pub fn clone_elsewhere(&self) -> Repo {
        let repo = Repo::empty(self.env.clone());
        std::fs::copy(self.root.join(".swamp.toml"), repo.root.join(".swamp.toml")).unwrap();
        repo
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(super::swamp_bin());
        super::pinned(&mut c, &self.home)
            .current_dir(&self.root)
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            .args(args);
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[])
    }

    #[track_caller]
    pub fn run_ok(&self, args: &[&str]) {
        self.run(args).expect(0);
    }

    /// Runs, expects exit `code`, and parses stdout as one JSON document.
    #[track_caller]
    pub fn json(&self, args: &[&str], code: i32) -> serde_json::Value {
        let run = self.run(args);
        run.expect(code);
        run.json()
    }

    /// Runs with extra environment (`FAILPOINTS=…`, `SWAMP_NOW=…`).
    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let out = self
            .command(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let run = Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        super::vocabulary::check(args, &run.stdout, &run.stderr);
        run
    }

    /// Runs on a pseudo-terminal (util-linux's `script`), as a person at a
    /// terminal would: stdin, stdout and stderr are the terminal, and
    /// `stdout` holds everything the screen was sent.
    pub fn run_on_terminal(&self, args: &[&str]) -> Run {
        let bin = super::swamp_bin();
        let line = std::iter::once(bin.display().to_string())
            .chain(
                args.iter()
                    .map(|a| format!("'{}'", a.replace('\'', "'\\''"))),
            )
            .collect::<Vec<_>>()
            .join(" ");
        let out = super::pinned(&mut Command::new("script"), &self.home)
            .args(["-qec", &line, "/dev/null"])
            .current_dir(&self.root)
            .env("TERM", "xterm")
            .env_remove("NO_COLOR")
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .output()
            .expect("util-linux `script` runs a command on a pseudo-terminal");
        let run = Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        super::vocabulary::check(args, &run.stdout, &run.stderr);
        run
    }

    /// Starts the binary without waiting for it (output captured).
    pub fn spawn(&self, args: &[&str], env: &[(&str, &str)]) -> Child {
        self.command(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Starts the binary with a pipe for stdin the caller holds open.
    pub fn spawn_piped(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    pub fn repo_id(&self) -> String {
        let c: toml::Value =
            toml::from_str(&std::fs::read_to_string(self.root.join(".swamp.toml")).unwrap())
                .unwrap();
        c["repo_id"].as_str().unwrap().to_string()
    }

    pub fn cache(&self) -> PathBuf {
        self.home.join("repos").join(self.repo_id())
    }

    /// `swamp data put NAME` with `content`.
    pub fn put(&self, name: &str, content: &str) {
        let f = self.root.join("input.txt");
        std::fs::write(&f, content).unwrap();
        self.run(&["data", "put", name, "--file", "input.txt"])
            .expect(0);
    }

    pub fn write_cache(&self, rel: &str, content: &str) {
        let p = self.cache().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// Appends `text` to `.swamp.toml`.
    pub fn append_config(&self, text: &str) {
        let p = self.root.join(".swamp.toml");
        let mut s = std::fs::read_to_string(&p).unwrap();
        s.push_str(text);
        std::fs::write(p, s).unwrap();
    }

    /// A fresh repository on the embedded default datastore, made by
    /// `swamp init` with `args`.
    pub fn local(args: &[&str]) -> Repo {
        let repo = Repo::empty(Vec::new());
        let mut init = vec!["init"];
        init.extend_from_slice(args);
        repo.run(&init).expect(0);
        repo
    }

    /// A typical solo-layout repository: two data versions, outputs, a
    /// workflow run, an audit log, and repo-local secrets and vault
    /// bundles.
    pub fn with_solo_data() -> Repo {
        let repo = Repo::local(&[]);
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

    /// The command, pinned, for assertions on its output.
    pub fn cmd(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.command(&[]))
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

    /// Every file under `rel` (relative path → bytes).
    pub fn tree(&self, rel: &str) -> BTreeMap<String, Vec<u8>> {
        super::tree(&self.path(rel))
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
}

/// The output of a spawned child, once it exits.
pub fn finish(child: Child) -> Run {
    let out = child.wait_with_output().unwrap();
    let run = Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    // Its arguments are not known here: a JSON document is left aside.
    if !run.stdout.trim_start().starts_with('{') {
        super::vocabulary::check(&[], &run.stdout, &run.stderr);
    }
    run
}
