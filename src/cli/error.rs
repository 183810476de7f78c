//! The one CLI error type: its kind picks the exit code (STYLE.md, "Exit
//! codes"), it carries the hints naming what fixes it, and it keeps the
//! library error it reports as its cause.

use std::fmt;
use std::sync::Arc;

pub(super) use super::hints::Setting;

/// Exit codes (STYLE.md).
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

/// An error as the CLI reports it: what happened (`message`, the library
/// error's own words), the hints that name what fixes it (`hint:` lines,
/// most specific first; `hints[]` in `--json`), and the library error it
/// came from, whose [`source`](std::error::Error::source) chain is kept.
#[derive(Debug)]
pub struct CliError {
    pub kind: ErrorKind,
    pub message: String,
    pub hints: Vec<String>,
    /// The datastore setting the error is about, so that the hint can
    /// name where its value came from: `.swamp.toml` (the default hint)
    /// or a spec on the command line (`main` rewrites it).
    pub setting: Option<Setting>,
    /// The library error this one reports, if any.
    cause: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl CliError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> CliError {
        CliError {
            kind,
            message: message.into(),
            hints: Vec::new(),
            setting: None,
            cause: None,
        }
    }

    pub fn failure(message: impl Into<String>) -> CliError {
        CliError::new(ErrorKind::Failure, message)
    }

    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::new(ErrorKind::Usage, message)
    }

    /// A CLI error of `kind` reporting `e`: its message, and `e` kept as
    /// the cause.
    pub(crate) fn caused_by(
        kind: ErrorKind,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> CliError {
        CliError {
            cause: Some(Arc::new(e)),
            ..CliError::new(kind, String::new())
        }
        .with_message_of_cause()
    }

    fn with_message_of_cause(mut self) -> CliError {
        if let Some(cause) = &self.cause {
            self.message = cause.to_string();
        }
        self
    }

    /// Replaces the hints with `hint`: the one thing to do.
    pub fn hint(mut self, hint: impl Into<String>) -> CliError {
        self.hints = vec![hint.into()];
        self
    }

    /// Adds `hint` after those already given.
    pub fn and_hint(mut self, hint: impl Into<String>) -> CliError {
        self.hints.push(hint.into());
        self
    }

    /// The error as `--json` shows it, credentials a server's error
    /// quoted cut (see [`crate::telemetry::redact`]).
    pub fn to_json(&self) -> serde_json::Value {
        let cut = |s: &str| crate::telemetry::redact::redact(s).into_owned();
        let hints: Vec<String> = self.hints.iter().map(|h| cut(h)).collect();
        serde_json::json!({
            "error": {
                "kind": self.kind.as_str(),
                "exit_code": self.kind.exit_code(),
                "message": cut(&self.message),
                "hint": hints.first(),
                "hints": hints,
            }
        })
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        for hint in &self.hints {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.cause
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
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
    use crate::journal::UndoError;
    use crate::layout::LayoutError;
    use crate::plan::PlanFileError;

    /// A CLI error of `kind` reporting `e`, with the hint the table
    /// gives for it.
    fn with<E>(kind: ErrorKind, e: E, hint: impl FnOnce(&E) -> Option<String>) -> CliError
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let hint = hint(&e);
        let mut err = CliError::caused_by(kind, e);
        err.hints.extend(hint);
        err
    }

    impl From<ConfigError> for CliError {
        fn from(e: ConfigError) -> CliError {
            // A wrong `--repo` is a wrong command line.
            let kind = match e {
                ConfigError::NotARepo { .. } => ErrorKind::Usage,
                _ => ErrorKind::Failure,
            };
            with(kind, e, hints::config)
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
                EngineError::ScopeNeedsRemote { .. } | EngineError::PolicyMisfit(_) => {
                    ErrorKind::Usage
                }
                _ => ErrorKind::Failure,
            };
            // The datastore settings come from .swamp.toml unless `main`
            // knows the command named them (`datastore setup SPEC`).
            match e.store_error().and_then(hints::store_setting) {
                Some((setting, hint)) => CliError {
                    setting: Some(setting),
                    ..with(kind, e, |_| Some(hint.to_string()))
                },
                None => with(kind, e, hints::engine),
            }
        }
    }

    impl From<LayoutError> for CliError {
        fn from(e: LayoutError) -> CliError {
            with(ErrorKind::Failure, e, hints::layout)
        }
    }

    impl From<PlanFileError> for CliError {
        fn from(e: PlanFileError) -> CliError {
            with(ErrorKind::Failure, e, |_| Some(hints::plan_file()))
        }
    }

    impl From<CatalogError> for CliError {
        fn from(e: CatalogError) -> CliError {
            with(ErrorKind::Failure, e, |e| Some(hints::catalog(e)))
        }
    }

    impl From<UndoError> for CliError {
        fn from(e: UndoError) -> CliError {
            with(ErrorKind::Failure, e, hints::undo)
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
            with(kind, e, hints::data)
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
                ..with(kind, e, hints::lock)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;
    use std::path::PathBuf;

    use super::*;
    use crate::config::ConfigError;

    #[test]
    fn a_library_error_stays_the_cause_with_its_own_chain() {
        let e = ConfigError::Read {
            path: PathBuf::from(".swamp.toml"),
            source: std::io::Error::other("disk on fire"),
        };
        let cli = CliError::from(e);
        let cause = cli.source().expect("the config error is the cause");
        assert!(cause.downcast_ref::<ConfigError>().is_some(), "{cause:?}");
        let io = cause.source().expect("and the io error its cause");
        assert_eq!(io.to_string(), "disk on fire");
        assert_eq!(cli.message, cause.to_string());
    }

    #[test]
    fn every_hint_is_a_line_of_its_own_and_in_the_json() {
        let e = CliError::failure("it broke")
            .hint("first do this")
            .and_hint("then that");
        assert_eq!(
            e.to_string(),
            "error: it broke\n  hint: first do this\n  hint: then that"
        );
        let doc = e.to_json();
        assert_eq!(doc["error"]["hint"], "first do this");
        assert_eq!(
            doc["error"]["hints"],
            serde_json::json!(["first do this", "then that"])
        );
        // `hint` replaces what was there: the one thing to do.
        let e = e.hint("only this");
        assert_eq!(e.hints, vec!["only this".to_string()]);
        let none = CliError::usage("bad");
        assert_eq!(none.to_json()["error"]["hint"], serde_json::Value::Null);
        assert_eq!(none.to_json()["error"]["hints"], serde_json::json!([]));
    }
}
