//! `swamp history` through the engine: the team's records of the
//! namespace in the bucket ([`team`]), and one record's changes ([`show`]).
//! This clone's own journals are read by the command itself
//! (`journal::Journal::all`).

use crate::config::Config;
use crate::journal::record::{Change, RecordHead};
use crate::layout::Layout;
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
    read.me =
        crate::state::delete_records::clone_id(layout).map_err(|source| HistoryReadError::Io {
            action: "read",
            path: layout.clone_id_path(),
            source,
        })?;
    Ok(Some(read))
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

impl From<HistoryReadError> for EngineError {
    fn from(e: HistoryReadError) -> EngineError {
        match e {
            HistoryReadError::Store(e) => EngineError::Store(e),
            other => EngineError::History(other),
        }
    }
}
