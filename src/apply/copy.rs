//! The copy executor: a remote source's object copied to the target's key
//! when a datastore moves between buckets, prefixes or providers. On one
//! provider and endpoint the server copies it (the same bucket, or another
//! one named as the source); otherwise it is streamed through this machine,
//! a small object in memory and a large one through a spool file in
//! `.swamp/state/` (never the cache, so a lazy clone moves without
//! hydrating), uploaded resumably. Every copy is create-only at the
//! destination, and its sha256 is the plan's or it fails.

use crate::digest::Sha256;
use crate::layout::TierPath;
use crate::plan::action::CopyRemote;
use crate::state::BaseEntry;
use crate::store::{ObjectMeta, Precondition, RemoteTarget, StoreError};

use super::remote::{BaseChange, Remotes, SyncActionError, store_err, verify_landed};

/// Objects up to this size are streamed in memory; larger ones through a
/// spool file (so memory stays bounded by the transfers in flight).
const IN_MEMORY: u64 = 1 << 20;

/// Copies a source remote's object to the target, create-only, checking
/// the copy holds the sha256 the plan carries.
pub(super) async fn copy_remote(
    action: &CopyRemote,
    remotes: &Remotes<'_>,
) -> Result<BaseChange, SyncActionError> {
    let CopyRemote {
        path,
        source,
        sha256,
        size,
        in_cache,
        streamed,
        ..
    } = action;
    let from = remotes.source(*source, path)?;
    let to = remotes.target(path)?;
    let copied = if *streamed {
        stream(from, to, path, *sha256, *size, remotes).await
    } else {
        server_side(from, to, action, &remotes.resume)
            .await
            .map_err(store_err(path))
    };
    let meta = match copied {
        Ok(meta) => meta,
        // Already there (a rerun after a kill, or a retry meeting its own
        // success): adopted when it is the same content.
        Err(SyncActionError::Store {
            source: StoreError::PreconditionFailed { .. },
            ..
        }) => adopt(to, path, *sha256).await?,
        Err(e) => return Err(e),
    };
    holds(
        path,
        *sha256,
        meta.sha256.as_deref().and_then(Sha256::parse),
    )?;
    // The cache holds it (moved earlier in this plan, or staying where it
    // is): both sides agree.
    Ok(if *in_cache {
        BaseChange::Set(
            path.clone(),
            BaseEntry {
                sha256: *sha256,
                size: *size,
                version: meta.version.into(),
            },
        )
    } else {
        // Only the remote holds it: recorded at the version written, so
        // the next plan need not record it again.
        BaseChange::SetUnhydrated(
            path.clone(),
            crate::state::Unhydrated {
                size: *size,
                version: meta.version.into(),
                sha256: Some(Box::new(*sha256)),
                served: None,
            },
        )
    })
}

/// One request to the server (within the bucket, or from the source's),
/// reading the version the plan saw: no request reads the source first.
async fn server_side(
    from: &RemoteTarget,
    to: &RemoteTarget,
    action: &CopyRemote,
    resume: &Option<super::remote::ResumeDirs>,
) -> Result<ObjectMeta, StoreError> {
    let Some(bucket) = from.placement.datastore.bucket() else {
        return Err(StoreError::NoCrossBucketCopy {
            target: from.url.clone(),
        });
    };
    let known = ObjectMeta {
        key: from.key(&action.path),
        size: action.size,
        version: action.version.to_string(),
        sha256: Some(action.sha256.hex()),
        modified: None,
        md5: None,
        crc32c: None,
        content_encoded: false,
    };
    // A copy in parts (S3 above 5 GiB) or in calls (a GCS rewrite between
    // locations) is recorded, as an upload is, so that a rerun copies only
    // what the server lacks.
    let journal = resume
        .as_ref()
        .map(|d| crate::store::resume::UploadJournal::new(&d.uploads, action.path.as_str()));
    to.store
        .copy_from_bucket(
            bucket,
            &known,
            &to.key(&action.path),
            &Precondition::CreateOnly,
            journal.as_ref(),
        )
        .await
}

/// GET from the source, PUT to the target, the bytes checked in between
/// (a spool file as a download's landed file is, by [`verify_landed`]).
async fn stream(
    from: &RemoteTarget,
    to: &RemoteTarget,
    path: &TierPath,
    sha256: Sha256,
    size: u64,
    remotes: &Remotes<'_>,
) -> Result<ObjectMeta, SyncActionError> {
    let (src, dst) = (from.key(path), to.key(path));
    let spool = remotes.resume.as_ref().map(|d| (&d.spool, &d.uploads));
    let Some((spool, uploads)) = spool.filter(|_| size > IN_MEMORY) else {
        let (_, bytes) = from.store.get_bytes(&src).await.map_err(store_err(path))?;
        holds(path, sha256, Some(Sha256::of(&bytes)))?;
        return to
            .store
            .put_bytes_hashed(&dst, bytes, &sha256.hex(), &Precondition::CreateOnly)
            .await
            .map_err(store_err(path));
    };
    std::fs::create_dir_all(spool).map_err(|source| SyncActionError::Io {
        path: path.clone(),
        source,
    })?;
    let file = spool.join(format!("{}.body", sha256.hex()));
    let result = async {
        let landed = from
            .store
            .get_to_file(&src, &file)
            .await
            .map_err(store_err(path))?;
        verify_landed(&file, path, landed.sha256, Some(sha256))?;
        let journal = crate::store::resume::UploadJournal::new(uploads, path.as_str());
        to.store
            .put_file_resumable(
                &dst,
                &file,
                &sha256.hex(),
                &Precondition::CreateOnly,
                &journal,
            )
            .await
            .map_err(store_err(path))
    }
    .await;
    let _ = std::fs::remove_file(&file);
    result
}

/// What the target holds at `path` when a create-only copy found it taken:
/// the copy (adopted) when it has the plan's sha256, else the conflict.
async fn adopt(
    to: &RemoteTarget,
    path: &TierPath,
    sha256: Sha256,
) -> Result<ObjectMeta, SyncActionError> {
    let key = to.key(path);
    match to.store.head(&key).await.map_err(store_err(path))? {
        Some(m) if m.sha256.as_deref().and_then(Sha256::parse) == Some(sha256) => Ok(m),
        _ => Err(SyncActionError::Store {
            path: path.clone(),
            source: StoreError::PreconditionFailed { key },
        }),
    }
}

/// Bytes read, or an object written, hold the plan's sha256 (`found`).
fn holds(path: &TierPath, expected: Sha256, found: Option<Sha256>) -> Result<(), SyncActionError> {
    if found == Some(expected) {
        return Ok(());
    }
    Err(SyncActionError::Integrity {
        path: path.clone(),
        expected: expected.hex(),
        found: found.map_or_else(|| "none".into(), |f| f.hex()),
    })
}
