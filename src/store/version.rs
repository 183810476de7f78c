//! An object's version as held per file (in the listing, the sync base and
//! the plan), in a fixed size where its form allows: an S3 ETag of a
//! single-part object is an MD5 (32 hex digits, 16 bytes held), a GCS
//! generation is a number. A million files held each version three times
//! as a 32-byte heap string besides its 24-byte handle; these forms keep
//! none on the heap. Anything else (a multipart ETag `<md5>-<parts>`, a
//! filesystem's `size-mtime-inode`, an ETag in capitals) is kept as given.
//!
//! The text is the version: each text has exactly one form (the compact
//! ones only where writing them back gives the same text), so equality and
//! hashing of the forms are those of the texts, and the plan file, the
//! sync base and `--json` carry the text as before.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An object's version: an opaque token that changes whenever the object
/// does (see [`super::ObjectMeta::version`]).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Version(Form);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Form {
    /// 32 lowercase hex digits.
    Md5([u8; 16]),
    /// Decimal digits without a leading zero (or `0`), within a u64.
    Number(u64),
    Text(Box<str>),
}

impl Version {
    pub fn new(text: &str) -> Version {
        if let Some(md5) = lower_hex_16(text) {
            return Version(Form::Md5(md5));
        }
        if let Some(n) = plain_number(text) {
            return Version(Form::Number(n));
        }
        Version(Form::Text(text.into()))
    }

    /// The version's text (written out for the compact forms).
    pub fn as_str(&self) -> Cow<'_, str> {
        match &self.0 {
            Form::Text(t) => Cow::Borrowed(t),
            _ => Cow::Owned(self.to_string()),
        }
    }

    /// Whether this is the version written as `text`.
    pub fn is(&self, text: &str) -> bool {
        match &self.0 {
            Form::Text(t) => **t == *text,
            form => Version::new(text).0 == *form,
        }
    }
}

fn lower_hex_16(text: &str) -> Option<[u8; 16]> {
    // Lowercase only: the form must write back the very text it came from.
    if text.len() != 32 || text.bytes().any(|c| c.is_ascii_uppercase()) {
        return None;
    }
    let mut out = [0u8; 16];
    hex::decode_to_slice(text, &mut out).ok()?;
    Some(out)
}

fn plain_number(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let canonical =
        !b.is_empty() && b.iter().all(u8::is_ascii_digit) && (b[0] != b'0' || b.len() == 1);
    if canonical { text.parse().ok() } else { None }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Form::Md5(bytes) => bytes.iter().try_for_each(|b| write!(f, "{b:02x}")),
            Form::Number(n) => write!(f, "{n}"),
            Form::Text(t) => f.write_str(t),
        }
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl From<&str> for Version {
    fn from(text: &str) -> Version {
        Version::new(text)
    }
}

impl From<String> for Version {
    fn from(text: String) -> Version {
        match Version::new(&text) {
            // Keep the allocation the caller made.
            Version(Form::Text(_)) => Version(Form::Text(text.into_boxed_str())),
            compact => compact,
        }
    }
}

impl From<&Version> for String {
    fn from(v: &Version) -> String {
        v.to_string()
    }
}

impl PartialEq<str> for Version {
    fn eq(&self, text: &str) -> bool {
        self.is(text)
    }
}

impl PartialEq<&str> for Version {
    fn eq(&self, text: &&str) -> bool {
        self.is(text)
    }
}

impl PartialEq<String> for Version {
    fn eq(&self, text: &String) -> bool {
        self.is(text)
    }
}

impl PartialEq<Version> for String {
    fn eq(&self, v: &Version) -> bool {
        v.is(self)
    }
}

impl PartialEq<Version> for str {
    fn eq(&self, v: &Version) -> bool {
        v.is(self)
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_str())
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Version, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Version;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object version (a string)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Version, E> {
                Ok(Version::new(v))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Version, E> {
                Ok(Version::from(v))
            }
        }
        d.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_version_reads_back_as_the_text_it_was_made_from() {
        for text in [
            "d41d8cd98f00b204e9800998ecf8427e",
            "D41D8CD98F00B204E9800998ECF8427E",
            "d41d8cd98f00b204e9800998ecf8427e-3",
            "d41d8cd98f00b204e9800998ecf8427",
            "1733390000123456",
            "0",
            "007",
            "18446744073709551616",
            "4096-1733390000123456789-1234567",
            "",
            "\"quoted\"",
        ] {
            let v = Version::new(text);
            assert_eq!(v.to_string(), text);
            assert_eq!(v.as_str(), text);
            assert!(v.is(text) && v == *text, "{text}");
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap());
            let back: Version = serde_json::from_str(&json).unwrap();
            assert_eq!(back, v);
            assert_eq!(Version::from(text.to_string()), v);
        }
    }

    #[test]
    fn an_etag_and_a_generation_are_held_without_the_heap() {
        assert!(matches!(
            Version::new("d41d8cd98f00b204e9800998ecf8427e").0,
            Form::Md5(_)
        ));
        assert!(matches!(
            Version::new("1733390000123456").0,
            Form::Number(_)
        ));
        assert!(matches!(Version::new("007").0, Form::Text(_)));
        assert_eq!(std::mem::size_of::<Version>(), 24);
    }

    #[test]
    fn versions_differ_as_their_texts_do() {
        let md5 = Version::new("d41d8cd98f00b204e9800998ecf8427e");
        assert_ne!(md5, Version::new("d41d8cd98f00b204e9800998ecf8427f"));
        assert_ne!(Version::new("7"), Version::new("07"));
        assert!(!md5.is("D41D8CD98F00B204E9800998ECF8427E"));
    }
}
