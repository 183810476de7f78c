//! Checks of the remote side (S3, GCS): `reachable` (credentials, bucket,
//! listing and conditional writes, probed with a canary object under our
//! prefix), `drift` (the sync plan is empty), `sentinel` (the managed-config
//! sentinel and the objects it vouches for agree) and `registration` (the
//! namespace manifest names this repository). Nothing outside
//! `<prefix>/<ns>/` is read or written.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::config::{Config, DatastoreConfig};
use crate::engine::registry::{NamespaceManifest, register_namespace};
use crate::engine::{self, SyncOptions};
use crate::layout::{Layout, MANAGED_CONFIG_SENTINEL, Tier, TierPath};
use crate::state::Scope;
use crate::store::{Precondition, Store, StoreError};
use crate::store::{RemoteTarget, runtime};

use super::{Check, Context, DoctorError, Finding, Fix, Step, could_not};

pub(crate) struct Reachable;

impl Check for Reachable {
    fn name(&self) -> &'static str {
        "reachable"
    }

    fn run(&self, cx: &Context) -> Finding {
        let name = self.name();
        let (config, layout) = match cx.config(name) {
            Ok(c) => c,
            Err(skip) => return skip,
        };
        match &config.datastore {
            DatastoreConfig::Local => Finding::skip(
                name,
                "local datastore: the data is in .swamp/, nothing remote to reach",
            ),
            DatastoreConfig::Filesystem { path } => {
                let path = path.as_path();
                if path.is_dir() {
                    Finding::pass(name, format!("the directory {} exists", path.display()))
                } else if path.exists() {
                    Finding::fail(
                        name,
                        format!("{} exists and is not a directory", path.display()),
                        "move it away, or point the datastore elsewhere with `swamp datastore setup file:///abs/path`",
                    )
                } else {
                    Finding::skip(
                        name,
                        format!(
                            "{} does not exist yet; the first write creates it",
                            path.display()
                        ),
                    )
                }
            }
            DatastoreConfig::S3 { .. } | DatastoreConfig::Gcs { .. } => {
                let mut finding = reach_bucket(name, config, cx.check_write);
                if finding.status == super::Status::Pass {
                    finding.message.push_str(&enforcement_note(layout, config));
                }
                finding
            }
        }
    }
}

/// `reachable` for a bucket: a listing of the namespace's own `.swamp/`
/// (what read-only credentials may do), then, with `--check-write`, the
/// canary probe.
fn reach_bucket(name: &'static str, config: &Config, check_write: bool) -> Finding {
    let target = match RemoteTarget::open(&config.target()) {
        Ok(t) => t,
        Err(e) => return could_not(name, "open the remote datastore", e),
    };
    // Reading first: one listing of the namespace's own
    // bookkeeping, which read-only credentials may do.
    let own = format!("{}.swamp/", target.key_prefix);
    if let Err(e) = runtime().block_on(target.store.list(&own)) {
        return Finding::fail(
            name,
            format!("{}: cannot list `{own}`: {e}", target.url),
            "fix what the message names (the endpoint, the credentials, or `bucket` in the [datastore] table of .swamp.toml), then run `swamp doctor datastores` again",
        );
    }
    if !check_write {
        return Finding::pass(
            name,
            format!(
                "{} answered: these credentials can read it (writes not probed: `--check-write` probes them with a canary object)",
                target.url
            ),
        );
    }
    let token = uuid::Uuid::new_v4().simple().to_string();
    let key = Layout::doctor_canary_key(&config.target(), &token);
    match runtime().block_on(probe(target.store.as_ref(), &key)) {
        Ok(()) => Finding::pass(
            name,
            format!(
                "{} answered: these credentials can read and write it; listing, create-only writes and version-matched writes work (probed with a canary object under {}.swamp/, then removed)",
                target.url, target.key_prefix
            ),
        ),
        Err(Probe::Denied(e)) => Finding::fail(
            name,
            format!(
                "{}: these credentials can read it but not write it ({e})",
                target.url
            ),
            "a writer needs to put and delete objects under the namespace (README: least privilege); read-only credentials serve `plan`, `datastore sync --pull`, `data get` and `status`",
        ),
        Err(Probe::Failed(problem)) => Finding::fail(
            name,
            format!("{}: {problem}", target.url),
            "fix what the message names (the endpoint, the credentials, or `bucket` in the [datastore] table of .swamp.toml), then run `swamp doctor datastores` again",
        ),
    }
}

/// What this clone found the server enforce on deletes and copies (GCS:
/// a probe, once per remote id), as a sentence to add to `reachable`.
fn enforcement_note(layout: &Layout, config: &Config) -> String {
    let placement = config.target();
    if !RemoteTarget::open(&placement).is_ok_and(|t| t.store.probes_enforcement()) {
        return String::new();
    }
    let seen = crate::state::remote_seen::Seen::load(
        &layout.remote_seen_path(&placement),
        &Layout::remote_url(&placement),
    );
    let found = seen
        .remote_id
        .as_ref()
        .and_then(|id| seen.enforced_for(&id.id));
    match found {
        Some(e) if e.delete && e.copy => "; the server enforces `ifGenerationMatch` on deletes and copies (probed once for this remote), so each is one request".to_string(),
        Some(_) => "; the server does not enforce preconditions (`ifGenerationMatch`) on deletes and copies (probed once for this remote; fake-gcs-server does not), so each reads the object's version just before it: a writer that changes the object in between is not caught".to_string(),
        None => "; whether the server enforces preconditions on deletes and copies is not probed yet (a push probes it once); until then each reads the object's version first".to_string(),
    }
}

/// A create-only put, a second create-only put that must be refused, a
/// listing that must show it, a put matching its version, then delete.
/// The canary is removed whatever happens after it was created.
async fn probe(store: &dyn Store, key: &str) -> Result<(), Probe> {
    let created = match store
        .put_bytes(
            key,
            b"swamp doctor canary 1\n".to_vec(),
            &Precondition::CreateOnly,
        )
        .await
    {
        Ok(created) => created,
        Err(e @ StoreError::Denied { .. }) => return Err(Probe::Denied(e)),
        Err(e) => {
            return Err(Probe::Failed(format!(
                "cannot write the canary object `{key}`: {e}"
            )));
        }
    };
    let checks = async {
        match store
            .put_bytes(key, b"swamp doctor canary 2\n".to_vec(), &Precondition::CreateOnly)
            .await
        {
            Err(StoreError::PreconditionFailed { .. }) => {}
            Ok(_) => {
                return Err(format!(
                    "a second create-only write of `{key}` was accepted: the server does not enforce conditional creates (S3 `If-None-Match: *`, GCS `ifGenerationMatch=0`), which swamp needs to write safely"
                ));
            }
            Err(e) => return Err(format!("a second create-only write of `{key}` failed: {e}")),
        }
        let listed = store
            .list(key)
            .await
            .map_err(|e| format!("cannot list `{key}`: {e}"))?;
        if !listed.iter().any(|m| m.key == key) {
            return Err(format!(
                "the canary `{key}` was written but the listing does not show it"
            ));
        }
        let current = store
            .head(key)
            .await
            .map_err(|e| format!("cannot read `{key}`: {e}"))?
            .map(|m| m.version)
            .unwrap_or(created.version);
        store
            .put_bytes(
                key,
                b"swamp doctor canary 3\n".to_vec(),
                &Precondition::Matches(current),
            )
            .await
            .map_err(|e| {
                format!("a write of `{key}` matching its current version was refused: {e}")
            })?;
        Ok(())
    }
    .await;
    let removed = store
        .delete(key, &Precondition::None)
        .await
        .map_err(|e| format!("cannot delete the canary `{key}`: {e}; delete it by hand"));
    checks.and(removed).map_err(Probe::Failed)
}

/// Why the write probe failed.
#[derive(Debug)]
enum Probe {
    /// The credentials may not write (they could list).
    Denied(StoreError),
    Failed(String),
}

pub(crate) struct Drift;

impl Check for Drift {
    fn name(&self) -> &'static str {
        "drift"
    }

    fn run(&self, cx: &Context) -> Finding {
        let name = self.name();
        let (config, layout) = match cx.remote(name) {
            Ok(c) => c,
            Err(skip) => return skip,
        };
        let planned = match engine::plan_with(layout, config, Scope::Sync, SyncOptions::default()) {
            Ok(p) => p,
            Err(e) => return could_not(name, "plan the sync", e),
        };
        let url = Layout::remote_url(&config.target());
        if planned.plan.in_sync() {
            return Finding::pass(name, format!("the cache and {url} agree"));
        }
        let s = planned.plan.summary();
        let message = format!(
            "the cache and {url} differ: {} to upload, {} to download, {} to delete in the cache, {} to delete in the remote, {} conflict(s)",
            s.upload, s.download, s.delete_local, s.delete_remote, s.conflicts
        );
        let fix = "`swamp datastore sync` (review it first with `swamp plan --scope sync`)";
        // Changes not synced yet are work in progress; a conflict blocks
        // every sync until someone decides.
        if s.conflicts > 0 {
            Finding::fail(
                name,
                message,
                format!(
                    "{fix}; conflicts need a decision: `swamp datastore sync --conflict POLICY`"
                ),
            )
        } else {
            Finding::warn(name, message, fix)
        }
    }
}

/// The sentinel's body, as `datastore config migrate` publishes it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SentinelBody {
    #[allow(dead_code)]
    migrated_at: String,
    #[serde(default)]
    #[allow(dead_code)]
    sources: Vec<serde_json::Value>,
    /// Tier path → sha256 of every config object it vouches for.
    #[serde(default)]
    objects: BTreeMap<String, String>,
}

pub(crate) struct Sentinel;

const SENTINEL_FIX: &str = "run `swamp datastore config migrate`";

impl Check for Sentinel {
    fn name(&self) -> &'static str {
        "sentinel"
    }

    fn run(&self, cx: &Context) -> Finding {
        let name = self.name();
        let (config, _) = match cx.remote(name) {
            Ok(c) => c,
            Err(skip) => return skip,
        };
        let target = match RemoteTarget::open(&config.target()) {
            Ok(t) => t,
            Err(e) => return could_not(name, "open the remote datastore", e),
        };
        match runtime().block_on(sentinel_state(&target)) {
            Ok(finding) => finding,
            Err(e) => could_not(name, "read the managed config sentinel", e),
        }
    }

    fn fix(&self, cx: &Context, _finding: &Finding) -> Result<Fix, DoctorError> {
        // The repair is the config-migrate plan itself (content first, the
        // sentinel last, published only after its payload is verified in
        // the remote), for a repository whose config is managed. For one
        // that is not, publishing is a decision: `datastore config migrate`.
        let Ok((config, layout)) = &cx.loaded else {
            return Ok(Fix::Manual);
        };
        if !config.config.managed {
            return Ok(Fix::Manual);
        }
        let planned = crate::engine::plan_with(
            layout,
            config,
            crate::state::Scope::Config,
            crate::engine::SyncOptions::default(),
        )?;
        if planned.plan.is_empty() {
            return Ok(Fix::Manual);
        }
        Ok(Fix::Plan(Box::new(planned)))
    }
}

/// The objects a sentinel vouches for (`objects`, tier path → sha256) as
/// the config tier holds them now (`listed`): those missing and those with
/// another sha256, or `Err` with a listed path that is no config object.
async fn vouched_now(
    target: &RemoteTarget,
    listed: &BTreeMap<String, crate::store::ObjectMeta>,
    objects: &BTreeMap<String, String>,
) -> Result<Result<(Vec<String>, Vec<String>), String>, DoctorError> {
    let mut missing = Vec::new();
    let mut changed = Vec::new();
    for (path, expected) in objects {
        let tier_path = match TierPath::parse(path) {
            Ok(p) if p.tier() == Tier::Config && p.as_str() != MANAGED_CONFIG_SENTINEL => p,
            _ => return Ok(Err(path.clone())),
        };
        let key = target.key(&tier_path);
        let Some(meta) = listed.get(&key) else {
            missing.push(path.clone());
            continue;
        };
        let sha = match &meta.sha256 {
            Some(s) => Some(s.clone()),
            None => target.store.head(&key).await?.and_then(|m| m.sha256),
        };
        let sha = match sha {
            Some(s) => s,
            // No metadata: hash the content itself.
            None => crate::fsutil::sha256_bytes(&target.store.get_bytes(&key).await?.1),
        };
        if &sha != expected {
            changed.push(path.clone());
        }
    }
    Ok(Ok((missing, changed)))
}

async fn sentinel_state(target: &RemoteTarget) -> Result<Finding, DoctorError> {
    const NAME: &str = "sentinel";
    let sentinel =
        TierPath::parse(MANAGED_CONFIG_SENTINEL).map_err(|e| DoctorError::Other(e.to_string()))?;
    let sentinel_key = target.key(&sentinel);
    let config_prefix = format!("{}{}/", target.key_prefix, Tier::Config.as_str());
    let listed: BTreeMap<String, _> = target
        .store
        .list(&config_prefix)
        .await?
        .into_iter()
        .map(|m| (m.key.clone(), m))
        .collect();
    let payload = listed.keys().filter(|k| **k != sentinel_key).count();
    if !listed.contains_key(&sentinel_key) {
        return Ok(if payload == 0 {
            Finding::pass(
                NAME,
                format!("no managed config is published in {}", target.url),
            )
        } else {
            Finding::fail(
                NAME,
                format!(
                    "{payload} config object(s) under {config_prefix} but no sentinel {MANAGED_CONFIG_SENTINEL} (payload without sentinel): other repositories will not trust them"
                ),
                SENTINEL_FIX,
            )
        });
    }
    let (_, bytes) = target.store.get_bytes(&sentinel_key).await?;
    let body: SentinelBody = match serde_json::from_slice(&bytes) {
        Ok(b) => b,
        Err(e) => {
            return Ok(Finding::fail(
                NAME,
                format!("the sentinel `{sentinel_key}` is not valid: {e}"),
                SENTINEL_FIX,
            ));
        }
    };
    let (missing, changed) = match vouched_now(target, &listed, &body.objects).await? {
        Ok(gaps) => gaps,
        Err(path) => {
            return Ok(Finding::fail(
                NAME,
                format!(
                    "the sentinel `{sentinel_key}` lists `{path}`, which is not a config object path"
                ),
                SENTINEL_FIX,
            ));
        }
    };
    if missing.is_empty() && changed.is_empty() {
        return Ok(Finding::pass(
            NAME,
            format!(
                "the sentinel vouches for {} config object(s); each is present with the sha256 it lists",
                body.objects.len()
            ),
        ));
    }
    let example = missing.first().or(changed.first()).expect("one of them");
    Ok(Finding::fail(
        NAME,
        format!(
            "the sentinel vouches for {} config object(s) but {} are missing and {} have another sha256, e.g. {example} (present without its payload)",
            body.objects.len(),
            missing.len(),
            changed.len()
        ),
        SENTINEL_FIX,
    ))
}

pub(crate) struct Registration;

/// What `<prefix>/<ns>/.namespace.json` says.
enum Manifest {
    Missing,
    Ours,
    Other(String),
    /// Neither swamp nor upstream swamp wrote it.
    Unrecognised(String),
}

fn manifest(config: &Config) -> Result<Manifest, DoctorError> {
    let target = RemoteTarget::open(&config.target())?;
    let key = Layout::namespace_manifest_key(&config.target());
    runtime().block_on(async {
        match target.store.get_bytes(&key).await {
            Ok((_, bytes)) => Ok(match NamespaceManifest::parse(&bytes) {
                Ok(m) if m.repo_id == config.repo_id => Manifest::Ours,
                Ok(m) => Manifest::Other(m.repo_id.to_string()),
                Err(e) => Manifest::Unrecognised(e.to_string()),
            }),
            Err(StoreError::NotFound { .. }) => Ok(Manifest::Missing),
            Err(e) => Err(e.into()),
        }
    })
}

impl Check for Registration {
    fn name(&self) -> &'static str {
        "registration"
    }

    fn run(&self, cx: &Context) -> Finding {
        let name = self.name();
        let (config, _) = match cx.remote(name) {
            Ok(c) => c,
            Err(skip) => return skip,
        };
        let Some(ns) = &config.namespace else {
            return Finding::skip(
                name,
                "no namespace: the solo layout has nothing to register",
            );
        };
        let key = Layout::namespace_manifest_key(&config.target());
        let url = Layout::remote_url(&config.target());
        match manifest(config) {
            Err(e) => could_not(name, &format!("read `{key}`"), e),
            Ok(Manifest::Ours) => Finding::pass(
                name,
                format!("namespace `{ns}` is registered to this repository in {url}"),
            ),
            Ok(Manifest::Missing) => Finding::fail(
                name,
                format!("namespace `{ns}` is not registered: `{key}` is missing"),
                "`swamp doctor datastores --repair -y` or `swamp datastore sync` registers it (a create-only write)",
            ),
            Ok(Manifest::Other(owner)) => Finding::fail(
                name,
                format!("namespace `{ns}` in {url} is registered to another repository ({owner})"),
                "choose another namespace: `swamp datastore namespace set NS --migrate --confirm`",
            ),
            Ok(Manifest::Unrecognised(message)) => Finding::fail(
                name,
                format!("the namespace manifest `{key}` is unrecognised: {message}"),
                format!(
                    "another tool may own `{ns}` in this bucket: choose another namespace (`swamp datastore namespace set NS --migrate --confirm`), or, once sure nothing uses it, move `{key}` aside and run `swamp datastore sync`"
                ),
            ),
        }
    }

    fn fix(&self, cx: &Context, _finding: &Finding) -> Result<Fix, DoctorError> {
        let Ok((config, _)) = &cx.loaded else {
            return Ok(Fix::Manual);
        };
        if config.namespace.is_none() || !matches!(manifest(config)?, Manifest::Missing) {
            return Ok(Fix::Manual);
        }
        let key = Layout::namespace_manifest_key(&config.target());
        Ok(Fix::Step(Step {
            what: format!("register the namespace: create `{key}` (create-only write)"),
            run: Box::new(|cx: &Context| {
                let (config, _) = cx
                    .loaded
                    .as_ref()
                    .map_err(|e| DoctorError::Other(e.clone()))?;
                let key = Layout::namespace_manifest_key(&config.target());
                Ok(if register_namespace(&config.target(), config.repo_id)? {
                    format!("registered the namespace: created `{key}`")
                } else {
                    format!("the namespace was already registered to this repository (`{key}`)")
                })
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use async_trait::async_trait;

    use super::*;
    use crate::store::{Capabilities, ObjectMeta};

    /// A directory store that drops every precondition, like a server
    /// that ignores `If-None-Match` / `ifGenerationMatch`.
    struct Careless(Arc<dyn Store>);

    #[async_trait]
    impl Store for Careless {
        fn describe(&self) -> String {
            self.0.describe()
        }
        fn capabilities(&self) -> Capabilities {
            self.0.capabilities()
        }
        async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError> {
            self.0.list(prefix).await
        }
        async fn list_level(&self, prefix: &str) -> Result<crate::store::Level, StoreError> {
            self.0.list_level(prefix).await
        }
        async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
            self.0.head(key).await
        }
        async fn get_to_file(&self, key: &str, dest: &Path) -> Result<ObjectMeta, StoreError> {
            self.0.get_to_file(key, dest).await
        }
        async fn get_known_to_file(
            &self,
            known: &ObjectMeta,
            dest: &Path,
            durability: crate::store::Durability,
        ) -> Result<ObjectMeta, StoreError> {
            self.0.get_known_to_file(known, dest, durability).await
        }
        async fn get_bytes(&self, key: &str) -> Result<(ObjectMeta, Vec<u8>), StoreError> {
            self.0.get_bytes(key).await
        }
        async fn put_file(
            &self,
            key: &str,
            src: &Path,
            sha256: &str,
            _pre: &Precondition,
        ) -> Result<ObjectMeta, StoreError> {
            self.0.put_file(key, src, sha256, &Precondition::None).await
        }
        async fn put_bytes(
            &self,
            key: &str,
            bytes: Vec<u8>,
            _pre: &Precondition,
        ) -> Result<ObjectMeta, StoreError> {
            self.0.put_bytes(key, bytes, &Precondition::None).await
        }
        async fn delete(&self, key: &str, _pre: &Precondition) -> Result<(), StoreError> {
            self.0.delete(key, &Precondition::None).await
        }
        async fn delete_many(&self, keys: &[String]) -> Result<(), StoreError> {
            self.0.delete_many(keys).await
        }
        async fn copy(
            &self,
            from: &str,
            to: &str,
            _pre: &Precondition,
        ) -> Result<ObjectMeta, StoreError> {
            self.0.copy(from, to, &Precondition::None).await
        }
    }

    const KEY: &str = "swamp/lab/.swamp/doctor-canary-test";

    #[test]
    fn a_store_that_enforces_conditional_writes_passes_and_the_canary_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open_fs(dir.path());
        let rt = runtime();
        rt.block_on(probe(store.as_ref(), KEY)).unwrap();
        assert!(rt.block_on(store.list("")).unwrap().is_empty());
    }

    #[test]
    fn a_store_that_ignores_create_only_fails_and_the_canary_is_still_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Careless(crate::store::open_fs(dir.path()));
        let rt = runtime();
        let Err(Probe::Failed(err)) = rt.block_on(probe(&store, KEY)) else {
            panic!("a store that ignores create-only must fail the probe");
        };
        assert!(
            err.contains("a second create-only write") && err.contains("was accepted"),
            "{err}"
        );
        assert!(rt.block_on(store.list("")).unwrap().is_empty());
    }
}
