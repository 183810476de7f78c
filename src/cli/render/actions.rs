//! The table of actions: a row per action (each kind's own), or grouped
//! by kind, reason and directory when there are many.

use super::*;

/// Actions of one kind, one reason and one side-to-side under one directory.
pub(super) struct Group {
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
pub(super) const MAX_GROUPS: usize = 30;

/// How far below its tier a group's directory reaches: the tier and the
/// level below it (`outputs/deploy/`), then rolled up to the tier alone
/// (`data/`, when a thousand names are too many to list), then to
/// nothing (one group per kind and reason, actions without a path too).
pub(super) const GROUP_DEPTHS: [usize; 3] = [2, 1, 0];

/// The directory of `path` shown at `depth` (at most `depth` of its
/// directories, never its file name): `outputs/deploy/`, `data/`. A slice
/// of `path`: a million moves are grouped without a string made for each.
pub(super) fn dir_at(path: &str, depth: usize) -> &str {
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
pub(super) type Row<'a> = (Cow<'a, str>, Cow<'a, str>, Cow<'a, str>);

/// Groups at one depth, given up once there are more than [`MAX_GROUPS`].
pub(super) struct Grouping {
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
pub(super) fn group_rows<'a>(
    rows: impl Iterator<Item = (usize, &'a Action, Row<'a>)>,
) -> (Vec<Group>, usize) {
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

/// The table of actions: one row each, or grouped by kind and directory
/// when there are many (folded in Markdown).
pub(super) fn render_actions(out: &mut String, plan: &Plan, detail: bool, md: bool, style: Style) {
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
    // swamp's own records are listed with `--detail`, else counted.
    let hidden = match detail {
        true => 0,
        false => plan.actions.iter().filter(|a| a.is_bookkeeping()).count(),
    };
    let n_actions = plan.actions.len() - hidden;
    if n_actions == 0 {
        let _ = writeln!(out, "{}\n", bookkeeping_note(hidden));
        return;
    }
    let rows = plan
        .actions
        .iter()
        .enumerate()
        .filter(|(_, a)| hidden == 0 || !a.is_bookkeeping())
        .map(|(i, a)| (i, a, action_row(a, plan, &target, &source_labels)));
    let (grid, note) = if detail || n_actions <= GROUP_ABOVE {
        let mut actions = Grid::new(
            &["#", "action", "path", "from", "to", "reason"],
            &[true, false, false, false, false, false],
            &[false, false, true, true, true, false],
        );
        let settled = super::settled::Settled::of(plan);
        for (i, a, (path, from, to)) in rows {
            let reason = settled
                .as_ref()
                .and_then(|s| s.reason(a))
                .unwrap_or_else(|| resumed_reason(plan, a));
            actions.rows.push(vec![
                (i + 1).to_string(),
                a.kind().to_string(),
                path.into_owned(),
                from.into_owned(),
                to.into_owned(),
                reason,
            ]);
        }
        (actions, None)
    } else {
        grouped_grid(rows, n_actions)
    };
    let folded = md && grid.rows.len() > MD_FOLD_ABOVE;
    if folded {
        // (a count: nothing here to escape)
        let _ = writeln!(out, "<details><summary>{n_actions} action(s)</summary>\n");
    }
    let _ = writeln!(out, "{}\n", grid.render(md, style));
    if let Some(note) = note {
        let _ = writeln!(out, "{}\n", escape_controls(&note));
    }
    if hidden > 0 {
        let _ = writeln!(out, "{}\n", bookkeeping_note(hidden));
    }
    if folded {
        out.push_str("</details>\n\n");
    }
}

/// The line that counts the rows of swamp's own records left out.
fn bookkeeping_note(hidden: usize) -> String {
    format!("And {hidden} update(s) of swamp's own sync records; `--detail` lists them.")
}

/// An action's reason, and for a transfer that continues an interrupted
/// one, what is left of it.
pub(super) fn resumed_reason(plan: &Plan, a: &Action) -> String {
    let resumed = match a {
        Action::Upload(Upload { path, .. }) | Action::Download(Download { path, .. })
            if !plan.resumes.is_empty() =>
        {
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
        None => match a.path().and_then(|p| plan.authored(p)) {
            // The teammate's apply the remote change came from.
            Some(by) => format!(
                "{} by {} in apply {}{}",
                a.reason(),
                escape_controls(&by.by),
                escape_controls(&by.id),
                ago(&by.at)
            ),
            None => a.reason().to_string(),
        },
    }
}

/// `, 2 h ago`: how long before now `at` (RFC 3339) was; nothing when
/// it cannot be told (or is in the future).
fn ago(at: &str) -> String {
    let Some(then) = humantime::parse_rfc3339(at)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
    else {
        return String::new();
    };
    let Some(secs) = crate::clock::now_secs().checked_sub(then.as_secs()) else {
        return String::new();
    };
    match secs {
        0..60 => ", under a minute ago".to_string(),
        60..3600 => format!(", {} min ago", secs / 60),
        3600..86_400 => format!(", {} h ago", secs / 3600),
        _ => format!(", {} day(s) ago", secs / 86_400),
    }
}

/// The actions grouped by kind and directory (a plan too long to list),
/// and the note that says so.
pub(super) fn grouped_grid<'a>(
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
pub(super) fn action_row<'a>(
    a: &'a Action,
    plan: &'a Plan,
    target: &'a str,
    source_labels: &'a [String],
) -> Row<'a> {
    match a {
        Action::Move(a) => move_row(a, target, source_labels),
        Action::DropDuplicate(a) => drop_duplicate_row(a, source_labels),
        Action::InvalidateCatalog => (".swamp/data/_catalog.db".into(), "".into(), "".into()),
        Action::FinishMigration => (".swamp.toml".into(), "".into(), "".into()),
        Action::RemoveTemp(a) => remove_temp_row(a, target, source_labels),
        Action::RemovePartial(a) => remove_partial_row(a),
        Action::MirrorConfig(a) => mirror_config_row(a),
        Action::PruneTrash(a) => prune_trash_row(a),
        Action::RelocateTrash(a) => relocate_trash_row(a, target, source_labels),
        Action::Upload(a) => upload_row(a),
        Action::Download(a) => download_row(a),
        Action::DeleteLocal(a) => delete_local_row(a),
        Action::DeleteRemote(a) => delete_remote_row(a),
        Action::RenameLocal(a) => rename_local_row(a),
        Action::Fetch(a) => fetch_row(a, plan, target),
        Action::CopyRemote(a) => copy_remote_row(a, plan),
        Action::DeleteSourceRemote(a) => delete_source_remote_row(a, plan),
        Action::RecordBase(a) => record_base_row(a),
        Action::RecordDeletes(a) => record_deletes_row(a),
        Action::NoteProgress(a) => note_progress_row(a),
        Action::PruneRecords(a) => prune_records_row(a),
        Action::PruneHistory(a) => prune_history_row(a),
        Action::PublishSentinel(a) => publish_sentinel_row(a),
        Action::AbortUpload(AbortUpload { path, .. }) => (
            path.as_str().into(),
            "remote (unfinished upload)".into(),
            "(aborted)".into(),
        ),
    }
}

// Rows of moves and local bookkeeping.
pub(super) fn move_row<'a>(a: &'a Move, target: &'a str, source_labels: &'a [String]) -> Row<'a> {
    let Move { path, source, .. } = a;
    (
        path.as_str().into(),
        source_labels[*source].as_str().into(),
        target.into(),
    )
}

pub(super) fn drop_duplicate_row<'a>(a: &'a DropDuplicate, source_labels: &'a [String]) -> Row<'a> {
    let DropDuplicate { path, source, .. } = a;
    (
        path.as_str().into(),
        source_labels[*source].as_str().into(),
        "(removed)".into(),
    )
}

pub(super) fn remove_temp_row<'a>(
    a: &'a RemoveTemp,
    target: &'a str,
    source_labels: &'a [String],
) -> Row<'a> {
    let RemoveTemp {
        path,
        source,
        remote,
        ..
    } = a;
    (
        path.as_str().into(),
        match source {
            _ if *remote => "datastore".into(),
            None => target.into(),
            Some(i) => source_labels[*i].as_str().into(),
        },
        "(removed)".into(),
    )
}

pub(super) fn remove_partial_row(a: &RemovePartial) -> Row<'_> {
    (
        a.name.as_str().into(),
        "cache (.swamp/partial/)".into(),
        "(removed)".into(),
    )
}

pub(super) fn mirror_config_row<'a>(a: &'a MirrorConfig) -> Row<'a> {
    let MirrorConfig { path, .. } = a;
    (
        path.as_str().into(),
        path.as_str()
            .strip_prefix("config/")
            .unwrap_or(path.as_str())
            .to_string()
            .into(),
        "cache".into(),
    )
}

pub(super) fn prune_trash_row<'a>(a: &'a PruneTrash) -> Row<'a> {
    let PruneTrash {
        id,
        at,
        files,
        remote_objects,
        ..
    } = a;
    (
        prune_what(id, *files, *remote_objects).into(),
        format!("trash of {at}").into(),
        "(removed)".into(),
    )
}

pub(super) fn relocate_trash_row<'a>(
    a: &'a RelocateTrash,
    target: &'a str,
    source_labels: &'a [String],
) -> Row<'a> {
    let RelocateTrash {
        source,
        applies,
        files,
        ..
    } = a;
    (
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
    )
}

// Rows of transfers and deletes between cache and remotes.
pub(super) fn upload_row<'a>(a: &'a Upload) -> Row<'a> {
    let Upload { path, .. } = a;
    (path.as_str().into(), "cache".into(), "remote".into())
}

pub(super) fn download_row<'a>(a: &'a Download) -> Row<'a> {
    let Download { path, .. } = a;
    (path.as_str().into(), "remote".into(), "cache".into())
}

pub(super) fn delete_local_row<'a>(a: &'a DeleteLocal) -> Row<'a> {
    let DeleteLocal { path, .. } = a;
    (path.as_str().into(), "cache".into(), "(removed)".into())
}

pub(super) fn delete_remote_row<'a>(a: &'a DeleteRemote) -> Row<'a> {
    let DeleteRemote { path, .. } = a;
    (path.as_str().into(), "remote".into(), "(removed)".into())
}

pub(super) fn rename_local_row<'a>(a: &'a RenameLocal) -> Row<'a> {
    let RenameLocal { path, to, .. } = a;
    (path.as_str().into(), "cache".into(), to.to_string().into())
}

pub(super) fn fetch_row<'a>(a: &'a Fetch, plan: &'a Plan, target: &'a str) -> Row<'a> {
    let Fetch { path, source, .. } = a;
    (
        path.as_str().into(),
        plan.sources[*source]
            .remote_label()
            .map_or("remote".into(), Cow::Owned),
        target.into(),
    )
}

pub(super) fn copy_remote_row<'a>(a: &'a CopyRemote, plan: &'a Plan) -> Row<'a> {
    let CopyRemote { path, source, .. } = a;
    (
        path.as_str().into(),
        plan.sources[*source]
            .remote_label()
            .map_or("remote".into(), Cow::Owned),
        plan.remote
            .as_ref()
            .map(|r| r.url.clone())
            .map_or("remote".into(), Cow::Owned),
    )
}

pub(super) fn delete_source_remote_row<'a>(a: &'a DeleteSourceRemote, plan: &'a Plan) -> Row<'a> {
    let DeleteSourceRemote {
        source, objects, ..
    } = a;
    (
        format!("{} object(s)", objects.len()).into(),
        plan.sources[*source]
            .remote_label()
            .map_or("remote".into(), Cow::Owned),
        "(removed)".into(),
    )
}

// Rows of remote bookkeeping: the base, delete records, notes, the sentinel.
pub(super) fn record_base_row(a: &RecordBase) -> Row<'_> {
    let RecordBase {
        add,
        unhydrated,
        drop,
    } = a;
    (
        match unhydrated.len() {
            0 => format!("{} file(s) recorded, {} forgotten", add.len(), drop.len()).into(),
            n => format!(
                "{} file(s) recorded, {n} remote-only, {} forgotten",
                add.len(),
                drop.len()
            )
            .into(),
        },
        "".into(),
        "sync base".into(),
    )
}

pub(super) fn record_deletes_row(a: &RecordDeletes) -> Row<'_> {
    let RecordDeletes { files, prune, .. } = a;
    (
        match prune.len() {
            0 => format!("{} file(s) deleted by swamp", files.len()).into(),
            n => format!(
                "{} file(s) deleted by swamp; {n} old record(s) or note(s) removed",
                files.len()
            )
            .into(),
        },
        "cache".into(),
        "remote record".into(),
    )
}

pub(super) fn note_progress_row(a: &NoteProgress) -> Row<'_> {
    let NoteProgress {
        replaces, prune, ..
    } = a;
    (
        match (replaces.is_empty(), prune.len()) {
            (true, 0) => "this clone, for other clones' delete records".into(),
            (false, 0) => "this clone's progress past delete records".into(),
            (true, n) => format!(
                "this clone, for other clones' delete records; {n} old record(s) or note(s) removed"
            )
            .into(),
            (false, n) => format!(
                "this clone's progress past delete records; {n} old record(s) or note(s) removed"
            )
            .into(),
        },
        "sync base".into(),
        "remote note".into(),
    )
}

pub(super) fn prune_records_row(a: &PruneRecords) -> Row<'_> {
    let PruneRecords { prune } = a;
    (
        format!("{} old delete record(s) or note(s)", prune.len()).into(),
        "remote".into(),
        "(removed)".into(),
    )
}

pub(super) fn prune_history_row(a: &crate::plan::action::PruneHistory) -> Row<'_> {
    let crate::plan::action::PruneHistory { prune, keep_days } = a;
    (
        format!(
            "{} history record(s) over {keep_days} day(s) old",
            prune.len()
        )
        .into(),
        "remote".into(),
        "(removed)".into(),
    )
}

pub(super) fn publish_sentinel_row(a: &PublishSentinel) -> Row<'_> {
    let PublishSentinel { path, objects, .. } = a;
    (
        path.as_str().into(),
        format!("vouches for {} object(s)", objects.len()).into(),
        "remote".into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
