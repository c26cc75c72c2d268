//! Regions that end in a reduction: over all axes (`fused_reduce` and its JVP and VJP) and over
//! the last axes (`fused_reduce_axes` and its JVP and VJP), with the lanes' sums.

use std::ops::Range;

use super::*;
use crate::broadcast::{broadcast_shapes, same_shape, sum_to_shape};
use crate::element::operand::OperandRef;
use crate::element::Element;
use crate::error::OrPanic;
use crate::ops::reduce::{checked_axes, count, expand_back, reduced_shape};
use crate::summation::{block_sum, combine_block_sums, SUM_BLOCK};
use crate::tensor::Tensor;
use crate::vmath::{fast_then_exact, vectorised, Kernels};

/// A full reduction that ends a fused region: the sum or the mean of all its elements, added
/// in the order of the runtime's `sum` (pairwise, `crate::summation`) over the values in
/// row-major order, so that a fused sum is the unfused one bit for bit: op by op, the region's
/// value is row-major whatever its inputs' layouts, as every elementwise op writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// `.sum()`.
    Sum,
    /// `.mean()`.
    Mean,
}

impl Reduction {
    /// The reduction of `len` elements whose sum is `sum`.
    pub(super) fn finish<T: Element>(self, sum: T, len: usize) -> T {
        match self {
            Reduction::Sum => sum,
            Reduction::Mean => sum / T::from_f64(len as f64),
        }
    }

    /// The cotangent of each element for a cotangent of one on the result, as `sum_vjp` and
    /// `mean_vjp` compute it.
    pub(super) fn seed<T: Element>(self, len: usize) -> T {
        match self {
            Reduction::Sum => T::one(),
            Reduction::Mean => T::one() / T::from_f64(len as f64),
        }
    }
}

/// The reduction of a fused region's value: `f` applied to the elements of the inputs,
/// broadcast, and summed (or averaged) in the same pass, with no tensor for the values.
///
/// # Panics
/// When the inputs' shapes do not broadcast, with the error of the op of `ops` that fails.
#[track_caller]
pub fn fused_reduce<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    #[cfg(debug_assertions)]
    let f: &ValueFn<'_, T, N, L> = &f;
    reduce_region(ops, inputs, literals, reduction, f)
}

/// [`fused_reduce`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn reduce_region<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    let literals = literals.map(T::from_f64);
    let (shape, sources) = value_sources(&inputs, ops);
    let shape = &*shape;
    let len = shape.iter().product();
    let (f, literals) = (&f, &literals);
    let ([], [sums]) = drive(len, SUM_BLOCK, |range, [], sums| {
        with_block_size!(len, SMALL, SUM_BLOCK, |B| vectorised(
            #[inline(always)]
            || {
                sum_blocks::<T, N, 0, 1, B>(
                    range,
                    (&sources, &[]),
                    #[inline(always)]
                    |x, _, k| [f(x, literals, k)],
                    |block, n| push_sums(sums, block, n),
                )
            },
        ))
    });
    Tensor::scalar(reduction.finish(combine_block_sums(sums.as_slice(), len), len))
}

/// The reduction of a fused region's value and its tangent, in one pass: `f(x, t)` gives both
/// element by element, and each is summed (or averaged).
///
/// # Panics
/// When the inputs' shapes do not broadcast, or a tangent's does not broadcast to the region's.
#[track_caller]
pub fn fused_reduce_jvp<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    #[cfg(debug_assertions)]
    let f: &TangentFn<'_, T, N, L, K> = &f;
    reduce_jvp_region(ops, inputs, literals, reduction, tangents, f)
}

/// [`fused_reduce_jvp`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn reduce_jvp_region<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    let literals = literals.map(T::from_f64);
    let (shape, _, sources) = prepare(&inputs.map(FusedInput::Value), ops).or_panic();
    let tangent_sources = tangents.map(|t| source("fused", t, &shape).or_panic());
    let shape = &*shape;
    let len = shape.iter().product();
    let (f, literals, sources) = (&f, &literals, (&sources, &tangent_sources));
    let ([], sums) = drive(len, SUM_BLOCK, |range, [], sums| {
        with_block_size!(len, SMALL, SUM_BLOCK, |B| vectorised(
            #[inline(always)]
            || {
                sum_blocks::<T, N, K, 2, B>(
                    range,
                    sources,
                    #[inline(always)]
                    |x, t, k| {
                        let (y, u) = f(x, literals, k, t);
                        [y, u]
                    },
                    |block, n| push_sums(sums, block, n),
                )
            },
        ))
    });
    let [y, u] =
        sums.map(|s| Tensor::scalar(reduction.finish(combine_block_sums(s.as_slice(), len), len)));
    (y, u)
}

/// The loop of the reductions, over blocks of `B`: `f` gives `K` values an element, and each
/// block's first `n` values of each go to `sum(blocks, n)`: [`push_sums`] for a full reduction,
/// [`Lanes::push`] for one over the last axes.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(super) fn sum_blocks<
    T: Element,
    const N: usize,
    const M: usize,
    const K: usize,
    const B: usize,
>(
    range: Range<usize>,
    (xs_from, ys_from): (&[Source<'_, T>; N], &[Source<'_, T>; M]),
    f: impl Fn([T; N], [T; M], &Kernels) -> [T; K],
    sum: impl FnMut(&[[T; B]; K], usize),
) {
    sum_steps(range, B, (xs_from, ys_from), f, sum);
}

/// [`sum_blocks`] with `step` elements a block ([`for_steps`]).
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(super) fn sum_steps<
    T: Element,
    const N: usize,
    const M: usize,
    const K: usize,
    const B: usize,
>(
    range: Range<usize>,
    step: usize,
    (xs_from, ys_from): (&[Source<'_, T>; N], &[Source<'_, T>; M]),
    f: impl Fn([T; N], [T; M], &Kernels) -> [T; K],
    mut sum: impl FnMut(&[[T; B]; K], usize),
) {
    let mut block = [[T::zero(); B]; K];
    for_steps::<T, N, M, B>(
        range,
        step,
        xs_from,
        ys_from,
        #[inline(always)]
        |n, x, y| {
            fast_then_exact(
                #[inline(always)]
                |k| {
                    for e in 0..B {
                        set_column(&mut block, e, f(column(x, e), column(y, e), k));
                    }
                },
            );
            sum(&block, n);
        },
    );
}

/// The reduction of a fused region's value and, in the same pass, the partial derivatives of
/// the reduction with respect to its inputs: `f(x, literals, seed)` gives the element's value
/// and the `K` cotangents of the inputs for the element cotangent `seed` (one for a sum, `1/n`
/// for a mean), and each `(input, k)` of `targets` says that input's is result `k`. The
/// partials are summed to their input's shape; the backward pass scales them by the result's
/// cotangent ([`fused_scale`]) instead of running the region again.
///
/// # Panics
/// When the inputs' shapes do not broadcast, with the error of the op of `ops` that fails.
#[track_caller]
#[allow(clippy::type_complexity)]
pub fn fused_reduce_vjp<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const M: usize,
>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    targets: [(usize, usize); M],
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> (T, [T; K]) + Sync,
) -> (Tensor<T>, [Tensor<T>; M]) {
    #[cfg(debug_assertions)]
    let f: &PartialFn<'_, T, N, L, K> = &f;
    reduce_vjp_region(ops, inputs, literals, reduction, targets, f)
}

/// [`fused_reduce_vjp`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
#[allow(clippy::type_complexity)]
pub(super) fn reduce_vjp_region<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const M: usize,
>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    targets: [(usize, usize); M],
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> (T, [T; K]) + Sync,
) -> (Tensor<T>, [Tensor<T>; M]) {
    let literals = literals.map(T::from_f64);
    let (shape, sources) = value_sources(&inputs, ops);
    let shape = &*shape;
    let len = shape.iter().product();
    let seed = reduction.seed::<T>(len);
    let (literals, f) = ((&literals, seed), &f);
    let (partials, [sums]) = drive(len, SUM_BLOCK, |range, outs, [sums]| {
        with_block_size!(len, SMALL, SUM_BLOCK, |B| vectorised(
            #[inline(always)]
            || partial_blocks::<T, N, L, K, B>(range, &sources, literals, f, (sums, outs)),
        ))
    });
    let value = Tensor::scalar(reduction.finish(combine_block_sums(sums.as_slice(), len), len));
    let partials = partials.map(|p| Tensor::from_parts(p, shape));
    let partials = distribute(partials, &targets, |_, i, p| match inputs[i] {
        OperandRef::Tensor(t) if !same_shape(t.shape(), shape) => sum_to_shape(&p, t.shape()),
        OperandRef::Tensor(_) => p,
        OperandRef::Scalar(_) => sum_to_shape(&p, &[]),
    });
    (value, partials)
}

/// `fused_reduce_vjp`'s loop, over blocks of `B`.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(super) fn partial_blocks<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const B: usize,
>(
    range: Range<usize>,
    sources: &[Source<'_, T>; N],
    (literals, seed): (&[T; L], T),
    f: &impl Fn([T; N], &[T; L], &Kernels, T) -> (T, [T; K]),
    (sums, mut partials): (&mut BlockSums<T>, [Out<'_, T>; K]),
) {
    let mut values = [T::zero(); B];
    let mut block = [[T::zero(); B]; K];
    for_blocks::<T, N, 0, B>(
        range,
        sources,
        &[],
        #[inline(always)]
        |n, x, _| {
            fast_then_exact(
                #[inline(always)]
                |k| {
                    for (e, value) in values.iter_mut().enumerate() {
                        let (y, d) = f(column(x, e), literals, k, seed);
                        *value = y;
                        set_column(&mut block, e, d);
                    }
                },
            );
            sums.push(block_sum(&values[..n]));
            put_blocks(&mut partials, &block, n);
        },
    );
}

impl Reduction {
    /// The op this reduction is over some axes, for errors.
    pub(super) fn axes_op(self) -> &'static str {
        match self {
            Reduction::Sum => "sum_axes",
            Reduction::Mean => "mean_axes",
        }
    }

    /// `t` reduced over `axes` by the op itself (`sum_axes`, `mean_axes`).
    #[track_caller]
    pub(super) fn over_axes<T: Element>(
        self,
        t: &Tensor<T>,
        axes: &[isize],
        keepdims: bool,
    ) -> Tensor<T> {
        match self {
            Reduction::Sum => t.sum_axes(axes, keepdims),
            Reduction::Mean => t.mean_axes(axes, keepdims),
        }
    }
}

/// The length of the lanes a reduction over `axes` (checked: sorted, distinct, in range) of
/// `shape` sums first, when the region can be reduced in the same pass as its values: every
/// element when `axes` are all the axes, else the last axis when `axes` are the last ones. The
/// unfused reduction sums those lanes pairwise, then the lanes' sums over the other axes
/// ([`finish_lanes`]); `None` for other axes, for none, and for lanes of no elements (whose
/// sums the unfused reduction makes).
pub(super) fn lane_length(shape: &[usize], axes: &[usize]) -> Option<usize> {
    let first = shape.len() - axes.len();
    let last = !axes.is_empty() && axes.iter().enumerate().all(|(i, &a)| a == first + i);
    let lane = match first {
        _ if !last => None,
        0 => Some(shape.iter().product()),
        _ => shape.last().copied(),
    };
    lane.filter(|&n| n > 0)
}

/// The reduction of a fused region's value over `axes` (`sum_axes`, `mean_axes`): `f` applied
/// to the elements of the inputs, broadcast, and reduced. When `axes` are the region's last
/// axes (a row-wise sum or mean, the common case), the reduction runs in the same pass as the
/// values and no tensor holds them; over other axes the values are made first.
///
/// # Panics
/// When the inputs' shapes do not broadcast, with the error of the op of `ops` that fails, or
/// an axis is out of range or repeated.
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub fn fused_reduce_axes<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    axes: &[isize],
    keepdims: bool,
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    #[cfg(debug_assertions)]
    let f: &ValueFn<'_, T, N, L> = &f;
    reduce_axes_region(ops, inputs, literals, (reduction, axes, keepdims), f)
}

/// [`fused_reduce_axes`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the
/// module's documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn reduce_axes_region<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    (reduction, axes, keepdims): (Reduction, &[isize], bool),
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    // Copies of one example reduced past the leading axis: the example's reduction, repeated.
    if let Some(copies) = copies_reduced(&inputs, reduction, axes) {
        return reduce_copies(ops, inputs, literals, (reduction, keepdims), f, copies);
    }
    let (shape, sources) = value_sources(&inputs, ops);
    let shape = &*shape;
    let checked = checked_axes(reduction.axes_op(), axes, shape).or_panic();
    let Some(lane) = lane_length(shape, &checked) else {
        let values = map_region(ops, inputs, literals, f);
        return reduction.over_axes(&values, axes, keepdims);
    };
    let literals = literals.map(T::from_f64);
    let len: usize = shape.iter().product();
    let (f, literals) = (&f, &literals);
    let [sums] = lane_sums::<T, 1>(len, lane, |lanes| {
        with_block_size!(len, SMALL, BLOCK, |B| vectorised(
            #[inline(always)]
            || {
                if lane <= B {
                    sum_steps::<T, N, 0, 1, B>(
                        0..len,
                        B / lane * lane,
                        (&sources, &[]),
                        #[inline(always)]
                        |x, _, k| [f(x, literals, k)],
                        |block, n| lanes.push_whole(block, n),
                    )
                } else {
                    sum_blocks::<T, N, 0, 1, B>(
                        0..len,
                        (&sources, &[]),
                        #[inline(always)]
                        |x, _, k| [f(x, literals, k)],
                        |block, n| lanes.push(block, n),
                    )
                }
            },
        ))
    });
    finish_lanes(sums, shape, (reduction, &checked, keepdims))
}

/// The reduction of a fused region's value over `axes` and its tangent, in one pass where
/// `axes` are the last ones ([`fused_reduce_axes`]): `f(x, t)` gives both element by element.
///
/// # Panics
/// When the inputs' shapes do not broadcast, a tangent's does not broadcast to the region's, or
/// an axis is out of range or repeated.
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub fn fused_reduce_axes_jvp<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    axes: &[isize],
    keepdims: bool,
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    #[cfg(debug_assertions)]
    let f: &TangentFn<'_, T, N, L, K> = &f;
    reduce_axes_jvp_region(
        ops,
        inputs,
        literals,
        (reduction, axes, keepdims),
        tangents,
        f,
    )
}

/// [`fused_reduce_axes_jvp`] for the region's closure `f`: a `&dyn Fn` in debug builds (see
/// the module's documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn reduce_axes_jvp_region<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    (reduction, axes, keepdims): (Reduction, &[isize], bool),
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    let reduce = (reduction, axes, keepdims);
    // Values that copy one example (`vmap`'s shared values under batched tangents): the value
    // is the example's reduction, repeated (see `reduce_axes_region`), and the loop over the
    // lanes sums the tangent alone.
    if copies_reduced(&inputs, reduction, axes).is_some() {
        let value_of = |x: [T; N], l: &[T; L], k: &Kernels| f(x, l, k, [T::zero(); K]).0;
        let value = reduce_axes_region(ops, inputs, literals, reduce, value_of);
        let [tangent] =
            reduce_axes_jvp_lanes::<T, N, L, K, 1>(ops, inputs, literals, reduce, tangents, f);
        return (value, tangent);
    }
    let [value, tangent] =
        reduce_axes_jvp_lanes::<T, N, L, K, 2>(ops, inputs, literals, reduce, tangents, f);
    (value, tangent)
}

/// [`reduce_axes_region`] of copies of one example ([`copies_reduced`]), out of line as
/// `map_copies` is.
#[inline(never)]
#[allow(clippy::type_complexity)]
fn reduce_copies<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    (reduction, keepdims): (Reduction, bool),
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
    (examples, n, inner): ([Option<Tensor<T>>; N], usize, Vec<isize>),
) -> Tensor<T> {
    let inputs = core::array::from_fn(|i| match &examples[i] {
        Some(e) => OperandRef::Tensor(e),
        None => inputs[i],
    });
    reduce_axes_region(ops, inputs, literals, (reduction, &inner, keepdims), f).repeated(n)
}

/// For a region over copies of one example (`vmap`'s shared values,
/// `super::map::repeated_inputs`) reduced past the leading axis: each input's example, the
/// number of copies and the axes of one example to reduce. Inputs whose shapes or axes are
/// wrong are the general path's to report.
#[allow(clippy::type_complexity)]
fn copies_reduced<T: Element, const N: usize>(
    inputs: &[OperandRef<'_, T>; N],
    reduction: Reduction,
    axes: &[isize],
) -> Option<([Option<Tensor<T>>; N], usize, Vec<isize>)> {
    let (examples, n) = super::map::repeated_inputs(inputs)?;
    let mut shape = Vec::new();
    for input in inputs {
        if let OperandRef::Tensor(t) = input {
            shape = broadcast_shapes(reduction.axes_op(), &shape, t.shape()).ok()?;
        }
    }
    let checked = checked_axes(reduction.axes_op(), axes, &shape).ok()?;
    let inner = checked.iter().map(|&a| a as isize - 1).collect();
    (!checked.contains(&0)).then_some((examples, n, inner))
}

/// [`reduce_axes_jvp_region`]'s loop over the region's lanes: the reduced value and tangent
/// (`W = 2`), or the tangent alone (`W = 1`).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
fn reduce_axes_jvp_lanes<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const W: usize,
>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    (reduction, axes, keepdims): (Reduction, &[isize], bool),
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> [Tensor<T>; W] {
    // The last `W` of the value and the tangent.
    let pick = |both: [T; 2]| -> [T; W] { core::array::from_fn(|w| both[2 - W + w]) };
    let (shape, _, sources) = prepare(&inputs.map(FusedInput::Value), ops).or_panic();
    let checked = checked_axes(reduction.axes_op(), axes, &shape).or_panic();
    let Some(lane) = lane_length(&shape, &checked) else {
        let (values, tangent) = jvp_region(ops, inputs, literals, tangents, f);
        let both = [values, tangent].map(|v| reduction.over_axes(&v, axes, keepdims));
        return core::array::from_fn(|w| both[2 - W + w].clone());
    };
    let tangent_sources = tangents.map(|t| source("fused", t, &shape).or_panic());
    let literals = literals.map(T::from_f64);
    let len: usize = shape.iter().product();
    let (f, literals, sources) = (&f, &literals, (&sources, &tangent_sources));
    let sums = lane_sums::<T, W>(len, lane, |lanes| {
        with_block_size!(len, SMALL, BLOCK, |B| vectorised(
            #[inline(always)]
            || {
                if lane <= B {
                    sum_steps::<T, N, K, W, B>(
                        0..len,
                        B / lane * lane,
                        sources,
                        #[inline(always)]
                        |x, t, k| {
                            let (y, u) = f(x, literals, k, t);
                            pick([y, u])
                        },
                        |block, n| lanes.push_whole(block, n),
                    )
                } else {
                    sum_blocks::<T, N, K, W, B>(
                        0..len,
                        sources,
                        #[inline(always)]
                        |x, t, k| {
                            let (y, u) = f(x, literals, k, t);
                            pick([y, u])
                        },
                        |block, n| lanes.push(block, n),
                    )
                }
            },
        ))
    });
    sums.map(|s| finish_lanes(s, &shape, (reduction, &checked, keepdims)))
}

/// The cotangents of a fused region's inputs from the cotangent `g` of its reduction over
/// `axes`: `g` spread over the reduced axes (divided by their count for a mean) is the
/// region's cotangent, and the rest is [`fused_vjp`]. The closure recomputes the region from
/// its inputs, so the forward pass ([`fused_reduce_axes`]) saves nothing but them.
///
/// # Panics
/// When the inputs' shapes do not broadcast, an axis is out of range or repeated, or `g` does
/// not have the reduction's shape.
#[track_caller]
#[allow(clippy::too_many_arguments)]
pub fn fused_reduce_axes_vjp<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const M: usize,
>(
    ops: FusedOps,
    inputs: [FusedInput<'_, T>; N],
    literals: [f64; L],
    reduction: Reduction,
    axes: &[isize],
    keepdims: bool,
    targets: [(usize, usize); M],
    g: &Tensor<T>,
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync,
) -> [Tensor<T>; M] {
    #[cfg(debug_assertions)]
    let f: &CotangentFn<'_, T, N, L, K> = &f;
    let shapes = inputs.map(|i| match i {
        FusedInput::Value(v) => operand_shape(&v),
        FusedInput::Shape(s) => Some(s),
    });
    let shape = region_shape(&shapes, ops).or_panic();
    let op = reduction.axes_op();
    let checked = checked_axes(op, axes, &shape).or_panic();
    // The cotangent with the reduced axes kept, as `sum_axes_vjp` and `mean_axes_vjp` spread
    // it; the fused loop broadcasts it.
    // (A reshape: no copy of a row-major `g`.)
    expand_back(op, g.view(), &shape, &checked, keepdims);
    let kept = g.reshape(&reduced_shape(&shape, &checked, true));
    let spread = match reduction {
        Reduction::Sum => kept,
        Reduction::Mean => {
            let n = count::<T>(&shape, &checked);
            kept.map_elems(
                #[inline(always)]
                |&d| d / n,
            )
        }
    };
    let none = std::array::from_fn(|_| None);
    vjp_region(ops, inputs, literals, targets, &spread, f, none).map(made)
}

/// `K` lists of the pairwise sums of the lanes of `lane` (at least one) consecutive elements of
/// a region of `len`, filled by `fill`.
pub(super) fn lane_sums<T: Element, const K: usize>(
    len: usize,
    lane: usize,
    fill: impl FnOnce(&mut Lanes<T, K>),
) -> [Vec<T>; K] {
    let mut lanes = Lanes {
        lane,
        done: std::array::from_fn(|_| Vec::with_capacity(len / lane)),
        chunk: std::array::from_fn(|_| Vec::with_capacity(SUM_BLOCK.min(lane))),
        sums: std::array::from_fn(|_| Vec::new()),
        at: 0,
    };
    fill(&mut lanes);
    lanes.done
}

/// The lane sums of a row-wise reduction as the loop produces the values: each lane's values
/// gathered in chunks of [`SUM_BLOCK`] from the lane's start, each chunk summed by
/// [`block_sum`] and the chunks' sums combined by [`combine_block_sums`], the same additions as
/// the unfused pairwise sum of the lane ([`crate::summation`]).
pub(super) struct Lanes<T, const K: usize> {
    pub(super) lane: usize,
    /// The sums of the lanes done.
    pub(super) done: [Vec<T>; K],
    /// The values of the current lane's current chunk.
    pub(super) chunk: [Vec<T>; K],
    /// The sums of the current lane's chunks before it.
    pub(super) sums: [Vec<T>; K],
    /// The position in the current lane.
    pub(super) at: usize,
}

impl<T: Element, const K: usize> Lanes<T, K> {
    /// Adds the first `n` values of each block, whole lanes (of at most [`SUM_BLOCK`]) from a
    /// lane's start: each lane is one [`block_sum`], as the unfused sum of a lane of its length
    /// is. Lanes of fewer than eight are added in order from zero, which is what `block_sum`
    /// does with them, with the loop unrolled for the length.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(super) fn push_whole<const B: usize>(&mut self, blocks: &[[T; B]; K], n: usize) {
        debug_assert!(self.at == 0 && n.is_multiple_of(self.lane) && self.lane <= SUM_BLOCK);
        for (done, block) in self.done.iter_mut().zip(blocks) {
            let values = &block[..n];
            match self.lane {
                1 => short_lane_sums::<T, 1>(values, done),
                2 => short_lane_sums::<T, 2>(values, done),
                3 => short_lane_sums::<T, 3>(values, done),
                4 => short_lane_sums::<T, 4>(values, done),
                5 => short_lane_sums::<T, 5>(values, done),
                6 => short_lane_sums::<T, 6>(values, done),
                7 => short_lane_sums::<T, 7>(values, done),
                lane => done.extend(values.chunks_exact(lane).map(block_sum)),
            }
        }
    }

    /// Adds the first `n` values of each block, the next ones of the region.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(super) fn push<const B: usize>(&mut self, blocks: &[[T; B]; K], n: usize) {
        let mut start = 0;
        while start < n {
            let room = (SUM_BLOCK - self.chunk[0].len()).min(self.lane - self.at);
            let end = n.min(start + room);
            for (chunk, block) in self.chunk.iter_mut().zip(blocks) {
                chunk.extend_from_slice(&block[start..end]);
            }
            self.at += end - start;
            start = end;
            let lane_done = self.at == self.lane;
            if lane_done || self.chunk[0].len() == SUM_BLOCK {
                for (sums, chunk) in self.sums.iter_mut().zip(&mut self.chunk) {
                    sums.push(block_sum(chunk));
                    chunk.clear();
                }
            }
            if lane_done {
                for (done, sums) in self.done.iter_mut().zip(&mut self.sums) {
                    done.push(combine_block_sums(sums, self.lane));
                    sums.clear();
                }
                self.at = 0;
            }
        }
    }
}

/// The sums of the lanes of `L` (fewer than eight) that `values` is, appended to `done`: each
/// added in order from zero, as [`block_sum`] adds so few.
#[inline(always)]
pub(super) fn short_lane_sums<T: Element, const L: usize>(values: &[T], done: &mut Vec<T>) {
    done.extend(values.chunks_exact(L).map(|lane| {
        let mut s = T::zero();
        for &v in lane {
            s += v;
        }
        s
    }));
}

/// The reduction of shape `reduced_shape(shape, axes, keepdims)` from the sums of the lanes
/// [`lane_length`] chose, as the unfused `sum_axes` and `mean_axes` finish: the lanes' sums
/// summed over the other axes, then divided by the count for a mean.
pub(super) fn finish_lanes<T: Element>(
    sums: Vec<T>,
    shape: &[usize],
    (reduction, axes, keepdims): (Reduction, &[usize], bool),
) -> Tensor<T> {
    let whole = axes.len() == shape.len();
    let mut t = match whole {
        true => Tensor::scalar(sums.first().copied().unwrap_or_else(T::zero)),
        false => Tensor::from_vec(sums, &shape[..shape.len() - 1]),
    };
    if !whole && axes.len() > 1 {
        let rest: Vec<isize> = axes[..axes.len() - 1].iter().map(|&a| a as isize).collect();
        t = t.sum_axes(&rest, false);
    }
    if reduction == Reduction::Mean {
        let n = count::<T>(shape, axes);
        t = t.map_elems(
            #[inline(always)]
            |&s| s / n,
        );
    }
    t.reshape(&reduced_shape(shape, axes, keepdims))
}
