//! Whether a server enforces preconditions on delete and copy, observed
//! rather than assumed. Real GCS enforces `ifGenerationMatch` on both;
//! fake-gcs-server 1.54 on neither. Where it is not known to be enforced,
//! a store checks the object's version just before the request (one
//! metadata read, and a window a writer can slip into); where it is, the
//! request alone carries the condition.
//!
//! A probe ([`Store::probe_enforcement`]) finds out once per remote id;
//! the clone keeps the answer (`state::remote_seen`) and tells each run
//! through [`learn`], which every store of that server consults.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

/// What a probe saw the server enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enforced {
    /// A delete whose precondition does not hold is refused.
    pub delete: bool,
    /// A copy whose destination precondition does not hold is refused.
    pub copy: bool,
}

/// A conditional request the server is not known to enforce, so the
/// store reads the object's version just before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Prechecked {
    Delete,
    Copy,
}

impl Prechecked {
    /// Those of delete and copy not enforced.
    pub fn unless(delete: bool, copy: bool) -> Vec<Prechecked> {
        [(delete, Prechecked::Delete), (copy, Prechecked::Copy)]
            .into_iter()
            .filter(|(enforced, _)| !enforced)
            .map(|(_, p)| p)
            .collect()
    }
}

/// What this process was told, by server ([`super::Store::describe`]).
fn known() -> &'static Mutex<HashMap<String, Enforced>> {
    static KNOWN: OnceLock<Mutex<HashMap<String, Enforced>>> = OnceLock::new();
    KNOWN.get_or_init(Default::default)
}

/// Records what `server` was seen to enforce, for every store of it in
/// this process.
pub fn learn(server: &str, enforced: Enforced) {
    known()
        .lock()
        .expect("enforcement record")
        .insert(server.to_string(), enforced);
}

/// What `server` was seen to enforce, if this process was told.
pub fn of(server: &str) -> Option<Enforced> {
    known()
        .lock()
        .expect("enforcement record")
        .get(server)
        .copied()
}
