//! The wall clock as swamp writes it into manifests, sentinels and locks.

/// RFC 3339 UTC, to the second; `SWAMP_NOW` (RFC 3339) pins it for tests.
pub(crate) fn now_rfc3339() -> String {
    if let Ok(fixed) = std::env::var("SWAMP_NOW") {
        return fixed;
    }
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Seconds since the epoch, from the same clock (`SWAMP_NOW` pins it).
pub(crate) fn now_secs() -> u64 {
    humantime::parse_rfc3339(&now_rfc3339())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}
