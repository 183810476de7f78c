//! Remembered directory listings, so a walk does not read again a
//! directory whose entries cannot have changed (git's untracked cache).
//!
//! A listing is keyed by the directory's `(device, inode, mtime, ctime)`:
//! creating, removing or renaming an entry updates the directory's mtime
//! and ctime, and setting the mtime back (`touch -d`, `rsync -a`) updates
//! the ctime. A file's own content changes do not touch its directory, so
//! the walk still stats every file (the hash cache then decides whether to
//! read it).
//!
//! Racy listings are never kept: a directory changed within
//! [`RACY_MARGIN`] of the walk's start could change again within the same
//! timestamp tick after it was read, keeping its stamp, so its listing is
//! used for that walk only.
//!
//! Stored beside the hash cache as a small binary file with a checksum;
//! anything unreadable, truncated or corrupt is an empty cache (it is
//! derived state).

use rustc_hash::FxHashMap as HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::walk::Stat;
use crate::fsutil;

/// How recent a change is too recent to trust a stamp. Covers filesystems
/// whose timestamps tick in whole seconds (or two, FAT) as well as the
/// kernel's coarse clock.
pub const RACY_MARGIN: Duration = Duration::from_secs(2);

const MAGIC: &[u8] = b"swamp dir listings 1\n";

/// What identifies one state of a directory's entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DirKey {
    dev: u64,
    ino: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl DirKey {
    pub fn of(stat: &Stat) -> DirKey {
        DirKey {
            dev: stat.dev,
            ino: stat.ino,
            mtime_ns: stat.mtime_ns,
            ctime_ns: stat.ctime_ns,
        }
    }

    /// Changed too recently (see [`RACY_MARGIN`]) for a walk that started
    /// at `trust_before + RACY_MARGIN`.
    pub fn is_racy(&self, trust_before_ns: i64) -> bool {
        self.mtime_ns.max(self.ctime_ns) >= trust_before_ns
    }
}

/// The kind of a listed entry, as the directory reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListedKind {
    Dir,
    File,
    Symlink,
    Other,
}

impl ListedKind {
    fn byte(self) -> u8 {
        match self {
            ListedKind::Dir => b'd',
            ListedKind::File => b'f',
            ListedKind::Symlink => b'l',
            ListedKind::Other => b'o',
        }
    }

    fn from_byte(b: u8) -> Option<ListedKind> {
        Some(match b {
            b'd' => ListedKind::Dir,
            b'f' => ListedKind::File,
            b'l' => ListedKind::Symlink,
            b'o' => ListedKind::Other,
            _ => return None,
        })
    }
}

/// One directory's entries, sorted by name, encoded as `kind name NUL`
/// repeated (a name holds neither `/` nor NUL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing(Box<[u8]>);

impl Listing {
    /// Reads `dir`'s entries (sorted by name, as bytes).
    pub fn read(dir: &Path) -> io::Result<Listing> {
        use std::os::unix::ffi::OsStrExt;
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let ft = entry.file_type()?;
            let kind = if ft.is_dir() {
                ListedKind::Dir
            } else if ft.is_file() {
                ListedKind::File
            } else if ft.is_symlink() {
                ListedKind::Symlink
            } else {
                ListedKind::Other
            };
            entries.push((entry.file_name(), kind));
        }
        entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut out = Vec::with_capacity(entries.iter().map(|e| e.0.len() + 2).sum());
        for (name, kind) in &entries {
            out.push(kind.byte());
            out.extend_from_slice(name.as_bytes());
            out.push(0);
        }
        Ok(Listing(out.into_boxed_slice()))
    }

    pub fn entries(&self) -> Entries<'_> {
        Entries(&self.0)
    }

    /// Whether any entry is a directory.
    pub fn has_dirs(&self) -> bool {
        self.entries().any(|(kind, _)| kind == ListedKind::Dir)
    }

    /// `bytes` as a listing, if it is one (every entry a known kind and a
    /// non-empty name without `/`, NUL-terminated, names strictly sorted).
    fn parse(bytes: &[u8]) -> Option<Listing> {
        let mut rest = bytes;
        let mut last: Option<&[u8]> = None;
        while let Some((&kind, tail)) = rest.split_first() {
            ListedKind::from_byte(kind)?;
            let end = tail.iter().position(|&b| b == 0)?;
            let name = &tail[..end];
            if name.is_empty() || name.contains(&b'/') || last.is_some_and(|l| l >= name) {
                return None;
            }
            last = Some(name);
            rest = &tail[end + 1..];
        }
        Some(Listing(bytes.into()))
    }
}

/// A listing's `(kind, name)` pairs, in name order.
pub struct Entries<'a>(&'a [u8]);

impl<'a> Iterator for Entries<'a> {
    type Item = (ListedKind, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let (&kind, tail) = self.0.split_first()?;
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let name = &tail[..end];
        self.0 = tail.get(end + 1..).unwrap_or(&[]);
        Some((
            ListedKind::from_byte(kind).unwrap_or(ListedKind::Other),
            name,
        ))
    }
}

/// The remembered listings: those loaded, which of them a walk used, and
/// those it read that are safe to keep.
#[derive(Debug, Default)]
pub struct DirListings {
    path: Option<PathBuf>,
    loaded: HashMap<DirKey, (Listing, bool)>,
    used: usize,
    learnt: HashMap<DirKey, Listing>,
}

impl DirListings {
    pub fn in_memory() -> DirListings {
        DirListings::default()
    }

    /// Loads the listings at `path`; anything unreadable is none.
    pub fn load(path: &Path) -> DirListings {
        let loaded = std::fs::read(path)
            .ok()
            .and_then(|bytes| decode(&bytes))
            .unwrap_or_default();
        DirListings {
            path: Some(path.to_path_buf()),
            loaded,
            used: 0,
            learnt: HashMap::default(),
        }
    }

    /// The listing remembered for a directory in state `key`.
    pub fn get(&self, key: &DirKey) -> Option<&Listing> {
        self.loaded
            .get(key)
            .map(|(l, _)| l)
            .or_else(|| self.learnt.get(key))
    }

    /// Records that a walk used the remembered listing for `key`.
    pub fn used(&mut self, key: &DirKey) {
        if let Some((_, used)) = self.loaded.get_mut(key)
            && !*used
        {
            *used = true;
            self.used += 1;
        }
    }

    /// How many loaded listings a walk used.
    pub fn reused(&self) -> usize {
        self.used
    }

    /// Remembers a listing a walk read (the caller has checked it is not
    /// racy).
    pub fn learn(&mut self, key: DirKey, listing: Listing) {
        if self.loaded.contains_key(&key) {
            self.used(&key);
        } else {
            self.learnt.insert(key, listing);
        }
    }

    /// Persists the listings used or learnt since loading (those of
    /// directories that are gone or changed are dropped); writes nothing
    /// when that is what was loaded. For a full walk.
    pub fn save(&self) -> io::Result<()> {
        if self.learnt.is_empty() && self.used == self.loaded.len() {
            return Ok(());
        }
        let Some(path) = &self.path else {
            return Ok(());
        };
        let kept = self
            .loaded
            .iter()
            .filter(|(_, (_, used))| *used)
            .map(|(k, (l, _))| (k, l))
            .chain(&self.learnt);
        fsutil::atomic_write(path, &encode(kept))
    }
}

fn encode<'a>(listings: impl Iterator<Item = (&'a DirKey, &'a Listing)>) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for (k, l) in listings {
        out.extend_from_slice(&k.dev.to_le_bytes());
        out.extend_from_slice(&k.ino.to_le_bytes());
        out.extend_from_slice(&k.mtime_ns.to_le_bytes());
        out.extend_from_slice(&k.ctime_ns.to_le_bytes());
        out.extend_from_slice(&(l.0.len() as u32).to_le_bytes());
        out.extend_from_slice(&l.0);
    }
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    out
}

fn decode(bytes: &[u8]) -> Option<HashMap<DirKey, (Listing, bool)>> {
    let body_len = bytes.len().checked_sub(32)?;
    let (body, sum) = bytes.split_at(body_len);
    if Sha256::digest(body).as_slice() != sum {
        return None;
    }
    let mut rest = body.strip_prefix(MAGIC)?;
    let mut out = HashMap::default();
    fn take<'a>(rest: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        *rest = tail;
        Some(head)
    }
    let u64_ = |rest: &mut &[u8]| take(rest, 8).map(|b| u64::from_le_bytes(b.try_into().unwrap()));
    while !rest.is_empty() {
        let dev = u64_(&mut rest)?;
        let ino = u64_(&mut rest)?;
        let mtime_ns = u64_(&mut rest)? as i64;
        let ctime_ns = u64_(&mut rest)? as i64;
        let len = u32::from_le_bytes(take(&mut rest, 4)?.try_into().unwrap()) as usize;
        let listing = Listing::parse(take(&mut rest, len)?)?;
        let key = DirKey {
            dev,
            ino,
            mtime_ns,
            ctime_ns,
        };
        out.insert(key, (listing, false));
    }
    Some(out)
}

/// The time before which a change is old enough to trust its stamp, for a
/// walk starting now, in nanoseconds since the epoch.
pub fn trust_before_ns(now: SystemTime) -> i64 {
    now.checked_sub(RACY_MARGIN)
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ino: u64) -> DirKey {
        DirKey {
            dev: 1,
            ino,
            mtime_ns: 2,
            ctime_ns: 3,
        }
    }

    #[test]
    fn a_listing_is_sorted_typed_and_survives_a_save() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d");
        std::fs::create_dir_all(d.join("sub")).unwrap();
        std::fs::write(d.join("b"), b"").unwrap();
        std::fs::write(d.join("a\nodd\tname"), b"").unwrap();
        std::os::unix::fs::symlink("nowhere", d.join("c")).unwrap();
        let listing = Listing::read(&d).unwrap();
        let entries: Vec<_> = listing.entries().map(|(k, n)| (k, n.to_vec())).collect();
        assert_eq!(
            entries,
            [
                (ListedKind::File, b"a\nodd\tname".to_vec()),
                (ListedKind::File, b"b".to_vec()),
                (ListedKind::Symlink, b"c".to_vec()),
                (ListedKind::Dir, b"sub".to_vec()),
            ]
        );
        assert!(listing.has_dirs());

        let path = dir.path().join("listings");
        let mut saved = DirListings::load(&path);
        saved.learn(key(7), listing.clone());
        saved.save().unwrap();
        let mut loaded = DirListings::load(&path);
        assert_eq!(loaded.get(&key(7)), Some(&listing));
        assert_eq!(loaded.get(&key(8)), None);

        // A listing not used by the next walk is dropped by its save.
        loaded.learn(key(8), Listing::read(&d.join("sub")).unwrap());
        loaded.save().unwrap();
        let again = DirListings::load(&path);
        assert_eq!(again.get(&key(7)), None);
        assert!(again.get(&key(8)).is_some());
    }

    #[test]
    fn a_corrupt_or_truncated_file_is_no_listings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("listings");
        let mut l = DirListings::load(&path);
        l.learn(key(1), Listing::parse(b"fa\0fb\0").unwrap());
        l.save().unwrap();
        let good = std::fs::read(&path).unwrap();
        assert!(DirListings::load(&path).get(&key(1)).is_some());

        let mut flipped = good.clone();
        let at = MAGIC.len() + 40;
        flipped[at] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert!(DirListings::load(&path).get(&key(1)).is_none());

        std::fs::write(&path, &good[..good.len() - 5]).unwrap();
        assert!(DirListings::load(&path).get(&key(1)).is_none());

        // A well-formed file whose listing breaks the encoding's rules.
        for bad in [&b"xa\0"[..], b"fa/b\0", b"fb\0fa\0", b"f\0", b"fa"] {
            let mut body = MAGIC.to_vec();
            body.extend_from_slice(&[0; 32]);
            body.extend_from_slice(&(bad.len() as u32).to_le_bytes());
            body.extend_from_slice(bad);
            let sum = Sha256::digest(&body);
            body.extend_from_slice(&sum);
            std::fs::write(&path, &body).unwrap();
            assert!(DirListings::load(&path).loaded.is_empty(), "{bad:?}");
        }
    }

    #[test]
    fn only_a_change_older_than_the_margin_is_trusted() {
        let now = SystemTime::now();
        let before = trust_before_ns(now);
        let at = |t: SystemTime| {
            let ns = t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as i64;
            DirKey {
                dev: 1,
                ino: 1,
                mtime_ns: ns,
                ctime_ns: ns,
            }
        };
        assert!(at(now).is_racy(before));
        assert!(at(now - Duration::from_millis(1900)).is_racy(before));
        assert!(!at(now - Duration::from_secs(3)).is_racy(before));
    }
}
