//! Kernels over the lanes of row-major tensors whose reduced axes are the last ones, so that
//! each lane is a run of consecutive elements: `softmax`, `log_softmax` and `logsumexp` along
//! them, each one loop compiled for the CPU's vector instructions ([`vectorised`]).
//!
//! Their shift is [`lane_shift`] and their sums [`lane_sum`], which give the same bits as the
//! general paths (`stable_shift`, `sum_view`) on the same lanes.

use crate::element::Element;
use crate::summation::{block_sum, pairwise_sum, SUM_BLOCK};
use crate::tensor::Tensor;
use crate::vmath::vectorised;

/// The row-major elements of each operand when `axis` is the last of all of them (so that the
/// lanes along it are consecutive runs of its length), with that length.
pub(crate) fn last_axis_rows<T: Element, const N: usize>(
    ts: [&Tensor<T>; N],
    axis: usize,
) -> Option<([&[T]; N], usize)> {
    let shape = ts[0].shape();
    let n = *shape.last()?;
    if axis + 1 != shape.len() || n == 0 || ts.iter().any(|t| t.shape() != shape) {
        return None;
    }
    let mut slices = [&[][..]; N];
    for (s, t) in slices.iter_mut().zip(ts) {
        *s = t.as_slice()?;
    }
    Some((slices, n))
}

/// The pairwise sum of one lane ([`pairwise_sum`]'s order), inlined into the vectorised loops
/// for the lanes of one block.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn lane_sum<T: Element>(xs: &[T]) -> T {
    if xs.len() <= SUM_BLOCK {
        block_sum(xs)
    } else {
        pairwise_sum(xs)
    }
}

/// The shift of a lane: its maximum, or zero when that is infinite or NaN (as
/// [`stable_shift`]). A NaN in the lane makes every output of the lane NaN either way, through
/// the sum.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn lane_shift<T: Element>(xs: &[T]) -> T {
    let mut acc = [T::neg_infinity(); 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = if v > *a { v } else { *a };
        }
    }
    let m = acc
        .iter()
        .chain(rest)
        .fold(T::neg_infinity(), |m, &v| if v > m { v } else { m });
    if m.is_finite() {
        m
    } else {
        T::zero()
    }
}

/// `softmax` (or `log_softmax`) of each run of `n` elements of `x`, into `out`.
pub(crate) fn softmax_rows<T: Element>(x: &[T], out: &mut [T], n: usize, log: bool) {
    vectorised(
        #[inline(always)]
        || {
            for (x, o) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
                let m = lane_shift(x);
                for (o, &v) in o.iter_mut().zip(x) {
                    *o = (v - m).vexp();
                }
                let s = lane_sum(o);
                if log {
                    let ln_s = s.vln();
                    for (o, &v) in o.iter_mut().zip(x) {
                        *o = (v - m) - ln_s;
                    }
                } else {
                    for o in o.iter_mut() {
                        *o /= s;
                    }
                }
            }
        },
    );
}

/// The row-major elements of `x` and the length of its lanes when the sorted `axes` are its
/// last axes: each group a reduction over them combines is then a run of that many elements.
pub(crate) fn trailing_rows<'a, T: Clone>(
    x: &'a Tensor<T>,
    axes: &[usize],
) -> Option<(&'a [T], usize)> {
    let ndim = x.ndim();
    let first = ndim.checked_sub(axes.len())?;
    if axes.is_empty() || axes.iter().zip(first..).any(|(&a, b)| a != b) {
        return None;
    }
    let n: usize = x.shape()[first..].iter().product();
    if n == 0 {
        return None;
    }
    Some((x.as_slice()?, n))
}

/// `logsumexp` of each run of `n` elements of `x`, one value each into `out`:
/// `m + ln Σ exp(x - m)` with `m` the run's [`lane_shift`].
pub(crate) fn logsumexp_rows<T: Element>(x: &[T], n: usize, out: &mut [T]) {
    let mut e = vec![T::zero(); n];
    vectorised(
        #[inline(always)]
        || {
            for (x, o) in x.chunks_exact(n).zip(out.iter_mut()) {
                let m = lane_shift(x);
                for (e, &v) in e.iter_mut().zip(x) {
                    *e = (v - m).vexp();
                }
                *o = m + lane_sum(&e).vln();
            }
        },
    );
}
