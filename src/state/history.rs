//! The team's history as this clone reads it (`journal::record`): one
//! LIST of `<prefix>/<ns>/.swamp/history/`, and a GET of each record not
//! read before at the version listed. What was read is kept in
//! `.swamp/state/history-<id>/` (`<apply-id>.json`, and `index.json`: the
//! version each was read at), so a second `swamp history` reads nothing
//! but the listing. A record gone from the bucket (pruned) is forgotten.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::journal::record::{self, Change, RecordHead};
use crate::layout::Layout;
use crate::store::{RemoteTarget, StoreError};

/// Records fetched side by side.
const GETS_IN_FLIGHT: usize = 16;

/// A record as a sync's listing shows it (never read): what retention
/// prunes once its id says it is older than `[undo] keep_days`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ListedRecord {
    pub key: String,
    pub version: String,
    /// As listed: a record too large is never read to name authors.
    #[serde(default)]
    pub size: u64,
}

/// The apply id a history key names (`…/.swamp/history/<id>.json`) under
/// `prefix` (`<prefix>/<ns>/.swamp/history/`).
pub(crate) fn listed_id<'k>(prefix: &str, key: &'k str) -> Option<&'k str> {
    let id = key.strip_prefix(prefix)?.strip_suffix(".json")?;
    crate::journal::is_id(id).then_some(id)
}

/// The records of a namespace, as listed and read.
#[derive(Debug, Default)]
pub(crate) struct TeamHistory {
    /// Every readable record, oldest first.
    pub records: Vec<RecordHead>,
    /// This clone's id, which its own records name.
    pub me: String,
    /// Records that could not be read as one (another tool's key, a newer
    /// format, bytes that are not a record), by key.
    pub unreadable: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum HistoryReadError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot {action} {}: {source}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io_err(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> HistoryReadError {
    let path = path.to_path_buf();
    move |source| HistoryReadError::Io {
        action,
        path,
        source,
    }
}

/// The versions of the records kept, by apply id.
type Index = BTreeMap<String, String>;

fn load_index(dir: &Path) -> Index {
    std::fs::read(dir.join("index.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn save_index(dir: &Path, index: &Index) -> std::io::Result<()> {
    let body = serde_json::to_vec_pretty(index).expect("a map of strings");
    crate::fsutil::atomic_write(&dir.join("index.json"), &body)
}

/// Lists `target`'s history and reads each record not kept at the
/// version listed into `dir`.
pub(crate) async fn read(
    target: &RemoteTarget,
    dir: &Path,
) -> Result<TeamHistory, HistoryReadError> {
    let prefix = Layout::remote_history_prefix(&target.placement);
    let listed: Vec<(String, crate::store::ObjectMeta)> = target
        .store
        .list(&prefix)
        .await?
        .into_iter()
        .filter_map(|m| Some((listed_id(&prefix, &m.key)?.to_string(), m)))
        .collect();
    std::fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    let mut index = load_index(dir);
    let before = index.clone();
    // Anything under `.swamp/history/` may be another tool's: one larger
    // than any record is never read (it is unreadable here).
    let wanted: Vec<(&str, &str, &str)> = listed
        .iter()
        .filter(|(_, m)| m.size <= MAX_RECORD)
        .map(|(id, m)| (id.as_str(), m.key.as_str(), m.version.as_str()))
        .collect();
    fetch(target, dir, &wanted, &mut index).await?;
    // What the bucket no longer lists is forgotten here too.
    let listed_ids: std::collections::BTreeSet<&str> =
        listed.iter().map(|(id, _)| id.as_str()).collect();
    index.retain(|id, _| {
        let keep = listed_ids.contains(id.as_str());
        if !keep {
            let _ = std::fs::remove_file(dir.join(format!("{id}.json")));
        }
        keep
    });
    if index != before {
        save_index(dir, &index).map_err(io_err("write", &dir.join("index.json")))?;
    }
    let mut out = TeamHistory::default();
    for (id, m) in &listed {
        if !index.contains_key(id) {
            if m.size > MAX_RECORD {
                out.unreadable.push(m.key.clone());
            }
            continue;
        }
        match read_kept_head(dir, id) {
            Some(head) => out.records.push(head),
            None => out.unreadable.push(m.key.clone()),
        }
    }
    out.records
        .sort_by(|a, b| (&a.at, &a.id).cmp(&(&b.at, &b.id)));
    Ok(out)
}

/// Reads each of `wanted` (id, key, version) not kept at that version
/// into `dir`, noting the version read in `index`.
async fn fetch(
    target: &RemoteTarget,
    dir: &Path,
    wanted: &[(&str, &str, &str)],
    index: &mut Index,
) -> Result<(), HistoryReadError> {
    use futures_util::StreamExt;
    let stale = wanted.iter().filter(|(id, _, version)| {
        index.get(*id).map(String::as_str) != Some(*version)
            || !dir.join(format!("{id}.json")).is_file()
    });
    let fetched: Vec<Result<(String, String), StoreError>> =
        futures_util::stream::iter(stale.map(|(id, key, _)| async move {
            let meta = target
                .store
                .get_to_file(key, &dir.join(format!("{id}.json")))
                .await?;
            Ok((id.to_string(), meta.version))
        }))
        .buffer_unordered(GETS_IN_FLIGHT)
        .collect()
        .await;
    for f in fetched {
        match f {
            Ok((id, version)) => {
                index.insert(id, version);
            }
            // Pruned between the listing and the read.
            Err(StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The largest record `swamp history` reads: a million-object apply's is
/// about 190 MB.
const MAX_RECORD: u64 = 1 << 30;

/// Records larger than this are not read to name who made a plan's
/// changes (a plan names authors; it does not hold a million-change
/// record for it).
const MAX_RECORD_READ: u64 = 16 << 20;

/// The records a plan's remote changes may come from: those a sync's
/// listing showed (`listed`) made no earlier than `since` (seconds since
/// the epoch, as their ids say), read into `dir` when not kept yet;
/// handed to `visit` newest first, head and changes, one at a time.
pub(crate) async fn recent(
    target: &RemoteTarget,
    dir: &Path,
    listed: &[ListedRecord],
    since: u64,
    mut visit: impl FnMut(&RecordHead, Vec<Change>),
) -> Result<(), HistoryReadError> {
    let prefix = Layout::remote_history_prefix(&target.placement);
    let wanted: Vec<(&str, &str, &str)> = listed
        .iter()
        .filter_map(|r| {
            let id = listed_id(&prefix, &r.key)?;
            let at = record::id_time(id)?;
            (at >= since && r.size <= MAX_RECORD_READ).then_some((
                id,
                r.key.as_str(),
                r.version.as_str(),
            ))
        })
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    let mut index = load_index(dir);
    let before = index.clone();
    fetch(target, dir, &wanted, &mut index).await?;
    if index != before {
        save_index(dir, &index).map_err(io_err("write", &dir.join("index.json")))?;
    }
    // Newest first, by the time each says (to the millisecond: two
    // applies of one second have ids in no order).
    let mut heads: Vec<(std::time::SystemTime, RecordHead)> = wanted
        .iter()
        .filter(|(id, _, _)| {
            std::fs::metadata(dir.join(format!("{id}.json")))
                .is_ok_and(|m| m.len() <= MAX_RECORD_READ)
        })
        .filter_map(|(id, _, _)| read_kept_head(dir, id))
        .map(|h| {
            let at = humantime::parse_rfc3339(&h.at).unwrap_or(std::time::UNIX_EPOCH);
            (at, h)
        })
        .collect();
    heads.sort_by(|a, b| (b.0, &b.1.id).cmp(&(a.0, &a.1.id)));
    for (_, head) in heads {
        if let Ok(changes) = changes(dir, &head.id) {
            visit(&head, changes);
        }
    }
    Ok(())
}

/// Keeps a record this clone wrote (`file`, at `version`) as if it had
/// read it: its next `swamp history` need not read it back.
pub(crate) fn keep(
    dir: &Path,
    id: &str,
    version: &str,
    file: tempfile::NamedTempFile,
) -> std::io::Result<()> {
    file.persist(dir.join(format!("{id}.json")))
        .map_err(|e| e.error)?;
    let mut index = load_index(dir);
    index.insert(id.to_string(), version.to_string());
    save_index(dir, &index)
}

/// The heads of the records kept here (read or written before), with no
/// request: what `history --mine` adds to this clone's journals.
pub(crate) fn kept(dir: &Path) -> Vec<RecordHead> {
    load_index(dir)
        .keys()
        .filter(|id| crate::journal::is_id(id))
        .filter_map(|id| read_kept_head(dir, id))
        .collect()
}

/// The head of a kept record, if it is one this version reads (its id the
/// one its key names).
fn read_kept_head(dir: &Path, id: &str) -> Option<RecordHead> {
    let file = std::fs::File::open(dir.join(format!("{id}.json"))).ok()?;
    let head = record::read_head(std::io::BufReader::new(file)).ok()?;
    (head.format <= record::FORMAT && head.id == id).then_some(head)
}

/// The changes of record `id`, kept by a [`read`] before.
pub(crate) fn changes(dir: &Path, id: &str) -> Result<Vec<Change>, HistoryReadError> {
    let path = dir.join(format!("{id}.json"));
    let file = std::fs::File::open(&path).map_err(io_err("read", &path))?;
    record::read_changes(std::io::BufReader::new(file)).map_err(|e| HistoryReadError::Io {
        action: "read",
        path,
        source: e.into(),
    })
}
