//! Server-side copies of objects CopyObject cannot copy (over 5 GiB on
//! AWS): the source's byte ranges copied with UploadPartCopy, each pinned
//! to the source's ETag (`x-amz-copy-source-if-match`), a few at once, and
//! completed under the caller's precondition, the one request that makes
//! the copy appear; aborted on failure. A multipart upload takes no
//! `MetadataDirective`, so what CopyObject would carry over (the source's
//! user metadata, sha256 included, and its Content-Type, -Encoding,
//! -Disposition, -Language and Cache-Control) is set on it; the result is
//! checked by HEAD (its size and sha256 are the source's).
//!
//! Given a journal, a copy in parts is recorded as an upload is (see
//! [`crate::store::resume`]): before its first part, with the source's
//! bucket, key and ETag, and again as each part is acknowledged. A run
//! stopped part-way leaves it for the next, which lists the parts the
//! server holds, copies only those it lacks (a part counts when the server
//! lists it at the size and ETag recorded) and completes.

use futures_util::StreamExt;

use aws_sdk_s3::types::MetadataDirective;

use super::multipart::{Listed, Progress};
use super::{
    S3Store, conditional_headers, copy_source_too_large, encode_key, quote_etag, strip_etag,
};
use crate::store::resume::{UploadJournal, UploadRecord};
use crate::store::retry::with_retry;
use crate::store::{ObjectMeta, Precondition, Store as _, StoreError};

/// CopyObject copies objects up to this size (AWS's limit); larger ones
/// are copied in parts.
pub(super) const COPY_LIMIT: u64 = 5 << 30;

/// The part size for a copy of `size` bytes: 1 GiB, or more (whole MiB)
/// when 10,000 parts of 1 GiB would not hold it (S3 allows parts up to
/// 5 GiB, objects up to 5 TiB).
pub(super) fn copy_part_size(size: u64) -> u64 {
    // Tests copy small objects in several parts (5 MiB at least: S3's
    // minimum for every part but the last).
    let part = std::env::var("SWAMP_COPY_PART_MIB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(1 << 30, |mib| mib.max(5) << 20);
    let need = size.div_ceil(10_000).div_ceil(1 << 20) << 20;
    part.max(need)
}

/// Part copies in flight at once, per copy.
const CONCURRENCY: usize = 4;

/// The object a copy reads: a key of this store's bucket or of another
/// bucket on the same service.
#[derive(Clone, Copy)]
pub(super) struct CopySource<'a> {
    pub bucket: &'a str,
    pub key: &'a str,
}

impl CopySource<'_> {
    /// The `x-amz-copy-source` header's value.
    fn header(&self) -> String {
        format!("{}/{}", self.bucket, encode_key(self.key))
    }
}

impl S3Store {
    /// Copies `from` (as HEAD showed it: `src`) to `to` in one CopyObject
    /// (in parts when too large for one, recorded in `journal` when
    /// given), pinned to `src`'s ETag.
    pub(super) async fn copy_from(
        &self,
        from: CopySource<'_>,
        src: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        journal: Option<&UploadJournal>,
    ) -> Result<ObjectMeta, StoreError> {
        if src.size > COPY_LIMIT {
            return self.copy_multipart(from, src, to, pre, journal).await;
        }
        let client = self.client().await?;
        let copied = with_retry(&self.options.retry, |attempt| {
            let mut req = client
                .copy_object()
                .bucket(&self.bucket)
                .key(to)
                .copy_source(from.header())
                // Pin the source we looked at, so size and sha256 below are
                // the copied object's.
                .copy_source_if_match(quote_etag(&src.version))
                .metadata_directive(MetadataDirective::Copy);
            let (none_match, matches) = conditional_headers(pre);
            req = req.set_if_none_match(none_match).set_if_match(matches);
            async move {
                match req.send().await {
                    Ok(out) => Ok(ObjectMeta {
                        key: to.to_string(),
                        size: src.size,
                        version: strip_etag(out.copy_object_result().and_then(|r| r.e_tag())),
                        sha256: src.sha256.clone(),
                        modified: None,
                        md5: src.md5,
                        crc32c: None,
                        content_encoded: src.content_encoded,
                    }),
                    Err(e) if copy_source_too_large(&e) => Err(StoreError::CopyTooLarge {
                        key: from.key.to_string(),
                    }),
                    Err(e) => match self.map_err(e, Some(to)) {
                        StoreError::NotFound { key, .. }
                            if matches!(pre, Precondition::Matches(_)) =>
                        {
                            Err(StoreError::PreconditionFailed { key })
                        }
                        // See `put_retrying`: a repeat may meet its own success.
                        StoreError::PreconditionFailed { key } if attempt > 1 => {
                            match self.head(to).await? {
                                Some(m) if m.sha256.is_some() && m.sha256 == src.sha256 => Ok(m),
                                _ => Err(StoreError::PreconditionFailed { key }),
                            }
                        }
                        e => Err(e),
                    },
                }
            }
        })
        .await;
        match copied {
            // A server with a lower limit than ours: in parts, then.
            Err(StoreError::CopyTooLarge { .. }) => {
                self.copy_multipart(from, src, to, pre, journal).await
            }
            copied => copied,
        }
    }

    /// Copies `from` (as HEAD showed it: `src`) to `to` in parts; with a
    /// `journal`, continuing the copy recorded there when it is of this
    /// very source to this key.
    pub(super) async fn copy_multipart(
        &self,
        from: CopySource<'_>,
        src: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        journal: Option<&UploadJournal>,
    ) -> Result<ObjectMeta, StoreError> {
        if let Some(journal) = journal {
            return self
                .copy_multipart_resumable(from, src, to, pre, journal)
                .await;
        }
        let carried = self.carried_in(from.bucket, from.key).await?;
        self.in_upload(
            to,
            src.sha256.as_deref(),
            Some(&carried),
            |upload_id| async move {
                self.copy_parts_and_complete(from, src, to, pre, &upload_id, None)
                    .await
            },
        )
        .await
    }

    /// [`S3Store::copy_multipart`] recorded in `journal` (settled as an
    /// upload is: [`S3Store::settle_recorded`]).
    async fn copy_multipart_resumable(
        &self,
        from: CopySource<'_>,
        src: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        journal: &UploadJournal,
    ) -> Result<ObjectMeta, StoreError> {
        // Of this very source (bucket, key and ETag), in parts of today's size.
        let same = |r: &UploadRecord| {
            r.source.as_deref() == Some(source_of(from, src).as_str())
                && r.size == src.size
                && r.part_size == copy_part_size(src.size)
        };
        let (record, listed) = match self.recorded(journal, to, same).await? {
            Some(resumed) => resumed,
            None => (
                self.start_copy(from, src, to, journal).await?,
                Listed::new(),
            ),
        };
        let upload_id = record.upload_id.clone();
        let mut progress = Progress {
            journal,
            record,
            listed,
        };
        let result = self
            .copy_parts_and_complete(from, src, to, pre, &upload_id, Some(&mut progress))
            .await;
        self.settle_recorded(journal, to, &upload_id, result).await
    }

    /// Creates the multipart upload of a copy and records it before its
    /// first part ([`S3Store::record_started`]).
    async fn start_copy(
        &self,
        from: CopySource<'_>,
        src: &ObjectMeta,
        to: &str,
        journal: &UploadJournal,
    ) -> Result<UploadRecord, StoreError> {
        let carried = self.carried_in(from.bucket, from.key).await?;
        let upload_id = self
            .create_upload(to, src.sha256.as_deref(), Some(&carried))
            .await?;
        let record = UploadRecord {
            path: journal.path().to_string(),
            key: to.to_string(),
            upload_id,
            session: None,
            source: Some(source_of(from, src)),
            token: None,
            rewritten: 0,
            size: src.size,
            sha256: src.sha256.clone().unwrap_or_default(),
            part_size: copy_part_size(src.size),
            started: crate::clock::now_secs(),
            parts: Vec::new(),
        };
        self.record_started(journal, record).await
    }

    /// Copies the parts of `src` the upload lacks (those `progress` holds
    /// are not copied again), a few at once, recording each as it is
    /// acknowledged; then completes under `pre` and checks the result.
    async fn copy_parts_and_complete(
        &self,
        from: CopySource<'_>,
        src: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        upload_id: &str,
        mut progress: Option<&mut Progress<'_>>,
    ) -> Result<ObjectMeta, StoreError> {
        let part = copy_part_size(src.size);
        let mut parts: Vec<(i32, String)> = Vec::new();
        let mut ranges: Vec<(i32, u64, u64)> = Vec::new();
        for i in 0..src.size.div_ceil(part).max(1) {
            let start = i * part;
            let end = (start + part).min(src.size).saturating_sub(1);
            let number = i as i32 + 1;
            let held = progress
                .as_ref()
                .and_then(|p| p.holds_copied(number, end + 1 - start));
            match held {
                Some(etag) => parts.push((number, etag)),
                None => ranges.push((number, start, end)),
            }
        }
        let upload = (to, upload_id);
        let mut copied = futures_util::stream::iter(
            ranges
                .into_iter()
                .map(|range| self.copy_part(from, src, upload, range)),
        )
        .buffer_unordered(CONCURRENCY);
        while let Some(part) = copied.next().await {
            let part = part?;
            if let Some(p) = progress.as_mut() {
                // A copied part's ETag is the MD5 of its bytes where
                // ETags are MD5s; nothing here read them otherwise.
                let md5 = crate::digest::Md5::from_etag(&part.1).map_or([0; 16], |m| m.0);
                p.record(&(part.0, part.1.clone(), md5))?;
            }
            parts.push(part);
        }
        parts.sort_by_key(|p| p.0);
        self.complete_copy(src, to, pre, upload_id, &parts).await
    }

    /// One range of `src` (part `number`, bytes `start` to `end`) copied
    /// into upload `upload_id` of `to`; its number and ETag.
    async fn copy_part(
        &self,
        from: CopySource<'_>,
        src: &ObjectMeta,
        (to, upload_id): (&str, &str),
        (number, start, end): (i32, u64, u64),
    ) -> Result<(i32, String), StoreError> {
        let client = self.client().await?;
        let source = from.header();
        let etag = with_retry(&self.options.retry, |_| {
            let req = client
                .upload_part_copy()
                .bucket(&self.bucket)
                .key(to)
                .upload_id(upload_id)
                .part_number(number)
                .copy_source(&source)
                // Every range from the very object HEAD saw.
                .copy_source_if_match(quote_etag(&src.version))
                .copy_source_range(format!("bytes={start}-{end}"));
            async move {
                req.send()
                    .await
                    .map_err(|e| self.map_err(e, Some(from.key)))
                    .map(|out| {
                        out.copy_part_result()
                            .and_then(|r| r.e_tag())
                            .unwrap_or_default()
                            .to_string()
                    })
            }
        })
        .await?;
        Ok((number, etag))
    }

    /// Completes the copy from its `parts` under `pre`, and checks that
    /// the object made holds the source's size and sha256.
    async fn complete_copy(
        &self,
        src: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        upload_id: &str,
        parts: &[(i32, String)],
    ) -> Result<ObjectMeta, StoreError> {
        let is_copy = |m: &ObjectMeta| m.size == src.size && m.sha256 == src.sha256;
        // After a lost answer: the copy, if its sha256 can show it.
        let ours = |m: &ObjectMeta| src.sha256.is_some() && is_copy(m);
        let version = self
            .complete_upload(to, upload_id, parts, pre, &ours)
            .await?;
        // What the copy holds is checked; never deleted (under If-Match
        // what it replaced is gone already).
        match self.head(to).await? {
            Some(m) if is_copy(&m) => {}
            other => {
                return Err(StoreError::Integrity {
                    key: to.to_string(),
                    algorithm: "size and sha256 of a copy",
                    expected: format!("{} bytes, sha256 {:?}", src.size, src.sha256),
                    found: other.map_or_else(
                        || "no object".into(),
                        |m| format!("{} bytes, sha256 {:?}", m.size, m.sha256),
                    ),
                });
            }
        }
        Ok(ObjectMeta {
            key: to.to_string(),
            size: src.size,
            version,
            sha256: src.sha256.clone(),
            modified: None,
            md5: None,
            crc32c: None,
            content_encoded: src.content_encoded,
        })
    }
}

/// How a copy's record names its source: `bucket/key@etag`.
fn source_of(from: CopySource<'_>, src: &ObjectMeta) -> String {
    format!(
        "{}/{}@{}",
        from.bucket,
        from.key,
        src.version.trim_matches('"')
    )
}

#[cfg(test)]
mod tests {
    use super::copy_part_size;

    #[test]
    fn copy_parts_are_1_gib_until_10000_would_not_hold_the_object() {
        assert_eq!(copy_part_size(6 << 30), 1 << 30);
        // S3's largest object, 5 TiB, is 5,120 parts of 1 GiB.
        assert_eq!(copy_part_size(5 << 40), 1 << 30);
        assert_eq!(copy_part_size(10_000 << 30), 1 << 30);
        // Past 10,000 GiB (more than S3 holds) parts grow, in whole MiB.
        let huge = 20u64 << 40;
        let part = copy_part_size(huge);
        assert!(part > 1 << 30, "{part}");
        assert!(huge.div_ceil(part) <= 10_000);
        assert_eq!(part % (1 << 20), 0);
    }
}
