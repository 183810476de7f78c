//! What a row a `--conflict` policy chose says: which conflict it settles
//! and what it keeps and replaces, so a reviewer tells a row that
//! overwrites a teammate's change from one nobody else touched.

use std::collections::HashMap;

use super::*;
use crate::config::ConflictPolicy;
use crate::layout::TierPath;

/// The settled conflicts of a plan by path, and the keep-both copies'
/// new names back to the conflict they came from.
pub(super) struct Settled<'a> {
    by_path: HashMap<&'a TierPath, &'a Conflict>,
    renamed: HashMap<&'a TierPath, &'a TierPath>,
}

impl<'a> Settled<'a> {
    /// `None` when the plan settled no conflict (the common case costs
    /// nothing).
    pub(super) fn of(plan: &'a Plan) -> Option<Self> {
        let resolved = &plan.remote.as_ref()?.resolved;
        if resolved.is_empty() {
            return None;
        }
        let by_path = resolved
            .iter()
            .filter_map(|c| match c {
                Conflict::BothChanged(b) => Some((&b.path, c)),
                Conflict::DeletedAndChanged(d) => Some((&d.path, c)),
                _ => None,
            })
            .collect();
        let renamed = plan
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::RenameLocal(r) if r.settled_by.is_some() => Some((&r.to, &r.path)),
                _ => None,
            })
            .collect();
        Some(Settled { by_path, renamed })
    }

    /// The reason of an action a policy chose, or `None` for any other.
    pub(super) fn reason(&self, a: &Action) -> Option<String> {
        let policy = a.settled_by()?;
        let path = a.path()?;
        let (conflict, renamed) = match self.by_path.get(path) {
            Some(c) => (*c, false),
            None => (*self.by_path.get(self.renamed.get(path)?)?, true),
        };
        let deed = deed(a, conflict, policy, renamed);
        Some(format!("{}: `--conflict {policy}` {deed}", what(conflict)))
    }
}

/// The conflict in a few words.
fn what(c: &Conflict) -> &'static str {
    match c {
        Conflict::DeletedAndChanged(d) if d.deleted_in == Side::Remote => {
            "deleted in the remote, changed in the cache"
        }
        Conflict::DeletedAndChanged(_) => "deleted in the cache, changed in the remote",
        _ => "both changed",
    }
}

/// What the action does to the two sides' versions.
fn deed(a: &Action, c: &Conflict, policy: ConflictPolicy, renamed: bool) -> String {
    let newer = if policy == ConflictPolicy::Newer {
        " (the newer)"
    } else {
        ""
    };
    let remote_version = match remote_written(c) {
        Some(at) => format!("the remote's version written {at}"),
        None => "the remote's version".to_string(),
    };
    let both = matches!(c, Conflict::BothChanged(_));
    match a {
        Action::Upload(_) if renamed => {
            "keeps both: uploads the cache's copy under its new name".to_string()
        }
        Action::Upload(_) if both => {
            format!("keeps the cache's copy{newer}, replacing {remote_version}")
        }
        Action::Upload(_) => "keeps the cache's copy, restoring it to the remote".to_string(),
        Action::Download(_) if policy == ConflictPolicy::KeepBoth && both => {
            "keeps both: the remote's copy takes the path".to_string()
        }
        Action::Download(_) if both => {
            format!("keeps the remote's copy{newer}, replacing the cache's")
        }
        Action::Download(_) => "keeps the remote's copy, restoring it to the cache".to_string(),
        Action::DeleteRemote(_) => format!("keeps the delete, deleting {remote_version}"),
        Action::DeleteLocal(_) => "keeps the delete, deleting the cache's changed copy".to_string(),
        Action::RenameLocal(_) => "keeps both: moves the cache's copy aside".to_string(),
        _ => String::new(),
    }
}

/// When the remote's side was written, to the minute (UTC).
fn remote_written(c: &Conflict) -> Option<String> {
    let secs = match c {
        Conflict::BothChanged(b) => b.remote_modified,
        Conflict::DeletedAndChanged(d) => d.remote_modified,
        _ => None,
    }?;
    let stamp = listed_time(secs)?;
    Some(format!("{} {} UTC", &stamp[..10], &stamp[11..16]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::conflict::BothChanged;

    #[test]
    fn a_remote_time_no_rfc_3339_can_write_is_left_out_not_a_panic() {
        let c = |secs| {
            Conflict::BothChanged(BothChanged {
                path: TierPath::parse("outputs/a").unwrap(),
                cache_sha256: crate::digest::Sha256::from("a"),
                remote_version: "v".into(),
                remote_sha256: None,
                base_sha256: None,
                remote_modified: Some(secs),
            })
        };
        assert_eq!(
            remote_written(&c(1_796_580_120)).as_deref(),
            Some("2026-12-06 18:02 UTC")
        );
        for hostile in [300_000_000_000, -1, i64::MAX, i64::MIN] {
            assert_eq!(remote_written(&c(hostile)), None, "{hostile}");
        }
    }
}
