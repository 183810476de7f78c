//! Deletes swamp can explain, so that the sync's delete guards count only
//! those it cannot (issue 13): a peer's `data gc` must not block every
//! other clone, while a bucket emptied behind swamp's back still must.
//!
//! Two sources, both observed here:
//! - this clone's own: what its commands (`data rm`, `data gc`, applies)
//!   set aside since the last sync, read from the undo journals newer
//!   than the sync base;
//! - other clones': the records under `<prefix>/<ns>/.swamp/deletes/`
//!   that a sync writes (create-only) when it pushes deletes of its own.
//!
//! A record is kept until every other clone's sync base has passed it.
//! Each clone says how far it has got in a note,
//! `<prefix>/<ns>/.swamp/clones/<clone-id>/<stem>.json`: every record up
//! to `<stem>` (records sort by their keys' stems, in the order they were
//! written) that another clone wrote is no longer in its base. The note is
//! in the key, so the listing that finds the records finds the notes too,
//! with no extra request; it is rewritten only when it advances. A record
//! every other clone has passed goes once it is [`GRACE_DAYS`] old (a
//! clone that has not noted yet may still need it); any record goes once
//! older than [`RECORD_DAYS`], with the notes of clones that had not
//! passed it by then (gone, or idle: such a clone meets the delete guard
//! when it returns, blocked, never losing data). Records never change, so
//! each is read once and kept in `.swamp/state/`.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::config::Placement;
use crate::digest::Sha256;
use crate::journal::Op;
use crate::layout::{Layout, TierPath};
use crate::store::{Store, StoreError};

/// How long a delete record stays in the bucket at most: a clone that has
/// not synced for longer meets the guard instead (blocked, never losing
/// data).
pub const RECORD_DAYS: u64 = 30;

/// How long a record is kept at least, even once every clone that noted
/// has passed it: a clone that synced before notes existed, or whose first
/// sync stopped before its note, has this long to sync again.
pub const GRACE_DAYS: u64 = 7;

/// The stem of a clone's note before it has passed any record: sorts
/// before every record's.
pub const NO_STEM: &str = "000000000000000-000000000000";

/// One file a swamp command deleted on purpose: the content it had, and
/// the version of the object the sync deleted (which is what the other
/// clones' sync bases recorded for it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DeletedFile {
    pub path: TierPath,
    pub sha256: Sha256,
    pub version: String,
}

/// The body of a record object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordBody {
    /// RFC 3339, UTC.
    pub at: String,
    /// `user@host`.
    pub by: String,
    /// The clone that wrote it (its own records it need not pass). Absent
    /// in records of the first version: anyone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone: Option<String>,
    pub files: Vec<DeletedFile>,
}

/// A record object as observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteRecord {
    pub key: String,
    pub version: String,
    pub files: Vec<DeletedFile>,
    /// Older than [`RECORD_DAYS`]: the next sync prunes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expired: bool,
    /// Younger than [`GRACE_DAYS`]: kept, whoever has passed it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub young: bool,
    /// The clone that wrote it, when the record says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone: Option<String>,
    /// This clone wrote it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mine: bool,
}

impl DeleteRecord {
    /// The key's time-ordered stem (`<ms>-<id>`).
    pub fn stem(&self) -> &str {
        record_stem(&self.key).unwrap_or(NO_STEM)
    }
}

/// A clone's note of how far its sync base has passed the other clones'
/// records, as listed (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloneNote {
    pub key: String,
    pub version: String,
    pub clone: String,
    /// Every other clone's record up to this stem is passed.
    pub passed: String,
    /// This clone's own note.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mine: bool,
    /// When it was last written (seconds since the epoch), as listed:
    /// when that clone last synced past a record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<i64>,
}

/// The body of a note: for people reading the bucket; never read back.
#[derive(Debug, Serialize)]
pub struct NoteBody<'a> {
    pub at: &'a str,
    pub by: &'a str,
}

/// The stem of a record key (`…/.swamp/deletes/<ms>-<id>.json`).
pub fn record_stem(key: &str) -> Option<&str> {
    let name = key.rsplit('/').next()?.strip_suffix(".json")?;
    is_stem(name).then_some(name)
}

fn is_stem(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 28
        && b[15] == b'-'
        && b[..15].iter().all(u8::is_ascii_digit)
        && b[16..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

fn is_clone_id(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// Reads a listed key under `notes_prefix` as a clone's note
/// (`<clone-id>/<stem>.json`); anything else there is not one.
pub fn parse_note(
    notes_prefix: &str,
    key: &str,
    version: &str,
    modified: Option<i64>,
) -> Option<CloneNote> {
    let rest = key.strip_prefix(notes_prefix)?;
    let (clone, name) = rest.split_once('/')?;
    let stem = name.strip_suffix(".json")?;
    (is_clone_id(clone) && is_stem(stem)).then(|| CloneNote {
        key: key.to_string(),
        version: version.to_string(),
        clone: clone.to_string(),
        passed: stem.to_string(),
        mine: false,
        modified,
    })
}

/// A note's key.
pub fn note_key(placement: &Placement, clone: &str, passed: &str) -> String {
    format!(
        "{}{clone}/{passed}.json",
        Layout::remote_clones_prefix(placement)
    )
}

/// This clone's id (`.swamp/state/clone-id`), made on first use. A copy of
/// the repository's `.swamp/` shares it: the two then note as one, and the
/// one behind meets the guard at worst.
pub fn clone_id(layout: &Layout) -> std::io::Result<String> {
    let path = layout.clone_id_path();
    match std::fs::read_to_string(&path) {
        Ok(s) if is_clone_id(s.trim()) => return Ok(s.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let id = uuid::Uuid::new_v4().simple().to_string();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::fsutil::atomic_write(&path, format!("{id}\n").as_bytes())?;
    Ok(id)
}

/// What this clone's own commands deleted from `placement` since its
/// last sync that pushed to it (the undo journals written after it; all of
/// them if it never pushed).
pub fn deleted_here(layout: &Layout, placement: &Placement) -> BTreeMap<TierPath, Sha256> {
    let mut out = BTreeMap::new();
    if !layout.sync_base_path(placement).exists() {
        // Never synced: nothing is deleted by a sync anyway.
        return out;
    }
    let synced = std::fs::metadata(layout.deletes_pushed_path(placement))
        .and_then(|m| m.modified())
        .unwrap_or(std::time::UNIX_EPOCH);
    let dir = layout.trash_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return out;
    };
    // Each journal's entries of this placement that set a file aside or
    // restored one, read as a stream (a move's journal lists a million
    // objects of other places).
    let mut journals = Vec::new();
    for entry in entries.flatten() {
        let newer = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t > synced);
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if !newer || !crate::journal::is_id(id) {
            continue;
        }
        let mut kept = Vec::new();
        let scanned = crate::journal::Journal::scan(layout, id, |e| {
            let op = e.op;
            if *e.placement == *placement
                && (op == Op::Restored || (op == Op::SetAside && e.written.is_none()))
            {
                kept.push(e);
            }
        });
        // An unreadable journal explains nothing (the guard stays).
        if let Ok(journal) = scanned {
            journals.push((journal, kept));
        }
    }
    // In the order they ran: an undo that put a file back takes back the
    // explanation of its delete (deleted again by hand, it is no work of
    // swamp's).
    journals.sort_by(|a, b| (a.0.seq, &a.0.id).cmp(&(b.0.seq, &b.0.id)));
    for (journal, entries) in journals {
        for e in entries {
            match e.op {
                // Set aside indeed: a journal is written before its first
                // step, so one cut short lists files never moved.
                Op::SetAside
                    if journal.finished
                        || layout
                            .set_aside_path(placement, &e.path, &journal.id)
                            .exists() =>
                {
                    if let Some(sha) = Sha256::parse(&e.sha256) {
                        out.insert(e.path, sha);
                    }
                }
                Op::Restored => {
                    out.remove(&e.path);
                }
                _ => {}
            }
        }
    }
    out
}

/// Reads the delete records the listing found (`records`: key and
/// version only), oldest first, and marks this clone's (`me`). Records are
/// written once and never changed, so each is fetched once: what was read
/// is kept in `cache` (by key and version) for the next plans. A record
/// that cannot be read as one explains nothing (and is never pruned); one
/// gone since the listing is left out.
pub async fn read_records(
    store: &dyn Store,
    records: &mut Vec<DeleteRecord>,
    now: SystemTime,
    me: &str,
    cache: &std::path::Path,
) -> Result<(), StoreError> {
    use futures_util::StreamExt;
    let mut known: BTreeMap<String, CachedRecord> = std::fs::read(cache)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let listed: Vec<DeleteRecord> = std::mem::take(records);
    // A few at once: a busy namespace may hold a record per sync of a
    // month.
    let fetched: Vec<Result<Option<(String, CachedRecord)>, StoreError>> =
        futures_util::stream::iter(
            listed
                .iter()
                .filter(|r| known.get(&r.key).is_none_or(|c| c.version != r.version))
                .map(|record| async move {
                    let (version, bytes) = match store.get_bytes(&record.key).await {
                        Ok((meta, bytes)) => (meta.version, bytes),
                        Err(StoreError::NotFound { .. }) => return Ok(None),
                        Err(e) => return Err(e),
                    };
                    let Ok(body) = serde_json::from_slice::<RecordBody>(&bytes) else {
                        return Ok(None);
                    };
                    Ok(Some((record.key.clone(), CachedRecord { version, body })))
                }),
        )
        .buffer_unordered(8)
        .collect()
        .await;
    let mut changed = false;
    for r in fetched {
        if let Some((key, rec)) = r? {
            known.insert(key, rec);
            changed = true;
        }
    }
    let age = |at: &str| {
        humantime::parse_rfc3339(at)
            .ok()
            .and_then(|at| now.duration_since(at).ok())
    };
    let mut read = Vec::with_capacity(listed.len());
    for mut record in listed {
        let Some(rec) = known.get(&record.key) else {
            continue;
        };
        let body = &rec.body;
        record.version = rec.version.clone();
        record.expired =
            age(&body.at).is_some_and(|a| a > Duration::from_secs(RECORD_DAYS * 86_400));
        record.young = age(&body.at).is_none_or(|a| a < Duration::from_secs(GRACE_DAYS * 86_400));
        record.mine = body.clone.as_deref() == Some(me);
        record.clone = body.clone.clone();
        record.files = body.files.clone();
        read.push(record);
    }
    // Only what is still listed is worth keeping.
    let before = known.len();
    known.retain(|k, _| read.iter().any(|r| r.key == *k));
    if changed || known.len() != before {
        // Losing it costs a GET per record next time, nothing more.
        let _ = serde_json::to_vec(&known).map(|b| crate::fsutil::atomic_write(cache, &b));
    }
    read.sort_by(|a, b| a.stem().cmp(b.stem()));
    *records = read;
    Ok(())
}

/// Keeps a record this clone just wrote in the records cache at `cache`,
/// so the next plan need not read it back (derived state: a failure costs
/// that read).
pub(crate) fn remember_record(
    cache: &std::path::Path,
    key: String,
    version: String,
    body: RecordBody,
) {
    let mut known: BTreeMap<String, CachedRecord> = std::fs::read(cache)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    known.insert(key, CachedRecord { version, body });
    if let Ok(bytes) = serde_json::to_vec(&known) {
        let _ = crate::fsutil::atomic_write(cache, &bytes);
    }
}

/// A record as read before, in the cache [`read_records`] keeps.
#[derive(Debug, Serialize, Deserialize)]
struct CachedRecord {
    version: String,
    body: RecordBody,
}

/// A new record's key: time-ordered, unique across clones, and after
/// `after` (the newest record listed) whatever this machine's clock says,
/// so that a note's "every record up to here" never covers a record
/// written later (syncs hold the datastore lock, so the listing saw every
/// record written before).
pub fn new_record_key(placement: &Placement, now: SystemTime, after: Option<&str>) -> String {
    let mut ms = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    if let Some(after) = after.and_then(|a| a.get(..15)?.parse::<u128>().ok()) {
        ms = ms.max(after + 1);
    }
    // Fifteen digits, whatever a hostile key said.
    ms = ms.min(999_999_999_999_999);
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "{}{ms:015}-{}.json",
        Layout::remote_deletes_prefix(placement),
        &id[..12]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, DatastoreConfig};
    use crate::journal::{Entry, Journal, Op};

    fn entry(placement: &Placement, op: Op, path: &str, sha: char) -> Entry {
        Entry {
            op,
            placement: placement.clone().into(),
            path: TierPath::parse(path).unwrap(),
            sha256: sha.to_string().repeat(64),
            size: 1,
            written: None,
            from: None,
        }
    }

    #[test]
    fn notes_and_records_are_read_from_their_keys_and_nothing_else_is() {
        let id = "0123456789abcdef0123456789abcdef";
        let stem = "001764000000000-0123456789ab";
        let prefix = "p/ns/.swamp/clones/";
        let note = parse_note(prefix, &format!("{prefix}{id}/{stem}.json"), "v", None).unwrap();
        assert_eq!((note.clone.as_str(), note.passed.as_str()), (id, stem));
        for bad in [
            format!("{prefix}{id}/{stem}.tmp"),
            format!("{prefix}{id}/x/{stem}.json"),
            format!("{prefix}NOT-AN-ID/{stem}.json"),
            format!("{prefix}{id}/0017640-0123.json"),
            format!("{prefix}{id}.json"),
        ] {
            assert!(parse_note(prefix, &bad, "v", None).is_none(), "{bad}");
        }
        assert_eq!(
            record_stem(&format!("p/.swamp/deletes/{stem}.json")),
            Some(stem)
        );
        assert_eq!(record_stem("p/.swamp/deletes/readme.json"), None);
    }

    #[test]
    fn a_new_record_sorts_after_the_newest_listed_whatever_the_clock_says() {
        let placement = Placement {
            datastore: DatastoreConfig::Local,
            namespace: None,
        };
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let behind = new_record_key(&placement, now, Some("001764000000000-0123456789ab"));
        let stem = record_stem(&behind).unwrap();
        assert!(stem > "001764000000000-0123456789ab", "{stem}");
        assert!(stem.starts_with("001764000000001-"), "{stem}");
        let on_time = new_record_key(&placement, now, Some(NO_STEM));
        assert!(
            record_stem(&on_time)
                .unwrap()
                .starts_with("000000001000000-")
        );
    }

    #[test]
    fn deletes_since_the_last_sync_explain_and_an_undo_takes_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        let config = Config::new(uuid::Uuid::new_v4(), DatastoreConfig::Local, None);
        let layout = Layout::new(&root, &config, &dir.path().join("home")).unwrap();
        let placement = config.target();
        let other = Placement {
            datastore: DatastoreConfig::Local,
            namespace: Some(crate::config::Namespace::parse("other").unwrap()),
        };
        // Never synced: nothing to explain.
        assert!(deleted_here(&layout, &placement).is_empty());
        let old = |path: &std::path::Path| {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(SystemTime::now() - Duration::from_secs(3600))
                .unwrap();
        };
        // An apply before the last sync explains nothing any more.
        let mut before = Journal::begin(
            &layout,
            "swamp data rm a",
            "s".into(),
            vec![entry(&placement, Op::SetAside, "data/a/1/raw", 'a')],
        );
        before.finished = true;
        before.save(&layout).unwrap();
        old(&layout.journal_path(&before.id));
        let base = layout.sync_base_path(&placement);
        std::fs::create_dir_all(base.parent().unwrap()).unwrap();
        std::fs::write(&base, "{}").unwrap();
        // Synced, never pushed: every journal explains.
        assert_eq!(deleted_here(&layout, &placement).len(), 1);
        // Pushed since: only later ones do (a pull since changes nothing).
        let pushed = layout.deletes_pushed_path(&placement);
        std::fs::write(&pushed, "t").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&pushed)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(60))
            .unwrap();
        assert!(deleted_here(&layout, &placement).is_empty());
        let mut rm = Journal::begin(
            &layout,
            "swamp data gc",
            "s".into(),
            vec![
                entry(&placement, Op::SetAside, "data/m/1/raw", 'b'),
                entry(&placement, Op::SetAside, "data/m/2/raw", 'c'),
                entry(&other, Op::SetAside, "data/o/1/raw", 'd'),
            ],
        );
        // Cut short before it moved anything: it explains nothing.
        rm.save(&layout).unwrap();
        assert!(deleted_here(&layout, &placement).is_empty());
        rm.finished = true;
        rm.save(&layout).unwrap();
        let explained = deleted_here(&layout, &placement);
        let sha = |c: char| Sha256::parse(&c.to_string().repeat(64)).unwrap();
        assert_eq!(
            explained.into_iter().collect::<Vec<_>>(),
            [
                (TierPath::parse("data/m/1/raw").unwrap(), sha('b')),
                (TierPath::parse("data/m/2/raw").unwrap(), sha('c')),
            ]
        );
        // `swamp undo` put one back: deleted again by hand, it counts.
        let undo = Journal::begin(
            &layout,
            "swamp undo",
            "s".into(),
            vec![entry(&placement, Op::Restored, "data/m/1/raw", 'b')],
        );
        undo.save(&layout).unwrap();
        let explained = deleted_here(&layout, &placement);
        assert_eq!(
            explained.into_keys().collect::<Vec<_>>(),
            [TierPath::parse("data/m/2/raw").unwrap()]
        );
    }
}
