//! A file's stamp ([`Stamp`]): device, inode, size and modification time,
//! which the hash cache keys a file's sha256 by.

use std::fs::Metadata;

use super::walk::Stat;

/// What identifies one state of a file's content: a rename keeps it, a
/// write changes its size or mtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp {
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) size: u64,
    pub(super) mtime_ns: i64,
}

impl Stamp {
    /// The stamp as 32 bytes, as a hash cache record and a spilled
    /// [`super::Learnt`] record begin.
    pub(super) fn to_bytes(self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&self.dev.to_le_bytes());
        b[8..16].copy_from_slice(&self.ino.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b[24..].copy_from_slice(&self.mtime_ns.to_le_bytes());
        b
    }

    pub(super) fn from_bytes(b: &[u8; 32]) -> Stamp {
        let word = |i: usize| <[u8; 8]>::try_from(&b[i..i + 8]).expect("8 bytes");
        Stamp {
            dev: u64::from_le_bytes(word(0)),
            ino: u64::from_le_bytes(word(8)),
            size: u64::from_le_bytes(word(16)),
            mtime_ns: i64::from_le_bytes(word(24)),
        }
    }

    pub fn of(meta: &Metadata) -> Stamp {
        Stamp::of_stat(&Stat::of(meta))
    }

    pub fn of_stat(stat: &Stat) -> Stamp {
        Stamp {
            dev: stat.dev,
            ino: stat.ino,
            size: stat.size,
            mtime_ns: stat.mtime_ns,
        }
    }
}
