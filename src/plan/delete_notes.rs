//! How far this clone's sync base will have passed the other clones'
//! delete records once a plan has run, and which records and notes may
//! then go (see `state::delete_records` for the notes and records). Pure.

use crate::plan::action::{
    DeleteLocal, DeleteRemote, Download, NoteProgress, PruneRecords, RecordBase, RecordDeletes,
    Upload,
};
use std::collections::{BTreeMap, BTreeSet};

use crate::layout::TierPath;
use crate::state::BaseEntry;
use crate::state::delete_records::{CloneNote, DeleteRecord, DeletedFile, NO_STEM};

use super::{Action, RemoteObjectRef};

/// What a plan notes and prunes.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    /// The note to write, when it is not the one in the bucket.
    pub note: Option<Note>,
    /// Records every other clone has passed or that are too old, and the
    /// notes of clones that had not passed those.
    pub prune: Vec<RemoteObjectRef>,
}

/// This clone's new note (see `Action::NoteProgress`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Note {
    pub passed: String,
    pub check: Vec<DeletedFile>,
    pub replaces: Vec<RemoteObjectRef>,
}

impl Progress {
    /// The actions: a record of this plan's own deletes (`files`, if any)
    /// and the note, with the prune list on the last of them (or on an
    /// action of its own).
    pub(crate) fn actions(self, files: Vec<DeletedFile>, after: Option<String>) -> Vec<Action> {
        let mut out = Vec::new();
        if !files.is_empty() {
            out.push(Action::RecordDeletes(RecordDeletes {
                files,
                after,
                prune: Vec::new(),
            }));
        }
        if let Some(n) = self.note {
            out.push(Action::NoteProgress(NoteProgress {
                passed: n.passed,
                check: n.check,
                replaces: n.replaces,
                prune: Vec::new(),
            }));
        }
        if !self.prune.is_empty() {
            match out.last_mut() {
                Some(
                    Action::RecordDeletes(RecordDeletes { prune, .. })
                    | Action::NoteProgress(NoteProgress { prune, .. }),
                ) => *prune = self.prune,
                _ => out.push(Action::PruneRecords(PruneRecords { prune: self.prune })),
            }
        }
        out
    }
}

/// The stem a new record must sort after: the newest any record or note
/// names, so that no note already covers it, whatever the clocks say.
pub(crate) fn newest_stem<'a>(
    records: &'a [DeleteRecord],
    notes: &'a [CloneNote],
) -> Option<&'a str> {
    records
        .iter()
        .map(DeleteRecord::stem)
        .chain(notes.iter().map(|n| n.passed.as_str()))
        .max()
}

/// `records` sorted by stem (as read), `notes` as listed, `base`
/// as observed, `actions` this plan's sync actions.
pub(crate) fn progress(
    records: &[DeleteRecord],
    notes: &[CloneNote],
    base: &BTreeMap<TierPath, BaseEntry>,
    actions: &[Action],
) -> Progress {
    let touched = touched_paths(actions);
    let (note, my_passed) = my_note(records, notes, base, &touched);
    let prune = prunes(records, notes, my_passed);
    Progress { note, prune }
}

/// Paths whose base entry this plan rewrites or drops: once it has run,
/// the base holds no version another clone deleted there.
fn touched_paths(actions: &[Action]) -> BTreeSet<&TierPath> {
    let mut touched: BTreeSet<&TierPath> = BTreeSet::new();
    for a in actions {
        match a {
            Action::Upload(Upload { path, .. })
            | Action::Download(Download { path, .. })
            | Action::DeleteLocal(DeleteLocal { path, .. })
            | Action::DeleteRemote(DeleteRemote { path, .. }) => {
                touched.insert(path);
            }
            Action::RecordBase(RecordBase {
                add,
                unhydrated,
                drop,
            }) => {
                touched.extend(add.iter().map(|r| &r.path));
                touched.extend(unhydrated.iter().map(|r| &r.path));
                touched.extend(drop.iter());
            }
            _ => {}
        }
    }
    touched
}

/// This clone's note: the furthest stem up to which every other clone's
/// record is passed (with the files that must still be as the base says
/// when it is written), if that differs from what it noted; and how far
/// this clone will have noted.
fn my_note<'a>(
    records: &'a [DeleteRecord],
    notes: &'a [CloneNote],
    base: &BTreeMap<TierPath, BaseEntry>,
    touched: &BTreeSet<&TierPath>,
) -> (Option<Note>, Option<&'a str>) {
    let held_now = |f: &DeletedFile| base.get(&f.path).is_some_and(|b| b.version == f.version);

    // The furthest stem up to which every other clone's record is passed.
    let mut passed = NO_STEM;
    let mut check = Vec::new();
    // (Its own records move nothing: writing one must not make the next
    // plan note again.)
    let mut held = None;
    for r in records.iter().filter(|r| !r.mine) {
        if r.files
            .iter()
            .any(|f| held_now(f) && !touched.contains(&f.path))
        {
            held = Some(r.stem());
            break;
        }
        check.extend(r.files.iter().filter(|f| held_now(f)).cloned());
        passed = passed.max(r.stem());
    }
    let mine: Vec<&CloneNote> = notes.iter().filter(|n| n.mine).collect();
    // Of two notes of one clone (a crash between writing one and removing
    // the other), the lower is the one to believe.
    let noted = mine.iter().map(|n| n.passed.as_str()).min();
    // Records pruned since are no reason to go back; one still held at or
    // below the note is (a base restored from a backup).
    if let Some(noted) = noted
        && noted > passed
        && held.is_none_or(|h| h > noted)
    {
        passed = noted;
    }
    let note = (noted != Some(passed) || mine.len() > 1).then(|| Note {
        passed: passed.to_string(),
        check,
        replaces: mine
            .iter()
            .filter(|n| n.passed != passed)
            .map(|n| RemoteObjectRef {
                key: n.key.as_str().into(),
                version: n.version.clone().into(),
            })
            .collect(),
    });
    let my_passed = if note.is_some() { Some(passed) } else { noted };
    (note, my_passed)
}

/// The records every other clone has passed (or that expired), and the
/// notes of clones gone since.
fn prunes(
    records: &[DeleteRecord],
    notes: &[CloneNote],
    my_passed: Option<&str>,
) -> Vec<RemoteObjectRef> {
    // How far each clone has noted (the lower of two notes of one); this
    // one (`ME`) as it will be.
    const ME: &str = "";
    let mut clones: BTreeMap<&str, &str> = BTreeMap::new();
    for n in notes.iter().filter(|n| !n.mine) {
        let at = clones.entry(n.clone.as_str()).or_insert(n.passed.as_str());
        *at = (*at).min(n.passed.as_str());
    }
    if let Some(p) = my_passed {
        clones.insert(ME, p);
    }
    // A record's writer need not pass it; one that does not say who wrote
    // it waits for everyone.
    fn writer(r: &DeleteRecord) -> Option<&str> {
        if r.mine { Some(ME) } else { r.clone.as_deref() }
    }

    let mut prune = Vec::new();
    let mut gone: BTreeSet<&str> = BTreeSet::new();
    for r in records {
        let mut others = clones
            .iter()
            .filter(|(c, _)| Some(**c) != writer(r))
            .peekable();
        // Not before another clone is known to have passed it: a clone
        // that never noted may still hold its files.
        let all_passed = !r.young && others.peek().is_some() && others.all(|(_, p)| *p >= r.stem());
        if r.expired {
            // Clones that had not passed it in all that time are gone (or
            // meet the guard when they come back).
            gone.extend(
                clones
                    .iter()
                    .filter(|(c, p)| **c != ME && Some(**c) != writer(r) && **p < r.stem())
                    .map(|(c, _)| *c),
            );
        }
        if r.expired || all_passed {
            prune.push(RemoteObjectRef {
                key: r.key.as_str().into(),
                version: r.version.clone().into(),
            });
        }
    }
    prune.extend(
        notes
            .iter()
            .filter(|n| !n.mine && gone.contains(n.clone.as_str()))
            .map(|n| RemoteObjectRef {
                key: n.key.as_str().into(),
                version: n.version.clone().into(),
            }),
    );
    prune
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Sha256;

    use crate::testutil::tp;

    fn stem(n: u8) -> String {
        format!("{:015}-{:012x}", 1_764_000_000_000u64 + u64::from(n), n)
    }

    fn file(path: &str, version: &str) -> DeletedFile {
        DeletedFile {
            path: tp(path),
            sha256: Sha256::parse(&"a".repeat(64)).unwrap(),
            version: version.into(),
        }
    }

    fn record(n: u8, by: &str, files: Vec<DeletedFile>) -> DeleteRecord {
        DeleteRecord {
            key: format!("p/.swamp/deletes/{}.json", stem(n)),
            version: format!("r{n}"),
            files,
            expired: false,
            young: false,
            clone: Some(by.to_string()),
            mine: by == "me",
        }
    }

    fn note(clone: &str, passed: &str) -> CloneNote {
        CloneNote {
            key: format!("p/.swamp/clones/{clone}/{passed}.json"),
            version: format!("n-{clone}-{passed}"),
            clone: clone.into(),
            passed: passed.into(),
            mine: clone == "me",
            modified: None,
        }
    }

    fn base(entries: &[(&str, &str)]) -> BTreeMap<TierPath, BaseEntry> {
        entries
            .iter()
            .map(|(p, v)| {
                (
                    tp(p),
                    BaseEntry {
                        sha256: Sha256::parse(&"a".repeat(64)).unwrap(),
                        size: 1,
                        version: crate::store::Version::new(v),
                    },
                )
            })
            .collect()
    }

    fn delete_local(path: &str) -> Action {
        Action::DeleteLocal(DeleteLocal {
            path: tp(path),
            sha256: Sha256::parse(&"a".repeat(64)).unwrap(),
            settled_by: None,
        })
    }

    fn keys(refs: &[RemoteObjectRef]) -> Vec<String> {
        refs.iter().map(|r| r.key.to_key()).collect()
    }

    #[test]
    fn a_first_sync_notes_this_clone_even_with_no_records() {
        let p = progress(&[], &[], &base(&[]), &[]);
        let note = p.note.expect("a first note");
        assert_eq!(note.passed, NO_STEM);
        assert!(note.replaces.is_empty() && note.check.is_empty());
        // Once noted, nothing more: a converged sync writes nothing.
        let again = progress(&[], &[note_of("me", NO_STEM)], &base(&[]), &[]);
        assert_eq!(again, Progress::default());
    }

    fn note_of(clone: &str, passed: &str) -> CloneNote {
        note(clone, passed)
    }

    #[test]
    fn a_record_is_passed_only_once_this_plan_drops_its_files_from_the_base() {
        let records = [record(1, "a", vec![file("data/m/1/raw", "v1")])];
        let notes = [note("me", NO_STEM), note("a", &stem(1))];
        let held = base(&[("data/m/1/raw", "v1")]);
        // The base still holds the deleted version and this plan leaves
        // it (a push-only sync, a conflict): not passed, nothing pruned.
        assert_eq!(progress(&records, &notes, &held, &[]), Progress::default());
        // This plan deletes it from the cache: passed once it has run, so
        // the note advances, is checked at apply, and, every other clone
        // having passed the record, prunes it.
        let p = progress(&records, &notes, &held, &[delete_local("data/m/1/raw")]);
        let note = p.note.expect("advances");
        assert_eq!(note.passed, stem(1));
        assert_eq!(note.check, [file("data/m/1/raw", "v1")]);
        assert_eq!(keys(&note.replaces), [notes[0].key.as_str()]);
        assert_eq!(keys(&p.prune), [records[0].key.as_str()]);
        // Another version at that path (recreated since) is no matter.
        let other = base(&[("data/m/1/raw", "v2")]);
        assert_eq!(
            progress(&records, &notes, &other, &[]).note.unwrap().passed,
            stem(1)
        );
    }

    #[test]
    fn a_record_waits_for_every_clone_but_its_writer() {
        let records = [record(1, "a", vec![file("data/m/1/raw", "v1")])];
        // B is behind: the record stays, though this clone passed it.
        let notes = [note("me", NO_STEM), note("a", NO_STEM), note("b", NO_STEM)];
        let p = progress(&records, &notes, &base(&[]), &[]);
        assert_eq!(p.note.unwrap().passed, stem(1));
        assert!(p.prune.is_empty());
        // B caught up: the last to pass it (this clone) prunes it.
        let notes = [note("me", NO_STEM), note("a", NO_STEM), note("b", &stem(1))];
        assert_eq!(
            keys(&progress(&records, &notes, &base(&[]), &[]).prune),
            [records[0].key.as_str()]
        );
    }

    #[test]
    fn an_own_record_is_not_pruned_before_another_clone_is_known_to_pass_it() {
        let records = [record(1, "me", vec![file("data/m/1/raw", "v1")])];
        let alone = [note("me", NO_STEM)];
        // Its own record moves its note nowhere: the plan after the one
        // that wrote it has nothing to do.
        assert_eq!(
            progress(&records, &alone, &base(&[]), &[]),
            Progress::default(),
            "a clone that never noted may need it"
        );
        let with_b = [note("me", NO_STEM), note("b", &stem(1))];
        assert_eq!(
            keys(&progress(&records, &with_b, &base(&[]), &[]).prune),
            [records[0].key.as_str()]
        );
    }

    #[test]
    fn the_note_stops_before_the_first_record_still_held() {
        let records = [
            record(1, "a", vec![]),
            record(2, "a", vec![file("data/m/2/raw", "v2")]),
            record(3, "a", vec![]),
        ];
        let p = progress(
            &records,
            &[note("me", NO_STEM)],
            &base(&[("data/m/2/raw", "v2")]),
            &[],
        );
        assert_eq!(p.note.unwrap().passed, stem(1));
        // A note ahead of the truth (a base restored from a backup) goes
        // back, so that no record is pruned under this clone.
        let ahead = [note("me", &stem(3))];
        let p = progress(&records, &ahead, &base(&[("data/m/2/raw", "v2")]), &[]);
        assert_eq!(p.note.unwrap().passed, stem(1));
        // Records pruned since it noted are no reason to go back.
        assert!(
            progress(&records[..1], &ahead, &base(&[]), &[])
                .note
                .is_none()
        );
        assert_eq!(progress(&[], &ahead, &base(&[]), &[]), Progress::default());
    }

    #[test]
    fn an_expired_record_goes_with_the_notes_of_clones_that_never_passed_it() {
        let mut old = record(1, "a", vec![file("data/m/1/raw", "v1")]);
        old.expired = true;
        let notes = [
            note("me", &stem(1)),
            note("a", NO_STEM),
            note("gone", NO_STEM),
            note("late", &stem(1)),
        ];
        let p = progress(&[old.clone()], &notes, &base(&[]), &[]);
        assert!(p.note.is_none());
        assert_eq!(keys(&p.prune), [old.key.as_str(), notes[2].key.as_str()]);
    }

    #[test]
    fn a_record_that_does_not_say_who_wrote_it_waits_for_every_clone() {
        let mut anon = record(1, "a", vec![]);
        anon.clone = None;
        let notes = [note("me", &stem(1)), note("a", NO_STEM)];
        assert!(
            progress(&[anon.clone()], &notes, &base(&[]), &[])
                .prune
                .is_empty()
        );
    }

    #[test]
    fn a_young_record_is_kept_though_every_noted_clone_has_passed_it() {
        // A clone that synced before notes existed may still hold it.
        let mut young = record(1, "a", vec![]);
        young.young = true;
        let notes = [note("me", &stem(1)), note("a", NO_STEM)];
        assert_eq!(
            progress(&[young.clone()], &notes, &base(&[]), &[]),
            Progress::default()
        );
        young.young = false;
        let p = progress(&[young.clone()], &notes, &base(&[]), &[]);
        assert!(p.note.is_none());
        // Nothing else to do: the prune is an action of its own.
        assert_eq!(
            p.actions(Vec::new(), None),
            [Action::PruneRecords(PruneRecords {
                prune: vec![RemoteObjectRef {
                    key: young.key.as_str().into(),
                    version: young.version.clone().into(),
                }]
            })]
        );
    }

    #[test]
    fn what_is_pruned_rides_on_the_last_record_or_note_written() {
        let old = RemoteObjectRef {
            key: "p/.swamp/deletes/old.json".into(),
            version: "1".into(),
        };
        let prune_of = |a: &Action| match a {
            Action::RecordDeletes(RecordDeletes { prune, .. })
            | Action::NoteProgress(NoteProgress { prune, .. })
            | Action::PruneRecords(PruneRecords { prune }) => prune.clone(),
            _ => Vec::new(),
        };
        let note = || Note {
            passed: stem(1),
            check: Vec::new(),
            replaces: Vec::new(),
        };
        let files = || vec![file("data/m/1/raw", "v1")];
        let with = |note: Option<Note>, files: Vec<DeletedFile>| {
            Progress {
                note,
                prune: vec![old.clone()],
            }
            .actions(files, None)
        };
        let both = with(Some(note()), files());
        assert_eq!(
            both.iter().map(Action::kind).collect::<Vec<_>>(),
            ["record-deletes", "note-progress"]
        );
        assert_eq!(
            both.iter().map(prune_of).collect::<Vec<_>>(),
            [vec![], vec![old.clone()]]
        );
        let record = with(None, files());
        assert_eq!(
            record.iter().map(prune_of).collect::<Vec<_>>(),
            [vec![old.clone()]]
        );
        let alone = with(None, Vec::new());
        assert_eq!(
            alone.iter().map(Action::kind).collect::<Vec<_>>(),
            ["prune-records"]
        );
    }

    #[test]
    fn of_two_notes_of_one_clone_the_lower_counts() {
        let records = [record(1, "a", vec![])];
        let notes = [
            note("me", &stem(1)),
            note("b", NO_STEM),
            note("b", &stem(1)),
        ];
        assert!(progress(&records, &notes, &base(&[]), &[]).prune.is_empty());
    }

    #[test]
    fn a_new_record_sorts_after_every_record_and_note_listed() {
        let records = [record(1, "a", vec![])];
        let notes = [note("b", &stem(3)), note("me", NO_STEM)];
        assert_eq!(newest_stem(&records, &notes), Some(stem(3).as_str()));
        assert_eq!(newest_stem(&[], &[]), None);
    }

    #[test]
    fn leftover_notes_of_this_clone_are_replaced() {
        // A crash between writing a note and removing the old one.
        let notes = [note("me", NO_STEM), note("me", &stem(1))];
        let records = [record(1, "a", vec![])];
        let note = progress(&records, &notes, &base(&[]), &[]).note.unwrap();
        assert_eq!(note.passed, stem(1));
        assert_eq!(keys(&note.replaces), [notes[0].key.as_str()]);
    }
}
