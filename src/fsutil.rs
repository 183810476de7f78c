//! Small filesystem primitives every writer shares: atomic writes and
//! content hashing. Nothing here knows about the datastore layout.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

/// The name prefix of every temp file swamp writes before renaming it into
/// place. One constant and one predicate ([`is_swamp_temp`]) for every
/// writer, the observation, the stores and the catalog scan.
pub const TEMP_PREFIX: &str = ".swamp-tmp-";

/// True for a swamp temp file's name. Temp files are never data: never
/// moved, uploaded, downloaded over, or counted by guards.
pub fn is_swamp_temp(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
}

/// A new temp file in `dir`, named [`TEMP_PREFIX`]`<owner>-<random>`
/// ([`temp_owner`]): the writer's pid and PID namespace let a later run
/// tell a temp file a killed process left from one a live process is
/// still writing.
pub fn temp_file_in(dir: &Path) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(&format!("{TEMP_PREFIX}{}-", temp_owner()))
        .tempfile_in(dir)
}

/// This process in a temp file's name: `<pid>.<pid namespace>` (just
/// `<pid>` where the namespace cannot be read). A pid alone names a
/// different process in each PID namespace (containers sharing a volume),
/// so only a name from this namespace can show its writer gone.
pub fn temp_owner() -> &'static str {
    static OWNER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    OWNER.get_or_init(|| match pid_namespace() {
        Some(ns) => format!("{}.{ns}", std::process::id()),
        None => std::process::id().to_string(),
    })
}

/// This process's PID namespace (`/proc/self/ns/pid` reads
/// `pid:[4026531836]`), read once.
pub fn pid_namespace() -> Option<u64> {
    static NS: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *NS.get_or_init(|| {
        let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
        let text = link.to_str()?;
        text.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
    })
}

/// Removes the swamp temp files in `dir` whose writer is gone (best
/// effort: a failure leaves them for the next write).
pub fn sweep_dead_temps(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if temp_writer_gone(name) && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// True when the temp file `name` names its writer ([`temp_owner`]) in
/// this PID namespace and no process with that pid exists: its writer
/// died (`kill -9`, a crash) and it will never be renamed into place. A
/// live pid (possibly reused), our own, another namespace's (or one that
/// cannot be compared), or a name without a pid says nothing: age
/// decides. (A pid with no namespace is an older swamp's name, judged by
/// the pid alone as it was then.)
pub fn temp_writer_gone(name: &str) -> bool {
    let Some(owner) = name
        .strip_prefix(TEMP_PREFIX)
        .and_then(|rest| rest.split_once('-'))
        .map(|(owner, _)| owner)
    else {
        return false;
    };
    let (pid, ns) = match owner.split_once('.') {
        Some((pid, ns)) => (pid, Some(ns)),
        None => (owner, None),
    };
    let Some(pid) = pid.parse::<i32>().ok().filter(|&p| p > 0) else {
        return false;
    };
    let here = match ns {
        Some(ns) => match (ns.parse::<u64>().ok(), pid_namespace()) {
            (Some(theirs), Some(ours)) if theirs == ours => true,
            _ => return false,
        },
        None => true,
    };
    here && pid as u32 != std::process::id() && process_gone(pid)
}

/// Opens `path` (created if missing) and holds an exclusive `flock` on
/// it, waiting for whoever holds it; the lock goes with the returned
/// file. A name removed or replaced while we waited is opened again, so
/// the lock held is on the file the name now names.
pub fn lock_file(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::MetadataExt;
    loop {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
        let held = file.metadata()?;
        match std::fs::symlink_metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => return Ok(file),
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
}

/// True when no process with `pid` exists on this machine.
pub fn process_gone(pid: i32) -> bool {
    // 0 and negative pids name process groups: never "gone".
    let Some(pid) = rustix::process::Pid::from_raw(pid.max(0)) else {
        return false;
    };
    rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
}

/// Writes `bytes` to `path` atomically: a temp file in the same directory,
/// fsync, rename, then fsync of the directory so the rename survives a crash.
///
/// Temp files a killed writer left in the same directory (their pid is
/// gone) are removed first: small state files (`.swamp.toml`, sync bases,
/// journals) are never planned, so this is where their leftovers go.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    atomic_write_with(path, |w| w.write_all(bytes))
}

/// [`atomic_write`] of what `write` writes, streamed into the temp file
/// (buffered) rather than built in memory first.
pub fn atomic_write_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    sweep_dead_temps(parent_dir(path));
    let dir = parent_dir(path);
    fs::create_dir_all(dir)?;
    let tmp = temp_file_in(dir)?;
    let mut out = io::BufWriter::with_capacity(64 * 1024, tmp);
    write(&mut out)?;
    let tmp = out.into_inner().map_err(|e| e.into_error())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// A writer that keeps the CRC32 of what passes through it, for the
/// state files that end with the checksum of everything before it (the
/// hash cache, the directory listings).
pub struct Summed<'a> {
    out: &'a mut dyn Write,
    sum: crc32fast::Hasher,
}

impl<'a> Summed<'a> {
    pub fn new(out: &'a mut dyn Write) -> Summed<'a> {
        Summed {
            out,
            sum: crc32fast::Hasher::new(),
        }
    }

    pub fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.sum.update(bytes);
        self.out.write_all(bytes)
    }

    /// Writes the CRC32 of everything put (little-endian).
    pub fn finish(self) -> io::Result<()> {
        self.out.write_all(&self.sum.finalize().to_le_bytes())
    }
}

/// Like [`atomic_write`], but fails with `AlreadyExists` instead of
/// replacing an existing file.
pub fn atomic_create(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = synced_temp_beside(path, bytes)?;
    tmp.persist_noclobber(path).map_err(|e| e.error)?;
    sync_dir(parent_dir(path))
}

/// A temp file in `path`'s directory holding `bytes`, already fsynced.
fn synced_temp_beside(path: &Path, bytes: &[u8]) -> io::Result<tempfile::NamedTempFile> {
    let dir = parent_dir(path);
    fs::create_dir_all(dir)?;
    let mut tmp = temp_file_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    Ok(tmp)
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// fsyncs a directory so entries created or renamed in it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Makes `files` (written without an fsync each, in the directories
/// `dirs`) durable: on Linux one `syncfs` per filesystem those directories
/// are on (it reports writeback errors since 5.8); elsewhere an fsync of
/// each file.
pub fn sync_files(dirs: &[&Path], files: &[&Path]) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = files;
        let mut devices = Vec::new();
        for dir in dirs {
            let d = File::open(dir)?;
            let dev = d.metadata()?.dev();
            if devices.contains(&dev) {
                continue;
            }
            devices.push(dev);
            rustix::fs::syncfs(&d)?;
        }
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dirs;
        for f in files {
            File::open(f)?.sync_all()?;
        }
        Ok(())
    }
}

/// Renames `from` to `to` unless `to` exists (`AlreadyExists` then, and
/// nothing moved): a file that appeared at `to` since it was checked is
/// never replaced. Where the filesystem cannot rename without replacing,
/// a hard link then an unlink does the same.
pub fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            // Not supported by this filesystem or kernel: link and unlink.
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            Err(e) => return Err(e.into()),
        }
    }
    match fs::hard_link(from, to) {
        Ok(()) => fs::remove_file(from),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        // No hard links here either (some FUSE and FAT filesystems): check,
        // then rename, which leaves a short window open.
        Err(_) => match fs::symlink_metadata(to) {
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists", to.display()),
            )),
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::rename(from, to),
            Err(e) => Err(e),
        },
    }
}

/// Hex sha256 of a file's content, streamed.
/// The whole of `path` when it holds at most `limit` bytes (`None`:
/// larger). Read to the end, bounded: a file that grew since it was
/// statted is still read whole, or found too large.
pub fn read_small(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = File::open(path)?;
    if file.metadata()?.len() > limit {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

pub fn sha256_file(path: &Path) -> io::Result<String> {
    sha256_file_raw(path).map(|sha| hex32(&sha))
}

/// The sha256 of a file's content, streamed, as bytes.
pub fn sha256_file_raw(path: &Path) -> io::Result<[u8; 32]> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().into())
}

/// Whether the filesystem holding `dir` (or its nearest existing ancestor)
/// treats names that differ only in case as one. Asked of the filesystem:
/// macOS `pathconf`; on Linux, the directory's casefold attribute (ext4
/// and f2fs, `chattr +F`; new directories inherit it).
pub fn folds_case(dir: &Path) -> bool {
    #[cfg(target_os = "macos")]
    {
        use std::os::unix::ffi::OsStrExt;
        let Some(existing) = dir.ancestors().find(|d| d.exists()) else {
            return false;
        };
        let Ok(c) = std::ffi::CString::new(existing.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: `c` is a NUL-terminated path.
        let r = unsafe { libc::pathconf(c.as_ptr(), libc::_PC_CASE_SENSITIVE) };
        r == 0
    }
    #[cfg(target_os = "linux")]
    {
        /// `FS_CASEFOLD_FL` in linux/fs.h.
        const CASEFOLD: u32 = 0x4000_0000;
        let Some(existing) = dir.ancestors().find(|d| d.is_dir()) else {
            return false;
        };
        let Ok(f) = File::open(existing) else {
            return false;
        };
        // Filesystems without attributes (tmpfs, overlay…) say ENOTTY.
        rustix::fs::ioctl_getflags(&f).is_ok_and(|flags| flags.bits() & CASEFOLD != 0)
    }
    #[cfg(not(any(target_os = "macos", target_os = "linux")))]
    {
        let _ = dir;
        false
    }
}

/// Per part size, the MD5 of each part in order.
pub type PartMd5s = Vec<Vec<[u8; 16]>>;

/// The sha256 of a file's content and, for each of `part_sizes`, the MD5s
/// of its parts of that size: what an S3 multipart upload's ETag is made
/// of. One read, whatever the number of sizes.
pub fn sha256_and_part_md5s(path: &Path, part_sizes: &[u64]) -> io::Result<([u8; 32], PartMd5s)> {
    use md5::Digest as _;
    let mut file = File::open(path)?;
    let mut sha = Sha256::new();
    // Per part size: the MD5s of the parts done, the part being read, and
    // how many of its bytes are in.
    let mut state: Vec<(Vec<[u8; 16]>, md5::Md5, u64)> = part_sizes
        .iter()
        .map(|_| (Vec::new(), md5::Md5::new(), 0))
        .collect();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        sha.update(chunk);
        for ((done, part, fill), &size) in state.iter_mut().zip(part_sizes) {
            let mut rest = chunk;
            while !rest.is_empty() {
                let take = ((size - *fill) as usize).min(rest.len());
                part.update(&rest[..take]);
                *fill += take as u64;
                rest = &rest[take..];
                if *fill == size {
                    done.push(std::mem::take(part).finalize().into());
                    *fill = 0;
                }
            }
        }
    }
    let parts = state
        .into_iter()
        .map(|(mut done, part, fill)| {
            if fill > 0 {
                done.push(part.finalize().into());
            }
            done
        })
        .collect();
    Ok((sha.finalize().into(), parts))
}

/// The sha256 and the MD5 of a file's content, in one read.
pub fn sha256_md5_file(path: &Path) -> io::Result<([u8; 32], [u8; 16])> {
    use md5::Digest as _;
    let mut file = File::open(path)?;
    let mut sha = Sha256::new();
    let mut md5 = md5::Md5::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        sha.update(&buf[..n]);
        md5.update(&buf[..n]);
    }
    Ok((sha.finalize().into(), md5.finalize().into()))
}

/// Lower-case hex of a sha256, written straight into its string (the
/// `hex` crate goes through an iterator of chars, which shows in a
/// 100,000-file plan's profile).
pub fn hex32(bytes: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(64);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize]);
        out.push(DIGITS[(b & 15) as usize]);
    }
    String::from_utf8(out).expect("hex digits are ASCII")
}

pub fn sha256_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The first component of `path` below `base` (exclusive) that is a
/// symlink, if any; components that do not exist yet end the check. For
/// writers and readers that must never follow a link out of a tree
/// (`path` must lie under `base`; otherwise every component is checked).
pub fn symlink_below(base: &Path, path: &Path) -> io::Result<Option<std::path::PathBuf>> {
    let (mut at, rest) = match path.strip_prefix(base) {
        Ok(rest) => (base.to_path_buf(), rest),
        Err(_) => (std::path::PathBuf::new(), path),
    };
    for part in rest.components() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Ok(Some(at)),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Removes `dir` and then each empty parent, stopping at `stop` (exclusive)
/// or at the first directory that is not empty.
pub fn remove_empty_dirs(mut dir: &Path, stop: &Path) {
    while dir.starts_with(stop) && dir != stop {
        if fs::remove_dir(dir).is_err() {
            return;
        }
        match dir.parent() {
            Some(p) => dir = p,
            None => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_noreplace_moves_onto_nothing_and_refuses_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        fs::write(&a, b"a").unwrap();
        fs::write(&b, b"b").unwrap();
        let e = rename_noreplace(&a, &b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&a).unwrap(), b"a");
        assert_eq!(fs::read(&b).unwrap(), b"b");
        rename_noreplace(&a, &c).unwrap();
        assert!(!a.exists());
        assert_eq!(fs::read(&c).unwrap(), b"a");
        sync_files(&[dir.path()], &[&b, &c]).unwrap();
    }

    #[test]
    fn a_temp_file_whose_writer_died_is_known_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let mine = temp_file_in(dir.path()).unwrap();
        let name = mine
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            name.starts_with(&format!("{TEMP_PREFIX}{}-", temp_owner())),
            "{name}"
        );
        assert!(!temp_writer_gone(&name), "our own temp file is in use");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let ns = pid_namespace().expect("a PID namespace on Linux");
        assert!(temp_writer_gone(&format!("{TEMP_PREFIX}{dead}.{ns}-abc")));
        // The same pid in another PID namespace may be alive there.
        assert!(!temp_writer_gone(&format!(
            "{TEMP_PREFIX}{dead}.{}-abc",
            ns + 1
        )));
        assert!(!temp_writer_gone(&format!("{TEMP_PREFIX}{dead}.x-abc")));
        // An older swamp's name: the pid alone, as then.
        assert!(temp_writer_gone(&format!("{TEMP_PREFIX}{dead}-abc")));
        // pid 1 is alive; names without a pid (older swamp) say nothing.
        assert!(!temp_writer_gone(&format!("{TEMP_PREFIX}1-abc")));
        assert!(!temp_writer_gone(&format!("{TEMP_PREFIX}abc123")));
    }

    #[test]
    fn an_atomic_write_clears_what_a_killed_writer_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let left = dir.path().join(format!("{TEMP_PREFIX}{dead}-abc"));
        let foreign = dir.path().join(format!("{TEMP_PREFIX}nopid"));
        fs::write(&left, "partial").unwrap();
        fs::write(&foreign, "someone's").unwrap();
        atomic_write(&dir.path().join("config.toml"), b"x").unwrap();
        assert!(!left.exists(), "a dead writer's temp file is cleared");
        assert!(foreign.exists(), "one naming no writer is left alone");
    }

    #[test]
    fn part_md5s_of_one_read_are_those_of_the_parts_read_apart() {
        use md5::Digest;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        let body: Vec<u8> = (0..(3 << 20) + 5).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&f, &body).unwrap();
        let sizes = [1 << 20, (1 << 20) + 3, 5 << 20];
        let (sha, parts) = sha256_and_part_md5s(&f, &sizes).unwrap();
        assert_eq!(hex32(&sha), sha256_bytes(&body));
        for (size, got) in sizes.iter().zip(&parts) {
            let want: Vec<[u8; 16]> = body
                .chunks(*size as usize)
                .map(|c| md5::Md5::digest(c).into())
                .collect();
            assert_eq!(got, &want, "parts of {size}");
        }
    }

    #[test]
    fn hex32_is_the_hex_crates_lower_case_hex() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i * 37 + 11) as u8);
        assert_eq!(hex32(&bytes), hex::encode(bytes));
    }

    #[test]
    fn atomic_write_replaces_and_atomic_create_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/f.txt");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let e = atomic_create(&p, b"three").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&p).unwrap(), b"two");
        // no temp files left behind
        assert_eq!(fs::read_dir(dir.path().join("sub")).unwrap().count(), 1);
    }

    #[test]
    fn sha256_matches_known_vector() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("abc");
        fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(sha256_bytes(b"abc"), sha256_file(&p).unwrap());
    }

    #[test]
    fn symlink_below_finds_the_first_link_and_ignores_the_base() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base");
        fs::create_dir_all(base.join("a")).unwrap();
        std::os::unix::fs::symlink("/tmp", base.join("a/ln")).unwrap();
        assert_eq!(
            symlink_below(&base, &base.join("a/ln/x/y")).unwrap(),
            Some(base.join("a/ln"))
        );
        assert_eq!(symlink_below(&base, &base.join("a/new/x")).unwrap(), None);
        // The base itself may be a link (a datastore on another disk).
        let linked = dir.path().join("linked");
        std::os::unix::fs::symlink(&base, &linked).unwrap();
        assert_eq!(symlink_below(&linked, &linked.join("a/x")).unwrap(), None);
    }

    #[test]
    fn remove_empty_dirs_stops_at_non_empty() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        fs::create_dir_all(&deep).unwrap();
        fs::write(dir.path().join("a/keep"), b"").unwrap();
        remove_empty_dirs(&deep, dir.path());
        assert!(!dir.path().join("a/b").exists());
        assert!(dir.path().join("a").exists());
    }
}
