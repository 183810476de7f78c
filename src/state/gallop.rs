//! Searching a large sorted array from where the last search ended. A
//! walk looks up each entry's stamp in the hash cache and each directory's
//! in the remembered listings; files written in name order have inodes in
//! nearly that order too, so the next key is usually a few places from
//! the last one found. A binary search of a million entries misses the
//! processor's caches a dozen times a lookup; galloping out from the last
//! place finds a near key in a few probes of memory already cached, and a
//! far one in about twice a binary search's probes.

use std::cell::Cell;
use std::cmp::Ordering;

/// Where one kind of search last ended, per thread (a walk searches from
/// several).
pub(crate) struct Hint(&'static std::thread::LocalKey<Cell<usize>>);

impl Hint {
    pub(crate) const fn new(key: &'static std::thread::LocalKey<Cell<usize>>) -> Hint {
        Hint(key)
    }

    /// [`slice::binary_search_by`] over `v` (sorted, no two equal), starting
    /// where this thread's last search with this hint ended.
    pub(crate) fn search<T>(&self, v: &[T], cmp: impl Fn(&T) -> Ordering) -> Result<usize, usize> {
        let found = search_from(v, self.0.get(), cmp);
        let at = match found {
            Ok(i) | Err(i) => i,
        };
        self.0.set(at);
        found
    }
}

/// [`slice::binary_search_by`] over `v` (sorted, no two equal), galloping
/// out from `hint`.
pub(crate) fn search_from<T>(
    v: &[T],
    hint: usize,
    cmp: impl Fn(&T) -> Ordering,
) -> Result<usize, usize> {
    let len = v.len();
    if len == 0 {
        return Err(0);
    }
    let h = hint.min(len - 1);
    let (lo, hi) = match cmp(&v[h]) {
        Ordering::Equal => return Ok(h),
        // After `h`: everything before `lo` is less than the key.
        Ordering::Less => {
            let mut lo = h + 1;
            let mut step = 1;
            let hi = loop {
                let probe = h + step;
                if probe >= len {
                    break len;
                }
                match cmp(&v[probe]) {
                    Ordering::Less => lo = probe + 1,
                    Ordering::Equal => return Ok(probe),
                    Ordering::Greater => break probe,
                }
                step *= 2;
            };
            (lo, hi)
        }
        // Before `h`: everything from `hi` on is greater than the key.
        Ordering::Greater => {
            let mut hi = h;
            let mut step = 1;
            let lo = loop {
                if step > h {
                    break 0;
                }
                let probe = h - step;
                match cmp(&v[probe]) {
                    Ordering::Greater => hi = probe,
                    Ordering::Equal => return Ok(probe),
                    Ordering::Less => break probe + 1,
                }
                step *= 2;
            };
            (lo, hi)
        }
    };
    match v[lo..hi].binary_search_by(cmp) {
        Ok(i) => Ok(lo + i),
        Err(i) => Err(lo + i),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_from_any_place_finds_what_a_binary_search_finds() {
        // Odd numbers: every even key falls between two (or at an end).
        for len in [0usize, 1, 2, 3, 7, 64, 1000] {
            let v: Vec<u32> = (0..len as u32).map(|i| 2 * i + 1).collect();
            for hint in [0, 1, len / 2, len.saturating_sub(1), len + 5] {
                for key in 0..=(2 * len as u32 + 2) {
                    assert_eq!(
                        search_from(&v, hint, |x| x.cmp(&key)),
                        v.binary_search(&key),
                        "len {len}, hint {hint}, key {key}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_hint_starts_each_search_where_the_last_one_ended() {
        thread_local!(static AT: Cell<usize> = const { Cell::new(0) });
        let hint = Hint::new(&AT);
        let v: Vec<u32> = (0..100).map(|i| 3 * i).collect();
        assert_eq!(hint.search(&v, |x| x.cmp(&150)), Ok(50));
        assert_eq!(AT.get(), 50);
        assert_eq!(hint.search(&v, |x| x.cmp(&151)), Err(51));
        assert_eq!(AT.get(), 51);
        assert_eq!(hint.search(&v, |x| x.cmp(&0)), Ok(0));
        assert_eq!(AT.get(), 0);
    }
}
