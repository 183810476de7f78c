//! `swamp init`: writes `.swamp.toml` with a fresh `repo_id` (or the one
//! given, or the one upstream swamp's `.swamp.yaml` there names).
use crate::cli::output::outln;

use serde_json::json;

use crate::cli::locking::Locks;
use crate::cli::output::print_json;
use crate::cli::{CliError, Ctx, Outcome};
use crate::config::{CONFIG_FILE, Config, Namespace, parse_datastore_spec};

pub(super) fn run(
    ctx: &Ctx,
    namespace: Option<&str>,
    datastore: &str,
    repo_id: Option<uuid::Uuid>,
) -> Result<Outcome, CliError> {
    // Everything is validated before anything is created.
    let namespace = namespace
        .map(Namespace::parse)
        .transpose()
        .map_err(|e| CliError::usage(e.to_string()))?;
    let datastore = parse_datastore_spec(datastore).map_err(|e| CliError::usage(e.to_string()))?;
    let dir = ctx.repo_dir();
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    if dir.exists() && !dir.is_dir() {
        return Err(CliError::usage(format!(
            "{} is not a directory; nothing was changed",
            dir.display()
        )));
    }
    if dir.join(CONFIG_FILE).exists() {
        return Err(CliError::failure(format!(
            "{} already has a {CONFIG_FILE}; nothing was changed",
            dir.display()
        ))
        .hint("change its datastore with `swamp datastore setup SPEC` or its namespace with `swamp datastore namespace set NS`"));
    }
    // An upstream swamp repository keeps its id, so the namespaces it
    // registered in a bucket stay its own.
    let adopted = match repo_id {
        Some(_) => None,
        None => upstream_repo_id(&dir.join(UPSTREAM_MARKER))?,
    };
    let repo_id = repo_id.or(adopted).unwrap_or_else(uuid::Uuid::new_v4);
    let config = Config::new(repo_id, datastore, namespace);
    let created = !dir.exists();
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::failure(format!("cannot create {}: {e}", dir.display())))?;
    let made = init_in(ctx, &dir, &config);
    if made.is_err() && created {
        // Only ever empty here: nothing is written before the config.
        let _ = std::fs::remove_dir(&dir);
    }
    made?;
    if ctx.json {
        print_json(&json!({
            "repo": dir,
            "config": config,
            "repo_id_from": adopted.map(|_| UPSTREAM_MARKER),
        }));
    } else {
        if adopted.is_some() {
            outln!("Kept repo_id {repo_id} from {UPSTREAM_MARKER} (upstream swamp).");
        }
        outln!(
            "Initialized {} (datastore {}, {}).",
            dir.join(CONFIG_FILE).display(),
            config.datastore,
            match &config.namespace {
                Some(ns) => format!("namespace {ns}"),
                None => "solo".to_string(),
            }
        );
    }
    Ok(Outcome::Success)
}

/// Upstream swamp's repository marker.
const UPSTREAM_MARKER: &str = ".swamp.yaml";

/// The `repoId` upstream swamp's marker at `path` names (a top-level
/// `repoId: "<uuid>"` line, as upstream writes it); `None` when there is no
/// marker or it names none. A marker whose `repoId` is not a UUID is an
/// error: guessing would register this repository as someone else.
fn upstream_repo_id(path: &std::path::Path) -> Result<Option<uuid::Uuid>, CliError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CliError::failure(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    let Some(value) = text
        .lines()
        .find_map(|l| l.strip_prefix("repoId:"))
        .map(|v| v.trim().trim_matches(|c| c == '"' || c == '\''))
    else {
        return Ok(None);
    };
    value.parse().map(Some).map_err(|_| {
        CliError::failure(format!(
            "{} names repoId `{value}`, which is not a UUID; nothing was changed",
            path.display()
        ))
        .hint("pass the repository id with `swamp init --repo-id UUID`")
    })
}

/// Claims the namespace (remote) and writes the configuration into `dir`.
fn init_in(ctx: &Ctx, dir: &std::path::Path, config: &Config) -> Result<(), CliError> {
    if config.datastore.is_remote() {
        // Claim the namespace in the bucket before anything is written
        // here, under its lock like every write to a datastore.
        let home = crate::layout::Layout::default_swamp_home()?;
        let layout = crate::layout::Layout::new(dir, config, &home)?;
        let locks = Locks::take(ctx, &layout, config, "init")?;
        locks.finish(
            crate::engine::registry::register_namespace(&config.target(), config.repo_id)
                .map(|_| ())
                .map_err(CliError::from),
        )?;
    }
    config.save(dir)?;
    std::fs::create_dir_all(dir.join(".swamp"))
        .map_err(|e| CliError::failure(format!("cannot create .swamp/: {e}")))?;
    Ok(())
}
