//! `swamp status`: the datastore, namespace, where the data lives, and the
//! pending plan's summary.
use crate::cli::output::outln;

use serde_json::json;

use crate::cli::output::print_json;
use crate::cli::render::closing_line;
use crate::cli::{CliError, Ctx, Outcome};
use crate::engine;
use crate::engine::Scope;
use crate::engine::locks::{self, LockState};
use crate::plan::root_label;

pub(super) fn run(ctx: &Ctx) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let config = &repo.config;
    // What needs the datastore (the plan, the lock) may fail (a bucket
    // that refuses the credentials): what is known locally is still shown,
    // with the failure in its place, and the command exits 1.
    let planned = engine::plan(&repo.layout, config, Scope::All).map_err(CliError::from);
    let root = repo.layout.placement_root(&config.target());
    let lock_target = locks::target(&repo.layout, config)?;
    let lock_state = locks::read(&lock_target).map_err(CliError::from);
    let lock_line = lock_line(&lock_state, &planned);
    let failed = planned.is_err() || lock_state.is_err();
    // Lazy hydration: how much of the remote this cache has not fetched.
    let unhydrated = crate::engine::hydrate::unhydrated(&repo.layout, config)?.len();
    let clone = crate::config::clone::CloneSettings::load(&repo.layout.clone_settings_path())?;
    let (effective, source) = clone.hydration(config, None);
    let hydration = config.datastore.is_remote().then(|| effective.as_str());
    let hydration_source = config.datastore.is_remote().then_some(source);
    if ctx.json {
        print_json(&json!({
            "repo": repo.root,
            "hydration": hydration,
            "hydration_source": hydration_source,
            "unhydrated": unhydrated,
            "repo_id": config.repo_id,
            "datastore": config.datastore,
            "namespace": config.namespace,
            "datastore_root": root,
            "catalog": repo.layout.catalog_path(),
            "migrating_from": config.migrating_from,
            "remote": config
                .datastore
                .is_remote()
                .then(|| crate::layout::Layout::remote_url(&config.target())),
            "lock": {
                "url": lock_target.url,
                "state": lock_state.as_ref().map(|s| s.label()).ok(),
                "holder": match &lock_state {
                    Ok(LockState::Held { body, .. }) => Some(body.describe()),
                    _ => None,
                },
                "error": lock_state.as_ref().err().map(|e| e.to_json()["error"].clone()),
            },
            "pending": planned.as_ref().ok().map(|p| p.plan.summary()),
            "converged": planned.as_ref().ok().map(|p| p.plan.is_empty()),
            "error": planned.as_ref().err().map(|e| e.to_json()["error"].clone()),
        }));
        return Ok(if failed {
            Outcome::Failed
        } else {
            Outcome::Success
        });
    }
    show_text(
        &repo,
        &root,
        hydration,
        hydration_source,
        unhydrated,
        &lock_line,
        &planned,
    );
    Ok(if failed {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

/// The lock's state in words (or why it is unknown).
fn lock_line(
    lock_state: &Result<LockState, CliError>,
    planned: &Result<engine::Planned, CliError>,
) -> String {
    match lock_state {
        Ok(LockState::Free) => "free".to_string(),
        Ok(LockState::Held {
            body, stale: false, ..
        }) => format!("held by {} until {}", body.describe(), body.expires_at),
        Ok(LockState::Held {
            body, stale: true, ..
        }) => format!(
            "stale: {} let it expire at {} (the next command takes it over)",
            body.describe(),
            body.expires_at
        ),
        Ok(LockState::Unparseable { reason, .. }) => {
            format!("held by an unknown owner ({reason}); see `swamp datastore lock status`")
        }
        Err(e)
            if planned
                .as_ref()
                .err()
                .is_some_and(|p| p.message == e.message) =>
        {
            "unknown: the datastore did not answer (see `pending`)".to_string()
        }
        Err(e) => format!("unknown: {}", e.message),
    }
}

/// `swamp status` for a person.
fn show_text(
    repo: &crate::cli::Repo,
    root: &std::path::Path,
    hydration: Option<&str>,
    hydration_source: Option<crate::config::clone::Source>,
    unhydrated: usize,
    lock_line: &str,
    planned: &Result<engine::Planned, CliError>,
) {
    let config = &repo.config;
    outln!("repository  {}", repo.root.display());
    outln!("repo id     {}", config.repo_id);
    outln!("datastore   {}", config.datastore);
    outln!(
        "namespace   {}",
        config
            .namespace
            .as_ref()
            .map_or("(none: solo layout)".to_string(), ToString::to_string)
    );
    outln!("data root   {}", root_label(root, &repo.root));
    for p in &config.migrating_from {
        outln!("moving from {p}");
    }
    if config.datastore.is_remote() {
        outln!(
            "remote      {}",
            crate::layout::Layout::remote_url(&config.target())
        );
        outln!("cache       {}", repo.layout.cache_root().display());
        // Whose choice it is, when it is this clone's own.
        let hydration = hydration.map(|h| match hydration_source {
            Some(crate::config::clone::Source::Clone) => format!("{h} (this clone's setting)"),
            _ => h.to_string(),
        });
        match (hydration, unhydrated) {
            (Some(h), 0) => outln!("hydration   {h}"),
            (Some(h), n) => outln!(
                "hydration   {h}: {n} file(s) in the remote only, fetched on first read (all: `swamp datastore sync --pull --hydrate`)"
            ),
            (None, _) => {}
        }
    }
    outln!("lock        {lock_line}");
    match planned {
        Ok(p) if p.plan.is_empty() => {
            outln!("pending     nothing: the datastore matches the configuration")
        }
        Ok(p) => {
            outln!("pending     {}", closing_line(&p.plan));
            outln!("            run `swamp plan` to review, `swamp apply` to converge");
        }
        Err(e) => {
            outln!("pending     unknown: {}", e.message);
            for hint in &e.hints {
                outln!("            {hint}");
            }
        }
    }
}
