//! Sorting and name sets for cold code (`build()`, error texts, audit files), compiled once.
//!
//! Each `sort_by` of the standard library is compiled anew for every element type and every
//! comparator closure (about 1 900 lines of LLVM IR each), and each `BTreeSet`/`BTreeMap` type
//! brings its own tree code: with fifteen of the one and eight of the other, they were a sixth
//! of the runtime's release build (BENCHMARKS.md, "Build cost"). Here the standard stable sort
//! is compiled once, for indices, behind a `dyn` comparator; the elements are then moved into
//! place. Not for the per-call path: a call sorts nothing.

use std::cmp::Ordering;

/// Sorts `items` by `cmp`, stably (equal items keep their order), as `slice::sort_by` does.
pub(crate) fn sort_by<T>(items: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    if items.len() < 2 {
        return;
    }
    let order = sorted_indices(items.len(), &|a, b| cmp(&items[a], &items[b]));
    permute(items, order);
}

/// `0..len`, stably sorted by `cmp` over indices: the one instantiation of the standard sort.
#[inline(never)]
fn sorted_indices(len: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// Moves `items[order[i]]` to position `i` for every `i`, in place (`order` is a permutation).
fn permute<T>(items: &mut [T], order: Vec<usize>) {
    for i in 0..order.len() {
        // The item meant for `i` started at `order[i]`; if that slot is before `i` it was
        // already swapped away, to where the item that stood at `i` then came from.
        let mut from = order[i];
        while from < i {
            from = order[from];
        }
        items.swap(i, from);
    }
}

/// A set of names kept sorted (byte order), for the builder's lookups by name.
#[derive(Debug, Default, Clone)]
pub(crate) struct Names(Vec<String>);

impl Names {
    /// Adds `name`; `false` when it was already there.
    pub(crate) fn insert(&mut self, name: &str) -> bool {
        match self.position(name) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, name.to_owned());
                true
            }
        }
    }

    /// Whether `name` is in the set.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.position(name).is_ok()
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|n| n.as_str().cmp(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_by_is_stable_and_complete() {
        // Every permutation of a 6-element list with ties sorts to the same stable order.
        let base = [(3, 'a'), (1, 'b'), (3, 'c'), (0, 'd'), (1, 'e'), (2, 'f')];
        let mut orders: Vec<Vec<usize>> = vec![vec![]];
        for _ in 0..base.len() {
            let mut longer = Vec::new();
            for o in &orders {
                for i in (0..base.len()).filter(|i| !o.contains(i)) {
                    let mut next = o.clone();
                    next.push(i);
                    longer.push(next);
                }
            }
            orders = longer;
        }
        assert_eq!(orders.len(), 720);
        for o in orders {
            let mut items: Vec<_> = o.iter().map(|&i| base[i]).collect();
            let mut expected = items.clone();
            expected.sort_by_key(|x| x.0);
            sort_by(&mut items, |a, b| a.0.cmp(&b.0));
            assert_eq!(items, expected, "from order {o:?}");
        }
    }

    #[test]
    fn sort_by_sorts_strings_in_byte_order() {
        let mut v = vec!["b", "B", "a", "ab", "", "a"];
        sort_by(&mut v, |a, b| a.cmp(b));
        assert_eq!(v, ["", "B", "a", "a", "ab", "b"]);
        let mut empty: Vec<String> = Vec::new();
        sort_by(&mut empty, |a, b| a.cmp(b));
        assert!(empty.is_empty());
    }

    #[test]
    fn names_insert_and_contain() {
        let mut n = Names::default();
        assert!(n.insert("lookup"));
        assert!(n.insert("close"));
        assert!(!n.insert("lookup"));
        assert!(n.insert("open"));
        assert!(n.contains("close") && n.contains("lookup") && n.contains("open"));
        assert!(!n.contains("look") && !n.contains(""));
        assert_eq!(n.0, ["close", "lookup", "open"]);
    }
}
