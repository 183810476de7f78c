//! Conflicts in full (both hashes, the fix, a diff of small text files)
//! and what `plan --diff` shows of the files a sync replaces.

use super::*;

/// Each conflict in full (in Markdown, one fenced block).
pub(super) fn render_conflicts(out: &mut String, plan: &Plan, md: bool) {
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

/// What `plan --diff` shows of the files uploads and downloads replace,
/// after the actions (in Markdown, one fenced `diff` block).
pub(super) fn render_replaced(out: &mut String, plan: &Plan, md: bool) {
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
pub(super) fn content_diff_lines(out: &mut String, d: &ContentDiff, indent: &str) {
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
pub(super) fn conflict_diff(out: &mut String, plan: &Plan, path: &crate::layout::TierPath) {
    if let Some(d) = plan
        .diffs
        .iter()
        .find(|d| d.shown_for == DiffFor::Conflict && d.path == *path)
    {
        content_diff_lines(out, d, "      ");
    }
}

pub(super) fn render_conflict(out: &mut String, c: &Conflict, plan: &Plan, target: &str) {
    match c {
        Conflict::DifferentAtTarget(c) => different_at_target_conflict(out, c, plan, target),
        Conflict::Obstacle(c) => obstacle_conflict(out, c, target),
        Conflict::Unsupported(c) => unsupported_conflict(out, c, plan),
        Conflict::NotAFile(c) => not_a_file_conflict(out, c, plan),
        Conflict::ReservedPath(c) => reserved_path_conflict(out, c),
        Conflict::Unholdable(c) => unholdable_conflict(out, c),
        Conflict::TooLarge(c) => too_large_conflict(out, c),
        Conflict::BothChanged(c) => both_changed_conflict(out, c, plan),
        Conflict::DeletedAndChanged(c) => deleted_and_changed_conflict(out, c, plan),
        Conflict::SourceDiverged(c) => source_diverged_conflict(out, c, plan),
        Conflict::DeleteGuard(c) => delete_guard_conflict(out, c),
        Conflict::ConfigAlreadyMigrated(c) => config_already_migrated_conflict(out, c),
    }
}

// A file at the target or a source that blocks a move.
pub(super) fn different_at_target_conflict(
    out: &mut String,
    c: &DifferentAtTarget,
    plan: &Plan,
    target: &str,
) {
    let DifferentAtTarget {
        path,
        source,
        source_sha256,
        target_sha256,
        source_size,
        target_size,
        diff,
    } = c;
    let src = plan.sources[*source].shown();
    let size = |n: &Option<u64>| n.map_or(String::new(), |n| format!("  {n} bytes"));
    let _ = writeln!(out, "  ✗ {path}: a different file is already at the target");
    let _ = writeln!(
        out,
        "      source {src}{path}  sha256 {source_sha256}{}",
        size(source_size)
    );
    let _ = writeln!(
        out,
        "      target {target}{path}  sha256 {target_sha256}{}",
        size(target_size)
    );
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

pub(super) fn obstacle_conflict(out: &mut String, c: &Obstacle, target: &str) {
    let Obstacle {
        obstacle,
        what,
        blocked_files,
        example,
    } = c;
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

pub(super) fn unsupported_conflict(out: &mut String, c: &Unsupported, plan: &Plan) {
    let Unsupported { path, source, what } = c;
    let src = plan.sources[*source].shown();
    let _ = writeln!(out, "  ✗ {src}{path} is {}", what.describe());
    let _ = writeln!(
        out,
        "      fix: replace it with a regular file or remove it, then plan again"
    );
}

/// What stands in the cache where a synced file or directory is.
pub(super) fn not_a_file_conflict(out: &mut String, c: &NotAFile, plan: &Plan) {
    let NotAFile {
        at,
        what,
        link,
        files,
        example,
    } = c;
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

// A remote object this cache cannot or must not hold.
pub(super) fn reserved_path_conflict(out: &mut String, c: &ReservedPath) {
    let ReservedPath { key } = c;
    let _ = writeln!(
        out,
        "  ✗ {key}: the remote holds an object at the catalog's path, which is repo-local in every clone"
    );
    let _ = writeln!(
        out,
        "      it is never downloaded and never deleted by swamp; fix: remove or rename it in the bucket, then plan again"
    );
}

pub(super) fn unholdable_conflict(out: &mut String, c: &Unholdable) {
    let Unholdable { key, other, why } = c;
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

pub(super) fn too_large_conflict(out: &mut String, c: &TooLarge) {
    let TooLarge { path, size, limit } = c;
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

// Changes on both sides that the sync cannot settle by itself.
pub(super) fn both_changed_conflict(out: &mut String, c: &BothChanged, plan: &Plan) {
    let BothChanged {
        path,
        cache_sha256,
        remote_version,
        remote_sha256,
        base_sha256,
        ..
    } = c;
    let _ = writeln!(
        out,
        "  ✗ {path}: changed in both the cache and the remote since the last sync"
    );
    let _ = writeln!(out, "      cache  sha256 {cache_sha256}");
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

pub(super) fn deleted_and_changed_conflict(out: &mut String, c: &DeletedAndChanged, plan: &Plan) {
    let DeletedAndChanged {
        path,
        deleted_in,
        changed_sha256,
        ..
    } = c;
    let (gone, kept) = match deleted_in {
        crate::plan::Side::Cache => ("cache", "remote"),
        crate::plan::Side::Remote => ("remote", "cache"),
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

pub(super) fn source_diverged_conflict(out: &mut String, c: &SourceDiverged, plan: &Plan) {
    let SourceDiverged {
        path,
        source,
        cache_sha256,
        remote_sha256,
    } = c;
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

// A delete guard tripped, or managed config published with other content.
pub(super) fn delete_guard_conflict(out: &mut String, c: &DeleteGuard) {
    let DeleteGuard { guard, message } = c;
    let _ = writeln!(out, "  ✗ delete guard `{guard}`: {message}");
    for line in guard_fix(guard) {
        let _ = writeln!(out, "      {line}");
    }
}

pub(super) fn config_already_migrated_conflict(out: &mut String, c: &ConfigAlreadyMigrated) {
    let ConfigAlreadyMigrated {
        path,
        remote_body,
        local_body,
    } = c;
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

/// What a tripped delete guard most likely means, and the commands that
/// settle it, safest first.
pub(super) fn guard_fix(guard: &str) -> &'static [&'static str] {
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
