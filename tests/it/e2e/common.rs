//! What the end-to-end tests on the embedded default share besides the
//! one repository harness ([`crate::support::repo::Repo`]).

use std::collections::BTreeMap;

pub use crate::support::repo::Repo;
pub use crate::support::tree;

/// The datastore files of a tree: no catalog files, no reconciler state.
pub fn data_files(tree: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    tree.iter()
        .filter(|(k, _)| !k.contains("_catalog.db") && !k.starts_with("state/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
