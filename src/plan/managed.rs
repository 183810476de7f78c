//! The managed-config part of a plan (pure): the mirror copies a `config`
//! plan starts with, and the sentinel's step, decided from what the
//! observation says the remote's sentinel is. See [`crate::state::managed`].

use crate::plan::action::{MirrorConfig, PublishSentinel};
use crate::plan::conflict::ConfigAlreadyMigrated;
use std::collections::BTreeMap;

use super::{Action, Conflict};
use crate::layout::TierPath;
use crate::state::managed::{Mirror, RemoteSentinel, sentinel_path};
use crate::state::{FileState, Scope};

/// The local mirror copies a `config` plan starts with: every definition
/// file whose cache copy is missing or different.
pub(crate) fn mirror_actions(
    mirror: &Mirror,
    cache: &BTreeMap<TierPath, FileState>,
) -> Vec<Action> {
    mirror
        .files
        .iter()
        .filter(|(p, f)| cache.get(*p).map(|c| &c.sha256) != Some(&f.sha256))
        .map(|(p, f)| {
            Action::MirrorConfig(MirrorConfig {
                path: p.clone(),
                size: f.size,
                sha256: f.sha256,
                local: cache.get(p).map(|c| c.sha256),
            })
        })
        .collect()
}

/// Decides the sentinel's part of a plan, once the rest is known.
///
/// `explicit`: the scope is `config` (`datastore config migrate`), where a
/// remote sentinel vouching for other content is a conflict. For the other
/// pushing scopes (with `[config] managed = true`), a missing sentinel is
/// published once the cache holds exactly the mirror, and a different one
/// is none of their business.
///
/// `cache_now`: the cache as observed. A migrate that finds the remote's
/// sentinel vouching for its content but missing from the cache (a run
/// killed between publishing it and landing it) lands it, as a publish
/// that finds its own sentinel there does.
pub(crate) fn sentinel_step(
    scope: Scope,
    mirror: &Mirror,
    cache_after: &BTreeMap<TierPath, FileState>,
    cache_now: &BTreeMap<TierPath, FileState>,
    sentinel: &RemoteSentinel,
) -> (Option<Action>, Option<Conflict>) {
    let explicit = scope == Scope::Config;
    if mirror.files.is_empty() {
        return (None, None);
    }
    let objects = mirror.sentinel("").objects;
    let publish = |objects| {
        Some(Action::PublishSentinel(PublishSentinel {
            path: sentinel_path(),
            sources: mirror.sources.clone(),
            objects,
        }))
    };
    match sentinel {
        RemoteSentinel::Present { body, parsed } => {
            let same = parsed
                .as_ref()
                .is_some_and(|s| s.vouches_same(&mirror.sources, &objects));
            if same && explicit {
                let landed = cache_now.get(&sentinel_path()).map(|f| f.sha256.hex())
                    == Some(crate::fsutil::sha256_bytes(body.as_bytes()));
                return (if landed { None } else { publish(objects) }, None);
            }
            if same || !explicit {
                return (None, None);
            }
            let ours = serde_json::to_string_pretty(&serde_json::json!({
                "sources": mirror.sources,
                "objects": objects,
            }))
            .expect("serialises");
            (
                None,
                Some(Conflict::ConfigAlreadyMigrated(ConfigAlreadyMigrated {
                    path: sentinel_path(),
                    remote_body: body.trim_end().to_string(),
                    local_body: ours,
                })),
            )
        }
        RemoteSentinel::Absent => {
            // The cache must hold exactly what the sentinel will vouch for;
            // apply verifies the remote copies before publishing.
            let cache_matches = mirror
                .files
                .iter()
                .all(|(p, f)| cache_after.get(p).map(|c| &c.sha256) == Some(&f.sha256));
            if !explicit && !cache_matches {
                return (None, None);
            }
            (publish(objects), None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::managed::Sentinel;

    fn mirror() -> Mirror {
        let mut files = BTreeMap::new();
        files.insert(
            TierPath::parse("config/models/a.yaml").unwrap(),
            FileState {
                size: 1,
                sha256: "aa".into(),
            },
        );
        Mirror {
            sources: vec!["models".into()],
            files,
        }
    }

    fn present(s: &Sentinel) -> RemoteSentinel {
        RemoteSentinel::Present {
            body: String::from_utf8(s.to_bytes()).unwrap(),
            parsed: Some(s.clone()),
        }
    }

    fn kinds(
        step: (Option<Action>, Option<Conflict>),
    ) -> (Option<&'static str>, Option<&'static str>) {
        (step.0.map(|a| a.kind()), step.1.map(|c| c.kind()))
    }

    #[test]
    fn migrate_publishes_only_when_the_remote_has_no_sentinel() {
        let m = mirror();
        let empty = BTreeMap::new();
        assert_eq!(
            kinds(sentinel_step(
                Scope::Config,
                &m,
                &empty,
                &empty,
                &RemoteSentinel::Absent
            )),
            (Some("publish-sentinel"), None)
        );
        // The same content, published at another time: already migrated.
        let same = m.sentinel("2020-01-01T00:00:00Z");
        // Published and landed in the cache: nothing to do.
        let mut landed = BTreeMap::new();
        landed.insert(
            sentinel_path(),
            FileState {
                size: 0,
                sha256: crate::digest::Sha256::of(&same.to_bytes()),
            },
        );
        assert_eq!(
            kinds(sentinel_step(
                Scope::Config,
                &m,
                &empty,
                &landed,
                &present(&same)
            )),
            (None, None)
        );
        // Published, but the run was killed before it landed in the cache:
        // migrate lands it (a push leaves that to the sync's download).
        assert_eq!(
            kinds(sentinel_step(
                Scope::Config,
                &m,
                &empty,
                &empty,
                &present(&same)
            )),
            (Some("publish-sentinel"), None)
        );
        assert_eq!(
            kinds(sentinel_step(
                Scope::Sync,
                &m,
                &m.files,
                &empty,
                &present(&same)
            )),
            (None, None)
        );
    }

    #[test]
    fn another_repos_sentinel_is_a_conflict_for_migrate_only() {
        let m = mirror();
        let mut theirs = m.sentinel("2020-01-01T00:00:00Z");
        theirs.objects.insert(
            TierPath::parse("config/models/b.yaml").unwrap(),
            "bb".into(),
        );
        let step = sentinel_step(Scope::Config, &m, &m.files, &m.files, &present(&theirs));
        let Some(Conflict::ConfigAlreadyMigrated(ConfigAlreadyMigrated {
            remote_body,
            local_body,
            ..
        })) = &step.1
        else {
            panic!("{step:?}")
        };
        assert!(
            remote_body.contains("config/models/b.yaml"),
            "{remote_body}"
        );
        assert!(!local_body.contains("config/models/b.yaml"), "{local_body}");
        assert!(step.0.is_none());
        // A plain sync leaves it alone.
        assert_eq!(
            kinds(sentinel_step(
                Scope::Sync,
                &m,
                &m.files,
                &m.files,
                &present(&theirs)
            )),
            (None, None)
        );
        // Unreadable: a conflict too, never overwritten.
        let junk = RemoteSentinel::Present {
            body: "not json".into(),
            parsed: None,
        };
        assert_eq!(
            kinds(sentinel_step(Scope::Config, &m, &m.files, &m.files, &junk)),
            (None, Some("config-already-migrated"))
        );
    }

    #[test]
    fn a_push_publishes_a_missing_sentinel_only_once_the_cache_holds_the_mirror() {
        let m = mirror();
        let empty = BTreeMap::new();
        assert_eq!(
            kinds(sentinel_step(
                Scope::Push,
                &m,
                &empty,
                &BTreeMap::new(),
                &RemoteSentinel::Absent
            )),
            (None, None)
        );
        assert_eq!(
            kinds(sentinel_step(
                Scope::Push,
                &m,
                &m.files,
                &BTreeMap::new(),
                &RemoteSentinel::Absent
            )),
            (Some("publish-sentinel"), None)
        );
        // Nothing to vouch for: nothing to publish.
        assert_eq!(
            kinds(sentinel_step(
                Scope::Config,
                &Mirror::default(),
                &empty,
                &BTreeMap::new(),
                &RemoteSentinel::Absent
            )),
            (None, None)
        );
    }
}
