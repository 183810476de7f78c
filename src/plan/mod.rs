//! Plans: typed actions and conflicts ([`action`]), the pure diff that
//! produces them ([`diff`]), the observed-state fingerprint that makes a
//! saved plan refusable when stale ([`fingerprint`]), rendering for people
//! and machines ([`render`]), and saving/loading ([`file`]).

pub mod action;
pub mod clones;
pub mod compose;
pub mod diff;
pub mod drain;
pub mod file;
pub mod fingerprint;
pub mod managed;
pub mod render;
pub mod retention;
pub mod sync_diff;
pub mod textdiff;
pub mod undo;

pub use action::{
    Action, BaseRecord, Conflict, PlacementInfo, Plan, RemoteExpect, RemoteInfo, RemoteObjectRef,
    RequestEstimate, Side, Summary, UnhydratedRecord,
};
pub use diff::diff;
pub use file::{LockInfo, PlanFileError, SavedPlan};
pub use fingerprint::Fingerprint;

/// Version of the plan JSON document (`--json` and saved plan files).
/// Additive changes keep it; anything a reader must understand bumps it.
pub const FORMAT_VERSION: u32 = 1;
