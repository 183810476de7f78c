//! The `lock` check: the distributed lock of the repository's target
//! placement is free, held (a command is running: fine), stale (its holder
//! died: the repair breaks it with a delete conditional on the version
//! seen) or unreadable (held by an unknown owner: only `lock release
//! --force`, by a person, breaks it).

use std::time::SystemTime;

use super::{Check, Context, DoctorError, Finding, Fix, Step, could_not};
use crate::lock::{self, LockState, LockTarget};

pub(crate) struct LockCheck;

/// Adds what upstream swamp's lock of the same namespace says (see
/// [`lock::upstream`]): commands wait while it is held; a stale one is
/// ignored (upstream takes it over itself), never removed by swamp.
fn with_upstream(cx: &Context, mut finding: Finding) -> Finding {
    let Ok((config, _)) = &cx.loaded else {
        return finding;
    };
    let placement = config.target();
    let (Some(key), Some(url)) = (
        lock::upstream::key(&placement),
        lock::upstream::url(&placement),
    ) else {
        return finding;
    };
    let seen = crate::store::open(&placement.datastore).and_then(|store| {
        crate::store::runtime().block_on(lock::upstream::inspect(store.as_ref(), &key))
    });
    let note = match seen {
        Ok(lock::upstream::UpstreamLock::Free) => return finding,
        Ok(lock::upstream::UpstreamLock::Held {
            body,
            age_secs,
            stale,
        }) => {
            let age = age_secs.map_or("at an unknown time".into(), |a| format!("{a}s ago"));
            if stale {
                format!(
                    "upstream swamp's lock {url} is stale (last renewed {age}, TTL {}s): ignored, and left for upstream to take over",
                    body.ttl().as_secs()
                )
            } else {
                format!(
                    "upstream swamp's lock {url} is held by {} (renewed {age}): commands wait for it",
                    body.describe()
                )
            }
        }
        Err(e) => format!("upstream swamp's lock {url} could not be read ({e})"),
    };
    finding.message = format!("{}; {note}", finding.message);
    finding
}

fn observe(cx: &Context) -> Result<Option<(LockTarget, LockState)>, DoctorError> {
    let Ok((config, layout)) = &cx.loaded else {
        return Ok(None);
    };
    let target = LockTarget::of(layout, &config.target())?;
    let state = lock::read(&target)?;
    Ok(Some((target, state)))
}

impl Check for LockCheck {
    fn name(&self) -> &'static str {
        "lock"
    }

    fn run(&self, cx: &Context) -> Finding {
        let name = self.name();
        if let Err(skip) = cx.config(name) {
            return skip;
        }
        if cx.status_of("reachable") == Some(super::Status::Fail) {
            return Finding::skip(
                name,
                "the datastore did not answer (see the `reachable` check)",
            );
        }
        let (target, state) = match observe(cx) {
            Ok(Some(x)) => x,
            Ok(None) => return Finding::skip(name, "needs a valid .swamp.toml"),
            Err(e) => return could_not(name, "read the lock", e),
        };
        // A local datastore's lock is repo-local state: name it relative to
        // the repository (output stays the same wherever the repo is).
        let url = match cx.loaded.as_ref().map(|(c, _)| &c.datastore) {
            Ok(crate::config::DatastoreConfig::Local) => ".swamp/state/lock.json".to_string(),
            _ => target.url.clone(),
        };
        let url = &url;
        let finding = match state {
            LockState::Free => Finding::pass(name, format!("free ({url})")),
            LockState::Held {
                body, stale: false, ..
            } => Finding::pass(
                name,
                format!(
                    "held by {}, expires in {}s unless renewed: a command is running; others wait for it ({url})",
                    body.describe(),
                    body.expires_in_secs(SystemTime::now()).unwrap_or(0)
                ),
            ),
            LockState::Held {
                body, stale: true, ..
            } => Finding::fail(
                name,
                format!(
                    "stale: {} let it expire at {} without releasing it ({url})",
                    body.describe(),
                    body.expires_at
                ),
                "`swamp doctor datastores --repair -y` or `swamp datastore lock release` breaks it (the next command would also take it over)",
            ),
            LockState::Unparseable { reason, .. } => Finding::fail(
                name,
                format!(
                    "held by an unknown owner: the lock object is unreadable ({reason}) ({url})"
                ),
                "once sure nobody is working on this datastore, `swamp datastore lock release --force`",
            ),
        };
        with_upstream(cx, finding)
    }

    fn fix(&self, cx: &Context, _finding: &Finding) -> Result<Fix, DoctorError> {
        let Some((target, state)) = observe(cx)? else {
            return Ok(Fix::Manual);
        };
        let LockState::Held {
            body, stale: true, ..
        } = &state
        else {
            // Unreadable: nobody can tell whether its owner is alive.
            return Ok(Fix::Manual);
        };
        let what = format!(
            "break the stale lock of {} (a delete conditional on the version seen)",
            body.describe()
        );
        Ok(Fix::Step(Step {
            what,
            run: Box::new(move |_cx: &Context| {
                lock::break_lock(&target, &state).map_err(|e| match e {
                    crate::store::StoreError::PreconditionFailed { .. } => DoctorError::Other(
                        "the lock changed since it was checked (renewed or taken over); left alone"
                            .into(),
                    ),
                    other => other.into(),
                })?;
                Ok(format!("broke the stale lock {}", target.url))
            }),
        }))
    }
}
