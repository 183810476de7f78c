//! The managed-config mirror (`datastore config migrate`): what the mirror
//! should hold, a cache-only copy when the remote is out of reach, and
//! whether the cache already holds the repository's definitions.

use std::path::Path;

use super::{ApplyReport, EngineError, check_supported, observe};
use crate::apply;
use crate::config::Config;
use crate::layout::Layout;
use crate::state::managed::{self, config_only, sentinel_path};
use crate::state::{self, Desired, Scope};

/// What the managed-config mirror should hold for `scope` (see
/// [`state::observe::mirror`]).
pub(crate) fn managed_mirror(
    layout: &Layout,
    config: &Config,
    scope: Scope,
) -> Result<Option<managed::Mirror>, EngineError> {
    Ok(state::observe::mirror(layout, config, scope)?)
}

/// `datastore config migrate` with the remote out of reach: the mirror
/// copies into the cache only, so the migration is kept locally and the
/// next run publishes it. Returns `None` (and changes nothing) when that
/// cannot be done safely without the remote: a cache copy would be
/// replaced, or the cache holds a sentinel pulled from the remote (then the
/// remote must judge).
pub(crate) fn mirror_offline(
    repo: &Path,
    layout: &Layout,
    config: &Config,
) -> Result<Option<ApplyReport>, EngineError> {
    check_supported(config, Scope::Config)?;
    let desired = Desired::from_config(config, Scope::Config);
    let observed = observe(layout, &desired)?;
    let cache = &observed.placements[0].files;
    if cache.contains_key(&sentinel_path()) {
        return Ok(None);
    }
    let mirror = managed_mirror(layout, config, Scope::Config)?.unwrap_or_default();
    let actions = crate::plan::managed::mirror_actions(&mirror, &config_only(cache));
    if actions
        .iter()
        .any(|a| matches!(a, crate::plan::Action::MirrorConfig(m) if m.local.is_some()))
    {
        return Ok(None);
    }
    let mut plan = crate::plan::diff(&desired, &observed);
    plan.actions = actions;
    plan.conflicts.clear();
    let report = apply::apply(
        &plan,
        layout,
        repo,
        (None, &[]),
        apply::Options::transfers(config.sync.concurrency),
    )?;
    Ok(Some(report))
}

/// Every definition file is in the cache as the repository has it (the
/// migration was saved locally); `false` when that cannot be told.
pub(crate) fn saved_locally(layout: &Layout, config: &Config) -> bool {
    let Ok(Some(mirror)) = managed_mirror(layout, config, Scope::Config) else {
        return false;
    };
    let desired = Desired::from_config(config, Scope::Config);
    let Ok(observed) = observe(layout, &desired) else {
        return false;
    };
    let cache = config_only(&observed.placements[0].files);
    mirror
        .files
        .iter()
        .all(|(p, f)| cache.get(p).map(|c| &c.sha256) == Some(&f.sha256))
}
