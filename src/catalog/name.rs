//! What a data name and a version directory may be called.
//!
//! Shared by the catalog scan (which must recognise exactly the files the
//! data workload can create) and by [`crate::data`] (which refuses anything
//! else). Living here keeps the dependency one-way: data → catalog.

/// Longest accepted data name, in bytes.
pub(crate) const MAX_NAME_LEN: usize = 255;

/// The file every version directory holds.
pub(crate) const RAW_FILE: &str = "raw";

/// Why a data name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("the name is empty")]
    Empty,
    #[error("the name is {0} characters long (at most {MAX_NAME_LEN})")]
    TooLong(usize),
    #[error("it has an empty segment (`//`, or a leading or trailing `/`)")]
    EmptySegment,
    #[error("segment `{0}` is `.` or `..`")]
    DotSegment(String),
    #[error("segment `{0}` starts with `_` or `.` (reserved for the catalog and temp files)")]
    Reserved(String),
    #[error("segment `{0}` is all digits (digits name versions)")]
    AllDigits(String),
    #[error("segment `{segment}` contains {ch:?} (allowed: letters, digits, `.`, `_`, `-`)")]
    BadChar { segment: String, ch: char },
}

/// Checks a data name: `/`-separated segments of `[A-Za-z0-9._-]`, none
/// empty, `.`/`..`, starting with `_`/`.`, or all digits; at most 255 bytes.
pub(crate) fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.len() > MAX_NAME_LEN {
        return Err(NameError::TooLong(name.len()));
    }
    for segment in name.split('/') {
        check_segment(segment)?;
    }
    Ok(())
}

fn check_segment(segment: &str) -> Result<(), NameError> {
    if segment.is_empty() {
        return Err(NameError::EmptySegment);
    }
    if segment == "." || segment == ".." {
        return Err(NameError::DotSegment(segment.to_string()));
    }
    if let Some(ch) = segment
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(NameError::BadChar {
            segment: segment.to_string(),
            ch,
        });
    }
    if segment.starts_with('_') || segment.starts_with('.') {
        return Err(NameError::Reserved(segment.to_string()));
    }
    // An all-digit segment would make `a/1/raw` ambiguous with name `a/1`.
    if segment.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NameError::AllDigits(segment.to_string()));
    }
    Ok(())
}

/// A data version's path (`data/NAME/V/raw`): its name and number.
pub(crate) fn data_version(path: &str) -> Option<(&str, u64)> {
    let rest = path.strip_prefix("data/")?.strip_suffix("/raw")?;
    let (name, version) = rest.rsplit_once('/')?;
    Some((name, parse_version(version)?))
}

/// Parses a version directory name: canonical decimal (no sign, no leading
/// zero), at least 1, and small enough for SQLite's signed 64-bit integers.
/// Non-canonical spellings are refused so `01` and `1` can never both map
/// to version 1.
pub(crate) fn parse_version(segment: &str) -> Option<u64> {
    if segment.is_empty()
        || segment.starts_with('0')
        || !segment.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    segment
        .parse::<u64>()
        .ok()
        .filter(|&v| i64::try_from(v).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_names() {
        for ok in [
            "a",
            "model/output",
            "A.b_c-d",
            "v1/x2",
            "a.",
            "x".repeat(255).as_str(),
        ] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_invalid_names_with_the_reason() {
        assert_eq!(check_name(""), Err(NameError::Empty));
        assert_eq!(check_name(&"x".repeat(256)), Err(NameError::TooLong(256)));
        for bad in ["a//b", "/a", "a/"] {
            assert_eq!(check_name(bad), Err(NameError::EmptySegment), "{bad}");
        }
        assert_eq!(check_name("a/.."), Err(NameError::DotSegment("..".into())));
        assert_eq!(check_name("./a"), Err(NameError::DotSegment(".".into())));
        assert_eq!(
            check_name("_catalog.db"),
            Err(NameError::Reserved("_catalog.db".into()))
        );
        assert_eq!(
            check_name("a/.hidden"),
            Err(NameError::Reserved(".hidden".into()))
        );
        assert_eq!(check_name("a/1"), Err(NameError::AllDigits("1".into())));
        assert_eq!(
            check_name("a b"),
            Err(NameError::BadChar {
                segment: "a b".into(),
                ch: ' '
            })
        );
        assert!(matches!(check_name("a\\b"), Err(NameError::BadChar { .. })));
        assert!(matches!(check_name("é"), Err(NameError::BadChar { .. })));
    }

    #[test]
    fn versions_are_canonical_positive_i64() {
        assert_eq!(parse_version("1"), Some(1));
        assert_eq!(parse_version("42"), Some(42));
        assert_eq!(parse_version(&i64::MAX.to_string()), Some(i64::MAX as u64));
        for bad in ["", "0", "01", "+1", "-1", "1a", "18446744073709551615"] {
            assert_eq!(parse_version(bad), None, "{bad}");
        }
    }
}
