//! The two inputs of every plan: what should be ([`desired`]) and what is
//! ([`observed`], read through the one function [`observe()`]), plus the
//! persistent caches that keep observing cheap: file hashes
//! ([`hash_cache`]) and directory listings ([`dir_listings`]), used by the
//! parallel [`walk`]. Nothing else that planning uses touches the disk or
//! the network.

pub(crate) mod base;
pub mod delete_records;
pub(crate) mod desired;
pub(crate) mod diff_bodies;
pub(crate) mod dir_listings;
pub(crate) mod gallop;
pub(crate) mod hash_cache;
pub mod history;
pub(crate) mod journaled;
pub(crate) mod kept;
pub(crate) mod learnt;
pub(crate) mod managed;
pub(crate) mod moved;
pub(crate) mod observe;
pub mod remote;
pub(crate) mod remote_seen;
pub(crate) mod spill;
pub(crate) mod stamp;
mod stat;
pub(crate) mod tree;
pub(crate) mod walk;

pub use base::{BaseEntry, SyncBase, Unhydrated};
pub use desired::{Desired, Direction, Scope};
pub use hash_cache::HashCache;
pub use kept::KeptListing;
pub use learnt::Learnt;
pub use observe::{DIFF_SIZE_CAP, ObserveOptions, observe, observe_local};
pub use remote::{RemoteObject, RemoteSnapshot};
pub use tree::{Observed, Obstacle, ObstacleKind, PlacementState, TextPair};

/// A regular file as planning sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileState {
    pub size: u64,
    pub sha256: crate::digest::Sha256,
}

/// The map of `pairs`, which come (nearly) in key order; of pairs with
/// equal keys the last is kept. A `BTreeMap` filled by inserting keys in
/// order leaves every node it splits about half full; one collected from
/// sorted pairs is built bottom-up with its nodes full (the collect's
/// stable sort only checks pairs already in order). For the per-file maps
/// of a 100,000-file namespace that is tens of MB less held while they are
/// compared.
pub fn sorted_map<K: Ord, V>(pairs: Vec<(K, V)>) -> std::collections::BTreeMap<K, V> {
    pairs.into_iter().collect()
}

/// Two iterators, each in order of `key` and no key in both, as one in
/// that order (a loaded list and what a run learnt, saved together).
pub(crate) fn merged_in_order<T, K: Ord>(
    a: impl Iterator<Item = T>,
    b: impl Iterator<Item = T>,
    key: impl Fn(&T) -> K,
) -> impl Iterator<Item = T> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if key(y) < key(x) => b.next(),
        (Some(_), _) => a.next(),
        (None, _) => b.next(),
    })
}

/// The map of `runs` of pairs, each sorted, no key in two runs (the pages
/// of a listing), built with full nodes without holding the pairs twice
/// over (as collecting them into one list for [`sorted_map`] would): each
/// run becomes a map, and maps of like size are merged (each merge
/// rebuilds both with full nodes, freeing them as it goes), as a merge
/// sort does, so each pair is moved about log2(runs) times.
pub fn merged_map<K: Ord, V>(
    runs: impl IntoIterator<Item = Vec<(K, V)>>,
) -> std::collections::BTreeMap<K, V> {
    let mut stack = MapStack(Vec::new());
    for run in runs {
        stack.push(sorted_map(run));
    }
    stack.finish()
}

/// Maps of like size merged as they come (see [`merged_map`]); of equal
/// keys the later map's pair is kept.
struct MapStack<K, V>(Vec<std::collections::BTreeMap<K, V>>);

impl<K: Ord, V> MapStack<K, V> {
    fn push(&mut self, mut map: std::collections::BTreeMap<K, V>) {
        while let Some(top) = self.0.last()
            && top.len() <= 2 * map.len()
        {
            let mut top = self.0.pop().expect("the last exists");
            top.append(&mut map);
            map = top;
        }
        self.0.push(map);
    }

    fn finish(mut self) -> std::collections::BTreeMap<K, V> {
        let mut out = std::collections::BTreeMap::new();
        while let Some(mut map) = self.0.pop() {
            map.append(&mut out);
            out = map;
        }
        out
    }
}

/// Pairs gathered into a map as they come (in any order; of equal keys
/// the last kept): in runs of a fixed size, each made a map as it fills
/// and merged as [`merged_map`] does. A million files' pairs are never
/// one list that doubles as it grows, held beside the map made of it.
pub struct MapBuilder<K, V> {
    run: Vec<(K, V)>,
    maps: MapStack<K, V>,
}

/// Pairs a [`MapBuilder`] holds before it makes them a map. Each merge
/// moves every pair already in the maps, so the fewer runs the fewer
/// moves: runs of 16,384 moved each of a million observed files about six
/// times, a tenth of a warm plan's time; of 131,072 about three times.
/// A run is a few megabytes beside maps of a hundred.
const MAP_RUN: usize = 1 << 17;

impl<K: Ord, V> Default for MapBuilder<K, V> {
    fn default() -> Self {
        MapBuilder {
            run: Vec::new(),
            maps: MapStack(Vec::new()),
        }
    }
}

impl<K: Ord, V> MapBuilder<K, V> {
    pub fn push(&mut self, key: K, value: V) {
        if self.run.len() == MAP_RUN {
            // The next run's room is taken once this one is a map: taken
            // before, it was a run's worth more (9 MB of a sync base's
            // entries) at the peak of a pull's verifying plan.
            let run = std::mem::take(&mut self.run);
            self.maps.push(sorted_map(run));
            self.run = Vec::with_capacity(MAP_RUN);
        }
        self.run.push((key, value));
    }

    pub fn finish(mut self) -> std::collections::BTreeMap<K, V> {
        let run = std::mem::take(&mut self.run);
        self.maps.push(sorted_map(run));
        self.maps.finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{MAP_RUN, MapBuilder, merged_map, sorted_map};

    /// The map inserting every pair in turn makes (the later of equal keys
    /// kept).
    fn inserted(runs: &[Vec<(u32, u32)>]) -> BTreeMap<u32, u32> {
        let mut map = BTreeMap::new();
        for &(k, v) in runs.iter().flatten() {
            map.insert(k, v);
        }
        map
    }

    #[test]
    fn a_map_merged_from_runs_holds_every_pair_of_every_run() {
        // Runs of uneven sizes, out of key order (as a split listing's
        // parts come), none sharing a key.
        for sizes in [
            vec![],
            vec![0],
            vec![5],
            vec![1, 1000, 3, 64, 64, 200, 0, 7],
            vec![300; 9],
        ] {
            let mut next = 0;
            let mut runs: Vec<Vec<(u32, u32)>> = sizes
                .iter()
                .map(|&n| {
                    let run = (next..next + n).map(|k| (k, k * 7)).collect();
                    next += n;
                    run
                })
                .collect();
            runs.reverse();
            if let Some(mid) = runs.len().checked_sub(1).map(|last| last / 2) {
                runs.swap(0, mid);
            }
            let want = inserted(&runs);
            let got = merged_map(runs.clone());
            assert_eq!(got, want, "runs of {sizes:?}");
            assert_eq!(got.len() as u32, next);
        }
    }

    #[test]
    fn of_equal_keys_the_later_pair_is_kept() {
        let runs = vec![
            vec![(1, 10), (2, 20)],
            vec![(2, 21), (3, 30)],
            vec![(1, 11)],
        ];
        assert_eq!(merged_map(runs.clone()), inserted(&runs));
        assert_eq!(merged_map(runs).get(&1), Some(&11));
        assert_eq!(
            sorted_map(vec![(3, 1), (1, 1), (3, 2)]),
            BTreeMap::from([(1, 1), (3, 2)])
        );
    }

    #[test]
    fn a_builder_makes_the_map_inserting_each_pair_would() {
        // Several runs, keys out of order and repeated across runs.
        let n = (MAP_RUN * 3 + 17) as u32;
        let pairs: Vec<(u32, u32)> = (0..n).map(|i| ((i * 7919) % (n / 2), i)).collect();
        let mut builder = MapBuilder::default();
        for &(k, v) in &pairs {
            builder.push(k, v);
        }
        assert_eq!(builder.finish(), inserted(&[pairs]));
        assert!(MapBuilder::<u32, u32>::default().finish().is_empty());
    }
}
