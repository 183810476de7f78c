//! [`StoreError`]: errors from any store, each naming what failed (key,
//! bucket or endpoint) and what to do about it.

use super::*;

/// Errors from any store. Messages name what failed (key, bucket or
/// endpoint) and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "precondition failed for `{key}`: it changed (or appeared) since it was observed; plan again"
    )]
    PreconditionFailed { key: String },
    #[error("`{key}` does not exist in {target}")]
    NotFound { key: String, target: String },
    #[error(
        "cannot reach {target}: {message}; check that the endpoint is right and the server is up"
    )]
    Unreachable { target: String, message: String },
    #[error(
        "{target} is unavailable or throttling ({message}) and kept failing after retries; try again later"
    )]
    Unavailable { target: String, message: String },
    #[error("{target} refused access ({message}); {hint}")]
    Denied {
        target: String,
        message: String,
        hint: String,
    },
    /// Where the bucket's name came from is the caller's to say.
    #[error("bucket `{bucket}` does not exist at {target}")]
    NoSuchBucket { bucket: String, target: String },
    #[error("invalid {kind} bucket name `{bucket}` (3-63 lowercase letters, digits, `-`, `.`)")]
    InvalidBucketName { kind: &'static str, bucket: String },
    #[error("no AWS region for {target}")]
    NoRegion { target: String },
    /// The server refused to copy `key` in one request (over 5 GiB on
    /// AWS); the S3 store copies it in parts instead.
    #[error("`{key}` is too large to copy in one request")]
    CopyTooLarge { key: String },
    #[error(
        "`{key}` is corrupt: its content has {algorithm} {found} but the server says {expected}; nothing was written locally"
    )]
    Integrity {
        key: String,
        /// `sha256` (swamp's metadata) or `md5` (what the server keeps).
        algorithm: &'static str,
        expected: String,
        found: String,
    },
    #[error(
        "{target} looks down: {failures} attempt(s) in a row failed over {secs:.1}s ({message}); nothing more was sent to it"
    )]
    Down {
        target: String,
        message: String,
        failures: u32,
        secs: f64,
    },
    #[error("`{key}` arrived corrupt ({detail}); nothing was written locally")]
    Corrupt { key: String, detail: String },
    #[error(
        "`{key}` arrived with {got} bytes where {target} announced {expected} (the connection dropped, or the object changed meanwhile); nothing was written locally"
    )]
    Short {
        key: String,
        target: String,
        got: u64,
        expected: u64,
    },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "refusing `{key}`: it lies outside {scope}, the prefix and namespace this command works in; nothing was changed"
    )]
    OutOfScope { key: String, scope: String },
    /// A key no object may have (see [`check_key`]).
    #[error("refusing object key {key:?}: {reason}")]
    BadKey { key: String, reason: String },
    /// The file to upload is not the content the caller hashed: it was
    /// written to since.
    #[error("not uploading {what}: it changed since it was hashed ({now}); plan again")]
    ChangedSinceHashed {
        /// The file and the object it was going to, in words.
        what: String,
        /// What it is now, in words (`sha256 …`, `1234 bytes`, `longer`).
        now: String,
    },
    /// A filesystem store's object is a symlink, never followed.
    #[error("`{key}` is a symlink ({}); objects must be regular files, remove or replace it", .path.display())]
    Symlink { key: String, path: PathBuf },
    /// A filesystem store's object is a directory, FIFO or device.
    #[error("`{key}` is not a regular file ({}); remove it or choose another key", .path.display())]
    NotAFile { key: String, path: PathBuf },
    /// A file in a filesystem store whose name cannot be a key.
    #[error(
        "{} has a name that is not UTF-8 and cannot be an object key; rename or remove it",
        .path.display()
    )]
    NotUtf8 { path: PathBuf },
    /// A directory removed again and again under a filesystem store's
    /// write or lock.
    #[error("{} kept disappearing while {doing}", .path.display())]
    KeptDisappearing { path: PathBuf, doing: String },
    #[error("cannot list {}: {source}", .path.display())]
    CannotList {
        path: PathBuf,
        #[source]
        source: walkdir::Error,
    },
    /// The server answered with an error of no kind above.
    #[error("{target}: {}{message}", in_key(.key))]
    Server {
        target: String,
        key: Option<String>,
        message: String,
    },
    /// A request that failed without an answer from the server, for a
    /// reason other than reaching it (it could not be built or sent).
    #[error("{target}: {message}")]
    Request { target: String, message: String },
    /// One key of a batch delete the server refused.
    #[error("{target}: could not delete `{key}`: {message}")]
    DeleteFailed {
        target: String,
        key: String,
        message: String,
    },
    /// A multipart upload aborted or expired before its completion.
    #[error(
        "{target}: the multipart upload of `{key}` was gone before it could be completed (aborted, or expired by a lifecycle rule); nothing was written, run it again"
    )]
    UploadGone { target: String, key: String },
    /// The `local` datastore has no object store to open.
    #[error(
        "the `local` datastore is the repository's own .swamp/ directory and has no object store; use `swamp datastore setup` to move it to a filesystem, s3 or gcs datastore"
    )]
    NoObjectStore,
    #[error("{target} cannot copy from another bucket server-side")]
    NoCrossBucketCopy { target: String },
    #[error("endpoint {endpoint:?} must name an absolute directory (file:///path)")]
    RelativeEndpoint { endpoint: String },
    /// Work handed to another task or thread that failed there.
    #[error("{what} failed: {source}")]
    Task {
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// "`key`: " where a message names the key, else nothing.
pub(super) fn in_key(key: &Option<String>) -> String {
    key.as_ref().map(|k| format!("`{k}`: ")).unwrap_or_default()
}

impl StoreError {
    /// The file `src` going to `key` hashed to `found`, not the `expected`
    /// sha256 it was planned with.
    pub(crate) fn hashed_otherwise(
        src: &std::path::Path,
        key: &str,
        found: &str,
        expected: &str,
    ) -> StoreError {
        StoreError::ChangedSinceHashed {
            what: format!("{} to `{key}`", src.display()),
            now: format!("its content has sha256 {found}, not {expected}"),
        }
    }

    /// Whether trying the same request again may succeed (see [`retry`]).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            StoreError::Unreachable { .. } | StoreError::Unavailable { .. }
        )
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn task(
        what: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> StoreError {
        StoreError::Task {
            what,
            source: Box::new(source),
        }
    }
}

/// An error with its sources on one line, so "connection refused" is not
/// hidden behind "error sending request" (sources whose text is already
/// there are skipped).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
