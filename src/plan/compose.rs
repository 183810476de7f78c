//! The pure planner: `compose(&Desired, &Observed, &Options) -> Plan`.
//! Every ordering and blocking rule of a plan lives here, and nothing here
//! does I/O: the observation ([`crate::state::observe()`]) holds all it
//! reads.
//!
//! A plan is, in order: leftover temp files removed; definition files
//! mirrored (scope `config`); files moved and duplicates dropped (the
//! layout diff); fetches and re-keying copies from remote sources; the
//! three-way sync's transfers, renames and deletes, computed against the
//! cache as it will be once the moves are done; the old remote objects
//! deleted; the catalog invalidated and the migration record cleared; the
//! trash of earlier applies pruned; the managed-config sentinel strictly
//! last. While anything blocks, nothing old is deleted, no migration is
//! recorded finished and nothing is vouched for. What planning reads
//! beside the observation (interrupted transfers, trash due to go) joins
//! the composed plan through [`amend`], by the same rules.

use crate::plan::action::{DeleteRemote, MirrorConfig, Move, RecordBase, Upload};
use crate::plan::conflict::{NotAFile, ReservedPath, TooLarge, Unholdable};
use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::config::ConflictPolicy;
use crate::layout::{Tier, TierPath};
use crate::state::delete_records::DeletedFile;
use crate::state::managed::config_only;
use crate::state::{
    BaseEntry, Desired, Direction, FileState, Observed, Obstacle, ObstacleKind, RemoteSnapshot,
    Scope,
};

use super::action::Action;
use super::drain::{Drain, drain};
use super::managed::{mirror_actions, sentinel_step};
use super::sync_diff::{Explained, SyncInput, sync_diff};
use super::textdiff::attach_diffs;
use super::{Conflict, Plan, RemoteInfo};

/// How a plan settles conflicts and guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Options {
    pub policy: ConflictPolicy,
    /// Override the delete guards.
    pub force: bool,
    /// With `force`: delete cache files whose content exists nowhere else.
    pub force_delete_local: bool,
    /// `--no-base`: plan as a first sync, whatever the last one recorded.
    pub no_base: bool,
    /// `--no-undo`: deletes and replacements are final for this run.
    pub no_undo: bool,
    pub max_delete_percent: u8,
    /// `[sync] hydration = "lazy"`: a pull records new remote files
    /// instead of downloading them.
    pub lazy: bool,
    /// `--hydrate`: this run downloads what lazy pulls recorded.
    pub hydrate: bool,
    /// `--keep-source`: a drained remote source keeps its objects.
    pub keep_source: bool,
}

/// What planning read beside the observation, for [`amend`].
pub(crate) struct Amendments<'a> {
    /// Interrupted transfers: the remote listing that shows them, now
    /// (seconds), and whether the plan decides on uploads (it pushes every
    /// file; a pull, or `config`, leaves them be).
    pub resume: Option<(&'a RemoteSnapshot, u64, bool)>,
    /// The trash of earlier applies due to go (`[undo]` retention).
    pub prunes: Vec<Action>,
}

/// `plan` with what planning read beside its observation: transfers that
/// resume (and aborts of those that cannot, before the transfers), then
/// the trash due to go, before the managed-config sentinel, which stays
/// strictly last.
pub(crate) fn amend(plan: &mut Plan, amendments: Amendments<'_>) {
    if let Some((snapshot, now, uploads)) = amendments.resume {
        super::resume::add(plan, snapshot, now, uploads);
    }
    let at = plan
        .actions
        .iter()
        .position(|a| matches!(a, Action::PublishSentinel(_)))
        .unwrap_or(plan.actions.len());
    plan.actions.splice(at..at, amendments.prunes);
}

/// The plan that takes `observed` to `desired`.
pub(crate) fn compose(desired: &Desired, observed: &Observed, options: &Options) -> Plan {
    let scope = desired.scope;
    let mut plan = super::diff(desired, observed);
    if let Some(mirror) = observed.mirror.as_ref().filter(|_| scope == Scope::Config) {
        let cache = config_only(&observed.placements[0].files);
        plan.actions.extend(mirror_actions(mirror, &cache));
    }
    let any_source = observed.placements[1..].iter().any(|p| p.remote.is_some());
    if observed.remote.is_some() || any_source {
        add_remote(scope, observed, options, &mut plan);
    }
    attach_diffs(&mut plan, &observed.texts);
    plan.no_undo = options.no_undo;
    plan
}

/// The remote side: draining remote sources (fetch or re-key what only
/// they hold, delete them last) and the three-way sync with the target's
/// bucket, against the cache as it will be once the plan's moves are done.
fn add_remote(scope: Scope, observed: &Observed, options: &Options, plan: &mut Plan) {
    let mut local = cache_after_plan(scope, observed, plan);
    let target = observed.remote.as_ref();
    let drain = drain(observed, target, options.keep_source);
    let reserved = key_conflicts(observed);
    let direction = scope.direction();
    let mut sync = SyncStep::default();
    if let (Some(direction), Some(snapshot)) = (direction, target) {
        sync = sync_step(
            scope, observed, options, plan, snapshot, direction, &drain, &mut local,
        );
    }
    let mut blocked =
        !drain.conflicts.is_empty() || !sync.conflicts.is_empty() || !reserved.is_empty();
    add_in_order(plan, drain.transfers, sync.actions, drain.deletes);
    plan.conflicts.extend(reserved);
    plan.conflicts.extend(drain.conflicts);
    plan.conflicts.extend(sync.conflicts);
    if let (Some(_), Some(d)) = (target, direction)
        && d != Direction::Pull
    {
        blocked |= add_sentinel(scope, observed, &local, plan);
    }
    if blocked {
        // Nothing old is deleted and no migration is recorded finished
        // while anything blocks.
        plan.actions
            .retain(|a| !matches!(a, Action::FinishMigration | Action::DeleteSourceRemote(_)));
    }
    if !plan.conflicts.is_empty() {
        // Nothing is vouched for while anything blocks.
        plan.actions
            .retain(|a| !matches!(a, Action::PublishSentinel(_)));
    }
    plan.other_clones = other_clones(observed);
    if let Some(snapshot) = target {
        let mut info = remote_info(snapshot, options, sync.resolved);
        info.skipped_local = skipped_local(&observed.placements[0].obstacles, &plan.conflicts);
        plan.remote = Some(info);
    }
}

/// The other clones whose notes are in a remote source (one this plan
/// drains): whoever still syncs with the place being left.
fn other_clones(observed: &Observed) -> Vec<super::OtherClone> {
    observed.placements[1..]
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, p.remote.as_ref()?)))
        .flat_map(|(source, r)| {
            r.clone_notes
                .iter()
                .filter(|n| !n.mine)
                .map(move |n| super::OtherClone {
                    source,
                    clone: n.clone.clone(),
                    noted: n.modified,
                })
        })
        .collect()
}

/// What in the cache a sync leaves alone and no conflict names: a
/// symlink, special file or unkeyable name where no synced file is (one
/// where a synced file is, or under such a directory, is a `not-a-file`
/// conflict). Said in the plan, never skipped silently.
fn skipped_local(obstacles: &[Obstacle], conflicts: &[Conflict]) -> Vec<Obstacle> {
    let in_conflict: Vec<&str> = conflicts
        .iter()
        .filter_map(|c| match c {
            Conflict::NotAFile(NotAFile { at, .. }) => Some(at.as_str()),
            _ => None,
        })
        .collect();
    let named = |path: &str| {
        in_conflict.iter().any(|at| {
            at.is_empty()
                || path == *at
                || path
                    .strip_prefix(*at)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    };
    obstacles
        .iter()
        .filter(|o| {
            matches!(
                o.kind,
                ObstacleKind::Symlink | ObstacleKind::SpecialFile | ObstacleKind::BadName
            )
        })
        .filter(|o| !named(&o.path))
        .cloned()
        .collect()
}

/// The cache as it will be after the plan's moves and mirror copies.
/// Borrowed where nothing changes it: each of these maps is tens of
/// megabytes at 100,000 files.
fn cache_after_plan<'o>(
    scope: Scope,
    observed: &'o Observed,
    plan: &Plan,
) -> Cow<'o, BTreeMap<TierPath, FileState>> {
    let mut local: Cow<BTreeMap<_, FileState>> = Cow::Borrowed(&observed.placements[0].files);
    for a in &plan.actions {
        if let Action::Move(Move {
            path, size, sha256, ..
        })
        | Action::MirrorConfig(MirrorConfig {
            path, size, sha256, ..
        }) = a
        {
            local.to_mut().insert(
                path.clone(),
                FileState {
                    size: *size,
                    sha256: *sha256,
                },
            );
        }
    }
    if scope == Scope::Config {
        local = Cow::Owned(config_only(&local));
    }
    local
}

/// Objects at the catalog's path (repo-local in every clone), and keys
/// this cache cannot hold.
fn key_conflicts(observed: &Observed) -> Vec<Conflict> {
    let target = observed.remote.as_ref();
    observed.placements[1..]
        .iter()
        .filter_map(|p| p.remote.as_ref())
        .chain(target)
        .flat_map(|s| s.reserved.iter())
        .map(|key| Conflict::ReservedPath(ReservedPath { key: key.clone() }))
        .chain(target.into_iter().flat_map(|s| {
            s.unholdable.iter().map(|u| {
                Conflict::Unholdable(Unholdable {
                    key: u.key.clone(),
                    other: u.other.clone(),
                    why: u.why.clone(),
                })
            })
        }))
        .collect()
}

/// What the three-way sync adds to a plan.
#[derive(Default)]
struct SyncStep {
    actions: Vec<Action>,
    conflicts: Vec<Conflict>,
    resolved: Vec<Conflict>,
}

/// The three-way sync of the cache (as the plan leaves it) with the
/// remote, in `direction`, and the delete bookkeeping that rides on it.
#[allow(clippy::too_many_arguments)]
fn sync_step(
    scope: Scope,
    observed: &Observed,
    options: &Options,
    plan: &Plan,
    snapshot: &RemoteSnapshot,
    direction: Direction,
    drain: &Drain,
    local: &mut Cow<BTreeMap<TierPath, FileState>>,
) -> SyncStep {
    // Re-keyed paths whose cache file moves too are settled by the copy.
    let mut remote_files = Cow::Borrowed(&snapshot.files);
    let mut base = Cow::Borrowed(&snapshot.base);
    let mut unhydrated = Cow::Borrowed(&snapshot.unhydrated);
    if options.no_base {
        base = Cow::Owned(BTreeMap::new());
        unhydrated = Cow::Owned(BTreeMap::new());
    }
    if scope == Scope::Config {
        remote_files = Cow::Owned(config_only(&remote_files));
        base = Cow::Owned(config_only(&base));
        unhydrated = Cow::Owned(config_only(&unhydrated));
    }
    if !drain.settled.is_empty() {
        // What is left, not a copy of all then emptied (a move's million
        // are all settled: two maps copied whole for nothing).
        remote_files = Cow::Owned(unsettled(&remote_files, drain));
        *local = Cow::Owned(unsettled(local, drain));
    }
    if !drain.incoming.is_empty() {
        remote_files.to_mut().extend(drain.incoming.clone());
    }
    // Modification times only matter to `--conflict newer`.
    let no_times = BTreeMap::new();
    let local_modified = if options.policy == ConflictPolicy::Newer {
        &observed.modified
    } else {
        &no_times
    };
    let explained = explained(snapshot);
    let diff = sync_diff(&SyncInput {
        local,
        local_other: &observed.placements[0].obstacles,
        local_modified,
        remote: &remote_files,
        base: &base,
        unhydrated: &unhydrated,
        lazy: options.lazy && !options.hydrate,
        direction,
        policy: options.policy,
        max_delete_percent: options.max_delete_percent,
        force: options.force,
        force_delete_local: options.force_delete_local,
        explained: &explained,
    });
    let mut step = SyncStep {
        actions: diff.actions,
        conflicts: diff.conflicts,
        resolved: diff.resolved,
    };
    too_large(plan, &mut step);
    left_to_copies(&mut step.actions, drain);
    let drain_writes = drain
        .transfers
        .iter()
        .chain(&drain.deletes)
        .any(Action::writes_remote);
    delete_bookkeeping(options, snapshot, &base, drain_writes, &mut step.actions);
    step
}

/// The entries of `map` whose paths `drain` does not settle.
fn unsettled<V: Clone>(map: &BTreeMap<TierPath, V>, drain: &Drain) -> BTreeMap<TierPath, V> {
    map.iter()
        .filter(|(p, _)| !drain.settles(p))
        .map(|(p, v)| (p.clone(), v.clone()))
        .collect()
}

/// A copy records what only the remote holds at the version it wrote,
/// which no plan can know before: the sync's record of it goes.
fn left_to_copies(actions: &mut Vec<Action>, drain: &Drain) {
    if drain.incoming.is_empty() {
        return;
    }
    for action in actions.iter_mut() {
        if let Action::RecordBase(r) = action {
            r.unhydrated
                .retain(|u| !drain.incoming.contains_key(&u.path));
        }
    }
    actions.retain(|a| {
        !matches!(a, Action::RecordBase(r)
            if r.add.is_empty() && r.unhydrated.is_empty() && r.drop.is_empty())
    });
}

/// Deletes swamp made on purpose: the other clones' records, and this
/// clone's own since its last sync. (An expired record explains nothing,
/// pruned yet or not.)
fn explained(snapshot: &RemoteSnapshot) -> Explained {
    Explained {
        in_cache: snapshot
            .deleted_here
            .iter()
            .map(|(p, s)| (p.clone(), *s))
            .collect(),
        in_remote: snapshot
            .delete_records
            .iter()
            .filter(|r| !r.expired)
            .flat_map(|r| &r.files)
            .map(|f| (f.path.clone(), f.version.clone()))
            .collect(),
    }
}

/// What the remote cannot hold is said now, not found out by a failed
/// upload in the middle of the apply.
fn too_large(plan: &Plan, step: &mut SyncStep) {
    if let Some(limit) = plan.target.datastore.max_object_size() {
        step.actions.retain(|a| match a {
            Action::Upload(Upload { path, size, .. }) if *size > limit => {
                step.conflicts.push(Conflict::TooLarge(TooLarge {
                    path: path.clone(),
                    size: *size,
                    limit,
                }));
                false
            }
            _ => true,
        });
    }
}

/// This clone's own deletes that reach the bucket are recorded there, for
/// the other clones' guards; and how far this clone has passed the other
/// clones' records (what the last clone to pass them prunes).
fn delete_bookkeeping(
    options: &Options,
    snapshot: &RemoteSnapshot,
    base: &BTreeMap<TierPath, BaseEntry>,
    drain_writes: bool,
    sync_actions: &mut Vec<Action>,
) {
    // This clone's own deletes that reach the bucket are recorded
    // there, for the other clones' guards.
    let files: Vec<DeletedFile> = sync_actions
        .iter()
        .filter_map(|a| match a {
            Action::DeleteRemote(DeleteRemote { path, version, .. }) => {
                let sha = snapshot.deleted_here.get(path)?;
                base.get(path)
                    .is_some_and(|b| b.sha256 == *sha && b.version == *version)
                    .then(|| DeletedFile {
                        path: path.clone(),
                        sha256: *sha,
                        version: version.to_string(),
                    })
            }
            _ => None,
        })
        .collect();
    // How far this clone has passed the other clones' records, and
    // what the last clone to pass them prunes.
    // (Without the base, apply starts from none: so does this.)
    let no_base = BTreeMap::new();
    let progress = crate::plan::delete_notes::progress(
        &snapshot.delete_records,
        &snapshot.clone_notes,
        if options.no_base {
            &no_base
        } else {
            &snapshot.base
        },
        sync_actions,
    );
    let after =
        crate::plan::delete_notes::newest_stem(&snapshot.delete_records, &snapshot.clone_notes)
            .map(str::to_string);
    // The note and the prunes ride along with a run that writes the bucket
    // anyway: a run that would write only them is no run at all (and a
    // clone with read-only credentials could not), so a clone that only
    // pulls is silent; records wait for it up to their age bound.
    if files.is_empty() && !drain_writes && !sync_actions.iter().any(Action::writes_remote) {
        return;
    }
    sync_actions.extend(progress.actions(files, after));
}

/// Adds a remote step's actions in order: moves, fetches and copies, sync
/// transfers, old objects deleted, then the catalog and the migration
/// record.
fn add_in_order(
    plan: &mut Plan,
    transfers: Vec<Action>,
    sync_actions: Vec<Action>,
    deletes: Vec<Action>,
) {
    let tail_at = plan
        .actions
        .iter()
        .position(|a| matches!(a, Action::InvalidateCatalog | Action::FinishMigration))
        .unwrap_or(plan.actions.len());
    let tail: Vec<_> = plan.actions.drain(tail_at..).collect();
    let touches_data = transfers.iter().chain(&sync_actions).any(|a| {
        matches!(
            a,
            Action::Download(_)
                | Action::DeleteLocal(_)
                | Action::RenameLocal(_)
                | Action::Fetch(_)
        ) && a.path().is_some_and(|p| p.tier() == Tier::Data)
    });
    // Exactly what is added, with room for the catalog's invalidation and
    // the sentinel (a plan of 100,000 transfers grown by one more push
    // would double its capacity: 12 MiB for nothing). The copies, or else
    // the sync's actions (sized by `sync_diff` with room for these), are
    // the list itself, never copied into a second one: what comes before
    // them is put in front (a million copies held twice were 104 MB at a
    // bucket move's peak).
    let after = deletes.len() + 2 + tail.len();
    let head = std::mem::take(&mut plan.actions);
    let (mut actions, rest) = if transfers.is_empty() {
        (sync_actions, Vec::new())
    } else {
        (transfers, sync_actions)
    };
    actions.reserve_exact(rest.len() + head.len() + after);
    actions.extend(rest);
    actions.splice(0..0, head);
    plan.actions = actions;
    plan.actions.extend(deletes);
    if touches_data && !tail.iter().any(|a| matches!(a, Action::InvalidateCatalog)) {
        plan.actions.push(Action::InvalidateCatalog);
    }
    plan.actions.extend(tail);
}

/// The sentinel last, after every object it vouches for (pushes only).
/// Returns whether it conflicts.
fn add_sentinel(
    scope: Scope,
    observed: &Observed,
    local: &BTreeMap<TierPath, FileState>,
    plan: &mut Plan,
) -> bool {
    let (Some(mirror), Some(snapshot), Some(sentinel)) = (
        observed.mirror.as_ref(),
        observed.remote.as_ref(),
        observed.sentinel.as_ref(),
    ) else {
        return false;
    };
    let (action, conflict) = sentinel_step(
        scope,
        mirror,
        local,
        &observed.placements[0].files,
        sentinel,
    );
    plan.actions.extend(action);
    let blocks = conflict.is_some();
    plan.conflicts.extend(conflict);
    // A sentinel published by a run killed before it recorded it: the
    // config scope leaves the sentinel out of its sync diff, so record
    // it here (a plan of scope all would, and never converge with this
    // one otherwise).
    if scope == Scope::Config
        && let Some(record) = unrecorded_sentinel(snapshot, &observed.placements[0].files)
        && !plan
            .actions
            .iter()
            .any(|a| matches!(a, Action::PublishSentinel(_)))
    {
        plan.actions.push(Action::RecordBase(RecordBase {
            add: vec![record],
            unhydrated: Vec::new(),
            drop: Vec::new(),
        }));
    }
    blocks
}

/// What the plan says of its remote.
fn remote_info(
    snapshot: &RemoteSnapshot,
    options: &Options,
    resolved: Vec<Conflict>,
) -> RemoteInfo {
    RemoteInfo {
        url: snapshot.url.clone(),
        key_prefix: snapshot.key_prefix.clone(),
        objects: snapshot.objects,
        batch_delete: false,
        prechecked: snapshot.prechecked.clone(),
        multipart_threshold: snapshot.multipart_threshold,
        conflict_policy: options.policy,
        forced: options.force,
        forced_delete_local: options.force && options.force_delete_local,
        resolved,
        remote_id: snapshot.identity.as_ref().map(|i| i.id.clone()),
        base_reset: match (&snapshot.base_reset, options.no_base) {
            (Some(why), _) => Some(why.clone()),
            (None, true) if !snapshot.base.is_empty() => {
                Some("--no-base sets the record of the last sync aside".to_string())
            }
            (None, _) => None,
        },
        base_ignored: options.no_base,
        hydrate: options.hydrate,
        unhydrated: snapshot.unhydrated.len(),
        folder_markers: snapshot.folder_markers,
        unmanaged: snapshot.unmanaged.clone(),
        skipped_local: Vec::new(),
    }
}

/// The sentinel, when the cache and the remote hold the same one and the
/// sync base does not record it so.
fn unrecorded_sentinel(
    snapshot: &crate::state::RemoteSnapshot,
    cache: &BTreeMap<crate::layout::TierPath, FileState>,
) -> Option<super::action::BaseRecord> {
    let path = crate::state::managed::sentinel_path();
    super::sync_diff::unrecorded_agreement(
        &path,
        cache.get(&path)?,
        snapshot.files.get(&path)?,
        snapshot.base.get(&path),
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::{DatastoreConfig, Namespace, Placement};
    use crate::state::managed::{Mirror, RemoteSentinel};
    use crate::state::{BaseEntry, PlacementState, RemoteObject, RemoteSnapshot};

    use crate::testutil::tp;

    fn s3(ns: Option<&str>) -> Placement {
        Placement {
            datastore: DatastoreConfig::S3 {
                bucket: "b".into(),
                prefix: Some("swamp".into()),
                region: None,
                endpoint: None,
            },
            namespace: ns.map(|n| Namespace::parse(n).unwrap()),
        }
    }

    fn file(sha: &str) -> FileState {
        FileState {
            size: 1,
            sha256: (*sha).into(),
        }
    }

    fn placement(p: Placement, files: &[(&str, &str)]) -> PlacementState {
        let root = PathBuf::from("/cache").join(p.namespace.as_ref().map_or("", |n| n.as_str()));
        let label = root.display().to_string();
        let mut state = PlacementState::empty(p, root, label);
        for (path, sha) in files {
            std::sync::Arc::make_mut(&mut state.files).insert(tp(path), file(sha));
        }
        state
    }

    fn snapshot(prefix: &str, files: &[(&str, &str)], base: &[(&str, &str)]) -> RemoteSnapshot {
        RemoteSnapshot {
            url: format!("s3://b/{prefix}"),
            unhydrated: BTreeMap::new(),
            key_prefix: prefix.into(),
            files: files
                .iter()
                .map(|(p, sha)| {
                    (
                        tp(p),
                        RemoteObject::new(1, format!("v-{sha}").into())
                            .with_sha256(Some((*sha).into())),
                    )
                })
                .collect(),
            objects: files.len(),
            interrupted: Default::default(),
            reserved: vec![],
            unholdable: vec![],
            folder_markers: 0,
            unmanaged: vec![],
            identity: None,
            base_reset: None,
            prechecked: Vec::new(),
            multipart_threshold: None,
            manifest: None,
            base: base
                .iter()
                .map(|(p, sha)| {
                    (
                        tp(p),
                        BaseEntry {
                            sha256: (*sha).into(),
                            size: 1,
                            version: format!("v-{sha}").into(),
                        },
                    )
                })
                .collect(),
            delete_records: Vec::new(),
            // Noted already: these plans are about other things.
            history: Vec::new(),
            clone_notes: vec![crate::state::delete_records::CloneNote {
                key: "n".into(),
                version: "1".into(),
                clone: "me".into(),
                passed: crate::state::delete_records::NO_STEM.into(),
                mine: true,
                modified: None,
            }],
            deleted_here: BTreeMap::new(),
            listed: Default::default(),
        }
    }

    fn options() -> Options {
        Options {
            policy: ConflictPolicy::Fail,
            force: false,
            force_delete_local: false,
            no_base: false,
            lazy: false,
            hydrate: false,
            no_undo: false,
            max_delete_percent: 100,
            keep_source: false,
        }
    }

    fn kinds(plan: &Plan) -> Vec<&'static str> {
        plan.actions.iter().map(Action::kind).collect()
    }

    fn desired(scope: Scope, target: Placement, sources: Vec<Placement>) -> Desired {
        Desired {
            scope,
            target,
            sources,
        }
    }

    #[test]
    fn the_sentinel_is_last_and_never_planned_while_anything_blocks() {
        let target = s3(Some("alpha"));
        let mirror = Mirror {
            sources: vec!["models".into()],
            files: [(tp("config/models/a.yaml"), file("a"))]
                .into_iter()
                .collect(),
        };
        let mut observed = Observed {
            placements: vec![placement(target.clone(), &[])],
            remote: Some(snapshot("swamp/alpha/", &[], &[])),
            mirror: Some(mirror),
            sentinel: Some(RemoteSentinel::Absent),
            ..Observed::default()
        };
        let d = desired(Scope::Config, target, vec![]);
        let plan = compose(&d, &observed, &options());
        assert_eq!(
            kinds(&plan),
            ["mirror-config", "upload", "publish-sentinel"]
        );

        // A reserved object anywhere blocks: nothing is vouched for.
        observed.remote.as_mut().unwrap().reserved = vec!["swamp/alpha/data/_catalog.db".into()];
        let plan = compose(&d, &observed, &options());
        assert_eq!(plan.conflicts[0].kind(), "reserved-path");
        assert!(
            !kinds(&plan).contains(&"publish-sentinel"),
            "{:?}",
            kinds(&plan)
        );
    }

    /// Issue 12: a file the remote cannot hold (over 5 TiB on S3 and GCS)
    /// is a conflict at plan time, not an upload that fails mid-apply.
    #[test]
    fn a_file_larger_than_the_remote_holds_is_a_conflict_before_apply() {
        let target = s3(None);
        let mut here = placement(target.clone(), &[("files/small", "a")]);
        std::sync::Arc::make_mut(&mut here.files).insert(
            tp("files/disk.img"),
            FileState {
                size: (5 << 40) + 1,
                sha256: "b".into(),
            },
        );
        let observed = Observed {
            placements: vec![here],
            remote: Some(snapshot("swamp/", &[], &[])),
            ..Observed::default()
        };
        let plan = compose(&desired(Scope::Push, target, vec![]), &observed, &options());
        assert_eq!(kinds(&plan), ["upload"]);
        assert_eq!(
            plan.conflicts,
            [Conflict::TooLarge(TooLarge {
                path: tp("files/disk.img"),
                size: (5 << 40) + 1,
                limit: 5 << 40,
            })]
        );
    }

    #[test]
    fn a_sync_that_touches_data_invalidates_the_catalog_after_its_transfers() {
        let target = s3(None);
        let observed = Observed {
            placements: vec![placement(target.clone(), &[])],
            remote: Some(snapshot(
                "swamp/",
                &[("data/m/1/raw", "a"), ("outputs/x", "b")],
                &[],
            )),
            ..Observed::default()
        };
        let plan = compose(&desired(Scope::Sync, target, vec![]), &observed, &options());
        assert_eq!(kinds(&plan), ["download", "download", "invalidate-catalog"]);
        // Outputs only: the catalog is left alone.
        let observed = Observed {
            remote: Some(snapshot("swamp/", &[("outputs/x", "b")], &[])),
            ..observed
        };
        let plan = compose(
            &desired(Scope::Sync, s3(None), vec![]),
            &observed,
            &options(),
        );
        assert_eq!(kinds(&plan), ["download"]);
    }

    #[test]
    fn nothing_old_is_deleted_and_no_migration_finishes_while_anything_blocks() {
        // A namespace set on a remote repository: the solo keys are
        // re-keyed into the namespace, then deleted, then the record cleared.
        let target = s3(Some("alpha"));
        let source = s3(None);
        let mut solo = placement(source.clone(), &[]);
        solo.root = PathBuf::from("/cache-solo");
        solo.remote = Some(snapshot("swamp/", &[("outputs/x", "x")], &[]));
        let observed = Observed {
            placements: vec![placement(target.clone(), &[]), solo],
            remote: Some(snapshot("swamp/alpha/", &[], &[])),
            ..Observed::default()
        };
        let d = desired(Scope::All, target, vec![source]);
        let plan = compose(&d, &observed, &options());
        assert!(!plan.has_conflicts(), "{:?}", plan.conflicts);
        assert_eq!(
            kinds(&plan),
            [
                "copy-remote",
                "download",
                "delete-source-remote",
                "finish-migration"
            ]
        );

        // A conflict in the target's own sync blocks both.
        let mut blocked = observed.clone();
        std::sync::Arc::make_mut(&mut blocked.placements[0].files)
            .insert(tp("data/m/1/raw"), file("mine"));
        blocked.remote = Some(snapshot(
            "swamp/alpha/",
            &[("data/m/1/raw", "theirs")],
            &[("data/m/1/raw", "base")],
        ));
        let plan = compose(&d, &blocked, &options());
        assert_eq!(plan.conflicts[0].kind(), "both-changed");
        let k = kinds(&plan);
        assert!(!k.contains(&"delete-source-remote"), "{k:?}");
        assert!(!k.contains(&"finish-migration"), "{k:?}");
    }

    #[test]
    fn delete_guards_block_unless_forced() {
        let target = s3(None);
        let files: Vec<(String, String)> = (0..4)
            .map(|i| (format!("outputs/{i}"), format!("s{i}")))
            .collect();
        let pairs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, s)| (p.as_str(), s.as_str()))
            .collect();
        // Every file the last sync recorded is gone from the cache.
        let observed = Observed {
            placements: vec![placement(target.clone(), &[])],
            remote: Some(snapshot("swamp/", &pairs, &pairs)),
            ..Observed::default()
        };
        let d = desired(Scope::Sync, target, vec![]);
        let guarded = compose(
            &d,
            &observed,
            &Options {
                max_delete_percent: 50,
                ..options()
            },
        );
        assert!(
            guarded.conflicts.iter().all(|c| c.kind() == "delete-guard") && guarded.has_conflicts(),
            "{:?}",
            guarded.conflicts
        );
        let forced = compose(
            &d,
            &observed,
            &Options {
                force: true,
                force_delete_local: false,
                no_base: false,
                no_undo: false,
                max_delete_percent: 50,
                ..options()
            },
        );
        assert!(!forced.has_conflicts());
        assert_eq!(
            kinds(&forced)
                .iter()
                .filter(|k| **k == "delete-remote")
                .count(),
            4
        );
        assert!(forced.remote.as_ref().unwrap().forced);
    }
}
