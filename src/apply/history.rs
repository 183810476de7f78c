//! This apply's record in the team's history (see `journal::record`):
//! written create-only before the first remote change, naming every key
//! the plan changes; rewritten when the apply ends, only over the version
//! it wrote, saying it finished and what version each write made. Both are
//! streamed from the plan to a temp file and uploaded from there.

use std::io::Write;

use crate::config::Placement;
use crate::journal::record::{self, Change, ChangeOp, RecordHead};
use crate::layout::{Layout, TierPath};
use crate::plan::action::{CopyRemote, DeleteRemote, DeleteSourceRemote, Upload};
use crate::plan::undo::{RestoreRemote, SetAsideRemote, UndoAction, UndoPlan};
use crate::plan::{Action, Plan, RemoteExpect};
use crate::state::SyncBase;
use crate::store::{Precondition, RemoteTarget};

use super::StopCause;

/// A record written, to be rewritten when the apply ends.
pub(super) struct Recorded {
    head: RecordHead,
    key: String,
    version: String,
}

/// Who ran the apply, for the record's head.
pub(super) struct Author<'a> {
    pub id: &'a str,
    pub clone: String,
    pub fingerprint: Option<String>,
    pub undoes: Option<String>,
}

impl Author<'_> {
    /// The head of a record of this apply, at `target`, not finished yet.
    pub(super) fn head(self, target: &RemoteTarget, summary: String, no_undo: bool) -> RecordHead {
        RecordHead {
            format: record::FORMAT,
            id: self.id.to_string(),
            at: crate::clock::now_rfc3339_millis(),
            by: crate::lock::who_am_i(),
            clone: self.clone,
            tool: concat!("swamp ", env!("CARGO_PKG_VERSION")).to_string(),
            command: crate::journal::command_line(),
            fingerprint: self.fingerprint,
            summary,
            prefix: target.key_prefix.clone(),
            undoes: self.undoes,
            no_undo,
            finished: false,
            moved: None,
        }
    }
}

/// Writes a record of `head` to `target` (create-only), its changes
/// streamed by `body`.
pub(super) fn start(
    rt: &tokio::runtime::Runtime,
    layout: &Layout,
    target: &RemoteTarget,
    head: RecordHead,
    body: impl FnOnce(&mut dyn Write, &RecordHead) -> std::io::Result<()>,
) -> Result<Recorded, StopCause> {
    let key = Layout::remote_history_key(&target.placement, &head.id);
    let version = upload(
        rt,
        layout,
        target,
        &key,
        &head,
        &Precondition::CreateOnly,
        |w| body(w, &head),
    )?;
    Ok(Recorded { head, key, version })
}

/// Rewrites `recorded` as finished, only over the version written, its
/// changes streamed by `body`. The apply's work is done whatever happens
/// to it: a failure is logged, and the record stays as it was (cut
/// short, to a reader).
pub(super) fn end(
    rt: &tokio::runtime::Runtime,
    layout: &Layout,
    target: &RemoteTarget,
    recorded: Recorded,
    body: impl FnOnce(&mut dyn Write, &RecordHead) -> std::io::Result<()>,
) {
    let Recorded {
        mut head,
        key,
        version,
    } = recorded;
    head.finished = true;
    let pre = Precondition::Matches(version);
    if let Err(e) = upload(rt, layout, target, &key, &head, &pre, |w| body(w, &head)) {
        tracing::warn!(target: "swamp::apply", "the history record was not finished: {e}");
    }
}

/// Writes `plan`'s record to `target` (create-only) when the plan changes
/// any of its objects; `None` when it changes none.
pub(super) fn begin(
    rt: &tokio::runtime::Runtime,
    layout: &Layout,
    plan: &Plan,
    target: &RemoteTarget,
    author: Author<'_>,
) -> Result<Option<Recorded>, StopCause> {
    let counts = Counts::of(plan);
    if counts.is_empty() {
        return Ok(None);
    }
    let mut head = author.head(target, counts.summary(plan.scope.as_str()), plan.no_undo);
    head.moved = super::journaling::remote_move(plan);
    start(rt, layout, target, head, |w, head| {
        write_changes(w, head, plan, None)
    })
    .map(Some)
}

/// Rewrites the record as finished, with the versions the apply's writes
/// made as `base` (the sync base it advanced) holds them.
pub(super) fn finish(
    rt: &tokio::runtime::Runtime,
    layout: &Layout,
    plan: &Plan,
    target: &RemoteTarget,
    recorded: Recorded,
    base: Option<&SyncBase>,
) {
    end(rt, layout, target, recorded, |w, head| {
        write_changes(w, head, plan, base)
    })
}

fn write_changes(
    w: &mut dyn Write,
    head: &RecordHead,
    plan: &Plan,
    base: Option<&SyncBase>,
) -> std::io::Result<()> {
    let of = Changed::of(plan, &head.id, base);
    record::write(w, head, plan.actions.iter().flat_map(|a| of.action(a)))
}

/// Streams a record to a temp file among the records this clone keeps
/// (`Layout::history_cache_dir`) and uploads it on `pre`, returning the
/// version written; the file is then kept as the record at that version.
fn upload(
    rt: &tokio::runtime::Runtime,
    layout: &Layout,
    target: &RemoteTarget,
    key: &str,
    head: &RecordHead,
    pre: &Precondition,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<String, StopCause> {
    // Staged where this clone keeps the records it has read: once
    // written, it is one of them (its next `history` reads it from here).
    let dir = layout.history_cache_dir(&target.placement);
    let io = |source| StopCause::HistoryRecord {
        path: dir.join(format!("{}.json", head.id)),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let mut file = tempfile::NamedTempFile::new_in(&dir).map_err(io)?;
    {
        let mut w = std::io::BufWriter::new(file.as_file_mut());
        body(&mut w).map_err(io)?;
        w.flush().map_err(io)?;
    }
    let sha256 = crate::fsutil::sha256_file(file.path()).map_err(io)?;
    let meta = rt.block_on(target.store.put_file(key, file.path(), &sha256, pre))?;
    // Only a cache: failing to keep it costs a GET later.
    let _ = crate::state::history::keep(&dir, &head.id, &meta.version, file);
    Ok(meta.version)
}

/// How the keys a plan changes are read from its actions, one at a time
/// and in its order: uploads, copies in, deletes, and a move's deletes at
/// its old place (a move's hundred thousand, never held).
struct Changed<'a> {
    target: Placement,
    prefix: String,
    sources: Vec<Placement>,
    /// Not `--no-undo`: what is deleted or replaced goes to the trash.
    kept: bool,
    id: &'a str,
    base: Option<&'a SyncBase>,
}

impl<'a> Changed<'a> {
    /// `base`: the sync base after the apply, which says what version
    /// each write made.
    fn of(plan: &Plan, id: &'a str, base: Option<&'a SyncBase>) -> Changed<'a> {
        let target = plan.target.placement();
        Changed {
            prefix: Layout::remote_prefix(&target),
            target,
            sources: plan.sources.iter().map(|s| s.placement()).collect(),
            kept: !plan.no_undo,
            id,
            base,
        }
    }

    fn at(&self, path: &TierPath) -> String {
        format!("{}{}", self.prefix, path.as_str())
    }

    fn trash(&self, place: &Placement, path: &TierPath) -> Option<String> {
        self.kept
            .then(|| Layout::remote_trash_key(place, self.id, path))
    }

    /// The version the apply's write of `sha256` at `path` made.
    fn after(&self, path: &TierPath, sha256: &crate::digest::Sha256) -> Option<String> {
        self.base
            .and_then(|b| b.files.get(path))
            .filter(|e| e.sha256 == *sha256)
            .map(|e| e.version.to_string())
    }

    fn action<'b>(&'b self, a: &'b Action) -> Box<dyn Iterator<Item = Change> + 'b> {
        let blank = |op, key| Change {
            op,
            key,
            place: None,
            before: None,
            after: None,
            sha256: None,
            size: None,
            trash: None,
        };
        let one = match a {
            Action::Upload(u) => self.upload(u),
            Action::CopyRemote(CopyRemote {
                path, size, sha256, ..
            }) => Change {
                after: self.after(path, sha256),
                sha256: Some(sha256.hex()),
                size: Some(*size),
                ..blank(ChangeOp::Create, self.at(path))
            },
            Action::DeleteRemote(DeleteRemote { path, version, .. }) => Change {
                before: Some(version.to_string()),
                trash: self.trash(&self.target, path),
                ..blank(ChangeOp::Delete, self.at(path))
            },
            Action::DeleteSourceRemote(d) => return self.drained(d),
            _ => return Box::new(std::iter::empty()),
        };
        Box::new(std::iter::once(one))
    }

    fn upload(&self, u: &Upload) -> Change {
        let Upload {
            path,
            size,
            sha256,
            remote,
            ..
        } = u;
        let (op, before, trash) = match remote {
            RemoteExpect::Absent => (ChangeOp::Create, None, None),
            RemoteExpect::Version { version } => (
                ChangeOp::Replace,
                Some(version.to_string()),
                self.trash(&self.target, path),
            ),
        };
        Change {
            op,
            key: self.at(path),
            place: None,
            before,
            after: self.after(path, sha256),
            sha256: Some(sha256.hex()),
            size: Some(*size),
            trash,
        }
    }

    /// A move's deletes at its old place, each kept in that place's trash.
    fn drained<'b>(&'b self, d: &'b DeleteSourceRemote) -> Box<dyn Iterator<Item = Change> + 'b> {
        let Some(from) = self.sources.get(d.source) else {
            return Box::new(std::iter::empty());
        };
        let from_prefix = Layout::remote_prefix(from);
        let url = Layout::remote_url(from);
        Box::new(d.objects.iter().map(move |o| {
            Change {
                op: ChangeOp::Delete,
                key: o.key.to_key(),
                place: Some(url.clone()),
                before: Some(o.version.to_string()),
                after: None,
                sha256: None,
                size: None,
                trash: o
                    .key
                    .path_under(&from_prefix)
                    .and_then(|path| self.trash(from, &path)),
            }
        }))
    }
}

/// Writes an undo's record (it names the apply it reverses) when the
/// undo changes objects at `target`.
pub(super) fn begin_undo(
    rt: &tokio::runtime::Runtime,
    layout: &Layout,
    plan: &UndoPlan,
    target: &RemoteTarget,
    author: Author<'_>,
) -> Result<Option<Recorded>, StopCause> {
    let (mut restored, mut set_aside) = (0, 0);
    for a in &plan.actions {
        match a {
            UndoAction::RestoreRemote(_) => restored += 1,
            UndoAction::SetAsideRemote(_) => set_aside += 1,
            _ => {}
        }
    }
    if restored + set_aside == 0 {
        return Ok(None);
    }
    let what = match &plan.redoes {
        Some(redone) => format!("redo of {redone}"),
        None => format!("undo of {}", plan.undoes),
    };
    let summary = format!("{what}: {restored} object(s) restored, {set_aside} set aside");
    let head = author.head(target, summary, false);
    start(rt, layout, target, head, |w, head| {
        record::write(w, head, undo_changes(plan, &head.id))
    })
    .map(Some)
}

/// Rewrites an undo's record as finished.
pub(super) fn finish_undo(
    rt: &tokio::runtime::Runtime,
    layout: &Layout,
    plan: &UndoPlan,
    target: &RemoteTarget,
    recorded: Recorded,
) {
    end(rt, layout, target, recorded, |w, head| {
        record::write(w, head, undo_changes(plan, &head.id))
    })
}

/// The keys an undo changes: what it restores from the trash, what it
/// takes away again into its own.
fn undo_changes<'a>(plan: &'a UndoPlan, id: &'a str) -> impl Iterator<Item = Change> + 'a {
    let key = |place: &Placement, path: &TierPath| {
        format!("{}{}", Layout::remote_prefix(place), path.as_str())
    };
    plan.actions.iter().filter_map(move |a| match a {
        UndoAction::RestoreRemote(RestoreRemote {
            placement,
            path,
            sha256,
            expect,
            ..
        }) => Some(Change {
            op: match expect {
                Some(_) => ChangeOp::Replace,
                None => ChangeOp::Create,
            },
            key: key(placement, path),
            place: None,
            before: expect.clone(),
            after: None,
            sha256: (!sha256.is_empty()).then(|| sha256.clone()),
            size: None,
            trash: None,
        }),
        UndoAction::SetAsideRemote(SetAsideRemote {
            placement,
            path,
            version,
            ..
        }) => Some(Change {
            op: ChangeOp::Delete,
            key: key(placement, path),
            place: None,
            before: Some(version.clone()),
            after: None,
            sha256: None,
            size: None,
            trash: Some(Layout::remote_trash_key(placement, id, path)),
        }),
        UndoAction::Restore(_) | UndoAction::SetAside(_) | UndoAction::MoveBack(_) => None,
    })
}

/// How many keys a plan creates, replaces and deletes.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    created: usize,
    replaced: usize,
    deleted: usize,
}

impl Counts {
    fn of(plan: &Plan) -> Counts {
        let mut c = Counts::default();
        for a in &plan.actions {
            match a {
                Action::Upload(Upload {
                    remote: RemoteExpect::Absent,
                    ..
                })
                | Action::CopyRemote(_) => c.created += 1,
                Action::Upload(_) => c.replaced += 1,
                Action::DeleteRemote(_) => c.deleted += 1,
                Action::DeleteSourceRemote(d) => c.deleted += d.objects.len(),
                _ => {}
            }
        }
        c
    }

    fn is_empty(&self) -> bool {
        *self == Counts::default()
    }

    /// `push: 3 object(s) created, 1 replaced, 2 deleted` (the zeros left out).
    fn summary(&self, scope: &str) -> String {
        let mut out = format!("{scope}:");
        let counted = [
            (self.created, "created"),
            (self.replaced, "replaced"),
            (self.deleted, "deleted"),
        ];
        for (i, (n, what)) in counted.iter().filter(|(n, _)| *n > 0).enumerate() {
            if i == 0 {
                out.push_str(&format!(" {n} object(s) {what}"));
            } else {
                out.push_str(&format!(", {n} {what}"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_counts_what_the_plan_changes_leaving_out_zeros() {
        let c = Counts {
            created: 3,
            replaced: 0,
            deleted: 2,
        };
        assert_eq!(c.summary("sync"), "sync: 3 object(s) created, 2 deleted");
    }
}
