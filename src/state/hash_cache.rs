//! A persistent `(device, inode, size, mtime) → sha256` cache, so a file
//! that has not changed is not read again. Beside the sha256 it keeps the
//! file's MD5 once one was needed (to recognise a remote object another
//! tool wrote, which only an S3 ETag or a GCS md5Hash vouches for): that
//! read computes both. Keyed by inode rather than path:
//! a rename (every move we make) keeps the entry valid.
//!
//! Stored as a binary file (fixed-size records, a checksum) in the
//! reconciler's state directory and rewritten atomically only when it
//! changed. An entry learnt from a file changed within
//! [`dir_listings::RACY_MARGIN`] of the run's start is not saved: the file
//! could change again within the same timestamp tick, keeping its stamp
//! (git's "racy git" problem). The cache also holds the remembered
//! directory listings a walk uses ([`DirListings`]). An apply hands its
//! cache, as saved, to the verifying plan after it in the same process
//! ([`HashCache::save_keeping_for_next_load`]) instead of that plan loading
//! it again.

use rustc_hash::FxHashMap as HashMap;
use std::fs::Metadata;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::dir_listings::{self, DirListings};
use super::gallop::Hint;
use super::learnt::Learnt;
use super::stamp::Stamp;
use super::walk::Stat;
use crate::digest::Sha256;
use crate::fsutil;
use std::cell::Cell;

/// One file state's sha256. Its MD5, asked for rarely, is kept apart
/// ([`HashCache::md5s`]): beside every sha256 it was a fifth of the table.
#[derive(Debug, Clone, Copy)]
struct Entry {
    sha256: [u8; 32],
    /// Seen by this run (a full observation keeps only these).
    used: bool,
    /// Learnt from a file changed too recently to trust its stamp (see
    /// [`dir_listings::RACY_MARGIN`]): used by this run, never saved.
    racy: bool,
}

impl Entry {
    /// Of a file this process just wrote: used by this run, never saved.
    fn learnt(sha256: Sha256) -> Entry {
        Entry {
            sha256: sha256.0,
            used: false,
            racy: true,
        }
    }
}

/// The entries: most in one sorted array (looked up by binary search: a
/// hash map of a million entries took twice their size, its buckets being
/// a power of two), the latest this run learnt in a small map, folded
/// into the array each time it holds [`ADDED_MOST`].
#[derive(Debug, Default)]
struct Table {
    loaded: Vec<(Stamp, Entry)>,
    added: HashMap<Stamp, Entry>,
}

/// How many learnt entries wait in the map before they join the array. A
/// cold plan of a million files held 186 MB in one map of them; folding
/// moves the array once per this many (a fraction of a second at a
/// million).
const ADDED_MOST: usize = 1 << 16;

impl Table {
    /// `loaded` sorted by stamp, one entry a stamp (the first kept).
    fn of_loaded(mut loaded: Vec<(Stamp, Entry)>) -> Table {
        if !loaded.is_sorted_by(|a, b| a.0 < b.0) {
            loaded.sort_by_key(|(s, _)| *s);
            loaded.dedup_by_key(|(s, _)| *s);
        }
        Table {
            loaded,
            added: HashMap::default(),
        }
    }

    fn len(&self) -> usize {
        self.loaded.len() + self.added.len()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn position(&self, stamp: &Stamp) -> Result<usize, usize> {
        thread_local!(static AT: Cell<usize> = const { Cell::new(0) });
        Hint::new(&AT).search(&self.loaded, |(s, _)| s.cmp(stamp))
    }

    fn get(&self, stamp: &Stamp) -> Option<&Entry> {
        match self.position(stamp) {
            Ok(i) => Some(&self.loaded[i].1),
            Err(_) => self.added.get(stamp),
        }
    }

    fn get_mut(&mut self, stamp: &Stamp) -> Option<&mut Entry> {
        match self.position(stamp) {
            Ok(i) => Some(&mut self.loaded[i].1),
            Err(_) => self.added.get_mut(stamp),
        }
    }

    /// Sets the entry for `stamp`, returning the one it replaces.
    fn insert(&mut self, stamp: Stamp, entry: Entry) -> Option<Entry> {
        match self.position(&stamp) {
            Ok(i) => Some(std::mem::replace(&mut self.loaded[i].1, entry)),
            Err(_) => {
                let old = self.added.insert(stamp, entry);
                self.fold_if_full();
                old
            }
        }
    }

    /// The entry for `stamp`, set to `entry` if there was none.
    fn get_or_insert(&mut self, stamp: Stamp, entry: Entry) -> &mut Entry {
        if self.position(&stamp).is_err() && !self.added.contains_key(&stamp) {
            self.added.insert(stamp, entry);
            self.fold_if_full();
        }
        self.get_mut(&stamp).expect("just set")
    }

    /// Moves the learnt entries into the sorted array once there are
    /// [`ADDED_MOST`] of them: sorted, then merged in from the back, in
    /// place (no stamp is in both: an insert looks in the array first).
    fn fold_if_full(&mut self) {
        if self.added.len() >= ADDED_MOST {
            self.fold();
        }
    }

    /// Moves every learnt entry into the sorted array.
    fn fold(&mut self) {
        let mut new: Vec<(Stamp, Entry)> = self.added.drain().collect();
        new.sort_unstable_by_key(|(s, _)| *s);
        self.merge_sorted(&new, |e| *e);
    }

    /// Merges `new` (sorted by stamp, none of them in the table) into the
    /// array, from the back, in place.
    fn merge_sorted<T>(&mut self, new: &[T], entry: impl Fn(&T) -> (Stamp, Entry)) {
        let Some(first) = new.first() else {
            return;
        };
        let old_len = self.loaded.len();
        // Grown by a quarter at least, not doubled: the array is most of
        // what the cache holds.
        let more = new.len().max(old_len / 4);
        if self.loaded.capacity() < old_len + new.len() {
            self.loaded.reserve_exact(more);
        }
        self.loaded.resize(old_len + new.len(), entry(first));
        let (mut i, mut j) = (old_len, new.len());
        for k in (0..self.loaded.len()).rev() {
            let take_new = i == 0 || (j > 0 && entry(&new[j - 1]).0 > self.loaded[i - 1].0);
            self.loaded[k] = if take_new {
                j -= 1;
                entry(&new[j])
            } else {
                i -= 1;
                self.loaded[i]
            };
            if j == 0 {
                break;
            }
        }
    }

    /// What a load of the file this table was just saved to gives: one
    /// sorted array, the racy entries (never saved) dropped, none marked
    /// used.
    fn settle(&mut self) {
        self.fold();
        self.loaded.retain(|(_, e)| !e.racy);
        for (_, e) in &mut self.loaded {
            e.used = false;
        }
    }

    /// Drops the entry for `stamp` (rare: a move of the array's tail).
    fn remove(&mut self, stamp: &Stamp) -> Option<Entry> {
        match self.position(stamp) {
            Ok(i) => Some(self.loaded.remove(i).1),
            Err(_) => self.added.remove(stamp),
        }
    }

    /// Every entry, in stamp order.
    fn sorted(&self) -> impl Iterator<Item = (&Stamp, &Entry)> {
        let mut added: Vec<_> = self.added.iter().collect();
        added.sort_unstable_by_key(|(s, _)| **s);
        let loaded = self.loaded.iter().map(|(s, e)| (s, e));
        super::merged_in_order(loaded, added.into_iter(), |(s, _)| **s)
    }
}

#[derive(Debug, Default)]
pub struct HashCache {
    path: Option<PathBuf>,
    entries: Table,
    loaded: usize,
    used: usize,
    misses: usize,
    /// The MD5s known, of entries with the same stamp (only of files
    /// whose MD5 was needed).
    md5s: HashMap<Stamp, [u8; 16]>,
    /// MD5s learnt for entries loaded without one.
    md5s_learnt: usize,
    /// A file changed at or after this is racy (nanoseconds since the epoch).
    trust_before_ns: i64,
    /// Loaded on first use: only a walk needs them.
    dirs: Option<DirListings>,
}

impl HashCache {
    /// A cache that is not persisted (for tests and one-off reads).
    pub fn in_memory() -> HashCache {
        HashCache {
            trust_before_ns: dir_listings::trust_before_ns(SystemTime::now()),
            ..HashCache::default()
        }
    }

    /// Loads the cache; a missing or unreadable file is an empty cache
    /// (it is derived state).
    pub fn load(path: &Path) -> HashCache {
        // The state directory's writes (this cache, sync bases) leave temp
        // files when killed; every plan loads this cache, so a converged
        // run clears them even when it writes nothing there itself.
        if let Some(dir) = path.parent() {
            crate::fsutil::sweep_dead_temps(dir);
        }
        let trust_before_ns = dir_listings::trust_before_ns(SystemTime::now());
        if let Some(mut kept) = take_kept(path) {
            kept.trust_before_ns = trust_before_ns;
            return kept;
        }
        let (loaded, mut md5s) = std::fs::read(path)
            .ok()
            .and_then(|b| decode(&b))
            .unwrap_or_default();
        if !loaded.is_sorted_by(|a, b| a.0 < b.0) {
            // Not a file this cache wrote (it writes each stamp once, in
            // order): its MD5s are not trusted to pair with the entry kept.
            md5s.clear();
        }
        let entries = Table::of_loaded(loaded);
        HashCache {
            path: Some(path.to_path_buf()),
            loaded: entries.len(),
            entries,
            md5s,
            trust_before_ns,
            ..HashCache::default()
        }
    }

    /// The sha256 of the file at `path` with metadata `meta` (from lstat),
    /// reading it only when the cache has no entry for it.
    pub fn sha256(&mut self, path: &Path, meta: &Metadata) -> io::Result<Sha256> {
        let stamp = Stamp::of(meta);
        match self.cached(stamp) {
            Some(sha) => Ok(sha),
            None => self.hash(path, stamp),
        }
    }

    /// The sha256 recorded for a file with `stamp`, marking the entry used;
    /// `None` when the file must be read ([`HashCache::hash`]).
    pub fn cached(&mut self, stamp: Stamp) -> Option<Sha256> {
        let entry = self.entries.get_mut(&stamp)?;
        if !entry.used {
            entry.used = true;
            // A racy entry is never saved: it changes nothing to write.
            if !entry.racy {
                self.used += 1;
            }
        }
        Some(Sha256(entry.sha256))
    }

    /// Takes the hashes of files this process has just written itself
    /// ([`Learnt`]), for this run only: each counts as racy (it was
    /// written within the racy margin), so it is never saved, and the next
    /// run reads the file again. It replaces an entry saved for the same
    /// stamp: the bytes just written are what the file holds.
    pub fn learn(&mut self, learnt: Learnt) {
        // Sorted and merged into the table's array in place: one by one
        // through its map, a million landed files held both whole (150
        // MB), then the map and its folds (100 MB) in a pull's verifying
        // plan.
        let mut list = learnt.into_entries();
        list.sort_unstable_by_key(|(stamp, _)| *stamp);
        // One stamp learnt with two contents (an inode reused at the same
        // size and nanosecond): neither is known, the file is read again.
        let mut ambiguous = Vec::new();
        list.dedup_by(|next, kept| {
            if next.0 != kept.0 {
                return false;
            }
            if next.1 != kept.1 && ambiguous.last() != Some(&kept.0) {
                ambiguous.push(kept.0);
            }
            true
        });
        for stamp in &ambiguous {
            self.drop_entry(stamp);
        }
        // Those the table holds are replaced where they are; the rest are
        // merged in.
        list.retain(|&(stamp, sha256)| {
            if ambiguous.binary_search(&stamp).is_ok() {
                return false;
            }
            let Some(old) = self.entries.get_mut(&stamp) else {
                return true;
            };
            if old.used && !old.racy {
                self.used -= 1;
            }
            if old.sha256 != sha256.0 {
                self.md5s.remove(&stamp);
            }
            *old = Entry::learnt(sha256);
            false
        });
        self.entries
            .merge_sorted(&list, |&(stamp, sha256)| (stamp, Entry::learnt(sha256)));
    }

    /// Forgets what is known of `stamp`.
    fn drop_entry(&mut self, stamp: &Stamp) {
        if let Some(old) = self.entries.remove(stamp)
            && old.used
            && !old.racy
        {
            self.used -= 1;
        }
        self.md5s.remove(stamp);
    }

    /// Reads and hashes the file at `path`, whose lstat gave `stamp`, and
    /// records it.
    pub fn hash(&mut self, path: &Path, stamp: Stamp) -> io::Result<Sha256> {
        self.misses += 1;
        let sha256 = fsutil::sha256_file_raw(path)?;
        crate::progress::meter().add(1, stamp.size);
        let entry = Entry {
            sha256,
            used: true,
            racy: stamp.mtime_ns >= self.trust_before_ns,
        };
        let old = self.entries.insert(stamp, entry);
        if old.is_none_or(|old| old.sha256 != sha256) {
            self.md5s.remove(&stamp);
        }
        if old.is_none_or(|old| !old.used) {
            self.used += 1;
        }
        Ok(Sha256(sha256))
    }

    /// The sha256 recorded for a file in state `stamp`, without reading
    /// it; `None` when the cache has no entry for it.
    pub fn known(&self, stamp: Stamp) -> Option<Sha256> {
        self.entries.get(&stamp).map(|e| Sha256(e.sha256))
    }

    /// The MD5 of the file at `path` (lstat `meta`) whose sha256 the caller
    /// observed as `sha256`: from the cache, or read (computing both, one
    /// read). `None` when the file no longer has that sha256 (it changed
    /// since it was observed) or cannot be read.
    pub fn md5(
        &mut self,
        path: &Path,
        meta: &Metadata,
        sha256: Sha256,
    ) -> Option<crate::digest::Md5> {
        let stamp = Stamp::of(meta);
        if let Some(e) = self.entries.get(&stamp)
            && e.sha256 == sha256.0
            && let Some(md5) = self.md5s.get(&stamp)
        {
            return Some(crate::digest::Md5(*md5));
        }
        let (sha, md5) = fsutil::sha256_md5_file(path).ok()?;
        if sha != sha256.0 {
            return None;
        }
        let racy = stamp.mtime_ns >= self.trust_before_ns;
        let entry = self.entries.get_or_insert(
            stamp,
            Entry {
                sha256: sha,
                used: true,
                racy,
            },
        );
        if entry.sha256 == sha && !self.md5s.contains_key(&stamp) {
            self.md5s.insert(stamp, md5);
            self.md5s_learnt += 1;
        }
        Some(crate::digest::Md5(md5))
    }

    /// How many files had to be read.
    pub fn misses(&self) -> usize {
        self.misses
    }

    /// The remembered directory listings (stored beside the cache).
    pub fn dirs(&mut self) -> &mut DirListings {
        let path = self.path.as_deref().map(dir_listings_path);
        self.dirs.get_or_insert_with(|| match path {
            Some(p) => DirListings::load(&p),
            None => DirListings::in_memory(),
        })
    }

    /// Takes the directory listings out (so a walk can read them while the
    /// cache is written to); [`HashCache::put_dirs`] gives them back.
    pub fn take_dirs(&mut self) -> DirListings {
        self.dirs();
        self.dirs.take().expect("loaded just now")
    }

    pub fn put_dirs(&mut self, dirs: DirListings) {
        self.dirs = Some(dirs);
    }

    /// Trusts every stamp, however recent (tests that cannot wait out the
    /// racy margin).
    #[cfg(test)]
    pub fn trust_all(&mut self) {
        self.trust_before_ns = i64::MAX;
    }

    /// When a change is too recent to trust a stamp: see
    /// [`dir_listings::RACY_MARGIN`].
    pub fn trust_before_ns(&self) -> i64 {
        self.trust_before_ns
    }

    /// Persists the entries used since loading (so entries for files that
    /// are gone are dropped), and the directory listings the same way.
    /// Writes nothing when nothing changed. For a full observation, which
    /// touches every file.
    pub fn save(&self) -> io::Result<()> {
        if let Some(dirs) = &self.dirs {
            dirs.save()?;
        }
        if self.misses == 0 && self.md5s_learnt == 0 && self.used == self.loaded {
            return Ok(());
        }
        self.write(|e| e.used)
    }

    /// Persists the loaded entries plus those learnt since, dropping none:
    /// for apply, which sees only the files it acts on (the next full
    /// observation prunes what is gone). Writes nothing when nothing new
    /// was learnt.
    pub fn save_keeping(&self) -> io::Result<()> {
        if self.misses == 0 && self.md5s_learnt == 0 {
            return Ok(());
        }
        self.write(|_| true)
    }

    /// [`HashCache::save_keeping`], then keeps the cache for this
    /// thread's next [`HashCache::load`] of the same file, as that load
    /// would find it, while the file (and that of the listings) is still
    /// the one written: an apply's cache, for its verifying plan. Loading
    /// a million entries and the listings of their directories again was
    /// a quarter of a second of a million-move apply.
    pub fn save_keeping_for_next_load(mut self) -> io::Result<()> {
        self.save_keeping()?;
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        self.settle();
        let dirs_file = file_at(&dir_listings_path(&path));
        let kept = Kept {
            file: file_at(&path),
            dirs_file,
            path,
            cache: self,
        };
        KEPT.with(|k| *k.borrow_mut() = Some(kept));
        Ok(())
    }

    /// What a load of the file [`HashCache::save_keeping`] just wrote (or
    /// left as it was) gives.
    fn settle(&mut self) {
        self.entries.settle();
        let entries = &self.entries;
        self.md5s.retain(|stamp, _| entries.get(stamp).is_some());
        self.loaded = self.entries.len();
        self.used = 0;
        self.misses = 0;
        self.md5s_learnt = 0;
        // Listings learnt since they were loaded are not saved by
        // `save_keeping`: then they are loaded again when needed.
        if self.dirs.as_mut().is_some_and(|d| !d.settle()) {
            self.dirs = None;
        }
    }

    fn write(&self, keep: impl Fn(&Entry) -> bool) -> io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let kept = self.entries.sorted().filter(|(_, e)| !e.racy && keep(e));
        // Streamed: built in memory, a million entries' 80 MB grew to 128.
        fsutil::atomic_write_with(path, |out| write_encoded(kept, &self.md5s, out))?;
        // The text cache of earlier versions, superseded by this file.
        let _ = std::fs::remove_file(path.with_file_name("hash-cache.tsv"));
        Ok(())
    }
}

const MAGIC: &[u8] = b"swamp hash cache 3\n";
/// The trailing CRC32 of everything before it.
const SUM: usize = 4;
/// dev, inode, size, mtime (8 bytes each, little-endian), the sha256, then
/// the MD5 (all zeros: not known).
const RECORD: usize = 8 * 4 + 32 + 16;

/// The file's bytes: [`MAGIC`], fixed-size records, and a CRC32 of all
/// that (against a torn or damaged file; whoever can write the file can
/// write any cache anyway). Binary, so loading 100,000 entries is a copy, not a parse (the
/// text form took a tenth of a warm plan's time).
#[cfg(test)]
fn encode<'a>(
    entries: impl Iterator<Item = (&'a Stamp, &'a Entry)>,
    md5s: &HashMap<Stamp, [u8; 16]>,
) -> Vec<u8> {
    let mut out = Vec::new();
    write_encoded(entries, md5s, &mut out).expect("writing to memory");
    out
}

/// [`encode`], written to `out` as it goes.
fn write_encoded<'a>(
    entries: impl Iterator<Item = (&'a Stamp, &'a Entry)>,
    md5s: &HashMap<Stamp, [u8; 16]>,
    out: &mut dyn io::Write,
) -> io::Result<()> {
    let mut out = fsutil::Summed::new(out);
    out.put(MAGIC)?;
    for (k, e) in entries {
        let mut record = [0u8; RECORD];
        record[0..32].copy_from_slice(&k.to_bytes());
        record[32..64].copy_from_slice(&e.sha256);
        if let Some(md5) = md5s.get(k) {
            record[64..80].copy_from_slice(md5);
        }
        out.put(&record)?;
    }
    out.finish()
}

/// The entries in `bytes` and the MD5s known of them, if they are a whole
/// cache file whose checksum holds (a cache that lies would vouch for
/// content a file does not have).
type Decoded = (Vec<(Stamp, Entry)>, HashMap<Stamp, [u8; 16]>);
fn decode(bytes: &[u8]) -> Option<Decoded> {
    let body = bytes.get(..bytes.len().checked_sub(SUM)?)?;
    let records = body.strip_prefix(MAGIC)?;
    if records.len() % RECORD != 0 || crc32fast::hash(body).to_le_bytes() != bytes[body.len()..] {
        return None;
    }
    let mut entries = Vec::with_capacity(records.len() / RECORD);
    let mut md5s = HashMap::default();
    for r in records.chunks_exact(RECORD) {
        let stamp = Stamp::from_bytes(r[0..32].try_into().expect("32 bytes"));
        let md5: [u8; 16] = r[64..80].try_into().expect("16 bytes");
        if md5 != [0; 16] {
            md5s.insert(stamp, md5);
        }
        let entry = Entry {
            sha256: r[32..64].try_into().expect("32 bytes"),
            used: false,
            racy: false,
        };
        entries.push((stamp, entry));
    }
    Some((entries, md5s))
}

/// Which file is at a path (its lstat: an atomic write puts a new one
/// there, with another inode and ctime).
fn file_at(path: &Path) -> Option<Stat> {
    std::fs::symlink_metadata(path).ok().map(|m| Stat::of(&m))
}

/// A cache kept for the next load ([`HashCache::save_keeping_for_next_load`]),
/// with the files it was saved as.
struct Kept {
    path: PathBuf,
    file: Option<Stat>,
    dirs_file: Option<Stat>,
    cache: HashCache,
}

thread_local!(static KEPT: std::cell::RefCell<Option<Kept>> = const { std::cell::RefCell::new(None) });

/// The cache kept for `path`, if its files are still those it was saved
/// as (else another process wrote them since: they are read). Taken, kept
/// or not: one hand-over only.
fn take_kept(path: &Path) -> Option<HashCache> {
    let kept = KEPT.with(|k| k.borrow_mut().take())?;
    if kept.path != path || file_at(path) != kept.file {
        return None;
    }
    let mut cache = kept.cache;
    if cache.dirs.is_some() && file_at(&dir_listings_path(path)) != kept.dirs_file {
        cache.dirs = None;
    }
    Some(cache)
}

/// Where the directory listings live, beside the hash cache.
fn dir_listings_path(cache: &Path) -> PathBuf {
    cache.with_file_name("dir-listings.bin")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `body` at `path` and backdates it past the racy margin.
    fn write_old(path: &Path, body: &[u8]) {
        std::fs::write(path, body).unwrap();
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(SystemTime::now() - std::time::Duration::from_secs(3600))
            .unwrap();
    }

    /// A cache as its entries (stamp, sha256) and MD5s.
    fn facts(entries: &[(Stamp, [u8; 32])], md5s: &HashMap<Stamp, [u8; 16]>) -> String {
        let mut md5s: Vec<_> = md5s.iter().collect();
        md5s.sort();
        format!("{entries:?} {md5s:?}")
    }

    #[test]
    fn a_cache_kept_for_the_next_load_is_what_loading_its_file_gives() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, fresh) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("fresh"),
        );
        write_old(&a, b"a");
        write_old(&b, b"b");
        std::fs::write(&fresh, b"just written").unwrap();
        let cache_path = dir.path().join("hash-cache.bin");
        let meta = |p: &Path| std::fs::symlink_metadata(p).unwrap();
        let mut c = HashCache::load(&cache_path);
        for f in [&a, &b, &fresh] {
            c.sha256(f, &meta(f)).unwrap();
        }
        assert!(c.md5(&a, &meta(&a), Sha256::of(b"a")).is_some());
        c.save_keeping_for_next_load().unwrap();

        let (on_disk, on_disk_md5s) = decode(&std::fs::read(&cache_path).unwrap()).unwrap();
        let on_disk: Vec<_> = on_disk.iter().map(|(s, e)| (*s, e.sha256)).collect();
        let kept = take_kept(&cache_path).expect("kept for this path");
        let kept_entries: Vec<_> = kept.entries.sorted().map(|(s, e)| (*s, e.sha256)).collect();
        assert_eq!(
            facts(&kept_entries, &kept.md5s),
            facts(&on_disk, &on_disk_md5s)
        );
        // The file just written is racy: neither saved nor kept.
        assert_eq!(kept_entries.len(), 2);
        assert_eq!(kept.md5s.len(), 1);
        assert!(kept.entries.sorted().all(|(_, e)| !e.used && !e.racy));
        assert_eq!((kept.loaded, kept.used, kept.misses), (2, 0, 0));
        assert!(take_kept(&cache_path).is_none(), "handed over once");
    }

    #[test]
    fn a_kept_cache_is_not_used_once_its_file_was_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        write_old(&a, b"a");
        write_old(&b, b"b");
        let cache_path = dir.path().join("hash-cache.bin");
        let meta = |p: &Path| std::fs::symlink_metadata(p).unwrap();
        // Another process's cache, knowing `b` only, written aside.
        let other_path = dir.path().join("other.bin");
        let mut other = HashCache::load(&other_path);
        other.sha256(&b, &meta(&b)).unwrap();
        other.save().unwrap();

        let mut c = HashCache::load(&cache_path);
        c.sha256(&a, &meta(&a)).unwrap();
        c.save_keeping_for_next_load().unwrap();
        // The other process replaces the file (as an atomic write does).
        std::fs::rename(&other_path, &cache_path).unwrap();
        let loaded = HashCache::load(&cache_path);
        assert_eq!(loaded.known(Stamp::of(&meta(&b))), Some(Sha256::of(b"b")));
        assert_eq!(loaded.known(Stamp::of(&meta(&a))), None);
    }

    #[test]
    fn second_load_reads_nothing_and_changes_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        write_old(&f, b"hello");
        let cache_path = dir.path().join("cache.tsv");

        let mut c = HashCache::load(&cache_path);
        let sha = c
            .sha256(&f, &std::fs::symlink_metadata(&f).unwrap())
            .unwrap();
        assert_eq!(c.misses(), 1);
        c.save().unwrap();

        let mut c = HashCache::load(&cache_path);
        assert_eq!(
            c.sha256(&f, &std::fs::symlink_metadata(&f).unwrap())
                .unwrap(),
            sha
        );
        assert_eq!(c.misses(), 0);

        std::fs::write(&f, b"hello, world").unwrap();
        let sha2 = c
            .sha256(&f, &std::fs::symlink_metadata(&f).unwrap())
            .unwrap();
        assert_ne!(sha2, sha);
        assert_eq!(c.misses(), 1);
    }

    #[test]
    fn apply_saves_what_it_learnt_without_dropping_what_it_did_not_touch() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        write_old(&a, b"a");
        let cache_path = dir.path().join("cache.tsv");
        let mut c = HashCache::load(&cache_path);
        c.sha256(&a, &std::fs::symlink_metadata(&a).unwrap())
            .unwrap();
        c.save().unwrap();

        // Apply knows `a` without reading it, and learns `b`.
        write_old(&b, b"b");
        let mut c = HashCache::load(&cache_path);
        let meta_a = std::fs::symlink_metadata(&a).unwrap();
        assert_eq!(
            c.known(Stamp::of(&meta_a)),
            Some(crate::digest::Sha256::of(b"a"))
        );
        c.sha256(&b, &std::fs::symlink_metadata(&b).unwrap())
            .unwrap();
        c.save_keeping().unwrap();

        let mut c = HashCache::load(&cache_path);
        c.sha256(&a, &meta_a).unwrap();
        c.sha256(&b, &std::fs::symlink_metadata(&b).unwrap())
            .unwrap();
        assert_eq!(c.misses(), 0, "both are known after apply saved");
    }

    #[test]
    fn a_file_changed_within_the_racy_margin_is_hashed_again_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let (old, new) = (dir.path().join("old"), dir.path().join("new"));
        write_old(&old, b"old");
        std::fs::write(&new, b"new").unwrap();
        let cache_path = dir.path().join("cache.tsv");
        let mut c = HashCache::load(&cache_path);
        for f in [&old, &new] {
            c.sha256(f, &std::fs::symlink_metadata(f).unwrap()).unwrap();
        }
        // Known to this run without a second read...
        c.sha256(&new, &std::fs::symlink_metadata(&new).unwrap())
            .unwrap();
        assert_eq!(c.misses(), 2);
        c.save().unwrap();
        // ...but not saved: it could still change within its stamp's tick.
        let mut c = HashCache::load(&cache_path);
        for f in [&old, &new] {
            c.sha256(f, &std::fs::symlink_metadata(f).unwrap()).unwrap();
        }
        assert_eq!(c.misses(), 1);
    }

    #[test]
    fn what_a_run_learnt_of_files_it_wrote_is_trusted_by_that_run_only() {
        let dir = tempfile::tempdir().unwrap();
        let (f, other) = (dir.path().join("f"), dir.path().join("other"));
        write_old(&f, b"as landed");
        write_old(&other, b"not learnt");
        let stamp = Stamp::of(&std::fs::symlink_metadata(&f).unwrap());
        let cache_path = dir.path().join("hash-cache.bin");
        let mut learnt = Learnt::default();
        learnt.push(stamp, crate::digest::Sha256::of(b"as landed"));

        let mut c = HashCache::load(&cache_path);
        c.learn(learnt);
        let sha = c
            .sha256(&f, &std::fs::symlink_metadata(&f).unwrap())
            .unwrap();
        assert_eq!(sha, crate::digest::Sha256::of(b"as landed"));
        assert_eq!(c.misses(), 0, "a learnt file is not read");
        c.sha256(&other, &std::fs::symlink_metadata(&other).unwrap())
            .unwrap();
        assert_eq!(c.misses(), 1, "a file not learnt is read");
        c.save().unwrap();

        // Never saved, however old the file's stamp: the next run reads it.
        let mut c = HashCache::load(&cache_path);
        c.sha256(&f, &std::fs::symlink_metadata(&f).unwrap())
            .unwrap();
        assert_eq!(c.misses(), 1);
    }

    #[test]
    fn a_learnt_hash_is_not_used_for_a_file_written_since() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        write_old(&f, b"as landed");
        let mut learnt = Learnt::default();
        learnt.push(
            Stamp::of(&std::fs::symlink_metadata(&f).unwrap()),
            crate::digest::Sha256::of(b"as landed"),
        );
        std::fs::write(&f, b"changed since").unwrap();
        let mut c = HashCache::in_memory();
        c.learn(learnt);
        let sha = c
            .sha256(&f, &std::fs::symlink_metadata(&f).unwrap())
            .unwrap();
        assert_eq!(sha, crate::digest::Sha256::of(b"changed since"));
    }

    #[test]
    fn rename_keeps_the_entry() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"hello").unwrap();
        let mut c = HashCache::in_memory();
        c.sha256(&f, &std::fs::symlink_metadata(&f).unwrap())
            .unwrap();
        let g = dir.path().join("g");
        std::fs::rename(&f, &g).unwrap();
        c.sha256(&g, &std::fs::symlink_metadata(&g).unwrap())
            .unwrap();
        assert_eq!(c.misses(), 1);
    }

    #[test]
    fn a_corrupt_or_truncated_cache_file_is_an_empty_cache() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        write_old(&f, b"hello");
        let cache_path = dir.path().join("hash-cache.bin");
        let mut c = HashCache::load(&cache_path);
        c.sha256(&f, &std::fs::symlink_metadata(&f).unwrap())
            .unwrap();
        c.save().unwrap();
        let good = std::fs::read(&cache_path).unwrap();
        assert_eq!(HashCache::load(&cache_path).entries.len(), 1);

        let mut flipped = good.clone();
        flipped[MAGIC.len() + 40] ^= 1;
        for bad in [
            b"garbage\n1\t2\t3\t4\tnothex\n".to_vec(),
            good[..good.len() - 1].to_vec(),
            flipped,
        ] {
            std::fs::write(&cache_path, bad).unwrap();
            assert!(HashCache::load(&cache_path).entries.is_empty());
        }
    }

    #[test]
    fn an_md5_is_read_once_with_the_sha256_kept_and_refused_for_a_changed_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        write_old(&f, b"hello\n");
        let cache_path = dir.path().join("hash-cache.bin");
        let meta = std::fs::symlink_metadata(&f).unwrap();
        let mut c = HashCache::load(&cache_path);
        let sha = c.sha256(&f, &meta).unwrap();
        c.save().unwrap();

        let mut c = HashCache::load(&cache_path);
        let md5 = c.md5(&f, &meta, sha).unwrap();
        assert_eq!(md5, crate::digest::Md5::of(b"hello\n"));
        // A caller that saw other content gets no MD5 for this file.
        assert_eq!(c.md5(&f, &meta, crate::digest::Sha256::of(b"other")), None);
        c.save_keeping().unwrap();

        // Kept: known next run without reading (the file is gone).
        std::fs::remove_file(&f).unwrap();
        let mut c = HashCache::load(&cache_path);
        assert_eq!(c.md5(&f, &meta, sha), Some(md5));
    }

    #[test]
    fn saving_removes_the_text_cache_of_earlier_versions() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        write_old(&f, b"hello");
        let old = dir.path().join("hash-cache.tsv");
        std::fs::write(&old, "1\t2\t3\t4\t00\n").unwrap();
        let mut c = HashCache::load(&dir.path().join("hash-cache.bin"));
        c.sha256(&f, &std::fs::symlink_metadata(&f).unwrap())
            .unwrap();
        c.save().unwrap();
        assert!(!old.exists());
    }

    fn stamp(ino: u64) -> Stamp {
        Stamp {
            dev: 1,
            ino,
            size: 4,
            mtime_ns: 1,
        }
    }

    fn entry(byte: u8) -> Entry {
        Entry {
            sha256: [byte; 32],
            used: true,
            racy: false,
        }
    }

    #[test]
    fn landed_hashes_join_the_table_in_order_and_a_stamp_landed_twice_differently_is_read_again() {
        let mut c = HashCache::in_memory();
        c.entries = Table::of_loaded((0..10u64).map(|i| (stamp(2 * i + 1), entry(1))).collect());
        c.used = 10;
        c.md5s.insert(stamp(3), [7; 16]);
        c.md5s.insert(stamp(5), [7; 16]);
        let mut learnt = Learnt::default();
        let sha = |b: u8| Sha256([b; 32]);
        // 3: the content it had (its MD5 stays); 5: new content (its MD5
        // goes); 7 and 14: two contents for one stamp (neither is known).
        for (ino, b) in [
            (8, 2),
            (3, 1),
            (14, 4),
            (2, 2),
            (5, 2),
            (7, 5),
            (12, 3),
            (12, 3),
            (14, 5),
            (7, 6),
        ] {
            learnt.push(stamp(ino), sha(b));
        }
        c.learn(learnt);
        for (ino, b) in [(2, 2), (3, 1), (5, 2), (8, 2), (12, 3), (1, 1), (19, 1)] {
            assert_eq!(c.known(stamp(ino)), Some(sha(b)), "{ino}");
        }
        assert_eq!(c.known(stamp(7)), None);
        assert_eq!(c.known(stamp(14)), None);
        assert_eq!(c.md5s.get(&stamp(3)), Some(&[7; 16]));
        assert_eq!(c.md5s.get(&stamp(5)), None);
        // Learnt entries are this run's only: never saved, not counted.
        assert!(c.entries.get(&stamp(2)).unwrap().racy);
        assert!(c.entries.get(&stamp(3)).unwrap().racy);
        assert_eq!(c.used, 10 - 3);
        assert!(c.entries.added.is_empty());
        let inos: Vec<u64> = c.entries.sorted().map(|(s, _)| s.ino).collect();
        assert_eq!(inos, [1, 2, 3, 5, 8, 9, 11, 12, 13, 15, 17, 19]);
    }

    #[test]
    fn more_learnt_entries_than_the_map_holds_are_folded_in_and_all_found() {
        // Odd inodes loaded, even ones learnt in a scrambled order: the
        // learnt ones land between the loaded ones, several folds over.
        let loaded = (0..40_000u64)
            .map(|i| (stamp(2 * i + 1), entry(1)))
            .collect();
        let mut table = Table::of_loaded(loaded);
        let n = 2 * ADDED_MOST as u64 + 123;
        for i in 0..n {
            let ino = 2 * ((i * 7919) % n);
            assert!(table.insert(stamp(ino), entry(2)).is_none());
        }
        assert!(table.added.len() < ADDED_MOST);
        assert_eq!(table.len(), 40_000 + n as usize);
        for i in 0..n {
            assert_eq!(table.get(&stamp(2 * i)).unwrap().sha256, [2; 32], "{i}");
        }
        assert_eq!(table.get(&stamp(79_999)).unwrap().sha256, [1; 32]);
        assert!(table.get(&stamp(80_001)).is_none());
        // Set again: replaced where it is, not added twice.
        assert!(table.insert(stamp(4), entry(3)).is_some());
        assert_eq!(table.get_or_insert(stamp(6), entry(4)).sha256, [2; 32]);
        let inos: Vec<u64> = table.sorted().map(|(s, _)| s.ino).collect();
        assert_eq!(inos.len(), table.len());
        assert!(inos.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn loaded_and_learnt_entries_are_found_and_saved_in_stamp_order() {
        // Loaded out of order (a file an older version wrote unsorted),
        // one stamp twice: sorted, the first kept.
        let mut table = Table::of_loaded(vec![
            (stamp(5), entry(5)),
            (stamp(1), entry(1)),
            (stamp(5), entry(9)),
            (stamp(3), entry(3)),
        ]);
        assert_eq!(table.len(), 3);
        assert_eq!(table.get(&stamp(5)).unwrap().sha256, [5; 32]);
        assert!(table.get(&stamp(2)).is_none());
        assert!(table.insert(stamp(2), entry(2)).is_none());
        assert!(table.insert(stamp(6), entry(6)).is_none());
        assert_eq!(table.insert(stamp(3), entry(7)).unwrap().sha256, [3; 32]);
        table.get_mut(&stamp(6)).unwrap().used = false;
        assert!(!table.get(&stamp(6)).unwrap().used);
        assert_eq!(table.get_or_insert(stamp(1), entry(8)).sha256, [1; 32]);
        assert_eq!(table.get_or_insert(stamp(0), entry(0)).sha256, [0; 32]);
        let order: Vec<(u64, u8)> = table.sorted().map(|(s, e)| (s.ino, e.sha256[0])).collect();
        assert_eq!(order, [(0, 0), (1, 1), (2, 2), (3, 7), (5, 5), (6, 6)]);
        // What is written loads back as it was, already sorted.
        let md5s = HashMap::from_iter([(stamp(2), [4; 16])]);
        let bytes = encode(table.sorted(), &md5s);
        let (loaded, md5s_loaded) = decode(&bytes).unwrap();
        assert_eq!(md5s_loaded, md5s);
        assert!(loaded.is_sorted_by(|a, b| a.0 < b.0));
        assert_eq!(loaded.len(), 6);
    }
}
