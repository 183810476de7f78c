//! The `moved` marker a move leaves at the place it left
//! (`<prefix>/<ns>/.swamp/moved.json`, create-only): where the datastore
//! went, when and by whom. A clone still configured for the old place
//! reads it before planning anything and stops, naming the new place.

use serde::{Deserialize, Serialize};

use crate::store::{Precondition, RemoteTarget, StoreError};

/// The marker's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Moved {
    /// Where the datastore is now: a URL, or `local`, or a path.
    pub to: String,
    /// The spec `swamp datastore setup` takes to follow it, when it is a
    /// remote (None: a local or filesystem datastore of one repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    pub at: String,
    pub by: String,
}

impl Moved {
    /// A marker naming `place`, left now by this user.
    pub(crate) fn to(place: &crate::config::Placement) -> Moved {
        let (to, spec) = named(place);
        Moved {
            to,
            spec,
            at: crate::clock::now_rfc3339(),
            by: crate::lock::who_am_i(),
        }
    }
}

/// How a marker names `place`: its URL and the spec that follows it (a
/// remote), or what `.swamp.toml` says (a local or filesystem datastore).
pub(crate) fn named(place: &crate::config::Placement) -> (String, Option<String>) {
    if place.datastore.is_remote() {
        return (
            crate::layout::Layout::remote_url(place),
            Some(crate::config::datastore_spec(&place.datastore)),
        );
    }
    (place.datastore.to_string(), None)
}

/// Reads the marker at `remote`'s place (None: there is none, or it is
/// not one of ours).
pub(crate) async fn read(remote: &RemoteTarget) -> Result<Option<Moved>, StoreError> {
    let key = crate::layout::Layout::moved_marker_key(&remote.placement);
    match remote.store.get_bytes(&key).await {
        Ok((_, bytes)) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Leaves the marker at `remote`'s place, create-only: one already there
/// (a rerun's) stays.
pub(crate) async fn leave(remote: &RemoteTarget, moved: &Moved) -> Result<(), StoreError> {
    let key = crate::layout::Layout::moved_marker_key(&remote.placement);
    let mut bytes = serde_json::to_vec_pretty(moved).expect("a marker serialises");
    bytes.push(b'\n');
    match remote
        .store
        .put_bytes(&key, bytes, &Precondition::CreateOnly)
        .await
    {
        Ok(_) | Err(StoreError::PreconditionFailed { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Removes the marker at `remote`'s place: the datastore moves back in.
pub(crate) async fn clear(remote: &RemoteTarget) -> Result<(), StoreError> {
    let key = crate::layout::Layout::moved_marker_key(&remote.placement);
    remote.store.delete(&key, &Precondition::None).await
}
