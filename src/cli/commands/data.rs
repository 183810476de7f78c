//! `swamp data put/get/list/rm/gc` and `swamp catalog rebuild`.
//! Data is written to the desired placement; while a layout change is
//! pending, reads also find what is still at the old place.
use crate::cli::output::{errln, outln};

use std::io::Write;
use std::path::Path;

use comfy_table::{Cell, CellAlignment};
use serde_json::json;

use crate::catalog::Catalog;
use crate::cli::locking::Locks;
use crate::cli::output::print_json;
use crate::cli::render::{human_bytes, table};
use crate::cli::{CliError, Ctx, Outcome, Repo};
use crate::data::{DataError, DataStore, remote_only};

fn open(ctx: &Ctx) -> Result<Repo, CliError> {
    ctx.open_repo()
}

/// The data of the desired placement, seeing (for reads) what a pending
/// layout change still has at its sources, and what a lazy pull recorded
/// as in the remote only.
fn store(repo: &Repo) -> Result<DataStore<'_>, CliError> {
    Ok(store_with(repo, remote_versions(repo)?))
}

/// What a lazy pull recorded as in the remote only, as data versions.
fn remote_versions(repo: &Repo) -> Result<Vec<remote_only::RemoteVersion>, CliError> {
    let unhydrated = crate::engine::hydrate::unhydrated(&repo.layout, &repo.config)?;
    Ok(remote_only::versions(
        unhydrated.iter().map(|(p, u)| (p, u.size)),
    ))
}

/// Fetches `path` into the cache, under the cache's lock: two `data get`
/// of one lazy version (or one during a hydrating pull) take turns, and
/// the second finds it fetched already. A large version is read ahead,
/// outside the lock, so reads of different names wait on each other
/// only while each lands.
fn hydrate(ctx: &Ctx, repo: &Repo, path: crate::layout::TierPath) -> Result<(), CliError> {
    crate::engine::hydrate::prefetch(&repo.layout, &repo.config, std::slice::from_ref(&path));
    let locks = Locks::take_local(ctx, &repo.layout, &repo.config, "data get")?;
    let fetched = crate::engine::hydrate::fetch(
        &repo.root,
        &repo.layout,
        &repo.config,
        std::slice::from_ref(&path),
    )
    .map(|_| ())
    .map_err(|e| {
        CliError::from(e).hint(
            "the remote may have changed since the last pull: run `swamp datastore sync --pull`, then retry",
        )
    });
    locks.finish(fetched)
}

fn store_with(repo: &Repo, remote_only: Vec<remote_only::RemoteVersion>) -> DataStore<'_> {
    crate::engine::data_store(&repo.layout, &repo.config, remote_only)
}

/// Says that `rm`/`gc` act on fetched versions only: what a lazy pull
/// recorded as in the remote only stays there.
fn warn_remote_only(repo: &Repo, name: Option<&str>) -> Result<(), CliError> {
    let unhydrated = crate::engine::hydrate::unhydrated(&repo.layout, &repo.config)?;
    let versions = remote_only::versions(unhydrated.iter().map(|(p, u)| (p, u.size)));
    let n = versions
        .iter()
        .filter(|v| name.is_none_or(|name| v.name == name))
        .count();
    if n > 0 {
        errln!(
            "warning: {n} version(s) are in the remote only (hydration = lazy) and are not removed; fetch them first with `swamp datastore sync --pull --hydrate` to remove them too."
        );
    }
    Ok(())
}

/// Says that `rm`/`gc` act on the new place only while a move is pending.
fn warn_pending(repo: &Repo) {
    if !repo.config.migrating_from.is_empty() {
        errln!(
            "warning: a layout change is not finished; versions still at the old place are not removed. Run `swamp apply` to finish the move first."
        );
    }
}

pub(super) fn put(
    ctx: &Ctx,
    name: &str,
    file: Option<&Path>,
    allow_empty: bool,
) -> Result<Outcome, CliError> {
    let repo = open(ctx)?;
    let store = store(&repo)?;
    let entry = match file {
        Some(f) => {
            let mut input = std::fs::File::open(f)
                .map_err(|e| CliError::failure(format!("cannot read {}: {e}", f.display())))?;
            store.put(name, &mut input)?
        }
        None => {
            use std::io::IsTerminal;
            if std::io::stdin().is_terminal() && !ctx.quiet {
                errln!(
                    "Reading the content of `{name}` from the terminal; end it with Ctrl-D (or pass --file FILE)."
                );
            }
            let mut stdin = std::io::stdin().lock();
            let first = first_byte(&mut stdin)?;
            if first.is_none() && !allow_empty {
                return Err(CliError::usage(format!(
                    "nothing came on stdin for `{name}`; nothing was stored"
                ))
                .hint("pass --file FILE, or --allow-empty to store an empty version"));
            }
            let mut input = std::io::Read::chain(first.as_slice(), stdin);
            store.put(name, &mut input)?
        }
    };
    if ctx.json {
        print_json(&json!(entry));
    } else {
        outln!(
            "Stored {} version {} ({}, sha256 {}).",
            entry.name,
            entry.version,
            human_bytes(entry.size),
            entry.sha256
        );
    }
    Ok(Outcome::Success)
}

/// The first byte of `input` (`None`: it is empty), read so an empty
/// stdin is caught before anything is stored.
fn first_byte(input: &mut impl std::io::Read) -> Result<Option<u8>, CliError> {
    let mut one = [0u8; 1];
    loop {
        match input.read(&mut one) {
            Ok(0) => return Ok(None),
            Ok(_) => return Ok(Some(one[0])),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CliError::failure(format!("cannot read stdin: {e}"))),
        }
    }
}

pub(super) fn get(ctx: &Ctx, name: &str, version: Option<u64>) -> Result<Outcome, CliError> {
    let repo = open(ctx)?;
    let (entry, path) = match store_with(&repo, remote_versions(&repo)?).get(name, version) {
        // Lazy hydration: fetched on first read, then read like any other.
        Err(DataError::NotHydrated { path, .. }) => {
            hydrate(ctx, &repo, path)?;
            // Read again: another process may have fetched it meanwhile.
            store_with(&repo, remote_versions(&repo)?).get(name, version)?
        }
        found => found?,
    };
    let bytes = std::fs::read(&path)
        .map_err(|e| CliError::failure(format!("cannot read {}: {e}", path.display())))?;
    if ctx.json {
        let mut doc = json!(entry);
        match String::from_utf8(bytes) {
            Ok(text) => doc["content"] = json!(text),
            Err(e) => doc["content_hex"] = json!(hex::encode(e.into_bytes())),
        }
        print_json(&doc);
    } else {
        match std::io::stdout().write_all(&bytes) {
            // The reader went away (`swamp data get x | head -c 10`).
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            written => {
                written.map_err(|e| CliError::failure(format!("cannot write to stdout: {e}")))?
            }
        }
    }
    Ok(Outcome::Success)
}

pub(super) fn list(ctx: &Ctx) -> Result<Outcome, CliError> {
    let repo = open(ctx)?;
    let remote = remote_versions(&repo)?;
    // A lazy clone's versions the remote holds and this cache has not
    // fetched, by name.
    let mut remote_only: std::collections::BTreeMap<String, std::collections::BTreeSet<u64>> =
        Default::default();
    for v in &remote {
        remote_only
            .entry(v.name.clone())
            .or_default()
            .insert(v.version);
    }
    let names = store_with(&repo, remote).list()?;
    let where_of = |n: &crate::catalog::NameSummary| {
        let there = remote_only.get(n.name.as_str());
        let count = there.map_or(0, |s| s.len() as u64);
        let latest_remote = there.is_some_and(|s| s.contains(&n.latest_version));
        (count, latest_remote)
    };
    if ctx.json {
        let data: Vec<serde_json::Value> = names
            .iter()
            .map(|n| {
                let (count, latest_remote) = where_of(n);
                let mut v = serde_json::to_value(n).expect("a name summary serialises");
                v["local_versions"] = json!(n.versions - count);
                v["remote_only_versions"] = json!(count);
                v["latest_is_local"] = json!(!latest_remote);
                v
            })
            .collect();
        print_json(&json!({ "data": data }));
        return Ok(Outcome::Success);
    }
    if names.is_empty() {
        let target = repo.config.target();
        let never_pulled =
            repo.config.datastore.is_remote() && !repo.layout.sync_base_path(&target).exists();
        if never_pulled {
            // A new clone: the bucket may well hold data this cache has
            // not seen.
            outln!(
                "No data in this clone's cache yet, and it never synced with {}: `swamp datastore sync --pull` fetches what is there. Store new data with `swamp data put NAME --file F`.",
                crate::layout::Layout::remote_url(&target)
            );
        } else {
            outln!("No data yet. Store some with `swamp data put NAME --file F`.");
        }
        return Ok(Outcome::Success);
    }
    let mut table = table();
    ctx.style().apply(&mut table);
    // A lazy clone says which versions are here and which only in the
    // remote (fetched on first read).
    let lazy = !remote_only.is_empty();
    let mut header = vec!["name", "latest", "versions", "size"];
    if lazy {
        header.push("in this cache");
    }
    table.set_header(header);
    for n in &names {
        let (count, latest_remote) = where_of(n);
        let mut row = vec![
            Cell::new(&n.name),
            Cell::new(n.latest_version).set_alignment(CellAlignment::Right),
            Cell::new(n.versions).set_alignment(CellAlignment::Right),
            Cell::new(human_bytes(n.latest_size)).set_alignment(CellAlignment::Right),
        ];
        if lazy {
            let here = match (count, latest_remote) {
                (0, _) => "all".to_string(),
                (c, _) if c == n.versions => "none (remote only)".to_string(),
                (c, true) => format!(
                    "{} of {} (latest in the remote only)",
                    n.versions - c,
                    n.versions
                ),
                (c, false) => format!("{} of {}", n.versions - c, n.versions),
            };
            row.push(Cell::new(here));
        }
        table.add_row(row);
    }
    outln!("{}", crate::cli::render::table_text(&table));
    if lazy {
        outln!(
            "Versions in the remote only are fetched on first read (`swamp data get`); all of them: `swamp datastore sync --pull --hydrate`."
        );
    }
    Ok(Outcome::Success)
}

pub(super) fn rm(ctx: &Ctx, name: &str) -> Result<Outcome, CliError> {
    let repo = open(ctx)?;
    warn_pending(&repo);
    warn_remote_only(&repo, Some(name))?;
    let store = DataStore::new(&repo.layout, repo.config.target());
    let (removed, id) = store.rm(name, &crate::cli::command_line())?;
    if ctx.json {
        print_json(&json!({ "removed": removed, "apply_id": id }));
    } else {
        outln!(
            "Removed {name}: {} version(s), set aside as apply {id}; `swamp undo {id}` brings them back.",
            removed.len()
        );
    }
    Ok(Outcome::Success)
}

pub(super) fn gc(ctx: &Ctx, keep: usize, dry_run: bool) -> Result<Outcome, CliError> {
    let repo = open(ctx)?;
    warn_pending(&repo);
    warn_remote_only(&repo, None)?;
    let store = DataStore::new(&repo.layout, repo.config.target());
    let (removed, id) = store.gc(keep, dry_run, &crate::cli::command_line())?;
    if ctx.json {
        print_json(
            &json!({ "dry_run": dry_run, "keep": keep, "removed": removed, "apply_id": id }),
        );
        return Ok(Outcome::Success);
    }
    let verb = if dry_run { "Would remove" } else { "Removed" };
    for e in &removed {
        outln!("{verb} {} version {}", e.name, e.version);
    }
    let bytes: u64 = removed.iter().map(|e| e.size).sum();
    outln!(
        "{verb} {} version(s), {} (keeping the newest {keep} of each name).",
        removed.len(),
        human_bytes(bytes)
    );
    if let Some(id) = id {
        outln!("Set aside as apply {id}; `swamp undo {id}` brings them back.");
    }
    Ok(Outcome::Success)
}

pub(super) fn catalog_rebuild(ctx: &Ctx) -> Result<Outcome, CliError> {
    let repo = ctx.open_repo()?;
    let stats = Catalog::rebuild(&repo.layout, &repo.config.target())?;
    if ctx.json {
        print_json(&json!({ "catalog": repo.layout.catalog_path(), "rebuilt": stats }));
    } else {
        outln!(
            "Rebuilt the catalog: {} name(s), {} version(s), {}.",
            stats.names,
            stats.versions,
            human_bytes(stats.bytes)
        );
    }
    Ok(Outcome::Success)
}
