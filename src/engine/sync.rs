//! The sync half of the loop: for a repository whose datastore is remote,
//! observe the bucket under `<prefix>/<ns>/` and the sync base, and add the
//! three-way merge's actions to the plan, computed against the cache as it
//! will be once the plan's moves are done.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::{Config, ConflictPolicy, Placement};
use crate::layout::{Layout, Tier};
use crate::plan::drain::drain;
use crate::plan::sync_diff::{Direction, SyncInput, sync_diff};
use crate::plan::{Action, Plan, RemoteInfo};
use crate::state::remote::observe_remote;
use crate::state::{FileState, Observed, RemoteSnapshot, Scope, SyncBase};
use crate::store::{self, Store};

use super::EngineError;
use super::managed::{Mirror, RemoteSentinel, Sentinel, config_only, sentinel_path, sentinel_step};

/// How a sync plan treats conflicts and guards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncOptions {
    /// Overrides `[sync] conflict` for this run.
    pub conflict: Option<ConflictPolicy>,
    /// Overrides the delete guards.
    pub force: bool,
}

/// The remote side of a repository: its store and where our keys live.
#[derive(Clone)]
pub struct RemoteTarget {
    pub store: Arc<dyn Store>,
    pub placement: Placement,
    pub url: String,
    pub key_prefix: String,
}

impl RemoteTarget {
    /// The placement's store, refusing every key outside its prefix and
    /// namespace ([`store::scoped`]).
    pub fn open(placement: &Placement) -> Result<RemoteTarget, EngineError> {
        let key_prefix = Layout::remote_prefix(placement);
        let store = Arc::new(store::scoped::Scoped::new(
            store::open(&placement.datastore)?,
            key_prefix.clone(),
        ));
        Ok(RemoteTarget {
            store,
            placement: placement.clone(),
            url: Layout::remote_url(placement),
            key_prefix,
        })
    }

    pub fn key(&self, path: &crate::layout::TierPath) -> String {
        format!("{}{}", self.key_prefix, path.as_str())
    }
}

/// A runtime for the remote calls of one command.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
}

pub fn direction(scope: Scope) -> Option<Direction> {
    match scope {
        Scope::All | Scope::Sync => Some(Direction::Both),
        // `config` publishes the mirror: only ever pushes.
        Scope::Push | Scope::Config => Some(Direction::Push),
        Scope::Pull => Some(Direction::Pull),
        Scope::Layout => None,
    }
}

/// Adds the remote side to `plan`: draining remote sources (fetch or
/// re-key what only they hold, delete them last) and the three-way sync
/// with the target's bucket, computed against the cache as it will be once
/// the plan's moves are done. Records the snapshots in `observed`.
///
/// With a managed-config `mirror` (see [`super::managed`]) the scope
/// `config` syncs only the `config/` tier, and the sentinel's step is
/// decided from the remote's sentinel and added strictly last.
pub fn add_remote(
    layout: &Layout,
    config: &Config,
    scope: Scope,
    options: SyncOptions,
    mirror: Option<&Mirror>,
    observed: &mut Observed,
    plan: &mut Plan,
) -> Result<(), EngineError> {
    let rt = runtime();
    // Remote sources: what their buckets still hold.
    let mut any_source = false;
    for i in 1..observed.placements.len() {
        let placement = observed.placements[i].placement.clone();
        if !placement.datastore.is_remote() {
            continue;
        }
        any_source = true;
        let source = RemoteTarget::open(&placement)?;
        let base = SyncBase::load(&layout.sync_base_path(&placement), &source.url)?;
        let snapshot = rt.block_on(observe_remote(
            source.store.as_ref(),
            source.url.clone(),
            &source.key_prefix,
            base.files,
            &observed.placements[i].files,
            config.datastore.is_remote(),
        ))?;
        observed.placements[i].remote = Some(snapshot);
    }
    let direction = direction(scope);
    let target_remote = config.datastore.is_remote() && (direction.is_some() || any_source);
    if !target_remote && !any_source {
        return Ok(());
    }

    // The cache as it will be after the plan's moves and mirror copies.
    let mut local: BTreeMap<_, FileState> = observed.placements[0].files.clone();
    for a in &plan.actions {
        if let Action::Move {
            path, size, sha256, ..
        }
        | Action::MirrorConfig {
            path, size, sha256, ..
        } = a
        {
            local.insert(
                path.clone(),
                FileState {
                    size: *size,
                    sha256: sha256.clone(),
                },
            );
        }
    }
    if scope == Scope::Config {
        local = config_only(&local);
    }
    let target = if target_remote {
        let target = RemoteTarget::open(&config.target())?;
        let base = SyncBase::load(&layout.sync_base_path(&target.placement), &target.url)?;
        let snapshot: RemoteSnapshot = rt.block_on(observe_remote(
            target.store.as_ref(),
            target.url.clone(),
            &target.key_prefix,
            base.files,
            &local,
            false,
        ))?;
        Some((target, snapshot))
    } else {
        None
    };

    let drain = drain(observed, target.as_ref().map(|(_, s)| s));
    // Objects at the catalog's path: repo-local in every clone.
    let reserved: Vec<_> = observed.placements[1..]
        .iter()
        .filter_map(|p| p.remote.as_ref())
        .chain(target.as_ref().map(|(_, s)| s))
        .flat_map(|s| s.reserved.iter())
        .map(|key| crate::plan::Conflict::ReservedPath { key: key.clone() })
        .collect();
    let policy = options.conflict.unwrap_or(config.sync.conflict);
    let mut sync_actions = Vec::new();
    let mut sync_conflicts = Vec::new();
    let mut resolved = Vec::new();
    if let (Some(direction), Some((_, snapshot))) = (direction, &target) {
        // Re-keyed paths whose cache file moves too are settled by the copy.
        let mut remote_files = snapshot.remote_files();
        let mut base = snapshot.base.clone();
        if scope == Scope::Config {
            remote_files = config_only(&remote_files);
            base = config_only(&base);
        }
        remote_files.retain(|p, _| !drain.settled.contains(p));
        remote_files.extend(drain.incoming.clone());
        local.retain(|p, _| !drain.settled.contains(p));
        // Modification times only matter to `--conflict newer`.
        let local_modified: BTreeMap<_, i64> = if policy == ConflictPolicy::Newer {
            let root = &observed.placements[0].root;
            local
                .keys()
                .filter_map(|p| {
                    let meta = std::fs::metadata(root.join(p.as_str())).ok()?;
                    let secs = meta
                        .modified()
                        .ok()?
                        .duration_since(std::time::UNIX_EPOCH)
                        .ok()?
                        .as_secs();
                    Some((p.clone(), secs as i64))
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        let diff = sync_diff(&SyncInput {
            local: &local,
            local_other: &observed.placements[0].obstacles,
            local_modified: &local_modified,
            remote: &remote_files,
            base: &base,
            direction,
            policy,
            max_delete_percent: config.sync.max_delete_percent,
            force: options.force,
        });
        sync_actions = diff.actions;
        sync_conflicts = diff.conflicts;
        resolved = diff.resolved;
    }

    // Order: moves, fetches and copies, sync transfers, old objects
    // deleted, then the catalog and the migration record.
    let tail_at = plan
        .actions
        .iter()
        .position(|a| matches!(a, Action::InvalidateCatalog | Action::FinishMigration))
        .unwrap_or(plan.actions.len());
    let tail: Vec<_> = plan.actions.drain(tail_at..).collect();
    let touches_data = drain.transfers.iter().chain(&sync_actions).any(|a| {
        matches!(
            a,
            Action::Download { .. }
                | Action::DeleteLocal { .. }
                | Action::RenameLocal { .. }
                | Action::Fetch { .. }
        ) && a.path().is_some_and(|p| p.tier() == Tier::Data)
    });
    plan.actions.extend(drain.transfers);
    plan.actions.extend(sync_actions);
    plan.actions.extend(drain.deletes);
    if touches_data && !tail.iter().any(|a| matches!(a, Action::InvalidateCatalog)) {
        plan.actions.push(Action::InvalidateCatalog);
    }
    plan.actions.extend(tail);
    let mut blocked =
        !drain.conflicts.is_empty() || !sync_conflicts.is_empty() || !reserved.is_empty();
    plan.conflicts.extend(reserved);
    plan.conflicts.extend(drain.conflicts);
    plan.conflicts.extend(sync_conflicts);
    // The sentinel last, after every object it vouches for.
    if let (Some(mirror), Some((target, snapshot)), Some(d)) = (mirror, &target, direction)
        && d != Direction::Pull
    {
        let sentinel = rt.block_on(read_sentinel(target, snapshot))?;
        let (action, conflict) = sentinel_step(scope, mirror, &local, &sentinel);
        plan.actions.extend(action);
        blocked |= conflict.is_some();
        plan.conflicts.extend(conflict);
    }
    if blocked {
        // Nothing old is deleted and no migration is recorded finished
        // while anything blocks.
        plan.actions.retain(|a| {
            !matches!(
                a,
                Action::FinishMigration | Action::DeleteSourceRemote { .. }
            )
        });
    }
    if !plan.conflicts.is_empty() {
        // Nothing is vouched for while anything blocks.
        plan.actions
            .retain(|a| !matches!(a, Action::PublishSentinel { .. }));
    }
    if let Some((target, snapshot)) = target {
        plan.remote = Some(RemoteInfo {
            url: target.url.clone(),
            key_prefix: target.key_prefix.clone(),
            objects: snapshot.objects,
            batch_delete: false,
            conflict_policy: policy,
            forced: options.force,
            resolved,
        });
        observed.remote = Some(snapshot);
    }
    Ok(())
}

/// The remote's managed-config sentinel, read when the listing has one.
async fn read_sentinel(
    target: &RemoteTarget,
    snapshot: &RemoteSnapshot,
) -> Result<RemoteSentinel, EngineError> {
    let path = sentinel_path();
    if !snapshot.files.contains_key(&path) {
        return Ok(RemoteSentinel::Absent);
    }
    match target.store.get_bytes(&target.key(&path)).await {
        Ok((_, bytes)) => Ok(RemoteSentinel::Present {
            body: String::from_utf8_lossy(&bytes).into_owned(),
            parsed: Sentinel::parse(&target.key(&path), &bytes).ok(),
        }),
        // Deleted since the listing: as if it had not been listed.
        Err(crate::store::StoreError::NotFound { .. }) => Ok(RemoteSentinel::Absent),
        Err(e) => Err(e.into()),
    }
}

/// `<prefix>/<ns>/.namespace.json`: who owns a namespace in a bucket.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NamespaceManifest {
    pub namespace: String,
    pub repo_id: uuid::Uuid,
    pub registered_at: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    #[error(
        "namespace `{namespace}` in {url} is registered to another repository ({owner}); nothing was changed"
    )]
    OwnedByAnother {
        namespace: String,
        url: String,
        owner: String,
    },
    #[error("the namespace manifest {key} is not valid JSON ({message})")]
    Malformed { key: String, message: String },
}

/// Makes sure `<prefix>/<ns>/.namespace.json` names this repository,
/// creating it with a create-only write if it is missing. Returns whether
/// it was created. Solo placements have nothing to register.
pub fn register_namespace(placement: &Placement, repo_id: uuid::Uuid) -> Result<bool, EngineError> {
    let Some(ns) = &placement.namespace else {
        return Ok(false);
    };
    let target = RemoteTarget::open(placement)?;
    let key = Layout::namespace_manifest_key(placement);
    runtime().block_on(async {
        // Two tries: a create that loses a race reads the winner's manifest.
        for _ in 0..2 {
            match target.store.get_bytes(&key).await {
                Ok((_, bytes)) => {
                    let m: NamespaceManifest = serde_json::from_slice(&bytes).map_err(|e| {
                        RegistrationError::Malformed {
                            key: key.clone(),
                            message: e.to_string(),
                        }
                    })?;
                    return if m.repo_id == repo_id {
                        Ok(false)
                    } else {
                        Err(RegistrationError::OwnedByAnother {
                            namespace: ns.to_string(),
                            url: target.url.clone(),
                            owner: m.repo_id.to_string(),
                        }
                        .into())
                    };
                }
                Err(crate::store::StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            let manifest = NamespaceManifest {
                namespace: ns.to_string(),
                repo_id,
                registered_at: now_rfc3339(),
            };
            let mut body = serde_json::to_vec_pretty(&manifest).expect("manifest serialises");
            body.push(b'\n');
            match target
                .store
                .put_bytes(&key, body, &crate::store::Precondition::CreateOnly)
                .await
            {
                Ok(_) => return Ok(true),
                Err(crate::store::StoreError::PreconditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(EngineError::Store(crate::store::StoreError::other(
            format!("could not create or read {key}"),
        )))
    })
}

/// Every namespace registered under the placement's `<prefix>/`.
pub fn list_namespaces(placement: &Placement) -> Result<Vec<NamespaceManifest>, EngineError> {
    let solo = Placement {
        datastore: placement.datastore.clone(),
        namespace: None,
    };
    // Reads every namespace's manifest: the whole prefix, not one scope.
    let store = store::open(&solo.datastore)?;
    let key_prefix = Layout::remote_prefix(&solo);
    runtime().block_on(async {
        let listed = store.list(&key_prefix).await?;
        let mut out = Vec::new();
        for meta in listed {
            let rel = &meta.key[key_prefix.len()..];
            let Some((ns, ".namespace.json")) = rel.split_once('/') else {
                continue;
            };
            if ns.contains('/') {
                continue;
            }
            let (_, bytes) = store.get_bytes(&meta.key).await?;
            match serde_json::from_slice::<NamespaceManifest>(&bytes) {
                Ok(m) => out.push(m),
                Err(e) => {
                    return Err(RegistrationError::Malformed {
                        key: meta.key.clone(),
                        message: e.to_string(),
                    }
                    .into());
                }
            }
        }
        out.sort_by(|a, b| a.namespace.cmp(&b.namespace));
        Ok(out)
    })
}

/// RFC 3339 UTC, to the second; `SWAMP_NOW` (RFC 3339) pins it for tests.
pub fn now_rfc3339() -> String {
    if let Ok(fixed) = std::env::var("SWAMP_NOW") {
        return fixed;
    }
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
