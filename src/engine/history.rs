//! `swamp history` through the engine: the team's records of the
//! namespace in the bucket ([`team`]), and one record's changes ([`show`]).
//! This clone's own journals are read by the command itself
//! (`journal::Journal::all`).

use crate::config::Config;
use std::collections::{BTreeMap, BTreeSet};

use crate::journal::record::{Change, ChangeOp, RecordHead};
use crate::layout::Layout;
use crate::layout::TierPath;
use crate::plan::{Action, Authored, Plan};
use crate::state::history::{self, HistoryReadError};
use crate::store::RemoteTarget;

use super::EngineError;

pub(crate) use crate::state::history::TeamHistory;

/// The team's history of the configured namespace: `None` when the
/// datastore is not in a bucket (the history is this clone's alone).
pub(crate) fn team(layout: &Layout, config: &Config) -> Result<Option<TeamHistory>, EngineError> {
    let placement = config.target();
    if !placement.datastore.is_remote() {
        return Ok(None);
    }
    let target = RemoteTarget::open(&placement)?;
    let dir = layout.history_cache_dir(&placement);
    let mut read = crate::store::runtime().block_on(history::read(&target, &dir))?;
    read.me = me(layout)?;
    Ok(Some(read))
}

/// This clone's id, which its records name.
fn me(layout: &Layout) -> Result<String, HistoryReadError> {
    crate::state::delete_records::clone_id(layout).map_err(|source| HistoryReadError::Io {
        action: "read",
        path: layout.clone_id_path(),
        source,
    })
}

/// This clone's own records kept on this machine (no request): none when
/// the datastore is not in a bucket.
pub(crate) fn mine(layout: &Layout, config: &Config) -> Result<TeamHistory, EngineError> {
    let placement = config.target();
    if !placement.datastore.is_remote() {
        return Ok(TeamHistory::default());
    }
    let me = me(layout)?;
    let mut records = history::kept(&layout.history_cache_dir(&placement));
    records.retain(|r| r.clone == me);
    Ok(TeamHistory {
        records,
        me,
        unreadable: Vec::new(),
    })
}

/// Apply `id`'s record and its changes, read through [`team`].
pub(crate) fn show(
    layout: &Layout,
    config: &Config,
    id: &str,
) -> Result<Option<(RecordHead, Vec<Change>)>, EngineError> {
    let Some(team) = team(layout, config)? else {
        return Ok(None);
    };
    let Some(head) = team.records.into_iter().find(|r| r.id == id) else {
        return Ok(None);
    };
    let dir = layout.history_cache_dir(&config.target());
    let changes = history::changes(&dir, id)?;
    Ok(Some((head, changes)))
}

/// Who made the remote changes `plan` follows (its downloads and cache
/// deletes), from the team's history: the records listed that were made
/// since this clone's last sync (an hour of slack for clocks), each read
/// once and kept; the newest record naming a path names its author. A
/// plan with no such change, or a first sync, reads none.
pub(crate) fn attribute(
    layout: &Layout,
    observed: &crate::state::Observed,
    plan: &mut Plan,
) -> Result<(), EngineError> {
    let Some(snapshot) = observed.remote.as_ref().filter(|s| !s.history.is_empty()) else {
        return Ok(());
    };
    let wanted: BTreeSet<&TierPath> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Download(d) => Some(&d.path),
            Action::DeleteLocal(d) => Some(&d.path),
            _ => None,
        })
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let placement = plan.target.placement();
    let synced = std::fs::metadata(layout.sync_base_path(&placement))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    let Some(synced) = synced else {
        return Ok(());
    };
    let since = synced.as_secs().saturating_sub(3600);
    let target = RemoteTarget::open(&placement)?;
    let dir = layout.history_cache_dir(&placement);
    let mut found: BTreeMap<TierPath, Authored> = BTreeMap::new();
    let visit = |head: &RecordHead, changes: Vec<Change>| {
        for c in changes {
            let Some(path) = c
                .key
                .strip_prefix(&head.prefix)
                .and_then(|p| TierPath::parse(p).ok())
                .filter(|p| wanted.contains(p) && !found.contains_key(p))
            else {
                continue;
            };
            let change = match c.op {
                ChangeOp::Create => "created",
                ChangeOp::Replace => "replaced",
                ChangeOp::Delete => "deleted",
            };
            found.insert(
                path.clone(),
                Authored {
                    path,
                    change: change.to_string(),
                    id: head.id.clone(),
                    by: head.by.clone(),
                    at: head.at.clone(),
                },
            );
        }
    };
    crate::store::runtime().block_on(history::recent(
        &target,
        &dir,
        &snapshot.history,
        since,
        visit,
    ))?;
    plan.authored = found.into_values().collect();
    Ok(())
}

impl From<HistoryReadError> for EngineError {
    fn from(e: HistoryReadError) -> EngineError {
        match e {
            HistoryReadError::Store(e) => EngineError::Store(e),
            other => EngineError::History(other),
        }
    }
}
