//! The summary table, the undo line and the closing line of a plan.

use super::*;

/// The summary table (actions by kind, with bytes) and the undo line.
pub(super) fn render_summary(out: &mut String, plan: &Plan, detail: bool, md: bool, style: Style) {
    let s = plan.summary();
    // swamp's own records: one row, unless `--detail` lists each kind.
    let kept = |n: usize| if detail { n } else { 0 };
    let bookkeeping = match detail {
        true => 0,
        false => {
            s.record_base + s.record_deletes + s.note_progress + s.prune_records + s.prune_history
        }
    };
    let mut summary = Grid::new(
        &["action", "count", "bytes"],
        &[false, true, true],
        &[false, false, false],
    );
    let rows: [(&str, usize, Option<u64>); 28] = [
        ("relocate-trash", s.relocate_trash, None),
        ("remove-temp", s.remove_temp, None),
        ("remove-partial", s.remove_partial, None),
        ("abort-upload", s.abort_upload, None),
        ("mirror-config", s.mirror_config, None),
        ("move", s.moves, Some(s.bytes_to_move)),
        ("drop-duplicate", s.drop_duplicate, None),
        ("fetch", s.fetch, None),
        ("copy-remote", s.copy_remote, Some(s.bytes_to_copy)),
        ("delete-source-remote", s.delete_source_remote, None),
        ("upload", s.upload, Some(s.bytes_to_upload)),
        ("download", s.download, Some(s.bytes_to_download)),
        ("delete-remote", s.delete_remote, None),
        ("delete-local", s.delete_local, None),
        ("rename-local", s.rename_local, None),
        ("record-base", kept(s.record_base), None),
        ("record-deletes", kept(s.record_deletes), None),
        ("note-progress", kept(s.note_progress), None),
        ("prune-records", kept(s.prune_records), None),
        ("prune-history", kept(s.prune_history), None),
        ("sync records", bookkeeping, None),
        ("invalidate-catalog", s.invalidate_catalog, None),
        ("finish-migration", s.finish_migration, None),
        ("publish-sentinel", s.publish_sentinel, None),
        ("prune-trash", s.prune_trash, Some(s.bytes_to_prune)),
        ("skipped", s.skipped + s.skipped_local, None),
        ("conflict", s.conflicts, None),
        ("settled-conflict", s.settled, None),
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
        let _ = writeln!(out, "{}\n", escape_controls(&line));
    }
}

/// What this run keeps for `swamp undo`, or that it keeps nothing.
pub(super) fn undo_line(plan: &Plan, s: &crate::plan::Summary) -> Option<String> {
    let cache = plan.actions.iter().filter(|a| {
        matches!(
            a,
            Action::DeleteLocal(_)
                | Action::Download(Download { local: Some(_), .. })
                | Action::DropDuplicate(_)
        )
    });
    let remote = plan.actions.iter().filter(|a| {
        matches!(
            a,
            Action::DeleteRemote(_)
                | Action::Upload(Upload {
                    remote: crate::plan::RemoteExpect::Version { .. },
                    ..
                })
        )
    });
    let (cache, remote) = (
        cache.count(),
        remote.count() + plan.drained_trash_copies() as usize,
    );
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
    if let Some(policy) = plan.remote.as_ref().filter(|_| s.settled > 0) {
        let _ = write!(
            line,
            " {} conflict(s) settled by `--conflict {}`: each row says what it keeps and replaces.",
            s.settled, policy.conflict_policy
        );
    }
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
pub(super) fn file_parts(s: &crate::plan::Summary) -> Vec<String> {
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
    if s.remove_partial > 0 {
        parts.push(format!(
            "{} partial download(s) to remove",
            s.remove_partial
        ));
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
pub(super) fn bookkeeping_parts(plan: &Plan, s: &crate::plan::Summary) -> Vec<String> {
    let mut parts = Vec::new();
    let lazy: usize = plan
        .actions
        .iter()
        .map(|a| match a {
            Action::RecordBase(RecordBase { unhydrated, .. }) => unhydrated.len(),
            _ => 0,
        })
        .sum();
    if lazy > 0 {
        parts.push(format!(
            "{lazy} remote file(s) to record without downloading (hydration = lazy)"
        ));
    } else if s.record_base + s.record_deletes + s.note_progress + s.prune_records + s.prune_history
        > 0
    {
        // One phrase for swamp's own records (`--detail` lists each).
        parts.push("sync records to update".to_string());
    }
    if s.fetch > 0 {
        parts.push(format!("{} to fetch from the old remote", s.fetch));
    }
    let server_side = s.copy_remote - s.copy_streamed;
    if server_side > 0 {
        parts.push(format!("{server_side} to copy server-side"));
    }
    if s.copy_streamed > 0 {
        parts.push(format!(
            "{} to copy streamed through this machine ({})",
            s.copy_streamed,
            crate::cli::render::human_bytes(s.bytes_streamed)
        ));
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
