//! `swamp undo [ID]`: plans the reversal of an apply (default: the last
//! one), shows it for review, and applies it once confirmed.
use crate::cli::output::{out, outln};

use serde_json::json;

use std::path::Path;

use crate::cli::args::Confirm;
use crate::cli::confirm::{Go, decide};
use crate::cli::locking::Locks;
use crate::cli::output::print_json;
use crate::cli::render::render_undo;
use crate::cli::run_doc::{Reason, document};
use crate::cli::{CliError, Ctx, Outcome};
use crate::engine;
use crate::engine::undo::{PruneFlowed, UndoFlowed, UndoSubject};
use crate::journal::UndoError;
use crate::plan::Action;
use crate::plan::file::SavedUndo;
use crate::plan::undo::UndoPlan;

/// What an undo's or a prune's `--json` says besides its plan (one shape
/// whatever the outcome, see `cli::run_doc`).
#[derive(Default)]
struct Doc<'a> {
    preview: bool,
    applied: serde_json::Value,
    saved: Option<&'a Path>,
    reason: Option<(Reason, &'a str)>,
    error: Option<CliError>,
}

impl<'a> Doc<'a> {
    fn stopped(reason: Reason, message: &'a str) -> Doc<'a> {
        Doc {
            reason: Some((reason, message)),
            ..Doc::default()
        }
    }
}

/// A plan with conflicts: not applied (exit 3).
fn conflicts_doc(n: usize) -> Doc<'static> {
    Doc {
        reason: Some((
            Reason::Conflicts,
            "the undo plan has conflicts; nothing was applied",
        )),
        error: Some(
            CliError::new(
                crate::cli::ErrorKind::Conflicts,
                format!("the undo plan has {n} conflict(s); nothing was applied"),
            )
            .hint("each conflict in `undo.conflicts` says what stands in the way"),
        ),
        ..Doc::default()
    }
}

/// `{undo, preview, applied, saved, reason, error}`.
fn undo_doc(plan: Option<&UndoPlan>, d: Doc<'_>) -> serde_json::Value {
    document(
        vec![
            ("undo", json!(plan)),
            ("preview", json!(d.preview)),
            ("applied", d.applied),
            ("saved", json!(d.saved)),
        ],
        d.reason,
        d.error.as_ref(),
    )
}

/// `{prune, preview, applied, reason, error}`.
fn prune_doc(actions: &[Action], d: Doc<'_>) -> serde_json::Value {
    document(
        vec![
            ("prune", json!(actions)),
            ("preview", json!(d.preview)),
            ("applied", d.applied),
        ],
        d.reason,
        d.error.as_ref(),
    )
}

/// How the undo plan is taken forward once shown.
enum Then<'a> {
    /// Confirm (or `-y`) and apply.
    Apply {
        confirm: Confirm,
        detailed_exitcode: bool,
    },
    /// `-o FILE`: save it for `swamp apply FILE`.
    Save(&'a Path),
    /// `swamp apply FILE`: apply only if it equals the saved plan.
    Expect { saved: &'a SavedUndo },
}

impl<'a> Then<'a> {
    /// From the command line: saved with `-o FILE`, else confirmed.
    fn of(out: Option<&'a Path>, confirm: Confirm, detailed_exitcode: bool) -> Then<'a> {
        match out {
            Some(path) => Then::Save(path),
            None => Then::Apply {
                confirm,
                detailed_exitcode,
            },
        }
    }
}

pub(super) fn run(
    ctx: &Ctx,
    id: Option<&str>,
    confirm: Confirm,
    detailed_exitcode: bool,
    out: Option<&Path>,
) -> Result<Outcome, CliError> {
    undo_with(
        ctx,
        Which::Undo(id),
        Then::of(out, confirm, detailed_exitcode),
    )
}

/// `swamp redo`: the undo of the newest undo not redone yet, planned,
/// reviewed and confirmed as every undo.
pub(super) fn redo(
    ctx: &Ctx,
    confirm: Confirm,
    detailed_exitcode: bool,
    out: Option<&Path>,
) -> Result<Outcome, CliError> {
    undo_with(ctx, Which::Redo, Then::of(out, confirm, detailed_exitcode))
}

/// Which apply an undo reverses.
enum Which<'a> {
    /// That one, or (`None`) the newest not undone yet.
    Undo(Option<&'a str>),
    /// The newest undo not redone yet.
    Redo,
}

/// `swamp apply FILE` of a saved undo plan: planned again, applied only if
/// unchanged.
pub(super) fn apply_saved(ctx: &Ctx, saved: &SavedUndo) -> Result<Outcome, CliError> {
    undo_with(
        ctx,
        Which::Undo(Some(&saved.undo.undoes)),
        Then::Expect { saved },
    )
}

fn undo_with(ctx: &Ctx, which: Which<'_>, then: Then<'_>) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    if let Then::Expect { saved, .. } = &then {
        // Before the journal is looked for: another repository's history.
        engine::same_repo(saved.repo_id, &repo.config)?;
    }
    let subject = match which {
        Which::Undo(id) => engine::undo::subject(&repo.layout, &repo.config, id),
        Which::Redo => engine::undo::redo_subject(&repo.layout, &repo.config),
    };
    let subject = match subject {
        Ok(subject) => subject,
        // Nothing to do is not an error (exit 0, as `Nothing to prune`).
        Err(engine::EngineError::Undo(
            e @ (UndoError::NoHistory | UndoError::AllUndone | UndoError::NothingToRedo),
        )) => return nothing_to_do(ctx, &e),
        Err(e) => return Err(e.into()),
    };
    // Saving a plan, or a preview, changes nothing: no lock.
    let applies = match &then {
        Then::Apply { confirm, .. } => confirm.may_apply(ctx),
        Then::Expect { .. } => true,
        Then::Save(_) => false,
    };
    // An undo that writes the bucket holds its lock; one that only
    // restores the cache holds the cache's (so it never interleaves with
    // a pull or a `data get` there); a local or filesystem datastore's
    // files are the datastore's, under its lock.
    let (layout, config) = (&repo.layout, &repo.config);
    let locks = match applies {
        false => None,
        true if subject.writes_remote() || !config.datastore.is_remote() => Some(Locks::take(
            ctx,
            layout,
            &subject.locked_config(config),
            "undo",
        )?),
        true => Some(Locks::take_local(ctx, layout, config, "undo")?),
    };
    let result = plan_and_apply(ctx, &repo, &subject, then);
    match locks {
        Some(l) => l.finish(result),
        None => result,
    }
}

/// An undo or redo with nothing to reverse: said, and exit 0.
fn nothing_to_do(ctx: &Ctx, e: &UndoError) -> Result<Outcome, CliError> {
    let mut message = e.to_string();
    // The error's own words, as a sentence, and where to go from here.
    if let Some(first) = message.get(..1) {
        message.replace_range(..1, &first.to_uppercase());
    }
    message.push('.');
    match e {
        UndoError::AllUndone => message.push_str(
            " `swamp redo` re-applies what the last undo reversed; `swamp history` lists the applies.",
        ),
        UndoError::NothingToRedo => {
            message.push_str(" `swamp undo` walks back one apply at a time.")
        }
        _ => {}
    }
    if ctx.json {
        print_json(&undo_doc(None, Doc::stopped(Reason::NoChanges, &message)));
    } else {
        outln!("{message}");
    }
    Ok(Outcome::Success)
}

fn plan_and_apply(
    ctx: &Ctx,
    repo: &crate::cli::Repo,
    subject: &UndoSubject,
    then: Then<'_>,
) -> Result<Outcome, CliError> {
    let layout = &repo.layout;
    let plan = match &then {
        Then::Expect { saved, .. } => engine::rederive_undo(saved, subject, layout, &repo.config)?,
        _ => engine::undo::plan_undo(layout, subject)?,
    };
    let (confirm, detailed_exitcode) = match then {
        Then::Save(path) => {
            if !ctx.json {
                out!("{}", render_undo(&plan));
            }
            return save(ctx, repo, &plan, path);
        }
        Then::Apply {
            confirm,
            detailed_exitcode,
        } => (Some(confirm), detailed_exitcode),
        // A saved plan is its own review.
        Then::Expect { .. } => (None, false),
    };
    let mut ui = UndoUi { ctx, confirm };
    match engine::undo::run(plan, layout, subject, &crate::cli::command_line(), &mut ui)? {
        UndoFlowed::Empty(plan) => {
            let message = format!(
                "Nothing to undo: every file of apply {} is as it was before it.",
                subject.id()
            );
            if ctx.json {
                print_json(&undo_doc(
                    Some(&plan),
                    Doc::stopped(Reason::NoChanges, &message),
                ));
            } else {
                outln!("{message}");
            }
            Ok(Outcome::Success)
        }
        UndoFlowed::Conflicts(plan) => {
            if ctx.json {
                let doc = conflicts_doc(plan.conflicts.len());
                print_json(&undo_doc(Some(&plan), doc));
            }
            Ok(Outcome::Conflicts)
        }
        UndoFlowed::Stopped(outcome) => Ok(detailed(outcome, detailed_exitcode)),
        UndoFlowed::Applied(plan, report) => {
            show_undone(ctx, subject, &plan, &report);
            Ok(Outcome::Success)
        }
    }
}

/// The CLI's side of an undo's flow: the plan rendered, and the
/// confirmation rule unless it is a saved plan's (its own review).
struct UndoUi<'a> {
    ctx: &'a Ctx,
    confirm: Option<Confirm>,
}

impl engine::flow::Ui<UndoPlan> for UndoUi<'_> {
    type Stop = Outcome;

    fn show(&mut self, plan: &UndoPlan) {
        if !self.ctx.json {
            out!("{}", render_undo(plan));
        }
    }

    fn confirm(&mut self, plan: &UndoPlan) -> Option<Outcome> {
        let confirm = self.confirm?;
        decide(
            self.ctx,
            confirm,
            "\nDo you want to apply this undo?",
            |reason, message| {
                let doc = Doc {
                    preview: true,
                    ..Doc::stopped(reason, message)
                };
                print_json(&undo_doc(Some(plan), doc));
            },
        )
        .stop()
    }
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
        let message = format!(
            "Saved the undo plan to {}; `swamp apply {}` applies it if nothing changed.",
            path.display(),
            path.display()
        );
        let mut doc = match plan.conflicts.len() {
            0 => Doc::stopped(Reason::Saved, &message),
            n => conflicts_doc(n),
        };
        doc.saved = Some(path);
        print_json(&undo_doc(Some(plan), doc));
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
        let doc = Doc {
            applied: json!(report),
            ..Doc::default()
        };
        print_json(&undo_doc(Some(plan), doc));
    } else {
        let mut done = crate::cli::render::counted(&[
            (report.restored, "file(s) restored"),
            (report.set_aside, "file(s) set aside"),
            (report.moved_back, "file(s) moved back"),
            (report.restored_remote, "remote object(s) restored"),
            (report.set_aside_remote, "remote object(s) set aside"),
        ]);
        if done.is_empty() {
            done = "nothing changed".into();
        }
        if let Some(back) = &plan.moves_back {
            done.push_str(&format!(
                "; `.swamp.toml` names {} again",
                crate::cli::render::place_label(&back.to)
            ));
        }
        let done = format!("{done}. Recorded as apply {}", report.apply_id);
        match (&plan.redoes, &plan.again) {
            (Some(redone), _) => {
                outln!("\nRedid apply {redone}: {done}; `swamp undo` reverses it again.")
            }
            (None, Some(apply)) => {
                outln!("\nUndid apply {apply} again: {done}; `swamp redo` puts it back.")
            }
            (None, None) => outln!(
                "\nUndid apply {}: {done}; `swamp redo` puts it back.",
                subject.id()
            ),
        }
        if let Some(n) = report.followed {
            outln!("This clone's cache followed the bucket: {n} file(s) downloaded or removed.");
        }
    }
}

/// `swamp undo --prune`: the retention `[undo]` asks for, planned like any
/// other change (the applies whose trash goes, and why), then confirmed.
/// A dry run that was asked for `--detailed-exitcode` exits 2 with changes.
fn detailed(outcome: Outcome, detailed_exitcode: bool) -> Outcome {
    match outcome {
        Outcome::Success if detailed_exitcode => Outcome::Changes,
        o => o,
    }
}

pub(super) fn prune(
    ctx: &Ctx,
    confirm: Confirm,
    detailed_exitcode: bool,
) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let mut ui = PruneUi {
        ctx,
        repo: &repo,
        confirm,
        locks: None,
    };
    let result = match engine::undo::run_prunes(&repo.layout, &repo.config, &mut ui) {
        Ok(PruneFlowed::Empty(actions)) => {
            if ctx.json {
                let doc = Doc::stopped(Reason::NoChanges, "Nothing to prune.");
                print_json(&prune_doc(&actions, doc));
            }
            Ok(Outcome::Success)
        }
        Ok(PruneFlowed::Stopped(stop)) => stop.map(|o| detailed(o, detailed_exitcode)),
        Ok(PruneFlowed::Applied(actions, done)) => {
            if ctx.json {
                let done: Vec<_> = done
                    .iter()
                    .map(|(id, pruned)| json!({ "id": id, "pruned": pruned }))
                    .collect();
                let doc = Doc {
                    applied: json!(done),
                    ..Doc::default()
                };
                print_json(&prune_doc(&actions, doc));
            } else {
                outln!("\nPruned the trash of {} apply(s).", done.len());
            }
            Ok(Outcome::Success)
        }
        Err(e) => Err(e.into()),
    };
    match ui.locks {
        Some(l) => l.finish(result),
        None => result,
    }
}

/// The CLI's side of `undo --prune`'s flow: the list rendered, the
/// confirmation rule, and, once confirmed, the datastore's lock when the
/// remote trash is pruned too (not held while a prompt waits).
struct PruneUi<'a> {
    ctx: &'a Ctx,
    repo: &'a crate::cli::Repo,
    confirm: Confirm,
    locks: Option<Locks>,
}

impl engine::flow::Ui<Vec<Action>> for PruneUi<'_> {
    /// How the command ends, or the lock it could not take.
    type Stop = Result<Outcome, CliError>;

    fn show(&mut self, actions: &Vec<Action>) {
        if !self.ctx.json {
            out!(
                "{}",
                crate::cli::render::render_prunes(actions, &self.repo.config.undo)
            );
        }
    }

    fn confirm(&mut self, actions: &Vec<Action>) -> Option<Self::Stop> {
        if let Go::Stop(outcome) = decide(
            self.ctx,
            self.confirm,
            "\nDo you want to prune this trash?",
            |reason, message| {
                let doc = Doc {
                    preview: true,
                    ..Doc::stopped(reason, message)
                };
                print_json(&prune_doc(actions, doc));
            },
        ) {
            return Some(Ok(outcome));
        }
        if !engine::undo::prunes_write_remote(actions) {
            return None;
        }
        let (layout, config) = (&self.repo.layout, &self.repo.config);
        match Locks::take(self.ctx, layout, config, "undo --prune") {
            Ok(l) => {
                self.locks = Some(l);
                None
            }
            Err(e) => Some(Err(e)),
        }
    }
}
