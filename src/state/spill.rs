//! What a run writes aside rather than hold while it applies, for the
//! verifying plan alone to read back ([`super::KeptListing`],
//! [`super::Learnt::spilling_in`]): when to, and where.

use std::fs::File;
use std::io;
use std::path::Path;

/// A listing of at least this many files, and what at least this many
/// downloads teach, are spilled while the apply runs. `SWAMP_SPILL_AT`
/// sets another (tests spill a few files, as `SWAMP_COPY_PART_MIB` has
/// them copy small objects in parts).
pub(crate) fn threshold() -> usize {
    std::env::var("SWAMP_SPILL_AT")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(1 << 14, |n| n.max(1))
}

/// An unnamed file in `dir` (created if missing), on the clone's own disk
/// rather than a tmpfs: no other process can open it by name, and it goes
/// with its last handle.
pub(super) fn scratch_file(dir: &Path) -> io::Result<File> {
    std::fs::create_dir_all(dir)?;
    tempfile::tempfile_in(dir)
}
