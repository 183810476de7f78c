//! Where a download lands ([`Landing`]): a temp file beside the
//! destination, hashed as it is written, renamed into place only once
//! verified ([`check_download`]).

use super::*;

/// Whether a download's bytes are fsynced before it is renamed into place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Fsynced, then renamed: the file at `dest` is durable (but for its
    /// directory entry, which the caller's directory fsync makes so).
    Synced,
    /// Written and renamed without an fsync: `dest` is a staging name the
    /// caller makes durable (a batch at a time) before renaming it to where
    /// a reader relies on it.
    Deferred,
}

/// Where a remote download lands: a temp file beside the destination,
/// hashed as it is written, renamed into place only once verified.
///
/// The body is held in memory up to [`Landing::SPILL`] bytes (a cache file
/// is usually far smaller), so a download does its file work in one
/// blocking-pool hop at the end: make the directory, create the temp file,
/// write, fsync, rename. A larger body spills to the
/// temp file one hop per [`Landing::SPILL`] bytes. Nothing is created on
/// disk before the body has started to arrive, and dropping a `Landing`
/// removes its temp file.
pub(crate) struct Landing {
    dest: PathBuf,
    durability: Durability,
    buf: Vec<u8>,
    /// The temp file, once a large body has spilled to it.
    spilled: Option<tempfile::NamedTempFile>,
    hasher: sha2::Sha256,
    /// For an object the server vouches for only by MD5 (no sha256
    /// metadata): the body's MD5, checked against it.
    md5: Option<md5::Md5>,
    written: u64,
}

/// The directory a destination path lands in.
pub(super) fn dest_dir(dest: &Path) -> &Path {
    match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Creates a file in `dir` with `create`, making `dir` first only when
/// the create finds it missing: it usually exists already (a pull lands
/// many files in each directory).
pub(super) fn in_dir<T>(dir: &Path, create: impl Fn() -> std::io::Result<T>) -> std::io::Result<T> {
    match create() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            create()
        }
        other => other,
    }
}

/// Writes `buf` to the temp file for `dest`, creating it (and its
/// directory) when there is none yet. A [`Durability::Deferred`] landing
/// writes `dest` itself (a staging name of the caller's, created only if
/// absent): no second temp name, no rename.
pub(super) fn spill(
    dest: &Path,
    durability: Durability,
    tmp: Option<tempfile::NamedTempFile>,
    buf: &[u8],
) -> Result<tempfile::NamedTempFile, StoreError> {
    use std::io::Write;
    let mut tmp = match tmp {
        Some(t) => t,
        None => {
            let dir = dest_dir(dest);
            match durability {
                Durability::Synced => in_dir(dir, || crate::fsutil::temp_file_in(dir))
                    .map_err(|e| StoreError::io(dir, e))?,
                Durability::Deferred => {
                    let file = in_dir(dir, || {
                        std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(dest)
                    })
                    .map_err(|e| StoreError::io(dest, e))?;
                    // Removed if the landing is dropped unfinished.
                    let path = tempfile::TempPath::try_from_path(dest).map_err(|e| {
                        let _ = std::fs::remove_file(dest);
                        StoreError::io(dest, e)
                    })?;
                    tempfile::NamedTempFile::from_parts(file, path)
                }
            }
        }
    };
    tmp.as_file_mut()
        .write_all(buf)
        .map_err(|e| StoreError::io(tmp.path(), e))?;
    Ok(tmp)
}

impl Landing {
    /// Bytes held in memory before a body spills to its temp file.
    const SPILL: usize = 4 << 20;

    /// Bodies at most this large land on the calling (async) thread when
    /// no fsync is due: a create, a write and a rename cost less than the
    /// hand-off to a blocking thread and back.
    const INLINE: usize = 256 << 10;

    pub(crate) fn new(dest: &Path, durability: Durability) -> Result<Landing, StoreError> {
        Ok(Landing {
            dest: dest.to_path_buf(),
            durability,
            buf: Vec::new(),
            spilled: None,
            hasher: sha2::Sha256::default(),
            md5: None,
            written: 0,
        })
    }

    /// Also checks the body against `meta`'s MD5 when that is all the
    /// server says of it (an object another tool wrote).
    pub(crate) fn checking_md5(mut self, meta: &ObjectMeta) -> Landing {
        if checked_by_md5(meta) {
            self.md5 = Some(md5::Md5::default());
        }
        self
    }

    pub(crate) async fn write(&mut self, chunk: &[u8]) -> Result<(), StoreError> {
        use sha2::Digest;
        self.hasher.update(chunk);
        if let Some(m) = &mut self.md5 {
            m.update(chunk);
        }
        self.written += chunk.len() as u64;
        self.buf.extend_from_slice(chunk);
        if self.buf.len() >= Self::SPILL {
            let buf = std::mem::take(&mut self.buf);
            let tmp = self.spilled.take();
            let dest = self.dest.clone();
            let durability = self.durability;
            let (tmp, mut buf) = tokio::task::spawn_blocking(move || {
                spill(&dest, durability, tmp, &buf).map(|tmp| (tmp, buf))
            })
            .await
            .map_err(|e| StoreError::task("download task", e))??;
            buf.clear();
            self.buf = buf;
            self.spilled = Some(tmp);
        }
        Ok(())
    }

    /// Verifies size and sha256 against `meta`, then writes, fsyncs and
    /// renames into `dest` (its directory's fsync is the caller's, see
    /// [`Store::get_to_file`]). Returns `meta` as landed: the sha256 and
    /// size of the bytes written (the size differs from the stored one
    /// only for an object served decompressed). Dropping a `Landing`
    /// instead removes the temp file.
    pub(crate) async fn finish(
        mut self,
        target: &str,
        meta: ObjectMeta,
    ) -> Result<ObjectMeta, StoreError> {
        use sha2::Digest;
        let found = hex::encode(self.hasher.finalize_reset());
        let md5 = self
            .md5
            .take()
            .map(|m| crate::digest::Md5(m.finalize().into()));
        check_download(target, &meta, self.written, &found, md5)?;
        let landed = ObjectMeta {
            sha256: Some(found),
            size: self.written,
            ..meta
        };
        let Landing {
            dest,
            durability,
            buf,
            spilled,
            ..
        } = self;
        let inline =
            durability == Durability::Deferred && spilled.is_none() && buf.len() <= Self::INLINE;
        let land = move || {
            let tmp = spill(&dest, durability, spilled, &buf)?;
            match durability {
                Durability::Synced => {
                    tmp.as_file()
                        .sync_all()
                        .map_err(|e| StoreError::io(tmp.path(), e))?;
                    tmp.persist(&dest)
                        .map(|_| ())
                        .map_err(|e| StoreError::io(&dest, e.error))
                }
                // Already at `dest`: keep it.
                Durability::Deferred => tmp
                    .into_temp_path()
                    .keep()
                    .map(|_| ())
                    .map_err(|e| StoreError::io(&dest, e.error)),
            }
        };
        if inline {
            land()?;
        } else {
            tokio::task::spawn_blocking(land)
                .await
                .map_err(|e| StoreError::task("download task", e))??;
        }
        Ok(landed)
    }
}

/// Checks a finished download: the length the server announced (a short
/// body is a dropped connection, worth a retry), the sha256 metadata, and
/// for an object with none, the MD5 the server gave (`md5`: the body's,
/// when it was computed, see [`Landing::checking_md5`]).
pub(crate) fn check_download(
    target: &str,
    meta: &ObjectMeta,
    written: u64,
    sha: &str,
    md5: Option<crate::digest::Md5>,
) -> Result<(), StoreError> {
    if meta.content_encoded {
        // Served decompressed: only swamp's own sha256 (never written on
        // such an object by swamp, but honoured) could check it.
        return verify_sha256(&meta.key, meta.sha256.as_deref(), sha);
    }
    if written != meta.size {
        return Err(StoreError::Short {
            key: meta.key.clone(),
            target: target.to_string(),
            got: written,
            expected: meta.size,
        });
    }
    verify_sha256(&meta.key, meta.sha256.as_deref(), sha)?;
    match (meta.sha256.as_ref(), meta.md5, md5) {
        (None, Some(expected), Some(found)) if expected != found => Err(StoreError::Integrity {
            key: meta.key.clone(),
            algorithm: "md5",
            expected: expected.hex(),
            found: found.hex(),
        }),
        _ => Ok(()),
    }
}

/// Whether only the server's MD5 can check a download of `meta`: no
/// sha256 metadata, an MD5, and served as stored.
pub(crate) fn checked_by_md5(meta: &ObjectMeta) -> bool {
    meta.sha256.is_none() && meta.md5.is_some() && !meta.content_encoded
}

/// The MD5 of a body read whole, when only an MD5 can check it.
pub(crate) fn md5_to_check(meta: &ObjectMeta, body: &[u8]) -> Option<crate::digest::Md5> {
    checked_by_md5(meta).then(|| crate::digest::Md5::of(body))
}

/// Checks the sha256 of downloaded content against the object's metadata.
pub(crate) fn verify_sha256(
    key: &str,
    expected: Option<&str>,
    found: &str,
) -> Result<(), StoreError> {
    match expected {
        Some(expected) if !expected.eq_ignore_ascii_case(found) => Err(StoreError::Integrity {
            key: key.to_string(),
            algorithm: "sha256",
            expected: expected.to_string(),
            found: found.to_string(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta_for(body: &[u8]) -> ObjectMeta {
        ObjectMeta {
            key: "k".into(),
            size: body.len() as u64,
            version: "v".into(),
            sha256: Some(crate::fsutil::sha256_bytes(body)),
            modified: None,
            md5: None,
            content_encoded: false,
        }
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_body_larger_than_the_buffer_spills_and_lands_whole() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("sub/dir/file");
        let body: Vec<u8> = (0..Landing::SPILL * 2 + 12345)
            .map(|i| (i % 251) as u8)
            .collect();
        let mut landing = Landing::new(&dest, Durability::Synced).unwrap();
        for chunk in body.chunks(64 * 1024) {
            landing.write(chunk).await.unwrap();
        }
        assert!(
            landing.spilled.is_some(),
            "a large body spills to its temp file"
        );
        let landed = landing.finish("test", meta_for(&body)).await.unwrap();
        assert_eq!(landed.sha256.unwrap(), crate::fsutil::sha256_bytes(&body));
        assert_eq!(std::fs::read(&dest).unwrap(), body);
        assert_eq!(names_in(dest.parent().unwrap()), ["file"]);
    }

    #[tokio::test]
    async fn a_download_that_fails_or_is_dropped_leaves_no_file_behind() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("file");
        // Spilled, then dropped (a cancelled transfer).
        let mut landing = Landing::new(&dest, Durability::Synced).unwrap();
        landing.write(&vec![7u8; Landing::SPILL]).await.unwrap();
        assert_eq!(names_in(dir.path()).len(), 1, "the spill made a temp file");
        drop(landing);
        assert!(names_in(dir.path()).is_empty());
        // Bytes that do not match the metadata are never renamed in.
        let mut landing = Landing::new(&dest, Durability::Synced).unwrap();
        landing.write(b"other bytes").await.unwrap();
        let e = landing
            .finish("test", meta_for(b"the bytes!!"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("sha256"), "{e}");
        assert!(names_in(dir.path()).is_empty());
    }

    #[tokio::test]
    async fn a_deferred_landing_writes_its_staging_name_and_never_one_that_exists() {
        let dir = tempfile::tempdir().unwrap();
        // Small and spilled bodies both land at the name given, nothing else.
        for (name, len) in [("small", 100), ("large", Landing::SPILL + 777)] {
            let dest = dir.path().join("sub").join(name);
            let body: Vec<u8> = (0..len).map(|i| (i % 13) as u8).collect();
            let mut landing = Landing::new(&dest, Durability::Deferred).unwrap();
            for chunk in body.chunks(64 * 1024) {
                landing.write(chunk).await.unwrap();
            }
            landing.finish("test", meta_for(&body)).await.unwrap();
            assert_eq!(std::fs::read(&dest).unwrap(), body);
        }
        assert_eq!(names_in(&dir.path().join("sub")), ["large", "small"]);
        // A name that is taken is left as it is: the landing fails.
        let taken = dir.path().join("sub/small");
        let before = std::fs::read(&taken).unwrap();
        let mut landing = Landing::new(&taken, Durability::Deferred).unwrap();
        landing.write(b"other").await.unwrap();
        landing
            .finish("test", meta_for(b"other"))
            .await
            .unwrap_err();
        assert_eq!(std::fs::read(&taken).unwrap(), before);
        // Spilled, then dropped: the staging file is removed.
        let dropped = dir.path().join("sub/dropped");
        let mut landing = Landing::new(&dropped, Durability::Deferred).unwrap();
        landing.write(&vec![1u8; Landing::SPILL]).await.unwrap();
        assert!(dropped.exists(), "the spill wrote the staging file");
        drop(landing);
        assert_eq!(names_in(&dir.path().join("sub")), ["large", "small"]);
    }
}
