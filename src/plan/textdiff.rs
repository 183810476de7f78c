//! Unified diffs for conflicting text files, attached to a plan from the
//! file bodies the observation read ([`crate::state::TextPair`]).

use super::{Conflict, Plan};
use crate::layout::TierPath;
use crate::state::TextPair;

/// Fills `diff` on each different-at-target conflict whose two files the
/// observation read as small UTF-8 text.
pub(crate) fn attach_diffs(plan: &mut Plan, texts: &[TextPair]) {
    for c in &mut plan.conflicts {
        if let Conflict::DifferentAtTarget {
            path, source, diff, ..
        } = c
            && let Some(t) = texts
                .iter()
                .find(|t| t.source == *source && t.path == *path)
        {
            *diff = Some(text_diff(&t.target, &t.source_text, path));
        }
    }
}

fn text_diff(theirs: &str, ours: &str, path: &TierPath) -> String {
    similar::TextDiff::from_lines(theirs, ours)
        .unified_diff()
        .context_radius(3)
        .header(&format!("target/{path}"), &format!("source/{path}"))
        .to_string()
}
