//! Unified diffs for conflicting text files, attached to a plan after the
//! pure diff (this is the one plan step that reads file contents).

use std::path::Path;

use super::{Conflict, Plan};
use crate::layout::TierPath;

/// Files larger than this are not diffed.
pub const DIFF_SIZE_CAP: u64 = 64 * 1024;

/// Fills `diff` on each different-at-target conflict whose two files are
/// small UTF-8 text.
pub fn attach_diffs(plan: &mut Plan) {
    let target_root = plan.target.root.clone();
    let source_roots: Vec<_> = plan.sources.iter().map(|s| s.root.clone()).collect();
    for c in &mut plan.conflicts {
        if let Conflict::DifferentAtTarget {
            path, source, diff, ..
        } = c
        {
            *diff = text_diff(&target_root, &source_roots[*source], path);
        }
    }
}

fn read_small_text(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > DIFF_SIZE_CAP {
        return None;
    }
    String::from_utf8(std::fs::read(path).ok()?).ok()
}

fn text_diff(target_root: &Path, source_root: &Path, path: &TierPath) -> Option<String> {
    let theirs = read_small_text(&target_root.join(path.as_str()))?;
    let ours = read_small_text(&source_root.join(path.as_str()))?;
    Some(
        similar::TextDiff::from_lines(&theirs, &ours)
            .unified_diff()
            .context_radius(3)
            .header(&format!("target/{path}"), &format!("source/{path}"))
            .to_string(),
    )
}
