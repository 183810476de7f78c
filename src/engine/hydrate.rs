//! Lazy hydration's reads: which files a lazy pull recorded as in the
//! remote only, and fetching some of them on first use. A fetch is a pull
//! of those files and nothing else: the same download action apply runs
//! (no symlink followed, sha256 verified where known, landed atomically,
//! its directory fsynced), and the sync base advanced only for what
//! landed. One GET per file: no listing, no other request.

use crate::plan::action::Download;
use std::path::Path;

use crate::apply::{self, ApplyReport};
use crate::config::Config;
use crate::layout::{Layout, Tier, TierPath};
use crate::plan::{Action, Expect, PlacementInfo, Plan, RemoteInfo};
use crate::state::{Scope, SyncBase, Unhydrated};
use crate::store::RemoteTarget;

use super::EngineError;

/// The files the target's sync base records as in the remote only (empty
/// for a datastore that is not remote).
pub(crate) fn unhydrated(
    layout: &Layout,
    config: &Config,
) -> Result<std::collections::BTreeMap<TierPath, Unhydrated>, EngineError> {
    let placement = config.target();
    if !placement.datastore.is_remote() {
        return Ok(Default::default());
    }
    let url = Layout::remote_url(&placement);
    Ok(SyncBase::load(&layout.sync_base_path(&placement), &url)?.unhydrated)
}

/// What a download of a file recorded as in the remote only is checked
/// against: what the listing told when it was recorded.
fn expect_of(u: &Unhydrated) -> Expect {
    Expect::of(u.sha256.as_deref().copied(), u.served.as_deref())
}

/// Reads what `paths` (those recorded as in the remote only) need into
/// this clone's partial downloads, taking no lock of the cache: see
/// `store::resume::prefetch`. Reads of different names so download side
/// by side; [`fetch`], under the lock, then checks and lands them. Best
/// effort: what fails here, `fetch` reads again and reports.
pub(crate) fn prefetch(layout: &Layout, config: &Config, paths: &[TierPath]) {
    let placement = config.target();
    if !placement.datastore.is_remote() {
        return;
    }
    let (Ok(target), Ok(base)) = (
        RemoteTarget::open(&placement),
        SyncBase::load(
            &layout.sync_base_path(&placement),
            &Layout::remote_url(&placement),
        ),
    ) else {
        return;
    };
    let objects: Vec<_> = paths
        .iter()
        .filter_map(|p| {
            let u = base.unhydrated.get(p)?;
            Some(expect_of(u).object(target.key(p), u.size, u.version.to_string()))
        })
        .collect();
    let dir = layout.partial_dir();
    let reads = objects
        .iter()
        .map(|o| crate::store::resume::prefetch(target.store.as_ref(), o, &dir));
    for read in crate::store::runtime().block_on(futures_util::future::join_all(reads)) {
        if let Err(e) = read {
            tracing::debug!(target: "swamp::engine", error = %e, "reading ahead of the cache's lock failed");
        }
    }
}

/// Fetches `paths` (those of them still recorded as in the remote only)
/// into the cache, as a pull of exactly those files would.
pub(crate) fn fetch(
    repo: &Path,
    layout: &Layout,
    config: &Config,
    paths: &[TierPath],
) -> Result<ApplyReport, EngineError> {
    let placement = config.target();
    let target = RemoteTarget::open(&placement)?;
    let base = SyncBase::load(&layout.sync_base_path(&placement), &target.url)?;
    let mut actions: Vec<Action> = paths
        .iter()
        .filter_map(|p| {
            let u = base.unhydrated.get(p)?;
            Some(Action::Download(Download {
                path: p.clone(),
                size: u.size,
                version: u.version.clone(),
                expect: expect_of(u),
                local: None,
                settled_by: None,
            }))
        })
        .collect();
    if actions.is_empty() {
        return Ok(ApplyReport::default());
    }
    if paths.iter().any(|p| p.tier() == Tier::Data) {
        actions.push(Action::InvalidateCatalog);
    }
    let plan = Plan {
        scope: Scope::Pull,
        target: PlacementInfo {
            datastore: placement.datastore.clone(),
            namespace: placement.namespace.clone(),
            root: layout.root_label(&layout.placement_root(&placement)),
            dir: layout.placement_root(&placement),
        },
        sources: Vec::new(),
        remote: Some(RemoteInfo {
            url: target.url.clone(),
            key_prefix: target.key_prefix.clone(),
            objects: 0,
            batch_delete: false,
            prechecked: Vec::new(),
            multipart_threshold: None,
            conflict_policy: config.sync.conflict,
            forced: false,
            forced_delete_local: false,
            base_ignored: false,
            hydrate: true,
            unhydrated: 0,
            folder_markers: 0,
            unmanaged: Vec::new(),
            skipped_local: Vec::new(),
            resolved: Vec::new(),
            // The base stays bound to the remote it was made with: a
            // remote re-created since answers "not found" for the object.
            remote_id: base.remote_id.clone(),
            base_reset: None,
        }),
        actions,
        conflicts: Vec::new(),
        no_undo: false,
        diffs: Vec::new(),
        resumes: Vec::new(),
        other_clones: Vec::new(),
        authored: Vec::new(),
    };
    Ok(apply::apply(
        &plan,
        layout,
        repo,
        (Some(&target), &[]),
        apply::Options::transfers(config.sync.concurrency),
    )?)
}
