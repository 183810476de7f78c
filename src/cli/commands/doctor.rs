//! `swamp doctor datastores [--repair] [-y]`: runs the health checks and
//! shows them as a table (or one JSON document); exits 1 when one fails.
//! With `--repair` it builds the fixes of the failed checks (a layout plan
//! applied through the ordinary apply path, steps such as a catalog
//! rebuild, or "no automatic fix" naming the command), previews them, and
//! with `-y` applies them and runs the checks again.
use crate::cli::output::{errln, out, outln};

use serde_json::{Value, json};

use crate::cli::args::Confirm;
use crate::cli::confirm::{Go, decide};
use crate::cli::locking::Locks;
use crate::cli::output::print_json;
use crate::cli::render::{human_bytes, table};
use crate::cli::{CliError, Ctx, Outcome};
use crate::config;
use crate::doctor::{self, Context, DoctorError, Finding, Fix, Status, local};
use crate::engine::{self, SyncOptions};
use crate::layout::Layout;

fn doctor_err(e: DoctorError) -> CliError {
    match e {
        DoctorError::Engine(e) => e.into(),
        DoctorError::Catalog(e) => e.into(),
        other => CliError::failure(other.to_string()),
    }
}

/// One failed check and how it is repaired.
struct Item {
    finding: Finding,
    fix: Fix,
}

impl Item {
    fn describe(&self) -> String {
        match &self.fix {
            Fix::Manual => format!(
                "no automatic fix in this version: {}",
                self.finding
                    .fix
                    .as_deref()
                    .unwrap_or("see the message above")
            ),
            Fix::Step(step) => step.what.clone(),
            Fix::Plan(planned) => {
                let s = planned.plan.summary();
                format!(
                    "apply the plan below: {} identical duplicate(s) to drop, {} file(s) to move, {} conflict(s)",
                    s.drop_duplicate, s.moves, s.conflicts
                )
            }
        }
    }

    fn automatic(&self) -> bool {
        !matches!(self.fix, Fix::Manual)
    }

    fn to_json(&self) -> Value {
        json!({
            "check": self.finding.name,
            "automatic": self.automatic(),
            "what": self.describe(),
        })
    }
}

pub(super) fn datastores(
    ctx: &Ctx,
    repair: bool,
    check_write: bool,
    confirm: Confirm,
) -> Result<Outcome, CliError> {
    let yes = confirm.yes;
    if (yes || confirm.dry_run) && !repair {
        return Err(CliError::usage(
            "`-y` and `--dry-run` are about repairs, so they need `--repair`; nothing was changed",
        )
        .hint("run `swamp doctor datastores --repair -y`"));
    }
    let root = ctx.repo_root()?;
    let home = Layout::default_swamp_home()?;
    let mut cx = Context::new(&root, &home);
    cx.check_write = check_write;
    let checks = doctor::checks();
    let before = doctor::run_checks(&mut cx, &checks);
    let ok = doctor::all_ok(&before);
    if !repair {
        show_checks(ctx, &before, ok);
        return Ok(outcome(ok));
    }
    if ok {
        if ctx.json {
            print_json(&RepairDoc::unapplied(&before, !yes, &[], &[]).to_json());
        } else {
            out!("{}", render_checks(&before, ctx.style().width));
            outln!("\nNothing to repair: every check passed.");
        }
        return Ok(Outcome::Success);
    }

    let items = repair_items(&checks, &before, &cx)?;
    let plans: Vec<&engine::Planned> = items
        .iter()
        .filter_map(|i| match &i.fix {
            Fix::Plan(p) => Some(p.as_ref()),
            _ => None,
        })
        .collect();
    let conflicts: usize = plans.iter().map(|p| p.plan.conflicts.len()).sum();
    let plans_json: Vec<Value> = plans
        .iter()
        .map(|p| (*p).clone().into_saved(&cx_config(&cx)).to_json())
        .collect();
    let fixes_json: Vec<Value> = items.iter().map(Item::to_json).collect();
    let repairs = Repairs {
        before: &before,
        items: &items,
        plans: &plans,
        fixes_json: &fixes_json,
        plans_json: &plans_json,
    };
    if let Some(outcome) = repairs.unapplied(ctx, conflicts, confirm) {
        return Ok(outcome);
    }

    let results = apply_repairs(ctx, &root, &mut cx, &items)?;
    let after = doctor::run_checks(&mut cx, &checks);
    let ok_after = doctor::all_ok(&after);
    if ctx.json {
        print_json(
            &RepairDoc {
                checks: &after,
                before: &before,
                preview: false,
                fixes: &fixes_json,
                plans: &plans_json,
                results: &results,
            }
            .to_json(),
        );
    } else {
        show_results(&results, &after, ctx.style().width);
    }
    Ok(outcome(ok_after))
}

/// A repair's findings and what would fix them, for showing.
struct Repairs<'a> {
    before: &'a [Finding],
    items: &'a [Item],
    plans: &'a [&'a engine::Planned],
    fixes_json: &'a [Value],
    plans_json: &'a [Value],
}

impl Repairs<'_> {
    /// Shows the repairs; returns the outcome when they are not to be
    /// applied (a plan with conflicts, or no confirmation).
    fn unapplied(&self, ctx: &Ctx, conflicts: usize, confirm: Confirm) -> Option<Outcome> {
        let yes = confirm.yes;
        if !ctx.json {
            out!("{}", render_checks(self.before, ctx.style().width));
            outln!("\nRepairs:");
            for item in self.items {
                outln!("  {}: {}", item.finding.name, item.describe());
            }
            for p in self.plans {
                outln!();
                out!("{}", ctx.render_plan(&p.plan));
            }
        }
        if conflicts > 0 {
            if ctx.json {
                print_json(
                    &RepairDoc::unapplied(self.before, !yes, self.fixes_json, self.plans_json)
                        .to_json(),
                );
            } else {
                errln!(
                    "error: the repair plan has {conflicts} conflict(s); nothing was changed\n  hint: decide each conflict above (keep the right copy in the namespace, delete the other), then run `swamp doctor datastores --repair -y` again"
                );
            }
            return Some(Outcome::Conflicts);
        }
        if !yes && !self.items.iter().any(Item::automatic) {
            if ctx.json {
                print_json(
                    &RepairDoc::unapplied(self.before, true, self.fixes_json, self.plans_json)
                        .to_json(),
                );
            } else {
                outln!(
                    "\nNothing here can be repaired automatically in this version; run the command(s) named above. Nothing was changed."
                );
            }
            // The checks still fail: nothing was repaired.
            return Some(Outcome::Failed);
        }
        if let Go::Stop(outcome) = decide(
            ctx,
            confirm,
            "\nDo you want to apply these repairs?",
            |_, _| {
                print_json(
                    &RepairDoc::unapplied(self.before, true, self.fixes_json, self.plans_json)
                        .to_json(),
                );
            },
        ) {
            return Some(outcome);
        }

        None
    }
}

/// The checks, without `--repair`.
fn show_checks(ctx: &Ctx, before: &[Finding], ok: bool) {
    if ctx.json {
        print_json(&json!({"checks": before, "ok": ok}));
    } else {
        out!("{}", render_checks(before, ctx.style().width));
        outln!("\n{}", closing(before));
        if !ok {
            outln!("Run `swamp doctor datastores --repair` to preview the automatic fixes.");
        }
    }
}

/// The fix of each failed check.
fn repair_items(
    checks: &[Box<dyn doctor::Check>],
    before: &[Finding],
    cx: &Context,
) -> Result<Vec<Item>, CliError> {
    let mut items = Vec::new();
    for (check, finding) in checks.iter().zip(before) {
        if finding.failed() {
            let fix = check.fix(cx, finding).map_err(doctor_err)?;
            items.push(Item {
                finding: finding.clone(),
                fix,
            });
        }
    }
    Ok(items)
}

/// Applies the repairs: a stale lock broken first, then (holding the
/// lock) the plans through the engine, then the steps, which look at the
/// result. Returns what each did.
fn apply_repairs(
    ctx: &Ctx,
    root: &std::path::Path,
    cx: &mut Context,
    items: &[Item],
) -> Result<Vec<Value>, CliError> {
    // A stale lock is broken first; the repair then holds the lock itself
    // while it applies. Plans go first (through the ordinary apply path),
    // then the steps (which look at the result); the lock is released
    // before everything is checked again.
    let mut results: Vec<Value> = Vec::new();
    for item in items.iter().filter(|i| i.finding.name == "lock") {
        if let Fix::Step(step) = &item.fix {
            results.push(run_step(item.finding.name, step, cx));
        }
    }
    let locks = {
        let (config, layout) = cx
            .loaded
            .as_ref()
            .map_err(|e| CliError::failure(e.clone()))?;
        Locks::take(ctx, layout, config, "doctor datastores --repair")?
    };
    let mut rebuild_after_plans = false;
    for item in items {
        let Fix::Plan(planned) = &item.fix else {
            continue;
        };
        let (_, layout) = cx
            .loaded
            .as_ref()
            .map_err(|e| CliError::failure(e.clone()))?;
        let r = &engine::apply_and_verify(
            root,
            layout,
            &planned.plan,
            SyncOptions::default(),
            ctx.transfers,
        )?;
        rebuild_after_plans |= r.catalog_invalidated;
        results.push(json!({
            "check": item.finding.name,
            "status": "applied",
            "message": format!(
                "applied {} action(s): {} identical duplicate(s) dropped, {} moved ({})",
                r.completed, r.dropped, r.moved, human_bytes(r.bytes_moved)
            ),
            "report": r,
        }));
    }
    cx.reload();
    let catalog_step_queued = items
        .iter()
        .any(|i| i.finding.name == "catalog" && matches!(i.fix, Fix::Step(_)));
    if rebuild_after_plans && !catalog_step_queued {
        // The moves changed data files; the index follows them.
        let step = local::rebuild_catalog_step();
        results.push(run_step("catalog", &step, cx));
    }
    for item in items {
        match &item.fix {
            Fix::Plan(_) => {}
            Fix::Step(_) if item.finding.name == "lock" => {}
            Fix::Step(step) => results.push(run_step(item.finding.name, step, cx)),
            Fix::Manual => results.push(json!({
                "check": item.finding.name,
                "status": "manual",
                "message": item.describe(),
            })),
        }
    }
    locks.finish(Ok(()))?;
    cx.reload();
    Ok(results)
}

/// What each repair did, and the checks after.
fn show_results(results: &[Value], after: &[Finding], width: Option<u16>) {
    outln!();
    for r in results {
        let mark = match r["status"].as_str() {
            Some("applied") => "done",
            Some("failed") => "FAILED",
            _ => "manual",
        };
        outln!(
            "{mark}  {}: {}",
            r["check"].as_str().unwrap_or(""),
            r["message"].as_str().unwrap_or("")
        );
    }
    outln!("\nAfter repair:");
    out!("{}", render_checks(after, width));
    outln!("\n{}", closing(after));
}

/// The `--repair` document: `checks` and `ok` describe the state when the
/// command ends; `repair` says what was (or would be) done.
struct RepairDoc<'a> {
    checks: &'a [Finding],
    before: &'a [Finding],
    preview: bool,
    fixes: &'a [Value],
    plans: &'a [Value],
    results: &'a [Value],
}

impl<'a> RepairDoc<'a> {
    /// Nothing was applied: the checks are the ones from before.
    fn unapplied(
        before: &'a [Finding],
        preview: bool,
        fixes: &'a [Value],
        plans: &'a [Value],
    ) -> RepairDoc<'a> {
        RepairDoc {
            checks: before,
            before,
            preview,
            fixes,
            plans,
            results: &[],
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "checks": self.checks,
            "ok": doctor::all_ok(self.checks),
            "repair": {
                "needed": !doctor::all_ok(self.before),
                "preview": self.preview,
                "fixes": self.fixes,
                "plans": self.plans,
                "results": self.results,
                "checks_before": self.before,
            },
        })
    }
}

fn run_step(check: &str, step: &doctor::Step, cx: &Context) -> Value {
    match (step.run)(cx) {
        Ok(message) => json!({"check": check, "status": "applied", "message": message}),
        Err(e) => json!({"check": check, "status": "failed", "message": e.to_string()}),
    }
}

/// The configuration the plans were made under (a fix plan exists only
/// when it loaded).
fn cx_config(cx: &Context) -> config::Config {
    cx.loaded
        .as_ref()
        .map(|(c, _)| c.clone())
        .expect("a plan needs a loaded configuration")
}

fn outcome(ok: bool) -> Outcome {
    if ok {
        Outcome::Success
    } else {
        Outcome::Failed
    }
}

/// One row per check (name, status, message), then the fix of each
/// failed check.
fn render_checks(findings: &[Finding], width: Option<u16>) -> String {
    crate::cli::render::escape_controls(&render_checks_raw(findings, width)).into_owned()
}

fn render_checks_raw(findings: &[Finding], width: Option<u16>) -> String {
    let mut t = table();
    // Fitted to the terminal: a message of 600 characters wraps.
    crate::cli::render::Style {
        width,
        color: false,
    }
    .apply(&mut t);
    t.set_header(["check", "status", "message"]);
    for f in findings {
        let status = match f.status {
            Status::Pass => "pass",
            Status::Warn => "! warn",
            Status::Fail => "✗ fail",
            Status::Skip => "skip",
        };
        t.add_row(vec![
            f.name.to_string(),
            status.to_string(),
            f.message.clone(),
        ]);
    }
    let mut out = format!("{}\n", crate::cli::render::table_text(&t));
    for f in findings
        .iter()
        .filter(|f| matches!(f.status, Status::Fail | Status::Warn))
    {
        if let Some(fix) = &f.fix {
            out.push_str(&format!("  fix {}: {fix}\n", f.name));
        }
    }
    out
}

fn closing(findings: &[Finding]) -> String {
    let count = |s: Status| findings.iter().filter(|f| f.status == s).count();
    let warned = match count(Status::Warn) {
        0 => String::new(),
        n => format!(", {n} warned"),
    };
    format!(
        "{} check(s) failed, {} passed{warned}, {} skipped.",
        count(Status::Fail),
        count(Status::Pass),
        count(Status::Skip)
    )
}
