//! The one apply flow of every plan of changes: the plan shown, confirmed
//! (a decision the caller supplies), the desired state recorded, applied,
//! and verified by planning again. The CLI calls [`run`] once per command
//! and renders what it returns; it never sequences these steps itself.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::layout::Layout;
use crate::plan::SavedPlan;

use super::{ApplyReport, EngineError, Planned, SyncOptions, apply_only, kept_listing, verify};

/// Where a flow runs and how.
pub(crate) struct At<'a> {
    /// The repository's root and the layout of its configuration now.
    pub repo: &'a Path,
    pub layout: &'a Layout,
    /// The configuration the plan was made with.
    pub config: &'a Config,
    pub options: SyncOptions,
    /// `--transfers`, when given.
    pub transfers: Option<u16>,
}

/// The desired state the flow records before anything moves, so any later
/// plan continues toward it even if this run is interrupted.
#[derive(Clone, Copy, Default)]
pub(crate) struct Record<'a> {
    /// The new `.swamp.toml` (a layout command's change), if any.
    pub new_config: Option<&'a Config>,
    /// Confirmed up front (`-y`): recorded even when nothing is applied (an
    /// empty plan, or one blocked by conflicts).
    pub up_front: bool,
    /// A move between remotes: recorded only once every copy is verified
    /// (never before, never for a plan that conflicts), so a move killed
    /// or refused leaves `.swamp.toml` naming the place that holds it all.
    pub after_copies: bool,
}

/// What the caller is asked along the way, about a plan of kind `P` (a
/// plan of changes, [`SavedPlan`]; an undo, [`crate::plan::undo::UndoPlan`]).
pub(crate) trait Ui<P> {
    /// What stopping at the confirmation means to the caller.
    type Stop;
    /// The plan is composed: show it.
    fn show(&mut self, plan: &P);
    /// Whether to apply the plan shown: `None` applies it, `Some` stops.
    fn confirm(&mut self, plan: &P) -> Option<Self::Stop>;
    /// The plan is applied: whether its actions may go before the
    /// verifying plan observes again (the caller kept what it shows of
    /// them). At 100,000 actions they are the largest thing held.
    fn release_actions(&mut self, _plan: &P) -> bool {
        false
    }
    /// The plan is applied and verified: the run writes nothing more to
    /// the datastore (its locks may be given back).
    fn verified(&mut self) {}
}

/// How a flow ended.
pub(crate) enum Flowed<S> {
    /// Nothing to do.
    Empty(SavedPlan),
    /// Conflicts block the plan; `recorded`: the new configuration was
    /// recorded all the same (confirmed up front).
    Conflicts { saved: SavedPlan, recorded: bool },
    /// The caller stopped at the confirmation.
    Stopped(S),
    /// Applied and verified.
    Applied(Box<Ran>),
}

/// A plan applied, and the plan made after it.
pub(crate) struct Ran {
    /// The plan applied, without its observation (and without its actions
    /// when the caller released them).
    pub saved: SavedPlan,
    pub report: ApplyReport,
    /// The verifying plan: empty (but for housekeeping) when converged.
    pub after: Planned,
    /// Bytes the plan carried up and down, and how long the apply took.
    pub carried: u64,
    /// The requests the plan estimated (its actions may be gone).
    pub estimated: crate::plan::RequestEstimate,
    pub elapsed: Duration,
}

impl Ran {
    /// Trash that came due while applying is pruned by the next plan; it
    /// does not make this one unconverged.
    pub(crate) fn converged(&self) -> bool {
        self.after.plan.in_sync()
    }
}

/// Shows `planned`, asks `ui` to confirm, records what `record` says,
/// applies, and verifies convergence.
pub(crate) fn run<U: Ui<SavedPlan>>(
    planned: Planned,
    at: &At<'_>,
    record: Record<'_>,
    ui: &mut U,
) -> Result<Flowed<U::Stop>, EngineError> {
    let mut saved = planned.into_saved(record.new_config.unwrap_or(at.config));
    traced("planned", &saved.plan);
    ui.show(&saved);
    if saved.plan.is_empty() {
        if record.up_front {
            save_desired(at, record)?;
        }
        return Ok(Flowed::Empty(saved));
    }
    if saved.plan.has_conflicts() {
        let recorded = record.new_config.is_some() && record.up_front && !record.after_copies;
        if recorded {
            save_desired(at, record)?;
        }
        return Ok(Flowed::Conflicts { saved, recorded });
    }
    if let Some(stop) = ui.confirm(&saved) {
        return Ok(Flowed::Stopped(stop));
    }
    if !record.after_copies {
        save_desired(at, record)?;
    }
    // Apply reads only the plan: the observation it came from (the
    // largest thing held) need not stay while the verifying plan observes,
    // but for the remote listing of a run that writes nothing there.
    let listed = kept_listing(&mut saved, at.layout);
    saved.observed = None;
    let started = Instant::now();
    let summary = saved.plan.summary();
    let carried = summary.bytes_to_upload + summary.bytes_to_download;
    let (sent_from, beats_from) = (
        crate::telemetry::requests::counts(),
        crate::telemetry::requests::heartbeat_count(),
    );
    let mut switch = || save_desired(at, record);
    let switch: Option<crate::apply::Switch<'_>> = record.after_copies.then_some(&mut switch);
    let fingerprint = Some(saved.fingerprint.to_string());
    let report = apply_only(
        at.repo,
        at.layout,
        &saved.plan,
        at.transfers,
        switch,
        fingerprint,
    );
    let elapsed = started.elapsed();
    crate::progress::meter().idle();
    let mut report = report?;
    tracing::debug!(
        target: "swamp::engine",
        completed = report.completed,
        ms = elapsed.as_millis() as u64,
        "applied; verifying"
    );
    let learnt = std::mem::take(&mut report.landed);
    if ui.release_actions(&saved) {
        saved.plan.actions = Vec::new();
    }
    let after = verify(
        at.repo,
        at.layout,
        saved.plan.scope,
        at.options,
        learnt,
        listed,
    )?;
    traced("verified: what is left", &after.plan);
    ui.verified();
    report.requests_sent = Some(crate::telemetry::requests::counts().since(&sent_from));
    report.heartbeat_requests = crate::telemetry::requests::heartbeat_count() - beats_from;
    Ok(Flowed::Applied(Box::new(Ran {
        saved,
        report,
        after,
        carried,
        estimated: summary.requests,
        elapsed,
    })))
}

/// A step of the flow, for `SWAMP_LOG=swamp::engine=debug`.
fn traced(step: &str, plan: &crate::plan::Plan) {
    tracing::debug!(
        target: "swamp::engine",
        actions = plan.actions.len(),
        conflicts = plan.conflicts.len(),
        "{step}"
    );
}

/// Records what a confirmed run changes of the desired state: the new
/// `.swamp.toml`, and this run's hydration as this clone's own setting
/// (never in `.swamp.toml`, which the team shares).
fn save_desired(at: &At<'_>, record: Record<'_>) -> Result<(), crate::config::ConfigError> {
    if let Some(c) = record.new_config {
        c.save(at.repo)?;
    }
    if let Some(h) = at.options.hydration {
        let path = at.layout.clone_settings_path();
        let mut clone = crate::config::clone::CloneSettings::load(&path)?;
        clone.sync.hydration = Some(h);
        clone.save(&path)?;
    }
    Ok(())
}
