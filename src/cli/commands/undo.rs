//! `swamp undo [ID]`: plans the reversal of an apply (default: the last
//! one), shows it for review, and applies it once confirmed.
use crate::cli::output::{out, outln};

use serde_json::json;

use std::path::Path;

use crate::cli::locking::Locks;
use crate::cli::output::{ask, interactive, print_json};
use crate::cli::render::render_undo;
use crate::cli::{CliError, Ctx, Outcome};
use crate::engine::{self, undo::UndoSubject};
use crate::plan::file::SavedUndo;

/// How the undo plan is taken forward once shown.
enum Then<'a> {
    /// Confirm (or `-y`) and apply.
    Apply { yes: bool, detailed_exitcode: bool },
    /// `-o FILE`: save it for `swamp apply FILE`.
    Save(&'a Path),
    /// `swamp apply FILE`: apply only if it equals the saved plan.
    Expect { saved: &'a SavedUndo, yes: bool },
}

pub(super) fn run(
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
pub(super) fn apply_saved(ctx: &Ctx, saved: &SavedUndo) -> Result<Outcome, CliError> {
    undo_with(
        ctx,
        Some(&saved.undo.undoes),
        Then::Expect { saved, yes: true },
    )
}

fn undo_with(ctx: &Ctx, id: Option<&str>, then: Then<'_>) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    if let Then::Expect { saved, .. } = &then {
        // Before the journal is looked for: another repository's history.
        engine::same_repo(saved.repo_id, &repo.config)?;
    }
    let subject = engine::undo::subject(&repo.layout, &repo.config, id)?;
    // Saving a plan changes nothing: no lock.
    let locks = match &then {
        Then::Apply { .. } | Then::Expect { .. } if subject.writes_remote() => {
            Some(Locks::take(ctx, &repo.layout, &repo.config, "undo")?)
        }
        _ => None,
    };
    let result = plan_and_apply(ctx, &repo, &subject, then);
    match locks {
        Some(l) => l.finish(result),
        None => result,
    }
}

fn plan_and_apply(
    ctx: &Ctx,
    repo: &crate::cli::Repo,
    subject: &UndoSubject,
    then: Then<'_>,
) -> Result<Outcome, CliError> {
    let layout = &repo.layout;
    let plan = match &then {
        Then::Expect { saved, .. } => {
            match engine::rederive(engine::Saved::Undo(saved, subject), layout, &repo.config)? {
                engine::Rederived::Undo(plan) => plan,
                engine::Rederived::Plan(_) => unreachable!("an undo re-derives as an undo"),
            }
        }
        _ => engine::undo::plan_undo(layout, subject)?,
    };
    if !ctx.json {
        out!("{}", render_undo(&plan));
    }
    let (yes, detailed_exitcode) = match then {
        Then::Save(path) => return save(ctx, repo, &plan, path),
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
                subject.id()
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
        return Ok(super::cancelled());
    }
    // Past the prompt: asked and answered `yes`, or not asked.
    let confirmed = yes || (!ctx.json && interactive());
    if !confirmed {
        if ctx.json {
            print_json(&json!({ "undo": plan, "applied": null, "preview": true }));
        } else {
            outln!(
                "\nThis was a preview; nothing changed. Run `swamp undo {} -y` to apply it.",
                subject.id()
            );
        }
        return Ok(if detailed_exitcode {
            Outcome::Changes
        } else {
            Outcome::Success
        });
    }
    let report = engine::undo::apply_undo(layout, subject, &plan, &crate::cli::command_line())?;
    show_undone(ctx, subject, &plan, &report);
    Ok(Outcome::Success)
}

/// `-o FILE`: the undo plan saved for `swamp apply FILE`.
fn save(
    ctx: &Ctx,
    repo: &crate::cli::Repo,
    plan: &crate::plan::undo::UndoPlan,
    path: &Path,
) -> Result<Outcome, CliError> {
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
    Ok(if !plan.conflicts.is_empty() {
        Outcome::Conflicts
    } else {
        Outcome::Success
    })
}

/// What an applied undo did.
fn show_undone(
    ctx: &Ctx,
    subject: &UndoSubject,
    plan: &crate::plan::undo::UndoPlan,
    report: &engine::undo::UndoReport,
) {
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
            subject.id(),
            report.restored,
            report.set_aside,
            report.apply_id,
            report.apply_id
        );
    }
}

/// `swamp undo --prune`: the retention `[undo]` asks for, planned like any
/// other change (the applies whose trash goes, and why), then confirmed.
pub(super) fn prune(ctx: &Ctx, yes: bool, detailed_exitcode: bool) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let layout = &repo.layout;
    let actions = engine::undo::due_prunes(layout, &repo.config)?;
    if !ctx.json {
        out!(
            "{}",
            crate::cli::render::render_prunes(&actions, &repo.config.undo)
        );
    }
    if actions.is_empty() {
        if ctx.json {
            print_json(&json!({ "prune": actions, "applied": null }));
        }
        return Ok(Outcome::Success);
    }
    if !yes && !ctx.json && interactive() && !ask("\nDo you want to prune this trash?") {
        return Ok(super::cancelled());
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
    let locks = match engine::undo::prunes_write_remote(&actions) {
        true => Some(Locks::take(ctx, layout, &repo.config, "undo --prune")?),
        false => None,
    };
    let result = (|| {
        let done = engine::undo::apply_prunes(layout, &repo.config, &actions)?;
        if ctx.json {
            let done: Vec<_> = done
                .iter()
                .map(|(id, pruned)| json!({ "id": id, "pruned": pruned }))
                .collect();
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
