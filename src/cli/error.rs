//! The one CLI error type: its kind picks the exit code (SPEC §3), and it
//! carries a hint naming the command that fixes it.

use std::fmt;

/// Exit codes (SPEC §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 1: something went wrong.
    Failure,
    /// 3: the plan has conflicts that block apply.
    Conflicts,
    /// 64: the command line is wrong.
    Usage,
    /// 75: the lock is held by someone else.
    LockHeld,
}

impl ErrorKind {
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Failure => 1,
            ErrorKind::Conflicts => 3,
            ErrorKind::Usage => 64,
            ErrorKind::LockHeld => 75,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Failure => "failure",
            ErrorKind::Conflicts => "conflicts",
            ErrorKind::Usage => "usage",
            ErrorKind::LockHeld => "lock-held",
        }
    }
}

#[derive(Debug)]
pub struct CliError {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
    /// The datastore setting the error is about, so that the hint can
    /// name where its value came from: `.swamp.toml` (the default hint)
    /// or a spec on the command line (`main` rewrites it).
    pub setting: Option<Setting>,
}

/// A datastore setting an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// No bucket of that name.
    Bucket,
    /// A bucket name no server accepts.
    BucketName,
    /// No region for an S3 datastore.
    Region,
}

impl Setting {
    /// The hint when the value came from `spec` on the command line.
    pub fn hint_for_spec(self, spec: &str) -> String {
        match self {
            Setting::Bucket => format!(
                "create the bucket, or fix its name in `{spec}` (given on the command line; .swamp.toml was not changed), and run the command again"
            ),
            Setting::BucketName => format!(
                "fix the bucket's name in `{spec}` (given on the command line; .swamp.toml was not changed)"
            ),
            Setting::Region => format!(
                "add `?region=REGION` to `{spec}` (or set AWS_REGION) and run the command again; .swamp.toml was not changed"
            ),
        }
    }
}

impl CliError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> CliError {
        CliError {
            kind,
            message: message.into(),
            hint: None,
            setting: None,
        }
    }

    pub fn failure(message: impl Into<String>) -> CliError {
        CliError::new(ErrorKind::Failure, message)
    }

    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::new(ErrorKind::Usage, message)
    }

    pub fn hint(mut self, hint: impl Into<String>) -> CliError {
        self.hint = Some(hint.into());
        self
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "error": {
                "kind": self.kind.as_str(),
                "exit_code": self.kind.exit_code(),
                "message": self.message,
                "hint": self.hint,
            }
        })
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// The datastore setting a store error is about, and the hint that fixes
/// it in `.swamp.toml`.
fn store_setting(e: &crate::engine::StoreError) -> Option<(Setting, &'static str)> {
    use crate::engine::StoreError;
    Some(match e {
        StoreError::NoSuchBucket { .. } => (
            Setting::Bucket,
            "create it, or fix `bucket` in the [datastore] table of .swamp.toml",
        ),
        StoreError::InvalidBucketName { .. } => (
            Setting::BucketName,
            "fix `bucket` in the [datastore] table of .swamp.toml",
        ),
        StoreError::NoRegion { .. } => (
            Setting::Region,
            "set `region` in the [datastore] table of .swamp.toml, or AWS_REGION",
        ),
        _ => return None,
    })
}

/// Library errors become CLI errors with the hint that fixes them.
mod from {
    use super::store_setting;
    use super::{CliError, ErrorKind};
    use crate::catalog::CatalogError;
    use crate::config::ConfigError;
    use crate::data::DataError;
    use crate::engine::{ApplyError, EngineError};
    use crate::plan::PlanFileError;

    impl From<ConfigError> for CliError {
        fn from(e: ConfigError) -> CliError {
            let hint = match &e {
                ConfigError::NotFound(_) => {
                    Some("run `swamp init` to create one, or pass --repo DIR".to_string())
                }
                ConfigError::NotARepo { .. } => Some(
                    "pass the repository's own directory (the one holding .swamp.toml), or `swamp --repo DIR init` to create one".to_string(),
                ),
                ConfigError::Invalid { .. } => {
                    Some("fix the key named above in .swamp.toml; nothing was changed".to_string())
                }
                _ => None,
            };
            CliError {
                setting: None,
                // A wrong `--repo` is a wrong command line.
                kind: if matches!(e, ConfigError::NotARepo { .. }) {
                    ErrorKind::Usage
                } else {
                    ErrorKind::Failure
                },
                message: e.to_string(),
                hint,
            }
        }
    }

    impl From<EngineError> for CliError {
        fn from(e: EngineError) -> CliError {
            let e = match e {
                EngineError::Config(c) => return c.into(),
                EngineError::Undo(u) => return u.into(),
                other => other,
            };
            let hint = match &e {
                EngineError::Stale { undoes: None, .. } => Some(
                    "run `swamp plan -o FILE` again, review it, and apply the new plan".to_string(),
                ),
                EngineError::Stale {
                    undoes: Some(id), ..
                } => Some(format!("`swamp undo {id}` shows the undo as it is now")),
                EngineError::LastCutShort {
                    undoes: Some(undone),
                    ..
                } => Some(format!("`swamp undo {undone}` finishes the undo it began")),
                EngineError::LastCutShort { id, undoes: None } => {
                    Some(format!("`swamp undo {id}` reverses what it did"))
                }
                EngineError::Prune { .. } => Some(
                    "run `swamp undo --prune` again: what was pruned stays pruned".to_string(),
                ),
                EngineError::Apply(ApplyError::Conflicts(_)) => {
                    Some("run `swamp plan` to see the conflicts".to_string())
                }
                EngineError::Apply(ApplyError::Stopped { completed, .. }) => Some(format!(
                    "{completed} action(s) completed and stay done; run `swamp plan` to see what is left, then `swamp apply`"
                )),
                EngineError::ScopeNeedsRemote {
                    scope: crate::engine::Scope::Config,
                    ..
                } => Some(
                    "managed config is kept in a remote datastore; set one up with `swamp datastore setup s3://bucket/prefix` (or `gs://bucket/prefix`)".into(),
                ),
                EngineError::ConfigTierExcluded => Some(
                    "add `config` to `directories` in .swamp.toml (or remove the key), then run `swamp datastore config migrate`".into(),
                ),
                EngineError::ScopeNeedsRemote { .. } => Some(
                    "local and filesystem datastores need no sync; to use a bucket, run `swamp datastore setup s3://bucket/prefix` (or `gs://bucket/prefix`)".into(),
                ),
                EngineError::WrongRepo { .. } => {
                    Some("apply the plan in the repository it was made in".to_string())
                }
                EngineError::Registration(crate::engine::registry::RegistrationError::OwnedByAnother {
                    owner,
                    ..
                }) => Some(format!(
                    "if this repository is the one registered there (for upstream swamp, the `repoId` in its .swamp.yaml), create it with `swamp init --repo-id {owner}`; otherwise choose another namespace"
                )),
                EngineError::Registration(crate::engine::registry::RegistrationError::Unrecognised {
                    ..
                }) => Some(
                    "another tool may own this namespace: choose another one, or, once sure nothing uses it, move the manifest aside and retry".to_string(),
                ),
                _ => None,
            };
            let kind = match &e {
                EngineError::Apply(ApplyError::Conflicts(_)) => ErrorKind::Conflicts,
                EngineError::ScopeNeedsRemote { .. } => ErrorKind::Usage,
                _ => ErrorKind::Failure,
            };
            // The datastore settings come from .swamp.toml unless `main`
            // knows the command named them (`datastore setup SPEC`).
            let (setting, hint) = match e.store_error().and_then(store_setting) {
                Some((setting, config_hint)) => (Some(setting), Some(config_hint.to_string())),
                None => (None, hint),
            };
            CliError {
                kind,
                message: e.to_string(),
                hint,
                setting,
            }
        }
    }

    impl From<PlanFileError> for CliError {
        fn from(e: PlanFileError) -> CliError {
            CliError::failure(e.to_string())
                .hint("make a plan file with `swamp plan -o FILE`; nothing was changed")
        }
    }

    impl From<CatalogError> for CliError {
        fn from(e: CatalogError) -> CliError {
            CliError::failure(e.to_string()).hint("run `swamp catalog rebuild`")
        }
    }

    impl From<crate::undo::UndoError> for CliError {
        fn from(e: crate::undo::UndoError) -> CliError {
            use crate::undo::UndoError;
            let err = CliError::failure(e.to_string());
            match e {
                UndoError::NoSuchApply { .. } | UndoError::NoHistory => err,
                UndoError::NotKept { .. } => err.hint("`swamp history` lists the applies that can be undone"),
                UndoError::Pruned { .. } => err.hint("raise `[undo] keep_days` (or `max_bytes`) in .swamp.toml to keep trash longer"),
                UndoError::Malformed { .. } => err.hint(
                    "move the journal out of .swamp/state/trash/ to set that apply aside for good; the others are unaffected",
                ),
                UndoError::Io { .. } => err.hint("check the permissions and free space, then retry"),
            }
        }
    }

    impl From<DataError> for CliError {
        fn from(e: DataError) -> CliError {
            // A name or version given on the command line that cannot be
            // is a wrong command line (64), as a bad namespace is.
            let kind = match &e {
                DataError::InvalidName { .. } | DataError::InvalidKeep => ErrorKind::Usage,
                _ => ErrorKind::Failure,
            };
            CliError::new(kind, e.to_string())
        }
    }

    impl From<crate::engine::locks::LockError> for CliError {
        fn from(e: crate::engine::locks::LockError) -> CliError {
            use crate::engine::locks::LockError;
            match &e {
                LockError::HeldUpstream { .. } => CliError::new(ErrorKind::LockHeld, e.to_string()).hint(
                    "upstream swamp is working on this namespace: wait for it to finish; if it died, its lock counts as stale once unrenewed for longer than its TTL (30 s by default), or break it with upstream's `swamp datastore lock release --force`",
                ),
                LockError::Held { .. } => CliError::new(ErrorKind::LockHeld, e.to_string()).hint(
                    "see the holder with `swamp datastore lock status`; if that process is gone, \
                     its lock expires by itself, or break it now with `swamp datastore lock release --force`",
                ),
                LockError::Unparseable { .. } => {
                    CliError::new(ErrorKind::LockHeld, e.to_string()).hint(
                        "inspect it with `swamp datastore lock status`; once sure nobody is working, \
                         break it with `swamp datastore lock release --force`",
                    )
                }
                LockError::Lost { .. } => CliError::failure(e.to_string()).hint(
                    "another process holds the lock now; when it is done, run `swamp plan` to see what is left",
                ),
                LockError::Store(se) => match store_setting(se) {
                    Some((setting, hint)) => CliError {
                        setting: Some(setting),
                        ..CliError::failure(e.to_string()).hint(hint)
                    },
                    None => CliError::failure(e.to_string()),
                },
            }
        }
    }
}
