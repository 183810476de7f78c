//! GetObject's success path without the SDK's request pipeline: a GET
//! signed with `aws-sigv4` on a plain HTTP client.
//!
//! Why: a pull of thousands of small files spent more client CPU in the
//! SDK's per-request machinery (interceptors, config bags, endpoint rules
//! resolved per call, response deserialisers) than in moving the bytes,
//! and the client shares the machine's cores with the server. The same
//! signed GET costs about half as much here.
//!
//! It serves only what it can vouch for on its own: a `200` whose body the
//! landing checks end to end (the object's sha256 metadata, or a
//! single-part MD5 ETag). Everything else (an error status, a redirect, an
//! object only the server's own checksum could check, a request that
//! cannot be signed) is left to the SDK, which gives each answer its
//! meaning, so errors and their hints are the SDK path's. A failure to
//! reach the server at all turns this path off for the rest of the run:
//! the SDK may know a transport set-up this client does not
//! (`AWS_CA_BUNDLE`, say), and a real outage is then reported by it.
//!
//! The bucket's endpoint and signing region come from the SDK's own
//! endpoint rules, resolved once; any auth scheme but plain SigV4 (S3
//! Express, multi-region SigV4a) keeps every request on the SDK.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sdk_s3::config::endpoint::{Params, ResolveEndpoint};
use aws_sigv4::http_request::{
    PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode, sign,
};
use aws_smithy_runtime_api::client::identity::Identity;
use aws_smithy_types::Document;

use super::super::{ObjectMeta, SHA256_METADATA, StoreOptions, checked_by_md5};

/// Credentials this close to expiring are fetched again before use.
const REFRESH_BEFORE: Duration = Duration::from_secs(300);

pub(super) struct FastGet {
    http: reqwest::Client,
    /// The bucket's URL, without a trailing `/` (`https://b.s3.eu-west-1.
    /// amazonaws.com`, or `http://127.0.0.1:8333/b` path style).
    base: String,
    region: String,
    provider: SharedCredentialsProvider,
    /// The identity last fetched, reused until near its expiry.
    identity: Mutex<Option<(Identity, Option<SystemTime>)>>,
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

impl FastGet {
    /// The fast path for a bucket, or `None` when it cannot be set up to
    /// match the SDK exactly (then every GET takes the SDK).
    pub(super) async fn new(
        inputs: EndpointInputs<'_>,
        provider: SharedCredentialsProvider,
        options: &StoreOptions,
    ) -> Option<FastGet> {
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
        Some(FastGet {
            http,
            base: endpoint.url().trim_end_matches('/').to_string(),
            region,
            provider,
            identity: Mutex::new(None),
            off: AtomicBool::new(false),
        })
    }

    /// GETs `key` (checked by the caller). `Some`: a `200` whose body the
    /// caller lands and checks against the metadata returned; `None`: not
    /// served here, ask the SDK.
    pub(super) async fn get(&self, key: &str) -> Option<(ObjectMeta, reqwest::Response)> {
        if self.off.load(Ordering::Relaxed) {
            return None;
        }
        let identity = self.identity().await?;
        // `x-id` as the SDK sends it: the same request on the wire.
        let url = format!("{}/{}?x-id=GetObject", self.base, encode_key(key));
        let mut settings = SigningSettings::default();
        // S3's own rules: the path is encoded once (as written above) and
        // never normalised; the payload is not hashed for a GET.
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
            "GET",
            &url,
            std::iter::empty(),
            SignableBody::UnsignedPayload,
        )
        .ok()?;
        let (instructions, _) = sign(signable, &params).ok()?.into_parts();
        let mut request = self.http.get(&url);
        for (name, value) in instructions.headers() {
            request = request.header(name, value);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(_) => {
                self.off.store(true, Ordering::Relaxed);
                return None;
            }
        };
        if response.status() != reqwest::StatusCode::OK {
            return None;
        }
        let meta = meta_of(key, response.headers())?;
        (meta.sha256.is_some() || checked_by_md5(&meta)).then_some((meta, response))
    }

    /// The identity to sign with, fetched again when near its expiry.
    async fn identity(&self) -> Option<Identity> {
        let now = SystemTime::now();
        if let Some((identity, expiry)) = &*self.identity.lock().unwrap()
            && expiry.is_none_or(|e| e > now + REFRESH_BEFORE)
        {
            return Some(identity.clone());
        }
        let credentials: Credentials = self.provider.provide_credentials().await.ok()?;
        let expiry = credentials.expiry();
        let identity: Identity = credentials.into();
        *self.identity.lock().unwrap() = Some((identity.clone(), expiry));
        Some(identity)
    }
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

/// A key as the path of its URL, the way S3 signs it: every byte but
/// the unreserved ones and `/` percent-encoded (UTF-8).
pub(super) fn encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 8);
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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
    use super::*;
    use std::collections::HashMap;

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
