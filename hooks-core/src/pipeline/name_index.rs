//! [`NameIndex`]: finding a tool by the name the model sent.

/// Tool names → indices in `tools`: an open-addressing table (linear probing, at most half
/// full). It is fixed at `build()`, so a name sent by the model can only be looked up, never
/// steer an insertion; a fast word-at-a-time hash is enough.
pub(crate) struct NameIndex {
    /// `EMPTY` or an index into `tools`; the length is a power of two.
    slots: Box<[u32]>,
}

impl NameIndex {
    const EMPTY: u32 = u32::MAX;

    pub(crate) fn new<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> Self {
        let len = (names.len() * 2).next_power_of_two().max(8);
        let mut slots = vec![Self::EMPTY; len].into_boxed_slice();
        for (i, name) in names.enumerate() {
            let mut at = word_hash(name) as usize & (len - 1);
            while slots[at] != Self::EMPTY {
                at = (at + 1) & (len - 1);
            }
            slots[at] = u32::try_from(i).unwrap_or(Self::EMPTY);
        }
        NameIndex { slots }
    }

    pub(crate) fn find<'a>(&self, name: &str, name_of: impl Fn(usize) -> &'a str) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut at = word_hash(name) as usize & mask;
        loop {
            let slot = *self.slots.get(at)?;
            if slot == Self::EMPTY {
                return None;
            }
            if name_of(slot as usize) == name {
                return Some(slot as usize);
            }
            at = (at + 1) & mask;
        }
    }
}

/// rustc's `FxHasher` step (multiply, rotate), fed 8 bytes at a time: a tool name of up to 64
/// bytes takes at most 8 rounds.
fn word_hash(name: &str) -> u64 {
    let mut h = name.len() as u64;
    let mut add = |word: u64| h = (h.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    let mut chunks = name.as_bytes().chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        add(u64::from_le_bytes(word));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        add(u64::from_le_bytes(word));
    }
    // The multiply leaves its best bits high; the slot comes from the low ones.
    h.rotate_left(26)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_index_finds_every_name_and_nothing_else() {
        let names: Vec<String> = (0..100)
            .map(|i| format!("tool_{i}"))
            .chain(["a".into(), "exact_08".into(), "x".repeat(64)])
            .collect();
        let index = NameIndex::new(names.iter().map(String::as_str));
        let name_of = |i: usize| names[i].as_str();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(index.find(n, name_of), Some(i), "{n}");
        }
        for missing in [
            "",
            "tool_",
            "tool_100",
            "tool_1 ",
            "b",
            "exact_0",
            &"x".repeat(65),
        ] {
            assert_eq!(index.find(missing, name_of), None, "{missing:?}");
        }
        let empty = NameIndex::new(std::iter::empty());
        assert_eq!(empty.find("tool_1", |_| ""), None);
    }
}
