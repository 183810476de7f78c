//! The distributed locks a run holds, and the lock's inspection and breaking
//! for `datastore lock`: every command that writes the datastore or migrates
//! a layout holds the locks of the target placement and of every placement
//! it still drains, for its whole run (planning included). What the lock
//! reports while it waits goes to the caller's sink as [`LockEvent`]s; the
//! engine prints nothing.
//!
//! One order, so no two runs each hold a lock the other waits for: this
//! clone's own lock (in its cache's state, `$SWAMP_HOME/repos/<id>/`)
//! first, then the placements' locks sorted by URL ([`LockTarget::all_of`],
//! a local target's `.swamp/state/lock.json` among them like any other).
//! The own lock is never a placement's, so it cannot also sit somewhere
//! in the sorted run; a run that holds only it (`take_local`) waits for
//! the placements' locks to be free ([`await_writers`]) without taking
//! them.

use std::time::Duration;

use crate::config::{Config, Placement};
use crate::layout::Layout;
use crate::lock::{self, Awaited, LockGuard, LockOptions};
use crate::plan::LockInfo;
use crate::store::StoreError;

pub(crate) use crate::lock::{
    Event as LockEvent, LockError, LockState, LockTarget, holder_is_gone,
};

/// The locks one run holds, released (conditionally) by [`Locks::release`].
#[derive(Debug)]
pub(crate) struct Locks {
    guards: Vec<LockGuard>,
    /// Where the datastore's own locks start (after this clone's, if taken).
    shared_from: usize,
    /// What releasing the datastore's locks early found
    /// ([`Locks::release_shared`]).
    early: Released,
}

/// How [`Locks::take`] takes them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TakeOptions<'a> {
    /// Recorded in the lock body, for whoever waits on it.
    pub operation: &'a str,
    /// Overrides `[lock] timeout_secs` (the command line's `--lock-timeout`).
    pub timeout: Option<Duration>,
}

/// What releasing the locks found.
#[derive(Debug, Default)]
pub(crate) struct Released {
    /// A lock lost while the run worked (taken over after it expired): the
    /// run's success turns into this error; what was done is kept.
    pub lost: Option<LockError>,
    /// Locks the datastore did not let go of (unreachable); each expires by
    /// itself within its time to live.
    pub unreleased: Vec<Unreleased>,
}

/// One lock that could not be released.
#[derive(Debug)]
pub(crate) struct Unreleased {
    pub url: String,
    pub ttl_secs: u64,
    pub error: StoreError,
}

impl Locks {
    /// Takes the locks for `config`'s target and sources
    /// ([`LockTarget::all_of`], in a fixed order), then waits out upstream
    /// swamp's lock of the same namespaces (upstream never looks at ours).
    pub(crate) fn take(
        layout: &Layout,
        config: &Config,
        how: TakeOptions<'_>,
        on_event: &mut dyn FnMut(LockEvent<'_>),
    ) -> Result<Locks, LockError> {
        let targets = LockTarget::all_of(layout, config)?;
        let mut guards = Vec::new();
        // This clone's own lock too, when the datastore is remote: a run
        // that changes only the cache takes only that one (`take_local`),
        // and must not interleave with a run that writes the bucket from
        // this same clone. Taken first, as `take_local` holds it while it
        // waits out the bucket's writers: taken after the bucket's, each
        // run could wait on the other.
        if config.target().datastore.is_remote() {
            let own = own_lock(layout)?;
            if !targets.iter().any(|t| t.url == own.url) {
                let options = lock_options(config, how, true);
                guards.push(lock::acquire(&own, &options, on_event)?);
            }
        }
        let shared_from = guards.len();
        let options = lock_options(config, how, false);
        for t in &targets {
            guards.push(lock::acquire(t, &options, on_event)?);
        }
        // With ours held (so no other swamp starts meanwhile), wait out
        // upstream's.
        await_upstreams(config, options.timeout, on_event)?;
        // Test-only: hold the lock for a while (FAILPOINTS=lock-acquired=sleep(MS)).
        fail::fail_point!("lock-acquired");
        Ok(Locks {
            guards,
            shared_from,
            early: Released::default(),
        })
    }

    /// Takes this clone's own lock (in its cache's state, see
    /// [`own_lock`]), not the datastore's: for a run that changes this clone only, so that two
    /// runs in one clone do not interleave while credentials that may only
    /// read the bucket still serve.
    pub(crate) fn take_local(
        layout: &Layout,
        config: &Config,
        how: TakeOptions<'_>,
        on_event: &mut dyn FnMut(LockEvent<'_>),
    ) -> Result<Locks, LockError> {
        let target = own_lock(layout)?;
        let options = lock_options(config, how, true);
        Ok(Locks {
            guards: vec![lock::acquire(&target, &options, on_event)?],
            shared_from: 1,
            early: Released::default(),
        })
    }

    /// The version of the first (target) lock of the datastore, recorded
    /// in saved plans as information.
    pub(crate) fn info(&self) -> Option<LockInfo> {
        self.guards.get(self.shared_from).map(|g| LockInfo {
            url: g.url().to_string(),
            version: g.version(),
            id: g.body().id,
        })
    }

    /// Releases the datastore's locks now, once the run writes nothing
    /// more there (its apply verified): the requests an apply reports
    /// then include giving them back, as its plan estimated. This clone's
    /// own lock stays until [`Locks::release`], which also reports what
    /// releasing these found.
    pub(crate) fn release_shared(&mut self) {
        let shared: Vec<LockGuard> = self.guards.drain(self.shared_from..).collect();
        let early = std::mem::take(&mut self.early);
        self.early = release_guards(shared, early);
    }

    /// Releases every lock, last taken first. Never deletes a successor's
    /// lock: a lock lost meanwhile is reported, not removed.
    pub(crate) fn release(self) -> Released {
        release_guards(self.guards, self.early)
    }
}

/// Releases `guards`, last taken first, into what `released` found so far.
fn release_guards(guards: Vec<LockGuard>, mut released: Released) -> Released {
    for g in guards.into_iter().rev() {
        let (url, ttl_secs) = (g.url().to_string(), g.body().ttl_secs);
        match g.release() {
            Ok(()) => {}
            Err(LockError::Store(error)) => released.unreleased.push(Unreleased {
                url,
                ttl_secs,
                error,
            }),
            Err(e) => {
                released.lost.get_or_insert(e);
            }
        }
    }
    released
}

fn lock_options(config: &Config, how: TakeOptions<'_>, own: bool) -> LockOptions {
    LockOptions {
        operation: how.operation.to_string(),
        ttl: Duration::from_secs(config.lock.ttl_secs),
        timeout: timeout_of(config, how.timeout),
        dead_holder_is_stale: own,
    }
}

/// This clone's own lock, for a remote datastore's: in its cache's state
/// (`$SWAMP_HOME/repos/<id>/.swamp/lock.json`), keyed by the cache rather
/// than the checkout, so two worktrees of one repository, which share the
/// cache, take turns with it.
fn own_lock(layout: &Layout) -> Result<LockTarget, LockError> {
    let dir = layout.cache_root().join(crate::layout::CACHE_STATE_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
    // The lock's own writes (temp file, rename) leave a temp file when
    // killed between the two: cleared once its writer is gone.
    crate::fsutil::sweep_dead_temps(&dir);
    Ok(LockTarget::in_dir(&dir))
}

/// Waits until nobody holds a fresh lock of this run's placements, taking
/// none (a run that writes nothing to the datastore needs only to read
/// it), and likewise upstream swamp's.
pub(crate) fn await_writers(
    layout: &Layout,
    config: &Config,
    timeout: Option<Duration>,
    on_event: &mut dyn FnMut(LockEvent<'_>),
) -> Result<Writers, LockError> {
    let timeout = timeout_of(config, timeout);
    let mut found = Writers {
        waited: false,
        ours_free: true,
    };
    for t in LockTarget::all_of(layout, config)? {
        let awaited = lock::await_free(&t, timeout, on_event)?;
        found.waited |= awaited == Awaited::Waited;
        found.ours_free &= awaited == Awaited::Free;
    }
    found.waited |= await_upstreams(config, timeout, on_event)?;
    Ok(found)
}

/// What [`await_writers`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Writers {
    /// A live writer held a lock (ours or upstream's), and was waited out.
    pub waited: bool,
    /// No lock object of ours was there at the end.
    pub ours_free: bool,
}

/// Waits out upstream swamp's lock of each namespace this run touches
/// (upstream never looks at ours), each once; whether any was held.
fn await_upstreams(
    config: &Config,
    timeout: Duration,
    on_event: &mut dyn FnMut(LockEvent<'_>),
) -> Result<bool, LockError> {
    let mut seen = Vec::new();
    let mut waited = false;
    for p in std::iter::once(config.target()).chain(config.migrating_from.iter().cloned()) {
        let url = lock::upstream::url(&p);
        if url.is_none() || seen.contains(&url) {
            continue;
        }
        seen.push(url);
        waited |= lock::await_upstream(&p, timeout, on_event)? == Awaited::Waited;
    }
    Ok(waited)
}

/// How long a run waits for a lock: `given` (`--lock-timeout`), else
/// `[lock] timeout_secs`.
pub(crate) fn timeout_of(config: &Config, given: Option<Duration>) -> Duration {
    given.unwrap_or(Duration::from_secs(config.lock.timeout_secs))
}

/// The locks a run in this repository takes: its target's, then every
/// placement it still drains.
pub(crate) fn targets(layout: &Layout, config: &Config) -> Result<Vec<LockTarget>, LockError> {
    Ok(LockTarget::all_of(layout, config)?)
}

/// The lock of the repository's target placement.
pub(crate) fn target(layout: &Layout, config: &Config) -> Result<LockTarget, LockError> {
    Ok(LockTarget::of(layout, &config.target())?)
}

/// The lock of a shared (not `local`) placement, no repository needed.
pub(crate) fn shared(placement: &Placement) -> Result<LockTarget, LockError> {
    Ok(LockTarget::shared(placement)?)
}

/// What the lock object says now.
pub(crate) fn read(target: &LockTarget) -> Result<LockState, LockError> {
    Ok(lock::read(target)?)
}

/// Why breaking a lock did nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BreakError {
    /// The lock changed since it was read (renewed or taken by someone
    /// else); it was left alone.
    #[error(
        "the lock {url} changed while it was being released (renewed or taken by someone else); it was left alone"
    )]
    Changed { url: String },
    #[error(transparent)]
    Lock(#[from] LockError),
}

/// Deletes the lock version `seen` (and only that version).
pub(crate) fn break_lock(target: &LockTarget, seen: &LockState) -> Result<(), BreakError> {
    lock::break_lock(target, seen).map_err(|e| match e {
        StoreError::PreconditionFailed { .. } => BreakError::Changed {
            url: target.url.clone(),
        },
        other => BreakError::Lock(other.into()),
    })
}

/// Releases every lock this process holds, for an interrupt handler; the
/// guards dropped later do nothing.
pub(crate) fn release_all() {
    lock::release_all();
}
