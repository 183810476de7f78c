//! [`TierPath`]: a checked path inside the datastore tier, like
//! `data/model/1/raw`. It can never escape its root: no `..`, no absolute
//! paths, no backslashes or NUL, and its first segment is a tier.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Tier;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TierPathError {
    #[error("path {0:?} is empty or has an empty segment")]
    Empty(String),
    #[error("path {0:?} would escape the datastore (`..`, `.`, absolute, backslash or NUL)")]
    Escapes(String),
    #[error("path {0:?} is not inside a datastore directory")]
    NotInTier(String),
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TierPath {
    /// Shared, not copied: the same path is a key of the cache, the remote
    /// and the sync base maps, and of many actions (see [`TierPath::share`]).
    /// Its first segment names the tier, which is read from it rather than
    /// held beside it; its length is in the allocation, not the handle: 8
    /// bytes a path in every map and action (`Arc<str>` was 16).
    path: arcstr::ArcStr,
}

impl TierPath {
    pub fn parse(s: &str) -> Result<TierPath, TierPathError> {
        if s.starts_with('/') || s.contains('\\') || s.contains('\0') {
            return Err(TierPathError::Escapes(s.to_string()));
        }
        let mut segments = s.split('/');
        let first = segments.next().unwrap_or("");
        let mut n = 0;
        for seg in s.split('/') {
            n += 1;
            match seg {
                "" => return Err(TierPathError::Empty(s.to_string())),
                "." | ".." => return Err(TierPathError::Escapes(s.to_string())),
                _ => {}
            }
        }
        if Tier::parse(first).is_none() || n < 2 {
            return Err(TierPathError::NotInTier(s.to_string()));
        }
        Ok(TierPath {
            path: arcstr::ArcStr::from(s),
        })
    }

    pub fn as_str(&self) -> &str {
        &self.path
    }

    /// The path's shared allocation (an [`super::ObjectKey`] holds it).
    pub(crate) fn arc(&self) -> &arcstr::ArcStr {
        &self.path
    }

    /// The same path as a key of `map` holds, sharing its allocation (a
    /// copy of `self` when `map` lacks it): at 100,000 files each copy of
    /// every path is megabytes.
    pub fn share<V>(self, map: &std::collections::BTreeMap<TierPath, V>) -> TierPath {
        match map.get_key_value(&self) {
            Some((k, _)) => k.clone(),
            None => self,
        }
    }

    /// The same path as `known` holds, sharing its allocation (`self` when
    /// it holds none).
    pub fn shared_with(self, known: Option<&dyn KnownPaths>) -> TierPath {
        match known {
            Some(k) => k.share(self),
            None => self,
        }
    }

    /// Whether `other` is this path's very allocation (for tests of sharing).
    #[cfg(test)]
    pub fn same_allocation(&self, other: &TierPath) -> bool {
        arcstr::ArcStr::ptr_eq(&self.path, &other.path)
    }

    pub fn tier(&self) -> Tier {
        let first = self.path.split('/').next().unwrap_or_default();
        // Checked by `parse`, the only way a TierPath is made.
        Tier::parse(first).unwrap_or(Tier::Data)
    }

    /// The segments after the tier.
    pub fn rest_segments(&self) -> impl Iterator<Item = &str> {
        self.path.split('/').skip(1)
    }

    /// `data/a/b` → [`data/a`, `data/a/b`... excluding self]: each proper
    /// ancestor below the tier directory, shortest first.
    pub fn ancestors(&self) -> Vec<&str> {
        self.path
            .match_indices('/')
            .map(|(i, _)| &self.path[..i])
            .collect()
    }

    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// Paths already held (the keys of a map), whose allocations equal new
/// paths share ([`TierPath::shared_with`]).
pub trait KnownPaths {
    /// The allocation held for `path`, if any.
    fn known(&self, path: &TierPath) -> Option<TierPath>;

    fn share(&self, path: TierPath) -> TierPath {
        self.known(&path).unwrap_or(path)
    }
}

impl<V> KnownPaths for std::collections::BTreeMap<TierPath, V> {
    fn known(&self, path: &TierPath) -> Option<TierPath> {
        self.get_key_value(path).map(|(k, _)| k.clone())
    }
}

/// The paths any of several holders hold, the first that holds one
/// answering (a verifying plan's walk, then the sync base it loaded).
pub struct AnyOf<'a>(pub Vec<&'a dyn KnownPaths>);

impl KnownPaths for AnyOf<'_> {
    fn known(&self, path: &TierPath) -> Option<TierPath> {
        self.0.iter().find_map(|k| k.known(path))
    }
}

impl fmt::Display for TierPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)
    }
}

impl TryFrom<String> for TierPath {
    type Error = TierPathError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        TierPath::parse(&s)
    }
}

impl From<TierPath> for String {
    fn from(p: TierPath) -> String {
        p.path.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_shares_the_allocation_of_the_first_holder_that_holds_it() {
        use std::collections::BTreeMap;
        let p = |s: &str| TierPath::parse(s).unwrap();
        let walked: BTreeMap<TierPath, ()> = [(p("data/a"), ())].into();
        let base: BTreeMap<TierPath, u8> = [(p("data/a"), 1), (p("data/b"), 2)].into();
        let known = AnyOf(vec![&walked, &base]);
        let (in_walk, in_base) = (walked.keys().next().unwrap(), base.keys().nth(1).unwrap());
        assert!(known.share(p("data/a")).same_allocation(in_walk));
        assert!(known.share(p("data/b")).same_allocation(in_base));
        let fresh = p("data/c");
        assert!(known.share(fresh.clone()).same_allocation(&fresh));
    }

    #[test]
    fn a_path_is_held_in_8_bytes_and_ordered_shared_and_hashed_by_its_text() {
        // A key of every per-file map and a field of every action.
        assert_eq!(std::mem::size_of::<TierPath>(), 8);
        let p = |s: &str| TierPath::parse(s).unwrap();
        let (a, b) = (p("data/a/2"), p("data/a/10"));
        assert!(b < a, "by text, not by length or address");
        assert_eq!(p("data/a/2"), a);
        assert!(!p("data/a/2").same_allocation(&a));
        assert!(a.clone().same_allocation(&a));
        let set: std::collections::HashSet<TierPath> = [a.clone(), p("data/a/2")].into();
        assert_eq!(set.len(), 1);
        assert_eq!(String::from(a), "data/a/2");
    }

    #[test]
    fn accepts_tier_paths() {
        let p = TierPath::parse("data/model/output/3/raw").unwrap();
        assert_eq!(p.tier(), Tier::Data);
        assert_eq!(
            p.rest_segments().collect::<Vec<_>>(),
            ["model", "output", "3", "raw"]
        );
        assert_eq!(
            p.ancestors(),
            [
                "data",
                "data/model",
                "data/model/output",
                "data/model/output/3"
            ]
        );
        assert_eq!(p.file_name(), "raw");
    }

    #[test]
    fn refuses_escapes() {
        for bad in [
            "data/../../escape",
            "/data/x",
            "data\\x",
            "data/./x",
            "data/x\0",
            "data/..",
        ] {
            assert_eq!(
                TierPath::parse(bad),
                Err(TierPathError::Escapes(bad.to_string())),
                "{bad}"
            );
        }
        assert!(matches!(
            TierPath::parse("data//x"),
            Err(TierPathError::Empty(_))
        ));
        assert!(matches!(
            TierPath::parse("secrets/k"),
            Err(TierPathError::NotInTier(_))
        ));
        assert!(matches!(
            TierPath::parse("data"),
            Err(TierPathError::NotInTier(_))
        ));
    }
}
