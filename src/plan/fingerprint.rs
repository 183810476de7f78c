//! A fingerprint of the state a plan was computed from: the desired state
//! and the whole observed snapshot. Even an empty snapshot has one, so a
//! plan made against nothing is refused once something appears.

use std::fmt;

use serde::{Deserialize, Serialize};

use sha2::{Digest, Sha256};

use crate::state::{Desired, Observed};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fingerprint(String);

impl Fingerprint {
    pub fn of(desired: &Desired, observed: &Observed) -> Fingerprint {
        // serde_json of BTreeMaps and Vecs is deterministic. Streamed into
        // the hasher: a JSON copy of a 100,000-file observation is tens of
        // megabytes held only to be hashed.
        let mut hasher = HashWriter(Sha256::new());
        let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut hasher);
        serde_json::to_writer(&mut out, &(desired, observed)).expect("state serialises");
        std::io::Write::flush(&mut out).expect("hashing cannot fail");
        drop(out);
        Fingerprint(format!("sha256:{}", hex::encode(hasher.0.finalize())))
    }
}

/// An `io::Write` that only hashes what it is given.
struct HashWriter(Sha256);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Says, in at most `limit` lines, how `now` differs from `then`.
pub(crate) fn explain_changes(then: &Observed, now: &Observed, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (a, b) in then.placements.iter().zip(&now.placements) {
        let root = &b.label;
        for (path, f) in a.files.iter() {
            match b.files.get(path) {
                None => out.push(format!("{root}/{path} was removed")),
                Some(g) if g.sha256 != f.sha256 => out.push(format!("{root}/{path} changed")),
                Some(_) => {}
            }
        }
        for path in b.files.keys().filter(|p| !a.files.contains_key(*p)) {
            out.push(format!("{root}/{path} appeared"));
        }
        if a.obstacles != b.obstacles {
            out.push(format!("obstacles under {root} changed"));
        }
    }
    if let (Some(a), Some(b)) = (&then.remote, &now.remote) {
        for (path, o) in &a.files {
            match b.files.get(path) {
                None => out.push(format!("{}{path} was deleted from the remote", b.url)),
                Some(p) if p.version != o.version => {
                    out.push(format!("{}{path} changed in the remote", b.url))
                }
                Some(_) => {}
            }
        }
        for path in b.files.keys().filter(|p| !a.files.contains_key(*p)) {
            out.push(format!("{}{path} appeared in the remote", b.url));
        }
        if a.base != b.base {
            out.push("the sync base changed (another sync ran)".to_string());
        }
    }
    if then.mirror != now.mirror {
        out.push("the repository's definitions (models/, workflows/, vaults/) changed".to_string());
    }
    if then.sentinel != now.sentinel {
        out.push("the remote's managed-config sentinel changed".to_string());
    }
    if then.modified != now.modified {
        out.push(
            "cache files' modification times changed (--conflict newer uses them)".to_string(),
        );
    }
    if out.is_empty() {
        out.push("the datastore layout changed".to_string());
    }
    if out.len() > limit {
        let more = out.len() - limit;
        out.truncate(limit);
        out.push(format!("… and {more} more"));
    }
    out
}
