//! The one function through which planning reads the world: every
//! placement's tree, the remote listings and sync bases, the repository's
//! managed-config mirror and the remote's sentinel, the modification times
//! `--conflict newer` needs, and the bodies of the small text files whose
//! diffs a plan shows. [`crate::plan::compose`] turns it into a plan
//! without doing any I/O, and the fingerprint of a saved plan covers all
//! of it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use crate::config::Config;
use crate::layout::{AnyOf, KnownPaths, Layout, Tier, TierPath};
use crate::store::{RemoteTarget, StoreError, runtime};

use super::managed::{self, Mirror, RemoteSentinel, Sentinel, sentinel_path};
use super::remote::{RemoteIdentity, ServerDigest, observe_remote, read_identity};
use super::tree::ObserveError;
use super::{
    BaseEntry, Desired, FileState, HashCache, KeptListing, Learnt, Observed, RemoteSnapshot, Scope,
    SyncBase,
};

/// Files larger than this are not read for a diff.
pub const DIFF_SIZE_CAP: u64 = 64 * 1024;

/// What the observation must include beyond the trees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObserveOptions {
    /// Record the cache files' modification times (`--conflict newer`).
    pub modified: bool,
}

/// Walks what `desired` names (target first, then each source), with the
/// persistent hash cache and what this run `learnt` of files it wrote,
/// and reads the small text files the plan shows diffs of. No remote, no
/// mirror.
pub fn observe_local(
    layout: &Layout,
    desired: &Desired,
    learnt: Learnt,
    known: Option<&dyn KnownPaths>,
) -> Result<Observed, ObserveError> {
    crate::progress::meter().phase("reading the datastore tree (files hashed)");
    let mut cache = HashCache::load(&layout.hash_cache_path());
    cache.learn(learnt);
    let placements: Vec<_> = std::iter::once(&desired.target)
        .chain(&desired.sources)
        .collect();
    let mut observed = Observed::observe(layout, &placements, &mut cache, known)?;
    tracing::debug!(target: "swamp::state", files_read = cache.misses(), "cache walked");
    // Derived state: a cache that cannot be saved only costs time next run.
    let _ = cache.save();
    observed.texts = texts(&observed);
    Ok(observed)
}

/// The whole observation a plan for `desired` is composed from.
pub fn observe(
    layout: &Layout,
    config: &Config,
    desired: &Desired,
    options: ObserveOptions,
    learnt: Learnt,
    listed: Option<KeptListing>,
) -> Result<Observed, ObserveError> {
    // A kept listing's paths are the cache's too, after a pull: shared,
    // not held twice (48 MB at a million files). A spilled one is read
    // back after the walk, sharing the walk's.
    let known = listed
        .as_ref()
        .and_then(KeptListing::held_files)
        .map(|f| f as &dyn KnownPaths);
    let mut observed = observe_local(layout, desired, learnt, known)?;
    observed.mirror = mirror(layout, config, desired.scope)?;
    let any_source = desired.sources.iter().any(|s| s.datastore.is_remote());
    let direction = desired.scope.direction();
    let target_remote = desired.target.datastore.is_remote() && (direction.is_some() || any_source);
    if !target_remote && !any_source {
        return Ok(observed);
    }
    let rt = runtime();
    let mut digests = LocalDigests::new(layout);
    // Remote sources: what their buckets still hold.
    observe_remote_sources(layout, desired, &mut observed, &mut digests, rt)?;
    if !target_remote {
        digests.save();
        return Ok(observed);
    }
    let target = RemoteTarget::open(&desired.target)?;
    let walked: &BTreeMap<TierPath, FileState> = &observed.placements[0].files;
    let relisted = match listed.filter(|l| l.url() == target.url) {
        Some(kept) => relisted(layout, &target, kept, walked)?,
        None => None,
    };
    let mut snapshot = match relisted {
        Some(snapshot) => snapshot,
        None => {
            crate::progress::meter().phase(&format!("listing {}", target.url));
            let here = &observed.placements[0];
            let cache = cache_after_moves(&observed, desired.scope);
            listed_with_base(layout, &target, rt, &here.files, |base| {
                Ok(rt.block_on(observe_remote(
                    target.store.as_ref(),
                    target.url.clone(),
                    &target.key_prefix,
                    desired.target.namespace.is_some(),
                    base,
                    &cache,
                    false,
                    &mut |p, f, d| digests.matches(&here.root, &here.files, p, f, d),
                ))?)
            })?
        }
    };
    digests.save();
    finish_snapshot(
        layout,
        desired,
        options,
        &target,
        rt,
        &mut observed,
        &mut snapshot,
    )?;
    observed.remote = Some(snapshot);
    Ok(observed)
}

/// What a remote snapshot gets from the cache and this clone's state,
/// after its listing: the keys the cache cannot hold, the sentinel (for a
/// push), modification times, and the deletes swamp can explain.
fn finish_snapshot(
    layout: &Layout,
    desired: &Desired,
    options: ObserveOptions,
    target: &RemoteTarget,
    rt: &tokio::runtime::Runtime,
    observed: &mut Observed,
    snapshot: &mut RemoteSnapshot,
) -> Result<(), ObserveError> {
    let root = &observed.placements[0].root;
    snapshot.unholdable = super::remote::unholdable(
        &snapshot.files,
        &snapshot.key_prefix,
        root,
        crate::fsutil::folds_case(root),
        observed.placements[0].files.keys(),
    );
    if observed.mirror.is_some() && desired.scope.direction().is_some_and(|d| d.pushes()) {
        observed.sentinel = Some(rt.block_on(read_sentinel(target, snapshot))?);
    }
    if options.modified {
        observed.modified = modified(&observed.placements[0]);
    }
    // Deletes swamp can explain, for the delete guards, and how far this
    // clone has passed the other clones' (see `deliberate`).
    deliberate_deletes(layout, desired, target, snapshot, rt)?;
    snapshot.interrupted = super::remote::Interrupted::read(layout, &target.placement);
    let now = crate::clock::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let aged = now - crate::store::TEMP_MAX_AGE.as_secs() as i64;
    snapshot.interrupted.temps = target
        .store
        .temps_listed()
        .into_iter()
        .filter(|t| t.modified < aged && t.key.starts_with(&snapshot.key_prefix))
        .collect();
    Ok(())
}

/// The remote as planning listed it, for the verifying plan of a run
/// that wrote nothing there: the bucket changed since only if someone
/// else changed it, which the next plan shows. What this run did change
/// is read again: the sync base (what it recorded) and what it lazily
/// left in the remote only. A base the apply bound to another remote
/// (it cannot) would be set aside as ever. `None` when the kept listing
/// cannot be read back: the bucket is listed again.
///
/// The base is read before the listing: read after it, the base's load
/// (each run of its entries made a map, then merged) came on top of the
/// whole listing, the peak of a million-file pull. Each path is held
/// once: the base shares the walk's, the listing both.
fn relisted(
    layout: &Layout,
    remote: &RemoteTarget,
    kept: KeptListing,
    walked: &BTreeMap<TierPath, FileState>,
) -> Result<Option<RemoteSnapshot>, ObserveError> {
    let path = layout.sync_base_path(&remote.placement);
    let mut base = SyncBase::load_sharing(&path, &remote.url, Some(walked))?;
    let restored = kept.restore(Some(&AnyOf(vec![walked, &base.files, &base.unhydrated])));
    let Some(mut snapshot) = restored else {
        return Ok(None);
    };
    let listed = !base.files.is_empty() || !base.unhydrated.is_empty();
    let id = snapshot.identity.as_ref().map(|i| i.id.clone());
    snapshot.base_reset = base.mismatch_listing(id.as_deref(), listed);
    if snapshot.base_reset.is_some() {
        base.clear();
    }
    // What the listing could not vouch for (no sha256 metadata) the base
    // now does, at the same version (the objects this run downloaded):
    // read from there (`RemoteObject::sha`).
    snapshot.base = base.files;
    snapshot.unhydrated = base.unhydrated;
    snapshot.deleted_here = Default::default();
    Ok(Some(snapshot))
}

/// Each remote source's snapshot: what its bucket still holds.
fn observe_remote_sources(
    layout: &Layout,
    desired: &Desired,
    observed: &mut Observed,
    digests: &mut LocalDigests<'_>,
    rt: &tokio::runtime::Runtime,
) -> Result<(), ObserveError> {
    // Which notes are this clone's: the others name who still uses a
    // place this plan moves away from.
    let me = super::delete_records::clone_id(layout).ok();
    for i in 1..observed.placements.len() {
        let placement = observed.placements[i].placement.clone();
        if !placement.datastore.is_remote() {
            continue;
        }
        let source = RemoteTarget::open(&placement)?;
        crate::progress::meter().phase(&format!("listing {}", source.url));
        let here = &observed.placements[i];
        let snapshot = listed_with_base(layout, &source, rt, &here.files, |base| {
            Ok(rt.block_on(observe_remote(
                source.store.as_ref(),
                source.url.clone(),
                &source.key_prefix,
                placement.namespace.is_some(),
                base,
                &here.files,
                desired.target.datastore.is_remote(),
                &mut |p, f, d| digests.matches(&here.root, &here.files, p, f, d),
            ))?)
        })?;
        let mut snapshot = snapshot;
        for note in &mut snapshot.clone_notes {
            note.mine = me.as_deref() == Some(note.clone.as_str());
        }
        observed.placements[i].remote = Some(snapshot);
    }
    Ok(())
}

/// The other clones' delete records and this clone's progress past them,
/// and what this clone deleted itself, for the delete guards.
fn deliberate_deletes(
    layout: &Layout,
    desired: &Desired,
    target: &RemoteTarget,
    snapshot: &mut RemoteSnapshot,
    rt: &tokio::runtime::Runtime,
) -> Result<(), ObserveError> {
    let me = super::delete_records::clone_id(layout).map_err(|source| ObserveError::Io {
        path: layout.clone_id_path(),
        source,
    })?;
    for note in &mut snapshot.clone_notes {
        note.mine = note.clone == me;
    }
    let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(crate::clock::now_secs());
    rt.block_on(super::delete_records::read_records(
        target.store.as_ref(),
        &mut snapshot.delete_records,
        now,
        &me,
        &layout.delete_records_cache_path(&desired.target),
    ))?;
    // Only a sync with a base can delete anything.
    if !snapshot.base.is_empty() {
        snapshot.deleted_here = super::delete_records::deleted_here(layout, &desired.target);
    }
    Ok(())
}

/// MD5s of cache files, for recognising remote objects another tool wrote
/// (see [`observe_remote`]): from the hash cache, or read once (sha256 and
/// MD5 together) and kept there. The cache is loaded only if one is asked.
struct LocalDigests<'a> {
    layout: &'a Layout,
    cache: Option<HashCache>,
    /// Contents (sha256) known not to be a multipart object (its ETag):
    /// a whole read to find out, so kept in `.swamp/state/` (loaded on
    /// first use).
    misses: Option<BTreeSet<(String, String)>>,
    /// Of those, the ones asked about this time (only they are kept).
    asked: BTreeSet<(String, String)>,
    /// Files read to compare with a multipart ETag.
    multipart_reads: usize,
}

impl<'a> LocalDigests<'a> {
    fn new(layout: &'a Layout) -> LocalDigests<'a> {
        LocalDigests {
            layout,
            cache: None,
            misses: None,
            asked: BTreeSet::new(),
            multipart_reads: 0,
        }
    }

    /// Whether the file at `path` under `root`, which the walk saw as
    /// `files[path]`, has the content `digest` names; `false` if it is not
    /// there, not that file any more, another content, or not the file the
    /// remote was compared with (`compared`: in the config scope that is
    /// the mirror's copy, not the cache's).
    fn matches(
        &mut self,
        root: &std::path::Path,
        files: &BTreeMap<TierPath, FileState>,
        path: &TierPath,
        compared: &FileState,
        digest: ServerDigest,
    ) -> bool {
        let Some(file) = files.get(path) else {
            return false;
        };
        if file != compared {
            return false;
        }
        let full = root.join(path.as_str());
        let Some(meta) = std::fs::symlink_metadata(&full)
            .ok()
            .filter(|m| m.is_file())
        else {
            return false;
        };
        match digest {
            ServerDigest::Md5(md5) => {
                let layout = self.layout;
                self.cache
                    .get_or_insert_with(|| HashCache::load(&layout.hash_cache_path()))
                    .md5(&full, &meta, file.sha256)
                    == Some(md5)
            }
            // Large and rare: read when asked (once when it matches: the
            // sync base records it then; once when it does not: that is
            // remembered, by content and ETag).
            ServerDigest::Multipart(etag) => {
                let swamp_part = crate::store::parts::part_size(file.size);
                let sizes = etag.part_sizes(file.size, swamp_part);
                if sizes.is_empty() {
                    return false;
                }
                let asked = (file.sha256.to_string(), etag.to_string());
                let path = self.layout.multipart_misses_path();
                let misses = self.misses.get_or_insert_with(|| {
                    std::fs::read(&path)
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok())
                        .unwrap_or_default()
                });
                if misses.contains(&asked) {
                    self.asked.insert(asked);
                    return false;
                }
                self.multipart_reads += 1;
                let found = match crate::fsutil::sha256_and_part_md5s(&full, &sizes) {
                    Ok((sha, parts)) => {
                        // Changed since it was hashed: no verdict to keep.
                        if sha != file.sha256.0 {
                            return false;
                        }
                        parts
                            .iter()
                            .any(|p| crate::digest::MultipartEtag::of_parts(p) == etag)
                    }
                    Err(_) => return false,
                };
                if !found {
                    misses.insert(asked.clone());
                    self.asked.insert(asked);
                }
                found
            }
        }
    }

    /// Keeps what was learnt (derived state: a failed save costs a read).
    fn save(self) {
        if let Some(cache) = self.cache {
            let _ = cache.save_keeping();
        }
        if let Some(misses) = self.misses {
            // Only what was asked about this time: the rest is gone or
            // recorded.
            let keep: BTreeSet<_> = misses.intersection(&self.asked).collect();
            if keep.len() != misses.len() || !self.asked.is_empty() {
                let path = self.layout.multipart_misses_path();
                let _ = serde_json::to_vec(&keep).map(|b| crate::fsutil::atomic_write(&path, &b));
            }
        }
    }
}

/// The remote as `list` observes it against this clone's sync base, the
/// base bound to the id the remote holds: a base made with another id is
/// set aside (and the remote observed again without it), with why.
///
/// The id is read after the listing, which shows its version: a version
/// this clone read before vouches for it with no GET (`state::seen`).
fn listed_with_base(
    layout: &Layout,
    remote: &RemoteTarget,
    rt: &tokio::runtime::Runtime,
    cache: &BTreeMap<TierPath, FileState>,
    mut list: impl FnMut(BTreeMap<TierPath, BaseEntry>) -> Result<RemoteSnapshot, ObserveError>,
) -> Result<RemoteSnapshot, ObserveError> {
    // One allocation per path across the cache, base and remote maps.
    let path = layout.sync_base_path(&remote.placement);
    let mut base = SyncBase::load_sharing(&path, &remote.url, Some(cache))?;
    let listed = !base.files.is_empty() || !base.unhydrated.is_empty();
    let mut snapshot = list(std::mem::take(&mut base.files))?;
    let identity = identify(layout, remote, snapshot.listed.remote_id.as_deref(), rt)?;
    let reset = base.mismatch_listing(identity.as_ref().map(|i| i.id.as_str()), listed);
    if reset.is_some() {
        // Versions the base vouched for were another remote's.
        snapshot = list(BTreeMap::new())?;
        base.clear();
    }
    snapshot.unhydrated = base.unhydrated;
    snapshot.identity = identity;
    let caps = remote.store.capabilities();
    snapshot.prechecked =
        crate::store::enforced::Prechecked::unless(caps.conditional_delete, caps.conditional_copy);
    snapshot.multipart_threshold = remote.store.multipart_threshold();
    snapshot.base_reset = reset;
    Ok(snapshot)
}

/// The id the remote holds, its object listed at `listed` (`None`: not
/// listed, so it has none): as this clone read it before at that version,
/// else read now and kept.
fn identify(
    layout: &Layout,
    remote: &RemoteTarget,
    listed: Option<&str>,
    rt: &tokio::runtime::Runtime,
) -> Result<Option<RemoteIdentity>, ObserveError> {
    let Some(listed) = listed else {
        return Ok(None);
    };
    let path = layout.remote_seen_path(&remote.placement);
    let mut seen = super::remote_seen::Seen::load(&path, &remote.url);
    if let Some(identity) = seen.identity_at(listed) {
        if let Some(e) = seen.enforced_for(&identity.id) {
            crate::store::enforced::learn(&remote.store.describe(), e);
        }
        return Ok(Some(identity));
    }
    let key = Layout::remote_id_key(&remote.placement);
    let identity = rt.block_on(read_identity(remote.store.as_ref(), &key))?;
    if let Some(identity) = &identity {
        seen.remote_id = Some(identity.clone());
        seen.save(&path);
    }
    Ok(identity)
}

/// Which cache paths the remote's objects are compared with, for deciding
/// where a HEAD is needed: the cache as it will be once the plan's moves
/// and mirror copies are done (a superset is harmless: it costs a HEAD only
/// where the listing and the base cannot vouch for an object's sha256).
fn cache_after_moves(observed: &Observed, scope: Scope) -> Cow<'_, BTreeMap<TierPath, FileState>> {
    // Borrowed when nothing moves in: a copy is tens of megabytes at
    // 100,000 files.
    let mut local = Cow::Borrowed(&*observed.placements[0].files);
    for source in &observed.placements[1..] {
        if source.root != observed.placements[0].root {
            for (p, f) in source.files.iter() {
                local.to_mut().entry(p.clone()).or_insert_with(|| f.clone());
            }
        }
    }
    if scope == Scope::Config {
        if let Some(mirror) = &observed.mirror {
            for (p, f) in &mirror.files {
                local.to_mut().insert(p.clone(), f.clone());
            }
        }
        // The config tier, the sentinel in it (unlike `config_only`): the
        // scope records a landed sentinel a killed run did not, for which
        // its sha256 must be known (S3 lists no metadata).
        local = Cow::Owned(
            local
                .iter()
                .filter(|(p, _)| p.tier() == Tier::Config)
                .map(|(p, f)| (p.clone(), f.clone()))
                .collect(),
        );
    }
    local
}

/// What the managed-config mirror should hold, for the scopes that act on
/// it: always for `config`; for the other pushing scopes of a remote
/// datastore with `[config] managed = true` (to publish a missing sentinel),
/// where an unreadable definition directory just means "not now".
pub(crate) fn mirror(
    layout: &Layout,
    config: &Config,
    scope: Scope,
) -> Result<Option<Mirror>, managed::ManagedError> {
    let mut mirror = match scope {
        Scope::Config => Mirror::read(layout.repo())?,
        Scope::All | Scope::Sync | Scope::Push
            if config.config.managed && config.datastore.is_remote() =>
        {
            match Mirror::read(layout.repo()) {
                Ok(m) => m,
                Err(_) => return Ok(None),
            }
        }
        _ => return Ok(None),
    };
    // Excluded paths stay repo-local, so the sentinel cannot vouch for them.
    mirror.files.retain(|p, _| !layout.is_excluded(p));
    Ok(Some(mirror))
}

/// The remote's managed-config sentinel, read when the listing has one.
async fn read_sentinel(
    target: &RemoteTarget,
    snapshot: &RemoteSnapshot,
) -> Result<RemoteSentinel, StoreError> {
    let path = sentinel_path();
    if !snapshot.files.contains_key(&path) {
        return Ok(RemoteSentinel::Absent);
    }
    match target.store.get_bytes(&target.key(&path)).await {
        Ok((_, bytes)) => Ok(RemoteSentinel::Present {
            body: String::from_utf8_lossy(&bytes).into_owned(),
            parsed: Sentinel::parse(&target.key(&path), &bytes).ok(),
        }),
        // Deleted since the listing: as if it had not been listed.
        Err(StoreError::NotFound { .. }) => Ok(RemoteSentinel::Absent),
        Err(e) => Err(e),
    }
}

/// The cache files' modification times, in seconds.
fn modified(cache: &super::PlacementState) -> BTreeMap<TierPath, i64> {
    cache
        .files
        .keys()
        .filter_map(|p| {
            let meta = std::fs::symlink_metadata(cache.root.join(p.as_str())).ok()?;
            let secs = meta
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?
                .as_secs();
            Some((p.clone(), secs as i64))
        })
        .collect()
}

/// Both sides of every path a source and the target hold with different
/// content, when both are small UTF-8 text: the plan shows their diff.
fn texts(observed: &Observed) -> Vec<super::tree::TextPair> {
    let target = &observed.placements[0];
    let mut out = Vec::new();
    for (i, source) in observed.placements[1..].iter().enumerate() {
        if source.root == target.root {
            continue;
        }
        for (path, f) in source.files.iter() {
            let Some(t) = target.files.get(path) else {
                continue;
            };
            if t.sha256 == f.sha256 || t.size > DIFF_SIZE_CAP || f.size > DIFF_SIZE_CAP {
                continue;
            }
            let read = |root: &std::path::Path| {
                String::from_utf8(std::fs::read(root.join(path.as_str())).ok()?).ok()
            };
            if let (Some(target_text), Some(source_text)) = (read(&target.root), read(&source.root))
            {
                out.push(super::tree::TextPair {
                    source: i,
                    path: path.clone(),
                    target: target_text,
                    source_text,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::{Md5, Sha256};
    use crate::layout::test_support::TempRepo;

    #[test]
    fn a_server_md5_matches_only_the_very_file_the_remote_was_compared_with() {
        let repo = TempRepo::new(None);
        let path = TierPath::parse("config/models/a.yaml").unwrap();
        let file = repo.file(path.as_str());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"replicas: 1\n").unwrap();
        let root = repo.layout.placement_root(&repo.placement);
        let seen = FileState {
            size: 12,
            sha256: Sha256::of(b"replicas: 1\n"),
        };
        let files: BTreeMap<TierPath, FileState> = [(path.clone(), seen.clone())].into();
        let md5 = ServerDigest::Md5(Md5::of(b"replicas: 1\n"));
        let mut digests = LocalDigests::new(&repo.layout);
        assert!(digests.matches(&root, &files, &path, &seen, md5));
        // The remote was compared with another copy of the path (the
        // config scope's mirror, edited to the same size): no identity,
        // though the cache's file is what the server's MD5 names.
        let mirror = FileState {
            size: 12,
            sha256: Sha256::of(b"replicas: 2\n"),
        };
        assert!(!digests.matches(&root, &files, &path, &mirror, md5));
        // Another content under the same size: no identity either.
        let other = ServerDigest::Md5(Md5::of(b"replicas: 3\n"));
        assert!(!digests.matches(&root, &files, &path, &seen, other));
    }

    #[test]
    fn a_file_that_is_no_multipart_object_is_read_once_to_find_out() {
        let repo = TempRepo::new(None);
        let path = TierPath::parse("files/big.bin").unwrap();
        let file = repo.file(path.as_str());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let body = vec![b'.'; 3 << 20];
        std::fs::write(&file, &body).unwrap();
        let root = repo.layout.placement_root(&repo.placement);
        let seen = FileState {
            size: body.len() as u64,
            sha256: Sha256::of(&body),
        };
        let files: BTreeMap<TierPath, FileState> = [(path.clone(), seen.clone())].into();
        // Two parts, but of other bytes.
        let other = crate::digest::MultipartEtag::of_parts(&[[1; 16], [2; 16]]);
        let etag = ServerDigest::Multipart(other);
        for plan in 0..3 {
            let mut digests = LocalDigests::new(&repo.layout);
            assert!(!digests.matches(&root, &files, &path, &seen, etag));
            assert_eq!(
                digests.multipart_reads,
                usize::from(plan == 0),
                "plan {plan}"
            );
            digests.save();
        }
        // Another content at the path is read again.
        let edited = FileState {
            size: seen.size,
            sha256: Sha256::of(b"else"),
        };
        let files: BTreeMap<TierPath, FileState> = [(path.clone(), edited.clone())].into();
        let mut digests = LocalDigests::new(&repo.layout);
        assert!(!digests.matches(&root, &files, &path, &edited, etag));
        assert_eq!(digests.multipart_reads, 1);
    }
}
