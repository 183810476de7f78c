//! Interrupted transfers in a sync plan (pure): which uploads and
//! downloads continue where an earlier run stopped, and which recorded
//! uploads are aborted instead (see [`crate::store::resume`]).

use crate::plan::action::{
    AbortUpload, CopyRemote, Download, PartialWhy, RemovePartial, RemoveTemp, Upload,
};
use serde::{Deserialize, Serialize};

use super::{AbortWhy, Action, Plan};
use crate::layout::TierPath;
use crate::state::RemoteSnapshot;
use crate::store::resume::{PARTIAL_MIN, partial_name};

/// Which way a resumed transfer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transfer {
    Upload,
    Download,
    /// A server-side copy in parts (S3 `UploadPartCopy`) or in calls (a
    /// GCS rewrite, from its token).
    Copy,
}

/// A transfer of the plan that continues an interrupted one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    pub path: TierPath,
    pub transfer: Transfer,
    /// Bytes already there (parts the server acknowledged; bytes in the
    /// partial file).
    pub done: u64,
    pub size: u64,
}

impl Resume {
    pub fn left(&self) -> u64 {
        self.size.saturating_sub(self.done)
    }
}

/// Adds to a sync `plan` what `snapshot` shows of interrupted transfers,
/// at `now` (seconds). With `uploads` (a plan that pushes every file):
/// each upload of a file a recorded upload was of, unchanged and under a
/// day old, resumes it; every other record is aborted by an action
/// before the transfers (a record naming no path this remote can hold is
/// left alone: nothing of ours to abort). Each download of an object a
/// partial file holds some of resumes it.
pub fn add(plan: &mut Plan, snapshot: &RemoteSnapshot, now: u64, uploads: bool) {
    let interrupted = &snapshot.interrupted;
    if interrupted.is_empty() {
        return;
    }
    let key = |path: &TierPath| format!("{}{}", snapshot.key_prefix, path.as_str());
    let mut aborts = Vec::new();
    let mut resumes = Vec::new();
    let records = if uploads {
        interrupted.uploads.as_slice()
    } else {
        &[]
    };
    for record in records {
        let Ok(path) = TierPath::parse(&record.path) else {
            continue;
        };
        if record.key != key(&path) {
            continue;
        }
        let upload = plan.actions.iter().find_map(|a| sent_in_parts(a, &path));
        let why = match upload {
            _ if record.is_stale(now) => AbortWhy::Stale,
            None => AbortWhy::Unneeded,
            Some((size, sha, _))
                if size != record.size || !sha.eq_ignore_ascii_case(&record.sha256) =>
            {
                AbortWhy::FileChanged
            }
            Some((size, _, transfer)) => {
                resumes.push(Resume {
                    path,
                    transfer,
                    done: record.done_bytes().min(size),
                    size,
                });
                continue;
            }
        };
        aborts.push(Action::AbortUpload(AbortUpload {
            path,
            upload_id: record.upload_id.clone(),
            why,
        }));
    }
    let mut removals = unwanted_partials(plan, snapshot);
    if uploads {
        removals.extend(remote_temps(snapshot));
    }
    for a in &plan.actions {
        if let Action::Download(Download {
            path,
            size,
            version,
            ..
        }) = a
            && *size >= PARTIAL_MIN
            && let name = partial_name(&key(path), &version.as_str())
            && !interrupted.aged.contains(&name)
            && let Some(&done) = interrupted.partials.get(&name)
            && done > 0
            && done <= *size
        {
            resumes.push(Resume {
                path: path.clone(),
                transfer: Transfer::Download,
                done,
                size: *size,
            });
        }
    }
    resumes.sort_by(|a, b| a.path.cmp(&b.path));
    plan.resumes = resumes;
    plan.actions
        .splice(0..0, removals.into_iter().chain(aborts));
}

/// What `action` sends to `path` that a recorded upload could be of: its
/// size, hex sha256 and how it goes.
fn sent_in_parts(action: &Action, path: &TierPath) -> Option<(u64, String, Transfer)> {
    match action {
        Action::Upload(Upload {
            path: p,
            size,
            sha256,
            ..
        }) if p == path => Some((*size, sha256.hex(), Transfer::Upload)),
        // A streamed copy uploads too (from its spool file); a large
        // server-side copy is in parts.
        Action::CopyRemote(CopyRemote {
            path: p,
            size,
            sha256,
            streamed,
            ..
        }) if p == path => {
            let how = if *streamed {
                Transfer::Upload
            } else {
                Transfer::Copy
            };
            Some((*size, sha256.hex(), how))
        }
        _ => None,
    }
}

/// Temp files an interrupted write left in a directory store, untouched
/// for a day (see [`crate::store::TEMP_MAX_AGE`]), under one of the
/// namespace's tiers (others, `doctor` reports).
fn remote_temps(snapshot: &RemoteSnapshot) -> Vec<Action> {
    snapshot
        .interrupted
        .temps
        .iter()
        .filter_map(|t| {
            let path = TierPath::parse(t.key.strip_prefix(&snapshot.key_prefix)?).ok()?;
            Some(Action::RemoveTemp(RemoveTemp {
                path,
                source: None,
                size: t.size,
                remote: true,
            }))
        })
        .collect()
}

/// The cache's partial downloads no plan would continue: untouched for a
/// week, or of no (key, version) the remote lists now (deleted, replaced
/// or excluded since). None while the plan drains a source, whose
/// objects' partials share the directory.
fn unwanted_partials(plan: &Plan, snapshot: &RemoteSnapshot) -> Vec<Action> {
    let interrupted = &snapshot.interrupted;
    if interrupted.partials.is_empty() || !plan.sources.is_empty() {
        return Vec::new();
    }
    let wanted: std::collections::HashSet<String> = snapshot
        .files
        .iter()
        .filter(|(_, r)| r.size >= PARTIAL_MIN)
        .map(|(path, r)| {
            partial_name(
                &format!("{}{}", snapshot.key_prefix, path.as_str()),
                &r.version.as_str(),
            )
        })
        .collect();
    interrupted
        .partials
        .iter()
        .filter_map(|(name, &size)| {
            let why = if interrupted.aged.contains(name) {
                PartialWhy::Aged
            } else if !wanted.contains(name) {
                PartialWhy::Unwanted
            } else {
                return None;
            };
            Some(Action::RemovePartial(RemovePartial {
                name: name.clone(),
                size,
                why,
            }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Sha256;
    use crate::plan::RemoteExpect;
    use crate::store::resume::{PartRecord, STALE_UPLOAD_SECS, UploadRecord};

    use crate::testutil::tp;

    fn record(path: &str, sha: Sha256, parts: i32) -> UploadRecord {
        UploadRecord {
            path: path.into(),
            key: format!("p/{path}"),
            upload_id: format!("id-{path}"),
            size: 30 << 20,
            sha256: sha.hex(),
            part_size: 8 << 20,
            started: 1_000,
            parts: (1..=parts)
                .map(|number| PartRecord {
                    number,
                    etag: String::new(),
                    md5: String::new(),
                })
                .collect(),
            session: None,
            source: None,
            token: None,
            rewritten: 0,
        }
    }

    fn upload(path: &str, sha: Sha256) -> Action {
        Action::Upload(Upload {
            path: tp(path),
            size: 30 << 20,
            sha256: sha,
            remote: RemoteExpect::Absent,
            settled_by: None,
        })
    }

    fn plan_with(actions: Vec<Action>) -> Plan {
        serde_json::from_value(serde_json::json!({
            "scope": "push",
            "target": {"datastore": {"type": "local"}, "root": "."},
            "sources": [],
            "actions": actions,
            "conflicts": [],
        }))
        .unwrap()
    }

    fn snapshot(uploads: Vec<UploadRecord>, partials: &[(&str, &str, u64)]) -> RemoteSnapshot {
        let mut s: RemoteSnapshot = serde_json::from_value(serde_json::json!({
            "url": "s3://b/p/",
            "key_prefix": "p/",
            "files": {},
            "objects": 0,
            "base": {},
        }))
        .unwrap();
        s.interrupted.uploads = uploads;
        s.interrupted.partials = partials
            .iter()
            .map(|(k, v, n)| (partial_name(k, v), *n))
            .collect();
        s
    }

    #[test]
    fn an_unchanged_file_resumes_and_every_other_record_is_aborted_first() {
        let same = Sha256([1; 32]);
        let other = Sha256([2; 32]);
        let mut plan = plan_with(vec![
            upload("data/a/1/raw", same),
            upload("data/b/1/raw", same),
        ]);
        let snap = snapshot(
            vec![
                record("data/a/1/raw", same, 3),
                record("data/b/1/raw", other, 1),
                record("data/c/1/raw", same, 1),
            ],
            &[],
        );
        add(&mut plan, &snap, 2_000, true);
        assert_eq!(
            plan.resumes,
            vec![Resume {
                path: tp("data/a/1/raw"),
                transfer: Transfer::Upload,
                done: 24 << 20,
                size: 30 << 20,
            }]
        );
        let kinds: Vec<_> = plan
            .actions
            .iter()
            .map(|a| (a.kind(), a.path().unwrap().to_string(), a.reason()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (
                    "abort-upload",
                    "data/b/1/raw".into(),
                    "interrupted upload of a file changed since"
                ),
                (
                    "abort-upload",
                    "data/c/1/raw".into(),
                    "interrupted upload no longer needed"
                ),
                ("upload", "data/a/1/raw".into(), "new in the cache"),
                ("upload", "data/b/1/raw".into(), "new in the cache"),
            ]
        );
    }

    #[test]
    fn a_plan_that_does_not_push_leaves_recorded_uploads_be() {
        let same = Sha256([1; 32]);
        let mut plan = plan_with(vec![]);
        let snap = snapshot(vec![record("data/a/1/raw", same, 3)], &[]);
        add(&mut plan, &snap, 2_000, false);
        assert!(plan.actions.is_empty() && plan.resumes.is_empty());
    }

    #[test]
    fn an_upload_older_than_a_day_is_aborted_not_resumed() {
        let same = Sha256([1; 32]);
        let mut plan = plan_with(vec![upload("data/a/1/raw", same)]);
        let snap = snapshot(vec![record("data/a/1/raw", same, 3)], &[]);
        add(&mut plan, &snap, 1_001 + STALE_UPLOAD_SECS, true);
        assert!(plan.resumes.is_empty());
        assert_eq!(
            plan.actions[0].reason(),
            "interrupted upload older than a day"
        );
    }

    #[test]
    fn a_record_of_a_key_outside_the_remote_is_left_alone() {
        let same = Sha256([1; 32]);
        let mut r = record("data/a/1/raw", same, 1);
        r.key = "elsewhere/data/a/1/raw".into();
        let mut plan = plan_with(vec![]);
        add(&mut plan, &snapshot(vec![r], &[]), 2_000, true);
        assert!(plan.actions.is_empty());
    }

    #[test]
    fn a_download_resumes_only_the_partial_of_the_version_it_reads() {
        let download = |path: &str, version: &str| {
            Action::Download(Download {
                path: tp(path),
                size: 64 << 20,
                version: version.into(),
                expect: crate::plan::Expect::Sha256(Sha256([3; 32])),
                local: None,
                settled_by: None,
            })
        };
        let mut plan = plan_with(vec![
            download("data/a/1/raw", "v2"),
            download("data/b/1/raw", "v1"),
        ]);
        let snap = snapshot(
            vec![],
            &[
                ("p/data/a/1/raw", "v1", 10 << 20),
                ("p/data/b/1/raw", "v1", 40 << 20),
            ],
        );
        add(&mut plan, &snap, 0, false);
        assert_eq!(
            plan.resumes,
            vec![Resume {
                path: tp("data/b/1/raw"),
                transfer: Transfer::Download,
                done: 40 << 20,
                size: 64 << 20,
            }]
        );
        assert_eq!(plan.resumes[0].left(), 24 << 20);
    }
}
