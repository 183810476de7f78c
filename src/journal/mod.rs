//! The journal and the trash that make every apply undoable: what an
//! apply removes is set aside, never destroyed.
//!
//! Owns the apply id, the journal each destructive apply writes before its
//! first destructive action (`.swamp/state/trash/<id>.json`: what it set
//! aside or restored, with hashes), and the trash itself: set-aside bytes
//! wait on the same filesystem as the file they were (see
//! [`Layout::trash_path`]), so setting aside is one rename and restoring
//! is a link. `swamp history` lists the journals; `swamp undo` plans from
//! one (see `plan::undo`). Retention (`[undo]`) prunes a journal's trash
//! through planned actions (`plan::retention`, `apply::prune`) and marks
//! the journal `pruned`; `--no-undo` runs are journaled with nothing kept.

pub(crate) mod made;
pub(crate) mod record;
mod scan;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::Placement;
use crate::fsutil;
use crate::layout::{Layout, TierPath};

/// What one journal entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Op {
    /// The file was moved into this apply's trash (a delete, a `data rm`
    /// or `data gc`): undo restores it.
    SetAside,
    /// The file was put back from another apply's trash: undo sets it
    /// aside again.
    Restored,
    /// The remote object at `path` was copied into this apply's remote
    /// trash (`<prefix>/<ns>/.swamp/trash/<id>/…`) before the apply deleted
    /// or replaced it: undo copies it back.
    RemoteSetAside,
    /// The remote object was put back from another apply's remote trash.
    RemoteRestored,
    /// The apply downloaded the file into an absent path: undo sets it
    /// aside. Kept in the journal's `.made` file (see [`made`]), as are
    /// the two below.
    Created,
    /// The apply uploaded the object into an absent key: undo sets it
    /// aside in the remote trash.
    RemoteCreated,
    /// The apply moved the file here from `from`: undo moves it back.
    Moved,
}

impl Op {
    /// Whether the entry is of a remote object (else of a local file).
    pub(crate) fn is_remote(self) -> bool {
        matches!(
            self,
            Op::RemoteSetAside | Op::RemoteRestored | Op::RemoteCreated
        )
    }
}

/// One file an apply set aside or restored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub op: Op,
    /// Shared by the entries of one place (a move's hundred thousand old
    /// objects held a copy of its bucket, prefix and endpoint each).
    pub placement: Arc<Placement>,
    pub path: TierPath,
    pub sha256: String,
    pub size: u64,
    /// For a replaced remote object: the sha256 the apply wrote over it
    /// (undo restores only while that is still there). `None`: a delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
    /// For [`Op::Moved`]: the place the file was moved from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Arc<Placement>>,
}

impl Entry {
    /// A remote object kept in the apply's remote trash before it was
    /// deleted (`written: None`) or replaced by bytes with sha256 `written`.
    /// What the trash copy holds is read back from it by `undo`, so no
    /// sha256 or size is recorded.
    pub(crate) fn remote_set_aside(
        placement: &Arc<Placement>,
        path: &TierPath,
        written: Option<String>,
    ) -> Entry {
        Entry {
            op: Op::RemoteSetAside,
            placement: Arc::clone(placement),
            path: path.clone(),
            sha256: String::new(),
            size: 0,
            written,
            from: None,
        }
    }
}

/// The record of one apply, written before its first destructive action
/// and again (with `finished`) when it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Journal {
    pub id: String,
    /// Order among this repository's applies (ids made within the same
    /// second do not sort by time).
    pub seq: u64,
    /// RFC 3339, UTC.
    pub at: String,
    /// `user@host`.
    pub holder: String,
    /// The command line, as typed.
    pub command: String,
    pub summary: String,
    /// False while the apply runs, or when it was cut short.
    pub finished: bool,
    /// For an undo: the apply it reverses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<String>,
    /// `--no-undo`: nothing was set aside; deletes were final.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_undo: bool,
    /// When retention pruned this apply's trash (RFC 3339): it can no
    /// longer be undone, but stays in the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pruned: Option<String>,
    /// The apply moved the datastore: `.swamp.toml` went from one place
    /// to the other, and the old place's objects (its entries) went to
    /// its trash. Undoing it moves `.swamp.toml` back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved: Option<MovedPlaces>,
    /// What the apply made that holds no trash (created, moved), kept in
    /// the `.made` file beside the journal and read only to undo it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub made: Option<made::MadeHead>,
    pub entries: Vec<Entry>,
}

/// What [`Journal::head`] reads of a journal.
#[derive(Debug, Deserialize)]
pub(crate) struct JournalHead {
    pub seq: u64,
    #[serde(default)]
    pub undoes: Option<String>,
    #[serde(default)]
    pub pruned: Option<String>,
}

/// The two places of a move, as a journal records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovedPlaces {
    /// The place the datastore left.
    pub from: Placement,
    /// The place `.swamp.toml` named afterwards.
    pub to: Placement,
    /// Objects the move copied into `to`. Its undo leaves them there (the
    /// `moved` marker sends that place's clones back, and a redo moves
    /// forward to them again), and says so.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub copied: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Journal {
    /// The place this apply moved the datastore from, when it moved it to
    /// `target`: its entries there are the old objects it set aside.
    pub(crate) fn moved_from(&self, target: &Placement) -> Option<&Placement> {
        self.moved
            .as_ref()
            .filter(|m| &m.to == target)
            .map(|m| &m.from)
    }
}

impl MovedPlaces {
    /// The same move, the other way.
    pub fn reversed(&self) -> MovedPlaces {
        MovedPlaces {
            from: self.to.clone(),
            to: self.from.clone(),
            copied: self.copied,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    #[error("cannot {action} {}: {source}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("the journal {} is unreadable ({message}); nothing was changed", .path.display())]
    Malformed { path: PathBuf, message: String },
    #[error("no apply `{id}` in this repository's history")]
    NoSuchApply { id: String },
    #[error(
        "apply {id} changed objects at {place} too (a move); undo it from the clone that ran it"
    )]
    Elsewhere { id: String, place: String },
    #[error("apply {id}'s record names `{key}`, which is not one of the namespace's files")]
    NotOurs { id: String, key: String },
    #[error("nothing to undo: this repository has no apply in its history yet")]
    NoHistory,
    #[error("nothing left to undo: every apply in the history is undone already")]
    AllUndone,
    #[error("nothing to redo: no undo since the last apply")]
    NothingToRedo,
    #[error(
        "apply {id} ran with --no-undo: what it deleted or replaced was not kept, so it cannot be undone"
    )]
    NotKept { id: String },
    #[error(
        "apply {id} can no longer be undone: its trash was pruned at {at} (`[undo] keep_days`, `max_bytes`)"
    )]
    Pruned { id: String, at: String },
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> UndoError + 'a {
    move |source| UndoError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// A new apply id: the time to the second, then six random hex digits
/// (`20261201T123000Z-3fa29c`), safe as a file and key name.
pub(crate) fn new_id() -> String {
    let now: String = crate::clock::now_rfc3339()
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    format!("{now}-{:06x}", fastrand::u32(..0x100_0000))
}

/// Whether `id` looks like an apply id (never a path).
pub(crate) fn is_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
        && !id.starts_with('.')
}

impl Journal {
    /// A journal for a new apply of `command`, numbered after every other.
    pub(crate) fn begin(
        layout: &Layout,
        command: &str,
        summary: String,
        entries: Vec<Entry>,
    ) -> Journal {
        let seq = Journal::max_seq(layout) + 1;
        Journal {
            id: new_id(),
            seq,
            at: crate::clock::now_rfc3339(),
            holder: crate::lock::who_am_i(),
            command: command.to_string(),
            summary,
            finished: false,
            undoes: None,
            no_undo: false,
            pruned: None,
            moved: None,
            made: None,
            entries,
        }
    }

    /// The journal with what its apply made (its `.made` file) among its
    /// entries: everything an undo reverses.
    pub(crate) fn with_made(mut self, layout: &Layout) -> Result<Journal, UndoError> {
        if let Some(head) = &self.made {
            let made = made::read(layout, &self.id, head)?;
            self.entries.extend(made);
        }
        Ok(self)
    }

    /// Writes the journal atomically, streamed to the file (a move's
    /// journal of 100,000 entries is tens of megabytes of JSON).
    pub(crate) fn save(&self, layout: &Layout) -> Result<(), UndoError> {
        let path = layout.journal_path(&self.id);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io_err("create", dir))?;
        }
        fsutil::atomic_write_with(&path, |w| {
            serde_json::to_writer_pretty(&mut *w, self).map_err(io::Error::other)?;
            w.write_all(b"\n")
        })
        .map_err(io_err("write", &path))
    }

    pub(crate) fn load(layout: &Layout, id: &str) -> Result<Journal, UndoError> {
        let (path, file) = Journal::open(layout, id)?;
        // Read as a stream: a move's journal is tens of megabytes of JSON,
        // which retention (every sync) need not hold beside the entries.
        let mut journal: Journal =
            serde_json::from_reader(io::BufReader::new(file)).map_err(|e| malformed(&path, e))?;
        journal.share_placements();
        Ok(journal)
    }

    /// Journal `id`'s file, open, and its path.
    fn open(layout: &Layout, id: &str) -> Result<(PathBuf, std::fs::File), UndoError> {
        if !is_id(id) {
            return Err(UndoError::NoSuchApply { id: id.to_string() });
        }
        let path = layout.journal_path(id);
        match std::fs::File::open(&path) {
            Ok(f) => Ok((path, f)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(UndoError::NoSuchApply { id: id.to_string() })
            }
            Err(e) => Err(io_err("read", &path)(e)),
        }
    }

    /// One placement for each run of entries of the same place (each
    /// entry's is read as its own).
    fn share_placements(&mut self) {
        let mut last: Option<Arc<Placement>> = None;
        for e in &mut self.entries {
            match &last {
                Some(l) if **l == *e.placement => e.placement = Arc::clone(l),
                _ => last = Some(Arc::clone(&e.placement)),
            }
        }
    }

    /// The highest sequence number among this repository's journals (0:
    /// none), each read for its number alone: a move's journal of a
    /// million entries is parsed past, never held, on every later apply.
    fn max_seq(layout: &Layout) -> u64 {
        let Ok(dir) = std::fs::read_dir(layout.trash_dir()) else {
            return 0;
        };
        dir.filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                Journal::head(layout, name.strip_suffix(".json")?)
            })
            .map(|h| h.seq)
            .max()
            .unwrap_or(0)
    }

    /// Journal `id`'s number and what it undoes, read for those alone (its
    /// entries parsed past, never held); `None` when it is not there or
    /// not readable.
    pub(crate) fn head(layout: &Layout, id: &str) -> Option<JournalHead> {
        if !is_id(id) {
            return None;
        }
        let file = std::fs::File::open(layout.journal_path(id)).ok()?;
        serde_json::from_reader(io::BufReader::new(file)).ok()
    }

    /// Every journal of this repository, oldest first.
    pub(crate) fn all(layout: &Layout) -> Result<Vec<Journal>, UndoError> {
        let mut out = Vec::new();
        Journal::each(layout, |j| out.push(j))?;
        out.sort_by(|a, b| (a.seq, &a.id).cmp(&(b.seq, &b.id)));
        Ok(out)
    }

    /// The ids of this repository's journals, in no order.
    pub(crate) fn ids(layout: &Layout) -> Result<Vec<String>, UndoError> {
        let dir = layout.trash_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("read", &dir)(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_err("read", &dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(id) = name.strip_suffix(".json").filter(|id| is_id(id)) {
                out.push(id.to_string());
            }
        }
        Ok(out)
    }

    /// Hands each journal of this repository to `visit`, one at a time
    /// and in no order: what reads only a little of each (retention) need
    /// not hold them all (a move's journal has an entry per object).
    pub(crate) fn each(layout: &Layout, mut visit: impl FnMut(Journal)) -> Result<(), UndoError> {
        for id in Journal::ids(layout)? {
            visit(Journal::load(layout, &id)?);
        }
        Ok(())
    }

    /// Bytes this apply set aside.
    pub(crate) fn set_aside_bytes(&self) -> u64 {
        self.entries
            .iter()
            .filter(|e| e.op == Op::SetAside)
            .map(|e| e.size)
            .sum()
    }
}

/// A journal's file that does not read as one (or cannot be read).
fn malformed(path: &Path, e: serde_json::Error) -> UndoError {
    match e.classify() {
        serde_json::error::Category::Io => io_err("read", path)(e.into()),
        _ => UndoError::Malformed {
            path: path.to_path_buf(),
            message: e.to_string(),
        },
    }
}

/// This process's command line, quoted for a shell where needed: what a
/// journal records as the apply's command (and what an error's hint says
/// to run again).
pub(crate) fn command_line() -> String {
    let mut out = String::from("swamp");
    for arg in std::env::args().skip(1) {
        out.push(' ');
        let plain = !arg.is_empty()
            && arg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+".contains(c));
        if plain {
            out.push_str(&arg);
        } else {
            out.push('\'');
            out.push_str(&arg.replace('\'', "'\\''"));
            out.push('\'');
        }
    }
    out
}

/// The trash of one running apply, for one placement: what its deletes
/// set aside into.
#[derive(Debug, Clone)]
pub(crate) struct Trash<'a> {
    pub layout: &'a Layout,
    pub id: &'a str,
    pub placement: Placement,
}

impl Trash<'_> {
    pub(crate) fn set_aside(&self, path: &TierPath) -> Result<(), UndoError> {
        set_aside(self.layout, self.id, &self.placement, path)
    }
}

/// Moves `path` of `placement` into apply `id`'s trash: one rename on the
/// same filesystem, both directories synced so the move survives a crash.
/// A file already gone (an interrupted run set it aside) is not an error.
pub(crate) fn set_aside(
    layout: &Layout,
    id: &str,
    placement: &Placement,
    path: &TierPath,
) -> Result<(), UndoError> {
    let src = layout.file_path(placement, path);
    let dst = layout.trash_path(placement, path, id);
    let dst_dir = dst.parent().expect("a trash path has a parent");
    std::fs::create_dir_all(dst_dir).map_err(io_err("create", dst_dir))?;
    match std::fs::rename(&src, &dst) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("set aside", &src)(e)),
    }
    fsutil::sync_dir(dst_dir).map_err(io_err("sync", dst_dir))?;
    if let Some(dir) = src.parent() {
        fsutil::sync_dir(dir).map_err(io_err("sync", dir))?;
    }
    Ok(())
}

/// Where a history (journals in order) stands for `undo` and `redo`, as
/// jj walks its operation log: each bare `undo` reverses the newest
/// journal still in force (an apply, or a redo that re-applied one), so a
/// second undo walks one apply further back; `redo` reverses the newest
/// undo not redone yet, until a new apply starts a new line. A journal cut
/// short is no step of the walk.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Walk {
    /// Undone applies: the apply's id → the undo that reversed it.
    pub undone: std::collections::BTreeMap<String, String>,
    /// Journals in force (applies, and redos standing for the apply they
    /// re-applied), oldest first.
    done: Vec<String>,
    /// Undos a `redo` can reverse, oldest first.
    redoable: Vec<String>,
}

/// What a journal was, in the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Apply,
    Undo,
    Redo,
}

impl Walk {
    pub(crate) fn of(journals: &[Journal]) -> Walk {
        Walk::of_steps(
            journals
                .iter()
                .filter(|j| j.finished)
                .map(|j| (j.id.as_str(), j.undoes.as_deref())),
        )
    }

    /// The walk of finished applies in order, each an id and what it
    /// undoes (a journal's, or a record's in the team's history).
    pub(crate) fn of_steps<'a>(
        steps: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Walk {
        use std::collections::HashMap;
        // Each journal's kind, and the apply it is (or acts on).
        let mut seen: HashMap<&str, (Step, &str)> = HashMap::new();
        let mut walk = Walk::default();
        for (id, undoes) in steps {
            let Some(target) = undoes else {
                seen.insert(id, (Step::Apply, id));
                walk.done.push(id.to_string());
                // New work: what was undone before it stays undone.
                walk.redoable.clear();
                continue;
            };
            let (target_step, apply) = seen.get(target).copied().unwrap_or((Step::Apply, target));
            if target_step == Step::Undo {
                seen.insert(id, (Step::Redo, apply));
                walk.redoable.retain(|u| u != target);
                walk.undone.remove(apply);
                walk.done.push(id.to_string());
            } else {
                seen.insert(id, (Step::Undo, apply));
                walk.done.retain(|d| d != target);
                walk.undone.insert(apply.to_string(), id.to_string());
                walk.redoable.push(id.to_string());
            }
        }
        walk
    }

    /// What a bare `undo` reverses: the newest journal still in force.
    pub(crate) fn next_undo(&self) -> Option<&str> {
        self.done.last().map(String::as_str)
    }

    /// What `redo` reverses: the newest undo not redone yet.
    pub(crate) fn next_redo(&self) -> Option<&str> {
        self.redoable.last().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_ids_are_names_not_paths() {
        let id = new_id();
        assert!(is_id(&id), "{id}");
        assert!(id.len() > 16 && id.contains('T'), "{id}");
        for bad in ["", "../x", "a/b", ".hidden", "x y", &"a".repeat(65)] {
            assert!(!is_id(bad), "{bad:?}");
        }
    }

    fn journal(id: &str, undoes: Option<&str>) -> Journal {
        Journal {
            id: id.into(),
            seq: 0,
            at: String::new(),
            holder: String::new(),
            command: String::new(),
            summary: String::new(),
            finished: true,
            undoes: undoes.map(Into::into),
            no_undo: false,
            pruned: None,
            moved: None,
            made: None,
            entries: Vec::new(),
        }
    }

    #[test]
    fn each_new_journal_is_numbered_after_every_other_one_read_for_its_number_alone() {
        let t = crate::layout::test_support::TempRepo::new(None);
        let first = Journal::begin(&t.layout, "swamp a", String::new(), Vec::new());
        assert_eq!(first.seq, 1);
        first.save(&t.layout).unwrap();
        // Not a journal's name, and a journal unreadable: skipped (a
        // stray file made every later apply number 1 before).
        let trash = t.layout.trash_dir();
        std::fs::write(trash.join("not a journal.json"), "{\"seq\": 99}").unwrap();
        std::fs::write(trash.join("20261201T000000Z-000bad.json"), "{").unwrap();
        let mut second = Journal::begin(&t.layout, "swamp b", String::new(), Vec::new());
        assert_eq!(second.seq, 2);
        second.seq = 7;
        second.save(&t.layout).unwrap();
        let third = Journal::begin(&t.layout, "swamp c", String::new(), Vec::new());
        assert_eq!(third.seq, 8);
    }

    #[test]
    fn undo_walks_back_apply_by_apply_and_redo_walks_forward_until_new_work() {
        let mut h = vec![journal("a1", None), journal("a2", None)];
        let next = |h: &[Journal]| Walk::of(h).next_undo().map(String::from);
        let redo = |h: &[Journal]| Walk::of(h).next_redo().map(String::from);
        assert_eq!(next(&h).as_deref(), Some("a2"));
        h.push(journal("u1", Some("a2")));
        assert_eq!(next(&h).as_deref(), Some("a1"), "the undo is no subject");
        assert_eq!(redo(&h).as_deref(), Some("u1"));
        h.push(journal("u2", Some("a1")));
        assert_eq!(next(&h), None, "everything undone");
        assert_eq!(redo(&h).as_deref(), Some("u2"), "the newest undo first");
        h.push(journal("r1", Some("u2")));
        assert_eq!(
            next(&h).as_deref(),
            Some("r1"),
            "a1 is in force again through the redo, whose trash holds what it set aside"
        );
        assert_eq!(redo(&h).as_deref(), Some("u1"));
        h.push(journal("u3", Some("r1")));
        assert_eq!(
            redo(&h).as_deref(),
            Some("u3"),
            "an undo of a redo is an undo"
        );
        let walk = Walk::of(&h);
        assert_eq!(walk.undone.get("a1").map(String::as_str), Some("u3"));
        assert_eq!(walk.undone.get("a2").map(String::as_str), Some("u1"));
        h.push(journal("a3", None));
        assert_eq!(redo(&h), None, "new work ends the redo line");
        assert_eq!(next(&h).as_deref(), Some("a3"));
        // An undo cut short undid nothing for certain: no step of the walk.
        let mut cut = journal("u4", Some("a3"));
        cut.finished = false;
        h.push(cut);
        assert_eq!(next(&h).as_deref(), Some("a3"));
    }
}
