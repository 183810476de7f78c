//! `swamp init`: writes `.swamp.toml` with a fresh `repo_id`.

use serde_json::json;

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
        // Claim the namespace in the bucket before anything is written here.
        crate::engine::sync::register_namespace(&config.target(), config.repo_id)?;
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
