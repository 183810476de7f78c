//! A persistent `(device, inode, size, mtime) → sha256` cache, so a file
//! that has not changed is not read again. Keyed by inode rather than path:
//! a rename (every move we make) keeps the entry valid.
//!
//! Stored as a small text file in the reconciler's state directory and
//! rewritten atomically only when it changed.

use std::collections::HashMap;
use std::fs::Metadata;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::fsutil;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

impl Key {
    fn of(meta: &Metadata) -> Key {
        Key {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128,
        }
    }
}

#[derive(Debug, Default)]
pub struct HashCache {
    path: Option<PathBuf>,
    entries: HashMap<Key, String>,
    used: HashMap<Key, String>,
    misses: usize,
}

impl HashCache {
    /// A cache that is not persisted (for tests and one-off reads).
    pub fn in_memory() -> HashCache {
        HashCache::default()
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
        let mut entries = HashMap::new();
        if let Ok(text) = std::fs::read_to_string(path) {
            for line in text.lines() {
                let mut f = line.split('\t');
                let (Some(dev), Some(ino), Some(size), Some(mtime), Some(sha), None) =
                    (f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
                else {
                    continue;
                };
                let (Ok(dev), Ok(ino), Ok(size), Ok(mtime_ns)) =
                    (dev.parse(), ino.parse(), size.parse(), mtime.parse())
                else {
                    continue;
                };
                if sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                    entries.insert(
                        Key {
                            dev,
                            ino,
                            size,
                            mtime_ns,
                        },
                        sha.to_string(),
                    );
                }
            }
        }
        HashCache {
            path: Some(path.to_path_buf()),
            entries,
            used: HashMap::new(),
            misses: 0,
        }
    }

    /// The sha256 of the file at `path` with metadata `meta` (from lstat),
    /// reading it only when the cache has no entry for it.
    pub fn sha256(&mut self, path: &Path, meta: &Metadata) -> io::Result<String> {
        let key = Key::of(meta);
        if let Some(sha) = self.used.get(&key) {
            return Ok(sha.clone());
        }
        let sha = match self.entries.get(&key) {
            Some(sha) => sha.clone(),
            None => {
                self.misses += 1;
                fsutil::sha256_file(path)?
            }
        };
        self.used.insert(key, sha.clone());
        Ok(sha)
    }

    /// The sha256 recorded for a file with metadata `meta`, without reading
    /// it; `None` when the cache has no entry for it.
    pub fn known(&self, meta: &Metadata) -> Option<&str> {
        let key = Key::of(meta);
        self.used
            .get(&key)
            .or_else(|| self.entries.get(&key))
            .map(String::as_str)
    }

    /// How many files had to be read.
    pub fn misses(&self) -> usize {
        self.misses
    }

    /// Persists the entries used since loading (so entries for files that
    /// are gone are dropped). Writes nothing when nothing changed. For a
    /// full observation, which touches every file.
    pub fn save(&self) -> io::Result<()> {
        if self.misses == 0 && self.used.len() == self.entries.len() {
            return Ok(());
        }
        self.write(&self.used)
    }

    /// Persists the loaded entries plus those learnt since, dropping none:
    /// for apply, which sees only the files it acts on (the next full
    /// observation prunes what is gone). Writes nothing when nothing new
    /// was learnt.
    pub fn save_keeping(&self) -> io::Result<()> {
        if self.misses == 0 {
            return Ok(());
        }
        let mut all = self.entries.clone();
        all.extend(self.used.iter().map(|(k, v)| (*k, v.clone())));
        self.write(&all)
    }

    fn write(&self, entries: &HashMap<Key, String>) -> io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut out = String::with_capacity(entries.len() * 100);
        for (k, sha) in entries {
            out.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\n",
                k.dev, k.ino, k.size, k.mtime_ns, sha
            ));
        }
        fsutil::atomic_write(path, out.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_load_reads_nothing_and_changes_are_seen() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"hello").unwrap();
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
        std::fs::write(&a, b"a").unwrap();
        let cache_path = dir.path().join("cache.tsv");
        let mut c = HashCache::load(&cache_path);
        c.sha256(&a, &std::fs::symlink_metadata(&a).unwrap())
            .unwrap();
        c.save().unwrap();

        // Apply knows `a` without reading it, and learns `b`.
        std::fs::write(&b, b"b").unwrap();
        let mut c = HashCache::load(&cache_path);
        let meta_a = std::fs::symlink_metadata(&a).unwrap();
        assert_eq!(c.known(&meta_a), Some(fsutil::sha256_bytes(b"a").as_str()));
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
    fn corrupt_cache_file_is_an_empty_cache() {
        let dir = tempfile::tempdir().unwrap();
        let cache_path = dir.path().join("cache.tsv");
        std::fs::write(&cache_path, "garbage\n1\t2\t3\t4\tnothex\n").unwrap();
        let c = HashCache::load(&cache_path);
        assert!(c.entries.is_empty());
    }
}
