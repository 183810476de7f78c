//! `swamp history`: the team's applies to the namespace (every clone's
//! records in the bucket, `.swamp/history/`) and this clone's own (its
//! journals in `.swamp/state/trash/`, which also hold what it set aside
//! on this machine), newest first as `git log` and `jj op log` show
//! theirs: the id and time (what `undo ID` needs) are never cut, the rest
//! shortens to the terminal's width; `--json` lists them oldest first,
//! whole. `--mine`: this clone's alone, read from this machine only.
//! `history show ID`: what one apply changed, key by key.
use crate::cli::output::{errln, outln};

use serde_json::json;

use crate::cli::args::HistoryCommand;
use crate::cli::output::print_json;
use crate::cli::render::{Style, escape_controls, human_bytes};
use crate::cli::{CliError, Ctx, Outcome};
use crate::journal::Journal;
use crate::journal::record::RecordHead;

pub(super) fn run(
    ctx: &Ctx,
    mine: bool,
    command: Option<HistoryCommand>,
) -> Result<Outcome, CliError> {
    if let Some(HistoryCommand::Show { id }) = command {
        return show::run(ctx, &id);
    }
    let repo = ctx.open_repo()?;
    let journals = Journal::all(&repo.layout)?;
    let team = if mine {
        // This clone's records as kept here: no request.
        crate::engine::history::mine(&repo.layout, &repo.config).ok()
    } else {
        match crate::engine::history::team(&repo.layout, &repo.config) {
            Ok(team) => team,
            Err(e) => {
                errln!(
                    "warning: cannot read the team's history ({e}); showing this clone's applies only"
                );
                None
            }
        }
    };
    if let Some(t) = team.as_ref().filter(|t| !t.unreadable.is_empty()) {
        errln!(
            "warning: {} object(s) under .swamp/history/ are not records this version reads (e.g. {}); skipped",
            t.unreadable.len(),
            escape_controls(&t.unreadable[0])
        );
    }
    let items = merged(&journals, team.as_ref());
    let walk = crate::journal::Walk::of_steps(
        items
            .iter()
            .filter(|i| i.finished)
            .map(|i| (i.id, i.undoes)),
    );
    if ctx.json {
        let applies: Vec<_> = items.iter().map(|i| i.json(&walk)).collect();
        print_json(&json!({ "applies": applies }));
        return Ok(Outcome::Success);
    }
    if items.is_empty() {
        outln!(
            "No applies in the history yet: syncs that change the bucket, `data rm` and `data gc` are listed here."
        );
        return Ok(Outcome::Success);
    }
    outln!("{}", render(&items, &walk, ctx.style()));
    Ok(Outcome::Success)
}

mod show;

/// One apply as the history shows it: this clone's journal of it, the
/// team's record of it, or both.
struct Item<'a> {
    id: &'a str,
    /// To the second, as shown.
    at: std::borrow::Cow<'a, str>,
    by: &'a str,
    command: &'a str,
    summary: &'a str,
    finished: bool,
    undoes: Option<&'a str>,
    /// This clone ran it.
    mine: bool,
    journal: Option<&'a Journal>,
    record: Option<&'a RecordHead>,
}

impl<'a> Item<'a> {
    fn of_journal(j: &'a Journal) -> Item<'a> {
        Item {
            id: &j.id,
            at: j.at.as_str().into(),
            by: &j.holder,
            command: &j.command,
            summary: &j.summary,
            finished: j.finished,
            undoes: j.undoes.as_deref(),
            mine: true,
            journal: Some(j),
            record: None,
        }
    }

    fn of_record(r: &'a RecordHead, me: &str) -> Item<'a> {
        Item {
            id: &r.id,
            at: to_the_second(&r.at),
            by: &r.by,
            command: &r.command,
            summary: &r.summary,
            finished: r.finished,
            undoes: r.undoes.as_deref(),
            mine: r.clone == me,
            journal: None,
            record: Some(r),
        }
    }

    /// The entry as `--json` lists it: this clone's journal's fields (as
    /// before the team's history), then who ran it and the record's.
    fn json(&self, walk: &crate::journal::Walk) -> serde_json::Value {
        let mut doc = serde_json::Map::new();
        let mut put = |k: &str, v: serde_json::Value| {
            doc.insert(k.to_string(), v);
        };
        put("id", json!(self.id));
        if let Some(j) = self.journal {
            put("seq", json!(j.seq));
        }
        put("at", json!(self.at));
        put("holder", json!(self.by));
        put("command", json!(self.command));
        put("summary", json!(self.summary));
        put("finished", json!(self.finished));
        if let Some(j) = self.journal {
            put("files", json!(j.entries.len()));
            put("bytes_set_aside", json!(j.set_aside_bytes()));
            put("undoable", json!(j.pruned.is_none() && !j.no_undo));
            put("pruned", json!(j.pruned));
        }
        put("undone_by", json!(walk.undone.get(self.id)));
        put("by", json!(self.by));
        put("mine", json!(self.mine));
        if let Some(u) = self.undoes {
            put("undoes", json!(u));
        }
        if let Some(r) = self.record {
            put("clone", json!(r.clone));
            put("tool", json!(r.tool));
            put("fingerprint", json!(r.fingerprint));
            put("in_bucket", json!(true));
        }
        serde_json::Value::Object(doc)
    }

    /// What is kept to undo it: on this machine, in the bucket.
    fn kept(&self) -> String {
        let Some(j) = self.journal else {
            return match self.record {
                Some(r) if r.no_undo => "nothing kept".to_string(),
                _ => "recorded in the bucket".to_string(),
            };
        };
        if j.pruned.is_some() {
            return "trash pruned".to_string();
        }
        if j.no_undo {
            return "nothing kept".to_string();
        }
        let remote = j
            .entries
            .iter()
            .filter(|e| e.op == crate::journal::Op::RemoteSetAside)
            .count();
        let local = j
            .entries
            .iter()
            .any(|e| e.op == crate::journal::Op::SetAside);
        match (j.set_aside_bytes(), remote) {
            // What it made or moved is listed, and undone without a trash.
            (_, 0) if !local && j.made.is_some() => "undoable".to_string(),
            (_, 0) if !local => "nothing kept".to_string(),
            (_, 0) => format!("{} kept", human_bytes(j.set_aside_bytes())),
            (0, n) => format!("{n} object(s) kept in the bucket"),
            (bytes, n) => format!("{} kept, {n} object(s) in the bucket", human_bytes(bytes)),
        }
    }
}

/// This clone's journals and the team's records, one item per apply,
/// oldest first (by time; this clone's own of one second in their order).
fn merged<'a>(
    journals: &'a [Journal],
    team: Option<&'a crate::engine::history::TeamHistory>,
) -> Vec<Item<'a>> {
    let mut items: Vec<Item<'a>> = journals.iter().map(Item::of_journal).collect();
    if let Some(team) = team {
        let local: std::collections::HashMap<&str, usize> =
            items.iter().enumerate().map(|(i, it)| (it.id, i)).collect();
        let mut more = Vec::new();
        for r in &team.records {
            match local.get(r.id.as_str()) {
                // The journal says what is kept here; the record who ran
                // it and what it changed in the bucket.
                Some(&i) => {
                    items[i].record = Some(r);
                    items[i].summary = &r.summary;
                }
                None => more.push(Item::of_record(r, &team.me)),
            }
        }
        more.sort_by_cached_key(|i| (i.time(), i.id));
        return interleaved(items, more);
    }
    items
}

/// This clone's applies in their order (journals are numbered) with the
/// team's others placed among them by time (a record's to the
/// millisecond, a journal's to the second).
fn interleaved<'a>(mine: Vec<Item<'a>>, theirs: Vec<Item<'a>>) -> Vec<Item<'a>> {
    let mut out = Vec::with_capacity(mine.len() + theirs.len());
    let mut theirs = theirs.into_iter().peekable();
    for item in mine {
        let at = item.time();
        while let Some(t) = theirs.next_if(|t| t.time() < at) {
            out.push(t);
        }
        out.push(item);
    }
    out.extend(theirs);
    out
}

impl Item<'_> {
    /// When it ran: its record's time (to the millisecond) if any.
    fn time(&self) -> std::time::SystemTime {
        let at = self.record.map_or(&*self.at, |r| r.at.as_str());
        humantime::parse_rfc3339(at).unwrap_or(std::time::UNIX_EPOCH)
    }
}

/// The history, newest first, as `jj op log` shows operations: a line
/// with the id, the time (the two `undo ID` needs: never cut), who ran it
/// and what is kept, then the command and summary indented below. Each
/// line is shortened to `style`'s width (on a terminal) with `…`.
fn render(items: &[Item<'_>], walk: &crate::journal::Walk, style: Style) -> String {
    // The id and the time, whole, whatever the width.
    let width = style.width.map(|w| usize::from(w).max(ID_AND_TIME + 1));
    let mut out = String::new();
    for item in items.iter().rev() {
        let mut summary = if item.finished {
            item.summary.to_string()
        } else {
            format!("{} (cut short)", item.summary)
        };
        if let Some(undo) = walk.undone.get(item.id) {
            summary.push_str(&format!(" (undone by {undo})"));
        }
        if let Some(at) = item.journal.and_then(|j| j.pruned.as_ref()) {
            summary.push_str(&format!(" (trash pruned {at})"));
        }
        let head = format!(
            "{}  {}  {}  {}",
            item.id,
            escape_controls(&item.at),
            escape_controls(item.by),
            item.kept()
        );
        let body = format!(
            "    {}: {}",
            escape_controls(item.command),
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

/// An RFC 3339 time without its fraction of a second (as the history
/// shows times).
fn to_the_second(at: &str) -> std::borrow::Cow<'_, str> {
    match (at.find('.'), at.ends_with('Z')) {
        (Some(dot), true) => format!("{}Z", &at[..dot]).into(),
        _ => at.into(),
    }
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
        let items = merged(&journals, None);
        let at = |width| {
            let style = Style {
                width: Some(width),
                color: false,
            };
            render(&items, &walk, style)
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
            &items,
            &walk,
            Style {
                width: None,
                color: false,
            },
        );
        assert!(whole.contains(&long), "{whole}");
    }
}
