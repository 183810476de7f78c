//! Namespace slugs: what a namespace may be called.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Names a namespace may not take, because `<root>/<ns>` would then collide
/// with a tier or internal directory.
pub const RESERVED_NAMES: [&str; 16] = [
    "data",
    "outputs",
    "workflow-runs",
    "definitions-evaluated",
    "workflows-evaluated",
    "auto-definitions",
    "audit",
    "telemetry",
    "files",
    "config",
    "secrets",
    "vault-bundles",
    "bundles",
    "logs",
    "repos",
    // The reconciler's own state directory (`layout::STATE_DIR`).
    "state",
];

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamespaceError {
    #[error("namespace is empty; use `swamp datastore namespace unset` for the solo layout")]
    Empty,
    #[error("namespace {0:?} is longer than 64 characters")]
    TooLong(String),
    #[error(
        "namespace {0:?} is not a slug: use lowercase letters, digits and inner dashes (like `homelab` or `team-a`)"
    )]
    NotSlug(String),
    #[error("namespace {0:?} is reserved: it names a datastore directory; choose another name")]
    Reserved(String),
}

/// A validated namespace slug: `[a-z0-9]([a-z0-9-]*[a-z0-9])?`, at most 64
/// characters, and not a tier or internal directory name (so `<root>/<ns>`
/// can never be mistaken for `<root>/<tier>`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Namespace(String);

impl Namespace {
    pub fn parse(s: &str) -> Result<Namespace, NamespaceError> {
        if s.is_empty() {
            return Err(NamespaceError::Empty);
        }
        if s.len() > 64 {
            return Err(NamespaceError::TooLong(s.to_string()));
        }
        let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
        if !s.chars().all(ok_char) || s.starts_with('-') || s.ends_with('-') {
            return Err(NamespaceError::NotSlug(s.to_string()));
        }
        if RESERVED_NAMES.contains(&s) {
            return Err(NamespaceError::Reserved(s.to_string()));
        }
        Ok(Namespace(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Namespace {
    type Error = NamespaceError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Namespace::parse(&s)
    }
}

impl From<Namespace> for String {
    fn from(ns: Namespace) -> String {
        ns.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_slugs() {
        for ok in ["a", "homelab", "team-a", "x9", "0"] {
            assert!(Namespace::parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_non_slugs() {
        for bad in ["Home", "-a", "a-", "a_b", "a/b", "..", "a b"] {
            assert_eq!(
                Namespace::parse(bad),
                Err(NamespaceError::NotSlug(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(Namespace::parse(""), Err(NamespaceError::Empty));
        assert!(matches!(
            Namespace::parse(&"a".repeat(65)),
            Err(NamespaceError::TooLong(_))
        ));
    }

    #[test]
    fn refuses_tier_and_internal_names() {
        for reserved in [
            "data",
            "outputs",
            "secrets",
            "vault-bundles",
            "state",
            "config",
        ] {
            assert_eq!(
                Namespace::parse(reserved),
                Err(NamespaceError::Reserved(reserved.into()))
            );
        }
    }
}
