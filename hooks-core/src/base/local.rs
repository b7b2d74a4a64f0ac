//! `with_reused`: a per-thread value reused from call to call (a buffer, a record), or a fresh
//! one when it cannot be had.

use std::cell::RefCell;
use std::thread::LocalKey;

/// Runs `f` with this thread's value of `key`, or with a fresh `T::default()` when that value
/// is in use further up the stack (a re-entered call) or already gone (a call dropped by
/// another thread-local's destructor at thread exit, after this one's storage was freed:
/// `LocalKey::with` would panic there, and a panic in a destructor aborts the process). `f`
/// leaves the value as the next call should find it (cleared, or given back when it grew).
#[inline]
pub(crate) fn with_reused<T: Default + 'static, R>(
    key: &'static LocalKey<RefCell<T>>,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    let mut f = Some(f);
    let reused = key.try_with(|cell| {
        let mut value = cell.try_borrow_mut().ok()?;
        let f = f.take()?;
        Some(f(&mut value))
    });
    match (reused, f) {
        (Ok(Some(out)), _) => out,
        (_, Some(f)) => f(&mut T::default()),
        // `f` is taken only where it then runs and answers.
        (_, None) => unreachable!("the per-thread value's function ran without an answer"),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::with_reused;

    thread_local! {
        static SEEN: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    }

    #[test]
    fn the_value_is_reused_and_a_reentered_call_gets_a_fresh_one() {
        with_reused(&SEEN, |v| v.push(1));
        let (outer, inner) = with_reused(&SEEN, |v| {
            v.push(2);
            let inner = with_reused(&SEEN, |fresh| {
                fresh.push(9);
                fresh.clone()
            });
            (v.clone(), inner)
        });
        assert_eq!((outer, inner), (vec![1, 2], vec![9]));
        assert_eq!(with_reused(&SEEN, |v| v.clone()), vec![1, 2]);
    }
}
