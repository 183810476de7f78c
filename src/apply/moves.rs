//! File moves and duplicate drops with their preconditions checked at the
//! moment of acting.

use crate::plan::action::Move;
use std::cell::Cell;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::digest::Sha256;
use crate::fsutil;
use crate::layout::TierPath;
use crate::plan::Action;
use crate::state::HashCache;
use crate::state::gallop::Hint;
use crate::state::stamp::Stamp;
use crate::state::walk::{Stat, WalkEntry, Walker};

#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error("{} is gone; plan again", .0.display())]
    SourceGone(PathBuf),
    #[error("{} changed since the plan was made (sha256 {found}, planned {planned}); plan again", .path.display())]
    SourceChanged {
        path: PathBuf,
        planned: String,
        found: String,
    },
    #[error("{} is not a regular file; plan again", .0.display())]
    NotAFile(PathBuf),
    #[error("a different file appeared at {} (sha256 {found}); plan again to see the conflict", .path.display())]
    DestinationDiffers { path: PathBuf, found: String },
    #[error("{} appeared at the target since the plan was made; plan again", .0.display())]
    TargetAppeared(PathBuf),
    #[error("the identical copy at {} is gone or changed; plan again", .0.display())]
    TwinGone(PathBuf),
    #[error("cannot create {}: {source} (is something in the way?)", .path.display())]
    Blocked { path: PathBuf, source: io::Error },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> MoveError + '_ {
    move |source| MoveError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The sha256 of a regular file, or `None` if it does not exist.
fn hash_of(path: &Path, cache: &mut HashCache) -> Result<Option<Sha256>, MoveError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_at(path)(e)),
    };
    if !meta.file_type().is_file() {
        return Err(MoveError::NotAFile(path.to_path_buf()));
    }
    cache.sha256(path, &meta).map(Some).map_err(io_at(path))
}

fn check_source(src: &Path, sha256: &Sha256, cache: &mut HashCache) -> Result<(), MoveError> {
    match hash_of(src, cache)? {
        None => Err(MoveError::SourceGone(src.to_path_buf())),
        Some(found) if found != *sha256 => Err(MoveError::SourceChanged {
            path: src.to_path_buf(),
            planned: sha256.hex(),
            found: found.hex(),
        }),
        Some(_) => Ok(()),
    }
}

/// Moves `src` (which must still hash to `sha256`) to `dst` (which must be
/// absent, or already hold the identical bytes from an interrupted run).
pub(super) fn move_file(
    src: &Path,
    dst: &Path,
    sha256: &Sha256,
    cache: &mut HashCache,
) -> Result<(), MoveError> {
    link_file(src, dst, sha256, cache)?;
    let dst_dir = dst.parent().expect("destination has a parent");
    fsutil::sync_dir(dst_dir).map_err(io_at(dst_dir))?;
    fs::remove_file(src).map_err(io_at(src))
}

/// The first half of [`move_file`]: `src`'s bytes at `dst` too (a hard
/// link, or a verified copy across filesystems; an identical `dst` from an
/// interrupted run is accepted), with `src` left in place. The caller makes
/// `dst`'s directory durable before it removes `src`, so that a run of
/// moves fsyncs each directory once instead of once per file.
pub(super) fn link_file(
    src: &Path,
    dst: &Path,
    sha256: &Sha256,
    cache: &mut HashCache,
) -> Result<(), MoveError> {
    check_source(src, sha256, cache)?;
    let dst_dir = dst.parent().expect("destination has a parent");
    fs::create_dir_all(dst_dir).map_err(|source| MoveError::Blocked {
        path: dst_dir.to_path_buf(),
        source,
    })?;
    match fs::hard_link(src, dst) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match hash_of(dst, cache) {
            Ok(Some(found)) if found == *sha256 => Ok(()),
            Ok(found) => Err(MoveError::DestinationDiffers {
                path: dst.to_path_buf(),
                found: found.map(|s| s.hex()).unwrap_or_default(),
            }),
            Err(MoveError::NotAFile(_)) => Err(MoveError::DestinationDiffers {
                path: dst.to_path_buf(),
                found: String::new(),
            }),
            Err(e) => Err(e),
        },
        // Another filesystem, or one without hard links: copy without clobbering.
        Err(_) => copy_no_clobber(src, dst, sha256, cache),
    }
}

fn copy_no_clobber(
    src: &Path,
    dst: &Path,
    sha256: &Sha256,
    cache: &mut HashCache,
) -> Result<(), MoveError> {
    let dst_dir = dst.parent().expect("destination has a parent");
    let mut tmp = crate::fsutil::temp_file_in(dst_dir).map_err(io_at(dst_dir))?;
    let mut input = fs::File::open(src).map_err(io_at(src))?;
    io::copy(&mut input, tmp.as_file_mut()).map_err(io_at(dst))?;
    tmp.as_file().sync_all().map_err(io_at(dst))?;
    let copied = Sha256::of_file(tmp.path()).map_err(io_at(dst))?;
    if copied != *sha256 {
        return Err(MoveError::SourceChanged {
            path: src.to_path_buf(),
            planned: sha256.hex(),
            found: copied.hex(),
        });
    }
    match tmp.persist_noclobber(dst) {
        Ok(_) => Ok(()),
        Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => match hash_of(dst, cache)? {
            Some(found) if found == *sha256 => Ok(()),
            found => Err(MoveError::DestinationDiffers {
                path: dst.to_path_buf(),
                found: found.map(|s| s.hex()).unwrap_or_default(),
            }),
        },
        Err(e) => Err(io_at(dst)(e.error)),
    }
}

/// Removes `src` because `dst` already holds the same bytes; both are
/// checked right before the removal.
/// `remove` takes the source copy away once both are checked: a plain
/// delete, or setting it aside for `swamp undo`.
pub(super) fn drop_duplicate(
    src: &Path,
    dst: &Path,
    sha256: &Sha256,
    cache: &mut HashCache,
    remove: impl FnOnce(&Path) -> io::Result<()>,
) -> Result<(), MoveError> {
    check_source(src, sha256, cache)?;
    match hash_of(dst, cache) {
        Ok(Some(found)) if found == *sha256 => {}
        Ok(_) | Err(MoveError::NotAFile(_)) => return Err(MoveError::TwinGone(dst.to_path_buf())),
        Err(e) => return Err(e),
    }
    remove(src).map_err(io_at(src))
}

/// A directory a run of moves renames whole, tier-relative, with the number
/// of planned files it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct WholeDir {
    pub rel: String,
    pub files: usize,
}

/// A run's moves from one source, as indices into the plan's actions
/// sorted by tier path (4 bytes a move: a million moves held 64 MB as a
/// map of paths).
pub(super) struct Planned<'a> {
    actions: &'a [Action],
    moves: Vec<u32>,
}

impl<'a> Planned<'a> {
    /// `moves`: indices of [`Action::Move`]s in `actions`, all from one
    /// source.
    pub(super) fn new(actions: &'a [Action], mut moves: Vec<u32>) -> Planned<'a> {
        moves.sort_unstable_by(|a, b| move_path(actions, *a).cmp(move_path(actions, *b)));
        Planned { actions, moves }
    }

    fn path(&self, k: u32) -> &'a str {
        move_path(self.actions, k)
    }

    /// The sha256 the move of `rel` expects, if the run moves it.
    fn get(&self, rel: &str) -> Option<&'a Sha256> {
        // Asked in walk order, nearly the moves' own: from the last one
        // found (a binary search of a million moves was a sixth of the
        // check before their directories are renamed).
        thread_local!(static AT: Cell<usize> = const { Cell::new(0) });
        let i = Hint::new(&AT)
            .search(&self.moves, |k| self.path(*k).cmp(rel))
            .ok()?;
        match &self.actions[self.moves[i] as usize] {
            Action::Move(Move { sha256, .. }) => Some(sha256),
            _ => None,
        }
    }

    /// The indices of the moves beneath the directory `dir`.
    pub(super) fn under(&self, dir: &str) -> impl Iterator<Item = usize> + '_ {
        let prefix = format!("{dir}/");
        let start = self
            .moves
            .partition_point(|k| self.path(*k) < prefix.as_str());
        self.moves[start..]
            .iter()
            .take_while(move |k| self.path(**k).starts_with(&prefix))
            .map(|k| *k as usize)
    }

    fn tiers(&self) -> std::collections::BTreeSet<&'a str> {
        self.moves
            .iter()
            .filter_map(|k| self.path(*k).split('/').next())
            .collect()
    }
}

/// The path of planned move `k` (every action [`Planned`] holds is a move,
/// and every move has a path).
fn move_path(actions: &[Action], k: u32) -> &str {
    actions[k as usize].path().map_or("", TierPath::as_str)
}

/// The directories of `src_root` that a run of moves (`planned`, all from
/// that source to the same tier path under `dst_root`) can rename whole
/// instead of file by file: every entry beneath is a regular file the run
/// moves, whose (device, inode, size, mtime) the hash cache knows with the
/// planned sha256 (a stat, no read), and the directory is absent at the
/// target. Only the topmost such directories, sorted.
///
/// Anything else beneath (a file the run does not move, a symlink, a temp
/// file, an unreadable entry, a file the cache does not vouch for) keeps
/// that directory out; its clean subdirectories may still qualify, and the
/// rest moves file by file with the full checks.
///
/// The tree is read by the observation's own walk: a directory whose
/// (device, inode, mtime, ctime) matches a remembered listing is not read
/// again (an entry added or removed since changes both times), every entry
/// is still statted. At a million files the directories read afresh were
/// most of a migration's time. A walk that fails leaves its part of the
/// tree to the per-file moves.
pub(super) fn whole_dirs(
    src_root: &Path,
    dst_root: &Path,
    planned: &Planned<'_>,
    cache: &mut HashCache,
) -> Vec<WholeDir> {
    let dirs = cache.take_dirs();
    let walker = Walker::new(&dirs, cache.trust_before_ns());
    // The topmost clean directories of each tier; one that cannot go to
    // its place (something is there already) is looked into again for its
    // own topmost clean ones, which a scan does not keep (rare: a
    // migration resumed after renaming part of a tier).
    let mut todo: Vec<WholeDir> = Vec::new();
    for tier in planned.tiers() {
        todo.extend(clean_beneath(&walker, src_root, tier, planned, cache, true));
    }
    let mut picked = Vec::new();
    while let Some(dir) = todo.pop() {
        if dir.files == 0 {
            continue;
        }
        let src = src_root.join(&dir.rel);
        let dst = dst_root.join(&dir.rel);
        // Never into itself (a target nested in the source tree).
        let nested = dst.starts_with(&src) || src.starts_with(&dst);
        let absent =
            matches!(fs::symlink_metadata(&dst), Err(e) if e.kind() == io::ErrorKind::NotFound);
        if !nested && absent {
            picked.push(dir);
        } else {
            todo.extend(clean_beneath(
                &walker, src_root, &dir.rel, planned, cache, false,
            ));
        }
    }
    cache.put_dirs(dirs);
    picked.sort_by(|a: &WholeDir, b| a.rel.cmp(&b.rel));
    picked
}

/// The topmost clean directories at or beneath `rel` (`itself`: else only
/// beneath it).
fn clean_beneath(
    walker: &Walker<'_>,
    src_root: &Path,
    rel: &str,
    planned: &Planned<'_>,
    cache: &HashCache,
    itself: bool,
) -> Vec<WholeDir> {
    let dir = src_root.join(rel);
    let Ok(meta) = fs::symlink_metadata(&dir) else {
        return Vec::new();
    };
    if !meta.is_dir() {
        return Vec::new();
    }
    let mut scan = CleanScan::new(rel, planned, cache);
    let walked = walker.walk_in_parts(&dir, rel.as_bytes(), &Stat::of(&meta), |part| {
        part.entries.iter().for_each(|e| scan.entry(e));
        Ok::<(), crate::state::walk::WalkError>(())
    });
    match walked {
        Ok(()) => scan.finish(itself),
        Err(_) => Vec::new(),
    }
}

/// A directory the walk of [`CleanScan`] is inside.
struct OpenDir {
    rel: String,
    depth: u32,
    /// Nothing but planned, vouched-for files beneath so far.
    clean: bool,
    /// Planned files beneath so far.
    files: usize,
    /// Its clean subdirectories (wanted only if it turns out unclean).
    clean_below: Vec<WholeDir>,
}

/// The topmost clean directories of a tree, found as its walk hands over
/// its entries (a directory before what it holds, depth first). Only the
/// directories open on the way down and the clean ones not yet inside a
/// clean parent are held: keeping every clean directory held 110 MB at a
/// million files.
struct CleanScan<'a, 'p> {
    planned: &'a Planned<'p>,
    cache: &'a HashCache,
    /// The root's own first.
    open: Vec<OpenDir>,
    found: Vec<WholeDir>,
}

impl<'a, 'p> CleanScan<'a, 'p> {
    fn new(root: &str, planned: &'a Planned<'p>, cache: &'a HashCache) -> Self {
        CleanScan {
            planned,
            cache,
            open: vec![OpenDir {
                rel: root.to_string(),
                depth: 0,
                clean: true,
                files: 0,
                clean_below: Vec::new(),
            }],
            found: Vec::new(),
        }
    }

    fn entry(&mut self, e: &WalkEntry) {
        self.close_to(e.depth.max(1));
        let name = std::str::from_utf8(&e.rel).ok();
        let top = self.open.last_mut().expect("the root stays open");
        if e.stat.is_dir() {
            // A name that is no tier path cannot be moved whole.
            self.open.push(OpenDir {
                rel: name.map(str::to_string).unwrap_or_default(),
                depth: e.depth,
                clean: name.is_some(),
                files: 0,
                clean_below: Vec::new(),
            });
        } else if e.stat.is_file()
            && let Some(sha) = name.and_then(|n| self.planned.get(n))
            && self.cache.known(Stamp::of_stat(&e.stat)).as_ref() == Some(sha)
        {
            top.files += 1;
        } else {
            top.clean = false;
        }
    }

    /// Closes the directories at `depth` or deeper (never the root): a
    /// clean one is its parent's to keep; an unclean one's clean
    /// subdirectories are found, and it makes its parent unclean.
    fn close_to(&mut self, depth: u32) {
        while self.open.len() > 1 && self.open.last().is_some_and(|d| d.depth >= depth) {
            let dir = self.open.pop().expect("checked");
            let parent = self.open.last_mut().expect("the root stays open");
            parent.files += dir.files;
            if dir.clean {
                parent.clean_below.push(WholeDir {
                    rel: dir.rel,
                    files: dir.files,
                });
            } else {
                parent.clean = false;
                self.found.extend(dir.clean_below);
            }
        }
    }

    /// The topmost clean directories: the root itself if it is clean and
    /// `itself` is set, else the topmost clean ones beneath it.
    fn finish(mut self, itself: bool) -> Vec<WholeDir> {
        self.close_to(1);
        let root = self.open.pop().expect("the root stays open");
        if root.clean && itself {
            self.found.push(WholeDir {
                rel: root.rel,
                files: root.files,
            });
        } else {
            self.found.extend(root.clean_below);
        }
        self.found
    }
}

/// Renames `src_root/rel` to `dst_root/rel` (absent: a rename either
/// happened or did not), then fsyncs both parents.
pub(super) fn rename_dir(src_root: &Path, dst_root: &Path, rel: &str) -> Result<(), MoveError> {
    let (src, dst) = (src_root.join(rel), dst_root.join(rel));
    let dst_parent = dst.parent().expect("a tier directory has a parent");
    fs::create_dir_all(dst_parent).map_err(|source| MoveError::Blocked {
        path: dst_parent.to_path_buf(),
        source,
    })?;
    // rename(2) would replace an empty directory that appeared meanwhile
    // (harmless) and refuses a non-empty one; refuse anything that is there.
    match fs::symlink_metadata(&dst) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_at(&dst)(e)),
        Ok(_) => return Err(MoveError::TargetAppeared(dst)),
    }
    fs::rename(&src, &dst).map_err(io_at(&src))?;
    fsutil::sync_dir(dst_parent).map_err(io_at(dst_parent))?;
    let src_parent = src.parent().expect("a tier directory has a parent");
    fsutil::sync_dir(src_parent).map_err(io_at(src_parent))
}

/// Moves each apply's directory `from/<id>` (trash swamp before 0.2 left
/// inside a remote's cache tier tree) to `to/<id>/<ns>`: one rename each,
/// within `root` (the cache), never through a symlink. Where some of it is
/// at the new place already (a run cut short), the rest is merged in and a
/// file already there is never replaced. An apply's directory already gone
/// was moved before.
pub(super) fn relocate_trash(
    root: &Path,
    from: &Path,
    to: &Path,
    applies: &[String],
    ns: &str,
) -> Result<(), MoveError> {
    for dir in [from, to] {
        if let Some(link) = fsutil::symlink_below(root, dir).map_err(io_at(dir))? {
            return Err(MoveError::NotAFile(link));
        }
    }
    for id in applies {
        // The plan file names them: one plain name each, never a path.
        if !crate::journal::is_id(id) {
            return Err(MoveError::NotAFile(from.join(id)));
        }
        let src = from.join(id);
        match fs::symlink_metadata(&src) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_at(&src)(e)),
            Ok(m) if !m.is_dir() => return Err(MoveError::NotAFile(src)),
            Ok(_) => {}
        }
        merge_dir(&src, &to.join(id).join(ns))?;
    }
    let _ = fs::remove_dir(from);
    Ok(())
}

/// Renames `src` (a directory) to `dst`, or, when `dst` exists, each entry
/// of `src` into it (directories merged likewise); an entry whose name is
/// taken at `dst` by a file stays where it is.
fn merge_dir(src: &Path, dst: &Path) -> Result<(), MoveError> {
    let parent = dst.parent().expect("under the trash directory");
    fs::create_dir_all(parent).map_err(|source| MoveError::Blocked {
        path: parent.to_path_buf(),
        source,
    })?;
    match fsutil::rename_noreplace(src, dst) {
        Ok(()) => {
            fsutil::sync_dir(parent).map_err(io_at(parent))?;
            let src_parent = src.parent().expect("under the old trash directory");
            return fsutil::sync_dir(src_parent).map_err(io_at(src_parent));
        }
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(io_at(dst)(e)),
        Err(_) => {}
    }
    if !fs::symlink_metadata(dst).map_err(io_at(dst))?.is_dir() {
        return Ok(());
    }
    for entry in fs::read_dir(src).map_err(io_at(src))? {
        let entry = entry.map_err(io_at(src))?;
        let kind = entry.file_type().map_err(io_at(&entry.path()))?;
        let target = dst.join(entry.file_name());
        if kind.is_dir() {
            merge_dir(&entry.path(), &target)?;
        } else {
            match fsutil::rename_noreplace(&entry.path(), &target) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_at(&target)(e)),
            }
        }
    }
    fsutil::sync_dir(dst).map_err(io_at(dst))?;
    let _ = fs::remove_dir(src);
    Ok(())
}

/// Removes an orphaned swamp temp file at `root/path`: only a regular file
/// with a temp name, reached without following a symlink.
pub(super) fn remove_temp(root: &Path, path: &crate::layout::TierPath) -> Result<(), MoveError> {
    let file = root.join(path.as_str());
    if !crate::layout::is_swamp_temp(path.file_name()) {
        return Err(MoveError::NotAFile(file));
    }
    if let Some(link) = fsutil::symlink_below(root, &file).map_err(io_at(&file))? {
        return Err(MoveError::NotAFile(link));
    }
    match fs::symlink_metadata(&file) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_at(&file)(e)),
        Ok(m) if !m.file_type().is_file() => return Err(MoveError::NotAFile(file)),
        Ok(_) => {}
    }
    match fs::remove_file(&file) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_at(&file)(e)),
    }
    if let Some(parent) = file.parent() {
        fsutil::remove_empty_dirs(parent, root);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(b: &[u8]) -> Sha256 {
        Sha256::of(b)
    }

    /// `files` written under `root`, hashed into `cache` and their
    /// directories' listings remembered, as an observation leaves them.
    fn observed(root: &Path, files: &[(&str, &[u8])], cache: &mut HashCache) {
        for (rel, body) in files {
            let path = root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, body).unwrap();
        }
        cache.trust_all();
        let tier = root.join("data");
        let mut dirs = cache.take_dirs();
        let walked = Walker::new(&dirs, cache.trust_before_ns())
            .walk(
                &tier,
                b"data",
                &Stat::of(&fs::symlink_metadata(&tier).unwrap()),
            )
            .unwrap();
        for seen in walked.seen {
            if let crate::state::walk::Seen::Read(key, listing) = seen {
                dirs.learn(key, listing);
            }
        }
        cache.put_dirs(dirs);
        for (rel, _) in files {
            let path = root.join(rel);
            cache
                .sha256(&path, &fs::symlink_metadata(&path).unwrap())
                .unwrap();
        }
    }

    fn whole(
        src: &Path,
        dst: &Path,
        files: &[(&str, &[u8])],
        cache: &mut HashCache,
    ) -> Vec<String> {
        let actions: Vec<Action> = files
            .iter()
            .map(|(rel, body)| {
                Action::Move(Move {
                    path: crate::layout::TierPath::parse(rel).unwrap(),
                    source: 0,
                    size: body.len() as u64,
                    sha256: sha(body),
                })
            })
            .collect();
        let planned = Planned::new(&actions, (0..files.len() as u32).rev().collect());
        whole_dirs(src, dst, &planned, cache)
            .into_iter()
            .map(|d| d.rel)
            .collect()
    }

    /// Three files in two directories of one tier, every one planned.
    const TREE: [(&str, &[u8]); 3] = [
        ("data/a/1/raw", b"a1"),
        ("data/a/2/raw", b"a2"),
        ("data/b/1/raw", b"b1"),
    ];

    #[test]
    fn a_directory_moves_whole_only_while_it_holds_just_the_planned_files() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("src"), d.path().join("dst"));
        let files = TREE;
        let mut cache = HashCache::in_memory();
        observed(&src, &files, &mut cache);
        assert_eq!(whole(&src, &dst, &files, &mut cache), ["data"]);

        // Added after the listings were remembered (the directory's times
        // move on), and changed in place (its directory untouched): neither
        // directory moves whole; the clean ones beneath still do.
        std::thread::sleep(std::time::Duration::from_millis(50));
        fs::write(src.join("data/a/stray"), b"not planned").unwrap();
        fs::write(src.join("data/b/1/raw"), b"B1, changed").unwrap();
        assert_eq!(
            whole(&src, &dst, &files, &mut cache),
            ["data/a/1", "data/a/2"]
        );

        // Nor into a directory already at the target.
        fs::create_dir_all(dst.join("data/a/1")).unwrap();
        assert_eq!(whole(&src, &dst, &files, &mut cache), ["data/a/2"]);
    }

    #[test]
    fn a_clean_tree_whose_place_is_taken_moves_as_its_clean_subdirectories() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("src"), d.path().join("dst"));
        let files = TREE;
        let mut cache = HashCache::in_memory();
        observed(&src, &files, &mut cache);
        fs::create_dir_all(dst.join("data")).unwrap();
        assert_eq!(whole(&src, &dst, &files, &mut cache), ["data/a", "data/b"]);
        fs::create_dir_all(dst.join("data/a")).unwrap();
        assert_eq!(
            whole(&src, &dst, &files, &mut cache),
            ["data/a/1", "data/a/2", "data/b"]
        );
    }

    #[test]
    fn moves_and_refuses_to_clobber_a_different_destination() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a/f"), d.path().join("b/c/f"));
        fs::create_dir_all(src.parent().unwrap()).unwrap();
        fs::write(&src, b"one").unwrap();
        let mut cache = HashCache::in_memory();
        move_file(&src, &dst, &sha(b"one"), &mut cache).unwrap();
        assert!(!src.exists());
        assert_eq!(fs::read(&dst).unwrap(), b"one");

        fs::write(&src, b"two").unwrap();
        let e = move_file(&src, &dst, &sha(b"two"), &mut cache).unwrap_err();
        assert!(matches!(e, MoveError::DestinationDiffers { .. }), "{e}");
        assert_eq!(fs::read(&src).unwrap(), b"two", "source kept");
        assert_eq!(fs::read(&dst).unwrap(), b"one", "destination kept");
    }

    #[test]
    fn a_move_interrupted_after_linking_finishes_by_dropping_the_source() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("f"), d.path().join("g"));
        fs::write(&src, b"x").unwrap();
        fs::hard_link(&src, &dst).unwrap();
        move_file(&src, &dst, &sha(b"x"), &mut HashCache::in_memory()).unwrap();
        assert!(!src.exists());
        assert_eq!(fs::read(&dst).unwrap(), b"x");
    }

    #[test]
    fn changed_source_is_not_moved() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("f"), d.path().join("g"));
        fs::write(&src, b"new").unwrap();
        let e = move_file(&src, &dst, &sha(b"old"), &mut HashCache::in_memory()).unwrap_err();
        assert!(matches!(e, MoveError::SourceChanged { .. }), "{e}");
        assert!(src.exists() && !dst.exists());
    }

    #[test]
    fn plain_file_in_the_way_blocks_the_move() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("f");
        fs::write(&src, b"x").unwrap();
        fs::write(d.path().join("outputs"), b"in the way").unwrap();
        let e = move_file(
            &src,
            &d.path().join("outputs/f"),
            &sha(b"x"),
            &mut HashCache::in_memory(),
        )
        .unwrap_err();
        assert!(matches!(e, MoveError::Blocked { .. }), "{e}");
        assert!(src.exists());
    }

    #[test]
    fn copy_path_refuses_to_clobber() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("f"), d.path().join("g"));
        fs::write(&src, b"x").unwrap();
        fs::write(&dst, b"y").unwrap();
        let e = copy_no_clobber(&src, &dst, &sha(b"x"), &mut HashCache::in_memory()).unwrap_err();
        assert!(matches!(e, MoveError::DestinationDiffers { .. }), "{e}");
        assert_eq!(fs::read(&dst).unwrap(), b"y");
        // no temp file left behind
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 2);
    }

    #[test]
    fn remove_temp_removes_only_a_temp_file_and_never_through_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let tp = |s: &str| crate::layout::TierPath::parse(s).unwrap();
        fs::create_dir_all(d.path().join("data/a")).unwrap();
        fs::write(d.path().join("data/a/.swamp-tmp-1"), b"partial").unwrap();
        fs::write(d.path().join("data/a/raw"), b"data").unwrap();
        remove_temp(d.path(), &tp("data/a/.swamp-tmp-1")).unwrap();
        assert!(!d.path().join("data/a/.swamp-tmp-1").exists());
        // Not a temp name: refused, kept.
        let e = remove_temp(d.path(), &tp("data/a/raw")).unwrap_err();
        assert!(matches!(e, MoveError::NotAFile(_)), "{e}");
        assert!(d.path().join("data/a/raw").exists());
        // Through a symlinked directory: refused, the target kept.
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join(".swamp-tmp-2"), b"theirs").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("data/ln")).unwrap();
        let e = remove_temp(d.path(), &tp("data/ln/.swamp-tmp-2")).unwrap_err();
        assert!(matches!(e, MoveError::NotAFile(_)), "{e}");
        assert!(outside.path().join(".swamp-tmp-2").exists());
    }

    #[test]
    fn drop_duplicate_checks_the_twin() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("f"), d.path().join("g"));
        fs::write(&src, b"x").unwrap();
        let mut cache = HashCache::in_memory();
        let e =
            drop_duplicate(&src, &dst, &sha(b"x"), &mut cache, |p| fs::remove_file(p)).unwrap_err();
        assert!(matches!(e, MoveError::TwinGone(_)));
        assert!(src.exists());
        fs::write(&dst, b"x").unwrap();
        drop_duplicate(&src, &dst, &sha(b"x"), &mut cache, |p| fs::remove_file(p)).unwrap();
        assert!(!src.exists());
    }
}
