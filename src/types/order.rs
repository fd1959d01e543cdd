//! Sorting small lists with one shared merge sort instead of one copy of std's sort per
//! element type: std's stable and unstable sorts are 2 to 5 KB of wasm for every type they
//! are used with, and the crate sorted a dozen types. The merge sort orders indices through a
//! `&dyn Fn`, so its code exists once; a list is then moved into that order. Stable, and
//! O(n log n) comparisons in every case. The page index's word sort, the one hot sort, keeps
//! std's.

use std::cmp::Ordering;

/// Sorts `list` stably by `compare` (as `slice::sort_by` does).
pub fn sort_by<T>(list: &mut Vec<T>, compare: impl Fn(&T, &T) -> Ordering) {
    if list.len() < 2 {
        return;
    }
    let order = sorted_indices(list.len(), &|a, b| {
        compare(&list[a], &list[b]) == Ordering::Greater
    });
    let mut items: Vec<Option<T>> = list.drain(..).map(Some).collect();
    // `order` is a permutation: every item is taken exactly once.
    list.extend(order.into_iter().filter_map(|i| items[i].take()));
}

/// Sorts `list` stably in ascending order (as `slice::sort` does).
pub fn sort<T: Ord>(list: &mut Vec<T>) {
    sort_by(list, T::cmp);
}

/// The indices `0..n` in the order a stable sort by `after` puts them (`after(a, b)`: the
/// item at `a` goes after the item at `b`). Bottom-up merge sort.
fn sorted_indices(n: usize, after: &dyn Fn(usize, usize) -> bool) -> Vec<usize> {
    let mut from: Vec<usize> = (0..n).collect();
    let mut to = vec![0; n];
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j) = (start, mid);
            for slot in &mut to[start..end] {
                // Take from the right run only when its head goes strictly before the left's:
                // equal items keep their order.
                let right = j < end && (i >= mid || after(from[i], from[j]));
                *slot = if right { from[j] } else { from[i] };
                if right {
                    j += 1;
                } else {
                    i += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut from, &mut to);
        width *= 2;
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_std_and_keeps_equal_items_in_order() {
        let mut list = vec![(3, 'a'), (1, 'b'), (3, 'c'), (2, 'd'), (1, 'e')];
        sort_by(&mut list, |a, b| a.0.cmp(&b.0));
        assert_eq!(list, [(1, 'b'), (1, 'e'), (2, 'd'), (3, 'a'), (3, 'c')]);
        let mut words = vec!["pear", "apple", "fig"];
        sort(&mut words);
        assert_eq!(words, ["apple", "fig", "pear"]);
        let mut empty: Vec<u8> = Vec::new();
        sort(&mut empty);
        assert!(empty.is_empty());
    }
}
