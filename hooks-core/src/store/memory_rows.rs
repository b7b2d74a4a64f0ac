//! [`Rows`]: the answer memory's rows (`memory.rs`), each in a slot of one vector and found
//! through an index of its key's hash. A row's hash is kept with it, so forgetting one (the
//! eviction of the oldest answer, once per call in a full memory) hashes nothing and reads no
//! key; a freed slot keeps its key's buffer, so the next row's key is written into it without
//! allocating.

use std::hash::BuildHasher;

/// The rows of one store: slots holding a key text and a value, an index from the keys'
/// hashes to the slots, and the free slots. A row is named by its slot's number ([`RowId`]),
/// which stays the row's until it is [`remove`](Rows::remove)d.
pub(crate) struct Rows<T> {
    /// The slots' numbers, hashed by their keys (foldhash seeded at random per store: the keys
    /// hold ids the model chose, and an unseeded hash would let crafted ids collide).
    index: hashbrown::HashTable<RowId>,
    keys: foldhash::fast::RandomState,
    slots: Vec<Slot<T>>,
    /// The slots with no row, the last freed first.
    free: Vec<RowId>,
}

/// A row's slot number.
pub(crate) type RowId = usize;

/// The longest key buffer a freed slot keeps for the next row (bytes): a longer one is freed.
const KEPT_KEY: usize = 1 << 10;

struct Slot<T> {
    key: String,
    hash: u64,
    /// `None`: a free slot.
    value: Option<T>,
}

impl<T> Default for Rows<T> {
    fn default() -> Self {
        Rows {
            index: hashbrown::HashTable::new(),
            keys: foldhash::fast::RandomState::default(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Rows<T> {
    /// The hash `key` is found by.
    pub(crate) fn hash(&self, key: &str) -> u64 {
        self.keys.hash_one(key)
    }

    /// The row of `key`, whose [`hash`](Self::hash) is `hash`.
    pub(crate) fn find_hashed(&self, hash: u64, key: &str) -> Option<RowId> {
        let slots = &self.slots;
        self.index.find(hash, |&i| slots[i].key == key).copied()
    }

    /// The row of `key`.
    pub(crate) fn find(&self, key: &str) -> Option<RowId> {
        self.find_hashed(self.hash(key), key)
    }

    /// The value of row `i`.
    ///
    /// # Panics
    /// When `i` names no row (a slot freed since): a defect of the caller, never of input.
    pub(crate) fn value(&self, i: RowId) -> &T {
        self.slots[i].value.as_ref().expect("a row's slot holds it")
    }

    /// The value of row `i`, to change (panics as [`value`](Self::value)).
    pub(crate) fn value_mut(&mut self, i: RowId) -> &mut T {
        self.slots[i].value.as_mut().expect("a row's slot holds it")
    }

    /// Adds a row keyed `key` (hashed `hash`; no row has that key) holding `value`, in a free
    /// slot when there is one.
    pub(crate) fn insert(&mut self, hash: u64, key: &str, value: T) -> RowId {
        let i = match self.free.pop() {
            Some(i) => {
                let slot = &mut self.slots[i];
                slot.key.clear();
                slot.key.push_str(key);
                slot.hash = hash;
                slot.value = Some(value);
                i
            }
            None => {
                self.slots.push(Slot {
                    key: key.to_owned(),
                    hash,
                    value: Some(value),
                });
                self.slots.len() - 1
            }
        };
        let slots = &self.slots;
        self.index.insert_unique(hash, i, |&j| slots[j].hash);
        i
    }

    /// Removes row `i` and gives its value back; its slot is free (panics as
    /// [`value`](Self::value)).
    pub(crate) fn remove(&mut self, i: RowId) -> T {
        let slot = &mut self.slots[i];
        if let Ok(found) = self.index.find_entry(slot.hash, |&j| j == i) {
            found.remove();
        }
        let value = slot.value.take().expect("a row's slot holds it");
        if slot.key.capacity() > KEPT_KEY {
            slot.key = String::new();
        }
        self.free.push(i);
        value
    }

    /// How many rows there are.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Rows;

    impl<T> Rows<T> {
        fn get(&self, key: &str) -> Option<&T> {
            self.find(key).map(|i| self.value(i))
        }
    }

    #[test]
    fn rows_are_found_by_key_until_removed_and_freed_slots_are_reused() {
        let mut rows = Rows::default();
        let keys: Vec<String> = (0..100).map(|i| format!("1:s{i}")).collect();
        let ids: Vec<usize> = keys
            .iter()
            .enumerate()
            .map(|(n, k)| rows.insert(rows.hash(k), k, n))
            .collect();
        assert_eq!(rows.len(), 100);
        for (n, k) in keys.iter().enumerate() {
            assert_eq!(rows.get(k), Some(&n));
        }
        assert_eq!(rows.get("1:s100"), None);
        // Every other row removed: its key is no longer found, the others still are.
        for &i in ids.iter().step_by(2) {
            let n = rows.remove(i);
            assert_eq!(keys[n], keys[i]);
        }
        assert_eq!(rows.len(), 50);
        for (n, k) in keys.iter().enumerate() {
            assert_eq!(rows.get(k), (n % 2 == 1).then_some(&n), "{k}");
        }
        // New rows take the freed slots (the last freed first) and are found by their keys,
        // not by the keys those slots held.
        let again = rows.insert(rows.hash("1:t"), "1:t", 1000);
        assert_eq!(again, ids[98]);
        assert_eq!(rows.get("1:t"), Some(&1000));
        assert_eq!(rows.get(&keys[98]), None);
        *rows.value_mut(again) += 1;
        assert_eq!(rows.value(again), &1001);
        assert_eq!(rows.len(), 51);
    }

    #[test]
    fn a_long_key_is_not_kept_in_a_freed_slot() {
        let mut rows = Rows::default();
        let long = "x".repeat(4096);
        let i = rows.insert(rows.hash(&long), &long, ());
        rows.remove(i);
        assert_eq!(rows.slots[i].key.capacity(), 0);
        let short = "1:st";
        let j = rows.insert(rows.hash(short), short, ());
        rows.remove(j);
        assert!(rows.slots[j].key.capacity() >= short.len());
        assert_eq!(rows.find(short), None);
    }
}
