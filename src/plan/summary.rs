//! A plan in numbers: counts and bytes per action kind, and an estimate
//! of the requests apply will send ([`Summary`]).

use crate::store::enforced::Prechecked;
use serde::{Deserialize, Serialize};

use super::action::*;
use super::{Action, Plan, RemoteInfo, is_zero};

/// Counts per action kind, conflicts, bytes, and an estimate of the
/// requests apply will make against the remote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    #[serde(rename = "move")]
    pub moves: usize,
    pub drop_duplicate: usize,
    pub upload: usize,
    pub download: usize,
    pub delete_local: usize,
    pub delete_remote: usize,
    pub rename_local: usize,
    pub record_base: usize,
    /// Records of deliberate deletes this sync writes (0 or 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub record_deletes: usize,
    /// Notes of this clone's progress past those records (0 or 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub note_progress: usize,
    /// Old records and notes removed without either (0 or 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prune_records: usize,
    /// History records past `[undo] keep_days` removed (0 or 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prune_history: usize,
    pub fetch: usize,
    pub copy_remote: usize,
    /// The bytes those copies carry (server-side or streamed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes_to_copy: u64,
    /// Of those, copies streamed through this machine (GET, then PUT:
    /// another provider or endpoint), and the bytes they carry.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub copy_streamed: usize,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes_streamed: u64,
    pub delete_source_remote: usize,
    pub invalidate_catalog: usize,
    pub finish_migration: usize,
    pub mirror_config: usize,
    pub publish_sentinel: usize,
    pub remove_temp: usize,
    /// Partial downloads to remove.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub remove_partial: usize,
    /// Interrupted multipart uploads to abort.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub abort_upload: usize,
    /// Applies whose set-aside files move out of the cache's tier tree.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub relocate_trash: usize,
    /// Applies whose trash this plan prunes, and the bytes freed here.
    #[serde(default)]
    pub prune_trash: usize,
    #[serde(default)]
    pub bytes_to_prune: u64,
    /// Files this run sets aside for `swamp undo` (cache files deleted or
    /// replaced, duplicates dropped).
    #[serde(default)]
    pub set_aside: usize,
    /// Remote objects this run deletes or replaces that it first copies
    /// into its remote trash (0 with `--no-undo`).
    #[serde(default)]
    pub trash_copies: usize,
    /// Remote keys skipped: folder markers, and keys in no tier.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: usize,
    /// Cache paths skipped: symlinks, special files and names no key can
    /// hold that stand in no synced file's way.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped_local: usize,
    pub conflicts: usize,
    /// Conflicts a `--conflict` policy settled (`remote.resolved`): their
    /// actions carry `settled_by`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub settled: usize,
    pub bytes_to_move: u64,
    pub bytes_to_upload: u64,
    pub bytes_to_download: u64,
    pub requests: RequestEstimate,
}

/// Requests apply is expected to send (retries not counted), in the
/// classes an apply reports what it sent: LIST covers the re-observation
/// that confirms convergence.
pub type RequestEstimate = crate::telemetry::RequestCounts;

impl Summary {
    /// A copy, and whether it is streamed (the bytes it carries then).
    fn count_copy(&mut self, c: &super::action::CopyRemote) {
        self.copy_remote += 1;
        self.bytes_to_copy += c.size;
        if c.streamed {
            self.copy_streamed += 1;
            self.bytes_streamed += c.size;
        }
    }
}

impl Plan {
    /// What a run that writes adds for the remote places it drains: each
    /// one's lock given back (a DELETE), and, on the target's service when
    /// the target's deletes are read first, a HEAD before that and before
    /// each old object's delete. (A source on another service is assumed
    /// to enforce its preconditions.)
    fn source_requests(&self, mut requests: RequestEstimate) -> RequestEstimate {
        let prechecked = self
            .remote
            .as_ref()
            .is_some_and(|r| r.prechecked.contains(&Prechecked::Delete));
        let copies_prechecked = self
            .remote
            .as_ref()
            .is_some_and(|r| r.prechecked.contains(&Prechecked::Copy));
        for (i, source) in self.sources.iter().enumerate() {
            if !source.datastore.is_remote() {
                continue;
            }
            requests.delete += 1;
            if prechecked
                && source
                    .datastore
                    .copies_server_side_to(&self.target.datastore)
            {
                let drains = || {
                    self.actions.iter().filter_map(|a| match a {
                        Action::DeleteSourceRemote(d) if d.source == i => Some(d),
                        _ => None,
                    })
                };
                let objects: usize = drains().map(|d| d.objects.len()).sum();
                requests.head += 1 + objects as u64;
                // Its trash copies read the object's version first too.
                if copies_prechecked && !self.no_undo {
                    requests.head += drains().map(|d| self.trash_copies_of(d)).sum::<u64>();
                }
            }
        }
        requests
    }

    /// The files drained sources delete (not swamp's own records there),
    /// each first copied server-side into that source's remote trash.
    pub fn drained_trash_copies(&self) -> u64 {
        self.actions
            .iter()
            .filter_map(|a| match a {
                Action::DeleteSourceRemote(d) => Some(self.trash_copies_of(d)),
                _ => None,
            })
            .sum()
    }

    fn trash_copies_of(&self, d: &DeleteSourceRemote) -> u64 {
        // A plan read from a file may name a source it lacks: none then.
        let Some(from) = self.sources.get(d.source).map(|s| s.placement()) else {
            return 0;
        };
        let prefix = crate::layout::Layout::remote_prefix(&from);
        d.objects
            .iter()
            .filter(|o| o.key.path_under(&prefix).is_some())
            .count() as u64
    }

    pub fn summary(&self) -> Summary {
        let mut tally = Tally {
            summary: Summary {
                conflicts: self.conflicts.len(),
                settled: self.remote.as_ref().map_or(0, |r| r.resolved.len()),
                ..Summary::default()
            },
            multipart_threshold: self.remote.as_ref().and_then(|r| r.multipart_threshold),
            sessions: self
                .remote
                .as_ref()
                .is_some_and(|r| r.url.starts_with("gs://")),
            ..Tally::default()
        };
        for a in &self.actions {
            tally.count(a);
        }
        let mut s = std::mem::take(&mut tally.summary);
        tally.drained_trash = self.drained_trash_copies();
        s.trash_copies += tally.drained_trash as usize;
        if self.no_undo {
            s.set_aside = 0;
            s.trash_copies = 0;
            tally.drained_trash = 0;
        }
        if let Some(remote) = &self.remote {
            s.skipped =
                remote.folder_markers + remote.unmanaged.iter().map(|u| u.objects).sum::<usize>();
            s.skipped_local = remote.skipped_local.len();
        }
        let writes_remote = self.writes_remote();
        s.requests = tally.requests(&s, self.remote.as_ref(), writes_remote);
        // A run that writes holds the lock of each remote place it drains
        // too, and gives each back.
        if writes_remote {
            s.requests = self.source_requests(s.requests);
        }
        s.requests.put += tally.multipart_extra;
        // The apply's record in the team's history: written before its
        // first change to the bucket, and again when it ends.
        if self.remote.is_some()
            && s.upload + s.copy_remote + s.delete_remote + s.delete_source_remote > 0
        {
            s.requests.put += 2;
        }
        // A resumed multipart upload lists what the server holds and
        // sends only the parts missing (estimated from the bytes done),
        // with no request to start; a resumed GCS session is asked what
        // it holds (a PUT, instead of opening one) and sent the rest.
        for r in &self.resumes {
            if r.transfer == super::resume::Transfer::Upload
                && tally.multipart_threshold.is_some_and(|t| r.size >= t)
            {
                let done = r.done / crate::store::parts::part_size(r.size);
                if tally.sessions {
                    s.requests.put = s.requests.put.saturating_sub(done);
                } else {
                    s.requests.list += 1;
                    s.requests.put = s.requests.put.saturating_sub(done + 1);
                }
            }
        }
        // The reads planning made to show diffs.
        s.requests.get += self.diffs.iter().filter(|d| d.read_remote).count() as u64;
        s
    }
}

/// Counts a plan's actions into its [`Summary`], with what only the
/// request estimate needs.
#[derive(Default)]
struct Tally {
    summary: Summary,
    /// HEADs of the objects a sentinel vouches for.
    sentinel_heads: u64,
    /// Remote trash objects pruned.
    pruned_objects: u64,
    /// Delete records and notes removed.
    records_pruned: u64,
    /// Temp files removed from a directory bucket.
    remote_temps: u64,
    /// `moved` markers left at drained sources (a PUT each).
    markers: u64,
    /// Of the trash copies, those of drained sources' files (made at the
    /// source, whose server may not be the target's).
    drained_trash: u64,
    /// Uploads at least this large go in parts.
    multipart_threshold: Option<u64>,
    /// Requests beyond one per upload that multipart uploads send.
    multipart_extra: u64,
    /// Large uploads go in GCS resumable sessions, not S3 multipart.
    sessions: bool,
}

impl Tally {
    /// A drained source's old objects, and the `moved` marker left there.
    fn count_drained(&mut self, d: &DeleteSourceRemote) {
        self.summary.delete_source_remote += d.objects.len();
        self.markers += u64::from(d.moved_to.is_some());
    }

    fn count_upload(&mut self, Upload { size, remote, .. }: &Upload) {
        let s = &mut self.summary;
        s.upload += 1;
        s.bytes_to_upload += size;
        if self.multipart_threshold.is_some_and(|t| *size >= t) {
            // S3: start, each part, complete; GCS: open the session, then
            // each chunk (the last completes). One request counted.
            let parts = size.div_ceil(crate::store::parts::part_size(*size));
            self.multipart_extra += if self.sessions { parts } else { parts + 1 };
        }
        if matches!(remote, RemoteExpect::Version { .. }) {
            s.trash_copies += 1;
        }
    }

    fn count(&mut self, a: &Action) {
        let s = &mut self.summary;
        match a {
            Action::Move(Move { size, .. }) => {
                s.moves += 1;
                s.bytes_to_move += size;
            }
            Action::DropDuplicate(_) => {
                s.drop_duplicate += 1;
                s.set_aside += 1;
            }
            Action::InvalidateCatalog => s.invalidate_catalog += 1,
            Action::FinishMigration => s.finish_migration += 1,
            Action::Upload(u) => self.count_upload(u),
            Action::Download(Download { size, local, .. }) => {
                s.download += 1;
                s.bytes_to_download += size;
                if local.is_some() {
                    s.set_aside += 1;
                }
            }
            Action::DeleteLocal(_) => {
                s.delete_local += 1;
                s.set_aside += 1;
            }
            Action::DeleteRemote(_) => {
                s.delete_remote += 1;
                s.trash_copies += 1;
            }
            Action::RenameLocal(_) => s.rename_local += 1,
            Action::RecordBase(_) => s.record_base += 1,
            Action::RecordDeletes(RecordDeletes { prune, .. }) => {
                s.record_deletes += 1;
                self.records_pruned += prune.len() as u64;
            }
            Action::NoteProgress(NoteProgress {
                replaces, prune, ..
            }) => {
                s.note_progress += 1;
                self.records_pruned += (replaces.len() + prune.len()) as u64;
            }
            Action::PruneHistory(crate::plan::action::PruneHistory { prune, .. }) => {
                s.prune_history += 1;
                self.records_pruned += prune.len() as u64;
            }
            Action::PruneRecords(PruneRecords { prune }) => {
                s.prune_records += 1;
                self.records_pruned += prune.len() as u64;
            }
            Action::Fetch(Fetch { size, .. }) => {
                s.fetch += 1;
                s.bytes_to_download += size;
            }
            Action::CopyRemote(c) => s.count_copy(c),
            Action::DeleteSourceRemote(d) => self.count_drained(d),
            Action::MirrorConfig(_) => s.mirror_config += 1,
            Action::RemoveTemp(RemoveTemp { remote, .. }) => {
                s.remove_temp += 1;
                self.remote_temps += u64::from(*remote);
            }
            Action::RemovePartial(_) => s.remove_partial += 1,
            Action::AbortUpload(_) => s.abort_upload += 1,
            Action::RelocateTrash(RelocateTrash { applies, .. }) => {
                s.relocate_trash += applies.len()
            }
            Action::PublishSentinel(PublishSentinel { objects, .. }) => {
                s.publish_sentinel += 1;
                self.sentinel_heads += objects.len() as u64;
            }
            Action::PruneTrash(PruneTrash {
                bytes,
                remote_objects,
                ..
            }) => {
                s.prune_trash += 1;
                s.bytes_to_prune += bytes;
                self.pruned_objects += *remote_objects as u64;
            }
        }
    }

    /// The requests the plan costs against its remote: the estimate the
    /// plan shows before anything is sent.
    ///
    /// Counted from the moment the plan is shown under the lock: its
    /// actions, the listing that verifies them, and giving back the
    /// datastore's lock a run that writes the bucket holds (a DELETE).
    /// Not counted: the listings planning itself costs (one per page, each
    /// time a run plans), and renewing a lock held longer than a third of
    /// its TTL (a PUT each time).
    fn requests(
        &self,
        s: &Summary,
        remote: Option<&RemoteInfo>,
        writes_remote: bool,
    ) -> RequestEstimate {
        let mut requests = RequestEstimate::default();
        if let Some(remote) = remote {
            let deletes = s.delete_remote as u64;
            let batched = |n: u64| {
                if remote.batch_delete {
                    n.div_ceil(1000)
                } else {
                    n
                }
            };
            requests = RequestEstimate {
                // The re-observation lists what the bucket will hold then;
                // a run that writes nothing there keeps the listing it
                // planned from (the bucket changed only if someone else
                // changed it, which the next plan shows).
                list: if writes_remote {
                    (remote.objects + s.upload)
                        .saturating_sub(s.delete_remote)
                        .div_ceil(1000)
                        .max(1) as u64
                } else {
                    0
                },
                put: s.upload as u64,
                // Each object deleted or replaced is first copied into the
                // remote trash: one server-side copy.
                copy: s.trash_copies as u64,
                get: s.download as u64,
                head: 0,
                // An abort is a DELETE of the upload (S3; a GCS session
                // is let go, to expire).
                delete: batched(deletes)
                    + batched(self.pruned_objects)
                    + if self.sessions {
                        0
                    } else {
                        s.abort_upload as u64
                    }
                    + u64::from(writes_remote),
            };
        }
        // Draining a remote source: a GET per fetch, a copy per object
        // copied server-side (a GET and a PUT per one streamed), a DELETE
        // per object left behind.
        requests.get += (s.fetch + s.copy_streamed) as u64;
        requests.copy += (s.copy_remote - s.copy_streamed) as u64;
        requests.put += s.copy_streamed as u64 + self.markers;
        requests.delete += s.delete_source_remote as u64;
        // Publishing the sentinel: a HEAD per object it vouches for, then
        // one PUT.
        requests.head += self.sentinel_heads;
        requests.put += s.publish_sentinel as u64;
        // A delete record or a note: one PUT each, and a DELETE per
        // record or note removed.
        requests.put += (s.record_deletes + s.note_progress) as u64;
        requests.delete += self.records_pruned + self.remote_temps;
        // A conditional delete or copy the server is not known to enforce
        // reads the object's version first (GCS until a probe shows it
        // does; fake-gcs-server never does).
        let prechecked = |p| remote.is_some_and(|r| r.prechecked.contains(&p));
        if prechecked(Prechecked::Delete) {
            requests.head +=
                s.delete_remote as u64 + self.records_pruned + u64::from(writes_remote);
        }
        if prechecked(Prechecked::Copy) {
            requests.head +=
                (s.trash_copies + s.copy_remote - s.copy_streamed) as u64 - self.drained_trash;
        }
        requests
    }
}
