//! Regions without a reduction: the value (`fused_map`), the cotangents of the inputs
//! (`fused_vjp`) and the tangent (`fused_jvp`).

use std::borrow::Cow;
use std::ops::Range;

use arrayvec::ArrayVec;

use super::*;
use crate::broadcast::{same_shape, sum_to_shape};
use crate::element::operand::{OperandOf, OperandRef};
use crate::element::Element;
use crate::error::OrPanic;
use crate::tensor::{fits_inline, Tensor, INLINE};
use crate::vmath::{fast_then_exact, vectorised, Kernels};

/// `f(x, literals, kernels)`: an element's value.
#[cfg(debug_assertions)]
pub(super) type ValueFn<'f, T, const N: usize, const L: usize> =
    dyn Fn([T; N], &[T; L], &Kernels) -> T + Sync + 'f;
/// `f(x, literals, kernels, g)`: an element's `K` cotangents.
#[cfg(debug_assertions)]
pub(super) type CotangentFn<'f, T, const N: usize, const L: usize, const K: usize> =
    dyn Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync + 'f;
/// `f(x, literals, kernels, t)`: an element's value and tangent.
#[cfg(debug_assertions)]
pub(super) type TangentFn<'f, T, const N: usize, const L: usize, const K: usize> =
    dyn Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync + 'f;
/// `f(x, literals, kernels, seed)`: an element's value and `K` partials.
#[cfg(debug_assertions)]
pub(super) type PartialFn<'f, T, const N: usize, const L: usize, const K: usize> =
    dyn Fn([T; N], &[T; L], &Kernels, T) -> (T, [T; K]) + Sync + 'f;

/// The value of a fused region: `f` applied to the elements of the inputs, broadcast.
///
/// # Panics
/// When the inputs' shapes do not broadcast, with the error of the op of `ops` that fails.
#[track_caller]
pub fn fused_map<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    #[cfg(debug_assertions)]
    let f: &ValueFn<'_, T, N, L> = &f;
    map_region(ops, inputs, literals, f)
}

/// [`fused_map`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn map_region<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
) -> Tensor<T> {
    if let Some(copies) = repeated_inputs(&inputs) {
        return map_copies(ops, inputs, literals, f, copies);
    }
    let literals = literals.map(T::from_f64);
    if let Some((shape, data)) = inline_inputs(&inputs) {
        let mut out = ArrayVec::new();
        fast_then_exact(|k| {
            out.clear();
            for e in 0..shape.iter().product() {
                out.push(f(inline_column(&data, e), &literals, k));
            }
        });
        return Tensor::inline(out, shape);
    }
    let (shape, sources) = value_sources(&inputs, ops);
    let shape = &*shape;
    let len = shape.iter().product();
    if fits_inline(shape, len) {
        let mut out = ArrayVec::new();
        fast_then_exact(|k| {
            out.clear();
            for e in 0..len {
                out.push(f(column_at(&sources, e), &literals, k));
            }
        });
        return Tensor::inline(out, shape);
    }
    let ([out], []) = drive(len, BLOCK, |range, [out], _| {
        with_block_size!(len, SMALL, BLOCK, |B| vectorised(
            #[inline(always)]
            || map_blocks::<T, N, L, B>(range, out, &sources, &literals, &f),
        ))
    });
    Tensor::from_parts(out, shape)
}

/// [`map_region`] of copies of one example ([`repeated_inputs`]): the example's region,
/// repeated. Out of line, so that `map_region` does not call itself and stays inlined into
/// the generated code (docs/PERFORMANCE.md, "A hot generic path must not call itself").
#[inline(never)]
fn map_copies<T: Element, const N: usize, const L: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    f: impl Fn([T; N], &[T; L], &Kernels) -> T + Sync,
    (examples, n): ([Option<Tensor<T>>; N], usize),
) -> Tensor<T> {
    let inputs = core::array::from_fn(|i| match &examples[i] {
        Some(e) => OperandRef::Tensor(e),
        None => inputs[i],
    });
    map_region(ops, inputs, literals, f).repeated(n)
}

/// When some inputs repeat one example along their leading axis (`vmap`'s shared values), all
/// of those as many times at the most axes of any input, and every other has fewer axes: each
/// repeated input's example (`None` for the others) and the number of copies. The region's
/// value is then the region of the examples, repeated.
pub(super) fn repeated_inputs<T: Element, const N: usize>(
    inputs: &[OperandRef<'_, T>; N],
) -> Option<([Option<Tensor<T>>; N], usize)> {
    let rank = |o: &OperandRef<'_, T>| match o {
        OperandRef::Tensor(t) => t.ndim(),
        OperandRef::Scalar(_) => 0,
    };
    let repeated = |o: &OperandRef<'_, T>| matches!(o, OperandRef::Tensor(t) if t.is_repeated());
    if !inputs.iter().any(repeated) {
        return None;
    }
    let widest = inputs.iter().map(rank).max()?;
    let mut copies = None;
    let mut examples: [Option<Tensor<T>>; N] = core::array::from_fn(|_| None);
    for (k, input) in inputs.iter().enumerate() {
        let OperandRef::Tensor(t) = input else {
            continue;
        };
        match t.repeated_parts() {
            Some((e, n)) if t.ndim() == widest && copies.is_none_or(|c| c == n) => {
                copies = Some(n);
                examples[k] = Some(e);
            }
            Some(_) => return None,
            None if t.ndim() < widest => {}
            None => return None,
        }
    }
    copies.map(|n| (examples, n))
}

/// `fused_map`'s loop, over blocks of `B`.
#[inline(always)]
pub(super) fn map_blocks<T: Element, const N: usize, const L: usize, const B: usize>(
    range: Range<usize>,
    mut out: Out<'_, T>,
    sources: &[Source<'_, T>; N],
    literals: &[T; L],
    f: &impl Fn([T; N], &[T; L], &Kernels) -> T,
) {
    let mut block = [T::zero(); B];
    for_blocks::<T, N, 0, B>(
        range,
        sources,
        &[],
        #[inline(always)]
        |n, x, _| {
            fast_then_exact(
                #[inline(always)]
                |k| {
                    for (e, b) in block.iter_mut().enumerate() {
                        *b = f(column(x, e), literals, k);
                    }
                },
            );
            out.put_first(&block, n);
        },
    );
}

/// An input of a fused region's backward pass: its value, or its shape alone where the
/// partial derivatives do not read it (the closure then sees zeros for it).
#[derive(Clone, Copy, Debug)]
pub enum FusedInput<'a, T> {
    /// The value.
    Value(OperandRef<'a, T>),
    /// The shape of a tensor whose value the backward pass does not read.
    Shape(&'a [usize]),
}

/// A value as an input of a fused region's backward pass.
#[inline]
pub fn fused_value<T, X: OperandOf<T> + ?Sized>(x: &X) -> FusedInput<'_, T> {
    FusedInput::Value(x.operand_of())
}

/// A shape as an input of a fused region's backward pass.
#[inline]
pub fn fused_shape<T>(shape: &[usize]) -> FusedInput<'_, T> {
    FusedInput::Shape(shape)
}

/// The cotangents of a fused region's inputs (each of its input's shape), from the cotangent
/// `g` of its value: `f(x, literals, g)` gives `K` cotangents element by element, and each
/// `(input, k)` of `targets` says that input's is result `k` (inputs of the same cotangent,
/// such as the operands of `+`, share one).
///
/// # Panics
/// When the inputs' shapes do not broadcast, or `g` does not broadcast to the region's shape.
#[track_caller]
pub fn fused_vjp<T: Element, const N: usize, const L: usize, const K: usize, const M: usize>(
    ops: FusedOps,
    inputs: [FusedInput<'_, T>; N],
    literals: [f64; L],
    targets: [(usize, usize); M],
    g: &Tensor<T>,
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync,
) -> [Tensor<T>; M] {
    #[cfg(debug_assertions)]
    let f: &CotangentFn<'_, T, N, L, K> = &f;
    let none = std::array::from_fn(|_| None);
    vjp_region(ops, inputs, literals, targets, g, f, none).map(made)
}

/// [`fused_vjp`], each target's cotangent added to `adjoints[m]` (`None` stands for zero) as
/// [`accumulate`](crate::slots::accumulate) would add it: the backward pass of a region whose
/// inputs have adjoints already (a value read again later in the function, a callee's
/// argument). A cotangent of the region's shape added to an adjoint of that shape is added as
/// the loop makes it, into the adjoint's buffer where it is the adjoint's alone: one pass over
/// the adjoint instead of writing the cotangent out and adding it in a pass of its own.
///
/// # Panics
/// As [`fused_vjp`], and when an adjoint's shape differs from its input's.
#[track_caller]
pub fn fused_vjp_into<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const M: usize,
>(
    ops: FusedOps,
    inputs: [FusedInput<'_, T>; N],
    literals: [f64; L],
    targets: [(usize, usize); M],
    g: &Tensor<T>,
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync,
    adjoints: [&mut Option<Tensor<T>>; M],
) {
    #[cfg(debug_assertions)]
    let f: &CotangentFn<'_, T, N, L, K> = &f;
    let into = adjoints.map(Some);
    vjp_region(ops, inputs, literals, targets, g, f, into);
}

/// A result of [`vjp_region`] that no adjoint was given for.
pub(super) fn made<T>(result: Option<Tensor<T>>) -> Tensor<T> {
    result.expect("fused: a cotangent without an adjoint is returned")
}

/// [`fused_vjp`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation). Where `adjoints[m]` is given, target `m`'s cotangent may be added to it as
/// the loop makes it (see [`fused_vjp_into`]): its result is then `None`.
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn vjp_region<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const M: usize,
>(
    ops: FusedOps,
    inputs: [FusedInput<'_, T>; N],
    literals: [f64; L],
    targets: [(usize, usize); M],
    g: &Tensor<T>,
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K] + Sync,
    mut adjoints: [Option<&mut Option<Tensor<T>>>; M],
) -> [Option<Tensor<T>>; M] {
    let literals = literals.map(T::from_f64);
    if let Some((shape, data, gs)) = inline_vjp_inputs(&inputs, g) {
        let mut outs: [ArrayVec<T, INLINE>; K] = std::array::from_fn(|_| ArrayVec::new());
        fast_then_exact(|k| {
            outs.iter_mut().for_each(ArrayVec::clear);
            for (e, &g) in gs.iter().enumerate() {
                let x = inline_column(&data, e);
                for (o, d) in outs.iter_mut().zip(f(x, &literals, k, g)) {
                    o.push(d);
                }
            }
        });
        return distribute(
            outs.map(|o| Tensor::inline(o, shape)),
            &targets,
            |m, i, t| {
                let t = match inputs[i] {
                    FusedInput::Value(OperandRef::Scalar(_)) => sum_to_shape(&t, &[]),
                    _ => t,
                };
                deliver(&mut adjoints[m], t)
            },
        );
    }
    let direct = direct_vjp_sources(&inputs, g);
    let (shape, shapes, sources, g_source) = match direct {
        Some((shape, sources, gs)) => (Cow::Borrowed(shape), None, sources, gs),
        None => {
            let (shape, shapes, sources) = prepare(&inputs, ops).or_panic();
            let gs = source("fused", g, &shape).or_panic();
            (Cow::Owned(shape), Some(shapes), sources, gs)
        }
    };
    let shape = &*shape;
    let len = shape.iter().product();
    if !fits_inline(shape, len) && len <= SMALL {
        let blocks = vectorised(
            #[inline(always)]
            || vjp_block::<T, N, L, K>(len, &sources, &[g_source], &literals, &f),
        );
        let input_shape = |i: usize| match (&shapes, inputs[i]) {
            (Some(shapes), _) => shapes[i].unwrap_or(&[]),
            (None, FusedInput::Value(OperandRef::Scalar(_))) => &[],
            (None, _) => shape,
        };
        return deliver_small(&blocks, shape, input_shape, &targets, &mut adjoints);
    }
    // Whether input `i`'s cotangent went into its adjoint as the loop made it.
    let mut added = [false; N];
    let outs = if fits_inline(shape, len) {
        let mut outs: [ArrayVec<T, INLINE>; K] = std::array::from_fn(|_| ArrayVec::new());
        fast_then_exact(|k| {
            outs.iter_mut().for_each(ArrayVec::clear);
            for e in 0..len {
                let x = column_at(&sources, e);
                for (o, d) in outs.iter_mut().zip(f(x, &literals, k, g_source.at(e))) {
                    o.push(d);
                }
            }
        });
        outs.map(|o| Tensor::inline(o, shape))
    } else {
        // A result read only by inputs of one shape broadcast along a run of axes is summed to
        // that shape as the loop makes it.
        let sunk: [Option<&[usize]>; K] = match &shapes {
            None => [None; K],
            Some(shapes) => std::array::from_fn(|k| {
                let mut readers = targets.iter().filter(|&&(_, r)| r == k);
                let first = shapes[readers.next()?.0].unwrap_or(&[]);
                readers
                    .all(|&(i, _)| shapes[i].unwrap_or(&[]) == first)
                    .then_some(first)
            }),
        };
        let sinks = sunk.map(|t| t.and_then(|t| Folding::of(t, shape, len)));
        let mut held = hold_adjoints(
            &inputs,
            shapes.as_ref(),
            shape,
            &targets,
            &sinks,
            &mut adjoints,
        );
        let adds = held.each_mut().map(|h| match h {
            Some((_, a)) => {
                if a.is_unique() && a.is_standard_layout() {
                    AddTo::InPlace(a.unique_slice_mut().expect("a buffer of the adjoint's own"))
                } else {
                    AddTo::Beside(a.as_slice().expect("a row-major adjoint"))
                }
            }
            None => AddTo::Nothing,
        });
        let sources = (&sources, &[g_source]);
        let (outs, []) = drive_into(len, BLOCK, sinks, adds, |range, outs, _| {
            with_block_size!(len, SMALL, BLOCK, |B| vectorised(
                #[inline(always)]
                || vjp_blocks::<T, N, L, K, B>(range, outs, sources, &literals, &f),
            ))
        });
        let out_shapes: [&[usize]; K] = std::array::from_fn(|k| match (sunk[k], sinks[k]) {
            (Some(t), Some(_)) => t,
            _ => shape,
        });
        put_back(outs, out_shapes, held, &targets, &mut adjoints, &mut added)
    };
    match shapes {
        // Of the region's shape, but a scalar's: summed to one value.
        None => distribute(outs, &targets, |m, i, t| match inputs[i] {
            _ if added[i] => None,
            FusedInput::Value(OperandRef::Scalar(_)) => {
                deliver(&mut adjoints[m], sum_to_shape(&t, &[]))
            }
            _ => deliver(&mut adjoints[m], t),
        }),
        Some(shapes) => distribute(outs, &targets, |m, i, t| match added[i] {
            true => None,
            false => deliver(&mut adjoints[m], sum_to_shape(&t, shapes[i].unwrap_or(&[]))),
        }),
    }
}

/// The region's shape and the sources of its inputs and of the cotangent `g` when every input
/// and `g` have one shape, in row-major order, or are scalars: nothing to broadcast, and nothing
/// to reduce but a scalar's cotangent.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(super) fn direct_vjp_sources<'a, T: Element, const N: usize>(
    inputs: &[FusedInput<'a, T>; N],
    g: &'a Tensor<T>,
) -> Option<(&'a [usize], [Source<'a, T>; N], Source<'a, T>)> {
    let values = inputs.map(|i| match i {
        FusedInput::Value(v) => Some(v),
        FusedInput::Shape(_) => None,
    });
    let (shape, sources) = same_shape_sources(&values)?;
    let shaped = |s: &[usize]| same_shape(s, shape);
    let all_shaped = inputs.iter().all(|i| match i {
        FusedInput::Value(_) => true,
        FusedInput::Shape(s) => shaped(s),
    });
    let gs = flat_source(g)?;
    (all_shaped && shaped(g.shape())).then_some((shape, sources, gs))
}

/// The `K` results of a region of at most [`SMALL`] elements (one block), on the stack.
#[inline(always)]
fn vjp_block<T: Element, const N: usize, const L: usize, const K: usize>(
    len: usize,
    sources: &[Source<'_, T>; N],
    g: &[Source<'_, T>; 1],
    literals: &[T; L],
    f: &impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K],
) -> [[T; SMALL]; K] {
    let mut block = [[T::zero(); SMALL]; K];
    for_blocks::<T, N, 1, SMALL>(
        0..len,
        sources,
        g,
        #[inline(always)]
        |_, x, g| cotangents_of_block(&mut block, x, g[0], literals, f),
    );
    block
}

/// The targets' cotangents from the results of a region of at most [`SMALL`] elements
/// ([`vjp_block`]), as [`vjp_region`] delivers them: a result for an input of the region's
/// shape whose adjoint is of that shape and its own buffer is added into it in place, any
/// other becomes a tensor, summed to its input's shape (`input_shape(i)`), and is added to its
/// adjoint or returned. The small regions of a loop over short vectors (an LSTM's cells) are
/// mostly this bookkeeping: here it allocates nothing for a result added in place and moves no
/// arrays of tensors, which the general path's output buffers and held adjoints do.
#[inline(never)]
fn deliver_small<'s, T: Element, const K: usize, const M: usize>(
    blocks: &[[T; SMALL]; K],
    shape: &'s [usize],
    input_shape: impl Fn(usize) -> &'s [usize],
    targets: &[(usize, usize); M],
    adjoints: &mut [Option<&mut Option<Tensor<T>>>; M],
) -> [Option<Tensor<T>>; M] {
    let len = shape.iter().product::<usize>();
    let mut m = 0;
    targets.map(|(i, k)| {
        let adjoint = &mut adjoints[m];
        m += 1;
        let values = &blocks[k][..len];
        let to = input_shape(i);
        if same_shape(to, shape) {
            let own = adjoint
                .as_deref_mut()
                .and_then(Option::as_mut)
                .filter(|a| same_shape(a.shape(), shape))
                .and_then(Tensor::unique_slice_mut);
            if let Some(own) = own {
                own.iter_mut().zip(values).for_each(|(a, &v)| *a += v);
                return None;
            }
            return deliver(adjoint, Tensor::from_parts(values.to_vec(), shape));
        }
        let summed = sum_to_shape(&Tensor::from_parts(values.to_vec(), shape), to);
        deliver(adjoint, summed)
    })
}

/// A cotangent of [`vjp_region`]'s: added to its adjoint where one was given, else returned.
#[inline]
fn deliver<T: Element>(
    adjoint: &mut Option<&mut Option<Tensor<T>>>,
    cotangent: Tensor<T>,
) -> Option<Tensor<T>> {
    match adjoint {
        Some(a) => {
            crate::slots::accumulate(a, cotangent);
            None
        }
        None => Some(cotangent),
    }
}

/// The adjoints [`vjp_region`] adds its results to as its loop makes them, taken out of their
/// slots: `held[k]`, with the index of its target, is the adjoint of the one input that reads
/// result `k` when that input and its adjoint have the region's shape (the adjoint in
/// row-major order) and the result is not summed into a sink. Out of line, as is
/// [`put_back`]: inlined into every region's backward pass, their code slowed the many small
/// regions of a loop over 14-element tensors by 4%.
#[inline(never)]
#[allow(clippy::type_complexity)]
fn hold_adjoints<T: Element, const N: usize, const K: usize, const M: usize>(
    inputs: &[FusedInput<'_, T>; N],
    shapes: Option<&[Option<&[usize]>; N]>,
    shape: &[usize],
    targets: &[(usize, usize); M],
    sinks: &[Option<Folding>; K],
    adjoints: &mut [Option<&mut Option<Tensor<T>>>; M],
) -> [Option<(usize, Tensor<T>)>; K] {
    std::array::from_fn(|k| {
        let mut readers = targets.iter().enumerate().filter(|&(_, &(_, r))| r == k);
        let (m, &(i, _)) = readers.next()?;
        let input_shaped = match shapes {
            None => !matches!(inputs[i], FusedInput::Value(OperandRef::Scalar(_))),
            Some(shapes) => shapes[i].is_some_and(|s| same_shape(s, shape)),
        };
        let adjoint = adjoints[m].as_deref_mut()?;
        let fits = adjoint
            .as_ref()
            // (A padded adjoint not written out is added to by `accumulate`, which reads it
            // in place.)
            .is_some_and(|a| {
                same_shape(a.shape(), shape) && a.padded_parts().is_none() && a.as_slice().is_some()
            });
        (readers.next().is_none() && sinks[k].is_none() && input_shaped && fits)
            .then(|| (m, adjoint.take().expect("an adjoint checked above")))
    })
}

/// The loop's results as tensors of `out_shapes`, but those added to a held adjoint
/// ([`hold_adjoints`]): that sum goes back to the adjoint's slot (the adjoint itself when it
/// was added to in place, its output then empty), `added` marks its input, and an empty
/// tensor stands in for the result.
#[inline(never)]
fn put_back<T: Element, const N: usize, const K: usize, const M: usize>(
    outs: [Vec<T>; K],
    out_shapes: [&[usize]; K],
    mut held: [Option<(usize, Tensor<T>)>; K],
    targets: &[(usize, usize); M],
    adjoints: &mut [Option<&mut Option<Tensor<T>>>; M],
    added: &mut [bool; N],
) -> [Tensor<T>; K] {
    let mut k = 0;
    outs.map(|o| {
        let shape = out_shapes[k];
        let out = match held[k].take() {
            Some((m, a)) => {
                added[targets[m].0] = true;
                // (The loop of a region held inline is not this one: `o` is empty only
                // when it was added in place.)
                let sum = match o.is_empty() {
                    true => a,
                    false => Tensor::from_parts(o, shape),
                };
                **adjoints[m].as_mut().expect("a held adjoint's slot") = Some(sum);
                Tensor::from_parts(Vec::new(), &[0])
            }
            None => Tensor::from_parts(o, shape),
        };
        k += 1;
        out
    })
}

/// The tensor of each target `(input, k)` from the loop's results `outs` (of the region's
/// shape), passed through `finish(target, input, result k)`. A result read by one target
/// becomes its tensor; one read by several (the operands of `+`) is one tensor they share (a
/// copy when it is held inline).
pub(super) fn distribute<T: Element, R, const K: usize, const M: usize>(
    outs: [Tensor<T>; K],
    targets: &[(usize, usize); M],
    mut finish: impl FnMut(usize, usize, Tensor<T>) -> R,
) -> [R; M] {
    let mut outs = outs.map(Some);
    let mut last = [0; K];
    for (at, &(_, k)) in targets.iter().enumerate() {
        last[k] = at;
    }
    let mut at = 0;
    targets.map(|(i, k)| {
        let out = if last[k] == at {
            outs[k].take()
        } else {
            outs[k].clone()
        };
        at += 1;
        finish(
            at - 1,
            i,
            out.expect("fused: a result read after its last reader"),
        )
    })
}

/// `fused_vjp`'s loop, over blocks of `B`: the inputs' and the cotangent's sources.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(super) fn vjp_blocks<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const B: usize,
>(
    range: Range<usize>,
    mut outs: [Out<'_, T>; K],
    (sources, g): (&[Source<'_, T>; N], &[Source<'_, T>; 1]),
    literals: &[T; L],
    f: &impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K],
) {
    let mut block = [[T::zero(); B]; K];
    for_blocks::<T, N, 1, B>(
        range,
        sources,
        g,
        #[inline(always)]
        |n, x, g| {
            cotangents_of_block(&mut block, x, g[0], literals, f);
            put_blocks(&mut outs, &block, n);
        },
    );
}

/// The `K` results of `f` for each element of a block: its inputs' elements `x`, its
/// cotangent `g`.
#[inline(always)]
fn cotangents_of_block<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const B: usize,
>(
    block: &mut [[T; B]; K],
    x: &[&[T; B]; N],
    g: &[T; B],
    literals: &[T; L],
    f: &impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K],
) {
    fast_then_exact(
        #[inline(always)]
        |k| {
            for (e, &g) in g.iter().enumerate() {
                set_column(block, e, f(column(x, e), literals, k, g));
            }
        },
    );
}

/// The value of a fused region and its tangent, from the tangents of its inputs with tangents:
/// `f(x, t)` gives both element by element.
///
/// # Panics
/// When the inputs' shapes do not broadcast, or a tangent's does not broadcast to the region's.
#[track_caller]
pub fn fused_jvp<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    #[cfg(debug_assertions)]
    let f: &TangentFn<'_, T, N, L, K> = &f;
    jvp_region(ops, inputs, literals, tangents, f)
}

/// [`fused_jvp`] for the region's closure `f`: a `&dyn Fn` in debug builds (see the module's
/// documentation).
#[track_caller]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn jvp_region<T: Element, const N: usize, const L: usize, const K: usize>(
    ops: FusedOps,
    inputs: [OperandRef<'_, T>; N],
    literals: [f64; L],
    tangents: [&Tensor<T>; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T) + Sync,
) -> (Tensor<T>, Tensor<T>) {
    // Values that copy one example (`vmap`'s shared values under batched tangents): the value
    // is the example's, repeated, so that what reads it still sees copies of one.
    let value_of_examples = repeated_inputs(&inputs).map(|copies| {
        let value_of = |x: [T; N], l: &[T; L], k: &Kernels| f(x, l, k, [T::zero(); K]).0;
        map_copies(ops, inputs, literals, value_of, copies)
    });
    let literals = literals.map(T::from_f64);
    let (shape, _, sources) = prepare(&inputs.map(FusedInput::Value), ops).or_panic();
    let tangent_sources = tangents.map(|t| source("fused", t, &shape).or_panic());
    let shape = &*shape;
    let len = shape.iter().product();
    let sources = (&sources, &tangent_sources);
    let ([value, tangent], []) = drive(len, BLOCK, |range, outs, _| {
        with_block_size!(len, SMALL, BLOCK, |B| vectorised(
            #[inline(always)]
            || jvp_blocks::<T, N, L, K, B>(range, outs, sources, &literals, &f),
        ))
    });
    let tangent = Tensor::from_parts(tangent, shape);
    match value_of_examples {
        Some(v) if same_shape(v.shape(), shape) => (v, tangent),
        _ => (Tensor::from_parts(value, shape), tangent),
    }
}

/// `fused_jvp`'s loop, over blocks of `B`: the inputs' and the tangents' sources.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(super) fn jvp_blocks<
    T: Element,
    const N: usize,
    const L: usize,
    const K: usize,
    const B: usize,
>(
    range: Range<usize>,
    mut outs: [Out<'_, T>; 2],
    (sources, tangents): (&[Source<'_, T>; N], &[Source<'_, T>; K]),
    literals: &[T; L],
    f: &impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T),
) {
    let mut block = [[T::zero(); B]; 2];
    for_blocks::<T, N, K, B>(
        range,
        sources,
        tangents,
        #[inline(always)]
        |n, x, t| {
            fast_then_exact(
                #[inline(always)]
                |k| {
                    for e in 0..B {
                        let (y, u) = f(column(x, e), literals, k, column(t, e));
                        set_column(&mut block, e, [y, u]);
                    }
                },
            );
            put_blocks(&mut outs, &block, n);
        },
    );
}
