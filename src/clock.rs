//! The wall clock as swamp writes it into manifests, sentinels and locks.
//!
//! In a test build (the `failpoints` feature, which the end-to-end tests
//! run) `SWAMP_NOW` (RFC 3339) pins the time written, and
//! `SWAMP_CLOCK_SKEW` (seconds, may be negative; or, read at each look,
//! the file `SWAMP_CLOCK_FILE` names) moves the clock a lock is judged and
//! renewed by, so a test can stand a process past a lock's expiry without
//! sleeping through it. The binary as shipped reads only
//! the system clock, so no environment can make it lie about time.

use std::time::SystemTime;

/// The time now.
pub(crate) fn now() -> SystemTime {
    let now = SystemTime::now();
    #[cfg(feature = "failpoints")]
    if let Some(skew) = test_skew() {
        let by = std::time::Duration::from_secs(skew.unsigned_abs());
        return if skew < 0 { now - by } else { now + by };
    }
    now
}

/// Test-only: how far the clock is moved, in seconds: `SWAMP_CLOCK_SKEW`,
/// or what the file `SWAMP_CLOCK_FILE` names holds when it is read (a test
/// moves a running process's clock by writing it; absent: not moved).
#[cfg(feature = "failpoints")]
fn test_skew() -> Option<i64> {
    if let Ok(file) = std::env::var("SWAMP_CLOCK_FILE") {
        return std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok());
    }
    std::env::var("SWAMP_CLOCK_SKEW").ok()?.parse().ok()
}

/// RFC 3339 UTC, to the second.
pub(crate) fn now_rfc3339() -> String {
    #[cfg(feature = "failpoints")]
    if let Ok(fixed) = std::env::var("SWAMP_NOW") {
        return fixed;
    }
    humantime::format_rfc3339_seconds(now()).to_string()
}

/// RFC 3339 UTC, to the millisecond: what orders records written by
/// clones in the same second.
pub(crate) fn now_rfc3339_millis() -> String {
    #[cfg(feature = "failpoints")]
    if let Ok(fixed) = std::env::var("SWAMP_NOW") {
        return fixed;
    }
    humantime::format_rfc3339_millis(now()).to_string()
}

/// Seconds since the epoch, from the same clock.
pub(crate) fn now_secs() -> u64 {
    humantime::parse_rfc3339(&now_rfc3339())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}
