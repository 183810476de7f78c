//! The lock at the command's edge: the engine takes and releases the locks
//! ([`crate::engine::locks`]); this says on stderr whom a command waits for
//! and settles the command's result with what releasing found.
use crate::cli::output::errln;

use crate::cli::{CliError, Ctx};
use crate::config::Config;
use crate::engine::locks::{self, LockError, LockEvent, TakeOptions};
use crate::layout::Layout;

/// The locks one command holds, released (conditionally) when it ends.
#[derive(Debug)]
pub(super) struct Locks(locks::Locks);

impl Locks {
    /// Takes the locks for `config`'s target and sources.
    pub(super) fn take(
        ctx: &Ctx,
        layout: &Layout,
        config: &Config,
        operation: &str,
    ) -> Result<Locks, CliError> {
        Locks::try_take(ctx, layout, config, operation).map_err(CliError::from)
    }

    /// [`Locks::take`], with the typed error (so a caller can tell an
    /// unreachable datastore from a held lock).
    pub(super) fn try_take(
        ctx: &Ctx,
        layout: &Layout,
        config: &Config,
        operation: &str,
    ) -> Result<Locks, LockError> {
        let how = how(ctx, operation);
        Ok(Locks(locks::Locks::take(
            layout,
            config,
            how,
            &mut sink(ctx, config),
        )?))
    }

    /// Takes this clone's own lock only, for a run that writes nothing to
    /// the datastore.
    pub(super) fn take_local(
        ctx: &Ctx,
        layout: &Layout,
        config: &Config,
        operation: &str,
    ) -> Result<Locks, CliError> {
        let how = how(ctx, operation);
        Ok(Locks(locks::Locks::take_local(
            layout,
            config,
            how,
            &mut sink(ctx, config),
        )?))
    }

    /// The version of the first (target) lock, recorded in saved plans as
    /// information.
    pub(super) fn info(&self) -> Option<crate::plan::LockInfo> {
        self.0.info()
    }

    /// Gives back the datastore's locks now (the run writes nothing more
    /// there); [`Locks::finish`] reports what that found.
    pub(super) fn release_shared(&mut self) {
        self.0.release_shared();
    }

    /// Releases every lock and settles the command's result: a lock lost
    /// while working turns success into an error (what was done is kept;
    /// preconditions made every write safe).
    pub(super) fn finish<T>(self, result: Result<T, CliError>) -> Result<T, CliError> {
        let released = self.0.release();
        // Could not reach the datastore to release it: say how it ends,
        // rather than leave the next run to wonder.
        for u in &released.unreleased {
            errln!(
                "warning: could not release the lock {} ({}); it expires by itself within {}s, \
                 or `swamp datastore lock release` removes it now (its process is gone)",
                u.url,
                u.error,
                u.ttl_secs
            );
        }
        match (result, released.lost) {
            (Err(e), _) => Err(e),
            (Ok(_), Some(e)) => Err(CliError::from(e)),
            (Ok(v), None) => Ok(v),
        }
    }
}

/// Waits, taking no lock, while someone else holds a fresh lock of this
/// repository's placements (a run that only reads the datastore).
pub(super) fn await_writers(
    ctx: &Ctx,
    layout: &Layout,
    config: &Config,
) -> Result<locks::Writers, CliError> {
    Ok(locks::await_writers(
        layout,
        config,
        ctx.lock_timeout,
        &mut sink(ctx, config),
    )?)
}

/// How a command takes its locks: `--lock-timeout` over the configured one.
fn how<'a>(ctx: &Ctx, operation: &'a str) -> TakeOptions<'a> {
    TakeOptions {
        operation,
        timeout: ctx.lock_timeout,
    }
}

/// Where a command's lock events go: [`say`], with the timeout it names.
fn sink(ctx: &Ctx, config: &Config) -> impl FnMut(LockEvent<'_>) + use<> {
    let (quiet, timeout) = (
        ctx.quiet,
        locks::timeout_of(config, ctx.lock_timeout).as_secs(),
    );
    move |event| say(quiet, timeout, event)
}

/// Says on stderr what the lock is waiting for (unless `--quiet`).
fn say(quiet: bool, timeout_secs: u64, event: LockEvent<'_>) {
    match event {
        LockEvent::Waiting { .. }
        | LockEvent::TookOver { .. }
        | LockEvent::WaitingUpstream { .. }
            if quiet => {}
        LockEvent::Waiting { url, body } => errln!(
            "Waiting for the lock {url}: held by {} (expires {}); giving up after {timeout_secs}s.",
            body.describe(),
            body.expires_at,
        ),
        LockEvent::TookOver {
            url,
            previous,
            holder_gone: true,
        } => errln!(
            "Took over the lock {url}: the process that held it ({}) is gone.",
            previous.describe()
        ),
        LockEvent::TookOver { url, previous, .. } => errln!(
            "Took over the lock {url}: {} let it expire at {} without releasing it.",
            previous.describe(),
            previous.expires_at
        ),
        LockEvent::WaitingUpstream { url, body } => errln!(
            "Waiting for upstream swamp's lock {url}: held by {}; giving up after {timeout_secs}s.",
            body.describe(),
        ),
        LockEvent::UpstreamUnchecked { url, reason } => errln!(
            "warning: could not check upstream swamp's lock {url} ({reason}); going on without it"
        ),
    }
}
