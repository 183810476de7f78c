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

/// Library errors become CLI errors: the message states what happened,
/// the hint comes from the one table in [`super::hints`].
mod from {
    use super::super::hints;
    use super::{CliError, ErrorKind};
    use crate::catalog::CatalogError;
    use crate::config::ConfigError;
    use crate::data::DataError;
    use crate::engine::locks::LockError;
    use crate::engine::{ApplyError, EngineError};
    use crate::layout::LayoutError;
    use crate::plan::PlanFileError;
    use crate::undo::UndoError;

    /// A CLI error of `kind` with `e`'s message and `hint`.
    fn with(kind: ErrorKind, e: &dyn std::error::Error, hint: Option<String>) -> CliError {
        CliError {
            kind,
            message: e.to_string(),
            hint,
            setting: None,
        }
    }

    impl From<ConfigError> for CliError {
        fn from(e: ConfigError) -> CliError {
            // A wrong `--repo` is a wrong command line.
            let kind = match e {
                ConfigError::NotARepo { .. } => ErrorKind::Usage,
                _ => ErrorKind::Failure,
            };
            with(kind, &e, hints::config(&e))
        }
    }

    impl From<EngineError> for CliError {
        fn from(e: EngineError) -> CliError {
            let e = match e {
                EngineError::Config(c) => return c.into(),
                EngineError::Undo(u) => return u.into(),
                other => other,
            };
            let kind = match &e {
                EngineError::Apply(ApplyError::Conflicts(_)) => ErrorKind::Conflicts,
                EngineError::ScopeNeedsRemote { .. } => ErrorKind::Usage,
                _ => ErrorKind::Failure,
            };
            // The datastore settings come from .swamp.toml unless `main`
            // knows the command named them (`datastore setup SPEC`).
            match e.store_error().and_then(hints::store_setting) {
                Some((setting, hint)) => CliError {
                    setting: Some(setting),
                    ..with(kind, &e, Some(hint.to_string()))
                },
                None => with(kind, &e, hints::engine(&e)),
            }
        }
    }

    impl From<LayoutError> for CliError {
        fn from(e: LayoutError) -> CliError {
            with(ErrorKind::Failure, &e, hints::layout(&e))
        }
    }

    impl From<PlanFileError> for CliError {
        fn from(e: PlanFileError) -> CliError {
            with(ErrorKind::Failure, &e, Some(hints::plan_file()))
        }
    }

    impl From<CatalogError> for CliError {
        fn from(e: CatalogError) -> CliError {
            with(ErrorKind::Failure, &e, Some(hints::catalog(&e)))
        }
    }

    impl From<UndoError> for CliError {
        fn from(e: UndoError) -> CliError {
            with(ErrorKind::Failure, &e, hints::undo(&e))
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
            with(kind, &e, hints::data(&e))
        }
    }

    impl From<LockError> for CliError {
        fn from(e: LockError) -> CliError {
            let kind = match &e {
                LockError::HeldUpstream { .. }
                | LockError::Held { .. }
                | LockError::Unparseable { .. } => ErrorKind::LockHeld,
                LockError::Lost { .. } | LockError::ReadOnly { .. } | LockError::Store(_) => {
                    ErrorKind::Failure
                }
            };
            let setting = match &e {
                LockError::Store(se) => hints::store_setting(se).map(|(setting, _)| setting),
                _ => None,
            };
            CliError {
                setting,
                ..with(kind, &e, hints::lock(&e))
            }
        }
    }
}
