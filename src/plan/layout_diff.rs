//! The layout diff: the moves and drops that take each file from the
//! source placements to the target, and what blocks them (a different file
//! at the target, an obstacle, something that is not a file). Pure, so
//! every rule here is unit-tested on hand-built states; [`super::compose`]
//! orders it with the rest of a plan.

use crate::plan::action::{DropDuplicate, Move, RelocateTrash, RemoveTemp};
use crate::plan::conflict::{DifferentAtTarget, Obstacle, Unsupported};
use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;

use crate::layout::{Tier, TierPath};
use crate::state::{Desired, FileState, Observed, ObstacleKind, PlacementState};

use super::action::Action;
use super::{Conflict, PlacementInfo, Plan};

/// Computes the plan that takes `observed` to `desired`.
///
/// `observed.placements[0]` must be the target and `[1..]` the sources in
/// `desired.sources` order (as [`Observed::observe`] is called by the engine).
pub fn diff(desired: &Desired, observed: &Observed) -> Plan {
    let target = &observed.placements[0];
    let sources = &observed.placements[1..];
    debug_assert_eq!(target.placement, desired.target);
    debug_assert_eq!(sources.len(), desired.sources.len());

    // Built for the first source that moves anything: a sync has none,
    // and this set is 34 bytes a file at its peak.
    let target_files: std::cell::OnceCell<BTreeSet<&str>> = std::cell::OnceCell::new();
    let mut actions = Vec::new();
    let mut conflicts = Vec::new();
    let mut blocked = Blocked::default();
    // What earlier sources will have put at the target by the time a later
    // source's copy is handled.
    let mut incoming: HashMap<&TierPath, &FileState> = HashMap::default();

    // Leftovers of interrupted writes go first: never data, never moved.
    stale_temps(target, sources, &mut actions);

    for (i, source) in sources.iter().enumerate() {
        if source.root == target.root {
            // Same directory under another name: nothing can move.
            continue;
        }
        // A directory with no data in it is in nobody's way at a source.
        for o in source
            .obstacles
            .iter()
            .filter(|o| o.kind != ObstacleKind::Directory)
        {
            conflicts.push(Conflict::Unsupported(Unsupported {
                path: o.path.clone(),
                source: i,
                what: o.kind,
            }));
        }
        let mut into = Into {
            later_sources: i + 1 < sources.len(),
            target,
            target_files: target_files
                .get_or_init(|| target.files.keys().map(TierPath::as_str).collect()),
            incoming: &mut incoming,
            actions: &mut actions,
            conflicts: &mut conflicts,
            blocked: &mut blocked,
        };
        for (path, file) in source.files.iter() {
            into.one(i, path, file);
        }
    }
    conflicts.extend(blocked.into_conflicts());

    let moved_data = actions
        .iter()
        .any(|a| matches!(a, Action::Move(Move { path, .. }) if path.tier() == Tier::Data));
    if moved_data {
        actions.push(Action::InvalidateCatalog);
    }
    if desired.migrating() && conflicts.is_empty() {
        actions.push(Action::FinishMigration);
    }

    Plan {
        scope: desired.scope,
        target: info(target),
        sources: sources.iter().map(info).collect(),
        remote: None,
        actions,
        conflicts,
        no_undo: false,
        diffs: Vec::new(),
        resumes: Vec::new(),
        other_clones: Vec::new(),
        authored: Vec::new(),
    }
}

/// Removes the leftovers of interrupted writes, and moves trash an older
/// swamp left in a remote's cache out of its tier tree, at the target and
/// at every source that is another directory.
fn stale_temps(target: &PlacementState, sources: &[PlacementState], actions: &mut Vec<Action>) {
    for (source, state) in std::iter::once((None, target)).chain(
        sources
            .iter()
            .enumerate()
            .filter(|(_, s)| s.root != target.root)
            .map(|(i, s)| (Some(i), s)),
    ) {
        if !state.legacy_trash.is_empty() {
            actions.push(Action::RelocateTrash(RelocateTrash {
                source,
                applies: state.legacy_trash.iter().map(|t| t.id.clone()).collect(),
                files: state.legacy_trash.iter().map(|t| t.files).sum(),
                bytes: state.legacy_trash.iter().map(|t| t.bytes).sum(),
            }));
        }
        for t in state.temps.iter().filter(|t| t.stale) {
            actions.push(Action::RemoveTemp(RemoveTemp {
                path: t.path.clone(),
                source,
                size: t.size,
                remote: false,
            }));
        }
    }
}

/// Where a source's files go: the target as observed, what earlier sources
/// will have put there, and the plan being built.
struct Into<'a, 's> {
    /// Whether a source after this one will look at `incoming` (with one
    /// source, a million moves need no map of them).
    later_sources: bool,
    target: &'s PlacementState,
    target_files: &'a BTreeSet<&'s str>,
    incoming: &'a mut HashMap<&'s TierPath, &'s FileState>,
    actions: &'a mut Vec<Action>,
    conflicts: &'a mut Vec<Conflict>,
    blocked: &'a mut Blocked,
}

impl<'s> Into<'_, 's> {
    /// Source `i`'s file at `path`: dropped as a duplicate, a conflict with
    /// what differs at the target, blocked by an obstacle, or moved.
    fn one(&mut self, i: usize, path: &'s TierPath, file: &'s FileState) {
        let at_target = self
            .target
            .files
            .get(path)
            .or_else(|| self.incoming.get(path).copied());
        match at_target {
            Some(t) if t.sha256 == file.sha256 => {
                self.actions.push(Action::DropDuplicate(DropDuplicate {
                    path: path.clone(),
                    source: i,
                    size: file.size,
                    sha256: file.sha256,
                }))
            }
            Some(t) => self
                .conflicts
                .push(Conflict::DifferentAtTarget(DifferentAtTarget {
                    path: path.clone(),
                    source: i,
                    source_sha256: file.sha256.hex(),
                    target_sha256: t.sha256.hex(),
                    source_size: Some(file.size),
                    target_size: Some(t.size),
                    diff: None,
                })),
            None => match obstacle_for(self.target, self.target_files, path) {
                Some((at, kind)) => self.blocked.add(at, kind, path),
                None => {
                    if self.later_sources {
                        self.incoming.insert(path, file);
                    }
                    self.actions.push(Action::Move(Move {
                        path: path.clone(),
                        source: i,
                        size: file.size,
                        sha256: file.sha256,
                    }));
                }
            },
        }
    }
}

fn info(state: &PlacementState) -> PlacementInfo {
    PlacementInfo {
        datastore: state.placement.datastore.clone(),
        namespace: state.placement.namespace.clone(),
        root: state.label.clone(),
        dir: state.root.clone(),
    }
}

/// Files kept from landing at the target, by what stands in their way:
/// one [`Conflict::Obstacle`] per obstacle, with a count and an example.
#[derive(Default)]
pub(crate) struct Blocked(BTreeMap<String, (ObstacleKind, usize, TierPath)>);

impl Blocked {
    pub(crate) fn add(&mut self, at: String, kind: ObstacleKind, path: &TierPath) {
        self.0.entry(at).or_insert((kind, 0, path.clone())).1 += 1;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn into_conflicts(self) -> impl Iterator<Item = Conflict> {
        self.0
            .into_iter()
            .map(|(obstacle, (what, blocked_files, example))| {
                Conflict::Obstacle(Obstacle {
                    obstacle,
                    what,
                    blocked_files,
                    example,
                })
            })
    }
}

/// What at the target keeps `path` from being created there, if anything:
/// the root or an ancestor that is not a directory, or a directory (or
/// other non-file) at the path itself.
pub(crate) fn obstacle_for(
    target: &PlacementState,
    target_files: &BTreeSet<&str>,
    path: &TierPath,
) -> Option<(String, ObstacleKind)> {
    if target.obstacles.is_empty() && target_files.is_empty() {
        // Nothing there (a new namespace, a first pull): nothing in the
        // way, found without a lookup or a string made per file.
        return None;
    }
    if let Some(o) = target.obstacle_at("") {
        return Some((o.path.clone(), o.kind));
    }
    for ancestor in path.ancestors() {
        // A directory is what an ancestor must be.
        if let Some(o) = target.obstacle_at(ancestor)
            && o.kind != ObstacleKind::Directory
        {
            return Some((o.path.clone(), o.kind));
        }
        if target_files.contains(ancestor) {
            return Some((ancestor.to_string(), ObstacleKind::NotADirectory));
        }
    }
    if let Some(o) = target.obstacle_at(path.as_str()) {
        return Some((o.path.clone(), o.kind));
    }
    let dir_prefix = format!("{}/", path.as_str());
    let has_children = target_files
        .range(dir_prefix.as_str()..)
        .next()
        .is_some_and(|p| p.starts_with(&dir_prefix));
    has_children.then(|| (path.as_str().to_string(), ObstacleKind::Directory))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::{DatastoreConfig, Namespace, Placement};
    use crate::digest::Sha256;
    use crate::state::{Obstacle, Scope};

    fn solo() -> Placement {
        Placement {
            datastore: DatastoreConfig::Local,
            namespace: None,
        }
    }

    fn ns(n: &str) -> Placement {
        Placement {
            datastore: DatastoreConfig::Local,
            namespace: Some(Namespace::parse(n).unwrap()),
        }
    }

    fn state(p: Placement, files: &[(&str, &str)]) -> PlacementState {
        let root = match &p.namespace {
            Some(n) => PathBuf::from("/r/.swamp").join(n.as_str()),
            None => PathBuf::from("/r/.swamp"),
        };
        PlacementState {
            placement: p,
            label: root.display().to_string(),
            root,
            files: files
                .iter()
                .map(|(path, sha)| {
                    (
                        TierPath::parse(path).unwrap(),
                        FileState {
                            size: sha.len() as u64,
                            sha256: (*sha).into(),
                        },
                    )
                })
                .collect::<std::collections::BTreeMap<_, _>>()
                .into(),
            obstacles: vec![],
            temps: vec![],
            remote: None,
            legacy_trash: Vec::new(),
        }
    }

    fn desired(target: Placement, sources: Vec<Placement>) -> Desired {
        Desired {
            scope: Scope::All,
            target,
            sources,
        }
    }

    fn kinds(plan: &Plan) -> Vec<(&str, Option<&str>)> {
        plan.actions
            .iter()
            .map(|a| (a.kind(), a.path().map(TierPath::as_str)))
            .collect()
    }

    #[test]
    fn converged_state_has_an_empty_plan() {
        let d = desired(ns("h"), vec![]);
        let o = Observed {
            placements: vec![state(ns("h"), &[("data/a/1/raw", "aa")])],
            ..Observed::default()
        };
        assert!(diff(&d, &o).is_empty());
    }

    #[test]
    fn moves_every_source_file_then_invalidates_catalog_then_finishes() {
        let d = desired(ns("h"), vec![solo()]);
        let o = Observed {
            placements: vec![
                state(ns("h"), &[]),
                state(solo(), &[("data/a/1/raw", "aa"), ("outputs/x.yaml", "bb")]),
            ],
            ..Observed::default()
        };
        let plan = diff(&d, &o);
        assert_eq!(
            kinds(&plan),
            [
                ("move", Some("data/a/1/raw")),
                ("move", Some("outputs/x.yaml")),
                ("invalidate-catalog", None),
                ("finish-migration", None)
            ]
        );
        assert!(!plan.has_conflicts());
    }

    #[test]
    fn identical_file_at_target_is_dropped_not_conflicting() {
        let d = desired(ns("h"), vec![solo()]);
        let o = Observed {
            placements: vec![
                state(ns("h"), &[("outputs/x", "same")]),
                state(solo(), &[("outputs/x", "same")]),
            ],
            ..Observed::default()
        };
        let plan = diff(&d, &o);
        assert_eq!(
            kinds(&plan),
            [
                ("drop-duplicate", Some("outputs/x")),
                ("finish-migration", None)
            ]
        );
    }

    #[test]
    fn different_file_at_target_is_a_conflict_and_blocks_finishing() {
        let d = desired(ns("h"), vec![solo()]);
        let o = Observed {
            placements: vec![
                state(ns("h"), &[("outputs/x", "theirs")]),
                state(solo(), &[("outputs/x", "ours"), ("outputs/y", "y")]),
            ],
            ..Observed::default()
        };
        let plan = diff(&d, &o);
        assert_eq!(plan.conflicts.len(), 1);
        match &plan.conflicts[0] {
            Conflict::DifferentAtTarget(DifferentAtTarget {
                source_sha256,
                target_sha256,
                ..
            }) => {
                assert_eq!(*source_sha256, Sha256::from("ours").hex());
                assert_eq!(*target_sha256, Sha256::from("theirs").hex());
            }
            c => panic!("unexpected {c:?}"),
        }
        assert!(!kinds(&plan).contains(&("finish-migration", None)));
    }

    #[test]
    fn plain_file_where_a_tier_directory_must_go_blocks_its_files() {
        let d = desired(ns("h"), vec![solo()]);
        let mut target = state(ns("h"), &[]);
        target
            .obstacles
            .push(Obstacle::new("outputs", ObstacleKind::NotADirectory));
        let o = Observed {
            placements: vec![
                target,
                state(
                    solo(),
                    &[
                        ("outputs/a", "1"),
                        ("outputs/b", "2"),
                        ("data/d/1/raw", "3"),
                    ],
                ),
            ],
            ..Observed::default()
        };
        let plan = diff(&d, &o);
        assert_eq!(
            plan.conflicts,
            [Conflict::Obstacle(crate::plan::conflict::Obstacle {
                obstacle: "outputs".into(),
                what: ObstacleKind::NotADirectory,
                blocked_files: 2,
                example: TierPath::parse("outputs/a").unwrap(),
            })]
        );
        // the unblocked file is still planned, but apply refuses while conflicts exist
        assert!(kinds(&plan).contains(&("move", Some("data/d/1/raw"))));
    }

    #[test]
    fn file_at_target_where_a_directory_must_go_is_an_obstacle() {
        let d = desired(ns("h"), vec![solo()]);
        let o = Observed {
            placements: vec![
                state(ns("h"), &[("outputs/a", "f")]),
                state(solo(), &[("outputs/a/b", "1")]),
            ],
            ..Observed::default()
        };
        let plan = diff(&d, &o);
        assert!(matches!(
            &plan.conflicts[..],
            [Conflict::Obstacle(crate::plan::conflict::Obstacle { obstacle, what: ObstacleKind::NotADirectory, .. })] if obstacle == "outputs/a"
        ));
    }

    #[test]
    fn directory_at_target_where_a_file_must_go_is_an_obstacle() {
        let d = desired(ns("h"), vec![solo()]);
        let o = Observed {
            placements: vec![
                state(ns("h"), &[("outputs/a/b", "f")]),
                state(solo(), &[("outputs/a", "1")]),
            ],
            ..Observed::default()
        };
        let plan = diff(&d, &o);
        assert!(matches!(
            &plan.conflicts[..],
            [Conflict::Obstacle(crate::plan::conflict::Obstacle {
                what: ObstacleKind::Directory,
                ..
            })]
        ));
    }

    #[test]
    fn two_sources_with_the_same_file_move_once_and_drop_once() {
        let d = desired(solo(), vec![ns("a"), ns("b")]);
        let o = Observed {
            placements: vec![
                state(solo(), &[]),
                state(ns("a"), &[("outputs/x", "same")]),
                state(ns("b"), &[("outputs/x", "same")]),
            ],
            ..Observed::default()
        };
        let plan = diff(&d, &o);
        assert_eq!(
            kinds(&plan),
            [
                ("move", Some("outputs/x")),
                ("drop-duplicate", Some("outputs/x")),
                ("finish-migration", None)
            ]
        );
    }

    #[test]
    fn recorded_migration_with_nothing_left_only_finishes() {
        let d = desired(ns("h"), vec![solo()]);
        let o = Observed {
            placements: vec![state(ns("h"), &[("outputs/x", "1")]), state(solo(), &[])],
            ..Observed::default()
        };
        assert_eq!(kinds(&diff(&d, &o)), [("finish-migration", None)]);
    }

    #[test]
    fn an_empty_directory_at_a_move_destination_is_an_obstacle_at_plan_time() {
        let d = desired(ns("h"), vec![solo()]);
        let mut target = state(ns("h"), &[]);
        target
            .obstacles
            .push(Obstacle::new("data/a/1/raw", ObstacleKind::Directory));
        // An empty directory where a directory goes is no obstacle.
        target
            .obstacles
            .push(Obstacle::new("data/b", ObstacleKind::Directory));
        target.obstacles.sort_by(|a, b| a.path.cmp(&b.path));
        let o = Observed {
            placements: vec![
                target,
                state(solo(), &[("data/a/1/raw", "1"), ("data/b/1/raw", "2")]),
            ],
            ..Observed::default()
        };
        let plan = diff(&d, &o);
        assert_eq!(
            plan.conflicts,
            [Conflict::Obstacle(crate::plan::conflict::Obstacle {
                obstacle: "data/a/1/raw".into(),
                what: ObstacleKind::Directory,
                blocked_files: 1,
                example: TierPath::parse("data/a/1/raw").unwrap(),
            })]
        );
        assert!(kinds(&plan).contains(&("move", Some("data/b/1/raw"))));
        assert!(!kinds(&plan).contains(&("finish-migration", None)));
    }

    #[test]
    fn stale_temp_files_are_removed_first_and_fresh_ones_left_alone() {
        let d = desired(ns("h"), vec![solo()]);
        let mut target = state(ns("h"), &[]);
        let mut source = state(solo(), &[("data/a/1/raw", "1")]);
        let temp = |p: &str, stale| crate::state::tree::TempFile {
            path: TierPath::parse(p).unwrap(),
            size: 3,
            stale,
        };
        target.temps = vec![temp("data/x/.swamp-tmp-1", true)];
        source.temps = vec![
            temp("data/a/1/.swamp-tmp-2", true),
            temp("data/a/1/.swamp-tmp-3", false),
        ];
        // An empty directory at a source is nobody's obstacle.
        source
            .obstacles
            .push(Obstacle::new("outputs/empty", ObstacleKind::Directory));
        let o = Observed {
            placements: vec![target, source],
            ..Observed::default()
        };
        let plan = diff(&d, &o);
        assert!(!plan.has_conflicts(), "{:?}", plan.conflicts);
        assert_eq!(
            kinds(&plan),
            [
                ("remove-temp", Some("data/x/.swamp-tmp-1")),
                ("remove-temp", Some("data/a/1/.swamp-tmp-2")),
                ("move", Some("data/a/1/raw")),
                ("invalidate-catalog", None),
                ("finish-migration", None)
            ]
        );
        assert!(matches!(
            &plan.actions[1],
            Action::RemoveTemp(RemoveTemp {
                source: Some(0),
                ..
            })
        ));
    }

    #[test]
    fn source_symlink_is_reported_not_moved() {
        let d = desired(ns("h"), vec![solo()]);
        let mut source = state(solo(), &[]);
        source
            .obstacles
            .push(Obstacle::new("outputs/link", ObstacleKind::Symlink));
        let o = Observed {
            placements: vec![state(ns("h"), &[]), source],
            ..Observed::default()
        };
        let plan = diff(&d, &o);
        assert_eq!(plan.conflicts.len(), 1);
        assert_eq!(plan.conflicts[0].kind(), "unsupported");
    }
}
