//! GCS through its JSON API, with the `gcloud-storage` crate (rustls).
//!
//! With an `endpoint` configured (an emulator such as fake-gcs-server) the
//! client is anonymous; otherwise it uses application default credentials
//! (`GOOGLE_APPLICATION_CREDENTIALS`, `gcloud auth application-default
//! login`, or the metadata server on Google Cloud).
//!
//! Versions are generations. Every write is a `uploadType=multipart` upload
//! with `ifGenerationMatch` (0 = create-only), but for files of at least
//! [`resumable::RESUMABLE_MIN`], which go up in a resumable
//! session opened with it: fake-gcs-server enforces preconditions on
//! multipart uploads only, and real GCS on all of them.
//! The sha256 is custom metadata `sha256`, which listings return too.
//!
//! fake-gcs-server ignores `ifGenerationMatch` on DELETE and on copy;
//! real GCS enforces it. Which one a server is, a probe finds out once per
//! remote id ([`super::enforced`]); until one says so, a delete or copy
//! also checks the version just before acting (and still sends the
//! parameter); [`Capabilities`] says which.

mod resumable;
mod rewrite;

use std::collections::HashMap;
use std::path::Path;

use async_trait::async_trait;
use futures_util::{StreamExt, TryStreamExt};
use gcloud_storage::client::{Client, ClientConfig};
use gcloud_storage::http::Error as GcsError;
use gcloud_storage::http::objects::Object;
use gcloud_storage::http::objects::copy::CopyObjectRequest;
use gcloud_storage::http::objects::delete::DeleteObjectRequest;
use gcloud_storage::http::objects::download::Range;
use gcloud_storage::http::objects::get::GetObjectRequest;
use gcloud_storage::http::objects::list::ListObjectsRequest;
use gcloud_storage::http::objects::upload::{UploadObjectRequest, UploadType};
use tokio::io::AsyncReadExt;
use tokio::sync::OnceCell;

use super::retry::{Class, classify_status, with_retry};
use super::{
    Capabilities, Durability, Landing, ListPage, ObjectMeta, Pager, Precondition, SHA256_METADATA,
    Store, StoreError, StoreOptions, check_bucket_name, check_key, error_chain,
};
use crate::digest::{Crc32c, Md5};
use crate::fsutil;

const CREDENTIALS_HINT: &str = "check the Google credentials: set GOOGLE_APPLICATION_CREDENTIALS to a \
     service-account key file or run `gcloud auth application-default login`";

/// Concurrent single deletes in [`Store::delete_many`] (GCS has no batch
/// delete in the JSON API this crate speaks).
const DELETE_CONCURRENCY: usize = 16;

/// Attempts to read an object whose generation changes between reading its
/// metadata and its body.
const READ_RACE_ATTEMPTS: usize = 3;

pub(crate) struct GcsStore {
    pub(super) bucket: String,
    endpoint: Option<String>,
    pub(super) options: StoreOptions,
    /// The JSON-API client, and its HTTP stack (a resumable session's
    /// requests go to its URI through the same middleware).
    client: OnceCell<(Client, reqwest_middleware::ClientWithMiddleware)>,
}

/// Whether an operation is about an object or only the bucket, to tell
/// "no such object" from "no such bucket" on a bare 404.
#[derive(Clone, Copy)]
enum Scope<'a> {
    Object(&'a str),
    Bucket,
}

impl GcsStore {
    pub(crate) fn new(
        bucket: &str,
        endpoint: Option<&str>,
        options: StoreOptions,
    ) -> Result<GcsStore, StoreError> {
        check_bucket_name(bucket, "GCS")?;
        Ok(GcsStore {
            bucket: bucket.to_string(),
            endpoint: endpoint.map(|e| e.trim_end_matches('/').to_owned()),
            options,
            client: OnceCell::new(),
        })
    }

    /// The client, built on first use (finding application default
    /// credentials is async and may query the metadata server).
    pub(super) async fn client(&self) -> Result<&Client, StoreError> {
        Ok(&self.client.get_or_try_init(|| self.connect()).await?.0)
    }

    /// The HTTP stack the client sends through (tracing, as-stored reads).
    pub(super) async fn http(
        &self,
    ) -> Result<&reqwest_middleware::ClientWithMiddleware, StoreError> {
        Ok(&self.client.get_or_try_init(|| self.connect()).await?.1)
    }

    async fn connect(
        &self,
    ) -> Result<(Client, reqwest_middleware::ClientWithMiddleware), StoreError> {
        let http = reqwest::Client::builder()
            .connect_timeout(self.options.connect_timeout)
            .read_timeout(self.options.read_timeout)
            .build()
            .map_err(|e| StoreError::task("building an HTTP client", e))?;
        let stack = reqwest_middleware::ClientBuilder::new(http)
            .with(super::gcs_traced::Traced)
            .with(super::gcs_stored::AsStored)
            .with(rewrite::RewriteConditions)
            .build();
        let config = ClientConfig {
            http: Some(stack.clone()),
            ..ClientConfig::default()
        };
        let config = match &self.endpoint {
            Some(endpoint) => ClientConfig {
                storage_endpoint: endpoint.clone(),
                ..config
            }
            .anonymous(),
            None => config.with_auth().await.map_err(|e| StoreError::Denied {
                target: self.describe(),
                message: format!("no usable Google credentials: {e}"),
                hint: CREDENTIALS_HINT.to_string(),
            })?,
        };
        Ok((Client::new(config), stack))
    }

    /// [`Self::map_err`] of a request about the object `key`.
    pub(super) fn map_gcs_err(&self, e: GcsError, key: &str) -> StoreError {
        self.map_err(e, Scope::Object(key))
    }

    fn map_err(&self, e: GcsError, scope: Scope<'_>) -> StoreError {
        let target = self.describe();
        let key = match scope {
            Scope::Object(k) => k.to_string(),
            Scope::Bucket => String::new(),
        };
        let status_err = |status: u16, message: String| match (status, scope) {
            (412, _) => StoreError::PreconditionFailed { key: key.clone() },
            // 410: a resumable upload session that expired.
            (404 | 410, Scope::Object(_)) => StoreError::NotFound {
                key: key.clone(),
                target: target.clone(),
            },
            (404, Scope::Bucket) => StoreError::NoSuchBucket {
                bucket: self.bucket.clone(),
                target: target.clone(),
            },
            (401 | 403, _) => StoreError::Denied {
                target: target.clone(),
                message: message.clone(),
                hint: CREDENTIALS_HINT.to_string(),
            },
            (s, _) if classify_status(s, None) == Class::Transient => StoreError::Unavailable {
                target: target.clone(),
                message: message.clone(),
            },
            _ => StoreError::Server {
                target: target.clone(),
                key: match scope {
                    Scope::Object(k) => Some(k.to_string()),
                    Scope::Bucket => None,
                },
                message,
            },
        };
        match e {
            GcsError::Response(r) => status_err(r.code, format!("HTTP {}: {}", r.code, r.message)),
            GcsError::HttpClient(re) | GcsError::RawResponse(re, _) => {
                if let Some(status) = re.status() {
                    status_err(status.as_u16(), re.to_string())
                } else if re.is_connect()
                    || re.is_timeout()
                    || re.is_request()
                    || re.is_body()
                    // A listing or metadata answer cut off mid-way does not
                    // parse: the network's fault, worth another attempt.
                    || re.is_decode()
                {
                    StoreError::Unreachable {
                        target,
                        message: error_chain(&re),
                    }
                } else {
                    StoreError::Request {
                        target,
                        message: error_chain(&re),
                    }
                }
            }
            GcsError::TokenSource(e) => StoreError::Denied {
                target,
                message: e.to_string(),
                hint: CREDENTIALS_HINT.to_string(),
            },
            e => StoreError::Server {
                target,
                key: None,
                message: e.to_string(),
            },
        }
    }

    pub(super) fn meta(o: &Object) -> ObjectMeta {
        ObjectMeta {
            key: o.name.clone(),
            size: o.size.max(0) as u64,
            version: o.generation.to_string(),
            sha256: o
                .metadata
                .as_ref()
                .and_then(|m| m.get(SHA256_METADATA))
                .cloned(),
            modified: o.updated.map(|t| t.unix_timestamp()),
            md5: o.md5_hash.as_deref().and_then(Md5::from_base64),
            crc32c: o.crc32c.as_deref().and_then(Crc32c::from_base64),
            content_encoded: o
                .content_encoding
                .as_deref()
                .is_some_and(|e| e.eq_ignore_ascii_case("gzip")),
        }
    }

    /// The generation a precondition asks for; `Err` when a `Matches`
    /// version is not a generation at all (so it cannot match).
    pub(super) fn generation_match(
        key: &str,
        pre: &Precondition,
    ) -> Result<Option<i64>, StoreError> {
        match pre {
            Precondition::None => Ok(None),
            Precondition::CreateOnly => Ok(Some(0)),
            Precondition::Matches(v) => {
                v.parse::<i64>()
                    .map(Some)
                    .map_err(|_| StoreError::PreconditionFailed {
                        key: key.to_string(),
                    })
            }
        }
    }

    /// What this server was seen to enforce (nothing, until told).
    fn enforced(&self) -> super::enforced::Enforced {
        super::enforced::of(&self.describe()).unwrap_or(super::enforced::Enforced {
            delete: false,
            copy: false,
        })
    }

    /// Checks `pre` against the object's current state, for an operation
    /// the server is not known to enforce preconditions on (`enforced`).
    async fn precheck(
        &self,
        key: &str,
        pre: &Precondition,
        enforced: bool,
    ) -> Result<(), StoreError> {
        if *pre == Precondition::None || enforced {
            return Ok(());
        }
        let ok = match (pre, self.head(key).await?) {
            (Precondition::None, _) => true,
            (Precondition::CreateOnly, cur) => cur.is_none(),
            (Precondition::Matches(v), Some(cur)) => cur.version == *v,
            (Precondition::Matches(_), None) => false,
        };
        if ok {
            Ok(())
        } else {
            Err(StoreError::PreconditionFailed {
                key: key.to_string(),
            })
        }
    }

    pub(super) fn upload_type(key: &str, sha256: &str) -> UploadType {
        UploadType::Multipart(Box::new(Object {
            name: key.to_string(),
            content_type: Some("application/octet-stream".into()),
            metadata: Some(HashMap::from([(
                SHA256_METADATA.to_string(),
                sha256.to_string(),
            )])),
            ..Object::default()
        }))
    }

    /// Uploads with retries; `upload(attempt)` makes one attempt. See
    /// `S3Store::put_retrying` for why a repeated attempt that meets "precondition
    /// failed" checks whether the object already holds our content.
    async fn put_retrying<F, Fut>(&self, sha256: &str, upload: F) -> Result<ObjectMeta, StoreError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<ObjectMeta, StoreError>>,
    {
        with_retry(&self.options.retry, |attempt| {
            let once = upload();
            async move {
                match once.await {
                    Err(StoreError::PreconditionFailed { key }) if attempt > 1 => {
                        match self.head_once(&key).await? {
                            Some(m) if m.sha256.as_deref() == Some(sha256) => Ok(m),
                            _ => Err(StoreError::PreconditionFailed { key }),
                        }
                    }
                    r => r,
                }
            }
        })
        .await
        .map_err(|e| match e {
            StoreError::NotFound { .. } => StoreError::NoSuchBucket {
                bucket: self.bucket.clone(),
                target: self.describe(),
            },
            e => e,
        })
    }

    /// Metadata and body stream of the object, pinned to one generation so
    /// the two agree even if the object is replaced meanwhile.
    async fn open_read(
        &self,
        key: &str,
    ) -> Result<
        (
            ObjectMeta,
            impl futures_util::Stream<Item = Result<bytes::Bytes, GcsError>> + use<>,
        ),
        StoreError,
    > {
        let client = self.client().await?;
        let mut last = None;
        for _ in 0..READ_RACE_ATTEMPTS {
            let meta = self
                .head_once(key)
                .await?
                .ok_or_else(|| StoreError::NotFound {
                    key: key.to_string(),
                    target: self.describe(),
                })?;
            let req = GetObjectRequest {
                bucket: self.bucket.clone(),
                object: key.to_string(),
                generation: meta.version.parse().ok(),
                ..GetObjectRequest::default()
            };
            match client
                .download_streamed_object(&req, &Range::default())
                .await
            {
                Ok(stream) => return Ok((meta, stream)),
                // Replaced between metadata and body: look again.
                Err(e) => match self.map_err(e, Scope::Object(key)) {
                    e @ StoreError::NotFound { .. } => last = Some(e),
                    e => return Err(e),
                },
            }
        }
        Err(last.expect("at least one attempt"))
    }

    /// The object as it is now (metadata, then media) streamed into `dest`.
    async fn get_landed(
        &self,
        key: &str,
        dest: &Path,
        durability: Durability,
    ) -> Result<ObjectMeta, StoreError> {
        check_key(key)?;
        with_retry(&self.options.retry, |_| async move {
            let (meta, stream) = self.open_read(key).await?;
            self.land(stream, dest, meta, durability, false).await
        })
        .await
    }

    /// Streams a download body into `dest` through a fresh [`Landing`] (a
    /// failed attempt's temp file is removed on drop), checked against
    /// `meta` (`as_stored`: the body is the stored bytes, which for an
    /// object stored gzip-compressed are decoded as they land); returns
    /// `meta` with the sha256 of the bytes landed.
    async fn land(
        &self,
        stream: impl futures_util::Stream<Item = Result<bytes::Bytes, GcsError>>,
        dest: &Path,
        meta: ObjectMeta,
        durability: Durability,
        as_stored: bool,
    ) -> Result<ObjectMeta, StoreError> {
        let mut stream = std::pin::pin!(stream);
        let mut landing = Landing::new(dest, durability)?.checking_served(&meta, as_stored);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.stream_err(e))?;
            landing.write(&chunk).await?;
        }
        landing.finish(&self.describe(), meta).await
    }

    /// One metadata request, no retry: for use inside a retried operation
    /// (retries do not nest).
    async fn head_once(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        let client = self.client().await?;
        let req = GetObjectRequest {
            bucket: self.bucket.clone(),
            object: key.to_string(),
            ..GetObjectRequest::default()
        };
        match client.get_object(&req).await {
            Ok(o) => Ok(Some(Self::meta(&o))),
            Err(e) => match self.map_err(e, Scope::Object(key)) {
                StoreError::NotFound { .. } => Ok(None),
                e => Err(e),
            },
        }
    }

    fn stream_err(&self, e: GcsError) -> StoreError {
        match self.map_err(e, Scope::Bucket) {
            StoreError::Server { message, .. } | StoreError::Request { message, .. } => {
                StoreError::Unreachable {
                    target: self.describe(),
                    message: format!("download interrupted: {message}"),
                }
            }
            e => e,
        }
    }
    /// A DELETE carrying `pre` as `ifGenerationMatch`, nothing checked
    /// before it.
    async fn delete_sent(&self, key: &str, pre: &Precondition) -> Result<(), StoreError> {
        let client = self.client().await?;
        let req = DeleteObjectRequest {
            bucket: self.bucket.clone(),
            object: key.to_string(),
            if_generation_match: Self::generation_match(key, pre)?,
            ..DeleteObjectRequest::default()
        };
        with_retry(&self.options.retry, |_| async {
            match client.delete_object(&req).await {
                Ok(()) => Ok(()),
                Err(e) => match self.map_err(e, Scope::Object(key)) {
                    StoreError::NotFound { key, .. } => match pre {
                        Precondition::Matches(_) => Err(StoreError::PreconditionFailed { key }),
                        _ => Ok(()),
                    },
                    e => Err(e),
                },
            }
        })
        .await
    }

    /// A copy of `from` to `to` in this bucket, `pre` (on the
    /// destination) as `ifGenerationMatch`.
    fn copy_request(
        &self,
        from: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<CopyObjectRequest, StoreError> {
        Ok(CopyObjectRequest {
            source_bucket: self.bucket.clone(),
            source_object: from.to_string(),
            destination_bucket: self.bucket.clone(),
            destination_object: to.to_string(),
            if_generation_match: Self::generation_match(to, pre)?,
            // No metadata given: GCS keeps the source's (sha256 included).
            metadata: None,
            ..CopyObjectRequest::default()
        })
    }

    /// A copy carrying `pre` (on the destination) as `ifGenerationMatch`,
    /// nothing checked before it.
    async fn copy_sent(
        &self,
        from: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        let req = self.copy_request(from, to, pre)?;
        self.copy_req_sent(&req, from, to).await
    }

    /// Sends a prepared copy (retried); its errors named by `from` and `to`.
    async fn copy_req_sent(
        &self,
        req: &CopyObjectRequest,
        from: &str,
        to: &str,
    ) -> Result<ObjectMeta, StoreError> {
        let client = self.client().await?;
        with_retry(&self.options.retry, |_| async {
            client
                .copy_object(req)
                .await
                .map(|o| Self::meta(&o))
                .map_err(|e| match self.map_err(e, Scope::Object(from)) {
                    // 412 is about the destination, 404 about the source.
                    StoreError::PreconditionFailed { .. } => StoreError::PreconditionFailed {
                        key: to.to_string(),
                    },
                    e => e,
                })
        })
        .await
    }

    /// The probe of [`Store::probe_enforcement`]: a delete and a copy each
    /// sent with a precondition that does not hold. Refused, the server
    /// enforces it; carried out, it does not.
    async fn probe(&self, a: &str, b: &str) -> Result<super::enforced::Enforced, StoreError> {
        let body = || b"swamp precondition probe\n".to_vec();
        let made = self.put_bytes(a, body(), &Precondition::CreateOnly).await?;
        let wrong = made
            .version
            .parse::<i64>()
            .map(|g| (g + 1).to_string())
            .unwrap_or_default();
        let delete = match self.delete_sent(a, &Precondition::Matches(wrong)).await {
            Err(StoreError::PreconditionFailed { .. }) => true,
            Ok(()) => false,
            Err(e) => return Err(e),
        };
        // Deleted by a server that ignored the condition: made again.
        self.put_bytes(a, body(), &Precondition::None).await?;
        self.put_bytes(b, body(), &Precondition::CreateOnly).await?;
        let copy = match self.copy_sent(a, b, &Precondition::CreateOnly).await {
            Err(StoreError::PreconditionFailed { .. }) => true,
            Ok(_) => false,
            Err(e) => return Err(e),
        };
        Ok(super::enforced::Enforced { delete, copy })
    }
}

#[async_trait]
impl Pager for GcsStore {
    async fn list_page(
        &self,
        prefix: &str,
        delimited: bool,
        token: Option<String>,
    ) -> Result<ListPage, StoreError> {
        let client = self.client().await?;
        let req = ListObjectsRequest {
            bucket: self.bucket.clone(),
            prefix: (!prefix.is_empty()).then(|| prefix.to_string()),
            delimiter: delimited.then(|| "/".to_string()),
            max_results: Some(self.options.page_size.clamp(1, i32::MAX as u32) as i32),
            page_token: token,
            ..ListObjectsRequest::default()
        };
        let page = with_retry(&self.options.retry, |_| async {
            client
                .list_objects(&req)
                .await
                .map_err(|e| self.map_err(e, Scope::Bucket))
        })
        .await?;
        Ok(ListPage {
            objects: page.items.iter().flatten().map(Self::meta).collect(),
            prefixes: page.prefixes.into_iter().flatten().collect(),
            next: page.next_page_token.filter(|t| !t.is_empty()),
        })
    }
}

#[async_trait]
impl Store for GcsStore {
    fn describe(&self) -> String {
        match &self.endpoint {
            Some(e) => format!("gs://{} at {e}", self.bucket),
            None => format!("gs://{}", self.bucket),
        }
    }

    /// Observed against fake-gcs-server 1.54: multipart uploads enforce
    /// `ifGenerationMatch` (one winner among 16 concurrent creators);
    /// DELETE and copy ignore it.
    fn capabilities(&self) -> Capabilities {
        let enforced = self.enforced();
        Capabilities {
            conditional_create: true,
            conditional_replace: true,
            conditional_delete: enforced.delete,
            conditional_copy: enforced.copy,
            batch_delete: false,
            server_side_copy: true,
            listing_has_sha256: true,
            delimited_listing: true,
        }
    }

    async fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError> {
        self.list_whole(prefix).await
    }

    async fn list_paged(
        &self,
        prefix: &str,
        take: &mut (dyn FnMut(Vec<ObjectMeta>) + Send),
    ) -> Result<(), StoreError> {
        self.list_sorted_pages(prefix, take).await
    }

    async fn list_level(&self, prefix: &str) -> Result<super::Level, StoreError> {
        self.list_one_level(prefix).await
    }

    async fn list_if_one_page(&self, prefix: &str) -> Result<Option<Vec<ObjectMeta>>, StoreError> {
        self.list_first_page(prefix).await
    }

    async fn head(&self, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        check_key(key)?;
        with_retry(&self.options.retry, |_| self.head_once(key)).await
    }

    async fn get_to_file(&self, key: &str, dest: &Path) -> Result<ObjectMeta, StoreError> {
        self.get_landed(key, dest, Durability::Synced).await
    }

    async fn get_known_to_file(
        &self,
        known: &ObjectMeta,
        dest: &Path,
        durability: Durability,
    ) -> Result<ObjectMeta, StoreError> {
        let key = known.key.as_str();
        check_key(key)?;
        let Ok(generation) = known.version.parse::<i64>() else {
            return self.get_landed(key, dest, durability).await;
        };
        if known.sha256.is_none() && known.served().is_none() {
            // Nothing to check the media against (a plan made without
            // the listing's hashes): its metadata first, for them.
            return self.get_landed(key, dest, durability).await;
        }
        // Stored compressed: read as stored, checked, decoded.
        let as_stored = known.content_encoded;
        let client = self.client().await?;
        let req = GetObjectRequest {
            bucket: self.bucket.clone(),
            object: key.to_string(),
            generation: Some(generation),
            ..GetObjectRequest::default()
        };
        // One request: the media of the generation the listing saw, checked
        // against the listing's size and sha256, or its MD5 or CRC32C.
        let landed = with_retry(&self.options.retry, |_| async {
            let whole = Range::default();
            let open = client.download_streamed_object(&req, &whole);
            let stream = if as_stored {
                super::gcs_stored::as_stored(open).await
            } else {
                open.await
            }
            .map_err(|e| self.map_err(e, Scope::Object(key)))?;
            self.land(stream, dest, known.clone(), durability, as_stored)
                .await
        })
        .await;
        match landed {
            // Replaced or deleted since the listing: as it is now.
            Err(StoreError::NotFound { .. }) => self.get_landed(key, dest, durability).await,
            other => other,
        }
    }

    /// Pinned with `generation=` (the one pin fake-gcs-server honours on
    /// a read; a generation gone answers 404) and `ifGenerationMatch`
    /// (which GCS itself checks against the live object).
    async fn get_range(
        &self,
        known: &ObjectMeta,
        offset: u64,
    ) -> Result<Option<super::resume::Ranged>, StoreError> {
        let key = known.key.as_str();
        check_key(key)?;
        let Ok(generation) = known.version.parse::<i64>() else {
            return Ok(None);
        };
        if known.sha256.is_none() || known.content_encoded {
            // Its answer carries no sha256 to check the whole against (nor
            // ranges of the stored bytes, served decompressed): read whole.
            return Ok(None);
        }
        let client = self.client().await?;
        let req = GetObjectRequest {
            bucket: self.bucket.clone(),
            object: key.to_string(),
            generation: Some(generation),
            if_generation_match: Some(generation),
            ..GetObjectRequest::default()
        };
        let stream = with_retry(&self.options.retry, |_| async {
            client
                .download_streamed_object(&req, &Range(Some(offset), None))
                .await
                .map_err(|e| self.map_err(e, Scope::Object(key)))
        })
        .await?;
        let target = self.describe();
        Ok(Some(super::resume::Ranged {
            // The listing carries it (custom metadata); the media does not.
            sha256: None,
            body: Box::pin(stream.map_err(move |e| StoreError::Unreachable {
                target: target.clone(),
                message: format!("download interrupted: {e}"),
            })),
        }))
    }

    async fn get_bytes(&self, key: &str) -> Result<(ObjectMeta, Vec<u8>), StoreError> {
        check_key(key)?;
        with_retry(&self.options.retry, |_| async move {
            let (meta, stream) = self.open_read(key).await?;
            let chunks: Vec<bytes::Bytes> =
                stream.try_collect().await.map_err(|e| self.stream_err(e))?;
            let bytes = chunks.concat();
            let sha = fsutil::sha256_bytes(&bytes);
            let received = super::Received::of(&meta, &bytes);
            super::check_download(&self.describe(), &meta, &received, &sha)?;
            Ok((meta, bytes))
        })
        .await
    }

    async fn put_file(
        &self,
        key: &str,
        src: &Path,
        sha256: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        check_key(key)?;
        let client = self.client().await?;
        let req = UploadObjectRequest {
            bucket: self.bucket.clone(),
            if_generation_match: Self::generation_match(key, pre)?,
            ..UploadObjectRequest::default()
        };
        let upload_type = Self::upload_type(key, sha256);
        // Set when the file's bytes do not hash to `sha256`: the stream
        // then fails before its last part, so the upload is never completed.
        let mismatch = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
        self.put_retrying(sha256, || async {
            let file = tokio::fs::File::open(src)
                .await
                .map_err(|e| StoreError::io(src, e))?;
            // Streamed: the file is never held in memory whole.
            let state = (
                file,
                sha2::Sha256::default(),
                mismatch.clone(),
                sha256.to_string(),
            );
            let body = futures_util::stream::try_unfold(
                state,
                |(mut file, mut hasher, flag, want)| async move {
                    use sha2::Digest;
                    let mut buf = vec![0u8; 256 * 1024];
                    let n = file.read(&mut buf).await?;
                    if n == 0 {
                        let found = hex::encode(hasher.finalize());
                        if !found.eq_ignore_ascii_case(&want) {
                            *flag.lock().expect("mismatch flag") = Some(found);
                            return Err(std::io::Error::other("content does not match its sha256"));
                        }
                        return Ok::<_, std::io::Error>(None);
                    }
                    buf.truncate(n);
                    hasher.update(&buf);
                    Ok(Some((bytes::Bytes::from(buf), (file, hasher, flag, want))))
                },
            );
            let upload = client.upload_streamed_object(&req, body, &upload_type);
            let result = crate::telemetry::requests::writing(key, upload)
                .await
                .map(|o| Self::meta(&o))
                .map_err(|e| self.map_err(e, Scope::Object(key)));
            match mismatch.lock().expect("mismatch flag").take() {
                Some(found) => Err(StoreError::hashed_otherwise(src, key, &found, sha256)),
                None => result,
            }
        })
        .await
    }

    async fn put_file_resumable(
        &self,
        key: &str,
        src: &Path,
        sha256: &str,
        pre: &Precondition,
        journal: &super::resume::UploadJournal,
    ) -> Result<ObjectMeta, StoreError> {
        let size = std::fs::metadata(src)
            .map_err(|e| StoreError::io(src, e))?
            .len();
        if size < resumable::RESUMABLE_MIN {
            return self.put_file(key, src, sha256, pre).await;
        }
        check_key(key)?;
        self.put_resumable(key, src, sha256, pre, journal).await
    }

    fn multipart_threshold(&self) -> Option<u64> {
        Some(resumable::RESUMABLE_MIN)
    }

    async fn put_bytes(
        &self,
        key: &str,
        bytes: Vec<u8>,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        let sha = fsutil::sha256_bytes(&bytes);
        self.put_bytes_hashed(key, bytes, &sha, pre).await
    }

    async fn put_bytes_hashed(
        &self,
        key: &str,
        bytes: Vec<u8>,
        sha: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        check_key(key)?;
        let client = self.client().await?;
        let req = UploadObjectRequest {
            bucket: self.bucket.clone(),
            if_generation_match: Self::generation_match(key, pre)?,
            ..UploadObjectRequest::default()
        };
        let upload_type = Self::upload_type(key, sha);
        let bytes = bytes::Bytes::from(bytes);
        self.put_retrying(sha, || async {
            let upload = client.upload_object(&req, bytes.clone(), &upload_type);
            crate::telemetry::requests::writing(key, upload)
                .await
                .map(|o| Self::meta(&o))
                .map_err(|e| self.map_err(e, Scope::Object(key)))
        })
        .await
    }

    async fn delete(&self, key: &str, pre: &Precondition) -> Result<(), StoreError> {
        check_key(key)?;
        let pre = match pre {
            // Create-only means nothing for a delete.
            Precondition::CreateOnly => &Precondition::None,
            p => p,
        };
        // Not known to be enforced (fake-gcs-server): check first.
        self.precheck(key, pre, self.enforced().delete).await?;
        self.delete_sent(key, pre).await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<(), StoreError> {
        futures_util::stream::iter(keys.iter().map(Ok))
            .try_for_each_concurrent(DELETE_CONCURRENCY, |k| self.delete(k, &Precondition::None))
            .await
    }

    async fn copy(
        &self,
        from: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        check_key(from)?;
        check_key(to)?;
        self.precheck(to, pre, self.enforced().copy).await?;
        self.copy_sent(from, to, pre).await
    }

    /// One rewrite, called again with its token until done, each token
    /// recorded in `journal` (within a location the first call copies it
    /// all, and nothing is recorded).
    async fn copy_from_bucket(
        &self,
        bucket: &str,
        from: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        journal: Option<&crate::store::resume::UploadJournal>,
    ) -> Result<ObjectMeta, StoreError> {
        check_key(&from.key)?;
        check_key(to)?;
        self.precheck(to, pre, self.enforced().copy).await?;
        self.rewrite_from(bucket, from, to, pre, journal).await
    }

    fn probes_enforcement(&self) -> bool {
        true
    }

    /// Two scratch objects, `<scratch>a` and `<scratch>b`, removed after
    /// whatever the probe found.
    async fn probe_enforcement(
        &self,
        scratch: &str,
    ) -> Result<Option<super::enforced::Enforced>, StoreError> {
        let (a, b) = (format!("{scratch}a"), format!("{scratch}b"));
        check_key(&a)?;
        let found = self.probe(&a, &b).await;
        let removed = futures_util::future::join(
            self.delete_sent(&a, &Precondition::None),
            self.delete_sent(&b, &Precondition::None),
        )
        .await;
        let found = found?;
        removed.0.and(removed.1)?;
        Ok(Some(found))
    }

    /// The source pinned with `ifSourceGenerationMatch`; the destination's
    /// precondition checked first, as for [`GcsStore::copy`].
    async fn copy_at(
        &self,
        from: &str,
        version: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<(), StoreError> {
        check_key(from)?;
        check_key(to)?;
        let generation = Self::generation_match(from, &Precondition::Matches(version.into()))?;
        self.precheck(to, pre, self.enforced().copy).await?;
        let client = self.client().await?;
        let req = CopyObjectRequest {
            // That very generation, and only while it is the live one: a
            // server that ignores the condition still copies no other.
            source_generation: generation,
            if_source_generation_match: generation,
            ..self.copy_request(from, to, pre)?
        };
        with_retry(&self.options.retry, |_| async {
            client
                .copy_object(&req)
                .await
                .map(|_| ())
                .map_err(|e| self.map_err(e, Scope::Object(from)))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preconditions_become_generations() {
        assert_eq!(
            GcsStore::generation_match("k", &Precondition::None).unwrap(),
            None
        );
        assert_eq!(
            GcsStore::generation_match("k", &Precondition::CreateOnly).unwrap(),
            Some(0)
        );
        assert_eq!(
            GcsStore::generation_match("k", &Precondition::Matches("42".into())).unwrap(),
            Some(42)
        );
        assert!(matches!(
            GcsStore::generation_match("k", &Precondition::Matches("etag".into())),
            Err(StoreError::PreconditionFailed { .. })
        ));
    }

    #[test]
    fn describe_names_bucket_and_endpoint() {
        let s = GcsStore::new("bkt", Some("http://127.0.0.1:9/"), StoreOptions::default()).unwrap();
        assert_eq!(s.describe(), "gs://bkt at http://127.0.0.1:9");
    }
}
