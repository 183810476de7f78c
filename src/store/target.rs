//! A remote placement's side of the store: the store itself, scoped to
//! the placement's prefix and namespace, and where its keys live. Shared
//! by observation, apply and doctor.

use std::sync::Arc;

use super::{Store, StoreError};
use crate::config::Placement;
use crate::layout::Layout;

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
    /// namespace ([`super::scoped`]).
    pub fn open(placement: &Placement) -> Result<RemoteTarget, StoreError> {
        let key_prefix = Layout::remote_prefix(placement);
        let store = Arc::new(super::scoped::Scoped::new(
            super::open(&placement.datastore)?,
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
        // File work of transfers (a create-write-fsync-rename per download)
        // runs here: enough threads for the fsyncs to overlap, few enough
        // that each does not keep its own allocator arena.
        .max_blocking_threads(16)
        .enable_all()
        .build()
        .expect("a tokio runtime starts")
}
