//! The wall clock as swamp writes it into manifests, sentinels and locks.
//!
//! In a test build (the `failpoints` feature, which the end-to-end tests
//! run) `SWAMP_NOW` (RFC 3339) pins it; the binary as shipped reads only
//! the system clock, so no environment can make it lie about time.

/// RFC 3339 UTC, to the second.
pub(crate) fn now_rfc3339() -> String {
    #[cfg(feature = "failpoints")]
    if let Ok(fixed) = std::env::var("SWAMP_NOW") {
        return fixed;
    }
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Seconds since the epoch, from the same clock.
pub(crate) fn now_secs() -> u64 {
    humantime::parse_rfc3339(&now_rfc3339())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}
