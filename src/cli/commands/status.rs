//! `swamp status`: the datastore, namespace, where the data lives, and the
//! pending plan's summary.

use serde_json::json;

use crate::cli::output::print_json;
use crate::cli::{CliError, Ctx, Outcome};
use crate::engine;
use crate::plan::render::{closing_line, root_label};
use crate::state::Scope;

pub fn run(ctx: &Ctx) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let config = &repo.config;
    let planned = engine::plan(&repo.layout, config, Scope::All)?;
    let summary = planned.plan.summary();
    let root = repo.layout.placement_root(&config.target());
    if ctx.json {
        print_json(&json!({
            "repo": repo.root,
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
            "lock": null,
            "pending": summary,
            "converged": planned.plan.is_empty(),
        }));
        return Ok(Outcome::Success);
    }
    println!("repository  {}", repo.root.display());
    println!("repo id     {}", config.repo_id);
    println!("datastore   {}", config.datastore);
    println!(
        "namespace   {}",
        config
            .namespace
            .as_ref()
            .map_or("(none: solo layout)".to_string(), ToString::to_string)
    );
    println!("data root   {}", root_label(&root, &repo.root));
    for p in &config.migrating_from {
        println!("moving from {p}");
    }
    if config.datastore.is_remote() {
        println!(
            "remote      {}",
            crate::layout::Layout::remote_url(&config.target())
        );
        println!("cache       {}", repo.layout.cache_root().display());
        // The distributed lock is not built yet: say so rather than imply one.
        println!("lock        not implemented yet (no lock is taken)");
    } else {
        println!("lock        none (local datastore)");
    }
    if planned.plan.is_empty() {
        println!("pending     nothing: the datastore matches the configuration");
    } else {
        println!("pending     {}", closing_line(&planned.plan));
        println!("            run `swamp plan` to review, `swamp apply` to converge");
    }
    Ok(Outcome::Success)
}
