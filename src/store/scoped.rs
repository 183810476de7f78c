//! A store that refuses every key outside one placement's scope, under
//! the planner as defence in depth: a hand-edited plan or a bug cannot make
//! a namespaced command touch another namespace's objects, or objects
//! another tool keeps beside ours.
//!
//! The scope is a key prefix (`<prefix>/<ns>/`, or `<prefix>/` solo) and,
//! under it, a datastore tier directory or an internal name (`.swamp/…`,
//! `.namespace.json`). A solo placement's scope therefore does not reach a
//! namespace's keys (`<prefix>/<ns>/…`): namespaces are never tier names.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::{Capabilities, ObjectMeta, Precondition, Store, StoreError};
use crate::layout::Tier;

pub struct Scoped {
    inner: Arc<dyn Store>,
    prefix: String,
}

impl Scoped {
    /// `prefix` is empty or ends with `/`.
    pub fn new(inner: Arc<dyn Store>, prefix: impl Into<String>) -> Scoped {
        Scoped {
            inner,
            prefix: prefix.into(),
        }
    }

    /// Whether `key` lies in the scope.
    pub(crate) fn contains(&self, key: &str) -> bool {
        let Some(rel) = key.strip_prefix(&self.prefix) else {
            return false;
        };
        let first = rel.split('/').next().unwrap_or("");
        rel.contains('/') && Tier::parse(first).is_some()
            || first.starts_with('.') && !matches!(first, "." | "..")
    }

    fn check(&self, key: &str) -> Result<(), StoreError> {
        if self.contains(key) {
            Ok(())
        } else {
            Err(StoreError::OutOfScope {
                key: key.to_string(),
                scope: format!("{}{}", self.inner.describe(), self.scope_label()),
            })
        }
    }

    fn scope_label(&self) -> String {
        if self.prefix.is_empty() {
            " (its datastore tiers)".to_string()
        } else {
            format!(" under `{}`", self.prefix)
        }
    }
}

impl Scoped {
    /// A listing may only ask for keys within the scope.
    fn check_prefix(&self, prefix: &str) -> Result<(), StoreError> {
        if prefix.starts_with(&self.prefix) {
            return Ok(());
        }
        Err(StoreError::OutOfScope {
            key: prefix.to_string(),
            scope: format!("{}{}", self.inner.describe(), self.scope_label()),
        })
    }
}

#[async_trait]
impl Store for Scoped {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn multipart_threshold(&self) -> Option<u64> {
        self.inner.multipart_threshold()
    }

    fn temps_listed(&self) -> Vec<super::TempObject> {
        let mut temps = self.inner.temps_listed();
        temps.retain(|t| self.contains(&t.key));
        temps
    }

    async fn remove_temp(
        &self,
        key: &str,
        untouched: std::time::Duration,
    ) -> Result<(), StoreError> {
        self.check(key)?;
        self.inner.remove_temp(key, untouched).await
    }

    fn probes_enforcement(&self) -> bool {
        self.inner.probes_enforcement()
    }

    async fn probe_enforcement(
        &self,
        scratch: &str,
    ) -> Result<Option<super::enforced::Enforced>, StoreError> {
        self.check(scratch)?;
        self.inner.probe_enforcement(scratch).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError> {
        self.check_prefix(prefix)?;
        self.inner.list(prefix).await
    }

    async fn list_paged(
        &self,
        prefix: &str,
        take: &mut (dyn FnMut(Vec<ObjectMeta>) + Send),
    ) -> Result<(), StoreError> {
        self.check_prefix(prefix)?;
        self.inner.list_paged(prefix, take).await
    }

    async fn list_if_one_page(&self, prefix: &str) -> Result<Option<Vec<ObjectMeta>>, StoreError> {
        self.check_prefix(prefix)?;
        self.inner.list_if_one_page(prefix).await
    }

    async fn list_level(&self, prefix: &str) -> Result<super::Level, StoreError> {
        self.check_prefix(prefix)?;
        self.inner.list_level(prefix).await
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        self.check(key)?;
        self.inner.head(key).await
    }

    async fn get_to_file(&self, key: &str, dest: &Path) -> Result<ObjectMeta, StoreError> {
        self.check(key)?;
        self.inner.get_to_file(key, dest).await
    }

    async fn get_known_to_file(
        &self,
        known: &ObjectMeta,
        dest: &Path,
        durability: super::Durability,
    ) -> Result<ObjectMeta, StoreError> {
        self.check(&known.key)?;
        self.inner.get_known_to_file(known, dest, durability).await
    }

    async fn get_bytes(&self, key: &str) -> Result<(ObjectMeta, Vec<u8>), StoreError> {
        self.check(key)?;
        self.inner.get_bytes(key).await
    }

    async fn put_file(
        &self,
        key: &str,
        src: &Path,
        sha256: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        self.check(key)?;
        self.inner.put_file(key, src, sha256, pre).await
    }

    async fn put_file_resumable(
        &self,
        key: &str,
        src: &Path,
        sha256: &str,
        pre: &Precondition,
        journal: &super::resume::UploadJournal,
    ) -> Result<ObjectMeta, StoreError> {
        self.check(key)?;
        self.inner
            .put_file_resumable(key, src, sha256, pre, journal)
            .await
    }

    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<(), StoreError> {
        self.check(key)?;
        self.inner.abort_upload(key, upload_id).await
    }

    async fn get_range(
        &self,
        known: &ObjectMeta,
        offset: u64,
    ) -> Result<Option<super::resume::Ranged>, StoreError> {
        self.check(&known.key)?;
        self.inner.get_range(known, offset).await
    }

    async fn put_bytes(
        &self,
        key: &str,
        bytes: Vec<u8>,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        self.check(key)?;
        self.inner.put_bytes(key, bytes, pre).await
    }

    async fn put_bytes_hashed(
        &self,
        key: &str,
        bytes: Vec<u8>,
        sha256: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        self.check(key)?;
        self.inner.put_bytes_hashed(key, bytes, sha256, pre).await
    }

    async fn delete(&self, key: &str, pre: &Precondition) -> Result<(), StoreError> {
        self.check(key)?;
        self.inner.delete(key, pre).await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<(), StoreError> {
        for key in keys {
            self.check(key)?;
        }
        self.inner.delete_many(keys).await
    }

    /// The destination must be in this scope; the source may be another
    /// placement's key in the same bucket (a re-keying copy), which its
    /// own scope vouches for.
    async fn copy(
        &self,
        from: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        self.check(to)?;
        self.inner.copy(from, to, pre).await
    }

    async fn copy_at(
        &self,
        from: &str,
        version: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<(), StoreError> {
        self.check(to)?;
        self.inner.copy_at(from, version, to, pre).await
    }

    /// Only `to` is this scope's: `from` is another bucket's key, which
    /// the source's own scope vouched for when it was listed.
    async fn copy_from_bucket(
        &self,
        bucket: &str,
        from: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        journal: Option<&crate::store::resume::UploadJournal>,
    ) -> Result<ObjectMeta, StoreError> {
        self.check(to)?;
        self.inner
            .copy_from_bucket(bucket, from, to, pre, journal)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scoped(dir: &Path, prefix: &str) -> Scoped {
        Scoped::new(super::super::open_fs(dir), prefix)
    }

    #[test]
    fn only_tier_and_internal_keys_under_the_prefix_are_in_scope() {
        let dir = tempfile::tempdir().unwrap();
        let ns = scoped(dir.path(), "swamp/alpha/");
        for key in [
            "swamp/alpha/data/m/1/raw",
            "swamp/alpha/.namespace.json",
            "swamp/alpha/.swamp/lock.json",
        ] {
            assert!(ns.contains(key), "{key}");
        }
        for key in [
            "other/precious.txt",
            "swamp/beta/data/m/1/raw",
            "swamp/alpha/notes.txt",
            "swamp/alpha/data",
            "swamp/alpha/../beta/data/x",
            "swamp/alphabet/data/x",
        ] {
            assert!(!ns.contains(key), "{key}");
        }
        // Solo: its tiers, never a namespace's keys.
        let solo = scoped(dir.path(), "swamp/");
        assert!(solo.contains("swamp/data/m/1/raw"));
        assert!(!solo.contains("swamp/alpha/data/m/1/raw"));
        let bare = scoped(dir.path(), "");
        assert!(bare.contains("outputs/x"));
        assert!(!bare.contains("alpha/outputs/x"));
    }

    #[tokio::test]
    async fn a_key_out_of_scope_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let raw = super::super::open_fs(dir.path());
        raw.put_bytes("other/precious.txt", b"keep".to_vec(), &Precondition::None)
            .await
            .unwrap();
        let s = scoped(dir.path(), "swamp/alpha/");
        let e = s
            .delete("other/precious.txt", &Precondition::None)
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::OutOfScope { .. }), "{e}");
        assert!(e.to_string().contains("other/precious.txt"), "{e}");
        assert!(s.delete_many(&["other/precious.txt".into()]).await.is_err());
        assert!(s.get_bytes("other/precious.txt").await.is_err());
        assert!(
            s.put_bytes("other/precious.txt", b"x".to_vec(), &Precondition::None)
                .await
                .is_err()
        );
        assert!(s.list("other/").await.is_err());
        assert_eq!(
            raw.get_bytes("other/precious.txt").await.unwrap().1,
            b"keep"
        );
    }
}
