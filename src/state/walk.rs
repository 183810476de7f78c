//! The walk of one directory tree, the only place observation reads
//! directories: parallel over subdirectories, reading a directory's entries
//! only when no remembered listing matches its stamp (see
//! [`super::dir_listings`]), and lstat-ing every entry (a symlink is never
//! followed). Entries come back in the order a sorted depth-first walk
//! visits them (a directory before what it holds, siblings by name as
//! bytes), so observation is deterministic.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::dir_listings::{DirKey, DirListings, Listing, ListingRef};
pub(crate) use super::stat::Stat;

/// How a directory's listing was come by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The remembered listing for its stamp (and where the listings hold
    /// it: [`DirListings::find`]).
    Remembered(DirKey, Option<u32>),
    /// Read now, and old enough to remember.
    Read(DirKey, Listing),
    /// Read now, but changed too recently to remember.
    Racy,
}

/// One entry beneath the walked directory.
#[derive(Debug)]
pub(crate) struct WalkEntry {
    /// The root's name (as the caller gave it), then each name below it,
    /// joined by `/`.
    pub rel: Box<[u8]>,
    /// 1 for an entry directly in the walked directory.
    pub depth: u32,
    pub stat: Stat,
}

/// What a walk found: every entry beneath the walked directory in walk
/// order, and how each directory's listing (its own included) was come by.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    pub entries: Vec<WalkEntry>,
    /// The walked directory's own first, the rest in no particular order.
    pub seen: Vec<Seen>,
}

impl Walked {
    fn append(&mut self, other: Walked) {
        self.entries.extend(other.entries);
        self.seen.extend(other.seen);
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {source}", .path.display())]
pub struct WalkError {
    pub path: PathBuf,
    pub source: io::Error,
}

/// Why a directory's children could not all be walked.
enum Fail {
    /// A listed entry is gone: the listing was stale.
    Vanished(WalkError),
    Io(WalkError),
}

/// The walked directory, held open: entries beneath it are statted by
/// their path relative to it, so the kernel resolves a few names per entry
/// instead of the whole absolute path (half of a warm plan's time was that
/// lookup at 100,000 files).
struct Anchor {
    /// `None` when the directory could not be opened as the one statted (it
    /// was replaced meanwhile): entries are then statted by absolute path.
    fd: Option<OwnedFd>,
    /// How many bytes of an entry's `rel` name the walked directory itself
    /// (its name and the `/` after it).
    skip: usize,
}

impl Anchor {
    fn open(dir: &Path, rel: &[u8], stat: &Stat) -> Anchor {
        Anchor::try_open(dir, rel, stat).unwrap_or(Anchor {
            fd: None,
            skip: rel.len() + 1,
        })
    }

    /// `dir` held open, if it can be opened as the directory statted.
    fn try_open(dir: &Path, rel: &[u8], stat: &Stat) -> Option<Anchor> {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::open(dir, flags, Mode::empty()).ok()?;
        let same = fstat(&fd).is_ok_and(|s| s.dev == stat.dev && s.ino == stat.ino);
        same.then_some(Anchor {
            fd: Some(fd),
            skip: rel.len() + 1,
        })
    }

    /// The anchor for the entries of `dir` (named `rel`, with `n` entries):
    /// `dir` itself when it holds at least [`ANCHOR_MIN`] (each of them is
    /// then one name from it; the path from a tier's root was a fifth of a
    /// walk's time at a million files), else this one.
    fn for_dir<'s>(
        &'s self,
        own: &'s mut Option<Anchor>,
        dir: &Path,
        rel: &[u8],
        stat: &Stat,
        n: usize,
    ) -> &'s Anchor {
        if n < ANCHOR_MIN || self.skip == rel.len() + 1 {
            return self;
        }
        *own = Anchor::try_open(dir, rel, stat);
        own.as_ref().unwrap_or(self)
    }

    /// The lstat of the entry named `rel` (from the walk's root) at the
    /// path `dir`/`name`.
    fn lstat(&self, rel: &[u8], dir: &Path, name: &[u8]) -> io::Result<Stat> {
        match &self.fd {
            Some(fd) if rel.len() > self.skip => lstatat(fd, OsStr::from_bytes(&rel[self.skip..])),
            _ => fs::symlink_metadata(dir.join(OsStr::from_bytes(name))).map(|m| Stat::of(&m)),
        }
    }
}

/// A directory with at least this many entries is held open while they
/// are statted ([`Anchor::for_dir`]): an open and a close cost more than
/// resolving a few names for a handful of entries.
const ANCHOR_MIN: usize = 64;

fn fstat(fd: &OwnedFd) -> io::Result<Stat> {
    Ok(Stat::of_raw(&rustix::fs::fstat(fd)?))
}

/// The lstat of `path` relative to the directory `dir` (no allocation:
/// rustix passes a short path to the kernel from the stack).
fn lstatat(dir: &OwnedFd, path: &OsStr) -> io::Result<Stat> {
    let st = rustix::fs::statat(dir, path, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(Stat::of_raw(&st))
}

pub(crate) struct Walker<'a> {
    listings: &'a DirListings,
    /// A directory changed at or after this is racy (nanoseconds since the
    /// epoch).
    trust_before_ns: i64,
}

impl WalkEntry {
    /// The entry's own name.
    #[cfg(test)]
    pub(crate) fn name(&self) -> &[u8] {
        match self.rel.iter().rposition(|&b| b == b'/') {
            Some(i) => &self.rel[i + 1..],
            None => &self.rel,
        }
    }
}

impl<'a> Walker<'a> {
    pub(crate) fn new(listings: &'a DirListings, trust_before_ns: i64) -> Walker<'a> {
        Walker {
            listings,
            trust_before_ns,
        }
    }

    /// Walks the directory `dir` (whose lstat is `stat`), naming entries
    /// from `rel`.
    #[cfg(test)]
    pub(crate) fn walk(&self, dir: &Path, rel: &[u8], stat: &Stat) -> Result<Walked, WalkError> {
        let mut out = Walked::default();
        let anchor = Anchor::open(dir, rel, stat);
        self.walk_dir(&anchor, dir, rel, 0, stat, false, &mut out)?;
        Ok(out)
    }

    /// Like [`Walker::walk`], but hands over what it finds a part at a
    /// time, in walk order: `dir`'s children [`CHUNK`] at a time, walked
    /// side by side, each with everything beneath it; but a child that is
    /// a big directory (at least [`SPLIT_MIN`] entries, some of them
    /// directories) is handed over as its own entry and then its children
    /// the same way. Each directory's listing record comes after what it
    /// holds. A big tree is never held whole: a million files under one
    /// directory were 230 MB of entries at once.
    pub(crate) fn walk_in_parts<E: From<WalkError>>(
        &self,
        dir: &Path,
        rel: &[u8],
        stat: &Stat,
        mut each: impl FnMut(Walked) -> Result<(), E>,
    ) -> Result<(), E> {
        let anchor = Anchor::open(dir, rel, stat);
        self.parts(&anchor, dir, rel, 0, stat, &mut each)
    }

    /// [`Walker::walk_in_parts`] of `dir`, at `depth` below the walk's root.
    fn parts<E: From<WalkError>>(
        &self,
        anchor: &Anchor,
        dir: &Path,
        rel: &[u8],
        depth: u32,
        stat: &Stat,
        each: &mut impl FnMut(Walked) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut got = self.listing(dir, stat, false)?;
        let mut own = None;
        let n = got.listing().entries().count();
        let anchor = anchor.for_dir(&mut own, dir, rel, stat, n);
        // The last child handed over.
        let mut done: Option<Vec<u8>> = None;
        loop {
            let mut vanished = false;
            let listing = got.listing();
            let names: Vec<&[u8]> = listing
                .entries()
                .map(|(_, name)| name)
                .filter(|name| done.as_deref().is_none_or(|d| *name > d))
                .collect();
            for chunk in names.chunks(CHUNK) {
                let walked: Result<Vec<Part>, Fail> = chunk
                    .par_iter()
                    .map(|name| self.part(anchor, dir, rel, depth + 1, name))
                    .collect();
                let walked = match walked {
                    Ok(walked) => walked,
                    // Nothing of this chunk is handed over yet.
                    Err(Fail::Vanished(_)) if got.read.is_none() => {
                        vanished = true;
                        break;
                    }
                    Err(Fail::Vanished(e) | Fail::Io(e)) => return Err(e.into()),
                };
                for (name, part) in chunk.iter().zip(walked) {
                    each(part.walked)?;
                    if let Some((path, child_rel, child)) = part.split {
                        self.parts(anchor, &path, &child_rel, depth + 1, &child, each)?;
                    }
                    done = Some(name.to_vec());
                }
            }
            if !vanished {
                break;
            }
            // The remembered listing named an entry that is gone: read the
            // directory, and go on after the last child handed over.
            got.read = Some(read_listing(dir)?);
        }
        let seen = self.seen(got);
        each(Walked {
            entries: Vec::new(),
            seen: vec![seen],
        })
    }

    /// One child of a directory walked in parts (at `depth`): its entry and
    /// all beneath it, or only its entry when it is to be split.
    fn part(
        &self,
        anchor: &Anchor,
        dir: &Path,
        rel: &[u8],
        depth: u32,
        name: &[u8],
    ) -> Result<Part, Fail> {
        let (child_rel, stat) = self.lstat_child(anchor, dir, rel, name)?;
        let mut walked = Walked::default();
        walked.entries.push(WalkEntry {
            rel: child_rel.as_slice().into(),
            depth,
            stat,
        });
        if !stat.is_dir() {
            return Ok(Part {
                walked,
                split: None,
            });
        }
        let path = dir.join(OsStr::from_bytes(name));
        let got = self.listing(&path, &stat, false).map_err(Fail::Io)?;
        let listing = got.listing();
        if listing.has_dirs() && listing.entries().nth(SPLIT_MIN - 1).is_some() {
            return Ok(Part {
                walked,
                split: Some((path, child_rel, stat)),
            });
        }
        self.walk_listed(anchor, &path, &child_rel, depth, &stat, got, &mut walked)
            .map_err(Fail::Io)?;
        Ok(Part {
            walked,
            split: None,
        })
    }

    /// The listing of `dir` (whose lstat is `stat`): remembered for its
    /// stamp (unless `reread`), else read now.
    fn listing(&self, dir: &Path, stat: &Stat, reread: bool) -> Result<Got<'a>, WalkError> {
        let key = DirKey::of(stat);
        let found = if reread {
            None
        } else {
            self.listings.find(&key)
        };
        let remembered = found.map(|(_, listing)| listing);
        let read = match remembered {
            Some(_) => None,
            None => Some(read_listing(dir)?),
        };
        Ok(Got {
            key,
            at: found.and_then(|(at, _)| at),
            remembered,
            read,
        })
    }

    /// How the listing in `got` was come by: read now, or remembered.
    fn seen(&self, got: Got<'_>) -> Seen {
        match got.read {
            None => Seen::Remembered(got.key, got.at),
            Some(_) if got.key.is_racy(self.trust_before_ns) => Seen::Racy,
            Some(listing) => Seen::Read(got.key, listing),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn walk_dir(
        &self,
        anchor: &Anchor,
        dir: &Path,
        rel: &[u8],
        depth: u32,
        stat: &Stat,
        reread: bool,
        out: &mut Walked,
    ) -> Result<(), WalkError> {
        let got = self.listing(dir, stat, reread)?;
        self.walk_listed(anchor, dir, rel, depth, stat, got, out)
    }

    /// [`Walker::walk_dir`] with `dir`'s listing come by already.
    #[allow(clippy::too_many_arguments)]
    fn walk_listed(
        &self,
        anchor: &Anchor,
        dir: &Path,
        rel: &[u8],
        depth: u32,
        stat: &Stat,
        got: Got<'_>,
        out: &mut Walked,
    ) -> Result<(), WalkError> {
        let listing = got.listing();
        let names: Vec<&[u8]> = listing.entries().map(|(_, name)| name).collect();
        let mut own = None;
        let anchor = anchor.for_dir(&mut own, dir, rel, stat, names.len());
        // Leaves are statted in batches; a directory of directories splits
        // all the way down, so the threads share the tree.
        let min_len = if listing.has_dirs() { 1 } else { 256 };
        let parts: Result<Vec<Walked>, Fail> = names
            .par_iter()
            .with_min_len(min_len)
            .try_fold(Walked::default, |mut acc, name| {
                self.child(anchor, dir, rel, depth + 1, name, &mut acc)?;
                Ok(acc)
            })
            .collect();
        let parts = match parts {
            Ok(parts) => parts,
            Err(Fail::Vanished(_)) if got.remembered.is_some() => {
                return self.walk_dir(anchor, dir, rel, depth, stat, true, out);
            }
            Err(Fail::Vanished(e) | Fail::Io(e)) => return Err(e),
        };
        out.seen.push(self.seen(got));
        out.entries
            .reserve(parts.iter().map(|p| p.entries.len()).sum());
        for part in parts {
            out.append(part);
        }
        Ok(())
    }

    /// The name from the walk's root and the lstat of `dir`'s entry
    /// `name` (its path is made only for a directory, to go into).
    fn lstat_child(
        &self,
        anchor: &Anchor,
        dir: &Path,
        rel: &[u8],
        name: &[u8],
    ) -> Result<(Vec<u8>, Stat), Fail> {
        let mut child_rel = Vec::with_capacity(rel.len() + 1 + name.len());
        child_rel.extend_from_slice(rel);
        child_rel.push(b'/');
        child_rel.extend_from_slice(name);
        match anchor.lstat(&child_rel, dir, name) {
            Ok(stat) => Ok((child_rel, stat)),
            Err(source) => {
                let vanished = source.kind() == io::ErrorKind::NotFound;
                let e = WalkError {
                    path: dir.join(OsStr::from_bytes(name)),
                    source,
                };
                Err(if vanished {
                    Fail::Vanished(e)
                } else {
                    Fail::Io(e)
                })
            }
        }
    }

    fn child(
        &self,
        anchor: &Anchor,
        dir: &Path,
        rel: &[u8],
        depth: u32,
        name: &[u8],
        out: &mut Walked,
    ) -> Result<(), Fail> {
        let (child_rel, stat) = self.lstat_child(anchor, dir, rel, name)?;
        if !stat.is_dir() {
            out.entries.push(WalkEntry {
                rel: child_rel.into_boxed_slice(),
                depth,
                stat,
            });
            return Ok(());
        }
        out.entries.push(WalkEntry {
            rel: child_rel.as_slice().into(),
            depth,
            stat,
        });
        let path = dir.join(OsStr::from_bytes(name));
        self.walk_dir(anchor, &path, &child_rel, depth, &stat, false, out)
            .map_err(Fail::Io)
    }
}

/// A directory's listing as a walk came by it ([`Walker::listing`]).
struct Got<'l> {
    key: DirKey,
    /// Where the listings hold the remembered one, if loaded with them.
    at: Option<u32>,
    remembered: Option<ListingRef<'l>>,
    /// Read now (also after a remembered listing proved stale).
    read: Option<Listing>,
}

impl Got<'_> {
    /// The listing: as read now if it was, else as remembered.
    fn listing(&self) -> ListingRef<'_> {
        self.read
            .as_ref()
            .map(Listing::as_ref)
            .or(self.remembered)
            .expect("remembered or read")
    }
}

/// A directory with fewer entries than this, or with no directories among
/// them, is walked whole as one part of [`Walker::walk_in_parts`].
const SPLIT_MIN: usize = 64;

/// How many children of a directory split by [`Walker::walk_in_parts`] are
/// walked side by side (a part each): enough to keep the threads busy with
/// small children, few enough that big ones are not held all at once.
const CHUNK: usize = 64;

/// What [`Walker::part`] found of one child: its entry and what it holds,
/// or (`split`: its path, name and lstat) its entry only, its children to
/// be handed over in parts of their own.
struct Part {
    walked: Walked,
    split: Option<(PathBuf, Vec<u8>, Stat)>,
}

fn read_listing(dir: &Path) -> Result<Listing, WalkError> {
    Listing::read(dir).map_err(|source| WalkError {
        path: dir.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::state::dir_listings::trust_before_ns;

    /// The walk of `root`: how root's listing was come by (the walk
    /// records the root's first), and what it found.
    fn walk(root: &Path, listings: &DirListings, trust: i64) -> (Seen, Walked) {
        let stat = Stat::of(&fs::symlink_metadata(root).unwrap());
        let walked = Walker::new(listings, trust)
            .walk(root, b"t", &stat)
            .unwrap();
        (walked.seen[0].clone(), walked)
    }

    /// How the listing of the directory `rel` was come by.
    fn seen_of(walked: &Walked, rel: &str) -> &'static str {
        let e = walked
            .entries
            .iter()
            .find(|e| e.rel.as_ref() == rel.as_bytes())
            .unwrap();
        let key = DirKey::of(&e.stat);
        let seen = walked.seen.iter().find(|s| match s {
            Seen::Remembered(k, _) | Seen::Read(k, _) => *k == key,
            Seen::Racy => false,
        });
        match seen {
            Some(Seen::Remembered(..)) => "remembered",
            Some(Seen::Read(..)) => "read",
            _ => "racy",
        }
    }

    fn rels(entries: &[WalkEntry]) -> Vec<String> {
        entries
            .iter()
            .map(|e| format!("{} {}", e.depth, String::from_utf8_lossy(&e.rel)))
            .collect()
    }

    /// Remembers every listing the walk read, as a plan's save does.
    fn learn(listings: &mut DirListings, walked: &Walked) {
        for seen in &walked.seen {
            match seen {
                Seen::Read(k, l) => listings.learn(*k, l.clone()),
                Seen::Remembered(k, at) => listings.used_at(k, *at),
                Seen::Racy => {}
            }
        }
    }

    /// `dirs` and `files` under `t`, each file holding its own name.
    fn make_tree(t: &Path, dirs: &[&str], files: &[&str]) {
        for d in dirs {
            fs::create_dir_all(t.join(d)).unwrap();
        }
        for f in files {
            fs::write(t.join(f), f).unwrap();
        }
    }

    #[test]
    fn entries_come_in_sorted_depth_first_order() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        make_tree(
            &t,
            &["a/b", "a.txt.d", "c"],
            &["a/b/1", "a/b/2", "a/z", "a.txt", "c/x"],
        );
        let listings = DirListings::in_memory();
        let (_, walked) = walk(&t, &listings, i64::MIN);
        let entries = &walked.entries;
        assert_eq!(
            rels(entries),
            [
                "1 t/a",
                "2 t/a/b",
                "3 t/a/b/1",
                "3 t/a/b/2",
                "2 t/a/z",
                "1 t/a.txt",
                "1 t/a.txt.d",
                "1 t/c",
                "2 t/c/x"
            ]
        );
        assert!(entries[0].stat.is_dir());
        assert_eq!(seen_of(&walked, "t/a"), "racy");
        assert!(entries[2].stat.is_file());
        assert_eq!(entries[2].name(), b"1");
    }

    #[test]
    fn an_unchanged_directory_is_not_read_again_and_a_changed_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        fs::create_dir_all(t.join("old")).unwrap();
        fs::write(t.join("old/f"), b"1").unwrap();
        // Trust everything: these stamps are seconds old by the margin's clock.
        let trust = trust_before_ns(SystemTime::now() + std::time::Duration::from_secs(60));
        let mut listings = DirListings::in_memory();
        let (root, walked) = walk(&t, &listings, trust);
        assert!(matches!(root, Seen::Read(..)));
        learn(&mut listings, &walked);

        // A file written in place keeps its directory's stamp: the listing
        // is remembered, and the file's own stat shows the new size.
        fs::write(t.join("old/f"), b"longer").unwrap();
        let (root, walked) = walk(&t, &listings, trust);
        assert!(matches!(root, Seen::Remembered(..)));
        assert_eq!(seen_of(&walked, "t/old"), "remembered");
        assert_eq!(walked.entries[1].stat.size, 6);

        // A new file changes its directory's stamp: read again.
        fs::write(t.join("old/g"), b"2").unwrap();
        let (root, walked) = walk(&t, &listings, trust);
        assert!(matches!(root, Seen::Remembered(..)));
        assert_eq!(seen_of(&walked, "t/old"), "read");
        assert_eq!(rels(&walked.entries), ["1 t/old", "2 t/old/f", "2 t/old/g"]);
    }

    #[test]
    fn a_listing_that_lies_is_read_again_when_an_entry_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        fs::create_dir_all(&t).unwrap();
        fs::write(t.join("real"), b"1").unwrap();
        let stat = Stat::of(&fs::symlink_metadata(&t).unwrap());
        let mut listings = DirListings::in_memory();
        // As if the directory's stamp had been put back after a change.
        let lie = tempfile::tempdir().unwrap();
        fs::write(lie.path().join("gone"), b"").unwrap();
        listings.learn(DirKey::of(&stat), Listing::read(lie.path()).unwrap());
        let walked = Walker::new(&listings, i64::MIN)
            .walk(&t, b"t", &stat)
            .unwrap();
        assert_eq!(walked.seen, [Seen::Racy], "read again");
        assert_eq!(rels(&walked.entries), ["1 t/real"]);
    }

    #[test]
    fn entries_of_a_big_directory_carry_their_own_lstat() {
        // Enough entries that the big directories are held open and their
        // entries statted from there, beside small ones statted from the
        // root: each entry's stat is that of its own path.
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        for i in 0..ANCHOR_MIN + 3 {
            let sub = t.join(format!("big/d{i:03}"));
            fs::create_dir_all(&sub).unwrap();
            fs::write(sub.join("f"), vec![b'x'; i]).unwrap();
            fs::write(t.join(format!("flat-{i:03}")), vec![b'y'; i + 1]).unwrap();
        }
        fs::create_dir_all(t.join("small/s")).unwrap();
        fs::write(t.join("small/s/g"), b"g").unwrap();
        let (whole, parts) = whole_and_parts(&t);
        let in_parts: Vec<WalkEntry> = parts.into_iter().flat_map(|p| p.entries).collect();
        for entries in [&whole.entries, &in_parts] {
            assert_eq!(entries.len(), 3 * (ANCHOR_MIN + 3) + 4);
            for e in entries {
                let rel = std::str::from_utf8(&e.rel).unwrap();
                let path = dir.path().join(rel);
                let meta = fs::symlink_metadata(&path).unwrap();
                assert_eq!(e.stat, Stat::of(&meta), "{rel}");
            }
        }
    }

    /// The walk of `t` whole, and the parts a walk of it in parts hands over.
    fn whole_and_parts(t: &Path) -> (Walked, Vec<Walked>) {
        let stat = Stat::of(&fs::symlink_metadata(t).unwrap());
        let listings = DirListings::in_memory();
        let walker = Walker::new(&listings, i64::MIN);
        let whole = walker.walk(t, b"t", &stat).unwrap();
        let mut parts = Vec::new();
        walker
            .walk_in_parts(t, b"t", &stat, |part| {
                parts.push(part);
                Ok::<_, WalkError>(())
            })
            .unwrap();
        (whole, parts)
    }

    #[test]
    fn a_walk_in_parts_hands_over_what_a_whole_walk_finds() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        make_tree(&t, &["a/b", "c", "e"], &["a/b/1", "a/z", "b", "c/x", "d"]);
        let (whole, mut parts) = whole_and_parts(&t);
        // One part per child of t (each small, so walked whole), then t's
        // own listing record.
        assert_eq!(parts.len(), 6);
        let last = parts.pop().unwrap();
        assert!(last.entries.is_empty() && last.seen == [Seen::Racy]);
        let entries: Vec<_> = parts.iter().flat_map(|p| p.entries.iter()).collect();
        assert_eq!(
            entries
                .iter()
                .map(|e| (&e.rel, e.depth))
                .collect::<Vec<_>>(),
            whole
                .entries
                .iter()
                .map(|e| (&e.rel, e.depth))
                .collect::<Vec<_>>()
        );
        let seen: usize = parts.iter().map(|p| p.seen.len()).sum();
        assert_eq!(seen + 1, whole.seen.len(), "every directory's record, once");
    }

    #[test]
    fn a_directory_of_many_directories_is_handed_over_a_directory_at_a_time() {
        // t/big holds SPLIT_MIN + 6 directories of 3 files each, and a file.
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        let n = SPLIT_MIN + 6;
        for i in 0..n {
            let d = t.join(format!("big/d{i:03}"));
            fs::create_dir_all(&d).unwrap();
            for f in ["x", "y", "z"] {
                fs::write(d.join(f), f).unwrap();
            }
        }
        fs::write(t.join("big/file"), b"f").unwrap();
        let (whole, parts) = whole_and_parts(&t);
        // No part holds more than one small directory and its files.
        let most = parts.iter().map(|p| p.entries.len()).max().unwrap();
        assert_eq!(most, 4);
        let entries: Vec<_> = parts
            .iter()
            .flat_map(|p| p.entries.iter())
            .map(|e| (&e.rel, e.depth))
            .collect();
        let expected: Vec<_> = whole.entries.iter().map(|e| (&e.rel, e.depth)).collect();
        assert_eq!(entries, expected);
        assert_eq!(entries.len(), 1 + n * 4 + 1);
        let seen: usize = parts.iter().map(|p| p.seen.len()).sum();
        assert_eq!(seen, whole.seen.len(), "every directory's record, once");
        assert_eq!(seen, 2 + n);
    }

    #[test]
    fn an_unreadable_directory_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("t");
        fs::create_dir_all(&t).unwrap();
        let stat = Stat::of(&fs::symlink_metadata(&t).unwrap());
        fs::remove_dir(&t).unwrap();
        let e = Walker::new(&DirListings::in_memory(), i64::MAX)
            .walk(&t, b"t", &stat)
            .unwrap_err();
        assert_eq!(e.path, t);
        assert_eq!(e.source.kind(), io::ErrorKind::NotFound);
    }
}
