//! [`Expect`]: what a download's bytes are checked against, as the plan
//! saw the object. In a plan file its fields sit in the download's own
//! object (`sha256`, or `md5`/`crc32c`/`content_encoding`), so a plan of
//! swamp's own objects reads as it always has.

use serde::{Deserialize, Serialize};

use crate::digest::{Served, Sha256};

/// What a download's bytes are checked against. One word wide beside
/// the sha256, so a million downloads cost no more than before: the rare
/// kind (another tool's object) is boxed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Fields", into = "Fields")]
pub enum Expect {
    /// swamp's sha256 (the object's metadata, or the sync base's for the
    /// same version).
    Sha256(Sha256),
    /// The server's hashes of the bytes as stored: an object another tool
    /// wrote, or one stored gzip-compressed (checked as stored, then
    /// decoded; its sha256 is learnt as it lands).
    Served(Box<Served>),
    /// Nothing known before the read: the read's answer says.
    Unknown,
}

impl Expect {
    /// From what the remote side knows: a sha256 checks the content
    /// itself, unless the object is stored compressed (then the server's
    /// hashes of the stored bytes do, and decoding is checked by gzip).
    pub fn of(sha256: Option<Sha256>, served: Option<&Served>) -> Expect {
        match (sha256, served) {
            (_, Some(s)) if s.gzip => Expect::Served(Box::new(s.clone())),
            (Some(sha), _) => Expect::Sha256(sha),
            (None, Some(s)) => Expect::Served(Box::new(s.clone())),
            (None, None) => Expect::Unknown,
        }
    }

    /// The content's sha256, when the plan knows it.
    pub fn sha256(&self) -> Option<Sha256> {
        match self {
            Expect::Sha256(s) => Some(*s),
            _ => None,
        }
    }

    /// The object a download of `key` at `version` reads, as the plan
    /// knows it: what the store checks the bytes against.
    pub fn object(&self, key: String, size: u64, version: String) -> crate::store::ObjectMeta {
        let served = self.served();
        crate::store::ObjectMeta {
            key,
            size,
            version,
            sha256: self.sha256().map(|s| s.hex()),
            modified: None,
            md5: served.and_then(|s| s.md5),
            crc32c: served.and_then(|s| s.crc32c),
            content_encoded: served.is_some_and(|s| s.gzip),
        }
    }

    /// The server's hashes, when they are the check.
    pub fn served(&self) -> Option<&Served> {
        match self {
            Expect::Served(s) => Some(s),
            _ => None,
        }
    }
}

/// How [`Expect`] reads and writes in a plan file.
#[derive(Default, Serialize, Deserialize)]
struct Fields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<Sha256>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    md5: Option<crate::digest::Md5>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    crc32c: Option<crate::digest::Crc32c>,
    /// `"gzip"` for an object stored compressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content_encoding: Option<Gzip>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Gzip {
    Gzip,
}

impl From<Fields> for Expect {
    fn from(f: Fields) -> Expect {
        let served = Served::listed(f.md5, f.crc32c, f.content_encoding.is_some());
        Expect::of(f.sha256, served.as_ref())
    }
}

impl From<Expect> for Fields {
    fn from(e: Expect) -> Fields {
        match e {
            Expect::Sha256(sha256) => Fields {
                sha256: Some(sha256),
                ..Fields::default()
            },
            Expect::Served(s) => Fields {
                sha256: None,
                md5: s.md5,
                crc32c: s.crc32c,
                content_encoding: s.gzip.then_some(Gzip::Gzip),
            },
            Expect::Unknown => Fields::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::{Crc32c, Md5};

    #[test]
    fn a_plan_file_holds_what_a_download_is_checked_against_and_reads_it_back() {
        let sha = Sha256::of(b"x");
        let foreign = Served {
            md5: Some(Md5::of(b"x")),
            crc32c: Some(Crc32c::of(b"x")),
            gzip: false,
        };
        let gzipped = Served {
            gzip: true,
            ..foreign.clone()
        };
        for (e, json) in [
            (
                Expect::of(Some(sha), None),
                format!(r#"{{"sha256":"{}"}}"#, sha.hex()),
            ),
            (
                Expect::of(None, Some(&foreign)),
                format!(
                    r#"{{"md5":"{}","crc32c":"{}"}}"#,
                    Md5::of(b"x").hex(),
                    Crc32c::of(b"x").hex()
                ),
            ),
            (Expect::of(None, None), "{}".to_string()),
        ] {
            assert_eq!(serde_json::to_string(&e).unwrap(), json);
            assert_eq!(serde_json::from_str::<Expect>(&json).unwrap(), e);
        }
        // Stored compressed: the stored bytes' hashes check it, whatever
        // sha256 its metadata claims.
        let e = Expect::of(Some(sha), Some(&gzipped));
        assert_eq!(e.served(), Some(&gzipped));
        assert_eq!(e.sha256(), None);
        let json = serde_json::to_string(&e).unwrap();
        assert!(json.contains(r#""content_encoding":"gzip""#), "{json}");
        assert_eq!(serde_json::from_str::<Expect>(&json).unwrap(), e);
    }
}
