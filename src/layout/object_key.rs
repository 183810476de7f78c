//! [`ObjectKey`]: the key of an object a plan names to delete, held as a
//! prefix shared by every key of a place and the rest, never as one string
//! each: a move's million deletes held 37 MB of concatenated keys, and a
//! file's rest is its [`TierPath`]'s own allocation.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::TierPath;

/// An object's key: `prefix` then `rest`, compared and written as
/// that one string (however it is split).
#[derive(Clone)]
pub struct ObjectKey {
    prefix: arcstr::ArcStr,
    rest: arcstr::ArcStr,
}

impl ObjectKey {
    /// A key held whole (read from a plan file, or one of a kind there are
    /// few of).
    pub fn new(key: &str) -> ObjectKey {
        ObjectKey {
            prefix: arcstr::ArcStr::new(),
            rest: arcstr::ArcStr::from(key),
        }
    }

    /// `prefix` then `path`, sharing both allocations.
    pub fn under(prefix: &arcstr::ArcStr, path: &TierPath) -> ObjectKey {
        ObjectKey {
            prefix: prefix.clone(),
            rest: path.arc().clone(),
        }
    }

    /// The key as one string, for a request.
    pub fn to_key(&self) -> String {
        let mut s = String::with_capacity(self.len());
        s.push_str(&self.prefix);
        s.push_str(&self.rest);
        s
    }

    /// The datastore path this key names under `prefix`, if any.
    pub fn path_under(&self, prefix: &str) -> Option<TierPath> {
        match self.prefix.strip_prefix(prefix) {
            Some("") => TierPath::parse(&self.rest).ok(),
            _ => super::Layout::remote_file_path(prefix, &self.to_key()),
        }
    }

    /// The key's length in bytes.
    fn len(&self) -> usize {
        self.prefix.len() + self.rest.len()
    }

    fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        self.prefix.bytes().chain(self.rest.bytes())
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.prefix)?;
        f.write_str(&self.rest)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_key(), f)
    }
}

impl PartialEq for ObjectKey {
    fn eq(&self, other: &ObjectKey) -> bool {
        self.len() == other.len() && self.bytes().eq(other.bytes())
    }
}

impl Eq for ObjectKey {}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &ObjectKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &ObjectKey) -> Ordering {
        self.bytes().cmp(other.bytes())
    }
}

impl PartialEq<str> for ObjectKey {
    fn eq(&self, other: &str) -> bool {
        self.len() == other.len() && self.bytes().eq(other.bytes())
    }
}

impl PartialEq<&str> for ObjectKey {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl From<&str> for ObjectKey {
    fn from(key: &str) -> ObjectKey {
        ObjectKey::new(key)
    }
}

impl From<String> for ObjectKey {
    fn from(key: String) -> ObjectKey {
        ObjectKey::new(&key)
    }
}

impl Serialize for ObjectKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ObjectKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ObjectKey, D::Error> {
        let key = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(ObjectKey::new(&key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> TierPath {
        TierPath::parse(s).unwrap()
    }

    #[test]
    fn a_key_split_anywhere_is_the_same_key() {
        let prefix = arcstr::ArcStr::from("swamp/ns/");
        let split = ObjectKey::under(&prefix, &path("data/a/b"));
        let whole = ObjectKey::new("swamp/ns/data/a/b");
        assert_eq!(split, whole);
        assert_eq!(split.cmp(&whole), Ordering::Equal);
        assert_eq!(split, "swamp/ns/data/a/b");
        assert_eq!(split.to_key(), "swamp/ns/data/a/b");
        assert_eq!(split.to_string(), "swamp/ns/data/a/b");
        assert_ne!(split, ObjectKey::new("swamp/ns/data/a/bc"));
        assert!(split < ObjectKey::new("swamp/ns/data/a/c"));
        assert!(ObjectKey::new("swamp/ns/data/a") < split);
    }

    #[test]
    fn a_key_shares_its_path_and_prefix() {
        let prefix = arcstr::ArcStr::from("p/");
        let p = path("outputs/x");
        let key = ObjectKey::under(&prefix, &p);
        assert!(arcstr::ArcStr::ptr_eq(&key.rest, p.arc()));
        assert!(arcstr::ArcStr::ptr_eq(&key.prefix, &prefix));
    }

    #[test]
    fn a_key_names_its_path_under_a_prefix_however_split() {
        let prefix = arcstr::ArcStr::from("swamp/");
        let split = ObjectKey::under(&prefix, &path("data/a"));
        assert_eq!(split.path_under("swamp/"), Some(path("data/a")));
        assert_eq!(
            ObjectKey::new("swamp/data/a").path_under("swamp/"),
            Some(path("data/a"))
        );
        assert_eq!(
            split.path_under(""),
            None,
            "swamp/data/a is no datastore path"
        );
        assert_eq!(
            ObjectKey::new("swamp/.namespace.json").path_under("swamp/"),
            None
        );
        assert_eq!(ObjectKey::new("other/data/a").path_under("swamp/"), None);
    }

    #[test]
    fn a_key_is_written_and_read_as_one_string() {
        let prefix = arcstr::ArcStr::from("swamp/");
        let split = ObjectKey::under(&prefix, &path("data/a"));
        let json = serde_json::to_string(&split).unwrap();
        assert_eq!(json, r#""swamp/data/a""#);
        let back: ObjectKey = serde_json::from_str(&json).unwrap();
        assert_eq!(back, split);
        assert_eq!(format!("{back:?}"), r#""swamp/data/a""#);
    }
}
