//! The reconcile loop every command shares, and nothing else: desired
//! state from the configuration and the command's scope, one observation
//! ([`state::observe()`]), the pure [`compose`] into a plan; then apply,
//! observe again, compose again, and confirm the new plan is empty
//! (converged); [`flow`] runs that sequence for a command. A saved plan is
//! re-derived the same way ([`rederive_plan`], [`rederive_undo`]).

pub(crate) mod flow;
pub(crate) mod history;
pub(crate) mod hydrate;
pub(crate) mod locks;
pub(crate) mod mirror;
pub(crate) mod registry;
pub(crate) mod undo;

pub(crate) use crate::store::RemoteTarget;
pub(crate) use crate::store::{StoreError, outage};

use std::path::Path;

use crate::apply;
pub(crate) use crate::apply::undo::UndoApplyError;
pub(crate) use crate::apply::{ApplyError, ApplyReport};
use crate::config::{Config, ConfigError, ConflictPolicy};
use crate::layout::{Layout, LayoutError};
use crate::plan::compose::{self, Amendments, amend, compose};
use crate::plan::fingerprint::explain_changes;
use crate::plan::stale::{
    conflict_difference, first_action_difference, first_difference, settle_prunes,
};
use crate::plan::{Fingerprint, Plan, SavedPlan};
pub(crate) use crate::state::Scope;
pub(crate) use crate::state::base::BaseError;
use crate::state::managed;
use crate::state::tree::ObserveError;
use crate::state::{self, Desired, ObserveOptions, Observed};

/// How a sync plan treats conflicts and guards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncOptions {
    /// Overrides `[sync] conflict` for this run.
    pub conflict: Option<ConflictPolicy>,
    /// Overrides the delete guards.
    pub force: bool,
    /// With `force`: also deletes cache files that are the only copy of
    /// their content.
    pub force_delete_local: bool,
    /// Plans as a first sync: the last sync's record is set aside.
    pub no_base: bool,
    /// Deletes and replacements are final for this run (no trash).
    pub no_undo: bool,
    /// Downloads what lazy pulls recorded as in the remote only.
    pub hydrate: bool,
    /// This run's hydration (`datastore setup --hydration`), before this
    /// clone's setting and the repository's default.
    pub hydration: Option<crate::config::Hydration>,
    /// `plan --diff`: also show what each replaced text file changes.
    pub diff: bool,
    /// `datastore setup --keep-source`: a move copies, and leaves the old
    /// place's objects where they are (with its `moved` marker).
    pub keep_source: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error(transparent)]
    Observe(#[from] ObserveError),
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Remote(#[from] crate::state::remote::RemoteError),
    #[error(transparent)]
    Base(#[from] crate::state::base::BaseError),
    #[error(transparent)]
    Registration(#[from] registry::RegistrationError),
    #[error(transparent)]
    Managed(#[from] managed::ManagedError),
    #[error("cannot read the team's history: {0}")]
    History(crate::state::history::HistoryReadError),
    #[error("cannot read the undo trash: {0}")]
    Trash(#[from] crate::state::journaled::UndoObserveError),
    #[error(
        "the `config` directory is not part of the datastore (`directories` in .swamp.toml leaves it out), so managed config has nowhere to go; nothing was changed"
    )]
    ConfigTierExcluded,
    #[error(
        "{} needs a remote datastore (s3 or gcs); this repository uses `{datastore}`",
        scope_needs(*scope)
    )]
    ScopeNeedsRemote { scope: Scope, datastore: String },
    #[error(
        "`--conflict {}` does not settle {} conflicts ({}); it settles {}; nothing was changed",
        .0.policy,
        .0.kinds.join(", "),
        .0.paths.join(", "),
        if .0.settles.is_empty() { "none".to_string() } else { .0.settles.join(" and ") }
    )]
    PolicyMisfit(crate::plan::conflict::Misfit),
    #[error("the datastore moved away from {from}: it is at {to} now; nothing was changed")]
    MovedAway {
        from: String,
        to: String,
        /// What `swamp datastore setup` takes to follow it (a remote).
        spec: Option<String>,
    },
    #[error("{datastore} datastores are not supported by this version of swamp")]
    DatastoreUnsupported { datastore: String },
    #[error(
        "the saved {}plan is stale; since it was made:\n  - {}",
        if .undoes.is_some() { "undo " } else { "" },
        .changes.join("\n  - ")
    )]
    Stale {
        changes: Vec<String>,
        /// The apply a stale undo plan reverses (`None`: a plan of changes).
        undoes: Option<String>,
    },
    #[error("the saved plan was made for repository {planned}, not this one ({actual})")]
    WrongRepo { planned: String, actual: String },
    #[error(transparent)]
    Undo(#[from] crate::journal::UndoError),
    /// `undo` without an id, after an apply that did not finish.
    #[error("the last apply, {id}, was cut short; name the apply to reverse")]
    LastCutShort {
        id: String,
        /// The apply it was undoing, when it was an undo.
        undoes: Option<String>,
    },
    #[error("cannot observe the files of apply {id}: {source}")]
    UndoObserve {
        id: String,
        #[source]
        source: crate::state::journaled::UndoObserveError,
    },
    #[error(transparent)]
    UndoApply(#[from] crate::apply::undo::UndoApplyError),
    #[error("cannot prune the trash of apply {id}: {source}")]
    Prune {
        id: String,
        #[source]
        source: crate::apply::prune::PruneError,
    },
}

impl EngineError {
    /// The store error this one is, through the layers that wrap it.
    pub fn store_error(&self) -> Option<&crate::store::StoreError> {
        use crate::state::remote::RemoteError;
        match self {
            EngineError::Store(e)
            | EngineError::Remote(RemoteError::Store(e))
            | EngineError::Observe(ObserveError::Store(e))
            | EngineError::Observe(ObserveError::Remote(RemoteError::Store(e))) => Some(e),
            EngineError::Apply(e) => e.store_error(),
            _ => None,
        }
    }

    /// What, under the layers that carry it, this error is about: the
    /// kinds the CLI's hint table tells remedies for.
    pub fn cause(&self) -> Cause<'_> {
        use crate::state::journaled::UndoObserveError;
        match self {
            EngineError::Base(b) | EngineError::Observe(ObserveError::Base(b)) => Cause::Base(b),
            EngineError::Undo(u)
            | EngineError::Trash(UndoObserveError::Journal(u))
            | EngineError::UndoObserve {
                source: UndoObserveError::Journal(u),
                ..
            } => Cause::Journal(u),
            EngineError::Trash(UndoObserveError::NoRemote { .. })
            | EngineError::UndoObserve {
                source: UndoObserveError::NoRemote { .. },
                ..
            } => Cause::UndoRemoteGone,
            EngineError::UndoApply(u) => Cause::UndoApply(u),
            EngineError::Layout(LayoutError::NoHome) => Cause::NoHome,
            EngineError::Registration(registry::RegistrationError::ForeignRemoteId { .. }) => {
                Cause::ForeignRemoteId
            }
            _ => match self.store_error() {
                Some(s) => Cause::Store(s),
                None => Cause::Other,
            },
        }
    }

    /// The datastore did not answer while planning (a transient store
    /// error from the plan's own reads), as opposed to refusing.
    pub fn remote_unreachable(&self) -> bool {
        use crate::state::remote::RemoteError;
        match self {
            EngineError::Store(s) | EngineError::Remote(RemoteError::Store(s)) => s.is_transient(),
            _ => false,
        }
    }
}

/// What an [`EngineError`] is about, under the layers that carry it.
#[derive(Debug)]
pub enum Cause<'a> {
    Store(&'a StoreError),
    Base(&'a crate::state::base::BaseError),
    Journal(&'a crate::journal::UndoError),
    UndoApply(&'a crate::apply::undo::UndoApplyError),
    /// An apply to undo changed a remote the configuration no longer names.
    UndoRemoteGone,
    /// No home directory to put SWAMP_HOME in.
    NoHome,
    /// The namespace's manifest is not swamp's.
    ForeignRemoteId,
    Other,
}

/// A computed plan with the states it came from.
#[derive(Debug, Clone)]
pub struct Planned {
    pub desired: Desired,
    pub observed: Observed,
    pub plan: Plan,
}

impl Planned {
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(&self.desired, &self.observed)
    }

    pub fn into_saved(self, config: &Config) -> SavedPlan {
        SavedPlan::new(config.repo_id, self.plan, &self.desired, self.observed)
    }
}

/// Whether `placement` holds any datastore file in this repository's
/// layout (a solo layout with data has something to migrate).
pub(crate) fn holds_data(layout: &Layout, placement: &crate::config::Placement) -> bool {
    state::tree::first_datastore_file(layout, placement).is_some()
}

/// The data store `data` commands read and write: the target placement,
/// reading through the placements still drained, knowing what a lazy pull
/// left in the remote only.
pub(crate) fn data_store<'a>(
    layout: &'a Layout,
    config: &Config,
    remote_only: Vec<crate::data::remote_only::RemoteVersion>,
) -> crate::data::DataStore<'a> {
    let desired = Desired::from_config(config, Scope::All);
    crate::data::DataStore::new(layout, desired.target)
        .with_sources(desired.sources)
        .with_remote_only(remote_only)
}

/// What a scope does, as a user would say it (they type commands, not
/// scopes).
fn scope_needs(scope: Scope) -> &'static str {
    match scope {
        Scope::Push => "pushing",
        Scope::Pull => "pulling",
        Scope::Config => "managed config",
        _ => "syncing",
    }
}

/// Refuses what this version cannot reconcile, naming why: before a
/// command writes anything for it (a refused move registers nothing).
pub(crate) fn check_supported(config: &Config, scope: Scope) -> Result<(), EngineError> {
    match scope {
        Scope::All | Scope::Layout => Ok(()),
        Scope::Sync | Scope::Push | Scope::Pull if config.datastore.is_remote() => Ok(()),
        Scope::Sync | Scope::Push | Scope::Pull => Err(EngineError::ScopeNeedsRemote {
            scope,
            datastore: config.datastore.kind().to_string(),
        }),
        Scope::Config if !config.datastore.is_remote() => Err(EngineError::ScopeNeedsRemote {
            scope,
            datastore: config.datastore.kind().to_string(),
        }),
        Scope::Config
            if config
                .directories
                .as_ref()
                .is_some_and(|d| !d.contains(&crate::layout::Tier::Config)) =>
        {
            Err(EngineError::ConfigTierExcluded)
        }
        Scope::Config => Ok(()),
    }
}

/// Observes what `desired` names locally (no remote, no mirror), with the
/// persistent hash cache.
pub(crate) fn observe(layout: &Layout, desired: &Desired) -> Result<Observed, EngineError> {
    Ok(state::observe_local(
        layout,
        desired,
        state::Learnt::default(),
        None,
    )?)
}

/// Builds the plan for `config` and `scope`.
pub(crate) fn plan(layout: &Layout, config: &Config, scope: Scope) -> Result<Planned, EngineError> {
    plan_with(layout, config, scope, SyncOptions::default())
}

/// How `options` and the configuration settle a plan's conflicts and guards.
fn compose_options(
    layout: &Layout,
    config: &Config,
    options: SyncOptions,
) -> Result<compose::Options, EngineError> {
    let clone = crate::config::clone::CloneSettings::load(&layout.clone_settings_path())?;
    let (hydration, _) = clone.hydration(config, options.hydration);
    Ok(compose::Options {
        policy: options.conflict.unwrap_or(config.sync.conflict),
        force: options.force,
        force_delete_local: options.force_delete_local,
        no_base: options.no_base,
        no_undo: options.no_undo,
        max_delete_percent: config.sync.max_delete_percent,
        lazy: config.datastore.is_remote() && hydration == crate::config::Hydration::Lazy,
        hydrate: options.hydrate,
        keep_source: options.keep_source,
    })
}

/// Builds the plan: one observation, then the pure composition.
pub(crate) fn plan_with(
    layout: &Layout,
    config: &Config,
    scope: Scope,
    options: SyncOptions,
) -> Result<Planned, EngineError> {
    plan_learnt(
        layout,
        config,
        scope,
        options,
        state::Learnt::default(),
        None,
    )
}

/// A plan made before any lock of the bucket is taken (see
/// [`plan_reading`]).
pub(crate) struct ReadFirst {
    pub planned: Planned,
    /// It writes the bucket, or the namespace is not registered to this
    /// repository yet: the run takes the datastore's lock and plans again.
    pub writes: bool,
    /// The listing showed the namespace manifest and the remote id at
    /// versions this clone read before (naming this repository): a writer's
    /// run need not read them again to register.
    pub vouched: bool,
}

/// Plans a sync of a remote datastore that may only read it, taking no
/// lock there: converged, it costs its LIST. Writers are waited out
/// (`await_writers`) only when there is something to apply or the listing
/// showed a lock: planned again when a live writer was waited out, or when
/// the listed lock has gone since (the listing may have caught its holder
/// half-way).
pub(crate) fn plan_reading<E: From<EngineError>>(
    layout: &Layout,
    config: &Config,
    scope: Scope,
    options: SyncOptions,
    mut await_writers: impl FnMut() -> Result<locks::Writers, E>,
) -> Result<ReadFirst, E> {
    let mut planned = plan_with(layout, config, scope, options)?;
    let lock_listed = planned
        .observed
        .remote
        .as_ref()
        .is_some_and(|r| r.listed.lock.is_some());
    if !lock_listed && planned.plan.writes_remote() {
        // Planned again under the lock, after waiting for it.
        let vouched = vouched(layout, config, &planned);
        return Ok(ReadFirst {
            planned,
            writes: true,
            vouched,
        });
    }
    if lock_listed || !planned.plan.is_empty() {
        let writers = await_writers()?;
        if writers.waited || (lock_listed && writers.ours_free) {
            planned = plan_with(layout, config, scope, options)?;
        }
    }
    let manifest = planned
        .observed
        .remote
        .as_ref()
        .and_then(|r| r.manifest.as_deref());
    let registered = registry::is_registered(layout, &config.target(), config.repo_id, manifest)?;
    let writes = !registered || planned.plan.writes_remote();
    let vouched = vouched(layout, config, &planned);
    Ok(ReadFirst {
        planned,
        writes,
        vouched,
    })
}

/// Whether `planned`'s listing showed the namespace's manifest and the
/// remote's id at versions this clone read and checked before.
fn vouched(layout: &Layout, config: &Config, planned: &Planned) -> bool {
    let Some(remote) = &planned.observed.remote else {
        return false;
    };
    registry::vouched(
        layout,
        &config.target(),
        config.repo_id,
        remote.manifest.as_deref(),
        remote.listed.remote_id.as_deref(),
    )
}

/// The other clones a move names are those that noted their progress in
/// the last `[undo] keep_days` (one with no time listed stays named).
fn recent_clones(plan: &mut crate::plan::Plan, keep_days: u32) {
    let since = crate::clock::now_secs() as i64 - i64::from(keep_days) * 86_400;
    plan.other_clones
        .retain(|c| c.noted.is_none_or(|t| t >= since));
}

/// A clone still configured for a place a move left (its `moved` marker
/// listed, and no move of this clone's own under way) stops before
/// planning anything, naming the new place.
fn moved_away(desired: &Desired, observed: &state::Observed) -> Result<(), EngineError> {
    let Some(remote) = observed
        .remote
        .as_ref()
        .filter(|r| r.listed.moved.is_some())
    else {
        return Ok(());
    };
    if !desired.sources.is_empty() {
        return Ok(());
    }
    let target = RemoteTarget::open(&desired.target)?;
    let marker = crate::store::runtime().block_on(state::moved::read(&target))?;
    match marker {
        Some(m) => Err(EngineError::MovedAway {
            from: remote.url.clone(),
            to: m.to,
            spec: m.spec,
        }),
        None => Ok(()),
    }
}

/// [`plan_with`], trusting what this run `learnt` of files it wrote.
fn plan_learnt(
    layout: &Layout,
    config: &Config,
    scope: Scope,
    options: SyncOptions,
    learnt: state::Learnt,
    listed: Option<state::KeptListing>,
) -> Result<Planned, EngineError> {
    check_supported(config, scope)?;
    let desired = Desired::from_config(config, scope);
    let show_replaced = options.diff;
    // Only a policy the command line names is refused where it misfits:
    // `[sync] conflict` is a standing default, not a request for this plan.
    let asked = options.conflict;
    let options = compose_options(layout, config, options)?;
    let observed = state::observe(
        layout,
        config,
        &desired,
        ObserveOptions {
            modified: options.policy == crate::config::ConflictPolicy::Newer,
        },
        learnt,
        listed,
    )?;
    moved_away(&desired, &observed)?;
    crate::progress::meter().phase("planning");
    let mut plan = compose(&desired, &observed, &options);
    recent_clones(&mut plan, config.undo.keep_days);
    if let Some(policy) = asked {
        let settled = plan.remote.as_ref().map_or(0, |r| r.resolved.len());
        if let Some(m) = crate::plan::conflict::misfit(policy, &plan.conflicts, settled) {
            return Err(EngineError::PolicyMisfit(m));
        }
    }
    let mut prunes = match scope {
        Scope::Config => Vec::new(),
        _ => undo::due_prunes_at(layout, config, &plan.target.placement())?,
    };
    crate::plan::retention::lists_ride_along(&mut prunes, !plan.actions.is_empty());
    let uploads = matches!(scope, Scope::All | Scope::Sync | Scope::Push);
    let now = crate::clock::now_secs();
    // The team's history past `keep_days` rides on a run that writes the
    // bucket anyway, as the delete records' prunes do.
    if let Some(snapshot) = observed.remote.as_ref().filter(|_| plan.writes_remote()) {
        let prefix = Layout::remote_history_prefix(&plan.target.placement());
        prunes.extend(crate::plan::retention::history_prunes(
            &snapshot.history,
            &prefix,
            config.undo.keep_days,
            now,
        ));
    }
    let resume = observed.remote.as_ref().map(|s| (s, now, uploads));
    amend(&mut plan, Amendments { resume, prunes });
    add_content_diffs(&observed, show_replaced, &mut plan)?;
    history::attribute(layout, &observed, &mut plan)?;
    crate::progress::meter().idle();
    Ok(Planned {
        desired,
        observed,
        plan,
    })
}

/// What a sync plan shows of content: the diff of each both-changed or
/// deleted-and-changed conflict, and (`plan --diff`) of each file an
/// upload or download replaces. A remote side small enough to show is
/// read once here (one GET, in the plan's request estimate).
fn add_content_diffs(
    observed: &Observed,
    replaced: bool,
    plan: &mut Plan,
) -> Result<(), EngineError> {
    let Some(snapshot) = observed.remote.as_ref() else {
        return Ok(());
    };
    let wanted = crate::plan::textdiff::wanted(plan, snapshot, replaced);
    if wanted.is_empty() {
        return Ok(());
    }
    let target = crate::store::RemoteTarget::open(&plan.target.placement())?;
    let bodies = state::diff_bodies::read(
        &plan.target.dir,
        &target,
        wanted.iter().map(|w| (&w.path, w.cache, w.remote.as_ref())),
    );
    plan.diffs = crate::plan::textdiff::content_diffs(&wanted, bodies);
    Ok(())
}

/// The options a saved plan was composed with (its conflict policy and
/// whether the guards were forced), so re-deriving it composes the same way.
pub(crate) fn saved_options(saved: &SavedPlan) -> SyncOptions {
    SyncOptions {
        conflict: saved.plan.remote.as_ref().map(|r| r.conflict_policy),
        force: saved.plan.remote.as_ref().is_some_and(|r| r.forced),
        force_delete_local: saved
            .plan
            .remote
            .as_ref()
            .is_some_and(|r| r.forced_delete_local),
        no_base: saved.plan.remote.as_ref().is_some_and(|r| r.base_ignored),
        no_undo: saved.plan.no_undo,
        hydrate: saved.plan.remote.as_ref().is_some_and(|r| r.hydrate),
        hydration: None,
        diff: false,
        // A kept source is the only drain that deletes nothing.
        keep_source: saved.plan.actions.iter().any(
            |a| matches!(a, crate::plan::Action::DeleteSourceRemote(d) if d.objects.is_empty()),
        ),
    }
}

/// Re-derives a saved undo plan instead of trusting it: same repository,
/// and an undo of `subject` planned now that equals the saved one exactly.
/// Returns the fresh plan, which is what gets applied.
pub(crate) fn rederive_undo(
    saved: &crate::plan::file::SavedUndo,
    subject: &undo::UndoSubject,
    layout: &Layout,
    config: &Config,
) -> Result<crate::plan::undo::UndoPlan, EngineError> {
    same_repo(saved.repo_id, config)?;
    let now = undo::plan_undo(layout, subject)?;
    let saved = &saved.undo;
    let difference = first_action_difference(&saved.actions, &now.actions)
        .or_else(|| conflict_difference(&saved.conflicts, &now.conflicts));
    match difference.or_else(|| (*saved != now).then(|| "the plan differs".to_string())) {
        Some(d) => Err(EngineError::Stale {
            changes: vec![d],
            undoes: Some(saved.undoes.clone()),
        }),
        None => Ok(now),
    }
}

/// Refuses a saved plan made in another repository.
pub(crate) fn same_repo(planned: uuid::Uuid, config: &Config) -> Result<(), EngineError> {
    if planned == config.repo_id {
        return Ok(());
    }
    Err(EngineError::WrongRepo {
        planned: planned.to_string(),
        actual: config.repo_id.to_string(),
    })
}

/// Re-derives a saved plan of changes instead of trusting it: same
/// repository, same desired state, and a plan composed now (from a fresh
/// observation, with the saved plan's own options) that equals the saved
/// one exactly. Returns the fresh plan, which is what gets applied. A
/// stale, tampered or foreign plan all end here, naming the first
/// difference.
pub(crate) fn rederive_plan(
    saved: &SavedPlan,
    layout: &Layout,
    config: &Config,
) -> Result<Planned, EngineError> {
    same_repo(saved.repo_id, config)?;
    check_supported(config, saved.plan.scope)?;
    let desired_then = saved.desired();
    let desired_now = Desired::from_config(config, saved.plan.scope);
    if desired_now.target != desired_then.target {
        return Err(EngineError::Stale {
            changes: vec![format!(
                "the configuration changed: the plan moves data to {}, .swamp.toml now wants {}",
                desired_then.target, desired_now.target
            )],
            undoes: None,
        });
    }
    if desired_now != desired_then {
        let list = |d: &Desired| match d.sources.as_slice() {
            [] => "nothing".to_string(),
            s => s
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        };
        return Err(EngineError::Stale {
            changes: vec![format!(
                "the migration record in .swamp.toml changed: the plan moves data from {}; it now records {}",
                list(&desired_then),
                list(&desired_now)
            )],
            undoes: None,
        });
    }
    let mut now = plan_with(layout, config, saved.plan.scope, saved_options(saved))?;
    let reviewed = settle_prunes(&saved.plan, &mut now.plan);
    if let Some(difference) = first_difference(&reviewed, &now.plan) {
        let mut changes = vec![difference];
        if Fingerprint::of(&desired_now, &now.observed) != saved.fingerprint
            && let Some(then) = saved.observed.as_ref()
        {
            changes.extend(
                explain_changes(then, &now.observed, 10)
                    .into_iter()
                    .filter(|c| c != "the datastore layout changed"),
            );
        }
        return Err(EngineError::Stale {
            changes,
            undoes: None,
        });
    }
    Ok(now)
}

/// Applies `plan`, then observes again and plans with the (possibly
/// updated) configuration, as every apply does (the verifying plan saves
/// what the apply learnt). For a repair step whose caller checks again on
/// its own, so only the apply's report is returned; a command's apply
/// goes through [`flow::run`], which shows the verifying plan.
pub(crate) fn apply_and_verify(
    repo: &Path,
    layout: &Layout,
    plan: &Plan,
    options: SyncOptions,
    transfers: Option<u16>,
) -> Result<ApplyReport, EngineError> {
    let mut report = apply_only(repo, layout, plan, transfers, None, None)?;
    let learnt = std::mem::take(&mut report.landed);
    verify(repo, layout, plan.scope, options, learnt, None)?;
    Ok(report)
}

/// The first half of an apply ([`flow::run`]): applies `plan`. A caller that
/// no longer needs the plan lets it go before [`verify`] observes again
/// (at 100,000 actions, the plan is a tenth of the peak). `transfers`
/// overrides `[sync] concurrency` for this run (`--transfers N`).
fn apply_only(
    repo: &Path,
    layout: &Layout,
    plan: &Plan,
    transfers: Option<u16>,
    switch: Option<apply::Switch<'_>>,
    fingerprint: Option<String>,
) -> Result<ApplyReport, EngineError> {
    let config = Config::load(repo)?;
    let remote = match &plan.remote {
        Some(_) => Some(RemoteTarget::open(&plan.target.placement())?),
        None => None,
    };
    let sources = plan
        .sources
        .iter()
        .map(|s| {
            s.datastore
                .is_remote()
                .then(|| RemoteTarget::open(&s.placement()))
                .transpose()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let report = apply::apply(
        plan,
        layout,
        repo,
        (remote.as_ref(), &sources),
        apply::Options {
            concurrency: transfers.unwrap_or(config.sync.concurrency),
            switch,
            fingerprint,
        },
    )?;
    Ok(report)
}

/// The second half of an apply ([`flow::run`]): observes again and plans
/// `scope` with the (possibly updated) configuration. `learnt` is what the
/// apply knows of the files it landed ([`ApplyReport::landed`]), so they
/// are not read back. `listed`: the remote as the applied plan listed it,
/// for a run that wrote nothing there ([`kept_listing`]): not listed again.
fn verify(
    repo: &Path,
    layout: &Layout,
    scope: Scope,
    options: SyncOptions,
    learnt: state::Learnt,
    listed: Option<state::KeptListing>,
) -> Result<Planned, EngineError> {
    let config = Config::load(repo)?;
    let layout = Layout::new(repo, &config, layout.swamp_home())?;
    // `--no-base` is for one run: the base this apply recorded counts now.
    let options = SyncOptions {
        no_base: false,
        ..options
    };
    plan_learnt(&layout, &config, scope, options, learnt, listed)
}

/// The remote listing a run's verifying plan may keep: that of a plan
/// that writes nothing to the bucket (a pull, a lazy pull, local moves
/// beside a sync). The bucket changed since only if someone else changed
/// it, which the next plan shows; a run that wrote objects lists again.
fn kept_listing(saved: &mut SavedPlan, layout: &Layout) -> Option<state::KeptListing> {
    if saved.plan.writes_remote() {
        return None;
    }
    let listed = saved.observed.as_mut().and_then(|o| o.remote.take())?;
    Some(state::KeptListing::keep(
        listed,
        &layout.state_dir(),
        state::spill::threshold(),
    ))
}
