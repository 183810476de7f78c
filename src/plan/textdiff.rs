//! Unified diffs for conflicting text files, attached to a plan from the
//! file bodies the observation read ([`crate::state::TextPair`]).

use crate::plan::action::{Download, Upload};
use crate::plan::conflict::{BothChanged, DeletedAndChanged, DifferentAtTarget};
use serde::{Deserialize, Serialize};

use super::Side;
use super::action::{Action, RemoteExpect};
use super::{Conflict, Plan};
use crate::layout::TierPath;
use crate::state::TextPair;
pub(crate) use crate::state::diff_bodies::{Body, RemoteRef};

/// Fills `diff` on each different-at-target conflict whose two files the
/// observation read as small UTF-8 text.
pub(crate) fn attach_diffs(plan: &mut Plan, texts: &[TextPair]) {
    for c in &mut plan.conflicts {
        if let Conflict::DifferentAtTarget(DifferentAtTarget {
            path, source, diff, ..
        }) = c
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

/// Why a plan shows a file's content change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiffFor {
    /// A both-changed or deleted-and-changed sync conflict.
    Conflict,
    /// An upload that replaces a remote object (`plan --diff`).
    Upload,
    /// A download that replaces a cache file (`plan --diff`).
    Download,
}

/// What a plan shows of one file's content: the side replaced (`old`,
/// the diff's `---`) against the side that replaces it (`new`, `+++`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentDiff {
    pub path: TierPath,
    #[serde(rename = "for")]
    pub shown_for: DiffFor,
    pub old: Side,
    pub new: Side,
    /// Each side's size; `None`: that side has no file (deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_size: Option<u64>,
    #[serde(flatten)]
    pub body: DiffBody,
    /// Planning read the remote object to show this (one GET, counted in
    /// the plan's request estimate).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_remote: bool,
}

/// The diff itself, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "shown", rename_all = "kebab-case")]
pub enum DiffBody {
    /// A unified diff of the two sides, both small UTF-8 text.
    Text { diff: String },
    /// A side is not UTF-8 text.
    Binary,
    /// A side is larger than `limit` bytes.
    TooLarge { limit: u64 },
    /// A side could not be read as planned (changed since it was listed,
    /// or the read failed).
    Unavailable { reason: String },
}

/// A file whose two sides a plan wants to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub path: TierPath,
    pub shown_for: DiffFor,
    pub old: Side,
    pub new: Side,
    /// Read the cache file (it should exist).
    pub cache: bool,
    /// Read this remote object.
    pub remote: Option<RemoteRef>,
}

/// What `plan` must read to show its diffs: every both-changed or
/// deleted-and-changed conflict, and with `replaced` (`plan --diff`) every
/// upload or download that replaces a file.
pub(crate) fn wanted(
    plan: &Plan,
    remote: &crate::state::RemoteSnapshot,
    replaced: bool,
) -> Vec<Wanted> {
    let listed = |path: &TierPath| {
        remote.files.get(path).map(|o| RemoteRef {
            version: o.version.to_string(),
            size: o.size,
            sha256: remote.sha_of(path, o),
        })
    };
    let mut out = Vec::new();
    for c in &plan.conflicts {
        match c {
            Conflict::BothChanged(BothChanged { path, .. }) => out.push(Wanted {
                path: path.clone(),
                shown_for: DiffFor::Conflict,
                old: Side::Remote,
                new: Side::Cache,
                cache: true,
                remote: listed(path),
            }),
            Conflict::DeletedAndChanged(DeletedAndChanged {
                path, deleted_in, ..
            }) => {
                let (old, new) = match deleted_in {
                    Side::Cache => (Side::Cache, Side::Remote),
                    Side::Remote => (Side::Remote, Side::Cache),
                };
                out.push(Wanted {
                    path: path.clone(),
                    shown_for: DiffFor::Conflict,
                    old,
                    new,
                    cache: *deleted_in == Side::Remote,
                    remote: match deleted_in {
                        Side::Cache => listed(path),
                        Side::Remote => None,
                    },
                });
            }
            _ => {}
        }
    }
    if !replaced {
        return out;
    }
    for a in &plan.actions {
        match a {
            Action::Upload(Upload {
                path,
                remote: RemoteExpect::Version { .. },
                ..
            }) => out.push(Wanted {
                path: path.clone(),
                shown_for: DiffFor::Upload,
                old: Side::Remote,
                new: Side::Cache,
                cache: true,
                remote: listed(path),
            }),
            Action::Download(Download {
                path,
                size,
                version,
                expect,
                local: Some(_),
                ..
            }) => out.push(Wanted {
                path: path.clone(),
                shown_for: DiffFor::Download,
                old: Side::Cache,
                new: Side::Remote,
                cache: true,
                remote: Some(RemoteRef {
                    version: version.to_string(),
                    size: *size,
                    sha256: expect.sha256(),
                }),
            }),
            _ => {}
        }
    }
    out
}

/// The plan's diffs from what was read: `bodies[i]` is `(cache, remote,
/// read_remote)` of `wanted[i]`.
pub(crate) fn content_diffs(
    wanted: &[Wanted],
    bodies: Vec<(Body, Body, bool)>,
) -> Vec<ContentDiff> {
    wanted
        .iter()
        .zip(bodies)
        .map(|(w, (cache, remote, read_remote))| {
            let (old, new) = match w.old {
                Side::Cache => (cache, remote),
                Side::Remote => (remote, cache),
            };
            ContentDiff {
                path: w.path.clone(),
                shown_for: w.shown_for,
                old: w.old,
                new: w.new,
                old_size: old.size(),
                new_size: new.size(),
                body: body_of(w, &old, &new),
                read_remote,
            }
        })
        .collect()
}

fn body_of(w: &Wanted, old: &Body, new: &Body) -> DiffBody {
    let side = |s: Side| match s {
        Side::Cache => "cache",
        Side::Remote => "remote",
    };
    for b in [old, new] {
        if let Body::Unavailable { reason, .. } = b {
            return DiffBody::Unavailable {
                reason: reason.clone(),
            };
        }
    }
    if matches!(old, Body::TooLarge { .. }) || matches!(new, Body::TooLarge { .. }) {
        return DiffBody::TooLarge {
            limit: crate::state::DIFF_SIZE_CAP,
        };
    }
    let text = |b: &Body| match b {
        Body::Absent => Some(String::new()),
        Body::Text(t) => Some(t.clone()),
        _ => None,
    };
    match (text(old), text(new)) {
        (Some(o), Some(n)) => {
            let label = |s: Side, b: &Body| match b {
                Body::Absent => format!("{}/{} (deleted)", side(s), w.path),
                _ => format!("{}/{}", side(s), w.path),
            };
            DiffBody::Text {
                diff: similar::TextDiff::from_lines(&o, &n)
                    .unified_diff()
                    .context_radius(3)
                    .header(&label(w.old, old), &label(w.new, new))
                    .to_string(),
            }
        }
        _ => DiffBody::Binary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(old: Side, new: Side) -> Wanted {
        Wanted {
            path: TierPath::parse("outputs/r.txt").unwrap(),
            shown_for: DiffFor::Conflict,
            old,
            new,
            cache: true,
            remote: None,
        }
    }

    #[test]
    fn a_deleted_side_diffs_as_empty_and_is_named_so() {
        let w = want(Side::Remote, Side::Cache);
        let d = content_diffs(
            &[w],
            vec![(Body::Text("kept\n".into()), Body::Absent, false)],
        );
        assert_eq!(d[0].old_size, None);
        assert_eq!(d[0].new_size, Some(5));
        let DiffBody::Text { diff } = &d[0].body else {
            panic!("{:?}", d[0].body)
        };
        assert!(
            diff.starts_with("--- remote/outputs/r.txt (deleted)\n+++ cache/outputs/r.txt\n"),
            "{diff}"
        );
        assert!(diff.contains("+kept\n"), "{diff}");
    }

    #[test]
    fn what_cannot_be_shown_says_why_unreadable_first_then_too_large_then_binary() {
        let w = [want(Side::Remote, Side::Cache)];
        let body = |cache: Body, remote: Body| {
            content_diffs(&w, vec![(cache, remote, true)])[0]
                .body
                .clone()
        };
        let unread = Body::Unavailable {
            size: Some(1),
            reason: "changed".into(),
        };
        assert!(matches!(
            body(Body::TooLarge { size: 1 << 20 }, unread),
            DiffBody::Unavailable { .. }
        ));
        assert!(matches!(
            body(Body::TooLarge { size: 1 << 20 }, Body::Binary { size: 3 }),
            DiffBody::TooLarge { .. }
        ));
        assert!(matches!(
            body(Body::Text("a".into()), Body::Binary { size: 3 }),
            DiffBody::Binary
        ));
    }

    #[test]
    fn only_replacing_transfers_are_wanted_and_only_with_diff() {
        use crate::digest::Sha256;
        let sha = Sha256::parse(&"a".repeat(64)).unwrap();
        let plan = Plan {
            scope: crate::state::Scope::Sync,
            target: super::super::PlacementInfo {
                datastore: crate::config::DatastoreConfig::Local,
                namespace: None,
                root: ".swamp".into(),
                dir: "/r/.swamp".into(),
            },
            sources: vec![],
            remote: None,
            actions: vec![
                Action::Upload(Upload {
                    path: TierPath::parse("outputs/new").unwrap(),
                    size: 1,
                    sha256: sha,
                    remote: RemoteExpect::Absent,
                    settled_by: None,
                }),
                Action::Upload(Upload {
                    path: TierPath::parse("outputs/old").unwrap(),
                    size: 1,
                    sha256: sha,
                    remote: RemoteExpect::Version {
                        version: "v1".into(),
                    },
                    settled_by: None,
                }),
                Action::Download(Download {
                    path: TierPath::parse("outputs/fresh").unwrap(),
                    size: 1,
                    version: "v2".into(),
                    expect: crate::plan::Expect::Unknown,
                    local: None,
                    settled_by: None,
                }),
            ],
            conflicts: vec![],
            no_undo: false,
            diffs: vec![],
            resumes: vec![],
            other_clones: Vec::new(),
            authored: Vec::new(),
        };
        let none: crate::state::RemoteSnapshot = serde_json::from_value(serde_json::json!({
            "url": "s3://b/p/",
            "key_prefix": "p/",
            "files": {},
            "objects": 0,
            "base": {},
        }))
        .unwrap();
        assert!(wanted(&plan, &none, false).is_empty());
        let w = wanted(&plan, &none, true);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].path.as_str(), "outputs/old");
        assert_eq!(w[0].shown_for, DiffFor::Upload);
    }
}
