//! Datastore specs as typed on the command line:
//! `local`, `file:///abs/path`, `s3://bucket/prefix?region=…&endpoint=…`,
//! `gs://bucket/prefix?endpoint=…`.

use super::{AbsPath, DatastoreConfig};

#[derive(Debug, thiserror::Error)]
#[error("invalid datastore {spec:?}: {reason}")]
pub struct DatastoreSpecError {
    pub spec: String,
    pub reason: String,
}

/// Refuses an endpoint that carries credentials (`http://KEY:SECRET@host`):
/// they would be written to `.swamp.toml` and shown in every message.
/// Credentials come from the provider's standard chain.
///
/// The endpoint is a URL, read by `url`; one without an authority to
/// read (no `//`: `KEY:SECRET@host:8333`) is looked at up to its first
/// `/`. (The spec
/// around it is not given to `url`: it would resolve `..` in a prefix and
/// decode the query, turning a spec that should be refused into another
/// bucket path.)
pub(super) fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let credentials = match url::Url::parse(endpoint) {
        Ok(u) if !u.cannot_be_a_base() => !u.username().is_empty() || u.password().is_some(),
        // `KEY:SECRET@host` parses as scheme `KEY` and an opaque path.
        _ => endpoint
            .split(['/', '?', '#'])
            .next()
            .is_some_and(|authority| authority.contains('@')),
    };
    if endpoint
        .strip_prefix("file://")
        .is_some_and(|dir| !dir.starts_with('/'))
    {
        return Err(
            "a file endpoint needs an absolute path to the directory holding the buckets, like file:///srv/buckets"
                .to_string(),
        );
    }
    if credentials {
        return Err(
            "the endpoint carries credentials (`user:secret@`); remove them and give them through the provider's credential chain instead (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a profile for S3, application-default credentials for GCS)"
                .to_string(),
        );
    }
    Ok(())
}

/// Refuses a key prefix that is not a plain folder path in the bucket:
/// a `.` or `..` segment (a prefix that would name another place once
/// resolved, refused here rather than at the first object key), an empty
/// one (`a//b`), or a backslash or NUL.
pub(super) fn check_prefix(prefix: &str) -> Result<(), String> {
    for segment in prefix.split('/') {
        let why = match segment {
            "" => "an empty segment (`//`)",
            "." | ".." => "a `.` or `..` segment",
            s if s.contains(['\\', '\0']) => "a backslash or NUL",
            _ => continue,
        };
        return Err(format!(
            "the prefix `{prefix}` has {why}: a prefix names a folder in the bucket, like `swamp` or `teams/infra`"
        ));
    }
    Ok(())
}

/// The closest of `known` to `given`, when it is close enough to be a
/// typo of it.
pub(crate) fn did_you_mean<'a>(given: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(given, k), *k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(1))
        .min()
        .map(|(_, k)| k)
}

/// The spec [`parse_datastore_spec`] reads back as `datastore`: what
/// `swamp datastore setup` takes to reach it.
pub fn datastore_spec(datastore: &DatastoreConfig) -> String {
    let (scheme, bucket, prefix, region, endpoint) = match datastore {
        DatastoreConfig::Local => return "local".into(),
        DatastoreConfig::Filesystem { path } => return format!("file://{}", path.0.display()),
        DatastoreConfig::S3 {
            bucket,
            prefix,
            region,
            endpoint,
        } => ("s3", bucket, prefix, region.as_deref(), endpoint),
        DatastoreConfig::Gcs {
            bucket,
            prefix,
            endpoint,
        } => ("gs", bucket, prefix, None, endpoint),
    };
    let mut spec = format!("{scheme}://{bucket}/{}", prefix.as_deref().unwrap_or(""));
    let query: Vec<String> = region
        .map(|r| format!("region={r}"))
        .into_iter()
        .chain(endpoint.as_ref().map(|e| format!("endpoint={e}")))
        .collect();
    if !query.is_empty() {
        spec.push('?');
        spec.push_str(&query.join("&"));
    }
    spec
}

pub fn parse_datastore_spec(spec: &str) -> Result<DatastoreConfig, DatastoreSpecError> {
    let err = |reason: &str| DatastoreSpecError {
        spec: spec.to_string(),
        reason: reason.to_string(),
    };
    if spec == "local" {
        return Ok(DatastoreConfig::Local);
    }
    if let Some(path) = spec.strip_prefix("file://") {
        if path.is_empty() {
            return Err(err(
                "file:// needs an absolute path, like file:///srv/swamp",
            ));
        }
        let path = AbsPath::new(path).map_err(|e| err(&e))?;
        return Ok(DatastoreConfig::Filesystem { path });
    }
    let (scheme, rest) = if let Some(rest) = spec.strip_prefix("s3://") {
        ("s3", rest)
    } else if let Some(rest) = spec.strip_prefix("gs://") {
        ("gs", rest)
    } else if spec.starts_with('/') {
        return Err(err(&format!(
            "a path is given as a file URL: did you mean `file://{spec}`?"
        )));
    } else {
        return Err(err(
            "expected `local`, `file:///abs/path`, `s3://bucket/prefix` or `gs://bucket/prefix`",
        ));
    };
    let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (bucket, prefix) = location.split_once('/').unwrap_or((location, ""));
    if bucket.is_empty() {
        return Err(err("missing bucket name"));
    }
    let prefix = prefix.trim_matches('/');
    if !prefix.is_empty() {
        check_prefix(prefix).map_err(|e| err(&e))?;
    }
    let prefix = (!prefix.is_empty()).then(|| prefix.to_string());
    let mut region = None;
    let mut endpoint = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match (scheme, k) {
            ("s3", "region") => region = Some(v.to_string()),
            (_, "endpoint") if v.is_empty() => {
                return Err(err(
                    "`endpoint=` is empty: give the server's URL (like http://127.0.0.1:8333), or leave `endpoint` out for the provider's own",
                ));
            }
            (_, "endpoint") => {
                check_endpoint(v).map_err(|reason| DatastoreSpecError {
                    // Never echo the secret back.
                    spec: spec.split_once('?').map_or(spec, |(s, _)| s).to_string() + "?endpoint=…",
                    reason,
                })?;
                endpoint = Some(v.to_string());
            }
            _ => {
                let known: &[&str] = if scheme == "s3" {
                    &["region", "endpoint"]
                } else {
                    &["endpoint"]
                };
                let hint = match did_you_mean(k, known) {
                    Some(m) => format!("; did you mean `{m}`?"),
                    None => format!(" (known: {})", known.join(", ")),
                };
                return Err(err(&format!("unknown parameter `{k}`{hint}")));
            }
        }
    }
    Ok(match scheme {
        "s3" => DatastoreConfig::S3 {
            bucket: bucket.to_string(),
            prefix,
            region,
            endpoint,
        },
        _ => DatastoreConfig::Gcs {
            bucket: bucket.to_string(),
            prefix,
            endpoint,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec a `moved` marker names is one `datastore setup` reads back
    /// as the same datastore.
    #[test]
    fn a_datastore_spec_reads_back_as_the_same_datastore() {
        for spec in [
            "local",
            "file:///srv/swamp",
            "s3://b/p?region=eu-west-1&endpoint=http://127.0.0.1:8333",
            "s3://b/",
            "gs://b/deep/prefix?endpoint=http://127.0.0.1:4443",
        ] {
            let parsed = parse_datastore_spec(spec).unwrap();
            let written = datastore_spec(&parsed);
            assert_eq!(
                parse_datastore_spec(&written).unwrap(),
                parsed,
                "{spec} -> {written}"
            );
        }
    }

    #[test]
    fn a_prefix_that_would_resolve_elsewhere_is_a_bad_spec_with_help_for_typos() {
        let reason = |spec: &str| parse_datastore_spec(spec).unwrap_err().reason;
        for spec in [
            "gs://b/../x",
            "s3://b/a/../../x?region=r",
            "s3://b/./x",
            "s3://b/a//x",
        ] {
            assert!(
                reason(spec).contains("the prefix"),
                "{spec}: {}",
                reason(spec)
            );
        }
        assert!(parse_datastore_spec("s3://b/teams/infra/?region=r").is_ok());
        assert!(reason("s3://b/x?endpoint=").contains("`endpoint=` is empty"));
        assert!(reason("s3://b/x?regoin=r").ends_with("did you mean `region`?"));
        assert!(reason("gs://b/x?endpiont=http://h").ends_with("did you mean `endpoint`?"));
        assert!(reason("s3://b/x?foo=1").contains("(known: region, endpoint)"));
        assert!(reason("/srv/swamp").contains("did you mean `file:///srv/swamp`?"));
    }

    #[test]
    fn credentials_in_an_endpoint_are_refused_without_echoing_them() {
        for spec in [
            "s3://b/p?endpoint=http://AKIAEXAMPLE:s3cr3t@127.0.0.1:8333",
            "gs://b/p?endpoint=https://user@storage.example",
        ] {
            let e = parse_datastore_spec(spec).unwrap_err().to_string();
            assert!(e.contains("credentials"), "{e}");
            assert!(!e.contains("s3cr3t") && !e.contains("AKIA"), "{e}");
        }
        // An `@` after the host is no credential.
        assert!(parse_datastore_spec("s3://b/p?endpoint=http://127.0.0.1:8333/a@b").is_ok());
        // Nor one in a query; a user alone is, and so is one with no scheme.
        assert!(parse_datastore_spec("s3://b/p?endpoint=http://h:1/?x=a@b").is_ok());
        assert!(parse_datastore_spec("s3://b/p?endpoint=http://user@h:1").is_err());
        assert!(parse_datastore_spec("s3://b/p?endpoint=KEY:SECRET@h:1").is_err());
    }

    #[test]
    fn parses_each_kind() {
        assert_eq!(
            parse_datastore_spec("local").unwrap(),
            DatastoreConfig::Local
        );
        assert_eq!(
            parse_datastore_spec("file:///srv/swamp").unwrap(),
            DatastoreConfig::Filesystem {
                path: AbsPath::new("/srv/swamp").unwrap()
            }
        );
        assert_eq!(
            parse_datastore_spec("s3://b/swamp?region=eu-west-1&endpoint=http://127.0.0.1:8333")
                .unwrap(),
            DatastoreConfig::S3 {
                bucket: "b".into(),
                prefix: Some("swamp".into()),
                region: Some("eu-west-1".into()),
                endpoint: Some("http://127.0.0.1:8333".into()),
            }
        );
        assert_eq!(
            parse_datastore_spec("gs://b").unwrap(),
            DatastoreConfig::Gcs {
                bucket: "b".into(),
                prefix: None,
                endpoint: None
            }
        );
    }

    #[test]
    fn refuses_relative_file_paths_and_unknown_schemes() {
        assert!(parse_datastore_spec("file://rel/path").is_err());
        assert!(parse_datastore_spec("ftp://x").is_err());
        assert!(parse_datastore_spec("s3://b?colour=blue").is_err());
    }
}
