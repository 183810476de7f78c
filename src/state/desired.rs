//! Desired state: built from `.swamp.toml` plus the command's intent.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::config::{Config, Placement};

/// Which part of the desired state a command reconciles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    #[default]
    All,
    Layout,
    Sync,
    Push,
    Pull,
    Config,
}

impl Scope {
    pub const NAMES: [&'static str; 6] = ["all", "layout", "sync", "push", "pull", "config"];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::All => "all",
            Scope::Layout => "layout",
            Scope::Sync => "sync",
            Scope::Push => "push",
            Scope::Pull => "pull",
            Scope::Config => "config",
        }
    }

    pub fn includes_layout(self) -> bool {
        matches!(self, Scope::All | Scope::Layout)
    }

    /// Which ways a sync in this scope moves changes (`None`: no sync).
    pub fn direction(self) -> Option<Direction> {
        match self {
            Scope::All | Scope::Sync => Some(Direction::Both),
            // `config` publishes the mirror: only ever pushes.
            Scope::Push | Scope::Config => Some(Direction::Push),
            Scope::Pull => Some(Direction::Pull),
            Scope::Layout => None,
        }
    }
}

/// Which ways changes may flow in a sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Both,
    Push,
    Pull,
}

impl Direction {
    pub fn pushes(self) -> bool {
        matches!(self, Direction::Both | Direction::Push)
    }

    pub fn pulls(self) -> bool {
        matches!(self, Direction::Both | Direction::Pull)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Scope, String> {
        Ok(match s {
            "all" => Scope::All,
            "layout" => Scope::Layout,
            "sync" => Scope::Sync,
            "push" => Scope::Push,
            "pull" => Scope::Pull,
            "config" => Scope::Config,
            _ => {
                return Err(format!(
                    "unknown scope {s:?} (one of: {})",
                    Scope::NAMES.join(", ")
                ));
            }
        })
    }
}

/// Where every datastore file should be, and where it may still be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Desired {
    pub scope: Scope,
    /// Every datastore file belongs here.
    pub target: Placement,
    /// Places recorded in `.swamp.toml` whose files must move to `target`.
    pub sources: Vec<Placement>,
}

impl Desired {
    pub fn from_config(config: &Config, scope: Scope) -> Desired {
        let target = config.target();
        let sources = if scope.includes_layout() {
            config
                .migrating_from
                .iter()
                .filter(|p| **p != target)
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        Desired {
            scope,
            target,
            sources,
        }
    }

    /// True when the layout is mid-change (the config records sources).
    pub fn migrating(&self) -> bool {
        !self.sources.is_empty()
    }
}
