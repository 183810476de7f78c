//! What an apply made that holds no trash: files it downloaded into
//! absent paths, objects it uploaded into absent keys, files it moved from
//! one place to another. An undo reverses these too (sets the made ones
//! aside, moves the moved ones back), so it reverses the whole apply.
//!
//! Kept beside the journal in `<id>.made`, one JSON line per file and
//! written as a stream from the plan: a pull of a million files is a
//! million lines, which neither the apply nor retention (which reads every
//! journal on every sync, and needs only what is in the trash) holds in
//! memory. Only an undo of that apply reads them.

use std::io::{self, BufRead};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::config::Placement;
use crate::fsutil;
use crate::layout::{Layout, TierPath};

use super::{Entry, Op, UndoError, io_err};

/// What the journal's head says of its `.made` file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MadeHead {
    /// The places its lines name, by index (the apply's target first).
    pub places: Vec<Placement>,
    /// Lines in the file.
    pub count: u64,
}

/// One thing the apply made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Made {
    pub op: MadeOp,
    pub path: TierPath,
    /// What the apply wrote; empty when the plan did not know it (a
    /// download of another tool's object, learnt as it landed).
    pub sha256: String,
    pub size: u64,
    /// Where it was made: an index in [`MadeHead::places`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub at: usize,
    /// For a move: the index in [`MadeHead::places`] of where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<usize>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum MadeOp {
    /// A cache (or local datastore) file downloaded into an absent path.
    Created,
    /// An object uploaded into an absent key.
    RemoteCreated,
    /// A file moved here from another place (a layout or namespace move).
    Moved,
}

impl MadeOp {
    /// A journal entry's op for it.
    fn op(self) -> Op {
        match self {
            MadeOp::Created => Op::Created,
            MadeOp::RemoteCreated => Op::RemoteCreated,
            MadeOp::Moved => Op::Moved,
        }
    }

    /// It for a journal entry's op, when the op is one a `.made` file holds.
    fn of(op: Op) -> Option<MadeOp> {
        [MadeOp::Created, MadeOp::RemoteCreated, MadeOp::Moved]
            .into_iter()
            .find(|m| m.op() == op)
    }
}

/// Writes `made` to `path` atomically, one line each, and returns how
/// many there were.
pub(crate) fn write(path: &Path, made: impl Iterator<Item = Made>) -> Result<u64, UndoError> {
    let mut count = 0;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_err("create", dir))?;
    }
    fsutil::atomic_write_with(path, |w| {
        for m in made {
            serde_json::to_writer(&mut *w, &m).map_err(io::Error::other)?;
            w.write_all(b"\n")?;
            count += 1;
        }
        Ok(())
    })
    .map_err(io_err("write", path))?;
    Ok(count)
}

/// The journal entries of apply `id`'s `.made` file, as `head` describes
/// it: each placement shared by its entries.
pub(crate) fn read(layout: &Layout, id: &str, head: &MadeHead) -> Result<Vec<Entry>, UndoError> {
    let path = layout.made_path(id);
    let file = std::fs::File::open(&path).map_err(io_err("read", &path))?;
    let places: Vec<Arc<Placement>> = head.places.iter().cloned().map(Arc::new).collect();
    let malformed = |message: String| UndoError::Malformed {
        path: path.clone(),
        message,
    };
    let mut out = Vec::new();
    for line in io::BufReader::new(file).lines() {
        let line = line.map_err(io_err("read", &path))?;
        let m: Made = serde_json::from_str(&line).map_err(|e| malformed(e.to_string()))?;
        let place = |i: usize| {
            places
                .get(i)
                .map(Arc::clone)
                .ok_or_else(|| malformed(format!("{}: no place {i}", m.path)))
        };
        let at = place(m.at)?;
        let from = match (m.op, m.from) {
            (MadeOp::Moved, Some(i)) => Some(place(i)?),
            (MadeOp::Moved, None) => {
                return Err(malformed(format!("{}: a move from nowhere", m.path)));
            }
            _ => None,
        };
        out.push(Entry {
            op: m.op.op(),
            placement: at,
            path: m.path,
            sha256: m.sha256,
            size: m.size,
            written: None,
            from,
        });
    }
    Ok(out)
}

/// Writes `entries` (moves) as apply `id`'s `.made` file, and returns the
/// head its journal keeps.
pub(crate) fn write_entries(
    layout: &Layout,
    id: &str,
    entries: Vec<Entry>,
) -> Result<MadeHead, UndoError> {
    let mut places: Vec<Placement> = Vec::new();
    let mut index = |p: &Placement| match places.iter().position(|q| q == p) {
        Some(i) => i,
        None => {
            places.push(p.clone());
            places.len() - 1
        }
    };
    let lines: Vec<Made> = entries
        .into_iter()
        .filter_map(|e| {
            let op = MadeOp::of(e.op)?;
            Some(Made {
                op,
                at: index(&e.placement),
                from: e.from.as_deref().map(&mut index),
                path: e.path,
                sha256: e.sha256,
                size: e.size,
            })
        })
        .collect();
    let count = write(&layout.made_path(id), lines.into_iter())?;
    Ok(MadeHead { places, count })
}
