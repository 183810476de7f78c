//! Draining remote sources (pure): when the desired datastore moves off a
//! bucket (s3 → local) or to another key prefix in the same bucket (a
//! namespace set or unset on a remote repository), what only the old
//! remote holds must reach the target before the old keys are deleted.
//!
//! - target local: objects missing from the old cache are fetched straight
//!   to the target (the cache copies move with the layout diff);
//! - target remote (same bucket): every object is copied server-side to its
//!   new key; copies whose cache file moves too are then in agreement.
//!
//! The old objects are deleted last, each only at the version observed.

use crate::plan::action::{CopyRemote, DeleteSourceRemote, Fetch, MovedTo};
use crate::plan::conflict::{DifferentAtTarget, SourceDiverged};
use std::collections::{BTreeMap, BTreeSet};

use crate::digest::Sha256;
use crate::layout::{ObjectKey, TierPath};
use crate::state::{Observed, PlacementState, RemoteSnapshot};

use super::Conflict;
use super::action::{Action, RemoteObjectRef};
use super::sync_diff::RemoteFile;

#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Drain {
    /// Fetches and copies, in source then path order.
    pub transfers: Vec<Action>,
    /// One delete-source-remote per drained source.
    pub deletes: Vec<Action>,
    pub conflicts: Vec<Conflict>,
    /// Paths copied whose cache file also moves: the sync leaves them be.
    /// Sorted, each once ([`Drain::settles`]): a set inserted into path by
    /// path left its nodes half empty, 34 MB at a million.
    pub settled: Vec<TierPath>,
    /// Paths copied that only the remote had: the sync downloads them.
    pub incoming: BTreeMap<TierPath, RemoteFile>,
}

impl Drain {
    /// Whether the copy of `path` settles it (see [`Drain::settled`]).
    pub(crate) fn settles(&self, path: &TierPath) -> bool {
        self.settled.binary_search(path).is_ok()
    }
}

/// `target_remote`: the target's own remote snapshot when it is remote.
/// `keep_source`: the sources' objects stay (only the marker is left).
pub(crate) fn drain(
    observed: &Observed,
    target_remote: Option<&RemoteSnapshot>,
    keep_source: bool,
) -> Drain {
    let mut out = Drain::default();
    // Nothing drains (every sync but a move's): no set of the target's
    // paths (34 bytes a file, at a no-op sync's peak).
    if observed.placements[1..].iter().all(|s| s.remote.is_none()) {
        return out;
    }
    let target = &observed.placements[0];
    // Only a local target's obstacles are looked up in it.
    let target_files: BTreeSet<&str> = match target_remote {
        None => target.files.keys().map(TierPath::as_str).collect(),
        Some(_) => BTreeSet::new(),
    };
    let mut blocked = super::layout_diff::Blocked::default();
    for (i, source) in observed.placements[1..].iter().enumerate() {
        let Some(remote) = &source.remote else {
            continue;
        };
        let conflicts_before = out.conflicts.len();
        let streamed = !source
            .placement
            .datastore
            .copies_server_side_to(&target.placement.datastore);
        // Sized once: a million copies doubled their way up held 1.5 times
        // their size at the last doubling.
        out.transfers.reserve(remote.files.len());
        for (path, obj) in &remote.files {
            let cache = source.files.get(path);
            let sha = remote.sha_of(path, obj);
            if let Some(c) = cache
                && sha != Some(c.sha256)
            {
                out.conflicts.push(Conflict::SourceDiverged(SourceDiverged {
                    path: path.clone(),
                    source: i,
                    cache_sha256: c.sha256.hex(),
                    remote_sha256: sha,
                }));
                continue;
            }
            match target_remote {
                None => to_local(
                    &mut out,
                    &mut blocked,
                    target,
                    &target_files,
                    i,
                    path,
                    (obj, sha),
                    cache.is_some(),
                ),
                Some(tr) => to_remote(
                    &mut out,
                    tr,
                    (i, streamed),
                    path,
                    (obj, sha),
                    cache.is_some(),
                ),
            }
        }
        if out.conflicts.len() == conflicts_before && blocked.is_empty() {
            out.deletes
                .extend(delete_source(i, remote, &target.placement, keep_source));
        }
    }
    out.conflicts.extend(blocked.into_conflicts());
    // Each source's paths come in order; sources after one another do not.
    out.settled.sort_unstable();
    out.settled.dedup();
    out
}

/// A source object drained into a local target: fetched, unless the
/// cache copy moves (the layout diff's) or something is in the way.
#[allow(clippy::too_many_arguments)]
fn to_local(
    out: &mut Drain,
    blocked: &mut super::layout_diff::Blocked,
    target: &PlacementState,
    target_files: &BTreeSet<&str>,
    i: usize,
    path: &TierPath,
    (obj, sha): (&RemoteFile, Option<Sha256>),
    in_cache: bool,
) {
    if in_cache {
        return; // the layout diff moves the cache copy
    }
    match target.files.get(path) {
        Some(t) if sha == Some(t.sha256) => {}
        Some(t) => out
            .conflicts
            .push(Conflict::DifferentAtTarget(DifferentAtTarget {
                path: path.clone(),
                source: i,
                source_sha256: sha.map(|s| s.hex()).unwrap_or_default(),
                target_sha256: t.sha256.hex(),
                source_size: Some(obj.size),
                target_size: Some(t.size),
                diff: None,
            })),
        None => match super::layout_diff::obstacle_for(target, target_files, path) {
            // Something at the target where the fetch must write.
            Some((at, kind)) => {
                blocked.add(at, kind, path);
            }
            None => out.transfers.push(Action::Fetch(Fetch {
                path: path.clone(),
                source: i,
                size: obj.size,
                version: obj.version.clone(),
                sha256: sha,
            })),
        },
    }
}

/// A source object copied to the target remote (server-side, or streamed
/// across providers), unless the target already holds it (adopted) or
/// other content there (a conflict).
fn to_remote(
    out: &mut Drain,
    tr: &RemoteSnapshot,
    (i, streamed): (usize, bool),
    path: &TierPath,
    (obj, sha): (&RemoteFile, Option<Sha256>),
    in_cache: bool,
) {
    let Some(sha256) = sha else {
        out.conflicts.push(Conflict::SourceDiverged(SourceDiverged {
            path: path.clone(),
            source: i,
            cache_sha256: String::new(),
            remote_sha256: None,
        }));
        return;
    };
    match tr.files.get(path).map(|t| (t, tr.sha_of(path, t))) {
        Some((_, there)) if there == Some(sha256) => return,
        Some((t, there)) => {
            out.conflicts
                .push(Conflict::DifferentAtTarget(DifferentAtTarget {
                    path: path.clone(),
                    source: i,
                    source_sha256: sha256.hex(),
                    target_sha256: there.map(|s| s.hex()).unwrap_or_default(),
                    source_size: Some(obj.size),
                    target_size: Some(t.size),
                    diff: None,
                }));
            return;
        }
        None => {}
    }
    if in_cache {
        out.settled.push(path.clone());
    } else {
        out.incoming.insert(
            path.clone(),
            RemoteFile::new(obj.size, String::new().into()).with_sha256(Some(sha256)),
        );
    }
    out.transfers.push(Action::CopyRemote(CopyRemote {
        path: path.clone(),
        source: i,
        size: obj.size,
        version: obj.version.clone(),
        sha256,
        in_cache,
        streamed,
    }));
}

/// The delete of what source `i` holds once all of it is at `target`
/// (only the marker, with `keep_source`), when it holds anything.
fn delete_source(
    i: usize,
    remote: &RemoteSnapshot,
    target: &crate::config::Placement,
    keep_source: bool,
) -> Option<Action> {
    if drained_count(remote) == 0 {
        return None;
    }
    // Kept, they are not listed (a million keys made for nothing).
    let objects = if keep_source {
        Vec::new()
    } else {
        drained_objects(remote)
    };
    Some(Action::DeleteSourceRemote(DeleteSourceRemote {
        source: i,
        objects,
        moved_to: Some(moved_to(target)),
    }))
}

/// Where a drained source's clones are told the datastore went.
fn moved_to(target: &crate::config::Placement) -> MovedTo {
    let (to, spec) = crate::state::moved::named(target);
    MovedTo { to, spec }
}

/// How many objects [`drained_objects`] names.
fn drained_count(remote: &RemoteSnapshot) -> usize {
    remote.files.len()
        + usize::from(remote.manifest.is_some())
        + usize::from(remote.identity.is_some())
        + remote.delete_records.len()
        + remote.clone_notes.len()
        + remote.history.len()
}

/// Every object a drained source remote holds that goes with it: its
/// files, its manifest, its id, its clones' delete records and notes.
fn drained_objects(remote: &RemoteSnapshot) -> Vec<RemoteObjectRef> {
    // Sized once for all of them: a million files filled the list to the
    // brim, and the next push doubled it (48 MB more).
    let mut objects = Vec::with_capacity(drained_count(remote));
    // Each key the prefix and the listed path, sharing both: a million
    // keys written out whole were 37 MB.
    let prefix = arcstr::ArcStr::from(remote.key_prefix.as_str());
    objects.extend(remote.files.iter().map(|(path, obj)| RemoteObjectRef {
        key: ObjectKey::under(&prefix, path),
        version: obj.version.clone(),
    }));
    if let Some(version) = &remote.manifest {
        objects.push(RemoteObjectRef {
            key: format!("{}.namespace.json", remote.key_prefix).into(),
            version: version.clone().into(),
        });
    }
    // A drained remote keeps no id: every clone's base made with it
    // is then no base, so none of them deletes what it still holds.
    if let Some(identity) = &remote.identity {
        objects.push(RemoteObjectRef {
            key: format!("{}.swamp/remote-id.json", remote.key_prefix).into(),
            version: identity.version.clone().into(),
        });
    }
    // Nor its clones' delete records and notes: they speak of
    // bases that are no bases any more. Nor the history of the place: the
    // move's own record, at the new place, names what it deleted here.
    objects.extend(
        remote
            .delete_records
            .iter()
            .map(|r| (&r.key, &r.version))
            .chain(remote.clone_notes.iter().map(|n| (&n.key, &n.version)))
            .chain(remote.history.iter().map(|h| (&h.key, &h.version)))
            .map(|(key, version)| RemoteObjectRef {
                key: key.as_str().into(),
                version: version.clone().into(),
            }),
    );
    debug_assert_eq!(objects.len(), drained_count(remote));
    objects
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::{DatastoreConfig, Namespace, Placement};
    use crate::state::{FileState, PlacementState, RemoteObject};

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

    fn snapshot(prefix: &str, files: &[(&str, &str)], manifest: bool) -> RemoteSnapshot {
        RemoteSnapshot {
            url: format!("s3://b/{prefix}"),
            key_prefix: prefix.into(),
            files: files
                .iter()
                .map(|(p, sha)| {
                    (
                        tp(p),
                        RemoteObject::new(1, format!("v-{p}").into())
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
            manifest: manifest.then(|| "m1".into()),
            base: BTreeMap::new(),
            unhydrated: BTreeMap::new(),
            delete_records: Vec::new(),
            clone_notes: Vec::new(),
            history: Vec::new(),
            deleted_here: BTreeMap::new(),
            listed: Default::default(),
        }
    }

    fn placement(
        p: Placement,
        files: &[(&str, &str)],
        remote: Option<RemoteSnapshot>,
    ) -> PlacementState {
        PlacementState {
            placement: p,
            root: PathBuf::from("/cache"),
            label: "/cache".into(),
            files: files
                .iter()
                .map(|(path, sha)| {
                    (
                        tp(path),
                        FileState {
                            size: 1,
                            sha256: (*sha).into(),
                        },
                    )
                })
                .collect::<BTreeMap<_, _>>()
                .into(),
            obstacles: vec![],
            temps: vec![],
            remote,
            legacy_trash: Vec::new(),
        }
    }

    #[test]
    fn to_local_fetches_what_only_the_remote_has_then_deletes_everything_old() {
        let observed = Observed {
            placements: vec![
                placement(
                    Placement {
                        datastore: DatastoreConfig::Local,
                        namespace: None,
                    },
                    &[],
                    None,
                ),
                placement(
                    s3(Some("h")),
                    &[("outputs/cached", "c")],
                    Some(snapshot(
                        "swamp/h/",
                        &[("outputs/cached", "c"), ("outputs/remote-only", "r")],
                        true,
                    )),
                ),
            ],
            ..Observed::default()
        };
        let d = drain(&observed, None, false);
        assert!(d.conflicts.is_empty());
        assert_eq!(d.transfers.len(), 1);
        assert!(
            matches!(&d.transfers[0], Action::Fetch(Fetch { path, .. }) if path.as_str() == "outputs/remote-only")
        );
        match &d.deletes[..] {
            [Action::DeleteSourceRemote(DeleteSourceRemote { objects, .. })] => {
                let keys: Vec<_> = objects.iter().map(|o| o.key.to_key()).collect();
                assert_eq!(
                    keys,
                    [
                        "swamp/h/outputs/cached",
                        "swamp/h/outputs/remote-only",
                        "swamp/h/.namespace.json"
                    ]
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn re_keying_copies_server_side_and_marks_cached_paths_settled() {
        let observed = Observed {
            placements: vec![
                placement(s3(Some("h")), &[], None),
                placement(
                    s3(None),
                    &[("data/a/1/raw", "a")],
                    Some(snapshot(
                        "swamp/",
                        &[("data/a/1/raw", "a"), ("data/b/1/raw", "b")],
                        false,
                    )),
                ),
            ],
            ..Observed::default()
        };
        let target_remote = snapshot("swamp/h/", &[], true);
        let d = drain(&observed, Some(&target_remote), false);
        assert_eq!(d.transfers.len(), 2);
        assert!(d.settles(&tp("data/a/1/raw")));
        assert!(d.incoming.contains_key(&tp("data/b/1/raw")));
        assert_eq!(d.deletes.len(), 1);
    }

    #[test]
    fn a_diverged_old_cache_blocks_and_deletes_nothing() {
        let observed = Observed {
            placements: vec![
                placement(
                    Placement {
                        datastore: DatastoreConfig::Local,
                        namespace: None,
                    },
                    &[],
                    None,
                ),
                placement(
                    s3(None),
                    &[("outputs/x", "mine")],
                    Some(snapshot("swamp/", &[("outputs/x", "theirs")], false)),
                ),
            ],
            ..Observed::default()
        };
        let d = drain(&observed, None, false);
        assert_eq!(d.conflicts.len(), 1);
        assert!(d.deletes.is_empty());
    }
}
