//! The two inputs of every diff: what should be ([`desired`]) and what is
//! ([`observed`]), plus the persistent hash cache that keeps observing cheap.

pub mod base;
pub mod desired;
pub mod hash_cache;
pub mod observed;
pub mod remote;

pub use base::{BaseEntry, SyncBase};
pub use desired::{Desired, Scope};
pub use hash_cache::HashCache;
pub use observed::{FileState, Observed, Obstacle, ObstacleKind, PlacementState};
pub use remote::{RemoteObject, RemoteSnapshot};
