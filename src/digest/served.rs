//! What a server says of an object's bytes besides swamp's sha256: the
//! MD5 and CRC32C GCS lists for every object (S3's single-part ETag is
//! an MD5 too), and whether it is stored gzip-compressed. A download of
//! an object another tool wrote is checked against these.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Md5;

/// A CRC32C (Castagnoli), as GCS keeps it for every object (`crc32c`:
/// the big-endian bytes in base64). The one check a composite object
/// (one `gcloud storage cp` assembled from parts) has: it has no MD5.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Crc32c(pub u32);

impl Crc32c {
    /// GCS's `crc32c`: the four big-endian bytes in base64.
    pub fn from_base64(b64: &str) -> Option<Crc32c> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
        Some(Crc32c(u32::from_be_bytes(bytes.try_into().ok()?)))
    }

    pub fn of(bytes: &[u8]) -> Crc32c {
        let mut h = Crc32cHasher::default();
        h.update(bytes);
        h.finish()
    }

    pub fn hex(&self) -> String {
        format!("{:08x}", self.0)
    }
}

/// A CRC32C computed a chunk at a time.
pub struct Crc32cHasher(crc_fast::Digest);

impl Default for Crc32cHasher {
    fn default() -> Self {
        Crc32cHasher(crc_fast::Digest::new(crc_fast::CrcAlgorithm::Crc32Iscsi))
    }
}

impl Crc32cHasher {
    pub fn update(&mut self, chunk: &[u8]) {
        self.0.update(chunk);
    }

    pub fn finish(&self) -> Crc32c {
        // A 32-bit CRC: the high half is always zero.
        Crc32c(self.0.finalize() as u32)
    }
}

impl fmt::Debug for Crc32c {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Crc32c({})", self.hex())
    }
}

impl fmt::Display for Crc32c {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

/// What the listing said of an object's bytes when swamp's sha256 cannot
/// check them alone: an object another tool wrote (no sha256 metadata),
/// or one stored gzip-compressed (its size and hashes are of the
/// compressed bytes; the cache holds them decoded).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Served {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub md5: Option<Md5>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32c: Option<Crc32c>,
    /// Stored with `Content-Encoding: gzip`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gzip: bool,
}

impl Served {
    /// What a listing entry says, when it says anything a download can be
    /// checked against or must know (`None`: nothing).
    pub fn listed(md5: Option<Md5>, crc32c: Option<Crc32c>, gzip: bool) -> Option<Served> {
        (md5.is_some() || crc32c.is_some() || gzip).then_some(Served { md5, crc32c, gzip })
    }
}

/// Fixed-width lowercase hex on the wire (plan files, state), as
/// [`super::Sha256`] is.
fn hex_de<'de, D: Deserializer<'de>, const N: usize>(
    d: D,
    what: &'static str,
) -> Result<[u8; N], D::Error> {
    let s = String::deserialize(d)?;
    let mut out = [0u8; N];
    hex::decode_to_slice(&s, &mut out)
        .map_err(|_| serde::de::Error::invalid_value(serde::de::Unexpected::Str(&s), &what))?;
    Ok(out)
}

impl Serialize for Md5 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

impl<'de> Deserialize<'de> for Md5 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Md5, D::Error> {
        hex_de::<D, 16>(d, "an md5 as 32 hex digits").map(Md5)
    }
}

impl Serialize for Crc32c {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

impl<'de> Deserialize<'de> for Crc32c {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Crc32c, D::Error> {
        hex_de::<D, 4>(d, "a crc32c as 8 hex digits").map(|b| Crc32c(u32::from_be_bytes(b)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crc32c_is_castagnolis_and_reads_as_gcs_writes_it() {
        // The check value of CRC-32C, and GCS's base64 of the same.
        assert_eq!(Crc32c::of(b"123456789"), Crc32c(0xe306_9283));
        assert_eq!(Crc32c::from_base64("4waSgw=="), Some(Crc32c(0xe306_9283)));
        assert_eq!(Crc32c::from_base64("4waS"), None);
    }

    #[test]
    fn served_hashes_round_trip_as_hex_and_nothing_is_none() {
        let s = Served {
            md5: Some(Md5::of(b"x")),
            crc32c: Some(Crc32c::of(b"x")),
            gzip: true,
        };
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Served>(&json).unwrap(), s);
        assert!(json.contains(&Md5::of(b"x").hex()), "{json}");
        assert!(serde_json::from_str::<Served>(r#"{"md5":"zz"}"#).is_err());
        assert_eq!(Served::listed(None, None, false), None);
    }
}
