//! Each request the SDK sends, reported to [`crate::telemetry`]: an
//! interceptor that notes the method, path and time as a request leaves
//! and reports it, with the status, once its attempt ends (answered or
//! not).

use std::time::Instant;

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};

use crate::telemetry::{Class, Request};

#[derive(Debug)]
pub(super) struct Traced {
    pub(super) bucket: String,
    /// Path-style URLs (`/bucket/key`) rather than virtual-host ones.
    pub(super) path_style: bool,
}

/// What an attempt's request was, kept from before it was sent.
#[derive(Debug, Clone)]
struct Sent {
    started: Instant,
    method: String,
    key: String,
    bytes: Option<u64>,
}

impl Storable for Sent {
    type Storer = StoreReplace<Self>;
}

impl Traced {
    /// The object key a request's path names (the path without the
    /// bucket, percent-decoded), or a listing's prefix; nothing else of the
    /// query (a presigned one carries a signature).
    fn key_of(&self, uri: &str) -> String {
        let query = uri.split_once('?').map_or("", |(_, q)| q);
        if query.contains("list-type=") || query.contains("uploads") {
            let prefix = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("prefix="))
                .unwrap_or("");
            return percent_encoding::percent_decode_str(prefix)
                .decode_utf8_lossy()
                .into_owned();
        }
        let path = uri
            .split_once("://")
            .map_or(uri, |(_, rest)| rest.find('/').map_or("", |at| &rest[at..]));
        let path = path.split(['?', '#']).next().unwrap_or("");
        let path = path.trim_start_matches('/');
        let path = if self.path_style {
            path.strip_prefix(self.bucket.as_str())
                .map_or(path, |p| p.trim_start_matches('/'))
        } else {
            path
        };
        percent_encoding::percent_decode_str(path)
            .decode_utf8_lossy()
            .into_owned()
    }
}

/// The class of an S3 operation (by its name; by its method when the name
/// is one swamp does not send).
fn class_of(operation: &str, method: &str) -> Class {
    match operation {
        "ListObjectsV2"
        | "ListObjects"
        | "ListMultipartUploads"
        | "ListParts"
        | "ListObjectVersions" => Class::List,
        "GetObject" => Class::Get,
        "CopyObject" | "UploadPartCopy" => Class::Copy,
        "PutObject" | "CreateMultipartUpload" | "UploadPart" | "CompleteMultipartUpload" => {
            Class::Put
        }
        "DeleteObject" | "DeleteObjects" | "AbortMultipartUpload" => Class::Delete,
        _ => match method {
            "PUT" | "POST" => Class::Put,
            "DELETE" => Class::Delete,
            _ => Class::Head,
        },
    }
}

impl Intercept for Traced {
    fn name(&self) -> &'static str {
        "swamp::telemetry"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request();
        let bytes = request
            .headers()
            .get("content-length")
            .and_then(|v| v.parse().ok());
        cfg.interceptor_state().store_put(Sent {
            started: Instant::now(),
            method: request.method().to_string(),
            key: self.key_of(request.uri()),
            bytes,
        });
        Ok(())
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // An attempt that failed before it was sent (signing, say) sent
        // nothing.
        let Some(sent) = cfg.load::<Sent>().cloned() else {
            return Ok(());
        };
        let operation = cfg.load::<Metadata>().map_or("", |m| m.name());
        let response = context.response();
        let status = response.map(|r| r.status().as_u16());
        let received = response.and_then(|r| {
            r.headers()
                .get("content-length")
                .and_then(|v| v.parse::<u64>().ok())
        });
        let error = match (status, context.output_or_error()) {
            (None, Some(Err(e))) => Some(e.to_string()),
            _ => None,
        };
        let class = class_of(operation, &sent.method);
        Request {
            class,
            op: operation,
            bucket: &self.bucket,
            key: &sent.key,
            status,
            elapsed: sent.started.elapsed(),
            bytes: if class == Class::Get {
                received
            } else {
                sent.bytes
            },
            error: error.as_deref(),
        }
        .sent();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_names_the_key_without_bucket_or_query() {
        let path_style = Traced {
            bucket: "bkt".into(),
            path_style: true,
        };
        assert_eq!(
            path_style
                .key_of("http://127.0.0.1:8333/bkt/a/b%20c?x-id=GetObject&X-Amz-Signature=f00"),
            "a/b c"
        );
        assert_eq!(
            path_style.key_of("http://127.0.0.1:8333/bkt?list-type=2&prefix=swamp%2Flab%2F"),
            "swamp/lab/"
        );
        let virtual_host = Traced {
            bucket: "bkt".into(),
            path_style: false,
        };
        assert_eq!(
            virtual_host.key_of("https://bkt.s3.amazonaws.com/bkt/x"),
            "bkt/x"
        );
        assert_eq!(class_of("CopyObject", "PUT"), Class::Copy);
        assert_eq!(class_of("GetBucketVersioning", "GET"), Class::Head);
    }
}
