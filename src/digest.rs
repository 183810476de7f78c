//! A content hash as the 32 bytes it is. The observation keeps one per
//! file on each side (cache, remote, sync base), so at 100,000 files a
//! hex `String` each (24 bytes inline and 64 on the heap) is megabytes;
//! this is 32 inline. On the wire and on disk it is the same lowercase hex
//! string as before.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod served;
pub use served::{Crc32c, Crc32cHasher, Served};

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256(pub [u8; 32]);

impl Sha256 {
    /// Parses 64 hex digits (either case); anything else is `None`.
    pub fn parse(s: &str) -> Option<Sha256> {
        let b = s.as_bytes();
        if b.len() != 64 {
            return None;
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        };
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = (digit(b[2 * i])? << 4) | digit(b[2 * i + 1])?;
        }
        Some(Sha256(out))
    }

    /// The sha256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Sha256 {
        use sha2::Digest;
        Sha256(sha2::Sha256::digest(bytes).into())
    }

    /// The sha256 of a file's content, streamed.
    pub fn of_file(path: &std::path::Path) -> std::io::Result<Sha256> {
        crate::fsutil::sha256_file_raw(path).map(Sha256)
    }

    /// The lowercase hex form.
    pub fn hex(&self) -> String {
        crate::fsutil::hex32(&self.0)
    }

    /// The first `n` hex digits (a short form for names and messages).
    pub fn short(&self, n: usize) -> String {
        let mut h = self.hex();
        h.truncate(n.min(64));
        h
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256({})", self.hex())
    }
}

impl PartialEq<str> for Sha256 {
    fn eq(&self, other: &str) -> bool {
        Sha256::parse(other).is_some_and(|o| o == *self)
    }
}

impl PartialEq<String> for Sha256 {
    fn eq(&self, other: &String) -> bool {
        *self == *other.as_str()
    }
}

impl PartialEq<Sha256> for String {
    fn eq(&self, other: &Sha256) -> bool {
        *other == *self.as_str()
    }
}

impl From<[u8; 32]> for Sha256 {
    fn from(b: [u8; 32]) -> Sha256 {
        Sha256(b)
    }
}

/// Unit tests name contents with short labels (`"a"`, `"b"`): each stands
/// for a distinct sha256 (the hash of the label, unless it is one already).
#[cfg(test)]
impl From<&str> for Sha256 {
    fn from(label: &str) -> Sha256 {
        Sha256::parse(label).unwrap_or_else(|| Sha256::of(label.as_bytes()))
    }
}

impl From<Sha256> for String {
    fn from(s: Sha256) -> String {
        s.hex()
    }
}

impl Serialize for Sha256 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut buf = [0u8; 64];
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        for (i, b) in self.0.iter().enumerate() {
            buf[2 * i] = DIGITS[(b >> 4) as usize];
            buf[2 * i + 1] = DIGITS[(b & 15) as usize];
        }
        s.serialize_str(std::str::from_utf8(&buf).expect("hex digits are ASCII"))
    }
}

impl<'de> Deserialize<'de> for Sha256 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Sha256, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Sha256;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sha256 as 64 hex digits")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Sha256, E> {
                Sha256::parse(v)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }
        }
        d.deserialize_str(V)
    }
}

/// An MD5 as the 16 bytes it is: what S3 (a single-part upload's ETag)
/// and GCS (`md5Hash`) already say of an object's content, so an object
/// another tool wrote can be recognised, and checked, without swamp's
/// sha256 metadata. Never a key to content swamp writes itself.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Md5(pub [u8; 16]);

impl Md5 {
    /// An S3 ETag (quoted or not) that is an MD5: 32 hex digits. A
    /// multipart upload's (`…-N`) is not, nor an encrypted object's on
    /// AWS with SSE-KMS (then it simply never matches a file).
    pub fn from_etag(etag: &str) -> Option<Md5> {
        let hex = etag.trim_matches('"');
        if hex.len() != 32 {
            return None;
        }
        let mut out = [0u8; 16];
        hex::decode_to_slice(hex, &mut out).ok()?;
        Some(Md5(out))
    }

    /// GCS's `md5Hash`: the 16 bytes in base64.
    pub fn from_base64(b64: &str) -> Option<Md5> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
        Some(Md5(bytes.try_into().ok()?))
    }

    pub fn of(bytes: &[u8]) -> Md5 {
        use md5::Digest;
        Md5(md5::Md5::digest(bytes).into())
    }

    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// An S3 multipart upload's ETag (`<hex>-<parts>`): the MD5 of its parts'
/// MD5s and how many parts there were. Matched against a file by trying
/// the part sizes uploaders use (see [`MultipartEtag::part_sizes`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MultipartEtag {
    pub md5: [u8; 16],
    pub parts: u64,
}

impl MultipartEtag {
    pub fn from_etag(etag: &str) -> Option<MultipartEtag> {
        let (hex, parts) = etag.trim_matches('"').split_once('-')?;
        let parts: u64 = parts.parse().ok()?;
        if !(1..=10_000).contains(&parts) || hex.len() != 32 {
            return None;
        }
        let mut md5 = [0u8; 16];
        hex::decode_to_slice(hex, &mut md5).ok()?;
        Some(MultipartEtag { md5, parts })
    }

    /// The part sizes that could have made this ETag for a file of `size`
    /// bytes: those of the common uploaders (aws CLI and boto3 8 MiB,
    /// rclone and the AWS JS SDK 5 MiB, s3cmd 15 MiB, mc 16 MiB, 64 MiB,
    /// swamp's own) and equal parts in whole MiB, each only if it gives
    /// this many parts.
    pub fn part_sizes(&self, size: u64, swamp_part: u64) -> Vec<u64> {
        const MIB: u64 = 1 << 20;
        let equal = size.div_ceil(self.parts).next_multiple_of(MIB);
        let mut out: Vec<u64> = [5, 8, 15, 16, 64]
            .into_iter()
            .map(|m| m * MIB)
            .chain([swamp_part, equal])
            .filter(|&p| p > 0 && size.div_ceil(p) == self.parts)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The ETag parts of these MD5s would make.
    pub fn of_parts(part_md5s: &[[u8; 16]]) -> MultipartEtag {
        use md5::Digest;
        let mut all = md5::Md5::new();
        for m in part_md5s {
            all.update(m);
        }
        MultipartEtag {
            md5: all.finalize().into(),
            parts: part_md5s.len() as u64,
        }
    }
}

impl fmt::Display for MultipartEtag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", hex::encode(self.md5), self.parts)
    }
}

impl fmt::Debug for Md5 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Md5({})", self.hex())
    }
}

impl fmt::Display for Md5 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multipart_etag_parses_and_names_the_part_sizes_that_fit() {
        let e = MultipartEtag::from_etag("\"8b0be7847da5564ae08e97af63b60885-2\"").unwrap();
        assert_eq!(e.parts, 2);
        assert_eq!(e.to_string(), "8b0be7847da5564ae08e97af63b60885-2");
        assert_eq!(
            MultipartEtag::from_etag("8b0be7847da5564ae08e97af63b60885"),
            None
        );
        assert_eq!(
            MultipartEtag::from_etag("8b0be7847da5564ae08e97af63b60885-0"),
            None
        );
        // 5 MiB + 10 bytes in 2 parts: 5 MiB parts fit, and so do equal
        // 3 MiB ones; 8 MiB parts would make one.
        const MIB: u64 = 1 << 20;
        assert_eq!(e.part_sizes(5 * MIB + 10, 8 * MIB), [3 * MIB, 5 * MIB]);
        use md5::Digest;
        let a: [u8; 16] = md5::Md5::digest(vec![b'a'; 5 << 20]).into();
        let b: [u8; 16] = md5::Md5::digest([b'b'; 10]).into();
        assert_eq!(MultipartEtag::of_parts(&[a, b]), e);
    }

    #[test]
    fn an_md5_comes_from_a_single_part_etag_or_gcs_base64_and_nothing_else() {
        let md5 = Md5::of(b"hello\n");
        assert_eq!(md5.hex(), "b1946ac92492d2347c6235b4d2611184");
        assert_eq!(
            Md5::from_etag("\"b1946ac92492d2347c6235b4d2611184\""),
            Some(md5)
        );
        assert_eq!(
            Md5::from_etag("b1946ac92492d2347c6235b4d2611184"),
            Some(md5)
        );
        assert_eq!(Md5::from_base64("sZRqySSS0jR8YjW00mERhA=="), Some(md5));
        for etag in [
            "\"b1946ac92492d2347c6235b4d2611184-2\"",
            "",
            "zz946ac92492d2347c6235b4d2611184",
        ] {
            assert_eq!(Md5::from_etag(etag), None, "{etag}");
        }
        assert_eq!(Md5::from_base64("AAAA"), None);
    }

    #[test]
    fn round_trips_as_the_hex_string_it_was() {
        let hex = crate::fsutil::sha256_bytes(b"abc");
        let s = Sha256::parse(&hex).unwrap();
        assert_eq!(s.hex(), hex);
        assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{hex}\""));
        assert_eq!(
            serde_json::from_str::<Sha256>(&format!("\"{hex}\"")).unwrap(),
            s
        );
        assert_eq!(Sha256::parse(&hex.to_uppercase()), Some(s));
        assert!(s == hex);
        for bad in [
            "",
            "ab",
            &hex[..63],
            &format!("{}g", &hex[..63]),
            &format!("{hex}0"),
        ] {
            assert_eq!(Sha256::parse(bad), None, "{bad}");
            assert!(serde_json::from_str::<Sha256>(&format!("\"{bad}\"")).is_err());
        }
        assert_eq!(s.short(8), &hex[..8]);
    }
}
