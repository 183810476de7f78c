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
    let prefix = (!prefix.is_empty()).then(|| prefix.to_string());
    let mut region = None;
    let mut endpoint = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match (scheme, k) {
            ("s3", "region") => region = Some(v.to_string()),
            (_, "endpoint") => endpoint = Some(v.to_string()),
            _ => return Err(err(&format!("unknown parameter `{k}`"))),
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
