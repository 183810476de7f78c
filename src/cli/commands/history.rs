//! `swamp history`: the applies that set files aside (their journals in
//! `.swamp/state/trash/`), oldest first, with what `swamp undo ID` would
//! bring back.
use crate::cli::output::outln;

use comfy_table::{Cell, CellAlignment};
use serde_json::json;

use crate::cli::output::print_json;
use crate::cli::render::{escape_controls, human_bytes, table};
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
    let mut t = table();
    ctx.style().apply(&mut t);
    t.set_header(["id", "time", "holder", "command", "summary", "set aside"]);
    for j in &journals {
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
                "pruned".to_string()
            }
            None if j.no_undo => "not kept".to_string(),
            None => human_bytes(j.set_aside_bytes()),
        };
        t.add_row(vec![
            Cell::new(&j.id),
            Cell::new(&j.at),
            Cell::new(escape_controls(&j.holder)),
            Cell::new(escape_controls(&j.command)),
            Cell::new(escape_controls(&summary)),
            Cell::new(kept).set_alignment(CellAlignment::Right),
        ]);
    }
    outln!("{}", crate::cli::render::table_text(&t));
    Ok(Outcome::Success)
}
