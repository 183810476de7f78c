//! `swamp init`: writes `.swamp.toml` with a fresh `repo_id`.

use serde_json::json;

use crate::cli::locking::Locks;
use crate::cli::output::print_json;
use crate::cli::{CliError, Ctx, Outcome};
use crate::config::{CONFIG_FILE, Config, Namespace, parse_datastore_spec};

pub fn run(ctx: &Ctx, namespace: Option<&str>, datastore: &str) -> Result<Outcome, CliError> {
    let dir = ctx.repo_dir();
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::failure(format!("cannot create {}: {e}", dir.display())))?;
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    if dir.join(CONFIG_FILE).exists() {
        return Err(CliError::failure(format!(
            "{} already has a {CONFIG_FILE}; nothing was changed",
            dir.display()
        ))
        .hint("change its datastore with `swamp datastore setup SPEC` or its namespace with `swamp datastore namespace set NS`"));
    }
    let namespace = namespace
        .map(Namespace::parse)
        .transpose()
        .map_err(|e| CliError::usage(e.to_string()))?;
    let datastore = parse_datastore_spec(datastore).map_err(|e| CliError::usage(e.to_string()))?;
    let config = Config::new(uuid::Uuid::new_v4(), datastore, namespace);
    if config.datastore.is_remote() {
        // Claim the namespace in the bucket before anything is written
        // here, under its lock like every write to a datastore.
        let home = crate::layout::Layout::default_swamp_home()
            .map_err(|e| CliError::failure(e.to_string()))?;
        let layout = crate::layout::Layout::new(&dir, &config, &home)
            .map_err(|e| CliError::failure(e.to_string()))?;
        let locks = Locks::take(ctx, &layout, &config, "init")?;
        locks.finish(
            crate::engine::sync::register_namespace(&config.target(), config.repo_id)
                .map(|_| ())
                .map_err(CliError::from),
        )?;
    }
    config.save(&dir)?;
    std::fs::create_dir_all(dir.join(".swamp"))
        .map_err(|e| CliError::failure(format!("cannot create .swamp/: {e}")))?;
    if ctx.json {
        print_json(&json!({"repo": dir, "config": config}));
    } else {
        println!(
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
