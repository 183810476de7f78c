//! The migration executor: once no source holds datastore files, the
//! migration record (`migrating_from` in `.swamp.toml`) is cleared and the
//! sources' emptied directories removed.

use std::path::Path;

use crate::config::Config;
use crate::state::tree::first_datastore_file;

use super::StopCause;
use super::run::Run;

impl Run<'_> {
    /// Clears `migrating_from` once no source holds datastore files, and
    /// removes the sources' emptied namespace directories.
    pub(super) fn finish_migration(&mut self) -> Result<(), StopCause> {
        let (plan, layout) = (self.plan, self.layout);
        let mut config = Config::load(self.repo)?;
        // A move between remotes keeps the cache where it is: the source's
        // files are the target's then.
        for source in &plan.sources {
            if layout.shares_cache(&source.placement(), &config.target()) {
                continue;
            }
            if let Some(left) = first_datastore_file(layout, &source.placement()) {
                return Err(StopCause::SourceNotEmpty {
                    root: source.dir.clone(),
                    left,
                });
            }
        }
        let recorded: Vec<_> = plan.sources.iter().map(|s| s.placement()).collect();
        config.migrating_from.retain(|p| !recorded.contains(p));
        config.save(self.repo)?;
        for source in &plan.sources {
            let placement = source.placement();
            for &tier in layout.tiers() {
                let dir = layout.tier_dir(&placement, tier);
                if dir != layout.tier_dir(&config.target(), tier) {
                    remove_empty_tree(&dir);
                }
            }
            if placement.namespace.is_some() {
                // Only removes it when empty: never another repo's data.
                let _ = std::fs::remove_dir(&source.dir);
            }
        }
        self.report.migration_finished = true;
        Ok(())
    }
}

/// Removes empty directories under (and including) `dir`, deepest first.
fn remove_empty_tree(dir: &Path) {
    let entries: Vec<_> = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .contents_first(true)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_dir())
        .collect();
    for e in entries {
        let _ = std::fs::remove_dir(e.path());
    }
}
