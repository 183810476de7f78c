//! Retention of undo trash (`[undo] keep_days`, `max_bytes`): which
//! applies' trash a plan prunes. Pure: the trash held is observed by
//! `state::journaled::held`, the clock is an input.
//!
//! Pruning is an action of the plan like any other, listed for review and
//! applied in its turn, so trash never disappears behind a plan's back.

use crate::plan::action::{PruneHistory, PruneTrash, RemoteObjectRef};
use crate::state::journaled::Held;

use super::action::{Action, PruneReason};

/// How long trash is kept, and how much of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    pub keep_days: u32,
    pub max_bytes: Option<u64>,
}

impl From<&crate::config::UndoConfig> for Policy {
    fn from(c: &crate::config::UndoConfig) -> Policy {
        Policy {
            keep_days: c.keep_days,
            max_bytes: c.max_bytes,
        }
    }
}

/// The prune actions due at `now` (seconds since the epoch): every apply
/// older than `keep_days`, then, while what is left on this machine
/// exceeds `max_bytes`, the oldest of the rest. `held` is oldest first.
pub(crate) fn prunes(held: &[Held], policy: Policy, now: u64) -> Vec<Action> {
    let keep = u64::from(policy.keep_days) * 86_400;
    let expired = |h: &Held| h.at_secs.is_some_and(|at| now.saturating_sub(at) > keep);
    let mut out = Vec::new();
    let mut left: u64 = held.iter().filter(|h| !expired(h)).map(|h| h.bytes).sum();
    for h in held {
        let reason = if expired(h) {
            PruneReason::Expired
        } else if policy.max_bytes.is_some_and(|max| left > max) && h.bytes > 0 {
            left -= h.bytes;
            PruneReason::OverMaxBytes
        } else {
            continue;
        };
        out.push(Action::PruneTrash(PruneTrash {
            id: h.id.clone(),
            at: h.at.clone(),
            reason,
            files: h.files,
            bytes: h.bytes,
            remote_objects: h.remote_objects,
        }));
    }
    out
}

/// Drops, from the prunes of a plan with nothing else to do (`work`
/// false), those of applies that hold nothing in the trash, only the list
/// of what they made (`journal::made`): such a list goes with a plan that
/// changes something anyway, as the history's prunes do; alone, it would
/// keep a converged sync from being one.
pub(crate) fn lists_ride_along(prunes: &mut Vec<Action>, work: bool) {
    if !work {
        prunes.retain(
            |a| !matches!(a, Action::PruneTrash(p) if p.files == 0 && p.remote_objects == 0),
        );
    }
}

/// The team's history records older than `keep_days` at `now` (seconds
/// since the epoch), as their apply ids date them: one action, or none.
/// A key whose id tells no time is never pruned.
pub(crate) fn history_prunes(
    listed: &[crate::state::history::ListedRecord],
    history_prefix: &str,
    keep_days: u32,
    now: u64,
) -> Option<Action> {
    let keep = u64::from(keep_days) * 86_400;
    let prune: Vec<RemoteObjectRef> = listed
        .iter()
        .filter(|r| {
            crate::state::history::listed_id(history_prefix, &r.key)
                .and_then(crate::journal::record::id_time)
                .is_some_and(|at| now.saturating_sub(at) > keep)
        })
        .map(|r| RemoteObjectRef {
            key: r.key.as_str().into(),
            version: r.version.as_str().into(),
        })
        .collect();
    (!prune.is_empty()).then_some(Action::PruneHistory(PruneHistory { prune, keep_days }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_records_go_once_their_ids_are_older_than_keep_days() {
        let listed = |id: &str| crate::state::history::ListedRecord {
            key: format!("p/lab/.swamp/history/{id}.json"),
            version: "v1".into(),
            size: 100,
        };
        let records = [
            listed("20261101T000000Z-000001"),
            listed("20261130T000000Z-000002"),
            listed("not-a-time"),
        ];
        // 2026-12-07T00:00:00Z, 14 days kept.
        let now = 1_796_601_600;
        let Some(Action::PruneHistory(p)) =
            history_prunes(&records, "p/lab/.swamp/history/", 14, now)
        else {
            panic!("the oldest is due");
        };
        assert_eq!(p.keep_days, 14);
        assert_eq!(
            p.prune.iter().map(|r| r.key.to_key()).collect::<Vec<_>>(),
            ["p/lab/.swamp/history/20261101T000000Z-000001.json"]
        );
        assert_eq!(
            history_prunes(&records[1..], "p/lab/.swamp/history/", 14, now),
            None
        );
    }

    const DAY: u64 = 86_400;

    fn held(id: &str, at_secs: u64, bytes: u64) -> Held {
        Held {
            id: id.into(),
            at: format!("t{at_secs}"),
            at_secs: Some(at_secs),
            files: 1,
            bytes,
            remote_objects: 0,
        }
    }

    fn ids(actions: &[Action]) -> Vec<(String, PruneReason)> {
        actions
            .iter()
            .map(|a| match a {
                Action::PruneTrash(PruneTrash { id, reason, .. }) => (id.clone(), *reason),
                other => panic!("not a prune: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn only_trash_older_than_keep_days_expires() {
        let now = 100 * DAY;
        let held = [
            held("old", now - 8 * DAY, 10),
            held("edge", now - 7 * DAY, 10),
            held("new", now - DAY, 10),
        ];
        let policy = Policy {
            keep_days: 7,
            max_bytes: None,
        };
        assert_eq!(
            ids(&prunes(&held, policy, now)),
            [("old".into(), PruneReason::Expired)]
        );
    }

    #[test]
    fn over_max_bytes_the_oldest_go_first_until_under() {
        let now = 100 * DAY;
        let held = [
            held("a", now - 3 * DAY, 50),
            held("b", now - 2 * DAY, 50),
            held("c", now - DAY, 50),
        ];
        let policy = Policy {
            keep_days: 7,
            max_bytes: Some(60),
        };
        assert_eq!(
            ids(&prunes(&held, policy, now)),
            [
                ("a".into(), PruneReason::OverMaxBytes),
                ("b".into(), PruneReason::OverMaxBytes)
            ]
        );
    }

    #[test]
    fn expired_trash_counts_against_max_bytes_no_more() {
        let now = 100 * DAY;
        let held = [held("old", now - 30 * DAY, 1000), held("new", now, 10)];
        let policy = Policy {
            keep_days: 7,
            max_bytes: Some(100),
        };
        assert_eq!(
            ids(&prunes(&held, policy, now)),
            [("old".into(), PruneReason::Expired)]
        );
    }

    #[test]
    fn an_unreadable_time_never_expires() {
        let mut h = held("x", 0, 1);
        h.at_secs = None;
        let policy = Policy {
            keep_days: 0,
            max_bytes: None,
        };
        assert!(prunes(&[h], policy, 100 * DAY).is_empty());
    }
}
