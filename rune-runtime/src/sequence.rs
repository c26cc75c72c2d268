//! The positions an iterator chain's adaptors pick, for the loops `#[differentiable]` writes
//! over chains of differentiated elements.
//!
//! A chain such as `layers.iter().enumerate().filter(|(i, _)| i % 2 == 0)` is walked by
//! position: each adaptor maps a position in the sequence it makes to one in the sequence it
//! adapts. Where that map depends on the elements (`filter`, `take_while`, `min_by`, ..), the
//! macro runs the user's chain up to that adaptor on the values (their primal parts), and these
//! functions turn what the adaptor decides into positions. The decision is a constant of the
//! derivative, as the branch an `if` takes is.

use core::cmp::Ordering;

/// The positions of the items `keep` accepts (`filter`).
pub fn filter_positions<I: Iterator>(
    items: I,
    mut keep: impl FnMut(&I::Item) -> bool,
) -> Vec<usize> {
    items
        .enumerate()
        .filter(|(_, item)| keep(item))
        .map(|(p, _)| p)
        .collect()
}

/// How many items at the front `keep` accepts (`take_while`, `skip_while`).
pub fn count_while<I: Iterator>(items: I, mut keep: impl FnMut(&I::Item) -> bool) -> usize {
    items.take_while(|item| keep(item)).count()
}

/// The position of the first item `hit` accepts (`find`).
pub fn find_position<I: Iterator>(
    items: I,
    mut hit: impl FnMut(&I::Item) -> bool,
) -> Option<usize> {
    items
        .enumerate()
        .find(|(_, item)| hit(item))
        .map(|(p, _)| p)
}

/// The position of the least item by `compare` (`min_by`: the first of equals).
pub fn min_position_by<I: Iterator>(
    items: I,
    mut compare: impl FnMut(&I::Item, &I::Item) -> Ordering,
) -> Option<usize> {
    items
        .enumerate()
        .min_by(|(_, a), (_, b)| compare(a, b))
        .map(|(p, _)| p)
}

/// The position of the greatest item by `compare` (`max_by`: the last of equals).
pub fn max_position_by<I: Iterator>(
    items: I,
    mut compare: impl FnMut(&I::Item, &I::Item) -> Ordering,
) -> Option<usize> {
    items
        .enumerate()
        .max_by(|(_, a), (_, b)| compare(a, b))
        .map(|(p, _)| p)
}

/// The position of the item with the least key (`min_by_key`: the first of equals).
pub fn min_position_by_key<I: Iterator, K: Ord>(
    items: I,
    mut key: impl FnMut(&I::Item) -> K,
) -> Option<usize> {
    items
        .enumerate()
        .min_by_key(|(_, item)| key(item))
        .map(|(p, _)| p)
}

/// The position of the item with the greatest key (`max_by_key`: the last of equals).
pub fn max_position_by_key<I: Iterator, K: Ord>(
    items: I,
    mut key: impl FnMut(&I::Item) -> K,
) -> Option<usize> {
    items
        .enumerate()
        .max_by_key(|(_, item)| key(item))
        .map(|(p, _)| p)
}

/// The size of `windows(size)` or `chunks(size)`, which panic at zero as the slice methods do.
pub fn window_size(size: usize, adaptor: &str) -> usize {
    assert!(size != 0, "`{adaptor}` size must be non-zero");
    size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_follow_the_standard_adaptors() {
        let xs = [3.0, -1.0, 4.0, -1.0, 5.0, 9.0];
        assert_eq!(filter_positions(xs.iter(), |v| **v > 0.0), vec![0, 2, 4, 5]);
        assert_eq!(count_while(xs.iter(), |v| **v != 4.0), 2);
        assert_eq!(find_position(xs.iter(), |v| **v > 4.0), Some(4));
        assert_eq!(find_position(xs.iter(), |v| **v > 9.0), None);
        let by = |a: &&f64, b: &&f64| a.partial_cmp(b).unwrap();
        // Equal least items: the first; equal greatest: the last (as `Iterator::min_by`).
        assert_eq!(min_position_by(xs.iter(), by), Some(1));
        assert_eq!(max_position_by(xs.iter(), by), Some(5));
        let ks = [2, 7, 1, 7, 1];
        assert_eq!(min_position_by_key(ks.iter(), |k| **k), Some(2));
        assert_eq!(max_position_by_key(ks.iter(), |k| **k), Some(3));
        assert_eq!(
            min_position_by(core::iter::empty::<f64>(), f64::total_cmp),
            None
        );
    }

    #[test]
    #[should_panic(expected = "`windows` size must be non-zero")]
    fn a_window_of_zero_panics() {
        window_size(0, "windows");
    }
}
