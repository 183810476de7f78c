//! The team's history: a record of each apply that changed a namespace's
//! objects, kept in the bucket at `<prefix>/<ns>/.swamp/history/<id>.json`
//! beside the trash copies it made, so every clone can see who changed
//! what (`swamp history`), not only the clone that did.
//!
//! Owns the record's format. A record is written create-only before the
//! apply's first remote change, naming what it will change, and rewritten
//! once (only over the version it wrote) when the apply ends, with the
//! versions its writes made. Its changes are streamed in and out: a
//! million-object push's record is a million changes, never held whole.

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

/// What a record's format is: readers skip a record of a newer one.
pub(crate) const FORMAT: u32 = 1;

/// Everything a record says but its changes: what `swamp history` lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RecordHead {
    pub format: u32,
    /// The apply id (the local journal's, when the apply has one).
    pub id: String,
    /// RFC 3339, UTC, to the millisecond.
    pub at: String,
    /// `user@host`.
    pub by: String,
    /// The clone that ran it (`.swamp/state/clone-id`).
    pub clone: String,
    /// `swamp 0.1.0`.
    pub tool: String,
    /// The command line, as typed.
    pub command: String,
    /// The fingerprint of the plan applied, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// The plan's summary.
    pub summary: String,
    /// The key prefix of the namespace (`<prefix>/<ns>/`): a change's key
    /// less it is the file's path.
    pub prefix: String,
    /// For an undo (or a redo): the apply (or undo) it reverses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<String>,
    /// `--no-undo`: nothing deleted or replaced was kept in the trash.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_undo: bool,
    /// False while the apply runs, or when it was cut short.
    pub finished: bool,
    /// The apply moved the datastore here between two places of one
    /// server: where from, so a teammate's undo can put it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved: Option<super::MovedPlaces>,
}

/// What an apply did to one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ChangeOp {
    Create,
    Replace,
    Delete,
}

/// One key an apply changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Change {
    pub op: ChangeOp,
    /// The object's key in its bucket.
    pub key: String,
    /// Where the key is, when not in the record's namespace (a move's
    /// old place): its URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
    /// The version the apply found (`None`: absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// The version the apply left (`None`: deleted, or not known yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The sha256 of what it wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Where what the key held before is kept (`None`: nothing was there,
    /// or `--no-undo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trash: Option<String>,
}

/// A record's changes alone (its head skipped), as `history show` reads them.
#[derive(Debug, Deserialize)]
pub(crate) struct RecordChanges {
    pub changes: Vec<Change>,
}

/// A record as written: the head, then the changes, serialized from an
/// iterator as they come.
#[derive(Serialize)]
#[serde(bound = "")]
struct Whole<'a, I: Iterator<Item = Change>> {
    #[serde(flatten)]
    head: &'a RecordHead,
    changes: Streamed<I>,
}

/// An iterator serialized as a sequence, once.
struct Streamed<I>(std::cell::Cell<Option<I>>);

impl<I: Iterator<Item = Change>> Serialize for Streamed<I> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.take() {
            Some(changes) => s.collect_seq(changes),
            None => s.collect_seq(std::iter::empty::<Change>()),
        }
    }
}

/// Writes the record of `head` and `changes` to `out`, a change at a time.
pub(crate) fn write(
    mut out: impl Write,
    head: &RecordHead,
    changes: impl Iterator<Item = Change>,
) -> io::Result<()> {
    let whole = Whole {
        head,
        changes: Streamed(std::cell::Cell::new(Some(changes))),
    };
    serde_json::to_writer(&mut out, &whole).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

impl RecordHead {
    /// The journal `swamp undo ID` plans from when the apply is a
    /// teammate's (no journal of it here): what it deleted or replaced
    /// comes back from the bucket's trash (at the key as it left it), what
    /// it created goes to the undo's own trash, all at `placement`. A
    /// move here from another place of the same server (its old place's
    /// deletes) puts that place back, as the clone that ran it would, and
    /// leaves what it wrote here.
    pub(crate) fn journal(
        &self,
        changes: &[Change],
        placement: &std::sync::Arc<crate::config::Placement>,
    ) -> Result<super::Journal, super::UndoError> {
        let moved_from = self.moved_from(placement);
        let mut entries = Vec::with_capacity(changes.len());
        for c in changes {
            // Where the key is, and whether that is the old place.
            let (at, prefix, old) = match (&c.place, &moved_from) {
                // What a move wrote at its new place stays there.
                (None, Some(_)) => continue,
                (None, _) => (placement, self.prefix.clone(), false),
                (Some(place), Some(from)) if *place == crate::layout::Layout::remote_url(from) => {
                    (from, crate::layout::Layout::remote_prefix(from), true)
                }
                (Some(place), _) => {
                    return Err(super::UndoError::Elsewhere {
                        id: self.id.clone(),
                        place: place.clone(),
                    });
                }
            };
            let path = match c
                .key
                .strip_prefix(&prefix)
                .and_then(|p| crate::layout::TierPath::parse(p).ok())
            {
                Some(path) => path,
                // A drained place's own bookkeeping (`.namespace.json`,
                // `.swamp/…`), which the move's undo does not put back.
                None if old && c.key.starts_with(&prefix) => continue,
                None => {
                    return Err(super::UndoError::NotOurs {
                        id: self.id.clone(),
                        key: c.key.clone(),
                    });
                }
            };
            let sha256 = c.sha256.clone().unwrap_or_default();
            entries.push(match c.op {
                ChangeOp::Delete => super::Entry::remote_set_aside(at, &path, None),
                ChangeOp::Replace => super::Entry::remote_set_aside(at, &path, Some(sha256)),
                // What it wrote into an absent key: taken away again.
                ChangeOp::Create => super::Entry {
                    op: super::Op::RemoteRestored,
                    placement: std::sync::Arc::clone(at),
                    path,
                    sha256,
                    size: c.size.unwrap_or(0),
                    written: None,
                    from: None,
                },
            });
        }
        Ok(super::Journal {
            id: self.id.clone(),
            seq: 0,
            at: self.at.clone(),
            holder: self.by.clone(),
            command: self.command.clone(),
            summary: self.summary.clone(),
            finished: self.finished,
            undoes: self.undoes.clone(),
            no_undo: self.no_undo,
            pruned: None,
            moved: moved_from.and(self.moved.clone()),
            made: None,
            entries,
        })
    }

    /// Where the apply moved the datastore to `placement` from, when that
    /// place is of the same server (provider, endpoint and region): a
    /// record is anyone's words, and this clone's credentials go nowhere
    /// its configuration does not already send them.
    fn moved_from(
        &self,
        placement: &crate::config::Placement,
    ) -> Option<std::sync::Arc<crate::config::Placement>> {
        use crate::config::DatastoreConfig::{Gcs, S3};
        let m = self.moved.as_ref().filter(|m| m.to == *placement)?;
        let same_server = match (&m.from.datastore, &placement.datastore) {
            (
                S3 {
                    region: r1,
                    endpoint: e1,
                    ..
                },
                S3 {
                    region: r2,
                    endpoint: e2,
                    ..
                },
            ) => r1 == r2 && e1 == e2,
            (Gcs { endpoint: e1, .. }, Gcs { endpoint: e2, .. }) => e1 == e2,
            _ => false,
        };
        same_server.then(|| std::sync::Arc::new(m.from.clone()))
    }
}

/// A record's head from its bytes (its changes skipped, never held).
pub(crate) fn read_head(r: impl io::Read) -> Result<RecordHead, serde_json::Error> {
    serde_json::from_reader(r)
}

/// A record's changes from its bytes.
pub(crate) fn read_changes(r: impl io::Read) -> Result<Vec<Change>, serde_json::Error> {
    serde_json::from_reader::<_, RecordChanges>(r).map(|c| c.changes)
}

/// The time an apply id was made (`20261201T123000Z-3fa29c` →
/// 2026-12-01 12:30:00 UTC), in seconds since the epoch: what retention
/// ages a record by without reading it.
pub(crate) fn id_time(id: &str) -> Option<u64> {
    let stamp = id.split('-').next()?;
    if stamp.len() != 16 || !stamp.ends_with('Z') {
        return None;
    }
    let rfc = format!(
        "{}-{}-{}T{}:{}:{}Z",
        stamp.get(0..4)?,
        stamp.get(4..6)?,
        stamp.get(6..8)?,
        stamp.get(9..11)?,
        stamp.get(11..13)?,
        stamp.get(13..15)?
    );
    humantime::parse_rfc3339(&rfc)
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> RecordHead {
        RecordHead {
            format: FORMAT,
            id: "20261201T123000Z-3fa29c".into(),
            at: "2026-12-01T12:30:00Z".into(),
            by: "bob@ci-7".into(),
            clone: "c1".into(),
            tool: "swamp 0.1.0".into(),
            command: "swamp datastore sync -y".into(),
            fingerprint: None,
            summary: "1 to delete from the remote".into(),
            prefix: "p/lab/".into(),
            undoes: None,
            no_undo: false,
            finished: true,
            moved: None,
        }
    }

    #[test]
    fn a_record_is_read_back_head_and_changes_apart() {
        let change = Change {
            op: ChangeOp::Delete,
            key: "p/lab/outputs/a".into(),
            place: None,
            before: Some("etag1".into()),
            after: None,
            sha256: None,
            size: None,
            trash: Some("p/lab/.swamp/trash/x/outputs/a".into()),
        };
        let mut out = Vec::new();
        write(&mut out, &head(), vec![change.clone()].into_iter()).unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("{\"format\":1,\"id\":"), "{text}");
        assert_eq!(read_head(&out[..]).unwrap(), head());
        assert_eq!(read_changes(&out[..]).unwrap(), vec![change]);
    }

    #[test]
    fn an_apply_id_tells_its_time() {
        assert_eq!(id_time("20261201T123000Z-3fa29c"), Some(1_796_128_200));
        assert_eq!(id_time("../x"), None);
        assert_eq!(id_time("2026120-1"), None);
    }
}
