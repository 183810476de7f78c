//! Upstream swamp's lock, honoured as held: `<prefix>/.locks/<ns>.lock`
//! for a namespace, `<prefix>/.datastore.lock` solo (the TypeScript tool
//! this project replaces). A repository moving between the two tools, or
//! two operators using one of each on a shared bucket, must not have both
//! write the same namespace at once; upstream never looks at our lock, so
//! we look at its.
//!
//! Upstream's own staleness rule decides when it no longer counts: its
//! holder rewrites the object every third of its TTL (`ttlMs`, 30 s by
//! default), so an object not written for longer than its TTL (the
//! server's last-modified time, or the file's mtime) belongs to a holder
//! that is gone. We never write or delete it: breaking it is upstream's
//! business (`swamp datastore lock release --force` there).

use std::time::{Duration, SystemTime};

use serde::Deserialize;

use crate::config::{DatastoreConfig, Namespace, Placement};
use crate::layout::Layout;
use crate::store::{Store, StoreError};

/// Upstream's TTL when its lock does not say.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_millis(30_000);

/// What upstream's lock says (`LockInfo`); every field optional, so a
/// lock from any upstream version is understood.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamBody {
    pub holder: Option<String>,
    pub hostname: Option<String>,
    pub pid: Option<u64>,
    pub acquired_at: Option<String>,
    pub ttl_ms: Option<u64>,
    pub nonce: Option<String>,
}

impl UpstreamBody {
    pub fn ttl(&self) -> Duration {
        self.ttl_ms.map_or(DEFAULT_TTL, Duration::from_millis)
    }

    /// `user@host (pid N)`, or what of it the lock says.
    pub fn describe(&self) -> String {
        let who = self
            .holder
            .clone()
            .or_else(|| self.hostname.clone())
            .unwrap_or_else(|| "an unknown holder".into());
        match self.pid {
            Some(pid) => format!("{who} (pid {pid})"),
            None => who,
        }
    }
}

/// Upstream's lock as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UpstreamLock {
    Free,
    Held {
        /// Unreadable as upstream's lock: held by an unknown holder, with
        /// upstream's default TTL.
        body: UpstreamBody,
        /// Seconds since it was last written; `None` if no time is known
        /// (then it counts as held).
        age_secs: Option<u64>,
        stale: bool,
    },
}

/// Where upstream keeps the lock of `placement`: the key in the store of
/// its datastore, `None` for a datastore upstream has no lock in.
pub(crate) fn key(placement: &Placement) -> Option<String> {
    if matches!(placement.datastore, DatastoreConfig::Local) {
        return None;
    }
    let solo = Placement {
        datastore: placement.datastore.clone(),
        namespace: None,
    };
    let prefix = Layout::remote_prefix(&solo);
    Some(match &placement.namespace {
        Some(ns) => format!("{prefix}.locks/{}.lock", Namespace::as_str(ns)),
        None => format!("{prefix}.datastore.lock"),
    })
}

/// `s3://bucket/prefix/.locks/ns.lock`, for messages.
pub(crate) fn url(placement: &Placement) -> Option<String> {
    let key = key(placement)?;
    Some(match &placement.datastore {
        DatastoreConfig::Filesystem { path } => path.as_path().join(&key).display().to_string(),
        _ => {
            let solo = Placement {
                datastore: placement.datastore.clone(),
                namespace: None,
            };
            let base = Layout::remote_url(&solo);
            let prefix = Layout::remote_prefix(&solo);
            format!("{base}{}", &key[prefix.len()..])
        }
    })
}

/// Reads upstream's lock at `key`.
pub(crate) async fn inspect(store: &dyn Store, key: &str) -> Result<UpstreamLock, StoreError> {
    let Some(meta) = store.head(key).await? else {
        return Ok(UpstreamLock::Free);
    };
    let body = match store.get_bytes(key).await {
        Ok((_, bytes)) => serde_json::from_slice(&bytes).unwrap_or_default(),
        Err(StoreError::NotFound { .. }) => return Ok(UpstreamLock::Free),
        // Bytes that disagree with metadata another tool wrote: still a
        // lock, of an unknown holder.
        Err(StoreError::Integrity { .. }) => UpstreamBody::default(),
        Err(e) => return Err(e),
    };
    Ok(judge(body, meta.modified, crate::clock::now()))
}

/// Upstream's rule: stale once not written for longer than its TTL.
pub(crate) fn judge(body: UpstreamBody, modified: Option<i64>, now: SystemTime) -> UpstreamLock {
    let now_secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let age_secs = modified.map(|m| now_secs.saturating_sub(m).max(0) as u64);
    // Whole seconds on both sides: a second's grace, so a lock is never
    // called stale early.
    let stale = age_secs.is_some_and(|age| age > body.ttl().as_secs() + 1);
    UpstreamLock::Held {
        body,
        age_secs,
        stale,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(ns: Option<&str>) -> Placement {
        Placement {
            datastore: DatastoreConfig::S3 {
                bucket: "b".into(),
                prefix: Some("swamp".into()),
                region: None,
                endpoint: None,
            },
            namespace: ns.map(|n| Namespace::parse(n).unwrap()),
        }
    }

    #[test]
    fn the_key_is_upstreams_per_namespace_or_solo() {
        assert_eq!(
            key(&placement(Some("infra"))).unwrap(),
            "swamp/.locks/infra.lock"
        );
        assert_eq!(key(&placement(None)).unwrap(), "swamp/.datastore.lock");
        assert_eq!(
            url(&placement(Some("infra"))).unwrap(),
            "s3://b/swamp/.locks/infra.lock"
        );
        let local = Placement {
            datastore: DatastoreConfig::Local,
            namespace: None,
        };
        assert_eq!(key(&local), None);
    }

    #[test]
    fn a_lock_is_stale_only_once_unwritten_for_longer_than_its_ttl() {
        let body: UpstreamBody = serde_json::from_str(
            r#"{"holder":"ada@vm","hostname":"vm","pid":42,"acquiredAt":"2026-12-01T10:00:00.000Z","ttlMs":30000,"nonce":"n"}"#,
        )
        .unwrap();
        assert_eq!(body.describe(), "ada@vm (pid 42)");
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let at = |age: i64| Some(1_000_000 - age);
        assert!(matches!(
            judge(body.clone(), at(10), now),
            UpstreamLock::Held { stale: false, .. }
        ));
        assert!(matches!(
            judge(body.clone(), at(31), now),
            UpstreamLock::Held { stale: false, .. }
        ));
        assert!(matches!(
            judge(body.clone(), at(60), now),
            UpstreamLock::Held { stale: true, .. }
        ));
        // No time known: held.
        assert!(matches!(
            judge(body, None, now),
            UpstreamLock::Held { stale: false, .. }
        ));
        // Unreadable: an unknown holder with upstream's default TTL.
        assert_eq!(UpstreamBody::default().ttl(), DEFAULT_TTL);
        assert_eq!(UpstreamBody::default().describe(), "an unknown holder");
    }
}
