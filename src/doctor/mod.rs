//! `swamp doctor datastores`: health checks of a repository's datastore,
//! each with a stable name, an outcome (pass, fail, or skip with the
//! reason), a message, and the command that fixes it; and for `--repair`,
//! the automatic fix of each failed check.
//!
//! Owns: the check vocabulary ([`Finding`], [`Status`], [`Fix`]), the
//! [`Check`] trait, the ordered list of checks ([`checks`]) and the runner.
//! The checks themselves live in [`local`] (config, layout, catalog,
//! leftovers) and
//! [`remote`] (reachable, drift, sentinel, registration). Applying a fix is
//! the caller's job: a [`Fix::Plan`] goes through the ordinary apply path
//! (`engine::apply_and_verify`), a [`Fix::Step`] runs on its own.
//!
//! Adding a check is a struct implementing [`Check`] and one line in
//! [`checks`]; its fix, if it has one, is its [`Check::fix`].

pub(crate) mod local;
pub(crate) mod lock;
pub(crate) mod remote;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::{Config, ConfigError};
use crate::engine::{EngineError, Planned};
use crate::layout::Layout;

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Pass,
    /// Work in progress, not a fault (changes not synced yet): the fix
    /// names the command that settles it; the exit code stays 0.
    Warn,
    Fail,
    /// The check does not apply here; the message says why.
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable name (`config`, `reachable`, `layout`, …).
    pub name: &'static str,
    pub status: Status,
    pub message: String,
    /// The command or edit that fixes a failure.
    pub fix: Option<String>,
}

impl Finding {
    pub fn pass(name: &'static str, message: impl Into<String>) -> Finding {
        Finding {
            name,
            status: Status::Pass,
            message: message.into(),
            fix: None,
        }
    }

    pub fn fail(name: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding {
            name,
            status: Status::Fail,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn warn(name: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding {
            name,
            status: Status::Warn,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }

    pub fn skip(name: &'static str, reason: impl Into<String>) -> Finding {
        Finding {
            name,
            status: Status::Skip,
            message: reason.into(),
            fix: None,
        }
    }

    pub fn failed(&self) -> bool {
        self.status == Status::Fail
    }
}

/// Errors while checking or repairing. A check that cannot finish reports
/// a failure naming the error; these surface from fixes.
#[derive(Debug, thiserror::Error)]
pub enum DoctorError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Catalog(#[from] crate::catalog::CatalogError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error("{0}")]
    Other(String),
}

/// Runs a repair step; returns what it did.
pub type StepFn = Box<dyn Fn(&Context) -> Result<String, DoctorError>>;

/// One repair step outside a plan (rebuild the catalog, register the
/// namespace, …).
pub struct Step {
    /// What it will do, for the preview.
    pub what: String,
    /// Does it; returns what it did.
    pub run: StepFn,
}

/// How a failed check is repaired.
pub enum Fix {
    /// No automatic fix in this version; the finding's `fix` says what to run.
    Manual,
    /// A plan applied through the ordinary apply path.
    Plan(Box<Planned>),
    /// A step of its own.
    Step(Step),
}

/// What the checks look at: the repository and its configuration, and
/// the findings of the checks run before (later checks skip when an
/// earlier one they depend on failed).
pub struct Context {
    pub repo: PathBuf,
    pub swamp_home: PathBuf,
    /// The configuration and its layout, or why they could not be loaded.
    pub loaded: Result<(Config, Layout), String>,
    /// Probe whether the credentials may write the datastore (a canary
    /// object written and removed): `--check-write`. Without it the remote
    /// is only read.
    pub check_write: bool,
    earlier: Vec<Finding>,
}

impl Context {
    /// Loads `.swamp.toml` at `repo`; a bad one is the `config` check's
    /// failure, not an error.
    pub fn new(repo: &Path, swamp_home: &Path) -> Context {
        let loaded = load(repo, swamp_home);
        Context {
            repo: repo.to_path_buf(),
            swamp_home: swamp_home.to_path_buf(),
            loaded,
            check_write: false,
            earlier: Vec::new(),
        }
    }

    /// Loads the configuration again (after a repair changed things).
    pub fn reload(&mut self) {
        self.loaded = load(&self.repo, &self.swamp_home);
        self.earlier.clear();
    }

    /// The status of an earlier check, if it ran.
    pub fn status_of(&self, name: &str) -> Option<Status> {
        self.earlier
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.status)
    }

    /// The configuration, or the skip finding for a check that needs it.
    pub fn config(&self, name: &'static str) -> Result<(&Config, &Layout), Finding> {
        match &self.loaded {
            Ok((c, l)) => Ok((c, l)),
            Err(_) => Err(Finding::skip(
                name,
                "needs a valid .swamp.toml (see the `config` check)",
            )),
        }
    }

    /// The configuration of a remote datastore that answered the
    /// `reachable` probe, or the skip finding saying why not.
    pub fn remote(&self, name: &'static str) -> Result<(&Config, &Layout), Finding> {
        let (config, layout) = self.config(name)?;
        if !config.datastore.is_remote() {
            return Err(Finding::skip(
                name,
                format!(
                    "{} datastore: nothing remote to check",
                    config.datastore.kind()
                ),
            ));
        }
        if self.status_of("reachable") == Some(Status::Fail) {
            return Err(Finding::skip(
                name,
                "the remote did not answer (see the `reachable` check)",
            ));
        }
        Ok((config, layout))
    }
}

fn load(repo: &Path, swamp_home: &Path) -> Result<(Config, Layout), String> {
    let config = Config::load(repo).map_err(|e| match e {
        ConfigError::Invalid { message, .. } => message,
        other => other.to_string(),
    })?;
    config.validate()?;
    let layout = Layout::new(repo, &config, swamp_home).map_err(|e| e.to_string())?;
    Ok((config, layout))
}

/// One health check.
pub trait Check {
    /// Stable name, used in output and JSON.
    fn name(&self) -> &'static str;

    /// Runs the check. It never fails as a call: a check that cannot
    /// finish reports a failure naming why.
    fn run(&self, cx: &Context) -> Finding;

    /// The automatic repair of a failure `finding` of this check (computed
    /// afresh). Default: none, the finding's `fix` names the command.
    fn fix(&self, _cx: &Context, _finding: &Finding) -> Result<Fix, DoctorError> {
        Ok(Fix::Manual)
    }
}

/// Every check, in the order they run (and are shown).
pub fn checks() -> Vec<Box<dyn Check>> {
    vec![
        Box::new(local::ConfigCheck),
        Box::new(remote::Reachable),
        Box::new(lock::LockCheck),
        Box::new(local::LayoutCheck),
        Box::new(local::CatalogCheck),
        Box::new(remote::Drift),
        Box::new(remote::Sentinel),
        Box::new(remote::Registration),
        Box::new(local::LeftoversCheck),
    ]
}

/// Runs `checks` in order, each seeing the findings before it.
pub fn run_checks(cx: &mut Context, checks: &[Box<dyn Check>]) -> Vec<Finding> {
    cx.earlier.clear();
    for check in checks {
        let finding = check.run(cx);
        debug_assert_eq!(finding.name, check.name());
        cx.earlier.push(finding);
    }
    cx.earlier.clone()
}

/// True when no check failed (skips are fine).
pub fn all_ok(findings: &[Finding]) -> bool {
    !findings.iter().any(Finding::failed)
}

/// A check failure for an error the check could not get past.
pub(crate) fn could_not(name: &'static str, what: &str, e: impl std::fmt::Display) -> Finding {
    Finding::fail(
        name,
        format!("could not {what}: {e}"),
        "fix the error named above, then run `swamp doctor datastores` again",
    )
}
