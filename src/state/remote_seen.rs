//! What this clone has read and checked of a remote's own objects, with
//! the version each was read at: the remote's id
//! (`<prefix>/<ns>/.swamp/remote-id.json`) and that the namespace manifest
//! (`<prefix>/<ns>/.namespace.json`) names this repository. Both sit under
//! the namespace's listing, so a listing that shows the same version
//! vouches for them again with no GET: a converged run costs its LIST.
//!
//! It also keeps what the server was seen to enforce (a probe, once per
//! remote id: [`crate::store::enforced`]), which no listing shows.
//!
//! Derived state in `.swamp/state/remote-seen-<hash>.json`: a record that
//! is missing, unreadable or for another remote is no record (the objects
//! are read again); a failed save costs a read next run.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::remote::RemoteIdentity;

/// The namespace manifest at a version, read and found to name `repo_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SeenManifest {
    pub version: String,
    pub repo_id: uuid::Uuid,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Seen {
    /// The remote this record is for (`s3://bucket/prefix/ns/`).
    pub remote: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_id: Option<RemoteIdentity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<SeenManifest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforced: Option<SeenEnforced>,
}

/// What a probe found the server enforce, for the remote id it ran on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SeenEnforced {
    pub remote_id: String,
    #[serde(flatten)]
    pub enforced: crate::store::enforced::Enforced,
}

impl Seen {
    /// The record for `remote` at `path`, or an empty one.
    pub(crate) fn load(path: &Path, remote: &str) -> Seen {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Seen>(&b).ok())
            .filter(|s| s.remote == remote)
            .unwrap_or_else(|| Seen {
                remote: remote.to_string(),
                ..Seen::default()
            })
    }

    /// Keeps the record (atomically; a failure only costs a read).
    pub(crate) fn save(&self, path: &Path) {
        if let Ok(bytes) = serde_json::to_vec_pretty(self) {
            let _ = crate::fsutil::atomic_write(path, &bytes);
        }
    }

    /// The remote's id, when the one read before is at the version listed.
    pub(crate) fn identity_at(&self, listed: &str) -> Option<RemoteIdentity> {
        self.remote_id.clone().filter(|i| i.version == listed)
    }

    /// What the server was seen to enforce, if probed for remote `id`.
    pub(crate) fn enforced_for(&self, id: &str) -> Option<crate::store::enforced::Enforced> {
        self.enforced
            .as_ref()
            .filter(|e| e.remote_id == id)
            .map(|e| e.enforced)
    }

    /// Whether the manifest at the version listed was read before and named
    /// `repo_id`.
    pub(crate) fn names_repo(&self, listed: &str, repo_id: uuid::Uuid) -> bool {
        self.manifest
            .as_ref()
            .is_some_and(|m| m.version == listed && m.repo_id == repo_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_vouches_only_for_the_version_it_read_and_its_own_remote() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seen.json");
        let repo = uuid::Uuid::new_v4();
        let mut seen = Seen::load(&path, "s3://b/p/ns/");
        assert_eq!(seen.identity_at("e1"), None);
        seen.remote_id = Some(RemoteIdentity {
            id: "id-1".into(),
            version: "e1".into(),
        });
        seen.manifest = Some(SeenManifest {
            version: "m1".into(),
            repo_id: repo,
        });
        seen.save(&path);

        let again = Seen::load(&path, "s3://b/p/ns/");
        assert_eq!(again.identity_at("e1").unwrap().id, "id-1");
        assert_eq!(
            again.identity_at("e2"),
            None,
            "another version is read again"
        );
        assert!(again.names_repo("m1", repo));
        assert!(!again.names_repo("m2", repo));
        assert!(!again.names_repo("m1", uuid::Uuid::new_v4()));

        let other = Seen::load(&path, "s3://b/p/other/");
        assert_eq!(
            other.identity_at("e1"),
            None,
            "a record for another remote is none"
        );
        std::fs::write(&path, b"{not json").unwrap();
        assert_eq!(Seen::load(&path, "s3://b/p/ns/").identity_at("e1"), None);
    }
}
