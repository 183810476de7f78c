//! The plan's header: scope, target and sources, and notes on what the
//! remote holds that the plan leaves alone.

use super::*;

/// The header: scope, target and sources, and notes on what the remote
/// holds that the plan leaves alone.
pub(super) fn render_header(out: &mut String, plan: &Plan, detail: bool, md: bool) {
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
            let line = format!(
                "- **{}** {code}{}",
                label.trim(),
                md_text(text.trim_start())
            );
            let _ = writeln!(out, "{}", line.trim_end());
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
    // A remote plan names the bucket first (a reviewer without the
    // terminal that made it must see which one), then the cache.
    let target_label = match &plan.remote {
        Some(remote) => {
            let endpoint = match &plan.target.datastore {
                crate::config::DatastoreConfig::S3 {
                    endpoint: Some(e), ..
                }
                | crate::config::DatastoreConfig::Gcs {
                    endpoint: Some(e), ..
                } => format!("{sep}(endpoint {e})"),
                _ => String::new(),
            };
            head(out, "remote", &remote.url, &endpoint);
            "cache"
        }
        None => "target",
    };
    head(
        out,
        target_label,
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
    other_clones(out, plan, &head);
    out.push('\n');
}

/// Who else still syncs with a remote source this plan moves away from
/// (their progress notes there): once it is drained, their next sync
/// finds it empty, so a reviewer sees whom to tell.
fn other_clones(out: &mut String, plan: &Plan, head: &dyn Fn(&mut String, &str, &str, &str)) {
    for (i, _) in plan.sources.iter().enumerate() {
        let others: Vec<String> = plan
            .other_clones
            .iter()
            .filter(|c| c.source == i)
            .map(|c| match c.noted.and_then(day) {
                Some(day) => format!("{} (synced {day})", short(&c.clone)),
                None => short(&c.clone).to_string(),
            })
            .collect();
        if others.is_empty() {
            continue;
        }
        head(
            out,
            "note",
            "",
            &format!(
                "{} other clone(s) synced with source {i}: {}; once it is drained, each must follow with the same `swamp datastore setup` (their next sync finds the old place empty)",
                others.len(),
                others.join(", ")
            ),
        );
    }
}

/// A clone id as shown: its first 12 characters.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// The UTC day of a listed time.
fn day(secs: i64) -> Option<String> {
    Some(listed_time(secs)?[..10].to_string())
}

/// The header's notes on the remote: a base set aside, files in the
/// remote only, what the sync skips.
pub(super) fn remote_notes(
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
pub(super) const RESUMES_SHOWN: usize = 5;

/// One header line per transfer that continues an interrupted one (a
/// few, then how many more), with what is left of it.
pub(super) fn resume_notes(
    out: &mut String,
    plan: &Plan,
    head: &dyn Fn(&mut String, &str, &str, &str),
) {
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
                    crate::plan::resume::Transfer::Copy => "server-side copy",
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
pub(super) fn skipped_local_notes(
    out: &mut String,
    skipped: &[crate::plan::Obstacle],
    detail: bool,
    head: &dyn Fn(&mut String, &str, &str, &str),
) {
    use crate::plan::ObstacleKind;
    let what = |o: &crate::plan::Obstacle| match &o.link {
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
    let kinds = super::counted(&[
        (count(ObstacleKind::Symlink), "symlink(s)"),
        (count(ObstacleKind::SpecialFile), "special file(s)"),
        (count(ObstacleKind::BadName), "name(s) no key can hold"),
    ]);
    head(
        out,
        "skipped",
        "",
        &format!(
            "{} path(s) in the cache ({}), e.g. {} ({}): never synced, never deleted; --detail lists each",
            skipped.len(),
            kinds,
            first.path,
            what(first)
        ),
    );
}
