//! Copies between buckets through `objects.rewrite`, following its token:
//! Google's `copyTo` refuses a large object between locations or storage
//! classes, while a rewrite copies any object, in as many calls as the
//! server needs, each returning a token to continue from.
//!
//! The client's `RewriteObjectRequest` has no `ifGenerationMatch` or
//! `ifSourceGenerationMatch`, so a rewrite made inside [`conditioned`] gets
//! them from this module's middleware on the client's HTTP stack (as
//! `gcs_stored` adds `Accept-Encoding`): create-only at the destination,
//! that very source generation, on every call of the loop.
//!
//! Each token is recorded (see [`crate::store::resume`]) as an S3 copy in
//! parts is, so a rewrite cut off continues from its last token.

use std::future::Future;

use gcloud_storage::http::objects::rewrite::RewriteObjectRequest;
use http::Extensions;
use reqwest_middleware::{Middleware, Next};

use super::{GcsStore, Scope};
use crate::store::resume::{UploadJournal, UploadRecord};
use crate::store::retry::with_retry;
use crate::store::{ObjectMeta, Precondition, StoreError};

/// The preconditions of one rewrite, as generations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Conditions {
    if_generation_match: Option<i64>,
    if_source_generation_match: Option<i64>,
}

tokio::task_local! {
    static CONDITIONS: Conditions;
}

/// Runs `fut` with every rewrite it sends carrying `conditions`.
async fn conditioned<F: Future>(conditions: Conditions, fut: F) -> F::Output {
    CONDITIONS.scope(conditions, fut).await
}

/// Adds the preconditions in scope to a rewrite's query.
pub(in crate::store) struct RewriteConditions;

#[async_trait::async_trait]
impl Middleware for RewriteConditions {
    async fn handle(
        &self,
        mut req: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        if req.url().path().contains("/rewriteTo/")
            && let Ok(c) = CONDITIONS.try_with(|c| *c)
        {
            let mut query = req.url_mut().query_pairs_mut();
            if let Some(g) = c.if_generation_match {
                query.append_pair("ifGenerationMatch", &g.to_string());
            }
            if let Some(g) = c.if_source_generation_match {
                query.append_pair("ifSourceGenerationMatch", &g.to_string());
            }
        }
        next.run(req, extensions).await
    }
}

impl GcsStore {
    /// Rewrites `from`, an object of `bucket` as a listing showed it, to
    /// `to` in this bucket, `pre` on the destination, pinned to the
    /// listed generation; calls again with the returned token until the
    /// server says it is done. No metadata is given, so the copy keeps
    /// the source's (its sha256 included).
    ///
    /// Given a `journal`, each token is recorded as it comes (a rewrite
    /// between locations or storage classes takes a call per so many
    /// bytes, and a large one many), and a rewrite recorded of this very
    /// source generation to this key continues from its token, not from
    /// byte 0. A recorded token the server refuses starts the rewrite over.
    pub(super) async fn rewrite_from(
        &self,
        bucket: &str,
        from: &ObjectMeta,
        to: &str,
        pre: &Precondition,
        journal: Option<&UploadJournal>,
    ) -> Result<ObjectMeta, StoreError> {
        let source_generation = from.version.parse::<i64>().ok();
        let conditions = Conditions {
            if_generation_match: Self::generation_match(to, pre)?,
            if_source_generation_match: source_generation,
        };
        let client = self.client().await?;
        let mut kept = Kept::read(
            journal,
            format!("{bucket}/{}@{}", from.key, from.version),
            to,
            from,
        );
        let mut req = RewriteObjectRequest {
            source_bucket: bucket.to_string(),
            source_object: from.key.clone(),
            destination_bucket: self.bucket.clone(),
            destination_object: to.to_string(),
            source_generation,
            rewrite_token: kept.token(),
            ..RewriteObjectRequest::default()
        };
        loop {
            let sent = with_retry(&self.options.retry, |_| async {
                conditioned(conditions, client.rewrite_object(&req))
                    .await
                    .map_err(|e| match self.map_err(e, Scope::Object(&from.key)) {
                        // 412 is about the destination, 404 about the source.
                        StoreError::PreconditionFailed { .. } => StoreError::PreconditionFailed {
                            key: to.to_string(),
                        },
                        e => e,
                    })
            })
            .await;
            let done = match sent {
                // A token of an earlier run the server no longer takes
                // (expired, or made under other conditions): from byte 0.
                Err(e) if kept.record.is_some() && !settles(&e) => {
                    tracing::debug!(key = to, error = %e, "a recorded rewrite is refused; starting over");
                    req.rewrite_token = None;
                    kept.forget()?;
                    continue;
                }
                sent => sent?,
            };
            let server = |message: &str| StoreError::Server {
                target: crate::store::Store::describe(self),
                key: Some(to.to_string()),
                message: message.into(),
            };
            if done.done {
                kept.forget()?;
                return done
                    .resource
                    .as_ref()
                    .map(Self::meta)
                    .ok_or_else(|| server("a finished rewrite returned no object"));
            }
            let Some(token) = done.rewrite_token else {
                return Err(server(
                    "an unfinished rewrite returned no token to continue from",
                ));
            };
            req.rewrite_token = Some(token.clone());
            kept.keep(token, done.total_bytes_rewritten)?;
        }
    }
}

/// A rewrite's record in its journal, if it has one.
struct Kept<'a> {
    journal: Option<&'a UploadJournal>,
    record: Option<UploadRecord>,
    /// `bucket/key@generation`.
    source: String,
    to: &'a str,
    from: &'a ObjectMeta,
}

impl<'a> Kept<'a> {
    /// The rewrite of `source` to `to` the journal records, if any.
    fn read(
        journal: Option<&'a UploadJournal>,
        source: String,
        to: &'a str,
        from: &'a ObjectMeta,
    ) -> Kept<'a> {
        let record = journal
            .and_then(UploadJournal::read)
            .filter(|r| continues(r, &source, to, from));
        Kept {
            journal,
            record,
            source,
            to,
            from,
        }
    }

    /// The token to continue from.
    fn token(&self) -> Option<String> {
        self.record.as_ref().and_then(|r| r.token.clone())
    }

    /// Records `token`, answered with `rewritten` bytes copied.
    fn keep(&mut self, token: String, rewritten: i64) -> Result<(), StoreError> {
        let Some(j) = self.journal else {
            return Ok(());
        };
        let (source, to, from) = (&self.source, self.to, self.from);
        let r = self
            .record
            .get_or_insert_with(|| started(j, source, to, from, &token));
        r.token = Some(token);
        r.rewritten = u64::try_from(rewritten).unwrap_or(0);
        j.save(r)?;
        #[cfg(feature = "failpoints")]
        if fail::eval("rewrite-token-recorded", |_| ()).is_some() {
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
        }
        Ok(())
    }

    /// Forgets the rewrite (done, or to start over).
    fn forget(&mut self) -> Result<(), StoreError> {
        self.record = None;
        self.journal.map_or(Ok(()), UploadJournal::clear)
    }
}

/// Whether `record` is of a rewrite of `source` (`bucket/key@generation`)
/// to `to`, of `from`'s size and sha256, with a token to continue from.
fn continues(record: &UploadRecord, source: &str, to: &str, from: &ObjectMeta) -> bool {
    record.token.is_some()
        && record.source.as_deref() == Some(source)
        && record.key == to
        && record.size == from.size
        && from
            .sha256
            .as_deref()
            .is_some_and(|s| s.eq_ignore_ascii_case(&record.sha256))
}

/// An answer to a rewrite that stands whatever token it carried: the
/// destination taken (412), the source gone (404), access refused.
fn settles(e: &StoreError) -> bool {
    matches!(
        e,
        StoreError::PreconditionFailed { .. }
            | StoreError::NotFound { .. }
            | StoreError::Denied { .. }
            | StoreError::NoSuchBucket { .. }
    )
}

/// The record of a rewrite of `from` (`source`) to `to` just given its
/// first token: named in plans by a hash of that token.
fn started(
    journal: &UploadJournal,
    source: &str,
    to: &str,
    from: &ObjectMeta,
    token: &str,
) -> UploadRecord {
    UploadRecord {
        path: journal.path().to_string(),
        key: to.to_string(),
        upload_id: format!(
            "gcs-rewrite-{}",
            &crate::fsutil::sha256_bytes(token.as_bytes())[..16]
        ),
        session: None,
        source: Some(source.to_string()),
        token: None,
        rewritten: 0,
        size: from.size,
        sha256: from.sha256.clone().unwrap_or_default(),
        part_size: 0,
        started: crate::clock::now_secs(),
        parts: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Stands in for the network: keeps each URL sent, answers 200.
    struct Seen(Arc<Mutex<Vec<String>>>);

    #[async_trait::async_trait]
    impl Middleware for Seen {
        async fn handle(
            &self,
            req: reqwest::Request,
            _: &mut Extensions,
            _: Next<'_>,
        ) -> reqwest_middleware::Result<reqwest::Response> {
            self.0.lock().unwrap().push(req.url().to_string());
            Ok(http::Response::new("{}").into())
        }
    }

    fn sent(url: &str, conditions: Option<Conditions>) -> String {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(RewriteConditions)
            .with(Seen(seen.clone()))
            .build();
        let send = async { client.post(url).send().await.map(|_| ()) };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        match conditions {
            Some(c) => rt.block_on(conditioned(c, send)).unwrap(),
            None => rt.block_on(send).unwrap(),
        }
        let urls = seen.lock().unwrap();
        urls[0].clone()
    }

    #[test]
    fn a_rewrite_in_scope_carries_both_generations_and_nothing_else_does() {
        let rewrite = "http://gcs/storage/v1/b/a/o/k/rewriteTo/b/b/o/k?rewriteToken=t";
        let c = Conditions {
            if_generation_match: Some(0),
            if_source_generation_match: Some(17),
        };
        assert_eq!(
            sent(rewrite, Some(c)),
            format!("{rewrite}&ifGenerationMatch=0&ifSourceGenerationMatch=17")
        );
        // Out of scope, and a request that is not a rewrite, go as built.
        assert_eq!(sent(rewrite, None), rewrite);
        let copy = "http://gcs/storage/v1/b/a/o/k/copyTo/b/b/o/k";
        assert_eq!(sent(copy, Some(c)), copy);
    }
}
