//! What observation keeps of a file's lstat: identity (device, inode),
//! size, the two timestamps and the file type. Shared by the walk that
//! makes it and the directory listings that remember it.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;

/// What a walk keeps of an entry's lstat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub mode: u32,
}

impl Stat {
    pub fn of(meta: &Metadata) -> Stat {
        Stat {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: stamp_ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: stamp_ns(meta.ctime(), meta.ctime_nsec()),
            mode: meta.mode(),
        }
    }

    pub(super) fn of_raw(st: &rustix::fs::Stat) -> Stat {
        // The field types differ between platforms; the casts only widen.
        #[allow(clippy::unnecessary_cast)]
        Stat {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime_ns: stamp_ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime_ns: stamp_ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
            mode: st.st_mode as u32,
        }
    }

    fn format(&self) -> u32 {
        self.mode & libc::S_IFMT
    }

    pub fn is_dir(&self) -> bool {
        self.format() == libc::S_IFDIR
    }

    pub fn is_file(&self) -> bool {
        self.format() == libc::S_IFREG
    }

    pub fn is_symlink(&self) -> bool {
        self.format() == libc::S_IFLNK
    }
}

/// A timestamp in nanoseconds, saturating for a hostile far-future one
/// (the ctime, set by the kernel, still tells such states apart).
fn stamp_ns(secs: i64, nsec: i64) -> i64 {
    secs.saturating_mul(1_000_000_000).saturating_add(nsec)
}
