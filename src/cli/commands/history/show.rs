//! `swamp history show ID`: one apply, key by key, as the team's record
//! in the bucket names its changes (what it created, replaced and
//! deleted, the versions before and after, where what it replaced or
//! deleted is kept); an apply of this clone's that changed nothing in a
//! bucket (`data rm`, `data gc`), as its journal names what it set aside.

use std::fmt::Write as _;

use serde_json::json;

use crate::cli::output::{outln, print_json};
use crate::cli::render::{escape_controls, human_bytes, table};
use crate::cli::{CliError, Ctx, Outcome};
use crate::journal::record::{Change, ChangeOp, RecordHead};
use crate::journal::{Journal, Op};

pub(super) fn run(ctx: &Ctx, id: &str) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    if !crate::journal::is_id(id) {
        return Err(crate::journal::UndoError::NoSuchApply { id: id.to_string() }.into());
    }
    if let Some((head, changes)) = crate::engine::history::show(&repo.layout, &repo.config, id)? {
        if ctx.json {
            print_json(&json!({ "apply": head, "changes": changes }));
        } else {
            outln!("{}", render_record(&head, &changes));
        }
        return Ok(Outcome::Success);
    }
    // With what it made (created, moved): everything its undo reverses.
    let journal = Journal::load(&repo.layout, id)?.with_made(&repo.layout)?;
    if ctx.json {
        print_json(&json!({ "apply": journal }));
    } else {
        outln!("{}", render_journal(&journal));
    }
    Ok(Outcome::Success)
}

/// What `show` says of an apply above its table, a record's or a journal's.
struct Header<'a> {
    id: &'a str,
    by: &'a str,
    at: &'a str,
    finished: bool,
    command: &'a str,
    undoes: Option<&'a str>,
}

fn header(out: &mut String, h: Header<'_>) {
    let _ = writeln!(
        out,
        "Apply {} by {} at {}{}",
        h.id,
        escape_controls(h.by),
        // A record's words are a stranger's (any clone, any tool).
        escape_controls(h.at),
        if h.finished { "" } else { " (cut short)" }
    );
    let _ = writeln!(out, "  command   {}", escape_controls(h.command));
    if let Some(u) = h.undoes {
        let _ = writeln!(out, "  undoes    {}", escape_controls(u));
    }
}

/// A record's head and a table of its changes, the plan's words for each
/// (`upload`, `delete-remote`, …), paths relative to the namespace.
pub(super) fn render_record(head: &RecordHead, changes: &[Change]) -> String {
    let mut out = String::new();
    header(
        &mut out,
        Header {
            id: &head.id,
            by: &head.by,
            at: &head.at,
            finished: head.finished,
            command: &head.command,
            undoes: head.undoes.as_deref(),
        },
    );
    let _ = writeln!(
        out,
        "  clone     {} ({})",
        escape_controls(&head.clone),
        escape_controls(&head.tool)
    );
    if let Some(f) = &head.fingerprint {
        let _ = writeln!(out, "  plan      fingerprint {}", escape_controls(f));
    }
    if !changes.is_empty() {
        let mut t = table();
        t.set_header(["#", "action", "path", "size", "before", "after"]);
        for (i, c) in changes.iter().enumerate() {
            let path = match &c.place {
                Some(place) => format!("{place} {}", c.key),
                None => c
                    .key
                    .strip_prefix(&head.prefix)
                    .unwrap_or(&c.key)
                    .to_string(),
            };
            let action = match (c.op, &c.place) {
                (ChangeOp::Create, _) => "upload",
                (ChangeOp::Replace, _) => "upload (replace)",
                (ChangeOp::Delete, None) => "delete-remote",
                (ChangeOp::Delete, Some(_)) => "delete-source-remote",
            };
            let gone = match c.op {
                ChangeOp::Delete => "(removed)",
                _ => "",
            };
            t.add_row(vec![
                (i + 1).to_string(),
                action.to_string(),
                escape_controls(&path).into_owned(),
                c.size.map(human_bytes).unwrap_or_default(),
                escape_controls(c.before.as_deref().unwrap_or("(absent)")).into_owned(),
                escape_controls(c.after.as_deref().unwrap_or(gone)).into_owned(),
            ]);
        }
        let _ = writeln!(out, "\n{t}");
    }
    let kept = changes.iter().filter(|c| c.trash.is_some()).count();
    if kept > 0 {
        let _ = writeln!(
            out,
            "\nKept: {kept} object(s) it deleted or replaced, in the bucket's trash (.swamp/trash/{}/).",
            head.id
        );
    }
    let _ = write!(out, "\n{}", escape_controls(&head.summary));
    out
}

/// A journal of this clone's that no record in a bucket names: what it
/// set aside or restored.
fn render_journal(j: &Journal) -> String {
    let mut out = String::new();
    header(
        &mut out,
        Header {
            id: &j.id,
            by: &j.holder,
            at: &j.at,
            finished: j.finished,
            command: &j.command,
            undoes: j.undoes.as_deref(),
        },
    );
    if !j.entries.is_empty() {
        let mut t = table();
        t.set_header(["#", "action", "path", "size"]);
        for (i, e) in j.entries.iter().enumerate() {
            let action = match e.op {
                Op::SetAside => "set-aside",
                Op::Restored => "restore",
                Op::RemoteSetAside => "set-aside-remote",
                Op::RemoteRestored => "restore-remote",
                Op::Created => "download",
                Op::RemoteCreated => "upload",
                Op::Moved => "move",
            };
            t.add_row(vec![
                (i + 1).to_string(),
                action.to_string(),
                escape_controls(e.path.as_str()).into_owned(),
                if e.size > 0 {
                    human_bytes(e.size)
                } else {
                    String::new()
                },
            ]);
        }
        let _ = writeln!(out, "\n{t}");
    }
    let _ = write!(out, "\n{}", escape_controls(&j.summary));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_show_lists_a_teammates_sync_key_by_key() {
        let head = RecordHead {
            format: crate::journal::record::FORMAT,
            id: "20261206T101500Z-3fa29c".into(),
            at: "2026-12-06T10:15:00.250Z".into(),
            by: "bob@ci-7".into(),
            clone: "5d0c…".into(),
            tool: "swamp 0.1.0".into(),
            command: "swamp datastore sync -y".into(),
            fingerprint: Some("sha256:4f45…".into()),
            summary: "sync: 1 object(s) created, 1 replaced, 1 deleted".into(),
            prefix: "repos/homelab/".into(),
            undoes: None,
            no_undo: false,
            finished: true,
            moved: None,
        };
        let change = |op, path: &str, before: Option<&str>, after: Option<&str>| Change {
            op,
            key: format!("repos/homelab/{path}"),
            place: None,
            before: before.map(Into::into),
            after: after.map(Into::into),
            sha256: None,
            size: (op != ChangeOp::Delete).then_some(2048),
            trash: (op != ChangeOp::Create)
                .then(|| format!("repos/homelab/.swamp/trash/20261206T101500Z-3fa29c/{path}")),
        };
        let changes = vec![
            change(ChangeOp::Create, "outputs/new.yaml", None, Some("e1")),
            change(
                ChangeOp::Replace,
                "outputs/web.yaml",
                Some("e2"),
                Some("e3"),
            ),
            change(ChangeOp::Delete, "data/m/x/1/raw", Some("e4"), None),
        ];
        insta::with_settings!({
            snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"),
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!("history_show_record", render_record(&head, &changes));
        });
    }

    #[test]
    fn a_records_time_and_what_it_undoes_reach_the_terminal_escaped() {
        let head = RecordHead {
            format: crate::journal::record::FORMAT,
            id: "20261206T101500Z-3fa29c".into(),
            at: "2026-12-06\x1b[2J".into(),
            by: "bob@ci-7".into(),
            clone: "c".into(),
            tool: "t".into(),
            command: "swamp undo".into(),
            fingerprint: None,
            summary: "s".into(),
            prefix: "p/".into(),
            undoes: Some("x\x1b]0;owned\x07".into()),
            no_undo: false,
            finished: true,
            moved: None,
        };
        let text = render_record(&head, &[]);
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    }
}
