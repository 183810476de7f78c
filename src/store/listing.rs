//! Listing a prefix: one level at a time ([`Level`]), page by page for a
//! server that pages ([`Pager`]), and a big namespace split into parts
//! listed side by side ([`list_split`]), checked to add up.

use super::*;

/// One level of the keys under a prefix, as a delimiter listing gives it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Level {
    /// The objects whose key holds no `/` after the prefix, sorted by key.
    pub objects: Vec<ObjectMeta>,
    /// The distinct `<prefix><name>/` every other key starts with, sorted.
    pub prefixes: Vec<String>,
}

impl Level {
    /// Sorts a listing page by key (see [`Store::list_paged`]).
    fn sort_page(page: &mut [ObjectMeta]) {
        page.sort_by(|a, b| a.key.cmp(&b.key));
    }

    /// Sorted as a level is given: objects by key, prefixes each once (a
    /// server's pages may repeat a prefix at their seams).
    pub fn sorted(mut self) -> Level {
        self.objects.sort_by(|a, b| a.key.cmp(&b.key));
        self.prefixes.sort();
        self.prefixes.dedup();
        self
    }

    /// The level of `prefix` in `all`, a sorted listing of it.
    pub fn of(prefix: &str, all: Vec<ObjectMeta>) -> Level {
        let mut level = Level::default();
        for meta in all {
            let below = meta
                .key
                .get(prefix.len()..)
                .and_then(|rest| rest.find('/'))
                .map(|i| prefix.len() + i + 1);
            match below {
                // Keys sharing a prefix are adjacent in a sorted listing.
                Some(end) => {
                    let p = &meta.key[..end];
                    if level.prefixes.last().map(String::as_str) != Some(p) {
                        level.prefixes.push(p.to_string());
                    }
                }
                None => level.objects.push(meta),
            }
        }
        level
    }
}

/// Every object under `prefix`, as [`Store::list`] gives it (sorted by
/// key), found `levels` levels down by delimiter listings when the store
/// has them (and up to [`EXTRA_LEVELS`] further while fewer than
/// `concurrency` prefixes were found): each level's prefixes are listed
/// `concurrency` at a time, then
/// every prefix found is paged through on its own, side by side. A big
/// namespace's tiers and their first level are then paged in parallel
/// instead of one page after another; every key is still listed exactly
/// once (each falls under one prefix, or is an object of a level).
///
/// When the parts do not add up (a prefix a listing named holds nothing, a
/// key outside the prefix it was listed under, a key listed twice), a
/// listing changed underfoot or an answer was garbled on the way, and a
/// garbled prefix would hide a whole subtree: the plain listing is taken
/// instead.
pub async fn list_split(
    store: &dyn Store,
    prefix: &str,
    levels: u32,
    concurrency: usize,
) -> Result<Vec<ObjectMeta>, StoreError> {
    let parts = list_split_parts(store, prefix, levels, concurrency, |part| part).await?;
    let mut all = Vec::with_capacity(parts.iter().flatten().map(Vec::len).sum());
    all.extend(parts.into_iter().flatten().flatten());
    all.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(all)
}

/// [`list_split`] as the disjoint parts it was listed in (no key in two
/// parts, the parts in the order of their first keys), each as the pages
/// it was listed in (sorted, in key order), every page given to `take` as
/// soon as it is listed and checked: a caller that keeps less of an
/// object than its [`ObjectMeta`] never holds the listing whole. (When the
/// parts do not add up, what `take` made of them is dropped and the plain
/// listing is the one page of the one part.)
pub async fn list_split_parts<T: Send>(
    store: &dyn Store,
    prefix: &str,
    levels: u32,
    concurrency: usize,
    take: impl Fn(Vec<ObjectMeta>) -> T + Sync,
) -> Result<Vec<Vec<T>>, StoreError> {
    if levels == 0 || !store.capabilities().delimited_listing {
        return Ok(vec![vec![take(store.list(prefix).await?)]]);
    }
    // A listing that fits one page costs one request: splitting it (a
    // level listing per prefix) pays off only for a large one.
    if let Some(page) = store.list_if_one_page(prefix).await? {
        return Ok(vec![vec![take(page)]]);
    }
    match split_listing(store, prefix, levels, concurrency.max(1), &take).await? {
        Some(parts) => Ok(parts),
        None => Ok(vec![vec![take(store.list(prefix).await?)]]),
    }
}

/// How many levels below the ones asked for a split listing may go on
/// down while its prefixes are fewer than it lists at once.
pub(super) const EXTRA_LEVELS: u32 = 4;

/// Most prefixes a level below the ones asked for may name and still be
/// listed one by one (see [`split_listing`]).
pub(super) const MAX_EXTRA_PARTS: usize = 256;

/// [`list_split`]'s parallel listing, in parts; `None` when its parts do
/// not add up.
pub(super) async fn split_listing<T: Send>(
    store: &dyn Store,
    prefix: &str,
    levels: u32,
    concurrency: usize,
    take: &(impl Fn(Vec<ObjectMeta>) -> T + Sync),
) -> Result<Option<Vec<Vec<T>>>, StoreError> {
    use futures_util::{StreamExt, TryStreamExt, stream};
    // The levels' own objects, then one part per prefix paged through.
    let mut objects = Vec::new();
    let mut frontier = vec![prefix.to_string()];
    // Prefixes listed whole, not split further.
    let mut whole = Vec::new();
    let mut depth = 0;
    // `levels` down at least; further while too few prefixes were found to
    // list side by side (a namespace whose files all sit under one
    // directory is otherwise paged through one page after another).
    while depth < levels || (frontier.len() < concurrency && depth < levels + EXTRA_LEVELS) {
        if frontier.is_empty() {
            break;
        }
        let found: Vec<(&String, Level)> = stream::iter(&frontier)
            .map(|p| async move { Ok::<_, StoreError>((p, store.list_level(p).await?)) })
            .buffer_unordered(concurrency)
            .try_collect()
            .await?;
        let mut next = Vec::new();
        let mut level_objects = Vec::new();
        let mut level_whole = Vec::new();
        for (p, level) in found {
            // An object named as the prefix itself: a folder marker (which
            // a plain listing shows), or the empty directory SeaweedFS
            // answers for a prefix whose objects are all deleted (which it
            // does not). Listed whole, the subtree is what a plain listing
            // says, whichever it is.
            if level.objects.iter().any(|o| &o.key == p) {
                level_whole.push(p.clone());
                continue;
            }
            if !level_adds_up(p, &level, depth == 0) {
                return Ok(None);
            }
            level_objects.extend(level.objects);
            next.extend(level.prefixes);
        }
        // A level below those asked for that names very many prefixes
        // (a directory of thousands of versions, one file each) would cost
        // a request per prefix: its parents are paged through whole
        // instead, as without it.
        if depth >= levels && next.len() > MAX_EXTRA_PARTS {
            whole.append(&mut frontier);
            break;
        }
        objects.extend(level_objects);
        whole.extend(level_whole);
        frontier = next;
        depth += 1;
    }
    let listed = frontier.len();
    frontier.extend(whole);
    let mut objects_part = Part::new("");
    objects_part.page(objects, take);
    let found: Vec<Part<T>> = stream::iter(frontier.iter().enumerate())
        .map(|(i, p)| async move {
            let mut part = Part::new(p);
            store
                .list_paged(p, &mut |page| part.page(page, take))
                .await?;
            // A prefix a level named holds something; one listed whole may
            // be SeaweedFS's empty directory.
            if i < listed && part.first.is_none() {
                part.does_not_add_up();
            }
            Ok::<_, StoreError>(part)
        })
        .buffer_unordered(concurrency)
        .try_collect()
        .await?;
    let mut parts = Vec::with_capacity(found.len() + 1);
    parts.push(objects_part);
    parts.extend(found);
    if parts.iter().any(|p| !p.adds_up) {
        return Ok(None);
    }
    parts.sort_by(|a, b| a.first.cmp(&b.first));
    Ok(Some(parts.into_iter().map(|p| p.pages).collect()))
}

/// One part of a split listing as its pages come: what `take` made of
/// each, and whether they add up so far.
pub(super) struct Part<'a, T> {
    /// The prefix it is listed under (every key starts with it).
    under: &'a str,
    pages: Vec<T>,
    first: Option<String>,
    last: Option<String>,
    adds_up: bool,
}

impl<'a, T> Part<'a, T> {
    fn new(under: &'a str) -> Part<'a, T> {
        Part {
            under,
            pages: Vec::new(),
            first: None,
            last: None,
            adds_up: true,
        }
    }

    /// Takes the next page. Parts are disjoint (each under its own prefix,
    /// the levels' objects under none of them), so a key listed twice
    /// would be within one part: each page is sorted, and must start after
    /// the last.
    fn page(&mut self, mut page: Vec<ObjectMeta>, take: &impl Fn(Vec<ObjectMeta>) -> T) {
        if !self.adds_up {
            return;
        }
        Level::sort_page(&mut page);
        let (Some(first), Some(last)) = (page.first(), page.last()) else {
            return;
        };
        let in_order = self.last.as_ref().is_none_or(|l| *l < first.key)
            && page.windows(2).all(|w| w[0].key != w[1].key)
            && page.iter().all(|o| o.key.starts_with(self.under));
        if !in_order {
            return self.does_not_add_up();
        }
        if self.first.is_none() {
            self.first = Some(first.key.clone());
        }
        self.last = Some(last.key.clone());
        self.pages.push(take(page));
    }

    /// The part is found not to add up: what was made of it goes.
    fn does_not_add_up(&mut self) {
        self.adds_up = false;
        self.pages.clear();
    }
}

/// Whether a level listing of `prefix` is one a consistent bucket gives:
/// every object and prefix under it (each prefix one name and a `/`
/// longer), and something there unless it is the top of the listing.
pub(super) fn level_adds_up(prefix: &str, level: &Level, top: bool) -> bool {
    let under = |k: &str| k.len() > prefix.len() && k.starts_with(prefix);
    (top || !level.objects.is_empty() || !level.prefixes.is_empty())
        && level.objects.iter().all(|o| under(&o.key))
        && level
            .prefixes
            .iter()
            .all(|p| under(p) && p.ends_with('/') && !p[prefix.len()..p.len() - 1].contains('/'))
}

/// One page of a listing, as the server answered it.
pub(crate) struct ListPage {
    pub objects: Vec<ObjectMeta>,
    /// Its common prefixes (a delimited listing only).
    pub prefixes: Vec<String>,
    /// Where the next page starts; `None` on the last.
    pub next: Option<String>,
}

/// A store whose server lists a page at a time (S3, GCS): its
/// [`Store::list`], [`Store::list_paged`] and [`Store::list_level`] are
/// made here, once, from its [`Pager::list_page`].
#[async_trait]
pub(crate) trait Pager: Sync {
    /// The page of the listing of `prefix` (one level of it when
    /// `delimited`) that starts at `token` (`None`: the first).
    async fn list_page(
        &self,
        prefix: &str,
        delimited: bool,
        token: Option<String>,
    ) -> Result<ListPage, StoreError>;

    /// Every page of the listing: each page's objects to `take`, its
    /// prefixes returned (unsorted).
    async fn list_pages(
        &self,
        prefix: &str,
        delimited: bool,
        take: &mut (dyn FnMut(Vec<ObjectMeta>) + Send),
    ) -> Result<Vec<String>, StoreError> {
        let mut prefixes = Vec::new();
        let mut token = None;
        loop {
            let page = self.list_page(prefix, delimited, token).await?;
            take(page.objects);
            prefixes.extend(page.prefixes);
            match page.next {
                Some(next) => token = Some(next),
                None => return Ok(prefixes),
            }
        }
    }

    /// [`Store::list`]: every page, sorted by key.
    async fn list_whole(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError> {
        let mut objects = Vec::new();
        self.list_pages(prefix, false, &mut |page| objects.extend(page))
            .await?;
        Level::sort_page(&mut objects);
        Ok(objects)
    }

    /// [`Store::list_paged`]: each page sorted by key.
    async fn list_sorted_pages(
        &self,
        prefix: &str,
        take: &mut (dyn FnMut(Vec<ObjectMeta>) + Send),
    ) -> Result<(), StoreError> {
        self.list_pages(prefix, false, &mut |mut page| {
            Level::sort_page(&mut page);
            take(page)
        })
        .await?;
        Ok(())
    }

    /// [`Store::list_if_one_page`].
    async fn list_first_page(&self, prefix: &str) -> Result<Option<Vec<ObjectMeta>>, StoreError> {
        let page = self.list_page(prefix, false, None).await?;
        if page.next.is_some() {
            return Ok(None);
        }
        let mut objects = page.objects;
        Level::sort_page(&mut objects);
        Ok(Some(objects))
    }

    /// [`Store::list_level`].
    async fn list_one_level(&self, prefix: &str) -> Result<Level, StoreError> {
        let mut objects = Vec::new();
        let prefixes = self
            .list_pages(prefix, true, &mut |page| objects.extend(page))
            .await?;
        Ok(Level { objects, prefixes }.sorted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_that_does_not_add_up_is_caught() {
        let meta = |k: &str| ObjectMeta {
            key: k.to_string(),
            size: 0,
            version: "1".into(),
            sha256: None,
            modified: None,
            md5: None,
            crc32c: None,
            content_encoded: false,
        };
        let level = |objects: &[&str], prefixes: &[&str]| Level {
            objects: objects.iter().map(|k| meta(k)).collect(),
            prefixes: prefixes.iter().map(|p| p.to_string()).collect(),
        };
        assert!(level_adds_up("p/", &level(&["p/a"], &["p/d/"]), false));
        // An empty namespace is fine at the top, not below it.
        assert!(level_adds_up("p/", &level(&[], &[]), true));
        assert!(!level_adds_up("p/d/", &level(&[], &[]), false));
        // Garbled on the way: outside the prefix, or not one level down.
        assert!(!level_adds_up("p/", &level(&["q/a"], &[]), true));
        assert!(!level_adds_up("p/", &level(&[], &["P/d/"]), true));
        assert!(!level_adds_up("p/", &level(&[], &["p/d/e/"]), true));
        assert!(!level_adds_up("p/", &level(&[], &["p/d"]), true));
    }

    #[test]
    fn a_level_puts_every_key_under_one_prefix_or_among_its_objects() {
        // Keys other tools write: a folder marker, an empty segment, a
        // name sorting between `dir` and `dir/`.
        let all: Vec<ObjectMeta> = ["p/a", "p/dir-x", "p/dir/", "p/dir/f", "p/odd//x", "p/odd/y"]
            .iter()
            .map(|k| ObjectMeta {
                key: k.to_string(),
                size: 0,
                version: "1".into(),
                sha256: None,
                modified: None,
                md5: None,
                crc32c: None,
                content_encoded: false,
            })
            .collect();
        let level = Level::of("p/", all);
        let objects: Vec<_> = level.objects.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(objects, ["p/a", "p/dir-x"]);
        assert_eq!(level.prefixes, ["p/dir/", "p/odd/"]);
    }
}
