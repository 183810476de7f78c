//! Secrets cut from what a run writes: logs, traces and error messages.
//!
//! Two nets. The secrets this process holds (an S3 secret key and session
//! token once resolved, registered by the backend with [`register`]) are
//! cut wherever they appear. And whatever has the shape of a credential
//! is cut whoever it belongs to: a SigV4 or V2 signature, an
//! `Authorization` value, a security token, an OAuth bearer or access
//! token, a service account's private key. Some of these reach text
//! through the SDK's own events at `trace` level (a canonical request
//! lists the session token) or through a server's error body (S3's
//! `SignatureDoesNotMatch` quotes the string to sign).

use std::borrow::Cow;
use std::sync::{LazyLock, RwLock};

use regex::Regex;

const CUT: &str = "[redacted]";

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Credential shapes: the name (kept, so a reader sees what was cut) and
/// the value (cut). Values end at a quote, a separator or whitespace,
/// except where a header's whole value is secret.
static SHAPES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?i)("?authorization"?\s*[:=]\s*"?)([^"\n\r]+)"#,
        r#"|((?:x-amz-|x-goog-)?signature=)([^\s"&,;]+)"#,
        r#"|("?x-amz-security-token"?\s*[:=]\s*"?)([^\s"&,;]+)"#,
        r#"|(bearer\s+)([^\s"&,;]+)"#,
        r#"|("?(?:access_token|refresh_token|id_token|client_secret)"?\s*[:=]\s*"?)([^\s"&,;]+)"#,
        r#"|("?private_key"?\s*[:=]\s*"?)([^"]+)"#,
        r#"|(-----BEGIN [A-Z ]*PRIVATE KEY-----)([\s\S]*?-----END [A-Z ]*PRIVATE KEY-----)"#,
    ))
    .expect("valid pattern")
});

/// Remembers a secret this process holds, to cut it from all it writes.
/// Short values are not secrets worth the false positives.
pub fn register(secret: &str) {
    if secret.len() < 8 {
        return;
    }
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    if !secrets.iter().any(|s| s == secret) {
        secrets.push(secret.to_string());
    }
}

/// `text` with every registered secret and every credential-shaped value
/// replaced by `[redacted]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    {
        let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
        for s in secrets.iter() {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), CUT));
            }
        }
    }
    if SHAPES.is_match(&out) {
        let cut = SHAPES.replace_all(&out, |c: &regex::Captures<'_>| {
            // The one pair of groups that matched: the name and its value.
            let name = (1..c.len())
                .step_by(2)
                .find_map(|i| c.get(i))
                .map_or("", |m| m.as_str());
            format!("{name}{CUT}")
        });
        out = Cow::Owned(cut.into_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_shapes_are_cut_and_their_names_kept() {
        for (text, kept) in [
            (
                "authorization: AWS4-HMAC-SHA256 Credential=AKIAX/2026/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0123abcd",
                "authorization: [redacted]",
            ),
            (
                "GET /b/k?X-Amz-Signature=deadbeef&x=1",
                "X-Amz-Signature=[redacted]&x=1",
            ),
            (
                "x-amz-security-token: IQoJb3JpZ2luX2VjEXAMPLE\n",
                "x-amz-security-token: [redacted]\n",
            ),
            (
                "\"x-amz-security-token\": \"IQoJtok\"",
                "\"x-amz-security-token\": \"[redacted]\"",
            ),
            ("Bearer ya29.a0AfH6SMBexample", "Bearer [redacted]"),
            (
                "{\"access_token\":\"ya29.xyz\",\"expires_in\":3599}",
                "{\"access_token\":\"[redacted]\",\"expires_in\":3599}",
            ),
            (
                "key -----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY----- end",
                "key -----BEGIN PRIVATE KEY-----[redacted] end",
            ),
        ] {
            let cut = redact(text);
            assert!(cut.contains(kept), "{text:?} → {cut:?}");
            for secret in ["0123abcd", "deadbeef", "IQoJ", "ya29", "MIIEv"] {
                assert!(!cut.contains(secret), "{text:?} → {cut:?}");
            }
        }
        // Text with no credential in it is left alone, and not copied.
        assert!(matches!(
            redact("GET /b/outputs/signature.txt 200"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_registered_secret_is_cut_wherever_it_appears() {
        register("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY");
        register("short");
        let cut = redact("canonical: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY; short");
        assert_eq!(cut, "canonical: [redacted]; short");
    }
}
