//! S3 (and S3-compatible servers) through `aws-sdk-s3`.
//!
//! Credentials and, unless configured, the region come from the standard
//! AWS chain (env, profile, instance role); `.swamp.toml` only names
//! `bucket`, `region` and `endpoint`. A configured endpoint switches to
//! path-style addressing, which servers without virtual-host DNS need.
//!
//! Preconditions: create-only is `If-None-Match: *`, replace is `If-Match:
//! "<etag>"`, a conditional delete is `DeleteObject` with `If-Match`, and a
//! conditional copy puts the same headers on `CopyObject` (the source is
//! pinned with `x-amz-copy-source-if-match`). A 412 is
//! [`StoreError::PreconditionFailed`]. The sha256 is user metadata
//! (`x-amz-meta-sha256`); `ListObjectsV2` does not return user metadata, so
//! listings carry none.
//!
//! The SDK's own retries are switched off: [`super::retry`] does it, with
//! the same policy for every backend.

use std::path::Path;

use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, ProvideCredentials, Region};
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, MetadataDirective, ObjectIdentifier};
use base64::Engine as _;
use tokio::sync::OnceCell;

use super::retry::{Class, classify_status, with_retry};
use super::{
    Capabilities, Durability, Landing, ListPage, ObjectMeta, Pager, Precondition, SHA256_METADATA,
    Store, StoreError, StoreOptions, check_bucket_name, check_key, error_chain,
};
use crate::digest::Md5;
use crate::fsutil;

mod copy;
mod direct;
mod multipart;
mod traced;

/// Most keys one `DeleteObjects` request may name.
const DELETE_BATCH: usize = 1000;

/// Largest object a single PutObject may carry.
const MAX_SINGLE_PUT: u64 = 5 * 1024 * 1024 * 1024;

/// Files at most this large are uploaded from memory (see `read_small`).
const SMALL_PUT: u64 = 256 << 10;

/// The whole of `src` when it holds at most [`SMALL_PUT`] bytes (`None`:
/// larger, to be streamed), read on the calling thread.
fn read_small(src: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    fsutil::read_small(src, SMALL_PUT).map_err(|e| StoreError::io(src, e))
}

const CREDENTIALS_HINT: &str = "check the AWS credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, \
     AWS_PROFILE (~/.aws/credentials) or the instance role; swamp never reads them from .swamp.toml";

/// For a 403 answer: credentials, or a bucket that does not exist.
const DENIED_HINT: &str = "check the AWS credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, \
     AWS_PROFILE (~/.aws/credentials) or the instance role (swamp never reads them from .swamp.toml), \
     and check that the bucket exists: some S3-compatible servers (SeaweedFS) answer 403, not 404, \
     for a missing bucket";

pub(crate) struct S3Store {
    bucket: String,
    region: Option<String>,
    endpoint: Option<String>,
    options: StoreOptions,
    conn: OnceCell<Connection>,
}

/// A GET's body, from whichever path served it.
enum Body {
    Fast(reqwest::Response),
    Sdk(ByteStream),
}

/// The SDK's client, and the fast GET and small PUT path beside it where
/// it matches the SDK's endpoint and signing (see `direct.rs`).
struct Connection {
    client: Client,
    fast: Option<direct::Direct>,
}

impl S3Store {
    /// One GetObject streamed into `dest` (see [`Store::get_known_to_file`]).
    /// `fast`: the fast path may serve it (not when the object is known
    /// to be one only the SDK takes, see `direct.rs`).
    async fn get_landed(
        &self,
        key: &str,
        dest: &Path,
        durability: Durability,
        fast: bool,
    ) -> Result<ObjectMeta, StoreError> {
        check_key(key)?;
        with_retry(&self.options.retry, |_| async move {
            let (meta, mut body) = self.get_body(key, fast).await?;
            // Each attempt starts a fresh temp file; a failed one is dropped
            // (and removed) with its `Landing`.
            let mut landing = Landing::new(dest, durability)?.checking_served(&meta, false);
            while let Some(chunk) = self.next_chunk(key, &mut body).await? {
                landing.write(&chunk).await?;
            }
            landing.finish(&self.describe(), meta).await
        })
        .await
    }

    /// One GET of `key`, by the fast path when `fast` allows it and it
    /// serves the object, else by the SDK.
    async fn get_body(&self, key: &str, fast: bool) -> Result<(ObjectMeta, Body), StoreError> {
        if fast && let Some((meta, response)) = self.fast_get(key).await? {
            return Ok((meta, Body::Fast(response)));
        }
        let (meta, body) = self.get_once(key).await?;
        Ok((meta, Body::Sdk(body)))
    }

    /// The next piece of a GET's body; a body that breaks off is
    /// [`S3Store::stream_err`]'s.
    async fn next_chunk(
        &self,
        key: &str,
        body: &mut Body,
    ) -> Result<Option<bytes::Bytes>, StoreError> {
        match body {
            Body::Fast(response) => response.chunk().await.map_err(|e| self.stream_err(key, &e)),
            Body::Sdk(stream) => stream
                .try_next()
                .await
                .map_err(|e| self.stream_err(key, &e)),
        }
    }

    pub(crate) fn new(
        bucket: &str,
        region: Option<&str>,
        endpoint: Option<&str>,
        options: StoreOptions,
    ) -> Result<S3Store, StoreError> {
        check_bucket_name(bucket, "S3")?;
        Ok(S3Store {
            bucket: bucket.to_string(),
            region: region.map(str::to_owned),
            endpoint: endpoint.map(|e| e.trim_end_matches('/').to_owned()),
            options,
            conn: OnceCell::new(),
        })
    }

    /// The client, built on first use: loading the AWS configuration is
    /// async and may touch the network (instance metadata), which `open`
    /// should not.
    /// HEAD of `key` in `bucket` (this store's, or another on the same
    /// service: a cross-bucket copy's source).
    async fn head_in(&self, bucket: &str, key: &str) -> Result<Option<ObjectMeta>, StoreError> {
        check_key(key)?;
        let client = self.client().await?;
        with_retry(&self.options.retry, |_| {
            let req = client.head_object().bucket(bucket).key(key);
            async move {
                match req.send().await {
                    Ok(o) => Ok(Some(ObjectMeta {
                        modified: o.last_modified().map(|t| t.secs()),
                        md5: if etag_is_no_md5(
                            o.server_side_encryption(),
                            o.sse_customer_algorithm(),
                        ) {
                            None
                        } else {
                            o.e_tag().and_then(Md5::from_etag)
                        },
                        ..Self::meta(
                            key,
                            o.content_length(),
                            o.e_tag(),
                            o.metadata().and_then(|m| m.get(SHA256_METADATA)),
                        )
                    })),
                    Err(e) => match self.map_err(e, Some(key)) {
                        StoreError::NotFound { .. } => Ok(None),
                        e => Err(e),
                    },
                }
            }
        })
        .await
    }

    async fn client(&self) -> Result<&Client, StoreError> {
        Ok(&self.connection().await?.client)
    }

    async fn connection(&self) -> Result<&Connection, StoreError> {
        self.conn.get_or_try_init(|| self.connect()).await
    }

    /// A GET by the fast path (see `direct.rs`): `None` when it does
    /// not serve this one and the SDK must.
    async fn fast_get(
        &self,
        key: &str,
    ) -> Result<Option<(ObjectMeta, reqwest::Response)>, StoreError> {
        match &self.connection().await?.fast {
            Some(fast) => match fast.get(key).await {
                direct::Fetched::Body(meta, response) => Ok(Some((meta, response))),
                direct::Fetched::Failed(e) => Err(e),
                direct::Fetched::Declined => Ok(None),
            },
            None => Ok(None),
        }
    }

    async fn connect(&self) -> Result<Connection, StoreError> {
        let timeouts = TimeoutConfig::builder()
            .connect_timeout(self.options.connect_timeout)
            .read_timeout(self.options.read_timeout)
            .build();
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .retry_config(RetryConfig::disabled())
            .timeout_config(timeouts);
        if let Some(region) = &self.region {
            loader = loader.region(Region::new(region.clone()));
        }
        if let Some(endpoint) = &self.endpoint {
            loader = loader.endpoint_url(endpoint);
        }
        if let Some(c) = &self.options.s3_credentials {
            loader = loader.credentials_provider(Credentials::new(
                &c.access_key_id,
                &c.secret_access_key,
                None,
                None,
                "swamp-static",
            ));
        }
        let sdk = loader.load().await;
        let Some(region) = sdk.region() else {
            return Err(StoreError::NoRegion {
                target: self.describe(),
            });
        };
        // Resolve credentials now so that "none found" is reported as such,
        // not as an obscure signing failure on the first request.
        let provider = sdk
            .credentials_provider()
            .ok_or_else(|| self.no_credentials("none configured"))?;
        let credentials = provider
            .provide_credentials()
            .await
            .map_err(|e| self.no_credentials(&error_chain(&e)))?;
        register_secrets(&credentials);
        let conf = aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(self.endpoint.is_some())
            .interceptor(traced::Traced {
                bucket: self.bucket.clone(),
                path_style: self.endpoint.is_some(),
            })
            .build();
        let endpoint_url = s3_endpoint_url(&sdk);
        let inputs = direct::EndpointInputs {
            bucket: &self.bucket,
            region: region.as_ref(),
            endpoint_url: endpoint_url.as_deref(),
            force_path_style: self.endpoint.is_some(),
            use_fips: sdk.use_fips().unwrap_or(false),
            use_dual_stack: sdk.use_dual_stack().unwrap_or(false),
        };
        let fast = direct::Direct::new(
            inputs,
            provider,
            credentials,
            self.describe(),
            &self.options,
        )
        .await;
        Ok(Connection {
            client: Client::from_conf(conf),
            fast,
        })
    }

    fn no_credentials(&self, why: &str) -> StoreError {
        StoreError::Denied {
            target: self.describe(),
            message: format!("no AWS credentials found: {why}"),
            hint: CREDENTIALS_HINT.to_string(),
        }
    }

    /// Maps an SDK error to a [`StoreError`] naming the bucket/endpoint.
    fn map_err<E>(&self, err: SdkError<E, HttpResponse>, key: Option<&str>) -> StoreError
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let target = self.describe();
        let key = key.unwrap_or("").to_string();
        match &err {
            SdkError::ServiceError(se) => {
                let status = se.raw().status().as_u16();
                let code = se.err().code().map(str::to_owned);
                let message = format!(
                    "HTTP {status} {}: {}",
                    code.as_deref().unwrap_or(""),
                    se.err().message().unwrap_or("")
                );
                match (status, code.as_deref()) {
                    (412, _) => StoreError::PreconditionFailed { key },
                    (_, Some("NoSuchBucket")) => StoreError::NoSuchBucket {
                        bucket: self.bucket.clone(),
                        target,
                    },
                    (404, _) => StoreError::NotFound { key, target },
                    (401 | 403, _) => StoreError::Denied {
                        target,
                        message,
                        hint: DENIED_HINT.to_string(),
                    },
                    (s, c) if classify_status(s, c) == Class::Transient => {
                        StoreError::Unavailable { target, message }
                    }
                    // A success status the SDK still could not read (an
                    // answer cut short or garbled on the way): retry.
                    (200..=299, _) => StoreError::Unavailable {
                        target,
                        message: format!("{message}: the answer was cut short or garbled"),
                    },
                    _ => StoreError::Server {
                        target,
                        key: Some(key),
                        message,
                    },
                }
            }
            SdkError::ResponseError(re) => {
                let status = re.raw().status().as_u16();
                let message = format!("HTTP {status}: {}", error_chain(&err));
                if classify_status(status, None) == Class::Transient || status < 300 {
                    // A 2xx we could not read is a connection cut short.
                    StoreError::Unavailable { target, message }
                } else if status == 412 {
                    StoreError::PreconditionFailed { key }
                } else {
                    StoreError::Server {
                        target,
                        key: None,
                        message,
                    }
                }
            }
            SdkError::DispatchFailure(d) if d.is_user() => StoreError::Request {
                target,
                message: error_chain(&err),
            },
            // Connection refused, DNS, reset, TLS: the server is not there.
            SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) => StoreError::Unreachable {
                target,
                message: error_chain(&err),
            },
            _ => StoreError::Request {
                target,
                message: error_chain(&err),
            },
        }
    }

    fn meta(
        key: &str,
        size: Option<i64>,
        etag: Option<&str>,
        sha256: Option<&String>,
    ) -> ObjectMeta {
        ObjectMeta {
            key: key.to_string(),
            size: size.unwrap_or(0).max(0) as u64,
            version: strip_etag(etag),
            sha256: sha256.cloned(),
            modified: None,
            md5: etag.and_then(Md5::from_etag),
            crc32c: None,
            content_encoded: false,
        }
    }

    /// One PutObject; `body` builds a fresh body for each attempt.
    async fn put_once(
        &self,
        key: &str,
        body: ByteStream,
        size: u64,
        sha256: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        if let Some(bytes) = body.bytes()
            && let Some(fast) = &self.connection().await?.fast
        {
            match fast.put(key, bytes, sha256, pre).await {
                direct::Put::Done(meta) => return Ok(meta),
                direct::Put::Failed(e) => return Err(e),
                direct::Put::Declined => {}
            }
        }
        let client = self.client().await?;
        let mut req = client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .body(body)
            .content_length(size as i64)
            .metadata(SHA256_METADATA, sha256);
        // Our own hash as the request checksum: S3 rejects the upload if the
        // bytes it received differ, and the SDK need not stream a checksum
        // trailer (aws-chunked), which SeaweedFS without identities refuses
        // ("Signed request requires setting up SeaweedFS S3 authentication").
        if let Ok(raw) = hex::decode(sha256) {
            req = req.checksum_sha256(base64::engine::general_purpose::STANDARD.encode(raw));
        }
        let (none_match, matches) = conditional_headers(pre);
        req = req.set_if_none_match(none_match).set_if_match(matches);
        match req.send().await {
            Ok(out) => Ok(ObjectMeta {
                key: key.to_string(),
                size,
                version: strip_etag(out.e_tag()),
                sha256: Some(sha256.to_string()),
                modified: None,
                md5: out.e_tag().and_then(Md5::from_etag),
                crc32c: None,
                content_encoded: false,
            }),
            // AWS answers If-Match on a missing key with 404 (SeaweedFS with
            // 412): either way the version the caller saw is gone.
            Err(e) => {
                let code = e
                    .as_service_error()
                    .and_then(|se| se.code())
                    .map(str::to_owned);
                match self.map_err(e, Some(key)) {
                    StoreError::NotFound { key, .. } if matches!(pre, Precondition::Matches(_)) => {
                        Err(StoreError::PreconditionFailed { key })
                    }
                    // The server hashed what it received and it is not what
                    // the caller said (SeaweedFS: BadDigest; AWS:
                    // BadDigest/XAmzContentChecksumMismatch).
                    StoreError::Server { message, .. }
                        if matches!(
                            code.as_deref(),
                            Some("BadDigest" | "XAmzContentChecksumMismatch" | "InvalidDigest")
                        ) =>
                    {
                        Err(StoreError::ChangedSinceHashed {
                            what: format!("`{key}`"),
                            now: format!("its content does not have sha256 {sha256}: {message}"),
                        })
                    }
                    e => Err(e),
                }
            }
        }
    }

    /// Retries a conditional put. A repeat that meets "precondition failed"
    /// may be meeting its own first attempt, which succeeded but whose
    /// answer was lost: if the object now holds our sha256, it is ours.
    async fn put_retrying<F, Fut>(
        &self,
        key: &str,
        sha256: &str,
        pre: &Precondition,
        body: F,
    ) -> Result<ObjectMeta, StoreError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<(ByteStream, u64), StoreError>>,
    {
        check_key(key)?;
        with_retry(&self.options.retry, |attempt| {
            let body = body();
            async move {
                let (stream, size) = body.await?;
                match self.put_once(key, stream, size, sha256, pre).await {
                    Err(StoreError::PreconditionFailed { key }) if attempt > 1 => {
                        match self.head(&key).await? {
                            Some(m) if m.sha256.as_deref() == Some(sha256) => Ok(m),
                            _ => Err(StoreError::PreconditionFailed { key }),
                        }
                    }
                    r => r,
                }
            }
        })
        .await
    }

    async fn get_once(
        &self,
        key: &str,
    ) -> Result<(ObjectMeta, aws_sdk_s3::primitives::ByteStream), StoreError> {
        let client = self.client().await?;
        let out = client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| self.map_err(e, Some(key)))?;
        let mut meta = Self::meta(
            key,
            out.content_length(),
            out.e_tag(),
            out.metadata().and_then(|m| m.get(SHA256_METADATA)),
        );
        if etag_is_no_md5(out.server_side_encryption(), out.sse_customer_algorithm()) {
            meta.md5 = None;
        }
        Ok((meta, out.body))
    }

    fn stream_err(&self, key: &str, e: &(dyn std::error::Error + 'static)) -> StoreError {
        let chain = error_chain(e);
        // The SDK checks the checksum the server sent with the body.
        if chain.contains("checksum mismatch") {
            return StoreError::Corrupt {
                key: key.to_string(),
                detail: chain,
            };
        }
        // The body broke off mid-way: a network failure, worth a retry.
        StoreError::Unreachable {
            target: self.describe(),
            message: format!("download interrupted: {chain}"),
        }
    }
}

#[async_trait]
impl Pager for S3Store {
    async fn list_page(
        &self,
        prefix: &str,
        delimited: bool,
        token: Option<String>,
    ) -> Result<ListPage, StoreError> {
        let client = self.client().await?;
        let page = with_retry(&self.options.retry, |_| {
            let req = client
                .list_objects_v2()
                .bucket(&self.bucket)
                .prefix(prefix)
                .set_delimiter(delimited.then(|| "/".to_string()))
                .max_keys(self.options.page_size.max(1) as i32)
                // Keys come back percent-encoded: a key holding a
                // character XML 1.0 cannot carry (a control character)
                // would otherwise make the page unparseable, or be
                // mangled into a key that does not exist.
                .encoding_type(aws_sdk_s3::types::EncodingType::Url)
                .set_continuation_token(token.clone());
            async move { req.send().await.map_err(|e| self.map_err(e, None)) }
        })
        .await?;
        // A server that ignores the request answers plain keys and says
        // nothing of an encoding.
        let encoded = page.encoding_type() == Some(&aws_sdk_s3::types::EncodingType::Url);
        let decode = |s: &str| {
            if encoded {
                percent_decode(s)
            } else {
                s.to_string()
            }
        };
        let mut objects = Vec::with_capacity(page.contents().len());
        for o in page.contents() {
            if let Some(key) = o.key() {
                let mut meta = Self::meta(&decode(key), o.size(), o.e_tag(), None);
                meta.modified = o.last_modified().map(|t| t.secs());
                objects.push(meta);
            }
        }
        let prefixes = page
            .common_prefixes()
            .iter()
            .filter_map(|p| p.prefix())
            .map(decode)
            .collect();
        let next = page
            .next_continuation_token()
            .filter(|_| page.is_truncated() == Some(true))
            .map(str::to_owned);
        Ok(ListPage {
            objects,
            prefixes,
            next,
        })
    }
}

#[async_trait]
impl Store for S3Store {
    fn describe(&self) -> String {
        match &self.endpoint {
            Some(e) => format!("s3://{} at {e}", self.bucket),
            None => format!("s3://{}", self.bucket),
        }
    }

    /// Observed against SeaweedFS 4.48 (`weed mini`): create-only and
    /// replace hold under 16 concurrent writers; `If-Match` on DeleteObject
    /// and `If-None-Match`/`If-Match` on CopyObject are answered with 412.
    fn multipart_threshold(&self) -> Option<u64> {
        Some(multipart::THRESHOLD)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            conditional_create: true,
            conditional_replace: true,
            conditional_delete: true,
            conditional_copy: true,
            batch_delete: true,
            server_side_copy: true,
            listing_has_sha256: false,
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
        self.head_in(&self.bucket, key).await
    }

    async fn get_to_file(&self, key: &str, dest: &Path) -> Result<ObjectMeta, StoreError> {
        self.get_landed(key, dest, Durability::Synced, true).await
    }

    async fn get_known_to_file(
        &self,
        known: &ObjectMeta,
        dest: &Path,
        durability: Durability,
    ) -> Result<ObjectMeta, StoreError> {
        // Listed without sha256 and with a multipart ETag: only the
        // server's checksum can vouch for it, so the SDK fetches it.
        let fast = known.sha256.is_some() || Md5::from_etag(&known.version).is_some();
        self.get_landed(&known.key, dest, durability, fast).await
    }

    async fn get_bytes(&self, key: &str) -> Result<(ObjectMeta, Vec<u8>), StoreError> {
        check_key(key)?;
        with_retry(&self.options.retry, |_| async move {
            let (meta, mut body) = self.get_body(key, true).await?;
            let mut bytes = Vec::new();
            while let Some(chunk) = self.next_chunk(key, &mut body).await? {
                bytes.extend_from_slice(&chunk);
            }
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
        let size = std::fs::metadata(src)
            .map_err(|e| StoreError::io(src, e))?
            .len();
        if size >= multipart::THRESHOLD {
            return self.put_multipart(key, src, size, sha256, pre).await;
        }
        self.put_retrying(key, sha256, pre, || async {
            // A small file is read whole here: an open, a read and a close
            // cost less than the blocking-thread hops of a streamed body.
            // (A file that changed since it was hashed fails S3's check of
            // the sha256 sent with it, either way.)
            if let Some(bytes) = read_small(src)? {
                let size = bytes.len() as u64;
                return Ok((ByteStream::from(bytes), size));
            }
            let size = tokio::fs::metadata(src)
                .await
                .map_err(|e| StoreError::io(src, e))?
                .len();
            if size > MAX_SINGLE_PUT {
                // Grew past what one request carries since it was statted.
                return Err(StoreError::ChangedSinceHashed {
                    what: src.display().to_string(),
                    now: format!("now {size} bytes"),
                });
            }
            let stream = ByteStream::from_path(src)
                .await
                .map_err(|e| StoreError::io(src, std::io::Error::other(e)))?;
            Ok((stream, size))
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
        check_key(key)?;
        let size = std::fs::metadata(src)
            .map_err(|e| StoreError::io(src, e))?
            .len();
        if size < multipart::THRESHOLD {
            return self.put_file(key, src, sha256, pre).await;
        }
        self.put_multipart_resumable(key, src, size, sha256, pre, journal)
            .await
    }

    async fn abort_upload(&self, key: &str, upload_id: &str) -> Result<(), StoreError> {
        check_key(key)?;
        let client = self.client().await?;
        with_retry(&self.options.retry, |_| {
            let req = client
                .abort_multipart_upload()
                .bucket(&self.bucket)
                .key(key)
                .upload_id(upload_id);
            async move {
                match req.send().await {
                    Ok(_) => Ok(()),
                    Err(e) if e.code() == Some("NoSuchUpload") => Ok(()),
                    Err(e) => match self.map_err(e, Some(key)) {
                        StoreError::NotFound { .. } => Ok(()),
                        e => Err(e),
                    },
                }
            }
        })
        .await
    }

    async fn get_range(
        &self,
        known: &ObjectMeta,
        offset: u64,
    ) -> Result<Option<super::resume::Ranged>, StoreError> {
        let key = known.key.as_str();
        check_key(key)?;
        let client = self.client().await?;
        let out = with_retry(&self.options.retry, |_| {
            let req = client
                .get_object()
                .bucket(&self.bucket)
                .key(key)
                .range(format!("bytes={offset}-"))
                .if_match(quote_etag(&known.version));
            async move { req.send().await.map_err(|e| self.map_err(e, Some(key))) }
        })
        .await?;
        // A server that ignored the range sent the whole object: never
        // appended to what is there, and the caller reads it whole (an
        // error here would stop every later run at the same place).
        let start = out
            .content_range()
            .and_then(|r| r.strip_prefix("bytes "))
            .and_then(|r| r.split('-').next())
            .and_then(|n| n.parse::<u64>().ok());
        if start != Some(offset) && !(offset == 0 && start.is_none()) {
            return Ok(None);
        }
        let sha256 = out.metadata().and_then(|m| m.get(SHA256_METADATA)).cloned();
        let target = self.describe();
        let body = futures_util::stream::unfold(Some(out.body), move |body| {
            let target = target.clone();
            async move {
                let mut body = body?;
                match body.try_next().await {
                    Ok(Some(chunk)) => Some((Ok(chunk), Some(body))),
                    Ok(None) => None,
                    Err(e) => Some((
                        Err(StoreError::Unreachable {
                            target,
                            message: format!("download interrupted: {}", error_chain(&e)),
                        }),
                        None,
                    )),
                }
            }
        });
        Ok(Some(super::resume::Ranged {
            sha256,
            body: Box::pin(body),
        }))
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
        let bytes = bytes::Bytes::from(bytes);
        self.put_retrying(key, sha, pre, || {
            let b = bytes.clone();
            async move {
                let size = b.len() as u64;
                Ok((ByteStream::from(b), size))
            }
        })
        .await
    }

    async fn delete(&self, key: &str, pre: &Precondition) -> Result<(), StoreError> {
        check_key(key)?;
        let client = self.client().await?;
        with_retry(&self.options.retry, |_| {
            let mut req = client.delete_object().bucket(&self.bucket).key(key);
            if let Precondition::Matches(v) = pre {
                req = req.if_match(quote_etag(v));
            }
            async move {
                match req.send().await {
                    Ok(_) => Ok(()),
                    Err(e) => match self.map_err(e, Some(key)) {
                        StoreError::NotFound { key, .. } => match pre {
                            Precondition::Matches(_) => Err(StoreError::PreconditionFailed { key }),
                            _ => Ok(()),
                        },
                        e => Err(e),
                    },
                }
            }
        })
        .await
    }

    async fn delete_many(&self, keys: &[String]) -> Result<(), StoreError> {
        for key in keys {
            check_key(key)?;
        }
        let client = self.client().await?;
        for chunk in keys.chunks(DELETE_BATCH) {
            let ids = chunk
                .iter()
                .map(|k| ObjectIdentifier::builder().key(k).build())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| StoreError::task("building a delete request", e))?;
            let delete = Delete::builder()
                .set_objects(Some(ids))
                .quiet(true)
                .build()
                .map_err(|e| StoreError::task("building a delete request", e))?;
            let out = with_retry(&self.options.retry, |_| {
                let req = client
                    .delete_objects()
                    .bucket(&self.bucket)
                    .delete(delete.clone());
                async move { req.send().await.map_err(|e| self.map_err(e, None)) }
            })
            .await?;
            // Per-key failures come back in a 200 response.
            if let Some(err) = out.errors().iter().find(|e| e.code() != Some("NoSuchKey")) {
                let key = err.key().unwrap_or("").to_string();
                let message = format!(
                    "{} {}",
                    err.code().unwrap_or(""),
                    err.message().unwrap_or("")
                );
                return Err(match err.code() {
                    Some("AccessDenied") => StoreError::Denied {
                        target: self.describe(),
                        message: format!("deleting `{key}`: {message}"),
                        hint: DENIED_HINT.to_string(),
                    },
                    _ => StoreError::DeleteFailed {
                        target: self.describe(),
                        key,
                        message,
                    },
                });
            }
        }
        Ok(())
    }

    async fn copy(
        &self,
        from: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<ObjectMeta, StoreError> {
        check_key(from)?;
        check_key(to)?;
        let src = self.head(from).await?.ok_or_else(|| StoreError::NotFound {
            key: from.to_string(),
            target: self.describe(),
        })?;
        let source = copy::CopySource {
            bucket: &self.bucket,
            key: from,
        };
        self.copy_from(source, &src, to, pre, None).await
    }

    async fn copy_from_bucket(
        &self,
        bucket: &str,
        from: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        journal: Option<&super::resume::UploadJournal>,
    ) -> Result<ObjectMeta, StoreError> {
        check_key(&from.key)?;
        check_key(to)?;
        let source = copy::CopySource {
            bucket,
            key: &from.key,
        };
        self.copy_from(source, from, to, pre, journal).await
    }

    /// One request: the source pinned with `x-amz-copy-source-if-match`.
    async fn copy_at(
        &self,
        from: &str,
        version: &str,
        to: &str,
        pre: &Precondition,
    ) -> Result<(), StoreError> {
        check_key(from)?;
        check_key(to)?;
        let client = self.client().await?;
        let copied = with_retry(&self.options.retry, |attempt| {
            let mut req = client
                .copy_object()
                .bucket(&self.bucket)
                .key(to)
                .copy_source(format!("{}/{}", self.bucket, encode_key(from)))
                .copy_source_if_match(quote_etag(version))
                .metadata_directive(MetadataDirective::Copy);
            let (none_match, matches) = conditional_headers(pre);
            req = req.set_if_none_match(none_match).set_if_match(matches);
            async move {
                match req.send().await {
                    Ok(_) => Ok(()),
                    Err(e) if copy_source_too_large(&e) => Err(StoreError::CopyTooLarge {
                        key: from.to_string(),
                    }),
                    Err(e) => match self.map_err(e, Some(to)) {
                        // A repeat may meet its own success: the copy is
                        // there when the destination holds that version's
                        // bytes (a copy keeps the ETag of a single-part
                        // object) or its sha256.
                        StoreError::PreconditionFailed { key } if attempt > 1 => {
                            match self.head(to).await? {
                                Some(m) if m.version == version => Ok(()),
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
            // Too large for one CopyObject (over 5 GiB on AWS): in parts,
            // from the very version asked for.
            Err(StoreError::CopyTooLarge { .. }) => match self.head(from).await? {
                Some(src) if src.version == version => {
                    let from = copy::CopySource {
                        bucket: &self.bucket,
                        key: from,
                    };
                    self.copy_multipart(from, &src, to, pre, None)
                        .await
                        .map(|_| ())
                }
                _ => Err(StoreError::PreconditionFailed {
                    key: from.to_string(),
                }),
            },
            copied => copied,
        }
    }
}

/// AWS's answer to a CopyObject of a source over 5 GiB: `InvalidRequest`,
/// "The specified copy source is larger than the maximum allowable size
/// for a copy source: 5368709120".
fn copy_source_too_large<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> bool {
    matches!(e.code(), Some("InvalidRequest" | "EntityTooLarge"))
        && e.message().is_some_and(|m| {
            m.contains("copy source is larger") || m.contains("maximum allowable size")
        })
}

/// An object encrypted with a KMS key or a customer key (SSE-KMS, DSSE,
/// SSE-C) has an ETag that is no MD5 of its content (AWS), so it checks
/// nothing.
fn etag_is_no_md5(
    sse: Option<&aws_sdk_s3::types::ServerSideEncryption>,
    customer_algorithm: Option<&str>,
) -> bool {
    sse_hides_md5(sse.map(|s| s.as_str()), customer_algorithm)
}

/// [`etag_is_no_md5`] from the headers' text (`x-amz-server-side-encryption`
/// and its customer-algorithm header).
fn sse_hides_md5(sse: Option<&str>, customer_algorithm: Option<&str>) -> bool {
    customer_algorithm.is_some() || matches!(sse, Some("aws:kms" | "aws:kms:dsse"))
}

/// The endpoint URL the S3 client is built with, as
/// `aws_sdk_s3::config::Builder::from(&SdkConfig)` picks it: one set in
/// code wins, else an S3-specific one (`AWS_ENDPOINT_URL_S3`, or a
/// profile's `services` section), else the general one.
fn s3_endpoint_url(sdk: &aws_types::SdkConfig) -> Option<String> {
    if sdk.get_origin("endpoint_url").is_client_config() {
        return sdk.endpoint_url().map(str::to_owned);
    }
    let key = aws_types::service_config::ServiceConfigKey::builder()
        .service_id("S3")
        .env("AWS_ENDPOINT_URL")
        .profile("endpoint_url")
        .build()
        .ok()?;
    sdk.service_config()
        .and_then(|conf| conf.load_config(key))
        .or_else(|| sdk.endpoint_url().map(str::to_owned))
}

/// A write's precondition as S3's conditional headers (`If-None-Match`,
/// `If-Match`): every conditional request builder takes both.
fn conditional_headers(pre: &Precondition) -> (Option<String>, Option<String>) {
    match pre {
        Precondition::None => (None, None),
        Precondition::CreateOnly => (Some("*".to_string()), None),
        Precondition::Matches(v) => (None, Some(quote_etag(v))),
    }
}

fn strip_etag(etag: Option<&str>) -> String {
    etag.unwrap_or("").trim_matches('"').to_string()
}

fn quote_etag(version: &str) -> String {
    format!("\"{}\"", version.trim_matches('"'))
}

/// What [`encode_key`] escapes: everything but RFC 3986's unreserved
/// characters and `/`.
const KEY_ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// Percent-encodes a key as S3 signs a request path: for
/// `x-amz-copy-source` and the direct GET's and PUT's URL.
/// Cuts these credentials' secrets from everything the run writes.
fn register_secrets(credentials: &Credentials) {
    crate::telemetry::redact::register(credentials.secret_access_key());
    if let Some(token) = credentials.session_token() {
        crate::telemetry::redact::register(token);
    }
}

fn encode_key(key: &str) -> String {
    percent_encoding::utf8_percent_encode(key, KEY_ESCAPED).to_string()
}

/// Decodes a key listed with `encoding-type=url`: `%XX` escapes, and `+`
/// for a space (as AWS encodes it, and as botocore decodes it; a `+` in a
/// key is listed as `%2B`). A `%` not followed by two hex digits is kept
/// as it is.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_keys_are_percent_decoded() {
        assert_eq!(
            percent_decode("swamp/a/data/x%1B%5D0%3Bt%07/1/raw"),
            "swamp/a/data/x\u{1b}]0;t\u{7}/1/raw"
        );
        assert_eq!(percent_decode("a+b%2Bc"), "a b+c");
        assert_eq!(percent_decode("caf%C3%A9"), "café");
        // A stray `%` stays.
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn etags_are_stored_bare_and_sent_quoted() {
        assert_eq!(strip_etag(Some("\"abc\"")), "abc");
        assert_eq!(strip_etag(Some("abc")), "abc");
        assert_eq!(strip_etag(None), "");
        assert_eq!(quote_etag("abc"), "\"abc\"");
        assert_eq!(quote_etag("\"abc\""), "\"abc\"");
    }

    #[test]
    fn each_precondition_is_one_conditional_header() {
        assert_eq!(conditional_headers(&Precondition::None), (None, None));
        assert_eq!(
            conditional_headers(&Precondition::CreateOnly),
            (Some("*".into()), None)
        );
        assert_eq!(
            conditional_headers(&Precondition::Matches("abc".into())),
            (None, Some("\"abc\"".into()))
        );
    }

    #[test]
    fn copy_source_keys_are_percent_encoded() {
        assert_eq!(encode_key("a/b c/ü+1.txt"), "a/b%20c/%C3%BC%2B1.txt");
    }

    #[test]
    fn describe_names_bucket_and_endpoint() {
        let s = S3Store::new(
            "bkt",
            None,
            Some("http://127.0.0.1:9/"),
            StoreOptions::default(),
        )
        .unwrap();
        assert_eq!(s.describe(), "s3://bkt at http://127.0.0.1:9");
        assert!(S3Store::new("B", None, None, StoreOptions::default()).is_err());
    }
}
