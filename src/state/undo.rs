//! What `swamp undo` plans from: for each entry of a journal, what is at
//! the file's place now and what is in the apply's trash.

use std::io;
use std::path::Path;

use crate::fsutil;
use crate::layout::Layout;
use crate::undo::Journal;

/// What is at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Absent,
    File {
        sha256: String,
    },
    /// Something that is not a regular file (named: "symlink", "directory", …).
    Other(&'static str),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryState {
    pub file: Found,
    pub trash: Found,
}

/// One [`EntryState`] per journal entry, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UndoObserved {
    pub entries: Vec<EntryState>,
}

fn found(path: &Path) -> io::Result<Found> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Found::Absent),
        Err(e) => return Err(e),
    };
    let ft = meta.file_type();
    if ft.is_symlink() {
        Ok(Found::Other("symlink"))
    } else if ft.is_dir() {
        Ok(Found::Other("directory"))
    } else if !ft.is_file() {
        Ok(Found::Other("special file"))
    } else {
        Ok(Found::File {
            sha256: fsutil::sha256_file(path)?,
        })
    }
}

/// Observes every entry of `journal`.
pub fn observe(layout: &Layout, journal: &Journal) -> io::Result<UndoObserved> {
    let mut out = UndoObserved::default();
    for e in &journal.entries {
        let file = layout.file_path(&e.placement, &e.path);
        // A symlink among the directories above is never followed.
        let file_state =
            match fsutil::symlink_below(&layout.link_check_root(&e.placement, &file), &file)? {
                Some(_) => Found::Other("path through a symlink"),
                None => found(&file)?,
            };
        let trash = found(&layout.trash_path(&e.placement, &e.path, &journal.id))?;
        out.entries.push(EntryState {
            file: file_state,
            trash,
        });
    }
    Ok(out)
}
