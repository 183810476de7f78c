//! `swamp undo [ID]`: plans the reversal of an apply (default: the last
//! one), shows it for review, and applies it once confirmed.
use crate::cli::output::{out, outln};

use serde_json::json;

use std::path::Path;

use crate::cli::locking::Locks;
use crate::cli::output::{ask, interactive, print_json};
use crate::cli::{CliError, Ctx, Outcome};
use crate::plan::file::SavedUndo;
use crate::plan::render::render_undo;
use crate::plan::undo::UndoPlan;
use crate::store::RemoteTarget;
use crate::undo::{Journal, Op};

/// How the undo plan is taken forward once shown.
enum Then<'a> {
    /// Confirm (or `-y`) and apply.
    Apply { yes: bool, detailed_exitcode: bool },
    /// `-o FILE`: save it for `swamp apply FILE`.
    Save(&'a Path),
    /// `swamp apply FILE`: apply only if it equals the saved plan.
    Expect { saved: &'a UndoPlan, yes: bool },
}

pub fn run(
    ctx: &Ctx,
    id: Option<&str>,
    yes: bool,
    detailed_exitcode: bool,
    out: Option<&Path>,
) -> Result<Outcome, CliError> {
    let then = match out {
        Some(path) => Then::Save(path),
        None => Then::Apply {
            yes,
            detailed_exitcode,
        },
    };
    undo_with(ctx, id, then)
}

/// `swamp apply FILE` of a saved undo plan: planned again, applied only if
/// unchanged.
pub fn apply_saved(ctx: &Ctx, saved: &SavedUndo) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    if saved.repo_id != repo.config.repo_id {
        return Err(CliError::failure(format!(
            "the saved undo plan was made for repository {}, not this one ({})",
            saved.repo_id, repo.config.repo_id
        )));
    }
    undo_with(
        ctx,
        Some(&saved.undo.undoes),
        Then::Expect {
            saved: &saved.undo,
            yes: true,
        },
    )
}

fn undo_with(ctx: &Ctx, id: Option<&str>, then: Then<'_>) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let layout = &repo.layout;
    let journal = match id {
        Some(id) => Journal::load(layout, id)?,
        None => {
            let last = Journal::last(layout)?;
            if !last.finished {
                let finish = match &last.undoes {
                    Some(undone) => format!("`swamp undo {undone}` finishes the undo it began"),
                    None => format!("`swamp undo {}` reverses what it did", last.id),
                };
                return Err(CliError::failure(format!(
                    "the last apply, {}, was cut short; name the apply to reverse",
                    last.id
                ))
                .hint(finish));
            }
            last
        }
    };
    if journal.no_undo {
        return Err(crate::undo::UndoError::NotKept { id: journal.id }.into());
    }
    if let Some(at) = journal.pruned {
        return Err(crate::undo::UndoError::Pruned { id: journal.id, at }.into());
    }
    // Remote objects are restored through the placement's own store, under
    // its lock.
    let remote_placement = journal
        .entries
        .iter()
        .find(|e| matches!(e.op, Op::RemoteSetAside | Op::RemoteRestored))
        .map(|e| e.placement.clone());
    let remote = remote_placement
        .as_ref()
        .filter(|p| *p == &repo.config.target())
        .map(RemoteTarget::open)
        .transpose()
        .map_err(|e| CliError::failure(e.to_string()))?;
    // Saving a plan changes nothing: no lock.
    let locks = match (&remote, &then) {
        (Some(_), Then::Apply { .. } | Then::Expect { .. }) => {
            Some(Locks::take(ctx, layout, &repo.config, "undo")?)
        }
        _ => None,
    };
    let result = plan_and_apply(ctx, &repo, &journal, remote.as_ref(), then);
    match locks {
        Some(l) => l.finish(result),
        None => result,
    }
}

fn plan_and_apply(
    ctx: &Ctx,
    repo: &crate::cli::Repo,
    journal: &Journal,
    remote: Option<&RemoteTarget>,
    then: Then<'_>,
) -> Result<Outcome, CliError> {
    let layout = &repo.layout;
    let observed = crate::state::undo::observe(layout, journal, remote).map_err(|e| {
        CliError::failure(format!(
            "cannot observe the files of apply {}: {e}",
            journal.id
        ))
    })?;
    let plan = crate::plan::undo::compose(journal, &observed);
    if let Then::Expect { saved, .. } = &then
        && **saved != plan
    {
        return Err(CliError::failure(format!(
            "the saved undo plan is stale: planning the undo of {} again gives another plan ({} action(s) and {} conflict(s) now, {} and {} saved); nothing was changed",
            journal.id,
            plan.actions.len(),
            plan.conflicts.len(),
            saved.actions.len(),
            saved.conflicts.len()
        ))
        .hint(format!(
            "`swamp undo {}` shows the undo as it is now",
            journal.id
        )));
    }
    if !ctx.json {
        out!("{}", render_undo(&plan));
    }
    let (yes, detailed_exitcode) = match then {
        Then::Save(path) => {
            SavedUndo::new(repo.config.repo_id, plan.clone())
                .save(path)
                .map_err(|e| CliError::failure(e.to_string()))?;
            if ctx.json {
                print_json(&json!({ "undo": plan, "saved": path }));
            } else {
                outln!(
                    "\nSaved the undo plan to {}; `swamp apply {}` applies it if nothing changed.",
                    path.display(),
                    path.display()
                );
            }
            return Ok(if !plan.conflicts.is_empty() {
                Outcome::Conflicts
            } else {
                Outcome::Success
            });
        }
        Then::Apply {
            yes,
            detailed_exitcode,
        } => (yes, detailed_exitcode),
        Then::Expect { yes, .. } => (yes, false),
    };
    if plan.is_empty() {
        if ctx.json {
            print_json(&json!({ "undo": plan, "applied": null }));
        } else {
            outln!(
                "Nothing to undo: every file of apply {} is as it was before it.",
                journal.id
            );
        }
        return Ok(Outcome::Success);
    }
    if !plan.conflicts.is_empty() {
        if ctx.json {
            print_json(&json!({ "undo": plan, "applied": null }));
        }
        return Ok(Outcome::Conflicts);
    }
    if !yes && !ctx.json && interactive() && !ask("\nDo you want to apply this undo?") {
        return Ok(super::reconcile::cancelled());
    }
    // Past the prompt: asked and answered `yes`, or not asked.
    let confirmed = yes || (!ctx.json && interactive());
    if !confirmed {
        if ctx.json {
            print_json(&json!({ "undo": plan, "applied": null, "preview": true }));
        } else {
            outln!(
                "\nThis was a preview; nothing changed. Run `swamp undo {} -y` to apply it.",
                journal.id
            );
        }
        return Ok(if detailed_exitcode {
            Outcome::Changes
        } else {
            Outcome::Success
        });
    }
    let report = crate::apply::undo::apply(layout, &plan, &crate::cli::command_line(), remote)
        .map_err(|e| CliError::failure(e.to_string()))?;
    if ctx.json {
        print_json(&json!({ "undo": plan, "applied": report }));
    } else {
        let mut remote = match report.restored_remote {
            0 => String::new(),
            n => format!(", {n} remote object(s) restored"),
        };
        if report.set_aside_remote > 0 {
            remote.push_str(&format!(
                ", {} remote object(s) set aside",
                report.set_aside_remote
            ));
        }
        outln!(
            "\nUndid apply {}: {} restored, {} set aside{remote}. Recorded as apply {}; `swamp undo {}` reverses it.",
            journal.id,
            report.restored,
            report.set_aside,
            report.apply_id,
            report.apply_id
        );
    }
    Ok(Outcome::Success)
}

/// `swamp undo --prune`: the retention `[undo]` asks for, planned like any
/// other change (the applies whose trash goes, and why), then confirmed.
pub fn prune(ctx: &Ctx, yes: bool, detailed_exitcode: bool) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let layout = &repo.layout;
    let target = repo.config.target();
    let held = crate::state::undo::held(layout, &target)
        .map_err(|e| CliError::failure(format!("cannot read the undo trash: {e}")))?;
    let policy = (&repo.config.undo).into();
    let actions = crate::plan::retention::prunes(&held, policy, crate::clock::now_secs());
    if !ctx.json {
        out!(
            "{}",
            crate::plan::render::render_prunes(&actions, &repo.config.undo)
        );
    }
    if actions.is_empty() {
        if ctx.json {
            print_json(&json!({ "prune": actions, "applied": null }));
        }
        return Ok(Outcome::Success);
    }
    if !yes && !ctx.json && interactive() && !ask("\nDo you want to prune this trash?") {
        return Ok(super::reconcile::cancelled());
    }
    // Past the prompt: asked and answered `yes`, or not asked.
    let confirmed = yes || (!ctx.json && interactive());
    if !confirmed {
        if ctx.json {
            print_json(&json!({ "prune": actions, "applied": null, "preview": true }));
        } else {
            outln!("\nThis was a preview; nothing changed. Run `swamp undo --prune -y` to prune.");
        }
        return Ok(if detailed_exitcode {
            Outcome::Changes
        } else {
            Outcome::Success
        });
    }
    let remote_needed = actions.iter().any(|a| {
        matches!(a, crate::plan::Action::PruneTrash { remote_objects, .. } if *remote_objects > 0)
    });
    let remote = remote_needed
        .then(|| RemoteTarget::open(&target))
        .transpose()
        .map_err(|e| CliError::failure(e.to_string()))?;
    let locks = match &remote {
        Some(_) => Some(Locks::take(ctx, layout, &repo.config, "undo --prune")?),
        None => None,
    };
    let result = (|| {
        let mut done = Vec::new();
        for a in &actions {
            if let crate::plan::Action::PruneTrash { id, .. } = a {
                let pruned = crate::apply::prune::prune(layout, id, &target, remote.as_ref())
                    .map_err(|e| {
                        CliError::failure(format!("cannot prune the trash of apply {id}: {e}"))
                            .hint("run `swamp undo --prune` again: what was pruned stays pruned")
                    })?;
                done.push(json!({ "id": id, "pruned": pruned }));
            }
        }
        if ctx.json {
            print_json(&json!({ "prune": actions, "applied": done }));
        } else {
            outln!("\nPruned the trash of {} apply(s).", done.len());
        }
        Ok(Outcome::Success)
    })();
    match locks {
        Some(l) => l.finish(result),
        None => result,
    }
}
