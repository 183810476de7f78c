//! The part sizes of swamp's multipart uploads (S3): one rule for the
//! uploader, the plan's request estimate, and recognising swamp's own
//! multipart ETags (and other tools') when an object has no sha256.

/// Files at least this large are uploaded in parts.
pub const THRESHOLD: u64 = 256 << 20;

/// The smallest part (S3's minimum for all but the last is 5 MiB).
pub(crate) const MIN_PART: u64 = 8 << 20;

/// S3's limit on parts per upload.
pub(crate) const MAX_PARTS: u64 = 10_000;

/// The part size for a file of `size` bytes: 8 MiB, or larger (in whole
/// MiB) when 10,000 parts of 8 MiB would not hold it.
pub fn part_size(size: u64) -> u64 {
    let need = size.div_ceil(MAX_PARTS);
    need.max(MIN_PART).next_multiple_of(1 << 20)
}
