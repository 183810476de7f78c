//! GetObject's success path, and a small PutObject's, without the SDK's
//! request pipeline: a GET or PUT signed with `aws-sigv4` on a plain HTTP
//! client.
//!
//! Why: for small objects the SDK's per-request machinery (interceptors,
//! config bags, endpoint rules resolved per call, response deserialisers)
//! costs more client CPU than moving the bytes, and the client shares the
//! machine's cores with the server (benches/sync_s3.sh and
//! benches/million.sh measure it against curl).
//!
//! A PUT here is the SDK path's request: the body whole, its sha256 as
//! both the object's metadata and the request checksum
//! (`x-amz-checksum-sha256`, which the server checks), the same
//! precondition headers, an unsigned payload. Its answers mean what they
//! mean on the SDK path: `200` with the new ETag, `412` (or `404` to an
//! `If-Match`) the precondition failed, a digest error the file changed
//! since it was hashed, a transient status unavailable. A PUT that may
//! have reached the server (sent, no answer) is unavailable too, so the
//! retry loop asks again knowing it may meet its own write; only a PUT
//! that surely changed nothing (refused before it was sent, or another
//! `4xx`) is handed to the SDK.
//!
//! It serves only what it can vouch for on its own: a `200` whose body the
//! landing checks end to end (the object's sha256 metadata, or a
//! single-part MD5 ETag). Two answers it gives their meaning itself, as
//! the SDK path would: `404 NoSuchKey` (not found) and a transient status
//! (503 SlowDown, 500, …: unavailable, so the retry loop backs off
//! instead of the SDK asking again at once). Everything else (another
//! error status, a redirect, an object only the server's own checksum
//! could check, a request that cannot be signed or sent) is left to the
//! SDK, so those errors and their hints are the SDK path's. Connections
//! that fail several times running turn this path off for the rest of the
//! run: the SDK may know a transport set-up this client does not
//! (`AWS_CA_BUNDLE`, say), and a real outage is then reported by it.
//!
//! The bucket's endpoint and signing region come from the SDK's own
//! endpoint rules, resolved once; any auth scheme but plain SigV4 (S3
//! Express, multi-region SigV4a) keeps every request on the SDK.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sdk_s3::config::endpoint::{Params, ResolveEndpoint};
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_smithy_runtime_api::client::identity::Identity;
use aws_smithy_types::Document;

use super::super::retry::{Class, classify_status};
use super::super::{ObjectMeta, SHA256_METADATA, StoreError, StoreOptions, checked_by_served_only};
use crate::telemetry::{Class as RequestClass, Request};

/// Credentials this close to expiring are fetched again before use.
const REFRESH_BEFORE: Duration = Duration::from_secs(60);

/// Credentials are not fetched again sooner than this after the last
/// fetch (one whose answer expires within [`REFRESH_BEFORE`] would be
/// fetched again on every request otherwise), unless they have expired.
const REFETCH_AFTER: Duration = Duration::from_secs(5);

/// Connections failing this many times running turn the path off.
const CONNECT_FAILURES: u32 = 3;

/// Most bytes of an error answer's body read for its code.
const ERROR_BODY: usize = 64 << 10;

/// What the fast path made of a GET.
pub(super) enum Fetched {
    /// A `200` the caller lands and checks against the metadata returned.
    Body(ObjectMeta, reqwest::Response),
    /// An answer with a meaning of its own (see the module doc).
    Failed(StoreError),
    /// Not served here: the SDK asks.
    Declined,
}

/// What the fast path made of a PUT.
pub(super) enum Put {
    Done(ObjectMeta),
    /// An answer with a meaning of its own (see the module doc).
    Failed(StoreError),
    /// Nothing was written: the SDK sends it.
    Declined,
}

/// The identity signed with, when it was fetched and when it expires.
struct Cached {
    identity: Identity,
    fetched: SystemTime,
    expiry: Option<SystemTime>,
}

pub(super) struct Direct {
    http: reqwest::Client,
    /// The bucket's URL, without a trailing `/` (`https://b.s3.eu-west-1.
    /// amazonaws.com`, or `http://127.0.0.1:8333/b` path style).
    base: String,
    region: String,
    /// The store's description, for errors.
    target: String,
    /// The bucket's name, for the requests' trace.
    bucket: String,
    provider: SharedCredentialsProvider,
    /// The identity last fetched, reused until near its expiry; fetched
    /// again by one request while the others wait.
    identity: tokio::sync::Mutex<Cached>,
    /// Connection failures since the last answer.
    connect_failures: AtomicU32,
    off: AtomicBool,
}

/// What the SDK's client is built from, as far as an endpoint goes.
pub(super) struct EndpointInputs<'a> {
    pub bucket: &'a str,
    pub region: &'a str,
    pub endpoint_url: Option<&'a str>,
    pub force_path_style: bool,
    pub use_fips: bool,
    pub use_dual_stack: bool,
}

impl Direct {
    /// The fast path for a bucket, or `None` when it cannot be set up to
    /// match the SDK exactly (then every GET takes the SDK).
    /// `credentials`: as just fetched from `provider` (to start with).
    pub(super) async fn new(
        inputs: EndpointInputs<'_>,
        provider: SharedCredentialsProvider,
        credentials: Credentials,
        target: String,
        options: &StoreOptions,
    ) -> Option<Direct> {
        let params = Params::builder()
            .bucket(inputs.bucket)
            .region(inputs.region)
            .set_endpoint(inputs.endpoint_url.map(str::to_owned))
            .force_path_style(inputs.force_path_style)
            .use_fips(inputs.use_fips)
            .use_dual_stack(inputs.use_dual_stack)
            .build()
            .ok()?;
        let endpoint = aws_sdk_s3::config::endpoint::DefaultResolver::new()
            .resolve_endpoint(&params)
            .await
            .ok()?;
        // The rules' first auth scheme (typed in newer releases, an
        // `authSchemes` property before).
        let first = match endpoint.auth_schemes().first() {
            Some(scheme) => Some(scheme.as_document()),
            None => match endpoint.properties().get("authSchemes") {
                Some(Document::Array(schemes)) => schemes.first().cloned(),
                _ => None,
            },
        };
        let region = sigv4_region(first.as_ref())?;
        let http = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            // As the SDK: no proxy from the environment, no redirects
            // followed, bodies as stored (no decompression).
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .no_gzip()
            .no_brotli()
            .no_deflate()
            .no_zstd()
            .user_agent(concat!("swamp/", env!("CARGO_PKG_VERSION")))
            .build()
            .ok()?;
        let expiry = credentials.expiry();
        Some(Direct {
            http,
            base: endpoint.url().trim_end_matches('/').to_string(),
            region,
            target,
            bucket: inputs.bucket.to_string(),
            provider,
            identity: tokio::sync::Mutex::new(Cached {
                identity: credentials.into(),
                fetched: SystemTime::now(),
                expiry,
            }),
            connect_failures: AtomicU32::new(0),
            off: AtomicBool::new(false),
        })
    }

    /// GETs `key` (checked by the caller).
    pub(super) async fn get(&self, key: &str) -> Fetched {
        if self.off.load(Ordering::Relaxed) {
            return Fetched::Declined;
        }
        match self.send(key).await {
            Some(response) => self.answer(key, response).await,
            None => Fetched::Declined,
        }
    }

    /// PUTs `body` at `key` under `pre`, with `sha256` (hex) as its
    /// metadata and request checksum.
    pub(super) async fn put(
        &self,
        key: &str,
        body: &[u8],
        sha256: &str,
        pre: &super::super::Precondition,
    ) -> Put {
        use base64::Engine as _;
        if self.off.load(Ordering::Relaxed) {
            return Put::Declined;
        }
        let Ok(raw) = hex::decode(sha256) else {
            return Put::Declined;
        };
        let checksum = base64::engine::general_purpose::STANDARD.encode(raw);
        let (none_match, matches) = super::conditional_headers(pre);
        let mut headers = vec![
            (format!("x-amz-meta-{SHA256_METADATA}"), sha256.to_string()),
            ("x-amz-checksum-sha256".to_string(), checksum),
        ];
        headers.extend(none_match.map(|v| ("if-none-match".to_string(), v)));
        headers.extend(matches.map(|v| ("if-match".to_string(), v)));
        let url = format!("{}/{}?x-id=PutObject", self.base, super::encode_key(key));
        let Some(request) = self.signed("PUT", &url, &headers).await else {
            return Put::Declined;
        };
        let started = Instant::now();
        let sent = request.body(body.to_vec()).send().await;
        self.report(
            RequestClass::Put,
            "PutObject",
            key,
            started,
            &sent,
            Some(body.len() as u64),
        );
        let response = match sent {
            Ok(response) => {
                self.connect_failures.store(0, Ordering::Relaxed);
                response
            }
            Err(e) if e.is_connect() => {
                self.connect_failed();
                return Put::Declined;
            }
            // Sent, perhaps received and written: not for the SDK to send
            // again as if new, but for the retry loop.
            Err(e) => {
                return Put::Failed(StoreError::Unavailable {
                    target: self.target.clone(),
                    message: e.to_string(),
                });
            }
        };
        put_answer(&self.target, key, body.len() as u64, sha256, pre, response).await
    }

    /// Reports a request this path sent (see [`crate::telemetry`]).
    fn report(
        &self,
        class: RequestClass,
        op: &str,
        key: &str,
        started: Instant,
        sent: &Result<reqwest::Response, reqwest::Error>,
        put_bytes: Option<u64>,
    ) {
        let error = sent.as_ref().err().map(|e| e.to_string());
        Request {
            class,
            op,
            bucket: &self.bucket,
            key,
            status: sent.as_ref().ok().map(|r| r.status().as_u16()),
            elapsed: started.elapsed(),
            bytes: put_bytes.or_else(|| sent.as_ref().ok().and_then(|r| r.content_length())),
            error: error.as_deref(),
        }
        .sent();
    }

    fn connect_failed(&self) {
        if self.connect_failures.fetch_add(1, Ordering::Relaxed) + 1 >= CONNECT_FAILURES {
            self.off.store(true, Ordering::Relaxed);
        }
    }

    /// `method` of `url` with `headers`, signed (an unsigned payload);
    /// `None` if it cannot be.
    async fn signed(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
    ) -> Option<reqwest::RequestBuilder> {
        let identity = self.identity().await?;
        let mut settings = SigningSettings::default();
        // S3's own rules: the path is encoded once (as the caller wrote
        // it) and never normalised; the payload is not hashed.
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name("s3")
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .ok()?
            .into();
        let signable = SignableRequest::new(
            method,
            url,
            headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            SignableBody::UnsignedPayload,
        )
        .ok()?;
        let (instructions, _) = sign(signable, &params).ok()?.into_parts();
        let method = reqwest::Method::from_bytes(method.as_bytes()).ok()?;
        let mut request = self.http.request(method, url);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        for (name, value) in instructions.headers() {
            request = request.header(name, value);
        }
        Some(request)
    }

    /// The signed GET of `key`, sent; `None` if it could not be.
    async fn send(&self, key: &str) -> Option<reqwest::Response> {
        // `x-id` as the SDK sends it: the same request on the wire.
        let url = format!("{}/{}?x-id=GetObject", self.base, super::encode_key(key));
        let request = self.signed("GET", &url, &[]).await?;
        let started = Instant::now();
        let sent = request.send().await;
        self.report(RequestClass::Get, "GetObject", key, started, &sent, None);
        match sent {
            Ok(response) => {
                self.connect_failures.store(0, Ordering::Relaxed);
                Some(response)
            }
            Err(e) => {
                // A timeout or a connection the server closed is this
                // request's; connections that keep failing are the path's.
                if e.is_connect() {
                    self.connect_failed();
                }
                None
            }
        }
    }

    /// What `response` to a GET of `key` means (see [`Fetched`]).
    async fn answer(&self, key: &str, response: reqwest::Response) -> Fetched {
        let status = response.status().as_u16();
        if status == 200 {
            return match meta_of(key, response.headers()) {
                Some(meta) if meta.sha256.is_some() || checked_by_served_only(&meta) => {
                    Fetched::Body(meta, response)
                }
                _ => Fetched::Declined,
            };
        }
        if status != 404 && classify_status(status, None) != Class::Transient {
            return Fetched::Declined;
        }
        let Some(body) = error_body(response).await else {
            return Fetched::Declined;
        };
        let code = tag(&body, "Code");
        match (status, code) {
            (404, Some("NoSuchKey")) => Fetched::Failed(StoreError::NotFound {
                key: key.to_string(),
                target: self.target.clone(),
            }),
            (404, _) => Fetched::Declined,
            (_, code) if classify_status(status, code) == Class::Transient => {
                // Worded as the SDK path words it.
                Fetched::Failed(StoreError::Unavailable {
                    target: self.target.clone(),
                    message: format!(
                        "HTTP {status} {}: {}",
                        code.unwrap_or(""),
                        tag(&body, "Message").unwrap_or("")
                    ),
                })
            }
            _ => Fetched::Declined,
        }
    }

    /// The identity to sign with, fetched again near its expiry by one
    /// request while the others wait for it.
    async fn identity(&self) -> Option<Identity> {
        let mut cached = self.identity.lock().await;
        let now = SystemTime::now();
        let expired = cached.expiry.is_some_and(|e| e <= now);
        let due = cached.expiry.is_some_and(|e| e <= now + REFRESH_BEFORE)
            && now
                .duration_since(cached.fetched)
                .is_ok_and(|d| d >= REFETCH_AFTER);
        if expired || due {
            // A fetch that fails leaves the path to the SDK for this
            // request (which reports it), and is tried again next time.
            let credentials: Credentials = self.provider.provide_credentials().await.ok()?;
            super::register_secrets(&credentials);
            *cached = Cached {
                expiry: credentials.expiry(),
                identity: credentials.into(),
                fetched: now,
            };
        }
        Some(cached.identity.clone())
    }
}

/// What `response` to a PUT of `key` means (see [`Put`]); `target`
/// names the store in errors.
async fn put_answer(
    target: &str,
    key: &str,
    size: u64,
    sha256: &str,
    pre: &super::super::Precondition,
    response: reqwest::Response,
) -> Put {
    let status = response.status().as_u16();
    if status == 200 {
        let etag = response.headers().get("etag").and_then(|v| v.to_str().ok());
        return Put::Done(ObjectMeta {
            key: key.to_string(),
            size,
            version: super::strip_etag(etag),
            sha256: Some(sha256.to_string()),
            modified: None,
            md5: etag.and_then(crate::digest::Md5::from_etag),
            crc32c: None,
            content_encoded: false,
        });
    }
    let body = error_body(response).await.unwrap_or_default();
    let code = tag(&body, "Code");
    let if_match = matches!(pre, super::super::Precondition::Matches(_));
    match (status, code) {
        (412, _) => Put::Failed(StoreError::PreconditionFailed {
            key: key.to_string(),
        }),
        // AWS answers If-Match on a missing key with 404 (SeaweedFS
        // with 412): either way the version the caller saw is gone.
        (404, Some("NoSuchKey")) if if_match => Put::Failed(StoreError::PreconditionFailed {
            key: key.to_string(),
        }),
        (400, Some("BadDigest" | "XAmzContentChecksumMismatch" | "InvalidDigest")) => {
            Put::Failed(StoreError::ChangedSinceHashed {
                what: format!("`{key}`"),
                now: format!(
                    "its content does not have sha256 {sha256}: {}",
                    tag(&body, "Message").unwrap_or("")
                ),
            })
        }
        (_, code) if classify_status(status, code) == Class::Transient => {
            Put::Failed(StoreError::Unavailable {
                target: target.to_string(),
                message: format!(
                    "HTTP {status} {}: {}",
                    code.unwrap_or(""),
                    tag(&body, "Message").unwrap_or("")
                ),
            })
        }
        // Refused, nothing written: the SDK's answer and hints.
        _ => Put::Declined,
    }
}

/// The body of an error answer (at most [`ERROR_BODY`] bytes, as text);
/// `None` if it cannot be read.
async fn error_body(mut response: reqwest::Response) -> Option<String> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        body.extend_from_slice(&chunk);
        if body.len() > ERROR_BODY {
            break;
        }
    }
    Some(String::from_utf8_lossy(&body).into_owned())
}

/// The text of the first `<name>` element of an S3 error document.
fn tag<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    let start = xml.find(&format!("<{name}>"))? + name.len() + 2;
    let len = xml[start..].find(&format!("</{name}>"))?;
    Some(&xml[start..start + len])
}

/// The signing region of an endpoint's first auth scheme if it is plain
/// SigV4 for S3 (`None` for anything else).
fn sigv4_region(first: Option<&Document>) -> Option<String> {
    let Document::Object(first) = first? else {
        return None;
    };
    let text = |k: &str| match first.get(k) {
        Some(Document::String(s)) => Some(s.as_str()),
        _ => None,
    };
    if text("name")? != "sigv4" || text("signingName").is_some_and(|n| n != "s3") {
        return None;
    }
    text("signingRegion").map(str::to_owned)
}

/// The object's metadata from a GET's headers, as the SDK path reads it;
/// `None` if one of them is not text.
fn meta_of(key: &str, headers: &reqwest::header::HeaderMap) -> Option<ObjectMeta> {
    let text = |name: &str| -> Option<Option<&str>> {
        match headers.get(name) {
            None => Some(None),
            Some(v) => v.to_str().ok().map(Some),
        }
    };
    let size = match text("content-length")? {
        Some(s) => Some(s.parse::<i64>().ok()?),
        None => None,
    };
    let sha256 = text(&format!("x-amz-meta-{SHA256_METADATA}"))?.map(str::to_owned);
    let mut meta = super::S3Store::meta(key, size, text("etag")?, sha256.as_ref());
    let sse = text("x-amz-server-side-encryption")?;
    let customer = text("x-amz-server-side-encryption-customer-algorithm")?;
    if super::sse_hides_md5(sse, customer) {
        meta.md5 = None;
    }
    Some(meta)
}

#[cfg(test)]
mod tests {
    use super::super::super::Precondition;
    use super::super::encode_key;
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn an_error_document_gives_its_code_and_message() {
        let xml = "<?xml version=\"1.0\"?><Error><Code>SlowDown</Code>\
                   <Message>Please reduce your request rate.</Message></Error>";
        assert_eq!(tag(xml, "Code"), Some("SlowDown"));
        assert_eq!(
            tag(xml, "Message"),
            Some("Please reduce your request rate.")
        );
        assert_eq!(tag(xml, "Key"), None);
        assert_eq!(tag("<Code>unterminated", "Code"), None);
    }

    #[test]
    fn a_key_is_encoded_as_s3_signs_it() {
        assert_eq!(encode_key("a/b-c_d.e~f"), "a/b-c_d.e~f");
        assert_eq!(
            encode_key("a/sp ace+eq=&?#%"),
            "a/sp%20ace%2Beq%3D%26%3F%23%25"
        );
        assert_eq!(encode_key("ü/é(1)"), "%C3%BC/%C3%A9%281%29");
    }

    fn scheme(pairs: &[(&str, &str)]) -> Document {
        let obj: HashMap<String, Document> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Document::String(v.to_string())))
            .collect();
        Document::Object(obj)
    }

    #[test]
    fn only_plain_sigv4_for_s3_is_signed_here() {
        let sigv4 = scheme(&[
            ("name", "sigv4"),
            ("signingName", "s3"),
            ("signingRegion", "eu-west-1"),
        ]);
        assert_eq!(sigv4_region(Some(&sigv4)).as_deref(), Some("eu-west-1"));
        for other in [
            scheme(&[("name", "sigv4a"), ("signingName", "s3")]),
            scheme(&[("name", "sigv4-s3express"), ("signingRegion", "us-east-1")]),
            scheme(&[
                ("name", "sigv4"),
                ("signingName", "s3-outposts"),
                ("signingRegion", "x"),
            ]),
        ] {
            assert_eq!(sigv4_region(Some(&other)), None, "{other:?}");
        }
        assert_eq!(sigv4_region(None), None);
    }

    const SHA: &str = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    fn put_answered(status: u16, headers: &[(&str, &str)], body: &str, pre: Precondition) -> Put {
        let mut built = http::Response::builder().status(status);
        for (name, value) in headers {
            built = built.header(*name, *value);
        }
        let response = reqwest::Response::from(built.body(body.to_string()).unwrap());
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(put_answer("s3://b/p", "p/k", 5, SHA, &pre, response))
    }

    fn error(code: &str) -> String {
        format!("<Error><Code>{code}</Code><Message>m</Message></Error>")
    }

    #[test]
    fn a_put_answer_means_what_the_sdk_path_makes_of_it() {
        let etag = [("etag", "\"5d41402abc4b2a76b9719d911017c592\"")];
        match put_answered(200, &etag, "", Precondition::CreateOnly) {
            Put::Done(meta) => {
                assert_eq!(meta.version, "5d41402abc4b2a76b9719d911017c592");
                assert_eq!((meta.size, meta.sha256.as_deref()), (5, Some(SHA)));
                assert!(meta.md5.is_some());
            }
            _ => panic!("a 200 is a done PUT"),
        }
        let failed = |status, code: &str, pre| match put_answered(status, &[], &error(code), pre) {
            Put::Failed(e) => Some(e),
            Put::Done(_) => panic!("{status} {code} is no done PUT"),
            Put::Declined => None,
        };
        let matches = || Precondition::Matches("v".into());
        assert!(matches!(
            failed(412, "PreconditionFailed", Precondition::CreateOnly),
            Some(StoreError::PreconditionFailed { .. })
        ));
        assert!(matches!(
            failed(404, "NoSuchKey", matches()),
            Some(StoreError::PreconditionFailed { .. })
        ));
        assert!(matches!(
            failed(400, "BadDigest", Precondition::CreateOnly),
            Some(StoreError::ChangedSinceHashed { .. })
        ));
        assert!(matches!(
            failed(503, "SlowDown", matches()),
            Some(StoreError::Unavailable { .. })
        ));
        // Refused with nothing written: for the SDK to send and explain.
        assert!(failed(403, "AccessDenied", Precondition::CreateOnly).is_none());
        assert!(failed(404, "NoSuchBucket", Precondition::CreateOnly).is_none());
    }

    #[test]
    fn an_object_with_kms_encryption_has_no_md5_to_check() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("content-length", "5".parse().unwrap());
        h.insert(
            "etag",
            "\"5d41402abc4b2a76b9719d911017c592\"".parse().unwrap(),
        );
        let meta = meta_of("k", &h).unwrap();
        assert_eq!(meta.size, 5);
        assert!(meta.md5.is_some() && meta.sha256.is_none());
        h.insert("x-amz-server-side-encryption", "aws:kms".parse().unwrap());
        assert!(meta_of("k", &h).unwrap().md5.is_none());
        h.insert("x-amz-meta-sha256", "ab".parse().unwrap());
        assert_eq!(meta_of("k", &h).unwrap().sha256.as_deref(), Some("ab"));
    }
}
