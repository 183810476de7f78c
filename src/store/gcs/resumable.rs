//! GCS uploads that resume: a file of at least [`RESUMABLE_MIN`] bytes
//! goes up in a resumable session, in chunks of [`parts::part_size`]
//! (whole MiB, so multiples of the 256 KiB Google asks for), the session
//! recorded in the clone's state before the first chunk ([`UploadRecord`],
//! as an S3 multipart upload's id is) and again after each chunk the
//! server acknowledges. The next upload of the same file, unchanged, asks
//! the session how much it holds and sends only the rest. The session was
//! opened with `ifGenerationMatch`, which Google checks when the last
//! chunk finalizes it.
//!
//! The session URI is a capability: whoever holds it may finish the
//! upload. It stays in the clone's state file; plans name the upload by a
//! hash of it, and it is registered with [`crate::telemetry::redact`] so
//! no error message that quotes a URL prints it.
//!
//! Before the last chunk the whole file has been hashed (the chunks sent
//! now, and, resuming, the bytes an earlier run sent, read again here): a
//! file that no longer hashes to `sha256` is never finalized.

use std::path::Path;

use gcloud_storage::http::objects::upload::UploadObjectRequest;
use gcloud_storage::http::resumable_upload_client::{
    ChunkSize, ResumableUploadClient, UploadStatus,
};
use sha2::Digest;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use gcloud_storage::http::objects::Object;

use super::GcsStore;
use crate::store::resume::{PartRecord, UploadJournal, UploadRecord};
use crate::store::{ObjectMeta, Precondition, Store, StoreError, parts};

/// Files at least this large go up in a resumable session; smaller ones
/// in one request (a session costs a request more).
pub(crate) const RESUMABLE_MIN: u64 = 32 << 20;

/// How a record names its session in plans: a hash, never the URI.
fn session_id(uri: &str) -> String {
    format!(
        "gcs-session-{}",
        &crate::fsutil::sha256_bytes(uri.as_bytes())[..16]
    )
}

/// The session's `upload_id`, the part of its URI that is the secret.
fn register_secret(uri: &str) {
    if let Some((_, id)) = uri.split_once("upload_id=") {
        crate::telemetry::redact::register(id.split('&').next().unwrap_or(id));
    }
}

impl GcsStore {
    /// [`super::Store::put_file_resumable`] for GCS: see the module.
    pub(super) async fn put_resumable(
        &self,
        key: &str,
        src: &Path,
        sha256: &str,
        pre: &Precondition,
        journal: &UploadJournal,
    ) -> Result<ObjectMeta, StoreError> {
        let size = tokio::fs::metadata(src)
            .await
            .map_err(|e| StoreError::io(src, e))?
            .len();
        let now = crate::clock::now_secs();
        // Only a session of this very file continues; another is let go
        // (an unfinished session makes no object, and expires in a week).
        let recorded = journal.read().filter(|r| {
            r.key == key
                && r.size == size
                && r.sha256.eq_ignore_ascii_case(sha256)
                && r.session.is_some()
                && !r.is_stale(now)
        });
        // The session an attempt continues (a retry asks it again).
        let session = std::sync::Mutex::new(recorded);
        crate::store::retry::with_retry(&self.options.retry, |_| {
            let session = &session;
            async move {
                let taken = session.lock().expect("session").take();
                // A session just opened holds nothing: no need to ask.
                let (record, fresh) = match taken {
                    Some(r) => (r, false),
                    None => (
                        self.open_session(key, size, sha256, pre, journal).await?,
                        true,
                    ),
                };
                *session.lock().expect("session") = Some(record.clone());
                let result = self
                    .send_rest(key, src, sha256, size, record, fresh, journal)
                    .await;
                match result {
                    // The session is gone (expired, cancelled), or holds
                    // bytes the file no longer has: another, from byte 0.
                    Err(StoreError::NotFound { .. } | StoreError::Corrupt { .. }) if !fresh => {
                        journal.clear()?;
                        let record = self.open_session(key, size, sha256, pre, journal).await?;
                        *session.lock().expect("session") = Some(record.clone());
                        self.send_rest(key, src, sha256, size, record, true, journal)
                            .await
                    }
                    r => r,
                }
            }
        })
        .await
    }

    /// Opens a session for `key` (its precondition and sha256 metadata
    /// given now, checked at the end) and records it before any byte goes.
    async fn open_session(
        &self,
        key: &str,
        size: u64,
        sha256: &str,
        pre: &Precondition,
        journal: &UploadJournal,
    ) -> Result<UploadRecord, StoreError> {
        let client = self.client().await?;
        let req = UploadObjectRequest {
            bucket: self.bucket.clone(),
            if_generation_match: Self::generation_match(key, pre)?,
            ..UploadObjectRequest::default()
        };
        let uploader = crate::telemetry::requests::writing(
            key,
            client.prepare_resumable_upload(&req, &Self::upload_type(key, sha256)),
        )
        .await
        .map_err(|e| self.map_gcs_err(e, key))?;
        let uri = uploader.url().to_string();
        register_secret(&uri);
        let record = UploadRecord {
            path: journal.path().to_string(),
            key: key.to_string(),
            upload_id: session_id(&uri),
            session: Some(uri),
            source: None,
            token: None,
            rewritten: 0,
            size,
            sha256: sha256.to_string(),
            part_size: parts::part_size(size),
            started: crate::clock::now_secs(),
            parts: Vec::new(),
        };
        journal.save(&record)?;
        Ok(record)
    }

    /// Asks the session what it holds (unless `fresh`), then sends the
    /// rest chunk by chunk, recording each acknowledged; the last
    /// finalizes the object.
    #[allow(clippy::too_many_arguments)]
    async fn send_rest(
        &self,
        key: &str,
        src: &Path,
        sha256: &str,
        size: u64,
        mut record: UploadRecord,
        fresh: bool,
        journal: &UploadJournal,
    ) -> Result<ObjectMeta, StoreError> {
        let uri = record.session.clone().expect("a session record");
        register_secret(&uri);
        let uploader = ResumableUploadClient::new(uri, self.http().await?.clone());
        let status = match fresh {
            true => UploadStatus::NotStarted,
            false => crate::telemetry::requests::writing(key, uploader.status(Some(size)))
                .await
                .map_err(|e| self.map_gcs_err(e, key))?,
        };
        let mut offset = match status {
            UploadStatus::Ok(object) => return self.finished(key, sha256, &object, journal),
            UploadStatus::NotStarted => 0,
            UploadStatus::ResumeIncomplete(range) => range.last_byte + 1,
        };
        if offset >= size {
            // Every byte is there and yet no object: the last chunk was
            // refused (its precondition), which ends the session.
            journal.clear()?;
            return Err(StoreError::PreconditionFailed {
                key: key.to_string(),
            });
        }
        let mut file = tokio::fs::File::open(src)
            .await
            .map_err(|e| StoreError::io(src, e))?;
        // What an earlier run sent is hashed again from the file, each
        // chunk it recorded checked against the MD5 it sent.
        let mut hasher = sha2::Sha256::default();
        hash_prefix(&mut file, offset, &record, &mut hasher, src).await?;
        let chunk = record.part_size;
        loop {
            let len = chunk.min(size - offset);
            let mut buf = vec![0u8; len as usize];
            file.read_exact(&mut buf)
                .await
                .map_err(|e| StoreError::io(src, e))?;
            hasher.update(&buf);
            let sent_md5 = hex::encode(md5::Md5::digest(&buf));
            if offset + len == size {
                let found = hex::encode(std::mem::take(&mut hasher).finalize());
                check_whole(key, src, sha256, &found, journal)?;
            }
            let span = (offset, offset + len - 1, size);
            if let Some(object) = self.send_chunk(&uploader, key, buf, span, journal).await? {
                return self.finished(key, sha256, &object, journal);
            }
            offset += len;
            record.parts.push(PartRecord {
                number: offset.div_ceil(chunk) as i32,
                etag: String::new(),
                md5: sent_md5,
            });
            journal.save(&record)?;
            #[cfg(feature = "failpoints")]
            if fail::eval("gcs-chunk-recorded", |_| ()).is_some() {
                let _ = rustix::process::kill_process(
                    rustix::process::getpid(),
                    rustix::process::Signal::KILL,
                );
            }
        }
    }

    /// Sends the chunk of bytes `first..=last` of `size`: the object when
    /// it was the last, `None` once the session holds every byte to `last`.
    async fn send_chunk(
        &self,
        uploader: &ResumableUploadClient,
        key: &str,
        buf: Vec<u8>,
        (first, last, size): (u64, u64, u64),
        journal: &UploadJournal,
    ) -> Result<Option<Object>, StoreError> {
        let range = ChunkSize::new(first, last, Some(size));
        let sent =
            crate::telemetry::requests::writing(key, uploader.upload_multiple_chunk(buf, &range))
                .await
                .map_err(|e| self.map_gcs_err(e, key));
        match sent {
            Ok(UploadStatus::Ok(object)) => Ok(Some(object)),
            Ok(UploadStatus::ResumeIncomplete(held)) if held.last_byte == last => Ok(None),
            // The object changed since planned: the session is over.
            Err(e @ StoreError::PreconditionFailed { .. }) => {
                journal.clear()?;
                Err(e)
            }
            Err(e) => Err(e),
            // The server holds other than what was sent: asked again on
            // the next attempt.
            Ok(_) => Err(StoreError::Unavailable {
                target: Store::describe(self),
                message: format!("the upload session of `{key}` did not take bytes {first}-{last}"),
            }),
        }
    }

    /// The finalized object, checked to be the file's, and the record let go.
    fn finished(
        &self,
        key: &str,
        sha256: &str,
        object: &Object,
        journal: &UploadJournal,
    ) -> Result<ObjectMeta, StoreError> {
        let meta = Self::meta(object);
        journal.clear()?;
        match meta.sha256.as_deref() {
            Some(s) if s.eq_ignore_ascii_case(sha256) => Ok(meta),
            other => Err(StoreError::Integrity {
                key: key.to_string(),
                algorithm: "sha256",
                expected: sha256.to_string(),
                found: other.unwrap_or("no sha256 metadata").to_string(),
            }),
        }
    }
}

/// Refuses to finalize a file that no longer hashes to `sha256` (`found`):
/// the session is let go with it.
fn check_whole(
    key: &str,
    src: &Path,
    sha256: &str,
    found: &str,
    journal: &UploadJournal,
) -> Result<(), StoreError> {
    if found.eq_ignore_ascii_case(sha256) {
        return Ok(());
    }
    journal.clear()?;
    Err(StoreError::hashed_otherwise(src, key, found, sha256))
}

/// Hashes the file's first `len` bytes (what the session holds) into
/// `hasher`, leaving the file there. Each chunk `record` says was sent is
/// checked against the MD5 sent: bytes the file no longer has are
/// [`StoreError::Corrupt`] (the session is then let go).
async fn hash_prefix(
    file: &mut tokio::fs::File,
    len: u64,
    record: &UploadRecord,
    hasher: &mut sha2::Sha256,
    src: &Path,
) -> Result<(), StoreError> {
    file.seek(std::io::SeekFrom::Start(0))
        .await
        .map_err(|e| StoreError::io(src, e))?;
    let chunk = record.part_size.max(1);
    let mut at = 0u64;
    let mut buf = Vec::new();
    while at < len {
        let n = chunk.min(len - at);
        buf.resize(n as usize, 0);
        file.read_exact(&mut buf)
            .await
            .map_err(|e| StoreError::io(src, e))?;
        hasher.update(&buf);
        let number = (at / chunk + 1) as i32;
        let sent = record.parts.iter().find(|p| p.number == number);
        if let Some(p) = sent.filter(|p| !p.md5.is_empty())
            && !p
                .md5
                .eq_ignore_ascii_case(&hex::encode(md5::Md5::digest(&buf)))
        {
            return Err(StoreError::Corrupt {
                key: record.key.clone(),
                detail: format!(
                    "chunk {number} the upload session holds is not what {} has now",
                    src.display()
                ),
            });
        }
        at += n;
    }
    Ok(())
}
