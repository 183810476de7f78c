//! Multipart uploads to S3, for files too large for one PutObject (over
//! 5 GiB) or large enough that parallel parts beat one stream.
//!
//! - **Parts** are read in order (the file's sha256 is recomputed across
//!   them, so a file that changed since it was hashed is never completed),
//!   each sent with its `Content-MD5` (the server refuses a part that
//!   arrived other than read), a few in flight at once. Memory is the
//!   parts in flight, whatever the file's size.
//! - **The precondition** the caller names is checked by
//!   `CompleteMultipartUpload` (`If-None-Match: *`, `If-Match`), the one
//!   request that makes the object appear; until then nothing is visible.
//! - **Failure** aborts the upload (its parts are discarded); a retried
//!   complete whose first answer was lost is recognised by the object's
//!   composite ETag and sha256 metadata.
//! - **The result** is checked: its ETag must be the composite of the
//!   parts' ETags (S3's own rule; on an unencrypted bucket those are the
//!   MD5s the server checked), or else its HEAD must show our size and
//!   sha256. Nothing is ever deleted for it: under `If-Match` the object
//!   replaced is gone, and an encrypted bucket's ETags are no MD5s.
//! - **Memory**: part buffers come from one budget for the whole process
//!   (`PART_BUDGET_MIB`), whatever the number of uploads at once.

use std::path::Path;

use aws_sdk_s3::error::ProvideErrorMetadata as _;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use base64::Engine as _;
use futures_util::StreamExt;

use super::{S3Store, conditional_headers, strip_etag};
use crate::store::resume::{PartRecord, UploadJournal, UploadRecord};
use crate::store::retry::with_retry;
use crate::store::{ObjectMeta, Precondition, SHA256_METADATA, Store as _, StoreError};

#[cfg(test)]
use crate::store::parts::MAX_PARTS;
pub(super) use crate::store::parts::{THRESHOLD, part_size};

/// Parts in flight at once, per upload.
const CONCURRENCY: usize = 4;

/// MiB of part buffers all uploads of the process hold at once: a sync of
/// 64 large files at a time would otherwise hold 64 × 4 parts.
const PART_BUDGET_MIB: u32 = 64;

fn part_budget() -> &'static tokio::sync::Semaphore {
    static BUDGET: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    BUDGET.get_or_init(|| tokio::sync::Semaphore::new(PART_BUDGET_MIB as usize))
}

/// The ETag S3 gives an object completed from parts with these MD5s.
fn composite_etag(part_md5s: &[[u8; 16]]) -> String {
    crate::digest::MultipartEtag::of_parts(part_md5s).to_string()
}

/// One part, read and ready to send.
struct Part {
    number: i32,
    bytes: bytes::Bytes,
    md5: [u8; 16],
}

impl S3Store {
    /// Uploads `src` (`size` bytes, whose sha256 the caller computed) in
    /// parts, completing only under `pre`.
    pub(super) async fn put_multipart(
        &self,
        key: &str,
        src: &Path,
        size: u64,
        sha256: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        self.in_upload(key, Some(sha256), None, |upload_id| async move {
            let file = FileToSend { src, size, sha256 };
            self.send_parts_and_complete(key, &file, pre, &upload_id, None)
                .await
        })
        .await
    }

    /// What a copy carries from its source that CopyObject would have
    /// (`MetadataDirective: COPY`): the headers an object is served with
    /// and its user metadata.
    pub(super) async fn carried_in(&self, bucket: &str, key: &str) -> Result<Carried, StoreError> {
        let client = self.client().await?;
        let out = with_retry(&self.options.retry, |_| {
            let req = client.head_object().bucket(bucket).key(key);
            async move { req.send().await.map_err(|e| self.map_err(e, Some(key))) }
        })
        .await?;
        Ok(Carried {
            content_type: out.content_type().map(str::to_owned),
            content_encoding: out.content_encoding().map(str::to_owned),
            content_disposition: out.content_disposition().map(str::to_owned),
            content_language: out.content_language().map(str::to_owned),
            cache_control: out.cache_control().map(str::to_owned),
            metadata: out.metadata().cloned().unwrap_or_default(),
        })
    }

    /// Creates a multipart upload of `key` (with `sha256` metadata when
    /// known, and the headers and metadata `carried` from a copy's
    /// source), runs `body` with its upload id, and aborts the upload when
    /// `body` fails. Best effort: an upload left behind costs storage
    /// until the bucket's lifecycle rule (if any) clears it, never data.
    pub(super) async fn in_upload<T, F, Fut>(
        &self,
        key: &str,
        sha256: Option<&str>,
        carried: Option<&Carried>,
        body: F,
    ) -> Result<T, StoreError>
    where
        F: FnOnce(String) -> Fut,
        Fut: std::future::Future<Output = Result<T, StoreError>>,
    {
        let upload_id = self.create_upload(key, sha256, carried).await?;
        let result = body(upload_id.clone()).await;
        if result.is_err() {
            let _ = self.abort_upload(key, &upload_id).await;
        }
        result
    }

    /// Creates a multipart upload of `key`; returns its id.
    pub(super) async fn create_upload(
        &self,
        key: &str,
        sha256: Option<&str>,
        carried: Option<&Carried>,
    ) -> Result<String, StoreError> {
        let client = self.client().await?;
        let created = with_retry(&self.options.retry, |_| {
            let mut req = client
                .create_multipart_upload()
                .bucket(&self.bucket)
                .key(key);
            if let Some(c) = carried {
                req = req
                    .set_content_type(c.content_type.clone())
                    .set_content_encoding(c.content_encoding.clone())
                    .set_content_disposition(c.content_disposition.clone())
                    .set_content_language(c.content_language.clone())
                    .set_cache_control(c.cache_control.clone())
                    .set_metadata(Some(c.metadata.clone()));
            }
            if let Some(sha) = sha256 {
                req = req.metadata(SHA256_METADATA, sha);
            }
            async move { req.send().await.map_err(|e| self.map_err(e, Some(key))) }
        })
        .await?;
        Ok(created
            .upload_id()
            .ok_or_else(|| StoreError::Server {
                target: self.describe(),
                key: Some(key.to_string()),
                message: "no upload id in the answer".to_string(),
            })?
            .to_string())
    }

    /// The parts the server holds of upload `upload_id` (`ListParts`, a
    /// page per 1,000 parts): number, ETag and size. An upload gone is
    /// [`StoreError::UploadGone`].
    pub(super) async fn list_parts(
        &self,
        key: &str,
        upload_id: &str,
    ) -> Result<Listed, StoreError> {
        let client = self.client().await?;
        let mut listed = Listed::new();
        let mut marker: Option<String> = None;
        loop {
            let page = with_retry(&self.options.retry, |_| {
                let req = client
                    .list_parts()
                    .bucket(&self.bucket)
                    .key(key)
                    .upload_id(upload_id)
                    .set_part_number_marker(marker.clone());
                async move {
                    match req.send().await {
                        Ok(out) => Ok(out),
                        Err(e) if e.code() == Some("NoSuchUpload") => Err(StoreError::UploadGone {
                            target: self.describe(),
                            key: key.to_string(),
                        }),
                        Err(e) => Err(self.map_err(e, Some(key))),
                    }
                }
            })
            .await?;
            for p in page.parts() {
                if let (Some(n), Some(etag)) = (p.part_number(), p.e_tag()) {
                    listed.insert(n, (etag.to_string(), p.size().unwrap_or(-1)));
                }
            }
            match page.next_part_number_marker() {
                // A server that hands back the marker it was given would
                // be listed forever: what was listed is what there is (a
                // part it never showed is sent again).
                Some(next) if marker.as_deref() == Some(next) => {
                    tracing::warn!(
                        target: "swamp::store",
                        key,
                        marker = next,
                        "the server repeated its part-listing marker; listing stopped"
                    );
                    return Ok(listed);
                }
                Some(next) if page.is_truncated() == Some(true) => marker = Some(next.to_string()),
                _ => return Ok(listed),
            }
        }
    }

    /// [`S3Store::put_multipart`], recorded in `journal` so that a run
    /// stopped part-way is continued by the next (see
    /// [`crate::store::resume`]): the upload recorded there, when it is
    /// of this file unchanged, is listed and only the parts it lacks are
    /// sent. An upload that can never complete as planned (the file
    /// changed, the precondition failed) is aborted and forgotten; one
    /// stopped by the network or the server is kept for the next run.
    pub(super) async fn put_multipart_resumable(
        &self,
        key: &str,
        src: &Path,
        size: u64,
        sha256: &str,
        pre: &Precondition,
        journal: &UploadJournal,
    ) -> Result<ObjectMeta, StoreError> {
        let part_size = part_size(size);
        let same = |r: &UploadRecord| {
            r.sha256.eq_ignore_ascii_case(sha256) && r.size == size && r.part_size == part_size
        };
        let (record, listed) = match self.recorded(journal, key, same).await? {
            Some(r) => r,
            None => {
                let upload_id = self.create_upload(key, Some(sha256), None).await?;
                let record = UploadRecord {
                    path: journal.path().to_string(),
                    key: key.to_string(),
                    upload_id,
                    size,
                    sha256: sha256.to_string(),
                    part_size,
                    started: crate::clock::now_secs(),
                    parts: Vec::new(),
                    session: None,
                    source: None,
                    token: None,
                    rewritten: 0,
                };
                (self.record_started(journal, record).await?, Listed::new())
            }
        };
        let upload_id = record.upload_id.clone();
        let mut progress = Progress {
            journal,
            record,
            listed,
        };
        let result = self
            .send_parts_and_complete(
                key,
                &FileToSend { src, size, sha256 },
                pre,
                &upload_id,
                Some(&mut progress),
            )
            .await;
        self.settle_recorded(journal, key, &upload_id, result).await
    }

    /// The upload `journal` records, with the parts the server holds of
    /// it, when it is of `key` and `same` (what is sent now, unchanged);
    /// any other record is forgotten, its upload aborted when it is of
    /// `key` (a plan aborts it first; this is the moment of acting).
    /// Another key's upload is never touched here.
    pub(super) async fn recorded(
        &self,
        journal: &UploadJournal,
        key: &str,
        same: impl FnOnce(&UploadRecord) -> bool,
    ) -> Result<Option<(UploadRecord, Listed)>, StoreError> {
        let Some(r) = journal.read() else {
            return Ok(None);
        };
        if r.key == key && same(&r) {
            match self.list_parts(key, &r.upload_id).await {
                Ok(listed) => return Ok(Some((r, listed))),
                Err(StoreError::UploadGone { .. }) => {}
                Err(e) => return Err(e),
            }
        } else if r.key == key {
            self.abort_upload(key, &r.upload_id).await?;
        }
        journal.clear()?;
        Ok(None)
    }

    /// Records a new upload (or copy in parts) before its first part: a
    /// run killed from here on leaves one the next knows of. One that
    /// cannot be recorded is aborted.
    pub(super) async fn record_started(
        &self,
        journal: &UploadJournal,
        record: UploadRecord,
    ) -> Result<UploadRecord, StoreError> {
        if let Err(e) = journal.save(&record) {
            let _ = self.abort_upload(&record.key, &record.upload_id).await;
            return Err(e);
        }
        Ok(record)
    }

    /// What a recorded upload (or copy in parts) leaves once it ends: its
    /// record goes when it completed, and with the upload when it can
    /// never complete as planned (the file or source changed, the
    /// precondition failed, the result was not ours, the upload is gone);
    /// one stopped by the network or the server is kept for the next run.
    pub(super) async fn settle_recorded<T>(
        &self,
        journal: &UploadJournal,
        key: &str,
        upload_id: &str,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match &result {
            Ok(_) => journal.clear()?,
            Err(
                StoreError::ChangedSinceHashed { .. }
                | StoreError::PreconditionFailed { .. }
                | StoreError::Integrity { .. }
                | StoreError::UploadGone { .. },
            ) => {
                let _ = self.abort_upload(key, upload_id).await;
                journal.clear()?;
            }
            Err(_) => {}
        }
        result
    }

    /// Completes the upload from `parts` (number and ETag, in order) only
    /// under `pre`, returning the object's version. A retry whose first
    /// answer was lost meets an object the first complete made (the upload
    /// id is spent): it is taken as done when `ours` recognises its HEAD.
    pub(super) async fn complete_upload(
        &self,
        key: &str,
        upload_id: &str,
        parts: &[(i32, String)],
        pre: &Precondition,
        ours: &(dyn Fn(&ObjectMeta) -> bool + Sync),
    ) -> Result<String, StoreError> {
        let client = self.client().await?;
        let completed = CompletedMultipartUpload::builder()
            .set_parts(Some(
                parts
                    .iter()
                    .map(|(n, etag)| CompletedPart::builder().part_number(*n).e_tag(etag).build())
                    .collect(),
            ))
            .build();
        with_retry(&self.options.retry, |attempt| {
            let mut req = client
                .complete_multipart_upload()
                .bucket(&self.bucket)
                .key(key)
                .upload_id(upload_id)
                .multipart_upload(completed.clone());
            let (none_match, matches) = conditional_headers(pre);
            req = req.set_if_none_match(none_match).set_if_match(matches);
            async move {
                match req.send().await {
                    Ok(out) => Ok(strip_etag(out.e_tag())),
                    // The upload itself is gone (aborted, or expired by a
                    // lifecycle rule): no object was touched, whatever the
                    // precondition.
                    Err(e)
                        if attempt == 1
                            && aws_sdk_s3::error::ProvideErrorMetadata::code(&e)
                                == Some("NoSuchUpload") =>
                    {
                        Err(StoreError::UploadGone {
                            target: self.describe(),
                            key: key.to_string(),
                        })
                    }
                    Err(e) => match self.map_err(e, Some(key)) {
                        e if attempt > 1 => match self.head(key).await? {
                            Some(m) if ours(&m) => Ok(m.version),
                            _ => Err(e),
                        },
                        StoreError::NotFound { key, .. }
                            if matches!(pre, Precondition::Matches(_)) =>
                        {
                            Err(StoreError::PreconditionFailed { key })
                        }
                        e => Err(e),
                    },
                }
            }
        })
        .await
    }

    async fn send_parts_and_complete(
        &self,
        key: &str,
        file: &FileToSend<'_>,
        pre: &Precondition,
        upload_id: &str,
        progress: Option<&mut Progress<'_>>,
    ) -> Result<ObjectMeta, StoreError> {
        let done = self.send_parts(key, file, upload_id, progress).await?;
        self.complete_parts(key, file, pre, upload_id, done).await
    }

    /// Sends the parts of `file` the upload lacks (those `progress` holds,
    /// unchanged, are not sent again), a few at a time within the part
    /// budget; each part's number, ETag and MD5, once the whole file read
    /// is checked against its sha256.
    async fn send_parts(
        &self,
        key: &str,
        file: &FileToSend<'_>,
        upload_id: &str,
        mut progress: Option<&mut Progress<'_>>,
    ) -> Result<Vec<(i32, String, [u8; 16])>, StoreError> {
        let FileToSend { src, size, sha256 } = *file;
        let part_size = part_size(size);
        let mut reader = Some(PartReader::open(src, size, part_size)?);
        let mut in_flight = futures_util::stream::FuturesUnordered::new();
        let mut done: Vec<(i32, String, [u8; 16])> = Vec::new();
        let mut read_all = false;
        // A part's share of the budget (all of it for a part larger).
        let mib = (part_size.div_ceil(1 << 20) as u32).min(PART_BUDGET_MIB);
        loop {
            // Read in order (on a blocking thread), a few parts in flight,
            // each holding its share of the budget until it is sent. With
            // parts of ours in flight, never wait for budget (they could
            // not finish while we wait): send what is in flight first.
            while !read_all && in_flight.len() < CONCURRENCY {
                let permit = if in_flight.is_empty() {
                    part_budget()
                        .acquire_many(mib)
                        .await
                        .map_err(|e| StoreError::task("waiting for part budget", e))?
                } else {
                    match part_budget().try_acquire_many(mib) {
                        Ok(p) => p,
                        Err(_) => break,
                    }
                };
                let mut r = reader.take().expect("the reader is put back");
                let (next, r) = tokio::task::spawn_blocking(move || (r.next(), r))
                    .await
                    .map_err(|e| StoreError::task("reading a part", e))?;
                reader = Some(r);
                match next? {
                    // Already on the server, as read now: not sent again.
                    Some(part) if progress.as_ref().is_some_and(|p| p.holds(&part)) => {
                        let etag = progress.as_ref().expect("checked").listed[&part.number]
                            .0
                            .clone();
                        done.push((part.number, etag, part.md5));
                    }
                    Some(part) => in_flight.push(async move {
                        let sent = self.upload_part(key, upload_id, part).await;
                        drop(permit);
                        sent
                    }),
                    None => read_all = true,
                }
            }
            match in_flight.next().await {
                Some(part) => {
                    let part = part?;
                    if let Some(p) = progress.as_mut() {
                        p.record(&part)?;
                    }
                    done.push(part);
                }
                None => break,
            }
        }
        reader.expect("the reader is put back").finish(sha256)?;
        Ok(done)
    }

    /// Completes the upload from its `done` parts under `pre`, checking
    /// that what the server made is ours (the ETag S3's rule gives, or
    /// else our size and sha256).
    async fn complete_parts(
        &self,
        key: &str,
        file: &FileToSend<'_>,
        pre: &Precondition,
        upload_id: &str,
        mut done: Vec<(i32, String, [u8; 16])>,
    ) -> Result<ObjectMeta, StoreError> {
        let FileToSend { size, sha256, .. } = *file;
        done.sort_by_key(|d| d.0);
        // S3's rule: the MD5 of the parts' ETags (as bytes). Unless the
        // server's part ETags are not MD5s (an encrypted bucket): then ours.
        let part_etags: Option<Vec<[u8; 16]>> = done
            .iter()
            .map(|d| crate::digest::Md5::from_etag(&d.1).map(|m| m.0))
            .collect();
        let expected =
            composite_etag(&part_etags.unwrap_or_else(|| done.iter().map(|d| d.2).collect()));
        let parts: Vec<(i32, String)> =
            done.iter().map(|(n, etag, _)| (*n, etag.clone())).collect();
        // Ours if it carries our parts and sha256.
        let ours = |m: &ObjectMeta| m.version == expected && m.sha256.as_deref() == Some(sha256);
        let finished = self
            .complete_upload(key, upload_id, &parts, pre, &ours)
            .await?;
        if finished != expected {
            // Not the ETag S3's rule gives (an encrypting server's own):
            // what it holds must still be our size and sha256. Never
            // deleted: under If-Match what it replaced is already gone.
            match self.head(key).await? {
                Some(m) if m.size == size && m.sha256.as_deref() == Some(sha256) => {}
                other => {
                    return Err(StoreError::Integrity {
                        key: key.to_string(),
                        algorithm: "multipart etag",
                        expected,
                        found: other.map_or_else(|| "no object".into(), |m| m.version),
                    });
                }
            }
        }
        Ok(ObjectMeta {
            key: key.to_string(),
            size,
            version: finished,
            sha256: Some(sha256.to_string()),
            modified: None,
            md5: None,
            crc32c: None,
            content_encoded: false,
        })
    }
}

/// The file an upload sends: its path, and the size and sha256 the caller
/// found (checked again as the parts are read).
#[derive(Clone, Copy)]
struct FileToSend<'a> {
    src: &'a Path,
    size: u64,
    sha256: &'a str,
}

/// Parts a server holds of an upload: number to ETag and size.
pub(super) type Listed = std::collections::HashMap<i32, (String, i64)>;

/// A recorded upload in progress: its journal, its record, and the parts
/// the server held when it was resumed.
pub(super) struct Progress<'a> {
    pub(super) journal: &'a UploadJournal,
    pub(super) record: UploadRecord,
    pub(super) listed: Listed,
}

impl Progress<'_> {
    /// A copied part the server holds: listed at `len` bytes with the
    /// ETag recorded when it was acknowledged (no bytes here to hash).
    pub(super) fn holds_copied(&self, number: i32, len: u64) -> Option<String> {
        let (etag, size) = self.listed.get(&number)?;
        let recorded = |r: &&crate::store::resume::PartRecord| {
            r.number == number && r.etag.trim_matches('"') == etag.trim_matches('"')
        };
        (*size == len as i64 && self.record.parts.iter().any(|r| recorded(&r)))
            .then(|| etag.clone())
    }

    /// Whether the server holds `part` as it was read now: the same size,
    /// and an ETag that is its MD5 (or, where ETags are no MD5s, the one
    /// recorded for a part of this MD5).
    fn holds(&self, part: &Part) -> bool {
        let Some((etag, size)) = self.listed.get(&part.number) else {
            return false;
        };
        if *size != part.bytes.len() as i64 {
            return false;
        }
        if let Some(m) = crate::digest::Md5::from_etag(etag) {
            return m.0 == part.md5;
        }
        let md5 = hex::encode(part.md5);
        self.record
            .parts
            .iter()
            .any(|r| r.number == part.number && r.etag == *etag && r.md5 == md5)
    }

    /// Records a part the server acknowledged.
    pub(super) fn record(&mut self, part: &(i32, String, [u8; 16])) -> Result<(), StoreError> {
        self.record.parts.retain(|r| r.number != part.0);
        self.record.parts.push(PartRecord {
            number: part.0,
            etag: part.1.clone(),
            md5: hex::encode(part.2),
        });
        self.journal.save(&self.record)?;
        #[cfg(feature = "failpoints")]
        if fail::eval("multipart-part-recorded", |_| ()).is_some() {
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
        }
        Ok(())
    }
}

impl S3Store {
    /// Sends one part, checked by the server against its MD5; returns its
    /// number, ETag and MD5.
    async fn upload_part(
        &self,
        key: &str,
        upload_id: &str,
        part: Part,
    ) -> Result<(i32, String, [u8; 16]), StoreError> {
        let client = self.client().await?;
        let (number, md5) = (part.number, part.md5);
        let content_md5 = base64::engine::general_purpose::STANDARD.encode(md5);
        let etag = with_retry(&self.options.retry, |_| {
            let req = client
                .upload_part()
                .bucket(&self.bucket)
                .key(key)
                .upload_id(upload_id)
                .part_number(number)
                .content_length(part.bytes.len() as i64)
                .content_md5(content_md5.clone())
                .body(ByteStream::from(part.bytes.clone()));
            async move {
                req.send()
                    .await
                    .map_err(|e| self.map_err(e, Some(key)))
                    .map(|out| out.e_tag().unwrap_or_default().to_string())
            }
        })
        .await?;
        Ok((number, etag, md5))
    }
}

/// Reads a file a part at a time, hashing it whole as it goes.
struct PartReader {
    file: std::fs::File,
    path: std::path::PathBuf,
    size: u64,
    part_size: u64,
    read: u64,
    number: i32,
    sha256: sha2::Sha256,
}

impl PartReader {
    fn open(path: &Path, size: u64, part_size: u64) -> Result<PartReader, StoreError> {
        let file = std::fs::File::open(path).map_err(|e| StoreError::io(path, e))?;
        Ok(PartReader {
            file,
            path: path.to_path_buf(),
            size,
            part_size,
            read: 0,
            number: 0,
            sha256: sha2::Sha256::default(),
        })
    }

    /// The next part, or `None` after the last.
    fn next(&mut self) -> Result<Option<Part>, StoreError> {
        use md5::Digest as _;
        use std::io::Read;
        if self.read >= self.size {
            return Ok(None);
        }
        let len = self.part_size.min(self.size - self.read) as usize;
        let mut buf = vec![0u8; len];
        self.file
            .read_exact(&mut buf)
            .map_err(|e| StoreError::io(&self.path, e))?;
        self.read += len as u64;
        self.number += 1;
        sha2::Digest::update(&mut self.sha256, &buf);
        Ok(Some(Part {
            number: self.number,
            md5: md5::Md5::digest(&buf).into(),
            bytes: bytes::Bytes::from(buf),
        }))
    }

    /// Checks that what was read is the file the caller hashed: the same
    /// bytes, and no more of them.
    fn finish(mut self, sha256: &str) -> Result<(), StoreError> {
        use std::io::Read;
        let mut more = [0u8; 1];
        let longer = self
            .file
            .read(&mut more)
            .map_err(|e| StoreError::io(&self.path, e))?
            > 0;
        let found = hex::encode(sha2::Digest::finalize_reset(&mut self.sha256));
        if longer || !found.eq_ignore_ascii_case(sha256) {
            return Err(StoreError::ChangedSinceHashed {
                what: self.path.display().to_string(),
                now: if longer {
                    "now longer".to_string()
                } else {
                    format!("now sha256 {found}")
                },
            });
        }
        Ok(())
    }
}

/// See [`S3Store::carried`].
#[derive(Debug, Clone, Default)]
pub(super) struct Carried {
    content_type: Option<String>,
    content_encoding: Option<String>,
    content_disposition: Option<String>,
    content_language: Option<String>,
    cache_control: Option<String>,
    metadata: std::collections::HashMap<String, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_8_mib_until_10000_would_not_hold_the_file() {
        assert_eq!(part_size(6 << 30), 8 << 20);
        assert_eq!(part_size(78 << 30), 8 << 20);
        // 100 GiB: 10,000 parts of at least 10.24 MiB, rounded up to 11 MiB.
        let p = part_size(100 << 30);
        assert_eq!(p, 11 << 20);
        assert!((100u64 << 30).div_ceil(p) <= MAX_PARTS);
        // S3's largest object, 5 TiB, still fits.
        assert!((5u64 << 40).div_ceil(part_size(5 << 40)) <= MAX_PARTS);
    }

    #[test]
    fn the_composite_etag_is_the_md5_of_the_part_md5s_and_the_count() {
        // SeaweedFS and AWS agree: a 5 MiB part of "a" and 10 bytes of "b".
        use md5::Digest as _;
        let a: [u8; 16] = md5::Md5::digest(vec![b'a'; 5 << 20]).into();
        let b: [u8; 16] = md5::Md5::digest([b'b'; 10]).into();
        assert_eq!(
            composite_etag(&[a, b]),
            "8b0be7847da5564ae08e97af63b60885-2"
        );
    }
}
