//! What a run learnt of the files it wrote itself ([`Learnt`]): each
//! download's stamp as it was renamed into place, with its sha256, handed
//! to the verifying plan so it need not read back what it just wrote.
//! Held in memory, or, for a run of many downloads, spilled as it grows
//! to an unnamed file in the clone's state directory and read back only
//! when the verifying plan takes it: a million downloads held 64 MB of it
//! through the whole apply, beside the plan and the growing sync base.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;

use super::stamp::Stamp;
use crate::digest::Sha256;

/// One spilled entry: the stamp's 32 bytes, then the sha256's.
const RECORD: usize = 64;

/// Hashes of files a run wrote itself (downloads it landed), each with
/// the stamp its file had when it was renamed into place.
#[derive(Debug, Default)]
pub struct Learnt {
    held: Vec<(Stamp, Sha256)>,
    spilled: Option<Spilled>,
}

/// Entries written aside, in the order learnt.
#[derive(Debug)]
struct Spilled {
    out: BufWriter<File>,
    count: usize,
}

impl Learnt {
    /// An empty list that spills what it is given to an unnamed file in
    /// `dir` (created if missing). Where no such file can be made, it
    /// holds its entries in memory as [`Learnt::default`] does.
    pub fn spilling_in(dir: &Path) -> Learnt {
        match super::spill::scratch_file(dir) {
            Ok(file) => {
                tracing::debug!(target: "swamp::state", "what downloads teach is spilled");
                Learnt {
                    held: Vec::new(),
                    spilled: Some(Spilled {
                        out: BufWriter::with_capacity(1 << 16, file),
                        count: 0,
                    }),
                }
            }
            Err(e) => {
                tracing::debug!(target: "swamp::state", dir = %dir.display(), error = %e,
                    "what downloads teach is held in memory: no file to spill it to");
                Learnt::default()
            }
        }
    }

    pub fn push(&mut self, stamp: Stamp, sha256: Sha256) {
        self.spill(&[(stamp, sha256)]);
    }

    /// Room for `more` entries held in memory (none is needed spilled).
    pub fn reserve_exact(&mut self, more: usize) {
        if self.spilled.is_none() {
            self.held.reserve_exact(more);
        }
    }

    /// Adds `other`'s entries (taking its list whole when this one is
    /// empty, holds them in memory and has no room reserved for them).
    /// A spilling list writes them straight from `other`'s: copied into
    /// its own first, a run's worth of room (4 MB a run of 65,536
    /// downloads) stayed behind in it, emptied, to the end of the apply.
    pub fn append(&mut self, mut other: Learnt) {
        other.take_spilled_back();
        if self.spilled.is_some() {
            self.spill(&other.held);
        } else if self.held.is_empty() && self.held.capacity() < other.held.len() {
            self.held = other.held;
        } else {
            self.held.append(&mut other.held);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty() && self.spilled.as_ref().is_none_or(|s| s.count == 0)
    }

    /// How many entries there are, held or spilled.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.held.len() + self.spilled.as_ref().map_or(0, |s| s.count)
    }

    /// Every entry, spilled ones read back first. What cannot be read
    /// back is left out: a file not vouched for is read again, never
    /// trusted blindly.
    pub fn into_entries(mut self) -> Vec<(Stamp, Sha256)> {
        self.take_spilled_back();
        self.held
    }

    /// Writes `entries` to the spill file (held, where there is none); on
    /// a failed write, reads back what was spilled and holds everything in
    /// memory from then on.
    fn spill(&mut self, entries: &[(Stamp, Sha256)]) {
        let Some(s) = self.spilled.as_mut() else {
            self.held.extend_from_slice(entries);
            return;
        };
        let written = entries.iter().try_for_each(|(stamp, sha)| {
            s.out.write_all(&stamp.to_bytes())?;
            s.out.write_all(&sha.0)
        });
        match written {
            Ok(()) => s.count += entries.len(),
            Err(e) => {
                tracing::debug!(target: "swamp::state", error = %e,
                    "what downloads teach is held in memory: its spill file failed");
                // Those written whole are read back; this batch is held
                // (its part written is beyond the count, never read).
                self.take_spilled_back();
                self.held.extend_from_slice(entries);
            }
        }
    }

    /// Ends the spill: its entries are read back ahead of those held.
    fn take_spilled_back(&mut self) {
        let Some(s) = self.spilled.take() else {
            return;
        };
        let mut back = match read_back(s) {
            Ok(back) => back,
            Err(e) => {
                tracing::debug!(target: "swamp::state", error = %e,
                    "what downloads taught could not be read back: those files are read again");
                Vec::new()
            }
        };
        back.append(&mut self.held);
        self.held = back;
    }

    /// The entries in stamp order (for comparing two in tests).
    #[cfg(test)]
    pub fn sorted(self) -> Vec<(Stamp, Sha256)> {
        let mut entries = self.into_entries();
        entries.sort_unstable_by_key(|(s, _)| *s);
        entries
    }
}

/// The entries of a spill file, in the order written: every whole record
/// written (a write cut short leaves a part record, not read).
fn read_back(s: Spilled) -> io::Result<Vec<(Stamp, Sha256)>> {
    let mut file = s.out.into_inner().map_err(|e| e.into_error())?;
    file.rewind()?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut back = Vec::with_capacity(s.count);
    let mut record = [0u8; RECORD];
    while back.len() < s.count {
        reader.read_exact(&mut record)?;
        let (stamp, sha) = record.split_at(32);
        let stamp = Stamp::from_bytes(stamp.try_into().expect("32 bytes"));
        back.push((stamp, Sha256(sha.try_into().expect("32 bytes"))));
    }
    Ok(back)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(n: u64) -> Stamp {
        Stamp::from_bytes(&{
            let mut b = [0u8; 32];
            b[..8].copy_from_slice(&7u64.to_le_bytes());
            b[8..16].copy_from_slice(&n.to_le_bytes());
            b[16..24].copy_from_slice(&(n * 10).to_le_bytes());
            b[24..].copy_from_slice(&(-(n as i64)).to_le_bytes());
            b
        })
    }

    fn list(range: std::ops::Range<u64>) -> Learnt {
        let mut l = Learnt::default();
        for n in range {
            l.push(stamp(n), Sha256::of(&n.to_le_bytes()));
        }
        l
    }

    #[test]
    fn what_a_run_learnt_is_spilled_as_it_grows_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let mut spilled = Learnt::spilling_in(&state);
        spilled.append(list(0..3));
        spilled.push(stamp(3), Sha256::of(&3u64.to_le_bytes()));
        spilled.append(list(4..1000));
        // Nothing of it stays in memory, not even room for it (a run's
        // worth was kept for good when appends went through the list
        // held); the file has no name to find.
        assert!(spilled.held.is_empty());
        assert_eq!(spilled.held.capacity(), 0);
        assert_eq!(spilled.len(), 1000);
        assert!(std::fs::read_dir(&state).unwrap().next().is_none());
        assert_eq!(spilled.into_entries(), list(0..1000).held);
    }

    #[test]
    fn a_spilled_list_appended_to_another_keeps_every_entry() {
        let dir = tempfile::tempdir().unwrap();
        let mut spilled = Learnt::spilling_in(dir.path());
        spilled.append(list(10..20));
        let mut held = list(0..10);
        held.append(spilled);
        assert_eq!(held.len(), 20);
        assert!(held.spilled.is_none());
        assert_eq!(held.into_entries(), list(0..20).held);
        assert!(Learnt::spilling_in(dir.path()).is_empty());
    }

    #[test]
    fn with_nowhere_to_spill_what_was_learnt_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let blocked = dir.path().join("a-file");
        std::fs::write(&blocked, b"").unwrap();
        let mut l = Learnt::spilling_in(&blocked.join("state"));
        assert!(l.spilled.is_none());
        l.append(list(0..5));
        assert_eq!(l.into_entries(), list(0..5).held);
    }

    #[test]
    fn a_stamp_survives_its_bytes() {
        let s = stamp(123_456_789_012_345);
        assert_eq!(Stamp::from_bytes(&s.to_bytes()), s);
    }
}
