//! The pure three-way merge of cache, remote and sync base.
//!
//! Per file: a change on one side only propagates; a delete on one side
//! only propagates as a delete; different changes on both sides are
//! conflicts unless a policy settles them; with no base entry nothing is
//! deleted. Delete guards are checked here, at plan time, never mid-apply.
//! The managed-config sentinel is remote-owned: a sync never uploads or
//! deletes it remotely (only the explicit publish step writes it).

use crate::plan::action::{DeleteLocal, DeleteRemote, Download, RecordBase, RenameLocal, Upload};
use crate::plan::conflict::{BothChanged, DeleteGuard, DeletedAndChanged, NotAFile};
use std::collections::{BTreeMap, BTreeSet};

use crate::config::ConflictPolicy;
use crate::digest::Sha256;
use crate::layout::Tier;
use crate::layout::{MANAGED_CONFIG_SENTINEL, TierPath};
use crate::state::{BaseEntry, FileState, Obstacle, ObstacleKind, Unhydrated};

use super::action::{Action, BaseRecord, RemoteExpect, UnhydratedRecord};
use super::{Conflict, Expect, Side};

pub(crate) use crate::state::Direction;
pub(crate) use crate::state::remote::RemoteFile;

#[derive(Clone, Copy)]
pub(crate) struct SyncInput<'a> {
    pub local: &'a BTreeMap<TierPath, FileState>,
    /// What in the cache is not a regular file (symlinks, special files,
    /// directories without data, plain files where a directory must be),
    /// by path relative to the cache's placement root, sorted.
    pub local_other: &'a [Obstacle],
    /// Local modification times (seconds), for `--conflict newer`.
    pub local_modified: &'a BTreeMap<TierPath, i64>,
    pub remote: &'a BTreeMap<TierPath, RemoteFile>,
    pub base: &'a BTreeMap<TierPath, BaseEntry>,
    /// Remote files a lazy pull recorded without downloading them.
    pub unhydrated: &'a BTreeMap<TierPath, Unhydrated>,
    /// `[sync] hydration = "lazy"` (and no `--hydrate`): a pull records
    /// what the remote added instead of downloading it. Otherwise a pull
    /// downloads what was recorded so.
    pub lazy: bool,
    pub direction: Direction,
    pub policy: ConflictPolicy,
    pub max_delete_percent: u8,
    pub force: bool,
    /// With `force`: cache files that are the only copy of their content
    /// may be deleted too.
    pub force_delete_local: bool,
    /// Deletes swamp's own commands made on purpose: the delete guards
    /// do not count them.
    pub explained: &'a Explained,
}

/// Deletes swamp can explain, one set per side.
#[derive(Debug, Default)]
pub(crate) struct Explained {
    /// Cache files this clone's commands deleted since its last sync, by
    /// path and the content deleted.
    pub in_cache: BTreeSet<(TierPath, Sha256)>,
    /// Objects other clones' syncs deleted on purpose (their records), by
    /// path and the object version deleted.
    pub in_remote: BTreeSet<(TierPath, String)>,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SyncDiff {
    pub actions: Vec<Action>,
    pub conflicts: Vec<Conflict>,
    /// Conflicts the policy settled (shown for review).
    pub resolved: Vec<Conflict>,
}

/// What one file needs.
enum Step {
    Nothing,
    Agree(BaseRecord),
    Forget,
    /// Record a remote file without downloading it (a lazy pull).
    Lazy(UnhydratedRecord),
    Push(Action),
    Pull(Action),
    Conflict(Conflict),
}

/// What in the cache stands where the remote or the base has files, and
/// which paths that keeps out of the sync (on both sides).
#[derive(Default)]
struct InTheWay {
    /// Obstacle path → (kind, link, files it stands in for, first of them).
    at: BTreeMap<String, (ObstacleKind, Option<String>, usize, TierPath)>,
    /// Remote/base paths left alone, and local paths never pushed.
    paths: BTreeSet<TierPath>,
    /// Directories whose local files are never pushed (a directory where
    /// the remote has a file).
    dirs: BTreeSet<String>,
}

impl InTheWay {
    fn find(input: &SyncInput<'_>) -> InTheWay {
        let mut out = InTheWay::default();
        let other = |p: &str| {
            input
                .local_other
                .binary_search_by(|o| o.path.as_str().cmp(p))
                .ok()
                .map(|i| &input.local_other[i])
        };
        // The remote's and the base's paths, each once, in order (a set of
        // them was 10 MB at a million).
        let mut remote = input.remote.keys().peekable();
        let mut base = input.base.keys().peekable();
        let synced = std::iter::from_fn(|| {
            let path: &TierPath = match (remote.peek(), base.peek()) {
                (Some(r), Some(b)) => (*r).min(*b),
                (Some(r), None) => r,
                (None, Some(b)) => b,
                (None, None) => return None,
            };
            remote.next_if(|p| *p == path);
            base.next_if(|p| *p == path);
            Some(path)
        });
        for path in synced {
            if input.local.contains_key(path) {
                continue;
            }
            let mut found: Option<(String, ObstacleKind, Option<String>)> = None;
            if let Some(o) = other("") {
                found = Some((String::new(), o.kind, o.link.clone()));
            }
            for anc in path.ancestors() {
                if found.is_some() {
                    break;
                }
                match other(anc) {
                    // A directory is what an ancestor must be.
                    Some(o) if o.kind != ObstacleKind::Directory => {
                        found = Some((anc.to_string(), o.kind, o.link.clone()));
                    }
                    _ => {
                        if let Ok(a) = TierPath::parse(anc)
                            && input.local.contains_key(&a)
                        {
                            // A plain file where the synced files' directory is.
                            out.paths.insert(a);
                            found = Some((anc.to_string(), ObstacleKind::NotADirectory, None));
                        }
                    }
                }
            }
            if found.is_none() {
                if let Some(o) = other(path.as_str()) {
                    found = Some((path.to_string(), o.kind, o.link.clone()));
                } else {
                    let dir = format!("{path}/");
                    // Keys between `p` and `p/` share the prefix (`p.x`, `p-x`).
                    let has_children = input
                        .local
                        .range(path.clone()..)
                        .take_while(|(p, _)| p.as_str().starts_with(path.as_str()))
                        .any(|(p, _)| p.as_str().starts_with(&dir));
                    if has_children {
                        out.dirs.insert(path.to_string());
                        found = Some((path.to_string(), ObstacleKind::Directory, None));
                    }
                }
            }
            if let Some((at, kind, link)) = found {
                out.paths.insert(path.clone());
                out.at
                    .entry(at)
                    .or_insert_with(|| (kind, link, 0, path.clone()))
                    .2 += 1;
            }
        }
        out
    }

    fn blocks(&self, path: &TierPath) -> bool {
        self.paths.contains(path)
            || (!self.dirs.is_empty() && path.ancestors().iter().any(|a| self.dirs.contains(*a)))
    }

    fn conflicts(self) -> impl Iterator<Item = Conflict> {
        self.at
            .into_iter()
            .map(|(at, (what, link, files, example))| {
                Conflict::NotAFile(NotAFile {
                    at,
                    what,
                    link,
                    files,
                    example,
                })
            })
    }
}

/// Room left in a transfer list for the few actions that follow it (the
/// base record here; the catalog, the sentinel and the tail in `compose`).
const ROOM: usize = 16;

/// The three-way merge. Paths something in the cache stands in for are
/// left out of it entirely (on both sides, guards included) and reported
/// as conflicts.
pub(crate) fn sync_diff(input: &SyncInput<'_>) -> SyncDiff {
    let in_the_way = InTheWay::find(input);
    if in_the_way.at.is_empty() {
        return merge(input);
    }
    fn kept<V: Clone>(m: &BTreeMap<TierPath, V>, w: &InTheWay) -> BTreeMap<TierPath, V> {
        m.iter()
            .filter(|(p, _)| !w.blocks(p))
            .map(|(p, v)| (p.clone(), v.clone()))
            .collect()
    }
    let mut out = merge(&SyncInput {
        local: &kept(input.local, &in_the_way),
        remote: &kept(input.remote, &in_the_way),
        base: &kept(input.base, &in_the_way),
        unhydrated: &kept(input.unhydrated, &in_the_way),
        ..*input
    });
    out.conflicts.splice(0..0, in_the_way.conflicts());
    out
}

fn merge(input: &SyncInput<'_>) -> SyncDiff {
    let mut out = SyncDiff::default();
    let mut g = Gathered::default();
    let mut renumber = Renumber::new(input);
    // A pull into an empty cache (or a push of a new tree) is nearly all
    // transfers one way: sized once, with room for what `compose` appends,
    // rather than doubled on the way (at 100,000 downloads the last
    // doubling held 38 MB at once). A lazy pull records instead of
    // downloading: its records are what is sized (room for a million
    // downloads it never plans was a tenth of a lazy clone's peak).
    let lazy = input.lazy && input.direction.pulls();
    let unseen = input.remote.len().saturating_sub(input.local.len());
    if lazy {
        g.lazy
            .reserve(unseen.saturating_sub(input.unhydrated.len()) + ROOM);
    } else if input.direction.pulls() {
        g.pulls.reserve(unseen + ROOM);
    }
    if input.direction.pushes() {
        g.pushes
            .reserve(input.local.len().saturating_sub(input.remote.len()) + ROOM);
    }

    // Every path of the four maps once, in order: one walk through each
    // (they are sorted), not a set of all paths and four lookups a path.
    let mut local = input.local.iter().peekable();
    let mut remote = input.remote.iter().peekable();
    let mut base = input.base.iter().peekable();
    let mut unhydrated = input.unhydrated.iter().peekable();
    loop {
        let next = [
            local.peek().map(|e| e.0),
            remote.peek().map(|e| e.0),
            base.peek().map(|e| e.0),
            unhydrated.peek().map(|e| e.0),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(path) = next else { break };
        let found = Found {
            l: local.next_if(|e| e.0 == path).map(|e| e.1),
            r: remote.next_if(|e| e.0 == path).map(|e| e.1),
            b: base.next_if(|e| e.0 == path).map(|e| e.1),
            u: unhydrated.next_if(|e| e.0 == path).map(|e| e.1),
        };
        g.take(input, path, found, &mut renumber, &mut out);
    }
    g.guard_deletes(input, &mut out);
    g.into_actions(&mut out);
    out
}

/// What each side holds at one path.
struct Found<'a> {
    l: Option<&'a FileState>,
    r: Option<&'a RemoteFile>,
    b: Option<&'a BaseEntry>,
    u: Option<&'a Unhydrated>,
}

/// What a merge gathers, by where it goes in the plan.
#[derive(Default)]
struct Gathered {
    pushes: Vec<Action>,
    pulls: Vec<Action>,
    deletes_local: Vec<Action>,
    deletes_remote: Vec<Action>,
    keep_both: Vec<Action>,
    add: Vec<BaseRecord>,
    forget: Vec<TierPath>,
    lazy: Vec<UnhydratedRecord>,
}

impl Gathered {
    /// What one path needs, in the directions this sync goes.
    fn take(
        &mut self,
        input: &SyncInput<'_>,
        path: &TierPath,
        found: Found<'_>,
        renumber: &mut Renumber<'_>,
        out: &mut SyncDiff,
    ) {
        let Found { l, r, b, u } = found;
        let u = u.filter(|_| b.is_none());
        let mut st = match lazy_step(path, l, r, b, u, input.lazy) {
            Some(st) => st,
            None => step(path, l, r, b),
        };
        if path.as_str() == MANAGED_CONFIG_SENTINEL {
            st = remote_owned(st, path, l, r, b);
        }
        match st {
            Step::Nothing => {}
            Step::Agree(rec) => self.add.push(rec),
            Step::Forget => self.forget.push(path.clone()),
            Step::Lazy(rec) if input.direction.pulls() => self.lazy.push(rec),
            Step::Lazy(_) => {}
            Step::Push(a) if input.direction.pushes() => {
                route(a, &mut self.pushes, &mut self.deletes_remote)
            }
            Step::Pull(a) if input.direction.pulls() => {
                route(a, &mut self.pulls, &mut self.deletes_local)
            }
            Step::Push(_) | Step::Pull(_) => {}
            // Two clones numbered a new version of a name alike: versions
            // are never edited, so both are kept, with no policy needed.
            // The remote's keeps its number; the cache's takes the next
            // free one (and is uploaded under it).
            Step::Conflict(Conflict::BothChanged(BothChanged {
                base_sha256: None, ..
            })) if data_version(path).is_some() => {
                self.keep_both_versions(input, path, l, (r, b), renumber)
            }
            Step::Conflict(c) => self.settle(input, path, l, (r, b), c, renumber, out),
        }
    }

    /// Two clones numbered a new version of a name alike: versions are
    /// never edited, so both are kept, with no policy needed. The remote's
    /// keeps its number; the cache's takes the next free one (and is
    /// uploaded under it).
    fn keep_both_versions(
        &mut self,
        input: &SyncInput<'_>,
        path: &TierPath,
        l: Option<&FileState>,
        (r, b): (Option<&RemoteFile>, Option<&BaseEntry>),
        renumber: &mut Renumber<'_>,
    ) {
        let (l, r) = (l.expect("both changed"), r.expect("both changed"));
        let to = renumber.next_for(path);
        self.keep_both.push(Action::RenameLocal(RenameLocal {
            path: path.clone(),
            to: to.clone(),
            sha256: l.sha256,
            settled_by: None,
        }));
        if input.direction.pulls() {
            self.keep_both.push(download(path, r, b, None));
        }
        if input.direction.pushes() {
            self.keep_both.push(Action::Upload(Upload {
                path: to,
                size: l.size,
                sha256: l.sha256,
                remote: RemoteExpect::Absent,
                settled_by: None,
            }));
        }
    }

    /// A conflict the policy may settle (then its actions go where their
    /// direction allows), else kept as a conflict.
    #[allow(clippy::too_many_arguments)]
    fn settle(
        &mut self,
        input: &SyncInput<'_>,
        path: &TierPath,
        l: Option<&FileState>,
        r: (Option<&RemoteFile>, Option<&BaseEntry>),
        c: Conflict,
        renumber: &mut Renumber<'_>,
        out: &mut SyncDiff,
    ) {
        match settle(path, l, r, input, renumber) {
            Some(actions) if actions.len() > 1 => {
                // keep-both: rename, download, upload, in that order
                out.resolved.push(c);
                self.keep_both.extend(actions);
            }
            Some(actions) => {
                out.resolved.push(c);
                for a in actions {
                    match a {
                        Action::Upload(_) | Action::DeleteRemote(_)
                            if !input.direction.pushes() => {}
                        Action::Download(_) | Action::DeleteLocal(_) | Action::RenameLocal(_)
                            if !input.direction.pulls() => {}
                        Action::DeleteRemote(_) => self.deletes_remote.push(a),
                        Action::DeleteLocal(_) => self.deletes_local.push(a),
                        Action::Upload(_) => self.pushes.push(a),
                        _ => self.pulls.push(a),
                    }
                }
            }
            None => out.conflicts.push(c),
        }
    }

    /// Only deletes swamp cannot explain count against the guards: a
    /// `data gc` here or in another clone is work, not a wiped tree. A
    /// cache delete follows an object gone from the bucket; a remote delete,
    /// a file gone from the cache (and only of the very object the base
    /// recorded: `--conflict local` deleting a newer one is not explained).
    fn guard_deletes(&mut self, input: &SyncInput<'_>, out: &mut SyncDiff) {
        let unexplained_local = self
            .deletes_local
            .iter()
            .filter(
                |a| match a.path().and_then(|p| input.base.get(p).map(|b| (p, b))) {
                    Some((path, b)) => !input.remote_gone_on_purpose(path, b),
                    None => true,
                },
            )
            .count();
        let unexplained_remote = self
            .deletes_remote
            .iter()
            .filter(|a| match (a, a.path().and_then(|p| input.base.get(p))) {
                (Action::DeleteRemote(DeleteRemote { path, version, .. }), Some(b)) => {
                    *version != b.version || !input.cache_gone_on_purpose(path, b)
                }
                _ => true,
            })
            .count();
        let tripped = guards(input, unexplained_local, unexplained_remote);
        if !input.force {
            out.conflicts.extend(tripped);
        } else if !tripped.is_empty() && !input.force_delete_local {
            // Forced past a guard: still never the only copy of anything.
            let (only, kept) = only_copies(input, std::mem::take(&mut self.deletes_local));
            self.deletes_local = kept;
            if let Some(c) = only_copy_guard(&only) {
                out.conflicts.push(c);
            }
        }
    }

    /// Transfers first, deletes after, bookkeeping last. One direction's
    /// transfers are the list itself, not copied into another.
    fn into_actions(mut self, out: &mut SyncDiff) {
        out.actions = match (self.pushes.is_empty(), self.pulls.is_empty()) {
            (true, _) => self.pulls,
            (false, true) => self.pushes,
            (false, false) => {
                self.pushes.extend(self.pulls);
                self.pushes
            }
        };
        // Sized for more than came (a lazy clone pulls nothing): give it back.
        if out.actions.capacity() > 2 * (out.actions.len() + ROOM) {
            out.actions.shrink_to(out.actions.len() + ROOM);
        }
        out.actions.extend(self.keep_both);
        out.actions.extend(self.deletes_remote);
        out.actions.extend(self.deletes_local);
        if !self.add.is_empty() || !self.forget.is_empty() || !self.lazy.is_empty() {
            out.actions.push(Action::RecordBase(RecordBase {
                add: self.add,
                unhydrated: self.lazy,
                drop: self.forget,
            }));
        }
    }
}

/// What a path needs where lazy hydration decides it (`None`: the plain
/// three-way merge does). A file recorded as in the remote only is no
/// local delete: while the cache lacks it, the remote copy is the one
/// truth, so a change there is recorded (or downloaded, hydrating) and
/// nothing is ever pushed or deleted for it. Once the cache holds the path
/// anyway, the record vouches for nothing: the merge runs as with no base,
/// so differing content is a conflict, never an overwrite. The `config`
/// tier is never lazy (managed config compares the cache's copy).
fn lazy_step(
    path: &TierPath,
    l: Option<&FileState>,
    r: Option<&RemoteFile>,
    b: Option<&BaseEntry>,
    u: Option<&Unhydrated>,
    lazy: bool,
) -> Option<Step> {
    let lazy = lazy && path.tier() != Tier::Config;
    let record = |r: &RemoteFile| {
        Step::Lazy(UnhydratedRecord {
            path: path.clone(),
            size: r.size,
            version: r.version.clone(),
            sha256: r.own_sha256().map(|s| Box::new(*s)),
            served: r.served().map(|s| Box::new(s.clone())),
        })
    };
    Some(match (l, r, u) {
        (None, None, Some(_)) => Step::Forget,
        (None, Some(r), Some(u)) if lazy => {
            if r.version == u.version && r.size == u.size {
                Step::Nothing
            } else {
                record(r)
            }
        }
        (None, Some(r), Some(_)) => Step::Pull(download(path, r, b, None)),
        (Some(_), _, Some(_)) => step(path, l, r, None),
        (None, Some(r), None) if lazy && b.is_none() => record(r),
        _ => return None,
    })
}

/// The managed-config sentinel belongs to the remote: only the explicit
/// publish step writes it there, so a sync never uploads or deletes it
/// remotely: whatever a push would do becomes a pull of the remote's copy,
/// and a conflict is settled for the remote.
fn remote_owned(
    st: Step,
    path: &TierPath,
    l: Option<&FileState>,
    r: Option<&RemoteFile>,
    b: Option<&BaseEntry>,
) -> Step {
    match st {
        Step::Push(_) => match r {
            Some(r) => Step::Pull(download(path, r, b, l)),
            // Never synced, or the remote lost it: left alone, never pushed.
            None => Step::Nothing,
        },
        Step::Conflict(_) => match (l, r) {
            (_, Some(r)) => Step::Pull(download(path, r, b, l)),
            (Some(l), None) => Step::Pull(Action::DeleteLocal(DeleteLocal {
                path: path.clone(),
                sha256: l.sha256,
                settled_by: None,
            })),
            (None, None) => Step::Nothing,
        },
        other => other,
    }
}

fn route(a: Action, transfers: &mut Vec<Action>, deletes: &mut Vec<Action>) {
    match a {
        Action::DeleteLocal(_) | Action::DeleteRemote(_) => deletes.push(a),
        _ => transfers.push(a),
    }
}

fn upload(path: &TierPath, l: &FileState, r: Option<&RemoteFile>) -> Action {
    Action::Upload(Upload {
        path: path.clone(),
        size: l.size,
        sha256: l.sha256,
        remote: match r {
            None => RemoteExpect::Absent,
            Some(r) => RemoteExpect::Version {
                version: r.version.clone(),
            },
        },
        settled_by: None,
    })
}

/// A download of `r`, whose sha256 is its own or `b`'s.
fn download(
    path: &TierPath,
    r: &RemoteFile,
    b: Option<&BaseEntry>,
    l: Option<&FileState>,
) -> Action {
    Action::Download(Download {
        path: path.clone(),
        size: r.size,
        version: r.version.clone(),
        expect: Expect::of(r.sha(b), r.served()),
        local: l.map(|l| Box::new(l.sha256)),
        settled_by: None,
    })
}

/// The remote object is unchanged since the base.
fn remote_unchanged(r: &RemoteFile, b: &BaseEntry) -> bool {
    r.version == b.version || r.sha(Some(b)) == Some(b.sha256)
}

/// What the base must record for cache and remote holding the same
/// content at `path`, when `b` does not record exactly that (`None`: it
/// does, or the sides do not agree).
pub(super) fn unrecorded_agreement(
    path: &TierPath,
    l: &FileState,
    r: &RemoteFile,
    b: Option<&BaseEntry>,
) -> Option<BaseRecord> {
    if r.sha(b) != Some(l.sha256) {
        return None;
    }
    let agreed = BaseEntry {
        sha256: l.sha256,
        size: l.size,
        version: r.version.clone(),
    };
    (b != Some(&agreed)).then(|| BaseRecord {
        path: path.clone(),
        sha256: agreed.sha256,
        size: agreed.size,
        version: agreed.version,
    })
}

fn step(
    path: &TierPath,
    l: Option<&FileState>,
    r: Option<&RemoteFile>,
    b: Option<&BaseEntry>,
) -> Step {
    match (l, r, b) {
        (None, None, None) => Step::Nothing,
        (None, None, Some(_)) => Step::Forget,
        // Only in the cache.
        (Some(l), None, None) => Step::Push(upload(path, l, None)),
        (Some(l), None, Some(b)) if l.sha256 == b.sha256 => {
            Step::Pull(Action::DeleteLocal(DeleteLocal {
                path: path.clone(),
                sha256: l.sha256,
                settled_by: None,
            }))
        }
        (Some(l), None, Some(_)) => {
            Step::Conflict(Conflict::DeletedAndChanged(DeletedAndChanged {
                path: path.clone(),
                deleted_in: Side::Remote,
                changed_sha256: Some(l.sha256),
                remote_modified: None,
            }))
        }
        // Only in the remote.
        (None, Some(r), None) => Step::Pull(download(path, r, None, None)),
        (None, Some(r), Some(b)) if remote_unchanged(r, b) => {
            Step::Push(Action::DeleteRemote(DeleteRemote {
                path: path.clone(),
                version: r.version.clone(),
                settled_by: None,
            }))
        }
        (None, Some(r), Some(_)) => {
            Step::Conflict(Conflict::DeletedAndChanged(DeletedAndChanged {
                path: path.clone(),
                deleted_in: Side::Cache,
                changed_sha256: r.sha(b),
                remote_modified: r.modified(),
            }))
        }
        // On both sides.
        (Some(l), Some(r), b) => {
            if r.sha(b) == Some(l.sha256) {
                return match unrecorded_agreement(path, l, r, b) {
                    Some(rec) => Step::Agree(rec),
                    None => Step::Nothing,
                };
            }
            match b {
                Some(b) if remote_unchanged(r, b) && l.sha256 != b.sha256 => {
                    Step::Push(upload(path, l, Some(r)))
                }
                Some(b) if l.sha256 == b.sha256 => Step::Pull(download(path, r, Some(b), Some(l))),
                _ => Step::Conflict(Conflict::BothChanged(BothChanged {
                    path: path.clone(),
                    cache_sha256: l.sha256,
                    remote_version: r.version.to_string(),
                    remote_sha256: r.sha(b),
                    base_sha256: b.map(|b| b.sha256),
                    remote_modified: r.modified(),
                })),
            }
        }
    }
}

/// The actions a policy settles a conflict with, each marked as settled
/// by it, or `None` to leave the conflict. `newer` settles only a
/// both-changed conflict with both times known (a delete has no time).
fn settle(
    path: &TierPath,
    l: Option<&FileState>,
    (r, b): (Option<&RemoteFile>, Option<&BaseEntry>),
    input: &SyncInput<'_>,
    renumber: &mut Renumber<'_>,
) -> Option<Vec<Action>> {
    let by = Some(input.policy);
    let policy = match input.policy {
        ConflictPolicy::Fail => return None,
        ConflictPolicy::Newer => {
            let lm = input.local_modified.get(path).copied();
            let rm = r.and_then(|r| r.modified());
            match (l, r, lm, rm) {
                (Some(_), Some(_), Some(lm), Some(rm)) if lm > rm => ConflictPolicy::Local,
                (Some(_), Some(_), Some(_), Some(_)) => ConflictPolicy::Remote,
                _ => return None,
            }
        }
        p => p,
    };
    let mut actions = match (policy, l, r) {
        (ConflictPolicy::Local, Some(l), r) => vec![upload(path, l, r)],
        (ConflictPolicy::Local, None, Some(r)) => vec![Action::DeleteRemote(DeleteRemote {
            path: path.clone(),
            version: r.version.clone(),
            settled_by: None,
        })],
        (ConflictPolicy::Remote, l, Some(r)) => vec![download(path, r, b, l)],
        (ConflictPolicy::Remote, Some(l), None) => vec![Action::DeleteLocal(DeleteLocal {
            path: path.clone(),
            sha256: l.sha256,
            settled_by: None,
        })],
        // Keep both: the cache copy moves aside (and is uploaded under its
        // new name), the remote one takes the path.
        (ConflictPolicy::KeepBoth, Some(l), Some(r)) if input.direction == Direction::Both => {
            // A data version's copy becomes a version of its own, which
            // `data list` and `data get` see; another file gets a suffix.
            let to = if data_version(path).is_some() {
                renumber.next_for(path)
            } else {
                let short = l.sha256.short(8);
                TierPath::parse(&format!("{path}.conflict-{short}"))
                    .expect("a suffix keeps a tier path valid")
            };
            vec![
                Action::RenameLocal(RenameLocal {
                    path: path.clone(),
                    to: to.clone(),
                    sha256: l.sha256,
                    settled_by: None,
                }),
                download(path, r, b, None),
                Action::Upload(Upload {
                    path: to,
                    size: l.size,
                    sha256: l.sha256,
                    remote: RemoteExpect::Absent,
                    settled_by: None,
                }),
            ]
        }
        // Keep both of a delete and a change: keep the change.
        (ConflictPolicy::KeepBoth, Some(l), None) => vec![upload(path, l, None)],
        (ConflictPolicy::KeepBoth, None, Some(r)) => vec![download(path, r, b, None)],
        _ => return None,
    };
    for a in &mut actions {
        a.mark_settled(by);
    }
    Some(actions)
}

/// A data version's path (`data/NAME/V/raw`): its name and number.
fn data_version(path: &TierPath) -> Option<(&str, u64)> {
    crate::catalog::name::data_version(path.as_str())
}

/// Hands out version numbers for renumbered cache copies: for each name,
/// after every version either side or the sync base knows of, and after
/// those already handed out in this plan.
struct Renumber<'i> {
    input: &'i SyncInput<'i>,
    next: std::collections::HashMap<String, u64>,
}

impl<'i> Renumber<'i> {
    fn new(input: &'i SyncInput<'i>) -> Self {
        Renumber {
            input,
            next: std::collections::HashMap::new(),
        }
    }

    /// The path the cache's copy of the data version at `path` moves to.
    fn next_for(&mut self, path: &TierPath) -> TierPath {
        let (name, _) = data_version(path).expect("a data version");
        let input = self.input;
        let next = self.next.entry(name.to_string()).or_insert_with(|| {
            // Only on a collision, once per name: a scan of the keys.
            let highest = input
                .local
                .keys()
                .chain(input.remote.keys())
                .chain(input.base.keys())
                .chain(input.unhydrated.keys())
                .filter_map(data_version)
                .filter(|(n, _)| *n == name)
                .map(|(_, v)| v)
                .max()
                .unwrap_or(0);
            highest + 1
        });
        let version = *next;
        *next += 1;
        TierPath::parse(&format!("data/{name}/{version}/raw")).expect("a data version path")
    }
}

/// Splits cache deletes into those of files whose content exists nowhere
/// else (no remote object and no other cache file has its sha256) and the
/// rest.
fn only_copies(input: &SyncInput<'_>, deletes: Vec<Action>) -> (Vec<TierPath>, Vec<Action>) {
    let remote: BTreeSet<Sha256> = input
        .remote
        .iter()
        .filter_map(|(p, r)| r.sha(input.base.get(p)))
        .collect();
    let doomed: BTreeSet<&TierPath> = deletes.iter().filter_map(Action::path).collect();
    let elsewhere: BTreeSet<Sha256> = input
        .local
        .iter()
        .filter(|(p, _)| !doomed.contains(p))
        .map(|(_, f)| f.sha256)
        .collect();
    let mut only = Vec::new();
    let mut kept = Vec::new();
    for a in deletes {
        match &a {
            Action::DeleteLocal(DeleteLocal { path, sha256, .. })
                if !remote.contains(sha256) && !elsewhere.contains(sha256) =>
            {
                only.push(path.clone())
            }
            _ => kept.push(a),
        }
    }
    (only, kept)
}

fn only_copy_guard(only: &[TierPath]) -> Option<Conflict> {
    let first = only.first()?;
    let more = match only.len() {
        1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    Some(Conflict::DeleteGuard(DeleteGuard {
        guard: "only-copy".into(),
        message: format!(
            "--force would delete {} cache file(s) whose content exists nowhere else ({first}{more}); \
             they are kept, and nothing is applied until you decide",
            only.len()
        ),
    }))
}

impl SyncInput<'_> {
    /// Whether this clone's commands deleted the base's file at `path`
    /// from the cache on purpose.
    fn cache_gone_on_purpose(&self, path: &TierPath, b: &BaseEntry) -> bool {
        let set = &self.explained.in_cache;
        !set.is_empty() && set.contains(&(path.clone(), b.sha256))
    }

    /// Whether another clone's sync deleted the base's object at `path`
    /// from the bucket on purpose.
    fn remote_gone_on_purpose(&self, path: &TierPath, b: &BaseEntry) -> bool {
        let set = &self.explained.in_remote;
        !set.is_empty() && set.contains(&(path.clone(), b.version.to_string()))
    }
}

/// Delete guards, evaluated on the whole plan before anything runs.
fn guards(input: &SyncInput<'_>, deletes_local: usize, deletes_remote: usize) -> Vec<Conflict> {
    let mut out = Vec::new();
    if input.base.is_empty() {
        return out; // with no base nothing is deleted anyway
    }
    let n_base = input.base.len();
    // An empty side whose every missing file was deleted on purpose is
    // work (a `data rm` of the last name), not a wiped tree.
    let cache_emptied_on_purpose = || {
        input
            .base
            .iter()
            .filter(|(p, _)| !input.local.contains_key(*p))
            .all(|(p, b)| input.cache_gone_on_purpose(p, b))
    };
    let remote_emptied_on_purpose = || {
        input
            .base
            .iter()
            .filter(|(p, _)| !input.remote.contains_key(*p))
            .all(|(p, b)| input.remote_gone_on_purpose(p, b))
    };
    if input.local.is_empty()
        && !input.remote.is_empty()
        && input.direction.pushes()
        && !cache_emptied_on_purpose()
    {
        out.push(Conflict::DeleteGuard(DeleteGuard {
            guard: "empty-cache".into(),
            message: format!(
                "the cache is empty but the last sync recorded {n_base} file(s); syncing would delete {} remote object(s)",
                input.remote.len()
            ),
        }));
    }
    if input.remote.is_empty()
        && !input.local.is_empty()
        && input.direction.pulls()
        && !remote_emptied_on_purpose()
    {
        out.push(Conflict::DeleteGuard(DeleteGuard {
            guard: "empty-remote".into(),
            message: format!(
                "the remote is empty but the last sync recorded {n_base} file(s); syncing would delete {} cache file(s)",
                input.local.len()
            ),
        }));
    }
    let pct = u64::from(input.max_delete_percent);
    for (side, deletes, total) in [
        ("cache", deletes_local, input.local.len()),
        ("remote", deletes_remote, input.remote.len()),
    ] {
        if total > 0 && deletes as u64 * 100 > pct * total as u64 {
            out.push(Conflict::DeleteGuard(DeleteGuard {
                guard: "max-delete-percent".into(),
                message: format!(
                    "the plan deletes {deletes} of {total} {side} file(s), more than [sync] max_delete_percent = {pct}%"
                ),
            }));
        }
    }
    // Everything changed on one side at once looks like a wiped or
    // rewritten tree, not like work.
    if n_base >= 3 {
        let changed_local = input
            .base
            .iter()
            .filter(|(p, b)| match input.local.get(*p) {
                Some(l) => l.sha256 != b.sha256,
                None => !input.cache_gone_on_purpose(p, b),
            })
            .count();
        let changed_remote = input
            .base
            .iter()
            .filter(|(p, b)| match input.remote.get(*p) {
                Some(r) => !remote_unchanged(r, b),
                None => !input.remote_gone_on_purpose(p, b),
            })
            .count();
        for (side, changed) in [("cache", changed_local), ("remote", changed_remote)] {
            if changed == n_base {
                out.push(Conflict::DeleteGuard(DeleteGuard {
                    guard: "everything-changed".into(),
                    message: format!(
                        "every one of the {n_base} file(s) of the last sync changed or vanished in the {side}"
                    ),
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testutil::tp;

    #[derive(Default)]
    struct World {
        local: BTreeMap<TierPath, FileState>,
        modified: BTreeMap<TierPath, i64>,
        remote: BTreeMap<TierPath, RemoteFile>,
        base: BTreeMap<TierPath, BaseEntry>,
        unhydrated: BTreeMap<TierPath, Unhydrated>,
        lazy: bool,
        other: Vec<Obstacle>,
        explained: Explained,
    }

    impl World {
        /// Deleted on purpose from the cache here, with content `sha`.
        fn explained(mut self, p: &str, sha: &str) -> Self {
            self.explained.in_cache.insert((tp(p), sha.into()));
            self
        }
        /// Deleted on purpose from the bucket by another clone, at `version`.
        fn recorded(mut self, p: &str, version: &str) -> Self {
            self.explained.in_remote.insert((tp(p), version.into()));
            self
        }
        fn other(mut self, p: &str, kind: ObstacleKind) -> Self {
            self.other.push(Obstacle::new(p, kind));
            self.other.sort_by(|a, b| a.path.cmp(&b.path));
            self
        }
        fn local(mut self, p: &str, sha: &str) -> Self {
            self.local.insert(
                tp(p),
                FileState {
                    size: 1,
                    sha256: sha.into(),
                },
            );
            self
        }
        fn remote(mut self, p: &str, sha: &str, version: &str) -> Self {
            self.remote.insert(
                tp(p),
                RemoteFile::new(1, version.into())
                    .with_sha256(Some(sha.into()))
                    .with_modified(Some(100)),
            );
            self
        }
        fn base(mut self, p: &str, sha: &str, version: &str) -> Self {
            self.base.insert(
                tp(p),
                BaseEntry {
                    sha256: sha.into(),
                    size: 1,
                    version: version.into(),
                },
            );
            self
        }
        fn unhydrated(mut self, p: &str, version: &str) -> Self {
            self.unhydrated.insert(
                tp(p),
                Unhydrated {
                    size: 1,
                    version: version.into(),
                    sha256: None,
                    served: None,
                },
            );
            self
        }
        fn lazy(mut self) -> Self {
            self.lazy = true;
            self
        }
        fn diff(&self, direction: Direction, policy: ConflictPolicy) -> SyncDiff {
            sync_diff(&SyncInput {
                local: &self.local,
                local_other: &self.other,
                local_modified: &self.modified,
                remote: &self.remote,
                base: &self.base,
                unhydrated: &self.unhydrated,
                lazy: self.lazy,
                direction,
                policy,
                max_delete_percent: 100,
                force: false,
                force_delete_local: false,
                explained: &self.explained,
            })
        }
        fn kinds(&self, direction: Direction, policy: ConflictPolicy) -> Vec<String> {
            let d = self.diff(direction, policy);
            d.actions
                .iter()
                .map(|a| {
                    format!(
                        "{} {}",
                        a.kind(),
                        a.path().map(|p| p.as_str()).unwrap_or("")
                    )
                })
                .chain(d.conflicts.iter().map(|c| format!("conflict {}", c.kind())))
                .collect()
        }
    }

    use ConflictPolicy::Fail;
    use Direction::{Both, Pull, Push};

    const SENTINEL: &str = "config/managed-config-migrated.json";

    /// The recorded files of a RecordBase, as `(added, unhydrated, dropped)`.
    fn recorded(d: &SyncDiff) -> (Vec<String>, Vec<String>, Vec<String>) {
        match d.actions.last() {
            Some(Action::RecordBase(RecordBase {
                add,
                unhydrated,
                drop,
            })) => (
                add.iter().map(|r| r.path.to_string()).collect(),
                unhydrated.iter().map(|r| r.path.to_string()).collect(),
                drop.iter().map(ToString::to_string).collect(),
            ),
            _ => Default::default(),
        }
    }

    #[test]
    fn a_lazy_pull_records_new_remote_files_instead_of_downloading_them() {
        let w = World::default()
            .remote("data/m/1/raw", "a", "e1")
            .remote("config/models/a.yaml", "c", "e2")
            .lazy();
        for direction in [Both, Pull] {
            let d = w.diff(direction, Fail);
            assert_eq!(
                w.kinds(direction, Fail),
                ["download config/models/a.yaml", "record-base "],
                "the config tier is never lazy"
            );
            assert_eq!(recorded(&d).1, ["data/m/1/raw"]);
        }
        assert!(
            w.diff(Push, Fail).actions.is_empty(),
            "a push records nothing"
        );
    }

    #[test]
    fn a_file_in_the_remote_only_is_never_a_local_delete_and_its_changes_are_recorded() {
        let w = World::default()
            .remote("data/m/1/raw", "a", "e1")
            .unhydrated("data/m/1/raw", "e1")
            .remote("data/m/2/raw", "b", "e3")
            .unhydrated("data/m/2/raw", "e2")
            .unhydrated("data/m/3/raw", "e4")
            .lazy();
        for direction in [Both, Push] {
            let kinds = w.kinds(direction, Fail);
            assert!(
                !kinds
                    .iter()
                    .any(|k| k.starts_with("delete") || k.starts_with("upload")),
                "{direction:?}: {kinds:?}"
            );
        }
        let d = w.diff(Both, Fail);
        assert_eq!(
            recorded(&d),
            (
                vec![],
                vec!["data/m/2/raw".into()],
                vec!["data/m/3/raw".into()]
            ),
            "changed in the remote: recorded again; gone from it: forgotten"
        );
        // Hydrating (or `hydration = "full"`): what is recorded downloads.
        let full = World { lazy: false, ..w };
        assert_eq!(
            full.kinds(Pull, Fail),
            [
                "download data/m/1/raw",
                "download data/m/2/raw",
                "record-base "
            ]
        );
        assert!(full.kinds(Push, Fail).iter().all(|k| k == "record-base "));
    }

    #[test]
    fn a_cache_file_written_over_one_never_fetched_is_a_conflict_never_an_overwrite() {
        let w = World::default()
            .local("outputs/m", "mine")
            .remote("outputs/m", "theirs", "e1")
            .unhydrated("outputs/m", "e1")
            .local("data/m/2/raw", "same")
            .remote("data/m/2/raw", "same", "e2")
            .unhydrated("data/m/2/raw", "e2")
            .lazy();
        assert_eq!(
            w.kinds(Both, Fail),
            ["record-base ", "conflict both-changed"]
        );
        // A data version is never edited: one the cache wrote under a
        // number the remote used is another version, renumbered after
        // every known one (never an overwrite either).
        let w = World::default()
            .local("data/m/1/raw", "mine")
            .remote("data/m/1/raw", "theirs", "e1")
            .unhydrated("data/m/1/raw", "e1")
            .local("data/m/2/raw", "same")
            .remote("data/m/2/raw", "same", "e2")
            .unhydrated("data/m/2/raw", "e2")
            .lazy();
        assert_eq!(
            w.kinds(Both, Fail),
            [
                "rename-local data/m/1/raw",
                "download data/m/1/raw",
                "upload data/m/3/raw",
                "record-base "
            ]
        );
        assert_eq!(
            recorded(&w.diff(Both, Fail)).0,
            ["data/m/2/raw"],
            "fetched: synced"
        );
    }

    #[test]
    fn deletes_swamp_made_on_purpose_do_not_trip_the_guards_and_others_still_do() {
        let synced = |w: World| {
            w.remote("data/m/1/raw", "a", "e1")
                .base("data/m/1/raw", "a", "e1")
                .remote("data/m/2/raw", "b", "e2")
                .base("data/m/2/raw", "b", "e2")
                .remote("data/m/3/raw", "c", "e3")
                .base("data/m/3/raw", "c", "e3")
        };
        let guards = |w: &World, d| -> Vec<String> {
            w.diff(d, Fail)
                .conflicts
                .iter()
                .filter_map(|c| match c {
                    Conflict::DeleteGuard(DeleteGuard { guard, .. }) => Some(guard.clone()),
                    _ => None,
                })
                .collect()
        };
        // The cache emptied: by hand, both guards trip.
        let wiped = synced(World::default());
        assert_eq!(guards(&wiped, Both), ["empty-cache", "everything-changed"]);
        // By `data rm` (or a peer's, recorded in the bucket): three deletes.
        let rm = synced(World::default())
            .explained("data/m/1/raw", "a")
            .explained("data/m/2/raw", "b")
            .explained("data/m/3/raw", "c");
        assert!(guards(&rm, Both).is_empty());
        assert_eq!(
            rm.kinds(Both, Fail)
                .iter()
                .filter(|k| k.starts_with("delete-remote"))
                .count(),
            3
        );
        // One of them not explained (or explained for other content): the
        // guards stay.
        let partly = synced(World::default())
            .explained("data/m/1/raw", "a")
            .explained("data/m/2/raw", "b")
            .explained("data/m/3/raw", "not-c");
        assert_eq!(guards(&partly, Both), ["empty-cache"]);
        // The same from the remote's side: a peer's recorded gc.
        let mut pulled = synced(World::default())
            .local("data/m/1/raw", "a")
            .local("data/m/2/raw", "b")
            .local("data/m/3/raw", "c");
        pulled.remote.clear();
        assert_eq!(
            guards(&pulled, Both),
            ["empty-remote", "everything-changed"]
        );
        // This clone's own deletes explain nothing in the bucket.
        let pulled = pulled
            .explained("data/m/1/raw", "a")
            .explained("data/m/2/raw", "b")
            .explained("data/m/3/raw", "c");
        assert_eq!(
            guards(&pulled, Both),
            ["empty-remote", "everything-changed"]
        );
        // Records of the objects' very versions do; of other versions
        // (the same content uploaded again since) do not.
        let pulled = pulled
            .recorded("data/m/1/raw", "e1")
            .recorded("data/m/2/raw", "e2")
            .recorded("data/m/3/raw", "e3-earlier");
        assert_eq!(guards(&pulled, Both), ["empty-remote"]);
        let pulled = pulled.recorded("data/m/3/raw", "e3");
        assert!(guards(&pulled, Both).is_empty());
    }

    #[test]
    fn versions_two_clones_numbered_alike_are_renumbered_after_every_known_one() {
        let w = World::default()
            .local("data/m/1/raw", "one")
            .remote("data/m/1/raw", "one", "e1")
            .base("data/m/1/raw", "one", "e1")
            .local("data/m/2/raw", "ours 2")
            .local("data/m/3/raw", "ours 3")
            .remote("data/m/2/raw", "theirs 2", "e2")
            .remote("data/m/3/raw", "theirs 3", "e3")
            .remote("data/m/4/raw", "theirs 4", "e4")
            // Another name's numbers are its own.
            .local("data/n/1/raw", "n ours")
            .remote("data/n/1/raw", "n theirs", "f1");
        assert_eq!(
            w.kinds(Both, Fail),
            [
                "download data/m/4/raw",
                "rename-local data/m/2/raw",
                "download data/m/2/raw",
                "upload data/m/5/raw",
                "rename-local data/m/3/raw",
                "download data/m/3/raw",
                "upload data/m/6/raw",
                "rename-local data/n/1/raw",
                "download data/n/1/raw",
                "upload data/n/2/raw",
            ]
        );
        // One way only: the rename is local and keeps the content; what
        // the other direction would carry waits for the next sync.
        assert_eq!(
            w.kinds(Push, Fail)[..2],
            ["rename-local data/m/2/raw", "upload data/m/5/raw"]
        );
        // With a base, a changed version is still a conflict (a policy
        // decides), and keep-both makes the cache's a version of its own.
        let w = World::default()
            .local("data/m/1/raw", "ours")
            .remote("data/m/1/raw", "theirs", "e2")
            .base("data/m/1/raw", "one", "e1");
        assert_eq!(w.kinds(Both, Fail), ["conflict both-changed"]);
        assert_eq!(
            w.kinds(Both, ConflictPolicy::KeepBoth),
            [
                "rename-local data/m/1/raw",
                "download data/m/1/raw",
                "upload data/m/2/raw"
            ]
        );
    }

    #[test]
    fn a_symlink_fifo_or_directory_replacing_a_synced_file_is_a_conflict_never_a_delete() {
        for kind in [
            ObstacleKind::Symlink,
            ObstacleKind::SpecialFile,
            ObstacleKind::Directory,
        ] {
            let w = World::default()
                .local("data/m/1/raw", "a")
                .remote("data/m/1/raw", "a", "e1")
                .base("data/m/1/raw", "a", "e1")
                .remote("data/m/2/raw", "b", "e2")
                .base("data/m/2/raw", "b", "e2")
                .other("data/m/2/raw", kind);
            for direction in [Both, Push, Pull] {
                let d = w.diff(direction, ConflictPolicy::Local);
                assert!(
                    d.actions.is_empty(),
                    "{kind:?} {direction:?}: {:?}",
                    d.actions
                );
                assert_eq!(
                    d.conflicts,
                    [Conflict::NotAFile(NotAFile {
                        at: "data/m/2/raw".into(),
                        what: kind,
                        link: None,
                        files: 1,
                        example: tp("data/m/2/raw"),
                    })],
                    "{kind:?} {direction:?}"
                );
            }
        }
    }

    #[test]
    fn a_directory_with_files_where_a_synced_file_was_uploads_nothing_under_it() {
        let w = World::default()
            .local("data/m/2/raw/inner", "x")
            .local("data/m/3/raw", "c")
            .remote("data/m/2/raw", "b", "e2")
            .base("data/m/2/raw", "b", "e2");
        assert_eq!(
            w.kinds(Both, ConflictPolicy::Local),
            ["upload data/m/3/raw", "conflict not-a-file"]
        );
    }

    #[test]
    fn a_symlinked_or_plain_file_ancestor_keeps_everything_below_it_out_of_the_sync() {
        // `data/m` became a symlink: nothing under it is seen, nothing deleted.
        let w = World::default()
            .remote("data/m/1/raw", "a", "e1")
            .base("data/m/1/raw", "a", "e1")
            .remote("data/m/2/raw", "b", "e2")
            .base("data/m/2/raw", "b", "e2")
            .other("data/m", ObstacleKind::Symlink);
        let d = w.diff(Both, Fail);
        assert!(d.actions.is_empty(), "{:?}", d.actions);
        assert!(matches!(
            &d.conflicts[..],
            [Conflict::NotAFile(NotAFile { at, what: ObstacleKind::Symlink, files: 2, .. })] if at == "data/m"
        ));
        // `data/m` became a plain file: it is neither pushed nor are the
        // files below it deleted.
        let w = World::default()
            .local("data/m", "f")
            .remote("data/m/1/raw", "a", "e1")
            .base("data/m/1/raw", "a", "e1");
        let d = w.diff(Both, ConflictPolicy::Local);
        assert!(d.actions.is_empty(), "{:?}", d.actions);
        assert_eq!(d.conflicts[0].kind(), "not-a-file");
        // A whole cache root that is not a directory.
        let w = World::default()
            .remote("data/m/1/raw", "a", "e1")
            .base("data/m/1/raw", "a", "e1")
            .other("", ObstacleKind::Symlink);
        assert_eq!(w.kinds(Both, Fail), ["conflict not-a-file"]);
    }

    #[test]
    fn a_non_file_nobody_synced_is_left_alone() {
        let w = World::default()
            .local("data/m/1/raw", "a")
            .other("data/link", ObstacleKind::Symlink)
            .other("data/empty", ObstacleKind::Directory);
        assert_eq!(w.kinds(Both, Fail), ["upload data/m/1/raw"]);
    }

    #[test]
    fn a_cache_copy_of_the_sentinel_is_never_pushed() {
        // Only in the cache (no base): a plain sync must not publish it.
        let w = World::default()
            .local(SENTINEL, "s")
            .local("config/models/a.yaml", "a");
        assert_eq!(w.kinds(Both, Fail), ["upload config/models/a.yaml"]);
        assert_eq!(w.kinds(Push, Fail), ["upload config/models/a.yaml"]);
        // Changed in the cache since the last sync: still not pushed.
        let w = World::default()
            .local(SENTINEL, "s2")
            .remote(SENTINEL, "s1", "e1")
            .base(SENTINEL, "s1", "e1");
        assert!(w.kinds(Push, Fail).is_empty());
        // Both changed: the remote wins, no conflict.
        let w = World::default()
            .local(SENTINEL, "mine")
            .remote(SENTINEL, "theirs", "e2");
        assert_eq!(w.kinds(Both, Fail), [format!("download {SENTINEL}")]);
        assert!(w.kinds(Push, Fail).is_empty());
    }

    #[test]
    fn a_sync_never_deletes_the_remote_sentinel() {
        // Deleted from the cache since the last sync: the remote keeps it
        // (and a pull restores the cache copy).
        let w = World::default()
            .remote(SENTINEL, "s", "e1")
            .base(SENTINEL, "s", "e1")
            .local("config/models/a.yaml", "a")
            .remote("config/models/a.yaml", "a", "e2")
            .base("config/models/a.yaml", "a", "e2");
        assert_eq!(w.kinds(Both, Fail), [format!("download {SENTINEL}")]);
        assert!(w.kinds(Push, Fail).is_empty());
        // Never synced and only in the remote: a pull brings it down.
        let w = World::default().remote(SENTINEL, "s", "e1");
        assert_eq!(w.kinds(Pull, Fail), [format!("download {SENTINEL}")]);
        // Gone from the remote since the last sync: the cache copy goes
        // too, even if it differs.
        let w = World::default()
            .local(SENTINEL, "s2")
            .base(SENTINEL, "s1", "e1")
            .local("config/models/a.yaml", "a")
            .remote("config/models/a.yaml", "a", "e2")
            .base("config/models/a.yaml", "a", "e2");
        assert_eq!(w.kinds(Both, Fail), [format!("delete-local {SENTINEL}")]);
    }

    #[test]
    fn agreement_recorded_in_the_base_is_an_empty_plan() {
        let w = World::default()
            .local("data/a/1/raw", "x")
            .remote("data/a/1/raw", "x", "e1")
            .base("data/a/1/raw", "x", "e1");
        assert_eq!(w.diff(Both, Fail), SyncDiff::default());
    }

    #[test]
    fn first_sync_of_a_clean_cache_only_records_the_base() {
        let w = World::default()
            .local("data/a/1/raw", "x")
            .remote("data/a/1/raw", "x", "e1");
        assert_eq!(w.kinds(Both, Fail), ["record-base "]);
    }

    #[test]
    fn one_sided_changes_propagate() {
        let w = World::default()
            .local("outputs/new", "n")
            .remote("outputs/theirs", "t", "e9")
            .local("outputs/mine", "m2")
            .remote("outputs/mine", "m1", "e1")
            .base("outputs/mine", "m1", "e1")
            .local("outputs/yours", "y1")
            .remote("outputs/yours", "y2", "e3")
            .base("outputs/yours", "y1", "e2");
        assert_eq!(
            w.kinds(Both, Fail),
            [
                "upload outputs/mine",
                "upload outputs/new",
                "download outputs/theirs",
                "download outputs/yours",
            ]
        );
        assert_eq!(
            w.kinds(Push, Fail),
            ["upload outputs/mine", "upload outputs/new"]
        );
        assert_eq!(
            w.kinds(Pull, Fail),
            ["download outputs/theirs", "download outputs/yours"]
        );
    }

    #[test]
    fn one_sided_deletes_propagate_as_deletes() {
        let w = World::default()
            .remote("outputs/gone-here", "a", "e1")
            .base("outputs/gone-here", "a", "e1")
            .local("outputs/gone-there", "b")
            .base("outputs/gone-there", "b", "e2")
            .base("outputs/gone-everywhere", "c", "e3")
            .local("outputs/kept", "k")
            .remote("outputs/kept", "k", "e4")
            .base("outputs/kept", "k", "e4");
        assert_eq!(
            w.kinds(Both, Fail),
            [
                "delete-remote outputs/gone-here",
                "delete-local outputs/gone-there",
                "record-base "
            ]
        );
    }

    #[test]
    fn with_no_base_nothing_is_deleted() {
        let w = World::default()
            .local("outputs/a", "a")
            .remote("outputs/b", "b", "e1");
        assert_eq!(
            w.kinds(Both, Fail),
            ["upload outputs/a", "download outputs/b"]
        );
    }

    #[test]
    fn changes_on_both_sides_conflict_unless_a_policy_settles_them() {
        let w = World::default()
            .local("outputs/x", "mine")
            .remote("outputs/x", "theirs", "e2")
            .base("outputs/x", "old", "e1");
        assert_eq!(w.kinds(Both, Fail), ["conflict both-changed"]);
        assert_eq!(w.kinds(Both, ConflictPolicy::Local), ["upload outputs/x"]);
        assert_eq!(
            w.kinds(Both, ConflictPolicy::Remote),
            ["download outputs/x"]
        );
        assert_eq!(
            w.kinds(Both, ConflictPolicy::KeepBoth),
            [
                "rename-local outputs/x".to_string(),
                "download outputs/x".to_string(),
                format!(
                    "upload outputs/x.conflict-{}",
                    Sha256::from("mine").short(8)
                ),
            ]
        );
        let d = w.diff(Both, ConflictPolicy::Local);
        assert_eq!(d.resolved.len(), 1, "settled conflicts stay visible");
        match &d.actions[0] {
            Action::Upload(Upload { remote, .. }) => assert_eq!(
                *remote,
                RemoteExpect::Version {
                    version: "e2".into()
                },
                "overwrites only the version it saw"
            ),
            a => panic!("{a:?}"),
        }
    }

    #[test]
    fn newer_picks_by_modification_time() {
        let mut w = World::default()
            .local("outputs/x", "mine")
            .remote("outputs/x", "theirs", "e2")
            .base("outputs/x", "old", "e1");
        w.modified.insert(tp("outputs/x"), 200);
        assert_eq!(w.kinds(Both, ConflictPolicy::Newer), ["upload outputs/x"]);
        w.modified.insert(tp("outputs/x"), 50);
        assert_eq!(w.kinds(Both, ConflictPolicy::Newer), ["download outputs/x"]);
    }

    #[test]
    fn delete_against_change_conflicts() {
        let w = World::default()
            .remote("outputs/x", "changed", "e2")
            .base("outputs/x", "old", "e1")
            .local("outputs/k", "k")
            .remote("outputs/k", "k", "e5")
            .base("outputs/k", "k", "e5");
        assert_eq!(w.kinds(Both, Fail), ["conflict deleted-and-changed"]);
        assert_eq!(
            w.kinds(Both, ConflictPolicy::Remote),
            ["download outputs/x"]
        );
        assert_eq!(
            w.kinds(Both, ConflictPolicy::Local),
            ["delete-remote outputs/x"]
        );
        // A delete has no time: `newer` leaves it (the engine refuses it).
        assert_eq!(
            w.kinds(Both, ConflictPolicy::Newer),
            ["conflict deleted-and-changed"]
        );
    }

    #[test]
    fn every_action_a_policy_chose_says_which_policy_and_no_other_does() {
        let w = World::default()
            .local("outputs/x", "mine")
            .remote("outputs/x", "theirs", "e2")
            .base("outputs/x", "old", "e1")
            .local("outputs/new", "n");
        for policy in [
            ConflictPolicy::Local,
            ConflictPolicy::Remote,
            ConflictPolicy::KeepBoth,
        ] {
            let d = w.diff(Both, policy);
            let settled: Vec<_> = d
                .actions
                .iter()
                .filter(|a| a.settled_by().is_some())
                .map(|a| (a.kind(), a.settled_by()))
                .collect();
            let want = if policy == ConflictPolicy::KeepBoth {
                3
            } else {
                1
            };
            assert_eq!(settled.len(), want, "{policy}: {settled:?}");
            assert!(settled.iter().all(|(_, by)| *by == Some(policy)));
            let plain = d
                .actions
                .iter()
                .find(|a| a.path() == Some(&tp("outputs/new")));
            assert_eq!(
                plain.and_then(Action::settled_by),
                None,
                "an untouched upload"
            );
            match &d.resolved[..] {
                [Conflict::BothChanged(c)] => assert_eq!(c.path, tp("outputs/x")),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn an_emptied_cache_is_refused_by_a_guard() {
        let w = World::default()
            .remote("outputs/a", "a", "e1")
            .base("outputs/a", "a", "e1")
            .remote("outputs/b", "b", "e2")
            .base("outputs/b", "b", "e2");
        let d = w.diff(Both, Fail);
        let guards: Vec<_> = d
            .conflicts
            .iter()
            .filter_map(|c| match c {
                Conflict::DeleteGuard(DeleteGuard { guard, .. }) => Some(guard.as_str()),
                _ => None,
            })
            .collect();
        assert!(guards.contains(&"empty-cache"), "{guards:?}");
        let forced = sync_diff(&SyncInput {
            force: true,
            force_delete_local: false,
            explained: &Explained::default(),
            local: &w.local,
            local_other: &w.other,
            local_modified: &w.modified,
            remote: &w.remote,
            base: &w.base,
            unhydrated: &BTreeMap::new(),
            lazy: false,
            direction: Both,
            policy: Fail,
            max_delete_percent: 100,
        });
        assert!(forced.conflicts.is_empty());
        assert_eq!(forced.actions.len(), 2);
    }

    #[test]
    fn forcing_past_a_guard_never_deletes_the_only_copy_of_a_file() {
        // The remote lost every object the base recorded; `b` survives in
        // the remote under another name, `a` and `c` exist only here.
        let w = World::default()
            .local("outputs/a", "a")
            .base("outputs/a", "a", "e1")
            .local("outputs/b", "b")
            .base("outputs/b", "b", "e2")
            .local("outputs/c", "c")
            .base("outputs/c", "c", "e3")
            .remote("outputs/moved/b", "b", "e9");
        let diff = |force_delete_local| {
            sync_diff(&SyncInput {
                force: true,
                force_delete_local,
                explained: &Explained::default(),
                local: &w.local,
                local_other: &w.other,
                local_modified: &w.modified,
                remote: &w.remote,
                base: &w.base,
                unhydrated: &BTreeMap::new(),
                lazy: false,
                direction: Both,
                policy: Fail,
                max_delete_percent: 50,
            })
        };
        let kept = diff(false);
        let deletes: Vec<_> = kept
            .actions
            .iter()
            .filter(|a| a.kind() == "delete-local")
            .filter_map(Action::path)
            .map(TierPath::as_str)
            .collect();
        assert_eq!(deletes, ["outputs/b"], "only the file the remote still has");
        let [Conflict::DeleteGuard(DeleteGuard { guard, message })] = kept.conflicts.as_slice()
        else {
            panic!("{:?}", kept.conflicts);
        };
        assert_eq!(guard, "only-copy");
        assert!(
            message.contains("2 cache file(s)") && message.contains("outputs/a"),
            "{message}"
        );
        // Named explicitly, they go too.
        let all = diff(true);
        assert!(all.conflicts.is_empty(), "{:?}", all.conflicts);
        assert_eq!(
            all.actions
                .iter()
                .filter(|a| a.kind() == "delete-local")
                .count(),
            3
        );
        // Without --force the guards block as before.
        assert!(
            w.diff(Both, Fail)
                .conflicts
                .iter()
                .any(|c| matches!(c, Conflict::DeleteGuard(DeleteGuard { guard, .. }) if guard != "only-copy"))
        );
    }

    #[test]
    fn max_delete_percent_is_checked_at_plan_time() {
        let w = World::default()
            .remote("outputs/a", "a", "e1")
            .base("outputs/a", "a", "e1")
            .local("outputs/b", "b")
            .remote("outputs/b", "b", "e2")
            .base("outputs/b", "b", "e2");
        let d = sync_diff(&SyncInput {
            local: &w.local,
            local_other: &w.other,
            local_modified: &w.modified,
            remote: &w.remote,
            base: &w.base,
            unhydrated: &BTreeMap::new(),
            lazy: false,
            direction: Both,
            policy: Fail,
            max_delete_percent: 40,
            force: false,
            force_delete_local: false,
            explained: &Explained::default(),
        });
        assert!(
            d.conflicts
                .iter()
                .any(|c| matches!(c, Conflict::DeleteGuard(DeleteGuard { guard, .. }) if guard == "max-delete-percent")),
            "{:?}",
            d.conflicts
        );
    }
}
