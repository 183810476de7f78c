//! The one hint table: what to do about each kind of error. Library errors
//! state what happened; the remedy is chosen here, at the CLI edge, from the
//! error's kind and, for an engine error, from the kind of its cause
//! ([`EngineError::cause`]).

use crate::catalog::CatalogError;
use crate::config::ConfigError;
use crate::data::DataError;
use crate::engine::locks::LockError;
use crate::engine::registry::RegistrationError;
use crate::engine::{ApplyError, BaseError, Cause, EngineError, Scope, StoreError, UndoApplyError};
use crate::journal::UndoError;
use crate::layout::LayoutError;

pub(super) fn config(e: &ConfigError) -> Option<String> {
    match e {
        ConfigError::NotFound(_) => Some("run `swamp init` to create one, or pass --repo DIR".into()),
        ConfigError::NotARepo { .. } => Some(
            "pass the repository's own directory (the one holding .swamp.toml), or `swamp --repo DIR init` to create one".into(),
        ),
        ConfigError::Invalid { .. } => {
            Some("fix the key named above in .swamp.toml; nothing was changed".into())
        }
        _ => None,
    }
}

/// An engine error's own hint, else its cause's.
pub(super) fn engine(e: &EngineError) -> Option<String> {
    let own = match e {
        EngineError::Stale { undoes: None, .. } => {
            "run `swamp plan -o FILE` again, review it, and apply the new plan".to_string()
        }
        EngineError::Stale {
            undoes: Some(id), ..
        } => format!("`swamp undo {id}` shows the undo as it is now"),
        EngineError::LastCutShort {
            undoes: Some(undone),
            ..
        } => format!("`swamp undo {undone}` finishes the undo it began"),
        EngineError::LastCutShort { id, undoes: None } => {
            format!("`swamp undo {id}` reverses what it did")
        }
        EngineError::Prune { .. } => {
            "run `swamp undo --prune` again: what was pruned stays pruned".to_string()
        }
        EngineError::Apply(ApplyError::Conflicts(_)) => {
            "run `swamp plan` to see the conflicts".to_string()
        }
        EngineError::Apply(ApplyError::Stopped { completed, .. }) => format!(
            "{completed} action(s) completed and stay done; run `swamp plan` to see what is left, then `swamp apply`"
        ),
        EngineError::ScopeNeedsRemote {
            scope: Scope::Config,
            ..
        } => "managed config is kept in a remote datastore; set one up with `swamp datastore setup s3://bucket/prefix` (or `gs://bucket/prefix`)".into(),
        EngineError::PolicyMisfit(m) => misfit_hint(m),
        EngineError::MovedAway { spec: Some(spec), .. } => format!(
            "take the .swamp.toml that names the new place (e.g. `git pull`), or follow it from here: `swamp datastore setup '{spec}' -y`"
        ),
        EngineError::MovedAway { spec: None, to, .. } => format!(
            "the data moved out of the bucket into {to} in another clone; take that clone's .swamp.toml (e.g. `git pull`) or ask whoever moved it"
        ),
        EngineError::ConfigTierExcluded => "add `config` to `directories` in .swamp.toml (or remove the key), then run `swamp datastore config migrate`".into(),
        EngineError::ScopeNeedsRemote { .. } => "local and filesystem datastores need no sync; to use a bucket, run `swamp datastore setup s3://bucket/prefix` (or `gs://bucket/prefix`)".into(),
        EngineError::WrongRepo { .. } => {
            "apply the plan in the repository it was made in".to_string()
        }
        EngineError::Registration(RegistrationError::OwnedByAnother { owner, .. }) => format!(
            "if this repository is the one registered there (for upstream swamp, the `repoId` in its .swamp.yaml), create it with `swamp init --repo-id {owner}`; otherwise choose another namespace"
        ),
        EngineError::Registration(RegistrationError::Unrecognised { .. }) => {
            "another tool may own this namespace: choose another one, or, once sure nothing uses it, move the manifest aside and retry".to_string()
        }
        _ => return cause(e.cause()),
    };
    Some(own)
}

fn cause(cause: Cause<'_>) -> Option<String> {
    match cause {
        Cause::Base(b) => base(b),
        Cause::Journal(u) => undo(u),
        Cause::UndoApply(u) => undo_apply(u),
        Cause::UndoRemoteGone => Some(
            "set that datastore up again (`swamp datastore setup`), then undo the apply".into(),
        ),
        Cause::NoHome => layout(&LayoutError::NoHome),
        Cause::ForeignRemoteId => Some("move it aside, then retry".into()),
        Cause::Store(_) | Cause::Other => None,
    }
}

pub(super) fn base(e: &BaseError) -> Option<String> {
    match e {
        BaseError::Corrupt { .. } => {
            Some("move it aside and sync again: with no base nothing is deleted".into())
        }
        _ => None,
    }
}

pub(super) fn plan_file() -> String {
    "make a plan file with `swamp plan -o FILE`; nothing was changed".into()
}

pub(super) fn catalog(e: &CatalogError) -> String {
    match e {
        CatalogError::Sqlite { .. } => "`swamp catalog rebuild` recreates it from the data files",
        CatalogError::Busy { .. } => "retry when the other swamp is done",
        CatalogError::Io { .. } => "fix its permissions, then run `swamp catalog rebuild`",
        CatalogError::RemoveCorrupt { .. } => "delete it by hand, then run `swamp catalog rebuild`",
        CatalogError::Symlink { .. } => "remove the link, then run `swamp catalog rebuild`",
    }
    .into()
}

pub(super) fn undo(e: &UndoError) -> Option<String> {
    Some(match e {
        UndoError::NoHistory => return None,
        UndoError::AllUndone => "`swamp redo` re-applies what the last undo reversed; `swamp history` lists the applies",
        UndoError::NothingToRedo => "`swamp undo` walks back one apply at a time; `swamp redo` then walks forward",
        UndoError::NoSuchApply { .. } | UndoError::NotKept { .. } => {
            "`swamp history` lists the applies that can be undone"
        }
        UndoError::Elsewhere { .. } => {
            "`swamp history show ID` lists what it changed; the clone that ran it holds its journal"
        }
        UndoError::NotOurs { .. } => "`swamp history show ID` lists what the record names",
        UndoError::Pruned { .. } => {
            "raise `[undo] keep_days` (or `max_bytes`) in .swamp.toml to keep trash longer"
        }
        UndoError::Malformed { .. } => {
            "move the journal out of .swamp/state/trash/ to set that apply aside for good; the others are unaffected"
        }
        UndoError::Io { .. } => "check the permissions and free space, then retry",
    }
    .into())
}

pub(super) fn undo_apply(e: &UndoApplyError) -> Option<String> {
    match e {
        UndoApplyError::Conflicts(_) => Some("resolve them, then run `swamp undo` again".into()),
        UndoApplyError::Stopped { undoes, .. } => {
            Some(format!("`swamp undo {undoes}` plans the rest"))
        }
        UndoApplyError::Journal(u) => undo(u),
    }
}

pub(super) fn data(e: &DataError) -> Option<String> {
    Some(match e {
        DataError::InvalidName { .. } => {
            "use `/`-separated segments of letters, digits, `.`, `_` and `-`, like `model/output`"
                .to_string()
        }
        DataError::NotFound { .. } => "`swamp data list` shows what exists".into(),
        DataError::VersionNotFound { name, .. } => {
            format!("`swamp data get {name}` prints the latest")
        }
        DataError::InvalidKeep => {
            "use `swamp data gc --keep 1` or more, or `swamp data rm NAME` to delete a name".into()
        }
        DataError::VersionsExhausted { .. } => {
            "store the data under a new name with `swamp data put`".into()
        }
        DataError::Input { .. } => "retry the `swamp data put`".into(),
        DataError::Io { .. } => "check its permissions and free space, then retry".into(),
        DataError::Symlink { .. } => {
            "replace it with a directory (or remove it), then retry".into()
        }
        DataError::NotAFile { .. } => "move it out of the way, then retry".into(),
        DataError::NotHydrated { .. } => {
            "run `swamp datastore sync --pull --hydrate` to fetch it".into()
        }
        DataError::Catalog(c) => catalog(c),
        DataError::Undo(u) => return undo(u),
        DataError::Path(_) => return None,
    })
}

pub(super) fn lock(e: &LockError) -> Option<String> {
    Some(match e {
        LockError::HeldUpstream { .. } => "upstream swamp is working on this namespace: wait for it to finish; if it died, its lock counts as stale once unrenewed for longer than its TTL (30 s by default), or break it with upstream's `swamp datastore lock release --force`",
        LockError::Held { .. } => "see the holder with `swamp datastore lock status`; if that process is gone, \
                     its lock expires by itself, or break it now with `swamp datastore lock release --force`",
        LockError::Unparseable { .. } => "inspect it with `swamp datastore lock status`; once sure nobody is working, \
                         break it with `swamp datastore lock release --force`",
        LockError::Lost { .. } => "another process holds the lock now; when it is done, run `swamp plan` to see what is left",
        LockError::ReadOnly { url, op, .. } => return Some(read_only(url, op)),
        LockError::Store(se) => return store_setting(se).map(|(_, hint)| hint.to_string()),
    }
    .into())
}

/// What a writer needs, and what works without it.
fn read_only(url: &str, op: &str) -> String {
    let needs = if op.starts_with("storage.") {
        "storage.objects.create and storage.objects.delete on the bucket (roles/storage.objectUser)"
            .to_string()
    } else {
        format!("s3:PutObject and s3:DeleteObject on {url}* (README: least privilege)")
    };
    format!(
        "a writer needs {needs}; with these credentials, `swamp datastore sync --pull` (and `plan`, `data get`, `status`) work read-only"
    )
}

/// The datastore setting a store error is about, and the hint that fixes
/// it in `.swamp.toml`.
pub(super) fn store_setting(e: &StoreError) -> Option<(Setting, &'static str)> {
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

pub(super) fn layout(e: &LayoutError) -> Option<String> {
    match e {
        LayoutError::NoHome => Some("set SWAMP_HOME to a directory".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_corrupt_catalog_is_rebuilt_and_a_busy_one_waited_for() {
        let sqlite = CatalogError::Sqlite {
            path: PathBuf::from("/r/.swamp/data/_catalog.db"),
            source: rusqlite::Error::QueryReturnedNoRows,
        };
        assert!(catalog(&sqlite).contains("swamp catalog rebuild"));
        let busy = CatalogError::Busy {
            path: PathBuf::from("/r/.swamp/data/_catalog.db"),
            source: rusqlite::Error::QueryReturnedNoRows,
        };
        assert!(!catalog(&busy).contains("rebuild"), "{}", catalog(&busy));
        // Through a data command, the catalog's own hint.
        assert_eq!(
            data(&DataError::Catalog(busy)),
            Some(catalog(&CatalogError::Busy {
                path: PathBuf::new(),
                source: rusqlite::Error::QueryReturnedNoRows,
            }))
        );
    }

    #[test]
    fn data_hints_name_the_command_that_helps() {
        let missing = DataError::NotFound {
            name: "nope".into(),
        };
        assert_eq!(
            data(&missing).as_deref(),
            Some("`swamp data list` shows what exists")
        );
        let old = DataError::VersionNotFound {
            name: "m/x".into(),
            version: 7,
            latest: 2,
        };
        assert_eq!(
            data(&old).as_deref(),
            Some("`swamp data get m/x` prints the latest")
        );
    }

    #[test]
    fn an_undo_cut_short_names_the_undo_that_plans_the_rest() {
        let e = UndoApplyError::Stopped {
            path: "outputs/a".into(),
            reason: "gone".into(),
            completed: 2,
            undoes: "01J".into(),
        };
        assert!(
            e.to_string().ends_with("2 step(s) completed and stay done"),
            "{e}"
        );
        assert_eq!(
            undo_apply(&e).as_deref(),
            Some("`swamp undo 01J` plans the rest")
        );
    }
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

/// What to do when `--conflict` names a policy the plan's conflicts do
/// not take.
fn misfit_hint(m: &crate::plan::conflict::Misfit) -> String {
    use crate::config::ConflictPolicy;
    if m.policy == ConflictPolicy::Newer && m.kinds.contains(&"deleted-and-changed") {
        return "a delete has no time to compare: settle deleted-and-changed conflicts with `--conflict local`, `--conflict remote` or `--conflict keep-both` (`swamp plan` shows each with its `fix:` line)".into();
    }
    "run the command without `--conflict` and fix each conflict as its `fix:` line says (`swamp plan` lists them)".into()
}
