//! This clone's own settings: choices that belong to one machine, not to
//! the team, kept in `.swamp/state/clone.toml` and never in the shared
//! `.swamp.toml` (which may carry the team's default). Today that is the
//! hydration strategy: a laptop pulls lazily while CI pulls everything.
//!
//! Owns parsing (strict, like `.swamp.toml`), atomic writes, and which
//! value is in effect ([`Hydration`] and where it came from). The file's
//! path comes from [`crate::layout::Layout::clone_settings_path`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Config, ConfigError, Hydration};
use crate::fsutil;

/// The whole of `.swamp/state/clone.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloneSettings {
    #[serde(default, skip_serializing_if = "CloneSync::is_default")]
    pub sync: CloneSync,
}

/// `[sync]` of this clone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloneSync {
    /// Overrides `.swamp.toml`'s `[sync] hydration` in this clone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hydration: Option<Hydration>,
}

impl CloneSync {
    fn is_default(&self) -> bool {
        *self == CloneSync::default()
    }
}

/// Where the hydration in effect comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// `--hydration` on this very command.
    Command,
    /// This clone's `.swamp/state/clone.toml`.
    Clone,
    /// The team's default in `.swamp.toml` (or swamp's, `full`).
    Repository,
}

impl Source {
    /// Where it comes from, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Source::Command => "this command's --hydration",
            Source::Clone => "this clone's setting (.swamp/state/clone.toml)",
            Source::Repository => "the repository's default (.swamp.toml)",
        }
    }
}

const HEADER: &str = "# This clone's own settings, never shared: `swamp datastore hydration` writes\n# them. The team's defaults are in .swamp.toml.\n";

impl CloneSettings {
    /// The settings at `path`; none when the file is absent.
    pub fn load(path: &Path) -> Result<CloneSettings, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(CloneSettings::default());
            }
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        toml::from_str(&text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: format!(
                "{} (fix it, or remove the file to follow .swamp.toml)",
                e.message()
            ),
        })
    }

    /// Writes the settings atomically (temp file, fsync, rename); with
    /// nothing set, removes the file.
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        let write = |source| ConfigError::Write {
            path: path.to_path_buf(),
            source,
        };
        if *self == CloneSettings::default() {
            return match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(write(e)),
                _ => Ok(()),
            };
        }
        let body = toml::to_string(self).expect("clone settings serialise");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(write)?;
        }
        fsutil::atomic_write(path, format!("{HEADER}{body}").as_bytes()).map_err(write)
    }

    /// The hydration in effect: this command's, else this clone's, else
    /// the repository's default.
    pub fn hydration(&self, config: &Config, command: Option<Hydration>) -> (Hydration, Source) {
        match (command, self.sync.hydration) {
            (Some(h), _) => (h, Source::Command),
            (None, Some(h)) => (h, Source::Clone),
            (None, None) => (config.sync.hydration, Source::Repository),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_setting_overrides_the_team_default_and_a_command_overrides_both() {
        let mut config = Config::new(
            uuid::Uuid::nil(),
            super::super::DatastoreConfig::Local,
            None,
        );
        config.sync.hydration = Hydration::Lazy;
        let none = CloneSettings::default();
        assert_eq!(
            none.hydration(&config, None),
            (Hydration::Lazy, Source::Repository)
        );
        let mut full = CloneSettings::default();
        full.sync.hydration = Some(Hydration::Full);
        assert_eq!(
            full.hydration(&config, None),
            (Hydration::Full, Source::Clone)
        );
        assert_eq!(
            full.hydration(&config, Some(Hydration::Lazy)),
            (Hydration::Lazy, Source::Command)
        );
    }

    #[test]
    fn settings_round_trip_and_nothing_set_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/clone.toml");
        assert_eq!(
            CloneSettings::load(&path).unwrap(),
            CloneSettings::default()
        );
        let mut lazy = CloneSettings::default();
        lazy.sync.hydration = Some(Hydration::Lazy);
        lazy.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("[sync]\nhydration = \"lazy\"\n"), "{text}");
        assert_eq!(CloneSettings::load(&path).unwrap(), lazy);
        CloneSettings::default().save(&path).unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn a_bad_clone_file_is_an_error_naming_it_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clone.toml");
        std::fs::write(&path, "[sync]\nhydration = \"sometimes\"\n").unwrap();
        let err = CloneSettings::load(&path).unwrap_err().to_string();
        assert!(err.contains("clone.toml"), "{err}");
        assert!(err.contains("remove the file"), "{err}");
    }
}
