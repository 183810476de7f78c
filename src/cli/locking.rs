//! Taking the distributed lock at the command's edge: every command that
//! writes the datastore or migrates a layout holds the locks of the target
//! placement and of every placement it still drains, for its whole run
//! (planning included), and says on stderr whom it waits for.
use crate::cli::output::errln;

use std::time::Duration;

use crate::cli::{CliError, Ctx};
use crate::config::Config;
use crate::layout::Layout;
use crate::lock::{self, Event, LockGuard, LockOptions, LockTarget};

/// The locks one command holds, released (conditionally) when it ends.
#[derive(Debug)]
pub struct Locks {
    guards: Vec<LockGuard>,
}

impl Locks {
    /// Takes the locks for `config`'s target and sources
    /// ([`LockTarget::all_of`], in a fixed order).
    pub fn take(
        ctx: &Ctx,
        layout: &Layout,
        config: &Config,
        operation: &str,
    ) -> Result<Locks, CliError> {
        Locks::try_take(ctx, layout, config, operation).map_err(CliError::from)
    }

    /// [`Locks::take`], with the typed error (so a caller can tell an
    /// unreachable datastore from a held lock).
    pub fn try_take(
        ctx: &Ctx,
        layout: &Layout,
        config: &Config,
        operation: &str,
    ) -> Result<Locks, lock::LockError> {
        let targets = LockTarget::all_of(layout, config)?;
        let options = LockOptions {
            operation: operation.to_string(),
            ttl: Duration::from_secs(config.lock.ttl_secs),
            timeout: ctx
                .lock_timeout
                .unwrap_or(Duration::from_secs(config.lock.timeout_secs)),
        };
        let mut guards = Vec::new();
        for t in &targets {
            let guard = lock::acquire(t, &options, &mut |event| match event {
                Event::Waiting { .. } | Event::TookOver { .. } if ctx.quiet => {}
                Event::Waiting { url, body } => errln!(
                    "Waiting for the lock {url}: held by {} (expires {}); giving up after {}s.",
                    body.describe(),
                    body.expires_at,
                    options.timeout.as_secs()
                ),
                Event::TookOver { url, previous } => errln!(
                    "Took over the lock {url}: {} let it expire at {} without releasing it.",
                    previous.describe(),
                    previous.expires_at
                ),
                Event::WaitingUpstream { .. } | Event::UpstreamUnchecked { .. } => {}
            })?;
            guards.push(guard);
        }
        // Upstream swamp never looks at our lock: with ours held (so no
        // other swamp starts meanwhile), wait out upstream's.
        let mut seen = Vec::new();
        for p in std::iter::once(config.target()).chain(config.migrating_from.iter().cloned()) {
            let url = lock::upstream::url(&p);
            if url.is_none() || seen.contains(&url) {
                continue;
            }
            seen.push(url);
            lock::await_upstream(&p, options.timeout, &mut |event| match event {
                Event::WaitingUpstream { .. } if ctx.quiet => {}
                Event::WaitingUpstream { url, body } => errln!(
                    "Waiting for upstream swamp's lock {url}: held by {}; giving up after {}s.",
                    body.describe(),
                    options.timeout.as_secs()
                ),
                Event::UpstreamUnchecked { url, reason } => errln!(
                    "warning: could not check upstream swamp's lock {url} ({reason}); going on without it"
                ),
                _ => {}
            })?;
        }
        // Test-only: hold the lock for a while (FAILPOINTS=lock-acquired=sleep(MS)).
        fail::fail_point!("lock-acquired");
        Ok(Locks { guards })
    }

    /// The version of the first (target) lock, recorded in saved plans as
    /// information.
    pub fn info(&self) -> Option<crate::plan::LockInfo> {
        self.guards.first().map(|g| crate::plan::LockInfo {
            url: g.url().to_string(),
            version: g.version(),
            id: g.body().id,
        })
    }

    /// Releases every lock and settles the command's result: a lock lost
    /// while working turns success into an error (what was done is kept;
    /// preconditions made every write safe), and never deletes the
    /// successor's lock.
    pub fn finish<T>(self, result: Result<T, CliError>) -> Result<T, CliError> {
        let mut lost = None;
        for g in self.guards.into_iter().rev() {
            let (url, ttl) = (g.url().to_string(), g.body().ttl_secs);
            match g.release() {
                Ok(()) => {}
                // Could not reach the datastore to release it: say how it
                // ends, rather than leave the next run to wonder.
                Err(lock::LockError::Store(e)) => errln!(
                    "warning: could not release the lock {url} ({e}); it expires by itself within {ttl}s, \
                     or `swamp datastore lock release` removes it now (its process is gone)"
                ),
                Err(e) => {
                    if lost.is_none() {
                        lost = Some(CliError::from(e));
                    }
                }
            }
        }
        match (result, lost) {
            (Err(e), _) => Err(e),
            (Ok(_), Some(e)) => Err(e),
            (Ok(v), None) => Ok(v),
        }
    }
}
