//! Checks of the repository side: `config` (the configuration parses and is
//! valid), `layout` (nothing outside our placement in the datastore root:
//! root-level tier data in a namespaced repo, foreign directories in the
//! cache, an unfinished migration) and `catalog` (the index covers the
//! data files exactly).

use crate::catalog::{Catalog, Freshness};
use crate::config::{Config, Placement};
use crate::engine::{self, Planned};
use crate::layout::{Layout, Tier};
use crate::plan::root_label;
use crate::plan::textdiff::attach_diffs;
use crate::plan::{Action, diff};
use crate::state::tree::first_datastore_file;
use crate::state::{Desired, Scope};

use super::{Check, Context, DoctorError, Finding, Fix, Step, could_not};

pub(crate) struct ConfigCheck;

impl Check for ConfigCheck {
    fn name(&self) -> &'static str {
        "config"
    }

    fn run(&self, cx: &Context) -> Finding {
        match &cx.loaded {
            Ok((config, _)) => Finding::pass(
                self.name(),
                format!(
                    ".swamp.toml parses and is valid ({} datastore, {})",
                    config.datastore.kind(),
                    match &config.namespace {
                        Some(ns) => format!("namespace `{ns}`"),
                        None => "solo layout".to_string(),
                    }
                ),
            ),
            Err(message) => Finding::fail(
                self.name(),
                format!(".swamp.toml is not valid: {message}"),
                "edit .swamp.toml: fix the key named in the message (schemas/config.schema.json lists them)",
            ),
        }
    }
}

pub(crate) struct LayoutCheck;

/// The placement whose tier dirs sit directly at the datastore root.
fn solo(config: &Config) -> Placement {
    Placement {
        datastore: config.datastore.clone(),
        namespace: None,
    }
}

/// For a namespaced repository whose datastore root also holds tier data
/// (`<root>/data/…` beside `<root>/<ns>/data/…`): the plan that drains that
/// root-level data into the namespace. It is the ordinary layout diff with
/// the solo placement as a source (as `namespace migrate` does), so
/// byte-identical copies are dropped, the rest moves, and different
/// copies are conflicts. Only the local side is planned: the bucket is
/// never read or written for this.
pub(crate) fn stray_plan(config: &Config, layout: &Layout) -> Result<Option<Planned>, DoctorError> {
    if config.namespace.is_none() {
        return Ok(None);
    }
    let solo = solo(config);
    // A recorded migration from the root is the ordinary plan's business.
    if config.migrating_from.contains(&solo) || first_datastore_file(layout, &solo).is_none() {
        return Ok(None);
    }
    let desired = Desired {
        scope: Scope::Layout,
        target: config.target(),
        sources: vec![solo],
    };
    let observed = engine::observe(layout, &desired)?;
    let mut plan = diff(&desired, &observed);
    // Nothing is recorded in .swamp.toml, so there is no record to clear.
    plan.actions
        .retain(|a| !matches!(a, Action::FinishMigration));
    attach_diffs(&mut plan, &observed.texts);
    Ok(Some(Planned {
        desired,
        observed,
        plan,
    }))
}

/// Directories in a remote datastore's cache root that are neither a tier
/// nor our namespace: another namespace's data pulled by an older tool.
pub(crate) fn foreign_dirs(
    config: &Config,
    layout: &Layout,
) -> Result<Vec<String>, std::io::Error> {
    if !config.datastore.is_remote() {
        return Ok(Vec::new());
    }
    let root = layout.cache_root();
    let entries = match std::fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let ours = config.namespace.as_ref().map(|n| n.as_str());
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if Tier::parse(&name).is_some()
            || Some(name.as_str()) == ours
            || name == crate::layout::TRASH_DIR
            || name == crate::layout::CACHE_STATE_DIR
        {
            continue;
        }
        out.push(name);
    }
    out.sort();
    Ok(out)
}

impl Check for LayoutCheck {
    fn name(&self) -> &'static str {
        "layout"
    }

    fn run(&self, cx: &Context) -> Finding {
        let name = self.name();
        let (config, layout) = match cx.config(name) {
            Ok(c) => c,
            Err(skip) => return skip,
        };
        let mut problems = Vec::new();
        let mut fixes = Vec::new();
        if !config.migrating_from.is_empty() {
            let from: Vec<String> = config
                .migrating_from
                .iter()
                .map(ToString::to_string)
                .collect();
            problems.push(format!(
                "a layout change from {} is recorded in .swamp.toml and not finished",
                from.join(", ")
            ));
            fixes.push(
                "review it with `swamp plan`, then finish it with `swamp apply -y`".to_string(),
            );
        }
        let root = layout.datastore_root(&config.datastore);
        let root_shown = root_label(&root, &cx.repo);
        match stray_plan(config, layout) {
            Err(e) => return could_not(name, "look at the datastore root", e),
            Ok(None) => {}
            Ok(Some(planned)) => {
                let s = planned.plan.summary();
                let ns = config.namespace.as_ref().expect("stray_plan needs one");
                problems.push(format!(
                    "{} file(s) in {root_shown} outside namespace `{ns}`: {} byte-identical to the namespaced copy, {} only at the root, {} different from it",
                    s.drop_duplicate + s.moves + s.conflicts,
                    s.drop_duplicate,
                    s.moves,
                    s.conflicts
                ));
                if s.conflicts > 0 {
                    fixes.push(format!(
                        "`swamp doctor datastores --repair` shows both hashes of each differing file; keep the right copy under {root_shown}{ns}/ and delete the other, then `swamp doctor datastores --repair -y` drops or moves the rest"
                    ));
                } else {
                    fixes.push(
                        "`swamp doctor datastores --repair -y` drops the duplicates and moves the rest into the namespace"
                            .to_string(),
                    );
                }
            }
        }
        match foreign_dirs(config, layout) {
            Err(e) => return could_not(name, &format!("read the cache {root_shown}"), e),
            Ok(dirs) if dirs.is_empty() => {}
            Ok(dirs) => {
                let shown: Vec<String> = dirs.iter().map(|d| format!("{d}/")).collect();
                problems.push(format!(
                    "the cache {root_shown} holds directories that are not this repository's (another namespace's data?): {}",
                    shown.join(", ")
                ));
                fixes.push(format!(
                    "swamp never deletes foreign directories: check what they hold, then remove them by hand from {root_shown}"
                ));
            }
        }
        if problems.is_empty() {
            let placement = config.target();
            Finding::pass(
                name,
                format!(
                    "every datastore file is under {}",
                    root_label(&layout.placement_root(&placement), &cx.repo)
                ),
            )
        } else {
            Finding::fail(name, problems.join("; "), fixes.join("; "))
        }
    }

    fn fix(&self, cx: &Context, _finding: &Finding) -> Result<Fix, DoctorError> {
        let Ok((config, layout)) = &cx.loaded else {
            return Ok(Fix::Manual);
        };
        Ok(match stray_plan(config, layout)? {
            Some(planned) => Fix::Plan(Box::new(planned)),
            None => Fix::Manual,
        })
    }
}

pub(crate) struct CatalogCheck;

impl Check for CatalogCheck {
    fn name(&self) -> &'static str {
        "catalog"
    }

    fn run(&self, cx: &Context) -> Finding {
        let name = self.name();
        let (config, layout) = match cx.config(name) {
            Ok(c) => c,
            Err(skip) => return skip,
        };
        let c = match Catalog::completeness(layout, &config.target()) {
            Ok(c) => c,
            Err(e) => return could_not(name, "read the catalog", e),
        };
        if c.is_complete() {
            return Finding::pass(
                name,
                format!("the catalog indexes all {} version file(s)", c.on_disk),
            );
        }
        // Nothing to index: a catalog that does not exist yet is not wrong.
        if c.on_disk == 0 && matches!(c.freshness, Freshness::Missing | Freshness::Invalidated) {
            return Finding::pass(name, "no data files yet; nothing to index");
        }
        // States swamp itself leaves and heals: a layout change marks the
        // catalog for rebuild, and a catalog never built (or deleted: it is
        // derived) is built by the next read. Not a failure, or doctor
        // would fail after every migration.
        if matches!(c.freshness, Freshness::Missing | Freshness::Invalidated) {
            return Finding::pass(
                name,
                format!(
                    "the catalog is {}: the next `swamp data` command rebuilds it from the {} version file(s) (or `swamp catalog rebuild` now)",
                    c.freshness, c.on_disk
                ),
            );
        }
        let message = match &c.freshness {
            // Files changed behind a catalog marked fresh: queries are wrong
            // and nothing rebuilds it on its own.
            Freshness::Fresh => format!(
                "{} of {} version file(s) are not indexed (or have another hash) and {} row(s) have no file: `swamp data list` is wrong until it is rebuilt",
                c.missing, c.on_disk, c.extra
            ),
            other => format!(
                "the catalog is {other}: it indexes none of the {} version file(s) until it is rebuilt (the next `swamp data` command does that first)",
                c.on_disk
            ),
        };
        Finding::fail(
            name,
            message,
            "`swamp catalog rebuild` (or `swamp doctor datastores --repair -y`)",
        )
    }

    fn fix(&self, _cx: &Context, _finding: &Finding) -> Result<Fix, DoctorError> {
        Ok(Fix::Step(rebuild_catalog_step()))
    }
}

/// Rebuilds the catalog from the files of the configured placement.
pub(crate) fn rebuild_catalog_step() -> Step {
    Step {
        what: "rebuild the catalog from the data files".to_string(),
        run: Box::new(|cx: &Context| {
            let (config, layout) = cx
                .loaded
                .as_ref()
                .map_err(|e| DoctorError::Other(e.clone()))?;
            let stats = Catalog::rebuild(layout, &config.target())?;
            Ok(format!(
                "rebuilt the catalog: {} version(s) of {} name(s)",
                stats.versions, stats.names
            ))
        }),
    }
}

/// What interrupted transfers left on this machine: partial downloads in
/// the cache (the next sync removes those no run would continue), and
/// temp files an interrupted write left in a directory bucket
/// (`endpoint=file://`) or a filesystem datastore, which no listing shows.
pub(crate) struct LeftoversCheck;

impl Check for LeftoversCheck {
    fn name(&self) -> &'static str {
        "leftovers"
    }

    fn run(&self, cx: &Context) -> Finding {
        let name = self.name();
        let (config, layout) = match cx.config(name) {
            Ok(c) => c,
            Err(skip) => return skip,
        };
        let mut found = Vec::new();
        let mut fixes = Vec::new();
        let interrupted = crate::state::remote::Interrupted::read(layout, &config.target());
        let partials = interrupted.partials.len();
        let bytes: u64 = interrupted.partials.values().sum();
        if partials > 0 {
            found.push(format!(
                "{partials} partial download(s) ({:.1} MiB) in {}",
                bytes as f64 / f64::from(1u32 << 20),
                layout.partial_dir().display()
            ));
            fixes.push(
                "`swamp datastore sync` removes those no run would continue (an object deleted or replaced since, or untouched for a week) and resumes the rest"
                    .to_string(),
            );
        }
        if let Some(dir) = directory_bucket(config) {
            let temps = temp_files(&dir);
            if temps > 0 {
                found.push(format!(
                    "{temps} temp file(s) an interrupted write left under {}",
                    dir.display()
                ));
                fixes.push(format!(
                    "`swamp datastore sync` removes those under the namespace untouched for a day (a writer on any machine sharing the directory would have touched it); others, once no swamp writes there: `find {} -name '{}*' -delete`",
                    dir.display(),
                    crate::fsutil::TEMP_PREFIX
                ));
            }
        }
        if found.is_empty() {
            Finding::pass(name, "no partial downloads or leftover temp files")
        } else {
            Finding::warn(name, found.join("; "), fixes.join("; "))
        }
    }
}

/// The directory a directory bucket or filesystem datastore keeps this
/// repository's placement in, if it is one.
fn directory_bucket(config: &Config) -> Option<std::path::PathBuf> {
    use crate::config::DatastoreConfig;
    let placement = config.target();
    let root = match &placement.datastore {
        DatastoreConfig::Filesystem { path } => path.as_path().to_path_buf(),
        DatastoreConfig::S3 {
            bucket,
            endpoint: Some(e),
            ..
        }
        | DatastoreConfig::Gcs {
            bucket,
            endpoint: Some(e),
            ..
        } if e.starts_with("file://") => crate::store::endpoint_dir(bucket, e).ok()?,
        _ => return None,
    };
    Some(root.join(Layout::remote_prefix(&placement)))
}

/// Swamp temp files under `dir` (no symlink followed).
fn temp_files(dir: &std::path::Path) -> usize {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(crate::fsutil::is_swamp_temp)
        })
        .count()
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::config::{DatastoreConfig, Namespace};
    use crate::plan::Conflict;
    use crate::plan::conflict::DifferentAtTarget;

    struct Repo {
        _dir: tempfile::TempDir,
        swamp: std::path::PathBuf,
        config: Config,
        layout: Layout,
    }

    fn repo(namespace: Option<&str>) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        let config = Config::new(
            Uuid::nil(),
            DatastoreConfig::Local,
            namespace.map(|n| Namespace::parse(n).unwrap()),
        );
        let layout = Layout::new(&root, &config, &dir.path().join("home")).unwrap();
        Repo {
            swamp: root.join(".swamp"),
            _dir: dir,
            config,
            layout,
        }
    }

    impl Repo {
        fn write(&self, rel: &str, content: &str) {
            let p = self.swamp.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }

        fn kinds(&self) -> Vec<(String, String)> {
            let planned = stray_plan(&self.config, &self.layout).unwrap().unwrap();
            let mut out: Vec<_> = planned
                .plan
                .actions
                .iter()
                .map(|a| {
                    (
                        a.kind().to_string(),
                        a.path().map(ToString::to_string).unwrap_or_default(),
                    )
                })
                .collect();
            out.extend(planned.plan.conflicts.iter().map(|c| match c {
                Conflict::DifferentAtTarget(DifferentAtTarget { path, .. }) => {
                    (c.kind().to_string(), path.to_string())
                }
                other => (other.kind().to_string(), String::new()),
            }));
            out
        }
    }

    #[test]
    fn root_copies_are_dropped_when_identical_moved_when_alone_and_conflicts_when_different() {
        let r = repo(Some("lab"));
        r.write("lab/data/a/1/raw", "a\n");
        r.write("lab/outputs/o.yaml", "ours\n");
        r.write("data/a/1/raw", "a\n");
        r.write("outputs/o.yaml", "theirs\n");
        r.write("audit/only-here.log", "x\n");
        assert_eq!(
            r.kinds(),
            vec![
                ("move".to_string(), "audit/only-here.log".to_string()),
                ("drop-duplicate".to_string(), "data/a/1/raw".to_string()),
                (
                    "different-at-target".to_string(),
                    "outputs/o.yaml".to_string()
                ),
            ]
        );
    }

    #[test]
    fn a_solo_repo_or_a_root_with_only_repo_local_files_has_no_stray_plan() {
        let solo = repo(None);
        solo.write("data/a/1/raw", "a\n");
        assert!(stray_plan(&solo.config, &solo.layout).unwrap().is_none());

        let r = repo(Some("lab"));
        r.write("lab/data/a/1/raw", "a\n");
        for local in [
            "data/_catalog.db",
            "data/_catalog.db-wal",
            "data/_catalog.db-shm",
            "data/_catalog.db-journal",
            "secrets/k.enc",
            "vault-bundles/b",
            "state/hash-cache.bin",
        ] {
            r.write(local, "local");
        }
        assert!(stray_plan(&r.config, &r.layout).unwrap().is_none());
    }

    #[test]
    fn moving_data_in_invalidates_the_catalog_but_never_finishes_a_migration() {
        let r = repo(Some("lab"));
        r.write("data/a/1/raw", "a\n");
        let kinds: Vec<String> = r.kinds().into_iter().map(|(k, _)| k).collect();
        assert_eq!(kinds, vec!["move", "invalidate-catalog"]);
    }
}
