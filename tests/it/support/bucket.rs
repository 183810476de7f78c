//! A bucket on one backend and repositories using it, for the end-to-end
//! tests that run the same scenario on a directory object store
//! (`endpoint=file:///dir`), SeaweedFS (S3) and fake-gcs-server (GCS).
//! Repositories are the real binary in temp dirs; "another machine" is
//! another `SWAMP_HOME` with a copy of `.swamp.toml` (a clone).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use std::sync::Arc;

use swamp::store::{Precondition, Store, StoreOptions};
use tempfile::TempDir;

pub use super::repo::{Repo, Run, finish};
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

    /// Another bucket on the same server, reached the same way (through
    /// this one's fault proxy, if any): a move between the two is a
    /// server-side copy the proxy sees.
    pub fn beside(&self) -> Bucket {
        let mut other = Bucket::new(self.backend);
        other.via = self.via.clone();
        other
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
