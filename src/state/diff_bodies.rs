//! The bodies a plan shows diffs of: a cache file read without following
//! a link, and a remote object read once (one GET, only when small enough
//! to show), checked to be the very version planning listed and verified
//! against its sha256.

use std::path::Path;

use crate::digest::Sha256;
use crate::layout::TierPath;
use crate::store::RemoteTarget;

use super::observe::DIFF_SIZE_CAP;

/// One side of a file as read for its diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body {
    /// No file on this side (deleted).
    Absent,
    Text(String),
    Binary {
        size: u64,
    },
    TooLarge {
        size: u64,
    },
    Unavailable {
        size: Option<u64>,
        reason: String,
    },
}

impl Body {
    pub(crate) fn size(&self) -> Option<u64> {
        match self {
            Body::Absent => None,
            Body::Text(t) => Some(t.len() as u64),
            Body::Binary { size } | Body::TooLarge { size } => Some(*size),
            Body::Unavailable { size, .. } => *size,
        }
    }
}

/// The remote object one side of a diff is, as planning saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRef {
    pub version: String,
    pub size: u64,
    pub sha256: Option<Sha256>,
}

/// `(cache, remote, read_remote)` for each file of `wanted` (its path,
/// whether to read the cache file, and the remote object to read, if
/// any), in order.
pub(crate) fn read<'a>(
    cache_root: &Path,
    target: &RemoteTarget,
    wanted: impl Iterator<Item = (&'a TierPath, bool, Option<&'a RemoteRef>)>,
) -> Vec<(Body, Body, bool)> {
    wanted
        .map(|(path, cache, remote)| {
            let cache = if cache {
                read_cache(cache_root, path)
            } else {
                Body::Absent
            };
            let (remote, read) = match remote {
                Some(r) => read_remote(target, path, r),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{fs_target, put, tp};

    fn listed(meta: &crate::store::ObjectMeta, body: &[u8]) -> RemoteRef {
        RemoteRef {
            version: meta.version.clone(),
            size: body.len() as u64,
            sha256: Some(Sha256::of(body)),
        }
    }

    #[test]
    fn a_remote_side_is_shown_only_as_listed_and_as_its_sha256_says() {
        let dir = tempfile::tempdir().unwrap();
        let t = fs_target(dir.path());
        let path = tp("outputs/a.txt");
        let meta = put(&t, "outputs/a.txt", b"remote text\n");
        let want = listed(&meta, b"remote text\n");
        let (body, read) = read_remote(&t, &path, &want);
        assert!(read);
        assert_eq!(body, Body::Text("remote text\n".into()));

        // Bytes that are not what the listing's sha256 says.
        let lying = RemoteRef {
            sha256: Some(Sha256::of(b"something else")),
            ..want.clone()
        };
        match read_remote(&t, &path, &lying).0 {
            Body::Unavailable { reason, .. } => assert!(reason.contains("sha256"), "{reason}"),
            other => panic!("shown unverified: {other:?}"),
        }

        // Replaced since it was listed: another version (another size, so
        // another version on a directory store whatever the clock says).
        put(&t, "outputs/a.txt", b"newer remote text\n");
        match read_remote(&t, &path, &want).0 {
            Body::Unavailable { reason, .. } => {
                assert!(reason.contains("changed since it was listed"), "{reason}")
            }
            other => panic!("shown another version: {other:?}"),
        }
    }
}
