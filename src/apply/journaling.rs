//! The undo journal of one apply, written before anything runs: what its
//! deletes and replacements set aside (the journal's entries), what it
//! creates and moves (its `.made` file, see `journal::made`), and the move
//! of the datastore it is part of. With all three an undo reverses the
//! whole apply.

use std::sync::Arc;

use crate::config::Placement;
use crate::digest::Sha256;
use crate::journal::{self, made::Made, made::MadeOp};
use crate::layout::{Layout, TierPath};
use crate::plan::action::{DeleteLocal, DeleteRemote, Download, DropDuplicate, Move, Upload};
use crate::plan::{Action, Plan, RemoteExpect};

/// The journal of an apply whose plan changes anything undo can reverse
/// (`None`: nothing to journal): each cache delete sets the file aside
/// into its trash, each remote delete or replacement first copies the
/// object into its remote trash, and each file created or moved is listed
/// to be set aside or moved back.
pub(super) fn journal(
    plan: &Plan,
    layout: &Layout,
) -> Result<Option<journal::Journal>, journal::UndoError> {
    let mut entries = set_asides(plan, layout);
    // Added to, not chained and collected: a move's million entries were
    // held twice for a moment.
    add_drained_entries(plan, &mut entries);
    let moved = remote_move(plan);
    // A move between two remote places: what it put at the new place
    // stays there when it is undone (the old place comes back from its
    // trash, and a redo moves forward to the new one again). Only one
    // remote place is written back.
    let leaves_new = moved.is_some();
    let made = made_counts(plan, leaves_new);
    if entries.is_empty() && made.total() == 0 {
        return Ok(None);
    }
    let mut summary = summary(plan, &entries, &made);
    // `--no-undo`: the history still shows the run, which kept nothing.
    let entries = if plan.no_undo {
        summary.push_str(" (--no-undo: not kept)");
        Vec::new()
    } else {
        entries
    };
    let mut j = journal::Journal::begin(layout, &journal::command_line(), summary, entries);
    j.no_undo = plan.no_undo;
    j.moved = moved
        .or_else(|| moved_files(plan))
        .filter(|_| !plan.no_undo);
    if made.total() > 0 && !plan.no_undo {
        let (places, lines) = made_lines(plan, leaves_new);
        let count = journal::made::write(&layout.made_path(&j.id), lines)?;
        j.made = Some(journal::made::MadeHead { places, count });
    }
    j.save(layout)?;
    Ok(Some(j))
}

/// What one apply creates and moves, by kind.
#[derive(Debug, Default, Clone, Copy)]
struct MadeCounts {
    created: usize,
    remote_created: usize,
    moved: usize,
}

impl MadeCounts {
    fn total(&self) -> usize {
        self.created + self.remote_created + self.moved
    }
}

fn made_counts(plan: &Plan, leaves_new: bool) -> MadeCounts {
    let mut c = MadeCounts::default();
    for a in &plan.actions {
        match made_of(a, leaves_new) {
            Some((MadeOp::Created, _)) => c.created += 1,
            Some((MadeOp::RemoteCreated, _)) => c.remote_created += 1,
            Some((MadeOp::Moved, _)) => c.moved += 1,
            None => {}
        }
    }
    c
}

/// The history's words for what the apply changes: what it deletes or
/// replaces (as before files were made too), then what it makes.
fn summary(plan: &Plan, entries: &[journal::Entry], made: &MadeCounts) -> String {
    let scope = plan.scope.as_str();
    let local = entries
        .iter()
        .filter(|e| e.op == journal::Op::SetAside)
        .count();
    let mut parts = Vec::new();
    if !entries.is_empty() {
        parts.push(format!(
            "{local} file(s) deleted or replaced, {} remote object(s) deleted or replaced",
            entries.len() - local
        ));
    }
    for (n, what) in [
        (made.created, "file(s) downloaded"),
        (made.remote_created, "object(s) uploaded"),
        (made.moved, "file(s) moved"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    // Never empty: a journal is written only when the plan changes something.
    format!("{scope}: {}", parts.join(", "))
}

/// What `action` makes that holds no trash, and the source it moves from
/// (`leaves_new`: not the objects it uploads, which its undo leaves).
fn made_of(action: &Action, leaves_new: bool) -> Option<(MadeOp, Option<usize>)> {
    match action {
        Action::Download(Download { local: None, .. }) => Some((MadeOp::Created, None)),
        Action::Upload(Upload {
            remote: RemoteExpect::Absent,
            ..
        }) if !leaves_new => Some((MadeOp::RemoteCreated, None)),
        Action::Move(Move { source, .. }) => Some((MadeOp::Moved, Some(*source))),
        _ => None,
    }
}

/// The places the `.made` lines name (the target first, then each
/// source), and the lines, streamed from the plan.
fn made_lines(plan: &Plan, leaves_new: bool) -> (Vec<Placement>, impl Iterator<Item = Made> + '_) {
    let mut places = vec![plan.target.placement()];
    places.extend(plan.sources.iter().map(|s| s.placement()));
    let lines = plan.actions.iter().filter_map(move |a| {
        let (op, source) = made_of(a, leaves_new)?;
        let (path, sha256, size) = match a {
            Action::Download(d) => (
                &d.path,
                d.expect.sha256().map(|s| s.hex()).unwrap_or_default(),
                d.size,
            ),
            Action::Upload(u) => (&u.path, u.sha256.hex(), u.size),
            Action::Move(m) => (&m.path, m.sha256.hex(), m.size),
            _ => return None,
        };
        Some(Made {
            op,
            path: path.clone(),
            sha256,
            size,
            at: 0,
            from: source.map(|s| s + 1),
        })
    });
    (places, lines)
}

/// The move of the datastore's files from one place (a namespace set or
/// unset, a `datastore setup` from the local datastore or a shared path):
/// undoing it moves them back, and `.swamp.toml` with them.
fn moved_files(plan: &Plan) -> Option<journal::MovedPlaces> {
    if !plan
        .actions
        .iter()
        .any(|a| matches!(a, Action::FinishMigration))
    {
        return None;
    }
    let to = plan.target.placement();
    let mut sources = plan.actions.iter().filter_map(|a| match a {
        Action::Move(Move { source, .. }) | Action::DropDuplicate(DropDuplicate { source, .. }) => {
            Some(*source)
        }
        _ => None,
    });
    let first = sources.next()?;
    if sources.any(|s| s != first) {
        return None;
    }
    let from = plan.sources.get(first)?.placement();
    Some(journal::MovedPlaces {
        from,
        to,
        copied: 0,
    })
}

/// The entries of what the apply sets aside: cache deletes and replaced
/// downloads (into the cache's trash), remote deletes and replacements
/// (into the remote trash), a source's duplicates.
fn set_asides(plan: &Plan, layout: &Layout) -> Vec<journal::Entry> {
    // Shared by the entries of each place.
    let placement = Arc::new(plan.target.placement());
    let sources: Vec<_> = plan
        .sources
        .iter()
        .map(|s| Arc::new(s.placement()))
        .collect();
    let remote_entry = |path: &TierPath, written: Option<&Sha256>| {
        journal::Entry::remote_set_aside(&placement, path, written.map(Sha256::hex))
    };
    let entry_in = |placement: Arc<Placement>, path: &TierPath, sha256: &Sha256| journal::Entry {
        op: journal::Op::SetAside,
        size: std::fs::symlink_metadata(layout.file_path(&placement, path))
            .map(|m| m.len())
            .unwrap_or(0),
        placement,
        path: path.clone(),
        sha256: sha256.hex(),
        written: None,
        from: None,
    };
    let local_entry = |path: &TierPath, sha256: &Sha256| entry_in(placement.clone(), path, sha256);
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::DeleteLocal(DeleteLocal { path, sha256, .. }) => {
                Some(local_entry(path, sha256))
            }
            // A source's copy whose twin is at the target: set aside there.
            Action::DropDuplicate(DropDuplicate {
                path,
                source,
                sha256,
                ..
            }) => Some(entry_in(Arc::clone(&sources[*source]), path, sha256)),
            // A replaced cache file: what it held goes to the trash; what
            // replaced it is recorded once it has landed.
            Action::Download(Download {
                path,
                local: Some(old),
                ..
            }) => Some(local_entry(path, old)),
            Action::DeleteRemote(DeleteRemote { path, .. }) => Some(remote_entry(path, None)),
            Action::Upload(Upload {
                path,
                sha256,
                remote: RemoteExpect::Version { .. },
                ..
            }) => Some(remote_entry(path, Some(sha256))),
            _ => None,
        })
        .collect()
}

/// The move between two remote places `plan` drains the old one of,
/// with what it writes at the new one (copies, and uploads of what only
/// the cache held), which its undo leaves there.
pub(super) fn remote_move(plan: &Plan) -> Option<journal::MovedPlaces> {
    let drained = plan.actions.iter().find_map(|a| match a {
        Action::DeleteSourceRemote(d) if d.moved_to.is_some() && !d.objects.is_empty() => Some(d),
        _ => None,
    })?;
    let from = plan.sources.get(drained.source)?.placement();
    let copied = plan
        .actions
        .iter()
        .filter(|a| match a {
            Action::CopyRemote(c) => c.source == drained.source,
            Action::Upload(u) => u.remote == RemoteExpect::Absent,
            _ => false,
        })
        .count() as u64;
    Some(journal::MovedPlaces {
        from,
        to: plan.target.placement(),
        copied,
    })
}

/// The journal entries of a drained source's files, which go to its own
/// remote trash before they are deleted (undoing the move puts the old
/// place back).
fn add_drained_entries(plan: &Plan, entries: &mut Vec<journal::Entry>) {
    for d in plan.actions.iter().filter_map(|a| match a {
        Action::DeleteSourceRemote(d) => Some(d),
        _ => None,
    }) {
        let Some(from) = plan.sources.get(d.source).map(|s| Arc::new(s.placement())) else {
            continue;
        };
        let prefix = Layout::remote_prefix(&from);
        entries.reserve(d.objects.len());
        entries.extend(
            d.objects
                .iter()
                .filter_map(|o| o.key.path_under(&prefix))
                .map(|path| journal::Entry::remote_set_aside(&from, &path, None)),
        );
    }
}
