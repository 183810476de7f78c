//! `swamp undo [ID]`: plans the reversal of an apply (default: the last
//! one), shows it for review, and applies it once confirmed.

use serde_json::json;

use crate::cli::locking::Locks;
use crate::cli::output::{ask, interactive, print_json};
use crate::cli::{CliError, Ctx, Outcome};
use crate::plan::render::render_undo;
use crate::store::RemoteTarget;
use crate::undo::{Journal, Op};

pub fn run(
    ctx: &Ctx,
    id: Option<&str>,
    yes: bool,
    detailed_exitcode: bool,
) -> Result<Outcome, CliError> {
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
    let locks = match &remote {
        Some(_) => Some(Locks::take(ctx, layout, &repo.config, "undo")?),
        None => None,
    };
    let result = plan_and_apply(
        ctx,
        layout,
        &journal,
        remote.as_ref(),
        yes,
        detailed_exitcode,
    );
    match locks {
        Some(l) => l.finish(result),
        None => result,
    }
}

fn plan_and_apply(
    ctx: &Ctx,
    layout: &crate::layout::Layout,
    journal: &Journal,
    remote: Option<&RemoteTarget>,
    yes: bool,
    detailed_exitcode: bool,
) -> Result<Outcome, CliError> {
    let observed = crate::state::undo::observe(layout, journal, remote).map_err(|e| {
        CliError::failure(format!(
            "cannot observe the files of apply {}: {e}",
            journal.id
        ))
    })?;
    let plan = crate::plan::undo::compose(journal, &observed);
    if !ctx.json {
        print!("{}", render_undo(&plan));
    }
    if plan.is_empty() {
        if ctx.json {
            print_json(&json!({ "undo": plan, "applied": null }));
        } else {
            println!(
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
    let confirmed = yes || (!ctx.json && interactive() && ask("\nApply this undo?"));
    if !confirmed {
        if ctx.json {
            print_json(&json!({ "undo": plan, "applied": null, "preview": true }));
        } else {
            println!(
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
        let remote = match report.restored_remote {
            0 => String::new(),
            n => format!(", {n} remote object(s) restored"),
        };
        println!(
            "\nUndid apply {}: {} restored, {} set aside{remote}. Recorded as apply {}; `swamp undo {}` reverses it.",
            journal.id, report.restored, report.set_aside, report.apply_id, report.apply_id
        );
    }
    Ok(Outcome::Success)
}
