//! `datastore config migrate`: publish the repository's definition
//! directories to the datastore's `config/` tier, content first and the
//! sentinel last (see [`crate::engine::managed`]). Without confirmation it
//! previews; with it, it records `[config] managed = true` and applies.
//!
//! A publish that fails keeps the local copy in the cache, writes no
//! sentinel anywhere and says how to publish it; when the remote cannot be
//! reached at all, the mirror is still copied into the cache where that
//! replaces nothing.
use crate::cli::output::outln;

use super::reconcile::run_flow;
use crate::cli::args::Confirm;
use crate::cli::locking::Locks;
use crate::cli::{CliError, Ctx, Outcome, Repo};
use crate::config::Config;
use crate::engine::locks::LockError;
use crate::engine::registry::register_namespace;
use crate::engine::{self, SyncOptions};
use crate::engine::{Scope, mirror};

pub(super) fn migrate(ctx: &Ctx, confirm: Confirm) -> Result<Outcome, CliError> {
    let yes = confirm.yes;
    let repo = ctx.open_repo()?;
    if !repo.config.datastore.is_remote() {
        return Err(CliError::usage(format!(
            "managed config is kept in a remote datastore; this repository uses `{}`; nothing was changed",
            repo.config.datastore.kind()
        ))
        .hint("set one up with `swamp datastore setup s3://bucket/prefix` (or `gs://bucket/prefix`), then run `swamp datastore config migrate`"));
    }
    let mut config = repo.config.clone();
    config.config.managed = true;
    let changed = config != repo.config;
    let repo = Repo::new(repo.root.clone(), config.clone())?;
    let mirror = mirror::managed_mirror(&repo.layout, &config, Scope::Config)?;
    if mirror.is_none_or(|m| m.files.is_empty()) {
        return Err(CliError::failure(format!(
            "there are no definition files in models/, workflows/ or vaults/ of {}; nothing to migrate",
            repo.root.display()
        ))
        .hint("add the definitions there, then run `swamp datastore config migrate`"));
    }

    // Held from planning to the end, as every command that writes the
    // remote; a preview that cannot turn into an apply takes none.
    let locks = if confirm.may_apply(ctx) {
        match Locks::try_take(ctx, &repo.layout, &config, "datastore config migrate") {
            Ok(l) => Some(l),
            Err(LockError::Store(e)) if e.is_transient() => {
                return offline(ctx, &repo, &config, yes, LockError::Store(e).into());
            }
            Err(e) => return Err(e.into()),
        }
    } else {
        None
    };
    let mut locks = locks;
    let result = migrate_locked(ctx, &repo, &config, changed, confirm, locks.as_mut());
    match locks {
        Some(l) => l.finish(result),
        None => result,
    }
}

fn migrate_locked(
    ctx: &Ctx,
    repo: &Repo,
    config: &Config,
    changed: bool,
    confirm: Confirm,
    locks: Option<&mut Locks>,
) -> Result<Outcome, CliError> {
    let yes = confirm.yes;
    let planned =
        match engine::plan_with(&repo.layout, config, Scope::Config, SyncOptions::default()) {
            Ok(p) => p,
            Err(e) if e.remote_unreachable() => return offline(ctx, repo, config, yes, e.into()),
            Err(e) => return Err(e.into()),
        };
    if yes && !planned.plan.is_empty() && !planned.plan.has_conflicts() {
        match register_namespace(&config.target(), config.repo_id) {
            Ok(_) => {}
            Err(e) if e.remote_unreachable() => return offline(ctx, repo, config, yes, e.into()),
            Err(e) => return Err(e.into()),
        }
    }
    let publishes = !planned.plan.is_empty();
    // `[config] managed = true` is recorded only with a plan that can run.
    let record = changed && !planned.plan.has_conflicts();
    run_flow(
        ctx,
        repo,
        planned,
        record.then_some(config),
        SyncOptions::default(),
        confirm,
        locks,
    )
    .map_err(|e| {
        // Confirmed and failed while applying: if the local copy is there,
        // say so and how to publish it.
        if yes
            && publishes
            && e.kind == crate::cli::ErrorKind::Failure
            && mirror::saved_locally(&repo.layout, &repo.config)
        {
            unpublished(&e.message)
        } else {
            e
        }
    })
}

/// The remote could not be reached: with confirmation, keep the migration
/// in the cache (only where that replaces nothing) and fail with the retry
/// instruction; otherwise report the error and change nothing.
fn offline(
    ctx: &Ctx,
    repo: &Repo,
    config: &Config,
    yes: bool,
    err: CliError,
) -> Result<Outcome, CliError> {
    if !yes {
        return Err(err);
    }
    match mirror::mirror_offline(&repo.root, &repo.layout, config)? {
        Some(report) => {
            config.save(&repo.root)?;
            if !ctx.json {
                outln!(
                    "Copied {} definition file(s) into the cache's config/ tier; the remote was not reached.",
                    report.mirrored
                );
            }
            Err(unpublished(&err.message))
        }
        None => Err(err.hint(
            "the cache already holds config from the datastore, so only the remote can tell what to publish; run `swamp datastore config migrate` again once it is reachable",
        )),
    }
}

fn unpublished(reason: &str) -> CliError {
    let reason = reason.trim_end_matches('.');
    CliError::failure(format!(
        "The migration is saved locally but was not published to the datastore: {reason}. Run `swamp datastore config migrate` again to publish it (or `swamp datastore sync --push`)."
    ))
    .hint("nothing vouches for the config until it is published: no sentinel was written, here or in the datastore")
}
