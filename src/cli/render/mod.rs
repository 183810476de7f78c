//! Renders a plan for people: the [`header`], a [`summary`] table (counts
//! per action kind), the [`actions`] (one row per action, or grouped), the
//! [`conflicts`] with their hashes and diffs, and a closing line; and an
//! [`undo`] plan. This module holds the entry points and what they share
//! (tables as text or Markdown, colours, escaping, byte counts).
//! Deterministic: no clock, no terminal width, no colour unless asked.

mod actions;
mod conflicts;
mod header;
mod settled;
mod summary;
mod undo;

pub use summary::closing_line;
pub use undo::{counted, place_label, render_prunes, render_undo};

use actions::render_actions;
use conflicts::{render_conflicts, render_replaced};
use header::render_header;
use summary::render_summary;

use crate::plan::action::{
    AbortUpload, CopyRemote, DeleteLocal, DeleteRemote, DeleteSourceRemote, Download,
    DropDuplicate, Fetch, MirrorConfig, Move, NoteProgress, PruneRecords, PruneTrash,
    PublishSentinel, RecordBase, RecordDeletes, RelocateTrash, RemovePartial, RemoveTemp,
    RenameLocal, Upload,
};
use crate::plan::conflict::{
    BothChanged, ConfigAlreadyMigrated, DeleteGuard, DeletedAndChanged, DifferentAtTarget,
    NotAFile, Obstacle, ReservedPath, SourceDiverged, TooLarge, Unholdable, Unsupported,
};
use crate::plan::undo::{MoveBack, Restore, RestoreRemote, SetAside};
use std::borrow::Cow;
use std::fmt::Write as _;

use anstyle::AnsiColor;
use comfy_table::{Cell, CellAlignment, LineStyle, Table, TableStyle};
use unicode_width::UnicodeWidthStr;

use crate::plan::Side;
use crate::plan::textdiff::{ContentDiff, DiffBody, DiffFor};
use crate::plan::{Action, Conflict, PlacementInfo, Plan};

/// A time a listing gave (seconds since the epoch; hostile input) as RFC
/// 3339 UTC to the second, `None` for one RFC 3339 cannot write (before
/// 1970 or after the year 9999, where the formatter would fail).
fn listed_time(secs: i64) -> Option<String> {
    if !(0..253_402_300_800).contains(&secs) {
        return None;
    }
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs as u64);
    Some(humantime::format_rfc3339_seconds(at).to_string())
}

fn placement_label(p: &PlacementInfo) -> String {
    let ns = match &p.namespace {
        Some(ns) => format!("namespace {ns}"),
        None => "solo".to_string(),
    };
    format!("{}, {ns}", p.datastore.kind())
}

/// A root's name in an action row: its path when relative to the
/// repository, else `name` (the header gives the path once).
fn row_label(label: &str, name: &str) -> String {
    if label.starts_with('/') || label.starts_with("$SWAMP_HOME") {
        name.to_string()
    } else {
        label.to_string()
    }
}

/// How a plan is drawn on a terminal: fitted to its width (long cells
/// wrap) and with action kinds coloured as Terraform colours them. The
/// default (no width, no colour) is what snapshots and pipes get.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    pub width: Option<u16>,
    pub color: bool,
}

/// The colours of action kinds: the only escape sequences a rendered plan
/// may hold (keys and paths come from strangers, and are escaped).
const GREEN: AnsiColor = AnsiColor::Green;
const RED: AnsiColor = AnsiColor::Red;
const YELLOW: AnsiColor = AnsiColor::Yellow;

/// `kind` in Terraform's colours: green for what is created, red for what
/// is deleted, yellow for what changes or moves; other text as it is.
fn colored_kind(kind: &str) -> Cow<'_, str> {
    match kind_color(kind) {
        Some(color) => {
            let style = anstyle::Style::new().fg_color(Some(color.into()));
            Cow::Owned(format!("{style}{kind}{style:#}"))
        }
        None => Cow::Borrowed(kind),
    }
}

fn kind_color(kind: &str) -> Option<AnsiColor> {
    Some(match kind {
        "upload" | "download" | "fetch" | "mirror-config" | "publish-sentinel" => GREEN,
        "delete-remote"
        | "delete-local"
        | "delete-source-remote"
        | "drop-duplicate"
        | "remove-temp"
        | "remove-partial"
        | "prune-trash"
        | "conflict" => RED,
        "move" | "copy-remote" | "rename-local" => YELLOW,
        _ => return None,
    })
}

/// A header rule and nothing else: quiet, and easy to diff.
const STYLE: TableStyle =
    TableStyle::new().header_separator(LineStyle::none().fill('─').junction('─'));

/// A table in the plan style (shared by every command's tables): no
/// terminal width, no colour (see [`Style::apply`]).
pub fn table() -> Table {
    let mut t = Table::new();
    t.load_style(STYLE);
    t.force_no_tty();
    t
}

/// A table as text without the spaces that pad its last column: nothing
/// trails a line, on a terminal or in a file.
pub fn table_text(t: &Table) -> String {
    let text = t.to_string();
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.pop();
    out
}

impl Style {
    /// Fits `t` to the width, as asked (colour is a cell's, see
    /// `Grid::render`).
    pub fn apply(self, t: &mut Table) {
        if let Some(width) = self.width {
            t.set_width(width)
                .set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
        }
    }
}

/// Human-readable byte counts (binary units).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Shows control characters (a key can hold ESC, which would retitle or
/// clear the terminal) the way `ls -b` does, as `\x1b`; newlines that end
/// the renderer's own lines are kept, and the result is otherwise unchanged.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_control() && c != '\n' {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The plan for people, with every control character escaped.
/// Plans of more actions than this are shown grouped by kind and
/// directory, unless `--detail` asks for every row.
pub const GROUP_ABOVE: usize = 50;

/// The plan for people; long plans grouped (see [`GROUP_ABOVE`]).
pub fn render(plan: &Plan) -> String {
    render_detail(plan, false)
}

/// The plan for people; `detail`: one row per action, however many.
pub fn render_detail(plan: &Plan, detail: bool) -> String {
    render_styled(plan, detail, Style::default())
}

/// The plan for a terminal of `style`. Colour is a cell style of the
/// tables' `action` column; everything else is escaped as it is written
/// (see `render_raw`), so the only escape sequences are those colours.
pub fn render_styled(plan: &Plan, detail: bool, style: Style) -> String {
    let mut text = render_raw(plan, detail, false, style);
    if !style.color {
        // Belt and braces where no colour is wanted: every section is
        // escaped already, and escaping is idempotent.
        text = escape_controls(&text).into_owned();
    }
    if let Some(width) = style.width {
        text = wrap_prose(&text, usize::from(width));
    }
    text
}

/// The plan's prose fitted to a terminal `width`, broken at spaces (a
/// terminal breaks a long line mid-word): the header's lines (up to the
/// first blank line) hang under their text, the undo and closing lines
/// start again at the margin. Tables are fitted already; conflict details
/// and diffs are left as they are.
fn wrap_prose(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut in_header = true;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        if body.is_empty() {
            in_header = false;
        }
        let hang = if in_header && body.starts_with("  ") {
            Some(12)
        } else if ["Plan:", "Undo:", "No changes"]
            .iter()
            .any(|p| body.starts_with(p))
        {
            Some(0)
        } else {
            None
        };
        match hang {
            Some(hang) if UnicodeWidthStr::width(body) > width => {
                out.push_str(&wrap_line(body, width, hang));
                out.push('\n');
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// `line` broken at spaces into lines of at most `width` columns (a word
/// longer than that stays whole), continuation lines indented by `hang`.
fn wrap_line(line: &str, width: usize, hang: usize) -> String {
    let lead = line.len() - line.trim_start_matches(' ').len();
    let mut out = String::with_capacity(line.len() + 16);
    let mut col = 0;
    out.push_str(&line[..lead]);
    col += lead;
    let mut first = true;
    for word in line[lead..].split(' ') {
        let w = UnicodeWidthStr::width(word);
        if !first && col + 1 + w > width && col > hang {
            out.push('\n');
            out.push_str(&" ".repeat(hang));
            col = hang;
        } else if !first {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += w;
        first = false;
    }
    out
}

/// The plan as Markdown, for a CI job to post on a pull request: the
/// header as a list, the summary and the actions as tables (long ones
/// folded), conflicts in a code block, the closing line.
pub fn render_markdown(plan: &Plan, detail: bool) -> String {
    escape_controls(&render_raw(plan, detail, true, Style::default())).into_owned()
}

/// A table's cells, rendered as text (comfy-table, in the plan style) or
/// as a Markdown table.
struct Grid {
    header: &'static [&'static str],
    /// Per column: right-aligned.
    right: &'static [bool],
    /// Per column: shown as code in Markdown (paths, keys).
    code: &'static [bool],
    rows: Vec<Vec<String>>,
}

impl Grid {
    fn new(header: &'static [&'static str], right: &'static [bool], code: &'static [bool]) -> Grid {
        Grid {
            header,
            right,
            code,
            rows: Vec::new(),
        }
    }

    fn render(self, md: bool, style: Style) -> String {
        if md {
            return self.markdown();
        }
        let mut t = table();
        style.apply(&mut t);
        t.set_header(self.header.to_vec());
        let kinds = style
            .color
            .then(|| self.header.iter().position(|h| *h == "action"))
            .flatten();
        for row in self.rows {
            t.add_row(
                row.into_iter()
                    .zip(self.right)
                    .enumerate()
                    .map(|(column, (text, right))| {
                        // Escaped before the table measures it (`\x1b` takes
                        // four columns on the screen, not none); the table
                        // measures a colour as no width.
                        let text = escape_controls(&text);
                        let cell = if Some(column) == kinds {
                            Cell::new(colored_kind(&text))
                        } else {
                            Cell::new(text)
                        };
                        if *right {
                            cell.set_alignment(CellAlignment::Right)
                        } else {
                            cell
                        }
                    })
                    .collect::<Vec<_>>(),
            );
        }
        table_text(&t)
    }

    fn markdown(self) -> String {
        let mut out = String::new();
        out.push('|');
        for h in self.header {
            let _ = write!(out, " {h} |");
        }
        out.push_str("\n|");
        for right in self.right {
            out.push_str(if *right { " ---: |" } else { " --- |" });
        }
        out.push('\n');
        for row in self.rows {
            out.push('|');
            for (text, code) in row.iter().zip(self.code) {
                let cell = if text.is_empty() {
                    String::new()
                } else if *code {
                    md_code(text)
                } else {
                    md_text(text)
                };
                let _ = write!(out, " {} |", cell.replace('|', "\\|"));
            }
            out.push('\n');
        }
        out.pop();
        out
    }
}

/// `text` as a Markdown code span (fenced with more backticks than it
/// holds in a row).
fn md_code(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    if longest > 0 {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

/// `text` with Markdown's inline markup characters escaped.
fn md_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        // Backticks stay: this is swamp's own text, whose backticks
        // quote commands (keys and paths go through `md_code`).
        if "\\*_[]<>#".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The plan as text, every section escaped as it is written: prose here,
/// table cells in `Grid::render` (whose colours are the only escape
/// sequences that remain).
fn render_raw(plan: &Plan, detail: bool, md: bool, style: Style) -> String {
    let mut out = String::new();
    prose(&mut out, |o| render_header(o, plan, detail, md));
    if plan.is_empty() {
        out.push_str("No changes. The datastore matches the configuration.\n");
        return out;
    }
    render_summary(&mut out, plan, detail, md, style);
    if !plan.actions.is_empty() {
        render_actions(&mut out, plan, detail, md, style);
        prose(&mut out, |o| render_replaced(o, plan, md));
    }
    if plan.has_conflicts() {
        prose(&mut out, |o| render_conflicts(o, plan, md));
    }
    let closing = closing_line(plan);
    prose(&mut out, |o| {
        if md {
            match closing.strip_prefix("Plan:") {
                Some(rest) => {
                    let _ = write!(o, "**Plan:**{}", md_text(rest));
                }
                None => o.push_str(&md_text(&closing)),
            }
        } else {
            o.push_str(&closing);
        }
    });
    out.push('\n');
    out
}

/// What `write` writes, escaped, appended to `out`.
fn prose(out: &mut String, write: impl FnOnce(&mut String)) {
    let mut text = String::new();
    write(&mut text);
    out.push_str(&escape_controls(&text));
}

/// A Markdown code fence longer than any run of backticks in `text`.
fn md_fence(text: &str) -> String {
    "`".repeat(
        md_code(text)
            .chars()
            .take_while(|c| *c == '`')
            .count()
            .max(3),
    )
}

/// Markdown action tables longer than this are folded under `<details>`,
/// so a pull-request comment shows the summary first.
const MD_FOLD_ABOVE: usize = 20;

/// One line that says what apply would do, Terraform style.
/// `apply ID: 3 file(s) + 2 remote object(s)`.
pub fn prune_what(id: &str, files: usize, remote_objects: usize) -> String {
    match (files, remote_objects) {
        (f, 0) => format!("apply {id}: {f} file(s)"),
        (0, r) => format!("apply {id}: {r} remote object(s)"),
        (f, r) => format!("apply {id}: {f} file(s) + {r} remote object(s)"),
    }
}

#[cfg(test)]
mod escape_tests {
    use super::escape_controls;

    #[test]
    fn control_characters_are_shown_never_sent() {
        assert_eq!(
            escape_controls("outputs/\u{1b}]0;pwned\u{7}x\tnew\n"),
            "outputs/\\x1b]0;pwned\\x07x\\x09new\n"
        );
        assert!(matches!(
            escape_controls("plain ✓ text\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatastoreConfig;
    use crate::engine::Scope;
    use crate::layout::TierPath;

    #[test]
    fn prose_breaks_at_spaces_and_hangs_under_its_text() {
        let line =
            "Plan: 12 to upload (1.2 MiB), 3 to download (4 KiB), 2 to delete from the remote.";
        let wrapped = wrap_line(line, 40, 0);
        for l in wrapped.lines() {
            assert!(l.chars().count() <= 40, "{l:?}");
        }
        assert_eq!(
            wrapped.replace('\n', " "),
            line,
            "only spaces become breaks"
        );
        let header = "  note      the last sync was with a remote whose id was 1f0e; this sync is a first sync";
        let wrapped = wrap_line(header, 50, 12);
        let mut lines = wrapped.lines();
        assert!(lines.next().unwrap().starts_with("  note      the"));
        for l in lines {
            assert!(
                l.starts_with("            ") && !l.starts_with("             "),
                "{l:?}"
            );
        }
        // A word longer than the width stays whole.
        let long = format!("Plan: {}", "x".repeat(60));
        assert_eq!(
            wrap_line(&long, 20, 0),
            format!("Plan:\n{}", "x".repeat(60))
        );
    }

    #[test]
    fn tables_keep_no_trailing_spaces() {
        let mut t = table();
        t.set_header(["name", "size"]);
        t.add_row(["a-much-longer-name", "1 B"]);
        t.add_row(["b", ""]);
        let text = table_text(&t);
        assert!(text.lines().all(|l| l == l.trim_end()), "{text:?}");
        assert_eq!(text.lines().count(), 4);
    }

    fn both_changed(path: &str) -> String {
        let plan = Plan {
            scope: Scope::Sync,
            target: PlacementInfo {
                datastore: DatastoreConfig::Local,
                namespace: None,
                root: ".swamp".into(),
                dir: "/r/.swamp".into(),
            },
            sources: Vec::new(),
            remote: None,
            actions: Vec::new(),
            no_undo: false,
            diffs: Vec::new(),
            resumes: Vec::new(),
            conflicts: vec![Conflict::BothChanged(BothChanged {
                path: TierPath::parse(path).unwrap(),
                cache_sha256: "a".repeat(64).as_str().into(),
                remote_version: "v2".into(),
                remote_sha256: Some("b".repeat(64).as_str().into()),
                base_sha256: Some("c".repeat(64).as_str().into()),
                remote_modified: None,
            })],
            other_clones: Vec::new(),
            authored: Vec::new(),
        };
        render(&plan)
    }

    #[test]
    fn a_config_conflict_never_suggests_overwriting_published_config_first() {
        let out = both_changed("config/models/web.yaml");
        let fix = out.lines().find(|l| l.contains("fix:")).unwrap();
        assert!(fix.contains("--conflict remote"), "{fix}");
        assert!(
            fix.contains("overwrites what another clone published"),
            "{fix}"
        );
        let out = both_changed("data/web/1/raw");
        let fix = out.lines().find(|l| l.contains("fix:")).unwrap();
        assert!(
            fix.contains("--conflict local|remote|newer|keep-both"),
            "{fix}"
        );
    }
}
