//! An undo plan for review, and `swamp undo --prune`'s list.

use super::*;

/// An undo plan for review: what comes back, what is set aside again, and
/// what blocks.
pub fn render_undo(plan: &crate::plan::undo::UndoPlan) -> String {
    use crate::plan::undo::UndoAction;
    let mut out = String::new();
    match (&plan.redoes, &plan.again) {
        (Some(redone), _) => writeln!(
            out,
            "Redo of apply {redone}: reverses its undo, apply {} ({})",
            plan.undoes,
            escape_controls(&plan.command)
        ),
        (None, Some(apply)) => writeln!(
            out,
            "Undo of apply {apply} again: reverses its redo, apply {} ({})",
            plan.undoes,
            escape_controls(&plan.command)
        ),
        (None, None) => writeln!(
            out,
            "Undo of apply {} ({})",
            plan.undoes,
            escape_controls(&plan.command)
        ),
    }
    .ok();
    if !plan.actions.is_empty() {
        let mut t = table();
        t.set_header(["#", "action", "path", "from", "size"]);
        for (i, a) in plan.actions.iter().enumerate() {
            let (from, size) = match a {
                UndoAction::Restore(Restore { from, size, .. }) => {
                    (format!("trash of {from}"), human_bytes(*size))
                }
                UndoAction::SetAside(SetAside { size, .. }) => {
                    ("in place".to_string(), human_bytes(*size))
                }
                // Server-side: its size is the trash copy's.
                UndoAction::RestoreRemote(RestoreRemote { from, .. }) => {
                    (format!("remote trash of {from}"), String::new())
                }
                UndoAction::SetAsideRemote(_) => ("in the remote".to_string(), String::new()),
                UndoAction::MoveBack(MoveBack { to, size, .. }) => {
                    (format!("to {}", place_label(to)), human_bytes(*size))
                }
            };
            t.add_row(vec![
                (i + 1).to_string(),
                a.kind().to_string(),
                escape_controls(a.path().as_str()).into_owned(),
                from,
                size,
            ]);
        }
        let _ = writeln!(out, "\n{t}");
    }
    if !plan.conflicts.is_empty() {
        let _ = writeln!(out, "\nConflicts (undo is blocked until each is resolved):");
        for c in &plan.conflicts {
            undo_conflict(&mut out, c, &plan.undoes);
        }
    }
    if let Some(back) = &plan.moves_back {
        let _ = write!(
            out,
            "\nThe datastore moves back: `.swamp.toml` names {} again",
            place_label(&back.to),
        );
        let _ = match back.from.datastore.is_remote() && back.to.datastore.is_remote() {
            true => writeln!(
                out,
                ", and a `moved` marker at {} sends the clones there back.",
                place_label(&back.from)
            ),
            false => writeln!(out, "."),
        };
        if back.copied > 0 {
            let _ = writeln!(
                out,
                "The {} object(s) the move copied to {} stay there: nothing at that place is deleted (`swamp redo` moves forward to them again).",
                back.copied,
                place_label(&back.from),
            );
        }
    }
    out.push_str(&undo_summary(plan));
    out
}

/// An undo plan's closing line: what its rows do, kind by kind.
fn undo_summary(plan: &crate::plan::undo::UndoPlan) -> String {
    let count = |kind: &str| plan.actions.iter().filter(|a| a.kind() == kind).count();
    let mut parts = counted(&[
        (count("restore"), "file(s) to restore"),
        (count("set-aside"), "file(s) to set aside"),
        (count("move-back"), "file(s) to move back"),
        (count("restore-remote"), "remote object(s) to restore"),
        (count("set-aside-remote"), "remote object(s) to set aside"),
    ]);
    if !parts.is_empty() {
        parts.push_str(", ");
    }
    format!(
        "\n{}: {parts}{} conflict(s).\n",
        if plan.redoes.is_some() {
            "Redo"
        } else {
            "Undo"
        },
        plan.conflicts.len()
    )
}

/// A place as a user names it: the local datastore's directory in the
/// repository (`.swamp/team/`), else its URL.
pub fn place_label(p: &crate::config::Placement) -> String {
    match (&p.datastore, &p.namespace) {
        (crate::config::DatastoreConfig::Local, None) => ".swamp/".into(),
        (crate::config::DatastoreConfig::Local, Some(ns)) => format!(".swamp/{ns}/"),
        _ => escape_controls(&crate::layout::Layout::remote_url(p)).into_owned(),
    }
}

/// The counts that are not zero, each with its words, joined.
pub fn counted(parts: &[(usize, &str)]) -> String {
    parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One conflict of an undo plan, with its fix.
pub(super) fn undo_conflict(out: &mut String, c: &crate::plan::undo::UndoConflict, undoes: &str) {
    use crate::plan::undo::UndoConflict;
    let path = escape_controls(c.path().as_str());
    match c {
        UndoConflict::Changed {
            expected, found, ..
        } => {
            let _ = writeln!(out, "  ✗ {path}: changed since the apply");
            let _ = writeln!(out, "      expected {expected}, found {found}");
            let _ = writeln!(
                out,
                "      fix: move it out of the way (it is kept as it is), then run `swamp undo {}` again",
                undoes
            );
        }
        UndoConflict::TrashGone { .. } => {
            let _ = writeln!(
                out,
                "  ✗ {path}: its copy in the trash is gone (pruned or removed)"
            );
            let _ = writeln!(
                out,
                "      fix: nothing can bring it back from this apply; restore it from another copy"
            );
        }
        UndoConflict::NotUndoable { reason, .. } => {
            let _ = writeln!(out, "  ✗ {path}: {reason}");
        }
        UndoConflict::TrashChanged { found, .. } => {
            let _ = writeln!(
                out,
                "  ✗ {path}: its copy in the trash was changed (found {found})"
            );
            let _ = writeln!(
                out,
                "      fix: check the trash of apply {}; nothing was restored",
                undoes
            );
        }
    }
}

/// `swamp undo --prune`: the applies whose trash goes, and why.
pub fn render_prunes(actions: &[Action], policy: &crate::config::UndoConfig) -> String {
    let mut out = String::new();
    let limit = match policy.max_bytes {
        Some(max) => format!(
            "older than {} day(s), or over {}",
            policy.keep_days,
            human_bytes(max)
        ),
        None => format!("older than {} day(s)", policy.keep_days),
    };
    if actions.is_empty() {
        let _ = writeln!(out, "Nothing to prune: no apply's trash is {limit}.");
        return escape_controls(&out).into_owned();
    }
    let mut t = table();
    t.set_header([
        "#",
        "apply",
        "ran",
        "files",
        "bytes",
        "remote objects",
        "reason",
    ]);
    let mut bytes_total = 0;
    for (i, a) in actions.iter().enumerate() {
        if let Action::PruneTrash(PruneTrash {
            id,
            at,
            files,
            bytes,
            remote_objects,
            ..
        }) = a
        {
            bytes_total += bytes;
            t.add_row(vec![
                Cell::new(i + 1).set_alignment(CellAlignment::Right),
                Cell::new(id),
                Cell::new(at),
                Cell::new(files).set_alignment(CellAlignment::Right),
                Cell::new(human_bytes(*bytes)).set_alignment(CellAlignment::Right),
                Cell::new(remote_objects).set_alignment(CellAlignment::Right),
                Cell::new(a.reason()),
            ]);
        }
    }
    let _ = writeln!(out, "Prune (trash {limit})\n\n{t}\n");
    let _ = writeln!(
        out,
        "Prune: the trash of {} apply(s) ({}); they can no longer be undone.",
        actions.len(),
        human_bytes(bytes_total)
    );
    escape_controls(&out).into_owned()
}
