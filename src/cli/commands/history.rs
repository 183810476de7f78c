//! `swamp history`: the applies that set files aside (their journals in
//! `.swamp/state/trash/`), with what `swamp undo ID` would bring back,
//! newest first as `git log` and `jj op log` show theirs: the id and time
//! (what `undo ID` needs) are never cut, the rest shortens to the
//! terminal's width; `--json` lists them oldest first, whole.
use crate::cli::output::outln;

use serde_json::json;

use crate::cli::output::print_json;
use crate::cli::render::{Style, escape_controls, human_bytes};
use crate::cli::{CliError, Ctx, Outcome};
use crate::journal::Journal;

pub(super) fn run(ctx: &Ctx) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let journals = Journal::all(&repo.layout)?;
    let walk = crate::journal::Walk::of(&journals);
    if ctx.json {
        let applies: Vec<_> = journals
            .iter()
            .map(|j| {
                json!({
                    "id": j.id,
                    "seq": j.seq,
                    "at": j.at,
                    "holder": j.holder,
                    "command": j.command,
                    "summary": j.summary,
                    "finished": j.finished,
                    "files": j.entries.len(),
                    "bytes_set_aside": j.set_aside_bytes(),
                    "undoable": j.pruned.is_none() && !j.no_undo,
                    "pruned": j.pruned,
                    "undone_by": walk.undone.get(&j.id),
                })
            })
            .collect();
        print_json(&json!({ "applies": applies }));
        return Ok(Outcome::Success);
    }
    if journals.is_empty() {
        outln!(
            "No applies in the history yet: `data rm` and `data gc` set what they remove aside here."
        );
        return Ok(Outcome::Success);
    }
    outln!("{}", render(&journals, &walk, ctx.style()));
    Ok(Outcome::Success)
}

/// The history, newest first, as `jj op log` shows operations: a line
/// with the id, the time (the two `undo ID` needs: never cut), the holder
/// and what is kept, then the command and summary indented below. Each
/// line is shortened to `style`'s width (on a terminal) with `…`.
fn render(journals: &[Journal], walk: &crate::journal::Walk, style: Style) -> String {
    // The id and the time, whole, whatever the width.
    let width = style.width.map(|w| usize::from(w).max(ID_AND_TIME + 1));
    let mut out = String::new();
    for j in journals.iter().rev() {
        let mut summary = if j.finished {
            j.summary.clone()
        } else {
            format!("{} (cut short)", j.summary)
        };
        if let Some(undo) = walk.undone.get(&j.id) {
            summary.push_str(&format!(" (undone by {undo})"));
        }
        let kept = match &j.pruned {
            Some(at) => {
                summary.push_str(&format!(" (trash pruned {at})"));
                "trash pruned".to_string()
            }
            None if j.no_undo => "nothing kept".to_string(),
            None => format!("{} kept", human_bytes(j.set_aside_bytes())),
        };
        let head = format!("{}  {}  {}  {kept}", j.id, j.at, escape_controls(&j.holder));
        let body = format!(
            "    {}: {}",
            escape_controls(&j.command),
            escape_controls(&summary)
        );
        for line in [head, body] {
            out.push_str(&shortened(&line, width));
            out.push('\n');
        }
    }
    out.pop();
    out
}

/// An apply id (23 characters), two spaces and an RFC 3339 time (20).
const ID_AND_TIME: usize = 45;

/// `line` cut to `width` characters, its end marked `…` (whole without
/// a width).
fn shortened(line: &str, width: Option<usize>) -> std::borrow::Cow<'_, str> {
    match width {
        Some(w) if line.chars().count() > w => {
            let kept: String = line.chars().take(w.saturating_sub(1)).collect();
            format!("{kept}…").into()
        }
        _ => line.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(id: &str, at: &str, summary: &str) -> Journal {
        serde_json::from_value(json!({
            "id": id, "seq": 0, "at": at, "holder": "ops@laptop",
            "command": "swamp data gc --keep 1", "summary": summary,
            "finished": true, "entries": [],
        }))
        .unwrap()
    }

    #[test]
    fn on_80_columns_the_newest_apply_comes_first_with_its_id_and_time_whole() {
        let (old, new) = ("20261201T090000Z-000001", "20261201T100000Z-000002");
        let long = "removed m/y: 1 version(s); ".repeat(6);
        let journals = vec![
            applied(old, "2026-12-01T09:00:00Z", "gc: 2 version(s)"),
            applied(new, "2026-12-01T10:00:00Z", &long),
        ];
        let walk = crate::journal::Walk::of(&journals);
        let at = |width| {
            let style = Style {
                width: Some(width),
                color: false,
            };
            render(&journals, &walk, style)
        };
        let text = at(80);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "two lines an apply:\n{text}");
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{text}");
        assert!(
            lines[0].starts_with(&format!("{new}  2026-12-01T10:00:00Z  ops@laptop  ")),
            "the newest first, id and time whole:\n{text}"
        );
        assert!(
            lines[1].starts_with("    swamp data gc --keep 1: removed m/y")
                && lines[1].ends_with('…'),
            "the long summary shortens:\n{text}"
        );
        assert_eq!(lines[1].chars().count(), 80, "{text}");
        assert!(
            lines[2].starts_with(&format!("{old}  2026-12-01T09:00:00Z")),
            "{text}"
        );
        assert_eq!(lines[3], "    swamp data gc --keep 1: gc: 2 version(s)");
        // Narrower than the id and the time: those stay whole.
        let narrow = at(40);
        assert!(
            narrow
                .lines()
                .next()
                .unwrap()
                .starts_with(&format!("{new}  2026-12-01T10:00:00Z")),
            "{narrow}"
        );
        // Not on a terminal: nothing is cut.
        let whole = render(
            &journals,
            &walk,
            Style {
                width: None,
                color: false,
            },
        );
        assert!(whole.contains(&long), "{whole}");
    }
}
