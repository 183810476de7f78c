//! A bucket on one backend and repositories using it, for the end-to-end
//! tests that run the same scenario on a directory object store
//! (`endpoint=file:///dir`), SeaweedFS (S3) and fake-gcs-server (GCS).
//! Repositories are the real binary in temp dirs; "another machine" is
//! another `SWAMP_HOME` with a copy of `.swamp.toml` (a clone).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use swamp::store::{Precondition, Store, StoreOptions};
use tempfile::TempDir;

use super::servers;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A directory as the object store (`endpoint=file:///dir`).
    Fs,
    S3,
    Gcs,
}

pub struct Bucket {
    pub backend: Backend,
    pub name: String,
    /// For `Fs`: the directory holding the bucket directories.
    dir: Option<TempDir>,
    /// An endpoint the repositories use instead of the server's own (a
    /// fault proxy); the test's own reads and writes go straight to it.
    via: Option<String>,
}

impl Bucket {
    pub fn new(backend: Backend) -> Bucket {
        let (name, dir) = match backend {
            Backend::Fs => {
                let dir = tempfile::tempdir().unwrap();
                std::fs::create_dir(dir.path().join("bucket")).unwrap();
                ("bucket".to_string(), Some(dir))
            }
            Backend::S3 => (servers::s3().fresh_bucket(), None),
            Backend::Gcs => (servers::gcs().fresh_bucket(), None),
        };
        Bucket {
            backend,
            name,
            dir,
            via: None,
        }
    }

    /// A bucket on S3 or GCS whose repositories reach it through a fault
    /// proxy.
    pub fn behind_proxy(backend: Backend) -> (Bucket, super::faults::FaultProxy) {
        let upstream = match backend {
            Backend::S3 => servers::s3().addr().to_string(),
            Backend::Gcs => servers::gcs().addr().to_string(),
            Backend::Fs => panic!("a directory store has no server to put a proxy in front of"),
        };
        let proxy = super::faults::FaultProxy::start(&upstream);
        let mut bucket = Bucket::new(backend);
        bucket.via = Some(proxy.endpoint.clone());
        (bucket, proxy)
    }

    pub fn fs_root(&self) -> PathBuf {
        self.dir.as_ref().unwrap().path().canonicalize().unwrap()
    }

    /// The datastore spec with prefix `swamp`.
    pub fn spec(&self) -> String {
        match self.backend {
            Backend::Fs => format!(
                "s3://{}/swamp?endpoint=file://{}",
                self.name,
                self.fs_root().display()
            ),
            Backend::S3 => format!(
                "s3://{}/swamp?region=us-east-1&endpoint={}",
                self.name,
                self.via.as_ref().unwrap_or(&servers::s3().endpoint)
            ),
            Backend::Gcs => format!(
                "gs://{}/swamp?endpoint={}",
                self.name,
                self.via.as_ref().unwrap_or(&servers::gcs().endpoint)
            ),
        }
    }

    /// What the binary needs in its environment to talk to the server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        match self.backend {
            Backend::Fs | Backend::Gcs => servers::gcs_child_env(),
            Backend::S3 => servers::s3_child_env(),
        }
    }

    pub fn store(&self) -> Arc<dyn Store> {
        let ds = match self.backend {
            Backend::Fs => swamp::config::DatastoreConfig::S3 {
                bucket: self.name.clone(),
                prefix: None,
                region: None,
                endpoint: Some(format!("file://{}", self.fs_root().display())),
            },
            Backend::S3 => servers::s3().datastore(&self.name, None),
            Backend::Gcs => servers::gcs().datastore(&self.name, None),
        };
        let options = StoreOptions {
            s3_credentials: Some(servers::s3_credentials()),
            ..StoreOptions::default()
        };
        swamp::store::open_with(&ds, options).unwrap()
    }

    pub fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// Writes an object through the store (with correct sha256 metadata).
    pub fn put(&self, key: &str, body: &[u8]) {
        Bucket::block_on(
            self.store()
                .put_bytes(key, body.to_vec(), &Precondition::None),
        )
        .unwrap();
    }

    /// Writes an object straight to the server, as another tool would
    /// (for keys the store itself refuses to write).
    pub fn raw_put(&self, key: &str, body: &[u8]) {
        let sha = sha(body);
        match self.backend {
            Backend::Fs => self.put(key, body),
            Backend::S3 => servers::s3().raw_put(&self.name, key, body, &sha),
            Backend::Gcs => servers::gcs().raw_put(&self.name, key, body, &sha),
        }
    }

    /// Writes an object as another tool would: no swamp metadata (on a
    /// directory store, a file put there by hand).
    pub fn foreign_put(&self, key: &str, body: &[u8]) {
        match self.backend {
            Backend::Fs => {
                let path = self.fs_root().join(&self.name).join(key);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, body).unwrap();
            }
            Backend::S3 => servers::s3().put_with(&self.name, key, body, &[]),
            Backend::Gcs => {
                servers::gcs().upload(&self.name, &serde_json::json!({ "name": key }), body)
            }
        }
    }

    pub fn delete(&self, key: &str) {
        Bucket::block_on(self.store().delete(key, &Precondition::None)).unwrap();
    }

    /// The object's content, if it exists.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        Bucket::block_on(self.store().get_bytes(key))
            .ok()
            .map(|(_, b)| b)
    }

    /// Every object in the bucket: key → content.
    pub fn contents(&self) -> BTreeMap<String, Vec<u8>> {
        let store = self.store();
        Bucket::block_on(async {
            let mut out = BTreeMap::new();
            for meta in store.list("").await.unwrap() {
                let (_, bytes) = store.get_bytes(&meta.key).await.unwrap();
                out.insert(meta.key, bytes);
            }
            out
        })
    }

    /// The objects whose keys start with `prefix`: the rest of the key →
    /// content.
    pub fn contents_under(&self, prefix: &str) -> BTreeMap<String, Vec<u8>> {
        self.contents()
            .into_iter()
            .filter_map(|(k, v)| k.strip_prefix(prefix).map(|rel| (rel.to_string(), v)))
            .collect()
    }

    /// Every object's version: proves what was (not) rewritten.
    pub fn versions(&self) -> BTreeMap<String, String> {
        Bucket::block_on(self.store().list(""))
            .unwrap()
            .into_iter()
            .map(|m| (m.key, m.version))
            .collect()
    }
}

pub fn sha(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

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
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
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
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
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
}

/// The output of a spawned child, once it exits.
pub fn finish(child: Child) -> Run {
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs each scenario (a `fn(Backend)`) as one test on S3 and one on GCS
/// (scenarios that need a server, such as a proxy in front of it).
#[macro_export]
macro_rules! on_both_servers {
    ($($scenario:ident),* $(,)?) => {
        mod s3 {
            $( #[test] fn $scenario() { super::$scenario(super::Backend::S3) } )*
        }
        mod gcs {
            $( #[test] fn $scenario() { super::$scenario(super::Backend::Gcs) } )*
        }
    };
}

/// Runs each scenario (a `fn(Backend)`) as one test per backend.
#[macro_export]
macro_rules! on_every_backend {
    ($($scenario:ident),* $(,)?) => {
        mod fs {
            $( #[test] fn $scenario() { super::$scenario(super::Backend::Fs) } )*
        }
        mod s3 {
            $( #[test] fn $scenario() { super::$scenario(super::Backend::S3) } )*
        }
        mod gcs {
            $( #[test] fn $scenario() { super::$scenario(super::Backend::Gcs) } )*
        }
    };
}
