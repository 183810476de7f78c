//! Each request the GCS client sends, reported to [`crate::telemetry`]: a
//! middleware on the client's HTTP stack, which every JSON-API call
//! (listings, metadata, media, uploads, copies, deletes) goes through.

use std::time::Instant;

use http::Extensions;
use reqwest_middleware::{Middleware, Next};

use crate::telemetry::{Class, Request};

pub(super) struct Traced;

#[async_trait::async_trait]
impl Middleware for Traced {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let named = Named::of(req.method().as_str(), req.url());
        let sent_bytes = req
            .body()
            .and_then(|b| b.as_bytes())
            .map(|b| b.len() as u64);
        let started = Instant::now();
        let answer = next.run(req, extensions).await;
        let error = answer.as_ref().err().map(|e| e.to_string());
        Request {
            class: named.class,
            op: named.op,
            bucket: &named.bucket,
            key: &named.key,
            status: answer.as_ref().ok().map(|r| r.status().as_u16()),
            elapsed: started.elapsed(),
            bytes: if named.class == Class::Get {
                answer.as_ref().ok().and_then(|r| r.content_length())
            } else {
                sent_bytes
            },
            error: error.as_deref(),
        }
        .sent();
        answer
    }
}

/// A JSON-API request, named from its method and URL.
#[derive(Debug, PartialEq)]
struct Named {
    class: Class,
    op: &'static str,
    bucket: String,
    /// The object, or a listing's prefix; never the query string.
    key: String,
}

impl Named {
    fn of(method: &str, url: &reqwest::Url) -> Named {
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let query = |name: &str| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        let path = url.path();
        let upload = path.contains("/upload/storage/");
        // `…/b/<bucket>[/o[/<object>[/copyTo|rewriteTo/…]]]`
        let after_b = path.split_once("/b/").map_or("", |(_, rest)| rest);
        let (bucket, rest) = after_b.split_once('/').unwrap_or((after_b, ""));
        let object = rest.strip_prefix("o/").unwrap_or("");
        let (object, copied) = match object
            .split_once("/copyTo/")
            .or_else(|| object.split_once("/rewriteTo/"))
        {
            Some((source, _)) => (source, true),
            None => (object, false),
        };
        let (class, op) = if upload {
            (Class::Put, "objects.insert")
        } else if copied {
            (Class::Copy, "objects.copy")
        } else if method == "DELETE" {
            (Class::Delete, "objects.delete")
        } else if object.is_empty() && method == "GET" {
            (Class::List, "objects.list")
        } else if method == "GET" && query("alt").as_deref() == Some("media") {
            (Class::Get, "objects.get(media)")
        } else if method == "GET" {
            (Class::Head, "objects.get")
        } else {
            (Class::Put, "objects.patch")
        };
        let key = match class {
            // A multipart upload names its object in the body.
            Class::Put if upload => query("name")
                .or_else(crate::telemetry::requests::written_key)
                .unwrap_or_default(),
            Class::List => query("prefix").unwrap_or_default(),
            _ => decode(object),
        };
        Named {
            class,
            op,
            bucket: decode(bucket),
            key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(method: &str, url: &str) -> (Class, String, String) {
        let n = Named::of(method, &reqwest::Url::parse(url).unwrap());
        (n.class, n.bucket, n.key)
    }

    #[test]
    fn requests_are_named_by_their_url() {
        let base = "http://127.0.0.1:4443/storage/v1/b/bkt";
        let s = |v: &str| v.to_string();
        assert_eq!(
            named("GET", &format!("{base}/o?prefix=p%2Fns%2F&pageToken=x")),
            (Class::List, s("bkt"), s("p/ns/"))
        );
        assert_eq!(
            named("GET", &format!("{base}/o/p%2Fa%20b?alt=media&generation=3")),
            (Class::Get, s("bkt"), s("p/a b"))
        );
        assert_eq!(
            named("GET", &format!("{base}/o/p%2Fa")),
            (Class::Head, s("bkt"), s("p/a"))
        );
        assert_eq!(
            named("DELETE", &format!("{base}/o/p%2Fa?ifGenerationMatch=3")),
            (Class::Delete, s("bkt"), s("p/a"))
        );
        assert_eq!(
            named("POST", &format!("{base}/o/p%2Fa/copyTo/b/bkt/o/p%2Ft")),
            (Class::Copy, s("bkt"), s("p/a"))
        );
        assert_eq!(
            named(
                "POST",
                "http://127.0.0.1:4443/upload/storage/v1/b/bkt/o?uploadType=multipart&name=p%2Fx"
            ),
            (Class::Put, s("bkt"), s("p/x"))
        );
    }
}
