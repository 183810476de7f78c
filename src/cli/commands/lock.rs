//! `datastore lock status` and `datastore lock release [--force]`: inspect
//! and break the distributed lock, of this repository's datastore or of any
//! datastore named by `--datastore SPEC` (no repository needed).
use crate::cli::output::{errln, outln};

use serde_json::{Value, json};

use crate::cli::args::LockWhere;
use crate::cli::output::print_json;
use crate::cli::{CliError, Ctx, ErrorKind, Outcome};
use crate::config::{DatastoreConfig, Namespace, Placement, parse_datastore_spec};
use crate::engine::locks::{self, BreakError, LockState, LockTarget};

/// The locks a command names: `--datastore` (+ `--namespace`), or the
/// repository's target and every placement it still drains.
fn targets(ctx: &Ctx, at: &LockWhere) -> Result<Vec<LockTarget>, CliError> {
    if let Some(spec) = &at.datastore {
        let datastore = parse_datastore_spec(spec).map_err(|e| CliError::usage(e.to_string()))?;
        if datastore == DatastoreConfig::Local {
            return Err(
                CliError::usage("a `local` datastore's lock lives in its repository").hint(
                    "run `swamp datastore lock status` inside the repository, without --datastore",
                ),
            );
        }
        let namespace = at
            .namespace
            .as_deref()
            .map(Namespace::parse)
            .transpose()
            .map_err(|e| CliError::usage(e.to_string()))?;
        let placement = Placement {
            datastore,
            namespace,
        };
        // Only `local` needs a repository's layout; it was refused above.
        return Ok(vec![locks::shared(&placement)?]);
    }
    let repo = ctx.open_repo().map_err(|e| {
        let hint = "run it inside a repository, or name the datastore: `swamp datastore lock status --datastore s3://bucket/prefix --namespace NS`";
        e.hint(hint)
    })?;
    Ok(locks::targets(&repo.layout, &repo.config)?)
}

fn inspect(t: &LockTarget) -> Result<LockState, CliError> {
    Ok(locks::read(t)?)
}

fn state_json(url: &str, state: &LockState) -> Value {
    let now = crate::clock::now();
    match state {
        LockState::Free => json!({"url": url, "state": state.label()}),
        LockState::Held { body, version, .. } => json!({
            "url": url,
            "state": state.label(),
            "holder": body.holder,
            "pid": body.pid,
            "operation": body.operation,
            "id": body.id,
            "tool_version": body.tool_version,
            "acquired_at": body.acquired_at,
            "expires_at": body.expires_at,
            "age_secs": body.age_secs(now),
            "expires_in_secs": body.expires_in_secs(now),
            "version": version,
        }),
        LockState::Unparseable {
            version,
            size,
            reason,
        } => json!({
            "url": url,
            "state": state.label(),
            "reason": reason,
            "size": size,
            "version": version,
        }),
    }
}

fn print_state(url: &str, state: &LockState) {
    let now = crate::clock::now();
    outln!("lock       {url}");
    match state {
        LockState::Free => outln!("state      free"),
        LockState::Held { body, stale, .. } => {
            let left = body.expires_in_secs(now).unwrap_or(0);
            if *stale {
                outln!(
                    "state      stale: expired {}s ago without being released (the next command takes it over)",
                    -left
                );
            } else {
                outln!("state      held, expires in {left}s unless renewed");
            }
            outln!("holder     {} (pid {})", body.holder, body.pid);
            outln!("operation  {}", body.operation);
            let age = body.age_secs(now).unwrap_or(0);
            outln!("since      {} ({age}s ago)", body.acquired_at);
            outln!("expires    {}", body.expires_at);
            outln!("lock id    {}", body.id);
        }
        LockState::Unparseable { reason, size, .. } => {
            outln!(
                "state      held by an unknown owner: the object ({size} bytes) is unreadable: {reason}"
            );
            outln!(
                "           break it with `swamp datastore lock release --force` once nobody is working"
            );
        }
    }
}

pub(super) fn status(ctx: &Ctx, at: &LockWhere) -> Result<Outcome, CliError> {
    let targets = targets(ctx, at)?;
    let mut rows = Vec::new();
    let mut all_free = true;
    for (i, t) in targets.iter().enumerate() {
        let state = inspect(t)?;
        all_free &= matches!(state, LockState::Free);
        if ctx.json {
            rows.push(state_json(&t.url, &state));
        } else {
            if i > 0 {
                outln!();
            }
            print_state(&t.url, &state);
        }
    }
    // `--datastore` without `--namespace` names the solo layout's lock; a
    // bucket of namespaces holds theirs under each: say which there are.
    let elsewhere = match (&at.datastore, &at.namespace) {
        (Some(spec), None) if all_free => namespaces_in(spec),
        _ => Vec::new(),
    };
    if ctx.json {
        let mut doc = json!({ "locks": rows });
        if !elsewhere.is_empty() {
            doc["namespaces"] = json!(elsewhere);
        }
        print_json(&doc);
    } else if !elsewhere.is_empty() && !ctx.quiet {
        errln!(
            "note: this is the lock of the datastore's solo layout; it holds namespace(s) {}: add `--namespace {}` for a namespace's lock.",
            elsewhere.join(", "),
            elsewhere[0]
        );
    }
    Ok(Outcome::Success)
}

/// The namespaces registered under a solo layout's datastore (none when
/// they cannot be listed: this is a hint, not the answer).
fn namespaces_in(spec: &str) -> Vec<String> {
    let Ok(datastore) = parse_datastore_spec(spec) else {
        return Vec::new();
    };
    let solo = Placement {
        datastore,
        namespace: None,
    };
    crate::engine::registry::list_namespaces(&solo)
        .map(|all| all.iter().map(|n| n.namespace().to_string()).collect())
        .unwrap_or_default()
}

pub(super) fn release(ctx: &Ctx, at: &LockWhere, force: bool) -> Result<Outcome, CliError> {
    let targets = targets(ctx, at)?;
    let mut rows = Vec::new();
    for t in &targets {
        let state = inspect(t)?;
        let why = match &state {
            LockState::Free => None,
            LockState::Held { stale: true, .. } => Some("it had expired"),
            LockState::Held { body, .. } if locks::holder_is_gone(body) => {
                Some("its process is gone")
            }
            LockState::Held { body, .. } => {
                if !force {
                    return Err(CliError::new(
                        ErrorKind::LockHeld,
                        format!(
                            "the lock {} is held by {} until {}; not released",
                            t.url,
                            body.describe(),
                            body.expires_at
                        ),
                    )
                    .hint("if that process is surely gone, break it with `swamp datastore lock release --force`; otherwise wait for it"));
                }
                Some("--force")
            }
            LockState::Unparseable { reason, .. } => {
                if !force {
                    return Err(CliError::new(
                        ErrorKind::LockHeld,
                        format!(
                            "the lock {} is unreadable ({reason}); its owner is unknown; not released",
                            t.url
                        ),
                    )
                    .hint("once sure nobody is working on this datastore, break it with `swamp datastore lock release --force`"));
                }
                Some("--force")
            }
        };
        if let Some(why) = why {
            locks::break_lock(t, &state).map_err(|e| match e {
                BreakError::Changed { .. } => CliError::failure(e.to_string())
                    .hint("look again with `swamp datastore lock status`"),
                BreakError::Lock(e) => CliError::from(e),
            })?;
            if !ctx.json {
                outln!("Released the lock {} ({why}).", t.url);
            }
        } else if !ctx.json {
            outln!("No lock is held at {}; nothing to release.", t.url);
        }
        let mut row = state_json(&t.url, &state);
        row["released"] = json!(why.is_some());
        rows.push(row);
    }
    if ctx.json {
        print_json(&json!({ "locks": rows }));
    }
    Ok(Outcome::Success)
}
