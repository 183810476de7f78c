//! `datastore setup` and `datastore namespace set|unset|migrate`: each
//! changes the desired placement, then runs the shared plan → confirm →
//! apply flow. Without confirmation they preview and change nothing.
use crate::cli::output::outln;

use serde_json::json;

use super::reconcile::run_flow;
use crate::cli::args::Confirm;
use crate::cli::locking::Locks;
use crate::cli::output::print_json;
use crate::cli::{CliError, Ctx, Outcome, Repo};
use crate::config::{Config, DatastoreConfig, Namespace, Placement, parse_datastore_spec};
use crate::engine::Scope;
use crate::engine::registry::{ListedNamespace, list_namespaces, register_namespace};
use crate::engine::{self, SyncOptions};

/// `options`: this run's hydration and `--keep-source`.
pub(super) fn setup(
    ctx: &Ctx,
    spec: &str,
    options: SyncOptions,
    confirm: Confirm,
) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let datastore = parse_datastore_spec(spec).map_err(|e| {
        CliError::usage(e.to_string())
            .hint("e.g. `swamp datastore setup local` or `swamp datastore setup file:///srv/swamp`")
    })?;
    if let DatastoreConfig::Filesystem { path } = &datastore
        && path.as_path().exists()
        && !path.as_path().is_dir()
    {
        return Err(CliError::failure(format!(
            "{} exists and is not a directory; nothing was changed",
            path.as_path().display()
        ))
        .hint("choose a directory path for the filesystem datastore"));
    }
    let target = Placement {
        datastore,
        namespace: repo.config.namespace.clone(),
    };
    if options.hydration == Some(crate::config::Hydration::Lazy) && !target.datastore.is_remote() {
        return Err(CliError::usage(
            "--hydration lazy needs an s3:// or gs:// datastore: a local or filesystem datastore holds every file already",
        ));
    }
    retarget(ctx, &repo, target, None, options, confirm, true)
}

pub(super) fn namespace_set(
    ctx: &Ctx,
    ns: &str,
    migrate: bool,
    confirm: Confirm,
) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let ns = Namespace::parse(ns).map_err(|e| CliError::usage(e.to_string()))?;
    if repo.config.namespace.as_ref() == Some(&ns) {
        if ctx.json {
            print_json(&json!({"namespace": ns, "changed": false}));
        } else {
            outln!("The namespace is already `{ns}`; nothing to do.");
        }
        return Ok(Outcome::Success);
    }
    let target = Placement {
        datastore: repo.config.datastore.clone(),
        namespace: Some(ns),
    };
    retarget(
        ctx,
        &repo,
        target,
        None,
        SyncOptions::default(),
        confirm,
        migrate,
    )
}

pub(super) fn namespace_unset(
    ctx: &Ctx,
    migrate: bool,
    confirm: Confirm,
) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    if repo.config.namespace.is_none() && repo.config.migrating_from.is_empty() {
        if ctx.json {
            print_json(&json!({"namespace": null, "changed": false}));
        } else {
            outln!("No namespace is set; nothing to do.");
        }
        return Ok(Outcome::Success);
    }
    let target = Placement {
        datastore: repo.config.datastore.clone(),
        namespace: None,
    };
    retarget(
        ctx,
        &repo,
        target,
        None,
        SyncOptions::default(),
        confirm,
        migrate,
    )
}

pub(super) fn namespace_migrate(
    ctx: &Ctx,
    reverse: bool,
    confirm: Confirm,
) -> Result<Outcome, CliError> {
    if reverse {
        return namespace_unset(ctx, true, confirm);
    }
    let repo = ctx.open_repo()?;
    if repo.config.namespace.is_none() {
        return Err(
            CliError::failure("no namespace is configured; nothing to migrate into")
                .hint("run `swamp datastore namespace set NS --migrate --confirm`"),
        );
    }
    // Forward: whatever sits in the solo layout of this datastore moves in.
    // An empty solo layout adds nothing, so migrating twice is a no-op.
    let solo = Placement {
        datastore: repo.config.datastore.clone(),
        namespace: None,
    };
    let solo_has_data = crate::engine::holds_data(&repo.layout, &solo);
    let extra = solo_has_data.then_some(solo);
    retarget(
        ctx,
        &repo,
        repo.config.target(),
        extra,
        SyncOptions::default(),
        confirm,
        true,
    )
}

/// Changes the desired placement to `target` (also draining `extra_source`)
/// and, when `migrate`, plans and applies the move.
fn retarget(
    ctx: &Ctx,
    repo: &Repo,
    target: Placement,
    extra_source: Option<Placement>,
    options: SyncOptions,
    confirm: Confirm,
    migrate: bool,
) -> Result<Outcome, CliError> {
    let mut config = repo.config.clone();
    config.retarget(target);
    if let Some(source) = extra_source
        && source != config.target()
        && !config.migrating_from.contains(&source)
    {
        config.migrating_from.push(source);
    }
    config
        .validate()
        .map_err(|e| CliError::failure(format!("the new configuration is invalid: {e}")))?;
    let new_repo = Repo::new(repo.root.clone(), config.clone())?;
    let operation = if migrate {
        "layout migration"
    } else {
        "namespace change"
    };
    // A preview writes nothing and holds nothing (it must not even create
    // a filesystem datastore's directory for the lock). On a terminal the
    // preview may turn into an apply, so the lock is taken.
    if migrate && !confirm.may_apply(ctx) {
        return retarget_locked(ctx, repo, &new_repo, options, confirm, migrate, None);
    }
    let mut locks = Locks::take(ctx, &new_repo.layout, &config, operation)?;
    let result = retarget_locked(
        ctx,
        repo,
        &new_repo,
        options,
        confirm,
        migrate,
        Some(&mut locks),
    );
    locks.finish(result)
}

/// `new_repo`: the repository as `.swamp.toml` will have it.
fn retarget_locked(
    ctx: &Ctx,
    repo: &Repo,
    new_repo: &Repo,
    options: SyncOptions,
    confirm: Confirm,
    migrate: bool,
    locks: Option<&mut Locks>,
) -> Result<Outcome, CliError> {
    let config = &new_repo.config;
    if !migrate {
        if config.datastore.is_remote() {
            register_namespace(&config.target(), config.repo_id)?;
        }
        return record_only(ctx, new_repo, config);
    }
    let scope = if config.datastore.is_remote() {
        Scope::All
    } else {
        Scope::Layout
    };
    // A move this version refuses is refused before the new place is
    // registered (it once wrote the new bucket's id, then refused).
    engine::check_supported(config, scope)?;
    if confirm.may_apply(ctx) && config.datastore.is_remote() {
        // As before any sync: the namespace is claimed in the bucket
        // before .swamp.toml changes, and the bucket holds the id the sync
        // base this apply records is bound to (planned without it, the
        // base would be set aside by the next sync as one made with
        // another remote).
        register_namespace(&config.target(), config.repo_id)?;
        crate::engine::registry::ensure_remote_id(&config.target())?;
        crate::engine::registry::clear_moved(&config.target())?;
    }
    // This run's hydration plans this run (a lazy setup records what it
    // would download) and becomes this clone's setting when it applies.
    let planned = engine::plan_with(&new_repo.layout, config, scope, options)?;
    let changed = *config != repo.config;
    run_flow(
        ctx,
        new_repo,
        planned,
        changed.then_some(config),
        options,
        confirm,
        locks,
    )
}

/// `namespace set/unset` without `--migrate`: record the desired state,
/// move nothing, and say what is left to move.
fn record_only(ctx: &Ctx, repo: &Repo, config: &Config) -> Result<Outcome, CliError> {
    config.save(&repo.root)?;
    let planned = engine::plan(&repo.layout, config, Scope::Layout)?;
    let summary = planned.plan.summary();
    let pending = summary.moves + summary.drop_duplicate;
    if ctx.json {
        print_json(&json!({
            "namespace": config.namespace,
            "datastore": config.datastore,
            "changed": true,
            "files_to_move": pending,
            "conflicts": summary.conflicts,
        }));
    } else {
        match &config.namespace {
            Some(ns) => outln!("Namespace set to `{ns}` in .swamp.toml."),
            None => outln!("Namespace removed from .swamp.toml."),
        }
        if (pending > 0 || summary.conflicts > 0) && !ctx.quiet {
            outln!(
                "{pending} file(s) are still at the old location. Run `swamp plan` to review the move and `swamp apply` to make it."
            );
        }
    }
    Ok(Outcome::Success)
}

pub(super) fn namespaces(ctx: &Ctx, spec: Option<&str>) -> Result<Outcome, CliError> {
    // `--datastore SPEC` needs no repository (as `lock status`).
    let (placement, current) = match spec {
        Some(spec) => {
            let datastore =
                parse_datastore_spec(spec).map_err(|e| CliError::usage(e.to_string()))?;
            let placement = Placement {
                datastore,
                namespace: None,
            };
            (placement, None)
        }
        None => {
            let repo = ctx.open_repo().map_err(|e| {
                e.hint("run it inside a repository, or name the datastore: `swamp datastore namespaces --datastore s3://bucket/prefix`")
            })?;
            let current = repo
                .config
                .namespace
                .as_ref()
                .map(|n| n.as_str().to_string());
            (repo.config.target(), current)
        }
    };
    if !placement.datastore.is_remote() {
        return Err(CliError::usage(format!(
            "namespaces are registered in remote datastores; this one is `{}`",
            placement.datastore.kind()
        ))
        .hint("set up a remote with `swamp datastore setup s3://bucket/prefix` or `gs://bucket/prefix`"));
    }
    let all = list_namespaces(&placement)?;
    let (registered, unrecognised): (Vec<_>, Vec<_>) = all
        .iter()
        .partition(|n| matches!(n, ListedNamespace::Registered(_)));
    if ctx.json {
        print_namespaces_json(&registered, &unrecognised, current.as_deref());
        return Ok(Outcome::Success);
    }
    if all.is_empty() {
        outln!("No namespaces are registered in this datastore.");
        return Ok(Outcome::Success);
    }
    let mut t = crate::cli::render::table();
    ctx.style().apply(&mut t);
    t.set_header(["", "namespace", "repo_id", "registered_at"]);
    for n in &all {
        let mark = if Some(n.namespace()) == current.as_deref() {
            "*"
        } else {
            ""
        };
        let (repo_id, registered_at) = match n {
            ListedNamespace::Registered(m) => (m.repo_id.to_string(), m.registered_at.clone()),
            ListedNamespace::Unrecognised { .. } => {
                ("(unrecognised manifest)".into(), String::new())
            }
        };
        t.add_row(vec![
            mark.to_string(),
            n.namespace().to_string(),
            repo_id,
            registered_at,
        ]);
    }
    outln!("{}", crate::cli::render::table_text(&t));
    for n in &unrecognised {
        if let ListedNamespace::Unrecognised { key, why, .. } = n {
            outln!("note: {key} is unrecognised: {why}");
        }
    }
    Ok(Outcome::Success)
}

/// `datastore namespaces --json`.
fn print_namespaces_json(
    registered: &[&ListedNamespace],
    unrecognised: &[&ListedNamespace],
    current: Option<&str>,
) {
    let rows: Vec<_> = registered
        .iter()
        .filter_map(|n| match n {
            ListedNamespace::Registered(m) => Some(json!({
                "namespace": m.namespace,
                "repo_id": m.repo_id,
                "registered_at": m.registered_at,
                "is_current": Some(m.namespace.as_str()) == current,
            })),
            ListedNamespace::Unrecognised { .. } => None,
        })
        .collect();
    let unreadable: Vec<_> = unrecognised
        .iter()
        .filter_map(|n| match n {
            ListedNamespace::Unrecognised {
                namespace,
                key,
                why,
            } => Some(json!({
                "namespace": namespace,
                "key": key,
                "reason": why.to_string(),
            })),
            ListedNamespace::Registered(_) => None,
        })
        .collect();
    print_json(&json!({
        "namespaces": rows,
        "unrecognised": unreadable,
        "current": current,
    }));
}

/// `swamp datastore hydration [MODE]`: shows this clone's hydration and
/// where it comes from, or sets it for this clone alone (never in the
/// `.swamp.toml` the team shares).
pub(super) fn hydration(
    ctx: &Ctx,
    mode: Option<crate::cli::args::HydrationChoice>,
) -> Result<Outcome, CliError> {
    use crate::cli::args::HydrationChoice;
    use crate::config::Hydration;
    use crate::config::clone::CloneSettings;
    let repo = ctx.open_repo()?;
    let remote = repo.config.datastore.is_remote();
    if mode == Some(HydrationChoice::Set(Hydration::Lazy)) && !remote {
        return Err(CliError::usage(format!(
            "lazy hydration needs an s3:// or gs:// datastore: this repository's `{}` datastore holds every file already",
            repo.config.datastore.kind()
        )));
    }
    let path = repo.layout.clone_settings_path();
    let mut clone = CloneSettings::load(&path)?;
    let before = clone.hydration(&repo.config, None).0;
    if let Some(mode) = mode {
        clone.sync.hydration = match mode {
            HydrationChoice::Set(h) => Some(h),
            HydrationChoice::Default => None,
        };
        clone.save(&path)?;
    }
    let (now, source) = clone.hydration(&repo.config, None);
    let unhydrated = crate::engine::hydrate::unhydrated(&repo.layout, &repo.config)?.len();
    let default = repo.config.sync.hydration.as_str();
    if ctx.json {
        print_json(&json!({
            "hydration": now.as_str(),
            "source": source,
            "repository_default": default,
            "changed": now != before,
            "unhydrated": unhydrated,
        }));
        return Ok(Outcome::Success);
    }
    let whence = match source {
        crate::config::clone::Source::Repository => {
            "the repository's default (.swamp.toml)".to_string()
        }
        _ => format!(
            "{}; the repository's default is {default}",
            source.describe()
        ),
    };
    match mode {
        Some(_) => outln!(
            "This clone's hydration is {} now, from {whence}.",
            now.as_str()
        ),
        None => outln!("This clone's hydration is {}, from {whence}.", now.as_str()),
    }
    if !remote {
        outln!(
            "A `{}` datastore holds every file in place: hydration applies to s3:// and gs:// datastores.",
            repo.config.datastore.kind()
        );
    } else if mode.is_some() && now != before {
        match now {
            Hydration::Lazy => outln!(
                "The next `swamp datastore sync --pull` records what the remote adds instead of downloading it; each file is fetched on first read."
            ),
            Hydration::Full if unhydrated > 0 => outln!(
                "The next `swamp datastore sync --pull` downloads the {unhydrated} file(s) recorded as in the remote only."
            ),
            Hydration::Full => {}
        }
    } else if unhydrated > 0 {
        outln!(
            "{unhydrated} file(s) are in the remote only, fetched on first read (all: `swamp datastore sync --pull --hydrate`)."
        );
    }
    Ok(Outcome::Success)
}
