//! Renders a plan for people: a summary table (counts per action kind),
//! one row per action, the conflicts with their hashes and diffs, and a
//! closing line. Deterministic: no clock, no terminal width, no colour.

use std::borrow::Cow;
use std::fmt::Write as _;

use comfy_table::{Cell, CellAlignment, LineStyle, Table, TableStyle};
use unicode_width::UnicodeWidthStr;

use crate::plan::action::Side;
use crate::plan::textdiff::{ContentDiff, DiffBody, DiffFor};
use crate::plan::{Action, Conflict, PlacementInfo, Plan};

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
const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";

/// Terraform's colours: green for what is created, red for what is
/// deleted, yellow for what changes or moves.
fn kind_color(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "upload" | "download" | "fetch" | "mirror-config" | "publish-sentinel" => GREEN,
        "delete-remote"
        | "delete-local"
        | "delete-source-remote"
        | "drop-duplicate"
        | "remove-temp"
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
    /// Fits `t` to the width, as asked (colour is added to the rendered
    /// text, see `color_kinds`).
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

/// The plan for a terminal of `style`.
pub fn render_styled(plan: &Plan, detail: bool, style: Style) -> String {
    let plain = Style {
        color: false,
        ..style
    };
    let mut text = escape_controls(&render_raw(plan, detail, false, plain)).into_owned();
    if let Some(width) = style.width {
        text = wrap_prose(&text, usize::from(width));
    }
    if style.color {
        color_kinds(&text)
    } else {
        text
    }
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

/// Colours the action kinds in the tables of `text`, which is escaped
/// already: the only escape sequences in the result are swamp's own, and
/// only on the cells of an `action` column.
fn color_kinds(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    // The character column of the `action` header of the table being read.
    let mut column: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        if body.trim().is_empty() {
            column = None;
        } else if column.is_none()
            && body.starts_with(' ')
            && !body.starts_with("  ")
            && let Some(at) = body.find(" action ")
        {
            column = Some(body[..at].chars().count() + 1);
            out.push_str(line);
            continue;
        }
        let colored = column.and_then(|col| {
            let start = body.char_indices().nth(col)?.0;
            let word = body[start..].split(' ').next()?;
            let color = kind_color(word)?;
            let end = start + word.len();
            Some(format!(
                "{}{color}{word}{RESET}{}",
                &body[..start],
                &line[end..]
            ))
        });
        match colored {
            Some(c) => out.push_str(&c),
            None => out.push_str(line),
        }
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
        for row in self.rows {
            t.add_row(
                row.into_iter()
                    .zip(self.right)
                    .map(|(text, right)| {
                        // Escaped before the table measures it (`\x1b` takes
                        // four columns on the screen, not none).
                        let cell = Cell::new(escape_controls(&text));
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

/// Actions of one kind, one reason and one side-to-side under one directory.
struct Group {
    kind: &'static str,
    under: String,
    /// Whether the group counts files (an action without a path does not).
    files: bool,
    count: usize,
    bytes: Option<u64>,
    from: String,
    to: String,
    reason: &'static str,
}

/// The most groups a grouped plan lists: with its header, summary, note
/// and closing line, the plan stays within 60 lines whatever the layout.
const MAX_GROUPS: usize = 30;

/// How far below its tier a group's directory reaches: the tier and the
/// level below it (`outputs/deploy/`), then rolled up to the tier alone
/// (`data/`, when a thousand names are too many to list), then to
/// nothing (one group per kind and reason, actions without a path too).
const GROUP_DEPTHS: [usize; 3] = [2, 1, 0];

/// The directory of `path` shown at `depth` (at most `depth` of its
/// directories, never its file name): `outputs/deploy/`, `data/`. A slice
/// of `path`: a million moves are grouped without a string made for each.
fn dir_at(path: &str, depth: usize) -> &str {
    let mut end = 0;
    for (taken, (i, _)) in path.match_indices('/').enumerate() {
        if taken == depth {
            break;
        }
        end = i + 1;
    }
    &path[..end]
}

/// An action's row: its path (or what it is about), where from and where
/// to. Borrowed where it can be (a move's path, a root's label).
type Row<'a> = (Cow<'a, str>, Cow<'a, str>, Cow<'a, str>);

/// Groups at one depth, given up once there are more than [`MAX_GROUPS`].
struct Grouping {
    depth: usize,
    groups: Vec<Group>,
    index: std::collections::HashMap<(&'static str, &'static str, String, String, String), usize>,
    /// The group the last action joined: a plan's actions come sorted by
    /// path, so the next one most often joins it too.
    last: Option<usize>,
    overflowed: bool,
}

impl Grouping {
    fn add(&mut self, a: &Action, path: &str, from: &str, to: &str) {
        if self.overflowed {
            return;
        }
        let under = match a.path() {
            Some(p) => dir_at(p.as_str(), self.depth),
            // Rolled all the way up, actions without a path group too.
            None if self.depth == 0 => "",
            None => path,
        };
        let bytes = a.bytes();
        let own = a.path().is_none() && self.depth > 0;
        let same = |g: &Group| {
            g.kind == a.kind()
                && g.reason == a.reason()
                && g.under == under
                && g.from == from
                && g.to == to
        };
        let key = || (a.kind(), a.reason(), from.into(), to.into(), under.into());
        let found = match self.last {
            _ if own => None,
            Some(g) if same(&self.groups[g]) => Some(g),
            _ => self.index.get(&key()).copied(),
        };
        match found {
            Some(g) => {
                self.last = Some(g);
                let g = &mut self.groups[g];
                g.count += 1;
                g.bytes = match (g.bytes, bytes) {
                    (Some(x), Some(y)) => Some(x + y),
                    _ => None,
                };
                g.files |= a.path().is_some();
            }
            None => {
                self.index.insert(key(), self.groups.len());
                self.last = Some(self.groups.len());
                self.groups.push(Group {
                    kind: a.kind(),
                    under: under.to_string(),
                    files: a.path().is_some(),
                    count: 1,
                    bytes,
                    from: from.to_string(),
                    to: to.to_string(),
                    reason: a.reason(),
                });
                if self.groups.len() > MAX_GROUPS && self.depth > 0 {
                    // Too many to list at this depth: a shallower one shows.
                    self.overflowed = true;
                    self.groups = Vec::new();
                    self.index = Default::default();
                    self.last = None;
                }
            }
        }
    }
}

/// Rows grouped by (kind, reason, from, to, directory), in the order each
/// group first appears, at the deepest of [`GROUP_DEPTHS`] that keeps
/// them to [`MAX_GROUPS`]; and that depth. One pass: the rows of a
/// 100,000-action plan are never held.
fn group_rows<'a>(rows: impl Iterator<Item = (usize, &'a Action, Row<'a>)>) -> (Vec<Group>, usize) {
    let mut at: Vec<Grouping> = GROUP_DEPTHS
        .iter()
        .map(|&depth| Grouping {
            depth,
            groups: Vec::new(),
            index: Default::default(),
            last: None,
            overflowed: false,
        })
        .collect();
    for (_, a, (path, from, to)) in rows {
        for g in &mut at {
            g.add(a, &path, &from, &to);
        }
    }
    let chosen = at
        .into_iter()
        .find(|g| !g.overflowed)
        .expect("depth 0 never gives up");
    (chosen.groups, chosen.depth)
}

fn render_raw(plan: &Plan, detail: bool, md: bool, style: Style) -> String {
    let mut out = String::new();
    render_header(&mut out, plan, detail, md);
    if plan.is_empty() {
        out.push_str("No changes. The datastore matches the configuration.\n");
        return out;
    }
    render_summary(&mut out, plan, md, style);
    if !plan.actions.is_empty() {
        render_actions(&mut out, plan, detail, md, style);
        render_replaced(&mut out, plan, md);
    }
    if plan.has_conflicts() {
        render_conflicts(&mut out, plan, md);
    }
    let closing = closing_line(plan);
    if md {
        match closing.strip_prefix("Plan:") {
            Some(rest) => {
                let _ = write!(out, "**Plan:**{}", md_text(rest));
            }
            None => out.push_str(&md_text(&closing)),
        }
    } else {
        out.push_str(&closing);
    }
    out.push('\n');
    out
}

/// The header: scope, target and sources, and notes on what the remote
/// holds that the plan leaves alone.
fn render_header(out: &mut String, plan: &Plan, detail: bool, md: bool) {
    let target = plan.target.shown();
    // A header line: `  label     text` for a terminal, a list item in
    // Markdown. `code` is a path or key, set as code in Markdown.
    let head = |out: &mut String, label: &str, code: &str, text: &str| {
        if md {
            let code = if code.is_empty() {
                String::new()
            } else {
                format!("{} ", md_code(code))
            };
            let _ = writeln!(
                out,
                "- **{}** {code}{}",
                label.trim(),
                md_text(text.trim_start())
            );
        } else {
            let _ = writeln!(out, "  {label:<9} {code}{text}");
        }
    };
    if md {
        let _ = writeln!(out, "### swamp plan (scope: {})\n", plan.scope);
    } else {
        let _ = writeln!(out, "Plan (scope: {})", plan.scope);
    }
    let sep = if md { "" } else { "  " };
    head(
        out,
        "target",
        &target,
        &format!("{sep}({})", placement_label(&plan.target)),
    );
    for (i, s) in plan.sources.iter().enumerate() {
        head(
            out,
            &format!("source {i}"),
            &s.shown(),
            &format!("{sep}({})", placement_label(s)),
        );
    }
    remote_notes(out, plan, detail, &head);
    out.push('\n');
}

/// The header's notes on the remote: a base set aside, files in the
/// remote only, what the sync skips.
fn remote_notes(
    out: &mut String,
    plan: &Plan,
    detail: bool,
    head: &dyn Fn(&mut String, &str, &str, &str),
) {
    if let Some(why) = plan.remote.as_ref().and_then(|r| r.base_reset.as_deref()) {
        head(
            out,
            "note",
            "",
            &format!("{why}; this sync is a first sync: nothing is deleted"),
        );
    }
    if let Some(n) = plan
        .remote
        .as_ref()
        .map(|r| r.unhydrated)
        .filter(|n| *n > 0)
    {
        head(
            out,
            "note",
            "",
            &format!(
                "{n} file(s) in the remote only (hydration = lazy): each is fetched on first read, all with `swamp datastore sync --pull --hydrate`"
            ),
        );
    }
    if let Some(remote) = &plan.remote {
        if remote.folder_markers > 0 {
            head(
                out,
                "skipped",
                "",
                &format!(
                    "{} folder marker(s) (zero-byte keys ending in `/`): never synced, never deleted",
                    remote.folder_markers
                ),
            );
        }
        for u in &remote.unmanaged {
            head(
                out,
                "skipped",
                &format!("{}{}", remote.key_prefix, u.name),
                &format!(
                    " ({} object(s)): in no tier swamp syncs; never synced, never deleted",
                    u.objects
                ),
            );
        }
        skipped_local_notes(out, &remote.skipped_local, detail, head);
    }
    resume_notes(out, plan, head);
}

/// Most resumed transfers the header names one by one.
const RESUMES_SHOWN: usize = 5;

/// One header line per transfer that continues an interrupted one (a
/// few, then how many more), with what is left of it.
fn resume_notes(out: &mut String, plan: &Plan, head: &dyn Fn(&mut String, &str, &str, &str)) {
    for r in plan.resumes.iter().take(RESUMES_SHOWN) {
        head(
            out,
            "resume",
            r.path.as_str(),
            &format!(
                " ({}, {} of {} left)",
                match r.transfer {
                    crate::plan::resume::Transfer::Upload => "upload",
                    crate::plan::resume::Transfer::Download => "download",
                },
                human_bytes(r.left()),
                human_bytes(r.size)
            ),
        );
    }
    if plan.resumes.len() > RESUMES_SHOWN {
        let left: u64 = plan.resumes.iter().map(|r| r.left()).sum();
        head(
            out,
            "resume",
            "",
            &format!(
                "{} transfer(s) in all continue where an interrupted run stopped ({} left)",
                plan.resumes.len(),
                human_bytes(left)
            ),
        );
    }
}

/// What in the cache the sync leaves alone: one line with the count (and
/// an example), or with `--detail` one line each, as rclone notes each
/// link it skips.
fn skipped_local_notes(
    out: &mut String,
    skipped: &[crate::state::Obstacle],
    detail: bool,
    head: &dyn Fn(&mut String, &str, &str, &str),
) {
    use crate::state::ObstacleKind;
    let what = |o: &crate::state::Obstacle| match &o.link {
        Some(link) => format!("{} to {link}", o.kind.noun()),
        None => o.kind.noun().to_string(),
    };
    if detail {
        for o in skipped {
            head(
                out,
                "skipped",
                &o.path,
                &format!(" ({}): in the cache; never synced, never deleted", what(o)),
            );
        }
        return;
    }
    let Some(first) = skipped.first() else {
        return;
    };
    let count = |kind| skipped.iter().filter(|o| o.kind == kind).count();
    let kinds: Vec<String> = [
        (ObstacleKind::Symlink, "symlink(s)"),
        (ObstacleKind::SpecialFile, "special file(s)"),
        (ObstacleKind::BadName, "name(s) no key can hold"),
    ]
    .into_iter()
    .map(|(kind, noun)| (count(kind), noun))
    .filter(|(n, _)| *n > 0)
    .map(|(n, noun)| format!("{n} {noun}"))
    .collect();
    head(
        out,
        "skipped",
        "",
        &format!(
            "{} path(s) in the cache ({}), e.g. {} ({}): never synced, never deleted; --detail lists each",
            skipped.len(),
            kinds.join(", "),
            first.path,
            what(first)
        ),
    );
}

/// The summary table (actions by kind, with bytes) and the undo line.
fn render_summary(out: &mut String, plan: &Plan, md: bool, style: Style) {
    let s = plan.summary();
    let mut summary = Grid::new(
        &["action", "count", "bytes"],
        &[false, true, true],
        &[false, false, false],
    );
    let rows: [(&str, usize, Option<u64>); 24] = [
        ("relocate-trash", s.relocate_trash, None),
        ("remove-temp", s.remove_temp, None),
        ("abort-upload", s.abort_upload, None),
        ("mirror-config", s.mirror_config, None),
        ("move", s.moves, Some(s.bytes_to_move)),
        ("drop-duplicate", s.drop_duplicate, None),
        ("fetch", s.fetch, None),
        ("copy-remote", s.copy_remote, None),
        ("delete-source-remote", s.delete_source_remote, None),
        ("upload", s.upload, Some(s.bytes_to_upload)),
        ("download", s.download, Some(s.bytes_to_download)),
        ("delete-remote", s.delete_remote, None),
        ("delete-local", s.delete_local, None),
        ("rename-local", s.rename_local, None),
        ("record-base", s.record_base, None),
        ("record-deletes", s.record_deletes, None),
        ("note-progress", s.note_progress, None),
        ("prune-records", s.prune_records, None),
        ("invalidate-catalog", s.invalidate_catalog, None),
        ("finish-migration", s.finish_migration, None),
        ("publish-sentinel", s.publish_sentinel, None),
        ("prune-trash", s.prune_trash, Some(s.bytes_to_prune)),
        ("skipped", s.skipped + s.skipped_local, None),
        ("conflict", s.conflicts, None),
    ];
    for (name, count, bytes) in rows.into_iter().filter(|r| r.1 > 0) {
        summary.rows.push(vec![
            name.to_string(),
            count.to_string(),
            bytes.map(human_bytes).unwrap_or_default(),
        ]);
    }
    let _ = writeln!(out, "{}\n", summary.render(md, style));
    if let Some(line) = undo_line(plan, &s) {
        let _ = writeln!(out, "{line}\n");
    }
}

/// The table of actions: one row each, or grouped by kind and directory
/// when there are many (folded in Markdown).
fn render_actions(out: &mut String, plan: &Plan, detail: bool, md: bool, style: Style) {
    let target = plan.target.shown();
    // In the rows a root is named by its path when that is short (in
    // the repository), else by its name in the header ("target",
    // "source 1"), not by an absolute path repeated in every row.
    let target = row_label(&target, "target");
    let source_labels: Vec<String> = (0..plan.sources.len())
        .map(|i| row_label(&plan.sources[i].shown(), &format!("source {i}")))
        .collect();
    // Made one at a time as they are shown or grouped: the rows of a
    // 100,000-action plan are never held at once.
    let n_actions = plan.actions.len();
    let rows = plan
        .actions
        .iter()
        .enumerate()
        .map(|(i, a)| (i, a, action_row(a, plan, &target, &source_labels)));
    let (grid, note) = if detail || n_actions <= GROUP_ABOVE {
        let mut actions = Grid::new(
            &["#", "action", "path", "from", "to", "reason"],
            &[true, false, false, false, false, false],
            &[false, false, true, true, true, false],
        );
        for (i, a, (path, from, to)) in rows {
            actions.rows.push(vec![
                (i + 1).to_string(),
                a.kind().to_string(),
                path.into_owned(),
                from.into_owned(),
                to.into_owned(),
                resumed_reason(plan, a),
            ]);
        }
        (actions, None)
    } else {
        grouped_grid(rows, n_actions)
    };
    let folded = md && grid.rows.len() > MD_FOLD_ABOVE;
    if folded {
        let _ = writeln!(out, "<details><summary>{n_actions} action(s)</summary>\n");
    }
    let _ = writeln!(out, "{}\n", grid.render(md, style));
    if let Some(note) = note {
        let _ = writeln!(out, "{note}\n");
    }
    if folded {
        out.push_str("</details>\n\n");
    }
}

/// An action's reason, and for a transfer that continues an interrupted
/// one, what is left of it.
fn resumed_reason(plan: &Plan, a: &Action) -> String {
    let resumed = match a {
        Action::Upload { path, .. } | Action::Download { path, .. } if !plan.resumes.is_empty() => {
            plan.resumes.iter().find(|r| &r.path == path)
        }
        _ => None,
    };
    match resumed {
        Some(r) => format!(
            "{}; resume ({} of {} left)",
            a.reason(),
            human_bytes(r.left()),
            human_bytes(r.size)
        ),
        None => a.reason().to_string(),
    }
}

/// The actions grouped by kind and directory (a plan too long to list),
/// and the note that says so.
fn grouped_grid<'a>(
    rows: impl Iterator<Item = (usize, &'a Action, Row<'a>)>,
    n_actions: usize,
) -> (Grid, Option<String>) {
    let (groups, depth) = group_rows(rows);
    let mut actions = Grid::new(
        &["action", "under", "files", "bytes", "from", "to", "reason"],
        &[false, false, true, true, false, false, false],
        &[false, true, false, false, true, true, false],
    );
    let n = groups.len();
    for g in groups {
        actions.rows.push(vec![
            g.kind.to_string(),
            g.under,
            if g.files {
                g.count.to_string()
            } else {
                String::new()
            },
            g.bytes.map(human_bytes).unwrap_or_default(),
            g.from,
            g.to,
            g.reason.to_string(),
        ]);
    }
    (
        actions,
        Some(format!(
            "{n_actions} actions in {n} group(s) by kind and {}; `--detail` lists every one (and `--json` always does).",
            match depth {
                2 => "directory",
                1 => "tier (their directories are too many to list)",
                _ => "reason (their directories are too many to list)",
            }
        )),
    )
}

/// An action's row in the plan table: its path (or what it is about),
/// where from and where to. `target` and `source_label` name the roots.
fn action_row<'a>(
    a: &'a Action,
    plan: &'a Plan,
    target: &'a str,
    source_labels: &'a [String],
) -> Row<'a> {
    match a {
        Action::Move { .. }
        | Action::DropDuplicate { .. }
        | Action::InvalidateCatalog
        | Action::FinishMigration
        | Action::RemoveTemp { .. }
        | Action::MirrorConfig { .. }
        | Action::PruneTrash { .. }
        | Action::RelocateTrash { .. } => local_row(a, target, source_labels),
        Action::Upload { .. }
        | Action::Download { .. }
        | Action::DeleteLocal { .. }
        | Action::DeleteRemote { .. }
        | Action::RenameLocal { .. }
        | Action::Fetch { .. }
        | Action::CopyRemote { .. }
        | Action::DeleteSourceRemote { .. } => transfer_row(a, plan, target),
        Action::RecordBase { .. }
        | Action::RecordDeletes { .. }
        | Action::NoteProgress { .. }
        | Action::PruneRecords { .. }
        | Action::PublishSentinel { .. } => record_row(a),
        Action::AbortUpload { path, .. } => (
            path.as_str().into(),
            "remote (unfinished upload)".into(),
            "(aborted)".into(),
        ),
    }
}

/// Rows of moves and local bookkeeping.
fn local_row<'a>(a: &'a Action, target: &'a str, source_labels: &'a [String]) -> Row<'a> {
    match a {
        Action::Move { path, source, .. } => (
            path.as_str().into(),
            source_labels[*source].as_str().into(),
            target.into(),
        ),
        Action::DropDuplicate { path, source, .. } => (
            path.as_str().into(),
            source_labels[*source].as_str().into(),
            "(removed)".into(),
        ),
        Action::InvalidateCatalog => (".swamp/data/_catalog.db".into(), "".into(), "".into()),
        Action::FinishMigration => (".swamp.toml".into(), "".into(), "".into()),
        Action::RemoveTemp { path, source, .. } => (
            path.as_str().into(),
            match source {
                None => target.into(),
                Some(i) => source_labels[*i].as_str().into(),
            },
            "(removed)".into(),
        ),
        Action::MirrorConfig { path, .. } => (
            path.as_str().into(),
            path.as_str()
                .strip_prefix("config/")
                .unwrap_or(path.as_str())
                .to_string()
                .into(),
            "cache".into(),
        ),
        Action::PruneTrash {
            id,
            at,
            files,
            remote_objects,
            ..
        } => (
            prune_what(id, *files, *remote_objects).into(),
            format!("trash of {at}").into(),
            "(removed)".into(),
        ),
        Action::RelocateTrash {
            source,
            applies,
            files,
            ..
        } => (
            format!(
                ".swamp-trash/ ({files} file(s) of {} apply(s))",
                applies.len()
            )
            .into(),
            match source {
                None => target.into(),
                Some(i) => source_labels[*i].as_str().into(),
            },
            "cache trash".into(),
        ),
        _ => unreachable!("dispatched above"),
    }
}

/// Rows of transfers and deletes between cache and remotes.
fn transfer_row<'a>(a: &'a Action, plan: &'a Plan, target: &'a str) -> Row<'a> {
    match a {
        Action::Upload { path, .. } => (path.as_str().into(), "cache".into(), "remote".into()),
        Action::Download { path, .. } => (path.as_str().into(), "remote".into(), "cache".into()),
        Action::DeleteLocal { path, .. } => {
            (path.as_str().into(), "cache".into(), "(removed)".into())
        }
        Action::DeleteRemote { path, .. } => {
            (path.as_str().into(), "remote".into(), "(removed)".into())
        }
        Action::RenameLocal { path, to, .. } => {
            (path.as_str().into(), "cache".into(), to.to_string().into())
        }
        Action::Fetch { path, source, .. } => (
            path.as_str().into(),
            plan.sources[*source]
                .remote_label()
                .map_or("remote".into(), Cow::Owned),
            target.into(),
        ),
        Action::CopyRemote { path, source, .. } => (
            path.as_str().into(),
            plan.sources[*source]
                .remote_label()
                .map_or("remote".into(), Cow::Owned),
            plan.remote
                .as_ref()
                .map(|r| r.url.clone())
                .map_or("remote".into(), Cow::Owned),
        ),
        Action::DeleteSourceRemote { source, objects } => (
            format!("{} object(s)", objects.len()).into(),
            plan.sources[*source]
                .remote_label()
                .map_or("remote".into(), Cow::Owned),
            "(removed)".into(),
        ),
        _ => unreachable!("dispatched above"),
    }
}

/// Rows of remote bookkeeping: the base, delete records, notes, the sentinel.
fn record_row(a: &Action) -> Row<'_> {
    match a {
        Action::RecordBase {
            add,
            unhydrated,
            drop,
        } => (
            match unhydrated.len() {
                0 => format!("{} file(s) recorded, {} forgotten", add.len(), drop.len()).into(),
                n => format!(
                    "{} file(s) recorded, {n} remote-only, {} forgotten",
                    add.len(),
                    drop.len()
                ).into(),
            },
            "".into(),
            "sync base".into(),
        ),
        Action::RecordDeletes { files, prune, .. } => (
            match prune.len() {
                0 => format!("{} file(s) deleted by swamp", files.len()).into(),
                n => format!(
                    "{} file(s) deleted by swamp; {n} old record(s) or note(s) removed",
                    files.len()
                ).into(),
            },
            "cache".into(),
            "remote record".into(),
        ),
        Action::NoteProgress {
            replaces, prune, ..
        } => (
            match (replaces.is_empty(), prune.len()) {
                (true, 0) => "this clone, for other clones' delete records".into(),
                (false, 0) => "this clone's progress past delete records".into(),
                (true, n) => format!(
                    "this clone, for other clones' delete records; {n} old record(s) or note(s) removed"
                ).into(),
                (false, n) => format!(
                    "this clone's progress past delete records; {n} old record(s) or note(s) removed"
                ).into(),
            },
            "sync base".into(),
            "remote note".into(),
        ),
        Action::PruneRecords { prune } => (
            format!("{} old delete record(s) or note(s)", prune.len()).into(),
            "remote".into(),
            "(removed)".into(),
        ),
        Action::PublishSentinel { path, objects, .. } => (
            path.as_str().into(),
            format!("vouches for {} object(s)", objects.len()).into(),
            "remote".into(),
        ),
        _ => unreachable!("dispatched above"),
    }
}

/// Each conflict in full (in Markdown, one fenced block).
fn render_conflicts(out: &mut String, plan: &Plan, md: bool) {
    let target = plan.target.shown();
    if md {
        out.push_str("#### Conflicts (apply is blocked until each is resolved)\n\n");
        let mut text = String::new();
        for c in &plan.conflicts {
            render_conflict(&mut text, c, plan, &target);
        }
        let fence = md_fence(&text);
        let _ = writeln!(out, "{fence}text\n{text}{fence}\n");
    } else {
        out.push_str("Conflicts (apply is blocked until each is resolved):\n");
        for c in &plan.conflicts {
            render_conflict(out, c, plan, &target);
        }
        out.push('\n');
    }
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

/// What `plan --diff` shows of the files uploads and downloads replace,
/// after the actions (in Markdown, one fenced `diff` block).
fn render_replaced(out: &mut String, plan: &Plan, md: bool) {
    let replaced: Vec<&ContentDiff> = plan
        .diffs
        .iter()
        .filter(|d| d.shown_for != DiffFor::Conflict)
        .collect();
    if replaced.is_empty() {
        return;
    }
    let what = |d: &ContentDiff| match d.shown_for {
        DiffFor::Download => ("download", "the remote's copy replaces the cache's"),
        _ => ("upload", "the cache's copy replaces the remote's"),
    };
    if md {
        // One fenced `diff` block per file, unindented, so a pull-request
        // comment colours it.
        out.push_str("#### Changes to the files this plan replaces\n\n");
        for d in replaced {
            let (kind, what) = what(d);
            let _ = writeln!(out, "- {} ({kind}: {what})\n", md_code(d.path.as_str()));
            let mut text = String::new();
            content_diff_lines(&mut text, d, "");
            if let DiffBody::Text { .. } = d.body {
                let fence = md_fence(&text);
                let _ = writeln!(out, "{fence}diff\n{text}{fence}\n");
            } else {
                let _ = writeln!(out, "  {}\n", md_text(text.trim_end()));
            }
        }
    } else {
        out.push_str("Changes to the files this plan replaces (--diff):\n");
        for d in replaced {
            let (kind, what) = what(d);
            let _ = writeln!(out, "  ~ {}  {kind}: {what}", d.path);
            content_diff_lines(out, d, "      ");
        }
        out.push('\n');
    }
}

/// A content diff's lines, indented: the unified diff, or why none.
fn content_diff_lines(out: &mut String, d: &ContentDiff, indent: &str) {
    let side = |s: Side| match s {
        Side::Cache => "in the cache",
        Side::Remote => "in the remote",
    };
    let size = |s: Option<u64>| s.map_or("deleted".to_string(), human_bytes);
    let sizes = format!(
        "{} {}, {} {}",
        size(d.old_size),
        side(d.old),
        size(d.new_size),
        side(d.new)
    );
    match &d.body {
        DiffBody::Text { diff } => {
            for line in diff.lines() {
                let _ = writeln!(out, "{indent}{line}");
            }
        }
        DiffBody::Binary => {
            let _ = writeln!(out, "{indent}no diff: not text ({sizes})");
        }
        DiffBody::TooLarge { limit } => {
            let _ = writeln!(
                out,
                "{indent}no diff: larger than {} ({sizes})",
                human_bytes(*limit)
            );
        }
        DiffBody::Unavailable { reason } => {
            let _ = writeln!(out, "{indent}no diff: {reason}");
        }
    }
}

/// The diff shown under a sync conflict on `path`, if planning read one.
fn conflict_diff(out: &mut String, plan: &Plan, path: &crate::layout::TierPath) {
    if let Some(d) = plan
        .diffs
        .iter()
        .find(|d| d.shown_for == DiffFor::Conflict && d.path == *path)
    {
        content_diff_lines(out, d, "      ");
    }
}

/// Markdown action tables longer than this are folded under `<details>`,
/// so a pull-request comment shows the summary first.
const MD_FOLD_ABOVE: usize = 20;

fn render_conflict(out: &mut String, c: &Conflict, plan: &Plan, target: &str) {
    match c {
        Conflict::DifferentAtTarget { .. }
        | Conflict::Obstacle { .. }
        | Conflict::Unsupported { .. } => local_conflict(out, c, plan, target),
        Conflict::NotAFile { .. } => not_a_file_conflict(out, c, plan),
        Conflict::ReservedPath { .. } | Conflict::Unholdable { .. } | Conflict::TooLarge { .. } => {
            key_conflict(out, c)
        }
        Conflict::BothChanged { .. }
        | Conflict::DeletedAndChanged { .. }
        | Conflict::SourceDiverged { .. } => sync_conflict(out, c, plan),
        Conflict::DeleteGuard { .. } | Conflict::ConfigAlreadyMigrated { .. } => {
            guard_conflict(out, c)
        }
    }
}

/// A file at the target or a source that blocks a move.
fn local_conflict(out: &mut String, c: &Conflict, plan: &Plan, target: &str) {
    match c {
        Conflict::DifferentAtTarget {
            path,
            source,
            source_sha256,
            target_sha256,
            diff,
        } => {
            let src = plan.sources[*source].shown();
            let _ = writeln!(out, "  ✗ {path}: a different file is already at the target");
            let _ = writeln!(out, "      source {src}{path}  sha256 {source_sha256}");
            let _ = writeln!(out, "      target {target}{path}  sha256 {target_sha256}");
            let _ = writeln!(
                out,
                "      fix: keep one copy (remove or rename the other), then plan again"
            );
            if let Some(diff) = diff {
                for line in diff.lines() {
                    let _ = writeln!(out, "      {line}");
                }
            }
        }
        Conflict::Obstacle {
            obstacle,
            what,
            blocked_files,
            example,
        } => {
            let _ = writeln!(
                out,
                "  ✗ {target}{obstacle} is {}; it blocks {blocked_files} file(s), e.g. {example}",
                what.describe()
            );
            let _ = writeln!(
                out,
                "      fix: move {target}{obstacle} out of the way, then plan again"
            );
        }
        Conflict::Unsupported { path, source, what } => {
            let src = plan.sources[*source].shown();
            let _ = writeln!(out, "  ✗ {src}{path} is {}", what.describe());
            let _ = writeln!(
                out,
                "      fix: replace it with a regular file or remove it, then plan again"
            );
        }
        _ => unreachable!("dispatched by render_conflict"),
    }
}

/// What stands in the cache where a synced file or directory is.
fn not_a_file_conflict(out: &mut String, c: &Conflict, plan: &Plan) {
    match c {
        Conflict::NotAFile {
            at,
            what,
            link,
            files,
            example,
        } => {
            let cache = format!("{}{at}", plan.target.shown());
            let pointing = link
                .as_deref()
                .map(|l| format!(" to {l}"))
                .unwrap_or_default();
            let one_file = example.as_str() == at;
            let synced = if one_file {
                "the synced file".to_string()
            } else {
                format!("the directory of {files} synced file(s), e.g. {example}")
            };
            let label = if at.is_empty() {
                "(the cache root)"
            } else {
                at
            };
            let _ = writeln!(
                out,
                "  ✗ {label}: in the cache this is {}{pointing}, not {synced}",
                what.noun()
            );
            let _ = writeln!(
                out,
                "      nothing of it is deleted, uploaded or downloaded over; swamp never follows symlinks"
            );
            let _ = writeln!(
                out,
                "      fix: put the {} back at {} (or move what is there aside and run `swamp datastore sync --pull`), then plan again",
                if one_file {
                    "regular file"
                } else {
                    "directory"
                },
                cache
            );
        }
        _ => unreachable!("dispatched by render_conflict"),
    }
}

/// A remote object this cache cannot or must not hold.
fn key_conflict(out: &mut String, c: &Conflict) {
    match c {
        Conflict::ReservedPath { key } => {
            let _ = writeln!(
                out,
                "  ✗ {key}: the remote holds an object at the catalog's path, which is repo-local in every clone"
            );
            let _ = writeln!(
                out,
                "      it is never downloaded and never deleted by swamp; fix: remove or rename it in the bucket, then plan again"
            );
        }
        Conflict::Unholdable { key, other, why } => {
            let _ = writeln!(
                out,
                "  ✗ {key}: cannot be held as a file in this cache: {why}"
            );
            if let Some(other) = other {
                let _ = writeln!(out, "      it clashes with {other}");
            }
            let fix = if other
                .as_deref()
                .is_some_and(|o| o.starts_with("the cache's "))
            {
                "rename it in the bucket, or rename the cache's file"
            } else {
                "rename or remove one of them in the bucket"
            };
            let _ = writeln!(
                out,
                "      nothing is downloaded while it stands; fix: {fix}, then plan again"
            );
        }
        Conflict::TooLarge { path, size, limit } => {
            let _ = writeln!(
                out,
                "  ✗ {path}: {} is larger than the remote holds as one object ({}); it is never uploaded",
                human_bytes(*size),
                human_bytes(*limit)
            );
            let _ = writeln!(
                out,
                "      fix: move it out of the datastore (or add it to `exclude` in .swamp.toml), or split it, then plan again"
            );
        }
        _ => unreachable!("dispatched by render_conflict"),
    }
}

/// Changes on both sides that the sync cannot settle by itself.
fn sync_conflict(out: &mut String, c: &Conflict, plan: &Plan) {
    match c {
        Conflict::BothChanged {
            path,
            local_sha256,
            remote_version,
            remote_sha256,
            base_sha256,
        } => {
            let _ = writeln!(
                out,
                "  ✗ {path}: changed in both the cache and the remote since the last sync"
            );
            let _ = writeln!(out, "      cache  sha256 {local_sha256}");
            let _ = writeln!(
                out,
                "      remote sha256 {} (version {remote_version})",
                remote_sha256.map_or("unknown".to_string(), |s| s.hex())
            );
            let _ = writeln!(
                out,
                "      base   {}",
                base_sha256
                    .as_ref()
                    .map_or("none (never synced)".to_string(), |b| format!("sha256 {b}"))
            );
            let fix = if path.tier() == crate::layout::Tier::Config {
                // Published managed config is shared: "local" would overwrite
                // what another clone published.
                "      fix: take the published definition with --conflict remote, or make the repository's copy agree; --conflict local overwrites what another clone published"
            } else {
                "      fix: pick a side with --conflict local|remote|newer|keep-both, or make them equal"
            };
            let _ = writeln!(out, "{fix}");
            conflict_diff(out, plan, path);
        }
        Conflict::DeletedAndChanged {
            path,
            deleted_in,
            changed_sha256,
        } => {
            let (gone, kept) = match deleted_in {
                crate::plan::action::Side::Cache => ("cache", "remote"),
                crate::plan::action::Side::Remote => ("remote", "cache"),
            };
            let _ = writeln!(
                out,
                "  ✗ {path}: deleted in the {gone} but changed in the {kept} (sha256 {})",
                changed_sha256.map_or("unknown".to_string(), |s| s.hex())
            );
            let _ = writeln!(
                out,
                "      fix: --conflict local|remote|keep-both decides, or restore/delete it by hand"
            );
            conflict_diff(out, plan, path);
        }
        Conflict::SourceDiverged {
            path,
            source,
            cache_sha256,
            remote_sha256,
        } => {
            let from = plan.sources[*source]
                .remote_label()
                .unwrap_or_else(|| "the old remote".into());
            let _ = writeln!(
                out,
                "  ✗ {path}: the old datastore's cache and bucket ({from}) disagree"
            );
            let _ = writeln!(out, "      cache  sha256 {cache_sha256}");
            let _ = writeln!(
                out,
                "      remote sha256 {}",
                remote_sha256.map_or("unknown".to_string(), |s| s.hex())
            );
            let _ = writeln!(
                out,
                "      fix: remove the copy you do not want (cache file or object), then plan again"
            );
        }
        _ => unreachable!("dispatched by render_conflict"),
    }
}

/// A delete guard tripped, or managed config published with other content.
fn guard_conflict(out: &mut String, c: &Conflict) {
    match c {
        Conflict::DeleteGuard { guard, message } => {
            let _ = writeln!(out, "  ✗ delete guard `{guard}`: {message}");
            for line in guard_fix(guard) {
                let _ = writeln!(out, "      {line}");
            }
        }
        Conflict::ConfigAlreadyMigrated {
            path,
            remote_body,
            local_body,
        } => {
            let _ = writeln!(
                out,
                "  ✗ {path}: the datastore's managed config was already migrated, with other content"
            );
            let _ = writeln!(out, "      remote (published):");
            for line in remote_body.lines() {
                let _ = writeln!(out, "        {line}");
            }
            let _ = writeln!(out, "      this repository would publish:");
            for line in local_body.lines() {
                let _ = writeln!(out, "        {line}");
            }
            let _ = writeln!(
                out,
                "      fix: take the datastore's config with `swamp datastore sync --pull`, or remove its sentinel and config/ objects if they are wrong; nothing was overwritten"
            );
        }
        _ => unreachable!("dispatched by render_conflict"),
    }
}

/// One line that says what apply would do, Terraform style.
/// `apply ID: 3 file(s) + 2 remote object(s)`.
pub fn prune_what(id: &str, files: usize, remote_objects: usize) -> String {
    match (files, remote_objects) {
        (f, 0) => format!("apply {id}: {f} file(s)"),
        (0, r) => format!("apply {id}: {r} remote object(s)"),
        (f, r) => format!("apply {id}: {f} file(s) + {r} remote object(s)"),
    }
}

/// What this run keeps for `swamp undo`, or that it keeps nothing.
fn undo_line(plan: &Plan, s: &crate::plan::Summary) -> Option<String> {
    let cache = plan.actions.iter().filter(|a| {
        matches!(
            a,
            Action::DeleteLocal { .. }
                | Action::Download { local: Some(_), .. }
                | Action::DropDuplicate { .. }
        )
    });
    let remote = plan.actions.iter().filter(|a| {
        matches!(
            a,
            Action::DeleteRemote { .. }
                | Action::Upload {
                    remote: crate::plan::RemoteExpect::Version { .. },
                    ..
                }
        )
    });
    let (cache, remote) = (cache.count(), remote.count());
    if cache + remote == 0 {
        return None;
    }
    let mut what = Vec::new();
    if cache > 0 {
        what.push(format!("{cache} file(s)"));
    }
    if remote > 0 {
        what.push(format!("{remote} remote object(s)"));
    }
    let what = what.join(" and ");
    if plan.no_undo {
        return Some(format!(
            "Undo: off for this run (--no-undo): {what} deleted or replaced for good."
        ));
    }
    let copies = match s.trash_copies {
        0 => String::new(),
        n => format!(
            " ({n} server-side cop{} into the remote trash)",
            if n == 1 { "y" } else { "ies" }
        ),
    };
    Some(format!(
        "Undo: {what} set aside before being deleted or replaced{copies}; `swamp undo` reverses this run."
    ))
}

pub fn closing_line(plan: &Plan) -> String {
    let s = plan.summary();
    if plan.is_empty() {
        return "No changes.".to_string();
    }
    let mut parts = file_parts(&s);
    parts.extend(bookkeeping_parts(plan, &s));
    let mut line = if parts.is_empty() {
        "Plan: nothing can be applied yet.".to_string()
    } else {
        format!("Plan: {}.", parts.join(", "))
    };
    if s.conflicts > 0 {
        let _ = write!(
            line,
            " {} conflict(s) block apply; resolve them and run `swamp plan` again.",
            s.conflicts
        );
    }
    line
}

/// The closing line's parts about files: moved, transferred, deleted.
fn file_parts(s: &crate::plan::Summary) -> Vec<String> {
    let mut parts = Vec::new();
    if s.relocate_trash > 0 {
        parts.push(format!(
            "set-aside files of {} earlier apply(s) to move into the cache's trash",
            s.relocate_trash
        ));
    }
    if s.remove_temp > 0 {
        parts.push(format!("{} leftover temp file(s) to remove", s.remove_temp));
    }
    if s.abort_upload > 0 {
        parts.push(format!("{} interrupted upload(s) to abort", s.abort_upload));
    }
    if s.mirror_config > 0 {
        parts.push(format!(
            "{} definition file(s) to copy into the cache",
            s.mirror_config
        ));
    }
    if s.moves > 0 {
        parts.push(format!(
            "{} to move ({})",
            s.moves,
            human_bytes(s.bytes_to_move)
        ));
    }
    if s.drop_duplicate > 0 {
        parts.push(format!(
            "{} identical duplicate(s) to drop",
            s.drop_duplicate
        ));
    }
    if s.upload > 0 {
        parts.push(format!(
            "{} to upload ({})",
            s.upload,
            human_bytes(s.bytes_to_upload)
        ));
    }
    if s.download > 0 {
        parts.push(format!(
            "{} to download ({})",
            s.download,
            human_bytes(s.bytes_to_download)
        ));
    }
    if s.delete_remote > 0 {
        parts.push(format!("{} to delete from the remote", s.delete_remote));
    }
    if s.delete_local > 0 {
        parts.push(format!("{} to delete from the cache", s.delete_local));
    }
    if s.rename_local > 0 {
        parts.push(format!("{} to set aside", s.rename_local));
    }
    parts
}

/// The closing line's parts about bookkeeping, draining and retention.
fn bookkeeping_parts(plan: &Plan, s: &crate::plan::Summary) -> Vec<String> {
    let mut parts = Vec::new();
    let lazy: usize = plan
        .actions
        .iter()
        .map(|a| match a {
            Action::RecordBase { unhydrated, .. } => unhydrated.len(),
            _ => 0,
        })
        .sum();
    if lazy > 0 {
        parts.push(format!(
            "{lazy} remote file(s) to record without downloading (hydration = lazy)"
        ));
    } else if s.record_base > 0 {
        parts.push("sync base to record".to_string());
    }
    if s.record_deletes > 0 {
        parts.push("deliberate deletes to record for the other clones".to_string());
    }
    if s.note_progress > 0 {
        parts.push("this clone's sync progress to note for the other clones".to_string());
    }
    if s.prune_records > 0 {
        parts.push("old delete records to remove".to_string());
    }
    if s.fetch > 0 {
        parts.push(format!("{} to fetch from the old remote", s.fetch));
    }
    if s.copy_remote > 0 {
        parts.push(format!("{} to re-key in the bucket", s.copy_remote));
    }
    if s.delete_source_remote > 0 {
        parts.push(format!(
            "{} old object(s) to delete",
            s.delete_source_remote
        ));
    }
    if s.invalidate_catalog > 0 {
        parts.push("catalog to rebuild".to_string());
    }
    if s.finish_migration > 0 {
        parts.push("migration record to clear".to_string());
    }
    if s.publish_sentinel > 0 {
        parts.push("managed-config sentinel to publish (last)".to_string());
    }
    if s.prune_trash > 0 {
        parts.push(format!(
            "trash of {} earlier apply(s) to prune ({})",
            s.prune_trash,
            human_bytes(s.bytes_to_prune)
        ));
    }
    parts
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
    fn a_group_is_named_by_at_most_depth_directories_of_its_path() {
        assert_eq!(dir_at("outputs/deploy/x.yaml", 2), "outputs/deploy/");
        assert_eq!(dir_at("outputs/deploy/x.yaml", 1), "outputs/");
        assert_eq!(dir_at("outputs/deploy/x.yaml", 0), "");
        assert_eq!(dir_at("data/a/b/c/raw", 2), "data/a/");
        // Never the file's own name, however deep the grouping reaches.
        assert_eq!(dir_at("data/raw", 2), "data/");
        assert_eq!(dir_at("raw", 2), "");
    }

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
            conflicts: vec![Conflict::BothChanged {
                path: TierPath::parse(path).unwrap(),
                local_sha256: "a".repeat(64).as_str().into(),
                remote_version: "v2".into(),
                remote_sha256: Some("b".repeat(64).as_str().into()),
                base_sha256: Some("c".repeat(64).as_str().into()),
            }],
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

/// What a tripped delete guard most likely means, and the commands that
/// settle it, safest first.
fn guard_fix(guard: &str) -> &'static [&'static str] {
    match guard {
        "empty-remote" | "everything-changed" | "max-delete-percent" => &[
            "likely: a wrong endpoint or bucket, a bucket or cache emptied by someone else, or a sync record from another life of this remote",
            "check: `swamp status` and `swamp doctor datastores`",
            "safe: `swamp datastore sync --no-base` plans a first sync (nothing deleted; each side gets what it lacks)",
            "if the deletes are intended: run again with --force (cache files that exist nowhere else also need --force-delete-local)",
        ],
        "empty-cache" => &[
            "likely: the cache was wiped or SWAMP_HOME points elsewhere",
            "safe: `swamp datastore sync --pull` fills the cache again (nothing deleted)",
            "if the deletes are intended: run again with --force",
        ],
        "only-copy" => &[
            "check: these files are in no remote object and nowhere else in the cache; `swamp datastore sync --no-base` keeps and uploads them",
            "if they must go: add --force-delete-local",
        ],
        _ => &[
            "fix: check the cache and the remote; if the deletes are intended, run again with --force",
        ],
    }
}

/// An undo plan for review: what comes back, what is set aside again, and
/// what blocks.
pub fn render_undo(plan: &crate::plan::undo::UndoPlan) -> String {
    use crate::plan::undo::UndoAction;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Undo of apply {} ({})",
        plan.undoes,
        escape_controls(&plan.command)
    );
    if !plan.actions.is_empty() {
        let mut t = table();
        t.set_header(["#", "action", "path", "from", "size"]);
        for (i, a) in plan.actions.iter().enumerate() {
            let (from, size) = match a {
                UndoAction::Restore { from, size, .. } => {
                    (format!("trash of {from}"), human_bytes(*size))
                }
                UndoAction::SetAside { size, .. } => ("in place".to_string(), human_bytes(*size)),
                // Server-side: its size is the trash copy's.
                UndoAction::RestoreRemote { from, .. } => {
                    (format!("remote trash of {from}"), String::new())
                }
                UndoAction::SetAsideRemote { .. } => ("in the remote".to_string(), String::new()),
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
    let count = |kind: &str| plan.actions.iter().filter(|a| a.kind() == kind).count();
    let remote = match count("restore-remote") {
        0 => String::new(),
        n => format!(", {n} remote object(s) to restore"),
    };
    let _ = writeln!(
        out,
        "\nUndo: {} to restore, {} to set aside{remote}, {} conflict(s).",
        count("restore"),
        count("set-aside"),
        plan.conflicts.len()
    );
    out
}

/// One conflict of an undo plan, with its fix.
fn undo_conflict(out: &mut String, c: &crate::plan::undo::UndoConflict, undoes: &str) {
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
        if let Action::PruneTrash {
            id,
            at,
            files,
            bytes,
            remote_objects,
            ..
        } = a
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
