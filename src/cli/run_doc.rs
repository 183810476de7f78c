//! The one `--json` document of a command that applies a plan (`apply`,
//! `sync`/`push`/`pull`, `datastore sync`, `datastore setup`, `datastore
//! config migrate`): the same top-level keys whatever the outcome, so a
//! script reads one shape (`schemas/run.schema.json`):
//!
//! `plan` (null when the command failed before planning), `preview`,
//! `applied` (the report, null unless it applied), `converged` (null
//! unless it got that far), `remaining` (the plan left when it did not
//! converge), `recorded` (the new layout was written to `.swamp.toml`),
//! `reason` (`{kind, message}` whenever it did not apply, or did not
//! converge) and `error` (the error object of any failing exit).

use serde_json::{Value, json};

use super::CliError;

/// Why a run did not apply (or not all the way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// The plan was empty.
    NoChanges,
    /// No `-y`, and no terminal to ask on (exit 2).
    NotConfirmed,
    /// `--dry-run` (exit 0).
    DryRun,
    /// The plan has conflicts (exit 3).
    Conflicts,
    /// Applied, and the state changed meanwhile (exit 1 or 3).
    NotConverged,
    /// The command failed (the `error` object says how).
    Failed,
}

impl Reason {
    fn kind(self) -> &'static str {
        match self {
            Reason::NoChanges => "no-changes",
            Reason::NotConfirmed => "not-confirmed",
            Reason::DryRun => "dry-run",
            Reason::Conflicts => "conflicts",
            Reason::NotConverged => "not-converged",
            Reason::Failed => "failed",
        }
    }
}

/// Everything but `plan` (printed first, streamed by the caller).
#[derive(Debug, Default)]
pub(crate) struct RunDoc {
    pub preview: bool,
    pub applied: Value,
    pub converged: Option<bool>,
    pub remaining: Value,
    pub recorded: bool,
    pub reason: Option<(Reason, String)>,
    pub error: Option<Value>,
}

impl RunDoc {
    /// A run that stopped for `reason`, saying `message`.
    pub(crate) fn stopped(reason: Reason, message: impl Into<String>) -> RunDoc {
        RunDoc {
            reason: Some((reason, message.into())),
            ..RunDoc::default()
        }
    }

    /// With the error object of `err` (its kind and exit code).
    pub(crate) fn with_error(mut self, err: &CliError) -> RunDoc {
        self.error = Some(err.to_json()["error"].clone());
        self
    }

    /// The fields after `plan`, in the documented order.
    pub(crate) fn fields(&self) -> Value {
        json!({
            "preview": self.preview,
            "applied": self.applied,
            "converged": self.converged,
            "remaining": self.remaining,
            "recorded": self.recorded,
            // A failure's message may quote a server's error: cut as
            // the error object's own is.
            "reason": self.reason.as_ref().map(|(r, m)| json!({
                "kind": r.kind(),
                "message": crate::telemetry::redact::redact(m),
            })),
            "error": self.error,
        })
    }

    /// The whole document of a run that failed before it had a plan.
    pub(crate) fn failed(err: &CliError) -> Value {
        let rest = RunDoc::stopped(Reason::Failed, err.message.clone()).with_error(err);
        let mut doc = serde_json::Map::new();
        doc.insert("plan".into(), Value::Null);
        if let Value::Object(fields) = rest.fields() {
            doc.extend(fields);
        }
        Value::Object(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::ErrorKind;

    #[test]
    fn every_outcome_has_the_same_keys_in_the_same_order() {
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        let want = [
            "preview",
            "applied",
            "converged",
            "remaining",
            "recorded",
            "reason",
            "error",
        ];
        let err = CliError::new(ErrorKind::LockHeld, "held").hint("wait");
        for doc in [
            RunDoc::default(),
            RunDoc::stopped(Reason::NotConfirmed, "x"),
            RunDoc::stopped(Reason::Conflicts, "x").with_error(&err),
        ] {
            assert_eq!(keys(&doc.fields()), want);
        }
        let failed = RunDoc::failed(&err);
        assert_eq!(keys(&failed)[0], "plan");
        assert_eq!(keys(&failed)[1..], want);
        assert_eq!(failed["error"]["exit_code"], 75);
        assert_eq!(failed["reason"]["kind"], "failed");
    }
}
