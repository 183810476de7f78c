//! Helpers shared by the unit tests beside the code (compiled only for
//! them): values made the way the code makes them, without ceremony.

use crate::layout::TierPath;

/// A tier path that must parse (`data/a/1/raw`).
pub(crate) fn tp(s: &str) -> TierPath {
    TierPath::parse(s).expect("a valid tier path")
}
