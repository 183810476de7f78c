//! A journal read as a stream: its head whole, each entry handed over as
//! it is parsed and never kept. A move of a million objects journals an
//! entry per object (hundreds of megabytes once parsed), and what reads
//! every journal on each plan (retention, the deletes this clone made)
//! needs a count or a few entries of it.

use std::fmt;
use std::io;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};

use super::{Entry, Journal, UndoError};
use crate::fsutil;
use crate::layout::Layout;

impl Journal {
    /// Journal `id` with no entries, each of its entries handed to
    /// `visit` in order as it is read. Its head fields may come before
    /// or after its entries: what depends on them is settled by the
    /// caller after the scan.
    pub(crate) fn scan(
        layout: &Layout,
        id: &str,
        mut visit: impl FnMut(Entry),
    ) -> Result<Journal, UndoError> {
        let (path, file) = Journal::open(layout, id)?;
        let malformed = |e| super::malformed(&path, e);
        let mut de = serde_json::Deserializer::from_reader(io::BufReader::new(file));
        let mut head = Head(&mut visit).deserialize(&mut de).map_err(malformed)?;
        de.end().map_err(malformed)?;
        head.insert("entries".into(), serde_json::Value::Array(Vec::new()));
        serde_json::from_value(serde_json::Value::Object(head)).map_err(malformed)
    }
}

impl Journal {
    /// Writes this journal's head over its saved file, keeping the entries
    /// saved there, each passed through `patch` as it is copied: an apply
    /// need not hold its entries while it runs (a move's million were 88
    /// MB beside everything else it holds) to mark its journal finished.
    /// This journal's own `entries` are not written: they are expected
    /// empty, all of them being on disk.
    pub(crate) fn rewrite_head(
        &self,
        layout: &Layout,
        mut patch: impl FnMut(&mut Entry),
    ) -> Result<(), UndoError> {
        let path = layout.journal_path(&self.id);
        let mut head = serde_json::to_value(self).expect("a journal serialises");
        head.as_object_mut()
            .expect("a journal is an object")
            .remove("entries");
        let head = serde_json::to_vec(&head).expect("a journal serialises");
        // `{"id":…,…` and then the entries (the head is never empty).
        let open = &head[..head.len() - 1];
        let mut unread = None;
        let wrote = fsutil::atomic_write_with(&path, |out| {
            out.write_all(open)?;
            out.write_all(b",\"entries\":[")?;
            let mut first = true;
            let mut written = Ok(());
            let scanned = Journal::scan(layout, &self.id, |mut e| {
                if written.is_ok() {
                    patch(&mut e);
                    let comma: &[u8] = if first { b"" } else { b",\n" };
                    first = false;
                    written = out.write_all(comma).and_then(|_| {
                        serde_json::to_writer(&mut *out, &e).map_err(io::Error::other)
                    });
                }
            });
            // Nothing is replaced unless every entry was read back.
            if let Err(e) = scanned {
                unread = Some(e);
                return Err(io::Error::other("the saved journal could not be read"));
            }
            written?;
            out.write_all(b"]}\n")
        });
        match (unread, wrote) {
            (Some(e), _) => Err(e),
            (None, Err(e)) => Err(super::io_err("write", &path)(e)),
            (None, Ok(())) => Ok(()),
        }
    }
}

/// The journal's fields but its entries, which go to the visitor.
struct Head<'v, F>(&'v mut F);

impl<'de, F: FnMut(Entry)> DeserializeSeed<'de> for Head<'_, F> {
    type Value = serde_json::Map<String, serde_json::Value>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, F: FnMut(Entry)> Visitor<'de> for Head<'_, F> {
    type Value = serde_json::Map<String, serde_json::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a journal")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut head = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "entries" {
                map.next_value_seed(Entries(&mut *self.0))?;
            } else {
                head.insert(key, map.next_value()?);
            }
        }
        Ok(head)
    }
}

/// A journal's entries, each handed over as it is parsed.
struct Entries<'v, F>(&'v mut F);

impl<'de, F: FnMut(Entry)> DeserializeSeed<'de> for Entries<'_, F> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, F: FnMut(Entry)> Visitor<'de> for Entries<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of journal entries")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(entry) = seq.next_element::<Entry>()? {
            (self.0)(entry);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::layout::TierPath;

    /// A new journal of `command` in `t` with five remote set-asides.
    fn five_set_aside(t: &crate::layout::test_support::TempRepo, command: &str) -> Journal {
        let mut j = Journal::begin(&t.layout, command, String::new(), Vec::new());
        let placement = Arc::new(t.placement.clone());
        for i in 0..5 {
            let path = TierPath::parse(&format!("outputs/f{i}")).unwrap();
            j.entries
                .push(Entry::remote_set_aside(&placement, &path, None));
        }
        j
    }

    #[test]
    fn a_scan_hands_over_each_entry_in_order_and_reads_the_head_wherever_it_is() {
        let t = crate::layout::test_support::TempRepo::new(None);
        let mut j = five_set_aside(&t, "swamp gc");
        j.finished = true;
        j.pruned = Some("2026-12-07T00:00:00Z".into());
        j.save(&t.layout).unwrap();
        let mut seen = Vec::new();
        let head = Journal::scan(&t.layout, &j.id, |e| seen.push(e)).unwrap();
        assert_eq!(seen, j.entries, "every entry, in order");
        let whole = Journal {
            entries: Vec::new(),
            ..j.clone()
        };
        assert_eq!(head, whole, "the head as written, no entries held");

        // Entries first (a journal written by hand, or by another tool):
        // the head is read all the same.
        let mut value = serde_json::to_value(&j).unwrap();
        let entries = value.as_object_mut().unwrap().remove("entries").unwrap();
        let mut reordered = serde_json::Map::new();
        reordered.insert("entries".into(), entries);
        reordered.extend(value.as_object().unwrap().clone());
        std::fs::write(
            t.layout.journal_path(&j.id),
            serde_json::to_vec(&reordered).unwrap(),
        )
        .unwrap();
        let mut n = 0;
        let head = Journal::scan(&t.layout, &j.id, |_| n += 1).unwrap();
        assert_eq!((n, head), (5, whole));

        // Not a journal: an error, as loading it is.
        std::fs::write(t.layout.journal_path(&j.id), "{\"entries\": [1]}").unwrap();
        assert!(Journal::scan(&t.layout, &j.id, |_| ()).is_err());
    }

    #[test]
    fn a_rewritten_head_keeps_every_saved_entry_patched_and_never_replaces_what_it_cannot_read() {
        let t = crate::layout::test_support::TempRepo::new(None);
        let mut j = five_set_aside(&t, "swamp sync");
        j.save(&t.layout).unwrap();
        let saved = j.entries.clone();
        // As an apply holds it: the head alone.
        j.entries = Vec::new();
        j.finished = true;
        let f3 = TierPath::parse("outputs/f3").unwrap();
        j.rewrite_head(&t.layout, |e| {
            if e.path == f3 {
                e.written = Some("ab".repeat(32));
            }
        })
        .unwrap();
        let back = Journal::load(&t.layout, &j.id).unwrap();
        assert!(back.finished, "the head as rewritten");
        let mut expected = saved.clone();
        expected[3].written = Some("ab".repeat(32));
        assert_eq!(back.entries, expected, "every entry, in order, patched");
        assert_eq!(
            Journal {
                entries: Vec::new(),
                ..back
            },
            j
        );

        // A saved file that cannot be read back: an error, and the file
        // as it was.
        let path = t.layout.journal_path(&j.id);
        let torn = &std::fs::read(&path).unwrap()[..200];
        std::fs::write(&path, torn).unwrap();
        j.summary = "changed".into();
        assert!(j.rewrite_head(&t.layout, |_| ()).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), torn);
    }
}
