//! Reads of an object as it is stored. GCS serves an object stored
//! gzip-compressed decompressed ("decompressive transcoding") unless the
//! request accepts gzip; decompressed, neither its stored size nor its
//! MD5 or CRC32C can check the bytes. The GCS client builds its requests
//! itself, so a read made inside [`as_stored`] gets `Accept-Encoding:
//! gzip` from this middleware on the client's HTTP stack.

use std::future::Future;

use http::Extensions;
use reqwest_middleware::{Middleware, Next};

tokio::task_local! {
    static AS_STORED: ();
}

/// Runs `fut` with every request it makes asking for the bytes as stored.
pub(super) async fn as_stored<F: Future>(fut: F) -> F::Output {
    AS_STORED.scope((), fut).await
}

pub(super) struct AsStored;

#[async_trait::async_trait]
impl Middleware for AsStored {
    async fn handle(
        &self,
        mut req: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        if AS_STORED.try_with(|_| ()).is_ok() {
            req.headers_mut().insert(
                http::header::ACCEPT_ENCODING,
                http::HeaderValue::from_static("gzip"),
            );
        }
        next.run(req, extensions).await
    }
}
