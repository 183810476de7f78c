//! `plan`, `apply`, `show`, and the plan → confirm → apply → verify flow
//! that the layout commands share.
use crate::cli::output::{errln, out, outln};

use std::path::Path;

use crate::cli::args::Confirm;
use crate::cli::confirm::decide;
use crate::cli::locking::{Locks, await_writers};
use crate::cli::output::{print_json, print_plan_json};
use crate::cli::render::human_bytes;
use crate::cli::run_doc::{Reason, RunDoc};
use crate::cli::{CliError, Ctx, Outcome, Repo};
use crate::config::Config;
use crate::engine::Scope;
use crate::engine::flow::{self, Flowed, Record};
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
        note_empty_namespace(ctx, &repo, &planned.plan);
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

/// A namespace that holds nothing yet beside others that do: perhaps a
/// mistyped `--namespace`; named on stderr (a note: `-q` silences it).
fn note_empty_namespace(ctx: &Ctx, repo: &Repo, plan: &crate::plan::Plan) {
    let Some(remote) = &plan.remote else { return };
    // Nothing listed but, at most, its own manifest (`.namespace.json`,
    // which `init` writes).
    if remote.objects > 1 || repo.config.namespace.is_none() || ctx.quiet {
        return;
    }
    let others = engine::registry::neighbour_namespaces(&repo.config.target()).unwrap_or_default();
    if others.is_empty() {
        return;
    }
    errln!(
        "note: nothing is stored under {} yet; beside it the datastore holds {}. If you meant one of those, run `swamp datastore namespace set {}` (`swamp datastore namespaces` says whose each is).",
        remote.url,
        others.join(", "),
        others[0]
    );
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
            run_flow(ctx, &repo, read.planned, None, options, confirm, None).map(Ok)
        })();
        match locks.finish(read_only)? {
            Ok(outcome) => return Ok(outcome),
            // It writes the bucket: under the datastore's lock, planned
            // again.
            Err(seen) => vouched = seen,
        }
    }
    let mut locks = Locks::take(ctx, &repo.layout, &repo.config, operation)?;
    let result = (|| {
        // Registered and given an id already, as the listing just showed:
        // nothing to read again.
        if scope != Scope::Layout && repo.config.datastore.is_remote() && !vouched {
            ensure_registered(&repo)?;
        }
        let planned = engine::plan_with(&repo.layout, &repo.config, scope, options)?;
        run_flow(
            ctx,
            &repo,
            planned,
            None,
            options,
            confirm,
            Some(&mut locks),
        )
    })();
    locks.finish(result)
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
    let mut locks = Locks::take(ctx, &repo.layout, &repo.config, "apply")?;
    let result = apply_saved_locked(ctx, &repo, saved, &mut locks);
    locks.finish(result)
}

/// A saved plan is never trusted: it is planned again and applied only
/// when the new plan equals it; the new plan is what runs.
fn apply_saved_locked(
    ctx: &Ctx,
    repo: &Repo,
    saved: SavedPlan,
    locks: &mut Locks,
) -> Result<Outcome, CliError> {
    let options = engine::saved_options(&saved);
    let planned = engine::rederive_plan(&saved, &repo.layout, &repo.config)?;
    // The file's own plan and observation are done with: the new plan is
    // what runs, and they need not stay through its apply and the
    // verifying plan.
    drop(saved);
    flow(
        ctx,
        repo,
        planned,
        options,
        Record::default(),
        None,
        Some(locks),
    )
}

/// Shows `planned`, asks for (or takes) confirmation, records `new_config`
/// in `.swamp.toml` when given, applies, and verifies convergence.
/// `locks`: the command's, whose datastore locks are given back once the
/// apply is verified (so the requests it reports include that).
pub(super) fn run_flow(
    ctx: &Ctx,
    repo: &Repo,
    planned: Planned,
    new_config: Option<&Config>,
    options: SyncOptions,
    confirm: Confirm,
    locks: Option<&mut Locks>,
) -> Result<Outcome, CliError> {
    let record = Record {
        new_config,
        up_front: confirm.yes,
        after_copies: new_config.is_some_and(Config::moves_between_remotes),
    };
    flow(ctx, repo, planned, options, record, Some(confirm), locks)
}

/// The engine's flow, shown as it goes: asked at the confirmation unless
/// `confirm` is `None` (a saved plan is its own review, as `terraform
/// apply FILE`), and its end rendered.
fn flow(
    ctx: &Ctx,
    repo: &Repo,
    planned: Planned,
    options: SyncOptions,
    record: Record<'_>,
    confirm: Option<Confirm>,
    locks: Option<&mut Locks>,
) -> Result<Outcome, CliError> {
    let at = flow::At {
        repo: &repo.root,
        layout: &repo.layout,
        config: &repo.config,
        options,
        transfers: ctx.transfers,
    };
    let mut ui = CliUi {
        ctx,
        confirm,
        spilled: None,
        locks,
    };
    match flow::run(planned, &at, record, &mut ui)? {
        Flowed::Empty(saved) => {
            if ctx.json {
                let doc = RunDoc {
                    converged: Some(true),
                    ..RunDoc::stopped(
                        Reason::NoChanges,
                        "No changes. The datastore matches the configuration.",
                    )
                };
                print_plan_json(&saved, doc.fields());
            }
            Ok(Outcome::Success)
        }
        Flowed::Conflicts { saved, recorded } => conflicts(ctx, &saved, recorded),
        Flowed::Stopped(outcome) => Ok(outcome),
        Flowed::Applied(ran) => applied(ctx, repo, *ran, ui.spilled),
    }
}

/// The CLI's side of the flow: the plan rendered, the confirmation rule,
/// and the plan document written aside for `--json` before its actions go.
struct CliUi<'a> {
    ctx: &'a Ctx,
    confirm: Option<Confirm>,
    spilled: Option<crate::cli::output::SpilledPlan>,
    locks: Option<&'a mut Locks>,
}

impl flow::Ui<SavedPlan> for CliUi<'_> {
    type Stop = Outcome;

    fn show(&mut self, saved: &SavedPlan) {
        if !self.ctx.json {
            out!("{}", self.ctx.render_plan(&saved.plan));
        }
    }

    fn confirm(&mut self, saved: &SavedPlan) -> Option<Outcome> {
        let confirm = self.confirm?;
        let question = format!(
            "\nDo you want to apply these {} action(s)?",
            saved.plan.actions.len()
        );
        decide(self.ctx, confirm, &question, |reason, message| {
            let doc = RunDoc {
                preview: true,
                ..RunDoc::stopped(reason, message)
            };
            print_plan_json(saved, doc.fields());
        })
        .stop()
    }

    fn release_actions(&mut self, saved: &SavedPlan) -> bool {
        // Shown and applied: the human report needs only the counts, and
        // the JSON document the plan as written aside. Where nothing can
        // be written aside, they stay.
        if !self.ctx.json {
            return true;
        }
        self.spilled = crate::cli::output::SpilledPlan::new(saved).ok();
        self.spilled.is_some()
    }

    fn verified(&mut self) {
        if let Some(locks) = self.locks.as_deref_mut() {
            locks.release_shared();
        }
    }
}

fn conflicts(ctx: &Ctx, saved: &SavedPlan, recorded: bool) -> Result<Outcome, CliError> {
    let message = format!(
        "the plan has {} conflict(s); nothing was applied",
        saved.plan.conflicts.len()
    );
    if recorded {
        errln!(
            "The new layout is recorded in .swamp.toml; once the conflicts are resolved, `swamp apply` finishes the move."
        );
    }
    if ctx.json {
        let err = CliError::new(crate::cli::ErrorKind::Conflicts, message.clone()).hint(
            "each conflict in `plan.conflicts` says how to fix it; run `swamp plan` to see them",
        );
        let doc = RunDoc {
            converged: Some(false),
            recorded,
            ..RunDoc::stopped(Reason::Conflicts, message)
        };
        print_plan_json(saved, doc.with_error(&err).fields());
    } else {
        errln!("error: {message}");
    }
    Ok(Outcome::Conflicts)
}

/// What an applied flow shows: the report, the transfer line and whether
/// it converged (else what is left).
fn applied(
    ctx: &Ctx,
    repo: &Repo,
    ran: flow::Ran,
    spilled: Option<crate::cli::output::SpilledPlan>,
) -> Result<Outcome, CliError> {
    let converged = ran.converged();
    let (saved, report, after) = (&ran.saved, &ran.report, &ran.after);
    if ctx.json {
        let remaining = (!converged).then(|| {
            let config = Config::load(&repo.root).unwrap_or_else(|_| repo.config.clone());
            after.clone().into_saved(&config).to_json()
        });
        let mut doc = RunDoc {
            applied: serde_json::to_value(report).expect("a report serialises"),
            converged: Some(converged),
            remaining: remaining.unwrap_or_default(),
            ..RunDoc::default()
        };
        if !converged {
            let (message, kind) = not_converged(after);
            doc.reason = Some((Reason::NotConverged, message.clone()));
            let err = CliError::new(kind, message).hint(format!(
                "what was applied stays applied; run `{}` again",
                crate::cli::command_line()
            ));
            doc = doc.with_error(&err);
        }
        let rest = doc.fields();
        match spilled {
            Some(plan) => crate::cli::output::print_spilled_plan_json(plan, rest),
            None => print_plan_json(saved, rest),
        }
    } else {
        outln!("\n{}", applied_line(report, saved.plan.remote.is_some()));
        if let Some(line) = transferred_line(ran.carried, ran.elapsed) {
            outln!("{line}");
        }
        if let Some(line) = requests_line(report, &ran.estimated) {
            outln!("{line}");
        }
        if converged {
            outln!("Converged: the datastore matches the configuration.");
        } else {
            outln!("Not converged: the state changed while applying. What is left:\n");
            out!("{}", ctx.render_plan(&after.plan));
            // Exit 1 says it failed; stderr says why, as for any failure.
            errln!(
                "error: {}\n  hint: what was applied stays applied; run `{}` again",
                not_converged(after).0,
                crate::cli::command_line()
            );
        }
    }
    Ok(if converged {
        Outcome::Success
    } else if after.plan.has_conflicts() {
        Outcome::Conflicts
    } else {
        Outcome::Failed
    })
}

/// What an apply that did not converge left, and how it exits.
fn not_converged(after: &Planned) -> (String, crate::cli::ErrorKind) {
    let kind = if after.plan.has_conflicts() {
        crate::cli::ErrorKind::Conflicts
    } else {
        crate::cli::ErrorKind::Failure
    };
    let message = format!(
        "not converged: {} action(s) and {} conflict(s) are left (the state changed while applying)",
        after.plan.actions.len(),
        after.plan.conflicts.len(),
    );
    (message, kind)
}

/// What the run sent, by class, beside what its plan estimated:
/// `Sent 8 requests: 1 list, 4 put, 1 copy, 2 delete (as estimated).`
/// `None` when it sent none.
fn requests_line(
    report: &engine::ApplyReport,
    estimated: &crate::plan::RequestEstimate,
) -> Option<String> {
    let sent = report.requests_sent?;
    if sent.total() == 0 {
        return None;
    }
    let against = if *estimated == sent {
        "as estimated".to_string()
    } else if estimated.total() == 0 {
        "estimated: none".to_string()
    } else {
        format!("estimated: {}", estimated.describe())
    };
    let heartbeat = match report.heartbeat_requests {
        0 => String::new(),
        n => format!("; the lock's heartbeat {n} more"),
    };
    Some(format!(
        "Sent {} request(s): {} ({against}{heartbeat}).",
        sent.total(),
        sent.describe(),
    ))
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

/// The one line that says what an apply did: only what it did (a pull
/// says what it downloaded, not that it moved nothing).
fn applied_line(report: &engine::ApplyReport, remote: bool) -> String {
    let counted = |n: usize, what: &str| (n > 0).then(|| format!("{n} {what}"));
    let mut parts: Vec<String> = [
        (report.moved > 0).then(|| {
            format!(
                "{} moved ({})",
                report.moved,
                human_bytes(report.bytes_moved)
            )
        }),
        counted(report.dropped, "identical duplicate(s) dropped"),
        counted(report.mirrored, "definition file(s) copied into the cache"),
        report
            .sentinel_published
            .then(|| "managed-config sentinel published".to_string()),
        counted(
            report.recorded_remote_only,
            "remote file(s) recorded without downloading (hydration = lazy)",
        ),
        (report.trash_relocated > 0).then(|| {
            format!(
                "set-aside files of {} earlier apply(s) moved into the cache's trash",
                report.trash_relocated
            )
        }),
        (report.trash_pruned > 0).then(|| {
            format!(
                "trash of {} earlier apply(s) pruned ({})",
                report.trash_pruned,
                human_bytes(report.bytes_pruned)
            )
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    if remote {
        parts.extend(
            [
                counted(report.uploaded, "uploaded"),
                counted(report.downloaded, "downloaded"),
                counted(report.copied, "copied to the new place"),
                counted(report.deleted_remote, "deleted from the remote"),
                counted(report.deleted_local, "deleted from the cache"),
            ]
            .into_iter()
            .flatten(),
        );
    }
    if report.catalog_invalidated {
        parts.push("catalog marked for rebuild".to_string());
    }
    if report.migration_finished {
        parts.push("migration record cleared".to_string());
    }
    if parts.is_empty() {
        format!("Applied {} action(s).", report.completed)
    } else {
        format!(
            "Applied {} action(s): {}.",
            report.completed,
            parts.join(", ")
        )
    }
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
