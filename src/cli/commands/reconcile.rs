//! `plan`, `apply`, `show`, and the plan → confirm → apply → verify flow
//! that the layout commands share.
use crate::cli::output::{errln, out, outln};

use std::path::Path;

use serde_json::json;

use crate::cli::args::Confirm;
use crate::cli::confirm::{Go, decide};
use crate::cli::locking::{Locks, await_writers};
use crate::cli::output::{print_json, print_plan_json};
use crate::cli::render::human_bytes;
use crate::cli::{CliError, Ctx, Outcome, Repo};
use crate::config::Config;
use crate::engine::Scope;
use crate::engine::{self, Planned, SyncOptions};
use crate::plan::SavedPlan;

pub(super) fn plan(
    ctx: &Ctx,
    scope: Scope,
    options: SyncOptions,
    out: Option<&Path>,
    detailed_exitcode: bool,
) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    // A plan saved for a later apply is made once nobody is writing, so it
    // does not catch someone else's run half-applied: under the lock where
    // the lock is this machine's or a shared directory's, after waiting
    // out the writers of a bucket (credentials that may only read can
    // plan; `apply FILE` plans again under the lock anyway). A plan only
    // shown is a read and waits for nobody.
    let locks = match out {
        Some(_) if !reads_first(&repo, scope) => {
            Some(Locks::take(ctx, &repo.layout, &repo.config, "plan")?)
        }
        _ => None,
    };
    let info = locks.as_ref().and_then(Locks::info);
    let planned = match locks {
        Some(l) => l.finish(
            engine::plan_with(&repo.layout, &repo.config, scope, options).map_err(CliError::from),
        )?,
        None if out.is_some() => {
            engine::plan_reading(&repo.layout, &repo.config, scope, options, || {
                await_writers(ctx, &repo.layout, &repo.config)
            })?
            .planned
        }
        None => engine::plan_with(&repo.layout, &repo.config, scope, options)?,
    };
    let outcome = plan_outcome(&planned.plan, detailed_exitcode);
    crate::cli::output::exit_when_closed(outcome.exit_code());
    if out.is_none() && !ctx.json {
        // Only shown: no fingerprint (a hash of the whole observation,
        // tens of megabytes of JSON at 100,000 files) is needed.
        out!("{}", ctx.render_plan(&planned.plan));
        return Ok(outcome);
    }
    let mut saved = planned.into_saved(&repo.config);
    if let Some(out) = out {
        // Information for whoever reviews the file; `apply FILE` judges
        // staleness from the observed state alone.
        saved.lock = info;
        saved.save(out)?;
        saved.lock = None;
    }
    if ctx.json {
        print_json(&saved.doc());
    } else {
        out!("{}", ctx.render_plan(&saved.plan));
        if let Some(out) = out {
            outln!(
                "\nSaved this plan to {}. Apply exactly it with `swamp apply {}`.",
                out.display(),
                out.display()
            );
        }
    }
    Ok(plan_outcome(&saved.plan, detailed_exitcode))
}

/// How `plan` exits: conflicts, or (asked for) changes, or success.
fn plan_outcome(plan: &crate::plan::Plan, detailed_exitcode: bool) -> Outcome {
    if plan.has_conflicts() {
        Outcome::Conflicts
    } else if detailed_exitcode && !plan.is_empty() {
        Outcome::Changes
    } else {
        Outcome::Success
    }
}

pub(super) fn show(ctx: &Ctx, file: &Path) -> Result<Outcome, CliError> {
    let saved = match crate::plan::file::load_any(file)? {
        crate::plan::file::Loaded::Plan(saved) => *saved,
        crate::plan::file::Loaded::Undo(undo) => {
            if ctx.json {
                print_json(&serde_json::to_value(&undo).expect("an undo plan serialises"));
            } else if ctx.markdown {
                out!(
                    "```text\n{}```\n",
                    crate::cli::render::render_undo(&undo.undo)
                );
            } else {
                out!("{}", crate::cli::render::render_undo(&undo.undo));
            }
            return Ok(Outcome::Success);
        }
    };
    if ctx.json {
        print_json(&saved.doc());
    } else {
        out!("{}", ctx.render_plan(&saved.plan));
    }
    Ok(Outcome::Success)
}

pub(super) fn apply(
    ctx: &Ctx,
    scope: Scope,
    options: SyncOptions,
    confirm: Confirm,
) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let operation = match scope {
        Scope::Sync => "datastore sync",
        Scope::Push => "datastore sync --push",
        Scope::Pull => "datastore sync --pull",
        _ => "apply",
    };
    let mut vouched = false;
    if reads_first(&repo, scope) {
        let locks = Locks::take_local(ctx, &repo.layout, &repo.config, operation)?;
        let read_only = (|| {
            // A run that writes nothing to the bucket takes no lock object
            // there (credentials that may only read serve): it plans, waits
            // out whoever writes when it has something to apply, and
            // applies under this clone's lock.
            let read = engine::plan_reading(&repo.layout, &repo.config, scope, options, || {
                await_writers(ctx, &repo.layout, &repo.config)
            })?;
            if read.writes {
                return Ok(Err(read.vouched));
            }
            run_flow(ctx, &repo, read.planned, None, options, confirm).map(Ok)
        })();
        match locks.finish(read_only)? {
            Ok(outcome) => return Ok(outcome),
            // It writes the bucket: under the datastore's lock, planned
            // again.
            Err(seen) => vouched = seen,
        }
    }
    let locks = Locks::take(ctx, &repo.layout, &repo.config, operation)?;
    locks.finish((|| {
        // Registered and given an id already, as the listing just showed:
        // nothing to read again.
        if scope != Scope::Layout && repo.config.datastore.is_remote() && !vouched {
            ensure_registered(&repo)?;
        }
        let planned = engine::plan_with(&repo.layout, &repo.config, scope, options)?;
        run_flow(ctx, &repo, planned, None, options, confirm)
    })())
}

/// A sync of a remote datastore that drains nothing is planned before any
/// datastore lock is taken: only if it writes the bucket is it planned
/// again under the lock.
fn reads_first(repo: &Repo, scope: Scope) -> bool {
    matches!(scope, Scope::Pull | Scope::Push | Scope::Sync | Scope::All)
        && repo.config.datastore.is_remote()
        && repo.config.migrating_from.is_empty()
}

/// A saved plan is its own review (as `terraform apply FILE`): applied
/// without asking, once planned again and found unchanged.
pub(super) fn apply_saved(ctx: &Ctx, file: &Path) -> Result<Outcome, CliError> {
    let saved = match crate::plan::file::load_any(file)? {
        crate::plan::file::Loaded::Plan(saved) => *saved,
        crate::plan::file::Loaded::Undo(undo) => return super::undo::apply_saved(ctx, &undo),
    };
    let repo = ctx.open_repo()?;
    let locks = Locks::take(ctx, &repo.layout, &repo.config, "apply")?;
    locks.finish(apply_saved_locked(ctx, &repo, saved))
}

/// A saved plan is never trusted: it is planned again and applied only
/// when the new plan equals it; the new plan is what runs.
fn apply_saved_locked(ctx: &Ctx, repo: &Repo, saved: SavedPlan) -> Result<Outcome, CliError> {
    let options = engine::saved_options(&saved);
    let planned = match engine::rederive(engine::Saved::Plan(&saved), &repo.layout, &repo.config)? {
        engine::Rederived::Plan(planned) => *planned,
        engine::Rederived::Undo(_) => unreachable!("a plan re-derives as a plan"),
    };
    // The file's own plan and observation are done with: the new plan is
    // what runs, and they need not stay through its apply and the
    // verifying plan.
    drop(saved);
    let mut saved = planned.into_saved(&repo.config);
    if !ctx.json {
        out!("{}", ctx.render_plan(&saved.plan));
    }
    if saved.plan.is_empty() {
        return finish_empty(ctx, &saved);
    }
    if saved.plan.has_conflicts() {
        return conflicts(ctx, &saved, false);
    }
    // Apply reads only the plan: the observation it came from (the
    // largest thing held) need not stay while the verifying plan observes,
    // but for the remote listing of a run that writes nothing there.
    let listed = engine::kept_listing(&mut saved);
    saved.observed = None;
    apply_confirmed(ctx, repo, saved, options, listed)
}

/// Shows `planned`, asks for (or takes) confirmation, records `new_config`
/// in `.swamp.toml` when given, applies, and verifies convergence.
pub(super) fn run_flow(
    ctx: &Ctx,
    repo: &Repo,
    planned: Planned,
    new_config: Option<&Config>,
    options: SyncOptions,
    confirm: Confirm,
) -> Result<Outcome, CliError> {
    let yes = confirm.yes;
    let config = new_config.unwrap_or(&repo.config);
    let mut saved = planned.into_saved(config);
    if !ctx.json {
        out!("{}", ctx.render_plan(&saved.plan));
    }
    if saved.plan.is_empty() {
        if yes {
            record(repo, new_config, options)?;
        }
        return finish_empty(ctx, &saved);
    }
    if saved.plan.has_conflicts() {
        let recorded = new_config.is_some() && yes;
        if yes {
            record(repo, new_config, options)?;
        }
        return conflicts(ctx, &saved, recorded);
    }
    let question = format!(
        "\nDo you want to apply these {} action(s)?",
        saved.plan.actions.len()
    );
    if let Go::Stop(outcome) = decide(ctx, confirm, &question, || {
        print_plan_json(&saved, json!({"preview": true, "applied": null}));
    }) {
        return Ok(outcome);
    }
    // The desired state is recorded before anything moves, so any later
    // plan continues toward it even if this run is interrupted.
    record(repo, new_config, options)?;
    // Apply reads only the plan: the observation it came from (the
    // largest thing held) need not stay while the verifying plan observes,
    // but for the remote listing of a run that writes nothing there.
    let listed = engine::kept_listing(&mut saved);
    saved.observed = None;
    apply_confirmed(ctx, repo, saved, options, listed)
}

/// Records what a confirmed run changes of the desired state: the new
/// `.swamp.toml`, and this run's hydration as this clone's own setting
/// (never in `.swamp.toml`, which the team shares).
fn record(repo: &Repo, new_config: Option<&Config>, options: SyncOptions) -> Result<(), CliError> {
    if let Some(c) = new_config {
        c.save(&repo.root)?;
    }
    if let Some(h) = options.hydration {
        let path = repo.layout.clone_settings_path();
        let mut clone = crate::config::clone::CloneSettings::load(&path)?;
        clone.sync.hydration = Some(h);
        clone.save(&path)?;
    }
    Ok(())
}

fn finish_empty(ctx: &Ctx, saved: &SavedPlan) -> Result<Outcome, CliError> {
    if ctx.json {
        print_plan_json(saved, json!({"applied": null, "converged": true}));
    }
    Ok(Outcome::Success)
}

fn conflicts(ctx: &Ctx, saved: &SavedPlan, recorded: bool) -> Result<Outcome, CliError> {
    if ctx.json {
        print_plan_json(
            saved,
            json!({"applied": null, "converged": false, "recorded": recorded}),
        );
    } else {
        if recorded {
            errln!(
                "The new layout is recorded in .swamp.toml; once the conflicts are resolved, `swamp apply` finishes the move."
            );
        }
        errln!(
            "error: the plan has {} conflict(s); nothing was applied",
            saved.plan.conflicts.len()
        );
    }
    Ok(Outcome::Conflicts)
}

fn apply_confirmed(
    ctx: &Ctx,
    repo: &Repo,
    mut saved: SavedPlan,
    options: SyncOptions,
    listed: Option<crate::state::RemoteSnapshot>,
) -> Result<Outcome, CliError> {
    let started = std::time::Instant::now();
    let summary = saved.plan.summary();
    let carried = summary.bytes_to_upload + summary.bytes_to_download;
    let report = engine::apply_only(&repo.root, &repo.layout, &saved.plan, ctx.transfers);
    let elapsed = started.elapsed();
    crate::progress::meter().idle();
    let mut report = report?;
    let learnt = std::mem::take(&mut report.landed);
    // Shown and applied: the human report needs only the counts, and the
    // JSON document the plan as written aside, so the actions go before
    // the verifying plan observes again (at 100,000 actions they are the
    // largest thing held). Where nothing can be written aside, they stay.
    let spilled = if ctx.json {
        crate::cli::output::SpilledPlan::new(&saved).ok()
    } else {
        None
    };
    if !ctx.json || spilled.is_some() {
        saved.plan.actions = Vec::new();
    }
    let after = engine::verify(
        &repo.root,
        &repo.layout,
        saved.plan.scope,
        options,
        learnt,
        listed,
    )?;
    let applied = engine::Applied { report, after };
    let saved = &saved;
    let report = &applied.report;
    let converged = applied.converged();
    if ctx.json {
        let remaining = (!converged).then(|| {
            let after = applied.after.clone();
            let config = Config::load(&repo.root).unwrap_or_else(|_| repo.config.clone());
            after.into_saved(&config).to_json()
        });
        let rest = json!({
            "applied": report,
            "converged": converged,
            "remaining": remaining,
        });
        match spilled {
            Some(plan) => crate::cli::output::print_spilled_plan_json(plan, rest),
            None => print_plan_json(saved, rest),
        }
    } else {
        outln!("\n{}", applied_line(report, saved.plan.remote.is_some()));
        if let Some(line) = transferred_line(carried, elapsed) {
            outln!("{line}");
        }
        if converged {
            outln!("Converged: the datastore matches the configuration.");
        } else {
            outln!("Not converged: the state changed while applying. What is left:\n");
            out!("{}", ctx.render_plan(&applied.after.plan));
            // Exit 1 says it failed; stderr says why, as for any failure.
            errln!(
                "error: not converged: {} action(s) and {} conflict(s) are left (the state changed while applying)\n  hint: what was applied stays applied; run `{}` again",
                applied.after.plan.actions.len(),
                applied.after.plan.conflicts.len(),
                crate::cli::command_line()
            );
        }
    }
    Ok(if converged {
        Outcome::Success
    } else if applied.after.plan.has_conflicts() {
        Outcome::Conflicts
    } else {
        Outcome::Failed
    })
}

/// As rclone closes a transfer: how much, how long, and how fast on
/// average (`None` when nothing was carried).
fn transferred_line(carried: u64, elapsed: std::time::Duration) -> Option<String> {
    if carried == 0 {
        return None;
    }
    let secs = elapsed.as_secs_f64().max(0.001);
    let took = match elapsed.as_millis() {
        ms if ms < 1000 => format!("{ms} ms"),
        _ => format!("{secs:.1} s"),
    };
    Some(format!(
        "Transferred {} in {took} ({}/s).",
        human_bytes(carried),
        human_bytes((carried as f64 / secs) as u64)
    ))
}

/// The one line that says what an apply did.
fn applied_line(report: &engine::ApplyReport, remote: bool) -> String {
    let transfers = if remote {
        format!(
            ", {} uploaded, {} downloaded, {} deleted from the remote, {} deleted from the cache",
            report.uploaded, report.downloaded, report.deleted_remote, report.deleted_local
        )
    } else {
        String::new()
    };
    let mut managed = String::new();
    if report.mirrored > 0 {
        managed = format!(
            ", {} definition file(s) copied into the cache",
            report.mirrored
        );
    }
    if report.sentinel_published {
        managed.push_str(", managed-config sentinel published");
    }
    if report.recorded_remote_only > 0 {
        managed.push_str(&format!(
            ", {} remote file(s) recorded without downloading (hydration = lazy)",
            report.recorded_remote_only
        ));
    }
    if report.trash_relocated > 0 {
        managed.push_str(&format!(
            ", set-aside files of {} earlier apply(s) moved into the cache's trash",
            report.trash_relocated
        ));
    }
    if report.trash_pruned > 0 {
        managed.push_str(&format!(
            ", trash of {} earlier apply(s) pruned ({})",
            report.trash_pruned,
            human_bytes(report.bytes_pruned)
        ));
    }
    format!(
        "Applied {} action(s): {} moved ({}), {} identical duplicate(s) dropped{managed}{transfers}{}{}.",
        report.completed,
        report.moved,
        human_bytes(report.bytes_moved),
        report.dropped,
        if report.catalog_invalidated {
            ", catalog marked for rebuild"
        } else {
            ""
        },
        if report.migration_finished {
            ", migration record cleared"
        } else {
            ""
        },
    )
}

/// Claims the repository's namespace in its remote datastore, if it has one.
/// Before a sync plans: the namespace is claimed, and the remote holds the
/// id its sync base gets bound to.
pub(super) fn ensure_registered(repo: &Repo) -> Result<(), CliError> {
    if repo.config.datastore.is_remote() {
        crate::engine::registry::ensure_registered(
            &repo.layout,
            &repo.config.target(),
            repo.config.repo_id,
        )?;
    }
    Ok(())
}
