//! Helpers shared by the unit tests beside the code (compiled only for
//! them): values made the way the code makes them, without ceremony.

use std::path::Path;

use crate::config::{DatastoreConfig, Placement};
use crate::layout::TierPath;
use crate::store::{ObjectMeta, Precondition, RemoteTarget};

/// A tier path that must parse (`data/a/1/raw`).
pub(crate) fn tp(s: &str) -> TierPath {
    TierPath::parse(s).expect("a valid tier path")
}

/// A remote target over a directory (the filesystem store), its keys
/// under `swamp/`.
pub(crate) fn fs_target(dir: &Path) -> RemoteTarget {
    RemoteTarget {
        store: crate::store::open_fs(dir),
        placement: Placement {
            datastore: DatastoreConfig::Local,
            namespace: None,
        },
        url: "file:///test/swamp/".into(),
        key_prefix: "swamp/".into(),
    }
}

/// Writes `body` at `path`'s key of `t`, whatever is there.
pub(crate) fn put(t: &RemoteTarget, path: &str, body: &[u8]) -> ObjectMeta {
    crate::store::runtime()
        .block_on(
            t.store
                .put_bytes(&t.key(&tp(path)), body.to_vec(), &Precondition::None),
        )
        .expect("a put to a directory store")
}
