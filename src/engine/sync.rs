//! The remote side of the loop that is not planning: the options a sync
//! plan is made with, and namespace registration
//! (`<prefix>/<ns>/.namespace.json`), which happens before planning.

use crate::config::{ConflictPolicy, Placement};
use crate::layout::Layout;
use crate::store::{self, RemoteTarget, runtime};

use super::EngineError;

/// How a sync plan treats conflicts and guards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncOptions {
    /// Overrides `[sync] conflict` for this run.
    pub conflict: Option<ConflictPolicy>,
    /// Overrides the delete guards.
    pub force: bool,
    /// With `force`: also deletes cache files that are the only copy of
    /// their content.
    pub force_delete_local: bool,
    /// Plans as a first sync: the last sync's record is set aside.
    pub no_base: bool,
    /// Deletes and replacements are final for this run (no trash).
    pub no_undo: bool,
    /// Downloads what lazy pulls recorded as in the remote only.
    pub hydrate: bool,
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

/// Makes sure the remote holds an id (`<prefix>/<ns>/.swamp/remote-id.json`,
/// written once with a create-only write) and returns it. Sync bases are
/// bound to it, so a base cannot outlive the remote it was made with.
pub fn ensure_remote_id(placement: &Placement) -> Result<String, EngineError> {
    let target = RemoteTarget::open(placement)?;
    let key = Layout::remote_id_key(placement);
    runtime().block_on(async {
        // Two tries: a create that loses a race reads the winner's id.
        for _ in 0..2 {
            if let Some(identity) =
                crate::state::remote::read_identity(target.store.as_ref(), &key).await?
            {
                return Ok(identity.id);
            }
            let body = crate::state::remote::RemoteIdBody {
                id: uuid::Uuid::new_v4().to_string(),
            };
            let mut bytes = serde_json::to_vec_pretty(&body).expect("the id serialises");
            bytes.push(b'\n');
            match target
                .store
                .put_bytes(&key, bytes, &crate::store::Precondition::CreateOnly)
                .await
            {
                Ok(_) => return Ok(body.id),
                // Someone else's object there (unreadable as an id): leave it.
                Err(crate::store::StoreError::PreconditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(EngineError::Store(crate::store::StoreError::other(
            format!("{key} exists but does not hold a swamp remote id; move it aside, then retry"),
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

pub use crate::clock::now_rfc3339;
