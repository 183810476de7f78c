//! The plan of `swamp undo ID`: put back what apply `ID` set aside, set
//! aside again what it restored. Pure: it reads only the journal and the
//! observation of each entry's file and trash copy (`state::journaled`).
//!
//! A file changed since the apply (other bytes, or something that is not a
//! file) is a conflict, never overwritten; a file already as the undo would
//! leave it needs nothing, so an interrupted undo converges when planned
//! again.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::Placement;
use crate::journal::{Entry, Journal, MovedPlaces, Op};
use crate::layout::TierPath;
use crate::state::journaled::{EntryState, Found, UndoObserved};

/// One step of an undo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum UndoAction {
    Restore(Restore),
    SetAside(SetAside),
    RestoreRemote(RestoreRemote),
    SetAsideRemote(SetAsideRemote),
    MoveBack(MoveBack),
}

/// Link the file back from apply `from`'s trash. Precondition: the
/// trash copy hashes to `sha256` and the destination is absent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restore {
    pub placement: Arc<Placement>,
    pub path: TierPath,
    pub from: String,
    pub sha256: String,
    pub size: u64,
}

/// Move the file into this undo's trash. Precondition: it still
/// hashes to `sha256`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAside {
    pub placement: Arc<Placement>,
    pub path: TierPath,
    pub sha256: String,
    pub size: u64,
    /// The apply undone downloaded it: this clone's sync base forgets it
    /// too, so the next pull brings it again instead of the next push
    /// deleting it from the bucket.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub made: bool,
}

/// Move a file the apply moved back where it came from. Precondition:
/// it still hashes to `sha256`, and nothing is at `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveBack {
    /// Where it is now.
    pub placement: Arc<Placement>,
    /// Where the apply moved it from.
    pub to: Arc<Placement>,
    pub path: TierPath,
    pub sha256: String,
    pub size: u64,
}

/// Copy the remote object back from apply `from`'s remote trash.
/// Precondition: the key is absent (`expect: None`) or still at the
/// version the apply wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreRemote {
    pub placement: Arc<Placement>,
    pub path: TierPath,
    pub from: String,
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
}

/// Take away a remote object an undo restored into an absent key: one
/// server-side copy into this undo's remote trash, then a delete.
/// Precondition: the object is still at `version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAsideRemote {
    pub placement: Arc<Placement>,
    pub path: TierPath,
    pub sha256: String,
    pub version: String,
    /// The apply undone uploaded it: this clone's sync base forgets it
    /// too, so its cache copy is one to push again, not one deleted in
    /// the bucket (which the next pull would follow).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub made: bool,
}

impl UndoAction {
    pub fn kind(&self) -> &'static str {
        match self {
            UndoAction::Restore(_) => "restore",
            UndoAction::SetAside(_) => "set-aside",
            UndoAction::RestoreRemote(_) => "restore-remote",
            UndoAction::SetAsideRemote(_) => "set-aside-remote",
            UndoAction::MoveBack(_) => "move-back",
        }
    }

    pub fn path(&self) -> &TierPath {
        match self {
            UndoAction::Restore(Restore { path, .. })
            | UndoAction::SetAside(SetAside { path, .. })
            | UndoAction::RestoreRemote(RestoreRemote { path, .. })
            | UndoAction::SetAsideRemote(SetAsideRemote { path, .. })
            | UndoAction::MoveBack(MoveBack { path, .. }) => path,
        }
    }
}

/// Why an entry cannot be undone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum UndoConflict {
    /// The file was changed (or replaced by something else) since the
    /// apply: undoing would overwrite that.
    Changed {
        path: TierPath,
        expected: String,
        found: String,
    },
    /// The trash copy is gone (pruned or removed by hand), and the file is
    /// not back either.
    TrashGone { path: TierPath },
    /// The trash copy no longer hashes to what was set aside.
    TrashChanged { path: TierPath, found: String },
    /// Not reversible (yet): named with why.
    NotUndoable { path: TierPath, reason: String },
}

impl UndoConflict {
    pub fn path(&self) -> &TierPath {
        match self {
            UndoConflict::Changed { path, .. }
            | UndoConflict::TrashGone { path }
            | UndoConflict::TrashChanged { path, .. }
            | UndoConflict::NotUndoable { path, .. } => path,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoPlan {
    /// The apply this plan reverses.
    pub undoes: String,
    pub command: String,
    pub actions: Vec<UndoAction>,
    pub conflicts: Vec<UndoConflict>,
    /// The apply moved the datastore and this clone's cache serves both
    /// places: once its objects are back, `.swamp.toml` names `to` again
    /// and a `moved` marker at `from` points there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moves_back: Option<MovedPlaces>,
    /// The apply reversed is itself an undo (of this apply): this plan
    /// redoes that one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redoes: Option<String>,
    /// The apply reversed is a redo (of this apply): this plan undoes that
    /// one again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub again: Option<String>,
}

impl UndoPlan {
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty() && self.conflicts.is_empty() && self.moves_back.is_none()
    }
}

fn describe(found: &Found) -> String {
    match found {
        Found::Absent => "nothing".into(),
        Found::File { sha256 } => format!("a file with sha256 {sha256}"),
        Found::Other(what) => format!("a {what}"),
        Found::Object { sha256, .. } => format!("an object with sha256 {sha256}"),
    }
}

/// The plan that reverses `journal`, given what is there now.
pub(crate) fn compose(journal: &Journal, observed: &UndoObserved) -> UndoPlan {
    let mut plan = UndoPlan {
        undoes: journal.id.clone(),
        command: journal.command.clone(),
        actions: Vec::new(),
        conflicts: Vec::new(),
        moves_back: None,
        redoes: journal.undoes.clone(),
        again: None,
    };
    // Restored entries first: what they set aside makes room for what the
    // others restore at the same path.
    let pairs: Vec<_> = journal.entries.iter().zip(&observed.entries).collect();
    let (first, rest): (Vec<_>, Vec<_>) =
        pairs.into_iter().partition(|(e, _)| e.op == Op::Restored);
    let mut cleared = BTreeSet::new();
    for (entry, seen) in first.into_iter().chain(rest) {
        match entry.op {
            Op::SetAside => set_aside(&mut plan, &journal.id, entry, seen, &cleared),
            Op::RemoteSetAside => remote_set_aside(&mut plan, &journal.id, entry, seen),
            Op::RemoteRestored => remote_restored(&mut plan, entry, seen),
            Op::Restored => restored(&mut plan, entry, seen, &mut cleared),
            Op::Created | Op::RemoteCreated => made(&mut plan, entry, seen),
            Op::Moved => moved(&mut plan, entry, seen),
        }
    }
    plan
}

/// Whether the file is what the entry says the apply left there.
fn is_ours(entry: &Entry, seen: &EntryState) -> bool {
    matches!(&seen.file, Found::File { sha256 } if *sha256 == entry.sha256)
}

/// A file the apply set aside: restored from its trash, unless something
/// else is there now.
fn set_aside(
    plan: &mut UndoPlan,
    id: &str,
    entry: &Entry,
    seen: &EntryState,
    cleared: &BTreeSet<TierPath>,
) {
    let path = entry.path.clone();
    let is_ours = is_ours(entry, seen);
    // Cleared first: the bytes the apply wrote over the file (a
    // replaced download), or a restore this plan sets aside.
    let replaced = matches!((&entry.written, &seen.file),
        (Some(w), Found::File { sha256 }) if sha256 == w);
    let file = if replaced || cleared.contains(&path) {
        &Found::Absent
    } else {
        &seen.file
    };
    match (file, &seen.trash) {
        // Already back (an interrupted undo, or put back by hand).
        _ if is_ours => {}
        (Found::Absent, Found::File { sha256 }) if *sha256 == entry.sha256 => {
            if let (true, Found::File { sha256: now }) = (replaced, &seen.file) {
                plan.actions.push(UndoAction::SetAside(SetAside {
                    placement: entry.placement.clone(),
                    path: path.clone(),
                    sha256: now.clone(),
                    size: entry.size,
                    made: false,
                }));
            }
            plan.actions.push(UndoAction::Restore(Restore {
                placement: entry.placement.clone(),
                path,
                from: id.to_string(),
                sha256: entry.sha256.clone(),
                size: entry.size,
            }))
        }
        (Found::Absent, Found::Absent) => plan.conflicts.push(UndoConflict::TrashGone { path }),
        (Found::Absent, found) => plan.conflicts.push(UndoConflict::TrashChanged {
            path,
            found: describe(found),
        }),
        (found, _) => plan.conflicts.push(UndoConflict::Changed {
            path,
            expected: match &entry.written {
                None => "nothing (the file was removed)".into(),
                Some(w) => format!("what the apply wrote (sha256 {w})"),
            },
            found: describe(found),
        }),
    }
}

/// An object the apply deleted or replaced: restored from the remote
/// trash, at the key as the apply left it.
fn remote_set_aside(plan: &mut UndoPlan, id: &str, entry: &Entry, seen: &EntryState) {
    let path = entry.path.clone();
    let Found::Object { sha256: kept, .. } = &seen.trash else {
        plan.conflicts.push(UndoConflict::TrashGone { path });
        return;
    };
    match (&entry.written, &seen.file) {
        // Already back.
        (_, Found::Object { sha256, .. }) if sha256 == kept => {}
        (None, Found::Absent) => plan.actions.push(UndoAction::RestoreRemote(RestoreRemote {
            placement: entry.placement.clone(),
            path,
            from: id.to_string(),
            sha256: kept.clone(),
            expect: None,
        })),
        (Some(written), Found::Object { sha256, version }) if sha256 == written => {
            plan.actions.push(UndoAction::RestoreRemote(RestoreRemote {
                placement: entry.placement.clone(),
                path,
                from: id.to_string(),
                sha256: kept.clone(),
                expect: Some(version.clone()),
            }))
        }
        (written, found) => plan.conflicts.push(UndoConflict::Changed {
            path,
            expected: match written {
                None => "nothing (the apply deleted it)".into(),
                Some(w) => format!("what the apply wrote (sha256 {w})"),
            },
            found: describe(found),
        }),
    }
}

/// An undo restored the object into an absent key (a restore over an
/// object is journaled as a set-aside of what it replaced): undone by
/// taking it away again, kept in the trash.
fn remote_restored(plan: &mut UndoPlan, entry: &Entry, seen: &EntryState) {
    let path = entry.path.clone();
    match &seen.file {
        Found::Object { sha256, version } if *sha256 == entry.sha256 => {
            plan.actions
                .push(UndoAction::SetAsideRemote(SetAsideRemote {
                    placement: entry.placement.clone(),
                    path,
                    sha256: sha256.clone(),
                    version: version.clone(),
                    made: false,
                }))
        }
        Found::Absent => {}
        found => plan.conflicts.push(UndoConflict::Changed {
            path,
            expected: format!("the restored object (sha256 {})", entry.sha256),
            found: describe(found),
        }),
    }
}

/// A file an undo restored: set aside again (making room for what others
/// restore at its path).
fn restored(
    plan: &mut UndoPlan,
    entry: &Entry,
    seen: &EntryState,
    cleared: &mut BTreeSet<TierPath>,
) {
    let path = entry.path.clone();
    let is_ours = is_ours(entry, seen);
    match &seen.file {
        _ if is_ours => {
            cleared.insert(path.clone());
            plan.actions.push(UndoAction::SetAside(SetAside {
                placement: entry.placement.clone(),
                path,
                sha256: entry.sha256.clone(),
                size: entry.size,
                made: false,
            }))
        }
        Found::Absent => {}
        found => plan.conflicts.push(UndoConflict::Changed {
            path,
            expected: format!("the restored file (sha256 {})", entry.sha256),
            found: describe(found),
        }),
    }
}

/// A file the apply downloaded into an absent path, or an object it
/// uploaded into an absent key: set aside (into the trash, the remote
/// trash at the version there now), and the sync base forgets it; unless
/// it changed since. A file whose sha256 the plan did not know (another
/// tool's object) is taken as it is.
fn made(plan: &mut UndoPlan, entry: &Entry, seen: &EntryState) {
    let placement = entry.placement.clone();
    let path = entry.path.clone();
    let ours = |sha256: &String| entry.sha256.is_empty() || *sha256 == entry.sha256;
    match (entry.op, &seen.file) {
        (Op::Created, Found::File { sha256 }) if ours(sha256) => {
            plan.actions.push(UndoAction::SetAside(SetAside {
                placement,
                path,
                sha256: sha256.clone(),
                size: entry.size,
                made: true,
            }))
        }
        (Op::RemoteCreated, Found::Object { sha256, version }) if ours(sha256) => plan
            .actions
            .push(UndoAction::SetAsideRemote(SetAsideRemote {
                placement,
                path,
                sha256: sha256.clone(),
                version: version.clone(),
                made: true,
            })),
        // Never landed, or set aside already.
        (_, Found::Absent) => {}
        (op, found) => plan.conflicts.push(UndoConflict::Changed {
            path,
            expected: format!(
                "the {} the apply {} (sha256 {})",
                if op == Op::Created { "file" } else { "object" },
                if op == Op::Created {
                    "downloaded"
                } else {
                    "uploaded"
                },
                entry.sha256
            ),
            found: describe(found),
        }),
    }
}

/// A file the apply moved here: moved back, while it is unchanged and
/// nothing took its old place (`seen.trash` is what is there).
fn moved(plan: &mut UndoPlan, entry: &Entry, seen: &EntryState) {
    let Some(to) = &entry.from else {
        plan.conflicts.push(UndoConflict::NotUndoable {
            path: entry.path.clone(),
            reason: "the journal names no place it was moved from".into(),
        });
        return;
    };
    let ours = |f: &Found| matches!(f, Found::File { sha256 } if *sha256 == entry.sha256);
    match (&seen.file, &seen.trash) {
        // Already back (an interrupted undo).
        (Found::Absent, back) if ours(back) => {}
        (here, Found::Absent) if ours(here) => plan.actions.push(UndoAction::MoveBack(MoveBack {
            placement: entry.placement.clone(),
            to: to.clone(),
            path: entry.path.clone(),
            sha256: entry.sha256.clone(),
            size: entry.size,
        })),
        (here, Found::Absent) => plan.conflicts.push(UndoConflict::Changed {
            path: entry.path.clone(),
            expected: format!("the file the apply moved here (sha256 {})", entry.sha256),
            found: describe(here),
        }),
        (_, there) => plan.conflicts.push(UndoConflict::Changed {
            path: entry.path.clone(),
            expected: "nothing where the apply moved it from".into(),
            found: describe(there),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Entry;
    use crate::state::journaled::EntryState;

    fn entry(op: Op, path: &str, sha: &str) -> Entry {
        Entry {
            op,
            placement: Arc::new(Placement {
                datastore: crate::config::DatastoreConfig::Local,
                namespace: None,
            }),
            path: TierPath::parse(path).unwrap(),
            sha256: sha.into(),
            size: 1,
            written: None,
            from: None,
        }
    }

    fn journal(entries: Vec<Entry>) -> Journal {
        Journal {
            id: "20261201T000000Z-000001".into(),
            seq: 1,
            at: "2026-12-01T00:00:00Z".into(),
            holder: "u@h".into(),
            command: "swamp data gc --keep 1".into(),
            summary: String::new(),
            finished: true,
            undoes: None,
            no_undo: false,
            pruned: None,
            moved: None,
            made: None,
            entries,
        }
    }

    fn file(sha: &str) -> Found {
        Found::File { sha256: sha.into() }
    }

    #[test]
    fn set_aside_files_come_back_and_changed_ones_are_conflicts() {
        let j = journal(vec![
            entry(Op::SetAside, "data/a/1/raw", "a"),
            entry(Op::SetAside, "data/b/1/raw", "b"),
            entry(Op::SetAside, "data/c/1/raw", "c"),
            entry(Op::SetAside, "data/d/1/raw", "d"),
            entry(Op::SetAside, "data/e/1/raw", "e"),
        ]);
        let seen = UndoObserved {
            entries: vec![
                // Still in the trash: restored.
                EntryState {
                    file: Found::Absent,
                    trash: file("a"),
                },
                // Already back: nothing.
                EntryState {
                    file: file("b"),
                    trash: Found::Absent,
                },
                // Something else took its place: a conflict.
                EntryState {
                    file: file("new"),
                    trash: file("c"),
                },
                // The trash copy is gone.
                EntryState {
                    file: Found::Absent,
                    trash: Found::Absent,
                },
                // The trash copy was tampered with.
                EntryState {
                    file: Found::Absent,
                    trash: file("x"),
                },
            ],
        };
        let plan = compose(&j, &seen);
        let kinds: Vec<_> = plan
            .actions
            .iter()
            .map(|a| (a.kind(), a.path().as_str()))
            .collect();
        assert_eq!(kinds, [("restore", "data/a/1/raw")]);
        let conflicts: Vec<_> = plan.conflicts.iter().map(|c| c.path().as_str()).collect();
        assert_eq!(conflicts, ["data/c/1/raw", "data/d/1/raw", "data/e/1/raw"]);
        assert!(matches!(plan.conflicts[0], UndoConflict::Changed { .. }));
        assert!(matches!(plan.conflicts[1], UndoConflict::TrashGone { .. }));
        assert!(matches!(
            plan.conflicts[2],
            UndoConflict::TrashChanged { .. }
        ));
    }

    #[test]
    fn a_replaced_file_is_set_aside_and_the_old_bytes_restored_and_back_again() {
        let mut replaced = entry(Op::SetAside, "outputs/r", "old");
        replaced.written = Some("new".into());
        let j = journal(vec![replaced]);
        let seen = UndoObserved {
            entries: vec![EntryState {
                file: file("new"),
                trash: file("old"),
            }],
        };
        let plan = compose(&j, &seen);
        let kinds: Vec<_> = plan
            .actions
            .iter()
            .map(|a| (a.kind(), a.path().as_str()))
            .collect();
        assert_eq!(
            kinds,
            [("set-aside", "outputs/r"), ("restore", "outputs/r")]
        );
        assert!(plan.conflicts.is_empty());
        // Its undo (journaled as set-aside "new", restored "old") swaps back.
        let mut set_aside = entry(Op::SetAside, "outputs/r", "new");
        set_aside.size = 1;
        let j2 = journal(vec![set_aside, entry(Op::Restored, "outputs/r", "old")]);
        let seen2 = UndoObserved {
            entries: vec![
                EntryState {
                    file: file("old"),
                    trash: file("new"),
                },
                EntryState {
                    file: file("old"),
                    trash: Found::Absent,
                },
            ],
        };
        let plan2 = compose(&j2, &seen2);
        let kinds: Vec<_> = plan2
            .actions
            .iter()
            .map(|a| (a.kind(), a.path().as_str()))
            .collect();
        assert_eq!(
            kinds,
            [("set-aside", "outputs/r"), ("restore", "outputs/r")]
        );
        // Written over again since: a conflict.
        let seen3 = UndoObserved {
            entries: vec![EntryState {
                file: file("newer"),
                trash: file("old"),
            }],
        };
        assert_eq!(compose(&j, &seen3).conflicts.len(), 1);
    }

    #[test]
    fn undoing_an_undo_sets_the_restored_files_aside_again() {
        let j = journal(vec![
            entry(Op::Restored, "data/a/1/raw", "a"),
            entry(Op::Restored, "data/b/1/raw", "b"),
            entry(Op::Restored, "data/c/1/raw", "c"),
        ]);
        let seen = UndoObserved {
            entries: vec![
                EntryState {
                    file: file("a"),
                    trash: Found::Absent,
                },
                EntryState {
                    file: Found::Absent,
                    trash: Found::Absent,
                },
                EntryState {
                    file: file("changed"),
                    trash: Found::Absent,
                },
            ],
        };
        let plan = compose(&j, &seen);
        let kinds: Vec<_> = plan
            .actions
            .iter()
            .map(|a| (a.kind(), a.path().as_str()))
            .collect();
        assert_eq!(kinds, [("set-aside", "data/a/1/raw")]);
        assert_eq!(plan.conflicts.len(), 1);
    }

    #[test]
    fn made_files_are_set_aside_and_moved_ones_moved_back_unless_changed() {
        let mut moved = entry(Op::Moved, "outputs/m", "m");
        let from = Arc::new(Placement {
            datastore: crate::config::DatastoreConfig::Local,
            namespace: None,
        });
        moved.from = Some(from.clone());
        let mut moved_changed = moved.clone();
        moved_changed.path = TierPath::parse("outputs/n").unwrap();
        let mut moved_blocked = moved.clone();
        moved_blocked.path = TierPath::parse("outputs/o").unwrap();
        let j = journal(vec![
            entry(Op::Created, "outputs/c", "c"),
            entry(Op::Created, "outputs/gone", "g"),
            entry(Op::Created, "outputs/edited", "e"),
            entry(Op::RemoteCreated, "outputs/r", "r"),
            moved,
            moved_changed,
            moved_blocked,
        ]);
        let object = |sha: &str| Found::Object {
            sha256: sha.into(),
            version: "v1".into(),
        };
        let seen = |file: Found, trash: Found| EntryState { file, trash };
        let observed = UndoObserved {
            entries: vec![
                seen(file("c"), Found::Absent),
                seen(Found::Absent, Found::Absent),
                seen(file("edited since"), Found::Absent),
                seen(object("r"), Found::Absent),
                seen(file("m"), Found::Absent),
                seen(file("changed"), Found::Absent),
                // Something took its old place.
                seen(file("m"), file("other")),
            ],
        };
        let plan = compose(&j, &observed);
        let kinds: Vec<_> = plan
            .actions
            .iter()
            .map(|a| (a.kind(), a.path().as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("set-aside", "outputs/c"),
                ("set-aside-remote", "outputs/r"),
                ("move-back", "outputs/m"),
            ]
        );
        assert!(matches!(&plan.actions[0], UndoAction::SetAside(s) if s.made));
        assert!(
            matches!(&plan.actions[1], UndoAction::SetAsideRemote(s) if s.made && s.version == "v1")
        );
        assert!(matches!(&plan.actions[2], UndoAction::MoveBack(m) if m.to == from));
        let conflicts: Vec<_> = plan.conflicts.iter().map(|c| c.path().as_str()).collect();
        assert_eq!(conflicts, ["outputs/edited", "outputs/n", "outputs/o"]);
        // Moved back already (an interrupted undo): nothing left to do.
        let back = UndoObserved {
            entries: vec![
                seen(Found::Absent, Found::Absent),
                seen(Found::Absent, Found::Absent),
                seen(Found::Absent, Found::Absent),
                seen(Found::Absent, Found::Absent),
                seen(Found::Absent, file("m")),
                seen(Found::Absent, file("m")),
                seen(Found::Absent, file("m")),
            ],
        };
        assert!(compose(&j, &back).is_empty());
    }
}
