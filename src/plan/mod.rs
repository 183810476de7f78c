//! Plans: typed actions and conflicts ([`action`]), the pure diff that
//! produces them ([`diff`]), the observed-state fingerprint that makes a
//! saved plan refusable when stale ([`fingerprint`]), rendering for people
//! and machines ([`render`]), and saving/loading ([`file`]).

pub mod action;
pub(crate) mod clones;
pub(crate) mod compose;
pub(crate) mod diff;
pub(crate) mod drain;
pub(crate) mod file;
pub(crate) mod fingerprint;
pub(crate) mod managed;
pub mod resume;
pub(crate) mod retention;
pub(crate) mod sync_diff;
pub mod textdiff;
pub(crate) mod undo;

pub use action::{
    AbortWhy, Action, BaseRecord, Conflict, PlacementInfo, Plan, RemoteExpect, RemoteInfo,
    RemoteObjectRef, RequestEstimate, Side, Summary, UnhydratedRecord,
};
pub use diff::diff;
pub use file::{LockInfo, PlanFileError, SavedPlan};
pub use fingerprint::Fingerprint;

/// Version of the plan JSON document (`--json` and saved plan files).
/// Additive changes keep it; anything a reader must understand bumps it.
pub const FORMAT_VERSION: u32 = 1;

/// `root` relative to `repo` when inside it, with a trailing slash (an
/// empty `repo`: no repository, the path as it is).
pub fn root_label(root: &std::path::Path, repo: &std::path::Path) -> String {
    if repo.as_os_str().is_empty() {
        return format!("{}/", root.display());
    }
    let shown = match root.strip_prefix(repo) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => root.display().to_string(),
    };
    format!("{shown}/")
}
