//! Pairwise summation, the one way every sum in the runtime adds (`sum`, `mean`, their `_axes`
//! forms, and `sum_to_shape` in the rules of broadcasting ops), and the choice between walking
//! an axis lane by lane or plane by plane, which the reductions, scans and softmax share.
//!
//! Blocks of `SUM_BLOCK` values are added in order, and block sums are combined as a balanced
//! binary tree. The rounding error of a sum of `n` values is then at most about
//! `(SUM_BLOCK + log2(n / SUM_BLOCK)) * eps * sum(|x|)` in the worst case, and grows like
//! `sqrt(log n)` in practice, against `n * eps` for a running sum.

use ndarray::{ArrayD, ArrayView, ArrayViewD, Axis, Dimension, Zip};

use crate::element::Element;

/// Whether to work on `v` one lane along `axis` at a time rather than one plane across it:
/// when the lanes are contiguous, or the planes too small to amortise a pass over each.
pub(crate) fn along_lanes<T>(v: &ArrayViewD<'_, T>, axis: Axis) -> bool {
    let n = v.len_of(axis);
    v.stride_of(axis) == 1 || n == 0 || v.len() / n < 16
}

/// The number of values a pairwise sum adds in order before combining partial sums in a tree.
pub(crate) const SUM_BLOCK: usize = 128;

/// Where to split `n > SUM_BLOCK` values (or planes, or rows) for a pairwise sum: a multiple
/// of `SUM_BLOCK` near the middle, so every leaf but the last is a whole block.
#[inline]
pub(crate) fn pairwise_split(n: usize) -> usize {
    (n / 2).div_ceil(SUM_BLOCK) * SUM_BLOCK
}

/// The sum of at most `SUM_BLOCK` values, in eight interleaved accumulators (which vectorise)
/// combined as a tree.
#[inline]
pub(crate) fn block_sum<T: Element>(xs: &[T]) -> T {
    let mut acc = [T::zero(); 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    let mut s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for &v in rest {
        s += v;
    }
    s
}

/// The pairwise sum of a slice.
pub(crate) fn pairwise_sum<T: Element>(xs: &[T]) -> T {
    if xs.len() <= SUM_BLOCK {
        return block_sum(xs);
    }
    let (a, b) = xs.split_at(pairwise_split(xs.len()));
    pairwise_sum(a) + pairwise_sum(b)
}

/// The pairwise sum of `n` values from the sums of their blocks of `SUM_BLOCK` (the last one
/// partial), each summed by [`block_sum`]: the same tree as [`pairwise_sum`], so the same
/// result bit for bit, for loops that produce the values a block at a time and keep none.
pub(crate) fn combine_block_sums<T: Element>(sums: &[T], n: usize) -> T {
    if n <= SUM_BLOCK {
        return sums.first().copied().unwrap_or_else(T::zero);
    }
    let split = pairwise_split(n);
    let (a, b) = sums.split_at(split / SUM_BLOCK);
    combine_block_sums(a, split) + combine_block_sums(b, n - split)
}

/// The pairwise sum of the values of an iterator (for views that are not contiguous): blocks
/// of `SUM_BLOCK` added in order, their sums merged like a binary counter, so that only sums
/// of equally many blocks are added together.
fn pairwise_sum_iter<T: Element>(mut it: impl Iterator<Item = T>) -> T {
    let mut stack: Vec<T> = Vec::new();
    let mut blocks: usize = 0;
    loop {
        let mut s = T::zero();
        let mut n = 0;
        for v in it.by_ref().take(SUM_BLOCK) {
            s += v;
            n += 1;
        }
        if n == 0 {
            break;
        }
        let mut carry = blocks;
        while carry & 1 == 1 {
            s = stack.pop().expect("one partial sum per set bit") + s;
            carry >>= 1;
        }
        stack.push(s);
        blocks += 1;
        if n < SUM_BLOCK {
            break;
        }
    }
    // The smallest partial sums (the latest blocks) first.
    stack.into_iter().rev().fold(T::zero(), |acc, v| v + acc)
}

/// The pairwise sum of all of `v`'s elements; a contiguous view is summed as a slice.
pub(crate) fn sum_all<T: Element, D: Dimension>(v: ArrayView<'_, T, D>) -> T {
    match v.as_slice_memory_order() {
        Some(s) => pairwise_sum(s),
        None => pairwise_sum_iter(v.iter().copied()),
    }
}

/// The pairwise sum of `v` along `axis`, one plane at a time: planes added in order in blocks
/// of `SUM_BLOCK`, the blocks' sums combined as a tree.
fn sum_planes<T: Element>(v: ArrayViewD<'_, T>, axis: Axis) -> ArrayD<T> {
    let n = v.len_of(axis);
    if n <= SUM_BLOCK {
        return v.fold_axis(axis, T::zero(), |&a, &b| a + b);
    }
    let (a, b) = v.split_at(axis, pairwise_split(n));
    let mut s = sum_planes(a, axis);
    Zip::from(&mut s)
        .and(&sum_planes(b, axis))
        .for_each(|s, &t| *s += t);
    s
}

/// The pairwise sum of `v` along `axis`, lane by lane or plane by plane, whichever walks
/// memory better.
pub(crate) fn sum_along<T: Element>(v: ArrayViewD<'_, T>, axis: Axis) -> ArrayD<T> {
    if along_lanes(&v, axis) {
        v.map_axis(axis, sum_all)
    } else {
        sum_planes(v, axis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sums_combine_to_the_pairwise_sum_bit_for_bit() {
        for n in [0, 1, 7, 128, 129, 255, 256, 1000, 4097, 100_003] {
            // Values of mixed magnitudes, so that the order of the additions shows in the bits.
            let xs: Vec<f32> = (0..n)
                .map(|i| ((i * 7919 % 1000) as f32 - 500.0) * 1.37e-3 + (i % 13) as f32 * 1e3)
                .collect();
            let sums: Vec<f32> = xs.chunks(SUM_BLOCK).map(block_sum).collect();
            assert_eq!(
                combine_block_sums(&sums, n).to_bits(),
                pairwise_sum(&xs).to_bits(),
                "n = {n}"
            );
        }
    }
}
