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

use super::gallop::Hint;
use super::stat::Stat;
use crate::fsutil;
use std::cell::Cell;

/// How recent a change is too recent to trust a stamp. Covers filesystems
/// whose timestamps tick in whole seconds (or two, FAT) as well as the
/// kernel's coarse clock.
pub(crate) const RACY_MARGIN: Duration = Duration::from_secs(2);

const MAGIC: &[u8] = b"swamp dir listings 2\n";

/// What identifies one state of a directory's entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

    pub fn as_ref(&self) -> ListingRef<'_> {
        ListingRef(&self.0)
    }

    /// `bytes` as a listing, if it is one.
    #[cfg(test)]
    fn parse(bytes: &[u8]) -> Option<Listing> {
        valid(bytes).then(|| Listing(bytes.into()))
    }
}

/// Whether `bytes` encode a listing: every entry a known kind and a
/// non-empty name without `/`, NUL-terminated, names strictly sorted.
fn valid(bytes: &[u8]) -> bool {
    let mut rest = bytes;
    let mut last: Option<&[u8]> = None;
    while let Some((&kind, tail)) = rest.split_first() {
        let Some(end) = tail.iter().position(|&b| b == 0) else {
            return false;
        };
        let name = &tail[..end];
        if ListedKind::from_byte(kind).is_none()
            || name.is_empty()
            || name.contains(&b'/')
            || last.is_some_and(|l| l >= name)
        {
            return false;
        }
        last = Some(name);
        rest = &tail[end + 1..];
    }
    true
}

/// A listing, borrowed (from one that was read, or from the loaded file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListingRef<'a>(&'a [u8]);

impl<'a> ListingRef<'a> {
    pub fn entries(self) -> Entries<'a> {
        Entries(self.0)
    }

    /// Whether any entry is a directory.
    pub fn has_dirs(self) -> bool {
        self.entries().any(|(kind, _)| kind == ListedKind::Dir)
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
/// those it read that are safe to keep. The loaded ones stay in the file's
/// bytes, found through a sorted index (a map of 140,000 boxed listings
/// was a quarter of a 100,000-file plan's memory; a hash index was slower
/// to build than the searches it saved).
#[derive(Debug, Default)]
pub struct DirListings {
    path: Option<PathBuf>,
    /// The loaded file's records.
    bytes: Vec<u8>,
    /// Where each loaded listing's record starts in `bytes`, in key order:
    /// its key and length are read from the record's head, 4 bytes a
    /// directory here where a copy of them beside it took 40 (47 MB of a
    /// million-directory walk's peak).
    index: Vec<u32>,
    /// Which loaded listings a walk used (by index position).
    used: Vec<bool>,
    used_count: usize,
    learnt: HashMap<DirKey, Listing>,
}

impl DirListings {
    pub fn in_memory() -> DirListings {
        DirListings::default()
    }

    /// Loads the listings at `path`; anything unreadable is none.
    pub fn load(path: &Path) -> DirListings {
        let (bytes, index) = std::fs::read(path)
            .ok()
            .and_then(decode)
            .unwrap_or_default();
        DirListings {
            path: Some(path.to_path_buf()),
            used: vec![false; index.len()],
            bytes,
            index,
            used_count: 0,
            learnt: HashMap::default(),
        }
    }

    fn position(&self, key: &DirKey) -> Option<usize> {
        thread_local!(static AT: Cell<usize> = const { Cell::new(0) });
        Hint::new(&AT)
            .search(&self.index, |&at| head_at(&self.bytes, at).0.cmp(key))
            .ok()
    }

    /// The key and listing of the record starting at `at` (an index
    /// entry), its head read once.
    fn record_at(&self, at: u32) -> (DirKey, ListingRef<'_>) {
        let (key, len) = head_at(&self.bytes, at);
        let start = at as usize + HEAD;
        (key, ListingRef(&self.bytes[start..start + len as usize]))
    }

    /// The listing remembered for a directory in state `key`.
    pub fn get(&self, key: &DirKey) -> Option<ListingRef<'_>> {
        self.find(key).map(|(_, listing)| listing)
    }

    /// The listing remembered for `key`, and where it was loaded from
    /// (`None` for one learnt since), to hand to [`DirListings::used_at`].
    pub fn find(&self, key: &DirKey) -> Option<(Option<u32>, ListingRef<'_>)> {
        match self.position(key) {
            Some(i) => Some((Some(i as u32), self.record_at(self.index[i]).1)),
            None => self.learnt.get(key).map(|l| (None, l.as_ref())),
        }
    }

    /// Records that a walk used the remembered listing for `key`.
    pub fn used(&mut self, key: &DirKey) {
        if let Some(i) = self.position(key) {
            self.mark(i);
        }
    }

    /// [`DirListings::used`] for a listing [`DirListings::find`] found at
    /// `at`, without searching again (100,000 searches were a tenth of a
    /// warm plan's time, all after the walk).
    pub fn used_at(&mut self, key: &DirKey, at: Option<u32>) {
        match at {
            Some(i)
                if self
                    .index
                    .get(i as usize)
                    .is_some_and(|&at| head_at(&self.bytes, at).0 == *key) =>
            {
                self.mark(i as usize)
            }
            _ => self.used(key),
        }
    }

    fn mark(&mut self, i: usize) {
        if !self.used[i] {
            self.used[i] = true;
            self.used_count += 1;
        }
    }

    /// What a load of the file gives, if no listing was learnt since this
    /// was loaded (none marked used); `false` (unchanged) otherwise.
    pub(crate) fn settle(&mut self) -> bool {
        if !self.learnt.is_empty() {
            return false;
        }
        self.used.fill(false);
        self.used_count = 0;
        true
    }

    /// How many loaded listings a walk used.
    pub fn reused(&self) -> usize {
        self.used_count
    }

    /// Remembers a listing a walk read (the caller has checked it is not
    /// racy).
    pub fn learn(&mut self, key: DirKey, listing: Listing) {
        if self.position(&key).is_some() {
            self.used(&key);
        } else {
            self.learnt.insert(key, listing);
        }
    }

    /// Persists the listings used or learnt since loading (those of
    /// directories that are gone or changed are dropped); writes nothing
    /// when that is what was loaded. For a full walk.
    pub fn save(&self) -> io::Result<()> {
        if self.learnt.is_empty() && self.used_count == self.index.len() {
            return Ok(());
        }
        let Some(path) = &self.path else {
            return Ok(());
        };
        // Saved in key order, so loading needs no sort: the loaded ones
        // are in that order already, and only the learnt ones are sorted
        // (16 bytes each), then the two merged. Both collected into one
        // list to sort were 48 bytes a directory, grown by doubling: 100
        // MB at the peak of the verifying plan after a million moves.
        let loaded = self
            .index
            .iter()
            .zip(&self.used)
            .filter(|(_, used)| **used)
            .map(|(&at, _)| {
                let (key, listing) = self.record_at(at);
                (key, listing.0)
            });
        let mut learnt: Vec<(&DirKey, &Listing)> = self.learnt.iter().collect();
        learnt.sort_unstable_by_key(|(k, _)| **k);
        let learnt = learnt.into_iter().map(|(k, l)| (*k, &l.0[..]));
        // Streamed: a million directories' listings are 60 MB, which the
        // file built in memory first held twice over.
        fsutil::atomic_write_with(path, |out| {
            write_encoded(super::merged_in_order(loaded, learnt, |r| r.0), out)
        })
    }
}

/// The file's bytes: [`MAGIC`], each listing's key, length and entries,
/// and a CRC32 of all that, written to `out` as they go.
fn write_encoded<'a>(
    listings: impl Iterator<Item = (DirKey, &'a [u8])>,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    let mut out = fsutil::Summed::new(out);
    out.put(MAGIC)?;
    for (k, l) in listings {
        let mut head = [0u8; HEAD];
        head[0..8].copy_from_slice(&k.dev.to_le_bytes());
        head[8..16].copy_from_slice(&k.ino.to_le_bytes());
        head[16..24].copy_from_slice(&k.mtime_ns.to_le_bytes());
        head[24..32].copy_from_slice(&k.ctime_ns.to_le_bytes());
        head[32..36].copy_from_slice(&(l.len() as u32).to_le_bytes());
        out.put(&head)?;
        out.put(l)?;
    }
    out.finish()
}

/// The file's bytes (its checksum dropped) and the index of its records,
/// if every record is well formed.
fn decode(mut bytes: Vec<u8>) -> Option<(Vec<u8>, Vec<u32>)> {
    // A CRC, not a cryptographic hash: it guards against a torn or
    // damaged file (anyone who can write it can write the cache anyway),
    // and checking 6 MB of sha256 was a fortieth of a warm plan.
    let body_len = bytes.len().checked_sub(4)?;
    if crc32fast::hash(&bytes[..body_len]).to_le_bytes() != bytes[body_len..] {
        return None;
    }
    bytes.truncate(body_len);
    if !bytes.starts_with(MAGIC) || u32::try_from(bytes.len()).is_err() {
        return None;
    }
    // Sized by a first pass over the records' heads: held for the whole
    // run, a million directories' index grew by doubling, and was then
    // copied to its size with both held.
    let mut index = Vec::with_capacity(records(&bytes)?);
    let mut at = MAGIC.len();
    let mut last = None;
    while at < bytes.len() {
        // `records` checked that every record lies within the bytes.
        let (key, len) = head_at(&bytes, at as u32);
        let start = at + HEAD;
        let end = start + len as usize;
        // In key order, one listing per key, as a save writes them.
        if !valid(&bytes[start..end]) || last.is_some_and(|l| l >= key) {
            return None;
        }
        last = Some(key);
        index.push(at as u32);
        at = end;
    }
    Some((bytes, index))
}

/// A record's head: the directory's key, then its listing's length.
const HEAD: usize = 36;

/// The key and listing length in the head of the record at `at` (which
/// [`records`] found whole).
fn head_at(bytes: &[u8], at: u32) -> (DirKey, u32) {
    let head = &bytes[at as usize..at as usize + HEAD];
    let u64_at = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
    let key = DirKey {
        dev: u64_at(0),
        ino: u64_at(8),
        mtime_ns: u64_at(16) as i64,
        ctime_ns: u64_at(24) as i64,
    };
    (
        key,
        u32::from_le_bytes(head[32..36].try_into().expect("4 bytes")),
    )
}

/// How many records `bytes` (magic, then records) holds, by their heads'
/// lengths; `None` if one runs past the end.
fn records(bytes: &[u8]) -> Option<usize> {
    let mut at = MAGIC.len();
    let mut n = 0;
    while at < bytes.len() {
        let len = bytes.get(at + 32..at + HEAD)?;
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        at = at.checked_add(HEAD)?.checked_add(len)?;
        n += 1;
    }
    (at == bytes.len()).then_some(n)
}

/// The time before which a change is old enough to trust its stamp, for a
/// walk starting now, in nanoseconds since the epoch.
pub(crate) fn trust_before_ns(now: SystemTime) -> i64 {
    now.checked_sub(RACY_MARGIN).map_or(0, epoch_ns)
}

/// Nanoseconds since the epoch (0 before it), as stamps are compared.
pub(crate) fn epoch_ns(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
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
        let entries: Vec<_> = listing
            .as_ref()
            .entries()
            .map(|(k, n)| (k, n.to_vec()))
            .collect();
        assert_eq!(
            entries,
            [
                (ListedKind::File, b"a\nodd\tname".to_vec()),
                (ListedKind::File, b"b".to_vec()),
                (ListedKind::Symlink, b"c".to_vec()),
                (ListedKind::Dir, b"sub".to_vec()),
            ]
        );
        assert!(listing.as_ref().has_dirs());

        let path = dir.path().join("listings");
        let mut saved = DirListings::load(&path);
        saved.learn(key(7), listing.clone());
        saved.save().unwrap();
        let mut loaded = DirListings::load(&path);
        assert_eq!(loaded.get(&key(7)), Some(listing.as_ref()));
        assert_eq!(loaded.get(&key(8)), None);

        // A listing not used by the next walk is dropped by its save.
        loaded.learn(key(8), Listing::read(&d.join("sub")).unwrap());
        loaded.save().unwrap();
        let again = DirListings::load(&path);
        assert_eq!(again.get(&key(7)), None);
        assert!(again.get(&key(8)).is_some());
    }

    #[test]
    fn loaded_listings_are_indexed_without_slack_and_a_record_past_the_end_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("listings");
        let mut l = DirListings::load(&path);
        for ino in 0..37 {
            l.learn(key(ino), Listing::parse(b"fa\0fb\0").unwrap());
        }
        l.save().unwrap();
        let loaded = DirListings::load(&path);
        assert_eq!(loaded.index.len(), 37);
        assert_eq!(loaded.index.capacity(), 37);
        let body = std::fs::read(&path).unwrap();
        let body = &body[..body.len() - 4];
        assert_eq!(records(body), Some(37));
        assert_eq!(records(&body[..body.len() - 1]), None);
        assert_eq!(records(MAGIC), Some(0));
    }

    #[test]
    fn a_save_merges_the_used_and_the_learnt_listings_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("listings");
        let listing = |ino: u64| Listing::parse(format!("f{ino}\0").as_bytes()).unwrap();
        let mut l = DirListings::load(&path);
        for ino in (0..60).step_by(3) {
            l.learn(key(ino), listing(ino));
        }
        l.save().unwrap();
        // The next walk uses every other loaded listing and learns keys
        // between and beyond them.
        let mut next = DirListings::load(&path);
        for ino in (0..60).step_by(6) {
            next.used(&key(ino));
        }
        for ino in (1..70).step_by(3) {
            next.learn(key(ino), listing(ino));
        }
        next.save().unwrap();
        // Out of key order, the file would load as nothing.
        let loaded = DirListings::load(&path);
        let kept: Vec<u64> = (0..70)
            .filter(|&ino| {
                let found = loaded.get(&key(ino));
                if let Some(got) = found {
                    assert_eq!(got, listing(ino).as_ref(), "{ino}");
                }
                found.is_some()
            })
            .collect();
        let expected: Vec<u64> = (0..70)
            .filter(|ino| ino % 6 == 0 && *ino < 60 || ino % 3 == 1)
            .collect();
        assert_eq!(kept, expected);
    }

    #[test]
    fn each_loaded_listing_is_found_by_its_key_read_from_its_record() {
        // Listings of differing lengths, so a record's place is not a
        // multiple of one size; searched out of order, so the search's
        // hint is no help.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("listings");
        let mut l = DirListings::load(&path);
        let listing = |ino: u64| {
            let names: Vec<u8> = (0..ino % 5)
                .flat_map(|i| format!("f{i}\0").into_bytes())
                .collect();
            Listing::parse(&names).unwrap()
        };
        for ino in (0..200).step_by(2) {
            l.learn(key(ino), listing(ino));
        }
        l.save().unwrap();
        let mut loaded = DirListings::load(&path);
        for ino in (0..200).rev().chain(0..200) {
            match loaded.find(&key(ino)) {
                Some((at, got)) => {
                    assert_eq!(ino % 2, 0, "{ino} was never learnt");
                    assert_eq!(got, listing(ino).as_ref(), "{ino}");
                    loaded.used_at(&key(ino), at);
                }
                None => assert_eq!(ino % 2, 1, "{ino} was learnt"),
            }
        }
        assert_eq!(loaded.reused(), 100);
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
        let write_sealed = |body: &[u8]| {
            let mut body = body.to_vec();
            let sum = crc32fast::hash(&body);
            body.extend_from_slice(&sum.to_le_bytes());
            std::fs::write(&path, &body).unwrap();
        };
        for bad in [&b"xa\0"[..], b"fa/b\0", b"fb\0fa\0", b"f\0", b"fa"] {
            let mut body = MAGIC.to_vec();
            body.extend_from_slice(&[0; 32]);
            body.extend_from_slice(&(bad.len() as u32).to_le_bytes());
            body.extend_from_slice(bad);
            write_sealed(&body);
            assert!(DirListings::load(&path).index.is_empty(), "{bad:?}");
        }

        // Records out of key order, or one key twice: a save never writes
        // them, and a search could not find them.
        for inos in [[2u64, 1], [1, 1]] {
            let mut body = MAGIC.to_vec();
            for ino in inos {
                body.extend_from_slice(&[0; 8]);
                body.extend_from_slice(&ino.to_le_bytes());
                body.extend_from_slice(&[0; 16]);
                body.extend_from_slice(&3u32.to_le_bytes());
                body.extend_from_slice(b"fa\0");
            }
            write_sealed(&body);
            assert!(DirListings::load(&path).index.is_empty(), "{inos:?}");
        }
        write_sealed(
            &[
                MAGIC,
                &[0; 8],
                &1u64.to_le_bytes(),
                &[0; 16],
                &3u32.to_le_bytes(),
                b"fa\0",
            ]
            .concat(),
        );
        assert_eq!(
            DirListings::load(&path).index.len(),
            1,
            "the sealing is right"
        );
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
