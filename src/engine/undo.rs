//! Undo and trash retention through the engine: which apply an undo
//! reverses ([`subject`]), observing what its files are now and composing
//! the reversal ([`plan_undo`]), applying it ([`apply_undo`]); and the
//! trash `[undo]` says is due ([`due_prunes`], [`apply_prunes`]). A saved
//! undo plan is re-derived by [`super::rederive_undo`], like every saved plan.

use crate::apply::prune::Pruned;
pub(crate) use crate::apply::undo::UndoReport;
use crate::config::Config;
use crate::journal::{Journal, MovedPlaces, Op, UndoError};
use crate::layout::Layout;
use crate::plan::Action;
use crate::plan::action::PruneTrash;
use crate::plan::undo::UndoPlan;
use crate::store::RemoteTarget;

use super::EngineError;

/// The apply an undo reverses, and the store its remote objects live in
/// (when it changed any, and the configuration still names that store).
pub(crate) struct UndoSubject {
    journal: Journal,
    remote: Option<RemoteTarget>,
    /// The apply moved the datastore here from where the cache also
    /// serves: the undo moves `.swamp.toml` back.
    moves_back: Option<MovedPlaces>,
    /// A teammate's apply (read from its record in the bucket): once the
    /// bucket is as before it, this clone's cache follows.
    theirs: bool,
}

impl UndoSubject {
    /// The id of the apply this undo reverses.
    pub(crate) fn id(&self) -> &str {
        &self.journal.id
    }

    /// Whether undoing writes remote objects (and so needs the lock).
    pub(crate) fn writes_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// The configuration whose datastore lock the undo takes: `config`'s,
    /// or, undoing a move, the old place's (where it writes back).
    pub(crate) fn locked_config(&self, config: &Config) -> Config {
        let mut locked = config.clone();
        if let Some(r) = self
            .remote
            .as_ref()
            .filter(|r| r.placement != config.target())
        {
            locked.datastore = r.placement.datastore.clone();
            locked.namespace = r.placement.namespace.clone();
            locked.migrating_from.clear();
        }
        locked
    }
}

/// The apply `id` names, or the last one; refused when it cannot be
/// undone (cut short without a name, run with `--no-undo`, pruned).
pub(crate) fn subject(
    layout: &Layout,
    config: &Config,
    id: Option<&str>,
) -> Result<UndoSubject, EngineError> {
    let (journal, theirs) = match id {
        // Not this clone's: a teammate's, from its record in the bucket.
        Some(id) => match Journal::load(layout, id) {
            Err(UndoError::NoSuchApply { .. }) => (teammates(layout, config, id)?, true),
            other => (other?, false),
        },
        // Walked back: the newest journal still in force.
        None => (
            walked(layout, UndoError::NoHistory, UndoError::AllUndone, |w| {
                w.next_undo()
            })?,
            false,
        ),
    };
    let mut subject = subject_of(journal, layout, config)?;
    subject.theirs = theirs;
    Ok(subject)
}

/// The journal of a teammate's apply `id`, from its record in the team's
/// history (none: no such apply here or there).
fn teammates(layout: &Layout, config: &Config, id: &str) -> Result<Journal, EngineError> {
    let no_such = || UndoError::NoSuchApply { id: id.to_string() };
    let Some((head, changes)) = super::history::show(layout, config, id)? else {
        return Err(no_such().into());
    };
    let placement = std::sync::Arc::new(config.target());
    Ok(head.journal(&changes, &placement)?)
}

/// What `swamp redo` reverses: the newest undo not redone yet (since the
/// last new apply).
pub(crate) fn redo_subject(layout: &Layout, config: &Config) -> Result<UndoSubject, EngineError> {
    let journal = walked(
        layout,
        UndoError::NothingToRedo,
        UndoError::NothingToRedo,
        |w| w.next_redo(),
    )?;
    subject_of(journal, layout, config)
}

/// The journal `pick` chooses from where the history stands (`empty`: no
/// history; `none`: nothing to pick), once the newest journal is known to
/// have finished (one cut short is resumed by planning it again, first).
fn walked(
    layout: &Layout,
    empty: UndoError,
    none: UndoError,
    pick: impl Fn(&crate::journal::Walk) -> Option<&str>,
) -> Result<Journal, EngineError> {
    let mut all = Journal::all(layout)?;
    let last = all.last().ok_or(empty)?;
    if !last.finished {
        return Err(EngineError::LastCutShort {
            id: last.id.clone(),
            undoes: last.undoes.clone(),
        });
    }
    let walk = crate::journal::Walk::of(&all);
    let id = pick(&walk).ok_or(none)?;
    let i = all
        .iter()
        .position(|j| j.id == id)
        .expect("the walk names a journal");
    Ok(all.swap_remove(i))
}

/// The undo of `journal`, once it is known to be undoable.
fn subject_of(
    journal: Journal,
    layout: &Layout,
    config: &Config,
) -> Result<UndoSubject, EngineError> {
    if journal.no_undo {
        return Err(UndoError::NotKept { id: journal.id }.into());
    }
    if let Some(at) = journal.pruned {
        return Err(UndoError::Pruned { id: journal.id, at }.into());
    }
    // Everything it made too (created, moved): the whole apply is undone.
    let mut journal = journal.with_made(layout)?;
    let target = config.target();
    // A move to where the configuration still names: its old place's
    // objects come back there.
    let moved_from = journal.moved_from(&target).cloned();
    // A move between two remote places: the old one comes back, and what
    // the move wrote at the new one stays there (the plan says so). (An
    // undo of a move, redone, has its entries at the target only.)
    let at_from = |e: &crate::journal::Entry| moved_from.as_ref() == Some(&*e.placement);
    if moved_from.as_ref().is_some_and(|f| f.datastore.is_remote())
        && journal
            .entries
            .iter()
            .any(|e| e.op.is_remote() && at_from(e))
    {
        journal.entries.retain(|e| !e.op.is_remote() || at_from(e));
    }
    // Back in `.swamp.toml` too, where one cache serves both places, or
    // where the files themselves move back (they would be left where
    // swamp no longer looks).
    let moves_files = journal.entries.iter().any(|e| e.op == Op::Moved);
    let moves_back = moved_from
        .as_ref()
        .filter(|from| {
            layout.shares_cache(from, &target) || !from.datastore.is_remote() || moves_files
        })
        .and(journal.moved.as_ref())
        .map(MovedPlaces::reversed);
    // Remote objects are restored through the placement's own store.
    let remote = journal
        .entries
        .iter()
        .find(|e| e.op.is_remote())
        .map(|e| &*e.placement)
        .filter(|p| **p == target || moved_from.as_ref() == Some(*p))
        .map(RemoteTarget::open)
        .transpose()?;
    Ok(UndoSubject {
        journal,
        remote,
        moves_back,
        theirs: false,
    })
}

/// Observes the files and objects of the subject's apply as they are now,
/// and composes their reversal: changed ones are conflicts.
pub(crate) fn plan_undo(layout: &Layout, subject: &UndoSubject) -> Result<UndoPlan, EngineError> {
    let observed =
        crate::state::journaled::observe(layout, &subject.journal, subject.remote.as_ref())
            .map_err(|source| EngineError::UndoObserve {
                id: subject.journal.id.clone(),
                source,
            })?;
    let mut plan = crate::plan::undo::compose(&subject.journal, &observed);
    plan.moves_back = subject.moves_back.clone();
    // Which apply the undos and redos before it act on: reversing an undo
    // redoes it, reversing a redo undoes it again.
    if let Some((apply, links)) = chain(layout, &subject.journal) {
        (plan.redoes, plan.again) = match links % 2 {
            1 => (Some(apply), None),
            _ => (None, Some(apply)),
        };
    }
    Ok(plan)
}

/// The apply at the root of `journal`'s chain of undos and redos, and how
/// many links lead there (`None`: it is an apply). A link to a journal not
/// of this clone (a teammate's) ends the chain there. Each journal is read
/// for what it undoes alone.
fn chain(layout: &Layout, journal: &Journal) -> Option<(String, usize)> {
    let mut id = journal.undoes.clone()?;
    let mut links = 1;
    // Bounded: journals are files anyone could edit into a cycle.
    while links < 1_000 {
        match Journal::head(layout, &id).and_then(|h| h.undoes) {
            Some(next) => {
                id = next;
                links += 1;
            }
            None => break,
        }
    }
    Some((id, links))
}

/// How an undo's flow ended.
pub(crate) enum UndoFlowed<S> {
    /// Nothing to undo: every file is as it was before the apply.
    Empty(UndoPlan),
    /// Conflicts block it; nothing was changed.
    Conflicts(UndoPlan),
    /// The caller stopped at the confirmation.
    Stopped(S),
    /// Applied (and journaled, so it can be undone in turn).
    Applied(UndoPlan, UndoReport),
}

/// An undo plan's flow, as [`super::flow::run`] is a plan of changes':
/// shown, confirmed through `ui`, applied. Each step checks its
/// precondition as it acts, and the next plan shows what is left.
pub(crate) fn run<U: super::flow::Ui<UndoPlan>>(
    plan: UndoPlan,
    layout: &Layout,
    subject: &UndoSubject,
    command: &str,
    ui: &mut U,
) -> Result<UndoFlowed<U::Stop>, EngineError> {
    ui.show(&plan);
    if plan.is_empty() {
        return Ok(UndoFlowed::Empty(plan));
    }
    if !plan.conflicts.is_empty() {
        return Ok(UndoFlowed::Conflicts(plan));
    }
    if let Some(stop) = ui.confirm(&plan) {
        return Ok(UndoFlowed::Stopped(stop));
    }
    let from = crate::telemetry::requests::counts();
    let mut report = apply_undo(layout, subject, &plan, command)?;
    if subject.remote.is_some() {
        report.requests_sent = Some(crate::telemetry::requests::counts().since(&from));
    }
    Ok(UndoFlowed::Applied(plan, report))
}

/// Applies `plan` (journaled itself, so it can be undone in turn).
/// `command` is the command line recorded in the history.
pub(crate) fn apply_undo(
    layout: &Layout,
    subject: &UndoSubject,
    plan: &UndoPlan,
    command: &str,
) -> Result<UndoReport, EngineError> {
    let mut report = crate::apply::undo::apply(layout, plan, command, subject.remote.as_ref())?;
    if let Some(back) = &plan.moves_back {
        move_back(layout, back)?;
    }
    if subject.theirs && subject.remote.is_some() {
        report.followed = follow(layout)?;
    }
    Ok(report)
}

/// A teammate's apply undone in the bucket: this clone's cache follows
/// as a pull brings it (left to the next sync when that pull has
/// conflicts). Returns the files it changed.
fn follow(layout: &Layout) -> Result<Option<usize>, EngineError> {
    let config = Config::load(layout.repo())?;
    let planned = super::plan(layout, &config, super::Scope::Pull)?;
    if planned.plan.is_empty() || planned.plan.has_conflicts() {
        return Ok(None);
    }
    let pulled = super::apply_and_verify(
        layout.repo(),
        layout,
        &planned.plan,
        super::SyncOptions::default(),
        None,
    )?;
    Ok(Some(pulled.downloaded + pulled.deleted_local))
}

/// Once an undone move's objects are back at `back.to`: `.swamp.toml`
/// names it again, its `moved` marker goes, and one at `back.from` points
/// the clones there to it. Each step converges when run again.
fn move_back(layout: &Layout, back: &MovedPlaces) -> Result<(), EngineError> {
    let mut config = Config::load(layout.repo())?;
    if config.target() == back.from {
        config.datastore = back.to.datastore.clone();
        config.namespace = back.to.namespace.clone();
        config
            .migrating_from
            .retain(|p| *p != back.to && *p != back.from);
        config.save(layout.repo())?;
    }
    if back.to.datastore.is_remote() {
        super::registry::clear_moved(&back.to)?;
    }
    // A marker sends the clones of the place left to where the datastore
    // is now; a local place is no clone's but this one's.
    if back.from.datastore.is_remote() && back.to.datastore.is_remote() {
        let left = RemoteTarget::open(&back.from)?;
        let marker = crate::state::moved::Moved::to(&back.to);
        crate::store::runtime().block_on(crate::state::moved::leave(&left, &marker))?;
    }
    Ok(())
}

/// How `swamp undo --prune`'s flow ended.
pub(crate) enum PruneFlowed<S> {
    /// No trash is due.
    Empty(Vec<Action>),
    /// The caller stopped at the confirmation.
    Stopped(S),
    /// Pruned: each apply's id and what of its trash went.
    Applied(Vec<Action>, Vec<(String, Pruned)>),
}

/// The retention `[undo]` asks for, as a flow: the trash due now shown,
/// confirmed through `ui` (which takes whatever lock pruning the remote
/// trash needs once it confirms), then pruned.
pub(crate) fn run_prunes<U: super::flow::Ui<Vec<Action>>>(
    layout: &Layout,
    config: &Config,
    ui: &mut U,
) -> Result<PruneFlowed<U::Stop>, EngineError> {
    let actions = due_prunes(layout, config)?;
    ui.show(&actions);
    if actions.is_empty() {
        return Ok(PruneFlowed::Empty(actions));
    }
    if let Some(stop) = ui.confirm(&actions) {
        return Ok(PruneFlowed::Stopped(stop));
    }
    let done = apply_prunes(layout, config, &actions)?;
    Ok(PruneFlowed::Applied(actions, done))
}

/// The trash of earlier applies that `[undo]` says is due now, as
/// `prune-trash` actions.
pub(crate) fn due_prunes(layout: &Layout, config: &Config) -> Result<Vec<Action>, EngineError> {
    due_prunes_at(layout, config, &config.target())
}

/// [`due_prunes`], for the trash held for `placement`.
pub(super) fn due_prunes_at(
    layout: &Layout,
    config: &Config,
    placement: &crate::config::Placement,
) -> Result<Vec<Action>, EngineError> {
    let held = crate::state::journaled::held(layout, placement)?;
    Ok(crate::plan::retention::prunes(
        &held,
        (&config.undo).into(),
        crate::clock::now_secs(),
    ))
}

/// Whether pruning `actions` removes remote trash (and so needs the lock).
pub(crate) fn prunes_write_remote(actions: &[Action]) -> bool {
    actions
        .iter()
        .any(|a| matches!(a, Action::PruneTrash(PruneTrash { remote_objects, .. }) if *remote_objects > 0))
}

/// Prunes the trash `actions` name, in order; what was pruned stays
/// pruned if a later one fails.
pub(crate) fn apply_prunes(
    layout: &Layout,
    config: &Config,
    actions: &[Action],
) -> Result<Vec<(String, Pruned)>, EngineError> {
    let target = config.target();
    let remote = prunes_write_remote(actions)
        .then(|| RemoteTarget::open(&target))
        .transpose()?;
    let mut done = Vec::new();
    for a in actions {
        if let Action::PruneTrash(PruneTrash { id, .. }) = a {
            let pruned = crate::apply::prune::prune(layout, id, &target, remote.as_ref()).map_err(
                |source| EngineError::Prune {
                    id: id.clone(),
                    source,
                },
            )?;
            done.push((id.clone(), pruned));
        }
    }
    Ok(done)
}
