//! Deletes swamp can explain, so that the sync's delete guards count only
//! those it cannot (issue 13): a peer's `data gc` must not block every
//! other clone, while a bucket emptied behind swamp's back still must.
//!
//! Two sources, both observed here:
//! - this clone's own: what its commands (`data rm`, `data gc`, applies)
//!   set aside since the last sync, read from the undo journals newer
//!   than the sync base;
//! - other clones': the records under `<prefix>/<ns>/.swamp/deletes/`
//!   that a sync writes (create-only) when it pushes deletes of its own,
//!   and prunes once they are older than [`RECORD_DAYS`].

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::config::Placement;
use crate::digest::Sha256;
use crate::layout::{Layout, TierPath};
use crate::store::{Store, StoreError};

/// How long a delete record stays in the bucket: a clone that has not
/// synced for longer meets the guard instead (blocked, never losing data).
pub const RECORD_DAYS: u64 = 30;

/// One file a swamp command deleted on purpose, with the content it had.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DeletedFile {
    pub path: TierPath,
    pub sha256: Sha256,
}

/// The body of a record object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordBody {
    /// RFC 3339, UTC.
    pub at: String,
    /// `user@host`.
    pub by: String,
    pub files: Vec<DeletedFile>,
}

/// A record object as observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteRecord {
    pub key: String,
    pub version: String,
    pub files: Vec<DeletedFile>,
    /// Older than [`RECORD_DAYS`]: the next record written prunes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
}

/// What this clone's own commands deleted from `placement` since its last
/// sync with it (the undo journals written after the sync base).
pub fn deleted_here(layout: &Layout, placement: &Placement) -> BTreeMap<TierPath, Sha256> {
    let mut out = BTreeMap::new();
    let Ok(synced) = std::fs::metadata(layout.sync_base_path(placement)).and_then(|m| m.modified())
    else {
        // Never synced: nothing is deleted by a sync anyway.
        return out;
    };
    let dir = layout.trash_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let newer = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t > synced);
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if !newer || !crate::undo::is_id(id) {
            continue;
        }
        // An unreadable journal explains nothing (the guard stays).
        let Ok(journal) = crate::undo::Journal::load(layout, id) else {
            continue;
        };
        for e in journal.entries {
            if e.op == crate::undo::Op::SetAside
                && e.written.is_none()
                && e.placement == *placement
                && let Some(sha) = Sha256::parse(&e.sha256)
            {
                out.insert(e.path, sha);
            }
        }
    }
    out
}

/// Reads the delete records the listing found (`records`: key and
/// version only), oldest first by key. A record that cannot be read as
/// one explains nothing (and is never pruned); one gone since the listing
/// is left out.
pub async fn read_records(
    store: &dyn Store,
    records: &mut Vec<DeleteRecord>,
    now: SystemTime,
) -> Result<(), StoreError> {
    let mut read = Vec::with_capacity(records.len());
    for mut record in std::mem::take(records) {
        let bytes = match store.get_bytes(&record.key).await {
            Ok((meta, bytes)) => {
                record.version = meta.version;
                bytes
            }
            Err(StoreError::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        let Ok(body) = serde_json::from_slice::<RecordBody>(&bytes) else {
            continue;
        };
        record.expired = humantime::parse_rfc3339(&body.at).is_ok_and(|at| {
            now.duration_since(at)
                .is_ok_and(|age| age > Duration::from_secs(RECORD_DAYS * 86_400))
        });
        record.files = body.files;
        read.push(record);
    }
    read.sort_by(|a, b| a.key.cmp(&b.key));
    *records = read;
    Ok(())
}

/// A new record's key: time-ordered, unique across clones.
pub fn new_record_key(placement: &Placement, now: SystemTime) -> String {
    let secs = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "{}{secs:015}-{}.json",
        Layout::remote_deletes_prefix(placement),
        &id[..12]
    )
}
