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
    /// The server's hashes of the body as it came, when they check it.
    served: ServedHashes,
    /// The body comes gzip-compressed (an object stored so, read as
    /// stored): decoded before it lands.
    gunzip: Option<flate2::write::MultiGzDecoder<Vec<u8>>>,
    /// Set with `gunzip`, and kept once it is done.
    gunzipped: bool,
    /// Bytes of the body as it came.
    received: u64,
    /// Bytes landed (decoded, when the body is gzip-compressed).
    written: u64,
}

/// The MD5 and CRC32C of a body as the server sent it, computed only
/// where they are the check (see [`checked_by_served`]).
#[derive(Default)]
struct ServedHashes {
    md5: Option<md5::Md5>,
    crc32c: Option<crate::digest::Crc32cHasher>,
}

/// What a body came to, as [`check_download`] checks it.
pub(crate) struct Received {
    /// Bytes as the server sent them.
    pub(crate) bytes: u64,
    /// Sent as stored, not decompressed on the way (see
    /// [`ObjectMeta::content_encoded`]).
    pub(crate) as_stored: bool,
    /// Their MD5 and CRC32C, where computed.
    pub(crate) md5: Option<crate::digest::Md5>,
    pub(crate) crc32c: Option<crate::digest::Crc32c>,
}

impl Received {
    /// A body read whole into memory, as served for `meta`.
    pub(crate) fn of(meta: &ObjectMeta, body: &[u8]) -> Received {
        let (md5, crc32c) = checked_by_served(meta, false);
        Received {
            bytes: body.len() as u64,
            as_stored: !meta.content_encoded,
            md5: md5.then(|| crate::digest::Md5::of(body)),
            crc32c: crc32c.then(|| crate::digest::Crc32c::of(body)),
        }
    }
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
            served: ServedHashes::default(),
            gunzip: None,
            gunzipped: false,
            received: 0,
            written: 0,
        })
    }

    /// Also checks the body against `meta`'s MD5 or CRC32C when they are
    /// the check (an object another tool wrote; `as_stored`: one stored
    /// gzip-compressed and read so, which this then decodes).
    pub(crate) fn checking_served(mut self, meta: &ObjectMeta, as_stored: bool) -> Landing {
        let (md5, crc32c) = checked_by_served(meta, as_stored);
        self.served = ServedHashes {
            md5: md5.then(md5::Md5::default),
            crc32c: crc32c.then(crate::digest::Crc32cHasher::default),
        };
        if as_stored && meta.content_encoded {
            self.gunzip = Some(flate2::write::MultiGzDecoder::new(Vec::new()));
            self.gunzipped = true;
        }
        self
    }

    pub(crate) async fn write(&mut self, chunk: &[u8]) -> Result<(), StoreError> {
        use md5::Digest as _;
        self.received += chunk.len() as u64;
        if let Some(m) = &mut self.served.md5 {
            m.update(chunk);
        }
        if let Some(c) = &mut self.served.crc32c {
            c.update(chunk);
        }
        match self.gunzip.as_mut() {
            None => self.land(chunk).await,
            Some(gunzip) => {
                let decoded = decode(gunzip, chunk, &self.dest)?;
                self.land(&decoded).await
            }
        }
    }

    /// Adds bytes of the content itself (decoded, if it came compressed).
    async fn land(&mut self, chunk: &[u8]) -> Result<(), StoreError> {
        use sha2::Digest;
        if chunk.is_empty() {
            return Ok(());
        }
        self.hasher.update(chunk);
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
        if let Some(mut gunzip) = self.gunzip.take() {
            // A body that ends mid-stream is short, not whole.
            use std::io::Write;
            let rest = gunzip
                .flush()
                .and_then(|_| gunzip.try_finish())
                .map(|_| std::mem::take(gunzip.get_mut()))
                .map_err(|e| not_gzip(&meta.key, e))?;
            self.land(&rest).await?;
        }
        let found = hex::encode(self.hasher.finalize_reset());
        let received = Received {
            bytes: self.received,
            as_stored: !meta.content_encoded || self.gunzipped,
            md5: self
                .served
                .md5
                .take()
                .map(|m| crate::digest::Md5(m.finalize().into())),
            crc32c: self.served.crc32c.take().map(|c| c.finish()),
        };
        check_download(target, &meta, &received, &found)?;
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
/// for an object with none (or one stored gzip-compressed and read so),
/// the MD5 and CRC32C the listing gave (`received`: the body's, where
/// computed, see [`Landing::checking_served`]). `sha`: of the content as
/// landed (decoded).
pub(crate) fn check_download(
    target: &str,
    meta: &ObjectMeta,
    received: &Received,
    sha: &str,
) -> Result<(), StoreError> {
    if !received.as_stored {
        // Served decompressed: only swamp's own sha256 (never written on
        // such an object by swamp, but honoured) could check it.
        return verify_sha256(&meta.key, meta.sha256.as_deref(), sha);
    }
    if received.bytes != meta.size {
        return Err(StoreError::Short {
            key: meta.key.clone(),
            target: target.to_string(),
            got: received.bytes,
            expected: meta.size,
        });
    }
    verify_sha256(&meta.key, meta.sha256.as_deref(), sha)?;
    let mismatch = |algorithm, expected: String, found: String| StoreError::Integrity {
        key: meta.key.clone(),
        algorithm,
        expected,
        found,
    };
    if let (Some(expected), Some(found)) = (meta.md5, received.md5)
        && expected != found
    {
        return Err(mismatch("md5", expected.hex(), found.hex()));
    }
    if let (Some(expected), Some(found)) = (meta.crc32c, received.crc32c)
        && expected != found
    {
        return Err(mismatch("crc32c", expected.hex(), found.hex()));
    }
    Ok(())
}

/// Whether the server's MD5 and CRC32C check a download of `meta`: when
/// it has no sha256 metadata or (`as_stored`) is read compressed as it is
/// stored; never when served decompressed. One is enough: the MD5 where
/// there is one.
pub(crate) fn checked_by_served(meta: &ObjectMeta, as_stored: bool) -> (bool, bool) {
    let useful = if meta.content_encoded {
        as_stored
    } else {
        meta.sha256.is_none()
    };
    let md5 = useful && meta.md5.is_some();
    (md5, useful && !md5 && meta.crc32c.is_some())
}

/// Whether the server's hashes alone can check a download of `meta` as
/// served (no sha256 metadata, and not decompressed on the way).
pub(crate) fn checked_by_served_only(meta: &ObjectMeta) -> bool {
    let (md5, crc32c) = checked_by_served(meta, false);
    md5 || crc32c
}

/// Feeds `chunk` to the decoder and takes what it decoded so far.
fn decode(
    gunzip: &mut flate2::write::MultiGzDecoder<Vec<u8>>,
    chunk: &[u8],
    dest: &Path,
) -> Result<Vec<u8>, StoreError> {
    use std::io::Write;
    gunzip
        .write_all(chunk)
        .map_err(|e| not_gzip(&dest.display().to_string(), e))?;
    Ok(std::mem::take(gunzip.get_mut()))
}

/// A body stored as gzip that does not decode (cut short, or not gzip).
fn not_gzip(what: &str, e: std::io::Error) -> StoreError {
    StoreError::Integrity {
        key: what.to_string(),
        algorithm: "gzip",
        expected: "a whole gzip stream (the object is stored with Content-Encoding: gzip)"
            .to_string(),
        found: e.to_string(),
    }
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
            crc32c: None,
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
