//! The one `--json` document of a command that applies a plan (`apply`,
//! `sync`/`push`/`pull`, `datastore sync`, `datastore setup`, `datastore
//! config migrate`): the same top-level keys whatever the outcome, so a
//! script reads one shape (`schemas/run.schema.json`):
//!
//! `undo`/`redo` and `undo --prune` keep the same rule with their own
//! first keys ([`Shape`]): `{undo, preview, applied, saved, reason,
//! error}` and `{prune, preview, applied, reason, error}`.
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
    /// `-o FILE`: saved for `swamp apply FILE`, not applied.
    Saved,
}

/// Which document a command prints: the keys before `reason` and `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `apply`, `sync`/`push`/`pull`, `datastore sync/setup/config migrate`.
    Run,
    /// `undo`, `redo`.
    Undo,
    /// `undo --prune`.
    Prune,
}

impl Shape {
    /// Its keys before `reason` and `error`, as a failure before any plan
    /// prints them (null; `false` for flags).
    fn blank(self) -> Vec<(&'static str, Value)> {
        let null = |k| (k, Value::Null);
        let no = |k| (k, Value::Bool(false));
        match self {
            Shape::Run => vec![
                null("plan"),
                no("preview"),
                null("applied"),
                null("converged"),
                null("remaining"),
                no("recorded"),
            ],
            Shape::Undo => vec![null("undo"), no("preview"), null("applied"), null("saved")],
            Shape::Prune => vec![null("prune"), no("preview"), null("applied")],
        }
    }
}

/// `fields` followed by `reason` and `error`: a document of any [`Shape`].
pub(crate) fn document(
    fields: Vec<(&'static str, Value)>,
    reason: Option<(Reason, &str)>,
    error: Option<&CliError>,
) -> Value {
    let error = error.map_or(Value::Null, |e| e.to_json()["error"].clone());
    with_outcome(fields, reason, error)
}

fn with_outcome(
    fields: Vec<(&'static str, Value)>,
    reason: Option<(Reason, &str)>,
    error: Value,
) -> Value {
    let mut doc = serde_json::Map::new();
    for (k, v) in fields {
        doc.insert(k.into(), v);
    }
    doc.insert("reason".into(), reason_json(reason));
    doc.insert("error".into(), error);
    Value::Object(doc)
}

/// `{kind, message}`, the message cut of credentials as the error's is
/// (a failure's may quote a server's error).
fn reason_json(reason: Option<(Reason, &str)>) -> Value {
    reason.map_or(
        Value::Null,
        |(r, m)| json!({"kind": r.kind(), "message": crate::telemetry::redact::redact(m)}),
    )
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
            Reason::Saved => "saved",
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
        with_outcome(
            vec![
                ("preview", Value::Bool(self.preview)),
                ("applied", self.applied.clone()),
                ("converged", json!(self.converged)),
                ("remaining", self.remaining.clone()),
                ("recorded", Value::Bool(self.recorded)),
            ],
            self.reason.as_ref().map(|(r, m)| (*r, m.as_str())),
            self.error.clone().unwrap_or(Value::Null),
        )
    }

    /// The whole document of a command of `shape` that failed before it
    /// had a plan.
    pub(crate) fn failed(err: &CliError, shape: Shape) -> Value {
        document(
            shape.blank(),
            Some((Reason::Failed, &err.message)),
            Some(err),
        )
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
        let failed = RunDoc::failed(&err, Shape::Run);
        assert_eq!(keys(&failed)[0], "plan");
        assert_eq!(keys(&failed)[1..], want);
        assert_eq!(failed["error"]["exit_code"], 75);
        assert_eq!(failed["reason"]["kind"], "failed");
        let undo = RunDoc::failed(&err, Shape::Undo);
        let undo_keys = keys(&undo);
        assert_eq!(
            undo_keys,
            ["undo", "preview", "applied", "saved", "reason", "error"]
        );
    }
}
