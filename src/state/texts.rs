//! The bodies a plan shows diffs of ([`crate::plan::textdiff::Wanted`]):
//! a cache file read without following a link, and a remote object read
//! once (one GET, only when small enough to show), checked to be the very
//! version planning listed and verified against its sha256.

use std::path::Path;

use crate::layout::TierPath;
use crate::plan::textdiff::{Body, RemoteRef, Wanted};
use crate::store::RemoteTarget;

use super::observe::DIFF_SIZE_CAP;

/// `(cache, remote, read_remote)` for each of `wanted`, in order. The
/// remote is read only where a wanted side names it.
pub(crate) fn read(
    cache_root: &Path,
    target: &RemoteTarget,
    wanted: &[Wanted],
) -> Vec<(Body, Body, bool)> {
    wanted
        .iter()
        .map(|w| {
            let cache = if w.cache {
                read_cache(cache_root, &w.path)
            } else {
                Body::Absent
            };
            let (remote, read) = match &w.remote {
                Some(r) => read_remote(target, &w.path, r),
                None => (Body::Absent, false),
            };
            (cache, remote, read)
        })
        .collect()
}

/// Text from bytes: UTF-8 without NUL (what `git diff` would show).
fn classify(bytes: Vec<u8>) -> Body {
    let size = bytes.len() as u64;
    if bytes.contains(&0) {
        return Body::Binary { size };
    }
    match String::from_utf8(bytes) {
        Ok(text) => Body::Text(text),
        Err(_) => Body::Binary { size },
    }
}

fn read_cache(root: &Path, path: &TierPath) -> Body {
    let file = root.join(path.as_str());
    let unavailable = |size, reason: String| Body::Unavailable { size, reason };
    let meta = match std::fs::symlink_metadata(&file) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Body::Absent,
        Err(e) => return unavailable(None, format!("cannot read the cache file: {e}")),
    };
    if !meta.is_file() {
        return unavailable(None, "the cache has no regular file there".into());
    }
    if meta.len() > DIFF_SIZE_CAP {
        return Body::TooLarge { size: meta.len() };
    }
    match std::fs::read(&file) {
        Ok(bytes) => classify(bytes),
        Err(e) => unavailable(Some(meta.len()), format!("cannot read the cache file: {e}")),
    }
}

fn read_remote(target: &RemoteTarget, path: &TierPath, want: &RemoteRef) -> (Body, bool) {
    if want.size > DIFF_SIZE_CAP {
        return (Body::TooLarge { size: want.size }, false);
    }
    let unavailable = |reason: String| Body::Unavailable {
        size: Some(want.size),
        reason,
    };
    let key = target.key(path);
    let got = crate::store::runtime().block_on(target.store.get_bytes(&key));
    let body = match got {
        Err(e) => unavailable(format!("reading the remote object failed: {e}")),
        Ok((meta, _)) if meta.version != want.version => {
            unavailable("the remote object changed since it was listed; plan again".into())
        }
        Ok((_, bytes))
            if want
                .sha256
                .is_some_and(|s| s.hex() != crate::fsutil::sha256_bytes(&bytes)) =>
        {
            unavailable("the remote object's bytes do not match its sha256".into())
        }
        Ok((_, bytes)) => classify(bytes),
    };
    (body, true)
}
