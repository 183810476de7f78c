//! The namespace registry of a bucket: who owns each namespace
//! (`<prefix>/<ns>/.namespace.json`, registered with a create-only write
//! before `.swamp.toml` changes), the namespaces listed with their owners,
//! and the remote's id (`<prefix>/<ns>/.swamp/remote-id.json`) that sync
//! bases are bound to. All of it happens before planning.

use crate::config::Placement;
use crate::layout::Layout;
use crate::state::remote::RemoteIdentity;
use crate::state::remote_seen::{Seen, SeenEnforced, SeenManifest};
use crate::store::{self, RemoteTarget, runtime};

use super::EngineError;

/// `<prefix>/<ns>/.namespace.json`: who owns a namespace in a bucket.
/// Written with our field names; upstream swamp's (`repoId`,
/// `registeredAt`) are read too, and its file is never rewritten.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct NamespaceManifest {
    pub namespace: String,
    #[serde(alias = "repoId")]
    pub repo_id: uuid::Uuid,
    #[serde(alias = "registeredAt")]
    pub registered_at: String,
}

/// A manifest neither swamp nor upstream swamp wrote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("neither swamp nor upstream swamp wrote it ({reason})")]
pub struct UnrecognisedManifest {
    pub reason: String,
}

impl NamespaceManifest {
    /// Reads a manifest in swamp's or upstream swamp's spelling.
    pub(crate) fn parse(bytes: &[u8]) -> Result<NamespaceManifest, UnrecognisedManifest> {
        serde_json::from_slice(bytes).map_err(|e| UnrecognisedManifest {
            reason: e.to_string(),
        })
    }
}

/// One namespace directory of a bucket, as `datastore namespaces` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListedNamespace {
    Registered(NamespaceManifest),
    /// Its manifest is there but unreadable: named, never skipped.
    Unrecognised {
        namespace: String,
        key: String,
        why: UnrecognisedManifest,
    },
}

impl ListedNamespace {
    pub(crate) fn namespace(&self) -> &str {
        match self {
            ListedNamespace::Registered(m) => &m.namespace,
            ListedNamespace::Unrecognised { namespace, .. } => namespace,
        }
    }
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
    #[error("the namespace manifest {key} is unrecognised: {why}; nothing was changed")]
    Unrecognised {
        key: String,
        why: UnrecognisedManifest,
    },
    /// The manifest kept appearing and vanishing between a read and a
    /// create-only write.
    #[error("could not create or read {key}")]
    Unsettled { key: String },
    #[error("{key} exists but does not hold a swamp remote id")]
    ForeignRemoteId { key: String },
}

/// Makes sure `<prefix>/<ns>/.namespace.json` names this repository,
/// creating it with a create-only write if it is missing. Returns whether
/// it was created. Solo placements have nothing to register.
pub(crate) fn register_namespace(
    placement: &Placement,
    repo_id: uuid::Uuid,
) -> Result<bool, EngineError> {
    Ok(registered(placement, repo_id)?.is_some_and(|(created, _)| created))
}

/// [`register_namespace`]: whether it was created, and the manifest's
/// version (`None` for a solo placement).
fn registered(
    placement: &Placement,
    repo_id: uuid::Uuid,
) -> Result<Option<(bool, String)>, EngineError> {
    let Some(ns) = &placement.namespace else {
        return Ok(None);
    };
    let target = RemoteTarget::open(placement)?;
    let key = Layout::namespace_manifest_key(placement);
    runtime().block_on(async {
        // Two tries: a create that loses a race reads the winner's manifest.
        for _ in 0..2 {
            if let Some(version) = registered_to(&target, &key, ns, repo_id).await? {
                return Ok(Some((false, version)));
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
                Ok(meta) => return Ok(Some((true, meta.version))),
                Err(crate::store::StoreError::PreconditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(RegistrationError::Unsettled { key }.into())
    })
}

/// Whether the namespace is registered to `repo_id` (always, for a solo
/// placement), so that a run that writes nothing else needs not register
/// it; an error when another repository owns the namespace. `listed` is
/// the manifest's version as the plan's listing showed it (`None`: not
/// there, so not registered); a version this clone read before and found
/// naming `repo_id` needs no GET (`state::seen`). (The remote's id is the
/// plan's to read: a base bound to none is set aside once a writer gives
/// the remote one, and a writer's run creates it before it plans under
/// the lock.)
pub(crate) fn is_registered(
    layout: &Layout,
    placement: &Placement,
    repo_id: uuid::Uuid,
    listed: Option<&str>,
) -> Result<bool, EngineError> {
    let Some(ns) = &placement.namespace else {
        return Ok(true);
    };
    let Some(listed) = listed else {
        return Ok(false);
    };
    let path = layout.remote_seen_path(placement);
    let mut seen = Seen::load(&path, &Layout::remote_url(placement));
    if seen.names_repo(listed, repo_id) {
        return Ok(true);
    }
    let target = RemoteTarget::open(placement)?;
    let key = Layout::namespace_manifest_key(placement);
    let Some(version) = runtime().block_on(registered_to(&target, &key, ns, repo_id))? else {
        return Ok(false);
    };
    seen.manifest = Some(SeenManifest { version, repo_id });
    seen.save(&path);
    Ok(true)
}

/// Whether a listing that showed the namespace manifest at `manifest` and
/// the remote id at `remote_id` vouches for both without a request: this
/// clone read them at those versions before (the manifest naming
/// `repo_id`; a solo placement has none to check).
pub(crate) fn vouched(
    layout: &Layout,
    placement: &Placement,
    repo_id: uuid::Uuid,
    manifest: Option<&str>,
    remote_id: Option<&str>,
) -> bool {
    let seen = Seen::load(
        &layout.remote_seen_path(placement),
        &Layout::remote_url(placement),
    );
    let manifest_ok = match (&placement.namespace, manifest) {
        (None, _) => true,
        (Some(_), Some(v)) => seen.names_repo(v, repo_id),
        (Some(_), None) => false,
    };
    let Some(identity) = remote_id.and_then(|v| seen.identity_at(v)) else {
        return false;
    };
    // A server to probe that this clone has not probed: not yet.
    manifest_ok
        && (seen.enforced_for(&identity.id).is_some()
            || RemoteTarget::open(placement).is_ok_and(|t| !t.store.probes_enforcement()))
}

/// Reads the manifest at `key`: its version when it names `repo_id`,
/// `None` when there is none; an error when it names another repository
/// or is not a manifest.
async fn registered_to(
    target: &RemoteTarget,
    key: &str,
    ns: &crate::config::Namespace,
    repo_id: uuid::Uuid,
) -> Result<Option<String>, EngineError> {
    let (meta, bytes) = match target.store.get_bytes(key).await {
        Ok(read) => read,
        Err(crate::store::StoreError::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let m = NamespaceManifest::parse(&bytes).map_err(|why| RegistrationError::Unrecognised {
        key: key.to_string(),
        why,
    })?;
    if m.repo_id != repo_id {
        return Err(RegistrationError::OwnedByAnother {
            namespace: ns.to_string(),
            url: target.url.clone(),
            owner: m.repo_id.to_string(),
        }
        .into());
    }
    Ok(Some(meta.version))
}

/// Makes sure the remote holds an id (`<prefix>/<ns>/.swamp/remote-id.json`,
/// written once with a create-only write) and returns it. Sync bases are
/// bound to it, so a base cannot outlive the remote it was made with.
pub(crate) fn ensure_remote_id(placement: &Placement) -> Result<String, EngineError> {
    Ok(remote_identity(placement)?.id)
}

/// A move into `placement`: the `moved` marker an earlier move away
/// left there goes, so the clones on it work again.
pub(crate) fn clear_moved(placement: &Placement) -> Result<(), EngineError> {
    let target = RemoteTarget::open(placement)?;
    Ok(crate::store::runtime().block_on(crate::state::moved::clear(&target))?)
}

/// Before a writer's sync plans: the namespace claimed for `repo_id` and
/// the remote holding an id, both kept in this clone's record of what it
/// read (`state::seen`), so the next listing vouches for them.
pub(crate) fn ensure_registered(
    layout: &Layout,
    placement: &Placement,
    repo_id: uuid::Uuid,
) -> Result<(), EngineError> {
    let manifest = registered(placement, repo_id)?;
    let identity = remote_identity(placement)?;
    let path = layout.remote_seen_path(placement);
    let mut seen = Seen::load(&path, &Layout::remote_url(placement));
    if let Some((_, version)) = manifest {
        seen.manifest = Some(SeenManifest { version, repo_id });
    }
    if seen.enforced_for(&identity.id).is_none() {
        seen.enforced = probe_enforcement(placement).map(|enforced| SeenEnforced {
            remote_id: identity.id.clone(),
            enforced,
        });
    }
    if let Some(e) = seen.enforced_for(&identity.id) {
        store::enforced::learn(&RemoteTarget::open(placement)?.store.describe(), e);
    }
    seen.remote_id = Some(identity);
    seen.save(&path);
    Ok(())
}

/// What the server enforces, probed with scratch objects under the
/// namespace's `.swamp/` (`None`: nothing to probe, or the probe failed,
/// so conditional deletes and copies keep reading the version first;
/// the next writer's run probes again).
fn probe_enforcement(placement: &Placement) -> Option<store::enforced::Enforced> {
    let target = RemoteTarget::open(placement).ok()?;
    let token = uuid::Uuid::new_v4().simple().to_string();
    let scratch = Layout::enforcement_probe_key(placement, &token);
    match runtime().block_on(target.store.probe_enforcement(&scratch)) {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(target: "swamp::store", error = %e, "probing which preconditions the server enforces failed");
            None
        }
    }
}

/// [`ensure_remote_id`], with the version of the object holding it.
fn remote_identity(placement: &Placement) -> Result<RemoteIdentity, EngineError> {
    let target = RemoteTarget::open(placement)?;
    let key = Layout::remote_id_key(placement);
    runtime().block_on(async {
        // Two tries: a create that loses a race reads the winner's id.
        for _ in 0..2 {
            if let Some(identity) =
                crate::state::remote::read_identity(target.store.as_ref(), &key).await?
            {
                return Ok(identity);
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
                Ok(meta) => {
                    return Ok(RemoteIdentity {
                        id: body.id,
                        version: meta.version,
                    });
                }
                // Someone else's object there (unreadable as an id): leave it.
                Err(crate::store::StoreError::PreconditionFailed { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(RegistrationError::ForeignRemoteId { key }.into())
    })
}

/// Every namespace registered under the placement's `<prefix>/`, those
/// whose manifest cannot be read included (named, not failing the rest).
pub(crate) fn list_namespaces(placement: &Placement) -> Result<Vec<ListedNamespace>, EngineError> {
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
            out.push(match NamespaceManifest::parse(&bytes) {
                Ok(m) => ListedNamespace::Registered(m),
                Err(why) => ListedNamespace::Unrecognised {
                    namespace: ns.to_string(),
                    key: meta.key.clone(),
                    why,
                },
            });
        }
        out.sort_by(|a, b| a.namespace().cmp(b.namespace()));
        Ok(out)
    })
}

/// The directories beside the placement's namespace under `<prefix>/`
/// (tiers of a solo layout and swamp's own aside): the namespaces a
/// bucket holds, as a hint for a namespace that holds nothing. One
/// delimited listing where the server offers one, never the whole bucket
/// (or the whole listing where it does not: a directory bucket).
pub(crate) fn neighbour_namespaces(placement: &Placement) -> Result<Vec<String>, EngineError> {
    let solo = Placement {
        datastore: placement.datastore.clone(),
        namespace: None,
    };
    let store = store::open(&solo.datastore)?;
    if !store.capabilities().delimited_listing {
        return Ok(Vec::new());
    }
    let key_prefix = Layout::remote_prefix(&solo);
    let level = runtime().block_on(store.list_level(&key_prefix))?;
    let own = placement.namespace.as_ref().map(|n| n.as_str());
    Ok(level
        .prefixes
        .iter()
        .filter_map(|p| p.strip_prefix(&key_prefix)?.strip_suffix('/'))
        .filter(|d| crate::config::Tier::parse(d).is_none() && !d.starts_with('.'))
        .filter(|d| Some(*d) != own)
        .map(str::to_string)
        .collect())
}

pub(crate) use crate::clock::now_rfc3339;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_in_both_tools_spellings_and_anything_else_is_unrecognised() {
        let ours = br#"{"namespace":"infra","repo_id":"6f1c2a7e-3b7d-4e55-9c1a-0d6a1f2b3c4d","registered_at":"2026-01-01T00:00:00Z"}"#;
        let upstream = br#"{"namespace":"infra","repoId":"6f1c2a7e-3b7d-4e55-9c1a-0d6a1f2b3c4d","registeredAt":"2026-01-01T00:00:00.000Z"}
"#;
        let a = NamespaceManifest::parse(ours).unwrap();
        let b = NamespaceManifest::parse(upstream).unwrap();
        assert_eq!(a.repo_id, b.repo_id);
        assert_eq!(b.registered_at, "2026-01-01T00:00:00.000Z");
        // Written in our spelling.
        let written = serde_json::to_string(&b).unwrap();
        assert!(written.contains("\"repo_id\"") && !written.contains("repoId"));
        for bad in [
            &b"not json"[..],
            br#"{"namespace":"infra"}"#,
            br#"{"namespace":"infra","repoId":"not-a-uuid","registeredAt":"x"}"#,
        ] {
            let e = NamespaceManifest::parse(bad).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with("neither swamp nor upstream swamp wrote it")
            );
        }
    }
}
