//! The two inputs of every plan: what should be ([`desired`]) and what is
//! ([`observed`], read through the one function [`observe()`]), plus the
//! persistent caches that keep observing cheap: file hashes
//! ([`hash_cache`]) and directory listings ([`dir_listings`]), used by the
//! parallel [`walk`]. Nothing else that planning uses touches the disk or
//! the network.

pub mod base;
pub mod deliberate;
pub mod desired;
pub mod dir_listings;
pub mod hash_cache;
pub mod managed;
pub mod observe;
pub mod observed;
pub mod remote;
pub mod undo;
pub mod walk;

pub use base::{BaseEntry, SyncBase, Unhydrated};
pub use desired::{Desired, Direction, Scope};
pub use hash_cache::{HashCache, Learnt};
pub use observe::{ObserveOptions, observe, observe_local};
pub use observed::{FileState, Observed, Obstacle, ObstacleKind, PlacementState, TextPair};
pub use remote::{RemoteObject, RemoteSnapshot};
